/* Event sets: created, registered against, waited on and freed; Xids the node
 * agent's kernellog daemon injects are delivered (xid.c reads them).
 *
 * nvidia-smi's table and -q create a set before they print anything and give up
 * with "Internal NVML error" if they cannot; DCGM-style monitors register
 * for what nvmlDeviceGetSupportedEventTypes reports and then wait. A wait
 * polls the events file every POLL_MS until its timeout (or until the set is
 * freed): an injected Xid newer than the set, on a GPU registered for
 * nvmlEventTypeXidCriticalError in it, is returned once per set (eventData =
 * the Xid); so is an ECC error `mokka ctl ecc` injects, to a set registered for its
 * type (nvmlEventTypeSingleBitEccError or ...DoubleBitEccError, eventData 0); otherwise the wait answers NVML_ERROR_TIMEOUT, as a healthy GPU
 * with nothing to report does. A set sees only events injected after it was
 * created, as NVML delivers only events that occur after registration.
 *
 * MIG: an Xid raised on a MIG device (`mokka ctl xid MIG-... 79`) is delivered,
 * as NVML delivers it, on the parent GPU's handle with gpuInstanceId and
 * computeInstanceId naming the instance (0xFFFFFFFF for one it does not name, and
 * for a whole GPU's Xid); a health check registered on the parent tells its MIG
 * devices apart by these. nvml.h: "This API does not currently support
 * per-instance event reporting using MIG device handles": a MIG device handle
 * registers its parent GPU, so its set hears every instance's Xids and the
 * whole GPU's, each naming its instance.
 *
 * Sequence numbers only grow while one writer numbers them. A document whose
 * last_seq is below the one a set saw last was numbered afresh (its writer
 * replaced a document it could not trust): the set starts over from 0 and
 * delivers what the new numbering lists, rather than waiting for numbers it has
 * passed, so no sequence number read once can stop later Xids from coming.
 *
 * Thread-safe: every live set is on one list under one mutex, so a handle is
 * checked against that list before it is used, and a freed or foreign pointer is
 * refused instead of read. The file is read outside the lock.
 */
#define _POSIX_C_SOURCE 200809L     /* clock_gettime, pthread_condattr_setclock under -std=c11 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <nvml.h>

#include "hooks.h"
#include "mig/mig.h"
#include "mokka_names.h"

#define POLL_MS 50
#define EVENTS_PATH_MAX 4096

struct nvmlEventSet_st {
    struct nvmlEventSet_st *next;          /* the list of live sets */
    unsigned long long registered;          /* union of the types registered on any device */
    unsigned long long types[MOKKA_MAX_GPUS];   /* registered, by physical GPU */
    unsigned long long seen;                /* the newest event sequence this set is past */
    unsigned long long last;                /* the document's last_seq when this set last read it */
    char events[EVENTS_PATH_MAX];           /* the Xid events file ("" when none) */
};

static pthread_mutex_t sets_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sets_changed;         /* broadcast when a set is freed */
static pthread_once_t sets_once = PTHREAD_ONCE_INIT;
static struct nvmlEventSet_st *live_sets;

static void init_cond(void)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&sets_changed, &attr);
    pthread_condattr_destroy(&attr);
}

/* With sets_lock held. */
static int is_live(const struct nvmlEventSet_st *set)
{
    for (const struct nvmlEventSet_st *s = live_sets; s != NULL; s = s->next)
        if (s == set)
            return 1;
    return 0;
}

/* What a data-center GPU reports: P-state, clock and Xid events always, ECC
 * events while ECC is on, MIG reconfiguration where MIG exists. */
static unsigned long long supported_types(nvmlDevice_t device)
{
    unsigned long long types = nvmlEventTypePState | nvmlEventTypeClock | nvmlEventTypeXidCriticalError;
    nvmlEnableState_t current, pending;
    unsigned int mig_current, mig_pending;

    if (nvmlDeviceGetEccMode(device, &current, &pending) == NVML_SUCCESS && current == NVML_FEATURE_ENABLED)
        types |= nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError;
    if (nvmlDeviceGetMigMode(device, &mig_current, &mig_pending) == NVML_SUCCESS)
        types |= nvmlEventMigConfigChange;
    return types;
}

