/* RuntimeEnable / RuntimeDisable / GetRuntimeCapabilities as ROCr calls them, and what a GPU
 * core dump reads of them (GetCoreRuntimeInfo, GetCoreDeviceInfo: checked against the
 * debugger interface's own answers, DbgEnable's runtime info and DbgGetDeviceData's snapshot,
 * and the node properties). argv[1] is the status the first RuntimeEnable must return (0 on a
 * KFD >= 1.13, 11 NOT_SUPPORTED below). */
#include "expect.h"
#include <hsakmt/hsakmt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* GetCoreDeviceInfo of every GPU node against the node's properties and the debugger's device
 * snapshot (DbgEnable on oneself, DbgGetDeviceData). */
static void device_info(const HsaSystemProperties *sys)
{
	struct kfd_dbg_device_info_entry d;
	void *rinfo = NULL, *snap = NULL;
	HSAuint32 rsize = 0, n = 0, esz = 0, gpus = 0;

	EXPECT(hsaKmtGetCoreDeviceInfo(0, &d) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtGetCoreDeviceInfo(0xfffffff0u, &d) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtDbgEnable(&rinfo, &rsize) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtDbgGetDeviceData(&snap, &n, &esz) == HSAKMT_STATUS_SUCCESS);
	EXPECT(esz == sizeof(d));
	for (HSAuint32 node = 0; node < sys->NumNodes; node++) {
		HsaNodeProperties p;
		EXPECT(hsaKmtGetNodeProperties(node, &p) == HSAKMT_STATUS_SUCCESS);
		if (!p.KFDGpuID)
			continue;
		gpus++;
		EXPECT(hsaKmtGetCoreDeviceInfo(p.KFDGpuID, NULL) == HSAKMT_STATUS_INVALID_PARAMETER);
		memset(&d, 0xa5, sizeof(d));
		EXPECT(hsaKmtGetCoreDeviceInfo(p.KFDGpuID, &d) == HSAKMT_STATUS_SUCCESS);
		EXPECT(d.gpu_id == p.KFDGpuID && d.device_id == p.DeviceId && d.vendor_id == p.VendorId);
		EXPECT(d.location_id == p.LocationId && d.simd_count == p.NumFComputeCores);
		EXPECT(d.gfx_target_version ==
		       p.EngineId.ui32.Major * 10000u + p.EngineId.ui32.Minor * 100u + p.EngineId.ui32.Stepping);
		EXPECT(d.num_xcc == p.NumXcc && d.capability == p.Capability.Value);
		EXPECT(d.lds_base != 0 && d.lds_limit > d.lds_base && d.scratch_limit > d.scratch_base);
		const struct kfd_dbg_device_info_entry *e = NULL;
		for (HSAuint32 i = 0; snap && i < n; i++) {
			const struct kfd_dbg_device_info_entry *c = (const void *)((const char *)snap + (size_t)i * esz);
			if (c->gpu_id == p.KFDGpuID)
				e = c;
		}
		EXPECT(e != NULL);
		if (e) {
			EXPECT(e->lds_base == d.lds_base && e->lds_limit == d.lds_limit);
			EXPECT(e->scratch_base == d.scratch_base && e->scratch_limit == d.scratch_limit);
			EXPECT(e->gpuvm_base == d.gpuvm_base && e->gpuvm_limit == d.gpuvm_limit);
			EXPECT(e->location_id == d.location_id && e->device_id == d.device_id);
			EXPECT(e->gfx_target_version == d.gfx_target_version && e->simd_count == d.simd_count);
			EXPECT(e->max_waves_per_simd == d.max_waves_per_simd && e->array_count == d.array_count);
			EXPECT(e->simd_arrays_per_engine == d.simd_arrays_per_engine && e->num_xcc == d.num_xcc);
			EXPECT(e->capability == d.capability && e->debug_prop == d.debug_prop);
		}
	}
	EXPECT(gpus == n && gpus > 0);
	free(snap);
	free(rinfo);
	EXPECT(hsaKmtDbgDisable() == HSAKMT_STATUS_SUCCESS);
}

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
		struct kfd_runtime_info ri;
		EXPECT(hsaKmtGetCoreRuntimeInfo(NULL) == HSAKMT_STATUS_INVALID_PARAMETER);
		memset(&ri, 0xa5, sizeof(ri));
		EXPECT(hsaKmtGetCoreRuntimeInfo(&ri) == HSAKMT_STATUS_SUCCESS);
		EXPECT(ri.r_debug == (uintptr_t)&sys && ri.runtime_state == DEBUG_RUNTIME_STATE_ENABLED && ri.ttmp_setup == 1);
		device_info(&sys);
		EXPECT(hsaKmtRuntimeDisable() == HSAKMT_STATUS_SUCCESS);
		EXPECT(hsaKmtGetCoreRuntimeInfo(&ri) == HSAKMT_STATUS_SUCCESS);
		EXPECT(ri.r_debug == 0 && ri.runtime_state == DEBUG_RUNTIME_STATE_DISABLED && ri.ttmp_setup == 0);
		EXPECT(hsaKmtRuntimeEnable(&sys, false) == HSAKMT_STATUS_SUCCESS);
		EXPECT(hsaKmtGetCoreRuntimeInfo(&ri) == HSAKMT_STATUS_SUCCESS);
		EXPECT(ri.runtime_state == DEBUG_RUNTIME_STATE_ENABLED && ri.ttmp_setup == 0);
		EXPECT(hsaKmtRuntimeDisable() == HSAKMT_STATUS_SUCCESS);
	} else {
		EXPECT(hsaKmtRuntimeDisable() == (HSAKMT_STATUS)want);
	}
	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	printf(failures ? "runtime_rules: FAILED\n" : "runtime_rules: OK\n");
	return failures != 0;
}
