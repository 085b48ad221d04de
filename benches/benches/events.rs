//! SetEvent → WaitOnEvent wake across threads (C exports, built-in model) against the floor: a
//! bare futex ping-pong between the same two threads (std's park/unpark, a futex wait/wake
//! pair on Linux). One iteration is a round trip: this thread wakes the partner and waits to
//! be woken back. Goal (issue 4): events ≤ 1.3× the floor.

use criterion::{criterion_group, criterion_main, Criterion};
use hsakmt_core::abi::hsakmt::*;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use zerocopy::FromZeros;

const INFINITE: u32 = 0xFFFF_FFFF;

#[derive(Clone, Copy)]
struct Ev(*mut HsaEvent);
// SAFETY: an HsaEvent pointer is an opaque handle; the thunk serialises access to the event.
unsafe impl Send for Ev {}

fn create() -> Ev {
    let mut d: HsaEventDescriptor = FromZeros::new_zeroed();
    d.EventType = HSA_EVENTTYPE_SIGNAL;
    let mut e = std::ptr::null_mut();
    // SAFETY: live descriptor and out-pointer.
    assert_eq!(unsafe { hsakmt::hsaKmtCreateEvent(&mut d, false, false, &mut e) }, HSAKMT_STATUS_SUCCESS);
    Ev(e)
}

fn events(c: &mut Criterion) {
    std::env::set_var("HSAKMT_MODEL", "mi210");
    hsakmt::safe::open().expect("open the model");
    hsakmt::safe::acquire_system_properties().unwrap();
    let mut g = c.benchmark_group("event_wake_round_trip");
    g.measurement_time(Duration::from_secs(4));

    // The cost without a wake: set, then a wait that is already satisfied (same thread).
    let solo = create();
    g.bench_function("SetEvent_WaitOnEvent_satisfied", |b| {
        b.iter(|| {
            // SAFETY: thunk event.
            unsafe {
                hsakmt::hsaKmtSetEvent(solo.0);
                hsakmt::hsaKmtWaitOnEvent(solo.0, 0);
            }
        })
    });

    // Events: ping is set here and waited for there; pong the other way.
    let (ping, pong) = (create(), create());
    let stop = Arc::new(AtomicBool::new(false));
    let partner = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let (ping, pong) = (ping, pong);
            loop {
                // SAFETY: thunk events.
                unsafe { hsakmt::hsaKmtWaitOnEvent(ping.0, INFINITE) };
                if stop.load(Ordering::Acquire) {
                    break;
                }
                // SAFETY: thunk events.
                unsafe { hsakmt::hsaKmtSetEvent(pong.0) };
            }
        })
    };
    g.bench_function("SetEvent_WaitOnEvent", |b| {
        b.iter(|| {
            // SAFETY: thunk events.
            unsafe {
                hsakmt::hsaKmtSetEvent(ping.0);
                hsakmt::hsaKmtWaitOnEvent(pong.0, INFINITE);
            }
        })
    });
    stop.store(true, Ordering::Release);
    // SAFETY: thunk event.
    unsafe { hsakmt::hsaKmtSetEvent(ping.0) };
    partner.join().unwrap();

    // The floor: park/unpark with a flag per direction.
    let flags = Arc::new((AtomicU32::new(0), AtomicU32::new(0)));
    let (tx, rx) = mpsc::channel();
    let main = std::thread::current();
    let partner = {
        let flags = flags.clone();
        std::thread::spawn(move || {
            tx.send(std::thread::current()).unwrap();
            loop {
                let mut v = flags.0.swap(0, Ordering::Acquire);
                while v == 0 {
                    std::thread::park();
                    v = flags.0.swap(0, Ordering::Acquire);
                }
                if v == 2 {
                    break;
                }
                flags.1.store(1, Ordering::Release);
                main.unpark();
            }
        })
    };
    let other = rx.recv().unwrap();
    g.bench_function("futex_park_unpark", |b| {
        b.iter_custom(|n| {
            let t = Instant::now();
            for _ in 0..n {
                flags.0.store(1, Ordering::Release);
                other.unpark();
                while flags.1.swap(0, Ordering::Acquire) == 0 {
                    std::thread::park();
                }
            }
            t.elapsed()
        })
    });
    flags.0.store(2, Ordering::Release);
    other.unpark();
    partner.join().unwrap();
    g.finish();
    for e in [ping, pong, solo] {
        // SAFETY: thunk events, destroyed once.
        unsafe { hsakmt::hsaKmtDestroyEvent(e.0) };
    }
}

criterion_group!(benches, events);
criterion_main!(benches);
