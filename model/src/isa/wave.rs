//! Wave launch and execution, one interpreter for gfx90a, gfx942 and gfx1100 (wave64 or wave32
//! lanes): the ISA decides the decoder and how a wave finds its scratch (gfx90a: the private
//! segment V# in user SGPRs; gfx942, gfx1100: `scratch_*` into the model's private region). A
//! dispatch runs its workgroups one after
//! another; a workgroup's waves are interleaved (each runs until `s_barrier`, its end or a
//! slice of [`SLICE`] instructions), so barriers and the workgroup's LDS work across waves.
//! Every global memory access goes through the GPU page table (`Exec::read` / `Exec::write`),
//! so a bad program faults the queue, never the host; LDS is a per-workgroup buffer whose
//! out-of-range accesses read 0 and drop writes, as gfx9's LDS does.

use super::descriptor::{props, KernelDescriptor};
use super::fp;
use super::gfx11::{self, NULL};
use super::gfx9::{self, carry_in, carry_out, Enc, Inst, Target, EXEC, GETREG, LITERAL, SADDR_OFF, SETREG, SETREG_IMM32, VCC};
use crate::engine::{bad_ec, Exec, Halt};
use hsakmt_core::abi::kfd::{
    EC_QUEUE_PACKET_DISPATCH_CODE_INVALID, EC_QUEUE_WAVE_ABORT, EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION, EC_QUEUE_WAVE_TRAP,
};
use hsakmt_core::packet::aql::KernelDispatch;
use std::collections::HashMap;

/// Most wave-instructions one dispatch may execute: past it the queue stops (a runaway
/// kernel does not stall the engine forever).
pub const MAX_WAVE_INSTRUCTIONS: u64 = 1 << 27;
/// Lanes a wave's registers hold (wave64; a wave32 uses the first 32).
const LANES: usize = 64;
/// Instructions a wave of a multi-wave workgroup runs before the next wave gets its turn
/// (waves spinning on each other's LDS or memory writes still make progress).
pub const SLICE: u32 = 4096;
/// LDS a workgroup may have on gfx90a (64 KiB).
pub const MAX_LDS: u32 = 64 << 10;
/// Base address of the private segment V# the model hands to waves: buffer accesses through
/// a V# whose base lies at or above it go to the workgroup's scratch (not the page table).
pub const PRIVATE_BASE: u64 = 0x8000_0000_0000;
/// Most bytes of private memory one work-item may have (the dispatch is refused past it).
pub const MAX_PRIVATE: u32 = 64 << 10;
/// Bytes at a kernel's entry that the CP skips when it preloads kernargs (the prologue that
/// would load them on firmware without preloading; LLVM fills it with `s_trap 2`).
const KERNARG_PRELOAD_PROLOGUE: u64 = 256;
/// amd_queue_t.read_dispatch_id's offset (the queue pointer is found from the read pointer).
const AMDQ_READ_DISPATCH_ID: u64 = 128;

/// The machine code a GPU runs: which decoder reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Isa {
    /// gfx90a or gfx942 (wave64).
    Gfx9(Target),
    /// gfx11 (gfx1100): wave32 or wave64 as the kernel descriptor asks.
    Gfx11,
}

impl Isa {
    /// The machine code a GPU of this `gfx_version` runs on the model, if the model runs it.
    pub(crate) fn of(gfx_version: (u32, u32, u32)) -> Option<Isa> {
        match gfx_version {
            (9, 0, 10) => Some(Isa::Gfx9(Target::Gfx90a)),
            (9, 4, 2) => Some(Isa::Gfx9(Target::Gfx942)),
            (11, 0, 0) => Some(Isa::Gfx11),
            _ => None,
        }
    }
}

/// What the dispatch packet and its queue give the waves.
#[derive(Clone, Copy)]
pub(crate) struct Launch {
    pub isa: Isa,
    pub desc_va: u64,
    pub packet_va: u64,
    pub index: u64,
    pub k: KernelDispatch,
    /// PM4 dispatches: the user SGPRs as COMPUTE_USER_DATA_0..15 give them (the descriptor's
    /// user SGPR count of them, from s0); AQL dispatches: `None` (the descriptor's properties
    /// say which the CP fills in).
    pub user_data: Option<[u32; 16]>,
}

struct Wave {
    /// SGPRs by operand code (0..=101 SGPRs, 106/107 VCC, 124 M0, 126/127 EXEC; 125, gfx11's
    /// NULL in decoded form, is a sink no read sees).
    s: [u32; 128],
    scc: bool,
    v: Vec<[u32; LANES]>,
    /// The wave's size: 64, or 32 (EXEC and VCC are then the low SGPR of their pairs).
    lanes: usize,
    pc: u64,
    /// Waves in the wave's workgroup.
    waves: u32,
    /// Byte offset of the wave's slot in the workgroup's scratch region.
    scratch_slot: usize,
    /// Has run `s_endpgm` / waits at `s_barrier`.
    ended: bool,
    at_barrier: bool,
    /// The MODE register: FP_ROUND (bits 0..4, always 0: round to nearest even), FP_DENORM
    /// (4..8: f32 in 4..6, f64/f16 in 6..8; bit 0 of a pair keeps input denormals, bit 1
    /// output denormals), DX10_CLAMP (8), IEEE (9), as the descriptor's rsrc1 sets them at
    /// launch and `s_setreg`/`s_denorm_mode` change them.
    mode: u32,
}

/// Why a wave gave up its turn.
enum Yield {
    End,
    Barrier,
    Slice,
}

/// The MODE register a wave starts with: rsrc1's FLOAT_ROUND_MODE (bits 12..16),
/// FLOAT_DENORM_MODE (16..20), ENABLE_DX10_CLAMP (21) and ENABLE_IEEE_MODE (23).
fn mode_at_launch(rsrc1: u32) -> u32 {
    (rsrc1 >> 12) & 0xf | ((rsrc1 >> 16) & 0xf) << 4 | ((rsrc1 >> 21) & 1) << 8 | ((rsrc1 >> 23) & 1) << 9
}

impl Wave {
    /// f32 denormals flushed on input, on output (MODE's FP_DENORM bits for f32 clear).
    fn flush32(&self) -> (bool, bool) {
        (self.mode & 0x10 == 0, self.mode & 0x20 == 0)
    }

    /// EXEC: the lanes that run (wave32: exec_lo only).
    fn exec(&self) -> u64 {
        self.mask(EXEC)
    }

    /// A lane mask in the SGPR (pair) at `c`: 64 bits in wave64, 32 in wave32.
    fn mask(&self, c: u16) -> u64 {
        let c = usize::from(c);
        let lo = u64::from(self.s[c]);
        if self.lanes == 32 {
            lo
        } else {
            lo | u64::from(self.s.get(c + 1).copied().unwrap_or(0)) << 32
        }
    }
}

/// Why a wave stopped early.
enum Stop {
    Halt(Halt),
    Illegal(&'static str),
    /// `s_trap`: the trap handler halts the wave and reports EC_QUEUE_WAVE_TRAP.
    Trap,
}

impl From<Halt> for Stop {
    fn from(h: Halt) -> Stop {
        Stop::Halt(h)
    }
}

/// A dispatch under way: what must outlive a preemption. The engine runs a dispatch for a
/// quantum of wave-instructions at a time ([`InFlight::run`]) and keeps this in the queue's
/// progress between runs, so other queues run in between and a queue destroy drops it at an
/// instruction boundary. Workgroups run one after another in x, y, z order; the one in flight
/// has its waves (registers, PC), LDS and scratch here.
pub(crate) struct InFlight {
    d: KernelDescriptor,
    l: Launch,
    lanes: usize,
    entry: u64,
    vgprs: usize,
    wg: [u32; 3],
    groups: [u32; 3],
    /// The next workgroup to launch, as a linear index (x fastest).
    next: u64,
    /// Waves of the workgroup in flight (0: none).
    live: usize,
    pool: Vec<Wave>,
    lds: Vec<u8>,
    scratch: Vec<u8>,
    lane_bytes: usize,
    wave_bytes: usize,
    cache: HashMap<u64, Op>,
    /// Wave-instructions the dispatch may still execute (MAX_WAVE_INSTRUCTIONS at the start).
    budget: u64,
    /// The kernarg dwords the CP preloads into user SGPRs (gfx942), read at the first run.
    preload: Option<Vec<u32>>,
}

impl std::fmt::Debug for InFlight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InFlight(packet {}, workgroup {}, budget left {})", self.l.index, self.next, self.budget)
    }
}

impl InFlight {
    /// Check the dispatch of the AMDHSA kernel whose descriptor is `d` and set it up; an
    /// impossible one is refused with the CP's exception.
    pub(crate) fn new(d: &KernelDescriptor, l: &Launch) -> Result<InFlight, Halt> {
        let at = l.index;
        let refuse = |what| Err(bad_ec(at, what, EC_QUEUE_PACKET_DISPATCH_CODE_INVALID));
        if d.properties & props::WAVEFRONT_SIZE32 != 0 && matches!(l.isa, Isa::Gfx9(_)) {
            return refuse("wave32 kernel on a wave64 GPU");
        }
        // Architected flat scratch (gfx942): the hardware sets FLAT_SCRATCH; a private segment
        // buffer or flat scratch init SGPR "is not supported and must be 0" (AMDGPUUsage).
        if l.isa == Isa::Gfx9(Target::Gfx942) && d.properties & (props::PRIVATE_SEGMENT_BUFFER | props::FLAT_SCRATCH_INIT) != 0 {
            return refuse("private segment buffer or flat scratch init SGPRs with architected flat scratch");
        }
        // Kernarg preloading: gfx940+ (the CP loads kernarg dwords into the user SGPRs after the
        // others and starts the wave 256 bytes past the entry, past the compatibility prologue
        // firmware without preloading would run).
        if d.kernarg_preload != 0 && l.isa != Isa::Gfx9(Target::Gfx942) {
            return refuse("kernarg preloading on a GPU without it");
        }
        if l.user_data.is_some() && d.kernarg_preload != 0 {
            return refuse("kernarg preloading without a kernarg segment");
        }
        if d.user_sgprs_requested() + d.kernarg_preload_len() > d.user_sgpr_count() || d.user_sgpr_count() > 16 {
            return refuse("kernel descriptor asks for more user SGPRs than USER_SGPR_COUNT");
        }
        if mode_at_launch(d.rsrc1) & 0xf != 0 {
            return refuse("FLOAT_ROUND_MODE other than round to nearest even is not modelled");
        }
        let lanes = if d.properties & props::WAVEFRONT_SIZE32 != 0 { 32 } else { LANES };
        let prologue = if d.kernarg_preload_len() != 0 { KERNARG_PRELOAD_PROLOGUE } else { 0 };
        let entry = l.desc_va.wrapping_add(d.entry_offset as u64).wrapping_add(prologue);
        let vgprs = match l.isa {
            // gfx90a, gfx942: the unified VGPR/AGPR file, granules of 8.
            Isa::Gfx9(_) => d.vgprs_gfx90a(),
            // gfx10+: granules of 8 VGPRs in wave32, 4 in wave64 (AMDGPUUsage, compute_pgm_rsrc1).
            Isa::Gfx11 => ((d.rsrc1 & 0x3f) as usize + 1) * if lanes == 32 { 8 } else { 4 },
        };
        let k = &l.k;
        let wg = [u32::from(k.workgroup_size[0]), u32::from(k.workgroup_size[1]), u32::from(k.workgroup_size[2])];
        let groups = [0, 1, 2].map(|i| k.grid_size[i].div_ceil(wg[i]));
        // LDS: the packet's group segment size (static + dynamic, as the runtime fills it in), at
        // least the descriptor's static size.
        let lds_size = k.group_segment_size.max(d.group_segment_fixed_size);
        if lds_size > MAX_LDS {
            return refuse("group segment larger than the 64 KiB of LDS a workgroup has");
        }
        let lds = vec![0u8; lds_size as usize];
        // Scratch: one region for the workgroup in flight (the model runs one at a time), each
        // wave's 64 lanes swizzled dword by dword as the private segment V# describes.
        let lane_bytes = k.private_segment_size.max(d.private_segment_fixed_size).next_multiple_of(4);
        if lane_bytes > MAX_PRIVATE {
            return refuse("private segment larger than the model's 64 KiB per work-item");
        }
        let wg_items = (wg[0] * wg[1] * wg[2]) as usize;
        let wave_bytes = lane_bytes as usize * lanes;
        let scratch = vec![0u8; wave_bytes * wg_items.div_ceil(lanes)];
        Ok(InFlight {
            d: *d,
            l: *l,
            lanes,
            entry,
            vgprs,
            wg,
            groups,
            next: 0,
            live: 0,
            pool: Vec::new(),
            lds,
            scratch,
            lane_bytes: lane_bytes as usize,
            wave_bytes,
            cache: HashMap::new(),
            budget: MAX_WAVE_INSTRUCTIONS,
            preload: None,
        })
    }

