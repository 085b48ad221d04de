/* Counts the kernel bounds are bounded by the thunk before it allocates or reads anything, and
 * arrays are written only as far as the data goes:
 *
 * - WaitOnMultipleEvents(_Ext): amdkfd allocates one 56-byte kfd_event_waiter per event with
 *   kcalloc, which fails past KMALLOC_MAX_SIZE (4 MiB): 74898 events is the most one wait can
 *   take. More (0xFFFFFFFF: upstream's calloc of the event data fails) is NO_MEMORY at once,
 *   with a one-element array (the process must not abort trying to allocate).
 * - SVMSetAttr / SVMGetAttr: header (24 bytes) and attributes (8 each) must fit the ioctl's
 *   14-bit size field (16383 bytes): 2044 attributes at most; more is INVALID_PARAMETER, with
 *   a one-element array.
 * - GetNodeMemoryProperties with a count larger than the node's banks writes only the banks
 *   that exist. */
#include "expect.h"
#include <hsakmt/hsakmt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define KFD_WAIT_MAX ((4u << 20) / 56) /* 74898 */
#define SVM_ATTR_MAX ((16383u - 24) / 8) /* 2044 */

int main(void)
{
	HsaSystemProperties sys;
	HsaNodeProperties p;
	HSAuint32 gpu = 0;

	EXPECT(KFD_WAIT_MAX == 74898 && SVM_ATTR_MAX == 2044);
	EXPECT(hsaKmtOpenKFD() == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtAcquireSystemProperties(&sys) == HSAKMT_STATUS_SUCCESS);
	for (HSAuint32 n = 0; n < sys.NumNodes && !gpu; n++)
		if (hsaKmtGetNodeProperties(n, &p) == HSAKMT_STATUS_SUCCESS && p.KFDGpuID)
			gpu = n;
	EXPECT(gpu != 0);

	/* Event waits. */
	HsaEventDescriptor d;
	HsaEvent *ev = NULL;
	memset(&d, 0, sizeof(d));
	d.EventType = HSA_EVENTTYPE_SIGNAL;
	EXPECT(hsaKmtCreateEvent(&d, true, false, &ev) == HSAKMT_STATUS_SUCCESS);
	HsaEvent *one[1] = { ev };
	uint64_t age[1] = { 0 };
	EXPECT(hsaKmtWaitOnMultipleEvents(one, 0xFFFFFFFFu, true, 0) == HSAKMT_STATUS_NO_MEMORY);
	EXPECT(hsaKmtWaitOnMultipleEvents(one, 0xFFFFFFFFu, false, 0xFFFFFFFFu) == HSAKMT_STATUS_NO_MEMORY);
	EXPECT(hsaKmtWaitOnMultipleEvents_Ext(one, 0xFFFFFFFFu, true, 0, age) == HSAKMT_STATUS_NO_MEMORY);
	EXPECT(hsaKmtWaitOnMultipleEvents(one, KFD_WAIT_MAX + 1, true, 0) == HSAKMT_STATUS_NO_MEMORY);
	/* The largest wait the KFD takes is served: the same event KFD_WAIT_MAX times. */
	HsaEvent **many = (HsaEvent **)malloc(KFD_WAIT_MAX * sizeof(*many));
	uint64_t *ages = (uint64_t *)calloc(KFD_WAIT_MAX, sizeof(*ages));
	for (unsigned i = 0; i < KFD_WAIT_MAX; i++) {
		many[i] = ev;
		ages[i] = 1; /* the age a new event has */
	}
	EXPECT(hsaKmtWaitOnMultipleEvents(many, KFD_WAIT_MAX, true, 0) == HSAKMT_STATUS_WAIT_TIMEOUT);
	EXPECT(hsaKmtSetEvent(ev) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtWaitOnMultipleEvents_Ext(many, KFD_WAIT_MAX, false, 0, ages) == HSAKMT_STATUS_SUCCESS);
	EXPECT(ages[0] == 2 && ages[KFD_WAIT_MAX - 1] == 2); /* one set since */
	free(many);
	free(ages);
	EXPECT(hsaKmtDestroyEvent(ev) == HSAKMT_STATUS_SUCCESS);

	/* SVM attribute counts, over process memory. */
	size_t len = 16 << 12;
	void *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	EXPECT(mem != MAP_FAILED);
	HSA_SVM_ATTRIBUTE a1[1] = { { HSA_SVM_ATTR_GRANULARITY, 5 } };
	EXPECT(hsaKmtSVMSetAttr(mem, len, 0xFFFFFFFFu, a1) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtSVMGetAttr(mem, len, 0xFFFFFFFFu, a1) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtSVMSetAttr(mem, len, SVM_ATTR_MAX + 1, a1) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(a1[0].type == HSA_SVM_ATTR_GRANULARITY && a1[0].value == 5);
	/* The range checks still come first (upstream's order). */
	EXPECT(hsaKmtSVMSetAttr(NULL, len, 0xFFFFFFFFu, a1) == HSAKMT_STATUS_INVALID_PARAMETER);
	HSA_SVM_ATTRIBUTE *most = (HSA_SVM_ATTRIBUTE *)calloc(SVM_ATTR_MAX, sizeof(*most));
	for (unsigned i = 0; i < SVM_ATTR_MAX; i++) {
		most[i].type = HSA_SVM_ATTR_GRANULARITY;
		most[i].value = i % 64;
	}
	/* The largest list the ioctl carries is applied in order: the last granularity wins. */
	EXPECT(hsaKmtSVMSetAttr(mem, len, SVM_ATTR_MAX, most) == HSAKMT_STATUS_SUCCESS);
	HSA_SVM_ATTRIBUTE q[1] = { { HSA_SVM_ATTR_GRANULARITY, 0 } };
	EXPECT(hsaKmtSVMGetAttr(mem, len, 1, q) == HSAKMT_STATUS_SUCCESS);
	EXPECT(q[0].value == (SVM_ATTR_MAX - 1) % 64);
	EXPECT(hsaKmtSVMGetAttr(mem, len, SVM_ATTR_MAX, most) == HSAKMT_STATUS_SUCCESS);
	EXPECT(most[SVM_ATTR_MAX - 1].value == (SVM_ATTR_MAX - 1) % 64);
	free(most);

	/* Memory banks: a count larger than the node's writes only the real banks. */
	HSAuint32 banks = p.NumMemoryBanks;
	HsaMemoryProperties *m = (HsaMemoryProperties *)malloc((banks + 8) * sizeof(*m));
	memset(m, 0xa5, (banks + 8) * sizeof(*m));
	EXPECT(hsaKmtGetNodeMemoryProperties(gpu, banks + 8, m) == HSAKMT_STATUS_SUCCESS);
	int written = 0, past = 0;
	for (HSAuint32 i = 0; i < banks + 8; i++) {
		const unsigned char *b = (const unsigned char *)&m[i];
		int same = 1;
		for (size_t k = 0; k < sizeof(*m); k++)
			same &= b[k] == 0xa5;
		if (i < banks)
			written += !same;
		else
			past += !same;
	}
	EXPECT(banks > 0 && written == (int)banks);
	EXPECT(past == 0);
	free(m);

	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	if (failures)
		return 1;
	printf("bounds: OK\n");
	return 0;
}
