//! GEM buffer objects on the render-node stand-ins: what amdgpu's DRM interface does for
//! upstream's handle API (PRIME import/export of dma-bufs, AMDGPU_GEM_VA, AMDGPU_GEM_MMAP,
//! GEM_CLOSE), on the model's own objects.
//!
//! A GEM object is a BO of this process backed by a registry entry (as an IMPORT_DMABUF BO,
//! with no VA of its own), named by a handle of one render file (handles are per file, from 1,
//! as the kernel's). GEM_VA puts any page-aligned range of it into the page table of that
//! file's GPU; GEM_CLOSE removes those mappings and drops the BO when no handle names it.
//!
//! Errnos as amdgpu: an fd that is not a render stand-in ENOTTY (an ioctl on another file), a
//! closed one EBADF; an unknown handle ENOENT (GEM_CLOSE: EINVAL); a dma-buf that is not the
//! model's EINVAL (EBADF if closed); GEM_VA with unknown flags, a VA below 64 KiB, misaligned
//! or empty ranges, a range beyond the BO or the VM, or one overlapping a mapping: EINVAL;
//! UNMAP of a VA this object does not map there: ENOENT.

use super::{make_dmabuf, Backing, Pte, EINVAL, PAGE};
use crate::model::{Model, Process};
use crate::sys::{current_pid, file_key, FileKey};
use rustix::fd::{BorrowedFd, OwnedFd};
use std::collections::HashMap;

const ENOENT: i32 = libc::ENOENT;

/// `AMDGPU_VM_*` flags GEM_VA accepts here: DELAY_UPDATE, READABLE, WRITEABLE, EXECUTABLE,
/// the MTYPE field and NOALLOC (PRT mappings are not modelled: EINVAL).
const VA_FLAGS_OK: u32 = 0x3ef;
const VA_WRITEABLE: u32 = 1 << 2;
const VA_EXECUTABLE: u32 = 1 << 3;
/// amdgpu keeps the bottom of every VM for itself (`AMDGPU_VA_RESERVED_BOTTOM`).
const VA_RESERVED_BOTTOM: u64 = 1 << 16;

#[derive(Debug)]
struct Gem {
    /// The BO (a key of `MemState::bos`).
    bo: u64,
    /// The GPU (index) of the render file.
    gpu: usize,
    /// Start VAs of its GEM_VA mappings in that GPU's page table.
    vas: Vec<u64>,
}

/// Every GEM handle of the process, by render file.
#[derive(Debug, Default)]
pub(crate) struct Gems {
    objs: HashMap<(FileKey, u32), Gem>,
    next: HashMap<FileKey, u32>,
}

impl Gems {
    /// Does a GEM handle name this BO (the KFD must not free it under the handle)?
    pub(crate) fn holds(&self, bo: u64) -> bool {
        self.objs.values().any(|g| g.bo == bo)
    }
}

/// One GEM_VA request.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GemVa {
    pub map: bool,
    pub va: u64,
    pub offset: u64,
    pub size: u64,
    pub flags: u32,
}

impl Model {
    /// The render file behind `fd` and its GPU.
    fn gem_file(&self, st: &Process, fd: i32) -> Result<(FileKey, usize), i32> {
        if fd < 0 {
            return Err(libc::EBADF);
        }
        // SAFETY: borrowed for fstat only; a closed descriptor fails there.
        let key = file_key(unsafe { BorrowedFd::borrow_raw(fd) }).ok_or(libc::EBADF)?;
        let minor = *st.renders.get(&key).ok_or(libc::ENOTTY)?;
        let g = self.gpus.iter().position(|g| g.drm_render_minor == minor).ok_or(libc::ENOTTY)?;
        Ok((key, g))
    }

