/* libibmockumad's transport: when the mock answers (MOCK_IB, MOCK_IB_PING_SOCKET),
 * the table of open ports, and the frames on mock-ib's socket (mokka/ib/wire.py). */
#include "umad.h"

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

int mib_on(void)
{
    pthread_once(&once, decide);
    return active;
}

void *mib_real(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

/* The size of struct ib_user_mad in this process. libibumad picks its layout
 * when the real umad_open_port finds the kernel's ABI; it never runs here, so
 * its helpers (umad_size, umad_get_mad, umad_set_addr) keep the old one:
 * 56 bytes, an address without pkey_index. Follow whatever umad_size says. */
size_t mib_umad_hdr(void)
{
    size_t (*size)(void) = (size_t (*)(void))mib_real("umad_size");
    size_t n = size ? size() : UMAD_HDR_NEW;
    return n >= 20 && n <= UMAD_HDR_NEW ? n : UMAD_HDR_NEW;
}

/* ---------------------------------------------------------------- ports */

static struct port ports[MAX_PORTS] = {
    [0 ... MAX_PORTS - 1] = {-1, 0, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER}};
static pthread_mutex_t ports_lock = PTHREAD_MUTEX_INITIALIZER;

struct port *mib_port_of(int fd)
{
    if (fd < 0)
        return NULL;
    for (int i = 0; i < MAX_PORTS; i++)
        if (__atomic_load_n(&ports[i].fd, __ATOMIC_ACQUIRE) == fd)
            return &ports[i];
    return NULL;
}

struct port *mib_port_claim(int fd)
{
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
    return slot;
}

int mib_port_release(int fd)
{
    pthread_mutex_lock(&ports_lock);
    struct port *p = mib_port_of(fd);
    if (p)
        __atomic_store_n(&p->fd, -1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&ports_lock);
    return p != NULL;
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

int mib_send_frame(int fd, uint8_t type, const void *a, size_t alen, const void *b, size_t blen)
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
long mib_recv_frame(int fd, uint8_t *type, void *buf, size_t cap)
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

int mib_dial(void)
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

/* A one-shot query: request type qtype for (name, port), answer of type atype. */
long mib_query(uint8_t qtype, const char *name, int portnum, uint8_t atype, uint8_t *out, size_t cap)
{
    uint8_t req[NAME_LEN + 4];
    put_name(req, name);
    put32(req + NAME_LEN, (uint32_t)portnum);
    int fd = mib_dial();
    if (fd < 0)
        return -1;
    uint8_t type = 0;
    long n = -1;
    if (mib_send_frame(fd, qtype, req, qtype == MOKKA_IB_WIRE_QUERY_CAS ? 0 : sizeof req, NULL, 0) == 0)
        n = mib_recv_frame(fd, &type, out, cap);
    int e = errno;
    close(fd);
    if (n >= 0 && type != atype) {
        errno = EPROTO;
        return -1;
    }
    errno = e;
    return n;
}

int mib_wait_readable(int fd, int timeout_ms)
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
