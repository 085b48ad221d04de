/* How a queue the GPU stops reaches a C program, as amdgpu tells it:
 * - an SDMA packet the engine does not know, and a PM4 packet that is not type 3, hang their
 *   queue; destroying it raises the HW-exception event: the queue alone reset where the node
 *   advertises per-queue reset for that kind of queue (Capability.PerQueueResetSupported,
 *   Capability2.PerSDMAQueueResetSupported; DestroyQueue succeeds, no memory lost), otherwise a
 *   whole-GPU reset (DestroyQueue answers ERROR as upstream on the KFD's -ETIME, memory lost);
 * - an AQL packet the CP rejects, with the runtime enabled, sets the queue's ErrorReason word
 *   (KFD_EC_MASK of the exception code) and signals the queue's error event.
 * Exit 0 on success. */
#include "expect.h"
#include "gpu_memory.h"
#include <hsakmt/hsakmt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Wait (up to 10 s) until the queue's read pointer reaches `want`: the engine has executed the
 * healthy packet before the bad one. */
static int wait_rptr(volatile HSAuint64 *rptr, HSAuint64 want, int dwords32)
{
	for (int i = 0; i < 10000; i++) {
		HSAuint64 v = dwords32 ? __atomic_load_n((volatile uint32_t *)rptr, __ATOMIC_ACQUIRE)
				       : __atomic_load_n(rptr, __ATOMIC_ACQUIRE);
		if (v == want)
			return 1;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	return 0;
}

/* Destroy a hung queue and check the HW-exception event it raises. */
static void destroy_hung(HSA_QUEUEID id, HsaEvent *hw, HSAuint32 gpu, int per_queue_reset)
{
	EXPECT(hsaKmtWaitOnEvent(hw, 0) == HSAKMT_STATUS_WAIT_TIMEOUT); /* a hang raises nothing by itself */
	HSAKMT_STATUS st = hsaKmtDestroyQueue(id);
	EXPECT(st == (per_queue_reset ? HSAKMT_STATUS_SUCCESS : HSAKMT_STATUS_ERROR));
	EXPECT(hsaKmtDestroyQueue(id) == HSAKMT_STATUS_INVALID_PARAMETER); /* gone either way */
	EXPECT(hsaKmtWaitOnEvent(hw, 5000) == HSAKMT_STATUS_SUCCESS);
	HsaHwException *x = &hw->EventData.EventData.HwException;
	EXPECT(hw->EventData.EventType == HSA_EVENTTYPE_HW_EXCEPTION);
	EXPECT(x->NodeId == gpu);
	EXPECT(x->ResetCause == HSA_EVENTID_HW_EXCEPTION_GPU_HANG);
	EXPECT(x->MemoryLost == (per_queue_reset ? 0 : 1));
	EXPECT(x->ResetType == (per_queue_reset ? 1 : 0)); /* per-engine reset : whole GPU */
}

int main(void)
{
	HsaSystemProperties sys;
	HsaNodeProperties props;
	HSAuint32 gpu = 0;

	if (hsaKmtOpenKFD() != HSAKMT_STATUS_SUCCESS || hsaKmtAcquireSystemProperties(&sys) != HSAKMT_STATUS_SUCCESS) {
		printf("cannot open\n");
		return 1;
	}
	gpu = first_gpu_node(&sys, &props);
	EXPECT(gpu != 0);
	EXPECT(hsaKmtGetNodeProperties(gpu, &props) == HSAKMT_STATUS_SUCCESS);
	/* The runtime's part first: RUNTIME_ENABLE refuses once queues exist. */
	EXPECT(hsaKmtRuntimeEnable(NULL, false) == HSAKMT_STATUS_SUCCESS);
	const char *want = getenv("EXPECT_PER_QUEUE_RESET");
	int compute_reset = props.Capability.ui32.PerQueueResetSupported;
	int sdma_reset = props.Capability2.ui32.PerSDMAQueueResetSupported;
	EXPECT(want && compute_reset == (want[0] == '1'));
	HsaEvent *hw = new_event(HSA_EVENTTYPE_HW_EXCEPTION, gpu, false);
	EXPECT(hw != NULL);

	/* SDMA: a FENCE, then opcode 0xff. */
	uint32_t *ring = gpu_host_memory(gpu, 4096), *dst = gpu_host_memory(gpu, 4096);
	EXPECT(ring && dst);
	HsaQueueResource r;
	memset(&r, 0, sizeof(r));
	EXPECT(hsaKmtCreateQueue(gpu, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_NORMAL, ring, 4096, NULL, &r) ==
	       HSAKMT_STATUS_SUCCESS);
	uint64_t a = (uintptr_t)dst;
	uint32_t sdma[] = { 5, (uint32_t)a, (uint32_t)(a >> 32), 0xCAFE, 0xff, 0, 0, 0 };
	memcpy(ring, sdma, sizeof(sdma));
	__atomic_store_n(r.Queue_write_ptr_aql, (HSAuint64)sizeof(sdma), __ATOMIC_RELEASE);
	__atomic_store_n(r.Queue_DoorBell_aql, (HSAuint64)sizeof(sdma), __ATOMIC_RELEASE);
	EXPECT(wait_rptr(r.Queue_read_ptr_aql, 16, 0));
	EXPECT(__atomic_load_n(&dst[0], __ATOMIC_ACQUIRE) == 0xCAFE);
	destroy_hung(r.QueueId, hw, gpu, sdma_reset);

	/* PM4 (compute): a 2-dword NOP, then a type-1 header. */
	uint32_t *ring2 = gpu_host_memory(gpu, 4096);
	memset(&r, 0, sizeof(r));
	EXPECT(hsaKmtCreateQueue(gpu, HSA_QUEUE_COMPUTE, 100, HSA_QUEUE_PRIORITY_NORMAL, ring2, 4096, NULL, &r) ==
	       HSAKMT_STATUS_SUCCESS);
	uint32_t pm4[] = { (3u << 30) | (0x10 << 8), 0, 0x40000000, 0 };
	memcpy(ring2, pm4, sizeof(pm4));
	__atomic_store_n(r.Queue_write_ptr_aql, (HSAuint64)4, __ATOMIC_RELEASE);
	__atomic_store_n(r.Queue_DoorBell_aql, (HSAuint64)4, __ATOMIC_RELEASE);
	EXPECT(wait_rptr(r.Queue_read_ptr_aql, 2, 1));
	destroy_hung(r.QueueId, hw, gpu, compute_reset);

	/* AQL: the runtime's error word and event in the queue's CWSR header; a packet of an
	 * unknown type (7) sets KFD_EC_MASK(EC_QUEUE_PACKET_UNSUPPORTED = 20) and the event. */
	HsaEvent *qev = new_event(HSA_EVENTTYPE_SIGNAL, gpu, false);
	EXPECT(qev != NULL);
	uint64_t *ptrs = gpu_host_memory(gpu, 4096);
	uint8_t *ring3 = gpu_host_memory(gpu, 4096);
	volatile HSAint64 *error_word = (HSAint64 *)&ptrs[8];
	HsaQueueResource q;
	memset(&q, 0, sizeof(q));
	q.Queue_read_ptr_aql = &ptrs[0];
	q.Queue_write_ptr_aql = &ptrs[1];
	q.ErrorReason = (HSAint64 *)error_word;
	EXPECT(hsaKmtCreateQueue(gpu, HSA_QUEUE_COMPUTE_AQL, 100, HSA_QUEUE_PRIORITY_NORMAL, ring3, 4096, qev, &q) ==
	       HSAKMT_STATUS_SUCCESS);
	ring3[0] = 7; /* header: packet type 7 */
	__atomic_store_n(q.Queue_write_ptr_aql, (HSAuint64)1, __ATOMIC_RELEASE);
	__atomic_store_n(q.Queue_DoorBell_aql, (HSAuint64)0, __ATOMIC_RELEASE); /* packet id 0 */
	EXPECT(hsaKmtWaitOnEvent(qev, 5000) == HSAKMT_STATUS_SUCCESS);
	EXPECT(__atomic_load_n(error_word, __ATOMIC_ACQUIRE) == (HSAint64)1 << 19);
	EXPECT(hsaKmtWaitOnEvent(hw, 0) == HSAKMT_STATUS_WAIT_TIMEOUT); /* reported, not hung */
	EXPECT(hsaKmtDestroyQueue(q.QueueId) == HSAKMT_STATUS_SUCCESS);

	EXPECT(hsaKmtDestroyEvent(qev) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtDestroyEvent(hw) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtRuntimeDisable() == HSAKMT_STATUS_SUCCESS);

	/* A program that never destroys its queues: a hung SDMA queue, a stopped AQL queue, and a
	 * ring at an address nothing maps (refused at creation). CloseKFD succeeds and frees them
	 * (valgrind checks the thunk's side); a fresh open runs a queue as before. */
	memset(&r, 0, sizeof(r));
	EXPECT(hsaKmtCreateQueue(gpu, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_NORMAL, ring, 4096, NULL, &r) ==
	       HSAKMT_STATUS_SUCCESS);
	memcpy(ring, sdma, sizeof(sdma));
	__atomic_store_n(r.Queue_DoorBell_aql, (HSAuint64)sizeof(sdma), __ATOMIC_RELEASE);
	EXPECT(wait_rptr(r.Queue_read_ptr_aql, 16, 0));
	memset(&q, 0, sizeof(q));
	q.Queue_read_ptr_aql = &ptrs[2];
	q.Queue_write_ptr_aql = &ptrs[3];
	ring3[0] = 7;
	EXPECT(hsaKmtCreateQueue(gpu, HSA_QUEUE_COMPUTE_AQL, 100, HSA_QUEUE_PRIORITY_NORMAL, ring3, 4096, NULL, &q) ==
	       HSAKMT_STATUS_SUCCESS);
	__atomic_store_n(q.Queue_DoorBell_aql, (HSAuint64)0, __ATOMIC_RELEASE); /* stops when its engine runs */
	HsaQueueResource u;
	memset(&u, 0, sizeof(u));
	EXPECT(hsaKmtCreateQueue(gpu, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_NORMAL, (void *)0x7ff000000000ull, 4096, NULL,
				 &u) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtReleaseSystemProperties() == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);

	EXPECT(hsaKmtOpenKFD() == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtAcquireSystemProperties(&sys) == HSAKMT_STATUS_SUCCESS);
	ring = gpu_host_memory(gpu, 4096);
	dst = gpu_host_memory(gpu, 4096);
	EXPECT(ring && dst);
	if (ring && dst) {
		memset(&r, 0, sizeof(r));
		EXPECT(hsaKmtCreateQueue(gpu, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_NORMAL, ring, 4096, NULL, &r) ==
		       HSAKMT_STATUS_SUCCESS);
		a = (uintptr_t)dst;
		uint32_t fence[] = { 5, (uint32_t)a, (uint32_t)(a >> 32), 0xD00D };
		memcpy(ring, fence, sizeof(fence));
		__atomic_store_n(r.Queue_DoorBell_aql, (HSAuint64)sizeof(fence), __ATOMIC_RELEASE);
		EXPECT(wait_rptr(r.Queue_read_ptr_aql, 16, 0));
		EXPECT(__atomic_load_n(&dst[0], __ATOMIC_ACQUIRE) == 0xD00D);
		EXPECT(hsaKmtDestroyQueue(r.QueueId) == HSAKMT_STATUS_SUCCESS);
	}
	EXPECT(hsaKmtReleaseSystemProperties() == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	if (failures)
		return 1;
	printf("queue_errors: OK\n");
	return 0;
}
