/* Events as a ROCm runtime uses them: signal events (auto and manual reset) with their slot in
 * the event page, set / query / reset, waits with timeouts of 0, a few ms and infinite, wait-any
 * and wait-all, event ages, a second thread setting an event the main thread waits on, and the
 * statuses of bad input (NULL and destroyed events, empty arrays). Exit 0 on success. */
#include "expect.h"
#include <hsakmt/hsakmt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static HsaEvent *create(HSA_EVENTTYPE type, bool manual, bool signaled)
{
	HsaEventDescriptor d;
	HsaEvent *e = NULL;

	memset(&d, 0, sizeof(d));
	d.EventType = type;
	d.NodeId = 0;
	d.SyncVar.SyncVar.UserDataPtrValue = 0x1234;
	d.SyncVar.SyncVarSize = 8;
	EXPECT(hsaKmtCreateEvent(&d, manual, signaled, &e) == HSAKMT_STATUS_SUCCESS);
	return e;
}

struct setter {
	HsaEvent *ev;
	int delay_us;
	int n;
};

static void *set_later(void *arg)
{
	struct setter *s = arg;

	for (int i = 0; i < s->n; i++) {
		usleep(s->delay_us);
		if (hsaKmtSetEvent(s->ev) != HSAKMT_STATUS_SUCCESS)
			return (void *)1;
	}
	return NULL;
}

