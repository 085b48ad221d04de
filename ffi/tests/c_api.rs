//! The C side of libhsakmt.so: our public headers compile as C and C++ and match the
//! compiler-measured upstream ABI, the library exports the whole API under HSAKMT_1 with
//! SONAME libhsakmt.so.1, and a C program written against upstream names runs against every
//! built-in model topology. (The installed pkg-config and CMake files are tested by
//! tools/install/tests/install.rs.)
//!
//! Needs a C compiler (`$CC` or `cc`), a C++ compiler (`$CXX` or `c++`), python3 and valgrind
//! (.ci/run installs them): a test whose tool is missing fails and says which, never skips.
//! Cargo builds this package's cdylib before its integration tests; the tests find it next to
//! their own executable.
//!
//! Expected topology facts for `topology_smoke` live in `EXPECT` below.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

#[path = "support/cprog.rs"]
#[allow(dead_code)] // shared helpers, not all used here
mod cprog;

const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");

/// Facts of the built-in catalogue entries, passed to topology_smoke as `--expect-*`.
/// (name, NumNodes, GPU nodes, gfx version of every GPU, NumFComputeCores of every GPU)
const EXPECT: &[(&str, u32, u32, &str, u32)] = &[
    ("mi300x", 10, 8, "9.4.2", 1216),
    ("mi300x-cpx", 65, 63, "9.4.2", 152),
    ("mi210", 10, 8, "9.0.10", 416),
    ("rx7900xtx", 2, 1, "11.0.0", 192),
    ("mi25", 2, 1, "9.0.0", 256),
];

struct Setup {
    cc: String,
    /// The cdylib cargo built.
    lib: PathBuf,
    /// Scratch directory of this test binary.
    work: PathBuf,
    /// An install-like tree: lib/libhsakmt.so{,.1}, include/.
    prefix: PathBuf,
}

/// Panic unless `tool --version` runs (a missing tool fails the test that needs it).
fn require_tool(tool: &str, what: &str) {
    cprog::require_tool(tool, what);
}

/// The test environment; panics (failing the test) when there is no working C compiler.
fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let cc = cprog::cc().to_string();
        let lib = find_cdylib();
        let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("c_api");
        let _ = fs::remove_dir_all(&work);
        let prefix = work.join("prefix");
        let libdir = prefix.join("lib");
        fs::create_dir_all(&libdir).unwrap();
        std::os::unix::fs::symlink(&lib, libdir.join("libhsakmt.so.1")).unwrap();
        std::os::unix::fs::symlink("libhsakmt.so.1", libdir.join("libhsakmt.so")).unwrap();
        std::os::unix::fs::symlink(Path::new(MANIFEST).join("include"), prefix.join("include")).unwrap();
        Setup { cc, lib, work, prefix }
    })
}

/// libhsakmt.so built by cargo for this test run: in `deps/` next to the test executable, or
/// uplifted one directory above.
fn find_cdylib() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let deps = exe.parent().expect("test executable has a directory");
    let candidates = [deps.join("libhsakmt.so"), deps.parent().map(|d| d.join("libhsakmt.so")).unwrap_or_default()];
    for c in &candidates {
        if c.is_file() {
            return c.clone();
        }
    }
    panic!("libhsakmt.so not found (looked at {candidates:?}); cargo builds the hsakmt-ffi cdylib before its tests");
}

/// A command's result for a failure message (stdout cut to its first 80 lines).
fn show(o: &Output) -> String {
    let stdout = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    let stdout =
        if lines.len() > 80 { format!("{}\n... ({} more lines)\n", lines[..80].join("\n"), lines.len() - 80) } else { stdout.into_owned() };
    format!("status {}\n--- stdout\n{stdout}--- stderr\n{}", o.status, String::from_utf8_lossy(&o.stderr))
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

fn run_ok(cmd: &mut Command) -> Output {
    let o = run(cmd);
    assert!(o.status.success(), "{cmd:?} failed:\n{}", show(&o));
    o
}

fn c_dir() -> PathBuf {
    Path::new(MANIFEST).join("tests/c")
}

/// Compile (and, with `link`, link against libhsakmt) one C source; returns the output path.
fn compile(s: &Setup, cxx: bool, src: &Path, out: &str, link: bool, extra: &[&str]) -> PathBuf {
    let out = s.work.join(out);
    let mut cmd = Command::new(if cxx { cprog::cxx() } else { &s.cc });
    if cxx {
        cmd.args(["-x", "c++", "-std=c++17"]);
    } else {
        cmd.arg("-std=gnu11");
    }
    cmd.args(["-Wall", "-Wextra", "-Werror", "-O1"]).arg("-I").arg(s.prefix.join("include")).args(extra);
    if link {
        cmd.arg(src).arg("-o").arg(&out);
        let libdir = s.prefix.join("lib");
        cmd.arg("-L").arg(&libdir).arg("-lhsakmt").arg(format!("-Wl,-rpath,{}", libdir.display()));
    } else {
        cmd.arg("-c").arg(src).arg("-o").arg(&out);
    }
    run_ok(&mut cmd);
    out
}

/// The function table of the upstream headers: (header, name).
fn api_functions() -> Vec<(String, String)> {
    let tsv = Path::new(MANIFEST).join("../core/tests/data/hsakmt-functions.tsv");
    fs::read_to_string(&tsv)
        .unwrap_or_else(|e| panic!("{}: {e}", tsv.display()))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut f = l.split('\t');
            (f.next().unwrap().to_string(), f.next().unwrap().to_string())
        })
        .collect()
}

#[test]
fn headers_compile_standalone_as_c_and_cxx() {
    let s = setup();
    for h in ["hsakmttypes.h", "hsakmt.h", "hsakmtctx.h", "hsakmt_virtio.h", "hsakmtmodeliface.h", "linux/kfd_ioctl.h"] {
        let src = s.work.join(format!("only_{}.c", h.replace('/', "_")));
        fs::write(&src, format!("#include <hsakmt/{h}>\nint hsakmt_header_test;\n")).unwrap();
        compile(s, false, &src, &format!("only_{}.o", h.replace('/', "_")), false, &[]);
        compile(s, true, &src, &format!("only_{}.cxx.o", h.replace('/', "_")), false, &[]);
    }
}

