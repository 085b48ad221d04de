//! The thunk's cost per call (issue 9's table), through the C exports, twice: on the built-in
//! model (`<row>/model`) and on the null port (`<row>/null`: every ioctl answered at once with
//! canned data, so what is left is the thunk's own cost). A 2-node system (RX 7900 XTX) for
//! the calls, and Release+AcquireSystemProperties on the 34-node MI308X-like system.
//!
//! `bare ioctl GET_CLOCK_COUNTERS` is the port alone (the model's `Kfd::ioctl`, or the null
//! port's), the floor GetClockCounters is compared with.

use criterion::{criterion_group, criterion_main, Criterion};
use hsakmt::*;
use hsakmt_benches::null_port::NullPort;
use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::abi::kfd::*;
use hsakmt_core::Kfd;
use std::ffi::c_void;
use std::hint::black_box;
use zerocopy::{FromZeros, IntoBytes};

const OK: HSAKMT_STATUS = HSAKMT_STATUS_SUCCESS;

#[derive(Clone, Copy, PartialEq)]
enum Port {
    Model,
    Null,
}

impl Port {
    fn name(self) -> &'static str {
        match self {
            Port::Model => "model",
            Port::Null => "null",
        }
    }
}

/// Open the thunk on `port` over catalogue entry `system` and take the snapshot.
fn open(port: Port, system: &str) -> HsaSystemProperties {
    std::env::set_var("HSAKMT_MODEL", system);
    hsakmt::global::set_port_override(match port {
        Port::Model => None,
        Port::Null => Some(NullPort::from_env),
    });
    hsakmt::safe::open().expect("open");
    hsakmt::safe::acquire_system_properties().expect("acquire")
}

fn close() {
    hsakmt::safe::close().expect("close");
    hsakmt::global::set_port_override(None);
}

fn signal_event() -> *mut HsaEvent {
    let mut d = HsaEventDescriptor::new_zeroed();
    d.EventType = HSA_EVENTTYPE_SIGNAL;
    let mut e = std::ptr::null_mut();
    // SAFETY: live descriptor and out-pointer.
    assert_eq!(unsafe { hsaKmtCreateEvent(&mut d, false, false, &mut e) }, OK);
    e
}

fn vram(node: u32, size: u64) -> *mut c_void {
    let mut f = HsaMemFlags::new_zeroed();
    f.set_bf_NonPaged(1);
    f.set_bf_HostAccess(1);
    f.set_bf_CoarseGrain(1);
    let mut p = std::ptr::null_mut();
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { hsaKmtAllocMemory(node, size, f, &mut p) }, OK);
    p
}

fn calls(c: &mut Criterion, port: Port) {
    let p = port.name();
    let sys = open(port, "rx7900xtx");
    let gpu = sys.NumNodes - 1;
    let gpu_id = hsakmt::safe::node_properties(gpu).unwrap().KFDGpuID;
    let mut g = c.benchmark_group("percall");

    g.bench_function(format!("GetVersion/{p}"), |b| {
        let mut v = HsaVersionInfo::new_zeroed();
        // SAFETY: a valid out-pointer.
        b.iter(|| unsafe { hsaKmtGetVersion(black_box(&mut v)) })
    });

    let ev = signal_event();
    g.bench_function(format!("QueryEventState/{p}"), |b| {
        // SAFETY: a live event of this thunk.
        b.iter(|| unsafe { hsaKmtQueryEventState(black_box(ev)) })
    });

    g.bench_function(format!("GetNodeProperties (_abi1, newest layout)/{p}"), |b| {
        let mut n = HsaNodeProperties::new_zeroed();
        // SAFETY: a valid out-pointer.
        b.iter(|| unsafe { hsaKmtGetNodeProperties(black_box(gpu), black_box(&mut n)) })
    });
    g.bench_function(format!("GetNodeProperties (plain symbol, detected generation)/{p}"), |b| {
        let mut n = HsaNodeProperties::new_zeroed();
        // SAFETY: a valid out-pointer, larger than every generation's struct.
        b.iter(|| unsafe { plain_hsaKmtGetNodeProperties(black_box(gpu), black_box(&mut n)) })
    });

    g.bench_function(format!("CreateEvent+DestroyEvent/{p}"), |b| {
        b.iter(|| {
            let e = signal_event();
            // SAFETY: the event just created.
            unsafe { hsaKmtDestroyEvent(e) }
        })
    });

    g.bench_function(format!("SetEvent+WaitOnEvent (satisfied)/{p}"), |b| {
        // SAFETY: a live event of this thunk.
        b.iter(|| unsafe {
            hsaKmtSetEvent(ev);
            hsaKmtWaitOnEvent(ev, 0)
        })
    });

    g.bench_function(format!("GetClockCounters/{p}"), |b| {
        let mut cc = HsaClockCounters::new_zeroed();
        // SAFETY: a valid out-pointer.
        b.iter(|| unsafe { hsaKmtGetClockCounters(black_box(gpu), black_box(&mut cc)) })
    });
    let bare: Box<dyn Kfd> = match port {
        Port::Model => Box::new(ModelPort(hsakmt::global::builtin_model_instance().expect("the built-in model"))),
        Port::Null => Box::new(NullPort::new("rx7900xtx")),
    };
    g.bench_function(format!("bare ioctl GET_CLOCK_COUNTERS/{p}"), |b| {
        b.iter(|| {
            let mut a = kfd_ioctl_get_clock_counters_args::new_zeroed();
            a.gpu_id = gpu_id;
            // SAFETY: GET_CLOCK_COUNTERS carries no address.
            unsafe { bare.ioctl(AMDKFD_IOC_GET_CLOCK_COUNTERS, a.as_mut_bytes()) }.unwrap();
            black_box(a.gpu_clock_counter)
        })
    });

    let live: Vec<*mut c_void> = (0..10_000).map(|i| vram(gpu, 4096 * (1 + i % 4))).collect();
    let mut i = 0usize;
    g.bench_function(format!("QueryPointerInfo (10k live BOs)/{p}"), |b| {
        let mut info = HsaPointerInfo::new_zeroed();
        b.iter(|| {
            i = (i + 7919) % live.len();
            // SAFETY: a valid out-pointer.
            unsafe { hsaKmtQueryPointerInfo((live[i] as usize + 100) as *const c_void, &mut info) }
        })
    });
    g.finish();
    for q in live {
        // SAFETY: our allocations.
        assert_eq!(unsafe { hsaKmtFreeMemory(q, 0) }, OK);
    }
    // SAFETY: our event.
    assert_eq!(unsafe { hsaKmtDestroyEvent(ev) }, OK);
    close();
}

