//! The fuzz targets' bodies (`fuzz/src`, one `run(&[u8])` per target), built as part of the
//! workspace so `cargo test --workspace` can run each on generated inputs (tests/smoke.rs).

#[path = "../../../fuzz/src/lib.rs"]
mod bodies;

pub use bodies::*;
