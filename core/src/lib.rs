//! hsakmt-core: the no_std heart of hsakmt-rs.
#![no_std]
extern crate alloc;

pub mod abi;
