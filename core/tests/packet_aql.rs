//! AQL packets and amd_signal_t: byte-exact against words assembled by hand from the HSA
//! spec / ROCr layouts, emit → parse round trips, and malformed input.

use hsakmt_core::packet::aql::*;
use hsakmt_core::packet::Error;

/// Little-endian bytes of hand-assembled dwords.
fn le(dwords: &[u32]) -> Vec<u8> {
    dwords.iter().flat_map(|d| d.to_le_bytes()).collect()
}

fn emit(repr: &Repr) -> Vec<u8> {
    let mut buf = vec![0xAAu8; PACKET_LEN];
    repr.emit(&mut Packet::new_unchecked(&mut buf[..]));
    buf
}

fn round_trip(repr: &Repr) {
    let bytes = emit(repr);
    assert_eq!(repr.buffer_len(), 64);
    let parsed = Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()).unwrap();
    assert_eq!(&parsed, repr);
    assert_eq!(repr.to_bytes().as_slice(), bytes.as_slice());
}

#[test]
fn kernel_dispatch_matches_hand_assembled_words() {
    let k = KernelDispatch::new(0x0000_7f00_1234_5000, 0, 0)
        .grid(3, [1024, 64, 2], [256, 4, 1])
        .segments(0x40, 0x800)
        .kernarg(0x0000_7f00_dead_0000)
        .completion_signal(0x0000_7f00_5151_0040);
    let repr = Repr::new(Body::KernelDispatch(k)).barrier(true).fences(FenceScope::Agent, FenceScope::System);
    // header: type 2 (bits 0..7) | barrier (bit 8) | acquire AGENT=1 (bits 9..10) | release SYSTEM=2 (bits 11..12)
    let header: u32 = 2 | 1 << 8 | 1 << 9 | 2 << 11;
    assert_eq!(header, 0x1302);
    let expected = le(&[
        header | 3 << 16, // setup: dimensions = 3
        256 | 4 << 16,    // workgroup_size_x, _y
        1,                // workgroup_size_z, reserved0
        1024,             // grid_size_x
        64,               // grid_size_y
        2,                // grid_size_z
        0x40,             // private_segment_size
        0x800,            // group_segment_size
        0x1234_5000,      // kernel_object lo
        0x0000_7f00,      // kernel_object hi
        0xdead_0000,      // kernarg_address lo
        0x0000_7f00,      // kernarg_address hi
        0,                // reserved2
        0,
        0x5151_0040, // completion_signal
        0x0000_7f00,
    ]);
    assert_eq!(emit(&repr), expected);
    assert_eq!(repr.header_word(), header | 3 << 16);
    round_trip(&repr);

    let p = Packet::new_checked(&expected[..]).unwrap();
    assert_eq!(
        p.header().unwrap(),
        Header::new(PacketType::KernelDispatch).barrier(true).acquire(FenceScope::Agent).release(FenceScope::System)
    );
    assert_eq!(p.dimensions(), 3);
    assert_eq!((p.workgroup_size_x(), p.workgroup_size_y(), p.workgroup_size_z()), (256, 4, 1));
    assert_eq!(p.kernel_object(), 0x0000_7f00_1234_5000);
    assert_eq!(p.completion_signal(), 0x0000_7f00_5151_0040);
}

#[test]
fn barrier_and_and_or_match_hand_assembled_words() {
    let deps = [0x1000, 0x2000_0000_0040, 0, 0, 0x3000];
    for (ty, body) in
        [(3u32, Body::BarrierAnd(Barrier::new(deps).completion_signal(0x9_0000_0080))), (5, Body::BarrierOr(Barrier::new(deps)))]
    {
        let repr = Repr::new(body).fences(FenceScope::None, FenceScope::System);
        let header = ty | 2 << 11;
        let completion = if ty == 3 { [0x0000_0080, 0x9] } else { [0, 0] };
        let expected = le(&[
            header, // reserved0 in the high half
            0,      // reserved1
            0x1000,
            0,
            0x0000_0040,
            0x2000,
            0,
            0,
            0,
            0,
            0x3000,
            0,
            0, // reserved2
            0,
            completion[0],
            completion[1],
        ]);
        assert_eq!(emit(&repr), expected, "type {ty}");
        round_trip(&repr);
        let p = Packet::new_checked(&expected[..]).unwrap();
        assert_eq!(p.dep_signal(1), 0x2000_0000_0040);
        assert_eq!(p.dep_signal(5), 0, "past the five dependency signals reads 0");
    }
}

