//! Snapshot behaviour on bad, changing or unusual input: truncated and garbled files, missing
//! directories, generation_id changes, unknown keys, HSA_OVERRIDE_GFX_VERSION, HSA_USE_SVM,
//! the CPU cache fallback and CPU names from /proc/cpuinfo.

mod support;

use hsakmt_core::topology::{parse_gfx_override, snapshot, GfxOverride, TopologyConfig, MAX_SNAPSHOT_ATTEMPTS};
use hsakmt_core::{Backend, Errno, Status};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use support::*;

fn err(kfd: &MemKfd) -> hsakmt_core::topology::TopologyError {
    match snapshot(kfd, &TopologyConfig::default()) {
        Ok(_) => panic!("snapshot unexpectedly succeeded"),
        Err(e) => e,
    }
}

#[test]
fn empty_node_properties_is_an_error() {
    let kfd = MemKfd::fixture(MI25);
    kfd.set("nodes/1/properties", b"");
    let e = err(&kfd);
    assert_eq!(e.status, Status::ERROR);
    assert_eq!(e.path.as_str(), "nodes/1/properties");
}

#[test]
fn garbled_node_properties_is_an_error() {
    for bad in [&b"\xff\xfe\x00garbage"[..], b"cpu_cores_count x\nsimd_count 0\n", b"\n\n   \n", b"42 43 44"] {
        let kfd = MemKfd::fixture(MI25);
        kfd.set("nodes/0/properties", bad);
        let e = err(&kfd);
        assert_eq!(e.status, Status::ERROR, "{bad:?}");
        assert_eq!(e.path.as_str(), "nodes/0/properties");
    }
}

#[test]
fn truncated_node_properties_is_an_error() {
    // Cut the GPU node's file after its first two lines: mem_banks_count and the rest are gone.
    let kfd = MemKfd::fixture(MI25);
    kfd.set("nodes/1/properties", b"cpu_cores_count 0\nsimd_count 256\nmem_ba");
    let e = err(&kfd);
    assert_eq!(e.status, Status::ERROR);
    assert_eq!(e.path.as_str(), "nodes/1/properties");
}

#[test]
fn trailing_garbage_after_complete_properties_is_ignored() {
    // Upstream stops at the first line that does not scan; everything before it counts.
    let kfd = MemKfd::fixture(MI25);
    let mut p = kfd.get("nodes/1/properties");
    p.extend_from_slice(b"this line is not a pair\nsimd_count 1\n");
    kfd.set("nodes/1/properties", &p);
    let t = snapshot(&kfd, &TopologyConfig::default()).unwrap();
    assert_eq!({ t.nodes[1].props.NumFComputeCores }, 256);
}

#[test]
fn unknown_keys_are_ignored() {
    let kfd = MemKfd::fixture(MI25);
    let mut p = b"some_future_key 77\nx 1\n".to_vec();
    p.extend_from_slice(&kfd.get("nodes/1/properties"));
    kfd.set("nodes/1/properties", &p);
    let mut m = kfd.get("nodes/1/mem_banks/0/properties");
    m.extend_from_slice(b"new_bank_key 5\n");
    kfd.set("nodes/1/mem_banks/0/properties", &m);
    let t = snapshot(&kfd, &TopologyConfig::default()).unwrap();
    let p = t.nodes[1].props;
    assert_eq!({ p.NumFComputeCores }, 256);
    assert_eq!({ p.DeviceId }, 0x6860);
    assert_eq!({ t.nodes[1].mem_banks[0].Width }, 2048);
}

#[test]
fn garbled_memory_bank_is_an_error() {
    let kfd = MemKfd::fixture(MI25);
    kfd.set("nodes/1/mem_banks/0/properties", b"heap_type one\n");
    let e = err(&kfd);
    assert_eq!(e.status, Status::ERROR);
    assert_eq!(e.path.as_str(), "nodes/1/mem_banks/0/properties");
}

