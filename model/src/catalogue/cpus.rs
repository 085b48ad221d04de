//! The catalogue systems' own host CPUs: the `/proc/cpuinfo` and `/sys/devices/system/cpu`
//! files a real machine of that kind shows, so that the thunk's CPU-node data (model names by
//! APIC id, upstream's sysfs cache fallback) describes the catalogue's CPUs instead of the
//! machine the model happens to run on.
//!
//! Upstream libhsakmt takes a CPU node's name from the `/proc/cpuinfo` entry whose `apicid`
//! equals the node's `cpu_core_id_base`, and, because amdkfd reports no caches for CPU nodes
//! (`caches_count 0`), builds its caches from `cpuN/cache/indexM/` of the CPUs of that NUMA
//! node. Both read the host in upstream's model mode too. The part tables below give what
//! those files say on the real parts (`CATALOGUE.md` names the sources).
//!
//! Numbering, as Linux does it on these machines: one NUMA node per socket (NPS1); logical
//! CPUs are numbered thread-major (all sockets' first threads, then the SMT siblings:
//! `cpu = thread * total_cores + socket * cores + core`); APIC ids are the socket's base plus
//! `core * threads + thread` (contiguous; real Intel dies can leave gaps).

use crate::vfs::Tree;
use std::fmt::Write;

/// Where `/proc/cpuinfo` sits in the tree [`host_tree`] builds.
pub const CPUINFO: &str = "proc/cpuinfo";
/// Where `/sys/devices/system/cpu` sits in the tree [`host_tree`] builds.
pub const SYS_CPU: &str = "sys/devices/system/cpu";

/// A cache's `type` file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheType {
    Data,
    Instruction,
    Unified,
}

impl CacheType {
    fn sysfs(self) -> &'static str {
        match self {
            CacheType::Data => "Data",
            CacheType::Instruction => "Instruction",
            CacheType::Unified => "Unified",
        }
    }
}

/// One cache level of a part, as `cpuN/cache/indexM/` describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuCache {
    pub level: u32,
    pub kind: CacheType,
    pub size_kib: u32,
    pub ways: u32,
    pub line: u32,
    /// Physical cores sharing one instance (a core's SMT threads always share it); 0 means
    /// every core of the socket.
    pub cores_sharing: u32,
}

const fn cache(level: u32, kind: CacheType, size_kib: u32, ways: u32, cores_sharing: u32) -> CpuCache {
    CpuCache { level, kind, size_kib, ways, line: 64, cores_sharing }
}

/// A CPU model as /proc/cpuinfo and sysfs show it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuPart {
    /// `model name`.
    pub name: &'static str,
    /// `vendor_id`.
    pub vendor: &'static str,
    pub family: u32,
    pub model: u32,
    pub stepping: u32,
    /// Physical cores per socket.
    pub cores: u32,
    /// SMT threads per core as configured (1: SMT off).
    pub threads_per_core: u32,
    /// `index0..` in the kernel's order: L1d, L1i, L2, L3.
    pub caches: &'static [CpuCache],
}

impl CpuPart {
    /// Logical CPUs per socket: what amdkfd prints as the node's `cpu_cores_count`.
    pub const fn logical_cpus(&self) -> u32 {
        self.cores * self.threads_per_core
    }
}

use CacheType::{Data, Instruction, Unified};

/// AMD EPYC 9654 (Zen 4 "Genoa", family 19h model 11h): 96 cores in 12 CCDs of 8, each CCD
/// with 32 MiB of L3; 1 MiB L2 per core. SMT off, as the MI300X capture's 96 CPUs per node with
/// APIC ids from 128 on the second socket show.
pub const EPYC_9654: CpuPart = CpuPart {
    name: "AMD EPYC 9654 96-Core Processor",
    vendor: "AuthenticAMD",
    family: 25,
    model: 17,
    stepping: 1,
    cores: 96,
    threads_per_core: 1,
    caches: &[
        cache(1, Data, 32, 8, 1),
        cache(1, Instruction, 32, 8, 1),
        cache(2, Unified, 1024, 8, 1),
        cache(3, Unified, 32 * 1024, 16, 8),
    ],
};

/// AMD EPYC 7763 (Zen 3 "Milan", family 19h model 01h): 64 cores in 8 CCDs of 8, each CCD with
/// 32 MiB of L3; 512 KiB L2 per core. SMT off, as the MI210 capture's 64 CPUs per node with
/// APIC ids from 64 on the second socket show; its 2450 MHz is the 7763's base clock.
pub const EPYC_7763: CpuPart = CpuPart {
    name: "AMD EPYC 7763 64-Core Processor",
    vendor: "AuthenticAMD",
    family: 25,
    model: 1,
    stepping: 1,
    cores: 64,
    threads_per_core: 1,
    caches: &[cache(1, Data, 32, 8, 1), cache(1, Instruction, 32, 8, 1), cache(2, Unified, 512, 8, 1), cache(3, Unified, 32 * 1024, 16, 8)],
};

