//! Upstream's VirtIO command protocol for the HSAKMT capset (`hsakmt_virtio_proto.h`,
//! `virtio_gpu.h`), in our own form: every command and response is a byte buffer, and this
//! module names the offsets and sizes of its members. `tests/layout.rs` checks each constant
//! against the compiler-computed layout of upstream's structs (`tests/data/proto-layout.tsv`).
//!
//! The wire embeds thunk structs (`HsaNodeProperties`, `HsaQueueResource`, ...) as upstream's
//! headers of the same commit lay them out: ABI generation [`WIRE_GENERATION`]
//! (`core::abi::generation`), converted to and from ours at both ends.

use hsakmt_core::abi::generation::{Generation, Record};

/// The layouts of grown records on the wire (upstream's headers of develop 2025-08-09).
pub const WIRE_GENERATION: Generation = Generation::Dev_2025_08;

/// `sizeof` of `r` on the wire.
pub fn wire_size(r: Record) -> usize {
    WIRE_GENERATION.size_of(r)
}

/// `VIRGL_RENDERER_CAPSET_HSAKMT`.
pub const CAPSET_HSAKMT: u32 = 8;
/// `VIRTGPU_DRM_CONTEXT_AMDGPU`: the `context_type` the guest requires in the capset.
pub const CONTEXT_AMDGPU: u32 = 1;
/// `struct virgl_renderer_capset_hsakmt`: wire_format_version, version_major/minor/patchlevel
/// of the host's KFD, context_type, pad.
pub const CAPSET_SIZE: usize = 24;
pub const CAPSET_CONTEXT_TYPE: usize = 16;
/// `NUM_RINGS` the guest asks for at context init (upstream: 64; only ring 0 is used).
pub const NUM_RINGS: u64 = 64;

/// `struct virtio_gpu_shmem` (head of the shared response blob): seqno, rsp_mem_offset,
/// async_error, global_faults.
pub const SHMEM_SIZE: usize = 16;
pub const SHMEM_SEQNO: usize = 0;
pub const SHMEM_RSP_MEM_OFFSET: usize = 4;
pub const SHMEM_ASYNC_ERROR: usize = 8;
/// Upstream's shared-memory blob size (`SHMEM_SZ`, 25 pages).
pub const SHMEM_BLOB_SIZE: usize = 25 * 0x1000;

/// `struct vhsakmt_ccmd_req` (every command's header): cmd, len, seqno, rsp_off.
pub const REQ_HDR_SIZE: usize = 16;
pub const REQ_CMD: usize = 0;
pub const REQ_LEN: usize = 4;
pub const REQ_SEQNO: usize = 8;
pub const REQ_RSP_OFF: usize = 12;
/// `struct vhsakmt_ccmd_rsp` (every response's header): len, then `int32_t ret`.
pub const RSP_LEN: usize = 0;
pub const RSP_RET: usize = 4;

/// `enum vhsakmt_ccmd`.
pub mod ccmd {
    pub const NOP: u32 = 1;
    pub const QUERY_INFO: u32 = 2;
    pub const EVENT: u32 = 3;
    pub const MEMORY: u32 = 4;
    pub const QUEUE: u32 = 5;
    pub const GL_INTER: u32 = 6;
}

/// `struct vhsakmt_ccmd_query_info_req` / `_rsp` and `enum vhsakmt_ccmd_query_type`.
pub mod query {
    pub const REQ_SIZE: usize = 128;
    /// `struct drm_amdgpu_info info` (unused by every query but GPU_INFO).
    pub const INFO: usize = 16;
    pub const TYPE: usize = 48;
    /// The argument union: `pointer`, `NodeID`, `*_args`.
    pub const ARG: usize = 56;
    pub const ARG_SETUP_TTMP: usize = 59;
    /// Second u32 of the union (`NumBanks`, `ProcessorId`, `NumIoLinks`).
    pub const ARG_U32_1: usize = 60;
    /// Third u32 (`node_cache_prop_args.NumCaches`).
    pub const ARG_U32_2: usize = 64;
    /// `tile_config_args`: an `HsaGpuTileConfig` (64 bytes) then `NodeId`.
    pub const ARG_TILE_CONFIG: usize = 56;
    pub const ARG_TILE_NODE: usize = 120;
    pub const RSP_SIZE: usize = 424;
    /// The response union (`open_kfd_rsp`, `ptr_info`, `node_props`, `clock_counters`, ...).
    pub const RSP_U: usize = 8;
    /// `open_kfd_rsp.vm_size`.
    pub const RSP_VM_SIZE: usize = 16;
    /// `HsaPointerInfo` on the wire (not a grown record: our layout).
    pub const PTR_INFO_SIZE: usize = 68;
    /// `QUERY_PTR_INFO_MAX_MAPPED_NODES`: mapped-node ids after the response.
    pub const PTR_INFO_MAX_MAPPED_NODES: usize = 3;
    /// Upstream's per-query maxima of array payloads.
    pub const MAX_ARRAY: u32 = 128;

