//! The debugger interface (upstream debug.c): hsaKmtDbg* and hsaKmtDebugTrapIoctl over
//! AMDKFD_IOC_DBG_TRAP and the deprecated debugger ioctls, with upstream's statuses.
//! Where upstream dereferences a NULL argument, ours answers INVALID_PARAMETER.

use crate::boundary::{guard, out};
use crate::global::{pid, with_ctx};
use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::abi::kfd::*;
use hsakmt_core::port::ioctl_typed;
use hsakmt_core::{Kfd, Status};
use std::ffi::c_void;
use zerocopy::{FromZeros, IntoBytes};

/// Debugger support has been in KFD ABI 1.13 (upstream's KFD_MINOR_MIN_DEBUG).
const KFD_MINOR_MIN_DEBUG: u32 = 13;
/// MAX_ALLOWED_NUM_POINTS of kfd_ioctl.h.
const MAX_WATCH_POINTS: u32 = 100;

fn check_debug_version() -> Result<(), Status> {
    crate::published::check_open()?;
    if with_ctx(|c| Ok(c.kfd_minor_at_least(KFD_MINOR_MIN_DEBUG)))? {
        Ok(())
    } else {
        Err(Status::NOT_SUPPORTED)
    }
}

/// AMDKFD_IOC_DBG_TRAP on `a`; Ok(the ioctl's return value) or Err(errno).
///
/// # Safety
/// Every address in `a` must be valid for what `a.op` does with it (the caller's buffers).
unsafe fn dbg_trap(kfd: &dyn Kfd, a: &mut kfd_ioctl_dbg_trap_args) -> Result<u32, i32> {
    let n = std::mem::size_of::<kfd_ioctl_dbg_trap_args>();
    // SAFETY: `a` is a live, exclusively borrowed repr(C) struct of `n` bytes without padding,
    // all of them initialised by the caller (zeroed or copied); the kernel writes back only
    // integers of the same layout, valid for every member of the union.
    let bytes = unsafe { std::slice::from_raw_parts_mut((a as *mut kfd_ioctl_dbg_trap_args).cast::<u8>(), n) };
    // SAFETY: the caller's contract for the addresses inside `a`.
    unsafe { kfd.ioctl_value(AMDKFD_IOC_DBG_TRAP, bytes) }.map_err(|e| e.0)
}

fn trap_args(op: u32) -> kfd_ioctl_dbg_trap_args {
    let mut a: kfd_ioctl_dbg_trap_args = FromZeros::new_zeroed();
    a.op = op;
    a.pid = pid();
    a
}

