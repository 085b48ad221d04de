//! libdtif.so as the HSA runtime's thunk loader uses it with `HSA_ENABLE_DTIF=1`: dlopen by
//! name, every function by dlsym, DtifCreate("HSA") first and DtifDestroy last.
//!
//! The topology program of the ABI-generation tests (ffi/tests/c/generation_topology.c), built
//! in its dlsym mode against older generations' headers, must read what the same program built
//! against our headers reads — the library finds the caller's generation in the names it
//! passes to dlsym. Needs a C compiler and Debian's libdrm-amdgpu1 (.ci/packages).

#[path = "../../ffi/tests/support/cprog.rs"]
#[allow(dead_code)] // shared with the ffi tests, which use the rest
mod cprog;

use cprog::{compile_linking, run, show};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dtif");
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("lib")).unwrap();
        std::os::unix::fs::symlink(cprog::built_library("libdtif.so"), d.join("lib/libdtif.so")).unwrap();
        d
    })
}

fn libdir() -> PathBuf {
    scratch().join("lib")
}

/// The topology program: linked to libdtif.so with our headers (the reference), or dlsym'ing
/// it with a generation's headers.
fn program(name: &str, args: &[&str], link: bool) -> PathBuf {
    let l = format!("-L{}", libdir().display());
    let libs: &[&str] = if link { &[&l, "-ldtif"] } else { &[] };
    compile_linking(scratch(), "generation_topology.c", name, args, libs)
}