    /// Run the dispatch on for at most `quantum` wave-instructions: `Ok(true)` when it has
    /// ended, `Ok(false)` when preempted (run again to go on).
    pub(crate) fn run(&mut self, x: &Exec<'_>, quantum: u64) -> Result<bool, Halt> {
        let at = self.l.index;
        let [gx_n, gy_n, gz_n] = self.groups;
        let total = u64::from(gx_n) * u64::from(gy_n) * u64::from(gz_n);
        let mut left = quantum.min(self.budget);
        if self.preload.is_none() {
            // Read through the GPU page table like the CP does (unmapped: the fault).
            let len = self.d.kernarg_preload_len();
            let mut b = vec![0u8; 4 * len];
            if len != 0 {
                x.read(self.l.k.kernarg_address.wrapping_add(4 * self.d.kernarg_preload_offset()), &mut b)?;
            }
            self.preload = Some(b.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect());
        }
        loop {
            if self.live == 0 {
                if self.next == total {
                    return Ok(true);
                }
                self.start_workgroup(x);
            }
            let waves = self.live;
            let mut mem = Local { lds: &mut self.lds, scratch: &mut self.scratch, lane_bytes: self.lane_bytes, isa: self.l.isa };
            let before = left;
            let r = workgroup(x, &mut self.pool[..waves], &mut mem, &mut self.cache, &mut left);
            self.budget -= before - left;
            match r {
                Ok(true) => self.live = 0,
                Ok(false) => {}
                Err(Stop::Halt(h)) => return Err(h),
                Err(Stop::Illegal(what)) => return Err(bad_ec(at, what, EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION)),
                Err(Stop::Trap) => return Err(bad_ec(at, "s_trap", EC_QUEUE_WAVE_TRAP)),
            }
            if self.budget == 0 {
                return Err(bad_ec(at, "kernel ran past the model's instruction limit", EC_QUEUE_WAVE_ABORT));
            }
            if left == 0 {
                return Ok(self.live == 0 && self.next == total);
            }
        }
    }

    /// Launch the waves of workgroup `next`.
    fn start_workgroup(&mut self, x: &Exec<'_>) {
        let (wg, lanes) = (self.wg, self.lanes);
        let (gx_n, gy_n) = (u64::from(self.groups[0]), u64::from(self.groups[1]));
        let gid = [(self.next % gx_n) as u32, (self.next / gx_n % gy_n) as u32, (self.next / (gx_n * gy_n)) as u32];
        self.next += 1;
        // Partial workgroups at the grid's end.
        let size = [0, 1, 2].map(|i| wg[i].min(self.l.k.grid_size[i] - gid[i] * wg[i]));
        let items = size[0] * size[1] * size[2];
        let waves = items.div_ceil(lanes as u32);
        while self.pool.len() < waves as usize {
            let v = vec![[0; LANES]; self.vgprs];
            self.pool.push(Wave {
                s: [0; 128],
                scc: false,
                v,
                lanes,
                pc: self.entry,
                waves: 1,
                scratch_slot: 0,
                ended: false,
                at_barrier: false,
                mode: 0,
            });
        }
        for (wave_no, w) in self.pool.iter_mut().take(waves as usize).enumerate() {
            let preload = self.preload.as_deref().unwrap_or_default();
            launch(x, &self.d, &self.l, w, self.entry, gid, size, wave_no as u32, waves, (wave_no * self.wave_bytes) as u32, preload);
        }
        self.lds.fill(0);
        self.live = waves as usize;
    }
}

/// Run the dispatch in `slot` (preempted earlier) or the one `start` sets up, for at most
/// `quantum` wave-instructions: `Ok(true)` when it has ended (or `start` ran it at once and
/// answered `None`: a model kernel), `Ok(false)` when preempted, kept in `slot` for the next
/// run. A dispatch that fails leaves `slot` empty.
pub(crate) fn run_in_flight(
    x: &Exec<'_>,
    slot: &mut Option<crate::engine::DispatchInFlight>,
    quantum: u64,
    start: impl FnOnce() -> Result<Option<InFlight>, Halt>,
) -> Result<bool, Halt> {
    let f = match slot.take() {
        Some(f) => f,
        None => match start()? {
            Some(f) => crate::engine::DispatchInFlight(std::sync::Arc::new(std::sync::Mutex::new(f))),
            None => return Ok(true),
        },
    };
    // Only this run uses the state (a queue runs on one engine at a time).
    let done = f.0.lock().unwrap_or_else(|e| e.into_inner()).run(x, quantum)?;
    if !done {
        *slot = Some(f);
    }
    Ok(done)
}

/// Run one workgroup's waves, round robin, until they have all ended (`Ok(true)`) or `budget`
/// is used up (`Ok(false)`, every wave stopped at an instruction boundary): a wave runs until
/// it ends, reaches `s_barrier` or used its slice. When every wave that has not ended waits
/// at the barrier, the barrier opens (ended waves no longer count, as on the hardware).
fn workgroup(x: &Exec<'_>, waves: &mut [Wave], lds: &mut Local<'_>, cache: &mut HashMap<u64, Op>, budget: &mut u64) -> Result<bool, Stop> {
    let slice = if waves.len() == 1 { u32::MAX } else { SLICE };
    loop {
        let mut live = 0;
        for w in waves.iter_mut().filter(|w| !w.ended && !w.at_barrier) {
            match run(x, w, lds, cache, budget, slice)? {
                Yield::End => w.ended = true,
                Yield::Barrier => w.at_barrier = true,
                Yield::Slice => {}
            }
            if *budget == 0 {
                return Ok(waves.iter().all(|w| w.ended));
            }
            live += 1;
        }
        if live == 0 {
            // Everyone left has arrived (or ended): open the barrier.
            let mut waiting = false;
            for w in waves.iter_mut().filter(|w| w.at_barrier) {
                w.at_barrier = false;
                waiting = true;
            }
            if !waiting {
                return Ok(true);
            }
        }
    }
}

/// The state a wave starts with: user SGPRs in the descriptor's order, then the system SGPRs,
/// EXEC for the work-items that exist, work-item ids in VGPRs (gfx90a and gfx942 pack x, y and
/// z into v0 as bits 0..10, 10..20, 20..30).
#[allow(clippy::too_many_arguments)]
fn launch(
    x: &Exec<'_>,
    d: &KernelDescriptor,
    l: &Launch,
    w: &mut Wave,
    entry: u64,
    gid: [u32; 3],
    size: [u32; 3],
    wave_no: u32,
    waves: u32,
    scratch_offset: u32,
    preload: &[u32],
) {
    w.s = [0; 128];
    w.scc = false;
    w.ended = false;
    w.at_barrier = false;
    w.pc = entry;
    w.waves = waves;
    w.mode = mode_at_launch(d.rsrc1);
    w.scratch_slot = scratch_offset as usize;
    let mut n = 0usize;
    let mut put = |s: &mut [u32; 128], v: u32| {
        s[n] = v;
        n += 1;
    };
    let p = d.properties;
    if p & props::PRIVATE_SEGMENT_BUFFER != 0 {
        // The private segment V#: base PRIVATE_BASE, swizzled, 4-byte elements, index
        // stride 64, the lane id added to the index (the wave offset comes in its SGPR).
        put(&mut w.s, PRIVATE_BASE as u32);
        put(&mut w.s, (PRIVATE_BASE >> 32) as u32 | 1 << 30);
        put(&mut w.s, u32::MAX);
        // Index stride 64 (3) in wave64, 32 (2) in wave32: a wave's lanes stay in its slot.
        let stride = if w.lanes == 32 { 2 } else { 3 };
        put(&mut w.s, V_ADD_TID | stride << 21 | 1 << 19);
    }
    let pair = |s: &mut [u32; 128], put: &mut dyn FnMut(&mut [u32; 128], u32), v: u64| {
        put(s, v as u32);
        put(s, (v >> 32) as u32);
    };
    if p & props::DISPATCH_PTR != 0 {
        pair(&mut w.s, &mut put, l.packet_va);
    }
    if p & props::QUEUE_PTR != 0 {
        pair(&mut w.s, &mut put, x.ring.rptr_va.saturating_sub(AMDQ_READ_DISPATCH_ID));
    }
    if p & props::KERNARG_SEGMENT_PTR != 0 {
        pair(&mut w.s, &mut put, l.k.kernarg_address);
    }
    if p & props::DISPATCH_ID != 0 {
        pair(&mut w.s, &mut put, l.index);
    }
    if p & props::FLAT_SCRATCH_INIT != 0 {
        pair(&mut w.s, &mut put, 0);
    }
    if p & props::PRIVATE_SEGMENT_SIZE != 0 {
        put(&mut w.s, l.k.private_segment_size);
    }
    // Preloaded kernarg dwords follow the other user SGPRs (checked to fit in new).
    for &v in preload {
        put(&mut w.s, v);
    }
    if let Some(user) = l.user_data {
        let n = d.user_sgpr_count().min(user.len());
        w.s[..n].copy_from_slice(&user[..n]);
    }
    let mut n = d.user_sgpr_count();
    for (i, on) in d.workgroup_id_enabled().into_iter().enumerate() {
        if on {
            w.s[n] = gid[i];
            n += 1;
        }
    }
    if d.workgroup_info_enabled() {
        // Bit 31: the first wave; bits 6..12: waves in the workgroup (the ordered-append info).
        w.s[n] = (waves & 0x3f) << 6 | u32::from(wave_no == 0) << 31;
        n += 1;
    }
    // With architected flat scratch (gfx942) LLVM asks for no wave offset SGPR: the hardware's
    // FLAT_SCRATCH points at the wave's slot.
    if d.private_segment_enabled() && l.isa != Isa::Gfx9(Target::Gfx942) {
        w.s[n] = scratch_offset;
    }
    let items = size[0] * size[1] * size[2];
    let mut exec = 0u64;
    for lane in 0..w.lanes {
        let flat = (wave_no as usize * w.lanes + lane) as u32;
        if flat < items {
            exec |= 1 << lane;
            let (tx, ty, tz) = (flat % size[0], (flat / size[0]) % size[1], flat / (size[0] * size[1]));
            w.v[0][lane] = tx | ty << 10 | tz << 20;
        } else {
            w.v[0][lane] = 0;
        }
    }
    w.s[126] = exec as u32;
    w.s[127] = if w.lanes == 32 { 0 } else { (exec >> 32) as u32 };
}

/// A decoded instruction as the interpreter runs it: one operation, or VOPD's two issued
/// together (`y`); `nop`: nothing to do (gfx11's s_delay_alu, s_clause, cache invalidations).
#[derive(Clone, Copy)]
struct Op {
    i: Inst,
    y: Option<Inst>,
    nop: bool,
}

/// Decode the instruction at `pc` for `isa`, reading its dwords one at a time (an instruction
/// is 1 to 3 dwords: a second for the long encodings, a literal).
fn decode(x: &Exec<'_>, isa: Isa, pc: u64) -> Result<Op, Stop> {
    let mut words = [0u32; 3];
    let most = if matches!(isa, Isa::Gfx9(_)) { 2 } else { 3 };
    for n in 1..=most {
        let mut b = [0u8; 4];
        x.read(pc.wrapping_add(4 * (n as u64 - 1)), &mut b)?;
        words[n - 1] = u32::from_le_bytes(b);
        let op = match isa {
            Isa::Gfx9(target) => gfx9::decode(&words[..n], target).map(|i| Op { i, y: None, nop: false }),
            Isa::Gfx11 => match gfx11::decode(&words[..n]) {
                Some(g) => Some(match g.run {
                    gfx11::Run::Exec => Op { i: g.operation(), y: g.y, nop: false },
                    gfx11::Run::Nop => Op { i: g.sem, y: None, nop: true },
                    gfx11::Run::No => return Err(Stop::Illegal("instruction decoded but not modelled")),
                }),
                None => None,
            },
        };
        if let Some(op) = op {
            return Ok(op);
        }
    }
    Err(Stop::Illegal("illegal or unsupported instruction"))
}

/// Fetch and decode the instruction at `pc` (cached per dispatch).
fn fetch(x: &Exec<'_>, isa: Isa, cache: &mut HashMap<u64, Op>, pc: u64) -> Result<Op, Stop> {
    if let Some(op) = cache.get(&pc) {
        return Ok(*op);
    }
    let op = decode(x, isa, pc)?;
    cache.insert(pc, op);
    Ok(op)
}

/// A workgroup's own memories: its LDS and its waves' scratch.
struct Local<'a> {
    lds: &'a mut [u8],
    scratch: &'a mut [u8],
    /// Private bytes per work-item (flat scratch addresses beyond read 0, writes dropped).
    lane_bytes: usize,
    isa: Isa,
}

/// V# dword 3: ADD_TID_ENABLE.
const V_ADD_TID: u32 = 1 << 23;

