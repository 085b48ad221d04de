//! `struct kfd_event_data` as a plain value: the array AMDKFD_IOC_WAIT_EVENTS reads and writes,
//! shared by the `Kfd` port (`wait_events`) and the thunk's events.

use super::kfd::{kfd_event_data, kfd_hsa_hw_exception_data, kfd_hsa_memory_exception_data};
use core::mem::{offset_of, size_of};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

/// `struct kfd_event_data` as plain words (the header's union is 32 bytes of payload):
/// the array WAIT_EVENTS reads and writes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct EventData {
    /// `last_event_age` (signal events), or memory- / HW-exception data.
    pub payload: [u64; 4],
    pub ext: u64,
    pub event_id: u32,
    pub pad: u32,
}

const _: () = assert!(size_of::<EventData>() == size_of::<kfd_event_data>());
const _: () = assert!(offset_of!(kfd_event_data, event_id) == offset_of!(EventData, event_id));

impl EventData {
    /// A wait entry for `event_id`, with the caller's last seen age (0: none).
    pub fn new(event_id: u32, last_event_age: u64) -> EventData {
        EventData { payload: [last_event_age, 0, 0, 0], ext: 0, event_id, pad: 0 }
    }
    pub fn last_event_age(&self) -> u64 {
        self.payload[0]
    }
    pub fn memory_exception(&self) -> kfd_hsa_memory_exception_data {
        kfd_hsa_memory_exception_data::read_from_prefix(self.payload.as_bytes()).map_or_else(|_| FromZeros::new_zeroed(), |(d, _)| d)
    }
    pub fn hw_exception(&self) -> kfd_hsa_hw_exception_data {
        kfd_hsa_hw_exception_data::read_from_prefix(self.payload.as_bytes()).map_or_else(|_| FromZeros::new_zeroed(), |(d, _)| d)
    }
}
