//! The buffer-object table: every BO the thunk knows (allocated, registered, imported), keyed by
//! GPU address, found by any address inside it — or, for a user pointer, inside its CPU range.
//!
//! A BO occupies `[start, start + size)` of GPU VA; those ranges never overlap (they come from
//! the VA allocator or the kernel's mmap). A registered user pointer also has a CPU range, the
//! memory the user handed in; upstream lets two registrations' CPU ranges overlap (each gets its
//! own BO and GPU range), so the CPU index is a multiset. The key fields are private, so a
//! `&mut Bo` from the table cannot break the indexes.
//!
//! Lookups are O(log n) and allocate nothing. A CPU-address lookup is O(log n + k), where k is
//! the number of user pointers starting within one largest-registration length below the address
//! (1 when registrations do not overlap).

use crate::abi::hsakmt::{
    HsaMemFlags, HsaPointerInfo, HSA_POINTER_ALLOCATED, HSA_POINTER_REGISTERED_GRAPHICS, HSA_POINTER_REGISTERED_SHARED,
    HSA_POINTER_REGISTERED_USER, HSA_POINTER_RESERVED_ADDR, HSA_POINTER_TYPE,
};
use alloc::boxed::Box;
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;
use core::ffi::c_void;
use core::fmt;
use zerocopy::FromZeros;

/// How a BO came to be; decides its `HsaPointerInfo` type and whether Deregister applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BoKind {
    /// AllocMemory (VRAM, GTT, doorbell, MMIO): memory the KFD allocated.
    Allocated,
    /// AllocMemory with `OnlyAddress`: a VA range with no memory behind it yet.
    Reserved,
    /// RegisterMemory*: a user pointer (the KFD's USERPTR BO over user pages).
    Userptr,
    /// RegisterSharedHandle*: a BO exported by another process (IPC).
    IpcImport,
    /// The handle API's import of a dma-buf.
    DmabufImport,
    /// RegisterGraphicsHandleToNodes: a graphics (dma-buf) BO with its metadata.
    Graphics,
}

impl BoKind {
    /// The `HsaPointerInfo.Type` upstream reports.
    pub const fn pointer_type(self) -> HSA_POINTER_TYPE {
        match self {
            BoKind::Allocated => HSA_POINTER_ALLOCATED,
            BoKind::Reserved => HSA_POINTER_RESERVED_ADDR,
            BoKind::Userptr => HSA_POINTER_REGISTERED_USER,
            BoKind::IpcImport | BoKind::DmabufImport => HSA_POINTER_REGISTERED_SHARED,
            BoKind::Graphics => HSA_POINTER_REGISTERED_GRAPHICS,
        }
    }

    /// Whether DeregisterMemory releases it (registrations and imports) rather than FreeMemory.
    pub const fn is_registration(self) -> bool {
        matches!(self, BoKind::Userptr | BoKind::IpcImport | BoKind::DmabufImport | BoKind::Graphics)
    }
}

/// A small ordered set of node ids: insertion order is kept because `HsaPointerInfo` hands the
/// array out as is (upstream appends newly mapped nodes and removes unmapped ones in place).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeList(Vec<u32>);

impl NodeList {
    pub const fn new() -> Self {
        NodeList(Vec::new())
    }

    /// Add `id` if absent; true if added.
    pub fn insert(&mut self, id: u32) -> bool {
        if self.0.contains(&id) {
            return false;
        }
        self.0.push(id);
        true
    }

    /// Remove `id` if present, keeping the others' order; true if removed.
    pub fn remove(&mut self, id: u32) -> bool {
        match self.0.iter().position(|&n| n == id) {
            Some(i) => {
                self.0.remove(i);
                true
            }
            None => false,
        }
    }

    /// Replace the contents (duplicates dropped, first occurrence kept).
    pub fn set(&mut self, ids: &[u32]) {
        self.0.clear();
        for &id in ids {
            self.insert(id);
        }
    }

    pub fn contains(&self, id: u32) -> bool {
        self.0.contains(&id)
    }

    pub fn as_slice(&self) -> &[u32] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn clear(&mut self) {
        self.0.clear()
    }
}

