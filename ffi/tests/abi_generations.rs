//! ABI generations through the C API, as clients of older upstream headers use it.
//!
//! One C program (tests/c/generation_topology.c) prints every node, cache and io-link member
//! that ROCm 5.0's headers had, by name, reading each struct into exactly sizeof() bytes with
//! guard bytes behind. Built against our headers it is the reference; built against an older
//! generation's headers (Debian's real ROCm 5.2 `hsakmt.h`, or tests/c/generations/<label>.h,
//! generated from that release's compiler-computed layouts) it must print the same lines,
//! whether the library detects the generation or HSAKMT_ABI names it, and it must never see a
//! byte written past a struct, whatever the library decides.
//!
//! Needs a C compiler, valgrind, and Debian's libhsakmt-dev (the real ROCm 5.2 headers);
//! .ci/run installs them. A missing one fails the test.

#[path = "support/cprog.rs"]
mod cprog;

use cprog::{command, compile, run, show};
use hsakmt_core::abi::generation::{Generation, FUNCTION_SINCE};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

const MODELS: &[&str] = &["mi25", "mi210", "rx7900xtx"];

fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("abi_generations");
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    })
}

/// Build a program once per distinct (source, flags).
fn program(source: &str, name: &str, args: &[&str]) -> PathBuf {
    static BUILT: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let mut built = BUILT.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    built.entry(name.to_string()).or_insert_with(|| compile(scratch(), source, name, args)).clone()
}

fn generation_header(label: &str) -> String {
    let h = Path::new(cprog::MANIFEST).join("tests/c/generations").join(format!("{label}.h"));
    assert!(h.is_file(), "no generated header {h:?} (python3 tools/abi-gen/gen_c.py writes it)");
    format!("-DHSAKMT_HEADER=\"{}\"", h.display())
}

fn ours() -> PathBuf {
    let inc = format!("-I{}/include", cprog::MANIFEST);
    program("generation_topology.c", "topology_ours", &["-DHSAKMT_HEADER=<hsakmt/hsakmt.h>", &inc])
}

/// The program built against generation `label`'s headers, importing `witness` if given.
fn old(label: &str, witness: Option<&str>) -> PathBuf {
    let mut args = vec![generation_header(label)];
    if let Some(w) = witness {
        args.push(format!("-DWITNESS={w}"));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    program("generation_topology.c", &format!("topology_{label}_{}", witness.unwrap_or("none")), &args)
}

/// Run `exe` on `model` with extra environment; (stdout, stderr, success).
fn topology(exe: &Path, model: &str, env: &[(&str, &str)]) -> (String, String, bool) {
    let mut c = command(scratch(), exe);
    c.env("HSAKMT_MODEL", model).env("HSAKMT_DEBUG_LEVEL", "4");
    for (k, v) in env {
        c.env(k, v);
    }
    let o = run(&mut c);
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned(), o.status.success())
}

fn reference(model: &str) -> String {
    static REF: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    let mut m = REF.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    m.entry(model.to_string())
        .or_insert_with(|| {
            let (out, err, ok) = topology(&ours(), model, &[]);
            assert!(ok, "our-headers program failed on {model}:\n{out}\n{err}");
            assert!(out.contains("\nnode 1\n") && out.ends_with("overwrites 0\n"), "unexpected output on {model}:\n{out}");
            out
        })
        .clone()
}

/// The line of the library's decision (HSAKMT_DEBUG_LEVEL=4).
fn decision(stderr: &str) -> &str {
    stderr.lines().find(|l| l.contains("ABI generation")).unwrap_or_else(|| panic!("no ABI generation line in:\n{stderr}"))
}

/// The newest function the headers of `g` declare (none for the oldest generation, whose
/// functions are the base every generation has): what a client of `g` may import.
fn witness(g: Generation) -> Option<(&'static str, Generation)> {
    FUNCTION_SINCE.iter().filter(|(_, since)| *since > Generation::OLDEST && *since <= g).max_by_key(|(_, since)| *since).copied()
}

fn assert_same(label: &str, model: &str, out: &str) {
    let want = reference(model);
    if out != want {
        let diff: Vec<String> =
            want.lines().zip(out.lines()).filter(|(a, b)| a != b).take(8).map(|(a, b)| format!("  ours {a:?}\n  {label} {b:?}")).collect();
        panic!("{label} on {model} reads a different topology than our headers:\n{}", diff.join("\n"));
    }
}

