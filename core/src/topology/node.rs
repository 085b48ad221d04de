//! One node: parsing `nodes/N/properties` into HsaNodeProperties and upstream's
//! post-processing (SVM bit, shader banks, EngineId/AMDName/VGPR, names, NumXcc default).

use super::devices::{self, GfxIp};
use super::props::Props;
use super::{GfxOverride, TopologyConfig};
use crate::abi::hsakmt::HsaNodeProperties;
use zerocopy::FromZeros;

/// What one node properties file says, before post-processing.
#[derive(Clone)]
pub(crate) struct RawNode {
    pub(crate) props: HsaNodeProperties,
    /// `array_count`: kept aside, upstream divides it by simd_arrays_per_engine.
    pub(crate) array_count: u32,
    /// `gfx_target_version` in decimal (90402 is 9.4.2).
    pub(crate) gfxv: u32,
    /// `io_links_count`.
    pub(crate) io_links: u32,
    /// `p2p_links_count`, `None` when the kernel predates p2p links (no key at all).
    pub(crate) p2p_links: Option<u32>,
    /// `drm_render_minor` as written (0 when absent).
    pub(crate) drm_minor: u64,
}

// Keys every kernel since the first KFD prints for every node (K `node_show`); without them
// a node cannot even be classified, so their absence means the file is truncated or garbled.
const NEED_CPU_CORES: u8 = 1;
const NEED_SIMD: u8 = 2;
const NEED_MEM_BANKS: u8 = 4;
const NEED_CACHES: u8 = 8;
const NEED_IO_LINKS: u8 = 16;
const NEED_ALL: u8 = 31;

/// Parse a node properties file. Keys are upstream's; unknown ones are ignored, and values
/// are cast to the field width as upstream's C assignments do.
pub(crate) fn parse_node(text: &[u8]) -> Result<RawNode, &'static str> {
    let mut p = HsaNodeProperties::new_zeroed();
    let mut raw_array_count = 0u32;
    let mut gfxv = 0u32;
    let mut io_links = 0u32;
    let mut p2p_links = None;
    let mut drm_minor = 0u64;
    let mut seen = 0u8;
    let mut pairs = 0usize;
    for (key, v) in Props::new(text) {
        pairs += 1;
        let v32 = v as u32;
        match key {
            b"cpu_cores_count" => {
                p.NumCPUCores = v32;
                seen |= NEED_CPU_CORES;
            }
            b"simd_count" => {
                p.NumFComputeCores = v32;
                seen |= NEED_SIMD;
            }
            b"mem_banks_count" => {
                p.NumMemoryBanks = v32;
                seen |= NEED_MEM_BANKS;
            }
            b"caches_count" => {
                p.NumCaches = v32;
                seen |= NEED_CACHES;
            }
            b"io_links_count" => {
                io_links = v32;
                seen |= NEED_IO_LINKS;
            }
            // The flag is "the key exists", even with value 0 (§2.1): such kernels create
            // the indirect links themselves.
            b"p2p_links_count" => p2p_links = Some(v32),
            b"cpu_core_id_base" => p.CComputeIdLo = v32,
            b"simd_id_base" => p.FComputeIdLo = v32,
            b"capability" => p.Capability.Value = v32,
            b"capability2" => p.Capability2.Value = v32,
            b"debug_prop" => p.DebugProperties.Value = v,
            b"max_waves_per_simd" => p.MaxWavesPerSIMD = v32,
            b"lds_size_in_kb" => p.LDSSizeInKB = v32,
            b"gds_size_in_kb" => p.GDSSizeInKB = v32,
            b"wave_front_size" => p.WaveFrontSize = v32,
            b"array_count" => raw_array_count = v32,
            b"simd_arrays_per_engine" => p.NumArrays = v32,
            b"cu_per_simd_array" => p.NumCUPerArray = v32,
            b"simd_per_cu" => p.NumSIMDPerCU = v32,
            b"max_slots_scratch_cu" => p.MaxSlotsScratchCU = v32,
            // fw_version only carries the uCode bits; the version fields come later.
            b"fw_version" => p.EngineId.Value = v32 & 0x3ff,
            b"vendor_id" => p.VendorId = v as u16,
            b"device_id" => p.DeviceId = v as u16,
            b"location_id" => p.LocationId = v32,
            b"domain" => p.Domain = v32,
            b"max_engine_clk_fcompute" => p.MaxEngineClockMhzFCompute = v32,
            b"max_engine_clk_ccompute" => p.MaxEngineClockMhzCCompute = v32,
            b"local_mem_size" => p.LocalMemSize = v,
            b"drm_render_minor" => {
                p.DrmRenderMinor = v as i32;
                drm_minor = v;
            }
            b"sdma_fw_version" => p.uCodeEngineVersions.Value = v32 & 0x3ff,
            b"hive_id" => p.HiveID = v,
            b"unique_id" => p.UniqueID = v,
            b"num_sdma_engines" => p.NumSdmaEngines = v32,
            b"num_sdma_xgmi_engines" => p.NumSdmaXgmiEngines = v32,
            b"num_gws" => p.NumGws = v as u8,
            b"num_sdma_queues_per_engine" => p.NumSdmaQueuesPerEngine = v as u8,
            b"num_cp_queues" => p.NumCpQueues = v as u8,
            b"cwsr_size" => p.CwsrSize = v32,
            b"ctl_stack_size" => p.CtlStackSize = v32,
            b"num_xcc" => p.NumXcc = v32,
            b"family_id" => p.FamilyID = v32,
            b"gfx_target_version" => gfxv = v32,
            _ => {}
        }
    }
    if pairs == 0 {
        return Err("no properties (empty or garbled file)");
    }
    if seen != NEED_ALL {
        return Err("mandatory node property missing (truncated or garbled file)");
    }
    // NumIOLinks starts as the sum, as upstream's `+=` does; the link reader replaces it with
    // the number of links actually kept.
    p.NumIOLinks = io_links.wrapping_add(p2p_links.unwrap_or(0));
    Ok(RawNode { props: p, array_count: raw_array_count, gfxv, io_links, p2p_links, drm_minor })
}

