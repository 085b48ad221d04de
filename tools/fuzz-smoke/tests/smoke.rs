//! The fuzz smoke run of CI: every fuzz target's body (`fuzz/src/<target>.rs`) on a bounded
//! number of generated inputs, as an ordinary test, so targets that no longer build or that
//! fail on plain inputs are caught without a nightly toolchain or libFuzzer.
//!
//! Inputs are deterministic: a xorshift generator seeded by the target's name and the input's
//! number (lengths from 0 to the target's maximum, mostly short), then every committed input
//! of the target: `fuzz/regressions/<target>/` (inputs that once failed) and
//! `fuzz/seeds/<target>/` (a seed corpus), where they exist. `HSAKMT_FUZZ_SMOKE_SCALE=<n>`
//! runs n times as many generated inputs (a longer local run); `HSAKMT_FUZZ_SMOKE_SEED=<n>`
//! starts from another seed. A failing input is written to `target/fuzz-smoke/<target>.input`
//! (a file `cargo fuzz run <target> <file>` replays) before the panic goes on.

use std::path::{Path, PathBuf};

/// xorshift64*: small, fast and the same everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok()?.trim().parse().ok()
}

/// Input `i` of `target`: a length that is mostly short (the targets read a few bytes per
/// operation) and sometimes up to `max_len`, then random bytes.
fn generated(target: &str, i: u64, max_len: usize) -> Vec<u8> {
    let mut seed = env_u64("HSAKMT_FUZZ_SMOKE_SEED").unwrap_or(0x5eed) ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for b in target.bytes() {
        seed = (seed ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let mut r = Rng(seed | 1);
    let len = match r.next() % 4 {
        0 => (r.next() % 16) as usize,
        1 | 2 => (r.next() % 128) as usize,
        _ => (r.next() % max_len as u64) as usize,
    };
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        v.extend_from_slice(&r.next().to_le_bytes());
    }
    v.truncate(len);
    v
}

fn seeds(target: &str) -> Vec<PathBuf> {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut files: Vec<PathBuf> = ["regressions", "seeds"]
        .iter()
        .flat_map(|d| std::fs::read_dir(fuzz.join(d).join(target)).into_iter().flatten())
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Keeps the input being run, and writes it out if the body panics.
struct Witness<'a> {
    target: &'a str,
    input: &'a [u8],
}

impl Drop for Witness<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/fuzz-smoke");
            let path = dir.join(format!("{}.input", self.target));
            if std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(&path, self.input)).is_ok() {
                eprintln!("{}: the failing input is {}", self.target, path.display());
            }
        }
    }
}

fn smoke(target: &str, count: u64, max_len: usize, run: fn(&[u8])) {
    let count = count * env_u64("HSAKMT_FUZZ_SMOKE_SCALE").unwrap_or(1).max(1);
    let started = std::time::Instant::now();
    for i in 0..count {
        let input = generated(target, i, max_len);
        let _w = Witness { target, input: &input };
        run(&input);
    }
    let seeds = seeds(target);
    for path in &seeds {
        let input = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let _w = Witness { target, input: &input };
        run(&input);
    }
    eprintln!("{target}: {count} generated inputs and {} committed ones in {:.1?}", seeds.len(), started.elapsed());
}

// Counts sized for one to three seconds each on a 2-core machine in the test profile (about
// 7 s for all seven with two test threads).
macro_rules! smoke {
    ($target:ident, $count:expr, $max_len:expr) => {
        #[test]
        fn $target() {
            smoke(stringify!($target), $count, $max_len, hsakmt_fuzz_smoke::$target::run);
        }
    };
}

smoke!(topology_parser, 300_000, 4096);
smoke!(va_allocator, 400_000, 2048);
smoke!(model_memory_ioctls, 60_000, 1024);
smoke!(model_event_ioctls, 60_000, 1024);
smoke!(model_queue_ioctls, 30_000, 1024);
smoke!(model_svm_ioctls, 60_000, 1024);
smoke!(model_engines, 100_000, 2048);
