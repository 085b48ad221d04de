//! Rendering of KFD sysfs topology files, in the order and format the kernel's `node_show`,
//! `mem_show`, `kfd_cache_show`, `iolink_show` and `sysprops_show` print them.

use crate::vfs::Tree;
use std::fmt::Write;

/// Which kernel generation's key set to print.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Era {
    /// ~2018 (ROCm 1.x KFD): no p2p_links, gfx_target_version, domain, hive_id, num_sdma_*,
    /// num_cp_queues, num_gws, debug_prop, unique_id, num_xcc; no
    /// recommended_sdma_engine_id_mask in links.
    Kfd2018,
    /// ~2025 (6.x): every key of the mi300x/mi210 fixtures; no capability2, cwsr_size,
    /// ctl_stack_size.
    Kfd2025,
}

/// Every property a node prints. CPU nodes leave the GPU fields 0.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeProps {
    pub cpu_cores_count: u64,
    pub simd_count: u64,
    pub mem_banks_count: u64,
    pub caches_count: u64,
    pub io_links_count: u64,
    pub p2p_links_count: u64,
    pub cpu_core_id_base: u64,
    pub simd_id_base: u64,
    pub max_waves_per_simd: u64,
    pub lds_size_in_kb: u64,
    pub gds_size_in_kb: u64,
    pub num_gws: u64,
    pub wave_front_size: u64,
    pub array_count: u64,
    pub simd_arrays_per_engine: u64,
    pub cu_per_simd_array: u64,
    pub simd_per_cu: u64,
    pub max_slots_scratch_cu: u64,
    pub gfx_target_version: u64,
    pub vendor_id: u64,
    pub device_id: u64,
    pub location_id: u64,
    pub domain: u64,
    pub drm_render_minor: u64,
    pub hive_id: u64,
    pub num_sdma_engines: u64,
    pub num_sdma_xgmi_engines: u64,
    pub num_sdma_queues_per_engine: u64,
    pub num_cp_queues: u64,
    pub max_engine_clk_fcompute: u64,
    pub local_mem_size: u64,
    pub fw_version: u64,
    pub capability: u64,
    pub debug_prop: u64,
    pub sdma_fw_version: u64,
    pub unique_id: u64,
    pub num_xcc: u64,
    pub max_engine_clk_ccompute: u64,
}

fn kv(out: &mut String, k: &str, v: u64) {
    let _ = writeln!(out, "{k} {v}");
}

impl NodeProps {
    /// The `properties` file. `gpu` selects the GPU-only block (the kernel prints it when the
    /// node has a GPU).
    pub fn render(&self, era: Era, gpu: bool) -> String {
        let modern = era == Era::Kfd2025;
        let mut s = String::new();
        kv(&mut s, "cpu_cores_count", self.cpu_cores_count);
        kv(&mut s, "simd_count", self.simd_count);
        kv(&mut s, "mem_banks_count", self.mem_banks_count);
        kv(&mut s, "caches_count", self.caches_count);
        kv(&mut s, "io_links_count", self.io_links_count);
        if modern {
            kv(&mut s, "p2p_links_count", self.p2p_links_count);
        }
        kv(&mut s, "cpu_core_id_base", self.cpu_core_id_base);
        kv(&mut s, "simd_id_base", self.simd_id_base);
        kv(&mut s, "max_waves_per_simd", self.max_waves_per_simd);
        kv(&mut s, "lds_size_in_kb", self.lds_size_in_kb);
        kv(&mut s, "gds_size_in_kb", self.gds_size_in_kb);
        if modern {
            kv(&mut s, "num_gws", self.num_gws);
        }
        kv(&mut s, "wave_front_size", self.wave_front_size);
        kv(&mut s, "array_count", self.array_count);
        kv(&mut s, "simd_arrays_per_engine", self.simd_arrays_per_engine);
        kv(&mut s, "cu_per_simd_array", self.cu_per_simd_array);
        kv(&mut s, "simd_per_cu", self.simd_per_cu);
        kv(&mut s, "max_slots_scratch_cu", self.max_slots_scratch_cu);
        if modern {
            kv(&mut s, "gfx_target_version", self.gfx_target_version);
        }
        kv(&mut s, "vendor_id", self.vendor_id);
        kv(&mut s, "device_id", self.device_id);
        kv(&mut s, "location_id", self.location_id);
        if modern {
            kv(&mut s, "domain", self.domain);
        }
        kv(&mut s, "drm_render_minor", self.drm_render_minor);
        if modern {
            kv(&mut s, "hive_id", self.hive_id);
            kv(&mut s, "num_sdma_engines", self.num_sdma_engines);
            kv(&mut s, "num_sdma_xgmi_engines", self.num_sdma_xgmi_engines);
            kv(&mut s, "num_sdma_queues_per_engine", self.num_sdma_queues_per_engine);
            kv(&mut s, "num_cp_queues", self.num_cp_queues);
        }
        if gpu {
            kv(&mut s, "max_engine_clk_fcompute", self.max_engine_clk_fcompute);
            kv(&mut s, "local_mem_size", self.local_mem_size);
            kv(&mut s, "fw_version", self.fw_version);
            kv(&mut s, "capability", self.capability);
            if modern {
                kv(&mut s, "debug_prop", self.debug_prop);
            }
            kv(&mut s, "sdma_fw_version", self.sdma_fw_version);
            if modern {
                kv(&mut s, "unique_id", self.unique_id);
                kv(&mut s, "num_xcc", self.num_xcc);
            }
        }
        kv(&mut s, "max_engine_clk_ccompute", self.max_engine_clk_ccompute);
        s
    }
}

/// `mem_banks/N/properties`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemBank {
    pub heap_type: u64,
    pub size_in_bytes: u64,
    pub flags: u64,
    pub width: u64,
    pub mem_clk_max: u64,
}

