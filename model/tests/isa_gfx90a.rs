//! The model GPU runs gfx90a machine code (model/ISA.md): OpenCL kernels compiled here with
//! clang-19 for gfx90a, loaded from their ELF code objects and dispatched through an AQL queue
//! on the mi210 model, checked against the CPU; the decoder checked against llvm-objdump. The
//! tests are tests/support/isa.rs's, shared with gfx942 and gfx1100. Needs the Debian packages
//! clang-19, lld-19 and llvm-19 (.ci/packages).

mod support;

support::isa::isa_tests!(support::isa::GFX90A; packed_f32_arithmetic_matches_the_cpu,
    pm4_dispatch_direct_runs_machine_code_from_the_sh_registers,
    cross_lane_ds_and_64_bit_lds_atomics_match_the_cpu,
    dpp_and_sdwa_match_the_cpu);
