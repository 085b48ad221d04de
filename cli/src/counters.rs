//! `kmtinfo counters`: each GPU's performance-counter blocks (hsaKmtPmcGetCounterProperties)
//! and which counters the backend counts itself (the privileged ones, readable through a PMC
//! trace: on the model, model/COUNTERS.md), plus the KFD's profiler interface; and the PMC
//! profile `kmtinfo --smoke` takes around its work.

use crate::smoke::check;
use hsakmt::*;
use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::pmc::BLOCK_NAMES;

/// Counter names rocprofiler-sdk gives the ids the model counts (gfx90a / gfx94x; gfx900 /
/// gfx906 renumber SPI and TCC), for display.
fn name(gfx: (u32, u32, u32), block: u32, id: u64) -> &'static str {
    let newer = gfx.1 >= 4 || (gfx.1 == 0 && gfx.2 >= 10);
    let (tg, wv, wr, wr64, rd) = if newer { (49, 52, 26, 27, 38) } else { (65, 68, 29, 30, 41) };
    match (BLOCK_NAMES.get(block as usize).copied().unwrap_or("?"), id) {
        ("GRBM", 0) => "GRBM_COUNT",
        ("SQ", 4) => "SQ_WAVES",
        ("SQ", 14) => "SQ_ITEMS",
        ("SPI", x) if x == tg => "SPI_CSN_NUM_THREADGROUPS",
        ("SPI", x) if x == wv => "SPI_CSN_WAVE",
        ("TCC", x) if x == wr => "TCC_EA_WRREQ",
        ("TCC", x) if x == wr64 => "TCC_EA_WRREQ_64B",
        ("TCC", x) if x == rd => "TCC_EA_RDREQ",
        _ => "",
    }
}

fn gfx(p: &HsaNodeProperties) -> (u32, u32, u32) {
    (p.EngineId.bf_Major(), p.EngineId.bf_Minor(), p.EngineId.bf_Stepping())
}

/// One block of a node's properties: block index, (counter id, type) list, slots.
type Block = (u32, Vec<(u64, u32)>, u32);

/// The blocks of a node's counter properties.
fn counters(node: u32) -> Result<Vec<Block>, HSAKMT_STATUS> {
    let mut cp: *mut HsaCounterProperties = std::ptr::null_mut();
    // SAFETY: a valid out-pointer.
    let s = unsafe { hsaKmtPmcGetCounterProperties(node, &mut cp) };
    if s != HSAKMT_STATUS_SUCCESS {
        return Err(s);
    }
    let mut out = Vec::new();
    // SAFETY: the thunk returned a valid HsaCounterProperties, kept until close; blocks are
    // walked as upstream lays them out (next block = &Counters[NumCounters]); packed(4)
    // fields are read unaligned.
    unsafe {
        let nb = std::ptr::addr_of!((*cp).NumBlocks).read_unaligned();
        let mut b = std::ptr::addr_of!((*cp).Blocks).cast::<HsaCounterBlockProperties>();
        for _ in 0..nb {
            let n = std::ptr::addr_of!((*b).NumCounters).read_unaligned();
            let slots = std::ptr::addr_of!((*b).NumConcurrent).read_unaligned();
            let c0 = std::ptr::addr_of!((*b).Counters).cast::<HsaCounter>();
            let mut list = Vec::new();
            let mut index = 0;
            for i in 0..n as usize {
                let c = c0.add(i).read_unaligned();
                index = c.BlockIndex;
                list.push((c.CounterId, c.Type));
            }
            out.push((index, list, slots));
            b = c0.add(n as usize).cast();
        }
    }
    Ok(out)
}

fn gpu_nodes() -> Result<Vec<(u32, HsaNodeProperties)>, String> {
    let mut sys: HsaSystemProperties = crate::smoke::zeroed();
    // SAFETY: valid out-pointer.
    check("hsaKmtAcquireSystemProperties", unsafe { hsaKmtAcquireSystemProperties(&mut sys) })?;
    let mut v = Vec::new();
    for n in 0..sys.NumNodes {
        let mut p: HsaNodeProperties = crate::smoke::zeroed();
        // SAFETY: valid out-pointer.
        check("hsaKmtGetNodeProperties", unsafe { hsaKmtGetNodeProperties(n, &mut p) })?;
        if p.KFDGpuID != 0 {
            v.push((n, p));
        }
    }
    Ok(v)
}

/// `kmtinfo counters`.
pub fn list() -> Result<(), String> {
    let s = hsaKmtOpenKFD();
    if s != HSAKMT_STATUS_SUCCESS && s != HSAKMT_STATUS_KERNEL_ALREADY_OPENED {
        return Err(format!("hsaKmtOpenKFD failed: {}", hsakmt_core::Status(s)));
    }
    let r = list_open();
    hsaKmtReleaseSystemProperties();
    hsaKmtCloseKFD();
    r
}

