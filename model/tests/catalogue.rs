//! Catalogue consistency, and agreement with the real captures.
//!
//! The hand-read facts below were taken from the fixtures' files and SOURCE.md and are embedded
//! here, so these tests run without the shared fixtures. When the fixtures are present, the generated
//! files are also compared with them byte for byte (every file the capture has).

use hsakmt_core::abi::hsakmt::HsaCacheProperties;
use hsakmt_core::context::{Context, OpenConfig};
use hsakmt_model::catalogue::cpus::CacheType;
use hsakmt_model::catalogue::{self, build, catalogue_names};
use hsakmt_model::vfs::{parse_properties, prop, Tree};
use hsakmt_model::{Model, ModelConfig};
use std::collections::BTreeSet;
use std::path::Path;

fn props(t: &Tree, path: &str) -> Vec<(String, u64)> {
    parse_properties(&t.read_str(path).unwrap_or_else(|| panic!("{path} missing")))
}

fn p(t: &Tree, path: &str, key: &str) -> u64 {
    prop(&props(t, path), key).unwrap_or_else(|| panic!("{path}: no {key}"))
}

/// (node_to, type, weight) of every link of `node` in `dir` (io_links or p2p_links).
fn links(t: &Tree, node: u32, dir: &str) -> Vec<(u64, u64, u64)> {
    let d = format!("nodes/{node}/{dir}");
    let n = t.count_numbered(&d).unwrap_or(0);
    (0..n)
        .map(|l| {
            let f = format!("{d}/{l}/properties");
            assert_eq!(p(t, &f, "node_from"), u64::from(node), "{f}");
            (p(t, &f, "node_to"), p(t, &f, "type"), p(t, &f, "weight"))
        })
        .collect()
}

#[test]
fn names_and_default() {
    assert_eq!(catalogue_names(), &["mi300x", "mi300x-cpx", "mi210", "rx7900xtx", "mi25", "mi308x-cpx"]);
    assert_eq!(catalogue::DEFAULT_ENTRY, "mi300x");
}

#[test]
fn every_entry_is_self_consistent() {
    for name in catalogue_names() {
        let t = build(name).unwrap();
        assert!(t.read_str("generation_id").is_some(), "{name}");
        assert!(t.read_str("system_properties").is_some(), "{name}");
        let n = t.count_numbered("nodes").unwrap();
        let mut gpu_ids = BTreeSet::new();
        let mut minors = BTreeSet::new();
        for node in 0..n {
            let base = format!("nodes/{node}");
            let pr = format!("{base}/properties");
            let gpu_id: u64 = t.read_str(&format!("{base}/gpu_id")).unwrap().trim().parse().unwrap();
            if gpu_id != 0 {
                assert!(gpu_id <= 0xffff && gpu_ids.insert(gpu_id), "{name}: gpu_id");
                let minor = p(&t, &pr, "drm_render_minor");
                assert!((128..=255).contains(&minor), "{name}: minor {minor}");
                assert!(minors.insert(minor), "{name}: duplicate minor");
                assert!(p(&t, &pr, "simd_count") > 0);
            } else {
                assert_eq!(p(&t, &pr, "simd_count"), 0);
            }
            // Counts match the directories.
            for (key, dir) in [
                ("mem_banks_count", "mem_banks"),
                ("caches_count", "caches"),
                ("io_links_count", "io_links"),
                ("p2p_links_count", "p2p_links"),
            ] {
                let Some(count) = prop(&props(&t, &pr), key) else {
                    continue; // 2018 kernel: no p2p_links_count
                };
                assert_eq!(u64::from(t.count_numbered(&format!("{base}/{dir}")).unwrap()), count, "{name} node {node} {key}");
            }
        }
        // Every link is present in both directions, with the same type.
        for dir in ["io_links", "p2p_links"] {
            let all: Vec<_> = (0..n).map(|node| links(&t, node, dir)).collect();
            for (node, ls) in all.iter().enumerate() {
                for &(to, ty, _) in ls {
                    assert!(to < u64::from(n));
                    assert!(
                        all[to as usize].iter().any(|&(f, bty, _)| f == node as u64 && bty == ty),
                        "{name}: {dir} {node}->{to} has no way back"
                    );
                }
            }
        }
        assert!(!gpu_ids.is_empty());
    }
}

