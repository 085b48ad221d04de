//! CREATE_QUEUE: set_queue_properties_from_user, the buffers the queue must find mapped
//! (kfd_queue_acquire_buffers), ids, SDMA engines and doorbells (pqm_create_queue).

use super::*;

/// The arguments of CREATE_QUEUE after set_queue_properties_from_user.
struct Props {
    qtype: u32,
    percent: u32,
    priority: u32,
    ring_va: u64,
    ring_size: u64,
    metadata: u64,
    rptr: u64,
    wptr: u64,
    eop_va: u64,
    eop_size: u64,
    ctx_va: u64,
    ctx_size: u32,
    ctl_stack_size: u32,
    sdma_engine_id: u32,
}

impl Model {
    /// kfd_queue_buffer_get: the BO whose mapping on GPU `g` starts at `addr`'s page and is
    /// `expected` bytes long (rounded down to pages; 0: any size), if there is one. The queue
    /// holds it (`bo_va->queue_refcount`) until it is destroyed.
    pub(super) fn queue_buffer_get(st: &Process, g: usize, addr: u64, expected: u64) -> Option<u64> {
        let page = addr & !(PAGE - 1);
        let pt = &st.mem.gpus.get(g)?.pt;
        let (&start, pte) = pt.range(..=page).next_back()?;
        if page >= pte.end || start != page {
            return None;
        }
        let pages = expected / PAGE;
        (pages == 0 || (pte.end - start) / PAGE == pages).then_some(pte.handle)
    }

    /// Does a live queue of the process `st` on GPU `g` hold the mapping of BO `handle` there
    /// (kfd_queue_acquire_buffers took `bo_va->queue_refcount`)? Then unmapping it from that
    /// GPU is refused with EBUSY (unmap_bo_from_gpuvm). Called with `state` held.
    pub(crate) fn queue_holds_bo(&self, st: &Process, g: usize, handle: u64) -> bool {
        let t = self.table();
        t.pid == st.pid && t.instance == st.instance && t.queues.values().any(|q| q.gpu == g && q.bos.contains(&Some(handle)))
    }

    /// CREATE_QUEUE.
    pub(crate) fn ioctl_create_queue(&self, buf: &mut [u8]) -> Result<(), i32> {
        let mut a: kfd_ioctl_create_queue_args = get(buf);
        let r = self.create_queue(&mut a);
        put(buf, &a);
        r
    }

    fn props_from_user(&self, a: &mut kfd_ioctl_create_queue_args) -> Result<Props, i32> {
        if a.queue_percentage & 0xff > KFD_MAX_QUEUE_PERCENTAGE as u32 {
            return Err(EINVAL);
        }
        if a.queue_priority > KFD_MAX_QUEUE_PRIORITY as u32 {
            return Err(EINVAL);
        }
        if a.ring_base_address != 0 && !access_ok(a.ring_base_address, 8) {
            return Err(EFAULT);
        }
        if a.ring_size != 0 && !a.ring_size.is_power_of_two() {
            return Err(EINVAL);
        }
        if a.ring_size < MIN_RING {
            a.ring_size = MIN_RING;
        }
        // 1.22 turned the last pad word into metadata_ring_size; older kernels ignore it.
        let metadata_field = self.config.kfd_version >= (1, 22);
        if metadata_field && a.metadata_ring_size != 0 && !a.metadata_ring_size.is_power_of_two() {
            return Err(EINVAL);
        }
        if !access_ok(a.read_pointer_address, 4) || !access_ok(a.write_pointer_address, 4) {
            return Err(EFAULT);
        }
        if a.eop_buffer_address != 0 && !access_ok(a.eop_buffer_address, 4) {
            return Err(EFAULT);
        }
        if a.ctx_save_restore_address != 0 && !access_ok(a.ctx_save_restore_address, 4) {
            return Err(EFAULT);
        }
        let t = a.queue_type;
        let known = [
            KFD_IOC_QUEUE_TYPE_COMPUTE,
            KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
            KFD_IOC_QUEUE_TYPE_SDMA,
            KFD_IOC_QUEUE_TYPE_SDMA_XGMI,
            KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID,
        ];
        if !known.iter().any(|&k| k as u32 == t) {
            return Err(ENOTSUPP);
        }
        let aql = t == KFD_IOC_QUEUE_TYPE_COMPUTE_AQL as u32;
        Ok(Props {
            qtype: t,
            percent: a.queue_percentage & 0xff,
            priority: a.queue_priority,
            ring_va: a.ring_base_address,
            ring_size: u64::from(a.ring_size),
            metadata: if aql && metadata_field { u64::from(a.metadata_ring_size) } else { 0 },
            rptr: a.read_pointer_address,
            wptr: a.write_pointer_address,
            eop_va: a.eop_buffer_address,
            eop_size: a.eop_buffer_size,
            ctx_va: a.ctx_save_restore_address,
            ctx_size: a.ctx_save_restore_size,
            ctl_stack_size: a.ctl_stack_size,
            sdma_engine_id: a.sdma_engine_id,
        })
    }

