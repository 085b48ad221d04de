/* The debugger interface through the public API on the model: a debugger process (this one)
 * forks a target that opens the KFD, enables the runtime and creates two SDMA queues and an AQL
 * queue; the debugger ptrace-attaches (PTRACE_SEIZE, as the kernel requires), enables debugging
 * with a pipe as the event file, receives the memory violation of a FENCE to an unmapped address
 * (the target's runtime is not told), queries it, suspends a queue (a FENCE submitted meanwhile
 * does not run) and resumes it (it runs), reads queue and device snapshots, and checks the bad
 * input: not attached (EPERM: ERROR), unknown op, NULL buffers, snapshot size negotiation.
 * Exit 0 on success; no check is skipped (ptrace must work). */
#define _GNU_SOURCE
#include "expect.h"
#include "gpu_memory.h"
#include <hsakmt/hsakmt.h>
#include <hsakmt/linux/kfd_ioctl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#define WILD 0x7ff0001234ull /* inside the GPU VM, never mapped */

static int to_child[2], to_parent[2];
static void say(int fd, char c) { EXPECT(write(fd, &c, 1) == 1); }
static char hear(int fd)
{
	char c = 0;
	EXPECT(read(fd, &c, 1) == 1);
	return c;
}

static HSAuint32 first_gpu(HsaNodeProperties *props)
{
	HsaSystemProperties sys;
	EXPECT(hsaKmtAcquireSystemProperties(&sys) == HSAKMT_STATUS_SUCCESS);
	for (HSAuint32 n = 0; n < sys.NumNodes; n++) {
		EXPECT(hsaKmtGetNodeProperties(n, props) == HSAKMT_STATUS_SUCCESS);
		if (props->KFDGpuID)
			return n;
	}
	return 0;
}

static void submit(HsaQueueResource *q, uint32_t *ring, const uint32_t *pk, size_t bytes)
{
	memcpy(ring, pk, bytes);
	__atomic_store_n(q->Queue_write_ptr_aql, (HSAuint64)bytes, __ATOMIC_RELEASE);
	__atomic_store_n(q->Queue_DoorBell_aql, (HSAuint64)bytes, __ATOMIC_RELEASE);
}

/* The target: answers 'y' / 'n' for its checks. */
static int target(void)
{
	HsaNodeProperties props;
	static uint64_t r_debug_stand_in;
	EXPECT(hsaKmtOpenKFD() == HSAKMT_STATUS_SUCCESS);
	HSAuint32 gpu = first_gpu(&props);
	EXPECT(hsaKmtRuntimeEnable(&r_debug_stand_in, true) == HSAKMT_STATUS_SUCCESS);
	uint32_t *ra = gpu_host_memory(gpu, 4096), *rb = gpu_host_memory(gpu, 4096), *raql = gpu_host_memory(gpu, 4096);
	volatile uint32_t *dst = gpu_host_memory(gpu, 4096);
	HsaQueueResource qa, qb, qaql;
	memset(&qa, 0, sizeof(qa));
	memset(&qb, 0, sizeof(qb));
	memset(&qaql, 0, sizeof(qaql));
	uint64_t *ptrs = gpu_host_memory(gpu, 4096); /* AQL: the caller's read/write pointers */
	qaql.Queue_read_ptr_aql = &ptrs[0];
	qaql.Queue_write_ptr_aql = &ptrs[1];
	EXPECT(hsaKmtCreateQueue(gpu, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_NORMAL, ra, 4096, NULL, &qa) == 0);
	EXPECT(hsaKmtCreateQueue(gpu, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_NORMAL, rb, 4096, NULL, &qb) == 0);
	EXPECT(hsaKmtCreateQueue(gpu, HSA_QUEUE_COMPUTE_AQL, 100, HSA_QUEUE_PRIORITY_NORMAL, raql, 4096, NULL, &qaql) == 0);
	HsaEvent *fault = new_event(HSA_EVENTTYPE_MEMORY, gpu, true);
	EXPECT(fault != NULL);
	say(to_parent[1], 'r'); /* ready */

	EXPECT(hear(to_child[0]) == 'f');
	uint32_t pf[] = { 5, (uint32_t)WILD, (uint32_t)(WILD >> 32), 1 };
	submit(&qa, ra, pf, sizeof(pf));
	/* The debugger enabled the exception: the runtime's memory event stays unset. */
	say(to_parent[1], hsaKmtWaitOnEvent(fault, 500) == HSAKMT_STATUS_WAIT_TIMEOUT ? 'y' : 'n');

	EXPECT(hear(to_child[0]) == 's'); /* the debugger suspended queue B */
	uint64_t a = (uintptr_t)dst;
	uint32_t pk[] = { 5, (uint32_t)a, (uint32_t)(a >> 32), 0x1234 };
	submit(&qb, rb, pk, sizeof(pk));
	usleep(300 * 1000);
	say(to_parent[1], dst[0] == 0 && *qb.Queue_read_ptr_aql == 0 ? 'y' : 'n');

	EXPECT(hear(to_child[0]) == 'c'); /* resumed */
	int ok = 0;
	for (int i = 0; i < 5000 && !ok; i++) {
		ok = dst[0] == 0x1234;
		if (!ok)
			usleep(1000);
	}
	say(to_parent[1], ok ? 'y' : 'n');
	EXPECT(hear(to_child[0]) == 'q');
	EXPECT(hsaKmtDestroyQueue(qaql.QueueId) == 0);
	EXPECT(hsaKmtDestroyQueue(qb.QueueId) == 0);
	EXPECT(hsaKmtDestroyQueue(qa.QueueId) == 0);
	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	return failures ? 1 : 0;
}

