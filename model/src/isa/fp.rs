//! The float operations behind division, square roots and the transcendentals (issue 14):
//! what `v_div_scale`, `v_div_fmas`, `v_div_fixup`, `v_cmp_class`, `v_frexp_*`, `v_fract`,
//! `v_ldexp`, `v_rcp`/`v_rsq`/`v_sqrt`, `v_exp`/`v_log` and `v_sin`/`v_cos` compute, lane by
//! lane, as the CDNA2 / RDNA3 ISA guides' pseudo-code gives them (model/ISA.md: precision).
//!
//! The approximate instructions (rcp, rsq, sqrt, exp, log, sin, cos: 1 ULP on the hardware)
//! are correctly rounded here, or within half an ULP where they go through f64 host math;
//! compilers' sequences around them only need 1 ULP, so their results are what the sequences
//! guarantee.

/// The biased exponent field of an f32 / f64 (0: zero or subnormal; 255 / 2047: inf or NaN).
fn exp32(x: f32) -> i32 {
    ((x.to_bits() >> 23) & 0xff) as i32
}

fn exp64(x: f64) -> i32 {
    ((x.to_bits() >> 52) & 0x7ff) as i32
}

/// `x * 2^n` for an f32, rounded once (f32 times 2^±400 is exact in f64; beyond that the f32
/// result is 0 or infinity either way).
pub fn ldexp32(x: f32, n: i32) -> f32 {
    let n = n.clamp(-400, 400);
    (f64::from(x) * f64::from_bits(((1023 + n) as u64) << 52)) as f32
}

/// `x * 2^n` for the f64 scalings of the division macro (|n| <= 128 and x an f64 whose
/// result stays normal, or where one rounding into the subnormals is the ISA's too).
fn scale64(x: f64, n: i32) -> f64 {
    x * f64::from_bits(((1023 + n) as u64) << 52)
}

fn quiet32(x: f32) -> f32 {
    f32::from_bits(x.to_bits() | 0x40_0000)
}

fn quiet64(x: f64) -> f64 {
    f64::from_bits(x.to_bits() | 0x8_0000_0000_0000)
}

/// v_div_scale_f32 (S0: the value to scale, the denominator S1 or the numerator S2): the
/// scaled value, and whether v_div_fmas must scale the quotient back (the VCC bit).
pub fn div_scale32(s0: f32, s1: f32, s2: f32) -> (f32, bool) {
    if s2 == 0.0 || s1 == 0.0 {
        return (f32::NAN, false);
    }
    if exp32(s2) - exp32(s1) >= 96 {
        // The quotient near the largest float: only the denominator is scaled up.
        return (if s0 == s1 { ldexp32(s0, 64) } else { s0 }, true);
    }
    if s1.is_subnormal() {
        return (ldexp32(s0, 64), false);
    }
    // 1/S1 is computed in f64 by the pseudo-code: never subnormal for an f32 S1, so the two
    // branches on it are kept for the f64 form only.
    let q = s2 / s1;
    if q.is_subnormal() {
        // A subnormal quotient: the numerator is scaled up, the quotient back down.
        return (if s0 == s2 { ldexp32(s0, 64) } else { s0 }, true);
    }
    if exp32(s2) <= 23 {
        // A tiny numerator: both scaled up, the quotient unchanged.
        return (ldexp32(s0, 64), false);
    }
    (s0, false)
}

/// v_div_scale_f64: as [`div_scale32`] with f64's thresholds (768, 53) and scale (2^128).
pub fn div_scale64(s0: f64, s1: f64, s2: f64) -> (f64, bool) {
    if s2 == 0.0 || s1 == 0.0 {
        return (f64::NAN, false);
    }
    if exp64(s2) - exp64(s1) >= 768 {
        return (if s0 == s1 { scale64(s0, 128) } else { s0 }, true);
    }
    if s1.is_subnormal() {
        return (scale64(s0, 128), false);
    }
    let (inv, q) = (1.0 / s1, s2 / s1);
    if inv.is_subnormal() && q.is_subnormal() {
        // A huge denominator and a subnormal quotient: the guides' text scales the
        // denominator up here (to infinity); it is scaled down, which makes its reciprocal
        // normal and the quotient 2^128 times too large, as the VCC bit tells v_div_fmas.
        return (if s0 == s1 { scale64(s0, -128) } else { s0 }, true);
    }
    if inv.is_subnormal() {
        return (scale64(s0, -128), false);
    }
    if q.is_subnormal() {
        return (if s0 == s2 { scale64(s0, 128) } else { s0 }, true);
    }
    if exp64(s2) <= 53 {
        return (scale64(s0, 128), false);
    }
    (s0, false)
}

