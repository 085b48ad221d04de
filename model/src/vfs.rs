//! A read-only in-memory file tree in sysfs layout: the model's KFD topology.
//!
//! Paths are relative, `/`-separated, without a leading or trailing slash (`nodes/0/properties`).
//! Directories are explicit entries, so empty ones (`nodes/0/caches` on a CPU node) exist as they
//! do in real sysfs.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Entry {
    Dir,
    File(Arc<[u8]>),
}

/// Why a read of the tree failed (mapped to errnos by the port).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VfsError {
    /// No such file or directory.
    NotFound,
    /// The path names a directory where a file was expected, or the reverse.
    WrongKind,
}

/// The tree. Cheap to clone for tests; the model keeps one per instance.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tree {
    /// In path order: listings, exports.
    entries: BTreeMap<String, Entry>,
    /// The same entries by path: a read (and a count of numbered children) is one hash
    /// lookup, not a walk of string compares down a tree of thousands of `nodes/N/...` paths.
    index: HashMap<String, Indexed, std::hash::BuildHasherDefault<PathHasher>>,
}

/// Whether every component of a path is neither empty nor `.` (one pass over the bytes).
fn is_normal(p: &[u8]) -> bool {
    let mut start = 0;
    for i in 0..=p.len() {
        if i == p.len() || p[i] == b'/' {
            let c = &p[start..i];
            if c.is_empty() || c == b"." {
                return false;
            }
            start = i + 1;
        }
    }
    true
}

/// A word-at-a-time multiplicative hash (FxHash's step) for the index: a path costs a few
/// cycles per 8 bytes (the default SipHash was a tenth of a big snapshot). The keys are the
/// model's own paths, so flooding is no concern.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct PathHasher(u64);

impl std::hash::Hasher for PathHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
            self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
        let mut last = [0u8; 8];
        last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
        self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(last) ^ bytes.len() as u64).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

/// An entry of the index.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Indexed {
    /// A directory and how many of its children have a purely decimal name.
    Dir {
        numbered: u32,
    },
    File(Arc<[u8]>),
}

/// Whether a name is purely decimal (`nodes/3`, `io_links/12`).
fn is_numbered(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit())
}

/// The path without empty and `.` components; borrowed (no allocation) when it has none.
fn normalize(path: &str) -> Cow<'_, str> {
    if is_normal(path.as_bytes()) {
        return Cow::Borrowed(path);
    }
    Cow::Owned(path.split('/').filter(|c| !c.is_empty() && *c != ".").collect::<Vec<_>>().join("/"))
}

impl Tree {
    pub fn new() -> Tree {
        Tree::default()
    }

    /// Add a directory (and its parents).
    pub fn add_dir(&mut self, path: &str) {
        let path = normalize(path);
        let mut cur = String::new();
        for comp in path.split('/').filter(|c| !c.is_empty()) {
            if !cur.is_empty() {
                cur.push('/');
            }
            cur.push_str(comp);
            if !self.entries.contains_key(&cur) {
                self.entries.insert(cur.clone(), Entry::Dir);
                self.index.insert(cur.clone(), Indexed::Dir { numbered: 0 });
                self.count_child(&cur);
            }
        }
    }

    /// Add (or replace) a file, creating its parent directories.
    pub fn add_file(&mut self, path: &str, contents: impl Into<Vec<u8>>) {
        let path = normalize(path).into_owned();
        if let Some((parent, _)) = path.rsplit_once('/') {
            self.add_dir(parent);
        }
        let data: Arc<[u8]> = contents.into().into();
        if self.index.insert(path.clone(), Indexed::File(data.clone())).is_none() {
            self.count_child(&path);
        }
        self.entries.insert(path, Entry::File(data));
    }

    /// A new entry at `path`: its parent directory counts it if its name is numbered.
    fn count_child(&mut self, path: &str) {
        let (parent, name) = path.rsplit_once('/').unwrap_or(("", path));
        if is_numbered(name) {
            if let Some(Indexed::Dir { numbered }) = self.index.get_mut(parent) {
                *numbered += 1;
            }
        }
    }

    /// The contents of a file.
    pub fn read(&self, path: &str) -> Result<&[u8], VfsError> {
        match self.index.get(normalize(path).as_ref()) {
            Some(Indexed::File(c)) => Ok(c),
            Some(Indexed::Dir { .. }) => Err(VfsError::WrongKind),
            None => Err(VfsError::NotFound),
        }
    }

    /// A file as text (lossy; sysfs files are ASCII).
    pub fn read_str(&self, path: &str) -> Option<String> {
        self.read(path).ok().map(|b| String::from_utf8_lossy(b).into_owned())
    }

    pub fn is_dir(&self, path: &str) -> bool {
        let path = normalize(path);
        path.is_empty() || matches!(self.index.get(path.as_ref()), Some(Indexed::Dir { .. }))
    }

    /// Names of the direct children of a directory.
    pub fn list(&self, dir: &str) -> Result<Vec<String>, VfsError> {
        Ok(self.children(dir)?.map(str::to_string).collect())
    }