#[test]
fn mi300x_cpx_matches_the_capture_facts() {
    let t = build("mi300x-cpx").unwrap();
    assert_eq!(t.count_numbered("nodes").unwrap(), 65);
    assert_eq!(t.read_str("generation_id").unwrap(), "80\n");
    // SOURCE.md: node 0 io 33 / p2p 31, node 1 io 32 / p2p 32; GPUs 63 io_links.
    assert_eq!(p(&t, "nodes/0/properties", "io_links_count"), 33);
    assert_eq!(p(&t, "nodes/0/properties", "p2p_links_count"), 31);
    assert_eq!(p(&t, "nodes/1/properties", "io_links_count"), 32);
    assert_eq!(p(&t, "nodes/1/properties", "p2p_links_count"), 32);
    assert_eq!(p(&t, "nodes/1/properties", "cpu_core_id_base"), 128);
    for node in 2..65 {
        let pr = format!("nodes/{node}/properties");
        assert_eq!(p(&t, &pr, "io_links_count"), 63);
        assert_eq!(p(&t, &pr, "simd_count"), 152);
        assert_eq!(p(&t, &pr, "caches_count"), 80);
        assert_eq!(p(&t, &pr, "device_id"), 29857);
        assert_eq!(p(&t, &pr, "gfx_target_version"), 90402);
        assert_eq!(p(&t, &pr, "drm_render_minor"), 128 + u64::from(node) - 2);
        let io = links(&t, node, "io_links");
        assert_eq!(io[0], (if node < 34 { 0 } else { 1 }, 2, 20));
        let same = io.iter().filter(|l| l.1 == 11 && l.2 == 13).count();
        assert_eq!(same, if node >= 58 { 6 } else { 7 });
    }
    // Hand-read: node 2 -> 3 is 819200 MB/s XGMI, node 2 -> 12 weight 41 with bandwidth 0;
    // the last partition sits at 58630 with render minor 190.
    assert_eq!(p(&t, "nodes/2/io_links/1/properties", "max_bandwidth"), 819_200);
    assert_eq!(p(&t, "nodes/2/io_links/10/properties", "node_to"), 12);
    assert_eq!(p(&t, "nodes/2/io_links/10/properties", "weight"), 41);
    assert_eq!(p(&t, "nodes/64/properties", "location_id"), 58630);
    assert_eq!(p(&t, "nodes/64/properties", "simd_id_base"), 2_147_490_544);
    assert_eq!(p(&t, "nodes/2/properties", "simd_id_base"), 2_147_488_064);
    assert_eq!(p(&t, "nodes/0/io_links/1/properties", "flags"), 3);
    assert_eq!(p(&t, "nodes/2/io_links/0/properties", "flags"), 1);
    // 4034 io_link files in the capture.
    let io_files = t.file_paths().filter(|f| f.contains("/io_links/")).count();
    assert_eq!(io_files, 4034);
}

#[test]
fn mi300x_spx_is_the_cpx_host_unpartitioned() {
    let t = build("mi300x").unwrap();
    assert_eq!(t.count_numbered("nodes").unwrap(), 10);
    for node in 2..10u32 {
        let pr = format!("nodes/{node}/properties");
        assert_eq!(p(&t, &pr, "simd_count"), 1216);
        assert_eq!(p(&t, &pr, "num_xcc"), 8);
        assert_eq!(p(&t, &pr, "array_count"), 32);
        assert_eq!(p(&t, &pr, "caches_count"), 626);
        assert_eq!(p(&t, &pr, "io_links_count"), 8);
        assert_eq!(p(&t, &pr, "p2p_links_count"), 1);
        assert_eq!(p(&t, &pr, "drm_render_minor"), 128 + 8 * (u64::from(node) - 2));
    }
    assert_eq!(p(&t, "nodes/0/properties", "io_links_count"), 5);
    assert_eq!(p(&t, "nodes/0/properties", "p2p_links_count"), 4);
}

#[test]
fn mi210_matches_the_capture_facts() {
    let t = build("mi210").unwrap();
    assert_eq!(t.count_numbered("nodes").unwrap(), 10);
    // SOURCE.md: 42 io_link files, 48 p2p_link files; CPU 5 io + 4 p2p; GPU 4 io + 5 p2p.
    assert_eq!(t.file_paths().filter(|f| f.contains("/io_links/")).count(), 42);
    assert_eq!(t.file_paths().filter(|f| f.contains("/p2p_links/")).count(), 48);
    for node in 2..10u32 {
        let pr = format!("nodes/{node}/properties");
        assert_eq!(p(&t, &pr, "simd_count"), 416);
        assert_eq!(p(&t, &pr, "caches_count"), 217);
        assert_eq!(p(&t, &pr, "gfx_target_version"), 90010);
        assert_eq!(p(&t, &pr, "drm_render_minor"), 126 + u64::from(node));
        let io = links(&t, node, "io_links");
        assert_eq!(io.len(), 4);
        assert_eq!((io[0].1, io[0].2), (2, 20));
        assert!(io[1..].iter().all(|l| l.1 == 11 && l.2 == 15));
        let p2p = links(&t, node, "p2p_links");
        assert_eq!(p2p.len(), 5);
        assert_eq!(p2p[0].2, 52);
        assert!(p2p[1..].iter().all(|l| l.2 == 72));
    }
    assert_eq!(p(&t, "nodes/2/properties", "hive_id"), 12_609_507_387_757_274_807);
    assert_eq!(p(&t, "nodes/9/properties", "hive_id"), 18_091_350_218_769_748_594);
}

