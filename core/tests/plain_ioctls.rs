//! The safe `ioctl_plain` path is only as sound as its list of `PlainIoctl` argument structs:
//! each must be its request's own struct (kfd-ioctls.tsv) and hold no field the kernel uses as
//! an address (kfd-ioctl-types.tsv), except the few reviewed in core/src/port.rs.

use hsakmt_core::port::PLAIN_IOCTLS;
use std::path::PathBuf;

fn table(name: &str) -> Vec<Vec<String>> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| l.split('\t').map(str::to_owned).collect()).collect()
}

/// Fields whose names look like addresses but are not used as one (see the notes on the
/// `plain_ioctls!` list): a cache-policy aperture, a value kept for a debugger, a BO handle.
const REVIEWED: &[(&str, &str)] = &[
    ("kfd_ioctl_set_memory_policy_args", "alternate_aperture_base"),
    ("kfd_ioctl_runtime_enable_args", "r_debug"),
    ("kfd_ioctl_create_event_args", "event_page_offset"),
];

fn looks_like_address(field: &str) -> bool {
    ["ptr", "addr", "address", "base", "offset", "r_debug"].iter().any(|w| field.contains(w))
}

#[test]
fn every_plain_ioctl_is_its_requests_struct_and_holds_no_address() {
    let ioctls = table("kfd-ioctls.tsv");
    let types = table("kfd-ioctl-types.tsv");
    assert!(PLAIN_IOCTLS.len() >= 16);
    for &(name, request) in PLAIN_IOCTLS {
        let tagged = format!("struct {name}");
        let row = ioctls.iter().find(|r| r[3] == tagged).unwrap_or_else(|| panic!("{name}: no ioctl takes it"));
        let want = u32::from_str_radix(row[5].trim_start_matches("0x"), 16).unwrap();
        assert_eq!(request, want, "{name}: REQUEST is not {}", row[0]);
        let fields: Vec<&Vec<String>> = types.iter().filter(|r| r[0] == "field" && r[1] == tagged).collect();
        assert!(!fields.is_empty(), "{name}: no fields in the ABI table");
        for f in fields {
            let (field, ty) = (&f[2], &f[5]);
            assert!(ty.starts_with("__u") || ty.starts_with("__s"), "{name}.{field}: {ty} is not a plain integer");
            if looks_like_address(field) {
                assert!(REVIEWED.contains(&(name, field.as_str())), "{name}.{field} looks like an address: not a PlainIoctl");
            }
        }
    }
}

#[test]
fn pointer_carrying_ioctls_are_not_plain() {
    for name in [
        "kfd_ioctl_wait_events_args",
        "kfd_ioctl_create_queue_args",
        "kfd_ioctl_update_queue_args",
        "kfd_ioctl_set_cu_mask_args",
        "kfd_ioctl_get_queue_wave_state_args",
        "kfd_ioctl_get_process_apertures_new_args",
        "kfd_ioctl_alloc_memory_of_gpu_args",
        "kfd_ioctl_map_memory_to_gpu_args",
        "kfd_ioctl_unmap_memory_from_gpu_args",
        "kfd_ioctl_get_tile_config_args",
        "kfd_ioctl_get_dmabuf_info_args",
        "kfd_ioctl_import_dmabuf_args",
        "kfd_ioctl_ipc_import_handle_args",
        "kfd_ioctl_set_scratch_backing_va_args",
        "kfd_ioctl_set_trap_handler_args",
        "kfd_ioctl_svm_args",
    ] {
        assert!(!PLAIN_IOCTLS.iter().any(|&(n, _)| n == name), "{name} carries addresses");
    }
}
