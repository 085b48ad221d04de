//! Which `hsaKmt*` functions each loaded ELF object imports: the evidence for the ABI
//! generation of callers that bind the plain (unsuffixed) symbols.
//!
//! Read from the dynamic symbol tables the loader has mapped (`dl_iterate_phdr`), never from
//! files: an object that is loaded is exactly what will call us, whatever its path.

use std::ffi::{c_int, c_void, CStr};

/// One loaded object that imports at least one `hsaKmt*` symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectImports {
    /// The loader's name for it (`""` for the main program).
    pub name: String,
    /// The imported `hsaKmt*` symbol names (or, for `dlsym` callers, the `hsaKmt*` names
    /// among its read-only strings: see [`loaded_objects`]).
    pub imports: Vec<String>,
}

/// What the walk over the loaded objects looks for.
struct Walk {
    out: Vec<ObjectImports>,
    /// Also read the `hsaKmt*` names among the read-only strings of objects that import none:
    /// a runtime that takes the thunk with `dlsym` (DTIF) names its functions there.
    strings: bool,
    /// An address inside this library, whose own object is never evidence.
    own: u64,
}

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const PF_X: u32 = 1;
const PF_R: u32 = 4;
const DT_NULL: u64 = 0;
const DT_HASH: u64 = 4;
const DT_STRTAB: u64 = 5;
const DT_SYMTAB: u64 = 6;
const DT_STRSZ: u64 = 10;
const DT_SYMENT: u64 = 11;
const DT_GNU_HASH: u64 = 0x6fff_fef5;
const SYM_SIZE: u64 = 24; // Elf64_Sym
const SHN_UNDEF: u16 = 0;

/// Every loaded object's `hsaKmt*` imports (objects importing none are left out). With
/// `strings`, the `hsaKmt*` names among an object's read-only strings count as imports too.
pub fn loaded_objects(strings: bool) -> Vec<ObjectImports> {
    let mut walk = Walk { out: Vec::new(), strings, own: (loaded_objects as fn(bool) -> Vec<ObjectImports>) as usize as u64 };
    // SAFETY: `visit` matches dl_iterate_phdr's callback type and only uses `data` as the
    // `Walk` passed here, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&mut walk as *mut Walk).cast()) };
    walk.out
}

/// The file name of the object this library was loaded from (`libhsakmt.so.1`, `libdtif.so`,
/// or the program that links it statically), as the loader knows it.
pub fn own_object_name() -> String {
    // SAFETY: dladdr only reads the loader's tables; `info` is plain data it fills in.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: any address is allowed; this one is in our own code.
    let found = unsafe { libc::dladdr(own_object_name as *const c_void, &mut info) } != 0;
    if !found || info.dli_fname.is_null() {
        return String::new();
    }
    // SAFETY: a NUL-terminated string of the loader's.
    unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned()
}

unsafe extern "C" fn visit(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
    // SAFETY: dl_iterate_phdr passes a valid info for the duration of the callback and
    // `data` is the `Walk` of `loaded_objects`.
    let (info, walk) = unsafe { (&*info, &mut *data.cast::<Walk>()) };
    // Never let a panic unwind through the loader's frames.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: the loader holds the object mapped while the callback runs, and `Image`
        // only reads inside its readable PT_LOAD segments.
        if let Some(image) = unsafe { Image::new(info) } {
            if image.readable.iter().any(|&(s, e)| s <= walk.own && walk.own < e) {
                return; // this library: it defines every name
            }
            let mut imports = image.hsakmt_imports();
            if walk.strings {
                for name in image.hsakmt_strings() {
                    if !imports.contains(&name) {
                        imports.push(name);
                    }
                }
            }
            if !imports.is_empty() {
                let name = if info.dlpi_name.is_null() {
                    String::new()
                } else {
                    // SAFETY: a non-NULL dlpi_name is a NUL-terminated string of the loader's.
                    unsafe { CStr::from_ptr(info.dlpi_name) }.to_string_lossy().into_owned()
                };
                walk.out.push(ObjectImports { name, imports });
            }
        }
    }));
    0
}

/// A loaded object's readable segments and dynamic section.
struct Image {
    base: u64,
    readable: Vec<(u64, u64)>,
    /// Readable, not executable segments: where C string literals live.
    data: Vec<(u64, u64)>,
    dynamic: u64,
}

impl Image {
    /// # Safety
    /// `info` must describe a loaded object that stays mapped while the `Image` is used.
    unsafe fn new(info: &libc::dl_phdr_info) -> Option<Image> {
        if info.dlpi_phdr.is_null() {
            return None;
        }
        // SAFETY: the loader's program-header table of `dlpi_phnum` entries.
        let phdrs = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
        let base = info.dlpi_addr;
        let mut readable = Vec::new();
        let mut data = Vec::new();
        let mut dynamic = None;
        for ph in phdrs {
            let start = base.wrapping_add(ph.p_vaddr);
            if ph.p_type == PT_LOAD && ph.p_flags & PF_R != 0 {
                readable.push((start, start.saturating_add(ph.p_memsz)));
                if ph.p_flags & PF_X == 0 {
                    data.push((start, start.saturating_add(ph.p_filesz)));
                }
            } else if ph.p_type == PT_DYNAMIC {
                dynamic = Some(start);
            }
        }
        Some(Image { base, readable, data, dynamic: dynamic? })
    }

