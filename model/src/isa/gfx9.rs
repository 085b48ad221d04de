//! The gfx9 instruction decoder for gfx90a and gfx942: the encodings of AMD's "AMD Instinct
//! MI200" (CDNA2) and "MI300" (CDNA3) ISA references, in our own tables, for the instructions
//! the model executes. The two share their encodings; gfx942 adds a few opcodes (`v_mov_b64`,
//! `v_lshl_add_u64`), drops `v_mac_f32`, runs `scratch_*` with architected flat scratch (bit 13
//! of a scratch instruction says whether it has a VGPR address) and names the cache-policy
//! bits sc0/nt/sc1 where gfx90a says glc/slc/scc. An encoding or opcode outside the tables is
//! not decoded ([`decode`] answers `None`): the wave stops with an illegal-instruction
//! exception instead of guessing.
//!
//! [`Inst`]'s `Display` prints LLVM's assembler syntax, so tests compare it with
//! `llvm-objdump --mcpu=gfx90a` / `--mcpu=gfx942`.

use std::fmt;

/// The gfx9 targets the decoder knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Gfx90a,
    Gfx942,
}

/// Instruction encodings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enc {
    Sop2,
    Sopk,
    Sop1,
    Sopc,
    Sopp,
    Smem,
    Vop2,
    Vop1,
    Vopc,
    Vop3,
    /// VOP3P: packed f32 arithmetic and 64-bit moves (gfx90a and gfx942).
    Vop3p,
    Flat,
    Ds,
    Mubuf,
}

/// Operand widths in dwords: destination, then up to three sources (0: none).
type Sig = [u8; 4];

