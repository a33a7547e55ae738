/* The kinds of document the library reads (kinds.h). Each list is held to the most
 * items the schema lets it have (mokka_keys.h's LIST_BOUNDS_GPU and _NODE, from
 * mokka/core/statekeys.py), so no length read from a file can drive a loop past
 * what a real GPU has; the Xid events document's numbers are held to names.py's
 * bounds. A document that breaks one is refused whole, with the list or key named. */
#define _GNU_SOURCE
#include "kinds.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "mokka_keys.h"
#include "mokka_names.h"

static const struct flat_list gpu_lists[] = {LIST_BOUNDS_GPU, {NULL, 0}};
static const struct flat_list node_lists[] = {LIST_BOUNDS_NODE, {NULL, 0}};
static const struct flat_list event_lists[] = {{MOKKA_XID_COMPANION_EVENTS, MOKKA_MAX_XID_EVENTS}, {NULL, 0}};

#define GPU_PREFIX MOKKA_COMPANION_GPU_LIST "."
#define LEN_SUFFIX "." MOKKA_COMPANION_LEN_KEY

/* `a.%u.b` as a reader sees it: `a.N.b`. */
static const char *spelt(const char *list, char *out, size_t size)
{
    size_t w = 0;
    for (const char *p = list; *p && w + 2 < size; p++) {
        if (p[0] == '%' && p[1] == 'u') {
            out[w++] = 'N';
            p++;
        } else {
            out[w++] = *p;
        }
    }
    out[w] = '\0';
    return out;
}

/* `gpu.<n>.rest` -> rest, else NULL. */
static const char *past_gpu(const char *key)
{
    size_t plen = strlen(GPU_PREFIX);
    if (strncmp(key, GPU_PREFIX, plen) != 0 || !isdigit((unsigned char)key[plen]))
        return NULL;
    const char *p = key + plen;
    while (isdigit((unsigned char)*p))
        p++;
    return *p == '.' ? p + 1 : NULL;
}

/* Every list length of `f` is a number no larger than its bound: for keys under
 * `gpu.<n>.` the one in `gpu` (when `gpu_prefixed`), for the others the one in `rest`. */
static int lists_hold(const struct flat *f, int gpu_prefixed, const struct flat_list *gpu,
                      const struct flat_list *rest, char *reason, size_t size)
{
    size_t slen = strlen(LEN_SUFFIX);
    for (size_t i = 0; i < f->n; i++) {
        const char *key = f->keys[i];
        size_t klen = strlen(key);
        if (klen < slen || strcmp(key + klen - slen, LEN_SUFFIX) != 0)
            continue;
        const char *relative = gpu_prefixed ? past_gpu(key) : NULL;
        const struct flat_list *table = relative ? gpu : rest;
        if (!relative)
            relative = key;
        for (; table && table->key; table++) {
            if (!flat_is_list_len(table->key, relative))
                continue;
            unsigned long long items;
            char name[128];
            if (!flat_parse_u64(flat_value_at(f, i), &items)) {
                snprintf(reason, size, "the length of a list %s is not a number",
                         spelt(table->key, name, sizeof name));
                return 0;
            }
            if (items > table->most) {
                snprintf(reason, size, "a list %s longer than %llu items", spelt(table->key, name, sizeof name),
                         table->most);
                return 0;
            }
            break;
        }
    }
    return 1;
}

static int state_holds(const struct flat *f, char *reason, size_t size)
{
    return lists_hold(f, 1, gpu_lists, node_lists, reason, size);
}

static int overrides_hold(const struct flat *f, char *reason, size_t size)
{
    return lists_hold(f, 0, NULL, gpu_lists, reason, size);
}

/* Event i's field `field` as a number no larger than `most`. */
static int event_field(const struct flat *f, unsigned long long i, const char *field, unsigned long long most,
                       unsigned long long *out)
{
    char key[96];
    snprintf(key, sizeof key, MOKKA_XID_COMPANION_EVENTS ".%llu.%s", i, field);
    return flat_parse_u64(flat_get(f, key), out) && *out <= most;
}

/* Every event has a sequence number from 1 to last_seq (at most MAX_XID_SEQ), a GPU
 * and a code: a reader compares and delivers them as they are. */
static int events_hold(const struct flat *f, char *reason, size_t size)
{
    if (!lists_hold(f, 0, NULL, event_lists, reason, size))
        return 0;
    unsigned long long last = 0, count = 0, v;
    const char *text = flat_get(f, MOKKA_XID_COMPANION_LAST_SEQ);
    if (!text || !flat_parse_u64(text, &last) || last > MOKKA_MAX_XID_SEQ) {
        snprintf(reason, size, "%s is not a sequence number up to %llu", MOKKA_XID_COMPANION_LAST_SEQ,
                 (unsigned long long)MOKKA_MAX_XID_SEQ);
        return 0;
    }
    flat_parse_u64(flat_get(f, MOKKA_XID_COMPANION_EVENTS LEN_SUFFIX), &count);
    for (unsigned long long i = 0; i < count; i++) {
        if (!event_field(f, i, MOKKA_XID_COMPANION_SEQ, last, &v) || v == 0 ||
            !event_field(f, i, MOKKA_XID_COMPANION_GPU, MOKKA_MAX_GPUS - 1, &v) ||
            !event_field(f, i, MOKKA_XID_COMPANION_CODE, 0xffffffffull, &v)) {
            snprintf(reason, size, "event %llu lacks a %s from 1 to %s, a %s below %d or a %s", i,
                     MOKKA_XID_COMPANION_SEQ, MOKKA_XID_COMPANION_LAST_SEQ, MOKKA_XID_COMPANION_GPU,
                     MOKKA_MAX_GPUS, MOKKA_XID_COMPANION_CODE);
            return 0;
        }
    }
    return 1;
}

const struct flat_kind KIND_STATE = {MOKKA_STATE_COMPANION_KIND, 1, MOKKA_MAX_STATE_COMPANION_BYTES,
                                     MOKKA_MAX_STATE_COMPANION_LINES, state_holds};
const struct flat_kind KIND_OVERRIDES = {MOKKA_OVERRIDES_COMPANION_KIND, 1, MOKKA_MAX_OVERRIDES_COMPANION_BYTES,
                                         MOKKA_MAX_OVERRIDES_COMPANION_LINES, overrides_hold};
const struct flat_kind KIND_TOPOLOGY = {MOKKA_TOPOLOGY_COMPANION_KIND, 1, MOKKA_MAX_TOPOLOGY_COMPANION_BYTES,
                                        MOKKA_MAX_TOPOLOGY_COMPANION_LINES, NULL};
const struct flat_kind KIND_EVENTS = {MOKKA_XID_EVENTS_KIND, 1, MOKKA_MAX_EVENTS_COMPANION_BYTES,
                                      MOKKA_MAX_EVENTS_COMPANION_LINES, events_hold};
