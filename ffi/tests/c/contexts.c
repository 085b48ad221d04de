/* KFD contexts (hsakmtctx.h) on the model: the primary context (the classic API's) and two
 * secondary ones (each a further open of the KFD with AMDKFD_IOC_CREATE_PROCESS) allocate, map,
 * create events and SDMA queues independently, and each context's GPU work (an SDMA FENCE of a
 * value of its own, then a TRAP raising its event) is executed by the model GPU; a buffer, event
 * or queue of one context is unknown to the others; closing one leaves the others working; the
 * classic API and the primary context are the same state; what the kernel refuses a secondary
 * process (SVM, userptr memory, the debugger) is refused; fork rules hold for every context;
 * NULL, made-up and closed handles get a status.
 *
 * With CONTEXTS_OLD_KFD=1 (run with HSAKMT_MODEL_KFD_VERSION=1.18, before CREATE_PROCESS) it only
 * checks that a secondary context is NOT_SUPPORTED there. Exit 0 on success. */
#include "expect.h"
#include <hsakmt/hsakmt.h>
#include <hsakmt/hsakmtctx.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SIZE 4096

/* What one context made: its GPU node, a ring, a destination page, a signal event, an SDMA queue. */
struct work {
	HsaKFDContext *ctx;
	HSAuint32 gpu;
	uint32_t *ring, *dst;
	HsaEvent *ev;
	HsaQueueResource q;
	uint64_t wptr; /* bytes written to the ring so far */
};

static HSAuint32 first_gpu(HsaKFDContext *ctx)
{
	HsaSystemProperties sys;
	HsaNodeProperties props;
	HSAuint32 n;

	if (hsaKmtAcquireSystemPropertiesCtx(ctx, &sys) != HSAKMT_STATUS_SUCCESS)
		return 0;
	for (n = 0; n < sys.NumNodes; n++)
		if (hsaKmtGetNodePropertiesCtx(ctx, n, &props) == HSAKMT_STATUS_SUCCESS && props.KFDGpuID)
			return n;
	return 0;
}

/* GTT host memory mapped to the context's GPU. */
static void *gpu_host_memory(HsaKFDContext *ctx, HSAuint32 node)
{
	HsaMemFlags f;
	void *p = NULL;
	HSAuint64 va = 0;

	memset(&f, 0, sizeof(f));
	f.ui32.HostAccess = 1;
	f.ui32.NonPaged = 1;
	f.ui32.PageSize = HSA_PAGE_SIZE_4KB;
	if (hsaKmtAllocMemoryCtx(ctx, node, SIZE, f, &p) != HSAKMT_STATUS_SUCCESS)
		return NULL;
	if (hsaKmtMapMemoryToGPUNodesCtx(ctx, p, SIZE, &va, (HsaMemFlags){ 0 }, 1, &node) != HSAKMT_STATUS_SUCCESS)
		return NULL;
	memset(p, 0, SIZE);
	return p;
}

static int setup(struct work *w, HsaKFDContext *ctx)
{
	HsaEventDescriptor d;

	memset(w, 0, sizeof(*w));
	w->ctx = ctx;
	w->gpu = first_gpu(ctx);
	EXPECT(w->gpu != 0);
	w->ring = gpu_host_memory(ctx, w->gpu);
	w->dst = gpu_host_memory(ctx, w->gpu);
	EXPECT(w->ring && w->dst);
	memset(&d, 0, sizeof(d));
	d.EventType = HSA_EVENTTYPE_SIGNAL;
	d.NodeId = w->gpu;
	EXPECT(hsaKmtCreateEventCtx(ctx, &d, false, false, &w->ev) == HSAKMT_STATUS_SUCCESS);
	EXPECT(w->ev && w->ev->EventData.HWData2 != 0);
	EXPECT(hsaKmtCreateQueueCtx(ctx, w->gpu, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_NORMAL, w->ring, SIZE, NULL, &w->q) ==
	       HSAKMT_STATUS_SUCCESS);
	return w->ring && w->dst && w->ev && w->q.QueueId;
}

/* The GPU writes `value` to dst[slot], then the event id into the event's slot and raises the
 * event (SDMA FENCE = 5: address lo/hi, data; TRAP = 6: interrupt context); the context's wait
 * returns when it did. */
static void fence(struct work *w, int slot, uint32_t value)
{
	uint64_t a = (uintptr_t)&w->dst[slot], mb = w->ev->EventData.HWData2;
	uint32_t id = w->ev->EventId;
	uint32_t pk[] = { 5, (uint32_t)a, (uint32_t)(a >> 32), value, 5, (uint32_t)mb, (uint32_t)(mb >> 32), id, 6, id };

	memcpy((char *)w->ring + w->wptr, pk, sizeof(pk));
	w->wptr += sizeof(pk);
	__atomic_store_n(w->q.Queue_write_ptr_aql, (HSAuint64)w->wptr, __ATOMIC_RELEASE);
	__atomic_store_n(w->q.Queue_DoorBell_aql, (HSAuint64)w->wptr, __ATOMIC_RELEASE);
	EXPECT(hsaKmtWaitOnEventCtx(w->ctx, w->ev, 10000) == HSAKMT_STATUS_SUCCESS);
	EXPECT(__atomic_load_n(&w->dst[slot], __ATOMIC_ACQUIRE) == value);
}

