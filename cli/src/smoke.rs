//! `kmtinfo --smoke`: passes over the dispatch path through the C API, as a runtime uses it.
//! On the first GPU: allocate GPU-visible memory; an SDMA queue does CONSTANT_FILL + COPY_LINEAR
//! and a FENCE + TRAP that raises a KFD event; a PM4 compute queue does WRITE_DATA + RELEASE_MEM
//! with an interrupt; an AQL queue runs a barrier-AND and the model's built-in fill kernel with a
//! completion signal whose mailbox raises the event. Every result is checked. The pass runs
//! `--repeat` times (each step as many times) and each step's minimum, median and maximum
//! latency are reported: single samples vary by orders of magnitude with what else the machine
//! does. On a real GPU the AQL step is skipped: it needs a model kernel.

use hsakmt::*;
use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::packet::ring::{CmdFormat, CmdRing, DoorbellPtr};
use hsakmt_core::packet::{pm4, sdma};
use serde::Serialize;
use std::ffi::c_void;
use std::time::{Duration, Instant};

const WAIT_MS: u32 = 10_000;

pub(crate) fn check(what: &str, s: HSAKMT_STATUS) -> Result<(), String> {
    if s == HSAKMT_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(format!("{what} failed: {}", hsakmt_core::Status(s)))
    }
}

/// GPU-visible host memory (uncached, non-paged), mapped to the GPU of `node`; freed on drop.
pub struct Buffer {
    pub ptr: *mut u8,
    pub size: u64,
}

impl Buffer {
    pub fn new(node: u32, size: u64) -> Result<Buffer, String> {
        let mut f: HsaMemFlags = zeroed();
        f.set_bf_HostAccess(1);
        f.set_bf_NonPaged(1);
        f.set_bf_ExecuteAccess(1);
        f.set_bf_PageSize(HSA_PAGE_SIZE_4KB);
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: `p` is a valid out-pointer.
        check("hsaKmtAllocMemory", unsafe { hsaKmtAllocMemory(node, size, f, &mut p) })?;
        let mut gpu_va = 0u64;
        let mut nodes = [node];
        let map_flags: HsaMemFlags = zeroed();
        // SAFETY: `p` is the allocation just made; out-pointers are valid.
        let s = unsafe { hsaKmtMapMemoryToGPUNodes(p, size, &mut gpu_va, map_flags, 1, nodes.as_mut_ptr()) };
        let b = Buffer { ptr: p.cast(), size };
        check("hsaKmtMapMemoryToGPUNodes", s)?;
        // SAFETY: `size` bytes of CPU-accessible memory just allocated.
        unsafe { std::ptr::write_bytes(b.ptr, 0, size as usize) };
        Ok(b)
    }

    pub fn addr(&self) -> u64 {
        self.ptr as u64
    }

    pub fn u32_at(&self, i: usize) -> u32 {
        // SAFETY: callers index inside the buffer; the GPU writes it, hence the volatile read.
        unsafe { std::ptr::read_volatile(self.ptr.cast::<u32>().add(i)) }
    }

    fn u32s(&self, n: usize) -> Vec<u32> {
        (0..n).map(|i| self.u32_at(i)).collect()
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: the buffer this value allocated and mapped.
        unsafe {
            hsaKmtUnmapMemoryToGPU(self.ptr.cast());
            hsaKmtFreeMemory(self.ptr.cast(), self.size);
        }
    }
}

pub(crate) fn zeroed<T: zerocopy::FromZeros>() -> T {
    T::new_zeroed()
}

/// A KFD signal event, destroyed on drop.
pub struct Event(*mut HsaEvent);

impl Event {
    fn new(node: u32) -> Result<Event, String> {
        let mut d: HsaEventDescriptor = zeroed();
        d.EventType = HSA_EVENTTYPE_SIGNAL;
        d.NodeId = node;
        let mut e = std::ptr::null_mut();
        // SAFETY: valid descriptor and out-pointer.
        check("hsaKmtCreateEvent", unsafe { hsaKmtCreateEvent(&mut d, false, false, &mut e) })?;
        Ok(Event(e))
    }

