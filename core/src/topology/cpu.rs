//! CPU-side data: `/proc/cpuinfo` (model names, APIC ids) and the CPU cache fallback that
//! builds a CPU node's caches from `/sys/devices/system/cpu/cpuN/cache/indexM/*`.
//!
//! Upstream ignores every failure here (missing files leave fields at 0, a missing tree gives
//! 0 caches), so nothing in this file can fail the snapshot.

use super::props::{c_str, is_c_space, parse_single_u32, scan_u32};
use super::reader::Reader;
use crate::abi::hsakmt::HsaCacheProperties;
use crate::port::SysTree;
use crate::status::Errno;
use alloc::vec;
use alloc::vec::Vec;
use zerocopy::FromZeros;

/// Longest name kept from /proc/cpuinfo (upstream's 64-byte buffer with its NUL).
const NAME_MAX: usize = 63;
/// Upper bound on CPUs considered, so a hostile or broken tree cannot make us loop forever.
const MAX_CPUS: u32 = 8192;
/// Upper bound on cache index directories probed per CPU.
const MAX_CACHE_INDEXES: u32 = 64;
/// /proc/cpuinfo grows with the CPU count (about 1.5 KiB per CPU on x86); this is the most
/// we are willing to buffer.
const CPUINFO_MAX: usize = 16 << 20;
/// HSA_CPU_SIBLINGS: size of HsaCacheProperties::SiblingMap.
const SIBLINGS: u32 = 256;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Vendor {
    Unknown,
    Intel,
    Amd,
    Power,
}

/// One `processor` block of /proc/cpuinfo.
#[derive(Clone, Debug)]
pub(crate) struct CpuEntry {
    pub(crate) proc_num: u32,
    /// 0 when the kernel prints no `apicid` (non-x86), as upstream's zeroed array has it.
    pub(crate) apicid: u32,
    pub(crate) model: heapless::Vec<u8, NAME_MAX>,
}

/// The parts of /proc/cpuinfo upstream uses.
#[derive(Clone, Debug)]
pub(crate) struct CpuInfo {
    pub(crate) entries: Vec<CpuEntry>,
    pub(crate) vendor: Vendor,
}

impl CpuInfo {
    /// Read /proc/cpuinfo through the port. Unavailable or unreadable means no entries: CPU
    /// names stay empty, as upstream leaves them when no apicid matches.
    pub(crate) fn read(r: &Reader<'_>) -> CpuInfo {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match r.kfd.read_file(SysTree::CpuInfo, "", &mut buf) {
                Ok(n) => {
                    let n = n.min(buf.len());
                    return CpuInfo::parse(buf.get(..n).unwrap_or(&[]));
                }
                Err(Errno(Errno::ERANGE)) if buf.len() < CPUINFO_MAX => {
                    let len = buf.len() * 2;
                    buf.resize(len, 0);
                }
                Err(_) => return CpuInfo { entries: Vec::new(), vendor: Vendor::Unknown },
            }
        }
    }

    /// Parse the text of /proc/cpuinfo: `key<blanks>: value` lines, a `processor` line
    /// starting each block.
    pub(crate) fn parse(text: &[u8]) -> CpuInfo {
        let mut info = CpuInfo { entries: Vec::new(), vendor: Vendor::Unknown };
        for line in c_str(text).split(|&b| b == b'\n') {
            let Some(colon) = line.iter().position(|&b| b == b':') else { continue };
            let key = trim_end(line.get(..colon).unwrap_or(&[]));
            let value = trim_start(line.get(colon + 1..).unwrap_or(&[]));
            match key {
                b"processor" => {
                    let Some(n) = parse_single_u32(value) else { continue };
                    if info.entries.len() >= MAX_CPUS as usize {
                        // Upstream stops at its get_nprocs()-sized array, too.
                        break;
                    }
                    info.entries.push(CpuEntry { proc_num: n, apicid: 0, model: heapless::Vec::new() });
                }
                b"vendor_id" => {
                    info.vendor = match value {
                        b"GenuineIntel" => Vendor::Intel,
                        b"AuthenticAMD" => Vendor::Amd,
                        _ => info.vendor,
                    };
                }
                b"model name" => {
                    if let Some(e) = info.entries.last_mut() {
                        set_name(&mut e.model, value);
                    }
                }
                // POWER has no "model name"; its "cpu" line ("POWER9, altivec supported") is
                // the name, cut at the first comma.
                b"cpu" => {
                    info.vendor = Vendor::Power;
                    if let Some(e) = info.entries.last_mut() {
                        let cut = value.iter().position(|&b| b == b',').unwrap_or(value.len());
                        set_name(&mut e.model, value.get(..cut).unwrap_or(value));
                    }
                }
                b"apicid" => {
                    if let (Some(e), Some(id)) = (info.entries.last_mut(), parse_single_u32(value)) {
                        e.apicid = id;
                    }
                }
                _ => {}
            }
        }
        info
    }

    /// The model name of the CPU whose APIC id is `apicid` (a CPU node's cpu_core_id_base).
    pub(crate) fn model_name_for_apic(&self, apicid: u32) -> Option<&[u8]> {
        self.entries.iter().find(|e| e.apicid == apicid).map(|e| e.model.as_slice())
    }

    /// APIC id of processor `proc_num`. Without /proc/cpuinfo at all we fall back to the
    /// processor number, the only identity left.
    fn apicid_of(&self, proc_num: u32) -> u32 {
        if self.entries.is_empty() {
            return proc_num;
        }
        self.entries.iter().find(|e| e.proc_num == proc_num).map_or(0, |e| e.apicid)
    }

    fn is_power9(&self) -> bool {
        self.vendor == Vendor::Power && self.entries.first().is_some_and(|e| e.model.as_slice() == b"POWER9")
    }
}

