//! The text report: the backend line, a one-line-per-agent summary table (as `rocminfo`'s
//! agent list and `amd-smi list` give), then either each node's details and the link
//! matrices (full view) or one topology line per GPU (compact view, the default above
//! [`COMPACT_ABOVE`] nodes).

use crate::info::{CacheGroup, Link, NodeInfo, SystemInfo};
use std::fmt::Write;

/// Systems with more nodes than this get the compact view unless `--full` is given.
pub const COMPACT_ABOVE: usize = 16;

/// GPU × GPU matrices are printed for at most this many GPUs (wider ones would not fit).
const MATRIX_MAX: usize = 16;

pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// A cache size given in KiB: exact ("16 KiB", "4 MiB", "14080 KiB"), never rounded.
pub fn kib(k: u64) -> String {
    if k >= 1024 && k & 1023 == 0 {
        format!("{} MiB", k / 1024)
    } else {
        format!("{k} KiB")
    }
}

/// `L1: 64×16 KiB data, 16×4 KiB data, 16×8 KiB instruction; L2: 1×4 MiB unified`.
pub fn caches_line(groups: &[CacheGroup]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut level = None;
    for g in groups {
        let item = format!("{}×{} {}", g.count, kib(g.size_kib), g.ty);
        if level == Some(g.level) {
            if let Some(last) = parts.last_mut() {
                let _ = write!(last, ", {item}");
            }
        } else {
            parts.push(format!("L{}: {item}", g.level));
            level = Some(g.level);
        }
    }
    parts.join("; ")
}

fn bandwidth(l: &Link) -> String {
    match (l.min_bandwidth_mbs, l.max_bandwidth_mbs) {
        (None, None) => "bandwidth unknown".into(),
        (None, Some(max)) => format!("up to {max} MB/s"),
        (Some(min), None) => format!("at least {min} MB/s"),
        (Some(min), Some(max)) => format!("{min}-{max} MB/s"),
    }
}

/// `XGMI` for a direct link, `PCIE*` through CPUs.
fn link_label(l: &Link) -> String {
    format!("{}{}", l.type_name, if l.indirect { "*" } else { "" })
}

fn memory_total(n: &NodeInfo) -> u64 {
    // The memory of the node: system memory or VRAM banks, not the apertures.
    n.memory.iter().filter(|m| m.heap_type <= 2).map(|m| m.size_bytes).sum()
}

fn name(n: &NodeInfo) -> String {
    match (n.marketing_name.is_empty(), n.amd_name.is_empty()) {
        (false, _) => n.marketing_name.clone(),
        (true, false) => n.amd_name.clone(),
        (true, true) => "(no model name)".into(),
    }
}

fn or_dash<T: ToString>(v: Option<T>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

fn summary(s: &SystemInfo) -> String {
    let head = ["node", "agent", "name", "target", "CUs", "cores", "clock", "memory", "PCI", "NUMA", "gpu_id"];
    let rows: Vec<[String; 11]> = s
        .nodes
        .iter()
        .map(|n| {
            [
                n.id.to_string(),
                n.gpu_index.map_or("CPU".into(), |g| format!("GPU {g}")),
                name(n),
                or_dash(n.gfx_target.clone()),
                or_dash(n.compute_units),
                or_dash(n.cpu_cores),
                format!("{} MHz", n.max_clock_mhz),
                human(memory_total(n)),
                or_dash(n.pci.as_ref().map(|p| p.address.clone())),
                or_dash(n.numa_node),
                or_dash(n.gpu_id),
            ]
        })
        .collect();
    let mut w = head.map(|h| h.chars().count());
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut o = String::new();
    let line = |o: &mut String, cells: &[String]| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            // Numbers right-aligned, text left-aligned.
            if matches!(i, 0 | 4 | 5) {
                let _ = write!(l, "{c:>width$}  ", width = w[i]);
            } else {
                let _ = write!(l, "{c:<width$}  ", width = w[i]);
            }
        }
        o.push_str(l.trim_end());
        o.push('\n');
    };
    line(&mut o, &head.map(String::from));
    for r in &rows {
        line(&mut o, r);
    }
    o
}