    /// kfd_queue_acquire_buffers: the BOs the queue holds, in `QueueBos` order.
    fn acquire_buffers(st: &Process, g: usize, n: &NodeQueueProps, p: &Props) -> Result<QueueBos, i32> {
        let compute = p.qtype == KFD_IOC_QUEUE_TYPE_COMPUTE as u32 || p.qtype == KFD_IOC_QUEUE_TYPE_COMPUTE_AQL as u32;
        let aql = p.qtype == KFD_IOC_QUEUE_TYPE_COMPUTE_AQL as u32;
        // AQL rings on gfx7/8 are mapped twice: the mapping is half the announced size.
        let expected_ring = if aql && (70000..90000).contains(&n.gfxv) { p.ring_size / 2 } else { p.ring_size + p.metadata };
        let mut bos: QueueBos = [None; 5];
        bos[BO_WPTR] = Some(Self::queue_buffer_get(st, g, p.wptr, PAGE).ok_or(EINVAL)?);
        bos[BO_RPTR] = Some(Self::queue_buffer_get(st, g, p.rptr, PAGE).ok_or(EINVAL)?);
        bos[BO_RING] = Some(Self::queue_buffer_get(st, g, p.ring_va, expected_ring).ok_or(EINVAL)?);
        if !compute {
            return Ok(bos);
        }
        if p.eop_va != 0 {
            if p.eop_size != u64::from(n.eop_buffer_size) {
                return Err(EINVAL);
            }
            bos[BO_EOP] = Some(Self::queue_buffer_get(st, g, p.eop_va, p.eop_size).ok_or(EINVAL)?);
        }
        if p.ctl_stack_size != n.ctl_stack_size || p.ctx_size < n.cwsr_size {
            return Err(EINVAL);
        }
        let total = align((u64::from(p.ctx_size) + u64::from(n.debug_memory_size)) * u64::from(n.num_xcc), PAGE);
        // Without a matching mapping the kernel tries SVM ranges (kfd_queue_buffer_svm_get,
        // see `svm_queue_area_ok`: the whole area in ranges mapped to this GPU with
        // GPU_ALWAYS_MAPPED, else EINVAL); an empty area (GPUs without CWSR) passes there (a
        // mapping that starts at the address is still held: size 0 matches any). The kernel's
        // queue_refcount on the ranges refuses nothing: it only makes a CPU munmap of the
        // range evict the process's queues (svm_range_unmap_from_cpu, "Freeing queue vital
        // buffer"), which the model, seeing no CPU munmap, does not do.
        bos[BO_CWSR] = Self::queue_buffer_get(st, g, p.ctx_va, total);
        if total != 0 && bos[BO_CWSR].is_none() && !Self::svm_queue_area_ok(st, g, p.ctx_va, total) {
            return Err(EINVAL);
        }
        Ok(bos)
    }

