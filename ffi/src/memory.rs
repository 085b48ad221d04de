//! Memory exports: hsaKmtAllocMemory*, FreeMemory, Map/Unmap, Register/Deregister,
//! QueryPointerInfo, IPC (ShareMemory / RegisterSharedHandle), dma-buf export, tile config.
//! Upstream's check order: the open check first, then the arguments.

use crate::boundary::{guard, out};
use crate::generation::{self, read_record, write_record};
use crate::global::{with_ctx, with_ctx_mut};
use hsakmt_core::abi::generation::{Generation, Record};
use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::{KmtResult, Status};
use std::ffi::c_void;

/// A node array from C: NULL or a zero count is INVALID_PARAMETER (upstream's
/// validate_nodeid_array).
///
/// # Safety
/// A non-NULL `nodes` must hold `n` readable elements.
unsafe fn node_array<'a>(n: u64, nodes: *const HSAuint32) -> KmtResult<&'a [u32]> {
    if n == 0 || nodes.is_null() || n > u64::from(u32::MAX) {
        return Err(Status::INVALID_PARAMETER);
    }
    // SAFETY: the C caller promises `n` readable elements.
    Ok(unsafe { std::slice::from_raw_parts(nodes, n as usize) })
}

/// The AllocMemory family.
///
/// # Safety
/// `addr` must be NULL or valid for reads and writes of a pointer (read for a FixedAddress
/// allocation, written with the result).
unsafe fn alloc(
    name: &'static str,
    node: u32,
    anchor: Option<u32>,
    size: u64,
    align: u64,
    flags: HsaMemFlags,
    addr: *mut *mut c_void,
) -> HSAKMT_STATUS {
    guard(name, || {
        crate::published::check_open()?; // the open check first (upstream), without a lock
                                         // SAFETY: the C caller's pointer contract.
        let addr = unsafe { out(addr) }?;
        let fixed = (flags.bf_FixedAddress() != 0).then_some(*addr as u64);
        let va = with_ctx_mut(|c| c.alloc_memory(node, anchor, size, align, flags, fixed))?;
        *addr = va as usize as *mut c_void;
        Ok(())
    })
}

/// # Safety
/// `MemoryAddress` must be NULL or valid for reads and writes of a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtAllocMemory(
    PreferredNode: HSAuint32,
    SizeInBytes: HSAuint64,
    MemFlags: HsaMemFlags,
    MemoryAddress: *mut *mut c_void,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under the same contract.
    unsafe { alloc("hsaKmtAllocMemory", PreferredNode, None, SizeInBytes, 0, MemFlags, MemoryAddress) }
}

/// # Safety
/// `MemoryAddress` must be NULL or valid for reads and writes of a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtAllocMemoryAlign(
    PreferredNode: HSAuint32,
    SizeInBytes: HSAuint64,
    Alignment: HSAuint64,
    MemFlags: HsaMemFlags,
    MemoryAddress: *mut *mut c_void,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under the same contract.
    unsafe { alloc("hsaKmtAllocMemoryAlign", PreferredNode, None, SizeInBytes, Alignment, MemFlags, MemoryAddress) }
}

/// GTT memory owned by `GttAnchorNode`'s GPU, accounted to `PreferredNode`.
///
/// # Safety
/// `MemoryAddress` must be NULL or valid for reads and writes of a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtAllocMemoryHostGtt(
    PreferredNode: HSAuint32,
    GttAnchorNode: HSAuint32,
    SizeInBytes: HSAuint64,
    MemFlags: HsaMemFlags,
    MemoryAddress: *mut *mut c_void,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under the same contract.
    unsafe { alloc("hsaKmtAllocMemoryHostGtt", PreferredNode, Some(GttAnchorNode), SizeInBytes, 0, MemFlags, MemoryAddress) }
}

/// # Safety
/// `MemoryAddress` is an address, never dereferenced here.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtFreeMemory(MemoryAddress: *mut c_void, _SizeInBytes: HSAuint64) -> HSAKMT_STATUS {
    guard("hsaKmtFreeMemory", || with_ctx_mut(|c| c.free_memory(MemoryAddress as u64)))
}

/// # Safety
/// `AvailableBytes` must be NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtAvailableMemory(Node: HSAuint32, AvailableBytes: *mut HSAuint64) -> HSAKMT_STATUS {
    guard("hsaKmtAvailableMemory", || {
        let v = with_ctx(|c| c.available_memory(Node))?;
        // SAFETY: the C caller's pointer contract.
        *unsafe { out(AvailableBytes) }? = v;
        Ok(())
    })
}

