/* Which MIG devices this process sees, and what they are called.
 *
 * As the real driver enforces through /dev/nvidia-caps: a process that has some
 * MIG capability nodes (`<MOCK_NVML_DEV_ROOT>/dev/nvidia-caps/nvidia-cap<N>`, N
 * by the mig-minors numbering of names.py) sees exactly the MIG devices whose
 * two nodes (GPU instance access, compute instance access) it has, as a
 * container the device plugin gave one MIG device does (the driver numbers GPU
 * minors below names.MIG_MINORS_GPUS only: a MIG device of any other has no
 * node, so such a container sees none of it); one with the monitor
 * node, or with none at all (the host), sees every MIG device. The nodes are
 * looked at once, when nvmlInit builds the node, as /dev/nvidiaN are.
 *
 * MOCK_NVML_VISIBLE_DEVICES may name MIG devices by UUID (MIG-...): each keeps its
 * parent GPU visible and, under it, only the MIG devices named.
 *
 * A MIG UUID is derived from the parent's UUID and the two instance ids, the same
 * in every process: "MIG-" and the first 128 bits of SHA-256("<GPU UUID>/gi<g>/ci<c>")
 * laid out as a name-based UUID (version 5 and RFC 4122 variant bits set).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "engine/sha256.h"
#include "mig.h"

#define CAP_MINOR_LIMIT (MOKKA_MIG_CAP_FIRST_MINOR + MOKKA_MIG_CAP_MINORS_PER_GPU * MOKKA_MIG_MINORS_GPUS)
#define SCAN_MAX_ENTRIES 16384                    /* a directory a workload filled is read this far */

struct mig_view {
    int by_caps;                                  /* some MIG nodes, no monitor node: filter by them */
    unsigned char cap[CAP_MINOR_LIMIT / 8 + 1];   /* nvidia-cap<N> present */
    unsigned int minor[MOCK_MAX_GPUS];            /* each GPU's /dev/nvidiaN number */
    unsigned char listed[MOCK_MAX_GPUS];          /* MOCK_NVML_VISIBLE_DEVICES named MIG devices of it */
    unsigned char allowed[MOCK_MAX_GPUS][MIG_GI_IDS];   /* those, as a compute instance bit set */
};

static int has_cap(const struct mig_view *v, unsigned long minor)
{
    return minor < CAP_MINOR_LIMIT && (v->cap[minor / 8] >> (minor % 8) & 1);
}

static unsigned long gi_minor(unsigned int gpu_minor, unsigned int gi)
{
    return MOKKA_MIG_CAP_FIRST_MINOR + (unsigned long)MOKKA_MIG_CAP_MINORS_PER_GPU * gpu_minor +
           (unsigned long)MOKKA_MIG_CAP_MINORS_PER_GI * gi;
}

/* "nvidia-cap<N>" -> N, or -1. */
static long cap_number(const char *name)
{
    size_t plen = strlen(MOKKA_NVIDIA_CAP_PREFIX);
    if (strncmp(name, MOKKA_NVIDIA_CAP_PREFIX, plen) != 0)
        return -1;
    const char *d = name + plen;
    size_t len = strlen(d);
    if (len == 0 || len > 6 || strspn(d, "0123456789") != len || (d[0] == '0' && len > 1))
        return -1;
    return strtol(d, NULL, 10);
}

static void scan_caps(struct mig_view *v)
{
    char path[MOCK_PATH_MAX];
    node_dev_path(path, sizeof path, MOKKA_NVIDIA_CAPS_DEV_NAME);
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
    DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
    if (!dir) {
        if (fd >= 0)
            close(fd);
        return;
    }
    int mig_nodes = 0, monitor = 0;
    struct dirent *e;
    for (unsigned int seen = 0; seen < SCAN_MAX_ENTRIES && (e = readdir(dir)) != NULL; seen++) {
        long minor = cap_number(e->d_name);
        if (minor < 0 || minor >= CAP_MINOR_LIMIT)
            continue;
        v->cap[minor / 8] |= (unsigned char)(1u << (minor % 8));
        monitor |= minor == MOKKA_MIG_CAP_MONITOR_MINOR;
        mig_nodes |= minor >= MOKKA_MIG_CAP_FIRST_MINOR;
    }
    closedir(dir);
    v->by_caps = mig_nodes && !monitor;
}

