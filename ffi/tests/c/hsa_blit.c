/*
 * The HSA runtime's own blit kernels: run with HSA_ENABLE_SDMA=0, hsa_amd_memory_async_copy and
 * hsa_amd_memory_fill do their work with kernels the runtime carries as GPU machine code (its
 * copy-aligned, copy-misaligned and fill shaders), dispatched on an AQL queue of the GPU.
 * On the first GPU: host -> VRAM, VRAM -> VRAM (aligned, then at odd offsets and sizes, which the
 * misaligned kernel does), fills (whole, and at an offset), VRAM -> host; every byte checked
 * against what the CPU computes independently.
 *
 * Usage: hsa_blit    prints one "ok <step>" line per step and "blit OK", exits 0; else "FAIL ..."
 * and 1.
 */
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include "hsa_client.h"
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static hsa_agent_t gpu, cpu;
static hsa_amd_memory_pool_t gpool, cpool;

static hsa_status_t agent_cb(hsa_agent_t a, void *d)
{
	hsa_device_type_t t;
	(void)d;
	hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t);
	if (t == HSA_DEVICE_TYPE_GPU && !gpu.handle)
		gpu = a;
	else if (t == HSA_DEVICE_TYPE_CPU && !cpu.handle)
		cpu = a;
	return HSA_STATUS_SUCCESS;
}

static int wait(hsa_signal_t sig, const char *what)
{
	/* 60 s: a copy the GPU never finishes fails here instead of hanging the test. */
	if (hsa_signal_wait_scacquire(sig, HSA_SIGNAL_CONDITION_LT, 1, 60000000000ull, HSA_WAIT_STATE_BLOCKED) != 0) {
		printf("FAIL %s: did not complete\n", what);
		return 1;
	}
	return 0;
}

static int copy(void *dst, hsa_agent_t da, const void *src, hsa_agent_t sa, size_t n, const char *what)
{
	hsa_signal_t sig;
	CK(hsa_signal_create(1, 0, NULL, &sig));
	CK(hsa_amd_memory_async_copy(dst, da, src, sa, n, 0, NULL, sig));
	if (wait(sig, what))
		return 1;
	CK(hsa_signal_destroy(sig));
	return 0;
}

/* The first differing byte, or -1. */
static long differ(const unsigned char *a, const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return (long)i;
	return -1;
}

