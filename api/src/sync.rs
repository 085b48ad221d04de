//! KFD events and HSA signals in GPU-visible memory.

use crate::device::{Device, Inner, Node};
use crate::error::{st, Error, ErrorKind, Result};
use crate::memory::{Mapped, MemFlags};
use hsakmt_core::abi::hsakmt::HSA_EVENTTYPE_SIGNAL;
use hsakmt_core::event::{EventData, EventDesc};
use hsakmt_core::packet::aql::{Signal as SignalView, SignalRepr, SIGNAL_LEN};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A KFD signal event (auto-reset), destroyed when dropped. A GPU raises it by writing its id
/// to its [`mailbox`](Event::mailbox) and interrupting (an SDMA TRAP, a PM4 RELEASE_MEM, an AQL
/// completion signal made with [`SignalBuilder::interrupt`]).
pub struct Event {
    dev: Arc<Inner>,
    handle: usize,
    id: u32,
    mailbox: u64,
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Event").field("id", &self.id).field("mailbox", &format_args!("{:#x}", self.mailbox)).finish()
    }
}

impl Device {
    /// A new signal event for `node`'s interrupts.
    pub fn event(&self, node: &Node) -> Result<Event> {
        let desc = EventDesc { event_type: HSA_EVENTTYPE_SIGNAL, node_id: node.id(), sync_user_data: 0, sync_var_size: 0 };
        let mut ctx = self.inner.ctx();
        let handle = st("CreateEvent", ctx.create_event(&desc, false, false))?;
        let id = st("CreateEvent", ctx.event_wait_entry(handle))?.0;
        let mailbox = st("CreateEvent", ctx.event_mailbox(handle))?;
        Ok(Event { dev: self.inner.clone(), handle, id, mailbox })
    }
}

impl Event {
    /// The KFD's id of the event (what a GPU writes to the mailbox and passes with its interrupt).
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The GPU address of the event's slot in the event page (0 if the KFD gave none).
    pub fn mailbox(&self) -> u64 {
        self.mailbox
    }

    /// Signal it from the CPU.
    pub fn set(&self) -> Result<()> {
        st("SetEvent", self.dev.ctx().set_event(self.handle))
    }

    /// Wait until it is signalled (it resets itself then), at most `timeout` (rounded down to
    /// milliseconds, at most `u32::MAX - 1` of them). Running out of time is an error of kind
    /// [`ErrorKind::Timeout`]. The device is not locked while waiting.
    pub fn wait(&self, timeout: Duration) -> Result<()> {
        let ms = u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX - 1).min(u32::MAX - 1);
        let mut data = [EventData::new(self.id, 0)];
        st("WaitOnEvent", hsakmt_core::event::wait(&*self.dev.kfd, &mut data, true, ms))?;
        st("WaitOnEvent", self.dev.ctx().finish_event_wait([self.handle], &data))
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        let _ = self.dev.ctx().destroy_event(self.handle);
    }
}

/// An HSA signal (`amd_signal_t`) in GPU-visible host memory, freed when dropped. AQL packets
/// name it by [`handle`](Signal::handle); the GPU decrements its value when a packet that
/// names it as completion signal finishes, and its value is read here atomically.
pub struct Signal {
    mem: Mapped,
}

impl std::fmt::Debug for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signal").field("handle", &format_args!("{:#x}", self.handle())).field("value", &self.value()).finish()
    }
}

/// Options for a new [`Signal`] ([`Device::signal`]).
#[must_use]
pub struct SignalBuilder<'d> {
    dev: &'d Device,
    value: i64,
    interrupt: Option<(u64, u32)>,
}

impl Device {
    /// A signal with initial value `value`; finish with [`SignalBuilder::create`].
    pub fn signal(&self, value: i64) -> SignalBuilder<'_> {
        SignalBuilder { dev: self, value, interrupt: None }
    }
}

impl SignalBuilder<'_> {
    /// When the GPU completes the signal it also raises `event` (writes its id to its mailbox
    /// and interrupts), so a CPU can sleep in [`Event::wait`] instead of polling.
    pub fn interrupt(mut self, event: &Event) -> Self {
        self.interrupt = Some((event.mailbox, event.id));
        self
    }

    /// Allocate the signal for `gpu` (host memory mapped to it).
    pub fn create(self, gpu: &Node) -> Result<Signal> {
        let mem = Mapped::new(self.dev, gpu, 4096, MemFlags::host().uncached())?;
        let mut repr = SignalRepr::user(self.value);
        if let Some((mailbox, id)) = self.interrupt {
            repr = repr.event(mailbox, id);
        }
        let mut bytes = [0u8; SIGNAL_LEN];
        repr.emit(&mut SignalView::new_unchecked(&mut bytes[..]));
        mem.0.write(0, &bytes)?;
        Ok(Signal { mem })
    }
}

impl Signal {
    /// The signal's address, as AQL packets name it.
    pub fn handle(&self) -> u64 {
        self.mem.0.addr()
    }

    fn cell(&self) -> &AtomicI64 {
        // SAFETY: amd_signal_t.value is the 8-byte word at offset 8 of the page-aligned signal,
        // inside the host-accessible allocation `mem` keeps alive as long as `self`; the GPU
        // changes it with atomic operations and the CPU only through this atomic.
        unsafe { &*((self.mem.0.addr() + 8) as *const AtomicI64) }
    }

    /// The current value.
    pub fn value(&self) -> i64 {
        self.cell().load(Ordering::Acquire)
    }

    /// Store a new value (a CPU signalling a barrier's dependency, or re-arming).
    pub fn store(&self, value: i64) {
        self.cell().store(value, Ordering::Release)
    }

    /// Poll until the value is `value`, at most `timeout` ([`ErrorKind::Timeout`]).
    pub fn wait_eq(&self, value: i64, timeout: Duration) -> Result<()> {
        let t = Instant::now();
        let mut spins = 0u32;
        while self.value() != value {
            if t.elapsed() > timeout {
                return Err(Error::new(
                    ErrorKind::Timeout,
                    format!("signal {:#x}: value {} after {timeout:?}, waited for {value}", self.handle(), self.value()),
                ));
            }
            spins += 1;
            if spins < 1000 {
                std::hint::spin_loop();
            } else {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
        Ok(())
    }
}