/// (opcode, mnemonic, widths)
type Row = (u16, &'static str, Sig);

const SOP2: &[Row] = &[
    (0, "s_add_u32", [1, 1, 1, 0]),
    (1, "s_sub_u32", [1, 1, 1, 0]),
    (2, "s_add_i32", [1, 1, 1, 0]),
    (3, "s_sub_i32", [1, 1, 1, 0]),
    (4, "s_addc_u32", [1, 1, 1, 0]),
    (5, "s_subb_u32", [1, 1, 1, 0]),
    (6, "s_min_i32", [1, 1, 1, 0]),
    (7, "s_min_u32", [1, 1, 1, 0]),
    (8, "s_max_i32", [1, 1, 1, 0]),
    (9, "s_max_u32", [1, 1, 1, 0]),
    (10, "s_cselect_b32", [1, 1, 1, 0]),
    (11, "s_cselect_b64", [2, 2, 2, 0]),
    (12, "s_and_b32", [1, 1, 1, 0]),
    (13, "s_and_b64", [2, 2, 2, 0]),
    (14, "s_or_b32", [1, 1, 1, 0]),
    (15, "s_or_b64", [2, 2, 2, 0]),
    (16, "s_xor_b32", [1, 1, 1, 0]),
    (17, "s_xor_b64", [2, 2, 2, 0]),
    (18, "s_andn2_b32", [1, 1, 1, 0]),
    (19, "s_andn2_b64", [2, 2, 2, 0]),
    (28, "s_lshl_b32", [1, 1, 1, 0]),
    (29, "s_lshl_b64", [2, 2, 1, 0]),
    (30, "s_lshr_b32", [1, 1, 1, 0]),
    (31, "s_lshr_b64", [2, 2, 1, 0]),
    (32, "s_ashr_i32", [1, 1, 1, 0]),
    (33, "s_ashr_i64", [2, 2, 1, 0]),
    (36, "s_mul_i32", [1, 1, 1, 0]),
];

/// SOPK: `s_getreg`/`s_setreg` move a bit field of a hardware register (`imm`: the `hwreg`
/// field, id | offset << 6 | (size - 1) << 11); the model has the MODE register only.
const SOPK: &[Row] = &[
    (0, "s_movk_i32", [1, 0, 0, 0]),
    (17, "s_getreg_b32", [1, 0, 0, 0]),
    (18, "s_setreg_b32", [0, 1, 0, 0]),
    (20, "s_setreg_imm32_b32", [0, 0, 0, 0]),
];

/// `hwreg` id of the MODE register (rounding and denormal modes, DX10 clamp, IEEE).
pub const HW_REG_MODE: i32 = 1;
/// SOPK opcodes of gfx9's `s_getreg_b32`, `s_setreg_b32`, `s_setreg_imm32_b32`.
pub const GETREG: u16 = 17;
pub const SETREG: u16 = 18;
pub const SETREG_IMM32: u16 = 20;

const SOP1: &[Row] = &[
    (0, "s_mov_b32", [1, 1, 0, 0]),
    (1, "s_mov_b64", [2, 2, 0, 0]),
    (4, "s_not_b32", [1, 1, 0, 0]),
    (5, "s_not_b64", [2, 2, 0, 0]),
    (8, "s_brev_b32", [1, 1, 0, 0]),
    (13, "s_bcnt1_i32_b64", [1, 2, 0, 0]),
    (17, "s_ff1_i32_b64", [1, 2, 0, 0]),
    (28, "s_getpc_b64", [2, 0, 0, 0]),
    (32, "s_and_saveexec_b64", [2, 2, 0, 0]),
    (33, "s_or_saveexec_b64", [2, 2, 0, 0]),
    (34, "s_xor_saveexec_b64", [2, 2, 0, 0]),
    (35, "s_andn2_saveexec_b64", [2, 2, 0, 0]),
];

const SOPC: &[Row] = &[
    (0, "s_cmp_eq_i32", [0, 1, 1, 0]),
    (1, "s_cmp_lg_i32", [0, 1, 1, 0]),
    (2, "s_cmp_gt_i32", [0, 1, 1, 0]),
    (3, "s_cmp_ge_i32", [0, 1, 1, 0]),
    (4, "s_cmp_lt_i32", [0, 1, 1, 0]),
    (5, "s_cmp_le_i32", [0, 1, 1, 0]),
    (6, "s_cmp_eq_u32", [0, 1, 1, 0]),
    (7, "s_cmp_lg_u32", [0, 1, 1, 0]),
    (8, "s_cmp_gt_u32", [0, 1, 1, 0]),
    (9, "s_cmp_ge_u32", [0, 1, 1, 0]),
    (10, "s_cmp_lt_u32", [0, 1, 1, 0]),
    (11, "s_cmp_le_u32", [0, 1, 1, 0]),
    (18, "s_cmp_eq_u64", [0, 2, 2, 0]),
    (19, "s_cmp_lg_u64", [0, 2, 2, 0]),
];

const SOPP: &[Row] = &[
    (0, "s_nop", [0; 4]),
    (1, "s_endpgm", [0; 4]),
    (2, "s_branch", [0; 4]),
    (4, "s_cbranch_scc0", [0; 4]),
    (5, "s_cbranch_scc1", [0; 4]),
    (6, "s_cbranch_vccz", [0; 4]),
    (7, "s_cbranch_vccnz", [0; 4]),
    (8, "s_cbranch_execz", [0; 4]),
    (9, "s_cbranch_execnz", [0; 4]),
    (10, "s_barrier", [0; 4]),
    (12, "s_waitcnt", [0; 4]),
    (13, "s_sethalt", [0; 4]),
    (14, "s_sleep", [0; 4]),
    (15, "s_setprio", [0; 4]),
    (16, "s_sendmsg", [0; 4]),
    (18, "s_trap", [0; 4]),
    (19, "s_icache_inv", [0; 4]),
    (20, "s_incperflevel", [0; 4]),
    (21, "s_decperflevel", [0; 4]),
];

/// `s_sendmsg` messages the model decodes: MSG_INTERRUPT (1), which carries M0's low 24 bits to
/// the KFD as an SQ interrupt (the data is the id of the event it signals).
pub const MSG_INTERRUPT: i32 = 1;

/// SMEM `s_memtime` / `s_memrealtime`: a 64-bit counter into an SGPR pair, no address.
pub const S_MEMTIME: u16 = 0x24;
pub const S_MEMREALTIME: u16 = 0x25;

const SMEM: &[Row] = &[
    (0, "s_load_dword", [1, 0, 0, 0]),
    (1, "s_load_dwordx2", [2, 0, 0, 0]),
    (2, "s_load_dwordx4", [4, 0, 0, 0]),
    (3, "s_load_dwordx8", [8, 0, 0, 0]),
    (4, "s_load_dwordx16", [16, 0, 0, 0]),
];

const VOP2: &[Row] = &[
    (0, "v_cndmask_b32", [1, 1, 1, 2]),
    (1, "v_add_f32", [1, 1, 1, 0]),
    (2, "v_sub_f32", [1, 1, 1, 0]),
    (3, "v_subrev_f32", [1, 1, 1, 0]),
    // gfx90a: v_fmac_f64 where gfx9 had v_mul_legacy_f32.
    (4, "v_fmac_f64", [2, 2, 2, 0]),
    (5, "v_mul_f32", [1, 1, 1, 0]),
    (6, "v_mul_i32_i24", [1, 1, 1, 0]),
    (7, "v_mul_hi_i32_i24", [1, 1, 1, 0]),
    (8, "v_mul_u32_u24", [1, 1, 1, 0]),
    (9, "v_mul_hi_u32_u24", [1, 1, 1, 0]),
    (10, "v_min_f32", [1, 1, 1, 0]),
    (11, "v_max_f32", [1, 1, 1, 0]),
    (12, "v_min_i32", [1, 1, 1, 0]),
    (13, "v_max_i32", [1, 1, 1, 0]),
    (14, "v_min_u32", [1, 1, 1, 0]),
    (15, "v_max_u32", [1, 1, 1, 0]),
    (16, "v_lshrrev_b32", [1, 1, 1, 0]),
    (17, "v_ashrrev_i32", [1, 1, 1, 0]),
    (18, "v_lshlrev_b32", [1, 1, 1, 0]),
    (19, "v_and_b32", [1, 1, 1, 0]),
    (20, "v_or_b32", [1, 1, 1, 0]),
    (21, "v_xor_b32", [1, 1, 1, 0]),
    (22, "v_mac_f32", [1, 1, 1, 0]),
    (25, "v_add_co_u32", [1, 1, 1, 0]),
    (26, "v_sub_co_u32", [1, 1, 1, 0]),
    (27, "v_subrev_co_u32", [1, 1, 1, 0]),
    (28, "v_addc_co_u32", [1, 1, 1, 2]),
    (29, "v_subb_co_u32", [1, 1, 1, 2]),
    (30, "v_subbrev_co_u32", [1, 1, 1, 2]),
    (31, "v_add_f16", [1, 1, 1, 0]),
    (32, "v_sub_f16", [1, 1, 1, 0]),
    (33, "v_subrev_f16", [1, 1, 1, 0]),
    (34, "v_mul_f16", [1, 1, 1, 0]),
    // 16-bit integer ops: the low halves, the result's high half zeroed (gfx9).
    (38, "v_add_u16", [1, 1, 1, 0]),
    (39, "v_sub_u16", [1, 1, 1, 0]),
    (40, "v_subrev_u16", [1, 1, 1, 0]),
    (41, "v_mul_lo_u16", [1, 1, 1, 0]),
    (42, "v_lshlrev_b16", [1, 1, 1, 0]),
    (43, "v_lshrrev_b16", [1, 1, 1, 0]),
    (44, "v_ashrrev_i16", [1, 1, 1, 0]),
    (45, "v_max_f16", [1, 1, 1, 0]),
    (46, "v_min_f16", [1, 1, 1, 0]),
    (47, "v_max_u16", [1, 1, 1, 0]),
    (48, "v_max_i16", [1, 1, 1, 0]),
    (49, "v_min_u16", [1, 1, 1, 0]),
    (50, "v_min_i16", [1, 1, 1, 0]),
    (52, "v_add_u32", [1, 1, 1, 0]),
    (53, "v_sub_u32", [1, 1, 1, 0]),
    (54, "v_subrev_u32", [1, 1, 1, 0]),
    (59, "v_fmac_f32", [1, 1, 1, 0]),
];

const VOP1: &[Row] = &[
    (0, "v_nop", [0; 4]),
    (1, "v_mov_b32", [1, 1, 0, 0]),
    (2, "v_readfirstlane_b32", [1, 1, 0, 0]),
    (3, "v_cvt_i32_f64", [1, 2, 0, 0]),
    (4, "v_cvt_f64_i32", [2, 1, 0, 0]),
    (5, "v_cvt_f32_i32", [1, 1, 0, 0]),
    (6, "v_cvt_f32_u32", [1, 1, 0, 0]),
    (7, "v_cvt_u32_f32", [1, 1, 0, 0]),
    (8, "v_cvt_i32_f32", [1, 1, 0, 0]),
    (10, "v_cvt_f16_f32", [1, 1, 0, 0]),
    (11, "v_cvt_f32_f16", [1, 1, 0, 0]),
    (15, "v_cvt_f32_f64", [1, 2, 0, 0]),
    (16, "v_cvt_f64_f32", [2, 1, 0, 0]),
    (17, "v_cvt_f32_ubyte0", [1, 1, 0, 0]),
    (18, "v_cvt_f32_ubyte1", [1, 1, 0, 0]),
    (19, "v_cvt_f32_ubyte2", [1, 1, 0, 0]),
    (20, "v_cvt_f32_ubyte3", [1, 1, 0, 0]),
    (21, "v_cvt_u32_f64", [1, 2, 0, 0]),
    (22, "v_cvt_f64_u32", [2, 1, 0, 0]),
    (23, "v_trunc_f64", [2, 2, 0, 0]),
    (24, "v_ceil_f64", [2, 2, 0, 0]),
    (25, "v_rndne_f64", [2, 2, 0, 0]),
    (26, "v_floor_f64", [2, 2, 0, 0]),
    (27, "v_fract_f32", [1, 1, 0, 0]),
    (28, "v_trunc_f32", [1, 1, 0, 0]),
    (29, "v_ceil_f32", [1, 1, 0, 0]),
    (30, "v_rndne_f32", [1, 1, 0, 0]),
    (31, "v_floor_f32", [1, 1, 0, 0]),
    (32, "v_exp_f32", [1, 1, 0, 0]),
    (33, "v_log_f32", [1, 1, 0, 0]),
    (34, "v_rcp_f32", [1, 1, 0, 0]),
    (35, "v_rcp_iflag_f32", [1, 1, 0, 0]),
    (36, "v_rsq_f32", [1, 1, 0, 0]),
    (37, "v_rcp_f64", [2, 2, 0, 0]),
    (38, "v_rsq_f64", [2, 2, 0, 0]),
    (39, "v_sqrt_f32", [1, 1, 0, 0]),
    (40, "v_sqrt_f64", [2, 2, 0, 0]),
    (41, "v_sin_f32", [1, 1, 0, 0]),
    (42, "v_cos_f32", [1, 1, 0, 0]),
    (43, "v_not_b32", [1, 1, 0, 0]),
    (44, "v_bfrev_b32", [1, 1, 0, 0]),
    (45, "v_ffbh_u32", [1, 1, 0, 0]),
    (46, "v_ffbl_b32", [1, 1, 0, 0]),
    (47, "v_ffbh_i32", [1, 1, 0, 0]),
    (48, "v_frexp_exp_i32_f64", [1, 2, 0, 0]),
    (49, "v_frexp_mant_f64", [2, 2, 0, 0]),
    (50, "v_fract_f64", [2, 2, 0, 0]),
    (51, "v_frexp_exp_i32_f32", [1, 1, 0, 0]),
    (52, "v_frexp_mant_f32", [1, 1, 0, 0]),
    // gfx942 only (see `ONLY_ON`).
    (56, "v_mov_b64", [2, 2, 0, 0]),
];

/// VOPC: f32 compares at 0x40.., i32 at 0xc0.., u32 at 0xc8.. (the suffix order of each group).
const VOPC_F32: [&str; 16] = [
    "v_cmp_f_f32",
    "v_cmp_lt_f32",
    "v_cmp_eq_f32",
    "v_cmp_le_f32",
    "v_cmp_gt_f32",
    "v_cmp_lg_f32",
    "v_cmp_ge_f32",
    "v_cmp_o_f32",
    "v_cmp_u_f32",
    "v_cmp_nge_f32",
    "v_cmp_nlg_f32",
    "v_cmp_ngt_f32",
    "v_cmp_nle_f32",
    "v_cmp_neq_f32",
    "v_cmp_nlt_f32",
    "v_cmp_tru_f32",
];
const VOPC_I32: [&str; 8] =
    ["v_cmp_f_i32", "v_cmp_lt_i32", "v_cmp_eq_i32", "v_cmp_le_i32", "v_cmp_gt_i32", "v_cmp_ne_i32", "v_cmp_ge_i32", "v_cmp_t_i32"];
const VOPC_U32: [&str; 8] =
    ["v_cmp_f_u32", "v_cmp_lt_u32", "v_cmp_eq_u32", "v_cmp_le_u32", "v_cmp_gt_u32", "v_cmp_ne_u32", "v_cmp_ge_u32", "v_cmp_t_u32"];

const VOPC_F16: [&str; 16] = [
    "v_cmp_f_f16",
    "v_cmp_lt_f16",
    "v_cmp_eq_f16",
    "v_cmp_le_f16",
    "v_cmp_gt_f16",
    "v_cmp_lg_f16",
    "v_cmp_ge_f16",
    "v_cmp_o_f16",
    "v_cmp_u_f16",
    "v_cmp_nge_f16",
    "v_cmp_nlg_f16",
    "v_cmp_ngt_f16",
    "v_cmp_nle_f16",
    "v_cmp_neq_f16",
    "v_cmp_nlt_f16",
    "v_cmp_tru_f16",
];
const VOPC_F64: [&str; 16] = [
    "v_cmp_f_f64",
    "v_cmp_lt_f64",
    "v_cmp_eq_f64",
    "v_cmp_le_f64",
    "v_cmp_gt_f64",
    "v_cmp_lg_f64",
    "v_cmp_ge_f64",
    "v_cmp_o_f64",
    "v_cmp_u_f64",
    "v_cmp_nge_f64",
    "v_cmp_nlg_f64",
    "v_cmp_ngt_f64",
    "v_cmp_nle_f64",
    "v_cmp_neq_f64",
    "v_cmp_nlt_f64",
    "v_cmp_tru_f64",
];
const VOPC_I64: [&str; 8] =
    ["v_cmp_f_i64", "v_cmp_lt_i64", "v_cmp_eq_i64", "v_cmp_le_i64", "v_cmp_gt_i64", "v_cmp_ne_i64", "v_cmp_ge_i64", "v_cmp_t_i64"];
const VOPC_U64: [&str; 8] =
    ["v_cmp_f_u64", "v_cmp_lt_u64", "v_cmp_eq_u64", "v_cmp_le_u64", "v_cmp_gt_u64", "v_cmp_ne_u64", "v_cmp_ge_u64", "v_cmp_t_u64"];

/// VOP3-only opcodes (VOPC, VOP2 and VOP1 also have VOP3 forms at op, 0x100 + op, 0x140 + op).
const VOP3: &[Row] = &[
    (0x1c1, "v_mad_f32", [1, 1, 1, 1]),
    (0x1c2, "v_mad_i32_i24", [1, 1, 1, 1]),
    (0x1c3, "v_mad_u32_u24", [1, 1, 1, 1]),
    (0x1c8, "v_bfe_u32", [1, 1, 1, 1]),
    (0x1c9, "v_bfe_i32", [1, 1, 1, 1]),
    (0x1ca, "v_bfi_b32", [1, 1, 1, 1]),
    (0x1cb, "v_fma_f32", [1, 1, 1, 1]),
    (0x1cc, "v_fma_f64", [2, 2, 2, 2]),
    (0x1ce, "v_alignbit_b32", [1, 1, 1, 1]),
    (0x1cf, "v_alignbyte_b32", [1, 1, 1, 1]),
    (0x1d1, "v_min3_i32", [1, 1, 1, 1]),
    (0x1d2, "v_min3_u32", [1, 1, 1, 1]),
    (0x1d4, "v_max3_i32", [1, 1, 1, 1]),
    (0x1d5, "v_max3_u32", [1, 1, 1, 1]),
    (0x1d7, "v_med3_i32", [1, 1, 1, 1]),
    (0x1d8, "v_med3_u32", [1, 1, 1, 1]),
    (0x1de, "v_div_fixup_f32", [1, 1, 1, 1]),
    (0x1df, "v_div_fixup_f64", [2, 2, 2, 2]),
    (0x1e0, "v_div_scale_f32", [1, 1, 1, 1]),
    (0x1e1, "v_div_scale_f64", [2, 2, 2, 2]),
    (0x1e2, "v_div_fmas_f32", [1, 1, 1, 1]),
    (0x1e3, "v_div_fmas_f64", [2, 2, 2, 2]),
    (0x1e8, "v_mad_u64_u32", [2, 1, 1, 2]),
    (0x1ed, "v_perm_b32", [1, 1, 1, 1]),
    (0x1f3, "v_xad_u32", [1, 1, 1, 1]),
    (0x1fd, "v_lshl_add_u32", [1, 1, 1, 1]),
    (0x1fe, "v_add_lshl_u32", [1, 1, 1, 1]),
    (0x1ff, "v_add3_u32", [1, 1, 1, 1]),
    (0x200, "v_lshl_or_b32", [1, 1, 1, 1]),
    (0x201, "v_and_or_b32", [1, 1, 1, 1]),
    (0x202, "v_or3_b32", [1, 1, 1, 1]),
    (0x206, "v_fma_f16", [1, 1, 1, 1]),
    (0x207, "v_div_fixup_f16", [1, 1, 1, 1]),
    (0x280, "v_add_f64", [2, 2, 2, 0]),
    (0x281, "v_mul_f64", [2, 2, 2, 0]),
    (0x282, "v_min_f64", [2, 2, 2, 0]),
    (0x283, "v_max_f64", [2, 2, 2, 0]),
    (0x284, "v_ldexp_f64", [2, 2, 1, 0]),
    (0x285, "v_mul_lo_u32", [1, 1, 1, 0]),
    (0x286, "v_mul_hi_u32", [1, 1, 1, 0]),
    (0x287, "v_mul_hi_i32", [1, 1, 1, 0]),
    (0x288, "v_ldexp_f32", [1, 1, 1, 0]),
    (0x289, "v_readlane_b32", [1, 1, 1, 0]),
    (0x28b, "v_bcnt_u32_b32", [1, 1, 1, 0]),
    (0x28c, "v_mbcnt_lo_u32_b32", [1, 1, 1, 0]),
    (0x28d, "v_mbcnt_hi_u32_b32", [1, 1, 1, 0]),
    (0x28f, "v_lshlrev_b64", [2, 1, 2, 0]),
    (0x290, "v_lshrrev_b64", [2, 1, 2, 0]),
    (0x291, "v_ashrrev_i64", [2, 1, 2, 0]),
    // gfx942 only: D = (S0 << S1[2:0]) + S2, 64-bit.
    (0x208, "v_lshl_add_u64", [2, 2, 1, 2]),
];

/// VOP3P opcodes gfx90a adds and gfx942 keeps (operands are 64-bit: two f32 halves or one
/// b64): clang's float2 arithmetic and 64-bit moves, the HIP runtime's blit kernels
/// (`v_pk_mov_b32`).
const VOP3P: &[Row] = &[
    // Mixed precision: each source an f32, or the f16 half op_sel picks where op_sel_hi is
    // set (f16 division multiplies through v_fma_mixlo_f16).
    (0x20, "v_fma_mix_f32", [1, 1, 1, 1]),
    (0x21, "v_fma_mixlo_f16", [1, 1, 1, 1]),
    (0x22, "v_fma_mixhi_f16", [1, 1, 1, 1]),
    (0x30, "v_pk_fma_f32", [2, 2, 2, 2]),
    (0x31, "v_pk_mul_f32", [2, 2, 2, 0]),
    (0x32, "v_pk_add_f32", [2, 2, 2, 0]),
    (0x33, "v_pk_mov_b32", [2, 2, 2, 0]),
];

/// Opcodes one target has and the other does not: (encoding, opcode, target). gfx942 dropped
/// v_mac_f32 and v_mad_f32, and added v_mov_b64 and v_lshl_add_u64.
const ONLY_ON: &[(Enc, u16, Target)] = &[
    (Enc::Vop2, 22, Target::Gfx90a),
    (Enc::Vop3, 0x100 + 22, Target::Gfx90a),
    (Enc::Vop3, 0x1c1, Target::Gfx90a),
    (Enc::Vop1, 56, Target::Gfx942),
    (Enc::Vop3, 0x140 + 56, Target::Gfx942),
    (Enc::Vop3, 0x208, Target::Gfx942),
];

/// Does `target` have the opcode?
fn on(target: Target, enc: Enc, op: u16) -> bool {
    ONLY_ON.iter().all(|&(e, o, t)| e != enc || o != op || t == target)
}

/// FLAT / SCRATCH / GLOBAL memory opcodes: (opcode, name by segment, dwords, is store).
const FLAT: &[(u16, [&str; 3], u8, bool)] = &[
    (16, ["flat_load_ubyte", "scratch_load_ubyte", "global_load_ubyte"], 1, false),
    (17, ["flat_load_sbyte", "scratch_load_sbyte", "global_load_sbyte"], 1, false),
    (18, ["flat_load_ushort", "scratch_load_ushort", "global_load_ushort"], 1, false),
    (19, ["flat_load_sshort", "scratch_load_sshort", "global_load_sshort"], 1, false),
    (24, ["flat_store_byte", "scratch_store_byte", "global_store_byte"], 1, true),
    (26, ["flat_store_short", "scratch_store_short", "global_store_short"], 1, true),
    (20, ["flat_load_dword", "scratch_load_dword", "global_load_dword"], 1, false),
    (21, ["flat_load_dwordx2", "scratch_load_dwordx2", "global_load_dwordx2"], 2, false),
    (22, ["flat_load_dwordx3", "scratch_load_dwordx3", "global_load_dwordx3"], 3, false),
    (23, ["flat_load_dwordx4", "scratch_load_dwordx4", "global_load_dwordx4"], 4, false),
    (28, ["flat_store_dword", "scratch_store_dword", "global_store_dword"], 1, true),
    (29, ["flat_store_dwordx2", "scratch_store_dwordx2", "global_store_dwordx2"], 2, true),
    (30, ["flat_store_dwordx3", "scratch_store_dwordx3", "global_store_dwordx3"], 3, true),
    (31, ["flat_store_dwordx4", "scratch_store_dwordx4", "global_store_dwordx4"], 4, true),
];

/// DS (LDS) opcodes: widths are [returned dwords, address, data0 dwords, data1 dwords].
/// Atomics at 0..=21 (32-bit) and 64..=80 (64-bit) have returning forms at +32 (`_rtn`).
const DS: &[Row] = &[
    (0, "ds_add_u32", [0, 1, 1, 0]),
    (1, "ds_sub_u32", [0, 1, 1, 0]),
    (2, "ds_rsub_u32", [0, 1, 1, 0]),
    (3, "ds_inc_u32", [0, 1, 1, 0]),
    (4, "ds_dec_u32", [0, 1, 1, 0]),
    (5, "ds_min_i32", [0, 1, 1, 0]),
    (6, "ds_max_i32", [0, 1, 1, 0]),
    (7, "ds_min_u32", [0, 1, 1, 0]),
    (8, "ds_max_u32", [0, 1, 1, 0]),
    (9, "ds_and_b32", [0, 1, 1, 0]),
    (10, "ds_or_b32", [0, 1, 1, 0]),
    (11, "ds_xor_b32", [0, 1, 1, 0]),
    (13, "ds_write_b32", [0, 1, 1, 0]),
    (14, "ds_write2_b32", [0, 1, 1, 1]),
    (15, "ds_write2st64_b32", [0, 1, 1, 1]),
    (16, "ds_cmpst_b32", [0, 1, 1, 1]),
    (21, "ds_add_f32", [0, 1, 1, 0]),
    (30, "ds_write_b8", [0, 1, 1, 0]),
    (31, "ds_write_b16", [0, 1, 1, 0]),
    (32, "ds_add_rtn_u32", [1, 1, 1, 0]),
    (33, "ds_sub_rtn_u32", [1, 1, 1, 0]),
    (34, "ds_rsub_rtn_u32", [1, 1, 1, 0]),
    (35, "ds_inc_rtn_u32", [1, 1, 1, 0]),
    (36, "ds_dec_rtn_u32", [1, 1, 1, 0]),
    (37, "ds_min_rtn_i32", [1, 1, 1, 0]),
    (38, "ds_max_rtn_i32", [1, 1, 1, 0]),
    (39, "ds_min_rtn_u32", [1, 1, 1, 0]),
    (40, "ds_max_rtn_u32", [1, 1, 1, 0]),
    (41, "ds_and_rtn_b32", [1, 1, 1, 0]),
    (42, "ds_or_rtn_b32", [1, 1, 1, 0]),
    (43, "ds_xor_rtn_b32", [1, 1, 1, 0]),
    (45, "ds_wrxchg_rtn_b32", [1, 1, 1, 0]),
    (48, "ds_cmpst_rtn_b32", [1, 1, 1, 1]),
    (53, "ds_add_rtn_f32", [1, 1, 1, 0]),
    (54, "ds_read_b32", [1, 1, 0, 0]),
    (55, "ds_read2_b32", [2, 1, 0, 0]),
    (56, "ds_read2st64_b32", [2, 1, 0, 0]),
    (57, "ds_read_i8", [1, 1, 0, 0]),
    (58, "ds_read_u8", [1, 1, 0, 0]),
    (59, "ds_read_i16", [1, 1, 0, 0]),
    (60, "ds_read_u16", [1, 1, 0, 0]),
    (61, "ds_swizzle_b32", [1, 1, 0, 0]),
    (62, "ds_permute_b32", [1, 1, 1, 0]),
    (63, "ds_bpermute_b32", [1, 1, 1, 0]),
    (64, "ds_add_u64", [0, 1, 2, 0]),
    (65, "ds_sub_u64", [0, 1, 2, 0]),
    (66, "ds_rsub_u64", [0, 1, 2, 0]),
    (67, "ds_inc_u64", [0, 1, 2, 0]),
    (68, "ds_dec_u64", [0, 1, 2, 0]),
    (69, "ds_min_i64", [0, 1, 2, 0]),
    (70, "ds_max_i64", [0, 1, 2, 0]),
    (71, "ds_min_u64", [0, 1, 2, 0]),
    (72, "ds_max_u64", [0, 1, 2, 0]),
    (73, "ds_and_b64", [0, 1, 2, 0]),
    (74, "ds_or_b64", [0, 1, 2, 0]),
    (75, "ds_xor_b64", [0, 1, 2, 0]),
    (77, "ds_write_b64", [0, 1, 2, 0]),
    (78, "ds_write2_b64", [0, 1, 2, 2]),
    (79, "ds_write2st64_b64", [0, 1, 2, 2]),
    (80, "ds_cmpst_b64", [0, 1, 2, 2]),
    (96, "ds_add_rtn_u64", [2, 1, 2, 0]),
    (97, "ds_sub_rtn_u64", [2, 1, 2, 0]),
    (98, "ds_rsub_rtn_u64", [2, 1, 2, 0]),
    (99, "ds_inc_rtn_u64", [2, 1, 2, 0]),
    (100, "ds_dec_rtn_u64", [2, 1, 2, 0]),
    (101, "ds_min_rtn_i64", [2, 1, 2, 0]),
    (102, "ds_max_rtn_i64", [2, 1, 2, 0]),
    (103, "ds_min_rtn_u64", [2, 1, 2, 0]),
    (104, "ds_max_rtn_u64", [2, 1, 2, 0]),
    (105, "ds_and_rtn_b64", [2, 1, 2, 0]),
    (106, "ds_or_rtn_b64", [2, 1, 2, 0]),
    (107, "ds_xor_rtn_b64", [2, 1, 2, 0]),
    (109, "ds_wrxchg_rtn_b64", [2, 1, 2, 0]),
    (112, "ds_cmpst_rtn_b64", [2, 1, 2, 2]),
    (118, "ds_read_b64", [2, 1, 0, 0]),
    (119, "ds_read2_b64", [4, 1, 0, 0]),
    (120, "ds_read2st64_b64", [4, 1, 0, 0]),
    (222, "ds_write_b96", [0, 1, 3, 0]),
    (223, "ds_write_b128", [0, 1, 4, 0]),
    (254, "ds_read_b96", [3, 1, 0, 0]),
    (255, "ds_read_b128", [4, 1, 0, 0]),
];

/// MUBUF (buffer) loads and stores: (opcode, mnemonic, bytes per lane, is store).
pub const MUBUF: &[(u16, &str, u8, bool)] = &[
    (16, "buffer_load_ubyte", 1, false),
    (17, "buffer_load_sbyte", 1, false),
    (18, "buffer_load_ushort", 2, false),
    (19, "buffer_load_sshort", 2, false),
    (20, "buffer_load_dword", 4, false),
    (21, "buffer_load_dwordx2", 8, false),
    (22, "buffer_load_dwordx3", 12, false),
    (23, "buffer_load_dwordx4", 16, false),
    (24, "buffer_store_byte", 1, true),
    (26, "buffer_store_short", 2, true),
    (28, "buffer_store_dword", 4, true),
    (29, "buffer_store_dwordx2", 8, true),
    (30, "buffer_store_dwordx3", 12, true),
    (31, "buffer_store_dwordx4", 16, true),
];

/// FLAT / GLOBAL atomics: (opcode, flat name, global name, dwords of the memory operand).
/// cmpswap's data is two operands (the new value, then the compared one).
const FLAT_ATOMICS: &[(u16, &str, &str, u8)] = &[
    (64, "flat_atomic_swap", "global_atomic_swap", 1),
    (65, "flat_atomic_cmpswap", "global_atomic_cmpswap", 1),
    (66, "flat_atomic_add", "global_atomic_add", 1),
    (67, "flat_atomic_sub", "global_atomic_sub", 1),
    (68, "flat_atomic_smin", "global_atomic_smin", 1),
    (69, "flat_atomic_umin", "global_atomic_umin", 1),
    (70, "flat_atomic_smax", "global_atomic_smax", 1),
    (71, "flat_atomic_umax", "global_atomic_umax", 1),
    (72, "flat_atomic_and", "global_atomic_and", 1),
    (73, "flat_atomic_or", "global_atomic_or", 1),
    (74, "flat_atomic_xor", "global_atomic_xor", 1),
    (75, "flat_atomic_inc", "global_atomic_inc", 1),
    (76, "flat_atomic_dec", "global_atomic_dec", 1),
    (96, "flat_atomic_swap_x2", "global_atomic_swap_x2", 2),
    (97, "flat_atomic_cmpswap_x2", "global_atomic_cmpswap_x2", 2),
    (98, "flat_atomic_add_x2", "global_atomic_add_x2", 2),
    (99, "flat_atomic_sub_x2", "global_atomic_sub_x2", 2),
    (100, "flat_atomic_smin_x2", "global_atomic_smin_x2", 2),
    (101, "flat_atomic_umin_x2", "global_atomic_umin_x2", 2),
    (102, "flat_atomic_smax_x2", "global_atomic_smax_x2", 2),
    (103, "flat_atomic_umax_x2", "global_atomic_umax_x2", 2),
    (104, "flat_atomic_and_x2", "global_atomic_and_x2", 2),
    (105, "flat_atomic_or_x2", "global_atomic_or_x2", 2),
    (106, "flat_atomic_xor_x2", "global_atomic_xor_x2", 2),
    (107, "flat_atomic_inc_x2", "global_atomic_inc_x2", 2),
    (108, "flat_atomic_dec_x2", "global_atomic_dec_x2", 2),
];

/// Operand code of a literal constant following the instruction.
pub const LITERAL: u16 = 255;
/// SGPR operand codes of VCC and EXEC (low halves).
pub const VCC: u16 = 106;
pub const EXEC: u16 = 126;
/// FLAT `saddr` value meaning "no SGPR base" (`off`).
pub const SADDR_OFF: u16 = 0x7f;

/// One decoded instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inst {
    pub enc: Enc,
    pub op: u16,
    pub name: &'static str,
    /// Operand widths (destination, sources), dwords.
    pub sig: Sig,
    /// Size in bytes (4 or 8).
    pub len: u8,
    /// Destination: SGPR operand code (scalar, VOPC e64, v_readfirstlane) or VGPR index.
    pub dst: u16,
    /// VOP3b's SGPR carry-out / VOPC-e64's mask destination (operand code); else unused.
    pub sdst: u16,
    /// Source operand codes (0..=255 scalar and constants, 256.. VGPRs).
    pub src: [u16; 3],
    pub lit: u32,
    /// SOPP / SOPK simm16 (sign-extended), SMEM byte offset, FLAT offset; VOP3P:
    /// `op_sel | op_sel_hi << 3` (a bit per source).
    pub imm: i32,
    /// VOP3 modifiers: abs and neg bit masks per source, clamp, output modifier. VOP3P:
    /// `neg` is neg_lo and `abs` neg_hi (the same encoding bits).
    pub abs: u8,
    pub neg: u8,
    pub clamp: bool,
    pub omod: u8,
    /// FLAT: segment (0 flat, 1 scratch, 2 global), SGPR base, data VGPR.
    pub seg: u8,
    pub saddr: u16,
    pub data: u16,
    /// Cache policy (FLAT, MUBUF; SMEM has glc only): glc/sc0, slc/nt, scc/sc1 as gfx90a /
    /// gfx942 name them.
    pub glc: bool,
    pub slc: bool,
    pub sc1: bool,
    /// FLAT: dwords moved and whether it stores.
    pub dwords: u8,
    pub store: bool,
    /// FLAT atomic (returns the old value when `glc`).
    pub atomic: bool,
    /// DS: the second data VGPR (`data` is the first; `imm` holds offset0 | offset1 << 8).
    pub data1: u16,
    /// MUBUF: the VGPR address holds an offset / an index (both: index, then offset).
    /// SCRATCH: `offen` is SVE, the instruction has a VGPR address (else `off`).
    pub offen: bool,
    pub idxen: bool,
    /// The target it was decoded for (the printer names cache bits after it).
    pub target: Target,
    /// VOP1/VOP2/VOPC: the DPP or SDWA form (src0 0xfa / 0xf9, a second dword); its abs/neg
    /// are in `abs`/`neg`, SDWA's clamp/omod in `clamp`/`omod`.
    pub ext: Ext,
}

