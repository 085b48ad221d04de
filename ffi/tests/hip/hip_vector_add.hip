/*
 * A HIP program as Debian's hipcc builds it (`hipcc --offload-arch=gfx90a`), run on our
 * libhsakmt.so.1 and the model by ffi/tests/debian_rocm52.rs: the device's properties, hipMalloc,
 * hipMemcpy host -> device (pageable host memory: the runtime stages it), a vector-add kernel
 * launch, hipMemcpy device -> host, then hipMemset and a device -> device copy; then a block
 * reduction through LDS with atomics on a stream, fed from pinned memory by hipMemcpyAsync and
 * timed with events; every result checked against the CPU.
 *
 * Usage: hip_vector_add <n>    prints "device <name> <gcnArchName> cus <n>", one "ok <step>" line
 * per step and "OK", exits 0; else "FAIL ..." and 1.
 */
#include <hip/hip_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__global__ void vector_add(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[i] + b[i];
}

/* Sums of blocks of 256 through LDS (__shared__, __syncthreads), added up with atomicAdd. */
__global__ void block_sums(const unsigned *in, unsigned *total, unsigned *blocks, int n)
{
	__shared__ unsigned s[256];
	int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
	s[t] = i < n ? in[i] : 0;
	__syncthreads();
	for (int k = 128; k > 0; k >>= 1) {
		if (t < k)
			s[t] += s[t + k];
		__syncthreads();
	}
	if (t == 0) {
		atomicAdd(total, s[0]);
		atomicAdd(blocks, 1u);
	}
}

#define CK(x)                                                                        \
	do {                                                                         \
		hipError_t e_ = (x);                                                 \
		if (e_ != hipSuccess) {                                              \
			printf("FAIL %s = %d (%s)\n", #x, (int)e_, hipGetErrorString(e_)); \
			return 1;                                                    \
		}                                                                    \
	} while (0)

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1 << 20;
	if (n <= 0) {
		printf("FAIL usage: hip_vector_add <n>\n");
		return 1;
	}
	size_t bytes = (size_t)n * sizeof(float);
	int count = 0;
	CK(hipGetDeviceCount(&count));
	hipDeviceProp_t p;
	CK(hipGetDeviceProperties(&p, 0));
	printf("devices %d\n", count);
	printf("device %s %s cus %d\n", p.name, p.gcnArchName, p.multiProcessorCount);
	fflush(stdout);

	float *a = (float *)malloc(bytes), *b = (float *)malloc(bytes), *c = (float *)malloc(bytes);
	unsigned char *u = (unsigned char *)malloc(bytes);
	if (!a || !b || !c || !u) {
		printf("FAIL malloc\n");
		return 1;
	}
	for (int i = 0; i < n; i++) {
		a[i] = (float)i * 0.5f;
		b[i] = 1000.0f - (float)(i % 4099);
	}
	float *da, *db, *dc;
	CK(hipMalloc((void **)&da, bytes));
	CK(hipMalloc((void **)&db, bytes));
	CK(hipMalloc((void **)&dc, bytes));
	CK(hipMemcpy(da, a, bytes, hipMemcpyHostToDevice));
	CK(hipMemcpy(db, b, bytes, hipMemcpyHostToDevice));
	printf("ok memcpy host to device %zu\n", bytes);

	int block = 256, grid = (n + block - 1) / block;
	hipLaunchKernelGGL(vector_add, dim3(grid), dim3(block), 0, 0, da, db, dc, n);
	CK(hipGetLastError());
	CK(hipDeviceSynchronize());
	memset(c, 0, bytes);
	CK(hipMemcpy(c, dc, bytes, hipMemcpyDeviceToHost));
	for (int i = 0; i < n; i++) {
		float want = a[i] + b[i];
		if (memcmp(&c[i], &want, sizeof want)) {
			printf("FAIL vector_add: c[%d] = %a, want %a\n", i, (double)c[i], (double)want);
			return 1;
		}
	}
	printf("ok vector_add %d\n", n);

	/* hipMemset: every byte of dc 0x5a, then a device -> device copy of da over its first half. */
	CK(hipMemset(dc, 0x5a, bytes));
	CK(hipMemcpy(dc, da, bytes / 2, hipMemcpyDeviceToDevice));
	CK(hipDeviceSynchronize());
	memset(u, 0, bytes);
	CK(hipMemcpy(u, dc, bytes, hipMemcpyDeviceToHost));
	for (size_t i = 0; i < bytes; i++) {
		unsigned char want = i < bytes / 2 ? ((const unsigned char *)a)[i] : 0x5a;
		if (u[i] != want) {
			printf("FAIL memset/device copy: byte %zu = %#x, want %#x\n", i, u[i], want);
			return 1;
		}
	}
	printf("ok memset and device to device %zu\n", bytes);

	/* Pinned host memory, a stream, events: hipMemcpyAsync in, the reduction, the sums out. */
	unsigned *pin, *dsum, *dv;
	CK(hipHostMalloc((void **)&pin, bytes, 0));
	unsigned long long want = 0;
	for (int i = 0; i < n; i++) {
		pin[i] = (unsigned)(i % 1000) * 3u + 1u;
		want += pin[i];
	}
	CK(hipMalloc((void **)&dv, bytes));
	CK(hipMalloc((void **)&dsum, 2 * sizeof(unsigned)));
	hipStream_t st;
	hipEvent_t e0, e1;
	CK(hipStreamCreate(&st));
	CK(hipEventCreate(&e0));
	CK(hipEventCreate(&e1));
	CK(hipMemcpyAsync(dv, pin, bytes, hipMemcpyHostToDevice, st));
	CK(hipMemsetAsync(dsum, 0, 2 * sizeof(unsigned), st));
	CK(hipEventRecord(e0, st));
	hipLaunchKernelGGL(block_sums, dim3(grid), dim3(block), 0, st, dv, dsum, dsum + 1, n);
	CK(hipGetLastError());
	CK(hipEventRecord(e1, st));
	unsigned sums[2] = { 0, 0 };
	CK(hipMemcpyAsync(pin, dsum, sizeof sums, hipMemcpyDeviceToHost, st));
	CK(hipStreamSynchronize(st));
	memcpy(sums, pin, sizeof sums);
	float ms = -1;
	CK(hipEventElapsedTime(&ms, e0, e1));
	if (sums[0] != (unsigned)want || sums[1] != (unsigned)grid || !(ms >= 0)) {
		printf("FAIL block_sums: total %u (want %u), blocks %u (want %d), %f ms\n", sums[0], (unsigned)want, sums[1], grid,
		       (double)ms);
		return 1;
	}
	printf("ok block_sums %d blocks, stream and events\n", grid);
	CK(hipEventDestroy(e0));
	CK(hipEventDestroy(e1));
	CK(hipStreamDestroy(st));
	CK(hipHostFree(pin));
	CK(hipFree(dv));
	CK(hipFree(dsum));

	CK(hipFree(da));
	CK(hipFree(db));
	CK(hipFree(dc));
	free(a);
	free(b);
	free(c);
	free(u);
	printf("OK\n");
	return 0;
}
