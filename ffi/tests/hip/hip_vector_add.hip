/*
 * A HIP program as Debian's hipcc builds it (`hipcc --offload-arch=gfx90a`), run on our
 * libhsakmt.so.1 and the model by ffi/tests/debian_rocm52.rs: the device's properties, hipMalloc,
 * hipMemcpy host -> device (pageable host memory: the runtime stages it), a vector-add kernel
 * launch, hipMemcpy device -> host, then hipMemset and a device -> device copy; every result
 * checked against the CPU.
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
