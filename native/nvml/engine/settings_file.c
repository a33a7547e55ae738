/* settings.nvml on disk: what NVML's setters set, as lines of the library's runtime
 * document format (docfile.h), one line per setting of a GPU, sorted by key as bytes:
 *
 *     # mokka-nvml settings 1
 *     digest sha256:<hex of every line after this one>
 *     gpu.0.accounting 1                    accounting mode
 *     gpu.0.applications_clocks 1593 1410   application clocks: memory, graphics (MHz)
 *     gpu.0.applications_clocks_restricted 0   application clocks settable by anyone (1: root)
 *     gpu.0.clock_vf_offsets -100 200       VF offsets: graphics, memory (MHz, signed)
 *     gpu.0.compute_mode 3                  nvmlComputeMode_t
 *     gpu.0.drain 1                         drained (nvmlDeviceModifyDrainState)
 *     gpu.0.ecc 1 0                         ECC mode current, pending
 *     gpu.0.ecc_cleared_aggregate 0 5 ...   the aggregate ECC counts when cleared (16, settings_ecc_keys')
 *     gpu.0.ecc_cleared_volatile 0 2 ...    the volatile ones
 *     gpu.0.nvlink_errors_cleared.2 0 0 5 0 0   link 2's error counters when reset (replay,
 *                                           recovery, CRC flit, CRC data, ECC data); a link
 *                                           whose counters were all 0 has no line
 *     gpu.0.locked_clocks 210 1410          locked GPU clocks: min, max (MHz)
 *     gpu.0.memory_locked_clocks 2619 2619  locked memory clocks: min, max (MHz)
 *     gpu.0.persistence 1                   persistence mode
 *     gpu.0.power_limit_mw 300000           power limit
 *     gpu.0.uuid GPU-...                    the GPU the lines are for
 *
 * Anything a workload can write: the reader is strict (every key and value spelt
 * exactly so, every number bounded before use) and says what it refused in a few
 * words; settings.c then checks each value against the board.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docfile.h"
#include "engine.h"

#define GPUS MOKKA_SETTINGS_STATE_GPUS             /* the keys: names.SETTINGS_STATE_* */
#define ACCOUNTING MOKKA_SETTINGS_STATE_ACCOUNTING
#define APP MOKKA_SETTINGS_STATE_APPLICATIONS_CLOCKS
#define COMPUTE MOKKA_SETTINGS_STATE_COMPUTE_MODE
#define DRAIN MOKKA_SETTINGS_STATE_DRAIN
#define ECC MOKKA_SETTINGS_STATE_ECC
#define LOCKED MOKKA_SETTINGS_STATE_LOCKED_CLOCKS
#define MEM_LOCKED MOKKA_SETTINGS_STATE_MEMORY_LOCKED_CLOCKS
#define PERSISTENCE MOKKA_SETTINGS_STATE_PERSISTENCE
#define POWER MOKKA_SETTINGS_STATE_POWER_LIMIT
#define UUID MOKKA_SETTINGS_STATE_UUID
#define VF_OFFSETS MOKKA_SETTINGS_STATE_CLOCK_VF_OFFSETS
#define APP_RESTRICTED MOKKA_SETTINGS_STATE_APP_CLOCKS_RESTRICTED
#define ECC_CLEARED_VOL MOKKA_SETTINGS_STATE_ECC_CLEARED_VOLATILE
#define ECC_CLEARED_AGG MOKKA_SETTINGS_STATE_ECC_CLEARED_AGGREGATE
#define NVLINK_CLEARED MOKKA_SETTINGS_STATE_NVLINK_ERRORS_CLEARED
#define ECC_COUNT_MAX 0xffffffffu                /* a count a baseline holds */
#define UUID_CHARS "0123456789abcdefABCDEF-GPU"
#define MAX_TEXT "256 KiB"                      /* names.SETTINGS_STATE_MAX_BYTES, for messages */

void settings_clear(struct gpu_settings *s)
{
    memset(s, 0, sizeof *s);
    s->persistence = s->compute_mode = s->accounting = s->ecc_current = s->ecc_pending = s->drain = -1;
    s->app_clocks_restricted = -1;
}