#[test]
fn truncated_cache_is_an_error() {
    let kfd = MemKfd::fixture(MI25);
    kfd.set("nodes/1/caches/5/properties", b"processor_id_low 2147487744\nlev");
    let e = err(&kfd);
    assert_eq!(e.status, Status::ERROR);
    assert_eq!(e.path.as_str(), "nodes/1/caches/5/properties");
}

#[test]
fn missing_file_inside_existing_directory_is_an_error() {
    let kfd = MemKfd::fixture(MI25);
    kfd.remove("nodes/1/caches/95");
    let e = err(&kfd);
    assert_eq!(e.status, Status::ERROR);
    assert_eq!(e.path.as_str(), "nodes/1/caches/95/properties");
}

#[test]
fn missing_caches_dir_means_no_caches() {
    let kfd = MemKfd::fixture(MI25);
    kfd.remove("nodes/1/caches");
    let t = snapshot(&kfd, &TopologyConfig::default()).unwrap();
    assert_eq!(t.nodes[1].caches.len(), 0);
    assert_eq!({ t.nodes[1].props.NumCaches }, 0);
}

#[test]
fn missing_nodes_dir_is_an_error() {
    let kfd = MemKfd::fixture(MI25);
    kfd.remove("nodes");
    let e = err(&kfd);
    assert_eq!(e.status, Status::ERROR);
    assert_eq!(e.path.as_str(), "nodes");
}

#[test]
fn missing_generation_or_system_properties_is_an_error() {
    for f in ["generation_id", "system_properties"] {
        let kfd = MemKfd::fixture(MI25);
        kfd.remove(f);
        let e = err(&kfd);
        assert_eq!((e.status, e.path.as_str()), (Status::ERROR, f));
    }
    let kfd = MemKfd::fixture(MI25);
    kfd.set("generation_id", b"two\n");
    assert_eq!(err(&kfd).status, Status::ERROR);
}

#[test]
fn missing_or_bad_gpu_id_is_an_error() {
    let kfd = MemKfd::fixture(MI25);
    kfd.remove("nodes/1/gpu_id");
    assert_eq!(err(&kfd).path.as_str(), "nodes/1/gpu_id");
    let kfd = MemKfd::fixture(MI25);
    kfd.set("nodes/1/gpu_id", b"");
    assert_eq!(err(&kfd).status, Status::ERROR);
}

#[test]
fn gpu_without_render_minor_is_an_error() {
    let kfd = MemKfd::fixture(MI25);
    let p = String::from_utf8(kfd.get("nodes/1/properties")).unwrap();
    kfd.set("nodes/1/properties", p.replace("drm_render_minor 128", "drm_render_minor 0").as_bytes());
    let e = err(&kfd);
    assert_eq!((e.status, e.path.as_str()), (Status::ERROR, "nodes/1/properties"));
    // A minor outside the render range is refused the same way.
    kfd.set("nodes/1/properties", p.replace("drm_render_minor 128", "drm_render_minor 64").as_bytes());
    assert_eq!(err(&kfd).status, Status::ERROR);
}

#[test]
fn render_node_errors() {
    // EPERM: not ours, skipped. Any other errno: the snapshot fails.
    let mut kfd = MemKfd::fixture(MI25);
    kfd.render_errors.insert(128, Errno::EPERM);
    let t = snapshot(&kfd, &TopologyConfig::default()).unwrap();
    assert_eq!(t.nodes.len(), 1);
    // The CPU's link to the hidden GPU is dropped.
    assert_eq!(t.nodes[0].io_links.len(), 0);
    let mut kfd = MemKfd::fixture(MI25);
    kfd.render_errors.insert(128, Errno::EIO);
    assert_eq!(err(&kfd).status, Status::ERROR);
}

#[test]
fn link_from_wrong_node_is_invalid_node_unit() {
    let kfd = MemKfd::fixture(MI25);
    let p = String::from_utf8(kfd.get("nodes/1/io_links/0/properties")).unwrap();
    kfd.set("nodes/1/io_links/0/properties", p.replace("node_from 1", "node_from 0").as_bytes());
    let e = err(&kfd);
    assert_eq!((e.status, e.path.as_str()), (Status::INVALID_NODE_UNIT, "nodes/1/io_links/0/properties"));
}