struct mig_view *mig_view_open(const struct mock_node *n)
{
    struct mig_view *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    for (unsigned int i = 0; i < n->count; i++) {
        unsigned long long m = i;
        char key[48];
        snprintf(key, sizeof key, "%s" K_MINOR_NUMBER, n->gpus[i].base);
        node_u64(n, key, &m);                     /* as /dev/nvidiaN visibility reads it */
        v->minor[i] = m < MOKKA_MIG_MINORS_GPUS ? (unsigned int)m : MOKKA_MIG_MINORS_GPUS;   /* past it: no node */
    }
    scan_caps(v);
    return v;
}

void mig_view_free(struct mig_view *v)
{
    free(v);
}

int mig_view_same(const struct mig_view *a, const struct mig_view *b)
{
    return memcmp(a, b, sizeof *a) == 0;
}

int mig_view_sees(const struct mock_node *n, unsigned int phys, unsigned int gi, unsigned int ci)
{
    const struct mig_view *v = mig_node_view(n);
    if (!v || phys >= MOCK_MAX_GPUS || gi >= MIG_GI_IDS || ci >= MIG_CI_IDS)
        return 0;
    if (v->listed[phys] && !(v->allowed[phys][gi] >> ci & 1))
        return 0;
    if (!v->by_caps)
        return 1;
    unsigned long g = gi_minor(v->minor[phys], gi);
    return has_cap(v, g) && has_cap(v, g + 1 + ci);
}

int mig_uuid(const struct mock_gpu *g, unsigned int gi, unsigned int ci, char out[MIG_UUID_SIZE])
{
    char parent[MOCK_VALUE_MAX], name[MOCK_VALUE_MAX + 32], digest[SHA256_DIGEST_TEXT_SIZE];
    if (gpu_str(g, K_UUID, parent, sizeof parent) != 1)
        return 0;
    for (char *p = parent; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    int len = snprintf(name, sizeof name, "%s/gi%u/ci%u", parent, gi, ci);
    sha256_digest_text(name, (size_t)len, digest);
    char *h = strchr(digest, ':') + 1;            /* 64 hex digits */
    h[12] = '5';                                  /* version 5: name-based */
    static const char hex[] = "0123456789abcdef";
    h[16] = "89ab"[(strchr(hex, h[16]) - hex) & 3];   /* RFC 4122 variant: 10xx */
    snprintf(out, MIG_UUID_SIZE, "MIG-%.8s-%.4s-%.4s-%.4s-%.12s", h, h + 8, h + 12, h + 16, h + 20);
    return 1;
}

void mig_view_keep_listed(struct mock_node *n, const char *item, int keep[])
{
    struct mig_view *v = mig_node_view(n);
    if (!v)
        return;
    size_t want = strlen(item);
    for (unsigned int p = 0; p < n->count; p++) {
        if (!mig_table(n, p))
            continue;
        for (unsigned int gi = 0; gi < MIG_GI_IDS; gi++) {
            for (unsigned int ci = 0; ci < MIG_CI_IDS; ci++) {
                char uuid[MIG_UUID_SIZE];
                if (!mig_uuid(&n->gpus[p], gi, ci, uuid) || strncasecmp(uuid, item, want) != 0)
                    continue;
                keep[p] = 1;                      /* a MIG device comes with its parent */
                v->listed[p] = 1;
                v->allowed[p][gi] |= (unsigned char)(1u << ci);
            }
        }
    }
}
