//! Debian bookworm's unmodified ROCm 5.2.3 stack on OUR libhsakmt.so.1 and the built-in model
//! (issue 8's acceptance): `rocminfo` (package rocminfo) and an HSA program of ours built against
//! the runtime's headers and linked to `libhsa-runtime64.so.1` (libhsa-runtime-dev,
//! libhsa-runtime64-1), on the gfx900 (`mi25`) and gfx90a (`mi210`) systems, with no variable
//! but `HSAKMT_MODEL`, and rocminfo also under valgrind with no memory errors. Issue 14's: the
//! runtime's blit kernels, and a HIP program built by Debian's `hipcc` 5.2 (hipcc,
//! libamdhip64-dev), run their gfx90a machine code on the `mi210` model.
//!
//! The clients run through `tools/foreign-client/run.sh`: a private mount namespace with
//! stand-ins for what rocminfo checks before it starts (an `lsmod` that lists amdgpu, an empty
//! regular file at /dev/kfd) and our library first on LD_LIBRARY_PATH.
//!
//! These tests never skip: a missing tool (rocminfo, the runtime, its headers, valgrind,
//! strace, unshare, root for the mount namespace) fails them with what to install. `.ci/run`
//! installs the packages.
//!
//! Expected facts come from the catalogue (`model/src/catalogue/`) and the hand table
//! `SYSTEMS`, never from the clients' output.

use hsakmt_model::catalogue;
use hsakmt_model::vfs::{parse_properties, prop, Tree};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");
const ROCMINFO: &str = "/usr/bin/rocminfo";
const RUNTIME: &str = "/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1";
const HSA_H: &str = "/usr/include/hsa/hsa.h";
const PACKAGES: &str = "rocminfo libhsa-runtime-dev valgrind strace";
/// valgrind's exit status when it found errors (distinct from the clients' own).
const VALGRIND_ERROR: i32 = 97;

/// Hand-read facts per system: (model, gfx target as ROCm names the agent, device id, the GPU's
/// marketing name (libdrm's amdgpu.ids name for that id, as core/src/topology/devices.rs has
/// it), GPU agents, CPU agents).
const SYSTEMS: &[(&str, &str, u64, &str, usize, usize)] =
    &[("mi25", "gfx900", 0x6860, "AMD Radeon Instinct MI25", 1, 1), ("mi210", "gfx90a", 0x740f, "AMD Instinct MI210", 8, 2)];

/// What a system must look like to a client, from the catalogue.
struct Expect {
    model: &'static str,
    gfx: &'static str,
    marketing: &'static str,
    gpus: usize,
    cpus: usize,
    /// Compute units of each GPU: simd_count / simd_per_cu.
    gpu_cus: u64,
    /// VRAM of each GPU (its mem_bank): the size of its coarse-grained global pool.
    vram: u64,
    /// Each CPU node's name and logical CPUs (cpu_cores_count), in node order.
    cpu_names: Vec<&'static str>,
    cpu_cus: Vec<u64>,
    /// The first data cache of each CPU node, in bytes (upstream's sysfs fallback unit, which
    /// the 5.2 runtime hands to rocminfo as if it were KiB).
    cpu_l1d: u64,
}

fn props(t: &Tree, path: &str) -> Vec<(String, u64)> {
    parse_properties(&t.read_str(path).unwrap_or_else(|| panic!("catalogue file {path} missing")))
}

