//! Division, square roots, exp/log/sin/cos, fract, frexp/ldexp and classification on the model
//! GPU (issue 14, model/ISA.md): tests/isa/math.cl compiled by clang-19 for gfx90a (mi210),
//! gfx942 (mi300x) and gfx1100 (rx7900xtx), run on special values (zeros, infinities, NaNs, subnormals, quotients
//! that need v_div_scale's scaling) and pseudo-random ones, checked against the CPU with
//! OpenCL's tolerances (exact where OpenCL asks for correct rounding); the decoder checked
//! against llvm-objdump on every instruction of every build. The harness is tests/support/isa.rs. Needs the Debian packages
//! clang-19, lld-19 and llvm-19 (.ci/packages).

mod support;

use hsakmt_core::packet::aql::KernelDispatch;
use hsakmt_model::engine::RunEnd;
use support::isa::{args, code_object_of, decoded, objdump, setup_of, Fx, Gpu, DATA, GFX1100, GFX90A, GFX942};

/// math.cl compiled and linked for `gpu` (f32 denormals flushed if `ftz`).
fn code_object(gpu: &Gpu, ftz: bool) -> (Vec<u8>, std::path::PathBuf) {
    code_object_of(gpu, "math.cl", &math_flags(ftz))
}

/// clang's flags for math.cl: correctly rounded f32 division and sqrt, denormals flushed if `ftz`.
fn math_flags(ftz: bool) -> Vec<&'static str> {
    let mut v = vec!["-cl-fp32-correctly-rounded-divide-sqrt"];
    if ftz {
        v.push("-cl-denorms-are-zero");
    }
    v
}

#[test]
fn decoder_agrees_with_llvm_on_the_math_kernels() {
    let mut bad = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for gpu in [&GFX90A, &GFX942, &GFX1100] {
        let mcpu = gpu.mcpu;
        for ftz in [false, true] {
            let listing = objdump(gpu, &code_object(gpu, ftz).1);
            assert!(listing.len() > 100);
            for (text, words) in &listing {
                seen.insert(text.split_whitespace().next().unwrap_or("").to_string());
                let ours = decoded(gpu, words);
                match ours {
                    None => bad.push(format!("{mcpu}: not decoded: {text} {words:08x?}")),
                    Some((len, t)) => {
                        let t = t.split_whitespace().collect::<Vec<_>>().join(" ");
                        if usize::from(len) != 4 * words.len() || t != *text {
                            bad.push(format!("{mcpu} {words:08x?}: ours {t:?} ({len} bytes), llvm {text:?}"));
                        }
                    }
                }
            }
        }
    }
    assert!(bad.is_empty(), "{} differ:\n{}", bad.len(), bad.join("\n"));
    // The instructions this file exists for are really there (clang still emits them).
    for want in [
        "v_div_scale_f32",
        "v_div_fmas_f32",
        "v_div_fixup_f32",
        "v_div_scale_f64",
        "v_div_fmas_f64",
        "v_div_fixup_f64",
        "v_rcp_f32_e32",
        "v_rcp_f64_e32",
        "v_rsq_f64_e32",
        "v_sqrt_f32_e32",
        "v_exp_f32_e32",
        "v_log_f32_e32",
        "v_sin_f32_e32",
        "v_cos_f32_e32",
        "v_frexp_mant_f32_e32",
        "v_frexp_exp_i32_f64_e32",
        "v_ldexp_f32",
        "v_cmp_class_f32_e64",
        "v_cmp_class_f64_e32",
        "v_fract_f32_e32",
        "v_fract_f64_e32",
        "s_setreg_imm32_b32",
        "s_denorm_mode",
        "v_fma_mixlo_f16",
        "v_div_fixup_f16",
        "v_rcp_iflag_f32_e32",
        "v_madmk_f32",
    ] {
        assert!(seen.contains(want), "clang-19 no longer emits {want} for math.cl");
    }
}

/// The fixture with math.cl compiled for `gpu`.
fn setup(gpu: &Gpu, ftz: bool) -> Fx {
    setup_of(gpu, "math.cl", &math_flags(ftz))
}

