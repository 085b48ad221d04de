//! OpenClose rules of the core context against a scripted fake KFD: reference counting,
//! KERNEL_ALREADY_OPENED, the major-version check, fork (another pid) and reopen.

use hsakmt_core::abi::kfd::*;
use hsakmt_core::context::{OpenConfig, OpenError, Thunk};
use hsakmt_core::{Backend, Errno, Kfd, Status, SysTree};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use zerocopy::{FromBytes, IntoBytes};

struct FakeKfd {
    major: u32,
    minor: u32,
    version_errno: Option<i32>,
}

impl Kfd for FakeKfd {
    unsafe fn ioctl(&self, request: u32, arg: &mut [u8]) -> Result<(), Errno> {
        if request != AMDKFD_IOC_GET_VERSION {
            return Err(Errno(Errno::ENOTTY));
        }
        if let Some(e) = self.version_errno {
            return Err(Errno(e));
        }
        let mut v = kfd_ioctl_get_version_args::read_from_bytes(arg).map_err(|_| Errno(Errno::EFAULT))?;
        v.major_version = self.major;
        v.minor_version = self.minor;
        arg.copy_from_slice(v.as_bytes());
        Ok(())
    }
    unsafe fn mmap(&self, _: Option<usize>, _: usize, _: u32, _: bool, _: u64) -> Result<usize, Errno> {
        Err(Errno(Errno::ENODEV))
    }
    unsafe fn munmap(&self, _: usize, _: usize) -> Result<(), Errno> {
        Ok(())
    }
    unsafe fn map_anonymous(&self, _: Option<usize>, _: usize, _: usize, _: u32) -> Result<usize, Errno> {
        Err(Errno(Errno::ENOSYS))
    }
    unsafe fn release_va(&self, _: usize, _: usize) -> Result<(), Errno> {
        Ok(())
    }
    fn open_render_node(&self, _: u32) -> Result<i32, Errno> {
        Err(Errno(Errno::ENOENT))
    }
    fn close_render_node(&self, _: i32) {}
    fn read_file(&self, _: SysTree, _: &str, _: &mut [u8]) -> Result<usize, Errno> {
        Err(Errno(Errno::ENOENT))
    }
    fn count_numbered_entries(&self, _: SysTree, _: &str) -> Result<u32, Errno> {
        Err(Errno(Errno::ENOENT))
    }
    fn process_id(&self) -> u32 {
        1
    }
    fn backend(&self) -> Backend {
        Backend::BuiltinModel
    }
}

fn port(major: u32, minor: u32, opens: &Arc<AtomicU32>) -> impl FnOnce() -> Result<(Box<dyn Kfd>, OpenConfig), OpenError> {
    let opens = opens.clone();
    move || {
        opens.fetch_add(1, Ordering::SeqCst);
        Ok((Box::new(FakeKfd { major, minor, version_errno: None }) as Box<dyn Kfd>, OpenConfig::default()))
    }
}

#[test]
fn nested_open_counts_and_reports_already_opened() {
    let opens = Arc::new(AtomicU32::new(0));
    let mut t = Thunk::new();
    assert_eq!(t.open(10, port(1, 22, &opens)).unwrap(), Status::SUCCESS);
    assert_eq!(t.open(10, port(1, 22, &opens)).unwrap(), Status::KERNEL_ALREADY_OPENED);
    assert_eq!(opens.load(Ordering::SeqCst), 1, "a nested open must not create a second port");
    assert_eq!(t.open_count(), 2);
    let v = t.ctx(10).unwrap().version();
    assert_eq!((v.KernelInterfaceMajorVersion, v.KernelInterfaceMinorVersion), (1, 22));
    t.close(10).unwrap();
    assert!(t.ctx(10).is_ok(), "still open after one of two closes");
    t.close(10).unwrap();
    assert_eq!(t.ctx(10).err(), Some(Status::KERNEL_IO_CHANNEL_NOT_OPENED));
    assert_eq!(t.close(10), Err(Status::KERNEL_IO_CHANNEL_NOT_OPENED));
}

#[test]
fn other_major_version_is_driver_mismatch_and_leaves_thunk_closed() {
    let opens = Arc::new(AtomicU32::new(0));
    let mut t = Thunk::new();
    let e = t.open(10, port(2, 0, &opens)).unwrap_err();
    assert_eq!(e.status, Status::DRIVER_MISMATCH);
    assert!(e.message.contains("2.0"), "message names the version: {}", e.message);
    assert_eq!(t.open_count(), 0);
    assert_eq!(t.ctx(10).err(), Some(Status::KERNEL_IO_CHANNEL_NOT_OPENED));
    // A later open with a good driver works.
    assert_eq!(t.open(10, port(1, 14, &opens)).unwrap(), Status::SUCCESS);
}

#[test]
fn failed_get_version_is_error() {
    let mut t = Thunk::new();
    let e = t
        .open(10, || {
            Ok((Box::new(FakeKfd { major: 1, minor: 22, version_errno: Some(Errno::EIO) }) as Box<dyn Kfd>, OpenConfig::default()))
        })
        .unwrap_err();
    assert_eq!(e.status, Status::ERROR);
}

#[test]
fn forked_child_sees_not_opened_until_it_reopens() {
    let opens = Arc::new(AtomicU32::new(0));
    let mut t = Thunk::new();
    t.open(10, port(1, 22, &opens)).unwrap();
    // pid 11 is a child that inherited the thunk
    assert_eq!(t.ctx(11).err(), Some(Status::KERNEL_IO_CHANNEL_NOT_OPENED));
    // its open starts clean: SUCCESS (not ALREADY_OPENED) and a fresh port
    assert_eq!(t.open(11, port(1, 22, &opens)).unwrap(), Status::SUCCESS);
    assert_eq!(opens.load(Ordering::SeqCst), 2);
    assert_eq!(t.open_count(), 1);
    assert!(t.ctx(11).is_ok());
}

#[test]
fn calls_before_acquire_are_invalid_node_unit() {
    let opens = Arc::new(AtomicU32::new(0));
    let mut t = Thunk::new();
    t.open(10, port(1, 22, &opens)).unwrap();
    let c = t.ctx(10).unwrap();
    assert_eq!(c.node_properties(0).err(), Some(Status::INVALID_NODE_UNIT));
    assert_eq!(c.clock_counters(0).err(), Some(Status::INVALID_NODE_UNIT));
    assert_eq!(c.node_io_links(0, 0).err(), Some(Status::INVALID_NODE_UNIT));
    assert_eq!(c.node_caches(0, 0, 0).err(), Some(Status::INVALID_NODE_UNIT));
}
