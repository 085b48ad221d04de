//! The guest end: upstream's `vhsaKmt*` calls as commands to a host, over a [`Transport`].
//! libhsakmt's C exports (hsakmt-ffi, `virtio.rs`) are a thin layer over [`Guest`].
//!
//! As upstream's guest: memory is allocated on the host, then its blob is mapped into the guest
//! at the host's address (so CPU, GPU and host addresses agree); events and queues are host
//! objects with a blob each, and closing the blob frees them; responses come back in the shared
//! page at the offset each command names, and a command has completed when the page's `seqno`
//! has reached the command's.

use crate::loopback::{self, OP_CAPSET, OP_CREATE_BLOB, OP_DESTROY_BLOB, OP_EXECBUF, REP_HDR, REQ_HDR};
use crate::proto::{self, ccmd, event as pe, get_u32, get_u64, memory as pm, put_u32, put_u64, query as pq, queue as pqu};
use hsakmt_core::Status;
use std::collections::{BTreeMap, HashMap};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Mutex;

/// A blob the host made for this guest.
#[derive(Debug)]
pub struct BlobHandle {
    pub res_id: u32,
    /// The host range, and the file behind it when the transport can map it.
    pub addr: u64,
    pub size: u64,
    pub file: Option<(OwnedFd, u64)>,
}

/// The seam between the guest and a host: the virtio-gpu operations the guest uses.
pub trait Transport: Send + Sync {
    /// `struct virgl_renderer_capset_hsakmt` of the host.
    fn capset(&self) -> Result<Vec<u8>, Status>;
    /// RESOURCE_CREATE_BLOB (blob id 0: the response page).
    fn create_blob(&self, blob_id: u64, size: u64) -> Result<BlobHandle, Status>;
    /// Close a blob (the host frees what it stands for).
    fn destroy_blob(&self, res_id: u32) -> Result<(), Status>;
    /// EXECBUFFER, returning once the host has run every command (the fence).
    fn execbuffer(&self, cmds: &[u8]) -> Result<(), Status>;
    /// Map `len` bytes of a mappable blob at `addr` (0: anywhere; otherwise exactly there,
    /// never over an existing mapping). The default maps the file the transport handed over.
    fn map_blob(&self, blob: &BlobHandle, addr: u64, len: u64) -> Result<u64, Status> {
        match blob.file.as_ref() {
            Some(f) => map_file(f, addr, len),
            None => Err(Status::NOT_SUPPORTED),
        }
    }
}

/// The loopback transport's guest side.
pub struct Loopback {
    sock: OwnedFd,
    lock: Mutex<Vec<u8>>,
}

impl Loopback {
    pub fn connect(path: &std::path::Path) -> Result<Loopback, Status> {
        let sock = loopback::connect(path).map_err(|_| Status::KERNEL_IO_CHANNEL_NOT_OPENED)?;
        Ok(Loopback::from_socket(sock))
    }

    pub fn from_socket(sock: OwnedFd) -> Loopback {
        Loopback { sock, lock: Mutex::new(vec![0u8; 4096]) }
    }

    /// One request and its reply; a host that went away is KERNEL_COMMUNICATION_ERROR.
    fn call(&self, op: u32, a: u64, b: u64, payload: &[u8]) -> Result<(Vec<u8>, Option<OwnedFd>), Status> {
        let mut buf = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut m = vec![0u8; REQ_HDR];
        m[0..4].copy_from_slice(&op.to_le_bytes());
        m[8..16].copy_from_slice(&a.to_le_bytes());
        m[16..24].copy_from_slice(&b.to_le_bytes());
        m.extend_from_slice(payload);
        loopback::send_msg(self.sock.as_raw_fd(), &m, None).map_err(|_| Status::KERNEL_COMMUNICATION_ERROR)?;
        let (n, _, fd) = loopback::recv_msg(self.sock.as_raw_fd(), &mut buf).map_err(|_| Status::KERNEL_COMMUNICATION_ERROR)?;
        if n < REP_HDR {
            return Err(Status::KERNEL_COMMUNICATION_ERROR);
        }
        let st = i32::from_le_bytes(buf[0..4].try_into().expect("4"));
        if st != 0 {
            return Err(Status(st as _));
        }
        Ok((buf[..n].to_vec(), fd))
    }
}

