//! The model GPU's engines driven directly through `Model::engine_run`: SDMA, PM4 and AQL
//! packets (emitted with the core Reprs) have their effect in GPU memory, raise events through
//! the interrupt path, block and resume, wrap around the ring, fault into memory-exception
//! events, stop on malformed packets, and respect the budget and the IB bounds.

use hsakmt_core::abi::kfd::*;
use hsakmt_core::packet::aql::{self, Barrier, Body, KernelDispatch, Pm4Ib, SignalRepr};
use hsakmt_core::packet::model_kernel::{dispatch_regs as regs, Args, CopyArgs, Descriptor, FillArgs, KernelId};
use hsakmt_core::packet::pm4::{self, Command, CompareFunction, IndirectBuffer, ReleaseMem, SetShReg, WaitRegMem, WriteData};
use hsakmt_core::packet::sdma;
use hsakmt_model::engine::{EngineKind, QueueError, RingDesc, RingProgress, RunEnd, MAX_IB_DWORDS};
use hsakmt_model::events::{event_data, UNSIGNALED_SLOT};
use hsakmt_model::{GpuFaultKind, Model, ModelConfig};
use std::os::fd::{AsRawFd, OwnedFd};
use zerocopy::{FromZeros, IntoBytes};

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

fn raw<T: IntoBytes + zerocopy::FromBytes>(m: &Model, request: u32, arg: &mut T) -> Result<(), i32> {
    // SAFETY: `arg` is a live, exclusively borrowed argument struct.
    unsafe { m.handle_ioctl(u64::from(request), arg.as_mut_bytes().as_mut_ptr().cast()) }
}

struct Fx {
    m: Model,
    g: u32,
    evp: u64,
    _renders: Vec<OwnedFd>,
}

fn alloc_map(m: &Model, g: u32, va: u64, size: u64, flags: u32) -> u64 {
    let mut a = kfd_ioctl_alloc_memory_of_gpu_args { va_addr: va, size, handle: 0, mmap_offset: 0, gpu_id: g, flags };
    raw(m, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a).unwrap();
    let ids = [g];
    let mut mp =
        kfd_ioctl_map_memory_to_gpu_args { handle: a.handle, device_ids_array_ptr: ids.as_ptr() as u64, n_devices: 1, n_success: 0 };
    raw(m, AMDKFD_IOC_MAP_MEMORY_TO_GPU, &mut mp).unwrap();
    a.handle
}

fn setup() -> Fx {
    let m = Model::new(ModelConfig::catalogue("mi210")).unwrap();
    let mut renders = Vec::new();
    for gn in m.gpus().to_vec() {
        let fd = m.open_render(gn.drm_render_minor).unwrap();
        let mut a = kfd_ioctl_acquire_vm_args { drm_fd: fd.as_raw_fd() as u32, gpu_id: gn.gpu_id };
        raw(&m, AMDKFD_IOC_ACQUIRE_VM, &mut a).unwrap();
        renders.push(fd);
    }
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
        Ring { desc: RingDesc { gpu_id: 0, queue_id: 1, kind, ring_va: va, ring_bytes: bytes, rptr_va: rptr, wptr_va: 0 }, w: 0 }
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
        let desc = RingDesc { gpu_id: f.g, queue_id: 1, kind, ring_va, ring_bytes, rptr_va: RPTR, wptr_va: 0 };
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
