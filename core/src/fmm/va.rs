//! The VA range allocator: the live ranges and free holes of one aperture `[base, limit]`.
//! Pure bookkeeping (no mmap, no I/O); the FMM asks it for addresses and hands them back.
//!
//! Layout. Every allocation owns a *block* `[start - before, start + size + after)`: the range
//! the caller uses plus guard pages that nobody else may get, so a GPU (or CPU) access running
//! off the end of a buffer faults instead of landing in a neighbour. [`VaAllocator::alloc`] puts
//! guards on both sides; upstream's reserved apertures put them only after each object (the
//! previous object's trailing guard protects the next one's start), which [`reserved_request`]
//! reproduces. The blocks and the free *holes* tile the aperture exactly; holes are kept
//! coalesced (no two holes touch), so a free hole is always as large as it can be.
//!
//! Indexes, all `BTreeMap`/`BTreeSet` (O(log n) per operation, nothing allocated on lookup):
//! * `live`: allocation start → (size, guard), for `free` and `lookup`;
//! * `holes`: hole start → hole end, for coalescing and fixed-address allocation;
//! * `by_size`: (hole length, hole start), for best-fit placement.
//!
//! Placement is best fit: the smallest hole that can hold the block, the lowest address
//! among equal sizes, carved from the hole's low end. In a fresh aperture this is upstream's
//! bottom-up first fit (each allocation lands right above the previous one); after frees it
//! reuses the tightest hole, which fragments less.

use alloc::collections::{BTreeMap, BTreeSet};

/// Why the allocator refused a request. The allocator is unchanged after any error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VaError {
    /// `new`: base > limit, base or limit + 1 not page aligned, a page size that is not a
    /// power of two, or an aperture reaching the last page of the 64-bit space.
    BadAperture,
    /// Size 0, or not a multiple of the page size.
    BadSize,
    /// Alignment not a power of two.
    BadAlignment,
    /// A fixed address that is not page aligned.
    Unaligned,
    /// No hole can hold the block (size + guards + alignment).
    NoSpace,
    /// A fixed-address block (with its guards) leaves the aperture.
    OutOfAperture,
    /// A fixed-address block (with its guards) overlaps a live block.
    Overlap,
}

/// How to place one allocation (the general form of [`VaAllocator::alloc`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// Bytes; a non-zero multiple of the page size.
    pub size: u64,
    /// A power of two. Anything below the page size means "page aligned".
    pub align: u64,
    /// Guard pages reserved below the range, released with it.
    pub guard_before: u32,
    /// Guard pages reserved above the range, released with it.
    pub guard_after: u32,
    /// Align the *end* (`start + size`) instead of the start. Upstream's reserved apertures
    /// do this when the caller asked for no particular alignment: for the GPU's TLB
    /// fragment optimisation an aligned end is as good as an aligned start, and some older
    /// GPUs needed it.
    pub align_end: bool,
}

impl Request {
    /// A start-aligned request with `guard_pages` guard pages on each side.
    pub const fn new(size: u64, align: u64, guard_pages: u32) -> Self {
        Request { size, align, guard_before: guard_pages, guard_after: guard_pages, align_end: false }
    }
}

/// One live allocation; guards in bytes.
#[derive(Clone, Copy, Debug)]
struct Live {
    size: u64,
    before: u64,
    after: u64,
}

/// How many of the tightest holes are tried one by one before jumping to the smallest hole
/// that surely fits. With alignment above the page size a hole only slightly larger than
/// the block may still fit, depending on where it starts; trying a few keeps best fit
/// tight without turning a request into a scan.
const PROBE: usize = 8;

/// A VA allocator over one aperture. See the module documentation.
#[derive(Clone, Debug)]
pub struct VaAllocator {
    base: u64,
    /// One past the last byte (`limit + 1`); `new` guarantees it fits in a u64.
    end: u64,
    page: u64,
    live: BTreeMap<u64, Live>,
    holes: BTreeMap<u64, u64>,
    by_size: BTreeSet<(u64, u64)>,
    free_bytes: u64,
}

impl VaAllocator {
    /// An empty allocator over `[base, limit]` (inclusive, as the KFD reports apertures)
    /// with `page_size` granularity. Base and limit + 1 must be page aligned.
    pub fn new(base: u64, limit: u64, page_size: u64) -> Result<Self, VaError> {
        if !page_size.is_power_of_two() || base > limit {
            return Err(VaError::BadAperture);
        }
        // Keeping `end` representable lets every block be a plain half-open [start, end).
        let end = limit.checked_add(1).ok_or(VaError::BadAperture)?;
        if base & (page_size - 1) != 0 || end & (page_size - 1) != 0 {
            return Err(VaError::BadAperture);
        }
        let mut a = VaAllocator {
            base,
            end,
            page: page_size,
            live: BTreeMap::new(),
            holes: BTreeMap::new(),
            by_size: BTreeSet::new(),
            free_bytes: 0,
        };
        a.add_hole(base, end);
        Ok(a)
    }

