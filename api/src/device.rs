//! Opening the KFD (or the model) and the topology.

use crate::error::{st, Error, ErrorKind, Result};
use hsakmt_core::abi::hsakmt::{HsaMemoryProperties, HsaNodeProperties};
use hsakmt_core::context::{Context, OpenConfig};
use hsakmt_core::{Backend, Kfd};
use std::sync::{Arc, Mutex, MutexGuard};
use zerocopy::FromZeros;

/// What every handle shares: the thunk's context behind a lock, and its port for calls that
/// must not hold the lock (event waits, doorbell notices).
pub(crate) struct Inner {
    ctx: Mutex<Context>,
    pub(crate) kfd: Arc<dyn Kfd>,
}

impl Inner {
    pub(crate) fn ctx(&self) -> MutexGuard<'_, Context> {
        // A panic under the lock leaves the context as consistent as the thunk's own calls do.
        self.ctx.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One open KFD: `/dev/kfd` or an instance of the built-in software model.
///
/// Cheap to clone (a reference count). Buffers, events, queues and signals made from it keep it
/// open; it closes when the last of them and the last `Device` are dropped.
///
/// ```
/// let dev = hsakmt_api::Device::open_model("mi300x")?;
/// let nodes = dev.nodes()?;
/// let gpus: Vec<_> = nodes.iter().filter(|n| n.is_gpu()).collect();
/// assert_eq!(gpus.len(), 8);                 // the catalogue's MI300X system has eight GPUs
/// assert!(nodes.iter().any(|n| !n.is_gpu()));  // and CPU nodes
/// for n in &nodes {
///     println!("node {}: {} {}", n.id(), n.name(), n.gfx_target().unwrap_or_default());
/// }
/// assert_eq!(gpus[0].gfx_target().as_deref(), Some("gfx942"));
/// # Ok::<(), hsakmt_api::Error>(())
/// ```
#[derive(Clone)]
pub struct Device {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device").field("backend", &self.backend()).field("version", &self.version()).finish()
    }
}

fn set(var: &str) -> bool {
    std::env::var_os(var).is_some_and(|v| !v.is_empty())
}

impl Device {
    /// Open what `kmtinfo` opens: the built-in model when `HSA_MODEL_TOPOLOGY` or
    /// `HSAKMT_MODEL` asks for it, else `/dev/kfd` when the machine has one, else the built-in
    /// model's default system. `HSA_MODEL_LIB` (a model plugin) is served only by the C
    /// library: here it is an [`ErrorKind::Unsupported`] error.
    pub fn open() -> Result<Device> {
        if set("HSA_MODEL_LIB") {
            return Err(Error::new(ErrorKind::Unsupported, "HSA_MODEL_LIB: model plugins are served by libhsakmt.so, not by hsakmt-api"));
        }
        if set("HSA_MODEL_TOPOLOGY") || set("HSAKMT_MODEL") {
            return Self::open_model_from_env();
        }
        if std::path::Path::new(hsakmt_linux::KFD_DEVICE).exists() {
            return Self::open_kfd();
        }
        Self::open_model_default()
    }

    /// Open `/dev/kfd` (the amdkfd driver).
    pub fn open_kfd() -> Result<Device> {
        let k = hsakmt_linux::DevKfd::open()
            .map_err(|e| Error::new(ErrorKind::Open, format!("cannot open {} (errno {})", hsakmt_linux::KFD_DEVICE, e.0)))?;
        Self::with_port(Box::new(k))
    }

    /// A fresh instance of the built-in model running the catalogue system `name` (`mi300x`,
    /// `mi210`, `rx7900xtx`, …: `kmtinfo --list-models`). Each call makes a new model: two
    /// devices opened this way share nothing.
    #[cfg(feature = "model")]
    pub fn open_model(name: &str) -> Result<Device> {
        Self::open_model_config(hsakmt_model::ModelConfig::catalogue(name))
    }

    /// A fresh instance of the built-in model serving the sysfs-layout topology in `dir`.
    #[cfg(feature = "model")]
    pub fn open_model_dir(dir: impl Into<std::path::PathBuf>) -> Result<Device> {
        Self::open_model_config(hsakmt_model::ModelConfig::directory(dir))
    }

    #[cfg(feature = "model")]
    fn open_model_config(cfg: hsakmt_model::ModelConfig) -> Result<Device> {
        let m = hsakmt_model::Model::new_shared(cfg).map_err(|e| Error::new(ErrorKind::Open, format!("software model: {e}")))?;
        Self::with_port(Box::new(crate::model_port::ModelPort(m)))
    }

    #[cfg(feature = "model")]
    fn open_model_from_env() -> Result<Device> {
        let cfg = hsakmt_model::ModelConfig::from_env().map_err(|e| Error::new(ErrorKind::Open, format!("software model: {e}")))?;
        Self::open_model_config(cfg)
    }

    #[cfg(feature = "model")]
    fn open_model_default() -> Result<Device> {
        Self::open_model(hsakmt_model::catalogue::DEFAULT_ENTRY)
    }