/// A VOP1/VOP2/VOPC instruction's data-parallel-primitives or sub-dword-addressing form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ext {
    None,
    Dpp(Dpp),
    Sdwa(Sdwa),
    /// gfx11 DPP8: lane `l` of each group of 8 reads lane `sel >> 3 * (l % 8) & 7` of its
    /// group; `fi`: disabled source lanes are read too (else they give 0).
    Dpp8 {
        sel: u32,
        fi: bool,
    },
}

/// DPP: src0 is read from the lane `ctrl` names (see [`dpp_source`]); lanes outside
/// `row_mask` (a bit per row of 16 lanes) or `bank_mask` (a bit per group of 4 lanes in each
/// row) are not written; a lane whose source lane is out of range or disabled reads 0 with
/// `bound_ctrl` (LLVM prints `bound_ctrl:1`, older syntax `bound_ctrl:0`), else is not written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dpp {
    pub ctrl: u16,
    pub row_mask: u8,
    pub bank_mask: u8,
    pub bound_ctrl: bool,
    /// gfx11's FI (fetch inactive): a disabled source lane is read as it stands.
    pub fi: bool,
}

/// SDWA: each source's byte/word selection (`SEL_*`) with zero or sign extension (`sext`, a
/// bit per source), and where the result goes in the destination (`dst_sel`) with what the
/// other bits become (`dst_unused`: `UNUSED_*`). VOPC has no destination selection; its mask
/// goes to `sdst` (VCC unless the SD bit names an SGPR pair).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sdwa {
    pub dst_sel: u8,
    pub dst_unused: u8,
    pub sel: [u8; 2],
    pub sext: u8,
}