/// One buffer object.
#[derive(Clone)]
pub struct Bo {
    start: u64,
    size: u64,
    /// The user's CPU range (address, bytes) of a registered user pointer; any alignment.
    userptr: Option<(u64, u64)>,
    pub kind: BoKind,
    /// The allocation flags as the caller gave them (not the ioctl flags).
    pub flags: HsaMemFlags,
    /// The node the memory was allocated on (`HsaPointerInfo.Node`).
    pub node_id: u32,
    /// KFD handles: `(gpu_id, handle)`. Usually one, from the allocating GPU; a user pointer
    /// larger than the KFD's largest single BO has several (chunks), and a BO imported on more
    /// than one GPU one per GPU. The first is the BO's primary handle.
    pub handles: Vec<(u32, u64)>,
    /// Nodes named at registration (`HsaPointerInfo.RegisteredNodes`).
    pub registered_nodes: NodeList,
    /// Nodes the BO is mapped on (`HsaPointerInfo.MappedNodes`).
    pub mapped_nodes: NodeList,
    /// The same user range may be registered again; it is released at the last deregistration.
    pub registration_count: u32,
    /// Upstream counts maps of user pointers the same way.
    pub mapping_count: u32,
    /// SetMemoryUserData's value.
    pub user_data: u64,
    /// The offset to mmap the BO at (from ALLOC_MEMORY_OF_GPU), for CPU mapping.
    pub mmap_offset: u64,
    /// A graphics import's metadata (empty otherwise).
    pub metadata: Vec<u8>,
}

impl fmt::Debug for Bo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bo")
            .field("start", &format_args!("{:#x}", self.start))
            .field("size", &format_args!("{:#x}", self.size))
            .field("userptr", &self.userptr)
            .field("kind", &self.kind)
            .field("flags", &format_args!("{:#x}", self.flags.Value))
            .field("node_id", &self.node_id)
            .field("handles", &self.handles)
            .field("registered_nodes", &self.registered_nodes)
            .field("mapped_nodes", &self.mapped_nodes)
            .field("user_data", &self.user_data)
            .finish_non_exhaustive()
    }
}

impl Bo {
    /// A BO over `[start, start + size)` of GPU VA; everything else empty.
    pub fn new(kind: BoKind, start: u64, size: u64, flags: HsaMemFlags, node_id: u32) -> Self {
        Bo {
            start,
            size,
            userptr: None,
            kind,
            flags,
            node_id,
            handles: Vec::new(),
            registered_nodes: NodeList::new(),
            mapped_nodes: NodeList::new(),
            registration_count: 0,
            mapping_count: 0,
            user_data: 0,
            mmap_offset: 0,
            metadata: Vec::new(),
        }
    }

    /// Attach the user's CPU range (for [`BoKind::Userptr`]); the table indexes it.
    pub fn with_userptr(mut self, cpu_addr: u64, cpu_size: u64) -> Self {
        self.userptr = Some((cpu_addr, cpu_size));
        self
    }

    /// Add a KFD handle.
    pub fn with_handle(mut self, gpu_id: u32, handle: u64) -> Self {
        self.handles.push((gpu_id, handle));
        self
    }

    /// First byte of GPU VA.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// GPU VA bytes (page aligned).
    pub fn size(&self) -> u64 {
        self.size
    }

    /// One past the last byte of GPU VA (saturating: a BO outside the table may hold anything).
    pub fn end(&self) -> u64 {
        self.start.saturating_add(self.size)
    }

    /// Whether `addr` is inside the GPU range.
    pub fn contains(&self, addr: u64) -> bool {
        addr >= self.start && addr - self.start < self.size
    }

    /// The registered user range `(address, bytes)`, if any.
    pub fn userptr(&self) -> Option<(u64, u64)> {
        self.userptr
    }

    /// The CPU address upstream reports: the user pointer for registrations, the BO's own address
    /// for allocations (the same VA serves CPU and GPU), none (0) for imports and reservations.
    pub fn cpu_address(&self) -> u64 {
        match (self.kind, self.userptr) {
            (BoKind::Userptr, Some((a, _))) => a,
            (BoKind::Allocated, _) => self.start,
            _ => 0,
        }
    }

    /// The handle for `gpu_id` (the first one recorded for it).
    pub fn handle(&self, gpu_id: u32) -> Option<u64> {
        self.handles.iter().find(|&&(g, _)| g == gpu_id).map(|&(_, h)| h)
    }

    /// The primary handle (the allocating GPU's).
    pub fn primary_handle(&self) -> Option<u64> {
        self.handles.first().map(|&(_, h)| h)
    }

