//! Built-in device knowledge: the PCI device id → GFX IP table upstream consults for pre-gfx11
//! parts, marketing names (libdrm's job upstream), the VGPR file size per CU and AMDName.
//!
//! Our own tables, written from public facts (PCI ids, gfx versions). Upstream gets marketing
//! names from libdrm's amdgpu.ids; we have no libdrm, so a short list covers the fixtures and
//! common accelerators, and everything else gets an empty name (what upstream reports when
//! libdrm knows no name).

/// One GPU family: its GFX IP version, upstream's AMDName for it, whether it is an APU (what
/// libdrm's FUSION flag reports) and its PCI device ids.
struct Family {
    name: &'static str,
    version: (u8, u8, u8),
    apu: bool,
    ids: &'static [u16],
}

const fn fam(name: &'static str, version: (u8, u8, u8), apu: bool, ids: &'static [u16]) -> Family {
    Family { name, version, apu, ids }
}

/// Families upstream resolves by device id (gfx7 .. gfx10.3). The table wins over the
/// kernel's gfx_target_version, and is not consulted for gfx11 and later.
static FAMILIES: &[Family] = &[
    fam(
        "Spectre",
        (7, 0, 0),
        true,
        &[
            0x1304, 0x1305, 0x1306, 0x1307, 0x1309, 0x130A, 0x130B, 0x130C, 0x130D, 0x130E, 0x130F, 0x1310, 0x1311, 0x1313, 0x1315, 0x1318,
            0x131B, 0x131C, 0x131D,
        ],
    ),
    fam("Spooky", (7, 0, 0), true, &[0x1312, 0x1316, 0x1317]),
    fam("Hawaii", (7, 0, 1), false, &[0x67A0, 0x67A1, 0x67A2, 0x67A8, 0x67A9, 0x67AA, 0x67B0, 0x67B1, 0x67B8, 0x67B9, 0x67BA, 0x67BE]),
    fam("Carrizo", (8, 0, 1), true, &[0x9870, 0x9874, 0x9875, 0x9876, 0x9877]),
    fam("Tonga", (8, 0, 2), false, &[0x6920, 0x6921, 0x6928, 0x6929, 0x692B, 0x692F, 0x6930, 0x6938, 0x6939]),
    fam("Fiji", (8, 0, 3), false, &[0x7300, 0x730F]),
    fam(
        "Polaris10",
        (8, 0, 3),
        false,
        &[0x67C0, 0x67C1, 0x67C2, 0x67C4, 0x67C7, 0x67C8, 0x67C9, 0x67CA, 0x67CC, 0x67CF, 0x67D0, 0x67DF, 0x6FDF],
    ),
    fam("Polaris11", (8, 0, 3), false, &[0x67E0, 0x67E1, 0x67E3, 0x67E7, 0x67E8, 0x67E9, 0x67EB, 0x67EF, 0x67FF]),
    fam("Polaris12", (8, 0, 3), false, &[0x6980, 0x6981, 0x6985, 0x6986, 0x6987, 0x6995, 0x6997, 0x699F]),
    fam("VegaM", (8, 0, 3), false, &[0x694C, 0x694E, 0x694F]),
    fam(
        "Vega10",
        (9, 0, 0),
        false,
        &[0x6860, 0x6861, 0x6862, 0x6863, 0x6864, 0x6867, 0x6868, 0x6869, 0x686A, 0x686B, 0x686C, 0x686D, 0x686E, 0x687F],
    ),
    fam("Vega12", (9, 0, 4), false, &[0x69A0, 0x69A1, 0x69A2, 0x69A3, 0x69AF]),
    fam("Raven", (9, 0, 2), true, &[0x15DD, 0x15D8]),
    fam("Vega20", (9, 0, 6), false, &[0x66A0, 0x66A1, 0x66A2, 0x66A3, 0x66A4, 0x66A7, 0x66AF]),
    fam("Arcturus", (9, 0, 8), false, &[0x7388, 0x738C, 0x738E, 0x7390]),
    fam("Aldebaran", (9, 0, 10), false, &[0x7408, 0x740C, 0x740F, 0x7410]),
    fam("Renoir", (9, 0, 12), true, &[0x15E7, 0x1636, 0x1638, 0x164C]),
    fam("Navi10", (10, 1, 0), false, &[0x7310, 0x7312, 0x7318, 0x731A, 0x731E, 0x731F]),
    fam("cyan_skillfish", (10, 1, 3), true, &[0x13F9, 0x13FA, 0x13FB, 0x13FC, 0x13FE, 0x143F]),
    fam("Navi14", (10, 1, 2), false, &[0x7340, 0x7341, 0x7347]),
    fam("Navi12", (10, 1, 1), false, &[0x7360, 0x7362]),
    fam(
        "SIENNA_CICHLID",
        (10, 3, 0),
        false,
        &[0x73A0, 0x73A1, 0x73A2, 0x73A3, 0x73A5, 0x73A8, 0x73A9, 0x73AC, 0x73AD, 0x73AB, 0x73AE, 0x73BF],
    ),
    fam("NAVY_FLOUNDER", (10, 3, 1), false, &[0x73C0, 0x73C1, 0x73C3, 0x73DA, 0x73DB, 0x73DC, 0x73DD, 0x73DE, 0x73DF]),
    fam("DIMGREY_CAVEFISH", (10, 3, 2), false, &[0x73E0, 0x73E1, 0x73E2, 0x73E8, 0x73E9, 0x73EA, 0x73EB, 0x73EC, 0x73ED, 0x73EF, 0x73FF]),
    fam("VanGogh", (10, 3, 3), true, &[0x163F]),
    fam("BEIGE_GOBY", (10, 3, 4), false, &[0x7420, 0x7421, 0x7422, 0x7423, 0x743F]),
    fam("YELLOW_CARP", (10, 3, 5), true, &[0x164D, 0x1681]),
];