/// Upstream-style source: anonymous members, bitfields, macros and the KFD structs of hsakmt.h.
#[test]
fn upstream_style_code_compiles() {
    let s = setup();
    let src = s.work.join("upstream_style.c");
    fs::write(
        &src,
        r#"#include <hsakmt/hsakmt.h>
#include <hsakmt/hsakmtctx.h>
#include <hsakmt/hsakmtmodeliface.h>
#include <string.h>
HSAuint64 f(HsaMemoryProperties *props, HsaEvent *Event, struct kfd_runtime_info *ri);
HSAuint64 f(HsaMemoryProperties *props, HsaEvent *Event, struct kfd_runtime_info *ri)
{
    HsaMemFlags flags;
    memset(&flags, 0, sizeof flags);
    flags.ui32.HostAccess = 1;
    flags.ui32.CoarseGrain = 1;
    HSA_QUEUE_PRIORITY prio = HSA_QUEUE_PRIORITY_NORMAL;
    struct _HsaEvent *tagged = Event;
    HsaKFDContext *ctx = NULL;
    get_hsakmt_model_functions_t get = NULL;
    (void)ctx; (void)get;
    return props->SizeInBytes + props->ui32.SizeInBytesHigh + flags.Value + (HSAuint64)prio
         + tagged->EventData.EventData.MemoryAccessFault.VirtualAddress
         + tagged->EventData.EventData.SyncVar.SyncVar.UserDataPtrValue
         + ri->r_debug + HSA_EC_MASK(HSA_DBG_EC_QUEUE_NEW) + KFD_EC_MASK(EC_QUEUE_NEW)
         + AMDKFD_IOC_GET_VERSION + HSA_PROFILEBLOCK_AMD_SQ.Data1 + sizeof(HsaSharedMemoryHandle);
}
"#,
    )
    .unwrap();
    compile(s, false, &src, "upstream_style.o", false, &[]);
    compile(s, true, &src, "upstream_style.cxx.o", false, &[]);
}

#[test]
fn abi_static_asserts_c() {
    let s = setup();
    compile(s, false, &c_dir().join("abi_static_asserts.c"), "abi_static_asserts.o", false, &[]);
}

#[test]
fn abi_static_asserts_cxx() {
    cprog::cxx();
    let s = setup();
    compile(s, true, &c_dir().join("abi_static_asserts.c"), "abi_static_asserts.cxx.o", false, &[]);
}

#[test]
fn abi_runtime_checks() {
    let s = setup();
    let exe = s.work.join("abi_runtime_checks");
    run_ok(
        Command::new(&s.cc)
            .args(["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-I"])
            .arg(s.prefix.join("include"))
            .arg(c_dir().join("abi_runtime_checks.c"))
            .arg("-o")
            .arg(&exe),
    );
    let o = run_ok(&mut Command::new(&exe));
    assert!(String::from_utf8_lossy(&o.stdout).contains(" 0 failures"), "{}", show(&o));
}

/// Dynamic symbols defined by the library: name -> version suffix ("@@HSAKMT_1").
fn dynamic_symbols(lib: &Path) -> Vec<(String, String)> {
    let nm = run(Command::new("nm").args(["-D", "--defined-only", "--with-symbol-versions"]).arg(lib));
    if nm.status.success() {
        return String::from_utf8_lossy(&nm.stdout)
            .lines()
            .filter_map(|l| l.split_whitespace().nth(2))
            .map(|sym| match sym.find('@') {
                Some(i) => (sym[..i].to_string(), sym[i..].to_string()),
                None => (sym.to_string(), String::new()),
            })
            .collect();
    }
    // Older binutils: objdump -T prints "... <section> <size> <version> <name>".
    let od = run_ok(Command::new("objdump").arg("-T").arg(lib));
    String::from_utf8_lossy(&od.stdout)
        .lines()
        .filter(|l| !l.contains("*UND*"))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 3).then(|| (f[f.len() - 1].to_string(), format!("@@{}", f[f.len() - 2].trim_matches(|c| c == '(' || c == ')'))))
        })
        .collect()
}

#[test]
fn exports_every_function_under_hsakmt_1() {
    let s = setup();
    let syms = dynamic_symbols(&s.lib);
    let api = api_functions();
    // hsakmt_virtio.h: the vhsaKmt* functions; upstream's libdrm forwarders (vamdgpu_*,
    // vdrmCommandWriteRead) are not ours.
    let exported: Vec<&(String, String)> =
        api.iter().filter(|(h, n)| h == "hsakmt.h" || h == "hsakmtctx.h" || (h == "hsakmt_virtio.h" && n.starts_with("vhsaKmt"))).collect();
    assert_eq!(api.iter().filter(|(h, _)| h == "hsakmt.h").count(), 114);
    assert_eq!(api.iter().filter(|(h, _)| h == "hsakmtctx.h").count(), 74);
    assert_eq!(api.iter().filter(|(h, n)| h == "hsakmt_virtio.h" && n.starts_with("vhsaKmt")).count(), 46);
    let mut missing = Vec::new();
    for (header, name) in exported {
        match syms.iter().find(|(n, _)| n == name) {
            Some((_, v)) if v == "@@HSAKMT_1" => {}
            Some((_, v)) => missing.push(format!("{name} ({header}) has version '{v}', expected @@HSAKMT_1")),
            None => missing.push(format!("{name} ({header}) is not exported")),
        }
    }
    assert!(missing.is_empty(), "{} problems:\n{}", missing.len(), missing.join("\n"));
    let known: BTreeSet<&str> = api.iter().map(|(_, n)| n.as_str()).collect();
    let extra: Vec<&str> = syms.iter().map(|(n, _)| n.as_str()).filter(|n| !known.contains(n) && *n != "HSAKMT_1").collect();
    if !extra.is_empty() {
        eprintln!("note: libhsakmt.so also exports {extra:?} (upstream exports only hsaKmt*)");
    }
}

#[test]
fn soname_is_libhsakmt_so_1() {
    let s = setup();
    let o = run_ok(Command::new("objdump").arg("-p").arg(&s.lib));
    let soname = String::from_utf8_lossy(&o.stdout)
        .lines()
        .find_map(|l| l.trim().strip_prefix("SONAME").map(|v| v.trim().to_string()))
        .unwrap_or_default();
    assert_eq!(soname, "libhsakmt.so.1");
}

/// Every tool these tests use is required: without it the test that needs it fails and names
/// the tool (it used to print SKIPPED and pass, so a machine without a compiler passed the whole
/// suite). Single tests of this binary run in a child process with the tool made unavailable;
/// each checks its tool before it touches the shared scratch directory.
#[test]
fn a_missing_tool_fails_the_test_that_needs_it() {
    let exe = std::env::current_exe().expect("current_exe");
    let cases = [
        ("abi_static_asserts_c", "CC", "/nonexistent/cc", "a C compiler"),
        ("abi_static_asserts_cxx", "CXX", "/nonexistent/c++", "a C++ compiler"),
        ("generated_files_up_to_date", "PATH", "/nonexistent", "python3"),
        ("memory_program_is_clean_under_valgrind", "PATH", "/nonexistent", "valgrind"),
    ];
    for (test, var, value, needs) in cases {
        let o = run(Command::new(&exe).args(["--exact", test, "--test-threads=1"]).env(var, value));
        let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert!(!o.status.success(), "{test} with {var}={value} passed:\n{}", show(&o));
        assert!(
            text.contains("1 failed") && text.contains(&format!("this test needs {needs}")),
            "{test} with {var}={value}:\n{}",
            show(&o)
        );
    }
}

