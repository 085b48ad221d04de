/* What a wave tells the host directly (model/ISA.md): `s_sendmsg sendmsg(MSG_INTERRUPT)` raises
 * the SQ interrupt whose data, M0's low 24 bits, names the KFD event to signal, as device code
 * signals an interrupt signal (the ockl signal functions write the event id to the signal's
 * mailbox, the event's slot, then send it in M0; the KFD signals an event by id only if its slot
 * was written); and `s_memrealtime` reads the GPU clock counter hsaKmtGetClockCounters reports.
 * Hand-assembled gfx90a code (encodings from llvm-mc-19), kernarg { u64 out; u32 event id;
 * u32 pad; u64 mailbox }:
 *   s_load_dword s4, s[0:1], 0x8; s_load_dwordx2 s[8:9], s[0:1], 0x10;
 *   s_load_dwordx2 s[0:1], s[0:1], 0x0; s_memrealtime s[2:3]; s_waitcnt lgkmcnt(0);
 *   v_mov_b32 v2, 0; v_mov_b32 v3, s4; global_store_dword v2, v3, s[8:9]; s_waitcnt vmcnt(0);
 *   s_mov_b32 m0, s4; s_sendmsg sendmsg(MSG_INTERRUPT);
 *   v_mov_b32 v0, s2; v_mov_b32 v1, s3; global_store_dwordx2 v2, v[0:1], s[0:1]; s_endpgm
 * Exit 0 on success. */
#include "aql_dispatch.h"
#include <hsakmt/hsakmt.h>
#include <stdint.h>
#include <string.h>

static const uint32_t CODE[] = {
	0xc0020100, 0x00000008, 0xc0060200, 0x00000010, 0xc0060000, 0x00000000, 0xc0940080,
	0x00000000, 0xbf8cc07f, 0x7e040280, 0x7e060204, 0xdc708000, 0x00080302, 0xbf8c0f70,
	0xbefc0004, 0xbf900001, 0x7e000202, 0x7e020203, 0xdc748000, 0x00000002, 0xbf810000,
};

/* Name `ev` in the kernel's arguments: its id and its slot (the mailbox). */
static void name_event(uint8_t *kernarg, HsaEvent *ev)
{
	*(uint32_t *)(kernarg + 8) = ev->EventId;
	*(uint64_t *)(kernarg + 16) = ev->EventData.HWData2;
}

int main(void)
{
	HSAuint32 gpu = open_gfx90a();
	if (!gpu)
		return 1;

	/* The descriptor (code object v5) at +0: entry 256 bytes on, two user SGPRs (USER_SGPR = 2
	 * in compute_pgm_rsrc2) holding the kernarg pointer (kernel_code_properties bit 3). */
	uint8_t *code = gpu_host_memory(gpu, 4096), *mem = gpu_host_memory(gpu, 4096);
	EXPECT(code && mem);
	*(int64_t *)(code + 16) = 256;
	*(uint32_t *)(code + 52) = 2u << 1;
	*(uint16_t *)(code + 56) = 1u << 3;
	memcpy(code + 256, CODE, sizeof(CODE));
	uint8_t *signal = mem, *kernarg = mem + 256;
	uint64_t *out = (uint64_t *)(mem + 512);

	HsaEvent *ev = new_event(HSA_EVENTTYPE_SIGNAL, gpu, false), *other = new_event(HSA_EVENTTYPE_SIGNAL, gpu, false);
	EXPECT(ev && other);
	struct aql_queue q;
	aql_queue_create(gpu, &q);
	HsaClockCounters before, after;
	EXPECT(hsaKmtGetClockCounters(gpu, &before) == HSAKMT_STATUS_SUCCESS);
	*(uint64_t *)kernarg = (uintptr_t)out;
	name_event(kernarg, ev);
	aql_dispatch(&q, 0, (uintptr_t)code, (uintptr_t)kernarg, signal);
	EXPECT(hsaKmtWaitOnEvent(ev, 10000) == HSAKMT_STATUS_SUCCESS); /* the wave's message */
	EXPECT(signal_completes(signal));
	EXPECT(hsaKmtGetClockCounters(gpu, &after) == HSAKMT_STATUS_SUCCESS);
	uint64_t t = __atomic_load_n(out, __ATOMIC_ACQUIRE);
	EXPECT(before.GPUClockCounter <= t && t <= after.GPUClockCounter);
	EXPECT(hsaKmtWaitOnEvent(other, 0) == HSAKMT_STATUS_WAIT_TIMEOUT); /* only the one named */

	/* The same kernel naming the other event: that one is signalled, the first is not. */
	name_event(kernarg, other);
	aql_dispatch(&q, 1, (uintptr_t)code, (uintptr_t)kernarg, signal);
	EXPECT(hsaKmtWaitOnEvent(other, 10000) == HSAKMT_STATUS_SUCCESS);
	EXPECT(signal_completes(signal));
	EXPECT(hsaKmtWaitOnEvent(ev, 0) == HSAKMT_STATUS_WAIT_TIMEOUT);
	EXPECT(__atomic_load_n(out, __ATOMIC_ACQUIRE) >= t);
	EXPECT(aql_queue_healthy(&q));

	aql_queue_destroy(&q);
	EXPECT(hsaKmtDestroyEvent(ev) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtDestroyEvent(other) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	if (!failures)
		printf("wave_messages: OK\n");
	return failures ? 1 : 0;
}