/// # Safety
/// Addresses are passed through, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSetMemoryPolicy(
    Node: HSAuint32,
    _DefaultPolicy: HSAuint32,
    _AlternatePolicy: HSAuint32,
    _MemoryAddressAlternate: *mut c_void,
    _MemorySizeInBytes: HSAuint64,
) -> HSAKMT_STATUS {
    guard("hsaKmtSetMemoryPolicy", || with_ctx(|c| c.set_memory_policy(Node)))
}

/// # Safety
/// The range must be the caller's memory, which the GPUs may read and write until
/// hsaKmtDeregisterMemory (the KFD checks that it is mapped).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtRegisterMemory(MemoryAddress: *mut c_void, MemorySizeInBytes: HSAuint64) -> HSAKMT_STATUS {
    guard("hsaKmtRegisterMemory", || {
        // SAFETY: the C caller's contract: the range is theirs to share with the GPUs.
        with_ctx_mut(|c| unsafe { c.register_memory(MemoryAddress as u64, MemorySizeInBytes, None, true, false) })
    })
}

/// # Safety
/// As hsaKmtRegisterMemory; `NodeArray` must be NULL or hold `NumberOfNodes` readable
/// elements.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtRegisterMemoryToNodes(
    MemoryAddress: *mut c_void,
    MemorySizeInBytes: HSAuint64,
    NumberOfNodes: HSAuint64,
    NodeArray: *mut HSAuint32,
) -> HSAKMT_STATUS {
    guard("hsaKmtRegisterMemoryToNodes", || {
        crate::published::check_open()?; // the open check first (upstream), without a lock
                                         // SAFETY: the C caller's pointer contract.
        let nodes = unsafe { node_array(NumberOfNodes, NodeArray) }?;
        // SAFETY: the C caller's contract: the range is theirs to share with the GPUs.
        with_ctx_mut(|c| unsafe { c.register_memory(MemoryAddress as u64, MemorySizeInBytes, Some(nodes), true, false) })
    })
}

/// # Safety
/// As hsaKmtRegisterMemory.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtRegisterMemoryWithFlags(
    MemoryAddress: *mut c_void,
    MemorySizeInBytes: HSAuint64,
    MemFlags: HsaMemFlags,
) -> HSAKMT_STATUS {
    guard("hsaKmtRegisterMemoryWithFlags", || {
        crate::published::check_open()?; // the open check first (upstream), without a lock
        let (coarse, ext) = (MemFlags.bf_CoarseGrain() != 0, MemFlags.bf_ExtendedCoherent() != 0);
        if coarse && ext {
            return Err(Status::INVALID_PARAMETER);
        }
        if MemFlags.bf_HostAccess() != 1 || MemFlags.bf_NonPaged() == 1 {
            return Err(Status::NOT_SUPPORTED);
        }
        // SAFETY: the C caller's contract: the range is theirs to share with the GPUs.
        with_ctx_mut(|c| unsafe { c.register_memory(MemoryAddress as u64, MemorySizeInBytes, None, coarse, ext) })
    })
}

/// # Safety
/// `MemoryAddress` is an address, never dereferenced here.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDeregisterMemory(MemoryAddress: *mut c_void) -> HSAKMT_STATUS {
    guard("hsaKmtDeregisterMemory", || with_ctx_mut(|c| c.deregister_memory(MemoryAddress as u64)))
}

/// # Safety
/// `AlternateVAGPU` must be NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtMapMemoryToGPU(
    MemoryAddress: *mut c_void,
    MemorySizeInBytes: HSAuint64,
    AlternateVAGPU: *mut HSAuint64,
) -> HSAKMT_STATUS {
    guard("hsaKmtMapMemoryToGPU", || {
        crate::published::check_open()?; // the open check first (upstream), without a lock
                                         // SAFETY: the C caller's pointer contract (optional out-parameter).
        let alt = unsafe { AlternateVAGPU.as_mut() };
        let v = with_ctx_mut(|c| c.map_memory_to_gpu(MemoryAddress as u64, MemorySizeInBytes, None))?;
        if let Some(alt) = alt {
            *alt = v;
        }
        Ok(())
    })
}

