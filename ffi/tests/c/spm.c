/* SPM through the public API on the model (model/SPM.md): samples streaming into the destination
 * buffer while SDMA work runs, their counters growing with it; the retired buffer's header;
 * data loss with a small buffer; a timeout with no work; SPM held by another process (fork);
 * release; bad input. Exit 0 on success. */
#include "expect.h"
#include "gpu_memory.h"
#include <hsakmt/hsakmt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The model's sample (model/SPM.md): timestamp, sequence, format, counter count, counters. */
struct sample {
	uint64_t ts;
	uint32_t seq;
	uint16_t format, count;
	uint64_t aql, pm4, sdma, dispatches, waves, bytes_written;
};
struct header {
	uint32_t version, bytes_copied, has_data_loss, reserved[5];
};

static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&t, NULL);
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(void)
{
	HsaSystemProperties sys;
	HsaNodeProperties props;
	HSAuint32 gpu = 0;

	EXPECT(hsaKmtSPMAcquire(1) == HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED);
	if (hsaKmtOpenKFD() != HSAKMT_STATUS_SUCCESS || hsaKmtAcquireSystemProperties(&sys) != HSAKMT_STATUS_SUCCESS) {
		printf("cannot open\n");
		return 1;
	}
	gpu = first_gpu_node(&sys, &props);
	EXPECT(gpu != 0);

	if (getenv("SPM_MAINLINE")) {
		/* A mainline KFD has no RLC_SPM ioctl: ENOTTY, ERROR. */
		EXPECT(hsaKmtSPMAcquire(gpu) == HSAKMT_STATUS_ERROR);
		EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
		printf("spm: OK\n");
		return 0;
	}

	/* Bad input before acquiring. */
	HSAuint32 timeout = 0, copied = 7;
	bool loss = true;
	static uint8_t big[64 << 10];
	EXPECT(hsaKmtSPMAcquire(999) == HSAKMT_STATUS_INVALID_NODE_UNIT);
	EXPECT(hsaKmtSPMAcquire(0) == HSAKMT_STATUS_ERROR); /* a CPU node: gpu_id 0, EINVAL */
	EXPECT(hsaKmtSPMRelease(gpu) == HSAKMT_STATUS_ERROR); /* not acquired */
	EXPECT(hsaKmtSPMSetDestBuffer(gpu, sizeof(big), &timeout, &copied, big, &loss) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtSPMSetDestBuffer(999, sizeof(big), &timeout, &copied, big, &loss) == HSAKMT_STATUS_INVALID_NODE_UNIT);

	EXPECT(hsaKmtSPMAcquire(gpu) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtSPMAcquire(gpu) == HSAKMT_STATUS_ERROR); /* EBUSY: already ours */
	EXPECT(hsaKmtSPMSetDestBuffer(gpu, sizeof(big), NULL, &copied, big, &loss) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtSPMSetDestBuffer(gpu, sizeof(big), &timeout, NULL, big, &loss) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtSPMSetDestBuffer(gpu, sizeof(big), &timeout, &copied, big, NULL) == HSAKMT_STATUS_INVALID_PARAMETER);
	/* Too small: no room past the 32-byte header once rounded down to 32 bytes. */
	EXPECT(hsaKmtSPMSetDestBuffer(gpu, 63, &timeout, &copied, big, &loss) == HSAKMT_STATUS_ERROR);

	/* Another process cannot take the GPU's SPM while we hold it. */
	pid_t child = fork();
	if (child == 0) {
		int ok = hsaKmtOpenKFD() == HSAKMT_STATUS_SUCCESS && hsaKmtAcquireSystemProperties(&sys) == HSAKMT_STATUS_SUCCESS &&
			 hsaKmtSPMAcquire(gpu) == HSAKMT_STATUS_ERROR && hsaKmtSPMRelease(gpu) == HSAKMT_STATUS_ERROR;
		_exit(ok ? 0 : 1);
	}
	int wst = 0;
	EXPECT(waitpid(child, &wst, 0) == child && WIFEXITED(wst) && WEXITSTATUS(wst) == 0);

	/* Streaming while SDMA work runs: CONSTANT_FILLs (op 11), each with a FENCE (op 5). */
	HsaQueueResource r;
	uint32_t *ring = gpu_host_memory(gpu, 4096);
	uint32_t *dst = gpu_host_memory(gpu, 4096);
	EXPECT(ring && dst);
	memset(&r, 0, sizeof(r));
	EXPECT(hsaKmtCreateQueue(gpu, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_NORMAL, ring, 4096, NULL, &r) == HSAKMT_STATUS_SUCCESS);
	memset(big, 0xee, sizeof(big));
	timeout = 0;
	EXPECT(hsaKmtSPMSetDestBuffer(gpu, sizeof(big), &timeout, &copied, big, &loss) == HSAKMT_STATUS_SUCCESS);
	EXPECT(copied == 0 && !loss); /* no previous buffer */
	uint64_t wptr = 0, a = (uintptr_t)dst;
	for (int i = 0; i < 20; i++) {
		uint32_t pk[] = { 5, (uint32_t)a, (uint32_t)(a >> 32), (uint32_t)i + 1 };
		memcpy((char *)ring + wptr, pk, sizeof(pk));
		wptr += sizeof(pk);
		__atomic_store_n(r.Queue_write_ptr_aql, wptr, __ATOMIC_RELEASE);
		EXPECT(hsaKmtQueueRingDoorbell(r.QueueId, wptr) == HSAKMT_STATUS_SUCCESS);
		for (int k = 0; k < 2000 && __atomic_load_n(&dst[0], __ATOMIC_ACQUIRE) != (uint32_t)i + 1; k++)
			sleep_ms(1);
		EXPECT(dst[0] == (uint32_t)i + 1);
		sleep_ms(3);
	}
	timeout = 5000;
	double t0 = now_ms();
	uint8_t *second = malloc(sizeof(big));
	EXPECT(second != NULL);
	EXPECT(hsaKmtSPMSetDestBuffer(gpu, sizeof(big), &timeout, &copied, second, &loss) == HSAKMT_STATUS_SUCCESS);
	/* 64 KiB at 1 ms per 64-byte sample fills in about a second: the call returns then. */
	EXPECT(now_ms() - t0 < 4500);
	struct header *h = (struct header *)big;
	EXPECT(h->version == 4 && h->bytes_copied == copied && h->has_data_loss == (uint32_t)loss);
	EXPECT(copied == sizeof(big) - 32); /* filled */
	struct sample *s = (struct sample *)(big + 32);
	size_t ns = copied / sizeof(struct sample);
	EXPECT(ns == (sizeof(big) - 32) / 64 && sizeof(struct sample) == 64);
	EXPECT(s[0].format == 1 && s[0].count == 6);
	for (size_t i = 1; i < ns; i++) {
		EXPECT(s[i].seq == s[i - 1].seq + 1);
		EXPECT(s[i].ts > s[i - 1].ts);
		EXPECT(s[i].sdma >= s[i - 1].sdma && s[i].aql == s[0].aql && s[i].dispatches == s[0].dispatches);
	}
	/* The 20 FENCE packets were counted as they ran (3 ms apart, sampled every 1 ms): the SDMA
	 * count climbs through most of its values along the stream and ends at 20. */
	int steps = 0;
	for (size_t i = 1; i < ns; i++)
		steps += s[i].sdma != s[i - 1].sdma;
	EXPECT(s[0].sdma < 5 && s[ns - 1].sdma == 20 && steps >= 15);
	/* Timestamps at the GPU clock (100 MHz): about 1 ms apart. */
	uint64_t dt = s[ns - 1].ts - s[0].ts;
	EXPECT(dt >= (ns - 1) * 100000ull * 9 / 10);

	/* Timeout with no work: 'second' (64 KiB) cannot fill in 100 ms; the call returns after the
	 * timeout (success, timeout not written back), the samples' counters unchanged. */
	timeout = 100;
	t0 = now_ms();
	static uint8_t third[64 << 10];
	EXPECT(hsaKmtSPMSetDestBuffer(gpu, sizeof(third), &timeout, &copied, third, &loss) == HSAKMT_STATUS_SUCCESS);
	double waited = now_ms() - t0;
	EXPECT(waited >= 95 && timeout == 100);
	EXPECT(copied > 0 && copied < sizeof(third) - 32 && !loss);
	EXPECT(((struct header *)second)->bytes_copied == copied);
	/* A byte stream: the sample cut at the end of the full buffer continues here first. */
	size_t cut = (64 - (sizeof(big) - 32) % 64) % 64;
	EXPECT(cut == 32);
	s = (struct sample *)(second + 32 + cut);
	ns = (copied - cut) / 64;
	EXPECT(ns > 50 && s[0].count == 6);
	for (size_t i = 1; i < ns; i++)
		EXPECT(s[i].sdma == s[0].sdma && s[i].ts > s[i - 1].ts);

	/* Data loss: a buffer of 32 + 128 bytes (two samples) fills at once; the stream goes on
	 * into the model's 16 KiB ring, which overflows within half a second. */
	uint8_t *tiny = gpu_host_memory(gpu, 4096);
	timeout = 0;
	EXPECT(hsaKmtSPMSetDestBuffer(gpu, 160, &timeout, &copied, tiny, &loss) == HSAKMT_STATUS_SUCCESS);
	sleep_ms(600);
	timeout = 0;
	EXPECT(hsaKmtSPMSetDestBuffer(gpu, sizeof(big), &timeout, &copied, big, &loss) == HSAKMT_STATUS_SUCCESS);
	EXPECT(copied == 128 && loss);
	EXPECT(((struct header *)tiny)->bytes_copied == 128 && ((struct header *)tiny)->has_data_loss == 1);

	/* An unmapped destination: its header cannot be written when it is retired (EFAULT). */
	void *gone = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	EXPECT(gone != MAP_FAILED && munmap(gone, 8192) == 0);
	EXPECT(hsaKmtSPMSetDestBuffer(gpu, 8192, &timeout, &copied, gone, &loss) == HSAKMT_STATUS_SUCCESS);
	sleep_ms(20);
	EXPECT(hsaKmtSPMSetDestBuffer(gpu, 8192, &timeout, &copied, NULL, &loss) == HSAKMT_STATUS_ERROR);
	EXPECT(loss); /* the samples could not be copied */

	/* Release stops the stream: the buffer stops changing. */
	memset(big, 0, sizeof(big));
	EXPECT(hsaKmtSPMSetDestBuffer(gpu, sizeof(big), &timeout, &copied, big, &loss) == HSAKMT_STATUS_SUCCESS);
	sleep_ms(20);
	EXPECT(hsaKmtSPMRelease(gpu) == HSAKMT_STATUS_SUCCESS);
	static uint8_t snap[64 << 10];
	memcpy(snap, big, sizeof(big));
	EXPECT(((struct sample *)(big + 32))->count == 6);
	sleep_ms(30);
	EXPECT(memcmp(snap, big, sizeof(big)) == 0);
	EXPECT(hsaKmtSPMRelease(gpu) == HSAKMT_STATUS_ERROR);

	/* Released: another process may take it now, and we again after it exits. */
	child = fork();
	if (child == 0) {
		int ok = hsaKmtOpenKFD() == HSAKMT_STATUS_SUCCESS && hsaKmtAcquireSystemProperties(&sys) == HSAKMT_STATUS_SUCCESS &&
			 hsaKmtSPMAcquire(gpu) == HSAKMT_STATUS_SUCCESS && hsaKmtSPMRelease(gpu) == HSAKMT_STATUS_SUCCESS;
		_exit(ok ? 0 : 1);
	}
	EXPECT(waitpid(child, &wst, 0) == child && WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
	EXPECT(hsaKmtSPMAcquire(gpu) == HSAKMT_STATUS_SUCCESS);
	/* CloseKFD releases it (a second process can acquire afterwards). */
	EXPECT(hsaKmtDestroyQueue(r.QueueId) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	child = fork();
	if (child == 0) {
		int ok = hsaKmtOpenKFD() == HSAKMT_STATUS_SUCCESS && hsaKmtAcquireSystemProperties(&sys) == HSAKMT_STATUS_SUCCESS &&
			 hsaKmtSPMAcquire(gpu) == HSAKMT_STATUS_SUCCESS;
		_exit(ok ? 0 : 1);
	}
	EXPECT(waitpid(child, &wst, 0) == child && WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
	free(second);
	if (failures)
		return 1;
	printf("spm: OK\n");
	return 0;
}
