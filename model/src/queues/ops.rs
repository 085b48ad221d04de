//! The queue ioctls after creation: DESTROY / UPDATE_QUEUE, SET_CU_MASK, GET_QUEUE_WAVE_STATE,
//! ALLOC_QUEUE_GWS, SET_TRAP_HANDLER.

use super::*;

impl Model {
    /// DESTROY_QUEUE.
    pub(crate) fn ioctl_destroy_queue(&self, buf: &mut [u8]) -> Result<(), i32> {
        let a: kfd_ioctl_destroy_queue_args = get(buf);
        loop {
            let st = self.lock();
            let t = self.table_for(&st);
            let running = t.queues.get(&a.queue_id).ok_or(EINVAL)?.running;
            if !running {
                let mut t = t;
                let q = t.remove(a.queue_id).ok_or(EINVAL)?;
                self.debug_queue_destroyed(a.queue_id);
                // Preemption finds a queue its engine left hung (queues/errors.rs).
                if errors::hung(&q) {
                    drop(st);
                    return match self.queue_hang_found(&mut t, &q) {
                        0 => Ok(()),
                        e => Err(e),
                    };
                }
                return Ok(());
            }
            // The kernel preempts a queue before destroying it: once DESTROY_QUEUE returns, the
            // CP never touches the queue's memory again, and the thunk frees it. Wait for the
            // engine run under way to end, without `state` (the engine takes it for every
            // memory access), then look again.
            drop(st);
            let t = self.queue_idle.wait_while(t, |t| t.queues.get(&a.queue_id).is_some_and(|q| q.running));
            drop(t.unwrap_or_else(|e| e.into_inner()));
        }
    }

    /// UPDATE_QUEUE.
    pub(crate) fn ioctl_update_queue(&self, buf: &mut [u8]) -> Result<(), i32> {
        let a: kfd_ioctl_update_queue_args = get(buf);
        if a.queue_percentage & 0xff > KFD_MAX_QUEUE_PERCENTAGE as u32 || a.queue_priority > KFD_MAX_QUEUE_PRIORITY as u32 {
            return Err(EINVAL);
        }
        if a.ring_base_address != 0 && !access_ok(a.ring_base_address, 8) {
            return Err(EFAULT);
        }
        if a.ring_size != 0 && !a.ring_size.is_power_of_two() {
            return Err(EINVAL);
        }
        let ring_size = u64::from(a.ring_size.max(MIN_RING));
        let st = self.lock();
        let mut t = self.table_for(&st);
        let q = t.queues.get(&a.queue_id).ok_or(EFAULT)?;
        // An update with ring address 0 disables the queue; any other ring must be mapped as at
        // creation (size without the gfx7/8 AQL halving: the kernel checks the size as given).
        // The new ring's BO is held instead of the old one (pqm_update_queue_properties); a
        // disabling update keeps holding the old one.
        let ring_bo = if a.ring_base_address != 0 {
            Some(Self::queue_buffer_get(&st, q.gpu, a.ring_base_address, ring_size + q.metadata).ok_or(EFAULT)?)
        } else {
            q.bos[BO_RING]
        };
        let q = t.queues.get_mut(&a.queue_id).ok_or(EFAULT)?;
        q.bos[BO_RING] = ring_bo;
        q.ring_va = a.ring_base_address;
        q.ring_bytes = ring_size;
        q.percent = a.queue_percentage & 0xff;
        q.priority = a.queue_priority;
        drop(t);
        drop(st);
        self.kick_watcher();
        Ok(())
    }

