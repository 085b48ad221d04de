/* IPC across fork as a C program does it: the parent exports a VRAM buffer with
 * hsaKmtShareMemory, a forked child reopens the thunk, imports the handle with
 * hsaKmtRegisterSharedHandle and reads the parent's bytes; a forged handle is refused. */
#include <hsakmt/hsakmt.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;
#define EXPECT(cond)                                                   \
	do {                                                               \
		if (!(cond)) {                                                 \
			printf("FAIL line %d (pid %d): %s\n", __LINE__, (int)getpid(), #cond); \
			failures++;                                                \
		}                                                              \
	} while (0)

#define SIZE (64 << 10)

int main(void)
{
	HsaSystemProperties sys;
	HsaNodeProperties p;
	HSAuint32 gpu = 0;
	HsaMemFlags f;
	void *buf = NULL;
	HsaSharedMemoryHandle h;

	EXPECT(hsaKmtOpenKFD() == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtAcquireSystemProperties(&sys) == HSAKMT_STATUS_SUCCESS);
	for (HSAuint32 n = 0; n < sys.NumNodes && !gpu; n++)
		if (hsaKmtGetNodeProperties(n, &p) == HSAKMT_STATUS_SUCCESS && p.KFDGpuID)
			gpu = n;
	memset(&f, 0, sizeof(f));
	f.ui32.NonPaged = 1;
	f.ui32.HostAccess = 1;
	f.ui32.CoarseGrain = 1;
	EXPECT(hsaKmtAllocMemory(gpu, SIZE, f, &buf) == HSAKMT_STATUS_SUCCESS);
	if (!buf)
		return 1;
	for (int i = 0; i < SIZE; i++)
		((unsigned char *)buf)[i] = (unsigned char)(i * 13 + 5);
	EXPECT(hsaKmtShareMemory(buf, SIZE, NULL) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtShareMemory((char *)buf + 4096, SIZE, &h) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtShareMemory(buf, SIZE, &h) == HSAKMT_STATUS_SUCCESS);

	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		void *addr = NULL;
		HSAuint64 size = 0;
		HsaSystemProperties cs;
		EXPECT(hsaKmtRegisterSharedHandle(&h, &addr, &size) == HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED);
		EXPECT(hsaKmtOpenKFD() == HSAKMT_STATUS_SUCCESS);
		EXPECT(hsaKmtAcquireSystemProperties(&cs) == HSAKMT_STATUS_SUCCESS);
		/* a forged handle: same size and GPU, other share words */
		HsaSharedMemoryHandle forged;
		memcpy(forged, h, sizeof(forged));
		forged[0] ^= 0x5a5a5a5a;
		forged[2] += 1;
		EXPECT(hsaKmtRegisterSharedHandle(&forged, &addr, &size) == HSAKMT_STATUS_ERROR);
		EXPECT(hsaKmtRegisterSharedHandle(NULL, &addr, &size) == HSAKMT_STATUS_INVALID_PARAMETER);
		EXPECT(hsaKmtRegisterSharedHandle(&h, &addr, &size) == HSAKMT_STATUS_SUCCESS);
		EXPECT(size == SIZE);
		if (addr && size == SIZE) {
			int same = 1;
			for (int i = 0; i < SIZE; i++)
				same &= ((unsigned char *)addr)[i] == (unsigned char)(i * 13 + 5);
			EXPECT(same);
			HsaPointerInfo info;
			EXPECT(hsaKmtQueryPointerInfo(addr, &info) == HSAKMT_STATUS_SUCCESS);
			EXPECT(info.Type == HSA_POINTER_REGISTERED_SHARED);
			EXPECT(hsaKmtMapMemoryToGPU(addr, size, NULL) == HSAKMT_STATUS_SUCCESS);
			EXPECT(hsaKmtUnmapMemoryToGPU(addr) == HSAKMT_STATUS_SUCCESS);
			EXPECT(hsaKmtDeregisterMemory(addr) == HSAKMT_STATUS_SUCCESS);
		}
		EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
		fflush(stdout);
		_exit(failures != 0);
	}
	int status = 0;
	EXPECT(waitpid(pid, &status, 0) == pid);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT(hsaKmtFreeMemory(buf, SIZE) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	printf(failures ? "ipc_fork: FAILED\n" : "ipc_fork: OK\n");
	return failures != 0;
}
