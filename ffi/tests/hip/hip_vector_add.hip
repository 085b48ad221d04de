/*
 * A HIP program as Debian's hipcc builds it (`hipcc --offload-arch=gfx90a`), run on our
 * libhsakmt.so.1 and the model by ffi/tests/debian_rocm52.rs: the device's properties, hipMalloc,
 * hipMemcpy host -> device (pageable host memory: the runtime stages it), a vector-add kernel
 * launch, hipMemcpy device -> host, then hipMemset and a device -> device copy; then a block
 * reduction through LDS with atomics on a stream, fed from pinned memory by hipMemcpyAsync and
 * timed with events; then division, square roots and exp/log/sin/cos; then __shfl_down and
 * __shfl_xor within waves; every result checked against the CPU.
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

/* Division, square roots and the device library's exp/log/sin/cos (issue 14): what HIP
 * programs met first among the instructions the model lacked. */
__global__ void math(const float *a, const float *b, const double *d, float *o, double *od, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float x = a[i], y = b[i];
	o[7 * i] = x / y;
	o[7 * i + 1] = sqrtf(fabsf(x));
	o[7 * i + 2] = expf(x * 0.01f);
	o[7 * i + 3] = __expf(x * 0.01f);
	o[7 * i + 4] = logf(fabsf(x));
	o[7 * i + 5] = sinf(x);
	o[7 * i + 6] = cosf(x);
	od[2 * i] = d[i] / (double)y;
	od[2 * i + 1] = sqrt(fabs(d[i]));
}

/* Per wave of 64: the sum of i % 97 by __shfl_down (ds_bpermute), and each lane's value
 * exchanged with lane ^ 5 by __shfl_xor. */
__global__ void wave_sums(int *sums, int *swapped, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	int v = i < n ? i % 97 : 0;
	swapped[i] = __shfl_xor(i, 5);
	for (int off = 32; off > 0; off >>= 1)
		v += __shfl_down(v, off);
	if ((threadIdx.x & 63) == 0)
		sums[i / 64] = v;
}

/* Distance in floats between two finite floats (or both NaN: 0). */
static unsigned long long ulps(float g, float w)
{
	if (g != g || w != w)
		return g != g && w != w ? 0 : ~0ull;
	int gi, wi;
	memcpy(&gi, &g, 4);
	memcpy(&wi, &w, 4);
	long long go = gi < 0 ? -(long long)(gi & 0x7fffffff) : gi, wo = wi < 0 ? -(long long)(wi & 0x7fffffff) : wi;
	return go > wo ? go - wo : wo - go;
}

