/* What the C clients of the HSA runtime share (hsa_async_copy.c, hsa_blit.c,
 * hsa_queue_error.c): the status check that ends main with a FAIL line, and the memory pool
 * they allocate from. */
#ifndef HSAKMT_RS_TEST_HSA_CLIENT_H
#define HSAKMT_RS_TEST_HSA_CLIENT_H
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <stdbool.h>
#include <stdio.h>

/* Evaluate an HSA call; on failure print it with its status and return 1 from the caller. */
#define CK(x)                                                           \
	do {                                                            \
		hsa_status_t s_ = (x);                                  \
		if (s_ != HSA_STATUS_SUCCESS) {                         \
			printf("FAIL %s = 0x%x\n", #x, (unsigned)s_);   \
			return 1;                                       \
		}                                                       \
	} while (0)

/* hsa_amd_agent_iterate_memory_pools callback: the first global pool the runtime may allocate
 * from, into *(hsa_amd_memory_pool_t *)d. */
static inline hsa_status_t pool_cb(hsa_amd_memory_pool_t p, void *d)
{
	hsa_amd_segment_t s;
	bool ok = false;
	hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &s);
	if (s != HSA_AMD_SEGMENT_GLOBAL)
		return HSA_STATUS_SUCCESS;
	hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &ok);
	if (!ok)
		return HSA_STATUS_SUCCESS;
	*(hsa_amd_memory_pool_t *)d = p;
	return HSA_STATUS_INFO_BREAK;
}

#endif