fn set_name(dst: &mut heapless::Vec<u8, NAME_MAX>, value: &[u8]) {
    dst.clear();
    for &b in value.iter().take(NAME_MAX) {
        if b == b'\r' {
            break;
        }
        let _ = dst.push(b);
    }
}

fn trim_end(s: &[u8]) -> &[u8] {
    let n = s.iter().rposition(|&b| !is_c_space(b)).map_or(0, |i| i + 1);
    s.get(..n).unwrap_or(&[])
}

fn trim_start(s: &[u8]) -> &[u8] {
    let n = s.iter().position(|&b| !is_c_space(b)).unwrap_or(s.len());
    s.get(n..).unwrap_or(&[])
}

/// Text of a small sysfs attribute up to the first line end (upstream's `fgets` + strip).
fn first_line(data: &[u8]) -> &[u8] {
    let data = c_str(data);
    let n = data.iter().position(|&b| b == b'\n' || b == b'\r').unwrap_or(data.len());
    data.get(..n).unwrap_or(&[])
}

/// `fscanf("%u%c")` on a cache `size` file: "32K" is 32 KiB in bytes. An unknown unit (or
/// none) keeps the number as is, as upstream does.
fn parse_cache_size(data: &[u8]) -> u32 {
    let data = c_str(data);
    let Some((v, pos)) = scan_u32(data, 0) else { return 0 };
    match data.get(pos) {
        Some(b'K') => v << 10,
        Some(b'M') => v << 20,
        Some(b'G') => v << 30,
        _ => v,
    }
}

