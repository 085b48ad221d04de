//! The model GPU's engines driven directly through `Model::engine_run`: SDMA, PM4 and AQL
//! packets (emitted with the core Reprs) have their effect in GPU memory, raise events through
//! the interrupt path, block and resume, wrap around the ring, fault into memory-exception
//! events, stop on malformed packets, and respect the budget and the IB bounds.

mod support;

use hsakmt_core::abi::kfd::*;
use hsakmt_core::packet::aql::{self, Barrier, Body, KernelDispatch, Pm4Ib, SignalRepr};
use hsakmt_core::packet::model_kernel::{dispatch_regs as regs, Args, CopyArgs, Descriptor, FillArgs, KernelId};
use hsakmt_core::packet::pm4::{self, Command, CompareFunction, IndirectBuffer, ReleaseMem, SetShReg, WaitRegMem, WriteData};
use hsakmt_core::packet::sdma;
use hsakmt_model::engine::{EngineKind, QueueError, RingDesc, RingProgress, RunEnd, MAX_IB_DWORDS};
use hsakmt_model::events::{event_data, UNSIGNALED_SLOT};
use hsakmt_model::{GpuFaultKind, Model, ModelConfig};
use std::os::fd::OwnedFd;
use support::*;
use zerocopy::FromZeros;

const GTT: u32 = KFD_IOC_ALLOC_MEM_FLAGS_GTT as u32;
const RW: u32 = (KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE | KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE) as u32;
const SIGNAL: u32 = KFD_IOC_EVENT_SIGNAL as u32;
const MEMORY: u32 = KFD_IOC_EVENT_MEMORY as u32;
const COMPLETE: u32 = KFD_IOC_WAIT_RESULT_COMPLETE as u32;
const TIMEOUT: u32 = KFD_IOC_WAIT_RESULT_TIMEOUT as u32;

/// Layout of the main 1 MiB BO.
const BASE: u64 = 0x7000_0000_0000;
const RING: u64 = BASE;
const RPTR: u64 = BASE + 0x1000;
const DESC: u64 = BASE + 0x2000; // FILL; COPY at +0x100, NOP at +0x200
const KARG: u64 = BASE + 0x3000;
const SIG: u64 = BASE + 0x4000;
const IB: u64 = BASE + 0x5000;
const DATA: u64 = BASE + 0x10000;
/// The event page BO (32 KiB, GTT).
const EVP: u64 = BASE + 0x10_0000;
/// A read-only BO.
const RO: u64 = BASE + 0x20_0000;
/// Nothing is mapped here.
const HOLE: u64 = BASE + 0x400_0000;

struct Fx {
    m: Model,
    g: u32,
    evp: u64,
    _renders: Vec<OwnedFd>,
}

fn setup() -> Fx {
    setup_on("mi210")
}

/// The fixture on a catalogue system's first GPU (mi210: gfx90a, mi25: gfx900, rx7900xtx:
/// gfx1100, mi300x: gfx942).
fn setup_on(system: &str) -> Fx {
    let m = Model::new(ModelConfig::catalogue(system)).unwrap();
    let n = m.gpus().len();
    let (_, renders) = acquire(&m, n);
    let g = m.gpus()[0].gpu_id;
    alloc_map(&m, g, BASE, 1 << 20, GTT | RW);
    let evp = alloc_map(&m, g, EVP, 32 << 10, GTT | RW);
    alloc_map(&m, g, RO, 4096, GTT | KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE as u32);
    let f = Fx { m, g, evp, _renders: renders };
    f.put(DESC, &Descriptor::new(KernelId::Fill).to_bytes());
    f.put(DESC + 0x100, &Descriptor::new(KernelId::Copy).to_bytes());
    f.put(DESC + 0x200, &Descriptor::new(KernelId::Nop).to_bytes());
    f
}

impl Fx {
    fn put(&self, va: u64, b: &[u8]) {
        self.m.gpu_write(self.g, va, b).unwrap();
    }
    fn get(&self, va: u64, n: usize) -> Vec<u8> {
        let mut b = vec![0; n];
        self.m.gpu_read(self.g, va, &mut b).unwrap();
        b
    }
    fn u32(&self, va: u64) -> u32 {
        u32::from_le_bytes(self.get(va, 4).try_into().unwrap())
    }
    fn u64(&self, va: u64) -> u64 {
        u64::from_le_bytes(self.get(va, 8).try_into().unwrap())
    }
    /// A signal event on the BO event page: (id, GPU VA of its slot).
    fn signal_event(&self) -> (u32, u64) {
        let mut a = kfd_ioctl_create_event_args::new_zeroed();
        a.event_type = SIGNAL;
        a.auto_reset = 1;
        if self.m.event_slot(1).is_none() {
            a.event_page_offset = self.evp;
        }
        raw(&self.m, AMDKFD_IOC_CREATE_EVENT, &mut a).unwrap();
        (a.event_id, EVP + 8 * u64::from(a.event_id))
    }
    fn memory_event(&self) -> u32 {
        let mut a = kfd_ioctl_create_event_args::new_zeroed();
        a.event_type = MEMORY;
        raw(&self.m, AMDKFD_IOC_CREATE_EVENT, &mut a).unwrap();
        a.event_id
    }
    /// WAIT_EVENTS with timeout 0 on one event: its wait result and data.
    fn poll(&self, id: u32) -> (u32, kfd_event_data) {
        let mut d = [event_data(id, 0)];
        let mut a =
            kfd_ioctl_wait_events_args { events_ptr: d.as_mut_ptr() as u64, num_events: 1, wait_for_all: 1, timeout: 0, wait_result: 99 };
        let _ = raw(&self.m, AMDKFD_IOC_WAIT_EVENTS, &mut a);
        (a.wait_result, d[0])
    }
}

/// A ring the test writes, wrapping at its end; `w` in the ring's units.
struct Ring {
    desc: RingDesc,
    w: u64,
}

impl Ring {
    fn new(kind: EngineKind, va: u64, bytes: u64, rptr: u64) -> Ring {
        Ring {
            desc: RingDesc {
                gpu_id: 0,
                queue_id: 1,
                kind,
                ring_va: va,
                ring_bytes: bytes,
                rptr_va: rptr,
                wptr_va: 0,
                ctx_va: 0,
                doorbell: 0,
            },
            w: 0,
        }
    }
    fn unit(&self) -> u64 {
        match self.desc.kind {
            EngineKind::Aql => 64,
            EngineKind::Pm4 => 4,
            EngineKind::Sdma => 1,
        }
    }
    fn push(&mut self, f: &Fx, bytes: &[u8]) {
        self.desc.gpu_id = f.g;
        let mut pos = self.w * self.unit();
        for chunk in bytes.chunks(4) {
            f.put(self.desc.ring_va + pos % self.desc.ring_bytes, chunk);
            pos += chunk.len() as u64;
        }
        self.w += bytes.len() as u64 / self.unit();
    }
    fn run(&self, f: &Fx, p: &mut RingProgress, budget: u32) -> RunEnd {
        f.m.engine_run(&self.desc, p, self.w, budget)
    }
}

fn pm4b(c: Command<'_>) -> Vec<u8> {
    let r = pm4::Repr::compute(c);
    let mut b = vec![0u8; r.buffer_len()];
    r.emit(&mut pm4::Packet::new_unchecked(&mut b[..])).unwrap();
    b
}

fn sdmab(r: sdma::Repr<'_>) -> Vec<u8> {
    let mut b = vec![0u8; r.buffer_len()];
    r.emit(&mut sdma::Packet::new_unchecked(&mut b[..])).unwrap();
    b
}

fn aqlb(body: Body) -> Vec<u8> {
    aql::Repr::new(body).to_bytes().to_vec()
}

