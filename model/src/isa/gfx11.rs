//! The gfx11 (RDNA3, gfx1100) instruction decoder: the encodings of AMD's "RDNA3" ISA reference
//! in our own tables, for the instructions the model executes or meets in compiled kernels. An
//! encoding or opcode outside the tables is not decoded ([`decode`] answers `None`): the wave
//! stops with an illegal-instruction exception instead of guessing.
//!
//! A decoded instruction carries its operation in the interpreter's terms ([`Inst::sem`]: the
//! opcode identity and operand fields of [`gfx9::Inst`], so one interpreter runs both ISAs) and
//! what LLVM prints: [`Inst`]'s `Display` is the assembler syntax of `llvm-objdump
//! --mcpu=gfx1100` (wave32: lane masks are one SGPR, `vcc_lo`).
//!
//! Operand codes in `sem` are gfx9's, with one addition: gfx11 swapped M0 and NULL (M0 is 125,
//! NULL 124 in the encoding); `sem` holds M0 as 124, as gfx9 does, and NULL as [`NULL`].

use super::gfx9::{self, Enc, EXEC, LITERAL, SADDR_OFF, VCC};
use std::fmt;

/// Operand code of gfx10+'s NULL register in [`Inst::sem`]: reads 0, writes are dropped.
pub const NULL: u16 = 125;

/// How the instruction is printed (its gfx11 encoding, with the shapes that print apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    Sop2,
    Sopk,
    Sop1,
    Sopc,
    Sopp,
    Smem,
    Vop1,
    Vop2,
    Vopc,
    Vop3,
    /// VOP3P: the mixed-precision fmas only (v_fma_mix_f32, v_fma_mixlo/mixhi_f16).
    Vop3p,
    Vopd,
    Ds,
    Flat,
    Mubuf,
}

/// What running the instruction does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Run {
    /// `sem` (and `y` for VOPD).
    Exec,
    /// Nothing the model keeps state for (s_delay_alu, s_clause, cache invalidations,
    /// s_sendmsg MSG_DEALLOC_VGPRS, s_waitcnt: every access completes at once).
    Nop,
    /// Decoded and printed, but not modelled: running it is an illegal instruction.
    No,
}

/// One decoded gfx11 instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inst {
    /// The operation for the interpreter (gfx9's opcode identity; see the module header).
    pub sem: gfx9::Inst,
    /// VOPD: the second (Y) operation, issued with the first.
    pub y: Option<gfx9::Inst>,
    pub form: Form,
    /// The gfx11 opcode in its encoding (VOP3: the 10-bit opcode; VOPD: X).
    pub op: u16,
    /// The gfx11 mnemonic (VOPD: X's); `yname`: VOPD's Y mnemonic.
    pub name: &'static str,
    pub yname: &'static str,
    /// Size in bytes.
    pub len: u8,
    pub run: Run,
    /// gfx11's DLC cache bit (SMEM, FLAT).
    pub dlc: bool,
}