fn run(x: &Exec<'_>, w: &mut Wave, mem: &mut Local<'_>, cache: &mut HashMap<u64, Op>, budget: &mut u64, slice: u32) -> Result<Yield, Stop> {
    for _ in 0..slice {
        if *budget == 0 {
            // Preempted (or out of budget) before this instruction.
            return Ok(Yield::Slice);
        }
        *budget -= 1;
        let Op { i, y, nop } = fetch(x, mem.isa, cache, w.pc)?;
        let next = w.pc.wrapping_add(u64::from(i.len));
        w.pc = next;
        if nop {
            continue;
        }
        if let Some(y) = y {
            dual(w, &i, &y)?;
            continue;
        }
        match i.enc {
            Enc::Sopp => match i.op {
                0 | 12 => {}
                1 => return Ok(Yield::End),
                10 if w.waves == 1 => {}
                10 => return Ok(Yield::Barrier),
                18 => return Err(Stop::Trap),
                // s_setprio, s_incperflevel, s_decperflevel: hints with no effect on results;
                // s_sethalt 0 (resume) is one too.
                15 | 20 | 21 => {}
                13 if i.imm & 1 == 0 => {}
                13 => return Err(Stop::Illegal("s_sethalt 1 (a halted wave waits for a debugger)")),
                // s_sleep: the wave gives up its turn (a spin loop lets the others run).
                14 => return Ok(Yield::Slice),
                // s_sendmsg MSG_INTERRUPT: the SQ interrupt; the KFD signals the event whose
                // id is M0's low 24 bits (kfd_int_process_v9: kfd_signal_event_interrupt(.., 24)).
                16 => x.interrupt(w.s[124] & 0xff_ffff, 24),
                // s_icache_inv: code written since is read afresh.
                19 => cache.clear(),
                op => {
                    let vcc = w.mask(VCC);
                    let take = match op {
                        2 => true,
                        4 => !w.scc,
                        5 => w.scc,
                        6 => vcc == 0,
                        7 => vcc != 0,
                        8 => w.exec() == 0,
                        9 => w.exec() != 0,
                        _ => return Err(Stop::Illegal("unsupported SOPP")),
                    };
                    if take {
                        w.pc = next.wrapping_add((i64::from(i.imm) * 4) as u64);
                    }
                }
            },
            // s_memtime / s_memrealtime: the GPU clock counter (the one GET_CLOCK_COUNTERS
            // reports; the model has one clock for both).
            Enc::Smem if i.op == gfx9::S_MEMTIME || i.op == gfx9::S_MEMREALTIME => set_s64(w, i.dst, x.clock())?,
            Enc::Smem => {
                // gfx11: an SGPR offset as well (`saddr` in the decoded form).
                let soffset = if i.saddr == SADDR_OFF { 0 } else { u64::from(sval(w, i.saddr, 0)?) };
                let base = sreg64(w, i.src[0])?.wrapping_add(i.imm as i64 as u64).wrapping_add(soffset) & !3;
                let n = usize::from(i.sig[0]);
                let mut b = [0u8; 64];
                x.read(base, &mut b[..4 * n])?;
                for k in 0..n {
                    let r = sdst_index(i.dst + k as u16)?;
                    w.s[r] = u32::from_le_bytes(b[4 * k..4 * k + 4].try_into().unwrap_or_default());
                }
            }
            Enc::Sop1 | Enc::Sop2 | Enc::Sopc | Enc::Sopk => scalar(w, &i)?,
            Enc::Vop1 | Enc::Vop2 | Enc::Vopc if i.ext != gfx9::Ext::None => extended(w, &i)?,
            Enc::Vop1 | Enc::Vop2 | Enc::Vopc | Enc::Vop3 => vector(w, &i)?,
            Enc::Vop3p => packed(w, &i)?,
            Enc::Flat if i.atomic => atomic(x, w, &i)?,
            Enc::Flat if i.seg == 1 => flat_scratch(w, mem, &i)?,
            Enc::Flat => memory(x, w, &i)?,
            Enc::Ds => ds(w, mem.lds, &i)?,
            // gfx942's buffer_wbl2 / buffer_inv: the model keeps no caches to write back or
            // invalidate (every access goes to memory at once).
            Enc::Mubuf if i.dwords == 0 => {}
            Enc::Mubuf => buffer(w, mem.scratch, &i)?,
        }
    }
    Ok(Yield::Slice)
}

fn sdst_index(c: u16) -> Result<usize, Stop> {
    match c {
        // NULL: s[NULL] is a sink no read sees (`sval` answers 0 for it).
        0..=101 | 106 | 107 | 124 | NULL | 126 | 127 => Ok(usize::from(c)),
        _ => Err(Stop::Illegal("unsupported scalar destination")),
    }
}

/// A 32-bit scalar operand.
fn sval(w: &Wave, c: u16, lit: u32) -> Result<u32, Stop> {
    Ok(match c {
        0..=101 | 106 | 107 | 124 | 126 | 127 => w.s[usize::from(c)],
        NULL => 0,
        128..=192 => u32::from(c - 128),
        193..=208 => (-(i32::from(c) - 192)) as u32,
        240..=247 => [0.5f32, -0.5, 1.0, -1.0, 2.0, -2.0, 4.0, -4.0][usize::from(c - 240)].to_bits(),
        248 => 0x3e22_f983,
        251 => u32::from(w.mask(VCC) == 0),
        252 => u32::from(w.exec() == 0),
        253 => u32::from(w.scc),
        LITERAL => lit,
        _ => return Err(Stop::Illegal("unsupported scalar operand")),
    })
}

/// A 64-bit scalar operand (register pairs; integer constants sign-extended).
fn sval64(w: &Wave, c: u16, lit: u32) -> Result<u64, Stop> {
    match c {
        0..=101 | 106 | 126 => Ok(u64::from(w.s[usize::from(c)]) | u64::from(w.s[usize::from(c) + 1]) << 32),
        NULL => Ok(0),
        128..=208 => Ok(sval(w, c, lit)? as i32 as i64 as u64),
        LITERAL => Ok(u64::from(lit)),
        _ => Err(Stop::Illegal("unsupported 64-bit scalar operand")),
    }
}

/// A lane-mask source (a carry-in, v_cndmask's mask): an SGPR (pair) or a constant, as wide as
/// the wave.
fn mask_operand(w: &Wave, c: u16) -> Result<u64, Stop> {
    if w.lanes == 32 {
        Ok(u64::from(sval(w, c, 0)?))
    } else {
        sval64(w, c, 0)
    }
}

fn sreg64(w: &Wave, c: u16) -> Result<u64, Stop> {
    sval64(w, c, 0)
}

fn set_s64(w: &mut Wave, c: u16, v: u64) -> Result<(), Stop> {
    if c == NULL {
        return Ok(());
    }
    let r = sdst_index(c)?;
    if r == 107 || r == 127 || r == 101 {
        return Err(Stop::Illegal("misaligned 64-bit scalar destination"));
    }
    w.s[r] = v as u32;
    w.s[r + 1] = (v >> 32) as u32;
    Ok(())
}

/// Write a lane mask (a compare's result, a carry-out): an SGPR pair in wave64, one SGPR in
/// wave32.
fn set_mask(w: &mut Wave, c: u16, m: u64) -> Result<(), Stop> {
    if w.lanes == 32 {
        w.s[sdst_index(c)?] = m as u32;
        Ok(())
    } else {
        set_s64(w, c, m)
    }
}

fn scalar(w: &mut Wave, i: &Inst) -> Result<(), Stop> {
    let wide = i.sig[0] == 2 || i.sig[1] == 2;
    match i.enc {
        Enc::Sopk => match i.op {
            0 => w.s[sdst_index(i.dst)?] = i.imm as u32,
            GETREG | SETREG | SETREG_IMM32 => {
                // The MODE register's field `offset .. offset + size` (decoded for MODE only).
                let v = i.imm as u32;
                let (offset, size) = ((v >> 6) & 0x1f, ((v >> 11) & 0x1f) + 1);
                let field = (u32::MAX >> (32 - size)) << offset;
                if i.op == GETREG {
                    w.s[sdst_index(i.dst)?] = (w.mode & field) >> offset;
                } else {
                    let value = if i.op == SETREG { sval(w, i.src[0], 0)? } else { i.lit };
                    let mode = (w.mode & !field) | ((value << offset) & field);
                    if mode & 0xf != 0 {
                        return Err(Stop::Illegal("rounding modes other than round to nearest even are not modelled"));
                    }
                    w.mode = mode;
                }
            }
            _ => return Err(Stop::Illegal("unsupported SOPK")),
        },
        Enc::Sopc if wide => {
            let (a, b) = (sval64(w, i.src[0], i.lit)?, sval64(w, i.src[1], i.lit)?);
            w.scc = if i.op == 18 { a == b } else { a != b };
        }
        Enc::Sopc => {
            let (a, b) = (sval(w, i.src[0], i.lit)?, sval(w, i.src[1], i.lit)?);
            let (sa, sb) = (a as i32, b as i32);
            w.scc = match i.op {
                0 => sa == sb,
                1 => sa != sb,
                2 => sa > sb,
                3 => sa >= sb,
                4 => sa < sb,
                5 => sa <= sb,
                6 => a == b,
                7 => a != b,
                8 => a > b,
                9 => a >= b,
                10 => a < b,
                _ => a <= b,
            };
        }
        Enc::Sop1 if i.sig[0] == 1 && i.sig[1] == 2 => {
            let a = sval64(w, i.src[0], i.lit)?;
            w.s[sdst_index(i.dst)?] = match i.op {
                13 => {
                    w.scc = a != 0;
                    a.count_ones()
                }
                // -1 when no bit is set.
                _ => {
                    if a == 0 {
                        u32::MAX
                    } else {
                        a.trailing_zeros()
                    }
                }
            };
        }
        Enc::Sop1 if wide => {
            let a = if i.op == 28 { 0 } else { sval64(w, i.src[0], i.lit)? };
            let exec = w.exec();
            let (r, scc) = match i.op {
                1 => (a, None),
                5 => (!a, Some(!a != 0)),
                28 => (w.pc, None),
                32..=35 => {
                    let e = match i.op {
                        32 => a & exec,
                        33 => a | exec,
                        34 => a ^ exec,
                        _ => a & !exec,
                    };
                    set_s64(w, EXEC, e)?;
                    w.scc = e != 0;
                    (exec, None)
                }
                _ => return Err(Stop::Illegal("unsupported SOP1")),
            };
            set_s64(w, i.dst, r)?;
            if let Some(c) = scc {
                w.scc = c;
            }
        }
        Enc::Sop1 => {
            let a = sval(w, i.src[0], i.lit)?;
            let r = match i.op {
                0 => a,
                4 => {
                    w.scc = !a != 0;
                    !a
                }
                12 => {
                    w.scc = a != 0;
                    a.count_ones()
                }
                // -1 when no bit is set.
                16 => {
                    if a == 0 {
                        u32::MAX
                    } else {
                        a.trailing_zeros()
                    }
                }
                26 => w.s[sdst_index(i.dst)?] | 1 << (a & 31),
                8 => a.reverse_bits(),
                // The saveexec forms on a 32-bit EXEC (wave32's exec_lo).
                32..=35 => {
                    let exec = w.s[126];
                    let e = match i.op {
                        32 => a & exec,
                        33 => a | exec,
                        34 => a ^ exec,
                        _ => a & !exec,
                    };
                    w.s[126] = e;
                    w.scc = e != 0;
                    exec
                }
                _ => return Err(Stop::Illegal("unsupported SOP1")),
            };
            w.s[sdst_index(i.dst)?] = r;
        }
        Enc::Sop2 if wide => {
            let a = sval64(w, i.src[0], i.lit)?;
            let (b, sh) = if i.sig[2] == 2 { (sval64(w, i.src[1], i.lit)?, 0) } else { (0, sval(w, i.src[1], i.lit)? & 63) };
            let r = match i.op {
                11 => {
                    let r = if w.scc { a } else { b };
                    set_s64(w, i.dst, r)?;
                    return Ok(());
                }
                13 => a & b,
                15 => a | b,
                17 => a ^ b,
                19 => a & !b,
                29 => a << sh,
                31 => a >> sh,
                33 => ((a as i64) >> sh) as u64,
                _ => return Err(Stop::Illegal("unsupported SOP2")),
            };
            w.scc = r != 0;
            set_s64(w, i.dst, r)?;
        }
        Enc::Sop2 => {
            let (a, b) = (sval(w, i.src[0], i.lit)?, sval(w, i.src[1], i.lit)?);
            let (sa, sb) = (a as i32, b as i32);
            let c = u32::from(w.scc);
            let (r, scc) = match i.op {
                0 => (a.wrapping_add(b), Some(a.checked_add(b).is_none())),
                1 => (a.wrapping_sub(b), Some(b > a)),
                2 => (sa.wrapping_add(sb) as u32, Some(sa.checked_add(sb).is_none())),
                3 => (sa.wrapping_sub(sb) as u32, Some(sa.checked_sub(sb).is_none())),
                4 => {
                    let s = u64::from(a) + u64::from(b) + u64::from(c);
                    (s as u32, Some(s >> 32 != 0))
                }
                5 => {
                    let s = u64::from(a).wrapping_sub(u64::from(b)).wrapping_sub(u64::from(c));
                    (s as u32, Some(s >> 32 != 0))
                }
                6 => (sa.min(sb) as u32, Some(sa < sb)),
                7 => (a.min(b), Some(a < b)),
                8 => (sa.max(sb) as u32, Some(sa > sb)),
                9 => (a.max(b), Some(a > b)),
                10 => (if w.scc { a } else { b }, None),
                12 => (a & b, Some(a & b != 0)),
                14 => (a | b, Some(a | b != 0)),
                16 => (a ^ b, Some(a ^ b != 0)),
                18 => (a & !b, Some(a & !b != 0)),
                28 => (a << (b & 31), Some(a << (b & 31) != 0)),
                30 => (a >> (b & 31), Some(a >> (b & 31) != 0)),
                32 => ((sa >> (b & 31)) as u32, Some(sa >> (b & 31) != 0)),
                36 => (sa.wrapping_mul(sb) as u32, None),
                _ => return Err(Stop::Illegal("unsupported SOP2")),
            };
            w.s[sdst_index(i.dst)?] = r;
            if let Some(s) = scc {
                w.scc = s;
            }
        }
        _ => unreachable!(),
    }
    Ok(())
}