/// The committed generated files (headers, C tests, gen_exports.rs) match the tables and the
/// hand-written exports. Needs python3.
#[test]
fn generated_files_up_to_date() {
    require_tool("python3", "python3");
    let script = Path::new(MANIFEST).join("../tools/abi-gen/gen_c.py");
    let o = run(Command::new("python3").arg(&script).arg("--check"));
    assert!(o.status.success(), "generated files are stale; run python3 tools/abi-gen/gen_c.py\n{}", show(&o));
}

/// The topology smoke program, built once.
fn smoke_exe(s: &Setup) -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| compile(s, false, &c_dir().join("topology_smoke.c"), "topology_smoke", true, &[]))
}

fn run_smoke(s: &Setup, model: &str, args: &[String]) -> Output {
    let mut cmd = Command::new(smoke_exe(s));
    cmd.args(args).env("HSAKMT_MODEL", model);
    for var in ["HSA_MODEL_TOPOLOGY", "HSA_MODEL_LIB", "HSA_OVERRIDE_GFX_VERSION"] {
        cmd.env_remove(var);
    }
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("HSAKMT_SMOKE_EXPECT_") {
            cmd.env_remove(&k);
        }
    }
    run(&mut cmd)
}

#[test]
fn topology_smoke_on_every_catalogue_model() {
    let s = setup();
    let names = hsakmt_model::catalogue_names();
    assert!(!names.is_empty());
    let mut failed = Vec::new();
    for &name in names {
        let mut args = vec!["--expect-model=1".to_string()];
        if let Some(&(_, nodes, gpus, gfx, simd)) = EXPECT.iter().find(|e| e.0 == name) {
            args.push(format!("--expect-nodes={nodes}"));
            args.push(format!("--expect-gpus={gpus}"));
            args.push(format!("--expect-gfx={gfx}"));
            args.push(format!("--expect-simd={simd}"));
        } else {
            eprintln!("note: no expectations recorded for catalogue entry {name:?}; generic checks only");
        }
        let o = run_smoke(s, name, &args);
        let out = String::from_utf8_lossy(&o.stdout);
        if o.status.success() && out.contains("topology_smoke: OK") {
            eprintln!("{name}: {}", out.lines().last().unwrap_or(""));
        } else {
            failed.push(format!("=== HSAKMT_MODEL={name} {}\n{}", args.join(" "), show(&o)));
        }
    }
    assert!(failed.is_empty(), "{} of {} models failed:\n{}", failed.len(), names.len(), failed.join("\n"));
}

/// A wrong expectation must fail: the smoke program's checks are live.
#[test]
fn topology_smoke_rejects_wrong_expectations() {
    let s = setup();
    let name = hsakmt_model::catalogue_names()[0];
    let o = run_smoke(s, name, &["--expect-nodes=100000".to_string()]);
    assert!(!o.status.success(), "a wrong node count was accepted:\n{}", show(&o));
}

// ---- OpenClose rules, fixture facts, broken trees and the model plugin, from C ----

