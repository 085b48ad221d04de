/* hsaKmtAisReadWriteFile on the model (model/AIS.md): a file's pages read into VRAM land where
 * the CPU mapping shows them, VRAM written back lands in the file, reads stop at end of file,
 * and bad input gets upstream's statuses (INVALID_PARAMETER before the ioctl, ERROR with the
 * kernel's errno in *status after it). With AIS_MAINLINE set (HSAKMT_MODEL_DKMS=0) the ioctl
 * does not exist: ERROR. Exit 0 on success. */
#include "expect.h"
#include "gpu_memory.h"
#include <errno.h>
#include <fcntl.h>
#include <hsakmt/hsakmt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KB 1024u
#define VRAM_SIZE (64 * KB)
#define FILE_SIZE (64 * KB)

static unsigned char pattern(size_t i)
{
	return (unsigned char)(i * 7 + (i >> 12) + 3);
}

static void *alloc_on(HSAuint32 node, int vram)
{
	HsaMemFlags f;
	void *p = NULL;
	HSAuint64 va = 0;
	memset(&f, 0, sizeof(f));
	f.ui32.PageSize = HSA_PAGE_SIZE_4KB;
	f.ui32.HostAccess = 1;
	f.ui32.NonPaged = vram;
	if (hsaKmtAllocMemory(node, VRAM_SIZE, f, &p) != HSAKMT_STATUS_SUCCESS)
		return NULL;
	if (vram && hsaKmtMapMemoryToGPUNodes(p, VRAM_SIZE, &va, (HsaMemFlags){ 0 }, 1, &node) != HSAKMT_STATUS_SUCCESS)
		return NULL;
	return p;
}

/* One call; the outputs start as sentinels so the test sees which were written. */
static HSAKMT_STATUS ais(void *addr, HSAuint64 size, int fd, HSAint64 off, HsaAisFlags flags, HSAuint64 *copied, HSAint32 *status)
{
	*copied = 0xdead;
	*status = 0x77;
	return hsaKmtAisReadWriteFile(addr, size, fd, off, flags, copied, status);
}

