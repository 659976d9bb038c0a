/*
 * The allocator's process-wide settings for a `valp` process, taken before anything allocates.
 *
 * glibc calls the functions of `.init_array` before `main` with (argc, argv, envp). This one is
 * placed ahead of mimalloc's own constructor and of Rust's runtime, whose first allocation (the
 * main thread's info) comes before `main`: it reaches the moment no Rust code can, and no Rust
 * code may (the workspace forbids `unsafe`). Two settings, both only defaults: the
 * `MIMALLOC_ALLOW_THP` and `MIMALLOC_DESTROY_ON_EXIT` variables still win when set.
 *
 * - Transparent huge pages off from the first allocation for `valp verify`, `valp hook` and
 *   `valp notify` (`mi_option_allow_thp` 0: mimalloc calls prctl(PR_SET_THP_DISABLE) at its
 *   start and never madvises its arena MADV_HUGEPAGE). Turned off later, in `main`
 *   (`small_pages`), the process had already faulted and zeroed whole 2 MiB pages for the
 *   runtime's and clap's first few hundred KiB (issue 20, ARCHITECTURE.md "The process around a
 *   short verify"). Only `argv[1]` is looked at: `valp --root R verify` still turns them off in
 *   `main`, after clap.
 * - No allocator teardown at exit, for every command (`mi_option_destroy_on_exit` 2: mimalloc's
 *   exit hook returns at once instead of collecting and purging its arenas, ~20 madvise calls).
 *   The kernel takes the whole address space back at exit anyway; what the process writes
 *   (Rust's stdout is flushed by `main`) and its exit code do not depend on it.
 */
#include <string.h>

#include <mimalloc.h>

/* Whether `word` (argv[1]) is a command whose memory 2 MiB pages only make slower or bigger. */
static int small_pages_command(const char *word) {
    return strcmp(word, "verify") == 0 || strcmp(word, "hook") == 0 || strcmp(word, "notify") == 0;
}

static void valp_process_start(int argc, char **argv, char **envp) {
    (void)envp;
    mi_option_set_default(mi_option_destroy_on_exit, 2);
    if (argc > 1 && argv[1] != NULL && small_pages_command(argv[1])) {
        mi_option_set_default(mi_option_allow_thp, 0);
    }
}

/* `.init_array.NNNNN` entries run in ascending order before the unnumbered ones: 100 comes
 * after Rust's standard library (99, which only records argv) and before mimalloc's
 * constructor (unnumbered with gcc, 101 with clang). */
__attribute__((section(".init_array.00100"), used))
static void (*const valp_process_start_entry)(int, char **, char **) = valp_process_start;
