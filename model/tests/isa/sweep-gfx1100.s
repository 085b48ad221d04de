s_mov_b64 s[0:1], s[2:3]
s_not_b32 s0, s1
s_not_b64 s[0:1], s[2:3]
s_ctz_i32_b64 s0, s[2:3]
s_bcnt1_i32_b32 s0, s1
s_bcnt1_i32_b64 s0, s[2:3]
s_bitset1_b32 s0, s1
s_getpc_b64 s[0:1]
s_and_saveexec_b32 s0, s1
s_or_saveexec_b32 s0, s1
s_xor_saveexec_b32 s0, s1
s_and_not1_saveexec_b32 s0, s1
s_and_saveexec_b64 s[0:1], s[2:3]
s_sendmsg_rtn_b32 s0, sendmsg(MSG_RTN_GET_DOORBELL)
s_mul_i32 s0, s1, s2
s_cselect_b32 s0, s1, s2
s_cselect_b64 s[0:1], s[2:3], s[4:5]
s_lshr_b32 s0, s1, s2
s_ashr_i32 s0, s1, s2
s_lshr_b64 s[0:1], s[2:3], s4
s_cmp_eq_u64 s[0:1], s[2:3]
s_cmp_lg_u64 s[0:1], s[2:3]
s_movk_i32 s0, 0x1234
s_load_b32 s0, s[2:3], s4
s_load_b32 s0, s[2:3], s4 offset:0x10
s_load_b512 s[0:15], s[2:3], 0x10
s_load_b32 s0, s[2:3], 0x10 glc
s_load_b32 s0, s[2:3], -0x10
s_mov_b32 m0, s1
s_mov_b32 s0, null
s_delay_alu 0
s_delay_alu instid0(TRANS32_DEP_1) | instskip(SKIP_4) | instid1(FMA_ACCUM_CYCLE_1)
s_delay_alu instid0(SALU_CYCLE_3) | instskip(SAME) | instid1(VALU_DEP_4)
s_waitcnt vmcnt(1) expcnt(2) lgkmcnt(3)
s_waitcnt 0xffff
s_waitcnt 0
s_sendmsg sendmsg(MSG_INTERRUPT)
s_sethalt 5
s_code_end
s_nop 7
s_clause 0x3f
v_not_b32 v0, v1
v_cvt_f32_u32 v0, v1
v_sub_co_u32 v0, s0, v1, v2
v_subrev_co_u32 v0, vcc_lo, v1, v2
v_mad_u32_u24 v0, v1, v2, v3
v_fma_f32 v0, v1, v2, v3
v_fma_f64 v[0:1], v[2:3], v[4:5], v[6:7]
v_fma_f16 v0, v1, v2, v3
v_xad_u32 v0, v1, v2, v3
v_add3_u32 v0, v1, v2, v3
v_mul_lo_u32 v0, v1, v2
v_mul_hi_u32 v0, v1, v2
v_add_f64 v[0:1], v[2:3], v[4:5]
v_mul_f64 v[0:1], v[2:3], v[4:5]
v_min_f64 v[0:1], v[2:3], v[4:5]
v_max_f64 v[0:1], v[2:3], v[4:5]
v_ldexp_f64 v[0:1], v[2:3], v4
v_mbcnt_hi_u32_b32 v0, v1, v2
v_lshrrev_b64 v[0:1], v2, v[4:5]
v_ashrrev_i64 v[0:1], v2, v[4:5]
v_add_f32_e64 v0, |v1|, -v2
v_add_f32_e64 v0, v1, v2 clamp
v_add_f32_e64 v0, v1, v2 mul:2
v_fma_f32 v0, v1, 0x12345678, v3
v_cndmask_b32_e64 v0, v1, v2, s0
v_cndmask_b32_e32 v0, v1, v2, vcc_lo
v_cmp_lt_f32_e64 s0, v1, v2
v_cmpx_lt_f32_e64 v1, v2
v_cmp_eq_u64_e32 vcc_lo, v[0:1], v[2:3]
v_cmp_lt_i64_e32 vcc_lo, v[0:1], v[2:3]
v_cmp_lt_i32_e32 vcc_lo, v0, v1
v_cmp_lt_f16_e32 vcc_lo, v0, v1
v_cmp_f_i32_e32 vcc_lo, v0, v1
v_cmp_t_u32_e32 vcc_lo, v0, v1
v_mov_b32_e64 v0, v1
v_mul_u32_u24_e32 v0, v1, v2
v_fmac_f32_e32 v0, v1, v2
v_subrev_nc_u32_e32 v0, v1, v2
v_subrev_co_ci_u32_e32 v0, vcc_lo, v1, v2, vcc_lo
v_sub_co_ci_u32_e32 v0, vcc_lo, v1, v2, vcc_lo
v_mul_f16_e32 v0, v1, v2
v_dual_add_f32 v0, v1, v2 :: v_dual_mul_f32 v3, v4, v5
v_dual_fmac_f32 v0, v1, v2 :: v_dual_add_nc_u32 v3, v4, v5
v_dual_cndmask_b32 v0, v1, v2 :: v_dual_lshlrev_b32 v3, v4, v5
v_dual_sub_f32 v0, v1, v2 :: v_dual_and_b32 v3, v4, v5
v_dual_max_f32 v0, v1, v2 :: v_dual_min_f32 v3, v4, v5
v_dual_subrev_f32 v0, v1, v2 :: v_dual_cndmask_b32 v3, v4, v5
v_dual_mov_b32 v0, 0x12345678 :: v_dual_mov_b32 v3, v4
ds_load_b32 v0, v1
ds_load_b64 v[0:1], v1
ds_store_b64 v0, v[1:2]
ds_store_b8 v0, v1
ds_store_b16 v0, v1
ds_load_u8 v0, v1
ds_load_i8 v0, v1
ds_load_u16 v0, v1
ds_load_i16 v0, v1
ds_store_2addr_b32 v0, v1, v2 offset0:1 offset1:2
ds_store_2addr_stride64_b32 v0, v1, v2 offset1:2
ds_load_2addr_b64 v[0:3], v1 offset0:1 offset1:2
ds_store_2addr_b64 v0, v[1:2], v[3:4] offset1:2
ds_add_rtn_u32 v0, v1, v2
ds_sub_u32 v0, v1
ds_rsub_u32 v0, v1
ds_inc_u32 v0, v1
ds_dec_u32 v0, v1
ds_min_i32 v0, v1
ds_max_u32 v0, v1
ds_and_b32 v0, v1
ds_or_b32 v0, v1
ds_xor_b32 v0, v1
ds_storexchg_rtn_b32 v0, v1, v2
ds_cmpstore_b32 v0, v1, v2
ds_cmpstore_rtn_b32 v0, v1, v2, v3
global_load_u8 v0, v[1:2], off
global_load_i16 v0, v1, s[2:3] offset:-8
global_load_b128 v[0:3], v[1:2], off offset:4095
global_store_b16 v[0:1], v2, off
global_store_b8 v[0:1], v2, off
global_store_b96 v[0:1], v[2:4], off
global_load_b32 v0, v[1:2], off glc slc dlc
global_atomic_add_u64 v[0:1], v[2:3], off
global_atomic_cmpswap_b64 v[0:1], v[1:2], v[2:5], off glc
global_atomic_inc_u32 v0, v1, v2, s[0:1] glc
flat_load_b32 v0, v[1:2]
flat_load_b32 v0, v[1:2] offset:64
flat_store_b32 v[0:1], v2 offset:4095
flat_atomic_add_u32 v0, v[1:2], v3 glc
scratch_load_b32 v0, v1, off
scratch_load_b32 v0, off, s0 offset:16
scratch_load_b32 v0, v1, s0
scratch_load_b32 v0, off, off offset:16
scratch_store_b128 v1, v[2:5], off offset:-16
scratch_store_b128 off, v[2:5], s0
buffer_gl0_inv
buffer_gl1_inv
v_mov_b32_e32 v0, 1.0
v_mov_b32_e32 v0, 0.15915494
s_mov_b32 s105, s104
s_mov_b32 vcc_hi, exec_hi
v_add_co_u32 v0, vcc_lo, s4, v0
v_add_co_ci_u32_e64 v2, s0, s5, v2, s0
v_sub_co_ci_u32_e64 v2, null, s5, v2, s0
v_mad_u64_u32 v[1:2], null, s15, s0, v[0:1]
v_mad_u64_u32 v[1:2], s4, v3, 20, v[4:5]
v_readlane_b32 s9, v5, s1
v_readfirstlane_b32 s0, v1
v_bfe_u32 v2, v0, 10, 10
v_lshl_add_u32 v0, s14, 4, v1
v_lshl_or_b32 v3, v3, 16, v0
v_mbcnt_lo_u32_b32 v5, exec_lo, 0
v_lshlrev_b64 v[0:1], 2, v[1:2]
v_cmpx_gt_u32_e32 0x80, v0
v_cmpx_eq_u32_e32 0, v5
v_cmpx_gt_u32_e64 s1, v1
v_cmp_gt_u32_e64 vcc_lo, s1, v1
v_cmp_ngt_f64_e32 vcc_lo, 0, v[4:5]
v_cmp_gt_f16_e32 vcc_lo, v14, v24
v_mul_f64 v[4:5], 0x3ff80000, v[6:7]
v_fma_f64 v[14:15], 0xc1f00000, v[16:17], v[14:15]
v_ldexp_f64 v[16:17], v[14:15], 0xffffffe0
v_add_f64 v[12:13], v[8:9], -v[6:7]
v_fma_f16 v4, v24, v0, 0.5
v_trunc_f64_e32 v[14:15], v[6:7]
v_cvt_f64_f32_e32 v[6:7], v0
v_cvt_f32_f64_e64 v0, -|v[6:7]|
v_mov_b32_e32 v2, 0
v_and_b32_e32 v1, 0x3ff, v0
v_or_b32_e32 v3, 0xffff0000, v3
v_add_nc_u32_e32 v0, s0, v1
v_sub_nc_u32_e64 v0, s0, v1
v_xor_b32_e64 v0, 5, v1
v_dual_mov_b32 v7, 0 :: v_dual_mov_b32 v6, s9
v_dual_mul_f32 v0, 1.0, v2 :: v_dual_sub_f32 v1, v3, v4
s_load_b64 s[2:3], s[2:3], 0x10 dlc
s_load_b256 s[0:7], s[2:3], null
s_mov_b32 ttmp2, m0
s_mov_b32 m0, ttmp2
s_and_b32 s0, s0, 0x3ff
s_bitset1_b32 s0, 10
s_sendmsg_rtn_b32 s0, sendmsg(MSG_RTN_GET_REALTIME)
s_trap 2
s_branch 65534
s_cbranch_scc1 65526
s_cbranch_vccz 3
s_cbranch_vccnz 4
s_cbranch_execnz 5
s_cbranch_scc0 6
s_endpgm
s_barrier
s_sendmsg sendmsg(MSG_DEALLOC_VGPRS)
s_delay_alu instid0(VALU_DEP_1) | instid1(SALU_CYCLE_1)
s_delay_alu instid0(VALU_DEP_2)
s_and_not1_saveexec_b32 s0, s1
s_or_b32 exec_lo, exec_lo, s8
s_add_u32 s2, s2, s0
s_addc_u32 s3, s3, s1
s_lshl_b64 s[0:1], s[8:9], 2
ds_store_b32 v1, v1 offset:1024
ds_load_2addr_stride64_b32 v[2:3], v1 offset1:2
ds_add_u32 v1, v0
global_store_b32 v2, v0, s[0:1]
global_atomic_cmpswap_b32 v5, v7, v[5:6], s[2:3] offset:64 glc
global_atomic_add_u32 v5, v6, s[2:3]
global_load_b32 v6, v7, s[2:3] offset:68
v_div_scale_f32 v1, vcc_lo, v2, v3, v2
v_div_scale_f32 v1, null, -v2, v2, v3
v_div_scale_f32 v1, s4, v2, v2, v3
v_div_scale_f64 v[0:1], null, v[2:3], v[2:3], v[6:7]
v_div_fmas_f32 v1, -v2, v3, v4
v_div_fmas_f64 v[0:1], -v[2:3], v[4:5], v[6:7]
v_div_fixup_f32 v1, v2, s3, |v4|
v_div_fixup_f32 v1, v2, 0x40e00000, v4
v_div_fixup_f64 v[0:1], v[2:3], -v[4:5], |v[6:7]|
v_div_fixup_f16 v1, v2, v3, v4
v_or3_b32 v1, v2, s3, 4
v_ldexp_f32 v1, -v2, 5
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
v_cmp_class_f32_e32 vcc_lo, v1, v2
v_cmp_class_f32_e64 s2, -v1, 3
v_cmp_class_f32_e64 s1, v12, 0x1f8
v_cmp_class_f64_e32 vcc_lo, v[2:3], v4
v_cmp_class_f64_e64 vcc_lo, v[2:3], 0x260
v_cmp_class_f16_e32 vcc_lo, v1, v2
v_cmpx_class_f32_e32 v1, v2
v_fmamk_f32 v28, v12, 0x32a5705f, v10
v_fmaak_f32 v28, v12, v10, 0x32a5705f
v_dual_fmamk_f32 v28, v12, 0x32a5705f, v10 :: v_dual_sub_f32 v29, v11, v25
v_dual_fmaak_f32 v28, v12, v10, 0x32a5705f :: v_dual_mov_b32 v29, v11
v_dual_mov_b32 v29, v11 :: v_dual_fmamk_f32 v28, v12, 0x32a5705f, v10
s_brev_b32 s1, s2
s_denorm_mode 15
s_denorm_mode 12
s_round_mode 0x0
s_waitcnt_depctr 0xfff
s_setreg_imm32_b32 hwreg(HW_REG_MODE, 4, 2), 3
s_setreg_b32 hwreg(HW_REG_MODE, 4, 2), s3
s_getreg_b32 s5, hwreg(HW_REG_MODE)
v_alignbit_b32 v1, v11, v1, v14
v_alignbit_b32 v1, v3, v1, 30
v_alignbyte_b32 v1, v3, s1, 3
v_mad_i32_i24 v3, v10, s2, 0.5
v_mad_i32_i24 v12, -1, s2, v13
v_fma_mixlo_f16 v3, v2, v3, 0 op_sel_hi:[1,0,0]
v_fma_mix_f32 v0, v1, v2, v3
v_fma_mix_f32 v0, -v1, |v2|, -|v3| op_sel:[1,0,1] op_sel_hi:[1,1,1]
v_fma_mixhi_f16 v0, v1, s2, v3 op_sel_hi:[0,1,0] clamp
