//! `HSAKMT_DEBUG_LEVEL` logging to stderr, with upstream's levels: 3 error, 4 warning,
//! 6 info, 7 debug; any other value (and the default) is silent.

use std::io::Write;
use std::sync::atomic::{AtomicI32, Ordering};

pub const ERR: i32 = 3;
pub const WARNING: i32 = 4;
pub const INFO: i32 = 6;
pub const DEBUG: i32 = 7;

static LEVEL: AtomicI32 = AtomicI32::new(-1);

/// Read `HSAKMT_DEBUG_LEVEL` (upstream reads it at the first open).
pub fn init_from_env() {
    let level = std::env::var("HSAKMT_DEBUG_LEVEL")
        .ok()
        .and_then(|v| v.trim().parse::<i32>().ok())
        .filter(|v| (ERR..=DEBUG).contains(v))
        .unwrap_or(-1);
    LEVEL.store(level, Ordering::Relaxed);
}

pub fn enabled(level: i32) -> bool {
    LEVEL.load(Ordering::Relaxed) >= level
}

fn emit(level: i32, args: std::fmt::Arguments<'_>) {
    if enabled(level) {
        let _ = std::io::stderr().lock().write_fmt(format_args!("hsakmt: {args}"));
    }
}

pub fn error(args: std::fmt::Arguments<'_>) {
    emit(ERR, args)
}
pub fn warn(args: std::fmt::Arguments<'_>) {
    emit(WARNING, args)
}
pub fn info(args: std::fmt::Arguments<'_>) {
    emit(INFO, args)
}
pub fn debug(args: std::fmt::Arguments<'_>) {
    emit(DEBUG, args)
}
