// Kernels for model/tests/isa_gfx90a.rs, compiled with clang-19 -nogpulib (no device
// library: the global id comes from the dispatch packet's workgroup size).
static inline uint gid(void) {
  __constant ushort *dp = (__constant ushort *)__builtin_amdgcn_dispatch_ptr();
  return __builtin_amdgcn_workgroup_id_x() * dp[2] + __builtin_amdgcn_workitem_id_x();
}
__kernel void vadd(__global const float *a, __global const float *b, __global float *c, uint n) {
  uint i = gid();
  if (i < n) c[i] = a[i] + b[i];
}
__kernel void fill(__global uint *d, uint v, uint n) {
  uint i = gid();
  if (i < n) d[i] = v + i;
}
// A 2-D grid in 16x4 workgroups: every work-item stores its (x, y).
__kernel void ids(__global uint *d, uint width) {
  uint x = __builtin_amdgcn_workgroup_id_x() * 16 + __builtin_amdgcn_workitem_id_x();
  uint y = __builtin_amdgcn_workgroup_id_y() * 4 + __builtin_amdgcn_workitem_id_y();
  d[y * width + x] = (y << 16) | x;
}
// No device library: the barrier and the atomics from clang's builtins.
static inline void wg_barrier(void) {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
#define RLX __ATOMIC_RELAXED
// A sum through LDS: each workgroup of 256 folds its values with barriers, work-item 0 stores
// the workgroup's sum; every work-item also adds 1 to a local counter with an LDS atomic.
__kernel void reduce(__global const uint *in, __global uint *out, __global uint *counts) {
  __local uint part[256];
  __local uint count;
  uint l = __builtin_amdgcn_workitem_id_x();
  if (l == 0) count = 0;
  part[l] = in[gid()];
  wg_barrier();
  for (uint s = 128; s > 0; s >>= 1) {
    if (l < s) part[l] += part[l + s];
    wg_barrier();
  }
  __atomic_fetch_add(&count, l, RLX);
  wg_barrier();
  if (l == 0) {
    out[__builtin_amdgcn_workgroup_id_x()] = part[0];
    counts[__builtin_amdgcn_workgroup_id_x()] = count;
  }
}
// A histogram and counters with global atomics (with and without return).
__kernel void histo(__global const uint *in, __global uint *bins, __global uint *ticket, __global uint *order, uint n) {
  uint i = gid();
  if (i >= n) return;
  __atomic_fetch_add(&bins[in[i] & 15], 1u, RLX);
  __atomic_fetch_max(&bins[16], in[i], RLX);
  __atomic_fetch_min(&bins[17], in[i], RLX);
  __atomic_fetch_or(&bins[18], in[i], RLX);
  __atomic_fetch_xor(&bins[19], in[i], RLX);
  __atomic_fetch_and(&bins[20], in[i] | 0xffff0000u, RLX);
  __atomic_fetch_sub(&bins[21], 1u, RLX);
  uint zero = 0;
  __atomic_compare_exchange_n(&bins[22], &zero, i + 1, false, RLX, RLX);
  __atomic_exchange_n(&bins[23], 5u, RLX);
  order[i] = __atomic_fetch_add(ticket, 1u, RLX);
}
// LDS out of range: a[] holds 64 words; work-items write and read at a run-time offset.
__kernel void lds_range(__global uint *out, uint woff, uint roff) {
  __local uint a[64];
  uint l = __builtin_amdgcn_workitem_id_x();
  a[l] = l + 100;
  wg_barrier();
  a[l + woff] = l + 200;
  wg_barrier();
  out[l] = a[l + roff];
}
// A private array indexed at run time: clang keeps it in scratch (buffer_store/load through
// the private segment V#).
__kernel void priv(__global const uint *in, __global uint *out, uint n) {
  uint a[48];
  uint i = gid();
  if (i >= n) return;
  uint x = in[i];
  for (uint k = 0; k < 48; k++) a[k] = x * (k + 1) + k;
  uint s = 0;
  for (uint k = 0; k < 48; k++) s += a[(k * 7 + x) % 48] ^ k;
  out[i] = s;
}
// 64-bit integer and f64 arithmetic, conversions, and f16 (cl_khr_fp16) arithmetic.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
__kernel void wide(__global const double *a, __global const long *l, __global double *out, __global long *lo,
                   __global half *h, __global float *hf) {
  uint i = gid();
  double x = a[i], y = a[i + 1];
  double r = fma(x, y, x * 1.5) + (y - x);
  r = r < 0.0 ? fmax(r, x) : fmin(r, y * 4.0);
  out[3 * i] = r;
  out[3 * i + 1] = (double)(float)x + (double)(int)(y * 3.0) + (double)(uint)i;
  out[3 * i + 2] = (double)l[i];
  lo[2 * i] = l[i] * 3 + (l[i] >> 3) - (long)x;
  lo[2 * i + 1] = l[i] ^ (long)i;
  half p = h[2 * i], q = h[2 * i + 1];
  half s = p * q + (half)0.5h;
  s = s - fma(p, q, q);
  h[2 * i] = s > p ? s : p;
  hf[i] = (float)(p + q);
}
// Traps when d[0] holds 13 (after storing 1 to d[1]); stores 2 to d[2] otherwise.
__kernel void trap(__global uint *d) {
  d[1] = 1;
  if (d[0] == 13) __builtin_trap();
  d[2] = 2;
}
// float2 arithmetic: gfx90a's packed f32 VOP3P (v_pk_add/mul/fma_f32, v_pk_mov_b32), with
// swizzles (op_sel) and negations (neg_lo/neg_hi).
__kernel void packed(__global const float2 *a, __global const float2 *b, __global float2 *out, float2 k) {
  uint i = gid();
  float2 x = a[i], y = b[i];
  out[5 * i] = x + y;
  out[5 * i + 1] = x * y.yx;
  out[5 * i + 2] = fma(x, y, (float2)(-y.y, x.x));
  out[5 * i + 3] = (float2)(-x.y, x.x) * k - y;
  out[5 * i + 4] = k;
}
