// Kernels of the ISA bench (benches/benches/isa.rs), gfx90a, assembled with llvm-mc-19 and linked
// with ld.lld-19 when the bench starts.
//
// valu: VALU-bound. Each work-item runs ITER (a kernarg) iterations of 32 dependent-free
// v_fma_f32 over four accumulators, then stores one of them (so the result is observable).
// vadd: memory-bound. c[i] = a[i] + b[i] for a grid that is a multiple of 256 (no bounds check).
.amdgcn_target "amdgcn-amd-amdhsa--gfx90a"
.text

.p2align 8
.globl valu
.type valu,@function
valu:
  s_load_dword s4, s[0:1], 0x0          // ITER
  s_load_dwordx2 s[6:7], s[0:1], 0x8    // out
  s_lshl_b32 s3, s2, 8
  v_add_u32 v0, s3, v0
  v_lshlrev_b32 v0, 2, v0
  v_mov_b32 v1, 1.0
  v_mov_b32 v2, 0.5
  v_mov_b32 v3, 0.25
  v_mov_b32 v4, 2.0
  v_mov_b32 v5, 0x3f7fff00
  s_waitcnt lgkmcnt(0)
.Lloop:
  .rept 8
  v_fma_f32 v1, v1, v5, v3
  v_fma_f32 v2, v2, v5, v3
  v_fma_f32 v3, v3, v5, v1
  v_fma_f32 v4, v4, v5, v2
  .endr
  s_sub_u32 s4, s4, 1
  s_cmp_lg_u32 s4, 0
  s_cbranch_scc1 .Lloop
  global_store_dword v0, v4, s[6:7]
  s_endpgm

.p2align 8
.globl vadd
.type vadd,@function
vadd:
  s_load_dwordx4 s[4:7], s[0:1], 0x0   // a, b
  s_load_dwordx2 s[8:9], s[0:1], 0x10  // c
  s_lshl_b32 s3, s2, 8
  v_add_u32 v0, s3, v0
  v_lshlrev_b32 v0, 2, v0
  s_waitcnt lgkmcnt(0)
  global_load_dword v1, v0, s[4:5]
  global_load_dword v2, v0, s[6:7]
  s_waitcnt vmcnt(0)
  v_add_f32 v1, v1, v2
  global_store_dword v0, v1, s[8:9]
  s_endpgm

.rodata
.p2align 6
.amdhsa_kernel valu
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_system_sgpr_workgroup_id_x 1
  .amdhsa_next_free_vgpr 8
  .amdhsa_next_free_sgpr 10
  .amdhsa_accum_offset 8
.end_amdhsa_kernel

.p2align 6
.amdhsa_kernel vadd
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_system_sgpr_workgroup_id_x 1
  .amdhsa_next_free_vgpr 4
  .amdhsa_next_free_sgpr 10
  .amdhsa_accum_offset 4
.end_amdhsa_kernel
