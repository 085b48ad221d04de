//! Events, the thunk side (upstream events.c): `HsaEvent` objects the thunk allocates and hands
//! to C, the event page, and the KFD event ioctls.
//!
//! - **Objects.** Each event is a 48-byte `HsaEvent` owned by the context (its own allocation,
//!   so its address is stable) and registered by that address: a pointer C passes back is
//!   looked up, never dereferenced, so a destroyed (freed) event is an error status, not a
//!   crash. C reads the object at any time (ROCr takes `EventId` and `HWData2` from it), so
//!   Rust shares it under the rule of [`CEvent`]. `EventId` and `EventData` are filled as upstream fills them: `EventType`,
//!   `HWData1` = the KFD event id, `HWData2` = the address of the event's slot in the event
//!   page (signal events), `HWData3` = the KFD's trigger data, and the descriptor's SyncVar.
//! - **The event page.** On a dGPU system the first CREATE_EVENT brings the page: 4096 slots of
//!   8 bytes allocated through the memory API (host, non-paged, uncached, executable, node 0;
//!   mapped to every GPU), whose KFD handle goes in `event_page_offset`. The page lives until
//!   the memory manager is torn down (ReleaseSystemProperties / CloseKFD); the KFD keeps the
//!   page it was given, so later events of the same open get no slot address.
//! - **Waits** do not need the context once started: [`Events::wait_entry`] gives the
//!   KFD id and type under the caller's lock, [`wait`] blocks in the KFD (with an
//!   [`alloc::sync::Arc`] of the port), and [`Events::finish_wait`] copies memory- and
//!   HW-exception data back into the `HsaEvent`s that still exist.

use crate::abi::hsakmt::*;
use crate::abi::kfd::*;
pub use crate::abi::EventData;
use crate::memory::Memory;
use crate::port::{ioctl_plain, Kfd};
use crate::status::{KmtResult, Status};
use crate::topology::Topology;
use alloc::collections::BTreeMap;
use core::alloc::Layout;
use core::mem::{offset_of, size_of};
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU32, Ordering};
use zerocopy::FromZeros;

/// Slots of the event page (KFD_SIGNAL_EVENT_LIMIT).
pub const EVENT_PAGE_SLOTS: u64 = KFD_SIGNAL_EVENT_LIMIT as u64;
const EVENT_PAGE_BYTES: u64 = EVENT_PAGE_SLOTS * 8;

/// The most events one WAIT_EVENTS can take: amdkfd's kfd_wait_on_events allocates one
/// `struct kfd_event_waiter` (56 bytes on 64-bit: a wait-queue entry, the event pointer, two
/// flags) per event with kcalloc, which fails with ENOMEM past KMALLOC_MAX_SIZE (4 MiB on
/// x86-64). The thunk refuses larger waits before it allocates anything (NO_MEMORY, what
/// upstream's calloc of the event-data array answers for such counts).
pub const MAX_WAIT_EVENTS: usize = (4 << 20) / 56;

// Byte offsets inside `HsaEvent`.
const OFF_DATA: usize = offset_of!(HsaEvent, EventData);
const OFF_TYPE: usize = OFF_DATA + offset_of!(HsaEventData, EventType);
const OFF_UNION: usize = OFF_DATA + offset_of!(HsaEventData, EventData);
const OFF_HW1: usize = OFF_DATA + offset_of!(HsaEventData, HWData1);
const OFF_HW2: usize = OFF_DATA + offset_of!(HsaEventData, HWData2);
const OFF_HW3: usize = OFF_DATA + offset_of!(HsaEventData, HWData3);
const OFF_SYNC_DATA: usize = OFF_UNION + offset_of!(HsaSyncVar, SyncVar);
const OFF_SYNC_SIZE: usize = OFF_UNION + offset_of!(HsaSyncVar, SyncVarSize);
const OFF_MAF_NODE: usize = OFF_UNION + offset_of!(HsaMemoryAccessFault, NodeId);
const OFF_MAF_VA: usize = OFF_UNION + offset_of!(HsaMemoryAccessFault, VirtualAddress);
const OFF_MAF_FAILURE: usize = OFF_UNION + offset_of!(HsaMemoryAccessFault, Failure);
const OFF_MAF_FLAGS: usize = OFF_UNION + offset_of!(HsaMemoryAccessFault, Flags);
const OFF_HWX_NODE: usize = OFF_UNION + offset_of!(HsaHwException, NodeId);
const OFF_HWX_TYPE: usize = OFF_UNION + offset_of!(HsaHwException, ResetType);
const OFF_HWX_LOST: usize = OFF_UNION + offset_of!(HsaHwException, MemoryLost);
const OFF_HWX_CAUSE: usize = OFF_UNION + offset_of!(HsaHwException, ResetCause);

