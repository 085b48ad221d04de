//! The KFD ioctl handler: success paths and the kernel's error rules.

use hsakmt_core::abi::ioc;
use hsakmt_core::abi::kfd::*;
use hsakmt_core::{Backend, Errno, Kfd, SysTree};
use hsakmt_model::{available_memory, Model, ModelConfig};
use std::ffi::c_void;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd};
use zerocopy::{FromZeros, IntoBytes};

const EINVAL: i32 = libc::EINVAL;
const EFAULT: i32 = libc::EFAULT;
const ENOTTY: i32 = libc::ENOTTY;
const EBUSY: i32 = libc::EBUSY;
const ENOMEM: i32 = libc::ENOMEM;

fn model(name: &str) -> Model {
    Model::new(ModelConfig::catalogue(name)).unwrap()
}

fn versioned(name: &str, minor: u32) -> Model {
    Model::new(ModelConfig::catalogue(name).with_kfd_version(1, minor)).unwrap()
}

/// ioctl through the raw entry point with a typed argument.
fn raw<T: IntoBytes + zerocopy::FromBytes>(m: &Model, request: u32, arg: &mut T) -> Result<(), i32> {
    // SAFETY: `arg` is a live, exclusively borrowed argument struct.
    unsafe { m.handle_ioctl(u64::from(request), arg.as_mut_bytes().as_mut_ptr().cast()) }
}

/// ioctl with a raw address (possibly bogus).
fn at(m: &Model, request: u32, addr: usize) -> Result<(), i32> {
    // SAFETY: any address the tests pass is either a live buffer they own or invalid (and then
    // checked by the model).
    unsafe { m.handle_ioctl(u64::from(request), addr as *mut c_void) }
}

/// `request` with its size field replaced.
fn with_size(request: u32, size: usize) -> u32 {
    ioc::ioc(ioc::dir(request), ioc::nr(request), size)
}

fn first_gpu(m: &Model) -> u32 {
    m.gpus()[0].gpu_id
}

#[test]
fn get_version_default_and_configured() {
    let m = model("mi300x");
    let mut v = kfd_ioctl_get_version_args::new_zeroed();
    raw(&m, AMDKFD_IOC_GET_VERSION, &mut v).unwrap();
    assert_eq!((v.major_version, v.minor_version), (1, 22));
    let m = versioned("mi25", 14);
    raw(&m, AMDKFD_IOC_GET_VERSION, &mut v).unwrap();
    assert_eq!((v.major_version, v.minor_version), (1, 14));
}

