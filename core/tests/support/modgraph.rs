//! The module dependency graph of a crate, read from its sources, and the cycles in it.
//!
//! Shared by `core/tests/layering.rs` and `model/tests/layering.rs` (included by `#[path]`).
//!
//! What a node is: a top-level module of the crate (`src/x.rs` or `src/x/mod.rs` together with
//! everything under `src/x/`), plus `lib` for items defined in `src/lib.rs` itself. A directory's
//! submodules count as their top-level module: they are one unit, free to use each other.
//!
//! What an edge is: a path in code (not in comments or strings) that starts at the crate root
//! and names another node: `crate::x…`, `$crate::x…`, `use crate::{x, y::z}`, and `super::…`
//! chains that climb out of a top-level module. A name re-exported by `lib.rs`
//! (`pub use port::Kfd;`, then `crate::Kfd`) is an edge to the module it comes from. Test code
//! (`#[cfg(test)]` modules) counts like any other code: a unit test that needs its owner is as
//! much a dependency as the code it tests.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One use of another module: where it is.
#[derive(Clone, Debug)]
pub struct Site {
    pub file: String,
    pub line: usize,
}

/// Node → (node it uses → first place it does).
pub type Graph = BTreeMap<String, BTreeMap<String, Site>>;

/// The module graph of the crate whose sources are under `src`.
pub fn crate_graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    walk(src, &mut files);
    files.sort();
    let mut modules: BTreeSet<String> = BTreeSet::new();
    for f in &files {
        if let Some(m) = top_module(src, f) {
            modules.insert(m);
        }
    }
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("src/lib.rs");
    let reexports = root_reexports(&strip(&lib), &modules);

    let mut graph = Graph::new();
    for m in &modules {
        graph.entry(m.clone()).or_default();
    }
    for f in &files {
        let node = top_module(src, f).unwrap_or_else(|| "lib".to_string());
        let text = strip(&std::fs::read_to_string(f).unwrap());
        let rel = f.strip_prefix(src.parent().unwrap()).unwrap_or(f).display().to_string();
        let depth = file_depth(src, f);
        for (line, target) in references(&text, depth) {
            let to = if modules.contains(&target) {
                target
            } else if let Some(m) = reexports.get(&target) {
                m.clone()
            } else {
                "lib".to_string()
            };
            if to != node {
                graph.entry(node.clone()).or_default().entry(to).or_insert(Site { file: rel.clone(), line });
            }
        }
    }
    graph
}

/// Every cycle of the graph, one per strongly connected component with more than one node, as a
/// readable list of edges with the place each one is made.
pub fn cycles(graph: &Graph) -> Vec<String> {
    let mut out = Vec::new();
    for scc in sccs(graph) {
        if scc.len() < 2 {
            continue;
        }
        let set: BTreeSet<&String> = scc.iter().collect();
        let path = cycle_in(graph, &scc[0], &set);
        let mut msg = format!("import cycle among {{{}}}:\n", scc.join(", "));
        for w in path.windows(2) {
            let site = &graph[&w[0]][&w[1]];
            let _ = writeln!(msg, "  {} -> {}   ({}:{})", w[0], w[1], site.file, site.line);
        }
        msg.push_str("  every edge inside it:\n");
        for from in &scc {
            for (to, site) in &graph[from] {
                if set.contains(to) {
                    let _ = writeln!(msg, "    {from} -> {to}   ({}:{})", site.file, site.line);
                }
            }
        }
        out.push(msg);
    }
    out
}

