//! The `vhsaKmt*` exports (`hsakmt_virtio.h`): the guest side of the VirtIO transport, a thin
//! layer over `hsakmt_virtio::guest::Guest` (docs/virtio.md).
//!
//! The guest finds its host as [`find_host`] says: a loopback host's Unix socket named by
//! `HSAKMT_VIRTIO_SOCKET` (`hsakmt-virtio-host`), the render node `HSAKMT_VIRTIO_RENDER_NODE`
//! names, or the first virtio-gpu render node with the HSAKMT capset (the DRM transport).
//! Structs are written in the layouts of our headers (the newest
//! generation), converted from the wire's. Functions the protocol does not carry are the
//! generated NOT_SUPPORTED stubs (gen_exports.rs).

use crate::boundary::{guard, guard_status, out, out_slice};
use hsakmt_core::abi::generation::Record;
use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::Status;
use hsakmt_virtio::drm::{self, model::ModelRenderNode, DrmTransport};
use hsakmt_virtio::guest::{Guest, Loopback, Transport};
use hsakmt_virtio::proto::{self, ccmd, event as pe, query as pq, WIRE_GENERATION};
use std::sync::{Arc, Mutex};

/// The environment variable naming the loopback host's socket.
pub const SOCKET_ENV: &str = "HSAKMT_VIRTIO_SOCKET";

/// The host, by the first rule that applies: `HSAKMT_VIRTIO_SOCKET` set: the loopback host
/// listening there; `HSAKMT_VIRTIO_RENDER_NODE` set: that render node only (`model:<socket>`:
/// the model of a virtio-gpu render node whose device is the loopback host at `<socket>`, for
/// tests); otherwise the first `/dev/dri/renderD*` that is a virtio-gpu node with the HSAKMT
/// capset. None: KERNEL_IO_CHANNEL_NOT_OPENED.
fn find_host() -> Result<Box<dyn Transport>, Status> {
    use std::path::Path;
    if let Some(path) = std::env::var_os(SOCKET_ENV) {
        return Ok(Box::new(Loopback::connect(Path::new(&path))?));
    }
    if let Some(node) = std::env::var_os(drm::RENDER_NODE_ENV) {
        if let Some(sock) = node.to_str().and_then(|s| s.strip_prefix("model:")) {
            let m = ModelRenderNode::connect(Path::new(sock))?;
            return Ok(Box::new(DrmTransport::open(Box::new(m))?));
        }
        return Ok(Box::new(drm::open_render_node(Path::new(&node))?));
    }
    Ok(Box::new(drm::find_render_node(Path::new("/dev/dri"))?))
}

/// The open guest and how often it was opened (as hsaKmtOpenKFD, opens nest).
static GUEST: Mutex<Option<(Arc<Guest>, u32)>> = Mutex::new(None);

fn guest() -> Result<Arc<Guest>, Status> {
    GUEST.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map(|(g, _)| g.clone()).ok_or(Status::KERNEL_IO_CHANNEL_NOT_OPENED)
}

/// Copy `src` over the `T` at `dst` (at most `size_of::<T>()` bytes).
///
/// # Safety
/// `dst` must be valid for writes of a `T`, a plain ABI struct of integers and pointers.
unsafe fn write_bytes<T>(dst: *mut T, src: &[u8]) {
    let n = src.len().min(std::mem::size_of::<T>());
    // SAFETY: `n` bytes fit in `*dst` (caller's contract); `src` is ours.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst.cast::<u8>(), n) };
}

/// One wire record converted to ours (the newest layout).
fn from_wire(r: Record, wire: &[u8]) -> Vec<u8> {
    let mut ours = vec![0u8; r.newest_size()];
    match WIRE_GENERATION.layout(r) {
        Some(l) if wire.len() >= l.size => l.from_old(&wire[..l.size], &mut ours),
        _ => {
            let n = ours.len().min(wire.len());
            ours[..n].copy_from_slice(&wire[..n]);
        }
    }
    ours
}

