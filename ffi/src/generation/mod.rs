//! ABI generations: which struct layouts a caller of the plain `hsaKmt*` symbols was built
//! with, decided once per process at the first hsaKmtOpenKFD.
//!
//! Upstream versions every symbol `HSAKMT_1` whatever the layouts, so a binary built against
//! any ROCm release binds the same names. Our own headers bind the functions whose structs
//! grew to suffixed symbols (`hsaKmtGetNodeProperties_abi1`, see `gen_bindings`), which always
//! serve the newest layout; the plain names serve the generation chosen here:
//! 1. `HSAKMT_ABI=<label>` when set (an unknown label makes every open fail with a message
//!    naming the accepted ones: never a silent default);
//! 2. otherwise the `hsaKmt*` symbols the loaded objects import: an object that imports a
//!    function was built against headers at least as new as the release that introduced
//!    it. The oldest such lower bound over all objects importing a plain grown function
//!    wins, and with no evidence at all the oldest generation: sizes only grow over time,
//!    so an unknown caller is never written past. Loaded as libdtif.so (a runtime started
//!    with `HSA_ENABLE_DTIF=1` takes every function with `dlsym`), the `hsaKmt*` names among
//!    an object's read-only strings count as its imports.

mod imports;

use crate::gen_bindings::BOUND;
use hsakmt_core::abi::generation::{function_since, Generation, Record};
pub use imports::{loaded_objects, ObjectImports};
use std::sync::atomic::{AtomicU8, Ordering};

const UNDECIDED: u8 = u8::MAX;
static CHOSEN: AtomicU8 = AtomicU8::new(UNDECIDED);

/// The generation of plain-symbol callers: the one chosen at the first open, or the oldest
/// before any open (such calls fail their open check before writing anything).
#[inline]
pub fn current() -> Generation {
    Generation::from_index(CHOSEN.load(Ordering::Relaxed)).unwrap_or(Generation::OLDEST)
}

/// Decide the generation if no open has yet: called by hsaKmtOpenKFD before anything else.
pub fn decide() -> Result<Generation, String> {
    if let Some(g) = Generation::from_index(CHOSEN.load(Ordering::Acquire)) {
        return Ok(g);
    }
    crate::log::init_from_env();
    let (g, why) = match std::env::var("HSAKMT_ABI") {
        Ok(v) => (parse_override(&v)?, format!("HSAKMT_ABI={v}")),
        Err(_) => {
            // Loaded as libdtif.so, the runtime takes every function with dlsym: the names it
            // passes are strings of its own, the evidence in place of imports.
            let dtif = imports::own_object_name().ends_with("libdtif.so");
            let (g, why) = choose(&loaded_objects(dtif));
            (g, if dtif { format!("{why} (libdtif.so: the hsaKmt* names in the loaded objects' strings count as imports)") } else { why })
        }
    };
    crate::log::warn(format_args!("ABI generation {} ({}) for callers of the plain hsaKmt* symbols: {why}\n", g.label(), g.releases()));
    CHOSEN.store(g as u8, Ordering::Release);
    Ok(g)
}

/// Parse an `HSAKMT_ABI` value: a generation label or `newest`.
pub fn parse_override(v: &str) -> Result<Generation, String> {
    Generation::from_label(v.trim()).ok_or_else(|| {
        let labels: Vec<&str> = Generation::ALL.iter().map(|g| g.label()).collect();
        format!("HSAKMT_ABI={v:?} is not an ABI generation; accepted values: {}", labels.join(", "))
    })
}

/// Whether `name` is the plain name of a function whose layouts differ between generations.
fn is_plain_bound(name: &str) -> bool {
    BOUND.iter().any(|&(plain, _, _)| plain == name)
}

/// The generation whose headers first declare `name`: ours for the symbols our headers bind
/// (`<name>_abi1`), else upstream's history.
fn since(name: &str) -> Option<Generation> {
    if BOUND.iter().any(|&(_, ours, _)| ours == name) {
        return Some(Generation::NEWEST);
    }
    function_since(name)
}

