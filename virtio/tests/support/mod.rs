//! What the cross-process tests share: a socket path of their own, the host binary in a
//! process of its own on the model, ready when it says so, and the direct API on a model of the
//! same catalogue entry to compare the host's answers with.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// A socket path for test `name`, unique per test process, in the system's temporary directory
/// (a short path: Unix socket paths are limited to 107 bytes, a checkout's target/ may be deeper).
pub fn socket_path(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hsakmt-virtio-{}-{name}", std::process::id()));
    let _ = std::fs::create_dir_all(&d);
    let sock = d.join("sock");
    let _ = std::fs::remove_file(&sock);
    sock
}

/// `hsakmt-virtio-host` serving `HSAKMT_MODEL=mi300x` guests on the socket of test `name`.
pub fn spawn_host(name: &str) -> (Child, PathBuf) {
    let sock = socket_path(name);
    let mut c = Command::new(env!("CARGO_BIN_EXE_hsakmt-virtio-host"))
        .arg(&sock)
        .env("HSAKMT_MODEL", "mi300x")
        .stdout(Stdio::piped())
        .spawn()
        .expect("the host runs");
    let mut line = String::new();
    BufReader::new(c.stdout.take().expect("piped")).read_line(&mut line).expect("the host says it listens");
    assert_eq!(line.trim(), "listening");
    (c, sock)
}

/// The thunk's context opened directly (no VirtIO) on a model of catalogue entry `entry`,
/// through the same share port the host uses.
pub fn direct_context(entry: &str) -> hsakmt_core::context::Context {
    let (sp, tbl) = hsakmt_virtio::host::SharePort::new(
        hsakmt_model::Model::new_shared(hsakmt_model::ModelConfig::catalogue(entry)).expect("model"),
        None,
    )
    .expect("port");
    drop(tbl);
    hsakmt_core::context::Context::open(Box::new(sp), Default::default()).expect("direct")
}
