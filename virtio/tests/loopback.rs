//! Guest and host in different processes over the loopback transport, on the model.

mod support;

use hsakmt_core::abi::generation::Record;
use hsakmt_core::Status;
use hsakmt_virtio::guest::{Guest, Loopback, Transport};
use hsakmt_virtio::host::ModelHost;
use hsakmt_virtio::proto::{self, ccmd, query as pq};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use support::{socket_path as scratch, spawn_host as host};

fn new_wire_to_ours(r: Record, wire: &[u8]) -> Vec<u8> {
    let mut ours = vec![0u8; r.newest_size()];
    match proto::WIRE_GENERATION.layout(r) {
        Some(l) => l.from_old(&wire[..l.size], &mut ours),
        None => {
            let n = ours.len();
            ours.copy_from_slice(&wire[..n])
        }
    }
    ours
}

#[test]
fn topology_and_memory_through_the_host_match_the_direct_api() {
    let (mut h, sock) = host("topo");
    let g = Guest::open(Box::new(Loopback::connect(&sock).expect("connects"))).expect("opens");
    let mut d = support::direct_context("mi300x");
    let sys = d.acquire_system_properties().expect("direct acquire");
    let wire = g.query_u(pq::GET_SYS_PROP, 0).expect("acquire through the host");
    assert_eq!(u32::from_le_bytes(wire[0..4].try_into().unwrap()), sys.NumNodes);
    assert!(sys.NumNodes >= 2);
    for n in 0..sys.NumNodes {
        let np = d.node_properties(n).expect("direct node");
        let w = g.query_u(pq::GET_NODE_PROP, n as u64).expect("node through the host");
        let ours = new_wire_to_ours(Record::HsaNodeProperties, &w);
        // SAFETY: HsaNodeProperties is an ABI struct of integers and arrays.
        let direct = unsafe { std::slice::from_raw_parts(&np as *const _ as *const u8, std::mem::size_of_val(&np)) };
        let wire_fields = proto::WIRE_GENERATION.layout(Record::HsaNodeProperties).map(|l| l.bytes.to_vec());
        // Every member the wire carries is the direct API's value.
        for s in wire_fields.unwrap_or_default() {
            let r = s.new as usize..(s.new + s.len) as usize;
            assert_eq!(&ours[r.clone()], &direct[r], "node {n} bytes at {}", s.new);
        }
        let banks = np.NumMemoryBanks;
        let mut mine = vec![<hsakmt_core::abi::hsakmt::HsaMemoryProperties as zerocopy::FromZeros>::new_zeroed(); banks as usize];
        d.node_memory_properties(n, &mut mine).expect("direct banks");
        let w = g.query_array(pq::GET_NOD_MEM_PROP, n, banks, 0, banks, 32).expect("banks through the host");
        // SAFETY: as above.
        let mb = unsafe { std::slice::from_raw_parts(mine.as_ptr() as *const u8, 32 * banks as usize) };
        for b in 0..banks as usize {
            // Everything but VirtualBaseAddress (offset 24), an address of the host process's.
            assert_eq!(&w[b * 32..b * 32 + 24], &mb[b * 32..b * 32 + 24], "node {n} memory bank {b}");
        }
    }
    // A node that does not exist: the thunk's status, through the wire.
    assert_eq!(g.query_u(pq::GET_NODE_PROP, 999).unwrap_err(), Status::INVALID_NODE_UNIT);
    assert_eq!(g.query_u(pq::GET_VER, 0).unwrap()[0..8], [1, 0, 0, 0, d.version().KernelInterfaceMinorVersion as u8, 0, 0, 0]);

    // Memory: a 4 KiB GTT-like system allocation is the host's, mapped here at its address.
    let gpu = (0..sys.NumNodes).find(|n| d.node_properties(*n).unwrap().KFDGpuID != 0).expect("a GPU");
    let addr = g.alloc_memory(0, 4096, 0).expect("host memory");
    // SAFETY: our own mapping of the host's blob.
    unsafe { (addr as *mut u64).write_volatile(0x1234_5678_9abc_def0) };
    g.map_memory(addr, 4096, Some(&[gpu])).expect("mapped to the GPU");
    let (info, st) = g.pointer_info(addr).expect("pointer info");
    assert_eq!(st, Status::SUCCESS);
    assert_eq!(u64::from_le_bytes(info[12..20].try_into().unwrap()), addr, "CPUAddress");
    assert_eq!(u64::from_le_bytes(info[28..36].try_into().unwrap()), 4096, "SizeInBytes");
    assert_eq!(u32::from_le_bytes(info[40..44].try_into().unwrap()), 1, "NMappedNodes");
    let mapped = u64::from_le_bytes(info[52..60].try_into().unwrap()) as *const u32;
    // SAFETY: the guest's copy of the mapped nodes, alive while the memory is.
    assert_eq!(unsafe { mapped.read() }, gpu);
    g.unmap_memory(addr).expect("unmapped");
    let (_, st) = g.pointer_info(addr + (1 << 40)).expect("answered");
    assert_eq!(st, Status::ERROR, "an address the host never gave");
    g.free_memory(addr).expect("freed");
    assert_eq!(g.map_memory(addr, 4096, None).unwrap_err(), Status::INVALID_HANDLE, "freed memory is not the guest's any more");
    drop(g);
    h.kill().ok();
    h.wait().ok();
}