fn expect(model: &str) -> Expect {
    let &(model, gfx, device_id, marketing, gpus, cpus) =
        SYSTEMS.iter().find(|s| s.0 == model).unwrap_or_else(|| panic!("no facts for {model}"));
    let t = catalogue::build(model).expect("catalogue entry");
    let nodes = t.count_numbered("nodes").unwrap();
    let (mut gpu_nodes, mut cpu_cus, mut cus, mut vram) = (0, Vec::new(), Vec::new(), Vec::new());
    for n in 0..nodes {
        let p = props(&t, &format!("nodes/{n}/properties"));
        let get = |k: &str| prop(&p, k).unwrap_or_else(|| panic!("{model} node {n}: no {k}"));
        if get("simd_count") == 0 {
            cpu_cus.push(get("cpu_cores_count"));
            continue;
        }
        gpu_nodes += 1;
        assert_eq!(get("device_id"), device_id, "{model} node {n}: SYSTEMS disagrees with the catalogue");
        cus.push(get("simd_count") / get("simd_per_cu"));
        vram.push(prop(&props(&t, &format!("nodes/{n}/mem_banks/0/properties")), "size_in_bytes").unwrap());
    }
    assert_eq!((gpu_nodes, cpu_cus.len()), (gpus, cpus), "{model}: SYSTEMS disagrees with the catalogue");
    cus.dedup();
    vram.dedup();
    assert_eq!((cus.len(), vram.len()), (1, 1), "{model}: GPUs differ");
    let sockets = catalogue::sockets(model).expect("catalogue CPUs");
    let l1d = sockets[0].part.caches.iter().find(|c| c.level == 1 && c.kind == catalogue::cpus::CacheType::Data).expect("an L1d");
    Expect {
        model,
        gfx,
        marketing,
        gpus,
        cpus,
        gpu_cus: cus[0],
        vram: vram[0],
        cpu_names: sockets.iter().map(|s| s.part.name).collect(),
        cpu_cus,
        cpu_l1d: u64::from(l1d.size_kib) * 1024,
    }
}

// ------------------------------------------------------------------------------------------
// Environment

struct Setup {
    /// Our libhsakmt.so, as cargo built it for this test run.
    lib: PathBuf,
    harness: PathBuf,
    work: PathBuf,
}

fn need(what: &str, path: &str) {
    assert!(
        Path::new(path).exists(),
        "debian_rocm52: {what} missing ({path}). These tests need Debian bookworm's ROCm 5.2.3 packages and tools: \
         apt-get install -y --no-install-recommends {PACKAGES} (.ci/run does it)"
    );
}

fn need_tool(tool: &str, arg: &str) {
    let ok = Command::new(tool).arg(arg).output().map(|o| o.status.success()).unwrap_or(false);
    assert!(
        ok,
        "debian_rocm52: `{tool} {arg}` does not run. Install it: apt-get install -y --no-install-recommends {PACKAGES} (.ci/run does it)"
    );
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        need("Debian's rocminfo (package rocminfo)", ROCMINFO);
        need("Debian's HSA runtime 5.2 (package libhsa-runtime64-1)", RUNTIME);
        need("the HSA runtime's headers (package libhsa-runtime-dev)", HSA_H);
        need_tool("valgrind", "--version");
        need_tool("strace", "-V");
        need_tool("cc", "--version");
        let unshare = Command::new("unshare").args(["--mount", "--propagation", "private", "true"]).output();
        match unshare {
            Ok(o) if o.status.success() => {}
            Ok(o) => panic!(
                "debian_rocm52: `unshare --mount` fails ({}): the clients' stand-ins need a private mount namespace, as root \
                 (or with CAP_SYS_ADMIN)",
                String::from_utf8_lossy(&o.stderr).trim()
            ),
            Err(e) => panic!("debian_rocm52: cannot run unshare (util-linux): {e}"),
        }
        let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("debian_rocm52");
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).unwrap();
        Setup { lib: find_cdylib(), harness: Path::new(MANIFEST).join("../tools/foreign-client/run.sh"), work }
    })
}

/// libhsakmt.so built by cargo for this test run: in `deps/` next to the test executable, or
/// uplifted one directory above (as c_api.rs finds it).
fn find_cdylib() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let deps = exe.parent().expect("test executable has a directory");
    let candidates = [deps.join("libhsakmt.so"), deps.parent().map(|d| d.join("libhsakmt.so")).unwrap_or_default()];
    candidates.iter().find(|c| c.is_file()).cloned().unwrap_or_else(|| panic!("libhsakmt.so not found (looked at {candidates:?})"))
}

/// Run `args` through the harness on `model`, the environment cleaned of every ROCm / HSA /
/// hsakmt variable (and preloads) so that `HSAKMT_MODEL` is the only one the clients see.
fn run_client(model: &str, args: &[&str]) -> Output {
    run_client_env(model, &[], args)
}