#[test]
fn agent_dispatch_matches_hand_assembled_words() {
    let a = AgentDispatch {
        agent_type: 0x8001,
        return_address: 0x7000_0000_1000,
        arg: [1, 2, 0x3_0000_0003, u64::MAX],
        completion_signal: 0x40,
    };
    let repr = Repr::new(Body::AgentDispatch(a));
    let header: u32 = 4 | 2 << 9 | 2 << 11;
    let expected = le(&[
        header | 0x8001 << 16, // type (agent function)
        0,                     // reserved0
        0x0000_1000,
        0x7000, // return_address
        1,
        0,
        2,
        0,
        3,
        3,
        u32::MAX,
        u32::MAX, // arg[0..4]
        0,
        0, // reserved2
        0x40,
        0,
    ]);
    assert_eq!(emit(&repr), expected);
    round_trip(&repr);
}

#[test]
fn amd_barrier_value_and_raw_vendor_packets() {
    let bv =
        BarrierValue { signal: 0x1_0000_0040, value: -2, mask: 0x7fff_ffff_ffff_ffff, cond: SignalCondition::Lt, completion_signal: 0 };
    let repr = Repr::new(Body::BarrierValue(bv)).barrier(true);
    let header: u32 = 1 << 8 | 2 << 9 | 2 << 11; // type VENDOR_SPECIFIC = 0
    let expected = le(&[
        header | 2 << 16, // AmdFormat = BARRIER_VALUE (byte 2)
        0,
        0x40,
        1, // signal
        0xffff_fffe,
        0xffff_ffff, // value = -2
        0xffff_ffff,
        0x7fff_ffff, // mask
        2,           // cond = LT
        0,
        0,
        0,
        0,
        0,
        0,
        0,
    ]);
    assert_eq!(emit(&repr), expected);
    round_trip(&repr);

    let mut payload = [0u8; 60];
    payload.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
    round_trip(&Repr::new(Body::Vendor { format: 0x7e, payload }));
}

#[test]
fn amd_pm4_ib_matches_hand_assembled_words() {
    let repr = Repr::new(Body::Pm4Ib(Pm4Ib::new(0x0000_7f00_0000_1000, 0x40, 0x7f00_0000_2040)));
    let header: u32 = 2 << 9 | 2 << 11; // VENDOR_SPECIFIC, system-scope fences
    let expected = le(&[
        header | 1 << 16,                    // AmdFormat = PM4_IB
        3 << 30 | (4 - 2) << 16 | 0x3f << 8, // ib_jump_cmd[0]: type-3 INDIRECT_BUFFER, count 2
        0x0000_1000,                         // ib_jump_cmd[1]: IB base lo
        0x7f00,                              // ib_jump_cmd[2]: IB base hi
        0x40 | 1 << 23,                      // ib_jump_cmd[3]: IB_SIZE | VALID
        0xa,                                 // dw_cnt_remain
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0, // reserved[8]
        0x2040,
        0x7f00, // completion_signal
    ]);
    assert_eq!(emit(&repr), expected);
    round_trip(&repr);
    // Anything but an unpredicated INDIRECT_BUFFER in ib_jump_cmd is malformed.
    let mut bad = repr.to_bytes();
    bad[5] = 0x10; // opcode NOP
    assert_eq!(Repr::parse(&Packet::new_checked(&bad[..]).unwrap()), Err(Error::BadField));
    let mut bad = repr.to_bytes();
    bad[4] |= 1; // predicate
    assert_eq!(Repr::parse(&Packet::new_checked(&bad[..]).unwrap()), Err(Error::BadField));
    let mut bad = repr.to_bytes();
    bad[6] = 1; // count 1: not an INDIRECT_BUFFER's length
    assert_eq!(Repr::parse(&Packet::new_checked(&bad[..]).unwrap()), Err(Error::BadLength));
    assert_eq!(Repr::new(Body::Pm4Ib(Pm4Ib::new(0x1002, 4, 0))).check(), Err(Error::BadField));
}

