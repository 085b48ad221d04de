//! Text parsers for topology files: the KFD `key value` properties format, single-number
//! files (`generation_id`, `gpu_id`), cache `sibling_map` lists and HSA_OVERRIDE_GFX_VERSION.
//!
//! Everything here works on borrowed bytes and allocates nothing. The parsers copy the
//! C library rules upstream relies on (`sscanf("%s %llu\n")`, `strtoull`, `isspace`), so
//! a tree the kernel wrote parses exactly as libhsakmt parses it.

/// C `isspace` in the "C" locale: what `%s`, `%u` and a format blank skip.
pub(crate) const fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// The text a C string function would see: everything before the first NUL.
pub(crate) fn c_str(bytes: &[u8]) -> &[u8] {
    // core's NUL search goes a word at a time (a byte loop here was most of the cost of
    // parsing a cache file).
    core::ffi::CStr::from_bytes_until_nul(bytes).map_or(bytes, |c| c.to_bytes())
}

fn skip_space(text: &[u8], mut pos: usize) -> usize {
    while text.get(pos).is_some_and(|&b| is_c_space(b)) {
        pos += 1;
    }
    pos
}

/// `strtoull`/`%llu` at `pos`: optional blanks, optional sign, at least one decimal digit.
/// Overflow saturates to `u64::MAX` (ERANGE); a leading '-' negates modulo 2^64, as C does.
/// Returns the value and the position after the last digit.
pub(crate) fn scan_u64(text: &[u8], pos: usize) -> Option<(u64, usize)> {
    let mut pos = skip_space(text, pos);
    let mut negative = false;
    match text.get(pos) {
        Some(b'+') => pos += 1,
        Some(b'-') => {
            negative = true;
            pos += 1;
        }
        _ => {}
    }
    let start = pos;
    let mut value: u64 = 0;
    let mut overflow = false;
    while let Some(&b) = text.get(pos) {
        if !b.is_ascii_digit() {
            break;
        }
        match value.checked_mul(10).and_then(|v| v.checked_add(u64::from(b - b'0'))) {
            Some(v) => value = v,
            None => overflow = true,
        }
        pos += 1;
    }
    if pos == start {
        return None;
    }
    let value = if overflow {
        u64::MAX
    } else if negative {
        value.wrapping_neg()
    } else {
        value
    };
    Some((value, pos))
}

/// `%u` into an `unsigned int`: glibc converts with the unsigned-long rules, then truncates.
pub(crate) fn scan_u32(text: &[u8], pos: usize) -> Option<(u32, usize)> {
    scan_u64(text, pos).map(|(v, p)| (v as u32, p))
}

/// A file holding one decimal number (`generation_id`, `gpu_id`, `shared_cpu_list`...),
/// read as `fscanf("%u")`: the first number after optional blanks, trailing text ignored.
pub fn parse_single_u32(text: &[u8]) -> Option<u32> {
    scan_u32(c_str(text), 0).map(|(v, _)| v)
}

/// Iterator over the `key value` pairs of a KFD properties file.
///
/// Upstream loops `sscanf(p, "%s %llu\n%n")` and stops at the first pair that does not
/// scan, so this does the same: a key is a run of non-blanks, the value a `%llu`, and
/// blanks (newlines included) separate everything. Text after the first bad pair is never
/// looked at; [`Props::malformed`] says whether iteration ended on such a pair rather than
/// at the end of the text. A NUL ends the text, as it ends upstream's C string.
#[derive(Clone, Debug)]
pub struct Props<'a> {
    text: &'a [u8],
    pos: usize,
    value_at: usize,
    malformed: bool,
    done: bool,
}

impl<'a> Props<'a> {
    /// Parse `text` (the bytes of one properties file).
    pub fn new(text: &'a [u8]) -> Self {
        Props { text: c_str(text), pos: 0, value_at: 0, malformed: false, done: false }
    }

    /// Whether iteration stopped at text that is not a `key value` pair (so the file was
    /// truncated or garbled from that point on).
    pub fn malformed(&self) -> bool {
        self.malformed
    }

    /// The text from the value of the last pair returned to the end of the file. Cache
    /// files end with `sibling_map 0,1,...`, which upstream reads from this point on.
    pub fn rest_from_value(&self) -> &'a [u8] {
        self.text.get(self.value_at..).unwrap_or(&[])
    }
}

impl<'a> Iterator for Props<'a> {
    type Item = (&'a [u8], u64);

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let text = self.text;
        let key_start = skip_space(text, self.pos);
        let mut key_end = key_start;
        while text.get(key_end).is_some_and(|&b| !is_c_space(b)) {
            key_end += 1;
        }
        if key_end == key_start {
            // %s hit the end of the text: the normal end of a file.
            self.done = true;
            return None;
        }
        let value_at = skip_space(text, key_end);
        let Some((value, after)) = scan_u64(text, value_at) else {
            self.done = true;
            self.malformed = true;
            return None;
        };
        self.value_at = value_at;
        // The "\n" of the format skips any run of blanks after the value.
        self.pos = skip_space(text, after);
        Some((text.get(key_start..key_end).unwrap_or(&[]), value))
    }
}

