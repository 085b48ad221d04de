//! What the model needs to know about each GPU, read from its sysfs tree (so a catalogue entry
//! and an `HSA_MODEL_TOPOLOGY` directory are treated alike), and the apertures the kernel
//! computes for it.

use crate::vfs::{parse_properties, prop, Tree};

/// Which `kfd_init_apertures_*` the kernel uses for a GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApertureFamily {
    /// gfx7/gfx8 (`kfd_init_apertures_vi`).
    Vi,
    /// gfx9, gfx10, gfx11, gfx12.0 (`kfd_init_apertures_v9`).
    V9,
    /// GC 12.1 and later (`kfd_init_apertures_v12`, 57-bit).
    V12,
}

/// One process-device aperture set (`struct kfd_process_device_apertures` less gpu_id).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Apertures {
    pub lds_base: u64,
    pub lds_limit: u64,
    pub scratch_base: u64,
    pub scratch_limit: u64,
    pub gpuvm_base: u64,
    pub gpuvm_limit: u64,
}

/// `AMDGPU_VA_RESERVED_BOTTOM`: mainline's gpuvm_base (older kernels used 16 MiB).
pub const GPUVM_BASE: u64 = 0x1_0000;
/// 4 GiB window limit for LDS and scratch (`MAKE_*_APP_LIMIT`).
const fn window_limit(base: u64) -> u64 {
    (base & 0xFFFF_FFFF_0000_0000) | 0xFFFF_FFFF
}

impl ApertureFamily {
    /// The apertures of a 64-bit process on a dGPU of this family. `gpuvm_size` is
    /// `min(max_pfn << 12, AMDGPU_GMC_HOLE_START)`.
    pub fn apertures(self, gpuvm_size: u64) -> Apertures {
        let gpuvm_limit = gpuvm_size - 1;
        match self {
            ApertureFamily::Vi => {
                let lds = 1u64 << 61;
                let scratch = (1u64 << 61) + 0x1_0000_0000;
                Apertures {
                    lds_base: lds,
                    lds_limit: window_limit(lds),
                    scratch_base: scratch,
                    scratch_limit: window_limit(scratch),
                    gpuvm_base: GPUVM_BASE,
                    gpuvm_limit,
                }
            }
            ApertureFamily::V9 => {
                let lds = 1u64 << 48;
                let scratch = 2u64 << 48;
                Apertures {
                    lds_base: lds,
                    lds_limit: window_limit(lds),
                    scratch_base: scratch,
                    scratch_limit: window_limit(scratch),
                    gpuvm_base: GPUVM_BASE,
                    gpuvm_limit,
                }
            }
            ApertureFamily::V12 => Apertures {
                lds_base: 0x2000_0000_0000_0000,
                lds_limit: 0x2000_0000_FFFF_FFFF,
                scratch_base: 0x1000_0000_0000_0000,
                scratch_limit: 0x1000_0000_0000_0000 + (1u64 << 57) - 1,
                gpuvm_base: GPUVM_BASE,
                gpuvm_limit,
            },
        }
    }

    /// gpuvm_size of the family's default VM: 48-bit on gfx9+ (capped at the GMC hole start,
    /// 1 << 47), 40-bit on gfx7/gfx8.
    pub fn gpuvm_size(self) -> u64 {
        match self {
            ApertureFamily::Vi => 1u64 << 40,
            ApertureFamily::V9 | ApertureFamily::V12 => 1u64 << 47,
        }
    }
}

/// A GPU node as the model sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuNode {
    /// sysfs node index.
    pub node: u32,
    pub gpu_id: u32,
    pub drm_render_minor: u32,
    /// (major, minor, stepping), from gfx_target_version or the device id.
    pub gfx_version: (u32, u32, u32),
    pub device_id: u32,
    /// Local memory (sum of the FB_PUBLIC/FB_PRIVATE banks), bytes.
    pub vram_bytes: u64,
    /// The FB_PRIVATE part (not CPU-visible). A GPU whose VRAM is all public has a large BAR
    /// (`kfd_dev_is_large_bar`).
    pub vram_private_bytes: u64,
    /// Frequency of the GPU clock counter (GET_CLOCK_COUNTERS), Hz.
    pub counter_hz: u64,
    pub family: ApertureFamily,
}