/// SDWA selections: bytes 0..3, then words 0 and 1, then the whole dword.
pub const SEL_WORD_0: u8 = 4;
pub const SEL_DWORD: u8 = 6;
/// SDWA `dst_unused`: the bits outside `dst_sel` become 0, the sign of the result, or keep
/// the destination's old bits.
pub const UNUSED_PAD: u8 = 0;
pub const UNUSED_SEXT: u8 = 1;
pub const UNUSED_PRESERVE: u8 = 2;

const SEL_NAMES: [&str; 7] = ["BYTE_0", "BYTE_1", "BYTE_2", "BYTE_3", "WORD_0", "WORD_1", "DWORD"];

/// The (bit offset, width) an SDWA selection covers.
pub fn sel_bits(sel: u8) -> (u32, u32) {
    match sel {
        0..=3 => (8 * u32::from(sel), 8),
        4 | 5 => (16 * u32::from(sel - 4), 16),
        _ => (0, 32),
    }
}

/// An SDWA source operand: the selected bits moved down, zero- or sign-extended.
pub fn sdwa_operand(x: u32, sel: u8, sext: bool) -> u32 {
    let (pos, width) = sel_bits(sel);
    if width == 32 {
        return x;
    }
    let v = (x >> pos) & ((1 << width) - 1);
    if sext {
        (((v << (32 - width)) as i32) >> (32 - width)) as u32
    } else {
        v
    }
}

/// An SDWA result `r` placed into the destination's `dst_sel` bits, the others set as
/// `unused` says (`old`: the destination's value before).
pub fn sdwa_result(r: u32, old: u32, dst_sel: u8, unused: u8) -> u32 {
    let (pos, width) = sel_bits(dst_sel);
    if width == 32 {
        return r;
    }
    let field = ((1u32 << width) - 1) << pos;
    let v = (r << pos) & field;
    match unused {
        UNUSED_PRESERVE => (old & !field) | v,
        // The result's top bit fills the bits above the field; the bits below are 0.
        UNUSED_SEXT if v >> (pos + width - 1) & 1 != 0 => v | !((1u32 << (pos + width - 1)) - 1),
        _ => v,
    }
}

/// The lane DPP control `ctrl` makes `lane` read in a wave of `lanes`, or `None` when that
/// lane is out of range (shifts past a row's or the wave's end, a broadcast into row 0).
pub fn dpp_source(ctrl: u16, lane: usize, lanes: usize) -> Option<usize> {
    let (row, l) = (lane & !15, lane & 15);
    let n = usize::from(ctrl & 15);
    match ctrl {
        0..=0xff => Some((lane & !3) | usize::from(ctrl >> (2 * (lane & 3)) & 3)),
        0x101..=0x10f => (l + n < 16).then_some(lane + n),
        0x111..=0x11f => (l >= n).then(|| lane - n),
        0x121..=0x12f => Some(row | ((l + 16 - n) & 15)),
        0x130 => (lane + 1 < lanes).then_some(lane + 1),
        0x134 => Some((lane + 1) % lanes),
        0x138 => lane.checked_sub(1),
        0x13c => Some((lane + lanes - 1) % lanes),
        0x140 => Some(row | (15 - l)),
        0x141 => Some((lane & !7) | (7 - (lane & 7))),
        // Lane 15 of each row to the next row; lane 31 to rows 2 and 3.
        0x142 => (row >= 16).then(|| row - 1),
        0x143 => (lane >= 32).then_some(31),
        // gfx10+: every lane of a row reads its lane n; lane l reads lane l ^ n of its row.
        0x150..=0x15f => Some(row | n),
        0x160..=0x16f => Some(row | (l ^ n)),
        _ => None,
    }
}

/// Is `ctrl` a DPP control gfx9 defines?
fn dpp_ctrl_valid(ctrl: u16) -> bool {
    matches!(ctrl, 0..=0xff | 0x101..=0x10f | 0x111..=0x11f | 0x121..=0x12f | 0x130 | 0x134 | 0x138 | 0x13c | 0x140..=0x143)
}

/// The DPP control as LLVM prints it.
pub struct DppCtrl(pub u16);