    /// First byte of the aperture.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Last byte of the aperture (inclusive).
    pub fn limit(&self) -> u64 {
        self.end - 1
    }

    /// The allocation granularity.
    pub fn page_size(&self) -> u64 {
        self.page
    }

    /// Whether `addr` lies in the aperture (allocated or not).
    pub fn contains(&self, addr: u64) -> bool {
        (self.base..self.end).contains(&addr)
    }

    /// Number of live allocations.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// True when nothing is allocated.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// Bytes in holes (everything not covered by an allocation or its guard pages).
    pub fn free_bytes(&self) -> u64 {
        self.free_bytes
    }

    /// The largest hole's length (0 when the aperture is full).
    pub fn largest_hole(&self) -> u64 {
        self.by_size.last().map_or(0, |&(len, _)| len)
    }

    /// Allocate `size` bytes aligned to `align` with `guard_pages` guard pages on each side;
    /// returns the start. O(log n).
    pub fn alloc(&mut self, size: u64, align: u64, guard_pages: u32) -> Result<u64, VaError> {
        self.alloc_with(Request::new(size, align, guard_pages))
    }

    /// Allocate per `req`; returns the start. O(log n): the 8 tightest candidate holes,
    /// then the smallest hole that fits whatever its start; only when neither exists are the
    /// remaining near-fits examined (a nearly full aperture with a large alignment).
    pub fn alloc_with(&mut self, req: Request) -> Result<u64, VaError> {
        self.check_size(req.size)?;
        if !req.align.is_power_of_two() {
            return Err(VaError::BadAlignment);
        }
        let align = req.align.max(self.page);
        let (before, after) = self.guards(req)?;
        // The residue the start must have modulo `align`: 0, or what puts the end on a boundary.
        let phase = if req.align_end { align.wrapping_sub(req.size) & (align - 1) } else { 0 };
        let need = req.size.checked_add(before + after).ok_or(VaError::NoSpace)?;
        // A hole this long fits whatever its start: aligning a page-aligned start wastes at
        // most align - page bytes. Saturating: beyond u64 no hole is that long anyway.
        let sure = need.saturating_add(align - self.page);

        let fit = |start: u64, len: u64| place(start, start + len, req.size, before, after, align, phase);
        let mut candidates = self.by_size.range((need, 0)..);
        let mut found = None;
        for &(len, start) in candidates.by_ref().take(PROBE) {
            if let Some(s) = fit(start, len) {
                found = Some((start, s));
                break;
            }
        }
        if found.is_none() {
            if let Some(&(len, start)) = self.by_size.range((sure, 0)..).next() {
                found = fit(start, len).map(|s| (start, s));
            }
        }
        if found.is_none() {
            found = candidates.take_while(|&&(len, _)| len < sure).find_map(|&(len, start)| fit(start, len).map(|s| (start, s)));
        }
        let (hole, start) = found.ok_or(VaError::NoSpace)?;
        self.carve(hole, start, Live { size: req.size, before, after });
        Ok(start)
    }

    /// Allocate exactly `[addr, addr + size)` with `guard_pages` guard pages on each side,
    /// which must all be free and inside the aperture. O(log n).
    pub fn alloc_at(&mut self, addr: u64, size: u64, guard_pages: u32) -> Result<u64, VaError> {
        self.alloc_at_with(addr, Request::new(size, 1, guard_pages))
    }

    /// Allocate exactly at `addr` with `req`'s size and guards (its alignment and `align_end`
    /// are not used: a fixed address only needs to be page aligned). O(log n).
    pub fn alloc_at_with(&mut self, addr: u64, req: Request) -> Result<u64, VaError> {
        self.check_size(req.size)?;
        if addr & (self.page - 1) != 0 {
            return Err(VaError::Unaligned);
        }
        let (before, after) = self.guards(req)?;
        let lo = addr.checked_sub(before).filter(|&lo| lo >= self.base).ok_or(VaError::OutOfAperture)?;
        let hi =
            addr.checked_add(req.size).and_then(|e| e.checked_add(after)).filter(|&hi| hi <= self.end).ok_or(VaError::OutOfAperture)?;
        // The only hole that can contain [lo, hi) is the last one starting at or below lo.
        match self.holes.range(..=lo).next_back() {
            Some((&start, &end)) if end >= hi => {
                self.carve(start, addr, Live { size: req.size, before, after });
                Ok(addr)
            }
            _ => Err(VaError::Overlap),
        }
    }

