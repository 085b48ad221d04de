//! A model of a virtio-gpu render node, for testing the DRM transport without a VM: the
//! ioctls a guest kernel's virtio-gpu driver answers, with the "device" (the VMM and its
//! HSAKMT renderer) a loopback host in another process ([`crate::guest::Loopback`]).
//!
//! What it models: the driver name, GETPARAM (blob resources, host-visible blobs, context
//! init, the supported capset ids), GET_CAPS (the host's capset, only for a supported id),
//! CONTEXT_INIT (once; the capset must be one the device has, at most 64 rings), blobs
//! (RESOURCE_CREATE_BLOB of host 3D memory after context init, RESOURCE_INFO, MAP handing out
//! mmap offsets of its own, GEM_CLOSE giving the resource back to the host), EXECBUFFER (ring
//! index below the context's ring count, an out-fence signalled when the host has run the
//! commands, from a thread of its own, so the guest really waits for it). A host error of a
//! submitted command reaches the guest only through the shared page, as on virtio-gpu. A
//! device that went away (the host died) answers ENODEV to every later ioctl.

use super::*;
use crate::guest::Loopback;
use std::sync::atomic::{AtomicBool, Ordering};

struct Bo {
    res_id: u32,
    size: u64,
    file: Option<(OwnedFd, u64)>,
    offset: Option<u64>,
}

#[derive(Default)]
struct State {
    rings: Option<u64>,
    next_handle: u32,
    next_offset: u64,
    bos: HashMap<u32, Bo>,
}

/// The model render node.
pub struct ModelRenderNode {
    host: Arc<Loopback>,
    driver: Vec<u8>,
    capset_ids: u32,
    dead: Arc<AtomicBool>,
    st: Mutex<State>,
    log: Mutex<Vec<u64>>,
}

fn with<T: FromBytes + IntoBytes + Immutable + KnownLayout>(arg: &mut [u8], f: impl FnOnce(&mut T) -> Result<(), i32>) -> Result<(), i32> {
    let mut t = T::read_from_bytes(arg).map_err(|_| libc::EINVAL)?;
    f(&mut t)?;
    arg.copy_from_slice(t.as_bytes());
    Ok(())
}

impl ModelRenderNode {
    /// A virtio-gpu node whose device offers the HSAKMT capset, served by `host`.
    pub fn new(host: Loopback) -> ModelRenderNode {
        ModelRenderNode {
            host: Arc::new(host),
            driver: DRIVER_NAME.to_vec(),
            capset_ids: 1 << proto::CAPSET_HSAKMT,
            dead: Default::default(),
            st: Mutex::new(State { next_handle: 1, next_offset: 0x10_0000, ..Default::default() }),
            log: Default::default(),
        }
    }

    /// Connect to the loopback host at `sock`.
    pub fn connect(sock: &std::path::Path) -> Result<ModelRenderNode, Status> {
        Loopback::connect(sock).map(ModelRenderNode::new)
    }

    /// The same node under another driver's name (a render node that is not virtio-gpu).
    pub fn with_driver(mut self, name: &[u8]) -> ModelRenderNode {
        self.driver = name.to_vec();
        self
    }

    /// The same node with another set of supported capset ids (a bit per id).
    pub fn with_capset_ids(mut self, mask: u32) -> ModelRenderNode {
        self.capset_ids = mask;
        self
    }

