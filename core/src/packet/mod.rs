//! Command packets a GPU consumes: AQL (HSA queues), PM4 type-3 (compute/graphics rings) and SDMA.
//! One definition of each wire format serves the runtime side (emit) and the model (parse).
//!
//! Every format has a zero-copy view (`Packet<T: AsRef<[u8]>>`, length checked once in
//! `new_checked`, one getter and setter per field) and a validated value (`Repr`, with `parse`,
//! `emit` and `buffer_len`). A malformed packet is an [`Error`], never a panic: field accessors
//! read 0 and ignore writes outside the buffer rather than index out of bounds.
//!
//! All formats are little-endian, as the GPU reads them.

pub mod aql;
pub mod model_kernel;
pub mod pm4;
pub mod ring;
pub mod sdma;

use core::fmt;

/// Why a packet did not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The buffer is shorter than the packet's fixed or declared length.
    Truncated,
    /// The packet type, opcode or sub-opcode is not one this format defines (or not the one asked for).
    UnknownType,
    /// A length field (PM4 count, SDMA count) does not fit the opcode.
    BadLength,
    /// A field holds a reserved or out-of-range value.
    BadField,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Error::Truncated => "packet truncated",
            Error::UnknownType => "unknown packet type or opcode",
            Error::BadLength => "packet length does not fit its opcode",
            Error::BadField => "reserved or out-of-range field value",
        })
    }
}

pub type Result<T> = core::result::Result<T, Error>;

/// A bit field inside one little-endian dword: dword index, lowest bit, width in bits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bits {
    pub dw: usize,
    pub shift: u32,
    pub width: u32,
}

/// Bits `lo..=hi` of dword `dw`, written as the hardware documents number them.
pub(crate) const fn bits(dw: usize, lo: u32, hi: u32) -> Bits {
    Bits { dw, shift: lo, width: hi - lo + 1 }
}

/// The whole of dword `dw`.
pub(crate) const fn dword(dw: usize) -> Bits {
    Bits { dw, shift: 0, width: 32 }
}

impl Bits {
    const fn mask(self) -> u32 {
        if self.width >= 32 {
            u32::MAX
        } else {
            (1u32 << self.width) - 1
        }
    }
}

#[inline]
pub(crate) fn get_dword(buf: &[u8], dw: usize) -> u32 {
    match buf.get(dw * 4..dw * 4 + 4) {
        Some(b) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        None => 0,
    }
}

#[inline]
pub(crate) fn set_dword(buf: &mut [u8], dw: usize, value: u32) {
    if let Some(b) = buf.get_mut(dw * 4..dw * 4 + 4) {
        b.copy_from_slice(&value.to_le_bytes());
    }
}

#[inline]
pub(crate) fn get_bits(buf: &[u8], f: Bits) -> u32 {
    (get_dword(buf, f.dw) >> f.shift) & f.mask()
}

/// Replaces the field; bits of `value` beyond the field's width are dropped.
#[inline]
pub(crate) fn set_bits(buf: &mut [u8], f: Bits, value: u32) {
    let m = f.mask() << f.shift;
    let old = get_dword(buf, f.dw);
    set_dword(buf, f.dw, (old & !m) | ((value << f.shift) & m));
}

/// Whether `value` fits in the field (a `Repr` with a wider value does not emit).
#[inline]
pub(crate) const fn fits(f: Bits, value: u32) -> bool {
    value & !f.mask() == 0
}

/// A run of dwords carried by a packet (WRITE_DATA data, SET_SH_REG values, SDMA WRITE data):
/// either borrowed from parsed packet bytes or supplied by the caller as `u32`s.
#[derive(Debug, Clone, Copy)]
pub enum Dwords<'a> {
    /// Little-endian bytes, a multiple of 4 long (as parsed from a packet).
    Bytes(&'a [u8]),
    /// Host values (as a caller builds a packet).
    Words(&'a [u32]),
}

impl<'a> Dwords<'a> {
    pub fn len(&self) -> usize {
        match self {
            Dwords::Bytes(b) => b.len() / 4,
            Dwords::Words(w) => w.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The dword at `i`, `None` past the end.
    pub fn get(&self, i: usize) -> Option<u32> {
        match self {
            Dwords::Bytes(b) => b.get(i * 4..i * 4 + 4).map(|d| u32::from_le_bytes([d[0], d[1], d[2], d[3]])),
            Dwords::Words(w) => w.get(i).copied(),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.len()).map(move |i| self.get(i).unwrap_or(0))
    }
}

impl<'a> From<&'a [u32]> for Dwords<'a> {
    fn from(w: &'a [u32]) -> Self {
        Dwords::Words(w)
    }
}

impl<'a, const N: usize> From<&'a [u32; N]> for Dwords<'a> {
    fn from(w: &'a [u32; N]) -> Self {
        Dwords::Words(w)
    }
}

impl PartialEq for Dwords<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Dwords<'_> {}

/// One getter and one setter per bit field, from the field table of a `mod field`.
macro_rules! bit_accessors {
    ($( $(#[$m:meta])* $get:ident, $set:ident: $f:expr; )*) => {
        $(
            $(#[$m])*
            #[inline]
            pub fn $get(&self) -> u32 {
                $crate::packet::get_bits(self.buffer.as_ref(), $f)
            }

            #[inline]
            pub fn $set(&mut self, value: u32)
            where
                T: AsMut<[u8]>,
            {
                $crate::packet::set_bits(self.buffer.as_mut(), $f, value)
            }
        )*
    };
}
pub(crate) use bit_accessors;

/// A 64-bit address split over two dwords (lo at `lo`, hi at `lo + 1`).
#[inline]
pub(crate) fn get_u64(buf: &[u8], lo: usize) -> u64 {
    get_dword(buf, lo) as u64 | (get_dword(buf, lo + 1) as u64) << 32
}

#[inline]
pub(crate) fn set_u64(buf: &mut [u8], lo: usize, value: u64) {
    set_dword(buf, lo, value as u32);
    set_dword(buf, lo + 1, (value >> 32) as u32);
}
