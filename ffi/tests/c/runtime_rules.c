/* RuntimeEnable / RuntimeDisable / GetRuntimeCapabilities as ROCr calls them. argv[1] is the
 * status the first RuntimeEnable must return (0 on a KFD >= 1.13, 11 NOT_SUPPORTED below). */
#include "expect.h"
#include <hsakmt/hsakmt.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int want = argc > 1 ? atoi(argv[1]) : 0;
	HSAuint32 caps = 0xdead;
	HsaSystemProperties sys;

	EXPECT(hsaKmtRuntimeEnable(NULL, false) == HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED);
	EXPECT(hsaKmtOpenKFD() == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtAcquireSystemProperties(&sys) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtGetRuntimeCapabilities(NULL) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtGetRuntimeCapabilities(&caps) == HSAKMT_STATUS_SUCCESS);
	EXPECT(caps == 0); /* nothing enabled yet */
	HSAKMT_STATUS s = hsaKmtRuntimeEnable(&sys, true);
	printf("RuntimeEnable = %d\n", (int)s);
	EXPECT((int)s == want);
	if (want == HSAKMT_STATUS_SUCCESS) {
		/* the KFD refuses a second enable with EBUSY: upstream maps that to UNAVAILABLE */
		EXPECT(hsaKmtRuntimeEnable(&sys, true) == HSAKMT_STATUS_UNAVAILABLE);
		EXPECT(hsaKmtRuntimeDisable() == HSAKMT_STATUS_SUCCESS);
		EXPECT(hsaKmtRuntimeEnable(&sys, false) == HSAKMT_STATUS_SUCCESS);
		EXPECT(hsaKmtRuntimeDisable() == HSAKMT_STATUS_SUCCESS);
	} else {
		EXPECT(hsaKmtRuntimeDisable() == (HSAKMT_STATUS)want);
	}
	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	printf(failures ? "runtime_rules: FAILED\n" : "runtime_rules: OK\n");
	return failures != 0;
}
