//! hsakmt-core: the no_std heart of hsakmt-rs.
//!
//! Data flows one way: the C shim (`hsakmt-ffi`) calls a [`context::Context`], which reaches
//! the kernel or the software model only through the [`port::Kfd`] trait.
#![no_std]
extern crate alloc;

pub mod abi;
pub mod ais;
pub mod context;
pub mod event;
pub mod fmm;
pub mod memory;
pub mod packet;
pub mod pmc;
pub mod port;
pub mod profiling;
pub mod queue;
pub mod status;
pub mod svm;
pub mod topology;

pub use port::{AmdgpuDevice, Backend, GemVaOp, Kfd, SysTree};
pub use status::{Errno, KmtResult, Status};