/// As [`run_client`], with `env` set too (after the cleaning).
fn run_client_env(model: &str, env: &[(&str, &str)], args: &[&str]) -> Output {
    let s = setup();
    let mut cmd = Command::new("timeout");
    cmd.args(["-k", "10", "600", "bash"]).arg(&s.harness).arg("--lib").arg(&s.lib).arg("--").args(args);
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("HSA") || k.starts_with("ROC") || k.starts_with("LD_") || k == "GPU_DEVICE_ORDINAL" {
            cmd.env_remove(&k);
        }
    }
    cmd.env("HSAKMT_MODEL", model);
    cmd.envs(env.iter().copied());
    cmd.output().unwrap_or_else(|e| panic!("cannot run the harness: {e}"))
}

/// `valgrind` with our suppressions (only the runtime's own errors, `debian_rocm52.supp`) and
/// its error status.
fn valgrind() -> Vec<String> {
    let supp = Path::new(MANIFEST).join("tests/debian_rocm52.supp");
    vec![
        "valgrind".into(),
        format!("--error-exitcode={VALGRIND_ERROR}"),
        "--num-callers=40".into(),
        format!("--suppressions={}", supp.display()),
    ]
}

/// A client's result for a failure message: the end of its stdout and stderr.
fn show(o: &Output) -> String {
    let tail = |b: &[u8], n: usize| {
        let t = String::from_utf8_lossy(b);
        let lines: Vec<&str> = t.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    };
    format!("status {}\n--- stdout (end)\n{}\n--- stderr (end)\n{}", o.status, tail(&o.stdout, 40), tail(&o.stderr, 60))
}

// ------------------------------------------------------------------------------------------
// rocminfo

/// One rocminfo agent block: every `key: value` line as (indent, key, value).
struct Agent {
    lines: Vec<(usize, String, String)>,
}

impl Agent {
    /// The first top-level (two-space) `key:` value.
    fn get(&self, key: &str) -> &str {
        self.lines.iter().find(|(i, k, _)| *i == 2 && k == key).map(|(_, _, v)| v.as_str()).unwrap_or("")
    }
    fn all(&self, key: &str) -> Vec<&str> {
        self.lines.iter().filter(|(_, k, _)| k == key).map(|(_, _, v)| v.as_str()).collect()
    }
}

fn agents(out: &str) -> Vec<Agent> {
    let mut agents: Vec<Agent> = Vec::new();
    let lines: Vec<&str> = out.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if line.trim_start().starts_with("Agent ") && i > 0 && lines[i - 1].trim() == "*******" {
            agents.push(Agent { lines: Vec::new() });
            continue;
        }
        let Some(a) = agents.last_mut() else { continue };
        let Some((k, v)) = line.split_once(':') else { continue };
        let indent = k.len() - k.trim_start().len();
        a.lines.push((indent, k.trim().to_string(), v.trim().to_string()));
    }
    agents
}

fn check_rocminfo(e: &Expect, o: &Output, how: &str) {
    let out = String::from_utf8_lossy(&o.stdout);
    let what = format!("rocminfo on {} ({}){how}", e.model, e.gfx);
    assert!(o.status.success(), "{what} failed:\n{}", show(o));
    assert!(out.contains("*** Done ***"), "{what}: no end marker:\n{}", show(o));
    let agents = agents(&out);
    let gpus: Vec<&Agent> = agents.iter().filter(|a| a.get("Device Type") == "GPU").collect();
    let cpus: Vec<&Agent> = agents.iter().filter(|a| a.get("Device Type") == "CPU").collect();
    assert_eq!((gpus.len(), cpus.len()), (e.gpus, e.cpus), "{what}: GPU and CPU agents\n{out}");
    for (i, g) in gpus.iter().enumerate() {
        assert_eq!(g.get("Name"), e.gfx, "{what}: GPU agent {i}");
        assert_eq!(g.get("Marketing Name"), e.marketing, "{what}: GPU agent {i}");
        assert_eq!(g.get("Compute Unit"), e.gpu_cus.to_string(), "{what}: GPU agent {i} CUs");
        assert_eq!(g.get("Node"), (e.cpus + i).to_string(), "{what}: GPU agent {i} node");
        let isas = g.all("Name");
        assert!(isas.iter().any(|n| n.starts_with(&format!("amdgcn-amd-amdhsa--{}", e.gfx))), "{what}: GPU agent {i} ISA: {isas:?}");
    }
    for (i, c) in cpus.iter().enumerate() {
        assert_eq!(c.get("Name"), e.cpu_names[i], "{what}: CPU agent {i}");
        assert_eq!(c.get("Marketing Name"), e.cpu_names[i], "{what}: CPU agent {i}");
        assert_eq!(c.get("Compute Unit"), e.cpu_cus[i].to_string(), "{what}: CPU agent {i} cores");
        let l1 = format!("{}({:#x}) KB", e.cpu_l1d, e.cpu_l1d);
        assert_eq!(c.all("L1").first().copied(), Some(l1.as_str()), "{what}: CPU agent {i} cache info");
    }
}