impl fmt::Display for DppCtrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = self.0;
        let n = c & 15;
        match c {
            0..=0xff => write!(f, "quad_perm:[{},{},{},{}]", c & 3, (c >> 2) & 3, (c >> 4) & 3, (c >> 6) & 3),
            0x101..=0x10f => write!(f, "row_shl:{n}"),
            0x111..=0x11f => write!(f, "row_shr:{n}"),
            0x121..=0x12f => write!(f, "row_ror:{n}"),
            0x130 => f.write_str("wave_shl:1"),
            0x134 => f.write_str("wave_rol:1"),
            0x138 => f.write_str("wave_shr:1"),
            0x13c => f.write_str("wave_ror:1"),
            0x140 => f.write_str("row_mirror"),
            0x141 => f.write_str("row_half_mirror"),
            0x142 => f.write_str("row_bcast:15"),
            0x143 => f.write_str("row_bcast:31"),
            0x150..=0x15f => write!(f, "row_share:{n}"),
            _ => write!(f, "row_xmask:{n}"),
        }
    }
}

/// Source operand code of a VOP1/VOP2/VOPC with its SDWA / DPP form.
const SRC_SDWA: u16 = 0xf9;
const SRC_DPP: u16 = 0xfa;

/// Read the second dword `e` of a DPP / SDWA VOP1/VOP2/VOPC into `i` (whose `src[0]` holds
/// the 0xf9 / 0xfa marker). `None`: a reserved field value, or an opcode without that form.
fn vop_ext(mut i: Inst, e: u32) -> Option<Inst> {
    // 32-bit operands only; not v_nop, v_readfirstlane (scalar result), v_mac/fmac (their
    // accumulator is the destination), v_mov_b64.
    let plain = match i.enc {
        Enc::Vopc => i.sig[1..3] == [1, 1],
        Enc::Vop2 if carry_in(i.op) => i.sig[..3] == [1, 1, 1],
        _ => i.sig.iter().all(|&w| w <= 1),
    };
    if !plain || (i.enc == Enc::Vop1 && matches!(i.op, 0 | 2)) || (i.enc == Enc::Vop2 && matches!(i.op, 22 | 59)) {
        return None;
    }
    i.len = 8;
    if i.src[0] == SRC_DPP {
        let ctrl = ((e >> 8) & 0x1ff) as u16;
        // gfx9 has no VOPC DPP in LLVM's tables; bits 17, 18 are reserved.
        if i.enc == Enc::Vopc || !dpp_ctrl_valid(ctrl) || e & (3 << 17) != 0 {
            return None;
        }
        i.src[0] = 256 + (e & 0xff) as u16;
        i.neg = (((e >> 20) & 1) | ((e >> 21) & 2)) as u8;
        i.abs = (((e >> 21) & 1) | ((e >> 22) & 2)) as u8;
        i.ext =
            Ext::Dpp(Dpp { ctrl, row_mask: (e >> 28) as u8, bank_mask: ((e >> 24) & 15) as u8, bound_ctrl: e & (1 << 19) != 0, fi: false });
        return Some(i);
    }
    let src0 = (e & 0xff) as u16;
    i.src[0] = if e & (1 << 23) != 0 { src0 } else { 256 + src0 };
    // S1: src1 (VOP2, VOPC) is the SGPR or constant its VGPR field names; VOP1 has none.
    if e & (1 << 31) != 0 {
        if i.enc == Enc::Vop1 {
            return None;
        }
        i.src[1] = i.src[1].wrapping_sub(256);
    }
    // Scalar sources: SGPRs, VCC, EXEC, M0 and inline constants (no literal).
    if i.src[..2].iter().any(|&c| c == LITERAL || (102..=105).contains(&c) || (209..=239).contains(&c) || (249..256).contains(&c)) {
        return None;
    }
    let sel = [((e >> 16) & 7) as u8, ((e >> 24) & 7) as u8];
    i.neg = (((e >> 20) & 1) | ((e >> 27) & 2)) as u8;
    i.abs = (((e >> 21) & 1) | ((e >> 28) & 2)) as u8;
    let sext = (((e >> 19) & 1) | ((e >> 26) & 2)) as u8;
    let (mut dst_sel, mut dst_unused) = (SEL_DWORD, UNUSED_PAD);
    if i.enc == Enc::Vopc {
        i.dst = if e & (1 << 15) != 0 { ((e >> 8) & 0x7f) as u16 } else { VCC };
    } else {
        dst_sel = ((e >> 8) & 7) as u8;
        dst_unused = ((e >> 11) & 3) as u8;
        i.clamp = e & (1 << 13) != 0;
        i.omod = ((e >> 14) & 3) as u8;
    }
    if sel.iter().chain([&dst_sel]).any(|&s| s > SEL_DWORD) || dst_unused > UNUSED_PRESERVE {
        return None;
    }
    i.ext = Ext::Sdwa(Sdwa { dst_sel, dst_unused, sel, sext });
    Some(i)
}

fn find(t: &[Row], op: u32) -> Option<&Row> {
    t.iter().find(|r| u32::from(r.0) == op)
}

/// An instruction of `row` with every operand field empty (gfx11.rs builds its `sem` from it).
pub fn blank(enc: Enc, row: &(u16, &'static str, [u8; 4])) -> Inst {
    Inst {
        enc,
        op: row.0,
        name: row.1,
        sig: row.2,
        len: 4,
        dst: 0,
        sdst: 0,
        src: [0; 3],
        lit: 0,
        imm: 0,
        abs: 0,
        neg: 0,
        clamp: false,
        omod: 0,
        seg: 0,
        saddr: SADDR_OFF,
        data: 0,
        glc: false,
        slc: false,
        sc1: false,
        dwords: 0,
        store: false,
        atomic: false,
        data1: 0,
        offen: false,
        idxen: false,
        target: Target::Gfx90a,
        ext: Ext::None,
    }
}

/// A VOPC opcode's mnemonic.
fn vopc_name(op: u32) -> Option<&'static str> {
    match op {
        0x10 => Some("v_cmp_class_f32"),
        0x12 => Some("v_cmp_class_f64"),
        0x14 => Some("v_cmp_class_f16"),
        0x20..=0x2f => Some(VOPC_F16[(op - 0x20) as usize]),
        0x40..=0x4f => Some(VOPC_F32[(op - 0x40) as usize]),
        0x60..=0x6f => Some(VOPC_F64[(op - 0x60) as usize]),
        0xc0..=0xc7 => Some(VOPC_I32[(op - 0xc0) as usize]),
        0xc8..=0xcf => Some(VOPC_U32[(op - 0xc8) as usize]),
        0xe0..=0xe7 => Some(VOPC_I64[(op - 0xe0) as usize]),
        0xe8..=0xef => Some(VOPC_U64[(op - 0xe8) as usize]),
        _ => None,
    }
}

/// A VOPC opcode's operand widths (the mask, then the two sources).
fn vopc_sig(op: u32) -> Sig {
    // v_cmp_class_f64: an f64 and a 32-bit class mask.
    if op == 0x12 {
        [2, 2, 1, 0]
    } else if (0x60..0x70).contains(&op) || (0xe0..0xf0).contains(&op) {
        [2, 2, 2, 0]
    } else {
        [2, 1, 1, 0]
    }
}

/// Is the VOP3P opcode one of the mixed-precision fmas (v_fma_mix_f32, v_fma_mixlo/hi_f16)?
pub fn is_mix(op: u16) -> bool {
    (0x20..=0x22).contains(&op)
}

/// Is the VOP3 opcode a VOP3b form (an SGPR lane-mask destination in bits 8..15, no abs)?
/// v_div_scale writes the lanes whose quotient v_div_fmas must scale back.
pub fn vop3b(op: u16) -> bool {
    matches!(op, 0x1e0 | 0x1e1 | 0x1e8) || (0x100..0x140).contains(&op) && carry_out(op - 0x100)
}

/// Does the VOP2 opcode write a carry (VOP3b form, VCC in VOP2)?
pub fn carry_out(op: u16) -> bool {
    (25..=30).contains(&op)
}

/// Does the VOP2 opcode read a carry / mask (VCC in VOP2, src2 in VOP3)?
pub fn carry_in(op: u16) -> bool {
    op == 0 || (28..=30).contains(&op)
}

/// Decode the instruction at the start of `w` (one or two dwords; a literal needs the second)
/// for `target`. `None`: not an instruction the model knows on that target, or `w` too short.
pub fn decode(w: &[u32], target: Target) -> Option<Inst> {
    let mut i = decode_bits(w, target)?;
    i.target = target;
    on(target, i.enc, i.op).then_some(i)
}