#[test]
fn unknown_and_unmodelled_ioctls() {
    let m = model("mi300x");
    let mut buf = [0u8; 64];
    let p = buf.as_mut_ptr() as usize;
    assert_eq!(at(&m, ioc::iowr::<[u8; 8]>(0x00), p), Err(ENOTTY));
    assert_eq!(at(&m, ioc::iowr::<[u8; 8]>(0x28), p), Err(ENOTTY));
    assert_eq!(at(&m, ioc::iowr::<[u8; 8]>(0x5f), p), Err(ENOTTY));
    assert_eq!(at(&m, ioc::iowr::<[u8; 8]>(0xff), p), Err(ENOTTY));
    // ROCm-only ioctls (0x80..) are unknown to mainline; ROCm's kernel (the default) has them.
    let mainline = Model::new(ModelConfig::catalogue("mi300x").with_dkms_ioctls(false)).unwrap();
    assert_eq!(at(&mainline, AMDKFD_IOC_IPC_IMPORT_HANDLE, p), Err(ENOTTY));
    assert_eq!(at(&mainline, AMDKFD_IOC_IPC_EXPORT_HANDLE, p), Err(ENOTTY));
    assert_eq!(at(&m, AMDKFD_IOC_IPC_IMPORT_HANDLE, 0), Err(EFAULT), "modelled: the argument is copied");
    // AIS_OP is modelled (model/AIS.md): a zeroed argument's op 0 is neither READ nor WRITE,
    // and the handler's result comes back in `out.status` (offset 8); mainline lacks it.
    assert_eq!(at(&m, AMDKFD_IOC_AIS_OP, p), Err(libc::EINVAL));
    assert_eq!(i32::from_ne_bytes(buf[8..12].try_into().unwrap()), -libc::EINVAL);
    assert_eq!(at(&mainline, AMDKFD_IOC_AIS_OP, p), Err(ENOTTY));
    assert_eq!(at(&m, ioc::iowr::<[u8; 8]>(0x88), p), Err(ENOTTY));
    // In the kernel's table but not modelled in this slice.
    assert_eq!(at(&m, AMDKFD_IOC_CRIU_OP, p), Err(ENOTTY));
    // DBG_TRAP is modelled (model/DEBUG.md): a zeroed argument names pid 0, which is no process.
    assert_eq!(at(&m, AMDKFD_IOC_DBG_TRAP, p), Err(libc::ESRCH));
    // Modelled queue ioctls: a zeroed argument names GPU 0, which does not exist.
    assert_eq!(at(&m, AMDKFD_IOC_CREATE_QUEUE, p), Err(libc::EINVAL));
    assert_eq!(at(&m, AMDKFD_IOC_SET_TRAP_HANDLER, p), Err(libc::EINVAL));
    // Deprecated debugger ioctls: EPERM after the argument copy (a NULL arg faults first).
    assert_eq!(at(&m, AMDKFD_IOC_DBG_REGISTER_DEPRECATED, p), Err(libc::EPERM));
    assert_eq!(at(&m, AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED, p), Err(libc::EPERM));
    assert_eq!(at(&m, AMDKFD_IOC_DBG_REGISTER_DEPRECATED, 0), Err(EFAULT));
    // The type byte is not checked, and bits above the 32-bit cmd are dropped.
    let alien = (2u64 << 30) | (8 << 16) | (u64::from(b'Z') << 8) | 0x01 | (1 << 40);
    // SAFETY: `buf` is live and 64 bytes long.
    assert_eq!(unsafe { m.handle_ioctl(alien, buf.as_mut_ptr().cast()) }, Ok(()));
    assert_eq!(&buf[..8], &[1, 0, 0, 0, 22, 0, 0, 0]);
}

