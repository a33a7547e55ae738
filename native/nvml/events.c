/* Event sets: created, registered against, waited on and freed; no event ever occurs.
 *
 * nvidia-smi's table and -q create a set before they print anything and give up
 * with "Internal NVML error" if they cannot; DCGM-style monitors register
 * for what nvmlDeviceGetSupportedEventTypes reports and then wait. A wait
 * sleeps for its timeout (or until the set is freed) and answers
 * NVML_ERROR_TIMEOUT, as a healthy GPU with nothing to report does.
 *
 * Thread-safe: every live set is on one list under one mutex, so a handle is
 * checked against that list before it is used, and a freed or foreign pointer is
 * refused instead of read.
 */
#define _POSIX_C_SOURCE 200809L     /* clock_gettime, pthread_condattr_setclock under -std=c11 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <nvml.h>

#include "hooks.h"

struct nvmlEventSet_st {
    struct nvmlEventSet_st *next;          /* the list of live sets */
    unsigned long long registered;          /* union of the types registered on any device */
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

nvmlReturn_t DECLDIR nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long *eventTypes)
{
    nvmlReturn_t ret = mock_check_device(device);
    if (ret != NVML_SUCCESS)
        return ret;
    if (eventTypes == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *eventTypes = supported_types(device);
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set)
{
    nvmlReturn_t ret = mock_check_device(device);
    if (ret != NVML_SUCCESS)
        return ret;
    if ((eventTypes & ~(unsigned long long)nvmlEventTypeAll) != 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((eventTypes & ~supported_types(device)) != 0)
        return NVML_ERROR_NOT_SUPPORTED;        /* none of them registered, as NVML does */
    pthread_mutex_lock(&sets_lock);
    if (!is_live(set)) {
        pthread_mutex_unlock(&sets_lock);
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    set->registered |= eventTypes;
    pthread_mutex_unlock(&sets_lock);
    return NVML_SUCCESS;
}

static nvmlReturn_t wait_for_nothing(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
    nvmlReturn_t ret = mock_require_init();
    if (ret != NVML_SUCCESS)
        return ret;
    if (data == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_once(&sets_once, init_cond);

    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += timeoutms / 1000;
    deadline.tv_nsec += (long)(timeoutms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec += 1;
        deadline.tv_nsec -= 1000000000L;
    }

    pthread_mutex_lock(&sets_lock);
    if (!is_live(set)) {
        pthread_mutex_unlock(&sets_lock);
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    /* No event is ever queued: sleep out the timeout, or until the set goes away. */
    int rc = 0;
    while (rc == 0 && is_live(set))
        rc = pthread_cond_timedwait(&sets_changed, &sets_lock, &deadline);
    pthread_mutex_unlock(&sets_lock);
    return NVML_ERROR_TIMEOUT;
}

nvmlReturn_t DECLDIR nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t * data, unsigned int timeoutms)
{
    return wait_for_nothing(set, data, timeoutms);
}

nvmlReturn_t DECLDIR nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t * data, unsigned int timeoutms)
{
    return wait_for_nothing(set, data, timeoutms);
}