/// # Safety
/// `AlternateVAGPU` must be NULL or writable; `NodeArray` must hold `NumberOfNodes` elements.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtMapMemoryToGPUNodes(
    MemoryAddress: *mut c_void,
    MemorySizeInBytes: HSAuint64,
    AlternateVAGPU: *mut HSAuint64,
    _MemFlags: HsaMemFlags,
    NumberOfNodes: HSAuint64,
    NodeArray: *mut HSAuint32,
) -> HSAKMT_STATUS {
    guard("hsaKmtMapMemoryToGPUNodes", || {
        crate::published::check_open()?; // the open check first (upstream), without a lock
        if MemoryAddress.is_null() {
            return Err(Status::ERROR);
        }
        // SAFETY: the C caller's pointer contract.
        let nodes = unsafe { node_array(NumberOfNodes, NodeArray) }?;
        // SAFETY: the C caller's pointer contract (optional out-parameter).
        let alt = unsafe { AlternateVAGPU.as_mut() };
        let v = with_ctx_mut(|c| c.map_memory_to_gpu(MemoryAddress as u64, MemorySizeInBytes, Some(nodes)))?;
        if let Some(alt) = alt {
            *alt = v;
        }
        Ok(())
    })
}

/// # Safety
/// `MemoryAddress` is an address, never dereferenced here.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtUnmapMemoryToGPU(MemoryAddress: *mut c_void) -> HSAKMT_STATUS {
    guard("hsaKmtUnmapMemoryToGPU", || with_ctx_mut(|c| c.unmap_memory_to_gpu(MemoryAddress as u64)))
}

/// # Safety
/// `PointerInfo` must be NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtQueryPointerInfo(Pointer: *const c_void, PointerInfo: *mut HsaPointerInfo) -> HSAKMT_STATUS {
    guard("hsaKmtQueryPointerInfo", || {
        crate::published::check_open()?; // the open check first (upstream), without a lock
                                         // SAFETY: the C caller's pointer contract.
        let info = unsafe { out(PointerInfo) }?;
        match with_ctx(|c| c.query_pointer_info(Pointer as u64)) {
            Ok(i) => {
                *info = i;
                Ok(())
            }
            Err(s) => {
                // Upstream: an unknown pointer is reported as HSA_POINTER_UNKNOWN.
                *info = zerocopy::FromZeros::new_zeroed();
                info.Type = HSA_POINTER_UNKNOWN;
                Err(s)
            }
        }
    })
}

/// # Safety
/// Both pointers are stored or compared as addresses, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSetMemoryUserData(Pointer: *const c_void, UserData: *mut c_void) -> HSAKMT_STATUS {
    guard("hsaKmtSetMemoryUserData", || with_ctx_mut(|c| c.set_memory_user_data(Pointer as u64, UserData as u64)))
}

/// # Safety
/// `SharedMemoryHandle` must be NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtShareMemory(
    MemoryAddress: *mut c_void,
    SizeInBytes: HSAuint64,
    SharedMemoryHandle: *mut HsaSharedMemoryHandle,
) -> HSAKMT_STATUS {
    guard("hsaKmtShareMemory", || {
        crate::published::check_open()?; // the open check first (upstream), without a lock
                                         // SAFETY: the C caller's pointer contract.
        let dst = unsafe { out(SharedMemoryHandle) }?;
        *dst = with_ctx_mut(|c| c.share_memory(MemoryAddress as u64, SizeInBytes))?;
        Ok(())
    })
}

/// The RegisterSharedHandle family.
///
/// # Safety
/// `h` must be NULL or valid for reads; `addr` and `size` NULL or valid for writes; a
/// non-NULL node array must hold its count of readable elements.
unsafe fn register_shared(
    name: &'static str,
    h: *const HsaSharedMemoryHandle,
    addr: *mut *mut c_void,
    size: *mut HSAuint64,
    nodes: Option<(u64, *const u32)>,
) -> HSAKMT_STATUS {
    guard(name, || {
        crate::published::check_open()?; // the open check first (upstream), without a lock
                                         // SAFETY: the C caller's pointer contract.
        let h = unsafe { h.as_ref() }.ok_or(Status::INVALID_PARAMETER)?;
        // SAFETY: the C caller's pointer contract.
        let addr = unsafe { out(addr) }?;
        // SAFETY: the C caller's pointer contract.
        let size = unsafe { out(size) }?;
        let nodes = match nodes {
            // SAFETY: the C caller's pointer contract.
            Some((n, p)) if !p.is_null() => Some(unsafe { node_array(n, p) }?),
            _ => None,
        };
        let (va, len) = with_ctx_mut(|c| c.register_shared_handle(h, nodes))?;
        *addr = va as usize as *mut c_void;
        *size = len;
        Ok(())
    })
}

