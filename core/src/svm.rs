//! Shared virtual memory attributes and the XNACK mode (upstream svm.c): hsaKmtSVMSetAttr,
//! hsaKmtSVMGetAttr, hsaKmtSetXNACKMode, hsaKmtGetXNACKMode. A service ([`Svm`]) over the port,
//! the KFD version and the snapshot; `Context` and the queues (unified CWSR areas) use it.
//!
//! Upstream's rules: KFD 1.5 or later (else NOT_SUPPORTED); the start must be non-NULL and
//! page-aligned and the size non-zero and page-aligned (INVALID_PARAMETER). Attribute values
//! that name a location or a GPU are node ids for the caller and gpu_ids for the KFD:
//! - SET: PREFERRED_LOC with INVALID_NODEID (0xFFFFFFFF) means "undefined"; PREFERRED_LOC,
//!   PREFETCH_LOC, ACCESS, ACCESS_IN_PLACE and NO_ACCESS values must be node ids
//!   (INVALID_NODE_UNIT otherwise); the CPU node (gpu_id 0) is SYSMEM for the locations and
//!   INVALID_NODE_UNIT for the access types.
//! - GET: ACCESS* questions are converted the same way; answers of the location and access
//!   types go back as node ids (SYSMEM → 0, UNDEFINED → INVALID_NODEID; an unknown gpu_id is
//!   INVALID_NODE_UNIT). The KFD rewrites an ACCESS question's type to ACCESS,
//!   ACCESS_IN_PLACE or NO_ACCESS.
//! - Any KFD failure is ERROR. XNACK: EPERM is NOT_SUPPORTED, anything else ERROR.
//!
//! Ours: the caller's attributes are untouched by a failed GET (upstream copies the KFD's
//! answers in before converting them back); NULL attributes with `nattr > 0` and an `nattr`
//! whose size does not fit the ioctl's 14-bit size field (more than [`SVM_MAX_ATTRS`]; upstream
//! allocas `nattr` attributes on its stack and crashes, or issues a corrupted request number)
//! are INVALID_PARAMETER, found before the array is read or anything allocated; GetXNACKMode with NULL is INVALID_PARAMETER (a
//! crash upstream).

use crate::abi::hsakmt::*;
use crate::abi::kfd::*;
use crate::port::{ioctl_plain, Kfd};
use crate::status::{Errno, KmtResult, Status};
use crate::topology::Topology;
use alloc::vec::Vec;

/// The KFD minor version that brought SVM and SET_XNACK_MODE.
pub const SVM_MIN_MINOR: u32 = 5;
/// upstream's INVALID_NODEID.
pub const INVALID_NODEID: u32 = 0xFFFF_FFFF;
const PAGE_SIZE: u64 = 4096;
const HEADER: usize = core::mem::size_of::<kfd_ioctl_svm_args>();
const ATTR: usize = core::mem::size_of::<kfd_ioctl_svm_attribute>();
/// The largest argument an ioctl request can describe (`_IOC_SIZEMASK`), and where that
/// size sits in the request (`_IOC_SIZESHIFT`).
const IOC_SIZE_MAX: usize = (1 << 14) - 1;
const IOC_SIZE_SHIFT: u32 = 16;
/// The most attributes one SVM call can carry: header and attributes must fit the ioctl's
/// 14-bit size field, the only bound the KFD's single copy-in has (2044).
pub const SVM_MAX_ATTRS: usize = (IOC_SIZE_MAX - HEADER) / ATTR;

fn is_location(ty: u32) -> bool {
    ty == HSA_SVM_ATTR_PREFERRED_LOC || ty == HSA_SVM_ATTR_PREFETCH_LOC
}

fn is_access(ty: u32) -> bool {
    ty == HSA_SVM_ATTR_ACCESS || ty == HSA_SVM_ATTR_ACCESS_IN_PLACE || ty == HSA_SVM_ATTR_NO_ACCESS
}