/// `<name>.c` built once per run: tests sharing a program (plain and under valgrind) must not
/// write the executable while another one runs it ("Text file busy").
fn exe(s: &Setup, name: &str) -> PathBuf {
    static BUILT: std::sync::Mutex<BTreeSet<String>> = std::sync::Mutex::new(BTreeSet::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if built.contains(name) {
        return s.work.join(name);
    }
    let e = compile(s, false, &c_dir().join(format!("{name}.c")), name, true, &[]);
    built.insert(name.to_string());
    e
}

/// A command with no model/override variables inherited from the caller's environment.
fn clean_cmd(exe: &Path) -> Command {
    let mut cmd = Command::new(exe);
    for var in [
        "HSA_MODEL_TOPOLOGY",
        "HSA_MODEL_LIB",
        "HSAKMT_MODEL",
        "HSAKMT_MODEL_KFD_VERSION",
        "HSA_OVERRIDE_GFX_VERSION",
        "HSA_USE_SVM",
        "HSAKMT_DEBUG_LEVEL",
        "HSAKMT_VIRTIO_SOCKET",
        "HSAKMT_VIRTIO_RENDER_NODE",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

#[test]
fn openclose_rules_fork_and_errno() {
    let s = setup();
    let e = exe(s, "openclose_rules");
    for model in ["mi25", "mi210"] {
        let o = run(clean_cmd(&e).env("HSAKMT_MODEL", model));
        assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("openclose_rules: OK"), "{model}:\n{}", show(&o));
    }
}

/// The facts `topology_dump` printed, as lines.
fn dump(s: &Setup, env: &[(&str, &str)]) -> (Output, Vec<String>) {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    let e = EXE.get_or_init(|| exe(s, "topology_dump"));
    let mut cmd = clean_cmd(e);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = run(&mut cmd);
    let lines = String::from_utf8_lossy(&o.stdout).lines().map(str::to_owned).collect();
    (o, lines)
}

fn has(lines: &[String], prefix: &str, fact: &str) -> bool {
    lines.iter().any(|l| l.starts_with(prefix) && l.split(' ').collect::<Vec<_>>().windows(2).any(|w| format!("{} {}", w[0], w[1]) == fact))
}

fn assert_facts(lines: &[String], facts: &[(&str, &str)], what: &str) {
    for (prefix, fact) in facts {
        assert!(has(lines, prefix, fact), "{what}: no line starting {prefix:?} with {fact:?}:\n{}", lines.join("\n"));
    }
}

/// Facts read by hand from the three shared fixture trees (their SOURCE.md and files), checked
/// through the C API on the model serving each tree.
#[test]
fn fixture_facts_through_the_c_api() {
    let s = setup();
    // mi25-gfx900-1gpu: nodes/1/properties simd_count 256, device_id 26720 (0x6860 -> gfx900);
    // nodes/1/mem_banks/0 size_in_bytes 17163091968 heap_type 1; nodes/1/io_links/0 type 2
    // (PCIe) weight 20 to node 0; nodes/1/gpu_id 13261; system_properties platform_rev 2.
    let (o, l) = dump(s, &[("HSAKMT_MODEL", "mi25")]);
    assert!(o.status.success(), "{}", show(&o));
    assert_facts(
        &l,
        &[
            ("nodes", "nodes 2"),
            ("platform_rev", "platform_rev 2"),
            ("node 0 ", "cpu_cores 20"),
            ("node 1 ", "simd 256"),
            ("node 1 ", "gfx 9.0.0"),
            ("node 1 ", "gpu_id 13261"),
            ("node 1 ", "device 26720"),
            ("node 1 bank 0 ", "size 17163091968"),
            ("node 1 bank 0 ", "heap 1"),
            ("node 1 link 0 ", "type 2"),
            ("node 1 link 0 ", "weight 20"),
            ("node 1 link 0 ", "to 0"),
        ],
        "mi25",
    );
    // mi210-gfx90a-8gpu-2hive: nodes/2/properties simd_count 416, gfx_target_version 90010,
    // hive_id 12609507387757274807, num_sdma_engines 2, num_sdma_xgmi_engines 3, location_id
    // 25344; nodes/2/io_links/1: type 11 (XGMI) node 2 -> 3 weight 15, bandwidth 50000.
    let (o, l) = dump(s, &[("HSAKMT_MODEL", "mi210")]);
    assert!(o.status.success(), "{}", show(&o));
    assert_facts(
        &l,
        &[
            ("nodes", "nodes 10"),
            ("node 0 ", "cpu_cores 64"),
            ("node 2 ", "simd 416"),
            ("node 2 ", "gfx 9.0.10"),
            ("node 2 ", "hive 12609507387757274807"),
            ("node 2 ", "sdma 2"),
            ("node 2 ", "xgmi_sdma 3"),
            ("node 2 ", "location 25344"),
            ("node 2 link 1 ", "type 11"),
            ("node 2 link 1 ", "to 3"),
            ("node 2 link 1 ", "weight 15"),
            ("node 2 link 1 ", "max_bw 50000"),
        ],
        "mi210",
    );
    // mi300x-gfx942-8gpu-cpx: 65 nodes; nodes/10/properties simd_count 152, gfx_target_version
    // 90402, hive_id 15188982192727901047; nodes/10/io_links/3: type 11 to node 4 weight 41.
    // The capture has no mem_banks: the model fills VRAM/8 per CPX partition (192 GiB / 8 =
    // 24 GiB, MI300X's HBM3; model/CATALOGUE.md), so only its heap type is a real fact.
    let (o, l) = dump(s, &[("HSAKMT_MODEL", "mi300x-cpx")]);
    assert!(o.status.success(), "{}", show(&o));
    assert_facts(
        &l,
        &[
            ("nodes", "nodes 65"),
            ("node 0 ", "cpu_cores 96"),
            ("node 10 ", "simd 152"),
            ("node 10 ", "gfx 9.4.2"),
            ("node 10 ", "hive 15188982192727901047"),
            ("node 10 link 3 ", "type 11"),
            ("node 10 link 3 ", "to 4"),
            ("node 10 link 3 ", "weight 41"),
        ],
        "mi300x-cpx",
    );
}

/// A broken HSA_MODEL_TOPOLOGY makes OpenKFD fail with a message naming the problem; a garbled
/// properties file makes AcquireSystemProperties fail with an error status (never a crash).
#[test]
fn broken_model_topology_is_a_clear_error() {
    let s = setup();
    let missing = s.work.join("no-such-topology");
    let (o, l) = dump(s, &[("HSA_MODEL_TOPOLOGY", missing.to_str().unwrap())]);
    assert!(!o.status.success(), "{}", show(&o));
    assert!(l.iter().any(|x| x.starts_with("FAIL hsaKmtOpenKFD()")), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("HSA_MODEL_TOPOLOGY") && err.contains("no-such-topology"), "stderr names the variable and path:\n{err}");

    let tree = s.work.join("garbled-mi25");
    let _ = fs::remove_dir_all(&tree);
    hsakmt_model::catalogue::export("mi25", &tree).expect("export mi25");
    let (o, _) = dump(s, &[("HSA_MODEL_TOPOLOGY", tree.to_str().unwrap())]);
    assert!(o.status.success(), "the exported tree itself loads:\n{}", show(&o));
    // A truncated memory-bank file: the model (standing in for the kernel) still loads the
    // tree, and the thunk's parser must reject it at AcquireSystemProperties.
    fs::write(tree.join("nodes/1/mem_banks/0/properties"), b"").unwrap();
    let (o, l) = dump(s, &[("HSA_MODEL_TOPOLOGY", tree.to_str().unwrap())]);
    assert!(!o.status.success(), "{}", show(&o));
    assert!(l.iter().any(|x| x.starts_with("FAIL hsaKmtAcquireSystemProperties")), "{}", show(&o));
    // A garbled node properties file: refused at open by the model or at acquire by the thunk,
    // either way with an error status and no crash.
    fs::write(tree.join("nodes/1/properties"), b"\x00\xff garbage\n").unwrap();
    let (o, l) = dump(s, &[("HSA_MODEL_TOPOLOGY", tree.to_str().unwrap())]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(l.iter().any(|x| x.starts_with("FAIL hsaKmtOpenKFD") || x.starts_with("FAIL hsaKmtAcquireSystemProperties")), "{}", show(&o));
}

/// libhsakmt_model.so, the model built as a plugin (built here if this run has not built it).
fn model_plugin(lib: &Path) -> PathBuf {
    let dir = lib.parent().unwrap();
    let target_profile = if dir.ends_with("deps") { dir.parent().unwrap() } else { dir };
    // Cargo builds the model's cdylib into deps/ as a dependency of this package; a copy one
    // level up may be older. Take the newest.
    let newest = [target_profile.join("deps/libhsakmt_model.so"), target_profile.join("libhsakmt_model.so")]
        .into_iter()
        .filter_map(|c| fs::metadata(&c).and_then(|m| m.modified()).ok().map(|t| (t, c)))
        .max_by_key(|(t, _)| *t);
    if let Some((_, c)) = newest {
        return c;
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target_dir = target_profile.parent().unwrap();
    run_ok(Command::new(cargo).args(["build", "-p", "hsakmt-model", "--lib"]).env("CARGO_TARGET_DIR", target_dir).current_dir(MANIFEST));
    let p = target_profile.join("libhsakmt_model.so");
    assert!(p.is_file(), "{} not built", p.display());
    p
}

#[test]
fn runs_on_the_model_plugin_named_by_hsa_model_lib() {
    let s = setup();
    let plugin = model_plugin(&s.lib);
    let syms = dynamic_symbols(&plugin);
    assert!(syms.iter().any(|(n, _)| n == "get_hsakmt_model_functions"), "plugin exports get_hsakmt_model_functions");
    let p = plugin.to_str().unwrap();
    let (o, l) = dump(s, &[("HSA_MODEL_LIB", p), ("HSAKMT_MODEL", "mi210")]);
    assert!(o.status.success(), "{}", show(&o));
    assert_facts(&l, &[("nodes", "nodes 10"), ("node 2 ", "simd 416"), ("node 2 link 1 ", "type 11")], "plugin mi210");
    // The catalogue's own CPUs: an EPYC 7763 per node, 64 L1d + 64 L1i + 64 L2 + 8 L3.
    assert_facts(&l, &[("node 0 ", "caches 200"), ("node 1 ", "caches 200")], "plugin mi210 CPU caches");
    // A directory topology with the plugin (upstream's pairing of the two variables).
    let tree = s.work.join("plugin-mi25");
    let _ = fs::remove_dir_all(&tree);
    hsakmt_model::catalogue::export("mi25", &tree).expect("export mi25");
    let (o, l) = dump(s, &[("HSA_MODEL_LIB", p), ("HSA_MODEL_TOPOLOGY", tree.to_str().unwrap())]);
    assert!(o.status.success(), "{}", show(&o));
    assert_facts(&l, &[("nodes", "nodes 2"), ("node 1 ", "simd 256"), ("node 1 bank 0 ", "size 17163091968")], "plugin mi25 dir");
    // With a directory the CPU caches are the host's (upstream's model mode reads the host).
    if Path::new("/sys/devices/system/cpu/cpu0/cache/index0").is_dir() {
        assert!(!has(&l, "node 0 ", "caches 0"), "plugin mi25 dir: the host's CPU caches:\n{}", l.join("\n"));
    }
    // A library that is not a model plugin is refused with a message.
    let (o, _) = dump(s, &[("HSA_MODEL_LIB", s.lib.to_str().unwrap()), ("HSAKMT_MODEL", "mi25")]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("get_hsakmt_model_functions"), "{}", show(&o));
}

/// HSA_OVERRIDE_GFX_VERSION (global and per node) lands in OverrideEngineId and keeps the
/// real EngineId; a malformed value fails AcquireSystemProperties; HSA_USE_SVM=0 clears the
/// SVMAPISupported capability bit.
#[test]
fn environment_overrides() {
    let s = setup();
    let (o, l) = dump(s, &[("HSAKMT_MODEL", "mi210")]);
    assert!(o.status.success(), "{}", show(&o));
    assert_facts(&l, &[("node 2 ", "gfx 9.0.10"), ("node 2 ", "svm 1")], "mi210 plain");
    let (o, l) = dump(
        s,
        &[("HSAKMT_MODEL", "mi210"), ("HSA_OVERRIDE_GFX_VERSION", "9.4.2"), ("HSA_OVERRIDE_GFX_VERSION_3", "9.0.8"), ("HSA_USE_SVM", "0")],
    );
    assert!(o.status.success(), "{}", show(&o));
    assert_facts(
        &l,
        &[("node 2 ", "gfx 9.0.10"), ("node 2 ", "ogfx 9.4.2"), ("node 3 ", "ogfx 9.0.8"), ("node 4 ", "ogfx 9.4.2"), ("node 2 ", "svm 0")],
        "mi210 overridden",
    );
    let (o, l) = dump(s, &[("HSAKMT_MODEL", "mi210"), ("HSA_OVERRIDE_GFX_VERSION", "9.x")]);
    assert!(!o.status.success(), "{}", show(&o));
    assert!(l.iter().any(|x| x.starts_with("FAIL hsaKmtAcquireSystemProperties")), "{}", show(&o));
}

/// Runtime enable on a current KFD, and NOT_SUPPORTED (without an ioctl) when the model is
/// configured as a KFD older than 1.13, where the ioctl does not exist.
#[test]
fn runtime_enable_rules_and_kfd_version_gate() {
    let s = setup();
    let e = exe(s, "runtime_rules");
    let o = run(clean_cmd(&e).arg("0").env("HSAKMT_MODEL", "mi210"));
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("runtime_rules: OK"), "{}", show(&o));
    let o = run(clean_cmd(&e).arg("11").env("HSAKMT_MODEL", "mi210").env("HSAKMT_MODEL_KFD_VERSION", "1.12"));
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("runtime_rules: OK"), "{}", show(&o));
}

#[test]
fn memory_api_from_c() {
    let s = setup();
    let e = exe(s, "memory_basic");
    for model in ["mi210", "mi300x"] {
        let o = run(clean_cmd(&e).env("HSAKMT_MODEL", model));
        assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("memory_basic: OK"), "{model}:\n{}", show(&o));
    }
}

/// The handle API (HandleImport/Export, MemoryVaMap/Unmap, MemoryCpuMap, MemHandleFree,
/// MemoryGetCpuAddr) on a dma-buf of a VRAM allocation, and its bad-input statuses.
#[test]
fn handle_api_from_c() {
    let s = setup();
    let e = exe(s, "handles_api");
    for model in ["mi210", "rx7900xtx"] {
        let o = run(clean_cmd(&e).env("HSAKMT_MODEL", model));
        assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("handles_api: OK"), "{model}:\n{}", show(&o));
    }
}

