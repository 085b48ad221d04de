#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hsakmt_fuzz::model_svm_ioctls::run(data));