/// A vector source: a VGPR or a value every lane reads.
#[derive(Clone, Copy)]
enum VSrc {
    V(usize),
    K(u32),
}

fn vsrc(w: &Wave, c: u16, lit: u32) -> Result<VSrc, Stop> {
    if c >= 256 {
        let r = usize::from(c - 256);
        if r >= w.v.len() {
            return Err(Stop::Illegal("VGPR beyond the kernel's allocation"));
        }
        Ok(VSrc::V(r))
    } else {
        Ok(VSrc::K(sval(w, c, lit)?))
    }
}

fn get(w: &Wave, s: VSrc, lane: usize) -> u32 {
    match s {
        VSrc::V(r) => w.v[r][lane],
        VSrc::K(k) => k,
    }
}

fn vdst(w: &Wave, r: u16, n: u8) -> Result<usize, Stop> {
    let r = usize::from(r);
    if r + usize::from(n.max(1)) > w.v.len() {
        return Err(Stop::Illegal("VGPR beyond the kernel's allocation"));
    }
    Ok(r)
}

fn f(v: u32) -> f32 {
    f32::from_bits(v)
}

fn vector(w: &mut Wave, i: &Inst) -> Result<(), Stop> {
    let exec = w.exec();
    // Normalise: (class, op) with class 1 = VOP1, 2 = VOP2, 3 = VOP3-only, C = compare.
    let (class, op) = match (i.enc, i.op) {
        (Enc::Vop1, o) => (1, o),
        (Enc::Vop2, o) => (2, o),
        (Enc::Vopc, o) => (0, o),
        (Enc::Vop3, o) if o < 0x100 => (0, o),
        (Enc::Vop3, o) if o < 0x140 => (2, o - 0x100),
        (Enc::Vop3, o) if o < 0x1c0 => (1, o - 0x140),
        (Enc::Vop3, o) => (3, o),
        _ => unreachable!(),
    };
    if i.enc == Enc::Vop3 && (i.omod != 0 || i.clamp) {
        return Err(Stop::Illegal("VOP3 output modifiers (clamp, omod) are not modelled yet"));
    }
    if wide(class, op) {
        return vector64(w, i, class, op);
    }
    // Float sources: abs / neg act on the sign bit (bit 15 for f16, 31 for f32).
    let sign = float_sign(class, op);
    if (i.neg | i.abs) != 0 && sign.is_none() {
        return Err(Stop::Illegal("abs/neg on an integer operand"));
    }
    let bit = 1u32 << sign.unwrap_or(31);
    let am = [0, 1, 2].map(|k| if i.abs >> k & 1 != 0 { !bit } else { !0 });
    let xm = [0, 1, 2].map(|k| if i.neg >> k & 1 != 0 { bit } else { 0 });
    let half = sign == Some(15);
    let src = |w: &Wave, k: usize| -> Result<VSrc, Stop> {
        match i.src[k] {
            c @ 240..=248 if half => Ok(VSrc::K(u32::from(H_CONST[usize::from(c - 240)]))),
            c => vsrc(w, c, i.lit),
        }
    };
    let s0 = if i.sig[1] != 0 { src(w, 0)? } else { VSrc::K(0) };
    let s1 = if i.sig[2] != 0 { src(w, 1)? } else { VSrc::K(0) };
    // f32 denormals the MODE register flushes: on the float inputs, on an f32 result.
    let (fin, fout) = if honours_f32_denormals(class, op) { w.flush32() } else { (false, false) };
    let fin = [fin, fin && !(class == 3 && op == 0x288), fin];
    let fout = fout && !(class == 1 && op == 51);
    let in32 = |k: usize, x: u32| if fin[k] { fp::flush32(x) } else { x };
    let out32 = |x: u32| if fout { fp::flush32(x) } else { x };
    match class {
        0 => {
            // Compares: a lane mask into VCC (e32) or an SGPR pair (e64); inactive lanes 0.
            let mut m = 0u64;
            for lane in (0..LANES).filter(|l| exec >> l & 1 != 0) {
                let (a, b) = ((get(w, s0, lane) & am[0]) ^ xm[0], (get(w, s1, lane) & am[1]) ^ xm[1]);
                let r = match op {
                    0x10 => b >> fp::class(u64::from(a), 8, 23) & 1 != 0,
                    0x14 => b >> fp::class(u64::from(a & 0xffff), 5, 10) & 1 != 0,
                    0x20..=0x2f => fcmp(op, h2f(a).partial_cmp(&h2f(b))),
                    0x40..=0x4f => fcmp(op, f(a).partial_cmp(&f(b))),
                    _ => {
                        let (x, y) = if op < 0xc8 { (i64::from(a as i32), i64::from(b as i32)) } else { (i64::from(a), i64::from(b)) };
                        match op & 7 {
                            0 => false,
                            1 => x < y,
                            2 => x == y,
                            3 => x <= y,
                            4 => x > y,
                            5 => x != y,
                            6 => x >= y,
                            _ => true,
                        }
                    }
                };
                m |= u64::from(r) << lane;
            }
            set_mask(w, if i.enc == Enc::Vopc { VCC } else { i.dst }, m)?;
        }
        1 => {
            if op == 0 {
                return Ok(());
            }
            if op == 2 {
                let lane = if exec == 0 { 0 } else { exec.trailing_zeros() as usize };
                w.s[sdst_index(i.dst)?] = get(w, s0, lane);
                return Ok(());
            }
            let d = vdst(w, i.dst, 1)?;
            for lane in (0..LANES).filter(|l| exec >> l & 1 != 0) {
                let a = in32(0, (get(w, s0, lane) & am[0]) ^ xm[0]);
                w.v[d][lane] = out32(match op {
                    1 => a,
                    10 => f2h(f(a)),
                    11 => h2f(a).to_bits(),
                    5 => ((a as i32) as f32).to_bits(),
                    6 => (a as f32).to_bits(),
                    7 => f(a) as u32,
                    8 => f(a) as i32 as u32,
                    // v_cvt_f32_ubyte0..3: byte `op - 17` of the source as a float.
                    17..=20 => f32::from((a >> (8 * (op - 17))) as u8).to_bits(),
                    27 => fp::fract32(f(a)).to_bits(),
                    28 => f(a).trunc().to_bits(),
                    29 => f(a).ceil().to_bits(),
                    30 => f(a).round_ties_even().to_bits(),
                    31 => f(a).floor().to_bits(),
                    32 => fp::exp32_op(f(a)).to_bits(),
                    33 => fp::log32_op(f(a)).to_bits(),
                    34 | 35 => (1.0 / f(a)).to_bits(),
                    36 => fp::rsq32(f(a)).to_bits(),
                    39 => f(a).sqrt().to_bits(),
                    41 => fp::sin32(f(a), false).to_bits(),
                    42 => fp::sin32(f(a), true).to_bits(),
                    43 => !a,
                    44 => a.reverse_bits(),
                    // First set bit from the MSB / from the LSB; first bit unlike the sign bit
                    // from the MSB: -1 when there is none.
                    45 => {
                        if a == 0 {
                            u32::MAX
                        } else {
                            a.leading_zeros()
                        }
                    }
                    46 => {
                        if a == 0 {
                            u32::MAX
                        } else {
                            a.trailing_zeros()
                        }
                    }
                    47 => match a {
                        0 | u32::MAX => u32::MAX,
                        _ => (a ^ ((a as i32) >> 31) as u32).leading_zeros(),
                    },
                    51 => fp::frexp_exp64(f64::from(f(a))) as u32,
                    52 => (fp::frexp_mant64(f64::from(f(a))) as f32).to_bits(),
                    _ => return Err(Stop::Illegal("unsupported VOP1")),
                });
            }
        }
        2 => {
            let d = vdst(w, i.dst, 1)?;
            // Carry / mask in: VCC (e32) or src2 (e64); carry out: VCC (e32) or sdst (e64).
            let cin = if carry_in(op) {
                if i.enc == Enc::Vop2 {
                    w.mask(VCC)
                } else {
                    mask_operand(w, i.src[2])?
                }
            } else {
                0
            };
            let mut cout = 0u64;
            for lane in (0..LANES).filter(|l| exec >> l & 1 != 0) {
                let (a, b) = (in32(0, (get(w, s0, lane) & am[0]) ^ xm[0]), in32(1, (get(w, s1, lane) & am[1]) ^ xm[1]));
                let c = (cin >> lane & 1) as u32;
                let acc = in32(2, w.v[d][lane]);
                let (r, carry) = match op {
                    0 => (if c != 0 { b } else { a }, false),
                    1 => ((f(a) + f(b)).to_bits(), false),
                    2 => ((f(a) - f(b)).to_bits(), false),
                    3 => ((f(b) - f(a)).to_bits(), false),
                    5 => ((f(a) * f(b)).to_bits(), false),
                    // 24-bit multiplies: the low 32 bits of the 48-bit product, or bits 32..48.
                    6 => ((i24(a) * i24(b)) as u32, false),
                    7 => (((i24(a) * i24(b)) >> 32) as u32, false),
                    8 => ((a & 0xff_ffff).wrapping_mul(b & 0xff_ffff), false),
                    9 => (((u64::from(a & 0xff_ffff) * u64::from(b & 0xff_ffff)) >> 32) as u32, false),
                    10 => (f(a).min(f(b)).to_bits(), false),
                    11 => (f(a).max(f(b)).to_bits(), false),
                    12 => ((a as i32).min(b as i32) as u32, false),
                    13 => ((a as i32).max(b as i32) as u32, false),
                    14 => (a.min(b), false),
                    15 => (a.max(b), false),
                    16 => (b >> (a & 31), false),
                    17 => (((b as i32) >> (a & 31)) as u32, false),
                    18 => (b << (a & 31), false),
                    19 => (a & b, false),
                    20 => (a | b, false),
                    21 => (a ^ b, false),
                    22 => ((f(a) * f(b) + f(acc)).to_bits(), false),
                    59 => (f(a).mul_add(f(b), f(acc)).to_bits(), false),
                    25 | 28 => {
                        let s = u64::from(a) + u64::from(b) + u64::from(if op == 28 { c } else { 0 });
                        (s as u32, s >> 32 != 0)
                    }
                    26 | 29 => {
                        let s = u64::from(a).wrapping_sub(u64::from(b)).wrapping_sub(u64::from(if op == 29 { c } else { 0 }));
                        (s as u32, s >> 32 != 0)
                    }
                    27 | 30 => {
                        let s = u64::from(b).wrapping_sub(u64::from(a)).wrapping_sub(u64::from(if op == 30 { c } else { 0 }));
                        (s as u32, s >> 32 != 0)
                    }
                    31 => (f2h(h2f(a) + h2f(b)), false),
                    32 => (f2h(h2f(a) - h2f(b)), false),
                    33 => (f2h(h2f(b) - h2f(a)), false),
                    34 => (f2h(h2f(a) * h2f(b)), false),
                    38 => (u32::from((a as u16).wrapping_add(b as u16)), false),
                    39 => (u32::from((a as u16).wrapping_sub(b as u16)), false),
                    40 => (u32::from((b as u16).wrapping_sub(a as u16)), false),
                    41 => (u32::from((a as u16).wrapping_mul(b as u16)), false),
                    42 => (u32::from((b as u16) << (a & 15)), false),
                    43 => (u32::from((b as u16) >> (a & 15)), false),
                    44 => (u32::from(((b as i16) >> (a & 15)) as u16), false),
                    47 => (u32::from((a as u16).max(b as u16)), false),
                    48 => (u32::from((a as i16).max(b as i16) as u16), false),
                    49 => (u32::from((a as u16).min(b as u16)), false),
                    50 => (u32::from((a as i16).min(b as i16) as u16), false),
                    45 => (f2h(h2f(a).max(h2f(b))), false),
                    46 => (f2h(h2f(a).min(h2f(b))), false),
                    52 => (a.wrapping_add(b), false),
                    53 => (a.wrapping_sub(b), false),
                    54 => (b.wrapping_sub(a), false),
                    _ => return Err(Stop::Illegal("unsupported VOP2")),
                };
                w.v[d][lane] = out32(r);
                cout |= u64::from(carry) << lane;
            }
            if carry_out(op) {
                set_mask(w, if i.enc == Enc::Vop2 { VCC } else { i.sdst }, cout)?;
            }
        }
        _ if op == 0x289 => {
            let lane = get(w, s1, 0) as usize & (w.lanes - 1);
            w.s[sdst_index(i.dst)?] = get(w, s0, lane);
        }
        _ => {
            let d = vdst(w, i.dst, i.sig[0])?;
            let s2 = if i.sig[3] != 0 { src(w, 2)? } else { VSrc::K(0) };
            let pair = |w: &Wave, s: VSrc, lane: usize| -> u64 {
                match s {
                    VSrc::V(r) => u64::from(w.v[r][lane]) | u64::from(w.v.get(r + 1).map_or(0, |v| v[lane])) << 32,
                    VSrc::K(k) => u64::from(k),
                }
            };
            if let VSrc::V(r) = s1 {
                if i.sig[2] == 2 && r + 1 >= w.v.len() {
                    return Err(Stop::Illegal("VGPR beyond the kernel's allocation"));
                }
            }
            if let VSrc::V(r) = s2 {
                if i.sig[3] == 2 && r + 1 >= w.v.len() {
                    return Err(Stop::Illegal("VGPR beyond the kernel's allocation"));
                }
            }
            let mut cout = 0u64;
            let vcc = w.mask(VCC);
            for lane in (0..LANES).filter(|l| exec >> l & 1 != 0) {
                let (a, b, c) = (
                    in32(0, (get(w, s0, lane) & am[0]) ^ xm[0]),
                    in32(1, (get(w, s1, lane) & am[1]) ^ xm[1]),
                    in32(2, (get(w, s2, lane) & am[2]) ^ xm[2]),
                );
                let r: u64 = match op {
                    0x1c1 => u64::from(out32((f(a) * f(b) + f(c)).to_bits())),
                    0x1de => u64::from(out32(fp::div_fixup32(f(a), f(b), f(c)).to_bits())),
                    0x1e0 => {
                        let (r, scale) = fp::div_scale32(f(a), f(b), f(c));
                        cout |= u64::from(scale) << lane;
                        u64::from(r.to_bits())
                    }
                    0x1e2 => u64::from(out32(fp::div_fmas32(f(a), f(b), f(c), vcc >> lane & 1 != 0).to_bits())),
                    0x202 => u64::from(a | b | c),
                    0x207 => u64::from(fp::div_fixup16(a, b, c)),
                    0x288 => u64::from(out32(fp::ldexp32(f(a), b as i32).to_bits())),
                    0x1c3 => u64::from((a & 0xff_ffff).wrapping_mul(b & 0xff_ffff).wrapping_add(c)),
                    // Signed 24-bit operands (the device library's sin/cos argument reduction).
                    0x1c2 => u64::from(((a << 8) as i32 >> 8).wrapping_mul((b << 8) as i32 >> 8).wrapping_add(c as i32) as u32),
                    // {S0, S1} shifted right by S2[4:0] bits / S2[1:0] bytes, the low dword.
                    0x1ce => ((u64::from(a) << 32 | u64::from(b)) >> (c & 31)) & 0xffff_ffff,
                    0x1cf => ((u64::from(a) << 32 | u64::from(b)) >> (8 * (c & 3))) & 0xffff_ffff,
                    0x1c8 => {
                        let (off, width) = (b & 31, c & 31);
                        u64::from(if width == 0 { 0 } else { (a >> off) & (u32::MAX >> (32 - width)) })
                    }
                    0x1cb => u64::from(out32(f(a).mul_add(f(b), f(c)).to_bits())),
                    0x1c9 => {
                        let (off, width) = (b & 31, c & 31);
                        u64::from(if width == 0 { 0 } else { (((a >> off) << (32 - width)) as i32 >> (32 - width)) as u32 })
                    }
                    0x1ca => u64::from((a & b) | (!a & c)),
                    0x1d1 => u64::from((a as i32).min(b as i32).min(c as i32) as u32),
                    0x1d2 => u64::from(a.min(b).min(c)),
                    0x1d4 => u64::from((a as i32).max(b as i32).max(c as i32) as u32),
                    0x1d5 => u64::from(a.max(b).max(c)),
                    0x1d7 => u64::from(median([a as i32, b as i32, c as i32]) as u32),
                    0x1d8 => u64::from(median([a, b, c])),
                    0x1ed => u64::from(perm_bytes(a, b, c)),
                    0x1fe => u64::from(a.wrapping_add(b) << (c & 31)),
                    0x201 => u64::from((a & b) | c),
                    0x287 => (i64::from(a as i32) * i64::from(b as i32)) as u64 >> 32,
                    0x28b => u64::from(a.count_ones().wrapping_add(b)),
                    0x1e8 => {
                        let p = u128::from(a) * u128::from(b) + u128::from(pair(w, s2, lane));
                        cout |= u64::from(p >> 64 != 0) << lane;
                        p as u64
                    }
                    0x1f3 => u64::from((a ^ b).wrapping_add(c)),
                    0x206 => u64::from(fma_h(a, b, c)),
                    0x1fd => u64::from((a << (b & 31)).wrapping_add(c)),
                    0x1ff => u64::from(a.wrapping_add(b).wrapping_add(c)),
                    0x200 => u64::from((a << (b & 31)) | c),
                    0x285 => u64::from(a.wrapping_mul(b)),
                    0x286 => (u64::from(a) * u64::from(b)) >> 32,
                    // Bits of the mask below this lane (lanes 0..32 / 32..64), plus src1.
                    0x28c => u64::from((a & ((1u64 << lane.min(32)) - 1) as u32).count_ones().wrapping_add(b)),
                    0x28d => u64::from((a & ((1u64 << lane.saturating_sub(32)) - 1) as u32).count_ones().wrapping_add(b)),
                    0x28f => pair(w, s1, lane) << (a & 63),
                    0x290 => pair(w, s1, lane) >> (a & 63),
                    _ => return Err(Stop::Illegal("unsupported VOP3")),
                };
                w.v[d][lane] = r as u32;
                if i.sig[0] == 2 {
                    w.v[d + 1][lane] = (r >> 32) as u32;
                }
            }
            if op == 0x1e8 || op == 0x1e0 {
                set_mask(w, i.sdst, cout)?;
            }
        }
    }
    Ok(())
}