    /// SET_CU_MASK.
    pub(crate) fn ioctl_set_cu_mask(&self, buf: &mut [u8]) -> Result<(), i32> {
        let a: kfd_ioctl_set_cu_mask_args = get(buf);
        if !a.num_cu_mask.is_multiple_of(32) || a.num_cu_mask == 0 {
            return Err(EINVAL);
        }
        // Masks beyond 1024 bits are cut to their first 1024 bits.
        let count = a.num_cu_mask.min(1024);
        let mut words = vec![0u32; count as usize / 32];
        copy_from_user(words.as_mut_bytes(), a.cu_mask_ptr as usize).map_err(|_| EFAULT)?;
        let st = self.lock();
        let mut t = self.table_for(&st);
        let q = t.queues.get(&a.queue_id).ok_or(EFAULT)?;
        let n = self.node_queue_props(q.gpu);
        if n.gfxv >= 100000 {
            // GPUs with WGPs: CUs are enabled in adjacent pairs.
            for i in (0..count).step_by(2) {
                let pair = (words[i as usize / 32] >> (i % 32)) & 3;
                if pair != 0 && pair != 3 {
                    return Err(EINVAL);
                }
            }
        }
        // mqd_symmetrically_map_cu_mask: bits past the active CUs are dropped.
        let kept = count.min(n.cu_active);
        words.truncate(kept.div_ceil(32) as usize);
        if !kept.is_multiple_of(32) {
            if let Some(last) = words.last_mut() {
                *last &= (1u32 << (kept % 32)) - 1;
            }
        }
        let q = t.queues.get_mut(&a.queue_id).ok_or(EFAULT)?;
        q.cu_mask = words;
        q.cu_mask_count = kept;
        Ok(())
    }

    /// GET_QUEUE_WAVE_STATE.
    pub(crate) fn ioctl_get_queue_wave_state(&self, buf: &mut [u8]) -> Result<(), i32> {
        let mut a: kfd_ioctl_get_queue_wave_state_args = get(buf);
        let st = self.lock();
        let t = self.table_for(&st);
        let q = t.queues.get(&a.queue_id).ok_or(EFAULT)?;
        let n = self.node_queue_props(q.gpu);
        let compute = q.kind != EngineKind::Sdma;
        // Only the gfx9+ MQD managers can report wave state, and only with CWSR on.
        if !compute || q.active() || n.gfxv < 90000 || n.cwsr_size == 0 {
            return Err(EINVAL);
        }
        // The MQD's control stack registers as init_mqd set them: no wave has been saved, so
        // the used sizes are 0 and both offsets are the control stack size.
        let off = if q.ctx_va != 0 { q.ctl_stack_size } else { 0 };
        let header = kfd_context_save_area_header__wave_state {
            control_stack_offset: off,
            control_stack_size: 0,
            wave_state_offset: off,
            wave_state_size: 0,
        };
        drop(t);
        drop(st);
        a.ctl_stack_used_size = 0;
        a.save_area_used_size = 0;
        put(buf, &a);
        copy_to_user(a.ctl_stack_address as usize, header.as_bytes()).map_err(|_| EFAULT)
    }

    /// ALLOC_QUEUE_GWS.
    pub(crate) fn ioctl_alloc_queue_gws(&self, buf: &mut [u8]) -> Result<(), i32> {
        let mut a: kfd_ioctl_alloc_queue_gws_args = get(buf);
        let st = self.lock();
        let mut t = self.table_for(&st);
        let g = t.queues.get(&a.queue_id).ok_or(EINVAL)?.gpu;
        if self.node_queue_props(g).num_gws == 0 {
            return Err(ENODEV);
        }
        let gq = &mut t.gpus[g];
        // pqm_set_gws: one queue per process and device; releasing needs a holder.
        let r = if a.num_gws != 0 {
            if gq.gws.is_some() {
                Err(EBUSY)
            } else {
                gq.gws = Some(a.queue_id);
                Ok(())
            }
        } else if gq.gws.is_none() {
            Err(EINVAL)
        } else {
            gq.gws = None;
            Ok(())
        };
        a.first_gws = 0;
        put(buf, &a);
        r
    }

    /// SET_TRAP_HANDLER.
    pub(crate) fn ioctl_set_trap_handler(&self, buf: &mut [u8]) -> Result<(), i32> {
        let a: kfd_ioctl_set_trap_handler_args = get(buf);
        let st = self.lock();
        let g = self.gpu_index(a.gpu_id).ok_or(EINVAL)?;
        if st.vms[g].is_none() {
            return Err(ESRCH);
        }
        let mut t = self.table_for(&st);
        t.gpus[g].trap = Some((a.tba_addr, a.tma_addr));
        Ok(())
    }
}
