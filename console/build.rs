//! Compiles `src/process_start.c` (the allocator settings a `valp` process takes before anything
//! allocates; the reasons are in that file) into the `valp` binary, and only there: test and
//! bench binaries keep the allocator's defaults (and most do not link mimalloc at all).
//!
//! Only for Linux with glibc: it is glibc that passes `argc`/`argv` to `.init_array` functions.
//! The object goes to the linker as an object, not in an archive: nothing refers to it by name,
//! and a linker leaves such archive members out.

fn main() {
    println!("cargo:rerun-if-changed=src/process_start.c");
    let target = |key: &str| std::env::var(key).unwrap_or_default();
    if target("CARGO_CFG_TARGET_OS") != "linux" || target("CARGO_CFG_TARGET_ENV") != "gnu" {
        return;
    }
    // `libmimalloc-sys` (a direct dependency for this) exports where `mimalloc.h` is.
    let Some(include) = std::env::var_os("DEP_MIMALLOC_INCLUDE_DIR") else {
        println!("cargo:warning=no DEP_MIMALLOC_INCLUDE_DIR: valp starts without process_start.c");
        return;
    };
    for object in cc::Build::new()
        .file("src/process_start.c")
        .include(include)
        .compile_intermediates()
    {
        println!("cargo:rustc-link-arg-bin=valp={}", object.display());
    }
}