fn signal(f: &Fx, va: u64, s: SignalRepr) {
    let mut b = [0u8; 64];
    s.emit(&mut aql::Signal::new_unchecked(&mut b[..]));
    f.put(va, &b);
}

fn words(f: &Fx, va: u64, n: usize) -> Vec<u32> {
    f.get(va, 4 * n).chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

#[test]
fn sdma_fill_copy_write_fence_trap_atomic() {
    let f = setup();
    let (ev, slot) = f.signal_event();
    let mut r = Ring::new(EngineKind::Sdma, RING, 4096, RPTR);
    r.push(&f, &sdmab(sdma::Repr::constant_fill(DATA, 0xa5a5_0001, 64)));
    r.push(&f, &sdmab(sdma::Repr::copy_linear(DATA, DATA + 0x100, 64)));
    r.push(&f, &sdmab(sdma::Repr::WriteUntiled { dst: DATA + 0x200, data: (&[7u32, 8, 9]).into(), swap: 0 }));
    f.put(DATA + 0x300, &40u64.to_le_bytes());
    let add = sdma::Atomic { addr: DATA + 0x300, op: sdma::ATOMIC_ADD64, src: 2, cmp: 0, loop_: false, loop_interval: 0, tmz: false };
    r.push(&f, &sdmab(sdma::Repr::Atomic(add)));
    r.push(&f, &sdmab(sdma::Repr::Timestamp(sdma::Timestamp::GetGlobal(DATA + 0x308))));
    // kfdtest's event pattern: FENCE the event id into its slot, then TRAP with the id.
    r.push(&f, &sdmab(sdma::Repr::fence(slot, ev)));
    r.push(&f, &sdmab(sdma::Repr::Trap { int_context: ev }));
    assert_eq!(f.poll(ev).0, TIMEOUT);
    let mut p = RingProgress::default();
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Idle);
    assert_eq!(p.read, r.w);
    assert_eq!(f.u64(RPTR), r.w, "SDMA rptr: 64-bit bytes");
    assert_eq!(words(&f, DATA + 0x100, 16), vec![0xa5a5_0001; 16]);
    assert_eq!(words(&f, DATA + 0x140, 1), vec![0], "copy stops at its count");
    assert_eq!(words(&f, DATA + 0x200, 3), vec![7, 8, 9]);
    assert_eq!(f.u64(DATA + 0x300), 42);
    assert_ne!(f.u64(DATA + 0x308), 0, "timestamp written");
    assert_eq!(f.poll(ev).0, COMPLETE);
    assert_eq!(f.m.event_slot(ev), Some(UNSIGNALED_SLOT), "the interrupt acknowledged the slot");
    // A trap whose slot was never written sets nothing (kfd_signal_event_interrupt).
    r.push(&f, &sdmab(sdma::Repr::Trap { int_context: ev }));
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Idle);
    assert_eq!(f.poll(ev).0, TIMEOUT);
}

#[test]
fn pm4_write_data_release_mem_dispatch_and_copy_data() {
    let f = setup();
    let (ev, slot) = f.signal_event();
    let mut r = Ring::new(EngineKind::Pm4, RING, 4096, RPTR);
    r.push(&f, &pm4b(WriteData::memory(DATA, (&[1u32, 2, 3]).into()).into()));
    // DISPATCH_DIRECT of the FILL model kernel: program, kernarg and workgroup in SH registers.
    f.put(KARG, &Args::Fill(FillArgs { dst: DATA + 0x100, value: 0x1234_5678, count: 8 }).to_bytes());
    let (lo, hi) = regs::pgm(DESC);
    r.push(&f, &pm4b(Command::SetShReg(SetShReg { reg_offset: regs::COMPUTE_NUM_THREAD_X, values: (&[64u32, 1, 1]).into() })));
    r.push(&f, &pm4b(Command::SetShReg(SetShReg { reg_offset: regs::COMPUTE_PGM_LO, values: (&[lo, hi]).into() })));
    r.push(
        &f,
        &pm4b(Command::SetShReg(SetShReg { reg_offset: regs::COMPUTE_USER_DATA_0, values: (&[KARG as u32, (KARG >> 32) as u32]).into() })),
    );
    r.push(&f, &pm4b(Command::DispatchDirect(pm4::DispatchDirect { dim: [1, 1, 1], dispatch_initiator: 1 })));
    let cd = pm4::CopyData {
        src_sel: 5,
        dst_sel: 5,
        src_cache_policy: 0,
        count_sel: true,
        wr_confirm: true,
        dst_cache_policy: 0,
        engine_sel: 0,
        src: 0x1122_3344_5566_7788,
        dst: DATA + 0x200,
    };
    r.push(&f, &pm4b(Command::CopyData(cd)));
    // kfdtest's PM4ReleaseMemoryPacket(.., HWData2, EventId): 32-bit data to the slot,
    // interrupt after write confirm, int_ctxid = the event id.
    let rm = ReleaseMem { data_sel: 1, ..ReleaseMem::eop(slot, u64::from(ev)).interrupt(2, ev) };
    r.push(&f, &pm4b(Command::ReleaseMem(rm)));
    let mut p = RingProgress::default();
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Idle);
    assert_eq!(words(&f, DATA, 3), vec![1, 2, 3]);
    assert_eq!(words(&f, DATA + 0x100, 9), [vec![0x1234_5678; 8], vec![0]].concat());
    assert_eq!(f.u64(DATA + 0x200), 0x1122_3344_5566_7788);
    assert_eq!(f.u32(RPTR) as u64, r.w, "PM4 rptr: 32-bit dwords");
    assert_eq!(f.poll(ev).0, COMPLETE);
}

#[test]
fn pm4_wait_reg_mem_in_an_ib_blocks_then_resumes() {
    let f = setup();
    let mut ib = Vec::new();
    ib.extend(pm4b(Command::WaitRegMem(WaitRegMem::memory(DATA, CompareFunction::Equal, 5, 0xff))));
    ib.extend(pm4b(WriteData::memory(DATA + 8, (&[0xabcdu32]).into()).into()));
    f.put(IB, &ib);
    let mut r = Ring::new(EngineKind::Pm4, RING, 4096, RPTR);
    r.push(&f, &pm4b(Command::IndirectBuffer(IndirectBuffer::new(IB, (ib.len() / 4) as u32))));
    let mut p = RingProgress::default();
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Blocked);
    assert_eq!(p.read, 0, "the IB packet is not consumed while its IB waits");
    assert_eq!(f.u32(DATA + 8), 0);
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Blocked);
    f.put(DATA, &0x105u32.to_le_bytes()); // masked with 0xff: 5
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Idle);
    assert_eq!(f.u32(DATA + 8), 0xabcd);
    assert_eq!((p.read, f.u32(RPTR)), (4, 4));
}

