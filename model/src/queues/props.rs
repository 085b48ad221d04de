//! A GPU node's queue properties, read from its sysfs properties (what CREATE_QUEUE checks
//! sizes against).

use super::*;

/// What CREATE_QUEUE needs to know of a GPU node (its sysfs properties and the sizes the kernel
/// derives from them in kfd_queue_ctx_save_restore_size).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct NodeQueueProps {
    /// gfx_target_version (major * 10000 + minor * 100 + stepping).
    pub(super) gfxv: u32,
    pub(super) cu_active: u32,
    pub(super) num_xcc: u32,
    pub(super) num_gws: u32,
    pub(super) sdma_engines: u32,
    pub(super) xgmi_engines: u32,
    pub(super) sdma_queues_per_engine: u32,
    pub(super) eop_buffer_size: u32,
    pub(super) ctl_stack_size: u32,
    pub(super) cwsr_size: u32,
    pub(super) debug_memory_size: u32,
    /// HSA_CAP_PER_QUEUE_RESET_SUPPORTED (capability bit 31): a hung compute queue is reset
    /// alone instead of the whole GPU.
    pub(super) per_queue_reset: bool,
    /// HSA_CAP2_PER_SDMA_QUEUE_RESET_SUPPORTED (capability2 bit 0): the same for SDMA queues.
    pub(super) per_sdma_queue_reset: bool,
}

pub(super) fn align(x: u64, a: u64) -> u64 {
    x.div_ceil(a).saturating_mul(a)
}

impl NodeQueueProps {
    pub(super) fn soc15(&self) -> bool {
        self.gfxv >= 90000
    }

    /// kfd_get_vgpr_size_per_cu.
    pub(super) fn vgpr_size_per_cu(gfxv: u32) -> u64 {
        match gfxv {
            90402 | 90010 | 90008 | 90500 => 0x80000,
            110000 | 110001 | 120000 | 120001 => 0x60000,
            _ => 0x40000,
        }
    }

    /// kfd_queue_ctx_save_restore_size: control stack, CWSR and debugger sizes and the EOP size.
    pub(super) fn derive(&mut self, simd_count: u64, simd_per_cu: u64, array_count: u64, sa_per_engine: u64, lds_kb: u64) {
        let gfxv = self.gfxv;
        if gfxv < 80001 {
            return;
        }
        let xcc = u64::from(self.num_xcc.max(1));
        let cu_num = simd_count / simd_per_cu.max(1) / xcc;
        let wave_num = if gfxv < 100100 { (cu_num * 40).min(array_count / sa_per_engine.max(1) * 512) } else { cu_num * 32 };
        let lds = if gfxv == 90500 { lds_kb << 10 } else { 0x10000 };
        let wg_data = align(cu_num * (Self::vgpr_size_per_cu(gfxv) + 0x4000 + lds + 0x1000), PAGE);
        let per_wave = if gfxv >= 100100 { 12 } else { 8 };
        let mut ctl = align(40 + wave_num * per_wave + 8, PAGE);
        if gfxv / 10000 * 10000 == 100000 {
            // The hardware limits the control stack to 0x7000 on gfx10.
            ctl = ctl.min(0x7000);
        }
        self.ctl_stack_size = ctl.min(u64::from(u32::MAX)) as u32;
        self.debug_memory_size = align(wave_num * 32, 64).min(u64::from(u32::MAX)) as u32;
        self.cwsr_size = (ctl + wg_data).min(u64::from(u32::MAX)) as u32;
        self.eop_buffer_size = if gfxv == 80002 { 0x8000 } else { 4096 };
    }

    /// The queue limit of pqm_create_queue: the HWS limit, raised on GC 9.4.3/9.4.4/9.5.0
    /// (gfx942 / gfx950).
    pub(super) fn max_queues(&self) -> u32 {
        match self.gfxv {
            90402 | 90500 => 255,
            _ => 127,
        }
    }

    /// First doorbell of each SDMA engine and the reserved non-CP range [first, last] of the
    /// SOC15 doorbell layouts (amdgpu_doorbell.h): Vega10/Vega12/Raven use the DOORBELL64 layout,
    /// later GPUs the Vega20/Navi10 one.
    pub(super) fn sdma_doorbell_base(&self, engine: u32) -> u32 {
        if self.vega10_layout() {
            0xF0 + 2 * engine
        } else {
            0x100 + 0xA * engine
        }
    }