int main(void)
{
	HsaSystemProperties sys;
	HsaNodeProperties props;
	HSAuint32 gpu = 0;
	HSAuint64 copied;
	HSAint32 status;
	char path[] = "/tmp/hsakmt-ais-XXXXXX";
	unsigned char *vram, *host, file[FILE_SIZE], back[32 * KB];
	int fd, rdonly, closed, pipefd[2];
	size_t i;
	int mainline = getenv("AIS_MAINLINE") != NULL;

	EXPECT(hsaKmtAisReadWriteFile(NULL, 4096, 0, 0, HSA_AIS_READ, &copied, &status) == HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED);
	if (hsaKmtOpenKFD() != HSAKMT_STATUS_SUCCESS || hsaKmtAcquireSystemProperties(&sys) != HSAKMT_STATUS_SUCCESS) {
		printf("cannot open\n");
		return 1;
	}
	gpu = first_gpu_node(&sys, &props);
	EXPECT(gpu != 0);
	vram = alloc_on(gpu, 1);
	host = alloc_on(0, 0); /* system memory: a BO, but not VRAM */
	EXPECT(vram != NULL && host != NULL);
	if (!vram || !host)
		return 1;
	memset(vram, 0x5a, VRAM_SIZE);

	fd = mkstemp(path);
	EXPECT(fd >= 0);
	for (i = 0; i < FILE_SIZE; i++)
		file[i] = pattern(i);
	EXPECT(pwrite(fd, file, FILE_SIZE, 0) == (ssize_t)FILE_SIZE);
	rdonly = open(path, O_RDONLY);
	EXPECT(rdonly >= 0);
	unlink(path);
	EXPECT(pipe(pipefd) == 0);
	closed = dup(fd);
	close(closed);

	/* Checks the thunk makes before any ioctl: the outputs stay untouched. */
	EXPECT(ais(file, 4096, fd, 0, HSA_AIS_READ, &copied, &status) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(copied == 0xdead && status == 0x77);
	EXPECT(ais(vram + 60 * KB, 8 * KB, fd, 0, HSA_AIS_READ, &copied, &status) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(ais(vram - 4096, 8 * KB, fd, 0, HSA_AIS_READ, &copied, &status) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(ais(vram, 4096, fd, 0, 0, &copied, &status) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(ais(vram, 4096, fd, 0, HSA_AIS_READ | HSA_AIS_WRITE, &copied, &status) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(copied == 0xdead && status == 0x77);

	if (mainline) {
		/* No AIS_OP on a mainline kernel: ENOTTY, ERROR; VRAM unchanged. */
		EXPECT(ais(vram, 4096, fd, 0, HSA_AIS_READ, &copied, &status) == HSAKMT_STATUS_ERROR);
		EXPECT(vram[0] == 0x5a && vram[4095] == 0x5a);
		goto done;
	}

	/* Read 32 KiB of the file from 16 KiB into VRAM at 8 KiB; around it nothing changes. */
	EXPECT(ais(vram + 8 * KB, 32 * KB, fd, 16 * KB, HSA_AIS_READ, &copied, &status) == HSAKMT_STATUS_SUCCESS);
	EXPECT(copied == 32 * KB && status == 0);
	EXPECT(memcmp(vram + 8 * KB, file + 16 * KB, 32 * KB) == 0);
	EXPECT(vram[8 * KB - 1] == 0x5a && vram[40 * KB] == 0x5a);

	/* Modify it and write 16 KiB of it back past the end of the file (at 80 KiB): the file
	 * grows, the gap reads as zeros. */
	for (i = 8 * KB; i < 24 * KB; i++)
		vram[i] ^= 0xff;
	EXPECT(ais(vram + 8 * KB, 16 * KB, fd, 80 * KB, HSA_AIS_WRITE, &copied, &status) == HSAKMT_STATUS_SUCCESS);
	EXPECT(copied == 16 * KB && status == 0);
	EXPECT(pread(fd, back, 16 * KB, 80 * KB) == (ssize_t)(16 * KB));
	for (i = 0; i < 16 * KB; i++)
		if (back[i] != (unsigned char)(file[16 * KB + i] ^ 0xff))
			break;
	EXPECT(i == 16 * KB);
	EXPECT(pread(fd, back, 16 * KB, 64 * KB) == (ssize_t)(16 * KB));
	EXPECT(back[0] == 0 && back[16 * KB - 1] == 0);
	EXPECT(lseek(fd, 0, SEEK_END) == 96 * KB);
	/* The file's first 64 KiB are as written. */
	EXPECT(pread(fd, back, 32 * KB, 0) == (ssize_t)(32 * KB) && memcmp(back, file, 32 * KB) == 0);

	/* A read across the end of the file stops there: a short count, success. */
	memset(vram, 0x5a, 16 * KB);
	EXPECT(ais(vram, 16 * KB, fd, 88 * KB, HSA_AIS_READ, &copied, &status) == HSAKMT_STATUS_SUCCESS);
	EXPECT(copied == 8 * KB && status == 0);
	EXPECT(vram[0] == (unsigned char)(file[16 * KB + 8 * KB] ^ 0xff) && vram[8 * KB] == 0x5a);

	/* NULL outputs are allowed; size 0 does nothing and succeeds. */
	EXPECT(hsaKmtAisReadWriteFile(vram + 4 * KB, 4 * KB, fd, 0, HSA_AIS_READ, NULL, NULL) == HSAKMT_STATUS_SUCCESS);
	EXPECT(memcmp(vram + 4 * KB, file, 4 * KB) == 0);
	EXPECT(ais(vram, 0, fd, 0, HSA_AIS_READ, &copied, &status) == HSAKMT_STATUS_SUCCESS);
	EXPECT(copied == 0 && status == 0);

	/* The kernel's refusals: ERROR, with its errno in *status and nothing copied. */
	EXPECT(ais(vram, 4096, fd, 100, HSA_AIS_READ, &copied, &status) == HSAKMT_STATUS_ERROR);
	EXPECT(status == -EINVAL && copied == 0);
	EXPECT(ais(vram, 100, fd, 0, HSA_AIS_READ, &copied, &status) == HSAKMT_STATUS_ERROR);
	EXPECT(status == -EINVAL && copied == 0);
	EXPECT(ais(vram, 4096, -1, 0, HSA_AIS_READ, &copied, &status) == HSAKMT_STATUS_ERROR);
	EXPECT(status == -EINVAL && copied == 0);
	EXPECT(ais(vram, 4096, closed, 0, HSA_AIS_READ, &copied, &status) == HSAKMT_STATUS_ERROR);
	EXPECT(status == -EBADF && copied == 0);
	EXPECT(ais(vram, 4096, pipefd[0], 0, HSA_AIS_READ, &copied, &status) == HSAKMT_STATUS_ERROR);
	EXPECT(status == -ENODEV && copied == 0);
	EXPECT(ais(vram, 4096, rdonly, 0, HSA_AIS_WRITE, &copied, &status) == HSAKMT_STATUS_ERROR);
	EXPECT(status == -EBADF && copied == 0);
	EXPECT(ais(host, 4096, fd, 0, HSA_AIS_READ, &copied, &status) == HSAKMT_STATUS_ERROR);
	EXPECT(status == -EINVAL && copied == 0);
	/* The read-only descriptor still reads. */
	EXPECT(ais(vram + 12 * KB, 4 * KB, rdonly, 4 * KB, HSA_AIS_READ, &copied, &status) == HSAKMT_STATUS_SUCCESS);
	EXPECT(copied == 4 * KB && status == 0 && memcmp(vram + 12 * KB, file + 4 * KB, 4 * KB) == 0);

	/* Freed memory is no BO any more. */
	EXPECT(hsaKmtUnmapMemoryToGPU(vram) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtFreeMemory(vram, VRAM_SIZE) == HSAKMT_STATUS_SUCCESS);
	EXPECT(ais(vram, 4096, fd, 0, HSA_AIS_READ, &copied, &status) == HSAKMT_STATUS_INVALID_PARAMETER);

done:
	close(fd);
	close(rdonly);
	close(pipefd[0]);
	close(pipefd[1]);
	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	if (failures)
		return 1;
	printf("ais: OK\n");
	return 0;
}