fn list_open() -> Result<(), String> {
    let nodes = gpu_nodes()?;
    match hsakmt::pmc::profiler_interface().map_err(|e| format!("{e}"))? {
        Some((name, v)) => crate::outln!("KFD profiler interface: {name}, version {v} (AcquireTraceAccess takes its device lock)"),
        None => crate::outln!("KFD profiler interface: none (AcquireTraceAccess arbitrates nothing, as upstream)"),
    }
    for (node, p) in nodes {
        let g = gfx(&p);
        let table = hsakmt::pmc::table_name(node).unwrap_or("none");
        crate::outln!("node {node}: gfx{}{}{:x}, upstream PMC table \"{table}\"", g.0, g.1, g.2);
        let blocks = match counters(node) {
            Ok(b) => b,
            Err(s) => {
                crate::outln!("  no counters: {}", hsakmt_core::Status(s));
                continue;
            }
        };
        for (index, list, slots) in blocks {
            let counted: Vec<String> = list
                .iter()
                .filter(|(_, t)| *t <= HSA_PROFILE_TYPE_PRIVILEGED_STREAMING)
                .map(|(id, _)| match name(g, index, *id) {
                    "" => format!("{id}"),
                    n => format!("{id} {n}"),
                })
                .collect();
            let ids = list.first().zip(list.last()).map_or(String::new(), |(a, b)| format!("ids {}..{}", a.0, b.0));
            let line = format!("  {:<7} {:>3} counters ({ids}), {slots:>2} at once", BLOCK_NAMES[index as usize], list.len());
            if counted.is_empty() {
                crate::outln!("{line}");
            } else {
                crate::outln!("{line}; counted by the backend: {}", counted.join(", "));
            }
        }
    }
    Ok(())
}

/// A PMC trace of every counter the backend counts on one GPU (at most as many per block as
/// it counts at once), started by [`Profile::start`] and read by [`Profile::finish`].
pub struct Profile {
    node: u32,
    gfx: (u32, u32, u32),
    trace: HSATraceId,
    order: Vec<(u32, u64)>,
    buf: Vec<u64>,
}

impl Profile {
    /// `None` where the node has no counters the backend counts (on /dev/kfd: none).
    pub fn start(node: u32, p: &HsaNodeProperties) -> Result<Option<Profile>, String> {
        let Ok(blocks) = counters(node) else { return Ok(None) };
        let mut reqs = Vec::new();
        for (index, list, slots) in &blocks {
            for (id, ty) in list.iter().filter(|(_, t)| *t <= HSA_PROFILE_TYPE_PRIVILEGED_STREAMING).take(*slots as usize) {
                let mut c: HsaCounter = crate::smoke::zeroed();
                c.Type = *ty;
                c.BlockIndex = *index;
                c.CounterId = *id;
                c.CounterSizeInBits = 64;
                c.CounterMask = u64::MAX;
                reqs.push(c);
            }
        }
        if reqs.is_empty() {
            return Ok(None);
        }
        let mut root: HsaPmcTraceRoot = crate::smoke::zeroed();
        // SAFETY: `reqs` holds `len` counters; `root` is a valid out-pointer.
        check("hsaKmtPmcRegisterTrace", unsafe { hsaKmtPmcRegisterTrace(node, reqs.len() as u32, reqs.as_mut_ptr(), &mut root) })?;
        let trace = root.TraceId;
        // Query order: block index, then registration order (ours is already sorted).
        let order = reqs.iter().map(|c| (c.BlockIndex, c.CounterId)).collect::<Vec<_>>();
        let mut prof = Profile { node, gfx: gfx(p), trace, order, buf: vec![0; root.TraceBufferMinSizeBytes as usize / 8] };
        check("hsaKmtPmcAcquireTraceAccess", hsaKmtPmcAcquireTraceAccess(node, trace))?;
        // SAFETY: `buf` lives in `prof` until `finish` stops and unregisters the trace.
        check("hsaKmtPmcStartTrace", unsafe { hsaKmtPmcStartTrace(trace, prof.buf.as_mut_ptr().cast(), (prof.buf.len() * 8) as u64) })?;
        Ok(Some(prof))
    }

    /// Stop the trace and give each counter's delta.
    pub fn finish(mut self) -> Result<Vec<PmcDelta>, String> {
        check("hsaKmtPmcQueryTrace", hsaKmtPmcQueryTrace(self.trace))?;
        check("hsaKmtPmcStopTrace", hsaKmtPmcStopTrace(self.trace))?;
        let deltas = self
            .order
            .iter()
            .enumerate()
            .map(|(i, (block, id))| PmcDelta {
                block: BLOCK_NAMES[*block as usize],
                id: *id,
                name: name(self.gfx, *block, *id),
                delta: self.buf[i],
            })
            .collect();
        check("hsaKmtPmcReleaseTraceAccess", hsaKmtPmcReleaseTraceAccess(self.node, self.trace))?;
        check("hsaKmtPmcUnregisterTrace", hsaKmtPmcUnregisterTrace(self.node, self.trace))?;
        self.buf.clear();
        Ok(deltas)
    }
}

/// One counter of a [`Profile`]: its block, id, rocprofiler name (if known) and delta.
#[derive(serde::Serialize)]
pub struct PmcDelta {
    pub block: &'static str,
    pub id: u64,
    pub name: &'static str,
    pub delta: u64,
}