impl GpuNode {
    pub fn apertures(&self) -> Apertures {
        self.family.apertures(self.family.gpuvm_size())
    }

    /// `kfd_dev_is_large_bar`: all VRAM is CPU-visible (no FB_PRIVATE bank, some FB_PUBLIC).
    pub fn large_bar(&self) -> bool {
        self.vram_private_bytes == 0 && self.vram_bytes > 0
    }

    /// Bytes of GPU virtual address space of the process VM (`max_pfn << 12`): 40-bit on
    /// gfx7/gfx8, 48-bit on gfx9 to gfx12.0, 57-bit from GC 12.1. A mapping must end below it.
    pub fn vm_size(&self) -> u64 {
        match self.family {
            ApertureFamily::Vi => 1 << 40,
            ApertureFamily::V9 => 1 << 48,
            ApertureFamily::V12 => 1 << 57,
        }
    }

    /// `kfd_doorbell_process_slice`: 1024 queue doorbells per process, 8 bytes each on SOC15
    /// (gfx9+), 4 bytes before, rounded up to a page.
    pub fn doorbell_slice_bytes(&self) -> u64 {
        match self.family {
            ApertureFamily::Vi => 4096,
            _ => 8192,
        }
    }
}

/// System memory of the topology: the sum of the CPU nodes' memory banks (0 if none).
pub fn system_memory_bytes(tree: &Tree) -> u64 {
    let n = tree.count_numbered("nodes").unwrap_or(0);
    let mut total = 0u64;
    for node in 0..n {
        let base = format!("nodes/{node}");
        let gpu = tree.read_str(&format!("{base}/gpu_id")).and_then(|s| s.trim().parse::<u32>().ok()).unwrap_or(0);
        if gpu != 0 {
            continue;
        }
        for b in 0..tree.count_numbered(&format!("{base}/mem_banks")).unwrap_or(0) {
            if let Some(bank) = tree.read_str(&format!("{base}/mem_banks/{b}/properties")) {
                let bank = parse_properties(&bank);
                if prop(&bank, "heap_type") == Some(0) {
                    total = total.saturating_add(prop(&bank, "size_in_bytes").unwrap_or(0));
                }
            }
        }
    }
    total
}

/// gfx version of pre-gfx_target_version kernels, by PCI device id (the parts the catalogue and
/// common 2018-era trees have).
fn gfx_from_device_id(device_id: u32) -> Option<(u32, u32, u32)> {
    Some(match device_id {
        0x6860..=0x687f => (9, 0, 0),                   // Vega 10
        0x69a0..=0x69af => (9, 0, 4),                   // Vega 12
        0x66a0..=0x66af => (9, 0, 6),                   // Vega 20
        0x7300 | 0x730f => (8, 0, 3),                   // Fiji
        0x67c0..=0x67df | 0x6fdf => (8, 0, 3),          // Polaris 10
        0x67e0..=0x67ff | 0x6980..=0x699f => (8, 0, 3), // Polaris 11/12
        0x6920..=0x693f => (8, 0, 2),                   // Tonga
        0x67a0..=0x67bf => (7, 0, 1),                   // Hawaii
        _ => return None,
    })
}

fn family_of(v: (u32, u32, u32)) -> ApertureFamily {
    match v {
        (7 | 8, _, _) => ApertureFamily::Vi,
        (m, n, _) if m > 12 || (m == 12 && n >= 1) => ApertureFamily::V12,
        _ => ApertureFamily::V9,
    }
}

