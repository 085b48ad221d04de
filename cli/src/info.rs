//! The report as data: what the text view prints and `--json` serialises (field by field in
//! docs/kmtinfo.md). Derived here from the raw properties: compute units, PCI address, UUID,
//! NUMA node, caches grouped by level, type and size (CPU cache sizes, which upstream reports
//! in bytes, turned into KiB), and for each link whether it is direct or passes through CPUs
//! (indirect), with its hop count.

use crate::report::{self, NodeReport, SystemReport};
use crate::Backend;
use hsakmt_core::abi::hsakmt::*;
use serde::Serialize;
use std::collections::BTreeMap;

pub struct Options {
    pub gpus: Vec<u32>,
    pub gpus_only: bool,
    pub raw_caches: bool,
}

#[derive(Serialize)]
pub struct SystemInfo {
    pub backend: Backend,
    pub kfd_version: String,
    pub model: bool,
    pub platform: Platform,
    /// Nodes in the system (before any filter).
    pub num_nodes: u32,
    pub nodes: Vec<NodeInfo>,
}

#[derive(Serialize)]
pub struct Platform {
    pub oem: u32,
    pub id: u32,
    pub rev: u32,
}

#[derive(Serialize)]
pub struct NodeInfo {
    pub id: u32,
    pub kind: &'static str,
    /// Index among the GPUs (`--gpu N`), for GPU nodes.
    pub gpu_index: Option<u32>,
    pub gpu_id: Option<u32>,
    pub marketing_name: String,
    pub amd_name: String,
    pub gfx_target: Option<String>,
    pub vendor_id: Option<u16>,
    pub device_id: Option<u16>,
    /// rocminfo's form: `GPU-` and the 16 hex digits of unique_id, `GPU-XX` when the KFD
    /// reports none, `CPU-XX` for CPUs.
    pub uuid: String,
    /// Decimal, as sysfs prints it (a JSON number would lose digits above 2^53).
    pub unique_id: Option<String>,
    /// Decimal string; null when the GPU is in no XGMI hive.
    pub hive_id: Option<String>,
    pub cpu_cores: Option<u32>,
    pub compute_units: Option<u32>,
    pub simds: u32,
    pub simd_per_cu: u32,
    pub waves_per_simd: u32,
    pub wavefront_size: u32,
    pub lds_kib: u32,
    pub gds_kib: u32,
    pub num_xcc: u32,
    /// Maximum engine clock: the GPU's compute clock, or the CPU's.
    pub max_clock_mhz: u32,
    /// null: not reported (kernels before 2019 print no SDMA or queue counts).
    pub sdma_engines: Option<u32>,
    pub sdma_xgmi_engines: Option<u32>,
    pub sdma_queues_per_engine: Option<u32>,
    pub cp_queues: Option<u32>,
    pub pci: Option<Pci>,
    pub drm_render_minor: Option<i32>,
    /// The CPU node whose memory is nearest: the node itself for CPUs; for GPUs the CPU node
    /// of their direct PCIe/XGMI link (with NPS1 the NUMA node's number).
    pub numa_node: Option<u32>,
    pub wallclock_hz: u64,
    pub memory: Vec<Memory>,
    /// Caches grouped by level, type and size.
    pub caches: Vec<CacheGroup>,
    /// Every cache entry as reported (only with --raw-caches).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_entries: Option<Vec<CacheEntry>>,
    pub links: Vec<Link>,
}

#[derive(Serialize, Clone)]
pub struct Pci {
    pub domain: u32,
    pub bus: u32,
    pub device: u32,
    pub function: u32,
    /// `0000:05:00.0`
    pub address: String,
    pub location_id: u32,
}

#[derive(Serialize)]
pub struct Memory {
    pub heap: &'static str,
    pub heap_type: u32,
    pub size_bytes: u64,
    pub width_bits: u32,
    pub max_clock_mhz: u32,
    /// Base of an aperture, hex (0x0 for memory banks).
    pub virtual_base: String,
}

#[derive(Serialize, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct CacheGroup {
    pub level: u32,
    /// `data`, `instruction`, `unified` or `other`.
    #[serde(rename = "type")]
    pub ty: &'static str,
    pub size_kib: u64,
    pub count: u32,
}

#[derive(Serialize)]
pub struct CacheEntry {
    pub level: u32,
    #[serde(rename = "type")]
    pub ty: &'static str,
    /// The HsaCacheType bits: 1 data, 2 instruction, 4 CPU, 8 HSA CU.
    pub type_bits: u32,
    pub size_kib: u64,
    pub line_bytes: u32,
    pub associativity: u32,
    pub processor_id_low: u32,
}