impl MemBank {
    pub fn render(&self) -> String {
        let mut s = String::new();
        kv(&mut s, "heap_type", self.heap_type);
        kv(&mut s, "size_in_bytes", self.size_in_bytes);
        kv(&mut s, "flags", self.flags);
        kv(&mut s, "width", self.width);
        kv(&mut s, "mem_clk_max", self.mem_clk_max);
        s
    }
}

/// `io_links/N/properties` and `p2p_links/N/properties`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    pub link_type: u64,
    pub node_from: u64,
    pub node_to: u64,
    pub weight: u64,
    pub min_bandwidth: u64,
    pub max_bandwidth: u64,
    pub sdma_mask: u64,
    pub flags: u64,
}

impl Link {
    pub fn render(&self, era: Era) -> String {
        let mut s = String::new();
        kv(&mut s, "type", self.link_type);
        kv(&mut s, "version_major", 0);
        kv(&mut s, "version_minor", 0);
        kv(&mut s, "node_from", self.node_from);
        kv(&mut s, "node_to", self.node_to);
        kv(&mut s, "weight", self.weight);
        kv(&mut s, "min_latency", 0);
        kv(&mut s, "max_latency", 0);
        kv(&mut s, "min_bandwidth", self.min_bandwidth);
        kv(&mut s, "max_bandwidth", self.max_bandwidth);
        kv(&mut s, "recommended_transfer_size", 0);
        if era == Era::Kfd2025 {
            kv(&mut s, "recommended_sdma_engine_id_mask", self.sdma_mask);
        }
        kv(&mut s, "flags", self.flags);
        s
    }
}

/// `caches/N/properties`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cache {
    pub processor_id_low: u64,
    pub level: u64,
    /// KiB.
    pub size: u64,
    pub cache_line_size: u64,
    pub cache_type: u64,
    /// Bits of the 256-entry sibling map (bit i = entry i).
    pub sibling_map: [u8; 32],
}

impl Cache {
    pub fn render(&self) -> String {
        let mut s = String::new();
        kv(&mut s, "processor_id_low", self.processor_id_low);
        kv(&mut s, "level", self.level);
        kv(&mut s, "size", self.size);
        kv(&mut s, "cache_line_size", self.cache_line_size);
        kv(&mut s, "cache_lines_per_tag", 0);
        kv(&mut s, "association", 0);
        kv(&mut s, "latency", 0);
        kv(&mut s, "type", self.cache_type);
        s.push_str("sibling_map ");
        for byte in self.sibling_map {
            for bit in 0..8 {
                s.push(if (byte >> bit) & 1 == 1 { '1' } else { '0' });
                s.push(',');
            }
        }
        s.pop();
        s.push('\n');
        s
    }
}

/// One node of a topology being assembled.
#[derive(Clone, Debug)]
pub struct NodeFiles {
    pub gpu_id: u32,
    pub name: String,
    pub props: NodeProps,
    pub mem_banks: Vec<MemBank>,
    /// GPU banks get a `used_memory` file next to `properties` (bytes).
    pub used_memory: Option<u64>,
    pub caches: Vec<Cache>,
    pub io_links: Vec<Link>,
    pub p2p_links: Vec<Link>,
}

/// A whole topology tree being assembled.
#[derive(Clone, Debug)]
pub struct System {
    pub era: Era,
    pub generation_id: u64,
    pub platform_oem: u64,
    pub platform_id: u64,
    pub platform_rev: u64,
    pub nodes: Vec<NodeFiles>,
}

impl System {
    /// Fill the count fields from the lists, then render everything.
    pub fn into_tree(mut self) -> Tree {
        let mut t = Tree::new();
        t.add_file("generation_id", format!("{}\n", self.generation_id));
        t.add_file(
            "system_properties",
            format!("platform_oem {}\nplatform_id {}\nplatform_rev {}\n", self.platform_oem, self.platform_id, self.platform_rev),
        );
        t.add_dir("nodes");
        for (i, n) in self.nodes.iter_mut().enumerate() {
            n.props.mem_banks_count = n.mem_banks.len() as u64;
            n.props.caches_count = n.caches.len() as u64;
            n.props.io_links_count = n.io_links.len() as u64;
            n.props.p2p_links_count = n.p2p_links.len() as u64;
            let base = format!("nodes/{i}");
            t.add_file(&format!("{base}/gpu_id"), format!("{}\n", n.gpu_id));
            t.add_file(&format!("{base}/name"), format!("{}\n", n.name));
            t.add_file(&format!("{base}/properties"), n.props.render(self.era, n.gpu_id != 0));
            t.add_dir(&format!("{base}/mem_banks"));
            for (m, b) in n.mem_banks.iter().enumerate() {
                t.add_file(&format!("{base}/mem_banks/{m}/properties"), b.render());
                if let Some(used) = n.used_memory {
                    t.add_file(&format!("{base}/mem_banks/{m}/used_memory"), format!("{used}\n"));
                }
            }
            t.add_dir(&format!("{base}/caches"));
            for (c, cache) in n.caches.iter().enumerate() {
                t.add_file(&format!("{base}/caches/{c}/properties"), cache.render());
            }
            t.add_dir(&format!("{base}/io_links"));
            for (l, link) in n.io_links.iter().enumerate() {
                t.add_file(&format!("{base}/io_links/{l}/properties"), link.render(self.era));
            }
            if self.era == Era::Kfd2025 {
                t.add_dir(&format!("{base}/p2p_links"));
                for (l, link) in n.p2p_links.iter().enumerate() {
                    t.add_file(&format!("{base}/p2p_links/{l}/properties"), link.render(self.era));
                }
            }
        }
        t
    }
}