    /// The ioctl requests issued so far, in order.
    pub fn issued(&self) -> Vec<u64> {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Live GEM handles (leak checks).
    pub fn live_blobs(&self) -> usize {
        self.st.lock().unwrap_or_else(|e| e.into_inner()).bos.len()
    }

    fn device_error(&self, s: Status) -> i32 {
        if s == Status::KERNEL_COMMUNICATION_ERROR {
            self.dead.store(true, Ordering::SeqCst);
            return libc::ENODEV;
        }
        match s {
            Status::INVALID_HANDLE => libc::ENOENT,
            Status::NO_MEMORY => libc::ENOMEM,
            Status::OUT_OF_RESOURCES => libc::ENOSPC,
            _ => libc::EINVAL,
        }
    }

    fn execbuffer(&self, eb: &mut Execbuffer) -> Result<(), i32> {
        if eb.flags & !(EXECBUF_FENCE_FD_IN | EXECBUF_FENCE_FD_OUT | EXECBUF_RING_IDX) != 0
            || eb.flags & EXECBUF_FENCE_FD_IN != 0
            || eb.num_bo_handles != 0
            || eb.num_in_syncobjs != 0
            || eb.num_out_syncobjs != 0
        {
            return Err(libc::EINVAL);
        }
        let rings = self.st.lock().unwrap_or_else(|e| e.into_inner()).rings.ok_or(libc::EINVAL)?;
        if eb.flags & EXECBUF_RING_IDX != 0 && eb.ring_idx as u64 >= rings {
            return Err(libc::EINVAL);
        }
        if eb.size != 0 && eb.command == 0 {
            return Err(libc::EFAULT);
        }
        let mut cmd = vec![0u8; eb.size as usize];
        // SAFETY: `command` points at `size` live bytes (the ioctl contract).
        unsafe { std::ptr::copy_nonoverlapping(eb.command as *const u8, cmd.as_mut_ptr(), cmd.len()) };
        // The fence: an eventfd the worker signals once the host has run the commands.
        // SAFETY: plain eventfd creation.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(errno());
        }
        // SAFETY: a new descriptor nobody else owns.
        let fence = unsafe { OwnedFd::from_raw_fd(fd) };
        let signal = fence.try_clone().map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
        let (host, dead) = (self.host.clone(), self.dead.clone());
        std::thread::Builder::new()
            .name("virtio-gpu-model".into())
            .spawn(move || {
                if host.execbuffer(&cmd) == Err(Status::KERNEL_COMMUNICATION_ERROR) {
                    dead.store(true, Ordering::SeqCst);
                }
                let one = 1u64;
                // SAFETY: 8 bytes from a live u64 to our eventfd.
                unsafe { libc::write(signal.as_raw_fd(), (&one as *const u64).cast(), 8) };
            })
            .map_err(|_| libc::ENOMEM)?;
        if eb.flags & EXECBUF_FENCE_FD_OUT != 0 {
            use std::os::fd::IntoRawFd;
            eb.fence_fd = fence.into_raw_fd();
        }
        Ok(())
    }
}