fn decode_bits(w: &[u32], target: Target) -> Option<Inst> {
    let d = *w.first()?;
    let second = w.get(1).copied();
    let with_literal = |mut i: Inst| -> Option<Inst> {
        if i.src.contains(&LITERAL) {
            i.lit = second?;
            i.len = 8;
        }
        Some(i)
    };
    if d >> 23 == 0x17d {
        let r = find(SOP1, (d >> 8) & 0xff)?;
        let mut i = blank(Enc::Sop1, r);
        i.dst = ((d >> 16) & 0x7f) as u16;
        i.src[0] = (d & 0xff) as u16;
        return with_literal(i);
    }
    if d >> 23 == 0x17e {
        let r = find(SOPC, (d >> 16) & 0x7f)?;
        let mut i = blank(Enc::Sopc, r);
        i.src = [(d & 0xff) as u16, ((d >> 8) & 0xff) as u16, 0];
        return with_literal(i);
    }
    if d >> 23 == 0x17f {
        let r = find(SOPP, (d >> 16) & 0x7f)?;
        let mut i = blank(Enc::Sopp, r);
        i.imm = i32::from(d as u16 as i16);
        // s_sendmsg: MSG_INTERRUPT only; s_icache_inv: no operand.
        if (i.op == 16 && i.imm != MSG_INTERRUPT) || (i.op == 19 && i.imm != 0) {
            return None;
        }
        return Some(i);
    }
    if d >> 28 == 0xb {
        let r = find(SOPK, (d >> 23) & 0x1f)?;
        let mut i = blank(Enc::Sopk, r);
        i.dst = ((d >> 16) & 0x7f) as u16;
        i.imm = i32::from(d as u16 as i16);
        if i.op != 0 && i.imm & 0x3f != HW_REG_MODE {
            // Hardware registers other than MODE: not modelled.
            return None;
        }
        if i.op == SETREG {
            i.src[0] = i.dst;
        }
        if i.op == SETREG_IMM32 {
            i.lit = second?;
            i.len = 8;
        }
        return Some(i);
    }
    if d >> 30 == 0b10 {
        let r = find(SOP2, (d >> 23) & 0x7f)?;
        let mut i = blank(Enc::Sop2, r);
        i.dst = ((d >> 16) & 0x7f) as u16;
        i.src = [(d & 0xff) as u16, ((d >> 8) & 0xff) as u16, 0];
        return with_literal(i);
    }
    if d >> 26 == 0b110000 {
        let e = second?;
        let op = ((d >> 18) & 0xff) as u16;
        if (op == S_MEMTIME || op == S_MEMREALTIME) && d & 0x3f == 0 && e == 0 {
            let name = if op == S_MEMTIME { "s_memtime" } else { "s_memrealtime" };
            let mut i = blank(Enc::Smem, &(op, name, [2, 0, 0, 0]));
            i.dst = ((d >> 6) & 0x7f) as u16;
            i.len = 8;
            return Some(i);
        }
        // Only the immediate-offset form (IMM = 1).
        if d & (1 << 17) == 0 {
            return None;
        }
        let r = find(SMEM, (d >> 18) & 0xff)?;
        let mut i = blank(Enc::Smem, r);
        i.dst = ((d >> 6) & 0x7f) as u16;
        i.src[0] = ((d & 0x3f) << 1) as u16;
        i.imm = ((e & 0x1f_ffff) << 11) as i32 >> 11;
        i.glc = d & (1 << 16) != 0;
        i.len = 8;
        return Some(i);
    }
    if d >> 25 == 0x3f {
        let r = find(VOP1, (d >> 9) & 0xff)?;
        let mut i = blank(Enc::Vop1, r);
        i.dst = ((d >> 17) & 0xff) as u16;
        i.src[0] = (d & 0x1ff) as u16;
        if matches!(i.src[0], SRC_SDWA | SRC_DPP) {
            return vop_ext(i, second?);
        }
        return with_literal(i);
    }
    if d >> 25 == 0x3e {
        let op = (d >> 17) & 0xff;
        let name = vopc_name(op)?;
        let mut i = blank(Enc::Vopc, &(op as u16, name, vopc_sig(op)));
        i.dst = VCC;
        i.src = [(d & 0x1ff) as u16, 256 + ((d >> 9) & 0xff) as u16, 0];
        if matches!(i.src[0], SRC_SDWA | SRC_DPP) {
            return vop_ext(i, second?);
        }
        return with_literal(i);
    }
    if d >> 31 == 0 && matches!((d >> 25) & 0x3f, 23 | 24) {
        // v_madmk_f32 (src0 * K + vsrc1) / v_madak_f32 (src0 * vsrc1 + K), K the literal: run
        // as v_mad_f32 (clang's integer division scales by 2^32 through v_madmk). gfx942 has
        // the fused v_fmamk_f32 / v_fmaak_f32 there instead, run as v_fma_f32.
        let mk = (d >> 25) & 0x3f == 23;
        let (name, op) = match (target, mk) {
            (Target::Gfx942, true) => ("v_fmamk_f32", 0x1cb),
            (Target::Gfx942, false) => ("v_fmaak_f32", 0x1cb),
            (_, true) => ("v_madmk_f32", 0x1c1),
            (_, false) => ("v_madak_f32", 0x1c1),
        };
        let mut i = blank(Enc::Vop3, &(op, name, [1, 1, 1, 1]));
        i.dst = ((d >> 17) & 0xff) as u16;
        let vsrc1 = 256 + ((d >> 9) & 0xff) as u16;
        i.src = if mk { [(d & 0x1ff) as u16, LITERAL, vsrc1] } else { [(d & 0x1ff) as u16, vsrc1, LITERAL] };
        i.lit = second?;
        i.len = 8;
        return Some(i);
    }
    if d >> 31 == 0 {
        let r = find(VOP2, (d >> 25) & 0x3f)?;
        let mut i = blank(Enc::Vop2, r);
        i.dst = ((d >> 17) & 0xff) as u16;
        i.src = [(d & 0x1ff) as u16, 256 + ((d >> 9) & 0xff) as u16, VCC];
        if matches!(i.src[0], SRC_SDWA | SRC_DPP) {
            return vop_ext(i, second?);
        }
        return with_literal(i);
    }
    if d >> 23 == 0x1a7 {
        let e = second?;
        let mut i = blank(Enc::Vop3p, find(VOP3P, (d >> 16) & 0x7f)?);
        i.len = 8;
        i.dst = (d & 0xff) as u16;
        i.src = [(e & 0x1ff) as u16, ((e >> 9) & 0x1ff) as u16, ((e >> 18) & 0x1ff) as u16];
        i.neg = ((e >> 29) & 7) as u8;
        i.abs = ((d >> 8) & 7) as u8;
        i.clamp = d & (1 << 15) != 0;
        let (op_sel, op_sel_hi) = ((d >> 11) & 7, ((e >> 27) & 3) | ((d >> 14) & 1) << 2);
        i.imm = (op_sel | op_sel_hi << 3) as i32;
        // No literal in VOP3P on gfx9.
        if i.src.contains(&LITERAL) {
            return None;
        }
        return Some(i);
    }
    if d >> 26 == 0b110100 {
        let e = second?;
        let op = (d >> 16) & 0x3ff;
        let mut i = if op < 0x100 {
            let name = vopc_name(op)?;
            blank(Enc::Vop3, &(op as u16, name, vopc_sig(op)))
        } else if (0x100..0x140).contains(&op) {
            blank(Enc::Vop3, find(VOP2, op - 0x100)?)
        } else if (0x140..0x1c0).contains(&op) {
            blank(Enc::Vop3, find(VOP1, op - 0x140)?)
        } else {
            blank(Enc::Vop3, find(VOP3, op)?)
        };
        i.op = op as u16;
        i.len = 8;
        i.dst = (d & 0xff) as u16;
        i.src = [(e & 0x1ff) as u16, ((e >> 9) & 0x1ff) as u16, ((e >> 18) & 0x1ff) as u16];
        i.neg = ((e >> 29) & 7) as u8;
        i.omod = ((e >> 27) & 3) as u8;
        i.clamp = d & (1 << 15) != 0;
        if vop3b(op as u16) {
            i.sdst = ((d >> 8) & 0x7f) as u16;
        } else {
            i.abs = ((d >> 8) & 7) as u8;
        }
        // No literal in VOP3 on gfx9.
        if i.src.contains(&LITERAL) {
            return None;
        }
        return Some(i);
    }
    if d >> 26 == 0b110111 {
        let e = second?;
        let seg = ((d >> 14) & 3) as u8;
        // Scratch: gfx942's architected flat scratch only (gfx90a's needs FLAT_SCRATCH set up
        // by the kernel, not modelled).
        if seg == 3 || seg == 1 && target != Target::Gfx942 {
            return None;
        }
        let fop = (d >> 18) & 0x7f;
        let (op, name, dwords, store, atomic) = match FLAT_ATOMICS.iter().find(|f| u32::from(f.0) == fop) {
            Some(_) if seg == 1 => return None,
            Some(a) => (a.0, if seg == 0 { a.1 } else { a.2 }, a.3, false, true),
            None => {
                let &(op, names, dwords, store) = FLAT.iter().find(|f| u32::from(f.0) == fop)?;
                (op, names[usize::from(seg)], dwords, store, false)
            }
        };
        let mut i = blank(Enc::Flat, &(op, name, [0; 4]));
        i.atomic = atomic;
        i.len = 8;
        i.seg = seg;
        // 12-bit unsigned offset for FLAT, 13-bit signed for SCRATCH and GLOBAL.
        i.imm = if seg == 0 { (d & 0xfff) as i32 } else { ((d & 0x1fff) << 19) as i32 >> 19 };
        i.glc = d & (1 << 16) != 0;
        i.slc = d & (1 << 17) != 0;
        i.sc1 = d & (1 << 25) != 0;
        i.src[0] = 256 + (e & 0xff) as u16;
        i.data = ((e >> 8) & 0xff) as u16;
        i.saddr = ((e >> 16) & 0x7f) as u16;
        i.dst = ((e >> 24) & 0xff) as u16;
        i.dwords = dwords;
        i.store = store;
        // Bit 13: SVE for gfx942's scratch (kept in `offen`, as gfx11's decoder does); else the
        // LDS form (not modelled). ACC (AGPR data): not modelled.
        if seg == 1 {
            i.offen = d & (1 << 13) != 0;
        } else if d & (1 << 13) != 0 {
            return None;
        }
        if e & (1 << 23) != 0 {
            return None;
        }
        return Some(i);
    }
    if d >> 26 == 0b111000 {
        let e = second?;
        // LDS-direct loads and AGPR data / tfe: not modelled.
        if d & (1 << 16) != 0 || e & (1 << 23) != 0 {
            return None;
        }
        let mop = (d >> 18) & 0x7f;
        if target == Target::Gfx942 && matches!(mop, 40 | 41) {
            // buffer_wbl2 / buffer_inv: L2 write-back and invalidate (clang's agent- and
            // system-scope fences), cache policy bits only; no address, no data (`dwords` 0).
            if d & 0x3fff != 0 || e != 0 {
                return None;
            }
            let mut i = blank(Enc::Mubuf, &(mop as u16, if mop == 40 { "buffer_wbl2" } else { "buffer_inv" }, [0; 4]));
            i.len = 8;
            i.glc = d & (1 << 14) != 0;
            i.sc1 = d & (1 << 15) != 0;
            i.slc = d & (1 << 17) != 0;
            return Some(i);
        }
        let &(op, name, bytes, store) = MUBUF.iter().find(|m| u32::from(m.0) == mop)?;
        let mut i = blank(Enc::Mubuf, &(op, name, [0; 4]));
        i.len = 8;
        i.imm = (d & 0xfff) as i32;
        i.offen = d & (1 << 12) != 0;
        i.idxen = d & (1 << 13) != 0;
        i.glc = d & (1 << 14) != 0;
        i.sc1 = d & (1 << 15) != 0;
        i.slc = d & (1 << 17) != 0;
        i.src[0] = 256 + (e & 0xff) as u16;
        i.data = ((e >> 8) & 0xff) as u16;
        i.dst = i.data;
        i.saddr = (((e >> 16) & 0x1f) * 4) as u16;
        i.src[1] = (e >> 24) as u16;
        i.dwords = bytes.div_ceil(4);
        i.store = store;
        return Some(i);
    }
    if d >> 26 == 0b110110 {
        let e = second?;
        // GDS and AGPR data: not modelled.
        if d & (1 << 16) != 0 || d & (1 << 25) != 0 {
            return None;
        }
        let r = find(DS, (d >> 17) & 0xff)?;
        let mut i = blank(Enc::Ds, r);
        i.len = 8;
        i.imm = (d & 0xffff) as i32;
        i.src[0] = 256 + (e & 0xff) as u16;
        i.data = ((e >> 8) & 0xff) as u16;
        i.data1 = ((e >> 16) & 0xff) as u16;
        i.dst = ((e >> 24) & 0xff) as u16;
        return Some(i);
    }
    None
}

/// `ds_swizzle_b32`: its offset field selects the pattern (see [`swizzle_source`]).
pub const DS_SWIZZLE: u16 = 61;

/// The lane `ds_swizzle_b32` with `offset` reads for `lane`: with bit 15 set, a quad
/// permutation (lane `l` of each group of four reads lane `offset >> 2l & 3` of its group);
/// otherwise, within each group of 32 lanes, `((lane & and) | or) ^ xor` with the 5-bit masks
/// in bits 0..5, 5..10 and 10..15.
pub fn swizzle_source(offset: u16, lane: usize) -> usize {
    let o = usize::from(offset);
    if o & 0x8000 != 0 {
        (lane & !3) | (o >> (2 * (lane & 3)) & 3)
    } else {
        let (and, or, xor) = (o & 0x1f, o >> 5 & 0x1f, o >> 10 & 0x1f);
        (lane & !0x1f) | (((lane & 0x1f & and) | or) ^ xor)
    }
}

