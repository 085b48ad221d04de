/* PC sampling through the public API on the model (model/PC_SAMPLING.md): support by KFD
 * version, capabilities with upstream's size negotiation, sessions (create twice, other
 * parameters, start/stop/destroy statuses), and host-trap samples of AQL dispatches written
 * where the runtime's trap handler writes them (the TMA's host_trap_buffers), with the done
 * signal at the watermark. PCS_METHODS: how many methods the GPU has (the KFD's table: gfx90a 1,
 * gfx942 2, others 0). Exit 0 on success. */
#include "expect.h"
#include "gpu_memory.h"
#include <hsakmt/hsakmt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct aql_dispatch {
	uint16_t header, setup, wg[3], reserved0;
	uint32_t grid[3], private_size, group_size;
	uint64_t kernel_object, kernarg, reserved2, completion_signal;
};
/* perf_sample_hosttrap_v1_t (hsa_ven_amd_pc_sampling.h). */
struct hosttrap_sample {
	uint64_t pc, exec_mask;
	uint32_t wg_x, wg_y, wg_z, wave_chiplet, hw_id, reserved0;
	uint64_t reserved1, timestamp, correlation_id;
};

static uint8_t *ring;
static uint64_t *ptrs;
static HsaQueueResource q;
static uint64_t next_id;

/* Dispatch the model's NOP kernel (descriptor `kobj`) over `grid` in workgroups of `wg`; wait
 * until the queue has read it. */
static int dispatch(uint64_t kobj, uint32_t grid, uint16_t wg)
{
	struct aql_dispatch *p = (struct aql_dispatch *)(ring + (next_id % (4096 / 64)) * 64);
	memset((char *)p + 4, 0, 60);
	p->wg[0] = wg;
	p->wg[1] = p->wg[2] = 1;
	p->grid[0] = grid;
	p->grid[1] = p->grid[2] = 1;
	p->kernel_object = kobj;
	uint32_t hdr = 2 | (1 << 8) | (2 << 9) | (2 << 11); /* KERNEL_DISPATCH, barrier, system scopes */
	__atomic_store_n((uint32_t *)p, hdr | (1u << 16), __ATOMIC_RELEASE); /* setup: 1 dimension */
	__atomic_store_n(&ptrs[1], next_id + 1, __ATOMIC_RELEASE);
	if (hsaKmtQueueRingDoorbell(q.QueueId, next_id) != HSAKMT_STATUS_SUCCESS)
		return 0;
	next_id++;
	for (int k = 0; k < 5000 && __atomic_load_n(&ptrs[0], __ATOMIC_ACQUIRE) != next_id; k++) {
		struct timespec t = { 0, 1000000 };
		nanosleep(&t, NULL);
	}
	return __atomic_load_n(&ptrs[0], __ATOMIC_ACQUIRE) == next_id;
}

