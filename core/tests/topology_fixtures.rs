//! Snapshot tests against three real KFD topology captures (tests/data/topology). Every
//! expected value was read by hand from the fixture files (or SOURCE.md), not from output.

mod support;

use hsakmt_core::abi::hsakmt as h;
use hsakmt_core::topology::{snapshot, Topology, TopologyConfig};
use support::*;

fn take(kfd: &MemKfd) -> Topology {
    snapshot(kfd, &TopologyConfig::default()).unwrap_or_else(|e| panic!("snapshot failed: {e}"))
}

fn size(m: &h::HsaMemoryProperties) -> u64 {
    // SAFETY: both union members are plain integers covering the same bytes.
    unsafe { m.__anon_union_1.SizeInBytes }
}

// ---------------------------------------------------------------------------------------------
// mi25-gfx900-1gpu: complete 2018 capture, 1 CPU node + 1 Vega10 GPU.

#[test]
fn mi25_system_and_nodes() {
    let kfd = MemKfd::fixture(MI25);
    let t = take(&kfd);
    // generation_id contains "2".
    assert_eq!(t.generation_id, 2);
    let s = t.system;
    assert_eq!({ s.NumNodes }, 2);
    // platform_oem 4777524452235890003 and platform_id 85015745549651, cast to u32 as upstream.
    assert_eq!({ s.PlatformOem }, 4777524452235890003u64 as u32);
    assert_eq!({ s.PlatformId }, 85015745549651u64 as u32);
    assert_eq!({ s.PlatformRev }, 2);
    assert!(t.is_dgpu());
    // Every probe closed its render node again.
    assert!(kfd.open_fds.lock().unwrap().is_empty());
}

#[test]
fn mi25_cpu_node() {
    let t = take(&MemKfd::fixture(MI25));
    let n = &t.nodes[0];
    let p = n.props;
    assert_eq!(n.gpu_id, 0);
    assert_eq!({ p.KFDGpuID }, 0);
    assert_eq!({ p.NumCPUCores }, 20);
    assert_eq!({ p.NumFComputeCores }, 0);
    assert_eq!({ p.MaxEngineClockMhzCCompute }, 3200);
    // A CPU node gets no NumXcc default and no gfx version.
    assert_eq!({ p.NumXcc }, 0);
    assert_eq!(p.EngineId.Value, 0);
    // mem_banks/0: heap_type 0, size_in_bytes 67155521536, width 64, mem_clk_max 2666.
    assert_eq!(n.mem_banks.len(), 1);
    let m = &n.mem_banks[0];
    assert_eq!({ m.HeapType }, h::HSA_HEAPTYPE_SYSTEM);
    assert_eq!(size(m), 67155521536);
    assert_eq!({ m.Width }, 64);
    assert_eq!({ m.MemoryClockMax }, 2666);
    // caches_count 0 and no Cpu tree in the test port: no caches.
    assert_eq!(n.caches.len(), 0);
    assert_eq!({ p.NumCaches }, 0);
    // io_links/0: type 2, node_to 1, weight 20.
    assert_eq!(n.io_links.len(), 1);
    let l = n.io_links[0];
    assert_eq!(({ l.IoLinkType }, { l.NodeFrom }, { l.NodeTo }, { l.Weight }), (2, 0, 1, 20));
    // No /proc/cpuinfo in the test port: no CPU name.
    assert_eq!(wide_name(&p.MarketingName), "");
}

