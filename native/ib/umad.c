/* libibmockumad: libibumad's port and MAD calls, answered by mock-ib.
 *
 * Preloaded before libibumad. With MOCK_IB=full and MOCK_IB_PING_SOCKET set,
 * umad_open_port connects to mock-ib's socket (one connection per port: the
 * port id IS the socket, so poll() on umad_get_fd works), umad_register/send
 * write frames, umad_recv reads them; umad_get_port/umad_get_ca ask on a short
 * connection of their own. With MOCK_IB unset, off or sysfs, or no socket
 * named, every call goes to the real libibumad (dlsym RTLD_NEXT) untouched.
 *
 * The frames (mokka/ib/wire.py, types from mokka_names.h): a 4-byte big-endian
 * length of what follows, a 1-byte type, the payload. Thread-safe: one write
 * lock and one read lock per port, so a thread blocked in umad_recv never
 * stalls another's umad_send. Allocates only where libibumad's API does
 * (umad_get_port's pkeys, umad_get_ca's ports).
 */
#define _GNU_SOURCE
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

/* ---------------------------------------------------------------- activation */

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int active;             /* MOCK_IB=full and a socket named */
static int path_too_long;      /* ... but one sun_path cannot hold: every call fails */
static char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];

static void decide(void)
{
    const char *tier = getenv(MOKKA_ENV_IB);
    const char *path = getenv(MOKKA_ENV_IB_PING_SOCKET);
    if (!tier || strcmp(tier, MOKKA_IB_FULL) != 0 || !path || !*path)
        return;
    active = 1;
    if (strlen(path) >= sizeof sock_path)
        path_too_long = 1;     /* never fall through to the host's real umad */
    else
        memcpy(sock_path, path, strlen(path) + 1);
}

static int on(void)
{
    pthread_once(&once, decide);
    return active;
}

