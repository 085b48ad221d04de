//! The streaming performance monitor (AMDKFD_IOC_RLC_SPM, ROCm's amdgpu-dkms only; mainline
//! has no such ioctl). Facts from amdgpu-dkms `kfd_spm.c` (SPM interface 0.4) and
//! `amdgpu_amdkfd_rlc_spm.c`; what the model streams is its own (model/SPM.md).
//!
//! The kernel's rules, kept:
//! - ACQUIRE takes the GPU's SPM for the calling process: EBUSY when the process already has
//!   it. RELEASE gives it back (EINVAL when the process does not have it), stopping the
//!   stream. An unknown gpu_id or op is EINVAL. CloseKFD (process release) releases it.
//! - SET_DEST_BUF (EINVAL without ACQUIRE): `buf_size` rounded down to 32 bytes must exceed the
//!   32-byte `kfd_ioctl_spm_buffer_header` (else EINVAL, also with a NULL buffer). With a
//!   `timeout` (ms) and a current buffer not yet full, the call first waits until it fills or
//!   the time is up (a timeout is not an error; the field is not written back, as 0.4 does).
//!   Then the current buffer is retired: `bytes_copied` and `has_data_loss` are answered and
//!   written into its header (at its first byte; a header that cannot be written is EFAULT).
//!   A non-NULL `dest_buf` becomes the new buffer, data starting after its header, and starts
//!   the stream if it was stopped; a NULL one stops the stream.
//! - Data is a byte stream: a buffer that fills takes the bytes that fit (a sample may be cut
//!   there; its rest goes to the next buffer), the rest stays in the ring. The data-loss flag
//!   is the kernel's hint: set when the ring is more than half full while the buffer is full
//!   or missing, when the ring overflows (the RLC stalls: samples are lost), or when a copy to
//!   the buffer faults (an unmapped buffer).
//!
//! The model's own:
//! - Another live process holding the GPU's SPM makes ACQUIRE EBUSY (a GPU has one RLC SPM;
//!   amdgpu-dkms of 2024-25 lets the second process reprogram it and take the stream over,
//!   older amdgpu refused with EINVAL, mainline's 2026 reserved-VMID rule with ENOENT). The
//!   holder is kept in the control block every process of the model shares (`devmem.rs`).
//! - One SPM instance per GPU (the kernel splits the buffer between the XCCs of a multi-XCC
//!   GPU, each part with its own header), a ring of [`RING_BYTES`], and samples in the model's
//!   format ([`SAMPLE_BYTES`], model/SPM.md) every `interval` microseconds from the moment the
//!   stream starts: `HSAKMT_MODEL_SPM_INTERVAL_US` (default 1000, at least 10), the stand-in
//!   for the sample interval the profiler programs into RLC_SPM_PERFMON_CNTL with PM4.

use crate::model::Model;
use crate::sys::current_pid;
use crate::usercopy::copy_to_user;
use hsakmt_core::abi::kfd::*;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};
use zerocopy::IntoBytes;

/// Bytes of one model sample.
pub const SAMPLE_BYTES: usize = 64;
/// The model's RLC ring (the kernel's is 4 MiB of GTT).
pub const RING_BYTES: usize = 16 << 10;
/// `kfd_ioctl_spm_buffer_header` at the start of each destination buffer.
pub const HEADER_BYTES: u32 = 32;
/// SPM interface version in the header: KFD_IOCTL_SPM_MAJOR_VERSION << 24 | MINOR (0.4).
pub const SPM_VERSION: u32 = 4;
/// The model's sample format version (first word of every sample's second dword pair).
pub const SAMPLE_FORMAT: u32 = 1;
/// Counters per sample.
pub const SAMPLE_COUNTERS: usize = 6;

/// One GPU's SPM.
pub(crate) struct SpmGpu {
    st: Mutex<SpmState>,
    /// Wakes SET_DEST_BUF waiters (buffer filled) and the streamer (stop).
    cv: Condvar,
}

