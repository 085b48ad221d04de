//! The DRM transport: the guest's virtio-gpu operations as the `DRM_IOCTL_VIRTGPU_*` ioctls of
//! a virtio-gpu render node with the HSAKMT capset, as upstream's `src/virtio` issues them.
//!
//! - finding the node: a render node whose driver (DRM_IOCTL_VERSION) is `virtio_gpu`, which
//!   has blob resources, host-visible blobs and context init (GETPARAM), lists the HSAKMT
//!   capset among its supported ids, and whose HSAKMT capset (GET_CAPS) names the AMDGPU
//!   context type;
//! - CONTEXT_INIT with the capset id and 64 rings (upstream's; only ring 0 is used);
//! - blobs: RESOURCE_CREATE_BLOB (host 3D memory, mappable, the guest's blob id),
//!   RESOURCE_INFO for the resource id, MAP for the mmap offset then `mmap` of the node,
//!   GEM_CLOSE to let the host free what the blob stands for;
//! - commands: EXECBUFFER on ring 0 with an out-fence, a wait on the fence, then the response
//!   in the shared page (blob id 0), whose `seqno` the guest checks ([`crate::guest::Guest`]).
//!
//! Every ioctl goes through a [`DrmPort`]: [`RenderNode`] is a real `/dev/dri/renderD*`;
//! [`model::ModelRenderNode`] is a model of a virtio-gpu render node for tests (there is no VM
//! here), whose "device" is a loopback host.
//!
//! Argument layouts are the kernel's `include/uapi/drm/virtgpu_drm.h` (and `drm.h` for VERSION
//! and GEM_CLOSE), checked below by size and offset. One deviation from upstream's copy of that
//! header: its `drm_virtgpu_resource_create_blob` has two more members (`blob_userptr`,
//! `offset`, 64 bytes) for userptr blobs, which a mainline kernel does not have; we use the
//! kernel's 48-byte struct and do not carry userptr blobs (our host does not either).

use crate::guest::{BlobHandle, Transport};
use crate::proto;
use hsakmt_core::Status;
use std::collections::HashMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

// ---- the uapi, in our own form ----

const fn ioc(dir: u64, nr: u64, size: usize) -> u64 {
    (dir << 30) | ((size as u64) << 16) | ((b'd' as u64) << 8) | nr
}
const IOC_WRITE: u64 = 1;
const IOC_RW: u64 = 3;
const DRM_COMMAND_BASE: u64 = 0x40;
const fn virtgpu(nr: u64, size: usize) -> u64 {
    ioc(IOC_RW, DRM_COMMAND_BASE + nr, size)
}

/// `struct drm_version` (64-bit).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct DrmVersion {
    pub major: i32,
    pub minor: i32,
    pub patchlevel: i32,
    pub pad: i32,
    pub name_len: u64,
    pub name: u64,
    pub date_len: u64,
    pub date: u64,
    pub desc_len: u64,
    pub desc: u64,
}

/// `struct drm_gem_close`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct GemClose {
    pub handle: u32,
    pub pad: u32,
}

/// `struct drm_virtgpu_map`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct Map {
    pub offset: u64,
    pub handle: u32,
    pub pad: u32,
}

/// `struct drm_virtgpu_execbuffer`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct Execbuffer {
    pub flags: u32,
    pub size: u32,
    pub command: u64,
    pub bo_handles: u64,
    pub num_bo_handles: u32,
    pub fence_fd: i32,
    pub ring_idx: u32,
    pub syncobj_stride: u32,
    pub num_in_syncobjs: u32,
    pub num_out_syncobjs: u32,
    pub in_syncobjs: u64,
    pub out_syncobjs: u64,
}

/// `struct drm_virtgpu_getparam`: `value` is the address of an `int` the kernel writes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct GetParam {
    pub param: u64,
    pub value: u64,
}

/// `struct drm_virtgpu_resource_info`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct ResourceInfo {
    pub bo_handle: u32,
    pub res_handle: u32,
    pub size: u32,
    pub blob_mem: u32,
}

/// `struct drm_virtgpu_get_caps`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct GetCaps {
    pub cap_set_id: u32,
    pub cap_set_ver: u32,
    pub addr: u64,
    pub size: u32,
    pub pad: u32,
}

/// `struct drm_virtgpu_resource_create_blob` (the kernel's, see the module doc).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct CreateBlob {
    pub blob_mem: u32,
    pub blob_flags: u32,
    pub bo_handle: u32,
    pub res_handle: u32,
    pub size: u64,
    pub pad: u32,
    pub cmd_size: u32,
    pub cmd: u64,
    pub blob_id: u64,
}