/* The real libibumad function, or NULL when the process has none. */
static void *real(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

/* Return what the real ``name`` returns for these arguments (-ENOSYS without one). */
#define PASS(name, ...)                                                \
    do {                                                               \
        __typeof__(name) *fn = (__typeof__(name) *)real(#name);        \
        if (!fn) { errno = ENOSYS; return -ENOSYS; }                   \
        return fn(__VA_ARGS__);                                        \
    } while (0)

/* The size of struct ib_user_mad in this process. libibumad picks its layout
 * when the real umad_open_port finds the kernel's ABI; it never runs here, so
 * its helpers (umad_size, umad_get_mad, umad_set_addr) keep the old one:
 * 56 bytes, an address without pkey_index. Follow whatever umad_size says. */
static size_t umad_hdr(void)
{
    size_t (*size)(void) = (size_t (*)(void))real("umad_size");
    size_t n = size ? size() : UMAD_HDR_NEW;
    return n >= 20 && n <= UMAD_HDR_NEW ? n : UMAD_HDR_NEW;
}

/* ---------------------------------------------------------------- ports */

struct port {
    int fd;                    /* -1: free */
    int agents;                /* next agent id */
    pthread_mutex_t rlock, wlock;
};

static struct port ports[MAX_PORTS] = {
    [0 ... MAX_PORTS - 1] = {-1, 0, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER}};
static pthread_mutex_t ports_lock = PTHREAD_MUTEX_INITIALIZER;

static struct port *port_of(int fd)
{
    if (fd < 0)
        return NULL;
    for (int i = 0; i < MAX_PORTS; i++)
        if (__atomic_load_n(&ports[i].fd, __ATOMIC_ACQUIRE) == fd)
            return &ports[i];
    return NULL;
}

/* ---------------------------------------------------------------- I/O */

static int read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len) {
        ssize_t n = recv(fd, p, len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0)
            errno = ECONNRESET;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int send_frame(int fd, uint8_t type, const void *a, size_t alen, const void *b, size_t blen)
{
    uint8_t head[5];
    uint32_t len = htonl((uint32_t)(1 + alen + blen));
    memcpy(head, &len, 4);
    head[4] = type;
    struct iovec iov[3] = {{head, 5}, {(void *)a, alen}, {(void *)b, blen}};
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 3};
    size_t total = 5 + alen + blen, done = 0;
    while (done < total) {
        ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        done += (size_t)n;
        if (done < total) {    /* short write: finish the rest byte-exact */
            size_t skip = (size_t)n;
            for (int i = 0; i < 3; i++) {
                size_t take = skip < iov[i].iov_len ? skip : iov[i].iov_len;
                iov[i].iov_base = (char *)iov[i].iov_base + take;
                iov[i].iov_len -= take;
                skip -= take;
            }
        }
    }
    return 0;
}

/* One frame into buf (at most cap bytes of payload; the rest is discarded).
 * Returns the payload length kept, or -1; *type gets the frame type. */
static long recv_frame(int fd, uint8_t *type, void *buf, size_t cap)
{
    uint8_t head[5];
    if (read_all(fd, head, 5) < 0)
        return -1;
    uint32_t len;
    memcpy(&len, head, 4);
    len = ntohl(len);
    if (len < 1 || len > MOKKA_IB_WIRE_MAX_FRAME) {
        errno = EPROTO;
        return -1;
    }
    *type = head[4];
    size_t body = len - 1, keep = body < cap ? body : cap;
    if (read_all(fd, buf, keep) < 0)
        return -1;
    for (size_t rest = body - keep; rest;) {
        char sink[256];
        size_t n = rest < sizeof sink ? rest : sizeof sink;
        if (read_all(fd, sink, n) < 0)
            return -1;
        rest -= n;
    }
    return (long)keep;
}

static int dial(void)
{
    if (path_too_long) {
        errno = ENAMETOOLONG;
        return -1;
    }
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

static void put_name(uint8_t *dst, const char *name)
{
    memset(dst, 0, NAME_LEN);
    if (name)
        strncpy((char *)dst, name, NAME_LEN - 1);
}

static void put32(uint8_t *dst, uint32_t v)
{
    v = htonl(v);
    memcpy(dst, &v, 4);
}

static uint32_t get32(const uint8_t *src)
{
    uint32_t v;
    memcpy(&v, src, 4);
    return ntohl(v);
}

static uint64_t get64(const uint8_t *src)
{
    return ((uint64_t)get32(src) << 32) | get32(src + 4);
}

static uint64_t be64(uint64_t v)
{
    return ((uint64_t)htonl((uint32_t)v) << 32) | htonl((uint32_t)(v >> 32));
}

/* A one-shot query: request type qtype for (name, port), answer of type atype. */
static long query(uint8_t qtype, const char *name, int portnum, uint8_t atype, uint8_t *out, size_t cap)
{
    uint8_t req[NAME_LEN + 4];
    put_name(req, name);
    put32(req + NAME_LEN, (uint32_t)portnum);
    int fd = dial();
    if (fd < 0)
        return -1;
    uint8_t type = 0;
    long n = -1;
    if (send_frame(fd, qtype, req, qtype == MOKKA_IB_WIRE_QUERY_CAS ? 0 : sizeof req, NULL, 0) == 0)
        n = recv_frame(fd, &type, out, cap);
    int e = errno;
    close(fd);
    if (n >= 0 && type != atype) {
        errno = EPROTO;
        return -1;
    }
    errno = e;
    return n;
}

/* A query that found no mock-ib at all (no socket, nobody listening): the CA and
 * port queries then fall back to the real libibumad, which reads the sysfs tree
 * libibmocksys redirects into MOCK_IB_ROOT, so ibstat keeps working without the
 * daemon. umad_open_port never falls back: a port needs mock-ib. */
static int absent(int rc)
{
    return rc == -ENOENT || rc == -ECONNREFUSED;
}

/* ---------------------------------------------------------------- the API */

EXPORT int umad_init(void)
{
    if (!on())
        PASS(umad_init);
    return 0;
}

EXPORT int umad_done(void)
{
    if (!on())
        PASS(umad_done);
    return 0;
}

EXPORT int umad_open_port(const char *ca_name, int portnum)
{
    if (!on())
        PASS(umad_open_port, ca_name, portnum);
    uint8_t req[NAME_LEN + 4], ans[4 + NAME_LEN + 4];
    put_name(req, ca_name);
    put32(req + NAME_LEN, (uint32_t)(portnum < 0 ? 0 : portnum));
    int fd = dial();
    if (fd < 0)
        return -errno;
    uint8_t type = 0;
    if (send_frame(fd, MOKKA_IB_WIRE_OPEN, req, sizeof req, NULL, 0) < 0 ||
        recv_frame(fd, &type, ans, sizeof ans) < (long)sizeof ans || type != MOKKA_IB_WIRE_OPENED) {
        int e = errno ? errno : EPROTO;
        close(fd);
        return -e;
    }
    int status = (int)get32(ans);
    if (status < 0) {
        close(fd);
        return status;
    }
    pthread_mutex_lock(&ports_lock);
    struct port *slot = NULL;
    for (int i = 0; i < MAX_PORTS && !slot; i++)
        if (ports[i].fd < 0)
            slot = &ports[i];
    if (slot) {
        slot->agents = 0;
        __atomic_store_n(&slot->fd, fd, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&ports_lock);
    if (!slot) {
        close(fd);
        return -EMFILE;
    }
    return fd;
}

EXPORT int umad_close_port(int portid)
{
    if (!on())
        PASS(umad_close_port, portid);
    pthread_mutex_lock(&ports_lock);
    struct port *p = port_of(portid);
    if (p)
        __atomic_store_n(&p->fd, -1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&ports_lock);
    if (!p)
        return -EINVAL;
    close(portid);
    return 0;
}

EXPORT int umad_get_fd(int portid)
{
    if (!on())
        PASS(umad_get_fd, portid);
    return port_of(portid) ? portid : -EINVAL;
}

static int do_register(int portid, int mgmt_class, int version, int rmpp, uint32_t oui, const uint8_t *mask)
{
    struct port *p = port_of(portid);
    if (!p || mgmt_class < 0 || mgmt_class > 0xff)
        return -EINVAL;
    pthread_mutex_lock(&p->wlock);
    int id = p->agents < MAX_AGENTS ? p->agents++ : -1;
    uint8_t req[4 + 4 + 4 + MASK_SIZE] = {0};
    put32(req, (uint32_t)id);
    req[4] = (uint8_t)mgmt_class;
    req[5] = (uint8_t)version;
    req[6] = (uint8_t)rmpp;
    put32(req + 8, oui);
    if (mask)
        memcpy(req + 12, mask, MASK_SIZE);
    int rc = id < 0 ? -EBUSY : send_frame(portid, MOKKA_IB_WIRE_REGISTER, req, sizeof req, NULL, 0);
    pthread_mutex_unlock(&p->wlock);
    return rc < 0 ? (id < 0 ? -EBUSY : -EIO) : id;
}

EXPORT int umad_register(int portid, int mgmt_class, int mgmt_version, uint8_t rmpp_version,
                         long method_mask[])
{
    if (!on())
        PASS(umad_register, portid, mgmt_class, mgmt_version, rmpp_version, method_mask);
    return do_register(portid, mgmt_class, mgmt_version, rmpp_version, 0, (const uint8_t *)method_mask);
}

EXPORT int umad_register_oui(int portid, int mgmt_class, uint8_t rmpp_version, uint8_t oui[3],
                             long method_mask[])
{
    if (!on())
        PASS(umad_register_oui, portid, mgmt_class, rmpp_version, oui, method_mask);
    uint32_t o = oui ? ((uint32_t)oui[0] << 16 | (uint32_t)oui[1] << 8 | oui[2]) : 0;
    return do_register(portid, mgmt_class, 1, rmpp_version, o, (const uint8_t *)method_mask);
}

EXPORT int umad_register2(int port_fd, struct umad_reg_attr *attr, uint32_t *agent_id)
{
    if (!on())
        PASS(umad_register2, port_fd, attr, agent_id);
    if (!attr || !agent_id)
        return EINVAL;
    int id = do_register(port_fd, attr->mgmt_class, attr->mgmt_class_version, attr->rmpp_version,
                         attr->oui, (const uint8_t *)attr->method_mask);
    if (id < 0)
        return -id;            /* umad_register2 returns a positive errno */
    *agent_id = (uint32_t)id;
    return 0;
}

EXPORT int umad_unregister(int portid, int agentid)
{
    if (!on())
        PASS(umad_unregister, portid, agentid);
    struct port *p = port_of(portid);
    if (!p)
        return -EINVAL;
    uint8_t req[4];
    put32(req, (uint32_t)agentid);
    pthread_mutex_lock(&p->wlock);
    int rc = send_frame(portid, MOKKA_IB_WIRE_UNREGISTER, req, sizeof req, NULL, 0);
    pthread_mutex_unlock(&p->wlock);
    return rc < 0 ? -EIO : 0;
}

EXPORT int umad_send(int portid, int agentid, void *umad, int length, int timeout_ms, int retries)
{
    if (!on())
        PASS(umad_send, portid, agentid, umad, length, timeout_ms, retries);
    struct port *p = port_of(portid);
    if (!p || !umad || length < 0 || length > MOKKA_IB_WIRE_MAX_FRAME - 1 - 12 - ADDR_SIZE) {
        errno = EINVAL;
        return -EINVAL;
    }
    size_t hdr = umad_hdr();
    uint8_t head[12 + ADDR_SIZE] = {0};
    put32(head, (uint32_t)agentid);
    put32(head + 4, (uint32_t)timeout_ms);
    put32(head + 8, (uint32_t)retries);
    memcpy(head + 12, (uint8_t *)umad + 20, hdr - 20);    /* struct ib_user_mad.addr */
    pthread_mutex_lock(&p->wlock);
    int rc = send_frame(portid, MOKKA_IB_WIRE_SEND, head, sizeof head, (uint8_t *)umad + hdr,
                        (size_t)length);
    pthread_mutex_unlock(&p->wlock);
    if (rc < 0) {
        errno = EIO;
        return -EIO;
    }
    return 0;
}

static int wait_readable(int fd, int timeout_ms)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    for (;;) {
        int n = poll(&pfd, 1, timeout_ms);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0) {
            errno = ETIMEDOUT;
            return -ETIMEDOUT;
        }
        return 0;
    }
}

EXPORT int umad_poll(int portid, int timeout_ms)
{
    if (!on())
        PASS(umad_poll, portid, timeout_ms);
    return port_of(portid) ? wait_readable(portid, timeout_ms) : -EINVAL;
}

EXPORT int umad_recv(int portid, void *umad, int *length, int timeout_ms)
{
    if (!on())
        PASS(umad_recv, portid, umad, length, timeout_ms);
    struct port *p = port_of(portid);
    if (!p || !umad || !length || *length < 0) {
        errno = EINVAL;
        return -EINVAL;
    }
    pthread_mutex_lock(&p->rlock);
    int rc = wait_readable(portid, timeout_ms);
    if (rc < 0) {
        pthread_mutex_unlock(&p->rlock);
        if (rc == -ETIMEDOUT && timeout_ms == 0) {
            errno = EWOULDBLOCK;
            return -EWOULDBLOCK;
        }
        return rc;
    }
    uint8_t frame[MOKKA_IB_WIRE_MAX_FRAME];
    uint8_t type = 0;
    long n = recv_frame(portid, &type, frame, sizeof frame);
    pthread_mutex_unlock(&p->rlock);
    if (n < 0 || type != MOKKA_IB_WIRE_RECV || n < 8 + ADDR_SIZE) {
        errno = n < 0 ? (errno ? errno : EIO) : EPROTO;
        return -errno;
    }
    size_t mad_len = (size_t)n - 8 - ADDR_SIZE, room = (size_t)*length;
    size_t keep = mad_len < room ? mad_len : room;
    uint8_t *u = umad;
    uint32_t agent = get32(frame), status = get32(frame + 4);
    memcpy(u, &agent, 4);                        /* host order, as the kernel writes them */
    memcpy(u + 4, &status, 4);
    memset(u + 8, 0, 8);                         /* timeout_ms, retries */
    size_t hdr = umad_hdr();
    uint32_t total = (uint32_t)(hdr + mad_len);
    memcpy(u + 16, &total, 4);
    memcpy(u + 20, frame + 8, hdr - 20);
    memcpy(u + hdr, frame + 8 + ADDR_SIZE, keep);
    *length = (int)keep;
    return (int)agent;
}

/* ---------------------------------------------------------------- CA and port queries */

static int fill_port(const char *ca_name, int portnum, mock_umad_port *port)
{
    uint8_t ans[4 + NAME_LEN + 4 * 9 + 16 + NAME_LEN];
    long n = query(MOKKA_IB_WIRE_QUERY_PORT, ca_name, portnum, MOKKA_IB_WIRE_PORT, ans, sizeof ans);
    if (n < 4)
        return -(errno ? errno : EIO);
    int status = (int)get32(ans);
    if (status < 0)
        return status;
    if (n < (long)sizeof ans)
        return -EPROTO;
    const uint8_t *q = ans + 4;
    memset(port, 0, sizeof *port);
    memcpy(port->ca_name, q, NAME_LEN);
    port->ca_name[NAME_LEN - 1] = 0;
    q += NAME_LEN;
    port->portnum = (int)get32(q);
    port->base_lid = get32(q + 4);
    port->lmc = get32(q + 8);
    port->sm_lid = get32(q + 12);
    port->sm_sl = get32(q + 16);
    port->state = get32(q + 20);
    port->phys_state = get32(q + 24);
    port->rate = get32(q + 28);
    port->capmask = htonl(get32(q + 32));
    port->gid_prefix = be64(get64(q + 36));
    port->port_guid = be64(get64(q + 44));
    memcpy(port->link_layer, q + 52, NAME_LEN);
    port->link_layer[NAME_LEN - 1] = 0;
    port->pkeys = calloc(1, sizeof *port->pkeys);
    if (!port->pkeys)
        return -ENOMEM;
    port->pkeys[0] = 0xffff;
    port->pkeys_size = 1;
    return 0;
}

EXPORT int umad_get_port(const char *ca_name, int portnum, mock_umad_port *port)
{
    if (!on())
        PASS(umad_get_port, ca_name, portnum, port);
    if (!port)
        return -EINVAL;
    int rc = fill_port(ca_name, portnum, port);
    if (absent(rc))
        PASS(umad_get_port, ca_name, portnum, port);
    return rc;
}

EXPORT int umad_release_port(mock_umad_port *port)
{
    if (!on())
        PASS(umad_release_port, port);
    if (!port)
        return -EINVAL;
    free(port->pkeys);
    port->pkeys = NULL;
    port->pkeys_size = 0;
    return 0;
}

EXPORT int umad_get_ca(const char *ca_name, mock_umad_ca *ca)
{
    if (!on())
        PASS(umad_get_ca, ca_name, ca);
    if (!ca)
        return -EINVAL;
    uint8_t ans[4 + NAME_LEN + 8 + 20 + 40 + 20 + 16];
    long n = query(MOKKA_IB_WIRE_QUERY_CA, ca_name, 0, MOKKA_IB_WIRE_CA, ans, sizeof ans);
    if (n < 4 && absent(-errno))
        PASS(umad_get_ca, ca_name, ca);
    if (n < 4)
        return -(errno ? errno : EIO);
    int status = (int)get32(ans);
    if (status < 0)
        return status;
    if (n < (long)sizeof ans)
        return -EPROTO;
    const uint8_t *q = ans + 4;
    memset(ca, 0, sizeof *ca);
    memcpy(ca->ca_name, q, NAME_LEN);
    ca->ca_name[NAME_LEN - 1] = 0;
    q += NAME_LEN;
    ca->node_type = get32(q);
    ca->numports = (int)get32(q + 4);
    memcpy(ca->fw_ver, q + 8, 20);
    ca->fw_ver[19] = 0;
    memcpy(ca->ca_type, q + 28, 40);
    ca->ca_type[39] = 0;
    memcpy(ca->hw_ver, q + 68, 20);
    ca->hw_ver[19] = 0;
    ca->node_guid = be64(get64(q + 88));
    ca->system_guid = be64(get64(q + 96));
    if (ca->numports > CA_MAX_PORTS - 1)
        ca->numports = CA_MAX_PORTS - 1;
    for (int i = 1; i <= ca->numports; i++) {
        mock_umad_port *port = calloc(1, sizeof *port);
        int rc = port ? fill_port(ca->ca_name, i, port) : -ENOMEM;
        if (rc < 0) {
            free(port);
            for (int j = 1; j < i; j++) {
                free(ca->ports[j]->pkeys);
                free(ca->ports[j]);
                ca->ports[j] = NULL;
            }
            return rc;
        }
        ca->ports[i] = port;
    }
    return 0;
}

EXPORT int umad_release_ca(mock_umad_ca *ca)
{
    if (!on())
        PASS(umad_release_ca, ca);
    if (!ca)
        return -EINVAL;
    for (int i = 0; i < CA_MAX_PORTS; i++) {
        if (ca->ports[i]) {
            free(ca->ports[i]->pkeys);
            free(ca->ports[i]);
            ca->ports[i] = NULL;
        }
    }
    return 0;
}

EXPORT int umad_get_cas_names(char cas[][NAME_LEN], int max)
{
    if (!on())
        PASS(umad_get_cas_names, cas, max);
    uint8_t ans[4 + NAME_LEN * 64];
    long n = query(MOKKA_IB_WIRE_QUERY_CAS, NULL, 0, MOKKA_IB_WIRE_CAS, ans, sizeof ans);
    if (n < 4 && absent(-errno))
        PASS(umad_get_cas_names, cas, max);
    if (n < 4)
        return -(errno ? errno : EIO);
    int count = (int)get32(ans), have = (int)((n - 4) / NAME_LEN);
    if (count > have)
        count = have;
    if (count > max)
        count = max;
    for (int i = 0; i < count; i++) {
        memcpy(cas[i], ans + 4 + i * NAME_LEN, NAME_LEN);
        cas[i][NAME_LEN - 1] = 0;
    }
    return count;
}

EXPORT int umad_get_ca_portguids(const char *ca_name, uint64_t *portguids, int max)
{
    if (!on())
        PASS(umad_get_ca_portguids, ca_name, portguids, max);
    mock_umad_port port;
    int rc = fill_port(ca_name, 1, &port);
    if (absent(rc))
        PASS(umad_get_ca_portguids, ca_name, portguids, max);
    if (rc < 0)
        return rc;
    free(port.pkeys);
    if (max < 2)
        return -ENOMEM;
    portguids[0] = 0;
    portguids[1] = port.port_guid;
    return 2;
}