/// The CPU numbers the Cpu tree describes: the processors of /proc/cpuinfo, or, without it,
/// `cpu0`, `cpu1`, ... for as long as they exist.
fn cpu_numbers(r: &mut Reader<'_>, info: &CpuInfo) -> Vec<u32> {
    let mut cpus: Vec<u32> = info.entries.iter().map(|e| e.proc_num).collect();
    if cpus.is_empty() {
        for n in 0..MAX_CPUS {
            if !r.dir_exists(SysTree::Cpu, format_args!("cpu{n}")).unwrap_or(false) {
                break;
            }
            cpus.push(n);
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// The caches of CPU node `node` (its user index, which upstream assumes is the NUMA node),
/// built from the Cpu tree as upstream's fallback does when KFD reports none (§4.2).
pub(crate) fn cpu_node_caches(r: &mut Reader<'_>, info: &CpuInfo, node: u32) -> Vec<HsaCacheProperties> {
    let mut out = Vec::new();
    let power9 = info.is_power9();
    // POWER9 numbers its NUMA nodes in steps of 8.
    let numa = if power9 { node.saturating_mul(8) } else { node };
    let cpus = cpu_numbers(r, info);
    // cpuN/node<M> exists for the NUMA node M holding cpuN (a symlink to the node directory).
    let mut members: Vec<u32> = Vec::new();
    for &c in &cpus {
        if r.dir_exists(SysTree::Cpu, format_args!("cpu{c}/node{numa}")).unwrap_or(false) {
            members.push(c);
        }
    }
    if members.is_empty() {
        // Without NUMA information upstream uses every CPU for node 0 and none for others.
        if node != 0 {
            return out;
        }
        members = cpus;
    }
    for c in members {
        for idx in 0..MAX_CACHE_INDEXES {
            if !r.dir_exists(SysTree::Cpu, format_args!("cpu{c}/cache/index{idx}")).unwrap_or(false) {
                break;
            }
            if let Some(cache) = cpu_cache(r, info, c, idx, power9) {
                out.push(cache);
            }
        }
    }
    out
}

/// Read a small attribute of `cpu<c>/cache/index<idx>/` and apply `f` to its bytes.
fn attr<T>(r: &mut Reader<'_>, c: u32, idx: u32, name: &str, f: impl FnOnce(&[u8]) -> T) -> Option<T> {
    r.read_at(SysTree::Cpu, format_args!("cpu{c}/cache/index{idx}/{name}")).ok().map(|file| f(file.data))
}

/// One cache index of one CPU, or `None` when another CPU owns (lists) it.
fn cpu_cache(r: &mut Reader<'_>, info: &CpuInfo, c: u32, idx: u32, power9: bool) -> Option<HsaCacheProperties> {
    let mut cache = HsaCacheProperties::new_zeroed();
    if power9 {
        // SMT4: only every fourth thread lists the caches of its core.
        if c & 3 != 0 {
            return None;
        }
    } else {
        // A shared cache is listed once, under the lowest-numbered CPU sharing it: the first
        // number of shared_cpu_list ("0-7" and "0,8" both start with 0). Without that file the
        // lowest CPU of shared_cpu_map tells the same.
        let owner = match attr(r, c, idx, "shared_cpu_list", parse_single_u32).flatten() {
            Some(o) => Some(o),
            None => attr(r, c, idx, "shared_cpu_map", |d| fill_siblings_from_cpumap(first_line(d), info, &mut [0u32; 256])).flatten(),
        };
        if owner.is_some_and(|o| o != c) {
            return None;
        }
        cache.ProcessorIdLow = info.apicid_of(c);
    }
    cache.CacheLevel = attr(r, c, idx, "level", parse_single_u32).flatten().unwrap_or(0);
    if let Some(kind) = attr(r, c, idx, "type", |d| match first_line(d) {
        b"Data" => 1,
        b"Instruction" => 2,
        b"Unified" => 3,
        _ => 0,
    }) {
        cache.CacheType.Value = kind;
    }
    cache.CacheType.set_bf_CPU(1);
    // Bytes here, where KFD's own cache files give KiB: upstream's units differ too.
    cache.CacheSize = attr(r, c, idx, "size", parse_cache_size).unwrap_or(0);
    cache.CacheLineSize = attr(r, c, idx, "coherency_line_size", parse_single_u32).flatten().unwrap_or(0);
    cache.CacheAssociativity = attr(r, c, idx, "ways_of_associativity", parse_single_u32).flatten().unwrap_or(0);
    cache.CacheLinesPerTag = attr(r, c, idx, "physical_line_partition", parse_single_u32).flatten().unwrap_or(0);
    let mut map = [0u32; 256];
    if attr(r, c, idx, "shared_cpu_map", |d| fill_siblings_from_cpumap(first_line(d), info, &mut map)).is_some() {
        cache.SiblingMap = map;
    }
    Some(cache)
}

/// Decode a `shared_cpu_map` (comma-separated 32-bit hex words, most significant first) into
/// a sibling map indexed by APIC id, as upstream's `cpumap_to_cpu_ci` does. Returns the lowest
/// CPU number in the map, used when `shared_cpu_list` is unreadable.
fn fill_siblings_from_cpumap(text: &[u8], info: &CpuInfo, map: &mut [u32; 256]) -> Option<u32> {
    // Upstream sizes the word count from the length: 8 hex digits and a comma per word,
    // (len + 8) / 9.
    let words = text.len().div_ceil(9);
    let mut lowest: Option<u32> = None;
    let tokens = text.split(|&b| b == b',').filter(|t| !t.is_empty());
    for (k, token) in tokens.take(words).enumerate() {
        let w = (words - 1 - k) as u32;
        let mask = parse_hex_word(token);
        for bit in 0..32u32 {
            if mask & (1 << bit) == 0 {
                continue;
            }
            let proc_num = w.saturating_mul(32).saturating_add(bit);
            lowest = Some(lowest.map_or(proc_num, |l| l.min(proc_num)));
            let apic = info.apicid_of(proc_num);
            if apic < SIBLINGS {
                if let Some(slot) = map.get_mut(apic as usize) {
                    *slot = 1;
                }
            }
        }
    }
    lowest
}

/// `strtol(s, NULL, 16)` narrowed to 32 bits: leading blanks, optional "0x", hex digits.
fn parse_hex_word(s: &[u8]) -> u32 {
    let s = trim_start(s);
    let s = s.strip_prefix(b"0x").or_else(|| s.strip_prefix(b"0X")).unwrap_or(s);
    let mut v: u64 = 0;
    for &b in s {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => break,
        };
        v = v.saturating_mul(16).saturating_add(u64::from(d));
    }
    v.min(u64::from(u32::MAX)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuinfo() {
        let t = b"processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7763 64-Core Processor\napicid\t\t: 0\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 7763 64-Core Processor\napicid\t\t: 2\n";
        let i = CpuInfo::parse(t);
        assert_eq!(i.vendor, Vendor::Amd);
        assert_eq!(i.entries.len(), 2);
        assert_eq!(i.apicid_of(1), 2);
        assert_eq!(i.model_name_for_apic(2), Some(&b"AMD EPYC 7763 64-Core Processor"[..]));
    }

    #[test]
    fn cpumap() {
        let i = CpuInfo::parse(b"");
        let mut m = [0u32; 256];
        assert_eq!(fill_siblings_from_cpumap(b"00000001,00000300", &i, &mut m), Some(8));
        assert_eq!((m[8], m[9], m[32], m[0]), (1, 1, 1, 0));
        assert_eq!(parse_cache_size(b"32K\n"), 32768);
        assert_eq!(parse_cache_size(b"1024K"), 1 << 20);
        assert_eq!(parse_cache_size(b"7\n"), 7);
    }
}