/// (gfx11 opcode, mnemonic, gfx9 opcode of the same operation, operand widths)
type Row = (u16, &'static str, u16, [u8; 4]);

const SOP2: &[Row] = &[
    (0, "s_add_u32", 0, [1, 1, 1, 0]),
    (1, "s_sub_u32", 1, [1, 1, 1, 0]),
    (2, "s_add_i32", 2, [1, 1, 1, 0]),
    (3, "s_sub_i32", 3, [1, 1, 1, 0]),
    (4, "s_addc_u32", 4, [1, 1, 1, 0]),
    (5, "s_subb_u32", 5, [1, 1, 1, 0]),
    (8, "s_lshl_b32", 28, [1, 1, 1, 0]),
    (9, "s_lshl_b64", 29, [2, 2, 1, 0]),
    (10, "s_lshr_b32", 30, [1, 1, 1, 0]),
    (11, "s_lshr_b64", 31, [2, 2, 1, 0]),
    (12, "s_ashr_i32", 32, [1, 1, 1, 0]),
    (13, "s_ashr_i64", 33, [2, 2, 1, 0]),
    (18, "s_min_i32", 6, [1, 1, 1, 0]),
    (19, "s_min_u32", 7, [1, 1, 1, 0]),
    (20, "s_max_i32", 8, [1, 1, 1, 0]),
    (21, "s_max_u32", 9, [1, 1, 1, 0]),
    (22, "s_and_b32", 12, [1, 1, 1, 0]),
    (23, "s_and_b64", 13, [2, 2, 2, 0]),
    (24, "s_or_b32", 14, [1, 1, 1, 0]),
    (25, "s_or_b64", 15, [2, 2, 2, 0]),
    (26, "s_xor_b32", 16, [1, 1, 1, 0]),
    (27, "s_xor_b64", 17, [2, 2, 2, 0]),
    (34, "s_and_not1_b32", 18, [1, 1, 1, 0]),
    (35, "s_and_not1_b64", 19, [2, 2, 2, 0]),
    (44, "s_mul_i32", 36, [1, 1, 1, 0]),
    (48, "s_cselect_b32", 10, [1, 1, 1, 0]),
    (49, "s_cselect_b64", 11, [2, 2, 2, 0]),
];

/// SOPK; `s_getreg`/`s_setreg` of the MODE register only (as gfx9's, whose opcodes differ).
const SOPK: &[Row] = &[
    (0, "s_movk_i32", 0, [1, 0, 0, 0]),
    (17, "s_getreg_b32", gfx9::GETREG, [1, 0, 0, 0]),
    (18, "s_setreg_b32", gfx9::SETREG, [0, 1, 0, 0]),
    (19, "s_setreg_imm32_b32", gfx9::SETREG_IMM32, [0, 0, 0, 0]),
];

/// The 32-bit saveexec forms run as gfx9's 64-bit ones on a 32-bit EXEC (sig 1).
const SOP1: &[Row] = &[
    (0, "s_mov_b32", 0, [1, 1, 0, 0]),
    (1, "s_mov_b64", 1, [2, 2, 0, 0]),
    (4, "s_brev_b32", 8, [1, 1, 0, 0]),
    (8, "s_ctz_i32_b32", 16, [1, 1, 0, 0]),
    (9, "s_ctz_i32_b64", 17, [1, 2, 0, 0]),
    (18, "s_bitset1_b32", 26, [1, 1, 0, 0]),
    (24, "s_bcnt1_i32_b32", 12, [1, 1, 0, 0]),
    (25, "s_bcnt1_i32_b64", 13, [1, 2, 0, 0]),
    (30, "s_not_b32", 4, [1, 1, 0, 0]),
    (31, "s_not_b64", 5, [2, 2, 0, 0]),
    (32, "s_and_saveexec_b32", 32, [1, 1, 0, 0]),
    (33, "s_and_saveexec_b64", 32, [2, 2, 0, 0]),
    (34, "s_or_saveexec_b32", 33, [1, 1, 0, 0]),
    (35, "s_or_saveexec_b64", 33, [2, 2, 0, 0]),
    (36, "s_xor_saveexec_b32", 34, [1, 1, 0, 0]),
    (37, "s_xor_saveexec_b64", 34, [2, 2, 0, 0]),
    (48, "s_and_not1_saveexec_b32", 35, [1, 1, 0, 0]),
    (49, "s_and_not1_saveexec_b64", 35, [2, 2, 0, 0]),
    (71, "s_getpc_b64", 28, [2, 0, 0, 0]),
];
/// s_sendmsg_rtn_b32 (printed, not run): its message in src0.
const SENDMSG_RTN: u32 = 76;

const SOPC: &[Row] = &[
    (0, "s_cmp_eq_i32", 0, [0, 1, 1, 0]),
    (1, "s_cmp_lg_i32", 1, [0, 1, 1, 0]),
    (2, "s_cmp_gt_i32", 2, [0, 1, 1, 0]),
    (3, "s_cmp_ge_i32", 3, [0, 1, 1, 0]),
    (4, "s_cmp_lt_i32", 4, [0, 1, 1, 0]),
    (5, "s_cmp_le_i32", 5, [0, 1, 1, 0]),
    (6, "s_cmp_eq_u32", 6, [0, 1, 1, 0]),
    (7, "s_cmp_lg_u32", 7, [0, 1, 1, 0]),
    (8, "s_cmp_gt_u32", 8, [0, 1, 1, 0]),
    (9, "s_cmp_ge_u32", 9, [0, 1, 1, 0]),
    (10, "s_cmp_lt_u32", 10, [0, 1, 1, 0]),
    (11, "s_cmp_le_u32", 11, [0, 1, 1, 0]),
    (16, "s_cmp_eq_u64", 18, [0, 2, 2, 0]),
    (17, "s_cmp_lg_u64", 19, [0, 2, 2, 0]),
];

/// SOPP: (gfx11 opcode, mnemonic, gfx9 opcode or what running it does)
const SOPP: &[(u16, &str, Sopp)] = &[
    (0, "s_nop", Sopp::Nop),
    (2, "s_sethalt", Sopp::No),
    (5, "s_clause", Sopp::Nop),
    (7, "s_delay_alu", Sopp::Nop),
    // Waits for the dependency counters: every access completes at once on the model.
    (8, "s_waitcnt_depctr", Sopp::Nop),
    (9, "s_waitcnt", Sopp::Nop),
    (16, "s_trap", Sopp::Op(18)),
    (17, "s_round_mode", Sopp::Mode(0)),
    (18, "s_denorm_mode", Sopp::Mode(4)),
    (31, "s_code_end", Sopp::No),
    (32, "s_branch", Sopp::Op(2)),
    (33, "s_cbranch_scc0", Sopp::Op(4)),
    (34, "s_cbranch_scc1", Sopp::Op(5)),
    (35, "s_cbranch_vccz", Sopp::Op(6)),
    (36, "s_cbranch_vccnz", Sopp::Op(7)),
    (37, "s_cbranch_execz", Sopp::Op(8)),
    (38, "s_cbranch_execnz", Sopp::Op(9)),
    (48, "s_endpgm", Sopp::Op(1)),
    (54, "s_sendmsg", Sopp::Nop),
    (61, "s_barrier", Sopp::Op(10)),
];

#[derive(Clone, Copy)]
enum Sopp {
    Op(u16),
    /// s_round_mode / s_denorm_mode: the 4 bits of MODE at this offset (run as gfx9's
    /// `s_setreg_imm32_b32 hwreg(HW_REG_MODE, offset, 4)`).
    Mode(u32),
    Nop,
    No,
}

/// s_sendmsg / s_sendmsg_rtn message names (the ones the model decodes).
const MSG: &[(u32, &str)] = &[
    (1, "MSG_INTERRUPT"),
    (3, "MSG_DEALLOC_VGPRS"),
    (128, "MSG_RTN_GET_DOORBELL"),
    (129, "MSG_RTN_GET_DDID"),
    (130, "MSG_RTN_GET_TMA"),
    (131, "MSG_RTN_GET_REALTIME"),
    (132, "MSG_RTN_SAVE_WAVE"),
    (133, "MSG_RTN_GET_TBA"),
];
const MSG_DEALLOC_VGPRS: i32 = 3;

const DELAY_ID: [&str; 12] = [
    "NO_DEP",
    "VALU_DEP_1",
    "VALU_DEP_2",
    "VALU_DEP_3",
    "VALU_DEP_4",
    "TRANS32_DEP_1",
    "TRANS32_DEP_2",
    "TRANS32_DEP_3",
    "FMA_ACCUM_CYCLE_1",
    "SALU_CYCLE_1",
    "SALU_CYCLE_2",
    "SALU_CYCLE_3",
];
const DELAY_SKIP: [&str; 6] = ["SAME", "NEXT", "SKIP_1", "SKIP_2", "SKIP_3", "SKIP_4"];

const SMEM: &[Row] = &[
    (0, "s_load_b32", 0, [1, 0, 0, 0]),
    (1, "s_load_b64", 1, [2, 0, 0, 0]),
    (2, "s_load_b128", 2, [4, 0, 0, 0]),
    (3, "s_load_b256", 3, [8, 0, 0, 0]),
    (4, "s_load_b512", 4, [16, 0, 0, 0]),
];

/// VOP2; lane masks (cndmask's, the carries) are one SGPR in wave32.
const VOP2: &[Row] = &[
    (1, "v_cndmask_b32", 0, [1, 1, 1, 1]),
    (3, "v_add_f32", 1, [1, 1, 1, 0]),
    (4, "v_sub_f32", 2, [1, 1, 1, 0]),
    (5, "v_subrev_f32", 3, [1, 1, 1, 0]),
    (8, "v_mul_f32", 5, [1, 1, 1, 0]),
    (11, "v_mul_u32_u24", 8, [1, 1, 1, 0]),
    (15, "v_min_f32", 10, [1, 1, 1, 0]),
    (16, "v_max_f32", 11, [1, 1, 1, 0]),
    (17, "v_min_i32", 12, [1, 1, 1, 0]),
    (18, "v_max_i32", 13, [1, 1, 1, 0]),
    (19, "v_min_u32", 14, [1, 1, 1, 0]),
    (20, "v_max_u32", 15, [1, 1, 1, 0]),
    (24, "v_lshlrev_b32", 18, [1, 1, 1, 0]),
    (25, "v_lshrrev_b32", 16, [1, 1, 1, 0]),
    (26, "v_ashrrev_i32", 17, [1, 1, 1, 0]),
    (27, "v_and_b32", 19, [1, 1, 1, 0]),
    (28, "v_or_b32", 20, [1, 1, 1, 0]),
    (29, "v_xor_b32", 21, [1, 1, 1, 0]),
    (32, "v_add_co_ci_u32", 28, [1, 1, 1, 1]),
    (33, "v_sub_co_ci_u32", 29, [1, 1, 1, 1]),
    (34, "v_subrev_co_ci_u32", 30, [1, 1, 1, 1]),
    (37, "v_add_nc_u32", 52, [1, 1, 1, 0]),
    (38, "v_sub_nc_u32", 53, [1, 1, 1, 0]),
    (39, "v_subrev_nc_u32", 54, [1, 1, 1, 0]),
    (43, "v_fmac_f32", 59, [1, 1, 1, 0]),
    (50, "v_add_f16", 31, [1, 1, 1, 0]),
    (51, "v_sub_f16", 32, [1, 1, 1, 0]),
    (52, "v_subrev_f16", 33, [1, 1, 1, 0]),
    (53, "v_mul_f16", 34, [1, 1, 1, 0]),
    (57, "v_max_f16", 45, [1, 1, 1, 0]),
    (58, "v_min_f16", 46, [1, 1, 1, 0]),
];

const VOP1: &[Row] = &[
    (0, "v_nop", 0, [0; 4]),
    (1, "v_mov_b32", 1, [1, 1, 0, 0]),
    (2, "v_readfirstlane_b32", 2, [1, 1, 0, 0]),
    (3, "v_cvt_i32_f64", 3, [1, 2, 0, 0]),
    (4, "v_cvt_f64_i32", 4, [2, 1, 0, 0]),
    (5, "v_cvt_f32_i32", 5, [1, 1, 0, 0]),
    (6, "v_cvt_f32_u32", 6, [1, 1, 0, 0]),
    (7, "v_cvt_u32_f32", 7, [1, 1, 0, 0]),
    (8, "v_cvt_i32_f32", 8, [1, 1, 0, 0]),
    (10, "v_cvt_f16_f32", 10, [1, 1, 0, 0]),
    (11, "v_cvt_f32_f16", 11, [1, 1, 0, 0]),
    (15, "v_cvt_f32_f64", 15, [1, 2, 0, 0]),
    (16, "v_cvt_f64_f32", 16, [2, 1, 0, 0]),
    (21, "v_cvt_u32_f64", 21, [1, 2, 0, 0]),
    (22, "v_cvt_f64_u32", 22, [2, 1, 0, 0]),
    (23, "v_trunc_f64", 23, [2, 2, 0, 0]),
    (24, "v_ceil_f64", 24, [2, 2, 0, 0]),
    (25, "v_rndne_f64", 25, [2, 2, 0, 0]),
    (26, "v_floor_f64", 26, [2, 2, 0, 0]),
    (32, "v_fract_f32", 27, [1, 1, 0, 0]),
    (33, "v_trunc_f32", 28, [1, 1, 0, 0]),
    (34, "v_ceil_f32", 29, [1, 1, 0, 0]),
    (35, "v_rndne_f32", 30, [1, 1, 0, 0]),
    (36, "v_floor_f32", 31, [1, 1, 0, 0]),
    (37, "v_exp_f32", 32, [1, 1, 0, 0]),
    (39, "v_log_f32", 33, [1, 1, 0, 0]),
    (42, "v_rcp_f32", 34, [1, 1, 0, 0]),
    (43, "v_rcp_iflag_f32", 35, [1, 1, 0, 0]),
    (46, "v_rsq_f32", 36, [1, 1, 0, 0]),
    (47, "v_rcp_f64", 37, [2, 2, 0, 0]),
    (49, "v_rsq_f64", 38, [2, 2, 0, 0]),
    (51, "v_sqrt_f32", 39, [1, 1, 0, 0]),
    (52, "v_sqrt_f64", 40, [2, 2, 0, 0]),
    (53, "v_sin_f32", 41, [1, 1, 0, 0]),
    (54, "v_cos_f32", 42, [1, 1, 0, 0]),
    (55, "v_not_b32", 43, [1, 1, 0, 0]),
    (60, "v_frexp_exp_i32_f64", 48, [1, 2, 0, 0]),
    (61, "v_frexp_mant_f64", 49, [2, 2, 0, 0]),
    (62, "v_fract_f64", 50, [2, 2, 0, 0]),
    (63, "v_frexp_exp_i32_f32", 51, [1, 1, 0, 0]),
    (64, "v_frexp_mant_f32", 52, [1, 1, 0, 0]),
];

/// VOP3-only opcodes. gfx9's VOP2 carry ops are VOP3-only on gfx11 (v_add_co_u32 ...).
const VOP3: &[Row] = &[
    (0x20a, "v_mad_i32_i24", 0x1c2, [1, 1, 1, 1]),
    (0x20b, "v_mad_u32_u24", 0x1c3, [1, 1, 1, 1]),
    (0x210, "v_bfe_u32", 0x1c8, [1, 1, 1, 1]),
    (0x213, "v_fma_f32", 0x1cb, [1, 1, 1, 1]),
    (0x214, "v_fma_f64", 0x1cc, [2, 2, 2, 2]),
    (0x216, "v_alignbit_b32", 0x1ce, [1, 1, 1, 1]),
    (0x217, "v_alignbyte_b32", 0x1cf, [1, 1, 1, 1]),
    (0x227, "v_div_fixup_f32", 0x1de, [1, 1, 1, 1]),
    (0x228, "v_div_fixup_f64", 0x1df, [2, 2, 2, 2]),
    (0x237, "v_div_fmas_f32", 0x1e2, [1, 1, 1, 1]),
    (0x238, "v_div_fmas_f64", 0x1e3, [2, 2, 2, 2]),
    (0x245, "v_xad_u32", 0x1f3, [1, 1, 1, 1]),
    (0x246, "v_lshl_add_u32", 0x1fd, [1, 1, 1, 1]),
    (0x248, "v_fma_f16", 0x206, [1, 1, 1, 1]),
    (0x254, "v_div_fixup_f16", 0x207, [1, 1, 1, 1]),
    (0x255, "v_add3_u32", 0x1ff, [1, 1, 1, 1]),
    (0x256, "v_lshl_or_b32", 0x200, [1, 1, 1, 1]),
    (0x258, "v_or3_b32", 0x202, [1, 1, 1, 1]),
    (0x2fc, "v_div_scale_f32", 0x1e0, [1, 1, 1, 1]),
    (0x2fd, "v_div_scale_f64", 0x1e1, [2, 2, 2, 2]),
    (0x2fe, "v_mad_u64_u32", 0x1e8, [2, 1, 1, 2]),
    (0x300, "v_add_co_u32", 0x119, [1, 1, 1, 0]),
    (0x301, "v_sub_co_u32", 0x11a, [1, 1, 1, 0]),
    (0x302, "v_subrev_co_u32", 0x11b, [1, 1, 1, 0]),
    (0x31f, "v_mbcnt_lo_u32_b32", 0x28c, [1, 1, 1, 0]),
    (0x320, "v_mbcnt_hi_u32_b32", 0x28d, [1, 1, 1, 0]),
    (0x327, "v_add_f64", 0x280, [2, 2, 2, 0]),
    (0x328, "v_mul_f64", 0x281, [2, 2, 2, 0]),
    (0x329, "v_min_f64", 0x282, [2, 2, 2, 0]),
    (0x32a, "v_max_f64", 0x283, [2, 2, 2, 0]),
    (0x32b, "v_ldexp_f64", 0x284, [2, 2, 1, 0]),
    (0x32c, "v_mul_lo_u32", 0x285, [1, 1, 1, 0]),
    (0x32d, "v_mul_hi_u32", 0x286, [1, 1, 1, 0]),
    (0x31c, "v_ldexp_f32", 0x288, [1, 1, 1, 0]),
    (0x33c, "v_lshlrev_b64", 0x28f, [2, 1, 2, 0]),
    (0x33d, "v_lshrrev_b64", 0x290, [2, 1, 2, 0]),
    (0x33e, "v_ashrrev_i64", 0x291, [2, 1, 2, 0]),
    (0x360, "v_readlane_b32", 0x289, [1, 1, 1, 0]),
];

/// VOPC compare groups: (first gfx11 opcode, type suffix, first gfx9 opcode, suffixes).
const CMP_F: [&str; 16] = ["f", "lt", "eq", "le", "gt", "lg", "ge", "o", "u", "nge", "nlg", "ngt", "nle", "neq", "nlt", "tru"];
const CMP_I: [&str; 8] = ["f", "lt", "eq", "le", "gt", "ne", "ge", "t"];
const VOPC: &[(u16, &str, u16, bool)] = &[
    (0x00, "f16", 0x20, true),
    (0x10, "f32", 0x40, true),
    (0x20, "f64", 0x60, true),
    (0x40, "i32", 0xc0, false),
    (0x48, "u32", 0xc8, false),
    (0x50, "i64", 0xe0, false),
    (0x58, "u64", 0xe8, false),
];

/// A VOPC opcode (0..0x7f compare, 0x80.. the same compare writing EXEC): its mnemonic, gfx9
/// opcode, operand widths and whether it is a v_cmpx.
fn vopc(op: u32) -> Option<(&'static str, u16, [u8; 4], bool)> {
    let (x, base) = if op >= 0x80 { (true, op - 0x80) } else { (false, op) };
    // v_cmp_class / v_cmpx_class (f16, f32, f64): a float and a 32-bit class mask.
    if let 0x7d..=0x7f = base {
        let k = (base - 0x7d) as usize;
        let names = if x {
            ["v_cmpx_class_f16", "v_cmpx_class_f32", "v_cmpx_class_f64"]
        } else {
            ["v_cmp_class_f16", "v_cmp_class_f32", "v_cmp_class_f64"]
        };
        let w = if k == 2 { 2 } else { 1 };
        return Some((names[k], [0x14, 0x10, 0x12][k], [1, w, 1, 0], x));
    }
    let &(first, ty, g9, float) = VOPC.iter().find(|g| (u32::from(g.0)..u32::from(g.0) + if g.3 { 16 } else { 8 }).contains(&base))?;
    let k = (base - u32::from(first)) as usize;
    let suffix = if float { CMP_F[k] } else { CMP_I[k] };
    let name = NAMES.iter().find(|n| n.0 == x && n.1 == suffix && n.2 == ty).map(|n| n.3)?;
    let w = if ty.ends_with("64") { 2 } else { 1 };
    Some((name, g9 + k as u16, [1, w, w, 0], x))
}

/// VOP2 opcodes of v_fmamk_f32 and v_fmaak_f32 (a literal multiplier / addend).
const FMAMK: u32 = 44;
const FMAAK: u32 = 45;

/// Compare mnemonics: (cmpx, suffix, type, name).
const NAMES: &[(bool, &str, &str, &str)] = &[
    (false, "f", "f16", "v_cmp_f_f16"),
    (false, "lt", "f16", "v_cmp_lt_f16"),
    (false, "eq", "f16", "v_cmp_eq_f16"),
    (false, "le", "f16", "v_cmp_le_f16"),
    (false, "gt", "f16", "v_cmp_gt_f16"),
    (false, "lg", "f16", "v_cmp_lg_f16"),
    (false, "ge", "f16", "v_cmp_ge_f16"),
    (false, "o", "f16", "v_cmp_o_f16"),
    (false, "u", "f16", "v_cmp_u_f16"),
    (false, "nge", "f16", "v_cmp_nge_f16"),
    (false, "nlg", "f16", "v_cmp_nlg_f16"),
    (false, "ngt", "f16", "v_cmp_ngt_f16"),
    (false, "nle", "f16", "v_cmp_nle_f16"),
    (false, "neq", "f16", "v_cmp_neq_f16"),
    (false, "nlt", "f16", "v_cmp_nlt_f16"),
    (false, "tru", "f16", "v_cmp_tru_f16"),
    (false, "f", "f32", "v_cmp_f_f32"),
    (false, "lt", "f32", "v_cmp_lt_f32"),
    (false, "eq", "f32", "v_cmp_eq_f32"),
    (false, "le", "f32", "v_cmp_le_f32"),
    (false, "gt", "f32", "v_cmp_gt_f32"),
    (false, "lg", "f32", "v_cmp_lg_f32"),
    (false, "ge", "f32", "v_cmp_ge_f32"),
    (false, "o", "f32", "v_cmp_o_f32"),
    (false, "u", "f32", "v_cmp_u_f32"),
    (false, "nge", "f32", "v_cmp_nge_f32"),
    (false, "nlg", "f32", "v_cmp_nlg_f32"),
    (false, "ngt", "f32", "v_cmp_ngt_f32"),
    (false, "nle", "f32", "v_cmp_nle_f32"),
    (false, "neq", "f32", "v_cmp_neq_f32"),
    (false, "nlt", "f32", "v_cmp_nlt_f32"),
    (false, "tru", "f32", "v_cmp_tru_f32"),
    (false, "f", "f64", "v_cmp_f_f64"),
    (false, "lt", "f64", "v_cmp_lt_f64"),
    (false, "eq", "f64", "v_cmp_eq_f64"),
    (false, "le", "f64", "v_cmp_le_f64"),
    (false, "gt", "f64", "v_cmp_gt_f64"),
    (false, "lg", "f64", "v_cmp_lg_f64"),
    (false, "ge", "f64", "v_cmp_ge_f64"),
    (false, "o", "f64", "v_cmp_o_f64"),
    (false, "u", "f64", "v_cmp_u_f64"),
    (false, "nge", "f64", "v_cmp_nge_f64"),
    (false, "nlg", "f64", "v_cmp_nlg_f64"),
    (false, "ngt", "f64", "v_cmp_ngt_f64"),
    (false, "nle", "f64", "v_cmp_nle_f64"),
    (false, "neq", "f64", "v_cmp_neq_f64"),
    (false, "nlt", "f64", "v_cmp_nlt_f64"),
    (false, "tru", "f64", "v_cmp_tru_f64"),
    (false, "f", "i32", "v_cmp_f_i32"),
    (false, "lt", "i32", "v_cmp_lt_i32"),
    (false, "eq", "i32", "v_cmp_eq_i32"),
    (false, "le", "i32", "v_cmp_le_i32"),
    (false, "gt", "i32", "v_cmp_gt_i32"),
    (false, "ne", "i32", "v_cmp_ne_i32"),
    (false, "ge", "i32", "v_cmp_ge_i32"),
    (false, "t", "i32", "v_cmp_t_i32"),
    (false, "f", "u32", "v_cmp_f_u32"),
    (false, "lt", "u32", "v_cmp_lt_u32"),
    (false, "eq", "u32", "v_cmp_eq_u32"),
    (false, "le", "u32", "v_cmp_le_u32"),
    (false, "gt", "u32", "v_cmp_gt_u32"),
    (false, "ne", "u32", "v_cmp_ne_u32"),
    (false, "ge", "u32", "v_cmp_ge_u32"),
    (false, "t", "u32", "v_cmp_t_u32"),
    (false, "f", "i64", "v_cmp_f_i64"),
    (false, "lt", "i64", "v_cmp_lt_i64"),
    (false, "eq", "i64", "v_cmp_eq_i64"),
    (false, "le", "i64", "v_cmp_le_i64"),
    (false, "gt", "i64", "v_cmp_gt_i64"),
    (false, "ne", "i64", "v_cmp_ne_i64"),
    (false, "ge", "i64", "v_cmp_ge_i64"),
    (false, "t", "i64", "v_cmp_t_i64"),
    (false, "f", "u64", "v_cmp_f_u64"),
    (false, "lt", "u64", "v_cmp_lt_u64"),
    (false, "eq", "u64", "v_cmp_eq_u64"),
    (false, "le", "u64", "v_cmp_le_u64"),
    (false, "gt", "u64", "v_cmp_gt_u64"),
    (false, "ne", "u64", "v_cmp_ne_u64"),
    (false, "ge", "u64", "v_cmp_ge_u64"),
    (false, "t", "u64", "v_cmp_t_u64"),
    (true, "f", "f16", "v_cmpx_f_f16"),
    (true, "lt", "f16", "v_cmpx_lt_f16"),
    (true, "eq", "f16", "v_cmpx_eq_f16"),
    (true, "le", "f16", "v_cmpx_le_f16"),
    (true, "gt", "f16", "v_cmpx_gt_f16"),
    (true, "lg", "f16", "v_cmpx_lg_f16"),
    (true, "ge", "f16", "v_cmpx_ge_f16"),
    (true, "o", "f16", "v_cmpx_o_f16"),
    (true, "u", "f16", "v_cmpx_u_f16"),
    (true, "nge", "f16", "v_cmpx_nge_f16"),
    (true, "nlg", "f16", "v_cmpx_nlg_f16"),
    (true, "ngt", "f16", "v_cmpx_ngt_f16"),
    (true, "nle", "f16", "v_cmpx_nle_f16"),
    (true, "neq", "f16", "v_cmpx_neq_f16"),
    (true, "nlt", "f16", "v_cmpx_nlt_f16"),
    (true, "tru", "f16", "v_cmpx_tru_f16"),
    (true, "f", "f32", "v_cmpx_f_f32"),
    (true, "lt", "f32", "v_cmpx_lt_f32"),
    (true, "eq", "f32", "v_cmpx_eq_f32"),
    (true, "le", "f32", "v_cmpx_le_f32"),
    (true, "gt", "f32", "v_cmpx_gt_f32"),
    (true, "lg", "f32", "v_cmpx_lg_f32"),
    (true, "ge", "f32", "v_cmpx_ge_f32"),
    (true, "o", "f32", "v_cmpx_o_f32"),
    (true, "u", "f32", "v_cmpx_u_f32"),
    (true, "nge", "f32", "v_cmpx_nge_f32"),
    (true, "nlg", "f32", "v_cmpx_nlg_f32"),
    (true, "ngt", "f32", "v_cmpx_ngt_f32"),
    (true, "nle", "f32", "v_cmpx_nle_f32"),
    (true, "neq", "f32", "v_cmpx_neq_f32"),
    (true, "nlt", "f32", "v_cmpx_nlt_f32"),
    (true, "tru", "f32", "v_cmpx_tru_f32"),
    (true, "f", "f64", "v_cmpx_f_f64"),
    (true, "lt", "f64", "v_cmpx_lt_f64"),
    (true, "eq", "f64", "v_cmpx_eq_f64"),
    (true, "le", "f64", "v_cmpx_le_f64"),
    (true, "gt", "f64", "v_cmpx_gt_f64"),
    (true, "lg", "f64", "v_cmpx_lg_f64"),
    (true, "ge", "f64", "v_cmpx_ge_f64"),
    (true, "o", "f64", "v_cmpx_o_f64"),
    (true, "u", "f64", "v_cmpx_u_f64"),
    (true, "nge", "f64", "v_cmpx_nge_f64"),
    (true, "nlg", "f64", "v_cmpx_nlg_f64"),
    (true, "ngt", "f64", "v_cmpx_ngt_f64"),
    (true, "nle", "f64", "v_cmpx_nle_f64"),
    (true, "neq", "f64", "v_cmpx_neq_f64"),
    (true, "nlt", "f64", "v_cmpx_nlt_f64"),
    (true, "tru", "f64", "v_cmpx_tru_f64"),
    (true, "f", "i32", "v_cmpx_f_i32"),
    (true, "lt", "i32", "v_cmpx_lt_i32"),
    (true, "eq", "i32", "v_cmpx_eq_i32"),
    (true, "le", "i32", "v_cmpx_le_i32"),
    (true, "gt", "i32", "v_cmpx_gt_i32"),
    (true, "ne", "i32", "v_cmpx_ne_i32"),
    (true, "ge", "i32", "v_cmpx_ge_i32"),
    (true, "t", "i32", "v_cmpx_t_i32"),
    (true, "f", "u32", "v_cmpx_f_u32"),
    (true, "lt", "u32", "v_cmpx_lt_u32"),
    (true, "eq", "u32", "v_cmpx_eq_u32"),
    (true, "le", "u32", "v_cmpx_le_u32"),
    (true, "gt", "u32", "v_cmpx_gt_u32"),
    (true, "ne", "u32", "v_cmpx_ne_u32"),
    (true, "ge", "u32", "v_cmpx_ge_u32"),
    (true, "t", "u32", "v_cmpx_t_u32"),
    (true, "f", "i64", "v_cmpx_f_i64"),
    (true, "lt", "i64", "v_cmpx_lt_i64"),
    (true, "eq", "i64", "v_cmpx_eq_i64"),
    (true, "le", "i64", "v_cmpx_le_i64"),
    (true, "gt", "i64", "v_cmpx_gt_i64"),
    (true, "ne", "i64", "v_cmpx_ne_i64"),
    (true, "ge", "i64", "v_cmpx_ge_i64"),
    (true, "t", "i64", "v_cmpx_t_i64"),
    (true, "f", "u64", "v_cmpx_f_u64"),
    (true, "lt", "u64", "v_cmpx_lt_u64"),
    (true, "eq", "u64", "v_cmpx_eq_u64"),
    (true, "le", "u64", "v_cmpx_le_u64"),
    (true, "gt", "u64", "v_cmpx_gt_u64"),
    (true, "ne", "u64", "v_cmpx_ne_u64"),
    (true, "ge", "u64", "v_cmpx_ge_u64"),
    (true, "t", "u64", "v_cmpx_t_u64"),
];

/// VOPD X / Y operations: (opcode, mnemonic, gfx9 encoding and opcode). 16.. are Y only.
const VOPD: &[(u16, &str, Enc, u16)] = &[
    (0, "v_dual_fmac_f32", Enc::Vop2, 59),
    // fmaak: src0 * vsrc1 + K; fmamk: src0 * K + vsrc1 (K the literal), as v_fma_f32.
    (1, "v_dual_fmaak_f32", Enc::Vop3, 0x1cb),
    (2, "v_dual_fmamk_f32", Enc::Vop3, 0x1cb),
    (3, "v_dual_mul_f32", Enc::Vop2, 5),
    (4, "v_dual_add_f32", Enc::Vop2, 1),
    (5, "v_dual_sub_f32", Enc::Vop2, 2),
    (6, "v_dual_subrev_f32", Enc::Vop2, 3),
    (8, "v_dual_mov_b32", Enc::Vop1, 1),
    (9, "v_dual_cndmask_b32", Enc::Vop2, 0),
    (10, "v_dual_max_f32", Enc::Vop2, 11),
    (11, "v_dual_min_f32", Enc::Vop2, 10),
    (16, "v_dual_add_nc_u32", Enc::Vop2, 52),
    (17, "v_dual_lshlrev_b32", Enc::Vop2, 18),
    (18, "v_dual_and_b32", Enc::Vop2, 19),
];

/// DS opcodes (the same numbers as gfx9's for these), gfx11 names; widths as gfx9's table.
const DS: &[Row] = &[
    (0, "ds_add_u32", 0, [0, 1, 1, 0]),
    (1, "ds_sub_u32", 1, [0, 1, 1, 0]),
    (2, "ds_rsub_u32", 2, [0, 1, 1, 0]),
    (3, "ds_inc_u32", 3, [0, 1, 1, 0]),
    (4, "ds_dec_u32", 4, [0, 1, 1, 0]),
    (5, "ds_min_i32", 5, [0, 1, 1, 0]),
    (6, "ds_max_i32", 6, [0, 1, 1, 0]),
    (7, "ds_min_u32", 7, [0, 1, 1, 0]),
    (8, "ds_max_u32", 8, [0, 1, 1, 0]),
    (9, "ds_and_b32", 9, [0, 1, 1, 0]),
    (10, "ds_or_b32", 10, [0, 1, 1, 0]),
    (11, "ds_xor_b32", 11, [0, 1, 1, 0]),
    (13, "ds_store_b32", 13, [0, 1, 1, 0]),
    (14, "ds_store_2addr_b32", 14, [0, 1, 1, 1]),
    (15, "ds_store_2addr_stride64_b32", 15, [0, 1, 1, 1]),
    (16, "ds_cmpstore_b32", 16, [0, 1, 1, 1]),
    (30, "ds_store_b8", 30, [0, 1, 1, 0]),
    (31, "ds_store_b16", 31, [0, 1, 1, 0]),
    (32, "ds_add_rtn_u32", 32, [1, 1, 1, 0]),
    (33, "ds_sub_rtn_u32", 33, [1, 1, 1, 0]),
    (34, "ds_rsub_rtn_u32", 34, [1, 1, 1, 0]),
    (35, "ds_inc_rtn_u32", 35, [1, 1, 1, 0]),
    (36, "ds_dec_rtn_u32", 36, [1, 1, 1, 0]),
    (37, "ds_min_rtn_i32", 37, [1, 1, 1, 0]),
    (38, "ds_max_rtn_i32", 38, [1, 1, 1, 0]),
    (39, "ds_min_rtn_u32", 39, [1, 1, 1, 0]),
    (40, "ds_max_rtn_u32", 40, [1, 1, 1, 0]),
    (41, "ds_and_rtn_b32", 41, [1, 1, 1, 0]),
    (42, "ds_or_rtn_b32", 42, [1, 1, 1, 0]),
    (43, "ds_xor_rtn_b32", 43, [1, 1, 1, 0]),
    (45, "ds_storexchg_rtn_b32", 45, [1, 1, 1, 0]),
    (48, "ds_cmpstore_rtn_b32", 48, [1, 1, 1, 1]),
    (54, "ds_load_b32", 54, [1, 1, 0, 0]),
    (55, "ds_load_2addr_b32", 55, [2, 1, 0, 0]),
    (56, "ds_load_2addr_stride64_b32", 56, [2, 1, 0, 0]),
    (57, "ds_load_i8", 57, [1, 1, 0, 0]),
    (58, "ds_load_u8", 58, [1, 1, 0, 0]),
    (59, "ds_load_i16", 59, [1, 1, 0, 0]),
    (60, "ds_load_u16", 60, [1, 1, 0, 0]),
    (77, "ds_store_b64", 77, [0, 1, 2, 0]),
    (78, "ds_store_2addr_b64", 78, [0, 1, 2, 2]),
    (79, "ds_store_2addr_stride64_b64", 79, [0, 1, 2, 2]),
    (118, "ds_load_b64", 118, [2, 1, 0, 0]),
    (119, "ds_load_2addr_b64", 119, [4, 1, 0, 0]),
    (120, "ds_load_2addr_stride64_b64", 120, [4, 1, 0, 0]),
];

/// FLAT / GLOBAL / SCRATCH loads and stores: (gfx11 opcode, suffix, gfx9 opcode, dwords, store).
const FLAT: &[(u16, &str, u16, u8, bool)] = &[
    (16, "load_u8", 16, 1, false),
    (17, "load_i8", 17, 1, false),
    (18, "load_u16", 18, 1, false),
    (19, "load_i16", 19, 1, false),
    (20, "load_b32", 20, 1, false),
    (21, "load_b64", 21, 2, false),
    (22, "load_b96", 22, 3, false),
    (23, "load_b128", 23, 4, false),
    (24, "store_b8", 24, 1, true),
    (25, "store_b16", 26, 1, true),
    (26, "store_b32", 28, 1, true),
    (27, "store_b64", 29, 2, true),
    (28, "store_b96", 30, 3, true),
    (29, "store_b128", 31, 4, true),
];

/// FLAT / GLOBAL atomics: (gfx11 opcode, suffix, gfx9 opcode, dwords of the memory operand).
const ATOMICS: &[(u16, &str, u16, u8)] = &[
    (51, "atomic_swap_b32", 64, 1),
    (52, "atomic_cmpswap_b32", 65, 1),
    (53, "atomic_add_u32", 66, 1),
    (54, "atomic_sub_u32", 67, 1),
    (56, "atomic_min_i32", 68, 1),
    (57, "atomic_min_u32", 69, 1),
    (58, "atomic_max_i32", 70, 1),
    (59, "atomic_max_u32", 71, 1),
    (60, "atomic_and_b32", 72, 1),
    (61, "atomic_or_b32", 73, 1),
    (62, "atomic_xor_b32", 74, 1),
    (63, "atomic_inc_u32", 75, 1),
    (64, "atomic_dec_u32", 76, 1),
    (65, "atomic_swap_b64", 96, 2),
    (66, "atomic_cmpswap_b64", 97, 2),
    (67, "atomic_add_u64", 98, 2),
    (68, "atomic_sub_u64", 99, 2),
    (69, "atomic_min_i64", 100, 2),
    (70, "atomic_min_u64", 101, 2),
    (71, "atomic_max_i64", 102, 2),
    (72, "atomic_max_u64", 103, 2),
    (73, "atomic_and_b64", 104, 2),
    (74, "atomic_or_b64", 105, 2),
    (75, "atomic_xor_b64", 106, 2),
    (76, "atomic_inc_u64", 107, 2),
    (77, "atomic_dec_u64", 108, 2),
];

/// "flat_", "scratch_", "global_" + suffix, as static strings.
const FLAT_NAMES: &[(&str, [&str; 3])] = &[
    ("load_u8", ["flat_load_u8", "scratch_load_u8", "global_load_u8"]),
    ("load_i8", ["flat_load_i8", "scratch_load_i8", "global_load_i8"]),
    ("load_u16", ["flat_load_u16", "scratch_load_u16", "global_load_u16"]),
    ("load_i16", ["flat_load_i16", "scratch_load_i16", "global_load_i16"]),
    ("load_b32", ["flat_load_b32", "scratch_load_b32", "global_load_b32"]),
    ("load_b64", ["flat_load_b64", "scratch_load_b64", "global_load_b64"]),
    ("load_b96", ["flat_load_b96", "scratch_load_b96", "global_load_b96"]),
    ("load_b128", ["flat_load_b128", "scratch_load_b128", "global_load_b128"]),
    ("store_b8", ["flat_store_b8", "scratch_store_b8", "global_store_b8"]),
    ("store_b16", ["flat_store_b16", "scratch_store_b16", "global_store_b16"]),
    ("store_b32", ["flat_store_b32", "scratch_store_b32", "global_store_b32"]),
    ("store_b64", ["flat_store_b64", "scratch_store_b64", "global_store_b64"]),
    ("store_b96", ["flat_store_b96", "scratch_store_b96", "global_store_b96"]),
    ("store_b128", ["flat_store_b128", "scratch_store_b128", "global_store_b128"]),
    ("atomic_swap_b32", ["flat_atomic_swap_b32", "scratch_atomic_swap_b32", "global_atomic_swap_b32"]),
    ("atomic_cmpswap_b32", ["flat_atomic_cmpswap_b32", "scratch_atomic_cmpswap_b32", "global_atomic_cmpswap_b32"]),
    ("atomic_add_u32", ["flat_atomic_add_u32", "scratch_atomic_add_u32", "global_atomic_add_u32"]),
    ("atomic_sub_u32", ["flat_atomic_sub_u32", "scratch_atomic_sub_u32", "global_atomic_sub_u32"]),
    ("atomic_min_i32", ["flat_atomic_min_i32", "scratch_atomic_min_i32", "global_atomic_min_i32"]),
    ("atomic_min_u32", ["flat_atomic_min_u32", "scratch_atomic_min_u32", "global_atomic_min_u32"]),
    ("atomic_max_i32", ["flat_atomic_max_i32", "scratch_atomic_max_i32", "global_atomic_max_i32"]),
    ("atomic_max_u32", ["flat_atomic_max_u32", "scratch_atomic_max_u32", "global_atomic_max_u32"]),
    ("atomic_and_b32", ["flat_atomic_and_b32", "scratch_atomic_and_b32", "global_atomic_and_b32"]),
    ("atomic_or_b32", ["flat_atomic_or_b32", "scratch_atomic_or_b32", "global_atomic_or_b32"]),
    ("atomic_xor_b32", ["flat_atomic_xor_b32", "scratch_atomic_xor_b32", "global_atomic_xor_b32"]),
    ("atomic_inc_u32", ["flat_atomic_inc_u32", "scratch_atomic_inc_u32", "global_atomic_inc_u32"]),
    ("atomic_dec_u32", ["flat_atomic_dec_u32", "scratch_atomic_dec_u32", "global_atomic_dec_u32"]),
    ("atomic_swap_b64", ["flat_atomic_swap_b64", "scratch_atomic_swap_b64", "global_atomic_swap_b64"]),
    ("atomic_cmpswap_b64", ["flat_atomic_cmpswap_b64", "scratch_atomic_cmpswap_b64", "global_atomic_cmpswap_b64"]),
    ("atomic_add_u64", ["flat_atomic_add_u64", "scratch_atomic_add_u64", "global_atomic_add_u64"]),
    ("atomic_sub_u64", ["flat_atomic_sub_u64", "scratch_atomic_sub_u64", "global_atomic_sub_u64"]),
    ("atomic_min_i64", ["flat_atomic_min_i64", "scratch_atomic_min_i64", "global_atomic_min_i64"]),
    ("atomic_min_u64", ["flat_atomic_min_u64", "scratch_atomic_min_u64", "global_atomic_min_u64"]),
    ("atomic_max_i64", ["flat_atomic_max_i64", "scratch_atomic_max_i64", "global_atomic_max_i64"]),
    ("atomic_max_u64", ["flat_atomic_max_u64", "scratch_atomic_max_u64", "global_atomic_max_u64"]),
    ("atomic_and_b64", ["flat_atomic_and_b64", "scratch_atomic_and_b64", "global_atomic_and_b64"]),
    ("atomic_or_b64", ["flat_atomic_or_b64", "scratch_atomic_or_b64", "global_atomic_or_b64"]),
    ("atomic_xor_b64", ["flat_atomic_xor_b64", "scratch_atomic_xor_b64", "global_atomic_xor_b64"]),
    ("atomic_inc_u64", ["flat_atomic_inc_u64", "scratch_atomic_inc_u64", "global_atomic_inc_u64"]),
    ("atomic_dec_u64", ["flat_atomic_dec_u64", "scratch_atomic_dec_u64", "global_atomic_dec_u64"]),
];

fn flat_name(seg: u8, suffix: &str) -> Option<&'static str> {
    FLAT_NAMES.iter().find(|n| n.0 == suffix).map(|n| n.1[usize::from(seg)])
}

