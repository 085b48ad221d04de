// DPP and SDWA on gfx9 (model/ISA.md): clang's DPP builtins (each control, the row and bank
// masks, bound_ctrl, an old value kept, disabled source lanes, DPP folded into an add) and
// byte / short / half arithmetic that clang lowers to SDWA. No device library.

// No device library: the id from the dispatch packet.
static inline uint gid(void) {
    __constant ushort *dp = (__constant ushort *)__builtin_amdgcn_dispatch_ptr();
    return __builtin_amdgcn_workgroup_id_x() * dp[2] + __builtin_amdgcn_workitem_id_x();
}

#define DPP(old, x, ctrl, rows, banks, bc) __builtin_amdgcn_update_dpp((old), (x), (ctrl), (rows), (banks), (bc))

// 20 results per work-item; lanes past the grid's end are disabled sources.
__kernel void dpp(__global const int *in, __global int *out) {
    uint i = gid();
    int x = in[i];
    __global int *o = out + 20 * i;
    o[0] = DPP(-1, x, 0x1b, 0xf, 0xf, false);   // quad_perm:[3,2,1,0]
    o[1] = DPP(-1, x, 0x101, 0xf, 0xf, false);  // row_shl:1
    o[2] = DPP(-1, x, 0x10f, 0xf, 0xf, false);  // row_shl:15
    o[3] = DPP(-1, x, 0x111, 0xf, 0xf, false);  // row_shr:1
    o[4] = DPP(-1, x, 0x118, 0xf, 0xf, true);   // row_shr:8, bound_ctrl
    o[5] = DPP(-1, x, 0x123, 0xf, 0xf, false);  // row_ror:3
    o[6] = DPP(-1, x, 0x130, 0xf, 0xf, false);  // wave_shl:1
    o[7] = DPP(-1, x, 0x134, 0xf, 0xf, false);  // wave_rol:1
    o[8] = DPP(-1, x, 0x138, 0xf, 0xf, false);  // wave_shr:1
    o[9] = DPP(-1, x, 0x13c, 0xf, 0xf, false);  // wave_ror:1
    o[10] = DPP(-1, x, 0x140, 0xf, 0xf, false); // row_mirror
    o[11] = DPP(-1, x, 0x141, 0xf, 0xf, false); // row_half_mirror
    o[12] = DPP(-1, x, 0x142, 0xa, 0xf, false); // row_bcast:15
    o[13] = DPP(-1, x, 0x143, 0xc, 0xf, false); // row_bcast:31
    o[14] = DPP(-1, x, 0x112, 0x5, 0x6, false); // row_shr:2, rows 0 and 2, banks 1 and 2
    o[15] = DPP(-1, x, 0x112, 0x5, 0x6, true);
    // A scan step folded into the add (v_add_u32_dpp) and a float one.
    o[16] = x + __builtin_amdgcn_update_dpp(0, x, 0x111, 0xf, 0xf, false);
    o[17] = as_int(as_float(x) + as_float(__builtin_amdgcn_update_dpp(0, x, 0x1b, 0xf, 0xf, false)));
    // Disabled source lanes (a divergent branch).
    int d = -7;
    if (i % 3 != 0)
        d = DPP(-3, x, 0x121, 0xf, 0xf, false); // row_ror:1
    o[18] = d;
    int e = -7;
    if (i % 3 != 1)
        e = DPP(-3, x, 0x101, 0xf, 0xf, true);  // row_shl:1, bound_ctrl
    o[19] = e;
}

#pragma OPENCL EXTENSION cl_khr_fp16 : enable

// Bytes, shorts and halves, each lane's operands taken from parts of a dword: clang's gfx9
// SDWA (compiled with -fno-slp-vectorize, so the 16-bit pairs stay scalar, not v_pk_*).
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define MIN(a, b) ((a) < (b) ? (a) : (b))

__kernel void sdwa(__global const uint *a, __global const uint *b, __global uint *out) {
    uint i = gid();
    uint x = a[i], y = b[i];
    __global uint *o = out + 12 * i;
    uchar x0 = x, x1 = x >> 8, x2 = x >> 16, x3 = x >> 24;
    uchar y0 = y, y1 = y >> 8, y2 = y >> 16, y3 = y >> 24;
    o[0] = (uchar)(x0 + y0) | (uint)(uchar)(x1 + y1) << 8 | (uint)(uchar)(x2 + y2) << 16 | (uint)(uchar)(x3 + y3) << 24;
    o[1] = (uchar)(x0 * y1) | (uint)(uchar)(x1 * y2) << 8 | (uint)(uchar)(x2 * y3) << 16 | (uint)(uchar)(x3 * y0) << 24;
    ushort s0 = x, s1 = x >> 16, t0 = y, t1 = y >> 16;
    o[2] = (ushort)(s0 + t1) | (uint)(ushort)(s1 * t0) << 16;
    o[3] = (ushort)(s1 - t1) | (uint)(ushort)(s0 << (t0 & 15)) << 16;
    o[4] = (uint)((int)(short)(x >> 16) + (int)(char)(y >> 8));
    o[5] = (x >> 16) * (y & 0xff);
    o[6] = (uint)((short)s1 >> 3) ^ (uint)(MAX((short)s0, (short)t1));
    o[7] = (uint)MAX(x1, y2) | (uint)MIN(x3, y0) << 8 | (uint)MAX(s1, t0) << 16;
    half h0 = as_half(s0), h1 = as_half(s1), g0 = as_half(t0), g1 = as_half(t1);
    o[8] = as_ushort(h1 + g1) | (uint)as_ushort(h0 * g1) << 16;
    o[9] = as_ushort(h1 - g0) | (uint)as_ushort(__builtin_fmaxf16(h0, g0)) << 16;
    o[10] = as_uint((float)h1 * (float)g1);
    o[11] = (uint)(short)s1 < (uint)(char)x1 ? x : y;
}

// An atomic add whose wave-level scan LLVM's atomic optimizer builds from DPP when compiled
// with -mllvm -amdgpu-atomic-optimizer-strategy=DPP (row_shr 1/2/4/8 with bound_ctrl,
// row_bcast:15/31 under row masks, wave_shr:1 for the exclusive prefix, lanes outside EXEC
// zeroed by s_not_b64 exec around a v_mov); some lanes skip the atomic.
__kernel void scan(__global const uint *in, __global uint *sum, __global uint *old) {
    uint i = gid();
    uint r = 0xffffffff;
    if (in[i] % 5 != 0)
        r = __atomic_fetch_add(sum, in[i], __ATOMIC_RELAXED);
    old[i] = r;
}

// uchar4 and short arithmetic as vectors: gfx9's 16-bit integer ops and their SDWA forms.
__kernel void bytes(__global const uint *a, __global const uint *b, __global uint *out) {
    uint i = gid();
    uchar4 p = as_uchar4(a[i]), q = as_uchar4(b[i]);
    __global uint *o = out + 4 * i;
    o[0] = as_uint(p + q);
    o[1] = as_uint(p * q);
    o[2] = as_uint(p - (q >> (uchar4)(1, 2, 3, 4)));
    short x = (short)a[i], y = (short)(b[i] >> 16);
    o[3] = (uint)(ushort)(x * y) | (uint)(ushort)MAX(x, y) << 16;
}
