// Fences at agent and system scope: on gfx942 clang writes back and invalidates the L2 around
// them (buffer_wbl2, buffer_inv with sc0/sc1) and stores with sc0 sc1 (model/tests/isa_gfx942.rs).
__kernel void fence(__global uint *d) {
  uint i = __builtin_amdgcn_workitem_id_x();
  d[8 * i] = 1;
  __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent");
  d[8 * i + 1] = 2;
  __atomic_store_n(&d[8 * i + 2], 3u, __ATOMIC_RELEASE);
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "");
  d[8 * i + 3] = d[8 * i + 4] + i;
}
