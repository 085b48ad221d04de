//! SMI event ids, triggers and masks that our generated `kfd_ioctl.h` copy (upstream
//! libhsakmt's, which stops at GPU_POST_RESET) lacks. Hand-written; the source of the facts is
//! mainline Linux's `include/uapi/linux/kfd_ioctl.h` (enum kfd_smi_event,
//! KFD_MIGRATE_TRIGGERS, KFD_QUEUE_EVICTION_TRIGGERS, KFD_SVM_UNMAP_TRIGGERS,
//! KFD_SMI_EVENT_MASK_FROM_INDEX and the KFD_EVENT_FMT_* record formats quoted below).
//!
//! A record read from the SMI file is one line: the event id in hex, a space, then the event's
//! message (the formats are C printf formats, as the kernel writes them):
//!
//! | event | message |
//! |---|---|
//! | VMFAULT | `%x:%s\n` pid, task name |
//! | THERMAL_THROTTLE | `%llx:%llx\n` throttle bitmask, interrupt counter |
//! | GPU_PRE_RESET / GPU_POST_RESET | `%x %s\n` reset sequence number, reset cause |
//! | PAGE_FAULT_START | `%lld -%d @%lx(%x) %c\n` ns, pid, page address, gpu_id, `R`/`W` |
//! | PAGE_FAULT_END | `%lld -%d @%lx(%x) %c\n` ns, pid, page address, gpu_id, `M`/`U` |
//! | MIGRATE_START | `%lld -%d @%lx(%lx) %x->%x %x:%x %d\n` ns, pid, start page, pages, from, to, prefetch loc, preferred loc, trigger |
//! | MIGRATE_END | `%lld -%d @%lx(%lx) %x->%x %d %d\n` ns, pid, start page, pages, from, to, trigger, error code |
//! | QUEUE_EVICTION | `%lld -%d %x %d\n` ns, pid, gpu_id, trigger |
//! | QUEUE_RESTORE | `%lld -%d %x %c\n` ns, pid, gpu_id, `R` when rescheduled (else a NUL byte) |
//! | UNMAP_FROM_GPU | `%lld -%d @%lx(%lx) %x %d\n` ns, pid, start page, pages, gpu_id, trigger |
//! | PROCESS_START / PROCESS_END | `%x %s\n` pid, task name |
//!
//! `ns` is CLOCK_BOOTTIME (ktime_get_boottime_ns); locations are gpu_ids, 0 for system memory.

use super::kfd::kfd_smi_event;

pub const KFD_SMI_EVENT_MIGRATE_START: kfd_smi_event = 5;
pub const KFD_SMI_EVENT_MIGRATE_END: kfd_smi_event = 6;
pub const KFD_SMI_EVENT_PAGE_FAULT_START: kfd_smi_event = 7;
pub const KFD_SMI_EVENT_PAGE_FAULT_END: kfd_smi_event = 8;
pub const KFD_SMI_EVENT_QUEUE_EVICTION: kfd_smi_event = 9;
pub const KFD_SMI_EVENT_QUEUE_RESTORE: kfd_smi_event = 10;
pub const KFD_SMI_EVENT_UNMAP_FROM_GPU: kfd_smi_event = 11;
pub const KFD_SMI_EVENT_PROCESS_START: kfd_smi_event = 12;
pub const KFD_SMI_EVENT_PROCESS_END: kfd_smi_event = 13;
/// Not an event: the mask bit that asked for every process's events (see the model's
/// `smi.rs` for what mainline makes of it now).
pub const KFD_SMI_EVENT_ALL_PROCESS: kfd_smi_event = 64;

/// enum KFD_MIGRATE_TRIGGERS.
pub const KFD_MIGRATE_TRIGGER_PREFETCH: u32 = 0;
pub const KFD_MIGRATE_TRIGGER_PAGEFAULT_GPU: u32 = 1;
pub const KFD_MIGRATE_TRIGGER_PAGEFAULT_CPU: u32 = 2;
pub const KFD_MIGRATE_TRIGGER_TTM_EVICTION: u32 = 3;

/// enum KFD_QUEUE_EVICTION_TRIGGERS.
pub const KFD_QUEUE_EVICTION_TRIGGER_SVM: u32 = 0;
pub const KFD_QUEUE_EVICTION_TRIGGER_USERPTR: u32 = 1;
pub const KFD_QUEUE_EVICTION_TRIGGER_TTM: u32 = 2;
pub const KFD_QUEUE_EVICTION_TRIGGER_SUSPEND: u32 = 3;
pub const KFD_QUEUE_EVICTION_CRIU_CHECKPOINT: u32 = 4;
pub const KFD_QUEUE_EVICTION_CRIU_RESTORE: u32 = 5;

/// enum KFD_SVM_UNMAP_TRIGGERS.
pub const KFD_SVM_UNMAP_TRIGGER_MMU_NOTIFY: u32 = 0;
pub const KFD_SVM_UNMAP_TRIGGER_MMU_NOTIFY_MIGRATE: u32 = 1;
pub const KFD_SVM_UNMAP_TRIGGER_UNMAP_FROM_CPU: u32 = 2;

/// KFD_SMI_EVENT_MASK_FROM_INDEX: the bit of event `i` (1..=64) in the mask written to the
/// SMI file.
pub const fn smi_event_mask(i: kfd_smi_event) -> u64 {
    1u64 << (i - 1)
}

/// The names `amd-smi event` and our kmtinfo use, by event id.
pub const SMI_EVENT_NAMES: &[(kfd_smi_event, &str)] = &[
    (super::kfd::KFD_SMI_EVENT_VMFAULT, "VMFAULT"),
    (super::kfd::KFD_SMI_EVENT_THERMAL_THROTTLE, "THERMAL_THROTTLE"),
    (super::kfd::KFD_SMI_EVENT_GPU_PRE_RESET, "GPU_PRE_RESET"),
    (super::kfd::KFD_SMI_EVENT_GPU_POST_RESET, "GPU_POST_RESET"),
    (KFD_SMI_EVENT_MIGRATE_START, "MIGRATE_START"),
    (KFD_SMI_EVENT_MIGRATE_END, "MIGRATE_END"),
    (KFD_SMI_EVENT_PAGE_FAULT_START, "PAGE_FAULT_START"),
    (KFD_SMI_EVENT_PAGE_FAULT_END, "PAGE_FAULT_END"),
    (KFD_SMI_EVENT_QUEUE_EVICTION, "QUEUE_EVICTION"),
    (KFD_SMI_EVENT_QUEUE_RESTORE, "QUEUE_RESTORE"),
    (KFD_SMI_EVENT_UNMAP_FROM_GPU, "UNMAP_FROM_GPU"),
    (KFD_SMI_EVENT_PROCESS_START, "PROCESS_START"),
    (KFD_SMI_EVENT_PROCESS_END, "PROCESS_END"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_are_one_bit_below_the_index() {
        assert_eq!(smi_event_mask(super::super::kfd::KFD_SMI_EVENT_VMFAULT), 1);
        assert_eq!(smi_event_mask(KFD_SMI_EVENT_QUEUE_EVICTION), 0x100);
        assert_eq!(smi_event_mask(KFD_SMI_EVENT_ALL_PROCESS), 1 << 63);
        // Ids are 1..=13 and consecutive.
        for (i, (id, _)) in SMI_EVENT_NAMES.iter().enumerate() {
            assert_eq!(*id as usize, i + 1);
        }
    }
}
