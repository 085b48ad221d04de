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
use support::isa::{args, setup, DATA, GFX942};

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
