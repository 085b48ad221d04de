//! Performance counters (upstream perfctr.c / pmc_table.c): the per-ASIC block tables, the
//! counter properties built from them, and traces (register, acquire, start, query, stop).
//!
//! **Tables.** `gen_tables.rs` holds upstream's tables in our form (generated from the
//! compiler-computed `core/tests/data/pmc/pmc-tables.tsv`); [`select`] is upstream's rule for
//! which table a node gets (its gfx version, and the PCI device id for gfx8.0.3). Lookups
//! allocate nothing.
//!
//! **Who reads a counter.** Upstream's thunk reads only *privileged* counters itself (through
//! the kernel's perf interface: the IOMMUv2 block, removed from upstream in 2023); every block
//! of its tables is reported `NONPRIV_IMMEDIATE` (the runtime programs those with PM4 packets)
//! and RegisterTrace skips such counters. Here the same rule holds, and a counter is reported
//! `PRIVILEGED_IMMEDIATE` exactly when the backend behind the port counts it itself
//! ([`Kfd::pmc_counter`]): on `/dev/kfd` none (as upstream today), on the model the counters of
//! model/COUNTERS.md.
//!
//! **Access.** Upstream arbitrated privileged counters between processes with a named POSIX
//! semaphore and a shared-memory slot table (until 2023; UNAVAILABLE when another process held
//! the slots) and today arbitrates nothing. Newer KFDs arbitrate themselves with the PMC
//! operation of `AMDKFD_IOC_PROFILER` (a per-device profiling lock, EBUSY for a second process):
//! where the KFD offers it, AcquireTraceAccess takes that lock and another process's lock is
//! UNAVAILABLE; where it does not, AcquireTraceAccess arbitrates nothing, as upstream.

mod gen_tables;

use crate::abi::hsakmt::*;
use crate::port::Kfd;
use crate::status::{Errno, KmtResult, Status};
use alloc::boxed::Box;
use alloc::vec::Vec;

/// An inclusive range of counter ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdRange(pub u32, pub u32);

/// One block of one ASIC table: the counters it counts at once (`slots`; 0 = the ASIC has no
/// such block) and its counter ids, in upstream's order.
#[derive(Clone, Copy, Debug)]
pub struct BlockDef {
    pub slots: u32,
    pub ids: &'static [IdRange],
}

impl BlockDef {
    /// Number of counter ids.
    pub fn num_counters(&self) -> u32 {
        self.ids.iter().map(|r| r.1 - r.0 + 1).sum()
    }

    /// The counter ids in order.
    pub fn counter_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.ids.iter().flat_map(|r| r.0..=r.1)
    }

    pub fn has_counter(&self, id: u64) -> bool {
        self.ids.iter().any(|r| id >= u64::from(r.0) && id <= u64::from(r.1))
    }
}

/// Every counter of upstream's tables is 64 bits wide with a full mask.
pub const COUNTER_BITS: u32 = 64;
pub const COUNTER_MASK: u64 = u64::MAX;

/// Upstream's `enum perf_block_id` (the `BlockIndex` of an `HsaCounter`), by name.
pub const BLOCK_NAMES: [&str; NUM_BLOCKS] = [
    "CB", "CPC", "CPF", "CPG", "DB", "GDS", "GRBM", "GRBMSE", "IA", "MC", "PASC", "PASU", "SPI", "SRBM", "SQ", "SX", "TA", "TCA", "TCC",
    "TCP", "TCS", "TD", "VGT", "WD",
];
/// `PERFCOUNTER_BLOCKID__MAX`.
pub const NUM_BLOCKS: usize = 24;

/// Block indices used by name elsewhere.
pub mod block {
    pub const CPF: u32 = 2;
    pub const GRBM: u32 = 6;
    pub const SPI: u32 = 12;
    pub const SQ: u32 = 14;
    pub const TCC: u32 = 18;
}

/// The tables upstream has (`<name>_blocks[]` of pmc_table.c).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Asic {
    Kaveri,
    Hawaii,
    Carrizo,
    Fiji,
    Polaris,
    Vega,
    Navi,
}