#[test]
fn aql_barrier_fill_copy_and_completion_signal_with_mailbox() {
    let f = setup();
    let (ev, slot) = f.signal_event();
    let dep = SIG;
    let done = SIG + 64;
    signal(&f, dep, SignalRepr::user(1));
    signal(&f, done, SignalRepr::user(1).event(slot, ev));
    f.put(KARG, &Args::Fill(FillArgs { dst: DATA, value: 0xfeed_f00d, count: 32 }).to_bytes());
    f.put(KARG + 0x40, &Args::Copy(CopyArgs { dst: DATA + 0x1003, src: DATA, bytes: 128 }).to_bytes());
    let mut r = Ring::new(EngineKind::Aql, RING, 4096, RPTR);
    r.push(&f, &aqlb(Body::BarrierAnd(Barrier::new([0, dep, 0, 0, 0]))));
    let fill = KernelDispatch { kernarg_address: KARG, completion_signal: done, ..KernelDispatch::new(DESC, 64, 64) };
    r.push(&f, &aqlb(Body::KernelDispatch(fill)));
    let copy = KernelDispatch { kernarg_address: KARG + 0x40, ..KernelDispatch::new(DESC + 0x100, 1, 1) };
    r.push(&f, &aqlb(Body::KernelDispatch(copy)));
    let mut p = RingProgress::default();
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Blocked);
    assert_eq!((p.read, f.u64(RPTR)), (0, 0));
    assert_eq!(f.u32(DATA), 0, "nothing ran past the barrier");
    f.put(dep + 8, &0i64.to_le_bytes());
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Idle);
    assert_eq!(f.u64(RPTR), 3, "read_dispatch_id");
    assert_eq!(words(&f, DATA, 33), [vec![0xfeed_f00d; 32], vec![0]].concat());
    assert_eq!(f.get(DATA + 0x1003, 128), f.get(DATA, 128));
    let s = f.get(done, 64);
    let s = aql::SignalRepr::parse(&aql::Signal::new_unchecked(&s[..])).unwrap();
    assert_eq!(s.value, 0, "completion decrements the signal");
    assert!(s.start_ts != 0 && s.start_ts <= s.end_ts, "{} {}", s.start_ts, s.end_ts);
    assert_eq!(f.poll(ev).0, COMPLETE, "the mailbox write + interrupt set the event");
    for i in 0..3 {
        assert_eq!(f.get(RING + 64 * i, 2), vec![1, 0], "consumed headers are INVALID");
    }
    // An INVALID header (ROCr initialises every slot so) is a slot not yet published:
    // Blocked, nothing consumed.
    f.put(RING + 64 * 3, &[1, 0]);
    r.w += 1;
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Blocked);
    assert_eq!(p.read, 3);
}

#[test]
fn aql_pm4_ib_and_barrier_or() {
    let f = setup();
    let ib = pm4b(WriteData::memory(DATA, (&[77u32]).into()).into());
    f.put(IB, &ib);
    signal(&f, SIG, SignalRepr::user(1));
    signal(&f, SIG + 64, SignalRepr::user(0));
    signal(&f, SIG + 128, SignalRepr::user(2));
    let mut r = Ring::new(EngineKind::Aql, RING, 4096, RPTR);
    r.push(&f, &aqlb(Body::BarrierOr(Barrier::new([SIG, SIG + 64, 0, 0, 0]))));
    r.push(&f, &aqlb(Body::Pm4Ib(Pm4Ib::new(IB, (ib.len() / 4) as u32, SIG + 128))));
    let mut p = RingProgress::default();
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Idle);
    assert_eq!(f.u32(DATA), 77);
    assert_eq!(f.u64(SIG + 128 + 8), 1);
    assert_eq!(f.u64(RPTR), 2);
}

#[test]
fn wraparound_on_every_engine() {
    let f = setup();
    // SDMA: 256-byte ring, 36-byte packets straddle the end.
    let mut r = Ring::new(EngineKind::Sdma, RING, 256, RPTR);
    let mut p = RingProgress::default();
    for i in 0..40u32 {
        r.push(
            &f,
            &sdmab(sdma::Repr::WriteUntiled {
                dst: DATA + 0x100 * u64::from(i % 4),
                data: (&[i, i + 1, i + 2, i + 3, i + 4]).into(),
                swap: 0,
            }),
        );
        if i % 3 == 2 {
            assert_eq!(r.run(&f, &mut p, 100), RunEnd::Idle);
        }
    }
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Idle);
    assert_eq!(p.read, 40 * 36);
    assert_eq!(words(&f, DATA + 0x300, 5), vec![39, 40, 41, 42, 43]);
    // PM4: 128-byte ring (32 dwords), 5-dword WRITE_DATA; rptr wraps at the ring size.
    let mut r = Ring::new(EngineKind::Pm4, RING + 0x400, 128, RPTR + 64);
    let mut p = RingProgress::default();
    for i in 0..20u32 {
        r.push(&f, &pm4b(WriteData::memory(DATA + 0x800, (&[i]).into()).into()));
        assert_eq!(r.run(&f, &mut p, 100), RunEnd::Idle);
        assert_eq!(f.u32(DATA + 0x800), i);
    }
    assert_eq!(p.read, 100);
    assert_eq!(f.u32(RPTR + 64), 100 % 32);
    // AQL: 4-slot ring.
    let mut r = Ring::new(EngineKind::Aql, RING + 0x800, 256, RPTR + 128);
    let mut p = RingProgress::default();
    for i in 0..10u64 {
        f.put(KARG + 0x80 * i, &Args::Fill(FillArgs { dst: DATA + 0xc00, value: i as u32, count: 1 }).to_bytes());
        let k = KernelDispatch { kernarg_address: KARG + 0x80 * i, ..KernelDispatch::new(DESC, 1, 1) };
        r.push(&f, &aqlb(Body::KernelDispatch(k)));
        assert_eq!(r.run(&f, &mut p, 100), RunEnd::Idle);
        assert_eq!(f.u32(DATA + 0xc00), i as u32);
    }
    assert_eq!(f.u64(RPTR + 128), 10);
}

fn memory_exception(d: &kfd_event_data) -> kfd_hsa_memory_exception_data {
    // SAFETY: every bit pattern is a valid kfd_hsa_memory_exception_data.
    unsafe { d.__anon_union_1.memory_exception_data }
}

#[test]
fn faults_raise_memory_exceptions_and_stop_only_that_queue() {
    let f = setup();
    let mev = f.memory_event();
    let mut bad = Ring::new(EngineKind::Sdma, RING, 4096, RPTR);
    bad.push(&f, &sdmab(sdma::Repr::fence(HOLE + 0x1234, 1)));
    bad.push(&f, &sdmab(sdma::Repr::fence(DATA, 1)));
    let mut p = RingProgress::default();
    assert_eq!(bad.run(&f, &mut p, 100), RunEnd::Stopped);
    match &p.error {
        Some(QueueError::Fault(e)) => assert_eq!((e.va, e.write, e.kind), (HOLE + 0x1234, true, GpuFaultKind::NotMapped)),
        e => panic!("{e:?}"),
    }
    assert_eq!(p.read, 0, "the faulting packet is not consumed");
    assert_eq!(f.u32(DATA), 0, "nothing after the fault ran");
    let (res, d) = f.poll(mev);
    assert_eq!(res, COMPLETE);
    let x = memory_exception(&d);
    assert_eq!((x.va, x.gpu_id, x.failure.NotPresent, x.failure.ReadOnly), (HOLE + 0x1000, f.g, 1, 0), "page-aligned address");
    // The queue stays stopped; another queue still runs.
    bad.push(&f, &sdmab(sdma::Repr::Nop { count: 0 }));
    assert_eq!(bad.run(&f, &mut p, 100), RunEnd::Stopped);
    let mut good = Ring::new(EngineKind::Pm4, RING + 0x2000, 4096, RPTR + 64);
    good.push(&f, &pm4b(WriteData::memory(DATA + 4, (&[9u32]).into()).into()));
    let mut q = RingProgress::default();
    assert_eq!(good.run(&f, &mut q, 100), RunEnd::Idle);
    assert_eq!(f.u32(DATA + 4), 9);
    // A write to a read-only page.
    let mut ro = Ring::new(EngineKind::Pm4, RING + 0x3000, 4096, 0);
    ro.push(&f, &pm4b(WriteData::memory(RO + 8, (&[1u32]).into()).into()));
    let mut q = RingProgress::default();
    assert_eq!(ro.run(&f, &mut q, 100), RunEnd::Stopped);
    let x = memory_exception(&f.poll(mev).1);
    assert_eq!((x.va, x.failure.NotPresent, x.failure.ReadOnly), (RO, 0, 1));
    // An AQL kernel object that is not mapped faults like a real code object, and so does a
    // ring that is not mapped.
    let mut a = Ring::new(EngineKind::Aql, RING + 0x4000, 4096, 0);
    a.push(&f, &aqlb(Body::KernelDispatch(KernelDispatch::new(HOLE + 0x2000, 1, 1))));
    let mut q = RingProgress::default();
    assert_eq!(a.run(&f, &mut q, 100), RunEnd::Stopped);
    assert_eq!(memory_exception(&f.poll(mev).1).va, HOLE + 0x2000);
    let mut unmapped = Ring::new(EngineKind::Pm4, HOLE, 4096, 0);
    unmapped.w = 4;
    let mut q = RingProgress::default();
    assert_eq!(unmapped.run(&f, &mut q, 100), RunEnd::Stopped);
    assert!(matches!(q.error, Some(QueueError::Fault(e)) if e.va == HOLE && !e.write));
}