#[test]
fn rx7900xtx_shape() {
    let t = build("rx7900xtx").unwrap();
    assert_eq!(t.count_numbered("nodes").unwrap(), 2);
    let pr = "nodes/1/properties";
    assert_eq!(p(&t, pr, "device_id"), 0x744c);
    assert_eq!(p(&t, pr, "gfx_target_version"), 110000);
    assert_eq!(p(&t, pr, "simd_count"), 192); // 96 CUs x 2 SIMDs
    assert_eq!(p(&t, pr, "simd_per_cu"), 2);
    assert_eq!(p(&t, pr, "wave_front_size"), 32);
    assert_eq!(p(&t, pr, "num_sdma_engines"), 2);
    assert_eq!(p(&t, pr, "hive_id"), 0);
    assert_eq!(p(&t, pr, "caches_count"), 206);
    assert_eq!(p(&t, "nodes/1/mem_banks/0/properties", "size_in_bytes"), 25_753_026_560);
    assert_eq!(t.count_numbered("nodes/1/p2p_links").unwrap(), 0);
}

#[test]
fn mi25_matches_the_capture_facts() {
    let t = build("mi25").unwrap();
    assert_eq!(t.read_str("generation_id").unwrap(), "2\n");
    assert_eq!(t.read_str("nodes/1/gpu_id").unwrap(), "13261\n");
    assert_eq!(p(&t, "nodes/1/properties", "caches_count"), 96);
    assert_eq!(p(&t, "nodes/1/caches/64/properties", "size"), 8);
    assert_eq!(p(&t, "nodes/1/caches/95/properties", "processor_id_low"), 2_147_487_804);
    assert!(t.read_str("nodes/1/caches/95/properties").unwrap().contains("sibling_map 1,1,1,1,0,"));
    assert!(t.read_str("nodes/1/properties").unwrap().ends_with("max_engine_clk_ccompute 3200\n"));
    assert!(!t.read_str("nodes/1/properties").unwrap().contains("p2p_links_count"));
}

/// Every file of a capture equals the generated one.
fn compare_with_fixture(name: &str, fixture: &str) {
    // The project's shared fixtures sit beside the repository (../shared) when present.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/topology").join(fixture);
    if !root.is_dir() {
        eprintln!("fixture {fixture} not present; byte comparison skipped");
        return;
    }
    let real = Tree::load_dir(&root).unwrap();
    let ours = build(name).unwrap();
    let mut compared = 0;
    for path in real.file_paths() {
        if path == "SOURCE.md" {
            continue;
        }
        let want = real.read(path).unwrap();
        let got = ours.read(path).unwrap_or_else(|_| panic!("{name}: {path} missing"));
        assert_eq!(String::from_utf8_lossy(got), String::from_utf8_lossy(want), "{name}: {path} differs");
        compared += 1;
    }
    assert!(compared > 0);
}

#[test]
fn mi25_equals_the_capture() {
    compare_with_fixture("mi25", "mi25-gfx900-1gpu");
}

#[test]
fn mi210_equals_the_capture() {
    compare_with_fixture("mi210", "mi210-gfx90a-8gpu-2hive");
}

#[test]
fn mi300x_cpx_equals_the_capture() {
    compare_with_fixture("mi300x-cpx", "mi300x-gfx942-8gpu-cpx");
}

