//! PC sampling (AMDKFD_IOC_PC_SAMPLE, ROCm's amdgpu-dkms only). Facts from amdgpu-dkms
//! `kfd_pc_sampling.c` (PC sampling interface 1.1) and ROCr's second-level trap handler
//! (`trap_handler.s`, `hsa_ven_amd_pc_sampling.h`); model/PC_SAMPLING.md says what differs.
//!
//! The ioctl, as the kernel answers it:
//! - QUERY_CAPABILITIES: the methods of the GPU's GC IP version (9.4.2 = gfx90a: host trap;
//!   9.4.3 = gfx942: host trap and stochastic; 9.5.0 = gfx950: host trap; any other GPU
//!   EOPNOTSUPP). `num_sample_info` is set to their number; with a NULL array or a count of 0
//!   that is all (success: a size query), a smaller count is ENOSPC, otherwise the entries
//!   are copied out. While sessions exist (and `flags` is not QUERY_TYPE_FULL) only the
//!   sessions' own parameters are answered.
//! - CREATE: `num_sample_info` must be 1 (EINVAL); the entry is read (EFAULT); it must match a
//!   supported method, type and interval range (EOPNOTSUPP), a power of two where the method
//!   says so (EINVAL); a method already in use with other parameters is EEXIST with the
//!   session's parameters copied back. Trace ids count from 1 per GPU.
//! - DESTROY / START / STOP name a trace id of the caller (else EINVAL): DESTROY of a started
//!   session is EBUSY, START of a started one and STOP of a stopped one EALREADY.
//! - Process release (CloseKFD) stops and destroys the process's sessions.
//!
//! Where the samples go: the KFD only makes the GPU raise host traps every `interval`
//! microseconds while a host-trap session is started; the runtime's trap handler (its TMA,
//! given with SET_TRAP_HANDLER, holds the address of its `host_trap_buffers`) writes a 64-byte
//! `perf_sample_hosttrap_v1_t` per trapped wave into one of two buffers there and signals the
//! runtime at a watermark. The model GPU does what that handler does, at the model's dispatches
//! ([`Model::pcs_dispatch`]).

use crate::engine::Exec;
use crate::gpu::AtomicOp;
use crate::model::Model;
use crate::sys::{current_pid, get, put};
use crate::usercopy::{copy_from_user, copy_to_user};
use hsakmt_core::abi::kfd::*;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard};
use zerocopy::{FromZeros, IntoBytes};

const fn info(min: u64, max: u64, flags: u64, method: u32, ty: u32) -> kfd_pc_sample_info {
    kfd_pc_sample_info { interval: 0, interval_min: min, interval_max: max, flags, method, r#type: ty }
}

/// sample_info_hosttrap_9_0_0: microseconds, 1 .. 2^64-1.
const HOSTTRAP: kfd_pc_sample_info = info(1, u64::MAX, 0, KFD_IOCTL_PCS_METHOD_HOSTTRAP, KFD_IOCTL_PCS_TYPE_TIME_US);
/// sample_info_stoch_cycle_9_4_3: clock cycles, 256 .. 2^31, powers of two.
const STOCHASTIC: kfd_pc_sample_info =
    info(256, 1 << 31, KFD_IOCTL_PCS_FLAG_POWER_OF_2 as u64, KFD_IOCTL_PCS_METHOD_STOCHASTIC, KFD_IOCTL_PCS_TYPE_CLOCK_CYCLES);

/// The methods of a GPU of gfx version `gfx` (major, minor, stepping), by its GC IP version.
pub(crate) fn methods(gfx: (u32, u32, u32)) -> &'static [kfd_pc_sample_info] {
    match gfx {
        (9, 0, 10) => &[HOSTTRAP],            // GC 9.4.2
        (9, 4, 2) => &[HOSTTRAP, STOCHASTIC], // GC 9.4.3
        (9, 5, 0) => &[HOSTTRAP],             // GC 9.5.0
        _ => &[],
    }
}

