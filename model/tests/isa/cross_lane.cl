// Kernels for the DS instructions kernels.cl does not reach (gfx90a): lanes exchanging data
// through ds_bpermute / ds_permute / ds_swizzle, and 64-bit and float LDS atomics.

// No device library: ids from the dispatch packet, the barrier from clang's builtins.
static inline uint lid(void) {
  return __builtin_amdgcn_workitem_id_x();
}
static inline uint group(void) {
  return __builtin_amdgcn_workgroup_id_x();
}
static inline uint gid(void) {
  __constant ushort *dp = (__constant ushort *)__builtin_amdgcn_dispatch_ptr();
  return group() * dp[2] + lid();
}
static inline void wg_barrier(void) {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

// Four results per work-item: the value of lane (7l + 3) % 64 (bpermute), the value lane l - 5
// sent here (permute: lane l writes to lane (l + 5) % 64), a quad reversal (QUAD_PERM 3,2,1,0)
// and a swap of the two 16-lane halves of each 32 (SWAP 16).
__kernel void shuffle(__global const uint *in, __global uint *out) {
    uint i = gid(), l = lid() & 63;
    uint v = in[i];
    out[4 * i + 0] = __builtin_amdgcn_ds_bpermute(((l * 7 + 3) & 63) << 2, v);
    out[4 * i + 1] = __builtin_amdgcn_ds_permute(((l + 5) & 63) << 2, v);
    out[4 * i + 2] = __builtin_amdgcn_ds_swizzle(v, 0x801b);
    out[4 * i + 3] = __builtin_amdgcn_ds_swizzle(v, 0x401f);
}

// Per workgroup: the 64-bit sum, min, max and xor of its inputs, a 64-bit ticket per work-item
// (fetch-and-add of 1 from 2^40: the returned values are a permutation), and the float sum of
// the local ids (exact in f32).
__kernel void lds64(__global const ulong *in, __global ulong *out, __global ulong *tickets, __global float *fsum) {
    __local ulong acc[5];
    __local float facc;
    uint l = lid(), g = group();
    if (l == 0) {
        acc[0] = 0;
        acc[1] = ~0ul;
        acc[2] = 0;
        acc[3] = 0;
        acc[4] = 1ul << 40;
        facc = 0.0f;
    }
    wg_barrier();
    ulong v = in[gid()];
    __atomic_fetch_add(&acc[0], v, __ATOMIC_RELAXED);
    __atomic_fetch_min(&acc[1], v, __ATOMIC_RELAXED);
    __atomic_fetch_max(&acc[2], v, __ATOMIC_RELAXED);
    __atomic_fetch_xor(&acc[3], v, __ATOMIC_RELAXED);
    tickets[gid()] = __atomic_fetch_add(&acc[4], 1ul, __ATOMIC_RELAXED);
    __builtin_amdgcn_ds_faddf(&facc, (float)l, 0, 0, false);
    wg_barrier();
    if (l == 0) {
        for (int k = 0; k < 4; k++)
            out[4 * g + k] = acc[k];
        fsum[g] = facc;
    }
}

// Bit counts and moves: leading and trailing zeros (32 for 0), leading redundant sign bits
// (clang's v_ffbh_i32 pattern for __builtin_clrsb), the bits reversed, and byte 2 as a float.
__kernel void bits(__global const uint *in, __global uint *out) {
    uint i = gid(), x = in[i];
    out[5 * i + 0] = __builtin_clzg(x, 32);
    out[5 * i + 1] = __builtin_ctzg(x, 32);
    out[5 * i + 2] = (uint)__builtin_clrsb((int)x);
    out[5 * i + 3] = __builtin_bitreverse32(x);
    out[5 * i + 4] = as_uint((float)((x >> 16) & 0xff));
}

// Integer forms clang picks for these patterns (v_mul_i32_i24, v_mul_hi_i32_i24, v_mul_hi_i32,
// v_bfe_i32, v_bfi_b32, v_alignbit_b32, v_alignbyte_b32, v_min3/max3/med3, v_perm_b32,
// v_add_lshl_u32, v_and_or_b32, v_bcnt_u32_b32, v_mad_i32_i24), 16 results per work-item.
static inline uint umin(uint a, uint b) { return a < b ? a : b; }
static inline uint umax(uint a, uint b) { return a > b ? a : b; }
static inline int imin(int a, int b) { return a < b ? a : b; }
static inline int imax(int a, int b) { return a > b ? a : b; }

__kernel void intops(__global const uint *a, __global const uint *b, __global uint *out) {
    uint i = gid(), x = a[i], y = b[i];
    int sx = (int)(x << 8) >> 8, sy = (int)(y << 8) >> 8;
    __global uint *o = out + 16 * i;
    o[0] = (uint)(sx * sy);
    o[1] = (uint)(((long)sx * (long)sy) >> 32);
    o[2] = (uint)(((long)(int)x * (long)(int)y) >> 32);
    o[3] = (uint)((int)(x << 5) >> 20);
    o[4] = (y & x) | (~y & (x ^ 0x5a5a5a5a));
    o[5] = (x >> 7) | (x << 25);
    o[6] = __builtin_amdgcn_alignbyte(x, y, y & 3);
    o[7] = umin(umin(x, y), x ^ y);
    o[8] = (uint)imax(imax((int)x, (int)y), (int)(x ^ y));
    o[9] = umax(umin(x, 0xC0000000u), 0x40000000u);
    o[10] = (uint)imax(imin((int)y, 1000000), -1000000);
    o[11] = __builtin_amdgcn_perm(x, y, (i * 0x0d0c0b07u) ^ 0x00080903u);
    o[12] = (x + y) << (y & 31);
    o[13] = (x & y) | (i * 3u);
    o[14] = __builtin_popcount(x) + y;
    o[15] = (uint)(sx * sy + (int)i);
}
