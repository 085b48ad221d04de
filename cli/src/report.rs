//! Gather the topology through the C API and render it as text: per-node details and a
//! node × node link matrix (type and weight), in the spirit of `rocm-smi --showtopo`.

use hsakmt::safe;
use hsakmt_core::abi::hsakmt::*;
use std::fmt::Write;

pub struct NodeReport {
    pub props: HsaNodeProperties,
    pub mem: Vec<HsaMemoryProperties>,
    pub caches: Vec<HsaCacheProperties>,
    pub links: Vec<HsaIoLinkProperties>,
    pub wallclock_hz: u64,
}

pub struct SystemReport {
    pub version: HsaVersionInfo,
    pub model: bool,
    pub system: HsaSystemProperties,
    pub nodes: Vec<NodeReport>,
}

fn fail(what: &str, s: hsakmt_core::Status) -> String {
    match safe::last_error() {
        Some(detail) => format!("{what} failed: {s}: {detail}"),
        None => format!("{what} failed: {s}"),
    }
}

pub fn collect() -> Result<SystemReport, String> {
    safe::open().map_err(|s| fail("hsaKmtOpenKFD", s))?;
    let r = collect_open();
    let _ = safe::release_system_properties();
    let _ = safe::close();
    r
}

fn collect_open() -> Result<SystemReport, String> {
    let version = safe::version().map_err(|s| fail("hsaKmtGetVersion", s))?;
    let model = safe::model_enabled().map_err(|s| fail("hsaKmtModelEnabled", s))?;
    let system = safe::acquire_system_properties().map_err(|s| fail("hsaKmtAcquireSystemProperties", s))?;
    let mut nodes = Vec::new();
    for id in 0..system.NumNodes {
        let props = safe::node_properties(id).map_err(|s| fail(&format!("hsaKmtGetNodeProperties({id})"), s))?;
        let mem = safe::memory_properties(id, props.NumMemoryBanks).map_err(|s| fail("hsaKmtGetNodeMemoryProperties", s))?;
        let caches = safe::cache_properties(id, 0, props.NumCaches).map_err(|s| fail("hsaKmtGetNodeCacheProperties", s))?;
        let links = safe::io_link_properties(id, props.NumIOLinks).map_err(|s| fail("hsaKmtGetNodeIoLinkProperties", s))?;
        let wallclock_hz = safe::wallclock_frequency(id).unwrap_or(0);
        nodes.push(NodeReport { props, mem, caches, links, wallclock_hz });
    }
    Ok(SystemReport { version, model, system, nodes })
}

pub fn is_gpu(p: &HsaNodeProperties) -> bool {
    p.KFDGpuID != 0
}

/// "gfx942" from the engine id (major, then minor and stepping as hex digits).
pub fn gfx_target(p: &HsaNodeProperties) -> String {
    let e = p.EngineId;
    format!("gfx{}{:x}{:x}", e.bf_Major(), e.bf_Minor(), e.bf_Stepping())
}

pub fn marketing_name(p: &HsaNodeProperties) -> String {
    let m = p.MarketingName;
    let end = m.iter().position(|&c| c == 0).unwrap_or(m.len());
    String::from_utf16_lossy(&m[..end])
}

pub fn amd_name(p: &HsaNodeProperties) -> String {
    let m = p.AMDName;
    let end = m.iter().position(|&c| c == 0).unwrap_or(m.len());
    String::from_utf8_lossy(&m[..end]).into_owned()
}

pub fn heap_name(t: u32) -> &'static str {
    match t {
        HSA_HEAPTYPE_SYSTEM => "system",
        HSA_HEAPTYPE_FRAME_BUFFER_PUBLIC => "VRAM (public)",
        HSA_HEAPTYPE_FRAME_BUFFER_PRIVATE => "VRAM (private)",
        HSA_HEAPTYPE_GPU_GDS => "GDS",
        HSA_HEAPTYPE_GPU_LDS => "LDS aperture",
        HSA_HEAPTYPE_GPU_SCRATCH => "scratch aperture",
        HSA_HEAPTYPE_DEVICE_SVM => "SVM aperture",
        HSA_HEAPTYPE_MMIO_REMAP => "MMIO remap",
        _ => "other",
    }
}

pub fn link_type_name(t: u32) -> &'static str {
    match t {
        HSA_IOLINKTYPE_HYPERTRANSPORT => "HT",
        HSA_IOLINKTYPE_PCIEXPRESS => "PCIE",
        HSA_IOLINKTYPE_AMBA => "AMBA",
        HSA_IOLINKTYPE_MIPI => "MIPI",
        HSA_IOLINK_TYPE_QPI_1_1 => "QPI",
        HSA_IOLINK_TYPE_INFINIBAND => "IB",
        HSA_IOLINK_TYPE_XGMI => "XGMI",
        _ => "OTHER",
    }
}

fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