/// A `ds_swizzle_b32` offset as LLVM prints it: `swizzle(QUAD_PERM,..)`, the `SWAP`,
/// `REVERSE` and `BROADCAST` shorthands of bitmask patterns, else `BITMASK_PERM` with one
/// character per lane-id bit, high to low (`p` kept, `i` inverted, `0` / `1` a constant).
struct Swizzle(u16);

impl fmt::Display for Swizzle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = self.0;
        if o & 0x8000 != 0 {
            let q = |k: u16| o >> (2 * k) & 3;
            return write!(f, "swizzle(QUAD_PERM,{},{},{},{})", q(0), q(1), q(2), q(3));
        }
        let (and, or, xor) = (o & 0x1f, o >> 5 & 0x1f, o >> 10 & 0x1f);
        let group = (!and & 0x1f) + 1;
        if and == 0x1f && or == 0 && xor.count_ones() == 1 {
            write!(f, "swizzle(SWAP,{xor})")
        } else if and == 0x1f && or == 0 && xor > 0 && (xor + 1).is_power_of_two() {
            write!(f, "swizzle(REVERSE,{})", xor + 1)
        } else if group > 1 && group.is_power_of_two() && and == 0x20 - group && or < group && xor == 0 {
            write!(f, "swizzle(BROADCAST,{group},{or})")
        } else {
            let bits: String = (0..5)
                .rev()
                .map(|b| match (and >> b & 1, or >> b & 1, xor >> b & 1) {
                    // The lane's bit kept (and = 1, or = 0), perhaps inverted; else a constant.
                    (1, 0, 0) => 'p',
                    (1, 0, _) => 'i',
                    (_, o, x) if o ^ x == 1 => '1',
                    _ => '0',
                })
                .collect();
            write!(f, "swizzle(BITMASK_PERM,\"{bits}\")")
        }
    }
}

/// Is the DS opcode a two-address form (`offset0`/`offset1`)?
pub fn ds_two(op: u16) -> bool {
    matches!(op, 14 | 15 | 55 | 56 | 78 | 79 | 119 | 120)
}

/// An operand as LLVM prints it; `n` dwords wide.
struct Opnd(u16, u8, u32);

impl fmt::Display for Opnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Opnd(c, n, lit) = *self;
        let range = |f: &mut fmt::Formatter<'_>, p: &str, r: u16| {
            if n == 1 {
                write!(f, "{p}{r}")
            } else {
                write!(f, "{p}[{r}:{}]", r + u16::from(n) - 1)
            }
        };
        match c {
            0..=101 => range(f, "s", c),
            106 if n == 2 => f.write_str("vcc"),
            106 => f.write_str("vcc_lo"),
            107 => f.write_str("vcc_hi"),
            124 => f.write_str("m0"),
            126 if n == 2 => f.write_str("exec"),
            126 => f.write_str("exec_lo"),
            127 => f.write_str("exec_hi"),
            128..=192 => write!(f, "{}", c - 128),
            193..=208 => write!(f, "-{}", c - 192),
            240..=247 => f.write_str(["0.5", "-0.5", "1.0", "-1.0", "2.0", "-2.0", "4.0", "-4.0"][usize::from(c - 240)]),
            248 => f.write_str("0.15915494"),
            253 => f.write_str("src_scc"),
            LITERAL => write!(f, "0x{lit:x}"),
            256..=511 => range(f, "v", c - 256),
            _ => write!(f, "?{c}"),
        }
    }
}

/// A `hwreg(...)` operand as LLVM prints it (the whole register: its name alone).
pub struct Hwreg(pub i32);

impl fmt::Display for Hwreg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0 as u32;
        let (id, offset, size) = (v & 0x3f, (v >> 6) & 0x1f, ((v >> 11) & 0x1f) + 1);
        let name = if id == HW_REG_MODE as u32 { "HW_REG_MODE".to_string() } else { id.to_string() };
        if offset == 0 && size == 32 {
            write!(f, "hwreg({name})")
        } else {
            write!(f, "hwreg({name}, {offset}, {size})")
        }
    }
}

/// A 32-bit immediate as LLVM prints it: small integers and the float inline constants by
/// value, anything else in hex.
pub struct Imm32(pub u32);

impl fmt::Display for Imm32 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        const FLOATS: [(u32, &str); 9] = [
            (0x3f00_0000, "0.5"),
            (0xbf00_0000, "-0.5"),
            (0x3f80_0000, "1.0"),
            (0xbf80_0000, "-1.0"),
            (0x4000_0000, "2.0"),
            (0xc000_0000, "-2.0"),
            (0x4080_0000, "4.0"),
            (0xc080_0000, "-4.0"),
            (0x3e22_f983, "0.15915494"),
        ];
        if (-16..=64).contains(&(v as i32)) {
            write!(f, "{}", v as i32)
        } else if let Some((_, t)) = FLOATS.iter().find(|c| c.0 == v) {
            f.write_str(t)
        } else {
            write!(f, "0x{v:x}")
        }
    }
}

impl Inst {
    /// The cache-policy bits as the target names them (LLVM's order: bit 16, 17, 25 of FLAT).
    fn cache_policy(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = match self.target {
            Target::Gfx90a => ["glc", "slc", "scc"],
            Target::Gfx942 => ["sc0", "nt", "sc1"],
        };
        for (on, name) in [self.glc, self.slc, self.sc1].into_iter().zip(names) {
            if on {
                write!(f, " {name}")?;
            }
        }
        Ok(())
    }

    /// A FLAT instruction's VGPR address: 64 bits for FLAT and for GLOBAL without an SGPR base,
    /// else a 32-bit offset; `off` for a scratch instruction without one.
    fn vaddr(&self) -> String {
        match self.seg {
            1 if !self.offen => "off".to_string(),
            1 => Opnd(self.src[0], 1, 0).to_string(),
            0 => Opnd(self.src[0], 2, 0).to_string(),
            _ => Opnd(self.src[0], if self.saddr == SADDR_OFF { 2 } else { 1 }, 0).to_string(),
        }
    }

    /// FLAT's SGPR base (SCRATCH and GLOBAL), offset and cache policy.
    fn flat_tail(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.seg != 0 {
            if self.saddr == SADDR_OFF {
                f.write_str(", off")?;
            } else {
                write!(f, ", {}", Opnd(self.saddr, if self.seg == 1 { 1 } else { 2 }, 0))?;
            }
        }
        if self.imm != 0 {
            write!(f, " offset:{}", self.imm)?;
        }
        self.cache_policy(f)
    }

    fn s(&self, k: usize) -> Opnd {
        Opnd(self.src[k], self.sig[k + 1], self.lit)
    }

    /// Source `k` with its VOP3 modifiers, as LLVM prints them.
    fn m(&self, k: usize) -> String {
        let mut t = self.s(k).to_string();
        if self.abs & (1 << k) != 0 {
            t = format!("|{t}|");
        }
        if self.neg & (1 << k) != 0 {
            t = format!("-{t}");
        }
        t
    }
}

impl Inst {
    /// A DPP or SDWA VOP1/VOP2/VOPC as LLVM prints it: the e32 operands with the `_dpp` /
    /// `_sdwa` suffix, the source modifiers, then the controls.
    fn fmt_ext(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.name;
        let sext = match self.ext {
            Ext::Sdwa(s) => s.sext,
            _ => 0,
        };
        let src = |k: usize| {
            let t = self.m(k);
            if sext >> k & 1 != 0 {
                format!("sext({t})")
            } else {
                t
            }
        };
        let sfx = if matches!(self.ext, Ext::Dpp(_)) { "dpp" } else { "sdwa" };
        let vdst = Opnd(256 + self.dst, 1, 0);
        match self.enc {
            Enc::Vop1 => write!(f, "{n}_{sfx} {vdst}, {}", src(0))?,
            Enc::Vopc => write!(f, "{n}_{sfx} {}, {}, {}", Opnd(self.dst, 2, 0), src(0), src(1))?,
            _ => {
                let carry = if carry_out(self.op) { "vcc, " } else { "" };
                let cin = if carry_in(self.op) { ", vcc" } else { "" };
                write!(f, "{n}_{sfx} {vdst}, {carry}{}, {}{cin}", src(0), src(1))?;
            }
        }
        match self.ext {
            Ext::Dpp(d) => {
                write!(f, " {} row_mask:0x{:x} bank_mask:0x{:x}", DppCtrl(d.ctrl), d.row_mask, d.bank_mask)?;
                if d.bound_ctrl {
                    f.write_str(" bound_ctrl:1")?;
                }
                Ok(())
            }
            Ext::Sdwa(s) => {
                super::print::output_modifiers(f, self.clamp, self.omod)?;
                if self.enc != Enc::Vopc {
                    let unused = ["UNUSED_PAD", "UNUSED_SEXT", "UNUSED_PRESERVE"][usize::from(s.dst_unused.min(2))];
                    write!(f, " dst_sel:{} dst_unused:{unused}", SEL_NAMES[usize::from(s.dst_sel.min(6))])?;
                }
                write!(f, " src0_sel:{}", SEL_NAMES[usize::from(s.sel[0].min(6))])?;
                if self.enc != Enc::Vop1 {
                    write!(f, " src1_sel:{}", SEL_NAMES[usize::from(s.sel[1].min(6))])?;
                }
                Ok(())
            }
            Ext::Dpp8 { .. } | Ext::None => Ok(()),
        }
    }
}