#[test]
fn link_to_nonexistent_node_is_dropped() {
    let kfd = MemKfd::fixture(MI25);
    let p = String::from_utf8(kfd.get("nodes/1/io_links/0/properties")).unwrap();
    kfd.set("nodes/1/io_links/0/properties", p.replace("node_to 0", "node_to 7").as_bytes());
    let t = snapshot(&kfd, &TopologyConfig::default()).unwrap();
    assert_eq!(t.nodes[1].io_links.len(), 0);
    assert_eq!({ t.nodes[1].props.NumIOLinks }, 0);
}

#[test]
fn oversized_file_is_an_error() {
    let kfd = MemKfd::fixture(MI25);
    let mut p = kfd.get("nodes/0/properties");
    p.resize(64 * 1024, b'\n');
    kfd.set("nodes/0/properties", &p);
    let e = err(&kfd);
    assert_eq!((e.status, e.path.as_str()), (Status::ERROR, "nodes/0/properties"));
}

#[test]
fn generation_change_is_retried() {
    let kfd = MemKfd::fixture(MI25);
    // First walk sees 2 then 3 (changed): redone; the second walk sees 3 and 3.
    *kfd.generations.lock().unwrap() = vec![2, 3, 3, 3];
    let t = snapshot(&kfd, &TopologyConfig::default()).unwrap();
    assert_eq!(t.generation_id, 3);
    assert_eq!(kfd.generation_reads.load(Ordering::SeqCst), 4);
    assert_eq!(t.nodes.len(), 2);
}

#[test]
fn generation_that_never_settles_is_an_error() {
    let kfd = MemKfd::fixture(MI25);
    *kfd.generations.lock().unwrap() = (0..2 * MAX_SNAPSHOT_ATTEMPTS + 2).collect();
    let e = err(&kfd);
    assert_eq!(e.status, Status::ERROR);
    assert_eq!(kfd.generation_reads.load(Ordering::SeqCst), 2 * MAX_SNAPSHOT_ATTEMPTS as usize);
}

#[test]
fn zero_nodes_is_an_empty_topology() {
    let mut files = BTreeMap::new();
    files.insert("generation_id".to_string(), b"1\n".to_vec());
    files.insert("system_properties".to_string(), b"platform_oem 0\n".to_vec());
    files.insert("nodes/README".to_string(), b"not a node\n".to_vec());
    let t = snapshot(&MemKfd::new(files), &TopologyConfig::default()).unwrap();
    assert_eq!(t.nodes.len(), 0);
    assert_eq!({ t.system.NumNodes }, 0);
}

// --- HSA_OVERRIDE_GFX_VERSION ------------------------------------------------------------------

#[test]
fn gfx_override_sets_override_engine_id_only() {
    let kfd = MemKfd::fixture(MI210);
    let mut cfg = TopologyConfig::default();
    cfg.set_gfx_override(None, "9.4.2");
    let t = snapshot(&kfd, &cfg).unwrap();
    let p = t.nodes[2].props;
    let o = p.OverrideEngineId;
    assert_eq!((o.bf_Major(), o.bf_Minor(), o.bf_Stepping()), (9, 4, 2));
    // The real version still drives EngineId and AMDName.
    assert_eq!((p.EngineId.bf_Major(), p.EngineId.bf_Minor(), p.EngineId.bf_Stepping()), (9, 0, 10));
    // CPU nodes are untouched.
    assert_eq!({ t.nodes[0].props.OverrideEngineId.Value }, 0);
}

#[test]
fn per_node_gfx_override_wins() {
    let kfd = MemKfd::fixture(MI210);
    let mut cfg = TopologyConfig::default();
    cfg.set_gfx_override(None, "9.4.2");
    cfg.set_gfx_override(Some(3), "11.0.0");
    let t = snapshot(&kfd, &cfg).unwrap();
    assert_eq!(t.nodes[3].props.OverrideEngineId.bf_Major(), 11);
    assert_eq!(t.nodes[4].props.OverrideEngineId.bf_Major(), 9);
}