impl Inst {
    /// The operation the interpreter runs: `sem`, with gfx11's ds_cmpstore operand order
    /// (DATA0 the new value, DATA1 the compared one) turned into gfx9's ds_cmpst order.
    pub fn operation(&self) -> gfx9::Inst {
        let mut s = self.sem;
        if s.enc == Enc::Ds && (s.op == 16 || s.op == 48) {
            (s.data, s.data1) = (s.data1, s.data);
        }
        s
    }
}

/// An SGPR-or-constant operand code of the encoding in `sem`'s terms (M0 124, NULL [`NULL`]).
fn scalar(c: u32) -> u16 {
    match c {
        124 => NULL,
        125 => 124,
        c => c as u16,
    }
}

fn find(t: &[Row], op: u32) -> Option<&Row> {
    t.iter().find(|r| u32::from(r.0) == op)
}

fn new(form: Form, op: u32, name: &'static str, sem: gfx9::Inst) -> Inst {
    Inst { sem, y: None, form, op: op as u16, name, yname: "", len: 4, run: Run::Exec, dlc: false }
}

/// A VOP1/VOP2/VOPC whose src0 field (bits 0..9 of `d`) is 0xfa (DPP16) or 0xe9/0xea (DPP8,
/// without / with FI) reads its second dword `e` as that form; any other src0: `i` as it is.
/// `None`: an opcode without the form (64-bit operands, v_nop, v_readfirstlane, v_cmpx,
/// v_fmac), a reserved control, or no second dword.
fn dpp(mut i: Inst, d: u32, e: Option<u32>) -> Option<Inst> {
    let code = d & 0x1ff;
    if !matches!(code, 0xfa | 0xe9 | 0xea) {
        return Some(i);
    }
    let e = e?;
    let s = &mut i.sem;
    let plain = match i.form {
        Form::Vopc => s.enc == Enc::Vopc && s.sig[1..3] == [1, 1],
        Form::Vop2 if gfx9::carry_in(s.op) => s.sig[..3] == [1, 1, 1],
        _ => s.sig.iter().all(|&w| w <= 1),
    };
    if !plain || (i.form == Form::Vop1 && matches!(i.op, 0 | 2)) || (i.form == Form::Vop2 && matches!(s.op, 22 | 59)) {
        return None;
    }
    s.src[0] = 256 + (e & 0xff) as u16;
    if code == 0xfa {
        let ctrl = ((e >> 8) & 0x1ff) as u16;
        let valid =
            matches!(ctrl, 0..=0xff | 0x101..=0x10f | 0x111..=0x11f | 0x121..=0x12f | 0x140 | 0x141 | 0x150..=0x15f | 0x160..=0x16f);
        if !valid || e & (1 << 17) != 0 {
            return None;
        }
        s.neg = (((e >> 20) & 1) | ((e >> 21) & 2)) as u8;
        s.abs = (((e >> 21) & 1) | ((e >> 22) & 2)) as u8;
        s.ext = gfx9::Ext::Dpp(gfx9::Dpp {
            ctrl,
            row_mask: (e >> 28) as u8,
            bank_mask: ((e >> 24) & 15) as u8,
            bound_ctrl: e & (1 << 19) != 0,
            fi: e & (1 << 18) != 0,
        });
    } else {
        s.ext = gfx9::Ext::Dpp8 { sel: e >> 8, fi: code == 0xea };
    }
    i.len = 8;
    Some(i)
}