/// Fill `out` from a KFD `sibling_map` list (`1,0,0,...`), as upstream scans it with
/// `"%u%*[,\n]"`: each number goes to the next slot, a run of commas/newlines must follow
/// every number but the last, and anything else ends the list. Returns the slots written.
pub fn parse_sibling_list(text: &[u8], out: &mut [u32]) -> usize {
    let text = c_str(text);
    let mut pos = 0;
    let mut n = 0;
    while n < out.len() {
        // The kernel writes one digit per entry ("1,0,0,..."): eight bytes holding four
        // `digit,` entries are taken at once (a cache file has 256 entries, a big system
        // thousands of cache files), then any further separators, as the scanner would skip.
        if let (Some(w), Some(dst)) = (text.get(pos..pos + 8), out.get_mut(n..n + 4)) {
            if let Some(digits) = four_entries(w) {
                for (i, d) in dst.iter_mut().enumerate() {
                    *d = ((digits >> (16 * i)) & 0xff) as u32;
                }
                n += 4;
                pos += 8;
                while matches!(text.get(pos), Some(b',' | b'\n')) {
                    pos += 1;
                }
                continue;
            }
        }
        let Some((v, after)) = scan_u32(text, pos) else { break };
        out[n] = v;
        n += 1;
        let mut next = after;
        while matches!(text.get(next), Some(b',' | b'\n')) {
            next += 1;
        }
        if next == after {
            break;
        }
        pos = next;
    }
    n
}

/// Eight bytes that are `d,d,d,d,` (each `d` a decimal digit): the four digit values in the
/// low bytes of the 16-bit lanes, or None. Word arithmetic instead of eight compares: each
/// byte sits alone in a 16-bit lane, so adding to it never carries into the next one.
#[inline]
fn four_entries(w: &[u8]) -> Option<u64> {
    const LANES: u64 = 0x0001_0001_0001_0001;
    let x = u64::from_le_bytes(w.try_into().ok()?);
    let d = x & (0xff * LANES);
    let separators = x & (0xff00 * LANES) == 0x2c00 * LANES;
    // Bit 8 of a lane: set by +0xd0 iff the byte is >= '0', by +0xc6 iff it is > '9'.
    let at_least_0 = (d + 0xd0 * LANES) & (0x100 * LANES) == 0x100 * LANES;
    let above_9 = (d + 0xc6 * LANES) & (0x100 * LANES) != 0;
    (separators && at_least_0 && !above_9).then(|| d - 0x30 * LANES)
}

/// Why an HSA_OVERRIDE_GFX_VERSION value was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GfxOverrideError {
    /// Not exactly `<major>.<minor>.<stepping>` in decimal, with nothing after it.
    Format,
    /// major > 63, or minor or stepping > 255 (the widths of the EngineId bitfields).
    Range,
}

/// Parse an HSA_OVERRIDE_GFX_VERSION value the way upstream does with
/// `sscanf(s, "%u.%u.%u%c") == 3`: three decimal fields, blanks and a sign allowed before
/// each number (a '-' wraps, so "-1" ends up out of range), no trailing character at all,
/// then major <= 63 and minor, stepping <= 255. "9.0.10" is gfx90a.
pub fn parse_gfx_override(s: &str) -> Result<(u32, u32, u32), GfxOverrideError> {
    let text = c_str(s.as_bytes());
    let (major, p) = scan_u32(text, 0).ok_or(GfxOverrideError::Format)?;
    let p = expect_dot(text, p)?;
    let (minor, p) = scan_u32(text, p).ok_or(GfxOverrideError::Format)?;
    let p = expect_dot(text, p)?;
    let (stepping, p) = scan_u32(text, p).ok_or(GfxOverrideError::Format)?;
    if p != text.len() {
        // %c would have matched a fourth field.
        return Err(GfxOverrideError::Format);
    }
    if major > 63 || minor > 255 || stepping > 255 {
        return Err(GfxOverrideError::Range);
    }
    Ok((major, minor, stepping))
}

