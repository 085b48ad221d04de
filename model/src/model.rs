//! The model instance: configuration, the topology it serves, and the per-process KFD state.

use crate::catalogue;
use crate::devmem::{DeviceMemory, MAX_GPUS};
use crate::mem::MemState;
use crate::sys::{current_pid, file_key, FileKey};
use crate::topology::{check_and_list_gpus, system_memory_bytes, GpuNode};
use crate::vfs::Tree;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

/// Default KFD interface version the model reports (mainline 1.22).
pub const DEFAULT_KFD_VERSION: (u32, u32) = (1, 22);

/// Where the model's topology comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TopologySource {
    /// A built-in catalogue entry by name (see [`crate::catalogue_names`]).
    Catalogue(String),
    /// A directory in sysfs layout (`generation_id`, `system_properties`, `nodes/N/...`), read
    /// once when the model is created.
    Directory(PathBuf),
    /// A tree built in memory (tests, tools).
    Tree(Tree),
}

/// How to build a [`Model`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelConfig {
    pub topology: TopologySource,
    /// (major, minor) answered by GET_VERSION; ioctls newer than this version answer as that
    /// kernel answers them (ENOTTY).
    pub kfd_version: (u32, u32),
    /// GPU clock-counter frequency, Hz (GET_CLOCK_COUNTERS).
    pub gpu_counter_hz: u64,
    /// Also answer the ioctls only ROCm's amdgpu-dkms kernel has (0x80..: IPC_IMPORT_HANDLE,
    /// IPC_EXPORT_HANDLE); mainline answers them ENOTTY. Default true
    /// (`HSAKMT_MODEL_DKMS=0` turns them off).
    pub dkms_ioctls: bool,
}

impl Default for ModelConfig {
    fn default() -> ModelConfig {
        ModelConfig::catalogue(catalogue::DEFAULT_ENTRY)
    }
}

impl ModelConfig {
    pub fn catalogue(name: &str) -> ModelConfig {
        ModelConfig {
            topology: TopologySource::Catalogue(name.to_string()),
            kfd_version: DEFAULT_KFD_VERSION,
            gpu_counter_hz: catalogue::GPU_COUNTER_HZ,
            dkms_ioctls: true,
        }
    }

    pub fn directory(path: impl Into<PathBuf>) -> ModelConfig {
        ModelConfig { topology: TopologySource::Directory(path.into()), ..ModelConfig::default() }
    }

    pub fn with_kfd_version(mut self, major: u32, minor: u32) -> ModelConfig {
        self.kfd_version = (major, minor);
        self
    }

    /// With or without ROCm's amdgpu-dkms-only ioctls (IPC handles).
    pub fn with_dkms_ioctls(mut self, on: bool) -> ModelConfig {
        self.dkms_ioctls = on;
        self
    }

    /// The configuration the environment asks for:
    /// - `HSA_MODEL_TOPOLOGY=<dir>` (upstream's variable; wins when set and non-empty): a sysfs
    ///   topology directory;
    /// - else `HSAKMT_MODEL=<name>`: a catalogue entry (empty value: the default entry);
    /// - else the default catalogue entry;
    /// - `HSAKMT_MODEL_KFD_VERSION=MAJOR.MINOR` (default 1.22);
    /// - `HSAKMT_MODEL_DKMS=0` answers ROCm-only ioctls (IPC handles) ENOTTY, as mainline.
    pub fn from_env() -> Result<ModelConfig, ModelError> {
        let mut cfg = match std::env::var_os("HSA_MODEL_TOPOLOGY").filter(|v| !v.is_empty()) {
            Some(dir) => ModelConfig::directory(PathBuf::from(dir)),
            None => match std::env::var("HSAKMT_MODEL") {
                Ok(name) if !name.trim().is_empty() => ModelConfig::catalogue(name.trim()),
                _ => ModelConfig::default(),
            },
        };
        if let Ok(v) = std::env::var("HSAKMT_MODEL_KFD_VERSION") {
            cfg.kfd_version = parse_version(&v).ok_or(ModelError::BadKfdVersion(v))?;
        }
        if let Ok(v) = std::env::var("HSAKMT_MODEL_DKMS") {
            cfg.dkms_ioctls = v.trim() != "0";
        }
        Ok(cfg)
    }
}