/// perf_sample_hosttrap_v1_t.
pub const HOSTTRAP_SAMPLE_BYTES: u64 = 64;
/// `host_trap_buffers`: where buffer 0 starts.
const BUFFERS_AT: u64 = 0x40;

#[derive(Clone, Copy, Default)]
struct Method {
    info: Option<kfd_pc_sample_info>,
    use_count: u32,
    active: u32,
}

#[derive(Clone, Copy)]
struct Entry {
    hosttrap: bool,
    enabled: bool,
}

#[derive(Default)]
struct PcsGpu {
    host: Method,
    stoch: Method,
    entries: BTreeMap<u32, Entry>,
    next_id: u32,
}

#[derive(Default)]
struct PcsState {
    pid: u32,
    gpus: Vec<PcsGpu>,
}

/// PC sampling of every GPU.
pub(crate) struct Pcs {
    st: Mutex<PcsState>,
    /// Per GPU: the host-trap interval in microseconds while a host-trap session is started
    /// (0: none); read by the engines without the lock.
    hosttrap_us: Vec<AtomicU32>,
}

impl Pcs {
    pub(crate) fn new(n_gpus: usize) -> Pcs {
        Pcs { st: Mutex::new(PcsState::default()), hosttrap_us: (0..n_gpus).map(|_| AtomicU32::new(0)).collect() }
    }

    /// The state of this process (a forked child starts without its parent's sessions).
    fn lock(&self, n_gpus: usize) -> MutexGuard<'_, PcsState> {
        let mut st = self.st.lock().unwrap_or_else(|e| e.into_inner());
        if st.pid != current_pid() || st.gpus.len() != n_gpus {
            *st = PcsState { pid: current_pid(), gpus: (0..n_gpus).map(|_| PcsGpu::default()).collect() };
            for a in &self.hosttrap_us {
                a.store(0, Ordering::Relaxed);
            }
        }
        st
    }
}

impl Model {
    /// AMDKFD_IOC_PC_SAMPLE.
    pub(crate) fn ioctl_pc_sample(&self, buf: &mut [u8]) -> Result<(), i32> {
        let mut a: kfd_ioctl_pc_sample_args = get(buf);
        let g = self.gpu_index(a.gpu_id).ok_or(libc::EINVAL)?;
        let mut st = self.pcs.lock(self.gpus.len());
        let r = self.pcs_op(&mut st.gpus[g], g, &mut a);
        drop(st);
        put(buf, &a);
        r
    }

