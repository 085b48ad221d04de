//! Upstream's model plugin interface 0.4 (hsakmtmodeliface.h as ROCm ships it): the client
//! (upstream libhsakmt with `HSA_MODEL_TOPOLOGY` + `HSA_MODEL_LIB`) emulates the KFD itself and
//! hands this plugin only the GPU: one `create` per GPU node, a global aperture (GPU VA 0 at a
//! CPU address), the allocations inside it, queues to execute and a callback to set events.
//! Design notes: model/PLUGIN.md.
//!
//! - A device (`hsakmt_model_t *`) is a [`Model`] of its own, built from the environment like
//!   the 1.1 plugin's (`HSA_MODEL_TOPOLOGY`, or ours `HSAKMT_MODEL`), standing for GPU k mod n of
//!   the topology (node order), where k is the number of devices alive at the `create` call.
//!   Handles are opaque tokens checked against the live set: a stale or wild handle gets a
//!   message on stderr and no effect, never a dereference.
//! - Memory: every range `alloced_memory` announces (aperture-relative GPU VA, page aligned)
//!   becomes a host window in each live device's GPU page table, reaching `aperture + va`
//!   (`Model::map_host_window`); `freed_memory` removes it. Upstream maps the pages into the
//!   aperture only later (MAP_MEMORY_TO_GPU) and unmaps them to PROT_NONE, so the engines reach
//!   the window with checked copies: an unannounced VA or a page not mapped is a GPU fault that
//!   stops the queue, not a host crash.
//! - Queues: `register_queue` starts one runner thread per queue that polls the write position
//!   (the doorbell word when the client gives one, else the write pointer in the aperture, as
//!   upstream's thunk passes no doorbell) and runs the ring on the model's engines
//!   (`Model::engine_run`). `destroy_queue` / `destroy` stop and join the threads.
//! - Interrupts (PM4 RELEASE_MEM int_sel, SDMA TRAP, AQL completion signals with an event id)
//!   call the client's `set_event(data, event_id)` with the interrupt's context id.

use crate::engine::{self, EngineKind, QueueError, RingDesc, RingProgress, RunEnd};
use crate::model::{Model, ModelConfig};
use std::collections::BTreeMap;
use std::ffi::{c_uint, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub const VERSION_MAJOR: u32 = 0;
pub const VERSION_MINOR: u32 = 4;

/// `hsakmt_model_set_event_fn`.
pub type SetEventFn = unsafe extern "C" fn(data: *mut c_void, event_id: c_uint);
/// The deprecated `set_notify_event` callback.
pub type NotifyFn = unsafe extern "C" fn(data: *mut c_void);
/// The `set_wait_event` callback.
pub type WaitFn = unsafe extern "C" fn(data: *mut c_void, address: u64, age: u64);

/// `struct hsakmt_model_queue_info` (0.4). Addresses are relative to the global aperture.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct QueueInfo04 {
    pub ring_base_address: u64,
    pub write_pointer_address: u64,
    pub read_pointer_address: u64,
    /// The queue's doorbell word (a host address), or NULL: then the write pointer is polled.
    pub doorbell: *mut u64,
    /// In bytes.
    pub ring_size: u32,
    /// KFD_IOC_QUEUE_TYPE_*: 0 compute (PM4), 1 SDMA, 2 compute AQL, 3 SDMA XGMI, 4 SDMA by
    /// engine id.
    pub queue_type: u32,
}

