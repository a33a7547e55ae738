/* The Xid events the node agent's kernellog daemon injected: `xid-events.yaml`
 * beside config.yaml and its compiled companion (kind "events",
 * mokka/core/xid.py render):
 *
 *     last_seq 3
 *     event.len 1
 *     event.0.seq 3   event.0.gpu 0   event.0.code 79
 *     event.0.gi 2    event.0.ci 0                  (a MIG device's Xid only)
 *     event.0.type 2                                (an ECC error: its NVML event type, code 0)
 *
 * The file is rewritten whole (companion first, then the YAML, each by rename);
 * a reader that catches the pair between the two renames sees a stale companion
 * and tries again on its next poll. events.c polls it while a wait blocks.
 *
 * Every number is held to its bound before it is used (kinds.c, KIND_EVENTS): at
 * most MOKKA_MAX_XID_EVENTS events, sequence numbers from 1 to last_seq and
 * last_seq at most MOKKA_MAX_XID_SEQ; a document that breaks one is ignored whole
 * (one line, once), as one that is a link, a FIFO or too large. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"

static int u64_of(const struct flat *f, const char *key, unsigned long long *out)
{
    return flat_parse_u64(flat_get(f, key), out);
}

int mock_xid_events_path(char *out, size_t size)
{
    const struct mock_node *n = mock_node();
    if (!n)
        return 0;
    char dir[MOCK_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", n->config_yaml);   /* absolute (config_locate) */
    char *slash = strrchr(dir, '/');
    if (!slash)
        return 0;
    *slash = '\0';
    int w = snprintf(out, size, "%s/%s", dir, MOKKA_XID_EVENTS_FILE);
    return w > 0 && (size_t)w < size;
}

int mock_xid_read(const char *yaml, unsigned long long after, struct mock_xid_event *out,
                  unsigned int max, unsigned long long *last, int settle)
{
    char companion[MOCK_PATH_MAX];
    config_companion_path(yaml, companion, sizeof companion);
    struct flat f;
    struct flat_why why;
    enum flat_status st = (settle ? flat_load_settled : flat_load)(AT_FDCWD, yaml, companion, &KIND_EVENTS,
                                                                   &f, &why);
    if (st == FLAT_REFUSED || st == FLAT_INVALID)
        mock_say_unusable("Xid events", yaml, &why, 0);
    if (st != FLAT_OK)
        return -1;                                /* absent, or between its writer's renames */
    unsigned long long count = 0, newest = 0;
    u64_of(&f, MOKKA_XID_COMPANION_EVENTS "." MOKKA_COMPANION_LEN_KEY, &count);
    u64_of(&f, MOKKA_XID_COMPANION_LAST_SEQ, &newest);
    unsigned int found = 0;
    for (unsigned long long i = 0; i < count && found < max; i++) {
        char key[64];
        struct mock_xid_event e = {0};
        unsigned long long gpu = 0;
        snprintf(key, sizeof key, MOKKA_XID_COMPANION_EVENTS ".%llu." MOKKA_XID_COMPANION_SEQ, i);
        int ok = u64_of(&f, key, &e.seq);
        snprintf(key, sizeof key, MOKKA_XID_COMPANION_EVENTS ".%llu." MOKKA_XID_COMPANION_CODE, i);
        ok = ok && u64_of(&f, key, &e.code);
        snprintf(key, sizeof key, MOKKA_XID_COMPANION_EVENTS ".%llu." MOKKA_XID_COMPANION_GPU, i);
        ok = ok && u64_of(&f, key, &gpu);
        if (!ok || e.seq <= after)                /* every event has all three (kinds.c) */
            continue;
        e.gpu = (unsigned int)gpu;
        e.gi = e.ci = MOCK_XID_NO_INSTANCE;       /* held to MIG's ids when present (kinds.c) */
        unsigned long long id;
        snprintf(key, sizeof key, MOKKA_XID_COMPANION_EVENTS ".%llu." MOKKA_XID_COMPANION_GI, i);
        if (u64_of(&f, key, &id))
            e.gi = (unsigned int)id;
        snprintf(key, sizeof key, MOKKA_XID_COMPANION_EVENTS ".%llu." MOKKA_XID_COMPANION_CI, i);
        if (u64_of(&f, key, &id))
            e.ci = (unsigned int)id;
        e.type = nvmlEventTypeXidCriticalError;   /* held to the ECC error types when present (kinds.c) */
        snprintf(key, sizeof key, MOKKA_XID_COMPANION_EVENTS ".%llu." MOKKA_XID_COMPANION_TYPE, i);
        if (u64_of(&f, key, &id))
            e.type = id;
        /* keep them in sequence order (the file already is; insertion keeps it so regardless) */
        unsigned int at = found;
        while (at > 0 && out[at - 1].seq > e.seq) {
            out[at] = out[at - 1];
            at--;
        }
        out[at] = e;
        found++;
        if (e.seq > newest)
            newest = e.seq;
    }
    flat_free(&f);
    *last = newest;
    return (int)found;
}

nvmlDevice_t mock_handle_of_physical(unsigned int phys)
{
    const struct mock_node *n = mock_node();
    if (!n || phys >= n->count)
        return NULL;
    for (unsigned int i = 0; i < n->nvisible; i++)
        if (n->visible[i] == phys)
            return mock_handle_of(&n->gpus[phys]);
    return NULL;
}

int mock_physical_of(nvmlDevice_t device, unsigned int *phys)
{
    const struct mock_gpu *g;
    if (mock_gpu_of(device, &g) != NVML_SUCCESS)
        return 0;
    *phys = g->phys;
    return 1;
}