/// Parse `MAJOR.MINOR` (decimal).
pub fn parse_version(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.trim().split_once('.')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// Why a model could not be built. `Display` names the setting and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelError {
    /// A topology directory is unusable: (the setting as written, what is wrong).
    Topology { source: String, reason: String },
    /// No catalogue entry has this name.
    UnknownCatalogue(String),
    /// `HSAKMT_MODEL_KFD_VERSION` is not `MAJOR.MINOR`.
    BadKfdVersion(String),
    /// The memfd standing in for /dev/kfd could not be created (errno).
    Memfd(i32),
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::Topology { source, reason } => write!(f, "{source}: {reason}"),
            ModelError::UnknownCatalogue(name) => {
                write!(f, "HSAKMT_MODEL={name}: no such catalogue entry (known: {})", catalogue::catalogue_names().join(", "))
            }
            ModelError::BadKfdVersion(v) => {
                write!(f, "HSAKMT_MODEL_KFD_VERSION={v}: expected MAJOR.MINOR, e.g. 1.14")
            }
            ModelError::Memfd(e) => write!(f, "cannot create the model's memfd (errno {e})"),
        }
    }
}

impl std::error::Error for ModelError {}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Runtime {
    Disabled,
    Enabled { r_debug: u64, ttmp_setup: bool },
}

/// A VM bound by ACQUIRE_VM: the render file, held open as the kernel holds its reference.
pub(crate) struct BoundVm {
    pub key: FileKey,
    pub _file: OwnedFd,
}

/// The state the kernel keeps per `kfd_process`.
pub(crate) struct Process {
    pub pid: u32,
    pub runtime: Runtime,
    /// Per GPU (index into `Model::gpus`): the render file its VM was acquired with.
    pub vms: Vec<Option<BoundVm>>,
    /// Render-node stand-ins this model issued: file identity → minor.
    pub renders: HashMap<FileKey, u32>,
    /// Buffer objects, GPU page tables, the arena of the memfd.
    pub mem: MemState,
    /// amdgpu device handles (DEVICE_INITIALIZE): token → (held render file, minor).
    pub devices: HashMap<usize, (OwnedFd, u32)>,
    pub next_device: usize,
    /// Unique per KFD process state (a fresh `Process` gets a new one): the events, kept
    /// apart so waits can sleep without this lock, belong to the instance that made them.
    pub instance: u64,
    /// SVM ranges and the XNACK mode (`svm.rs`).
    pub svm: crate::svm::SvmState,
    /// The task amdgpu records for the process's VMs (the thread of the first ACQUIRE_VM):
    /// what SMI's VMFAULT and PROCESS_START/END report.
    pub task: crate::smi::TaskInfo,
    /// A primary process's `id_table`: the context ids of its live secondary processes.
    pub context_ids: std::collections::BTreeSet<u16>,
}

impl Process {
    pub(crate) fn new(n_gpus: usize) -> Process {
        Process {
            pid: current_pid(),
            runtime: Runtime::Disabled,
            vms: (0..n_gpus).map(|_| None).collect(),
            renders: HashMap::new(),
            mem: MemState::new(n_gpus),
            devices: HashMap::new(),
            next_device: 0,
            instance: {
                static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
                NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            },
            svm: Default::default(),
            task: Default::default(),
            context_ids: Default::default(),
        }
    }
}

