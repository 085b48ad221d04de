//! The model's event ioctls: ids and the event page, set/reset, auto vs manual reset, waits
//! (poll, timeout, infinite across threads, wait-all / wait-any), ages, exceptions, errors.

use hsakmt_core::abi::kfd::*;
use hsakmt_model::events::{event_data, FIRST_NONSIGNAL_EVENT_ID, KFD_MMAP_TYPE_EVENTS, UNSIGNALED_SLOT};
use hsakmt_model::{Model, ModelConfig};
use std::ffi::c_void;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};
use zerocopy::{FromZeros, IntoBytes};

const EINVAL: i32 = libc::EINVAL;
const EFAULT: i32 = libc::EFAULT;
const ENOSPC: i32 = libc::ENOSPC;
const ENODEV: i32 = libc::ENODEV;
const EIO: i32 = libc::EIO;
const SIGNAL: u32 = KFD_IOC_EVENT_SIGNAL as u32;
const MEMORY: u32 = KFD_IOC_EVENT_MEMORY as u32;
const HW: u32 = KFD_IOC_EVENT_HW_EXCEPTION as u32;
const GTT: u32 = KFD_IOC_ALLOC_MEM_FLAGS_GTT as u32;
const VRAM: u32 = KFD_IOC_ALLOC_MEM_FLAGS_VRAM as u32;
const COMPLETE: u32 = KFD_IOC_WAIT_RESULT_COMPLETE as u32;
const TIMEOUT: u32 = KFD_IOC_WAIT_RESULT_TIMEOUT as u32;
const FAIL: u32 = KFD_IOC_WAIT_RESULT_FAIL as u32;

fn raw<T: IntoBytes + zerocopy::FromBytes>(m: &Model, request: u32, arg: &mut T) -> Result<(), i32> {
    // SAFETY: `arg` is a live, exclusively borrowed argument struct.
    unsafe { m.handle_ioctl(u64::from(request), arg.as_mut_bytes().as_mut_ptr().cast()) }
}

struct Fx {
    m: Arc<Model>,
    gpu: u32,
    _renders: Vec<OwnedFd>,
}

fn setup() -> Fx {
    let m = Arc::new(Model::new(ModelConfig::catalogue("mi210")).unwrap());
    let mut renders = Vec::new();
    for g in m.gpus().to_vec() {
        let fd = m.open_render(g.drm_render_minor).unwrap();
        let mut a = kfd_ioctl_acquire_vm_args { drm_fd: fd.as_raw_fd() as u32, gpu_id: g.gpu_id };
        raw(&m, AMDKFD_IOC_ACQUIRE_VM, &mut a).unwrap();
        renders.push(fd);
    }
    let gpu = m.gpus()[0].gpu_id;
    Fx { m, gpu, _renders: renders }
}

fn alloc(m: &Model, gpu_id: u32, size: u64, flags: u32) -> u64 {
    let mut a = kfd_ioctl_alloc_memory_of_gpu_args { va_addr: 0x7f00_0000_0000, size, handle: 0, mmap_offset: 0, gpu_id, flags };
    raw(m, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a).unwrap();
    a.handle
}

fn create_with(m: &Model, ty: u32, auto_reset: bool, page: u64) -> Result<kfd_ioctl_create_event_args, i32> {
    let mut a = kfd_ioctl_create_event_args::new_zeroed();
    a.event_type = ty;
    a.auto_reset = auto_reset as u32;
    a.event_page_offset = page;
    raw(m, AMDKFD_IOC_CREATE_EVENT, &mut a).map(|()| a)
}

fn create(m: &Model, ty: u32, auto_reset: bool) -> u32 {
    create_with(m, ty, auto_reset, 0).unwrap().event_id
}

fn set(m: &Model, id: u32) -> Result<(), i32> {
    let mut a = kfd_ioctl_set_event_args { event_id: id, pad: 0 };
    raw(m, AMDKFD_IOC_SET_EVENT, &mut a)
}

fn reset(m: &Model, id: u32) -> Result<(), i32> {
    let mut a = kfd_ioctl_reset_event_args { event_id: id, pad: 0 };
    raw(m, AMDKFD_IOC_RESET_EVENT, &mut a)
}

fn destroy(m: &Model, id: u32) -> Result<(), i32> {
    let mut a = kfd_ioctl_destroy_event_args { event_id: id, pad: 0 };
    raw(m, AMDKFD_IOC_DESTROY_EVENT, &mut a)
}