/// The words of one `HsaEvent` (HsaEvent is packed(4), so every field is word-aligned).
const EVENT_WORDS: usize = 12;
const _: () = assert!(size_of::<HsaEvent>() == 4 * EVENT_WORDS);

/// One `HsaEvent` in memory shared with C.
///
/// Aliasing rule: C holds the address from CreateEvent until DestroyEvent and may read (or
/// write) the words at any time, from any thread, while Rust fills them in (CreateEvent) and
/// later copies exception data in (a finished wait). So Rust never forms a `&` / `&mut` to the
/// words as plain data: the allocation is raw (not a `Box`, whose uniqueness every move would
/// assert over C's pointer), it is reached only as `&[AtomicU32; 12]` (interior mutability;
/// `AtomicU32` has the layout of the `u32` C sees), and every Rust write is a relaxed atomic
/// store of one word, so a C reader on another thread sees each word whole. Only
/// DestroyEvent (or the end of the context) frees it; C must not use the pointer after that,
/// as with upstream, which frees it too.
struct CEvent(NonNull<[AtomicU32; EVENT_WORDS]>);

// SAFETY: the words are atomics (see above); the handle only frees the allocation on drop.
unsafe impl Send for CEvent {}
// SAFETY: as above: `&CEvent` only gives atomic access.
unsafe impl Sync for CEvent {}

impl CEvent {
    fn layout() -> Layout {
        Layout::new::<[AtomicU32; EVENT_WORDS]>()
    }

    /// A zeroed object.
    fn new() -> CEvent {
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { alloc::alloc::alloc_zeroed(Self::layout()) };
        match NonNull::new(p.cast::<[AtomicU32; EVENT_WORDS]>()) {
            Some(p) => CEvent(p),
            None => alloc::alloc::handle_alloc_error(Self::layout()),
        }
    }

    fn words(&self) -> &[AtomicU32; EVENT_WORDS] {
        // SAFETY: the allocation is live until `drop`, initialised (zeroed) and aligned for
        // the atomics; shared references to atomics may coexist with C's accesses.
        unsafe { self.0.as_ref() }
    }

    fn put32(&self, off: usize, v: u32) {
        self.words()[off / 4].store(v, Ordering::Relaxed);
    }

    fn put64(&self, off: usize, v: u64) {
        let b = v.to_ne_bytes();
        self.put32(off, u32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
        self.put32(off + 4, u32::from_ne_bytes([b[4], b[5], b[6], b[7]]));
    }

    fn get32(&self, off: usize) -> u32 {
        self.words()[off / 4].load(Ordering::Relaxed)
    }

    fn get64(&self, off: usize) -> u64 {
        let (lo, hi) = (self.get32(off).to_ne_bytes(), self.get32(off + 4).to_ne_bytes());
        u64::from_ne_bytes([lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]])
    }

    /// The address C holds.
    fn addr(&self) -> usize {
        self.0.as_ptr() as usize
    }
}

impl Drop for CEvent {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout, freed once, here.
        unsafe { alloc::alloc::dealloc(self.0.as_ptr().cast(), Self::layout()) }
    }
}

/// One event: the `HsaEvent` C sees, plus what the thunk needs without reading it back.
struct Record {
    words: CEvent,
    id: u32,
    ty: u32,
}

