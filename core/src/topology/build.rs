//! The snapshot walk: generation_id bracketing with bounded retry, system properties, node
//! enumeration and support checks, then each node's banks, caches and links.

use super::banks::{parse_cache, parse_mem_bank};
use super::cpu::{cpu_node_caches, CpuInfo};
use super::links::{add_indirect_links, parse_link, LinkOutcome};
use super::node::{finish_node, parse_node, set_amd_name, set_wide_name, RawNode};
use super::props::{parse_single_u32, Props};
use super::reader::{ReadError, Reader};
use super::{Node, Topology, TopologyConfig, TopologyError, MAX_SNAPSHOT_ATTEMPTS};
use crate::abi::hsakmt::HsaSystemProperties;
use crate::port::{Backend, SysTree};
use crate::status::{Errno, Status};
use alloc::vec::Vec;
use zerocopy::FromZeros;

/// Render minors the DRM core hands out for render nodes (`/dev/dri/renderD128..255`).
const RENDER_MINORS: core::ops::RangeInclusive<u64> = 128..=255;

pub(crate) fn snapshot(kfd: &dyn crate::port::Kfd, cfg: &TopologyConfig) -> Result<Topology, TopologyError> {
    let mut r = Reader::new(kfd);
    // Upstream parses /proc/cpuinfo once, outside the retry loop.
    let cpuinfo = CpuInfo::read(&r);
    for _ in 0..MAX_SNAPSHOT_ATTEMPTS {
        let gen_start = read_generation(&mut r)?;
        let (system, nodes) = walk(&mut r, cfg, &cpuinfo)?;
        let gen_end = read_generation(&mut r)?;
        // The kernel bumps generation_id whenever the topology changes (hotplug, partition
        // switch); a walk that straddles a change may mix two trees, so it is redone.
        if gen_start == gen_end {
            return Ok(Topology { generation_id: gen_end, system, nodes });
        }
    }
    Err(TopologyError::new(Status::ERROR, "topology kept changing (generation_id)", "generation_id"))
}

fn read_generation(r: &mut Reader<'_>) -> Result<u32, TopologyError> {
    let file = match r.read_at(SysTree::Topology, format_args!("generation_id")) {
        Ok(f) => f,
        Err(e) => return Err(e.into_error(r)),
    };
    match parse_single_u32(file.data) {
        Some(g) => Ok(g),
        None => Err(file.error(Status::ERROR, "generation_id is not a number")),
    }
}

fn read_system(r: &mut Reader<'_>) -> Result<HsaSystemProperties, TopologyError> {
    let mut s = HsaSystemProperties::new_zeroed();
    let res = r.read_at(SysTree::Topology, format_args!("system_properties"));
    let file = match res {
        Ok(f) => f,
        Err(e) => return Err(e.into_error(r)),
    };
    let mut pairs = 0usize;
    for (key, v) in Props::new(file.data) {
        pairs += 1;
        match key {
            b"platform_oem" => s.PlatformOem = v as u32,
            b"platform_id" => s.PlatformId = v as u32,
            b"platform_rev" => s.PlatformRev = v as u32,
            _ => {}
        }
    }
    if pairs == 0 {
        return Err(file.error(Status::ERROR, "no properties (empty or garbled file)"));
    }
    Ok(s)
}

/// A sysfs node that passed the support check.
struct Supported {
    sysfs_id: u32,
    gpu_id: u32,
    raw: RawNode,
}

