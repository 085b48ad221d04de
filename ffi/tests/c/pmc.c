/* Performance counters through the public API on the model (mi300x / mi210: gfx9, upstream's
 * vega table): counter properties checked against facts of upstream's pmc_table.c and of
 * rocprofiler-sdk's gfx90a/gfx940 counter ids (SPI_CSN_NUM_THREADGROUPS 49, TCC_EA_WRREQ 26,
 * TCC_EA_RDREQ 38, SQ_WAVES 4, SQ_ITEMS 14) written here by hand; a trace of model-counted
 * counters around an SDMA copy of N bytes written by hand (COPY_LINEAR, then FENCE + TRAP), whose
 * TCC request deltas must be N / 64 each and the dispatch counters 0, then around an AQL dispatch
 * of the model's NOP kernel over 1000 work-items in workgroups of 64 (16 workgroups, 16 waves,
 * 1000 items, no data requests); every bad input with its
 * status; a forked process finding the access held (UNAVAILABLE); release and unregister leave
 * nothing held (the child can then acquire). Exit 0 on success. */
#include <hsakmt/hsakmt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "expect.h"
#include "gpu_memory.h"

#define N_BYTES 8192u

static HsaCounter counter(HSAuint32 block, HSAuint64 id, HSA_PROFILE_TYPE type)
{
	HsaCounter c;
	memset(&c, 0, sizeof(c));
	c.Type = type;
	c.BlockIndex = block;
	c.CounterId = id;
	c.CounterSizeInBits = 64;
	c.CounterMask = ~0ull;
	return c;
}

enum { B_CPC = 1, B_GRBM = 6, B_MC = 9, B_SPI = 12, B_SRBM = 13, B_SQ = 14, B_TCC = 18, B_TCS = 20 };
#define PRIV HSA_PROFILE_TYPE_PRIVILEGED_IMMEDIATE

/* The child: its own KFD; the parent holds the GPU's profiling lock. */
static int child(HSAuint32 gpu, int expect_busy)
{
	HsaSystemProperties sys;
	HsaPmcTraceRoot root;
	HsaCounter c = counter(B_SQ, 4, PRIV);
	if (hsaKmtOpenKFD() != HSAKMT_STATUS_SUCCESS || hsaKmtAcquireSystemProperties(&sys) != HSAKMT_STATUS_SUCCESS)
		return 2;
	if (hsaKmtPmcRegisterTrace(gpu, 1, &c, &root) != HSAKMT_STATUS_SUCCESS)
		return 3;
	HSAKMT_STATUS st = hsaKmtPmcAcquireTraceAccess(gpu, root.TraceId);
	if (st != (expect_busy ? HSAKMT_STATUS_UNAVAILABLE : HSAKMT_STATUS_SUCCESS))
		return 4;
	if (hsaKmtPmcUnregisterTrace(gpu, root.TraceId) != HSAKMT_STATUS_SUCCESS)
		return 5;
	hsaKmtCloseKFD();
	return 0;
}

static int run_child(HSAuint32 gpu, int expect_busy)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0)
		_exit(child(gpu, expect_busy));
	int ws = 0;
	if (pid < 0 || waitpid(pid, &ws, 0) != pid || !WIFEXITED(ws))
		return -1;
	return WEXITSTATUS(ws);
}