/// Upstream's GFX_VERSION decode of gfx_target_version (decimal MMmmss).
pub(crate) const fn decode_gfxv(v: u32) -> (u32, u32, u32) {
    ((v / 10000) % 100, (v / 100) % 100, v % 100)
}

/// The HSA_OVERRIDE_GFX_VERSION that applies to user node `user_id`: the per-node variable
/// first, then the global one.
fn gfx_override_for(cfg: &TopologyConfig, user_id: u32) -> Option<GfxOverride> {
    if let Some((_, o)) = cfg.node_gfx_overrides.iter().find(|(n, _)| *n == user_id) {
        return Some(*o);
    }
    if cfg.override_gfx_version_invalid {
        return Some(GfxOverride::Invalid);
    }
    cfg.override_gfx_version.map(|(a, b, c)| GfxOverride::Version(a, b, c))
}

/// Copy an ASCII/byte name into a u16 name field: at most 63 units, NUL-terminated, as
/// upstream widens libdrm's and /proc/cpuinfo's names.
pub(crate) fn set_wide_name(dst: &mut [u16; 64], name: &[u8]) {
    *dst = [0; 64];
    for (d, &s) in dst.iter_mut().take(63).zip(name) {
        *d = u16::from(s);
    }
}

/// Copy a name into AMDName: at most 63 bytes, NUL-terminated.
pub(crate) fn set_amd_name(dst: &mut [u8; 64], name: &[u8]) {
    *dst = [0; 64];
    for (d, &s) in dst.iter_mut().take(63).zip(name) {
        *d = s;
    }
}

/// Upstream's post-processing of one node (§2.2), in upstream's order. `user_id` is the
/// node's index among supported nodes (what HSA_OVERRIDE_GFX_VERSION_<n> names);
/// `model_name` is a marketing name the software model supplied, if any.
/// Fails only on an invalid HSA_OVERRIDE_GFX_VERSION, which fails the whole snapshot.
pub(crate) fn finish_node(
    raw: &RawNode,
    user_id: u32,
    cfg: &TopologyConfig,
    model_name: Option<&[u8]>,
) -> Result<HsaNodeProperties, &'static str> {
    let mut p = raw.props;
    // 1. HSA_USE_SVM=0 clears SVMAPISupported, the only capability bit the thunk touches.
    if cfg.disable_svm {
        p.Capability.set_bf_SVMAPISupported(0);
    }
    // 2. A node without SIMDs is a CPU: no gfx version, names or NumXcc default.
    if p.NumFComputeCores == 0 {
        return Ok(p);
    }
    // 3. Shader engines = arrays / arrays per engine.
    if let Some(banks) = raw.array_count.checked_div(p.NumArrays) {
        p.NumShaderBanks = banks;
    }
    // 4-5. The kernel's version, then the device table (pre-gfx11 only).
    let (major, minor, stepping) = decode_gfxv(raw.gfxv);
    let table: Option<GfxIp> = devices::find_gfxip(p.DeviceId, major);
    // 6. Only a GPU whose version is known gets EngineId, names and register sizes.
    if table.is_some() || raw.gfxv != 0 {
        match gfx_override_for(cfg, user_id) {
            Some(GfxOverride::Invalid) => return Err("invalid HSA_OVERRIDE_GFX_VERSION"),
            Some(GfxOverride::Version(a, b, c)) => {
                // Current upstream leaves EngineId real and reports the override separately;
                // ROCr prefers OverrideEngineId when it is non-zero.
                p.OverrideEngineId.set_bf_Major(a);
                p.OverrideEngineId.set_bf_Minor(b);
                p.OverrideEngineId.set_bf_Stepping(c);
            }
            None => {}
        }
        let (ma, mi, st) = match table {
            Some(t) => (t.major, t.minor, t.stepping),
            None => (major, minor, stepping),
        };
        p.EngineId.set_bf_Major(ma);
        p.EngineId.set_bf_Minor(mi);
        p.EngineId.set_bf_Stepping(st);
        // The packed version upstream formats and compares uses the masked fields.
        let packed = devices::packed_version(p.EngineId.bf_Major(), p.EngineId.bf_Minor(), p.EngineId.bf_Stepping());
        match table {
            Some(t) => set_amd_name(&mut p.AMDName, t.name.as_bytes()),
            None => set_amd_name(&mut p.AMDName, &devices::generic_amd_name(packed)),
        }
        // What upstream asks libdrm: the marketing name and the APU (fusion) flag.
        let known = devices::marketing_name(p.DeviceId);
        match (model_name, known) {
            (Some(name), _) => set_wide_name(&mut p.MarketingName, name),
            (None, Some((name, _))) => set_wide_name(&mut p.MarketingName, name.as_bytes()),
            (None, None) => {}
        }
        let apu = known.is_some_and(|k| k.1) || table.is_some_and(|t| t.apu);
        if apu {
            p.Integrated = 1;
        }
        p.SGPRSizePerCU = devices::SGPR_SIZE_PER_CU;
        p.VGPRSizePerCU = devices::vgpr_size_per_cu(packed);
    }
    // 8. Kernels before partitioning print no num_xcc: one XCC.
    if p.NumXcc == 0 {
        p.NumXcc = 1;
    }
    Ok(p)
}