/// WAIT_EVENTS on `data`; (errno result, wait_result).
fn wait_data(m: &Model, data: &mut [kfd_event_data], all: bool, ms: u32) -> (Result<(), i32>, u32) {
    let mut a = kfd_ioctl_wait_events_args {
        events_ptr: data.as_mut_ptr() as u64,
        num_events: data.len() as u32,
        wait_for_all: all as u32,
        timeout: ms,
        wait_result: 99,
    };
    let r = raw(m, AMDKFD_IOC_WAIT_EVENTS, &mut a);
    (r, a.wait_result)
}

fn wait(m: &Model, ids: &[u32], all: bool, ms: u32) -> (Result<(), i32>, u32) {
    let mut data: Vec<kfd_event_data> = ids.iter().map(|&id| event_data(id, 0)).collect();
    wait_data(m, &mut data, all, ms)
}

fn age_of(d: &kfd_event_data) -> u64 {
    // SAFETY: every bit pattern is a valid u64.
    unsafe { d.__anon_union_1.signal_event_data.last_event_age }
}

#[test]
fn signal_events_without_a_page_use_the_kfd_page_of_256_slots() {
    let f = setup();
    let a = create_with(&f.m, SIGNAL, true, 0).unwrap();
    assert_eq!((a.event_id, a.event_trigger_data, a.event_slot_index), (1, 1, 1));
    assert_eq!(a.event_page_offset, KFD_MMAP_TYPE_EVENTS);
    for i in 2..256 {
        assert_eq!(create(&f.m, SIGNAL, true), i);
    }
    assert_eq!(create_with(&f.m, SIGNAL, true, 0).map(|_| ()), Err(ENOSPC));
    // Other types do not use slots.
    let o = create_with(&f.m, MEMORY, false, 0).unwrap();
    assert_eq!(o.event_id, FIRST_NONSIGNAL_EVENT_ID);
    assert_eq!((o.event_page_offset, o.event_trigger_data), (0, FIRST_NONSIGNAL_EVENT_ID));
    assert_eq!(create(&f.m, HW, false), FIRST_NONSIGNAL_EVENT_ID + 1);
    // Freed ids are reused lowest first.
    destroy(&f.m, 7).unwrap();
    destroy(&f.m, 3).unwrap();
    assert_eq!(create(&f.m, SIGNAL, true), 3);
    assert_eq!(create(&f.m, SIGNAL, true), 7);
}

#[test]
fn a_gtt_bo_page_gives_4095_signal_events() {
    let f = setup();
    let h = alloc(&f.m, f.gpu, 32 << 10, GTT);
    let a = create_with(&f.m, SIGNAL, false, h).unwrap();
    assert_eq!((a.event_id, a.event_slot_index, a.event_page_offset), (1, 1, KFD_MMAP_TYPE_EVENTS));
    assert_eq!(f.m.event_slot(4095), Some(UNSIGNALED_SLOT));
    for i in 2..4096 {
        assert_eq!(create(&f.m, SIGNAL, false), i);
    }
    assert_eq!(create_with(&f.m, SIGNAL, false, 0).map(|_| ()), Err(ENOSPC));
    assert_eq!(f.m.live_events(), 4095);
    // The page is set once.
    let h2 = alloc(&f.m, f.gpu, 32 << 10, GTT);
    assert_eq!(create_with(&f.m, SIGNAL, false, h2).map(|_| ()), Err(EINVAL));
}

#[test]
fn event_page_errors() {
    let f = setup();
    let vram = alloc(&f.m, f.gpu, 32 << 10, VRAM);
    assert_eq!(create_with(&f.m, SIGNAL, true, vram).map(|_| ()), Err(EINVAL));
    assert_eq!(create_with(&f.m, SIGNAL, true, (u64::from(f.gpu) << 32) | 999).map(|_| ()), Err(EINVAL));
    assert_eq!(create_with(&f.m, SIGNAL, true, 0xdead << 32).map(|_| ()), Err(EINVAL));
    // A GPU without a VM.
    let m = Model::new(ModelConfig::catalogue("mi210")).unwrap();
    let g = m.gpus()[0].gpu_id;
    assert_eq!(create_with(&m, SIGNAL, true, u64::from(g) << 32).map(|_| ()), Err(ENODEV));
}

