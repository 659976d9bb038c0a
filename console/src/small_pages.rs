//! Transparent huge pages off for this process ([`small_pages`]), for the commands whose
//! memory 2 MiB pages only make bigger or slower.
//!
//! mimalloc `madvise`s its arena `MADV_HUGEPAGE`, and with the kernel's THP on (`always`, or
//! `madvise` as on the machines measured here) the first touch of each 2 MiB region faults in a
//! whole 2 MiB page the kernel zeroes first. Three users, each measured on the release binary:
//!
//! - **Hooks** (`valp hook`, `valp notify`) live a few milliseconds and touch a few hundred KiB:
//!   a `Stop` hook's CPU time p50 7.4 ms -> 5.7 ms, p99 9.0 -> 7.0 ms (load average 15).
//! - **The console** runs for hours, mostly idle: mimalloc's arena in 2 MiB pages held 13 MiB
//!   more than in 4 KiB pages at 10^5 demo entries (93 -> 80 MiB `VmRSS`).
//! - **`valp verify`** (issue 20): a short verify spends much of its applying thread zeroing
//!   huge pages, and a long one holds partly used ones. With THP off (`MIMALLOC_ALLOW_THP=0`, 3
//!   interleaved rounds each, quiet 2-core machine): 1,000 imported entries 14.9-15.5 ->
//!   13.1-13.8 ms wall (`perf stat -r 40`, CPU unchanged at ~20 ms); 10^5 demo entries
//!   1.07-1.13 -> 1.04-1.07 s, peak RSS 32.5-32.8 -> 24.1-25.2 MiB; 10^6 peak RSS 67.5-69.0 ->
//!   60.2 MiB at the same 10.6 s (the bound is 64 MiB).
//!
//! With glibc, `valp verify`, `valp hook` and `valp notify` (the command as the first word) get
//! `MIMALLOC_ALLOW_THP=0`'s effect before the process's first allocation instead, from the
//! constructor in `process_start.c`: by the time [`small_pages`] runs, after clap, the runtime
//! and clap had faulted (and the kernel zeroed) up to three whole 2 MiB pages.
//!
//! `prctl(PR_SET_THP_DISABLE)` is what `MIMALLOC_ALLOW_THP=0` does, for every later fault of
//! the process, also in regions mimalloc reserved before. Failing is harmless: the process runs
//! as before.

/// Turns transparent huge pages off for this process (see the module).
pub fn small_pages() {
    let _ = rustix::thread::disable_transparent_huge_pages(true);
}