/// What the device-id table says about a GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GfxIp {
    pub major: u32,
    pub minor: u32,
    pub stepping: u32,
    pub name: &'static str,
    pub apu: bool,
}

/// Upstream's `find_hsa_gfxip_device`: no answer for gfx major > 10 (those parts are
/// described by gfx_target_version alone), otherwise the family holding `device_id`.
pub fn find_gfxip(device_id: u16, gfx_major: u32) -> Option<GfxIp> {
    if gfx_major > 10 {
        return None;
    }
    FAMILIES.iter().find(|f| f.ids.contains(&device_id)).map(|f| GfxIp {
        major: u32::from(f.version.0),
        minor: u32::from(f.version.1),
        stepping: u32::from(f.version.2),
        name: f.name,
        apu: f.apu,
    })
}

/// Marketing names by PCI device id, spelled as libdrm's amdgpu.ids spells them for the
/// common revision (amdgpu.ids keys by id and revision; we only know the id), plus whether
/// the part is an APU.
static MARKETING: &[(u16, &str, bool)] = &[
    (0x6860, "AMD Radeon Instinct MI25", false),
    (0x66A1, "AMD Instinct MI60 / MI50", false),
    (0x66AF, "AMD Radeon VII", false),
    (0x738C, "AMD Instinct MI100", false),
    (0x7408, "AMD Instinct MI250X", false),
    (0x740C, "AMD Instinct MI250X / MI250", false),
    (0x740F, "AMD Instinct MI210", false),
    (0x74A0, "AMD Instinct MI300A", true),
    (0x74A1, "AMD Instinct MI300X", false),
    (0x74A5, "AMD Instinct MI325X", false),
    (0x75A0, "AMD Instinct MI350X", false),
    (0x75A3, "AMD Instinct MI355X", false),
    (0x73BF, "AMD Radeon RX 6900 XT", false),
    (0x744C, "AMD Radeon RX 7900 XTX", false),
    (0x7550, "AMD Radeon RX 9070 XT", false),
];

/// The marketing name of a GPU and whether it is an APU, if the device id is known.
pub fn marketing_name(device_id: u16) -> Option<(&'static str, bool)> {
    MARKETING.iter().find(|m| m.0 == device_id).map(|m| (m.1, m.2))
}

/// Packed version as upstream compares it: `(major << 16) | (minor << 8) | stepping`.
pub const fn packed_version(major: u32, minor: u32, stepping: u32) -> u32 {
    (major << 16) | (minor << 8) | stepping
}

/// Upstream's `hsakmt_get_vgpr_size_per_cu`: 512 KiB for the CDNA parts with the doubled
/// register file (gfx908, gfx90a, gfx94x, gfx950), 384 KiB for gfx1100/1101/1200/1201,
/// 256 KiB for everything else.
pub const fn vgpr_size_per_cu(packed: u32) -> u32 {
    if packed == 0x09_05_00 || packed & 0xff_ff_00 == 0x09_04_00 || packed == 0x09_00_0A || packed == 0x09_00_08 {
        0x80000
    } else if matches!(packed, 0x0B_00_00 | 0x0B_00_01 | 0x0C_00_00 | 0x0C_00_01) {
        0x60000
    } else {
        0x40000
    }
}

/// SGPR_SIZE_PER_CU from libhsakmt.h.
pub const SGPR_SIZE_PER_CU: u32 = 0x4000;

/// AMDName when the device table has no entry: "GFX" and six lowercase hex digits of the
/// packed version (upstream's `snprintf("GFX%06x")`), e.g. 9.4.2 → "GFX090402",
/// 9.0.10 → "GFX09000a". The packed value fits 22 bits, so six digits always suffice.
pub fn generic_amd_name(packed: u32) -> [u8; 9] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = *b"GFX000000";
    let mut v = packed;
    for slot in out.iter_mut().skip(3).rev() {
        *slot = HEX[(v & 0xf) as usize];
        v >>= 4;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(&generic_amd_name(packed_version(9, 4, 2)), b"GFX090402");
        assert_eq!(&generic_amd_name(packed_version(9, 0, 10)), b"GFX09000a");
        assert_eq!(&generic_amd_name(packed_version(11, 0, 0)), b"GFX0b0000");
        assert_eq!(&generic_amd_name(packed_version(12, 0, 1)), b"GFX0c0001");
    }

    #[test]
    fn table() {
        assert_eq!(find_gfxip(0x740F, 9).map(|g| (g.major, g.minor, g.stepping, g.name)), Some((9, 0, 10, "Aldebaran")));
        assert_eq!(find_gfxip(0x740F, 11), None);
        assert_eq!(find_gfxip(0x74A1, 9), None);
        assert_eq!(vgpr_size_per_cu(0x090402), 0x80000);
        assert_eq!(vgpr_size_per_cu(0x090000), 0x40000);
        assert_eq!(vgpr_size_per_cu(0x0B0001), 0x60000);
    }
}
