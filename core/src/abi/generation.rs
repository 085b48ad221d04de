//! ABI generations of the public structs: the layouts older upstream headers gave the structs
//! that later grew (fields inserted or appended), and the conversion between them and ours.
//!
//! The tables (`gen_generations.rs`) come from compiler-computed layouts of every ROCm
//! release's headers (`tests/data/generations/`): each old layout of a grown record is a list
//! of byte spans and bit spans, each naming where a member of the old struct sits in ours.
//! Bytes of the old layout no span covers (its reserved and padding bytes) are written as
//! zero; members that did not exist in a generation are not written at all.

#[path = "gen_generations.rs"]
mod tables;

pub use tables::*;

/// A run of bytes that is the same member(s) in an old layout and in ours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// Offset in our (newest) layout.
    pub new: u16,
    /// Offset in the old layout.
    pub old: u16,
    pub len: u16,
}

/// A bitfield that is the same member in an old layout and in ours (bit offsets from the
/// start of the record, little-endian bit numbering as the C compilers lay them out).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BitSpan {
    pub new: u16,
    pub old: u16,
    pub width: u8,
}

/// How one generation laid out one record that grew.
#[derive(Clone, Copy, Debug)]
pub struct RecordLayout {
    /// `sizeof` in that generation.
    pub size: usize,
    pub bytes: &'static [Span],
    pub bits: &'static [BitSpan],
}

impl Generation {
    pub const OLDEST: Generation = Generation::ALL[0];
    pub const NEWEST: Generation = Generation::ALL[Generation::ALL.len() - 1];

    /// The generation with this index (`g as u8`).
    #[inline]
    pub fn from_index(i: u8) -> Option<Generation> {
        Generation::ALL.get(i as usize).copied()
    }

    /// The generation an `HSAKMT_ABI` label names (`newest` is ours).
    pub fn from_label(label: &str) -> Option<Generation> {
        Generation::ALL.iter().copied().find(|g| g.label() == label)
    }

    /// How this generation lays out `r`, or `None` where it is our layout.
    #[inline]
    pub fn layout(self, r: Record) -> Option<&'static RecordLayout> {
        layout(self, r)
    }

    /// `sizeof(r)` in this generation.
    #[inline]
    pub fn size_of(self, r: Record) -> usize {
        self.layout(r).map_or(r.newest_size(), |l| l.size)
    }
}

/// The first generation whose `hsakmt.h` declares `function`, if it is a known one. A `const
/// fn`, so a caller naming a function by a literal can look it up at compile time.
pub const fn function_since(function: &str) -> Option<Generation> {
    let (mut lo, mut hi) = (0, FUNCTION_SINCE.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        match str_cmp(FUNCTION_SINCE[mid].0, function) {
            core::cmp::Ordering::Less => lo = mid + 1,
            core::cmp::Ordering::Greater => hi = mid,
            core::cmp::Ordering::Equal => return Some(FUNCTION_SINCE[mid].1),
        }
    }
    None
}

/// `str::cmp` as a `const fn` (byte order, as the table is sorted).
const fn str_cmp(a: &str, b: &str) -> core::cmp::Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut i = 0;
    while i < a.len() && i < b.len() {
        if a[i] != b[i] {
            return if a[i] < b[i] { core::cmp::Ordering::Less } else { core::cmp::Ordering::Greater };
        }
        i += 1;
    }
    if a.len() < b.len() {
        core::cmp::Ordering::Less
    } else if a.len() > b.len() {
        core::cmp::Ordering::Greater
    } else {
        core::cmp::Ordering::Equal
    }
}

impl RecordLayout {
    /// Write `newest` (our layout) as this generation's layout into `old`, which must be
    /// exactly `self.size` bytes; bytes no member covers become zero.
    pub fn to_old(&self, newest: &[u8], old: &mut [u8]) {
        assert_eq!(old.len(), self.size);
        // SAFETY: `old` is `self.size` writable bytes.
        unsafe { self.write_old(newest, old.as_mut_ptr()) }
    }

    /// [`RecordLayout::to_old`] into raw memory that may be uninitialised (a C caller's
    /// struct): zeroed as a whole (one `memset`), then each span copied and the bitfields set.
    ///
    /// # Safety
    /// `old` must be valid for writes of `self.size` bytes; `newest` must be our layout's size.
    pub unsafe fn write_old(&self, newest: &[u8], old: *mut u8) {
        // SAFETY: the caller's `self.size` bytes, initialised by the zeroing.
        let old = unsafe {
            core::ptr::write_bytes(old, 0, self.size);
            core::slice::from_raw_parts_mut(old, self.size)
        };
        for s in self.bytes {
            let (n, o, l) = (s.new as usize, s.old as usize, s.len as usize);
            old[o..o + l].copy_from_slice(&newest[n..n + l]);
        }
        for b in self.bits {
            set_bits(old, b.old as usize, b.width, get_bits(newest, b.new as usize, b.width));
        }
    }

    /// Where the byte at `new` of our layout sits in this generation's, if a member both
    /// layouts have covers it.
    pub fn old_offset(&self, new: usize) -> Option<usize> {
        self.bytes
            .iter()
            .find(|s| (s.new as usize..s.new as usize + s.len as usize).contains(&new))
            .map(|s| s.old as usize + new - s.new as usize)
    }

    /// Read this generation's layout `old` into `newest` (our layout); members the old layout
    /// lacks are left as they are in `newest` (callers start from zero).
    pub fn from_old(&self, old: &[u8], newest: &mut [u8]) {
        for s in self.bytes {
            let (n, o, l) = (s.new as usize, s.old as usize, s.len as usize);
            newest[n..n + l].copy_from_slice(&old[o..o + l]);
        }
        for b in self.bits {
            set_bits(newest, b.new as usize, b.width, get_bits(old, b.old as usize, b.width));
        }
    }
}

