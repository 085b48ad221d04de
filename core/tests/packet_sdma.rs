//! SDMA packets (gfx9 `sdma_pkt_open.h` layouts): byte-exact against dwords assembled by hand,
//! emit → parse round trips, and malformed input.

use hsakmt_core::packet::sdma::*;
use hsakmt_core::packet::{Dwords, Error};

fn le(dwords: &[u32]) -> Vec<u8> {
    dwords.iter().flat_map(|d| d.to_le_bytes()).collect()
}

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
fn nop_and_trap() {
    check(Repr::Nop { count: 0 }, &[0]);
    // NOP count @16..29.
    check(Repr::Nop { count: 2 }, &[2 << 16, 0, 0]);
    // TRAP: op 6, INT_CONTEXT @0..27 of dword 1.
    check(Repr::Trap { int_context: 0x0abc_def0 }, &[6, 0x0abc_def0]);
}

#[test]
fn copy_linear_matches_hand_assembled_words() {
    // op 1, sub-op COPY_LINEAR 0; count is bytes - 1 @0..21; DST_SWAP @16..17, SRC_SWAP @24..25 of dword 2.
    check(Repr::copy_linear(0x0000_7f00_0000_1000, 0x0000_0001_0000_2000, 4096), &[1, 4095, 0, 0x1000, 0x7f00, 0x2000, 1]);
    let c = CopyLinear { src: 0x10, dst: 0x20, count: 1 << 22, src_swap: 2, dst_swap: 1, tmz: true };
    check(Repr::CopyLinear(c), &[1 | 1 << 18, (1 << 22) - 1, 1 << 16 | 2 << 24, 0x10, 0, 0x20, 0]);
}

#[test]
fn write_untiled_matches_hand_assembled_words() {
    let data = [0x1111_1111u32, 0x2222_2222, 0x3333_3333];
    // op 2, sub-op 0; dword 3: count (dwords - 1) @0..19, SW @24..25.
    check(
        Repr::WriteUntiled { dst: 0x0000_0008_0000_0100, data: Dwords::from(&data), swap: 1 },
        &[2, 0x100, 8, 2 | 1 << 24, 0x1111_1111, 0x2222_2222, 0x3333_3333],
    );
}

#[test]
fn fence_poll_fill_timestamp_atomic_match_hand_assembled_words() {
    // FENCE: op 5, MTYPE @16..18.
    check(Repr::Fence { addr: 0x7f00_1234_5678, data: 0xfeed, mtype: 3 }, &[5 | 3 << 16, 0x1234_5678, 0x7f00, 0xfeed]);
    check(Repr::fence(0x40, 1), &[5, 0x40, 0, 1]);

    // POLL_REGMEM: op 8, HDP_FLUSH @26, FUNC @28..30, MEM_POLL @31; dword 5: INTERVAL @0..15, RETRY_COUNT @16..27.
    let p = PollRegmem {
        addr: 0x1_0000_0010,
        value: 5,
        mask: 0xffff_ffff,
        func: CompareFunction::Equal,
        mem_poll: true,
        hdp_flush: false,
        interval: 10,
        retry_count: 0xfff,
    };
    check(Repr::PollRegmem(p), &[8 | 3 << 28 | 1 << 31, 0x10, 1, 5, 0xffff_ffff, 10 | 0xfff << 16]);
    let p = PollRegmem { hdp_flush: true, mem_poll: false, func: CompareFunction::Always, ..p };
    check(Repr::PollRegmem(p), &[8 | 1 << 26, 0x10, 1, 5, 0xffff_ffff, 10 | 0xfff << 16]);

    // CONSTANT_FILL: op 11, SW @16..17, FILLSIZE @30..31; count (bytes - 1) @0..21 of dword 4.
    check(Repr::constant_fill(0x2000_0000_1000, 0xa5a5_a5a5, 256), &[11 | 2 << 30, 0x1000, 0x2000, 0xa5a5_a5a5, 255]);

    // TIMESTAMP: op 13; sub-op 0 SET, 1 GET_LOCAL, 2 GET_GLOBAL.
    check(Repr::Timestamp(Timestamp::Set(0x1_0000_0002)), &[13, 2, 1]);
    check(Repr::Timestamp(Timestamp::GetLocal(0x7f00_0000_0008)), &[13 | 1 << 8, 8, 0x7f00]);
    check(Repr::Timestamp(Timestamp::GetGlobal(0x40)), &[13 | 2 << 8, 0x40, 0]);

    // ATOMIC: op 10, LOOP @16, TMZ @18, ATOMIC_OP @25..31; LOOP_INTERVAL @0..12 of dword 7.
    let a = Atomic { addr: 0x1_0000_0040, op: ATOMIC_ADD64, src: 0x2_0000_0001, cmp: 0x3, loop_: true, loop_interval: 0x100, tmz: false };
    check(Repr::Atomic(a), &[10 | 1 << 16 | 47 << 25, 0x40, 1, 1, 2, 3, 0, 0x100]);
}

#[test]
fn malformed_sdma_packets_are_errors() {
    let parse = |d: &[u32]| {
        let b = le(d);
        Packet::new_checked(&b[..]).and_then(|p| Repr::parse(&p).map(|_| ()))
    };
    assert_eq!(Packet::new_checked(&[0u8; 2][..]).err(), Some(Error::Truncated));
    // Unknown opcode, unknown sub-ops.
    assert_eq!(parse(&[0xee]), Err(Error::UnknownType));
    assert_eq!(parse(&[1 | 1 << 8, 0, 0, 0, 0, 0, 0]), Err(Error::UnknownType), "COPY sub-op 1 is tiled, not supported");
    assert_eq!(parse(&[13 | 3 << 8, 0, 0]), Err(Error::UnknownType));
    // Shorter than the opcode needs; a WRITE whose count runs past the buffer; a NOP likewise.
    assert_eq!(parse(&[1, 0, 0]), Err(Error::Truncated));
    assert_eq!(parse(&[2, 0, 0]), Err(Error::Truncated));
    assert_eq!(parse(&[2, 0, 0, 5, 1]), Err(Error::Truncated));
    assert_eq!(parse(&[4 << 16, 0]), Err(Error::Truncated));
    // POLL_REGMEM function 7 is reserved.
    assert_eq!(parse(&[8 | 7 << 28, 0, 0, 0, 0, 0]), Err(Error::BadField));

    // Emit refuses out-of-range values without writing.
    let mut buf = [0xAAu8; 64];
    assert_eq!(Repr::copy_linear(0, 0, 0).emit(&mut Packet::new_unchecked(&mut buf[..])), Err(Error::BadField));
    assert_eq!(Repr::copy_linear(0, 0, (1 << 22) + 1).emit(&mut Packet::new_unchecked(&mut buf[..])), Err(Error::BadField));
    assert_eq!(Repr::Trap { int_context: 1 << 28 }.emit(&mut Packet::new_unchecked(&mut buf[..])), Err(Error::BadField));
    assert_eq!(Repr::WriteUntiled { dst: 0, data: Dwords::Words(&[]), swap: 0 }.check(), Err(Error::BadField));
    assert_eq!(Repr::fence(0x40, 1).emit(&mut Packet::new_unchecked(&mut buf[..8])), Err(Error::Truncated));
    assert_eq!(buf, [0xAA; 64]);
}