/// The decision from the loaded objects' imports, with the reason in words.
pub fn choose(objects: &[ObjectImports]) -> (Generation, String) {
    let mut chosen: Option<(Generation, &str, &str)> = None;
    for o in objects.iter().filter(|o| o.imports.iter().any(|i| is_plain_bound(i))) {
        // The newest function it imports bounds its headers from below.
        let (bound, witness) =
            o.imports.iter().filter_map(|i| since(i).map(|g| (g, i.as_str()))).max_by_key(|&(g, _)| g).unwrap_or((Generation::OLDEST, ""));
        if chosen.is_none_or(|(g, _, _)| bound < g) {
            chosen = Some((bound, o.name.as_str(), witness));
        }
    }
    match chosen {
        None => (
            Generation::OLDEST,
            "no loaded object imports a plain hsaKmt* function whose layout grew (oldest layouts: never written past)".into(),
        ),
        Some((g, name, witness)) => {
            let name = if name.is_empty() { "the main program" } else { name };
            let why = if witness.is_empty() {
                format!("{name} imports only functions older than every generation")
            } else {
                format!("{name} imports {witness} (since {})", since(witness).map_or("?", |g| g.label()))
            };
            (g, why)
        }
    }
}

/// The generation of a plain-symbol caller of a function introduced in `since` (its
/// [`function_since`]): the process's choice, but never older than the generation that
/// introduced the function (its callers' headers had it). See [`for_function!`].
#[inline]
pub fn for_since(since: Option<Generation>) -> Generation {
    let g = current();
    match since {
        Some(since) if since > g => since,
        _ => g,
    }
}

/// `for_function!("hsaKmtX")`: the generation of a plain-symbol caller of `hsaKmtX`, with the
/// function's introduction looked up at compile time (a plain export pays one atomic load).
macro_rules! for_function {
    ($name:expr) => {
        $crate::generation::for_since(const { hsakmt_core::abi::generation::function_since($name) })
    };
}
pub(crate) use for_function;

/// Write `v` (our layout of `r`) to `dst` as generation `g` lays `r` out: exactly
/// `g.size_of(r)` bytes, never more.
///
/// # Safety
/// `dst` must be valid for writes of `g.size_of(r)` bytes; `T` must be the Rust type of `r`
/// (every byte of it a member byte: the generator checks that grown records have no padding).
pub unsafe fn write_record<T: Copy>(g: Generation, r: Record, v: &T, dst: *mut u8) {
    debug_assert_eq!(size_of::<T>(), r.newest_size());
    match g.layout(r) {
        // SAFETY: the caller's contract (our layout is `T`'s).
        None => unsafe { dst.cast::<T>().write_unaligned(*v) },
        Some(l) => {
            // SAFETY: `T` has no padding (the caller's contract), so all its bytes are
            // initialised.
            let newest = unsafe { std::slice::from_raw_parts((v as *const T).cast::<u8>(), size_of::<T>()) };
            // SAFETY: the caller's contract covers `l.size` bytes at `dst`.
            unsafe { l.write_old(newest, dst) };
        }
    }
}

/// Write `v` as the member at byte `offset` of our layout of `r` into `dst`, a record of
/// generation `g`'s layout: where `g` has the member; nowhere if it does not.
///
/// # Safety
/// `dst` must be valid for writes of `g.size_of(r)` bytes; `offset` must be a member's offset
/// in our layout of `r`, of a member of type `V`.
pub unsafe fn write_member<V: Copy>(g: Generation, r: Record, offset: usize, v: V, dst: *mut u8) {
    let at = match g.layout(r) {
        None => Some(offset),
        Some(l) => l.old_offset(offset).filter(|&o| o + size_of::<V>() <= l.size),
    };
    if let Some(at) = at {
        // SAFETY: inside the caller's record (checked against `g`'s size).
        unsafe { dst.add(at).cast::<V>().write_unaligned(v) };
    }
}