/// The bytes of `buf` that hold bits `[bit, bit + width)`: at most 8 (the generator keeps
/// spans at 57 bits or fewer, so a span plus its offset in its first byte fits 64 bits).
fn window(bit: usize, width: u8) -> core::ops::Range<usize> {
    debug_assert!(width as usize + bit % 8 <= 64);
    bit / 8..(bit + width as usize).div_ceil(8)
}

/// The 64-bit little-endian word at byte `at` of `buf`, with bytes past its end read as zero
/// (a fixed 8-byte load where the buffer has them: no variable-length copy).
#[inline]
fn load(buf: &[u8], at: usize) -> u64 {
    match buf.get(at..at + 8) {
        Some(b) => u64::from_le_bytes(b.try_into().unwrap_or([0; 8])),
        None => {
            let mut b = [0u8; 8];
            for (i, v) in buf.iter().skip(at).take(8).enumerate() {
                b[i] = *v;
            }
            u64::from_le_bytes(b)
        }
    }
}

#[inline]
fn mask(width: u8) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

#[inline]
fn get_bits(buf: &[u8], bit: usize, width: u8) -> u64 {
    let _ = window(bit, width);
    (load(buf, bit / 8) >> (bit % 8)) & mask(width)
}

#[inline]
fn set_bits(buf: &mut [u8], bit: usize, width: u8, v: u64) {
    let w = window(bit, width);
    let m = mask(width) << (bit % 8);
    let word = (load(buf, w.start) & !m) | ((v << (bit % 8)) & m);
    let bytes = word.to_le_bytes();
    match buf.get_mut(w.start..w.start + 8) {
        // Bytes of the window's word outside the span are written back unchanged.
        Some(dst) => dst.copy_from_slice(&bytes),
        None => {
            for (d, b) in buf[w].iter_mut().zip(bytes) {
                *d = b;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference conversion: zero everything, then copy each span and bitfield.
    fn to_old_reference(l: &RecordLayout, newest: &[u8]) -> alloc::vec::Vec<u8> {
        let mut old = alloc::vec![0u8; l.size];
        for s in l.bytes {
            let (n, o, len) = (s.new as usize, s.old as usize, s.len as usize);
            old[o..o + len].copy_from_slice(&newest[n..n + len]);
        }
        for b in l.bits {
            for i in 0..b.width as usize {
                let (from, to) = (b.new as usize + i, b.old as usize + i);
                if newest[from / 8] >> (from % 8) & 1 != 0 {
                    old[to / 8] |= 1 << (to % 8);
                }
            }
        }
        old
    }

    #[test]
    fn every_layout_converts_as_the_reference_into_garbage_memory() {
        let mut x = 0x9e37_79b9_u32;
        for g in Generation::ALL {
            for r in Record::ALL {
                let Some(l) = g.layout(r) else { continue };
                assert!(l.bytes.windows(2).all(|w| w[0].old + w[0].len <= w[1].old), "{g:?} {r:?}: spans sorted and disjoint");
                let newest: alloc::vec::Vec<u8> = (0..r.newest_size())
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 17;
                        x ^= x << 5;
                        x as u8
                    })
                    .collect();
                // Whatever the destination held before is overwritten: every byte is written.
                let mut old = alloc::vec![0xa5u8; l.size];
                l.to_old(&newest, &mut old);
                assert_eq!(old, to_old_reference(l, &newest), "{g:?} {r:?}");
            }
        }
    }

    #[test]
    fn wide_bit_spans_keep_their_neighbours() {
        let mut b = [0xffu8; 9];
        set_bits(&mut b, 3, 57, 0);
        assert_eq!(b, [0b0000_0111, 0, 0, 0, 0, 0, 0, 0xf0, 0xff]);
        set_bits(&mut b, 3, 57, (1 << 57) - 1);
        assert_eq!(b, [0xff; 9]);
        set_bits(&mut b, 8, 32, 0x1234_5678);
        assert_eq!(get_bits(&b, 8, 32), 0x1234_5678);
        assert_eq!(get_bits(&b, 4, 8), 0x8f);
        assert_eq!(b[0], 0xff);
        assert_eq!(b[5], 0xff);
    }

    #[test]
    fn bits_round_trip_across_byte_boundaries() {
        let mut b = [0u8; 4];
        set_bits(&mut b, 6, 5, 0b10111);
        assert_eq!(b, [0b1100_0000, 0b0000_0101, 0, 0]);
        assert_eq!(get_bits(&b, 6, 5), 0b10111);
        set_bits(&mut b, 7, 2, 0);
        assert_eq!(b, [0b0100_0000, 0b0000_0100, 0, 0]);
    }

    #[test]
    fn labels_round_trip_and_are_ordered_oldest_first() {
        for (i, g) in Generation::ALL.iter().enumerate() {
            assert_eq!(Generation::from_index(i as u8), Some(*g));
            assert_eq!(Generation::from_label(g.label()), Some(*g));
        }
        assert!(Generation::ALL.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(Generation::from_label("rocm-4.0"), None);
    }

    #[test]
    fn function_table_is_sorted_for_binary_search() {
        assert!(FUNCTION_SINCE.windows(2).all(|w| w[0].0 < w[1].0));
        for &(name, g) in FUNCTION_SINCE {
            assert_eq!(function_since(name), Some(g), "{name}");
            assert_eq!(function_since(&name[..name.len() - 1]), None);
        }
        assert_eq!(function_since(""), None);
        assert_eq!(function_since("zzz"), None);
        const AT_COMPILE_TIME: Option<Generation> = function_since("hsaKmtCreateQueueV2");
        assert_eq!(AT_COMPILE_TIME, Some(Generation::NEWEST));
    }
}
