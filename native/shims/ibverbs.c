/* libibmockverbs: the mock HCAs through libibverbs' public API.
 *
 * Approach: interposition of the exported, versioned-stable verbs entry points
 * (ibv_get_device_list, ibv_open_device, ibv_query_device, ibv_query_port,
 * ibv_query_gid, ...), not a provider. A provider plugs into libibverbs'
 * private ABI (IBVERBS_PRIVATE_<n>, verbs_device_ops), which changes with every
 * rdma-core release, so it would work with one libibverbs only; these entry
 * points are the same in every libibverbs a container may bring. The contexts
 * handed out are not "extended" (abi_compat is NULL), so the inline wrappers
 * of verbs.h (ibv_query_port, ibv_query_device_ex, ...) fall back to the
 * exported functions, which this library answers. Data path calls
 * (ibv_alloc_pd, ibv_create_cq, ...) on a mock context fail with EOPNOTSUPP.
 *
 * Active only while MOCK_IB=full and MOCK_IB_ROOT is set; then the HCAs are
 * those of $MOCK_IB_ROOT/sys/class/infiniband (the tree the node agent
 * renders: this library derives nothing itself) and the host's own are
 * hidden. Otherwise, and for any device or context not of ours, every call
 * goes on to the next definition (libibverbs). */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mokka_names.h"
#include "shim.h"
#include "verbs_abi.h"

#define CONTEXT_BLOCK 4096              /* zeroed room around a context (see verbs_abi.h) */

static struct ibv_device *devices;      /* the mock HCAs, built once */
static int device_count;
static char class_dir[MOKKA_SHIM_PATH_MAX];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static int active(void)
{
    const char *tier = mokka_shim_getenv(MOKKA_ENV_IB);
    const char *root = mokka_shim_getenv(MOKKA_ENV_IB_ROOT);
    return tier != NULL && strcmp(tier, MOKKA_IB_FULL) == 0 && root != NULL && root[0] == '/';
}

/* The next definition, at libibverbs' current version: a bare dlsym would
 * find the IBVERBS_1.0 compat one of a symbol defined at both. */
static void *next(const char *name)
{
    void *sym = dlvsym(RTLD_NEXT, name, "IBVERBS_1.1");
    return sym != NULL ? sym : dlsym(RTLD_NEXT, name);
}

/* --------------------------------------------------------------- sysfs reads */

static int read_attr(const char *dir, const char *rel, char *out, size_t size)
{
    char path[MOKKA_SHIM_PATH_MAX];
    if (dir[0] != '/' || (size_t)snprintf(path, sizeof path, "%s/%s", dir, rel) >= sizeof path)
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, out, size - 1);
    close(fd);
    if (n < 0)
        return -1;
    out[n] = '\0';
    out[strcspn(out, "\n")] = '\0';
    return 0;
}

static unsigned long attr_number(const char *dir, const char *rel, unsigned long fallback)
{
    char text[64];
    if (read_attr(dir, rel, text, sizeof text) != 0)
        return fallback;
    char *end;
    unsigned long value = strtoul(text, &end, 0);   /* "4: ACTIVE" -> 4, "0x4398" */
    return end == text ? fallback : value;
}

/* "a088:c203:876b:2600" -> the GUID as the wire carries it (big-endian). */
static uint64_t attr_guid(const char *dir, const char *rel)
{
    char text[64];
    uint64_t value = 0;
    if (read_attr(dir, rel, text, sizeof text) != 0)
        return 0;
    for (const char *c = text; *c; c++) {
        int digit = (*c >= '0' && *c <= '9') ? *c - '0'
                  : (*c >= 'a' && *c <= 'f') ? *c - 'a' + 10
                  : (*c >= 'A' && *c <= 'F') ? *c - 'A' + 10 : -1;
        if (digit >= 0)
            value = (value << 4) | (uint64_t)digit;
    }
    return __builtin_bswap64(value);
}

static int by_index(const void *a, const void *b)
{
    const struct ibv_device *x = a, *y = b;
    size_t lx = strlen(x->name), ly = strlen(y->name);
    return lx != ly ? (lx < ly ? -1 : 1) : strcmp(x->name, y->name);   /* mlx5_2 < mlx5_10 */
}

