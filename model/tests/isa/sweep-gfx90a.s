// gfx90a's own forms (after sweep.s): glc/slc/scc cache bits, v_mac_f32, v_mad_f32.
v_mac_f32_e32 v0, v1, v2
global_load_dwordx4 v[2:5], v[0:1], off glc
global_atomic_add v4, v3, v4, s[12:13] glc
global_atomic_cmpswap v6, v3, v[6:7], s[10:11] offset:64 glc
global_atomic_umax v0, v3, v4, s[10:11] glc
global_atomic_inc v0, v3, v4, s[10:11] glc
global_atomic_cmpswap_x2 v[0:1], v3, v[4:7], s[10:11] glc
flat_atomic_add v3, v[0:1], v2 glc
flat_atomic_cmpswap v3, v[0:1], v[4:5] glc
buffer_load_ushort v1, off, s[0:3], 0 slc
buffer_load_dwordx4 v[2:5], off, s[0:3], 0 offset:16 glc
buffer_store_byte v1, off, s[4:7], s11 offset:4095 glc
global_load_dword v1, v[0:1], off glc slc scc
buffer_load_dword v1, v0, s[0:3], 0 offen glc slc scc
flat_load_dword v1, v[0:1] scc
v_mad_f32 v1, v2, -v3, 1.0
// v_madmk/v_madak (gfx90a's integer division scales through them; not on gfx940+).
v_madmk_f32 v0, v1, 0x4f800000, v0
v_madak_f32 v0, v1, v2, 0x3f000000
v_madmk_f32 v0, v1, 0xcf800000, v3
