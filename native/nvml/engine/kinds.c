/* The kinds of document the library reads (kinds.h). Each list the library loops over
 * is held to the most items the schema lets it have (mokka_keys.h's LIST_BOUNDS_GPU and
 * _NODE, from mokka/engine/statekeys.py), so no length read from a file can drive a loop
 * past what a real GPU has; the Xid events document's numbers are held to names.py's
 * bounds. A document that breaks one is refused whole, with the list or key named. */
#define _GNU_SOURCE
#include "kinds.h"

#include <stdio.h>

#include "mokka_keys.h"
#include "mokka_names.h"

static const struct flat_list gpu_lists[] = {LIST_BOUNDS_GPU, {NULL, 0}};
static const struct flat_list node_lists[] = {LIST_BOUNDS_NODE, {NULL, 0}};
static const struct flat_list event_lists[] = {{MOKKA_XID_COMPANION_EVENTS, MOKKA_MAX_XID_EVENTS}, {NULL, 0}};

/* The key of event i's `field`, into key. */
static const char *event_key(unsigned long long i, const char *field, char *key, size_t size)
{
    snprintf(key, size, MOKKA_XID_COMPANION_EVENTS ".%llu.%s", i, field);
    return key;
}

/* Event i's field `field` as a number no larger than `most`. */
static int event_field(const struct flat *f, unsigned long long i, const char *field, unsigned long long most,
                       unsigned long long *out)
{
    char key[96];
    return flat_parse_u64(flat_get(f, event_key(i, field, key, sizeof key)), out) && *out <= most;
}

/* Every event has a sequence number from 1 to last_seq (at most MAX_XID_SEQ), a GPU
 * and a code, and a MIG device's a GPU instance id (and a compute instance id) within
 * MIG's: a reader compares and delivers them as they are. */
static int events_hold(const struct flat *f, char *reason, size_t size)
{
    unsigned long long last = 0, count = 0, v;
    char key[96];
    const char *text = flat_get(f, MOKKA_XID_COMPANION_LAST_SEQ);
    if (!text || !flat_parse_u64(text, &last) || last > MOKKA_MAX_XID_SEQ) {
        snprintf(reason, size, "%s is not a sequence number up to %llu", MOKKA_XID_COMPANION_LAST_SEQ,
                 (unsigned long long)MOKKA_MAX_XID_SEQ);
        return 0;
    }
    flat_parse_u64(flat_get(f, MOKKA_XID_COMPANION_EVENTS "." MOKKA_COMPANION_LEN_KEY), &count);
    for (unsigned long long i = 0; i < count; i++) {     /* at most MAX_XID_EVENTS (event_lists) */
        if (!event_field(f, i, MOKKA_XID_COMPANION_SEQ, last, &v) || v == 0 ||
            !event_field(f, i, MOKKA_XID_COMPANION_GPU, MOKKA_MAX_GPUS - 1, &v) ||
            !event_field(f, i, MOKKA_XID_COMPANION_CODE, 0xffffffffull, &v)) {
            snprintf(reason, size, "event %llu lacks a %s from 1 to %s, a %s below %d or a %s", i,
                     MOKKA_XID_COMPANION_SEQ, MOKKA_XID_COMPANION_LAST_SEQ, MOKKA_XID_COMPANION_GPU,
                     MOKKA_MAX_GPUS, MOKKA_XID_COMPANION_CODE);
            return 0;
        }
        /* A MIG device's Xid names its GPU instance, and may name its compute instance. */
        int has_gi = flat_get(f, event_key(i, MOKKA_XID_COMPANION_GI, key, sizeof key)) != NULL;
        int has_ci = flat_get(f, event_key(i, MOKKA_XID_COMPANION_CI, key, sizeof key)) != NULL;
        if ((has_gi && !event_field(f, i, MOKKA_XID_COMPANION_GI, MOKKA_MIG_GPU_INSTANCE_IDS - 1, &v)) ||
            (has_ci && (!has_gi || !event_field(f, i, MOKKA_XID_COMPANION_CI, MOKKA_MIG_COMPUTE_INSTANCE_IDS - 1,
                                                &v)))) {
            snprintf(reason, size, "event %llu has a %s above %d or a %s without a %s or above %d", i,
                     MOKKA_XID_COMPANION_GI, MOKKA_MIG_GPU_INSTANCE_IDS - 1, MOKKA_XID_COMPANION_CI,
                     MOKKA_XID_COMPANION_GI, MOKKA_MIG_COMPUTE_INSTANCE_IDS - 1);
            return 0;
        }
        /* An event that is no Xid names its NVML event type: a single (1) or double (2) bit ECC error. */
        if (flat_get(f, event_key(i, MOKKA_XID_COMPANION_TYPE, key, sizeof key)) != NULL &&
            (!event_field(f, i, MOKKA_XID_COMPANION_TYPE, 2, &v) || v == 0)) {
            snprintf(reason, size, "event %llu has a %s other than 1 or 2", i, MOKKA_XID_COMPANION_TYPE);
            return 0;
        }
    }
    return 1;
}

const struct flat_kind KIND_STATE = {MOKKA_STATE_COMPANION_KIND, MOKKA_MAX_STATE_COMPANION_BYTES,
                                     MOKKA_MAX_STATE_COMPANION_LINES, node_lists, MOKKA_COMPANION_GPU_LIST,
                                     gpu_lists, NULL};
const struct flat_kind KIND_OVERRIDES = {MOKKA_OVERRIDES_COMPANION_KIND, MOKKA_MAX_OVERRIDES_COMPANION_BYTES,
                                         MOKKA_MAX_OVERRIDES_COMPANION_LINES, gpu_lists, NULL, NULL, NULL};
const struct flat_kind KIND_EVENTS = {MOKKA_XID_EVENTS_KIND, MOKKA_MAX_EVENTS_COMPANION_BYTES,
                                      MOKKA_MAX_EVENTS_COMPANION_LINES, event_lists, NULL, NULL, events_hold};
