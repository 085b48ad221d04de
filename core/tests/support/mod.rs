//! Test support for the topology tests: an in-memory `Kfd` port serving sysfs-like trees
//! (loaded from the fixture bundles in tests/data/topology, or built by hand), with hooks to
//! inject errors, hide render nodes and change generation_id while a snapshot runs.
#![allow(dead_code)]

use hsakmt_core::{Backend, Errno, Kfd, SysTree};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The fixtures shipped with the crate.
pub const MI25: &str = "mi25-gfx900-1gpu";
pub const MI300X: &str = "mi300x-gfx942-8gpu-cpx";
pub const MI210: &str = "mi210-gfx90a-8gpu-2hive";

/// Parse a bundle made by `pack_fixture.py`: `@@ <path> <len>` headers, each followed by
/// exactly `len` bytes and a newline.
pub fn parse_bundle(bytes: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let eol = bytes[pos..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |n| pos + n);
        let line = std::str::from_utf8(&bytes[pos..eol]).expect("bundle header is UTF-8");
        pos = eol + 1;
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let rest = line.strip_prefix("@@ ").unwrap_or_else(|| panic!("bad bundle line {line:?}"));
        let (path, len) = rest.rsplit_once(' ').expect("header has a length");
        let len: usize = len.parse().expect("length is a number");
        files.insert(path.to_string(), bytes[pos..pos + len].to_vec());
        pos += len + 1;
    }
    files
}

/// Load a fixture bundle by name.
pub fn load_fixture(name: &str) -> BTreeMap<String, Vec<u8>> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/topology").join(name).join("tree.txt");
    let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    parse_bundle(&bytes)
}