#[test]
fn malformed_packets_stop_the_queue() {
    let f = setup();
    let cases: Vec<(EngineKind, Vec<u8>)> = vec![
        (EngineKind::Pm4, pm4::header(0xee, 0, true, false).to_le_bytes().repeat(2)),
        (EngineKind::Pm4, 0x1234_5678u32.to_le_bytes().to_vec()), // not type 3
        (EngineKind::Sdma, 0x7fu32.to_le_bytes().to_vec()),
        (EngineKind::Aql, {
            let mut b = [0u8; 64];
            b[0] = 7; // no such packet type
            b.to_vec()
        }),
        (EngineKind::Aql, aqlb(Body::KernelDispatch(KernelDispatch::new(DESC + 0x200, 0, 1)))), // empty grid
        (EngineKind::Aql, aqlb(Body::KernelDispatch(KernelDispatch::new(KARG, 1, 1)))),         // not a descriptor
        (
            EngineKind::Aql,
            aqlb(Body::AgentDispatch(aql::AgentDispatch { agent_type: 1, return_address: 0, arg: [0; 4], completion_signal: 0 })),
        ),
    ];
    for (i, (kind, bytes)) in cases.into_iter().enumerate() {
        let mut r = Ring::new(kind, RING + 0x1000 * i as u64 + 0x8000, 4096, 0);
        r.push(&f, &bytes);
        let mut p = RingProgress::default();
        assert_eq!(r.run(&f, &mut p, 100), RunEnd::Stopped, "case {i}");
        assert!(matches!(p.error, Some(QueueError::BadPacket { at: 0, .. })), "case {i}: {:?}", p.error);
        assert_eq!(r.run(&f, &mut p, 100), RunEnd::Stopped);
    }
    // A NOP kernel with a valid grid runs.
    let mut r = Ring::new(EngineKind::Aql, RING, 4096, 0);
    r.push(&f, &aqlb(Body::KernelDispatch(KernelDispatch::new(DESC + 0x200, 1, 1))));
    assert_eq!(r.run(&f, &mut RingProgress::default(), 100), RunEnd::Idle);
}

#[test]
fn self_referencing_indirect_buffers_terminate() {
    let f = setup();
    // A chained IB that jumps to itself: runs until the dword bound, then stops.
    let chain = pm4b(Command::IndirectBuffer(IndirectBuffer { chain: true, ..IndirectBuffer::new(IB, 4) }));
    f.put(IB, &chain);
    let mut r = Ring::new(EngineKind::Pm4, RING, 4096, 0);
    r.push(&f, &pm4b(Command::IndirectBuffer(IndirectBuffer::new(IB, 4))));
    let mut p = RingProgress::default();
    let mut calls = 0;
    let end = loop {
        calls += 1;
        match r.run(&f, &mut p, 50_000) {
            RunEnd::Budget => continue,
            e => break e,
        }
    };
    assert_eq!(end, RunEnd::Stopped);
    assert!(matches!(p.error, Some(QueueError::BadPacket { .. })));
    assert_eq!(calls as u64, (MAX_IB_DWORDS / 4).div_ceil(50_000), "bounded by MAX_IB_DWORDS");
    // A nested IB that calls itself: stops at the nesting bound.
    let nest = pm4b(Command::IndirectBuffer(IndirectBuffer::new(IB + 0x100, 4)));
    f.put(IB + 0x100, &nest);
    let mut r = Ring::new(EngineKind::Pm4, RING, 4096, 0);
    r.push(&f, &pm4b(Command::IndirectBuffer(IndirectBuffer::new(IB + 0x100, 4))));
    let mut p = RingProgress::default();
    assert_eq!(r.run(&f, &mut p, u32::MAX), RunEnd::Stopped);
}

#[test]
fn budget_is_respected_and_resumes() {
    let f = setup();
    let mut r = Ring::new(EngineKind::Pm4, RING, 4096, RPTR);
    for i in 0..10u32 {
        r.push(&f, &pm4b(WriteData::memory(DATA + 4 * u64::from(i), (&[i + 1]).into()).into()));
    }
    let mut p = RingProgress::default();
    assert_eq!(r.run(&f, &mut p, 3), RunEnd::Budget);
    assert_eq!(p.read, 15);
    assert_eq!(f.u32(RPTR), 15);
    assert_eq!(words(&f, DATA, 4), vec![1, 2, 3, 0]);
    assert_eq!(r.run(&f, &mut p, 0), RunEnd::Budget);
    assert_eq!(r.run(&f, &mut p, 7), RunEnd::Idle);
    assert_eq!(words(&f, DATA, 10), (1..=10).collect::<Vec<_>>());
    // Packets inside an IB count too, and the IB resumes where the budget stopped it.
    let mut ib = Vec::new();
    for i in 0..4u32 {
        ib.extend(pm4b(WriteData::memory(DATA + 0x100 + 4 * u64::from(i), (&[i + 100]).into()).into()));
    }
    f.put(IB, &ib);
    r.push(&f, &pm4b(Command::IndirectBuffer(IndirectBuffer::new(IB, (ib.len() / 4) as u32))));
    assert_eq!(r.run(&f, &mut p, 3), RunEnd::Budget);
    assert_eq!(words(&f, DATA + 0x100, 4), vec![100, 101, 0, 0]);
    assert_eq!(r.run(&f, &mut p, 3), RunEnd::Idle);
    assert_eq!(words(&f, DATA + 0x100, 4), vec![100, 101, 102, 103]);
}

/// xorshift64*: deterministic pseudo-random numbers for the ring fuzz loop.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// A dword that is often meaningful: a header of the engine, an address in or out of the
    /// mapping, a small count, or noise.
    fn dword(&mut self, kind: EngineKind) -> u32 {
        let r = self.next();
        match r % 8 {
            0 => match kind {
                EngineKind::Pm4 => {
                    let ops = [0x10u8, 0x15, 0x37, 0x3c, 0x3f, 0x40, 0x46, 0x49, 0x58, 0x76];
                    pm4::header(ops[(r >> 8) as usize % ops.len()], (r >> 16) as u32 % 8, true, false)
                }
                EngineKind::Sdma => [0u32, 1, 2, 5, 6, 8, 10, 11, 13][(r >> 8) as usize % 9] | ((r >> 20) as u32 & 0x3) << 8,
                EngineKind::Aql => 2 | ((r >> 8) as u32 % 6) | 1 << 16,
            },
            1 | 2 => (BASE as u32).wrapping_add((r >> 32) as u32 % 0x12_0000) & !3,
            3 => (BASE >> 32) as u32,
            4 => (r >> 40) as u32 % 64,
            _ => (r >> 32) as u32,
        }
    }
}

