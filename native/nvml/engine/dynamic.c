/* Moving readings: a GPU's `dynamic_metrics` turned into the values of one second.
 *
 * Every reading is a pure function of (seed, physical GPU index, second), in
 * unsigned 64-bit integer arithmetic only, so every process reads the same value
 * in the same second; tests/corpus/dynamic_cases.py pins it with literal vectors.
 *
 *   draw(seed, gpu, t, channel) = mix(mix(mix(mix(seed) ^ gpu) ^ channel) ^ t)
 *       mix: splitmix64's step (add 0x9E3779B97F4A7C15, then its finalizer)
 *   pick(h, lo, hi) = lo + h mod (hi - lo + 1)                     (hi >= lo)
 *   ramp(t, r, T)   = r * smooth(u) >> 16, u = 2 * min(t mod T, T - t mod T) * 65536 / T,
 *                     smooth(u) = ((u * u) >> 16) * (3 * 65536 - 2 * u) >> 16
 *                     (smoothstep of a triangle wave: 0 at t = 0, r at T/2, 0 again at T)
 *
 *   temperature = base_c + ramp(t, ramp_c, ramp_period_sec)
 *                 + pick(draw(.., TEMPERATURE), -variance_c, variance_c),
 *                 clamped to [0, thermal.shutdown_threshold_c]
 *   power       = base_mw + pick(draw(.., POWER), -variance_mw, variance_mw),
 *                 clamped to [power.min_limit_mw, power.max_limit_mw]
 *   utilization (gpu with channel UTIL_GPU, memory with UTIL_MEMORY), lo..hi within 0..100,
 *       by the block's pattern: idle lo; busy hi; steady pick(draw, lo, hi);
 *       burst hi in the first half of every burst_period_sec (t mod P < (P + 1) / 2), lo after
 *   memory used (Mokka's own block, channel MEMORY_USED), in whole MiB, then bytes:
 *       usable = (memory.total_bytes - memory.reserved_bytes) >> 20   (0 when negative)
 *       lo = usable * used_min_pct / 100, hi = usable * used_max_pct / 100 (pcts within 0..100)
 *       used = patterned(lo, hi) << 20 with the memory block's own pattern and period,
 *       so free = total - reserved - used never goes below 0; no total_bytes: nothing moves.
 *
 * A block with no value moves nothing. Defaults: seed 0; base_c / base_mw the
 * state's static reading; variance, ramp 0; ramp_period_sec 0 (no ramp); pattern
 * steady; gpu/memory min 0, max 100; used_min_pct 0, used_max_pct 100;
 * burst_period_sec 30. `t` is the whole second of MOCK_NVML_CLOCK when it holds a
 * non-negative integer (blanks around it allowed), else of the real time.
 *
 * The state is written by whoever can write driver/config, so the schema's bounds
 * are not taken on trust: every parameter the readings add, subtract, multiply or
 * shift (not the seed, not the limits they are only compared with) counts only
 * within +-PARAMETER_MAX, and as absent beyond it, so every step stays inside 64 bits.
 * lookup.c asks here in its derived layer, so overrides win over a moving reading
 * and a moving reading over the state's static one; the parameters and limits come
 * from the state alone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "engine.h"

typedef unsigned long long u64;

/* 2^40: a TiB of memory, 35 000 years of seconds, far past any reading; 2^40 * 2^16 * 2
 * and 3 * 2^40 still fit a signed 64-bit value. */
#define PARAMETER_MAX (1LL << 40)

enum { TEMPERATURE = 1, POWER = 2, UTIL_GPU = 3, UTIL_MEMORY = 4, MEMORY_USED = 5 };
#define ONE 65536ULL

