//! The loopback host: listens on a Unix socket and serves each guest that connects with a
//! session of its own on a fresh instance of the built-in model (`HSAKMT_MODEL`, default
//! mi300x), on a thread of its own. A guest that goes away has everything it held freed.
//!
//! Usage: hsakmt-virtio-host <socket path>

fn main() {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!("usage: hsakmt-virtio-host <socket path>");
        std::process::exit(2);
    };
    let listener = match hsakmt_virtio::loopback::listen(std::path::Path::new(&path)) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("hsakmt-virtio-host: cannot listen on {}: errno {e}", std::path::Path::new(&path).display());
            std::process::exit(1);
        }
    };
    // Ready: the socket accepts connections from now on.
    println!("listening");
    hsakmt_virtio::host::serve_model_guests(&listener);
}