/// A DPP or SDWA VOP1/VOP2/VOPC: the plain operation, run on operands prepared for it in
/// scratch VGPRs appended past the kernel's own for the one instruction (src0 as the DPP
/// control moves it across lanes, SDWA's selected bytes or words extended), then (SDWA) its
/// result placed into the destination's selected bits. DPP lanes that must not write (row
/// and bank masks, a source lane out of range or disabled without bound_ctrl) are left out
/// of EXEC while the operation runs, so they keep their destination (and their carry-out
/// bit reads 0).
fn extended(w: &mut Wave, i: &Inst) -> Result<(), Stop> {
    const BEYOND: Stop = Stop::Illegal("VGPR beyond the kernel's allocation");
    let n = w.v.len();
    let nsrc = if i.enc == Enc::Vop1 { 1 } else { 2 };
    if i.src[..nsrc].iter().any(|&c| c >= 256 && usize::from(c - 256) >= n) || (i.enc != Enc::Vopc && usize::from(i.dst) >= n) {
        return Err(BEYOND);
    }
    let exec = w.exec();
    let mut j = *i;
    j.ext = gfx9::Ext::None;
    let r = match i.ext {
        gfx9::Ext::Dpp(d) => {
            let from = usize::from(i.src[0] - 256);
            let mut col = [0u32; LANES];
            let mut write = 0u64;
            for (lane, c) in col.iter_mut().enumerate().take(w.lanes) {
                let on = d.row_mask >> (lane / 16) & 1 != 0 && d.bank_mask >> ((lane / 4) & 3) & 1 != 0;
                match gfx9::dpp_source(d.ctrl, lane, w.lanes).filter(|&l| d.fi || exec >> l & 1 != 0) {
                    Some(l) => *c = w.v[from][l],
                    None if d.bound_ctrl => {}
                    None => continue,
                }
                write |= u64::from(on) << lane;
            }
            w.v.push(col);
            j.src[0] = 256 + n as u16;
            let r = set_mask(w, EXEC, exec & write).and_then(|()| vector(w, &j));
            set_mask(w, EXEC, exec).and(r)
        }
        gfx9::Ext::Sdwa(s) => {
            if i.clamp || i.omod != 0 {
                return Err(Stop::Illegal("SDWA clamp/omod are not modelled yet"));
            }
            for k in 0..nsrc {
                let sext = s.sext >> k & 1 != 0;
                if s.sel[k] == gfx9::SEL_DWORD && !sext {
                    continue;
                }
                if (240..=248).contains(&i.src[k]) {
                    return Err(Stop::Illegal("SDWA selection of a float inline constant"));
                }
                let v = vsrc(w, i.src[k], i.lit)?;
                let mut col = [0u32; LANES];
                for (lane, c) in col.iter_mut().enumerate().take(w.lanes) {
                    *c = gfx9::sdwa_operand(get(w, v, lane), s.sel[k], sext);
                }
                j.src[k] = 256 + w.v.len() as u16;
                w.v.push(col);
            }
            if i.enc == Enc::Vopc {
                // The VOP3 form of the compare writes its mask to `dst` (VCC or SDWA's sdst).
                j.enc = Enc::Vop3;
                vector(w, &j)
            } else if s.dst_sel == gfx9::SEL_DWORD {
                vector(w, &j)
            } else {
                let d = usize::from(i.dst);
                j.dst = w.v.len() as u16;
                w.v.push(w.v[d]);
                let r = vector(w, &j);
                let t = usize::from(j.dst);
                if r.is_ok() {
                    for lane in (0..w.lanes).filter(|l| exec >> l & 1 != 0) {
                        w.v[d][lane] = gfx9::sdwa_result(w.v[t][lane], w.v[d][lane], s.dst_sel, s.dst_unused);
                    }
                }
                r
            }
        }
        gfx9::Ext::Dpp8 { sel, fi } => {
            // Every lane writes; a disabled source lane gives 0 unless FI.
            let from = usize::from(i.src[0] - 256);
            let mut col = [0u32; LANES];
            for (lane, c) in col.iter_mut().enumerate().take(w.lanes) {
                let l = (lane & !7) | (sel >> (3 * (lane & 7)) & 7) as usize;
                if fi || exec >> l & 1 != 0 {
                    *c = w.v[from][l];
                }
            }
            w.v.push(col);
            j.src[0] = 256 + n as u16;
            vector(w, &j)
        }
        gfx9::Ext::None => vector(w, &j),
    };
    w.v.truncate(n);
    r
}

/// A 24-bit signed operand (the low 24 bits, sign-extended).
fn i24(x: u32) -> i64 {
    i64::from(((x << 8) as i32) >> 8)
}

/// The middle one of three.
fn median<T: Ord + Copy>(mut v: [T; 3]) -> T {
    v.sort_unstable();
    v[1]
}

/// `v_perm_b32`: byte `k` of the result is chosen by byte `k` of `sel` from the eight bytes
/// `src0:src1` (src1 the low four): 0..=7 that byte, 8..=11 the sign of byte 1, 3, 5 or 7
/// replicated, 12 zero, 13 and above 0xff.
fn perm_bytes(src0: u32, src1: u32, sel: u32) -> u32 {
    let data = u64::from(src0) << 32 | u64::from(src1);
    (0..4).fold(0u32, |acc, k| {
        let s = sel >> (8 * k) & 0xff;
        let byte = match s {
            0..=7 => (data >> (8 * s) & 0xff) as u32,
            8..=11 => {
                if data >> (16 * (s - 8) + 15) & 1 != 0 {
                    0xff
                } else {
                    0
                }
            }
            12 => 0,
            _ => 0xff,
        };
        acc | byte << (8 * k)
    })
}

/// VOPD: two VALU operations issued together. Both read their sources before either writes
/// (Y may read X's destination and sees the old value); the two destinations differ.
fn dual(w: &mut Wave, x: &Inst, y: &Inst) -> Result<(), Stop> {
    let xd = vdst(w, x.dst, 1)?;
    let before = w.v[xd];
    vector(w, x)?;
    let after = std::mem::replace(&mut w.v[xd], before);
    vector(w, y)?;
    w.v[xd] = after;
    Ok(())
}

/// `scratch_*` (gfx942's architected flat scratch, gfx11's flat scratch; on gfx942
/// FLAT_SCRATCH is the hardware's, no program sets it up): a lane's private address is its
/// VGPR (when SVE) plus
/// the SGPR plus the offset, into the wave's slot of the workgroup's scratch region, dwords
/// interleaved across lanes (the hardware's swizzle; invisible to the program). The region is
/// the model's, outside the GPU page table; bytes past the per-work-item size read 0 and
/// writes to them are dropped.
fn flat_scratch(w: &mut Wave, mem: &mut Local<'_>, i: &Inst) -> Result<(), Stop> {
    let exec = w.exec();
    let a = usize::from(i.src[0] - 256);
    if i.offen && a >= w.v.len() {
        return Err(Stop::Illegal("VGPR beyond the kernel's allocation"));
    }
    let sbase = if i.saddr == SADDR_OFF { 0 } else { sval(w, i.saddr, 0)? };
    let reg = vdst(w, if i.store { i.data } else { i.dst }, i.dwords)?;
    let bytes = match i.op {
        16 | 17 | 24 => 1,
        18 | 19 | 26 => 2,
        _ => 4 * usize::from(i.dwords),
    };
    let (lanes, slot, limit) = (w.lanes, w.scratch_slot, mem.lane_bytes);
    for lane in (0..lanes).filter(|l| exec >> l & 1 != 0) {
        let vaddr = if i.offen { w.v[a][lane] } else { 0 };
        let off = vaddr.wrapping_add(sbase).wrapping_add(i.imm as u32) as usize;
        let at = |b: usize| -> Option<usize> {
            let o = off.checked_add(b).filter(|&o| o < limit)?;
            Some(slot + (o / 4) * 4 * lanes + lane * 4 + o % 4)
        };
        for b in 0..bytes {
            let (k, sh) = (b / 4, 8 * (b % 4));
            if i.store {
                let byte = (w.v[reg + k][lane] >> sh) as u8;
                if let Some(p) = at(b).and_then(|p| mem.scratch.get_mut(p)) {
                    *p = byte;
                }
            } else {
                let byte = at(b).and_then(|p| mem.scratch.get(p)).copied().unwrap_or(0);
                let r = &mut w.v[reg + k][lane];
                if sh == 0 {
                    *r = 0;
                }
                *r |= u32::from(byte) << sh;
            }
        }
        if !i.store {
            let r = &mut w.v[reg][lane];
            *r = match i.op {
                17 => *r as u8 as i8 as i32 as u32,
                19 => *r as u16 as i16 as i32 as u32,
                _ => *r,
            };
        }
    }
    Ok(())
}

