//! The fuzz targets' bodies, each a plain function of the input bytes (`<target>::run`), so
//! they run both under libFuzzer (`fuzz_targets/<target>.rs`: `cargo +nightly fuzz run
//! <target>`) and as an ordinary test on generated inputs (`tools/fuzz-smoke`, part of
//! `cargo test --workspace`, which includes this file by path: the fuzz package itself stays out
//! of the workspace, since libfuzzer-sys needs a nightly toolchain to link its harness).

pub mod common;
pub mod model_engines;
pub mod model_event_ioctls;
pub mod model_memory_ioctls;
pub mod model_queue_ioctls;
pub mod model_svm_ioctls;
pub mod topology_parser;
pub mod va_allocator;