/// The math kernels' calls: a dispatch of `kernel` over `n` work-items (workgroups of 64) run
/// to its end without an error, memory in and out.
trait Math {
    fn run_kernel(&self, kernel: &str, n: u32, args: &[u64]);
    fn put(&self, va: u64, bytes: Vec<u8>);
    fn read(&self, va: u64, n: usize) -> Vec<u8>;
}

impl Math for Fx {
    fn run_kernel(&self, kernel: &str, n: u32, a: &[u64]) {
        let (end, p) = self.dispatch(KernelDispatch::new(self.kd(kernel), n, 64), &args(a));
        assert_eq!((end, &p.error), (RunEnd::Idle, &None), "{kernel}");
    }
    fn put(&self, va: u64, bytes: Vec<u8>) {
        self.m.gpu_write(self.g, va, &bytes).unwrap();
    }
    fn read(&self, va: u64, n: usize) -> Vec<u8> {
        let mut b = vec![0u8; n];
        self.m.gpu_read(self.g, va, &mut b).unwrap();
        b
    }
}

/// A deterministic pseudo-random sequence (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// Distance in representable values (ULPs) between two f32s; 0 for two NaNs, and +0 / -0.
fn ulps32(a: f32, b: f32) -> u64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() { 0 } else { u64::MAX };
    }
    let ord = |x: f32| {
        let b = i64::from(x.to_bits() & 0x7fff_ffff);
        if x.is_sign_negative() {
            -b
        } else {
            b
        }
    };
    ord(a).abs_diff(ord(b))
}

fn ulps64(a: f64, b: f64) -> u64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() { 0 } else { u64::MAX };
    }
    let ord = |x: f64| {
        let b = (x.to_bits() & 0x7fff_ffff_ffff_ffff) as i128;
        if x.is_sign_negative() {
            -b
        } else {
            b
        }
    };
    ord(a).abs_diff(ord(b)) as u64
}