/// The software KFD.
pub struct Model {
    pub(crate) config: ModelConfig,
    pub(crate) tree: Tree,
    pub(crate) gpus: Vec<GpuNode>,
    pub(crate) state: Mutex<Process>,
    /// The device memfd and the control block shared with forked children (see `devmem.rs`),
    /// created on first use.
    pub(crate) dev: OnceLock<Arc<DeviceMemory>>,
    /// System memory of the topology's CPU nodes (the host's when the topology has none).
    pub(crate) system_bytes: u64,
    /// KFD events (own lock: waits sleep without holding `state`).
    pub(crate) events: crate::events::Events,
    /// The process's user queues (own lock, taken after `state`, never before it: engines run
    /// without either).
    pub(crate) queues: Mutex<crate::queues::QueueTable>,
    /// Notified (with `queues`) whenever an engine run ends: DESTROY_QUEUE waits on it so that
    /// no engine touches a queue's memory after the queue is gone, as the kernel preempts a
    /// queue before it destroys it.
    pub(crate) queue_idle: std::sync::Condvar,
    /// Wake-ups of the doorbell watcher thread.
    pub(crate) watch: Arc<crate::queues::Watch>,
    /// This model, when it was made by [`Model::new_shared`] (the watcher thread's handle).
    pub(crate) shared: Weak<Model>,
    pub(crate) engine_runs: AtomicU64,
    /// What each GPU did (indexed like `gpus`; `counters.rs`).
    pub(crate) counters: Vec<crate::counters::GpuCounters>,
    /// The pid of `state`'s process, readable without the lock: every ioctl checks its caller
    /// against it ("Using KFD FD in wrong process"), so the hot ones (events) skip `state`.
    pub(crate) owner: std::sync::atomic::AtomicU32,
    /// The current `Process::instance`, updated with it (where `owner` is): the event ioctls
    /// read it here instead of taking the state lock only to learn it.
    pub(crate) instance: AtomicU64,
    /// A catalogue system's own /proc/cpuinfo and /sys/devices/system/cpu (built on first
    /// use); `None` for a topology directory or tree, whose CPUs are the host's.
    pub(crate) host_cpus: OnceLock<Option<Tree>>,
    /// SMI event clients of every GPU (`smi.rs`; own lock, a leaf). The device's: a secondary
    /// process shares its primary's.
    pub(crate) smi: Arc<crate::smi::Smi>,
    /// Where the engines' interrupts go instead of the KFD's events (upstream's model interface
    /// 0.4, `plugin04.rs`: the client's `set_event` callback, called with the context id, which
    /// is the event id). Set once, before any queue runs.
    pub(crate) irq_sink: OnceLock<IrqSink>,
    /// The stand-in KFD file for debug events (`debug.rs`).
    pub(crate) null_file: OnceLock<Option<OwnedFd>>,
    /// SPM of every GPU and the counters it streams (`spm.rs`; own locks, leaves).
    pub(crate) spm: crate::spm::Spm,
    /// PC sampling sessions (`pcs.rs`; own lock, a leaf).
    pub(crate) pcs: crate::pcs::Pcs,
    /// A secondary KFD process (AMDKFD_IOC_CREATE_PROCESS, `file.rs`): its primary and its
    /// context id. `None`: the process's primary (KFD_CONTEXT_ID_PRIMARY).
    pub(crate) secondary: Option<SecondaryOf>,
}

/// What a secondary KFD process knows of its primary.
pub(crate) struct SecondaryOf {
    pub primary: Weak<Model>,
    /// From the primary's id table: 0..=0xFFFE (0xFFFF is KFD_CONTEXT_ID_PRIMARY).
    pub id: u16,
}

/// An interrupt consumer: called with the interrupt's context id (masked to its valid bits).
pub(crate) type IrqSink = Box<dyn Fn(u32) + Send + Sync>;

impl Drop for Model {
    fn drop(&mut self) {
        // The process that opened the model gives everything back (kfd_process release); a
        // forked child's copy of the parent's state is not the child's to release.
        let st = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        if st.pid == current_pid() {
            let mut st = std::mem::replace(st, Process::new(0));
            self.release_locked(&mut st);
        }
    }
}

impl fmt::Debug for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Model").field("config", &self.config).field("gpus", &self.gpus).finish_non_exhaustive()
    }
}

/// Total RAM of the host (sysinfo), for topologies without CPU memory banks.
fn host_memory_bytes() -> u64 {
    // SAFETY: sysinfo fills the zeroed struct we pass.
    unsafe {
        let mut si: libc::sysinfo = std::mem::zeroed();
        if libc::sysinfo(&mut si) == 0 {
            return (si.totalram as u64).saturating_mul(u64::from(si.mem_unit.max(1)));
        }
    }
    16 << 30
}

impl Model {
    /// Build a model. A directory topology is read and checked now.
    pub fn new(config: ModelConfig) -> Result<Model, ModelError> {
        let (tree, source) = match &config.topology {
            TopologySource::Catalogue(name) => {
                (catalogue::build(name).ok_or_else(|| ModelError::UnknownCatalogue(name.clone()))?, format!("HSAKMT_MODEL={name}"))
            }
            TopologySource::Directory(dir) => {
                let source = format!("HSA_MODEL_TOPOLOGY={}", dir.display());
                let err = |reason: String| ModelError::Topology { source: source.clone(), reason };
                let meta = std::fs::metadata(dir).map_err(|e| {
                    err(if e.kind() == std::io::ErrorKind::NotFound { "does not exist".into() } else { format!("cannot be read: {e}") })
                })?;
                if !meta.is_dir() {
                    return Err(err("not a directory".into()));
                }
                if !dir.join("nodes").is_dir() {
                    return Err(err("nodes/ missing".into()));
                }
                (Tree::load_dir(dir).map_err(|e| err(format!("cannot be read: {e}")))?, source)
            }
            TopologySource::Tree(t) => (t.clone(), "topology tree".to_string()),
        };
        let gpus =
            check_and_list_gpus(&tree, config.gpu_counter_hz).map_err(|reason| ModelError::Topology { source: source.clone(), reason })?;
        if gpus.len() > MAX_GPUS {
            return Err(ModelError::Topology { source, reason: format!("{} GPUs: the model handles at most {MAX_GPUS}", gpus.len()) });
        }
        let system_bytes = match system_memory_bytes(&tree) {
            0 => host_memory_bytes(),
            b => b,
        };
        Ok(Model::build(config, tree, gpus, system_bytes, OnceLock::new(), Default::default(), None))
    }