#[test]
fn set_reset_and_auto_reset() {
    let f = setup();
    let auto = create(&f.m, SIGNAL, true);
    let manual = create(&f.m, SIGNAL, false);
    assert_eq!(wait(&f.m, &[auto], true, 0), (Ok(()), TIMEOUT));
    set(&f.m, auto).unwrap();
    set(&f.m, manual).unwrap();
    assert_eq!(wait(&f.m, &[auto], true, 0), (Ok(()), COMPLETE));
    assert_eq!(wait(&f.m, &[auto], true, 0), (Ok(()), TIMEOUT), "auto-reset: consumed by the first wait");
    assert_eq!(wait(&f.m, &[manual], true, 0), (Ok(()), COMPLETE));
    assert_eq!(wait(&f.m, &[manual], true, 0), (Ok(()), COMPLETE), "manual reset stays signaled");
    reset(&f.m, manual).unwrap();
    assert_eq!(wait(&f.m, &[manual], true, 0), (Ok(()), TIMEOUT));
}

#[test]
fn ages_make_a_racing_set_visible() {
    let f = setup();
    let e = create(&f.m, SIGNAL, true);
    // Age starts at 1: a waiter that saw 1 waits.
    let mut d = [event_data(e, 1)];
    assert_eq!(wait_data(&f.m, &mut d, true, 0), (Ok(()), TIMEOUT));
    assert_eq!(age_of(&d[0]), 1, "not copied back when not activated");
    set(&f.m, e).unwrap();
    // Consume the signaled state with an age-less wait; the age still tells.
    assert_eq!(wait(&f.m, &[e], true, 0), (Ok(()), COMPLETE));
    let mut d = [event_data(e, 1)];
    assert_eq!(wait_data(&f.m, &mut d, true, 0), (Ok(()), COMPLETE));
    assert_eq!(age_of(&d[0]), 2, "the current age comes back");
    // Now the waiter knows age 2: nothing new.
    assert_eq!(wait_data(&f.m, &mut d, true, 0), (Ok(()), TIMEOUT));
    for _ in 0..3 {
        set(&f.m, e).unwrap();
    }
    reset(&f.m, e).unwrap();
    assert_eq!(wait_data(&f.m, &mut d, true, 0), (Ok(()), COMPLETE), "sets after the last seen age are not lost to a reset");
    assert_eq!(age_of(&d[0]), 5);
}

#[test]
fn wait_any_and_wait_all() {
    let f = setup();
    let ids: Vec<u32> = (0..3).map(|_| create(&f.m, SIGNAL, false)).collect();
    assert_eq!(wait(&f.m, &ids, false, 0), (Ok(()), TIMEOUT));
    set(&f.m, ids[1]).unwrap();
    assert_eq!(wait(&f.m, &ids, false, 0), (Ok(()), COMPLETE));
    assert_eq!(wait(&f.m, &ids, true, 0), (Ok(()), TIMEOUT));
    set(&f.m, ids[0]).unwrap();
    set(&f.m, ids[2]).unwrap();
    assert_eq!(wait(&f.m, &ids, true, 0), (Ok(()), COMPLETE));
    // No events: complete at once (the kernel's condition).
    assert_eq!(wait(&f.m, &[], false, 0), (Ok(()), COMPLETE));
    // More than the stack array.
    let many: Vec<u32> = (0..100).map(|_| create(&f.m, SIGNAL, false)).collect();
    for &e in &many {
        set(&f.m, e).unwrap();
    }
    assert_eq!(wait(&f.m, &many, true, 0), (Ok(()), COMPLETE));
}

#[test]
fn timeouts() {
    let f = setup();
    let e = create(&f.m, SIGNAL, true);
    let t = Instant::now();
    assert_eq!(wait(&f.m, &[e], true, 30), (Ok(()), TIMEOUT));
    let took = t.elapsed();
    assert!(took >= Duration::from_millis(30) && took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn an_infinite_wait_is_woken_by_another_thread_and_consumes_the_event() {
    let f = setup();
    let e = create(&f.m, SIGNAL, true);
    for _ in 0..20 {
        let m = f.m.clone();
        let setter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            set(&m, e).unwrap();
        });
        assert_eq!(wait(&f.m, &[e], true, 0xFFFF_FFFF), (Ok(()), COMPLETE));
        setter.join().unwrap();
        // The set happened while the waiter was queued: consumed, nothing left.
        assert_eq!(wait(&f.m, &[e], true, 0), (Ok(()), TIMEOUT));
    }
}

