//! The built-in topology catalogue: whole KFD sysfs trees generated from small per-system tables
//! plus the kernel's rules. `CATALOGUE.md` (next to Cargo.toml) says, entry by entry, which values
//! were read off a real machine (the fixtures) and which were filled in.

#![allow(clippy::needless_range_loop)] // node tables are indexed by node number

pub mod caches;
pub mod cpus;
pub mod sysfs;

use crate::vfs::Tree;
use caches::{kind, CacheKind, CuLayout, DATA, INST};
use cpus::{CpuPart, Socket, EPYC_7763, EPYC_9654, RYZEN_7950X, XEON_GOLD_5115};
use std::io;
use std::path::Path;
use sysfs::{Era, Link, MemBank, NodeFiles, NodeProps, System};

/// Catalogue entry used when a catalogue is asked for without a name.
pub const DEFAULT_ENTRY: &str = "mi300x";

/// KFD GPU clock-counter frequency of every catalogue GPU (the usual 100 MHz reference clock).
pub const GPU_COUNTER_HZ: u64 = 100_000_000;

const NAMES: &[&str] = &["mi300x", "mi300x-cpx", "mi210", "rx7900xtx", "mi25", "mi308x-cpx"];

/// Names of the built-in topologies, default first.
pub fn catalogue_names() -> &'static [&'static str] {
    NAMES
}

/// A short description of a catalogue entry.
pub fn describe(name: &str) -> Option<&'static str> {
    Some(match name {
        "mi300x" => "2x AMD EPYC 9654 + 8x Instinct MI300X (gfx942) in SPX mode, one XGMI hive (10 nodes)",
        "mi300x-cpx" => "2x AMD EPYC 9654 + 8x Instinct MI300X (gfx942) in CPX mode as the real capture: 63 partitions (65 nodes)",
        "mi210" => "2x AMD EPYC 7763 + 8x Instinct MI210 (gfx90a) in two XGMI hives of 4 (10 nodes)",
        "rx7900xtx" => "1x AMD Ryzen 9 7950X + 1x Radeon RX 7900 XTX (gfx1100), no XGMI (2 nodes)",
        "mi25" => "1x Intel Xeon Gold 5115 + 1x Radeon Instinct MI25 (gfx900), 2018 kernel (2 nodes)",
        "mi308x-cpx" => "2x AMD EPYC 9654 + 8x Instinct MI308X-like (gfx942, 4 XCCs) in CPX mode: 32 partitions (34 nodes)",
        _ => return None,
    })
}

/// Generate a catalogue entry's sysfs tree.
pub fn build(name: &str) -> Option<Tree> {
    let sys = match name {
        "mi300x" => mi300x_spx(),
        "mi300x-cpx" => gfx942_cpx(&MI300X_CPX),
        "mi308x-cpx" => gfx942_cpx(&MI308X_CPX),
        "mi210" => mi210(),
        "rx7900xtx" => rx7900xtx(),
        "mi25" => mi25(),
        _ => return None,
    };
    Some(sys.into_tree())
}

/// The host CPUs of a catalogue entry, one per CPU node in node order.
pub fn sockets(name: &str) -> Option<Vec<Socket>> {
    let two = |part: &'static CpuPart, second: u32| vec![Socket { part, apic_base: 0 }, Socket { part, apic_base: second }];
    Some(match name {
        // Real (fixtures): cpu_core_id_base 0 and 128 (MI300X), 0 and 64 (MI210).
        "mi300x" | "mi300x-cpx" | "mi308x-cpx" => two(&EPYC_9654, 128),
        "mi210" => two(&EPYC_7763, 64),
        "rx7900xtx" => vec![Socket { part: &RYZEN_7950X, apic_base: 0 }],
        "mi25" => vec![Socket { part: &XEON_GOLD_5115, apic_base: 0 }],
        _ => return None,
    })
}

/// A catalogue entry's `/proc/cpuinfo` and `/sys/devices/system/cpu` files (at
/// [`cpus::CPUINFO`] and [`cpus::SYS_CPU`]): what the thunk reads for CPU node names and caches.
pub fn host_cpus(name: &str) -> Option<Tree> {
    sockets(name).map(|s| cpus::host_tree(&s))
}