fn rocminfo(model: &str) {
    let e = expect(model);
    let o = run_client(model, &[ROCMINFO]);
    check_rocminfo(&e, &o, "");
}

fn rocminfo_valgrind(model: &str) {
    let e = expect(model);
    let mut args = valgrind();
    args.push(ROCMINFO.into());
    let o = run_client(model, &args.iter().map(String::as_str).collect::<Vec<_>>());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(VALGRIND_ERROR), "valgrind found memory errors in rocminfo on {model}:\n{err}");
    check_rocminfo(&e, &o, " under valgrind");
    assert!(err.contains("ERROR SUMMARY: 0 errors"), "rocminfo on {model} under valgrind:\n{err}");
}

#[test]
fn rocminfo_on_mi25_gfx900() {
    rocminfo("mi25");
}

#[test]
fn rocminfo_on_mi210_gfx90a() {
    rocminfo("mi210");
}

#[test]
fn rocminfo_on_mi25_under_valgrind() {
    rocminfo_valgrind("mi25");
}

#[test]
fn rocminfo_on_mi210_under_valgrind() {
    rocminfo_valgrind("mi210");
}

// ------------------------------------------------------------------------------------------
// An HSA program of ours

fn hsa_program() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| hsa_client("hsa_runtime_smoke"))
}

/// Build `tests/c/<name>.c` against Debian's headers (/usr/include/hsa) and runtime
/// (/usr/lib/x86_64-linux-gnu), as any user of libhsa-runtime-dev builds.
fn hsa_client(name: &str) -> PathBuf {
    let s = setup();
    let out = s.work.join(name);
    let src = Path::new(MANIFEST).join("tests/c").join(format!("{name}.c"));
    let o = Command::new("cc")
        .args(["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-O1"])
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .arg("-lhsa-runtime64")
        .output()
        .expect("run cc");
    assert!(o.status.success(), "cc {} failed:\n{}", src.display(), show(&o));
    out
}

fn hsa_program_on(model: &str) {
    let e = expect(model);
    let exe = hsa_program().to_str().unwrap().to_string();
    let (gpus, cpus) = (e.gpus.to_string(), e.cpus.to_string());
    let o = run_client(model, &[&exe, &gpus, &cpus, e.gfx]);
    let out = String::from_utf8_lossy(&o.stdout);
    let what = format!("the HSA program on {} ({})", e.model, e.gfx);
    assert!(o.status.success(), "{what} failed:\n{}", show(&o));
    let has = |line: &str| out.lines().any(|l| l == line);
    assert!(has(&format!("agents gpu {} cpu {}", e.gpus, e.cpus)), "{what}: agents\n{out}");
    for (i, name) in e.cpu_names.iter().enumerate() {
        assert!(has(&format!("agent cpu node {i} name {name} cus {}", e.cpu_cus[i])), "{what}: CPU node {i}\n{out}");
    }
    for g in 0..e.gpus {
        let node = e.cpus + g;
        assert!(has(&format!("agent gpu node {node} name {} cus {}", e.gfx, e.gpu_cus)), "{what}: GPU node {node}\n{out}");
        assert!(
            out.lines().any(|l| l.starts_with(&format!("isa {node} amdgcn-amd-amdhsa--{}", e.gfx))),
            "{what}: GPU node {node} ISA\n{out}"
        );
    }
    // The first pool of a GPU is its VRAM: coarse grained (flags 4), allocatable, the bank's size.
    assert!(has(&format!("pool 0 segment 0 flags 4 alloc 1 size {}", e.vram)), "{what}: VRAM pool\n{out}");
    assert!(out.lines().any(|l| l.starts_with("allocated 1048576 at 0x")), "{what}: allocation\n{out}");
    let mut queued = vec![0];
    if e.gpus > 1 {
        queued.push(e.gpus - 1);
    }
    for g in queued {
        assert!(has(&format!("gpu {g} barrier dependency OK")), "{what}: GPU {g}\n{out}");
        assert!(has(&format!("gpu {g} barriers 33 OK")), "{what}: GPU {g}\n{out}");
    }
    assert!(has("OK"), "{what}: no OK\n{out}");
}