#[test]
fn destroying_an_event_fails_its_waiters() {
    let f = setup();
    let e = create(&f.m, SIGNAL, true);
    let m = f.m.clone();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        destroy(&m, e).unwrap();
    });
    assert_eq!(wait(&f.m, &[e], true, 10_000), (Err(EIO), FAIL));
    killer.join().unwrap();
    // A new event that takes the id is not the old one.
    assert_eq!(create(&f.m, SIGNAL, true), e);
}

#[test]
fn bad_input() {
    let f = setup();
    let e = create(&f.m, SIGNAL, true);
    let mem = create(&f.m, MEMORY, false);
    for bad in [0, 77, FIRST_NONSIGNAL_EVENT_ID + 5] {
        assert_eq!(set(&f.m, bad), Err(EINVAL));
        assert_eq!(reset(&f.m, bad), Err(EINVAL));
        assert_eq!(destroy(&f.m, bad), Err(EINVAL));
        assert_eq!(wait(&f.m, &[e, bad], false, 0), (Err(EINVAL), FAIL));
    }
    assert_eq!(set(&f.m, mem), Err(EINVAL), "system events are not CPU-signalled");
    assert_eq!(reset(&f.m, mem), Err(EINVAL));
    // Wild and NULL arrays.
    for ptr in [0u64, 8, 0xdead_0000_0000] {
        let mut a = kfd_ioctl_wait_events_args { events_ptr: ptr, num_events: 2, wait_for_all: 1, timeout: 0, wait_result: 0 };
        assert_eq!(raw(&f.m, AMDKFD_IOC_WAIT_EVENTS, &mut a), Err(EFAULT));
        assert_eq!(a.wait_result, FAIL);
    }
    // Too many waiters for the kernel's allocation.
    let mut a = kfd_ioctl_wait_events_args { events_ptr: 8, num_events: u32::MAX, wait_for_all: 1, timeout: 0, wait_result: 0 };
    assert_eq!(raw(&f.m, AMDKFD_IOC_WAIT_EVENTS, &mut a), Err(libc::ENOMEM));
    // A failed wait leaves no waiter queued: a set still signals an auto-reset event.
    set(&f.m, e).unwrap();
    assert_eq!(wait(&f.m, &[e], true, 0), (Ok(()), COMPLETE));
    // A NULL argument.
    // SAFETY: a NULL argument is checked by the model.
    assert_eq!(unsafe { f.m.handle_ioctl(u64::from(AMDKFD_IOC_SET_EVENT), std::ptr::null_mut::<c_void>()) }, Err(EFAULT));
    destroy(&f.m, e).unwrap();
    assert_eq!(destroy(&f.m, e), Err(EINVAL), "destroyed twice");
}

#[test]
fn gpu_signal_and_exceptions() {
    let f = setup();
    let h = alloc(&f.m, f.gpu, 32 << 10, GTT);
    let e = create_with(&f.m, SIGNAL, true, h).unwrap().event_id;
    assert!(f.m.write_event_slot(e, 0));
    assert!(f.m.signal_event(e));
    assert_eq!(f.m.event_slot(e), Some(UNSIGNALED_SLOT), "the interrupt acknowledges the slot");
    assert_eq!(wait(&f.m, &[e], true, 0), (Ok(()), COMPLETE));
    assert!(!f.m.signal_event(12345));

    let mem = create(&f.m, MEMORY, false);
    let hw = create(&f.m, HW, false);
    assert!(!f.m.signal_event(mem));
    let mut x = kfd_hsa_memory_exception_data::new_zeroed();
    x.va = 0x1234_5000;
    x.gpu_id = f.gpu;
    x.failure.NotPresent = 1;
    assert_eq!(f.m.signal_memory_exception(x), 1);
    let mut d = [event_data(mem, 0)];
    assert_eq!(wait_data(&f.m, &mut d, true, 0), (Ok(()), COMPLETE));
    // SAFETY: plain data.
    let got = unsafe { d[0].__anon_union_1.memory_exception_data };
    assert_eq!((got.va, got.gpu_id, got.failure.NotPresent), (0x1234_5000, f.gpu, 1));
    let hx = kfd_hsa_hw_exception_data { reset_type: 1, reset_cause: 2, memory_lost: 1, gpu_id: f.gpu };
    assert_eq!(f.m.signal_hw_exception(hx), 1);
    let mut d = [event_data(hw, 0)];
    assert_eq!(wait_data(&f.m, &mut d, false, 100), (Ok(()), COMPLETE));
    // SAFETY: plain data.
    let got = unsafe { d[0].__anon_union_1.hw_exception_data };
    assert_eq!((got.reset_cause, got.gpu_id), (2, f.gpu));
}

