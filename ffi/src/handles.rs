//! The handle API of the newest hsakmt.h: hsaKmtHandleImport / HandleExport, MemoryVaMap /
//! MemoryVaUnmap, MemoryCpuMap, MemHandleFree(PreserveMetadata), MemoryGetCpuAddr.
//!
//! Upstream does these with libdrm's amdgpu_bo_* calls; core does them through the port's DRM
//! methods. `HsaMemoryObjectHandle` values handed out are tokens (never pointers), so a forged or
//! stale handle is only "not found". Statuses as upstream: NULL descriptor or result →
//! INVALID_HANDLE; only DMA_BUF handles are supported (FABRIC, GEM_FLINK, KMS: NOT_SUPPORTED);
//! a failed export INVALID_HANDLE; every other failure ERROR (a NULL memory handle included).
//! BO metadata (the `IPCHandle` import flag) is not supported: NOT_SUPPORTED.
//!
//! The descriptors' `device_handle` is not required (upstream's newest version refuses NULL):
//! GetAMDGPUDeviceHandle gives NULL on a model, and these calls go through the port's DRM ioctls
//! rather than libdrm, so the handle is not looked at. An import goes to the GPU the dma-buf
//! belongs to (GET_DMABUF_INFO), else the first GPU, and
//! MemoryVaMap / VaUnmap map in that GPU's VM (a NodeId of another node is ERROR).

use crate::boundary::{guard, out};
use crate::global::with_ctx_mut;
use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::Status;
use std::ffi::c_void;

fn token(h: HsaMemoryObjectHandle) -> Result<u64, Status> {
    if h.is_null() {
        return Err(Status::ERROR);
    }
    Ok(h as usize as u64)
}

fn handle(token: u64) -> HsaMemoryObjectHandle {
    token as usize as HsaMemoryObjectHandle
}

/// Import a dma-buf (`ImportDesc->dmabuf_fd`) as a memory object of the GPU it belongs to.
///
/// # Safety
/// `ImportDesc` must be NULL or readable, `ImportResult` NULL or writable, `Flags` NULL or
/// readable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtHandleImport(
    ImportDesc: *const HsaHandleImportDesc,
    ImportResult: *mut HsaHandleImportResult,
    Flags: *mut HsaHandleImportFlags,
) -> HSAKMT_STATUS {
    guard("hsaKmtHandleImport", || {
        crate::published::check_open()?; // the open check first (upstream), without a lock
                                         // SAFETY: the C caller's pointer contract (NULL or readable).
        let desc = unsafe { ImportDesc.as_ref() }.ok_or(Status::INVALID_HANDLE)?;
        // SAFETY: the C caller's pointer contract (NULL or writable).
        let res = unsafe { ImportResult.as_mut() }.ok_or(Status::INVALID_HANDLE)?;
        // SAFETY: the C caller's pointer contract (NULL or readable).
        let flags = unsafe { Flags.as_ref() }.map_or(0, |f| f.Value);
        if desc.r#type != HSA_EXTERNAL_HANDLE_DMA_BUF {
            return Err(Status::NOT_SUPPORTED);
        }
        if flags & 1 != 0 {
            return Err(Status::NOT_SUPPORTED); // IPCHandle: BO metadata is not modelled
        }
        // SAFETY: every bit pattern is a valid i64; DMA_BUF descriptors use this member.
        let fd = unsafe { desc.__anon_union_1.dmabuf_fd };
        let (t, size) = with_ctx_mut(|c| c.handle_import_dmabuf(fd))?;
        res.buf_handle = handle(t);
        res.dmabuf_fd = fd as i32;
        res.alloc_size = size;
        res.metadata = 0;
        Ok(())
    })
}

/// Export a memory object as a dma-buf (`ExportResult->dmabuf_fd`, owned by the caller).
///
/// # Safety
/// `ExportDesc` must be NULL or readable, `ExportResult` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtHandleExport(
    ExportDesc: *const HsaHandleExportDesc,
    ExportResult: *mut HsaMemoryExportResult,
    _Flags: *mut HsaHandleExportFlags,
) -> HSAKMT_STATUS {
    guard("hsaKmtHandleExport", || {
        crate::published::check_open()?; // the open check first (upstream), without a lock
                                         // SAFETY: the C caller's pointer contract (NULL or readable).
        let desc = unsafe { ExportDesc.as_ref() }.ok_or(Status::INVALID_HANDLE)?;
        // SAFETY: the C caller's pointer contract (NULL or writable).
        let res = unsafe { ExportResult.as_mut() }.ok_or(Status::INVALID_HANDLE)?;
        if desc.r#type != HSA_EXTERNAL_HANDLE_DMA_BUF {
            return Err(Status::NOT_SUPPORTED);
        }
        let t = token(desc.buf_handle).map_err(|_| Status::INVALID_HANDLE)?;
        let fd = with_ctx_mut(|c| c.handle_export_dmabuf(t))?;
        res.__anon_union_1.dmabuf_fd = fd;
        Ok(())
    })
}

