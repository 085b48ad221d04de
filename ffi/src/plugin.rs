//! A model plugin (`HSA_MODEL_LIB`) as the `Kfd` port: upstream's model interface 1.x —
//! `create_memfd` stands in for /dev/kfd, `handle_ioctl` takes raw KFD ioctls. The topology
//! comes from `HSA_MODEL_TOPOLOGY` (upstream's rule) or, as our extension, from the built-in
//! catalogue named by `HSAKMT_MODEL`.

use hsakmt_core::abi::model::{
    drm_cmd, DrmCloseArgs, DrmOpenRenderArgs, GetHsakmtModelFunctions, HsakmtModelFunctions, GET_HSAKMT_MODEL_FUNCTIONS,
    HSAKMT_MODEL_INTERFACE_VERSION_MAJOR,
};
use hsakmt_core::{Backend, Errno, Kfd, SysTree};
use libc::{dlerror, dlopen, dlsym, RTLD_LOCAL, RTLD_NOW};
use std::ffi::{c_int, c_void, CStr, CString};
use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::path::PathBuf;

/// Our plugins' `hsakmt_rs_get_model_functions(major)`: the table of that interface major (they
/// answer upstream's 0.4 under the plain export unless told otherwise).
const GET_MODEL_FUNCTIONS_BY_MAJOR: &CStr = c"hsakmt_rs_get_model_functions";
type GetModelFunctionsByMajor = unsafe extern "C" fn(u32) -> *const c_void;

/// Our plugins' `hsakmt_model_take_fork_handlers` (an optional export, see hsakmt_model::plugin).
const TAKE_FORK_HANDLERS: &CStr = c"hsakmt_model_take_fork_handlers";
type TakeForkHandlers = unsafe extern "C" fn(*mut Option<extern "C" fn()>, *mut Option<extern "C" fn()>) -> c_int;
type Hook = extern "C" fn();

/// The fork hooks of the plugins loaded so far: (prepare, release). Changed only by
/// `PluginKfd::load`, under the thunk lock, which the fork handlers hold when they read it.
static FORK_HOOKS: std::sync::Mutex<Vec<(Hook, Hook)>> = std::sync::Mutex::new(Vec::new());

/// From the thunk's prepare fork handler, after it took the thunk lock: the plugins' locks.
pub(crate) fn fork_prepare() {
    for (prepare, _) in FORK_HOOKS.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        prepare();
    }
}

/// From the thunk's parent and child fork handlers, before the thunk lock is let go.
pub(crate) fn fork_release() {
    for (_, release) in FORK_HOOKS.lock().unwrap_or_else(|e| e.into_inner()).iter().rev() {
        release();
    }
}

/// A plugin of ours hands its fork handling over, so its locks are taken after the thunk's.
fn take_fork_handlers(handle: *mut c_void) {
    // SAFETY: handle is valid; the symbol name is a C string constant.
    let sym = unsafe { dlsym(handle, TAKE_FORK_HANDLERS.as_ptr()) };
    if sym.is_null() {
        return; // another model library: it looks after its own locks
    }
    // SAFETY: our plugins define the export with this type.
    let take: TakeForkHandlers = unsafe { std::mem::transmute::<*mut c_void, TakeForkHandlers>(sym) };
    let (mut prepare, mut release) = (None, None);
    // SAFETY: two writable out-parameters.
    if unsafe { take(&mut prepare, &mut release) } == 0 {
        if let (Some(p), Some(r)) = (prepare, release) {
            FORK_HOOKS.lock().unwrap_or_else(|e| e.into_inner()).push((p, r));
        }
    }
}

fn last_errno() -> Errno {
    // SAFETY: __errno_location returns this thread's errno slot.
    Errno(unsafe { *libc::__errno_location() })
}