/// Why a tree cannot serve as a KFD topology (the message names the offending file).
pub fn check_and_list_gpus(tree: &Tree, counter_hz: u64) -> Result<Vec<GpuNode>, String> {
    if !tree.is_dir("nodes") {
        return Err("nodes/ missing".into());
    }
    if tree.read_str("generation_id").is_none() {
        return Err("generation_id missing".into());
    }
    if tree.read_str("system_properties").is_none() {
        return Err("system_properties missing".into());
    }
    let n = tree.count_numbered("nodes").map_err(|_| "nodes/ unreadable".to_string())?;
    if n == 0 {
        return Err("nodes/ is empty".into());
    }
    let mut gpus = Vec::new();
    for node in 0..n {
        let base = format!("nodes/{node}");
        let gpu_id =
            tree.read_str(&format!("{base}/gpu_id")).ok_or_else(|| format!("{base}/gpu_id missing (the thunk reads it for every node)"))?;
        let gpu_id: u32 = gpu_id.trim().parse().map_err(|_| format!("{base}/gpu_id is not a number: {:?}", gpu_id.trim()))?;
        let text = tree.read_str(&format!("{base}/properties")).ok_or_else(|| format!("{base}/properties missing"))?;
        if gpu_id == 0 {
            continue;
        }
        let props = parse_properties(&text);
        let minor = prop(&props, "drm_render_minor").unwrap_or(0);
        if minor == 0 || minor > 255 {
            return Err(format!("{base}: GPU node without a valid drm_render_minor"));
        }
        let device_id = prop(&props, "device_id").unwrap_or(0) as u32;
        let gfx = prop(&props, "gfx_target_version").unwrap_or(0) as u32;
        let gfx_version =
            if gfx != 0 { ((gfx / 10000) % 100, (gfx / 100) % 100, gfx % 100) } else { gfx_from_device_id(device_id).unwrap_or((9, 0, 0)) };
        let banks = tree.count_numbered(&format!("{base}/mem_banks")).unwrap_or(0);
        let mut vram_bytes = 0u64;
        let mut vram_private_bytes = 0u64;
        for b in 0..banks {
            let Some(bank) = tree.read_str(&format!("{base}/mem_banks/{b}/properties")) else {
                return Err(format!("{base}/mem_banks/{b}/properties missing"));
            };
            let bank = parse_properties(&bank);
            let size = prop(&bank, "size_in_bytes").unwrap_or(0);
            match prop(&bank, "heap_type") {
                Some(1) => vram_bytes = vram_bytes.saturating_add(size),
                Some(2) => {
                    vram_bytes = vram_bytes.saturating_add(size);
                    vram_private_bytes = vram_private_bytes.saturating_add(size);
                }
                _ => {}
            }
        }
        gpus.push(GpuNode {
            node,
            gpu_id,
            drm_render_minor: minor as u32,
            gfx_version,
            device_id,
            vram_bytes,
            vram_private_bytes,
            counter_hz,
            family: family_of(gfx_version),
        });
    }
    let mut seen = std::collections::BTreeSet::new();
    for g in &gpus {
        if !seen.insert(g.gpu_id) {
            return Err(format!("nodes/{}: gpu_id {} is used twice", g.node, g.gpu_id));
        }
    }
    Ok(gpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families() {
        assert_eq!(family_of((9, 4, 2)), ApertureFamily::V9);
        assert_eq!(family_of((11, 0, 0)), ApertureFamily::V9);
        assert_eq!(family_of((12, 0, 1)), ApertureFamily::V9);
        assert_eq!(family_of((12, 1, 0)), ApertureFamily::V12);
        assert_eq!(family_of((8, 0, 3)), ApertureFamily::Vi);
        let a = ApertureFamily::V9.apertures(1 << 47);
        assert_eq!(a.lds_base, 0x0001_0000_0000_0000);
        assert_eq!(a.lds_limit, 0x0001_0000_FFFF_FFFF);
        assert_eq!(a.scratch_base, 0x0002_0000_0000_0000);
        assert_eq!(a.scratch_limit, 0x0002_0000_FFFF_FFFF);
        assert_eq!(a.gpuvm_limit, 0x0000_7FFF_FFFF_FFFF);
        let v = ApertureFamily::Vi.apertures(1 << 40);
        assert_eq!(v.scratch_base, 0x2000_0001_0000_0000);
        assert_eq!(v.scratch_limit, 0x2000_0001_FFFF_FFFF);
        let w = ApertureFamily::V12.apertures(1 << 47);
        assert_eq!(w.scratch_limit, 0x11FF_FFFF_FFFF_FFFF);
    }
}