nvmlReturn_t DECLDIR nvmlEventSetCreate(nvmlEventSet_t *set)
{
    nvmlReturn_t ret = mock_require_init();
    if (ret != NVML_SUCCESS)
        return ret;
    if (set == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct nvmlEventSet_st *created = calloc(1, sizeof *created);
    if (created == NULL)
        return NVML_ERROR_MEMORY;
    if (mock_xid_events_path(created->events, sizeof created->events)) {
        struct mock_xid_event none[1];
        unsigned long long last = 0;
        /* The baseline: only what is injected from now on. Read settled, as a set made
         * while the agent rewrites the file would otherwise take every old event for new. */
        if (mock_xid_read(created->events, ~0ull, none, 0, &last, 1) >= 0)
            created->seen = created->last = last;
    }
    pthread_mutex_lock(&sets_lock);
    created->next = live_sets;
    live_sets = created;
    pthread_mutex_unlock(&sets_lock);
    *set = created;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlEventSetFree(nvmlEventSet_t set)
{
    nvmlReturn_t ret = mock_require_init();
    if (ret != NVML_SUCCESS)
        return ret;
    pthread_once(&sets_once, init_cond);
    pthread_mutex_lock(&sets_lock);
    struct nvmlEventSet_st **link = &live_sets;
    while (*link != NULL && *link != set)
        link = &(*link)->next;
    if (*link == NULL) {
        pthread_mutex_unlock(&sets_lock);
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    *link = set->next;
    free(set);
    pthread_cond_broadcast(&sets_changed);  /* waiters on it return */
    pthread_mutex_unlock(&sets_lock);
    return NVML_SUCCESS;
}

/* The GPU whose events `device` hears: itself, or a MIG device's parent. */
static nvmlReturn_t event_gpu(nvmlDevice_t device, nvmlDevice_t *gpu, unsigned int *phys)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mig_gpu_or_parent(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    *gpu = mock_handle_of_physical(g->phys);
    *phys = g->phys;
    return *gpu != NULL ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t DECLDIR nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long *eventTypes)
{
    nvmlDevice_t gpu;
    unsigned int phys;
    nvmlReturn_t ret = event_gpu(device, &gpu, &phys);
    if (ret != NVML_SUCCESS)
        return ret;
    if (eventTypes == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *eventTypes = supported_types(gpu);
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set)
{
    nvmlDevice_t gpu;
    unsigned int phys;
    nvmlReturn_t ret = event_gpu(device, &gpu, &phys);
    if (ret != NVML_SUCCESS)
        return ret;
    if ((eventTypes & ~(unsigned long long)nvmlEventTypeAll) != 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((eventTypes & ~supported_types(gpu)) != 0)
        return NVML_ERROR_NOT_SUPPORTED;        /* none of them registered, as NVML does */
    pthread_mutex_lock(&sets_lock);
    if (!is_live(set)) {
        pthread_mutex_unlock(&sets_lock);
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    set->registered |= eventTypes;
    if (phys < MOKKA_MAX_GPUS)
        set->types[phys] |= eventTypes;
    pthread_mutex_unlock(&sets_lock);
    return NVML_SUCCESS;
}

static void add_ms(struct timespec *t, unsigned long long ms)
{
    t->tv_sec += (time_t)(ms / 1000);
    t->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t->tv_nsec >= 1000000000L) {
        t->tv_sec += 1;
        t->tv_nsec -= 1000000000L;
    }
}

static int before(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* With sets_lock held: the first of `events` this set takes, or 0. Events for
 * GPUs it did not register Xids on are passed over for good. */
static int take(nvmlEventSet_t set, const struct mock_xid_event *events, int count, nvmlEventData_t *data)
{
    for (int i = 0; i < count; i++) {
        const struct mock_xid_event *e = &events[i];
        if (e->seq <= set->seen)
            continue;
        set->seen = e->seq;
        nvmlDevice_t device = mock_handle_of_physical(e->gpu);
        if (device == NULL || !(set->types[e->gpu] & e->type))
            continue;
        data->device = device;
        data->eventType = e->type;
        data->eventData = e->type == nvmlEventTypeXidCriticalError ? e->code : 0;   /* nvml.h: 0 for others */
        data->gpuInstanceId = e->gi;           /* MOCK_XID_NO_INSTANCE: not a MIG device's */
        data->computeInstanceId = e->ci;
        return 1;
    }
    return 0;
}

static nvmlReturn_t wait_for_event(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
    nvmlReturn_t ret = mock_require_init();
    if (ret != NVML_SUCCESS)
        return ret;
    if (data == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_once(&sets_once, init_cond);

    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    add_ms(&deadline, timeoutms);

    char path[EVENTS_PATH_MAX];
    pthread_mutex_lock(&sets_lock);
    if (!is_live(set)) {
        pthread_mutex_unlock(&sets_lock);
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    memcpy(path, set->events, sizeof path);
    unsigned long long seen = set->seen;
    pthread_mutex_unlock(&sets_lock);

    struct mock_xid_event events[MOKKA_MAX_GPUS];
    for (;;) {
        unsigned long long last = 0;
        int count = path[0] ? mock_xid_read(path, seen, events, MOKKA_MAX_GPUS, &last, 0) : -1;
        pthread_mutex_lock(&sets_lock);
        if (!is_live(set)) {                    /* freed while we read: as before, a timeout */
            pthread_mutex_unlock(&sets_lock);
            return NVML_ERROR_TIMEOUT;
        }
        if (count >= 0 && last < set->last) {   /* numbered afresh: read it again from 0 */
            set->seen = seen = 0;
            set->last = last;
            pthread_mutex_unlock(&sets_lock);
            continue;
        }
        if (count >= 0)
            set->last = last;
        if (count > 0 && take(set, events, count, data)) {
            pthread_mutex_unlock(&sets_lock);
            return NVML_SUCCESS;
        }
        seen = set->seen;
        struct timespec now, wake;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (!before(&now, &deadline)) {
            pthread_mutex_unlock(&sets_lock);
            return NVML_ERROR_TIMEOUT;
        }
        wake = now;
        add_ms(&wake, POLL_MS);
        if (before(&deadline, &wake))
            wake = deadline;
        pthread_cond_timedwait(&sets_changed, &sets_lock, &wake);
        int live = is_live(set);
        pthread_mutex_unlock(&sets_lock);
        if (!live)
            return NVML_ERROR_TIMEOUT;
    }
}

nvmlReturn_t DECLDIR nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t * data, unsigned int timeoutms)
{
    return wait_for_event(set, data, timeoutms);
}

nvmlReturn_t DECLDIR nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t * data, unsigned int timeoutms)
{
    return wait_for_event(set, data, timeoutms);
}