    pub(super) fn create_queue(&self, a: &mut kfd_ioctl_create_queue_args) -> Result<(), i32> {
        let p = self.props_from_user(a)?;
        let mut st = self.lock();
        let g = self.gpu_index(a.gpu_id).ok_or(EINVAL)?;
        if st.vms[g].is_none() {
            return Err(ESRCH);
        }
        let n = self.node_queue_props(g);
        if p.qtype == KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID as u32 {
            // The kernel compares the u32 id with an int maximum: C turns the maximum unsigned,
            // so with no engines at all (-1) nothing is too big.
            let max = (n.sdma_engines + n.xgmi_engines).wrapping_sub(1);
            if p.sdma_engine_id > max {
                return Err(EINVAL);
            }
        }
        let slice = self.doorbell_slice(&mut st, g)?;
        let bos = Self::acquire_buffers(&st, g, &n, &p)?;
        let slice_len = self.gpus[g].doorbell_slice_bytes();
        let dev_fd = self.devmem()?.fd();

        let mut t = self.table_for(&st);
        let count = t.gpus[g].count;
        if count >= n.max_queues() {
            return Err(ENOSPC);
        }
        let id = t.free_id().ok_or(ENOMEM)?;
        let mut qtype = p.qtype;
        let sdma = match qtype as i32 {
            KFD_IOC_QUEUE_TYPE_SDMA | KFD_IOC_QUEUE_TYPE_SDMA_XGMI | KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID => {
                let (e, q, bit, xgmi) = Self::allocate_sdma(&mut t.gpus[g], &n, qtype, p.sdma_engine_id)?;
                qtype = if xgmi { KFD_IOC_QUEUE_TYPE_SDMA_XGMI as u32 } else { KFD_IOC_QUEUE_TYPE_SDMA as u32 };
                Some((e, q, bit))
            }
            _ => None,
        };
        let release_sdma = |t: &mut QueueTable| {
            if let Some((_, _, bit)) = sdma {
                let gq = &mut t.gpus[g];
                let map = if qtype == KFD_IOC_QUEUE_TYPE_SDMA_XGMI as u32 { &mut gq.xgmi_used } else { &mut gq.sdma_used };
                map[bit as usize] = false;
            }
        };
        // allocate_doorbell
        let doorbell = if !n.soc15() {
            // Pre-SOC15: the doorbell is the queue id (the user-mode ABI).
            id
        } else if let Some((e, q, _)) = sdma {
            n.sdma_doorbell_base(e) + (q & 1) * MIRROR + (q >> 1)
        } else {
            let (lo, hi) = n.non_cp_range();
            let bits = &t.gpus[g].doorbells;
            let free = (0..MAX_QUEUES_PER_PROCESS).find(|&i| {
                // init_doorbell_bitmap: the non-CP range is reserved in both doorbell pages.
                let reserved = (lo..=hi).contains(&(i % MIRROR));
                !reserved && bits[i as usize / 64] & (1u64 << (i % 64)) == 0
            });
            match free {
                Some(i) => {
                    t.gpus[g].doorbells[i as usize / 64] |= 1u64 << (i % 64);
                    i
                }
                None => {
                    release_sdma(&mut t);
                    return Err(EBUSY);
                }
            }
        };
        if t.gpus[g].slice.is_none() {
            use rustix::mm::{MapFlags, ProtFlags};
            // SAFETY: a new shared mapping of this process's doorbell slice of the device memfd
            // at an address the kernel picks; the file has a fixed size, so no SIGBUS.
            let m = unsafe {
                rustix::mm::mmap(
                    std::ptr::null_mut(),
                    slice_len as usize,
                    ProtFlags::READ | ProtFlags::WRITE,
                    MapFlags::SHARED,
                    dev_fd,
                    slice,
                )
            };
            match m {
                Ok(addr) => t.gpus[g].slice = Some(SliceMap { addr: addr as usize, len: slice_len as usize }),
                Err(e) => {
                    release_sdma(&mut t);
                    if sdma.is_none() && n.soc15() {
                        t.gpus[g].doorbells[doorbell as usize / 64] &= !(1u64 << (doorbell % 64));
                    }
                    return Err(e.raw_os_error());
                }
            }
        }
        let kind = match qtype as i32 {
            KFD_IOC_QUEUE_TYPE_COMPUTE_AQL => EngineKind::Aql,
            KFD_IOC_QUEUE_TYPE_COMPUTE => EngineKind::Pm4,
            _ => EngineKind::Sdma,
        };
        // A fresh doorbell reads as "nothing submitted": write position = read position 0.
        // AQL doorbells carry the last packet id, so that is -1 there (gfx7/8: dword 0).
        let init = if kind == EngineKind::Aql && n.soc15() { u64::MAX } else { 0 };
        t.set_doorbell(g, doorbell, init);
        let serial = t.next_serial;
        t.next_serial += 1;
        t.gpus[g].count += 1;
        t.queues.insert(
            id,
            Queue {
                serial,
                gpu: g,
                gpu_id: a.gpu_id,
                qtype,
                kind,
                ring_va: p.ring_va,
                ring_bytes: p.ring_size,
                metadata: p.metadata,
                percent: p.percent,
                priority: p.priority,
                rptr: p.rptr,
                wptr: p.wptr,
                ctx_va: p.ctx_va,
                ctl_stack_size: p.ctl_stack_size,
                bos,
                doorbell,
                sdma,
                cu_mask: Vec::new(),
                cu_mask_count: 0,
                progress: RingProgress::default(),
                blocked: false,
                running: false,
            },
        );
        drop(t);
        drop(st);
        // The debugger's copy of the queue, and EC_QUEUE_NEW (kfd_ioctl_create_queue's
        // kfd_dbg_ev_raise).
        self.debug_queue_created(crate::debug::new_queue(
            id,
            a.gpu_id,
            qtype,
            p.ring_va,
            p.ring_size,
            p.wptr,
            p.rptr,
            p.ctx_va,
            u64::from(a.ctx_save_restore_size),
        ));
        a.queue_id = id;
        a.doorbell_offset = if n.soc15() { slice | (u64::from(doorbell) * 8) } else { slice };
        self.start_watcher();
        Ok(())
    }

