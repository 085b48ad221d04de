//! Random bytes never panic the packet views or parsers, and whatever parses re-emits to bytes
//! that parse to the same value (a cheap in-tree stand-in for the fuzz targets).

use hsakmt_core::packet::{aql, pm4, sdma};

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn fill(&mut self, buf: &mut [u8]) {
        for b in buf.iter_mut() {
            *b = self.next() as u8;
        }
    }
}

#[test]
fn random_bytes_never_panic_and_parsed_packets_round_trip() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut buf = [0u8; 96];
    let (mut aql_ok, mut pm4_ok, mut sdma_ok) = (0, 0, 0);
    let (mut pm4_re, mut sdma_re) = (0, 0);
    for round in 0..200_000 {
        rng.fill(&mut buf);
        let len = (rng.next() % 97) as usize;
        // Steer the first dword toward real headers half of the time so parsers get deep.
        if round % 2 == 0 {
            let op = [0x10u32, 0x15, 0x37, 0x3c, 0x3f, 0x40, 0x46, 0x49, 0x58, 0x76][round / 2 % 10];
            let count = (rng.next() % 24) as u32;
            buf[..4].copy_from_slice(&(3 << 30 | count << 16 | op << 8 | (rng.next() as u32 & 3)).to_le_bytes());
        }
        let bytes = &buf[..len];

        if let Ok(p) = aql::Packet::new_checked(bytes) {
            if let Ok(r) = aql::Repr::parse(&p) {
                aql_ok += 1;
                assert_eq!(aql::Repr::parse(&aql::Packet::new_checked(&r.to_bytes()[..]).unwrap()), Ok(r));
            }
        }
        if let Ok(p) = pm4::Packet::new_checked(bytes) {
            if let Ok(r) = pm4::Repr::parse(&p) {
                pm4_ok += 1;
                let mut out = [0u8; 128];
                r.emit(&mut pm4::Packet::new_unchecked(&mut out[..])).expect("what parses emits");
                {
                    let q = pm4::Packet::new_checked(&out[..]).unwrap();
                    assert_eq!(pm4::Repr::parse(&q).unwrap(), r);
                    pm4_re += 1;
                }
            }
        }
        let mut sbuf = buf;
        if round % 3 == 0 {
            sbuf[0] = [0u8, 1, 2, 5, 6, 8, 10, 11, 13][round / 3 % 9];
            sbuf[1] = (rng.next() % 3) as u8;
        }
        if let Ok(p) = sdma::Packet::new_checked(&sbuf[..len]) {
            if let Ok(r) = sdma::Repr::parse(&p) {
                sdma_ok += 1;
                let mut out = [0u8; 128];
                r.emit(&mut sdma::Packet::new_unchecked(&mut out[..])).expect("what parses emits");
                {
                    assert_eq!(sdma::Repr::parse(&sdma::Packet::new_checked(&out[..]).unwrap()).unwrap(), r);
                    sdma_re += 1;
                }
            }
        }
        let _ = aql::SignalRepr::parse(&aql::Signal::new_unchecked(bytes));
    }
    assert!(
        aql_ok > 100 && pm4_ok > 100 && sdma_ok > 100 && pm4_re > 100 && sdma_re > 100,
        "parsers reached: aql {aql_ok}, pm4 {pm4_ok} ({pm4_re} re-emitted), sdma {sdma_ok} ({sdma_re} re-emitted)"
    );
}