#[test]
fn argument_size_rules() {
    let m = model("mi300x");
    // Short _IOR: only the first 4 bytes come back.
    let mut buf = [0xffu8; 16];
    at(&m, with_size(AMDKFD_IOC_GET_VERSION, 4), buf.as_mut_ptr() as usize).unwrap();
    assert_eq!(&buf[..8], &[1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
    // Long _IOR: the kernel zeroes the caller's whole size before copying it back.
    let mut buf = [0xffu8; 16];
    at(&m, with_size(AMDKFD_IOC_GET_VERSION, 12), buf.as_mut_ptr() as usize).unwrap();
    assert_eq!(&buf[..16], &[1, 0, 0, 0, 22, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
    // Size 0 copies nothing, so even NULL works.
    assert_eq!(at(&m, with_size(AMDKFD_IOC_GET_VERSION, 0), 0), Ok(()));
    // Long _IOWR: the extra bytes are copied in and echoed back unchanged.
    let mut buf = [0u8; 48];
    buf[32..36].copy_from_slice(&first_gpu(&m).to_ne_bytes());
    buf[40..48].copy_from_slice(&[0xab; 8]);
    at(&m, with_size(AMDKFD_IOC_GET_CLOCK_COUNTERS, 48), buf.as_mut_ptr() as usize).unwrap();
    assert_eq!(&buf[40..48], &[0xab; 8]);
    assert_ne!(u64::from_ne_bytes(buf[0..8].try_into().unwrap()), 0, "gpu counter");
    // Short _IOWR cutting off gpu_id: the handler sees gpu_id 0 (no GPU: counter 0), and bytes
    // past the caller's size are not written.
    let mut buf = [0x77u8; 40];
    at(&m, with_size(AMDKFD_IOC_GET_CLOCK_COUNTERS, 32), buf.as_mut_ptr() as usize).unwrap();
    assert_eq!(u64::from_ne_bytes(buf[0..8].try_into().unwrap()), 0);
    assert_eq!(u64::from_ne_bytes(buf[24..32].try_into().unwrap()), 1_000_000_000);
    assert_eq!(&buf[32..40], &[0x77; 8]);
}

#[test]
fn null_and_wild_pointers_fault() {
    let m = model("mi210");
    for req in [
        AMDKFD_IOC_GET_VERSION,
        AMDKFD_IOC_GET_CLOCK_COUNTERS,
        AMDKFD_IOC_GET_PROCESS_APERTURES,
        AMDKFD_IOC_GET_PROCESS_APERTURES_NEW,
        AMDKFD_IOC_ACQUIRE_VM,
        AMDKFD_IOC_AVAILABLE_MEMORY,
        AMDKFD_IOC_RUNTIME_ENABLE,
    ] {
        for addr in [0usize, 8, 0xdead_0000, usize::MAX - 3, 0x7fff_ffff_f000_0000] {
            assert_eq!(at(&m, req, addr), Err(EFAULT), "request {req:#x} at {addr:#x}");
        }
    }
    // Output into read-only memory faults too.
    static RO: [u8; 8] = [0; 8];
    assert_eq!(at(&m, AMDKFD_IOC_GET_VERSION, RO.as_ptr() as usize), Err(EFAULT));
}

#[test]
fn apertures_new() {
    let m = model("mi300x");
    let ids: Vec<u32> = m.gpus().iter().map(|g| g.gpu_id).collect();
    assert_eq!(ids.len(), 8);
    // num_of_nodes == 0: the count, nothing copied (the pointer is not looked at).
    let mut a = kfd_ioctl_get_process_apertures_new_args::new_zeroed();
    a.kfd_process_device_apertures_ptr = 0x10;
    raw(&m, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &mut a).unwrap();
    assert_eq!(a.num_of_nodes, 8);
    // Full array, in node order, gfx9 values.
    let mut out = vec![kfd_process_device_apertures::new_zeroed(); 10];
    a.kfd_process_device_apertures_ptr = out.as_mut_ptr() as u64;
    a.num_of_nodes = 10;
    raw(&m, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &mut a).unwrap();
    assert_eq!(a.num_of_nodes, 8);
    assert_eq!(out.iter().take(8).map(|e| e.gpu_id).collect::<Vec<_>>(), ids);
    let e = out[0];
    assert_eq!((e.lds_base, e.lds_limit), (0x0001_0000_0000_0000, 0x0001_0000_FFFF_FFFF));
    assert_eq!((e.scratch_base, e.scratch_limit), (0x0002_0000_0000_0000, 0x0002_0000_FFFF_FFFF));
    assert_eq!((e.gpuvm_base, e.gpuvm_limit), (0x1_0000, 0x0000_7FFF_FFFF_FFFF));
    assert_eq!(out[8].gpu_id, 0, "entries past the count are not written");
    // Too small a num_of_nodes is not an error: truncated.
    let mut out = vec![kfd_process_device_apertures::new_zeroed(); 3];
    a.kfd_process_device_apertures_ptr = out.as_mut_ptr() as u64;
    a.num_of_nodes = 3;
    raw(&m, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &mut a).unwrap();
    assert_eq!(a.num_of_nodes, 3);
    assert_eq!(out[2].gpu_id, ids[2]);
    // A bad array pointer: EFAULT.
    a.kfd_process_device_apertures_ptr = 0;
    a.num_of_nodes = 2;
    assert_eq!(raw(&m, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &mut a), Err(EFAULT));
    a.kfd_process_device_apertures_ptr = 0x1000;
    assert_eq!(raw(&m, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &mut a), Err(EFAULT));
    // A count the kernel cannot kcalloc: ENOMEM.
    a.num_of_nodes = u32::MAX;
    assert_eq!(raw(&m, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &mut a), Err(ENOMEM));
}

#[test]
fn legacy_apertures_stop_at_seven() {
    let m = model("mi300x-cpx");
    assert_eq!(m.gpus().len(), 63);
    let mut a = kfd_ioctl_get_process_apertures_args::new_zeroed();
    a.num_of_nodes = 99;
    raw(&m, AMDKFD_IOC_GET_PROCESS_APERTURES, &mut a).unwrap();
    assert_eq!(a.num_of_nodes, 7);
    assert_eq!(a.process_apertures[6].gpu_id, m.gpus()[6].gpu_id);
    let m = model("mi25");
    raw(&m, AMDKFD_IOC_GET_PROCESS_APERTURES, &mut a).unwrap();
    assert_eq!(a.num_of_nodes, 1);
    assert_eq!(a.process_apertures[0].gpu_id, 13261);
}

fn acquire(m: &Model, fd: i32, gpu_id: u32) -> Result<(), i32> {
    let mut a = kfd_ioctl_acquire_vm_args { drm_fd: fd as u32, gpu_id };
    raw(m, AMDKFD_IOC_ACQUIRE_VM, &mut a)
}

#[test]
fn acquire_vm_rules() {
    let m = model("mi210");
    let g0 = m.gpus()[0].clone();
    let g1 = m.gpus()[1].clone();
    let fd0 = m.open_render(g0.drm_render_minor).unwrap();
    let fd1 = m.open_render(g1.drm_render_minor).unwrap();
    // Bad fd, a file that is not one of ours, an unknown gpu, another GPU's render node.
    assert_eq!(acquire(&m, -1, g0.gpu_id), Err(EINVAL));
    assert_eq!(acquire(&m, 9999, g0.gpu_id), Err(EINVAL));
    let devnull = std::fs::File::open("/dev/null").unwrap();
    assert_eq!(acquire(&m, devnull.as_raw_fd(), g0.gpu_id), Err(EINVAL));
    assert_eq!(acquire(&m, fd0.as_raw_fd(), 0xbeef), Err(EINVAL));
    assert_eq!(acquire(&m, fd0.as_raw_fd(), 0), Err(EINVAL));
    assert_eq!(acquire(&m, fd1.as_raw_fd(), g0.gpu_id), Err(EINVAL));
    // Success, then again with the same file (also through a dup): 0.
    acquire(&m, fd0.as_raw_fd(), g0.gpu_id).unwrap();
    acquire(&m, fd0.as_raw_fd(), g0.gpu_id).unwrap();
    let dup = fd0.try_clone().unwrap();
    acquire(&m, dup.as_raw_fd(), g0.gpu_id).unwrap();
    // A second open of the same render node is another file: EBUSY.
    let again = m.open_render(g0.drm_render_minor).unwrap();
    assert_eq!(acquire(&m, again.as_raw_fd(), g0.gpu_id), Err(EBUSY));
    // Closing the fd does not release the VM.
    m.close_render(fd0);
    acquire(&m, dup.as_raw_fd(), g0.gpu_id).unwrap();
    acquire(&m, fd1.as_raw_fd(), g1.gpu_id).unwrap();
    // Unknown minors have no render node.
    assert_eq!(m.open_render(127).unwrap_err(), libc::ENOENT);
    assert_eq!(m.open_render(200).unwrap_err(), libc::ENOENT);
}

fn clocks(m: &Model, gpu_id: u32) -> kfd_ioctl_get_clock_counters_args {
    let mut c = kfd_ioctl_get_clock_counters_args::new_zeroed();
    c.gpu_id = gpu_id;
    raw(m, AMDKFD_IOC_GET_CLOCK_COUNTERS, &mut c).unwrap();
    c
}

#[test]
fn clock_counters_are_monotonic_at_100mhz() {
    let m = model("rx7900xtx");
    let id = first_gpu(&m);
    let a = clocks(&m, id);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let b = clocks(&m, id);
    assert!(b.gpu_clock_counter > a.gpu_clock_counter);
    assert!(b.cpu_clock_counter > a.cpu_clock_counter);
    assert!(b.system_clock_counter > a.system_clock_counter);
    assert_eq!(b.system_clock_freq, 1_000_000_000);
    // GPU ticks at 100 MHz: 1 tick per 10 ns of CLOCK_MONOTONIC_RAW.
    let dg = (b.gpu_clock_counter - a.gpu_clock_counter) as f64;
    let dc = (b.cpu_clock_counter - a.cpu_clock_counter) as f64;
    assert!((dg / dc - 0.1).abs() < 0.01, "ratio {}", dg / dc);
    // CLOCK_MONOTONIC_RAW and CLOCK_BOOTTIME, like ktime_get_raw_ns / ktime_get_boottime_ns.
    let raw_now = rustix::time::clock_gettime(rustix::time::ClockId::MonotonicRaw);
    let raw_now = raw_now.tv_sec as u64 * 1_000_000_000 + raw_now.tv_nsec as u64;
    assert!(b.cpu_clock_counter <= raw_now);
    // Unknown gpu_id (or a CPU node's 0): the kernel still succeeds, with gpu counter 0.
    assert_eq!(clocks(&m, 0).gpu_clock_counter, 0);
    assert_eq!(clocks(&m, 0xabcd).gpu_clock_counter, 0);
}

#[test]
fn available_memory_ioctl() {
    let m = model("mi300x");
    let mut a = kfd_ioctl_get_available_memory_args::new_zeroed();
    a.gpu_id = first_gpu(&m);
    raw(&m, AMDKFD_IOC_AVAILABLE_MEMORY, &mut a).unwrap();
    let vram = m.gpus()[0].vram_bytes;
    assert_eq!(vram, 205_822_885_888);
    assert!(a.available > vram - vram / 100 && a.available < vram);
    assert_eq!(a.available % (2 << 20), 0);
    let total: u64 = m.gpus().iter().map(|g| g.vram_bytes).sum();
    assert_eq!(a.available, available_memory(vram, 0, total));
    a.gpu_id = 0;
    assert_eq!(raw(&m, AMDKFD_IOC_AVAILABLE_MEMORY, &mut a), Err(EINVAL));
    // Added in 1.9.
    let old = versioned("mi300x", 8);
    a.gpu_id = first_gpu(&old);
    assert_eq!(raw(&old, AMDKFD_IOC_AVAILABLE_MEMORY, &mut a), Err(ENOTTY));
    raw(&versioned("mi300x", 9), AMDKFD_IOC_AVAILABLE_MEMORY, &mut a).unwrap();
}

fn runtime(m: &Model, mode: u32) -> Result<u32, i32> {
    let mut a = kfd_ioctl_runtime_enable_args { r_debug: 0x1234_5000, mode_mask: mode, capabilities_mask: 0x55 };
    raw(m, AMDKFD_IOC_RUNTIME_ENABLE, &mut a).map(|()| a.capabilities_mask)
}

#[test]
fn runtime_enable_state_machine() {
    let m = model("mi210");
    let enable = KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK as u32;
    let ttmp = KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK as u32;
    assert_eq!(runtime(&m, enable | ttmp), Ok(0x55), "capabilities come back as passed");
    assert_eq!(runtime(&m, enable), Err(EBUSY));
    assert_eq!(runtime(&m, ttmp), Ok(0x55), "no ENABLE bit: disable");
    assert_eq!(runtime(&m, 0), Ok(0x55), "disable twice is fine");
    assert_eq!(runtime(&m, enable), Ok(0x55));
}

#[test]
fn older_versions_reject_newer_ioctls() {
    // 1.12 has no RUNTIME_ENABLE (1.13); 1.13 has it.
    assert_eq!(runtime(&versioned("mi210", 12), 1), Err(ENOTTY));
    assert_eq!(runtime(&versioned("mi210", 13), 1), Ok(0x55));
    // 1.14 has no CREATE_PROCESS slot; 1.4 no SVM; 1.1 no SMI events, but GET_VERSION always.
    let m = versioned("mi25", 1);
    let mut buf = [0u8; 64];
    let p = buf.as_mut_ptr() as usize;
    assert_eq!(at(&m, AMDKFD_IOC_SMI_EVENTS, p), Err(ENOTTY));
    assert_eq!(at(&m, AMDKFD_IOC_GET_VERSION, p), Ok(()));
    assert_eq!(&buf[..8], &[1, 0, 0, 0, 1, 0, 0, 0]);
    assert_eq!(hsakmt_model::ioctl_count((1, 14)), 0x27);
    assert_eq!(hsakmt_model::ioctl_count((1, 4)), 0x20);
    assert_eq!(hsakmt_model::ioctl_count((1, 22)), 0x28);
}

#[test]
fn the_kfd_port() {
    let m = model("mi25");
    let port: &dyn Kfd = &m;
    assert_eq!(port.backend(), Backend::BuiltinModel);
    assert_eq!(port.process_id(), std::process::id());
    // Typed ioctl through the port.
    let mut v = kfd_ioctl_get_version_args::new_zeroed();
    hsakmt_core::port::ioctl_plain(port, &mut v).unwrap();
    assert_eq!(v.minor_version, 22);
    // A buffer shorter than the request's size: EINVAL (as the other backends).
    let mut short = [0u8; 4];
    // SAFETY: GET_VERSION and an unknown request carry no address.
    assert_eq!(unsafe { port.ioctl(AMDKFD_IOC_GET_VERSION, &mut short) }, Err(Errno(EINVAL)));
    // SAFETY: as above.
    assert_eq!(unsafe { port.ioctl(0x4b00, &mut short) }, Err(Errno(ENOTTY)));
    // Topology files.
    let mut buf = [0u8; 4096];
    let n = port.read_file(SysTree::Topology, "nodes/1/gpu_id", &mut buf).unwrap();
    assert_eq!(&buf[..n], b"13261\n");
    assert_eq!(port.read_file(SysTree::Topology, "nodes/9/gpu_id", &mut buf), Err(Errno(Errno::ENOENT)));
    let mut tiny = [0u8; 3];
    assert_eq!(port.read_file(SysTree::Topology, "nodes/1/properties", &mut tiny), Err(Errno(Errno::ERANGE)));
    assert_eq!(port.count_numbered_entries(SysTree::Topology, "nodes"), Ok(2));
    assert_eq!(port.count_numbered_entries(SysTree::Topology, "nodes/1/caches"), Ok(96));
    assert_eq!(port.count_numbered_entries(SysTree::Topology, "nodes/0/caches"), Ok(0));
    assert_eq!(port.count_numbered_entries(SysTree::Topology, "nodes/0/nope"), Err(Errno(Errno::ENOENT)));
    // Render nodes.
    let fd = port.open_render_node(128).unwrap();
    assert!(fd >= 0);
    let mut a = kfd_ioctl_acquire_vm_args { drm_fd: fd as u32, gpu_id: 13261 };
    hsakmt_core::port::ioctl_plain(port, &mut a).unwrap();
    port.close_render_node(fd);
    assert_eq!(port.open_render_node(129), Err(Errno(Errno::ENOENT)));
}

#[test]
fn memfd_and_mmap() {
    let m = model("mi25");
    let fd = m.create_memfd().unwrap();
    let fd2 = m.create_memfd().unwrap();
    let st1 = rustix::fs::fstat(&fd).unwrap();
    let st2 = rustix::fs::fstat(&fd2).unwrap();
    assert_eq!(st1.st_ino, st2.st_ino, "one memfd per device");
    assert_ne!(fd.as_raw_fd(), fd2.as_raw_fd());
    // Nothing is placed in it yet: mapping fails cleanly.
    let port: &dyn Kfd = &m;
    // SAFETY: no fixed address; the model refuses ranges that are not the caller's BOs.
    assert_eq!(unsafe { port.mmap(None, 4096, 3, true, 0) }, Err(Errno(EINVAL)));
    // SAFETY: as above.
    assert_eq!(unsafe { port.mmap(None, 4096, 3, true, 1 << 44) }, Err(Errno(EINVAL)));
    drop(fd2);
    let raw = fd.into_raw_fd();
    // SAFETY: re-owning the fd just released.
    drop(unsafe { OwnedFd::from_raw_fd(raw) });
}

#[test]
fn directory_topologies() {
    let dir = std::env::temp_dir().join(format!("hsakmt-model-dir-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    hsakmt_model::catalogue::export("rx7900xtx", &dir).unwrap();
    let m = Model::new(ModelConfig::directory(&dir)).unwrap();
    assert_eq!(m.gpus(), model("rx7900xtx").gpus());
    // Broken directories are reported by name.
    let err = |p: &std::path::Path| Model::new(ModelConfig::directory(p)).unwrap_err().to_string();
    assert_eq!(err(&dir.join("missing")), format!("HSA_MODEL_TOPOLOGY={}: does not exist", dir.join("missing").display()));
    assert_eq!(err(&dir.join("generation_id")), format!("HSA_MODEL_TOPOLOGY={}: not a directory", dir.join("generation_id").display()));
    assert_eq!(err(&dir.join("nodes")), format!("HSA_MODEL_TOPOLOGY={}: nodes/ missing", dir.join("nodes").display()));
    std::fs::remove_file(dir.join("nodes/1/gpu_id")).unwrap();
    assert!(err(&dir).ends_with("nodes/1/gpu_id missing (the thunk reads it for every node)"), "{}", err(&dir));
    std::fs::remove_dir_all(&dir).unwrap();
    // An unknown catalogue name.
    let e = Model::new(ModelConfig::catalogue("mi999")).unwrap_err().to_string();
    assert!(e.starts_with("HSAKMT_MODEL=mi999: no such catalogue entry (known: mi300x, "), "{e}");
}

#[test]
fn drm_calls() {
    use hsakmt_core::abi::model::drm_cmd;
    let m = model("rx7900xtx");
    let call = |cmd: u32, words: &mut [u64]| {
        // SAFETY: `words` is a live argument struct laid out as the command defines (LP64).
        unsafe { m.handle_drm_call(cmd, words.as_mut_ptr().cast()) }
    };
    let mut fd_out: i32 = -1;
    let mut open = [128u64, &mut fd_out as *mut i32 as u64];
    call(drm_cmd::OPEN_RENDER, &mut open).unwrap();
    assert!(fd_out >= 0);
    acquire(&m, fd_out, first_gpu(&m)).unwrap();
    let mut bad = [129u64, &mut fd_out as *mut i32 as u64];
    let keep = fd_out;
    assert_eq!(call(drm_cmd::OPEN_RENDER, &mut bad), Err(libc::ENOENT));
    assert_eq!(call(drm_cmd::OPEN_RENDER, &mut [128, 0x18]), Err(EFAULT));
    // SAFETY: a NULL argument struct is checked.
    assert_eq!(unsafe { m.handle_drm_call(drm_cmd::OPEN_RENDER, std::ptr::null_mut()) }, Err(EFAULT));
    // Device handle, its fd, and the marketing name.
    let (mut major, mut minor, mut dev) = (0u32, 0u32, 0usize);
    let mut init = [keep as u64, &mut major as *mut u32 as u64, &mut minor as *mut u32 as u64, &mut dev as *mut usize as u64];
    call(drm_cmd::DEVICE_INITIALIZE, &mut init).unwrap();
    assert_eq!((major, minor), hsakmt_model::DRM_VERSION);
    assert_ne!(dev, 0);
    let mut name: *const std::ffi::c_char = std::ptr::null();
    call(drm_cmd::GET_MARKETING_NAME, &mut [dev as u64, &mut name as *mut _ as u64]).unwrap();
    // SAFETY: the model wrote a pointer to a static NUL-terminated string.
    assert_eq!(unsafe { std::ffi::CStr::from_ptr(name) }.to_str().unwrap(), "AMD Radeon RX 7900 XTX");
    let mut dfd = -1i32;
    call(drm_cmd::DEVICE_GET_FD, &mut [dev as u64, &mut dfd as *mut i32 as u64]).unwrap();
    assert!(dfd >= 0);
    call(drm_cmd::DEVICE_DEINITIALIZE, &mut [dev as u64]).unwrap();
    assert_eq!(call(drm_cmd::DEVICE_DEINITIALIZE, &mut [dev as u64]), Err(EINVAL));
    // CLOSE, and what is not implemented.
    call(drm_cmd::CLOSE, &mut [keep as u64]).unwrap();
    assert_eq!(call(drm_cmd::CLOSE, &mut [keep as u64]), Err(libc::EBADF));
    assert_eq!(call(drm_cmd::BO_VA_OP, &mut [0; 6]), Err(libc::ENOSYS));
    assert_eq!(call(drm_cmd::QUERY_GPU_INFO, &mut [0; 2]), Err(libc::ENOSYS));
}

/// DBG_TRAP's rules on the caller itself (no ptrace needed to debug oneself): every op but
/// ENABLE needs debugging enabled (EINVAL), ENABLE needs an open event file (EBADF) and answers
/// EALREADY the second time, ops that need the runtime answer EPERM without it, an unknown op is
/// EINVAL, and a pid that does not exist ESRCH.
#[test]
fn dbg_trap_rules_on_self() {
    let m = model("mi300x");
    let me = std::process::id();
    let trap = |op: u32, fill: &dyn Fn(&mut kfd_ioctl_dbg_trap_args)| {
        let mut a = kfd_ioctl_dbg_trap_args::new_zeroed();
        a.pid = me;
        a.op = op;
        fill(&mut a);
        // SAFETY: a live argument; every address in it is NULL or ours.
        unsafe { m.handle_ioctl(u64::from(AMDKFD_IOC_DBG_TRAP), (&mut a as *mut kfd_ioctl_dbg_trap_args).cast()) }
    };
    let none = |_: &mut kfd_ioctl_dbg_trap_args| {};
    assert_eq!(trap(KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT, &none), Err(libc::EINVAL), "not enabled");
    assert_eq!(trap(KFD_IOC_DBG_TRAP_DISABLE, &none), Err(libc::EINVAL), "not enabled");
    let bad_fd = |a: &mut kfd_ioctl_dbg_trap_args| a.__anon_union_1.enable.dbg_fd = 100_000;
    assert_eq!(trap(KFD_IOC_DBG_TRAP_ENABLE, &bad_fd), Err(libc::EBADF));
    let (r, w) = rustix::pipe::pipe().unwrap();
    let fd = rustix::fd::AsRawFd::as_raw_fd(&w) as u32;
    let enable = move |a: &mut kfd_ioctl_dbg_trap_args| a.__anon_union_1.enable.dbg_fd = fd;
    assert_eq!(trap(KFD_IOC_DBG_TRAP_ENABLE, &enable), Ok(()));
    assert_eq!(trap(KFD_IOC_DBG_TRAP_ENABLE, &enable), Err(libc::EALREADY));
    assert_eq!(trap(KFD_IOC_DBG_TRAP_SUSPEND_QUEUES, &none), Err(libc::EPERM), "runtime not enabled");
    assert_eq!(trap(KFD_IOC_DBG_TRAP_SET_FLAGS, &none), Err(libc::EPERM), "runtime not enabled");
    assert_eq!(trap(KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT, &none), Err(libc::EAGAIN), "nothing pending");
    assert_eq!(trap(77, &none), Err(libc::EINVAL));
    let snap = |a: &mut kfd_ioctl_dbg_trap_args| a.__anon_union_1.device_snapshot.entry_size = 120;
    assert_eq!(trap(KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT, &snap), Err(libc::EINVAL), "NULL buffer");
    assert_eq!(trap(KFD_IOC_DBG_TRAP_DISABLE, &none), Ok(()));
    drop((r, w));
    let mut a = kfd_ioctl_dbg_trap_args::new_zeroed();
    a.pid = 0x3fff_fff0;
    // SAFETY: as above.
    let r = unsafe { m.handle_ioctl(u64::from(AMDKFD_IOC_DBG_TRAP), (&mut a as *mut kfd_ioctl_dbg_trap_args).cast()) };
    assert_eq!(r, Err(libc::ESRCH));
}
