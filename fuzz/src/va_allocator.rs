//! Fuzz target for the FMM VA allocator: the input is an aperture description followed by a
//! sequence of operations (alloc with any size / alignment / guards / end alignment, fixed-address
//! alloc, free of live or arbitrary addresses, lookup, clear). A shadow list of live ranges
//! checks every answer, and the allocator's invariants are checked after each operation.

use hsakmt_core::fmm::va::{default_alignment, grow_alignment, reserved_request, Request, VaAllocator, VaError};

/// Reads little-endian values from the input; zeros once it runs out.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | (u64::from(self.u32()) << 32)
    }
}

/// The target's body: one fuzz input.
pub fn run(data: &[u8]) {
    let mut input = Input(data);
    let page = 1u64 << (12 + input.u8() % 5); // 4 KiB .. 64 KiB
                                              // Mostly small apertures (so they fill up), sometimes arbitrary ones (so bounds are hit).
    let (base, limit) = if input.u8() & 1 == 0 {
        let base = u64::from(input.u32()) * page;
        (base, base + (1 + u64::from(input.u8())) * 16 * page - 1)
    } else {
        (input.u64(), input.u64())
    };
    let Ok(mut a) = VaAllocator::new(base, limit, page) else { return };
    let mut live: Vec<(u64, u64)> = Vec::new();

    while !input.0.is_empty() {
        match input.u8() % 8 {
            0..=2 => {
                let req = Request {
                    size: if input.u8() & 1 == 0 { u64::from(input.u8()) * page } else { input.u64() },
                    align: if input.u8() & 1 == 0 { 1u64 << (input.u8() % 64) } else { input.u64() },
                    guard_before: u32::from(input.u8() % 4),
                    guard_after: if input.u8() == 0xff { input.u32() } else { u32::from(input.u8() % 4) },
                    align_end: input.u8() & 1 == 1,
                };
                match a.alloc_with(req) {
                    Ok(s) => {
                        let align = req.align.max(page);
                        let anchor = if req.align_end { s + req.size } else { s };
                        assert_eq!(anchor % align, 0);
                        assert!(s >= base && s + req.size - 1 <= limit);
                        assert!(live.iter().all(|&(m, n)| s + req.size <= m || m + n <= s), "overlapping allocation");
                        live.push((s, req.size));
                    }
                    Err(VaError::BadSize) => assert!(req.size == 0 || !req.size.is_multiple_of(page)),
                    Err(VaError::BadAlignment) => assert!(!req.align.is_power_of_two()),
                    Err(VaError::NoSpace) => {}
                    Err(e) => panic!("alloc returned {e:?}"),
                }
            }
            3 => {
                let addr = if input.u8() & 1 == 0 { base.wrapping_add(u64::from(input.u32() & 0xffff) * page) } else { input.u64() };
                let size = u64::from(input.u8()) * page;
                let guards = u32::from(input.u8() % 3);
                if let Ok(s) = a.alloc_at(addr, size, guards) {
                    assert_eq!(s, addr);
                    assert!(live.iter().all(|&(m, n)| s + size <= m || m + n <= s), "fixed allocation overlaps");
                    live.push((s, size));
                }
            }
            4 | 5 => {
                let pick = input.u8();
                if pick & 1 == 0 && !live.is_empty() {
                    let (s, n) = live.swap_remove(usize::from(pick >> 1) % live.len());
                    assert_eq!(a.free(s), Some(n));
                    assert_eq!(a.free(s), None, "double free accepted");
                } else {
                    let addr = input.u64();
                    let expect = live.iter().position(|&(m, _)| m == addr);
                    let got = a.free(addr);
                    match expect {
                        Some(i) => assert_eq!(got, Some(live.swap_remove(i).1)),
                        None => assert_eq!(got, None),
                    }
                }
            }
            6 => {
                let addr = if input.u8() & 1 == 0 { base.wrapping_add(input.u64() % (limit - base + 1).max(1)) } else { input.u64() };
                let want = live.iter().copied().find(|&(m, n)| addr >= m && addr - m < n);
                assert_eq!(a.lookup(addr), want);
            }
            _ => {
                if input.u8() == 0xff {
                    a.clear();
                    live.clear();
                }
                // The alignment policies must not panic on anything.
                let (size, x, y) = (input.u64(), input.u64(), input.u8());
                let _ = grow_alignment(size, x, input.u64());
                let _ = default_alignment(size, page, u32::from(y));
                let _ = reserved_request(size, x, page, page, u32::from(y));
            }
        }
        if let Err(e) = a.check_invariants() {
            panic!("invariant broken: {e}");
        }
        assert_eq!(a.len(), live.len());
    }
    for (s, n) in live {
        assert_eq!(a.free(s), Some(n));
    }
    assert_eq!(a.free_bytes(), limit - base + 1, "everything coalesced back");
}
