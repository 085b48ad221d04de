//! `kmtinfo --events NAMES`: watch SMI events live, as `amd-smi event` does. For each GPU node
//! hsaKmtOpenSMI opens the KFD's event file, the mask of the named events is written to it, and
//! every record is printed as it arrives (`node N (gpu_id 0x…): NAME message`), until Ctrl-C,
//! `--count N` records or `--timeout SECONDS`. `--fault` makes kmtinfo itself cause a GPU page
//! fault on the first GPU (an SDMA FENCE to an address nothing maps) once the files are open,
//! to see the path work (a VMFAULT record naming kmtinfo).
//!
//! What reaches a client is the KFD's rule: events of this process, events without a process
//! (VMFAULT, GPU resets, process start/end) of any, and with CAP_SYS_ADMIN every process's.
//! On the software model only this process's own model emits (model/src/smi.rs).

use crate::smoke::{check, zeroed, Buffer, Queue};
use hsakmt::*;
use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::abi::smi::{smi_event_mask, SMI_EVENT_NAMES};
use rustix::fd::{FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

pub struct Options {
    pub names: String,
    pub count: Option<u64>,
    pub timeout: Option<Duration>,
    pub fault: bool,
}

/// The mask of a comma-separated list of event names (`all` for every event), case-insensitive.
pub fn mask_of(names: &str) -> Result<u64, String> {
    let mut mask = 0;
    for n in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if n.eq_ignore_ascii_case("all") {
            mask |= SMI_EVENT_NAMES.iter().fold(0, |m, (id, _)| m | smi_event_mask(*id));
            continue;
        }
        let (id, _) = SMI_EVENT_NAMES.iter().find(|(_, name)| name.eq_ignore_ascii_case(n)).ok_or_else(|| {
            let known: Vec<&str> = SMI_EVENT_NAMES.iter().map(|(_, s)| *s).collect();
            format!("unknown SMI event {n} (known: all, {})", known.join(", "))
        })?;
        mask |= smi_event_mask(*id);
    }
    if mask == 0 {
        return Err("--events needs at least one event name".into());
    }
    Ok(mask)
}

fn name_of(id: u32) -> &'static str {
    SMI_EVENT_NAMES.iter().find(|(i, _)| *i == id).map_or("UNKNOWN", |(_, n)| n)
}

pub fn run(o: &Options) -> Result<(), String> {
    let mask = mask_of(&o.names)?;
    check("hsaKmtOpenKFD", hsaKmtOpenKFD())?;
    let r = run_open(o, mask);
    hsaKmtReleaseSystemProperties();
    hsaKmtCloseKFD();
    r
}

fn run_open(o: &Options, mask: u64) -> Result<(), String> {
    let mut sys: HsaSystemProperties = zeroed();
    // SAFETY: a valid out-pointer.
    check("hsaKmtAcquireSystemProperties", unsafe { hsaKmtAcquireSystemProperties(&mut sys) })?;
    let mut files: Vec<(u32, u32, OwnedFd)> = Vec::new();
    for n in 0..sys.NumNodes {
        let mut p: HsaNodeProperties = zeroed();
        // SAFETY: a valid out-pointer.
        check("hsaKmtGetNodeProperties", unsafe { hsaKmtGetNodeProperties(n, &mut p) })?;
        if p.KFDGpuID == 0 {
            continue;
        }
        let mut fd = -1;
        // SAFETY: a valid out-pointer.
        check("hsaKmtOpenSMI", unsafe { hsaKmtOpenSMI(n, &mut fd) })?;
        // SAFETY: hsaKmtOpenSMI gives the new descriptor to its caller.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        rustix::io::write(&fd, &mask.to_ne_bytes()).map_err(|e| format!("writing the SMI mask: {e}"))?;
        files.push((n, p.KFDGpuID, fd));
    }
    if files.is_empty() {
        return Err("no GPU node".into());
    }
    crate::outln!("watching {} GPU(s) for SMI events (mask 0x{mask:x}); Ctrl-C stops", files.len());
    let _fault = if o.fault { Some(cause_fault(files[0].0)?) } else { None };
    let start = Instant::now();
    let mut seen = 0u64;
    let mut pending: Vec<Vec<u8>> = files.iter().map(|_| Vec::new()).collect();
    let mut buf = vec![0u8; 8192];
    loop {
        if o.count.is_some_and(|c| seen >= c) {
            return Ok(());
        }
        let wait = match o.timeout {
            Some(t) => match t.checked_sub(start.elapsed()) {
                Some(left) => Some(left),
                None => {
                    crate::outln!("timeout: {seen} event(s)");
                    return Ok(());
                }
            },
            None => None,
        };
        let mut polls: Vec<_> = files.iter().map(|(_, _, fd)| rustix::event::PollFd::new(fd, rustix::event::PollFlags::IN)).collect();
        let ts = wait.map(|d| rustix::time::Timespec { tv_sec: d.as_secs() as i64, tv_nsec: i64::from(d.subsec_nanos()) });
        match rustix::event::poll(&mut polls, ts.as_ref()) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(format!("poll: {e}")),
        }
        let ready: Vec<bool> = polls.iter().map(|p| !p.revents().is_empty()).collect();
        drop(polls);
        for (i, (node, gpu_id, fd)) in files.iter().enumerate() {
            if !ready[i] {
                continue;
            }
            loop {
                match rustix::io::read(fd, &mut buf) {
                    Ok(0) => return Err(format!("node {node}: the SMI file was closed")),
                    Ok(k) => pending[i].extend_from_slice(&buf[..k]),
                    Err(rustix::io::Errno::AGAIN) => break,
                    Err(rustix::io::Errno::INTR) => continue,
                    Err(e) => return Err(format!("node {node}: reading SMI events: {e}")),
                }
            }
            while let Some(end) = pending[i].iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = pending[i].drain(..=end).collect();
                let line = String::from_utf8_lossy(&line[..end]).into_owned();
                let (id, msg) = line.split_once(' ').unwrap_or((&line, ""));
                let name = u32::from_str_radix(id, 16).map_or("UNKNOWN", name_of);
                crate::outln!("node {node} (gpu_id 0x{gpu_id:x}): {name} {msg}");
                seen += 1;
                if o.count.is_some_and(|c| seen >= c) {
                    return Ok(());
                }
            }
        }
    }
}

/// An SDMA queue on `node` whose FENCE writes to an address nothing maps: the GPU faults.
/// Returned so that the queue and its ring live until kmtinfo is done.
fn cause_fault(node: u32) -> Result<(Queue, Buffer), String> {
    let ring = Buffer::new(node, 4096)?;
    let q = Queue::new(node, HSA_QUEUE_SDMA, &ring, zeroed())?;
    let bad: u64 = 0x7ff0_0000_0000;
    let fence = [5u32, bad as u32, (bad >> 32) as u32, 0xBAD];
    // SAFETY: the ring is this process's GPU-visible buffer of 4096 bytes; 16 bytes are written
    // before the doorbell tells the engine about them.
    unsafe {
        std::ptr::copy_nonoverlapping(fence.as_ptr().cast::<u8>(), ring.ptr, 16);
        std::ptr::write_volatile(q.wptr(), 16);
        std::ptr::write_volatile(q.doorbell(), 16);
    }
    Ok((q, ring))
}