int main(void)
{
	HsaSystemProperties sys;
	HsaNodeProperties props;
	HSAuint32 gpu = 0, n;

	if (hsaKmtOpenKFD() != HSAKMT_STATUS_SUCCESS || hsaKmtAcquireSystemProperties(&sys) != HSAKMT_STATUS_SUCCESS) {
		printf("cannot open\n");
		return 1;
	}
	for (n = 0; n < sys.NumNodes; n++)
		if (hsaKmtGetNodeProperties(n, &props) == HSAKMT_STATUS_SUCCESS && props.KFDGpuID) {
			gpu = n;
			break;
		}
	EXPECT(gpu != 0);
	EXPECT(props.EngineId.ui32.Major == 9);

	/* ---- Counter properties. */
	HsaCounterProperties *cp = NULL, *cp2 = NULL;
	EXPECT(hsaKmtPmcGetCounterProperties(gpu, NULL) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtPmcGetCounterProperties(999, &cp) == HSAKMT_STATUS_INVALID_NODE_UNIT);
	EXPECT(hsaKmtPmcGetCounterProperties(0, &cp) == HSAKMT_STATUS_INVALID_PARAMETER); /* CPU node: no table */
	EXPECT(hsaKmtPmcGetCounterProperties(gpu, &cp) == HSAKMT_STATUS_SUCCESS && cp);
	EXPECT(hsaKmtPmcGetCounterProperties(gpu, &cp2) == HSAKMT_STATUS_SUCCESS && cp2 == cp);
	/* Upstream's vega table: 20 blocks (no CPC, MC, SRBM, TCS); SQ 16 at once, ids from 1;
	 * GRBM 2; TCC 10; SQ_WAVES counted by the model (privileged), SQ id 1 not. */
	EXPECT(cp->NumBlocks == 20);
	HsaCounterBlockProperties *b = &cp->Blocks[0];
	HSAuint32 total = 0, seen_sq = 0, seen_absent = 0;
	for (HSAuint32 i = 0; i < cp->NumBlocks; i++) {
		HSAuint32 idx = b->Counters[0].BlockIndex;
		total += b->NumConcurrent;
		if (idx == B_CPC || idx == B_MC || idx == B_SRBM || idx == B_TCS)
			seen_absent++;
		if (idx == B_SQ) {
			seen_sq = 1;
			EXPECT(b->NumConcurrent == 16);
			EXPECT(b->Counters[0].CounterId == 1);
			EXPECT(b->Counters[0].Type == HSA_PROFILE_TYPE_NONPRIV_IMMEDIATE);
			EXPECT(b->Counters[3].CounterId == 4 && b->Counters[3].Type == PRIV);
			EXPECT(b->Counters[0].CounterSizeInBits == 64 && b->Counters[0].CounterMask == ~0ull);
			EXPECT(b->Counters[0].Flags.ui32.Global == 1);
			EXPECT(memcmp(&b->BlockId, &HSA_PROFILEBLOCK_AMD_SQ, sizeof(HSA_UUID)) == 0);
		}
		if (idx == B_GRBM)
			EXPECT(b->NumConcurrent == 2);
		if (idx == B_TCC)
			EXPECT(b->NumConcurrent == 10);
		b = (HsaCounterBlockProperties *)&b->Counters[b->NumCounters];
	}
	EXPECT(seen_sq && !seen_absent);
	EXPECT(cp->NumConcurrent == total);

	/* ---- RegisterTrace: bad input. */
	HsaPmcTraceRoot root;
	HsaCounter cs[513];
	for (int i = 0; i < 513; i++)
		cs[i] = counter(B_SQ, 4, PRIV);
	EXPECT(hsaKmtPmcRegisterTrace(gpu, 1, NULL, &root) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtPmcRegisterTrace(gpu, 1, cs, NULL) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtPmcRegisterTrace(gpu, 0, cs, &root) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtPmcRegisterTrace(999, 1, cs, &root) == HSAKMT_STATUS_INVALID_NODE_UNIT);
	EXPECT(hsaKmtPmcRegisterTrace(gpu, 513, cs, &root) == HSAKMT_STATUS_NO_MEMORY);
	EXPECT(hsaKmtPmcRegisterTrace(gpu, 17, cs, &root) == HSAKMT_STATUS_INVALID_PARAMETER); /* SQ counts 16 */
	HsaCounter bad = counter(24, 0, PRIV);
	EXPECT(hsaKmtPmcRegisterTrace(gpu, 1, &bad, &root) == HSAKMT_STATUS_INVALID_PARAMETER); /* no block 24 */
	bad = counter(B_CPC, 0, PRIV);
	EXPECT(hsaKmtPmcRegisterTrace(gpu, 1, &bad, &root) == HSAKMT_STATUS_INVALID_PARAMETER); /* not on vega */
	bad = counter(B_SQ, 4, HSA_PROFILE_TYPE_NONPRIV_IMMEDIATE);
	EXPECT(hsaKmtPmcRegisterTrace(gpu, 1, &bad, &root) == HSAKMT_STATUS_INVALID_PARAMETER); /* nothing to trace */

	/* ---- A trace: TCC requests (stand-ins, model/COUNTERS.md), dispatch counters; a
	 * non-privileged counter is skipped. Query order: by block, then as given. */
	HsaCounter tc[] = { counter(B_TCC, 38, PRIV), counter(B_SQ, 4, PRIV), counter(B_SQ, 1, HSA_PROFILE_TYPE_NONPRIV_IMMEDIATE),
			    counter(B_TCC, 26, PRIV), counter(B_SPI, 49, PRIV), counter(B_SQ, 14, PRIV) };
	memset(&root, 0, sizeof(root));
	EXPECT(hsaKmtPmcRegisterTrace(gpu, 6, tc, &root) == HSAKMT_STATUS_SUCCESS);
	EXPECT(root.TraceId != 0 && root.NumberOfPasses == 1 && root.TraceBufferMinSizeBytes == 4096);
	HSATraceId t = root.TraceId;
	/* An unknown counter id of a real block registers (upstream) but cannot be acquired. */
	HsaPmcTraceRoot root2;
	bad = counter(B_SQ, 2, PRIV);
	EXPECT(hsaKmtPmcRegisterTrace(gpu, 1, &bad, &root2) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtPmcAcquireTraceAccess(gpu, root2.TraceId) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtPmcUnregisterTrace(gpu, root2.TraceId) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtPmcUnregisterTrace(gpu, root2.TraceId) == HSAKMT_STATUS_INVALID_HANDLE);

	uint64_t *buf = calloc(4096, 1);
	EXPECT(hsaKmtPmcStartTrace(t, buf, 4096) == HSAKMT_STATUS_UNAVAILABLE); /* not acquired */
	EXPECT(hsaKmtPmcStopTrace(t) == HSAKMT_STATUS_UNAVAILABLE);
	EXPECT(hsaKmtPmcQueryTrace(t) == HSAKMT_STATUS_NO_MEMORY); /* never started: no buffer */
	EXPECT(hsaKmtPmcAcquireTraceAccess(gpu, 0) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtPmcAcquireTraceAccess(gpu, 0x1234) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtPmcAcquireTraceAccess(999, t) == HSAKMT_STATUS_INVALID_NODE_UNIT);
	EXPECT(run_child(gpu, 0) == 0); /* nobody holds it yet */
	EXPECT(hsaKmtPmcAcquireTraceAccess(gpu, t) == HSAKMT_STATUS_SUCCESS);
	EXPECT(run_child(gpu, 1) == 0); /* another process: UNAVAILABLE */
	EXPECT(hsaKmtPmcStartTrace(0, buf, 4096) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtPmcStartTrace(t, NULL, 4096) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtPmcStartTrace(t, buf, 0) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtPmcStartTrace(0x1234, buf, 4096) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtPmcQueryTrace(0) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtPmcQueryTrace(0x1234) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtPmcStopTrace(0) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtPmcStopTrace(0x1234) == HSAKMT_STATUS_INVALID_HANDLE);

	/* Start; a second start is upstream's SUCCESS (counting goes on, the buffer is replaced):
	 * 16 bytes cannot hold 5 counters. */
	EXPECT(hsaKmtPmcStartTrace(t, buf, 4096) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtPmcStartTrace(t, buf, 16) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtPmcQueryTrace(t) == HSAKMT_STATUS_NO_MEMORY);
	EXPECT(hsaKmtPmcStartTrace(t, buf, 4096) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtPmcQueryTrace(t) == HSAKMT_STATUS_SUCCESS);
	for (int i = 0; i < 5; i++)
		EXPECT(buf[i] == 0); /* nothing ran yet */

	/* ---- Work: an SDMA COPY_LINEAR of N_BYTES (op 1, sub-op 0; count - 1; parameters; src;
	 * dst), FENCE 1 to a flag, FENCE the event id into its slot, TRAP. */
	uint32_t *ring = gpu_host_memory(gpu, 4096);
	uint8_t *src = gpu_host_memory(gpu, N_BYTES), *dst = gpu_host_memory(gpu, N_BYTES);
	uint32_t *flag = gpu_host_memory(gpu, 4096);
	EXPECT(ring && src && dst && flag);
	for (unsigned i = 0; i < N_BYTES; i++)
		src[i] = (uint8_t)(i * 7 + 1);
	HsaQueueResource q;
	memset(&q, 0, sizeof(q));
	EXPECT(hsaKmtCreateQueue(gpu, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_NORMAL, ring, 4096, NULL, &q) == HSAKMT_STATUS_SUCCESS);
	HsaEvent *ev = new_event(HSA_EVENTTYPE_SIGNAL, gpu, false);
	EXPECT(ev != NULL);
	uint64_t s = (uintptr_t)src, t_ = (uintptr_t)dst, f = (uintptr_t)flag, mb = ev->EventData.HWData2;
	uint32_t id = ev->EventId;
	uint32_t pk[] = { 1, N_BYTES - 1, 0, (uint32_t)s, (uint32_t)(s >> 32), (uint32_t)t_, (uint32_t)(t_ >> 32),
			  5, (uint32_t)f, (uint32_t)(f >> 32), 1, 5, (uint32_t)mb, (uint32_t)(mb >> 32), id, 6, id };
	memcpy(ring, pk, sizeof(pk));
	__atomic_store_n(q.Queue_write_ptr_aql, (HSAuint64)sizeof(pk), __ATOMIC_RELEASE);
	EXPECT(hsaKmtQueueRingDoorbell(q.QueueId, sizeof(pk)) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtWaitOnEvent(ev, 10000) == HSAKMT_STATUS_SUCCESS);
	EXPECT(__atomic_load_n(flag, __ATOMIC_ACQUIRE) == 1);
	EXPECT(memcmp(src, dst, N_BYTES) == 0);

	EXPECT(hsaKmtPmcQueryTrace(t) == HSAKMT_STATUS_SUCCESS);
	/* SPI 49, SQ 4, SQ 14, TCC 38 (reads), TCC 26 (writes). */
	EXPECT(buf[0] == 0 && buf[1] == 0 && buf[2] == 0);
	EXPECT(buf[3] == N_BYTES / 64);
	EXPECT(buf[4] == N_BYTES / 64);
	printf("deltas: spi %llu waves %llu items %llu rdreq %llu wrreq %llu\n", (unsigned long long)buf[0],
	       (unsigned long long)buf[1], (unsigned long long)buf[2], (unsigned long long)buf[3], (unsigned long long)buf[4]);

	/* ---- A profiled dispatch: the model's NOP kernel (a 256-byte aligned "HKMK" descriptor,
	 * kernel id 0) over 1000 work-items in workgroups of 64 on an AQL queue: 16 workgroups
	 * (15 full, one of 40), one wave of 64 lanes each on gfx9, 1000 items, no data moved. */
	uint8_t *aring = gpu_host_memory(gpu, 4096);
	uint64_t *aptr = gpu_host_memory(gpu, 4096);
	uint32_t *kobj = gpu_host_memory(gpu, 4096);
	EXPECT(aring && aptr && kobj);
	kobj[0] = 0x4b4d4b48;
	HsaQueueResource aq;
	memset(&aq, 0, sizeof(aq));
	aq.Queue_read_ptr_aql = &aptr[0];
	aq.Queue_write_ptr_aql = &aptr[1];
	EXPECT(hsaKmtCreateQueue(gpu, HSA_QUEUE_COMPUTE_AQL, 100, HSA_QUEUE_PRIORITY_NORMAL, aring, 4096, NULL, &aq) ==
	       HSAKMT_STATUS_SUCCESS);
	uint32_t *pkt = (uint32_t *)aring;
	pkt[1] = 64 | (1u << 16);      /* workgroup_size_x 64, _y 1 */
	pkt[2] = 1;                    /* workgroup_size_z 1 */
	pkt[3] = 1000;                 /* grid_size_x */
	pkt[4] = 1;                    /* grid_size_y */
	pkt[5] = 1;                    /* grid_size_z */
	*(uint64_t *)&pkt[8] = (uintptr_t)kobj; /* kernel_object */
	/* header: KERNEL_DISPATCH (2), barrier, system acquire/release scopes; setup: 1 dimension */
	__atomic_store_n(&pkt[0], (2u | (1u << 8) | (2u << 9) | (2u << 11)) | (1u << 16), __ATOMIC_RELEASE);
	__atomic_store_n(&aptr[1], (HSAuint64)1, __ATOMIC_RELEASE);
	EXPECT(hsaKmtQueueRingDoorbell(aq.QueueId, 0) == HSAKMT_STATUS_SUCCESS);
	for (int k = 0; k < 10000 && __atomic_load_n(&aptr[0], __ATOMIC_ACQUIRE) != 1; k++)
		usleep(1000);
	EXPECT(__atomic_load_n(&aptr[0], __ATOMIC_ACQUIRE) == 1);
	EXPECT(hsaKmtPmcQueryTrace(t) == HSAKMT_STATUS_SUCCESS);
	printf("dispatch deltas: spi %llu waves %llu items %llu\n", (unsigned long long)buf[0], (unsigned long long)buf[1],
	       (unsigned long long)buf[2]);
	EXPECT(buf[0] == 16 && buf[1] == 16 && buf[2] == 1000);
	EXPECT(buf[3] == N_BYTES / 64 && buf[4] == N_BYTES / 64);
	EXPECT(hsaKmtDestroyQueue(aq.QueueId) == HSAKMT_STATUS_SUCCESS);

	/* Stopped, the counts freeze: a second copy is not counted; stop twice is SUCCESS. */
	EXPECT(hsaKmtPmcStopTrace(t) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtPmcStopTrace(t) == HSAKMT_STATUS_SUCCESS);
	memcpy((char *)ring + sizeof(pk), pk, sizeof(pk));
	__atomic_store_n(flag, 0, __ATOMIC_RELEASE);
	__atomic_store_n(q.Queue_write_ptr_aql, (HSAuint64)(2 * sizeof(pk)), __ATOMIC_RELEASE);
	EXPECT(hsaKmtQueueRingDoorbell(q.QueueId, 2 * sizeof(pk)) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtWaitOnEvent(ev, 10000) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtPmcQueryTrace(t) == HSAKMT_STATUS_SUCCESS);
	EXPECT(buf[3] == N_BYTES / 64 && buf[4] == N_BYTES / 64);

	/* Release: the other process may acquire; unregister checks the node. */
	EXPECT(hsaKmtPmcReleaseTraceAccess(gpu, 0) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtPmcReleaseTraceAccess(gpu, 0x1234) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtPmcReleaseTraceAccess(gpu, t) == HSAKMT_STATUS_SUCCESS);
	EXPECT(run_child(gpu, 0) == 0);
	EXPECT(hsaKmtPmcUnregisterTrace(gpu, 0) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtPmcUnregisterTrace(999, t) == HSAKMT_STATUS_INVALID_NODE_UNIT);
	EXPECT(hsaKmtPmcUnregisterTrace(0, t) == HSAKMT_STATUS_INVALID_NODE_UNIT); /* another node's trace */
	/* Unregistering an acquired, started trace stops and releases it. */
	EXPECT(hsaKmtPmcAcquireTraceAccess(gpu, t) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtPmcStartTrace(t, buf, 4096) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtPmcUnregisterTrace(gpu, t) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtPmcQueryTrace(t) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(run_child(gpu, 0) == 0); /* nothing left held */

	EXPECT(hsaKmtDestroyQueue(q.QueueId) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtDestroyEvent(ev) == HSAKMT_STATUS_SUCCESS);
	free(buf);
	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	if (!failures)
		printf("pmc: OK\n");
	return failures ? 1 : 0;
}
