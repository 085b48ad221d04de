//! What the model GPU counts (model/COUNTERS.md): per GPU, packets executed per engine,
//! dispatches with their workgroups, waves and work-items, data bytes read and written per
//! engine and 64-byte memory requests. Relaxed atomics bumped by the engines (no allocation,
//! no lock); read by the PMC path (`Kfd::pmc_counter`) and by tools (`Model::gpu_counters`).
//!
//! Counts are of this process's model: a forked child counts its own queues.

use crate::engine::EngineKind;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// One GPU's counters.
#[derive(Default)]
pub(crate) struct GpuCounters {
    packets: [AtomicU64; 3],
    bytes_read: [AtomicU64; 3],
    bytes_written: [AtomicU64; 3],
    read_reqs: AtomicU64,
    write_reqs: AtomicU64,
    dispatches: AtomicU64,
    workgroups: AtomicU64,
    waves: AtomicU64,
    items: AtomicU64,
}

/// A copy of one GPU's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CounterSnapshot {
    /// Packets executed (indirect-buffer packets included), indexed AQL, PM4, SDMA.
    pub packets: [u64; 3],
    /// Data bytes read and written by copies and fills (dispatched model kernels, SDMA
    /// COPY_LINEAR / WRITE_UNTILED / CONSTANT_FILL), per engine.
    pub bytes_read: [u64; 3],
    pub bytes_written: [u64; 3],
    /// The same accesses as 64-byte memory requests (each access rounded up).
    pub read_reqs: u64,
    pub write_reqs: u64,
    /// Kernel dispatches (AQL and PM4 DISPATCH_DIRECT) and what they launched.
    pub dispatches: u64,
    pub workgroups: u64,
    pub waves: u64,
    pub items: u64,
}

fn idx(kind: EngineKind) -> usize {
    match kind {
        EngineKind::Aql => 0,
        EngineKind::Pm4 => 1,
        EngineKind::Sdma => 2,
    }
}

/// Workgroups and waves of a dispatch: the grid cut into workgroups (the last one of a
/// dimension partial), each workgroup's work-items in waves of `wave` lanes.
pub fn launch_shape(grid: [u32; 3], wg: [u16; 3], wave: u64) -> (u64, u64) {
    // Per dimension: (size of the workgroups, how many) for full ones and the partial one.
    let parts = |d: usize| {
        let (g, w) = (u64::from(grid[d]), u64::from(wg[d]).max(1));
        [(w, g / w), (g % w, u64::from(g % w != 0))]
    };
    let (px, py, pz) = (parts(0), parts(1), parts(2));
    let (mut groups, mut waves) = (0u64, 0u64);
    for &(sx, nx) in &px {
        for &(sy, ny) in &py {
            for &(sz, nz) in &pz {
                // Hardware counters wrap; a grid of 2^32 in every dimension must not panic.
                let n = nx.saturating_mul(ny).saturating_mul(nz);
                groups = groups.wrapping_add(n);
                waves = waves.wrapping_add(n.saturating_mul(sx.saturating_mul(sy).saturating_mul(sz).div_ceil(wave.max(1))));
            }
        }
    }
    (groups, waves)
}

impl GpuCounters {
    pub(crate) fn packets(&self, kind: EngineKind, n: u64) {
        if n != 0 {
            self.packets[idx(kind)].fetch_add(n, Relaxed);
        }
    }

    pub(crate) fn read(&self, kind: EngineKind, bytes: u64) {
        self.bytes_read[idx(kind)].fetch_add(bytes, Relaxed);
        self.read_reqs.fetch_add(bytes.div_ceil(64), Relaxed);
    }

    pub(crate) fn written(&self, kind: EngineKind, bytes: u64) {
        self.bytes_written[idx(kind)].fetch_add(bytes, Relaxed);
        self.write_reqs.fetch_add(bytes.div_ceil(64), Relaxed);
    }

    pub(crate) fn dispatch(&self, grid: [u32; 3], wg: [u16; 3], wave: u64) {
        let (groups, waves) = launch_shape(grid, wg, wave);
        self.dispatches.fetch_add(1, Relaxed);
        self.workgroups.fetch_add(groups, Relaxed);
        self.waves.fetch_add(waves, Relaxed);
        self.items.fetch_add(grid.iter().fold(1u64, |a, &g| a.saturating_mul(u64::from(g))), Relaxed);
    }