#[test]
fn mi25_gpu_node() {
    let t = take(&MemKfd::fixture(MI25));
    let n = &t.nodes[1];
    let p = n.props;
    assert_eq!(n.gpu_id, 13261);
    assert_eq!({ p.KFDGpuID }, 13261);
    assert_eq!({ p.NumFComputeCores }, 256);
    assert_eq!({ p.NumSIMDPerCU }, 4);
    assert_eq!({ p.WaveFrontSize }, 64);
    assert_eq!({ p.LDSSizeInKB }, 64);
    assert_eq!({ p.MaxWavesPerSIMD }, 10);
    assert_eq!({ p.VendorId }, 0x1002);
    assert_eq!({ p.DeviceId }, 0x6860);
    assert_eq!({ p.LocationId }, 6400);
    assert_eq!({ p.DrmRenderMinor }, 128);
    assert_eq!({ p.MaxEngineClockMhzFCompute }, 1500);
    assert_eq!({ p.LocalMemSize }, 17163091968);
    assert_eq!({ p.Capability.Value }, 8832);
    assert_eq!({ p.FComputeIdLo }, 2147487744);
    // array_count 4 / simd_arrays_per_engine 1; cu_per_simd_array 16.
    assert_eq!({ p.NumShaderBanks }, 4);
    assert_eq!({ p.NumArrays }, 1);
    assert_eq!({ p.NumCUPerArray }, 16);
    // No gfx_target_version in this kernel: the device table maps 0x6860 to Vega10, gfx 9.0.0.
    assert_eq!((p.EngineId.bf_Major(), p.EngineId.bf_Minor(), p.EngineId.bf_Stepping()), (9, 0, 0));
    // fw_version 392 and sdma_fw_version 421 fill the 10-bit uCode fields.
    assert_eq!(p.EngineId.bf_uCode(), 392);
    assert_eq!(p.uCodeEngineVersions.bf_uCodeSDMA(), 421);
    assert_eq!(narrow_name(&p.AMDName), "Vega10");
    assert_eq!(wide_name(&p.MarketingName), "AMD Radeon Instinct MI25");
    assert_eq!({ p.NumXcc }, 1);
    assert_eq!({ p.VGPRSizePerCU }, 0x40000);
    assert_eq!({ p.SGPRSizePerCU }, 0x4000);
    // No hive, no SDMA keys in a 2018 kernel.
    assert_eq!({ p.HiveID }, 0);
    assert_eq!({ p.NumSdmaEngines }, 0);
    // mem_banks/0: heap_type 1 (FB public), 17163091968 bytes, width 2048, mem_clk_max 945.
    assert_eq!(n.mem_banks.len(), 1);
    let m = &n.mem_banks[0];
    assert_eq!({ m.HeapType }, h::HSA_HEAPTYPE_FRAME_BUFFER_PUBLIC);
    assert_eq!(size(m), 17163091968);
    assert_eq!({ m.Width }, 2048);
    assert_eq!({ m.MemoryClockMax }, 945);
    // 96 caches.
    assert_eq!(n.caches.len(), 96);
    assert_eq!({ p.NumCaches }, 96);
    // caches/0: processor_id_low 2147487744, level 1, size 16, type 9, sibling_map 1,0,0,...
    let c = &n.caches[0];
    assert_eq!({ c.ProcessorIdLow }, 2147487744);
    assert_eq!({ c.CacheLevel }, 1);
    assert_eq!({ c.CacheSize }, 16);
    assert_eq!({ c.CacheType.Value }, 9);
    let sib = { c.SiblingMap };
    assert_eq!(&sib[..3], &[1, 0, 0]);
    assert_eq!(sib.iter().sum::<u32>(), 1);
    // caches/95: processor_id_low 2147487804, size 4, sibling_map 1,1,1,1,0,...
    let c = &n.caches[95];
    assert_eq!({ c.ProcessorIdLow }, 2147487804);
    assert_eq!({ c.CacheSize }, 4);
    let sib = { c.SiblingMap };
    assert_eq!(&sib[..5], &[1, 1, 1, 1, 0]);
    // caches/64: type 10 (instruction + HSA CU).
    assert_eq!({ n.caches[64].CacheType.Value }, 10);
    // io_links/0: type 2 to node 0, weight 20. No p2p_links key, so indirect links are
    // considered, but a single GPU next to its own CPU gets none.
    assert_eq!(n.io_links.len(), 1);
    let l = n.io_links[0];
    assert_eq!(({ l.IoLinkType }, { l.NodeFrom }, { l.NodeTo }, { l.Weight }), (2, 1, 0, 20));
}

// ---------------------------------------------------------------------------------------------
// mi300x-gfx942-8gpu-cpx: partial capture (no gpu_id, mem_banks, caches, p2p_links dirs).