/// # Safety
/// Pointers must be NULL or valid (handle readable, outputs writable).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtRegisterSharedHandle(
    SharedMemoryHandle: *const HsaSharedMemoryHandle,
    MemoryAddress: *mut *mut c_void,
    SizeInBytes: *mut HSAuint64,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under the same contract.
    unsafe { register_shared("hsaKmtRegisterSharedHandle", SharedMemoryHandle, MemoryAddress, SizeInBytes, None) }
}

/// # Safety
/// Pointers must be NULL or valid; `NodeArray` holds `NumberOfNodes` elements.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtRegisterSharedHandleToNodes(
    SharedMemoryHandle: *const HsaSharedMemoryHandle,
    MemoryAddress: *mut *mut c_void,
    SizeInBytes: *mut HSAuint64,
    NumberOfNodes: HSAuint64,
    NodeArray: *mut HSAuint32,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under the same contract.
    unsafe {
        register_shared(
            "hsaKmtRegisterSharedHandleToNodes",
            SharedMemoryHandle,
            MemoryAddress,
            SizeInBytes,
            Some((NumberOfNodes, NodeArray)),
        )
    }
}

/// # Safety
/// `DMABufFd` and `Offset` must be NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtExportDMABufHandle(
    MemoryAddress: *mut c_void,
    MemorySizeInBytes: HSAuint64,
    DMABufFd: *mut i32,
    Offset: *mut HSAuint64,
) -> HSAKMT_STATUS {
    guard("hsaKmtExportDMABufHandle", || {
        crate::published::check_open()?; // the open check first (upstream), without a lock
                                         // SAFETY: the C caller's pointer contract.
        let fd = unsafe { out(DMABufFd) }?;
        // SAFETY: the C caller's pointer contract.
        let off = unsafe { out(Offset) }?;
        let (f, o) = with_ctx_mut(|c| c.export_dmabuf(MemoryAddress as u64, MemorySizeInBytes))?;
        *fd = f;
        *off = o;
        Ok(())
    })
}

/// Upstream: deprecated, always NOT_IMPLEMENTED.
///
/// # Safety
/// Nothing is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtProcessVMRead(
    _Pid: HSAuint32,
    _LocalMemoryArray: *mut HsaMemoryRange,
    _LocalMemoryArrayCount: HSAuint64,
    _RemoteMemoryArray: *mut HsaMemoryRange,
    _RemoteMemoryArrayCount: HSAuint64,
    _SizeCopied: *mut HSAuint64,
) -> HSAKMT_STATUS {
    Status::NOT_IMPLEMENTED.0
}

/// Upstream: deprecated, always NOT_IMPLEMENTED.
///
/// # Safety
/// Nothing is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtProcessVMWrite(
    _Pid: HSAuint32,
    _LocalMemoryArray: *mut HsaMemoryRange,
    _LocalMemoryArrayCount: HSAuint64,
    _RemoteMemoryArray: *mut HsaMemoryRange,
    _RemoteMemoryArrayCount: HSAuint64,
    _SizeCopied: *mut HSAuint64,
) -> HSAKMT_STATUS {
    Status::NOT_IMPLEMENTED.0
}

/// Upstream: NOT_IMPLEMENTED on Linux.
///
/// # Safety
/// Nothing is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtMapGraphicHandle(
    _NodeId: HSAuint32,
    _GraphicDeviceHandle: HSAuint64,
    _GraphicResourceHandle: HSAuint64,
    _GraphicResourceOffset: HSAuint64,
    _GraphicResourceSize: HSAuint64,
    _FlatMemoryAddress: *mut HSAuint64,
) -> HSAKMT_STATUS {
    Status::NOT_IMPLEMENTED.0
}

/// Upstream: UnmapMemoryToGPU of the flat address.
#[unsafe(no_mangle)]
pub extern "C" fn hsaKmtUnmapGraphicHandle(_NodeId: HSAuint32, FlatMemoryAddress: HSAuint64, _SizeInBytes: HSAuint64) -> HSAKMT_STATUS {
    guard("hsaKmtUnmapGraphicHandle", || with_ctx_mut(|c| c.unmap_memory_to_gpu(FlatMemoryAddress)))
}

