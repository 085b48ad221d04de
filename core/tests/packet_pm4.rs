//! PM4 type-3 packets (gfx9): byte-exact against dwords assembled by hand from the public field
//! definitions, emit → parse round trips, and malformed input.

use hsakmt_core::packet::pm4::*;
use hsakmt_core::packet::{Dwords, Error};

fn le(dwords: &[u32]) -> Vec<u8> {
    dwords.iter().flat_map(|d| d.to_le_bytes()).collect()
}

/// A type-3 header from its definition: type 3 @30..31, count @16..29, opcode @8..15,
/// shader type @1, predicate @0.
fn hdr(opcode: u32, count: u32) -> u32 {
    3 << 30 | count << 16 | opcode << 8 | 1 << 1
}

/// Emits `repr`, compares with the hand-assembled dwords, parses back and compares.
fn check(repr: Repr, expected: &[u32]) {
    let want = le(expected);
    assert_eq!(repr.buffer_len(), want.len());
    let mut buf = vec![0xAAu8; want.len() + 8];
    repr.emit(&mut Packet::new_unchecked(&mut buf[..])).unwrap();
    assert_eq!(&buf[..want.len()], want.as_slice(), "{repr:?}");
    assert_eq!(&buf[want.len()..], &[0xAA; 8], "emit wrote past the packet");
    let p = Packet::new_checked(&want[..]).unwrap();
    assert_eq!(p.total_len(), want.len());
    assert_eq!(Repr::parse(&p).unwrap(), repr);
}

#[test]
fn nop_forms() {
    check(Repr::compute(Command::Nop { body_dwords: 0 }), &[hdr(0x10, 0x3fff)]);
    check(Repr::compute(Command::Nop { body_dwords: 3 }), &[hdr(0x10, 2), 0, 0, 0]);
    // Graphics, predicated.
    let r = Repr { compute: false, predicate: true, command: Command::Nop { body_dwords: 1 } };
    check(r, &[3 << 30 | 0x10 << 8 | 1, 0]);
}

#[test]
fn write_data_matches_hand_assembled_words() {
    let data = [0xdead_beef, 0x0000_0001];
    let w = WriteData::memory(0x0000_1234_5678_9abc, Dwords::from(&data));
    // DST_SEL=5 (memory) @8..11, WR_CONFIRM @20.
    check(Repr::compute(w.into()), &[hdr(0x37, 4), 5 << 8 | 1 << 20, 0x5678_9abc, 0x1234, 0xdead_beef, 1]);
    let w = WriteData {
        dst_sel: 0,
        wr_one_addr: true,
        wr_confirm: false,
        cache_policy: 3,
        engine_sel: 2,
        dst_addr: 0x2c10 * 4,
        data: Dwords::from(&[7u32]),
    };
    check(Repr::compute(w.into()), &[hdr(0x37, 3), 1 << 16 | 3 << 25 | 2 << 30, 0x2c10 * 4, 0, 7]);
}

#[test]
fn release_mem_matches_hand_assembled_words() {
    let r = ReleaseMem::eop(0x7f00_0000_1000, 0x1_0000_0002)
        .actions(release_action::TC_ACTION_ENA | release_action::TC_WB_ACTION_ENA)
        .interrupt(3, 0x55);
    check(
        Repr::compute(Command::ReleaseMem(r)),
        &[
            hdr(0x49, 6),
            0x28 | 5 << 8 | 1 << 15 | 1 << 17, // BOTTOM_OF_PIPE_TS, EVENT_INDEX 5, TC_WB, TC_ACTION
            3 << 24 | 2 << 29,                 // INT_SEL 3, DATA_SEL 2 (64-bit)
            0x1000,
            0x7f00,
            2,
            1,
            0x55,
        ],
    );
}

#[test]
fn wait_reg_mem_matches_hand_assembled_words() {
    let w = WaitRegMem {
        operation: 0,
        engine_sel: 1,
        poll_interval: 0x20,
        ..WaitRegMem::memory(0x8000_0040, CompareFunction::GreaterEqual, 9, 0xff)
    };
    // FUNCTION @0..2, MEM_SPACE @4, ENGINE_SEL @8..9.
    check(Repr::compute(Command::WaitRegMem(w)), &[hdr(0x3c, 5), 5 | 1 << 4 | 1 << 8, 0x8000_0040, 0, 9, 0xff, 0x20]);
}