int main(void)
{
	HsaSystemProperties sys;
	HsaEventDescriptor d;
	HsaEvent *tmp = NULL;

	memset(&d, 0, sizeof(d));
	EXPECT(hsaKmtCreateEvent(&d, false, false, &tmp) == HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED);
	EXPECT(hsaKmtOpenKFD() == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtAcquireSystemProperties(&sys) == HSAKMT_STATUS_SUCCESS);

	/* A signal event: EventId, HWData1/2/3 as upstream fills them; its slot is "unsignaled". */
	HsaEvent *autor = create(HSA_EVENTTYPE_SIGNAL, false, false);
	HsaEvent *manual = create(HSA_EVENTTYPE_SIGNAL, true, false);
	if (!autor || !manual) {
		printf("cannot create events\n");
		return 1;
	}
	EXPECT(autor->EventId != 0 && autor->EventId != manual->EventId);
	EXPECT(autor->EventData.EventType == HSA_EVENTTYPE_SIGNAL);
	EXPECT(autor->EventData.HWData1 == autor->EventId);
	EXPECT(autor->EventData.HWData3 == autor->EventId);
	EXPECT(autor->EventData.HWData2 != 0);
	EXPECT(manual->EventData.HWData2 == autor->EventData.HWData2 + 8 * (manual->EventId - autor->EventId));
	EXPECT(*(volatile uint64_t *)(uintptr_t)autor->EventData.HWData2 == UINT64_MAX);
	EXPECT(autor->EventData.EventData.SyncVar.SyncVar.UserDataPtrValue == 0x1234);
	EXPECT(autor->EventData.EventData.SyncVar.SyncVarSize == 8);
	EXPECT(hsaKmtQueryEventState(autor) == HSAKMT_STATUS_SUCCESS);

	/* Auto reset: one wait consumes a set. Manual reset: stays set until reset. */
	EXPECT(hsaKmtWaitOnEvent(autor, 0) == HSAKMT_STATUS_WAIT_TIMEOUT);
	EXPECT(hsaKmtSetEvent(autor) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtWaitOnEvent(autor, 0) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtWaitOnEvent(autor, 0) == HSAKMT_STATUS_WAIT_TIMEOUT);
	EXPECT(hsaKmtSetEvent(manual) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtWaitOnEvent(manual, 0) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtWaitOnEvent(manual, 10) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtResetEvent(manual) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtWaitOnEvent(manual, 0) == HSAKMT_STATUS_WAIT_TIMEOUT);
	EXPECT(hsaKmtSetEvent(autor) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtResetEvent(autor) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtWaitOnEvent(autor, 0) == HSAKMT_STATUS_WAIT_TIMEOUT);

	/* A short timeout really waits. */
	double t0 = now_ms();
	EXPECT(hsaKmtWaitOnEvent(autor, 30) == HSAKMT_STATUS_WAIT_TIMEOUT);
	double took = now_ms() - t0;
	EXPECT(took >= 29.0 && took < 5000.0);

	/* Created signaled. */
	HsaEvent *pre = create(HSA_EVENTTYPE_SIGNAL, false, true);
	EXPECT(hsaKmtWaitOnEvent(pre, 0) == HSAKMT_STATUS_SUCCESS);

	/* Wait-any and wait-all. */
	HsaEvent *three[3] = {create(HSA_EVENTTYPE_SIGNAL, true, false), create(HSA_EVENTTYPE_SIGNAL, true, false),
			      create(HSA_EVENTTYPE_SIGNAL, true, false)};
	EXPECT(hsaKmtWaitOnMultipleEvents(three, 3, false, 0) == HSAKMT_STATUS_WAIT_TIMEOUT);
	EXPECT(hsaKmtSetEvent(three[1]) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtWaitOnMultipleEvents(three, 3, false, 0) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtWaitOnMultipleEvents(three, 3, true, 5) == HSAKMT_STATUS_WAIT_TIMEOUT);
	EXPECT(hsaKmtSetEvent(three[0]) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtSetEvent(three[2]) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtWaitOnMultipleEvents(three, 3, true, 0) == HSAKMT_STATUS_SUCCESS);

	/* Ages: a set the waiter has not seen is never lost, even after the signal was consumed. */
	HSAuint64 age = 1;
	EXPECT(hsaKmtWaitOnEvent_Ext(autor, 0, &age) == HSAKMT_STATUS_SUCCESS); /* learns the age */
	EXPECT(age > 1);
	EXPECT(hsaKmtWaitOnEvent_Ext(autor, 0, &age) == HSAKMT_STATUS_WAIT_TIMEOUT);
	HSAuint64 first = age;
	EXPECT(hsaKmtSetEvent(autor) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtWaitOnEvent(autor, 0) == HSAKMT_STATUS_SUCCESS); /* consumes the signal */
	EXPECT(hsaKmtWaitOnEvent_Ext(autor, 0, &age) == HSAKMT_STATUS_SUCCESS);
	EXPECT(age > first);
	EXPECT(hsaKmtWaitOnEvent_Ext(autor, 0, &age) == HSAKMT_STATUS_WAIT_TIMEOUT);
	HSAuint64 ages[3] = {0, 0, 0};
	EXPECT(hsaKmtWaitOnMultipleEvents_Ext(three, 3, true, 0, ages) == HSAKMT_STATUS_SUCCESS);

	/* Another thread sets while this one waits forever (the thunk lock is not held while
	 * blocked, or the setter could not get in). */
	for (int round = 0; round < 5; round++) {
		struct setter s = {autor, 20000, 1};
		pthread_t th;
		EXPECT(pthread_create(&th, NULL, set_later, &s) == 0);
		EXPECT(hsaKmtWaitOnEvent(autor, HSA_EVENTTIMEOUT_INFINITE) == HSAKMT_STATUS_SUCCESS);
		void *ret = (void *)1;
		pthread_join(th, &ret);
		EXPECT(ret == NULL);
		EXPECT(hsaKmtWaitOnEvent(autor, 0) == HSAKMT_STATUS_WAIT_TIMEOUT);
	}
	/* Ping-pong with ages: the waiter counts every set. */
	{
		struct setter s = {autor, 200, 200};
		pthread_t th;
		HSAuint64 a = 1, seen = 0;
		EXPECT(hsaKmtWaitOnEvent_Ext(autor, 0, &a) != HSAKMT_STATUS_ERROR);
		HSAuint64 start = a;
		EXPECT(pthread_create(&th, NULL, set_later, &s) == 0);
		while (a - start < 200) {
			HSAuint64 before = a;
			if (hsaKmtWaitOnEvent_Ext(autor, 5000, &a) != HSAKMT_STATUS_SUCCESS)
				break;
			seen += a - before;
		}
		pthread_join(th, NULL);
		EXPECT(seen == 200);
	}

	/* Other event types: no slot; the CPU cannot set them. */
	HsaEvent *mem = create(HSA_EVENTTYPE_MEMORY, true, false);
	EXPECT(mem && mem->EventData.HWData2 == 0);
	EXPECT(hsaKmtSetEvent(mem) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtResetEvent(mem) == HSAKMT_STATUS_ERROR);
	EXPECT(hsaKmtWaitOnEvent(mem, 0) == HSAKMT_STATUS_WAIT_TIMEOUT);
	HsaEvent *hw = create(HSA_EVENTTYPE_HW_EXCEPTION, true, true);
	EXPECT(hsaKmtWaitOnEvent(hw, 0) == HSAKMT_STATUS_WAIT_TIMEOUT); /* IsSignaled ignored */
	HsaEvent *dbg = create(HSA_EVENTTYPE_DEBUG_EVENT, false, false);
	EXPECT(dbg && dbg->EventData.HWData2 != 0);

	/* Many signal events, each with its own slot. */
	enum { MANY = 1000 };
	static HsaEvent *many[MANY];
	for (int i = 0; i < MANY; i++) {
		many[i] = create(HSA_EVENTTYPE_SIGNAL, false, false);
		if (!many[i])
			break;
		if (i)
			EXPECT(many[i]->EventData.HWData2 != many[i - 1]->EventData.HWData2);
	}
	EXPECT(hsaKmtSetEvent(many[MANY - 1]) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtWaitOnMultipleEvents(many, MANY, false, 0) == HSAKMT_STATUS_SUCCESS);
	for (int i = 0; i < MANY; i++)
		EXPECT(hsaKmtDestroyEvent(many[i]) == HSAKMT_STATUS_SUCCESS);

	/* Bad input. */
	HsaEvent *none[1] = {NULL};
	HsaEvent fake;
	memset(&fake, 0, sizeof(fake));
	EXPECT(hsaKmtCreateEvent(NULL, false, false, &tmp) == HSAKMT_STATUS_INVALID_PARAMETER);
	d.EventType = HSA_EVENTTYPE_SIGNAL;
	EXPECT(hsaKmtCreateEvent(&d, false, false, NULL) == HSAKMT_STATUS_INVALID_PARAMETER);
	d.EventType = HSA_EVENTTYPE_MAXID;
	EXPECT(hsaKmtCreateEvent(&d, false, false, &tmp) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtSetEvent(NULL) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtResetEvent(NULL) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtQueryEventState(NULL) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtDestroyEvent(NULL) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtWaitOnEvent(NULL, 0) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtWaitOnEvent_Ext(NULL, 0, &age) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtWaitOnMultipleEvents(NULL, 1, true, 0) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtWaitOnMultipleEvents(three, 0, true, 0) == HSAKMT_STATUS_INVALID_PARAMETER);
	EXPECT(hsaKmtWaitOnMultipleEvents(none, 1, true, 0) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtSetEvent(&fake) == HSAKMT_STATUS_INVALID_HANDLE); /* not the thunk's */
	EXPECT(hsaKmtWaitOnEvent(&fake, HSA_EVENTTIMEOUT_INFINITE) == HSAKMT_STATUS_INVALID_HANDLE);

	/* A destroyed event is an error status, never a crash. */
	HsaEvent *gone = create(HSA_EVENTTYPE_SIGNAL, false, false);
	EXPECT(hsaKmtDestroyEvent(gone) == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtSetEvent(gone) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtQueryEventState(gone) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtWaitOnEvent(gone, 0) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtWaitOnEvent(gone, HSA_EVENTTIMEOUT_INFINITE) == HSAKMT_STATUS_INVALID_HANDLE);
	HsaEvent *mixed[2] = {autor, gone};
	EXPECT(hsaKmtWaitOnMultipleEvents(mixed, 2, false, 0) == HSAKMT_STATUS_INVALID_HANDLE);
	EXPECT(hsaKmtDestroyEvent(gone) == HSAKMT_STATUS_INVALID_HANDLE);

	HsaEvent *all[] = {autor, manual, pre, three[0], three[1], three[2], mem, hw, dbg};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		EXPECT(hsaKmtDestroyEvent(all[i]) == HSAKMT_STATUS_SUCCESS);

	EXPECT(hsaKmtReleaseSystemProperties() == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS);
	EXPECT(hsaKmtSetEvent(autor) == HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED);

	if (failures) {
		printf("events: %d failures\n", failures);
		return 1;
	}
	printf("events: OK\n");
	return 0;
}
