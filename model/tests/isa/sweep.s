// Every instruction form the gfx9 decoder knows that gfx90a and gfx942 share, once (the
// test appends sweep-<target>.s, each target's own forms): llvm-mc assembles it,
// llvm-objdump prints it, and the test compares our decoder's text with LLVM's.
s_add_u32 s0, s1, s2
s_sub_u32 s0, s1, 0x1234
s_add_i32 s3, s4, -4
s_sub_i32 s3, s4, 64
s_addc_u32 s1, s1, s3
s_subb_u32 s1, s1, s3
s_min_i32 s0, s1, s2
s_min_u32 s0, s1, s2
s_max_i32 s0, s1, s2
s_max_u32 s0, s1, s2
s_cselect_b32 s0, s1, s2
s_cselect_b64 s[0:1], s[2:3], exec
s_and_b32 s0, s0, 0xffff
s_and_b64 s[0:1], vcc, exec
s_or_b32 s0, s1, s2
s_or_b64 exec, exec, s[0:1]
s_xor_b32 s0, s1, s2
s_xor_b64 s[4:5], s[0:1], -1
s_andn2_b32 s0, s1, s2
s_andn2_b64 exec, exec, vcc
s_lshl_b32 s0, s1, 2
s_lshl_b64 s[0:1], s[0:1], 2
s_lshr_b32 s0, s1, 3
s_lshr_b64 s[0:1], s[2:3], s4
s_ashr_i32 s0, s1, 31
s_ashr_i64 s[0:1], s[2:3], 5
s_mul_i32 s8, s8, s0
s_movk_i32 s0, 0x1234
s_mov_b32 s0, s1
s_mov_b32 m0, -1
s_mov_b64 exec, s[0:1]
s_not_b32 s0, s1
s_not_b64 s[0:1], s[2:3]
s_getpc_b64 s[0:1]
s_and_saveexec_b64 s[0:1], vcc
s_or_saveexec_b64 s[2:3], s[4:5]
s_xor_saveexec_b64 s[2:3], s[4:5]
s_cmp_eq_i32 s0, s1
s_cmp_lg_i32 s0, 1
s_cmp_gt_i32 s0, s1
s_cmp_ge_i32 s0, s1
s_cmp_lt_i32 s0, s1
s_cmp_le_i32 s0, s1
s_cmp_eq_u32 s0, 1
s_cmp_lg_u32 s0, s1
s_cmp_gt_u32 s0, s1
s_cmp_ge_u32 s0, s1
s_cmp_lt_u32 s0, 0x10000
s_cmp_le_u32 s0, s1
s_nop 3
s_branch 3
s_cbranch_scc0 -2
s_cbranch_scc1 2
s_cbranch_vccz 1
s_cbranch_vccnz 1
s_cbranch_execz 25
s_cbranch_execnz -5
s_barrier
s_trap 2
s_waitcnt vmcnt(0)
s_waitcnt lgkmcnt(0)
s_waitcnt vmcnt(1) lgkmcnt(2)
s_sleep 1
s_setprio 2
s_sethalt 0
s_sendmsg sendmsg(MSG_INTERRUPT)
s_icache_inv
s_incperflevel 1
s_decperflevel 1
s_memtime s[6:7]
s_memrealtime s[2:3]
ds_swizzle_b32 v1, v2 offset:swizzle(QUAD_PERM,3,3,1,0)
ds_swizzle_b32 v1, v2 offset:swizzle(SWAP,1)
ds_swizzle_b32 v1, v2 offset:swizzle(REVERSE,4)
ds_swizzle_b32 v1, v2 offset:swizzle(BROADCAST,4,1)
ds_swizzle_b32 v1, v2 offset:swizzle(BROADCAST,32,31)
ds_swizzle_b32 v1, v2 offset:swizzle(BITMASK_PERM,"01pip")
ds_swizzle_b32 v1, v2 offset:0x0400
ds_swizzle_b32 v1, v2 offset:0x7fff
ds_swizzle_b32 v1, v2 offset:0x043f
ds_swizzle_b32 v1, v2
ds_permute_b32 v1, v2, v3
ds_bpermute_b32 v1, v2, v3 offset:4
ds_add_u64 v1, v[2:3]
ds_sub_u64 v1, v[2:3] offset:8
ds_rsub_u64 v1, v[2:3]
ds_inc_u64 v1, v[2:3]
ds_dec_u64 v1, v[2:3]
ds_min_i64 v1, v[2:3]
ds_max_i64 v1, v[2:3]
ds_min_u64 v1, v[2:3]
ds_max_u64 v1, v[2:3]
ds_and_b64 v1, v[2:3]
ds_or_b64 v1, v[2:3]
ds_xor_b64 v1, v[2:3]
ds_cmpst_b64 v1, v[2:3], v[4:5]
ds_add_rtn_u64 v[4:5], v1, v[2:3]
ds_sub_rtn_u64 v[4:5], v1, v[2:3]
ds_rsub_rtn_u64 v[4:5], v1, v[2:3]
ds_inc_rtn_u64 v[4:5], v1, v[2:3]
ds_dec_rtn_u64 v[4:5], v1, v[2:3]
ds_min_rtn_i64 v[4:5], v1, v[2:3]
ds_max_rtn_i64 v[4:5], v1, v[2:3]
ds_min_rtn_u64 v[4:5], v1, v[2:3]
ds_max_rtn_u64 v[4:5], v1, v[2:3]
ds_and_rtn_b64 v[4:5], v1, v[2:3]
ds_or_rtn_b64 v[4:5], v1, v[2:3]
ds_xor_rtn_b64 v[4:5], v1, v[2:3] offset:16
ds_wrxchg_rtn_b64 v[4:5], v1, v[2:3]
ds_cmpst_rtn_b64 v[4:5], v1, v[2:3], v[6:7]
ds_add_f32 v1, v2
ds_add_rtn_f32 v3, v1, v2 offset:12
ds_write_b96 v1, v[2:4]
ds_write_b128 v1, v[2:5] offset:16
ds_read_b96 v[2:4], v1
ds_read_b128 v[2:5], v1 offset:32
v_cvt_f32_ubyte0_e32 v1, v0
v_cvt_f32_ubyte1_e32 v1, v0
v_cvt_f32_ubyte2_e32 v1, s2
v_cvt_f32_ubyte3_e64 v1, v0
v_bfrev_b32_e32 v0, 1
v_ffbh_u32_e32 v1, v2
v_ffbl_b32_e32 v1, s3
v_ffbh_i32_e32 v1, v2
v_mul_i32_i24_e32 v1, v2, v3
v_mul_hi_i32_i24_e32 v1, v2, v3
v_mul_hi_u32_u24_e32 v1, v2, v3
v_mul_i32_i24_e64 v1, s2, v3
v_mad_i32_i24 v1, v2, v3, v4
v_bfe_i32 v1, v2, 3, 4
v_bfi_b32 v1, v2, v3, v4
v_alignbit_b32 v1, v2, v3, 4
v_alignbyte_b32 v1, v2, v3, 1
v_min3_i32 v1, v2, v3, v4
v_min3_u32 v1, v2, v3, v4
v_max3_i32 v1, v2, v3, v4
v_max3_u32 v1, v2, v3, v4
v_med3_i32 v1, v2, v3, v4
v_med3_u32 v1, v2, v3, v4
v_perm_b32 v1, v2, v3, v4
v_add_lshl_u32 v5, v6, v3, 2
v_and_or_b32 v1, v2, v3, v4
v_mul_hi_i32 v7, v2, s5
v_bcnt_u32_b32 v1, v2, 0
s_load_dword s0, s[4:5], 0x4
s_load_dwordx2 s[4:5], s[6:7], 0x10
s_load_dwordx4 s[0:3], s[6:7], 0x0
s_load_dwordx8 s[8:15], s[0:1], 0x20
s_load_dwordx16 s[16:31], s[0:1], 0x40
v_cndmask_b32_e32 v0, v1, v2, vcc
v_add_f32_e32 v2, v6, v7
v_sub_f32_e32 v0, 1.0, v1
v_subrev_f32_e32 v0, s1, v1
v_mul_f32_e32 v0, 0.5, v1
v_mul_u32_u24_e32 v0, v1, v2
v_min_f32_e32 v0, v1, v2
v_max_f32_e32 v0, v1, v2
v_min_i32_e32 v0, v1, v2
v_max_i32_e32 v0, v1, v2
v_min_u32_e32 v0, v1, v2
v_max_u32_e32 v0, v1, v2
v_lshrrev_b32_e32 v0, 2, v1
v_ashrrev_i32_e32 v0, 31, v1
v_lshlrev_b32_e32 v0, 2, v1
v_and_b32_e32 v0, 0xff, v1
v_or_b32_e32 v0, v1, v2
v_xor_b32_e32 v0, v1, v2
v_add_co_u32_e32 v2, vcc, s2, v0
v_sub_co_u32_e32 v2, vcc, s2, v0
v_subrev_co_u32_e32 v2, vcc, s2, v0
v_addc_co_u32_e32 v3, vcc, v3, v1, vcc
v_subb_co_u32_e32 v3, vcc, v3, v1, vcc
v_subbrev_co_u32_e32 v3, vcc, v3, v1, vcc
v_add_u32_e32 v0, s8, v0
v_sub_u32_e32 v0, v1, v2
v_subrev_u32_e32 v0, v1, v2
v_fmac_f32_e32 v0, v1, v2
v_nop
v_mov_b32_e32 v1, 0
v_mov_b32_e32 v3, s3
v_mov_b32_e32 v3, 0x12345678
v_readfirstlane_b32 s0, v1
v_cvt_f32_i32_e32 v0, v1
v_cvt_f32_u32_e32 v0, v1
v_cvt_u32_f32_e32 v0, v1
v_cvt_i32_f32_e32 v0, v1
v_not_b32_e32 v0, v1
v_cmp_lt_f32_e32 vcc, v0, v1
v_cmp_eq_f32_e32 vcc, 0, v1
v_cmp_neq_f32_e32 vcc, s0, v1
v_cmp_lt_i32_e32 vcc, s0, v1
v_cmp_ne_i32_e32 vcc, 0, v1
v_cmp_gt_u32_e32 vcc, s1, v0
v_cmp_ge_u32_e32 vcc, 63, v0
v_cmp_gt_u32_e64 s[0:1], s1, v0
v_add_co_u32_e64 v0, s[0:1], v1, v2
v_addc_co_u32_e64 v0, s[0:1], v1, v2, s[2:3]
v_cndmask_b32_e64 v0, v1, v2, s[0:1]
v_add_u32_e64 v0, s0, v1
v_mov_b32_e64 v0, s1
v_mad_u32_u24 v0, v1, v2, v3
v_bfe_u32 v0, v1, 10, 10
v_fma_f32 v0, v1, v2, v3
v_mad_u64_u32 v[0:1], s[0:1], v0, v1, v[2:3]
v_lshl_add_u32 v0, v1, 2, v3
v_add3_u32 v0, v1, v2, v3
v_xad_u32 v2, v13, 1, v12
v_mul_lo_u32 v0, v1, v2
v_mul_hi_u32 v0, v1, v2
v_lshlrev_b64 v[0:1], 2, v[0:1]
v_lshrrev_b64 v[0:1], 2, v[0:1]
flat_load_dword v2, v[0:1]
flat_load_dwordx2 v[2:3], v[0:1] offset:8
flat_store_dword v[0:1], v2
global_load_dword v6, v[4:5], off
global_load_dword v1, v0, s[0:1] offset:16
global_load_dwordx2 v[2:3], v[0:1], off offset:-8
global_load_dwordx3 v[2:4], v[0:1], off
global_store_dword v[0:1], v2, off
global_store_dwordx2 v0, v[2:3], s[0:1]
global_store_dwordx3 v[0:1], v[2:4], off
global_store_dwordx4 v[0:1], v[2:5], off offset:64
v_lshl_or_b32 v3, v0, 16, v2
s_bcnt1_i32_b64 s0, s[0:1]
s_ff1_i32_b64 s7, s[0:1]
s_cmp_eq_u64 s[0:1], 0
s_cmp_lg_u64 s[0:1], s[2:3]
v_readlane_b32 s9, v0, s7
v_mbcnt_lo_u32_b32 v0, exec_lo, 0
v_mbcnt_hi_u32_b32 v0, exec_hi, v0
ds_add_u32 v0, v1 offset:1024
ds_sub_u32 v0, v1
ds_rsub_u32 v0, v1
ds_inc_u32 v0, v1
ds_dec_u32 v0, v1
ds_min_i32 v0, v1
ds_max_i32 v0, v1
ds_min_u32 v0, v1
ds_max_u32 v0, v1
ds_and_b32 v0, v1
ds_or_b32 v0, v1
ds_xor_b32 v0, v1 offset:8
ds_write_b32 v1, v2
ds_write2_b32 v1, v2, v3 offset0:1 offset1:2
ds_write2st64_b32 v1, v2, v3 offset1:4
ds_cmpst_b32 v1, v2, v3
ds_write_b8 v1, v2 offset:3
ds_write_b16 v1, v2
ds_add_rtn_u32 v0, v1, v2
ds_sub_rtn_u32 v0, v1, v2
ds_rsub_rtn_u32 v0, v1, v2
ds_inc_rtn_u32 v0, v1, v2
ds_dec_rtn_u32 v0, v1, v2
ds_min_rtn_i32 v0, v1, v2
ds_max_rtn_i32 v0, v1, v2
ds_min_rtn_u32 v0, v1, v2
ds_max_rtn_u32 v0, v1, v2
ds_and_rtn_b32 v0, v1, v2
ds_or_rtn_b32 v0, v1, v2
ds_xor_rtn_b32 v0, v1, v2
ds_wrxchg_rtn_b32 v0, v1, v2 offset:16
ds_cmpst_rtn_b32 v0, v1, v2, v3
ds_read_b32 v2, v2 offset:4
ds_read2_b32 v[2:3], v1 offset1:16
ds_read2st64_b32 v[2:3], v1 offset0:1 offset1:2
ds_read_i8 v0, v1
ds_read_u8 v0, v1 offset:1
ds_read_i16 v0, v1
ds_read_u16 v0, v1 offset:2
ds_write_b64 v1, v[2:3] offset:8
ds_write2_b64 v1, v[2:3], v[4:5] offset1:1
ds_write2st64_b64 v1, v[2:3], v[4:5] offset0:1 offset1:3
ds_read_b64 v[2:3], v1
ds_read2_b64 v[2:5], v1 offset1:1
ds_read2st64_b64 v[2:5], v1 offset0:2 offset1:3
global_atomic_add v3, v6, s[10:11]
global_atomic_swap v3, v2, s[10:11] offset:92
global_atomic_cmpswap v3, v[2:3], s[10:11] offset:88
global_atomic_sub v[0:1], v4, off
global_atomic_smin v3, v4, s[10:11]
global_atomic_umin v3, v4, s[10:11]
global_atomic_smax v3, v4, s[10:11]
global_atomic_and v3, v4, s[10:11] offset:80
global_atomic_or v3, v6, s[10:11] offset:72
global_atomic_xor v3, v6, s[10:11] offset:76
global_atomic_dec v3, v4, s[10:11]
global_atomic_add_x2 v3, v[4:5], s[10:11]
global_atomic_swap_x2 v[0:1], v[4:5], off
flat_atomic_add v[0:1], v2
flat_atomic_umax_x2 v[0:1], v[2:3]
buffer_load_dword v1, v0, s[0:3], 0 offen offset:4
buffer_load_dword v1, v0, s[0:3], s4 idxen
buffer_load_dword v1, v[0:1], s[0:3], 0 idxen offen
buffer_load_ubyte v1, off, s[0:3], s11
buffer_load_sbyte v1, v0, s[0:3], 0 offen
buffer_load_sshort v1, off, s[0:3], 0
buffer_load_dwordx2 v[2:3], v0, s[0:3], 0 offen offset:8
buffer_load_dwordx3 v[2:4], off, s[0:3], 0
buffer_store_short v1, v0, s[0:3], 0 offen
buffer_store_dword v48, off, s[0:3], 0 offset:4
buffer_store_dwordx2 v[2:3], v0, s[0:3], 0 offen
buffer_store_dwordx3 v[2:4], off, s[0:3], 0
buffer_store_dwordx4 v[2:5], v0, s[0:3], 0 offen offset:32
v_fmac_f64_e32 v[6:7], v[8:9], v[4:5]
v_fma_f64 v[0:1], v[2:3], v[4:5], v[6:7]
v_fma_f16 v2, v28, v1, 0.5
v_add_f16_e32 v1, v28, v1
v_sub_f16_e32 v2, v2, v3
v_mul_f16_e32 v2, v2, v3
v_max_f16_e32 v2, v2, v3
v_min_f16_e32 v2, v2, v3
v_cvt_f16_f32_e32 v3, v1
v_cvt_f32_f16_e32 v3, v1
v_cmp_gt_f16_e32 vcc, v2, v28
v_cmp_ngt_f64_e32 vcc, 0, v[6:7]
v_cmp_lt_i64_e32 vcc, v[0:1], v[2:3]
v_cmp_lt_u64_e64 s[0:1], v[0:1], v[2:3]
v_add_f64 v[12:13], v[4:5], -v[8:9]
v_mul_f64 v[6:7], v[4:5], 4.0
v_min_f64 v[6:7], v[12:13], v[6:7]
v_max_f64 v[6:7], v[8:9], v[8:9]
v_ldexp_f64 v[2:3], v[2:3], 32
v_ashrrev_i64 v[18:19], 3, v[12:13]
v_trunc_f64_e32 v[18:19], v[8:9]
v_floor_f64_e32 v[20:21], v[20:21]
v_ceil_f64_e32 v[20:21], v[20:21]
v_rndne_f64_e32 v[20:21], v[20:21]
v_cvt_i32_f64_e32 v17, v[20:21]
v_cvt_u32_f64_e32 v3, v[18:19]
v_cvt_f32_f64_e32 v3, v[8:9]
v_cvt_f64_f32_e32 v[26:27], v3
v_cvt_f64_i32_e32 v[6:7], v1
v_cvt_f64_u32_e32 v[8:9], v0
s_andn2_saveexec_b64 s[4:5], s[4:5]
global_store_short v[22:23], v1, off
global_store_byte v[22:23], v1, off
global_load_ushort v1, v[22:23], off
global_load_sshort v1, v[22:23], off
global_load_ubyte v1, v[22:23], off
global_load_sbyte v1, v[22:23], off
v_cvt_f32_f16_e64 v3, -v1
v_add_f32_e64 v0, -v1, |v2|
v_fmac_f64_e32 v[18:19], 0xc1f00000, v[20:21]
v_cmp_eq_u64_e32 vcc, 0, v[0:1]
v_cmp_ne_i64_e64 s[2:3], v[0:1], s[4:5]
v_cmp_lt_f64_e64 s[2:3], -v[0:1], |v[2:3]|
v_cmp_o_f16_e32 vcc, v0, v1
v_subrev_f16_e32 v0, v1, v2
v_fma_f32 v0, -v1, v2, |v3|
v_mul_f32_e64 v0, -v1, -v2
s_endpgm
// VOP3P (packed f32, 64-bit moves)
v_pk_mov_b32 v[2:3], s[16:17], s[16:17] op_sel:[0,1]
v_pk_mov_b32 v[0:1], v[2:3], v[4:5]
v_pk_mov_b32 v[0:1], v[2:3], v[4:5] op_sel:[1,0]
v_pk_mov_b32 v[0:1], 0, v[4:5] op_sel:[1,1]
v_pk_mov_b32 v[0:1], vcc, v[2:3] op_sel:[1,0]
v_pk_add_f32 v[0:1], v[2:3], v[4:5]
v_pk_add_f32 v[0:1], v[2:3], s[4:5] op_sel:[1,0] op_sel_hi:[0,1]
v_pk_add_f32 v[0:1], v[2:3], 1.0
v_pk_add_f32 v[0:1], v[2:3], v[4:5] clamp
v_pk_mul_f32 v[0:1], v[2:3], v[4:5] neg_lo:[1,0] neg_hi:[0,1]
v_pk_mul_f32 v[0:1], v[2:3], v[4:5] op_sel_hi:[0,0]
v_pk_fma_f32 v[0:1], v[2:3], v[4:5], v[6:7]
v_pk_fma_f32 v[0:1], v[2:3], v[4:5], v[6:7] op_sel:[0,0,1] op_sel_hi:[1,1,0]
v_pk_fma_f32 v[4:5], v[2:3], s[8:9], v[6:7] neg_lo:[0,0,1] neg_hi:[1,1,0]
// Division, square roots, transcendentals, classification and MODE (math.cl).
v_div_scale_f32 v1, vcc, v2, v3, v2
v_div_scale_f32 v1, s[4:5], -v2, v2, v3
v_div_scale_f64 v[0:1], s[4:5], v[2:3], v[2:3], v[6:7]
v_div_fmas_f32 v1, -v2, v3, v4
v_div_fmas_f64 v[0:1], -v[2:3], v[4:5], v[6:7]
v_div_fixup_f32 v1, v2, s3, |v4|
v_div_fixup_f64 v[0:1], v[2:3], -v[4:5], |v[6:7]|
v_div_fixup_f16 v1, v2, v3, v4
v_or3_b32 v1, v2, s3, 4
v_ldexp_f32 v1, -v2, 5
v_ldexp_f32 v1, v2, s3
v_rcp_f32_e32 v1, v2
v_rcp_iflag_f32_e32 v1, s2
v_rsq_f32_e32 v1, v2
v_sqrt_f32_e32 v1, 0.5
v_exp_f32_e32 v1, v2
v_log_f32_e32 v1, v2
v_sin_f32_e32 v1, v2
v_cos_f32_e32 v1, v2
v_fract_f32_e32 v1, v2
v_trunc_f32_e32 v1, v2
v_ceil_f32_e32 v1, v2
v_floor_f32_e32 v1, v2
v_rndne_f32_e32 v1, v2
v_frexp_mant_f32_e32 v1, v2
v_frexp_exp_i32_f32_e32 v1, v2
v_rcp_f64_e32 v[0:1], v[2:3]
v_rsq_f64_e32 v[0:1], s[2:3]
v_sqrt_f64_e32 v[0:1], v[2:3]
v_fract_f64_e32 v[0:1], v[2:3]
v_frexp_mant_f64_e32 v[0:1], v[2:3]
v_frexp_exp_i32_f64_e32 v1, v[2:3]
v_exp_f32_e64 v1, -|v2|
v_rsq_f64_e64 v[0:1], -v[2:3]
v_frexp_exp_i32_f32_e64 v1, |v2|
v_cmp_class_f32_e32 vcc, v1, v2
v_cmp_class_f32_e64 s[2:3], -v1, 3
v_cmp_class_f64_e32 vcc, v[2:3], v4
v_cmp_class_f64_e64 s[2:3], v[2:3], s4
v_cmp_class_f16_e32 vcc, v1, v2
s_brev_b32 s1, s2
s_setreg_imm32_b32 hwreg(HW_REG_MODE, 4, 2), 3
s_setreg_imm32_b32 hwreg(HW_REG_MODE), 0x3f0
s_setreg_imm32_b32 hwreg(HW_REG_MODE, 4, 2), -1
s_setreg_imm32_b32 hwreg(HW_REG_MODE, 4, 2), 1.0
s_setreg_b32 hwreg(HW_REG_MODE, 4, 2), s3
s_getreg_b32 s5, hwreg(HW_REG_MODE)
s_getreg_b32 s5, hwreg(HW_REG_MODE, 4, 4)
v_fma_mixlo_f16 v3, v2, v3, 0 op_sel_hi:[1,0,0]
v_fma_mix_f32 v0, v1, v2, v3
v_fma_mix_f32 v0, -v1, |v2|, -|v3| op_sel:[1,0,1] op_sel_hi:[1,1,1]
v_fma_mixhi_f16 v0, v1, s2, v3 op_sel_hi:[0,1,0] clamp
v_fma_mix_f32 v0, v1, 1.0, v3
v_alignbit_b32 v1, v11, v1, v14
v_alignbit_b32 v1, v3, v1, 30
v_alignbyte_b32 v1, v3, s1, 3
v_mad_i32_i24 v3, v10, s2, 0.5
v_mad_i32_i24 v12, -1, s2, v13
v_cndmask_b32_e64 v5, -v5, |v7|, vcc
v_add_u16_e32 v0, v1, v2
v_sub_u16_e32 v0, s1, v2
v_subrev_u16_e32 v0, v1, v2
v_mul_lo_u16_e32 v0, 5, v2
v_lshlrev_b16_e32 v0, v1, v2
v_lshrrev_b16_e32 v0, v1, v2
v_ashrrev_i16_e32 v0, v1, v2
v_max_u16_e32 v0, v1, v2
v_max_i16_e32 v0, v1, v2
v_min_u16_e32 v0, v1, v2
v_min_i16_e32 v0, v1, v2
v_add_u16_e64 v0, s1, v2
v_mul_lo_u16_e64 v0, v1, s2