impl fmt::Display for Inst {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ext != Ext::None {
            return self.fmt_ext(f);
        }
        let n = self.name;
        let dst = Opnd(self.dst, self.sig[0], 0);
        let vdst = Opnd(256 + self.dst, self.sig[0], 0);
        match self.enc {
            Enc::Sop2 => write!(f, "{n} {dst}, {}, {}", self.s(0), self.s(1)),
            Enc::Sop1 if self.sig[1] == 0 => write!(f, "{n} {dst}"),
            Enc::Sop1 => write!(f, "{n} {dst}, {}", self.s(0)),
            Enc::Sopc => write!(f, "{n} {}, {}", self.s(0), self.s(1)),
            Enc::Sopk => match self.op {
                GETREG => write!(f, "{n} {dst}, {}", Hwreg(self.imm)),
                SETREG => write!(f, "{n} {}, {}", Hwreg(self.imm), self.s(0)),
                SETREG_IMM32 => write!(f, "{n} {}, {}", Hwreg(self.imm), Imm32(self.lit)),
                _ => write!(f, "{n} {dst}, 0x{:x}", self.imm as u16),
            },
            Enc::Sopp => match self.op {
                1 | 10 | 19 => f.write_str(n),
                16 => write!(f, "{n} sendmsg(MSG_INTERRUPT)"),
                12 => {
                    let v = self.imm as u32;
                    let (vm, exp, lgkm) = ((v & 0xf) | ((v >> 10) & 0x30), (v >> 4) & 7, (v >> 8) & 0xf);
                    let mut parts = Vec::new();
                    if vm != 63 {
                        parts.push(format!("vmcnt({vm})"));
                    }
                    if exp != 7 {
                        parts.push(format!("expcnt({exp})"));
                    }
                    if lgkm != 15 {
                        parts.push(format!("lgkmcnt({lgkm})"));
                    }
                    if parts.is_empty() {
                        parts = vec![format!("vmcnt({vm})"), format!("expcnt({exp})"), format!("lgkmcnt({lgkm})")];
                    }
                    write!(f, "{n} {}", parts.join(" "))
                }
                18 => write!(f, "{n} {}", self.imm & 0xff),
                // LLVM prints the branch offset as the unsigned 16-bit field.
                _ => write!(f, "{n} {}", self.imm as u16),
            },
            Enc::Smem if self.op == S_MEMTIME || self.op == S_MEMREALTIME => write!(f, "{n} {dst}"),
            Enc::Smem => {
                write!(f, "{n} {dst}, {}, 0x{:x}", Opnd(self.src[0], 2, 0), self.imm)?;
                if self.glc {
                    f.write_str(" glc")?;
                }
                Ok(())
            }
            Enc::Vop1 if self.op == 0 => f.write_str(n),
            Enc::Vop1 if self.op == 2 => write!(f, "{n} {dst}, {}", self.s(0)),
            Enc::Vop1 => write!(f, "{n}_e32 {vdst}, {}", self.s(0)),
            Enc::Vopc => write!(f, "{n}_e32 vcc, {}, {}", self.s(0), self.s(1)),
            Enc::Vop2 if carry_out(self.op) && carry_in(self.op) => write!(f, "{n}_e32 {vdst}, vcc, {}, {}, vcc", self.s(0), self.s(1)),
            Enc::Vop2 if carry_out(self.op) => write!(f, "{n}_e32 {vdst}, vcc, {}, {}", self.s(0), self.s(1)),
            Enc::Vop2 if carry_in(self.op) => write!(f, "{n}_e32 {vdst}, {}, {}, vcc", self.s(0), self.s(1)),
            Enc::Vop2 => write!(f, "{n}_e32 {vdst}, {}, {}", self.s(0), self.s(1)),
            Enc::Vop3 => {
                let op = self.op;
                let nsrc = self.sig[1..].iter().take_while(|&&w| w != 0).count();
                let srcs: Vec<String> = (0..nsrc).map(|k| self.m(k)).collect();
                if op < 0x100 {
                    write!(f, "{n}_e64 {}, {}", Opnd(self.dst, 2, 0), srcs.join(", "))?;
                } else if vop3b(op) && op >= 0x140 {
                    write!(f, "{n} {vdst}, {}, {}", Opnd(self.sdst, 2, 0), srcs.join(", "))?;
                } else if (0x100..0x140).contains(&op) {
                    let o = op - 0x100;
                    let srcs = if carry_in(o) {
                        format!("{}, {}, {}", srcs[0], srcs[1], Opnd(self.src[2], 2, 0))
                    } else {
                        format!("{}, {}", srcs[0], srcs[1])
                    };
                    if carry_out(o) {
                        write!(f, "{n}_e64 {vdst}, {}, {srcs}", Opnd(self.sdst, 2, 0))?;
                    } else {
                        write!(f, "{n}_e64 {vdst}, {srcs}")?;
                    }
                } else if (0x140..0x1c0).contains(&op) {
                    write!(f, "{n}_e64 {vdst}, {}", srcs.join(", "))?;
                } else if op == 0x289 {
                    write!(f, "{n} {dst}, {}", srcs.join(", "))?;
                } else {
                    write!(f, "{n} {vdst}, {}", srcs.join(", "))?;
                }
                super::print::output_modifiers(f, self.clamp, self.omod)
            }
            Enc::Vop3p if is_mix(self.op) => {
                // neg_lo / neg_hi are the sources' neg / abs; op_sel_hi defaults to 0 here.
                let srcs: Vec<String> = (0..3).map(|k| self.m(k)).collect();
                write!(f, "{n} {vdst}, {}", srcs.join(", "))?;
                super::print::mix_modifiers(f, self.imm as u32, self.clamp)
            }
            Enc::Vop3p => {
                let nsrc = self.sig[1..].iter().take_while(|&&w| w != 0).count();
                let srcs: Vec<String> = (0..nsrc).map(|k| self.s(k).to_string()).collect();
                write!(f, "{n} {vdst}, {}", srcs.join(", "))?;
                // LLVM prints a modifier list when it differs from its default (op_sel and the
                // negations all 0, op_sel_hi all 1), one entry per source.
                let list = |bits: u32| super::print::bit_list(bits, nsrc);
                let mask = (1u32 << nsrc) - 1;
                let (op_sel, op_sel_hi) = (self.imm as u32 & 7, (self.imm as u32 >> 3) & 7);
                if op_sel & mask != 0 {
                    write!(f, " op_sel:[{}]", list(op_sel))?;
                }
                if op_sel_hi & mask != mask {
                    write!(f, " op_sel_hi:[{}]", list(op_sel_hi))?;
                }
                if u32::from(self.neg) & mask != 0 {
                    write!(f, " neg_lo:[{}]", list(u32::from(self.neg)))?;
                }
                if u32::from(self.abs) & mask != 0 {
                    write!(f, " neg_hi:[{}]", list(u32::from(self.abs)))?;
                }
                if self.clamp {
                    f.write_str(" clamp")?;
                }
                Ok(())
            }
            Enc::Ds => {
                let sig = self.sig;
                let mut ops = Vec::new();
                if sig[0] != 0 {
                    ops.push(Opnd(256 + self.dst, sig[0], 0).to_string());
                }
                ops.push(Opnd(self.src[0], 1, 0).to_string());
                if sig[2] != 0 {
                    ops.push(Opnd(256 + self.data, sig[2], 0).to_string());
                }
                if sig[3] != 0 {
                    ops.push(Opnd(256 + self.data1, sig[3], 0).to_string());
                }
                write!(f, "{n} {}", ops.join(", "))?;
                let (o0, o1) = (self.imm & 0xff, self.imm >> 8);
                if ds_two(self.op) {
                    if o0 != 0 {
                        write!(f, " offset0:{o0}")?;
                    }
                    if o1 != 0 {
                        write!(f, " offset1:{o1}")?;
                    }
                } else if self.op == DS_SWIZZLE && self.imm != 0 {
                    write!(f, " offset:{}", Swizzle(self.imm as u16))?;
                } else if self.imm != 0 {
                    write!(f, " offset:{}", self.imm)?;
                }
                Ok(())
            }
            Enc::Mubuf if self.dwords == 0 => {
                f.write_str(n)?;
                self.cache_policy(f)
            }
            Enc::Mubuf => {
                let vaddr = match (self.idxen, self.offen) {
                    (false, false) => "off".to_string(),
                    (true, true) => Opnd(self.src[0], 2, 0).to_string(),
                    _ => Opnd(self.src[0], 1, 0).to_string(),
                };
                write!(
                    f,
                    "{n} {}, {vaddr}, {}, {}",
                    Opnd(256 + self.data, self.dwords, 0),
                    Opnd(self.saddr, 4, 0),
                    Opnd(self.src[1], 1, 0)
                )?;
                if self.idxen {
                    f.write_str(" idxen")?;
                }
                if self.offen {
                    f.write_str(" offen")?;
                }
                if self.imm != 0 {
                    write!(f, " offset:{}", self.imm)?;
                }
                self.cache_policy(f)
            }
            Enc::Flat if self.atomic => {
                let n64 = self.dwords;
                let data = Opnd(256 + self.data, if self.op == 65 || self.op == 97 { 2 * n64 } else { n64 }, 0);
                if self.glc {
                    write!(f, "{n} {}, {}, {data}", Opnd(256 + self.dst, n64, 0), self.vaddr())?;
                } else {
                    write!(f, "{n} {}, {data}", self.vaddr())?;
                }
                self.flat_tail(f)
            }
            Enc::Flat => {
                let data = Opnd(256 + if self.store { self.data } else { self.dst }, self.dwords, 0);
                if self.store {
                    write!(f, "{n} {}, {data}", self.vaddr())?;
                } else {
                    write!(f, "{n} {data}, {}", self.vaddr())?;
                }
                self.flat_tail(f)
            }
        }
    }
}

#[cfg(test)]
mod sdwa_tests {
    use super::*;

    #[test]
    fn operands_select_and_extend_bytes_and_words() {
        let x = 0x807f_c381;
        assert_eq!(sdwa_operand(x, 0, false), 0x81);
        assert_eq!(sdwa_operand(x, 0, true), 0xffff_ff81);
        assert_eq!(sdwa_operand(x, 2, true), 0x7f);
        assert_eq!(sdwa_operand(x, 3, true), 0xffff_ff80);
        assert_eq!(sdwa_operand(x, 4, true), 0xffff_c381);
        assert_eq!(sdwa_operand(x, 5, false), 0x807f);
        assert_eq!(sdwa_operand(x, SEL_DWORD, true), x);
    }

    #[test]
    fn any_second_dword_decodes_or_not_without_panicking() {
        let mut r = 0x9e37_79b9_7f4a_7c15u64;
        for k in 0..200_000u32 {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            // VOP1, VOPC, VOP2 first dwords with src0 0xf9 / 0xfa and random other fields.
            let lo = r as u32;
            let first = match k % 3 {
                0 => 0x7e00_0000 | (lo & 0x01ff_fe00),
                1 => 0x7c00_0000 | (lo & 0x01ff_fe00),
                _ => lo & 0x7fff_fe00,
            } | if k & 8 == 0 { 0xf9 } else { 0xfa };
            for t in [Target::Gfx90a, Target::Gfx942] {
                if let Some(i) = decode(&[first, (r >> 32) as u32], t) {
                    assert_eq!(i.len, 8);
                    let _ = i.to_string();
                }
            }
        }
    }

    #[test]
    fn results_land_in_the_selected_bits_with_pad_sext_or_preserve() {
        let old = 0x1234_5678;
        assert_eq!(sdwa_result(0xabcd_ef90, old, 1, UNUSED_PAD), 0x0000_9000);
        assert_eq!(sdwa_result(0xabcd_ef90, old, 1, UNUSED_SEXT), 0xffff_9000);
        assert_eq!(sdwa_result(0xabcd_ef10, old, 1, UNUSED_SEXT), 0x0000_1000);
        assert_eq!(sdwa_result(0xabcd_ef90, old, 1, UNUSED_PRESERVE), 0x1234_9078);
        assert_eq!(sdwa_result(0xabcd_ef90, old, 5, UNUSED_PRESERVE), 0xef90_5678);
        assert_eq!(sdwa_result(0xabcd_8f90, old, 4, UNUSED_SEXT), 0xffff_8f90);
        assert_eq!(sdwa_result(0xabcd_ef90, old, 3, UNUSED_PAD), 0x9000_0000);
        assert_eq!(sdwa_result(0xabcd_ef90, old, SEL_DWORD, UNUSED_PRESERVE), 0xabcd_ef90);
    }
}
