//! Standard output that ends kmtinfo quietly when the reader goes away (`kmtinfo | head -1`):
//! a closed pipe is the reader's choice, not an error, so kmtinfo exits with status 0 and
//! prints nothing more; any other write error is reported once, with status 1.

use std::io::Write;

/// Write `s` to standard output and flush it.
pub fn print(s: &str) {
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_all(s.as_bytes()).and_then(|()| o.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        let _ = writeln!(std::io::stderr(), "kmtinfo: writing to standard output: {e}");
        std::process::exit(1);
    }
}

/// `println!` that goes through [`print`].
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::out::print(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// Pretty-printed JSON and a newline.
pub fn json<T: serde::Serialize>(v: &T) {
    match serde_json::to_string_pretty(v) {
        Ok(s) => print(&(s + "\n")),
        Err(e) => {
            eprintln!("kmtinfo: JSON: {e}");
            std::process::exit(1);
        }
    }
}
