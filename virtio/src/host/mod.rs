//! The host end of the protocol: what a VMM's renderer does for the HSAKMT capset. One
//! [`Session`] per guest context executes that guest's commands on a thunk [`Context`] of its
//! own (on `/dev/kfd` or the model) and owns every object it made for the guest; dropping the
//! session (the guest went away) frees them all.
//!
//! A VMM drives it with three calls, mirroring the virtio-gpu commands it receives:
//! - `RESOURCE_CREATE_BLOB` → [`Session::create_blob`]: blob id 0 is the shared response page
//!   (`virtio_gpu_shmem`); any other id names the object a preceding command made (memory, an
//!   event, a queue, a doorbell or read/write-pointer page). The answer is the host range to
//!   expose to the guest, and where possible the file and offset behind it.
//! - `SUBMIT_3D` (execbuffer) → [`Session::submit`]: runs the commands, writes each response
//!   into the shared page at the command's `rsp_off`, advances the page's `seqno`.
//! - `RESOURCE_UNREF` → [`Session::destroy_resource`]: frees the object behind it (upstream's
//!   guest frees memory, events and queues this way, by closing the blob's GEM handle).
//!
//! Bad input never reaches the thunk unchecked: a malformed command is answered with
//! INVALID_PARAMETER (or, when not even its header is readable, counted in the page's
//! `async_error` and the rest of the buffer dropped); a host address, event or queue that is
//! not this session's is INVALID_HANDLE; [`Limits`] bound what one guest may hold.

mod share;

pub use share::{Backing, Mapping, SharePort, ShareTable};

use crate::proto::{
    self, ccmd, event as pe, get_u32, get_u64, get_u8, memory as pm, put_bytes, put_u32, put_u64, query as pq, queue as pqu,
};
use hsakmt_core::abi::generation::Record;
use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::context::Context;
use hsakmt_core::event::EventDesc;
use hsakmt_core::queue::QueueRequest;
use hsakmt_core::Status;
use std::collections::HashMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use zerocopy::FromZeros;

/// What one guest may hold at a time.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Bytes of memory allocated for it.
    pub memory_bytes: u64,
    /// Objects (allocations, events, queues, pages) made for it.
    pub objects: usize,
    /// Bytes of one execbuffer.
    pub submit_bytes: usize,
    /// Size of the shared response page.
    pub shmem_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { memory_bytes: 4 << 30, objects: 65536, submit_bytes: 1 << 20, shmem_bytes: 1 << 20 }
    }
}

/// What a blob resource stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Obj {
    Memory {
        addr: u64,
        size: u64,
    },
    Event {
        handle: usize,
    },
    Queue {
        id: u64,
    },
    /// A page of the host the guest maps (doorbells, queue read/write pointers).
    Page {
        addr: u64,
        size: u64,
    },
}

/// A blob resource as the VMM exposes it.
#[derive(Clone, Debug)]
pub struct Blob {
    pub res_id: u32,
    /// The host range behind it (0/0 for a resource that is not mappable: events, queues).
    pub addr: u64,
    pub size: u64,
    /// The file and offset of that range, where another process may map it.
    pub backing: Option<Backing>,
}

/// The shared response page.
struct Shmem {
    fd: Arc<OwnedFd>,
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the page is plain shared memory only this session writes (through raw pointers).
unsafe impl Send for Shmem {}

impl Drop for Shmem {
    fn drop(&mut self) {
        // SAFETY: our own mapping of `len` bytes, unmapped once.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// What a session freed when it ended (leak checks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Teardown {
    pub memory: usize,
    pub events: usize,
    pub queues: usize,
}

/// One guest context.
pub struct Session {
    ctx: Option<Context>,
    share: Arc<ShareTable>,
    limits: Limits,
    shmem: Option<Shmem>,
    /// Objects made by commands, by the blob id the guest chose, until a blob claims them.
    pending: HashMap<u64, Obj>,
    /// Objects with a resource.
    resources: HashMap<u32, Obj>,
    next_res: u32,
    memory_bytes: u64,
    /// Acquire/Release balance of the guest (the session releases what is left).
    acquired: u32,
    seqno: u32,
}

type Rsp = Result<Vec<u8>, Status>;

fn ok_rsp(len: usize) -> Vec<u8> {
    vec![0u8; len]
}

/// Bytes of a thunk struct, for the wire.
///
/// # Safety
/// `T` must be one of the `#[repr(C)]` ABI structs of `hsakmt_core::abi::hsakmt` (integers,
/// raw pointers and arrays or unions of them, no implicit padding), so every byte is initialised.
unsafe fn bytes_of<T: Copy>(v: &T) -> Vec<u8> {
    // SAFETY: `v` is `size_of::<T>()` readable bytes, all initialised (the caller's contract).
    unsafe { std::slice::from_raw_parts((v as *const T).cast::<u8>(), std::mem::size_of::<T>()) }.to_vec()
}

/// A thunk struct read from wire bytes (zero-extended when shorter).
///
/// # Safety
/// As [`bytes_of`]: every bit pattern is a valid `T`.
unsafe fn from_bytes<T: Copy>(b: &[u8]) -> T {
    let mut buf = vec![0u8; std::mem::size_of::<T>()];
    let n = b.len().min(buf.len());
    buf[..n].copy_from_slice(&b[..n]);
    // SAFETY: `buf` holds `size_of::<T>()` bytes and any bit pattern is a `T` (contract).
    unsafe { std::ptr::read_unaligned(buf.as_ptr().cast::<T>()) }
}

/// Our layout of a grown record → the wire's.
fn to_wire(r: Record, newest: &[u8]) -> Vec<u8> {
    match proto::WIRE_GENERATION.layout(r) {
        Some(l) => {
            let mut old = vec![0u8; l.size];
            l.to_old(newest, &mut old);
            old
        }
        None => newest.to_vec(),
    }
}

fn status_of(e: Status) -> i32 {
    e.0 as i32
}

impl Session {
    /// A session over `ctx`, a context of its own opened on a [`SharePort`] whose table is
    /// `share` (use an empty table when the guest maps nothing through files, as a VMM that
    /// maps host ranges into guest memory directly).
    pub fn new(ctx: Context, share: Arc<ShareTable>, limits: Limits) -> Session {
        Session {
            ctx: Some(ctx),
            share,
            limits,
            shmem: None,
            pending: HashMap::new(),
            resources: HashMap::new(),
            next_res: 1,
            memory_bytes: 0,
            acquired: 0,
            seqno: 0,
        }
    }

