//! The plugin's 0.4 table (upstream ROCm's hsakmtmodeliface.h), driven as upstream libhsakmt
//! drives it in model mode: a PROT_NONE aperture reserved with mmap, one `create` per GPU node
//! followed by `set_global_aperture` and `set_set_event`, `alloced_memory` for each allocation
//! (GPU VA relative to the aperture) before its pages are mapped into the aperture from a memfd,
//! and queues with aperture-relative ring / read / write pointer addresses. The model's engines
//! run SDMA, PM4 and AQL rings there and set events through the callback; bad addresses stop a
//! queue without hurting the host; destroy joins the threads.

use hsakmt_core::abi::kfd::KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
use hsakmt_core::packet::aql::{self, Barrier, Body, KernelDispatch, SignalRepr};
use hsakmt_core::packet::model_kernel::{Args, Descriptor, FillArgs, KernelId};
use hsakmt_core::packet::pm4::{self, Command, ReleaseMem, WriteData};
use hsakmt_core::packet::sdma;
use hsakmt_model::plugin04::{self, ModelFunctions04, QueueInfo04};
use std::ffi::{c_uint, c_void};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// upstream's MODEL_APERTURE_SIZE: 256 GiB, reserved PROT_NONE | MAP_NORESERVE.
const APERTURE: u64 = 1 << 38;
const RW: u32 = KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE as u32;
const QT_PM4: u32 = 0;
const QT_SDMA: u32 = 1;
const QT_AQL: u32 = 2;

/// Layout of the 1 MiB allocation at VA 0x10000 (upstream's gpuvm_base is 0x4000).
const MEM: u64 = 0x10000;
const SDMA_RING: u64 = MEM;
const PM4_RING: u64 = MEM + 0x1000;
const AQL_RING: u64 = MEM + 0x2000;
/// Read / write pointers: SDMA +0, +8; PM4 +0x10, +0x18; AQL +0x20, +0x28.
const PTRS: u64 = MEM + 0x3000;
const SIG: u64 = MEM + 0x4000;
const DESC: u64 = MEM + 0x5000;
const KARG: u64 = MEM + 0x6000;
const DATA: u64 = MEM + 0x8000;

/// The tests share the plugin's process-wide state (devices, thread counts): one at a time.
static SERIAL: Mutex<()> = Mutex::new(());
/// (callback data, event id) of every set_event call.
static EVENTS: Mutex<Vec<(usize, u32)>> = Mutex::new(Vec::new());

unsafe extern "C" fn on_set_event(data: *mut c_void, event_id: c_uint) {
    EVENTS.lock().unwrap().push((data as usize, event_id));
}

