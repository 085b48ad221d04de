//! Page-granular offset allocator for a process's arena of the device file: best fit over the
//! free ranges (O(log n)), coalescing on free, and a bump pointer that shrinks back when the
//! topmost range is freed.

use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Default)]
pub(crate) struct RangeAlloc {
    limit: u64,
    top: u64,
    by_start: BTreeMap<u64, u64>,
    by_len: BTreeSet<(u64, u64)>,
}

impl RangeAlloc {
    /// Offsets `[0, limit)`.
    pub(crate) fn new(limit: u64) -> RangeAlloc {
        RangeAlloc { limit, ..RangeAlloc::default() }
    }

    /// A range of `len` bytes (`len` > 0, a multiple of the granule the caller uses).
    pub(crate) fn alloc(&mut self, len: u64) -> Option<u64> {
        if len == 0 {
            return None;
        }
        if let Some(&(flen, start)) = self.by_len.range((len, 0)..).next() {
            self.by_len.remove(&(flen, start));
            self.by_start.remove(&start);
            if flen > len {
                self.insert(start + len, flen - len);
            }
            return Some(start);
        }
        let start = self.top;
        let end = start.checked_add(len).filter(|e| *e <= self.limit)?;
        self.top = end;
        Some(start)
    }

    /// Return `[start, start + len)`.
    pub(crate) fn free(&mut self, mut start: u64, mut len: u64) {
        if len == 0 {
            return;
        }
        if let Some((&ps, &pl)) = self.by_start.range(..start).next_back() {
            if ps + pl == start {
                self.remove(ps, pl);
                start = ps;
                len += pl;
            }
        }
        if let Some(&nl) = self.by_start.get(&(start + len)) {
            self.remove(start + len, nl);
            len += nl;
        }
        if start + len == self.top {
            self.top = start;
        } else {
            self.insert(start, len);
        }
    }

    fn insert(&mut self, start: u64, len: u64) {
        self.by_start.insert(start, len);
        self.by_len.insert((len, start));
    }

    fn remove(&mut self, start: u64, len: u64) {
        self.by_start.remove(&start);
        self.by_len.remove(&(len, start));
    }

    /// Nothing allocated.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.top == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_fit_coalesce_and_shrink() {
        let mut a = RangeAlloc::new(1 << 20);
        let x = a.alloc(4096).unwrap();
        let y = a.alloc(8192).unwrap();
        let z = a.alloc(4096).unwrap();
        assert_eq!((x, y, z), (0, 4096, 12288));
        a.free(y, 8192);
        assert_eq!(a.alloc(4096), Some(4096), "best fit reuses the hole");
        a.free(4096, 4096);
        a.free(x, 4096);
        a.free(z, 4096);
        assert!(a.is_empty(), "everything coalesced back into the bump pointer");
        assert_eq!(a.alloc(1 << 20), Some(0));
        assert_eq!(a.alloc(4096), None, "full");
        assert_eq!(a.alloc(0), None);
    }
}