/// SVM attributes and XNACK from C: set / get over mmap'd and malloc'd ranges with node ids,
/// mixed pieces, bad attributes, nodes and ranges; XNACK where every GPU allows it (mi210,
/// mi300x) and where one cannot (rx7900xtx: GFX11, mi25: noretry), and a KFD older than 1.5.
#[test]
fn svm_from_c() {
    let s = setup();
    let e = exe(s, "svm");
    for (model, arg, kfd) in
        [("mi210", "1", "1.22"), ("mi300x", "1", "1.22"), ("rx7900xtx", "0", "1.22"), ("mi25", "0", "1.22"), ("mi210", "old", "1.4")]
    {
        let o = run(clean_cmd(&e).arg(arg).env("HSAKMT_MODEL", model).env("HSAKMT_MODEL_KFD_VERSION", kfd));
        assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("svm: OK"), "{model} {arg}:\n{}", show(&o));
    }
}

/// Performance counters from C (ffi/tests/c/pmc.c): counter properties against upstream's vega
/// table, a traced SDMA copy whose counter deltas equal what was submitted, every bad input,
/// a forked process finding the access held, nothing left held. Through both forms of
/// AMDKFD_IOC_PROFILER (amdgpu-dkms's at KFD 1.22, mainline's at 1.23) and with none (no
/// DKMS ioctls, KFD 1.22: no arbitration, as upstream today, so the child's acquire succeeds —
/// the program is told by `PMC_NO_LOCK`).
#[test]
fn pmc_from_c() {
    let s = setup();
    let e = compile(s, false, &c_dir().join("pmc.c"), "pmc", true, &[]);
    for (model, kfd, dkms) in [("mi300x", "1.22", "1"), ("mi210", "1.23", "0"), ("mi300x", "1.22", "0")] {
        let o = run(clean_cmd(&e).env("HSAKMT_MODEL", model).env("HSAKMT_MODEL_KFD_VERSION", kfd).env("HSAKMT_MODEL_DKMS", dkms));
        let stdout = String::from_utf8_lossy(&o.stdout);
        let no_lock = kfd == "1.22" && dkms == "0";
        if no_lock {
            // Without a profiler ioctl nothing arbitrates: the forked child acquires too, and the
            // program reports exactly that one check (line of `run_child(gpu, 1)`).
            assert!(
                !o.status.success() && stdout.matches("FAIL").count() == 1 && stdout.contains("run_child(gpu, 1) == 0"),
                "{model} {kfd}:\n{}",
                show(&o)
            );
        } else {
            assert!(o.status.success() && stdout.contains("pmc: OK"), "{model} {kfd} dkms={dkms}:\n{}", show(&o));
        }
    }
}