/// The value of `key` in a properties text, read the simple way (for test setup only).
pub fn prop(text: &[u8], key: &str) -> Option<u64> {
    std::str::from_utf8(text).ok()?.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

/// Synthetic gpu_id for sysfs node `n` of a partial fixture (real ids are hashes; any
/// non-zero distinct value serves).
pub fn synthetic_gpu_id(n: u32) -> u32 {
    0x1000 + n
}

/// Fill in the files a partial fixture lacks but every real KFD tree has, so that the whole
/// tree loads. These are NOT from the captures:
/// - `generation_id` ("1") and `system_properties` (all zero) when absent (mi210);
/// - `nodes/N/gpu_id` when absent (mi300x, mi210): "0" for a node whose `simd_count` is 0
///   (a CPU), else [`synthetic_gpu_id`]`(N)`.
///
/// Returns the list of synthesized paths.
pub fn synthesize_missing(files: &mut BTreeMap<String, Vec<u8>>) -> Vec<String> {
    let mut added = Vec::new();
    if !files.contains_key("generation_id") {
        files.insert("generation_id".into(), b"1\n".to_vec());
        added.push("generation_id".to_string());
    }
    if !files.contains_key("system_properties") {
        files.insert("system_properties".into(), b"platform_oem 0\nplatform_id 0\nplatform_rev 0\n".to_vec());
        added.push("system_properties".to_string());
    }
    let nodes: Vec<(u32, Vec<u8>)> = files
        .iter()
        .filter_map(|(p, d)| {
            let rest = p.strip_prefix("nodes/")?;
            let (n, tail) = rest.split_once('/')?;
            (tail == "properties").then(|| (n.parse().ok(), d.clone())).and_then(|(n, d)| Some((n?, d)))
        })
        .collect();
    for (n, props) in nodes {
        let path = format!("nodes/{n}/gpu_id");
        if files.contains_key(&path) {
            continue;
        }
        let id = if prop(&props, "simd_count") == Some(0) { 0 } else { synthetic_gpu_id(n) };
        files.insert(path.clone(), format!("{id}\n").into_bytes());
        added.push(path);
    }
    added
}

/// Load a fixture and complete it with [`synthesize_missing`].
pub fn load_complete(name: &str) -> BTreeMap<String, Vec<u8>> {
    let mut files = load_fixture(name);
    synthesize_missing(&mut files);
    files
}

/// An in-memory `Kfd`: three file trees, errors to inject, render nodes to hide.
pub struct MemKfd {
    pub topology: Mutex<BTreeMap<String, Vec<u8>>>,
    /// The Cpu tree (`cpuN/cache/indexM/...`); empty means absent (every read is ENOENT).
    pub cpu: BTreeMap<String, Vec<u8>>,
    /// /proc/cpuinfo, if any.
    pub cpuinfo: Option<Vec<u8>>,
    /// Errors returned instead of a file's content, by topology path.
    pub errors: BTreeMap<String, i32>,
    /// Render minors whose open fails, with the errno.
    pub render_errors: BTreeMap<u32, i32>,
    /// Values served for `generation_id`, one per read, before falling back to the file.
    pub generations: Mutex<Vec<u32>>,
    pub generation_reads: AtomicUsize,
    pub open_fds: Mutex<BTreeSet<i32>>,
    pub render_opens: AtomicUsize,
    pub backend: Backend,
}

impl MemKfd {
    pub fn new(topology: BTreeMap<String, Vec<u8>>) -> Self {
        MemKfd {
            topology: Mutex::new(topology),
            cpu: BTreeMap::new(),
            cpuinfo: None,
            errors: BTreeMap::new(),
            render_errors: BTreeMap::new(),
            generations: Mutex::new(Vec::new()),
            generation_reads: AtomicUsize::new(0),
            open_fds: Mutex::new(BTreeSet::new()),
            render_opens: AtomicUsize::new(0),
            backend: Backend::Kernel,
        }
    }

    pub fn fixture(name: &str) -> Self {
        MemKfd::new(load_complete(name))
    }

    /// Replace (or add) one topology file.
    pub fn set(&self, path: &str, content: &[u8]) {
        self.topology.lock().unwrap().insert(path.to_string(), content.to_vec());
    }

    /// Remove one topology file, or every file under a directory.
    pub fn remove(&self, path: &str) {
        let prefix = format!("{path}/");
        self.topology.lock().unwrap().retain(|p, _| p != path && !p.starts_with(&prefix));
    }

    pub fn get(&self, path: &str) -> Vec<u8> {
        self.topology.lock().unwrap().get(path).cloned().unwrap_or_else(|| panic!("no {path}"))
    }

    /// Run `f` over the file map of `tree` (`None` for CpuInfo, which has no directories).
    fn with_tree<T>(&self, tree: SysTree, f: impl FnOnce(&BTreeMap<String, Vec<u8>>) -> T) -> Option<T> {
        match tree {
            SysTree::Topology => Some(f(&self.topology.lock().unwrap())),
            SysTree::Cpu => Some(f(&self.cpu)),
            SysTree::CpuInfo => None,
        }
    }
}

fn copy_out(data: &[u8], buf: &mut [u8]) -> Result<usize, Errno> {
    if data.len() > buf.len() {
        return Err(Errno(Errno::ERANGE));
    }
    buf[..data.len()].copy_from_slice(data);
    Ok(data.len())
}

impl Kfd for MemKfd {
    unsafe fn ioctl(&self, _request: u32, _arg: &mut [u8]) -> Result<(), Errno> {
        Err(Errno(Errno::ENOTTY))
    }

    unsafe fn mmap(&self, _fixed: Option<usize>, _len: usize, _prot: u32, _shared: bool, _off: u64) -> Result<usize, Errno> {
        Err(Errno(Errno::ENODEV))
    }

    unsafe fn munmap(&self, _addr: usize, _len: usize) -> Result<(), Errno> {
        Ok(())
    }

    unsafe fn map_anonymous(&self, _: Option<usize>, _: usize, _: usize, _: u32) -> Result<usize, Errno> {
        Err(Errno(Errno::ENOSYS))
    }
    unsafe fn release_va(&self, _: usize, _: usize) -> Result<(), Errno> {
        Ok(())
    }
    fn open_render_node(&self, minor: u32) -> Result<i32, Errno> {
        self.render_opens.fetch_add(1, Ordering::SeqCst);
        if let Some(&e) = self.render_errors.get(&minor) {
            return Err(Errno(e));
        }
        if !(128..=255).contains(&minor) {
            return Err(Errno(Errno::EINVAL));
        }
        let fd = 1000 + minor as i32;
        self.open_fds.lock().unwrap().insert(fd);
        Ok(fd)
    }

    fn close_render_node(&self, fd: i32) {
        self.open_fds.lock().unwrap().remove(&fd);
    }

    fn read_file(&self, tree: SysTree, path: &str, buf: &mut [u8]) -> Result<usize, Errno> {
        if tree == SysTree::CpuInfo {
            return match &self.cpuinfo {
                Some(d) => copy_out(d, buf),
                None => Err(Errno(Errno::ENOENT)),
            };
        }
        if tree == SysTree::Topology {
            if let Some(&e) = self.errors.get(path) {
                return Err(Errno(e));
            }
            if path == "generation_id" {
                self.generation_reads.fetch_add(1, Ordering::SeqCst);
                let mut g = self.generations.lock().unwrap();
                if !g.is_empty() {
                    let v = g.remove(0);
                    return copy_out(format!("{v}\n").as_bytes(), buf);
                }
            }
            let files = self.topology.lock().unwrap();
            return match files.get(path) {
                Some(d) => copy_out(d, buf),
                None => Err(Errno(Errno::ENOENT)),
            };
        }
        match self.cpu.get(path) {
            Some(d) => copy_out(d, buf),
            None => Err(Errno(Errno::ENOENT)),
        }
    }

    fn count_numbered_entries(&self, tree: SysTree, dir: &str) -> Result<u32, Errno> {
        let prefix = if dir.is_empty() { String::new() } else { format!("{dir}/") };
        let (exists, numbered) = self
            .with_tree(tree, |files| {
                let mut exists = false;
                let mut numbered = BTreeSet::new();
                for p in files.range(prefix.clone()..).map(|(p, _)| p).take_while(|p| p.starts_with(&prefix)) {
                    exists = true;
                    let first = p[prefix.len()..].split('/').next().unwrap_or("");
                    if !first.is_empty() && first.bytes().all(|b| b.is_ascii_digit()) {
                        numbered.insert(first.to_string());
                    }
                }
                (exists, numbered.len() as u32)
            })
            .ok_or(Errno(Errno::ENOTDIR))?;
        if exists {
            Ok(numbered)
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

/// MarketingName as a Rust string (up to the first NUL).
pub fn wide_name(n: &[u16; 64]) -> String {
    let end = n.iter().position(|&c| c == 0).unwrap_or(64);
    String::from_utf16_lossy(&n[..end])
}

/// AMDName as a Rust string (up to the first NUL).
pub fn narrow_name(n: &[u8; 64]) -> String {
    let end = n.iter().position(|&c| c == 0).unwrap_or(64);
    String::from_utf8_lossy(&n[..end]).into_owned()
}