    /// `len` bytes at `addr`, if they lie inside one readable segment.
    fn bytes(&self, addr: u64, len: u64) -> Option<&[u8]> {
        let end = addr.checked_add(len)?;
        if !self.readable.iter().any(|&(s, e)| s <= addr && end <= e) {
            return None;
        }
        // SAFETY: the range is inside a readable PT_LOAD segment of a loaded object (checked
        // above), which the loader keeps mapped while we run (see `new`).
        Some(unsafe { std::slice::from_raw_parts(addr as usize as *const u8, len as usize) })
    }

    fn u32_at(&self, addr: u64) -> Option<u32> {
        self.bytes(addr, 4).map(|b| u32::from_ne_bytes(b.try_into().unwrap()))
    }

    fn u64_at(&self, addr: u64) -> Option<u64> {
        self.bytes(addr, 8).map(|b| u64::from_ne_bytes(b.try_into().unwrap()))
    }

    /// A dynamic-section address: glibc rewrites most of them to run-time addresses, other
    /// loaders (and the vDSO) leave them as link-time offsets.
    fn runtime_addr(&self, v: u64) -> u64 {
        if v < self.base {
            v.wrapping_add(self.base)
        } else {
            v
        }
    }

    fn hsakmt_imports(&self) -> Vec<String> {
        self.try_imports().unwrap_or_default()
    }

    fn try_imports(&self) -> Option<Vec<String>> {
        let (mut symtab, mut strtab, mut strsz, mut syment, mut hash, mut gnu_hash) = (0, 0, 0, SYM_SIZE, 0, 0);
        for i in 0..4096u64 {
            let at = self.dynamic + i * 16;
            let (tag, val) = (self.u64_at(at)?, self.u64_at(at + 8)?);
            match tag {
                DT_NULL => break,
                DT_SYMTAB => symtab = self.runtime_addr(val),
                DT_STRTAB => strtab = self.runtime_addr(val),
                DT_STRSZ => strsz = val,
                DT_SYMENT => syment = val,
                DT_HASH => hash = self.runtime_addr(val),
                DT_GNU_HASH => gnu_hash = self.runtime_addr(val),
                _ => {}
            }
        }
        if symtab == 0 || strtab == 0 || syment < SYM_SIZE {
            return None;
        }
        let count = if hash != 0 { self.u32_at(hash + 4)? as u64 } else { self.gnu_hash_count(gnu_hash)? };
        let strings = self.bytes(strtab, strsz)?;
        let mut out = Vec::new();
        for i in 0..count.min(1 << 20) {
            let sym = self.bytes(symtab + i * syment, SYM_SIZE)?;
            let name = u32::from_ne_bytes(sym[0..4].try_into().unwrap()) as usize;
            let shndx = u16::from_ne_bytes(sym[6..8].try_into().unwrap());
            if shndx != SHN_UNDEF || name == 0 {
                continue;
            }
            let s = strings.get(name..)?;
            let s = &s[..s.iter().position(|&b| b == 0)?];
            if s.starts_with(b"hsaKmt") {
                out.push(String::from_utf8_lossy(s).into_owned());
            }
        }
        Some(out)
    }

    /// The distinct `hsaKmt*` identifiers among the NUL-terminated strings of the read-only
    /// data segments (what a `dlsym` caller passes).
    fn hsakmt_strings(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for &(start, end) in &self.data {
            let Some(bytes) = self.bytes(start, end - start) else { continue };
            for at in memchr::memmem::find_iter(bytes, b"hsaKmt") {
                if at > 0 && bytes[at - 1] != 0 {
                    continue; // inside another string
                }
                let rest = &bytes[at..];
                let len = rest.iter().position(|&b| !(b.is_ascii_alphanumeric() || b == b'_')).unwrap_or(rest.len());
                if rest.get(len) != Some(&0) {
                    continue; // not a whole string
                }
                let name = String::from_utf8_lossy(&rest[..len]).into_owned();
                if !out.contains(&name) {
                    out.push(name);
                }
            }
        }
        out
    }

    /// The number of symbols a GNU hash table covers. Undefined symbols sit below `symoffset`
    /// (the table hashes only defined ones), so that alone is enough for imports; the chains
    /// are walked for completeness.
    fn gnu_hash_count(&self, table: u64) -> Option<u64> {
        if table == 0 {
            return None;
        }
        let nbuckets = self.u32_at(table)? as u64;
        let symoffset = self.u32_at(table + 4)? as u64;
        let bloom_size = self.u32_at(table + 8)? as u64;
        let buckets = table + 16 + bloom_size * 8;
        let mut last = 0u64;
        for b in 0..nbuckets.min(1 << 20) {
            last = last.max(self.u32_at(buckets + b * 4)? as u64);
        }
        if last < symoffset {
            return Some(symoffset);
        }
        let chains = buckets + nbuckets * 4;
        while last - symoffset < (1 << 22) {
            if self.u32_at(chains + (last - symoffset) * 4)? & 1 != 0 {
                break;
            }
            last += 1;
        }
        Some(last + 1)
    }
}
