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
    // GCR sub-ops other than 0 (GCR_REQ) and 1 (USER_GCR); a GCR cut short.
    assert_eq!(parse(&[17 | 2 << 8, 0, 0, 0, 0]), Err(Error::UnknownType));
    assert_eq!(parse(&[17 | 1 << 8, 0, 0, 0]), Err(Error::Truncated));
    // The broadcast bit makes COPY_LINEAR 9 dwords: 7 are too few.
    assert_eq!(parse(&[1 | 1 << 27, 0, 0, 0, 0, 0, 0]), Err(Error::Truncated));
    // POLL_REGMEM function 7 is reserved.
    assert_eq!(parse(&[8 | 7 << 28, 0, 0, 0, 0, 0]), Err(Error::BadField));

    // Emit refuses out-of-range values without writing.
    let mut buf = [0xAAu8; 64];
    assert_eq!(Repr::copy_linear(0, 0, 0).emit(&mut Packet::new_unchecked(&mut buf[..])), Err(Error::BadField));
    assert_eq!(Repr::copy_linear(0, 0, (1 << 30) + 1).emit(&mut Packet::new_unchecked(&mut buf[..])), Err(Error::BadField));
    let b = CopyBroadcast { src: 0, dst1: 0, dst2: 0, count: 1, src_swap: 0, dst1_swap: 0, dst2_swap: 4, tmz: false };
    assert_eq!(Repr::CopyBroadcast(b).emit(&mut Packet::new_unchecked(&mut buf[..])), Err(Error::BadField));
    let g = Gcr { user: true, base_va: 0x40, limit_va: 0, control: 0, vmid: 0 };
    assert_eq!(Repr::Gcr(g).check(), Err(Error::BadField), "GCR addresses are 128-byte aligned");
    assert_eq!(Repr::Gcr(Gcr { base_va: 1 << 48, ..g }).check(), Err(Error::BadField), "48-bit VAs");
    assert_eq!(Repr::Gcr(Gcr { base_va: 0, control: 1 << 19, ..g }).check(), Err(Error::BadField));
    assert_eq!(Repr::Gcr(Gcr { base_va: 0, vmid: 16, ..g }).check(), Err(Error::BadField));
    assert_eq!(Repr::Trap { int_context: 1 << 28 }.emit(&mut Packet::new_unchecked(&mut buf[..])), Err(Error::BadField));
    assert_eq!(Repr::WriteUntiled { dst: 0, data: Dwords::Words(&[]), swap: 0 }.check(), Err(Error::BadField));
    assert_eq!(Repr::fence(0x40, 1).emit(&mut Packet::new_unchecked(&mut buf[..8])), Err(Error::Truncated));
    assert_eq!(buf, [0xAA; 64]);
}

#[test]
fn rocr_hdp_flush_is_a_register_poll_regmem() {
    // sdma_registers.h `hdp_flush_cmd`: {0x8, 0x0, 0x80000000, 0x0, 0x0, 0x0}. Dword 0: op 8
    // (POLL_REGMEM), sub-op 0, HDP_FLUSH (bit 26) 0, FUNC (28..30) 0 = always, MEM_POLL (31)
    // 0 = registers. Dword 1: the polled register, 0; dword 2: the register written first,
    // bit 31 alone; value, mask, interval and retry count 0.
    let hdp = PollRegmem::ROCR_HDP_FLUSH;
    check(Repr::PollRegmem(hdp), &[0x8, 0, 0x8000_0000, 0, 0, 0]);
    assert_eq!((hdp.poll_register(), hdp.request_register()), (0, 0x8000_0000));
    assert!(!hdp.mem_poll && !hdp.hdp_flush && hdp.func == CompareFunction::Always);
    // amdgpu's own HDP flush on its SDMA rings (sdma_v6_0_ring_emit_hdp_flush): HDP_FLUSH 1,
    // FUNC 3 (equal), registers; done register in dword 1, request register in dword 2, both
    // as byte offsets; ref == mask; retry 0xfff, interval 10.
    let k = PollRegmem {
        addr: 0x1234 << 2 | (0x1235u64 << 2) << 32,
        value: 1 << 10,
        mask: 1 << 10,
        func: CompareFunction::Equal,
        mem_poll: false,
        hdp_flush: true,
        interval: 10,
        retry_count: 0xfff,
    };
    check(Repr::PollRegmem(k), &[8 | 1 << 26 | 3 << 28, 0x1234 << 2, 0x1235 << 2, 1 << 10, 1 << 10, 10 | 0xfff << 16]);
    assert_eq!((k.poll_register(), k.request_register()), (0x1234 << 2, 0x1235 << 2));
}

