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

/// The first generation whose `hsakmt.h` declares `function`, if it is a known one.
pub fn function_since(function: &str) -> Option<Generation> {
    FUNCTION_SINCE.binary_search_by(|&(n, _)| n.cmp(function)).ok().map(|i| FUNCTION_SINCE[i].1)
}

impl RecordLayout {
    /// Write `newest` (our layout) as this generation's layout into `old`, which must be
    /// exactly `self.size` bytes; bytes no member covers become zero.
    pub fn to_old(&self, newest: &[u8], old: &mut [u8]) {
        debug_assert_eq!(old.len(), self.size);
        old.fill(0);
        for s in self.bytes {
            let (n, o, l) = (s.new as usize, s.old as usize, s.len as usize);
            old[o..o + l].copy_from_slice(&newest[n..n + l]);
        }
        for b in self.bits {
            set_bits(old, b.old as usize, b.width, get_bits(newest, b.new as usize, b.width));
        }
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

fn get_bits(buf: &[u8], bit: usize, width: u8) -> u64 {
    let mut v = 0u64;
    for i in 0..width as usize {
        let at = bit + i;
        v |= (((buf[at / 8] >> (at % 8)) & 1) as u64) << i;
    }
    v
}

fn set_bits(buf: &mut [u8], bit: usize, width: u8, v: u64) {
    for i in 0..width as usize {
        let at = bit + i;
        let m = 1u8 << (at % 8);
        if (v >> i) & 1 != 0 {
            buf[at / 8] |= m;
        } else {
            buf[at / 8] &= !m;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