/// AMD Ryzen 9 7950X (Zen 4 "Raphael", family 19h model 61h): 16 cores, SMT on (32 CPUs), in 2
/// CCDs of 8 with 32 MiB of L3 each; 1 MiB L2 per core; 5.7 GHz boost.
pub const RYZEN_7950X: CpuPart = CpuPart {
    name: "AMD Ryzen 9 7950X 16-Core Processor",
    vendor: "AuthenticAMD",
    family: 25,
    model: 97,
    stepping: 2,
    cores: 16,
    threads_per_core: 2,
    caches: &[
        cache(1, Data, 32, 8, 1),
        cache(1, Instruction, 32, 8, 1),
        cache(2, Unified, 1024, 8, 1),
        cache(3, Unified, 32 * 1024, 16, 8),
    ],
};

/// Intel Xeon Gold 5115 (Skylake-SP, family 6 model 55h stepping 4, 2017): 10 cores with
/// Hyper-Threading (20 CPUs, the MI25 capture's count), 2.4 GHz base and 3.2 GHz turbo (the
/// capture's 3200 MHz); 1 MiB 16-way L2 per core, 13.75 MiB 11-way L3 shared by the socket.
pub const XEON_GOLD_5115: CpuPart = CpuPart {
    name: "Intel(R) Xeon(R) Gold 5115 CPU @ 2.40GHz",
    vendor: "GenuineIntel",
    family: 6,
    model: 85,
    stepping: 4,
    cores: 10,
    threads_per_core: 2,
    caches: &[cache(1, Data, 32, 8, 1), cache(1, Instruction, 32, 8, 1), cache(2, Unified, 1024, 16, 1), cache(3, Unified, 14080, 11, 0)],
};

/// One socket of a catalogue system: its part and the APIC id of its first CPU (the KFD CPU
/// node's `cpu_core_id_base`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Socket {
    pub part: &'static CpuPart,
    pub apic_base: u32,
}

/// One logical CPU.
#[derive(Clone, Copy, Debug)]
struct Logical {
    socket: usize,
    core: u32,
    apicid: u32,
}

fn logical_cpus(sockets: &[Socket]) -> Vec<Logical> {
    let max_threads = sockets.iter().map(|s| s.part.threads_per_core).max().unwrap_or(1);
    let mut out = Vec::new();
    for thread in 0..max_threads {
        for (socket, s) in sockets.iter().enumerate().filter(|(_, s)| thread < s.part.threads_per_core) {
            for core in 0..s.part.cores {
                out.push(Logical { socket, core, apicid: s.apic_base + core * s.part.threads_per_core + thread });
            }
        }
    }
    out
}

/// `shared_cpu_list`: ascending CPU numbers with runs folded ("0-7,32-39").
fn cpu_list(cpus: &[u32]) -> String {
    let mut s = String::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        if !s.is_empty() {
            s.push(',');
        }
        if start == end {
            let _ = write!(s, "{start}");
        } else {
            let _ = write!(s, "{start}-{end}");
        }
        i += 1;
    }
    s
}

/// `shared_cpu_map`: the kernel's `%*pb` of an `nbits`-bit mask, 32-bit hex words most
/// significant first, the first one only as wide as its bits need.
fn cpu_map(cpus: &[u32], nbits: u32) -> String {
    let words = nbits.div_ceil(32).max(1);
    let mut s = String::new();
    for w in (0..words).rev() {
        let mut v = 0u32;
        for &c in cpus {
            if c / 32 == w {
                v |= 1 << (c % 32);
            }
        }
        let digits = if w == words - 1 && !nbits.is_multiple_of(32) { (nbits % 32).div_ceil(4) as usize } else { 8 };
        if !s.is_empty() {
            s.push(',');
        }
        let _ = write!(s, "{v:0digits$x}");
    }
    s
}

