//! A null KFD port: every ioctl is answered at once with canned data, so a bench through the C
//! API measures the thunk's own cost per call, apart from what a kernel or the model does.
//!
//! - Topology and CPU files are served from memory: captured from the built-in model's
//!   catalogue entry (`HSAKMT_MODEL`, the same tree the model column uses) the first time a path
//!   is read, from a map ever after.
//! - ioctls do no work: GET_VERSION says 1.17; GET_PROCESS_APERTURES_NEW gives the apertures
//!   the model would (captured once); CREATE_EVENT hands out increasing ids with their slot;
//!   ALLOC_MEMORY_OF_GPU increasing handles; MAP/UNMAP report every device done;
//!   GET_CLOCK_COUNTERS a counter that only counts calls; everything else succeeds with its
//!   argument unchanged. WAIT_EVENTS is always satisfied at once. (Counters are plain loads and
//!   stores, not atomic increments: the port must cost as little as possible, and the benches
//!   call it from one thread.)
//! - Memory is real (the thunk writes to what it maps): the KFD file and BOs are anonymous
//!   mappings, reservations PROT_NONE ones, as the kernel would give.
//!
//! Bench support only: this is not part of the library, and the thunk only reaches it through
//! `hsakmt::global::set_port_override`.

use hsakmt_core::abi::kfd::*;
use hsakmt_core::event::EventData;
use hsakmt_core::{Backend, Errno, Kfd, SysTree};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use zerocopy::{FromBytes, FromZeros, IntoBytes};

/// Files (or the errno of reading them) by path, one map per tree, Fx-hashed: a read is a
/// hash of the path and one compare, no allocation.
type Files<T> = Mutex<[HashMap<String, Result<T, i32>, BuildHasherDefault<Fx>>; 3]>;

/// A word-at-a-time multiplicative hash (FxHash's step): a path costs a few cycles per 8
/// bytes, unlike the default SipHash.
#[derive(Default)]
struct Fx(u64);

impl std::hash::Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
            self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
        let mut last = [0u8; 8];
        last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
        self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(last)).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

/// What the null ports of one catalogue entry share: the model the files come from, the files
/// read so far, and the apertures.
struct Canned {
    model: hsakmt_model::Model,
    files: Files<Vec<u8>>,
    counts: Files<u32>,
    apertures: Vec<kfd_process_device_apertures>,
}

fn tree_key(t: SysTree) -> usize {
    match t {
        SysTree::Topology => 0,
        SysTree::Cpu => 1,
        SysTree::CpuInfo => 2,
    }
}

fn canned(name: &str) -> Arc<Canned> {
    static ALL: OnceLock<Mutex<HashMap<String, Arc<Canned>>>> = OnceLock::new();
    let mut all = ALL.get_or_init(Default::default).lock().unwrap();
    all.entry(name.to_string())
        .or_insert_with(|| {
            let model = hsakmt_model::Model::new(hsakmt_model::ModelConfig::catalogue(name)).expect("a catalogue entry");
            let n = model.gpus().len();
            let mut apertures: Vec<kfd_process_device_apertures> = (0..n).map(|_| FromZeros::new_zeroed()).collect();
            let mut a: kfd_ioctl_get_process_apertures_new_args = FromZeros::new_zeroed();
            a.kfd_process_device_apertures_ptr = apertures.as_mut_ptr() as u64;
            a.num_of_nodes = n as u32;
            // SAFETY: the apertures pointer is `apertures`, `n` live entries the model fills.
            unsafe { model.ioctl(AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, a.as_mut_bytes()) }.expect("the model's apertures");
            apertures.truncate(a.num_of_nodes as usize);
            Arc::new(Canned { model, files: Default::default(), counts: Default::default(), apertures })
        })
        .clone()
}

/// The null port (see the module documentation).
pub struct NullPort {
    canned: Arc<Canned>,
    next_event: AtomicU32,
    next_handle: AtomicU64,
    clock: AtomicU64,
}

impl NullPort {
    /// A null port over the catalogue entry `name`'s topology.
    pub fn new(name: &str) -> NullPort {
        NullPort { canned: canned(name), next_event: AtomicU32::new(1), next_handle: AtomicU64::new(1), clock: AtomicU64::new(0) }
    }

    /// The factory `hsakmt::global::set_port_override` takes: the entry `HSAKMT_MODEL` names.
    pub fn from_env() -> Box<dyn Kfd> {
        let name = std::env::var("HSAKMT_MODEL").ok().filter(|v| !v.is_empty()).unwrap_or_else(|| "mi300x".into());
        Box::new(NullPort::new(&name))
    }
}

fn put<T: IntoBytes + zerocopy::Immutable>(arg: &mut [u8], v: &T) {
    let b = v.as_bytes();
    let n = b.len().min(arg.len());
    arg[..n].copy_from_slice(&b[..n]);
}

fn get<T: FromBytes>(arg: &[u8]) -> T {
    T::read_from_prefix(arg).map(|(t, _)| t).unwrap_or_else(|_| T::new_zeroed())
}

