//! Userptr registrations are checked against the process's address space the way the kernel's
//! `get_user_pages` / `hmm_range_fault` pass does: every page of the range must lie in a
//! readable mapping (else EFAULT) that is also writable (KFD registers userptrs read-write, so a
//! read-only mapping fails with EPERM, as hmm does for a write fault on a read-only VMA).

use crate::usercopy::copy_from_user;

const PAGE: u64 = 4096;

/// Check `[start, start + len)` (page-aligned) against /proc/self/maps.
pub(crate) fn check_user_range(start: u64, len: u64) -> Result<(), i32> {
    let end = start.checked_add(len).ok_or(libc::EFAULT)?;
    if start == 0 || end > (1u64 << 47) {
        return Err(libc::EFAULT);
    }
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return probe(start, end);
    };
    let mut at = start;
    let mut perm_err = None;
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
            perm_err.get_or_insert(libc::EPERM);
        }
        at = b;
        if at >= end {
            break;
        }
    }
    if at < end {
        return Err(libc::EFAULT);
    }
    perm_err.map_or(Ok(()), Err)
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
}