/// Write a catalogue entry below `dir` in sysfs layout (usable as `HSA_MODEL_TOPOLOGY`).
pub fn export(name: &str, dir: &Path) -> io::Result<()> {
    let tree = build(name).ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no catalogue entry named {name:?}")))?;
    tree.export(dir)
}

// ------------------------------------------------------------------------------------------
// Shared rules

/// First GPU processor id the kernel hands out (kfd_crat.c `gpu_processor_id_low`).
const GPU_PROCESSOR_ID_BASE: u64 = 0x8000_1000;

/// A gpu_id in the kernel's style: a non-zero 16-bit hash of the device's identity, unique in
/// the system (the kernel hashes location, device and unique ids and retries on collisions).
fn gpu_id(used: &mut Vec<u32>, location_id: u64, device_id: u64, unique_id: u64, node: usize) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for v in [location_id, device_id, unique_id, node as u64] {
        for b in v.to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    let mut id = ((h ^ (h >> 16) ^ (h >> 32) ^ (h >> 48)) & 0xffff) as u32;
    while id == 0 || used.contains(&id) {
        id = (id + 1) & 0xffff;
    }
    used.push(id);
    id
}

fn link(link_type: u64, from: usize, to: usize, weight: u64, bw: (u64, u64), sdma_mask: u64, flags: u64) -> Link {
    Link { link_type, node_from: from as u64, node_to: to as u64, weight, min_bandwidth: bw.0, max_bandwidth: bw.1, sdma_mask, flags }
}

const LINK_HT: u64 = 1;
const LINK_PCIE: u64 = 2;
const LINK_XGMI: u64 = 11;

struct Cpu {
    socket: Socket,
    mem_bytes: u64,
    mem_width: u64,
    mem_clk: u64,
}

/// The CPU nodes of catalogue entry `name`, with each socket's memory (bytes, width, MT/s).
fn cpu_nodes(name: &str, mem: (u64, u64, u64), clk_ccompute: u64) -> Vec<NodeFiles> {
    let (mem_bytes, mem_width, mem_clk) = mem;
    sockets(name)
        .unwrap_or_default()
        .into_iter()
        .map(|socket| cpu_node(&Cpu { socket, mem_bytes, mem_width, mem_clk }, clk_ccompute))
        .collect()
}

fn cpu_node(c: &Cpu, clk_ccompute: u64) -> NodeFiles {
    NodeFiles {
        gpu_id: 0,
        name: String::new(),
        props: NodeProps {
            // amdkfd: the CPUs of the node's NUMA node (SMT threads count) and the APIC id of
            // its first CPU.
            cpu_cores_count: u64::from(c.socket.part.logical_cpus()),
            cpu_core_id_base: u64::from(c.socket.apic_base),
            max_engine_clk_ccompute: clk_ccompute,
            ..NodeProps::default()
        },
        mem_banks: vec![MemBank { heap_type: 0, size_in_bytes: c.mem_bytes, flags: 0, width: c.mem_width, mem_clk_max: c.mem_clk }],
        used_memory: None,
        caches: Vec::new(),
        io_links: Vec::new(),
        p2p_links: Vec::new(),
    }
}

fn gpu_bank(bytes: u64, width: u64, clk: u64) -> MemBank {
    MemBank {
        heap_type: 1, // HSA_MEM_HEAP_TYPE_FB_PUBLIC: large BAR
        size_in_bytes: bytes,
        flags: 0,
        width,
        mem_clk_max: clk,
    }
}

fn all_cus(_: u32, _: u32, _: u32) -> u32 {
    u32::MAX
}

fn layout(props: &NodeProps, num_xcc: u32, active: fn(u32, u32, u32) -> u32) -> CuLayout {
    let arrays_per_xcc = props.array_count as u32 / num_xcc;
    let sa_per_se = props.simd_arrays_per_engine as u32;
    let slots = props.cu_per_simd_array as u32;
    CuLayout { num_xcc, se_per_xcc: arrays_per_xcc / sa_per_se, sa_per_se, cu_slots: slots, active }
}

// ------------------------------------------------------------------------------------------
// MI300X (gfx942)