impl DrmPort for ModelRenderNode {
    unsafe fn ioctl(&self, request: u64, arg: &mut [u8]) -> Result<(), i32> {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).push(request);
        if self.dead.load(Ordering::SeqCst) {
            return Err(libc::ENODEV);
        }
        match request {
            IOCTL_VERSION => with(arg, |v: &mut DrmVersion| {
                let n = (v.name_len as usize).min(self.driver.len());
                if n > 0 && v.name == 0 {
                    return Err(libc::EFAULT);
                }
                // SAFETY: `name` points at `name_len` ≥ n live bytes (the ioctl contract).
                unsafe { std::ptr::copy_nonoverlapping(self.driver.as_ptr(), v.name as *mut u8, n) };
                v.name_len = self.driver.len() as u64;
                (v.date_len, v.desc_len) = (0, 0);
                Ok(())
            }),
            IOCTL_VIRTGPU_GETPARAM => with(arg, |g: &mut GetParam| {
                let value: i32 = match g.param {
                    1 | 2 | PARAM_RESOURCE_BLOB | PARAM_HOST_VISIBLE | PARAM_CONTEXT_INIT => 1,
                    PARAM_SUPPORTED_CAPSET_IDS => self.capset_ids as i32,
                    _ => return Err(libc::EINVAL),
                };
                if g.value == 0 {
                    return Err(libc::EFAULT);
                }
                // SAFETY: `value` is the address of a live int (the ioctl contract).
                unsafe { (g.value as *mut i32).write_unaligned(value) };
                Ok(())
            }),
            IOCTL_VIRTGPU_GET_CAPS => with(arg, |c: &mut GetCaps| {
                if c.cap_set_id >= 32 || self.capset_ids & (1 << c.cap_set_id) == 0 || c.cap_set_id != proto::CAPSET_HSAKMT {
                    return Err(libc::EINVAL);
                }
                let caps = self.host.capset().map_err(|e| self.device_error(e))?;
                let n = (c.size as usize).min(caps.len());
                if n > 0 && c.addr == 0 {
                    return Err(libc::EFAULT);
                }
                // SAFETY: `addr` points at `size` ≥ n live bytes (the ioctl contract).
                unsafe { std::ptr::copy_nonoverlapping(caps.as_ptr(), c.addr as *mut u8, n) };
                Ok(())
            }),
            IOCTL_VIRTGPU_CONTEXT_INIT => with(arg, |ci: &mut ContextInit| {
                let mut st = self.st.lock().unwrap_or_else(|e| e.into_inner());
                if st.rings.is_some() {
                    return Err(libc::EEXIST);
                }
                if ci.num_params > 16 || (ci.num_params > 0 && ci.ctx_set_params == 0) {
                    return Err(libc::EINVAL);
                }
                let (mut capset, mut rings) = (None, 0);
                for i in 0..ci.num_params as usize {
                    // SAFETY: `ctx_set_params` points at `num_params` live entries (the ioctl
                    // contract); read unaligned, as bytes from the caller.
                    let p = unsafe { (ci.ctx_set_params as *const ContextSetParam).add(i).read_unaligned() };
                    match p.param {
                        CONTEXT_PARAM_CAPSET_ID => capset = Some(p.value),
                        CONTEXT_PARAM_NUM_RINGS if p.value <= 64 => rings = p.value,
                        CONTEXT_PARAM_NUM_RINGS => return Err(libc::EINVAL),
                        3 | 4 => {}
                        _ => return Err(libc::EINVAL),
                    }
                }
                match capset {
                    Some(id) if id < 32 && self.capset_ids & (1 << id) != 0 && id == proto::CAPSET_HSAKMT as u64 => {}
                    _ => return Err(libc::EINVAL),
                }
                st.rings = Some(rings);
                Ok(())
            }),
            IOCTL_VIRTGPU_RESOURCE_CREATE_BLOB => with(arg, |c: &mut CreateBlob| {
                if self.st.lock().unwrap_or_else(|e| e.into_inner()).rings.is_none() {
                    return Err(libc::EINVAL);
                }
                if c.blob_mem != BLOB_MEM_HOST3D || c.blob_flags & !7 != 0 || c.cmd_size != 0 {
                    return Err(libc::EINVAL);
                }
                let b = self.host.create_blob(c.blob_id, c.size).map_err(|e| self.device_error(e))?;
                let mut st = self.st.lock().unwrap_or_else(|e| e.into_inner());
                let handle = st.next_handle;
                st.next_handle += 1;
                let mappable = c.blob_flags & BLOB_FLAG_USE_MAPPABLE != 0;
                let file = if mappable { b.file } else { None };
                st.bos.insert(handle, Bo { res_id: b.res_id, size: b.size, file, offset: None });
                (c.bo_handle, c.res_handle) = (handle, b.res_id);
                Ok(())
            }),
            IOCTL_VIRTGPU_RESOURCE_INFO => with(arg, |i: &mut ResourceInfo| {
                let st = self.st.lock().unwrap_or_else(|e| e.into_inner());
                let bo = st.bos.get(&i.bo_handle).ok_or(libc::ENOENT)?;
                (i.res_handle, i.size, i.blob_mem) = (bo.res_id, bo.size.min(u32::MAX as u64) as u32, BLOB_MEM_HOST3D);
                Ok(())
            }),
            IOCTL_VIRTGPU_MAP => with(arg, |m: &mut Map| {
                let mut st = self.st.lock().unwrap_or_else(|e| e.into_inner());
                let next = st.next_offset;
                let bo = st.bos.get_mut(&m.handle).ok_or(libc::ENOENT)?;
                if bo.file.is_none() {
                    return Err(libc::EINVAL);
                }
                let grow = bo.size.max(1).next_multiple_of(0x1000);
                let off = *bo.offset.get_or_insert(next);
                if off == next {
                    st.next_offset += grow;
                }
                m.offset = off;
                Ok(())
            }),
            IOCTL_GEM_CLOSE => with(arg, |c: &mut GemClose| {
                let bo = self.st.lock().unwrap_or_else(|e| e.into_inner()).bos.remove(&c.handle).ok_or(libc::EINVAL)?;
                // The kernel drops its reference whatever the host says; only a device that
                // went away is an error here.
                match self.host.destroy_blob(bo.res_id) {
                    Err(Status::KERNEL_COMMUNICATION_ERROR) => Err(self.device_error(Status::KERNEL_COMMUNICATION_ERROR)),
                    _ => Ok(()),
                }
            }),
            IOCTL_VIRTGPU_EXECBUFFER => with(arg, |eb: &mut Execbuffer| self.execbuffer(eb)),
            _ => Err(libc::ENOTTY),
        }
    }

    fn mmap(&self, addr: u64, len: u64, offset: u64) -> Result<u64, i32> {
        let st = self.st.lock().unwrap_or_else(|e| e.into_inner());
        let (bo, base) = st
            .bos
            .values()
            .find_map(|b| b.offset.filter(|o| (*o..*o + b.size.max(1).next_multiple_of(0x1000)).contains(&offset)).map(|o| (b, o)))
            .ok_or(libc::EINVAL)?;
        let within = offset - base;
        if within + len > bo.size.next_multiple_of(0x1000) {
            return Err(libc::EINVAL);
        }
        let (fd, foff) = bo.file.as_ref().ok_or(libc::EINVAL)?;
        map_fd(fd.as_raw_fd(), addr, len, foff + within)
    }
}
