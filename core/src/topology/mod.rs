//! Topology: a consistent snapshot of the KFD topology tree (system, nodes, memory banks,
//! caches, IO links) turned into the thunk's C property structs, as upstream libhsakmt does.
//!
//! Layout: `props` parses the text formats, `reader` does the port I/O, `node` fills
//! HsaNodeProperties, `banks` memory banks and KFD caches, `cpu` /proc/cpuinfo and the CPU
//! cache fallback, `links` IO links, `devices` the built-in device tables, and `build` walks
//! the tree between two generation_id reads.

mod banks;
mod build;
mod cpu;
mod devices;
mod links;
mod node;
pub mod props;
mod reader;

use crate::abi::hsakmt::{HsaCacheProperties, HsaIoLinkProperties, HsaMemoryProperties, HsaNodeProperties, HsaSystemProperties};
use crate::port::Kfd;
use crate::status::Status;
use alloc::vec::Vec;
use core::fmt;

pub use devices::{packed_version, vgpr_size_per_cu};
pub use props::{parse_gfx_override, GfxOverrideError};

/// How many times the walk is redone when generation_id changes under it. Upstream retries
/// forever; a tree that keeps changing this often is reported as an error instead.
pub const MAX_SNAPSHOT_ATTEMPTS: u32 = 16;

/// One HSA_OVERRIDE_GFX_VERSION value as the shim found it in the environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GfxOverride {
    /// A valid `major.minor.stepping`.
    Version(u32, u32, u32),
    /// Set but rejected by [`parse_gfx_override`]: upstream fails the snapshot with
    /// HSAKMT_STATUS_ERROR as soon as a GPU node would use it.
    Invalid,
}

/// Settings that come from the environment (read by the C shim, never by core).
#[derive(Clone, Debug, Default)]
pub struct TopologyConfig {
    /// `HSA_OVERRIDE_GFX_VERSION` parsed as (major, minor, stepping).
    pub override_gfx_version: Option<(u32, u32, u32)>,
    /// `HSA_OVERRIDE_GFX_VERSION` was set but is invalid (see [`GfxOverride::Invalid`]).
    pub override_gfx_version_invalid: bool,
    /// `HSA_OVERRIDE_GFX_VERSION_<n>` by user node id `n`; checked before the global one.
    pub node_gfx_overrides: Vec<(u32, GfxOverride)>,
    /// `HSA_USE_SVM=0`: clear Capability.SVMAPISupported on every node.
    pub disable_svm: bool,
}

impl TopologyConfig {
    /// Record the value of `HSA_OVERRIDE_GFX_VERSION` (`node == None`) or of
    /// `HSA_OVERRIDE_GFX_VERSION_<node>`, parsing it as upstream does. An invalid value is
    /// kept as such: it fails the snapshot only if a GPU node needs it, as upstream.
    pub fn set_gfx_override(&mut self, node: Option<u32>, value: &str) {
        let parsed = parse_gfx_override(value);
        match node {
            None => {
                self.override_gfx_version = parsed.ok();
                self.override_gfx_version_invalid = parsed.is_err();
            }
            Some(n) => {
                let o = match parsed {
                    Ok((a, b, c)) => GfxOverride::Version(a, b, c),
                    Err(_) => GfxOverride::Invalid,
                };
                self.node_gfx_overrides.retain(|(m, _)| *m != n);
                self.node_gfx_overrides.push((n, o));
            }
        }
    }
}

/// One node of the snapshot with everything the Get*Properties calls hand out.
#[derive(Clone)]
pub struct Node {
    /// KFD gpu_id (0 for a CPU-only node).
    pub gpu_id: u32,
    /// The node's number in sysfs (`nodes/<sysfs_id>`); differs from the user node id when
    /// an earlier node is hidden from this process.
    pub sysfs_id: u32,
    /// NumMemoryBanks, NumCaches and NumIOLinks equal the lengths of the vectors below.
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

impl Topology {
    /// Upstream's `hsakmt_is_dgpu`: some node has SIMDs but no CPU cores, i.e. a discrete GPU
    /// (an APU reported as one node has both).
    pub fn is_dgpu(&self) -> bool {
        self.nodes.iter().any(|n| n.props.NumCPUCores == 0 && n.props.NumFComputeCores != 0)
    }

    /// The user node id of the node with KFD gpu_id `gpu_id`.
    pub fn node_of_gpu_id(&self, gpu_id: u32) -> Option<u32> {
        self.nodes.iter().position(|n| n.gpu_id == gpu_id).map(|i| i as u32)
    }
}

/// Why a snapshot failed: the status the C API returns plus what to tell a person.
#[derive(Clone, Debug)]
pub struct TopologyError {
    pub status: Status,
    pub reason: &'static str,
    /// The topology-relative path involved, if any (truncated when longer). Sized so the
    /// whole error stays under 128 bytes, cheap to return by value.
    pub path: heapless::String<80>,
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
///
/// Reads `generation_id`, walks the tree, reads `generation_id` again and starts over when it
/// changed (at most [`MAX_SNAPSHOT_ATTEMPTS`] walks). Node ids in the result are indexes among
/// the nodes this process may use (CPU nodes, and GPUs whose render node opens).
pub fn snapshot(kfd: &dyn Kfd, cfg: &TopologyConfig) -> Result<Topology, TopologyError> {
    build::snapshot(kfd, cfg)
}