#[test]
fn malformed_commands_get_statuses_and_the_host_keeps_serving() {
    let (mut h, sock) = host("bad");
    let t = Loopback::connect(&sock).expect("connects");
    let other = Guest::open(Box::new(Loopback::connect(&sock).expect("second guest"))).expect("opens");
    let g = Guest::open(Box::new(t)).expect("opens");
    other.query_u(pq::GET_SYS_PROP, 0).expect("acquired");
    g.query_u(pq::GET_SYS_PROP, 0).expect("acquired");
    // Unknown command, unknown query type, truncated query: statuses, not silence.
    let mut bad = proto::command(99, 16);
    assert_eq!(g.exec(&mut bad, 8).unwrap_err(), Status::INVALID_PARAMETER);
    let mut q = proto::command(ccmd::QUERY_INFO, pq::REQ_SIZE);
    proto::put_u32(&mut q, pq::TYPE, 1000);
    assert_eq!(g.exec(&mut q, pq::RSP_SIZE).unwrap_err(), Status::INVALID_PARAMETER);
    let mut short = proto::command(ccmd::QUERY_INFO, 64);
    assert_eq!(g.exec(&mut short, pq::RSP_SIZE).unwrap_err(), Status::INVALID_PARAMETER);
    // A header whose length runs past the buffer: the host counts it and the command never
    // completes (its seqno is set, its response not written).
    let mut lie = proto::command(ccmd::NOP, 16);
    proto::put_u32(&mut lie, proto::REQ_LEN, 4096);
    let r = g.exec(&mut lie, 8);
    assert!(r.is_err(), "{r:?}");
    // Objects that are not this guest's.
    assert_eq!(g.map_memory(0x7000_0000_0000, 4096, None).unwrap_err(), Status::INVALID_HANDLE);
    assert_eq!(g.event_op(0xdead_beef, hsakmt_virtio::proto::event::SET).unwrap_err(), Status::INVALID_HANDLE);
    let a = other.alloc_memory(0, 4096, 0).expect("the other guest's memory");
    assert_eq!(g.map_memory(a, 4096, None).unwrap_err(), Status::INVALID_HANDLE, "another guest's memory");
    // More than the host allows.
    assert_eq!(g.alloc_memory(0, 64 << 30, 0).unwrap_err(), Status::NO_MEMORY);
    // Everyone is still served.
    assert!(g.query_u(pq::GET_CLOCK_COUNTERS, 1).is_ok());
    other.free_memory(a).expect("the other guest still works");
    drop(g);
    drop(other);
    h.kill().ok();
    h.wait().ok();
}

#[test]
fn a_dead_host_fails_calls_with_a_status() {
    let (mut h, sock) = host("dead");
    let g = Guest::open(Box::new(Loopback::connect(&sock).expect("connects"))).expect("opens");
    g.query_u(pq::GET_SYS_PROP, 0).expect("acquired");
    assert!(g.query_u(pq::GET_CLOCK_COUNTERS, 1).is_ok());
    h.kill().expect("killed");
    h.wait().ok();
    assert_eq!(g.query_u(pq::GET_CLOCK_COUNTERS, 1).unwrap_err(), Status::KERNEL_COMMUNICATION_ERROR);
    assert_eq!(g.alloc_memory(0, 4096, 0).unwrap_err(), Status::KERNEL_COMMUNICATION_ERROR);
}

/// Not a test by itself: the guest process of `a_killed_guest_has_everything_freed`.
#[test]
#[ignore]
fn guest_child() {
    let Ok(sock) = std::env::var("VIRTIO_GUEST_SOCKET") else { return };
    let g = Guest::open(Box::new(Loopback::connect(std::path::Path::new(&sock)).expect("connects"))).expect("opens");
    g.query_u(pq::GET_SYS_PROP, 0).expect("acquired");
    for _ in 0..3 {
        g.alloc_memory(0, 8192, 0).expect("memory");
    }
    let desc = [0u8; 24]; // HSA_EVENTTYPE_SIGNAL on node 0
    g.create_event(&desc, false, false).expect("an event");
    println!("ready");
    std::thread::sleep(std::time::Duration::from_secs(60));
}

#[test]
fn a_killed_guest_has_everything_freed() {
    let sock = scratch("killed");
    let listener = hsakmt_virtio::loopback::listen(&sock).expect("listens");
    let server = std::thread::spawn(move || {
        let conn = hsakmt_virtio::loopback::accept(&listener).expect("the guest connects");
        let mut h = ModelHost::open().expect("a model host");
        h.serve(&conn);
        h.close()
    });
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "guest_child", "--ignored", "--nocapture"])
        .env("VIRTIO_GUEST_SOCKET", &sock)
        .env("HSAKMT_MODEL", "mi300x")
        .stdout(Stdio::piped())
        .spawn()
        .expect("the guest runs");
    let out = BufReader::new(child.stdout.take().unwrap());
    for l in out.lines() {
        if l.expect("reads").contains("ready") {
            break;
        }
    }
    child.kill().expect("killed mid-work");
    child.wait().ok();
    let (t, left) = server.join().expect("the host thread ends");
    assert_eq!((t.memory, t.events), (3, 1), "what the guest held");
    assert_eq!(left, 0, "the model has no BO of the session left");
    // `Transport` is the seam both transports implement.
    fn _is_transport<T: Transport>() {}
    _is_transport::<Loopback>();
}
