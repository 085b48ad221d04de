/* OpenClose rules as a C user sees them: errno is never changed by a call, a forked child
 * that inherited an open thunk gets KERNEL_IO_CHANNEL_NOT_OPENED until it opens again, and
 * both processes keep working. Exit 0 on success; prints what failed otherwise. */
#include "expect.h"
#include <errno.h>
#include <stdint.h>
#include <hsakmt/hsakmt.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	HsaVersionInfo v;
	HsaSystemProperties sys, child_sys;

	errno = 4242;
	EXPECT(hsaKmtGetVersion(&v) == HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED);
	EXPECT(errno == 4242);
	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED);
	EXPECT(hsaKmtOpenKFD() == HSAKMT_STATUS_SUCCESS);
	EXPECT(errno == 4242);
	EXPECT(hsaKmtOpenKFD() == HSAKMT_STATUS_KERNEL_ALREADY_OPENED);
	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtGetVersion(&v) == HSAKMT_STATUS_SUCCESS);
	EXPECT(v.KernelInterfaceMajorVersion == 1);
	EXPECT(hsaKmtAcquireSystemProperties(&sys) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtGetNodeProperties(sys.NumNodes, NULL) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(errno == 4242);

	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		int bad = 0;
		HsaNodeProperties p;
		if (hsaKmtGetVersion(&v) != HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED) bad |= 1;
		if (hsaKmtAcquireSystemProperties(&child_sys) != HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED) bad |= 2;
		if (hsaKmtGetNodeProperties(0, &p) != HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED) bad |= 4;
		/* the child may reopen, and starts clean: SUCCESS, not ALREADY_OPENED */
		if (hsaKmtOpenKFD() != HSAKMT_STATUS_SUCCESS) bad |= 8;
		if (hsaKmtAcquireSystemProperties(&child_sys) != HSAKMT_STATUS_SUCCESS) bad |= 16;
		if (child_sys.NumNodes != sys.NumNodes) bad |= 32;
		if (hsaKmtGetNodeProperties(0, &p) != HSAKMT_STATUS_SUCCESS) bad |= 64;
		if (hsaKmtCloseKFD() != HSAKMT_STATUS_SUCCESS) bad |= 128;
		_exit(bad);
	}
	int status = 0;
	EXPECT(pid > 0);
	EXPECT(waitpid(pid, &status, 0) == pid);
	EXPECT(WIFEXITED(status));
	if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
		printf("child failures mask %d\n", WEXITSTATUS(status));
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	/* the parent is unaffected */
	EXPECT(hsaKmtGetVersion(&v) == HSAKMT_STATUS_SUCCESS);
	HsaNodeProperties p0;
	EXPECT(hsaKmtGetNodeProperties(0, &p0) == HSAKMT_STATUS_SUCCESS);
	HsaClockCounters c1, c2;
	EXPECT(hsaKmtGetClockCounters(sys.NumNodes - 1, &c1) == HSAKMT_STATUS_SUCCESS);
	usleep(20000);
	EXPECT(hsaKmtGetClockCounters(sys.NumNodes - 1, &c2) == HSAKMT_STATUS_SUCCESS);
	/* the GPU counter ticks at the node's wall-clock frequency (the last node is a GPU) */
	uint64_t freq = 0, cpu_freq = 1;
	EXPECT(hsaKmtGetNodeWallclockFrequency(sys.NumNodes - 1, &freq) == HSAKMT_STATUS_SUCCESS);
	EXPECT(freq > 0);
	EXPECT(hsaKmtGetNodeWallclockFrequency(0, &cpu_freq) == HSAKMT_STATUS_SUCCESS);
	EXPECT(cpu_freq == 0);
	EXPECT(hsaKmtGetNodeWallclockFrequency(sys.NumNodes, &freq) == HSAKMT_STATUS_INVALID_NODE_UNIT);
	if (c2.CPUClockCounter > c1.CPUClockCounter && freq > 0) {
		double measured = (double)(c2.GPUClockCounter - c1.GPUClockCounter) * 1e9 /
				  (double)(c2.CPUClockCounter - c1.CPUClockCounter);
		EXPECT(measured > 0.95 * (double)freq && measured < 1.05 * (double)freq);
	}
	EXPECT(c2.CPUClockCounter >= c1.CPUClockCounter);
	EXPECT(c2.GPUClockCounter >= c1.GPUClockCounter);
	EXPECT(c1.SystemClockFrequencyHz == 1000000000ull);
	EXPECT(hsaKmtReleaseSystemProperties() == HSAKMT_STATUS_SUCCESS);
	/* a released snapshot can be acquired again */
	EXPECT(hsaKmtAcquireSystemProperties(&sys) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtGetVersion(&v) == HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED);
	EXPECT(errno == 4242);
	printf(failures ? "openclose_rules: FAILED\n" : "openclose_rules: OK\n");
	return failures != 0;
}