static int same(const void *g, const void *w, size_t size, int nan)
{
	return !memcmp(g, w, size) || nan;
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

	/* Math: f32 and f64 division and sqrt correctly rounded (HIP's default), expf, logf,
	 * sinf, cosf within 2 ULP, __expf within its documented 2 + 1.16 |x| ULP. */
	enum { M = 4096 };
	static float ma[M], mb[M], mo[7 * M];
	static double md[M], mod[2 * M];
	unsigned r = 12345;
	for (int i = 0; i < M; i++) {
		r = r * 1103515245u + 12345u;
		ma[i] = ((float)(r >> 8) / 16777216.0f - 0.5f) * 200.0f;
		r = r * 1103515245u + 12345u;
		mb[i] = ((float)(r >> 8) / 16777216.0f - 0.5f) * ((i % 7) == 0 ? 1e-30f : (i % 11) == 0 ? 1e30f : 3.0f);
		md[i] = (double)ma[i] * 1e150 * (double)ma[(i + 1) % M];
	}
	const float sp[] = { 0.0f, -0.0f, 1.0f / 0.0f, -1.0f / 0.0f, 0.0f / 0.0f, 1e-40f, 3e38f, 1e-30f };
	for (int i = 0; i < 64; i++) {
		ma[i] = sp[i % 8];
		mb[i] = sp[i / 8];
	}
	float *dma, *dmb, *dmo;
	double *dmd, *dmod;
	CK(hipMalloc((void **)&dma, sizeof ma));
	CK(hipMalloc((void **)&dmb, sizeof mb));
	CK(hipMalloc((void **)&dmo, sizeof mo));
	CK(hipMalloc((void **)&dmd, sizeof md));
	CK(hipMalloc((void **)&dmod, sizeof mod));
	CK(hipMemcpy(dma, ma, sizeof ma, hipMemcpyHostToDevice));
	CK(hipMemcpy(dmb, mb, sizeof mb, hipMemcpyHostToDevice));
	CK(hipMemcpy(dmd, md, sizeof md, hipMemcpyHostToDevice));
	hipLaunchKernelGGL(math, dim3(M / 256), dim3(256), 0, 0, dma, dmb, dmd, dmo, dmod, M);
	CK(hipGetLastError());
	CK(hipDeviceSynchronize());
	CK(hipMemcpy(mo, dmo, sizeof mo, hipMemcpyDeviceToHost));
	CK(hipMemcpy(mod, dmod, sizeof mod, hipMemcpyDeviceToHost));
	for (int i = 0; i < M; i++) {
		float x = ma[i], y = mb[i], *g = &mo[7 * i];
		volatile float q = x / y, s = sqrtf(fabsf(x));
		volatile double dq = md[i] / (double)y, ds = sqrt(fabs(md[i]));
		double xs = (double)(x * 0.01f);
		float w[5] = { (float)exp(xs), (float)log(fabs((double)x)), (float)sin((double)x), (float)cos((double)x), (float)exp(xs) };
		unsigned long long tol[5] = { 2, 2, 2, 2, 2 + (unsigned long long)(1.16 * fabs(xs)) };
		int k[5] = { 2, 4, 5, 6, 3 };
		if (!same(&g[0], (const void *)&q, 4, g[0] != g[0] && q != q) || !same(&g[1], (const void *)&s, 4, g[1] != g[1] && s != s) ||
		    !same(&mod[2 * i], (const void *)&dq, 8, mod[2 * i] != mod[2 * i] && dq != dq) || !same(&mod[2 * i + 1], (const void *)&ds, 8, 0)) {
			printf("FAIL math: x %a y %a d %a: x/y %a (want %a) sqrt %a (want %a) d/y %a (want %a) sqrt %a (want %a)\n", (double)x, (double)y,
			       md[i], (double)g[0], (double)q, (double)g[1], (double)s, mod[2 * i], (double)dq, mod[2 * i + 1], (double)ds);
			return 1;
		}
		for (int j = 0; j < 5; j++) {
			if (x != x || (x == 0 && j == 1) || x - x != 0)
				continue;
			if (ulps(g[k[j]], w[j]) > tol[j]) {
				printf("FAIL math: x %a: result %d = %a, want %a\n", (double)x, k[j], (double)g[k[j]], (double)w[j]);
				return 1;
			}
		}
	}
	printf("ok math %d\n", M);
	CK(hipFree(dma));
	CK(hipFree(dmb));
	CK(hipFree(dmo));
	CK(hipFree(dmd));
	CK(hipFree(dmod));

	/* Cross-lane: __shfl_down and __shfl_xor within each wave of 64. */
	int *dsums, *dswap, waves = grid * block / 64;
	CK(hipMalloc((void **)&dsums, waves * sizeof(int)));
	CK(hipMalloc((void **)&dswap, grid * block * sizeof(int)));
	hipLaunchKernelGGL(wave_sums, dim3(grid), dim3(block), 0, 0, dsums, dswap, n);
	CK(hipGetLastError());
	int *hsums = (int *)malloc(waves * sizeof(int)), *hswap = (int *)malloc(grid * block * sizeof(int));
	if (!hsums || !hswap) {
		printf("FAIL malloc\n");
		return 1;
	}
	CK(hipMemcpy(hsums, dsums, waves * sizeof(int), hipMemcpyDeviceToHost));
	CK(hipMemcpy(hswap, dswap, grid * block * sizeof(int), hipMemcpyDeviceToHost));
	for (int w = 0; w < waves; w++) {
		int want_sum = 0;
		for (int i = w * 64; i < w * 64 + 64 && i < n; i++)
			want_sum += i % 97;
		if (hsums[w] != want_sum) {
			printf("FAIL __shfl_down: wave %d sums to %d, want %d\n", w, hsums[w], want_sum);
			return 1;
		}
	}
	for (int i = 0; i < grid * block; i++) {
		if (hswap[i] != (i ^ 5)) {
			printf("FAIL __shfl_xor: lane %d got %d, want %d\n", i, hswap[i], i ^ 5);
			return 1;
		}
	}
	printf("ok shuffles %d waves\n", waves);
	CK(hipFree(dsums));
	CK(hipFree(dswap));
	free(hsums);
	free(hswap);

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
