/* Build the node nvmlInit publishes: the state companion (the topology
 * document already applied to it when it was compiled: mokka/core/topology.py),
 * fabric `state: auto`, and the visible GPUs. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine.h"

const char *node_get(const struct mock_node *n, const char *key)
{
    return flat_get(&n->state, key);
}

int node_u64(const struct mock_node *n, const char *key, unsigned long long *out)
{
    return flat_parse_u64(node_get(n, key), out);
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static const char *base_get(const struct mock_node *n, const struct mock_gpu *g, const char *key)
{
    char full[MOCK_VALUE_MAX];
    snprintf(full, sizeof full, "%s%s", g->base, key);
    return flat_get(&n->state, full);
}

/* --- fabric state auto: COMPLETED once the fabricmanager marker is there --- */

/* The fabricmanager state dir: the variable, else
 * `<driver root>/fabric-state` beside the `<driver root>/config/` the profile is
 * in, when that directory exists. 0 when there is none: no fabricmanager. */
static int fabric_state_dir(const struct mock_node *n, char *out, size_t size)
{
    const char *dir = getenv(MOKKA_ENV_FABRICMANAGER_STATE_DIR);
    if (dir && *dir) {
        snprintf(out, size, "%s", dir);
        return 1;
    }
    char path[MOCK_PATH_MAX];
    snprintf(path, sizeof path, "%s", n->config_yaml);   /* absolute (config_locate) */
    char *slash = strrchr(path, '/');             /* <root>/config | config.yaml */
    if (!slash)
        return 0;
    *slash = '\0';
    slash = strrchr(path, '/');                   /* <root> | config */
    if (!slash || strcmp(slash + 1, MOKKA_DRIVER_CONFIG_NAME) != 0)
        return 0;
    *slash = '\0';
    int n_out = snprintf(out, size, "%s/%s", path, MOKKA_DRIVER_FABRIC_STATE_NAME);
    struct stat st;
    return (size_t)n_out < size && stat(out, &st) == 0 && S_ISDIR(st.st_mode);   /* < 0: huge as size_t */
}

static int fabric_ready(const struct mock_node *n)
{
    char dir[MOCK_PATH_MAX];
    if (!fabric_state_dir(n, dir, sizeof dir))
        return 1;
    char path[MOCK_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, MOKKA_FABRICMANAGER_READY);
    return exists(path);
}

const char *node_fabric_auto(const struct mock_node *n)
{
    return n->fabric_ready ? MOKKA_FABRIC_STATE_COMPLETED : MOKKA_FABRIC_STATE_IN_PROGRESS;
}

/* --- visibility: MOCK_NVML_VISIBLE_DEVICES, else the /dev/nvidiaN present --- */

