//! Building and running C programs against the libhsakmt.so cargo built for this test run.
//! A missing C compiler (or any other tool a test names) fails the test: it never skips.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

pub const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");

/// The ffi package's directory (the C test programs and headers), whichever package includes
/// this module.
pub fn ffi_dir() -> PathBuf {
    Path::new(MANIFEST).parent().expect("a package directory has a parent").join("ffi")
}

/// `$CC` or `cc`; panics with the reason when there is none.
pub fn cc() -> &'static str {
    static CC: OnceLock<String> = OnceLock::new();
    CC.get_or_init(|| {
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        require_tool(&cc, "a C compiler ($CC or `cc`; Debian: gcc)");
        cc
    })
}

/// Panic unless `tool --version` runs.
pub fn require_tool(tool: &str, what: &str) {
    let ok = Command::new(tool).arg("--version").output().map(|o| o.status.success()).unwrap_or(false);
    assert!(ok, "this test needs {what}: `{tool} --version` does not run (.ci/run installs what the tests need)");
}

/// A directory holding `libhsakmt.so.1` and `libhsakmt.so` for the cdylib cargo built, so
/// programs linked with `-lhsakmt` load ours (put it first on LD_LIBRARY_PATH).
pub fn libdir(scratch: &Path) -> PathBuf {
    let dir = scratch.join("lib");
    if !dir.join("libhsakmt.so.1").exists() {
        std::fs::create_dir_all(&dir).unwrap();
        let lib = cdylib();
        let _ = std::os::unix::fs::symlink(&lib, dir.join("libhsakmt.so.1"));
        let _ = std::os::unix::fs::symlink(&lib, dir.join("libhsakmt.so"));
    }
    dir
}

/// libhsakmt.so built by cargo for this test run.
pub fn cdylib() -> PathBuf {
    built_library("libhsakmt.so")
}

/// A cdylib of this package built by cargo for this test run: in `deps/` next to the test
/// executable, or uplifted one directory above.
pub fn built_library(file: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let deps = exe.parent().expect("test executable has a directory");
    let candidates = [deps.join(file), deps.parent().map(|d| d.join(file)).unwrap_or_default()];
    for c in &candidates {
        if c.is_file() {
            return c.clone();
        }
    }
    panic!("{file} not found (looked at {candidates:?}); cargo builds a package's cdylib before its tests");
}

/// `$CXX` or `c++`; panics with the reason when there is none.
pub fn cxx() -> &'static str {
    static CXX: OnceLock<String> = OnceLock::new();
    CXX.get_or_init(|| {
        let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
        require_tool(&cxx, "a C++ compiler ($CXX or `c++`; Debian: g++)");
        cxx
    })
}

/// Compile `source` (relative to ffi/tests/c) with `args` into `out`, linked to our library;
/// a `.cpp` source is compiled as C++17.
pub fn compile(scratch: &Path, source: &str, out: &str, args: &[&str]) -> PathBuf {
    let lib = format!("-L{}", libdir(scratch).display());
    compile_linking(scratch, source, out, args, &[&lib, "-lhsakmt"])
}

/// As [`compile`], linked with `libs` instead of our libhsakmt (e.g. none: a program that
/// dlopens a thunk).
pub fn compile_linking(scratch: &Path, source: &str, out: &str, args: &[&str], libs: &[&str]) -> PathBuf {
    let exe = scratch.join(out);
    let src = ffi_dir().join("tests/c").join(source);
    let (compiler, std) = if source.ends_with(".cpp") { (cxx(), "-std=c++17") } else { (cc(), "-std=gnu11") };
    let mut cmd = Command::new(compiler);
    cmd.args([std, "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-Wno-unused-function", "-Wno-unused-parameter"])
        .args(args)
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .args(libs)
        .arg("-ldl");
    let o = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(o.status.success(), "{cmd:?} failed:\n{}", show(&o));
    exe
}

/// A command for `exe` that loads our library, with a clean model/ABI environment.
pub fn command(scratch: &Path, exe: &Path) -> Command {
    let mut c = Command::new(exe);
    c.env("LD_LIBRARY_PATH", libdir(scratch));
    for v in ["HSAKMT_ABI", "HSAKMT_DEBUG_LEVEL", "HSA_MODEL_LIB", "HSA_MODEL_TOPOLOGY", "HSAKMT_MODEL"] {
        c.env_remove(v);
    }
    c
}

/// A command's result for a failure message (stdout cut to its first 60 lines).
pub fn show(o: &Output) -> String {
    let stdout = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    let stdout =
        if lines.len() > 60 { format!("{}\n... ({} more lines)\n", lines[..60].join("\n"), lines.len() - 60) } else { stdout.into_owned() };
    format!("status {}\n--- stdout\n{stdout}--- stderr\n{}", o.status, String::from_utf8_lossy(&o.stderr))
}

pub fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}