impl Transport for Loopback {
    fn capset(&self) -> Result<Vec<u8>, Status> {
        let (r, _) = self.call(OP_CAPSET, 0, 0, &[])?;
        Ok(r[REP_HDR..].to_vec())
    }

    fn create_blob(&self, blob_id: u64, size: u64) -> Result<BlobHandle, Status> {
        let (r, fd) = self.call(OP_CREATE_BLOB, blob_id, size, &[])?;
        let res_id = get_u32(&r, 4).unwrap_or(0);
        let addr = get_u64(&r, 8).unwrap_or(0);
        let size = get_u64(&r, 16).unwrap_or(0);
        let off = get_u64(&r, 24).unwrap_or(0);
        Ok(BlobHandle { res_id, addr, size, file: fd.map(|f| (f, off)) })
    }

    fn destroy_blob(&self, res_id: u32) -> Result<(), Status> {
        self.call(OP_DESTROY_BLOB, res_id as u64, 0, &[]).map(|_| ())
    }

    fn execbuffer(&self, cmds: &[u8]) -> Result<(), Status> {
        self.call(OP_EXECBUF, 0, 0, cmds).map(|_| ())
    }
}

/// A guest mapping of a blob.
#[derive(Debug)]
struct Bo {
    res_id: u32,
    size: u64,
    /// Where the guest mapped it (0: not mapped).
    map: u64,
    map_len: u64,
    /// Mapped-node ids for QueryPointerInfo's `MappedNodes` (valid while the BO lives).
    mapped_nodes: Box<[u32; pq::PTR_INFO_MAX_MAPPED_NODES]>,
}

/// A guest event: the `vHsaEvent` handed to the caller (its `HsaEvent` first).
struct Ev {
    res_id: u32,
    host: u64,
    mem: Box<[u64; pe::VEVENT_SIZE / 8]>,
}

struct Queue {
    res_id: u32,
    rw: Option<(u32, u64, u64)>,
}

/// The guest's state: one per process, as upstream's `dev_list`.
pub struct Guest {
    t: Box<dyn Transport>,
    shmem_res: u32,
    shmem: *mut u8,
    shmem_len: usize,
    /// Serialises commands: the response area is reused by each.
    exec_lock: Mutex<u32>,
    next_blob: std::sync::atomic::AtomicU64,
    bos: Mutex<BTreeMap<u64, Bo>>,
    events: Mutex<HashMap<usize, Ev>>,
    queues: Mutex<HashMap<u64, Queue>>,
    doorbells: Mutex<HashMap<u32, (u32, u64, u64)>>,
    next_queue: std::sync::atomic::AtomicU64,
}

// SAFETY: the shared page is reached only through raw pointers under `exec_lock`.
unsafe impl Send for Guest {}
// SAFETY: as above; every other field is synchronised.
unsafe impl Sync for Guest {}

fn map_file(file: &(OwnedFd, u64), addr: u64, len: u64) -> Result<u64, Status> {
    let flags = libc::MAP_SHARED | if addr != 0 { libc::MAP_FIXED_NOREPLACE } else { 0 };
    // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping; without an address the
    // kernel chooses. The file is the host's blob, `len` bytes from `offset`.
    let p = unsafe {
        libc::mmap(addr as *mut _, len as usize, libc::PROT_READ | libc::PROT_WRITE, flags, file.0.as_raw_fd(), file.1 as libc::off_t)
    };
    if p == libc::MAP_FAILED {
        return Err(Status::NO_MEMORY);
    }
    if addr != 0 && p as u64 != addr {
        // SAFETY: the mapping just made, unmapped once.
        unsafe { libc::munmap(p, len as usize) };
        return Err(Status::NO_MEMORY);
    }
    Ok(p as u64)
}

fn unmap(addr: u64, len: u64) {
    if addr != 0 {
        // SAFETY: a mapping of ours (`map_file`), unmapped once, by its owner.
        unsafe { libc::munmap(addr as *mut _, len as usize) };
    }
}

