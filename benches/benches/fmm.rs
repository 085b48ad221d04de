//! The FMM building blocks alone (no C API, no model): the VA allocator's alloc+free cycle and
//! lookup with 10k live ranges, and the BO table's lookup by interior address with 10k BOs.

use criterion::{criterion_group, criterion_main, Criterion};
use hsakmt_core::abi::hsakmt::HsaMemFlags;
use hsakmt_core::fmm::bo::{Bo, BoKind, BoTable};
use hsakmt_core::fmm::va::VaAllocator;
use std::hint::black_box;

const PAGE: u64 = 4096;
const LIVE: usize = 10_000;

/// splitmix64: deterministic, so every run measures the same layout.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A size mix: mostly small buffers, some large ones (which get 2 MiB-ish alignment).
fn size(rng: &mut Rng) -> (u64, u64) {
    match rng.below(16) {
        0 => ((512 + rng.below(1024)) * PAGE, 2 << 20),
        1..=3 => ((16 + rng.below(240)) * PAGE, 64 << 10),
        _ => ((1 + rng.below(8)) * PAGE, PAGE),
    }
}

/// A 1 TiB aperture (a reserved SVM range) with LIVE allocations (guard page 1), after churn so
/// the free space is fragmented.
fn populated(rng: &mut Rng) -> (VaAllocator, Vec<(u64, u64)>) {
    let mut a = VaAllocator::new(2 << 20, (1 << 40) - 1, PAGE).unwrap();
    let mut live = Vec::with_capacity(LIVE);
    for _ in 0..LIVE * 2 {
        let (s, al) = size(rng);
        live.push((a.alloc(s, al, 1).unwrap(), s));
    }
    for _ in 0..LIVE {
        let (s, _) = live.swap_remove(rng.below(live.len() as u64) as usize);
        a.free(s).unwrap();
    }
    (a, live)
}

fn va_allocator(c: &mut Criterion) {
    let mut g = c.benchmark_group("fmm-va-allocator-10k-live");
    let mut rng = Rng(1);
    let (mut a, mut live) = populated(&mut rng);
    // One free of a random live range and one new allocation: the live count stays at 10k.
    g.bench_function("alloc+free cycle", |b| {
        b.iter(|| {
            let i = rng.below(live.len() as u64) as usize;
            a.free(live[i].0).unwrap();
            let (s, al) = size(&mut rng);
            live[i] = (a.alloc(s, al, 1).unwrap(), s);
        })
    });
    a.check_invariants().unwrap();
    let probes: Vec<u64> = (0..4096)
        .map(|_| {
            let (s, n) = live[rng.below(live.len() as u64) as usize];
            s + rng.below(n)
        })
        .collect();
    let mut k = 0;
    g.bench_function("lookup (interior address)", |b| {
        b.iter(|| {
            k = (k + 1) & 4095;
            black_box(a.lookup(black_box(probes[k])))
        })
    });
    g.finish();

    let mut g = c.benchmark_group("fmm-bo-table-10k");
    let mut t = BoTable::new();
    for &(s, n) in &live {
        t.insert(Bo::new(BoKind::Allocated, s, n, HsaMemFlags { Value: 0 }, 1)).unwrap();
    }
    g.bench_function("find by interior address", |b| {
        b.iter(|| {
            k = (k + 1) & 4095;
            black_box(t.find(black_box(probes[k])).map(Bo::start))
        })
    });
    g.finish();
}

criterion_group!(benches, va_allocator);
criterion_main!(benches);
