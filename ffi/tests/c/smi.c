/* SMI events through the public API, read as an amdgpu consumer (amd-smi, rocm-smi) reads them:
 * hsaKmtOpenSMI's statuses; the file answers EAGAIN and polls unreadable while empty; a mask
 * with VMFAULT, QUEUE_EVICTION and the GPU reset events; an SDMA FENCE to an address nothing
 * maps brings a VMFAULT record naming this process and its task; a hung SDMA queue destroyed
 * on a GPU without per-SDMA-queue reset brings GPU_PRE_RESET, QUEUE_EVICTION (trigger 3,
 * SUSPEND) and GPU_POST_RESET with one sequence number; where the CWSR area is an SVM range,
 * destroying an AQL queue unmaps it from the GPU: UNMAP_FROM_GPU reaches a client that asked
 * for it and not the first one; after CloseKFD, PROCESS_END. Exit 0 on success. */
#include "expect.h"
#include "gpu_memory.h"
#include <errno.h>
#include <hsakmt/hsakmt.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MASK(i) (1ull << ((i) - 1)) /* KFD_SMI_EVENT_MASK_FROM_INDEX */
enum { VMFAULT = 1, PRE_RESET = 3, POST_RESET = 4, QUEUE_EVICTION = 9, UNMAP_FROM_GPU = 11, PROCESS_END = 13 };

static int wait_readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* Everything the file holds now (reads until EAGAIN), NUL-terminated. */
static size_t read_records(int fd, char *buf, size_t cap)
{
	size_t got = 0;
	for (;;) {
		ssize_t n = read(fd, buf + got, cap - 1 - got);
		if (n <= 0) {
			EXPECT(n < 0 && errno == EAGAIN);
			break;
		}
		got += (size_t)n;
	}
	buf[got] = 0;
	return got;
}

/* Read until a record of `event` arrived (polling up to 5 s; appended to buf): that record. */
static const char *wait_event(int fd, unsigned event, char *buf, size_t cap)
{
	size_t got = strlen(buf);
	for (int i = 0; i < 50; i++) {
		char *line = buf;
		while (line && *line) {
			unsigned id;
			if (sscanf(line, "%x ", &id) == 1 && id == event)
				return line;
			line = strchr(line, '\n');
			if (line)
				line++;
		}
		if (!wait_readable(fd, 100))
			continue;
		got += read_records(fd, buf + got, cap - got);
	}
	return NULL;
}