impl Guest {
    /// Open over `t`: check the capset, set up the response page, OPEN_KFD.
    pub fn open(t: Box<dyn Transport>) -> Result<Guest, Status> {
        let caps = t.capset()?;
        if get_u32(&caps, proto::CAPSET_CONTEXT_TYPE) != Some(proto::CONTEXT_AMDGPU) {
            return Err(Status::KERNEL_IO_CHANNEL_NOT_OPENED);
        }
        let b = t.create_blob(0, proto::SHMEM_BLOB_SIZE as u64)?;
        let p = match t.map_blob(&b, 0, proto::SHMEM_BLOB_SIZE as u64) {
            Ok(p) => p,
            Err(e) => {
                let _ = t.destroy_blob(b.res_id);
                return Err(e);
            }
        };
        let g = Guest {
            t,
            shmem_res: b.res_id,
            shmem: p as *mut u8,
            shmem_len: proto::SHMEM_BLOB_SIZE,
            exec_lock: Mutex::new(0),
            next_blob: 1.into(),
            bos: Default::default(),
            events: Default::default(),
            queues: Default::default(),
            doorbells: Default::default(),
            next_queue: 1.into(),
        };
        let mut req = proto::command(ccmd::QUERY_INFO, pq::REQ_SIZE);
        put_u32(&mut req, pq::TYPE, pq::OPEN_KFD);
        put_u64(&mut req, pq::ARG, 0x1000);
        g.exec(&mut req, pq::RSP_SIZE)?;
        Ok(g)
    }

    fn blob_id(&self) -> u64 {
        self.next_blob.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
    }

    /// Run one command; answers the response (its `ret` checked: a non-zero status is `Err`).
    pub fn exec(&self, req: &mut [u8], rsp_len: usize) -> Result<Vec<u8>, Status> {
        self.exec_raw(req, rsp_len).and_then(|r| match get_u32(&r, proto::RSP_RET).unwrap_or(0) {
            0 => Ok(r),
            s => Err(Status(s as _)),
        })
    }

    /// Run one command; the response whatever its `ret`.
    pub fn exec_raw(&self, req: &mut [u8], rsp_len: usize) -> Result<Vec<u8>, Status> {
        let rsp_len = rsp_len.next_multiple_of(8);
        let mut seq = self.exec_lock.lock().unwrap_or_else(|e| e.into_inner());
        let area = self.shmem_len - proto::SHMEM_SIZE;
        if rsp_len > area {
            return Err(Status::NO_MEMORY);
        }
        *seq = seq.wrapping_add(1);
        put_u32(req, proto::REQ_SEQNO, *seq);
        put_u32(req, proto::REQ_RSP_OFF, 0);
        let rsp = self.shmem.wrapping_add(proto::SHMEM_SIZE);
        // SAFETY: the response area is `area` ≥ `rsp_len` bytes of our shared mapping, reached
        // only through raw pointers under `exec_lock`.
        unsafe {
            std::ptr::write_bytes(rsp, 0, rsp_len);
            (rsp as *mut u32).write_volatile((rsp_len as u32).to_le());
        }
        self.t.execbuffer(req)?;
        // SAFETY: the page's seqno word (aligned, inside the mapping).
        let done = u32::from_le(unsafe { (self.shmem as *const u32).read_volatile() });
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        if (done.wrapping_sub(*seq) as i32) < 0 {
            return Err(Status::KERNEL_COMMUNICATION_ERROR);
        }
        let mut out = vec![0u8; rsp_len];
        // SAFETY: as above; the host has finished writing (fence + seqno).
        unsafe { std::ptr::copy_nonoverlapping(rsp, out.as_mut_ptr(), rsp_len) };
        Ok(out)
    }

    fn query(&self, ty: u32, arg: u64, arg1: u32, extra: usize) -> Result<Vec<u8>, Status> {
        let mut req = proto::command(ccmd::QUERY_INFO, pq::REQ_SIZE);
        put_u32(&mut req, pq::TYPE, ty);
        put_u64(&mut req, pq::ARG, arg);
        if arg1 != 0 {
            put_u32(&mut req, pq::ARG_U32_1, arg1);
        }
        self.exec(&mut req, pq::RSP_SIZE + extra)
    }

    /// The response union of a query (`RSP_U..`).
    pub fn query_u(&self, ty: u32, arg: u64) -> Result<Vec<u8>, Status> {
        self.query(ty, arg, 0, 0).map(|r| r[pq::RSP_U..].to_vec())
    }