#[test]
fn invalid_gfx_override_fails_only_with_gpus() {
    let mut cfg = TopologyConfig::default();
    cfg.set_gfx_override(None, "9.0");
    assert!(cfg.override_gfx_version_invalid);
    let e = snapshot(&MemKfd::fixture(MI25), &cfg).err().expect("must fail");
    assert_eq!(e.status, Status::ERROR);
    // A CPU-only tree never consults the variable.
    let kfd = MemKfd::fixture(MI25);
    kfd.remove("nodes/1");
    assert!(snapshot(&kfd, &cfg).is_ok());
    // An invalid per-node value fails even with a valid global one.
    let mut cfg = TopologyConfig::default();
    cfg.set_gfx_override(None, "9.0.0");
    cfg.node_gfx_overrides.push((1, GfxOverride::Invalid));
    assert!(snapshot(&MemKfd::fixture(MI25), &cfg).is_err());
}

#[test]
fn gfx_override_parser() {
    assert_eq!(parse_gfx_override("9.0.10"), Ok((9, 0, 10)));
    assert!(parse_gfx_override("9.0.10 ").is_err());
    assert!(parse_gfx_override("64.0.0").is_err());
    assert!(parse_gfx_override("9.0.a").is_err());
}

// --- CPU names and the CPU cache fallback ----------------------------------------------------

const CPUINFO: &[u8] = b"processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD Test CPU 8-Core\napicid\t\t: 0\n\nprocessor\t: 1\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD Test CPU 8-Core\napicid\t\t: 2\n\n";

fn fake_cpu_tree() -> BTreeMap<String, Vec<u8>> {
    let mut t = BTreeMap::new();
    let mut put = |p: &str, v: &str| {
        t.insert(p.to_string(), v.as_bytes().to_vec());
    };
    // cpu0: private L1d (index0) and an L2 shared with cpu1 (index1).
    for (cpu, list, map) in [(0, "0", "00000001"), (1, "1", "00000002")] {
        let b = format!("cpu{cpu}/cache/index0");
        put(&format!("{b}/level"), "1\n");
        put(&format!("{b}/type"), "Data\n");
        put(&format!("{b}/size"), "32K\n");
        put(&format!("{b}/coherency_line_size"), "64\n");
        put(&format!("{b}/ways_of_associativity"), "8\n");
        put(&format!("{b}/physical_line_partition"), "1\n");
        put(&format!("{b}/shared_cpu_list"), &format!("{list}\n"));
        put(&format!("{b}/shared_cpu_map"), &format!("{map}\n"));
        let b = format!("cpu{cpu}/cache/index1");
        put(&format!("{b}/level"), "2\n");
        put(&format!("{b}/type"), "Unified\n");
        put(&format!("{b}/size"), "1024K\n");
        put(&format!("{b}/coherency_line_size"), "64\n");
        put(&format!("{b}/ways_of_associativity"), "16\n");
        put(&format!("{b}/shared_cpu_list"), "0-1\n");
        put(&format!("{b}/shared_cpu_map"), "00000003\n");
    }
    t
}

