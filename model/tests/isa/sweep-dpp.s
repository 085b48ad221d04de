// DPP and SDWA forms of VOP1/VOP2/VOPC (gfx90a and gfx942 alike): every DPP control, the
// row/bank masks, bound_ctrl and abs/neg; every SDWA selection, dst_unused, sext, abs/neg,
// clamp/omod (decoded and printed; the model does not run clamp/omod yet), SGPR and constant
// sources, VOPC with VCC and an SGPR-pair sdst.
v_mov_b32_dpp v0, v1 quad_perm:[0,1,2,3] row_mask:0xf bank_mask:0xf
v_mov_b32_dpp v0, v1 quad_perm:[1,0,3,2] row_mask:0xa bank_mask:0x3 bound_ctrl:0
v_mov_b32_dpp v0, v1 row_shl:1 row_mask:0xf bank_mask:0xf
v_mov_b32_dpp v0, v1 row_shr:15 row_mask:0xf bank_mask:0xf
v_mov_b32_dpp v0, v1 row_ror:7 row_mask:0xf bank_mask:0xf
v_mov_b32_dpp v0, v1 wave_shl:1 row_mask:0xf bank_mask:0xf
v_mov_b32_dpp v0, v1 wave_rol:1 row_mask:0xf bank_mask:0xf
v_mov_b32_dpp v0, v1 wave_shr:1 row_mask:0xf bank_mask:0xf
v_mov_b32_dpp v0, v1 wave_ror:1 row_mask:0xf bank_mask:0xf
v_mov_b32_dpp v0, v1 row_mirror row_mask:0xf bank_mask:0xf
v_mov_b32_dpp v0, v1 row_half_mirror row_mask:0xf bank_mask:0xf
v_mov_b32_dpp v0, v1 row_bcast:15 row_mask:0xf bank_mask:0xf
v_mov_b32_dpp v0, v1 row_bcast:31 row_mask:0xf bank_mask:0xf
v_add_f32_dpp v0, -v1, |v2| row_shl:1 row_mask:0xf bank_mask:0xf
v_add_co_u32_dpp v0, vcc, v1, v2 row_shr:1 row_mask:0xf bank_mask:0xf
v_addc_co_u32_dpp v0, vcc, v1, v2, vcc row_shr:1 row_mask:0xf bank_mask:0xf
v_cndmask_b32_dpp v0, v1, v2, vcc row_shr:1 row_mask:0xf bank_mask:0xf
v_add_u32_dpp v0, v1, v2 row_shr:1 row_mask:0xf bank_mask:0xf
v_mov_b32_sdwa v0, v1 dst_sel:BYTE_1 dst_unused:UNUSED_PRESERVE src0_sel:WORD_1
v_mov_b32_sdwa v0, sext(v1) dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_0
v_mov_b32_sdwa v0, s1 dst_sel:DWORD dst_unused:UNUSED_SEXT src0_sel:BYTE_0
v_add_f16_sdwa v0, -v1, |v2| dst_sel:WORD_1 dst_unused:UNUSED_PAD src0_sel:WORD_1 src1_sel:WORD_0
v_add_f32_sdwa v0, v1, v2 clamp dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:DWORD src1_sel:DWORD
v_add_u32_sdwa v0, sext(v1), sext(v2) dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_2 src1_sel:BYTE_3
v_cmp_eq_u32_sdwa vcc, v1, v2 src0_sel:BYTE_0 src1_sel:WORD_1
v_cmp_eq_u32_sdwa s[2:3], v1, s2 src0_sel:BYTE_0 src1_sel:WORD_1
v_add_co_u32_sdwa v0, vcc, v1, v2 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_0 src1_sel:WORD_1
v_cvt_f32_f16_sdwa v0, v1 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:WORD_1
v_mul_u32_u24_sdwa v0, v1, v2 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:WORD_0 src1_sel:BYTE_1
v_lshlrev_b32_sdwa v0, v1, v2 dst_sel:WORD_1 dst_unused:UNUSED_PAD src0_sel:DWORD src1_sel:DWORD
v_mov_b32_sdwa v0, 1 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:DWORD
v_add_f32_sdwa v0, v1, v2 mul:2 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:DWORD src1_sel:DWORD
v_mov_b32_dpp v5, v6 quad_perm:[3,2,1,0] row_mask:0x1 bank_mask:0x8
v_mov_b32_dpp v5, v6 quad_perm:[0,0,0,0] row_mask:0xf bank_mask:0xf bound_ctrl:1
v_mov_b32_dpp v5, v6 row_shl:15 row_mask:0xf bank_mask:0xf
v_mov_b32_dpp v5, v6 row_shr:1 row_mask:0xf bank_mask:0xf bound_ctrl:1
v_mov_b32_dpp v5, v6 row_ror:1 row_mask:0xf bank_mask:0xf
v_mov_b32_dpp v5, v6 row_ror:15 row_mask:0xf bank_mask:0xf
v_add_u32_dpp v1, v2, v3 row_bcast:15 row_mask:0xa bank_mask:0xf
v_add_u32_dpp v1, v2, v3 row_bcast:31 row_mask:0xc bank_mask:0xf
v_sub_f32_dpp v1, -|v2|, -|v3| quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf
v_mul_f32_dpp v1, v2, v3 row_half_mirror row_mask:0xf bank_mask:0xf
v_max_f32_dpp v1, v2, v3 row_shr:2 row_mask:0xf bank_mask:0xf
v_min_f32_dpp v1, v2, v3 row_shr:4 row_mask:0xf bank_mask:0xe
v_max_i32_dpp v1, v2, v3 row_shr:8 row_mask:0xf bank_mask:0xc
v_min_u32_dpp v1, v2, v3 wave_shr:1 row_mask:0xf bank_mask:0xf
v_and_b32_dpp v1, v2, v3 row_mirror row_mask:0xf bank_mask:0xf
v_or_b32_dpp v1, v2, v3 row_shl:3 row_mask:0xf bank_mask:0xf
v_xor_b32_dpp v1, v2, v3 row_ror:4 row_mask:0xf bank_mask:0xf
v_lshlrev_b32_dpp v1, v2, v3 quad_perm:[2,3,0,1] row_mask:0xf bank_mask:0xf
v_add_f16_dpp v1, v2, v3 row_shr:1 row_mask:0xf bank_mask:0xf
v_sub_co_u32_dpp v1, vcc, v2, v3 row_shr:1 row_mask:0xf bank_mask:0xf
v_subb_co_u32_dpp v1, vcc, v2, v3, vcc row_shr:1 row_mask:0xf bank_mask:0xf
v_cvt_f32_i32_dpp v1, v2 row_shr:1 row_mask:0xf bank_mask:0xf
v_not_b32_dpp v1, v2 row_shr:1 row_mask:0xf bank_mask:0xf
v_cvt_f32_f16_dpp v1, -v2 quad_perm:[0,1,2,3] row_mask:0xf bank_mask:0xf
v_mov_b32_sdwa v1, v2 dst_sel:BYTE_0 dst_unused:UNUSED_PAD src0_sel:BYTE_1
v_mov_b32_sdwa v1, v2 dst_sel:BYTE_2 dst_unused:UNUSED_SEXT src0_sel:BYTE_2
v_mov_b32_sdwa v1, v2 dst_sel:BYTE_3 dst_unused:UNUSED_PRESERVE src0_sel:BYTE_3
v_mov_b32_sdwa v1, v2 dst_sel:WORD_0 dst_unused:UNUSED_PRESERVE src0_sel:WORD_0
v_mov_b32_sdwa v1, sext(v2) dst_sel:WORD_1 dst_unused:UNUSED_SEXT src0_sel:BYTE_1
v_mov_b32_sdwa v1, vcc_lo dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:WORD_1
v_mov_b32_sdwa v1, -1 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:WORD_1
v_cvt_f32_ubyte0_sdwa v1, v2 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_3
v_cvt_f16_f32_sdwa v1, -|v2| dst_sel:WORD_1 dst_unused:UNUSED_PRESERVE src0_sel:DWORD
v_cvt_f32_i32_sdwa v1, sext(v2) dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:WORD_0
v_cvt_f32_u32_sdwa v1, v2 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_0
v_add_u32_sdwa v1, v2, v3 dst_sel:BYTE_1 dst_unused:UNUSED_PRESERVE src0_sel:BYTE_1 src1_sel:BYTE_1
v_sub_u32_sdwa v1, v2, v3 dst_sel:WORD_1 dst_unused:UNUSED_PAD src0_sel:WORD_1 src1_sel:WORD_1
v_subrev_u32_sdwa v1, v2, v3 dst_sel:WORD_0 dst_unused:UNUSED_SEXT src0_sel:WORD_0 src1_sel:BYTE_0
v_mul_f16_sdwa v1, v2, v3 dst_sel:WORD_1 dst_unused:UNUSED_PRESERVE src0_sel:WORD_1 src1_sel:WORD_1
v_mul_f32_sdwa v1, v2, v3 div:2 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:DWORD src1_sel:DWORD
v_mul_f32_sdwa v1, v2, v3 mul:4 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:DWORD src1_sel:DWORD
v_mul_u32_u24_sdwa v1, s2, v3 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_0 src1_sel:BYTE_0
v_and_b32_sdwa v1, v2, s3 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_0 src1_sel:BYTE_2
v_or_b32_sdwa v1, v2, v3 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:WORD_0 src1_sel:DWORD
v_lshrrev_b32_sdwa v1, v2, v3 dst_sel:BYTE_1 dst_unused:UNUSED_PAD src0_sel:DWORD src1_sel:BYTE_1
v_ashrrev_i32_sdwa v1, v2, sext(v3) dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:DWORD src1_sel:WORD_1
v_max_i32_sdwa v1, sext(v2), sext(v3) dst_sel:WORD_0 dst_unused:UNUSED_PRESERVE src0_sel:WORD_0 src1_sel:WORD_0
v_min_u32_sdwa v1, v2, v3 dst_sel:BYTE_0 dst_unused:UNUSED_PRESERVE src0_sel:BYTE_0 src1_sel:BYTE_0
v_cndmask_b32_sdwa v1, v2, v3, vcc dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:WORD_1 src1_sel:WORD_0
v_addc_co_u32_sdwa v1, vcc, v2, v3, vcc dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_0 src1_sel:BYTE_0
v_cmp_lt_i32_sdwa vcc, sext(v1), sext(v2) src0_sel:WORD_1 src1_sel:WORD_1
v_cmp_gt_u32_sdwa s[4:5], v1, v2 src0_sel:BYTE_2 src1_sel:DWORD
v_cmp_lt_f16_sdwa vcc, |v1|, -v2 src0_sel:WORD_1 src1_sel:WORD_0
v_cmp_eq_f32_sdwa s[6:7], v1, v2 src0_sel:DWORD src1_sel:DWORD
v_cmp_class_f32_sdwa vcc, v1, v2 src0_sel:DWORD src1_sel:BYTE_0
v_add_u16_sdwa v1, v2, v3 dst_sel:BYTE_1 dst_unused:UNUSED_PAD src0_sel:BYTE_1 src1_sel:BYTE_1
v_mul_lo_u16_sdwa v1, v2, v3 dst_sel:WORD_1 dst_unused:UNUSED_PRESERVE src0_sel:WORD_1 src1_sel:WORD_1
v_sub_u16_sdwa v1, v2, v3 dst_sel:BYTE_3 dst_unused:UNUSED_PAD src0_sel:BYTE_3 src1_sel:BYTE_3
v_max_i16_dpp v1, v2, v3 row_shr:1 row_mask:0xf bank_mask:0xf