/// Real: the mi300x-gfx942-8gpu-cpx fixture's system_properties (Supermicro OEM ids).
const SMCI_OEM: u64 = 4_777_524_452_235_890_003;
const SMCI_ID: u64 = 85_015_745_549_651;

/// Real (fixture): PCI bus of each of the 8 MI300X, `location_id >> 8`.
const MI300X_BUS: [u64; 8] = [0x05, 0x27, 0x47, 0x65, 0x85, 0xa7, 0xc7, 0xe5];
/// Real (fixture): `unique_id` of each MI300X.
const MI300X_UNIQUE: [u64; 8] = [
    16_404_946_649_897_475_633,
    2_472_748_907_779_728_154,
    15_565_237_874_008_425_757,
    12_035_684_874_187_068_538,
    15_304_831_566_906_821_053,
    13_644_590_235_195_043_050,
    13_326_531_576_914_550_249,
    15_931_900_197_903_628_278,
];
/// Real (fixture): the hive.
const MI300X_HIVE: u64 = 15_188_982_192_727_901_047;
/// Filled: MI300X VRAM as amdgpu reports it (192 GiB HBM3 less firmware reservations).
const MI300X_VRAM: u64 = 205_822_885_888;

/// The two EPYC sockets (96 CPUs each from APIC ids 0 and 128 as the fixture says; the part
/// and the memory, 768 GiB DDR5-4800 per socket, are filled).
fn mi300x_cpus() -> Vec<NodeFiles> {
    cpu_nodes("mi300x", (768 << 30, 64, 4800), 2750)
}

/// gfx942 per-XCC layout: 4 shader engines x 1 array x 10 CU slots, 38 active (10,10,9,9).
fn mi300x_active(_xcc: u32, se: u32, _sa: u32) -> u32 {
    if se < 2 {
        0x3ff
    } else {
        0x1ff
    }
}

/// gfx942 caches: TCP 16K/CU, SQC I 64K and K$ 16K per 2 CUs, L2 4M per XCC, MALL 256M.
const MI300X_CACHES: &[CacheKind] = &[
    kind(16, 1, DATA, 1, 64),
    kind(64, 1, INST, 2, 64),
    kind(16, 1, DATA, 2, 64),
    kind(4096, 2, DATA, 10, 128),
    kind(262_144, 3, DATA, 10, 64),
];

fn mi300x_gpu_props(num_xcc: u64) -> NodeProps {
    NodeProps {
        simd_count: 152 * num_xcc,
        max_waves_per_simd: 8,
        lds_size_in_kb: 64,
        num_gws: 64,
        wave_front_size: 64,
        array_count: 4 * num_xcc,
        simd_arrays_per_engine: 1,
        cu_per_simd_array: 10,
        simd_per_cu: 4,
        max_slots_scratch_cu: 32,
        gfx_target_version: 90402,
        vendor_id: 4098,
        device_id: 0x74a1,
        hive_id: MI300X_HIVE,
        num_sdma_engines: 2,
        num_sdma_xgmi_engines: if num_xcc == 8 { 14 } else { 0 },
        num_sdma_queues_per_engine: 8,
        num_cp_queues: 24,
        max_engine_clk_fcompute: 2100,
        fw_version: 177,
        capability: 2_893_521_536,
        debug_prop: 1511,
        sdma_fw_version: 24,
        num_xcc,
        max_engine_clk_ccompute: 2750,
        ..NodeProps::default()
    }
}