    /// A secondary process's model: the primary's configuration, topology, device and SMI
    /// clients (`file.rs`).
    pub(crate) fn build_from(primary: &Model, dev: OnceLock<Arc<DeviceMemory>>, secondary: SecondaryOf) -> Model {
        Model::build(
            primary.config.clone(),
            primary.tree.clone(),
            primary.gpus.clone(),
            primary.system_bytes,
            dev,
            primary.smi.clone(),
            Some(secondary),
        )
    }

    /// A model of one KFD process over these parts.
    fn build(
        config: ModelConfig,
        tree: Tree,
        gpus: Vec<GpuNode>,
        system_bytes: u64,
        dev: OnceLock<Arc<DeviceMemory>>,
        smi: Arc<crate::smi::Smi>,
        secondary: Option<SecondaryOf>,
    ) -> Model {
        let n = gpus.len();
        let process = Process::new(n);
        let instance = AtomicU64::new(process.instance);
        Model {
            config,
            tree,
            counters: (0..gpus.len()).map(|_| Default::default()).collect(),
            gpus,
            state: Mutex::new(process),
            dev,
            system_bytes,
            events: Default::default(),
            queues: Default::default(),
            queue_idle: std::sync::Condvar::new(),
            watch: Default::default(),
            shared: Weak::new(),
            engine_runs: AtomicU64::new(0),
            owner: std::sync::atomic::AtomicU32::new(current_pid()),
            instance,
            host_cpus: OnceLock::new(),
            smi,
            irq_sink: OnceLock::new(),
            null_file: OnceLock::new(),
            spm: crate::spm::Spm::new(n),
            pcs: crate::pcs::Pcs::new(n),
            secondary,
        }
    }

    /// Build a model that runs its queues by itself: CREATE_QUEUE starts a doorbell watcher
    /// thread (see `queues/watch.rs`) that holds only a weak handle to the model. A model from
    /// [`Model::new`] has no thread: its queues advance only through
    /// [`Model::service_queues`] and [`Model::ring_doorbell`].
    pub fn new_shared(config: ModelConfig) -> Result<Arc<Model>, ModelError> {
        let mut m = Model::new(config)?;
        let m = Arc::new_cyclic(move |w| {
            m.shared = w.clone();
            m
        });
        crate::fork::register(&Arc::downgrade(&m));
        // The opening process's KFD process, visible to a debugger (and the device file made
        // now, so processes forked later share it).
        m.debug_register();
        Ok(m)
    }

    /// The model the environment describes (see [`ModelConfig::from_env`]).
    pub fn from_env() -> Result<Model, ModelError> {
        Model::new(ModelConfig::from_env()?)
    }

    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// The sysfs topology tree the model serves.
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    /// The GPU nodes, in node order (the order of the process's devices).
    pub fn gpus(&self) -> &[GpuNode] {
        &self.gpus
    }

    pub fn kfd_version(&self) -> (u32, u32) {
        self.config.kfd_version
    }

    /// The CPU description the model serves for `/proc/cpuinfo` and `/sys/devices/system/cpu`
    /// (paths [`catalogue::cpus::CPUINFO`] and [`catalogue::cpus::SYS_CPU`]): a catalogue
    /// system's own CPUs, or `None` where the host's files are passed through, as upstream's
    /// model mode reads them (`HSA_MODEL_TOPOLOGY` directories and in-memory trees).
    pub fn host_cpus(&self) -> Option<&Tree> {
        self.host_cpus
            .get_or_init(|| match &self.config.topology {
                TopologySource::Catalogue(name) => catalogue::host_cpus(name),
                TopologySource::Directory(_) | TopologySource::Tree(_) => None,
            })
            .as_ref()
    }

    /// Write the served topology below `dir` (for `HSA_MODEL_TOPOLOGY` users).
    pub fn export_topology(&self, dir: &std::path::Path) -> std::io::Result<()> {
        self.tree.export(dir)
    }