#[derive(Serialize, Clone)]
pub struct Link {
    pub to: u32,
    /// `cpu` or `gpu`: the kind of node `to`.
    pub to_kind: &'static str,
    #[serde(rename = "type")]
    pub ty: u32,
    pub type_name: &'static str,
    pub weight: u32,
    /// Links on the way: 1 for a direct link, 2 or 3 through one or two CPUs.
    pub hops: u32,
    /// The link passes through CPUs (KFD p2p links, and the ones the thunk derives).
    pub indirect: bool,
    /// MB/s; null when the KFD reports 0 (unknown).
    pub min_bandwidth_mbs: Option<u32>,
    pub max_bandwidth_mbs: Option<u32>,
}

fn nonzero(v: u32) -> Option<u32> {
    (v != 0).then_some(v)
}

/// "data" / "instruction" / "unified" from the HsaCacheType bits.
pub fn cache_type_name(bits: u32) -> &'static str {
    match bits & 3 {
        1 => "data",
        2 => "instruction",
        3 => "unified",
        _ => "other",
    }
}

/// A cache's size in KiB: GPU caches come from the KFD in KiB, CPU caches (upstream reads
/// /sys/devices/system/cpu) in bytes.
fn cache_kib(gpu: bool, c: &HsaCacheProperties) -> u64 {
    if gpu {
        u64::from(c.CacheSize)
    } else {
        u64::from(c.CacheSize) / 1024
    }
}

