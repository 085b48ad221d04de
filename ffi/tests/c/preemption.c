/* A kernel that never ends does not take the GPU from other queues, and destroying its queue
 * stops it without an error (model/ISA.md, "Scheduling"): the model runs machine code a quantum of
 * wave-instructions at a time and preempts between quanta, as the CP's scheduler does between
 * queues. Queue A runs `s_branch -1` (an endless loop, one wave); queue B then runs two
 * `s_endpgm` kernels, which complete while A's kernel still runs; DestroyQueue(A) succeeds and
 * A's completion signal is never decremented. Hand-assembled gfx90a code: two code object v5
 * kernel descriptors, each 256 bytes before its entry. Exit 0 on success. */
#include "expect.h"
#include "gpu_memory.h"
#include <hsakmt/hsakmt.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define S_BRANCH_SELF 0xbf82ffffu /* s_branch -1 */
#define S_ENDPGM 0xbf810000u

struct queue {
	HsaQueueResource r;
	uint8_t *ring;
	uint64_t *ptrs;
	HsaEvent *error_event;
};

/* An AQL queue with the runtime's error word (ptrs[8]) and error event, as ROCr makes one: a
 * dispatch the model stopped (an illegal instruction, the runaway limit) would set the word. */
static void create(HSAuint32 gpu, struct queue *q)
{
	HsaEventDescriptor d;
	memset(&d, 0, sizeof(d));
	d.EventType = HSA_EVENTTYPE_SIGNAL;
	d.NodeId = gpu;
	EXPECT(hsaKmtCreateEvent(&d, false, false, &q->error_event) == HSAKMT_STATUS_SUCCESS);
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
static int healthy(struct queue *q)
{
	return __atomic_load_n(&q->ptrs[8], __ATOMIC_ACQUIRE) == 0 && hsaKmtWaitOnEvent(q->error_event, 0) == HSAKMT_STATUS_WAIT_TIMEOUT;
}

/* A one-wave kernel dispatch of the descriptor at `kd` as packet `id`, completing `signal`. */
static void submit(struct queue *q, uint64_t id, uint64_t kd, uint8_t *signal)
{
	uint8_t *p = q->ring + (id % 64) * 64;
	memset(signal, 0, 64);
	*(int64_t *)signal = 1;		/* kind: user signal */
	__atomic_store_n((int64_t *)(signal + 8), 1, __ATOMIC_RELEASE); /* value */
	memset(p + 4, 0, 60);
	*(uint16_t *)(p + 4) = 64;	/* workgroup 64 x 1 x 1 */
	*(uint16_t *)(p + 6) = 1;
	*(uint16_t *)(p + 8) = 1;
	*(uint32_t *)(p + 12) = 64; /* grid 64 x 1 x 1 */
	*(uint32_t *)(p + 16) = 1;
	*(uint32_t *)(p + 20) = 1;
	*(uint64_t *)(p + 32) = kd;
	*(uint64_t *)(p + 56) = (uintptr_t)signal;
	/* Header: KERNEL_DISPATCH (2), barrier, system-scope acquire and release; setup: 1 dim. */
	uint32_t header = 2u | 1u << 8 | 2u << 9 | 2u << 11;
	__atomic_store_n((uint32_t *)p, header | 1u << 16, __ATOMIC_RELEASE);
	__atomic_store_n(q->r.Queue_write_ptr_aql, id + 1, __ATOMIC_RELEASE);
	__atomic_store_n(q->r.Queue_DoorBell_aql, id, __ATOMIC_RELEASE);
}

static int64_t value(uint8_t *signal)
{
	return __atomic_load_n((int64_t *)(signal + 8), __ATOMIC_ACQUIRE);
}

/* Wait (a hang guard of 30 s) for `signal` to reach 0. */
static int completes(uint8_t *signal)
{
	for (int i = 0; i < 30000; i++) {
		if (value(signal) == 0)
			return 1;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	return 0;
}

int main(void)
{
	HsaSystemProperties sys;
	HsaNodeProperties props;

	if (hsaKmtOpenKFD() != HSAKMT_STATUS_SUCCESS || hsaKmtAcquireSystemProperties(&sys) != HSAKMT_STATUS_SUCCESS) {
		printf("cannot open\n");
		return 1;
	}
	HSAuint32 gpu = first_gpu_node(&sys, &props);
	EXPECT(gpu != 0);
	EXPECT(props.EngineId.ui32.Major == 9 && props.EngineId.ui32.Minor == 0 && props.EngineId.ui32.Stepping == 10);
	/* The runtime's part first (queue errors then go to the error word): RUNTIME_ENABLE refuses
	 * once queues exist. */
	EXPECT(hsaKmtRuntimeEnable(NULL, false) == HSAKMT_STATUS_SUCCESS);

	/* Descriptors at +0 (spin) and +64 (end); entries 256 bytes after each. A descriptor of
	 * zeros is one wave64 kernel with 8 VGPRs, no SGPRs to set up, no LDS, no scratch. */
	uint8_t *code = gpu_host_memory(gpu, 4096);
	uint8_t *signals = gpu_host_memory(gpu, 4096);
	EXPECT(code && signals);
	*(int64_t *)(code + 16) = 256;
	*(int64_t *)(code + 64 + 16) = 256;
	*(uint32_t *)(code + 256) = S_BRANCH_SELF;
	*(uint32_t *)(code + 320) = S_ENDPGM;
	uint64_t spin = (uintptr_t)code, end = (uintptr_t)code + 64;

	struct queue a, b;
	create(gpu, &a);
	create(gpu, &b);
	uint8_t *sa = signals, *sb = signals + 64;
	submit(&a, 0, spin, sa);
	submit(&b, 0, end, sb);
	EXPECT(completes(sb));
	submit(&b, 1, end, sb);
	EXPECT(completes(sb));
	/* A's kernel still runs: not completed, not consumed, not stopped by the runaway limit. */
	EXPECT(value(sa) == 1);
	EXPECT(__atomic_load_n(&a.ptrs[0], __ATOMIC_ACQUIRE) == 0);
	EXPECT(healthy(&a));
	EXPECT(__atomic_load_n(&b.ptrs[0], __ATOMIC_ACQUIRE) == 2);
	EXPECT(hsaKmtDestroyQueue(a.r.QueueId) == HSAKMT_STATUS_SUCCESS);
	EXPECT(value(sa) == 1); /* stopped, never completed */
	EXPECT(healthy(&a));
	EXPECT(healthy(&b));
	EXPECT(hsaKmtDestroyQueue(b.r.QueueId) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtDestroyEvent(a.error_event) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtDestroyEvent(b.error_event) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	if (!failures)
		printf("preemption: OK\n");
	return failures ? 1 : 0;
}