#[test]
fn cpu_caches_from_cpu_tree() {
    let mut kfd = MemKfd::fixture(MI25);
    kfd.cpu = fake_cpu_tree();
    kfd.cpuinfo = Some(CPUINFO.to_vec());
    let t = snapshot(&kfd, &TopologyConfig::default()).unwrap();
    let n = &t.nodes[0];
    // cpu0 L1d, cpu0 L2 (owner of the shared cache), cpu1 L1d; cpu1's L2 is cpu0's.
    assert_eq!(n.caches.len(), 3);
    assert_eq!({ n.props.NumCaches }, 3);
    let l1 = &n.caches[0];
    assert_eq!(({ l1.CacheLevel }, { l1.CacheSize }, { l1.CacheLineSize }, { l1.CacheAssociativity }), (1, 32768, 64, 8));
    assert_eq!({ l1.CacheLinesPerTag }, 1);
    // Data (1) + CPU (4).
    assert_eq!({ l1.CacheType.Value }, 5);
    assert_eq!({ l1.ProcessorIdLow }, 0);
    let l2 = &n.caches[1];
    assert_eq!(({ l2.CacheLevel }, { l2.CacheSize }), (2, 1 << 20));
    // Data + Instruction + CPU.
    assert_eq!({ l2.CacheType.Value }, 7);
    // Siblings are indexed by APIC id: cpu0 is APIC 0, cpu1 is APIC 2.
    let sib = { l2.SiblingMap };
    assert_eq!(&sib[..4], &[1, 0, 1, 0]);
    let l1b = &n.caches[2];
    assert_eq!({ l1b.ProcessorIdLow }, 2);
    // The GPU node keeps its own 96 KFD caches.
    assert_eq!(t.nodes[1].caches.len(), 96);
    // The CPU node is named after /proc/cpuinfo's model name for APIC id cpu_core_id_base (0).
    assert_eq!(wide_name(&n.props.MarketingName), "AMD Test CPU 8-Core");
    assert_eq!(narrow_name(&n.props.AMDName), "AMD Test CPU 8-Core");
    // The GPU's names are untouched by cpuinfo.
    assert_eq!(narrow_name(&t.nodes[1].props.AMDName), "Vega10");
}

#[test]
fn cpu_caches_follow_numa_nodes() {
    // With cpuN/node<M> entries, only node M's CPUs count: here cpu1 belongs to NUMA node 1,
    // which is not a CPU node of this tree, so CPU node 0 lists cpu0's two caches only.
    let mut kfd = MemKfd::fixture(MI25);
    let mut cpu = fake_cpu_tree();
    cpu.insert("cpu0/node0/cpulist".into(), b"0\n".to_vec());
    cpu.insert("cpu1/node1/cpulist".into(), b"1\n".to_vec());
    kfd.cpu = cpu;
    kfd.cpuinfo = Some(CPUINFO.to_vec());
    let t = snapshot(&kfd, &TopologyConfig::default()).unwrap();
    assert_eq!(t.nodes[0].caches.len(), 2);
}

#[test]
fn cpu_tree_without_cpuinfo() {
    // No /proc/cpuinfo: CPUs are found by probing cpu0, cpu1, ...; APIC ids fall back to the
    // CPU number and the node has no name.
    let mut kfd = MemKfd::fixture(MI25);
    kfd.cpu = fake_cpu_tree();
    let t = snapshot(&kfd, &TopologyConfig::default()).unwrap();
    let n = &t.nodes[0];
    assert_eq!(n.caches.len(), 3);
    assert_eq!({ n.caches[2].ProcessorIdLow }, 1);
    assert_eq!(wide_name(&n.props.MarketingName), "");
}

#[test]
fn model_backend_may_name_its_gpu() {
    let mut kfd = MemKfd::fixture(MI25);
    kfd.backend = Backend::BuiltinModel;
    kfd.set("nodes/1/marketing_name", b"Model GPU 9000\n");
    let t = snapshot(&kfd, &TopologyConfig::default()).unwrap();
    assert_eq!(wide_name(&t.nodes[1].props.MarketingName), "Model GPU 9000");
    // The kernel backend never reads that file.
    kfd.backend = Backend::Kernel;
    let t = snapshot(&kfd, &TopologyConfig::default()).unwrap();
    assert_eq!(wide_name(&t.nodes[1].props.MarketingName), "AMD Radeon Instinct MI25");
}

// --- Indirect links (kernels without p2p_links) -------------------------------------------------

