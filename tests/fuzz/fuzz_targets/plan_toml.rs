#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| valp_fuzz_targets::plan_toml(data));