    /// Fill `HsaPointerInfo` as upstream's QueryPointerInfo does. For a user pointer the size is
    /// the user's, and the GPU address carries the user pointer's offset into its page. The node
    /// arrays point into this BO (valid until it changes); empty ones are null.
    pub fn pointer_info(&self, page_size: u64) -> HsaPointerInfo {
        let mut info = HsaPointerInfo::new_zeroed();
        info.Type = self.kind.pointer_type();
        info.Node = self.node_id;
        info.MemFlags = self.flags;
        info.GPUAddress = self.start;
        info.SizeInBytes = self.size;
        info.CPUAddress = self.cpu_address() as usize as *mut c_void;
        if let (BoKind::Userptr, Some((addr, size))) = (self.kind, self.userptr) {
            info.SizeInBytes = size;
            info.GPUAddress = self.start.wrapping_add(addr & page_size.wrapping_sub(1));
        }
        let arr = |l: &NodeList| if l.is_empty() { core::ptr::null() } else { l.as_slice().as_ptr() };
        info.NRegisteredNodes = self.registered_nodes.len() as u32;
        info.RegisteredNodes = arr(&self.registered_nodes);
        info.NMappedNodes = self.mapped_nodes.len() as u32;
        info.MappedNodes = arr(&self.mapped_nodes);
        info.UserData = self.user_data as usize as *mut c_void;
        info
    }
}

/// Why the table refused a BO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoError {
    /// Size 0, or a range that wraps past 2^64 (GPU or CPU).
    BadRange,
    /// The GPU range overlaps a BO already in the table.
    Overlap,
}

/// The table. See the module documentation.
#[derive(Clone, Debug, Default)]
pub struct BoTable {
    /// Boxed: the tree's nodes hold keys and pointers only, so a lookup among 10k BOs walks
    /// a few hundred KiB of nodes instead of BOs stored inline (2 MB), and stays in cache.
    by_gpu: BTreeMap<u64, Box<Bo>>,
    /// User pointers: (cpu address, cpu size, gpu start).
    by_cpu: BTreeSet<(u64, u64, u64)>,
    /// Multiset of user-pointer sizes, for the longest one (bounds CPU-address lookups).
    cpu_sizes: BTreeMap<u64, u32>,
}

impl BoTable {
    pub const fn new() -> Self {
        BoTable { by_gpu: BTreeMap::new(), by_cpu: BTreeSet::new(), cpu_sizes: BTreeMap::new() }
    }

    pub fn len(&self) -> usize {
        self.by_gpu.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_gpu.is_empty()
    }

    /// Add a BO; its GPU range must be free. Returns the stored BO. O(log n).
    pub fn insert(&mut self, bo: Bo) -> Result<&mut Bo, BoError> {
        let end = bo.start.checked_add(bo.size).filter(|_| bo.size != 0).ok_or(BoError::BadRange)?;
        if let Some((c, s)) = bo.userptr {
            c.checked_add(s).filter(|_| s != 0).ok_or(BoError::BadRange)?;
        }
        if self.by_gpu.range(..end).next_back().is_some_and(|(_, prev)| prev.end() > bo.start) {
            return Err(BoError::Overlap);
        }
        if let Some((c, s)) = bo.userptr {
            self.by_cpu.insert((c, s, bo.start));
            *self.cpu_sizes.entry(s).or_insert(0) += 1;
        }
        let start = bo.start;
        Ok(self.by_gpu.entry(start).or_insert(Box::new(bo)))
    }

    /// Remove the BO starting exactly at GPU address `start`. O(log n).
    pub fn remove(&mut self, start: u64) -> Option<Bo> {
        let bo = *self.by_gpu.remove(&start)?;
        if let Some((c, s)) = bo.userptr {
            self.by_cpu.remove(&(c, s, start));
            if let Some(n) = self.cpu_sizes.get_mut(&s) {
                *n -= 1;
                if *n == 0 {
                    self.cpu_sizes.remove(&s);
                }
            }
        }
        Some(bo)
    }

    /// The BO starting exactly at `start`.
    pub fn get(&self, start: u64) -> Option<&Bo> {
        self.by_gpu.get(&start).map(|b| &**b)
    }

    pub fn get_mut(&mut self, start: u64) -> Option<&mut Bo> {
        self.by_gpu.get_mut(&start).map(|b| &mut **b)
    }

    /// The BO whose GPU range contains `addr`. O(log n), allocation-free.
    pub fn find_gpu(&self, addr: u64) -> Option<&Bo> {
        self.by_gpu.range(..=addr).next_back().map(|(_, b)| &**b).filter(|b| b.contains(addr))
    }

    pub fn find_gpu_mut(&mut self, addr: u64) -> Option<&mut Bo> {
        self.by_gpu.range_mut(..=addr).next_back().map(|(_, b)| &mut **b).filter(|b| b.contains(addr))
    }

