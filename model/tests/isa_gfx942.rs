//! The model GPU runs gfx942 machine code (model/ISA.md): the kernels of the gfx90a tests
//! compiled here with clang-19 for gfx942 (architected flat scratch: `scratch_*` for private
//! arrays), loaded from their ELF code objects and dispatched through an AQL queue on the
//! mi300x model, checked against the CPU; the decoder checked against llvm-objdump
//! --mcpu=gfx942. The tests are tests/support/isa.rs's, shared with gfx90a and gfx1100. Needs
//! the Debian packages clang-19, lld-19 and llvm-19 (.ci/packages).

mod support;

support::isa::isa_tests!(support::isa::GFX942; packed_f32_arithmetic_matches_the_cpu,
    pm4_dispatch_direct_runs_machine_code_from_the_sh_registers,
    cross_lane_ds_and_64_bit_lds_atomics_match_the_cpu,
    dpp_and_sdwa_match_the_cpu);

use hsakmt_core::abi::kfd::EC_QUEUE_PACKET_DISPATCH_CODE_INVALID;
use hsakmt_core::packet::aql::KernelDispatch;
use hsakmt_model::engine::{QueueError, RunEnd};
use support::isa::{args, code_object_of, fill_with_partial_workgroups, objdump, setup, setup_of, setup_with, DATA, GFX942};

#[test]
fn a_descriptor_asking_for_a_private_segment_buffer_is_refused_with_architected_flat_scratch() {
    let f = setup(&GFX942);
    let kd = f.kd("fill");
    let mut d = [0u8; 64];
    f.m.gpu_read(f.g, kd, &mut d).unwrap();
    // ENABLE_SGPR_PRIVATE_SEGMENT_BUFFER, with USER_SGPR_COUNT (rsrc2 bits 1..6) raised by its 4
    // SGPRs: a descriptor gfx90a would launch, refused only for architected flat scratch.
    d[56] |= 1;
    let rsrc2 = u32::from_le_bytes(d[52..56].try_into().unwrap());
    let count = (rsrc2 >> 1) & 0x1f;
    d[52..56].copy_from_slice(&(rsrc2 & !(0x1f << 1) | (count + 4) << 1).to_le_bytes());
    f.m.gpu_write(f.g, kd, &d).unwrap();
    let (end, p) = f.dispatch(KernelDispatch::new(kd, 64, 64), &args(&[DATA, 7 | (64 << 32)]));
    assert_eq!(end, RunEnd::Stopped);
    match p.error {
        Some(QueueError::BadPacket { at: 0, what, ec: EC_QUEUE_PACKET_DISPATCH_CODE_INVALID }) => {
            assert!(what.contains("architected"), "{what}")
        }
        e => panic!("{e:?}"),
    }
    assert_eq!(f.words(DATA, 1), [0], "no wave ran (fill would have stored 7)");
}

#[test]
fn kernels_with_preloaded_kernargs_run_from_past_the_prologue() {
    // clang preloads the first kernarg dwords into user SGPRs when asked; its 256-byte
    // compatibility prologue is `s_trap 2`, so running it would stop the queue.
    let f = setup_with(&GFX942, &["-mllvm", "-amdgpu-kernarg-preload-count=4"]);
    let mut d = [0u8; 64];
    f.m.gpu_read(f.g, f.kd("vadd"), &mut d).unwrap();
    let preload = u16::from_le_bytes([d[58], d[59]]);
    assert_eq!(preload & 0x7f, 7, "vadd preloads a, b, c and n (7 dwords) at offset 0: {preload:#x}");
    let n = 1000u32;
    let (a, b, c) = (DATA, DATA + 0x10000, DATA + 0x20000);
    let av: Vec<f32> = (0..n).map(|i| i as f32 * 0.25 - 7.0).collect();
    let bv: Vec<f32> = (0..n).map(|i| (i % 17) as f32 * 1.5).collect();
    f.m.gpu_write(f.g, a, &av.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    f.m.gpu_write(f.g, b, &bv.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    let (end, p) = f.dispatch(KernelDispatch::new(f.kd("vadd"), 1024, 256), &args(&[a, b, c, u64::from(n)]));
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    let got = f.words(c, n as usize + 1);
    for i in 0..n as usize {
        assert_eq!(got[i], (av[i] + bv[i]).to_bits(), "c[{i}]");
    }
    assert_eq!(got[n as usize], 0, "the work-items past n stored nothing");
    fill_with_partial_workgroups(&f);
}

#[test]
fn fences_write_back_and_invalidate_nothing_and_go_on() {
    // tests/isa/fence.cl: agent- and system-scope fences (buffer_wbl2, buffer_inv) between
    // stores; the model has no caches, so every store lands and the kernel runs on.
    let f = setup_of(&GFX942, "fence.cl", &[]);
    let listing = objdump(&GFX942, &code_object_of(&GFX942, "fence.cl", &[]).1);
    for want in ["buffer_wbl2", "buffer_inv"] {
        assert!(listing.iter().any(|(t, _)| t.starts_with(want)), "clang-19 no longer emits {want} for fence.cl");
    }
    let input: Vec<u32> = (0..8 * 64).map(|k| if k % 8 == 4 { 1000 + k } else { 0 }).collect();
    f.m.gpu_write(f.g, DATA, &input.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    let (end, p) = f.dispatch(KernelDispatch::new(f.kd("fence"), 64, 64), &args(&[DATA]));
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    let got = f.words(DATA, 8 * 64);
    for i in 0..64u32 {
        let at = 8 * i as usize;
        assert_eq!(got[at..at + 4], [1, 2, 3, input[at + 4] + i], "work-item {i}");
    }
}