/// A tile-config array from C: empty for a zero count, INVALID_PARAMETER for NULL otherwise.
///
/// # Safety
/// A non-NULL `p` with `n > 0` must be valid for writes of `n` elements, and not aliased by
/// anything else the call uses.
unsafe fn config_array<'a>(p: *mut u32, n: usize) -> KmtResult<&'a mut [u32]> {
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(Status::INVALID_PARAMETER);
    }
    // SAFETY: non-NULL; the caller's `n` writable elements.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

/// # Safety
/// `config` must be NULL or valid; its arrays must hold the counts it states and not overlap
/// it or each other.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetTileConfig(NodeId: HSAuint32, config: *mut HsaGpuTileConfig) -> HSAKMT_STATUS {
    guard("hsaKmtGetTileConfig", || {
        crate::published::check_open()?; // the open check first (upstream), without a lock
                                         // SAFETY: the C caller's pointer contract.
        let cfg = unsafe { out(config) }?;
        let (nt, nm) = (cfg.NumTileConfigs as usize, cfg.NumMacroTileConfigs as usize);
        // SAFETY: the C caller's contract: each array holds the count `config` states.
        let tile = unsafe { config_array(cfg.TileConfig, nt) }?;
        // SAFETY: as above.
        let macro_tile = unsafe { config_array(cfg.MacroTileConfig, nm) }?;
        let (t, m, gb, banks, ranks, _) = with_ctx(|c| c.tile_config(NodeId, tile, macro_tile))?;
        cfg.NumTileConfigs = t;
        cfg.NumMacroTileConfigs = m;
        cfg.GbAddrConfig = gb;
        cfg.NumBanks = banks;
        cfg.NumRanks = ranks;
        Ok(())
    })
}

/// The libdrm_amdgpu device (`amdgpu_device_handle`) of a GPU node's render node, made when the
/// thunk opened it (as upstream). A CPU node, a bad id or no snapshot yet: INVALID_NODE_UNIT. On
/// a model there is no libdrm device: NULL and SUCCESS (upstream's model behaviour). On the
/// kernel without a device (libdrm_amdgpu.so.1 missing, or it refused the render fd):
/// INVALID_HANDLE, upstream's answer when amdgpu_device_initialize failed.
///
/// # Safety
/// `DeviceHandle` must be NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetAMDGPUDeviceHandle(NodeId: HSAuint32, DeviceHandle: *mut HsaAMDGPUDeviceHandle) -> HSAKMT_STATUS {
    guard("hsaKmtGetAMDGPUDeviceHandle", || {
        // Order: the open and node checks, then a NULL destination, then the device itself.
        let handle = with_ctx(|c| c.amdgpu_device_handle(NodeId));
        if let Err(s) = handle {
            if s != Status::INVALID_HANDLE {
                return Err(s);
            }
        }
        // SAFETY: the C caller's pointer contract.
        let dst = unsafe { out(DeviceHandle) }?;
        *dst = handle? as *mut std::ffi::c_void;
        Ok(())
    })
}

/// # Safety
/// `info` must be NULL or valid for reads and writes of generation `g`'s
/// `HsaGraphicsResourceInfo`; `nodes` must hold `n` elements.
unsafe fn register_graphics(name: &'static str, g: Generation, handle: u64, info: *mut u8, n: u64, nodes: *const u32) -> HSAKMT_STATUS {
    guard(name, || {
        crate::published::check_open()?; // the open check first (upstream), without a lock
        if info.is_null() {
            return Err(Status::INVALID_PARAMETER);
        }
        // upstream validates the node array only when one is given
        let nodes = if nodes.is_null() && n == 0 {
            None
        } else {
            // SAFETY: the C caller's pointer contract.
            Some(unsafe { node_array(n, nodes) }?)
        };
        let fd = i32::try_from(handle).map_err(|_| Status::ERROR)?;
        let (va, size, node, md, md_size) = with_ctx_mut(|c| c.register_graphics_handle(fd, nodes))?;
        // SAFETY: non-NULL, and the caller's contract for generation `g`.
        let mut out: HsaGraphicsResourceInfo = unsafe { read_record(g, Record::HsaGraphicsResourceInfo, info) };
        out.MemoryAddress = va as usize as *mut c_void;
        out.SizeInBytes = size;
        out.Metadata = md.cast();
        out.MetadataSizeInBytes = md_size;
        out.NodeId = node;
        // SAFETY: as above.
        unsafe { write_record(g, Record::HsaGraphicsResourceInfo, &out, info) };
        Ok(())
    })
}