    /// GET_NOD_MEM_PROP / GET_NOD_IO_LINK_PROP: `n` records of `size` wire bytes each.
    pub fn query_array(&self, ty: u32, node: u32, arg1: u32, arg2: u32, n: u32, size: usize) -> Result<Vec<u8>, Status> {
        if n > pq::MAX_ARRAY {
            return Err(Status::INVALID_PARAMETER);
        }
        let mut req = proto::command(ccmd::QUERY_INFO, pq::REQ_SIZE);
        put_u32(&mut req, pq::TYPE, ty);
        put_u32(&mut req, pq::ARG, node);
        put_u32(&mut req, pq::ARG_U32_1, arg1);
        put_u32(&mut req, pq::ARG_U32_2, arg2);
        let r = self.exec(&mut req, pq::RSP_SIZE + n as usize * size)?;
        Ok(r[pq::RSP_SIZE..].to_vec())
    }

    // ---- memory ----

    fn memory_cmd(&self, ty: u32, f: impl FnOnce(&mut Vec<u8>)) -> Result<Vec<u8>, Status> {
        let mut req = proto::command(ccmd::MEMORY, pm::REQ_SIZE);
        put_u32(&mut req, pm::TYPE, ty);
        f(&mut req);
        let len = req.len();
        put_u32(&mut req, proto::REQ_LEN, len as u32);
        self.exec(&mut req, pm::RSP_SIZE)
    }

    /// AllocMemory: on the host, then mapped here at the host's address.
    pub fn alloc_memory(&self, node: u32, size: u64, flags: u32) -> Result<u64, Status> {
        let blob = self.blob_id();
        let r = self.memory_cmd(pm::ALLOC, |q| {
            put_u32(q, pm::ARG, node);
            put_u32(q, pm::ARG_ALLOC_FLAGS, flags);
            put_u64(q, pm::ARG_ALLOC_SIZE, size);
            put_u64(q, pm::BLOB_ID, blob);
        })?;
        let addr = get_u64(&r, pm::RSP_U).unwrap_or(0);
        let b = self.t.create_blob(blob, size)?;
        let map_len = size.next_multiple_of(4096);
        let mapped = self.t.map_blob(&b, addr, map_len);
        if let Err(e) = mapped {
            let _ = self.t.destroy_blob(b.res_id);
            return Err(e);
        }
        let bo = Bo { res_id: b.res_id, size, map: addr, map_len, mapped_nodes: Box::new([0; 3]) };
        self.bos.lock().unwrap_or_else(|e| e.into_inner()).insert(addr, bo);
        Ok(addr)
    }

    /// FreeMemory: unmap here, close the blob (the host frees the memory).
    pub fn free_memory(&self, addr: u64) -> Result<(), Status> {
        let bo = self.bos.lock().unwrap_or_else(|e| e.into_inner()).remove(&addr).ok_or(Status::INVALID_PARAMETER)?;
        unmap(bo.map, bo.map_len);
        self.t.destroy_blob(bo.res_id)
    }

    pub fn map_memory(&self, addr: u64, size: u64, nodes: Option<&[u32]>) -> Result<u64, Status> {
        let ty = if nodes.is_some() { pm::MAP_TO_GPU_NODES } else { pm::MAP_MEM_TO_GPU };
        let r = self.memory_cmd(ty, |q| {
            put_u64(q, pm::ARG, addr);
            put_u64(q, pm::ARG_SIZE, size);
            if let Some(n) = nodes {
                put_u64(q, pm::ARG_MAP_NUM_NODES, n.len() as u64);
                for id in n {
                    q.extend_from_slice(&id.to_le_bytes());
                }
                q.resize(q.len().next_multiple_of(8), 0);
            }
        })?;
        Ok(get_u64(&r, pm::RSP_U).unwrap_or(0))
    }

    pub fn unmap_memory(&self, addr: u64) -> Result<(), Status> {
        self.memory_cmd(pm::UNMAP_TO_GPU, |q| put_u64(q, pm::ARG, addr)).map(|_| ())
    }

    pub fn available_memory(&self, node: u32) -> Result<u64, Status> {
        let r = self.memory_cmd(pm::AVAIL_MEM, |q| put_u32(q, pm::ARG, node))?;
        Ok(get_u64(&r, pm::RSP_U).unwrap_or(0))
    }