    pub(crate) fn snapshot(&self) -> CounterSnapshot {
        let l = |a: &AtomicU64| a.load(Relaxed);
        CounterSnapshot {
            packets: [l(&self.packets[0]), l(&self.packets[1]), l(&self.packets[2])],
            bytes_read: [l(&self.bytes_read[0]), l(&self.bytes_read[1]), l(&self.bytes_read[2])],
            bytes_written: [l(&self.bytes_written[0]), l(&self.bytes_written[1]), l(&self.bytes_written[2])],
            read_reqs: l(&self.read_reqs),
            write_reqs: l(&self.write_reqs),
            dispatches: l(&self.dispatches),
            workgroups: l(&self.workgroups),
            waves: l(&self.waves),
            items: l(&self.items),
        }
    }
}

/// What a PMC counter of the model GPU reads (model/COUNTERS.md), by the GPU's gfx version,
/// block (upstream's `enum perf_block_id`) and counter id. Only gfx9 GPUs (upstream's vega
/// table) are mapped; ids are those of rocprofiler-sdk's counter definitions for that gfx.
pub(crate) fn pmc_value(gfx: (u32, u32, u32), block: u32, id: u64, c: &GpuCounters, clock: impl Fn() -> u64) -> Option<u64> {
    use hsakmt_core::pmc::block::{GRBM, SPI, SQ, TCC};
    if gfx.0 != 9 {
        return None;
    }
    // gfx90a and gfx94x renumbered SPI and TCC against gfx900/gfx906.
    let newer = gfx.1 >= 4 || (gfx.1 == 0 && gfx.2 >= 10);
    let (tg, wv, wr, wr64, rd) = if newer { (49, 52, 26, 27, 38) } else { (65, 68, 29, 30, 41) };
    let l = |a: &AtomicU64| a.load(Relaxed);
    Some(match (block, id) {
        (GRBM, 0) => clock(),                                 // GRBM_COUNT: GPU clocks
        (SQ, 4) => l(&c.waves),                               // SQ_WAVES
        (SQ, 14) => l(&c.items),                              // SQ_ITEMS
        (SPI, x) if x == tg => l(&c.workgroups),              // SPI_CSN_NUM_THREADGROUPS
        (SPI, x) if x == wv => l(&c.waves),                   // SPI_CSN_WAVE
        (TCC, x) if x == wr || x == wr64 => l(&c.write_reqs), // TCC_EA_WRREQ(_64B): stand-in
        (TCC, x) if x == rd => l(&c.read_reqs),               // TCC_EA_RDREQ: stand-in
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::launch_shape;

    #[test]
    fn shapes() {
        // 256 items in workgroups of 64, waves of 64: 4 groups, 4 waves.
        assert_eq!(launch_shape([256, 1, 1], [64, 1, 1], 64), (4, 4));
        // 100 items in groups of 64: one full group (1 wave) and one of 36 (1 wave).
        assert_eq!(launch_shape([100, 1, 1], [64, 1, 1], 64), (2, 2));
        // Groups of 256 items, wave 64: 4 waves each; 2-D 512 x 3 with groups 256 x 1 -> 6 groups.
        assert_eq!(launch_shape([512, 3, 1], [256, 1, 1], 64), (6, 24));
        // Wave 32, group of 48 items: 2 waves.
        assert_eq!(launch_shape([48, 1, 1], [48, 1, 1], 32), (1, 2));
        // A 10 x 10 grid in 8 x 8 groups: 4 groups: 64 items (1 wave), 16, 16, 4 (1 wave each).
        assert_eq!(launch_shape([10, 10, 1], [8, 8, 1], 64), (4, 4));
        // The largest grid in the smallest groups: no overflow panic.
        let _ = launch_shape([u32::MAX; 3], [1; 3], 64);
        let _ = launch_shape([u32::MAX; 3], [u16::MAX; 3], 1);
    }
}
