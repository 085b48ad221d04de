/* What the C tests that run machine code on the model share: an AQL queue as ROCr makes one
 * (with the runtime's error word and event), and a one-workgroup kernel dispatch on it. */
#ifndef HSAKMT_RS_TEST_AQL_DISPATCH_H
#define HSAKMT_RS_TEST_AQL_DISPATCH_H
#include "expect.h"
#include "gpu_memory.h"
#include <hsakmt/hsakmt.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* Open the KFD and find the first GPU, which must be a gfx90a (the hand-assembled code of these
 * tests is gfx90a's): its node, or 0 (after saying why) when there is none. */
static inline HSAuint32 open_gfx90a(void)
{
	HsaSystemProperties sys;
	HsaNodeProperties props;

	if (hsaKmtOpenKFD() != HSAKMT_STATUS_SUCCESS || hsaKmtAcquireSystemProperties(&sys) != HSAKMT_STATUS_SUCCESS) {
		printf("cannot open\n");
		return 0;
	}
	HSAuint32 gpu = first_gpu_node(&sys, &props);
	if (!gpu || props.EngineId.ui32.Major != 9 || props.EngineId.ui32.Minor != 0 || props.EngineId.ui32.Stepping != 10) {
		printf("no gfx90a GPU\n");
		return 0;
	}
	return gpu;
}

struct aql_queue {
	HsaQueueResource r;
	uint8_t *ring;
	uint64_t *ptrs;
	HsaEvent *error_event;
};

/* A 64-packet AQL queue on `gpu`: read and write indices in ptrs[0] and ptrs[1], the error word
 * (ErrorReason) in ptrs[8], its error event; a dispatch the model stops would set the word. */
static inline void aql_queue_create(HSAuint32 gpu, struct aql_queue *q)
{
	q->error_event = new_event(HSA_EVENTTYPE_SIGNAL, gpu, false);
	EXPECT(q->error_event != NULL);
	q->ring = gpu_host_memory(gpu, 4096);
	q->ptrs = gpu_host_memory(gpu, 4096);
	EXPECT(q->ring && q->ptrs);
	memset(&q->r, 0, sizeof(q->r));
	q->r.Queue_read_ptr_aql = &q->ptrs[0];
	q->r.Queue_write_ptr_aql = &q->ptrs[1];
	q->r.ErrorReason = (HSAint64 *)&q->ptrs[8];
	EXPECT(hsaKmtCreateQueue(gpu, HSA_QUEUE_COMPUTE_AQL, 100, HSA_QUEUE_PRIORITY_NORMAL, q->ring, 4096, q->error_event,
				 &q->r) == HSAKMT_STATUS_SUCCESS);
}

/* The queue has not been stopped: no error word, no error event. */
static inline int aql_queue_healthy(struct aql_queue *q)
{
	return __atomic_load_n(&q->ptrs[8], __ATOMIC_ACQUIRE) == 0 &&
	       hsaKmtWaitOnEvent(q->error_event, 0) == HSAKMT_STATUS_WAIT_TIMEOUT;
}

static inline void aql_queue_destroy(struct aql_queue *q)
{
	EXPECT(hsaKmtDestroyQueue(q->r.QueueId) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtDestroyEvent(q->error_event) == HSAKMT_STATUS_SUCCESS);
}

/* Packet `id`: one workgroup of 64 work-items of the kernel whose descriptor is at `kd`, with
 * `kernarg` (may be 0), completing `signal` (an amd_signal_t, value set to 1 here). */
static inline void aql_dispatch(struct aql_queue *q, uint64_t id, uint64_t kd, uint64_t kernarg, uint8_t *signal)
{
	uint8_t *p = q->ring + (id % 64) * 64;
	memset(signal, 0, 64);
	*(int64_t *)signal = 1; /* kind: user signal */
	__atomic_store_n((int64_t *)(signal + 8), 1, __ATOMIC_RELEASE);
	memset(p + 4, 0, 60);
	*(uint16_t *)(p + 4) = 64; /* workgroup 64 x 1 x 1 */
	*(uint16_t *)(p + 6) = 1;
	*(uint16_t *)(p + 8) = 1;
	*(uint32_t *)(p + 12) = 64; /* grid 64 x 1 x 1 */
	*(uint32_t *)(p + 16) = 1;
	*(uint32_t *)(p + 20) = 1;
	*(uint64_t *)(p + 32) = kd;
	*(uint64_t *)(p + 40) = kernarg;
	*(uint64_t *)(p + 56) = (uintptr_t)signal;
	/* Header: KERNEL_DISPATCH (2), barrier, system-scope acquire and release; setup: 1 dim. */
	uint32_t header = 2u | 1u << 8 | 2u << 9 | 2u << 11;
	__atomic_store_n((uint32_t *)p, header | 1u << 16, __ATOMIC_RELEASE);
	__atomic_store_n(q->r.Queue_write_ptr_aql, id + 1, __ATOMIC_RELEASE);
	__atomic_store_n(q->r.Queue_DoorBell_aql, id, __ATOMIC_RELEASE);
}

static inline int64_t signal_value(uint8_t *signal)
{
	return __atomic_load_n((int64_t *)(signal + 8), __ATOMIC_ACQUIRE);
}

/* Wait (a hang guard of 30 s) for `signal` to reach 0. */
static inline int signal_completes(uint8_t *signal)
{
	for (int i = 0; i < 30000; i++) {
		if (signal_value(signal) == 0)
			return 1;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	return 0;
}

#endif