/// 8 GPUs in SPX mode: derived from the CPX capture (same host, same kernel).
fn mi300x_spx() -> System {
    let mut nodes = mi300x_cpus();
    let mut ids = Vec::new();
    for g in 0..8usize {
        let node = 2 + g;
        let mut props = mi300x_gpu_props(8);
        props.location_id = MI300X_BUS[g] << 8;
        props.drm_render_minor = 128 + 8 * g as u64;
        props.unique_id = MI300X_UNIQUE[g];
        props.simd_id_base = GPU_PROCESSOR_ID_BASE + 320 * g as u64;
        let caches = caches::generate(MI300X_CACHES, &layout(&props, 8, mi300x_active), props.simd_id_base);
        nodes.push(NodeFiles {
            gpu_id: gpu_id(&mut ids, props.location_id, props.device_id, props.unique_id, node),
            name: "ip discovery".into(),
            props,
            mem_banks: vec![gpu_bank(MI300X_VRAM, 8192, 1300)],
            used_memory: Some(0),
            caches,
            io_links: Vec::new(),
            p2p_links: Vec::new(),
        });
    }
    let home = |g: usize| g / 4;
    // CPU links: the other socket, then the local GPUs; p2p to the remote GPUs.
    for c in 0..2usize {
        nodes[c].io_links.push(link(LINK_HT, c, 1 - c, 32, (0, 0), 0, 0));
        for g in 0..8 {
            if home(g) == c {
                nodes[c].io_links.push(link(LINK_PCIE, c, 2 + g, 20, (0, 64000), 3, 3));
            } else {
                nodes[c].p2p_links.push(link(LINK_PCIE, c, 2 + g, 52, (0, 0), 0, 3));
            }
        }
    }
    for g in 0..8usize {
        let n = 2 + g;
        let mut io = vec![link(LINK_PCIE, n, home(g), 20, (0, 64000), 3, 1)];
        for p in (0..8).filter(|&p| p != g) {
            io.push(link(LINK_XGMI, n, 2 + p, 41, (0, 0), 3, 1));
        }
        nodes[n].io_links = io;
        nodes[n].p2p_links = vec![link(LINK_PCIE, n, 1 - home(g), 52, (0, 0), 0, 1)];
    }
    System { era: Era::Kfd2025, generation_id: 80, platform_oem: SMCI_OEM, platform_id: SMCI_ID, platform_rev: 2, nodes }
}

/// One gfx942 system in CPX mode (one XCC per partition) on the MI300X host.
struct Gfx942Cpx {
    /// Partitions of each of the 8 GPUs.
    parts: [usize; 8],
    device_id: u64,
    /// SIMDs of one partition (4 per active CU).
    simd_count: u64,
    /// Active CUs of one shader engine's array: (xcc, se, sa) -> CU mask.
    active: fn(u32, u32, u32) -> u32,
    /// VRAM of one partition.
    vram: u64,
}

/// The CPX capture: the eighth GPU shows 7 partitions.
const MI300X_CPX: Gfx942Cpx =
    Gfx942Cpx { parts: [8, 8, 8, 8, 8, 8, 8, 7], device_id: 0x74a1, simd_count: 152, active: mi300x_active, vram: MI300X_VRAM / 8 };

/// Filled (no capture): an MI308X-like GPU, 4 XCCs of 20 active CUs (5 per shader engine) and
/// the MI300X's 192 GiB, on the same host: 8 x 4 partitions, the 34-node system upstream's
/// per-call costs were measured on.
const MI308X_CPX: Gfx942Cpx = Gfx942Cpx { parts: [4; 8], device_id: 0x74a2, simd_count: 80, active: mi308x_active, vram: MI300X_VRAM / 4 };

fn mi308x_active(_xcc: u32, _se: u32, _sa: u32) -> u32 {
    0x1f
}