static HSAKMT_STATUS trap(struct kfd_ioctl_dbg_trap_args *a, pid_t pid, uint32_t op, HSAuint64 *ret)
{
	a->pid = (uint32_t)pid;
	a->op = op;
	return hsaKmtDebugTrapIoctl(a, NULL, ret);
}

int main(void)
{
	HsaNodeProperties props;
	struct kfd_ioctl_dbg_trap_args a;
	HSAuint64 ret = 0;
	int ev[2];

	setvbuf(stdout, NULL, _IONBF, 0);
	/* Before the fork: the model's device (and its debug board) is the family's. */
	EXPECT(hsaKmtOpenKFD() == HSAKMT_STATUS_SUCCESS);
	HSAuint32 gpu = first_gpu(&props);
	EXPECT(gpu != 0);
	EXPECT(pipe(to_child) == 0 && pipe(to_parent) == 0 && pipe(ev) == 0);

	/* Debugging oneself needs no ptrace (upstream's hsaKmtDbgEnable / Disable). */
	void *rinfo = NULL;
	HSAuint32 rsize = 0;
	EXPECT(hsaKmtDbgEnable(&rinfo, &rsize) == HSAKMT_STATUS_SUCCESS);
	EXPECT(rsize == sizeof(struct kfd_runtime_info) && rinfo != NULL);
	EXPECT(hsaKmtDbgEnable(&rinfo, &rsize) == HSAKMT_STATUS_ERROR); /* EALREADY */
	EXPECT(hsaKmtDbgDisable() == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtDbgDisable() == HSAKMT_STATUS_ERROR); /* not enabled: EINVAL */
	free(rinfo);
	EXPECT(hsaKmtDbgEnable(NULL, &rsize) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtDebugTrapIoctl(NULL, NULL, &ret) == HSAKMT_STATUS_INVALID_PARAMETER);
	/* The deprecated interface: mainline's EPERM, upstream's ERROR. */
	EXPECT(hsaKmtDbgRegister(gpu) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtDbgRegister(9999) == HSAKMT_STATUS_INVALID_NODE_UNIT);

	pid_t child = fork();
	if (child == 0) {
		close(to_child[1]);
		close(to_parent[0]);
		_exit(target());
	}
	EXPECT(hear(to_parent[0]) == 'r');

	/* Not ptrace-attached: EPERM (ERROR, the ioctl's -1 in DebugReturn). */
	memset(&a, 0, sizeof(a));
	a.enable.dbg_fd = (uint32_t)ev[1];
	EXPECT(trap(&a, child, KFD_IOC_DBG_TRAP_ENABLE, &ret) == HSAKMT_STATUS_ERROR);
	EXPECT(ret == (HSAuint64)-1);
	/* A pid with no process: ESRCH, also ERROR. */
	EXPECT(trap(&a, 0x3ffffff0, KFD_IOC_DBG_TRAP_ENABLE, &ret) == HSAKMT_STATUS_ERROR);

	long pt = ptrace(PTRACE_SEIZE, child, 0, 0);
	EXPECT(pt == 0);
	if (pt != 0)
		printf("ptrace(PTRACE_SEIZE) failed: the debugger test needs ptrace\n");

	struct kfd_runtime_info info;
	memset(&info, 0xff, sizeof(info));
	memset(&a, 0, sizeof(a));
	a.enable.dbg_fd = (uint32_t)ev[1];
	a.enable.rinfo_ptr = (uintptr_t)&info;
	a.enable.rinfo_size = sizeof(info);
	a.enable.exception_mask = KFD_EC_MASK(EC_DEVICE_MEMORY_VIOLATION) | KFD_EC_MASK(EC_QUEUE_NEW);
	EXPECT(trap(&a, child, KFD_IOC_DBG_TRAP_ENABLE, &ret) == HSAKMT_STATUS_SUCCESS && ret == 0);
	EXPECT(info.runtime_state == DEBUG_RUNTIME_STATE_ENABLED && info.ttmp_setup == 1 && info.r_debug != 0);
	EXPECT(trap(&a, child, KFD_IOC_DBG_TRAP_ENABLE, &ret) == HSAKMT_STATUS_ERROR); /* EALREADY */
	memset(&a, 0, sizeof(a));
	EXPECT(trap(&a, child, 99, &ret) == HSAKMT_STATUS_ERROR); /* unknown op: EINVAL */
	memset(&a, 0, sizeof(a));
	EXPECT(trap(&a, child, KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT, &ret) == HSAKMT_STATUS_ERROR); /* EAGAIN: nothing yet */

	/* The fault: one byte on the event file, then the event and its data. */
	say(to_child[1], 'f');
	struct pollfd p = { .fd = ev[0], .events = POLLIN };
	EXPECT(poll(&p, 1, 10000) == 1);
	char byte = 0;
	EXPECT(read(ev[0], &byte, 1) == 1 && byte == '.');
	EXPECT(hear(to_parent[0]) == 'y');
	memset(&a, 0, sizeof(a));
	EXPECT(trap(&a, child, KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT, &ret) == HSAKMT_STATUS_SUCCESS);
	EXPECT(a.query_debug_event.gpu_id == props.KFDGpuID && a.query_debug_event.queue_id == 0);
	EXPECT(a.query_debug_event.exception_mask & KFD_EC_MASK(EC_DEVICE_MEMORY_VIOLATION));
	struct kfd_hsa_memory_exception_data mem;
	memset(&mem, 0, sizeof(mem));
	memset(&a, 0, sizeof(a));
	a.query_exception_info.source_id = props.KFDGpuID;
	a.query_exception_info.exception_code = EC_DEVICE_MEMORY_VIOLATION;
	a.query_exception_info.clear_exception = 0;
	EXPECT(trap(&a, child, KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO, &ret) == HSAKMT_STATUS_ERROR); /* NULL info: EINVAL */
	a.query_exception_info.info_ptr = (uintptr_t)&mem;
	a.query_exception_info.info_size = sizeof(mem);
	a.query_exception_info.clear_exception = 1;
	EXPECT(trap(&a, child, KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO, &ret) == HSAKMT_STATUS_SUCCESS);
	EXPECT(a.query_exception_info.info_size == sizeof(mem));
	EXPECT(mem.va == (WILD & ~0xfffull) && mem.gpu_id == props.KFDGpuID && mem.failure.NotPresent == 1);
	EXPECT(trap(&a, child, KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO, &ret) == HSAKMT_STATUS_ERROR); /* cleared: ENODATA */

	/* Queue snapshot: the count first, then a short buffer, then all (newest first). */
	struct kfd_queue_snapshot_entry qs[4];
	memset(&a, 0, sizeof(a));
	a.queue_snapshot.entry_size = 0;
	EXPECT(trap(&a, child, KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT, &ret) == HSAKMT_STATUS_ERROR); /* EINVAL */
	memset(&a, 0, sizeof(a));
	a.queue_snapshot.entry_size = sizeof(qs[0]);
	EXPECT(trap(&a, child, KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT, &ret) == HSAKMT_STATUS_SUCCESS);
	EXPECT(a.queue_snapshot.num_queues == 3);
	memset(qs, 0, sizeof(qs));
	memset(&a, 0, sizeof(a));
	a.queue_snapshot.snapshot_buf_ptr = (uintptr_t)qs;
	a.queue_snapshot.num_queues = 3;
	a.queue_snapshot.entry_size = sizeof(qs[0]) + 16; /* larger than the kernel's: answered 64 */
	a.queue_snapshot.exception_mask = KFD_EC_MASK(EC_QUEUE_NEW);
	struct { struct kfd_queue_snapshot_entry e; char pad[16]; } big[3];
	a.queue_snapshot.snapshot_buf_ptr = (uintptr_t)big;
	EXPECT(trap(&a, child, KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT, &ret) == HSAKMT_STATUS_SUCCESS);
	EXPECT(a.queue_snapshot.num_queues == 3 && a.queue_snapshot.entry_size == sizeof(struct kfd_queue_snapshot_entry));
	EXPECT(big[0].e.queue_type == KFD_IOC_QUEUE_TYPE_COMPUTE_AQL && big[1].e.queue_type == KFD_IOC_QUEUE_TYPE_SDMA &&
	       big[2].e.queue_type == KFD_IOC_QUEUE_TYPE_SDMA);
	for (int i = 0; i < 3; i++)
		EXPECT(big[i].e.gpu_id == props.KFDGpuID && big[i].e.ring_size == 4096 && big[i].e.ring_base_address != 0 &&
		       big[i].e.write_pointer_address != 0 && big[i].e.read_pointer_address != 0);
	EXPECT(big[0].e.ctx_save_restore_address != 0 && big[0].e.ctx_save_restore_area_size != 0); /* AQL: CWSR */
	uint32_t qb_id = big[1].e.queue_id; /* queue B: created second */

	/* Suspend queue B (and an unknown id): 1 suspended, the unknown one marked invalid. */
	uint32_t ids[2] = { qb_id, 0x3ff };
	memset(&a, 0, sizeof(a));
	a.suspend_queues.queue_array_ptr = (uintptr_t)ids;
	a.suspend_queues.num_queues = 2;
	EXPECT(trap(&a, child, KFD_IOC_DBG_TRAP_SUSPEND_QUEUES, &ret) == HSAKMT_STATUS_SUCCESS && ret == 1);
	EXPECT(ids[0] == qb_id && ids[1] == (0x3ff | (uint32_t)KFD_DBG_QUEUE_INVALID_MASK));
	say(to_child[1], 's');
	EXPECT(hear(to_parent[0]) == 'y'); /* the FENCE did not run while suspended */
	uint32_t rid[1] = { qb_id };
	memset(&a, 0, sizeof(a));
	a.resume_queues.queue_array_ptr = (uintptr_t)rid;
	a.resume_queues.num_queues = 1;
	EXPECT(trap(&a, child, KFD_IOC_DBG_TRAP_RESUME_QUEUES, &ret) == HSAKMT_STATUS_SUCCESS && ret == 1);
	EXPECT(rid[0] == qb_id);
	say(to_child[1], 'c');
	EXPECT(hear(to_parent[0]) == 'y'); /* and did after resume */
	/* Resuming a queue that is not suspended: 0 resumed, marked as an error. */
	memset(&a, 0, sizeof(a));
	a.resume_queues.queue_array_ptr = (uintptr_t)rid;
	a.resume_queues.num_queues = 1;
	EXPECT(trap(&a, child, KFD_IOC_DBG_TRAP_RESUME_QUEUES, &ret) == HSAKMT_STATUS_SUCCESS && ret == 0);
	EXPECT(rid[0] & (uint32_t)KFD_DBG_QUEUE_ERROR_MASK);

	/* Device snapshot: count, then the entries from the topology. */
	struct kfd_dbg_device_info_entry dev[64];
	memset(&a, 0, sizeof(a));
	a.device_snapshot.entry_size = sizeof(dev[0]);
	EXPECT(trap(&a, child, KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT, &ret) == HSAKMT_STATUS_ERROR); /* NULL buffer */
	a.device_snapshot.snapshot_buf_ptr = (uintptr_t)dev;
	EXPECT(trap(&a, child, KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT, &ret) == HSAKMT_STATUS_SUCCESS);
	uint32_t ndev = a.device_snapshot.num_devices;
	EXPECT(ndev >= 1 && ndev <= 64);
	memset(&a, 0, sizeof(a));
	memset(dev, 0, sizeof(dev));
	a.device_snapshot.snapshot_buf_ptr = (uintptr_t)dev;
	a.device_snapshot.num_devices = ndev;
	a.device_snapshot.entry_size = sizeof(dev[0]);
	EXPECT(trap(&a, child, KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT, &ret) == HSAKMT_STATUS_SUCCESS);
	EXPECT(dev[0].gpu_id == props.KFDGpuID && dev[0].device_id == props.DeviceId && dev[0].location_id == props.LocationId);
	EXPECT(dev[0].simd_count == props.NumFComputeCores && dev[0].gfx_target_version != 0);
	EXPECT(dev[0].gpuvm_limit > dev[0].gpuvm_base && dev[0].lds_limit > dev[0].lds_base);

	/* Address watch: stored (the model runs no shaders, it never triggers); an unknown GPU. */
	memset(&a, 0, sizeof(a));
	a.set_node_address_watch.gpu_id = props.KFDGpuID;
	a.set_node_address_watch.address = 0x1000;
	a.set_node_address_watch.mask = 0xfffff000;
	EXPECT(trap(&a, child, KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH, &ret) == HSAKMT_STATUS_SUCCESS);
	uint32_t wid = a.set_node_address_watch.id;
	EXPECT(wid < 4);
	a.set_node_address_watch.gpu_id = 0xdead;
	EXPECT(trap(&a, child, KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH, &ret) == HSAKMT_STATUS_ERROR); /* ENODEV */
	memset(&a, 0, sizeof(a));
	a.clear_node_address_watch.gpu_id = props.KFDGpuID;
	a.clear_node_address_watch.id = wid;
	EXPECT(trap(&a, child, KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH, &ret) == HSAKMT_STATUS_SUCCESS);
	EXPECT(trap(&a, child, KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH, &ret) == HSAKMT_STATUS_ERROR); /* not owned */
	memset(&a, 0, sizeof(a));
	a.launch_mode.launch_mode = 2; /* not a mode */
	EXPECT(trap(&a, child, KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE, &ret) == HSAKMT_STATUS_ERROR);
	a.launch_mode.launch_mode = KFD_DBG_TRAP_WAVE_LAUNCH_MODE_HALT;
	EXPECT(trap(&a, child, KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE, &ret) == HSAKMT_STATUS_SUCCESS);

	memset(&a, 0, sizeof(a));
	EXPECT(trap(&a, child, KFD_IOC_DBG_TRAP_DISABLE, &ret) == HSAKMT_STATUS_SUCCESS);
	EXPECT(trap(&a, child, KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT, &ret) == HSAKMT_STATUS_ERROR); /* not enabled: EINVAL */
	say(to_child[1], 'q');
	int status = 0;
	EXPECT(waitpid(child, &status, 0) == child);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	if (!failures)
		printf("debug: OK\n");
	return failures ? 1 : 0;
}
