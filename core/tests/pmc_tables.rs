//! Our PMC tables and table selection against upstream's, as a C compiler computed them from
//! pmc_table.c (`tests/data/pmc/pmc-tables.tsv`, see its SOURCE.md): for every probe node and
//! block, the same status, slots, counter ids, width and mask. Plus hand facts for one ASIC
//! (from upstream's pmc_table.c, read by a person, not by the generator).

use hsakmt_core::pmc::{self, Asic, BLOCK_NAMES, COUNTER_BITS, COUNTER_MASK, NUM_BLOCKS};
use hsakmt_core::Status;

const TSV: &str = include_str!("data/pmc/pmc-tables.tsv");

struct Row<'a> {
    asic: &'a str,
    gfxv: u32,
    dev: u16,
    block: u32,
    name: &'a str,
    status: u32,
    slots: u32,
    num: u32,
    bits: u32,
    mask: u64,
    ids: Vec<u32>,
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).expect("hex")
}

fn rows() -> Vec<Row<'static>> {
    let mut lines = TSV.lines();
    assert_eq!(lines.next(), Some("asic\tgfxv\tdevice_id\tblock_index\tblock\tstatus\tslots\tnum_counters\tsize_bits\tmask\tcounter_ids"));
    lines
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 11, "{l}");
            Row {
                asic: f[0],
                gfxv: hex(f[1]) as u32,
                dev: hex(f[2]) as u16,
                block: f[3].parse().unwrap(),
                name: f[4],
                status: f[5].parse().unwrap(),
                slots: f[6].parse().unwrap(),
                num: f[7].parse().unwrap(),
                bits: f[8].parse().unwrap(),
                mask: hex(f[9]),
                ids: if f[10].is_empty() { vec![] } else { f[10].split(',').map(|x| x.parse().unwrap()).collect() },
            }
        })
        .collect()
}

#[test]
fn every_probe_and_block_matches_upstream() {
    let rows = rows();
    assert_eq!(rows.len(), 15 * NUM_BLOCKS);
    for r in &rows {
        assert_eq!(BLOCK_NAMES[r.block as usize], r.name);
        let sel = pmc::select(r.gfxv, r.dev);
        if r.status != 0 {
            assert_eq!(r.status, 3, "upstream's only failure is INVALID_PARAMETER");
            assert_eq!(sel.err(), Some(Status::INVALID_PARAMETER), "gfxv {:#x} dev {:#x}", r.gfxv, r.dev);
            continue;
        }
        let asic = sel.unwrap_or_else(|e| panic!("gfxv {:#x}: {e:?}", r.gfxv));
        assert_eq!(asic.name(), r.asic, "gfxv {:#x} dev {:#x}", r.gfxv, r.dev);
        let b = asic.block(r.block).unwrap();
        assert_eq!(b.slots, r.slots, "{} {}", r.asic, r.name);
        if r.slots == 0 {
            continue; // upstream omits blocks without slots
        }
        assert_eq!(b.num_counters(), r.num, "{} {}", r.asic, r.name);
        assert_eq!(b.counter_ids().collect::<Vec<_>>(), r.ids, "{} {}", r.asic, r.name);
        assert_eq!((COUNTER_BITS, COUNTER_MASK), (r.bits, r.mask));
    }
}