/// Events from C: signal events (auto and manual reset) and their event-page slots, set /
/// query / reset, timeouts of 0, 30 ms and infinite, wait-any / wait-all, ages, a second thread
/// setting while the main thread waits, other event types, and bad input (NULL, foreign and
/// destroyed events, empty arrays).
#[test]
fn events_from_c() {
    let s = setup();
    let e = compile(s, false, &c_dir().join("events.c"), "events", true, &["-pthread"]);
    for model in ["mi210", "mi300x"] {
        let o = run(clean_cmd(&e).env("HSAKMT_MODEL", model));
        assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("events: OK"), "{model}:\n{}", show(&o));
    }
}

/// The events C test under valgrind (threads, waits, destroyed events): no memory errors and
/// nothing definitely lost.
#[test]
fn events_program_is_clean_under_valgrind() {
    require_tool("valgrind", "valgrind (Debian: valgrind)");
    let s = setup();
    let e = compile(s, false, &c_dir().join("events.c"), "events_vg", true, &["-pthread"]);
    let mut cmd = Command::new("valgrind");
    cmd.args(["--leak-check=full", "--errors-for-leak-kinds=definite", "--error-exitcode=99", "-q"]).arg(&e);
    for var in ["HSA_MODEL_TOPOLOGY", "HSA_MODEL_LIB", "HSAKMT_MODEL_KFD_VERSION", "HSA_OVERRIDE_GFX_VERSION", "HSAKMT_DEBUG_LEVEL"] {
        cmd.env_remove(var);
    }
    let o = run(cmd.env("HSAKMT_MODEL", "mi210"));
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("events: OK"), "{}", show(&o));
}

/// Queues from C: SDMA, PM4 and AQL queues with their doorbells, pointers, CU masks and queue
/// info; an SDMA FENCE + TRAP assembled by hand, executed by the model GPU and raising the event
/// the program waits on; bad input (NULL resource, priority, type, node, ring size, unmapped
/// ring, destroying twice); close destroying a live queue.
#[test]
fn queues_from_c() {
    let s = setup();
    let e = compile(s, false, &c_dir().join("queues.c"), "queues", true, &[]);
    // The CWSR area: upstream's unified SVM area where the GPUs have the SVM API and the KFD
    // is 1.11 or later; GPU-mapped memory on the MI25 (no SVM API) or an older KFD.
    for (model, kfd, cwsr) in [
        ("mi210", None, "unified"),
        ("mi300x", None, "unified"),
        ("rx7900xtx", None, "unified"),
        ("mi25", None, "bo"),
        ("mi210", Some("1.10"), "bo"),
    ] {
        let mut cmd = clean_cmd(&e);
        cmd.env("HSAKMT_MODEL", model).env("QUEUES_CWSR", cwsr);
        if let Some(v) = kfd {
            cmd.env("HSAKMT_MODEL_KFD_VERSION", v);
        }
        let o = run(&mut cmd);
        assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("queues: OK"), "{model} {kfd:?}:\n{}", show(&o));
    }
    // With HSAKMT_DEBUG_LEVEL=3 the model says why it stopped the faulting queue.
    let o = run(clean_cmd(&e).env("HSAKMT_MODEL", "mi210").env("QUEUES_CWSR", "unified").env("HSAKMT_DEBUG_LEVEL", "3"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{}", show(&o));
    assert!(
        err.lines().any(|l| l.contains(": SDMA queue ") && l.contains("stopped: GPU page fault at 0x7ff0001234")),
        "no stopped-queue line:\n{err}"
    );
    // The same through the model plugin (HSA_MODEL_LIB): doorbells mapped from its memfd, its
    // own watcher thread running the engines.
    let plugin = model_plugin(&s.lib);
    let o = run(clean_cmd(&e).env("HSA_MODEL_LIB", &plugin).env("HSAKMT_MODEL", "mi300x").env("QUEUES_CWSR", "unified"));
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("queues: OK"), "plugin:\n{}", show(&o));
}

/// A stopped queue reaches the program as amdgpu tells it (ffi/tests/c/queue_errors.c): a hung
/// SDMA or PM4 queue raises the HW-exception event when destroyed (per-queue reset on MI300X's
/// compute queues, a whole-GPU reset otherwise), and an AQL packet the CP rejects sets the
/// runtime's error word and event.
#[test]
fn queue_errors_from_c() {
    let s = setup();
    let e = compile(s, false, &c_dir().join("queue_errors.c"), "queue_errors", true, &[]);
    for (model, per_queue) in [("mi300x", "1"), ("mi210", "0"), ("rx7900xtx", "0")] {
        let o = run(clean_cmd(&e).env("HSAKMT_MODEL", model).env("EXPECT_PER_QUEUE_RESET", per_queue));
        assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("queue_errors: OK"), "{model}:\n{}", show(&o));
    }
    // Closing with stopped and hung queues never destroyed frees everything: nothing
    // definitely lost, no memory errors.
    require_tool("valgrind", "valgrind (Debian: valgrind)");
    let mut cmd = Command::new("valgrind");
    cmd.args(["--leak-check=full", "--errors-for-leak-kinds=definite", "--error-exitcode=99", "-q"]).arg(&e);
    for var in ["HSA_MODEL_TOPOLOGY", "HSA_MODEL_LIB", "HSAKMT_MODEL_KFD_VERSION", "HSA_OVERRIDE_GFX_VERSION", "HSAKMT_DEBUG_LEVEL"] {
        cmd.env_remove(var);
    }
    let o = run(cmd.env("HSAKMT_MODEL", "mi210").env("EXPECT_PER_QUEUE_RESET", "0"));
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("queue_errors: OK"), "valgrind:\n{}", show(&o));
}

/// An endless kernel does not hold the GPU (ffi/tests/c/preemption.c): another queue's
/// dispatches complete meanwhile, and destroying its queue stops it, through the thunk's own
/// model and through the model plugin's runner.
#[test]
fn an_endless_kernel_is_preempted_and_destroyed_from_c() {
    let s = setup();
    let e = compile(s, false, &c_dir().join("preemption.c"), "preemption", true, &[]);
    let o = run(clean_cmd(&e).env("HSAKMT_MODEL", "mi210"));
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("preemption: OK"), "{}", show(&o));
    let plugin = model_plugin(&s.lib);
    let o = run(clean_cmd(&e).env("HSA_MODEL_LIB", &plugin).env("HSAKMT_MODEL", "mi210"));
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("preemption: OK"), "plugin:\n{}", show(&o));
}