    #[cfg(not(feature = "model"))]
    fn open_model_from_env() -> Result<Device> {
        Err(Error::new(ErrorKind::Unsupported, "the built-in model is not in this build (cargo feature `model` of hsakmt-api)"))
    }

    #[cfg(not(feature = "model"))]
    fn open_model_default() -> Result<Device> {
        Err(Error::new(
            ErrorKind::Open,
            format!("no {} on this machine, and the built-in model is not in this build", hsakmt_linux::KFD_DEVICE),
        ))
    }

    /// Open a context on `port` and take the topology snapshot.
    fn with_port(port: Box<dyn Kfd>) -> Result<Device> {
        let mut cfg = OpenConfig::default();
        cfg.memory.fmm = hsakmt_core::fmm::aperture::FmmConfig::from_env(hsakmt_linux::page_size() as u64, |_| None);
        let mut ctx = Context::open(port, cfg)?;
        ctx.acquire_system_properties()?;
        let kfd = ctx.kfd_shared();
        Ok(Device { inner: Arc::new(Inner { ctx: Mutex::new(ctx), kfd }) })
    }

    /// Where the answers come from: the kernel or the built-in model.
    pub fn backend(&self) -> Backend {
        self.inner.kfd.backend()
    }

    /// The KFD interface version (major, minor).
    pub fn version(&self) -> (u32, u32) {
        let v = self.inner.ctx().version();
        (v.KernelInterfaceMajorVersion, v.KernelInterfaceMinorVersion)
    }

    /// Live buffer objects, events and queues of the open (tests and leak checks).
    #[doc(hidden)]
    pub fn __live_counts(&self) -> (usize, usize, usize) {
        let c = self.inner.ctx();
        (c.live_buffer_objects(), c.live_events(), c.live_queues())
    }

    /// Every node of the topology (CPUs and GPUs), in the KFD's order.
    pub fn nodes(&self) -> Result<Vec<Node>> {
        let ctx = self.inner.ctx();
        let n = ctx.topology().map_or(0, |t| t.nodes.len()) as u32;
        (0..n).map(|id| Ok(Node { id, props: st("GetNodeProperties", ctx.node_properties(id))? })).collect()
    }

    /// The GPU nodes.
    pub fn gpus(&self) -> Result<Vec<Node>> {
        Ok(self.nodes()?.into_iter().filter(Node::is_gpu).collect())
    }

    /// Node `node`'s memory banks, then the heaps the thunk adds for GPUs (LDS, scratch, SVM).
    pub fn memory_banks(&self, node: &Node) -> Result<Vec<HsaMemoryProperties>> {
        let ctx = self.inner.ctx();
        let (_, n) = st("GetNodeProperties", ctx.node_properties_ref(node.id))?;
        let mut v: Vec<HsaMemoryProperties> = (0..n).map(|_| HsaMemoryProperties::new_zeroed()).collect();
        st("GetNodeMemoryProperties", ctx.node_memory_properties(node.id, &mut v))?;
        Ok(v)
    }
}

/// One node of the topology: a CPU or a GPU, with the properties the KFD reports.
#[derive(Clone)]
pub struct Node {
    id: u32,
    props: HsaNodeProperties,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node").field("id", &self.id).field("name", &self.name()).field("gpu_id", &self.gpu_id()).finish()
    }
}

impl Node {
    /// The node's index (what the thunk's calls take).
    pub fn id(&self) -> u32 {
        self.id
    }

    /// A GPU (it has a KFD gpu_id), not a CPU-only node.
    pub fn is_gpu(&self) -> bool {
        self.gpu_id() != 0
    }

    /// The KFD's gpu_id (0 for a CPU node).
    pub fn gpu_id(&self) -> u32 {
        self.props.KFDGpuID
    }

    /// The marketing name (for CPUs, the model name from /proc/cpuinfo).
    pub fn name(&self) -> String {
        let n = self.props.MarketingName;
        let end = n.iter().position(|&c| c == 0).unwrap_or(n.len());
        String::from_utf16_lossy(&n[..end])
    }

    /// `gfx942` and the like, for GPUs.
    pub fn gfx_target(&self) -> Option<String> {
        if !self.is_gpu() {
            return None;
        }
        let v = hsakmt_core::queue::gfxv(&self.props);
        Some(format!("gfx{}{:x}{:x}", v >> 16, (v >> 8) & 0xff, v & 0xff))
    }

    /// SIMDs (GPU) — `NumFComputeCores`.
    pub fn simd_count(&self) -> u32 {
        self.props.NumFComputeCores
    }

    /// CPU cores (CPU nodes and APUs).
    pub fn cpu_core_count(&self) -> u32 {
        self.props.NumCPUCores
    }

    /// SDMA engines (PCIe-side) of a GPU.
    pub fn sdma_engine_count(&self) -> u32 {
        self.props.NumSdmaEngines
    }

    /// All the properties, as the C API's `HsaNodeProperties`.
    pub fn properties(&self) -> &HsaNodeProperties {
        &self.props
    }
}
