//! The plugin table, the environment, and fork. One test function: it changes environment
//! variables and forks, so nothing else may run beside it in this binary.

use hsakmt_core::abi::kfd::*;
use hsakmt_core::abi::model::{drm_cmd, GetHsakmtModelFunctions, HsakmtModelFunctions};
use hsakmt_model::{get_hsakmt_model_functions, hsakmt_rs_get_model_functions, Model, ModelConfig, ModelError};
use std::ffi::{c_void, CString};
use std::os::fd::{FromRawFd, OwnedFd};
use zerocopy::{FromZeros, IntoBytes};

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn check_table(t: &HsakmtModelFunctions, expect_default_gpus: usize) {
    assert_eq!((t.version_major, t.version_minor), (1, 1));
    let create = t.create_memfd.unwrap();
    let ioctl = t.handle_ioctl.unwrap();
    let drm = t.handle_drm_call.unwrap();
    // SAFETY: plugin entry points called as the interface defines, with live arguments.
    unsafe {
        let fd = create();
        assert!(fd >= 0);
        drop(OwnedFd::from_raw_fd(fd));
        let mut v = kfd_ioctl_get_version_args::new_zeroed();
        assert_eq!(ioctl(AMDKFD_IOC_GET_VERSION as _, v.as_mut_bytes().as_mut_ptr().cast()), 0);
        assert_eq!((v.major_version, v.minor_version), (1, 14), "HSAKMT_MODEL_KFD_VERSION");
        assert_eq!(ioctl(AMDKFD_IOC_GET_VERSION as _, std::ptr::null_mut()), -1);
        assert_eq!(errno(), libc::EFAULT);
        assert_eq!(ioctl(0x4b00, std::ptr::null_mut()), -1);
        assert_eq!(errno(), libc::ENOTTY);
        let mut a = kfd_ioctl_get_process_apertures_new_args::new_zeroed();
        assert_eq!(ioctl(AMDKFD_IOC_GET_PROCESS_APERTURES_NEW as _, a.as_mut_bytes().as_mut_ptr().cast()), 0);
        assert_eq!(a.num_of_nodes as usize, expect_default_gpus);
        let mut fd_out = -1i32;
        let mut args = [128u64, &mut fd_out as *mut i32 as u64];
        assert_eq!(drm(drm_cmd::OPEN_RENDER, args.as_mut_ptr().cast()), 0);
        assert!(fd_out >= 0);
        let mut close = [fd_out as u64];
        assert_eq!(drm(drm_cmd::CLOSE, close.as_mut_ptr().cast()), 0);
        assert_eq!(drm(drm_cmd::BO_FREE, close.as_mut_ptr().cast()), -1);
        assert_eq!(errno(), libc::ENOSYS);
    }
}

/// The built cdylib next to this test binary (target/<profile>/ or its deps/), if cargo built it.
fn cdylib() -> Option<std::path::PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let deps = exe.parent()?;
    [deps.to_path_buf(), deps.parent()?.to_path_buf()].into_iter().map(|d| d.join("libhsakmt_model.so")).find(|p| p.is_file())
}

