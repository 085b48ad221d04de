//! Printing pieces the gfx9 and gfx11 printers share: LLVM's spelling of VOP3's output
//! modifiers and of the VOP3P modifier lists.

use std::fmt;

/// ` clamp` and the output modifier (` mul:2`, ` mul:4`, ` div:2`), in LLVM's order.
pub(crate) fn output_modifiers(f: &mut fmt::Formatter<'_>, clamp: bool, omod: u8) -> fmt::Result {
    if clamp {
        f.write_str(" clamp")?;
    }
    match omod {
        1 => f.write_str(" mul:2"),
        2 => f.write_str(" mul:4"),
        3 => f.write_str(" div:2"),
        _ => Ok(()),
    }
}

/// The first `n` bits of `bits`, low first, as LLVM lists them (`1,0,1`).
pub(crate) fn bit_list(bits: u32, n: usize) -> String {
    (0..n).map(|k| (bits >> k & 1).to_string()).collect::<Vec<_>>().join(",")
}

/// `v_fma_mix*`'s modifiers after its operands: `op_sel` and `op_sel_hi` (bits 0..3 and 3..6 of
/// `sel`) where not 0, then ` clamp`.
pub(crate) fn mix_modifiers(f: &mut fmt::Formatter<'_>, sel: u32, clamp: bool) -> fmt::Result {
    let (op_sel, op_sel_hi) = (sel & 7, (sel >> 3) & 7);
    if op_sel != 0 {
        write!(f, " op_sel:[{}]", bit_list(op_sel, 3))?;
    }
    if op_sel_hi != 0 {
        write!(f, " op_sel_hi:[{}]", bit_list(op_sel_hi, 3))?;
    }
    output_modifiers(f, clamp, 0)
}