fn dl_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string valid until the next dl call.
    let p = unsafe { dlerror() };
    if p.is_null() {
        "unknown dynamic loader error".into()
    } else {
        // SAFETY: non-NULL, NUL-terminated (above).
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

enum Files {
    Dir(PathBuf),
    #[cfg(feature = "model")]
    Builtin(Box<hsakmt_model::SysFiles>),
}

pub struct PluginKfd {
    table: HsakmtModelFunctions,
    memfd: OwnedFd,
    files: Files,
}

// SAFETY: the table holds plain function pointers of a library that stays loaded for the
// life of the process (never dlclose'd); the plugin interface is called from any thread.
unsafe impl Send for PluginKfd {}
// SAFETY: as above; the port itself holds no interior mutability.
unsafe impl Sync for PluginKfd {}

impl PluginKfd {
    pub fn load(lib: &str) -> Result<PluginKfd, String> {
        let files = match std::env::var("HSA_MODEL_TOPOLOGY").ok().filter(|v| !v.is_empty()) {
            Some(dir) => {
                let p = PathBuf::from(&dir);
                if !p.join("nodes").is_dir() {
                    return Err(format!("HSA_MODEL_TOPOLOGY={dir} has no nodes/ directory"));
                }
                Files::Dir(p)
            }
            #[cfg(feature = "model")]
            None if std::env::var_os("HSAKMT_MODEL").is_some() => {
                Files::Builtin(Box::new(hsakmt_model::SysFiles::from_env().map_err(|e| e.to_string())?))
            }
            #[cfg(not(feature = "model"))]
            None if std::env::var_os("HSAKMT_MODEL").is_some() => {
                return Err("HSAKMT_MODEL names a built-in catalogue entry, and this libhsakmt was built without the software model \
                     (cargo feature `model` of hsakmt-ffi); give the plugin a topology directory with HSA_MODEL_TOPOLOGY"
                    .into())
            }
            None => return Err("a model plugin needs HSA_MODEL_TOPOLOGY (a topology directory) or HSAKMT_MODEL=<catalogue name>".into()),
        };
        let name = CString::new(lib).map_err(|_| "path contains a NUL byte".to_string())?;
        // SAFETY: dlopen with a valid C string; the library stays loaded (no dlclose).
        let handle = unsafe { dlopen(name.as_ptr(), RTLD_NOW | RTLD_LOCAL) };
        if handle.is_null() {
            return Err(dl_error());
        }
        take_fork_handlers(handle);
        // Our plugins serve two interfaces under the plain export (upstream ROCm's 0.4 by
        // default); their own export hands out the 1.x table we speak, whatever the environment
        // says. Other plugins have only the plain export.
        // SAFETY: handle is valid; the symbol name is a C string constant.
        let ours = unsafe { dlsym(handle, GET_MODEL_FUNCTIONS_BY_MAJOR.as_ptr()) };
        let tp = if ours.is_null() {
            std::ptr::null()
        } else {
            // SAFETY: our plugins define this export with this type.
            let get = unsafe { std::mem::transmute::<*mut c_void, GetModelFunctionsByMajor>(ours) };
            // SAFETY: the entry point returns a static table or NULL.
            unsafe { get(HSAKMT_MODEL_INTERFACE_VERSION_MAJOR) }.cast::<HsakmtModelFunctions>()
        };
        let tp = if tp.is_null() {
            // SAFETY: handle is valid; the symbol name is a C string constant.
            let sym = unsafe { dlsym(handle, GET_HSAKMT_MODEL_FUNCTIONS.as_ptr()) };
            if sym.is_null() {
                return Err("no get_hsakmt_model_functions export".into());
            }
            // SAFETY: the interface defines this export's type as GetHsakmtModelFunctions.
            let get: GetHsakmtModelFunctions = unsafe { std::mem::transmute::<*mut c_void, GetHsakmtModelFunctions>(sym) };
            // SAFETY: calling the plugin's entry point as the interface specifies.
            unsafe { get() }
        } else {
            tp
        };
        if tp.is_null() {
            return Err("get_hsakmt_model_functions returned NULL".into());
        }
        // The 1.x header is 8 bytes of versions; read them before trusting the rest.
        // SAFETY: the plugin returned a pointer to its static table.
        let (major, minor) = unsafe { ((*tp).version_major, (*tp).version_minor) };
        if major != HSAKMT_MODEL_INTERFACE_VERSION_MAJOR {
            return Err(format!(
                "model interface {major}.{minor} is not supported (need {HSAKMT_MODEL_INTERFACE_VERSION_MAJOR}.x; 0.x plugins serve \
                 upstream libhsakmt's own KFD emulation)"
            ));
        }
        // SAFETY: a 1.x table has at least create_memfd and handle_ioctl; handle_drm_call
        // exists from 1.1 on, so a 1.0 table is read without it.
        let table = unsafe {
            let mut t = HsakmtModelFunctions {
                version_major: major,
                version_minor: minor,
                create_memfd: (*tp).create_memfd,
                handle_ioctl: (*tp).handle_ioctl,
                handle_drm_call: None,
            };
            if minor >= 1 {
                t.handle_drm_call = (*tp).handle_drm_call;
            }
            t
        };
        let (Some(create), Some(_)) = (table.create_memfd, table.handle_ioctl) else {
            return Err("the model table lacks create_memfd or handle_ioctl".into());
        };
        // SAFETY: plugin entry point; returns an fd we own or -1.
        let fd = unsafe { create() };
        if fd < 0 {
            return Err(format!("create_memfd failed (errno {})", last_errno().0));
        }
        // SAFETY: the plugin handed us a fresh fd.
        let memfd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(PluginKfd { table, memfd, files })
    }

    fn drm(&self, cmd: u32, arg: *mut c_void) -> Option<Result<(), Errno>> {
        let f = self.table.handle_drm_call?;
        // SAFETY: plugin entry point with the argument struct the command defines.
        let r = unsafe { f(cmd, arg) };
        Some(if r == 0 { Ok(()) } else { Err(last_errno()) })
    }
}

impl Kfd for PluginKfd {
    unsafe fn ioctl(&self, request: u32, arg: &mut [u8]) -> Result<(), Errno> {
        if arg.len() < hsakmt_core::abi::ioc::size(request) {
            return Err(Errno(Errno::EINVAL));
        }
        let Some(f) = self.table.handle_ioctl else { return Err(Errno(Errno::ENOTTY)) };
        // SAFETY: the buffer covers the request's encoded size (checked above), so the
        // plugin's copies of the struct stay inside `arg`; addresses inside it are the caller's
        // promise (this function's contract), as for ioctl(2).
        let r = unsafe { f(request as std::ffi::c_ulong, arg.as_mut_ptr().cast()) };
        if r == 0 {
            Ok(())
        } else {
            Err(last_errno())
        }
    }

    unsafe fn mmap(&self, fixed_addr: Option<usize>, len: usize, prot: u32, shared: bool, offset: u64) -> Result<usize, Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { hsakmt_linux::mmap_fd(self.memfd.as_fd(), fixed_addr, len, prot, shared, offset) }
    }

    unsafe fn munmap(&self, addr: usize, len: usize) -> Result<(), Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { hsakmt_linux::munmap(addr, len) }
    }

    unsafe fn map_anonymous(&self, fixed_addr: Option<usize>, hint: usize, len: usize, prot: u32) -> Result<usize, Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { hsakmt_linux::map_anonymous(fixed_addr, hint, len, prot) }
    }

    unsafe fn release_va(&self, addr: usize, len: usize) -> Result<(), Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { hsakmt_linux::munmap(addr, len) }
    }

    fn open_render_node(&self, minor: u32) -> Result<i32, Errno> {
        let mut fd: c_int = -1;
        let mut args = DrmOpenRenderArgs { minor: minor as c_int, fd_out: &mut fd };
        match self.drm(drm_cmd::OPEN_RENDER, (&mut args as *mut DrmOpenRenderArgs).cast()) {
            Some(r) => r.map(|()| fd),
            // A 1.0 model simulates no DRM: stand in with a duplicate of the model's fd.
            None => {
                self.memfd.try_clone().map(std::os::fd::IntoRawFd::into_raw_fd).map_err(|e| Errno(e.raw_os_error().unwrap_or(Errno::EIO)))
            }
        }
    }

    fn close_render_node(&self, fd: i32) {
        let mut args = DrmCloseArgs { fd };
        if self.drm(drm_cmd::CLOSE, (&mut args as *mut DrmCloseArgs).cast()).is_none() {
            hsakmt_linux::close_fd(fd);
        }
    }

    fn read_file(&self, tree: SysTree, path: &str, buf: &mut [u8]) -> Result<usize, Errno> {
        match &self.files {
            // Upstream's model mode: the topology from the directory, CPU data from the host.
            Files::Dir(root) => hsakmt_linux::read_into(&hsakmt_linux::tree_path(root, tree, path), buf),
            #[cfg(feature = "model")]
            Files::Builtin(m) => m.read_file(tree, path, buf),
        }
    }

    fn count_numbered_entries(&self, tree: SysTree, dir: &str) -> Result<u32, Errno> {
        match &self.files {
            Files::Dir(root) => hsakmt_linux::count_numbered(&hsakmt_linux::tree_path(root, tree, dir)),
            #[cfg(feature = "model")]
            Files::Builtin(m) => m.count_numbered_entries(tree, dir),
        }
    }

    fn process_id(&self) -> u32 {
        hsakmt_linux::pid()
    }

    fn prefault_user_range(&self, addr: usize, len: usize) -> Result<(), Errno> {
        hsakmt_linux::prefault(addr, len)
    }

    fn advise_dont_fork(&self, addr: usize, len: usize) -> Result<(), Errno> {
        // The plugin's model runs in this process: the memory is this process's.
        hsakmt_linux::dont_fork(addr, len)
    }

    fn backend(&self) -> Backend {
        Backend::PluginModel
    }
}
