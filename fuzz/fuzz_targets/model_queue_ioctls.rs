#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hsakmt_fuzz::model_queue_ioctls::run(data));