/// A CPX system, node for node: for MI300X the capture's properties and io_links exactly;
/// gpu_id, name, mem_banks, caches and p2p_links are filled.
fn gfx942_cpx(spec: &Gfx942Cpx) -> System {
    let mut nodes = mi300x_cpus();
    let mut gpu_of = Vec::new(); // node -> GPU index
    let mut ids = Vec::new();
    for (g, &parts) in spec.parts.iter().enumerate() {
        for p in 0..parts {
            let node = nodes.len();
            let idx = (node - 2) as u64;
            let mut props = mi300x_gpu_props(1);
            props.device_id = spec.device_id;
            props.simd_count = spec.simd_count;
            props.location_id = (MI300X_BUS[g] << 8) | p as u64;
            props.drm_render_minor = 128 + idx;
            props.unique_id = MI300X_UNIQUE[g];
            // The first partition's CU ids start one whole device (320 CU slots) in: the kernel
            // numbered the device once in SPX mode before it was partitioned.
            props.simd_id_base = GPU_PROCESSOR_ID_BASE + 320 + 40 * idx;
            let caches = caches::generate(MI300X_CACHES, &layout(&props, 1, spec.active), props.simd_id_base);
            nodes.push(NodeFiles {
                gpu_id: gpu_id(&mut ids, props.location_id, props.device_id, props.unique_id, node),
                name: "ip discovery".into(),
                props,
                mem_banks: vec![gpu_bank(spec.vram, 8192, 1300)],
                used_memory: Some(0),
                caches,
                io_links: Vec::new(),
                p2p_links: Vec::new(),
            });
            gpu_of.push(g);
        }
    }
    let n_nodes = nodes.len();
    let home = |g: usize| g / 4;
    for c in 0..2usize {
        nodes[c].io_links.push(link(LINK_HT, c, 1 - c, 32, (0, 0), 0, 0));
        for n in 2..n_nodes {
            if home(gpu_of[n - 2]) == c {
                nodes[c].io_links.push(link(LINK_PCIE, c, n, 20, (0, 64000), 3, 3));
            } else {
                nodes[c].p2p_links.push(link(LINK_PCIE, c, n, 52, (0, 0), 0, 3));
            }
        }
    }
    for n in 2..n_nodes {
        let g = gpu_of[n - 2];
        let mut io = vec![link(LINK_PCIE, n, home(g), 20, (0, 64000), 3, 1)];
        for m in (2..n_nodes).filter(|&m| m != n) {
            if gpu_of[m - 2] == g {
                io.push(link(LINK_XGMI, n, m, 13, (819_200, 819_200), 3, 1));
            } else {
                io.push(link(LINK_XGMI, n, m, 41, (0, 0), 3, 1));
            }
        }
        nodes[n].io_links = io;
        nodes[n].p2p_links = vec![link(LINK_PCIE, n, 1 - home(g), 52, (0, 0), 0, 1)];
    }
    System { era: Era::Kfd2025, generation_id: 80, platform_oem: SMCI_OEM, platform_id: SMCI_ID, platform_rev: 2, nodes }
}

// ------------------------------------------------------------------------------------------
// MI210 (gfx90a)

/// Real (fixture): location_id of GPU nodes 2..9.
const MI210_LOCATION: [u64; 8] = [25344, 17152, 768, 9728, 58112, 49920, 33536, 41728];
/// Real (fixture): unique_id of GPU nodes 2..9.
const MI210_UNIQUE: [u64; 8] = [
    1_801_979_520_617_338_022,
    5_847_760_019_078_012_339,
    10_645_161_697_164_847_644,
    4_847_253_685_048_710_349,
    12_585_367_064_092_601_175,
    11_779_194_899_033_552_202,
    17_888_023_871_577_450_191,
    14_073_402_507_705_256_557,
];
/// Real (fixture): the two hives.
const MI210_HIVE: [u64; 2] = [12_609_507_387_757_274_807, 18_091_350_218_769_748_594];
/// Filled: MI210 VRAM as amdgpu reports it (64 GiB HBM2e).
const MI210_VRAM: u64 = 68_702_699_520;

/// gfx90a: 8 shader engines x 1 array x 14 CU slots, 13 active (104 CUs).
fn mi210_active(_: u32, _: u32, _: u32) -> u32 {
    0x1fff
}

/// gfx90a (kernel `aldebaran_cache_info`): TCP 16K/CU, SQC I 32K and K$ 16K per 2 CUs, L2 8M.
const MI210_CACHES: &[CacheKind] =
    &[kind(16, 1, DATA, 1, 64), kind(32, 1, INST, 2, 64), kind(16, 1, DATA, 2, 64), kind(8192, 2, DATA, 14, 128)];

