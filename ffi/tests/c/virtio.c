/* The vhsaKmt* API (hsakmt_virtio.h) from a guest process against a loopback host process on
 * the model (HSAKMT_VIRTIO_SOCKET names its socket, or, with VIRTIO_TEST_VAR=
 * HSAKMT_VIRTIO_RENDER_NODE, the DRM transport reaches it through "model:<socket>", the model of
 * a virtio-gpu render node): topology compared with the direct API (a
 * model of the same catalogue entry in this process, HSAKMT_MODEL), memory allocated on the
 * host and mapped here at the host's address, events set and waited through the host, and an
 * SDMA queue whose FENCE + TRAP, written here by hand, the host's model GPU executes.
 *
 * Usage: virtio run      every scenario; prints "virtio: OK"
 *        virtio killed   opens, allocates, prints "kill the host" and waits for a line on
 *                        stdin; the host is dead by then: every call must fail with a status
 *                        (an alarm turns a hang into a failure); prints "virtio killed: OK". */
#include "expect.h"
#include <hsakmt/hsakmt.h>
#include <hsakmt/hsakmt_virtio.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static HSAuint32 first_gpu(HSAuint32 num_nodes)
{
	HsaNodeProperties p;
	for (HSAuint32 n = 0; n < num_nodes; n++)
		if (vhsaKmtGetNodeProperties(n, &p) == HSAKMT_STATUS_SUCCESS && p.KFDGpuID)
			return n;
	return 0;
}