    pub fn id(&self) -> u32 {
        // SAFETY: a live event of the thunk; EventId is its first word.
        unsafe { (*self.0).EventId }
    }

    /// The event's slot in the event page (HWData2): where a GPU writes the event id.
    pub fn mailbox(&self) -> u64 {
        // SAFETY: as above; the union is 8 bytes of plain data.
        unsafe { (*self.0).EventData.HWData2 }
    }

    pub fn wait(&self) -> Result<(), String> {
        // SAFETY: a live event.
        check("hsaKmtWaitOnEvent", unsafe { hsaKmtWaitOnEvent(self.0, WAIT_MS) })
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: the event this value created.
        unsafe { hsaKmtDestroyEvent(self.0) };
    }
}

/// A queue, destroyed on drop (before its ring).
pub struct Queue {
    pub res: HsaQueueResource,
}

impl Queue {
    pub fn new(node: u32, ty: HSA_QUEUE_TYPE, ring: &Buffer, res: HsaQueueResource) -> Result<Queue, String> {
        let mut res = res;
        // SAFETY: `ring` is GPU-visible memory that outlives the queue (callers drop the queue
        // first); `res` is a valid in/out struct.
        let s = unsafe {
            hsaKmtCreateQueue(node, ty, 100, HSA_QUEUE_PRIORITY_NORMAL, ring.ptr.cast(), ring.size, std::ptr::null_mut(), &mut res)
        };
        check("hsaKmtCreateQueue", s)?;
        Ok(Queue { res })
    }

    pub fn doorbell(&self) -> *mut u64 {
        // SAFETY: union of same-size plain data.
        unsafe { self.res.__anon_union_1.Queue_DoorBell_aql }
    }

    pub fn wptr(&self) -> *mut u64 {
        // SAFETY: as above.
        unsafe { self.res.__anon_union_2.Queue_write_ptr_aql }
    }

    pub fn rptr(&self) -> *mut u64 {
        // SAFETY: as above.
        unsafe { self.res.__anon_union_3.Queue_read_ptr_aql }
    }

    fn cmd_ring(&self, format: CmdFormat, ring: &Buffer) -> Result<CmdRing<DoorbellPtr>, String> {
        // SAFETY: ring, pointers and doorbell come from CreateQueue and live as long as the
        // queue; this is the only producer.
        unsafe { CmdRing::new(format, ring.ptr, ring.size as u32, self.wptr(), self.rptr(), DoorbellPtr::new(self.doorbell())) }
            .map_err(|e| format!("ring set-up: {e:?}"))
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        // SAFETY: the queue this value created.
        unsafe { hsaKmtDestroyQueue(self.res.QueueId) };
    }
}