#[test]
fn indirect_buffer_matches_hand_assembled_words() {
    let ib = IndirectBuffer { vmid: 3, cache_policy: 1, chain: true, ..IndirectBuffer::new(0x0000_7fff_0000_1000, 0x40) };
    // IB_SIZE @0..19, CHAIN @20, VALID @23, VMID @24..27, CACHE_POLICY @28..29.
    check(Repr::compute(Command::IndirectBuffer(ib)), &[hdr(0x3f, 2), 0x1000, 0x7fff, 0x40 | 1 << 20 | 1 << 23 | 3 << 24 | 1 << 28]);
}

#[test]
fn acquire_mem_matches_hand_assembled_words() {
    let a = AcquireMem {
        coher_cntl: 0x28c0_0000,
        coher_size: 0xff_ffff_ffff,
        coher_base: 0x12_3456_789a_bcde,
        poll_interval: 10,
        gcr_cntl: None,
    };
    check(Repr::compute(Command::AcquireMem(a)), &[hdr(0x58, 5), 0x28c0_0000, 0xffff_ffff, 0xff, 0x789a_bcde, 0x12_3456, 10]);
    // The gfx10+ form (nvd.h), as ROCr's InvalidateCodeCaches builds it for the whole address
    // space: 8 dwords (count 6), COHER_CNTL 0, size 0xFFFFFFFF / 0xFF, GCR_CNTL in dword 7 with
    // GLI_INV(1) | GLK_INV (bit 7) | GLV_INV (8) | GL1_INV (9) | GL2_INV (14).
    let gcr = 1 | 1 << 7 | 1 << 8 | 1 << 9 | 1 << 14;
    let a = AcquireMem { coher_cntl: 0, coher_size: 0xff_ffff_ffff, coher_base: 0, poll_interval: 0, gcr_cntl: Some(gcr) };
    check(Repr::compute(Command::AcquireMem(a)), &[hdr(0x58, 6), 0, 0xffff_ffff, 0xff, 0, 0, 0, gcr]);
    let a = AcquireMem { gcr_cntl: Some(1 << 19), ..a };
    assert_eq!(Repr::compute(Command::AcquireMem(a)).check(), Err(Error::BadField), "GCR_CNTL is 19 bits");
}

#[test]
fn set_sh_reg_dispatch_direct_event_write_copy_data() {
    let vals = [0x1000_0000u32, 0x7f, 0x3];
    // COMPUTE_PGM_LO = SH base + 0x20c: REG_OFFSET @0..15.
    check(
        Repr::compute(Command::SetShReg(SetShReg { reg_offset: 0x20c, values: Dwords::from(&vals) })),
        &[hdr(0x76, 3), 0x20c, 0x1000_0000, 0x7f, 3],
    );
    check(
        Repr::compute(Command::DispatchDirect(DispatchDirect { dim: [16, 2, 1], dispatch_initiator: 0x1 | 1 << 2 })),
        &[hdr(0x15, 3), 16, 2, 1, 5],
    );
    // EVENT_TYPE @0..5, EVENT_INDEX @8..11.
    check(Repr::compute(Command::EventWrite(EventWrite { event_type: 0x07, event_index: 4, addr: None })), &[hdr(0x46, 0), 0x07 | 4 << 8]);
    check(
        Repr::compute(Command::EventWrite(EventWrite { event_type: 0x01, event_index: 1, addr: Some(0x1_0000_0008) })),
        &[hdr(0x46, 2), 0x01 | 1 << 8, 8, 1],
    );
    let c = CopyData {
        src_sel: 5,
        dst_sel: 5,
        src_cache_policy: 1,
        count_sel: true,
        wr_confirm: true,
        dst_cache_policy: 2,
        engine_sel: 0,
        src: 0xcafe,
        dst: 0x2_0000_0100,
    };
    // SRC_SEL @0..3, DST_SEL @8..11, SRC_CACHE_POLICY @13..14, COUNT_SEL @16, WR_CONFIRM @20, DST_CACHE_POLICY @25..26.
    check(Repr::compute(Command::CopyData(c)), &[hdr(0x40, 4), 5 | 5 << 8 | 1 << 13 | 1 << 16 | 1 << 20 | 2 << 25, 0xcafe, 0, 0x100, 2]);
}