/// A wave's own messages (ffi/tests/c/wave_messages.c): `s_sendmsg sendmsg(MSG_INTERRUPT)`
/// signals the KFD event M0 names, `s_memrealtime` reads the clock GetClockCounters reports.
#[test]
fn wave_messages_signal_events_and_read_the_gpu_clock_from_c() {
    let s = setup();
    let e = compile(s, false, &c_dir().join("wave_messages.c"), "wave_messages", true, &[]);
    let o = run(clean_cmd(&e).env("HSAKMT_MODEL", "mi210"));
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("wave_messages: OK"), "{}", show(&o));
}

/// SMI events through hsaKmtOpenSMI (ffi/tests/c/smi.c): statuses, an empty file, a GPU page
/// fault (VMFAULT naming this process), a whole-GPU reset (GPU_PRE_RESET, QUEUE_EVICTION with
/// the SUSPEND trigger, GPU_POST_RESET), UNMAP_FROM_GPU where the CWSR area is an SVM range,
/// PROCESS_END after CloseKFD; and ERROR on a KFD older than 1.3.
#[test]
fn smi_events_from_c() {
    let s = setup();
    let e = exe(s, "smi");
    for (model, svm_cwsr) in [("mi210", "1"), ("mi300x", "1"), ("mi25", "0")] {
        let o = run(clean_cmd(&e).env("HSAKMT_MODEL", model).env("EXPECT_SVM_CWSR", svm_cwsr));
        assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("smi: OK"), "{model}:\n{}", show(&o));
    }
    let o = run(clean_cmd(&e).env("HSAKMT_MODEL", "mi210").env("HSAKMT_MODEL_KFD_VERSION", "1.2").env("SMI_OLD_KFD", "1"));
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("smi: OK"), "KFD 1.2:\n{}", show(&o));
}

/// The queues C test under valgrind (the watcher thread running the engines, doorbells, the
/// GPU page fault, close with a live queue): no memory errors and nothing definitely lost.
#[test]
fn queues_program_is_clean_under_valgrind() {
    require_tool("valgrind", "valgrind (Debian: valgrind)");
    let s = setup();
    let e = compile(s, false, &c_dir().join("queues.c"), "queues_vg", true, &[]);
    let mut cmd = Command::new("valgrind");
    cmd.args(["--leak-check=full", "--errors-for-leak-kinds=definite", "--error-exitcode=99", "-q"]).arg(&e);
    for var in ["HSA_MODEL_TOPOLOGY", "HSA_MODEL_LIB", "HSAKMT_MODEL_KFD_VERSION", "HSA_OVERRIDE_GFX_VERSION", "HSAKMT_DEBUG_LEVEL"] {
        cmd.env_remove(var);
    }
    let o = run(cmd.env("HSAKMT_MODEL", "mi210").env("QUEUES_CWSR", "unified"));
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("queues: OK"), "{}", show(&o));
}

#[test]
fn ipc_export_in_parent_import_in_forked_child() {
    let s = setup();
    let e = exe(s, "ipc_fork");
    let o = run(clean_cmd(&e).env("HSAKMT_MODEL", "mi210"));
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("ipc_fork: OK"), "{}", show(&o));
}

/// The memory C test under valgrind: no memory errors and nothing definitely lost, through open,
/// allocations of every kind, registration, mapping, and close.
#[test]
fn memory_program_is_clean_under_valgrind() {
    require_tool("valgrind", "valgrind (Debian: valgrind)");
    let s = setup();
    let e = exe(s, "memory_basic");
    let mut cmd = Command::new("valgrind");
    cmd.args(["--leak-check=full", "--errors-for-leak-kinds=definite", "--error-exitcode=99", "-q"]).arg(&e);
    for var in ["HSA_MODEL_TOPOLOGY", "HSA_MODEL_LIB", "HSAKMT_MODEL_KFD_VERSION", "HSA_OVERRIDE_GFX_VERSION", "HSAKMT_DEBUG_LEVEL"] {
        cmd.env_remove(var);
    }
    let o = run(cmd.env("HSAKMT_MODEL", "mi210"));
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("memory_basic: OK"), "{}", show(&o));
}

#[test]
fn hsa_check_userptr_touches_registered_pages() {
    let s = setup();
    let e = exe(s, "check_userptr");
    let o = run(clean_cmd(&e).env("HSAKMT_MODEL", "mi210").env("HSA_CHECK_USERPTR", "1"));
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("check_userptr: OK"), "{}", show(&o));
}

/// The debugger interface (ffi/tests/c/debug.c): a ptrace-attached debugger process and a forked
/// target on the model: ENABLE with a pipe as the event file, a memory violation routed to the
/// debugger instead of the runtime, suspend / resume of a queue checked by its data, queue and
/// device snapshots, and the kernel's errnos for bad input. Needs ptrace (no skip).
#[test]
fn debugger_from_c() {
    let s = setup();
    let e = compile(s, false, &c_dir().join("debug.c"), "debug", true, &[]);
    let o = run(clean_cmd(&e).env("HSAKMT_MODEL", "mi300x"));
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("debug: OK"), "{}", show(&o));
}

/// SPM through hsaKmtSPM* (ffi/tests/c/spm.c): samples while SDMA work runs, the retired
/// buffer's header, data loss, a timeout with no work, another process refused, release,
/// bad input; on a mainline KFD (no DKMS ioctls) ERROR.
#[test]
fn spm_from_c() {
    let s = setup();
    let e = exe(s, "spm");
    let o = run(clean_cmd(&e).env("HSAKMT_MODEL", "mi300x"));
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("spm: OK"), "mi300x:\n{}", show(&o));
    let o = run(clean_cmd(&e).env("HSAKMT_MODEL", "mi210").env("HSAKMT_MODEL_DKMS", "0").env("SPM_MAINLINE", "1"));
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("spm: OK"), "mainline:\n{}", show(&o));
}

/// AMD Infinity Storage through hsaKmtAisReadWriteFile (ffi/tests/c/ais.c): a file read into
/// VRAM and VRAM written back to the file, a read stopping at end of file, size 0, NULL outputs,
/// the thunk's and the kernel's refusals; on a mainline KFD (no DKMS ioctls) ERROR.
#[test]
fn ais_from_c() {
    let s = setup();
    let e = exe(s, "ais");
    let o = run(clean_cmd(&e).env("HSAKMT_MODEL", "mi300x"));
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("ais: OK"), "mi300x:\n{}", show(&o));
    let o = run(clean_cmd(&e).env("HSAKMT_MODEL", "mi210").env("HSAKMT_MODEL_DKMS", "0").env("AIS_MAINLINE", "1"));
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("ais: OK"), "mainline:\n{}", show(&o));
}

