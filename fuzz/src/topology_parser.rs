//! Fuzz target for the topology parsers: arbitrary bytes as properties files, number files,
//! sibling lists and override strings, and split into the files of a small whole tree that
//! `topology::snapshot` walks. Nothing may panic; every outcome is Ok or an error status.

use hsakmt_core::topology::props::{parse_sibling_list, parse_single_u32, Props};
use hsakmt_core::topology::{parse_gfx_override, snapshot, TopologyConfig};
use hsakmt_core::{Backend, Errno, Kfd, SysTree};

/// The files of a two-node tree (CPU + GPU) plus the CPU-side files; the input is cut at
/// 0xFF bytes and the pieces fill these paths in order (missing pieces stay absent).
const PATHS: &[(SysTree, &str)] = &[
    (SysTree::Topology, "generation_id"),
    (SysTree::Topology, "system_properties"),
    (SysTree::Topology, "nodes/0/gpu_id"),
    (SysTree::Topology, "nodes/0/properties"),
    (SysTree::Topology, "nodes/0/mem_banks/0/properties"),
    (SysTree::Topology, "nodes/0/io_links/0/properties"),
    (SysTree::Topology, "nodes/1/gpu_id"),
    (SysTree::Topology, "nodes/1/properties"),
    (SysTree::Topology, "nodes/1/mem_banks/0/properties"),
    (SysTree::Topology, "nodes/1/caches/0/properties"),
    (SysTree::Topology, "nodes/1/io_links/0/properties"),
    (SysTree::Topology, "nodes/1/p2p_links/0/properties"),
    (SysTree::Topology, "nodes/1/marketing_name"),
    (SysTree::CpuInfo, ""),
    (SysTree::Cpu, "cpu0/cache/index0/level"),
    (SysTree::Cpu, "cpu0/cache/index0/type"),
    (SysTree::Cpu, "cpu0/cache/index0/size"),
    (SysTree::Cpu, "cpu0/cache/index0/shared_cpu_list"),
    (SysTree::Cpu, "cpu0/cache/index0/shared_cpu_map"),
    (SysTree::Cpu, "cpu1/cache/index0/shared_cpu_map"),
];

struct FuzzKfd<'a> {
    files: Vec<(SysTree, &'static str, &'a [u8])>,
    backend: Backend,
}

impl Kfd for FuzzKfd<'_> {
    unsafe fn ioctl(&self, _: u32, _: &mut [u8]) -> Result<(), Errno> {
        Err(Errno(Errno::ENOTTY))
    }
    unsafe fn mmap(&self, _: Option<usize>, _: usize, _: u32, _: bool, _: u64) -> Result<usize, Errno> {
        Err(Errno(Errno::ENODEV))
    }
    unsafe fn munmap(&self, _: usize, _: usize) -> Result<(), Errno> {
        Ok(())
    }
    unsafe fn map_anonymous(&self, _: Option<usize>, _: usize, _: usize, _: u32) -> Result<usize, Errno> {
        Err(Errno(Errno::ENOSYS))
    }

    unsafe fn release_va(&self, _: usize, _: usize) -> Result<(), Errno> {
        Ok(())
    }

    fn open_render_node(&self, minor: u32) -> Result<i32, Errno> {
        if (128..=255).contains(&minor) {
            Ok(3)
        } else {
            Err(Errno(Errno::EINVAL))
        }
    }
    fn close_render_node(&self, _: i32) {}
    fn read_file(&self, tree: SysTree, path: &str, buf: &mut [u8]) -> Result<usize, Errno> {
        let (_, _, data) = self.files.iter().find(|(t, p, _)| *t == tree && *p == path).ok_or(Errno(Errno::ENOENT))?;
        let dst = buf.get_mut(..data.len()).ok_or(Errno(Errno::ERANGE))?;
        dst.copy_from_slice(data);
        Ok(data.len())
    }
    fn count_numbered_entries(&self, tree: SysTree, dir: &str) -> Result<u32, Errno> {
        let prefix = format!("{dir}/");
        let mut seen: Vec<&str> = Vec::new();
        let mut exists = false;
        for (t, p, _) in &self.files {
            if *t != tree {
                continue;
            }
            if let Some(rest) = p.strip_prefix(prefix.as_str()) {
                exists = true;
                let first = rest.split('/').next().unwrap_or("");
                if !first.is_empty() && first.bytes().all(|b| b.is_ascii_digit()) && !seen.contains(&first) {
                    seen.push(first);
                }
            }
        }
        if exists {
            Ok(seen.len() as u32)
        } else {
            Err(Errno(Errno::ENOENT))
        }
    }
    fn process_id(&self) -> u32 {
        1
    }
    fn backend(&self) -> Backend {
        self.backend
    }
}

/// The target's body: one fuzz input.
pub fn run(data: &[u8]) {
    // The raw parsers on the whole input.
    let mut props = Props::new(data);
    for _ in props.by_ref() {}
    let _ = props.malformed();
    let _ = parse_single_u32(data);
    let mut map = [0u32; 256];
    let _ = parse_sibling_list(data, &mut map);
    if let Ok(s) = core::str::from_utf8(data) {
        let _ = parse_gfx_override(s);
    }

    // The whole walk over a tree cut from the input.
    let backend = if data.first().is_some_and(|b| b & 1 == 1) { Backend::BuiltinModel } else { Backend::Kernel };
    let files = PATHS.iter().zip(data.split(|&b| b == 0xFF)).map(|(&(t, p), d)| (t, p, d)).collect();
    let kfd = FuzzKfd { files, backend };
    let mut cfg = TopologyConfig::default();
    if data.get(1).is_some_and(|b| b & 1 == 1) {
        cfg.set_gfx_override(None, "9.0.10");
    }
    cfg.disable_svm = data.get(2).is_some_and(|b| b & 1 == 1);
    let _ = snapshot(&kfd, &cfg);
}