const char *settings_file_read(int dirfd, char **text, size_t *len)
{
    return docfile_read(dirfd, MOKKA_SETTINGS_STATE_FILE, MOKKA_SETTINGS_STATE_MAX_BYTES, MAX_TEXT, text, len);
}

/* "<a> <b>", each at most max. */
static int pair(const char *v, unsigned long long max, unsigned int *a, unsigned int *b)
{
    return docfile_field(&v, ' ', max, a) && docfile_field(&v, '\0', max, b);
}

static int one(const char *v, unsigned long long max, unsigned int *a)
{
    return docfile_field(&v, '\0', max, a);
}

/* "[-]<n>", |n| at most max, then `sep`. */
static int signed_field(const char **v, char sep, unsigned int max, int *out)
{
    int neg = **v == '-';
    unsigned int a;
    *v += neg;
    if (!docfile_field(v, sep, max, &a))
        return 0;
    *out = neg ? -(int)a : (int)a;
    return 1;
}

/* SETTINGS_ECC_COUNTS counts, space-separated. */
static int counts(const char *v, unsigned int *out)
{
    for (unsigned int i = 0; i < SETTINGS_ECC_COUNTS; i++)
        if (!docfile_field(&v, i + 1 < SETTINGS_ECC_COUNTS ? ' ' : '\0', ECC_COUNT_MAX, &out[i]))
            return 0;
    return 1;
}

/* The ECC baseline as a line's value. */
static void counts_text(const unsigned int *c, char *out, size_t size)
{
    size_t n = 0;
    for (unsigned int i = 0; i < SETTINGS_ECC_COUNTS && n < size; i++)
        n += (size_t)snprintf(out + n, size - n, i ? " %u" : "%u", c[i]);
}

/* "<n>" of at most 20 digits and below 2^64, then `sep`: an NVLink error counter. */
static int u64_field(const char **v, char sep, unsigned long long *out)
{
    const char *end = sep ? strchr(*v, sep) : *v + strlen(*v);
    size_t len = end ? (size_t)(end - *v) : 0;
    unsigned long long n = 0;
    if (len == 0 || len > 20)
        return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned int d = (unsigned int)((*v)[i] - '0');
        if (d > 9 || __builtin_mul_overflow(n, 10ull, &n) || __builtin_add_overflow(n, d, &n))
            return 0;
    }
    *out = n;
    *v = sep ? end + 1 : end;
    return 1;
}

/* A link's SETTINGS_NVLINK_COUNTERS counters, space-separated; not all 0. */
static int link_counts(const char *v, unsigned long long *out)
{
    unsigned long long any = 0;
    for (unsigned int i = 0; i < SETTINGS_NVLINK_COUNTERS; i++) {
        if (!u64_field(&v, i + 1 < SETTINGS_NVLINK_COUNTERS ? ' ' : '\0', &out[i]))
            return 0;
        any |= out[i];
    }
    return any != 0;
}

/* The link's reset as a line's value; 0 when nothing needs one. */
static int link_text(const unsigned long long *c, char *out, size_t size)
{
    size_t n = 0;
    unsigned long long any = 0;
    for (unsigned int i = 0; i < SETTINGS_NVLINK_COUNTERS && n < size; i++) {
        n += (size_t)snprintf(out + n, size - n, i ? " %llu" : "%llu", c[i]);
        any |= c[i];
    }
    return any != 0;
}

struct parse_ctx {
    unsigned int count;
    struct settings_file *f;
};