/// Random ring contents over the test's mappings, for every engine kind: nothing may panic or
/// hang, and every call ends in a defined way. Shared with fuzz/fuzz_targets/model_engines.rs
/// in spirit (that target draws the same shapes from the fuzzer's bytes).
#[test]
fn random_rings_never_crash_or_hang() {
    let f = setup();
    f.put(SIG, &SignalRepr::user(0).event(EVP + 8, 1).emit_bytes());
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let kinds = [EngineKind::Aql, EngineKind::Pm4, EngineKind::Sdma];
    for it in 0..3000u32 {
        let kind = kinds[it as usize % 3];
        let ring_bytes = 256u64 << (rng.next() % 4);
        let ring_va = if rng.next().is_multiple_of(16) { HOLE } else { RING };
        let n = (rng.next() % (ring_bytes / 4)) as usize;
        let ring_words: Vec<u32> = (0..n).map(|_| rng.dword(kind)).collect();
        let bytes: Vec<u8> = ring_words.iter().flat_map(|w| w.to_le_bytes()).collect();
        if ring_va == RING {
            f.put(RING, &bytes);
        }
        // Indirect buffers and kernargs see noise too.
        let ib_words: Vec<u8> = (0..64).flat_map(|_| rng.dword(EngineKind::Pm4).to_le_bytes()).collect();
        f.put(IB, &ib_words);
        let desc = RingDesc { gpu_id: f.g, queue_id: 1, kind, ring_va, ring_bytes, rptr_va: RPTR, wptr_va: 0, ctx_va: 0, doorbell: 0 };
        let units = match kind {
            EngineKind::Aql => 64,
            EngineKind::Pm4 => 4,
            EngineKind::Sdma => 1,
        };
        let write = rng.next() % (2 * bytes.len() as u64 / units + 2);
        let mut p = RingProgress { read: rng.next() % 4 * (4 / units.min(4)), ..RingProgress::default() };
        for _ in 0..4 {
            match f.m.engine_run(&desc, &mut p, write, 64) {
                RunEnd::Idle | RunEnd::Blocked | RunEnd::Stopped => break,
                RunEnd::Budget => {}
            }
        }
    }
}

trait EmitBytes {
    fn emit_bytes(&self) -> [u8; 64];
}

impl EmitBytes for SignalRepr {
    fn emit_bytes(&self) -> [u8; 64] {
        let mut b = [0u8; 64];
        self.emit(&mut aql::Signal::new_unchecked(&mut b[..]));
        b
    }
}

/// The GPU clock counter GET_CLOCK_COUNTERS answers for a GPU now.
fn gpu_counter(f: &Fx, gpu_id: u32) -> u64 {
    let mut a = kfd_ioctl_get_clock_counters_args::new_zeroed();
    a.gpu_id = gpu_id;
    raw(&f.m, AMDKFD_IOC_GET_CLOCK_COUNTERS, &mut a).unwrap();
    a.gpu_clock_counter
}

/// POLL_REGMEM (SDMA v4): the engine re-reads `*addr` until `(*addr & mask) func value` holds;
/// until then the packet is not consumed and nothing behind it runs.
#[test]
fn sdma_poll_regmem_blocks_until_the_cpu_changes_memory() {
    let f = setup();
    let flag = DATA + 0x40;
    f.put(flag, &0x0000_02ffu32.to_le_bytes());
    let mut r = Ring::new(EngineKind::Sdma, RING, 4096, RPTR);
    let before = sdmab(sdma::Repr::WriteUntiled { dst: DATA, data: (&[0x1111u32]).into(), swap: 0 });
    r.push(&f, &before);
    // Wait for ((flag & 0xff00) > 0x0200): 0x02ff masks to 0x0200, not greater.
    let poll = sdma::PollRegmem {
        addr: flag,
        value: 0x0200,
        mask: 0xff00,
        func: CompareFunction::Greater,
        mem_poll: true,
        hdp_flush: false,
        interval: 10,
        retry_count: 0xfff,
    };
    r.push(&f, &sdmab(sdma::Repr::PollRegmem(poll)));
    r.push(&f, &sdmab(sdma::Repr::fence(DATA + 0x80, 0xabc)));
    r.push(&f, &sdmab(sdma::Repr::WriteUntiled { dst: DATA + 0x84, data: (&[0x2222u32]).into(), swap: 0 }));
    let mut p = RingProgress::default();
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Blocked);
    assert_eq!(f.u32(DATA), 0x1111, "the packet before the poll ran");
    assert_eq!(p.read, before.len() as u64, "the poll is not consumed");
    assert_eq!(f.u64(RPTR), before.len() as u64);
    assert_eq!(words(&f, DATA + 0x80, 2), vec![0, 0], "nothing behind the poll ran");
    // Still false: bits outside the mask do not count (0x01ff masks to 0x0100).
    f.put(flag, &0x0000_01ffu32.to_le_bytes());
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Blocked);
    assert_eq!(words(&f, DATA + 0x80, 2), vec![0, 0]);
    // Equal is not greater.
    f.put(flag, &0xffff_0200u32.to_le_bytes());
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Blocked);
    assert_eq!(p.read, before.len() as u64);
    // 0x0350 masks to 0x0300 > 0x0200: the poll completes and the rest runs, in order.
    f.put(flag, &0x0000_0350u32.to_le_bytes());
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Idle);
    assert_eq!(words(&f, DATA + 0x80, 2), vec![0xabc, 0x2222]);
    assert_eq!(p.read, r.w);
    assert_eq!(f.u64(RPTR), r.w);
    // Equal on the full dword, as a fence-wait would use it.
    let eq = sdma::PollRegmem { value: 7, mask: u32::MAX, func: CompareFunction::Equal, ..poll };
    r.push(&f, &sdmab(sdma::Repr::PollRegmem(eq)));
    r.push(&f, &sdmab(sdma::Repr::fence(DATA + 0x88, 1)));
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Blocked);
    f.put(flag, &7u32.to_le_bytes());
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Idle);
    assert_eq!(f.u32(DATA + 0x88), 1);
}