    /// Release the allocation starting exactly at `addr` (with its guard pages); returns its
    /// size. Any other address — inside a range, a guard page, already freed — is `None` and
    /// changes nothing, so double frees are caught. O(log n).
    pub fn free(&mut self, addr: u64) -> Option<u64> {
        let Live { size, before, after } = self.live.remove(&addr)?;
        let mut lo = addr - before;
        let mut hi = addr + size + after;
        // Coalesce with the hole just below and the hole just above, if they touch.
        if let Some((&p_start, &p_end)) = self.holes.range(..lo).next_back() {
            if p_end == lo {
                self.remove_hole(p_start, p_end);
                lo = p_start;
            }
        }
        if let Some(&n_end) = self.holes.get(&hi) {
            self.remove_hole(hi, n_end);
            hi = n_end;
        }
        self.add_hole(lo, hi);
        Some(size)
    }

    /// The live allocation containing `addr`: `(start, size)`. Guard pages belong to no
    /// allocation. O(log n), allocation-free.
    pub fn lookup(&self, addr: u64) -> Option<(u64, u64)> {
        let (&start, live) = self.live.range(..=addr).next_back()?;
        (addr - start < live.size).then_some((start, live.size))
    }

    /// The size of the allocation starting exactly at `addr`.
    pub fn size_of(&self, addr: u64) -> Option<u64> {
        self.live.get(&addr).map(|l| l.size)
    }

    /// Live allocations `(start, size)` in address order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.live.iter().map(|(&s, l)| (s, l.size))
    }

    /// Free holes `(start, end)` (end exclusive) in address order.
    pub fn holes(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.holes.iter().map(|(&s, &e)| (s, e))
    }

    /// Release everything (process teardown).
    pub fn clear(&mut self) {
        self.live.clear();
        self.holes.clear();
        self.by_size.clear();
        self.free_bytes = 0;
        self.add_hole(self.base, self.end);
    }

    /// Check the structure: blocks and holes tile the aperture in order without overlap, no
    /// two holes touch, the size index mirrors the holes, the free-byte count is right and
    /// every range is page aligned. O(n); for tests and fuzzing.
    pub fn check_invariants(&self) -> Result<(), &'static str> {
        // Wrapping arithmetic: a corrupted entry must be reported, not panic the checker.
        let mut blocks =
            self.live.iter().map(|(&s, l)| (s.wrapping_sub(l.before), s.wrapping_add(l.size).wrapping_add(l.after), false)).peekable();
        let mut holes = self.holes.iter().map(|(&s, &e)| (s, e, true)).peekable();
        let mut cursor = self.base;
        let mut prev_hole = false;
        let mut free = 0u64;
        loop {
            // Merge the two address-ordered streams.
            let next = match (blocks.peek(), holes.peek()) {
                (Some(b), Some(h)) if b.0 < h.0 => blocks.next(),
                (Some(_), Some(_)) | (None, Some(_)) => holes.next(),
                (Some(_), None) => blocks.next(),
                (None, None) => break,
            };
            let Some((start, end, is_hole)) = next else { break };
            if start != cursor {
                return Err(if start < cursor { "ranges overlap" } else { "gap not covered by a hole or a block" });
            }
            if end <= start {
                return Err("empty or inverted range");
            }
            if (start | end) & (self.page - 1) != 0 {
                return Err("range not page aligned");
            }
            if is_hole {
                if prev_hole {
                    return Err("two adjacent holes (not coalesced)");
                }
                if !self.by_size.contains(&(end - start, start)) {
                    return Err("hole missing from the size index");
                }
                free += end - start;
            }
            prev_hole = is_hole;
            cursor = end;
        }
        if cursor != self.end {
            return Err("aperture tail not covered");
        }
        if self.by_size.len() != self.holes.len() {
            return Err("size index has stale entries");
        }
        if free != self.free_bytes {
            return Err("free byte count drifted");
        }
        if self.live.values().any(|l| l.size == 0) {
            return Err("zero-sized allocation");
        }
        Ok(())
    }

    fn check_size(&self, size: u64) -> Result<(), VaError> {
        if size == 0 || size & (self.page - 1) != 0 {
            return Err(VaError::BadSize);
        }
        Ok(())
    }

    /// Guard bytes (before, after). Both together must fit in a u64; guards that large can never
    /// be placed anyway, so overflow is "no space".
    fn guards(&self, req: Request) -> Result<(u64, u64), VaError> {
        let before = u64::from(req.guard_before).checked_mul(self.page).ok_or(VaError::NoSpace)?;
        let after = u64::from(req.guard_after).checked_mul(self.page).ok_or(VaError::NoSpace)?;
        before.checked_add(after).ok_or(VaError::NoSpace)?;
        Ok((before, after))
    }

    /// Take the block of `live` starting (for the caller) at `start` out of the hole beginning
    /// at `hole`, leaving the pieces on either side as holes. The caller has checked the fit.
    fn carve(&mut self, hole: u64, start: u64, live: Live) {
        let hole_end = self.holes.get(&hole).copied().unwrap_or(hole);
        self.remove_hole(hole, hole_end);
        let (lo, hi) = (start - live.before, start + live.size + live.after);
        if hole < lo {
            self.add_hole(hole, lo);
        }
        if hi < hole_end {
            self.add_hole(hi, hole_end);
        }
        self.live.insert(start, live);
    }

    fn add_hole(&mut self, start: u64, end: u64) {
        self.holes.insert(start, end);
        self.by_size.insert((end - start, start));
        self.free_bytes += end - start;
    }

    fn remove_hole(&mut self, start: u64, end: u64) {
        self.holes.remove(&start);
        self.by_size.remove(&(end - start, start));
        self.free_bytes -= end - start;
    }
}

