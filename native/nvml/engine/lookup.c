/* One GPU's values through the layers (see engine.h):
 * overrides gpu<p>: K > overrides lasting-gpu<p>: K > overrides all: K > settings (NVML's setters, node-wide) >
 * derived (moving readings, fabric) > state gpu.<p>.K. A current clock found in any layer
 * runs within its locked clocks, and a power draw stays at most the power limit (settings.c).
 *
 * Overrides merge as mokka/engine/overrides.deep_merge writes them: mappings merge key by
 * key, anything else replaces. So a layer that defines a list `X` (`X.len`) or
 * a scalar `X` for a prefix X of K owns everything under X: K is then that
 * layer's or nobody's.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine.h"

enum { MISS, FOUND, OWNED };

/* What follows a list's key for its length: `L.len`. */
static const char LEN_SUFFIX[] = "." MOKKA_COMPANION_LEN_KEY;

static int layer_lookup(const struct flat *f, const char *prefix, const char *key, const char **val)
{
    if (!f || f->n == 0)
        return MISS;
    char full[MOCK_VALUE_MAX];
    int n = snprintf(full, sizeof full, "%s%s", prefix, key);
    if (n < 0 || (size_t)n + sizeof LEN_SUFFIX >= sizeof full)
        return MISS;
    if ((*val = flat_get(f, full)) != NULL)
        return FOUND;
    size_t plen = strlen(prefix);
    for (size_t i = plen; full[i]; i++) {
        if (full[i] != '.')
            continue;
        full[i] = '\0';
        int owned = flat_get(f, full) != NULL;
        if (!owned) {
            memcpy(full + i, LEN_SUFFIX, sizeof LEN_SUFFIX);
            owned = flat_get(f, full) != NULL;
        }
        snprintf(full, sizeof full, "%s%s", prefix, key);    /* restore */
        if (owned)
            return OWNED;
    }
    return MISS;
}

/* What this process derived: a moving reading (dynamic.c). */
static const char *derived(const struct mock_gpu *g, const char *key, unsigned long long t, char *buf,
                           size_t size)
{
    return dynamic_reading_at(g, key, t, buf, size) ? buf : NULL;
}

/* gpu_raw with the moving readings of second `t`. */
static int gpu_raw_at(const struct mock_gpu *g, const char *key, unsigned long long t, char *out, size_t size)
{
    struct mock_overrides *o = g->node->overrides;
    struct ovr_layer *l = overrides_acquire(o);
    const char *val = NULL;
    char moving[32], set[32];
    int where = layer_lookup(overrides_gpu(l, g->phys), "", key, &val);
    if (where == MISS)
        where = layer_lookup(overrides_lasting(l, g->phys), "", key, &val);
    if (where == MISS)
        where = layer_lookup(overrides_all(l), "", key, &val);
    if (where == MISS && settings_value(g, key, set, sizeof set)) {
        val = set;
        where = FOUND;
    }
    if (where == MISS && (val = derived(g, key, t, moving, sizeof moving)) != NULL)
        where = FOUND;
    if (where == MISS)
        where = layer_lookup(&g->node->state, g->base, key, &val);
    char capped[32];
    unsigned long long mhz;
    if (where == FOUND && sscanf(val, "%llu", &mhz) == 1 && settings_capped(g, key, mhz) != mhz) {
        snprintf(capped, sizeof capped, "%llu", settings_capped(g, key, mhz));
        val = capped;
    }
    int result = 0;
    if (where == FOUND) {
        size_t len = strlen(val);
        result = len < size ? 1 : -1;
        if (result == 1)
            memcpy(out, val, len + 1);
    }
    overrides_release(o, l);
    return result;
}

int gpu_raw(const struct mock_gpu *g, const char *key, char *out, size_t size)
{
    return gpu_raw_at(g, key, dynamic_clock(g->node), out, size);
}

int mock_is_na(const char *value)
{
    while (isspace((unsigned char)*value))
        value++;
    size_t len = strlen(value);
    while (len > 0 && isspace((unsigned char)value[len - 1]))
        len--;
    return len == 0 || (len == 3 && strncasecmp(value, "N/A", 3) == 0) ||
           (len == 2 && strncasecmp(value, "NA", 2) == 0);
}

int gpu_str(const struct mock_gpu *g, const char *key, char *out, size_t size)
{
    int r = gpu_raw(g, key, out, size);
    return r == 1 && mock_is_na(out) ? 0 : r;
}

int gpu_i64(const struct mock_gpu *g, const char *key, long long *out)
{
    char v[MOCK_VALUE_MAX];
    if (gpu_raw(g, key, v, sizeof v) != 1 || !*v)
        return 0;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (*end == '\0' && errno == 0) {
        *out = x;
        return 1;
    }
    double d = strtod(v, &end);                   /* a float leaf: 120000.0 */
    if (*end != '\0' || !(d < 0x1p63 && d >= -0x1p63))  /* what a long long holds; not NaN */
        return 0;
    *out = (long long)d;
    return 1;
}

int gpu_u64(const struct mock_gpu *g, const char *key, unsigned long long *out)
{
    return gpu_u64_at(g, key, dynamic_clock(g->node), out);
}

int gpu_u64_at(const struct mock_gpu *g, const char *key, unsigned long long t, unsigned long long *out)
{
    char v[MOCK_VALUE_MAX];
    if (gpu_raw_at(g, key, t, v, sizeof v) != 1 || !isdigit((unsigned char)v[0]))
        return 0;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (*end == '\0' && errno == 0) {
        *out = x;
        return 1;
    }
    double d = strtod(v, &end);
    if (*end != '\0' || !(d < 0x1p64))         /* what 64 bits hold; not NaN */
        return 0;
    *out = (unsigned long long)d;
    return 1;
}

int gpu_flag(const struct mock_gpu *g, const char *key, int *out)
{
    char v[64];
    if (gpu_raw(g, key, v, sizeof v) != 1)
        return 0;
    if (strcasecmp(v, "true") == 0 || strcasecmp(v, "enabled") == 0) {
        *out = 1;
        return 1;
    }
    if (strcasecmp(v, "false") == 0 || strcasecmp(v, "disabled") == 0) {
        *out = 0;
        return 1;
    }
    return 0;
}

int gpu_has_prefix(const struct mock_gpu *g, const char *prefix)
{
    char full[MOCK_VALUE_MAX];
    snprintf(full, sizeof full, "%s%s", g->base, prefix);
    if (flat_has_prefix(&g->node->state, full))
        return 1;
    struct mock_overrides *o = g->node->overrides;
    struct ovr_layer *l = overrides_acquire(o);
    const struct flat *own = overrides_gpu(l, g->phys), *all = overrides_all(l);
    const struct flat *lasting = overrides_lasting(l, g->phys);
    int found = (own && flat_has_prefix(own, prefix)) || (all && flat_has_prefix(all, prefix)) ||
                (lasting && flat_has_prefix(lasting, prefix));
    overrides_release(o, l);
    return found;
}

unsigned int gpu_list_len(const struct mock_gpu *g, const char *key)
{
    char k[MOCK_VALUE_MAX];
    unsigned long long n = 0;                     /* absent: none */
    snprintf(k, sizeof k, "%s%s", key, LEN_SUFFIX);
    gpu_u64(g, k, &n);                            /* every layer holds it to its bound (kinds.c) */
    return (unsigned int)n;
}