/// `struct hsakmt_model_functions` (0.4).
#[repr(C)]
pub struct ModelFunctions04 {
    pub version_major: u32,
    pub version_minor: u32,
    pub create: Option<unsafe extern "C" fn() -> *mut c_void>,
    pub destroy: Option<unsafe extern "C" fn(model: *mut c_void)>,
    pub set_global_aperture: Option<unsafe extern "C" fn(model: *mut c_void, base: *mut c_void, size: u64)>,
    pub alloced_memory: Option<unsafe extern "C" fn(model: *mut c_void, base: *mut c_void, size: u64, flags: u32)>,
    pub freed_memory: Option<unsafe extern "C" fn(model: *mut c_void, base: *mut c_void, size: u64)>,
    pub set_notify_event: Option<unsafe extern "C" fn(model: *mut c_void, callback: Option<NotifyFn>, data: *mut c_void)>,
    pub set_wait_event: Option<unsafe extern "C" fn(model: *mut c_void, callback: Option<WaitFn>, data: *mut c_void)>,
    pub register_queue: Option<unsafe extern "C" fn(model: *mut c_void, info: *mut QueueInfo04) -> *mut c_void>,
    pub set_set_event: Option<unsafe extern "C" fn(model: *mut c_void, callback: Option<SetEventFn>, data: *mut c_void)>,
    pub destroy_queue: Option<unsafe extern "C" fn(model: *mut c_void, queue: *mut c_void)>,
}

// The 0.4 layouts (LP64): the table is 8 bytes of versions and ten pointers; the queue info
// three u64, a pointer and two u32.
const _: () = {
    assert!(std::mem::size_of::<ModelFunctions04>() == 88);
    assert!(std::mem::offset_of!(ModelFunctions04, create) == 8);
    assert!(std::mem::offset_of!(ModelFunctions04, register_queue) == 64);
    assert!(std::mem::offset_of!(ModelFunctions04, set_set_event) == 72);
    assert!(std::mem::offset_of!(ModelFunctions04, destroy_queue) == 80);
    assert!(std::mem::size_of::<QueueInfo04>() == 40);
    assert!(std::mem::offset_of!(QueueInfo04, doorbell) == 24);
    assert!(std::mem::offset_of!(QueueInfo04, ring_size) == 32);
    assert!(std::mem::offset_of!(QueueInfo04, queue_type) == 36);
};

/// The table `get_hsakmt_model_functions` returns by default.
pub static MODEL_FUNCTIONS_04: ModelFunctions04 = ModelFunctions04 {
    version_major: VERSION_MAJOR,
    version_minor: VERSION_MINOR,
    create: Some(create),
    destroy: Some(destroy),
    set_global_aperture: Some(set_global_aperture),
    alloced_memory: Some(alloced_memory),
    freed_memory: Some(freed_memory),
    set_notify_event: Some(set_notify_event),
    set_wait_event: Some(set_wait_event),
    register_queue: Some(register_queue),
    set_set_event: Some(set_set_event),
    destroy_queue: Some(destroy_queue),
};

const PAGE: u64 = 4096;
const F_WRITABLE: u32 = hsakmt_core::abi::kfd::KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE as u32;
/// Packets per engine run before the runner looks at its stop flag again.
const BUDGET: u32 = 256;
/// After a run that moved the queue, the runner polls (yielding) this long before it sleeps.
const SPIN: Duration = Duration::from_micros(50);
const FIRST_SLEEP: Duration = Duration::from_micros(20);
const MAX_SLEEP: Duration = Duration::from_millis(1);

/// Runner threads started and not yet joined (all devices).
static QUEUE_THREADS: AtomicUsize = AtomicUsize::new(0);
/// Queues that stopped (a GPU fault or a malformed packet) since the process started.
static STOPPED_QUEUES: AtomicUsize = AtomicUsize::new(0);
static NEXT_QUEUE: AtomicU64 = AtomicU64::new(1);

/// Queue runner threads started and not yet joined.
pub fn live_queue_threads() -> usize {
    QUEUE_THREADS.load(Ordering::SeqCst)
}

/// Queues stopped by a fault or a malformed packet so far.
pub fn stopped_queues() -> usize {
    STOPPED_QUEUES.load(Ordering::SeqCst)
}

/// Devices created and not yet destroyed.
pub fn live_devices() -> usize {
    registry().devices.len()
}

/// Ranges announced by `alloced_memory` and not freed (forgotten when the last device goes).
pub fn announced_ranges() -> usize {
    registry().ranges.len()
}

/// The client's set_event callback and its data (an address, kept as an integer).
type SetEvent = Option<(SetEventFn, usize)>;

