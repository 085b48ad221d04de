//! Regression tests for the faults a bad-input / fork campaign found in the C API (issue 9),
//! each a C program built against our headers and run on the built-in model in its own
//! process, bounded by a timeout (a hang is a failure, never a stuck test run):
//!
//! - `events_fork.c`: fork() while two threads are inside SetEvent / ResetEvent / WaitOnEvent;
//!   every child reopens the thunk and uses events (it hung in its first CreateEvent when it
//!   inherited the model's event lock held). On the built-in model and on the model plugin.
//! - `bounds.c`: WaitOnMultipleEvents(_Ext) with NumEvents = 0xFFFFFFFF and SVMSetAttr /
//!   SVMGetAttr with nattr = 0xFFFFFFFF (the process aborted allocating tens of GB) answer a
//!   status, the kernel's limits (74898 events, 2044 attributes) hold exactly, and
//!   GetNodeMemoryProperties writes no entry past the node's banks (topology_smoke in c_api.rs
//!   checks the same for banks, caches and links on every catalogue system).
//!
//! Needs a C compiler (`$CC` or `cc`); a missing one fails the test.

#[path = "support/cprog.rs"]
#[allow(dead_code)] // shared helpers, not all used here
mod cprog;

use cprog::{command, compile, show};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("faults");
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    })
}

/// Build `<name>.c` once (against our headers, with pthreads).
fn program(name: &str) -> PathBuf {
    static LOCK: Mutex<()> = Mutex::new(());
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let exe = scratch().join(name);
    if exe.exists() {
        return exe;
    }
    let inc = format!("-I{}/include", cprog::MANIFEST);
    compile(scratch(), &format!("{name}.c"), name, &[&inc, "-pthread"])
}

/// libhsakmt_model.so, the model built as a plugin: cargo builds it into deps/ with this
/// package's dependencies, next to libhsakmt.so.
fn model_plugin() -> PathBuf {
    let p = cprog::cdylib().with_file_name("libhsakmt_model.so");
    assert!(p.is_file(), "{} not built (cargo builds the model's cdylib as a dependency of hsakmt-ffi)", p.display());
    p
}

/// Run `exe` on the model `model` (through `plugin` if given) with `args`; kill it and fail
/// after `limit`.
fn run_bounded(exe: &Path, model: &str, plugin: Option<&Path>, args: &[&str], limit: Duration) -> Output {
    let mut cmd = command(scratch(), exe);
    cmd.env("HSAKMT_MODEL", model).args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    if let Some(p) = plugin {
        cmd.env("HSA_MODEL_LIB", p);
    }
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot run {exe:?}: {e}"));
    let start = Instant::now();
    loop {
        if child.try_wait().expect("try_wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let o = child.wait_with_output().expect("output");
            panic!("{exe:?} did not finish within {limit:?} (hung):\n{}", show(&o));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn assert_ok(o: &Output, marker: &str) {
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && out.contains(marker), "{}", show(o));
}

/// Two threads hammer one event (set + reset, and polling waits) while the main thread forks
/// 100 children; each child reopens the thunk, creates, sets, waits on and destroys an event of
/// its own. No child may hang (each has a 10 s alarm) or fail.
#[test]
fn fork_while_other_threads_are_in_event_calls() {
    let exe = program("events_fork");
    let o = run_bounded(&exe, "rx7900xtx", None, &["100"], Duration::from_secs(240));
    assert_ok(&o, "events_fork: OK");
}

/// The same through the model plugin (`HSA_MODEL_LIB`): the plugin's locks are taken after the
/// thunk's at fork (the plugin hands its fork handling to the thunk), and are fork-safe too.
#[test]
fn fork_while_other_threads_are_in_event_calls_on_the_plugin() {
    let exe = program("events_fork");
    let plugin = model_plugin();
    let o = run_bounded(&exe, "rx7900xtx", Some(&plugin), &["100"], Duration::from_secs(240));
    assert_ok(&o, "events_fork: OK");
}

/// Huge counts are bounded as the kernel bounds them, before anything is allocated; no array
/// entry past the real data is written.
#[test]
fn huge_counts_and_short_arrays() {
    let exe = program("bounds");
    let o = run_bounded(&exe, "mi210", None, &[], Duration::from_secs(120));
    assert_ok(&o, "bounds: OK");
}
