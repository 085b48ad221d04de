/* fork() while other threads are inside the event calls: two threads set, reset and poll one
 * event without pause while the main thread forks children that reopen the thunk and use
 * events of their own. A child must never inherit a lock some parent thread held at the fork
 * (it would hang in its first event call): each child arms alarm(), so a hang is a SIGALRM
 * death the parent reports. */
#include <hsakmt/hsakmt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;
#define EXPECT(cond)                                                                      \
	do {                                                                              \
		if (!(cond)) {                                                            \
			printf("FAIL line %d (pid %d): %s\n", __LINE__, (int)getpid(), #cond); \
			failures++;                                                       \
		}                                                                         \
	} while (0)

static atomic_int stop;
static HsaEvent *shared_ev;
static atomic_long setters, waiters;

static void *setter(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		if (hsaKmtSetEvent(shared_ev) != HSAKMT_STATUS_SUCCESS || hsaKmtResetEvent(shared_ev) != HSAKMT_STATUS_SUCCESS)
			return (void *)1;
		atomic_fetch_add(&setters, 1);
	}
	return NULL;
}

static void *waiter(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		HSAKMT_STATUS s = hsaKmtWaitOnEvent(shared_ev, 0);
		if (s != HSAKMT_STATUS_SUCCESS && s != HSAKMT_STATUS_WAIT_TIMEOUT)
			return (void *)1;
		atomic_fetch_add(&waiters, 1);
	}
	return NULL;
}

/* The child: its first calls are the ones that hung (reopen, then CreateEvent). */
static void child(void)
{
	HsaEventDescriptor d;
	HsaEvent *ev = NULL;
	HsaSystemProperties sys;

	alarm(10);
	EXPECT(hsaKmtSetEvent(shared_ev) == HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED);
	EXPECT(hsaKmtOpenKFD() == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtAcquireSystemProperties(&sys) == HSAKMT_STATUS_SUCCESS);
	memset(&d, 0, sizeof(d));
	d.EventType = HSA_EVENTTYPE_SIGNAL;
	EXPECT(hsaKmtCreateEvent(&d, true, false, &ev) == HSAKMT_STATUS_SUCCESS);
	if (ev) {
		EXPECT(hsaKmtWaitOnEvent(ev, 0) == HSAKMT_STATUS_WAIT_TIMEOUT);
		EXPECT(hsaKmtSetEvent(ev) == HSAKMT_STATUS_SUCCESS);
		EXPECT(hsaKmtWaitOnEvent(ev, 0) == HSAKMT_STATUS_SUCCESS);
		EXPECT(hsaKmtDestroyEvent(ev) == HSAKMT_STATUS_SUCCESS);
	}
	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	fflush(stdout);
	_exit(failures ? 1 : 0);
}

int main(int argc, char **argv)
{
	int forks = argc > 1 ? atoi(argv[1]) : 100;
	HsaEventDescriptor d;
	HsaSystemProperties sys;
	pthread_t t[2];
	int hung = 0, failed = 0;

	EXPECT(hsaKmtOpenKFD() == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtAcquireSystemProperties(&sys) == HSAKMT_STATUS_SUCCESS);
	memset(&d, 0, sizeof(d));
	d.EventType = HSA_EVENTTYPE_SIGNAL;
	EXPECT(hsaKmtCreateEvent(&d, true, false, &shared_ev) == HSAKMT_STATUS_SUCCESS);
	if (!shared_ev)
		return 1;
	EXPECT(pthread_create(&t[0], NULL, setter, NULL) == 0);
	EXPECT(pthread_create(&t[1], NULL, waiter, NULL) == 0);
	/* Both threads are busy in the thunk before the first fork. */
	while (atomic_load(&setters) < 100 || atomic_load(&waiters) < 100)
		usleep(100);

	for (int i = 0; i < forks; i++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0) {
			EXPECT(pid >= 0);
			break;
		}
		if (pid == 0)
			child();
		int status = 0;
		EXPECT(waitpid(pid, &status, 0) == pid);
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
			hung++;
		else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failed++;
	}

	atomic_store(&stop, 1);
	void *r0 = NULL, *r1 = NULL;
	pthread_join(t[0], &r0);
	pthread_join(t[1], &r1);
	EXPECT(r0 == NULL && r1 == NULL);
	printf("forks %d, children hung %d, failed %d; parent sets %ld, waits %ld\n", forks, hung, failed,
	       atomic_load(&setters), atomic_load(&waiters));
	EXPECT(hung == 0);
	EXPECT(failed == 0);
	EXPECT(hsaKmtDestroyEvent(shared_ev) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	if (failures)
		return 1;
	printf("events_fork: OK\n");
	return 0;
}