/// Panics with every cycle of the crate under `src`.
pub fn assert_acyclic(src: &Path) {
    let graph = crate_graph(src);
    let found = cycles(&graph);
    assert!(found.is_empty(), "module dependency cycles in {}:\n{}", src.display(), found.join("\n"));
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `src/x.rs`, `src/x/…` → `x`; `src/lib.rs` → None.
fn top_module(src: &Path, f: &Path) -> Option<String> {
    let rel = f.strip_prefix(src).unwrap();
    let mut parts = rel.components();
    let first = parts.next()?.as_os_str().to_str()?.to_string();
    if parts.next().is_some() {
        return Some(first);
    }
    let stem = first.strip_suffix(".rs")?;
    (stem != "lib").then(|| stem.to_string())
}

/// How deep the file's module sits below the root: `lib.rs` 0, `x.rs` and `x/mod.rs` 1,
/// `x/y.rs` 2.
fn file_depth(src: &Path, f: &Path) -> usize {
    let rel = f.strip_prefix(src).unwrap();
    let n = rel.components().count();
    let name = rel.file_name().unwrap().to_str().unwrap();
    if n == 1 && name == "lib.rs" {
        0
    } else if name == "mod.rs" {
        n - 1
    } else {
        n
    }
}

/// `pub use x::{A, B as C};` in lib.rs: A → x, C → x.
fn root_reexports(lib: &str, modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for stmt in lib.split(';') {
        let s = stmt.trim();
        let Some(rest) = s.strip_prefix("pub use ").or_else(|| s.strip_prefix("pub(crate) use ")) else { continue };
        let rest = rest.trim().trim_start_matches("self::").trim_start_matches("crate::");
        let Some((first, tail)) = rest.split_once("::") else { continue };
        if !modules.contains(first) {
            continue;
        }
        for name in leaf_names(tail) {
            map.insert(name, first.to_string());
        }
    }
    map
}

/// The names a use tree binds: `{a::B, C as D, e::{F, G}}` → B, D, F, G.
fn leaf_names(tree: &str) -> Vec<String> {
    let t = tree.trim();
    if let Some(inner) = t.strip_prefix('{').and_then(|x| x.strip_suffix('}')) {
        return split_top(inner).iter().flat_map(|p| leaf_names(p)).collect();
    }
    if let Some((_, tail)) = t.split_once("::") {
        return leaf_names(tail);
    }
    let name = t.rsplit(" as ").next().unwrap().trim();
    if name.is_empty() || name == "*" || name == "self" {
        Vec::new()
    } else {
        vec![name.to_string()]
    }
}

/// Splits at commas outside braces.
fn split_top(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0i32, 0, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

/// Source text with comments, strings and char literals blanked (newlines kept, so line numbers
/// stay right).
fn strip(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, c: u8| out.push(if c == b'\n' { b'\n' } else { b' ' });
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
        } else if b[i] == b'r' && (b[i..].starts_with(b"r\"") || b[i..].starts_with(b"r#")) && !ident_byte_before(b, i) {
            // Raw string: r"…", r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while j < b.len() && b[j] == b'#' {
                hashes += 1;
                j += 1;
            }
            if j >= b.len() || b[j] != b'"' {
                out.push(b[i]);
                i += 1;
                continue;
            }
            let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
            let end = b[j + 1..].windows(close.len()).position(|w| w == close.as_slice()).map_or(b.len(), |p| j + 1 + p + close.len());
            for &c in &b[i..end] {
                blank(&mut out, c);
            }
            i = end;
        } else if b[i] == b'"' {
            blank(&mut out, b[i]);
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' && i + 1 < b.len() {
                    blank(&mut out, b[i]);
                    i += 1;
                }
                blank(&mut out, b[i]);
                i += 1;
            }
            if i < b.len() {
                out.push(b' ');
                i += 1;
            }
        } else if b[i] == b'\'' {
            // A char literal ('x', '\n', '\u{..}', '"') or a lifetime ('a).
            let end = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..].iter().position(|&c| c == b'\'').map(|p| i + 2 + p + 1)
            } else {
                let ch_len = std::str::from_utf8(&b[i + 1..]).ok().and_then(|s| s.chars().next()).map_or(1, char::len_utf8);
                (b.get(i + 1 + ch_len) == Some(&b'\'')).then_some(i + 2 + ch_len)
            };
            match end {
                Some(e) => {
                    for &c in &b[i..e] {
                        blank(&mut out, c);
                    }
                    i = e;
                }
                None => {
                    out.push(b[i]);
                    i += 1;
                }
            }
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