    /// The user pointer whose CPU range contains `addr`. With overlapping registrations, as
    /// upstream: one starting exactly at `addr` (the shortest), else the one starting closest
    /// below. Allocation-free.
    pub fn find_userptr(&self, addr: u64) -> Option<&Bo> {
        self.userptr_key(addr).and_then(|(_, _, g)| self.get(g))
    }

    pub fn find_userptr_mut(&mut self, addr: u64) -> Option<&mut Bo> {
        self.userptr_key(addr).and_then(|(_, _, g)| self.get_mut(g))
    }

    /// The user pointer registered at exactly `addr` with `size` bytes; `size` 0 matches any size
    /// but only when a single registration starts at `addr` (upstream's exact lookup).
    pub fn find_userptr_exact(&self, addr: u64, size: u64) -> Option<&Bo> {
        let key = if size != 0 {
            self.by_cpu.range((addr, size, 0)..=(addr, size, u64::MAX)).next()
        } else {
            let mut at = self.by_cpu.range((addr, 0, 0)..=(addr, u64::MAX, u64::MAX));
            match (at.next(), at.next()) {
                (Some(k), None) => Some(k),
                _ => None,
            }
        };
        key.and_then(|&(_, _, g)| self.get(g))
    }

    /// Whether `[addr, addr + size)` overlaps any registered user range (for a caller that
    /// refuses overlapping registrations).
    pub fn userptr_overlaps(&self, addr: u64, size: u64) -> bool {
        let Some(end) = addr.checked_add(size) else { return true };
        if size == 0 {
            return false;
        }
        // A range starting inside [addr, end) overlaps; otherwise one starting below may reach in.
        self.by_cpu.range((addr, 0, 0)..(end, 0, 0)).next().is_some() || self.userptr_key(addr).is_some()
    }

    /// Upstream's order for an address that may be either kind: user pointers first (their CPU
    /// ranges can coincide with unrelated GPU ranges), then GPU ranges.
    pub fn find(&self, addr: u64) -> Option<&Bo> {
        self.find_userptr(addr).or_else(|| self.find_gpu(addr))
    }

    /// BOs in GPU address order.
    pub fn iter(&self) -> impl Iterator<Item = &Bo> + '_ {
        self.by_gpu.values().map(|b| &**b)
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Bo> + '_ {
        self.by_gpu.values_mut().map(|b| &mut **b)
    }

    /// Take every BO out (teardown), in GPU address order.
    pub fn drain(&mut self) -> impl Iterator<Item = Bo> {
        self.by_cpu.clear();
        self.cpu_sizes.clear();
        core::mem::take(&mut self.by_gpu).into_values().map(|b| *b)
    }

    /// Check the indexes: keys match BOs, GPU ranges are non-empty and disjoint, the CPU index
    /// holds exactly the user pointers, the size multiset matches. O(n); for tests and fuzzing.
    pub fn check_invariants(&self) -> Result<(), &'static str> {
        let mut prev_end = 0u64;
        let mut first = true;
        let mut userptrs = 0usize;
        for (&k, b) in &self.by_gpu {
            if k != b.start {
                return Err("key differs from the BO's start");
            }
            let Some(end) = b.start.checked_add(b.size).filter(|_| b.size != 0) else { return Err("empty or wrapping GPU range") };
            if !first && b.start < prev_end {
                return Err("GPU ranges overlap");
            }
            first = false;
            prev_end = end;
            if let Some((c, s)) = b.userptr {
                userptrs += 1;
                if !self.by_cpu.contains(&(c, s, b.start)) {
                    return Err("user pointer missing from the CPU index");
                }
            }
        }
        if userptrs != self.by_cpu.len() {
            return Err("CPU index has stale entries");
        }
        let counted: usize = self.cpu_sizes.values().map(|&n| n as usize).sum();
        if counted != userptrs || self.cpu_sizes.values().any(|&n| n == 0) {
            return Err("user-pointer size multiset drifted");
        }
        Ok(())
    }

    /// The CPU-index key of the user pointer containing `addr` (see [`BoTable::find_userptr`]).
    fn userptr_key(&self, addr: u64) -> Option<(u64, u64, u64)> {
        // No user pointers (the usual case for a pointer query): nothing to search.
        let longest = *self.cpu_sizes.last_key_value()?.0;
        if let Some(&k) = self.by_cpu.range((addr, 1, 0)..=(addr, u64::MAX, u64::MAX)).next() {
            return Some(k);
        }
        // Nothing starts further below than the longest registration can reach.
        let lowest = addr.saturating_sub(longest.saturating_sub(1));
        self.by_cpu.range((lowest, 0, 0)..(addr, 0, 0)).rev().find(|&&(c, s, _)| addr - c < s).copied()
    }
}
