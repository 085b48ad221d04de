#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hsakmt_fuzz::va_allocator::run(data));
