//! # hsakmt-api: hsakmt-rs for Rust programs
//!
//! A safe API over the thunk's core ([`hsakmt_core::context::Context`]) for runtimes and tools
//! written in Rust: no C calling convention, no global state (each [`Device`] is its own open),
//! owning handles that give back what they hold when dropped, builders instead of bit fields and
//! positional arguments, and one [`Error`] type that `?` turns into `Box<dyn Error>`.
//!
//! | handle | made by | dropped: |
//! |---|---|---|
//! | [`Device`] | [`Device::open`], [`Device::open_kfd`], [`Device::open_model`] | closes the KFD (after the last handle) |
//! | [`Buffer`] | [`Device::alloc`] with [`MemFlags`] | frees the memory |
//! | [`GpuMapping`] | [`Buffer::map_to`] | unmaps it from the GPUs |
//! | [`Event`] | [`Device::event`] | destroys the KFD event |
//! | [`Signal`] | [`Device::signal`] | frees its memory |
//! | [`SdmaQueue`], [`Pm4Queue`], [`AqlQueue`] | [`Device::queue`] | destroys the queue, then frees its ring |
//!
//! Packets are the core's packet builders, re-exported as [`packet`]: [`packet::sdma::Repr`],
//! [`packet::pm4::Repr`], [`packet::aql::Repr`].
//!
//! ## An SDMA copy
//!
//! ```
//! use hsakmt_api::{packet::sdma, Device, MemFlags};
//! use std::time::Duration;
//!
//! let dev = Device::open_model("mi300x")?;
//! let gpu = &dev.gpus()?[0];
//! let mut src = dev.alloc(gpu, 64 << 10, MemFlags::host().uncached())?;
//! let mut dst = dev.alloc(gpu, 64 << 10, MemFlags::host().uncached())?;
//! let pattern: Vec<u8> = (0..16384u32).map(|i| (i * 7 + 3) as u8).collect();
//! src.write(0, &pattern)?;
//! let (src, dst) = (src.map_to(&[gpu])?, dst.map_to(&[gpu])?);
//!
//! let done = dev.event(gpu)?;
//! let q = dev.queue(gpu).sdma()?;
//! q.submit(&[
//!     sdma::Repr::copy_linear(src.gpu_addr(), dst.gpu_addr(), pattern.len() as u32),
//!     sdma::Repr::fence(done.mailbox(), done.id()),   // then write the event id …
//!     sdma::Repr::Trap { int_context: done.id() },     // … and interrupt
//! ])?;
//! done.wait(Duration::from_secs(10))?;
//!
//! let mut back = vec![0u8; pattern.len()];
//! dst.read(0, &mut back)?;
//! assert_eq!(back, pattern);
//! let mut rest = [0xffu8; 16];
//! dst.read(pattern.len() as u64, &mut rest)?;
//! assert_eq!(rest, [0; 16]); // nothing past the copy
//! # Ok::<(), hsakmt_api::Error>(())
//! ```
//!
//! ## An AQL barrier with a completion signal
//!
//! A barrier-AND packet holds the queue until its dependency signal is 0, then decrements its
//! completion signal, whose interrupt raises an event:
//!
//! ```
//! use hsakmt_api::packet::aql::{self, Barrier, Body, DEP_SIGNALS};
//! use hsakmt_api::{Device, ErrorKind};
//! use std::time::Duration;
//!
//! let dev = Device::open_model("mi300x")?;
//! let gpu = &dev.gpus()?[0];
//! let q = dev.queue(gpu).packets(64).aql()?;
//! let dep = dev.signal(1).create(gpu)?;
//! let done_event = dev.event(gpu)?;
//! let done = dev.signal(1).interrupt(&done_event).create(gpu)?;
//!
//! let mut deps = [0u64; DEP_SIGNALS];
//! deps[0] = dep.handle();
//! let barrier = Barrier { dep_signal: deps, completion_signal: done.handle() };
//! let index = q.submit(&aql::Repr::new(Body::BarrierAnd(barrier)).barrier(true))?;
//! assert_eq!(index, 0);
//!
//! // Held by its dependency: the completion signal stays 1.
//! let held = done.wait_eq(0, Duration::from_millis(20)).unwrap_err();
//! assert_eq!(held.kind(), ErrorKind::Timeout);
//! assert_eq!(done.value(), 1);
//!
//! dep.store(0); // release it
//! done_event.wait(Duration::from_secs(10))?;
//! assert_eq!(done.value(), 0);
//! # Ok::<(), hsakmt_api::Error>(())
//! ```
//!
//! ## Soundness
//!
//! Memory a GPU can write is never reached through a plain `&`/`&mut` reference: buffers are
//! read and written through atomic byte copies and atomic word views, signals through an
//! `AtomicI64`, rings through the core's producers (raw pointers, atomics). Handles keep the
//! device alive and release in a safe order (a queue is destroyed before its ring is freed; a
//! mapping cannot outlive its buffer). Packets name GPU addresses freely: a GPU reaches only
//! memory mapped to it (buffers of this device, all CPU-accessed atomically), and a bad
//! address is a GPU fault, reported by the KFD, not undefined behaviour in this process. This
//! crate offers no userptr registration or SVM ranges (which would give the GPU ordinary
//! process memory); use the core's `unsafe fn`s for those. See `docs/soundness.md`.

mod device;
mod error;
mod memory;
#[cfg(feature = "model")]
mod model_port;
mod queue;
mod sync;

pub use device::{Device, Node};
pub use error::{Error, ErrorKind, Result};
pub use hsakmt_core::packet;
pub use hsakmt_core::{Backend, Status};
pub use memory::{Buffer, GpuMapping, MemFlags};
pub use queue::{AqlQueue, Pm4Queue, Priority, QueueBuilder, SdmaQueue};
pub use sync::{Event, Signal, SignalBuilder};
