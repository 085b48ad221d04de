/* What the C tests share to reach a GPU: the first GPU node, host memory it can reach, and
 * events on it. */
#ifndef HSAKMT_RS_TEST_GPU_MEMORY_H
#define HSAKMT_RS_TEST_GPU_MEMORY_H
#include <hsakmt/hsakmt.h>
#include <string.h>

/* The first GPU node of `sys` (its properties in `props`); 0 if there is none or a node's
 * properties cannot be read. */
static inline HSAuint32 first_gpu_node(const HsaSystemProperties *sys, HsaNodeProperties *props)
{
	for (HSAuint32 n = 0; n < sys->NumNodes; n++) {
		if (hsaKmtGetNodeProperties(n, props) != HSAKMT_STATUS_SUCCESS)
			return 0;
		if (props->KFDGpuID)
			return n;
	}
	return 0;
}

/* Host memory a GPU can reach, as kfdtest's HsaMemoryBuffer(host) gives it: non-paged,
 * executable, 4 KiB pages, mapped to the GPU of `node`, zeroed. NULL on failure. */
static inline void *gpu_host_memory(HSAuint32 node, HSAuint64 size)
{
	HsaMemFlags f;
	void *p = NULL;
	HSAuint64 gpu_va = 0;

	memset(&f, 0, sizeof(f));
	f.ui32.HostAccess = 1;
	f.ui32.NonPaged = 1;
	f.ui32.ExecuteAccess = 1;
	f.ui32.PageSize = HSA_PAGE_SIZE_4KB;
	if (hsaKmtAllocMemory(node, size, f, &p) != HSAKMT_STATUS_SUCCESS)
		return NULL;
	if (hsaKmtMapMemoryToGPUNodes(p, size, &gpu_va, (HsaMemFlags){ 0 }, 1, &node) != HSAKMT_STATUS_SUCCESS)
		return NULL;
	memset(p, 0, size);
	return p;
}

/* A new unsignalled event of `type` on `node`, auto-reset unless `manual`; NULL on failure. */
static inline HsaEvent *new_event(HSA_EVENTTYPE type, HSAuint32 node, bool manual)
{
	HsaEventDescriptor d;
	HsaEvent *ev = NULL;

	memset(&d, 0, sizeof(d));
	d.EventType = type;
	d.NodeId = node;
	if (hsaKmtCreateEvent(&d, manual, false, &ev) != HSAKMT_STATUS_SUCCESS)
		return NULL;
	return ev;
}

#endif