/// ROCm 5.2's `hsa_amd_memory_async_copy` with its default settings: each copy begins with the
/// SDMA HDP flush, then host -> GPU 0 -> last GPU -> host, the data checked.
fn async_copies_on(model: &str) {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    let exe = EXE.get_or_init(|| hsa_client("hsa_async_copy"));
    let e = expect(model);
    let o = run_client(model, &[exe.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "async copies on {model} failed:\n{}", show(&o));
    let want = format!("copies OK: host->gpu0->gpu{}->host, 1048576 bytes, {} GPUs", e.gpus - 1, e.gpus);
    assert!(out.lines().any(|l| l == want), "async copies on {model}: want {want:?}\n{out}");
}

/// A packet the GPU rejects, as ROCm 5.2's runtime learns of it (no RUNTIME_ENABLE: the CP's
/// queue-error code in the queue's inactive signal, its event raised): the queue's error
/// callback reports the status instead of the program hanging.
fn queue_errors_on(model: &str) {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    let exe = EXE.get_or_init(|| hsa_client("hsa_queue_error"));
    let o = run_client(model, &[exe.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "queue errors on {model} failed:\n{}", show(&o));
    // hsa.h: HSA_STATUS_ERROR_INVALID_PACKET_FORMAT 0x1009, _INCOMPATIBLE_ARGUMENTS 0x100D.
    for line in ["queue error agent-dispatch status 0x1009", "queue error empty-grid status 0x100d", "OK"] {
        assert!(out.lines().any(|l| l == line), "queue errors on {model}: want {line:?}\n{out}");
    }
}

/// The runtime's own blit kernels (issue 14): with `HSA_ENABLE_SDMA=0` ROCm 5.2 copies and fills
/// with the GPU machine code it carries (its copy-aligned, copy-misaligned and fill shaders),
/// dispatched on an AQL queue; the model runs that code. `hsa_blit.c` copies host -> VRAM ->
/// host, VRAM -> VRAM (aligned, and at odd offsets and sizes), fills VRAM and host memory, and
/// checks every byte against its own CPU computation. Our `hsaKmtCreateQueue` log
/// (`HSAKMT_DEBUG_LEVEL=7`) shows that the runtime made compute AQL queues only, no SDMA queue:
/// the bytes were moved by kernels.
fn blit_kernels_on(model: &str) {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    let exe = EXE.get_or_init(|| hsa_client("hsa_blit"));
    let o = run_client_env(model, &[("HSA_ENABLE_SDMA", "0"), ("HSAKMT_DEBUG_LEVEL", "7")], &[exe.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "blit kernels on {model} failed:\n{}", show(&o));
    for line in [
        "ok host->vram->host 1048576",
        "ok vram->vram 1048576",
        "ok misaligned vram->vram 100003",
        "ok misaligned host<->vram 4097 8191",
        "ok fill 262144 dwords, 1000 at 37",
        "ok host fill 333 dwords",
        "blit OK",
    ] {
        assert!(out.lines().any(|l| l == line), "blit kernels on {model}: want {line:?}\n{out}");
    }
    // "hsaKmtCreateQueue: node N type T -> queue Q" (ffi/src/queues.rs); HSA_QUEUE_COMPUTE_AQL
    // is 21 in hsakmttypes.h.
    let err = String::from_utf8_lossy(&o.stderr);
    let types: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("hsakmt: hsaKmtCreateQueue"))
        .filter_map(|l| l.split(" type ").nth(1)?.split(' ').next())
        .collect();
    assert!(!types.is_empty() && types.iter().all(|&t| t == "21"), "blit kernels on {model}: queue types {types:?}\n{err}");
}

#[test]
fn blit_kernels_on_mi210_gfx90a() {
    blit_kernels_on("mi210");
}

#[test]
fn queue_errors_on_mi25_gfx900() {
    queue_errors_on("mi25");
}

#[test]
fn queue_errors_on_mi210_gfx90a() {
    queue_errors_on("mi210");
}

#[test]
fn async_copies_on_mi25_gfx900() {
    async_copies_on("mi25");
}

#[test]
fn async_copies_on_mi210_gfx90a() {
    async_copies_on("mi210");
}

#[test]
fn hsa_program_on_mi25_gfx900() {
    hsa_program_on("mi25");
}

#[test]
fn hsa_program_on_mi210_gfx90a() {
    hsa_program_on("mi210");
}

// ------------------------------------------------------------------------------------------
// HIP: Debian's hipcc and libamdhip64 5.2

const HIPCC: &str = "/usr/bin/hipcc";
const HIP_PACKAGES: &str = "hipcc libamdhip64-dev";

/// `tests/hip/hip_vector_add.hip` built by Debian's `hipcc` (clang-15, the HIP headers and
/// rocm-device-libs) for gfx90a: the user's kernel is a code object in the executable's offload
/// bundle, loaded by libamdhip64 through the HSA runtime.
fn hip_program() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let s = setup();
        assert!(
            Path::new(HIPCC).exists() && Path::new("/usr/include/hip/hip_runtime.h").exists(),
            "debian_rocm52: Debian's HIP 5.2 missing ({HIPCC}, /usr/include/hip): apt-get install -y --no-install-recommends \
             {HIP_PACKAGES} (.ci/run does it)"
        );
        let src = Path::new(MANIFEST).join("tests/hip/hip_vector_add.hip");
        let out = s.work.join("hip_vector_add");
        let o = Command::new(HIPCC).args(["--offload-arch=gfx90a", "-O2", "-Wall", "-Werror"]).arg(&src).arg("-o").arg(&out).output();
        let o = o.unwrap_or_else(|e| panic!("cannot run {HIPCC} ({e}): apt-get install {HIP_PACKAGES}"));
        assert!(o.status.success(), "hipcc {} failed:\n{}", src.display(), show(&o));
        out
    })
}