#[unsafe(no_mangle)]
pub extern "C" fn hsaKmtDbgRegister(NodeId: HSAuint32) -> HSAKMT_STATUS {
    guard("hsaKmtDbgRegister", || {
        crate::published::check_open()?;
        with_ctx(|c| {
            let mut a = kfd_ioctl_dbg_register_args { gpu_id: c.node_gpu_id(NodeId)?, pad: 0 };
            // SAFETY: two integers; nothing in it is an address.
            unsafe { ioctl_typed(c.kfd(), AMDKFD_IOC_DBG_REGISTER_DEPRECATED, &mut a) }.map_err(|_| Status::ERROR)
        })
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn hsaKmtDbgUnregister(NodeId: HSAuint32) -> HSAKMT_STATUS {
    guard("hsaKmtDbgUnregister", || {
        crate::published::check_open()?;
        with_ctx(|c| {
            let mut a = kfd_ioctl_dbg_unregister_args { gpu_id: c.node_gpu_id(NodeId)?, pad: 0 };
            // SAFETY: two integers; nothing in it is an address.
            unsafe { ioctl_typed(c.kfd(), AMDKFD_IOC_DBG_UNREGISTER_DEPRECATED, &mut a) }.map_err(|_| Status::ERROR)
        })
    })
}

/// A deprecated variable-size debugger ioctl: a 16-byte header (gpu_id, size, content_ptr)
/// followed by the content, in one buffer the kernel reads through content_ptr.
fn deprecated_with_content(kfd: &dyn Kfd, request: u32, gpu_id: u32, content: &[u8]) -> Result<(), Status> {
    let mut buf = vec![0u8; 16 + content.len()];
    buf[16..].copy_from_slice(content);
    let size = buf.len() as u32;
    let ptr = buf.as_ptr() as u64 + 16;
    buf[0..4].copy_from_slice(&gpu_id.to_ne_bytes());
    buf[4..8].copy_from_slice(&size.to_ne_bytes());
    buf[8..16].copy_from_slice(&(ptr).to_ne_bytes());
    // SAFETY: content_ptr points into `buf`, live and exclusively ours for the call, with the
    // size the header states; nothing is handed to a GPU.
    unsafe { kfd.ioctl(request, &mut buf) }.map_err(|_| Status::ERROR)
}

/// # Safety
/// `DbgWaveMsgRing` must be NULL or valid for reads.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDbgWavefrontControl(
    NodeId: HSAuint32,
    Operand: HSA_DBG_WAVEOP,
    Mode: HSA_DBG_WAVEMODE,
    TrapId: HSAuint32,
    DbgWaveMsgRing: *mut HsaDbgWaveMessage,
) -> HSAKMT_STATUS {
    guard("hsaKmtDbgWavefrontControl", || {
        crate::published::check_open()?;
        let gpu_id = with_ctx(|c| c.node_gpu_id(NodeId))?;
        // SAFETY: the C caller's pointer contract.
        let msg = unsafe { DbgWaveMsgRing.as_ref() }.ok_or(Status::INVALID_PARAMETER)?;
        let mut content = Vec::new();
        content.extend_from_slice(&Operand.to_ne_bytes());
        content.extend_from_slice(&Mode.to_ne_bytes());
        content.extend_from_slice(&TrapId.to_ne_bytes());
        content.extend_from_slice(msg.DbgWaveMsg.WaveMsgInfoGen2.Value.as_bytes());
        content.extend_from_slice(msg.DbgWaveMsg.WaveMsgInfoGen2.Reserved2.as_bytes());
        content.extend_from_slice(&(msg.MemoryVA as u64).to_ne_bytes());
        with_ctx(|c| deprecated_with_content(c.kfd(), AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED, gpu_id, &content))
    })
}

/// # Safety
/// The arrays must be NULL or hold `NumWatchPoints` elements (WatchMask: one when its first
/// element is 0, as upstream reads it).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDbgAddressWatch(
    NodeId: HSAuint32,
    NumWatchPoints: HSAuint32,
    WatchMode: *mut HSA_DBG_WATCH_MODE,
    WatchAddress: *mut *mut c_void,
    WatchMask: *mut HSAuint64,
    WatchEvent: *mut *mut HsaEvent,
) -> HSAKMT_STATUS {
    guard("hsaKmtDbgAddressWatch", || {
        crate::published::check_open()?;
        let gpu_id = with_ctx(|c| c.node_gpu_id(NodeId))?;
        if NumWatchPoints > MAX_WATCH_POINTS {
            return Err(Status::INVALID_PARAMETER);
        }
        if WatchMode.is_null() || WatchAddress.is_null() || WatchMask.is_null() {
            return Err(Status::INVALID_PARAMETER);
        }
        let n = NumWatchPoints as usize;
        // SAFETY: non-NULL (checked); the caller promises NumWatchPoints elements.
        let (modes, addrs) = unsafe { (std::slice::from_raw_parts(WatchMode, n), std::slice::from_raw_parts(WatchAddress, n)) };
        // SAFETY: WatchMask[0] exists (non-NULL); with a nonzero first mask there are n.
        let first = unsafe { *WatchMask };
        let m = if first > 0 { n } else { 1 };
        // SAFETY: upstream's rule: n masks when the first is nonzero, else one (the caller's).
        let masks = unsafe { std::slice::from_raw_parts(WatchMask, m) };
        let events: &[*mut HsaEvent] = if WatchEvent.is_null() {
            &[]
        } else {
            // SAFETY: the caller promises n events.
            unsafe { std::slice::from_raw_parts(WatchEvent, n) }
        };
        let mut content = Vec::new();
        content.extend_from_slice(&NumWatchPoints.to_ne_bytes());
        modes.iter().for_each(|m| content.extend_from_slice(&m.to_ne_bytes()));
        addrs.iter().for_each(|a| content.extend_from_slice(&(*a as u64).to_ne_bytes()));
        masks.iter().for_each(|m| content.extend_from_slice(&m.to_ne_bytes()));
        events.iter().for_each(|e| content.extend_from_slice(&(*e as u64).to_ne_bytes()));
        with_ctx(|c| deprecated_with_content(c.kfd(), AMDKFD_IOC_DBG_ADDRESS_WATCH_DEPRECATED, gpu_id, &content))
    })
}

/// # Safety
/// `runtime_info` and `data_size` must be NULL or valid for writes. The buffer given back is
/// the caller's to free() (malloc'ed, as upstream).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDbgEnable(runtime_info: *mut *mut c_void, data_size: *mut HSAuint32) -> HSAKMT_STATUS {
    guard("hsaKmtDbgEnable", || {
        check_debug_version()?;
        // SAFETY: the C caller's pointer contract.
        let (info_out, size_out) = unsafe { (out(runtime_info)?, out(data_size)?) };
        let size = std::mem::size_of::<kfd_runtime_info>();
        *size_out = size as u32;
        // SAFETY: malloc of a small size; freed below on failure, else the caller's.
        let p = unsafe { libc::malloc(size) };
        if p.is_null() {
            return Err(Status::NO_MEMORY);
        }
        let r = with_ctx(|c| {
            let mut a = trap_args(KFD_IOC_DBG_TRAP_ENABLE);
            a.__anon_union_1.enable = kfd_ioctl_dbg_trap_enable_args {
                exception_mask: 0,
                rinfo_ptr: p as u64,
                rinfo_size: size as u32,
                dbg_fd: c.kfd().kfd_file_fd().unwrap_or(-1) as u32,
            };
            // SAFETY: rinfo_ptr is our fresh buffer of rinfo_size bytes.
            unsafe { dbg_trap(c.kfd(), &mut a) }.map(|_| ()).map_err(|_| Status::ERROR)
        });
        match r {
            Ok(()) => {
                *info_out = p;
                Ok(())
            }
            Err(s) => {
                // SAFETY: `p` came from malloc above and was not handed out.
                unsafe { libc::free(p) };
                Err(s)
            }
        }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn hsaKmtDbgDisable() -> HSAKMT_STATUS {
    guard("hsaKmtDbgDisable", || {
        check_debug_version()?;
        with_ctx(|c| {
            let mut a = trap_args(KFD_IOC_DBG_TRAP_DISABLE);
            a.__anon_union_1.enable.dbg_fd = c.kfd().kfd_file_fd().unwrap_or(-1) as u32;
            // SAFETY: no address in a DISABLE argument.
            unsafe { dbg_trap(c.kfd(), &mut a) }.map(|_| ()).map_err(|_| Status::ERROR)
        })
    })
}

/// # Safety
/// The three pointers must be NULL or valid for writes; the data is the caller's to free().
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDbgGetDeviceData(
    data: *mut *mut c_void,
    n_entries: *mut HSAuint32,
    entry_size: *mut HSAuint32,
) -> HSAKMT_STATUS {
    guard("hsaKmtDbgGetDeviceData", || {
        check_debug_version()?;
        // SAFETY: the C caller's pointer contract.
        let (data, n_out, size_out) = unsafe { (out(data)?, out(n_entries)?, out(entry_size)?) };
        let esz = std::mem::size_of::<kfd_dbg_device_info_entry>();
        *size_out = esz as u32;
        with_ctx(|c| {
            // Ask for the count first (upstream allocates for UINT32_MAX entries instead).
            let mut probe = [0u8; 8];
            let mut a = trap_args(KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT);
            a.__anon_union_1.device_snapshot = kfd_ioctl_dbg_trap_device_snapshot_args {
                exception_mask: 0,
                snapshot_buf_ptr: probe.as_mut_ptr() as u64,
                num_devices: 0,
                entry_size: esz as u32,
            };
            // SAFETY: zero entries are written to the probe buffer.
            unsafe { dbg_trap(c.kfd(), &mut a) }.map_err(|_| Status::ERROR)?;
            // SAFETY: the member just written by the KFD.
            let n = unsafe { a.__anon_union_1.device_snapshot.num_devices } as usize;
            // SAFETY: malloc; freed below on failure, else the caller's.
            let p = unsafe { libc::malloc((n * esz).max(1)) };
            if p.is_null() {
                return Err(Status::NO_MEMORY);
            }
            a.__anon_union_1.device_snapshot = kfd_ioctl_dbg_trap_device_snapshot_args {
                exception_mask: 0,
                snapshot_buf_ptr: p as u64,
                num_devices: n as u32,
                entry_size: esz as u32,
            };
            // SAFETY: `p` holds n entries of esz bytes.
            match unsafe { dbg_trap(c.kfd(), &mut a) } {
                Ok(_) => {
                    *data = p;
                    // SAFETY: as above.
                    *n_out = unsafe { a.__anon_union_1.device_snapshot.num_devices }.min(n as u32);
                    Ok(())
                }
                Err(_) => {
                    // SAFETY: `p` came from malloc above.
                    unsafe { libc::free(p) };
                    Err(Status::ERROR)
                }
            }
        })
    })
}

/// GET_QUEUE_SNAPSHOT of this process into `buf` (NULL with `n == 0`: the count only),
/// clearing EC_QUEUE_NEW as upstream: Ok(the number of queues).
fn queue_snapshot(kfd: &dyn Kfd, buf: *mut c_void, n: u32) -> Result<u32, Status> {
    let mut a = trap_args(KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT);
    a.__anon_union_1.queue_snapshot = kfd_ioctl_dbg_trap_queue_snapshot_args {
        exception_mask: 1u64 << (EC_QUEUE_NEW - 1),
        snapshot_buf_ptr: buf as u64,
        num_queues: n,
        entry_size: std::mem::size_of::<kfd_queue_snapshot_entry>() as u32,
    };
    // SAFETY: `buf` holds `n` entries (the callers' allocation) or none is written.
    unsafe { dbg_trap(kfd, &mut a) }.map_err(|_| Status::ERROR)?;
    // SAFETY: the member the KFD answered.
    Ok(unsafe { a.__anon_union_1.queue_snapshot.num_queues })
}

/// # Safety
/// The three pointers must be NULL or valid for writes; the data is the caller's to free().
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDbgGetQueueData(
    data: *mut *mut c_void,
    n_entries: *mut HSAuint32,
    entry_size: *mut HSAuint32,
    suspend_queues: bool,
) -> HSAKMT_STATUS {
    guard("hsaKmtDbgGetQueueData", || {
        check_debug_version()?;
        // SAFETY: the C caller's pointer contract.
        let (data, n_out, size_out) = unsafe { (out(data)?, out(n_entries)?, out(entry_size)?) };
        let esz = std::mem::size_of::<kfd_queue_snapshot_entry>();
        *size_out = esz as u32;
        *n_out = 0;
        with_ctx(|c| {
            let n = queue_snapshot(c.kfd(), std::ptr::null_mut(), 0)?;
            // SAFETY: malloc; freed below on failure, else the caller's.
            let p = unsafe { libc::malloc((n as usize * esz).max(1)) };
            if p.is_null() {
                return Err(Status::NO_MEMORY);
            }
            let fail = |s| {
                // SAFETY: `p` came from malloc above.
                unsafe { libc::free(p) };
                Err(s)
            };
            let got = match queue_snapshot(c.kfd(), p, n) {
                Ok(m) => m.min(n),
                Err(s) => return fail(s),
            };
            if suspend_queues && got > 0 {
                // SAFETY: `p` holds `got` entries the KFD wrote.
                let entries = unsafe { std::slice::from_raw_parts(p.cast::<kfd_queue_snapshot_entry>(), got as usize) };
                let mut ids: Vec<u32> = entries.iter().map(|e| e.queue_id).collect();
                let mut a = trap_args(KFD_IOC_DBG_TRAP_SUSPEND_QUEUES);
                a.__anon_union_1.suspend_queues = kfd_ioctl_dbg_trap_suspend_queues_args {
                    exception_mask: 1u64 << (EC_QUEUE_NEW - 1),
                    queue_array_ptr: ids.as_mut_ptr() as u64,
                    num_queues: got,
                    grace_period: 0,
                };
                // SAFETY: the id array is ours, `got` entries.
                if unsafe { dbg_trap(c.kfd(), &mut a) }.is_err() {
                    return fail(Status::ERROR);
                }
                if queue_snapshot(c.kfd(), p, got).is_err() {
                    return fail(Status::ERROR);
                }
            }
            *data = p;
            *n_out = got;
            Ok(())
        })
    })
}

/// # Safety
/// `args` must be NULL or a valid `kfd_ioctl_dbg_trap_args` whose addresses are valid for its
/// operation; `Queues` NULL or holding the operation's num_queues ids; `DebugReturn` NULL or
/// valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDebugTrapIoctl(
    args: *mut kfd_ioctl_dbg_trap_args,
    Queues: *mut HSA_QUEUEID,
    DebugReturn: *mut HSAuint64,
) -> HSAKMT_STATUS {
    guard("hsaKmtDebugTrapIoctl", || {
        crate::published::check_open()?;
        // SAFETY: the C caller's pointer contract.
        let a = unsafe { args.as_mut() }.ok_or(Status::INVALID_PARAMETER)?;
        let suspend = a.op == KFD_IOC_DBG_TRAP_SUSPEND_QUEUES;
        // SAFETY: integer members of the union, chosen by op as upstream does.
        let (num, ptr) = unsafe {
            if suspend {
                (a.__anon_union_1.suspend_queues.num_queues, a.__anon_union_1.suspend_queues.queue_array_ptr)
            } else {
                (a.__anon_union_1.resume_queues.num_queues, a.__anon_union_1.resume_queues.queue_array_ptr)
            }
        };
        with_ctx(|c| {
            if !Queues.is_null() {
                // hsakmt_convert_queue_ids: an unknown queue (or none) is NO_MEMORY upstream.
                if num == 0 {
                    return Err(Status::NO_MEMORY);
                }
                // SAFETY: the caller promises `num` queue handles.
                let qs = unsafe { std::slice::from_raw_parts(Queues, num as usize) };
                let ids: Vec<u32> = qs.iter().map(|q| c.kernel_queue_id(*q)).collect::<Result<_, _>>().map_err(|_| Status::NO_MEMORY)?;
                if ptr == 0 {
                    return Err(Status::INVALID_PARAMETER); // upstream would write to NULL
                }
                // SAFETY: the caller promises the array in the args holds `num` u32s.
                unsafe { std::ptr::copy_nonoverlapping(ids.as_ptr(), ptr as *mut u32, ids.len()) };
            }
            // SAFETY: the caller's contract for the addresses in `args`.
            let r = unsafe { dbg_trap(c.kfd(), a) };
            if !DebugReturn.is_null() {
                let v: i64 = match r {
                    Ok(v) => i64::from(v),
                    Err(_) => -1,
                };
                // SAFETY: non-NULL, the caller's pointer contract.
                unsafe { *DebugReturn = v as u64 };
            }
            match r {
                Ok(v) if (a.op == KFD_IOC_DBG_TRAP_SUSPEND_QUEUES || a.op == KFD_IOC_DBG_TRAP_RESUME_QUEUES) && v <= num => Ok(()),
                Ok(0) => Ok(()),
                _ => Err(Status::ERROR),
            }
        })
    })
}
