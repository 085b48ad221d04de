//! The process-wide thunk behind the classic (context-free) hsaKmt* API, and the choice of
//! backend at open: `/dev/kfd` by default; the built-in model when `HSA_MODEL_TOPOLOGY` or
//! `HSAKMT_MODEL` is set; a model plugin when `HSA_MODEL_LIB` names one.

use crate::log;
use hsakmt_core::context::{Context, OpenConfig, OpenError, Thunk};
use hsakmt_core::{Kfd, KmtResult, Status};
#[cfg(feature = "model")]
use std::sync::Arc;

/// A pthread mutex, as upstream uses: waiters sleep in the kernel (no spinning with more
/// threads than cores), and the fork handlers below keep it consistent across fork().
pub struct ThunkLock {
    /// The C library's own `pthread_mutex_t` (its size and initializer differ between targets:
    /// 40 bytes on x86_64 glibc, 48 on aarch64).
    raw: std::cell::UnsafeCell<libc::pthread_mutex_t>,
    thunk: std::cell::UnsafeCell<Thunk>,
}

// SAFETY: `thunk` is only reached through `lock()`, which holds the pthread mutex.
unsafe impl Sync for ThunkLock {}

impl ThunkLock {
    const fn new() -> Self {
        ThunkLock { raw: std::cell::UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER), thunk: std::cell::UnsafeCell::new(Thunk::new()) }
    }

    pub fn lock(&'static self) -> ThunkGuard {
        // SAFETY: a statically initialised default mutex (in a static: never moved).
        unsafe { libc::pthread_mutex_lock(self.raw.get()) };
        ThunkGuard { lock: self }
    }

    /// # Safety
    /// The calling thread must hold the mutex (taken with a forgotten guard).
    unsafe fn force_unlock(&self) {
        // SAFETY: the caller holds the mutex.
        unsafe { libc::pthread_mutex_unlock(self.raw.get()) };
    }
}

pub struct ThunkGuard {
    lock: &'static ThunkLock,
}

impl std::ops::Deref for ThunkGuard {
    type Target = Thunk;
    fn deref(&self) -> &Thunk {
        // SAFETY: the guard holds the mutex, so no other reference exists.
        unsafe { &*self.lock.thunk.get() }
    }
}

impl std::ops::DerefMut for ThunkGuard {
    fn deref_mut(&mut self) -> &mut Thunk {
        // SAFETY: the guard holds the mutex, so no other reference exists.
        unsafe { &mut *self.lock.thunk.get() }
    }
}

impl Drop for ThunkGuard {
    fn drop(&mut self) {
        // SAFETY: this guard took the mutex in `lock`.
        unsafe { self.lock.force_unlock() };
    }
}

/// One lock for the process-wide thunk.
static THUNK: ThunkLock = ThunkLock::new();

/// The caller's pid (fork detection on every call): cached, refreshed in a forked child.
pub fn pid() -> u32 {
    hsakmt_linux::pid()
}

pub fn thunk() -> ThunkGuard {
    THUNK.lock()
}

/// Run `f` on the context of this call: the primary (KERNEL_IO_CHANNEL_NOT_OPENED unless this
/// process has it open), or the secondary one a `*Ctx` export selected (`contexts.rs`; the
/// primary must be open too, then an unknown context is INVALID_PARAMETER).
pub fn with_ctx<R>(f: impl FnOnce(&Context) -> KmtResult<R>) -> KmtResult<R> {
    let t = THUNK.lock();
    match crate::contexts::selected() {
        None => f(t.ctx(pid())?),
        Some(token) => f(t.secondary(pid(), token)?),
    }
}

pub fn with_ctx_mut<R>(f: impl FnOnce(&mut Context) -> KmtResult<R>) -> KmtResult<R> {
    let mut t = THUNK.lock();
    match crate::contexts::selected() {
        None => f(t.ctx_mut(pid())?),
        Some(token) => f(t.secondary_mut(pid(), token)?),
    }
}

/// Which backend the environment asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    Kernel,
    BuiltinModel,
    Plugin(String),
}

pub fn selection() -> Selection {
    let set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
    if let Some(lib) = std::env::var("HSA_MODEL_LIB").ok().filter(|v| !v.is_empty()) {
        Selection::Plugin(lib)
    } else if set("HSA_MODEL_TOPOLOGY") || set("HSAKMT_MODEL") {
        Selection::BuiltinModel
    } else {
        Selection::Kernel
    }
}

