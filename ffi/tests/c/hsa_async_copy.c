/*
 * hsa_amd_memory_async_copy as HIP's hipMemcpy uses it: 1 MiB of a pattern from host memory to
 * the first GPU's VRAM, from there to the last GPU's VRAM (GPU to GPU: an XGMI or PCIe SDMA
 * queue), and back to host memory; the data must arrive unchanged. Every copy runs on the
 * runtime's SDMA queues with its default settings (the HDP flush first). With one GPU the
 * GPU-to-GPU step is left out: the runtime copies within one GPU with a blit kernel, real
 * machine code that only the gfx90a model runs (hsa_blit.c tests those kernels).
 *
 * Usage: hsa_async_copy    prints "copies OK: ..." and exits 0, else "FAIL ..." and 1.
 */
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include "hsa_client.h"
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static hsa_agent_t gpus[64], cpu;
static int ngpu;
static hsa_amd_memory_pool_t gpool[64], cpool;

static hsa_status_t agent_cb(hsa_agent_t a, void *d)
{
	hsa_device_type_t t;
	(void)d;
	hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t);
	if (t == HSA_DEVICE_TYPE_GPU && ngpu < 64)
		gpus[ngpu++] = a;
	else if (t == HSA_DEVICE_TYPE_CPU && !cpu.handle)
		cpu = a;
	return HSA_STATUS_SUCCESS;
}

static int copy(void *dst, hsa_agent_t da, void *src, hsa_agent_t sa, size_t n, const char *what)
{
	hsa_signal_t sig;
	CK(hsa_signal_create(1, 0, NULL, &sig));
	CK(hsa_amd_memory_async_copy(dst, da, src, sa, n, 0, NULL, sig));
	/* 20 s: a copy the GPU never finishes fails here instead of hanging the test. */
	if (hsa_signal_wait_scacquire(sig, HSA_SIGNAL_CONDITION_LT, 1, 20000000000ull, HSA_WAIT_STATE_BLOCKED) != 0) {
		printf("FAIL %s: the copy did not complete\n", what);
		return 1;
	}
	CK(hsa_signal_destroy(sig));
	return 0;
}

int main(void)
{
	const size_t n = 1 << 20;
	unsigned char *h1, *h2, *d0, *d1;
	hsa_agent_t all[65];

	CK(hsa_init());
	CK(hsa_iterate_agents(agent_cb, NULL));
	if (!ngpu || !cpu.handle) {
		printf("FAIL no GPU or CPU agent\n");
		return 1;
	}
	hsa_amd_agent_iterate_memory_pools(cpu, pool_cb, &cpool);
	for (int i = 0; i < ngpu; i++)
		hsa_amd_agent_iterate_memory_pools(gpus[i], pool_cb, &gpool[i]);
	CK(hsa_amd_memory_pool_allocate(cpool, n, 0, (void **)&h1));
	CK(hsa_amd_memory_pool_allocate(cpool, n, 0, (void **)&h2));
	CK(hsa_amd_memory_pool_allocate(gpool[0], n, 0, (void **)&d0));
	CK(hsa_amd_memory_pool_allocate(gpool[ngpu - 1], n, 0, (void **)&d1));
	for (int i = 0; i < ngpu; i++)
		all[i] = gpus[i];
	all[ngpu] = cpu;
	CK(hsa_amd_agents_allow_access(ngpu + 1, all, NULL, h1));
	CK(hsa_amd_agents_allow_access(ngpu + 1, all, NULL, h2));
	CK(hsa_amd_agents_allow_access(ngpu, all, NULL, d0));
	CK(hsa_amd_agents_allow_access(ngpu, all, NULL, d1));
	for (size_t i = 0; i < n; i++)
		h1[i] = (unsigned char)(i * 7 + 3);
	memset(h2, 0, n);

	if (copy(d0, gpus[0], h1, cpu, n, "host to GPU 0"))
		return 1;
	if (ngpu > 1 && copy(d1, gpus[ngpu - 1], d0, gpus[0], n, "GPU 0 to the last GPU"))
		return 1;
	if (copy(h2, cpu, ngpu > 1 ? d1 : d0, gpus[ngpu - 1], n, "the last GPU to host"))
		return 1;
	if (memcmp(h1, h2, n)) {
		printf("FAIL the data came back changed\n");
		return 1;
	}
	printf("copies OK: host->gpu0->gpu%d->host, %zu bytes, %d GPUs\n", ngpu - 1, n, ngpu);
	CK(hsa_amd_memory_pool_free(h1));
	CK(hsa_amd_memory_pool_free(h2));
	CK(hsa_amd_memory_pool_free(d0));
	CK(hsa_amd_memory_pool_free(d1));
	CK(hsa_shut_down());
	return 0;
}