/// Count the caches of each (level, type, size); ordered by level, type, larger sizes first.
pub fn group_caches(gpu: bool, caches: &[HsaCacheProperties]) -> Vec<CacheGroup> {
    let mut m = BTreeMap::<(u32, &'static str, std::cmp::Reverse<u64>), u32>::new();
    for c in caches {
        *m.entry((c.CacheLevel, cache_type_name(c.CacheType.Value), std::cmp::Reverse(cache_kib(gpu, c)))).or_default() += 1;
    }
    m.into_iter().map(|((level, ty, size), count)| CacheGroup { level, ty, size_kib: size.0, count }).collect()
}

/// The CPU node a GPU hangs off: its first PCIe or XGMI link of weight <= 20 to a CPU node
/// (the thunk's rule for indirect links; heavier links already cross a CPU).
fn home_cpu(r: &SystemReport, node: usize) -> Option<u32> {
    let n = r.nodes.get(node)?;
    if !report::is_gpu(&n.props) {
        return Some(node as u32);
    }
    n.links.iter().find_map(|l| {
        let to_cpu = r.nodes.get(l.NodeTo as usize).is_some_and(|t| !report::is_gpu(&t.props));
        let ty = l.IoLinkType;
        ((ty == HSA_IOLINKTYPE_PCIEXPRESS || ty == HSA_IOLINK_TYPE_XGMI) && l.Weight <= 20 && to_cpu).then_some(l.NodeTo)
    })
}

/// Direct or through CPUs, and how many hops: a link between CPUs, an XGMI link, and a GPU's
/// link to its own CPU are direct; a GPU reaches another CPU through its own (2 hops) and a
/// non-XGMI peer GPU through one CPU (2) or two (3).
fn classify(r: &SystemReport, from: usize, l: &HsaIoLinkProperties) -> (bool, u32) {
    let to = l.NodeTo as usize;
    let gpu = |i: usize| r.nodes.get(i).is_some_and(|n| report::is_gpu(&n.props));
    if l.IoLinkType == HSA_IOLINK_TYPE_XGMI {
        return (false, 1);
    }
    match (gpu(from), gpu(to)) {
        (false, false) => (false, 1),
        (true, false) | (false, true) => {
            let (g, c) = if gpu(from) { (from, to) } else { (to, from) };
            match home_cpu(r, g) {
                Some(h) if h as usize != c => (true, 2),
                _ => (false, 1),
            }
        }
        (true, true) => match (home_cpu(r, from), home_cpu(r, to)) {
            (Some(a), Some(b)) if a != b => (true, 3),
            _ => (true, 2),
        },
    }
}

fn node_info(r: &SystemReport, id: usize, n: &NodeReport, gpu_index: Option<u32>, raw_caches: bool) -> NodeInfo {
    let p = &n.props;
    let gpu = report::is_gpu(p);
    let unique = p.UniqueID;
    let hive = p.HiveID;
    let loc = p.LocationId;
    // Kernels print num_sdma_engines, num_sdma_xgmi_engines, num_sdma_queues_per_engine and
    // num_cp_queues together (2019 on); every GPU has an SDMA engine, so 0 means not reported.
    let sdma_reported = gpu && p.NumSdmaEngines != 0;
    let pci = gpu.then(|| {
        let (bus, device, function) = ((loc >> 8) & 0xff, (loc >> 3) & 0x1f, loc & 7);
        let domain = p.Domain;
        Pci { domain, bus, device, function, address: format!("{domain:04x}:{bus:02x}:{device:02x}.{function:x}"), location_id: loc }
    });
    let links = n
        .links
        .iter()
        .map(|l| {
            let (indirect, hops) = classify(r, id, l);
            let to_gpu = r.nodes.get(l.NodeTo as usize).is_some_and(|t| report::is_gpu(&t.props));
            Link {
                to: l.NodeTo,
                to_kind: if to_gpu { "gpu" } else { "cpu" },
                ty: l.IoLinkType,
                type_name: report::link_type_name(l.IoLinkType),
                weight: l.Weight,
                hops,
                indirect,
                min_bandwidth_mbs: nonzero(l.MinimumBandwidth),
                max_bandwidth_mbs: nonzero(l.MaximumBandwidth),
            }
        })
        .collect();
    NodeInfo {
        id: id as u32,
        kind: if gpu { "gpu" } else { "cpu" },
        gpu_index,
        gpu_id: gpu.then_some(p.KFDGpuID),
        marketing_name: report::marketing_name(p),
        amd_name: report::amd_name(p),
        gfx_target: gpu.then(|| report::gfx_target(p)),
        vendor_id: gpu.then_some(p.VendorId),
        device_id: gpu.then_some(p.DeviceId),
        uuid: match (gpu, unique) {
            (false, _) => "CPU-XX".into(),
            (true, 0) => "GPU-XX".into(),
            (true, u) => format!("GPU-{u:016x}"),
        },
        unique_id: (gpu && unique != 0).then(|| unique.to_string()),
        hive_id: (hive != 0).then(|| hive.to_string()),
        cpu_cores: (!gpu).then_some(p.NumCPUCores),
        compute_units: if gpu { { p.NumFComputeCores }.checked_div(p.NumSIMDPerCU) } else { None },
        simds: p.NumFComputeCores,
        simd_per_cu: p.NumSIMDPerCU,
        waves_per_simd: p.MaxWavesPerSIMD,
        wavefront_size: p.WaveFrontSize,
        lds_kib: p.LDSSizeInKB,
        gds_kib: p.GDSSizeInKB,
        num_xcc: p.NumXcc,
        max_clock_mhz: if gpu { p.MaxEngineClockMhzFCompute } else { p.MaxEngineClockMhzCCompute },
        sdma_engines: sdma_reported.then_some(p.NumSdmaEngines),
        sdma_xgmi_engines: sdma_reported.then_some(p.NumSdmaXgmiEngines),
        sdma_queues_per_engine: if sdma_reported { nonzero(u32::from(p.NumSdmaQueuesPerEngine)) } else { None },
        cp_queues: if sdma_reported { nonzero(u32::from(p.NumCpQueues)) } else { None },
        pci,
        drm_render_minor: gpu.then_some(p.DrmRenderMinor),
        numa_node: home_cpu(r, id),
        wallclock_hz: n.wallclock_hz,
        memory: n
            .mem
            .iter()
            .map(|m| Memory {
                heap: report::heap_name(m.HeapType),
                heap_type: m.HeapType,
                size_bytes: m.size_in_bytes(),
                width_bits: m.Width,
                max_clock_mhz: m.MemoryClockMax,
                virtual_base: format!("{:#x}", { m.VirtualBaseAddress }),
            })
            .collect(),
        caches: group_caches(gpu, &n.caches),
        cache_entries: raw_caches.then(|| {
            n.caches
                .iter()
                .map(|c| CacheEntry {
                    level: c.CacheLevel,
                    ty: cache_type_name(c.CacheType.Value),
                    type_bits: c.CacheType.Value,
                    size_kib: cache_kib(gpu, c),
                    line_bytes: c.CacheLineSize,
                    associativity: c.CacheAssociativity,
                    processor_id_low: c.ProcessorIdLow,
                })
                .collect()
        }),
        links,
    }
}

/// The report with the filters applied. Err: a `--gpu` index the system does not have.
pub fn build(backend: &Backend, r: &SystemReport, o: &Options) -> Result<SystemInfo, String> {
    let mut gpu_count = 0u32;
    let mut nodes = Vec::new();
    for (id, n) in r.nodes.iter().enumerate() {
        let gpu_index = report::is_gpu(&n.props).then(|| {
            gpu_count += 1;
            gpu_count - 1
        });
        let keep = match gpu_index {
            Some(g) => o.gpus.is_empty() || o.gpus.contains(&g),
            None => o.gpus.is_empty() && !o.gpus_only,
        };
        if keep {
            nodes.push(node_info(r, id, n, gpu_index, o.raw_caches));
        }
    }
    if let Some(bad) = o.gpus.iter().find(|&&g| g >= gpu_count) {
        let have = match gpu_count {
            0 => "no GPU".to_string(),
            1 => "1 GPU: --gpu 0".to_string(),
            n => format!("{n} GPUs: --gpu 0 to {}", n - 1),
        };
        return Err(format!("--gpu {bad}: this system has {have}"));
    }
    Ok(SystemInfo {
        backend: backend.clone(),
        kfd_version: format!("{}.{}", r.version.KernelInterfaceMajorVersion, r.version.KernelInterfaceMinorVersion),
        model: r.model,
        platform: Platform { oem: r.system.PlatformOem, id: r.system.PlatformId, rev: r.system.PlatformRev },
        num_nodes: r.system.NumNodes,
        nodes,
    })
}