struct Aperture {
    base: u64,
    size: u64,
    /// GPU VA → the host window's BO handle in the device's model.
    windows: BTreeMap<u64, u64>,
}

struct Runner {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Runner {
    fn stop_and_join(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
            QUEUE_THREADS.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

struct Device {
    model: Arc<Model>,
    /// Index of the modelled GPU in `model.gpus()`.
    g: usize,
    aperture: Mutex<Option<Aperture>>,
    set_event: Arc<Mutex<SetEvent>>,
    queues: Mutex<BTreeMap<u64, Runner>>,
}

#[derive(Default)]
struct Registry {
    devices: Vec<Arc<Device>>,
    /// Every announced range: GPU VA → (size, flags).
    ranges: BTreeMap<u64, (u64, u32)>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry { devices: Vec::new(), ranges: BTreeMap::new() });

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn token(d: &Arc<Device>) -> usize {
    Arc::as_ptr(d) as usize
}

/// The live device a handle names (compared by address, never dereferenced).
fn device(reg: &Registry, model: *mut c_void, what: &str) -> Option<Arc<Device>> {
    let d = reg.devices.iter().find(|d| token(d) == model as usize).cloned();
    if d.is_none() {
        eprintln!("hsakmt-model (interface 0.4): {what}: {model:p} is not a live model");
    }
    d
}

/// Run an entry point; a panic is reported and swallowed (it must not cross the C boundary).
fn guarded<R>(what: &str, fallback: R, f: impl FnOnce() -> R) -> R {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        eprintln!("hsakmt-model (interface 0.4): {what}: internal error");
        fallback
    })
}

impl Device {
    /// Map the announced range `[va, va + size)` as a host window, if it lies in the aperture.
    fn map(&self, ap: &mut Aperture, va: u64, size: u64, flags: u32) {
        if va.checked_add(size).is_none_or(|end| end > ap.size) {
            eprintln!("hsakmt-model (interface 0.4): range {va:#x}+{size:#x} lies outside the aperture of {:#x} bytes", ap.size);
            return;
        }
        match self.model.map_host_window(self.g, va, size, ap.base + va, flags & F_WRITABLE != 0) {
            Ok(h) => {
                ap.windows.insert(va, h);
            }
            Err(e) => eprintln!("hsakmt-model (interface 0.4): range {va:#x}+{size:#x} not mapped (errno {e})"),
        }
    }

    fn unmap(&self, ap: &mut Aperture, va: u64) {
        if let Some(h) = ap.windows.remove(&va) {
            self.model.unmap_host_window(h);
        }
    }

    fn unmap_all(&self, ap: &mut Aperture) {
        for (_, h) in std::mem::take(&mut ap.windows) {
            self.model.unmap_host_window(h);
        }
    }
}

unsafe extern "C" fn create() -> *mut c_void {
    guarded("create", std::ptr::null_mut(), || {
        let model = match ModelConfig::from_env().and_then(Model::new) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("hsakmt-model (interface 0.4): create: {e}");
                return std::ptr::null_mut();
            }
        };
        let n = model.gpus().len();
        if n == 0 {
            eprintln!("hsakmt-model (interface 0.4): create: the topology has no GPU");
            return std::ptr::null_mut();
        }
        let set_event: Arc<Mutex<SetEvent>> = Arc::default();
        let sink_state = set_event.clone();
        let sink: crate::model::IrqSink = Box::new(move |event_id| {
            if event_id == 0 {
                return;
            }
            let cb = *lock(&sink_state);
            if let Some((f, data)) = cb {
                // SAFETY: the client registered `f` with `data` through set_set_event for
                // exactly this call (hsakmtmodeliface.h); the lock is not held during it.
                unsafe { f(data as *mut c_void, event_id) };
            }
        });
        if model.irq_sink.set(sink).is_err() {
            return std::ptr::null_mut();
        }
        let mut reg = registry();
        let g = reg.devices.len() % n;
        let d = Arc::new(Device { model: Arc::new(model), g, aperture: Mutex::new(None), set_event, queues: Mutex::new(BTreeMap::new()) });
        let t = token(&d);
        reg.devices.push(d);
        t as *mut c_void
    })
}