#[test]
fn mi300x_tree() {
    let kfd = MemKfd::fixture(MI300X);
    let t = take(&kfd);
    // generation_id contains 80; 65 nodes (2 CPUs and 63 GPU partitions).
    assert_eq!(t.generation_id, 80);
    assert_eq!({ t.system.NumNodes }, 65);
    assert_eq!(t.nodes.len(), 65);
    assert_eq!(t.nodes.iter().filter(|n| n.gpu_id == 0).count(), 2);
    // One render node probed per GPU partition (minors 128..190), all closed again.
    assert_eq!(kfd.render_opens.load(std::sync::atomic::Ordering::SeqCst), 63);
    assert!(kfd.open_fds.lock().unwrap().is_empty());

    let cpu0 = t.nodes[0].props;
    assert_eq!({ cpu0.NumCPUCores }, 96);
    assert_eq!({ cpu0.MaxEngineClockMhzCCompute }, 2750);
    assert_eq!({ t.nodes[1].props.CComputeIdLo }, 128);
    // Node 0: io_links_count 33 + p2p_links_count 31, but p2p_links/ is absent: 33 links.
    assert_eq!(t.nodes[0].io_links.len(), 33);
    assert_eq!({ cpu0.NumIOLinks }, 33);
    // Node 1: io_links_count 32.
    assert_eq!(t.nodes[1].io_links.len(), 32);
    // The CPU-CPU link is HyperTransport (type 1) with weight 32.
    let cc = t.nodes[0].io_links.iter().find(|l| l.NodeTo == 1).expect("CPU0 -> CPU1 link");
    assert_eq!(({ cc.IoLinkType }, { cc.Weight }), (1, 32));
    // mem_banks_count 1 but no mem_banks/ directory: zero banks.
    assert_eq!(t.nodes[0].mem_banks.len(), 0);
    assert_eq!({ cpu0.NumMemoryBanks }, 0);
}

#[test]
fn mi300x_gpu_partition() {
    let t = take(&MemKfd::fixture(MI300X));
    let n = &t.nodes[2];
    let p = n.props;
    assert_eq!(n.gpu_id, synthetic_gpu_id(2));
    assert_eq!({ p.NumFComputeCores }, 152);
    assert_eq!({ p.NumXcc }, 1);
    assert_eq!({ p.DeviceId }, 0x74A1);
    assert_eq!({ p.LocationId }, 1280);
    assert_eq!({ p.DrmRenderMinor }, 128);
    assert_eq!({ p.MaxEngineClockMhzFCompute }, 2100);
    // gfx_target_version 90402; 0x74A1 is not in the pre-gfx11 table, so AMDName is generic.
    assert_eq!((p.EngineId.bf_Major(), p.EngineId.bf_Minor(), p.EngineId.bf_Stepping()), (9, 4, 2));
    assert_eq!(p.EngineId.bf_uCode(), 177);
    assert_eq!(p.uCodeEngineVersions.bf_uCodeSDMA(), 24);
    assert_eq!(narrow_name(&p.AMDName), "GFX090402");
    assert_eq!(wide_name(&p.MarketingName), "AMD Instinct MI300X");
    assert_eq!({ p.VGPRSizePerCU }, 0x80000);
    assert_eq!({ p.HiveID }, 15188982192727901047);
    assert_eq!({ p.UniqueID }, 16404946649897475633);
    assert_eq!({ p.Capability.Value }, 2893521536);
    assert_eq!({ p.DebugProperties.Value }, 1511);
    assert_eq!({ p.NumSdmaEngines }, 2);
    assert_eq!({ p.NumSdmaXgmiEngines }, 0);
    assert_eq!({ p.NumSdmaQueuesPerEngine }, 8);
    assert_eq!({ p.NumCpQueues }, 24);
    assert_eq!({ p.NumGws }, 64);
    assert_eq!({ p.MaxWavesPerSIMD }, 8);
    // array_count 4 / simd_arrays_per_engine 1; cu_per_simd_array 10.
    assert_eq!({ p.NumShaderBanks }, 4);
    assert_eq!({ p.NumCUPerArray }, 10);
    // caches_count 80 but no caches/ directory.
    assert_eq!(n.caches.len(), 0);
    // 63 io_links (NumNodes-1 = 64 slots, so none dropped).
    assert_eq!(n.io_links.len(), 63);
    let l = n.io_links[0];
    assert_eq!(({ l.IoLinkType }, { l.NodeTo }, { l.Weight }), (2, 0, 20));
    assert_eq!(({ l.MaximumBandwidth }, { l.RecSdmaEngIdMask }, { l.Flags.Value }), (64000, 3, 1));
    // io_links/1: XGMI to sibling partition node 3, weight 13, bandwidth 819200.
    let l = n.io_links[1];
    assert_eq!(({ l.IoLinkType }, { l.NodeTo }, { l.Weight }, { l.MinimumBandwidth }), (11, 3, 13, 819200));
    // io_links/8: XGMI to node 10 (another GPU), weight 41.
    let l = n.io_links[8];
    assert_eq!(({ l.IoLinkType }, { l.NodeTo }, { l.Weight }), (11, 10, 41));
    // io_links/62: to the last partition, node 64.
    assert_eq!({ n.io_links[62].NodeTo }, 64);
    // The last node is the eighth GPU's seventh partition, location_id 58630.
    assert_eq!({ t.nodes[64].props.LocationId }, 58630);
}

