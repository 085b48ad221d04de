//! SMI events: hsaKmtOpenSMI (upstream events.c).
//!
//! The node is checked first (INVALID_NODE_UNIT), then AMDKFD_IOC_SMI_EVENTS opens the KFD's
//! event file for that GPU; any refusal is ERROR, as upstream (a CPU node, a KFD older than 1.3).
//! Ours: a NULL `fd` is INVALID_PARAMETER, found before anything is opened (upstream would
//! write through it after the ioctl). The descriptor belongs to the caller, who reads, writes,
//! polls and closes it directly (see the model's `smi.rs` for what the file does).

use crate::boundary::{guard, out};
use crate::global::with_ctx;
use hsakmt_core::abi::hsakmt::*;
use std::ffi::c_int;

/// # Safety
/// `fd` must be NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtOpenSMI(node_id: HSAuint32, fd: *mut c_int) -> HSAKMT_STATUS {
    guard("hsaKmtOpenSMI", || {
        with_ctx(|c| {
            c.smi_node_check(node_id)?;
            // SAFETY: the C caller's pointer contract.
            let out = unsafe { out(fd) }?;
            *out = c.open_smi(node_id)?;
            Ok(())
        })
    })
}