static int py_space(int c)
{
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

/* Trim white space (as str.strip: ASCII blanks and the separators 0x1c-0x1f) in place; returns the start. */
static char *strip(char *s)
{
    while (*s && py_space((unsigned char)*s))
        s++;
    size_t len = strlen(s);
    while (len > 0 && py_space((unsigned char)s[len - 1]))
        s[--len] = '\0';
    return s;
}

static int all_digits(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return 0;
    return 1;
}

static int prefix_ci(const char *s, const char *prefix)
{
    for (; *prefix; s++, prefix++)
        if (tolower((unsigned char)*s) != tolower((unsigned char)*prefix))
            return 0;
    return 1;
}

/* `none`, `void` and any other word that is no index, MIG or GPU UUID keep no GPU. */
static void keep_listed(struct mock_node *n, char *wanted, int keep[])
{
    if (strcasecmp(wanted, MOKKA_VISIBLE_ALL) == 0) {
        for (unsigned int i = 0; i < n->count; i++)
            keep[i] = 1;
        return;
    }
    char *save = NULL;
    /* strtok_r skips empty items, which name no GPU */
    for (char *item = strtok_r(wanted, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        item = strip(item);
        if (all_digits(item)) {
            unsigned long idx = strtoul(item, NULL, 10);   /* "007" is 7; past ULONG_MAX, ULONG_MAX */
            if (idx < n->count)
                keep[idx] = 1;
        } else if (prefix_ci(item, "mig-")) {
            n->mig_hooks->keep_listed(n, item, keep);  /* its parent, and under it only that MIG device */
        } else if (prefix_ci(item, "gpu-")) {
            for (unsigned int i = 0; i < n->count; i++) {
                const char *uuid = base_get(n, &n->gpus[i], K_UUID);
                if (uuid && prefix_ci(uuid, item))
                    keep[i] = 1;
            }
        }
    }
}

void node_dev_path(char *out, size_t size, const char *name)
{
    const char *root = getenv(MOKKA_ENV_DEV_ROOT);  /* unset or empty: the host's /dev */
    snprintf(out, size, "%s%s/%s", root ? root : "", MOKKA_CONTAINER_DEV_DIR, name);  /* "root/" gives "root//dev": one directory */
}

static void keep_present_nodes(struct mock_node *n, int keep[])
{
    unsigned int present = 0;
    for (unsigned int i = 0; i < n->count; i++) {
        const char *minor = base_get(n, &n->gpus[i], K_MINOR_NUMBER);
        unsigned long m = minor && all_digits(minor) ? strtoul(minor, NULL, 10) : i;
        char name[32], path[MOCK_PATH_MAX];
        snprintf(name, sizeof name, MOKKA_GPU_NODE_PREFIX "%lu", m);
        node_dev_path(path, sizeof path, name);
        keep[i] = exists(path);
        present += (unsigned int)keep[i];
    }
    if (present == 0 || present == n->count)      /* all or none present: every GPU */
        for (unsigned int i = 0; i < n->count; i++)
            keep[i] = 1;
}

static void select_visible(struct mock_node *n)
{
    int keep[MOCK_MAX_GPUS] = {0};
    const char *env = getenv(MOKKA_ENV_NVML_VISIBLE_DEVICES);
    char wanted[4096] = "";
    if (env)
        snprintf(wanted, sizeof wanted, "%s", env);
    char *w = strip(wanted);
    if (env && *w)
        keep_listed(n, w, keep);
    else
        keep_present_nodes(n, keep);
    n->nvisible = 0;
    for (unsigned int i = 0; i < n->count; i++) {
        if (!keep[i])
            continue;
        n->gpus[i].index = n->nvisible;
        n->visible[n->nvisible++] = i;
    }
}

/* --- the node ---------------------------------------------------------------- */

nvmlReturn_t node_build(const struct mig_hooks *mig, struct mock_node **out)
{
    struct mock_node *n = calloc(1, sizeof *n);
    if (!n)
        return NVML_ERROR_MEMORY;
    n->mig_hooks = mig;
    nvmlReturn_t ret = config_locate(n->config_yaml, sizeof n->config_yaml);
    if (ret != NVML_SUCCESS) {
        free(n);
        return ret;
    }
    char companion[MOCK_PATH_MAX];
    config_companion_path(n->config_yaml, companion, sizeof companion);
    struct flat_why why;                          /* settled: a profile swap in flight is waited out */
    if (flat_load_settled(AT_FDCWD, n->config_yaml, companion, &KIND_STATE, &n->state, &why) != FLAT_OK) {
        mock_say_unusable(NULL, n->config_yaml, &why, 1);
        free(n);
        return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    unsigned long long count = 0;
    node_u64(n, NODE_GPU_LEN, &count);                /* at most MOCK_MAX_GPUS (kinds.c) */
    n->count = count > MOCK_MAX_GPUS ? MOCK_MAX_GPUS : (unsigned int)count;
    for (unsigned int i = 0; i < n->count; i++) {
        struct mock_gpu *g = &n->gpus[i];
        g->node = n;
        g->phys = i;
        snprintf(g->base, sizeof g->base, NODE_GPU_N ".", i);
    }
    n->fabric_ready = fabric_ready(n);
    dynamic_read_clock(n);
    config_overrides_dir(n->config_yaml, n->overrides_dir, sizeof n->overrides_dir);
    if (!(n->settings = settings_open(n)) || !(n->mig = n->mig_hooks->open(n))) {
        node_free(n);
        return NVML_ERROR_MEMORY;
    }
    select_visible(n);
    *out = n;
    return NVML_SUCCESS;
}

int node_same(const struct mock_node *a, const struct mock_node *b)
{
    if (a->state.len != b->state.len || memcmp(a->state.buf, b->state.buf, a->state.len) != 0)
        return 0;
    if (a->count != b->count || a->nvisible != b->nvisible || a->fabric_ready != b->fabric_ready ||
        a->clock_pinned != b->clock_pinned || a->clock != b->clock ||
        strcmp(a->config_yaml, b->config_yaml) != 0)     /* the overrides directory follows from it */
        return 0;
    if (memcmp(a->visible, b->visible, a->nvisible * sizeof a->visible[0]) != 0 || !a->mig_hooks->same(a->mig, b->mig))
        return 0;
    return 1;
}

void node_free(struct mock_node *n)
{
    if (!n)
        return;
    if (n->mig)
        n->mig_hooks->free(n->mig);
    settings_free(n->settings);
    flat_free(&n->state);
    free(n);
}