#[derive(Default)]
struct SpmState {
    /// The process holding this GPU's SPM (0: none). A forked child finds its parent's pid
    /// and starts afresh.
    pid: u32,
    ring: Box<[u8]>,
    ring_head: usize,
    ring_len: usize,
    /// The current destination buffer: data address (after the header), data capacity.
    buf: Option<(u64, u32)>,
    copied: u32,
    filled: bool,
    data_loss: bool,
    /// Stream generation: the streamer thread of generation `run` runs while it is current.
    run: u64,
    started: bool,
    seq: u32,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SpmState {
    /// Append `data` to the ring; false (nothing stored) when it does not fit.
    fn push(&mut self, data: &[u8]) -> bool {
        let cap = self.ring.len();
        if cap - self.ring_len < data.len() {
            return false;
        }
        for (k, &b) in data.iter().enumerate() {
            let at = (self.ring_head + self.ring_len + k) % cap;
            self.ring[at] = b;
        }
        self.ring_len += data.len();
        true
    }

    /// kfd_spm_read_ring_buffer: move what fits from the ring into the buffer. With the buffer
    /// full or missing, the kernel's worker sets the data-loss hint whenever it runs: when
    /// SET_DEST_BUF runs it (`explicit`) or its monitor finds the ring more than half full.
    fn drain(&mut self, explicit: bool) {
        let Some((addr, cap)) = self.buf.filter(|_| !self.filled) else {
            if explicit || self.ring_len > self.ring.len() / 2 {
                self.data_loss = true;
                self.filled = true;
            }
            return;
        };
        while self.ring_len > 0 && !self.filled {
            let space = (cap - self.copied) as usize;
            let contiguous = self.ring_len.min(self.ring.len() - self.ring_head);
            let n = contiguous.min(space);
            let chunk = &self.ring[self.ring_head..self.ring_head + n];
            if copy_to_user((addr as usize).wrapping_add(self.copied as usize), chunk).is_err() {
                self.data_loss = true;
                return;
            }
            self.ring_head = (self.ring_head + n) % self.ring.len();
            self.ring_len -= n;
            self.copied += n as u32;
            if self.copied == cap {
                self.filled = true;
            }
        }
    }
}

/// SPM of every GPU.
#[derive(Default)]
pub(crate) struct Spm {
    gpus: Vec<Arc<SpmGpu>>,
}

impl Spm {
    pub(crate) fn new(n_gpus: usize) -> Spm {
        Spm { gpus: (0..n_gpus).map(|_| Arc::new(SpmGpu { st: Mutex::new(SpmState::default()), cv: Condvar::new() })).collect() }
    }
}

impl SpmGpu {
    /// The state, reset when it is a forked parent's (its streamer does not exist here).
    fn lock(&self) -> MutexGuard<'_, SpmState> {
        let mut st = self.st.lock().unwrap_or_else(|e| e.into_inner());
        if st.pid != 0 && st.pid != current_pid() {
            let run = st.run;
            std::mem::forget(st.thread.take());
            *st = SpmState { run: run + 1, ..SpmState::default() };
        }
        st
    }
}

fn interval() -> Duration {
    let us = std::env::var("HSAKMT_MODEL_SPM_INTERVAL_US").ok().and_then(|v| v.trim().parse::<u64>().ok()).unwrap_or(1000);
    Duration::from_micros(us.max(10))
}

impl Model {
    /// AMDKFD_IOC_RLC_SPM.
    pub(crate) fn ioctl_rlc_spm(&self, buf: &mut [u8]) -> Result<(), i32> {
        let mut a: kfd_ioctl_spm_args = crate::sys::get(buf);
        let g = self.gpu_index(a.gpu_id).ok_or(libc::EINVAL)?;
        let r = match a.op {
            KFD_IOCTL_SPM_OP_ACQUIRE => self.spm_acquire(g),
            KFD_IOCTL_SPM_OP_RELEASE => self.spm_release(g),
            KFD_IOCTL_SPM_OP_SET_DEST_BUF => self.spm_set_dest(g, &mut a),
            _ => Err(libc::EINVAL),
        };
        crate::sys::put(buf, &a);
        r
    }

    fn spm_acquire(&self, g: usize) -> Result<(), i32> {
        let s = &self.spm.gpus[g];
        let mut st = s.lock();
        let me = current_pid();
        if st.pid == me {
            return Err(libc::EBUSY);
        }
        self.devmem()?.lock().spm_take(g, me)?;
        st.pid = me;
        st.ring = vec![0u8; RING_BYTES].into_boxed_slice();
        Ok(())
    }

    pub(crate) fn spm_release(&self, g: usize) -> Result<(), i32> {
        let s = &self.spm.gpus[g];
        let mut st = s.lock();
        if st.pid != current_pid() {
            return Err(libc::EINVAL);
        }
        let thread = Self::spm_stop(&mut st);
        let run = st.run;
        *st = SpmState { run, ..SpmState::default() };
        drop(st);
        s.cv.notify_all();
        join(thread);
        if let Ok(dev) = self.devmem() {
            dev.lock().spm_drop(g, current_pid());
        }
        Ok(())
    }

    /// Release the SPM of every GPU this process holds (kfd_spm_release_process_device).
    pub(crate) fn spm_release_all(&self) {
        for g in 0..self.spm.gpus.len() {
            let _ = self.spm_release(g);
        }
    }

    /// Stop the stream (amdgpu_amdkfd_rlc_spm_cntl(0): the ring restarts empty); the streamer
    /// to join once the lock is dropped.
    fn spm_stop(st: &mut SpmState) -> Option<std::thread::JoinHandle<()>> {
        st.started = false;
        st.run += 1;
        st.ring_head = 0;
        st.ring_len = 0;
        st.thread.take()
    }

