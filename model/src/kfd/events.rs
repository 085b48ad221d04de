//! The event ioctls and the model's event API over the events service (`events.rs`): the
//! model supplies the caller's KFD process (its instance), the event page's BO and the device
//! memory.

use crate::events::{EventArray, EVENT_DATA_SIZE};
use crate::model::Model;
use crate::sys::{get, put};
use hsakmt_core::abi::kfd::*;
use zerocopy::FromZeros;

const EINVAL: i32 = libc::EINVAL;
const ENODEV: i32 = libc::ENODEV;
const EBADF: i32 = libc::EBADF;

impl Model {
    /// The current KFD process's instance (its events). Read from the model's atomic copy, not
    /// under the state lock: one lock per event ioctl, not two (a process replaced meanwhile is
    /// one replaced just after this call, as with the lock).
    fn instance(&self) -> u64 {
        self.instance.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// CREATE_EVENT. With a page BO, the process lock is held across the creation.
    pub(crate) fn ioctl_create_event(&self, buf: &mut [u8]) -> Result<(), i32> {
        let a: kfd_ioctl_create_event_args = get(buf);
        if a.event_page_offset == 0 {
            return self.events.create(self.instance(), buf, |_| Err(EINVAL), || self.devmem());
        }
        let pst = self.lock();
        let page_bo = |handle: u64| {
            let g = self.gpu_index((handle >> 32) as u32).ok_or(EINVAL)?;
            if pst.vms.get(g).is_none_or(|v| v.is_none()) {
                return Err(ENODEV);
            }
            let bo = pst.mem.bos.get(&handle).ok_or(EINVAL)?;
            if bo.flags & KFD_IOC_ALLOC_MEM_FLAGS_GTT as u32 == 0 || bo.flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR as u32 != 0 {
                return Err(EINVAL);
            }
            Ok((bo.backing.file_offset().ok_or(EINVAL)?, bo.size))
        };
        self.events.create(pst.instance, buf, page_bo, || self.devmem())
    }

    /// DESTROY_EVENT.
    pub(crate) fn ioctl_destroy_event(&self, buf: &mut [u8]) -> Result<(), i32> {
        self.events.destroy(self.instance(), buf)
    }

    /// SET_EVENT / RESET_EVENT.
    pub(crate) fn ioctl_set_reset_event(&self, buf: &mut [u8], set: bool) -> Result<(), i32> {
        self.events.set_reset(self.instance(), buf, set)
    }

    /// Event ages arrived with KFD 1.14; before, the field is ignored.
    fn event_ages(&self) -> bool {
        self.config.kfd_version >= (1, 14)
    }

    /// WAIT_EVENTS.
    pub(crate) fn ioctl_wait_events(&self, buf: &mut [u8]) -> Result<(), i32> {
        let mut a: kfd_ioctl_wait_events_args = get(buf);
        let ptr = a.events_ptr;
        let ret = self.events.wait(|| self.instance(), self.event_ages(), &mut a, EventArray::User(ptr));
        put(buf, &a);
        ret
    }

    /// WAIT_EVENTS for an in-process caller (`Kfd::wait_events`): the ioctl's checks (the
    /// caller's process) and rules, on `data` (`kfd_event_data` elements) in place of
    /// `events_ptr`. Returns the wait result.
    pub(crate) fn wait_events_in_process(&self, data: &mut [u8], wait_all: bool, timeout: u32) -> Result<u32, i32> {
        if !self.caller_is_owner() {
            return Err(EBADF); // as ioctl_arg: "Using KFD FD in wrong process"
        }
        let mut a = kfd_ioctl_wait_events_args::new_zeroed();
        a.events_ptr = data.as_ptr() as u64;
        a.num_events = u32::try_from(data.len() / EVENT_DATA_SIZE).map_err(|_| EINVAL)?;
        a.wait_for_all = u32::from(wait_all);
        a.timeout = timeout;
        self.events.wait(|| self.instance(), self.event_ages(), &mut a, EventArray::Slice(data))?;
        Ok(a.wait_result)
    }

    /// The interrupt path of a signal event (what the GPU's end-of-pipe or a mailbox write
    /// raises): the event's slot is acknowledged (written back to "unsignaled") and the event is
    /// set. Signal and debug events only; false for an unknown id or another type.
    pub fn signal_event(&self, event_id: u32) -> bool {
        let pst = self.lock();
        let instance = pst.instance;
        self.events.signal(instance, event_id, pst, |pst, h| pst.mem.bos.contains_key(&h))
    }

    /// The CP / SDMA interrupt path into the KFD (kfd_signal_event_interrupt): an interrupt
    /// whose context id (its low `valid_bits` bits) names a signal event whose slot the GPU has
    /// written (not "unsignaled") sets that event; otherwise every event whose slot is written is
    /// set (the kernel's exhaustive scan when the id in the payload does not match). Setting an
    /// event acknowledges its slot. The model, like gfx9's end-of-pipe and SDMA trap handlers,
    /// always passes a full id (32 or 28 bits), so no partial-id search is needed. Returns how
    /// many events were set.
    pub fn signal_event_interrupt(&self, context_id: u32, valid_bits: u32) -> usize {
        let ids = self.events.interrupt_targets(self.instance(), context_id, valid_bits);
        ids.into_iter().filter(|&i| self.signal_event(i)).count()
    }

    /// A GPU memory fault: every memory event of the process is set with the fault's data
    /// (`gpu_id`, `va`, failure flags, error type). Returns how many events were set.
    pub fn signal_memory_exception(&self, data: kfd_hsa_memory_exception_data) -> usize {
        self.events.memory_exception(self.instance(), data)
    }

    /// A GPU reset or HW exception: every HW-exception event of the process is set with `data`.
    pub fn signal_hw_exception(&self, data: kfd_hsa_hw_exception_data) -> usize {
        self.events.hw_exception(self.instance(), data)
    }

    /// The value in an event's slot of the event page (tests and the model GPU).
    pub fn event_slot(&self, event_id: u32) -> Option<u64> {
        self.events.slot(self.instance(), event_id)
    }

    /// Write an event's slot, as a GPU does before it raises the interrupt.
    pub fn write_event_slot(&self, event_id: u32, value: u64) -> bool {
        self.events.write_slot(self.instance(), event_id, value)
    }

    /// Live events of the current process.
    pub fn live_events(&self) -> usize {
        self.events.live(self.instance())
    }
}