/// Exactly equal: the same bits, or both NaN.
fn same32(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn same64(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// The class bit v_cmp_class tests for (AMD's order: sNaN, qNaN, -inf, -normal, -subnormal,
/// -0, +0, +subnormal, +normal, +inf), from the float's own classification.
fn class_bit64(x: f64, quiet_bit: u64) -> u32 {
    use std::num::FpCategory::*;
    let neg = x.is_sign_negative();
    match x.classify() {
        Nan => u32::from(x.to_bits() & quiet_bit != 0),
        Infinite => [9, 2][usize::from(neg)],
        Normal => [8, 3][usize::from(neg)],
        Subnormal => [7, 4][usize::from(neg)],
        Zero => [6, 5][usize::from(neg)],
    }
}

fn class_bit32(x: f32) -> u32 {
    use std::num::FpCategory::*;
    let neg = x.is_sign_negative();
    match x.classify() {
        Nan => u32::from(x.to_bits() & 0x40_0000 != 0),
        Infinite => [9, 2][usize::from(neg)],
        Normal => [8, 3][usize::from(neg)],
        Subnormal => [7, 4][usize::from(neg)],
        Zero => [6, 5][usize::from(neg)],
    }
}

/// frexp by repeated halving and doubling (exact steps on an f64): mantissa in [0.5, 1).
fn frexp_ref(x: f64) -> (f64, i32) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    let (mut m, mut e) = (x.abs(), 0);
    while m >= 1.0 {
        m /= 2.0;
        e += 1;
    }
    while m < 0.5 {
        m *= 2.0;
        e -= 1;
    }
    (if x < 0.0 { -m } else { m }, e)
}

/// OpenCL's fract: fmin(x - floor(x), the float below 1.0); NaN for infinities and NaNs.
fn fract_ref32(x: f32) -> f32 {
    if !x.is_finite() {
        return f32::NAN;
    }
    (x - x.floor()).min(1.0 - f32::EPSILON / 2.0)
}

fn fract_ref64(x: f64) -> f64 {
    if !x.is_finite() {
        return f64::NAN;
    }
    (x - x.floor()).min(1.0 - f64::EPSILON / 2.0)
}

/// f32 operands: the special values, quotients near the range's ends (div_scale's cases),
/// then pseudo-random bit patterns and moderate values. (x, y, n).
fn f32_inputs() -> Vec<(f32, f32, i32)> {
    let den = f32::from_bits(1);
    let specials = [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        den,
        -den,
        1e-40,
        -3e-42,
        f32::MIN_POSITIVE,
        f32::MAX,
        -f32::MAX,
        0.5,
        3.0,
        -7.25,
        1e-30,
        1e30,
        123456.79,
        -0.1,
        88.7,
        -103.9,
        -87.3,
        1e-7,
    ];
    let mut v = Vec::new();
    for (k, &x) in specials.iter().enumerate() {
        for (j, &y) in specials.iter().enumerate() {
            v.push((x, y, (k as i32 * 37 + j as i32 * 11) % 400 - 200));
        }
    }
    // Quotients that need v_div_scale: near the largest float, subnormal, a subnormal
    // denominator, a tiny numerator.
    for (x, y) in [
        (1e30f32, 1e-8f32),
        (3e38, 2e9),
        (1e38, 1e-5),
        (1e-30, 1e10),
        (1.0, 3e38),
        (-1e-40, 1e-30),
        (1e-3, 1e-40),
        (1.0, 1e-40),
        (7e-45, 3.0),
        (f32::MAX, f32::MIN_POSITIVE),
        (f32::MIN_POSITIVE, f32::MAX),
        (3.0, 7.0),
        (1e-38, 0.9999999),
    ] {
        v.push((x, y, 1));
        v.push((y, x, -1));
    }
    let mut r = Rng(0x1234_5678_9abc_def1);
    for _ in 0..300 {
        let (x, y) = (f32::from_bits(r.next() as u32), f32::from_bits((r.next() >> 32) as u32));
        v.push((x, y, (r.next() % 601) as i32 - 300));
    }
    for _ in 0..300 {
        let u = |r: &mut Rng| (r.next() >> 11) as f64 / (1u64 << 53) as f64;
        let x = ((u(&mut r) - 0.5) * 200.0) as f32;
        let y = ((u(&mut r) - 0.5) * 2.0f64.powi((r.next() % 40) as i32 - 20)) as f32;
        v.push((x, y, (r.next() % 61) as i32 - 30));
    }
    v
}

fn f32_math(gpu: &Gpu) {
    let mcpu = gpu.mcpu;
    let f = setup(gpu, false);
    let inp = f32_inputs();
    let n = inp.len();
    let (a, b, nv, out) = (DATA, DATA + 0x10000, DATA + 0x20000, DATA + 0x40000);
    f.put(a, inp.iter().flat_map(|v| v.0.to_le_bytes()).collect());
    f.put(b, inp.iter().flat_map(|v| v.1.to_le_bytes()).collect());
    f.put(nv, inp.iter().flat_map(|v| v.2.to_le_bytes()).collect());
    f.run_kernel("fmath", n as u32, &[a, b, nv, out, n as u64]);
    let o: Vec<u32> = f.read(out, 4 * 24 * n).chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
    let mut bad = Vec::new();
    for (i, &(x, y, k)) in inp.iter().enumerate() {
        let r = &o[24 * i..24 * i + 24];
        let g = |j: usize| f32::from_bits(r[j]);
        let mut check = |what: &str, ok: bool, got: String, want: String| {
            if !ok {
                bad.push(format!("{what}: x {x:e} ({:#x}) y {y:e} ({:#x}) n {k}: got {got}, want {want}", x.to_bits(), y.to_bits()));
            }
        };
        let (xd, yd) = (f64::from(x), f64::from(y));
        // Correctly rounded (OpenCL with -cl-fp32-correctly-rounded-divide-sqrt).
        let q = x / y;
        check("x / y", same32(g(0), q), format!("{:e}", g(0)), format!("{q:e}"));
        let s = x.sqrt();
        check("sqrt", same32(g(1), s), format!("{:e}", g(1)), format!("{s:e}"));
        // OpenCL: exp, log, exp2, log2 within 3 ULP; the raw v_exp/v_log/v_rcp/v_rsq/v_sqrt
        // within the 1 ULP AMD documents.
        let within = |got: f32, want: f64, ulps: u64| ulps32(got, want as f32) <= ulps;
        for (what, j, want, ulps) in [
            ("exp", 2, xd.exp(), 3),
            ("log", 3, xd.ln(), 3),
            ("v_exp_f32", 4, xd.exp2(), 1),
            ("v_log_f32", 5, xd.log2(), 1),
            ("v_rcp_f32", 8, 1.0 / yd, 1),
            ("v_rsq_f32", 9, 1.0 / xd.sqrt(), 1),
            ("exp2", 21, xd.exp2(), 3),
            ("log2", 22, xd.log2(), 3),
            ("v_sqrt_f32", 23, xd.sqrt(), 1),
        ] {
            check(what, within(g(j), want, ulps), format!("{:e}", g(j)), format!("{want:e}"));
        }
        // llvm.sin/cos are native precision: x / 2π rounded to f32 feeds v_sin/v_cos, an error
        // of up to |x| 2^-24 turns.
        let tol = 1e-6 + 4e-7 * x.abs() as f64;
        for (what, j, want) in [("sin", 6, xd.sin()), ("cos", 7, xd.cos())] {
            let ok = if x.is_finite() { (f64::from(g(j)) - want).abs() <= tol } else { g(j).is_nan() };
            check(what, ok, format!("{:e}", g(j)), format!("{want:e}"));
        }
        // v_sin_f32 takes turns: sin(2πx).
        let want = if x.is_finite() { (std::f64::consts::TAU * (xd - xd.round())).sin() } else { f64::NAN };
        let ok = if x.is_finite() { (f64::from(g(20)) - want).abs() <= 2e-7 } else { g(20).is_nan() };
        check("v_sin_f32", ok, format!("{:e}", g(20)), format!("{want:e}"));
        // Exact.
        let fr = fract_ref32(x);
        check("fract", same32(g(10), fr), format!("{:e}", g(10)), format!("{fr:e}"));
        let (m, e) = frexp_ref(xd);
        check("frexp mant", same32(g(11), m as f32), format!("{:e}", g(11)), format!("{m:e}"));
        check("frexp exp", r[12] as i32 == e, format!("{}", r[12] as i32), format!("{e}"));
        let l = (xd * 2f64.powi(k)) as f32;
        check("ldexp", same32(g(13), l), format!("{:e}", g(13)), format!("{l:e}"));
        let bits = u32::from(x.is_nan()) | u32::from(x.is_infinite()) << 1 | u32::from(x.is_finite()) << 2 | u32::from(x.is_normal()) << 3;
        check("isnan/isinf/isfinite/isnormal", r[14] == bits, format!("{:#x}", r[14]), format!("{bits:#x}"));
        let cls = u32::from((k as u32 & 0x3ff) >> class_bit32(x) & 1 != 0);
        check("class", r[15] == cls, format!("{}", r[15]), format!("{cls}"));
        for (what, j, want) in
            [("trunc", 16, x.trunc()), ("ceil", 17, x.ceil()), ("floor", 18, x.floor()), ("rint", 19, x.round_ties_even())]
        {
            check(what, same32(g(j), want), format!("{:e}", g(j)), format!("{want:e}"));
        }
    }
    assert!(bad.is_empty(), "{mcpu}: {} of {} f32 results differ:\n{}", bad.len(), 24 * n, bad.join("\n"));
}

fn f64_inputs() -> Vec<(f64, f64, i32)> {
    let den = f64::from_bits(1);
    let specials = [
        0.0f64,
        -0.0,
        1.0,
        -1.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        den,
        -den,
        1e-310,
        -3e-320,
        f64::MIN_POSITIVE,
        f64::MAX,
        -f64::MAX,
        0.5,
        3.0,
        -7.25,
        1e-300,
        1e300,
        1234567.891,
        -0.1,
    ];
    let mut v = Vec::new();
    for (k, &x) in specials.iter().enumerate() {
        for (j, &y) in specials.iter().enumerate() {
            v.push((x, y, (k as i32 * 37 + j as i32 * 11) % 2000 - 1000));
        }
    }
    for (x, y) in [
        (1e300f64, 1e-10f64),
        (1e300, 1e-8),
        (1e-300, 1e10),
        (1.0, 1e308),
        (3.0, 1.7e308),
        (-1e-310, 1e-300),
        (1e-3, 1e-310),
        (1.0, 1e-310),
        (1e-323, 3.0),
        (f64::MAX, f64::MIN_POSITIVE),
        (3.0, 7.0),
        // A subnormal quotient whose fma lands halfway between two subnormals before
        // v_div_fmas scales it down (rounding twice would be 1 ULP off).
        (f64::from_bits(0x9e75_69c6_4497_32c3), f64::from_bits(0xde84_37cd_08c1_3331)),
    ] {
        v.push((x, y, 1));
        v.push((y, x, -1));
    }
    let mut r = Rng(0x0fed_cba9_8765_4321);
    for _ in 0..300 {
        v.push((f64::from_bits(r.next()), f64::from_bits(r.next()), (r.next() % 2201) as i32 - 1100));
    }
    for _ in 0..300 {
        let u = |r: &mut Rng| (r.next() >> 11) as f64 / (1u64 << 53) as f64;
        let x = (u(&mut r) - 0.5) * 2e6;
        let y = (u(&mut r) - 0.5) * 2.0f64.powi((r.next() % 80) as i32 - 40);
        v.push((x, y, (r.next() % 61) as i32 - 30));
    }
    v
}

/// `x * 2^n` rounded once: in steps of 2^±1000 that stay exact while the value is normal
/// (the inputs are normal or n >= 0), the last step rounding.
fn ldexp_ref(x: f64, n: i32) -> f64 {
    let (mut x, mut n) = (x, n);
    while n.abs() > 1000 {
        let k = n.signum() * 1000;
        x *= 2f64.powi(k);
        n -= k;
    }
    x * 2f64.powi(n)
}

fn f64_math(gpu: &Gpu) {
    let mcpu = gpu.mcpu;
    let f = setup(gpu, false);
    let inp = f64_inputs();
    let n = inp.len();
    let (a, b, nv, out) = (DATA, DATA + 0x10000, DATA + 0x20000, DATA + 0x40000);
    f.put(a, inp.iter().flat_map(|v| v.0.to_le_bytes()).collect());
    f.put(b, inp.iter().flat_map(|v| v.1.to_le_bytes()).collect());
    f.put(nv, inp.iter().flat_map(|v| v.2.to_le_bytes()).collect());
    f.run_kernel("dmath", n as u32, &[a, b, nv, out, n as u64]);
    let o: Vec<u64> = f.read(out, 8 * 12 * n).chunks(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
    let mut bad = Vec::new();
    for (i, &(x, y, k)) in inp.iter().enumerate() {
        let r = &o[12 * i..12 * i + 12];
        let g = |j: usize| f64::from_bits(r[j]);
        let mut check = |what: &str, ok: bool, got: String, want: String| {
            if !ok {
                bad.push(format!("{what}: x {x:e} ({:#x}) y {y:e} ({:#x}) n {k}: got {got}, want {want}", x.to_bits(), y.to_bits()));
            }
        };
        // OpenCL: double division and sqrt correctly rounded.
        let q = x / y;
        check("x / y", same64(g(0), q), format!("{:e}", g(0)), format!("{q:e}"));
        let s = x.sqrt();
        check("sqrt", same64(g(1), s), format!("{:e}", g(1)), format!("{s:e}"));
        // The raw v_rcp_f64 / v_rsq_f64: within 1 ULP.
        let rcp = 1.0 / y;
        check("v_rcp_f64", ulps64(g(2), rcp) <= 1, format!("{:e}", g(2)), format!("{rcp:e}"));
        let rsq = 1.0 / x.sqrt();
        check("v_rsq_f64", ulps64(g(3), rsq) <= 1, format!("{:e}", g(3)), format!("{rsq:e}"));
        let fr = fract_ref64(x);
        check("fract", same64(g(4), fr), format!("{:e}", g(4)), format!("{fr:e}"));
        let (m, e) = frexp_ref(x);
        check("frexp mant", same64(g(5), m), format!("{:e}", g(5)), format!("{m:e}"));
        check("frexp exp", r[6] as i64 == i64::from(e), format!("{}", r[6] as i64), format!("{e}"));
        // Subnormal inputs scaled further down may round twice on the model (ISA.md): the
        // inputs that would are left out.
        if x.is_normal() || k >= 0 || !x.is_finite() || x == 0.0 {
            let l = ldexp_ref(x, k);
            check("ldexp", same64(g(7), l), format!("{:e}", g(7)), format!("{l:e}"));
        }
        let bits = u64::from(x.is_nan()) | u64::from(x.is_infinite()) << 1 | u64::from(x.is_finite()) << 2 | u64::from(x.is_normal()) << 3;
        check("isnan/isinf/isfinite/isnormal", r[8] == bits, format!("{:#x}", r[8]), format!("{bits:#x}"));
        let cls = u64::from((k as u32 & 0x3ff) >> class_bit64(x, 1 << 51) & 1 != 0);
        check("class", r[9] == cls, format!("{}", r[9]), format!("{cls}"));
        check("trunc", same64(g(10), x.trunc()), format!("{:e}", g(10)), format!("{:e}", x.trunc()));
        check("rint", same64(g(11), x.round_ties_even()), format!("{:e}", g(11)), format!("{:e}", x.round_ties_even()));
    }
    assert!(bad.is_empty(), "{mcpu}: {} of {} f64 results differ:\n{}", bad.len(), 12 * n, bad.join("\n"));
}

/// The `ftz` kernel (x / y, x * y, x + y) built with f32 denormals kept and built with
/// -cl-denorms-are-zero: flushing changes the results as the hardware's does (subnormal
/// inputs read as zero, subnormal results written as zero, signs kept), and the division,
/// which runs its Newton steps with denormals switched on, stays correctly rounded for
/// normal quotients.
fn denormal_modes(gpu: &Gpu) {
    let mcpu = gpu.mcpu;
    let tiny = f32::MIN_POSITIVE;
    let inp: Vec<(f32, f32)> = vec![
        (1.0, 3.0),
        (tiny, 4.0),
        (-tiny, 3.0),
        (tiny * 3.5, 0.25),
        (1e-20, 1e-20),
        (-1e-20, 3e-19),
        (1e-40, 0.0),
        (-1e-40, 1.0),
        (1e-40, 2e-40),
        (7.0, 1e-3),
        (1e-30, 1e10),
        (1e30, 1e-8),
        (-2.5, 1.5e-38),
    ];
    let n = inp.len();
    let (a, b, out) = (DATA, DATA + 0x1000, DATA + 0x2000);
    let flush = |v: f32| if v.is_subnormal() { f32::from_bits(v.to_bits() & 0x8000_0000) } else { v };
    for ftz in [false, true] {
        let f = setup(gpu, ftz);
        f.put(a, inp.iter().flat_map(|v| v.0.to_le_bytes()).collect());
        f.put(b, inp.iter().flat_map(|v| v.1.to_le_bytes()).collect());
        f.run_kernel("ftz", n as u32, &[a, b, out, n as u64]);
        let o: Vec<f32> = f.read(out, 12 * n).chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
        for (i, &(x, y)) in inp.iter().enumerate() {
            let (mul, add) = if ftz { (flush(flush(x) * flush(y)), flush(flush(x) + flush(y))) } else { (x * y, x + y) };
            assert!(same32(o[3 * i + 1], mul), "{mcpu} ftz {ftz}: {x:e} * {y:e} = {:e}, want {mul:e}", o[3 * i + 1]);
            assert!(same32(o[3 * i + 2], add), "{mcpu} ftz {ftz}: {x:e} + {y:e} = {:e}, want {add:e}", o[3 * i + 2]);
            // Division: exact without flushing; with it, normal operands give the correctly
            // rounded quotient, flushed if subnormal (subnormal operands: either way).
            if !ftz || (x.is_normal() && y.is_normal()) {
                let q = if ftz { flush(x / y) } else { x / y };
                assert!(same32(o[3 * i], q), "{mcpu} ftz {ftz}: {x:e} / {y:e} = {:e}, want {q:e}", o[3 * i]);
            }
        }
        // The products and sums with subnormal results really differ between the builds.
        if ftz {
            assert_eq!(o[3 * 4 + 1], 0.0, "1e-20 * 1e-20 flushed");
        }
    }
}

/// The half nearest to `x` (ties to even; NaN as the default NaN), by scaling to the half's
/// quantum at x's binade: rounding an f64 quotient of two halves this way is the correctly
/// rounded half quotient (53 >= 2 * 11 + 2 bits).
fn to_half(x: f64) -> u16 {
    if x.is_nan() {
        return 0x7e00;
    }
    let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
    let a = x.abs();
    if a >= 65520.0 {
        return sign | 0x7c00;
    }
    let e = if a >= 2f64.powi(-14) { ((a.to_bits() >> 52) as i32) - 1023 } else { -14 };
    let n = (a / 2f64.powi(e - 10)).round_ties_even() as u16;
    if a < 2f64.powi(-14) {
        return sign | n; // subnormal (n == 1024: the smallest normal, the same bits)
    }
    let (e, n) = if n == 2048 { (e + 1, 1024) } else { (e, n) };
    if e + 15 >= 31 {
        return sign | 0x7c00;
    }
    sign | ((e + 15) as u16) << 10 | (n - 1024)
}

fn half_to_f64(h: u16) -> f64 {
    let (sign, e, m) = (if h & 0x8000 != 0 { -1.0 } else { 1.0 }, (h >> 10) & 0x1f, f64::from(h & 0x3ff));
    sign * match e {
        0 => m * 2f64.powi(-24),
        31 if m == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        _ => (1024.0 + m) * 2f64.powi(i32::from(e) - 25),
    }
}

/// f16 division (v_fma_mixlo_f16 and v_div_fixup_f16): correctly rounded, as the CPU's f64
/// quotient rounded to half, on special values and pseudo-random halves.
fn f16_division(gpu: &Gpu) {
    let mcpu = gpu.mcpu;
    let f = setup(gpu, false);
    let specials: [u16; 14] = [0, 0x8000, 0x3c00, 0xbc00, 0x7c00, 0xfc00, 0x7e00, 0x0001, 0x83ff, 0x0400, 0x7bff, 0x4200, 0x3555, 0xc880];
    let mut inp = Vec::new();
    for &x in &specials {
        for &y in &specials {
            inp.push((x, y));
        }
    }
    let mut r = Rng(0x5eed_f00d_1234_5678);
    for _ in 0..2000 {
        let v = r.next();
        inp.push((v as u16, (v >> 16) as u16));
    }
    let n = inp.len();
    let (a, b, out) = (DATA, DATA + 0x10000, DATA + 0x20000);
    f.put(a, inp.iter().flat_map(|v| v.0.to_le_bytes()).collect());
    f.put(b, inp.iter().flat_map(|v| v.1.to_le_bytes()).collect());
    f.run_kernel("hdiv", n as u32, &[a, b, out, n as u64]);
    let o: Vec<u16> = f.read(out, 2 * n).chunks(2).map(|c| u16::from_le_bytes(c.try_into().unwrap())).collect();
    let mut bad = Vec::new();
    for (i, &(x, y)) in inp.iter().enumerate() {
        let want = to_half(half_to_f64(x) / half_to_f64(y));
        let nan = |h: u16| h & 0x7c00 == 0x7c00 && h & 0x3ff != 0;
        if o[i] != want && !(nan(o[i]) && nan(want)) {
            bad.push(format!("{x:#06x} / {y:#06x}: got {:#06x}, want {want:#06x}", o[i]));
        }
    }
    assert!(bad.is_empty(), "{mcpu}: {} of {n} f16 quotients differ:\n{}", bad.len(), bad.join("\n"));
}

#[test]
fn f16_division_on_gfx90a_matches_the_cpu() {
    f16_division(&GFX90A);
}

#[test]
fn f16_division_on_gfx1100_matches_the_cpu() {
    f16_division(&GFX1100);
}

/// Integer division and remainder, 32 and 64 bit, signed and unsigned (through the f32
/// reciprocal: v_cvt_f32_u32, v_rcp_iflag_f32, v_madmk_f32/v_fmamk_f32, v_cvt_u32_f32, then an
/// exact correction): every quotient and remainder exact. Divisors are never 0, and
/// MIN / -1 is left out (both undefined in OpenCL C).
fn integer_division(gpu: &Gpu) {
    let mcpu = gpu.mcpu;
    let f = setup(gpu, false);
    let mut r = Rng(0xd1d1_5eed_0000_0001);
    let edges32 = [1u32, 2, 3, 7, 0xffff_ffff, 0x8000_0000, 0x7fff_ffff, 0xffff, 0x1_0001, 1000];
    let edges64 = [1u64, 3, 0xffff_ffff, 0x1_0000_0000, u64::MAX, 1 << 63, (1 << 63) - 1, 0xffff_ffff_ffff, 10];
    let mut inp = Vec::new();
    for k in 0..1200usize {
        let pick32 =
            |v: u64, sel: u64| if sel.is_multiple_of(4) { edges32[(v % edges32.len() as u64) as usize] } else { (v >> (sel % 24)) as u32 };
        let pick64 = |v: u64, sel: u64| if sel.is_multiple_of(4) { edges64[(v % edges64.len() as u64) as usize] } else { v >> (sel % 60) };
        let (v1, v2, v3, v4, sel) = (r.next(), r.next(), r.next(), r.next(), r.next());
        let (x, mut y) = (pick32(v1, sel), pick32(v2, sel >> 8).max(1));
        if x as i32 == i32::MIN && y as i32 == -1 {
            y = 1;
        }
        let (xx, mut yy) = (pick64(v3, sel >> 16), pick64(v4, sel >> 24).max(1));
        if xx as i64 == i64::MIN && yy as i64 == -1 {
            yy = 3;
        }
        inp.push((if k == 0 { 0 } else { x }, y, xx, yy));
    }
    let n = inp.len();
    let (a, b, la, lb, o, lo) = (DATA, DATA + 0x10000, DATA + 0x20000, DATA + 0x30000, DATA + 0x40000, DATA + 0x60000);
    f.put(a, inp.iter().flat_map(|v| v.0.to_le_bytes()).collect());
    f.put(b, inp.iter().flat_map(|v| v.1.to_le_bytes()).collect());
    f.put(la, inp.iter().flat_map(|v| v.2.to_le_bytes()).collect());
    f.put(lb, inp.iter().flat_map(|v| v.3.to_le_bytes()).collect());
    f.run_kernel("idiv", n as u32, &[a, b, la, lb, o, lo, n as u64]);
    let ow: Vec<u32> = f.read(o, 16 * n).chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
    let lw: Vec<u64> = f.read(lo, 32 * n).chunks(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
    for (i, &(x, y, xx, yy)) in inp.iter().enumerate() {
        let want = [x / y, x % y, ((x as i32) / (y as i32)) as u32, ((x as i32) % (y as i32)) as u32];
        assert_eq!(&ow[4 * i..4 * i + 4], &want, "{mcpu}: {x:#x} / {y:#x}");
        let want = [xx / yy, xx % yy, ((xx as i64) / (yy as i64)) as u64, ((xx as i64) % (yy as i64)) as u64];
        assert_eq!(&lw[4 * i..4 * i + 4], &want, "{mcpu}: {xx:#x} / {yy:#x}");
    }
}

#[test]
fn integer_division_on_gfx90a_matches_the_cpu() {
    integer_division(&GFX90A);
}

#[test]
fn integer_division_on_gfx1100_matches_the_cpu() {
    integer_division(&GFX1100);
}

#[test]
fn f32_math_on_gfx90a_matches_the_cpu() {
    f32_math(&GFX90A);
}

#[test]
fn f64_math_on_gfx90a_matches_the_cpu() {
    f64_math(&GFX90A);
}

#[test]
fn f32_denormal_modes_on_gfx90a_flush_as_the_hardware_does() {
    denormal_modes(&GFX90A);
}

#[test]
fn f32_math_on_gfx1100_matches_the_cpu() {
    f32_math(&GFX1100);
}

#[test]
fn f64_math_on_gfx1100_matches_the_cpu() {
    f64_math(&GFX1100);
}

#[test]
fn f32_denormal_modes_on_gfx1100_flush_as_the_hardware_does() {
    denormal_modes(&GFX1100);
}

#[test]
fn f16_division_on_gfx942_matches_the_cpu() {
    f16_division(&GFX942);
}

#[test]
fn f32_math_on_gfx942_matches_the_cpu() {
    f32_math(&GFX942);
}

#[test]
fn f64_math_on_gfx942_matches_the_cpu() {
    f64_math(&GFX942);
}

#[test]
fn f32_denormal_modes_on_gfx942_flush_as_the_hardware_does() {
    denormal_modes(&GFX942);
}

#[test]
fn integer_division_on_gfx942_matches_the_cpu() {
    integer_division(&GFX942);
}
