// Hand-written gfx1100 kernels for model/tests/isa_gfx1100.rs (assembled by llvm-mc-19).
.amdgcn_target "amdgcn-amd-amdhsa--gfx1100"
.text

// VOPD issues both halves together: a swap of v0 and v1 in one instruction.
// out[l] = (l + 100, l) as two dwords.
.globl swap
.p2align 8
.type swap,@function
swap:
  s_load_b64 s[0:1], s[0:1], null
  v_lshlrev_b32_e32 v2, 3, v0
  v_add_nc_u32_e32 v1, 100, v0
  v_dual_mov_b32 v0, v1 :: v_dual_mov_b32 v1, v0
  s_waitcnt lgkmcnt(0)
  global_store_b64 v2, v[0:1], s[0:1]
  s_endpgm

// 16 private bytes per work-item: a scratch store at offset 4 reads back; one at offset 16
// (past the work-item's private memory) is dropped and reads 0. out[l] = (0x1234 + l, 0).
.globl scratch_edge
.p2align 8
.type scratch_edge,@function
scratch_edge:
  s_load_b64 s[0:1], s[0:1], null
  v_lshlrev_b32_e32 v3, 3, v0
  v_add_nc_u32_e32 v1, 0x1234, v0
  v_mov_b32_e32 v2, 0x5678
  scratch_store_b32 off, v1, off offset:4
  scratch_store_b32 off, v2, off offset:16
  scratch_load_b32 v1, off, off offset:4
  scratch_load_b32 v2, off, off offset:16
  s_waitcnt vmcnt(0) lgkmcnt(0)
  global_store_b64 v3, v[1:2], s[0:1]
  s_endpgm

// s_code_end is padding, not an instruction to run.
.globl code_end
.p2align 8
.type code_end,@function
code_end:
  s_code_end

.rodata
.p2align 6
.amdhsa_kernel swap
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_next_free_vgpr 4
  .amdhsa_next_free_sgpr 8
  .amdhsa_wavefront_size32 1
.end_amdhsa_kernel
.p2align 6
.amdhsa_kernel scratch_edge
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_private_segment_fixed_size 16
  .amdhsa_enable_private_segment 1
  .amdhsa_next_free_vgpr 4
  .amdhsa_next_free_sgpr 8
  .amdhsa_wavefront_size32 1
.end_amdhsa_kernel
.p2align 6
.amdhsa_kernel code_end
  .amdhsa_next_free_vgpr 1
  .amdhsa_next_free_sgpr 1
  .amdhsa_wavefront_size32 1
.end_amdhsa_kernel