static void topology(HsaSystemProperties *sys)
{
	HsaSystemProperties direct;
	EXPECT(hsaKmtOpenKFD() == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtAcquireSystemProperties(&direct) == HSAKMT_STATUS_SUCCESS);
	EXPECT(vhsaKmtAcquireSystemProperties(NULL) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(vhsaKmtAcquireSystemProperties(sys) == HSAKMT_STATUS_SUCCESS);
	EXPECT(sys->NumNodes == direct.NumNodes && sys->NumNodes >= 2);
	EXPECT(sys->PlatformOem == direct.PlatformOem && sys->PlatformId == direct.PlatformId &&
	       sys->PlatformRev == direct.PlatformRev);

	HsaVersionInfo v, dv;
	EXPECT(vhsaKmtGetVersion(&v) == HSAKMT_STATUS_SUCCESS && hsaKmtGetVersion(&dv) == HSAKMT_STATUS_SUCCESS);
	EXPECT(v.KernelInterfaceMajorVersion == dv.KernelInterfaceMajorVersion &&
	       v.KernelInterfaceMinorVersion == dv.KernelInterfaceMinorVersion);

	for (HSAuint32 n = 0; n < sys->NumNodes; n++) {
		HsaNodeProperties a, d;
		memset(&a, 0xa5, sizeof(a));
		EXPECT(vhsaKmtGetNodeProperties(n, &a) == HSAKMT_STATUS_SUCCESS);
		EXPECT(hsaKmtGetNodeProperties(n, &d) == HSAKMT_STATUS_SUCCESS);
		EXPECT(a.NumCPUCores == d.NumCPUCores && a.NumFComputeCores == d.NumFComputeCores);
		EXPECT(a.NumMemoryBanks == d.NumMemoryBanks && a.NumCaches == d.NumCaches && a.NumIOLinks == d.NumIOLinks);
		EXPECT(a.CComputeIdLo == d.CComputeIdLo && a.FComputeIdLo == d.FComputeIdLo);
		EXPECT(a.Capability.Value == d.Capability.Value && a.MaxWavesPerSIMD == d.MaxWavesPerSIMD);
		EXPECT(a.LDSSizeInKB == d.LDSSizeInKB && a.WaveFrontSize == d.WaveFrontSize);
		EXPECT(a.NumShaderBanks == d.NumShaderBanks && a.NumArrays == d.NumArrays && a.NumCUPerArray == d.NumCUPerArray);
		EXPECT(a.EngineId.Value == d.EngineId.Value && a.VendorId == d.VendorId && a.DeviceId == d.DeviceId);
		EXPECT(a.LocationId == d.LocationId && a.LocalMemSize == d.LocalMemSize && a.KFDGpuID == d.KFDGpuID);
		EXPECT(a.MaxEngineClockMhzFCompute == d.MaxEngineClockMhzFCompute);
		EXPECT(memcmp(a.MarketingName, d.MarketingName, sizeof(a.MarketingName)) == 0);
		EXPECT(memcmp(a.AMDName, d.AMDName, sizeof(a.AMDName)) == 0);

		HsaMemoryProperties mb[8], dmb[8];
		HSAuint32 nb = d.NumMemoryBanks < 8 ? d.NumMemoryBanks : 8;
		if (nb) {
			EXPECT(vhsaKmtGetNodeMemoryProperties(n, nb, mb) == HSAKMT_STATUS_SUCCESS);
			EXPECT(hsaKmtGetNodeMemoryProperties(n, nb, dmb) == HSAKMT_STATUS_SUCCESS);
			for (HSAuint32 b = 0; b < nb; b++)
				EXPECT(mb[b].HeapType == dmb[b].HeapType && mb[b].SizeInBytes == dmb[b].SizeInBytes &&
				       mb[b].Flags.MemoryProperty == dmb[b].Flags.MemoryProperty &&
				       mb[b].Width == dmb[b].Width && mb[b].MemoryClockMax == dmb[b].MemoryClockMax);
		}
		HsaCacheProperties c[64], dc[64];
		HSAuint32 nc = d.NumCaches < 64 ? d.NumCaches : 64;
		if (nc) {
			HSAuint32 proc = d.KFDGpuID ? d.FComputeIdLo : d.CComputeIdLo;
			EXPECT(vhsaKmtGetNodeCacheProperties(n, proc, nc, c) == HSAKMT_STATUS_SUCCESS);
			EXPECT(hsaKmtGetNodeCacheProperties(n, proc, nc, dc) == HSAKMT_STATUS_SUCCESS);
			for (HSAuint32 i = 0; i < nc; i++)
				EXPECT(c[i].ProcessorIdLow == dc[i].ProcessorIdLow && c[i].CacheLevel == dc[i].CacheLevel &&
				       c[i].CacheSize == dc[i].CacheSize && c[i].CacheLineSize == dc[i].CacheLineSize &&
				       c[i].CacheType.Value == dc[i].CacheType.Value);
		}
		HsaIoLinkProperties l[16], dl[16];
		HSAuint32 nl = d.NumIOLinks < 16 ? d.NumIOLinks : 16;
		if (nl) {
			EXPECT(vhsaKmtGetNodeIoLinkProperties(n, nl, l) == HSAKMT_STATUS_SUCCESS);
			EXPECT(hsaKmtGetNodeIoLinkProperties(n, nl, dl) == HSAKMT_STATUS_SUCCESS);
			for (HSAuint32 i = 0; i < nl; i++)
				EXPECT(l[i].IoLinkType == dl[i].IoLinkType && l[i].NodeFrom == dl[i].NodeFrom &&
				       l[i].NodeTo == dl[i].NodeTo && l[i].Weight == dl[i].Weight);
		}
	}
	HsaNodeProperties p;
	EXPECT(vhsaKmtGetNodeProperties(sys->NumNodes, &p) == HSAKMT_STATUS_INVALID_NODE_UNIT);
	EXPECT(vhsaKmtGetNodeProperties(0, NULL) == HSAKMT_STATUS_INVALID_PARAMETER);

	HSAuint32 gpu = first_gpu(sys->NumNodes);
	HsaClockCounters cc1, cc2;
	EXPECT(vhsaKmtGetClockCounters(gpu, &cc1) == HSAKMT_STATUS_SUCCESS);
	EXPECT(vhsaKmtGetClockCounters(gpu, &cc2) == HSAKMT_STATUS_SUCCESS);
	EXPECT(cc1.SystemClockFrequencyHz != 0 && cc2.SystemClockCounter >= cc1.SystemClockCounter);
	HSAint32 x = -1, dx = -2;
	EXPECT(vhsaKmtGetXNACKMode(&x) == HSAKMT_STATUS_SUCCESS && hsaKmtGetXNACKMode(&dx) == HSAKMT_STATUS_SUCCESS);
	EXPECT(x == dx);
	EXPECT(hsaKmtReleaseSystemProperties() == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
}

static void memory(HSAuint32 gpu)
{
	HsaMemFlags f;
	void *p = NULL;
	HSAuint64 va = 0;
	HsaPointerInfo info;

	memset(&f, 0, sizeof(f));
	EXPECT(vhsaKmtAllocMemory(0, 4096, f, NULL) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(vhsaKmtAllocMemory(0, 4096, f, &p) == HSAKMT_STATUS_SUCCESS && p != NULL);
	if (!p)
		return;
	/* The host's memory, mapped here at the host's address: write and read it back. */
	((volatile uint64_t *)p)[0] = 0x1122334455667788ull;
	EXPECT(((volatile uint64_t *)p)[0] == 0x1122334455667788ull);
	EXPECT(vhsaKmtMapMemoryToGPUNodes(p, 4096, &va, (HsaMemMapFlags){0}, 1, &gpu) == HSAKMT_STATUS_SUCCESS);
	/* AlternateVAGPU as the direct API gives it for the same kind of memory. */
	void *dp = NULL;
	HSAuint64 dva = 1;
	HsaSystemProperties dsys;
	EXPECT(hsaKmtOpenKFD() == HSAKMT_STATUS_SUCCESS && hsaKmtAcquireSystemProperties(&dsys) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtAllocMemory(0, 4096, f, &dp) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtMapMemoryToGPUNodes(dp, 4096, &dva, f, 1, &gpu) == HSAKMT_STATUS_SUCCESS);
	EXPECT((va == (HSAuint64)(uintptr_t)p) == (dva == (HSAuint64)(uintptr_t)dp) && (va == 0) == (dva == 0));
	EXPECT(hsaKmtUnmapMemoryToGPU(dp) == HSAKMT_STATUS_SUCCESS && hsaKmtFreeMemory(dp, 4096) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	memset(&info, 0, sizeof(info));
	EXPECT(vhsaKmtQueryPointerInfo(p, &info) == HSAKMT_STATUS_SUCCESS);
	EXPECT(info.Type == HSA_POINTER_ALLOCATED && info.CPUAddress == p && info.SizeInBytes == 4096);
	EXPECT(info.NMappedNodes == 1 && info.MappedNodes && info.MappedNodes[0] == gpu);
	EXPECT(vhsaKmtQueryPointerInfo((char *)p + ((HSAuint64)1 << 40), &info) == HSAKMT_STATUS_ERROR);
	EXPECT(info.Type == HSA_POINTER_UNKNOWN);
	EXPECT(vhsaKmtUnmapMemoryToGPU(p) == HSAKMT_STATUS_SUCCESS);
	EXPECT(vhsaKmtFreeMemory(p, 4096) == HSAKMT_STATUS_SUCCESS);
	/* Freed: the host has no such memory any more, and it is no longer mapped here. */
	EXPECT(vhsaKmtMapMemoryToGPU(p, 4096, &va) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(vhsaKmtFreeMemory(p, 4096) == HSAKMT_STATUS_INVALID_PARAMETER);

	HSAuint64 avail = 0;
	EXPECT(vhsaKmtAvailableMemory(gpu, &avail) == HSAKMT_STATUS_SUCCESS && avail > 0);
	/* Not carried by the protocol. */
	EXPECT(vhsaKmtAllocMemoryAlign(0, 4096, 4096, f, &p) == HSAKMT_STATUS_NOT_SUPPORTED);
	EXPECT(vhsaKmtRegisterMemory(&avail, sizeof(avail)) == HSAKMT_STATUS_NOT_SUPPORTED);
}

static HsaEvent *setter_event;
static void *setter(void *arg)
{
	(void)arg;
	usleep(150 * 1000);
	EXPECT(vhsaKmtSetEvent(setter_event) == HSAKMT_STATUS_SUCCESS);
	return NULL;
}

static void events(HSAuint32 gpu)
{
	HsaEventDescriptor d;
	HsaEvent *a = NULL, *m = NULL;
	memset(&d, 0, sizeof(d));
	d.EventType = HSA_EVENTTYPE_SIGNAL;
	d.NodeId = gpu;
	EXPECT(vhsaKmtCreateEvent(&d, false, false, NULL) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(vhsaKmtCreateEvent(&d, false, false, &a) == HSAKMT_STATUS_SUCCESS && a != NULL);
	EXPECT(vhsaKmtCreateEvent(&d, true, true, &m) == HSAKMT_STATUS_SUCCESS && m != NULL);
	if (!a || !m)
		return;
	EXPECT(a->EventId != 0 && a->EventId != m->EventId);
	/* Auto-reset: a wait consumes the signal. */
	EXPECT(vhsaKmtWaitOnEvent(a, 0) == HSAKMT_STATUS_WAIT_TIMEOUT);
	EXPECT(vhsaKmtSetEvent(a) == HSAKMT_STATUS_SUCCESS);
	EXPECT(vhsaKmtWaitOnEvent(a, 1000) == HSAKMT_STATUS_SUCCESS);
	EXPECT(vhsaKmtWaitOnEvent(a, 10) == HSAKMT_STATUS_WAIT_TIMEOUT);
	/* Manual reset, created signaled: stays signaled until reset. */
	EXPECT(vhsaKmtWaitOnEvent(m, 0) == HSAKMT_STATUS_SUCCESS);
	EXPECT(vhsaKmtWaitOnEvent(m, 0) == HSAKMT_STATUS_SUCCESS);
	EXPECT(vhsaKmtResetEvent(m) == HSAKMT_STATUS_SUCCESS);
	EXPECT(vhsaKmtWaitOnEvent(m, 10) == HSAKMT_STATUS_WAIT_TIMEOUT);
	/* Several events: any, then all. */
	HsaEvent *both[2] = { a, m };
	EXPECT(vhsaKmtSetEvent(m) == HSAKMT_STATUS_SUCCESS);
	EXPECT(vhsaKmtWaitOnMultipleEvents(both, 2, false, 1000) == HSAKMT_STATUS_SUCCESS);
	EXPECT(vhsaKmtWaitOnMultipleEvents(both, 2, true, 10) == HSAKMT_STATUS_WAIT_TIMEOUT);
	/* A set from another thread reaches a long wait (the wait does not hold the channel). */
	pthread_t t;
	setter_event = a;
	EXPECT(pthread_create(&t, NULL, setter, NULL) == 0);
	EXPECT(vhsaKmtWaitOnEvent(a, 10000) == HSAKMT_STATUS_SUCCESS);
	pthread_join(t, NULL);
	EXPECT(vhsaKmtDestroyEvent(a) == HSAKMT_STATUS_SUCCESS);
	EXPECT(vhsaKmtDestroyEvent(a) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(vhsaKmtSetEvent(a) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(vhsaKmtDestroyEvent(m) == HSAKMT_STATUS_SUCCESS);
}

static void *gpu_memory(HSAuint32 gpu, HSAuint64 size)
{
	HsaMemFlags f;
	void *p = NULL;
	HSAuint64 va = 0;
	memset(&f, 0, sizeof(f));
	f.ui32.HostAccess = 1;
	f.ui32.NonPaged = 1;
	f.ui32.ExecuteAccess = 1;
	f.ui32.PageSize = HSA_PAGE_SIZE_4KB;
	if (vhsaKmtAllocMemory(gpu, size, f, &p) != HSAKMT_STATUS_SUCCESS)
		return NULL;
	if (vhsaKmtMapMemoryToGPUNodes(p, size, &va, (HsaMemMapFlags){0}, 1, &gpu) != HSAKMT_STATUS_SUCCESS)
		return NULL;
	memset(p, 0, size);
	return p;
}

static void queue(HSAuint32 gpu)
{
	uint32_t *ring = gpu_memory(gpu, 4096), *dst = gpu_memory(gpu, 4096);
	HsaQueueResource r;
	HsaEventDescriptor d;
	HsaEvent *ev = NULL;

	EXPECT(ring && dst);
	if (!ring || !dst)
		return;
	memset(&r, 0, sizeof(r));
	EXPECT(vhsaKmtCreateQueue(gpu, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_NORMAL, ring, 4096, NULL, NULL) ==
	       HSAKMT_STATUS_INVALID_PARAMETER);
	/* A ring that is not memory the host gave this guest. */
	static uint32_t not_host[1024] __attribute__((aligned(4096)));
	EXPECT(vhsaKmtCreateQueue(gpu, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_NORMAL, not_host, 4096, NULL, &r) ==
	       HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(vhsaKmtCreateQueue(gpu, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_NORMAL, ring, 4096, NULL, &r) ==
	       HSAKMT_STATUS_SUCCESS);
	EXPECT(r.QueueId != 0 && r.Queue_DoorBell_aql && r.Queue_read_ptr_aql && r.Queue_write_ptr_aql);
	if (!r.Queue_DoorBell_aql || !r.Queue_read_ptr_aql || !r.Queue_write_ptr_aql)
		return;

	/* FENCE 0xCAFE to dst, FENCE the event id into the event's slot, TRAP with the id (as
	 * queues.c: SDMA op in bits 0..7, FENCE = 5: address lo/hi, data; TRAP = 6). */
	memset(&d, 0, sizeof(d));
	d.EventType = HSA_EVENTTYPE_SIGNAL;
	d.NodeId = gpu;
	EXPECT(vhsaKmtCreateEvent(&d, false, false, &ev) == HSAKMT_STATUS_SUCCESS && ev);
	if (!ev)
		return;
	uint64_t a = (uintptr_t)dst, mb = ev->EventData.HWData2;
	uint32_t id = ev->EventId;
	EXPECT(mb != 0);
	uint32_t pk[] = { 5, (uint32_t)a, (uint32_t)(a >> 32), 0xCAFE, 5, (uint32_t)mb, (uint32_t)(mb >> 32), id, 6, id };
	memcpy(ring, pk, sizeof(pk));
	__atomic_store_n(r.Queue_write_ptr_aql, (HSAuint64)sizeof(pk), __ATOMIC_RELEASE);
	__atomic_store_n(r.Queue_DoorBell_aql, (HSAuint64)sizeof(pk), __ATOMIC_RELEASE);
	EXPECT(vhsaKmtWaitOnEvent(ev, 10000) == HSAKMT_STATUS_SUCCESS);
	EXPECT(__atomic_load_n(&dst[0], __ATOMIC_ACQUIRE) == 0xCAFE);
	EXPECT(__atomic_load_n(r.Queue_read_ptr_aql, __ATOMIC_ACQUIRE) == sizeof(pk));

	EXPECT(vhsaKmtDestroyQueue(r.QueueId) == HSAKMT_STATUS_SUCCESS);
	EXPECT(vhsaKmtDestroyQueue(r.QueueId) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(vhsaKmtDestroyEvent(ev) == HSAKMT_STATUS_SUCCESS);
	EXPECT(vhsaKmtUnmapMemoryToGPU(ring) == HSAKMT_STATUS_SUCCESS && vhsaKmtFreeMemory(ring, 4096) == HSAKMT_STATUS_SUCCESS);
	EXPECT(vhsaKmtUnmapMemoryToGPU(dst) == HSAKMT_STATUS_SUCCESS && vhsaKmtFreeMemory(dst, 4096) == HSAKMT_STATUS_SUCCESS);
}

static int killed(void)
{
	HsaSystemProperties sys;
	HsaClockCounters cc;
	HsaMemFlags f;
	void *p = NULL;
	char line[16];

	alarm(60); /* a hang is a failure, not a stuck test */
	EXPECT(vhsaKmtOpenKFD() == HSAKMT_STATUS_SUCCESS);
	EXPECT(vhsaKmtAcquireSystemProperties(&sys) == HSAKMT_STATUS_SUCCESS);
	memset(&f, 0, sizeof(f));
	EXPECT(vhsaKmtAllocMemory(0, 4096, f, &p) == HSAKMT_STATUS_SUCCESS);
	printf("kill the host\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		EXPECT(!"a line on stdin");
	EXPECT(vhsaKmtGetClockCounters(0, &cc) == HSAKMT_STATUS_KERNEL_COMMUNICATION_ERROR);
	EXPECT(vhsaKmtAllocMemory(0, 4096, f, &p) == HSAKMT_STATUS_KERNEL_COMMUNICATION_ERROR);
	HsaEventDescriptor d;
	HsaEvent *ev = NULL;
	memset(&d, 0, sizeof(d));
	EXPECT(vhsaKmtCreateEvent(&d, false, false, &ev) == HSAKMT_STATUS_KERNEL_COMMUNICATION_ERROR);
	EXPECT(vhsaKmtFreeMemory(p, 4096) == HSAKMT_STATUS_KERNEL_COMMUNICATION_ERROR);
	EXPECT(vhsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	EXPECT(vhsaKmtGetClockCounters(0, &cc) == HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED);
	if (!failures)
		printf("virtio killed: OK\n");
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	HsaSystemProperties sys;
	HsaVersionInfo v;

	if (argc > 1 && strcmp(argv[1], "killed") == 0)
		return killed();
	alarm(120);
	/* Not open yet; no host named: a status each. */
	EXPECT(vhsaKmtGetVersion(&v) == HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED);
	/* The variable naming the host: the loopback socket, or (the DRM transport) the render
	 * node, "model:<socket>" for the model of a virtio-gpu render node. */
	const char *var = getenv("VIRTIO_TEST_VAR") ? getenv("VIRTIO_TEST_VAR") : "HSAKMT_VIRTIO_SOCKET";
	char *sock = getenv(var);
	EXPECT(sock != NULL);
	if (!sock)
		return 1;
	sock = strdup(sock);
	unsetenv(var);
	EXPECT(vhsaKmtOpenKFD() == HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED);
	setenv(var, "/nonexistent/socket", 1);
	EXPECT(vhsaKmtOpenKFD() == HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED);
	/* Something that is neither a host socket nor a DRM device. */
	setenv(var, "/dev/null", 1);
	EXPECT(vhsaKmtOpenKFD() == HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED);
	setenv(var, sock, 1);
	free(sock);

	EXPECT(vhsaKmtOpenKFD() == HSAKMT_STATUS_SUCCESS);
	EXPECT(vhsaKmtOpenKFD() == HSAKMT_STATUS_KERNEL_ALREADY_OPENED);
	EXPECT(vhsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	topology(&sys);
	HSAuint32 gpu = first_gpu(sys.NumNodes);
	EXPECT(gpu != 0);
	memory(gpu);
	events(gpu);
	queue(gpu);
	EXPECT(vhsaKmtReleaseSystemProperties() == HSAKMT_STATUS_SUCCESS);
	EXPECT(vhsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	EXPECT(vhsaKmtGetVersion(&v) == HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED);
	if (!failures)
		printf("virtio: OK\n");
	return failures ? 1 : 0;
}