/// The model as a bare port (what the thunk's `SharedModel` forwards to).
struct ModelPort(std::sync::Arc<hsakmt_model::Model>);

impl Kfd for ModelPort {
    unsafe fn ioctl(&self, request: u32, arg: &mut [u8]) -> Result<(), hsakmt_core::Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { self.0.ioctl(request, arg) }
    }
    unsafe fn mmap(&self, _: Option<usize>, _: usize, _: u32, _: bool, _: u64) -> Result<usize, hsakmt_core::Errno> {
        unimplemented!()
    }
    unsafe fn munmap(&self, _: usize, _: usize) -> Result<(), hsakmt_core::Errno> {
        unimplemented!()
    }
    unsafe fn map_anonymous(&self, _: Option<usize>, _: usize, _: usize, _: u32) -> Result<usize, hsakmt_core::Errno> {
        unimplemented!()
    }
    unsafe fn release_va(&self, _: usize, _: usize) -> Result<(), hsakmt_core::Errno> {
        unimplemented!()
    }
    fn open_render_node(&self, _: u32) -> Result<i32, hsakmt_core::Errno> {
        unimplemented!()
    }
    fn close_render_node(&self, _: i32) {}
    fn read_file(&self, _: hsakmt_core::SysTree, _: &str, _: &mut [u8]) -> Result<usize, hsakmt_core::Errno> {
        unimplemented!()
    }
    fn count_numbered_entries(&self, _: hsakmt_core::SysTree, _: &str) -> Result<u32, hsakmt_core::Errno> {
        unimplemented!()
    }
    fn process_id(&self) -> u32 {
        hsakmt_linux::pid()
    }
    fn backend(&self) -> hsakmt_core::Backend {
        hsakmt_core::Backend::BuiltinModel
    }
}

/// Release+AcquireSystemProperties: the whole snapshot taken again (topology files, apertures,
/// VMs, the FMM) on a 34-node MI308X-like system.
fn snapshot(c: &mut Criterion, port: Port) {
    let system = "mi308x-cpx";
    let sys = open(port, system);
    assert_eq!(sys.NumNodes, 34);
    let mut g = c.benchmark_group("percall");
    g.sample_size(20);
    g.bench_function(format!("ReleaseSystemProperties+AcquireSystemProperties ({system}, 34 nodes)/{}", port.name()), |b| {
        b.iter(|| {
            hsakmt::safe::release_system_properties().unwrap();
            hsakmt::safe::acquire_system_properties().unwrap().NumNodes
        })
    });
    g.finish();
    close();
}

fn percall(c: &mut Criterion) {
    for port in [Port::Model, Port::Null] {
        calls(c, port);
        snapshot(c, port);
    }
}

criterion_group!(benches, percall);
criterion_main!(benches);