impl Asic {
    pub fn name(self) -> &'static str {
        match self {
            Asic::Kaveri => "kaveri",
            Asic::Hawaii => "hawaii",
            Asic::Carrizo => "carrizo",
            Asic::Fiji => "fiji",
            Asic::Polaris => "polaris",
            Asic::Vega => "vega",
            Asic::Navi => "navi",
        }
    }

    /// Block `index` of this table (`None` past `NUM_BLOCKS`).
    pub fn block(self, index: u32) -> Option<BlockDef> {
        gen_tables::TABLES[self as usize].get(index as usize).copied()
    }

    /// The blocks this ASIC has (slots > 0), with their indices, in index order.
    pub fn blocks(self) -> impl Iterator<Item = (u32, BlockDef)> {
        gen_tables::TABLES[self as usize].iter().enumerate().filter(|(_, b)| b.slots > 0).map(|(i, b)| (i as u32, *b))
    }
}

/// Upstream's table selection (`hsakmt_get_block_properties`): by the node's gfx version
/// `(major << 16) | (minor << 8) | stepping` and, for gfx8.0.3, its PCI device id. Tonga and
/// every major but 7..10 are INVALID_PARAMETER (so are CPU nodes, gfx version 0).
pub fn select(gfxv: u32, device_id: u16) -> KmtResult<Asic> {
    match gfxv >> 16 {
        7 if gfxv == 0x07_00_00 => Ok(Asic::Kaveri),
        7 => Ok(Asic::Hawaii),
        8 if gfxv == 0x08_00_02 => Err(Status::INVALID_PARAMETER),
        8 if gfxv == 0x08_00_01 => Ok(Asic::Carrizo),
        // Fiji and Polaris/VegaM share gfx 8.0.3; upstream tells them apart by device id.
        8 if device_id == 0x7300 || device_id == 0x730F => Ok(Asic::Fiji),
        8 => Ok(Asic::Polaris),
        9 => Ok(Asic::Vega),
        10 => Ok(Asic::Navi),
        _ => Err(Status::INVALID_PARAMETER),
    }
}

/// The `HSA_PROFILEBLOCK_AMD_*` id of a block (upstream's blockid2uuid). CPC has none upstream
/// (no table has a CPC block); it is left zero.
pub fn block_uuid(index: u32) -> HSA_UUID {
    match index {
        0 => HSA_PROFILEBLOCK_AMD_CB,
        2 => HSA_PROFILEBLOCK_AMD_CPF,
        3 => HSA_PROFILEBLOCK_AMD_CPG,
        4 => HSA_PROFILEBLOCK_AMD_DB,
        5 => HSA_PROFILEBLOCK_AMD_GDS,
        6 => HSA_PROFILEBLOCK_AMD_GRBM,
        7 => HSA_PROFILEBLOCK_AMD_GRBMSE,
        8 => HSA_PROFILEBLOCK_AMD_IA,
        9 => HSA_PROFILEBLOCK_AMD_MC,
        10 => HSA_PROFILEBLOCK_AMD_PASC,
        11 => HSA_PROFILEBLOCK_AMD_PASU,
        12 => HSA_PROFILEBLOCK_AMD_SPI,
        13 => HSA_PROFILEBLOCK_AMD_SRBM,
        14 => HSA_PROFILEBLOCK_AMD_SQ,
        15 => HSA_PROFILEBLOCK_AMD_SX,
        16 => HSA_PROFILEBLOCK_AMD_TA,
        17 => HSA_PROFILEBLOCK_AMD_TCA,
        18 => HSA_PROFILEBLOCK_AMD_TCC,
        19 => HSA_PROFILEBLOCK_AMD_TCP,
        20 => HSA_PROFILEBLOCK_AMD_TCS,
        21 => HSA_PROFILEBLOCK_AMD_TD,
        22 => HSA_PROFILEBLOCK_AMD_VGT,
        23 => HSA_PROFILEBLOCK_AMD_WD,
        _ => HSA_UUID { Data1: 0, Data2: 0, Data3: 0, Data4: [0; 8] },
    }
}

// ---- HsaCounterProperties in memory (packed(4): header 8 bytes, a block 24 + 32 per counter).

const PROPS_HEADER: usize = 8;
const BLOCK_HEADER: usize = 24;
const COUNTER_SIZE: usize = 32;

fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_ne_bytes());
}
fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_ne_bytes());
}