/// `struct drm_virtgpu_context_set_param`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct ContextSetParam {
    pub param: u64,
    pub value: u64,
}

/// `struct drm_virtgpu_context_init`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct ContextInit {
    pub num_params: u32,
    pub pad: u32,
    pub ctx_set_params: u64,
}

const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<DrmVersion>() == 64 && offset_of!(DrmVersion, name_len) == 16 && offset_of!(DrmVersion, name) == 24);
    assert!(size_of::<GemClose>() == 8);
    assert!(size_of::<Map>() == 16 && offset_of!(Map, handle) == 8);
    assert!(size_of::<Execbuffer>() == 64);
    assert!(offset_of!(Execbuffer, command) == 8 && offset_of!(Execbuffer, bo_handles) == 16);
    assert!(offset_of!(Execbuffer, num_bo_handles) == 24 && offset_of!(Execbuffer, fence_fd) == 28);
    assert!(offset_of!(Execbuffer, ring_idx) == 32 && offset_of!(Execbuffer, syncobj_stride) == 36);
    assert!(offset_of!(Execbuffer, in_syncobjs) == 48 && offset_of!(Execbuffer, out_syncobjs) == 56);
    assert!(size_of::<GetParam>() == 16);
    assert!(size_of::<ResourceInfo>() == 16 && offset_of!(ResourceInfo, size) == 8);
    assert!(size_of::<GetCaps>() == 24 && offset_of!(GetCaps, addr) == 8 && offset_of!(GetCaps, size) == 16);
    assert!(size_of::<CreateBlob>() == 48 && offset_of!(CreateBlob, size) == 16 && offset_of!(CreateBlob, cmd_size) == 28);
    assert!(offset_of!(CreateBlob, cmd) == 32 && offset_of!(CreateBlob, blob_id) == 40);
    assert!(size_of::<ContextSetParam>() == 16);
    assert!(size_of::<ContextInit>() == 16 && offset_of!(ContextInit, ctx_set_params) == 8);
};

pub const IOCTL_VERSION: u64 = ioc(IOC_RW, 0x00, std::mem::size_of::<DrmVersion>());
pub const IOCTL_GEM_CLOSE: u64 = ioc(IOC_WRITE, 0x09, std::mem::size_of::<GemClose>());
pub const IOCTL_VIRTGPU_MAP: u64 = virtgpu(0x01, std::mem::size_of::<Map>());
pub const IOCTL_VIRTGPU_EXECBUFFER: u64 = virtgpu(0x02, std::mem::size_of::<Execbuffer>());
pub const IOCTL_VIRTGPU_GETPARAM: u64 = virtgpu(0x03, std::mem::size_of::<GetParam>());
pub const IOCTL_VIRTGPU_RESOURCE_INFO: u64 = virtgpu(0x05, std::mem::size_of::<ResourceInfo>());
pub const IOCTL_VIRTGPU_GET_CAPS: u64 = virtgpu(0x09, std::mem::size_of::<GetCaps>());
pub const IOCTL_VIRTGPU_RESOURCE_CREATE_BLOB: u64 = virtgpu(0x0a, std::mem::size_of::<CreateBlob>());
pub const IOCTL_VIRTGPU_CONTEXT_INIT: u64 = virtgpu(0x0b, std::mem::size_of::<ContextInit>());

pub const EXECBUF_FENCE_FD_IN: u32 = 0x01;
pub const EXECBUF_FENCE_FD_OUT: u32 = 0x02;
pub const EXECBUF_RING_IDX: u32 = 0x04;
pub const PARAM_RESOURCE_BLOB: u64 = 3;
pub const PARAM_HOST_VISIBLE: u64 = 4;
pub const PARAM_CONTEXT_INIT: u64 = 6;
pub const PARAM_SUPPORTED_CAPSET_IDS: u64 = 7;
pub const BLOB_MEM_HOST3D: u32 = 2;
pub const BLOB_FLAG_USE_MAPPABLE: u32 = 1;
pub const CONTEXT_PARAM_CAPSET_ID: u64 = 1;
pub const CONTEXT_PARAM_NUM_RINGS: u64 = 2;
/// The kernel driver's name of a virtio-gpu device.
pub const DRIVER_NAME: &[u8] = b"virtio_gpu";

/// The environment variable naming the render node to use instead of searching.
pub const RENDER_NODE_ENV: &str = "HSAKMT_VIRTIO_RENDER_NODE";

