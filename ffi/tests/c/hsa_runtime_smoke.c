/* An HSA program of the simplest kind a ROCm user writes, built against the HSA runtime's own
 * headers (Debian's /usr/include/hsa) and linked to that runtime, which loads libhsakmt.so.1:
 * hsa_init, agents and their memory pools, an allocation from a GPU pool, an AQL queue,
 * barrier-AND packets with completion signals (one held back by a dependency until the host
 * releases it), hsa_shut_down. Prints one line per fact for the Rust test and checks what it
 * can itself; any failure prints "FAIL ..." and exits 1.
 *
 *   hsa_runtime_smoke <expected GPU agents> <expected CPU agents> <expected gfx name>
 */
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                     \
	do {                                                                            \
		hsa_status_t s_ = (call);                                               \
		if (s_ != HSA_STATUS_SUCCESS) {                                         \
			const char *m_ = NULL;                                          \
			hsa_status_string(s_, &m_);                                     \
			printf("FAIL %s = 0x%x (%s)\n", #call, (unsigned)s_, m_ ? m_ : "?"); \
			exit(1);                                                        \
		}                                                                       \
	} while (0)

#define EXPECT(cond, ...)                                                                \
	do {                                                                             \
		if (!(cond)) {                                                           \
			printf("FAIL %s: ", #cond);                                      \
			printf(__VA_ARGS__);                                             \
			printf("\n");                                                    \
			exit(1);                                                         \
		}                                                                        \
	} while (0)

#define MAX_AGENTS 64

struct agents {
	hsa_agent_t gpu[MAX_AGENTS];
	unsigned ngpu;
	unsigned ncpu;
};

static hsa_status_t on_isa(hsa_isa_t isa, void *data)
{
	char name[256] = {0};
	uint32_t len = 0;
	CHECK(hsa_isa_get_info_alt(isa, HSA_ISA_INFO_NAME_LENGTH, &len));
	EXPECT(len > 0 && len < sizeof name, "ISA name length %u", len);
	CHECK(hsa_isa_get_info_alt(isa, HSA_ISA_INFO_NAME, name));
	printf("isa %u %s\n", *(unsigned *)data, name);
	return HSA_STATUS_SUCCESS;
}

static hsa_status_t on_agent(hsa_agent_t agent, void *data)
{
	struct agents *a = data;
	hsa_device_type_t type;
	char name[64] = {0};
	uint32_t cus = 0, node = 0;
	CHECK(hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type));
	CHECK(hsa_agent_get_info(agent, HSA_AGENT_INFO_NAME, name));
	CHECK(hsa_agent_get_info(agent, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT, &cus));
	CHECK(hsa_agent_get_info(agent, HSA_AGENT_INFO_NODE, &node));
	if (type == HSA_DEVICE_TYPE_GPU) {
		EXPECT(a->ngpu < MAX_AGENTS, "too many GPU agents");
		a->gpu[a->ngpu++] = agent;
		printf("agent gpu node %u name %s cus %u\n", node, name, cus);
		CHECK(hsa_agent_iterate_isas(agent, on_isa, &node));
	} else if (type == HSA_DEVICE_TYPE_CPU) {
		a->ncpu++;
		printf("agent cpu node %u name %s cus %u\n", node, name, cus);
	}
	return HSA_STATUS_SUCCESS;
}

struct pools {
	hsa_amd_memory_pool_t coarse;
	int found;
	unsigned n;
};

static hsa_status_t on_pool(hsa_amd_memory_pool_t pool, void *data)
{
	struct pools *p = data;
	hsa_amd_segment_t seg;
	uint32_t flags = 0;
	bool alloc = false;
	size_t size = 0;
	CHECK(hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg));
	CHECK(hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SIZE, &size));
	if (seg == HSA_AMD_SEGMENT_GLOBAL) {
		CHECK(hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags));
		CHECK(hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &alloc));
		if (!p->found && alloc && (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED)) {
			p->coarse = pool;
			p->found = 1;
		}
	}
	printf("pool %u segment %u flags %u alloc %d size %zu\n", p->n++, (unsigned)seg, flags, (int)alloc, size);
	return HSA_STATUS_SUCCESS;
}

/* One barrier-AND packet: the body first, then the header with release, then the doorbell. */
static void submit_barrier(hsa_queue_t *q, hsa_signal_t dep, hsa_signal_t done)
{
	uint64_t idx = hsa_queue_add_write_index_relaxed(q, 1);
	while (idx - hsa_queue_load_read_index_scacquire(q) >= q->size)
		;
	hsa_barrier_and_packet_t *p = (hsa_barrier_and_packet_t *)q->base_address + (idx & (q->size - 1));
	memset((char *)p + 4, 0, sizeof *p - 4);
	p->dep_signal[0] = dep;
	p->completion_signal = done;
	uint16_t header = (HSA_PACKET_TYPE_BARRIER_AND << HSA_PACKET_HEADER_TYPE) | (1 << HSA_PACKET_HEADER_BARRIER) |
			  (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
			  (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
	__atomic_store_n((uint32_t *)p, (uint32_t)header, __ATOMIC_RELEASE);
	hsa_signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)idx);
}