/// The AMD barrier-value packet (hsa_amd_barrier_value_packet_t): waits until
/// `(signal.value & mask) cond value`, hsa_signal_value_t being a signed 64-bit value; then the
/// completion signal completes (timestamps, decrement, mailbox + interrupt).
#[test]
fn aql_barrier_value_waits_for_the_masked_condition() {
    let f = setup();
    let (ev, slot) = f.signal_event();
    let dep = SIG;
    let done = SIG + 64;
    signal(&f, dep, SignalRepr::user(5));
    signal(&f, done, SignalRepr::user(1).event(slot, ev));
    f.put(KARG, &Args::Fill(FillArgs { dst: DATA, value: 0x5eed, count: 1 }).to_bytes());
    let mut r = Ring::new(EngineKind::Aql, RING, 4096, RPTR);
    let bv = aql::BarrierValue { signal: dep, value: 0x10, mask: 0xf0, cond: aql::SignalCondition::Eq, completion_signal: done };
    r.push(&f, &aqlb(Body::BarrierValue(bv)));
    let fill = KernelDispatch { kernarg_address: KARG, ..KernelDispatch::new(DESC, 1, 1) };
    r.push(&f, &aqlb(Body::KernelDispatch(fill)));
    let mut p = RingProgress::default();
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Blocked);
    assert_eq!((p.read, f.u64(RPTR)), (0, 0));
    assert_eq!(f.u64(done + 8), 1, "the completion signal waits too");
    assert_eq!(f.u32(DATA), 0, "the dispatch behind the barrier waits");
    assert_ne!(f.get(RING, 1)[0], 1, "the header stays valid while waiting");
    // 0x0f & 0xf0 = 0: not equal to 0x10.
    f.put(dep + 8, &0x0fi64.to_le_bytes());
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Blocked);
    assert_eq!(f.poll(ev).0, TIMEOUT);
    // 0x1234_5617 & 0xf0 = 0x10.
    f.put(dep + 8, &0x1234_5617i64.to_le_bytes());
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Idle);
    assert_eq!(f.u64(RPTR), 2);
    assert_eq!(f.u32(DATA), 0x5eed);
    let s = f.get(done, 64);
    let s = aql::SignalRepr::parse(&aql::Signal::new_unchecked(&s[..])).unwrap();
    assert_eq!(s.value, 0, "completion decrements the signal");
    assert!(s.start_ts != 0 && s.start_ts <= s.end_ts, "{} {}", s.start_ts, s.end_ts);
    assert_eq!(f.poll(ev).0, COMPLETE, "the mailbox write + interrupt set the event");

    // The other conditions, one packet each; every one completes its own signal.
    let cases: [(i64, aql::SignalCondition, i64, i64, i64); 3] = [
        // (value, cond, mask, blocking signal value, satisfying signal value)
        (3, aql::SignalCondition::Ne, 0xff, 0x103, 0x104), // 0x103 & 0xff == 3
        (4, aql::SignalCondition::Gte, -1, 3, 4),
        (0, aql::SignalCondition::Lt, -1, 0, -5), // signed: -5 < 0
    ];
    for (i, (value, cond, mask, wait, go)) in cases.into_iter().enumerate() {
        let s = SIG + 0x100 + 0x80 * i as u64;
        let c = s + 0x40;
        signal(&f, s, SignalRepr::user(wait));
        signal(&f, c, SignalRepr::user(1));
        r.push(&f, &aqlb(Body::BarrierValue(aql::BarrierValue { signal: s, value, mask, cond, completion_signal: c })));
        assert_eq!(r.run(&f, &mut p, 100), RunEnd::Blocked, "case {i}");
        assert_eq!(f.u64(c + 8), 1, "case {i}");
        f.put(s + 8, &go.to_le_bytes());
        assert_eq!(r.run(&f, &mut p, 100), RunEnd::Idle, "case {i}");
        assert_eq!(f.u64(c + 8), 0, "case {i}");
        assert_eq!(f.u64(RPTR), 3 + i as u64);
    }
}

/// COPY_DATA memory → memory (src 1 memory / 2 TC L2, dst 5 memory / 2 TC L2; count_sel picks
/// 32 or 64 bits) and from the GPU clock (src 9, the counter GET_CLOCK_COUNTERS reports).
#[test]
fn pm4_copy_data_memory_and_gpu_clock() {
    let f = setup();
    let cd = |src_sel: u8, dst_sel: u8, wide: bool, src: u64, dst: u64| {
        pm4b(Command::CopyData(pm4::CopyData {
            src_sel,
            dst_sel,
            src_cache_policy: 0,
            count_sel: wide,
            wr_confirm: true,
            dst_cache_policy: 0,
            engine_sel: 0,
            src,
            dst,
        }))
    };
    let src = DATA + 0x400;
    f.put(src, &0x1111_2222_3333_4444u64.to_le_bytes());
    f.put(DATA + 0x500, &[0xff; 0x20]);
    f.put(DATA + 0x600, &[0xff; 0x20]);
    let mut r = Ring::new(EngineKind::Pm4, RING, 4096, RPTR);
    r.push(&f, &cd(1, 5, false, src, DATA + 0x500));
    r.push(&f, &cd(2, 2, true, src, DATA + 0x508));
    r.push(&f, &cd(1, 5, false, src + 4, DATA + 0x510));
    let c0 = gpu_counter(&f, f.g);
    r.push(&f, &cd(9, 5, true, 0, DATA + 0x600));
    r.push(&f, &pm4b(WriteData::memory(DATA + 0x700, (&[1u32]).into()).into()));
    r.push(&f, &cd(9, 5, true, 0, DATA + 0x608));
    r.push(&f, &cd(9, 2, false, 0, DATA + 0x610));
    let mut p = RingProgress::default();
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Idle);
    let c1 = gpu_counter(&f, f.g);
    // 32 bits copy the low dword only; the next one keeps its old contents.
    assert_eq!(words(&f, DATA + 0x500, 2), vec![0x3333_4444, 0xffff_ffff]);
    assert_eq!(f.u64(DATA + 0x508), 0x1111_2222_3333_4444);
    assert_eq!(words(&f, DATA + 0x510, 2), vec![0x1111_2222, 0xffff_ffff]);
    // GPU clock: non-zero, monotonic along the ring, inside the GET_CLOCK_COUNTERS bracket.
    let (t1, t2) = (f.u64(DATA + 0x600), f.u64(DATA + 0x608));
    assert!(t1 != 0 && c0 <= t1 && t1 <= t2 && t2 <= c1, "{c0} {t1} {t2} {c1}");
    assert!(c1 - c0 < 1 << 32, "the bracket is narrow enough to check the 32-bit copy");
    let lo = u64::from(f.u32(DATA + 0x610));
    let (lo0, lo1) = (c0 & 0xffff_ffff, c1 & 0xffff_ffff);
    let in_bracket = if lo0 <= lo1 { (lo0..=lo1).contains(&lo) } else { lo >= lo0 || lo <= lo1 };
    assert!(in_bracket, "low 32 bits of the clock: {lo:#x} in {lo0:#x}..={lo1:#x}");
    assert_eq!(f.u32(DATA + 0x614), 0xffff_ffff, "a 32-bit clock copy writes one dword");
    assert_eq!(f.u32(RPTR) as u64, r.w);
}