    fn pcs_op(&self, s: &mut PcsGpu, g: usize, a: &mut kfd_ioctl_pc_sample_args) -> Result<(), i32> {
        let methods = methods(self.gpus[g].gfx_version);
        match a.op {
            KFD_IOCTL_PCS_OP_QUERY_CAPABILITIES => {
                if methods.is_empty() {
                    return Err(libc::EOPNOTSUPP);
                }
                let asked = a.num_sample_info;
                if a.flags != KFD_IOCTL_PCS_QUERY_TYPE_FULL as u32 && (s.host.use_count != 0 || s.stoch.use_count != 0) {
                    // The sessions' parameters only (stochastic first, as the kernel).
                    let mut at = a.sample_info_ptr;
                    a.num_sample_info = 0;
                    let mut fault = false;
                    for m in [&s.stoch, &s.host] {
                        if let (true, Some(i)) = (m.use_count != 0, m.info) {
                            a.num_sample_info += 1;
                            if at != 0 && a.num_sample_info <= asked {
                                fault |= copy_to_user(at as usize, i.as_bytes()).is_err();
                                at += size_of::<kfd_pc_sample_info>() as u64;
                            }
                        }
                    }
                    return if fault { Err(libc::EFAULT) } else { Ok(()) };
                }
                a.num_sample_info = methods.len() as u32;
                if a.sample_info_ptr == 0 || asked == 0 {
                    return Ok(()); // a size query
                }
                if (asked as usize) < methods.len() {
                    return Err(libc::ENOSPC);
                }
                copy_to_user(a.sample_info_ptr as usize, methods.as_bytes()).map_err(|_| libc::EFAULT)
            }
            KFD_IOCTL_PCS_OP_CREATE => {
                if a.num_sample_info != 1 {
                    return Err(libc::EINVAL);
                }
                let mut user = kfd_pc_sample_info::new_zeroed();
                copy_from_user(user.as_mut_bytes(), a.sample_info_ptr as usize).map_err(|_| libc::EFAULT)?;
                let f = methods
                    .iter()
                    .find(|f| {
                        f.method == user.method && f.r#type == user.r#type && (f.interval_min..=f.interval_max).contains(&user.interval)
                    })
                    .ok_or(libc::EOPNOTSUPP)?;
                if f.flags == KFD_IOCTL_PCS_FLAG_POWER_OF_2 as u64 && !user.interval.is_power_of_two() {
                    return Err(libc::EINVAL);
                }
                let hosttrap = f.method == KFD_IOCTL_PCS_METHOD_HOSTTRAP;
                let m = if hosttrap { &mut s.host } else { &mut s.stoch };
                if let Some(cur) = m.info.filter(|_| m.use_count != 0) {
                    if cur.as_bytes() != user.as_bytes() {
                        copy_to_user(a.sample_info_ptr as usize, cur.as_bytes()).map_err(|_| libc::EFAULT)?;
                        return Err(libc::EEXIST);
                    }
                }
                // idr_alloc_cyclic(.., 1, 0): the next free id from the last one, from 1.
                let mut id = s.next_id.max(1);
                while s.entries.contains_key(&id) {
                    id = id.checked_add(1).filter(|&i| i <= i32::MAX as u32).unwrap_or(1);
                }
                s.next_id = id.checked_add(1).filter(|&i| i <= i32::MAX as u32).unwrap_or(1);
                if m.use_count == 0 {
                    m.info = Some(user);
                }
                m.use_count += 1;
                s.entries.insert(id, Entry { hosttrap, enabled: false });
                a.trace_id = id;
                Ok(())
            }
            KFD_IOCTL_PCS_OP_DESTROY | KFD_IOCTL_PCS_OP_START | KFD_IOCTL_PCS_OP_STOP => {
                let e = *s.entries.get(&a.trace_id).ok_or(libc::EINVAL)?;
                match a.op {
                    KFD_IOCTL_PCS_OP_DESTROY if e.enabled => Err(libc::EBUSY),
                    KFD_IOCTL_PCS_OP_DESTROY => {
                        self.pcs_destroy(s, a.trace_id);
                        Ok(())
                    }
                    KFD_IOCTL_PCS_OP_START if e.enabled => Err(libc::EALREADY),
                    KFD_IOCTL_PCS_OP_STOP if !e.enabled => Err(libc::EALREADY),
                    op => {
                        self.pcs_enable(s, g, a.trace_id, op == KFD_IOCTL_PCS_OP_START);
                        Ok(())
                    }
                }
            }
            _ => Err(libc::EINVAL),
        }
    }

    fn pcs_enable(&self, s: &mut PcsGpu, g: usize, id: u32, on: bool) {
        let Some(e) = s.entries.get_mut(&id) else { return };
        e.enabled = on;
        let m = if e.hosttrap { &mut s.host } else { &mut s.stoch };
        if on {
            m.active += 1;
        } else {
            m.active = m.active.saturating_sub(1);
        }
        let us = match (s.host.active, s.host.info) {
            (1.., Some(i)) => i.interval.clamp(1, u64::from(u32::MAX)) as u32,
            _ => 0,
        };
        self.pcs.hosttrap_us[g].store(us, Ordering::Relaxed);
    }

    fn pcs_destroy(&self, s: &mut PcsGpu, id: u32) {
        let Some(e) = s.entries.remove(&id) else { return };
        let m = if e.hosttrap { &mut s.host } else { &mut s.stoch };
        m.use_count = m.use_count.saturating_sub(1);
        if m.use_count == 0 {
            m.info = None;
        }
    }

