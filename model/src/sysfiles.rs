//! The files the model serves through the port: the KFD topology tree (`SysTree::Topology`)
//! and the CPUs' `/proc/cpuinfo` and `/sys/devices/system/cpu` — a catalogue system's own, or
//! the host's passed through (upstream's model mode reads CPU data from the host). A leaf:
//! the model's port and a file-only user (a model plugin's loader) share it.

use crate::catalogue;
use crate::model::{ModelConfig, ModelError, TopologySource};
use crate::vfs::{Tree, VfsError};
use hsakmt_core::{Errno, SysTree};
use std::path::Path;

/// The files of one system, without a model behind them.
pub struct SysFiles {
    topology: Tree,
    cpus: Option<Tree>,
}

impl SysFiles {
    /// The files the environment's model would serve (`HSAKMT_MODEL`, `HSA_MODEL_TOPOLOGY`).
    pub fn from_env() -> Result<SysFiles, ModelError> {
        match ModelConfig::from_env()?.topology {
            TopologySource::Catalogue(name) => Ok(SysFiles {
                topology: catalogue::build(&name).ok_or_else(|| ModelError::UnknownCatalogue(name.clone()))?,
                cpus: catalogue::host_cpus(&name),
            }),
            TopologySource::Directory(dir) => {
                let topology = Tree::load_dir(&dir).map_err(|e| ModelError::Topology {
                    source: format!("HSA_MODEL_TOPOLOGY={}", dir.display()),
                    reason: format!("cannot be read: {e}"),
                })?;
                Ok(SysFiles { topology, cpus: None })
            }
            TopologySource::Tree(topology) => Ok(SysFiles { topology, cpus: None }),
        }
    }

    pub fn read_file(&self, tree: SysTree, path: &str, buf: &mut [u8]) -> Result<usize, Errno> {
        read(&self.topology, self.cpus.as_ref(), tree, path, buf)
    }

    pub fn count_numbered_entries(&self, tree: SysTree, dir: &str) -> Result<u32, Errno> {
        count_numbered(&self.topology, self.cpus.as_ref(), tree, dir)
    }
}

/// Read a file of `tree` into `buf` (ERANGE when it does not fit).
pub(crate) fn read(topology: &Tree, cpus: Option<&Tree>, tree: SysTree, path: &str, buf: &mut [u8]) -> Result<usize, Errno> {
    match (tree, cpus) {
        (SysTree::Topology, _) => copy_out(topology.read(path).map_err(vfs_errno)?, buf),
        (_, Some(cpus)) => copy_out(cpus.read(cpu_tree_path(tree, path, &mut [0; 256])?).map_err(vfs_errno)?, buf),
        (_, None) => copy_out(&std::fs::read(host_path(tree, path)?).map_err(io_errno)?, buf),
    }
}

/// How many numbered entries (`0`, `1`, …) directory `dir` of `tree` holds.
pub(crate) fn count_numbered(topology: &Tree, cpus: Option<&Tree>, tree: SysTree, dir: &str) -> Result<u32, Errno> {
    match (tree, cpus) {
        (SysTree::Topology, _) => topology.count_numbered(dir).map_err(vfs_errno),
        (_, Some(cpus)) => cpus.count_numbered(cpu_tree_path(tree, dir, &mut [0; 256])?).map_err(vfs_errno),
        (_, None) => {
            let rd = std::fs::read_dir(host_path(tree, dir)?).map_err(io_errno)?;
            Ok(rd
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_str().is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())))
                .count() as u32)
        }
    }
}

/// Host directories the CPU trees pass through to when the model has no CPUs of its own
/// (upstream's model mode reads CPU data from the host).
const HOST_CPU_DIR: &str = "/sys/devices/system/cpu";
const HOST_CPUINFO: &str = "/proc/cpuinfo";

fn vfs_errno(e: VfsError) -> Errno {
    Errno(match e {
        VfsError::NotFound => Errno::ENOENT,
        // A directory read as a file, or a file listed as a directory.
        VfsError::WrongKind => libc::EISDIR,
    })
}

fn copy_out(data: &[u8], buf: &mut [u8]) -> Result<usize, Errno> {
    if data.len() > buf.len() {
        return Err(Errno(Errno::ERANGE));
    }
    buf[..data.len()].copy_from_slice(data);
    Ok(data.len())
}

fn host_path(tree: SysTree, path: &str) -> Result<std::path::PathBuf, Errno> {
    if path.split('/').any(|c| c == "..") {
        return Err(Errno(Errno::ENOENT));
    }
    Ok(match tree {
        SysTree::Cpu => Path::new(HOST_CPU_DIR).join(path.trim_start_matches('/')),
        SysTree::CpuInfo if path.is_empty() => Path::new(HOST_CPUINFO).to_path_buf(),
        SysTree::CpuInfo => return Err(Errno(Errno::ENOENT)),
        SysTree::Topology => unreachable!("served from the model tree"),
    })
}

/// The path of a CPU tree file in [`Model::host_cpus`].
/// A path of the host-CPU tree (`sys/devices/system/cpu/<path>` or `proc/cpuinfo`), built in
/// `buf` (no allocation per read: a big system's snapshot reads thousands of CPU files).
fn cpu_tree_path<'a>(tree: SysTree, path: &str, buf: &'a mut [u8; 256]) -> Result<&'a str, Errno> {
    use crate::catalogue::cpus::{CPUINFO, SYS_CPU};
    let parts: [&str; 3] = match tree {
        SysTree::Cpu => [SYS_CPU, "/", path.trim_start_matches('/')],
        SysTree::CpuInfo if path.is_empty() => [CPUINFO, "", ""],
        SysTree::CpuInfo => return Err(Errno(Errno::ENOENT)),
        SysTree::Topology => unreachable!("served from the model tree"),
    };
    let mut n = 0;
    for p in parts {
        buf.get_mut(n..n + p.len()).ok_or(Errno(Errno::ENAMETOOLONG))?.copy_from_slice(p.as_bytes());
        n += p.len();
    }
    std::str::from_utf8(&buf[..n]).map_err(|_| Errno(Errno::ENOENT))
}

fn io_errno(e: std::io::Error) -> Errno {
    Errno(e.raw_os_error().unwrap_or(Errno::EIO))
}
