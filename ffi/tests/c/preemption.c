/* A kernel that never ends does not take the GPU from other queues, and destroying its queue
 * stops it without an error (model/ISA.md, "Scheduling"): the model runs machine code a quantum of
 * wave-instructions at a time and preempts between quanta, as the CP's scheduler does between
 * queues. Queue A runs `s_branch -1` (an endless loop, one wave); queue B then runs two
 * `s_endpgm` kernels, which complete while A's kernel still runs; DestroyQueue(A) succeeds and
 * A's completion signal is never decremented. Hand-assembled gfx90a code: two code object v5
 * kernel descriptors, each 256 bytes before its entry. Exit 0 on success. */
#include "aql_dispatch.h"
#include <hsakmt/hsakmt.h>
#include <stdint.h>
#include <string.h>

#define S_BRANCH_SELF 0xbf82ffffu /* s_branch -1 */
#define S_ENDPGM 0xbf810000u

int main(void)
{
	HSAuint32 gpu = open_gfx90a();
	if (!gpu)
		return 1;
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

	struct aql_queue a, b;
	aql_queue_create(gpu, &a);
	aql_queue_create(gpu, &b);
	uint8_t *sa = signals, *sb = signals + 64;
	aql_dispatch(&a, 0, spin, 0, sa);
	aql_dispatch(&b, 0, end, 0, sb);
	EXPECT(signal_completes(sb));
	aql_dispatch(&b, 1, end, 0, sb);
	EXPECT(signal_completes(sb));
	/* A's kernel still runs: not completed, not consumed, not stopped by the runaway limit. */
	EXPECT(signal_value(sa) == 1);
	EXPECT(__atomic_load_n(&a.ptrs[0], __ATOMIC_ACQUIRE) == 0);
	EXPECT(aql_queue_healthy(&a));
	EXPECT(__atomic_load_n(&b.ptrs[0], __ATOMIC_ACQUIRE) == 2);
	EXPECT(hsaKmtDestroyQueue(a.r.QueueId) == HSAKMT_STATUS_SUCCESS);
	EXPECT(signal_value(sa) == 1); /* stopped, never completed */
	EXPECT(aql_queue_healthy(&a));
	EXPECT(aql_queue_healthy(&b));
	aql_queue_destroy(&b);
	EXPECT(hsaKmtDestroyEvent(a.error_event) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	if (!failures)
		printf("preemption: OK\n");
	return failures ? 1 : 0;
}