#[test]
fn mi300x_svm_off_clears_only_that_bit() {
    let kfd = MemKfd::fixture(MI300X);
    let cfg = TopologyConfig { disable_svm: true, ..Default::default() };
    let t = snapshot(&kfd, &cfg).unwrap();
    // capability 2893521536 = 0xAC77A280 has bit 27 (SVMAPISupported) set; clearing it
    // gives 0xA477A280 = 2759303808.
    assert_eq!({ t.nodes[2].props.Capability.Value }, 2759303808);
    assert_eq!(t.nodes[2].props.Capability.bf_SVMAPISupported(), 0);
}

// ---------------------------------------------------------------------------------------------
// mi210-gfx90a-8gpu-2hive: partial capture (no generation_id, system_properties, gpu_id).

#[test]
fn mi210_nodes_and_hives() {
    let t = take(&MemKfd::fixture(MI210));
    assert_eq!(t.nodes.len(), 10);
    for (i, n) in t.nodes.iter().enumerate() {
        let p = n.props;
        if i < 2 {
            assert_eq!(n.gpu_id, 0);
            assert_eq!({ p.NumCPUCores }, 64);
            assert_eq!({ p.MaxEngineClockMhzCCompute }, 2450);
            continue;
        }
        assert_eq!({ p.NumFComputeCores }, 416);
        assert_eq!({ p.DeviceId }, 0x740F);
        // drm_render_minor runs 128..135 over nodes 2..9.
        assert_eq!({ p.DrmRenderMinor }, 126 + i as i32);
        let hive = if i <= 5 { 12609507387757274807 } else { 18091350218769748594 };
        assert_eq!({ p.HiveID }, hive);
    }
    assert_eq!({ t.nodes[1].props.CComputeIdLo }, 64);
}