static u64 mix(u64 x)
{
    u64 z = x + 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static u64 draw(u64 seed, u64 gpu, u64 t, u64 channel)
{
    return mix(mix(mix(mix(seed) ^ gpu) ^ channel) ^ t);
}

/* lo + h mod (hi - lo + 1), hi >= lo; the span fits (the schema bounds every field). */
static long long pick(u64 h, long long lo, long long hi)
{
    return lo + (long long)(h % (u64)(hi - lo + 1));
}

static long long ramp(u64 t, long long height, long long period)
{
    if (period <= 0 || height <= 0)
        return 0;
    u64 phase = t % (u64)period;
    u64 rest = (u64)period - phase;
    u64 u = 2 * (phase < rest ? phase : rest) * ONE / (u64)period;
    u64 smooth = ((u * u) >> 16) * (3 * ONE - 2 * u) >> 16;
    return (long long)(((u64)height * smooth) >> 16);
}

/* v within lo..hi; lo wins when hi is below it. */
static long long clamp(long long v, long long lo, long long hi)
{
    if (v > hi)
        v = hi;
    return v < lo ? lo : v;
}

/* The state's own value at gpu.<p>.<key>, or NULL. */
static const char *state_get(const struct mock_gpu *g, const char *key)
{
    char full[MOCK_VALUE_MAX];
    snprintf(full, sizeof full, "%s%s", g->base, key);
    return flat_get(&g->node->state, full);
}

/* The state's integer at gpu.<p>.<key>: 1, or 0 when absent or not an integer. */
static int state_ll(const struct mock_gpu *g, const char *key, long long *out)
{
    const char *v = state_get(g, key);
    if (!v || !*v)
        return 0;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (*end != '\0' || errno != 0)
        return 0;
    *out = x;
    return 1;
}

static long long field(const struct mock_gpu *g, const char *key, long long dflt)
{
    long long v;
    return state_ll(g, key, &v) ? v : dflt;
}

/* A parameter the readings compute with: 1 and *out within +-PARAMETER_MAX, else 0. */
static int param_ll(const struct mock_gpu *g, const char *key, long long *out)
{
    long long v;
    if (!state_ll(g, key, &v) || v > PARAMETER_MAX || v < -PARAMETER_MAX)
        return 0;
    *out = v;
    return 1;
}

static long long param(const struct mock_gpu *g, const char *key, long long dflt)
{
    long long v;
    return param_ll(g, key, &v) ? v : dflt;
}

static int has_block(const struct mock_gpu *g, const char *block)
{
    char full[MOCK_VALUE_MAX];
    snprintf(full, sizeof full, "%s%s.", g->base, block);
    return flat_has_prefix(&g->node->state, full);
}

u64 dynamic_clock(const struct mock_node *n)
{
    return n->clock_pinned ? n->clock : (u64)time(NULL);
}

void dynamic_read_clock(struct mock_node *n)
{
    const char *v = getenv(MOKKA_ENV_NVML_CLOCK);
    n->clock_pinned = 0;
    if (!v)
        return;
    while (*v == ' ' || *v == '\t' || *v == '\n')
        v++;
    if (*v < '0' || *v > '9')
        return;
    char *end;
    errno = 0;
    u64 x = strtoull(v, &end, 10);
    while (*end == ' ' || *end == '\t' || *end == '\n')
        end++;
    if (*end != '\0' || errno != 0)
        return;
    n->clock = x;
    n->clock_pinned = 1;
}

static long long temperature(const struct mock_gpu *g, u64 seed, u64 t)
{
    long long variance = param(g, K_DYNAMIC_METRICS_TEMPERATURE_VARIANCE_C, 0), shutdown = LLONG_MAX;
    state_ll(g, K_THERMAL_SHUTDOWN_THRESHOLD_C, &shutdown);
    long long v = param(g, K_DYNAMIC_METRICS_TEMPERATURE_BASE_C, param(g, K_THERMAL_TEMPERATURE_GPU_C, 0)) +
                  ramp(t, param(g, K_DYNAMIC_METRICS_TEMPERATURE_RAMP_C, 0),
                       param(g, K_DYNAMIC_METRICS_TEMPERATURE_RAMP_PERIOD_SEC, 0)) +
                  pick(draw(seed, g->phys, t, TEMPERATURE), -variance, variance);
    return clamp(v, 0, shutdown);
}

static long long power(const struct mock_gpu *g, u64 seed, u64 t)
{
    long long variance = param(g, K_DYNAMIC_METRICS_POWER_VARIANCE_MW, 0), lo = LLONG_MIN, hi = LLONG_MAX;
    state_ll(g, K_POWER_MIN_LIMIT_MW, &lo);
    state_ll(g, K_POWER_MAX_LIMIT_MW, &hi);
    long long v = param(g, K_DYNAMIC_METRICS_POWER_BASE_MW, param(g, K_POWER_CURRENT_DRAW_MW, 0)) +
                  pick(draw(seed, g->phys, t, POWER), -variance, variance);
    return clamp(v, lo, hi);
}

/* A block of dynamic_metrics whose reading follows a pattern. */
struct patterned_block {
    const char *pattern;
    const char *burst_period_sec;
};
static const struct patterned_block UTILIZATION_BLOCK = {K_DYNAMIC_METRICS_UTILIZATION_PATTERN,
                                                         K_DYNAMIC_METRICS_UTILIZATION_BURST_PERIOD_SEC};
static const struct patterned_block MEMORY_BLOCK = {K_DYNAMIC_METRICS_MEMORY_PATTERN,
                                                    K_DYNAMIC_METRICS_MEMORY_BURST_PERIOD_SEC};

/* lo..hi over time by the block's pattern and burst period. */
static long long patterned(const struct mock_gpu *g, const struct patterned_block *block, long long lo,
                           long long hi, u64 t, u64 steady_draw)
{
    const char *pattern = state_get(g, block->pattern);
    if (!pattern)
        pattern = "";                             /* steady, as any word not below */
    if (strcasecmp(pattern, MOKKA_DYNAMIC_PATTERN_IDLE) == 0)
        return lo;
    if (strcasecmp(pattern, MOKKA_DYNAMIC_PATTERN_BUSY) == 0)
        return hi;
    if (strcasecmp(pattern, MOKKA_DYNAMIC_PATTERN_BURST) == 0) {
        long long period = param(g, block->burst_period_sec, 0);
        if (period <= 0)
            period = MOKKA_DYNAMIC_BURST_PERIOD_DEFAULT_SEC;
        return t % (u64)period < (u64)(period + 1) / 2 ? hi : lo;
    }
    return pick(steady_draw, lo, hi);
}

static long long utilization(const struct mock_gpu *g, u64 seed, u64 t, int memory)
{
    long long lo = field(g, memory ? K_DYNAMIC_METRICS_UTILIZATION_MEMORY_MIN
                                   : K_DYNAMIC_METRICS_UTILIZATION_GPU_MIN, 0);
    long long hi = field(g, memory ? K_DYNAMIC_METRICS_UTILIZATION_MEMORY_MAX
                                   : K_DYNAMIC_METRICS_UTILIZATION_GPU_MAX, 100);
    lo = clamp(lo, 0, 100);
    hi = clamp(hi, lo, 100);
    u64 steady = draw(seed, g->phys, t, memory ? UTIL_MEMORY : UTIL_GPU);
    return patterned(g, &UTILIZATION_BLOCK, lo, hi, t, steady);
}

int dynamic_mean_utilization(const struct mock_gpu *g, unsigned long long *percent)
{
    if (!has_block(g, K_DYNAMIC_METRICS_UTILIZATION))
        return 0;
    long long lo = clamp(field(g, K_DYNAMIC_METRICS_UTILIZATION_GPU_MIN, 0), 0, 100);
    long long hi = clamp(field(g, K_DYNAMIC_METRICS_UTILIZATION_GPU_MAX, 100), lo, 100);
    const char *pattern = state_get(g, UTILIZATION_BLOCK.pattern);
    if (!pattern)
        pattern = "";
    long long mean = (lo + hi) / 2;               /* steady: every value of lo..hi alike */
    if (strcasecmp(pattern, MOKKA_DYNAMIC_PATTERN_IDLE) == 0) {
        mean = lo;
    } else if (strcasecmp(pattern, MOKKA_DYNAMIC_PATTERN_BUSY) == 0) {
        mean = hi;
    } else if (strcasecmp(pattern, MOKKA_DYNAMIC_PATTERN_BURST) == 0) {
        long long period = param(g, UTILIZATION_BLOCK.burst_period_sec, 0);
        if (period <= 0)
            period = MOKKA_DYNAMIC_BURST_PERIOD_DEFAULT_SEC;
        long long high = (period + 1) / 2;        /* the seconds of a period at hi, as patterned() */
        mean = (hi * high + lo * (period - high)) / period;
    }
    *percent = (unsigned long long)mean;
    return 1;
}

/* Bytes used: whole MiB between the block's percentages of total - reserved, so
 * free = total - reserved - used stays >= 0. 0 (and *ok 0) without a total. */
static long long memory_used(const struct mock_gpu *g, u64 seed, u64 t, int *ok)
{
    long long total, reserved = 0;
    *ok = param_ll(g, K_MEMORY_TOTAL_BYTES, &total);
    if (!*ok)
        return 0;
    param_ll(g, K_MEMORY_RESERVED_BYTES, &reserved);
    long long usable = total > reserved ? (total - reserved) >> 20 : 0;
    long long lo_pct = clamp(field(g, K_DYNAMIC_METRICS_MEMORY_USED_MIN_PCT, 0), 0, 100);
    long long hi_pct = clamp(field(g, K_DYNAMIC_METRICS_MEMORY_USED_MAX_PCT, 100), lo_pct, 100);
    long long mib = patterned(g, &MEMORY_BLOCK, usable * lo_pct / 100, usable * hi_pct / 100, t,
                              draw(seed, g->phys, t, MEMORY_USED));
    return mib << 20;
}

/* The readings that move, each with its block of dynamic_metrics: present, it moves. */
static const struct {
    const char *key;
    const char *block;
    int reading;
} moving[] = {
    {K_THERMAL_TEMPERATURE_GPU_C, K_DYNAMIC_METRICS_TEMPERATURE, TEMPERATURE},
    {K_POWER_CURRENT_DRAW_MW, K_DYNAMIC_METRICS_POWER, POWER},
    {K_UTILIZATION_GPU, K_DYNAMIC_METRICS_UTILIZATION, UTIL_GPU},
    {K_UTILIZATION_MEMORY, K_DYNAMIC_METRICS_UTILIZATION, UTIL_MEMORY},
    {K_MEMORY_USED_BYTES, K_DYNAMIC_METRICS_MEMORY, MEMORY_USED},
};

static long long reading_of(const struct mock_gpu *g, int reading, u64 seed, u64 t, int *ok)
{
    switch (reading) {
    case TEMPERATURE:
        return temperature(g, seed, t);
    case POWER:
        return power(g, seed, t);
    case MEMORY_USED:
        return memory_used(g, seed, t, ok);
    default:
        return utilization(g, seed, t, reading == UTIL_MEMORY);
    }
}

int dynamic_reading_at(const struct mock_gpu *g, const char *key, u64 t, char *out, size_t size)
{
    for (size_t i = 0; i < sizeof moving / sizeof moving[0]; i++) {
        if (strcmp(key, moving[i].key) != 0)
            continue;
        if (!has_block(g, moving[i].block))
            return 0;
        u64 seed = (u64)field(g, K_DYNAMIC_METRICS_SEED, 0);
        int ok = 1;
        long long v = reading_of(g, moving[i].reading, seed, t, &ok);
        return ok && (size_t)snprintf(out, size, "%lld", v) < size;
    }
    return 0;
}
