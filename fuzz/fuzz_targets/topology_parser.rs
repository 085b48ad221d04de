#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hsakmt_fuzz::topology_parser::run(data));
