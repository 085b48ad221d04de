//! AcquireSystemProperties plus every Get*Properties call over the 65-node MI300X CPX
//! system (the built-in model's copy of the real fixture), through the C API.

use criterion::{criterion_group, criterion_main, Criterion};
use hsakmt::safe;

fn walk_all_nodes() -> usize {
    let sys = safe::acquire_system_properties().expect("acquire");
    let mut links = 0;
    for id in 0..sys.NumNodes {
        let p = safe::node_properties(id).expect("node");
        let _ = safe::memory_properties(id, p.NumMemoryBanks).expect("mem");
        let _ = safe::cache_properties(id, 0, p.NumCaches).expect("caches");
        links += safe::io_link_properties(id, p.NumIOLinks).expect("links").len();
    }
    links
}

fn topology(c: &mut Criterion) {
    std::env::set_var("HSAKMT_MODEL", "mi300x-cpx");
    safe::open().expect("open the model");
    let mut g = c.benchmark_group("topology-mi300x-cpx-65-nodes");
    // A cold snapshot: release, then Acquire reads every file of the tree again.
    g.bench_function("acquire+get-all (cold snapshot)", |b| {
        b.iter(|| {
            safe::release_system_properties().unwrap();
            walk_all_nodes()
        })
    });
    // A warm snapshot: Acquire returns the cached snapshot; the Get* calls dominate.
    g.bench_function("acquire+get-all (cached snapshot)", |b| b.iter(walk_all_nodes));
    g.finish();
    safe::close().unwrap();
}

criterion_group!(benches, topology);
criterion_main!(benches);
