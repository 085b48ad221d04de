//! Topology: a consistent snapshot of the KFD topology tree (system, nodes, memory banks,
//! caches, IO links) turned into the thunk's C property structs, as upstream libhsakmt does.

use crate::abi::hsakmt::{HsaCacheProperties, HsaIoLinkProperties, HsaMemoryProperties, HsaNodeProperties, HsaSystemProperties};
use crate::port::Kfd;
use crate::status::Status;
use alloc::vec::Vec;
use core::fmt;

/// Settings that come from the environment (read by the C shim, never by core).
#[derive(Clone, Debug, Default)]
pub struct TopologyConfig {
    /// `HSA_OVERRIDE_GFX_VERSION` parsed as (major, minor, stepping).
    pub override_gfx_version: Option<(u32, u32, u32)>,
}

/// One node of the snapshot with everything the Get*Properties calls hand out.
#[derive(Clone)]
pub struct Node {
    /// KFD gpu_id (0 for a CPU-only node).
    pub gpu_id: u32,
    pub props: HsaNodeProperties,
    pub mem_banks: Vec<HsaMemoryProperties>,
    pub caches: Vec<HsaCacheProperties>,
    /// io_links, then p2p_links, then derived indirect links (upstream's order).
    pub io_links: Vec<HsaIoLinkProperties>,
}

/// A consistent topology snapshot.
#[derive(Clone)]
pub struct Topology {
    pub generation_id: u32,
    pub system: HsaSystemProperties,
    pub nodes: Vec<Node>,
}

/// Why a snapshot failed: the status the C API returns plus what to tell a person.
#[derive(Clone, Debug)]
pub struct TopologyError {
    pub status: Status,
    pub reason: &'static str,
    /// The topology-relative path involved, if any (truncated when longer).
    pub path: heapless::String<96>,
}

impl TopologyError {
    pub fn new(status: Status, reason: &'static str, path: &str) -> Self {
        let mut p = heapless::String::new();
        for c in path.chars() {
            if p.push(c).is_err() {
                break;
            }
        }
        TopologyError { status, reason, path: p }
    }
}

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{} ({})", self.reason, self.status)
        } else {
            write!(f, "{}: {} ({})", self.path, self.reason, self.status)
        }
    }
}

/// Take a snapshot of the topology through `kfd`.
pub fn snapshot(_kfd: &dyn Kfd, _cfg: &TopologyConfig) -> Result<Topology, TopologyError> {
    Err(TopologyError::new(Status::NOT_SUPPORTED, "topology parser not built yet", ""))
}