/// A HIP vector add on the gfx90a model (issue 14): hipMalloc, hipMemcpy host -> device
/// (pageable memory the runtime stages through its own buffers), the kernel launch (the user's
/// code object from hipcc), hipMemcpy device -> host, hipMemset (the HIP runtime's own fill
/// kernel, compiled at run time through libamd_comgr) and a device -> device copy (its copy
/// kernel), then a block reduction through LDS (`__shared__`, `__syncthreads`) with atomicAdd on
/// a stream, fed from pinned memory (hipHostMalloc) by hipMemcpyAsync and timed with events, and
/// f32/f64 division, sqrt and the device library's expf/__expf/logf/sinf/cosf (issue 14), and
/// `__shfl_down` / `__shfl_xor` within waves (ds_bpermute_b32); each result checked by the program against its CPU computation. The device HIP reports is the
/// catalogue's GPU.
#[test]
fn hip_vector_add_on_mi210_gfx90a() {
    let model = "mi210";
    let e = expect(model);
    let exe = hip_program().to_str().unwrap().to_string();
    let n = 1 << 20;
    let o = run_client(model, &[&exe, &n.to_string()]);
    let out = String::from_utf8_lossy(&o.stdout);
    let what = format!("the HIP vector add on {model} ({})", e.gfx);
    assert!(o.status.success(), "{what} failed:\n{}", show(&o));
    let has = |line: &str| out.lines().any(|l| l == line);
    assert!(has(&format!("devices {}", e.gpus)), "{what}: device count\n{out}");
    // "device <name> <gcnArchName> cus <n>": gcnArchName is the ISA name with its features
    // (gfx90a:sramecc+:xnack-).
    let dev = out.lines().find(|l| l.starts_with("device ")).unwrap_or_default();
    assert!(dev.starts_with(&format!("device {} {}:", e.marketing, e.gfx)), "{what}: {dev:?}");
    assert!(dev.ends_with(&format!(" cus {}", e.gpu_cus)), "{what}: {dev:?}");
    let bytes = 4 * n;
    for line in [
        format!("ok memcpy host to device {bytes}"),
        format!("ok vector_add {n}"),
        format!("ok memset and device to device {bytes}"),
        format!("ok block_sums {} blocks, stream and events", n / 256),
        "ok math 4096".to_string(),
        format!("ok shuffles {} waves", n / 64),
        "OK".to_string(),
    ] {
        assert!(has(&line), "{what}: want {line:?}\n{out}");
    }
}