int main(void)
{
	const size_t n = 1 << 20;
	unsigned char *h_src, *h_dst, *want, *d0, *d1;

	CK(hsa_init());
	CK(hsa_iterate_agents(agent_cb, NULL));
	if (!gpu.handle || !cpu.handle) {
		printf("FAIL no GPU or CPU agent\n");
		return 1;
	}
	hsa_amd_agent_iterate_memory_pools(cpu, pool_cb, &cpool);
	hsa_amd_agent_iterate_memory_pools(gpu, pool_cb, &gpool);
	CK(hsa_amd_memory_pool_allocate(cpool, n, 0, (void **)&h_src));
	CK(hsa_amd_memory_pool_allocate(cpool, n, 0, (void **)&h_dst));
	CK(hsa_amd_memory_pool_allocate(gpool, n, 0, (void **)&d0));
	CK(hsa_amd_memory_pool_allocate(gpool, n, 0, (void **)&d1));
	hsa_agent_t both[2] = { gpu, cpu };
	CK(hsa_amd_agents_allow_access(2, both, NULL, h_src));
	CK(hsa_amd_agents_allow_access(2, both, NULL, h_dst));
	want = malloc(n);
	if (!want) {
		printf("FAIL malloc\n");
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		h_src[i] = (unsigned char)(i * 7 + 3 + (i >> 8));

	/* host -> VRAM, VRAM -> host: the aligned copy kernel both ways. */
	if (copy(d0, gpu, h_src, cpu, n, "host to VRAM"))
		return 1;
	memset(h_dst, 0, n);
	if (copy(h_dst, cpu, d0, gpu, n, "VRAM to host"))
		return 1;
	if (differ(h_src, h_dst, n) >= 0) {
		printf("FAIL host->VRAM->host: byte %ld differs\n", differ(h_src, h_dst, n));
		return 1;
	}
	printf("ok host->vram->host %zu\n", n);

	/* VRAM -> VRAM, the whole buffer. */
	if (copy(d1, gpu, d0, gpu, n, "VRAM to VRAM"))
		return 1;
	memset(h_dst, 0, n);
	if (copy(h_dst, cpu, d1, gpu, n, "VRAM to host"))
		return 1;
	if (differ(h_src, h_dst, n) >= 0) {
		printf("FAIL vram->vram: byte %ld differs\n", differ(h_src, h_dst, n));
		return 1;
	}
	printf("ok vram->vram %zu\n", n);

	/* VRAM -> VRAM at odd offsets and an odd size (the misaligned kernel): d1 starts as a copy
	 * of h_src, then d1[5 .. 5 + 100003) = d0[3 .. 3 + 100003). */
	const size_t so = 3, dof = 5, len = 100003;
	if (copy(d1 + dof, gpu, d0 + so, gpu, len, "misaligned VRAM to VRAM"))
		return 1;
	memcpy(want, h_src, n);
	memmove(want + dof, h_src + so, len);
	memset(h_dst, 0, n);
	if (copy(h_dst, cpu, d1, gpu, n, "VRAM to host"))
		return 1;
	if (differ(want, h_dst, n) >= 0) {
		printf("FAIL misaligned vram->vram: byte %ld differs\n", differ(want, h_dst, n));
		return 1;
	}
	printf("ok misaligned vram->vram %zu\n", len);

	/* host -> VRAM at odd offsets, then back at other odd offsets. */
	if (copy(d0 + 1, gpu, h_src + 2, cpu, 4097, "misaligned host to VRAM"))
		return 1;
	memcpy(want, h_src, n);
	memmove(want + 1, h_src + 2, 4097);
	memset(h_dst, 0xee, n);
	if (copy(h_dst + 7, cpu, d0, gpu, 8191, "misaligned VRAM to host"))
		return 1;
	if (differ(want, h_dst + 7, 8191) >= 0 || h_dst[6] != 0xee || h_dst[7 + 8191] != 0xee) {
		printf("FAIL misaligned host<->vram: byte %ld differs\n", differ(want, h_dst + 7, 8191));
		return 1;
	}
	printf("ok misaligned host<->vram 4097 8191\n");

	/* Fills: the whole of d0 with a pattern, then 1000 dwords at a dword offset with another. */
	const uint32_t v1 = 0xa5c3e187u, v2 = 0x01020304u;
	CK(hsa_amd_memory_fill(d0, v1, n / 4));
	CK(hsa_amd_memory_fill(d0 + 4 * 37, v2, 1000));
	for (size_t i = 0; i < n / 4; i++) {
		uint32_t v = (i >= 37 && i < 37 + 1000) ? v2 : v1;
		memcpy(want + 4 * i, &v, 4);
	}
	memset(h_dst, 0, n);
	if (copy(h_dst, cpu, d0, gpu, n, "VRAM to host after fill"))
		return 1;
	if (differ(want, h_dst, n) >= 0) {
		printf("FAIL fill: byte %ld differs\n", differ(want, h_dst, n));
		return 1;
	}
	printf("ok fill %zu dwords, 1000 at 37\n", n / 4);

	/* A fill of host memory the GPU may access. */
	CK(hsa_amd_memory_fill(h_dst, v2, 333));
	for (size_t i = 0; i < 333; i++)
		memcpy(want + 4 * i, &v2, 4);
	if (differ(want, h_dst, n) >= 0) {
		printf("FAIL host fill: byte %ld differs\n", differ(want, h_dst, n));
		return 1;
	}
	printf("ok host fill 333 dwords\n");

	free(want);
	CK(hsa_amd_memory_pool_free(h_src));
	CK(hsa_amd_memory_pool_free(h_dst));
	CK(hsa_amd_memory_pool_free(d0));
	CK(hsa_amd_memory_pool_free(d1));
	CK(hsa_shut_down());
	printf("blit OK\n");
	return 0;
}
