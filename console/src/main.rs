//! The `valp` binary.

fn main() {}