#[test]
fn mi210_gpu_node() {
    let t = take(&MemKfd::fixture(MI210));
    let n = &t.nodes[2];
    let p = n.props;
    // gfx_target_version 90010 and the device table (0x740F = Aldebaran) agree on 9.0.10.
    assert_eq!((p.EngineId.bf_Major(), p.EngineId.bf_Minor(), p.EngineId.bf_Stepping()), (9, 0, 10));
    assert_eq!(narrow_name(&p.AMDName), "Aldebaran");
    assert_eq!(wide_name(&p.MarketingName), "AMD Instinct MI210");
    assert_eq!({ p.VGPRSizePerCU }, 0x80000);
    assert_eq!(p.EngineId.bf_uCode(), 92);
    assert_eq!(p.uCodeEngineVersions.bf_uCodeSDMA(), 9);
    assert_eq!({ p.Capability.Value }, 746037888);
    assert_eq!({ p.DebugProperties.Value }, 470);
    assert_eq!({ p.NumSdmaEngines }, 2);
    assert_eq!({ p.NumSdmaXgmiEngines }, 3);
    // array_count 8 / simd_arrays_per_engine 1; cu_per_simd_array 14.
    assert_eq!({ p.NumShaderBanks }, 8);
    assert_eq!({ p.NumCUPerArray }, 14);
    assert_eq!({ p.UniqueID }, 1801979520617338022);
    assert_eq!({ p.MaxEngineClockMhzFCompute }, 1700);
    // 4 io_links then 5 p2p_links = 9 links, exactly NumNodes-1.
    assert_eq!(n.io_links.len(), 9);
    assert_eq!({ p.NumIOLinks }, 9);
    let l = n.io_links[0];
    assert_eq!(({ l.IoLinkType }, { l.NodeTo }, { l.Weight }, { l.RecSdmaEngIdMask }), (2, 0, 20, 3));
    assert_eq!(({ l.MinimumBandwidth }, { l.MaximumBandwidth }), (312, 32000));
    for (k, to) in [(1usize, 3u32), (2, 4), (3, 5)] {
        let l = n.io_links[k];
        assert_eq!(({ l.IoLinkType }, { l.NodeTo }, { l.Weight }, { l.RecSdmaEngIdMask }), (11, to, 15, 28));
        assert_eq!({ l.MaximumBandwidth }, 50000);
    }
    // p2p_links/0: the other CPU, PCIe weight 52.
    let l = n.io_links[4];
    assert_eq!(({ l.IoLinkType }, { l.NodeFrom }, { l.NodeTo }, { l.Weight }), (2, 2, 1, 52));
    // p2p_links/1..4: GPUs 6..9 of the other hive, PCIe weight 72, flags 3.
    for (k, to) in [(5usize, 6u32), (6, 7), (7, 8), (8, 9)] {
        let l = n.io_links[k];
        assert_eq!(({ l.IoLinkType }, { l.NodeTo }, { l.Weight }, { l.Flags.Value }), (2, to, 72, 3));
    }
}

#[test]
fn mi210_cpu_links() {
    let t = take(&MemKfd::fixture(MI210));
    // CPU node 0: 5 io_links (CPU 1 and the 4 local GPUs) + 4 p2p_links (remote GPUs).
    let n = &t.nodes[0];
    assert_eq!(n.io_links.len(), 9);
    let cc = n.io_links.iter().find(|l| l.NodeTo == 1).expect("CPU0 -> CPU1");
    assert_eq!(({ cc.IoLinkType }, { cc.Weight }), (1, 32));
    // mem_banks_count 1, caches_count 217 on GPUs, but neither directory was captured.
    assert!(t.nodes.iter().all(|n| n.mem_banks.is_empty()));
    assert!(t.nodes[2].caches.is_empty());
}

#[test]
fn mi210_hidden_gpu_renumbers_nodes() {
    // The render node of sysfs node 3 (minor 129) cannot be opened: node 3 is skipped, later
    // nodes move down one user id, and links to node 3 disappear.
    let mut kfd = MemKfd::fixture(MI210);
    kfd.render_errors.insert(129, hsakmt_core::Errno::ENOENT);
    let t = take(&kfd);
    assert_eq!(t.nodes.len(), 9);
    assert_eq!({ t.system.NumNodes }, 9);
    assert_eq!(t.nodes[3].sysfs_id, 4);
    // Node 2 loses its XGMI link to sysfs node 3; its link to sysfs node 4 now says user 3.
    let n = &t.nodes[2];
    assert_eq!(n.io_links.len(), 8);
    let l = n.io_links[1];
    assert_eq!(({ l.IoLinkType }, { l.NodeTo }), (11, 3));
    // A link from user node 3 (sysfs 4) reports NodeFrom 3.
    assert!(t.nodes[3].io_links.iter().all(|l| l.NodeFrom == 3));
}

#[test]
fn mi210_gpu_id_eperm_hides_node() {
    // A cgroup-hidden GPU: reading its gpu_id fails with EPERM.
    let mut kfd = MemKfd::fixture(MI210);
    kfd.errors.insert("nodes/9/gpu_id".into(), hsakmt_core::Errno::EPERM);
    let t = take(&kfd);
    assert_eq!(t.nodes.len(), 9);
    assert!(t.nodes.iter().all(|n| n.sysfs_id != 9));
    // Node 2's p2p link to sysfs node 9 is gone.
    assert_eq!(t.nodes[2].io_links.len(), 8);
}
