/* The handle API of the newest hsakmt.h (HandleImport / HandleExport, MemoryVaMap / VaUnmap,
 * MemoryCpuMap, MemHandleFree(PreserveMetadata), MemoryGetCpuAddr) on a dma-buf exported from
 * a VRAM allocation, and the statuses of bad input. Upstream API names only. Exit 0 on success. */
#include "expect.h"
#include <hsakmt/hsakmt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SIZE (256 << 10)

int main(void)
{
	HsaSystemProperties sys;
	HsaNodeProperties p;
	HSAuint32 gpu = 0, cpu_node = 0;
	void *vram = NULL, *va = NULL, *cpu = NULL, *cpu2 = NULL;
	HsaMemFlags f;
	HsaHandleImportDesc in;
	HsaHandleImportResult res;
	HsaHandleImportFlags iflags;
	HsaHandleExportDesc ed;
	HsaMemoryExportResult er;
	HsaHandleExportFlags eflags;
	HSAuint64 off = 0, mmap_off = 0;
	int fd = -1;

	memset(&in, 0, sizeof(in));
	memset(&res, 0, sizeof(res));
	memset(&iflags, 0, sizeof(iflags));
	memset(&ed, 0, sizeof(ed));
	memset(&er, 0, sizeof(er));
	memset(&eflags, 0, sizeof(eflags));
	EXPECT(hsaKmtHandleImport(&in, &res, &iflags) == HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED);
	EXPECT(hsaKmtOpenKFD() == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtAcquireSystemProperties(&sys) == HSAKMT_STATUS_SUCCESS);
	for (HSAuint32 n = 0; n < sys.NumNodes; n++) {
		EXPECT(hsaKmtGetNodeProperties(n, &p) == HSAKMT_STATUS_SUCCESS);
		if (p.KFDGpuID && !gpu)
			gpu = n;
	}
	EXPECT(gpu != 0);

	/* A VRAM buffer with a pattern, exported as a dma-buf. */
	memset(&f, 0, sizeof(f));
	f.ui32.NonPaged = 1;
	f.ui32.HostAccess = 1;
	f.ui32.CoarseGrain = 1;
	EXPECT(hsaKmtAllocMemory(gpu, SIZE, f, &vram) == HSAKMT_STATUS_SUCCESS);
	if (!vram)
		return 1;
	for (int i = 0; i < SIZE / 4; i++)
		((uint32_t *)vram)[i] = 0x5eed0000u + (uint32_t)i;
	EXPECT(hsaKmtExportDMABufHandle(vram, SIZE, &fd, &off) == HSAKMT_STATUS_SUCCESS);
	EXPECT(fd >= 0 && off == 0);

	/* Import: a handle and the size. */
	in.type = HSA_EXTERNAL_HANDLE_DMA_BUF;
	in.dmabuf_fd = fd;
	EXPECT(hsaKmtHandleImport(&in, &res, &iflags) == HSAKMT_STATUS_SUCCESS);
	HsaMemoryObjectHandle h = res.buf_handle;
	EXPECT(h != NULL && res.alloc_size == SIZE && res.dmabuf_fd == fd);

	/* CPU map: the same bytes; the same address again; writes reach the original. */
	EXPECT(hsaKmtMemoryCpuMap(h, &cpu) == HSAKMT_STATUS_SUCCESS);
	EXPECT(cpu != NULL && cpu != vram);
	if (cpu) {
		EXPECT(memcmp(cpu, vram, SIZE) == 0);
		((uint32_t *)cpu)[100] = 0xc0ffee;
		EXPECT(((uint32_t *)vram)[100] == 0xc0ffee);
	}
	EXPECT(hsaKmtMemoryCpuMap(h, &cpu2) == HSAKMT_STATUS_SUCCESS);
	EXPECT(cpu2 == cpu);
	EXPECT(hsaKmtMemoryGetCpuAddr(NULL, h, &mmap_off) == HSAKMT_STATUS_SUCCESS);
	EXPECT(mmap_off != 0);

	/* GPU VA map at a VA reserved by the caller, of the second half of the object. */
	memset(&f, 0, sizeof(f));
	f.ui32.OnlyAddress = 1;
	f.ui32.NonPaged = 1;
	EXPECT(hsaKmtAllocMemory(gpu, SIZE, f, &va) == HSAKMT_STATUS_SUCCESS);
	HSAuint64 at = (HSAuint64)(uintptr_t)va;
	EXPECT(hsaKmtMemoryVaMap(h, SIZE / 2, SIZE / 2, at, HSA_MEMORY_ACCESS_RW, gpu) == HSAKMT_STATUS_SUCCESS);
	/* Overlap, beyond the object, misaligned, bad flags, a CPU node: ERROR. */
	EXPECT(hsaKmtMemoryVaMap(h, 0, 4096, at, HSA_MEMORY_ACCESS_RO, gpu) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtMemoryVaMap(h, SIZE / 2, SIZE, at + SIZE / 2, HSA_MEMORY_ACCESS_RW, gpu) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtMemoryVaMap(h, 0, 4096, at + SIZE / 2 + 1, HSA_MEMORY_ACCESS_RW, gpu) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtMemoryVaMap(h, 0, 4096, at + SIZE / 2, 7, gpu) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtMemoryVaMap(h, 0, 4096, at + SIZE / 2, HSA_MEMORY_ACCESS_RW, cpu_node) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtMemoryVaMap(h, 0, 4096, at + SIZE / 2, HSA_MEMORY_ACCESS_RW, 9999) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtMemoryVaMap(h, 0, 4096, at + SIZE / 2, HSA_MEMORY_ACCESS_RO, gpu) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtMemoryVaUnmap(h, 0, 4096, at + SIZE / 2, gpu) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtMemoryVaUnmap(h, SIZE / 2, SIZE / 2, at, gpu) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtMemoryVaUnmap(h, SIZE / 2, SIZE / 2, at, gpu) == HSAKMT_STATUS_ERROR);

	/* Export the handle: a dma-buf that imports to the same size. */
	ed.type = HSA_EXTERNAL_HANDLE_DMA_BUF;
	ed.buf_handle = h;
	ed.size = SIZE;
	EXPECT(hsaKmtHandleExport(&ed, &er, &eflags) == HSAKMT_STATUS_SUCCESS);
	EXPECT(er.dmabuf_fd >= 0 && er.dmabuf_fd != fd);
	in.dmabuf_fd = er.dmabuf_fd;
	HsaHandleImportResult res2;
	memset(&res2, 0, sizeof(res2));
	EXPECT(hsaKmtHandleImport(&in, &res2, NULL) == HSAKMT_STATUS_SUCCESS);
	EXPECT(res2.buf_handle != NULL && res2.buf_handle != h && res2.alloc_size == SIZE);
	/* Mapped while the first import is freed: the second stays usable. */
	EXPECT(hsaKmtMemoryVaMap(res2.buf_handle, 0, SIZE, at, HSA_MEMORY_ACCESS_RW, gpu) == HSAKMT_STATUS_SUCCESS);

	/* Free: the handle is gone (ERROR afterwards, INVALID_HANDLE for export). */
	EXPECT(hsaKmtMemHandleFree(h) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtMemHandleFree(h) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtMemoryCpuMap(h, &cpu) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtMemoryGetCpuAddr(NULL, h, &mmap_off) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtHandleExport(&ed, &er, &eflags) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtMemoryVaUnmap(res2.buf_handle, 0, SIZE, at, gpu) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtMemHandleFreePreserveMetadata(res2.buf_handle) == HSAKMT_STATUS_SUCCESS);
	close(er.dmabuf_fd);

	/* Bad input. */
	EXPECT(hsaKmtHandleImport(NULL, &res, &iflags) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtHandleImport(&in, NULL, &iflags) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtHandleExport(NULL, &er, &eflags) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtHandleExport(&ed, NULL, &eflags) == HSAKMT_STATUS_INVALID_HANDLE);
	in.dmabuf_fd = fd;
	in.type = HSA_EXTERNAL_HANDLE_FABRIC;
	EXPECT(hsaKmtHandleImport(&in, &res, &iflags) == HSAKMT_STATUS_NOT_SUPPORTED);
	in.type = HSA_EXTERNAL_HANDLE_GEM_FLINK_NAME;
	EXPECT(hsaKmtHandleImport(&in, &res, &iflags) == HSAKMT_STATUS_NOT_SUPPORTED);
	in.type = HSA_EXTERNAL_HANDLE_KMS;
	EXPECT(hsaKmtHandleImport(&in, &res, &iflags) == HSAKMT_STATUS_NOT_SUPPORTED);
	ed.type = HSA_EXTERNAL_HANDLE_FABRIC;
	EXPECT(hsaKmtHandleExport(&ed, &er, &eflags) == HSAKMT_STATUS_NOT_SUPPORTED);
	in.type = HSA_EXTERNAL_HANDLE_DMA_BUF;
	in.dmabuf_fd = 0; /* stdin: not a dma-buf */
	EXPECT(hsaKmtHandleImport(&in, &res, &iflags) == HSAKMT_STATUS_ERROR);
	in.dmabuf_fd = -1;
	EXPECT(hsaKmtHandleImport(&in, &res, &iflags) == HSAKMT_STATUS_ERROR);
	in.dmabuf_fd = 1LL << 40;
	EXPECT(hsaKmtHandleImport(&in, &res, &iflags) == HSAKMT_STATUS_ERROR);
	HsaMemoryObjectHandle forged = (HsaMemoryObjectHandle)(uintptr_t)0x1234;
	EXPECT(hsaKmtMemoryVaMap(NULL, 0, 4096, at, HSA_MEMORY_ACCESS_RW, gpu) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtMemoryVaMap(forged, 0, 4096, at, HSA_MEMORY_ACCESS_RW, gpu) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtMemoryVaUnmap(NULL, 0, 4096, at, gpu) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtMemoryCpuMap(forged, &cpu) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtMemHandleFree(NULL) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtMemHandleFree(forged) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtMemoryGetCpuAddr(NULL, forged, &mmap_off) == HSAKMT_STATUS_ERROR);
	ed.type = HSA_EXTERNAL_HANDLE_DMA_BUF;
	ed.buf_handle = forged;
	EXPECT(hsaKmtHandleExport(&ed, &er, &eflags) == HSAKMT_STATUS_INVALID_HANDLE);
	iflags.ui32.IPCHandle = 1; /* BO metadata: not modelled */
	in.dmabuf_fd = fd;
	EXPECT(hsaKmtHandleImport(&in, &res, &iflags) == HSAKMT_STATUS_NOT_SUPPORTED);
	iflags.ui32.IPCHandle = 0;

	/* A handle left live (CPU- and VA-mapped) is released by CloseKFD. */
	EXPECT(hsaKmtHandleImport(&in, &res, &iflags) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtMemoryCpuMap(res.buf_handle, &cpu) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtMemoryVaMap(res.buf_handle, 0, SIZE, at, HSA_MEMORY_ACCESS_RW, gpu) == HSAKMT_STATUS_SUCCESS);

	close(fd);
	EXPECT(hsaKmtFreeMemory(va, SIZE) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtFreeMemory(vram, SIZE) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	if (failures)
		return 1;
	printf("handles_api: OK\n");
	return 0;
}