/// SDMA ATOMIC with the TC opcodes: CMPSWAP (src = new value, cmp = expected), INC (wraps to 0
/// once the old value reaches src), DEC (old 0 or above src → src), 32 and 64 bits; the
/// no-return forms (bit 6) have the same memory effect; the loop bit retries a compare-swap
/// until it succeeds (Blocked meanwhile, nothing behind it runs) and a single-pass one that
/// fails leaves memory alone and completes.
#[test]
fn sdma_atomic_cmpswap_inc_dec() {
    const CMPSWAP_32: u8 = 0x08;
    const INC_32: u8 = 0x18;
    const DEC_32: u8 = 0x19;
    const CMPSWAP_64: u8 = 0x28;
    const INC_64: u8 = 0x38;
    const DEC_64: u8 = 0x39;
    const NO_RTN: u8 = 0x40;
    let f = setup();
    let at = |addr: u64, op: u8, src: u64, cmp: u64, loop_: bool| {
        sdmab(sdma::Repr::Atomic(sdma::Atomic { addr, op, src, cmp, loop_, loop_interval: 0x10, tmz: false }))
    };
    // (initial u64, op, src, cmp, expected u64 after)
    let cases: Vec<(u64, u8, u64, u64, u64)> = vec![
        // CMPSWAP: match swaps, mismatch leaves memory alone.
        (0x1_0000_0005, CMPSWAP_64, 0xaaaa, 0x1_0000_0005, 0xaaaa),
        (0x1_0000_0005, CMPSWAP_64, 0xaaaa, 0x5, 0x1_0000_0005),
        // 32 bits: only the low dword is compared and written.
        (0x7777_7777_0000_0005, CMPSWAP_32, 0x9999_0000_0006, 0xffff_0000_0005, 0x7777_7777_0000_0006),
        (0x7777_7777_0000_0005, CMPSWAP_32 | NO_RTN, 6, 5, 0x7777_7777_0000_0006),
        // INC: old < src → old + 1; old >= src → 0 (unsigned).
        (3, INC_32, 10, 0, 4),
        (10, INC_32, 10, 0, 0),
        (0xffff_fff0, INC_32, 10, 0, 0),
        (0x5_ffff_ffff, INC_32, 0xffff_ffff, 0, 0x5_0000_0000),
        (0x1_0000_0000, INC_64, 0x2_0000_0000, 0, 0x1_0000_0001),
        (0x2_0000_0000, INC_64 | NO_RTN, 0x2_0000_0000, 0, 0),
        // DEC: old == 0 or old > src → src; else old - 1 (unsigned).
        (5, DEC_32, 10, 0, 4),
        (0, DEC_32, 10, 0, 10),
        (11, DEC_32, 10, 0, 10),
        (0x8_0000_0000, DEC_32 | NO_RTN, 7, 0, 0x8_0000_0007),
        (0x1_0000_0000, DEC_64, 0x2_0000_0000, 0, 0xffff_ffff),
        (0, DEC_64, 0x2_0000_0000, 0, 0x2_0000_0000),
        (u64::MAX, DEC_64, 0x2_0000_0000, 0, 0x2_0000_0000),
    ];
    let mut r = Ring::new(EngineKind::Sdma, RING, 4096, RPTR);
    for (i, &(init, op, src, cmp, _)) in cases.iter().enumerate() {
        let a = DATA + 8 * i as u64;
        f.put(a, &init.to_le_bytes());
        r.push(&f, &at(a, op, src, cmp, false));
    }
    let mut p = RingProgress::default();
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Idle, "single-pass atomics never block");
    for (i, &(init, op, src, cmp, want)) in cases.iter().enumerate() {
        let got = f.u64(DATA + 8 * i as u64);
        assert_eq!(got, want, "case {i}: {init:#x} op {op:#x} src {src:#x} cmp {cmp:#x} → {got:#x}");
    }

    // A looping compare-swap waits for its compare value.
    let lock = DATA + 0x800;
    f.put(lock, &1u64.to_le_bytes());
    r.push(&f, &at(lock, CMPSWAP_64, 2, 0, true));
    r.push(&f, &sdmab(sdma::Repr::fence(DATA + 0x808, 0x77)));
    let start = p.read;
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Blocked);
    assert_eq!((p.read, f.u64(RPTR)), (start, start), "the looping atomic is not consumed");
    assert_eq!(f.u64(lock), 1, "a failed compare writes nothing");
    assert_eq!(f.u32(DATA + 0x808), 0, "nothing behind it ran");
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Blocked);
    f.put(lock, &0u64.to_le_bytes());
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Idle);
    assert_eq!(f.u64(lock), 2);
    assert_eq!(f.u32(DATA + 0x808), 0x77);
    assert_eq!(p.read, r.w);
    // 32-bit looping compare-swap: the upper dword neither takes part nor changes.
    f.put(lock, &0x5555_5555_0000_0001u64.to_le_bytes());
    r.push(&f, &at(lock, CMPSWAP_32 | NO_RTN, 9, 0x1234_0000_0000, true));
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Blocked);
    f.put(lock, &0u32.to_le_bytes());
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Idle);
    assert_eq!(f.u64(lock), 0x5555_5555_0000_0009);
    // The loop bit belongs to compare-swap: an INC with it set runs once.
    f.put(lock, &0u64.to_le_bytes());
    r.push(&f, &at(lock, INC_64, 100, 0, true));
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Idle);
    assert_eq!(f.u64(lock), 1);
}

/// The SDMA packets of one `hsa_amd_memory_async_copy` as ROCr's BlitSdma::SubmitCommand
/// builds them (HDP flush, on gfx10+ GCR invalidate, the copy, on gfx10+ GCR writeback, the
/// completion signal's atomic decrement) followed by a FENCE the test waits for.
fn rocr_copy(f: &Fx, gcr: bool, src: u64, dst: u64, bytes: u32, fence: u64) -> Ring {
    let mut r = Ring::new(EngineKind::Sdma, RING, 4096, RPTR);
    // ROCr's hdp_flush_cmd, word for word: {0x8, 0, 0x80000000, 0, 0, 0} (sdma_registers.h).
    // 0x8: op 8 POLL_REGMEM, sub-op 0, HDP_FLUSH bit 0, FUNC 0 (always), MEM_POLL 0 (register
    // space); dword 1 = 0, the polled register; dword 2 = 0x80000000, the register-write field
    // with only bit 31 set (the microcode's own flush, no register named); value, mask,
    // interval and retry count 0. The model completes the flush at once and the "always"
    // compare passes.
    let hdp: Vec<u8> = [0x8u32, 0, 0x8000_0000, 0, 0, 0].iter().flat_map(|d| d.to_le_bytes()).collect();
    assert_eq!(hdp, sdmab(sdma::Repr::PollRegmem(sdma::PollRegmem::ROCR_HDP_FLUSH)));
    r.push(f, &hdp);
    let g = |inv| sdma::Gcr { user: true, base_va: 0, limit_va: 0, control: sdma::gcr::rocr(inv), vmid: 0 };
    if gcr {
        r.push(f, &sdmab(sdma::Repr::Gcr(g(true))));
    }
    r.push(f, &sdmab(sdma::Repr::copy_linear(src, dst, bytes)));
    if gcr {
        r.push(f, &sdmab(sdma::Repr::Gcr(g(false))));
    }
    let dec = sdma::Atomic { addr: SIG + 8, op: sdma::ATOMIC_ADD64, src: u64::MAX, cmp: 0, loop_: false, loop_interval: 0, tmz: false };
    r.push(f, &sdmab(sdma::Repr::Atomic(dec)));
    r.push(f, &sdmab(sdma::Repr::fence(fence, 0xf00d)));
    r
}

/// hsa_amd_memory_async_copy's packet stream runs on every family: gfx9 (mi25 gfx900, mi210
/// gfx90a, mi300x gfx942: HDP flush, copy) and gfx11 (rx7900xtx: HDP flush, GCR, copy, GCR);
/// the data arrives, the signal is decremented and the fence lands.
#[test]
fn sdma_rocr_copy_with_hdp_flush_and_gcr_on_every_family() {
    for (system, gcr) in [("mi25", false), ("mi210", false), ("mi300x", false), ("rx7900xtx", true)] {
        let f = setup_on(system);
        let src: Vec<u8> = (0..256u32).map(|i| (i * 7 + 1) as u8).collect();
        f.put(DATA, &src);
        f.put(SIG + 8, &1u64.to_le_bytes());
        let r = rocr_copy(&f, gcr, DATA, DATA + 0x1000, 256, DATA + 0x2000);
        let mut p = RingProgress::default();
        assert_eq!(r.run(&f, &mut p, 100), RunEnd::Idle, "{system}: {:?}", p.error);
        assert_eq!(p.error, None);
        assert_eq!(f.get(DATA + 0x1000, 256), src, "{system}: copied");
        assert_eq!(f.u64(SIG + 8), 0, "{system}: signal decremented");
        assert_eq!(f.u32(DATA + 0x2000), 0xf00d, "{system}: fence landed");
        assert_eq!(f.u64(RPTR), r.w, "{system}: every packet consumed");
    }
}