static const char *parse_line(const char *key, const char *value, void *arg)
{
    const struct parse_ctx *ctx = arg;
    const char *p = key;
    unsigned int phys, a, b;
    if (strncmp(p, GPUS ".", sizeof GPUS) != 0 ||
        (p += sizeof GPUS, !docfile_field(&p, '.', ctx->count ? ctx->count - 1 : 0, &phys)) || phys >= ctx->count)
        return "a GPU the node does not have";
    struct settings_file_gpu *g = &ctx->f->gpu[phys];
    struct gpu_settings *s = &g->s;
    if (!g->present) {
        g->present = 1;
        settings_clear(s);
    }
    if (strcmp(p, UUID) == 0) {
        size_t len = strlen(value);
        if (len == 0 || len >= SETTINGS_UUID_MAX || strspn(value, UUID_CHARS) != len)
            return "a GPU UUID that is not one";
        memcpy(g->uuid, value, len + 1);
    } else if (strcmp(p, POWER) == 0) {
        if (!one(value, 0xffffffffu, &a) || a == 0)
            return "a power limit that is not a number of milliwatts";
        s->power_limit_mw = a;
    } else if (strcmp(p, PERSISTENCE) == 0) {
        if (!one(value, 1, &a))
            return "a persistence mode other than 0 or 1";
        s->persistence = (int)a;
    } else if (strcmp(p, ACCOUNTING) == 0) {
        if (!one(value, 1, &a))
            return "an accounting mode other than 0 or 1";
        s->accounting = (int)a;
    } else if (strcmp(p, COMPUTE) == 0) {
        if (!one(value, NVML_COMPUTEMODE_COUNT - 1, &a))
            return "a compute mode that is not one";
        s->compute_mode = (int)a;
    } else if (strcmp(p, DRAIN) == 0) {
        if (!one(value, 1, &a) || a != 1)
            return "a drain state other than 1";
        s->drain = 1;
    } else if (strcmp(p, ECC) == 0) {
        if (!pair(value, 1, &a, &b))
            return "an ECC mode other than 0 or 1";
        s->ecc_current = (int)a;
        s->ecc_pending = (int)b;
    } else if (strcmp(p, APP) == 0) {
        if (!pair(value, SETTINGS_MHZ_MAX, &a, &b) || a == 0 || b == 0)
            return "application clocks that are not two clocks in MHz";
        s->app_memory_mhz = a;
        s->app_graphics_mhz = b;
    } else if (strcmp(p, LOCKED) == 0) {
        if (!pair(value, SETTINGS_MHZ_MAX, &a, &b) || a > b || b == 0)
            return "locked clocks that are not a range of clocks in MHz";
        s->locked_min_mhz = a;
        s->locked_max_mhz = b;
    } else if (strcmp(p, MEM_LOCKED) == 0) {
        if (!pair(value, SETTINGS_MHZ_MAX, &a, &b) || a > b || b == 0)
            return "locked memory clocks that are not a range of clocks in MHz";
        s->mem_locked_min_mhz = a;
        s->mem_locked_max_mhz = b;
    } else if (strcmp(p, VF_OFFSETS) == 0) {
        const char *v = value;
        if (!signed_field(&v, ' ', MOKKA_CLOCK_VF_OFFSET_LIMIT_MHZ, &s->gpc_vf_offset_mhz) ||
            !signed_field(&v, '\0', MOKKA_CLOCK_VF_OFFSET_LIMIT_MHZ, &s->mem_vf_offset_mhz))
            return "clock VF offsets that are not two offsets in MHz within the board's range";
    } else if (strcmp(p, APP_RESTRICTED) == 0) {
        if (!one(value, 1, &a))
            return "an application clocks restriction other than 0 or 1";
        s->app_clocks_restricted = (int)a;
    } else if (strncmp(p, NVLINK_CLEARED ".", sizeof NVLINK_CLEARED) == 0) {
        unsigned int link;
        const char *l = p + sizeof NVLINK_CLEARED;
        if (!docfile_field(&l, '\0', SETTINGS_NVLINK_LINKS - 1, &link))
            return "an NVLink the GPUs cannot have";
        if (!link_counts(value, s->nvlink_base[link]))
            return "NVLink error counters at a reset that are not 5 counts, not all 0";
    } else if (strcmp(p, ECC_CLEARED_VOL) == 0 || strcmp(p, ECC_CLEARED_AGG) == 0) {
        int scope = strcmp(p, ECC_CLEARED_AGG) == 0;
        if (!counts(value, s->ecc_base[scope]))
            return "ECC counts at a clearing that are not 16 counts";
        s->ecc_cleared[scope] = 1;
    } else {
        return "an unknown key";
    }
    return NULL;
}

const char *settings_file_parse(char *text, size_t len, unsigned int count, struct settings_file *f, int *holds)
{
    memset(f, 0, sizeof *f);
    struct parse_ctx ctx = {count, f};
    return docfile_parse(text, len, MOKKA_SETTINGS_STATE_KIND, parse_line, &ctx, holds);
}