    /// allocate_sdma_queue: (engine, queue on the engine, bitmap bit, XGMI?).
    pub(super) fn allocate_sdma(gq: &mut GpuQueues, n: &NodeQueueProps, qtype: u32, engine_id: u32) -> Result<(u32, u32, u32, bool), i32> {
        // KFD_MAX_SDMA_QUEUES bits per bitmap.
        let nq = (n.sdma_engines.saturating_mul(n.sdma_queues_per_engine)).min(128);
        let nx = (n.xgmi_engines.saturating_mul(n.sdma_queues_per_engine)).min(128);
        gq.sdma_used.resize(nq as usize, false);
        gq.xgmi_used.resize(nx as usize, false);
        let take = |used: &mut Vec<bool>, start: u32, step: u32| -> Option<u32> {
            let mut i = start;
            while (i as usize) < used.len() {
                if !used[i as usize] {
                    used[i as usize] = true;
                    return Some(i);
                }
                i = i.checked_add(step.max(1))?;
            }
            None
        };
        match qtype as i32 {
            KFD_IOC_QUEUE_TYPE_SDMA => {
                let bit = take(&mut gq.sdma_used, 0, 1).ok_or(ENOMEM)?;
                let e = n.sdma_engines.max(1);
                Ok((bit % e, bit / e, bit, false))
            }
            KFD_IOC_QUEUE_TYPE_SDMA_XGMI => {
                let bit = take(&mut gq.xgmi_used, 0, 1).ok_or(ENOMEM)?;
                let e = n.xgmi_engines.max(1);
                Ok((n.sdma_engines + bit % e, bit / e, bit, true))
            }
            _ => {
                if engine_id < n.sdma_engines {
                    let bit = take(&mut gq.sdma_used, engine_id, n.sdma_engines).ok_or(ENOMEM)?;
                    Ok((engine_id, bit / n.sdma_engines, bit, false))
                } else {
                    let start = engine_id - n.sdma_engines;
                    let bit = take(&mut gq.xgmi_used, start, n.xgmi_engines).ok_or(ENOMEM)?;
                    Ok((engine_id, bit / n.xgmi_engines.max(1), bit, true))
                }
            }
        }
    }
}