    pub const GPU_INFO: u32 = 0;
    pub const OPEN_KFD: u32 = 1;
    pub const GET_VER: u32 = 2;
    pub const REL_SYS_PROP: u32 = 3;
    pub const GET_SYS_PROP: u32 = 4;
    pub const GET_NODE_PROP: u32 = 5;
    pub const GET_XNACK_MODE: u32 = 6;
    pub const RUN_TIME_ENABLE: u32 = 7;
    pub const RUN_TIME_DISABLE: u32 = 8;
    pub const GET_NOD_MEM_PROP: u32 = 9;
    pub const GET_NOD_CACHE_PROP: u32 = 10;
    pub const GET_NOD_IO_LINK_PROP: u32 = 11;
    pub const GET_CLOCK_COUNTERS: u32 = 12;
    pub const POINTER_INFO: u32 = 13;
    pub const TILE_CONFIG: u32 = 14;
    pub const NANO_TIME: u32 = 15;
    pub const GET_RUNTIME_CAPS: u32 = 16;
}

/// `struct vhsakmt_ccmd_event_req` / `_rsp`, `vHsaEvent` and `enum vhsakmt_ccmd_event_type`.
pub mod event {
    pub const REQ_SIZE: usize = 104;
    /// The argument union: `HsaEvent* event_hanele` (the host's event), `create_args`,
    /// `wait_on_multi(_ext)_args`, `set_trap_handler_args`.
    pub const ARG: usize = 16;
    pub const ARG_CREATE_MANUAL_RESET: usize = 40;
    pub const ARG_CREATE_IS_SIGNALED: usize = 41;
    /// `wait_on_multi_ext_args`: NumEvents u32, Milliseconds u32, event_age u64, WaitOnAll u8.
    pub const ARG_WAIT_NUM: usize = 16;
    pub const ARG_WAIT_MS: usize = 20;
    pub const ARG_WAIT_EXT_AGE: usize = 24;
    pub const ARG_WAIT_EXT_ALL: usize = 32;
    /// `set_trap_handler_args`: four u64 then NodeId.
    pub const ARG_TRAP_NODE: usize = 48;
    pub const TYPE: usize = 80;
    pub const SYNC_SHMEM_RES_ID: usize = 84;
    pub const BLOB_ID: usize = 88;
    pub const RES_ID: usize = 96;
    pub const RSP_SIZE: usize = 80;
    pub const RSP_VEVENT: usize = 8;
    /// `vHsaEvent`: an `HsaEvent` (48 bytes), the host's `HsaEvent*`, the guest BO, res_id.
    pub const VEVENT_SIZE: usize = 72;
    pub const VEVENT_HANDLE: usize = 48;
    pub const VEVENT_BO_HANDLE: usize = 56;
    pub const VEVENT_RES_ID: usize = 64;
    /// `sizeof(HsaEventDescriptor)`, `sizeof(HsaEvent)`.
    pub const DESC_SIZE: usize = 24;
    pub const HSA_EVENT_SIZE: usize = 48;

    pub const CREATE: u32 = 0;
    pub const DESTROY: u32 = 1;
    pub const SET: u32 = 2;
    pub const RESET: u32 = 3;
    pub const QUERY_STATE: u32 = 4;
    pub const WAIT_ON_MULTI_EVENTS: u32 = 5;
    pub const SET_TRAP: u32 = 6;
}

/// `struct vhsakmt_ccmd_memory_req` / `_rsp` and `enum vhsakmt_ccmd_memory_type`.
pub mod memory {
    pub const REQ_SIZE: usize = 80;
    /// The argument union (`MemoryAddress`, `Node`, `alloc_args`, ...).
    pub const ARG: usize = 16;
    /// `alloc_args`: PreferredNode u32, MemFlags u32, SizeInBytes u64, MemoryAddress u64.
    pub const ARG_ALLOC_FLAGS: usize = 20;
    pub const ARG_ALLOC_SIZE: usize = 24;
    /// `map_to_GPU_nodes_args`: MemoryAddress, MemorySizeInBytes, AlternateVAGPU,
    /// MemMapFlags u32, pad, NumberOfNodes u64 (the node ids follow the struct), NodeArray.
    pub const ARG_SIZE: usize = 24;
    pub const ARG_MAP_FLAGS: usize = 40;
    pub const ARG_MAP_NUM_NODES: usize = 48;
    /// `map_to_GPU_args.need_create_bo`.
    pub const ARG_NEED_CREATE_BO: usize = 32;
    /// `reg_mem_with_flag.MemFlags`.
    pub const ARG_REG_FLAGS: usize = 32;
    pub const BLOB_ID: usize = 64;
    pub const TYPE: usize = 72;
    pub const RES_ID: usize = 76;
    pub const RSP_SIZE: usize = 24;
    /// `memory_handle` / `alternate_vagpu` / `available_bytes` / `map_userptr_rsp`.
    pub const RSP_U: usize = 8;
    /// Our limit on `NumberOfNodes` (a GPU list longer than any system's is refused).
    pub const MAX_NODES: u64 = 256;