/// Build upstream's variable-length `HsaCounterProperties` for `asic` into 4-byte words (the
/// struct is packed(4)): NumBlocks, NumConcurrent (the sum of the blocks' slots), then each
/// block (BlockId, NumCounters, NumConcurrent, its counters: Type from `ty`, CounterId,
/// 64 bits, full mask, Flags.Global, BlockIndex).
pub fn build_properties(asic: Asic, mut ty: impl FnMut(u32, u64) -> HSA_PROFILE_TYPE) -> Box<[u32]> {
    let mut bytes = PROPS_HEADER;
    let (mut nblocks, mut concurrent) = (0u32, 0u32);
    for (_, b) in asic.blocks() {
        bytes += BLOCK_HEADER + COUNTER_SIZE * b.num_counters() as usize;
        nblocks += 1;
        concurrent += b.slots;
    }
    let mut words = alloc::vec![0u32; bytes / 4].into_boxed_slice();
    let buf: &mut [u8] = zerocopy::IntoBytes::as_mut_bytes(&mut *words);
    put32(buf, 0, nblocks);
    put32(buf, 4, concurrent);
    let mut at = PROPS_HEADER;
    for (index, b) in asic.blocks() {
        let u = block_uuid(index);
        put32(buf, at, u.Data1);
        buf[at + 4..at + 6].copy_from_slice(&u.Data2.to_ne_bytes());
        buf[at + 6..at + 8].copy_from_slice(&u.Data3.to_ne_bytes());
        buf[at + 8..at + 16].copy_from_slice(&u.Data4);
        put32(buf, at + 16, b.num_counters());
        put32(buf, at + 20, b.slots);
        at += BLOCK_HEADER;
        for id in b.counter_ids() {
            let mut flags = HsaCounterFlags { Value: 0 };
            flags.set_bf_Global(1);
            put32(buf, at, ty(index, u64::from(id)));
            put64(buf, at + 4, u64::from(id));
            put32(buf, at + 12, COUNTER_BITS);
            put64(buf, at + 16, COUNTER_MASK);
            put32(buf, at + 24, flags.Value);
            put32(buf, at + 28, index);
            at += COUNTER_SIZE;
        }
    }
    debug_assert_eq!(at, bytes);
    words
}

// ---- AMDKFD_IOC_PROFILER.

/// Which form of `AMDKFD_IOC_PROFILER` the KFD answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProfilerIoctl {
    /// ROCm's amdgpu-dkms: nr 0x86, `struct kfd_ioctl_profiler_args` of 40 bytes (op, 4 bytes
    /// of padding, a union at offset 8 with `pc_sample`, `pmc`, `version`), the layout of
    /// `crate::abi::kfd`.
    Dkms,
    /// Mainline (KFD 1.23, 2026): nr 0x28, 16 bytes (op, then a union at offset 4 of `pmc`,
    /// `ptl`, `version`).
    Mainline,
}

/// `_IOWR('K', 0x28, 16 bytes)`: mainline's AMDKFD_IOC_PROFILER.
pub const AMDKFD_IOC_PROFILER_MAINLINE: u32 = (3 << 30) | (16 << 16) | (0x4B << 8) | 0x28;
/// The first KFD interface version whose mainline kernel has the profiler at 0x28 (the rule
/// rocprofiler-sdk applies).
pub const MAINLINE_PROFILER_SINCE: (u32, u32) = (1, 23);

impl ProfilerIoctl {
    pub fn request(self) -> u32 {
        match self {
            ProfilerIoctl::Dkms => crate::abi::kfd::AMDKFD_IOC_PROFILER,
            ProfilerIoctl::Mainline => AMDKFD_IOC_PROFILER_MAINLINE,
        }
    }
    /// Offset of the union in the argument.
    pub fn union_at(self) -> usize {
        match self {
            ProfilerIoctl::Dkms => 8,
            ProfilerIoctl::Mainline => 4,
        }
    }
    fn len(self) -> usize {
        match self {
            ProfilerIoctl::Dkms => 40,
            ProfilerIoctl::Mainline => 16,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            ProfilerIoctl::Dkms => "AMDKFD_IOC_PROFILER 0x86 (amdgpu-dkms)",
            ProfilerIoctl::Mainline => "AMDKFD_IOC_PROFILER 0x28 (mainline)",
        }
    }