static void build(void)
{
    const char *root = mokka_shim_getenv(MOKKA_ENV_IB_ROOT);
    const char *sys_class = &MOKKA_IB_CLASS_DIR[sizeof(MOKKA_IB_DIR) - 1];   /* "/sys/class/infiniband" */
    /* Room left for "/<name>/ports/1/counters/<attr>": a longer root has no HCA. */
    if ((size_t)snprintf(class_dir, sizeof class_dir, "%s%s", root, sys_class)
        >= sizeof class_dir - 2 * MOCK_IBV_SYSFS_NAME_MAX)
        return;
    DIR *dir = opendir(class_dir);
    if (dir == NULL)
        return;
    int capacity = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        if (entry->d_name[0] == '.' || strlen(entry->d_name) >= MOCK_IBV_SYSFS_NAME_MAX)
            continue;
        if (device_count == capacity) {
            int grown = capacity ? capacity * 2 : 16;
            struct ibv_device *more = realloc(devices, (size_t)grown * sizeof *more);
            if (more == NULL)
                break;
            devices = more;
            capacity = grown;
        }
        struct ibv_device *d = &devices[device_count++];
        memset(d, 0, sizeof *d);
        d->node_type = 1;               /* IBV_NODE_CA */
        d->transport_type = 0;          /* IBV_TRANSPORT_IB */
        snprintf(d->name, sizeof d->name, "%s", entry->d_name);
        snprintf(d->ibdev_path, sizeof d->ibdev_path, "%s/%s", sys_class, entry->d_name);
    }
    closedir(dir);
    if (device_count > 0)
        qsort(devices, (size_t)device_count, sizeof *devices, by_index);
    for (int i = 0; i < device_count; i++) {   /* uverbs<i> pairs with the i-th HCA */
        snprintf(devices[i].dev_name, sizeof devices[i].dev_name, "uverbs%d", i);
        snprintf(devices[i].dev_path, sizeof devices[i].dev_path,
                 "/sys/class/infiniband_verbs/uverbs%d", i);
    }
}

static int mine_device(const struct ibv_device *d)
{
    return devices != NULL && d >= devices && d < devices + device_count;
}

static int mine_context(const struct ibv_context *c)
{
    return c != NULL && mine_device(c->device);
}

/* sysfs folder of a mock device: $MOCK_IB_ROOT/sys/class/infiniband/<name>
 * (build() keeps class_dir short enough for it; "" never names a file). */
static void device_dir(const struct ibv_device *d, char out[MOKKA_SHIM_PATH_MAX])
{
    if ((size_t)snprintf(out, MOKKA_SHIM_PATH_MAX, "%s/%s", class_dir, d->name) >= MOKKA_SHIM_PATH_MAX)
        out[0] = '\0';
}

/* --------------------------------------------------------------- the API */

MOKKA_EXPORT struct ibv_device **ibv_get_device_list(int *num)
{
    if (!active()) {
        struct ibv_device **(*real)(int *) = (struct ibv_device **(*)(int *))next("ibv_get_device_list");
        if (real == NULL) {
            errno = ENOSYS;
            return NULL;
        }
        return real(num);
    }
    pthread_once(&once, build);
    struct ibv_device **list = calloc((size_t)device_count + 1, sizeof *list);
    if (list == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    for (int i = 0; i < device_count; i++)
        list[i] = &devices[i];
    if (num != NULL)
        *num = device_count;
    return list;
}

MOKKA_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
    if (list != NULL && (list[0] == NULL || mine_device(list[0]))) {
        free(list);
        return;
    }
    void (*real)(struct ibv_device **) = (void (*)(struct ibv_device **))next("ibv_free_device_list");
    if (real != NULL)
        real(list);
}

MOKKA_EXPORT const char *ibv_get_device_name(struct ibv_device *d)
{
    if (mine_device(d))
        return d->name;
    const char *(*real)(struct ibv_device *) = (const char *(*)(struct ibv_device *))next("ibv_get_device_name");
    return real ? real(d) : NULL;
}

MOKKA_EXPORT uint64_t ibv_get_device_guid(struct ibv_device *d)
{
    if (mine_device(d)) {
        char dir[MOKKA_SHIM_PATH_MAX];
        device_dir(d, dir);
        return attr_guid(dir, "node_guid");
    }
    uint64_t (*real)(struct ibv_device *) = (uint64_t (*)(struct ibv_device *))next("ibv_get_device_guid");
    return real ? real(d) : 0;
}

MOKKA_EXPORT int ibv_get_device_index(struct ibv_device *d)
{
    if (mine_device(d))
        return (int)(d - devices);
    int (*real)(struct ibv_device *) = (int (*)(struct ibv_device *))next("ibv_get_device_index");
    return real ? real(d) : -1;
}

