// Source compatibility, C++: code written the way ROCm's runtime and kfdtest were written for
// released ROCm (up to 7.0) compiles unchanged against our headers: HsaMemMapFlags values,
// hsaKmtMapMemoryToGPUNodes taking one, function-pointer tables built from the thunk's
// functions (the runtime's DTIF loader casts `&hsaKmtX` to a pointer type it declares itself),
// the dropped UUIDs and function. Run: prints nothing, exit 0; the test also checks which
// symbols the object binds.
#include <hsakmt/hsakmt.h>

#include <cstdio>

typedef HSAKMT_STATUS(PFN_hsaKmtMapMemoryToGPUNodes)(void *MemoryAddress, HSAuint64 MemorySizeInBytes,
                                                     HSAuint64 *AlternateVAGPU, HsaMemMapFlags MemMapFlags,
                                                     HSAuint64 NumberOfNodes, HSAuint32 *NodeArray);
typedef HSAKMT_STATUS(PFN_hsaKmtGetNodeProperties)(HSAuint32 NodeId, HsaNodeProperties *NodeProperties);

struct ThunkTable {
    PFN_hsaKmtMapMemoryToGPUNodes *map_nodes;
    PFN_hsaKmtGetNodeProperties *node_properties;
};

static HSAKMT_STATUS map_for_runtime(void *p, HSAuint64 size, HSAuint32 node) {
    HsaMemMapFlags map_flags = {};
    map_flags.ui32.PageSize = HSA_PAGE_SIZE_4KB;
    map_flags.ui32.HostAccess = 1;
    HSAuint64 alternate_va = 0;
    return hsaKmtMapMemoryToGPUNodes(p, size, &alternate_va, map_flags, 1, &node);
}

static HSAKMT_STATUS map_newest(void *p, HSAuint64 size, HSAuint32 node) {
    HsaMemFlags flags = {};
    HSAuint64 alternate_va = 0;
    return hsaKmtMapMemoryToGPUNodes(p, size, &alternate_va, flags, 1, &node);
}

int main(int argc, char **) {
    ThunkTable t = {
        (PFN_hsaKmtMapMemoryToGPUNodes *)(&hsaKmtMapMemoryToGPUNodes),
        (PFN_hsaKmtGetNodeProperties *)(&hsaKmtGetNodeProperties),
    };
    HSA_UUID iommu = HSA_PROFILEBLOCK_AMD_IOMMUV2;
    HSA_UUID driver = HSA_PROFILEBLOCK_AMD_KERNEL_DRIVER;
    if (argc > 5) {  // never taken: the calls only have to compile and link
        HSAuint32 major, minor;
        hsaKmtGetKernelDebugTrapVersionInfo(&major, &minor);
        map_for_runtime(nullptr, 0, 0);
        map_newest(nullptr, 0, 0);
    }
    if (!t.map_nodes || !t.node_properties || iommu.Data1 == driver.Data1) {
        std::puts("bad table");
        return 1;
    }
    HsaSystemProperties sys;
    HsaNodeProperties node0;
    if (hsaKmtOpenKFD() != HSAKMT_STATUS_SUCCESS || hsaKmtAcquireSystemProperties(&sys) != HSAKMT_STATUS_SUCCESS ||
        t.node_properties(0, &node0) != HSAKMT_STATUS_SUCCESS || node0.NumCPUCores == 0) {
        std::puts("the table's GetNodeProperties failed");
        return 2;
    }
    std::printf("node 0: %u CPU cores\n", node0.NumCPUCores);
    return hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS ? 0 : 3;
}