    fn ctx(&mut self) -> &mut Context {
        self.ctx.as_mut().expect("a live session has its context")
    }

    /// The capset this host offers (`struct virgl_renderer_capset_hsakmt`).
    pub fn capset(&mut self) -> [u8; proto::CAPSET_SIZE] {
        let v = self.ctx().version();
        let mut c = [0u8; proto::CAPSET_SIZE];
        put_u32(&mut c, 0, 1);
        put_u32(&mut c, 4, v.KernelInterfaceMajorVersion);
        put_u32(&mut c, 8, v.KernelInterfaceMinorVersion);
        put_u32(&mut c, proto::CAPSET_CONTEXT_TYPE, proto::CONTEXT_AMDGPU);
        c
    }

    /// Objects the session holds for its guest (tests, leak checks).
    pub fn live_objects(&self) -> usize {
        self.pending.len() + self.resources.len()
    }

    fn count_new_object(&self) -> Result<(), Status> {
        if self.live_objects() >= self.limits.objects {
            return Err(Status::OUT_OF_RESOURCES);
        }
        Ok(())
    }

    /// RESOURCE_CREATE_BLOB. Blob id 0 is the response page (`size` bytes, at most
    /// `Limits::shmem_bytes`); other ids claim the object a command made under that id.
    pub fn create_blob(&mut self, blob_id: u64, size: u64) -> Result<Blob, Status> {
        let res_id = self.next_res;
        if blob_id == 0 {
            if self.shmem.is_some() {
                return Err(Status::INVALID_PARAMETER);
            }
            let len = usize::try_from(size).map_err(|_| Status::INVALID_PARAMETER)?;
            if len < proto::SHMEM_SIZE + 64 || len > self.limits.shmem_bytes {
                return Err(Status::INVALID_PARAMETER);
            }
            let shm = make_shmem(len)?;
            // SAFETY: the page is `len` ≥ 16 bytes, ours; aligned (page start).
            unsafe {
                (shm.ptr.add(proto::SHMEM_RSP_MEM_OFFSET) as *mut u32).write_volatile((proto::SHMEM_SIZE as u32).to_le());
            }
            let backing = Backing { fd: shm.fd.clone(), offset: 0 };
            let addr = shm.ptr as u64;
            self.shmem = Some(shm);
            self.next_res += 1;
            return Ok(Blob { res_id, addr, size, backing: Some(backing) });
        }
        let obj = self.pending.remove(&blob_id).ok_or(Status::INVALID_HANDLE)?;
        let (addr, len) = match obj {
            Obj::Memory { addr, size } | Obj::Page { addr, size } => (addr, size),
            Obj::Event { .. } | Obj::Queue { .. } => (0, 0),
        };
        let size = if size == 0 { len } else { size };
        if len != 0 && size > len {
            // The guest asked for more than the object has: give it back to the pending list.
            self.pending.insert(blob_id, obj);
            return Err(Status::INVALID_PARAMETER);
        }
        let backing = if len != 0 {
            self.share
                .find(addr as usize, size as usize)
                .map(|m| Backing { fd: m.backing.fd.clone(), offset: m.backing.offset + (addr as usize - m.start) as u64 })
        } else {
            None
        };
        self.resources.insert(res_id, obj);
        self.next_res += 1;
        Ok(Blob { res_id, addr, size: if len != 0 { size } else { 0 }, backing })
    }

    /// RESOURCE_UNREF: free what the resource stands for.
    pub fn destroy_resource(&mut self, res_id: u32) -> Result<(), Status> {
        let obj = self.resources.remove(&res_id).ok_or(Status::INVALID_HANDLE)?;
        self.free_obj(obj)
    }

    fn free_obj(&mut self, obj: Obj) -> Result<(), Status> {
        match obj {
            Obj::Memory { addr, size } => {
                self.memory_bytes = self.memory_bytes.saturating_sub(size);
                self.ctx().free_memory(addr)
            }
            Obj::Event { handle } => self.ctx().destroy_event(handle),
            Obj::Queue { id } => self.ctx().destroy_queue(id),
            Obj::Page { .. } => Ok(()),
        }
    }