static HSAKMT_STATUS pointer_type(HsaKFDContext *ctx, void *p, HSA_POINTER_TYPE *type)
{
	HsaPointerInfo info;
	HSAKMT_STATUS st;

	memset(&info, 0, sizeof(info));
	st = hsaKmtQueryPointerInfoCtx(ctx, p, &info);
	*type = info.Type;
	return st;
}

static int old_kfd(void)
{
	HsaKFDContext *p = NULL, *s = NULL;

	EXPECT(hsaKmtOpenKFDCtx(&p) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtOpenSecondaryKFDCtx(&s) == HSAKMT_STATUS_NOT_SUPPORTED);
	EXPECT(s == NULL);
	EXPECT(hsaKmtCloseKFDCtx() == HSAKMT_STATUS_SUCCESS);
	if (!failures)
		printf("contexts (KFD without CREATE_PROCESS): OK\n");
	return failures ? 1 : 0;
}

int main(void)
{
	HsaKFDContext *p = NULL, *p2 = NULL, *a = NULL, *b = NULL, *c = NULL;
	HsaKFDContext *made_up = (HsaKFDContext *)(uintptr_t)0x1230;
	HsaNodeProperties np, npc;
	HsaSystemProperties sys;
	HSA_POINTER_TYPE type;
	struct work wp, wa, wb;

	if (getenv("CONTEXTS_OLD_KFD"))
		return old_kfd();

	/* Before any open: no secondary context, no NULL out-pointer. */
	EXPECT(hsaKmtOpenSecondaryKFDCtx(&a) == HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED);
	EXPECT(hsaKmtOpenKFDCtx(NULL) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtCloseKFDCtx() == HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED);

	/* The primary context: the same handle for every open, counted like OpenKFD. */
	EXPECT(hsaKmtOpenKFDCtx(&p) == HSAKMT_STATUS_SUCCESS && p != NULL);
	EXPECT(hsaKmtOpenKFDCtx(&p2) == HSAKMT_STATUS_KERNEL_ALREADY_OPENED && p2 == p);
	EXPECT(hsaKmtOpenKFD() == HSAKMT_STATUS_KERNEL_ALREADY_OPENED);
	EXPECT(hsaKmtCloseKFDCtx() == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtOpenSecondaryKFDCtx(NULL) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtOpenSecondaryKFDCtx(&a) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtOpenSecondaryKFDCtx(&b) == HSAKMT_STATUS_SUCCESS);
	EXPECT(a && b && a != b && a != p && b != p);

	/* Bad handles: a status, never a crash. */
	EXPECT(hsaKmtGetNodePropertiesCtx(NULL, 0, &np) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtGetNodePropertiesCtx(made_up, 0, &np) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtAcquireSystemPropertiesCtx(made_up, &sys) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtSetEventCtx(made_up, NULL) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtWaitOnEventCtx(NULL, (HsaEvent *)&np, 0) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtCloseSecondaryKFDCtx(NULL) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtCloseSecondaryKFDCtx(p) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtCloseSecondaryKFDCtx(made_up) == HSAKMT_STATUS_INVALID_PARAMETER);
	/* A secondary context takes its own snapshot: nothing before it. */
	EXPECT(hsaKmtGetNodePropertiesCtx(a, 0, &np) == HSAKMT_STATUS_INVALID_NODE_UNIT);

	/* Three contexts, each with its memory, event and SDMA queue, each queue's work done by the
	 * GPU and seen by its own context's wait. */
	EXPECT(hsaKmtAcquireSystemProperties(&sys) == HSAKMT_STATUS_SUCCESS);
	if (!setup(&wp, p) || !setup(&wa, a) || !setup(&wb, b)) {
		printf("setup failed\n");
		return 1;
	}
	fence(&wa, 0, 0xA0A0);
	fence(&wb, 0, 0xB0B0);
	fence(&wp, 0, 0xC0C0);
	EXPECT(wa.dst[0] == 0xA0A0 && wb.dst[0] == 0xB0B0 && wp.dst[0] == 0xC0C0);
	EXPECT(wp.q.QueueId != wa.q.QueueId && wa.q.QueueId != wb.q.QueueId);

	/* The classic API is the primary context: the same nodes, buffers, events and queues. */
	EXPECT(hsaKmtGetNodeProperties(wp.gpu, &np) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtGetNodePropertiesCtx(p, wp.gpu, &npc) == HSAKMT_STATUS_SUCCESS);
	EXPECT(memcmp(&np, &npc, sizeof(np)) == 0);
	EXPECT(pointer_type(NULL, wp.ring, &type) == HSAKMT_STATUS_INVALID_PARAMETER);
	HsaPointerInfo info;
	EXPECT(hsaKmtQueryPointerInfo(wp.ring, &info) == HSAKMT_STATUS_SUCCESS && info.Type == HSA_POINTER_ALLOCATED);
	EXPECT(hsaKmtSetEvent(wp.ev) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtWaitOnEvent(wp.ev, 0) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtQueryEventStateCtx(p, wp.ev) == HSAKMT_STATUS_SUCCESS);
	HSAuint32 kid;
	EXPECT(hsaKmtGetKernelQueueId(wp.q.QueueId, &kid) == HSAKMT_STATUS_SUCCESS);
	void *classic = NULL;
	HsaMemFlags f;
	memset(&f, 0, sizeof(f));
	f.ui32.HostAccess = 1;
	f.ui32.NonPaged = 1;
	f.ui32.PageSize = HSA_PAGE_SIZE_4KB;
	EXPECT(hsaKmtAllocMemory(0, SIZE, f, &classic) == HSAKMT_STATUS_SUCCESS);
	EXPECT(pointer_type(p, classic, &type) == HSAKMT_STATUS_SUCCESS && type == HSA_POINTER_ALLOCATED);
	EXPECT(hsaKmtFreeMemoryCtx(p, classic, SIZE) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtQueryPointerInfo(classic, &info) == HSAKMT_STATUS_ERROR);

	/* What one context made is unknown to the others. */
	EXPECT(pointer_type(a, wa.ring, &type) == HSAKMT_STATUS_SUCCESS && type == HSA_POINTER_ALLOCATED);
	EXPECT(pointer_type(b, wa.ring, &type) == HSAKMT_STATUS_ERROR && type == HSA_POINTER_UNKNOWN);
	EXPECT(pointer_type(p, wa.ring, &type) == HSAKMT_STATUS_ERROR && type == HSA_POINTER_UNKNOWN);
	EXPECT(hsaKmtQueryPointerInfo(wb.dst, &info) == HSAKMT_STATUS_ERROR);
	EXPECT(pointer_type(a, wp.ring, &type) == HSAKMT_STATUS_ERROR && type == HSA_POINTER_UNKNOWN);
	EXPECT(hsaKmtSetEventCtx(a, wb.ev) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtSetEventCtx(a, wp.ev) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtQueryEventStateCtx(b, wa.ev) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtSetEvent(wa.ev) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtSetEventCtx(p, wa.ev) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtWaitOnEventCtx(b, wa.ev, 0) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtWaitOnEvent(wb.ev, 0) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtDestroyEventCtx(b, wa.ev) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtGetKernelQueueId(wa.q.QueueId, &kid) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtDestroyQueueCtx(b, wa.q.QueueId) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtDestroyQueueCtx(p, wb.q.QueueId) == HSAKMT_STATUS_INVALID_PARAMETER);
	/* With the SVM API (the primary on this GPU) freeing an address the context does not know is
	 * upstream's no-op: the other context's buffer stays. */
	EXPECT(hsaKmtFreeMemoryCtx(p, wa.dst, SIZE) == HSAKMT_STATUS_SUCCESS);
	fence(&wa, 1, 0xA1A1);
	/* An event of a secondary context is set and reset in it. */
	EXPECT(hsaKmtSetEventCtx(a, wa.ev) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtResetEventCtx(a, wa.ev) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtWaitOnEventCtx(a, wa.ev, 0) == HSAKMT_STATUS_WAIT_TIMEOUT);
	EXPECT(hsaKmtSetEventCtx(a, wa.ev) == HSAKMT_STATUS_SUCCESS);
	HsaEvent *both[] = { wa.ev };
	EXPECT(hsaKmtWaitOnMultipleEventsCtx(a, both, 1, true, 0) == HSAKMT_STATUS_SUCCESS);

	/* What the kernel keeps for the primary process: the SVM API (off in a secondary context's
	 * topology, and its ioctl refused), userptr memory (paged host memory), the debugger. */
	EXPECT(hsaKmtGetNodePropertiesCtx(a, wa.gpu, &npc) == HSAKMT_STATUS_SUCCESS);
	EXPECT(np.Capability.ui32.SVMAPISupported == 1 && npc.Capability.ui32.SVMAPISupported == 0);
	void *svm = aligned_alloc(4096, SIZE);
	HSA_SVM_ATTRIBUTE attr = { HSA_SVM_ATTR_ACCESS, wp.gpu };
	EXPECT(hsaKmtSVMSetAttrCtx(p, svm, SIZE, 1, &attr) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtSVMSetAttrCtx(a, svm, SIZE, 1, &attr) == HSAKMT_STATUS_ERROR);
	free(svm);
	void *paged = NULL;
	HsaMemFlags pf;
	memset(&pf, 0, sizeof(pf));
	pf.ui32.HostAccess = 1;
	pf.ui32.PageSize = HSA_PAGE_SIZE_4KB;
	EXPECT(hsaKmtAllocMemoryCtx(a, 0, SIZE, pf, &paged) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtAllocMemoryCtx(p, 0, SIZE, pf, &paged) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtFreeMemoryCtx(p, paged, SIZE) == HSAKMT_STATUS_SUCCESS);
	void *rt = NULL;
	HSAuint32 rt_size = 0;
	EXPECT(hsaKmtDbgEnableCtx(a, &rt, &rt_size) == HSAKMT_STATUS_ERROR);

	/* Fork: the child can use no context it inherited, may drop its copies, and opens afresh. */
	pid_t child = fork();
	if (child == 0) {
		HsaKFDContext *cs = NULL;
		int bad = 0;
		bad += hsaKmtGetNodePropertiesCtx(a, wa.gpu, &npc) != HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED;
		bad += hsaKmtGetNodePropertiesCtx(p, wp.gpu, &npc) != HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED;
		bad += hsaKmtSetEventCtx(b, wb.ev) != HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED;
		bad += hsaKmtWaitOnEventCtx(b, wb.ev, 0) != HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED;
		bad += hsaKmtOpenSecondaryKFDCtx(&cs) != HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED;
		bad += hsaKmtCloseSecondaryKFDCtx(a) != HSAKMT_STATUS_SUCCESS; /* its copy only */
		bad += hsaKmtOpenKFDCtx(&cs) != HSAKMT_STATUS_SUCCESS || cs != p;
		bad += hsaKmtGetNodePropertiesCtx(b, wb.gpu, &npc) != HSAKMT_STATUS_INVALID_PARAMETER;
		bad += hsaKmtOpenSecondaryKFDCtx(&cs) != HSAKMT_STATUS_SUCCESS;
		struct work wc;
		bad += !setup(&wc, cs);
		if (!bad) {
			fence(&wc, 0, 0xF0F0);
			bad += failures;
		}
		bad += hsaKmtCloseSecondaryKFDCtx(cs) != HSAKMT_STATUS_SUCCESS;
		_exit(bad ? 1 : 0);
	}
	int status = -1;
	EXPECT(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* The parent's contexts are untouched by the child. */
	fence(&wa, 2, 0xA2A2);
	fence(&wb, 1, 0xB1B1);
	fence(&wp, 1, 0xC1C1);

	/* Closing a leaves b and the primary working; a's handle is dead from now on. */
	EXPECT(hsaKmtCloseSecondaryKFDCtx(a) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtCloseSecondaryKFDCtx(a) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtGetNodePropertiesCtx(a, wa.gpu, &npc) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtSetEventCtx(a, wa.ev) == HSAKMT_STATUS_INVALID_PARAMETER);
	fence(&wb, 2, 0xB2B2);
	fence(&wp, 2, 0xC2C2);
	EXPECT(hsaKmtOpenSecondaryKFDCtx(&c) == HSAKMT_STATUS_SUCCESS && c != a && c != b);
	EXPECT(first_gpu(c) == wb.gpu);

	/* After the last CloseKFD every context answers KERNEL_IO_CHANNEL_NOT_OPENED; a secondary
	 * one survives it (upstream) and works again once the primary is reopened. */
	EXPECT(hsaKmtCloseKFDCtx() == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtGetNodePropertiesCtx(b, wb.gpu, &npc) == HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED);
	EXPECT(hsaKmtSetEventCtx(b, wb.ev) == HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED);
	EXPECT(hsaKmtOpenKFDCtx(&p2) == HSAKMT_STATUS_SUCCESS && p2 == p);
	fence(&wb, 3, 0xB3B3);
	EXPECT(hsaKmtDestroyQueueCtx(b, wb.q.QueueId) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtDestroyEventCtx(b, wb.ev) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtUnmapMemoryToGPUCtx(b, wb.ring) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtFreeMemoryCtx(b, wb.ring, SIZE) == HSAKMT_STATUS_SUCCESS);
	EXPECT(pointer_type(b, wb.ring, &type) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtReleaseSystemPropertiesCtx(b) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtCloseSecondaryKFDCtx(b) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtCloseSecondaryKFDCtx(c) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtCloseKFDCtx() == HSAKMT_STATUS_SUCCESS);

	if (!failures)
		printf("contexts: OK\n");
	return failures ? 1 : 0;
}