#[unsafe(no_mangle)]
pub extern "C" fn vhsaKmtOpenKFD() -> HSAKMT_STATUS {
    guard_status("vhsaKmtOpenKFD", || {
        let mut g = GUEST.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, n)) = g.as_mut() {
            *n += 1;
            return Ok(Status::KERNEL_ALREADY_OPENED);
        }
        let t = find_host().inspect_err(|e| {
            crate::log::error(format_args!("vhsaKmtOpenKFD: no VirtIO host ({e:?}): see docs/virtio.md\n"));
        })?;
        *g = Some((Arc::new(Guest::open(t)?), 1));
        Ok(Status::SUCCESS)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn vhsaKmtCloseKFD() -> HSAKMT_STATUS {
    guard("vhsaKmtCloseKFD", || {
        let last = {
            let mut g = GUEST.lock().unwrap_or_else(|e| e.into_inner());
            let (_, n) = g.as_mut().ok_or(Status::KERNEL_IO_CHANNEL_NOT_OPENED)?;
            *n -= 1;
            if *n == 0 {
                g.take()
            } else {
                None
            }
        };
        // The last close gives back every blob (the host frees what they stand for), outside
        // the lock; a call still running on another thread keeps the guest until it returns.
        drop(last);
        Ok(())
    })
}

/// # Safety
/// `v` must be NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vhsaKmtGetVersion(v: *mut HsaVersionInfo) -> HSAKMT_STATUS {
    guard("vhsaKmtGetVersion", || {
        let g = guest()?;
        // SAFETY: the C caller's pointer contract.
        let v = unsafe { out(v) }?;
        let w = g.query_u(pq::GET_VER, 0)?;
        v.KernelInterfaceMajorVersion = proto::get_u32(&w, 0).unwrap_or(0);
        v.KernelInterfaceMinorVersion = proto::get_u32(&w, 4).unwrap_or(0);
        Ok(())
    })
}

/// # Safety
/// `SystemProperties` must be NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vhsaKmtAcquireSystemProperties(SystemProperties: *mut HsaSystemProperties) -> HSAKMT_STATUS {
    guard("vhsaKmtAcquireSystemProperties", || {
        let g = guest()?;
        let dst = SystemProperties;
        // SAFETY: the C caller's pointer contract (NULL is checked).
        unsafe { out(dst) }?;
        let w = g.query_u(pq::GET_SYS_PROP, 0)?;
        // SAFETY: checked non-NULL above; the host sends the struct in our layout.
        unsafe { write_bytes(dst, &w) };
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn vhsaKmtReleaseSystemProperties() -> HSAKMT_STATUS {
    guard("vhsaKmtReleaseSystemProperties", || guest()?.query_u(pq::REL_SYS_PROP, 0).map(|_| ()))
}

/// # Safety
/// `NodeProperties` must be NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vhsaKmtGetNodeProperties(NodeId: HSAuint32, NodeProperties: *mut HsaNodeProperties) -> HSAKMT_STATUS {
    guard("vhsaKmtGetNodeProperties", || {
        let g = guest()?;
        // SAFETY: the C caller's pointer contract (NULL is checked).
        unsafe { out(NodeProperties) }?;
        let w = g.query_u(pq::GET_NODE_PROP, NodeId as u64)?;
        // SAFETY: checked non-NULL; converted to our layout.
        unsafe { write_bytes(NodeProperties, &from_wire(Record::HsaNodeProperties, &w)) };
        Ok(())
    })
}

/// # Safety
/// `MemoryProperties` must be NULL or valid for writes of `NumBanks` elements.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vhsaKmtGetNodeMemoryProperties(
    NodeId: HSAuint32,
    NumBanks: HSAuint32,
    MemoryProperties: *mut HsaMemoryProperties,
) -> HSAKMT_STATUS {
    guard("vhsaKmtGetNodeMemoryProperties", || {
        let g = guest()?;
        // SAFETY: the C caller's pointer contract (NULL is checked).
        let dst = unsafe { out_slice(MemoryProperties, NumBanks as usize) }?;
        let size = std::mem::size_of::<HsaMemoryProperties>();
        let w = g.query_array(pq::GET_NOD_MEM_PROP, NodeId, NumBanks, 0, NumBanks, size)?;
        for (i, d) in dst.iter_mut().enumerate() {
            if let Some(b) = w.get(i * size..(i + 1) * size) {
                // SAFETY: one element of the caller's array; the struct is not grown.
                unsafe { write_bytes(d as *mut HsaMemoryProperties, b) };
            }
        }
        Ok(())
    })
}