/// `a * b + c` in f64, rounded to odd (the exact value if representable, else the
/// neighbour with an odd last bit): rounding that to f32 afterwards — after an exact scaling
/// by a power of two — is the same as rounding the exact value once (53 >= 24 + 2 bits).
pub fn fma_odd(a: f32, b: f32, c: f32) -> f64 {
    let p = f64::from(a) * f64::from(b); // exact: 48 bits
    let c = f64::from(c);
    let s = p + c;
    if !s.is_finite() {
        return s;
    }
    // Two-sum: s + e == p + c exactly.
    let bp = s - p;
    let e = (p - (s - bp)) + (c - bp);
    if e == 0.0 || s.to_bits() & 1 == 1 {
        return s;
    }
    let toward = if (e > 0.0) == (s > 0.0) { s.to_bits() + 1 } else { s.to_bits() - 1 };
    f64::from_bits(toward)
}

/// v_div_fmas_f32: `a * b + c`, scaled by 2^64 (a quotient near the largest float, c's
/// exponent above 127) or 2^-64 (a subnormal quotient) when the lane's VCC bit is set; one
/// rounding in all cases.
pub fn div_fmas32(a: f32, b: f32, c: f32, vcc: bool) -> f32 {
    if !vcc {
        return a.mul_add(b, c);
    }
    let n = if exp32(c) > 127 { 64 } else { -64 };
    (fma_odd(a, b, c) * f64::from_bits(((1023 + n) as u64) << 52)) as f32
}

/// v_div_fmas_f64: as [`div_fmas32`] with 2^±128, rounded once. The fma rounds to f64 first;
/// scaled into the subnormals that is a second rounding, which differs from one rounding of
/// the exact value only when the fma's result lies exactly halfway between two subnormals:
/// then the exact value's side of it decides (the fma's residual `a * b + (c - r)`, exact
/// where `c - r` is, which holds for the quotient and correction the division macro passes).
pub fn div_fmas64(a: f64, b: f64, c: f64, vcc: bool) -> f64 {
    let r = a.mul_add(b, c);
    if !vcc {
        return r;
    }
    let n = if exp64(c) > 1023 { 128 } else { -128 };
    let scaled = scale64(r, n);
    if n > 0 || !r.is_finite() || !scaled.is_subnormal() {
        return scaled;
    }
    // |r| in units of half the subnormal spacing after scaling (2^(-1075 - n)): an odd
    // integer is a midpoint.
    let t = r.abs() * f64::from_bits(((1023 + 1075 + n) as u64) << 52);
    if t.fract() != 0.0 || (t as u64).is_multiple_of(2) {
        return scaled;
    }
    let c_minus_r_exact = c.signum() == r.signum() && c.abs() <= 2.0 * r.abs() && r.abs() <= 2.0 * c.abs();
    if !c_minus_r_exact {
        return scaled;
    }
    let residual = a.mul_add(b, c - r);
    if residual == 0.0 {
        return scaled;
    }
    // The subnormal below or above the midpoint, by the exact value's side of it.
    let k = if (residual > 0.0) == (r > 0.0) { (t as u64).div_ceil(2) } else { t as u64 / 2 };
    let m = f64::from_bits(k);
    if r < 0.0 {
        -m
    } else {
        m
    }
}

/// v_div_fixup_f32 (S0 the quotient, S1 the denominator, S2 the numerator): IEEE's special
/// cases (NaN operands, 0/0, inf/inf, x/0, inf/y, x/inf, 0/y), a quotient far below the
/// smallest subnormal, else S0 with the quotient's sign (a NaN S0, from an overflowing
/// Newton step, is infinity).
pub fn div_fixup32(s0: f32, s1: f32, s2: f32) -> f32 {
    let neg = (s1.to_bits() ^ s2.to_bits()) >> 31 != 0;
    let signed = |m: f32| if neg { -m } else { m };
    if s2.is_nan() {
        quiet32(s2)
    } else if s1.is_nan() {
        quiet32(s1)
    } else if (s1 == 0.0 && s2 == 0.0) || (s1.is_infinite() && s2.is_infinite()) {
        f32::from_bits(0xffc0_0000)
    } else if s1 == 0.0 || s2.is_infinite() {
        signed(f32::INFINITY)
    } else if s1.is_infinite() || s2 == 0.0 || exp32(s2) - exp32(s1) < -150 {
        // x/inf, 0/y, and quotients far below the smallest subnormal.
        signed(0.0)
    } else if s0.is_nan() {
        signed(f32::INFINITY)
    } else {
        signed(s0.abs())
    }
}