/// Upstream's environment, read once per first open: `HSA_OVERRIDE_GFX_VERSION` and its
/// per-node form `HSA_OVERRIDE_GFX_VERSION_<node>`, and `HSA_USE_SVM` (anything but "0" keeps
/// the SVM API).
pub fn open_config() -> OpenConfig {
    let mut cfg = OpenConfig::default();
    let t = &mut cfg.topology;
    for (k, v) in std::env::vars_os() {
        let (Some(k), Some(v)) = (k.to_str(), v.to_str()) else { continue };
        if k == "HSA_OVERRIDE_GFX_VERSION" {
            t.set_gfx_override(None, v);
        } else if let Some(node) = k.strip_prefix("HSA_OVERRIDE_GFX_VERSION_").and_then(|n| n.parse::<u32>().ok()) {
            t.set_gfx_override(Some(node), v);
        }
    }
    t.disable_svm = std::env::var("HSA_USE_SVM").is_ok_and(|v| v == "0");
    let env: Vec<(String, String)> = std::env::vars().filter(|(k, _)| k.starts_with("HSA_")).collect();
    let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    cfg.memory.fmm = hsakmt_core::fmm::aperture::FmmConfig::from_env(hsakmt_linux::page_size() as u64, get);
    cfg.memory.zfb = get("HSA_ZFB").and_then(|v| v.trim().parse::<i64>().ok()).is_some_and(|v| v != 0);
    cfg
}

/// A port for tests and benches to open instead of the one the environment selects.
pub type PortFactory = fn() -> Box<dyn Kfd>;

static PORT_OVERRIDE: std::sync::Mutex<Option<PortFactory>> = std::sync::Mutex::new(None);

/// Make the next opens use `factory`'s port (`None`: the environment decides again). A Rust
/// hook for benches and tests (a null port measures the thunk alone); not part of the C API.
#[doc(hidden)]
pub fn set_port_override(factory: Option<PortFactory>) {
    *PORT_OVERRIDE.lock().unwrap_or_else(|e| e.into_inner()) = factory;
}

/// Build the port the environment selects. Model configuration errors are always printed
/// (they are a user's setup mistake and the status alone cannot say what is wrong).
pub fn make_port() -> Result<(Box<dyn Kfd>, OpenConfig), OpenError> {
    log::init_from_env();
    if let Some(factory) = *PORT_OVERRIDE.lock().unwrap_or_else(|e| e.into_inner()) {
        return Ok((factory(), open_config()));
    }
    let model_err = |what: String| {
        eprintln!("hsakmt: {what}");
        OpenError { status: Status::ERROR, message: what }
    };
    let port: Box<dyn Kfd> = match selection() {
        Selection::Kernel => match hsakmt_linux::DevKfd::open() {
            Ok(k) => Box::new(k),
            Err(e) => {
                let message =
                    format!("cannot open {} (errno {}); set HSAKMT_MODEL=<name> to use the software model", hsakmt_linux::KFD_DEVICE, e.0);
                log::error(format_args!("{message}\n"));
                return Err(OpenError { status: Status::KERNEL_IO_CHANNEL_NOT_OPENED, message });
            }
        },
        #[cfg(feature = "model")]
        Selection::BuiltinModel => match builtin_model() {
            Ok(m) => Box::new(SharedModel { model: m, release_on_drop: true }),
            Err(e) => return Err(model_err(format!("software model: {e}"))),
        },
        #[cfg(not(feature = "model"))]
        Selection::BuiltinModel => {
            return Err(model_err(
                "HSAKMT_MODEL / HSA_MODEL_TOPOLOGY ask for the built-in software model, and this libhsakmt was built without it \
                 (cargo feature `model` of hsakmt-ffi); use /dev/kfd, or a model plugin with HSA_MODEL_LIB"
                    .into(),
            ))
        }
        Selection::Plugin(lib) => match crate::plugin::PluginKfd::load(&lib) {
            Ok(p) => Box::new(p),
            Err(e) => return Err(model_err(format!("HSA_MODEL_LIB={lib}: {e}"))),
        },
    };
    Ok((port, open_config()))
}

#[cfg(feature = "model")]
/// The built-in model plays the kernel: one instance per process tree and configuration, kept
/// across CloseKFD/OpenKFD and inherited by forked children (which re-open it as themselves),
/// so that what a parent exported over IPC a child can import.
static BUILTIN: std::sync::Mutex<Option<(String, Arc<hsakmt_model::Model>)>> = std::sync::Mutex::new(None);