    pub const ALLOC: u32 = 0;
    pub const MAP_TO_GPU_NODES: u32 = 1;
    pub const FREE: u32 = 2;
    pub const UNMAP_TO_GPU: u32 = 3;
    pub const AVAIL_MEM: u32 = 4;
    pub const MAP_MEM_TO_GPU: u32 = 5;
    pub const REG_MEM_WITH_FLAG: u32 = 6;
    pub const DEREG_MEM: u32 = 7;
    pub const MAP_USERPTR: u32 = 8;
}

/// `struct vhsakmt_ccmd_queue_req` / `_rsp`, `vHsaQueueResource`, `enum vhsakmt_ccmd_queue_type`.
pub mod queue {
    pub const REQ_SIZE: usize = 136;
    /// `QueueId` / `create_queue_args`.
    pub const ARG: usize = 16;
    pub const ARG_NODE: usize = 16;
    pub const ARG_TYPE: usize = 20;
    pub const ARG_PERCENTAGE: usize = 24;
    pub const ARG_PRIORITY: usize = 32;
    pub const ARG_SDMA_ENGINE: usize = 44;
    pub const ARG_QUEUE_ADDRESS: usize = 48;
    pub const ARG_QUEUE_SIZE: usize = 56;
    /// The host's `HsaEvent*` of the queue's error event (0: none).
    pub const ARG_EVENT: usize = 64;
    pub const ARG_WPTR_AQL: usize = 80;
    pub const ARG_RPTR_AQL: usize = 88;
    pub const BLOB_ID: usize = 96;
    pub const RW_PTR_BLOB_ID: usize = 104;
    pub const DOORBELL_BLOB_ID: usize = 112;
    pub const RES_ID: usize = 120;
    pub const TYPE: usize = 124;
    pub const QUEUE_MEM_RES_ID: usize = 128;
    pub const RSP_SIZE: usize = 96;
    pub const RSP_VQUEUE: usize = 8;
    /// `vHsaQueueResource`: an `HsaQueueResource` (wire layout, 40 bytes) then six u64.
    pub const VQ_SIZE: usize = 88;
    pub const VQ_HOST_DOORBELL: usize = 40;
    pub const VQ_HOST_DOORBELL_OFFSET: usize = 48;
    pub const VQ_HOST_WRITE_OFFSET: usize = 56;
    pub const VQ_HOST_READ_OFFSET: usize = 64;
    pub const VQ_HOST_RW_HANDLE: usize = 72;
    pub const VQ_QUEUE_HANDLE: usize = 80;
    /// Upstream's doorbell blob size.
    pub const DOORBELL_PAGE: u64 = 0x2000;

    pub const CREATE: u32 = 0;
    pub const DESTROY: u32 = 1;
}

/// `struct vhsakmt_ccmd_gl_inter_req` / `_rsp` (graphics interop: not carried here).
pub mod gl_inter {
    pub const REQ_SIZE: usize = 48;
    pub const TYPE: usize = 40;
    pub const RSP_SIZE: usize = 40;
}

/// Little-endian field access on command buffers, bounds-checked (`None` past the end).
pub fn get_u32(b: &[u8], off: usize) -> Option<u32> {
    b.get(off..off.checked_add(4)?).map(|s| u32::from_le_bytes(s.try_into().expect("4 bytes")))
}

pub fn get_u64(b: &[u8], off: usize) -> Option<u64> {
    b.get(off..off.checked_add(8)?).map(|s| u64::from_le_bytes(s.try_into().expect("8 bytes")))
}

pub fn get_u8(b: &[u8], off: usize) -> Option<u8> {
    b.get(off).copied()
}

/// Writes past the end of `b` are dropped (the response was shorter than the guest asked).
pub fn put_u32(b: &mut [u8], off: usize, v: u32) {
    if let Some(s) = off.checked_add(4).and_then(|e| b.get_mut(off..e)) {
        s.copy_from_slice(&v.to_le_bytes());
    }
}

pub fn put_u64(b: &mut [u8], off: usize, v: u64) {
    if let Some(s) = off.checked_add(8).and_then(|e| b.get_mut(off..e)) {
        s.copy_from_slice(&v.to_le_bytes());
    }
}

pub fn put_bytes(b: &mut [u8], off: usize, v: &[u8]) {
    if let Some(s) = off.checked_add(v.len()).and_then(|e| b.get_mut(off..e)) {
        s.copy_from_slice(v);
    }
}

/// A command header.
pub fn header(cmd: u32, len: usize) -> [u8; REQ_HDR_SIZE] {
    let mut h = [0u8; REQ_HDR_SIZE];
    put_u32(&mut h, REQ_CMD, cmd);
    put_u32(&mut h, REQ_LEN, len as u32);
    h
}

/// A zeroed command of `len` bytes with its header.
pub fn command(cmd: u32, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    v[..REQ_HDR_SIZE].copy_from_slice(&header(cmd, len));
    v
}