const char *settings_file_write(int dirfd, const struct settings_file *f, unsigned int count)
{
    enum { PER_GPU = 14 + SETTINGS_NVLINK_LINKS };
    char (*lines)[DOCFILE_LINE_MAX] = malloc((count * PER_GPU + 1) * DOCFILE_LINE_MAX);
    if (!lines)
        return "cannot be written (no memory, or too large)";
    size_t n = 0;
    for (unsigned int p = 0; p < count; p++) {
        const struct settings_file_gpu *g = &f->gpu[p];
        const struct gpu_settings *s = &g->s;
        size_t first = n;
        if (s->power_limit_mw)
            snprintf(lines[n++], DOCFILE_LINE_MAX, GPUS ".%u." POWER " %u", p, s->power_limit_mw);
        if (s->persistence >= 0)
            snprintf(lines[n++], DOCFILE_LINE_MAX, GPUS ".%u." PERSISTENCE " %d", p, s->persistence);
        if (s->accounting >= 0)
            snprintf(lines[n++], DOCFILE_LINE_MAX, GPUS ".%u." ACCOUNTING " %d", p, s->accounting);
        if (s->compute_mode >= 0)
            snprintf(lines[n++], DOCFILE_LINE_MAX, GPUS ".%u." COMPUTE " %d", p, s->compute_mode);
        if (s->drain == 1)
            snprintf(lines[n++], DOCFILE_LINE_MAX, GPUS ".%u." DRAIN " 1", p);
        if (s->ecc_current >= 0)
            snprintf(lines[n++], DOCFILE_LINE_MAX, GPUS ".%u." ECC " %d %d", p, s->ecc_current, s->ecc_pending);
        if (s->app_memory_mhz)
            snprintf(lines[n++], DOCFILE_LINE_MAX, GPUS ".%u." APP " %u %u", p, s->app_memory_mhz,
                     s->app_graphics_mhz);
        if (s->locked_max_mhz)
            snprintf(lines[n++], DOCFILE_LINE_MAX, GPUS ".%u." LOCKED " %u %u", p, s->locked_min_mhz,
                     s->locked_max_mhz);
        if (s->mem_locked_max_mhz)
            snprintf(lines[n++], DOCFILE_LINE_MAX, GPUS ".%u." MEM_LOCKED " %u %u", p, s->mem_locked_min_mhz,
                     s->mem_locked_max_mhz);
        if (s->gpc_vf_offset_mhz || s->mem_vf_offset_mhz)
            snprintf(lines[n++], DOCFILE_LINE_MAX, GPUS ".%u." VF_OFFSETS " %d %d", p, s->gpc_vf_offset_mhz,
                     s->mem_vf_offset_mhz);
        if (s->app_clocks_restricted >= 0)
            snprintf(lines[n++], DOCFILE_LINE_MAX, GPUS ".%u." APP_RESTRICTED " %d", p, s->app_clocks_restricted);
        for (int scope = 0; scope < 2; scope++) {
            char text[SETTINGS_ECC_COUNTS * 11 + 1];   /* a space and 10 digits each: the line fits */
            if (!s->ecc_cleared[scope])
                continue;
            counts_text(s->ecc_base[scope], text, sizeof text);
            snprintf(lines[n++], DOCFILE_LINE_MAX, GPUS ".%u.%s %s", p, scope ? ECC_CLEARED_AGG : ECC_CLEARED_VOL,
                     text);
        }
        for (unsigned int link = 0; link < SETTINGS_NVLINK_LINKS; link++) {
            char text[SETTINGS_NVLINK_COUNTERS * 21 + 1];   /* a space and 20 digits each: the line fits */
            if (link_text(s->nvlink_base[link], text, sizeof text))
                snprintf(lines[n++], DOCFILE_LINE_MAX, GPUS ".%u." NVLINK_CLEARED ".%u %s", p, link, text);
        }
        if (n > first && g->uuid[0])
            snprintf(lines[n++], DOCFILE_LINE_MAX, GPUS ".%u." UUID " %s", p, g->uuid);
    }
    const char *why = docfile_write(dirfd, MOKKA_SETTINGS_STATE_FILE, MOKKA_SETTINGS_STATE_KIND, lines, n,
                                    MOKKA_SETTINGS_STATE_MAX_BYTES);
    free(lines);
    return why;
}