fn run_on(exe: &Path, model: &str) -> (String, String) {
    let mut c = Command::new(exe);
    c.env("LD_LIBRARY_PATH", libdir()).env("HSAKMT_MODEL", model).env("HSAKMT_DEBUG_LEVEL", "4");
    for v in ["HSAKMT_ABI", "HSA_MODEL_LIB", "HSA_MODEL_TOPOLOGY"] {
        c.env_remove(v);
    }
    let o = run(&mut c);
    assert!(o.status.success(), "{exe:?} on {model}:\n{}", show(&o));
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

fn header(label: &str) -> String {
    format!("-DHSAKMT_HEADER=\"{}/tests/c/generations/{label}.h\"", cprog::ffi_dir().display())
}

#[test]
fn exports_what_the_runtime_takes_and_nothing_else() {
    let lib = cprog::built_library("libdtif.so");
    let nm = run(Command::new("nm").arg("-D").arg("--defined-only").arg(&lib));
    let syms = String::from_utf8_lossy(&nm.stdout);
    let names: Vec<&str> = syms.lines().filter_map(|l| l.split_whitespace().nth(2)).collect();
    for want in [
        "DtifCreate@@HSAKMT_1",
        "DtifDestroy@@HSAKMT_1",
        "hsaKmtOpenKFD@@HSAKMT_1",
        "hsaKmtModelEnabled@@HSAKMT_1",
        "hsaKmtQueueRingDoorbell@@HSAKMT_1",
        "hsaKmtGetNodeProperties@@HSAKMT_1",
        "hsaKmtGetNodeProperties_abi1@@HSAKMT_1",
        "amdgpu_device_initialize@@HSAKMT_1",
        "amdgpu_device_deinitialize@@HSAKMT_1",
        "amdgpu_query_gpu_info@@HSAKMT_1",
        "amdgpu_bo_cpu_map@@HSAKMT_1",
        "amdgpu_bo_free@@HSAKMT_1",
        "amdgpu_bo_export@@HSAKMT_1",
        "amdgpu_bo_import@@HSAKMT_1",
        "amdgpu_bo_va_op@@HSAKMT_1",
        "drmCommandWriteRead@@HSAKMT_1",
    ] {
        assert!(names.contains(&want), "{want} not exported:\n{syms}");
    }
    let others: Vec<&&str> = names
        .iter()
        .filter(|n| {
            !(n.starts_with("hsaKmt")
                || n.starts_with("Dtif")
                || n.starts_with("amdgpu_")
                || n.starts_with("drmCommand")
                || **n == "HSAKMT_1")
        })
        .collect();
    assert!(others.is_empty(), "libdtif.so exports more: {others:?}");
    let d = run(Command::new("readelf").arg("-d").arg(&lib));
    assert!(String::from_utf8_lossy(&d.stdout).contains("Library soname: [libdtif.so]"), "{}", show(&d));
}

#[test]
fn dlsym_clients_of_each_generation_read_what_ours_read() {
    let inc = format!("-I{}/include", cprog::ffi_dir().display());
    let reference = program("ours", &["-DHSAKMT_HEADER=<hsakmt/hsakmt.h>", &inc], true);
    // (headers, a function the client also takes, the generation the library must decide)
    let clients = [
        ("rocm-5.0", None, "rocm-5.0"),
        ("rocm-7.0", Some("hsaKmtModelEnabled"), "rocm-7.0"),
        ("rocm-6.3", Some("hsaKmtCreateQueueExt"), "rocm-6.3"),
    ];
    for (label, witness, decided) in clients {
        let mut args = vec![header(label), "-DVIA_DTIF".to_string()];
        if let Some(w) = witness {
            args.push(format!("-DWITNESS={w}"));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let exe = program(&format!("dtif_{label}"), &args, false);
        let needed = run(Command::new("readelf").arg("-d").arg(&exe));
        assert!(!String::from_utf8_lossy(&needed.stdout).contains("libhsakmt"), "{label} links a thunk");
        for model in ["mi25", "mi210"] {
            let (want, _) = run_on(&reference, model);
            let (got, err) = run_on(&exe, model);
            assert_eq!(got, want, "{label} through dlsym on {model} reads another topology:\n{err}");
            let line = err.lines().find(|l| l.contains("ABI generation")).unwrap_or_else(|| panic!("{err}"));
            assert!(line.contains(&format!("generation {decided} ")) && line.contains("libdtif.so"), "{label}: {line}");
        }
    }
}

/// The libdrm functions reach the system's libdrm_amdgpu; a NULL handle (what the model hands
/// out) is -EINVAL, never a crash.
#[test]
fn drm_functions_forward_to_libdrm() {
    type Init = unsafe extern "C" fn(i32, *mut u32, *mut u32, *mut *mut std::ffi::c_void) -> i32;
    type Free = unsafe extern "C" fn(*mut std::ffi::c_void) -> i32;
    let lib = std::ffi::CString::new(cprog::built_library("libdtif.so").to_str().unwrap()).unwrap();
    // SAFETY: dlopen of our own library; its constructors only register fork handlers.
    let h = unsafe { libc::dlopen(lib.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    assert!(!h.is_null());
    // SAFETY: a live handle and NUL-terminated names.
    let (init, free) = unsafe { (libc::dlsym(h, c"amdgpu_device_initialize".as_ptr()), libc::dlsym(h, c"amdgpu_bo_free".as_ptr())) };
    assert!(!init.is_null() && !free.is_null());
    // SAFETY: non-NULL symbols of the signatures above (dtif/src/lib.rs).
    let (init, free) =
        unsafe { (std::mem::transmute::<*mut std::ffi::c_void, Init>(init), std::mem::transmute::<*mut std::ffi::c_void, Free>(free)) };
    // SAFETY: a NULL handle is the case under test.
    assert_eq!(unsafe { free(std::ptr::null_mut()) }, -libc::EINVAL);
    let null = std::fs::File::open("/dev/null").unwrap();
    let (mut major, mut minor, mut dev) = (0u32, 0u32, std::ptr::null_mut());
    // SAFETY: valid out-pointers; /dev/null is no DRM device, so libdrm refuses it.
    let r = unsafe { init(std::os::fd::AsRawFd::as_raw_fd(&null), &mut major, &mut minor, &mut dev) };
    assert!(
        r < 0 && r != -libc::ENOSYS,
        "amdgpu_device_initialize(/dev/null) = {r}: libdrm_amdgpu not reached (ENOSYS: install libdrm-amdgpu1)"
    );
    assert!(dev.is_null());
}