/// A gfx9-style instruction for `sem`: encoding, opcode, widths.
fn sem(enc: Enc, op: u16, sig: [u8; 4]) -> gfx9::Inst {
    gfx9::blank(enc, &(op, "", sig))
}

/// Decode the instruction at the start of `w` (up to three dwords: VOP3 / VOPD with a literal).
/// `None`: not an instruction the model knows, or `w` too short for it.
pub fn decode(w: &[u32]) -> Option<Inst> {
    let mut i = decode_fields(w)?;
    // A literal follows the instruction's own dwords.
    let uses_literal = |s: &gfx9::Inst| s.src.contains(&LITERAL);
    if uses_literal(&i.sem) || i.y.as_ref().is_some_and(uses_literal) {
        let lit = *w.get(usize::from(i.len) / 4)?;
        i.sem.lit = lit;
        if let Some(y) = i.y.as_mut() {
            y.lit = lit;
        }
        i.len += 4;
    }
    i.sem.len = i.len;
    Some(i)
}

fn decode_fields(w: &[u32]) -> Option<Inst> {
    let d = *w.first()?;
    let second = w.get(1).copied();
    if d >> 23 == 0x17d {
        let op = (d >> 8) & 0xff;
        if op == SENDMSG_RTN {
            let msg = d & 0xff;
            MSG.iter().find(|m| m.0 == msg && msg >= 128)?;
            let mut s = sem(Enc::Sop1, 0, [1, 0, 0, 0]);
            s.dst = scalar((d >> 16) & 0x7f);
            s.imm = msg as i32;
            let mut i = new(Form::Sop1, op, "s_sendmsg_rtn_b32", s);
            i.run = Run::No;
            return Some(i);
        }
        let r = find(SOP1, op)?;
        let mut s = sem(Enc::Sop1, r.2, r.3);
        s.dst = scalar((d >> 16) & 0x7f);
        s.src[0] = scalar(d & 0xff);
        return Some(new(Form::Sop1, op, r.1, s));
    }
    if d >> 23 == 0x17e {
        let op = (d >> 16) & 0x7f;
        let r = find(SOPC, op)?;
        let mut s = sem(Enc::Sopc, r.2, r.3);
        s.src = [scalar(d & 0xff), scalar((d >> 8) & 0xff), 0];
        return Some(new(Form::Sopc, op, r.1, s));
    }
    if d >> 23 == 0x17f {
        let op = (d >> 16) & 0x7f;
        let &(_, name, what) = SOPP.iter().find(|r| u32::from(r.0) == op)?;
        let imm = i32::from(d as u16 as i16);
        let valid = match op {
            0 => imm as u16 <= 0xf,
            7 => {
                let v = imm as u32 & 0xffff;
                v & 0xf <= 11 && (v >> 4) & 7 <= 5 && (v >> 7) & 0xf <= 11 && v >> 11 == 0
            }
            5 => imm as u16 <= 0x3f,
            54 => MSG.iter().any(|m| i64::from(m.0) == i64::from(imm) && m.0 < 128),
            // Printed without an operand: only the zero immediate.
            31 | 48 | 61 => imm == 0,
            _ => true,
        };
        if !valid {
            return None;
        }
        if let Sopp::Mode(offset) = what {
            if imm as u32 > 0xf {
                return None;
            }
            let mut s = sem(Enc::Sopk, gfx9::SETREG_IMM32, [0; 4]);
            s.imm = gfx9::HW_REG_MODE | (offset << 6 | 3 << 11) as i32;
            s.lit = imm as u32;
            let mut i = new(Form::Sopp, op, name, s);
            i.run = Run::Exec;
            return Some(i);
        }
        let (g9, run) = match what {
            Sopp::Mode(_) => return None,
            Sopp::Op(o) => (o, Run::Exec),
            // s_sendmsg: only the end-of-program VGPR release is a no-op for the model.
            Sopp::Nop if op == 54 && imm != MSG_DEALLOC_VGPRS => (0, Run::No),
            Sopp::Nop => (0, Run::Nop),
            Sopp::No => (0, Run::No),
        };
        let mut s = sem(Enc::Sopp, g9, [0; 4]);
        s.imm = imm;
        let mut i = new(Form::Sopp, op, name, s);
        i.run = run;
        return Some(i);
    }
    if d >> 28 == 0xb {
        let op = (d >> 23) & 0x1f;
        let r = find(SOPK, op)?;
        let mut s = sem(Enc::Sopk, r.2, r.3);
        s.dst = scalar((d >> 16) & 0x7f);
        s.imm = i32::from(d as u16 as i16);
        if op != 0 && s.imm & 0x3f != gfx9::HW_REG_MODE {
            // Hardware registers other than MODE: not modelled.
            return None;
        }
        if r.2 == gfx9::SETREG {
            s.src[0] = s.dst;
        }
        let mut i = new(Form::Sopk, op, r.1, s);
        if r.2 == gfx9::SETREG_IMM32 {
            i.sem.lit = second?;
            i.len = 8;
        }
        return Some(i);
    }
    if d >> 30 == 0b10 {
        let op = (d >> 23) & 0x7f;
        let r = find(SOP2, op)?;
        let mut s = sem(Enc::Sop2, r.2, r.3);
        s.dst = scalar((d >> 16) & 0x7f);
        s.src = [scalar(d & 0xff), scalar((d >> 8) & 0xff), 0];
        return Some(new(Form::Sop2, op, r.1, s));
    }
    if d >> 26 == 0b111101 {
        let e = second?;
        let op = (d >> 18) & 0xff;
        let r = find(SMEM, op)?;
        let mut s = sem(Enc::Smem, r.2, r.3);
        s.dst = scalar((d >> 6) & 0x7f);
        s.src[0] = ((d & 0x3f) << 1) as u16;
        s.imm = ((e & 0x1f_ffff) << 11) as i32 >> 11;
        let soffset = scalar(e >> 25);
        s.saddr = if soffset == NULL { SADDR_OFF } else { soffset };
        s.glc = d & (1 << 14) != 0;
        let mut i = new(Form::Smem, op, r.1, s);
        i.dlc = d & (1 << 13) != 0;
        i.len = 8;
        return Some(i);
    }
    if d >> 25 == 0x3f {
        let op = (d >> 9) & 0xff;
        let r = find(VOP1, op)?;
        let mut s = sem(Enc::Vop1, r.2, r.3);
        s.dst = if op == 2 { scalar((d >> 17) & 0xff) } else { ((d >> 17) & 0xff) as u16 };
        s.src[0] = src9(d & 0x1ff);
        return dpp(new(Form::Vop1, op, r.1, s), d, second);
    }
    if d >> 25 == 0x3e {
        let op = (d >> 17) & 0xff;
        let (name, g9, sig, x) = vopc(op)?;
        // v_cmpx writes EXEC only (gfx10+); VOPC e32 writes VCC.
        let mut s = sem(if x { Enc::Vop3 } else { Enc::Vopc }, g9, sig);
        s.dst = if x { EXEC } else { VCC };
        s.src = [src9(d & 0x1ff), 256 + ((d >> 9) & 0xff) as u16, 0];
        return dpp(new(Form::Vopc, op, name, s), d, second);
    }
    if d >> 31 == 0 && matches!((d >> 25) & 0x3f, FMAMK | FMAAK) {
        // v_fmamk_f32 (src0 * K + vsrc1), v_fmaak_f32 (src0 * vsrc1 + K): run as v_fma_f32.
        let op = (d >> 25) & 0x3f;
        let mut s = sem(Enc::Vop3, 0x1cb, [1, 1, 1, 1]);
        s.dst = ((d >> 17) & 0xff) as u16;
        let vsrc1 = 256 + ((d >> 9) & 0xff) as u16;
        s.src = if op == FMAMK { [src9(d & 0x1ff), LITERAL, vsrc1] } else { [src9(d & 0x1ff), vsrc1, LITERAL] };
        return Some(new(Form::Vop2, op, if op == FMAMK { "v_fmamk_f32" } else { "v_fmaak_f32" }, s));
    }
    if d >> 31 == 0 {
        let op = (d >> 25) & 0x3f;
        let r = find(VOP2, op)?;
        let mut s = sem(Enc::Vop2, r.2, r.3);
        s.dst = ((d >> 17) & 0xff) as u16;
        s.src = [src9(d & 0x1ff), 256 + ((d >> 9) & 0xff) as u16, VCC];
        return dpp(new(Form::Vop2, op, r.1, s), d, second);
    }
    if d >> 26 == 0b110101 {
        return vop3(d, second?);
    }
    if d >> 26 == 0b110010 {
        return vopd(d, second?);
    }
    if d >> 24 == 0xcc {
        return vop3p(d, second?);
    }
    if d >> 26 == 0b110110 {
        let e = second?;
        // GDS: not modelled.
        if d & (1 << 17) != 0 {
            return None;
        }
        let op = (d >> 18) & 0xff;
        let r = find(DS, op)?;
        let mut s = sem(Enc::Ds, r.2, r.3);
        s.imm = (d & 0xffff) as i32;
        s.src[0] = 256 + (e & 0xff) as u16;
        s.data = ((e >> 8) & 0xff) as u16;
        s.data1 = ((e >> 16) & 0xff) as u16;
        s.dst = ((e >> 24) & 0xff) as u16;
        let mut i = new(Form::Ds, op, r.1, s);
        i.len = 8;
        return Some(i);
    }
    if d >> 26 == 0b110111 {
        return flat(d, second?);
    }
    if d >> 26 == 0b111000 {
        let e = second?;
        let op = (d >> 18) & 0xff;
        // Only the cache invalidations (no operands): the model has no caches to drop.
        let name = match op {
            43 => "buffer_gl0_inv",
            44 => "buffer_gl1_inv",
            _ => return None,
        };
        if d & 0x3_ffff != 0 || e != 0 {
            return None;
        }
        let mut i = new(Form::Mubuf, op, name, sem(Enc::Sopp, 0, [0; 4]));
        i.run = Run::Nop;
        i.len = 8;
        return Some(i);
    }
    None
}