unsafe extern "C" fn destroy(model: *mut c_void) {
    guarded("destroy", (), || {
        let d = {
            let mut reg = registry();
            let Some(i) = reg.devices.iter().position(|d| token(d) == model as usize) else {
                eprintln!("hsakmt-model (interface 0.4): destroy: {model:p} is not a live model");
                return;
            };
            let d = reg.devices.swap_remove(i);
            if reg.devices.is_empty() {
                // The client's allocations were announced to its models; with the last one gone
                // they are forgotten (a new model starts from what is announced to it).
                reg.ranges.clear();
            }
            d
        };
        let queues = std::mem::take(&mut *lock(&d.queues));
        for (_, r) in queues {
            r.stop_and_join();
        }
        if let Some(ap) = lock(&d.aperture).as_mut() {
            d.unmap_all(ap);
        }
        *lock(&d.set_event) = None;
    })
}

unsafe extern "C" fn set_global_aperture(model: *mut c_void, base: *mut c_void, size: u64) {
    guarded("set_global_aperture", (), || {
        let reg = registry();
        let Some(d) = device(&reg, model, "set_global_aperture") else { return };
        let base = base as u64;
        if base == 0 || base & (PAGE - 1) != 0 || size == 0 || base.checked_add(size).is_none() {
            eprintln!("hsakmt-model (interface 0.4): set_global_aperture: bad aperture {base:#x}+{size:#x}");
            return;
        }
        let mut ap = lock(&d.aperture);
        if let Some(old) = ap.as_mut() {
            d.unmap_all(old);
        }
        let mut new = Aperture { base, size, windows: BTreeMap::new() };
        for (&va, &(len, flags)) in &reg.ranges {
            d.map(&mut new, va, len, flags);
        }
        *ap = Some(new);
    })
}

unsafe extern "C" fn alloced_memory(model: *mut c_void, base: *mut c_void, size: u64, flags: u32) {
    guarded("alloced_memory", (), || {
        let mut reg = registry();
        if device(&reg, model, "alloced_memory").is_none() {
            return;
        }
        let va = base as u64;
        let Some(end) = va.checked_add(size).filter(|_| size != 0 && (va | size) & (PAGE - 1) == 0) else {
            eprintln!("hsakmt-model (interface 0.4): alloced_memory: bad range {va:#x}+{size:#x}");
            return;
        };
        let overlaps = reg.ranges.range(..end).next_back().is_some_and(|(&s, &(l, _))| s + l > va);
        if overlaps {
            eprintln!("hsakmt-model (interface 0.4): alloced_memory: {va:#x}+{size:#x} overlaps an allocation");
            return;
        }
        reg.ranges.insert(va, (size, flags));
        for d in &reg.devices {
            if let Some(ap) = lock(&d.aperture).as_mut() {
                d.map(ap, va, size, flags);
            }
        }
    })
}

unsafe extern "C" fn freed_memory(model: *mut c_void, base: *mut c_void, size: u64) {
    guarded("freed_memory", (), || {
        let mut reg = registry();
        if device(&reg, model, "freed_memory").is_none() {
            return;
        }
        let va = base as u64;
        if reg.ranges.get(&va).is_none_or(|&(l, _)| l != size) {
            eprintln!("hsakmt-model (interface 0.4): freed_memory: {va:#x}+{size:#x} is not an allocation");
            return;
        }
        reg.ranges.remove(&va);
        for d in &reg.devices {
            if let Some(ap) = lock(&d.aperture).as_mut() {
                d.unmap(ap, va);
            }
        }
    })
}

/// Deprecated upstream and never called by its thunk: accepted and ignored.
unsafe extern "C" fn set_notify_event(model: *mut c_void, _callback: Option<NotifyFn>, _data: *mut c_void) {
    guarded("set_notify_event", (), || {
        device(&registry(), model, "set_notify_event");
    })
}