#[cfg(feature = "model")]
fn builtin_model() -> Result<Arc<hsakmt_model::Model>, hsakmt_model::ModelError> {
    let key: String = ["HSA_MODEL_TOPOLOGY", "HSAKMT_MODEL", "HSAKMT_MODEL_KFD_VERSION"]
        .iter()
        .map(|k| std::env::var(k).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\u{1}");
    // Only make_port takes this lock, and only under the thunk lock, which the fork handlers
    // hold across fork(): it is never held at fork time.
    let mut slot = BUILTIN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((k, m)) = slot.as_ref() {
        if *k == key {
            // Open it as this process (a forked child's copy belongs to the parent until then).
            let _ = m.create_memfd();
            return Ok(m.clone());
        }
    }
    let m = hsakmt_model::Model::new_shared(hsakmt_model::ModelConfig::from_env()?)?;
    *slot = Some((key, m.clone()));
    Ok(m)
}

#[cfg(feature = "model")]
/// The shared built-in model as a port. With `release_on_drop`, dropping it (the last
/// CloseKFD) is the process closing /dev/kfd: the model releases what the process still held.
/// (Leak tests turn that off to see what the thunk itself gave back.)
pub struct SharedModel {
    pub model: Arc<hsakmt_model::Model>,
    pub release_on_drop: bool,
}

#[cfg(feature = "model")]
impl Drop for SharedModel {
    fn drop(&mut self) {
        if self.release_on_drop {
            self.model.release_process();
        }
    }
}

#[cfg(feature = "model")]
impl Kfd for SharedModel {
    unsafe fn ioctl(&self, request: u32, arg: &mut [u8]) -> Result<(), hsakmt_core::Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { self.model.ioctl(request, arg) }
    }
    unsafe fn ioctl_value(&self, request: u32, arg: &mut [u8]) -> Result<u32, hsakmt_core::Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { self.model.ioctl_value(request, arg) }
    }
    fn wait_events(&self, data: &mut [hsakmt_core::event::EventData], wait_all: bool, timeout_ms: u32) -> Result<u32, hsakmt_core::Errno> {
        self.model.wait_events(data, wait_all, timeout_ms)
    }
    unsafe fn mmap(&self, fixed: Option<usize>, len: usize, prot: u32, shared: bool, offset: u64) -> Result<usize, hsakmt_core::Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { self.model.mmap(fixed, len, prot, shared, offset) }
    }
    unsafe fn munmap(&self, addr: usize, len: usize) -> Result<(), hsakmt_core::Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { self.model.munmap(addr, len) }
    }
    unsafe fn mmap_bo(&self, fd: i32, fixed: Option<usize>, len: usize, prot: u32, offset: u64) -> Result<usize, hsakmt_core::Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { self.model.mmap_bo(fd, fixed, len, prot, offset) }
    }
    unsafe fn map_anonymous(&self, fixed: Option<usize>, hint: usize, len: usize, prot: u32) -> Result<usize, hsakmt_core::Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { self.model.map_anonymous(fixed, hint, len, prot) }
    }
    unsafe fn release_va(&self, addr: usize, len: usize) -> Result<(), hsakmt_core::Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { self.model.release_va(addr, len) }
    }
    fn open_render_node(&self, minor: u32) -> Result<i32, hsakmt_core::Errno> {
        self.model.open_render_node(minor)
    }
    fn close_render_node(&self, fd: i32) {
        self.model.close_render_node(fd)
    }
    fn read_file(&self, tree: hsakmt_core::SysTree, path: &str, buf: &mut [u8]) -> Result<usize, hsakmt_core::Errno> {
        self.model.read_file(tree, path, buf)
    }
    fn count_numbered_entries(&self, tree: hsakmt_core::SysTree, dir: &str) -> Result<u32, hsakmt_core::Errno> {
        self.model.count_numbered_entries(tree, dir)
    }
    fn process_id(&self) -> u32 {
        self.model.process_id()
    }
    fn kfd_file_fd(&self) -> Option<i32> {
        self.model.kfd_file_fd()
    }
    fn backend(&self) -> hsakmt_core::Backend {
        self.model.backend()
    }
    fn open_further(&self) -> Result<Box<dyn Kfd>, hsakmt_core::Errno> {
        // Another file of the model's /dev/kfd (a secondary context's, model/src/file.rs).
        Ok(Box::new(self.model.open_file()))
    }
    fn doorbell_rung(&self, queue_id: u32) {
        // The watcher would notice the write on its next pass; this runs the engine at once.
        let _ = self.model.ring_doorbell(queue_id);
    }
    fn gpu_counter_khz(&self, gpu_id: u32) -> Option<u64> {
        self.model.gpu_counter_khz(gpu_id)
    }
    fn pmc_counter(&self, gpu_id: u32, block: u32, counter_id: u64) -> Option<u64> {
        self.model.pmc_counter(gpu_id, block, counter_id)
    }
    fn prefault_user_range(&self, addr: usize, len: usize) -> Result<(), hsakmt_core::Errno> {
        // The model runs in this process: its user pages are this process's.
        hsakmt_linux::prefault(addr, len)
    }
    fn advise_dont_fork(&self, addr: usize, len: usize) -> Result<(), hsakmt_core::Errno> {
        self.model.advise_dont_fork(addr, len)
    }
    fn drm_import_dmabuf(&self, render_fd: i32, dmabuf_fd: i32) -> Result<(u32, u64), hsakmt_core::Errno> {
        self.model.drm_import_dmabuf(render_fd, dmabuf_fd)
    }
    fn drm_export_dmabuf(&self, render_fd: i32, gem: u32) -> Result<i32, hsakmt_core::Errno> {
        self.model.drm_export_dmabuf(render_fd, gem)
    }
    fn drm_gem_va(&self, render_fd: i32, gem: u32, op: &hsakmt_core::GemVaOp) -> Result<(), hsakmt_core::Errno> {
        self.model.drm_gem_va(render_fd, gem, op)
    }
    fn drm_mmap_offset(&self, render_fd: i32, gem: u32) -> Result<u64, hsakmt_core::Errno> {
        self.model.drm_mmap_offset(render_fd, gem)
    }
    fn drm_gem_close(&self, render_fd: i32, gem: u32) -> Result<(), hsakmt_core::Errno> {
        self.model.drm_gem_close(render_fd, gem)
    }
}