/// Map `[offset, offset + size)` of a memory object at GPU VA `addr` (RO / WO / RW / NONE).
///
/// # Safety
/// Nothing is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtMemoryVaMap(
    Handle: HsaMemoryObjectHandle,
    offset: HSAuint64,
    size: HSAuint64,
    addr: HSAuint64,
    flags: HsaMemoryMapFlags,
    NodeId: HSAuint32,
) -> HSAKMT_STATUS {
    guard("hsaKmtMemoryVaMap", || {
        crate::published::check_open()?; // the open check first (upstream), without a lock
        let t = token(Handle)?;
        with_ctx_mut(|c| c.memory_va_op(t, offset, size, addr, Some(flags), Some(NodeId)))
    })
}

/// Remove a mapping made by [`hsaKmtMemoryVaMap`] (found by its VA).
///
/// # Safety
/// Nothing is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtMemoryVaUnmap(
    Handle: HsaMemoryObjectHandle,
    offset: HSAuint64,
    size: HSAuint64,
    addr: HSAuint64,
    NodeId: HSAuint32,
) -> HSAKMT_STATUS {
    guard("hsaKmtMemoryVaUnmap", || {
        crate::published::check_open()?; // the open check first (upstream), without a lock
        let t = token(Handle)?;
        with_ctx_mut(|c| c.memory_va_op(t, offset, size, addr, None, Some(NodeId)))
    })
}

/// The memory object mapped for the CPU (read-write; the same address on every call until the
/// handle is freed).
///
/// # Safety
/// `out_cpu_ptr` must be NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtMemoryCpuMap(Handle: HsaMemoryObjectHandle, out_cpu_ptr: *mut *mut c_void) -> HSAKMT_STATUS {
    guard("hsaKmtMemoryCpuMap", || {
        crate::published::check_open()?; // the open check first (upstream), without a lock
        let t = token(Handle)?;
        // SAFETY: the C caller's pointer contract.
        let p = unsafe { out(out_cpu_ptr) }?;
        let a = with_ctx_mut(|c| c.memory_cpu_map(t))?;
        *p = a as usize as *mut c_void;
        Ok(())
    })
}

fn free(name: &'static str, h: HsaMemoryObjectHandle) -> HSAKMT_STATUS {
    guard(name, || {
        crate::published::check_open()?; // the open check first (upstream), without a lock
        let t = token(h)?;
        with_ctx_mut(|c| c.mem_handle_free(t))
    })
}

/// Free a memory object: its CPU mapping, its VA mappings, the BO handle.
///
/// # Safety
/// Nothing is dereferenced; the CPU mapping of the handle is gone afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtMemHandleFree(Handle: HsaMemoryObjectHandle) -> HSAKMT_STATUS {
    free("hsaKmtMemHandleFree", Handle)
}

/// As [`hsaKmtMemHandleFree`]; upstream keeps the BO's metadata, which is not modelled here.
///
/// # Safety
/// As [`hsaKmtMemHandleFree`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtMemHandleFreePreserveMetadata(Handle: HsaMemoryObjectHandle) -> HSAKMT_STATUS {
    free("hsaKmtMemHandleFreePreserveMetadata", Handle)
}

/// Upstream returns the BO's mmap offset on its render node under this name (GEM_MMAP); so
/// does this. `DeviceHandle` is not needed (the object knows its GPU).
///
/// # Safety
/// `cpu_addr` must be NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtMemoryGetCpuAddr(
    _DeviceHandle: HsaAMDGPUDeviceHandle,
    MemoryHandle: HsaMemoryObjectHandle,
    cpu_addr: *mut HSAuint64,
) -> HSAKMT_STATUS {
    guard("hsaKmtMemoryGetCpuAddr", || {
        crate::published::check_open()?; // the open check first (upstream), without a lock
        let t = token(MemoryHandle)?;
        // SAFETY: the C caller's pointer contract.
        let out = unsafe { out(cpu_addr) }?;
        *out = with_ctx_mut(|c| c.memory_cpu_addr(t))?;
        Ok(())
    })
}