/// The model never waits for an event (its engines block on memory, not on events): accepted
/// and ignored.
unsafe extern "C" fn set_wait_event(model: *mut c_void, _callback: Option<WaitFn>, _data: *mut c_void) {
    guarded("set_wait_event", (), || {
        device(&registry(), model, "set_wait_event");
    })
}

unsafe extern "C" fn set_set_event(model: *mut c_void, callback: Option<SetEventFn>, data: *mut c_void) {
    guarded("set_set_event", (), || {
        let Some(d) = device(&registry(), model, "set_set_event") else { return };
        *lock(&d.set_event) = callback.map(|f| (f, data as usize));
    })
}

/// Where the runner reads the queue's write position.
#[derive(Clone, Copy)]
enum WriteSource {
    /// The doorbell word (host address): what our engines take from a doorbell.
    Doorbell(usize),
    /// The 64-bit write pointer at this aperture VA, in the ring's units.
    Wptr(u64),
}

impl WriteSource {
    fn read(self, m: &Model, ring: &RingDesc) -> Result<u64, QueueError> {
        match self {
            WriteSource::Doorbell(addr) => {
                let mut b = [0u8; 8];
                crate::usercopy::copy_from_user(&mut b, addr).map_err(|_| {
                    QueueError::Fault(crate::GpuFault {
                        gpu_id: ring.gpu_id,
                        va: addr as u64,
                        write: false,
                        kind: crate::GpuFaultKind::HostFault,
                    })
                })?;
                fence(Ordering::Acquire);
                Ok(engine::write_position(ring.kind, u64::from_ne_bytes(b)))
            }
            WriteSource::Wptr(va) => m.gpu_load::<u64>(ring.gpu_id, va, Ordering::Acquire).map_err(QueueError::Fault),
        }
    }
}

/// One queue's runner: polls the write position and runs the ring until told to stop or the
/// queue stops. Allocates nothing per iteration.
fn run_queue(m: &Model, ring: &RingDesc, src: WriteSource, stop: &AtomicBool) {
    let mut p = RingProgress::default();
    let mut blocked = false;
    let mut moved_at = Instant::now();
    let mut sleep = FIRST_SLEEP;
    while !stop.load(Ordering::SeqCst) {
        let write = match src.read(m, ring) {
            Ok(w) => w,
            Err(e) => {
                report_stop(ring, &e);
                return;
            }
        };
        if write != p.read || blocked {
            let before = (p.read, p.ib_stack.len(), p.ib_dwords);
            let end = catch_unwind(AssertUnwindSafe(|| m.engine_run(ring, &mut p, write, BUDGET))).unwrap_or_else(|_| {
                p.error = Some(QueueError::BadPacket {
                    at: p.read,
                    what: "the engine panicked",
                    ec: hsakmt_core::abi::kfd::EC_QUEUE_PACKET_VENDOR_UNSUPPORTED,
                });
                RunEnd::Stopped
            });
            match end {
                RunEnd::Stopped => {
                    if let Some(e) = &p.error {
                        report_stop(ring, e);
                    }
                    return;
                }
                RunEnd::Budget => {
                    moved_at = Instant::now();
                    sleep = FIRST_SLEEP;
                    continue;
                }
                RunEnd::Idle => blocked = false,
                RunEnd::Blocked => blocked = true,
            }
            if (p.read, p.ib_stack.len(), p.ib_dwords) != before {
                moved_at = Instant::now();
                sleep = FIRST_SLEEP;
            }
        }
        if moved_at.elapsed() < SPIN {
            std::thread::yield_now();
        } else {
            std::thread::park_timeout(sleep);
            sleep = (sleep * 2).min(MAX_SLEEP);
        }
    }
}

fn report_stop(ring: &RingDesc, e: &QueueError) {
    STOPPED_QUEUES.fetch_add(1, Ordering::SeqCst);
    // (The model's own memory-exception event the line mentions has no listener under 0.4.)
    let line = engine::describe_stop(ring, e, &[]);
    eprintln!("hsakmt-model (interface 0.4): {}", line.trim_end_matches("; memory-exception event raised"));
}

