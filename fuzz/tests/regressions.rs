//! Replays the inputs in `regressions/<target>/` through each fuzz target's binary (libFuzzer
//! runs the files it is given once each, without fuzzing): inputs that once crashed a target or
//! its oracle, kept so the fault stays fixed. Runs with `cargo test` in this package (built on
//! stable too: the targets are not instrumented then, which replaying does not need).

use std::path::Path;
use std::process::Command;

/// (target, its binary as cargo built it for this test run).
const TARGETS: &[(&str, &str)] = &[
    ("topology_parser", env!("CARGO_BIN_EXE_topology_parser")),
    ("va_allocator", env!("CARGO_BIN_EXE_va_allocator")),
    ("model_memory_ioctls", env!("CARGO_BIN_EXE_model_memory_ioctls")),
    ("model_event_ioctls", env!("CARGO_BIN_EXE_model_event_ioctls")),
    ("model_engines", env!("CARGO_BIN_EXE_model_engines")),
    ("model_svm_ioctls", env!("CARGO_BIN_EXE_model_svm_ioctls")),
    ("model_queue_ioctls", env!("CARGO_BIN_EXE_model_queue_ioctls")),
];

#[test]
fn every_kept_input_passes_its_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    let mut replayed = 0;
    for entry in std::fs::read_dir(&root).expect("fuzz/regressions") {
        let dir = entry.expect("entry").path();
        let name = dir.file_name().and_then(|n| n.to_str()).expect("a target name").to_string();
        let (_, exe) = TARGETS.iter().find(|(t, _)| *t == name).unwrap_or_else(|| panic!("regressions/{name}: no such fuzz target"));
        let mut inputs: Vec<_> = std::fs::read_dir(&dir).expect("inputs").map(|e| e.expect("input").path()).collect();
        inputs.sort();
        for input in inputs {
            let o = Command::new(exe).arg(&input).output().unwrap_or_else(|e| panic!("cannot run {exe}: {e}"));
            assert!(
                o.status.success(),
                "{name} fails on {}:\n{}{}",
                input.display(),
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            replayed += 1;
        }
    }
    assert!(replayed > 0, "no kept inputs under {}", root.display());
}