    pub(super) fn non_cp_range(&self) -> (u32, u32) {
        if self.vega10_layout() {
            (0xF0, 0xFF)
        } else {
            (0x100, 0x18F)
        }
    }

    pub(super) fn vega10_layout(&self) -> bool {
        matches!(self.gfxv, 90000 | 90002 | 90004 | 90100..=90299)
    }
}

impl Model {
    pub(super) fn node_queue_props(&self, g: usize) -> NodeQueueProps {
        let node = &self.gpus[g];
        let text = self.tree.read_str(&format!("nodes/{}/properties", node.node)).unwrap_or_default();
        let p = parse_properties(&text);
        let get = |k: &str| prop(&p, k);
        let (ma, mi, st) = node.gfx_version;
        let gfxv = ma * 10000 + mi * 100 + st;
        // Kernels before the SDMA properties existed: the device-info defaults of their GPUs
        // (two engines; two queues per engine before Vega20).
        let old_qpe = if gfxv < 90006 || (90100..90300).contains(&gfxv) { 2 } else { 8 };
        let u = |v: Option<u64>, d: u32| v.map(|x| x.min(u64::from(u32::MAX)) as u32).unwrap_or(d);
        let simd_count = get("simd_count").unwrap_or(0);
        let simd_per_cu = get("simd_per_cu").unwrap_or(1).max(1);
        let mut n = NodeQueueProps {
            gfxv,
            num_xcc: u(get("num_xcc"), 1).max(1),
            num_gws: u(get("num_gws"), 0),
            sdma_engines: u(get("num_sdma_engines"), 2),
            xgmi_engines: u(get("num_sdma_xgmi_engines"), 0),
            sdma_queues_per_engine: u(get("num_sdma_queues_per_engine"), old_qpe),
            per_queue_reset: get("capability").is_some_and(|c| c & (1 << 31) != 0),
            per_sdma_queue_reset: get("capability2").is_some_and(|c| c & 1 != 0),
            ..NodeQueueProps::default()
        };
        n.cu_active = (simd_count / simd_per_cu).min(u64::from(u32::MAX)) as u32;
        n.derive(
            simd_count,
            simd_per_cu,
            get("array_count").unwrap_or(0),
            get("simd_arrays_per_engine").unwrap_or(1),
            get("lds_size_in_kb").unwrap_or(64),
        );
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(gfxv: u32, simd: u64, simd_per_cu: u64, arrays: u64, sa: u64, xcc: u32) -> NodeQueueProps {
        let mut n = NodeQueueProps { gfxv, num_xcc: xcc, ..Default::default() };
        n.derive(simd, simd_per_cu, arrays, sa, 64);
        n
    }

    #[test]
    fn ctx_save_restore_sizes_follow_the_kernel_formula() {
        // MI210 (gfx90a): 104 CUs, wave_num = min(104 * 40, 8 / 1 * 512) = 4096.
        let n = props(90010, 416, 4, 8, 1, 1);
        assert_eq!(n.ctl_stack_size, align(40 + 4096 * 8 + 8, 4096) as u32);
        assert_eq!(n.debug_memory_size, 4096 * 32);
        let wg = align(104 * (0x80000 + 0x4000 + 0x10000 + 0x1000), 4096);
        assert_eq!(u64::from(n.cwsr_size), u64::from(n.ctl_stack_size) + wg);
        assert_eq!(n.eop_buffer_size, 4096);
        // gfx10.1: 12 bytes per wave, capped at 0x7000.
        let n = props(100100, 160, 2, 4, 2, 1);
        assert_eq!(n.ctl_stack_size, 0x7000);
        // Tonga: a 32 KiB EOP buffer; gfx7: no CWSR, no EOP size.
        assert_eq!(props(80002, 128, 4, 4, 1, 1).eop_buffer_size, 0x8000);
        let n = props(70001, 176, 4, 4, 1, 1);
        assert_eq!((n.eop_buffer_size, n.ctl_stack_size, n.cwsr_size), (0, 0, 0));
    }
}
