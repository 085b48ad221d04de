//! `kmtinfo --json`: the same report as JSON (hand-written: a handful of objects, no schema
//! machinery needed).

use crate::report::{self, SystemReport};
use std::fmt::Write;

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

pub fn render(backend: &str, r: &SystemReport) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "{{\"backend\":{},\"kfd_version\":\"{}.{}\",\"model\":{},\"platform\":{{\"oem\":{},\"id\":{},\"rev\":{}}},\"nodes\":[",
        esc(backend),
        r.version.KernelInterfaceMajorVersion,
        r.version.KernelInterfaceMinorVersion,
        r.model,
        r.system.PlatformOem,
        r.system.PlatformId,
        r.system.PlatformRev
    );
    for (id, n) in r.nodes.iter().enumerate() {
        let p = &n.props;
        if id > 0 {
            o.push(',');
        }
        let gpu = report::is_gpu(p);
        let _ = write!(
            o,
            "{{\"id\":{id},\"kind\":\"{}\",\"gpu_id\":{},\"gfx_target\":{},\"amd_name\":{},\"marketing_name\":{},\"cpu_cores\":{},\"simds\":{},\"simd_per_cu\":{},\"waves_per_simd\":{},\"wavefront_size\":{},\"lds_kib\":{},\"sdma_engines\":{},\"sdma_xgmi_engines\":{},\"num_xcc\":{},\"hive_id\":{},\"device_id\":{},\"drm_render_minor\":{},\"wallclock_hz\":{}",
            if gpu { "gpu" } else { "cpu" },
            { p.KFDGpuID },
            if gpu { esc(&report::gfx_target(p)) } else { "null".into() },
            esc(&report::amd_name(p)),
            esc(&report::marketing_name(p)),
            { p.NumCPUCores },
            { p.NumFComputeCores },
            { p.NumSIMDPerCU },
            { p.MaxWavesPerSIMD },
            { p.WaveFrontSize },
            { p.LDSSizeInKB },
            { p.NumSdmaEngines },
            { p.NumSdmaXgmiEngines },
            { p.NumXcc },
            { p.HiveID },
            { p.DeviceId },
            { p.DrmRenderMinor },
            n.wallclock_hz
        );
        o.push_str(",\"memory\":[");
        for (i, m) in n.mem.iter().enumerate() {
            if i > 0 {
                o.push(',');
            }
            let _ = write!(
                o,
                "{{\"heap_type\":{},\"heap\":{},\"size\":{},\"va\":{}}}",
                m.HeapType,
                esc(report::heap_name(m.HeapType)),
                m.size_in_bytes(),
                { m.VirtualBaseAddress }
            );
        }
        o.push_str("],\"caches\":[");
        for (i, c) in n.caches.iter().enumerate() {
            if i > 0 {
                o.push(',');
            }
            let _ = write!(
                o,
                "{{\"level\":{},\"size_kib\":{},\"line\":{},\"type\":{}}}",
                { c.CacheLevel },
                { c.CacheSize },
                { c.CacheLineSize },
                { c.CacheType.Value }
            );
        }
        o.push_str("],\"links\":[");
        for (i, l) in n.links.iter().enumerate() {
            if i > 0 {
                o.push(',');
            }
            let _ = write!(
                o,
                "{{\"to\":{},\"type\":{},\"type_name\":{},\"weight\":{},\"min_bandwidth\":{},\"max_bandwidth\":{}}}",
                { l.NodeTo },
                l.IoLinkType,
                esc(report::link_type_name(l.IoLinkType)),
                { l.Weight },
                { l.MinimumBandwidth },
                { l.MaximumBandwidth }
            );
        }
        o.push_str("]}");
    }
    o.push_str("]}");
    o
}
