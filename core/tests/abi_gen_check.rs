//! The committed outputs of the ABI generator (`gen_hsakmt.rs`, `gen_kfd.rs` with their
//! compile-time layout assertions, and `tests/gen/layout.rs`) are what `tools/abi-gen/gen.py`
//! makes from the tables now. Needs python3 and rustfmt (a missing one fails the test).

use std::path::Path;
use std::process::Command;

#[test]
fn generated_abi_modules_up_to_date() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/abi-gen/gen.py");
    let o = Command::new("python3").arg(&script).arg("--check").output().expect("python3 is needed to check the generated ABI modules");
    assert!(
        o.status.success(),
        "the generated ABI modules are stale (run python3 tools/abi-gen/gen.py):\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}
