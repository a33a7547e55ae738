/* mig.nvml on disk: the node's MIG partitions as lines of Mokka's companion format,
 * one line per GPU mode and per instance, sorted by key as bytes:
 *
 *     # mokka-nvml mig 1
 *     digest sha256:<hex of every line after this one>
 *     gpu.0.gi.1 9 0:4              GPU instance 1: profile ID 9, placement 0:4
 *     gpu.0.gi.1.ci.0 2 0:3         its compute instance 0: profile ID 2, placement 0:3
 *     gpu.0.mode 1 1                MIG mode current, pending
 *     gpu.0.uuid GPU-...            the GPU the lines are for
 *
 * The digest covers the file's own lines (it has no YAML twin), so a truncated or
 * edited file is refused whole. Everything here is a workload's to write: the
 * reader is strict (every key and value spelt exactly so, every number bounded
 * before use, keys in order and unique, nothing followed, nothing waited on) and
 * says what it refused in a few words; mig_state.c then checks the partitions
 * against the board's table. The bytes (header, digest, bounded read, temp and
 * rename) are the engine's document format (engine/docfile.c), shared with
 * settings.nvml.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/docfile.h"
#include "mig_file.h"

#define GPUS MOKKA_MIG_STATE_GPUS                 /* the keys: names.MIG_STATE_* */
#define GI MOKKA_MIG_STATE_GPU_INSTANCE
#define CI MOKKA_MIG_STATE_COMPUTE_INSTANCE
#define UUID_CHARS "0123456789abcdefABCDEF-GPU"

const char *mig_file_read(int dirfd, char **text, size_t *len)
{
    return docfile_read(dirfd, MOKKA_MIG_STATE_FILE, MOKKA_MIG_STATE_MAX_BYTES, MIG_FILE_MAX_TEXT, text, len);
}

/* "<profile id> <start>:<size>" */
static int instance_value(const char *v, unsigned int *profile_id, unsigned int *start, unsigned int *size)
{
    return docfile_field(&v, ' ', 0xffffffffu, profile_id) && docfile_field(&v, ':', MIG_MEMORY_SLICES - 1, start) &&
           docfile_field(&v, '\0', MIG_MEMORY_SLICES, size);
}

static int uuid_value(const char *v, char out[MIG_FILE_UUID_MAX])
{
    size_t len = strlen(v);
    if (len == 0 || len >= MIG_FILE_UUID_MAX || strspn(v, UUID_CHARS) != len)
        return 0;
    memcpy(out, v, len + 1);
    return 1;
}

/* One "<key> <value>" line into f. */
struct parse_ctx {
    unsigned int count;
    struct mig_file *f;
};

static const char *parse_line(const char *key, const char *value, void *arg)
{
    unsigned int count = ((struct parse_ctx *)arg)->count;
    struct mig_file *f = ((struct parse_ctx *)arg)->f;
    const char *p = key;
    unsigned int phys, gi, ci;
    if (strncmp(p, GPUS ".", sizeof GPUS) != 0 ||
        (p += sizeof GPUS, !docfile_field(&p, '.', count ? count - 1 : 0, &phys)) || phys >= count)
        return "a GPU the node does not have";
    struct mig_file_gpu *g = &f->gpu[phys];
    if (strcmp(p, MOKKA_MIG_STATE_UUID) == 0)
        return uuid_value(value, g->uuid) ? NULL : "a GPU UUID that is not one";
    if (strcmp(p, MOKKA_MIG_STATE_MODE) == 0) {
        const char *v = value;
        if (!docfile_field(&v, ' ', 1, &g->current) || !docfile_field(&v, '\0', 1, &g->pending))
            return "a MIG mode other than 0 or 1";
        g->has_mode = 1;
        return NULL;
    }
    if (strncmp(p, GI ".", sizeof GI) != 0)
        return "an unknown key";
    p += sizeof GI;
    const char *dot = strchr(p, '.');
    if (!docfile_number(p, dot ? (size_t)(dot - p) : strlen(p), MIG_GI_IDS - 1, &gi))
        return "a GPU instance id out of range";
    struct mig_file_gi *e = &g->gi[gi];
    if (!dot) {
        e->present = 1;
        return instance_value(value, &e->profile_id, &e->start, &e->size) ? NULL : "a bad GPU instance";
    }
    p = dot + 1;
    if (strncmp(p, CI ".", sizeof CI) != 0 || (p += sizeof CI, !docfile_field(&p, '\0', MIG_CI_IDS - 1, &ci)))
        return "a compute instance id out of range";
    if (!e->present)
        return "a compute instance of a GPU instance the file does not have";
    e->ci[ci].present = 1;
    return instance_value(value, &e->ci[ci].profile_id, &e->ci[ci].start, &e->ci[ci].size)
               ? NULL : "a bad compute instance";
}

const char *mig_file_parse(char *text, size_t len, unsigned int count, struct mig_file *f, int *holds)
{
    memset(f, 0, sizeof *f);
    struct parse_ctx ctx = {count, f};
    return docfile_parse(text, len, MOKKA_MIG_STATE_KIND, parse_line, &ctx, holds);
}

/* --- writing ------------------------------------------------------------------------ */

/* How many lines GPU g of the file takes. */
static size_t lines_of(const struct mig_file_gpu *g)
{
    size_t n = g->has_mode ? 1 + (g->uuid[0] != '\0') : 0;
    for (unsigned int i = 0; g->has_mode && i < MIG_GI_IDS; i++) {
        n += g->gi[i].present;
        for (unsigned int c = 0; g->gi[i].present && c < MIG_CI_IDS; c++)
            n += g->gi[i].ci[c].present;
    }
    return n;
}

const char *mig_file_write(int dirfd, const struct mig_file *f, unsigned int count)
{
    size_t want = 0, n = 0;
    for (unsigned int p = 0; p < count; p++)
        want += lines_of(&f->gpu[p]);
    char (*lines)[DOCFILE_LINE_MAX] = malloc((want + 1) * DOCFILE_LINE_MAX);
    if (!lines)
        return "cannot be written (no memory, or too large)";
    for (unsigned int p = 0; p < count; p++) {
        const struct mig_file_gpu *g = &f->gpu[p];
        if (!g->has_mode)
            continue;
        if (g->uuid[0])
            snprintf(lines[n++], DOCFILE_LINE_MAX, GPUS ".%u." MOKKA_MIG_STATE_UUID " %s", p, g->uuid);
        snprintf(lines[n++], DOCFILE_LINE_MAX, GPUS ".%u." MOKKA_MIG_STATE_MODE " %u %u", p, g->current, g->pending);
        for (unsigned int i = 0; i < MIG_GI_IDS; i++) {
            const struct mig_file_gi *e = &g->gi[i];
            if (!e->present)
                continue;
            snprintf(lines[n++], DOCFILE_LINE_MAX, GPUS ".%u." GI ".%u %u %u:%u", p, i, e->profile_id, e->start,
                     e->size);
            for (unsigned int c = 0; c < MIG_CI_IDS; c++)
                if (e->ci[c].present)
                    snprintf(lines[n++], DOCFILE_LINE_MAX, GPUS ".%u." GI ".%u." CI ".%u %u %u:%u", p, i, c,
                             e->ci[c].profile_id, e->ci[c].start, e->ci[c].size);
        }
    }
    const char *why = docfile_write(dirfd, MOKKA_MIG_STATE_FILE, MOKKA_MIG_STATE_KIND, lines, n,
                                    MOKKA_MIG_STATE_MAX_BYTES);
    free(lines);
    return why;
}