fn mi210() -> System {
    let mut nodes = cpu_nodes("mi210", (512 << 30, 64, 3200), 2450);
    let mut ids = Vec::new();
    for g in 0..8usize {
        let node = 2 + g;
        let props = NodeProps {
            simd_count: 416,
            simd_id_base: GPU_PROCESSOR_ID_BASE + 112 * g as u64,
            max_waves_per_simd: 8,
            lds_size_in_kb: 64,
            num_gws: 64,
            wave_front_size: 64,
            array_count: 8,
            simd_arrays_per_engine: 1,
            cu_per_simd_array: 14,
            simd_per_cu: 4,
            max_slots_scratch_cu: 32,
            gfx_target_version: 90010,
            vendor_id: 4098,
            device_id: 0x740f,
            location_id: MI210_LOCATION[g],
            drm_render_minor: 128 + g as u64,
            hive_id: MI210_HIVE[g / 4],
            num_sdma_engines: 2,
            num_sdma_xgmi_engines: 3,
            num_sdma_queues_per_engine: 8,
            num_cp_queues: 24,
            max_engine_clk_fcompute: 1700,
            fw_version: 92,
            capability: 746_037_888,
            debug_prop: 470,
            sdma_fw_version: 9,
            unique_id: MI210_UNIQUE[g],
            num_xcc: 1,
            max_engine_clk_ccompute: 2450,
            ..NodeProps::default()
        };
        let caches = caches::generate(MI210_CACHES, &layout(&props, 1, mi210_active), props.simd_id_base);
        nodes.push(NodeFiles {
            gpu_id: gpu_id(&mut ids, props.location_id, props.device_id, props.unique_id, node),
            name: "aldebaran".into(),
            props,
            mem_banks: vec![gpu_bank(MI210_VRAM, 4096, 1600)],
            used_memory: Some(0),
            caches,
            io_links: Vec::new(),
            p2p_links: Vec::new(),
        });
    }
    let hive = |g: usize| g / 4; // hive == home socket
    for c in 0..2usize {
        nodes[c].io_links.push(link(LINK_HT, c, 1 - c, 32, (0, 0), 0, 0));
        for g in 0..8 {
            if hive(g) == c {
                nodes[c].io_links.push(link(LINK_PCIE, c, 2 + g, 20, (312, 32000), 3, 3));
            } else {
                nodes[c].p2p_links.push(link(LINK_PCIE, c, 2 + g, 52, (0, 0), 0, 3));
            }
        }
    }
    for g in 0..8usize {
        let n = 2 + g;
        let mut io = vec![link(LINK_PCIE, n, hive(g), 20, (312, 32000), 3, 1)];
        let mut p2p = vec![link(LINK_PCIE, n, 1 - hive(g), 52, (0, 0), 0, 1)];
        for p in (0..8).filter(|&p| p != g) {
            if hive(p) == hive(g) {
                io.push(link(LINK_XGMI, n, 2 + p, 15, (50000, 50000), 28, 1));
            } else {
                // As captured: only the second hive's GPUs report an SDMA mask on these.
                let mask = if hive(g) == 1 { 3 } else { 0 };
                p2p.push(link(LINK_PCIE, n, 2 + p, 72, (0, 0), mask, 3));
            }
        }
        nodes[n].io_links = io;
        nodes[n].p2p_links = p2p;
    }
    System { era: Era::Kfd2025, generation_id: 1, platform_oem: SMCI_OEM, platform_id: SMCI_ID, platform_rev: 2, nodes }
}

// ------------------------------------------------------------------------------------------
// Radeon RX 7900 XTX (gfx1100, Navi 31)

/// gfx1100 caches: TCP 32K/CU, SQC I 32K and K$ 16K per WGP (2 CUs), GL1 256K per shader
/// array, L2 6M, Infinity Cache 96M.
const NAVI31_CACHES: &[CacheKind] = &[
    kind(32, 1, DATA, 1, 128),
    kind(32, 1, INST, 2, 64),
    kind(16, 1, DATA, 2, 64),
    kind(256, 1, DATA, 8, 128),
    kind(6144, 2, DATA, 8, 128),
    kind(98_304, 3, DATA, 8, 64),
];