    fn gem_get<'a>(&self, st: &'a mut Process, fd: i32, gem: u32) -> Result<(FileKey, &'a mut Gem), i32> {
        let (key, _) = self.gem_file(st, fd)?;
        let g = st.mem.gem.objs.get_mut(&(key, gem)).ok_or(ENOENT)?;
        Ok((key, g))
    }

    /// PRIME_FD_TO_HANDLE: (GEM handle, size). The same dma-buf imported twice on one file
    /// gives the same handle, as the kernel's prime lookup does.
    pub(crate) fn gem_import_dmabuf(&self, render_fd: i32, dmabuf_fd: i32) -> Result<(u32, u64), i32> {
        let mut st = self.lock();
        let (key, g) = self.gem_file(&st, render_fd)?;
        let (info, share) = self.dmabuf_entry(u32::try_from(dmabuf_fd).map_err(|_| libc::EBADF)?)?;
        let same = st
            .mem
            .gem
            .objs
            .iter()
            .find(|((k, _), o)| *k == key && st.mem.bos.get(&o.bo).is_some_and(|b| b.ipc == Some((info.slot, info.generation))));
        if let Some((&(_, h), o)) = same {
            let size = st.mem.bos.get(&o.bo).map_or(0, |b| b.size);
            return Ok((h, size));
        }
        self.arena(&mut st)?;
        let e = self.devmem()?.lock().ipc_import(current_pid(), share)?;
        let bo = self.import_bo(&mut st, g, 0, e)?;
        let next = st.mem.gem.next.entry(key).or_insert(1);
        let h = *next;
        *next += 1;
        st.mem.gem.objs.insert((key, h), Gem { bo, gpu: g, vas: Vec::new() });
        Ok((h, e.size))
    }

    /// PRIME_HANDLE_TO_FD: a model dma-buf of the object (CLOEXEC).
    pub(crate) fn gem_export_dmabuf(&self, render_fd: i32, gem: u32) -> Result<OwnedFd, i32> {
        let mut st = self.lock();
        let bo = self.gem_get(&mut st, render_fd, gem)?.1.bo;
        let h = self.export_entry(&mut st, bo, 0)?;
        let ipc = st.mem.bos.get(&bo).and_then(|b| b.ipc).ok_or(EINVAL)?;
        let device = self.devmem()?.lock().device_id();
        let fd = make_dmabuf(device, h, true)?;
        self.hold_dmabuf(&mut st, &fd, ipc)?;
        Ok(fd)
    }

    /// AMDGPU_GEM_VA MAP / UNMAP in the page table of the render file's GPU.
    pub(crate) fn gem_va(&self, render_fd: i32, gem: u32, op: GemVa) -> Result<(), i32> {
        let mut st = self.lock();
        if op.flags & !VA_FLAGS_OK != 0 || op.va < VA_RESERVED_BOTTOM {
            return Err(EINVAL);
        }
        let (key, obj) = self.gem_get(&mut st, render_fd, gem)?;
        let (bo, g) = (obj.bo, obj.gpu);
        if !op.map {
            let i = obj.vas.iter().position(|&v| v == op.va).ok_or(ENOENT)?;
            obj.vas.swap_remove(i);
            let pt = &mut st.mem.gpus[g].pt;
            if pt.get(&op.va).is_some_and(|p| p.handle == bo) {
                pt.remove(&op.va);
            }
            return Ok(());
        }
        let bo_size = st.mem.bos.get(&bo).ok_or(ENOENT)?.size;
        let aligned = |x: u64| x & (PAGE - 1) == 0;
        if op.size == 0 || !aligned(op.va) || !aligned(op.offset) || !aligned(op.size) {
            return Err(EINVAL);
        }
        if op.offset.checked_add(op.size).is_none_or(|e| e > bo_size) {
            return Err(EINVAL);
        }
        let end = op.va.checked_add(op.size).ok_or(EINVAL)?;
        if end > self.gpus[g].vm_size() {
            return Err(EINVAL);
        }
        let pt = &mut st.mem.gpus[g].pt;
        if pt.range(..end).next_back().is_some_and(|(_, p)| p.end > op.va) {
            return Err(EINVAL); // overlaps a mapping of this VM
        }
        let pte = Pte {
            end,
            handle: bo,
            bo_offset: op.offset,
            writable: op.flags & VA_WRITEABLE != 0,
            executable: op.flags & VA_EXECUTABLE != 0,
        };
        pt.insert(op.va, pte);
        if let Some(obj) = st.mem.gem.objs.get_mut(&(key, gem)) {
            obj.vas.push(op.va);
        }
        Ok(())
    }

    /// AMDGPU_GEM_MMAP: the offset `mmap` of the device file maps the object at.
    pub(crate) fn gem_mmap_offset(&self, render_fd: i32, gem: u32) -> Result<u64, i32> {
        let mut st = self.lock();
        let bo = self.gem_get(&mut st, render_fd, gem)?.1.bo;
        match st.mem.bos.get(&bo).map(|b| b.backing) {
            Some(Backing::Imported { offset } | Backing::Owned { offset }) => Ok(offset),
            _ => Err(EINVAL),
        }
    }

    /// GEM_CLOSE: the handle's VA mappings go, and the BO when no other handle names it.
    pub(crate) fn gem_close(&self, render_fd: i32, gem: u32) -> Result<(), i32> {
        let mut st = self.lock();
        let (key, _) = self.gem_file(&st, render_fd)?;
        let obj = st.mem.gem.objs.remove(&(key, gem)).ok_or(EINVAL)?;
        let pt = &mut st.mem.gpus[obj.gpu].pt;
        for va in &obj.vas {
            if pt.get(va).is_some_and(|p| p.handle == obj.bo) {
                pt.remove(va);
            }
        }
        if !st.mem.gem.holds(obj.bo) {
            self.release_bo(&mut st, obj.bo);
            self.reclaim_deferred(&mut st);
        }
        Ok(())
    }
}