    /// Issue one operation: `words` are the union's first u32s; they come back as the KFD left
    /// them.
    fn call(self, kfd: &dyn Kfd, op: u32, words: &mut [u32; 3]) -> Result<(), Errno> {
        let mut buf = [0u8; 40];
        let arg = &mut buf[..self.len()];
        arg[..4].copy_from_slice(&op.to_ne_bytes());
        let u = self.union_at();
        for (i, w) in words.iter().enumerate() {
            arg[u + 4 * i..u + 4 * i + 4].copy_from_slice(&w.to_ne_bytes());
        }
        // SAFETY: the VERSION and PMC operations read and write only the argument (a gpu_id
        // and flags, or the version word); the PC-sampling member, the only one with an
        // address, is never used (op is VERSION or PMC), so nothing is handed to a GPU.
        unsafe { kfd.ioctl(self.request(), arg) }?;
        for (i, w) in words.iter_mut().enumerate() {
            let mut b = [0u8; 4];
            b.copy_from_slice(&arg[u + 4 * i..u + 4 * i + 4]);
            *w = u32::from_ne_bytes(b);
        }
        Ok(())
    }

    /// What the running KFD offers: the form its version implies (mainline from 1.23, else
    /// amdgpu-dkms's), probed with the VERSION operation; `None` when that fails. Returns the
    /// profiler interface version too.
    pub fn detect(kfd: &dyn Kfd, kfd_version: (u32, u32)) -> Option<(ProfilerIoctl, u32)> {
        let form = if kfd_version >= MAINLINE_PROFILER_SINCE { ProfilerIoctl::Mainline } else { ProfilerIoctl::Dkms };
        let mut w = [0u32; 3];
        form.call(kfd, crate::abi::kfd::KFD_IOC_PROFILER_VERSION, &mut w).ok()?;
        Some((form, w[0]))
    }

    /// The PMC operation: take (`lock`) or drop the device's profiling lock; with
    /// `perfcount_enable` the KFD also turns on performance counting for every queue.
    pub fn pmc(self, kfd: &dyn Kfd, gpu_id: u32, lock: bool, perfcount_enable: bool) -> Result<(), Errno> {
        let mut w = [gpu_id, u32::from(lock), u32::from(perfcount_enable)];
        self.call(kfd, crate::abi::kfd::KFD_IOC_PROFILER_PMC, &mut w)
    }
}

// ---- Traces.

/// upstream's MAX_COUNTERS of RegisterTrace.
pub const MAX_TRACE_COUNTERS: u32 = 512;

struct TraceCounter {
    block: u32,
    id: u64,
    /// Counted while started (earlier started intervals).
    acc: u64,
    /// The backend's value when the current interval started.
    base: u64,
}

struct Trace {
    token: u64,
    gpu_id: u32,
    counters: Vec<TraceCounter>,
    acquired: bool,
    started: bool,
    buf: u64,
    buf_size: u64,
}

/// One counter as RegisterTrace receives it (`HsaCounter`'s fields that matter).
#[derive(Clone, Copy, Debug)]
pub struct CounterReq {
    pub ty: HSA_PROFILE_TYPE,
    pub block: u32,
    pub id: u64,
    pub size_bits: u32,
}

/// What a registered trace is: `TraceId`, `TraceBufferMinSizeBytes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Registered {
    pub trace_id: u64,
    pub min_buffer_bytes: u64,
}

/// The PMC state of one open KFD.
#[derive(Default)]
pub struct Pmc {
    /// Counter properties per node, built once and kept until close (upstream's cache: the
    /// pointer handed out stays valid that long).
    props: Vec<(u32, Box<[u32]>)>,
    traces: Vec<Trace>,
    next_token: u64,
    /// Per GPU: how many acquired traces hold the KFD's profiling lock.
    holds: Vec<(u32, u32)>,
    /// `Some(None)`: probed, the KFD has no profiler ioctl.
    profiler: Option<Option<(ProfilerIoctl, u32)>>,
}

const TOKEN_TAG: u64 = 0x504d_4300_0000_0000; // "PMC" in the high bytes: never a small integer

impl Pmc {
    pub fn cached_properties(&self, node: u32) -> Option<*const HsaCounterProperties> {
        self.props.iter().find(|(n, _)| *n == node).map(|(_, w)| w.as_ptr().cast())
    }