/// FLAT / GLOBAL loads and stores. Lanes whose addresses are consecutive move as one access.
fn memory(x: &Exec<'_>, w: &mut Wave, i: &Inst) -> Result<(), Stop> {
    let exec = w.exec();
    if exec == 0 {
        return Ok(());
    }
    let n = usize::from(i.dwords);
    let bytes = 4 * n;
    let a = usize::from(i.src[0] - 256);
    let base = if i.saddr != SADDR_OFF && i.seg != 0 { Some(sreg64(w, i.saddr)?) } else { None };
    let need = if base.is_some() { 1 } else { 2 };
    if a + need > w.v.len() {
        return Err(Stop::Illegal("VGPR beyond the kernel's allocation"));
    }
    let reg = vdst(w, if i.store { i.data } else { i.dst }, i.dwords)?;
    let mut addr = [0u64; LANES];
    for (lane, ad) in addr.iter_mut().enumerate() {
        let v = match base {
            Some(b) => b.wrapping_add(u64::from(w.v[a][lane])),
            None => u64::from(w.v[a][lane]) | u64::from(w.v[a + 1][lane]) << 32,
        };
        *ad = v.wrapping_add(i.imm as i64 as u64);
    }
    if i.op < 20 || i.op == 24 || i.op == 26 {
        // Bytes and shorts, lane by lane (loads extend to 32 bits, unsigned or signed).
        let size = if matches!(i.op, 16 | 17 | 24) { 1 } else { 2 };
        for lane in (0..LANES).filter(|l| exec >> l & 1 != 0) {
            let mut b = [0u8; 4];
            if i.store {
                b = w.v[reg][lane].to_le_bytes();
                x.write(addr[lane], &b[..size])?;
            } else {
                x.read(addr[lane], &mut b[..size])?;
                let v = u32::from_le_bytes(b);
                w.v[reg][lane] = match i.op {
                    17 => v as u8 as i8 as i32 as u32,
                    19 => v as u16 as i16 as i32 as u32,
                    _ => v,
                };
            }
        }
        return Ok(());
    }
    let first = exec.trailing_zeros() as usize;
    let last = 63 - exec.leading_zeros() as usize;
    let span = last - first + 1;
    let dense = exec >> first == u64::MAX >> (64 - span);
    let consecutive =
        (first..=last).filter(|l| exec >> l & 1 != 0).all(|l| addr[l] == addr[first].wrapping_add(((l - first) * bytes) as u64));
    let mut buf = [0u8; LANES * 16];
    if consecutive && (dense || !i.store) {
        let len = span * bytes;
        if i.store {
            for lane in first..=last {
                for k in 0..n {
                    let o = (lane - first) * bytes + 4 * k;
                    buf[o..o + 4].copy_from_slice(&w.v[reg + k][lane].to_le_bytes());
                }
            }
            x.write(addr[first], &buf[..len])?;
            x.count_written(len as u64);
        } else {
            x.read(addr[first], &mut buf[..len])?;
            x.count_read(len as u64);
            for lane in (first..=last).filter(|l| exec >> l & 1 != 0) {
                for k in 0..n {
                    let o = (lane - first) * bytes + 4 * k;
                    w.v[reg + k][lane] = u32::from_le_bytes(buf[o..o + 4].try_into().unwrap_or_default());
                }
            }
        }
        return Ok(());
    }
    for lane in (0..LANES).filter(|l| exec >> l & 1 != 0) {
        let b = &mut buf[..bytes];
        if i.store {
            for k in 0..n {
                b[4 * k..4 * k + 4].copy_from_slice(&w.v[reg + k][lane].to_le_bytes());
            }
            x.write(addr[lane], b)?;
        } else {
            x.read(addr[lane], b)?;
            for k in 0..n {
                w.v[reg + k][lane] = u32::from_le_bytes(b[4 * k..4 * k + 4].try_into().unwrap_or_default());
            }
        }
    }
    Ok(())
}

/// FLAT / GLOBAL atomics, lane by lane (lanes in order, as one read-modify-write each); with
/// `glc` the old value comes back in the destination VGPRs.
fn atomic(x: &Exec<'_>, w: &mut Wave, i: &Inst) -> Result<(), Stop> {
    let exec = w.exec();
    if exec == 0 {
        return Ok(());
    }
    let n = usize::from(i.dwords);
    let cmp = i.op == 65 || i.op == 97;
    let a = usize::from(i.src[0] - 256);
    let base = if i.saddr != SADDR_OFF && i.seg != 0 { Some(sreg64(w, i.saddr)?) } else { None };
    if a + if base.is_some() { 1 } else { 2 } > w.v.len() {
        return Err(Stop::Illegal("VGPR beyond the kernel's allocation"));
    }
    let data = vdst(w, i.data, if cmp { 2 * i.dwords } else { i.dwords })?;
    let ret = if i.glc { Some(vdst(w, i.dst, i.dwords)?) } else { None };
    let op = if i.op >= 96 { i.op - 32 } else { i.op };
    for lane in (0..LANES).filter(|l| exec >> l & 1 != 0) {
        let va = match base {
            Some(b) => b.wrapping_add(u64::from(w.v[a][lane])),
            None => u64::from(w.v[a][lane]) | u64::from(w.v[a + 1][lane]) << 32,
        }
        .wrapping_add(i.imm as i64 as u64);
        let mut b = [0u8; 8];
        x.read(va, &mut b[..4 * n])?;
        let old = u64::from_le_bytes(b);
        let val = |k: usize| -> u64 {
            let lo = u64::from(w.v[data + k * n][lane]);
            if n == 2 {
                lo | u64::from(w.v[data + k * n + 1][lane]) << 32
            } else {
                lo
            }
        };
        let (s, bits) = (val(0), 32 * n as u32);
        let mask = if n == 2 { u64::MAX } else { u64::from(u32::MAX) };
        let signed = |v: u64| -> i64 { ((v << (64 - bits)) as i64) >> (64 - bits) };
        let new = match op {
            64 => s,
            65 => {
                if old == val(1) {
                    s
                } else {
                    old
                }
            }
            66 => old.wrapping_add(s),
            67 => old.wrapping_sub(s),
            68 => signed(old).min(signed(s)) as u64,
            69 => old.min(s),
            70 => signed(old).max(signed(s)) as u64,
            71 => old.max(s),
            72 => old & s,
            73 => old | s,
            74 => old ^ s,
            // inc / dec wrap at the operand: (old >= s) ? 0 : old + 1; (old == 0 || old > s) ? s : old - 1.
            75 => {
                if old >= s {
                    0
                } else {
                    old + 1
                }
            }
            _ => {
                if old == 0 || old > s {
                    s
                } else {
                    old - 1
                }
            }
        } & mask;
        x.write(va, &new.to_le_bytes()[..4 * n])?;
        if let Some(r) = ret {
            w.v[r][lane] = old as u32;
            if n == 2 {
                w.v[r + 1][lane] = (old >> 32) as u32;
            }
        }
    }
    Ok(())
}

/// LDS accesses: the address is the lane's VGPR plus the offset; bytes outside the
/// workgroup's allocation read as 0 and writes to them are dropped (gfx9's range check).
fn ds(w: &mut Wave, lds: &mut [u8], i: &Inst) -> Result<(), Stop> {
    let exec = w.exec();
    let a = usize::from(i.src[0] - 256);
    if a >= w.v.len() {
        return Err(Stop::Illegal("VGPR beyond the kernel's allocation"));
    }
    let op = i.op;
    let sig = i.sig;
    let d0 = if sig[2] != 0 { vdst(w, i.data, sig[2])? } else { 0 };
    let d1 = if sig[3] != 0 { vdst(w, i.data1, sig[3])? } else { 0 };
    let dst = if sig[0] != 0 { vdst(w, i.dst, sig[0])? } else { 0 };
    let rd = |lds: &[u8], at: u64, n: usize| -> u32 {
        let mut b = [0u8; 4];
        for (k, x) in b.iter_mut().enumerate().take(n) {
            *x = usize::try_from(at + k as u64).ok().and_then(|p| lds.get(p)).copied().unwrap_or(0);
        }
        u32::from_le_bytes(b)
    };
    let wr = |lds: &mut [u8], at: u64, n: usize, v: u32| {
        for (k, x) in v.to_le_bytes().iter().enumerate().take(n) {
            if let Some(p) = usize::try_from(at + k as u64).ok().and_then(|p| lds.get_mut(p)) {
                *p = *x;
            }
        }
    };
    if matches!(op, 61..=63) {
        return ds_cross_lane(w, i, exec, a, dst, d0);
    }
    let two = gfx9::ds_two(op);
    let (o0, o1) = (u64::from(i.imm as u32 & 0xff), u64::from(i.imm as u32 >> 8));
    for lane in (0..LANES).filter(|l| exec >> l & 1 != 0) {
        let base = u64::from(w.v[a][lane]);
        if two {
            // Two addresses: offsets in elements (4 or 8 bytes), times 64 for the st64 forms.
            let (elem, dw) = if op >= 77 { (8u64, 2usize) } else { (4, 1) };
            let scale = if matches!(op, 15 | 56 | 79 | 120) { elem * 64 } else { elem };
            let at = [base + o0 * scale, base + o1 * scale];
            let reading = sig[0] != 0;
            for (h, &at) in at.iter().enumerate() {
                for k in 0..dw {
                    let p = at + 4 * k as u64;
                    if reading {
                        w.v[dst + h * dw + k][lane] = rd(lds, p, 4);
                    } else {
                        let v = w.v[if h == 0 { d0 } else { d1 } + k][lane];
                        wr(lds, p, 4, v);
                    }
                }
            }
            continue;
        }
        let at = base + i.imm as u64;
        match op {
            13 | 77 | 222 | 223 => {
                for k in 0..usize::from(sig[2]) {
                    wr(lds, at + 4 * k as u64, 4, w.v[d0 + k][lane]);
                }
            }
            30 => wr(lds, at, 1, w.v[d0][lane]),
            31 => wr(lds, at, 2, w.v[d0][lane]),
            54 | 118 | 254 | 255 => {
                for k in 0..usize::from(sig[0]) {
                    w.v[dst + k][lane] = rd(lds, at + 4 * k as u64, 4);
                }
            }
            57 => w.v[dst][lane] = rd(lds, at, 1) as u8 as i8 as i32 as u32,
            58 => w.v[dst][lane] = rd(lds, at, 1),
            59 => w.v[dst][lane] = rd(lds, at, 2) as u16 as i16 as i32 as u32,
            60 => w.v[dst][lane] = rd(lds, at, 2),
            _ => {
                // Atomics: 0..=21 32-bit, 64..=80 64-bit; the same plus 32 return the old value.
                // The operation is `op & 31` in either width.
                let wide = op >= 64;
                let n = if wide { 2 } else { 1 };
                let get = |w: &Wave, r: usize| (0..n).fold(0u64, |v, k| v | u64::from(w.v[r + k][lane]) << (32 * k));
                let old = (0..n).fold(0u64, |v, k| v | u64::from(rd(lds, at + 4 * k as u64, 4)) << (32 * k));
                let s = get(w, d0);
                let cmp_new = if sig[3] != 0 { get(w, d1) } else { 0 };
                let new = ds_atomic(op & 31, old, s, cmp_new, wide).ok_or(Stop::Illegal("unsupported DS"))?;
                for k in 0..n {
                    wr(lds, at + 4 * k as u64, 4, (new >> (32 * k)) as u32);
                }
                if op & 32 != 0 {
                    for k in 0..n {
                        w.v[dst + k][lane] = (old >> (32 * k)) as u32;
                    }
                }
            }
        }
    }
    Ok(())
}

/// A DS atomic operation (`op & 31` of its opcode) on the `old` value with the data `s` (and,
/// for cmpst, the value stored on a match `cmp_new`), 32 or 64 bits wide (`wide`): the new
/// value, or `None` for an operation the model does not know.
fn ds_atomic(sub: u16, old: u64, s: u64, cmp_new: u64, wide: bool) -> Option<u64> {
    let bits = if wide { 64 } else { 32 };
    let mask = if wide { u64::MAX } else { u64::from(u32::MAX) };
    // Signed views of the operands in their width.
    let signed = |v: u64| ((v << (64 - bits)) as i64) >> (64 - bits);
    Some(
        match sub {
            0 => old.wrapping_add(s),
            1 => old.wrapping_sub(s),
            2 => s.wrapping_sub(old),
            3 => {
                if old >= s {
                    0
                } else {
                    old + 1
                }
            }
            4 => {
                if old == 0 || old > s {
                    s
                } else {
                    old - 1
                }
            }
            5 => signed(old).min(signed(s)) as u64,
            6 => signed(old).max(signed(s)) as u64,
            7 => old.min(s),
            8 => old.max(s),
            9 => old & s,
            10 => old | s,
            11 => old ^ s,
            13 => s,
            // cmpst: data0 is compared, data1 stored.
            16 => {
                if old == s {
                    cmp_new
                } else {
                    old
                }
            }
            // ds_add_f32: IEEE single-precision add (round to nearest even).
            21 if !wide => u64::from((f(old as u32) + f(s as u32)).to_bits()),
            _ => return None,
        } & mask,
    )
}

