//! hsakmt-model: the software KFD + GPU model of hsakmt-rs.
//!
//! - [`Model`]: a KFD answering ioctls in process ([`Model::handle_ioctl`]) and through the
//!   `hsakmt_core::Kfd` port, over a topology from the built-in [`catalogue`] or a sysfs-layout
//!   directory (`HSA_MODEL_TOPOLOGY`).
//! - Memory: BOs are real memory in the model's memfd (mmap-able at their `mmap_offset`), each
//!   GPU has a page table that MAP/UNMAP change, and [`Model::gpu_read`] / [`Model::gpu_write`]
//!   / atomics reach memory by GPU virtual address with faults instead of crashes. IPC handles
//!   and dmabufs work across `fork` (design notes in `devmem.rs`).
//! - The crate also builds as a plugin .so exporting `get_hsakmt_model_functions`
//!   (hsakmtmodeliface.h 0.4 as upstream ROCm ships it, see [`plugin04`], or 1.1, where the
//!   plugin is the KFD), see [`plugin`] and model/PLUGIN.md.

mod ais;
pub mod catalogue;
mod counters;
mod debug;
mod devmem;
mod drm;
pub mod engine;
pub mod events;
mod file;
pub mod fork;
mod gpu;
pub mod isa;
mod kfd;
mod mem;
mod model;
mod pcs;
pub mod plugin;
pub mod plugin04;
mod port;
mod queues;
mod rangealloc;
mod smi;
mod spm;
mod svm;
mod sys;
mod sysfiles;
pub mod topology;
mod usercopy;
mod userptr;
pub mod vfs;

pub use catalogue::catalogue_names;
pub use counters::{launch_shape, CounterSnapshot};
pub use drm::{marketing_name, DRM_VERSION};
pub use file::KfdFile;
pub use gpu::{AtomicOp, GpuFault, GpuFaultKind, GpuWord};
pub use kfd::{available_memory, ioctl_count};
pub use model::{parse_version, Model, ModelConfig, ModelError, TopologySource, DEFAULT_KFD_VERSION};
pub use plugin::{get_hsakmt_model_functions, hsakmt_rs_get_model_functions, HsakmtModelFunctions};
pub use queues::{QueueInfo, ENOTSUPP};
pub use smi::{smi_event_visible, RESET_CAUSE_HWS, SMI_FIFO_BYTES, SMI_MSG_BYTES};
pub use svm::xnack_mode;
pub use sysfiles::SysFiles;
pub use usercopy::{copy_from_user, copy_to_user};

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

impl Model {
    /// One KFD ioctl: `request` is the `unsigned long` of ioctl(2) (only its low 32 bits, the
    /// `unsigned int cmd` the kernel sees, matter); `arg` the argument pointer. Returns the
    /// errno the kernel would. A NULL or wild `arg`, or a wild pointer inside the argument,
    /// gives EFAULT; nothing panics (a panic would be caught and reported as EFAULT).
    ///
    /// # Safety
    /// Like ioctl(2): the model writes the ioctl's output through `arg` (and through output
    /// pointers inside it), so whatever memory they name must be the caller's to overwrite.
    /// Unmapped or read-only addresses are detected and answered with EFAULT.
    pub unsafe fn handle_ioctl(&self, request: u64, arg: *mut c_void) -> Result<(), i32> {
        catch_unwind(AssertUnwindSafe(|| self.ioctl_arg(request as u32, kfd::Arg::Ptr(arg as usize)))).unwrap_or(Err(libc::EFAULT))
    }

    /// One model-interface DRM call (`enum hsakmt_drm_cmd`); see the `drm` module notes.
    ///
    /// # Safety
    /// As [`Model::handle_ioctl`]: output pointers in the argument struct must be the caller's.
    pub unsafe fn handle_drm_call(&self, cmd: u32, arg: *mut c_void) -> Result<(), i32> {
        catch_unwind(AssertUnwindSafe(|| self.drm_call(cmd, arg as usize))).unwrap_or(Err(libc::EFAULT))
    }
}