impl Record {
    fn put32(&self, off: usize, v: u32) {
        self.words.put32(off, v);
    }
    fn put64(&self, off: usize, v: u64) {
        self.words.put64(off, v);
    }
    fn addr(&self) -> usize {
        self.words.addr()
    }
}

/// The events of one context.
#[derive(Default)]
pub struct Events {
    live: BTreeMap<usize, Record>,
    /// CPU (= GPU) address of the event page this open allocated, while it exists.
    page: Option<u64>,
    /// The KFD has been given a page (it keeps the first one for the life of the open).
    page_given: bool,
}

impl Events {
    /// Live events (tests, leak checks).
    pub fn len(&self) -> usize {
        self.live.len()
    }

    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    fn get(&self, ev: usize) -> KmtResult<&Record> {
        self.live.get(&ev).ok_or(Status::INVALID_HANDLE)
    }

    /// The memory manager was torn down: the page went with it.
    pub(crate) fn forget_page(&mut self) {
        self.page = None;
    }
}

/// Debug events behave as signal events; every other type is system-defined (SetEvent and
/// ResetEvent refuse them).
pub fn is_system_event(ty: u32) -> bool {
    ty != HSA_EVENTTYPE_SIGNAL && ty != HSA_EVENTTYPE_DEBUG_EVENT
}

/// What a CreateEvent asks for.
#[derive(Clone, Copy, Debug)]
pub struct EventDesc {
    pub event_type: u32,
    pub node_id: u32,
    /// `SyncVar.SyncVar.UserData` as an integer, and `SyncVar.SyncVarSize`.
    pub sync_user_data: u64,
    pub sync_var_size: u64,
}

/// SET_EVENT (`set`) or RESET_EVENT of KFD event `event_id`; a KFD failure is ERROR
/// (upstream). Allocates nothing.
pub fn set_reset(kfd: &dyn Kfd, set: bool, event_id: u32) -> KmtResult<()> {
    let r = if set {
        ioctl_plain(kfd, &mut kfd_ioctl_set_event_args { event_id, pad: 0 })
    } else {
        ioctl_plain(kfd, &mut kfd_ioctl_reset_event_args { event_id, pad: 0 })
    };
    r.map_err(|_| Status::ERROR)
}

/// WAIT_EVENTS on `data` (the caller holds no thunk lock): SUCCESS, WAIT_TIMEOUT, or ERROR
/// (a KFD failure: an unknown or destroyed event). Allocates nothing.
pub fn wait(kfd: &dyn Kfd, data: &mut [EventData], wait_all: bool, milliseconds: u32) -> KmtResult<()> {
    u32::try_from(data.len()).map_err(|_| Status::INVALID_PARAMETER)?;
    let wait_result = kfd.wait_events(data, wait_all, milliseconds).map_err(|_| Status::ERROR)?;
    if wait_result == KFD_IOC_WAIT_RESULT_TIMEOUT as u32 {
        return Err(Status::WAIT_TIMEOUT);
    }
    Ok(())
}

impl Events {
    /// CreateEvent's first check: the type (INVALID_PARAMETER), before anything else happens.
    pub fn check_desc(desc: &EventDesc) -> KmtResult<()> {
        if desc.event_type >= HSA_EVENTTYPE_MAXID {
            return Err(Status::INVALID_PARAMETER);
        }
        Ok(())
    }

    /// Whether the KFD has its event page (until then the caller must have acquired the
    /// snapshot before [`Events::create`], so a dGPU's first event can bring the page).
    pub fn page_given(&self) -> bool {
        self.page_given
    }

