// Kernels for model/tests/isa_math.rs: the machine code compilers emit for division, square
// roots, exp/log/sin/cos, fract, frexp/ldexp and classification, f32 and f64 (issue 14).
// Compiled with clang-19 -nogpulib -cl-fp32-correctly-rounded-divide-sqrt (so `/` and
// __builtin_sqrt* are IEEE, correctly rounded), once as they are (f32 denormals kept) and
// once with -cl-denorms-are-zero (the `ftz` kernel). No device library: the transcendentals
// are the backend's own expansions of the llvm.* intrinsics (exp, log, exp2, log2 to full
// precision; sin, cos to native precision) and the raw instructions (__builtin_amdgcn_*).
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
static inline uint gid(void) {
  __constant ushort *dp = (__constant ushort *)__builtin_amdgcn_dispatch_ptr();
  return __builtin_amdgcn_workgroup_id_x() * dp[2] + __builtin_amdgcn_workitem_id_x();
}
#define F32_OUTS 24
__kernel void fmath(__global const float *a, __global const float *b, __global const int *n, __global float *o, uint count) {
  uint i = gid();
  if (i >= count) return;
  float x = a[i], y = b[i];
  __global float *r = o + i * F32_OUTS;
  __global int *ri = (__global int *)r;
  r[0] = x / y;
  r[1] = __builtin_sqrtf(x);
  r[2] = __builtin_expf(x);
  r[3] = __builtin_logf(x);
  r[4] = __builtin_amdgcn_exp2f(x);
  r[5] = __builtin_amdgcn_logf(x);
  r[6] = __builtin_sinf(x);
  r[7] = __builtin_cosf(x);
  r[8] = __builtin_amdgcn_rcpf(y);
  r[9] = __builtin_amdgcn_rsqf(x);
  r[10] = __builtin_amdgcn_fractf(x);
  int e;
  r[11] = __builtin_frexpf(x, &e);
  ri[12] = e;
  r[13] = __builtin_ldexpf(x, n[i]);
  ri[14] = __builtin_isnan(x) | __builtin_isinf(x) << 1 | __builtin_isfinite(x) << 2 | __builtin_isnormal(x) << 3;
  ri[15] = __builtin_amdgcn_classf(x, n[i] & 0x3ff);
  r[16] = __builtin_truncf(x);
  r[17] = __builtin_ceilf(x);
  r[18] = __builtin_floorf(x);
  r[19] = __builtin_rintf(x);
  r[20] = __builtin_amdgcn_sinf(x);
  r[21] = __builtin_exp2f(x);
  r[22] = __builtin_log2f(x);
  r[23] = __builtin_amdgcn_sqrtf(x);
}
#define F64_OUTS 12
__kernel void dmath(__global const double *a, __global const double *b, __global const int *n, __global double *o, uint count) {
  uint i = gid();
  if (i >= count) return;
  double x = a[i], y = b[i];
  __global double *r = o + i * F64_OUTS;
  __global long *ri = (__global long *)r;
  r[0] = x / y;
  r[1] = __builtin_sqrt(x);
  r[2] = __builtin_amdgcn_rcp(y);
  r[3] = __builtin_amdgcn_rsq(x);
  r[4] = __builtin_amdgcn_fract(x);
  int e;
  r[5] = __builtin_frexp(x, &e);
  ri[6] = e;
  r[7] = __builtin_ldexp(x, n[i]);
  ri[8] = __builtin_isnan(x) | __builtin_isinf(x) << 1 | __builtin_isfinite(x) << 2 | __builtin_isnormal(x) << 3;
  ri[9] = __builtin_amdgcn_class(x, n[i] & 0x3ff);
  r[10] = __builtin_trunc(x);
  r[11] = __builtin_rint(x);
}
// Integer division and remainder: clang divides through the f32 reciprocal
// (v_cvt_f32_u32, v_rcp_iflag_f32, v_cvt_u32_f32) with an exact integer correction.
__kernel void idiv(__global const uint *a, __global const uint *b, __global const ulong *la, __global const ulong *lb,
                   __global uint *o, __global ulong *lo, uint count) {
  uint i = gid();
  if (i >= count) return;
  uint x = a[i], y = b[i];
  int sx = (int)x, sy = (int)y;
  o[4 * i] = x / y;
  o[4 * i + 1] = x % y;
  o[4 * i + 2] = (uint)(sx / sy);
  o[4 * i + 3] = (uint)(sx % sy);
  ulong X = la[i], Y = lb[i];
  lo[4 * i] = X / Y;
  lo[4 * i + 1] = X % Y;
  lo[4 * i + 2] = (ulong)((long)X / (long)Y);
  lo[4 * i + 3] = (ulong)((long)X % (long)Y);
}
// f16 division: the f32 reciprocal, v_fma_mixlo_f16, then v_div_fixup_f16 for the special
// cases.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
__kernel void hdiv(__global const half *a, __global const half *b, __global half *o, uint count) {
  uint i = gid();
  if (i < count) o[i] = a[i] / b[i];
}
// Division, a product and a sum: compiled with -cl-denorms-are-zero, the division runs with
// f32 denormals switched on around its Newton steps (s_setreg / s_denorm_mode) and the rest
// flushes them.
__kernel void ftz(__global const float *a, __global const float *b, __global float *o, uint count) {
  uint i = gid();
  if (i >= count) return;
  float x = a[i], y = b[i];
  o[3 * i] = x / y;
  o[3 * i + 1] = x * y;
  o[3 * i + 2] = x + y;
}
