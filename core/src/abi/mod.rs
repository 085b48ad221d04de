//! The C ABI: KFD ioctl argument types and requests (`kfd`), the thunk's public types and
//! constants (`hsakmt`), and the model plugin table (`model`). Layouts are checked row by
//! row against the compiler-computed tables in `tests/data` by `tests/abi_tables.rs`.

mod accessors;
mod event_data;
pub mod generation;
#[path = "gen_hsakmt.rs"]
pub mod hsakmt;
pub mod ioc;
#[path = "gen_kfd.rs"]
pub mod kfd;
pub mod model;
pub mod smi;

pub use event_data::EventData;
