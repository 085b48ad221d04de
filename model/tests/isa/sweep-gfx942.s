// gfx942's own forms (after sweep.s): sc0/nt/sc1 cache bits, scratch_* (architected flat
// scratch, with and without a VGPR or SGPR address), v_mov_b64, v_lshl_add_u64,
// v_fmamk/fmaak_f32, buffer_wbl2 / buffer_inv.
global_load_dwordx4 v[2:5], v[0:1], off sc0
global_load_dword v1, v[0:1], off sc0 sc1 nt
global_store_dword v[0:1], v2, off nt
global_atomic_add v4, v3, v4, s[12:13] sc0 sc1
global_atomic_add v3, v4, s[12:13] sc1
global_atomic_cmpswap v6, v3, v[6:7], s[10:11] offset:64 sc0 sc1
global_atomic_cmpswap_x2 v[0:1], v3, v[4:7], s[10:11] sc0
flat_load_dword v2, v[0:1] sc0 sc1
flat_atomic_add v3, v[0:1], v2 sc0 nt
buffer_load_dword v1, v0, s[0:3], 0 offen offset:4 sc0
buffer_load_dword v1, v0, s[0:3], 0 offen offset:4 sc1
buffer_load_ushort v1, off, s[0:3], 0 nt
buffer_store_dword v1, v0, s[0:3], 0 offen offset:4 sc0 sc1 nt
s_load_dword s0, s[4:5], 0x4 glc
scratch_load_dword v11, v3, off
scratch_load_dword v11, off, s2 offset:-16
scratch_load_dword v11, off, off offset:8
scratch_load_dword v1, v2, s3 offset:4095
scratch_store_dwordx4 off, v[0:3], off offset:16
scratch_store_dword v1, v2, off sc0 sc1
scratch_store_dword off, v2, s3
scratch_load_ubyte v1, v2, off
scratch_load_sbyte v1, v2, off
scratch_load_ushort v1, v2, off
scratch_load_sshort v1, v2, off nt
scratch_load_dwordx2 v[2:3], v2, off
scratch_load_dwordx3 v[2:4], v2, off
scratch_load_dwordx4 v[4:7], v2, off
scratch_store_byte v1, v2, off
scratch_store_short v1, v2, off
scratch_store_dwordx2 v1, v[2:3], off
scratch_store_dwordx3 v1, v[2:4], off
v_mov_b64 v[0:1], v[2:3]
v_mov_b64_e32 v[0:1], s[2:3]
v_mov_b64 v[0:1], 0x12345678
v_mov_b64_e32 v[0:1], 1.0
v_mov_b64_e64 v[0:1], v[2:3]
v_lshl_add_u64 v[0:1], s[4:5], 0, v[0:1]
v_lshl_add_u64 v[0:1], v[2:3], 3, v[4:5]
v_fmamk_f32 v0, v1, 0x4f800000, v0
v_fmaak_f32 v0, v1, v2, 0x3f000000
buffer_wbl2 sc1
buffer_inv sc1
buffer_wbl2 sc0 sc1
buffer_inv sc0 sc1
buffer_wbl2
buffer_inv nt