/// # Safety
/// `CacheProperties` must be NULL or valid for writes of `NumCaches` elements.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vhsaKmtGetNodeCacheProperties(
    NodeId: HSAuint32,
    ProcessorId: HSAuint32,
    NumCaches: HSAuint32,
    CacheProperties: *mut HsaCacheProperties,
) -> HSAKMT_STATUS {
    guard("vhsaKmtGetNodeCacheProperties", || {
        let g = guest()?;
        // SAFETY: the C caller's pointer contract (NULL is checked).
        let dst = unsafe { out_slice(CacheProperties, NumCaches as usize) }?;
        let size = proto::wire_size(Record::HsaCacheProperties);
        let w = g.query_array(pq::GET_NOD_CACHE_PROP, NodeId, ProcessorId, NumCaches, NumCaches, size)?;
        for (i, d) in dst.iter_mut().enumerate() {
            if let Some(b) = w.get(i * size..(i + 1) * size) {
                // SAFETY: one element of the caller's array, in our layout.
                unsafe { write_bytes(d as *mut HsaCacheProperties, &from_wire(Record::HsaCacheProperties, b)) };
            }
        }
        Ok(())
    })
}

/// # Safety
/// `IoLinkProperties` must be NULL or valid for writes of `NumIoLinks` elements.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vhsaKmtGetNodeIoLinkProperties(
    NodeId: HSAuint32,
    NumIoLinks: HSAuint32,
    IoLinkProperties: *mut HsaIoLinkProperties,
) -> HSAKMT_STATUS {
    guard("vhsaKmtGetNodeIoLinkProperties", || {
        let g = guest()?;
        // SAFETY: the C caller's pointer contract (NULL is checked).
        let dst = unsafe { out_slice(IoLinkProperties, NumIoLinks as usize) }?;
        let size = proto::wire_size(Record::HsaIoLinkProperties);
        let w = g.query_array(pq::GET_NOD_IO_LINK_PROP, NodeId, NumIoLinks, 0, NumIoLinks, size)?;
        for (i, d) in dst.iter_mut().enumerate() {
            if let Some(b) = w.get(i * size..(i + 1) * size) {
                // SAFETY: one element of the caller's array, in our layout.
                unsafe { write_bytes(d as *mut HsaIoLinkProperties, &from_wire(Record::HsaIoLinkProperties, b)) };
            }
        }
        Ok(())
    })
}

/// # Safety
/// `Counters` must be NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vhsaKmtGetClockCounters(NodeId: HSAuint32, Counters: *mut HsaClockCounters) -> HSAKMT_STATUS {
    guard("vhsaKmtGetClockCounters", || {
        let g = guest()?;
        // SAFETY: the C caller's pointer contract (NULL is checked).
        unsafe { out(Counters) }?;
        let w = g.query_u(pq::GET_CLOCK_COUNTERS, NodeId as u64)?;
        // SAFETY: checked non-NULL; the struct is not grown.
        unsafe { write_bytes(Counters, &w) };
        Ok(())
    })
}

/// # Safety
/// `enable` must be NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vhsaKmtGetXNACKMode(enable: *mut HSAint32) -> HSAKMT_STATUS {
    guard("vhsaKmtGetXNACKMode", || {
        let g = guest()?;
        // SAFETY: the C caller's pointer contract.
        let e = unsafe { out(enable) }?;
        *e = proto::get_u32(&g.query_u(pq::GET_XNACK_MODE, 0)?, 0).unwrap_or(0) as i32;
        Ok(())
    })
}

