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