fn table() -> &'static ModelFunctions04 {
    std::env::remove_var("HSA_MODEL_TOPOLOGY");
    std::env::set_var("HSAKMT_MODEL", "mi25");
    std::env::remove_var("HSAKMT_MODEL_INTERFACE");
    // SAFETY: the plain export returns a pointer to the static 0.4 table by default.
    let t = unsafe { &*hsakmt_model::get_hsakmt_model_functions().cast::<ModelFunctions04>() };
    assert_eq!((t.version_major, t.version_minor), (0, 4));
    t
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !cond() {
        assert!(t0.elapsed() < Duration::from_secs(10), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Upstream's side of one GPU node: the aperture, the memfd the allocations live in, the model.
struct Node {
    t: &'static ModelFunctions04,
    dev: *mut c_void,
    ap: *mut u8,
    memfd: OwnedFd,
    file_size: u64,
}

impl Node {
    fn new(t: &'static ModelFunctions04) -> Node {
        // SAFETY: a fresh PROT_NONE reservation (model_init), unmapped in Drop.
        let ap = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                APERTURE as usize,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_NORESERVE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(ap, libc::MAP_FAILED);
        let memfd = rustix::fs::memfd_create("plugin04-test", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        // SAFETY: plugin entry points called as upstream's model_init calls them.
        let dev = unsafe {
            let dev = (t.create.unwrap())();
            assert!(!dev.is_null());
            (t.set_global_aperture.unwrap())(dev, ap, APERTURE);
            (t.set_set_event.unwrap())(dev, Some(on_set_event), 0x5eed as *mut c_void);
            dev
        };
        Node { t, dev, ap: ap.cast(), memfd, file_size: 0 }
    }

    /// ALLOC_MEMORY_OF_GPU (announce) and, unless `map` is false, MAP_MEMORY_TO_GPU (the memfd
    /// pages mapped into the aperture at the VA).
    fn alloc(&mut self, va: u64, size: u64, flags: u32, map: bool) {
        let off = self.file_size;
        self.file_size += size;
        rustix::fs::ftruncate(&self.memfd, self.file_size).unwrap();
        // SAFETY: the VA is page aligned inside the aperture.
        unsafe { (self.t.alloced_memory.unwrap())(self.dev, va as *mut c_void, size, flags) };
        if map {
            let prot = libc::PROT_READ | if flags & RW != 0 { libc::PROT_WRITE } else { 0 };
            // SAFETY: replaces part of our own PROT_NONE reservation with the memfd's pages.
            let p = unsafe {
                libc::mmap(
                    self.ap.add(va as usize).cast(),
                    size as usize,
                    prot,
                    libc::MAP_SHARED | libc::MAP_FIXED,
                    self.memfd.as_raw_fd(),
                    off as libc::off_t,
                )
            };
            assert_ne!(p, libc::MAP_FAILED);
        }
    }

    fn put(&self, va: u64, bytes: &[u8]) {
        // SAFETY: inside a mapped allocation of the aperture (the tests' layout).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ap.add(va as usize), bytes.len()) };
    }

    fn get(&self, va: u64, n: usize) -> Vec<u8> {
        let mut v = vec![0u8; n];
        for (i, b) in v.iter_mut().enumerate() {
            // SAFETY: as in `put`; the model writes these bytes from its threads, so they are
            // read byte by byte with volatile loads.
            *b = unsafe { std::ptr::read_volatile(self.ap.add(va as usize + i)) };
        }
        v
    }

    fn word(&self, va: u64) -> &AtomicU64 {
        // SAFETY: an 8-aligned word inside a mapped allocation, shared with the model's threads
        // (which reach it atomically or with checked copies); lives as long as `self`.
        unsafe { AtomicU64::from_ptr(self.ap.add(va as usize).cast()) }
    }

    fn u64(&self, va: u64) -> u64 {
        self.word(va).load(Ordering::Acquire)
    }

    fn queue(&self, info: QueueInfo04) -> *mut c_void {
        let mut info = info;
        // SAFETY: a live queue info struct.
        unsafe { (self.t.register_queue.unwrap())(self.dev, &mut info) }
    }

    fn destroy_queue(&self, q: *mut c_void) {
        // SAFETY: plugin entry point; `q` came from register_queue.
        unsafe { (self.t.destroy_queue.unwrap())(self.dev, q) };
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        // SAFETY: destroy once; then the aperture is ours to unmap (the model no longer maps it).
        unsafe {
            (self.t.destroy.unwrap())(self.dev);
            libc::munmap(self.ap.cast(), APERTURE as usize);
        }
    }
}

fn info(kind: u32, ring: u64, bytes: u32, rptr: u64, wptr: u64, doorbell: *mut u64) -> QueueInfo04 {
    QueueInfo04 {
        ring_base_address: ring,
        write_pointer_address: wptr,
        read_pointer_address: rptr,
        doorbell,
        ring_size: bytes,
        queue_type: kind,
    }
}

fn sdmab(r: sdma::Repr<'_>) -> Vec<u8> {
    let mut b = vec![0u8; r.buffer_len()];
    r.emit(&mut sdma::Packet::new_unchecked(&mut b[..])).unwrap();
    b
}

fn pm4b(c: Command<'_>) -> Vec<u8> {
    let r = pm4::Repr::compute(c);
    let mut b = vec![0u8; r.buffer_len()];
    r.emit(&mut pm4::Packet::new_unchecked(&mut b[..])).unwrap();
    b
}

fn events_with(id: u32) -> usize {
    EVENTS.lock().unwrap().iter().filter(|e| **e == (0x5eed, id)).count()
}

#[test]
fn sdma_pm4_and_aql_queues_run_in_the_aperture_and_set_events() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let t = table();
    let mut n = Node::new(t);
    n.alloc(MEM, 1 << 20, RW, true);

    // --- SDMA (ROCr's blit queue form): FENCE, COPY, TRAP; the write pointer in bytes.
    n.put(DATA, &(0..64u8).collect::<Vec<_>>());
    let mut ring = Vec::new();
    ring.extend(sdmab(sdma::Repr::fence(DATA + 0x100, 0xcafe_f00d)));
    ring.extend(sdmab(sdma::Repr::copy_linear(DATA, DATA + 0x200, 64)));
    ring.extend(sdmab(sdma::Repr::Trap { int_context: 7 }));
    n.put(SDMA_RING, &ring);
    let q_sdma = n.queue(info(QT_SDMA, SDMA_RING, 4096, PTRS, PTRS + 8, std::ptr::null_mut()));
    assert!(!q_sdma.is_null());
    n.word(PTRS + 8).store(ring.len() as u64, Ordering::Release);
    wait_for("the SDMA read pointer", || n.u64(PTRS) == ring.len() as u64);
    assert_eq!(n.get(DATA + 0x100, 4), 0xcafe_f00du32.to_le_bytes());
    assert_eq!(n.get(DATA + 0x200, 64), n.get(DATA, 64), "COPY_LINEAR");
    wait_for("set_event(7)", || events_with(7) == 1);

    // --- PM4 with a doorbell word (dwords): WRITE_DATA, RELEASE_MEM with an interrupt.
    let mut ring = pm4b(WriteData::memory(DATA + 0x300, (&[1u32, 2, 3]).into()).into());
    ring.extend(pm4b(Command::ReleaseMem(ReleaseMem { data_sel: 1, ..ReleaseMem::eop(DATA + 0x320, 0x55).interrupt(2, 9) })));
    n.put(PM4_RING, &ring);
    let doorbell = Box::new(AtomicU64::new(0));
    let q_pm4 = n.queue(info(QT_PM4, PM4_RING, 4096, PTRS + 0x10, PTRS + 0x18, doorbell.as_ptr()));
    assert!(!q_pm4.is_null());
    doorbell.store(ring.len() as u64 / 4, Ordering::Release);
    wait_for("the PM4 read pointer", || n.u64(PTRS + 0x10) as u32 == ring.len() as u32 / 4);
    assert_eq!(n.get(DATA + 0x300, 12), [1u32, 2, 3].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>());
    assert_eq!(n.get(DATA + 0x320, 4), 0x55u32.to_le_bytes());
    wait_for("set_event(9)", || events_with(9) == 1);

    // --- AQL (ROCr's form: write_dispatch_id polled, no mailbox in model mode): a barrier-AND
    // on a signal, then the FILL model kernel whose completion signal carries event id 11.
    let (dep, done) = (SIG, SIG + 64);
    let mut s = [0u8; 64];
    SignalRepr::user(1).emit(&mut aql::Signal::new_unchecked(&mut s[..]));
    n.put(dep, &s);
    SignalRepr::user(1).event(0, 11).emit(&mut aql::Signal::new_unchecked(&mut s[..]));
    n.put(done, &s);
    n.put(DESC, &Descriptor::new(KernelId::Fill).to_bytes());
    n.put(KARG, &Args::Fill(FillArgs { dst: DATA + 0x1000, value: 0xfeed_f00d, count: 32 }).to_bytes());
    let mut ring = aql::Repr::new(Body::BarrierAnd(Barrier::new([0, dep, 0, 0, 0]))).to_bytes().to_vec();
    let fill = KernelDispatch { kernarg_address: KARG, completion_signal: done, ..KernelDispatch::new(DESC, 64, 64) };
    ring.extend(aql::Repr::new(Body::KernelDispatch(fill)).to_bytes());
    n.put(AQL_RING, &ring);
    let q_aql = n.queue(info(QT_AQL, AQL_RING, 4096, PTRS + 0x20, PTRS + 0x28, std::ptr::null_mut()));
    assert!(!q_aql.is_null());
    n.word(PTRS + 0x28).store(2, Ordering::Release);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(n.u64(PTRS + 0x20), 0, "the barrier waits for its dependency");
    assert_eq!(n.get(DATA + 0x1000, 4), [0; 4]);
    n.word(dep + 8).store(0, Ordering::Release);
    wait_for("read_dispatch_id", || n.u64(PTRS + 0x20) == 2);
    assert_eq!(
        n.get(DATA + 0x1000, 132),
        [[0xfeed_f00du32; 32].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>(), vec![0; 4]].concat()
    );
    assert_eq!(n.u64(done + 8), 0, "the completion signal is decremented");
    wait_for("set_event(11)", || events_with(11) == 1);

    // --- teardown: every queue's thread is joined by destroy_queue / destroy.
    assert_eq!(plugin04::live_queue_threads(), 3);
    n.destroy_queue(q_pm4);
    assert_eq!(plugin04::live_queue_threads(), 2);
    n.destroy_queue(q_pm4); // twice: a message, nothing else
    assert_eq!(plugin04::live_queue_threads(), 2);
    let _ = (q_sdma, q_aql);
    drop(n); // destroy with two queues still registered
    assert_eq!(plugin04::live_queue_threads(), 0);
    assert_eq!(plugin04::live_devices(), 0);
    assert_eq!(plugin04::announced_ranges(), 0);
    assert_eq!(events_with(7) + events_with(9) + events_with(11), 3, "each interrupt once");
}

#[test]
fn bad_addresses_stop_the_queue_and_bad_calls_fail_cleanly() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let t = table();
    let mut n = Node::new(t);
    n.alloc(MEM, 1 << 20, RW, true);
    // Announced but never mapped into the aperture (PROT_NONE pages).
    n.alloc(0x400_0000, 0x10000, RW, false);
    // Announced, mapped, then freed: the host still has the pages, the GPU no longer.
    n.alloc(0x500_0000, 0x10000, RW, true);
    // SAFETY: a range announced above, with its size.
    unsafe { (t.freed_memory.unwrap())(n.dev, 0x500_0000 as *mut c_void, 0x10000) };

    let nop = sdmab(sdma::Repr::Trap { int_context: 5 });
    for (i, ring_va) in [0x800_0000u64, 0x400_0000, 0x500_0000].into_iter().enumerate() {
        if ring_va == 0x500_0000 {
            n.put(ring_va, &nop); // the host can write it; the GPU must not read it
        }
        let stopped = plugin04::stopped_queues();
        let (rptr, wptr) = (PTRS + 0x40 * i as u64, PTRS + 0x40 * i as u64 + 8);
        let q = n.queue(info(QT_SDMA, ring_va, 4096, rptr, wptr, std::ptr::null_mut()));
        assert!(!q.is_null());
        n.word(wptr).store(nop.len() as u64, Ordering::Release);
        wait_for("the queue to stop", || plugin04::stopped_queues() > stopped);
        assert_eq!(n.u64(rptr), 0, "ring at {ring_va:#x}: nothing consumed");
        n.destroy_queue(q);
    }
    assert_eq!(events_with(5), 0, "no packet of a faulting ring ran");
    // A write pointer outside every allocation stops the queue too.
    let stopped = plugin04::stopped_queues();
    let q = n.queue(info(QT_SDMA, SDMA_RING, 4096, PTRS, 0x900_0000, std::ptr::null_mut()));
    wait_for("the queue to stop", || plugin04::stopped_queues() > stopped);
    n.destroy_queue(q);
    // A queue still works afterwards: the host and the model survived.
    n.put(SDMA_RING, &sdmab(sdma::Repr::fence(DATA, 0x600d)));
    let q = n.queue(info(QT_SDMA, SDMA_RING, 4096, PTRS + 0x100, PTRS + 0x108, std::ptr::null_mut()));
    n.word(PTRS + 0x108).store(sdmab(sdma::Repr::fence(DATA, 0)).len() as u64, Ordering::Release);
    wait_for("the fence", || n.get(DATA, 4) == 0x600du32.to_le_bytes());
    n.destroy_queue(q);

    // Bad calls: no queue, no crash.
    let bad = |qi: QueueInfo04| n.queue(qi).is_null();
    assert!(bad(info(9, SDMA_RING, 4096, PTRS, PTRS + 8, std::ptr::null_mut())), "unknown queue type");
    assert!(bad(info(QT_SDMA, SDMA_RING, 100, PTRS, PTRS + 8, std::ptr::null_mut())), "ring size not a power of two");
    assert!(bad(info(QT_AQL, AQL_RING, 32, PTRS, PTRS + 8, std::ptr::null_mut())), "AQL ring smaller than a packet");
    assert!(bad(info(QT_SDMA, SDMA_RING, 4096, PTRS, PTRS + 8, 0x1003 as *mut u64)), "misaligned doorbell");
    // SAFETY: every call below passes values the plugin must refuse without dereferencing.
    unsafe {
        assert!((t.register_queue.unwrap())(n.dev, std::ptr::null_mut()).is_null(), "NULL info");
        assert!((t.register_queue.unwrap())(n.dev, 0x10 as *mut QueueInfo04).is_null(), "wild info");
        let wild = 0xdead_0000usize as *mut c_void;
        assert!((t.register_queue.unwrap())(wild, std::ptr::null_mut()).is_null(), "wild model");
        (t.destroy_queue.unwrap())(n.dev, wild);
        (t.destroy_queue.unwrap())(wild, wild);
        (t.set_global_aperture.unwrap())(n.dev, std::ptr::null_mut(), APERTURE);
        (t.alloced_memory.unwrap())(n.dev, 0x1234 as *mut c_void, 4096, RW); // misaligned
        (t.alloced_memory.unwrap())(n.dev, MEM as *mut c_void, 4096, RW); // overlaps
        (t.freed_memory.unwrap())(n.dev, 0x700_0000 as *mut c_void, 4096); // never allocated
        (t.set_notify_event.unwrap())(n.dev, None, std::ptr::null_mut());
        (t.set_wait_event.unwrap())(n.dev, None, std::ptr::null_mut());
        (t.destroy.unwrap())(wild);
    }
    assert_eq!(plugin04::live_queue_threads(), 0);
    let dev = n.dev;
    drop(n);
    // SAFETY: a destroyed handle is refused like any other stale one.
    unsafe {
        (t.destroy.unwrap())(dev);
        (t.set_global_aperture.unwrap())(dev, 0x1000 as *mut c_void, 4096);
    }
    assert_eq!(plugin04::live_devices(), 0);
    assert_eq!(plugin04::announced_ranges(), 0, "the allocations went with the last model");
}

/// A topology with no such catalogue entry: create fails with NULL (upstream aborts with "Failed
/// to create model"), nothing is left behind.
#[test]
fn create_without_a_topology_fails_cleanly() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let t = table();
    std::env::set_var("HSAKMT_MODEL", "no-such-system");
    // SAFETY: plugin entry point.
    let dev = unsafe { (t.create.unwrap())() };
    std::env::set_var("HSAKMT_MODEL", "mi25");
    assert!(dev.is_null());
    assert_eq!(plugin04::live_devices(), 0);
}