/// The guest's `r_debug` means nothing to the host: it is not sent (as upstream's guest).
#[unsafe(no_mangle)]
pub extern "C" fn vhsaKmtRuntimeEnable(_rDebug: *mut std::ffi::c_void, setupTtmp: bool) -> HSAKMT_STATUS {
    guard("vhsaKmtRuntimeEnable", || {
        let g = guest()?;
        let mut req = proto::command(ccmd::QUERY_INFO, pq::REQ_SIZE);
        proto::put_u32(&mut req, pq::TYPE, pq::RUN_TIME_ENABLE);
        req[pq::ARG_SETUP_TTMP] = setupTtmp as u8;
        g.exec(&mut req, pq::RSP_SIZE).map(|_| ())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn vhsaKmtRuntimeDisable() -> HSAKMT_STATUS {
    guard("vhsaKmtRuntimeDisable", || guest()?.query_u(pq::RUN_TIME_DISABLE, 0).map(|_| ()))
}

/// # Safety
/// `caps_mask` must be NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vhsaKmtGetRuntimeCapabilities(caps_mask: *mut HSAuint32) -> HSAKMT_STATUS {
    guard("vhsaKmtGetRuntimeCapabilities", || {
        let g = guest()?;
        // SAFETY: the C caller's pointer contract.
        let c = unsafe { out(caps_mask) }?;
        *c = proto::get_u32(&g.query_u(pq::GET_RUNTIME_CAPS, 0)?, 0).unwrap_or(0);
        Ok(())
    })
}

// ---- memory ----

/// # Safety
/// `MemoryAddress` must be NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vhsaKmtAllocMemory(
    PreferredNode: HSAuint32,
    SizeInBytes: HSAuint64,
    MemFlags: HsaMemFlags,
    MemoryAddress: *mut *mut std::ffi::c_void,
) -> HSAKMT_STATUS {
    guard("vhsaKmtAllocMemory", || {
        let g = guest()?;
        // SAFETY: the C caller's pointer contract.
        let dst = unsafe { out(MemoryAddress) }?;
        if SizeInBytes == 0 {
            return Err(Status::INVALID_PARAMETER);
        }
        let flags = MemFlags.Value;
        *dst = g.alloc_memory(PreferredNode, SizeInBytes, flags)? as *mut _;
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn vhsaKmtFreeMemory(MemoryAddress: *mut std::ffi::c_void, _SizeInBytes: HSAuint64) -> HSAKMT_STATUS {
    guard("vhsaKmtFreeMemory", || {
        let g = guest()?;
        if MemoryAddress.is_null() {
            return Err(Status::INVALID_PARAMETER);
        }
        g.free_memory(MemoryAddress as u64)
    })
}

/// # Safety
/// `AlternateVAGPU` must be NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vhsaKmtMapMemoryToGPU(
    MemoryAddress: *mut std::ffi::c_void,
    MemorySizeInBytes: HSAuint64,
    AlternateVAGPU: *mut HSAuint64,
) -> HSAKMT_STATUS {
    guard("vhsaKmtMapMemoryToGPU", || {
        let g = guest()?;
        if MemoryAddress.is_null() {
            return Err(Status::INVALID_PARAMETER);
        }
        let va = g.map_memory(MemoryAddress as u64, MemorySizeInBytes, None)?;
        // SAFETY: the C caller's pointer contract; NULL means "not wanted".
        if let Some(a) = unsafe { AlternateVAGPU.as_mut() } {
            *a = va;
        }
        Ok(())
    })
}

/// # Safety
/// `AlternateVAGPU` must be NULL or valid for writes; `NodeArray` valid for `NumberOfNodes` reads.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vhsaKmtMapMemoryToGPUNodes(
    MemoryAddress: *mut std::ffi::c_void,
    MemorySizeInBytes: HSAuint64,
    AlternateVAGPU: *mut HSAuint64,
    _MemMapFlags: HsaMemFlags,
    NumberOfNodes: HSAuint64,
    NodeArray: *mut HSAuint32,
) -> HSAKMT_STATUS {
    guard("vhsaKmtMapMemoryToGPUNodes", || {
        let g = guest()?;
        if MemoryAddress.is_null() || NodeArray.is_null() || NumberOfNodes == 0 || NumberOfNodes > proto::memory::MAX_NODES {
            return Err(Status::INVALID_PARAMETER);
        }
        // SAFETY: the caller promises `NumberOfNodes` readable ids (non-NULL, bounded above).
        let nodes = unsafe { std::slice::from_raw_parts(NodeArray, NumberOfNodes as usize) };
        let va = g.map_memory(MemoryAddress as u64, MemorySizeInBytes, Some(nodes))?;
        // SAFETY: the C caller's pointer contract; NULL means "not wanted".
        if let Some(a) = unsafe { AlternateVAGPU.as_mut() } {
            *a = va;
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn vhsaKmtUnmapMemoryToGPU(MemoryAddress: *mut std::ffi::c_void) -> HSAKMT_STATUS {
    guard("vhsaKmtUnmapMemoryToGPU", || {
        let g = guest()?;
        if MemoryAddress.is_null() {
            return Err(Status::INVALID_PARAMETER);
        }
        g.unmap_memory(MemoryAddress as u64)
    })
}

/// # Safety
/// `AvailableBytes` must be NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vhsaKmtAvailableMemory(Node: HSAuint32, AvailableBytes: *mut HSAuint64) -> HSAKMT_STATUS {
    guard("vhsaKmtAvailableMemory", || {
        let g = guest()?;
        // SAFETY: the C caller's pointer contract.
        let a = unsafe { out(AvailableBytes) }?;
        *a = g.available_memory(Node)?;
        Ok(())
    })
}

/// # Safety
/// `PointerInfo` must be NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vhsaKmtQueryPointerInfo(Pointer: *const std::ffi::c_void, PointerInfo: *mut HsaPointerInfo) -> HSAKMT_STATUS {
    guard("vhsaKmtQueryPointerInfo", || {
        let g = guest()?;
        // SAFETY: the C caller's pointer contract (NULL is checked).
        unsafe { out(PointerInfo) }?;
        if Pointer.is_null() {
            return Err(Status::INVALID_PARAMETER);
        }
        let (info, st) = g.pointer_info(Pointer as u64)?;
        // SAFETY: checked non-NULL; the wire struct is ours (packed 4, MappedNodes pointing
        // at the guest's copy of the ids).
        unsafe { write_bytes(PointerInfo, &info) };
        if st == Status::SUCCESS {
            Ok(())
        } else {
            Err(st)
        }
    })
}

// ---- events ----

/// # Safety
/// `EventDesc` must be NULL or valid for reads, `Event` NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vhsaKmtCreateEvent(
    EventDesc: *mut HsaEventDescriptor,
    ManualReset: bool,
    IsSignaled: bool,
    Event: *mut *mut HsaEvent,
) -> HSAKMT_STATUS {
    guard("vhsaKmtCreateEvent", || {
        let g = guest()?;
        if EventDesc.is_null() {
            return Err(Status::INVALID_PARAMETER);
        }
        // SAFETY: the C caller's pointer contract.
        let dst = unsafe { out(Event) }?;
        let mut desc = [0u8; pe::DESC_SIZE];
        let n = pe::DESC_SIZE.min(std::mem::size_of::<HsaEventDescriptor>());
        // SAFETY: `EventDesc` is non-NULL and readable for its struct (caller's contract).
        unsafe { std::ptr::copy_nonoverlapping(EventDesc.cast::<u8>(), desc.as_mut_ptr(), n) };
        *dst = g.create_event(&desc, ManualReset, IsSignaled)? as *mut HsaEvent;
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn vhsaKmtDestroyEvent(Event: *mut HsaEvent) -> HSAKMT_STATUS {
    guard("vhsaKmtDestroyEvent", || {
        if Event.is_null() {
            return Err(Status::INVALID_HANDLE);
        }
        guest()?.destroy_event(Event as usize)
    })
}

fn event_op(name: &'static str, ev: *mut HsaEvent, ty: u32) -> HSAKMT_STATUS {
    guard(name, || {
        if ev.is_null() {
            return Err(Status::INVALID_HANDLE);
        }
        guest()?.event_op(ev as usize, ty)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn vhsaKmtSetEvent(Event: *mut HsaEvent) -> HSAKMT_STATUS {
    event_op("vhsaKmtSetEvent", Event, pe::SET)
}

#[unsafe(no_mangle)]
pub extern "C" fn vhsaKmtResetEvent(Event: *mut HsaEvent) -> HSAKMT_STATUS {
    event_op("vhsaKmtResetEvent", Event, pe::RESET)
}

#[unsafe(no_mangle)]
pub extern "C" fn vhsaKmtQueryEventState(Event: *mut HsaEvent) -> HSAKMT_STATUS {
    event_op("vhsaKmtQueryEventState", Event, pe::QUERY_STATE)
}

/// # Safety
/// `Events` valid for `NumEvents` reads; `event_age` NULL or valid for `NumEvents` writes.
unsafe fn wait(
    name: &'static str,
    Events: *mut *mut HsaEvent,
    NumEvents: HSAuint32,
    WaitOnAll: bool,
    Milliseconds: HSAuint32,
    event_age: *mut u64,
) -> HSAKMT_STATUS {
    guard(name, || {
        let g = guest()?;
        if Events.is_null() || NumEvents == 0 || NumEvents > 4096 {
            return Err(Status::INVALID_PARAMETER);
        }
        // SAFETY: the caller promises `NumEvents` readable event pointers (non-NULL, bounded).
        let evs = unsafe { std::slice::from_raw_parts(Events, NumEvents as usize) };
        let evs: Vec<usize> = evs.iter().map(|e| *e as usize).collect();
        // SAFETY: as above for the ages, when given.
        let ages = if event_age.is_null() { None } else { Some(unsafe { std::slice::from_raw_parts_mut(event_age, NumEvents as usize) }) };
        g.wait(&evs, WaitOnAll, Milliseconds, ages)
    })
}

/// # Safety
/// `Events` must be valid for `NumEvents` reads.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vhsaKmtWaitOnMultipleEvents(
    Events: *mut *mut HsaEvent,
    NumEvents: HSAuint32,
    WaitOnAll: bool,
    Milliseconds: HSAuint32,
) -> HSAKMT_STATUS {
    // SAFETY: the same contract.
    unsafe { wait("vhsaKmtWaitOnMultipleEvents", Events, NumEvents, WaitOnAll, Milliseconds, std::ptr::null_mut()) }
}

/// # Safety
/// `Events` valid for `NumEvents` reads; `event_age` NULL or valid for `NumEvents` writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vhsaKmtWaitOnMultipleEvents_Ext(
    Events: *mut *mut HsaEvent,
    NumEvents: HSAuint32,
    WaitOnAll: bool,
    Milliseconds: HSAuint32,
    event_age: *mut u64,
) -> HSAKMT_STATUS {
    // SAFETY: the same contract.
    unsafe { wait("vhsaKmtWaitOnMultipleEvents_Ext", Events, NumEvents, WaitOnAll, Milliseconds, event_age) }
}

#[unsafe(no_mangle)]
pub extern "C" fn vhsaKmtWaitOnEvent(Event: *mut HsaEvent, Milliseconds: HSAuint32) -> HSAKMT_STATUS {
    let mut e = Event;
    if e.is_null() {
        return Status::INVALID_HANDLE.0;
    }
    // SAFETY: one readable event pointer, no ages.
    unsafe { wait("vhsaKmtWaitOnEvent", &mut e, 1, true, Milliseconds, std::ptr::null_mut()) }
}

/// # Safety
/// `event_age` must be NULL or valid for reads and writes of one u64.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vhsaKmtWaitOnEvent_Ext(Event: *mut HsaEvent, Milliseconds: HSAuint32, event_age: *mut u64) -> HSAKMT_STATUS {
    let mut e = Event;
    if e.is_null() {
        return Status::INVALID_HANDLE.0;
    }
    // SAFETY: one readable event pointer; the age is the caller's.
    unsafe { wait("vhsaKmtWaitOnEvent_Ext", &mut e, 1, true, Milliseconds, event_age) }
}

#[unsafe(no_mangle)]
pub extern "C" fn vhsaKmtSetTrapHandler(
    NodeId: HSAuint32,
    TrapHandlerBaseAddress: *mut std::ffi::c_void,
    TrapHandlerSizeInBytes: HSAuint64,
    TrapBufferBaseAddress: *mut std::ffi::c_void,
    TrapBufferSizeInBytes: HSAuint64,
) -> HSAKMT_STATUS {
    guard("vhsaKmtSetTrapHandler", || {
        let g = guest()?;
        let mut req = proto::command(ccmd::EVENT, pe::REQ_SIZE);
        proto::put_u32(&mut req, pe::TYPE, pe::SET_TRAP);
        proto::put_u64(&mut req, pe::ARG, TrapHandlerBaseAddress as u64);
        proto::put_u64(&mut req, pe::ARG + 8, TrapHandlerSizeInBytes);
        proto::put_u64(&mut req, pe::ARG + 16, TrapBufferBaseAddress as u64);
        proto::put_u64(&mut req, pe::ARG + 24, TrapBufferSizeInBytes);
        proto::put_u32(&mut req, pe::ARG_TRAP_NODE, NodeId);
        g.exec(&mut req, pe::RSP_SIZE).map(|_| ())
    })
}

// ---- queues ----

/// # Safety
/// `QueueResource` must be NULL or valid for reads and writes; `Event` NULL or an event of
/// this guest.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // the C signature is fixed
pub unsafe extern "C" fn vhsaKmtCreateQueueExt(
    NodeId: HSAuint32,
    Type: HSA_QUEUE_TYPE,
    QueuePercentage: HSAuint32,
    Priority: HSA_QUEUE_PRIORITY,
    SdmaEngineId: HSAuint32,
    QueueAddress: *mut std::ffi::c_void,
    QueueSizeInBytes: HSAuint64,
    Event: *mut HsaEvent,
    QueueResource: *mut HsaQueueResource,
) -> HSAKMT_STATUS {
    guard("vhsaKmtCreateQueueExt", || {
        let g = guest()?;
        // SAFETY: the C caller's pointer contract.
        let r = unsafe { out(QueueResource) }?;
        // SAFETY: the unions hold pointers or their u64 values; AQL queues pass their
        // read/write pointers in (as the classic call).
        let aql = unsafe { (r.__anon_union_2.QueueWptrValue, r.__anon_union_3.QueueRptrValue) };
        let (id, doorbell, wptr, rptr) = g.create_queue(
            NodeId,
            Type,
            QueuePercentage,
            Priority,
            SdmaEngineId,
            QueueAddress as u64,
            QueueSizeInBytes,
            Event as usize,
            aql,
        )?;
        r.QueueId = id;
        r.__anon_union_1.QueueDoorBell = doorbell;
        r.__anon_union_2.QueueWptrValue = wptr;
        r.__anon_union_3.QueueRptrValue = rptr;
        Ok(())
    })
}

/// # Safety
/// As [`vhsaKmtCreateQueueExt`].
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // the C signature is fixed
pub unsafe extern "C" fn vhsaKmtCreateQueue(
    NodeId: HSAuint32,
    Type: HSA_QUEUE_TYPE,
    QueuePercentage: HSAuint32,
    Priority: HSA_QUEUE_PRIORITY,
    QueueAddress: *mut std::ffi::c_void,
    QueueSizeInBytes: HSAuint64,
    Event: *mut HsaEvent,
    QueueResource: *mut HsaQueueResource,
) -> HSAKMT_STATUS {
    // SAFETY: the same contract; engine 0 (any).
    unsafe { vhsaKmtCreateQueueExt(NodeId, Type, QueuePercentage, Priority, 0, QueueAddress, QueueSizeInBytes, Event, QueueResource) }
}

#[unsafe(no_mangle)]
pub extern "C" fn vhsaKmtDestroyQueue(QueueId: HSA_QUEUEID) -> HSAKMT_STATUS {
    guard("vhsaKmtDestroyQueue", || guest()?.destroy_queue(QueueId))
}
