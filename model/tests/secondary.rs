//! Secondary KFD processes (AMDKFD_IOC_CREATE_PROCESS, mainline KFD 1.19) through files of the
//! model's /dev/kfd: the ioctl's rules, what a secondary process owns and what it shares with
//! its primary, what the kernel refuses it, and its end when its file is closed.

use hsakmt_core::abi::ioc;
use hsakmt_core::abi::kfd::*;
use hsakmt_core::context::AMDKFD_IOC_CREATE_PROCESS_MAINLINE as CREATE_PROCESS;
use hsakmt_core::port::ioctl_no_arg;
use hsakmt_core::{Errno, Kfd};
use hsakmt_model::{KfdFile, Model, ModelConfig};
use std::sync::Arc;
use zerocopy::{FromZeros, IntoBytes};

const VRAM: u32 = KFD_IOC_ALLOC_MEM_FLAGS_VRAM as u32;
const RW: u32 = KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE as u32;
const USERPTR: u32 = KFD_IOC_ALLOC_MEM_FLAGS_USERPTR as u32;

fn shared(name: &str, minor: u32) -> Arc<Model> {
    Model::new_shared(ModelConfig::catalogue(name).with_kfd_version(1, minor)).unwrap()
}

fn ioctl<T: IntoBytes + zerocopy::FromBytes + zerocopy::Immutable + zerocopy::KnownLayout>(
    k: &dyn Kfd,
    request: u32,
    arg: &mut T,
) -> Result<(), i32> {
    // SAFETY: the tests pass argument structs whose addresses are NULL or their own live buffers.
    unsafe { hsakmt_core::port::ioctl_typed(k, request, arg) }.map_err(|e| e.0)
}

fn secondary(m: &Arc<Model>) -> KfdFile {
    let f = m.open_file();
    ioctl_no_arg(&f, CREATE_PROCESS).unwrap();
    f
}

/// ACQUIRE_VM of GPU `gpu_id` with a render file opened through `k`; the fd is kept open.
fn acquire(k: &dyn Kfd, m: &Model, gpu_id: u32) -> Result<i32, i32> {
    let minor = m.gpus().iter().find(|g| g.gpu_id == gpu_id).unwrap().drm_render_minor;
    let fd = k.open_render_node(minor).map_err(|e| e.0)?;
    let mut a = kfd_ioctl_acquire_vm_args { drm_fd: fd as u32, gpu_id };
    ioctl(k, AMDKFD_IOC_ACQUIRE_VM, &mut a).map(|()| fd)
}

fn alloc(k: &dyn Kfd, gpu_id: u32, va: u64, size: u64, flags: u32, mmap_offset: u64) -> Result<u64, i32> {
    let mut a = kfd_ioctl_alloc_memory_of_gpu_args { va_addr: va, size, handle: 0, mmap_offset, gpu_id, flags };
    ioctl(k, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a).map(|()| a.handle)
}

fn available(k: &dyn Kfd, gpu_id: u32) -> u64 {
    let mut a = kfd_ioctl_get_available_memory_args { available: 0, gpu_id, pad: 0 };
    ioctl(k, AMDKFD_IOC_AVAILABLE_MEMORY, &mut a).unwrap();
    a.available
}

#[test]
fn create_process_rules() {
    // 1.18 has no slot 0x27 (ENOTTY); from 1.19 a file of the primary gets a secondary process.
    let old = shared("mi210", 18);
    assert_eq!(ioctl_no_arg(&old.open_file(), CREATE_PROCESS), Err(Errno(libc::ENOTTY)));
    let m = shared("mi210", 19);
    let f = m.open_file();
    assert_eq!(f.process().context_id(), 0xFFFF, "a new file reaches the primary");
    assert!(Arc::ptr_eq(f.process(), &m));
    ioctl_no_arg(&f, CREATE_PROCESS).unwrap();
    assert!(f.process().is_secondary());
    assert_eq!(f.process().context_id(), 0, "the lowest free id");
    // Each file owns one process: again on the same file is EINVAL.
    assert_eq!(ioctl_no_arg(&f, CREATE_PROCESS), Err(Errno(libc::EINVAL)));
    // ROCm's declaration (_IOWR, 8 bytes) reaches the same handler; its bytes are not touched.
    let g = m.open_file();
    let mut args = [0xa5u8; 8];
    // SAFETY: `args` is a live 8-byte buffer, the size the request encodes.
    unsafe { g.ioctl(AMDKFD_IOC_CREATE_PROCESS, &mut args) }.unwrap();
    assert_eq!(args, [0xa5; 8]);
    assert_eq!(g.process().context_id(), 1);
    assert_eq!(m.secondary_count(), 2);
    // Closing a file destroys its process and frees its id.
    drop(f);
    assert_eq!(m.secondary_count(), 1);
    assert_eq!(secondary(&m).process().context_id(), 0);
    // Reached without a file (the plugin interface), the primary has nothing to repoint.
    let mut none = [0u8; 8];
    // SAFETY: as above.
    assert_eq!(unsafe { Kfd::ioctl(&*m, AMDKFD_IOC_CREATE_PROCESS, &mut none) }, Err(Errno(libc::ENOTTY)));
    // The model's own port hands out files too.
    let further = Kfd::open_further(&*m).unwrap();
    ioctl_no_arg(&*further, CREATE_PROCESS).unwrap();
    assert_eq!(ioctl_no_arg(&*further, CREATE_PROCESS), Err(Errno(libc::EINVAL)));
    assert_eq!(ioc::size(CREATE_PROCESS), 0);
}

