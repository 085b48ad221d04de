//! Userptr registrations are checked against the process's address space the way the kernel's
//! `get_user_pages` / `hmm_range_fault` pass does: every page of the range must lie in a
//! readable mapping (else EFAULT) that is also writable (KFD registers userptrs read-write, so a
//! read-only mapping fails with EPERM, as hmm does for a write fault on a read-only VMA).

use crate::usercopy::copy_from_user;

const PAGE: u64 = 4096;

/// Check `[start, start + len)` (page-aligned): the first problem in address order wins, as in
/// the kernel's page walk.
pub(crate) fn check_user_range(start: u64, len: u64) -> Result<(), i32> {
    let end = start.checked_add(len).ok_or(libc::EFAULT)?;
    if start == 0 || end > (1u64 << 47) {
        return Err(libc::EFAULT);
    }
    match query_vmas(start, end) {
        Some(r) => r,
        None => parse_maps(start, end),
    }
}

/// `struct procmap_query` (include/uapi/linux/fs.h, Linux 6.11+).
#[repr(C)]
#[derive(Default)]
struct ProcmapQuery {
    size: u64,
    query_flags: u64,
    query_addr: u64,
    vma_start: u64,
    vma_end: u64,
    vma_flags: u64,
    vma_page_size: u64,
    vma_offset: u64,
    inode: u64,
    dev_major: u32,
    dev_minor: u32,
    vma_name_size: u32,
    build_id_size: u32,
    vma_name_addr: u64,
    build_id_addr: u64,
}

/// `_IOWR('f', 17, struct procmap_query)`, from the core's `_IOC` encoder.
const PROCMAP_QUERY: libc::c_ulong =
    hsakmt_core::abi::ioc::encode(hsakmt_core::abi::ioc::DIR_READ | hsakmt_core::abi::ioc::DIR_WRITE, b'f', 17, size_of::<ProcmapQuery>())
        as libc::c_ulong;
const VMA_READABLE: u64 = 1;
const VMA_WRITABLE: u64 = 2;

/// One PROCMAP_QUERY ioctl per VMA of the range (O(log n) each, unlike reading the whole
/// maps file). None: the kernel has no PROCMAP_QUERY.
fn query_vmas(start: u64, end: u64) -> Option<Result<(), i32>> {
    use std::os::fd::AsRawFd;
    let maps = std::fs::File::open("/proc/self/maps").ok()?;
    let mut at = start;
    while at < end {
        let mut q = ProcmapQuery { size: std::mem::size_of::<ProcmapQuery>() as u64, query_addr: at, ..ProcmapQuery::default() };
        // SAFETY: PROCMAP_QUERY reads and writes the `size` bytes of `q`, a live local.
        let r = unsafe { libc::ioctl(maps.as_raw_fd(), PROCMAP_QUERY, &mut q as *mut ProcmapQuery) };
        if r != 0 {
            return match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::ENOENT) => Some(Err(libc::EFAULT)), // a hole
                _ if at == start => None,                      // no PROCMAP_QUERY here
                _ => Some(Err(libc::EFAULT)),
            };
        }
        if q.vma_flags & VMA_READABLE == 0 {
            return Some(Err(libc::EFAULT));
        }
        if q.vma_flags & VMA_WRITABLE == 0 {
            return Some(Err(libc::EPERM));
        }
        if q.vma_end <= at {
            return Some(Err(libc::EFAULT));
        }
        at = q.vma_end;
    }
    Some(Ok(()))
}

/// Older kernels: walk /proc/self/maps.
fn parse_maps(start: u64, end: u64) -> Result<(), i32> {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return probe(start, end);
    };
    let mut at = start;
    for line in maps.lines() {
        let mut it = line.split_whitespace();
        let (Some(range), Some(perms)) = (it.next(), it.next()) else { continue };
        let Some((a, b)) = range.split_once('-') else { continue };
        let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) else { continue };
        if b <= at {
            continue;
        }
        if a > at {
            break; // a hole
        }
        let p = perms.as_bytes();
        if p.first() != Some(&b'r') {
            return Err(libc::EFAULT);
        }
        if p.get(1) != Some(&b'w') {
            return Err(libc::EPERM);
        }
        at = b;
        if at >= end {
            return Ok(());
        }
    }
    Err(libc::EFAULT)
}

/// Without /proc: a checked read of one byte per page.
fn probe(start: u64, end: u64) -> Result<(), i32> {
    let mut b = [0u8; 1];
    let mut p = start;
    while p < end {
        copy_from_user(&mut b, p as usize).map_err(|_| libc::EFAULT)?;
        p += PAGE;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        let v = vec![0u8; 3 * 4096];
        let p = (v.as_ptr() as u64 + 4095) & !4095;
        check_user_range(p, 4096).unwrap();
        assert_eq!(check_user_range(0, 4096), Err(libc::EFAULT));
        assert_eq!(check_user_range(0x1000, 4096), Err(libc::EFAULT));
        assert_eq!(check_user_range(u64::MAX - 4095, 4096), Err(libc::EFAULT));
        static RO: [u8; 8192] = [1; 8192];
        let r = (RO.as_ptr() as u64 + 4095) & !4095;
        // .rodata may share a page with writable data only at its edges; the interior is RO.
        if r + 4096 <= RO.as_ptr() as u64 + 8192 {
            assert_eq!(check_user_range(r, 4096), Err(libc::EPERM));
        }
        assert_eq!(probe(0x1000, 0x2000), Err(libc::EFAULT));
        probe(p, p + 4096).unwrap();
    }

    #[test]
    fn procmap_query_agrees_with_the_maps_file() {
        assert_eq!(std::mem::size_of::<ProcmapQuery>(), 104);
        assert_eq!(PROCMAP_QUERY, 0xc068_6611);
        // A read-write page between a PROT_NONE page and a read-only page.
        // SAFETY: a fresh anonymous mapping owned by this test, re-protected and unmapped here.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                4 * 4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(p, libc::MAP_FAILED);
            let b = p as u64;
            assert_eq!(libc::mprotect(p, 4096, libc::PROT_NONE), 0);
            assert_eq!(libc::mprotect((b + 2 * 4096) as *mut libc::c_void, 4096, libc::PROT_READ), 0);
            assert_eq!(libc::munmap((b + 3 * 4096) as *mut libc::c_void, 4096), 0);
            for (s, e, want) in [
                (b + 4096, b + 2 * 4096, Ok(())),
                (b, b + 2 * 4096, Err(libc::EFAULT)),
                (b + 4096, b + 3 * 4096, Err(libc::EPERM)),
                (b + 2 * 4096, b + 4 * 4096, Err(libc::EPERM)),
                (b + 3 * 4096, b + 4 * 4096, Err(libc::EFAULT)),
            ] {
                assert_eq!(parse_maps(s, e), want, "{:#x}..{:#x}", s - b, e - b);
                if let Some(r) = query_vmas(s, e) {
                    assert_eq!(r, want, "{:#x}..{:#x}", s - b, e - b);
                }
            }
            libc::munmap(p, 3 * 4096);
        }
    }
}