/// Upstream's `topology_sysfs_check_node_supported` for sysfs node `id`: `Ok(None)` for a
/// node this process may not use (skipped silently), `Ok(Some)` with its parsed properties
/// otherwise.
fn check_node(r: &mut Reader<'_>, id: u32) -> Result<Option<Supported>, TopologyError> {
    let gpu_id = match r.read_at(SysTree::Topology, format_args!("nodes/{id}/gpu_id")) {
        Ok(file) => match parse_single_u32(file.data) {
            Some(g) => g,
            None => return Err(file.error(Status::ERROR, "gpu_id is not a number")),
        },
        // A GPU hidden from this process by the device cgroup cannot be read: not ours.
        Err(ReadError::Errno(Errno(Errno::EPERM))) => return Ok(None),
        Err(e) => return Err(e.into_error(r)),
    };
    let raw = {
        let file = match r.read_at(SysTree::Topology, format_args!("nodes/{id}/properties")) {
            Ok(f) => f,
            Err(e) => return Err(e.into_error(r)),
        };
        match parse_node(file.data) {
            Ok(raw) => raw,
            Err(reason) => return Err(file.error(Status::ERROR, reason)),
        }
    };
    // gpu_id 0 is a CPU-only node: always usable.
    if gpu_id == 0 {
        return Ok(Some(Supported { sysfs_id: id, gpu_id, raw }));
    }
    // A GPU must name its render node, and this process must be able to open it (access to
    // /dev/dri/renderD<minor> is what grants use of the GPU).
    let minor = raw.drm_minor;
    if minor == 0 {
        return Err(r.error(Status::ERROR, "GPU node without drm_render_minor"));
    }
    if !RENDER_MINORS.contains(&minor) {
        return Err(r.error(Status::ERROR, "drm_render_minor outside 128..255"));
    }
    match r.kfd.open_render_node(minor as u32) {
        Ok(fd) => {
            r.kfd.close_render_node(fd);
            Ok(Some(Supported { sysfs_id: id, gpu_id, raw }))
        }
        Err(Errno(Errno::ENOENT)) | Err(Errno(Errno::EPERM)) => Ok(None),
        Err(_) => Err(r.error(Status::ERROR, "cannot open render node")),
    }
}

/// One pass over the tree (between the two generation_id reads).
fn walk(r: &mut Reader<'_>, cfg: &TopologyConfig, cpuinfo: &CpuInfo) -> Result<(HsaSystemProperties, Vec<Node>), TopologyError> {
    let mut system = read_system(r)?;
    r.set_path(format_args!("nodes"))?;
    let count = match r.kfd.count_numbered_entries(SysTree::Topology, "nodes") {
        Ok(n) => n,
        Err(Errno(Errno::ENOENT)) => return Err(r.error(Status::ERROR, "no nodes directory")),
        Err(_) => return Err(r.error(Status::ERROR, "cannot list nodes")),
    };

    // Probe sysfs nodes 0..count by number; user node ids are indexes among supported ones.
    let mut supported: Vec<Supported> = Vec::new();
    for id in 0..count {
        if let Some(s) = check_node(r, id)? {
            supported.push(s);
        }
    }
    let num_nodes = supported.len();
    let to_user = |sysfs: u64| supported.iter().position(|s| u64::from(s.sysfs_id) == sysfs).map(|u| u as u32);

    let model = r.kfd.backend() != Backend::Kernel;
    let mut nodes: Vec<Node> = Vec::with_capacity(num_nodes);
    let mut any_p2p = false;
    for (user, s) in supported.iter().enumerate() {
        let user = user as u32;
        let sysfs = s.sysfs_id;
        any_p2p |= s.raw.p2p_links.is_some();

        let model_name = if model { read_model_name(r, sysfs) } else { None };
        let mut props = match finish_node(&s.raw, user, cfg, model_name.as_deref()) {
            Ok(p) => p,
            Err(reason) => {
                return Err(TopologyError::new(Status::ERROR, reason, "HSA_OVERRIDE_GFX_VERSION"));
            }
        };
        props.KFDGpuID = s.gpu_id;
        if props.NumCPUCores != 0 {
            if let Some(name) = cpuinfo.model_name_for_apic(props.CComputeIdLo) {
                // On a node with CPU cores the CPU's name wins, even over a GPU's.
                if props.DeviceId == 0 {
                    set_amd_name(&mut props.AMDName, name);
                }
                set_wide_name(&mut props.MarketingName, name);
            }
        }

        let mem_banks = read_numbered(r, sysfs, "mem_banks", s.raw.props.NumMemoryBanks, parse_mem_bank)?;
        props.NumMemoryBanks = mem_banks.len() as u32;

        let caches = if s.raw.props.NumCaches != 0 {
            read_numbered(r, sysfs, "caches", s.raw.props.NumCaches, parse_cache)?
        } else if s.gpu_id == 0 {
            cpu_node_caches(r, cpuinfo, user)
        } else {
            Vec::new()
        };
        props.NumCaches = caches.len() as u32;

        // Every link of a node, direct or derived, fits in NumNodes-1 slots (one per peer).
        let cap = num_nodes.saturating_sub(1);
        let mut io_links = Vec::new();
        read_links(r, sysfs, user, "io_links", s.raw.io_links, cap, &to_user, &mut io_links)?;
        read_links(r, sysfs, user, "p2p_links", s.raw.p2p_links.unwrap_or(0), cap, &to_user, &mut io_links)?;
        props.NumIOLinks = io_links.len() as u32;

        nodes.push(Node { gpu_id: s.gpu_id, sysfs_id: sysfs, props, mem_banks, caches, io_links });
    }

    // Kernels with p2p_links print the key on every node and add the indirect links
    // themselves; only older kernels need the thunk to derive them.
    if !any_p2p {
        add_indirect_links(&mut nodes);
    }
    system.NumNodes = num_nodes as u32;
    Ok((system, nodes))
}