#[test]
fn a_secondary_process_owns_its_vms_bos_and_events() {
    let m = shared("mi210", 22);
    let gpu = m.gpus()[0].gpu_id;
    let s = secondary(&m);
    // Its own VM: a render file the primary opened is not its (the kernel's VM belongs to the
    // process that acquired it); one opened through its own file is.
    let primary_fd = acquire(&*m, &m, gpu).unwrap();
    let mut a = kfd_ioctl_acquire_vm_args { drm_fd: primary_fd as u32, gpu_id: gpu };
    assert_eq!(ioctl(&s, AMDKFD_IOC_ACQUIRE_VM, &mut a), Err(libc::EINVAL));
    acquire(&s, &m, gpu).unwrap();
    // A BO of the secondary is no BO of the primary (which has none).
    let before = available(&*m, gpu);
    let h = alloc(&s, gpu, 0x7f00_0000_0000, 64 << 20, VRAM | RW, 0).unwrap();
    let mut fr = kfd_ioctl_free_memory_of_gpu_args { handle: h };
    assert_eq!(ioctl(&*m, AMDKFD_IOC_FREE_MEMORY_OF_GPU, &mut fr), Err(libc::EINVAL));
    // The device is shared: the primary sees the secondary's VRAM go.
    assert!(available(&*m, gpu) <= before - (64 << 20), "VRAM accounting is the device's");
    // Events: the secondary's event id means nothing to the primary.
    let mut ce = kfd_ioctl_create_event_args::new_zeroed();
    ce.event_type = KFD_IOC_EVENT_SIGNAL as u32;
    ioctl(&s, AMDKFD_IOC_CREATE_EVENT, &mut ce).unwrap_or_else(|e| panic!("create event: {e}"));
    let mut set = kfd_ioctl_set_event_args { event_id: ce.event_id, pad: 0 };
    ioctl(&s, AMDKFD_IOC_SET_EVENT, &mut set).unwrap();
    assert_eq!(ioctl(&*m, AMDKFD_IOC_SET_EVENT, &mut set), Err(libc::EINVAL));
    // Closing the file gives everything back: the VRAM is available again.
    drop(s);
    assert_eq!(available(&*m, gpu), before);
    let _ = primary_fd;
}

#[test]
fn svm_userptr_and_debug_trap_only_on_the_primary() {
    let m = shared("mi210", 22);
    let gpu = m.gpus()[0].gpu_id;
    let s = secondary(&m);
    acquire(&s, &m, gpu).unwrap();
    acquire(&*m, &m, gpu).unwrap();
    let page = vec![0u8; 3 * 4096];
    let user = (page.as_ptr() as u64 + 4095) & !4095;
    assert_eq!(alloc(&s, gpu, user, 4096, USERPTR | RW, user), Err(libc::EOPNOTSUPP));
    let h = alloc(&*m, gpu, user, 4096, USERPTR | RW, user).unwrap();
    let mut fr = kfd_ioctl_free_memory_of_gpu_args { handle: h };
    ioctl(&*m, AMDKFD_IOC_FREE_MEMORY_OF_GPU, &mut fr).unwrap();
    // Non-userptr memory is fine on the secondary.
    alloc(&s, gpu, 0x7f10_0000_0000, 4096, VRAM | RW, 0).unwrap();
    // SVM (a GET over a page of the process: a header and no attribute).
    let mut svm = kfd_ioctl_svm_args::new_zeroed();
    svm.start_addr = user;
    svm.size = 4096;
    svm.op = KFD_IOCTL_SVM_OP_GET_ATTR;
    assert_eq!(ioctl(&s, AMDKFD_IOC_SVM, &mut svm), Err(libc::EOPNOTSUPP));
    assert_eq!(ioctl(&*m, AMDKFD_IOC_SVM, &mut svm), Ok(()));
    // DBG_TRAP: refused first, whatever the arguments (pid 0 is ESRCH on the primary).
    let mut dbg = [0u8; std::mem::size_of::<kfd_ioctl_dbg_trap_args>()];
    // SAFETY: a zeroed argument: pid 0, no pointers.
    assert_eq!(unsafe { s.ioctl(AMDKFD_IOC_DBG_TRAP, &mut dbg) }, Err(Errno(libc::EOPNOTSUPP)));
    // SAFETY: as above.
    assert_eq!(unsafe { Kfd::ioctl(&*m, AMDKFD_IOC_DBG_TRAP, &mut dbg) }, Err(Errno(libc::ESRCH)));
}