    /// Free everything the guest held, then give back the context (its owner closes it).
    pub fn teardown(mut self) -> (Context, Teardown) {
        let mut t = Teardown::default();
        let mut objs: Vec<Obj> = self.pending.drain().map(|(_, o)| o).chain(self.resources.drain().map(|(_, o)| o)).collect();
        // Queues before the memory their rings live in, then events, then memory.
        objs.sort_by_key(|o| match o {
            Obj::Queue { .. } => 0,
            Obj::Event { .. } => 1,
            Obj::Page { .. } => 2,
            Obj::Memory { .. } => 3,
        });
        for o in objs {
            match o {
                Obj::Queue { .. } => t.queues += 1,
                Obj::Event { .. } => t.events += 1,
                Obj::Memory { .. } => t.memory += 1,
                Obj::Page { .. } => {}
            }
            let _ = self.free_obj(o);
        }
        for _ in 0..self.acquired {
            self.ctx().release_system_properties();
        }
        self.acquired = 0;
        (self.ctx.take().expect("a live session has its context"), t)
    }

    /// SUBMIT_3D: run every command of `cmds`, writing each response into the response page.
    /// Answers the number of commands run; an unreadable header ends the buffer (counted in
    /// the page's `async_error`).
    pub fn submit(&mut self, cmds: &[u8]) -> Result<usize, Status> {
        if self.shmem.is_none() {
            return Err(Status::KERNEL_IO_CHANNEL_NOT_OPENED);
        }
        if cmds.len() > self.limits.submit_bytes {
            self.async_error();
            return Err(Status::NO_MEMORY);
        }
        let mut off = 0;
        let mut n = 0;
        while off < cmds.len() {
            let rest = &cmds[off..];
            let (Some(cmd), Some(len), Some(seqno), Some(rsp_off)) = (
                get_u32(rest, proto::REQ_CMD),
                get_u32(rest, proto::REQ_LEN),
                get_u32(rest, proto::REQ_SEQNO),
                get_u32(rest, proto::REQ_RSP_OFF),
            ) else {
                self.async_error();
                return Err(Status::INVALID_PARAMETER);
            };
            let len = len as usize;
            if len < proto::REQ_HDR_SIZE || len > rest.len() || !len.is_multiple_of(4) {
                self.async_error();
                self.set_seqno(seqno);
                return Err(Status::INVALID_PARAMETER);
            }
            let req = &rest[..len];
            let rsp = self.execute(cmd, req);
            self.write_rsp(rsp_off, rsp);
            self.set_seqno(seqno);
            off += len;
            n += 1;
        }
        Ok(n)
    }

    fn async_error(&mut self) {
        if let Some(s) = &self.shmem {
            // SAFETY: inside the page (≥ 16 bytes), a 4-byte-aligned word.
            unsafe {
                let p = s.ptr.add(proto::SHMEM_ASYNC_ERROR) as *mut u32;
                p.write_volatile(p.read_volatile().wrapping_add(1));
            }
        }
    }

    fn set_seqno(&mut self, seqno: u32) {
        self.seqno = seqno;
        if let Some(s) = &self.shmem {
            std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
            // SAFETY: inside the page, aligned; the guest only reads it.
            unsafe { (s.ptr.add(proto::SHMEM_SEQNO) as *mut u32).write_volatile(seqno.to_le()) };
        }
    }

    /// Write a response at `rsp_off` of the response area, at most the `len` the guest put
    /// there (its buffer), and only inside the page.
    fn write_rsp(&mut self, rsp_off: u32, rsp: Rsp) {
        let Some(s) = &self.shmem else { return };
        let base = proto::SHMEM_SIZE;
        let Some(start) = base.checked_add(rsp_off as usize) else { return };
        if start.checked_add(8).is_none_or(|e| e > s.len) {
            return;
        }
        // SAFETY: `start + 8 <= len`: the response header is inside the page.
        let guest_len = u32::from_le(unsafe { (s.ptr.add(start) as *const u32).read_unaligned() }) as usize;
        let room = guest_len.min(s.len - start);
        let (ret, mut body) = match rsp {
            Ok(b) => (get_u32(&b, proto::RSP_RET).unwrap_or(0) as i32, b),
            Err(e) => (status_of(e), Vec::new()),
        };
        if body.len() < 8 {
            body.resize(8, 0);
        }
        put_u32(&mut body, proto::RSP_LEN, guest_len as u32);
        put_u32(&mut body, proto::RSP_RET, ret as u32);
        let n = body.len().min(room.max(8));
        // SAFETY: `start + n <= len` (n ≤ room ≤ len - start, or 8 checked above); raw copy into
        // shared memory nobody holds a reference to.
        unsafe { std::ptr::copy_nonoverlapping(body.as_ptr(), s.ptr.add(start), n) };
    }

    fn execute(&mut self, cmd: u32, req: &[u8]) -> Rsp {
        match cmd {
            ccmd::NOP => Ok(ok_rsp(8)),
            ccmd::QUERY_INFO => self.query(req),
            ccmd::EVENT => self.event(req),
            ccmd::MEMORY => self.memory(req),
            ccmd::QUEUE => self.queue(req),
            ccmd::GL_INTER => Err(Status::NOT_SUPPORTED),
            _ => Err(Status::INVALID_PARAMETER),
        }
    }

    fn need(req: &[u8], size: usize) -> Result<(), Status> {
        if req.len() < size {
            return Err(Status::INVALID_PARAMETER);
        }
        Ok(())
    }