    /// QueryPointerInfo: the wire `HsaPointerInfo` with `MappedNodes` pointing at this guest's
    /// copy of the ids (valid while the memory lives); ERROR for memory that is not the host's.
    pub fn pointer_info(&self, addr: u64) -> Result<(Vec<u8>, Status), Status> {
        let mut req = proto::command(ccmd::QUERY_INFO, pq::REQ_SIZE);
        put_u32(&mut req, pq::TYPE, pq::POINTER_INFO);
        put_u64(&mut req, pq::ARG, addr);
        let r = self.exec_raw(&mut req, pq::RSP_SIZE + 4 * pq::PTR_INFO_MAX_MAPPED_NODES)?;
        let ret = Status(get_u32(&r, proto::RSP_RET).unwrap_or(0) as _);
        let mut info = r[pq::RSP_U..pq::RSP_U + pq::PTR_INFO_SIZE].to_vec();
        // HsaPointerInfo (packed 4): NMappedNodes at 40, RegisteredNodes at 44, MappedNodes at 52.
        let n = (get_u32(&info, 40).unwrap_or(0) as usize).min(pq::PTR_INFO_MAX_MAPPED_NODES);
        put_u32(&mut info, 40, n as u32);
        put_u64(&mut info, 44, 0); // the host's array: meaningless here
        let mut bos = self.bos.lock().unwrap_or_else(|e| e.into_inner());
        let owner = bos.range_mut(..=addr).next_back().filter(|(a, b)| addr < **a + b.size.max(1)).map(|(_, b)| b);
        match owner {
            Some(bo) if n > 0 => {
                for i in 0..n {
                    bo.mapped_nodes[i] = get_u32(&r, pq::RSP_SIZE + 4 * i).unwrap_or(0);
                }
                put_u64(&mut info, 52, bo.mapped_nodes.as_ptr() as u64);
            }
            _ => put_u64(&mut info, 52, 0),
        }
        Ok((info, ret))
    }

    // ---- events ----

    /// CreateEvent: answers the guest's `HsaEvent*` (a `vHsaEvent`, owned here until destroyed).
    pub fn create_event(&self, desc: &[u8], manual: bool, signaled: bool) -> Result<usize, Status> {
        let blob = self.blob_id();
        let mut req = proto::command(ccmd::EVENT, pe::REQ_SIZE);
        put_u32(&mut req, pe::TYPE, pe::CREATE);
        req[pe::ARG..pe::ARG + pe::DESC_SIZE].copy_from_slice(&desc[..pe::DESC_SIZE]);
        req[pe::ARG_CREATE_MANUAL_RESET] = manual as u8;
        req[pe::ARG_CREATE_IS_SIGNALED] = signaled as u8;
        put_u64(&mut req, pe::BLOB_ID, blob);
        let r = self.exec(&mut req, pe::RSP_SIZE)?;
        let v = &r[pe::RSP_VEVENT..pe::RSP_VEVENT + pe::VEVENT_SIZE];
        let host = get_u64(v, pe::VEVENT_HANDLE).unwrap_or(0);
        let b = self.t.create_blob(blob, pe::VEVENT_SIZE as u64)?;
        let mut mem = Box::new([0u64; pe::VEVENT_SIZE / 8]);
        for (i, w) in mem.iter_mut().enumerate() {
            *w = get_u64(v, i * 8).unwrap_or(0);
        }
        mem[pe::VEVENT_RES_ID / 8] = b.res_id as u64;
        let ptr = mem.as_ptr() as usize;
        self.events.lock().unwrap_or_else(|e| e.into_inner()).insert(ptr, Ev { res_id: b.res_id, host, mem });
        Ok(ptr)
    }

    fn host_event(&self, ev: usize) -> Result<u64, Status> {
        self.events.lock().unwrap_or_else(|e| e.into_inner()).get(&ev).map(|e| e.host).ok_or(Status::INVALID_HANDLE)
    }

    pub fn destroy_event(&self, ev: usize) -> Result<(), Status> {
        let e = self.events.lock().unwrap_or_else(|e| e.into_inner()).remove(&ev).ok_or(Status::INVALID_HANDLE)?;
        let r = self.t.destroy_blob(e.res_id);
        drop(e.mem);
        r
    }