/// A hand-made old-kernel tree: CPU nodes 0 and 1 (QPI-free, HyperTransport weight 32) and one
/// large-BAR GPU under each (PCIe weight 20), no p2p_links keys.
fn two_socket_tree() -> BTreeMap<String, Vec<u8>> {
    let mut t = BTreeMap::new();
    let mut put = |p: String, v: String| {
        t.insert(p, v.into_bytes());
    };
    put("generation_id".into(), "5\n".into());
    put("system_properties".into(), "platform_oem 1\nplatform_id 2\nplatform_rev 3\n".into());
    let cpu = "cpu_cores_count 8\nsimd_count 0\nmem_banks_count 0\ncaches_count 0\nio_links_count 2\n";
    let gpu = |minor: u32| {
        format!("cpu_cores_count 0\nsimd_count 64\nmem_banks_count 1\ncaches_count 0\nio_links_count 1\ndevice_id 26720\ndrm_render_minor {minor}\n")
    };
    let link = |ty: u32, from: u32, to: u32, w: u32| format!("type {ty}\nnode_from {from}\nnode_to {to}\nweight {w}\n");
    put("nodes/0/gpu_id".into(), "0\n".into());
    put("nodes/0/properties".into(), cpu.into());
    put("nodes/0/io_links/0/properties".into(), link(1, 0, 1, 32));
    put("nodes/0/io_links/1/properties".into(), link(2, 0, 2, 20));
    put("nodes/1/gpu_id".into(), "0\n".into());
    put("nodes/1/properties".into(), cpu.into());
    put("nodes/1/io_links/0/properties".into(), link(1, 1, 0, 32));
    put("nodes/1/io_links/1/properties".into(), link(2, 1, 3, 20));
    for (n, cpu, minor) in [(2u32, 0u32, 128u32), (3, 1, 129)] {
        put(format!("nodes/{n}/gpu_id"), format!("{}\n", 100 + n));
        put(format!("nodes/{n}/properties"), gpu(minor));
        put(format!("nodes/{n}/io_links/0/properties"), link(2, n, cpu, 20));
        put(format!("nodes/{n}/mem_banks/0/properties"), "heap_type 1\nsize_in_bytes 1024\n".into());
    }
    t
}

#[test]
fn indirect_links_for_old_kernels() {
    let t = snapshot(&MemKfd::new(two_socket_tree()), &TopologyConfig::default()).unwrap();
    let find = |from: usize, to: u32| t.nodes[from].io_links.iter().find(|l| l.NodeTo == to).copied();
    // GPU 2 -> CPU 0 -> CPU 1 -> GPU 3: 20 + 32 + 20, typed as the CPU-CPU hop (1).
    let l = find(2, 3).expect("2 -> 3");
    assert_eq!(({ l.IoLinkType }, { l.Weight }, { l.NodeFrom }), (1, 72, 2));
    let l = find(3, 2).expect("3 -> 2");
    assert_eq!(({ l.IoLinkType }, { l.Weight }), (1, 72));
    // GPU 2 -> CPU 0 -> CPU 1: 20 + 32.
    assert_eq!(find(2, 1).map(|l| l.Weight), Some(52));
    // CPU 0 -> CPU 1 -> GPU 3: 32 + 20.
    assert_eq!(find(0, 3).map(|l| l.Weight), Some(52));
    // Each node has 3 links: NumNodes-1.
    assert!(t.nodes.iter().all(|n| n.io_links.len() == 3 && n.props.NumIOLinks == 3));
}

