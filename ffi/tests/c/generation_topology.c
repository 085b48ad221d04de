/*
 * The topology as a client of any ABI generation reads it: every node, cache and io-link
 * member that ROCm 5.0's headers already had, printed by name. Compiled once against our
 * headers and once against an older generation's (Debian's ROCm 5.2 hsakmt.h, or a header
 * generated from a generation table), the two programs must print the same lines.
 *
 * Each struct is read into exactly sizeof() bytes of heap followed by guard bytes, so a
 * library that writes a newer (larger) layout is caught here and by valgrind.
 *
 * -DWITNESS=hsaKmtX makes the program import hsaKmtX (never called): the evidence of its
 * headers' generation that the library's detection reads from the loaded objects.
 *
 * -DVIA_DTIF: the program links no thunk; like the HSA runtime started with HSA_ENABLE_DTIF=1
 * it dlopens libdtif.so and takes every function with dlsym (then -DWITNESS names one more
 * function it takes, whose name is the evidence of its generation), calling DtifCreate("HSA")
 * first and DtifDestroy last.
 *
 * Usage: generation_topology   (HSAKMT_MODEL etc. from the environment)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include HSAKMT_HEADER

#ifdef VIA_DTIF
#include <dlfcn.h>
#define THUNK_FUNCTIONS(X)                                                              \
	X(hsaKmtOpenKFD) X(hsaKmtCloseKFD) X(hsaKmtAcquireSystemProperties)               \
	X(hsaKmtReleaseSystemProperties) X(hsaKmtGetNodeProperties)                        \
	X(hsaKmtGetNodeCacheProperties) X(hsaKmtGetNodeIoLinkProperties)
#define DECLARE(f) static __typeof__(f) *p_##f;
THUNK_FUNCTIONS(DECLARE)
#define hsaKmtOpenKFD (*p_hsaKmtOpenKFD)
#define hsaKmtCloseKFD (*p_hsaKmtCloseKFD)
#define hsaKmtAcquireSystemProperties (*p_hsaKmtAcquireSystemProperties)
#define hsaKmtReleaseSystemProperties (*p_hsaKmtReleaseSystemProperties)
#define hsaKmtGetNodeProperties (*p_hsaKmtGetNodeProperties)
#define hsaKmtGetNodeCacheProperties (*p_hsaKmtGetNodeCacheProperties)
#define hsaKmtGetNodeIoLinkProperties (*p_hsaKmtGetNodeIoLinkProperties)
#define STR2(x) #x
#define STR(x) STR2(x)

static void *dtif;

/* What the runtime's thunk loader does: every function or nothing, then DtifCreate("HSA"). */
static int load_dtif(void)
{
	dtif = dlopen("libdtif.so", RTLD_LAZY);
	if (!dtif) {
		printf("FAIL dlopen libdtif.so: %s\n", dlerror());
		return 0;
	}
#define LOAD(f)                                                                         \
	if (!(p_##f = (__typeof__(p_##f))dlsym(dtif, #f))) {                               \
		printf("FAIL dlsym %s\n", #f);                                           \
		return 0;                                                                 \
	}
	THUNK_FUNCTIONS(LOAD)
#ifdef WITNESS
	if (!dlsym(dtif, STR(WITNESS))) {
		printf("FAIL dlsym %s\n", STR(WITNESS));
		return 0;
	}
#endif
	void *(*create)(const char *) = (void *(*)(const char *))dlsym(dtif, "DtifCreate");
	if (!create || !create("HSA")) {
		printf("FAIL DtifCreate\n");
		return 0;
	}
	return 1;
}
#elif defined(WITNESS)
extern int WITNESS();
void *volatile witness_import = (void *)&WITNESS;
#endif

#define GUARD 64
#define GUARD_BYTE 0xA5

static int failures;

static void *guarded(size_t size)
{
	unsigned char *p = malloc(size + GUARD);
	memset(p, 0, size);
	memset(p + size, GUARD_BYTE, GUARD);
	return p;
}

static void check_guard(const void *p, size_t size, const char *what)
{
	const unsigned char *g = (const unsigned char *)p + size;
	for (int i = 0; i < GUARD; i++)
		if (g[i] != GUARD_BYTE) {
			printf("OVERWRITE %s: byte %zu past a %zu-byte struct\n", what, (size_t)i, size);
			failures++;
			return;
		}
}

#define P(fmt, expr) printf("  " #expr "=" fmt "\n", expr)

static void print_node(HSAuint32 n, const HsaNodeProperties *p)
{
	char name[65];
	for (int i = 0; i < 64; i++)
		name[i] = (char)(p->MarketingName[i] & 0x7f);
	name[64] = 0;
	printf("node %u\n", n);
	P("%u", p->NumCPUCores);
	P("%u", p->NumFComputeCores);
	P("%u", p->NumMemoryBanks);
	P("%u", p->NumCaches);
	P("%u", p->NumIOLinks);
	P("%u", p->CComputeIdLo);
	P("%u", p->FComputeIdLo);
	P("%u", p->Capability.ui32.HotPluggable);
	P("%u", p->Capability.ui32.HSAMMUPresent);
	P("%u", p->Capability.ui32.SharedWithGraphics);
	P("%u", p->Capability.ui32.QueueSizePowerOfTwo);
	P("%u", p->Capability.ui32.QueueSize32bit);
	P("%u", p->Capability.ui32.QueueIdleEvent);
	P("%u", p->Capability.ui32.VALimit);
	P("%u", p->Capability.ui32.WatchPointsSupported);
	P("%u", p->Capability.ui32.WatchPointsTotalBits);
	P("%u", p->Capability.ui32.DoorbellType);
	P("%u", p->Capability.ui32.AQLQueueDoubleMap);
	P("%u", p->Capability.ui32.DebugTrapSupported);
	P("%u", p->Capability.ui32.WaveLaunchTrapOverrideSupported);
	P("%u", p->Capability.ui32.WaveLaunchModeSupported);
	P("%u", p->Capability.ui32.PreciseMemoryOperationsSupported);
	P("%u", p->Capability.ui32.DEPRECATED_SRAM_EDCSupport);
	P("%u", p->Capability.ui32.Mem_EDCSupport);
	P("%u", p->Capability.ui32.RASEventNotify);
	P("%u", p->Capability.ui32.ASICRevision);
	P("%u", p->Capability.ui32.SRAM_EDCSupport);
	P("%u", p->Capability.ui32.SVMAPISupported);
	P("%u", p->Capability.ui32.CoherentHostAccess);
	P("%u", p->Capability.ui32.DebugSupportedFirmware);
	P("%u", p->MaxWavesPerSIMD);
	P("%u", p->LDSSizeInKB);
	P("%u", p->GDSSizeInKB);
	P("%u", p->WaveFrontSize);
	P("%u", p->NumShaderBanks);
	P("%u", p->NumArrays);
	P("%u", p->NumCUPerArray);
	P("%u", p->NumSIMDPerCU);
	P("%u", p->MaxSlotsScratchCU);
	P("%u", p->EngineId.ui32.uCode);
	P("%u", p->EngineId.ui32.Major);
	P("%u", p->EngineId.ui32.Minor);
	P("%u", p->EngineId.ui32.Stepping);
	P("0x%x", p->VendorId);
	P("0x%x", p->DeviceId);
	P("%u", p->LocationId);
	P("%llu", (unsigned long long)p->LocalMemSize);
	P("%u", p->MaxEngineClockMhzFCompute);
	P("%u", p->MaxEngineClockMhzCCompute);
	P("%d", p->DrmRenderMinor);
	printf("  MarketingName=%s\n", name);
	printf("  AMDName=%.64s\n", (const char *)p->AMDName);
	P("%u", p->uCodeEngineVersions.uCodeSDMA);
	P("%u", p->uCodeEngineVersions.uCodeRes);
	P("%u", (unsigned)p->DebugProperties.WatchAddrMaskLoBit);
	P("%u", (unsigned)p->DebugProperties.WatchAddrMaskHiBit);
	P("%u", (unsigned)p->DebugProperties.DispatchInfoAlwaysValid);
	P("%u", (unsigned)p->DebugProperties.AddressWatchpointShareKind);
	P("0x%llx", (unsigned long long)p->HiveID);
	P("%u", p->NumSdmaEngines);
	P("%u", p->NumSdmaXgmiEngines);
	P("%u", p->NumSdmaQueuesPerEngine);
	P("%u", p->NumCpQueues);
	P("%u", p->NumGws);
	P("%u", p->Domain);
	P("0x%llx", (unsigned long long)p->UniqueID);
	P("%u", p->VGPRSizePerCU);
	P("%u", p->SGPRSizePerCU);
}

static void print_cache(HSAuint32 i, const HsaCacheProperties *c)
{
	printf(" cache %u\n", i);
	P("%u", c->ProcessorIdLow);
	P("%u", c->CacheLevel);
	P("%u", c->CacheSize);
	P("%u", c->CacheLineSize);
	P("%u", c->CacheLinesPerTag);
	P("%u", c->CacheAssociativity);
	P("%u", c->CacheLatency);
	P("%u", c->CacheType.ui32.Data);
	P("%u", c->CacheType.ui32.Instruction);
	P("%u", c->CacheType.ui32.CPU);
	P("%u", c->CacheType.ui32.HSACU);
	for (int s = 0; s < 256; s++)
		if (c->SiblingMap[s])
			printf("  SiblingMap[%d]=%d\n", s, c->SiblingMap[s]);
}

static void print_link(HSAuint32 i, const HsaIoLinkProperties *l)
{
	printf(" link %u\n", i);
	P("%u", (unsigned)l->IoLinkType);
	P("%u", l->VersionMajor);
	P("%u", l->VersionMinor);
	P("%u", l->NodeFrom);
	P("%u", l->NodeTo);
	P("%u", l->Weight);
	P("%u", l->MinimumLatency);
	P("%u", l->MaximumLatency);
	P("%u", l->MinimumBandwidth);
	P("%u", l->MaximumBandwidth);
	P("%u", l->RecTransferSize);
	P("%u", l->Flags.ui32.Override);
	P("%u", l->Flags.ui32.NonCoherent);
	P("%u", l->Flags.ui32.NoAtomics32bit);
	P("%u", l->Flags.ui32.NoAtomics64bit);
	P("%u", l->Flags.ui32.NoPeerToPeerDMA);
}

#define CHECK(call)                                                                     \
	do {                                                                            \
		HSAKMT_STATUS s_ = (call);                                              \
		if (s_ != HSAKMT_STATUS_SUCCESS) {                                      \
			printf("FAIL %s = %d\n", #call, (int)s_);                     \
			return 1;                                                       \
		}                                                                       \
	} while (0)

int main(void)
{
	HsaSystemProperties sys;
#ifdef VIA_DTIF
	if (!load_dtif())
		return 1;
#endif
	CHECK(hsaKmtOpenKFD());
	CHECK(hsaKmtAcquireSystemProperties(&sys));
	printf("nodes %u\n", sys.NumNodes);
	for (HSAuint32 n = 0; n < sys.NumNodes; n++) {
		HsaNodeProperties *p = guarded(sizeof(*p));
		CHECK(hsaKmtGetNodeProperties(n, p));
		check_guard(p, sizeof(*p), "HsaNodeProperties");
		print_node(n, p);
		HsaCacheProperties *c = guarded(sizeof(*c) * p->NumCaches);
		CHECK(hsaKmtGetNodeCacheProperties(n, 0, p->NumCaches, c));
		check_guard(c, sizeof(*c) * p->NumCaches, "HsaCacheProperties[]");
		for (HSAuint32 i = 0; i < p->NumCaches; i++)
			print_cache(i, &c[i]);
		HsaIoLinkProperties *l = guarded(sizeof(*l) * p->NumIOLinks);
		CHECK(hsaKmtGetNodeIoLinkProperties(n, p->NumIOLinks, l));
		check_guard(l, sizeof(*l) * p->NumIOLinks, "HsaIoLinkProperties[]");
		for (HSAuint32 i = 0; i < p->NumIOLinks; i++)
			print_link(i, &l[i]);
		free(p);
		free(c);
		free(l);
	}
	CHECK(hsaKmtReleaseSystemProperties());
	CHECK(hsaKmtCloseKFD());
#ifdef VIA_DTIF
	void (*destroy)(void) = (void (*)(void))dlsym(dtif, "DtifDestroy");
	if (!destroy) {
		printf("FAIL dlsym DtifDestroy\n");
		return 1;
	}
	destroy();
#endif
	printf("overwrites %d\n", failures);
	return failures ? 2 : 0;
}