    /// hsaKmtCreateEvent: returns the new `HsaEvent`'s address. `acquired` is the snapshot and
    /// the memory manager (`None` before AcquireSystemProperties): on a dGPU the first event
    /// allocates the event page there.
    pub(crate) fn create(
        &mut self,
        kfd: &dyn Kfd,
        acquired: Option<(&Topology, &mut Memory)>,
        desc: &EventDesc,
        manual_reset: bool,
        is_signaled: bool,
    ) -> KmtResult<usize> {
        Self::check_desc(desc)?;
        let mut a: kfd_ioctl_create_event_args = FromZeros::new_zeroed();
        a.event_type = desc.event_type;
        a.node_id = desc.node_id;
        a.auto_reset = u32::from(!manual_reset);
        // dGPU: the first event brings the page, allocated here (upstream's
        // allocate_exec_aligned_memory_gpu on node 0) and given to the KFD by handle.
        let mut new_page = None;
        let mut memory = None;
        if let Some((topo, mem)) = acquired {
            if !self.page_given && topo.is_dgpu() {
                let (va, handle) = alloc_event_page(kfd, topo, mem)?;
                a.event_page_offset = handle;
                new_page = Some(va);
            }
            memory = Some(mem);
        }
        if ioctl_plain(kfd, &mut a).is_err() {
            if let (Some(va), Some(mem)) = (new_page, memory) {
                release_event_page(kfd, mem, va);
            }
            return Err(Status::ERROR);
        }
        if let Some(va) = new_page {
            self.page = Some(va);
            self.page_given = true;
        }
        let r = Record { words: CEvent::new(), id: a.event_id, ty: desc.event_type };
        r.put32(0, a.event_id);
        r.put32(OFF_TYPE, desc.event_type);
        r.put64(OFF_HW1, u64::from(a.event_id));
        if let Some(page) = self.page {
            if a.event_page_offset > 0 && u64::from(a.event_slot_index) < EVENT_PAGE_SLOTS {
                r.put64(OFF_HW2, page + u64::from(a.event_slot_index) * 8);
            }
        }
        r.put32(OFF_HW3, a.event_trigger_data);
        r.put64(OFF_SYNC_DATA, desc.sync_user_data);
        r.put64(OFF_SYNC_SIZE, desc.sync_var_size);
        let addr = r.addr();
        self.live.insert(addr, r);
        if is_signaled && !is_system_event(desc.event_type) && set_reset(kfd, true, a.event_id).is_err() {
            let _ = self.destroy(kfd, addr);
            return Err(Status::ERROR);
        }
        Ok(addr)
    }

    /// The KFD id of an event SetEvent / ResetEvent may change (not a system-defined one),
    /// for callers that issue the ioctl with [`set_reset`] after releasing their lock.
    pub fn signal_target(&self, ev: usize) -> KmtResult<u32> {
        let r = self.get(ev)?;
        if is_system_event(r.ty) {
            return Err(Status::ERROR);
        }
        Ok(r.id)
    }

    /// hsaKmtDestroyEvent: a KFD refusal keeps the event (upstream).
    pub fn destroy(&mut self, kfd: &dyn Kfd, ev: usize) -> KmtResult<()> {
        let id = self.get(ev)?.id;
        let mut a = kfd_ioctl_destroy_event_args { event_id: id, pad: 0 };
        ioctl_plain(kfd, &mut a).map_err(|_| Status::ERROR)?;
        self.live.remove(&ev);
        Ok(())
    }

    /// hsaKmtSetEvent (`set`) / hsaKmtResetEvent: system-defined events cannot be set or reset
    /// (ERROR). Allocates nothing.
    pub fn set_reset(&self, kfd: &dyn Kfd, ev: usize, set: bool) -> KmtResult<()> {
        let id = self.signal_target(ev)?;
        set_reset(kfd, set, id)
    }

    /// hsaKmtQueryEventState: upstream only checks the event.
    pub fn query_state(&self, ev: usize) -> KmtResult<()> {
        self.get(ev).map(|_| ())
    }

    /// The address of a live event's slot in the event page (`HWData2`: where a GPU writes the
    /// event id before it raises the interrupt), or 0 when it has none (no event page, or a
    /// KFD that gave no slot).
    pub fn mailbox(&self, ev: usize) -> KmtResult<u64> {
        Ok(self.get(ev)?.words.get64(OFF_HW2))
    }

    /// The KFD id and type of a live event (for a wait).
    pub fn wait_entry(&self, ev: usize) -> KmtResult<(u32, u32)> {
        let r = self.get(ev)?;
        Ok((r.id, r.ty))
    }

