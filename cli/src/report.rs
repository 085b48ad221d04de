//! Gather the topology through the C API: what hsaKmtGetNode*Properties say about each node.

use hsakmt::safe;
use hsakmt_core::abi::hsakmt::*;

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
        // libhsakmt always prints a model's configuration errors itself ("hsakmt: ..."):
        // said once is enough.
        Some(d) if d.starts_with("software model:") || d.starts_with("HSA_MODEL_LIB=") || d.contains("built without it") => {
            format!("{what} failed: {s} (the reason is above)")
        }
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