/// hsakmt_validate_nodeid: the node's gpu_id (0 for a CPU node).
fn node_to_gpu(topo: Option<&Topology>, node: u32) -> KmtResult<u32> {
    topo.and_then(|t| t.nodes.get(node as usize)).map(|n| n.gpu_id).ok_or(Status::INVALID_NODE_UNIT)
}

/// hsakmt_gpuid_to_nodeid.
fn gpu_to_node(topo: Option<&Topology>, gpu_id: u32) -> KmtResult<u32> {
    topo.and_then(|t| t.nodes.iter().position(|n| n.gpu_id == gpu_id)).map(|i| i as u32).ok_or(Status::INVALID_NODE_UNIT)
}

/// The attribute list as the KFD gets it, with node ids turned into gpu_ids.
fn to_kfd(topo: Option<&Topology>, attrs: &[HSA_SVM_ATTRIBUTE], set: bool) -> KmtResult<Vec<kfd_ioctl_svm_attribute>> {
    let mut out = Vec::with_capacity(attrs.len());
    for a in attrs {
        let (ty, value) = (a.r#type, a.value);
        let converts = if set { is_location(ty) || is_access(ty) } else { is_access(ty) };
        let value = if !converts {
            value
        } else if set && ty == HSA_SVM_ATTR_PREFERRED_LOC && value == INVALID_NODEID {
            KFD_IOCTL_SVM_LOCATION_UNDEFINED
        } else {
            let gpu = node_to_gpu(topo, value)?;
            if gpu == 0 && is_access(ty) {
                return Err(Status::INVALID_NODE_UNIT); // the CPU cannot be given GPU access
            }
            gpu
        };
        out.push(kfd_ioctl_svm_attribute { r#type: ty, value });
    }
    Ok(out)
}

fn check_range(start: u64, size: u64) -> KmtResult<()> {
    if start == 0 || size == 0 || !start.is_multiple_of(PAGE_SIZE) || !size.is_multiple_of(PAGE_SIZE) {
        return Err(Status::INVALID_PARAMETER);
    }
    Ok(())
}

/// The SVM service: what an SVM or XNACK call needs, and nothing else — the port, the KFD's
/// minor version, and the snapshot (node ids ↔ gpu_ids; `None` before AcquireSystemProperties).
#[derive(Clone, Copy)]
pub struct Svm<'a> {
    pub kfd: &'a dyn Kfd,
    pub kfd_minor: u32,
    pub topology: Option<&'a Topology>,
}

impl Svm<'_> {
    fn svm_supported(&self) -> KmtResult<()> {
        if self.kfd_minor < SVM_MIN_MINOR {
            return Err(Status::NOT_SUPPORTED);
        }
        Ok(())
    }

    /// The checks of SVMSetAttr / SVMGetAttr that come before the attributes are read, in
    /// upstream's order (KFD version, range), then the count ([`SVM_MAX_ATTRS`]): a caller
    /// checks a C array's length with this before it looks at the array.
    pub fn precheck(&self, start: u64, size: u64, nattr: usize) -> KmtResult<()> {
        self.svm_supported()?;
        check_range(start, size)?;
        if nattr > SVM_MAX_ATTRS {
            return Err(Status::INVALID_PARAMETER);
        }
        Ok(())
    }

    /// One AMDKFD_IOC_SVM with the attributes after the header; the request's size field says
    /// how many (the KFD copies header and attributes in one go).
    ///
    /// # Safety
    /// For SET_ATTR, as [`Svm::set_attr`]; GET_ATTR only reads attributes.
    unsafe fn ioctl(&self, op: u32, start: u64, size: u64, attrs: &mut [kfd_ioctl_svm_attribute]) -> KmtResult<()> {
        let bytes = HEADER + attrs.len() * ATTR;
        let mut buf = alloc::vec![0u8; bytes];
        let header = kfd_ioctl_svm_args { start_addr: start, size, op, nattr: attrs.len() as u32, attrs: [] };
        buf[..HEADER].copy_from_slice(zerocopy::IntoBytes::as_bytes(&header));
        for (chunk, a) in buf[HEADER..].chunks_exact_mut(ATTR).zip(attrs.iter()) {
            chunk.copy_from_slice(zerocopy::IntoBytes::as_bytes(a));
        }
        let request = AMDKFD_IOC_SVM + (((attrs.len() * ATTR) as u32) << IOC_SIZE_SHIFT);
        // SAFETY: `buf` is the header and `attrs.len()` attributes, the size `request` states
        // (the KFD reads and writes only that); a SET_ATTR range is the caller's to share with
        // the GPUs (this function's contract).
        unsafe { self.kfd.ioctl(request, &mut buf) }.map_err(|_| Status::ERROR)?;
        for (chunk, a) in buf[HEADER..].chunks_exact(ATTR).zip(attrs.iter_mut()) {
            a.r#type = u32::from_ne_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
            a.value = u32::from_ne_bytes([chunk[4], chunk[5], chunk[6], chunk[7]]);
        }
        Ok(())
    }

    /// hsaKmtSVMSetAttr.
    ///
    /// # Safety
    /// Access attributes let GPUs read and write `[start, start + size)` (see
    /// [`crate::Kfd::ioctl`]): the range must be memory the caller lets them share for as long
    /// as the range keeps that access; no Rust reference to plain data may point into it.
    pub unsafe fn set_attr(&self, start: u64, size: u64, attrs: &[HSA_SVM_ATTRIBUTE]) -> KmtResult<()> {
        self.precheck(start, size, attrs.len())?;
        let mut k = to_kfd(self.topology, attrs, true)?;
        // SAFETY: this function's contract, passed on.
        unsafe { self.ioctl(KFD_IOCTL_SVM_OP_SET_ATTR, start, size, &mut k) }
    }

    /// hsaKmtSVMGetAttr: `attrs` holds the questions and gets the answers (only on success).
    pub fn get_attr(&self, start: u64, size: u64, attrs: &mut [HSA_SVM_ATTRIBUTE]) -> KmtResult<()> {
        self.precheck(start, size, attrs.len())?;
        let topo = self.topology;
        let mut k = to_kfd(topo, attrs, false)?;
        // SAFETY: GET_ATTR only reads the range's attributes; nothing is handed to a GPU.
        unsafe { self.ioctl(KFD_IOCTL_SVM_OP_GET_ATTR, start, size, &mut k) }?;
        let mut answers = Vec::with_capacity(k.len());
        for a in &k {
            let value = if is_location(a.r#type) || is_access(a.r#type) {
                match a.value {
                    KFD_IOCTL_SVM_LOCATION_SYSMEM => 0,
                    KFD_IOCTL_SVM_LOCATION_UNDEFINED => INVALID_NODEID,
                    gpu => gpu_to_node(topo, gpu)?,
                }
            } else {
                a.value
            };
            answers.push(HSA_SVM_ATTRIBUTE { r#type: a.r#type, value });
        }
        attrs.copy_from_slice(&answers);
        Ok(())
    }

    fn xnack_ioctl(&self, value: i32) -> KmtResult<i32> {
        self.svm_supported()?;
        let mut a = kfd_ioctl_set_xnack_mode_args { xnack_enabled: value };
        match ioctl_plain(self.kfd, &mut a) {
            Ok(()) => Ok(a.xnack_enabled),
            // The KFD refuses XNACK on when a GPU of the process cannot retry page faults.
            Err(Errno(Errno::EPERM)) => Err(Status::NOT_SUPPORTED),
            // EBUSY (queues exist) and everything else.
            Err(_) => Err(Status::ERROR),
        }
    }

    /// hsaKmtSetXNACKMode: 0 off, anything else on (a negative value only queries).
    pub fn set_xnack_mode(&self, enable: i32) -> KmtResult<()> {
        self.xnack_ioctl(enable).map(|_| ())
    }

    /// hsaKmtGetXNACKMode: 1 on, 0 off.
    pub fn xnack_mode(&self) -> KmtResult<i32> {
        self.xnack_ioctl(-1)
    }
}