fn details(o: &mut String, n: &NodeInfo, raw_caches: bool) {
    let _ = writeln!(o);
    match n.gpu_index {
        Some(g) => {
            let _ = writeln!(
                o,
                "Node {}: GPU {} ({}), GPU index {g}, gpu_id {}",
                n.id,
                or_dash(n.gfx_target.clone()),
                name(n),
                or_dash(n.gpu_id)
            );
            let _ = writeln!(
                o,
                "  compute: {} CUs, {} SIMDs, {} waves/SIMD, wave{}, {} XCC, {} MHz",
                or_dash(n.compute_units),
                n.simds,
                n.waves_per_simd,
                n.wavefront_size,
                n.num_xcc,
                n.max_clock_mhz
            );
            let sdma = match (n.sdma_engines, n.sdma_xgmi_engines) {
                (Some(e), Some(x)) => format!("SDMA engines {e} (+{x} XGMI)"),
                _ => "SDMA engines: not reported".to_string(),
            };
            let queues = match (n.sdma_queues_per_engine, n.cp_queues) {
                (Some(q), Some(c)) => format!("{q} queues per SDMA engine, {c} CP queues"),
                _ => "queue counts: not reported".to_string(),
            };
            let _ = writeln!(o, "  LDS {} KiB, GDS {} KiB; {sdma}; {queues}", n.lds_kib, n.gds_kib);
            let _ = writeln!(
                o,
                "  PCI {}, device {:#06x}, render minor {}, NUMA node {}",
                or_dash(n.pci.as_ref().map(|p| p.address.clone())),
                n.device_id.unwrap_or(0),
                or_dash(n.drm_render_minor),
                or_dash(n.numa_node)
            );
            let _ = writeln!(o, "  UUID {}, hive {}", n.uuid, n.hive_id.clone().unwrap_or_else(|| "none".into()));
            if n.wallclock_hz != 0 {
                let _ = writeln!(o, "  GPU clock counter: {} MHz", n.wallclock_hz / 1_000_000);
            }
        }
        None => {
            let _ = writeln!(o, "Node {}: CPU {}", n.id, name(n));
            let _ = writeln!(o, "  {} cores, {} MHz", or_dash(n.cpu_cores), n.max_clock_mhz);
        }
    }
    for m in &n.memory {
        let clock = if m.max_clock_mhz != 0 { format!(", {}-bit, {} MHz", m.width_bits, m.max_clock_mhz) } else { String::new() };
        let _ = writeln!(o, "  memory: {} {}{clock}", m.heap, human(m.size_bytes));
    }
    if !n.caches.is_empty() {
        let _ = writeln!(o, "  caches: {}", caches_line(&n.caches));
    }
    if raw_caches {
        for c in n.cache_entries.iter().flatten() {
            let _ = writeln!(
                o,
                "    cache L{} {} {} (type bits {:#x}), {}-byte lines, {}-way, processor {:#x}",
                c.level,
                c.ty,
                kib(c.size_kib),
                c.type_bits,
                c.line_bytes,
                c.associativity,
                c.processor_id_low
            );
        }
    }
    for l in &n.links {
        let _ = writeln!(
            o,
            "  link -> node {}: {} weight {}, {} hop{}{}, {}",
            l.to,
            l.type_name,
            l.weight,
            l.hops,
            if l.hops == 1 { "" } else { "s" },
            if l.indirect { " (indirect, through CPUs)" } else { "" },
            bandwidth(l)
        );
    }
}

fn link_to(n: &NodeInfo, to: u32) -> Option<&Link> {
    n.links.iter().filter(|l| l.to == to).min_by_key(|l| l.weight)
}

/// Node × node matrix of the nodes shown: `TYPE/weight`, `*` for indirect links.
fn node_matrix(s: &SystemInfo) -> String {
    let w = 10;
    let mut o = String::from("Link matrix (type/weight; * indirect; \"-\" self, \".\" no link):\n");
    let _ = write!(o, "{:>6}", "");
    for n in &s.nodes {
        let _ = write!(o, "{:>w$}", format!("N{}", n.id));
    }
    o.push('\n');
    for a in &s.nodes {
        let _ = write!(o, "{:>6}", format!("N{}", a.id));
        for b in &s.nodes {
            let cell = if a.id == b.id {
                "-".to_string()
            } else {
                link_to(a, b.id).map_or(".".into(), |l| format!("{}/{}", link_label(l), l.weight))
            };
            let _ = write!(o, "{cell:>w$}");
        }
        o.push('\n');
    }
    o
}