    pub fn event_op(&self, ev: usize, ty: u32) -> Result<(), Status> {
        let host = self.host_event(ev)?;
        let mut req = proto::command(ccmd::EVENT, pe::REQ_SIZE);
        put_u32(&mut req, pe::TYPE, ty);
        put_u64(&mut req, pe::ARG, host);
        self.exec(&mut req, pe::RSP_SIZE).map(|_| ())
    }

    /// WaitOnMultipleEvents(_Ext), in slices of at most 100 ms so one thread's wait does not
    /// hold the channel from the others (a set from another thread gets through).
    pub fn wait(&self, evs: &[usize], all: bool, ms: u32, mut ages: Option<&mut [u64]>) -> Result<(), Status> {
        let hosts = evs.iter().map(|e| self.host_event(*e)).collect::<Result<Vec<_>, _>>()?;
        let start = std::time::Instant::now();
        loop {
            let left = if ms == u32::MAX { u32::MAX } else { ms.saturating_sub(start.elapsed().as_millis().min(u32::MAX as u128) as u32) };
            let slice = left.min(100);
            let mut req = proto::command(ccmd::EVENT, pe::REQ_SIZE);
            put_u32(&mut req, pe::TYPE, pe::WAIT_ON_MULTI_EVENTS);
            put_u32(&mut req, pe::ARG_WAIT_NUM, hosts.len() as u32);
            put_u32(&mut req, pe::ARG_WAIT_MS, slice);
            put_u64(&mut req, pe::ARG_WAIT_EXT_AGE, ages.is_some() as u64);
            req[pe::ARG_WAIT_EXT_ALL] = all as u8;
            for h in &hosts {
                req.extend_from_slice(&h.to_le_bytes());
            }
            if let Some(a) = ages.as_deref() {
                for v in a {
                    req.extend_from_slice(&v.to_le_bytes());
                }
            }
            let len = req.len();
            put_u32(&mut req, proto::REQ_LEN, len as u32);
            let r = self.exec_raw(&mut req, pe::RSP_SIZE + if ages.is_some() { 8 * hosts.len() } else { 0 })?;
            if let Some(a) = ages.as_deref_mut() {
                for (i, v) in a.iter_mut().enumerate() {
                    *v = get_u64(&r, pe::RSP_SIZE + 8 * i).unwrap_or(*v);
                }
            }
            let st = Status(get_u32(&r, proto::RSP_RET).unwrap_or(0) as _);
            if st != Status::WAIT_TIMEOUT || (ms != u32::MAX && left <= slice) {
                return if st == Status::SUCCESS { Ok(()) } else { Err(st) };
            }
        }
    }

    // ---- queues ----