/// Each step's latencies, in the order the steps first ran.
#[derive(Default)]
pub struct Timings(Vec<(&'static str, Vec<Duration>)>);

impl Timings {
    pub fn add(&mut self, name: &'static str, t: Duration) {
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => v.push(t),
            None => self.0.push((name, vec![t])),
        }
    }
}

/// One step over all passes, in microseconds.
#[derive(Serialize)]
pub struct StepStats {
    pub name: &'static str,
    pub samples: usize,
    pub min_us: f64,
    pub median_us: f64,
    pub max_us: f64,
}

/// The median of sorted samples (the mean of the middle two for an even count).
pub fn median(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

fn stats(t: &Timings) -> Vec<StepStats> {
    t.0.iter()
        .map(|(name, v)| {
            // Microseconds to 0.1 µs.
            let mut us: Vec<f64> = v.iter().map(|d| (d.as_secs_f64() * 1e7).round() / 10.0).collect();
            us.sort_by(f64::total_cmp);
            StepStats {
                name,
                samples: us.len(),
                min_us: us.first().copied().unwrap_or(0.0),
                median_us: median(&us),
                max_us: us.last().copied().unwrap_or(0.0),
            }
        })
        .collect()
}

#[derive(Serialize)]
pub struct SmokeResult {
    pub node: u32,
    pub model: bool,
    pub repeat: u32,
    pub steps: Vec<StepStats>,
    /// Steps not run, and why.
    pub skipped: Vec<&'static str>,
    /// PMC deltas over all passes; null where the backend counts nothing.
    pub pmc: Option<Vec<crate::counters::PmcDelta>>,
    pub ok: bool,
}

#[derive(Serialize)]
pub struct JsonReport<'a> {
    pub backend: &'a crate::Backend,
    pub smoke: &'a SmokeResult,
}

pub fn render_text(r: &SmokeResult) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "smoke test on node {}{}: {} pass{}, latency per step",
        r.node,
        if r.model { " (software model)" } else { "" },
        r.repeat,
        if r.repeat == 1 { "" } else { "es" }
    );
    let _ = writeln!(o, "  {:<54} {:>10} {:>10} {:>10}", "step", "min µs", "median µs", "max µs");
    for s in &r.steps {
        let _ = writeln!(o, "  {:<54} {:>10.1} {:>10.1} {:>10.1}", s.name, s.min_us, s.median_us, s.max_us);
    }
    for s in &r.skipped {
        let _ = writeln!(o, "  {s}");
    }
    match &r.pmc {
        Some(p) => {
            let _ = writeln!(o, "PMC counters over the smoke test's {} pass(es) (trace deltas):", r.repeat);
            for d in p {
                let _ = writeln!(o, "  {:<5} {:>3} {:<26} {}", d.block, d.id, d.name, d.delta);
            }
        }
        None => o.push_str("PMC: no counters the backend counts on this GPU (the runtime programs them)\n"),
    }
    o.push_str("smoke: OK\n");
    o
}

/// Run the smoke test `repeat` times on the first GPU; Err describes the first thing that went
/// wrong.
pub fn run(repeat: u32) -> Result<SmokeResult, String> {
    let s = hsaKmtOpenKFD();
    if s != HSAKMT_STATUS_SUCCESS && s != HSAKMT_STATUS_KERNEL_ALREADY_OPENED {
        return Err(format!("hsaKmtOpenKFD failed: {}", hsakmt_core::Status(s)));
    }
    let r = run_open(repeat);
    hsaKmtReleaseSystemProperties();
    hsaKmtCloseKFD();
    r
}

fn run_open(repeat: u32) -> Result<SmokeResult, String> {
    let mut sys: HsaSystemProperties = zeroed();
    // SAFETY: valid out-pointer.
    check("hsaKmtAcquireSystemProperties", unsafe { hsaKmtAcquireSystemProperties(&mut sys) })?;
    let mut gpu = None;
    for n in 0..sys.NumNodes {
        let mut p: HsaNodeProperties = zeroed();
        // SAFETY: valid out-pointer.
        check("hsaKmtGetNodeProperties", unsafe { hsaKmtGetNodeProperties(n, &mut p) })?;
        if p.KFDGpuID != 0 {
            gpu = Some(n);
            break;
        }
    }
    let node = gpu.ok_or("no GPU node")?;
    let mut model = false;
    // SAFETY: valid out-pointer.
    check("hsaKmtModelEnabled", unsafe { hsaKmtModelEnabled(&mut model) })?;

    let mut props: HsaNodeProperties = zeroed();
    // SAFETY: valid out-pointer.
    check("hsaKmtGetNodeProperties", unsafe { hsaKmtGetNodeProperties(node, &mut props) })?;
    let profile = crate::counters::Profile::start(node, &props)?;
    let mut tm = Timings::default();
    for _ in 0..repeat {
        pass(node, model, &mut tm)?;
    }
    let pmc = match profile {
        Some(p) => Some(p.finish()?),
        None => None,
    };
    let skipped = if model { vec![] } else { vec!["AQL fill kernel: skipped (needs the model's built-in kernels)"] };
    Ok(SmokeResult { node, model, repeat, steps: stats(&tm), skipped, pmc, ok: true })
}