/// The `/proc/cpuinfo` and `/sys/devices/system/cpu` files of a machine with these sockets, at
/// [`CPUINFO`] and [`SYS_CPU`].
pub fn host_tree(sockets: &[Socket]) -> Tree {
    let cpus = logical_cpus(sockets);
    let n = cpus.len() as u32;
    let mut t = Tree::new();

    let mut info = String::new();
    for (num, c) in cpus.iter().enumerate() {
        let p = sockets[c.socket].part;
        let _ = write!(
            info,
            "processor\t: {num}\nvendor_id\t: {}\ncpu family\t: {}\nmodel\t\t: {}\nmodel name\t: {}\nstepping\t: {}\n\
             physical id\t: {}\nsiblings\t: {}\ncore id\t\t: {}\ncpu cores\t: {}\napicid\t\t: {}\ninitial apicid\t: {}\n\n",
            p.vendor,
            p.family,
            p.model,
            p.name,
            p.stepping,
            c.socket,
            p.logical_cpus(),
            c.core,
            p.cores,
            c.apicid,
            c.apicid,
        );
    }
    t.add_file(CPUINFO, info);

    let all = if n == 0 { String::new() } else { cpu_list(&(0..n).collect::<Vec<_>>()) };
    for f in ["online", "possible", "present"] {
        t.add_file(&format!("{SYS_CPU}/{f}"), format!("{all}\n"));
    }
    // Instances of each (socket, cache index) are numbered across the system, as `id` is.
    for (num, c) in cpus.iter().enumerate() {
        let s = &sockets[c.socket];
        let base = format!("{SYS_CPU}/cpu{num}");
        t.add_dir(&format!("{base}/node{}", c.socket));
        t.add_file(&format!("{base}/topology/physical_package_id"), format!("{}\n", c.socket));
        t.add_file(&format!("{base}/topology/core_id"), format!("{}\n", c.core));
        for (idx, k) in s.part.caches.iter().enumerate() {
            let sharing = if k.cores_sharing == 0 { s.part.cores } else { k.cores_sharing };
            let instance = c.core / sharing;
            let mut members: Vec<u32> = cpus
                .iter()
                .enumerate()
                .filter(|(_, o)| o.socket == c.socket && o.core / sharing == instance)
                .map(|(m, _)| m as u32)
                .collect();
            members.sort_unstable();
            let id: u32 = sockets[..c.socket].iter().map(|o| o.part.cores.div_ceil(sharing)).sum::<u32>() + instance;
            let sets = (k.size_kib * 1024) / (k.ways * k.line);
            let d = format!("{base}/cache/index{idx}");
            t.add_file(&format!("{d}/id"), format!("{id}\n"));
            t.add_file(&format!("{d}/level"), format!("{}\n", k.level));
            t.add_file(&format!("{d}/type"), format!("{}\n", k.kind.sysfs()));
            t.add_file(&format!("{d}/size"), format!("{}K\n", k.size_kib));
            t.add_file(&format!("{d}/coherency_line_size"), format!("{}\n", k.line));
            t.add_file(&format!("{d}/ways_of_associativity"), format!("{}\n", k.ways));
            t.add_file(&format!("{d}/number_of_sets"), format!("{sets}\n"));
            t.add_file(&format!("{d}/physical_line_partition"), "1\n");
            t.add_file(&format!("{d}/shared_cpu_list"), format!("{}\n", cpu_list(&members)));
            t.add_file(&format!("{d}/shared_cpu_map"), format!("{}\n", cpu_map(&members, n)));
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_maps_as_the_kernel_prints_them() {
        assert_eq!(cpu_list(&[0, 1, 2, 3, 16, 17, 18, 19]), "0-3,16-19");
        assert_eq!(cpu_list(&[3, 19]), "3,19");
        assert_eq!(cpu_list(&[5]), "5");
        assert_eq!(cpu_map(&[0, 1], 20), "00003");
        assert_eq!(cpu_map(&[0, 40], 64), "00000100,00000001");
        assert_eq!(cpu_map(&[191], 192), "80000000,00000000,00000000,00000000,00000000,00000000");
    }

    #[test]
    fn smt_siblings_and_apic_ids() {
        let t = host_tree(&[Socket { part: &RYZEN_7950X, apic_base: 0 }]);
        // cpu3 and cpu19 are the two threads of core 3 (APIC 6 and 7).
        assert_eq!(t.read_str(&format!("{SYS_CPU}/cpu3/cache/index0/shared_cpu_list")).unwrap(), "3,19\n");
        assert_eq!(t.read_str(&format!("{SYS_CPU}/cpu19/cache/index2/shared_cpu_list")).unwrap(), "3,19\n");
        // The second CCD's L3: cores 8-15 and their siblings.
        assert_eq!(t.read_str(&format!("{SYS_CPU}/cpu9/cache/index3/shared_cpu_list")).unwrap(), "8-15,24-31\n");
        assert_eq!(t.read_str(&format!("{SYS_CPU}/cpu9/cache/index3/number_of_sets")).unwrap(), "32768\n");
        let info = t.read_str(CPUINFO).unwrap();
        assert!(info.contains("processor\t: 19\nvendor_id\t: AuthenticAMD\n"));
        assert!(info.contains("core id\t\t: 3\ncpu cores\t: 16\napicid\t\t: 7\n"));
    }

    #[test]
    fn two_sockets_each_own_numa_node() {
        let t = host_tree(&[Socket { part: &EPYC_7763, apic_base: 0 }, Socket { part: &EPYC_7763, apic_base: 64 }]);
        assert!(t.is_dir(&format!("{SYS_CPU}/cpu63/node0")));
        assert!(t.is_dir(&format!("{SYS_CPU}/cpu64/node1")));
        assert!(!t.is_dir(&format!("{SYS_CPU}/cpu64/node0")));
        assert_eq!(t.read_str(&format!("{SYS_CPU}/cpu64/cache/index3/shared_cpu_list")).unwrap(), "64-71\n");
        assert_eq!(t.read_str(&format!("{SYS_CPU}/cpu64/cache/index3/id")).unwrap(), "8\n");
        assert!(t.read_str(CPUINFO).unwrap().contains("processor\t: 64\n"));
        assert!(t.read_str(CPUINFO).unwrap().contains("apicid\t\t: 64\n"));
        assert_eq!(t.read_str(&format!("{SYS_CPU}/possible")).unwrap(), "0-127\n");
    }
}
