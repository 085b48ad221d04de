/* A client of an installed libhsakmt, built by tools/install/tests/install.rs through pkg-config
 * and through the CMake package: it says which libhsakmt the loader picked, opens the KFD, prints
 * the topology facts the test checks, allocates, touches and frees memory on the first GPU and
 * closes. Upstream names only, as any program written against ROCm's libhsakmt. */
#define _GNU_SOURCE
#include <link.h>
#include <stdio.h>
#include <string.h>

#include <hsakmt/hsakmt.h>

#ifdef HSAKMT_USER_AMDGPU
/* From libdrm_amdgpu (declared here: the package provides no libdrm include directory, as
 * upstream's). Only its address is taken: linking it is the point, hsakmt::hsakmt must bring
 * libdrm_amdgpu along. */
int amdgpu_device_initialize(int fd, unsigned int *major, unsigned int *minor, void **dev);
#endif

#define CHECK(call)                                                           \
    do {                                                                      \
        HSAKMT_STATUS s_ = (call);                                            \
        if (s_ != HSAKMT_STATUS_SUCCESS) {                                    \
            fprintf(stderr, "FAIL %s: status %d\n", #call, (int)s_);          \
            return 1;                                                         \
        }                                                                     \
    } while (0)

static int print_libhsakmt(struct dl_phdr_info *info, size_t size, void *found) {
    (void)size;
    if (info->dlpi_name && strstr(info->dlpi_name, "libhsakmt.so")) {
        printf("library %s\n", info->dlpi_name);
        *(int *)found = 1;
    }
    return 0;
}

int main(void) {
    int found = 0;
    dl_iterate_phdr(print_libhsakmt, &found);
    if (!found)
        printf("library static\n");

    CHECK(hsaKmtOpenKFD());
    HsaVersionInfo version;
    CHECK(hsaKmtGetVersion(&version));
    printf("kfd %u.%u\n", version.KernelInterfaceMajorVersion, version.KernelInterfaceMinorVersion);

    HsaSystemProperties sys;
    CHECK(hsaKmtAcquireSystemProperties(&sys));
    printf("nodes %u\n", sys.NumNodes);
    HSAuint32 first_gpu = 0;
    int have_gpu = 0;
    for (HSAuint32 n = 0; n < sys.NumNodes; n++) {
        HsaNodeProperties p;
        CHECK(hsaKmtGetNodeProperties(n, &p));
        if (p.NumFComputeCores == 0) {
            printf("node %u cpu cores %u\n", n, p.NumCPUCores);
            continue;
        }
        printf("node %u gpu gfx %u.%u.%u simds %u device 0x%x\n", n, p.EngineId.ui32.Major, p.EngineId.ui32.Minor,
               p.EngineId.ui32.Stepping, p.NumFComputeCores, p.DeviceId);
        if (!have_gpu) {
            first_gpu = n;
            have_gpu = 1;
        }
    }

    if (have_gpu) {
        HsaMemFlags flags;
        memset(&flags, 0, sizeof flags);
        flags.ui32.NonPaged = 1;
        flags.ui32.HostAccess = 1;
        flags.ui32.CoarseGrain = 1;
        void *mem = NULL;
        CHECK(hsaKmtAllocMemory(first_gpu, 1 << 20, flags, &mem));
        memset(mem, 0x5a, 1 << 20);
        int ok = ((unsigned char *)mem)[(1 << 20) - 1] == 0x5a;
        CHECK(hsaKmtFreeMemory(mem, 1 << 20));
        printf("alloc on node %u %s\n", first_gpu, ok ? "ok" : "bad");
    }

#ifdef HSAKMT_USER_AMDGPU
    void *volatile amdgpu = (void *)&amdgpu_device_initialize;
    printf("amdgpu %s\n", amdgpu ? "linked" : "missing");
#endif

    CHECK(hsaKmtReleaseSystemProperties());
    CHECK(hsaKmtCloseKFD());
    printf("closed\n");
    return 0;
}