MOKKA_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *d)
{
    if (!mine_device(d)) {
        struct ibv_context *(*real)(struct ibv_device *) =
            (struct ibv_context *(*)(struct ibv_device *))next("ibv_open_device");
        return real ? real(d) : NULL;
    }
    struct ibv_context *c = calloc(1, CONTEXT_BLOCK);
    if (c == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    c->device = d;
    c->cmd_fd = -1;
    c->async_fd = -1;
    c->num_comp_vectors = 1;
    pthread_mutex_init(&c->mutex, NULL);
    return c;
}

MOKKA_EXPORT int ibv_close_device(struct ibv_context *c)
{
    if (mine_context(c)) {
        pthread_mutex_destroy(&c->mutex);
        free(c);
        return 0;
    }
    int (*real)(struct ibv_context *) = (int (*)(struct ibv_context *))next("ibv_close_device");
    return real ? real(c) : ENOSYS;
}

MOKKA_EXPORT int ibv_query_device(struct ibv_context *c, struct ibv_device_attr *attr)
{
    if (!mine_context(c)) {
        int (*real)(struct ibv_context *, struct ibv_device_attr *) =
            (int (*)(struct ibv_context *, struct ibv_device_attr *))next("ibv_query_device");
        return real ? real(c, attr) : ENOSYS;
    }
    char dir[MOKKA_SHIM_PATH_MAX];
    device_dir(c->device, dir);
    memset(attr, 0, sizeof *attr);
    read_attr(dir, "fw_ver", attr->fw_ver, sizeof attr->fw_ver);
    attr->node_guid = attr_guid(dir, "node_guid");
    attr->sys_image_guid = attr_guid(dir, "sys_image_guid");
    attr->max_mr_size = UINT64_MAX;
    attr->page_size_cap = 0xfffffffffffff000ULL;
    attr->vendor_id = MOKKA_IB_VENDOR_OUI;
    attr->vendor_part_id = (uint32_t)attr_number(dir, "device/device", 0);
    attr->hw_ver = (uint32_t)attr_number(dir, "hw_rev", 0);
    attr->max_qp = 131072;
    attr->max_qp_wr = 32768;
    attr->max_sge = 30;
    attr->max_cq = 16777216;
    attr->max_cqe = 4194303;
    attr->max_mr = 16777216;
    attr->max_pd = 8388608;
    attr->max_qp_rd_atom = 16;
    attr->max_res_rd_atom = 2097152;
    attr->max_qp_init_rd_atom = 16;
    attr->atomic_cap = 1;               /* IBV_ATOMIC_HCA */
    attr->max_mcast_grp = 2097152;
    attr->max_mcast_qp_attach = 240;
    attr->max_total_mcast_qp_attach = 503316480;
    attr->max_ah = 0x7fffffff;
    attr->max_srq = 8388608;
    attr->max_srq_wr = 32767;
    attr->max_srq_sge = 31;
    attr->max_pkeys = 128;
    attr->local_ca_ack_delay = 16;
    attr->phys_port_cnt = 1;
    return 0;
}

/* "400 Gb/sec (4X NDR)" -> (width, speed) in the verbs encoding. */
static void rate_codes(const char *rate, uint8_t *width, uint8_t *speed)
{
    static const struct { const char *name; uint8_t code; } speeds[] = {
        {"SDR", 1}, {"DDR", 2}, {"QDR", 4}, {"FDR10", 8}, {"FDR", 16}, {"EDR", 32},
        {"HDR", 64}, {"NDR", 128}, {"XDR", 0}, {NULL, 0},
    };
    const char *x = strchr(rate, '(');
    *width = 2;                         /* 4X */
    *speed = 0;
    if (x == NULL)
        return;
    if (strncmp(x, "(1X", 3) == 0)
        *width = 1;
    else if (strncmp(x, "(8X", 3) == 0)
        *width = 4;
    else if (strncmp(x, "(12X", 4) == 0)
        *width = 8;
    const char *name = strchr(x, ' ');
    for (int i = 0; name != NULL && speeds[i].name != NULL; i++) {
        size_t n = strlen(speeds[i].name);
        if (strncmp(name + 1, speeds[i].name, n) == 0 && name[1 + n] == ')') {
            *speed = speeds[i].code;
            return;
        }
    }
}

MOKKA_EXPORT int ibv_query_port(struct ibv_context *c, uint8_t port, struct mock_ibv_port_attr *attr)
{
    if (!mine_context(c)) {
        int (*real)(struct ibv_context *, uint8_t, struct mock_ibv_port_attr *) =
            (int (*)(struct ibv_context *, uint8_t, struct mock_ibv_port_attr *))next("ibv_query_port");
        return real ? real(c, port, attr) : ENOSYS;
    }
    char dir[MOKKA_SHIM_PATH_MAX], rel[64], text[128];
    device_dir(c->device, dir);
    snprintf(rel, sizeof rel, "ports/%u/state", port);
    if (read_attr(dir, rel, text, sizeof text) != 0)
        return EINVAL;                  /* no such port */
    memset(attr, 0, sizeof *attr);
    attr->state = (int)strtoul(text, NULL, 10);
    snprintf(rel, sizeof rel, "ports/%u/phys_state", port);
    attr->phys_state = (uint8_t)attr_number(dir, rel, 0);
    snprintf(rel, sizeof rel, "ports/%u/lid", port);
    attr->lid = (uint16_t)attr_number(dir, rel, 0);
    snprintf(rel, sizeof rel, "ports/%u/sm_lid", port);
    attr->sm_lid = (uint16_t)attr_number(dir, rel, 0);
    snprintf(rel, sizeof rel, "ports/%u/sm_sl", port);
    attr->sm_sl = (uint8_t)attr_number(dir, rel, 0);
    snprintf(rel, sizeof rel, "ports/%u/lid_mask_count", port);
    attr->lmc = (uint8_t)attr_number(dir, rel, 0);
    snprintf(rel, sizeof rel, "ports/%u/cap_mask", port);
    attr->port_cap_flags = (uint32_t)attr_number(dir, rel, 0);
    snprintf(rel, sizeof rel, "ports/%u/link_layer", port);
    attr->link_layer = (read_attr(dir, rel, text, sizeof text) == 0 && strcmp(text, "Ethernet") == 0)
                       ? 2 : 1;         /* IBV_LINK_LAYER_ETHERNET : _INFINIBAND */
    snprintf(rel, sizeof rel, "ports/%u/rate", port);
    if (read_attr(dir, rel, text, sizeof text) == 0)
        rate_codes(text, &attr->active_width, &attr->active_speed);
    attr->max_mtu = 5;                  /* IBV_MTU_4096 */
    attr->active_mtu = 5;
    attr->gid_tbl_len = 1;
    attr->pkey_tbl_len = 1;
    attr->max_msg_sz = 0x40000000;
    attr->max_vl_num = 4;
    attr->subnet_timeout = 18;
    return 0;
}

MOKKA_EXPORT int ibv_query_gid(struct ibv_context *c, uint8_t port, int index, union ibv_gid *gid)
{
    if (!mine_context(c)) {
        int (*real)(struct ibv_context *, uint8_t, int, union ibv_gid *) =
            (int (*)(struct ibv_context *, uint8_t, int, union ibv_gid *))next("ibv_query_gid");
        return real ? real(c, port, index, gid) : -1;
    }
    char dir[MOKKA_SHIM_PATH_MAX], rel[64], text[128];
    device_dir(c->device, dir);
    snprintf(rel, sizeof rel, "ports/%u/gids/%d", port, index);
    if (index < 0 || read_attr(dir, rel, text, sizeof text) != 0)
        return -1;
    unsigned int g[8];
    if (sscanf(text, "%x:%x:%x:%x:%x:%x:%x:%x", &g[0], &g[1], &g[2], &g[3], &g[4], &g[5], &g[6],
               &g[7]) != 8)
        return -1;
    for (int i = 0; i < 8; i++) {
        gid->raw[2 * i] = (uint8_t)(g[i] >> 8);
        gid->raw[2 * i + 1] = (uint8_t)g[i];
    }
    return 0;
}

MOKKA_EXPORT int ibv_query_gid_type(struct ibv_context *c, uint8_t port, unsigned int index,
                                    int *type)
{
    if (!mine_context(c)) {
        int (*real)(struct ibv_context *, uint8_t, unsigned int, int *) =
            (int (*)(struct ibv_context *, uint8_t, unsigned int, int *))next("ibv_query_gid_type");
        return real ? real(c, port, index, type) : ENOSYS;
    }
    (void)port;
    (void)index;
    *type = 0;                          /* IBV_GID_TYPE_SYSFS_IB_ROCE_V1 */
    return 0;
}

MOKKA_EXPORT int ibv_query_pkey(struct ibv_context *c, uint8_t port, int index, uint16_t *pkey)
{
    if (!mine_context(c)) {
        int (*real)(struct ibv_context *, uint8_t, int, uint16_t *) =
            (int (*)(struct ibv_context *, uint8_t, int, uint16_t *))next("ibv_query_pkey");
        return real ? real(c, port, index, pkey) : -1;
    }
    (void)port;
    if (index != 0)
        return -1;
    *pkey = 0xffff;                     /* the default partition, either byte order */
    return 0;
}

/* The data path is not simulated: a mock context refuses it, never crashes. */
#define REFUSE(ret, name, params, args) \
    MOKKA_EXPORT ret name params \
    { \
        if (mine_context(context)) { \
            errno = EOPNOTSUPP; \
            return NULL; \
        } \
        ret (*real) params = (ret (*) params)next(#name); \
        if (real == NULL) { \
            errno = ENOSYS; \
            return NULL; \
        } \
        return real args; \
    }
REFUSE(void *, ibv_alloc_pd, (struct ibv_context *context), (context))
REFUSE(void *, ibv_create_comp_channel, (struct ibv_context *context), (context))
REFUSE(void *, ibv_create_cq, (struct ibv_context *context, int cqe, void *cq_context,
                               void *channel, int comp_vector),
       (context, cqe, cq_context, channel, comp_vector))
