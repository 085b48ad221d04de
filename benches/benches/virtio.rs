//! The VirtIO transport's cost: a small command (GetClockCounters) and a 4 KiB allocate + map +
//! unmap + free through `vhsaKmt*` over the loopback transport to a host process on the model, next to
//! the same calls made directly (`hsaKmt*` on the model in this process).
//!
//! The host is this executable again, started with `HSAKMT_BENCH_VIRTIO_HOST=<socket>`: the
//! serve loop of `hsakmt-virtio-host`, on the same catalogue entry (mi300x).

use criterion::Criterion;
use hsakmt::virtio::*;
use hsakmt::*;
use hsakmt_core::abi::hsakmt::*;
use std::ffi::c_void;
use std::hint::black_box;
use std::io::BufRead;
use zerocopy::FromZeros;

const HOST_ENV: &str = "HSAKMT_BENCH_VIRTIO_HOST";

/// The host process, killed when the bench ends (also when it panics).
struct Host(std::process::Child);

impl Drop for Host {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

fn first_gpu(props: impl Fn(u32) -> HsaNodeProperties, n: u32) -> u32 {
    (0..n).find(|&i| props(i).KFDGpuID != 0).expect("a GPU node")
}

fn virtio(c: &mut Criterion) {
    std::env::set_var("HSAKMT_MODEL", "mi300x");
    let dir = std::env::temp_dir().join(format!("hsakmt-bench-virtio-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("sock");
    let mut host = Host(
        std::process::Command::new(std::env::current_exe().unwrap())
            .env(HOST_ENV, &sock)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("the host runs"),
    );
    let ready = std::io::BufReader::new(host.0.stdout.take().unwrap()).lines().any(|l| l.map(|l| l == "listening").unwrap_or(false));
    assert!(ready, "the host did not start");
    std::env::set_var("HSAKMT_VIRTIO_SOCKET", &sock);

    // Direct: the model in this process.
    hsakmt::safe::open().expect("open the model");
    let sys = hsakmt::safe::acquire_system_properties().unwrap();
    let gpu = first_gpu(|n| hsakmt::safe::node_properties(n).unwrap(), sys.NumNodes);
    // Through the host.
    assert_eq!(vhsaKmtOpenKFD(), HSAKMT_STATUS_SUCCESS);
    let mut vsys = HsaSystemProperties::new_zeroed();
    // SAFETY: valid out-pointers throughout.
    assert_eq!(unsafe { vhsaKmtAcquireSystemProperties(&mut vsys) }, HSAKMT_STATUS_SUCCESS);
    assert_eq!(vsys.NumNodes, sys.NumNodes);

    let mut g = c.benchmark_group("virtio-loopback");
    g.bench_function("GetClockCounters direct", |b| {
        b.iter(|| {
            let mut cc = HsaClockCounters::new_zeroed();
            // SAFETY: a valid out-pointer.
            assert_eq!(unsafe { hsaKmtGetClockCounters(black_box(gpu), &mut cc) }, HSAKMT_STATUS_SUCCESS);
            black_box(cc.GPUClockCounter)
        })
    });
    g.bench_function("GetClockCounters via virtio", |b| {
        b.iter(|| {
            let mut cc = HsaClockCounters::new_zeroed();
            // SAFETY: a valid out-pointer.
            assert_eq!(unsafe { vhsaKmtGetClockCounters(black_box(gpu), &mut cc) }, HSAKMT_STATUS_SUCCESS);
            black_box(cc.GPUClockCounter)
        })
    });
    let f = HsaMemFlags::new_zeroed();
    let mut nodes = [gpu];
    g.bench_function("alloc+map+unmap+free 4 KiB direct", |b| {
        b.iter(|| {
            let mut p: *mut c_void = std::ptr::null_mut();
            // SAFETY: valid out-pointers; the memory is ours until freed.
            unsafe {
                assert_eq!(hsaKmtAllocMemory(0, 4096, f, &mut p), HSAKMT_STATUS_SUCCESS);
                assert_eq!(hsaKmtMapMemoryToGPUNodes(p, 4096, std::ptr::null_mut(), f, 1, nodes.as_mut_ptr()), HSAKMT_STATUS_SUCCESS);
                assert_eq!(hsaKmtUnmapMemoryToGPU(p), HSAKMT_STATUS_SUCCESS);
                assert_eq!(hsaKmtFreeMemory(p, 4096), HSAKMT_STATUS_SUCCESS);
            }
        })
    });
    g.bench_function("alloc+map+unmap+free 4 KiB via virtio", |b| {
        b.iter(|| {
            let mut p: *mut c_void = std::ptr::null_mut();
            // SAFETY: valid out-pointers; the memory is ours until freed.
            unsafe {
                assert_eq!(vhsaKmtAllocMemory(0, 4096, f, &mut p), HSAKMT_STATUS_SUCCESS);
                assert_eq!(vhsaKmtMapMemoryToGPUNodes(p, 4096, std::ptr::null_mut(), f, 1, nodes.as_mut_ptr()), HSAKMT_STATUS_SUCCESS);
                assert_eq!(vhsaKmtUnmapMemoryToGPU(p), HSAKMT_STATUS_SUCCESS);
                assert_eq!(vhsaKmtFreeMemory(p, 4096), HSAKMT_STATUS_SUCCESS);
            }
        })
    });
    g.finish();
    assert_eq!(vhsaKmtCloseKFD(), HSAKMT_STATUS_SUCCESS);
    hsakmt::safe::close().unwrap();
    drop(host);
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    if let Some(sock) = std::env::var_os(HOST_ENV) {
        std::env::set_var("HSAKMT_MODEL", "mi300x");
        let l = hsakmt_virtio::loopback::listen(std::path::Path::new(&sock)).expect("listens");
        println!("listening");
        hsakmt_virtio::host::serve_model_guests(&l);
    }
    let mut c = Criterion::default().configure_from_args();
    virtio(&mut c);
    c.final_summary();
}