    /// kfd_pc_sample_release for every GPU: stop and destroy the process's sessions.
    pub(crate) fn pcs_release_all(&self) {
        let mut st = self.pcs.lock(self.gpus.len());
        for g in 0..st.gpus.len() {
            let ids: Vec<(u32, bool)> = st.gpus[g].entries.iter().map(|(&i, e)| (i, e.enabled)).collect();
            for (id, enabled) in ids {
                if enabled {
                    self.pcs_enable(&mut st.gpus[g], g, id, false);
                }
                self.pcs_destroy(&mut st.gpus[g], id);
            }
        }
    }

    /// The host-trap interval of GPU `g` in microseconds while host-trap sampling runs (0: not
    /// sampling). One relaxed load: the dispatch path's whole cost when nobody samples.
    pub(crate) fn pcs_hosttrap_us(&self, g: usize) -> u32 {
        self.pcs.hosttrap_us.get(g).map_or(0, |a| a.load(Ordering::Relaxed))
    }

    /// The trap TMA of GPU `gpu_id` this process set (SET_TRAP_HANDLER), 0 if none.
    fn trap_tma(&self, gpu_id: u32) -> u64 {
        self.trap_handler(gpu_id).map_or(0, |(_, tma)| tma)
    }
}

/// What the dispatch being sampled looks like.
pub(crate) struct Dispatch {
    pub kernel_object: u64,
    pub grid: [u32; 3],
    pub wg: [u16; 3],
    /// The packet's dispatch id (its index in the queue).
    pub index: u64,
    /// The queue's doorbell index.
    pub doorbell: u32,
}

impl Dispatch {
    fn groups(&self) -> [u64; 3] {
        [0, 1, 2].map(|d| u64::from(self.grid[d]).div_ceil(u64::from(self.wg[d]).max(1)))
    }

    /// Work-items of workgroup `id` (the last one of a dimension may be partial).
    fn items_in(&self, id: [u64; 3]) -> u64 {
        (0..3)
            .map(|d| {
                let w = u64::from(self.wg[d]).max(1);
                w.min(u64::from(self.grid[d]).saturating_sub(id[d].saturating_mul(w)))
            })
            .fold(1, u64::saturating_mul)
    }
}

/// Most host traps taken for one dispatch after its launch (one per interval it ran).
const MAX_TRAPS: u64 = 1024;

/// Run dispatch `d` (`run` executes its model kernel) under host-trap sampling when a host-trap
/// session is started on the GPU: the first trap lands on the dispatch's first wave as it
/// starts, then one more for each whole interval the kernel ran, on the following waves (at
/// the times the sampler would have trapped them).
pub(crate) fn sampled<R>(
    x: &Exec<'_>,
    d: &Dispatch,
    run: impl FnOnce() -> Result<R, crate::engine::Halt>,
) -> Result<R, crate::engine::Halt> {
    let Some(g) = x.m.gpu_index(x.gpu()) else { return run() };
    let us = u64::from(x.m.pcs_hosttrap_us(g));
    if us == 0 {
        return run();
    }
    let t0 = x.clock();
    hosttrap_sample(x, d, 0, t0);
    let start = std::time::Instant::now();
    let r = run();
    let traps = (start.elapsed().as_micros() as u64 / us).min(MAX_TRAPS);
    let ticks = (x.m.gpus[g].counter_hz / 1_000_000).saturating_mul(us);
    for k in 1..=traps {
        hosttrap_sample(x, d, k, t0.saturating_add(k.saturating_mul(ticks)));
    }
    r
}