int main(void)
{
	HsaSystemProperties sys;
	HsaNodeProperties props;
	HSAuint32 gpu = 0, size = 99;
	const char *m = getenv("PCS_METHODS");
	unsigned methods = m ? (unsigned)atoi(m) : 0;

	EXPECT(hsaKmtPcSamplingSupport() == HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED);
	if (hsaKmtOpenKFD() != HSAKMT_STATUS_SUCCESS || hsaKmtAcquireSystemProperties(&sys) != HSAKMT_STATUS_SUCCESS) {
		printf("cannot open\n");
		return 1;
	}
	gpu = first_gpu_node(&sys, &props);
	EXPECT(gpu != 0);
	if (getenv("PCS_OLD_KFD")) {
		/* CHECK_KFD_MINOR_VERSION(16). */
		EXPECT(hsaKmtPcSamplingSupport() == HSAKMT_STATUS_NOT_SUPPORTED);
		EXPECT(hsaKmtPcSamplingQueryCapabilities(gpu, NULL, 0, &size) == HSAKMT_STATUS_NOT_SUPPORTED);
		goto done;
	}
	EXPECT(hsaKmtPcSamplingSupport() == HSAKMT_STATUS_SUCCESS);

	/* Capabilities and size negotiation. */
	HsaPcSamplingInfo caps[4];
	EXPECT(hsaKmtPcSamplingQueryCapabilities(gpu, caps, 4, NULL) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtPcSamplingQueryCapabilities(999, caps, 4, &size) == HSAKMT_STATUS_INVALID_NODE_UNIT);
	EXPECT(hsaKmtPcSamplingQueryCapabilities(0, caps, 4, &size) == HSAKMT_STATUS_INVALID_PARAMETER); /* CPU: EINVAL */
	HsaPcSamplingInfo info, got;
	HsaPcSamplingTraceId t1 = 77, t2 = 0, t3 = 0;
	memset(&info, 0, sizeof(info));
	info.method = HSA_PC_SAMPLING_METHOD_KIND_HOSTTRAP_V1;
	info.units = HSA_PC_SAMPLING_UNIT_INTERVAL_MICROSECONDS;
	info.value = 1000000; /* 1 s: one trap per (short) dispatch */
	if (methods == 0) {
		EXPECT(hsaKmtPcSamplingQueryCapabilities(gpu, caps, 4, &size) == HSAKMT_STATUS_NOT_SUPPORTED);
		EXPECT(hsaKmtPcSamplingCreate(gpu, &info, &t1) == HSAKMT_STATUS_ERROR && t1 == 0); /* EOPNOTSUPP */
		goto done;
	}
	EXPECT(hsaKmtPcSamplingQueryCapabilities(gpu, NULL, 0, &size) == HSAKMT_STATUS_SUCCESS && size == methods);
	size = 0;
	EXPECT(hsaKmtPcSamplingQueryCapabilities(gpu, caps, 0, &size) == HSAKMT_STATUS_SUCCESS && size == methods);
	if (methods > 1) {
		size = 0;
		EXPECT(hsaKmtPcSamplingQueryCapabilities(gpu, caps, methods - 1, &size) == HSAKMT_STATUS_BUFFER_TOO_SMALL);
		EXPECT(size == methods);
	}
	memset(caps, 0xff, sizeof(caps));
	EXPECT(hsaKmtPcSamplingQueryCapabilities(gpu, caps, 4, &size) == HSAKMT_STATUS_SUCCESS && size == methods);
	EXPECT(caps[0].method == HSA_PC_SAMPLING_METHOD_KIND_HOSTTRAP_V1 && caps[0].units == HSA_PC_SAMPLING_UNIT_INTERVAL_MICROSECONDS);
	EXPECT(caps[0].value == 0 && caps[0].value_min == 1 && caps[0].value_max == ~0ull && caps[0].flags == 0);
	if (methods > 1) {
		EXPECT(caps[1].method == HSA_PC_SAMPLING_METHOD_KIND_STOCHASTIC_V1 && caps[1].units == 1 /* clock cycles */);
		EXPECT(caps[1].value_min == 256 && caps[1].value_max == (1ull << 31) && caps[1].flags == 1 /* power of 2 */);
		got = caps[1];
		got.value = 300;
		EXPECT(hsaKmtPcSamplingCreate(gpu, &got, &t2) == HSAKMT_STATUS_INVALID_PARAMETER && t2 == 0);
	}

	/* Sessions: bad input, then create twice with the same parameters, once with others. */
	EXPECT(hsaKmtPcSamplingCreate(gpu, NULL, &t1) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtPcSamplingCreate(gpu, &info, NULL) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtPcSamplingCreate(999, &info, &t1) == HSAKMT_STATUS_INVALID_NODE_UNIT && t1 == 0);
	got = info;
	got.units = 1; /* host trap counts microseconds only: EOPNOTSUPP */
	EXPECT(hsaKmtPcSamplingCreate(gpu, &got, &t1) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtPcSamplingStart(gpu, 0) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtPcSamplingStart(gpu, 5) == HSAKMT_STATUS_INVALID_PARAMETER); /* start without create */
	EXPECT(hsaKmtPcSamplingDestroy(gpu, 5) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtPcSamplingCreate(gpu, &info, &t1) == HSAKMT_STATUS_SUCCESS && t1 == 1);
	EXPECT(hsaKmtPcSamplingCreate(gpu, &info, &t2) == HSAKMT_STATUS_SUCCESS && t2 == 2);
	got = info;
	got.value = 500;
	EXPECT(hsaKmtPcSamplingCreate(gpu, &got, &t3) == HSAKMT_STATUS_ERROR && t3 == 0); /* EEXIST */
	EXPECT(got.value == 1000000); /* the session's parameters came back */
	size = 0;
	EXPECT(hsaKmtPcSamplingQueryCapabilities(gpu, caps, 4, &size) == HSAKMT_STATUS_SUCCESS && size == 1);
	EXPECT(caps[0].value == 1000000 && caps[0].method == HSA_PC_SAMPLING_METHOD_KIND_HOSTTRAP_V1);
	EXPECT(hsaKmtPcSamplingStop(gpu, t1) == HSAKMT_STATUS_KERNEL_ALREADY_OPENED); /* not started: EALREADY */

	/* The runtime's side: a trap handler whose TMA points at host_trap_buffers (buffer size 16,
	 * watermark 0 on buffer 0), and a done signal with an event mailbox. */
	ring = gpu_host_memory(gpu, 4096);
	ptrs = gpu_host_memory(gpu, 4096);
	uint64_t *tma = gpu_host_memory(gpu, 4096);
	uint8_t *tba = gpu_host_memory(gpu, 4096);
	uint8_t *hb = gpu_host_memory(gpu, 8192);
	uint64_t *sig = gpu_host_memory(gpu, 4096);
	uint32_t *kobj = gpu_host_memory(gpu, 4096);
	EXPECT(ring && ptrs && tma && tba && hb && sig && kobj);
	kobj[0] = 0x4b4d4b48; /* "HKMK": the model's NOP kernel (id 0) */
	tma[0] = (uintptr_t)hb;
	*(uint32_t *)(hb + 8) = 16;
	*(uint32_t *)(hb + 0x14) = 0;
	*(uint64_t *)(hb + 0x18) = (uintptr_t)sig;
	HsaEvent *ev = new_event(HSA_EVENTTYPE_SIGNAL, gpu, false);
	EXPECT(ev != NULL);
	sig[1] = 1;                    /* value */
	sig[2] = ev->EventData.HWData2; /* event mailbox */
	sig[3] = ev->EventId;           /* event id (low 32 bits) */
	EXPECT(hsaKmtSetTrapHandler(gpu, tba, 4096, tma, 4096) == HSAKMT_STATUS_SUCCESS);
	memset(&q, 0, sizeof(q));
	q.Queue_read_ptr_aql = &ptrs[0];
	q.Queue_write_ptr_aql = &ptrs[1];
	EXPECT(hsaKmtCreateQueue(gpu, HSA_QUEUE_COMPUTE_AQL, 100, HSA_QUEUE_PRIORITY_NORMAL, ring, 4096, NULL, &q) == HSAKMT_STATUS_SUCCESS);
	uint64_t doorbell = ((uintptr_t)q.Queue_DoorBell_aql & 0x1fff) / 8;

	/* Not started: a dispatch leaves no sample. */
	EXPECT(dispatch((uintptr_t)kobj, 256, 64));
	EXPECT(*(uint64_t *)hb == 0);

	EXPECT(hsaKmtPcSamplingStart(gpu, t1) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtPcSamplingStart(gpu, t1) == HSAKMT_STATUS_KERNEL_ALREADY_OPENED);
	HsaClockCounters c0, c1;
	EXPECT(hsaKmtGetClockCounters(gpu, &c0) == HSAKMT_STATUS_SUCCESS);
	EXPECT(dispatch((uintptr_t)kobj, 256, 64)); /* packet 1: 4 full waves of 64 */
	EXPECT(dispatch((uintptr_t)kobj, 40, 64));  /* packet 2: one wave of 40 lanes */
	EXPECT(hsaKmtGetClockCounters(gpu, &c1) == HSAKMT_STATUS_SUCCESS);
	EXPECT(*(uint64_t *)hb == 2);                 /* buf_write_val: two entries taken */
	EXPECT(*(uint32_t *)(hb + 0x10) == 2);        /* buf_written_val0 */
	struct hosttrap_sample *s = (struct hosttrap_sample *)(hb + 0x40);
	EXPECT(s[0].pc == (uintptr_t)kobj && s[1].pc == (uintptr_t)kobj);
	EXPECT(s[0].exec_mask == ~0ull && s[1].exec_mask == (1ull << 40) - 1);
	EXPECT(s[0].wg_x == 0 && s[0].wg_y == 0 && s[0].wg_z == 0 && (s[0].wave_chiplet & 0x3f) == 0);
	EXPECT(s[0].timestamp >= c0.GPUClockCounter && s[0].timestamp <= s[1].timestamp && s[1].timestamp <= c1.GPUClockCounter);
	EXPECT(s[0].correlation_id == (doorbell << 32 | 1) && s[1].correlation_id == (doorbell << 32 | 2));
	EXPECT(s[2].pc == 0); /* nothing more */
	/* The first sample reached the watermark (0): the done signal is 0 and its event set. */
	EXPECT(__atomic_load_n(&sig[1], __ATOMIC_ACQUIRE) == 0);
	EXPECT(hsaKmtWaitOnEvent(ev, 2000) == HSAKMT_STATUS_SUCCESS);

	/* A full buffer loses samples (the entry counter still counts them). */
	*(uint32_t *)(hb + 8) = 2;
	EXPECT(dispatch((uintptr_t)kobj, 64, 64));
	EXPECT(*(uint64_t *)hb == 3 && *(uint32_t *)(hb + 0x10) == 2 && s[2].pc == 0);
	*(uint32_t *)(hb + 8) = 16;

	/* Stopped: no more samples. */
	EXPECT(hsaKmtPcSamplingStop(gpu, t1) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtPcSamplingStop(gpu, t1) == HSAKMT_STATUS_KERNEL_ALREADY_OPENED);
	EXPECT(dispatch((uintptr_t)kobj, 64, 64));
	EXPECT(*(uint64_t *)hb == 3);

	/* Destroy: upstream stops first, so a started session goes too; a destroyed id is gone. */
	EXPECT(hsaKmtPcSamplingStart(gpu, t2) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtPcSamplingDestroy(gpu, t2) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtPcSamplingStart(gpu, t2) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtPcSamplingDestroy(gpu, t1) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtPcSamplingDestroy(gpu, t1) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtPcSamplingDestroy(gpu, 0) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(dispatch((uintptr_t)kobj, 64, 64));
	EXPECT(*(uint64_t *)hb == 3);
	/* No session left: the query answers every method again, other parameters are accepted. */
	EXPECT(hsaKmtPcSamplingQueryCapabilities(gpu, NULL, 0, &size) == HSAKMT_STATUS_SUCCESS && size == methods);
	got = info;
	got.value = 500;
	EXPECT(hsaKmtPcSamplingCreate(gpu, &got, &t3) == HSAKMT_STATUS_SUCCESS && t3 == 3);
	EXPECT(hsaKmtPcSamplingStart(gpu, t3) == HSAKMT_STATUS_SUCCESS);

	/* CloseKFD ends the started session: a new open finds none. */
	EXPECT(hsaKmtDestroyQueue(q.QueueId) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtOpenKFD() == HSAKMT_STATUS_SUCCESS && hsaKmtAcquireSystemProperties(&sys) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtPcSamplingQueryCapabilities(gpu, NULL, 0, &size) == HSAKMT_STATUS_SUCCESS && size == methods);
	EXPECT(hsaKmtPcSamplingStop(gpu, t3) == HSAKMT_STATUS_INVALID_PARAMETER);
done:
	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	if (failures)
		return 1;
	printf("pc_sampling: OK\n");
	return 0;
}