    fn spm_set_dest(&self, g: usize, a: &mut kfd_ioctl_spm_args) -> Result<(), i32> {
        let s = self.spm.gpus[g].clone();
        let mut st = s.lock();
        if st.pid != current_pid() {
            return Err(libc::EINVAL);
        }
        let size = a.buf_size / 32 * 32;
        if size <= HEADER_BYTES {
            return Err(libc::EINVAL);
        }
        if st.buf.is_some() {
            if a.timeout != 0 && !st.filled {
                // spm_wait_for_fill_awake: until the buffer fills or the time is up; a timeout
                // is success and runs no worker.
                let deadline = Instant::now() + Duration::from_millis(u64::from(a.timeout));
                while !st.filled && st.buf.is_some() {
                    let now = Instant::now();
                    if now >= deadline {
                        break;
                    }
                    st = s.cv.wait_timeout(st, deadline - now).unwrap_or_else(|e| e.into_inner()).0;
                }
            } else if a.timeout == 0 {
                // The copy of what the ring holds (schedule_work + flush_work).
                st.drain(true);
            }
        }
        a.bytes_copied = 0;
        a.has_data_loss = 0;
        if let Some((addr, _)) = st.buf.take() {
            a.bytes_copied = st.copied;
            a.has_data_loss = u32::from(st.data_loss);
            let header = kfd_ioctl_spm_buffer_header {
                version: SPM_VERSION,
                bytes_copied: st.copied,
                has_data_loss: u32::from(st.data_loss),
                reserved: [0; 5],
            };
            copy_to_user(addr.wrapping_sub(u64::from(HEADER_BYTES)) as usize, header.as_bytes()).map_err(|_| libc::EFAULT)?;
        }
        if a.dest_buf != 0 {
            st.buf = Some((a.dest_buf.wrapping_add(u64::from(HEADER_BYTES)), size - HEADER_BYTES));
            st.copied = 0;
            st.filled = false;
            st.data_loss = false;
            if st.started {
                st.drain(false);
            } else {
                st.started = true;
                st.run += 1;
                st.seq = 0;
                let (run, weak, gpu) = (st.run, self.shared.clone(), s.clone());
                let every = interval();
                st.thread = std::thread::Builder::new().name(format!("spm_{g}")).spawn(move || streamer(weak, gpu, g, run, every)).ok();
            }
        } else {
            let thread = Self::spm_stop(&mut st);
            drop(st);
            s.cv.notify_all();
            join(thread);
        }
        Ok(())
    }

    /// One sample of GPU `g` in the model's format (model/SPM.md).
    fn spm_sample(&self, g: usize, seq: u32) -> [u8; SAMPLE_BYTES] {
        let mut out = [0u8; SAMPLE_BYTES];
        out[..8].copy_from_slice(&self.gpu_clock_counter(self.gpus[g].gpu_id).to_le_bytes());
        out[8..12].copy_from_slice(&seq.to_le_bytes());
        out[12..14].copy_from_slice(&(SAMPLE_FORMAT as u16).to_le_bytes());
        out[14..16].copy_from_slice(&(SAMPLE_COUNTERS as u16).to_le_bytes());
        let c = self.gpu_counters(self.gpus[g].gpu_id).unwrap_or_default();
        let values = [c.packets[0], c.packets[1], c.packets[2], c.dispatches, c.waves, c.bytes_written.iter().sum()];
        for (k, v) in values.iter().enumerate() {
            out[16 + 8 * k..24 + 8 * k].copy_from_slice(&v.to_le_bytes());
        }
        out
    }
}

/// Wait for a stopped streamer to end (unless this is it: the model may be dropped on the
/// streamer's thread when its handle was the last one).
fn join(thread: Option<std::thread::JoinHandle<()>>) {
    if let Some(t) = thread.filter(|t| t.thread().id() != std::thread::current().id()) {
        let _ = t.join();
    }
}

/// The RLC of GPU `g`: a sample every `every` while stream `run` is current.
fn streamer(model: Weak<Model>, gpu: Arc<SpmGpu>, g: usize, run: u64, every: Duration) {
    loop {
        // The next sample one interval after this one (a late thread skips, never bursts:
        // samples are always at least an interval apart).
        let next = Instant::now() + every;
        {
            let Some(m) = model.upgrade() else { return };
            let mut st = gpu.st.lock().unwrap_or_else(|e| e.into_inner());
            if st.run != run {
                return;
            }
            let sample = m.spm_sample(g, st.seq);
            st.seq = st.seq.wrapping_add(1);
            if !st.push(&sample) {
                st.data_loss = true; // the RLC stalls: the sample is lost
            }
            st.drain(false);
            if st.filled {
                gpu.cv.notify_all();
            }
        }
        let mut st = gpu.st.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if st.run != run {
                return;
            }
            let now = Instant::now();
            if now >= next {
                break;
            }
            st = gpu.cv.wait_timeout(st, next - now).unwrap_or_else(|e| e.into_inner()).0;
        }
    }
}