/// v_div_fixup_f64: as [`div_fixup32`] (underflow below an exponent difference of -1075).
pub fn div_fixup64(s0: f64, s1: f64, s2: f64) -> f64 {
    let neg = (s1.to_bits() ^ s2.to_bits()) >> 63 != 0;
    let signed = |m: f64| if neg { -m } else { m };
    if s2.is_nan() {
        quiet64(s2)
    } else if s1.is_nan() {
        quiet64(s1)
    } else if (s1 == 0.0 && s2 == 0.0) || (s1.is_infinite() && s2.is_infinite()) {
        f64::from_bits(0xfff8_0000_0000_0000)
    } else if s1 == 0.0 || s2.is_infinite() {
        signed(f64::INFINITY)
    } else if s1.is_infinite() || s2 == 0.0 || exp64(s2) - exp64(s1) < -1075 {
        // x/inf, 0/y, and quotients far below the smallest subnormal.
        signed(0.0)
    } else if s0.is_nan() {
        signed(f64::INFINITY)
    } else {
        signed(s0.abs())
    }
}

/// v_div_fixup_f16 on half bit patterns (low 16 bits): the same cases, underflow below an
/// exponent difference of -25.
pub fn div_fixup16(s0: u32, s1: u32, s2: u32) -> u32 {
    let (s0, s1, s2) = (s0 & 0xffff, s1 & 0xffff, s2 & 0xffff);
    let sign = (s1 ^ s2) & 0x8000;
    let (e1, e2) = ((s1 >> 10) & 0x1f, (s2 >> 10) & 0x1f);
    let (m1, m2) = (s1 & 0x3ff, s2 & 0x3ff);
    let (nan1, nan2) = (e1 == 31 && m1 != 0, e2 == 31 && m2 != 0);
    let (inf1, inf2) = (e1 == 31 && m1 == 0, e2 == 31 && m2 == 0);
    let (zero1, zero2) = (s1 & 0x7fff == 0, s2 & 0x7fff == 0);
    if nan2 {
        s2 | 0x200
    } else if nan1 {
        s1 | 0x200
    } else if (zero1 && zero2) || (inf1 && inf2) {
        0xfe00
    } else if zero1 || inf2 {
        sign | 0x7c00
    } else if inf1 || zero2 || (e2 as i32 - e1 as i32) < -25 {
        sign
    } else if (s0 >> 10) & 0x1f == 31 && s0 & 0x3ff != 0 {
        sign | 0x7c00
    } else {
        sign | (s0 & 0x7fff)
    }
}

/// The v_cmp_class bit of a float's bit pattern (`e` exponent bits, `m` mantissa bits):
/// 0 signalling NaN, 1 quiet NaN, 2 -inf, 3 -normal, 4 -subnormal, 5 -0, 6 +0, 7 +subnormal,
/// 8 +normal, 9 +inf.
pub fn class(bits: u64, e: u32, m: u32) -> u32 {
    let neg = bits >> (e + m) & 1 != 0;
    let (ex, man) = ((bits >> m) & ((1 << e) - 1), bits & ((1 << m) - 1));
    let pick = |n: u32, p: u32| if neg { n } else { p };
    if ex == (1 << e) - 1 {
        if man == 0 {
            pick(2, 9)
        } else {
            u32::from(man >> (m - 1) & 1 != 0)
        }
    } else if ex == 0 {
        if man == 0 {
            pick(5, 6)
        } else {
            pick(4, 7)
        }
    } else {
        pick(3, 8)
    }
}

/// frexp of a finite non-zero f64: the mantissa in [0.5, 1) with x's sign, and the exponent.
fn frexp(x: f64) -> (f64, i32) {
    let (x, bias) = if x.is_subnormal() { (x * f64::from_bits((1023 + 64) << 52), 64) } else { (x, 0) };
    let b = x.to_bits();
    let e = ((b >> 52) & 0x7ff) as i32 - 1022 - bias;
    (f64::from_bits((b & !(0x7ff << 52)) | (1022 << 52)), e)
}

/// v_frexp_mant: the mantissa in [0.5, 1) with the sign; zeros, infinities and NaNs are
/// returned unchanged.
pub fn frexp_mant64(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        x
    } else {
        frexp(x).0
    }
}

/// v_frexp_exp_i32: the exponent with the mantissa in [0.5, 1); 0 for zeros, infinities and
/// NaNs.
pub fn frexp_exp64(x: f64) -> i32 {
    if x == 0.0 || !x.is_finite() {
        0
    } else {
        frexp(x).1
    }
}

/// v_fract_f32: `x - floor(x)`, at most the float below 1.0 (OpenCL's fract: -tiny gives
/// 0x1.fffffep-1, not 1.0); NaN for infinities and NaNs.
pub fn fract32(x: f32) -> f32 {
    let r = x - x.floor();
    if r.is_nan() {
        return f32::NAN;
    }
    r.min(f32::from_bits(0x3f7f_ffff))
}