    fn query(&mut self, req: &[u8]) -> Rsp {
        Self::need(req, pq::REQ_SIZE)?;
        let ty = get_u32(req, pq::TYPE).unwrap_or(u32::MAX);
        let arg32 = get_u32(req, pq::ARG).unwrap_or(0);
        let arg32_1 = get_u32(req, pq::ARG_U32_1).unwrap_or(0);
        let mut rsp = ok_rsp(pq::RSP_SIZE);
        match ty {
            pq::OPEN_KFD => {
                // The guest maps host ranges at their host addresses; it is told the whole
                // user address space as the KFD's VM range (GPU VA == host VA).
                put_u64(&mut rsp, pq::RSP_U, 0x1000);
                put_u64(&mut rsp, pq::RSP_VM_SIZE, (1u64 << 47) - 0x1000);
            }
            pq::GET_VER => {
                let v = self.ctx().version();
                put_u32(&mut rsp, pq::RSP_U, v.KernelInterfaceMajorVersion);
                put_u32(&mut rsp, pq::RSP_U + 4, v.KernelInterfaceMinorVersion);
            }
            pq::GET_SYS_PROP => {
                let p = self.ctx().acquire_system_properties().map_err(|e| e.status)?;
                self.acquired += 1;
                // SAFETY: an ABI struct of integers.
                put_bytes(&mut rsp, pq::RSP_U, &unsafe { bytes_of(&p) });
            }
            pq::REL_SYS_PROP => {
                if self.acquired > 0 {
                    self.acquired -= 1;
                    self.ctx().release_system_properties();
                }
            }
            pq::GET_NODE_PROP => {
                let p = self.ctx().node_properties(arg32)?;
                // SAFETY: an ABI struct of integers and arrays.
                let b = unsafe { bytes_of(&p) };
                put_bytes(&mut rsp, pq::RSP_U, &to_wire(Record::HsaNodeProperties, &b));
            }
            pq::GET_XNACK_MODE => {
                let m = self.ctx().xnack_mode()?;
                put_u32(&mut rsp, pq::RSP_U, m as u32);
            }
            pq::RUN_TIME_ENABLE => {
                let ttmp = get_u8(req, pq::ARG_SETUP_TTMP).unwrap_or(0) != 0;
                // The guest's r_debug is not the host's: none is given (as upstream's host).
                self.ctx().runtime_enable(0, ttmp)?;
            }
            pq::RUN_TIME_DISABLE => self.ctx().runtime_disable()?,
            pq::GET_NOD_MEM_PROP => {
                let n = arg32_1.min(pq::MAX_ARRAY) as usize;
                let mut banks = vec![HsaMemoryProperties::new_zeroed(); n];
                self.ctx().node_memory_properties(arg32, &mut banks)?;
                for b in &banks {
                    // SAFETY: an ABI struct of integers.
                    rsp.extend_from_slice(&unsafe { bytes_of(b) });
                }
            }
            pq::GET_NOD_CACHE_PROP => {
                let n = get_u32(req, pq::ARG_U32_2).unwrap_or(0).min(pq::MAX_ARRAY);
                let caches = self.ctx().node_caches(arg32, arg32_1, n)?.to_vec();
                for c in &caches {
                    // SAFETY: an ABI struct of integers.
                    rsp.extend_from_slice(&to_wire(Record::HsaCacheProperties, &unsafe { bytes_of(c) }));
                }
            }
            pq::GET_NOD_IO_LINK_PROP => {
                let n = arg32_1.min(pq::MAX_ARRAY);
                let links = self.ctx().node_io_links(arg32, n)?.to_vec();
                for l in &links {
                    // SAFETY: an ABI struct of integers.
                    rsp.extend_from_slice(&to_wire(Record::HsaIoLinkProperties, &unsafe { bytes_of(l) }));
                }
            }
            pq::GET_CLOCK_COUNTERS => {
                let c = self.ctx().clock_counters(arg32)?;
                // SAFETY: an ABI struct of integers.
                put_bytes(&mut rsp, pq::RSP_U, &unsafe { bytes_of(&c) });
            }
            pq::POINTER_INFO => {
                let addr = get_u64(req, pq::ARG).unwrap_or(0);
                if !self.owns_range(addr, 1) {
                    // Not this guest's: the thunk's answer for an unknown pointer.
                    let mut info = [0u8; pq::PTR_INFO_SIZE];
                    put_u32(&mut info, 0, HSA_POINTER_UNKNOWN);
                    put_bytes(&mut rsp, pq::RSP_U, &info);
                    put_u32(&mut rsp, proto::RSP_RET, status_of(Status::ERROR) as u32);
                    return Ok(rsp);
                }
                let info = self.ctx().query_pointer_info(addr)?;
                // SAFETY: an ABI struct of integers and raw pointers.
                put_bytes(&mut rsp, pq::RSP_U, &unsafe { bytes_of(&info) });
                let n = (info.NMappedNodes as usize).min(pq::PTR_INFO_MAX_MAPPED_NODES);
                let nodes = info.MappedNodes;
                for i in 0..n {
                    // SAFETY: the thunk's array of `NMappedNodes` ids, alive while the BO is.
                    let v = unsafe { nodes.add(i).read_unaligned() };
                    rsp.extend_from_slice(&v.to_le_bytes());
                }
            }
            pq::NANO_TIME => {
                let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
                // SAFETY: a valid timespec out-parameter.
                unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
                put_u64(&mut rsp, pq::RSP_U, ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            pq::GET_RUNTIME_CAPS => {
                let c = self.ctx().runtime_capabilities();
                put_u32(&mut rsp, pq::RSP_U, c);
            }
            // GPU_INFO (libdrm's amdgpu_gpu_info) and TILE_CONFIG are not carried here.
            pq::GPU_INFO | pq::TILE_CONFIG => return Err(Status::NOT_SUPPORTED),
            _ => return Err(Status::INVALID_PARAMETER),
        }
        Ok(rsp)
    }

    /// Whether `[addr, addr + len)` lies inside memory this session allocated.
    fn owns_range(&self, addr: u64, len: u64) -> bool {
        let Some(end) = addr.checked_add(len) else { return false };
        self.pending.values().chain(self.resources.values()).any(|o| match *o {
            Obj::Memory { addr: a, size } => addr >= a && end <= a + size,
            _ => false,
        })
    }

    fn owns_event(&self, handle: usize) -> bool {
        handle != 0 && self.pending.values().chain(self.resources.values()).any(|o| *o == Obj::Event { handle })
    }

    fn new_blob_id(&self, blob_id: u64) -> Result<(), Status> {
        if blob_id == 0 || self.pending.contains_key(&blob_id) {
            return Err(Status::INVALID_PARAMETER);
        }
        self.count_new_object()
    }

    fn event(&mut self, req: &[u8]) -> Rsp {
        Self::need(req, pe::REQ_SIZE)?;
        let ty = get_u32(req, pe::TYPE).unwrap_or(u32::MAX);
        let handle = get_u64(req, pe::ARG).unwrap_or(0) as usize;
        let mut rsp = ok_rsp(pe::RSP_SIZE);
        match ty {
            pe::CREATE => {
                let blob_id = get_u64(req, pe::BLOB_ID).unwrap_or(0);
                self.new_blob_id(blob_id)?;
                let d = &req[pe::ARG..pe::ARG + pe::DESC_SIZE];
                // SAFETY: HsaEventDescriptor is integers and a raw pointer.
                let desc: HsaEventDescriptor = unsafe { from_bytes(d) };
                let sync = desc.SyncVar;
                // SAFETY: the union's members are all 8-byte integers or pointers.
                let user_data = unsafe { sync.SyncVar.UserData } as u64;
                let ed = EventDesc {
                    event_type: desc.EventType,
                    node_id: desc.NodeId,
                    sync_user_data: user_data,
                    sync_var_size: sync.SyncVarSize,
                };
                let manual = get_u8(req, pe::ARG_CREATE_MANUAL_RESET).unwrap_or(0) != 0;
                let signaled = get_u8(req, pe::ARG_CREATE_IS_SIGNALED).unwrap_or(0) != 0;
                let ev = self.ctx().create_event(&ed, manual, signaled)?;
                self.pending.insert(blob_id, Obj::Event { handle: ev });
                // SAFETY: `ev` is the address of the context's live HsaEvent (48 bytes), read
                // through a raw pointer, as the C API hands it out.
                let bytes = unsafe { std::slice::from_raw_parts(ev as *const u8, pe::HSA_EVENT_SIZE) }.to_vec();
                put_bytes(&mut rsp, pe::RSP_VEVENT, &bytes);
                put_u64(&mut rsp, pe::RSP_VEVENT + pe::VEVENT_HANDLE, ev as u64);
            }
            pe::DESTROY => {
                if !self.owns_event(handle) {
                    return Err(Status::INVALID_HANDLE);
                }
                let key = self.resources.iter().find(|(_, o)| **o == Obj::Event { handle }).map(|(k, _)| *k);
                match key {
                    Some(k) => self.destroy_resource(k)?,
                    None => {
                        self.pending.retain(|_, o| *o != Obj::Event { handle });
                        self.ctx().destroy_event(handle)?;
                    }
                }
            }
            pe::SET | pe::RESET | pe::QUERY_STATE => {
                if !self.owns_event(handle) {
                    return Err(Status::INVALID_HANDLE);
                }
                match ty {
                    pe::SET => self.ctx().set_event(handle)?,
                    pe::RESET => self.ctx().reset_event(handle)?,
                    _ => self.ctx().query_event_state(handle)?,
                }
            }
            pe::WAIT_ON_MULTI_EVENTS => {
                // wait_on_multi_ext_args; the host events (u64 each) follow the struct, then,
                // when `event_age` is non-zero, one age per event (ours: upstream's guest does
                // not wait through the host).
                let n = get_u32(req, pe::ARG_WAIT_NUM).unwrap_or(0) as usize;
                let ms = get_u32(req, pe::ARG_WAIT_MS).unwrap_or(0);
                let with_ages = get_u64(req, pe::ARG_WAIT_EXT_AGE).unwrap_or(0) != 0;
                let all = get_u8(req, pe::ARG_WAIT_EXT_ALL).unwrap_or(0) != 0;
                if n == 0 || n > 4096 {
                    return Err(Status::INVALID_PARAMETER);
                }
                let need = pe::REQ_SIZE + n * 8 * if with_ages { 2 } else { 1 };
                Self::need(req, need)?;
                let mut evs = Vec::with_capacity(n);
                for i in 0..n {
                    let h = get_u64(req, pe::REQ_SIZE + i * 8).unwrap_or(0) as usize;
                    if !self.owns_event(h) {
                        return Err(Status::INVALID_HANDLE);
                    }
                    evs.push(h);
                }
                let mut ages: Vec<u64> = (0..n).map(|i| get_u64(req, pe::REQ_SIZE + (n + i) * 8).unwrap_or(0)).collect();
                let r = self.ctx().wait_on_events(&evs, all, ms, with_ages.then_some(&mut ages[..]));
                if with_ages {
                    for a in &ages {
                        rsp.extend_from_slice(&a.to_le_bytes());
                    }
                }
                match r {
                    Ok(()) => {}
                    Err(e) if e == Status::WAIT_TIMEOUT => {
                        // The ages travel with the timeout too.
                        put_u32(&mut rsp, proto::RSP_RET, status_of(e) as u32);
                        return Ok(rsp);
                    }
                    Err(e) => return Err(e),
                }
            }
            pe::SET_TRAP => {
                let tba = get_u64(req, pe::ARG).unwrap_or(0);
                let tba_size = get_u64(req, pe::ARG + 8).unwrap_or(0);
                let tma = get_u64(req, pe::ARG + 16).unwrap_or(0);
                let tma_size = get_u64(req, pe::ARG + 24).unwrap_or(0);
                let node = get_u32(req, pe::ARG_TRAP_NODE).unwrap_or(0);
                if (tba != 0 && !self.owns_range(tba, tba_size.max(1))) || (tma != 0 && !self.owns_range(tma, tma_size.max(1))) {
                    return Err(Status::INVALID_HANDLE);
                }
                // SAFETY: both ranges lie in GPU memory this session allocated for the guest,
                // which only the GPUs and the guest touch (never through Rust references).
                unsafe { self.ctx().set_trap_handler(node, tba, tma) }?;
            }
            _ => return Err(Status::INVALID_PARAMETER),
        }
        Ok(rsp)
    }

    fn memory(&mut self, req: &[u8]) -> Rsp {
        Self::need(req, pm::REQ_SIZE)?;
        let ty = get_u32(req, pm::TYPE).unwrap_or(u32::MAX);
        let addr = get_u64(req, pm::ARG).unwrap_or(0);
        let size = get_u64(req, pm::ARG_SIZE).unwrap_or(0);
        let mut rsp = ok_rsp(pm::RSP_SIZE);
        match ty {
            pm::ALLOC => {
                let blob_id = get_u64(req, pm::BLOB_ID).unwrap_or(0);
                self.new_blob_id(blob_id)?;
                let node = get_u32(req, pm::ARG).unwrap_or(0);
                let size = get_u64(req, pm::ARG_ALLOC_SIZE).unwrap_or(0);
                let flags_bits = get_u32(req, pm::ARG_ALLOC_FLAGS).unwrap_or(0);
                if self.memory_bytes.saturating_add(size) > self.limits.memory_bytes {
                    return Err(Status::NO_MEMORY);
                }
                // SAFETY: HsaMemFlags is a union of a u32 and its bitfields.
                let flags: HsaMemFlags = unsafe { from_bytes(&flags_bits.to_le_bytes()) };
                if flags.bf_Scratch() != 0 {
                    // Scratch is reserved VA the guest cannot share (MAP_MEM_TO_GPU with
                    // need_create_bo): not carried here.
                    return Err(Status::NOT_SUPPORTED);
                }
                let a = self.ctx().alloc_memory(node, None, size, 0, flags, None)?;
                self.memory_bytes += size;
                self.pending.insert(blob_id, Obj::Memory { addr: a, size });
                put_u64(&mut rsp, pm::RSP_U, a);
            }
            pm::FREE => {
                let key = self.resources.iter().find(|(_, o)| matches!(o, Obj::Memory { addr: a, .. } if *a == addr)).map(|(k, _)| *k);
                match key {
                    Some(k) => self.destroy_resource(k)?,
                    None => {
                        let b = self.pending.iter().find(|(_, o)| matches!(o, Obj::Memory { addr: a, .. } if *a == addr)).map(|(k, _)| *k);
                        let b = b.ok_or(Status::INVALID_HANDLE)?;
                        let o = self.pending.remove(&b).expect("found");
                        self.free_obj(o)?;
                    }
                }
            }
            pm::MAP_TO_GPU_NODES | pm::MAP_MEM_TO_GPU => {
                if get_u8(req, pm::ARG_NEED_CREATE_BO).unwrap_or(0) != 0 && ty == pm::MAP_MEM_TO_GPU {
                    return Err(Status::NOT_SUPPORTED);
                }
                if !self.owns_range(addr, size.max(1)) {
                    return Err(Status::INVALID_HANDLE);
                }
                let nodes = if ty == pm::MAP_TO_GPU_NODES {
                    let n = get_u64(req, pm::ARG_MAP_NUM_NODES).unwrap_or(0);
                    if n == 0 || n > pm::MAX_NODES {
                        return Err(Status::INVALID_PARAMETER);
                    }
                    Self::need(req, pm::REQ_SIZE + n as usize * 4)?;
                    Some((0..n as usize).map(|i| get_u32(req, pm::REQ_SIZE + i * 4).unwrap_or(0)).collect::<Vec<u32>>())
                } else {
                    None
                };
                let alt = self.ctx().map_memory_to_gpu(addr, size, nodes.as_deref())?;
                put_u64(&mut rsp, pm::RSP_U, alt);
            }
            pm::UNMAP_TO_GPU => {
                if !self.owns_range(addr, 1) {
                    return Err(Status::INVALID_HANDLE);
                }
                self.ctx().unmap_memory_to_gpu(addr)?;
            }
            pm::AVAIL_MEM => {
                let node = get_u32(req, pm::ARG).unwrap_or(0);
                let a = self.ctx().available_memory(node)?;
                put_u64(&mut rsp, pm::RSP_U, a);
            }
            // Guest pages (userptr blobs) never reach a loopback or model host: not carried.
            pm::REG_MEM_WITH_FLAG | pm::DEREG_MEM | pm::MAP_USERPTR => return Err(Status::NOT_SUPPORTED),
            _ => return Err(Status::INVALID_PARAMETER),
        }
        Ok(rsp)
    }

    fn queue(&mut self, req: &[u8]) -> Rsp {
        Self::need(req, pqu::REQ_SIZE)?;
        let ty = get_u32(req, pqu::TYPE).unwrap_or(u32::MAX);
        let mut rsp = ok_rsp(pqu::RSP_SIZE);
        match ty {
            pqu::CREATE => {
                let blob_id = get_u64(req, pqu::BLOB_ID).unwrap_or(0);
                let rw_blob = get_u64(req, pqu::RW_PTR_BLOB_ID).unwrap_or(0);
                let db_blob = get_u64(req, pqu::DOORBELL_BLOB_ID).unwrap_or(0);
                self.new_blob_id(blob_id)?;
                for b in [rw_blob, db_blob] {
                    if b != 0 && (b == blob_id || self.pending.contains_key(&b)) {
                        return Err(Status::INVALID_PARAMETER);
                    }
                }
                if rw_blob != 0 && rw_blob == db_blob {
                    return Err(Status::INVALID_PARAMETER);
                }
                let g = |o| get_u64(req, o).unwrap_or(0);
                let queue_type = get_u32(req, pqu::ARG_TYPE).unwrap_or(u32::MAX);
                let ring = g(pqu::ARG_QUEUE_ADDRESS);
                let ring_size = g(pqu::ARG_QUEUE_SIZE);
                let event = g(pqu::ARG_EVENT) as usize;
                let aql = queue_type == HSA_QUEUE_COMPUTE_AQL;
                let (rptr, wptr) = if aql { (g(pqu::ARG_RPTR_AQL), g(pqu::ARG_WPTR_AQL)) } else { (0, 0) };
                if !self.owns_range(ring, ring_size.max(1)) || (aql && (!self.owns_range(rptr, 8) || !self.owns_range(wptr, 8))) {
                    return Err(Status::INVALID_HANDLE);
                }
                if event != 0 && !self.owns_event(event) {
                    return Err(Status::INVALID_HANDLE);
                }
                let r = QueueRequest {
                    node: get_u32(req, pqu::ARG_NODE).unwrap_or(0),
                    queue_type,
                    percentage: get_u32(req, pqu::ARG_PERCENTAGE).unwrap_or(0),
                    priority: g(pqu::ARG_PRIORITY) as i64,
                    sdma_engine_id: get_u32(req, pqu::ARG_SDMA_ENGINE).unwrap_or(u32::MAX),
                    ring,
                    ring_size,
                    metadata_size: 0,
                    error_event: (event != 0).then_some(event),
                    error_reason: 0,
                    rptr,
                    wptr,
                };
                // SAFETY: the ring and the AQL pointers lie in GPU memory this session
                // allocated for the guest (checked above), touched only through raw pointers.
                let q = unsafe { self.ctx().create_queue(&r) }?;
                let mut res = HsaQueueResource::new_zeroed();
                res.QueueId = q.queue_id;
                res.__anon_union_1 = HsaQueueResource__anon_union_1 { QueueDoorBell: q.doorbell };
                res.__anon_union_2 = HsaQueueResource__anon_union_2 { QueueWptrValue: q.wptr };
                res.__anon_union_3 = HsaQueueResource__anon_union_3 { QueueRptrValue: q.rptr };
                // SAFETY: an ABI struct of integers and unions of integers / pointers.
                let wire = to_wire(Record::HsaQueueResource, &unsafe { bytes_of(&res) });
                let vq = pqu::RSP_VQUEUE;
                put_bytes(&mut rsp, vq, &wire);
                put_u64(&mut rsp, vq + pqu::VQ_HOST_DOORBELL, q.doorbell);
                put_u64(&mut rsp, vq + pqu::VQ_QUEUE_HANDLE, q.queue_id);
                let mut made = vec![(blob_id, Obj::Queue { id: q.queue_id })];
                let fail = |s: &mut Session, e: Status| {
                    let _ = s.ctx().destroy_queue(q.queue_id);
                    Err(e)
                };
                if db_blob != 0 {
                    let Some(m) = self.share.find(q.doorbell as usize, 4) else {
                        return fail(self, Status::NOT_SUPPORTED);
                    };
                    put_u64(&mut rsp, vq + pqu::VQ_HOST_DOORBELL_OFFSET, q.doorbell - m.start as u64);
                    made.push((db_blob, Obj::Page { addr: m.start as u64, size: m.len as u64 }));
                } else if let Some(m) = self.share.find(q.doorbell as usize, 4) {
                    put_u64(&mut rsp, vq + pqu::VQ_HOST_DOORBELL_OFFSET, q.doorbell - m.start as u64);
                }
                if rw_blob != 0 && !aql {
                    let page = q.wptr & !0xfff;
                    if q.rptr & !0xfff != page || self.share.find(page as usize, 0x1000).is_none() {
                        return fail(self, Status::NOT_SUPPORTED);
                    }
                    put_u64(&mut rsp, vq + pqu::VQ_HOST_WRITE_OFFSET, q.wptr - page);
                    put_u64(&mut rsp, vq + pqu::VQ_HOST_READ_OFFSET, q.rptr - page);
                    put_u64(&mut rsp, vq + pqu::VQ_HOST_RW_HANDLE, page);
                    made.push((rw_blob, Obj::Page { addr: page, size: 0x1000 }));
                }
                for (b, o) in made {
                    self.pending.insert(b, o);
                }
            }
            pqu::DESTROY => {
                let id = get_u64(req, pqu::ARG).unwrap_or(0);
                let key = self.resources.iter().find(|(_, o)| **o == Obj::Queue { id }).map(|(k, _)| *k);
                match key {
                    Some(k) => self.destroy_resource(k)?,
                    None => {
                        let b =
                            self.pending.iter().find(|(_, o)| **o == Obj::Queue { id }).map(|(k, _)| *k).ok_or(Status::INVALID_HANDLE)?;
                        self.pending.remove(&b);
                        self.ctx().destroy_queue(id)?;
                    }
                }
            }
            _ => return Err(Status::INVALID_PARAMETER),
        }
        Ok(rsp)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.ctx.is_some() {
            let s = std::mem::replace(self, Session::empty());
            drop(s.teardown());
        }
    }
}

impl Session {
    fn empty() -> Session {
        Session {
            ctx: None,
            share: Arc::new(ShareTable::default()),
            limits: Limits::default(),
            shmem: None,
            pending: HashMap::new(),
            resources: HashMap::new(),
            next_res: 1,
            memory_bytes: 0,
            acquired: 0,
            seqno: 0,
        }
    }
}

fn make_shmem(len: usize) -> Result<Shmem, Status> {
    // SAFETY: a NUL-terminated name.
    let fd = unsafe { libc::memfd_create(c"hsakmt-virtio-shmem".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(Status::NO_MEMORY);
    }
    // SAFETY: a new descriptor nobody else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: our memfd.
    if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
        return Err(Status::NO_MEMORY);
    }
    // SAFETY: a new shared mapping of our memfd, `len` bytes, where the kernel chooses.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd.as_raw_fd(), 0) };
    if p == libc::MAP_FAILED {
        return Err(Status::NO_MEMORY);
    }
    Ok(Shmem { fd: Arc::new(fd), ptr: p.cast(), len })
}

/// A session on a fresh instance of the built-in model, with its mappings shareable (the
/// loopback host's way of serving a guest).
#[cfg(feature = "model")]
pub struct ModelHost {
    pub session: Session,
    pub model: Arc<hsakmt_model::Model>,
}

#[cfg(feature = "model")]
impl ModelHost {
    /// A model from the environment (`HSAKMT_MODEL`, default mi300x) and a context on it.
    pub fn open() -> Result<ModelHost, String> {
        Self::open_with(Limits::default())
    }

    pub fn open_with(limits: Limits) -> Result<ModelHost, String> {
        let cfg = hsakmt_model::ModelConfig::from_env().map_err(|e| format!("model configuration: {e}"))?;
        let model = hsakmt_model::Model::new_shared(cfg).map_err(|e| format!("model: {e}"))?;
        let fd = model.device_memfd().map(|f| f.as_raw_fd()).ok_or("the model has no device file")?;
        let (port, table) = SharePort::new(model.clone(), Some(fd)).map_err(|e| format!("errno {}", e.0))?;
        let ctx = Context::open(Box::new(port), Default::default()).map_err(|e| e.message)?;
        Ok(ModelHost { session: Session::new(ctx, table, limits), model })
    }

    /// Serve one guest over the loopback transport until it goes away.
    pub fn serve(&mut self, sock: &OwnedFd) {
        let max = self.session.limits.submit_bytes;
        crate::loopback::serve(sock, &mut self.session, max);
    }

    /// End the session: free what the guest held, close the context; answers what was freed
    /// and how many BOs the model still had for this process before it was released.
    pub fn close(self) -> (Teardown, usize) {
        let (ctx, t) = self.session.teardown();
        drop(ctx);
        let left = self.model.live_bos();
        self.model.release_process();
        (t, left)
    }
}

/// Serve every guest that connects to `listener` with a [`ModelHost`] of its own, each on a
/// thread; a guest that goes away has everything it held freed (reported on stderr). Never
/// returns: the loopback host's main loop (`hsakmt-virtio-host`).
#[cfg(feature = "model")]
pub fn serve_model_guests(listener: &std::os::fd::OwnedFd) -> ! {
    loop {
        let Ok(conn) = crate::loopback::accept(listener) else { continue };
        std::thread::spawn(move || match ModelHost::open() {
            Ok(mut h) => {
                h.serve(&conn);
                let t = h.close();
                eprintln!(
                    "hsakmt-virtio-host: guest gone; freed {} allocations, {} events, {} queues; model BOs left {}",
                    t.0.memory, t.0.events, t.0.queues, t.1
                );
            }
            Err(e) => eprintln!("hsakmt-virtio-host: {e}"),
        });
    }
}
