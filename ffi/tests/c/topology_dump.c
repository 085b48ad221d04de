/* Dumps what the C API reports, one fact per line, for the Rust harness to check against
 * facts read by hand from the fixture files. Written against upstream's API names only. */
#include <hsakmt/hsakmt.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                        \
	do {                                                                   \
		HSAKMT_STATUS s_ = (call);                                         \
		if (s_ != HSAKMT_STATUS_SUCCESS) {                                 \
			printf("FAIL %s = %d\n", #call, (int)s_);                      \
			return 1;                                                      \
		}                                                                  \
	} while (0)

int main(void)
{
	HsaSystemProperties sys;
	CHECK(hsaKmtOpenKFD());
	CHECK(hsaKmtAcquireSystemProperties(&sys));
	printf("nodes %u\n", sys.NumNodes);
	printf("platform_rev %u\n", sys.PlatformRev);
	for (HSAuint32 n = 0; n < sys.NumNodes; n++) {
		HsaNodeProperties p;
		CHECK(hsaKmtGetNodeProperties(n, &p));
		printf("node %u cpu_cores %u simd %u gfx %u.%u.%u gpu_id %u hive %llu sdma %u xgmi_sdma %u "
		       "location %u render_minor %d device %u banks %u caches %u links %u ogfx %u.%u.%u svm %u\n",
		       n, p.NumCPUCores, p.NumFComputeCores, p.EngineId.ui32.Major, p.EngineId.ui32.Minor,
		       p.EngineId.ui32.Stepping, p.KFDGpuID, (unsigned long long)p.HiveID, p.NumSdmaEngines,
		       p.NumSdmaXgmiEngines, p.LocationId, p.DrmRenderMinor, p.DeviceId, p.NumMemoryBanks,
		       p.NumCaches, p.NumIOLinks, p.OverrideEngineId.ui32.Major, p.OverrideEngineId.ui32.Minor,
		       p.OverrideEngineId.ui32.Stepping, p.Capability.ui32.SVMAPISupported);
		HsaMemoryProperties *m = calloc(p.NumMemoryBanks + 1, sizeof(*m));
		CHECK(hsaKmtGetNodeMemoryProperties(n, p.NumMemoryBanks, m));
		for (HSAuint32 i = 0; i < p.NumMemoryBanks; i++)
			printf("node %u bank %u heap %u size %llu\n", n, i, m[i].HeapType,
			       (unsigned long long)m[i].SizeInBytes);
		free(m);
		HsaIoLinkProperties *l = calloc(p.NumIOLinks + 1, sizeof(*l));
		CHECK(hsaKmtGetNodeIoLinkProperties(n, p.NumIOLinks, l));
		for (HSAuint32 i = 0; i < p.NumIOLinks; i++)
			printf("node %u link %u type %u from %u to %u weight %u min_bw %u max_bw %u\n", n, i,
			       l[i].IoLinkType, l[i].NodeFrom, l[i].NodeTo, l[i].Weight, l[i].MinimumBandwidth,
			       l[i].MaximumBandwidth);
		free(l);
	}
	CHECK(hsaKmtReleaseSystemProperties());
	CHECK(hsaKmtCloseKFD());
	printf("done\n");
	return 0;
}
