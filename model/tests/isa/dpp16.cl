// DPP16 and DPP8 on gfx1100 (model/ISA.md): clang's DPP builtins with the gfx10+ controls
// (quad_perm, row shifts and rotation, mirrors, row_share, row_xmask), row and bank masks,
// bound_ctrl, old values kept, DPP8, DPP folded into an add, disabled source lanes. No device
// library.

static inline uint gid(void) {
    __constant ushort *dp = (__constant ushort *)__builtin_amdgcn_dispatch_ptr();
    return __builtin_amdgcn_workgroup_id_x() * dp[2] + __builtin_amdgcn_workitem_id_x();
}

#define DPP(old, x, ctrl, rows, banks, bc) __builtin_amdgcn_update_dpp((old), (x), (ctrl), (rows), (banks), (bc))

__kernel void dpp16(__global const int *in, __global int *out) {
    uint i = gid();
    int x = in[i];
    __global int *o = out + 12 * i;
    o[0] = DPP(-1, x, 0x1b, 0xf, 0xf, false);  // quad_perm:[3,2,1,0]
    o[1] = DPP(-1, x, 0x101, 0xf, 0xf, false); // row_shl:1
    o[2] = DPP(-1, x, 0x118, 0xf, 0xf, true);  // row_shr:8, bound_ctrl
    o[3] = DPP(-1, x, 0x123, 0xf, 0xf, false); // row_ror:3
    o[4] = DPP(-1, x, 0x140, 0xf, 0xf, false); // row_mirror
    o[5] = DPP(-1, x, 0x141, 0xf, 0xf, false); // row_half_mirror
    o[6] = DPP(-1, x, 0x153, 0xf, 0xf, false); // row_share:3
    o[7] = DPP(-1, x, 0x165, 0xf, 0xf, false); // row_xmask:5
    o[8] = DPP(-1, x, 0x112, 0x1, 0x6, false); // row_shr:2, row 0, banks 1 and 2
    o[9] = __builtin_amdgcn_mov_dpp8(x, 0x53977);  // dpp8:[7,6,5,4,3,2,1,0]
    o[10] = x + __builtin_amdgcn_update_dpp(0, x, 0x111, 0xf, 0xf, false);
    int d = -7;
    if (i % 3 != 0)
        d = DPP(-3, x, 0x121, 0xf, 0xf, false); // row_ror:1
    o[11] = d;
}