#[test]
fn hand_facts_for_vega() {
    // From pmc_table.c's vega_blocks and gfx9 arrays, read by hand: SQ counts 16 at once and
    // its ids start at 1 (0 is not a gfx9 SQ counter); TCC 10 at once; GRBM 2 at once; no CPC,
    // MC, SRBM or TCS block; GRBMSE ids 0..15.
    let v = pmc::select(0x09_04_02, 0x74A1).unwrap();
    assert_eq!(v, Asic::Vega);
    let sq = v.block(pmc::block::SQ).unwrap();
    assert_eq!(sq.slots, 16);
    assert_eq!(sq.counter_ids().next(), Some(1));
    assert!(sq.has_counter(4) && !sq.has_counter(0));
    assert_eq!(v.block(pmc::block::TCC).unwrap().slots, 10);
    assert_eq!(v.block(pmc::block::GRBM).unwrap().slots, 2);
    for absent in [1, 9, 13, 20] {
        assert_eq!(v.block(absent).unwrap().slots, 0, "{}", BLOCK_NAMES[absent as usize]);
    }
    assert_eq!(v.block(7).unwrap().counter_ids().collect::<Vec<_>>(), (0..16).collect::<Vec<_>>());
    assert_eq!(v.blocks().count(), 20);
    // Kaveri has only SQ; gfx 8.0.3 is Fiji only for 0x7300 / 0x730F.
    assert_eq!(pmc::select(0x07_00_00, 0).unwrap().blocks().map(|(i, _)| i).collect::<Vec<_>>(), vec![pmc::block::SQ]);
    assert_eq!(pmc::select(0x08_00_03, 0x730F).unwrap(), Asic::Fiji);
    assert_eq!(pmc::select(0x08_00_03, 0x67FF).unwrap(), Asic::Polaris);
    assert_eq!(pmc::select(0x0B_00_00, 0x744C), Err(Status::INVALID_PARAMETER));
    assert_eq!(pmc::select(0, 0), Err(Status::INVALID_PARAMETER));
}

#[test]
fn properties_layout_is_upstreams() {
    use hsakmt_core::abi::hsakmt::*;
    let v = Asic::Vega;
    let words = pmc::build_properties(v, |b, id| if b == pmc::block::SQ && id == 4 { 0 } else { 2 });
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
    let u32_at = |at: usize| u32::from_ne_bytes(bytes[at..at + 4].try_into().unwrap());
    let u64_at = |at: usize| u64::from_ne_bytes(bytes[at..at + 8].try_into().unwrap());
    let total_counters: u32 = v.blocks().map(|(_, b)| b.num_counters()).sum();
    // upstream's size: sizeof(props) + sizeof(block) * (nb - 1) + sizeof(counter) * (nc - nb)
    let nb = v.blocks().count();
    assert_eq!(
        bytes.len(),
        size_of::<HsaCounterProperties>()
            + size_of::<HsaCounterBlockProperties>() * (nb - 1)
            + size_of::<HsaCounter>() * (total_counters as usize - nb)
    );
    assert_eq!(u32_at(0) as usize, nb);
    assert_eq!(u32_at(4), v.blocks().map(|(_, b)| b.slots).sum::<u32>());
    // Walk the blocks as a C client does: next block = &Counters[NumCounters].
    let mut at = 8;
    let mut seen_sq4 = false;
    for (index, b) in v.blocks() {
        let uuid = pmc::block_uuid(index);
        assert_eq!(u32_at(at), uuid.Data1);
        assert_eq!(u32_at(at + 16), b.num_counters());
        assert_eq!(u32_at(at + 20), b.slots);
        let mut c = at + 24;
        for id in b.counter_ids() {
            let ty = u32_at(c);
            assert_eq!(u64_at(c + 4), u64::from(id));
            assert_eq!(u32_at(c + 12), 64);
            assert_eq!(u64_at(c + 16), u64::MAX);
            assert_eq!(u32_at(c + 24) & 1, 1, "Flags.Global");
            assert_eq!(u32_at(c + 28), index);
            if index == pmc::block::SQ && id == 4 {
                assert_eq!(ty, HSA_PROFILE_TYPE_PRIVILEGED_IMMEDIATE);
                seen_sq4 = true;
            } else {
                assert_eq!(ty, HSA_PROFILE_TYPE_NONPRIV_IMMEDIATE);
            }
            c += 32;
        }
        at = c;
    }
    assert!(seen_sq4);
    assert_eq!(at, bytes.len());
}