    pub fn cache_properties(&mut self, node: u32, words: Box<[u32]>) -> *const HsaCounterProperties {
        self.props.push((node, words));
        self.props.last().map_or(core::ptr::null(), |(_, w)| w.as_ptr().cast())
    }

    pub fn profiler(&mut self, kfd: &dyn Kfd, version: (u32, u32)) -> Option<(ProfilerIoctl, u32)> {
        *self.profiler.get_or_insert_with(|| ProfilerIoctl::detect(kfd, version))
    }

    pub fn live_traces(&self) -> usize {
        self.traces.len()
    }

    fn find(&mut self, token: u64) -> KmtResult<&mut Trace> {
        if token == 0 {
            return Err(Status::INVALID_PARAMETER);
        }
        self.traces.iter_mut().find(|t| t.token == token).ok_or(Status::INVALID_HANDLE)
    }

    /// RegisterTrace after the node checks: upstream's rules (see the module notes) with the
    /// node's table `asic`.
    pub fn register(&mut self, gpu_id: u32, asic: Option<Asic>, reqs: &[CounterReq]) -> KmtResult<Registered> {
        if reqs.len() as u64 > u64::from(MAX_TRACE_COUNTERS) {
            return Err(Status::NO_MEMORY);
        }
        let mut per_block = [0u32; NUM_BLOCKS];
        let mut min_bytes = 0u64;
        for r in reqs {
            if r.block as usize >= NUM_BLOCKS {
                return Err(Status::INVALID_PARAMETER);
            }
            // Only privileged counters are the thunk's to read.
            if r.ty > HSA_PROFILE_TYPE_PRIVILEGED_STREAMING {
                continue;
            }
            min_bytes += u64::from(r.size_bits / 8);
            per_block[r.block as usize] += 1;
        }
        let mut blocks = 0;
        for (i, &n) in per_block.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let slots = asic.and_then(|a| a.block(i as u32)).map_or(0, |b| b.slots);
            if slots == 0 || n > slots {
                return Err(Status::INVALID_PARAMETER);
            }
            blocks += 1;
        }
        if blocks == 0 {
            return Err(Status::INVALID_PARAMETER);
        }
        // Block order, then the caller's order within a block (what QueryTrace writes).
        let mut counters = Vec::with_capacity(reqs.len());
        for b in 0..NUM_BLOCKS as u32 {
            for r in reqs.iter().filter(|r| r.block == b && r.ty <= HSA_PROFILE_TYPE_PRIVILEGED_STREAMING) {
                counters.push(TraceCounter { block: b, id: r.id, acc: 0, base: 0 });
            }
        }
        self.next_token += 1;
        let token = TOKEN_TAG | self.next_token;
        self.traces.push(Trace { token, gpu_id, counters, acquired: false, started: false, buf: 0, buf_size: 0 });
        Ok(Registered { trace_id: token, min_buffer_bytes: min_bytes.div_ceil(4096) * 4096 })
    }

    /// The gpu_id a trace was registered on (INVALID_PARAMETER for 0, INVALID_HANDLE if unknown).
    pub fn trace_gpu(&mut self, token: u64) -> KmtResult<u32> {
        Ok(self.find(token)?.gpu_id)
    }

    /// AcquireTraceAccess after the checks: every counter must be one the backend counts
    /// (else ERROR, upstream's answer when it cannot open a counter), then the KFD's profiling
    /// lock where it has one (another process's: UNAVAILABLE; no permission: ERROR).
    pub fn acquire(&mut self, kfd: &dyn Kfd, version: (u32, u32), token: u64) -> KmtResult<()> {
        let prof = self.profiler(kfd, version);
        let t = self.find(token)?;
        if t.acquired {
            return Ok(());
        }
        if t.counters.iter().any(|c| kfd.pmc_counter(t.gpu_id, c.block, c.id).is_none()) {
            return Err(Status::ERROR);
        }
        let gpu = t.gpu_id;
        let held = self.holds.iter().find(|(g, _)| *g == gpu).map_or(0, |h| h.1);
        if held == 0 {
            if let Some((p, _)) = prof {
                match p.pmc(kfd, gpu, true, true) {
                    Ok(()) => {}
                    Err(e) if e.0 == Errno::EALREADY => {}
                    Err(e) if e.0 == Errno::EBUSY => return Err(Status::UNAVAILABLE),
                    Err(_) => return Err(Status::ERROR),
                }
            }
        }
        match self.holds.iter_mut().find(|(g, _)| *g == gpu) {
            Some(h) => h.1 += 1,
            None => self.holds.push((gpu, 1)),
        }
        self.find(token)?.acquired = true;
        Ok(())
    }

    fn stop_counting(kfd: &dyn Kfd, t: &mut Trace) {
        if t.started {
            for c in &mut t.counters {
                let now = kfd.pmc_counter(t.gpu_id, c.block, c.id).unwrap_or(c.base);
                c.acc = c.acc.wrapping_add(now.wrapping_sub(c.base));
            }
            t.started = false;
        }
    }

    /// ReleaseTraceAccess: stops counting and drops the profiling lock when this was the last
    /// trace of the process holding it on that GPU. Releasing an unacquired trace is SUCCESS
    /// (upstream).
    pub fn release(&mut self, kfd: &dyn Kfd, token: u64) -> KmtResult<()> {
        let prof = self.profiler.flatten();
        let t = self.find(token)?;
        if !t.acquired {
            return Ok(());
        }
        Self::stop_counting(kfd, t);
        t.acquired = false;
        let gpu = t.gpu_id;
        if let Some(h) = self.holds.iter_mut().find(|(g, _)| *g == gpu) {
            h.1 -= 1;
            if h.1 == 0 {
                if let Some((p, _)) = prof {
                    let _ = p.pmc(kfd, gpu, false, false);
                }
                self.holds.retain(|(_, n)| *n > 0);
            }
        }
        Ok(())
    }

    /// StartTrace after the argument checks. Not acquired: UNAVAILABLE (upstream's answer for
    /// a counter with no open perf event). Started again: counting goes on (upstream enables
    /// what is enabled), the buffer is replaced.
    pub fn start(&mut self, kfd: &dyn Kfd, token: u64, buf: u64, size: u64) -> KmtResult<()> {
        let t = self.find(token)?;
        if !t.acquired {
            return Err(Status::UNAVAILABLE);
        }
        if !t.started {
            for c in &mut t.counters {
                c.base = kfd.pmc_counter(t.gpu_id, c.block, c.id).ok_or(Status::ERROR)?;
            }
            t.started = true;
        }
        t.buf = buf;
        t.buf_size = size;
        Ok(())
    }

    /// QueryTrace: the buffer's address and each counter's count so far (the values of the
    /// started intervals). A buffer too small for every counter (or none: never started) is
    /// NO_MEMORY, as upstream.
    pub fn query(&mut self, kfd: &dyn Kfd, token: u64, out: &mut Vec<u64>) -> KmtResult<u64> {
        let t = self.find(token)?;
        if (t.counters.len() as u64).saturating_mul(8) > t.buf_size {
            return Err(Status::NO_MEMORY);
        }
        out.clear();
        for c in &t.counters {
            let running = if t.started { kfd.pmc_counter(t.gpu_id, c.block, c.id).unwrap_or(c.base).wrapping_sub(c.base) } else { 0 };
            out.push(c.acc.wrapping_add(running));
        }
        Ok(t.buf)
    }

    /// StopTrace: not acquired is UNAVAILABLE; stopping a stopped trace is SUCCESS.
    pub fn stop(&mut self, kfd: &dyn Kfd, token: u64) -> KmtResult<()> {
        let t = self.find(token)?;
        if !t.acquired {
            return Err(Status::UNAVAILABLE);
        }
        Self::stop_counting(kfd, t);
        Ok(())
    }

    /// UnregisterTrace after the node checks: stops it, releases its access (ours: upstream
    /// leaves that to the caller) and forgets it.
    pub fn unregister(&mut self, kfd: &dyn Kfd, token: u64) -> KmtResult<()> {
        self.release(kfd, token)?;
        self.traces.retain(|t| t.token != token);
        Ok(())
    }

    /// Close: every trace released and forgotten.
    pub fn release_all(&mut self, kfd: &dyn Kfd) {
        let tokens: Vec<u64> = self.traces.iter().map(|t| t.token).collect();
        for t in tokens {
            let _ = self.unregister(kfd, t);
        }
        self.props.clear();
    }
}