#[test]
fn real_rocm52_headers_read_what_our_headers_read() {
    let header = Path::new("/usr/include/hsakmt.h");
    assert!(header.is_file(), "this test needs Debian's libhsakmt-dev (ROCm 5.2.3 headers at /usr/include/hsakmt.h)");
    let exe = program("generation_topology.c", "topology_debian52", &["-DHSAKMT_HEADER=<hsakmt.h>"]);
    for model in MODELS {
        let (out, err, ok) = topology(&exe, model, &[]);
        assert!(ok, "ROCm 5.2 program failed on {model}:\n{out}\n{err}");
        assert_same("rocm-5.2 (Debian headers)", model, &out);
        assert!(decision(&err).contains("generation rocm-5.0"), "{err}");
    }
}

#[test]
fn old_clients_under_valgrind_no_memory_errors() {
    cprog::require_tool("valgrind", "valgrind (Debian: valgrind)");
    assert!(Path::new("/usr/include/hsakmt.h").is_file(), "this test needs Debian's libhsakmt-dev");
    let rocm52 = program("generation_topology.c", "topology_debian52", &["-DHSAKMT_HEADER=<hsakmt.h>"]);
    let mid2025 = old("dev-2025-08", Some("hsaKmtModelEnabled"));
    for exe in [rocm52, mid2025] {
        let mut c = command(scratch(), Path::new("valgrind"));
        c.args(["--error-exitcode=99", "--leak-check=no", "-q"]).arg(&exe).env("HSAKMT_MODEL", "mi210");
        let o = run(&mut c);
        assert!(o.status.success(), "valgrind found errors in {exe:?}:\n{}", show(&o));
        assert!(String::from_utf8_lossy(&o.stdout).ends_with("overwrites 0\n"), "{}", show(&o));
    }
}

#[test]
fn every_generation_is_detected_from_its_imports_and_reads_what_ours_read() {
    for g in Generation::ALL.iter().copied().filter(|g| *g != Generation::NEWEST) {
        let w = witness(g);
        let exe = old(g.label(), w.map(|(name, _)| name));
        for model in MODELS {
            let (out, err, ok) = topology(&exe, model, &[]);
            assert!(ok, "{} (witness {w:?}) failed on {model}:\n{out}\n{err}", g.label());
            // Where its newest function is older than its headers (no function came with
            // them), the older generation it is taken for has these members in the same places.
            assert_same(g.label(), model, &out);
            let (name, since) = w.unwrap_or(("", Generation::OLDEST));
            let line = decision(&err);
            assert!(line.contains(&format!("generation {} ", since.label())) && line.contains(name), "{}: {line}", g.label());
        }
    }
}

#[test]
fn hsakmt_abi_names_each_generation() {
    for g in Generation::ALL.iter().copied().filter(|g| *g != Generation::NEWEST) {
        let exe = old(g.label(), None);
        let (out, err, ok) = topology(&exe, "mi210", &[("HSAKMT_ABI", g.label())]);
        assert!(ok, "{} failed on mi210:\n{out}\n{err}", g.label());
        assert_same(g.label(), "mi210", &out);
        assert!(decision(&err).contains(&format!("HSAKMT_ABI={}", g.label())), "{err}");
    }
}

/// A client of a grown layout that imports nothing newer than ROCm 5.0 is served the oldest
/// layouts: its members may be misplaced, but nothing is ever written past its structs.
#[test]
fn unknown_evidence_never_writes_past_a_struct() {
    for g in Generation::ALL.iter().copied().filter(|g| *g != Generation::NEWEST) {
        let exe = old(g.label(), None);
        for model in MODELS {
            let (out, err, _) = topology(&exe, model, &[]);
            assert!(!out.contains("OVERWRITE"), "{} on {model}: a struct was written past:\n{out}", g.label());
            assert!(decision(&err).contains("generation rocm-5.0"), "{err}");
        }
    }
}

#[test]
fn mid_2025_client_reads_what_ours_read() {
    // The 2025-08 develop headers: 368-byte HsaNodeProperties; the client imports
    // hsaKmtModelEnabled as the HSA runtime of that time does.
    let exe = old("dev-2025-08", Some("hsaKmtModelEnabled"));
    for model in MODELS {
        let (out, err, ok) = topology(&exe, model, &[]);
        assert!(ok, "{out}\n{err}");
        assert_same("dev-2025-08", model, &out);
        assert!(decision(&err).contains("generation rocm-7.0"), "{err}");
    }
}