    /// The direct children of a directory, in order, without allocating a name.
    fn children<'a>(&'a self, dir: &str) -> Result<impl Iterator<Item = &'a str> + 'a, VfsError> {
        let dir = normalize(dir);
        if !self.is_dir(&dir) {
            return Err(if self.index.contains_key(dir.as_ref()) { VfsError::WrongKind } else { VfsError::NotFound });
        }
        let prefix = if dir.is_empty() { String::new() } else { format!("{dir}/") };
        let (start, plen) = (prefix.clone(), prefix.len());
        Ok(self.entries.range(start..).take_while(move |(k, _)| k.starts_with(&prefix)).filter_map(move |(k, _)| {
            // A direct child: nothing but its name after the directory's prefix.
            let rest = &k[plen..];
            (!rest.is_empty() && !rest.contains('/')).then_some(rest)
        }))
    }

    /// How many children of `dir` have a purely decimal name (sysfs `nodes/`, `io_links/`, ...).
    pub fn count_numbered(&self, dir: &str) -> Result<u32, VfsError> {
        match self.index.get(normalize(dir).as_ref()) {
            Some(Indexed::Dir { numbered }) => Ok(*numbered),
            Some(Indexed::File(_)) => Err(VfsError::WrongKind),
            // The root is no entry of its own.
            None => Ok(self.children(dir)?.filter(|n| is_numbered(n)).count() as u32),
        }
    }

    /// Number of files (not directories) in the tree.
    pub fn file_count(&self) -> usize {
        self.entries.values().filter(|e| matches!(e, Entry::File(_))).count()
    }

    /// Every file path, in sorted order.
    pub fn file_paths(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().filter_map(|(k, e)| match e {
            Entry::File(_) => Some(k.as_str()),
            Entry::Dir => None,
        })
    }

    /// Load a directory tree from disk (regular files and directories; symlinks are followed).
    pub fn load_dir(root: &Path) -> io::Result<Tree> {
        let mut tree = Tree::new();
        fn walk(tree: &mut Tree, root: &Path, rel: &str) -> io::Result<()> {
            let dir = if rel.is_empty() { root.to_path_buf() } else { root.join(rel) };
            for entry in fs::read_dir(&dir)? {
                let entry = entry?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let child = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
                let meta = fs::metadata(entry.path())?;
                if meta.is_dir() {
                    tree.add_dir(&child);
                    walk(tree, root, &child)?;
                } else if meta.is_file() {
                    tree.add_file(&child, fs::read(entry.path())?);
                }
            }
            Ok(())
        }
        walk(&mut tree, root, "")?;
        Ok(tree)
    }

    /// Write the tree below `root` (created if missing). Existing files are overwritten.
    pub fn export(&self, root: &Path) -> io::Result<()> {
        fs::create_dir_all(root)?;
        for (path, entry) in &self.entries {
            let target: PathBuf = root.join(path);
            match entry {
                Entry::Dir => fs::create_dir_all(&target)?,
                Entry::File(c) => {
                    if let Some(parent) = target.parent() {
                        fs::create_dir_all(parent)?;
                    }
                    fs::write(&target, c)?;
                }
            }
        }
        Ok(())
    }
}

/// Parse a sysfs properties file the way the thunk does: `<key> <u64>` lines, stopping at the
/// first line that does not parse. `sibling_map` (a comma list) ends the scan too.
pub fn parse_properties(text: &str) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(k), Some(v)) = (it.next(), it.next()) else {
            break;
        };
        match v.parse::<u64>() {
            Ok(v) => out.push((k.to_string(), v)),
            Err(_) => break,
        }
    }
    out
}

/// Look a key up in parsed properties.
pub fn prop(props: &[(String, u64)], key: &str) -> Option<u64> {
    props.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dirs_files_and_counts() {
        let mut t = Tree::new();
        t.add_file("nodes/0/properties", "a 1\n");
        t.add_file("nodes/1/properties", "a 2\n");
        t.add_dir("nodes/0/caches");
        t.add_file("nodes/x", "junk");
        assert_eq!(t.count_numbered("nodes"), Ok(2));
        assert_eq!(t.count_numbered("nodes/0/caches"), Ok(0));
        assert_eq!(t.count_numbered("nodes/0/io_links"), Err(VfsError::NotFound));
        assert_eq!(t.read("nodes/0"), Err(VfsError::WrongKind));
        assert_eq!(t.read("/nodes//1/properties"), Ok(&b"a 2\n"[..]));
        assert_eq!(t.list("").unwrap(), vec!["nodes".to_string()]);
    }

    #[test]
    fn numbered_counts_are_kept_as_entries_come() {
        let mut t = Tree::new();
        t.add_file("d/0", "x");
        t.add_file("d/0", "replaced, not counted twice");
        t.add_dir("d/1");
        t.add_dir("d/1");
        t.add_file("d/1/2", "nested: not a child of d");
        t.add_file("7", "a numbered file at the root");
        assert_eq!(t.count_numbered("d"), Ok(2));
        assert_eq!(t.count_numbered("d/1"), Ok(1));
        assert_eq!(t.count_numbered(""), Ok(1));
        assert_eq!(t.count_numbered("d/0"), Err(VfsError::WrongKind));
        // Every directory of a catalogue tree: the kept count is what a listing says.
        let t = crate::catalogue::build("mi210").unwrap();
        let dirs: Vec<String> = t.entries.iter().filter(|(_, e)| matches!(e, Entry::Dir)).map(|(k, _)| k.clone()).collect();
        assert!(dirs.len() > 100);
        for d in dirs.iter().map(String::as_str).chain([""]) {
            let listed = t.list(d).unwrap().iter().filter(|n| is_numbered(n)).count() as u32;
            assert_eq!(t.count_numbered(d), Ok(listed), "{d}");
        }
    }

    #[test]
    fn properties_parse_like_the_thunk() {
        let p = parse_properties("a 1\nb 18446744073709551615\nsibling_map 1,0,1\nc 3\n");
        assert_eq!(p.len(), 2);
        assert_eq!(prop(&p, "b"), Some(u64::MAX));
        assert_eq!(prop(&p, "c"), None);
    }
}