/// The DS instructions that move data between lanes without LDS: `ds_swizzle_b32` (the
/// pattern in its offset), `ds_bpermute_b32` (each lane reads the lane its address names,
/// `(addr + offset) / 4` modulo the wave size) and `ds_permute_b32` (each lane writes its data
/// to the lane its address names; on a collision the higher source lane wins). A read from a
/// lane EXEC leaves out, or a lane nothing is written to, gives 0; only active lanes' results
/// are written.
fn ds_cross_lane(w: &mut Wave, i: &Inst, exec: u64, a: usize, dst: usize, d0: usize) -> Result<(), Stop> {
    let lanes = w.lanes;
    let active = |l: usize| exec >> l & 1 != 0;
    let off = u64::from(i.imm as u32 & 0xffff);
    let target = |w: &Wave, l: usize| ((u64::from(w.v[a][l]) + off) / 4) as usize % lanes;
    let mut out = [0u32; LANES];
    match i.op {
        61 => {
            for l in (0..lanes).filter(|&l| active(l)) {
                let src = gfx9::swizzle_source(i.imm as u16, l) % lanes;
                out[l] = if active(src) { w.v[a][src] } else { 0 };
            }
        }
        63 => {
            for l in (0..lanes).filter(|&l| active(l)) {
                let src = target(w, l);
                out[l] = if active(src) { w.v[d0][src] } else { 0 };
            }
        }
        _ => {
            for l in (0..lanes).filter(|&l| active(l)) {
                out[target(w, l)] = w.v[d0][l];
            }
        }
    }
    for l in (0..lanes).filter(|&l| active(l)) {
        w.v[dst][l] = out[l];
    }
    Ok(())
}

/// MUBUF loads and stores through the private segment V# (swizzled: dword `k` of lane `l`'s
/// element at `(offset / 4) * 4 * index_stride + index * 4`). Bytes outside the scratch region
/// read 0 and writes to them are dropped. Other buffer resources are not modelled yet.
fn buffer(w: &mut Wave, scratch: &mut [u8], i: &Inst) -> Result<(), Stop> {
    let exec = w.exec();
    let r = usize::from(i.saddr);
    if r + 4 > 102 {
        return Err(Stop::Illegal("buffer resource beyond the SGPRs"));
    }
    let v = [w.s[r], w.s[r + 1], w.s[r + 2], w.s[r + 3]];
    let base = u64::from(v[0]) | u64::from(v[1] & 0xffff) << 32;
    let stride = u64::from((v[1] >> 16) & 0x3fff);
    let swizzle = v[1] & (1 << 30) != 0;
    let add_tid = v[3] & V_ADD_TID != 0;
    let elem = 2u64 << ((v[3] >> 19) & 3);
    let index_stride = 8u64 << ((v[3] >> 21) & 3);
    if base < PRIVATE_BASE || !swizzle {
        return Err(Stop::Illegal("buffer resources other than the private segment are not modelled yet"));
    }
    let soffset = u64::from(sval(w, i.src[1], 0)?);
    let a = usize::from(i.src[0] - 256);
    let nv = usize::from(i.idxen) + usize::from(i.offen);
    if a + nv > w.v.len() {
        return Err(Stop::Illegal("VGPR beyond the kernel's allocation"));
    }
    let reg = vdst(w, i.data, i.dwords)?;
    let bytes = MUBUF_BYTES[usize::from(i.op & 15)];
    let signed = matches!(i.op, 17 | 19);
    for lane in (0..LANES).filter(|l| exec >> l & 1 != 0) {
        let vi = if i.idxen { u64::from(w.v[a][lane]) } else { 0 };
        let vo = if i.offen { u64::from(w.v[a + usize::from(i.idxen)][lane]) } else { 0 };
        let index = vi + if add_tid { lane as u64 } else { 0 };
        let offset = i.imm as u64 + vo;
        // Each byte's address (an element is contiguous; consecutive elements are
        // index_stride elements apart).
        let at = |b: u64| -> Option<usize> {
            let o = offset + b;
            let va = base
                + soffset
                + ((index / index_stride) * stride + (o / elem) * elem) * index_stride
                + (index % index_stride) * elem
                + o % elem;
            usize::try_from(va - PRIVATE_BASE).ok()
        };
        for b in 0..bytes {
            let (k, sh) = (b / 4, 8 * (b % 4));
            if i.store {
                let byte = (w.v[reg + k][lane] >> sh) as u8;
                if let Some(p) = at(b as u64).and_then(|p| scratch.get_mut(p)) {
                    *p = byte;
                }
            } else {
                let byte = at(b as u64).and_then(|p| scratch.get(p)).copied().unwrap_or(0);
                let r = &mut w.v[reg + k][lane];
                if sh == 0 {
                    *r = 0;
                }
                *r |= u32::from(byte) << sh;
            }
        }
        if !i.store && bytes < 4 {
            let r = &mut w.v[reg][lane];
            *r = match (bytes, signed) {
                (1, true) => *r as u8 as i8 as i32 as u32,
                (2, true) => *r as u16 as i16 as i32 as u32,
                _ => *r,
            };
        }
    }
    Ok(())
}

/// Bytes per lane of MUBUF opcodes 16..=31 (by `op & 15`).
const MUBUF_BYTES: [usize; 16] = [1, 1, 2, 2, 4, 8, 12, 16, 1, 1, 2, 2, 4, 8, 12, 16];

/// Float compare by the low four bits of a VOPC opcode (f, lt, eq, le, gt, lg, ge, o, u, nge,
/// nlg, ngt, nle, neq, nlt, tru); unordered (a NaN) is `None`, for which the "n" forms hold.
fn fcmp(op: u16, o: Option<std::cmp::Ordering>) -> bool {
    use std::cmp::Ordering::{Equal, Greater, Less};
    match op & 15 {
        0 => false,
        1 => o == Some(Less),
        2 => o == Some(Equal),
        3 => matches!(o, Some(Less | Equal)),
        4 => o == Some(Greater),
        5 => matches!(o, Some(Less | Greater)),
        6 => matches!(o, Some(Greater | Equal)),
        7 => o.is_some(),
        8 => o.is_none(),
        9 => !matches!(o, Some(Greater | Equal)),
        10 => !matches!(o, Some(Less | Greater)),
        11 => o != Some(Greater),
        12 => !matches!(o, Some(Less | Equal)),
        13 => o != Some(Equal),
        14 => o != Some(Less),
        _ => true,
    }
}

/// The sign bit the abs/neg modifiers act on, for the 32-bit-register ops with float sources.
fn float_sign(class: u8, op: u16) -> Option<u32> {
    match (class, op) {
        (0, 0x14 | 0x20..=0x2f) | (1, 11) | (2, 31..=34 | 45 | 46) | (3, 0x206 | 0x207) => Some(15),
        (0, 0x10 | 0x40..=0x4f)
        | (1, 7 | 8 | 10 | 27..=36 | 39 | 41 | 42 | 51 | 52)
        | (2, 1..=3 | 5 | 10 | 11 | 22 | 59)
        | (3, 0x1c1 | 0x1cb | 0x1de | 0x1e0 | 0x1e2 | 0x288) => Some(31),
        // v_cndmask_b32_e64 selects floats too: abs / neg on its two sources' bit 31 (the
        // device library's sinf/cosf negate through it).
        (2, 0) => Some(31),
        _ => None,
    }
}

/// The f32 ops whose inputs and results follow MODE's f32 denormal bits: arithmetic,
/// conversions between floats, the transcendentals and the division macro's fma/fixup steps.
/// Not v_div_scale (which exists to handle subnormals) nor v_cmp_class (which reports them).
fn honours_f32_denormals(class: u8, op: u16) -> bool {
    matches!(
        (class, op),
        (1, 27..=36 | 39 | 41 | 42 | 51 | 52) | (2, 1..=3 | 5 | 10 | 11 | 22 | 59) | (3, 0x1c1 | 0x1cb | 0x1de | 0x1e2 | 0x288)
    )
}

/// The f16 inline constants (operand codes 240..=248: ±0.5, ±1, ±2, ±4, 1/(2π)).
const H_CONST: [u16; 9] = [0x3800, 0xb800, 0x3c00, 0xbc00, 0x4000, 0xc000, 0x4400, 0xc400, 0x3118];
/// The same as f64.
const D_CONST: [u64; 9] = [
    0x3fe0_0000_0000_0000,
    0xbfe0_0000_0000_0000,
    0x3ff0_0000_0000_0000,
    0xbff0_0000_0000_0000,
    0x4000_0000_0000_0000,
    0xc000_0000_0000_0000,
    0x4010_0000_0000_0000,
    0xc010_0000_0000_0000,
    0x3fc4_5f30_6dc9_c882,
];

/// An IEEE half (low 16 bits of `h`) as f32 (exact).
fn h2f(h: u32) -> f32 {
    let (sign, e, m) = (h >> 15 & 1, (h >> 10) & 0x1f, h & 0x3ff);
    if e == 31 {
        // Infinity, or a NaN keeping its payload.
        return f32::from_bits(sign << 31 | 0x7f80_0000 | m << 13);
    }
    let mag = if e == 0 { m as f32 * f32::from_bits(0x3380_0000) } else { (m | 0x400) as f32 * 2f32.powi(e as i32 - 25) };
    if sign != 0 {
        -mag
    } else {
        mag
    }
}

/// `m * 2^e` (negated if `neg`) rounded to the nearest half, ties to even; overflow is infinity.
fn f16_round(neg: bool, m: u128, e: i32) -> u32 {
    let s = u32::from(neg) << 15;
    if m == 0 {
        return s;
    }
    let top = 127 - m.leading_zeros() as i32 + e;
    if top > 15 {
        return s | 0x7c00;
    }
    // The exponent of the result's last mantissa bit (subnormals: 2^-24).
    let lsb = (top - 10).max(-24);
    let shift = lsb - e;
    let q = if shift <= 0 {
        m << -shift
    } else if shift >= 128 {
        0
    } else {
        let (q, rem, half) = (m >> shift, m & ((1u128 << shift) - 1), 1u128 << (shift - 1));
        q + u128::from(rem > half || (rem == half && q & 1 == 1))
    };
    // Normal and subnormal alike: (biased exponent - 1) << 10 plus the 11-bit significand; a
    // carry out of the significand moves into the exponent.
    let bits = ((lsb + 24) as u128) * 1024 + q;
    s | if bits >= 0x7c00 { 0x7c00 } else { bits as u32 }
}

/// f32 to half, round to nearest even (the f16 conversions and the f16 ALU results: f32 holds
/// the exact sum, difference or product of two halves' 11-bit significands up to one rounding,
/// and 24 >= 2 * 11 + 2 bits makes rounding twice the same as once).
fn f2h(x: f32) -> u32 {
    let b = x.to_bits();
    let (neg, ex, man) = (b >> 31 != 0, (b >> 23) & 0xff, b & 0x7f_ffff);
    if ex == 255 {
        return u32::from(neg) << 15 | if man == 0 { 0x7c00 } else { 0x7e00 | man >> 13 };
    }
    let (m, e) = if ex == 0 { (man, -149) } else { (man | 0x80_0000, ex as i32 - 150) };
    f16_round(neg, u128::from(m), e)
}

/// v_fma_f16: a * b + c rounded once (finite halves are integers times 2^-24, so the sum is
/// exact in 128-bit fixed point).
fn fma_h(a: u32, b: u32, c: u32) -> u32 {
    let (fa, fb, fc) = (h2f(a), h2f(b), h2f(c));
    if !(fa.is_finite() && fb.is_finite() && fc.is_finite()) {
        return f2h(fa.mul_add(fb, fc));
    }
    let fix = |x: f32| (f64::from(x) * 16_777_216.0) as i128;
    let sum = fix(fa) * fix(fb) + (fix(fc) << 24);
    if sum == 0 {
        return if (fa * fb).is_sign_negative() && fc.is_sign_negative() { 0x8000 } else { 0 };
    }
    f16_round(sum < 0, sum.unsigned_abs(), -48)
}

/// The ops with 64-bit operands handled by [`vector64`].
fn wide(class: u8, op: u16) -> bool {
    matches!(
        (class, op),
        (0, 0x12 | 0x60..=0x6f | 0xe0..=0xef)
            | (1, 3 | 4 | 15 | 16 | 21..=26 | 37 | 38 | 40 | 48..=50 | 56)
            | (2, 4)
            | (3, 0x1cc | 0x1df | 0x1e1 | 0x1e3 | 0x208 | 0x280..=0x284 | 0x291)
    )
}

/// A 64-bit vector source: a VGPR pair or a value every lane reads. Float inline constants are
/// f64 values; a literal is the high half of an f64 (the low half 0) for float operands.
#[derive(Clone, Copy)]
enum VSrc64 {
    V(usize),
    K(u64),
}

fn vsrc64(w: &Wave, c: u16, lit: u32, float: bool) -> Result<VSrc64, Stop> {
    Ok(match c {
        256.. => {
            let r = usize::from(c - 256);
            if r + 1 >= w.v.len() {
                return Err(Stop::Illegal("VGPR beyond the kernel's allocation"));
            }
            VSrc64::V(r)
        }
        240..=248 => VSrc64::K(D_CONST[usize::from(c - 240)]),
        LITERAL if float => VSrc64::K(u64::from(lit) << 32),
        _ => VSrc64::K(sval64(w, c, lit)?),
    })
}