pub fn fract64(x: f64) -> f64 {
    let r = x - x.floor();
    if r.is_nan() {
        return f64::NAN;
    }
    r.min(f64::from_bits(0x3fef_ffff_ffff_ffff))
}

/// v_rsq_f32: 1/sqrt(x) through f64 (within half an ULP and a hair; the hardware: 1 ULP).
pub fn rsq32(x: f32) -> f32 {
    (1.0 / f64::from(x).sqrt()) as f32
}

/// v_exp_f32: 2^x through f64.
pub fn exp32_op(x: f32) -> f32 {
    f64::from(x).exp2() as f32
}

/// v_log_f32: log2(x) through f64 (-inf for zeros, NaN below 0).
pub fn log32_op(x: f32) -> f32 {
    f64::from(x).log2() as f32
}

/// v_sin_f32 / v_cos_f32: the argument in revolutions (sin(2πx)); reduced exactly to
/// [-0.5, 0.5] first (an f32 of magnitude 2^23 or more is a whole number of turns).
pub fn sin32(x: f32, cos: bool) -> f32 {
    if !x.is_finite() {
        return f32::NAN;
    }
    let r = f64::from(x - x.round());
    let t = r * std::f64::consts::TAU;
    (if cos { t.cos() } else { t.sin() }) as f32
}

/// An f32 with its subnormal values replaced by a zero of the same sign (the flush the MODE
/// register's denormal bits ask for).
pub fn flush32(x: u32) -> u32 {
    if x & 0x7f80_0000 == 0 {
        x & 0x8000_0000
    } else {
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_bits_of_each_kind() {
        let c = |x: f32| class(u64::from(x.to_bits()), 8, 23);
        assert_eq!(c(f32::from_bits(0x7f80_0001)), 0);
        assert_eq!(c(f32::NAN), 1);
        assert_eq!(c(f32::NEG_INFINITY), 2);
        assert_eq!(c(-1.5), 3);
        assert_eq!(c(-1e-40), 4);
        assert_eq!(c(-0.0), 5);
        assert_eq!(c(0.0), 6);
        assert_eq!(c(1e-40), 7);
        assert_eq!(c(3.0), 8);
        assert_eq!(c(f32::INFINITY), 9);
        assert_eq!(class(1e-310f64.to_bits(), 11, 52), 7);
    }

    #[test]
    fn fma_odd_then_f32_rounds_once() {
        // (1 + 2^-23)(2^7 - 2^-16) + (2^31 + 2^8) = 2^31 + 2^8 + 2^7 - 2^-39: just below the
        // tie between 2^31 + 2^8 and 2^31 + 2^9. f64 rounding to nearest lands on the tie
        // (and f32 would then round to even, up); rounding to odd keeps it below.
        let (a, b, c) = (f32::from_bits(0x3f80_0001), f32::from_bits(0x42ff_fffe), f32::from_bits(0x4f00_0001));
        assert_eq!(f64::from(a).mul_add(f64::from(b), f64::from(c)) as f32, f32::from_bits(0x4f00_0002));
        assert_eq!(fma_odd(a, b, c) as f32, c);
        assert_eq!(a.mul_add(b, c), c);
    }

    #[test]
    fn fmas64_rounds_a_subnormal_quotient_once() {
        // An fma result exactly halfway between two subnormals after the 2^-128 scaling,
        // with the exact value just above it: one rounding goes up, two would go to even.
        let mid = f64::from_bits(0x0000_0000_0000_0003) * 2f64.powi(127); // 1.5 units * 2^128
        let (a, b) = (2f64.powi(-1000), 2f64.powi(-70)); // a * b far below mid's ulp
        assert_eq!(a.mul_add(b, mid), mid);
        assert_eq!(div_fmas64(a, b, mid, true), f64::from_bits(2));
        assert_eq!(div_fmas64(-a, b, mid, true), f64::from_bits(1));
        assert_eq!(div_fmas64(0.0, b, mid, true), f64::from_bits(2), "a tie: to even");
    }

    #[test]
    fn frexp_of_subnormals_and_specials() {
        assert_eq!(frexp_mant64(f64::from(1e-40f32)), f64::from(1e-40f32) * 2f64.powi(132));
        assert_eq!(frexp_exp64(f64::from(1e-40f32)), -132);
        assert_eq!(frexp_exp64(f64::INFINITY), 0);
        assert!(frexp_mant64(f64::NAN).is_nan());
        assert_eq!(frexp_mant64(-0.0).to_bits(), (-0.0f64).to_bits());
    }
}