/// A 9-bit source operand (0..=255 scalar / constant, 256.. VGPR).
fn src9(c: u32) -> u16 {
    if c >= 256 {
        c as u16
    } else {
        scalar(c)
    }
}

fn vop3(d: u32, e: u32) -> Option<Inst> {
    let op = (d >> 16) & 0x3ff;
    let (name, mut s, vop3b) = if op < 0x100 {
        let (name, g9, sig, x) = vopc(op)?;
        let mut s = sem(Enc::Vop3, g9, sig);
        s.dst = if x { EXEC } else { scalar(d & 0xff) };
        // v_cmpx_*_e64 has no destination field value but EXEC (0x7e).
        if x && d & 0xff != 0x7e {
            return None;
        }
        (name, s, false)
    } else if (0x100..0x140).contains(&op) {
        let r = find(VOP2, op - 0x100)?;
        (r.1, sem(Enc::Vop3, 0x100 + r.2, r.3), false)
    } else if (0x180..0x200).contains(&op) {
        let r = find(VOP1, op - 0x180)?;
        // v_nop and v_readfirstlane have no VOP3 form the model decodes.
        if r.2 == 0 || r.2 == 2 {
            return None;
        }
        (r.1, sem(Enc::Vop3, 0x140 + r.2, r.3), false)
    } else {
        let r = find(VOP3, op)?;
        (r.1, sem(Enc::Vop3, r.2, r.3), matches!(op, 0x2fc..=0x2fe | 0x300..=0x302))
    };
    let vop2_carry_in = (0x120..=0x122).contains(&op);
    if op >= 0x100 {
        s.dst = if op == 0x360 { scalar(d & 0xff) } else { (d & 0xff) as u16 };
    }
    s.src = [src9(e & 0x1ff), src9((e >> 9) & 0x1ff), src9((e >> 18) & 0x1ff)];
    s.neg = ((e >> 29) & 7) as u8;
    s.omod = ((e >> 27) & 3) as u8;
    s.clamp = d & (1 << 15) != 0;
    // VOP3b: the carry-out SGPR in bits 8..15 (gfx11: v_add_co_ci_u32_e64 and friends too).
    if vop3b || vop2_carry_in {
        s.sdst = scalar((d >> 8) & 0x7f);
        if d & (1 << 15) != 0 {
            return None;
        }
    } else {
        s.abs = ((d >> 8) & 7) as u8;
        // op_sel (f16 halves): not modelled.
        if (d >> 11) & 0xf != 0 {
            return None;
        }
    }
    let mut i = new(Form::Vop3, op, name, s);
    i.len = 8;
    Some(i)
}