#[test]
fn plugin_environment_and_fork() {
    // --- layout
    assert_eq!(std::mem::size_of::<HsakmtModelFunctions>(), 32);
    assert_eq!(std::mem::offset_of!(HsakmtModelFunctions, version_minor), 4);
    assert_eq!(std::mem::offset_of!(HsakmtModelFunctions, create_memfd), 8);
    assert_eq!(std::mem::offset_of!(HsakmtModelFunctions, handle_ioctl), 16);
    assert_eq!(std::mem::offset_of!(HsakmtModelFunctions, handle_drm_call), 24);

    // --- from_env rules (sequential: this test owns the environment)
    for k in ["HSA_MODEL_TOPOLOGY", "HSAKMT_MODEL", "HSAKMT_MODEL_KFD_VERSION", "HSAKMT_MODEL_DKMS"] {
        std::env::remove_var(k);
    }
    assert_eq!(ModelConfig::from_env().unwrap(), ModelConfig::catalogue("mi300x"));
    assert!(ModelConfig::from_env().unwrap().dkms_ioctls, "ROCm's ioctls by default");
    std::env::set_var("HSAKMT_MODEL_DKMS", "0");
    assert_eq!(ModelConfig::from_env().unwrap(), ModelConfig::catalogue("mi300x").with_dkms_ioctls(false));
    std::env::remove_var("HSAKMT_MODEL_DKMS");
    std::env::set_var("HSAKMT_MODEL", "");
    assert_eq!(ModelConfig::from_env().unwrap(), ModelConfig::catalogue("mi300x"));
    std::env::set_var("HSAKMT_MODEL", "mi210");
    assert_eq!(Model::from_env().unwrap().gpus().len(), 8);
    std::env::set_var("HSAKMT_MODEL_KFD_VERSION", "1.x");
    assert_eq!(Model::from_env().unwrap_err(), ModelError::BadKfdVersion("1.x".into()));
    assert_eq!(Model::from_env().unwrap_err().to_string(), "HSAKMT_MODEL_KFD_VERSION=1.x: expected MAJOR.MINOR, e.g. 1.14");
    std::env::set_var("HSAKMT_MODEL_KFD_VERSION", "1.14");
    assert_eq!(Model::from_env().unwrap().kfd_version(), (1, 14));
    // HSA_MODEL_TOPOLOGY wins over HSAKMT_MODEL; broken directories are reported clearly.
    std::env::set_var("HSA_MODEL_TOPOLOGY", "/nonexistent/topology");
    assert_eq!(Model::from_env().unwrap_err().to_string(), "HSA_MODEL_TOPOLOGY=/nonexistent/topology: does not exist");
    std::env::set_var("HSA_MODEL_TOPOLOGY", "/proc/self/status");
    assert_eq!(Model::from_env().unwrap_err().to_string(), "HSA_MODEL_TOPOLOGY=/proc/self/status: not a directory");
    std::env::set_var("HSA_MODEL_TOPOLOGY", "/proc/self");
    assert_eq!(Model::from_env().unwrap_err().to_string(), "HSA_MODEL_TOPOLOGY=/proc/self: nodes/ missing");
    let dir = std::env::temp_dir().join(format!("hsakmt-model-plugin-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    hsakmt_model::catalogue::export("mi25", &dir).unwrap();
    std::env::set_var("HSA_MODEL_TOPOLOGY", &dir);
    let m = Model::from_env().unwrap();
    assert_eq!(m.gpus().len(), 1);
    assert_eq!(m.gpus()[0].gpu_id, 13261);

    // --- the in-crate plugin tables (the 1.1 table's global model comes from this environment:
    // mi25, 1.14). Our thunk's export names the interface; the plain export answers 0.4 unless
    // HSAKMT_MODEL_INTERFACE says 1.1.
    // SAFETY: the exports return pointers to static tables (1.1, and 0.4 whose header is the
    // same two u32).
    unsafe {
        check_table(&*hsakmt_rs_get_model_functions(1).cast::<HsakmtModelFunctions>(), 1);
        assert!(hsakmt_rs_get_model_functions(2).is_null(), "no interface 2.x");
        let v04 = &*hsakmt_rs_get_model_functions(0).cast::<hsakmt_model::plugin04::ModelFunctions04>();
        assert_eq!((v04.version_major, v04.version_minor), (0, 4));
        assert!(v04.create.is_some() && v04.register_queue.is_some() && v04.destroy_queue.is_some());
        let header = |p: *const c_void| (*p.cast::<u32>(), *p.cast::<u32>().add(1));
        std::env::remove_var("HSAKMT_MODEL_INTERFACE");
        assert_eq!(header(get_hsakmt_model_functions()), (0, 4), "the plain export's default");
        for (v, want) in [("1.1", (1, 1)), ("1", (1, 1)), ("0.4", (0, 4)), ("", (0, 4)), ("7.7", (0, 4))] {
            std::env::set_var("HSAKMT_MODEL_INTERFACE", v);
            assert_eq!(header(get_hsakmt_model_functions()), want, "HSAKMT_MODEL_INTERFACE={v}");
        }
        std::env::set_var("HSAKMT_MODEL_INTERFACE", "1.1");
        check_table(&*get_hsakmt_model_functions().cast::<HsakmtModelFunctions>(), 1);
    }

    // --- the built .so, through dlopen, as libhsakmt loads it (HSAKMT_MODEL_INTERFACE=1.1 is
    // still set: a 1.1 thunk that knows only the plain export)
    if let Some(lib) = cdylib() {
        let name = CString::new(lib.to_str().unwrap()).unwrap();
        // SAFETY: dlopen/dlsym with valid C strings; the library stays loaded.
        unsafe {
            let h = libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
            assert!(!h.is_null(), "dlopen {}", lib.display());
            let sym = libc::dlsym(h, c"get_hsakmt_model_functions".as_ptr());
            assert!(!sym.is_null());
            let get: GetHsakmtModelFunctions = std::mem::transmute::<*mut c_void, GetHsakmtModelFunctions>(sym);
            let tp = get();
            assert!(!tp.is_null());
            check_table(&*tp, 1);
            let sym = libc::dlsym(h, c"hsakmt_rs_get_model_functions".as_ptr());
            assert!(!sym.is_null(), "our thunk's export");
            let get = std::mem::transmute::<*mut c_void, unsafe extern "C" fn(u32) -> *const c_void>(sym);
            check_table(&*get(1).cast::<HsakmtModelFunctions>(), 1);
        }
    } else {
        eprintln!("libhsakmt_model.so not found next to the test binary; dlopen check skipped");
    }
    std::env::remove_var("HSAKMT_MODEL_INTERFACE");

    // --- fork: the child may not use the parent's KFD (EBADF) until it opens its own.
    let m = Model::new(ModelConfig::catalogue("mi25")).unwrap();
    let get_version = |m: &Model| {
        let mut v = kfd_ioctl_get_version_args::new_zeroed();
        // SAFETY: `v` is a live argument struct.
        unsafe { m.handle_ioctl(u64::from(AMDKFD_IOC_GET_VERSION), v.as_mut_bytes().as_mut_ptr().cast()) }
    };
    assert_eq!(get_version(&m), Ok(()));
    // SAFETY: the child only calls into the model and then _exit()s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let code = if get_version(&m) != Err(libc::EBADF) {
            1
        } else if m.create_memfd().is_err() {
            2
        } else if get_version(&m) != Ok(()) {
            3
        } else {
            0
        };
        // SAFETY: terminating the forked child without running the parent's destructors.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: waiting for our own child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status));
    assert_eq!(libc::WEXITSTATUS(status), 0, "child step failed");
    assert_eq!(get_version(&m), Ok(()), "the parent keeps its KFD");
    std::fs::remove_dir_all(&dir).unwrap();
}