#[test]
fn export_round_trips() {
    let dir = std::env::temp_dir().join(format!("hsakmt-model-export-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    catalogue::export("rx7900xtx", &dir).unwrap();
    let back = Tree::load_dir(&dir).unwrap();
    assert_eq!(back, build("rx7900xtx").unwrap());
    assert!(catalogue::export("nope", &dir).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// What the thunk makes of a model's CPU nodes: (MarketingName, NumCPUCores, CComputeIdLo,
/// caches) of every CPU node, read through the model's port as the HSA runtime reads them.
fn cpu_nodes_through_the_thunk(model: Model) -> Vec<(String, u32, u32, Vec<HsaCacheProperties>)> {
    let mut c = Context::open(Box::new(model), OpenConfig::default()).expect("open");
    c.acquire_system_properties().expect("acquire");
    let topo = c.topology().expect("snapshot");
    topo.nodes
        .iter()
        .filter(|n| n.gpu_id == 0)
        .map(|n| {
            let wide = n.props.MarketingName;
            let name: String = wide.iter().take_while(|&&u| u != 0).map(|&u| char::from_u32(u32::from(u)).unwrap_or('?')).collect();
            (name, n.props.NumCPUCores, n.props.CComputeIdLo, n.caches.clone())
        })
        .collect()
}

/// Every CPU node of every catalogue system has its part's name and its caches: L1 data and
/// instruction, L2 and L3, one L1/L2 per core and one L3 per sharing group, sizes in bytes (the
/// unit of upstream's sysfs fallback), whatever CPUs the machine running the test has.
#[test]
fn every_cpu_node_has_a_name_and_caches() {
    for name in catalogue_names() {
        let sockets = catalogue::sockets(name).unwrap();
        let nodes = cpu_nodes_through_the_thunk(Model::new(ModelConfig::catalogue(name)).unwrap());
        assert_eq!(nodes.len(), sockets.len(), "{name}: one CPU node per socket");
        for (i, ((cpu_name, cores, apic, caches), s)) in nodes.iter().zip(&sockets).enumerate() {
            let part = s.part;
            assert!(!cpu_name.is_empty(), "{name}: CPU node {i} has no name");
            assert_eq!(cpu_name, part.name, "{name}: CPU node {i}");
            assert_eq!(*cores, part.cores * part.threads_per_core, "{name}: CPU node {i} cores");
            assert_eq!(*apic, s.apic_base, "{name}: CPU node {i} first APIC id");
            assert!(!caches.is_empty(), "{name}: CPU node {i} has no caches");
            let instances = |k: &catalogue::cpus::CpuCache| part.cores / if k.cores_sharing == 0 { part.cores } else { k.cores_sharing };
            for k in part.caches {
                let kind = match k.kind {
                    CacheType::Data => 1,
                    CacheType::Instruction => 2,
                    CacheType::Unified => 3,
                };
                let same: Vec<&HsaCacheProperties> =
                    caches.iter().filter(|c| c.CacheLevel == k.level && { c.CacheType.Value } & 3 == kind).collect();
                assert_eq!(same.len() as u32, instances(k), "{name}: CPU node {i}, L{} {:?} instances", k.level, k.kind);
                for c in same {
                    assert_eq!(c.CacheSize, k.size_kib * 1024, "{name}: L{} size", k.level);
                    assert_eq!(c.CacheLineSize, 64);
                    assert_eq!(c.CacheAssociativity, k.ways);
                    assert_eq!(c.CacheType.bf_CPU(), 1);
                    // Owned by a CPU of this node: APIC ids from the node's base.
                    let first = s.apic_base;
                    assert!((first..first + part.cores * part.threads_per_core).contains(&{ c.ProcessorIdLow }), "{name}: owner");
                }
            }
            assert_eq!(caches.len() as u32, part.caches.iter().map(instances).sum::<u32>(), "{name}: CPU node {i}: no other caches");
        }
    }
}

/// A topology directory (`HSA_MODEL_TOPOLOGY`) keeps upstream's model-mode behaviour: CPU names
/// and caches are the host's, read from /proc/cpuinfo and /sys/devices/system/cpu.
#[test]
fn a_topology_directory_uses_the_host_cpus() {
    let dir = std::env::temp_dir().join(format!("hsakmt-model-hostcpu-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    catalogue::export("mi25", &dir).unwrap();
    let model = Model::new(ModelConfig::directory(&dir)).unwrap();
    assert!(model.host_cpus().is_none());
    let nodes = cpu_nodes_through_the_thunk(model);
    std::fs::remove_dir_all(&dir).unwrap();
    // The host's model name of the CPU with APIC id 0 (the node's cpu_core_id_base), if any.
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let mut host_name = String::new();
    let mut current = String::new();
    for line in info.lines() {
        if let Some((k, v)) = line.split_once(':') {
            match k.trim() {
                "model name" => current = v.trim().to_string(),
                "apicid" if v.trim() == "0" => host_name = current.chars().take(63).collect(),
                _ => {}
            }
        }
    }
    assert_eq!(nodes.len(), 1);
    assert_eq!(nodes[0].0, host_name, "the CPU node is named after the host's CPU");
    assert_ne!(nodes[0].0, catalogue::cpus::XEON_GOLD_5115.name);
    let host_has_caches = Path::new("/sys/devices/system/cpu/cpu0/cache/index0").is_dir();
    assert_eq!(!nodes[0].3.is_empty(), host_has_caches, "caches come from the host's sysfs");
}