/// VOP3P (prefix 0xcc; gfx9's field layout): the v_fma_mix ops, run by gfx9's semantics.
fn vop3p(d: u32, e: u32) -> Option<Inst> {
    let op = (d >> 16) & 0x7f;
    let name = match op {
        0x20 => "v_fma_mix_f32",
        0x21 => "v_fma_mixlo_f16",
        0x22 => "v_fma_mixhi_f16",
        _ => return None,
    };
    let mut s = sem(Enc::Vop3p, op as u16, [1, 1, 1, 1]);
    s.dst = (d & 0xff) as u16;
    s.src = [src9(e & 0x1ff), src9((e >> 9) & 0x1ff), src9((e >> 18) & 0x1ff)];
    s.neg = ((e >> 29) & 7) as u8;
    s.abs = ((d >> 8) & 7) as u8;
    s.clamp = d & (1 << 15) != 0;
    let (op_sel, op_sel_hi) = ((d >> 11) & 7, ((e >> 27) & 3) | ((d >> 14) & 1) << 2);
    s.imm = (op_sel | op_sel_hi << 3) as i32;
    let mut i = new(Form::Vop3p, op, name, s);
    i.len = 8;
    Some(i)
}

fn vopd(d: u32, e: u32) -> Option<Inst> {
    let (opx, opy) = ((d >> 22) & 0xf, (d >> 17) & 0x1f);
    let &(_, xname, xenc, xop) = VOPD.iter().find(|v| u32::from(v.0) == opx && v.0 < 16)?;
    let &(_, yname, yenc, yop) = VOPD.iter().find(|v| u32::from(v.0) == opy)?;
    let half = |enc: Enc, op: u16, dst: u32, src0: u32, vsrc1: u32| {
        let sig = if enc == Enc::Vop1 {
            [1, 1, 0, 0]
        } else if op == 0 || enc == Enc::Vop3 {
            [1, 1, 1, 1]
        } else {
            [1, 1, 1, 0]
        };
        let mut s = sem(enc, op, sig);
        s.dst = dst as u16;
        s.src = [src9(src0), 256 + vsrc1 as u16, VCC];
        if enc == Enc::Vop3 {
            s.src[2] = LITERAL;
        }
        s
    };
    let vdstx = e >> 24;
    let vdsty = ((e >> 17) & 0x7f) << 1 | ((vdstx & 1) ^ 1);
    let mut x = half(xenc, xop, vdstx, d & 0x1ff, (d >> 9) & 0xff);
    let mut y = half(yenc, yop, vdsty, e & 0x1ff, (e >> 9) & 0xff);
    // fmamk: the literal is the multiplier.
    for (h, op) in [(&mut x, opx), (&mut y, opy)] {
        if op == 2 {
            h.src.swap(1, 2);
        }
    }
    let mut i = new(Form::Vopd, opx, xname, x);
    i.y = Some(y);
    i.yname = yname;
    i.len = 8;
    Some(i)
}