    /// CreateQueue: answers (guest queue id, doorbell, wptr, rptr).
    #[allow(clippy::too_many_arguments)]
    pub fn create_queue(
        &self,
        node: u32,
        ty: u32,
        pct: u32,
        prio: i64,
        engine: u32,
        ring: u64,
        ring_size: u64,
        event: usize,
        aql_ptrs: (u64, u64),
    ) -> Result<(u64, u64, u64, u64), Status> {
        let host_event = if event != 0 { self.host_event(event)? } else { 0 };
        let blob = self.blob_id();
        let aql = ty == hsakmt_core::abi::hsakmt::HSA_QUEUE_COMPUTE_AQL;
        let rw_blob = if aql { 0 } else { self.blob_id() };
        let have_db = self.doorbells.lock().unwrap_or_else(|e| e.into_inner()).contains_key(&node);
        let db_blob = if have_db { 0 } else { self.blob_id() };
        let mut req = proto::command(ccmd::QUEUE, pqu::REQ_SIZE);
        put_u32(&mut req, pqu::TYPE, pqu::CREATE);
        put_u32(&mut req, pqu::ARG_NODE, node);
        put_u32(&mut req, pqu::ARG_TYPE, ty);
        put_u32(&mut req, pqu::ARG_PERCENTAGE, pct);
        put_u64(&mut req, pqu::ARG_PRIORITY, prio as u64);
        put_u32(&mut req, pqu::ARG_SDMA_ENGINE, engine);
        put_u64(&mut req, pqu::ARG_QUEUE_ADDRESS, ring);
        put_u64(&mut req, pqu::ARG_QUEUE_SIZE, ring_size);
        put_u64(&mut req, pqu::ARG_EVENT, host_event);
        put_u64(&mut req, pqu::ARG_WPTR_AQL, aql_ptrs.0);
        put_u64(&mut req, pqu::ARG_RPTR_AQL, aql_ptrs.1);
        put_u64(&mut req, pqu::BLOB_ID, blob);
        put_u64(&mut req, pqu::RW_PTR_BLOB_ID, rw_blob);
        put_u64(&mut req, pqu::DOORBELL_BLOB_ID, db_blob);
        let r = self.exec(&mut req, pqu::RSP_SIZE)?;
        let vq = &r[pqu::RSP_VQUEUE..pqu::RSP_VQUEUE + pqu::VQ_SIZE];
        let g = |o| get_u64(vq, o).unwrap_or(0);
        let doorbell = g(pqu::VQ_HOST_DOORBELL);
        let qb = self.t.create_blob(blob, ring_size)?;
        let cleanup = |s: &Guest, e: Status| {
            let _ = s.t.destroy_blob(qb.res_id);
            Err(e)
        };
        if db_blob != 0 {
            let base = doorbell - g(pqu::VQ_HOST_DOORBELL_OFFSET);
            let b = match self.t.create_blob(db_blob, 0) {
                Ok(b) => b,
                Err(e) => return cleanup(self, e),
            };
            if let Err(e) = self.t.map_blob(&b, base, b.size) {
                let _ = self.t.destroy_blob(b.res_id);
                return cleanup(self, e);
            }
            self.doorbells.lock().unwrap_or_else(|e| e.into_inner()).insert(node, (b.res_id, base, b.size));
        }
        let (mut wptr, mut rptr, mut rw) = aql_ptrs_tuple(aql_ptrs);
        if rw_blob != 0 {
            let b = match self.t.create_blob(rw_blob, 0x1000) {
                Ok(b) => b,
                Err(e) => return cleanup(self, e),
            };
            let at = match self.t.map_blob(&b, 0, 0x1000) {
                Ok(a) => a,
                Err(e) => {
                    let _ = self.t.destroy_blob(b.res_id);
                    return cleanup(self, e);
                }
            };
            wptr = at + g(pqu::VQ_HOST_WRITE_OFFSET);
            rptr = at + g(pqu::VQ_HOST_READ_OFFSET);
            rw = Some((b.res_id, at, 0x1000));
        }
        let id = self.next_queue.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.queues.lock().unwrap_or_else(|e| e.into_inner()).insert(id, Queue { res_id: qb.res_id, rw });
        Ok((id, doorbell, wptr, rptr))
    }

    pub fn destroy_queue(&self, id: u64) -> Result<(), Status> {
        let q = self.queues.lock().unwrap_or_else(|e| e.into_inner()).remove(&id).ok_or(Status::INVALID_PARAMETER)?;
        let r = self.t.destroy_blob(q.res_id);
        if let Some((res, at, len)) = q.rw {
            unmap(at, len);
            let _ = self.t.destroy_blob(res);
        }
        r
    }

    /// CloseKFD: give back every blob (the host frees the objects) and the response page.
    pub fn close(self) {}
}

fn aql_ptrs_tuple(p: (u64, u64)) -> (u64, u64, Option<(u32, u64, u64)>) {
    (p.0, p.1, None)
}

impl Drop for Guest {
    fn drop(&mut self) {
        let qs: Vec<u64> = self.queues.lock().unwrap_or_else(|e| e.into_inner()).keys().copied().collect();
        for q in qs {
            let _ = self.destroy_queue(q);
        }
        let evs: Vec<usize> = self.events.lock().unwrap_or_else(|e| e.into_inner()).keys().copied().collect();
        for e in evs {
            let _ = self.destroy_event(e);
        }
        let bos: Vec<u64> = self.bos.lock().unwrap_or_else(|e| e.into_inner()).keys().copied().collect();
        for b in bos {
            let _ = self.free_memory(b);
        }
        for (_, (res, at, len)) in self.doorbells.lock().unwrap_or_else(|e| e.into_inner()).drain() {
            unmap(at, len);
            let _ = self.t.destroy_blob(res);
        }
        unmap(self.shmem as u64, self.shmem_len as u64);
        let _ = self.t.destroy_blob(self.shmem_res);
    }
}