    /// hsaKmtWaitOnMultipleEvents(_Ext) for a caller that owns the events for the whole wait
    /// (tools, tests; the C exports release their lock instead and use [`wait`]): checks as the
    /// exports do, then waits, copies exception data, and updates `ages` of signal events.
    /// Up to 16 events allocate nothing.
    pub fn wait_on(
        &self,
        kfd: &dyn Kfd,
        topo: Option<&Topology>,
        evs: &[usize],
        wait_all: bool,
        milliseconds: u32,
        mut ages: Option<&mut [u64]>,
    ) -> KmtResult<()> {
        const STACK: usize = 16;
        if evs.is_empty() {
            return Err(Status::INVALID_PARAMETER);
        }
        if ages.as_ref().is_some_and(|a| a.len() < evs.len()) {
            return Err(Status::INVALID_PARAMETER);
        }
        let mut stack = [(EventData::default(), 0u32); STACK];
        let mut heap;
        let entries: &mut [(EventData, u32)] = if evs.len() <= STACK {
            &mut stack[..evs.len()]
        } else {
            heap = alloc::vec![(EventData::default(), 0u32); evs.len()];
            &mut heap
        };
        for (i, (&ev, (d, ty))) in evs.iter().zip(entries.iter_mut()).enumerate() {
            let r = self.get(ev)?;
            let age = match &ages {
                Some(a) if r.ty == HSA_EVENTTYPE_SIGNAL => a[i],
                _ => 0,
            };
            *d = EventData::new(r.id, age);
            *ty = r.ty;
        }
        let mut data_stack = [EventData::default(); STACK];
        let mut data_heap;
        let data: &mut [EventData] = if evs.len() <= STACK {
            &mut data_stack[..evs.len()]
        } else {
            data_heap = alloc::vec![EventData::default(); evs.len()];
            &mut data_heap
        };
        for (d, (e, _)) in data.iter_mut().zip(entries.iter()) {
            *d = *e;
        }
        let mut result = wait(kfd, data, wait_all, milliseconds);
        if result.is_ok() {
            result = self.finish_wait(topo, evs.iter().copied(), data);
        }
        if let Some(a) = ages.as_mut() {
            for ((age, d), (_, ty)) in a.iter_mut().zip(data.iter()).zip(entries.iter()) {
                if *ty == HSA_EVENTTYPE_SIGNAL {
                    *age = d.last_event_age();
                }
            }
        }
        result
    }

    /// After a successful wait: memory-exception and HW-exception data the KFD returned go into
    /// the `HsaEvent`s (those destroyed meanwhile are skipped). An exception on a GPU the
    /// topology does not know is upstream's error.
    pub fn finish_wait(&self, topo: Option<&Topology>, evs: impl IntoIterator<Item = usize>, data: &[EventData]) -> KmtResult<()> {
        let topo = topo.ok_or(Status::ERROR)?;
        for (ev, d) in evs.into_iter().zip(data) {
            let Some(r) = self.live.get(&ev) else { continue };
            let gpu_id = match r.ty {
                HSA_EVENTTYPE_MEMORY => d.memory_exception().gpu_id,
                HSA_EVENTTYPE_HW_EXCEPTION => d.hw_exception().gpu_id,
                _ => 0,
            };
            if gpu_id == 0 {
                continue;
            }
            let node = topo.node_of_gpu_id(gpu_id).ok_or(Status::INVALID_NODE_UNIT)?;
            apply_exception(r, node, d);
        }
        Ok(())
    }
}

