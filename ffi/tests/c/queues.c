/* Queues as kfdtest and ROCr use them: SDMA, PM4 compute and AQL compute queues on the first GPU,
 * with their doorbells, read/write pointers, CU masks, queue info and destruction; an SDMA FENCE +
 * TRAP written by hand from the public packet format, executed by the GPU (the model's), raising
 * the KFD event the test waits on; and the statuses of bad input (NULL resource, bad priority or
 * type, unknown node, ring size not a power of two, unmapped ring, destroying twice). Exit 0 on
 * success. */
#include "expect.h"
#include "gpu_memory.h"
#include <hsakmt/hsakmt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void release(void *p, HSAuint64 size)
{
	EXPECT(hsaKmtUnmapMemoryToGPU(p) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtFreeMemory(p, size) == HSAKMT_STATUS_SUCCESS);
}

int main(void)
{
	HsaSystemProperties sys;
	HsaNodeProperties props;
	HsaQueueResource r, bad;
	HSAuint32 gpu = 0, kid = 0;
	HSAKMT_STATUS st;

	if (hsaKmtOpenKFD() != HSAKMT_STATUS_SUCCESS || hsaKmtAcquireSystemProperties(&sys) != HSAKMT_STATUS_SUCCESS) {
		printf("cannot open\n");
		return 1;
	}
	gpu = first_gpu_node(&sys, &props);
	EXPECT(gpu != 0);
	EXPECT(hsaKmtGetNodeProperties(gpu, &props) == HSAKMT_STATUS_SUCCESS);

	uint32_t *ring = gpu_host_memory(gpu, 4096);
	uint32_t *dst = gpu_host_memory(gpu, 4096);
	EXPECT(ring && dst);

	/* Bad input: each a status, nothing created. */
	memset(&bad, 0, sizeof(bad));
	EXPECT(hsaKmtCreateQueue(gpu, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_NORMAL, ring, 4096, NULL, NULL) ==
	       HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtCreateQueue(gpu, HSA_QUEUE_SDMA, 100, (HSA_QUEUE_PRIORITY)4, ring, 4096, NULL, &bad) ==
	       HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtCreateQueue(gpu, (HSA_QUEUE_TYPE)99, 100, HSA_QUEUE_PRIORITY_NORMAL, ring, 4096, NULL, &bad) ==
	       HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtCreateQueue(999, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_NORMAL, ring, 4096, NULL, &bad) ==
	       HSAKMT_STATUS_INVALID_NODE_UNIT);
	EXPECT(hsaKmtCreateQueue(gpu, HSA_QUEUE_SDMA_BY_ENG_ID, 100, HSA_QUEUE_PRIORITY_NORMAL, ring, 4096, NULL, &bad) ==
	       HSAKMT_STATUS_ERROR);
	/* The KFD refuses a ring size that is not a power of two, and a ring the GPU cannot reach. */
	EXPECT(hsaKmtCreateQueue(gpu, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_NORMAL, ring, 3000, NULL, &bad) ==
	       HSAKMT_STATUS_ERROR);
	void *unmapped = aligned_alloc(4096, 4096);
	EXPECT(hsaKmtCreateQueue(gpu, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_NORMAL, unmapped, 4096, NULL, &bad) ==
	       HSAKMT_STATUS_ERROR);
	free(unmapped);
	EXPECT(hsaKmtDestroyQueue(0) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtDestroyQueue(0x12345678) == HSAKMT_STATUS_INVALID_PARAMETER);

	/* An SDMA queue. */
	memset(&r, 0, sizeof(r));
	EXPECT(hsaKmtCreateQueue(gpu, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_NORMAL, ring, 4096, NULL, &r) ==
	       HSAKMT_STATUS_SUCCESS);
	EXPECT(r.QueueId != 0 && r.Queue_DoorBell_aql != NULL && r.Queue_read_ptr_aql != NULL && r.Queue_write_ptr_aql != NULL);
	EXPECT(((uintptr_t)r.Queue_DoorBell_aql & 7) == 0);
	EXPECT(hsaKmtGetKernelQueueId(r.QueueId, &kid) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtGetKernelQueueId(r.QueueId, NULL) == HSAKMT_STATUS_INVALID_PARAMETER);
	HsaQueueInfo info;
	EXPECT(hsaKmtGetQueueInfo(r.QueueId, &info) == HSAKMT_STATUS_ERROR); /* no CWSR area on SDMA */
	HsaQueueReport rep;
	EXPECT(hsaKmtReportQueue(r.QueueId, &rep) == HSAKMT_STATUS_SUCCESS);
	EXPECT(rep.QueueAddress == ring && rep.QueueSize == 4096);

	/* FENCE 0xCAFE to dst, FENCE the event id into the event's slot, then TRAP with the event
	 * id, as kfdtest does: SDMA packets from the public format (op in bits 0..7; FENCE = 5:
	 * address lo/hi, data; TRAP = 6: 28-bit interrupt context). The KFD sets a signal event on
	 * an interrupt only when its slot was written. */
	HsaEvent *ev = new_event(HSA_EVENTTYPE_SIGNAL, gpu, false);
	EXPECT(ev != NULL);
	uint64_t a = (uintptr_t)dst, mb = ev->EventData.HWData2;
	uint32_t id = ev->EventId;
	EXPECT(mb != 0);
	uint32_t pk[] = { 5, (uint32_t)a, (uint32_t)(a >> 32), 0xCAFE, 5, (uint32_t)mb, (uint32_t)(mb >> 32), id, 6, id };
	memcpy(ring, pk, sizeof(pk));
	__atomic_store_n(r.Queue_write_ptr_aql, (HSAuint64)sizeof(pk), __ATOMIC_RELEASE);
	__atomic_store_n(r.Queue_DoorBell_aql, (HSAuint64)sizeof(pk), __ATOMIC_RELEASE);
	EXPECT(hsaKmtWaitOnEvent(ev, 10000) == HSAKMT_STATUS_SUCCESS);
	EXPECT(__atomic_load_n(&dst[0], __ATOMIC_ACQUIRE) == 0xCAFE);
	EXPECT(*r.Queue_read_ptr_aql == sizeof(pk)); /* SDMA read pointer in bytes */

	/* The same through hsaKmtQueueRingDoorbell: a second FENCE. */
	uint32_t pk2[] = { 5, (uint32_t)(a + 4), (uint32_t)((a + 4) >> 32), 0xBEEF, 5, (uint32_t)mb, (uint32_t)(mb >> 32), id, 6, id };
	memcpy((char *)ring + sizeof(pk), pk2, sizeof(pk2));
	__atomic_store_n(r.Queue_write_ptr_aql, (HSAuint64)(sizeof(pk) + sizeof(pk2)), __ATOMIC_RELEASE);
	EXPECT(hsaKmtQueueRingDoorbell(r.QueueId, sizeof(pk) + sizeof(pk2)) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtWaitOnEvent(ev, 10000) == HSAKMT_STATUS_SUCCESS);
	EXPECT(__atomic_load_n(&dst[1], __ATOMIC_ACQUIRE) == 0xBEEF);
	EXPECT(hsaKmtQueueRingDoorbell(0x4321, 0) == HSAKMT_STATUS_INVALID_PARAMETER);

	/* XNACK cannot change while the process has queues (the KFD answers EBUSY: ERROR). */
	HSAint32 xnack = -1;
	EXPECT(hsaKmtGetXNACKMode(&xnack) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtSetXNACKMode(!xnack) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtGetXNACKMode(&xnack) == HSAKMT_STATUS_SUCCESS && xnack == 0);

	/* SDMA on a chosen engine, and over XGMI where the GPU has XGMI SDMA engines. */
	uint32_t *ering = gpu_host_memory(gpu, 4096);
	HsaQueueResource e;
	memset(&e, 0, sizeof(e));
	if (props.NumSdmaEngines) { /* a 2018 KFD (the MI25's) does not report them */
		EXPECT(hsaKmtCreateQueueExt(gpu, HSA_QUEUE_SDMA_BY_ENG_ID, 100, HSA_QUEUE_PRIORITY_NORMAL,
					    props.NumSdmaEngines - 1, ering, 4096, NULL, &e) == HSAKMT_STATUS_SUCCESS);
		EXPECT(hsaKmtDestroyQueue(e.QueueId) == HSAKMT_STATUS_SUCCESS);
	}
	EXPECT(hsaKmtCreateQueueExt(gpu, HSA_QUEUE_SDMA_BY_ENG_ID, 100, HSA_QUEUE_PRIORITY_NORMAL, 99, ering, 4096, NULL, &e) ==
	       HSAKMT_STATUS_ERROR);
	st = hsaKmtCreateQueue(gpu, HSA_QUEUE_SDMA_XGMI, 100, HSA_QUEUE_PRIORITY_NORMAL, ering, 4096, NULL, &e);
	EXPECT(st == (props.NumSdmaXgmiEngines ? HSAKMT_STATUS_SUCCESS : HSAKMT_STATUS_ERROR));
	if (st == HSAKMT_STATUS_SUCCESS)
		EXPECT(hsaKmtDestroyQueue(e.QueueId) == HSAKMT_STATUS_SUCCESS);
	release(ering, 4096);

	/* A GPU page fault: FENCE to an address no mapping covers. The memory-exception event
	 * carries the faulting page and the node; the queue stops; everything else goes on. */
	HsaEvent *fault = new_event(HSA_EVENTTYPE_MEMORY, gpu, true);
	EXPECT(fault != NULL);
	uint32_t *fring = gpu_host_memory(gpu, 4096);
	HsaQueueResource f;
	memset(&f, 0, sizeof(f));
	EXPECT(hsaKmtCreateQueue(gpu, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_NORMAL, fring, 4096, NULL, &f) ==
	       HSAKMT_STATUS_SUCCESS);
	const uint64_t wild = 0x7ff0001234ull; /* inside the GPU VM, never mapped */
	uint32_t pf[] = { 5, (uint32_t)wild, (uint32_t)(wild >> 32), 1 };
	memcpy(fring, pf, sizeof(pf));
	__atomic_store_n(f.Queue_write_ptr_aql, (HSAuint64)sizeof(pf), __ATOMIC_RELEASE);
	__atomic_store_n(f.Queue_DoorBell_aql, (HSAuint64)sizeof(pf), __ATOMIC_RELEASE);
	EXPECT(hsaKmtWaitOnEvent(fault, 10000) == HSAKMT_STATUS_SUCCESS);
	EXPECT(fault->EventData.EventData.MemoryAccessFault.VirtualAddress == (wild & ~0xfffull));
	EXPECT(fault->EventData.EventData.MemoryAccessFault.NodeId == gpu);
	EXPECT(fault->EventData.EventData.MemoryAccessFault.Failure.NotPresent == 1);
	EXPECT(*f.Queue_read_ptr_aql == 0); /* the faulting packet is not consumed */
	EXPECT(hsaKmtDestroyQueue(f.QueueId) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtDestroyEvent(fault) == HSAKMT_STATUS_SUCCESS);
	release(fring, 4096);

	/* A PM4 compute queue: CWSR area, CU mask, update. */
	uint32_t *ring2 = gpu_host_memory(gpu, 4096);
	HsaQueueResource c;
	memset(&c, 0, sizeof(c));
	EXPECT(hsaKmtCreateQueue(gpu, HSA_QUEUE_COMPUTE, 100, HSA_QUEUE_PRIORITY_HIGH, ring2, 4096, ev, &c) ==
	       HSAKMT_STATUS_SUCCESS);
	EXPECT(c.QueueId != 0 && c.QueueId != r.QueueId && c.Queue_DoorBell_aql != r.Queue_DoorBell_aql);
	uint32_t cus = props.NumFComputeCores / props.NumSIMDPerCU;
	/* The KFD reports wave state only for a queue that is not running (as a debugger sees
	 * it after suspending): ERROR while active, the CWSR area's facts once deactivated. */
	EXPECT(hsaKmtGetQueueInfo(c.QueueId, &info) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtUpdateQueue(c.QueueId, 0, HSA_QUEUE_PRIORITY_LOW, ring2, 4096, NULL) == HSAKMT_STATUS_SUCCESS);
	memset(&info, 0, sizeof(info));
	EXPECT(hsaKmtGetQueueInfo(c.QueueId, &info) == HSAKMT_STATUS_SUCCESS);
	EXPECT(info.NumCUAssigned == (cus + 31) / 32 * 32);
	EXPECT(info.CUMaskInfo != NULL && (info.CUMaskInfo[0] & 1) == 1);
	EXPECT(info.SaveAreaHeader != NULL && info.SaveAreaHeader->ErrorEventId == ev->EventId);
	/* Where the CWSR area lives (QUEUES_CWSR from the test driver): "unified" is upstream's
	 * unified area, 2 MiB-aligned anonymous memory registered as an SVM range with
	 * GPU_ALWAYS_MAPPED and this GPU's access, no allocation of the thunk's; "bo" is GPU-mapped
	 * memory the thunk allocated (no SVM API, or KFD < 1.11 refusing GPU_ALWAYS_MAPPED). */
	const char *want = getenv("QUEUES_CWSR");
	if (want && info.SaveAreaHeader) {
		HsaPointerInfo pi;
		HSAuint64 len = (info.SaveAreaAllocSize + 4095) & ~4095ull;
		HSA_SVM_ATTRIBUTE qa[2] = { { HSA_SVM_ATTR_SET_FLAGS, 0 }, { HSA_SVM_ATTR_ACCESS, gpu } };
		HSAKMT_STATUS gs = hsaKmtSVMGetAttr(info.SaveAreaHeader, len, 2, qa);
		memset(&pi, 0, sizeof(pi));
		HSAKMT_STATUS ps = hsaKmtQueryPointerInfo(info.SaveAreaHeader, &pi);
		if (!strcmp(want, "unified")) {
			EXPECT(((uintptr_t)info.SaveAreaHeader & ((2u << 20) - 1)) == 0);
			EXPECT(gs == HSAKMT_STATUS_SUCCESS);
			EXPECT((qa[0].value & (HSA_SVM_FLAG_HOST_ACCESS | HSA_SVM_FLAG_GPU_EXEC | HSA_SVM_FLAG_GPU_ALWAYS_MAPPED)) ==
			       (HSA_SVM_FLAG_HOST_ACCESS | HSA_SVM_FLAG_GPU_EXEC | HSA_SVM_FLAG_GPU_ALWAYS_MAPPED));
			EXPECT(qa[1].type == HSA_SVM_ATTR_ACCESS && qa[1].value == gpu);
			EXPECT(ps != HSAKMT_STATUS_SUCCESS || pi.Type != HSA_POINTER_ALLOCATED);
		} else {
			EXPECT(gs != HSAKMT_STATUS_SUCCESS || !(qa[0].value & HSA_SVM_FLAG_GPU_ALWAYS_MAPPED));
			EXPECT(ps == HSAKMT_STATUS_SUCCESS && pi.Type == HSA_POINTER_ALLOCATED);
		}
	}
	EXPECT(info.ControlStackUsedInBytes == 0 && info.SaveAreaSizeInBytes == 0); /* no wave was saved */
	EXPECT(info.UserContextSaveArea == info.ControlStackTop);
	EXPECT(hsaKmtGetQueueInfo(c.QueueId, NULL) == HSAKMT_STATUS_INVALID_PARAMETER);
	uint32_t mask[4] = { 0xf, 0, 0, 0 }; /* whole WGPs (CU pairs), as gfx10+ requires */
	EXPECT(hsaKmtSetQueueCUMask(c.QueueId, 0, mask) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtSetQueueCUMask(c.QueueId, 33, mask) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtSetQueueCUMask(c.QueueId, 32, NULL) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtSetQueueCUMask(c.QueueId, 32, mask) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtGetQueueInfo(c.QueueId, &info) == HSAKMT_STATUS_SUCCESS);
	EXPECT(info.NumCUAssigned == 32 && info.CUMaskInfo[0] == 0xf);
	/* A mask longer than the GPU's CUs: the KFD drops the bits past its CUs, not an error. */
	uint32_t wide[64];
	memset(wide, 0xff, sizeof(wide));
	EXPECT(hsaKmtSetQueueCUMask(c.QueueId, 64 * 32, wide) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtUpdateQueue(c.QueueId, 50, HSA_QUEUE_PRIORITY_LOW, ring2, 4096, NULL) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtUpdateQueue(c.QueueId, 50, (HSA_QUEUE_PRIORITY)7, ring2, 4096, NULL) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtUpdateQueue(c.QueueId, 50, HSA_QUEUE_PRIORITY_LOW, ring2, 1000, NULL) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtUpdateQueue(c.QueueId, 101, HSA_QUEUE_PRIORITY_LOW, ring2, 4096, NULL) == HSAKMT_STATUS_ERROR);

	/* An AQL queue: the caller's read/write pointers come back as given. */
	uint64_t *ptrs = gpu_host_memory(gpu, 4096);
	uint32_t *ring3 = gpu_host_memory(gpu, 4096);
	HsaQueueResource q;
	memset(&q, 0, sizeof(q));
	q.Queue_read_ptr_aql = &ptrs[0];
	q.Queue_write_ptr_aql = &ptrs[1];
	EXPECT(hsaKmtCreateQueue(gpu, HSA_QUEUE_COMPUTE_AQL, 100, HSA_QUEUE_PRIORITY_NORMAL, ring3, 4096, NULL, &q) ==
	       HSAKMT_STATUS_SUCCESS);
	EXPECT(q.Queue_read_ptr_aql == &ptrs[0] && q.Queue_write_ptr_aql == &ptrs[1] && q.Queue_DoorBell_aql != NULL);
	HSAuint32 kid2 = 0;
	EXPECT(hsaKmtGetKernelQueueId(q.QueueId, &kid2) == HSAKMT_STATUS_SUCCESS && kid2 != kid);

	/* Trap handler. */
	EXPECT(hsaKmtSetTrapHandler(gpu, ring3, 4096, ptrs, 4096) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtSetTrapHandler(999, ring3, 4096, ptrs, 4096) == HSAKMT_STATUS_INVALID_NODE_UNIT);

	/* Destroy: once succeeds, twice is a status. */
	EXPECT(hsaKmtDestroyQueue(q.QueueId) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtDestroyQueue(q.QueueId) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtDestroyQueue(c.QueueId) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtDestroyQueue(r.QueueId) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtDestroyQueue(r.QueueId) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtGetKernelQueueId(r.QueueId, &kid) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtDestroyEvent(ev) == HSAKMT_STATUS_SUCCESS);
	release(ring, 4096);
	release(dst, 4096);
	release(ring2, 4096);
	release(ring3, 4096);
	release(ptrs, 4096);

	/* A queue left alive is destroyed by close. */
	uint32_t *ring4 = gpu_host_memory(gpu, 4096);
	memset(&r, 0, sizeof(r));
	EXPECT(hsaKmtCreateQueue(gpu, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_NORMAL, ring4, 4096, NULL, &r) ==
	       HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtDestroyQueue(r.QueueId) == HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED);

	if (failures) {
		printf("queues: %d failures\n", failures);
		return 1;
	}
	printf("queues: OK\n");
	return 0;
}
