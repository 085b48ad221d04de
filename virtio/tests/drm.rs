//! The DRM transport against the model of a virtio-gpu render node, whose device is a host
//! process on the model (there is no VM here): topology, memory, events and an SDMA queue
//! executed by the host's model GPU, all through the `VIRTGPU_*` ioctls; nodes that are not
//! virtio-gpu or lack the capset are refused; a dead host fails calls with a status.

mod support;

use hsakmt_core::abi::generation::Record;
use hsakmt_core::abi::hsakmt::{HsaEvent, HSA_QUEUE_SDMA};
use hsakmt_core::Status;
use hsakmt_virtio::drm::model::ModelRenderNode;
use hsakmt_virtio::drm::{self, DrmTransport};
use hsakmt_virtio::guest::Guest;
use hsakmt_virtio::proto::{self, event as pe, query as pq};
use std::process::Child;
use std::sync::Arc;

/// The host process, killed when the test ends (also on a failed assertion).
struct Host(Child);

impl Host {
    fn kill(&mut self) -> std::io::Result<()> {
        self.0.kill()
    }
    fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        self.0.wait()
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn host(name: &str) -> (Host, std::path::PathBuf) {
    let (c, sock) = support::spawn_host(&format!("drm-{name}"));
    (Host(c), sock)
}

fn guest_over(node: &Arc<ModelRenderNode>) -> Guest {
    let t = DrmTransport::open(Box::new(node.clone())).expect("a virtio-gpu node with the HSAKMT capset");
    Guest::open(Box::new(t)).expect("opens")
}

fn wire_u32(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
}

#[test]
fn topology_memory_events_and_an_sdma_queue_through_the_render_node() {
    let (mut h, sock) = host("run");
    let node = Arc::new(ModelRenderNode::connect(&sock).expect("connects"));
    let g = guest_over(&node);

    // The negotiation, in upstream's order.
    let log = node.issued();
    assert_eq!(
        &log[..9],
        &[
            drm::IOCTL_VERSION,
            drm::IOCTL_VIRTGPU_GETPARAM,
            drm::IOCTL_VIRTGPU_GETPARAM,
            drm::IOCTL_VIRTGPU_GETPARAM,
            drm::IOCTL_VIRTGPU_GETPARAM,
            drm::IOCTL_VIRTGPU_GET_CAPS,
            drm::IOCTL_VIRTGPU_CONTEXT_INIT,
            drm::IOCTL_VIRTGPU_RESOURCE_CREATE_BLOB,
            drm::IOCTL_VIRTGPU_RESOURCE_INFO,
        ]
    );
    assert!(log[9..].starts_with(&[drm::IOCTL_VIRTGPU_MAP, drm::IOCTL_VIRTGPU_EXECBUFFER]), "{log:x?}");
    // The ioctl numbers are the kernel's (DRM_IOWR('d', 0x40 + nr, struct)).
    assert_eq!(drm::IOCTL_VIRTGPU_EXECBUFFER, 0xc040_6442);
    assert_eq!(drm::IOCTL_VIRTGPU_RESOURCE_CREATE_BLOB, 0xc030_644a);
    assert_eq!(drm::IOCTL_VIRTGPU_CONTEXT_INIT, 0xc010_644b);
    assert_eq!(drm::IOCTL_GEM_CLOSE, 0x4008_6409);

    // Topology equal to the direct API's on a model of the same catalogue entry.
    let mut d = support::direct_context("mi300x");
    let sys = d.acquire_system_properties().expect("direct acquire");
    let wire = g.query_u(pq::GET_SYS_PROP, 0).expect("acquire through the node");
    assert_eq!(wire_u32(&wire, 0), sys.NumNodes);
    for n in 0..sys.NumNodes {
        let np = d.node_properties(n).expect("direct node");
        let w = g.query_u(pq::GET_NODE_PROP, n as u64).expect("node through the node");
        let l = proto::WIRE_GENERATION.layout(Record::HsaNodeProperties).expect("a grown record");
        let mut ours = vec![0u8; Record::HsaNodeProperties.newest_size()];
        l.from_old(&w[..l.size], &mut ours);
        // SAFETY: HsaNodeProperties is an ABI struct of integers and arrays.
        let direct = unsafe { std::slice::from_raw_parts(&np as *const _ as *const u8, std::mem::size_of_val(&np)) };
        for s in l.bytes {
            let r = s.new as usize..(s.new + s.len) as usize;
            assert_eq!(&ours[r.clone()], &direct[r], "node {n} bytes at {}", s.new);
        }
    }
    assert_eq!(g.query_u(pq::GET_NODE_PROP, 999).unwrap_err(), Status::INVALID_NODE_UNIT);
    let gpu = (0..sys.NumNodes).find(|n| d.node_properties(*n).unwrap().KFDGpuID != 0).expect("a GPU");

    // Memory: the host's, mapped here (through MAP + mmap of the node) at the host's address.
    let blobs = node.live_blobs();
    let addr = g.alloc_memory(0, 4096, 0).expect("host memory");
    assert_eq!(node.live_blobs(), blobs + 1);
    // SAFETY: our own mapping of the host's blob.
    unsafe { (addr as *mut u64).write_volatile(0x1234_5678_9abc_def0) };
    g.map_memory(addr, 4096, Some(&[gpu])).expect("mapped to the GPU");
    let (info, st) = g.pointer_info(addr).expect("pointer info");
    assert_eq!(st, Status::SUCCESS);
    assert_eq!(u64::from_le_bytes(info[12..20].try_into().unwrap()), addr, "CPUAddress");
    assert_eq!(wire_u32(&info, 40), 1, "NMappedNodes");
    g.unmap_memory(addr).expect("unmapped");
    g.free_memory(addr).expect("freed");
    assert_eq!(node.live_blobs(), blobs, "GEM_CLOSE gave the blob back");
    assert_eq!(g.map_memory(addr, 4096, None).unwrap_err(), Status::INVALID_HANDLE);

    // Events: auto-reset semantics through the host.
    let mut desc = [0u8; pe::DESC_SIZE];
    desc[4..8].copy_from_slice(&gpu.to_le_bytes());
    let ev = g.create_event(&desc, false, false).expect("an event");
    assert_eq!(g.wait(&[ev], true, 10, None).unwrap_err(), Status::WAIT_TIMEOUT);
    g.event_op(ev, pe::SET).expect("set");
    g.wait(&[ev], true, 1000, None).expect("signalled");
    assert_eq!(g.wait(&[ev], true, 10, None).unwrap_err(), Status::WAIT_TIMEOUT, "auto-reset");

    // An SDMA queue: FENCE 0xCAFE to dst, FENCE the event id into its slot, TRAP.
    let ring = g.alloc_memory(0, 4096, 0).expect("ring");
    let dst = g.alloc_memory(0, 4096, 0).expect("dst");
    for a in [ring, dst] {
        g.map_memory(a, 4096, Some(&[gpu])).expect("mapped");
        // SAFETY: our mappings of 4096 bytes.
        unsafe { std::ptr::write_bytes(a as *mut u8, 0, 4096) };
    }
    let (qid, doorbell, wptr, rptr) = g.create_queue(gpu, HSA_QUEUE_SDMA, 100, 0, 0, ring, 4096, 0, (0, 0)).expect("a queue");
    assert!(doorbell != 0 && wptr != 0 && rptr != 0);
    // SAFETY: the guest's vHsaEvent starts with the host's HsaEvent (48 bytes, packed 4).
    let e = unsafe { (ev as *const HsaEvent).read_unaligned() };
    let (id, mb) = (e.EventId, e.EventData.HWData2);
    assert_ne!(mb, 0);
    let pk: [u32; 10] = [5, dst as u32, (dst >> 32) as u32, 0xCAFE, 5, mb as u32, (mb >> 32) as u32, id, 6, id];
    // SAFETY: the ring, the write pointer and the doorbell are live mappings of ours.
    unsafe {
        std::ptr::copy_nonoverlapping(pk.as_ptr(), ring as *mut u32, pk.len());
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
        (wptr as *mut u64).write_volatile(40);
        (doorbell as *mut u64).write_volatile(40);
    }
    g.wait(&[ev], true, 10_000, None).expect("the TRAP raised the event");
    // SAFETY: as above.
    unsafe {
        assert_eq!((dst as *const u32).read_volatile(), 0xCAFE, "the FENCE landed");
        assert_eq!((rptr as *const u64).read_volatile(), 40, "the read pointer advanced");
    }
    g.destroy_queue(qid).expect("destroyed");
    assert_eq!(g.destroy_queue(qid).unwrap_err(), Status::INVALID_PARAMETER);
    g.destroy_event(ev).expect("destroyed");
    assert_eq!(g.event_op(ev, pe::SET).unwrap_err(), Status::INVALID_HANDLE);
    for a in [ring, dst] {
        g.unmap_memory(a).expect("unmapped");
        g.free_memory(a).expect("freed");
    }
    drop(g);
    assert_eq!(node.live_blobs(), 0, "closing the guest closed every GEM handle");
    h.kill().ok();
    h.wait().ok();
}

#[test]
fn nodes_that_are_not_virtio_gpu_or_lack_the_capset_are_refused() {
    let (mut h, sock) = host("refuse");
    let amdgpu = Arc::new(ModelRenderNode::connect(&sock).expect("connects").with_driver(b"amdgpu"));
    assert_eq!(DrmTransport::open(Box::new(amdgpu.clone())).err(), Some(Status::KERNEL_IO_CHANNEL_NOT_OPENED));
    assert_eq!(amdgpu.issued(), [drm::IOCTL_VERSION], "nothing but VERSION is asked of another driver");
    // A virtio-gpu node whose device has other capsets only (venus, drm).
    let venus = Arc::new(ModelRenderNode::connect(&sock).expect("connects").with_capset_ids((1 << 4) | (1 << 6)));
    assert_eq!(DrmTransport::open(Box::new(venus.clone())).err(), Some(Status::KERNEL_IO_CHANNEL_NOT_OPENED));
    assert!(!venus.issued().contains(&drm::IOCTL_VIRTGPU_CONTEXT_INIT), "no context is made on a refused node");
    // Not a DRM device at all; no render node in a directory.
    assert_eq!(drm::open_render_node(std::path::Path::new("/dev/null")).err(), Some(Status::KERNEL_IO_CHANNEL_NOT_OPENED));
    let empty = std::env::temp_dir().join(format!("hsakmt-virtio-drm-{}-empty", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::write(empty.join("renderD128"), b"").unwrap();
    assert_eq!(drm::find_render_node(&empty).err(), Some(Status::KERNEL_IO_CHANNEL_NOT_OPENED));
    // The good node works on the same host.
    let good = Arc::new(ModelRenderNode::connect(&sock).expect("connects"));
    let g = guest_over(&good);
    g.query_u(pq::GET_SYS_PROP, 0).expect("acquired");
    assert!(g.query_u(pq::GET_CLOCK_COUNTERS, 1).is_ok());
    // As a kernel: a second CONTEXT_INIT on the same node is refused.
    let t = DrmTransport::open(Box::new(good.clone()));
    assert_eq!(t.err(), Some(Status::KERNEL_IO_CHANNEL_NOT_OPENED), "CONTEXT_INIT twice is refused");
    drop(g);
    h.kill().ok();
    h.wait().ok();
}

#[test]
fn a_dead_host_fails_calls_through_the_node_with_a_status() {
    let (mut h, sock) = host("dead");
    let node = Arc::new(ModelRenderNode::connect(&sock).expect("connects"));
    let g = guest_over(&node);
    g.query_u(pq::GET_SYS_PROP, 0).expect("acquired");
    let a = g.alloc_memory(0, 4096, 0).expect("memory");
    h.kill().expect("killed");
    h.wait().ok();
    let start = std::time::Instant::now();
    assert_eq!(g.query_u(pq::GET_CLOCK_COUNTERS, 1).unwrap_err(), Status::KERNEL_COMMUNICATION_ERROR);
    assert_eq!(g.alloc_memory(0, 4096, 0).unwrap_err(), Status::KERNEL_COMMUNICATION_ERROR);
    assert_eq!(g.free_memory(a).unwrap_err(), Status::KERNEL_COMMUNICATION_ERROR);
    assert!(start.elapsed() < std::time::Duration::from_secs(10), "no hang");
    // The transport answers the same way to a raw command.
    let t = DrmTransport::open(Box::new(node.clone()));
    assert!(t.is_err());
}