/// One pass over every step.
fn pass(node: u32, model: bool, tm: &mut Timings) -> Result<(), String> {
    let t = Instant::now();
    let src = Buffer::new(node, 64 << 10)?;
    let dst = Buffer::new(node, 64 << 10)?;
    let ev = Event::new(node)?;
    tm.add("allocate + map 2 × 64 KiB, create event", t.elapsed());
    sdma_steps(node, &src, &dst, &ev, tm)?;
    pm4_steps(node, &dst, &ev, tm)?;
    if model {
        crate::smoke_aql::aql_steps(node, &dst, &ev, tm)?;
    }
    Ok(())
}

fn sdma_steps(node: u32, src: &Buffer, dst: &Buffer, ev: &Event, tm: &mut Timings) -> Result<(), String> {
    let ring = Buffer::new(node, 4096)?;
    let t = Instant::now();
    let q = Queue::new(node, HSA_QUEUE_SDMA, &ring, zeroed())?;
    tm.add("create SDMA queue", t.elapsed());
    let mut r = q.cmd_ring(CmdFormat::Sdma, &ring)?;
    let n = 16 << 10; // bytes
    let t = Instant::now();
    let w = |r: &mut CmdRing<DoorbellPtr>, p: &sdma::Repr| r.write_sdma(p).map_err(|e| format!("SDMA packet: {e:?}"));
    w(&mut r, &sdma::Repr::constant_fill(src.addr(), 0x5a5a_0001, n))?;
    w(&mut r, &sdma::Repr::copy_linear(src.addr(), dst.addr(), n))?;
    w(&mut r, &sdma::Repr::fence(ev.mailbox(), ev.id()))?;
    w(&mut r, &sdma::Repr::Trap { int_context: ev.id() })?;
    r.commit();
    ev.wait()?;
    tm.add("SDMA fill 16 KiB + copy + fence + trap → event", t.elapsed());
    let words = dst.u32s(n as usize / 4);
    if let Some(i) = words.iter().position(|&v| v != 0x5a5a_0001) {
        return Err(format!("SDMA copy: dst word {i} is {:#x}, expected 0x5a5a0001", words[i]));
    }
    Ok(())
}

fn pm4_steps(node: u32, dst: &Buffer, ev: &Event, tm: &mut Timings) -> Result<(), String> {
    let ring = Buffer::new(node, 4096)?;
    let t = Instant::now();
    let q = Queue::new(node, HSA_QUEUE_COMPUTE, &ring, zeroed())?;
    tm.add("create PM4 compute queue", t.elapsed());
    let mut r = q.cmd_ring(CmdFormat::Pm4, &ring)?;
    let at = dst.addr() + (32 << 10);
    let data = [0x1234_5678u32, 0x9abc_def0];
    let t = Instant::now();
    let w = |r: &mut CmdRing<DoorbellPtr>, c: pm4::Command| r.write_pm4(&pm4::Repr::compute(c)).map_err(|e| format!("PM4 packet: {e:?}"));
    w(&mut r, pm4::Command::WriteData(pm4::WriteData::memory(at, (&data).into())))?;
    w(&mut r, pm4::Command::ReleaseMem(pm4::ReleaseMem::eop(ev.mailbox(), u64::from(ev.id())).interrupt(2, ev.id())))?;
    r.commit();
    ev.wait()?;
    tm.add("PM4 WRITE_DATA + RELEASE_MEM interrupt → event", t.elapsed());
    let got = [dst.u32_at((32 << 10) / 4), dst.u32_at((32 << 10) / 4 + 1)];
    if got != data {
        return Err(format!("PM4 WRITE_DATA: read back {got:x?}, expected {data:x?}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[1.0, 2.0, 9.0]), 2.0);
        assert_eq!(median(&[1.0, 2.0, 4.0, 9.0]), 3.0);
        assert_eq!(median(&[5.0]), 5.0);
    }
}
