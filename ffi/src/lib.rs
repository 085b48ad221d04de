//! libhsakmt.so.1 / libhsakmt.a: the hsaKmt* C API of hsakmt-rs.
//!
//! Every export goes through `boundary::guard` (no panic crosses into C, errno is kept) and
//! reaches the kernel or the model only through a core `Context`. Functions whose issue has
//! not landed are generated stubs answering HSAKMT_STATUS_NOT_SUPPORTED (`gen_exports`).
#![allow(non_snake_case, clippy::missing_safety_doc)]

mod ais;
pub mod boundary;
mod compat;
pub mod contexts;
mod contexts_gen;
mod debug;
mod device;
mod events;
mod gen_bindings;
mod gen_exports;
pub mod generation;
pub mod global;
mod handles;
pub mod log;
mod memory;
mod openclose;
mod plugin;
pub mod pmc;
mod profiling;
pub mod published;
mod queues;
pub mod safe;
mod smi;
mod svm;
mod topology;
pub mod virtio;

pub use device::*;
pub use events::*;
pub use memory::*;
pub use openclose::*;
pub use pmc::*;
pub use profiling::*;
pub use queues::*;
pub use smi::*;
pub use svm::*;
pub use topology::*;