fn expect_dot(text: &[u8], pos: usize) -> Result<usize, GfxOverrideError> {
    match text.get(pos) {
        Some(b'.') => Ok(pos + 1),
        _ => Err(GfxOverrideError::Format),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_and_stop() {
        let mut p = Props::new(b"a 1\nbb 22\n\nc 3 d x\ne 5\n");
        assert_eq!(p.next(), Some((&b"a"[..], 1)));
        assert_eq!(p.next(), Some((&b"bb"[..], 22)));
        assert_eq!(p.next(), Some((&b"c"[..], 3)));
        assert_eq!(p.next(), None);
        assert!(p.malformed());
        let mut q = Props::new(b"a 1\n");
        assert_eq!(q.by_ref().count(), 1);
        assert!(!q.malformed());
    }

    #[test]
    fn numbers_like_strtoull() {
        assert_eq!(scan_u64(b"18446744073709551615", 0), Some((u64::MAX, 20)));
        assert_eq!(scan_u64(b"99999999999999999999", 0), Some((u64::MAX, 20)));
        assert_eq!(scan_u64(b" -1", 0), Some((u64::MAX, 3)));
        assert_eq!(scan_u64(b"+7x", 0), Some((7, 2)));
        assert_eq!(scan_u64(b"-", 0), None);
        assert_eq!(parse_single_u32(b"\n 42\n"), Some(42));
        assert_eq!(parse_single_u32(b""), None);
    }

    #[test]
    fn siblings() {
        let mut out = [9u32; 4];
        assert_eq!(parse_sibling_list(b"1,0,\n1,1,1", &mut out), 4);
        assert_eq!(out, [1, 0, 1, 1]);
        let mut out = [9u32; 4];
        assert_eq!(parse_sibling_list(b"1 0", &mut out), 1);
        assert_eq!(out, [1, 9, 9, 9]);
    }

    /// The one-digit fast path gives what the general scanner gives, on lists mixing one-digit
    /// entries with long numbers, signs, blanks, NULs and stray characters.
    #[test]
    fn sibling_fast_path_matches_the_scanner() {
        fn reference(text: &[u8], out: &mut [u32]) -> usize {
            let text = c_str(text);
            let (mut pos, mut n) = (0, 0);
            for slot in out.iter_mut() {
                let Some((v, after)) = scan_u32(text, pos) else { break };
                *slot = v;
                n += 1;
                let mut next = after;
                while matches!(text.get(next), Some(b',' | b'\n')) {
                    next += 1;
                }
                if next == after {
                    break;
                }
                pos = next;
            }
            n
        }
        const PIECES: &[&[u8]] = &[
            b"0,",
            b"1,",
            b"0,1,0,0,",
            b"1,1,1,1,1,",
            b"0",
            b"1",
            b"7",
            b"12",
            b"4294967297",
            b"-1",
            b"+3",
            b" 5",
            b",",
            b",,",
            b"\n",
            b" ",
            b"x",
            b"\0",
            b"9",
            b"/,",
            b":,",
            b"0+",
            b"0-",
            b"\xb0,",
            b"\xff,",
        ];
        let mut x: u32 = 0x2545_f491;
        let mut long = 0;
        for round in 0..20_000u32 {
            let mut text = alloc::vec::Vec::new();
            for _ in 0..(round % 40) {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                // Mostly well-formed entries, so long lists occur.
                let i = if x % 8 < 7 { (x as usize >> 3) % 4 } else { (x as usize >> 3) % PIECES.len() };
                text.extend_from_slice(PIECES[i]);
            }
            let (mut a, mut b) = ([0xaau32; 23], [0xaau32; 23]);
            let n = parse_sibling_list(&text, &mut a);
            assert_eq!(n, reference(&text, &mut b), "{:?}", alloc::string::String::from_utf8_lossy(&text));
            long += usize::from(n >= 12);
            assert_eq!(a, b, "{:?}", alloc::string::String::from_utf8_lossy(&text));
        }
        assert!(long > 1000, "long lists exercise the 4-entry path: {long}");
    }

    #[test]
    fn gfx_override() {
        assert_eq!(parse_gfx_override("9.0.10"), Ok((9, 0, 10)));
        assert_eq!(parse_gfx_override("11.0.0"), Ok((11, 0, 0)));
        assert_eq!(parse_gfx_override(" +9. 4.2"), Ok((9, 4, 2)));
        assert_eq!(parse_gfx_override("-0.0.0"), Ok((0, 0, 0)));
        assert_eq!(parse_gfx_override("9.0"), Err(GfxOverrideError::Format));
        assert_eq!(parse_gfx_override("9.0.10x"), Err(GfxOverrideError::Format));
        assert_eq!(parse_gfx_override("9.0.10 "), Err(GfxOverrideError::Format));
        assert_eq!(parse_gfx_override("9.0.a"), Err(GfxOverrideError::Format));
        assert_eq!(parse_gfx_override("9 .0.1"), Err(GfxOverrideError::Format));
        assert_eq!(parse_gfx_override(""), Err(GfxOverrideError::Format));
        assert_eq!(parse_gfx_override("64.0.0"), Err(GfxOverrideError::Range));
        assert_eq!(parse_gfx_override("9.256.0"), Err(GfxOverrideError::Range));
        assert_eq!(parse_gfx_override("-1.0.0"), Err(GfxOverrideError::Range));
    }
}
