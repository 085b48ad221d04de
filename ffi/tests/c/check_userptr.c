/* HSA_CHECK_USERPTR=1: registering user memory touches its pages first; a range with a hole
 * is refused with an error status (never a crash), a good one registers. */
#include "expect.h"
#include <hsakmt/hsakmt.h>
#include <stdio.h>
#include <sys/mman.h>

int main(void)
{
	HsaSystemProperties sys;
	EXPECT(hsaKmtOpenKFD() == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtAcquireSystemProperties(&sys) == HSAKMT_STATUS_SUCCESS);
	char *p = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	EXPECT(p != MAP_FAILED);
	EXPECT(munmap(p + 4096, 4096) == 0);
	EXPECT(hsaKmtRegisterMemory(p, 3 * 4096) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtRegisterMemory(p + 8192, 4096) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtDeregisterMemory(p + 8192) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	printf(failures ? "check_userptr: FAILED\n" : "check_userptr: OK\n");
	return failures != 0;
}