unsafe extern "C" fn register_queue(model: *mut c_void, info: *mut QueueInfo04) -> *mut c_void {
    guarded("register_queue", std::ptr::null_mut(), || {
        let Some(d) = device(&registry(), model, "register_queue") else { return std::ptr::null_mut() };
        let mut q = QueueInfo04 {
            ring_base_address: 0,
            write_pointer_address: 0,
            read_pointer_address: 0,
            doorbell: std::ptr::null_mut(),
            ring_size: 0,
            queue_type: 0,
        };
        // A checked copy of the client's struct: a NULL or wild `info` is refused, not read.
        // SAFETY: `q` is a live local of exactly the copied size; QueueInfo04 is plain data
        // (integers and a pointer value that is only compared and copied here).
        let dst = unsafe { std::slice::from_raw_parts_mut((&mut q as *mut QueueInfo04).cast::<u8>(), size_of::<QueueInfo04>()) };
        if info.is_null() || crate::usercopy::copy_from_user(dst, info as usize).is_err() {
            eprintln!("hsakmt-model (interface 0.4): register_queue: unreadable queue info {info:p}");
            return std::ptr::null_mut();
        }
        let kind = match q.queue_type {
            0 => EngineKind::Pm4,
            1 | 3 | 4 => EngineKind::Sdma,
            2 => EngineKind::Aql,
            t => {
                eprintln!("hsakmt-model (interface 0.4): register_queue: unknown queue type {t}");
                return std::ptr::null_mut();
            }
        };
        let min = if kind == EngineKind::Aql { 64 } else { 4 };
        if !q.ring_size.is_power_of_two() || q.ring_size < min {
            eprintln!("hsakmt-model (interface 0.4): register_queue: ring size {} is not a power of two of at least {min}", q.ring_size);
            return std::ptr::null_mut();
        }
        let src = if q.doorbell.is_null() {
            WriteSource::Wptr(q.write_pointer_address)
        } else if !(q.doorbell as usize).is_multiple_of(8) {
            eprintln!("hsakmt-model (interface 0.4): register_queue: misaligned doorbell {:p}", q.doorbell);
            return std::ptr::null_mut();
        } else {
            WriteSource::Doorbell(q.doorbell as usize)
        };
        let id = NEXT_QUEUE.fetch_add(1, Ordering::Relaxed);
        let ring = RingDesc {
            gpu_id: d.model.gpus()[d.g].gpu_id,
            queue_id: id as u32,
            kind,
            ring_va: q.ring_base_address,
            ring_bytes: u64::from(q.ring_size),
            rptr_va: q.read_pointer_address,
            wptr_va: q.write_pointer_address,
            // Upstream's thunk gives the plugin no context save area: no CWSR error word.
            ctx_va: 0,
            // The client's doorbell is its own memory, not a slot of a KFD doorbell slice.
            doorbell: 0,
        };
        let stop = Arc::new(AtomicBool::new(false));
        let (m, s) = (d.model.clone(), stop.clone());
        let spawned = std::thread::Builder::new().name(format!("hsakmt-model-q{id}")).spawn(move || run_queue(&m, &ring, src, &s));
        match spawned {
            Ok(t) => {
                QUEUE_THREADS.fetch_add(1, Ordering::SeqCst);
                lock(&d.queues).insert(id, Runner { stop, thread: Some(t) });
                id as usize as *mut c_void
            }
            Err(e) => {
                eprintln!("hsakmt-model (interface 0.4): register_queue: no thread: {e}");
                std::ptr::null_mut()
            }
        }
    })
}

unsafe extern "C" fn destroy_queue(model: *mut c_void, queue: *mut c_void) {
    guarded("destroy_queue", (), || {
        let Some(d) = device(&registry(), model, "destroy_queue") else { return };
        let r = lock(&d.queues).remove(&(queue as usize as u64));
        match r {
            Some(r) => r.stop_and_join(),
            None => eprintln!("hsakmt-model (interface 0.4): destroy_queue: {queue:p} is not a live queue of {model:p}"),
        }
    })
}