#[test]
fn unknown_hsakmt_abi_fails_open_and_names_the_accepted_values() {
    let exe = old("rocm-5.0", None);
    let (out, err, ok) = topology(&exe, "mi25", &[("HSAKMT_ABI", "rocm-4.5")]);
    assert!(!ok && out.contains("FAIL hsaKmtOpenKFD()"), "{out}");
    let msg = err.lines().find(|l| l.contains("HSAKMT_ABI")).unwrap_or_else(|| panic!("no message:\n{err}"));
    for g in Generation::ALL {
        assert!(msg.contains(g.label()), "{msg} does not name {}", g.label());
    }
}

#[test]
fn our_headers_bind_their_own_symbols_whatever_hsakmt_abi_says() {
    let exe = ours();
    let nm = run(std::process::Command::new("nm").arg("-D").arg(&exe));
    let syms = String::from_utf8_lossy(&nm.stdout);
    assert!(syms.contains("hsaKmtGetNodeProperties_abi1"), "{syms}");
    assert!(!syms.lines().any(|l| l.trim_end().ends_with(" hsaKmtGetNodeProperties@HSAKMT_1")), "{syms}");
    let (out, err, ok) = topology(&exe, "mi210", &[("HSAKMT_ABI", "rocm-5.0")]);
    assert!(ok, "{err}");
    assert_eq!(out, reference("mi210"));
}

#[test]
fn queue_resource_and_info_of_every_generation_stay_inside_their_structs() {
    let inc = format!("-I{}/include", cprog::MANIFEST);
    let mut builds =
        vec![("newest".to_string(), program("generation_queue.c", "queue_ours", &["-DHSAKMT_HEADER=<hsakmt/hsakmt.h>", &inc]))];
    for label in ["rocm-5.0", "rocm-6.3", "dev-2025-08"] {
        let h = generation_header(label);
        builds.push((label.to_string(), program("generation_queue.c", &format!("queue_{label}"), &[&h])));
    }
    for (label, exe) in builds {
        let mut c = command(scratch(), &exe);
        c.env("HSAKMT_MODEL", "mi210");
        let o = run(&mut c);
        assert!(o.status.success(), "{label}:\n{}", show(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        let size = if label == "newest" { 52 } else { 40 };
        assert!(out.contains(&format!("sizeof(HsaQueueResource)={size}")), "{label}: {out}");
    }
}

/// Code written for released ROCm compiles against our headers unchanged (HsaMemMapFlags,
/// the function-pointer casts of the runtime's thunk loader, the names upstream dropped) and
/// runs: in C and in C++.
#[test]
fn code_written_for_released_rocm_compiles_and_runs() {
    let inc = format!("-I{}/include", cprog::MANIFEST);
    for (source, name) in [("compat_client.c", "compat_c"), ("compat_client.cpp", "compat_cpp")] {
        let exe = program(source, name, &[&inc]);
        let mut c = command(scratch(), &exe);
        c.env("HSAKMT_MODEL", "mi210");
        let o = run(&mut c);
        assert!(o.status.success(), "{source}:\n{}", show(&o));
        let nm = run(std::process::Command::new("nm").arg("-D").arg(&exe));
        let syms = String::from_utf8_lossy(&nm.stdout);
        if source.ends_with(".cpp") {
            assert!(syms.contains("hsaKmtGetNodeProperties_abi1") && syms.contains("hsaKmtGetKernelDebugTrapVersionInfo"), "{syms}");
        } else {
            assert!(String::from_utf8_lossy(&o.stdout).contains("mapped both ways"), "{}", show(&o));
        }
        assert!(syms.contains("hsaKmtMapMemoryToGPUNodes"), "{syms}");
    }
}

/// The committed generation tables of the core (`gen_generations.rs`) match the data.
#[test]
fn generation_tables_up_to_date() {
    cprog::require_tool("python3", "python3");
    let script = Path::new(cprog::MANIFEST).join("../tools/abi-gen/gen_generations.py");
    let o = run(std::process::Command::new("python3").arg(&script).arg("--check"));
    assert!(o.status.success(), "core/src/abi/gen_generations.rs is stale:\n{}", show(&o));
}
