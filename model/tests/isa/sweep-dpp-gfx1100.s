// gfx1100 DPP16 and DPP8 forms of VOP1/VOP2/VOPC: every gfx10+ control, masks, bound_ctrl, fi,
// abs/neg; VOPC prints without the _dpp suffix.
v_mov_b32_dpp v0, v1 quad_perm:[0,1,2,3] row_mask:0xf bank_mask:0xf
v_mov_b32_dpp v0, v1 row_shl:1 row_mask:0x3 bank_mask:0xf bound_ctrl:1
v_mov_b32_dpp v0, v1 row_share:3 row_mask:0xf bank_mask:0xf fi:1
v_mov_b32_dpp v0, v1 row_xmask:5 row_mask:0xf bank_mask:0xf
v_mov_b32_dpp v0, v1 row_mirror row_mask:0xf bank_mask:0xf
v_mov_b32_dpp v0, v1 row_half_mirror row_mask:0xf bank_mask:0xf
v_mov_b32_dpp v0, v1 row_ror:3 row_mask:0xf bank_mask:0xf
v_add_f32_dpp v0, -v1, |v2| row_shr:2 row_mask:0xf bank_mask:0xf
v_add_nc_u32_dpp v0, v1, v2 row_shr:2 row_mask:0xf bank_mask:0xf
v_add_co_ci_u32_dpp v0, vcc_lo, v1, v2, vcc_lo row_shr:2 row_mask:0xf bank_mask:0xf
v_cndmask_b32_dpp v0, v1, v2, vcc_lo row_shr:2 row_mask:0xf bank_mask:0xf
v_mov_b32_dpp v0, v1 dpp8:[7,6,5,4,3,2,1,0]
v_mov_b32_dpp v0, v1 dpp8:[1,0,3,2,5,4,7,6] fi:1
v_add_f32_dpp v0, v1, v2 dpp8:[1,0,3,2,5,4,7,6]
v_cmp_eq_u32_dpp vcc_lo, v1, v2 row_shr:2 row_mask:0xf bank_mask:0xf
v_mov_b32_dpp v3, v4 quad_perm:[3,2,1,0] row_mask:0x1 bank_mask:0x6
v_mov_b32_dpp v3, v4 row_shr:15 row_mask:0xf bank_mask:0xf bound_ctrl:1
v_mov_b32_dpp v3, v4 row_share:15 row_mask:0xf bank_mask:0xf
v_mov_b32_dpp v3, v4 row_xmask:1 row_mask:0xf bank_mask:0xf bound_ctrl:1 fi:1
v_sub_f32_dpp v3, -|v4|, v5 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf
v_max_i32_dpp v3, v4, v5 row_shr:1 row_mask:0xf bank_mask:0xf
v_xor_b32_dpp v3, v4, v5 row_xmask:2 row_mask:0xf bank_mask:0xf
v_cvt_f32_i32_dpp v3, v4 row_mirror row_mask:0xf bank_mask:0xf
v_mul_f32_dpp v3, v4, v5 dpp8:[0,0,0,0,0,0,0,0]
v_cmp_lt_f32 vcc_lo, v1, v2 quad_perm:[2,3,0,1] row_mask:0xf bank_mask:0xf