/// Where a block fits in the hole `[hole_start, hole_end)`: the lowest start `s` with
/// `s ≡ phase (mod align)`, `before` bytes of room below and `size + after` above. All checked.
fn place(hole_start: u64, hole_end: u64, size: u64, before: u64, after: u64, align: u64, phase: u64) -> Option<u64> {
    let lo = hole_start.checked_add(before)?;
    let s = lo.checked_add(phase.wrapping_sub(lo) & (align - 1))?;
    let end = s.checked_add(size)?.checked_add(after)?;
    (end <= hole_end).then_some(s)
}

/// Upstream's rule for big buffers: double `align` while it is below `cap` and the buffer is
/// at least twice as large, so big buffers start on big boundaries and the GPU can use large
/// TLB fragments. `align` is a power of two; the result is too (or `align` unchanged, 0 included).
pub fn grow_alignment(size: u64, mut align: u64, cap: u64) -> u64 {
    // 0 would double to 0 forever.
    while align != 0 && align < cap {
        match align.checked_mul(2) {
            Some(next) if size >= next => align = next,
            _ => break,
        }
    }
    align
}

/// The alignment of an allocation in an SVM aperture the kernel places (upstream's mmap
/// apertures, the 47-bit default): start at the page size and grow up to
/// `page_size << max_va_align_order` (`HSA_MAX_VA_ALIGN`; order 9 is 2 MiB with 4 KiB pages).
pub fn default_alignment(size: u64, page_size: u64, max_va_align_order: u32) -> u64 {
    let cap = page_size.checked_shl(max_va_align_order).filter(|c| c >> max_va_align_order == page_size).unwrap_or(1 << 63);
    grow_alignment(size, page_size, cap)
}

/// The default `HSA_MAX_VA_ALIGN` order. Upstream uses 18 (1 GiB with 4 KiB pages) when every
/// topology node is gfx950 and 9 (2 MiB) otherwise; it asks every node, CPU nodes included
/// (their gfx version is 0), so any system with a CPU node gets 9. `node_gfx_versions` is the
/// full gfx version (`major << 16 | minor << 8 | stepping`) of every node.
pub fn default_max_va_align_order(node_gfx_versions: impl IntoIterator<Item = u32>) -> u32 {
    const GFX950: u32 = 0x09_05_00;
    if node_gfx_versions.into_iter().all(|v| v == GFX950) {
        18
    } else {
        9
    }
}

/// The request upstream makes of a *reserved* aperture (one the thunk manages itself:
/// `HSA_RESERVE_SVM`, GPUs with less than 47 bits of VA, per-GPU GPUVM apertures).
/// `requested_align` 0 means the aperture's own alignment. The alignment is at least the
/// aperture's and grows up to [`GPU_HUGE_PAGE_SIZE`](super::GPU_HUGE_PAGE_SIZE) for big
/// buffers; when the caller asked for at most page alignment the end is aligned instead of
/// the start. Guard pages follow the object only.
pub fn reserved_request(size: u64, requested_align: u64, aperture_align: u64, page_size: u64, guard_pages: u32) -> Request {
    let orig = if requested_align == 0 { aperture_align } else { requested_align };
    let align = grow_alignment(size, orig.max(aperture_align), super::GPU_HUGE_PAGE_SIZE);
    Request { size, align, guard_before: 0, guard_after: guard_pages, align_end: orig <= page_size }
}
