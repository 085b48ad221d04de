//! A read-only in-memory file tree in sysfs layout: the model's KFD topology.
//!
//! Paths are relative, `/`-separated, without a leading or trailing slash (`nodes/0/properties`).
//! Directories are explicit entries, so empty ones (`nodes/0/caches` on a CPU node) exist as they
//! do in real sysfs.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq, Eq)]
enum Entry {
    Dir,
    File(Vec<u8>),
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
    entries: BTreeMap<String, Entry>,
}

fn normalize(path: &str) -> String {
    path.split('/').filter(|c| !c.is_empty() && *c != ".").collect::<Vec<_>>().join("/")
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
            self.entries.entry(cur.clone()).or_insert(Entry::Dir);
        }
    }

    /// Add (or replace) a file, creating its parent directories.
    pub fn add_file(&mut self, path: &str, contents: impl Into<Vec<u8>>) {
        let path = normalize(path);
        if let Some((parent, _)) = path.rsplit_once('/') {
            self.add_dir(parent);
        }
        self.entries.insert(path, Entry::File(contents.into()));
    }

    /// The contents of a file.
    pub fn read(&self, path: &str) -> Result<&[u8], VfsError> {
        match self.entries.get(&normalize(path)) {
            Some(Entry::File(c)) => Ok(c),
            Some(Entry::Dir) => Err(VfsError::WrongKind),
            None => Err(VfsError::NotFound),
        }
    }

    /// A file as text (lossy; sysfs files are ASCII).
    pub fn read_str(&self, path: &str) -> Option<String> {
        self.read(path).ok().map(|b| String::from_utf8_lossy(b).into_owned())
    }

    pub fn is_dir(&self, path: &str) -> bool {
        let path = normalize(path);
        path.is_empty() || matches!(self.entries.get(&path), Some(Entry::Dir))
    }

    /// Names of the direct children of a directory.
    pub fn list(&self, dir: &str) -> Result<Vec<String>, VfsError> {
        let dir = normalize(dir);
        if !self.is_dir(&dir) {
            return Err(if self.entries.contains_key(&dir) { VfsError::WrongKind } else { VfsError::NotFound });
        }
        let prefix = if dir.is_empty() { String::new() } else { format!("{dir}/") };
        Ok(self
            .entries
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .filter_map(|(k, _)| {
                let rest = &k[prefix.len()..];
                (!rest.is_empty() && !rest.contains('/')).then(|| rest.to_string())
            })
            .collect())
    }

    /// How many children of `dir` have a purely decimal name (sysfs `nodes/`, `io_links/`, ...).
    pub fn count_numbered(&self, dir: &str) -> Result<u32, VfsError> {
        Ok(self.list(dir)?.iter().filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).count() as u32)
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
    fn properties_parse_like_the_thunk() {
        let p = parse_properties("a 1\nb 18446744073709551615\nsibling_map 1,0,1\nc 3\n");
        assert_eq!(p.len(), 2);
        assert_eq!(prop(&p, "b"), Some(u64::MAX));
        assert_eq!(prop(&p, "c"), None);
    }
}