fn flat(d: u32, e: u32) -> Option<Inst> {
    let seg = ((d >> 16) & 3) as u8;
    let op = (d >> 18) & 0x7f;
    if seg == 3 {
        return None;
    }
    let (suffix, mut s) = if let Some(&(_, suffix, g9, dwords)) = ATOMICS.iter().find(|a| u32::from(a.0) == op) {
        if seg == 1 {
            return None;
        }
        let mut s = sem(Enc::Flat, g9, [0; 4]);
        s.atomic = true;
        s.dwords = dwords;
        (suffix, s)
    } else {
        let &(_, suffix, g9, dwords, store) = FLAT.iter().find(|f| u32::from(f.0) == op)?;
        let mut s = sem(Enc::Flat, g9, [0; 4]);
        s.dwords = dwords;
        s.store = store;
        (suffix, s)
    };
    let name = flat_name(seg, suffix)?;
    s.seg = seg;
    // FLAT: a 12-bit unsigned offset; GLOBAL and SCRATCH: 13-bit signed.
    s.imm = if seg == 0 {
        if d & 0x1000 != 0 {
            return None;
        }
        (d & 0xfff) as i32
    } else {
        ((d & 0x1fff) << 19) as i32 >> 19
    };
    s.glc = d & (1 << 14) != 0;
    s.slc = d & (1 << 15) != 0;
    s.src[0] = 256 + (e & 0xff) as u16;
    s.data = ((e >> 8) & 0xff) as u16;
    let saddr = scalar((e >> 16) & 0x7f);
    s.saddr = if saddr == NULL { SADDR_OFF } else { saddr };
    s.dst = ((e >> 24) & 0xff) as u16;
    // SCRATCH: SVE says whether the VGPR address is used (`offen` in `sem`).
    let sve = e & (1 << 23) != 0;
    if seg == 1 {
        s.offen = sve;
    } else if sve {
        return None;
    }
    // FLAT (seg 0) has no SGPR base.
    if seg == 0 && s.saddr != SADDR_OFF {
        return None;
    }
    let mut i = new(Form::Flat, op, name, s);
    i.dlc = d & (1 << 13) != 0;
    i.len = 8;
    Some(i)
}

/// An operand as LLVM prints it for gfx11 (`sem` codes), `n` dwords wide.
struct Opnd(u16, u8, u32);

impl fmt::Display for Opnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Opnd(c, n, lit) = *self;
        let range = |f: &mut fmt::Formatter<'_>, p: &str, r: u16| {
            if n <= 1 {
                write!(f, "{p}{r}")
            } else {
                write!(f, "{p}[{r}:{}]", r + u16::from(n) - 1)
            }
        };
        match c {
            0..=105 => range(f, "s", c),
            106 if n == 2 => f.write_str("vcc"),
            106 => f.write_str("vcc_lo"),
            107 => f.write_str("vcc_hi"),
            108..=123 => range(f, "ttmp", c - 108),
            124 => f.write_str("m0"),
            NULL => f.write_str("null"),
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

/// Source `k` of `s`, with its VOP3 modifiers.
fn src(s: &gfx9::Inst, k: usize) -> String {
    let mut t = Opnd(s.src[k], s.sig[k + 1], s.lit).to_string();
    if s.abs & (1 << k) != 0 {
        t = format!("|{t}|");
    }
    if s.neg & (1 << k) != 0 {
        t = format!("-{t}");
    }
    t
}

fn msg_name(m: i64) -> &'static str {
    MSG.iter().find(|x| i64::from(x.0) == m).map_or("?", |x| x.1)
}

/// VOPD half as LLVM prints it: `name vdst, src0[, vsrc1]`.
fn dual(f: &mut fmt::Formatter<'_>, name: &str, s: &gfx9::Inst) -> fmt::Result {
    write!(f, "{name} {}, {}", Opnd(256 + s.dst, 1, 0), src(s, 0))?;
    if s.enc == Enc::Vop2 {
        write!(f, ", {}", src(s, 1))?;
    }
    if s.enc == Enc::Vop3 {
        write!(f, ", {}, {}", src(s, 1), src(s, 2))?;
    }
    Ok(())
}

