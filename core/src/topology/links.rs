//! IO links: parsing `io_links/L` and `p2p_links/L` properties with upstream's node checks,
//! and the indirect GPU links upstream derives for kernels that predate p2p_links.

use super::props::Props;
use super::Node;
use crate::abi::hsakmt::{
    HsaIoLinkProperties, HSA_HEAPTYPE_FRAME_BUFFER_PUBLIC, HSA_IOLINKTYPE, HSA_IOLINKTYPE_PCIEXPRESS, HSA_IOLINK_TYPE_QPI_1_1,
    HSA_IOLINK_TYPE_XGMI,
};
use crate::status::Status;
use zerocopy::FromZeros;

/// What became of one link file.
pub(crate) enum LinkOutcome {
    Keep(HsaIoLinkProperties),
    /// `node_to` is a node this process cannot use (hidden by cgroups, no render node, or not
    /// a node at all): upstream drops the link.
    Skip,
}

/// Parse one link file of sysfs node `sysfs_from` (user id `user_from`). `to_user` maps a
/// sysfs node id to its user id, `None` for unsupported or nonexistent nodes. Keys are
/// handled in file order, as upstream does, so the first bad `node_from`/`node_to` decides.
pub(crate) fn parse_link(
    text: &[u8],
    sysfs_from: u32,
    user_from: u32,
    to_user: impl Fn(u64) -> Option<u32>,
) -> Result<LinkOutcome, (Status, &'static str)> {
    let mut l = HsaIoLinkProperties::new_zeroed();
    let mut seen = 0u8;
    let mut pairs = 0usize;
    for (key, v) in Props::new(text) {
        pairs += 1;
        let v32 = v as u32;
        match key {
            b"type" => {
                l.IoLinkType = v32;
                seen |= 1;
            }
            b"version_major" => l.VersionMajor = v32,
            b"version_minor" => l.VersionMinor = v32,
            b"node_from" => {
                // A link filed under the wrong node means the tree is inconsistent.
                if v != u64::from(sysfs_from) {
                    return Err((Status::INVALID_NODE_UNIT, "link node_from is not its own node"));
                }
                l.NodeFrom = user_from;
                seen |= 2;
            }
            b"node_to" => match to_user(v) {
                Some(u) => {
                    l.NodeTo = u;
                    seen |= 4;
                }
                None => return Ok(LinkOutcome::Skip),
            },
            b"weight" => l.Weight = v32,
            b"min_latency" => l.MinimumLatency = v32,
            b"max_latency" => l.MaximumLatency = v32,
            b"min_bandwidth" => l.MinimumBandwidth = v32,
            b"max_bandwidth" => l.MaximumBandwidth = v32,
            b"recommended_transfer_size" => l.RecTransferSize = v32,
            b"recommended_sdma_engine_id_mask" => l.RecSdmaEngIdMask = v32,
            b"flags" => l.Flags.Value = v32,
            _ => {}
        }
    }
    if pairs == 0 {
        return Err((Status::ERROR, "no properties (empty or garbled file)"));
    }
    // type, node_from and node_to are printed by every kernel; a link without its ends is
    // meaningless.
    if seen != 7 {
        return Err((Status::ERROR, "mandatory link property missing (truncated or garbled file)"));
    }
    Ok(LinkOutcome::Keep(l))
}

/// The CPU a GPU hangs off directly: its first PCIe or XGMI link of weight <= 20 that ends
/// at a CPU node (heavier links already cross a CPU).
fn direct_cpu(nodes: &[Node], gpu: usize) -> Option<usize> {
    let n = nodes.get(gpu)?;
    if n.gpu_id == 0 {
        return None;
    }
    n.io_links.iter().find_map(|l| {
        let ty = l.IoLinkType;
        let to = l.NodeTo as usize;
        let to_cpu = nodes.get(to).is_some_and(|t| t.gpu_id == 0);
        ((ty == HSA_IOLINKTYPE_PCIEXPRESS || ty == HSA_IOLINK_TYPE_XGMI) && l.Weight <= 20 && to_cpu).then_some(to)
    })
}

/// The first link from `a` to `b`: its weight and type.
fn direct_link(nodes: &[Node], a: usize, b: usize) -> Option<(u32, HSA_IOLINKTYPE)> {
    nodes.get(a)?.io_links.iter().find(|l| l.NodeTo as usize == b).map(|l| (l.Weight, l.IoLinkType))
}

