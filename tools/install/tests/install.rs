//! The installer end to end: install into temporary prefixes (libdir `lib` and
//! `lib/x86_64-linux-gnu`), check the installed tree, then build a C client (tests/user) through
//! `pkg-config libhsakmt` and through the CMake package (`find_package(hsakmt 1.0 CONFIG)`,
//! shared and static targets) and run it, the installed kmtinfo and the installed model plugin
//! on the built-in mi210 model. Nothing here is skipped: without a C compiler, pkg-config, cmake
//! or binutils (strip, readelf) the tests fail and say what to install.
//!
//! The installer builds with `--profile dev` into its own target directory (under
//! CARGO_TARGET_TMPDIR): the dev profile is incremental, so after a source change the rebuild is
//! quick, and a separate directory keeps the nested `cargo build` from rewriting the
//! `libhsakmt.so` that other tests of the same run link against (cdylib file names carry no
//! hash). What the release profile changes (optimisation) is not what these tests check; the
//! stripping path is the same.
//!
//! Expected facts of the mi210 model, from model/src/catalogue/mod.rs (`mi210()`): two CPU nodes
//! of 64 cores, eight GPU nodes with gfx_target_version 90010 (gfx 9.0.10), simd_count 416 and
//! device_id 0x740f.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");

fn show(o: &Output) -> String {
    format!("status {}\n--- stdout\n{}--- stderr\n{}", o.status, String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn run_ok(cmd: &mut Command) -> String {
    let o = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(o.status.success(), "{cmd:?} failed:\n{}", show(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The tool, or a loud failure naming the Debian package that has it.
fn require(tool: &str, package: &str) -> String {
    let works = Command::new(tool).arg("--version").output().map(|o| o.status.success()).unwrap_or(false);
    assert!(works, "`{tool} --version` does not run: these tests need {package} (apt-get install {package}; .ci/run installs it)");
    tool.to_string()
}

fn cc() -> String {
    require(&std::env::var("CC").unwrap_or_else(|_| "cc".into()), "gcc")
}

/// A command with a clean environment: no LD_LIBRARY_PATH or model variables of the caller.
fn clean(exe: &Path) -> Command {
    let mut c = Command::new(exe);
    c.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default());
    c
}

struct Installed {
    prefix: PathBuf,
    libdir: PathBuf,
    /// X.Y.Z of libhsakmt.so.X.Y.Z.
    version: String,
    work: PathBuf,
}

/// Runs the installer into a fresh `<tmp>/<name>/prefix` with the given libdir (and destdir).
fn install(name: &str, libdir: &str, destdir: Option<&Path>) -> (PathBuf, String) {
    require("strip", "binutils");
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work).unwrap();
    let prefix = work.join("prefix");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hsakmt-install"));
    cmd.arg("--prefix").arg(&prefix).arg("--libdir").arg(libdir).args(["--profile", "dev"]);
    if let Some(d) = destdir {
        cmd.arg("--destdir").arg(d);
    }
    cmd.env("CARGO_TARGET_DIR", Path::new(env!("CARGO_TARGET_TMPDIR")).join("install-build"));
    (work, run_ok(&mut cmd))
}

/// The version in the real file's name, after checking the libdir holds exactly the library
/// files and symlinks it should.
fn installed_version(libdir: &Path) -> String {
    let mut real = Vec::new();
    for e in fs::read_dir(libdir).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        if let Some(v) = name.strip_prefix("libhsakmt.so.").filter(|v| v.split('.').count() == 3) {
            real.push(v.to_string());
        }
    }
    assert_eq!(real.len(), 1, "one libhsakmt.so.X.Y.Z in {}: {real:?}", libdir.display());
    let version = real.pop().unwrap();
    assert!(version.starts_with("1."), "version {version}: the major must be the SONAME's (1)");
    let real_name = format!("libhsakmt.so.{version}");
    assert!(fs::symlink_metadata(libdir.join(&real_name)).unwrap().file_type().is_file());
    assert_eq!(fs::read_link(libdir.join("libhsakmt.so.1")).unwrap(), Path::new(&real_name));
    assert_eq!(fs::read_link(libdir.join("libhsakmt.so")).unwrap(), Path::new("libhsakmt.so.1"));
    version
}

fn install_into(name: &str, libdir: &str) -> Installed {
    let (work, listing) = install(name, libdir, None);
    let prefix = work.join("prefix");
    let libdir = prefix.join(libdir);
    let version = installed_version(&libdir);
    for p in [
        libdir.join("libhsakmt.a"),
        libdir.join("libhsakmt_model.so"),
        libdir.join("libdtif.so"),
        libdir.join("pkgconfig/libhsakmt.pc"),
        libdir.join("cmake/hsakmt/hsakmt-config.cmake"),
        libdir.join("cmake/hsakmt/hsakmt-config-version.cmake"),
        prefix.join("bin/kmtinfo"),
    ] {
        assert!(p.is_file(), "{} not installed; installer said:\n{listing}", p.display());
        assert!(listing.contains(p.to_str().unwrap()), "{} not in the installer's listing:\n{listing}", p.display());
    }
    // Every header of the source tree, byte for byte.
    let src = Path::new(MANIFEST).join("../../ffi/include/hsakmt");
    let mut stack = vec![PathBuf::new()];
    let mut headers = 0;
    while let Some(rel) = stack.pop() {
        for e in fs::read_dir(src.join(&rel)).unwrap() {
            let rel = rel.join(e.unwrap().file_name());
            if src.join(&rel).is_dir() {
                stack.push(rel);
            } else {
                headers += 1;
                let installed = prefix.join("include/hsakmt").join(&rel);
                assert_eq!(fs::read(src.join(&rel)).unwrap(), fs::read(&installed).unwrap_or_default(), "{}", installed.display());
            }
        }
    }
    assert!(headers >= 5 && prefix.join("include/hsakmt/linux/kfd_ioctl.h").is_file());
    Installed { prefix, libdir, version, work }
}

/// SONAME and no debug sections in the installed ELF files.
fn check_elf_files(i: &Installed) {
    let readelf = require("readelf", "binutils");
    let so = i.libdir.join(format!("libhsakmt.so.{}", i.version));
    let dynamic = run_ok(Command::new(&readelf).arg("-d").arg(&so));
    assert!(dynamic.contains("Library soname: [libhsakmt.so.1]"), "{dynamic}");
    let dtif = run_ok(Command::new(&readelf).arg("-d").arg(i.libdir.join("libdtif.so")));
    assert!(dtif.contains("Library soname: [libdtif.so]"), "{dtif}");
    for f in [
        so.clone(),
        i.libdir.join("libhsakmt.a"),
        i.libdir.join("libhsakmt_model.so"),
        i.libdir.join("libdtif.so"),
        i.prefix.join("bin/kmtinfo"),
    ] {
        let sections = run_ok(Command::new(&readelf).arg("-S").arg("-W").arg(&f));
        // (.debug_gdb_scripts is a loaded section naming gdb helpers, not debug information.)
        for s in [".debug_info", ".debug_line", ".debug_str"] {
            assert!(!sections.contains(s), "{} still has {s}", f.display());
        }
    }
    eprintln!("{}: {} bytes", so.display(), fs::metadata(&so).unwrap().len());
}

/// The mi210 facts in the client's output, and the library it loaded.
fn check_user_output(out: &str, library: Option<&Path>, what: &str) {
    let lines: Vec<&str> = out.lines().collect();
    let has = |l: &str| lines.contains(&l);
    match library {
        Some(lib) => assert!(has(&format!("library {}", lib.display())), "{what}: libhsakmt not loaded from {}:\n{out}", lib.display()),
        None => assert!(has("library static"), "{what}: a libhsakmt.so was loaded:\n{out}"),
    }
    assert!(lines.iter().any(|l| l.starts_with("kfd 1.")), "{what}:\n{out}");
    assert!(has("nodes 10"), "{what}:\n{out}");
    for n in 0..2 {
        assert!(has(&format!("node {n} cpu cores 64")), "{what}: node {n}:\n{out}");
    }
    for n in 2..10 {
        assert!(has(&format!("node {n} gpu gfx 9.0.10 simds 416 device 0x740f")), "{what}: node {n}:\n{out}");
    }
    assert!(has("alloc on node 2 ok") && has("closed"), "{what}:\n{out}");
}

/// pkg-config: the file's values, then the client built with `--cflags --libs` and a RUNPATH
/// from `--variable=libdir`, run with no LD_LIBRARY_PATH (and once through the installed model
/// plugin).
fn pkg_config_client(i: &Installed) {
    let pkg_config = require("pkg-config", "pkg-config");
    let pc = |args: &[&str]| {
        run_ok(Command::new(&pkg_config).args(args).arg("libhsakmt").env("PKG_CONFIG_PATH", i.libdir.join("pkgconfig"))).trim().to_string()
    };
    assert_eq!(pc(&["--modversion"]), i.version);
    assert_eq!(pc(&["--variable=libdir"]), i.libdir.to_str().unwrap());
    let cflags = pc(&["--cflags"]);
    assert_eq!(cflags, format!("-I{}/include", i.prefix.display()));
    let libs = pc(&["--libs"]);
    assert_eq!(libs, format!("-L{} -lhsakmt", i.libdir.display()));
    let static_libs = pc(&["--static", "--libs"]);
    assert!(static_libs.starts_with(&libs) && static_libs.contains("-lpthread"), "{static_libs}");

    let exe = i.work.join("user_pc");
    run_ok(
        Command::new(cc())
            .args(["-std=gnu11", "-Wall", "-Wextra", "-Werror"])
            .args(cflags.split_whitespace())
            .arg(Path::new(MANIFEST).join("tests/user/user.c"))
            .arg("-o")
            .arg(&exe)
            .args(libs.split_whitespace())
            .arg(format!("-Wl,-rpath,{}", i.libdir.display())),
    );
    let so = i.libdir.join("libhsakmt.so.1");
    check_user_output(&run_ok(clean(&exe).env("HSAKMT_MODEL", "mi210")), Some(&so), "pkg-config client");
    let plugin = i.libdir.join("libhsakmt_model.so");
    let out = run_ok(clean(&exe).env("HSAKMT_MODEL", "mi210").env("HSA_MODEL_LIB", &plugin));
    check_user_output(&out, Some(&so), "pkg-config client on the installed model plugin");
}

/// CMake: `find_package(hsakmt 1.0 CONFIG REQUIRED)` (and 2.0 refused), the client linked to
/// hsakmt::hsakmt and to hsakmt-staticdrm::hsakmt-staticdrm, both with libdrm_amdgpu brought
/// along; the shared one runs from CMake's build RUNPATH, with no LD_LIBRARY_PATH.
fn cmake_client(i: &Installed) {
    let cmake = require("cmake", "cmake");
    let build = i.work.join("cmake-build");
    let configure = run_ok(
        Command::new(&cmake)
            .arg("-S")
            .arg(Path::new(MANIFEST).join("tests/user"))
            .arg("-B")
            .arg(&build)
            .arg(format!("-DCMAKE_PREFIX_PATH={}", i.prefix.display()))
            .arg(format!("-DCMAKE_C_COMPILER={}", cc())),
    );
    let want = format!("hsakmt version {} in {}", i.version, i.libdir.join("cmake/hsakmt").display());
    assert!(configure.contains(&want), "expected {want:?} in\n{configure}");
    run_ok(Command::new(&cmake).arg("--build").arg(&build));
    let out = run_ok(clean(&build.join("user")).env("HSAKMT_MODEL", "mi210"));
    check_user_output(&out, Some(&i.libdir.join("libhsakmt.so.1")), "CMake client (hsakmt::hsakmt)");
    assert!(out.lines().any(|l| l == "amdgpu linked"), "{out}");
    let out = run_ok(clean(&build.join("user_static")).env("HSAKMT_MODEL", "mi210"));
    check_user_output(&out, None, "CMake client (hsakmt-staticdrm::hsakmt-staticdrm)");
    assert!(out.lines().any(|l| l == "amdgpu linked"), "{out}");
}

/// Without libdrm the package still defines hsakmt::hsakmt (without it) and says so: a client
/// calling only hsaKmt* builds and runs. libdrm is hidden from CMake by ignoring the directory
/// pkg-config reports for libdrm_amdgpu (and its twin under / on merged-/usr systems).
fn cmake_client_without_libdrm(i: &Installed) {
    let cmake = require("cmake", "cmake");
    let drm_dir = run_ok(Command::new(require("pkg-config", "pkg-config")).args(["--variable=libdir", "libdrm_amdgpu"])).trim().to_string();
    assert!(!drm_dir.is_empty(), "pkg-config knows no libdrm_amdgpu: these tests need libdrm-dev");
    let mut ignore = vec![drm_dir.clone()];
    if let Some(rest) = drm_dir.strip_prefix("/usr") {
        ignore.push(rest.to_string());
    }
    let build = i.work.join("cmake-build-nodrm");
    let mut cmd = Command::new(&cmake);
    cmd.arg("-S")
        .arg(Path::new(MANIFEST).join("tests/user"))
        .arg("-B")
        .arg(&build)
        .arg(format!("-DCMAKE_PREFIX_PATH={}", i.prefix.display()))
        .arg(format!("-DCMAKE_IGNORE_PATH={}", ignore.join(";")))
        .arg(format!("-DCMAKE_C_COMPILER={}", cc()))
        .arg("-DUSER_AMDGPU=OFF");
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{cmd:?}:\n{}", show(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("libdrm_amdgpu or libdrm not found") && stderr.contains("hsakmt::hsakmt is"), "no warning:\n{}", show(&o));
    run_ok(Command::new(&cmake).arg("--build").arg(&build));
    let out = run_ok(clean(&build.join("user")).env("HSAKMT_MODEL", "mi210"));
    check_user_output(&out, Some(&i.libdir.join("libhsakmt.so.1")), "CMake client without libdrm");
}

fn kmtinfo_runs(i: &Installed) {
    let out = run_ok(clean(&i.prefix.join("bin/kmtinfo")).args(["--model", "mi210"]));
    assert!(out.contains("10 nodes") && out.contains("GPU gfx90a"), "{out}");
}

fn whole_install(name: &str, libdir: &str) {
    let i = install_into(name, libdir);
    check_elf_files(&i);
    pkg_config_client(&i);
    cmake_client(&i);
    kmtinfo_runs(&i);
}

#[test]
fn install_with_libdir_lib_then_build_and_run_clients() {
    whole_install("install-lib", "lib");
}

#[test]
fn cmake_package_without_libdrm_warns_and_links_hsakmt_clients() {
    cmake_client_without_libdrm(&install_into("install-nodrm", "lib"));
}

#[test]
fn install_with_libdir_lib_x86_64_linux_gnu_then_build_and_run_clients() {
    whole_install("install-multiarch", "lib/x86_64-linux-gnu");
}

/// --destdir stages the tree; the paths written into it are the final prefix's, and the
/// relocatable CMake package works from the staged copy.
#[test]
fn destdir_stages_files_for_the_final_prefix() {
    let stage = Path::new(env!("CARGO_TARGET_TMPDIR")).join("install-destdir-stage");
    let _ = fs::remove_dir_all(&stage);
    let (work, listing) = install("install-destdir", "lib", Some(&stage));
    let prefix = work.join("prefix");
    assert!(!prefix.exists(), "--destdir wrote into the final prefix");
    let staged_prefix = stage.join(prefix.strip_prefix("/").unwrap());
    let libdir = staged_prefix.join("lib");
    installed_version(&libdir);
    assert!(listing.contains(&format!("{}/lib/libhsakmt.so.1 -> ", prefix.display())), "{listing}");
    let pc = fs::read_to_string(libdir.join("pkgconfig/libhsakmt.pc")).unwrap();
    assert!(pc.lines().any(|l| l == format!("prefix={}", prefix.display())), "{pc}");
    let i = Installed { version: installed_version(&libdir), prefix: staged_prefix, libdir, work };
    cmake_client(&i);
}
