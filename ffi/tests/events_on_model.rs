//! The thunk's events and the model seen together: the event page is memory both sides see
//! (a slot the GPU writes is what the CPU reads at HWData2), the GPU's interrupt path wakes a
//! waiter and acknowledges the slot, memory- and HW-exception data raised by the model land in
//! the `HsaEvent`, and destroying an event fails a wait blocked on it in another thread.

use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::abi::kfd::*;
use hsakmt_core::context::{Context, OpenConfig};
use hsakmt_core::event::{self, EventData, EventDesc};
use hsakmt_core::Status;
use hsakmt_model::{Model, ModelConfig};
use std::sync::Arc;
use zerocopy::FromZeros;

fn open(model: &Arc<Model>) -> Context {
    let mut cfg = OpenConfig::default();
    cfg.memory.fmm.page_size = 4096;
    let port = hsakmt::global::SharedModel { model: model.clone(), release_on_drop: true };
    let mut c = Context::open(Box::new(port), cfg).expect("open");
    c.acquire_system_properties().expect("acquire");
    c
}

fn desc(ty: u32) -> EventDesc {
    EventDesc { event_type: ty, node_id: 0, sync_user_data: 0, sync_var_size: 0 }
}

fn read(ev: usize) -> HsaEvent {
    // SAFETY: `ev` is a live event of the context (48 bytes it owns); read unaligned by value.
    unsafe { std::ptr::read_unaligned(ev as *const HsaEvent) }
}

fn wait(c: &mut Context, evs: &[usize], all: bool, ms: u32) -> Result<(), Status> {
    let mut data: Vec<EventData> = evs.iter().map(|&e| EventData::new(c.event_wait_entry(e).unwrap().0, 0)).collect();
    let port = c.kfd_shared();
    event::wait(&*port, &mut data, all, ms)?;
    c.finish_event_wait(evs.iter().copied(), &data)
}

#[test]
fn the_event_page_is_shared_with_the_gpu() {
    let model = Arc::new(Model::new(ModelConfig::catalogue("mi210")).unwrap());
    let mut c = open(&model);
    let ev = c.create_event(&desc(HSA_EVENTTYPE_SIGNAL), false, false).unwrap();
    let e = read(ev);
    let id = { e.EventId };
    let slot = { e.EventData.HWData2 } as *const u64;
    assert!(!slot.is_null());
    // SAFETY: HWData2 is the event's slot in the event page, mapped for the CPU by the thunk.
    let cpu = || unsafe { std::ptr::read_volatile(slot) };
    assert_eq!(cpu(), u64::MAX, "unsignaled");
    assert!(model.write_event_slot(id, 7));
    assert_eq!(cpu(), 7, "the CPU sees what the GPU wrote");
    assert_eq!(wait(&mut c, &[ev], true, 0), Err(Status::WAIT_TIMEOUT));
    assert!(model.signal_event(id));
    assert_eq!(cpu(), u64::MAX, "the interrupt acknowledged the slot");
    assert_eq!(wait(&mut c, &[ev], true, 0), Ok(()));
    // A waiter in another thread is woken by the GPU's interrupt.
    let port = c.kfd_shared();
    let m = model.clone();
    let waiter = std::thread::spawn(move || {
        let mut d = [EventData::new(id, 0)];
        event::wait(&*port, &mut d, true, 0xFFFF_FFFF)
    });
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert!(m.signal_event(id));
    assert_eq!(waiter.join().unwrap(), Ok(()));
    // The context's own wait, with ages.
    let mut age = [1u64];
    assert_eq!(c.wait_on_events(&[ev], true, 0, Some(&mut age)), Ok(()));
    assert!(age[0] > 1);
    assert_eq!(c.wait_on_events(&[ev], true, 0, Some(&mut age)), Err(Status::WAIT_TIMEOUT));
    assert!(model.signal_event(id));
    assert_eq!(c.wait_on_events(&[ev], false, 10, Some(&mut age)), Ok(()));
    assert_eq!(c.wait_on_events(&[], false, 0, None), Err(Status::INVALID_PARAMETER));
    c.destroy_event(ev).unwrap();
    assert_eq!(c.wait_on_events(&[ev], false, 0, None), Err(Status::INVALID_HANDLE));
    assert_eq!(c.live_events(), 0);
}

#[test]
fn exception_data_lands_in_the_event() {
    let model = Arc::new(Model::new(ModelConfig::catalogue("mi210")).unwrap());
    let mut c = open(&model);
    let topo = c.topology().unwrap();
    let (node, gpu_id) = topo.nodes.iter().enumerate().filter(|(_, n)| n.gpu_id != 0).map(|(i, n)| (i as u32, n.gpu_id)).nth(1).unwrap();
    let mem = c.create_event(&desc(HSA_EVENTTYPE_MEMORY), true, false).unwrap();
    let hw = c.create_event(&desc(HSA_EVENTTYPE_HW_EXCEPTION), true, false).unwrap();
    assert_eq!({ read(mem).EventData.HWData2 }, 0, "no slot for system events");
    assert_eq!(c.set_event(mem), Err(Status::ERROR));

    let mut x = kfd_hsa_memory_exception_data::new_zeroed();
    x.va = 0x7f12_3456_7000;
    x.gpu_id = gpu_id;
    x.failure.ReadOnly = 1;
    x.ErrorType = 2;
    assert_eq!(model.signal_memory_exception(x), 1);
    assert_eq!(wait(&mut c, &[mem], true, 100), Ok(()));
    let e = read(mem);
    // SAFETY: the thunk filled the MemoryAccessFault member.
    let f = unsafe { e.EventData.EventData.MemoryAccessFault };
    assert_eq!(({ f.NodeId }, { f.VirtualAddress }, { f.Flags }), (node, 0x7f12_3456_7000, HSA_EVENTID_MEMORY_FATAL_PROCESS));
    let failure = f.Failure;
    assert_eq!((failure.bf_NotPresent(), failure.bf_ReadOnly(), failure.bf_ECC(), failure.bf_ErrorType()), (0, 1, 1, 2));

    let h = kfd_hsa_hw_exception_data { reset_type: 1, reset_cause: HSA_EVENTID_HW_EXCEPTION_ECC, memory_lost: 1, gpu_id };
    assert_eq!(model.signal_hw_exception(h), 1);
    assert_eq!(wait(&mut c, &[mem, hw], false, 100), Ok(()));
    // SAFETY: the thunk filled the HwException member.
    let hx = unsafe { read(hw).EventData.EventData.HwException };
    assert_eq!(({ hx.NodeId }, { hx.ResetType }, { hx.ResetCause }, { hx.MemoryLost }), (node, 1, HSA_EVENTID_HW_EXCEPTION_ECC, 1));
}

#[test]
fn destroying_an_event_fails_a_blocked_wait() {
    let model = Arc::new(Model::new(ModelConfig::catalogue("mi210")).unwrap());
    let mut c = open(&model);
    let ev = c.create_event(&desc(HSA_EVENTTYPE_SIGNAL), false, false).unwrap();
    let id = c.event_wait_entry(ev).unwrap().0;
    let port = c.kfd_shared();
    let waiter = std::thread::spawn(move || {
        let mut d = [EventData::new(id, 0)];
        event::wait(&*port, &mut d, true, 10_000)
    });
    std::thread::sleep(std::time::Duration::from_millis(20));
    c.destroy_event(ev).unwrap();
    assert_eq!(waiter.join().unwrap(), Err(Status::ERROR));
    assert_eq!(c.set_event(ev), Err(Status::INVALID_HANDLE));
}