#[test]
fn a_released_process_has_no_events() {
    let f = setup();
    let e = create(&f.m, SIGNAL, true);
    assert_eq!(f.m.live_events(), 1);
    f.m.release_process();
    assert_eq!(f.m.live_events(), 0);
    assert_eq!(set(&f.m, e), Err(EINVAL));
}

#[test]
fn ages_need_kfd_1_14() {
    let m = Model::new(ModelConfig::catalogue("mi210").with_kfd_version(1, 13)).unwrap();
    let e = create(&m, SIGNAL, true);
    set(&m, e).unwrap();
    assert_eq!(wait(&m, &[e], true, 0), (Ok(()), COMPLETE));
    // Age 1 is stale (the event is at 2), but a 1.13 KFD ignores ages.
    let mut d = [event_data(e, 1)];
    assert_eq!(wait_data(&m, &mut d, true, 0), (Ok(()), TIMEOUT));
    assert_eq!(age_of(&d[0]), 1);
}

/// `Kfd::wait_events` (the port's typed WAIT_EVENTS, which reads the caller's slice directly)
/// answers as the ioctl does: results, ages and exception data copied back, errnos.
#[test]
fn the_in_process_wait_follows_the_ioctl_rules() {
    use hsakmt_core::event::EventData;
    use hsakmt_core::{Errno, Kfd};
    let f = setup();
    let port: &dyn Kfd = &*f.m;
    let e = create(&f.m, SIGNAL, true);
    let other = create(&f.m, SIGNAL, true);
    let mut d = [EventData::new(e, 1)];
    assert_eq!(port.wait_events(&mut d, true, 0), Ok(TIMEOUT));
    assert_eq!(d[0].last_event_age(), 1, "not copied back when not activated");
    set(&f.m, e).unwrap();
    assert_eq!(port.wait_events(&mut d, true, 0), Ok(COMPLETE));
    assert_eq!(d[0].last_event_age(), 2, "the current age comes back");
    assert_eq!(port.wait_events(&mut [EventData::new(e, 0)], true, 0), Ok(TIMEOUT), "auto reset: consumed");
    // Wait-any vs wait-all on two events, one set.
    set(&f.m, other).unwrap();
    assert_eq!(port.wait_events(&mut [EventData::new(e, 0), EventData::new(other, 0)], true, 10), Ok(TIMEOUT));
    set(&f.m, other).unwrap();
    assert_eq!(port.wait_events(&mut [EventData::new(e, 0), EventData::new(other, 0)], false, 0), Ok(COMPLETE));
    // A set from another thread wakes an infinite wait.
    let m = f.m.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        set(&m, e).unwrap();
    });
    assert_eq!(port.wait_events(&mut [EventData::new(e, 0)], true, 0xFFFF_FFFF), Ok(COMPLETE));
    t.join().unwrap();
    // Exception data is copied into the slice.
    let mem = create(&f.m, MEMORY, false);
    let mut x = kfd_hsa_memory_exception_data::new_zeroed();
    x.va = 0x4321_0000;
    x.gpu_id = f.gpu;
    assert_eq!(f.m.signal_memory_exception(x), 1);
    let mut d = [EventData::new(mem, 0)];
    assert_eq!(port.wait_events(&mut d, true, 0), Ok(COMPLETE));
    assert_eq!((d[0].payload[2], d[0].payload[3] as u32), (0x4321_0000, f.gpu), "va and gpu_id after the 16-byte failure");
    // An unknown id is EINVAL, a destroyed one fails the wait (EIO), as the ioctl answers.
    assert_eq!(port.wait_events(&mut [EventData::new(0x3fff_0000, 0)], true, 0), Err(Errno(EINVAL)));
    let gone = create(&f.m, SIGNAL, true);
    let m = f.m.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        destroy(&m, gone).unwrap();
    });
    assert_eq!(port.wait_events(&mut [EventData::new(gone, 0)], true, 0xFFFF_FFFF), Err(Errno(EIO)));
    t.join().unwrap();
}
