//! The libdrm_amdgpu loader against the real library (Debian's libdrm-amdgpu1, which .ci/packages
//! installs): it loads and its functions resolve; `amdgpu_device_initialize` refuses files that
//! are not an amdgpu render node, and nothing is recorded then; handles this set did not make
//! never reach libdrm. The devices themselves need an AMD GPU (none here).

use hsakmt_core::Errno;
use hsakmt_linux::libdrm::{AmdgpuDevices, LibdrmAmdgpu, GPU_COUNTER_FREQ_OFFSET};
use std::os::fd::AsRawFd;

fn lib() -> &'static LibdrmAmdgpu {
    LibdrmAmdgpu::get().expect("libdrm_amdgpu.so.1 loads (package libdrm-amdgpu1, listed in .ci/packages)")
}

#[test]
fn the_library_loads_with_the_functions_the_thunk_uses() {
    let lib = lib();
    // Debian's libdrm is 2.4.110+: both optional functions are there too.
    assert!(lib.has_get_fd(), "amdgpu_device_get_fd resolves");
    assert!(lib.has_query_gpu_info(), "amdgpu_query_gpu_info resolves");
    assert!(std::ptr::eq(lib, LibdrmAmdgpu::get().unwrap()), "loaded once per process");
}

#[test]
fn files_that_are_not_amdgpu_render_nodes_get_no_device() {
    lib();
    let devs = AmdgpuDevices::new();
    let null = std::fs::File::open("/dev/null").unwrap();
    let memfd = rustix::fs::memfd_create("not-a-gpu", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    for fd in [null.as_raw_fd(), memfd.as_raw_fd(), -1] {
        match devs.initialize(fd) {
            Err(Errno(e)) => assert!(e > 0 && e != Errno::ENOSYS, "libdrm's own refusal for fd {fd}, got errno {e}"),
            Ok(d) => panic!("fd {fd} became an amdgpu device {d:?}"),
        }
    }
    assert_eq!(devs.count(), 0);
    // the refused fds are still ours and open
    assert!(rustix::fs::fstat(&null).is_ok() && rustix::fs::fstat(&memfd).is_ok());
}

#[test]
fn handles_this_set_did_not_make_never_reach_libdrm() {
    lib();
    let devs = AmdgpuDevices::new();
    // A forged pointer would crash libdrm if it were passed on.
    for h in [0usize, 8, 0xdead_beef] {
        assert_eq!(devs.gpu_counter_khz(h), Err(Errno(Errno::EINVAL)));
        devs.deinitialize(h);
        assert!(!devs.contains(h));
    }
}

/// The offset of `gpu_counter_freq` the loader reads is the one libdrm's header gives
/// (libdrm-dev in .ci/packages; a C compiler builds the probe).
#[test]
fn gpu_counter_freq_offset_matches_amdgpu_h() {
    let dir = std::env::temp_dir().join(format!("hsakmt-libdrm-offset-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("probe.c");
    std::fs::write(
        &src,
        "#include <stddef.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <amdgpu.h>\n\
         int main(void) { printf(\"%zu %zu\", offsetof(struct amdgpu_gpu_info, gpu_counter_freq), \
         sizeof(((struct amdgpu_gpu_info *)0)->gpu_counter_freq)); return 0; }\n",
    )
    .unwrap();
    let exe = dir.join("probe");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let built =
        std::process::Command::new(&cc).args(["-I/usr/include/libdrm", "-o"]).arg(&exe).arg(&src).status().expect("a C compiler (cc) runs");
    assert!(built.success(), "probe builds against /usr/include/libdrm/amdgpu.h (libdrm-dev)");
    let out = std::process::Command::new(&exe).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(String::from_utf8(out.stdout).unwrap(), format!("{GPU_COUNTER_FREQ_OFFSET} 4"));
}
