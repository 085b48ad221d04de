/* SVM attributes and XNACK as a ROCm runtime uses them: set / get attributes over mmap'd and
 * malloc'd ranges (node ids in, node ids out), a range whose pieces differ, the statuses of bad
 * input (unknown attribute type, CPU or unknown node for access, unaligned or empty ranges,
 * unmapped memory) and the XNACK mode.
 * argv[1]: "1" if this system's GPUs may turn XNACK on, "0" if not, "old" for a KFD older than
 * 1.5 (every call NOT_SUPPORTED). Exit 0 on success. */
#include "expect.h"
#include <hsakmt/hsakmt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define PAGE 4096UL
#define INVALID_NODEID 0xFFFFFFFFu

static HSA_SVM_ATTRIBUTE at(HSAuint32 type, HSAuint32 value)
{
	HSA_SVM_ATTRIBUTE a;
	a.type = type;
	a.value = value;
	return a;
}

/* One GET of one attribute: the answered value (type in *type if not NULL). */
static HSAuint32 get1(void *p, HSAuint64 size, HSAuint32 type, HSAuint32 value, HSAuint32 *out_type)
{
	HSA_SVM_ATTRIBUTE a = at(type, value);
	EXPECT(hsaKmtSVMGetAttr(p, size, 1, &a) == HSAKMT_STATUS_SUCCESS);
	if (out_type)
		*out_type = a.type;
	return a.value;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "0";
	int old = strcmp(mode, "old") == 0, can_xnack = strcmp(mode, "1") == 0;
	HsaSystemProperties sys;
	HsaNodeProperties props;
	HSAuint32 gpu = 0, gpu2 = 0, ty = 0;
	HSAint32 x = -7;
	HSA_SVM_ATTRIBUTE a[6];
	char *mem, *heap = NULL;

	a[0] = at(HSA_SVM_ATTR_GRANULARITY, 1);
	EXPECT(hsaKmtSVMSetAttr((void *)0x100000, PAGE, 1, a) == HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED);
	EXPECT(hsaKmtGetXNACKMode(&x) == HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED);
	EXPECT(hsaKmtOpenKFD() == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtAcquireSystemProperties(&sys) == HSAKMT_STATUS_SUCCESS);
	for (HSAuint32 n = 0; n < sys.NumNodes; n++) {
		EXPECT(hsaKmtGetNodeProperties(n, &props) == HSAKMT_STATUS_SUCCESS);
		if (props.KFDGpuID && !gpu)
			gpu = n;
		else if (props.KFDGpuID && !gpu2)
			gpu2 = n;
	}
	EXPECT(gpu != 0);
	if (!gpu2)
		gpu2 = gpu;
	mem = mmap(NULL, 16 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	EXPECT(mem != MAP_FAILED);

	if (old) {
		EXPECT(hsaKmtSVMSetAttr(mem, PAGE, 1, a) == HSAKMT_STATUS_NOT_SUPPORTED);
		EXPECT(hsaKmtSVMGetAttr(mem, PAGE, 1, a) == HSAKMT_STATUS_NOT_SUPPORTED);
		EXPECT(hsaKmtSetXNACKMode(0) == HSAKMT_STATUS_NOT_SUPPORTED);
		EXPECT(hsaKmtGetXNACKMode(&x) == HSAKMT_STATUS_NOT_SUPPORTED);
		goto out;
	}

	/* Set several attributes over 8 pages, read them back. */
	a[0] = at(HSA_SVM_ATTR_PREFERRED_LOC, gpu);
	a[1] = at(HSA_SVM_ATTR_ACCESS, gpu);
	a[2] = at(HSA_SVM_ATTR_SET_FLAGS, HSA_SVM_FLAG_GPU_EXEC);
	a[3] = at(HSA_SVM_ATTR_GRANULARITY, 4);
	EXPECT(hsaKmtSVMSetAttr(mem, 8 * PAGE, 4, a) == HSAKMT_STATUS_SUCCESS);
	a[0] = at(HSA_SVM_ATTR_PREFERRED_LOC, 0);
	a[1] = at(HSA_SVM_ATTR_PREFETCH_LOC, 0);
	a[2] = at(HSA_SVM_ATTR_ACCESS, gpu);
	a[3] = at(HSA_SVM_ATTR_SET_FLAGS, 0);
	a[4] = at(HSA_SVM_ATTR_CLR_FLAGS, 0);
	a[5] = at(HSA_SVM_ATTR_GRANULARITY, 0);
	EXPECT(hsaKmtSVMGetAttr(mem, 8 * PAGE, 6, a) == HSAKMT_STATUS_SUCCESS);
	EXPECT(a[0].value == gpu);
	EXPECT(a[1].value == INVALID_NODEID); /* never set: undefined */
	EXPECT(a[2].type == HSA_SVM_ATTR_ACCESS && a[2].value == gpu);
	EXPECT(a[3].value == (HSA_SVM_FLAG_HOST_ACCESS | HSA_SVM_FLAG_COHERENT | HSA_SVM_FLAG_GPU_EXEC));
	EXPECT(a[4].value == (HSAuint32)~(HSA_SVM_FLAG_HOST_ACCESS | HSA_SVM_FLAG_COHERENT | HSA_SVM_FLAG_GPU_EXEC));
	EXPECT(a[5].value == 4);

	/* The CPU node as a location is system memory; pieces that differ answer undefined. */
	a[0] = at(HSA_SVM_ATTR_PREFERRED_LOC, 0);
	EXPECT(hsaKmtSVMSetAttr(mem + 4 * PAGE, 4 * PAGE, 1, a) == HSAKMT_STATUS_SUCCESS);
	EXPECT(get1(mem + 4 * PAGE, 4 * PAGE, HSA_SVM_ATTR_PREFERRED_LOC, 0, NULL) == 0);
	EXPECT(get1(mem, 4 * PAGE, HSA_SVM_ATTR_PREFERRED_LOC, 0, NULL) == gpu);
	EXPECT(get1(mem, 8 * PAGE, HSA_SVM_ATTR_PREFERRED_LOC, 0, NULL) == INVALID_NODEID);
	a[0] = at(HSA_SVM_ATTR_PREFERRED_LOC, INVALID_NODEID);
	EXPECT(hsaKmtSVMSetAttr(mem, PAGE, 1, a) == HSAKMT_STATUS_SUCCESS);
	EXPECT(get1(mem, PAGE, HSA_SVM_ATTR_PREFERRED_LOC, 0, NULL) == INVALID_NODEID);
	a[0] = at(HSA_SVM_ATTR_PREFETCH_LOC, 0);
	EXPECT(hsaKmtSVMSetAttr(mem, PAGE, 1, a) == HSAKMT_STATUS_SUCCESS);
	EXPECT(get1(mem, PAGE, HSA_SVM_ATTR_PREFETCH_LOC, 5, NULL) == 0);
	a[0] = at(HSA_SVM_ATTR_PREFETCH_LOC, gpu2);
	EXPECT(hsaKmtSVMSetAttr(mem + PAGE, PAGE, 1, a) == HSAKMT_STATUS_SUCCESS);
	EXPECT(get1(mem + PAGE, PAGE, HSA_SVM_ATTR_PREFETCH_LOC, 5, NULL) == gpu2);
	/* In-place access for the second GPU; no access for it on the other pages. */
	a[0] = at(HSA_SVM_ATTR_ACCESS_IN_PLACE, gpu2);
	EXPECT(hsaKmtSVMSetAttr(mem + 2 * PAGE, PAGE, 1, a) == HSAKMT_STATUS_SUCCESS);
	if (gpu2 != gpu) {
		EXPECT(get1(mem + 2 * PAGE, PAGE, HSA_SVM_ATTR_ACCESS, gpu2, &ty) == gpu2 && ty == HSA_SVM_ATTR_ACCESS_IN_PLACE);
		EXPECT(get1(mem + 3 * PAGE, PAGE, HSA_SVM_ATTR_ACCESS, gpu2, &ty) == gpu2 && ty == HSA_SVM_ATTR_NO_ACCESS);
	}

	/* Bad attributes: the KFD refuses (ERROR), the thunk refuses nodes it does not know. */
	a[0] = at(HSA_SVM_ATTR_GRANULARITY, 7);
	a[1] = at(42, 0);
	EXPECT(hsaKmtSVMSetAttr(mem, 8 * PAGE, 2, a) == HSAKMT_STATUS_ERROR);
	EXPECT(get1(mem, PAGE, HSA_SVM_ATTR_GRANULARITY, 0, NULL) == 4); /* unchanged */
	a[0] = at(HSA_SVM_ATTR_ACCESS, 0);
	EXPECT(hsaKmtSVMSetAttr(mem, PAGE, 1, a) == HSAKMT_STATUS_INVALID_NODE_UNIT);
	a[0] = at(HSA_SVM_ATTR_NO_ACCESS, 999);
	EXPECT(hsaKmtSVMSetAttr(mem, PAGE, 1, a) == HSAKMT_STATUS_INVALID_NODE_UNIT);
	a[0] = at(HSA_SVM_ATTR_PREFETCH_LOC, INVALID_NODEID);
	EXPECT(hsaKmtSVMSetAttr(mem, PAGE, 1, a) == HSAKMT_STATUS_INVALID_NODE_UNIT);
	a[0] = at(HSA_SVM_ATTR_ACCESS_IN_PLACE, gpu);
	EXPECT(hsaKmtSVMGetAttr(mem, PAGE, 1, a) == HSAKMT_STATUS_ERROR);
	EXPECT(a[0].type == HSA_SVM_ATTR_ACCESS_IN_PLACE && a[0].value == gpu); /* untouched */
	a[0] = at(HSA_SVM_ATTR_ACCESS, 0);
	EXPECT(hsaKmtSVMGetAttr(mem, PAGE, 1, a) == HSAKMT_STATUS_INVALID_NODE_UNIT);

	/* Bad ranges. */
	a[0] = at(HSA_SVM_ATTR_GRANULARITY, 1);
	EXPECT(hsaKmtSVMSetAttr(mem + 8, PAGE, 1, a) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtSVMSetAttr(mem, PAGE + 8, 1, a) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtSVMSetAttr(mem, 0, 1, a) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtSVMSetAttr(NULL, PAGE, 1, a) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtSVMGetAttr(mem + 8, PAGE, 1, a) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtSVMSetAttr(mem, PAGE, 1, NULL) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtSVMSetAttr(mem + 12 * PAGE, PAGE, 0, NULL) == HSAKMT_STATUS_SUCCESS);
	EXPECT(munmap(mem + 14 * PAGE, 2 * PAGE) == 0);
	EXPECT(hsaKmtSVMSetAttr(mem + 12 * PAGE, 4 * PAGE, 1, a) == HSAKMT_STATUS_ERROR); /* not memory */

	/* malloc'd memory is process memory too. */
	EXPECT(posix_memalign((void **)&heap, PAGE, 8 * PAGE) == 0);
	a[0] = at(HSA_SVM_ATTR_GRANULARITY, 6);
	EXPECT(hsaKmtSVMSetAttr(heap, 8 * PAGE, 1, a) == HSAKMT_STATUS_SUCCESS);
	EXPECT(get1(heap, 8 * PAGE, HSA_SVM_ATTR_GRANULARITY, 0, NULL) == 6);

	/* XNACK: off by default on every catalogue GPU; on only where every GPU allows it. */
	EXPECT(hsaKmtGetXNACKMode(&x) == HSAKMT_STATUS_SUCCESS && x == 0);
	EXPECT(hsaKmtGetXNACKMode(NULL) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtSetXNACKMode(1) == (can_xnack ? HSAKMT_STATUS_SUCCESS : HSAKMT_STATUS_NOT_SUPPORTED));
	EXPECT(hsaKmtGetXNACKMode(&x) == HSAKMT_STATUS_SUCCESS && x == can_xnack);
	if (can_xnack) {
		/* With XNACK on, memory without a range is accessible to every GPU. */
		EXPECT(get1(mem + 13 * PAGE, PAGE, HSA_SVM_ATTR_ACCESS, gpu2, &ty) == gpu2 && ty == HSA_SVM_ATTR_ACCESS);
	}
	EXPECT(hsaKmtSetXNACKMode(0) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtGetXNACKMode(&x) == HSAKMT_STATUS_SUCCESS && x == 0);
	free(heap);

out:
	munmap(mem, 14 * PAGE);
	EXPECT(hsaKmtReleaseSystemProperties() == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	if (failures)
		return 1;
	printf("svm: OK\n");
	return 0;
}