#[test]
fn malformed_aql_packets_are_errors() {
    let good = Repr::new(Body::KernelDispatch(KernelDispatch::new(0x1000, 64, 64))).to_bytes();
    assert_eq!(Packet::new_checked(&good[..63]).err(), Some(Error::Truncated));
    assert_eq!(Repr::parse(&Packet::new_unchecked(&good[..10])), Err(Error::Truncated));

    let with_word = |w: u32| {
        let mut b = good;
        b[..4].copy_from_slice(&w.to_le_bytes());
        b
    };
    let parse = |b: &[u8; 64]| Repr::parse(&Packet::new_checked(&b[..]).unwrap());
    // INVALID (a free slot), and types the spec does not define.
    assert_eq!(parse(&with_word(1)), Err(Error::UnknownType));
    assert_eq!(parse(&with_word(6)), Err(Error::UnknownType));
    assert_eq!(parse(&with_word(0xff)), Err(Error::UnknownType));
    // Fence scope 3 is reserved; so are header bits 13..15.
    assert_eq!(parse(&with_word(2 | 3 << 9 | 1 << 16)), Err(Error::BadField));
    assert_eq!(parse(&with_word(2 | 3 << 11 | 1 << 16)), Err(Error::BadField));
    assert_eq!(parse(&with_word(2 | 1 << 13 | 1 << 16)), Err(Error::BadField));
    // A dispatch needs 1..=3 dimensions and no reserved setup bits.
    assert_eq!(parse(&with_word(2)), Err(Error::BadField));
    assert_eq!(parse(&with_word(2 | 1 << 16 | 1 << 20)), Err(Error::BadField));
    assert!(parse(&with_word(2 | 1 << 16)).is_ok());
    let k = KernelDispatch::new(0x1000, 64, 64);
    assert_eq!(Repr::new(Body::KernelDispatch(k.grid(0, [1, 1, 1], [1, 1, 1]))).check(), Err(Error::BadField));
    assert_eq!(Repr::new(Body::KernelDispatch(k.grid(4, [1, 1, 1], [1, 1, 1]))).check(), Err(Error::BadField));
    assert_eq!(Repr::new(Body::KernelDispatch(k)).check(), Ok(()));
    // Barrier-value with an unknown condition.
    let mut bv =
        Repr::new(Body::BarrierValue(BarrierValue { signal: 1, value: 0, mask: -1, cond: SignalCondition::Eq, completion_signal: 0 }))
            .to_bytes();
    bv[32] = 4;
    assert_eq!(parse(&bv), Err(Error::BadField));
}

#[test]
fn header_encoding_round_trips_every_valid_combination() {
    for ty in [0u8, 1, 2, 3, 4, 5] {
        for barrier in [false, true] {
            for acq in 0..3u8 {
                for rel in 0..3u8 {
                    let h = Header::new(PacketType::from_u8(ty).unwrap())
                        .barrier(barrier)
                        .acquire(FenceScope::from_u8(acq).unwrap())
                        .release(FenceScope::from_u8(rel).unwrap());
                    let raw = ty as u16 | (barrier as u16) << 8 | (acq as u16) << 9 | (rel as u16) << 11;
                    assert_eq!(h.to_u16(), raw);
                    assert_eq!(Header::from_u16(raw), Ok(h));
                }
            }
        }
    }
}

#[test]
fn amd_signal_matches_rocr_layout() {
    // amd_hsa_signal.h: kind @0 (i64), value @8, event_mailbox_ptr @16, event_id @24 (u32),
    // reserved1 @28, start_ts @32, end_ts @40, queue_ptr @48, reserved3[2] @56; 64 bytes.
    let repr = SignalRepr {
        start_ts: 0x1111,
        end_ts: 0x2222_0000_0000,
        queue_ptr: 0x7f00_0000_0000,
        ..SignalRepr::user(1).event(0x7f12_3456_7000, 42)
    };
    let mut buf = [0xAAu8; SIGNAL_LEN];
    repr.emit(&mut Signal::new_unchecked(&mut buf[..]));
    let expected = le(&[1, 0, 1, 0, 0x3456_7000, 0x7f12, 42, 0, 0x1111, 0, 0, 0x2222, 0, 0x7f00, 0, 0]);
    assert_eq!(buf.as_slice(), expected.as_slice());
    assert_eq!(SignalRepr::parse(&Signal::new_checked(&buf[..]).unwrap()), Ok(repr));

    // Doorbell kinds are -1 / -2 (all ones in the kind word).
    let mut db = buf;
    db[..8].copy_from_slice(&(-1i64).to_le_bytes());
    assert_eq!(SignalRepr::parse(&Signal::new_checked(&db[..]).unwrap()).unwrap().kind, SignalKind::Doorbell);
    db[..8].copy_from_slice(&7i64.to_le_bytes());
    assert_eq!(SignalRepr::parse(&Signal::new_checked(&db[..]).unwrap()), Err(Error::UnknownType));
    assert_eq!(Signal::new_checked(&buf[..40]).err(), Some(Error::Truncated));
}

#[test]
fn accessors_never_panic_on_short_unchecked_buffers() {
    let mut short = [0u8; 5];
    let mut p = Packet::new_unchecked(&mut short[..]);
    p.set_completion_signal(5);
    p.set_dep_signal(3, 9);
    assert_eq!(p.completion_signal(), 0);
    assert_eq!(p.kernel_object(), 0);
    assert!(Repr::parse(&p).is_err());
}