/// GCR alone (ROCr's invalidate form, and amdgpu's GCR_REQ with a range) is a no-op on gfx11
/// and the fence behind it lands; on gfx9 (SDMA 4) opcode 17 is not a packet; a GCR over a
/// physical range or for another VMID is refused.
#[test]
fn sdma_gcr_is_a_no_op_on_gfx10_plus_only() {
    let f = setup_on("rx7900xtx");
    let mut r = Ring::new(EngineKind::Sdma, RING, 4096, RPTR);
    let inv = sdma::Gcr { user: true, base_va: 0, limit_va: 0, control: sdma::gcr::rocr(true), vmid: 0 };
    r.push(&f, &sdmab(sdma::Repr::Gcr(inv)));
    let ranged = sdma::Gcr {
        user: false,
        base_va: DATA,
        limit_va: DATA + 0x1000,
        control: sdma::gcr::GL2_WB | 2 << sdma::gcr::GL2_RANGE_SHIFT,
        vmid: 0,
    };
    r.push(&f, &sdmab(sdma::Repr::Gcr(ranged)));
    r.push(&f, &sdmab(sdma::Repr::fence(DATA + 0x40, 0x6c6c)));
    let mut p = RingProgress::default();
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Idle, "{:?}", p.error);
    assert_eq!(f.u32(DATA + 0x40), 0x6c6c);
    assert_eq!(f.u64(RPTR), r.w);
    for (i, bad) in [sdma::Gcr { control: sdma::gcr::RANGE_IS_PA, ..inv }, sdma::Gcr { vmid: 3, ..inv }].into_iter().enumerate() {
        let mut r = Ring::new(EngineKind::Sdma, RING + 0x8000 + 0x1000 * i as u64, 4096, 0);
        r.push(&f, &sdmab(sdma::Repr::Gcr(bad)));
        let mut p = RingProgress::default();
        assert_eq!(r.run(&f, &mut p, 100), RunEnd::Stopped);
        assert!(matches!(p.error, Some(QueueError::BadPacket { at: 0, .. })), "{:?}", p.error);
    }
    for system in ["mi25", "mi210", "mi300x"] {
        let f = setup_on(system);
        let mut r = Ring::new(EngineKind::Sdma, RING, 4096, 0);
        r.push(&f, &sdmab(sdma::Repr::Gcr(inv)));
        let mut p = RingProgress::default();
        assert_eq!(r.run(&f, &mut p, 100), RunEnd::Stopped, "{system}");
        assert!(matches!(p.error, Some(QueueError::BadPacket { at: 0, what, .. }) if what.contains("GCR")), "{system}: {:?}", p.error);
    }
}

/// Register-mode POLL_REGMEM other than ROCr's HDP flush stops the queue with a reason: the
/// model maps no registers (amdgpu's own HDP flush names the NBIO request/done registers).
#[test]
fn sdma_other_register_polls_are_refused() {
    let f = setup();
    let kernel_form = sdma::PollRegmem {
        addr: 0x1234 << 2 | (0x1235u64 << 2) << 32,
        value: 1 << 10,
        mask: 1 << 10,
        func: CompareFunction::Equal,
        mem_poll: false,
        hdp_flush: true,
        interval: 10,
        retry_count: 0xfff,
    };
    let other_register = sdma::PollRegmem { addr: 0x40, hdp_flush: false, func: CompareFunction::Always, ..kernel_form };
    let hdp_with_bit = sdma::PollRegmem { hdp_flush: true, ..sdma::PollRegmem::ROCR_HDP_FLUSH };
    for (i, pr) in [kernel_form, other_register, hdp_with_bit].into_iter().enumerate() {
        let mut r = Ring::new(EngineKind::Sdma, RING + 0x8000 + 0x1000 * i as u64, 4096, 0);
        r.push(&f, &sdmab(sdma::Repr::PollRegmem(pr)));
        let mut p = RingProgress::default();
        assert_eq!(r.run(&f, &mut p, 100), RunEnd::Stopped, "case {i}");
        assert!(
            matches!(p.error, Some(QueueError::BadPacket { at: 0, what, .. }) if what.contains("registers")),
            "case {i}: {:?}",
            p.error
        );
    }
}

/// COPY_LINEAR's broadcast form (9 dwords) writes both destinations and the packets behind it
/// are read at the right place: the fence lands.
#[test]
fn sdma_broadcast_copy_writes_both_destinations() {
    let f = setup();
    let src: Vec<u8> = (0..200u32).map(|i| (i ^ 0x5a) as u8).collect();
    f.put(DATA, &src);
    let mut r = Ring::new(EngineKind::Sdma, RING, 4096, RPTR);
    let b = sdma::CopyBroadcast {
        src: DATA,
        dst1: DATA + 0x1000,
        dst2: DATA + 0x2000,
        count: 200,
        src_swap: 0,
        dst1_swap: 0,
        dst2_swap: 0,
        tmz: false,
    };
    let pkt = sdmab(sdma::Repr::CopyBroadcast(b));
    assert_eq!(pkt.len(), 36, "9 dwords");
    r.push(&f, &pkt);
    r.push(&f, &sdmab(sdma::Repr::fence(DATA + 0x3000, 0xb0b)));
    let mut p = RingProgress::default();
    assert_eq!(r.run(&f, &mut p, 100), RunEnd::Idle, "{:?}", p.error);
    assert_eq!(f.get(DATA + 0x1000, 200), src);
    assert_eq!(f.get(DATA + 0x2000, 200), src);
    assert_eq!(f.get(DATA + 0x1000 + 200, 4), vec![0; 4], "the copy stops at its count");
    assert_eq!(f.u32(DATA + 0x3000), 0xb0b);
    assert_eq!(f.u64(RPTR), r.w);
}

/// The COPY_LINEAR count is 30 bits where ROCr uses count_ext (gfx90a, gfx11) and 22 bits on
/// the other gfx9 parts: a count over 4 MiB there is refused, not truncated.
#[test]
fn sdma_wide_copy_counts_per_family() {
    for (system, wide) in [("mi25", false), ("mi300x", false), ("mi210", true), ("rx7900xtx", true)] {
        let f = setup_on(system);
        let mut r = Ring::new(EngineKind::Sdma, RING, 4096, 0);
        // 4 MiB + 4 bytes from an unmapped hole: a wide engine faults on the read, a narrow one
        // refuses the packet first.
        r.push(&f, &sdmab(sdma::Repr::copy_linear(HOLE, DATA, (1 << 22) + 4)));
        let mut p = RingProgress::default();
        assert_eq!(r.run(&f, &mut p, 100), RunEnd::Stopped, "{system}");
        if wide {
            assert!(matches!(p.error, Some(QueueError::Fault(_))), "{system}: {:?}", p.error);
        } else {
            assert!(
                matches!(p.error, Some(QueueError::BadPacket { at: 0, what, .. }) if what.contains("22 bits")),
                "{system}: {:?}",
                p.error
            );
        }
    }
}

/// ACQUIRE_MEM as ROCr's InvalidateCodeCaches sends it through the utility queue's PM4-IB:
/// the gfx9 form (7 dwords, COHER_CNTL) on mi210, the gfx10+ form (8 dwords, GCR_CNTL) on
/// rx7900xtx; each generation refuses the other's form. The WRITE_DATA behind it lands.
#[test]
fn pm4_acquire_mem_per_family() {
    let gfx9 = pm4::AcquireMem { coher_cntl: 0x28c0_0000, coher_size: 0xff_ffff_ffff, coher_base: 0, poll_interval: 0, gcr_cntl: None };
    let gfx10 = pm4::AcquireMem { coher_cntl: 0, gcr_cntl: Some(1 | 1 << 7 | 1 << 8 | 1 << 9 | 1 << 14), ..gfx9 };
    for (system, good, other) in [("mi210", gfx9, gfx10), ("rx7900xtx", gfx10, gfx9)] {
        let f = setup_on(system);
        let mut r = Ring::new(EngineKind::Pm4, RING, 4096, RPTR);
        r.push(&f, &pm4b(Command::AcquireMem(good)));
        r.push(&f, &pm4b(Command::WriteData(WriteData::memory(DATA, (&[0x5151u32]).into()))));
        let mut p = RingProgress::default();
        assert_eq!(r.run(&f, &mut p, 100), RunEnd::Idle, "{system}: {:?}", p.error);
        assert_eq!(f.u32(DATA), 0x5151, "{system}");
        r.push(&f, &pm4b(Command::AcquireMem(other)));
        assert_eq!(r.run(&f, &mut p, 100), RunEnd::Stopped, "{system}");
        assert!(matches!(p.error, Some(QueueError::BadPacket { what, .. }) if what.contains("ACQUIRE_MEM")), "{system}: {:?}", p.error);
    }
}