impl Inst {
    /// A DPP16 / DPP8 VOP1/VOP2/VOPC as LLVM prints it: the e32 text with `_dpp` (VOPC: no
    /// suffix), then the controls.
    fn fmt_dpp(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut plain = *self;
        plain.sem.ext = gfx9::Ext::None;
        let text = plain.to_string();
        let text = text.replacen("_e32 ", if self.form == Form::Vopc { " " } else { "_dpp " }, 1);
        f.write_str(&text)?;
        match self.sem.ext {
            gfx9::Ext::Dpp(d) => {
                write!(f, " {} row_mask:0x{:x} bank_mask:0x{:x}", gfx9::DppCtrl(d.ctrl), d.row_mask, d.bank_mask)?;
                if d.bound_ctrl {
                    f.write_str(" bound_ctrl:1")?;
                }
                if d.fi {
                    f.write_str(" fi:1")?;
                }
            }
            gfx9::Ext::Dpp8 { sel, fi } => {
                let lanes: Vec<String> = (0..8).map(|k| (sel >> (3 * k) & 7).to_string()).collect();
                write!(f, " dpp8:[{}]", lanes.join(","))?;
                if fi {
                    f.write_str(" fi:1")?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

impl fmt::Display for Inst {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.sem.ext != gfx9::Ext::None {
            return self.fmt_dpp(f);
        }
        let (n, s) = (self.name, &self.sem);
        let dst = Opnd(s.dst, s.sig[0], 0);
        let vdst = Opnd(256 + s.dst, s.sig[0], 0);
        match self.form {
            Form::Sop2 => write!(f, "{n} {dst}, {}, {}", src(s, 0), src(s, 1)),
            Form::Sop1 if self.op as u32 == SENDMSG_RTN => write!(f, "{n} {dst}, sendmsg({})", msg_name(i64::from(s.imm))),
            Form::Sop1 if s.sig[1] == 0 => write!(f, "{n} {dst}"),
            Form::Sop1 => write!(f, "{n} {dst}, {}", src(s, 0)),
            Form::Sopc => write!(f, "{n} {}, {}", src(s, 0), src(s, 1)),
            Form::Sopk => match s.op {
                gfx9::GETREG => write!(f, "{n} {dst}, {}", gfx9::Hwreg(s.imm)),
                gfx9::SETREG => write!(f, "{n} {}, {}", gfx9::Hwreg(s.imm), src(s, 0)),
                gfx9::SETREG_IMM32 => write!(f, "{n} {}, {}", gfx9::Hwreg(s.imm), gfx9::Imm32(s.lit)),
                _ => write!(f, "{n} {dst}, 0x{:x}", s.imm as u16),
            },
            Form::Sopp => {
                let v = if matches!(self.op, 17 | 18) { s.lit } else { s.imm as u32 & 0xffff };
                match self.op {
                    48 | 61 | 31 => f.write_str(n),
                    5 => write!(f, "{n} 0x{v:x}"),
                    7 => {
                        let (id0, skip, id1) = (v & 0xf, (v >> 4) & 7, (v >> 7) & 0xf);
                        let mut parts = Vec::new();
                        if id0 != 0 {
                            parts.push(format!("instid0({})", DELAY_ID[id0 as usize]));
                        }
                        if skip != 0 {
                            parts.push(format!("instskip({})", DELAY_SKIP[skip as usize]));
                        }
                        if id1 != 0 {
                            parts.push(format!("instid1({})", DELAY_ID[id1 as usize]));
                        }
                        if parts.is_empty() {
                            write!(f, "{n} 0")
                        } else {
                            write!(f, "{n} {}", parts.join(" | "))
                        }
                    }
                    9 => {
                        let (vm, exp, lgkm) = (v >> 10, v & 7, (v >> 4) & 0x3f);
                        let mut parts = Vec::new();
                        if vm != 63 {
                            parts.push(format!("vmcnt({vm})"));
                        }
                        if exp != 7 {
                            parts.push(format!("expcnt({exp})"));
                        }
                        if lgkm != 63 {
                            parts.push(format!("lgkmcnt({lgkm})"));
                        }
                        if parts.is_empty() {
                            parts = vec![format!("vmcnt({vm})"), format!("expcnt({exp})"), format!("lgkmcnt({lgkm})")];
                        }
                        write!(f, "{n} {}", parts.join(" "))
                    }
                    16 => write!(f, "{n} {}", v & 0xff),
                    8 | 17 => write!(f, "{n} 0x{v:x}"),
                    54 => write!(f, "{n} sendmsg({})", msg_name(i64::from(v))),
                    // s_nop, s_sethalt: the immediate; branches: the unsigned 16-bit field.
                    _ => write!(f, "{n} {v}"),
                }
            }
            Form::Smem => {
                write!(f, "{n} {dst}, {}, ", Opnd(s.src[0], 2, 0))?;
                match (s.saddr, s.imm) {
                    (SADDR_OFF, 0) => f.write_str("null")?,
                    (SADDR_OFF, o) if o < 0 => write!(f, "-0x{:x}", -o)?,
                    (SADDR_OFF, o) => write!(f, "0x{o:x}")?,
                    (so, 0) => write!(f, "{}", Opnd(so, 1, 0))?,
                    (so, o) if o < 0 => write!(f, "{} offset:-0x{:x}", Opnd(so, 1, 0), -o)?,
                    (so, o) => write!(f, "{} offset:0x{o:x}", Opnd(so, 1, 0))?,
                }
                if s.glc {
                    f.write_str(" glc")?;
                }
                if self.dlc {
                    f.write_str(" dlc")?;
                }
                Ok(())
            }
            Form::Vop1 if self.op == 0 => f.write_str(n),
            Form::Vop1 if self.op == 2 => write!(f, "{n} {dst}, {}", src(s, 0)),
            Form::Vop1 => write!(f, "{n}_e32 {vdst}, {}", src(s, 0)),
            Form::Vopc if s.dst == EXEC => write!(f, "{n}_e32 {}, {}", src(s, 0), src(s, 1)),
            Form::Vopc => write!(f, "{n}_e32 vcc_lo, {}, {}", src(s, 0), src(s, 1)),
            Form::Vop2 if matches!(u32::from(self.op), FMAMK | FMAAK) => {
                write!(f, "{n} {vdst}, {}, {}, {}", src(s, 0), src(s, 1), src(s, 2))
            }
            Form::Vop2 => {
                let carry = (32..=34).contains(&self.op);
                if carry {
                    write!(f, "{n}_e32 {vdst}, vcc_lo, {}, {}, vcc_lo", src(s, 0), src(s, 1))
                } else if self.op == 1 {
                    write!(f, "{n}_e32 {vdst}, {}, {}, vcc_lo", src(s, 0), src(s, 1))
                } else {
                    write!(f, "{n}_e32 {vdst}, {}, {}", src(s, 0), src(s, 1))
                }
            }
            Form::Vop3 => {
                let op = self.op;
                let nsrc = s.sig[1..].iter().take_while(|&&w| w != 0).count();
                let srcs: Vec<String> = (0..nsrc).map(|k| src(s, k)).collect();
                let sdst = Opnd(s.sdst, 1, 0);
                if op < 0x100 {
                    if s.dst == EXEC {
                        write!(f, "{n}_e64 {}", srcs.join(", "))?;
                    } else {
                        write!(f, "{n}_e64 {}, {}", Opnd(s.dst, 1, 0), srcs.join(", "))?;
                    }
                } else if op == 0x101 {
                    // v_cndmask_b32_e64: the mask as the third source.
                    write!(f, "{n}_e64 {vdst}, {}, {}, {}", srcs[0], srcs[1], Opnd(s.src[2], 1, 0))?;
                } else if (0x120..=0x122).contains(&op) {
                    write!(f, "{n}_e64 {vdst}, {sdst}, {}, {}, {}", srcs[0], srcs[1], Opnd(s.src[2], 1, 0))?;
                } else if op < 0x200 {
                    write!(f, "{n}_e64 {vdst}, {}", srcs.join(", "))?;
                } else if matches!(op, 0x2fc..=0x2fe | 0x300..=0x302) {
                    write!(f, "{n} {vdst}, {sdst}, {}", srcs.join(", "))?;
                } else if op == 0x360 {
                    write!(f, "{n} {dst}, {}", srcs.join(", "))?;
                } else {
                    write!(f, "{n} {vdst}, {}", srcs.join(", "))?;
                }
                super::print::output_modifiers(f, s.clamp, s.omod)
            }
            Form::Vop3p => {
                // neg_lo / neg_hi print as the sources' neg / abs; op_sel_hi defaults to 0.
                let srcs: Vec<String> = (0..3).map(|k| src(s, k)).collect();
                write!(f, "{n} {vdst}, {}", srcs.join(", "))?;
                super::print::mix_modifiers(f, s.imm as u32, s.clamp)
            }
            Form::Vopd => {
                dual(f, n, s)?;
                f.write_str(" :: ")?;
                match &self.y {
                    Some(y) => dual(f, self.yname, y),
                    None => Ok(()),
                }
            }
            Form::Ds => {
                let sig = s.sig;
                let mut ops = Vec::new();
                if sig[0] != 0 {
                    ops.push(Opnd(256 + s.dst, sig[0], 0).to_string());
                }
                ops.push(Opnd(s.src[0], 1, 0).to_string());
                if sig[2] != 0 {
                    ops.push(Opnd(256 + s.data, sig[2], 0).to_string());
                }
                if sig[3] != 0 {
                    ops.push(Opnd(256 + s.data1, sig[3], 0).to_string());
                }
                write!(f, "{n} {}", ops.join(", "))?;
                let (o0, o1) = (s.imm & 0xff, s.imm >> 8);
                if gfx9::ds_two(s.op) {
                    if o0 != 0 {
                        write!(f, " offset0:{o0}")?;
                    }
                    if o1 != 0 {
                        write!(f, " offset1:{o1}")?;
                    }
                } else if s.imm != 0 {
                    write!(f, " offset:{}", s.imm)?;
                }
                Ok(())
            }
            Form::Mubuf => f.write_str(n),
            Form::Flat => {
                let wide = s.seg == 0 || (s.seg == 2 && s.saddr == SADDR_OFF);
                let addr = if s.seg == 1 && !s.offen { "off".to_string() } else { Opnd(s.src[0], if wide { 2 } else { 1 }, 0).to_string() };
                if s.atomic {
                    let cmp = s.op == 65 || s.op == 97;
                    let data = Opnd(256 + s.data, if cmp { 2 * s.dwords } else { s.dwords }, 0);
                    if s.glc {
                        write!(f, "{n} {}, {addr}, {data}", Opnd(256 + s.dst, s.dwords, 0))?;
                    } else {
                        write!(f, "{n} {addr}, {data}")?;
                    }
                } else if s.store {
                    write!(f, "{n} {addr}, {}", Opnd(256 + s.data, s.dwords, 0))?;
                } else {
                    write!(f, "{n} {}, {addr}", Opnd(256 + s.dst, s.dwords, 0))?;
                }
                if s.seg != 0 {
                    if s.saddr == SADDR_OFF {
                        f.write_str(", off")?;
                    } else {
                        write!(f, ", {}", Opnd(s.saddr, if s.seg == 2 { 2 } else { 1 }, 0))?;
                    }
                }
                if s.imm != 0 {
                    write!(f, " offset:{}", s.imm)?;
                }
                for (on, t) in [(s.glc, " glc"), (s.slc, " slc"), (self.dlc, " dlc")] {
                    if on {
                        f.write_str(t)?;
                    }
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod dpp_tests {
    use super::*;

    #[test]
    fn any_dpp_second_dword_decodes_or_not_without_panicking() {
        let mut r = 0x2545_f491_4f6c_dd1du64;
        for k in 0..200_000u32 {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            let lo = r as u32;
            let first = match k % 3 {
                0 => 0x7e00_0000 | (lo & 0x01ff_fe00),
                1 => 0x7c00_0000 | (lo & 0x01ff_fe00),
                _ => lo & 0x7fff_fe00,
            } | [0xfa, 0xe9, 0xea][(k / 3 % 3) as usize];
            if let Some(i) = decode(&[first, (r >> 32) as u32]) {
                assert!(i.len == 8 || i.sem.ext == gfx9::Ext::None);
                let _ = i.to_string();
            }
        }
    }
}