impl Kfd for NullPort {
    /// # Safety
    /// As [`Kfd::ioctl`]; the only address used is GET_PROCESS_APERTURES_NEW's array, filled
    /// with at most `num_of_nodes` entries.
    unsafe fn ioctl(&self, request: u32, arg: &mut [u8]) -> Result<(), Errno> {
        match request {
            AMDKFD_IOC_GET_VERSION => put(arg, &kfd_ioctl_get_version_args { major_version: 1, minor_version: 17 }),
            AMDKFD_IOC_GET_CLOCK_COUNTERS => {
                let mut a: kfd_ioctl_get_clock_counters_args = get(arg);
                // Not a read-modify-write: the port must cost as little as possible.
                let t = self.clock.load(Ordering::Relaxed) + 1;
                self.clock.store(t, Ordering::Relaxed);
                a.gpu_clock_counter = t;
                a.cpu_clock_counter = t;
                a.system_clock_counter = t;
                a.system_clock_freq = 1_000_000_000;
                put(arg, &a);
            }
            AMDKFD_IOC_GET_PROCESS_APERTURES_NEW => {
                let mut a: kfd_ioctl_get_process_apertures_new_args = get(arg);
                let n = (a.num_of_nodes as usize).min(self.canned.apertures.len());
                if a.num_of_nodes != 0 {
                    // SAFETY: the caller's contract: an array of `num_of_nodes` entries.
                    let dst = unsafe {
                        std::slice::from_raw_parts_mut(a.kfd_process_device_apertures_ptr as usize as *mut kfd_process_device_apertures, n)
                    };
                    dst.copy_from_slice(&self.canned.apertures[..n]);
                }
                a.num_of_nodes = if a.num_of_nodes == 0 { self.canned.apertures.len() as u32 } else { n as u32 };
                put(arg, &a);
            }
            AMDKFD_IOC_CREATE_EVENT => {
                let mut a: kfd_ioctl_create_event_args = get(arg);
                let id = self.next_event.load(Ordering::Relaxed) % 4096;
                self.next_event.store(id + 1, Ordering::Relaxed);
                a.event_id = id;
                a.event_slot_index = id;
                a.event_trigger_data = id;
                put(arg, &a);
            }
            AMDKFD_IOC_ALLOC_MEMORY_OF_GPU => {
                let mut a: kfd_ioctl_alloc_memory_of_gpu_args = get(arg);
                let h = self.next_handle.load(Ordering::Relaxed);
                self.next_handle.store(h + 1, Ordering::Relaxed);
                a.handle = h;
                a.mmap_offset = h << 32;
                put(arg, &a);
            }
            AMDKFD_IOC_MAP_MEMORY_TO_GPU | AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU => {
                let mut a: kfd_ioctl_map_memory_to_gpu_args = get(arg);
                a.n_success = a.n_devices;
                put(arg, &a);
            }
            _ => {}
        }
        Ok(())
    }

    fn wait_events(&self, _data: &mut [EventData], _wait_all: bool, _timeout_ms: u32) -> Result<u32, Errno> {
        Ok(KFD_IOC_WAIT_RESULT_COMPLETE as u32)
    }

    unsafe fn mmap(&self, fixed: Option<usize>, len: usize, prot: u32, _shared: bool, _offset: u64) -> Result<usize, Errno> {
        // SAFETY: the caller's contract (a fixed range is the caller's).
        unsafe { hsakmt_linux::map_anonymous(fixed, 0, len, prot) }
    }

    unsafe fn munmap(&self, addr: usize, len: usize) -> Result<(), Errno> {
        // SAFETY: the caller's contract.
        unsafe { hsakmt_linux::munmap(addr, len) }
    }

    unsafe fn map_anonymous(&self, fixed: Option<usize>, hint: usize, len: usize, prot: u32) -> Result<usize, Errno> {
        // SAFETY: the caller's contract.
        unsafe { hsakmt_linux::map_anonymous(fixed, hint, len, prot) }
    }

    unsafe fn release_va(&self, addr: usize, len: usize) -> Result<(), Errno> {
        // SAFETY: the caller's contract.
        unsafe { hsakmt_linux::munmap(addr, len) }
    }

    fn open_render_node(&self, minor: u32) -> Result<i32, Errno> {
        Ok(10_000 + minor as i32)
    }

    fn close_render_node(&self, _fd: i32) {}

    fn read_file(&self, tree: SysTree, path: &str, buf: &mut [u8]) -> Result<usize, Errno> {
        let mut files = self.canned.files.lock().unwrap();
        let files = &mut files[tree_key(tree)];
        let data = match files.get(path) {
            Some(d) => d,
            None => {
                let mut len = 1 << 16;
                let data = loop {
                    let mut b = vec![0u8; len];
                    match self.canned.model.read_file(tree, path, &mut b) {
                        Ok(n) => break Ok(b[..n].to_vec()),
                        Err(e) if e.0 == Errno::ERANGE && len < 1 << 24 => len *= 4,
                        Err(e) => break Err(e.0),
                    }
                };
                files.entry(path.to_string()).or_insert(data)
            }
        };
        match data {
            Ok(d) if d.len() <= buf.len() => {
                buf[..d.len()].copy_from_slice(d);
                Ok(d.len())
            }
            Ok(_) => Err(Errno(Errno::ERANGE)),
            Err(e) => Err(Errno(*e)),
        }
    }

    fn count_numbered_entries(&self, tree: SysTree, dir: &str) -> Result<u32, Errno> {
        let mut counts = self.canned.counts.lock().unwrap();
        let counts = &mut counts[tree_key(tree)];
        let n = match counts.get(dir) {
            Some(&n) => n,
            None => *counts.entry(dir.to_string()).or_insert(self.canned.model.count_numbered_entries(tree, dir).map_err(|e| e.0)),
        };
        n.map_err(Errno)
    }

    fn process_id(&self) -> u32 {
        hsakmt_linux::pid()
    }

    fn backend(&self) -> Backend {
        Backend::BuiltinModel
    }

    fn gpu_counter_khz(&self, _gpu_id: u32) -> Option<u64> {
        Some(100_000)
    }
}
