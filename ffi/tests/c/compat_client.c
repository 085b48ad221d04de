/* Source compatibility, C: code written for released ROCm (up to 7.0) passes an HsaMemMapFlags
 * to hsaKmtMapMemoryToGPUNodes; code written for the newest headers passes an HsaMemFlags.
 * Both compile against our headers (a transparent union in C). Run: maps a buffer both ways
 * on the model and exits 0. */
#include <hsakmt/hsakmt.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
	HsaSystemProperties sys;
	HsaNodeProperties props;
	HSAuint32 gpu = 0;
	HsaMemFlags alloc;
	void *p = 0;
	HSAuint64 va = 0;

	if (hsaKmtOpenKFD() || hsaKmtAcquireSystemProperties(&sys))
		return 1;
	for (HSAuint32 n = 0; n < sys.NumNodes && !gpu; n++)
		if (!hsaKmtGetNodeProperties(n, &props) && props.KFDGpuID)
			gpu = n;
	memset(&alloc, 0, sizeof(alloc));
	alloc.ui32.HostAccess = 1;
	alloc.ui32.NonPaged = 1;
	if (!gpu || hsaKmtAllocMemory(gpu, 4096, alloc, &p))
		return 2;

	HsaMemMapFlags map_flags;
	memset(&map_flags, 0, sizeof(map_flags));
	map_flags.ui32.PageSize = HSA_PAGE_SIZE_4KB;
	if (hsaKmtMapMemoryToGPUNodes(p, 4096, &va, map_flags, 1, &gpu) != HSAKMT_STATUS_SUCCESS)
		return 3;
	if (hsaKmtUnmapMemoryToGPU(p))
		return 4;
	HsaMemFlags flags;
	memset(&flags, 0, sizeof(flags));
	va = 0;
	if (hsaKmtMapMemoryToGPUNodes(p, 4096, &va, flags, 1, &gpu) != HSAKMT_STATUS_SUCCESS)
		return 5;
	if (hsaKmtUnmapMemoryToGPU(p) || hsaKmtFreeMemory(p, 4096) || hsaKmtCloseKFD())
		return 6;
	puts("mapped both ways");
	return 0;
}