fn rx7900xtx() -> System {
    let clk_c = 5700;
    let mut nodes = cpu_nodes("rx7900xtx", (64 << 30, 64, 6000), clk_c);
    let props = NodeProps {
        simd_count: 192,
        simd_id_base: GPU_PROCESSOR_ID_BASE,
        max_waves_per_simd: 16,
        lds_size_in_kb: 64,
        num_gws: 64,
        wave_front_size: 32,
        array_count: 12,
        simd_arrays_per_engine: 2,
        cu_per_simd_array: 8,
        simd_per_cu: 2,
        max_slots_scratch_cu: 32,
        gfx_target_version: 110000,
        vendor_id: 4098,
        device_id: 0x744c,
        location_id: 0x0300,
        drm_render_minor: 128,
        num_sdma_engines: 2,
        num_sdma_queues_per_engine: 6,
        num_cp_queues: 8,
        max_engine_clk_fcompute: 2482,
        fw_version: 2140,
        capability: 671_588_992,
        debug_prop: 1495,
        sdma_fw_version: 20,
        unique_id: 11_673_270_660_693_242_239,
        num_xcc: 1,
        max_engine_clk_ccompute: clk_c,
        ..NodeProps::default()
    };
    let caches = caches::generate(NAVI31_CACHES, &layout(&props, 1, all_cus), props.simd_id_base);
    let mut ids = Vec::new();
    nodes.push(NodeFiles {
        gpu_id: gpu_id(&mut ids, props.location_id, props.device_id, props.unique_id, 1),
        name: "ip discovery".into(),
        props,
        mem_banks: vec![gpu_bank(25_753_026_560, 384, 1250)],
        used_memory: Some(0),
        caches,
        io_links: vec![link(LINK_PCIE, 1, 0, 20, (312, 32000), 3, 1)],
        p2p_links: Vec::new(),
    });
    nodes[0].io_links = vec![link(LINK_PCIE, 0, 1, 20, (312, 32000), 3, 3)];
    System { era: Era::Kfd2025, generation_id: 1, platform_oem: 0, platform_id: 0, platform_rev: 0, nodes }
}

// ------------------------------------------------------------------------------------------
// Radeon Instinct MI25 (gfx900), 2018 kernel: the complete capture, regenerated.

/// The 2018 kernel's gfx9 table (the one it used for Vega10): TCP 16K/CU, SQC I 8K and
/// K$ 4K per 4 CUs, no L2 entry.
const MI25_CACHES: &[CacheKind] = &[kind(16, 1, DATA, 1, 0), kind(8, 1, INST, 4, 0), kind(4, 1, DATA, 4, 0)];

fn mi25() -> System {
    let mut nodes = cpu_nodes("mi25", (67_155_521_536, 64, 2666), 3200);
    let props = NodeProps {
        simd_count: 256,
        simd_id_base: GPU_PROCESSOR_ID_BASE,
        max_waves_per_simd: 10,
        lds_size_in_kb: 64,
        wave_front_size: 64,
        array_count: 4,
        simd_arrays_per_engine: 1,
        cu_per_simd_array: 16,
        simd_per_cu: 4,
        max_slots_scratch_cu: 32,
        vendor_id: 4098,
        device_id: 0x6860,
        location_id: 6400,
        drm_render_minor: 128,
        max_engine_clk_fcompute: 1500,
        local_mem_size: 17_163_091_968,
        fw_version: 392,
        capability: 8832,
        sdma_fw_version: 421,
        max_engine_clk_ccompute: 3200,
        ..NodeProps::default()
    };
    let caches = caches::generate(MI25_CACHES, &layout(&props, 1, all_cus), props.simd_id_base);
    nodes.push(NodeFiles {
        gpu_id: 13261,
        name: String::new(),
        props,
        mem_banks: vec![gpu_bank(17_163_091_968, 2048, 945)],
        used_memory: Some(14_102_528),
        caches,
        io_links: vec![link(LINK_PCIE, 1, 0, 20, (0, 0), 0, 0)],
        p2p_links: Vec::new(),
    });
    nodes[0].io_links = vec![link(LINK_PCIE, 0, 1, 20, (0, 0), 0, 0)];
    System { era: Era::Kfd2018, generation_id: 2, platform_oem: SMCI_OEM, platform_id: SMCI_ID, platform_rev: 2, nodes }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_builds() {
        for name in catalogue_names() {
            let t = build(name).unwrap();
            assert!(t.count_numbered("nodes").unwrap() >= 2, "{name}");
            assert!(describe(name).is_some());
        }
        assert!(build("nope").is_none());
        assert_eq!(catalogue_names()[0], DEFAULT_ENTRY);
    }
}
