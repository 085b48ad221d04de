/* The memory API as a ROCm runtime uses it: VRAM and system allocations, CPU access,
 * GPU mapping, pointer queries, user-pointer registration, IPC export, and the statuses of
 * bad input. Upstream API names only. Exit 0 on success. */
#include "expect.h"
#include <hsakmt/hsakmt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
	HsaSystemProperties sys;
	HsaNodeProperties p;
	HSAuint32 gpu = 0, cpu = 0;
	void *vram = NULL, *host = NULL, *tmp = NULL;
	HsaMemFlags f;
	HsaPointerInfo info;
	HSAuint64 avail0 = 0, avail1 = 0, alt = 0;

	memset(&f, 0, sizeof(f));
	EXPECT(hsaKmtAllocMemory(0, 4096, f, &tmp) == HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED);
	EXPECT(hsaKmtOpenKFD() == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtAcquireSystemProperties(&sys) == HSAKMT_STATUS_SUCCESS);
	for (HSAuint32 n = 0; n < sys.NumNodes; n++) {
		EXPECT(hsaKmtGetNodeProperties(n, &p) == HSAKMT_STATUS_SUCCESS);
		if (p.KFDGpuID && !gpu)
			gpu = n;
	}
	EXPECT(gpu != 0);
	/* With no node list, VRAM maps to its GPU and every GPU with an io-link to it (upstream's
	 * usable_peer_id_array). */
	HSAuint32 peers = 1;
	for (HSAuint32 n = 0; n < sys.NumNodes; n++) {
		HsaIoLinkProperties links[64];
		int linked = 0;
		if (n == gpu || hsaKmtGetNodeProperties(n, &p) != HSAKMT_STATUS_SUCCESS || !p.KFDGpuID || p.NumIOLinks > 64)
			continue;
		EXPECT(hsaKmtGetNodeIoLinkProperties(n, p.NumIOLinks, links) == HSAKMT_STATUS_SUCCESS);
		for (HSAuint32 l = 0; l < p.NumIOLinks; l++)
			linked |= links[l].NodeTo == gpu;
		peers += linked;
	}

	/* VRAM, host-accessible: the CPU sees it at the address the GPU uses. */
	f.ui32.NonPaged = 1;
	f.ui32.HostAccess = 1;
	f.ui32.CoarseGrain = 1;
	EXPECT(hsaKmtAvailableMemory(gpu, &avail0) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtAllocMemory(gpu, 1 << 20, f, &vram) == HSAKMT_STATUS_SUCCESS);
	EXPECT(vram != NULL && ((uintptr_t)vram & 4095) == 0);
	EXPECT(hsaKmtAvailableMemory(gpu, &avail1) == HSAKMT_STATUS_SUCCESS);
	EXPECT(avail1 <= avail0 - (1 << 20));
	if (vram) {
		memset(vram, 0xa5, 1 << 20);
		EXPECT(((unsigned char *)vram)[12345] == 0xa5);
	}
	EXPECT(hsaKmtMapMemoryToGPU(vram, 1 << 20, &alt) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtQueryPointerInfo((char *)vram + 4096, &info) == HSAKMT_STATUS_SUCCESS);
	EXPECT(info.Type == HSA_POINTER_ALLOCATED);
	EXPECT(info.Node == gpu);
	EXPECT(info.GPUAddress == (HSAuint64)(uintptr_t)vram);
	EXPECT(info.SizeInBytes == (1 << 20));
	EXPECT(info.NMappedNodes == peers && info.MappedNodes && info.MappedNodes[0] == gpu);
	EXPECT(hsaKmtSetMemoryUserData(vram, (void *)0x1234) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtQueryPointerInfo(vram, &info) == HSAKMT_STATUS_SUCCESS);
	EXPECT(info.UserData == (void *)0x1234);

	/* The KFD refuses to free a mapped BO: upstream reports ERROR and keeps the buffer. */
	EXPECT(hsaKmtFreeMemory(vram, 1 << 20) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtQueryPointerInfo(vram, &info) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtUnmapMemoryToGPU(vram) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtUnmapMemoryToGPU(vram) == HSAKMT_STATUS_SUCCESS); /* unmapping twice is fine */

	/* dma-buf: export a window of the buffer, import it back as a graphics resource */
	int fd = -1;
	HSAuint64 off = 0;
	EXPECT(hsaKmtExportDMABufHandle((char *)vram + 8192, 4096, &fd, &off) == HSAKMT_STATUS_SUCCESS);
	EXPECT(off == 8192 && fd >= 0);
	EXPECT(hsaKmtExportDMABufHandle((char *)vram + 8192, 1 << 20, &fd, &off) == HSAKMT_STATUS_INVALID_PARAMETER);
	HsaGraphicsResourceInfo gi;
	memset(&gi, 0, sizeof(gi));
	EXPECT(hsaKmtRegisterGraphicsHandleToNodes((HSAuint64)fd, &gi, 1, &gpu) == HSAKMT_STATUS_SUCCESS);
	EXPECT(gi.SizeInBytes == (1 << 20) && gi.NodeId == gpu && gi.MemoryAddress != NULL);
	EXPECT(gi.MemoryAddress != vram);
	EXPECT(hsaKmtQueryPointerInfo(gi.MemoryAddress, &info) == HSAKMT_STATUS_SUCCESS);
	EXPECT(info.Type == HSA_POINTER_REGISTERED_GRAPHICS);
	EXPECT(hsaKmtMapMemoryToGPU(gi.MemoryAddress, gi.SizeInBytes, NULL) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtUnmapMemoryToGPU(gi.MemoryAddress) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtDeregisterMemory(gi.MemoryAddress) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtQueryPointerInfo(gi.MemoryAddress, &info) != HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtRegisterGraphicsHandleToNodes(987654, &gi, 0, NULL) == HSAKMT_STATUS_ERROR);
	close(fd);
	EXPECT(hsaKmtFreeMemory(vram, 1 << 20) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtQueryPointerInfo(vram, &info) != HSAKMT_STATUS_SUCCESS);
	EXPECT(info.Type == HSA_POINTER_UNKNOWN);
	EXPECT(hsaKmtAvailableMemory(gpu, &avail1) == HSAKMT_STATUS_SUCCESS);
	EXPECT(avail1 == avail0);

	/* Paged system memory on the CPU node: a userptr BO, CPU VA == GPU VA. */
	memset(&f, 0, sizeof(f));
	f.ui32.HostAccess = 1;
	EXPECT(hsaKmtAllocMemory(cpu, 3 * 4096, f, &host) == HSAKMT_STATUS_SUCCESS);
	if (host) {
		strcpy((char *)host, "hello");
		EXPECT(hsaKmtMapMemoryToGPU(host, 3 * 4096, NULL) == HSAKMT_STATUS_SUCCESS);
		EXPECT(hsaKmtQueryPointerInfo(host, &info) == HSAKMT_STATUS_SUCCESS);
		EXPECT(info.Node == cpu);
		EXPECT(hsaKmtUnmapMemoryToGPU(host) == HSAKMT_STATUS_SUCCESS);
		EXPECT(hsaKmtFreeMemory(host, 3 * 4096) == HSAKMT_STATUS_SUCCESS);
	}

	/* A user buffer registered for the GPUs. */
	char *user = aligned_alloc(4096, 8192);
	EXPECT(hsaKmtRegisterMemory(user + 100, 5000) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtQueryPointerInfo(user + 200, &info) == HSAKMT_STATUS_SUCCESS);
	EXPECT(info.Type == HSA_POINTER_REGISTERED_USER);
	EXPECT(info.CPUAddress == user + 100);
	EXPECT(info.SizeInBytes == 5000);
	EXPECT(hsaKmtMapMemoryToGPU(user + 100, 5000, &alt) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtUnmapMemoryToGPU(user + 100) == HSAKMT_STATUS_SUCCESS);
	/* the same range again: counted; an overlapping range: a registration of its own */
	EXPECT(hsaKmtRegisterMemory(user + 100, 5000) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtRegisterMemory(user + 4096, 4096) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtDeregisterMemory(user + 100) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtQueryPointerInfo(user + 200, &info) == HSAKMT_STATUS_SUCCESS); /* one count left */
	EXPECT(hsaKmtDeregisterMemory(user + 100) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtQueryPointerInfo(user + 200, &info) != HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtQueryPointerInfo(user + 4096 + 8, &info) == HSAKMT_STATUS_SUCCESS);
	EXPECT(info.Type == HSA_POINTER_REGISTERED_USER && info.CPUAddress == user + 4096);
	EXPECT(hsaKmtDeregisterMemory(user + 4096) == HSAKMT_STATUS_SUCCESS);
	/* registering memory that came from AllocMemory is INVALID_HANDLE (upstream) */
	void *own = NULL;
	memset(&f, 0, sizeof(f));
	f.ui32.HostAccess = 1;
	EXPECT(hsaKmtAllocMemory(cpu, 4096, f, &own) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtRegisterMemory(own, 4096) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtFreeMemory(own, 4096) == HSAKMT_STATUS_SUCCESS);
	free(user);

	/* The GPU's banks end with upstream's aperture heaps, the MMIO remap page among them. */
	EXPECT(hsaKmtGetNodeProperties(gpu, &p) == HSAKMT_STATUS_SUCCESS);
	HsaMemoryProperties banks[16];
	int mmio = 0, lds = 0;
	EXPECT(p.NumMemoryBanks <= 16);
	EXPECT(hsaKmtGetNodeMemoryProperties(gpu, p.NumMemoryBanks, banks) == HSAKMT_STATUS_SUCCESS);
	for (HSAuint32 i = 0; i < p.NumMemoryBanks && i < 16; i++) {
		if (banks[i].HeapType == HSA_HEAPTYPE_MMIO_REMAP) {
			mmio++;
			EXPECT(banks[i].SizeInBytes == 4096 && banks[i].VirtualBaseAddress != 0);
		}
		lds += banks[i].HeapType == HSA_HEAPTYPE_GPU_LDS;
	}
	EXPECT(mmio == 1 && lds == 1);

	/* Scratch: a 64 KiB-aligned VA range per GPU; memory comes when it is mapped. */
	void *scratch = NULL;
	memset(&f, 0, sizeof(f));
	f.ui32.Scratch = 1;
	EXPECT(hsaKmtAllocMemoryAlign(gpu, 1 << 20, 1 << 16, f, &scratch) == HSAKMT_STATUS_NOT_IMPLEMENTED);
	EXPECT(hsaKmtAllocMemory(gpu, 3 * 65536, f, &scratch) == HSAKMT_STATUS_SUCCESS);
	EXPECT(scratch && ((uintptr_t)scratch & 0xffff) == 0);
	EXPECT(hsaKmtAllocMemory(gpu, 65536, f, &tmp) == HSAKMT_STATUS_NO_MEMORY); /* one per GPU */
	/* Any slice maps, in any order; unmapping goes by a slice's start (upstream). */
	EXPECT(hsaKmtMapMemoryToGPU((char *)scratch + 65536, 65536, NULL) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtMapMemoryToGPU(scratch, 65536, NULL) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtMapMemoryToGPU((char *)scratch + 2 * 65536, 2 * 65536, NULL) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtUnmapMemoryToGPU((char *)scratch + 4096) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtUnmapMemoryToGPU(scratch) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtUnmapMemoryToGPU(scratch) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtFreeMemory(scratch, 3 * 65536) == HSAKMT_STATUS_SUCCESS); /* unmaps the rest */
	EXPECT(hsaKmtAllocMemory(gpu, 65536, f, &scratch) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtFreeMemory(scratch, 65536) == HSAKMT_STATUS_SUCCESS);

	/* Bad input: each a status, nothing lost. */
	memset(&f, 0, sizeof(f));
	f.ui32.NonPaged = 1;
	EXPECT(hsaKmtAllocMemory(gpu, 0, f, &tmp) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtAllocMemory(gpu, 100, f, &tmp) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtAllocMemory(gpu, 4096, f, NULL) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtAllocMemoryAlign(gpu, 4096, 12288, f, &tmp) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtAllocMemory(sys.NumNodes, 4096, f, &tmp) == HSAKMT_STATUS_INVALID_NODE_UNIT);
	EXPECT(hsaKmtMapMemoryToGPU((void *)0x12345000, 4096, NULL) == HSAKMT_STATUS_INVALID_PARAMETER);
	HSAuint32 bad_nodes[2] = { gpu, sys.NumNodes + 7 };
	EXPECT(hsaKmtAllocMemory(gpu, 8192, f, &tmp) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtMapMemoryToGPUNodes(tmp, 8192, NULL, f, 2, bad_nodes) == HSAKMT_STATUS_INVALID_NODE_UNIT);
	EXPECT(hsaKmtQueryPointerInfo(tmp, &info) == HSAKMT_STATUS_SUCCESS && info.NMappedNodes == 0);
	EXPECT(hsaKmtMapMemoryToGPUNodes(tmp, 8192, NULL, f, 1, bad_nodes) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtUnmapMemoryToGPU(tmp) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtFreeMemory(tmp, 8192) == HSAKMT_STATUS_SUCCESS);
	/* free of a never-allocated address or a double free: SUCCESS on SVM systems (upstream) */
	EXPECT(hsaKmtFreeMemory(tmp, 8192) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtFreeMemory(NULL, 8192) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtProcessVMRead(1, NULL, 0, NULL, 0, NULL) == HSAKMT_STATUS_NOT_IMPLEMENTED);
	EXPECT(hsaKmtAvailableMemory(cpu, &avail1) == HSAKMT_STATUS_ERROR); /* the KFD refuses a CPU node */

	/* Tile configuration: the caller's arrays are filled up to the counts it gives. */
	HSAuint32 tiles[32], macro[16];
	HsaGpuTileConfig tc;
	memset(&tc, 0, sizeof(tc));
	tc.TileConfig = tiles;
	tc.MacroTileConfig = macro;
	tc.NumTileConfigs = 32;
	tc.NumMacroTileConfigs = 16;
	EXPECT(hsaKmtGetTileConfig(gpu, &tc) == HSAKMT_STATUS_SUCCESS);
	EXPECT(tc.GbAddrConfig != 0);
	EXPECT(tc.NumTileConfigs <= 32 && tc.NumMacroTileConfigs <= 16);
	EXPECT(hsaKmtGetTileConfig(gpu, NULL) == HSAKMT_STATUS_INVALID_PARAMETER);

	/* No libdrm device on a model: upstream's answers for that case. */
	HsaAMDGPUDeviceHandle dev = (HsaAMDGPUDeviceHandle)1;
	int dfd = 0;
	EXPECT(hsaKmtGetAMDGPUDeviceHandle(gpu, &dev) == HSAKMT_STATUS_SUCCESS && dev == NULL);
	EXPECT(hsaKmtGetAMDGPUDeviceHandle(cpu, &dev) == HSAKMT_STATUS_INVALID_NODE_UNIT);
	EXPECT(hsaKmtGetAMDGPUDeviceHandle(100000, &dev) == HSAKMT_STATUS_INVALID_NODE_UNIT);
	EXPECT(hsaKmtGetAMDGPUDeviceHandle(gpu, NULL) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtGetAmdGPUDeviceFd(dev, &dfd) == HSAKMT_STATUS_ERROR && dfd == -1);
	EXPECT(hsaKmtGetAmdGPUDeviceFd((HsaAMDGPUDeviceHandle)&dfd, &dfd) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtSetSigbusDelay(gpu, 10) == HSAKMT_STATUS_NOT_SUPPORTED);
	EXPECT(hsaKmtSetSigbusDelay(cpu, 10) == HSAKMT_STATUS_INVALID_NODE_UNIT);

	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	printf(failures ? "memory_basic: FAILED\n" : "memory_basic: OK\n");
	return failures != 0;
}