fn get64(w: &Wave, s: VSrc64, lane: usize) -> u64 {
    match s {
        VSrc64::V(r) => u64::from(w.v[r][lane]) | u64::from(w.v[r + 1][lane]) << 32,
        VSrc64::K(k) => k,
    }
}

fn d(v: u64) -> f64 {
    f64::from_bits(v)
}

/// `x * 2^n` (n clamped; steps of at most 2^1000, so a subnormal result may round twice).
fn ldexp(mut x: f64, n: i32) -> f64 {
    let mut n = n.clamp(-2200, 2200);
    while n != 0 {
        let k = n.clamp(-1000, 1000);
        x *= f64::from_bits(((1023 + k) as u64) << 52);
        n -= k;
    }
    x
}

/// VOP3P (gfx90a): `v_pk_{fma,mul,add}_f32` work on two f32 halves of 64-bit operands: the low
/// result from the halves `op_sel` picks (0 low, 1 high) negated by `neg_lo`, the high result
/// from those `op_sel_hi` picks negated by `neg_hi`. `v_pk_mov_b32` writes the half of src0
/// `op_sel[0]` picks to the low dword and the half of src1 `op_sel[1]` picks to the high one.
/// Sources: VGPR pairs, SGPR pairs, the constant 0. Other inline constants (how the hardware
/// widens them to two halves is not modelled) and `clamp` are refused.
fn packed(w: &mut Wave, i: &Inst) -> Result<(), Stop> {
    if gfx9::is_mix(i.op) {
        return mix(w, i);
    }
    if i.clamp {
        return Err(Stop::Illegal("VOP3P clamp is not modelled yet"));
    }
    let nsrc = if i.op == 0x30 { 3 } else { 2 };
    let mov = i.op == 0x33;
    if mov && (i.neg | i.abs) != 0 {
        return Err(Stop::Illegal("neg_lo/neg_hi on v_pk_mov_b32"));
    }
    let mut srcs = [VSrc64::K(0); 3];
    for (s, &c) in srcs.iter_mut().zip(&i.src).take(nsrc) {
        *s = match c {
            0..=128 | 256.. => vsrc64(w, c, 0, false)?,
            _ => return Err(Stop::Illegal("a VOP3P inline constant other than 0")),
        };
    }
    let (op_sel, op_sel_hi) = (i.imm as u32 & 7, (i.imm as u32 >> 3) & 7);
    let half = |v: u64, hi: bool| if hi { (v >> 32) as u32 } else { v as u32 };
    let dst = vdst(w, i.dst, 2)?;
    let exec = w.exec();
    for lane in (0..LANES).filter(|l| exec >> l & 1 != 0) {
        let v = srcs.map(|s| get64(w, s, lane));
        let (lo, hi) = if mov {
            (half(v[0], op_sel & 1 != 0), half(v[1], op_sel & 2 != 0))
        } else {
            let pick = |k: usize, sel: u32, neg: u8| f(half(v[k], sel >> k & 1 != 0) ^ u32::from(neg >> k & 1) << 31);
            let lane_op = |sel: u32, neg: u8| -> u32 {
                let (a, b, c) = (pick(0, sel, neg), pick(1, sel, neg), pick(2, sel, neg));
                match i.op {
                    0x30 => a.mul_add(b, c),
                    0x31 => a * b,
                    _ => a + b,
                }
                .to_bits()
            };
            (lane_op(op_sel, i.neg), lane_op(op_sel_hi, i.abs))
        };
        w.v[dst][lane] = lo;
        w.v[dst + 1][lane] = hi;
    }
    Ok(())
}

/// v_fma_mix_f32 / v_fma_mixlo_f16 / v_fma_mixhi_f16: `a * b + c` where each source is an
/// f32, or (its op_sel_hi bit set) the f16 half its op_sel bit picks; neg_lo negates and
/// neg_hi takes the absolute value. mix_f32 writes the f32 result; mixlo / mixhi round once to
/// f16 into the low / high half, keeping the other. Inline constants: 0, and the f32 ones for
/// f32 sources (an f16 source's inline constant is refused, as is `clamp`).
fn mix(w: &mut Wave, i: &Inst) -> Result<(), Stop> {
    if i.clamp {
        return Err(Stop::Illegal("v_fma_mix clamp is not modelled yet"));
    }
    let (op_sel, op_sel_hi) = (i.imm as u32 & 7, (i.imm as u32 >> 3) & 7);
    let mut srcs = [VSrc::K(0); 3];
    for (k, s) in srcs.iter_mut().enumerate() {
        let c = i.src[k];
        *s = match c {
            128 | 256.. => vsrc(w, c, 0)?,
            0..=127 | 129..=208 | 240..=248 if op_sel_hi >> k & 1 == 0 => vsrc(w, c, 0)?,
            0..=127 => vsrc(w, c, 0)?,
            _ => return Err(Stop::Illegal("an f16 inline constant in v_fma_mix")),
        };
    }
    let d = vdst(w, i.dst, 1)?;
    let exec = w.exec();
    for lane in (0..LANES).filter(|l| exec >> l & 1 != 0) {
        let v = [0, 1, 2].map(|k| {
            let raw = get(w, srcs[k], lane);
            let x = if op_sel_hi >> k & 1 != 0 { h2f(if op_sel >> k & 1 != 0 { raw >> 16 } else { raw & 0xffff }) } else { f(raw) };
            let x = if i.abs >> k & 1 != 0 { x.abs() } else { x };
            if i.neg >> k & 1 != 0 {
                -x
            } else {
                x
            }
        });
        let old = w.v[d][lane];
        w.v[d][lane] = match i.op {
            0x20 => v[0].mul_add(v[1], v[2]).to_bits(),
            op => {
                let h = f64_to_half(fp::fma_odd(v[0], v[1], v[2]));
                if op == 0x21 {
                    (old & 0xffff_0000) | h
                } else {
                    (old & 0xffff) | h << 16
                }
            }
        };
    }
    Ok(())
}

/// An f64 rounded to the nearest half (ties to even): exact when the f64 is the round-to-odd
/// image of the value to round (53 >= 11 + 2 bits).
fn f64_to_half(x: f64) -> u32 {
    if !x.is_finite() {
        return f2h(x as f32);
    }
    let b = x.to_bits();
    let (neg, ex, man) = (b >> 63 != 0, ((b >> 52) & 0x7ff) as i32, b & ((1 << 52) - 1));
    let (m, e) = if ex == 0 { (man, -1074) } else { (man | 1 << 52, ex - 1075) };
    f16_round(neg, u128::from(m), e)
}

/// f64 and 64-bit integer VALU ops (VOP1/VOP2/VOPC and their VOP3 forms, VOP3-only).
fn vector64(w: &mut Wave, i: &Inst, class: u8, op: u16) -> Result<(), Stop> {
    let exec = w.exec();
    // Which sources are f64 (abs/neg on bit 63) or f32 (bit 31); the rest are integers.
    let float = |k: usize| -> Option<u32> {
        match (class, op, k) {
            (0, 0x60..=0x6f, _)
            | (0, 0x12, 0)
            | (1, 3 | 15 | 21 | 23..=26 | 37 | 38 | 40 | 48..=50, 0)
            | (2, 4, _)
            | (3, 0x1cc | 0x1df | 0x1e1 | 0x1e3 | 0x280..=0x283, _)
            | (3, 0x284, 0) => Some(63),
            (1, 16, 0) => Some(31),
            _ => None,
        }
    };
    let mut am = [!0u64; 3];
    let mut xm = [0u64; 3];
    for k in 0..3 {
        if (i.neg | i.abs) >> k & 1 != 0 {
            let Some(b) = float(k) else { return Err(Stop::Illegal("abs/neg on an integer operand")) };
            if i.abs >> k & 1 != 0 {
                am[k] = !(1 << b);
            }
            if i.neg >> k & 1 != 0 {
                xm[k] = 1 << b;
            }
        }
    }
    let mut srcs = [VSrc64::K(0); 3];
    for (k, s) in srcs.iter_mut().enumerate() {
        *s = match i.sig[k + 1] {
            0 => VSrc64::K(0),
            2 => vsrc64(w, i.src[k], i.lit, float(k).is_some())?,
            _ => match vsrc(w, i.src[k], i.lit)? {
                VSrc::V(r) => VSrc64::V(r),
                VSrc::K(v) => VSrc64::K(u64::from(v)),
            },
        };
    }
    let narrow: [bool; 3] = [0, 1, 2].map(|k| i.sig[k + 1] == 1);
    let val = |w: &Wave, k: usize, lane: usize| -> u64 {
        let v = if narrow[k] {
            match srcs[k] {
                VSrc64::V(r) => u64::from(w.v[r][lane]),
                VSrc64::K(c) => c,
            }
        } else {
            get64(w, srcs[k], lane)
        };
        (v & am[k]) ^ xm[k]
    };
    if class == 0 {
        let mut m = 0u64;
        for lane in (0..LANES).filter(|l| exec >> l & 1 != 0) {
            let (a, b) = (val(w, 0, lane), val(w, 1, lane));
            let r = match op {
                0x12 => b >> fp::class(a, 11, 52) & 1 != 0,
                0x60..=0x6f => fcmp(op, d(a).partial_cmp(&d(b))),
                _ => {
                    let o = if op < 0xe8 { (a as i64).cmp(&(b as i64)) } else { a.cmp(&b) };
                    icmp(op, o)
                }
            };
            m |= u64::from(r) << lane;
        }
        return set_mask(w, if i.enc == Enc::Vopc { VCC } else { i.dst }, m);
    }
    let dst = vdst(w, i.dst, i.sig[0])?;
    let vcc = w.mask(VCC);
    let mut cout = 0u64;
    for lane in (0..LANES).filter(|l| exec >> l & 1 != 0) {
        let (a, b, c) = (val(w, 0, lane), val(w, 1, lane), val(w, 2, lane));
        let acc = u64::from(w.v[dst][lane]) | u64::from(w.v.get(dst + 1).map_or(0, |v| v[lane])) << 32;
        let r: u64 = match (class, op) {
            (1, 3) => d(a) as i32 as u32 as u64,
            (1, 4) => f64::from(a as u32 as i32).to_bits(),
            (1, 15) => u64::from((d(a) as f32).to_bits()),
            (1, 16) => f64::from(f(a as u32)).to_bits(),
            (1, 21) => u64::from(d(a) as u32),
            (1, 22) => f64::from(a as u32).to_bits(),
            (1, 23) => d(a).trunc().to_bits(),
            (1, 24) => d(a).ceil().to_bits(),
            (1, 25) => d(a).round_ties_even().to_bits(),
            (1, 26) => d(a).floor().to_bits(),
            (1, 37) => (1.0 / d(a)).to_bits(),
            (1, 38) => (1.0 / d(a).sqrt()).to_bits(),
            (1, 40) => d(a).sqrt().to_bits(),
            (1, 48) => u64::from(fp::frexp_exp64(d(a)) as u32),
            (1, 49) => fp::frexp_mant64(d(a)).to_bits(),
            (1, 50) => fp::fract64(d(a)).to_bits(),
            (3, 0x1df) => fp::div_fixup64(d(a), d(b), d(c)).to_bits(),
            (3, 0x1e1) => {
                let (r, scale) = fp::div_scale64(d(a), d(b), d(c));
                cout |= u64::from(scale) << lane;
                r.to_bits()
            }
            (3, 0x1e3) => fp::div_fmas64(d(a), d(b), d(c), vcc >> lane & 1 != 0).to_bits(),
            // gfx942's v_mov_b64.
            (1, 56) => a,
            (2, 4) => d(a).mul_add(d(b), d(acc)).to_bits(),
            (3, 0x1cc) => d(a).mul_add(d(b), d(c)).to_bits(),
            (3, 0x280) => (d(a) + d(b)).to_bits(),
            (3, 0x281) => (d(a) * d(b)).to_bits(),
            (3, 0x282) => d(a).min(d(b)).to_bits(),
            (3, 0x283) => d(a).max(d(b)).to_bits(),
            (3, 0x284) => ldexp(d(a), b as u32 as i32).to_bits(),
            (3, 0x291) => ((b as i64) >> (a & 63)) as u64,
            // gfx942's v_lshl_add_u64: the shift is S1[2:0] (the ISA guide supports 0..=4).
            (3, 0x208) => (a << (b & 7)).wrapping_add(c),
            _ => return Err(Stop::Illegal("unsupported 64-bit VALU op")),
        };
        w.v[dst][lane] = r as u32;
        if i.sig[0] == 2 {
            w.v[dst + 1][lane] = (r >> 32) as u32;
        }
    }
    if class == 3 && op == 0x1e1 {
        set_mask(w, i.sdst, cout)?;
    }
    Ok(())
}

/// Integer compare by the low three bits of a VOPC opcode (f, lt, eq, le, gt, ne, ge, t).
fn icmp(op: u16, o: std::cmp::Ordering) -> bool {
    use std::cmp::Ordering::{Equal, Greater, Less};
    match op & 7 {
        0 => false,
        1 => o == Less,
        2 => o == Equal,
        3 => o != Greater,
        4 => o == Greater,
        5 => o != Equal,
        6 => o != Less,
        _ => true,
    }
}