/// A graphics resource (a dma-buf fd) imported for the GPUs. Our headers' binding
/// (`hsaKmtRegisterGraphicsHandleToNodes_abi1`): the newest `HsaGraphicsResourceInfo`.
///
/// # Safety
/// `GraphicsResourceInfo` must be NULL or writable; `NodeArray` holds `NumberOfNodes` elements.
#[unsafe(export_name = "hsaKmtRegisterGraphicsHandleToNodes_abi1")]
pub unsafe extern "C" fn hsaKmtRegisterGraphicsHandleToNodes(
    GraphicsResourceHandle: HSAuint64,
    GraphicsResourceInfo: *mut HsaGraphicsResourceInfo,
    NumberOfNodes: HSAuint64,
    NodeArray: *mut HSAuint32,
) -> HSAKMT_STATUS {
    let name = "hsaKmtRegisterGraphicsHandleToNodes";
    // SAFETY: the same contract.
    unsafe { register_graphics(name, Generation::NEWEST, GraphicsResourceHandle, GraphicsResourceInfo.cast(), NumberOfNodes, NodeArray) }
}

/// The plain symbol: the caller's ABI generation's struct (crate::generation).
///
/// # Safety
/// As [`hsaKmtRegisterGraphicsHandleToNodes`], for the caller's generation's struct.
#[unsafe(export_name = "hsaKmtRegisterGraphicsHandleToNodes")]
pub unsafe extern "C" fn plain_hsaKmtRegisterGraphicsHandleToNodes(
    GraphicsResourceHandle: HSAuint64,
    GraphicsResourceInfo: *mut HsaGraphicsResourceInfo,
    NumberOfNodes: HSAuint64,
    NodeArray: *mut HSAuint32,
) -> HSAKMT_STATUS {
    const NAME: &str = "hsaKmtRegisterGraphicsHandleToNodes";
    let (name, g) = (NAME, generation::for_function!(NAME));
    // SAFETY: the same contract, for generation `g`.
    unsafe { register_graphics(name, g, GraphicsResourceHandle, GraphicsResourceInfo.cast(), NumberOfNodes, NodeArray) }
}

/// As RegisterGraphicsHandleToNodes; the register flags only choose the VA kind upstream,
/// and every import here gets an SVM address. Our headers' binding (`…Ext_abi1`).
///
/// # Safety
/// As [`hsaKmtRegisterGraphicsHandleToNodes`].
#[unsafe(export_name = "hsaKmtRegisterGraphicsHandleToNodesExt_abi1")]
pub unsafe extern "C" fn hsaKmtRegisterGraphicsHandleToNodesExt(
    GraphicsResourceHandle: HSAuint64,
    GraphicsResourceInfo: *mut HsaGraphicsResourceInfo,
    NumberOfNodes: HSAuint64,
    NodeArray: *mut HSAuint32,
    _RegisterFlags: HSA_REGISTER_MEM_FLAGS,
) -> HSAKMT_STATUS {
    let name = "hsaKmtRegisterGraphicsHandleToNodesExt";
    // SAFETY: the same contract.
    unsafe { register_graphics(name, Generation::NEWEST, GraphicsResourceHandle, GraphicsResourceInfo.cast(), NumberOfNodes, NodeArray) }
}

/// The plain symbol: the caller's ABI generation's struct (crate::generation).
///
/// # Safety
/// As [`hsaKmtRegisterGraphicsHandleToNodes`], for the caller's generation's struct.
#[unsafe(export_name = "hsaKmtRegisterGraphicsHandleToNodesExt")]
pub unsafe extern "C" fn plain_hsaKmtRegisterGraphicsHandleToNodesExt(
    GraphicsResourceHandle: HSAuint64,
    GraphicsResourceInfo: *mut HsaGraphicsResourceInfo,
    NumberOfNodes: HSAuint64,
    NodeArray: *mut HSAuint32,
    _RegisterFlags: HSA_REGISTER_MEM_FLAGS,
) -> HSAKMT_STATUS {
    const NAME: &str = "hsaKmtRegisterGraphicsHandleToNodesExt";
    let (name, g) = (NAME, generation::for_function!(NAME));
    // SAFETY: the same contract, for generation `g`.
    unsafe { register_graphics(name, g, GraphicsResourceHandle, GraphicsResourceInfo.cast(), NumberOfNodes, NodeArray) }
}