/// Read `src` (generation `g`'s layout of `r`) into our layout; members `g` lacks are zero.
///
/// # Safety
/// `src` must be valid for reads of `g.size_of(r)` bytes; `T` as for [`write_record`].
pub unsafe fn read_record<T: Copy + zerocopy::FromZeros>(g: Generation, r: Record, src: *const u8) -> T {
    debug_assert_eq!(size_of::<T>(), r.newest_size());
    match g.layout(r) {
        // SAFETY: the caller's contract (our layout is `T`'s).
        None => unsafe { src.cast::<T>().read_unaligned() },
        Some(l) => {
            let mut v = T::new_zeroed();
            // SAFETY: the caller's contract covers `l.size` bytes at `src`.
            let old = unsafe { std::slice::from_raw_parts(src, l.size) };
            // SAFETY: `T` has no padding and every bit pattern the old layout can carry into
            // a member is one C could have stored there (plain integers and pointers).
            let newest = unsafe { std::slice::from_raw_parts_mut((&mut v as *mut T).cast::<u8>(), size_of::<T>()) };
            l.from_old(old, newest);
            v
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(name: &str, imports: &[&str]) -> ObjectImports {
        ObjectImports { name: name.into(), imports: imports.iter().map(|s| s.to_string()).collect() }
    }

    #[test]
    fn no_evidence_is_the_oldest_generation() {
        assert_eq!(choose(&[]).0, Generation::OLDEST);
        // Objects that bind only our suffixed symbols (built with our headers) are no evidence.
        let ours = obj("app", &["hsaKmtOpenKFD", "hsaKmtGetNodeProperties_abi1", "hsaKmtModelEnabled"]);
        assert_eq!(choose(&[ours]).0, Generation::OLDEST);
    }

    #[test]
    fn the_newest_import_bounds_an_object_and_the_oldest_object_wins() {
        let runtime = obj("libhsa-runtime64.so.1", &["hsaKmtGetNodeProperties", "hsaKmtModelEnabled", "hsaKmtOpenKFD"]);
        let (g, why) = choose(std::slice::from_ref(&runtime));
        assert_eq!(g.label(), "rocm-7.0");
        assert!(why.contains("libhsa-runtime64.so.1") && why.contains("hsaKmtModelEnabled"), "{why}");
        let tool = obj("", &["hsaKmtGetNodeProperties", "hsaKmtExportDMABufHandle"]);
        let (g, why) = choose(&[runtime, tool]);
        assert_eq!(g.label(), "rocm-5.6");
        assert!(why.contains("the main program"), "{why}");
    }

    #[test]
    fn a_dlsym_caller_built_with_our_headers_is_newest() {
        // A runtime built against our headers binds _abi1 symbols and, under DTIF, also
        // takes the plain names with dlsym: its structs are ours.
        let rt = obj("libhsa-runtime64.so.1", &["hsaKmtOpenKFD", "hsaKmtGetNodeProperties_abi1", "hsaKmtGetNodeProperties"]);
        assert_eq!(choose(&[rt]).0, Generation::NEWEST);
    }

    #[test]
    fn unknown_names_are_no_evidence() {
        let o = obj("x", &["hsaKmtGetNodeProperties", "hsaKmtSomethingFromTheFuture"]);
        assert_eq!(choose(&[o]).0, Generation::OLDEST);
    }

    #[test]
    fn a_function_is_never_served_older_than_its_introduction() {
        // hsaKmtCreateQueueV2 exists only in the newest headers.
        assert_eq!(function_since("hsaKmtCreateQueueV2"), Some(Generation::NEWEST));
        assert_eq!(function_since("hsaKmtCreateQueueExt").map(|g| g.label()), Some("rocm-6.3"));
    }

    #[test]
    fn override_labels() {
        assert_eq!(parse_override("newest"), Ok(Generation::NEWEST));
        assert_eq!(parse_override(" rocm-5.0 "), Ok(Generation::OLDEST));
        let e = parse_override("6.4").unwrap_err();
        assert!(e.contains("rocm-6.4") && e.contains("newest"), "{e}");
    }
}