fn ident_byte_before(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// (line, first segment of an absolute path) for every root-relative path in the stripped text
/// of a file whose module is `file_depth` below the root.
fn references(text: &str, file_depth: usize) -> Vec<(usize, String)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    // Inline `mod name {` blocks: the brace depth at which each one closes.
    let mut mod_stack: Vec<usize> = Vec::new();
    let mut braces = 0usize;
    let mut pending_mod = false;
    let mut line = 1;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            i += 1;
            continue;
        }
        if c == b'{' {
            braces += 1;
            if pending_mod {
                mod_stack.push(braces);
                pending_mod = false;
            }
            i += 1;
            continue;
        }
        if c == b'}' {
            if mod_stack.last() == Some(&braces) {
                mod_stack.pop();
            }
            braces = braces.saturating_sub(1);
            i += 1;
            continue;
        }
        if c == b';' {
            pending_mod = false;
            i += 1;
            continue;
        }
        if !is_ident(c) || ident_byte_before(b, i) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        let word = &text[start..i];
        let dollar = start > 0 && b[start - 1] == b'$';
        let path_start = start == 0 || !(b[start - 1] == b':' && start >= 2 && b[start - 2] == b':');
        match word {
            "mod" => pending_mod = true,
            "crate" if path_start || dollar => {
                if let Some(rest) = text[i..].strip_prefix("::") {
                    for first in first_segments(rest) {
                        out.push((line, first));
                    }
                }
            }
            "super" if path_start => {
                // Count the chain of `super::`.
                let mut ups = 1;
                let mut j = i;
                while text[j..].starts_with("::super") && !text[j + 7..].starts_with(|ch: char| ch.is_alphanumeric() || ch == '_') {
                    ups += 1;
                    j += 7;
                }
                let depth = file_depth + mod_stack.len();
                if ups == depth {
                    if let Some(rest) = text[j..].strip_prefix("::") {
                        for first in first_segments(rest) {
                            out.push((line, first));
                        }
                    }
                }
                // ups < depth: inside the same top-level module; ups > depth cannot compile.
                i = j;
            }
            _ => {}
        }
    }
    out
}

/// The first path segments after `crate::`: `x::…` → [x], `{x, y::z}` → [x, y].
fn first_segments(rest: &str) -> Vec<String> {
    let rest = rest.trim_start();
    if rest.starts_with('{') {
        let mut depth = 0;
        let mut end = rest.len();
        for (k, ch) in rest.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = k;
                        break;
                    }
                }
                _ => {}
            }
        }
        return split_top(&rest[1..end])
            .into_iter()
            .filter_map(|p| {
                let p = p.trim();
                let name: String = p.chars().take_while(|ch| ch.is_alphanumeric() || *ch == '_').collect();
                (!name.is_empty() && name != "self").then_some(name)
            })
            .collect();
    }
    let name: String = rest.chars().take_while(|ch| ch.is_alphanumeric() || *ch == '_').collect();
    if name.is_empty() {
        Vec::new()
    } else {
        vec![name]
    }
}

/// Tarjan's strongly connected components.
fn sccs(graph: &Graph) -> Vec<Vec<String>> {
    struct St<'a> {
        g: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        on: BTreeSet<&'a str>,
        stack: Vec<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut St<'a>, v: &'a str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on.insert(v);
        if let Some(edges) = s.g.get(v) {
            for w in edges.keys() {
                let w = w.as_str();
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let lw = s.low[w];
                    let lv = s.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if s.on.contains(w) {
                    let iw = s.index[w];
                    let lv = s.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            comp.sort();
            s.out.push(comp);
        }
    }
    let mut s =
        St { g: graph, index: BTreeMap::new(), low: BTreeMap::new(), on: BTreeSet::new(), stack: Vec::new(), next: 0, out: Vec::new() };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// One cycle through `start` inside a strongly connected component (breadth-first, so short).
fn cycle_in(graph: &Graph, start: &String, comp: &BTreeSet<&String>) -> Vec<String> {
    let mut prev: BTreeMap<String, String> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start.clone()]);
    while let Some(v) = queue.pop_front() {
        for w in graph[&v].keys() {
            if !comp.contains(w) {
                continue;
            }
            if w == start {
                // prev leads from v back to start.
                let mut path = vec![v.clone()];
                let mut cur = v.clone();
                while &cur != start {
                    cur = prev[&cur].clone();
                    path.push(cur.clone());
                }
                path.reverse();
                path.push(start.clone());
                return path;
            }
            if !prev.contains_key(w) && w != start {
                prev.insert(w.clone(), v.clone());
                queue.push_back(w.clone());
            }
        }
    }
    vec![start.clone()]
}