pub fn render_text(r: &SystemReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "KFD interface {}.{}{}; {} nodes; platform oem {:#x} id {:#x} rev {}",
        r.version.KernelInterfaceMajorVersion,
        r.version.KernelInterfaceMinorVersion,
        if r.model { " (software model)" } else { "" },
        r.system.NumNodes,
        r.system.PlatformOem,
        r.system.PlatformId,
        r.system.PlatformRev
    );
    for (id, n) in r.nodes.iter().enumerate() {
        let p = &n.props;
        let _ = writeln!(o);
        if is_gpu(p) {
            let _ = writeln!(o, "Node {id}: GPU {} ({}), gpu_id {}", gfx_target(p), marketing_name(p), { p.KFDGpuID });
            let cus = { p.NumFComputeCores }.checked_div(p.NumSIMDPerCU).unwrap_or(0);
            let _ = writeln!(
                o,
                "  compute: {cus} CUs, {} SIMDs, {} waves/SIMD, wave{}, {} XCC, {} MHz",
                { p.NumFComputeCores },
                { p.MaxWavesPerSIMD },
                { p.WaveFrontSize },
                { p.NumXcc },
                { p.MaxEngineClockMhzFCompute }
            );
            let _ = writeln!(
                o,
                "  LDS {} KiB, GDS {} KiB; SDMA engines {} (+{} XGMI), {} queues each",
                { p.LDSSizeInKB },
                { p.GDSSizeInKB },
                { p.NumSdmaEngines },
                { p.NumSdmaXgmiEngines },
                { p.NumSdmaQueuesPerEngine }
            );
            let _ = writeln!(
                o,
                "  device {:#06x}, location {:#x}, domain {}, render minor {}, hive {:#x}",
                { p.DeviceId },
                { p.LocationId },
                { p.Domain },
                { p.DrmRenderMinor },
                { p.HiveID }
            );
            if n.wallclock_hz != 0 {
                let _ = writeln!(o, "  GPU clock counter: {} MHz", n.wallclock_hz / 1_000_000);
            }
        } else {
            let name = marketing_name(p);
            let _ = writeln!(o, "Node {id}: CPU {}", if name.is_empty() { "(no model name)".to_string() } else { name });
            let _ = writeln!(o, "  {} cores from id {}, {} MHz", { p.NumCPUCores }, { p.CComputeIdLo }, { p.MaxEngineClockMhzCCompute });
        }
        for m in &n.mem {
            let _ = writeln!(o, "  memory: {} {}", heap_name(m.HeapType), human(m.size_in_bytes()));
        }
        if !n.caches.is_empty() {
            // Upstream reports GPU caches (from the KFD) in KiB but CPU caches (from
            // /sys/devices/system/cpu) in bytes.
            let unit = if is_gpu(p) { 1024 } else { 1 };
            let mut by_level = std::collections::BTreeMap::<u32, (u32, u64)>::new();
            for c in &n.caches {
                let e = by_level.entry(c.CacheLevel).or_default();
                e.0 += 1;
                e.1 = u64::from(c.CacheSize) * unit;
            }
            let parts: Vec<String> = by_level.iter().map(|(l, (count, size))| format!("L{l} x{count} ({} each)", human(*size))).collect();
            let _ = writeln!(o, "  caches: {}", parts.join(", "));
        }
        for l in &n.links {
            let _ = writeln!(
                o,
                "  link -> node {}: {} weight {} bandwidth {}-{} MB/s",
                { l.NodeTo },
                link_type_name(l.IoLinkType),
                { l.Weight },
                { l.MinimumBandwidth },
                { l.MaximumBandwidth }
            );
        }
    }
    let _ = writeln!(o);
    o.push_str(&render_matrix(r));
    o
}

/// The link between two nodes: the lightest direct link, if any.
pub fn link(r: &SystemReport, from: usize, to: u32) -> Option<HsaIoLinkProperties> {
    r.nodes.get(from)?.links.iter().filter(|l| l.NodeTo == to).min_by_key(|l| l.Weight).copied()
}

fn render_matrix(r: &SystemReport) -> String {
    let n = r.nodes.len();
    let mut o = String::from("Link matrix (type/weight; \"-\" self, \".\" no direct link):\n");
    let w = 10;
    let _ = write!(o, "{:>6}", "");
    for j in 0..n {
        let _ = write!(o, "{:>w$}", format!("N{j}"));
    }
    o.push('\n');
    for i in 0..n {
        let _ = write!(o, "{:>6}", format!("N{i}"));
        for j in 0..n {
            let cell = if i == j {
                "-".to_string()
            } else {
                match link(r, i, j as u32) {
                    Some(l) => format!("{}/{}", link_type_name(l.IoLinkType), { l.Weight }),
                    None => ".".to_string(),
                }
            };
            let _ = write!(o, "{cell:>w$}");
        }
        o.push('\n');
    }
    o
}
