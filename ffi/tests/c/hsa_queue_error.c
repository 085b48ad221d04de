/*
 * A packet the GPU rejects is reported by the HSA runtime instead of hanging: on the first GPU,
 * two AQL queues created with an error callback each get one bad packet — an agent-dispatch
 * packet (a GPU's CP does not run them: HSA_STATUS_ERROR_INVALID_PACKET_FORMAT) and a kernel
 * dispatch with an empty grid (HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS). The callback must
 * report each within 10 seconds, then the queues are destroyed and the runtime shut down.
 *
 * Usage: hsa_queue_error   prints one "queue error <what> status 0x<s>" line per queue and
 * "OK", exit 0; "FAIL ..." and 1 otherwise.
 */
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include "hsa_client.h"
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static hsa_agent_t gpu;
static volatile int reported;
static volatile hsa_status_t reported_status;

static hsa_status_t agent_cb(hsa_agent_t a, void *d)
{
	hsa_device_type_t t;
	(void)d;
	hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t);
	if (t == HSA_DEVICE_TYPE_GPU) {
		gpu = a;
		return HSA_STATUS_INFO_BREAK;
	}
	return HSA_STATUS_SUCCESS;
}

static void on_error(hsa_status_t status, hsa_queue_t *q, void *data)
{
	(void)q;
	(void)data;
	reported_status = status;
	__atomic_store_n(&reported, 1, __ATOMIC_RELEASE);
}

/* Submit `packet` (64 bytes, header last) on a fresh queue and wait for the error callback. */
static int one(const char *what, const uint8_t *packet, hsa_status_t want)
{
	hsa_queue_t *q = NULL;
	CK(hsa_queue_create(gpu, 64, HSA_QUEUE_TYPE_MULTI, on_error, NULL, UINT32_MAX, UINT32_MAX, &q));
	__atomic_store_n(&reported, 0, __ATOMIC_RELEASE);
	uint64_t id = hsa_queue_add_write_index_relaxed(q, 1);
	uint8_t *slot = (uint8_t *)q->base_address + (id % q->size) * 64;
	memcpy(slot + 4, packet + 4, 60);
	uint32_t header;
	memcpy(&header, packet, 4);
	__atomic_store_n((uint32_t *)slot, header, __ATOMIC_RELEASE);
	hsa_signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)id);
	for (int i = 0; i < 10000 && !__atomic_load_n(&reported, __ATOMIC_ACQUIRE); i++) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	if (!__atomic_load_n(&reported, __ATOMIC_ACQUIRE)) {
		printf("FAIL %s: no error reported in 10 s\n", what);
		return 1;
	}
	printf("queue error %s status 0x%x\n", what, (unsigned)reported_status);
	if (reported_status != want) {
		printf("FAIL %s: status 0x%x, want 0x%x\n", what, (unsigned)reported_status, (unsigned)want);
		return 1;
	}
	CK(hsa_queue_destroy(q));
	return 0;
}

int main(void)
{
	CK(hsa_init());
	hsa_iterate_agents(agent_cb, NULL);
	if (!gpu.handle) {
		printf("FAIL no GPU agent\n");
		return 1;
	}
	uint8_t p[64];

	memset(p, 0, sizeof(p));
	hsa_agent_dispatch_packet_t *ad = (hsa_agent_dispatch_packet_t *)p;
	ad->header = HSA_PACKET_TYPE_AGENT_DISPATCH << HSA_PACKET_HEADER_TYPE;
	ad->type = 1;
	if (one("agent-dispatch", p, HSA_STATUS_ERROR_INVALID_PACKET_FORMAT))
		return 1;

	memset(p, 0, sizeof(p));
	hsa_kernel_dispatch_packet_t *kd = (hsa_kernel_dispatch_packet_t *)p;
	kd->header = HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE;
	kd->setup = 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
	kd->workgroup_size_x = kd->workgroup_size_y = kd->workgroup_size_z = 1; /* grid left 0 */
	if (one("empty-grid", p, HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS))
		return 1;

	CK(hsa_shut_down());
	printf("OK\n");
	return 0;
}