#[test]
fn a_stream_of_packets_parses_back_in_order() {
    let data = [1u32, 2, 3];
    let cmds = [
        Repr::compute(WriteData::memory(0x1000, Dwords::from(&data)).into()),
        Repr::compute(Command::Nop { body_dwords: 0 }),
        Repr::compute(Command::ReleaseMem(ReleaseMem::eop(0x2000, 1))),
    ];
    let mut ring = vec![0u8; 256];
    let mut off = 0;
    for c in &cmds {
        c.emit(&mut Packet::new_unchecked(&mut ring[off..])).unwrap();
        off += c.buffer_len();
    }
    let mut off = 0;
    for c in &cmds {
        let p = Packet::new_checked(&ring[off..]).unwrap();
        assert_eq!(&Repr::parse(&p).unwrap(), c);
        off += p.total_len();
    }
}

#[test]
fn malformed_pm4_packets_are_errors() {
    let parse = |d: &[u32]| {
        let b = le(d);
        Packet::new_checked(&b[..]).and_then(|p| Repr::parse(&p).map(|_| ()))
    };
    assert_eq!(Packet::new_checked(&[0u8; 3][..]).err(), Some(Error::Truncated));
    // Type 2 filler and type 0 are not type-3 packets.
    assert_eq!(parse(&[0x8000_0000]), Err(Error::UnknownType));
    assert_eq!(parse(&[0x0000_0000, 0]), Err(Error::UnknownType));
    // The header declares more dwords than the buffer holds.
    assert_eq!(parse(&[hdr(0x49, 6), 0, 0]), Err(Error::Truncated));
    // Unknown opcode.
    assert_eq!(parse(&[hdr(0x99, 0), 0]), Err(Error::UnknownType));
    // Fixed-length opcodes with the wrong count.
    assert_eq!(parse(&[hdr(0x49, 5), 0, 0, 0, 0, 0, 0]), Err(Error::BadLength));
    assert_eq!(parse(&[hdr(0x3c, 4), 0, 0, 0, 0, 0]), Err(Error::BadLength));
    assert_eq!(parse(&[hdr(0x46, 1), 0, 0]), Err(Error::BadLength));
    assert_eq!(parse(&[hdr(0x37, 2), 0, 0, 0]), Err(Error::BadLength), "WRITE_DATA without data");
    // WAIT_REG_MEM function 7 is reserved, and so is memory space 2.
    assert_eq!(parse(&[hdr(0x3c, 5), 7, 0, 0, 0, 0, 0]), Err(Error::BadField));
    assert_eq!(parse(&[hdr(0x3c, 5), 3 | 2 << 4, 0, 0, 0, 0, 0]), Err(Error::BadField));

    // Emit refuses fields that do not fit, and short buffers, without writing.
    let mut buf = [0xAAu8; 8];
    let r = Repr::compute(Command::ReleaseMem(ReleaseMem::eop(0x1000, 1)));
    assert_eq!(r.emit(&mut Packet::new_unchecked(&mut buf[..])), Err(Error::Truncated));
    assert_eq!(buf, [0xAA; 8]);
    let bad = Repr::compute(Command::IndirectBuffer(IndirectBuffer::new(0x1002, 4)));
    assert_eq!(bad.emit(&mut Packet::new_unchecked(&mut [0u8; 16][..])), Err(Error::BadField));
    let bad = Repr::compute(Command::IndirectBuffer(IndirectBuffer::new(0x1000, 1 << 20)));
    assert_eq!(bad.check(), Err(Error::BadField));
    // 64-bit RELEASE_MEM data needs an 8-byte aligned address; EVENT_WRITE addresses too.
    assert_eq!(Repr::compute(Command::ReleaseMem(ReleaseMem::eop(0x1004, 1))).check(), Err(Error::BadField));
    assert_eq!(
        Repr::compute(Command::EventWrite(EventWrite { event_type: 1, event_index: 1, addr: Some(0x1004) })).check(),
        Err(Error::BadField)
    );
    // ACQUIRE_MEM: 40-bit size and 57-bit base (in 256-byte units).
    let am = AcquireMem { coher_cntl: 0, coher_size: 1 << 40, coher_base: 0, poll_interval: 0, gcr_cntl: None };
    assert_eq!(Repr::compute(Command::AcquireMem(am)).check(), Err(Error::BadField));
    let am = AcquireMem { coher_size: 0, coher_base: (1 << 57) - 1, ..am };
    assert_eq!(Repr::compute(Command::AcquireMem(am)).check(), Ok(()));
}
