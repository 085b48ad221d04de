//! Safe readers for the few ABI unions core and tools read. Every member of these unions is
//! a plain integer of the same bytes, so any bit pattern is a valid value of each member.

use super::hsakmt::{HsaMemoryProperties, HsaMemoryProperties__anon_union_1};

impl HsaMemoryProperties {
    /// `SizeInBytes` (C reads it through the anonymous union).
    pub fn size_in_bytes(&self) -> u64 {
        let u: HsaMemoryProperties__anon_union_1 = self.__anon_union_1;
        // SAFETY: both members (u64, and two u32 halves) are plain integers covering the
        // same 8 bytes; every bit pattern is a valid u64.
        unsafe { u.SizeInBytes }
    }

    pub fn set_size_in_bytes(&mut self, size: u64) {
        self.__anon_union_1.SizeInBytes = size;
    }
}