#[cfg(feature = "model")]
/// The built-in model this process uses, if one was opened (tests and tools look at it).
pub fn builtin_model_instance() -> Option<Arc<hsakmt_model::Model>> {
    BUILTIN.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map(|(_, m)| m.clone())
}

/// Fork safety: hold the lock across fork() so no other thread is inside it, then release
/// it on both sides. The child then sees the pid change and treats the inherited thunk as
/// not open (upstream's rule). The built-in model's slot is held too (a child reopening takes
/// it), and the model's own locks are taken after ours: its handlers are registered first, and
/// prepare handlers run in the reverse order of registration (a thread holding our lock may
/// wait for a model lock, never the other way round).
mod atfork {
    #[cfg(feature = "model")]
    use std::cell::RefCell;
    #[cfg(feature = "model")]
    use std::sync::MutexGuard;

    #[cfg(feature = "model")]
    type Slot = Option<(String, std::sync::Arc<hsakmt_model::Model>)>;
    #[cfg(feature = "model")]
    thread_local! {
        static BUILTIN_HELD: RefCell<Option<MutexGuard<'static, Slot>>> = const { RefCell::new(None) };
    }
    extern "C" fn prepare() {
        core::mem::forget(super::THUNK.lock());
        #[cfg(feature = "model")]
        {
            let slot = super::BUILTIN.lock().unwrap_or_else(|e| e.into_inner());
            let _ = BUILTIN_HELD.try_with(|h| *h.borrow_mut() = Some(slot));
        }
        crate::plugin::fork_prepare();
    }
    extern "C" fn release() {
        crate::plugin::fork_release();
        #[cfg(feature = "model")]
        let _ = BUILTIN_HELD.try_with(|h| h.borrow_mut().take());
        // SAFETY: `prepare` took the lock in this thread and leaked its guard; fork() has
        // returned, so releasing it here (parent and child, the same thread) is sound.
        unsafe { super::THUNK.force_unlock() };
    }
    static ONCE: std::sync::Once = std::sync::Once::new();
    pub fn install() {
        ONCE.call_once(|| {
            #[cfg(feature = "model")]
            hsakmt_model::fork::install_fork_handlers();
            // SAFETY: registering plain extern "C" functions with no captured state.
            unsafe { libc::pthread_atfork(Some(prepare), Some(release), Some(release)) };
        });
    }
}

pub fn install_fork_handlers() {
    atfork::install();
}

#[cfg(test)]
mod tests {
    use super::thunk;
    use std::cell::UnsafeCell;

    struct Counter(UnsafeCell<u64>);
    // SAFETY: only touched with the thunk lock held (below).
    unsafe impl Sync for Counter {}

    /// The thunk lock (the C library's pthread mutex, from its static initializer) excludes:
    /// a plain read-yield-write under it from four threads loses no update.
    #[test]
    fn the_thunk_lock_excludes() {
        static COUNT: Counter = Counter(UnsafeCell::new(0));
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for i in 0..2000 {
                        let _held = thunk();
                        // SAFETY: the lock is held: no other thread touches the counter.
                        let v = unsafe { *COUNT.0.get() };
                        if i % 64 == 0 {
                            std::thread::yield_now();
                        }
                        // SAFETY: as above.
                        unsafe { *COUNT.0.get() = v + 1 };
                    }
                });
            }
        });
        let _held = thunk();
        // SAFETY: as above.
        assert_eq!(unsafe { *COUNT.0.get() }, 8000);
    }
}
