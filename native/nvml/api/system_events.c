/* System event sets (nvml_newer.h): a watcher of the node, not of one GPU, registers for
 * the driver binding to or unbinding from a GPU and waits. The mock's GPUs never leave
 * their driver (nothing on a Mokka node unbinds them), so a wait with nothing to deliver
 * answers NVML_ERROR_TIMEOUT once its timeout has passed, as the real driver does on a
 * node where no GPU was bound or unbound; a timeout of 0 does not wait at all, and
 * freeing the set ends every wait on it at once.
 *
 * Thread-safe as events.c: every live set is on one list under one mutex, and a handle
 * is checked against it before use, so a freed or foreign pointer is refused (INVALID_
 * ARGUMENT) instead of read.
 */
#define _POSIX_C_SOURCE 200809L     /* clock_gettime, pthread_condattr_setclock under -std=c11 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "api.h"
#include "nvml_newer.h"

#define KNOWN_TYPES (nvmlSystemEventTypeGpuDriverUnbind | nvmlSystemEventTypeGpuDriverBind)

struct nvmlSystemEventSet_st {
    struct nvmlSystemEventSet_st *next;     /* the list of live sets */
    unsigned long long registered;           /* nvmlSystemEventType* bits */
};

static pthread_mutex_t sets_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sets_freed;           /* broadcast when a set is freed */
static pthread_once_t sets_once = PTHREAD_ONCE_INIT;
static struct nvmlSystemEventSet_st *live_sets;

static void init_cond(void)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&sets_freed, &attr);
    pthread_condattr_destroy(&attr);
}

/* With sets_lock held. */
static int is_live(const struct nvmlSystemEventSet_st *set)
{
    for (const struct nvmlSystemEventSet_st *s = live_sets; s != NULL; s = s->next)
        if (s == set)
            return 1;
    return 0;
}

/* The checks every call makes: the library, the request and its version. */
static nvmlReturn_t start(const void *request, unsigned int version, unsigned int expected)
{
    nvmlReturn_t ret = mock_require_init();
    if (ret != NVML_SUCCESS)
        return ret;
    if (request == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (version != expected)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    pthread_once(&sets_once, init_cond);
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlSystemEventSetCreate(nvmlSystemEventSetCreateRequest_t *request)
{
    nvmlReturn_t ret = start(request, request ? request->version : 0, nvmlSystemEventSetCreateRequest_v1);
    if (ret != NVML_SUCCESS)
        return ret;
    struct nvmlSystemEventSet_st *created = calloc(1, sizeof *created);
    if (created == NULL)
        return NVML_ERROR_MEMORY;
    pthread_mutex_lock(&sets_lock);
    created->next = live_sets;
    live_sets = created;
    pthread_mutex_unlock(&sets_lock);
    request->set = created;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlSystemEventSetFree(nvmlSystemEventSetFreeRequest_t *request)
{
    nvmlReturn_t ret = start(request, request ? request->version : 0, nvmlSystemEventSetFreeRequest_v1);
    if (ret != NVML_SUCCESS)
        return ret;
    pthread_mutex_lock(&sets_lock);
    struct nvmlSystemEventSet_st **link = &live_sets;
    while (*link != NULL && *link != request->set)
        link = &(*link)->next;
    if (*link == NULL) {
        pthread_mutex_unlock(&sets_lock);
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    struct nvmlSystemEventSet_st *freed = *link;
    *link = freed->next;
    free(freed);
    pthread_cond_broadcast(&sets_freed);    /* waiters on it return */
    pthread_mutex_unlock(&sets_lock);
    return NVML_SUCCESS;
}

/* Types beyond bind and unbind are none NVML defines: INVALID_ARGUMENT, nothing registered. */
nvmlReturn_t DECLDIR nvmlSystemRegisterEvents(nvmlSystemRegisterEventRequest_t *request)
{
    nvmlReturn_t ret = start(request, request ? request->version : 0, nvmlSystemRegisterEventRequest_v1);
    if (ret != NVML_SUCCESS)
        return ret;
    if ((unsigned long long)request->eventTypes & ~(unsigned long long)KNOWN_TYPES)
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&sets_lock);
    int live = is_live(request->set);
    if (live)
        request->set->registered |= (unsigned long long)request->eventTypes;
    pthread_mutex_unlock(&sets_lock);
    return live ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

static void add_ms(struct timespec *t, unsigned int ms)
{
    t->tv_sec += ms / 1000;
    t->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t->tv_nsec >= 1000000000L) {
        t->tv_sec++;
        t->tv_nsec -= 1000000000L;
    }
}

/* Sleeps until the timeout or until the set is freed; no event ever comes (above). */
nvmlReturn_t DECLDIR nvmlSystemEventSetWait(nvmlSystemEventSetWaitRequest_t *request)
{
    nvmlReturn_t ret = start(request, request ? request->version : 0, nvmlSystemEventSetWaitRequest_v1);
    if (ret != NVML_SUCCESS)
        return ret;
    if (request->data == NULL && request->dataSize > 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    add_ms(&deadline, request->timeoutms);
    const struct nvmlSystemEventSet_st *set = request->set;
    pthread_mutex_lock(&sets_lock);
    if (!is_live(set)) {
        pthread_mutex_unlock(&sets_lock);
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    request->numEvent = 0;
    while (is_live(set))
        if (pthread_cond_timedwait(&sets_freed, &sets_lock, &deadline) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&sets_lock);
    return NVML_ERROR_TIMEOUT;
}