// ------------------------------------------------------------------------------------------
// The harness itself

/// The stand-ins exist inside the namespace only, our library is the one the clients find, and
/// nothing is left behind.
#[test]
fn harness_stand_ins_are_private() {
    let s = setup();
    let kfd_before = Path::new("/dev/kfd").exists();
    let o = run_client(
        "mi25",
        &[
            "sh",
            "-c",
            "test -f /dev/kfd && test -w /dev/kfd && lsmod | grep -q '^amdgpu ' && readlink -f \"${LD_LIBRARY_PATH%%:*}/libhsakmt.so.1\"",
        ],
    );
    assert!(o.status.success(), "stand-ins missing inside the namespace:\n{}", show(&o));
    let resolved = String::from_utf8_lossy(&o.stdout).trim().to_string();
    assert_eq!(Path::new(&resolved), s.lib.canonicalize().unwrap(), "LD_LIBRARY_PATH's libhsakmt.so.1 is ours");
    assert_eq!(Path::new("/dev/kfd").exists(), kfd_before, "the /dev/kfd stand-in leaked out of the namespace");
    let tmp = std::env::var_os("TMPDIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/tmp"));
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("hsakmt-foreign."))
        .filter(|e| e.path().read_dir().map(|mut d| d.next().is_some()).unwrap_or(false))
        .collect();
    assert!(left.is_empty(), "non-empty scratch directories left behind: {left:?}");
}

/// With HSAKMT_MODEL set our library uses the model and never opens /dev/kfd: the only open of
/// the stand-in is rocminfo's own check, and the libhsakmt.so.1 loaded is ours, never Debian's.
#[test]
fn only_rocminfo_opens_the_dev_kfd_stand_in() {
    let s = setup();
    let log = s.work.join("rocminfo.strace");
    let log_s = log.to_str().unwrap().to_string();
    let o = run_client("mi25", &["strace", "-f", "-e", "trace=open,openat", "-o", &log_s, ROCMINFO]);
    let trace = std::fs::read_to_string(&log).unwrap_or_else(|e| panic!("no strace log ({e}):\n{}", show(&o)));
    let kfd: Vec<&str> = trace.lines().filter(|l| l.contains("\"/dev/kfd\"")).collect();
    assert_eq!(kfd.len(), 1, "opens of /dev/kfd (rocminfo's check only):\n{}", kfd.join("\n"));
    assert!(kfd[0].contains("O_RDWR") && !kfd[0].contains("= -1"), "rocminfo opened the stand-in read-write: {}", kfd[0]);
    let loaded: Vec<&str> = trace.lines().filter(|l| l.contains("libhsakmt.so") && !l.contains("ENOENT")).collect();
    assert!(loaded.iter().any(|l| l.contains("/lib/libhsakmt.so.1\"")), "our libhsakmt.so.1 was not loaded:\n{}", loaded.join("\n"));
    assert!(!loaded.iter().any(|l| l.contains("x86_64-linux-gnu/libhsakmt")), "Debian's libhsakmt was loaded:\n{}", loaded.join("\n"));
}