/// Trap wave `k` of `d` with the runtime's host-trap handler on `x`'s GPU at GPU time `ts`:
/// what ROCr's `trap_handler.s` does for a host trap (take an entry of the buffer in use,
/// fill a `perf_sample_hosttrap_v1_t`, count it written, signal the buffer's done signal at the
/// watermark). False when nothing could be written (no handler buffers, a fault).
pub(crate) fn hosttrap_sample(x: &Exec<'_>, d: &Dispatch, k: u64, ts: u64) -> bool {
    let gpu = x.gpu();
    let tma = x.m.trap_tma(gpu);
    if tma == 0 {
        return false;
    }
    let wave_lanes: u64 = if x.gfx_version().0 >= 10 { 32 } else { 64 };
    // Which wave the trap lands on: workgroups in order (x fastest), then the waves in them.
    let [gx, gy, gz] = d.groups();
    let groups = gx.saturating_mul(gy).saturating_mul(gz).max(1);
    let lin = k % groups;
    let id = [lin % gx.max(1), (lin / gx.max(1)) % gy.max(1), lin / gx.saturating_mul(gy).max(1)];
    let items = d.items_in(id);
    let waves = items.div_ceil(wave_lanes).max(1);
    let wave = (k / groups) % waves;
    let lanes = items.saturating_sub(wave * wave_lanes).min(wave_lanes);
    let exec = if lanes >= 64 { u64::MAX } else { (1u64 << lanes) - 1 };
    let r = (|| -> Result<(), crate::engine::Halt> {
        let hb: u64 = x.load(tma, Ordering::Acquire)?;
        if hb == 0 {
            return Ok(());
        }
        let entry = x.m.gpu_atomic_u64(gpu, hb, AtomicOp::Add, 1)?;
        let buf = entry >> 63;
        let local = entry & (u64::MAX >> 1);
        let size = u64::from(x.load::<u32>(hb.wrapping_add(8), Ordering::Relaxed)?);
        if local >> 32 != 0 || local >= size {
            return Ok(()); // lost: the buffer in use is full
        }
        // Wrapping, as the handler's 64-bit address arithmetic; a wild address faults.
        let at = hb.wrapping_add(BUFFERS_AT).wrapping_add((buf * size + local) * HOSTTRAP_SAMPLE_BYTES);
        let mut s = [0u8; HOSTTRAP_SAMPLE_BYTES as usize];
        s[0..8].copy_from_slice(&d.kernel_object.to_le_bytes());
        s[8..16].copy_from_slice(&exec.to_le_bytes());
        for (i, v) in id.iter().enumerate() {
            s[16 + 4 * i..20 + 4 * i].copy_from_slice(&(*v as u32).to_le_bytes());
        }
        s[0x1c..0x20].copy_from_slice(&((wave as u32) & 0x3f).to_le_bytes());
        // hw_id (0x20) stays 0: the model GPU places waves nowhere.
        s[0x30..0x38].copy_from_slice(&ts.to_le_bytes());
        let corr = (u64::from(d.doorbell) & 0x3ff) << 32 | (d.index & 0x1ff_ffff);
        s[0x38..0x40].copy_from_slice(&corr.to_le_bytes());
        x.write(at, &s)?;
        let done = x.m.gpu_atomic_u32(gpu, hb.wrapping_add(0x10 + 0x10 * buf), AtomicOp::Add, 1)?;
        let watermark: u32 = x.load(hb.wrapping_add(0x14 + 0x10 * buf), Ordering::Relaxed)?;
        if done == watermark {
            // send_signal: value 0, then the event mailbox and interrupt when both are set.
            let sig: u64 = x.load(hb.wrapping_add(0x18 + 0x10 * buf), Ordering::Relaxed)?;
            if sig != 0 {
                x.store(sig.wrapping_add(8), 0u64, Ordering::Relaxed)?;
                let mailbox: u64 = x.load(sig.wrapping_add(0x10), Ordering::Relaxed)?;
                let event_id: u32 = x.load(sig.wrapping_add(0x18), Ordering::Relaxed)?;
                if mailbox != 0 && event_id != 0 {
                    x.store(mailbox, event_id, Ordering::Relaxed)?;
                    x.interrupt(event_id, 32);
                }
            }
        }
        Ok(())
    })();
    r.is_ok()
}