static void queue_and_barriers(hsa_agent_t gpu, unsigned which, uint64_t ticks_per_second)
{
	uint32_t qmax = 0;
	CHECK(hsa_agent_get_info(gpu, HSA_AGENT_INFO_QUEUE_MAX_SIZE, &qmax));
	uint32_t qsize = qmax < 256 ? qmax : 256;
	hsa_queue_t *q = NULL;
	CHECK(hsa_queue_create(gpu, qsize, HSA_QUEUE_TYPE_SINGLE, NULL, NULL, UINT32_MAX, UINT32_MAX, &q));
	EXPECT(q && q->size == qsize && q->base_address, "queue %p", (void *)q);

	hsa_signal_t gate, done, none = {0};
	CHECK(hsa_signal_create(1, 0, NULL, &gate));
	CHECK(hsa_signal_create(1, 0, NULL, &done));
	/* Held back by its dependency: still 1 after 100 ms. */
	submit_barrier(q, gate, done);
	hsa_signal_value_t v =
		hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_EQ, 0, ticks_per_second / 10, HSA_WAIT_STATE_BLOCKED);
	EXPECT(v == 1, "a barrier waiting on an unsignalled dependency completed (value %ld)", (long)v);
	/* Released: completes. */
	hsa_signal_store_screlease(gate, 0);
	v = hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_EQ, 0, 30 * ticks_per_second, HSA_WAIT_STATE_BLOCKED);
	EXPECT(v == 0, "the barrier did not complete once its dependency was met (value %ld)", (long)v);
	printf("gpu %u barrier dependency OK\n", which);

	/* A burst of 32 barriers, each decrementing one counting signal. */
	const unsigned burst = 32;
	hsa_signal_store_relaxed(done, burst);
	for (unsigned i = 0; i < burst; i++)
		submit_barrier(q, none, done);
	v = hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_EQ, 0, 30 * ticks_per_second, HSA_WAIT_STATE_BLOCKED);
	EXPECT(v == 0, "%u barriers left the completion signal at %ld", burst, (long)v);
	/* The packet processor may publish the read index after the completion signal. */
	uint64_t rd = 0;
	for (unsigned spin = 0; spin < 1000000 && (rd = hsa_queue_load_read_index_scacquire(q)) != 1 + burst; spin++)
		;
	EXPECT(rd == 1 + burst, "read index %lu after %u packets", (unsigned long)rd, 1 + burst);
	printf("gpu %u barriers %u OK\n", which, burst + 1);

	CHECK(hsa_signal_destroy(gate));
	CHECK(hsa_signal_destroy(done));
	CHECK(hsa_queue_destroy(q));
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s <GPU agents> <CPU agents> <gfx name>\n", argv[0]);
		return 2;
	}
	unsigned want_gpus = (unsigned)atoi(argv[1]), want_cpus = (unsigned)atoi(argv[2]);
	const char *gfx = argv[3];

	CHECK(hsa_init());
	uint64_t freq = 0;
	CHECK(hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY, &freq));
	EXPECT(freq > 0, "timestamp frequency 0");

	struct agents a;
	memset(&a, 0, sizeof a);
	CHECK(hsa_iterate_agents(on_agent, &a));
	printf("agents gpu %u cpu %u\n", a.ngpu, a.ncpu);
	EXPECT(a.ngpu == want_gpus && a.ncpu == want_cpus, "want %u GPU and %u CPU agents", want_gpus, want_cpus);

	for (unsigned g = 0; g < a.ngpu; g++) {
		char name[64] = {0};
		CHECK(hsa_agent_get_info(a.gpu[g], HSA_AGENT_INFO_NAME, name));
		EXPECT(strcmp(name, gfx) == 0, "GPU agent %u is %s, not %s", g, name, gfx);
	}

	/* The first GPU's pools; allocate from its coarse-grained global (VRAM) pool. */
	struct pools p;
	memset(&p, 0, sizeof p);
	CHECK(hsa_amd_agent_iterate_memory_pools(a.gpu[0], on_pool, &p));
	EXPECT(p.found, "the first GPU has no allocatable coarse-grained global pool");
	void *buf = NULL;
	CHECK(hsa_amd_memory_pool_allocate(p.coarse, 1 << 20, 0, &buf));
	EXPECT(buf != NULL, "allocation returned NULL");
	printf("allocated 1048576 at %p\n", buf);

	/* AQL queues on the first and the last GPU. */
	queue_and_barriers(a.gpu[0], 0, freq);
	if (a.ngpu > 1)
		queue_and_barriers(a.gpu[a.ngpu - 1], a.ngpu - 1, freq);

	CHECK(hsa_amd_memory_pool_free(buf));
	CHECK(hsa_shut_down());
	printf("OK\n");
	return 0;
}