#[test]
fn gcr_matches_hand_assembled_words() {
    // ROCr's BuildGCRCommand(invalidate): op 17, sub-op 1 (USER_GCR); word 2 bits 16..31 hold
    // GCR_CONTROL 0..15: GLK_WB (6), GLK_INV (7), GLV_INV (8), GL1_INV (9), GL2_INV (14),
    // GL2_WB (15); everything else 0 (whole cache, VMID 0).
    let inv = Gcr { user: true, base_va: 0, limit_va: 0, control: gcr::rocr(true), vmid: 0 };
    let ctl = 1 << 6 | 1 << 7 | 1 << 8 | 1 << 9 | 1 << 14 | 1 << 15;
    assert_eq!(gcr::rocr(true), ctl);
    check(Repr::Gcr(inv), &[0x111, 0, ctl << 16, 0, 0]);
    // ...and after the copy: GL2_WB and GLK_WB only.
    check(Repr::Gcr(Gcr { control: gcr::rocr(false), ..inv }), &[0x111, 0, (1 << 15 | 1 << 6) << 16, 0, 0]);
    // amdgpu's sdma_v6_0_ring_emit_mem_sync: sub-op 0 (GCR_REQ), GLI_INV(1) too.
    let k = Gcr { user: false, control: ctl | gcr::GLM_INV | 1 << gcr::GLI_INV_SHIFT, ..inv };
    check(Repr::Gcr(k), &[17, 0, (ctl | 1 << 5 | 1) << 16, 0, 0]);
    // A range: base/limit VA bits 7..31 in dwords 1/3 at bits 7..31, bits 32..47 in dwords
    // 2/4 bits 0..15; GCR_CONTROL 16..18 (SEQ, RANGE_IS_PA) in dword 3 bits 0..2; VMID @24..27.
    let r = Gcr {
        user: true,
        base_va: 0x7f12_3456_7880,
        limit_va: 0x7f12_3457_0000,
        control: gcr::GL2_WB | 2 << gcr::GL2_RANGE_SHIFT | 1 << gcr::SEQ_SHIFT | gcr::RANGE_IS_PA,
        vmid: 5,
    };
    check(Repr::Gcr(r), &[0x111, 0x3456_7880, 0x7f12 | (1 << 15 | 2 << 11) << 16, 0x3457_0000 | 1 | 4, 0x7f12 | 5 << 24]);
}

#[test]
fn copy_broadcast_and_wide_counts_match_hand_assembled_words() {
    // kfdtest's SDMACopyDataPacket with two destinations: COPY_LINEAR with the broadcast bit
    // (27); dword 2: DST2_SW @8..9, DST1_SW @16..17, SRC_SW @24..25; src, dst1, dst2 in
    // dwords 3..8.
    let b = CopyBroadcast {
        src: 0x7f00_0000_1000,
        dst1: 0x7f00_0000_2000,
        dst2: 0x7f00_0000_3000,
        count: 256,
        src_swap: 0,
        dst1_swap: 0,
        dst2_swap: 0,
        tmz: false,
    };
    check(Repr::CopyBroadcast(b), &[1 | 1 << 27, 255, 0, 0x1000, 0x7f00, 0x2000, 0x7f00, 0x3000, 0x7f00]);
    let b = CopyBroadcast { src_swap: 1, dst1_swap: 2, dst2_swap: 3, tmz: true, count: 1 << 30, ..b };
    check(
        Repr::CopyBroadcast(b),
        &[1 | 1 << 18 | 1 << 27, (1 << 30) - 1, 3 << 8 | 2 << 16 | 1 << 24, 0x1000, 0x7f00, 0x2000, 0x7f00, 0x3000, 0x7f00],
    );
    // ROCr's count_ext (gfx90a, gfx10.3+, gfx11+): 30 bits, copies of up to 0x3fffffff bytes.
    check(Repr::copy_linear(0x1000, 0x2000, 0x3fff_ffff), &[1, 0x3fff_fffe, 0, 0x1000, 0, 0x2000, 0]);
}

#[test]
fn new_packets_round_trip() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..500 {
        let (a, b, c) = (next(), next(), next());
        let reprs = [
            Repr::CopyBroadcast(CopyBroadcast {
                src: a,
                dst1: b,
                dst2: c,
                count: (a as u32 % MAX_LINEAR_BYTES_WIDE) + 1,
                src_swap: (b >> 8) as u8 & 3,
                dst1_swap: (b >> 16) as u8 & 3,
                dst2_swap: (b >> 24) as u8 & 3,
                tmz: c & 1 != 0,
            }),
            Repr::Gcr(Gcr {
                user: a & 1 != 0,
                base_va: b & 0xffff_ffff_ff80,
                limit_va: c & 0xffff_ffff_ff80,
                control: (a >> 8) as u32 & gcr::MASK,
                vmid: (a >> 40) as u8 & 0xf,
            }),
            Repr::PollRegmem(PollRegmem {
                addr: a,
                value: b as u32,
                mask: c as u32,
                func: CompareFunction::Always,
                mem_poll: false,
                hdp_flush: a & 1 != 0,
                interval: b as u16,
                retry_count: (c >> 20) as u16 & 0xfff,
            }),
        ];
        for r in reprs {
            let mut buf = vec![0u8; r.buffer_len()];
            r.emit(&mut Packet::new_unchecked(&mut buf[..])).unwrap();
            let p = Packet::new_checked(&buf[..]).unwrap();
            assert_eq!(p.total_len(), buf.len());
            assert_eq!(Repr::parse(&p).unwrap(), r);
        }
    }
}