/// Upstream's `get_indirect_iolink_info`: weight and type of the path n1 → n2 through the
/// CPUs the GPUs hang off, or `None` when there is none worth adding.
fn indirect_info(nodes: &[Node], n1: usize, n2: usize) -> Option<(u32, HSA_IOLINKTYPE)> {
    if n1 == n2 {
        return None;
    }
    let (a, b) = (nodes.get(n1)?, nodes.get(n2)?);
    if a.gpu_id == 0 && b.gpu_id == 0 {
        return None;
    }
    // Peers in one XGMI hive reach each other directly.
    let (ha, hb) = (a.props.HiveID, b.props.HiveID);
    if ha != 0 && hb != 0 && ha == hb {
        return None;
    }
    let cpu1 = direct_cpu(nodes, n1);
    let cpu2 = direct_cpu(nodes, n2);
    if cpu1.is_none() && cpu2.is_none() {
        return None;
    }
    // The host reaches a destination GPU's memory only through a large (public) BAR.
    if b.gpu_id != 0 && !b.mem_banks.iter().any(|m| m.HeapType == HSA_HEAPTYPE_FRAME_BUFFER_PUBLIC) {
        return None;
    }
    match (cpu1, cpu2) {
        (Some(c1), Some(c2)) if c1 == c2 => {
            // GPU -> CPU -> GPU
            let (w1, _) = direct_link(nodes, n1, c1)?;
            let (w2, ty) = direct_link(nodes, c1, n2)?;
            Some((w1.wrapping_add(w2), ty))
        }
        (Some(c1), Some(c2)) => {
            // GPU -> CPU -> CPU -> GPU. Over QPI, a CPU-CPU weight above 20 means two sockets,
            // across which GPUs cannot reach each other.
            let (w1, _) = direct_link(nodes, n1, c1)?;
            let (w2, ty) = direct_link(nodes, c1, c2)?;
            if ty == HSA_IOLINK_TYPE_QPI_1_1 && w2 > 20 {
                return None;
            }
            let (w3, _) = direct_link(nodes, c2, n2)?;
            Some((w1.wrapping_add(w2).wrapping_add(w3), ty))
        }
        (Some(c1), None) => {
            // GPU -> CPU -> CPU (or to a GPU without a direct CPU, which then fails)
            let (w1, _) = direct_link(nodes, n1, c1)?;
            let (w2, ty) = direct_link(nodes, c1, n2)?;
            Some((w1.wrapping_add(w2), ty))
        }
        (None, Some(c2)) => {
            // CPU -> CPU -> GPU
            let (w2, ty) = direct_link(nodes, n1, c2)?;
            let (w3, _) = direct_link(nodes, c2, n2)?;
            Some((w2.wrapping_add(w3), ty))
        }
        (None, None) => None,
    }
}

/// Add the link `from -> to` if the node has a free slot (upstream allocates NumNodes-1).
fn add_link(nodes: &mut [Node], from: usize, to: usize, ty: HSA_IOLINKTYPE, weight: u32) {
    let cap = nodes.len().saturating_sub(1);
    if let Some(n) = nodes.get_mut(from) {
        if n.io_links.len() >= cap {
            return;
        }
        let mut l = HsaIoLinkProperties::new_zeroed();
        l.IoLinkType = ty;
        l.NodeFrom = from as u32;
        l.NodeTo = to as u32;
        l.Weight = weight;
        n.io_links.push(l);
        n.props.NumIOLinks = n.io_links.len() as u32;
    }
}

/// Upstream's `topology_create_indirect_gpu_links`, run only when no node has p2p_links:
/// for each pair i < j, add i -> j and then j -> i when a path through CPUs exists. The
/// weight is the sum of the hops and the type that of the CPU-side hop; lookups see links
/// added earlier in this pass.
pub(crate) fn add_indirect_links(nodes: &mut [Node]) {
    let n = nodes.len();
    for i in 0..n.saturating_sub(1) {
        for j in i + 1..n {
            if let Some((w, ty)) = indirect_info(nodes, i, j) {
                if w != 0 {
                    add_link(nodes, i, j, ty, w);
                }
            }
            if let Some((w, ty)) = indirect_info(nodes, j, i) {
                if w != 0 {
                    add_link(nodes, j, i, ty, w);
                }
            }
        }
    }
}