/// Read `nodes/<sysfs>/<dir>/0..count/properties` with `parse`. A missing `<dir>` means no
/// entries (captures and trimmed trees drop empty directories); a missing or malformed file
/// inside an existing one fails the snapshot, as upstream does.
fn read_numbered<T>(
    r: &mut Reader<'_>,
    sysfs: u32,
    dir: &str,
    count: u32,
    parse: fn(&[u8]) -> Result<T, &'static str>,
) -> Result<Vec<T>, TopologyError> {
    // Sized up front (each cache record is 1 KiB: growing by doubling copied them again and
    // again); a count a broken tree inflates only gets what the files really hold.
    let mut out = Vec::with_capacity(count.min(1024) as usize);
    if count == 0 || !r.dir_exists(SysTree::Topology, format_args!("nodes/{sysfs}/{dir}"))? {
        return Ok(out);
    }
    for i in 0..count {
        let file = match r.read_at(SysTree::Topology, format_args!("nodes/{sysfs}/{dir}/{i}/properties")) {
            Ok(f) => f,
            Err(e) => return Err(e.into_error(r)),
        };
        match parse(file.data) {
            Ok(v) => out.push(v),
            Err(reason) => return Err(file.error(Status::ERROR, reason)),
        }
    }
    Ok(out)
}

/// Append the links of `nodes/<sysfs>/<dir>/0..count` to `out` until it holds `cap` links,
/// dropping links to nodes this process cannot use.
#[allow(clippy::too_many_arguments)]
fn read_links(
    r: &mut Reader<'_>,
    sysfs: u32,
    user: u32,
    dir: &str,
    count: u32,
    cap: usize,
    to_user: &dyn Fn(u64) -> Option<u32>,
    out: &mut Vec<crate::abi::hsakmt::HsaIoLinkProperties>,
) -> Result<(), TopologyError> {
    if count == 0 || !r.dir_exists(SysTree::Topology, format_args!("nodes/{sysfs}/{dir}"))? {
        return Ok(());
    }
    let mut i = 0;
    while i < count && out.len() < cap {
        let res = r.read_at(SysTree::Topology, format_args!("nodes/{sysfs}/{dir}/{i}/properties"));
        i += 1;
        let file = match res {
            Ok(f) => f,
            // A link to a GPU hidden by the device cgroup cannot be read: skip it.
            Err(ReadError::Errno(Errno(Errno::EPERM))) => continue,
            Err(e) => return Err(e.into_error(r)),
        };
        match parse_link(file.data, sysfs, user, to_user) {
            Ok(LinkOutcome::Keep(l)) => out.push(l),
            Ok(LinkOutcome::Skip) => {}
            Err((status, reason)) => return Err(file.error(status, reason)),
        }
    }
    Ok(())
}

/// A marketing name the software model supplies in `nodes/N/marketing_name` (first line).
/// The kernel writes no such file; upstream asks libdrm, which a model does not have.
fn read_model_name(r: &mut Reader<'_>, sysfs: u32) -> Option<heapless::Vec<u8, 63>> {
    let file = r.read_at(SysTree::Topology, format_args!("nodes/{sysfs}/marketing_name")).ok()?;
    let text = super::props::c_str(file.data);
    let end = text.iter().position(|&b| b == b'\n' || b == b'\r').unwrap_or(text.len());
    let mut name = heapless::Vec::new();
    for &b in text.iter().take(end.min(63)) {
        let _ = name.push(b);
    }
    (!name.is_empty()).then_some(name)
}