#[test]
fn no_indirect_links_across_qpi_sockets_or_to_small_bar() {
    // QPI between the sockets with weight > 20: GPUs on different sockets cannot reach each
    // other, so no GPU-GPU link is derived.
    let mut files = two_socket_tree();
    files.insert("nodes/0/io_links/0/properties".into(), b"type 5\nnode_from 0\nnode_to 1\nweight 42\n".to_vec());
    files.insert("nodes/1/io_links/0/properties".into(), b"type 5\nnode_from 1\nnode_to 0\nweight 42\n".to_vec());
    let t = snapshot(&MemKfd::new(files), &TopologyConfig::default()).unwrap();
    assert!(t.nodes[2].io_links.iter().all(|l| l.NodeTo != 3));
    // A destination GPU without a public (large-BAR) bank gets no indirect links.
    let mut files = two_socket_tree();
    files.insert("nodes/3/mem_banks/0/properties".into(), b"heap_type 2\nsize_in_bytes 1024\n".to_vec());
    let t = snapshot(&MemKfd::new(files), &TopologyConfig::default()).unwrap();
    assert!(t.nodes[2].io_links.iter().all(|l| l.NodeTo != 3));
    assert!(t.nodes[0].io_links.iter().all(|l| l.NodeTo != 3));
    // A p2p_links_count key anywhere (even 0) means the kernel made the links: none derived.
    let mut files = two_socket_tree();
    let mut p = files["nodes/0/properties"].clone();
    p.extend_from_slice(b"p2p_links_count 0\n");
    files.insert("nodes/0/properties".into(), p);
    let t = snapshot(&MemKfd::new(files), &TopologyConfig::default()).unwrap();
    assert!(t.nodes.iter().all(|n| n.io_links.len() == 2 || n.io_links.len() == 1));
}

// --- Random damage: never a panic, and every success is self-consistent ------------------------

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn damage(rng: &mut XorShift, data: &mut Vec<u8>) {
    const PIECES: &[&[u8]] = &[b" ", b"\n", b"0", b"9", b"-", b"+", b",", b"\0", b"18446744073709551616", b"node_to 99\n", b"x"];
    match rng.below(5) {
        0 => data.truncate(rng.below(data.len() + 1)),
        1 => {
            for _ in 0..1 + rng.below(4) {
                if !data.is_empty() {
                    let i = rng.below(data.len());
                    data[i] = rng.next() as u8;
                }
            }
        }
        2 => {
            let at = rng.below(data.len() + 1);
            let piece = PIECES[rng.below(PIECES.len())];
            data.splice(at..at, piece.iter().copied());
        }
        3 => {
            let (a, b) = (rng.below(data.len() + 1), rng.below(data.len() + 1));
            let (a, b) = (a.min(b), a.max(b));
            data.drain(a..b);
        }
        _ => {
            let copy = data.clone();
            data.extend_from_slice(&copy);
        }
    }
}

#[test]
fn random_damage_never_panics() {
    let base = load_complete(MI25);
    let mut two = two_socket_tree();
    two.insert("nodes/1/caches/0/properties".into(), b"level 1\nsize 4\ntype 9\nsibling_map 1,0,1\n".to_vec());
    let trees = [base, two];
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let mut ok = 0;
    for round in 0..1500 {
        let mut files = trees[round % 2].clone();
        let keys: Vec<String> = files.keys().cloned().collect();
        for _ in 0..1 + rng.below(3) {
            let k = &keys[rng.below(keys.len())];
            if let Some(d) = files.get_mut(k) {
                damage(&mut rng, d);
            }
        }
        let mut kfd = MemKfd::new(files);
        kfd.cpu = fake_cpu_tree();
        if round % 3 == 0 {
            let mut info = CPUINFO.to_vec();
            damage(&mut rng, &mut info);
            kfd.cpuinfo = Some(info);
        }
        let Ok(t) = snapshot(&kfd, &TopologyConfig::default()) else { continue };
        ok += 1;
        assert_eq!(t.system.NumNodes as usize, t.nodes.len());
        for n in &t.nodes {
            assert_eq!(n.props.NumMemoryBanks as usize, n.mem_banks.len());
            assert_eq!(n.props.NumCaches as usize, n.caches.len());
            assert_eq!(n.props.NumIOLinks as usize, n.io_links.len());
            assert!(n.io_links.len() < t.nodes.len().max(1));
            assert!(n.io_links.iter().all(|l| (l.NodeTo as usize) < t.nodes.len()));
        }
        assert!(kfd.open_fds.lock().unwrap().is_empty());
    }
    // Damage often lands on values or ignored keys: a good share of rounds must still load.
    assert!(ok > 100, "only {ok} rounds loaded");
}