/// PC sampling through hsaKmtPcSampling* (ffi/tests/c/pc_sampling.c): the methods per GPU are
/// the KFD's table (gfx90a: host trap; gfx942: host trap and stochastic; others none).
#[test]
fn pc_sampling_from_c() {
    let s = setup();
    let e = exe(s, "pc_sampling");
    for (model, methods) in [("mi300x", "2"), ("mi210", "1"), ("rx7900xtx", "0"), ("mi25", "0")] {
        let o = run(clean_cmd(&e).env("HSAKMT_MODEL", model).env("PCS_METHODS", methods));
        assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("pc_sampling: OK"), "{model}:\n{}", show(&o));
    }
    let o = run(clean_cmd(&e).env("HSAKMT_MODEL", "mi210").env("HSAKMT_MODEL_KFD_VERSION", "1.15").env("PCS_OLD_KFD", "1"));
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("pc_sampling: OK"), "KFD 1.15:\n{}", show(&o));
}

/// KFD contexts (ffi/tests/c/contexts.c): the primary and two secondary contexts allocate, map,
/// create events and SDMA queues whose FENCEs the model GPU executes, each on its own; what one
/// made is unknown to the others; closing one leaves the others working; the classic API is the
/// primary context; SVM, userptr memory and the debugger are refused to a secondary context; fork
/// rules; bad handles. A KFD before 1.19 has no CREATE_PROCESS: NOT_SUPPORTED.
#[test]
fn kfd_contexts_from_c() {
    let s = setup();
    let e = exe(s, "contexts");
    for model in ["mi210", "mi300x"] {
        let o = run(clean_cmd(&e).env("HSAKMT_MODEL", model));
        assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("contexts: OK"), "{model}:\n{}", show(&o));
    }
    let o = run(clean_cmd(&e).env("HSAKMT_MODEL", "mi210").env("HSAKMT_MODEL_KFD_VERSION", "1.18").env("CONTEXTS_OLD_KFD", "1"));
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("contexts (KFD without CREATE_PROCESS): OK"), "{}", show(&o));
}

/// Not a test by itself: the loopback VirtIO host process of the `virtio_*` tests (the serve
/// loop of `hsakmt-virtio-host`), on the model of `HSAKMT_MODEL`, listening on
/// `VIRTIO_HOST_SOCKET`.
#[test]
#[ignore]
fn virtio_host_process() {
    let Ok(sock) = std::env::var("VIRTIO_HOST_SOCKET") else { return };
    let l = hsakmt_virtio::loopback::listen(Path::new(&sock)).expect("listens");
    println!("listening");
    hsakmt_virtio::host::serve_model_guests(&l);
}

/// A VirtIO host in a process of its own, ready when it says so.
fn virtio_host(name: &str) -> (std::process::Child, PathBuf) {
    use std::io::BufRead;
    let dir = std::env::temp_dir().join(format!("hsakmt-c-virtio-{}-{name}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("sock");
    let mut c = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "virtio_host_process", "--ignored", "--nocapture"])
        .env("VIRTIO_HOST_SOCKET", &sock)
        .env("HSAKMT_MODEL", "mi300x")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the host runs");
    let out = std::io::BufReader::new(c.stdout.take().unwrap());
    for l in out.lines() {
        if l.expect("the host's output").trim() == "listening" {
            return (c, sock);
        }
    }
    c.kill().ok();
    c.wait().ok();
    panic!("the host ended before listening");
}

/// vhsaKmt* from C (ffi/tests/c/virtio.c) in a guest process against a host process on the
/// model: topology equal to the direct API's, memory, events, an SDMA FENCE + TRAP on a queue
/// executed by the host's model GPU, statuses for bad input and for no host.
#[test]
fn virtio_from_c() {
    virtio_run_from_c("run", None);
}

/// The same scenarios through the DRM transport: `vhsaKmt*` issue the `VIRTGPU_*` ioctls to the
/// model of a virtio-gpu render node (`HSAKMT_VIRTIO_RENDER_NODE=model:<socket>`), whose device
/// is the host process.
#[test]
fn virtio_drm_from_c() {
    virtio_run_from_c("drm", Some("model:"));
}

/// `drm`: the render-node prefix of the DRM transport's model, or the loopback socket.
fn virtio_run_from_c(name: &str, drm: Option<&str>) {
    let s = setup();
    let e = compile(s, false, &c_dir().join("virtio.c"), &format!("virtio_{name}"), true, &["-pthread"]);
    let (mut h, sock) = virtio_host(name);
    let mut c = clean_cmd(&e);
    c.arg("run").env("HSAKMT_MODEL", "mi300x");
    match drm {
        Some(p) => c.env("VIRTIO_TEST_VAR", "HSAKMT_VIRTIO_RENDER_NODE").env("HSAKMT_VIRTIO_RENDER_NODE", format!("{p}{}", sock.display())),
        None => c.env("HSAKMT_VIRTIO_SOCKET", &sock),
    };
    let o = run(&mut c);
    h.kill().ok();
    h.wait().ok();
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("virtio: OK"), "{}", show(&o));
}

/// The host dies while the guest holds memory: every later call fails with a status, none hangs.
#[test]
fn virtio_dead_host_from_c() {
    virtio_dead_host("killed", None);
}

/// As `virtio_dead_host_from_c`, through the DRM transport and the model render node.
#[test]
fn virtio_drm_dead_host_from_c() {
    virtio_dead_host("drm_killed", Some("model:"));
}

fn virtio_dead_host(name: &str, drm: Option<&str>) {
    use std::io::{BufRead, Write};
    let s = setup();
    let e = compile(s, false, &c_dir().join("virtio.c"), &format!("virtio_{name}"), true, &["-pthread"]);
    let (mut h, sock) = virtio_host(name);
    let mut c = clean_cmd(&e);
    match drm {
        Some(p) => c.env("HSAKMT_VIRTIO_RENDER_NODE", format!("{p}{}", sock.display())),
        None => c.env("HSAKMT_VIRTIO_SOCKET", &sock),
    };
    let mut g = c.arg("killed").stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn().expect("the guest runs");
    let mut out = std::io::BufReader::new(g.stdout.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut l = String::new();
        if out.read_line(&mut l).expect("reads") == 0 {
            break;
        }
        seen += &l;
        if l.contains("kill the host") {
            break;
        }
    }
    assert!(seen.contains("kill the host"), "the guest did not get ready:\n{seen}");
    h.kill().expect("killed");
    h.wait().ok();
    g.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    let st = g.wait().unwrap();
    assert!(st.success() && rest.contains("virtio killed: OK"), "{st}\n{seen}{rest}");
}