    /// Is the caller the process that opened this model's KFD?
    pub(crate) fn caller_is_owner(&self) -> bool {
        self.owner.load(std::sync::atomic::Ordering::Relaxed) == current_pid()
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Process> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What GPU `gpu_id` has done so far in this process (model/COUNTERS.md).
    pub fn gpu_counters(&self, gpu_id: u32) -> Option<crate::counters::CounterSnapshot> {
        Some(self.counters.get(self.gpu_index(gpu_id)?)?.snapshot())
    }

    /// A PMC counter of GPU `gpu_id` (block: upstream's `enum perf_block_id`), when the model
    /// counts it (model/COUNTERS.md); allocation-free.
    pub fn pmc_counter(&self, gpu_id: u32, block: u32, counter_id: u64) -> Option<u64> {
        let i = self.gpu_index(gpu_id)?;
        crate::counters::pmc_value(self.gpus[i].gfx_version, block, counter_id, self.counters.get(i)?, || self.gpu_clock_counter(gpu_id))
    }

    /// Lanes per wave of GPU `gpu_id` for the dispatch counters: 64 on gfx9 and older, 32 from
    /// gfx10 (ROCm's default wave size there).
    pub(crate) fn wave_lanes(&self, gpu_id: u32) -> u64 {
        match self.gpu_index(gpu_id).map(|i| self.gpus[i].gfx_version.0) {
            Some(m) if m >= 10 => 32,
            _ => 64,
        }
    }

    pub(crate) fn gpu_index(&self, gpu_id: u32) -> Option<usize> {
        self.gpus.iter().position(|g| g.gpu_id == gpu_id)
    }

    /// The fd standing in for /dev/kfd (plugin `create_memfd`): a new descriptor of the model's
    /// device memfd, which the caller owns; BOs live in it at their `mmap_offset`. Like opening
    /// /dev/kfd, the first call in a new process (a forked child) starts a fresh KFD process
    /// (state reset); the memfd itself is the device's and stays the same.
    pub fn create_memfd(&self) -> Result<OwnedFd, i32> {
        self.open_as_caller();
        let fd = self.devmem()?.fd();
        rustix::io::fcntl_dupfd_cloexec(fd, 0).map_err(|e| e.raw_os_error())
    }

    /// kfd_open's process lookup: the caller's KFD process, a fresh one in a process that has
    /// none yet (a forked child).
    pub(crate) fn open_as_caller(&self) {
        let mut st = self.lock();
        let pid = current_pid();
        if st.pid != pid {
            *st = Process::new(self.gpus.len());
            self.owner.store(st.pid, std::sync::atomic::Ordering::Relaxed);
            self.instance.store(st.instance, std::sync::atomic::Ordering::Relaxed);
        }
        drop(st);
        self.debug_register();
    }

    /// Whether this is a secondary KFD process (AMDKFD_IOC_CREATE_PROCESS).
    pub fn is_secondary(&self) -> bool {
        self.secondary.is_some()
    }

    /// Open a stand-in for `/dev/dri/renderD<minor>`: a fresh memfd (its own file, so the model
    /// can tell opens apart as the kernel tells `struct file`s apart). ENOENT for a minor that
    /// no GPU of the topology has.
    pub fn open_render(&self, minor: u32) -> Result<OwnedFd, i32> {
        if !self.gpus.iter().any(|g| g.drm_render_minor == minor) {
            return Err(libc::ENOENT);
        }
        let fd = rustix::fs::memfd_create(format!("hsakmt-model-renderD{minor}"), rustix::fs::MemfdFlags::CLOEXEC)
            .map_err(|e| e.raw_os_error())?;
        let key = file_key(fd.as_fd()).ok_or(libc::EIO)?;
        self.lock().renders.insert(key, minor);
        Ok(fd)
    }

    /// Close a stand-in from [`Model::open_render`]. A file a VM was acquired with stays known
    /// (the VM holds it, as the kernel's pdd holds its reference).
    pub fn close_render(&self, fd: OwnedFd) {
        if let Some(key) = file_key(fd.as_fd()) {
            let mut st = self.lock();
            if !st.vms.iter().flatten().any(|v| v.key == key) {
                st.renders.remove(&key);
            }
        }
    }

    /// Which minor a file the model issued stands in for.
    pub(crate) fn render_minor_of(&self, st: &Process, fd: BorrowedFd<'_>) -> Option<(FileKey, u32)> {
        let key = file_key(fd)?;
        st.renders.get(&key).map(|m| (key, *m))
    }
}