// ---- the port ----

/// Where the DRM transport's ioctls and mappings go: a render node, or a model of one.
pub trait DrmPort: Send + Sync {
    /// Issue `request` with `arg`, the bytes of its argument struct (in and out).
    ///
    /// # Safety
    /// Every address inside `arg` (a command, a parameter array, an output buffer) points at a
    /// live buffer of this process of the size the struct gives, for the call's duration.
    unsafe fn ioctl(&self, request: u64, arg: &mut [u8]) -> Result<(), i32>;
    /// Map `len` bytes at the mmap `offset` MAP gave: at `addr` (never over an existing
    /// mapping), or anywhere when `addr` is 0.
    fn mmap(&self, addr: u64, len: u64, offset: u64) -> Result<u64, i32>;
}

impl<P: DrmPort + ?Sized> DrmPort for Arc<P> {
    unsafe fn ioctl(&self, request: u64, arg: &mut [u8]) -> Result<(), i32> {
        // SAFETY: the caller's contract, passed on.
        unsafe { (**self).ioctl(request, arg) }
    }
    fn mmap(&self, addr: u64, len: u64, offset: u64) -> Result<u64, i32> {
        (**self).mmap(addr, len, offset)
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// A real render node (`/dev/dri/renderD*`).
pub struct RenderNode {
    fd: OwnedFd,
}

impl RenderNode {
    pub fn open(path: &std::path::Path) -> Result<RenderNode, i32> {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|_| libc::EINVAL)?;
        // SAFETY: a NUL-terminated path.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(errno());
        }
        // SAFETY: a new descriptor nobody else owns.
        Ok(RenderNode { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }
}

impl DrmPort for RenderNode {
    unsafe fn ioctl(&self, request: u64, arg: &mut [u8]) -> Result<(), i32> {
        if arg.len() != ((request >> 16) & 0x3fff) as usize {
            return Err(libc::EINVAL);
        }
        loop {
            // SAFETY: `arg` is the request's whole argument struct (its size checked above);
            // addresses inside it are live (the caller's contract).
            let r = unsafe { libc::ioctl(self.fd.as_raw_fd(), request as _, arg.as_mut_ptr()) };
            if r == 0 {
                return Ok(());
            }
            let e = errno();
            if e != libc::EINTR && e != libc::EAGAIN {
                return Err(e);
            }
        }
    }

    fn mmap(&self, addr: u64, len: u64, offset: u64) -> Result<u64, i32> {
        map_fd(self.fd.as_raw_fd(), addr, len, offset)
    }
}

/// `mmap` of `fd` shared, read-write; at `addr` exactly (never replacing a mapping) or anywhere.
fn map_fd(fd: i32, addr: u64, len: u64, offset: u64) -> Result<u64, i32> {
    let flags = libc::MAP_SHARED | if addr != 0 { libc::MAP_FIXED_NOREPLACE } else { 0 };
    let off = libc::off_t::try_from(offset).map_err(|_| libc::EINVAL)?;
    // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping; without an address the
    // kernel chooses.
    let p = unsafe { libc::mmap(addr as *mut _, len as usize, libc::PROT_READ | libc::PROT_WRITE, flags, fd, off) };
    if p == libc::MAP_FAILED {
        return Err(errno());
    }
    if addr != 0 && p as u64 != addr {
        // SAFETY: the mapping just made (an old kernel ignoring NOREPLACE), unmapped once.
        unsafe { libc::munmap(p, len as usize) };
        return Err(libc::EEXIST);
    }
    Ok(p as u64)
}

// ---- the transport ----

/// An errno of the node, after the context is up, as a status.
fn status(e: i32) -> Status {
    match e {
        libc::ENOENT => Status::INVALID_HANDLE,
        libc::EINVAL => Status::INVALID_PARAMETER,
        libc::ENOMEM | libc::EEXIST => Status::NO_MEMORY,
        libc::ENOSPC => Status::OUT_OF_RESOURCES,
        _ => Status::KERNEL_COMMUNICATION_ERROR,
    }
}

/// The guest's side over a virtio-gpu render node.
pub struct DrmTransport {
    port: Box<dyn DrmPort>,
    caps: Vec<u8>,
    /// Resource id → GEM handle of each live blob.
    bos: Mutex<HashMap<u32, u32>>,
}

/// Issue `request` with the struct `arg`.
///
/// # Safety
/// As [`DrmPort::ioctl`]: addresses inside `arg` are live for the call.
unsafe fn call<T: IntoBytes + FromBytes>(port: &dyn DrmPort, request: u64, arg: &mut T) -> Result<(), i32> {
    // SAFETY: the caller's contract.
    unsafe { port.ioctl(request, arg.as_mut_bytes()) }
}

impl DrmTransport {
    /// Check that `port` is a virtio-gpu node with the HSAKMT capset, and make our context
    /// on it. A node that is not is KERNEL_IO_CHANNEL_NOT_OPENED (and left unchanged).
    pub fn open(port: Box<dyn DrmPort>) -> Result<DrmTransport, Status> {
        let refuse = Status::KERNEL_IO_CHANNEL_NOT_OPENED;
        let p = &*port;
        let mut name = [0u8; 64];
        let mut v = DrmVersion { name_len: name.len() as u64, name: name.as_mut_ptr() as u64, ..Default::default() };
        // SAFETY: `name` is live and `name_len` bytes long; date/desc are NULL with length 0.
        unsafe { call(p, IOCTL_VERSION, &mut v) }.map_err(|_| refuse)?;
        if name.get(..v.name_len as usize) != Some(DRIVER_NAME) {
            return Err(refuse);
        }
        let param = |which: u64| -> Result<i32, Status> {
            let mut value = 0i32;
            let mut g = GetParam { param: which, value: &mut value as *mut i32 as u64 };
            // SAFETY: `value` is a live int.
            unsafe { call(p, IOCTL_VIRTGPU_GETPARAM, &mut g) }.map_err(|_| refuse)?;
            Ok(value)
        };
        for need in [PARAM_RESOURCE_BLOB, PARAM_HOST_VISIBLE, PARAM_CONTEXT_INIT] {
            if param(need)? == 0 {
                return Err(refuse);
            }
        }
        if (param(PARAM_SUPPORTED_CAPSET_IDS)? as u32) & (1 << proto::CAPSET_HSAKMT) == 0 {
            return Err(refuse);
        }
        let mut caps = vec![0u8; proto::CAPSET_SIZE];
        let mut gc =
            GetCaps { cap_set_id: proto::CAPSET_HSAKMT, cap_set_ver: 0, addr: caps.as_mut_ptr() as u64, size: caps.len() as u32, pad: 0 };
        // SAFETY: `caps` is live and `size` bytes long.
        unsafe { call(p, IOCTL_VIRTGPU_GET_CAPS, &mut gc) }.map_err(|_| refuse)?;
        if proto::get_u32(&caps, proto::CAPSET_CONTEXT_TYPE) != Some(proto::CONTEXT_AMDGPU) {
            return Err(refuse);
        }
        let params = [
            ContextSetParam { param: CONTEXT_PARAM_CAPSET_ID, value: proto::CAPSET_HSAKMT as u64 },
            ContextSetParam { param: CONTEXT_PARAM_NUM_RINGS, value: proto::NUM_RINGS },
        ];
        let mut ci = ContextInit { num_params: params.len() as u32, pad: 0, ctx_set_params: params.as_ptr() as u64 };
        // SAFETY: `params` is live, `num_params` entries.
        unsafe { call(p, IOCTL_VIRTGPU_CONTEXT_INIT, &mut ci) }.map_err(|_| refuse)?;
        Ok(DrmTransport { port, caps, bos: Mutex::new(HashMap::new()) })
    }

    fn gem_close(&self, handle: u32) -> Result<(), Status> {
        let mut c = GemClose { handle, pad: 0 };
        // SAFETY: no addresses inside.
        unsafe { call(&*self.port, IOCTL_GEM_CLOSE, &mut c) }.map_err(status)
    }

    fn handle(&self, res_id: u32) -> Result<u32, Status> {
        self.bos.lock().unwrap_or_else(|e| e.into_inner()).get(&res_id).copied().ok_or(Status::INVALID_HANDLE)
    }
}

impl Transport for DrmTransport {
    fn capset(&self) -> Result<Vec<u8>, Status> {
        Ok(self.caps.clone())
    }

    fn create_blob(&self, blob_id: u64, size: u64) -> Result<BlobHandle, Status> {
        let mut c = CreateBlob { blob_mem: BLOB_MEM_HOST3D, blob_flags: BLOB_FLAG_USE_MAPPABLE, size, blob_id, ..Default::default() };
        // SAFETY: no command (cmd_size 0).
        unsafe { call(&*self.port, IOCTL_VIRTGPU_RESOURCE_CREATE_BLOB, &mut c) }.map_err(status)?;
        let mut info = ResourceInfo { bo_handle: c.bo_handle, ..Default::default() };
        // SAFETY: no addresses inside.
        if let Err(e) = unsafe { call(&*self.port, IOCTL_VIRTGPU_RESOURCE_INFO, &mut info) } {
            let _ = self.gem_close(c.bo_handle);
            return Err(status(e));
        }
        self.bos.lock().unwrap_or_else(|e| e.into_inner()).insert(info.res_handle, c.bo_handle);
        let size = if size == 0 { info.size as u64 } else { size };
        Ok(BlobHandle { res_id: info.res_handle, addr: 0, size, file: None })
    }

    fn destroy_blob(&self, res_id: u32) -> Result<(), Status> {
        let h = self.bos.lock().unwrap_or_else(|e| e.into_inner()).remove(&res_id).ok_or(Status::INVALID_HANDLE)?;
        self.gem_close(h)
    }

    fn map_blob(&self, blob: &BlobHandle, addr: u64, len: u64) -> Result<u64, Status> {
        let mut m = Map { handle: self.handle(blob.res_id)?, ..Default::default() };
        // SAFETY: no addresses inside.
        unsafe { call(&*self.port, IOCTL_VIRTGPU_MAP, &mut m) }.map_err(status)?;
        self.port.mmap(addr, len, m.offset).map_err(|e| if e == libc::EINVAL { Status::INVALID_PARAMETER } else { Status::NO_MEMORY })
    }

    fn execbuffer(&self, cmds: &[u8]) -> Result<(), Status> {
        let mut eb = Execbuffer {
            flags: EXECBUF_FENCE_FD_OUT | EXECBUF_RING_IDX,
            size: u32::try_from(cmds.len()).map_err(|_| Status::NO_MEMORY)?,
            command: cmds.as_ptr() as u64,
            fence_fd: -1,
            ring_idx: 0,
            ..Default::default()
        };
        // SAFETY: `cmds` is live and `size` bytes long; no BOs or syncobjs.
        unsafe { call(&*self.port, IOCTL_VIRTGPU_EXECBUFFER, &mut eb) }.map_err(|e| match e {
            libc::ENOMEM => Status::NO_MEMORY,
            _ => Status::KERNEL_COMMUNICATION_ERROR,
        })?;
        if eb.fence_fd < 0 {
            return Err(Status::KERNEL_COMMUNICATION_ERROR);
        }
        // SAFETY: the out-fence is a new descriptor, ours to close.
        let fence = unsafe { OwnedFd::from_raw_fd(eb.fence_fd) };
        wait_fence(&fence)
    }
}

/// Wait for a fence descriptor (a sync file, or the model's eventfd) to signal.
fn wait_fence(fence: &OwnedFd) -> Result<(), Status> {
    loop {
        let mut p = libc::pollfd { fd: fence.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one live pollfd.
        let r = unsafe { libc::poll(&mut p, 1, -1) };
        if r < 0 && errno() == libc::EINTR {
            continue;
        }
        if r == 1 && p.revents & libc::POLLIN != 0 {
            return Ok(());
        }
        return Err(Status::KERNEL_COMMUNICATION_ERROR);
    }
}

/// Open the render node at `path` as a DRM transport (KERNEL_IO_CHANNEL_NOT_OPENED if it
/// cannot be opened or is not a virtio-gpu node with the HSAKMT capset).
pub fn open_render_node(path: &std::path::Path) -> Result<DrmTransport, Status> {
    let n = RenderNode::open(path).map_err(|_| Status::KERNEL_IO_CHANNEL_NOT_OPENED)?;
    DrmTransport::open(Box::new(n))
}

/// The first render node in `dir` (`renderD<n>`, by ascending `n`) that is a virtio-gpu node
/// with the HSAKMT capset; none is KERNEL_IO_CHANNEL_NOT_OPENED.
pub fn find_render_node(dir: &std::path::Path) -> Result<DrmTransport, Status> {
    let mut nodes: Vec<(u32, std::path::PathBuf)> = std::fs::read_dir(dir)
        .map_err(|_| Status::KERNEL_IO_CHANNEL_NOT_OPENED)?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let n = e.file_name().to_str()?.strip_prefix("renderD")?.parse().ok()?;
            Some((n, e.path()))
        })
        .collect();
    nodes.sort();
    nodes.into_iter().find_map(|(_, p)| open_render_node(&p).ok()).ok_or(Status::KERNEL_IO_CHANNEL_NOT_OPENED)
}

pub mod model;