int main(void)
{
	HsaSystemProperties sys;
	HsaNodeProperties props;
	HSAuint32 gpu = 0, cpu = 0, n;
	int fd = -1;
	char comm[32] = { 0 }, buf[16384];

	FILE *f = fopen("/proc/self/comm", "r");
	EXPECT(f && fgets(comm, sizeof(comm), f));
	if (f)
		fclose(f);
	comm[strcspn(comm, "\n")] = 0;

	EXPECT(hsaKmtOpenSMI(0, &fd) == HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED);
	if (hsaKmtOpenKFD() != HSAKMT_STATUS_SUCCESS || hsaKmtAcquireSystemProperties(&sys) != HSAKMT_STATUS_SUCCESS) {
		printf("cannot open\n");
		return 1;
	}
	for (n = sys.NumNodes; n-- > 0;) {
		EXPECT(hsaKmtGetNodeProperties(n, &props) == HSAKMT_STATUS_SUCCESS);
		if (props.KFDGpuID)
			gpu = n;
		else
			cpu = n;
	}
	EXPECT(gpu != cpu);
	EXPECT(hsaKmtGetNodeProperties(gpu, &props) == HSAKMT_STATUS_SUCCESS);
	if (getenv("SMI_OLD_KFD")) {
		/* A KFD before 1.3 has no SMI_EVENTS ioctl (ENOTTY): ERROR, as upstream. */
		EXPECT(hsaKmtOpenSMI(gpu, &fd) == HSAKMT_STATUS_ERROR);
		EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
		if (!failures)
			printf("smi: OK\n");
		return failures ? 1 : 0;
	}

	/* Statuses: upstream's validate_nodeid, then the KFD (a CPU has no SMI file: EINVAL → ERROR). */
	EXPECT(hsaKmtOpenSMI(sys.NumNodes, &fd) == HSAKMT_STATUS_INVALID_NODE_UNIT);
	EXPECT(hsaKmtOpenSMI(cpu, &fd) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtOpenSMI(gpu, NULL) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtOpenSMI(gpu, &fd) == HSAKMT_STATUS_SUCCESS);
	EXPECT(fd >= 0);

	/* Empty: EAGAIN at once, not readable. */
	char c;
	errno = 0;
	EXPECT(read(fd, &c, 1) == -1 && errno == EAGAIN);
	EXPECT(!wait_readable(fd, 0));

	/* The kernel takes any 64-bit mask: bits of event ids that do not exist (40 and 62 here)
	 * are kept and simply never match an event. */
	uint64_t mask = MASK(VMFAULT) | MASK(QUEUE_EVICTION) | MASK(PRE_RESET) | MASK(POST_RESET) | (1ull << 40) | (1ull << 62);
	EXPECT(write(fd, &mask, sizeof(mask)) == 8);

	/* A GPU page fault: SDMA FENCE (opcode 5) to an address nothing maps. */
	uint32_t *ring = gpu_host_memory(gpu, 4096);
	EXPECT(ring != NULL);
	HsaQueueResource r;
	memset(&r, 0, sizeof(r));
	EXPECT(hsaKmtCreateQueue(gpu, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_NORMAL, ring, 4096, NULL, &r) ==
	       HSAKMT_STATUS_SUCCESS);
	uint64_t bad = 0x7ff000000000ull;
	uint32_t fence[] = { 5, (uint32_t)bad, (uint32_t)(bad >> 32), 0xBAD };
	memcpy(ring, fence, sizeof(fence));
	__atomic_store_n(r.Queue_write_ptr_aql, (HSAuint64)sizeof(fence), __ATOMIC_RELEASE);
	__atomic_store_n(r.Queue_DoorBell_aql, (HSAuint64)sizeof(fence), __ATOMIC_RELEASE);
	EXPECT(wait_readable(fd, 5000));
	buf[0] = 0;
	EXPECT(wait_event(fd, VMFAULT, buf, sizeof(buf)));
	/* "1 <pid hex>:<task name>\n" */
	unsigned id = 0, pid = 0;
	char task[32] = { 0 };
	EXPECT(sscanf(buf, "%x %x:%31[^\n]", &id, &pid, task) == 3);
	EXPECT(id == VMFAULT);
	EXPECT(pid == (unsigned)getpid());
	EXPECT(strcmp(task, comm) == 0);
	EXPECT(strchr(buf, '\n') == buf + strlen(buf) - 1); /* one record, nothing else */
	EXPECT(hsaKmtDestroyQueue(r.QueueId) == HSAKMT_STATUS_SUCCESS);
	EXPECT(read(fd, &c, 1) == -1 && errno == EAGAIN);

	/* A hung SDMA queue (opcode 0xff) found at DestroyQueue. */
	int sdma_reset = props.Capability2.ui32.PerSDMAQueueResetSupported;
	memset(&r, 0, sizeof(r));
	memset(ring, 0, 4096);
	EXPECT(hsaKmtCreateQueue(gpu, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_NORMAL, ring, 4096, NULL, &r) ==
	       HSAKMT_STATUS_SUCCESS);
	uint32_t hang[] = { 0xff, 0, 0, 0 };
	memcpy(ring, hang, sizeof(hang));
	__atomic_store_n(r.Queue_write_ptr_aql, (HSAuint64)sizeof(hang), __ATOMIC_RELEASE);
	__atomic_store_n(r.Queue_DoorBell_aql, (HSAuint64)sizeof(hang), __ATOMIC_RELEASE);
	struct timespec ts = { 0, 50000000 };
	nanosleep(&ts, NULL);
	EXPECT(hsaKmtDestroyQueue(r.QueueId) == (sdma_reset ? HSAKMT_STATUS_SUCCESS : HSAKMT_STATUS_ERROR));
	buf[0] = 0;
	if (sdma_reset) {
		EXPECT(!wait_readable(fd, 100)); /* the queue alone was reset: no GPU reset */
	} else {
		EXPECT(wait_event(fd, POST_RESET, buf, sizeof(buf)));
		unsigned pre_seq = 0, post_seq = 0, ev_gpu = 0, trigger = 99;
		long long ns = 0;
		int ev_pid = 0;
		char cause[32] = { 0 };
		char *l1 = buf, *l2 = l1 ? strchr(l1, '\n') : NULL, *l3 = l2 ? strchr(l2 + 1, '\n') : NULL;
		EXPECT(l2 && l3);
		if (l2 && l3) {
			EXPECT(sscanf(l1, "3 %x %31[^\n]", &pre_seq, cause) == 2);
			EXPECT(strcmp(cause, "HWS hang") == 0);
			EXPECT(sscanf(l2 + 1, "9 %lld -%d %x %u", &ns, &ev_pid, &ev_gpu, &trigger) == 4);
			EXPECT(ev_pid == getpid());
			EXPECT(ev_gpu == props.KFDGpuID);
			EXPECT(trigger == 3); /* KFD_QUEUE_EVICTION_TRIGGER_SUSPEND */
			struct timespec now;
			clock_gettime(CLOCK_BOOTTIME, &now);
			long long now_ns = now.tv_sec * 1000000000ll + now.tv_nsec;
			EXPECT(ns > 0 && ns <= now_ns && now_ns - ns < 10000000000ll);
			EXPECT(sscanf(l3 + 1, "4 %x", &post_seq) == 1);
			EXPECT(pre_seq >= 1 && post_seq == pre_seq);
		}
	}

	/* UNMAP_FROM_GPU: not in the first client's mask; a second client asks for it. Where the
	 * CWSR area of an AQL queue is an SVM range, destroying the queue unmaps it. */
	int fd2 = -1;
	EXPECT(hsaKmtOpenSMI(gpu, &fd2) == HSAKMT_STATUS_SUCCESS && fd2 >= 0 && fd2 != fd);
	uint64_t mask2 = MASK(UNMAP_FROM_GPU);
	EXPECT(write(fd2, &mask2, sizeof(mask2)) == 8);
	uint64_t *ptrs = gpu_host_memory(gpu, 4096);
	uint8_t *ring3 = gpu_host_memory(gpu, 4096);
	HsaQueueResource q;
	memset(&q, 0, sizeof(q));
	q.Queue_read_ptr_aql = &ptrs[0];
	q.Queue_write_ptr_aql = &ptrs[1];
	EXPECT(hsaKmtCreateQueue(gpu, HSA_QUEUE_COMPUTE_AQL, 100, HSA_QUEUE_PRIORITY_NORMAL, ring3, 4096, NULL, &q) ==
	       HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtDestroyQueue(q.QueueId) == HSAKMT_STATUS_SUCCESS);
	const char *want_unmap = getenv("EXPECT_SVM_CWSR");
	buf[0] = 0;
	if (want_unmap && want_unmap[0] == '1') {
		EXPECT(wait_event(fd2, UNMAP_FROM_GPU, buf, sizeof(buf)));
		long long ns = 0;
		int upid = 0;
		unsigned long long page = 0, pages = 0;
		unsigned ugpu = 0, trigger = 99;
		EXPECT(sscanf(buf, "b %lld -%d @%llx(%llx) %x %u", &ns, &upid, &page, &pages, &ugpu, &trigger) == 6);
		EXPECT(upid == getpid() && ugpu == props.KFDGpuID && trigger == 2); /* UNMAP_FROM_CPU */
		EXPECT(pages > 0 && page > 0);
	} else {
		EXPECT(!wait_readable(fd2, 100));
	}
	EXPECT(read(fd, &c, 1) == -1 && errno == EAGAIN); /* not asked for */

	/* PROCESS_END when the process lets the KFD go (the file outlives it). */
	uint64_t mask3 = MASK(PROCESS_END);
	EXPECT(write(fd2, &mask3, sizeof(mask3)) == 8);
	EXPECT(close(fd) == 0);
	EXPECT(hsaKmtReleaseSystemProperties() == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	buf[0] = 0;
	const char *end = wait_event(fd2, PROCESS_END, buf, sizeof(buf));
	EXPECT(end != NULL);
	pid = 0;
	memset(task, 0, sizeof(task));
	EXPECT(end && sscanf(end, "d %x %31[^\n]", &pid, task) == 2);
	EXPECT(pid == (unsigned)getpid() && strcmp(task, comm) == 0);
	EXPECT(read(fd2, &c, 1) == -1 && errno == EAGAIN);
	EXPECT(close(fd2) == 0);

	if (!failures)
		printf("smi: OK\n");
	return failures ? 1 : 0;
}