/// The page: 32 KiB of host memory on node 0, mapped to every GPU; (address, KFD handle).
fn alloc_event_page(kfd: &dyn Kfd, topo: &Topology, mem: &mut Memory) -> KmtResult<(u64, u64)> {
    let mut f: HsaMemFlags = FromZeros::new_zeroed();
    f.set_bf_HostAccess(1);
    f.set_bf_ExecuteAccess(1);
    f.set_bf_NonPaged(1);
    f.set_bf_PageSize(HSA_PAGE_SIZE_4KB);
    f.set_bf_Uncached(1);
    if topo.nodes.is_empty() {
        return Err(Status::ERROR);
    }
    let va = mem.alloc(kfd, topo, 0, None, EVENT_PAGE_BYTES, 4096, f, None).map_err(|_| Status::ERROR)?;
    let handle = match mem.map(kfd, va, EVENT_PAGE_BYTES, None).ok().and_then(|_| mem.kfd_handle(va)) {
        Some(h) => h,
        None => {
            release_event_page(kfd, mem, va);
            return Err(Status::ERROR);
        }
    };
    Ok((va, handle))
}

fn release_event_page(kfd: &dyn Kfd, mem: &mut Memory, va: u64) {
    let _ = mem.unmap(kfd, va);
    let _ = mem.free(kfd, va);
}

fn apply_exception(r: &Record, node: u32, d: &EventData) {
    if r.ty == HSA_EVENTTYPE_MEMORY {
        let m = d.memory_exception();
        let mut f: HsaAccessAttributeFailure = FromZeros::new_zeroed();
        f.set_bf_NotPresent(m.failure.NotPresent);
        f.set_bf_ReadOnly(m.failure.ReadOnly);
        f.set_bf_NoExecute(m.failure.NoExecute);
        f.set_bf_Imprecise(m.failure.imprecise);
        f.set_bf_ErrorType(m.ErrorType);
        f.set_bf_ECC(u32::from(m.ErrorType == 1 || m.ErrorType == 2));
        r.put32(OFF_MAF_NODE, node);
        r.put64(OFF_MAF_VA, m.va);
        r.put32(OFF_MAF_FAILURE, f.Value);
        r.put32(OFF_MAF_FLAGS, HSA_EVENTID_MEMORY_FATAL_PROCESS);
    } else {
        let h = d.hw_exception();
        r.put32(OFF_HWX_NODE, node);
        r.put32(OFF_HWX_TYPE, h.reset_type);
        r.put32(OFF_HWX_LOST, h.memory_lost);
        r.put32(OFF_HWX_CAUSE, h.reset_cause);
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    /// C reads an event's words through the address it was given while Rust writes them (a
    /// finished wait copying exception data in, on another thread): the address stays valid
    /// however the record moves, and every 32-bit word C reads is whole.
    #[test]
    fn c_reads_an_event_while_rust_writes_it() {
        let r = Record { words: CEvent::new(), id: 7, ty: HSA_EVENTTYPE_MEMORY };
        r.put32(0, 7);
        let addr = r.addr();
        let mut live = BTreeMap::new();
        live.insert(addr, r);
        let moved: BTreeMap<usize, Record> = core::mem::take(&mut live).into_iter().collect();
        let r = &moved[&addr];
        assert_eq!(r.addr(), addr);
        // What C sees at the address: the event id written before the move.
        // SAFETY: the live object, word-aligned; read atomically as a C reader's aligned load is.
        assert_eq!(unsafe { AtomicU32::from_ptr(addr as *mut u32) }.load(Ordering::Relaxed), 7);
        let va = addr + OFF_MAF_VA;
        std::thread::scope(|s| {
            s.spawn(|| {
                for _ in 0..20_000 {
                    // SAFETY: as above (`VirtualAddress` is two words of the live object).
                    let lo = unsafe { AtomicU32::from_ptr(va as *mut u32) }.load(Ordering::Relaxed);
                    assert_eq!(lo & 0xffff, lo >> 16, "a torn word: {lo:#x}");
                }
            });
            for k in 0..20_000u64 {
                let w = (k & 0xffff) * 0x1_0001;
                r.put64(OFF_MAF_VA, w | w << 32);
            }
        });
        let w = 19_999 * 0x1_0001u64;
        // SAFETY: as above.
        let (lo, hi) = unsafe { (AtomicU32::from_ptr(va as *mut u32), AtomicU32::from_ptr((va + 4) as *mut u32)) };
        assert_eq!((lo.load(Ordering::Relaxed), hi.load(Ordering::Relaxed)), (w as u32, w as u32));
    }
}
