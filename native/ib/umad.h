/* libibmockumad's shared parts: libibumad's public layouts (we never include its
 * headers), the activation switch, the port table and the frames to mock-ib.
 * transport.c implements them; umad.c (ports and MADs) and query.c (CA and
 * port queries) are the libibumad API. */
#ifndef MOKKA_IB_UMAD_H
#define MOKKA_IB_UMAD_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "mokka_names.h"

#define EXPORT __attribute__((visibility("default")))

/* libibumad's public layouts (umad.h, rdma-core): we never include its header. */
#define NAME_LEN 20            /* UMAD_CA_NAME_LEN */
#define CA_MAX_PORTS 10        /* UMAD_CA_MAX_PORTS */
#define MAX_AGENTS 32          /* UMAD_CA_MAX_AGENTS */
#define ADDR_SIZE 44           /* struct ib_mad_addr */
#define UMAD_HDR_NEW 64        /* struct ib_user_mad before data[], ABI 5 with pkey_index */
#define MASK_SIZE 16           /* method mask: 128 bits */
#define MAX_PORTS 64           /* open ports per process */

typedef struct {
    char ca_name[NAME_LEN];
    int portnum;
    unsigned base_lid, lmc, sm_lid, sm_sl, state, phys_state, rate;
    uint32_t capmask;          /* network order */
    uint64_t gid_prefix;       /* network order */
    uint64_t port_guid;        /* network order */
    unsigned pkeys_size;
    uint16_t *pkeys;
    char link_layer[NAME_LEN];
} mock_umad_port;

typedef struct {
    char ca_name[NAME_LEN];
    unsigned node_type;
    int numports;
    char fw_ver[20];
    char ca_type[40];
    char hw_ver[20];
    uint64_t node_guid;        /* network order */
    uint64_t system_guid;
    mock_umad_port *ports[CA_MAX_PORTS];
} mock_umad_ca;

struct umad_reg_attr {
    uint8_t mgmt_class;
    uint8_t mgmt_class_version;
    uint32_t flags;
    uint64_t method_mask[2];
    uint32_t oui;
    uint8_t rmpp_version;
};

struct port {
    int fd;                    /* -1: free */
    int agents;                /* next agent id */
    pthread_mutex_t rlock, wlock;
};

/* MOCK_IB=full with a socket named: 1 (the mock answers), else 0 (pass through). */
int mib_on(void);
/* The real libibumad function, or NULL when the process has none. */
void *mib_real(const char *name);
/* Return what the real ``name`` returns for these arguments (-ENOSYS without one). */
#define PASS(name, ...)                                                \
    do {                                                               \
        __typeof__(name) *fn = (__typeof__(name) *)mib_real(#name);    \
        if (!fn) { errno = ENOSYS; return -ENOSYS; }                   \
        return fn(__VA_ARGS__);                                        \
    } while (0)

/* sizeof(struct ib_user_mad) in this process (56 or 64: see transport.c). */
size_t mib_umad_hdr(void);

/* The open port whose socket is fd, or NULL; claim a free slot for fd (NULL when
 * MAX_PORTS are open); release fd's slot (returns whether it was open). */
struct port *mib_port_of(int fd);
struct port *mib_port_claim(int fd);
int mib_port_release(int fd);

/* A connection to mock-ib (-1 and errno: ENAMETOOLONG for a path sun_path cannot hold). */
int mib_dial(void);
int mib_send_frame(int fd, uint8_t type, const void *a, size_t alen, const void *b, size_t blen);
long mib_recv_frame(int fd, uint8_t *type, void *buf, size_t cap);
long mib_query(uint8_t qtype, const char *name, int portnum, uint8_t atype, uint8_t *out, size_t cap);
/* 0 when fd is readable within timeout_ms (-1: forever), else -ETIMEDOUT or -errno. */
int mib_wait_readable(int fd, int timeout_ms);

static inline void put_name(uint8_t *dst, const char *name)
{
    memset(dst, 0, NAME_LEN);
    if (name)
        strncpy((char *)dst, name, NAME_LEN - 1);
}

static inline void put32(uint8_t *dst, uint32_t v)
{
    v = htonl(v);
    memcpy(dst, &v, 4);
}

static inline uint32_t get32(const uint8_t *src)
{
    uint32_t v;
    memcpy(&v, src, 4);
    return ntohl(v);
}

static inline uint64_t get64(const uint8_t *src)
{
    return ((uint64_t)get32(src) << 32) | get32(src + 4);
}

static inline uint64_t be64(uint64_t v)
{
    return ((uint64_t)htonl((uint32_t)v) << 32) | htonl((uint32_t)(v >> 32));
}

/* A query that found no mock-ib at all (no socket, nobody listening): the CA and
 * port queries then fall back to the real libibumad, which reads the sysfs tree
 * libibmocksys redirects into MOCK_IB_ROOT, so ibstat keeps working without the
 * daemon. umad_open_port never falls back: a port needs mock-ib. */
static inline int mib_absent(int rc)
{
    return rc == -ENOENT || rc == -ECONNREFUSED;
}

#endif