/// GPU × GPU matrix (`TYPE/weight/hops`) and each GPU's NUMA node with its link there.
fn gpu_topology(s: &SystemInfo, compact: bool) -> String {
    let gpus: Vec<&NodeInfo> = s.nodes.iter().filter(|n| n.gpu_index.is_some()).collect();
    let mut o = String::new();
    if gpus.is_empty() {
        return o;
    }
    let gname = |n: &NodeInfo| format!("GPU{}", n.gpu_index.unwrap_or(0));
    if !compact && gpus.len() > 1 && gpus.len() <= MATRIX_MAX {
        let w = 12;
        o.push_str("GPU topology (type/weight/hops; * indirect: through CPUs; \".\" no link):\n");
        let _ = write!(o, "{:>7}", "");
        for g in &gpus {
            let _ = write!(o, "{:>w$}", gname(g));
        }
        o.push('\n');
        for a in &gpus {
            let _ = write!(o, "{:>7}", gname(a));
            for b in &gpus {
                let cell = if a.id == b.id {
                    "-".to_string()
                } else {
                    link_to(a, b.id).map_or(".".into(), |l| format!("{}/{}/{}", link_label(l), l.weight, l.hops))
                };
                let _ = write!(o, "{cell:>w$}");
            }
            o.push('\n');
        }
        o.push_str("GPU NUMA nodes:\n");
        for g in &gpus {
            let _ = write!(o, "  {} (node {}): NUMA node {}", gname(g), g.id, or_dash(g.numa_node));
            if let Some(l) = g.numa_node.and_then(|c| link_to(g, c)) {
                let _ = write!(o, ", {} weight {}, {}", l.type_name, l.weight, bandwidth(l));
            }
            o.push('\n');
        }
        return o;
    }
    // One line per GPU: its peers and CPUs grouped by link class.
    o.push_str("GPU topology, per GPU: links grouped by type/weight/hops (* indirect: through CPUs):\n");
    for g in &gpus {
        let mut classes: Vec<(String, Vec<u32>)> = Vec::new();
        for l in &g.links {
            let key = if l.to_kind == "gpu" {
                format!("{}/{}/{}", link_label(l), l.weight, l.hops)
            } else {
                format!("{}/{}/{} to node {}", link_label(l), l.weight, l.hops, l.to)
            };
            match classes.iter_mut().find(|(k, _)| *k == key) {
                Some((_, v)) => v.push(l.to),
                None => classes.push((key, vec![l.to])),
            }
        }
        let parts: Vec<String> =
            classes.iter().map(|(k, v)| if k.contains(" to node ") { k.clone() } else { format!("{k} ×{}", v.len()) }).collect();
        let _ = writeln!(o, "  {} (node {}): NUMA {}; {}", gname(g), g.id, or_dash(g.numa_node), parts.join(", "));
    }
    o
}

pub fn render(s: &SystemInfo, compact: bool, raw_caches: bool) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{}", s.backend.description);
    let shown = if s.nodes.len() as u32 == s.num_nodes { String::new() } else { format!(", {} shown", s.nodes.len()) };
    let _ = writeln!(
        o,
        "KFD interface {}{}; {} nodes{shown}; platform oem {:#x} id {:#x} rev {}",
        s.kfd_version,
        if s.model { " (software model)" } else { "" },
        s.num_nodes,
        s.platform.oem,
        s.platform.id,
        s.platform.rev
    );
    let _ = writeln!(o);
    o.push_str(&summary(s));
    if compact {
        let _ = writeln!(o);
        o.push_str(&gpu_topology(s, true));
        let _ = writeln!(o, "\nCompact view: per-node details with --full, or for chosen GPUs with --gpu N.");
        return o;
    }
    for n in &s.nodes {
        details(&mut o, n, raw_caches);
    }
    if s.nodes.len() > 1 {
        let _ = writeln!(o);
        o.push_str(&node_matrix(s));
    }
    let topo = gpu_topology(s, false);
    if !topo.is_empty() {
        let _ = writeln!(o);
        o.push_str(&topo);
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes_are_exact() {
        assert_eq!(kib(16), "16 KiB");
        assert_eq!(kib(4096), "4 MiB");
        assert_eq!(kib(14080), "14080 KiB");
    }

    #[test]
    fn cache_groups_are_joined_per_level() {
        let g = |level, ty, size_kib, count| CacheGroup { level, ty, size_kib, count };
        let line = caches_line(&[g(1, "data", 16, 64), g(1, "data", 4, 16), g(1, "instruction", 8, 16), g(2, "unified", 4096, 1)]);
        assert_eq!(line, "L1: 64×16 KiB data, 16×4 KiB data, 16×8 KiB instruction; L2: 1×4 MiB unified");
    }
}
