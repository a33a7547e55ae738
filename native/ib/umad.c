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
#include "umad.h"

/* ---------------------------------------------------------------- the API */

EXPORT int umad_init(void)
{
    if (!mib_on())
        PASS(umad_init);
    return 0;
}

EXPORT int umad_done(void)
{
    if (!mib_on())
        PASS(umad_done);
    return 0;
}

EXPORT int umad_open_port(const char *ca_name, int portnum)
{
    if (!mib_on())
        PASS(umad_open_port, ca_name, portnum);
    uint8_t req[NAME_LEN + 4], ans[4 + NAME_LEN + 4];
    put_name(req, ca_name);
    put32(req + NAME_LEN, (uint32_t)(portnum < 0 ? 0 : portnum));
    int fd = mib_dial();
    if (fd < 0)
        return -errno;
    uint8_t type = 0;
    if (mib_send_frame(fd, MOKKA_IB_WIRE_OPEN, req, sizeof req, NULL, 0) < 0 ||
        mib_recv_frame(fd, &type, ans, sizeof ans) < (long)sizeof ans || type != MOKKA_IB_WIRE_OPENED) {
        int e = errno ? errno : EPROTO;
        close(fd);
        return -e;
    }
    int status = (int)get32(ans);
    if (status < 0) {
        close(fd);
        return status;
    }
    if (!mib_port_claim(fd)) {
        close(fd);
        return -EMFILE;
    }
    return fd;
}

EXPORT int umad_close_port(int portid)
{
    if (!mib_on())
        PASS(umad_close_port, portid);
    if (!mib_port_release(portid))
        return -EINVAL;
    close(portid);
    return 0;
}

EXPORT int umad_get_fd(int portid)
{
    if (!mib_on())
        PASS(umad_get_fd, portid);
    return mib_port_of(portid) ? portid : -EINVAL;
}

static int do_register(int portid, int mgmt_class, int version, int rmpp, uint32_t oui, const uint8_t *mask)
{
    struct port *p = mib_port_of(portid);
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
    int rc = id < 0 ? -EBUSY : mib_send_frame(portid, MOKKA_IB_WIRE_REGISTER, req, sizeof req, NULL, 0);
    pthread_mutex_unlock(&p->wlock);
    return rc < 0 ? (id < 0 ? -EBUSY : -EIO) : id;
}

EXPORT int umad_register(int portid, int mgmt_class, int mgmt_version, uint8_t rmpp_version,
                         long method_mask[])
{
    if (!mib_on())
        PASS(umad_register, portid, mgmt_class, mgmt_version, rmpp_version, method_mask);
    return do_register(portid, mgmt_class, mgmt_version, rmpp_version, 0, (const uint8_t *)method_mask);
}

EXPORT int umad_register_oui(int portid, int mgmt_class, uint8_t rmpp_version, uint8_t oui[3],
                             long method_mask[])
{
    if (!mib_on())
        PASS(umad_register_oui, portid, mgmt_class, rmpp_version, oui, method_mask);
    uint32_t o = oui ? ((uint32_t)oui[0] << 16 | (uint32_t)oui[1] << 8 | oui[2]) : 0;
    return do_register(portid, mgmt_class, 1, rmpp_version, o, (const uint8_t *)method_mask);
}

EXPORT int umad_register2(int port_fd, struct umad_reg_attr *attr, uint32_t *agent_id)
{
    if (!mib_on())
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
    if (!mib_on())
        PASS(umad_unregister, portid, agentid);
    struct port *p = mib_port_of(portid);
    if (!p)
        return -EINVAL;
    uint8_t req[4];
    put32(req, (uint32_t)agentid);
    pthread_mutex_lock(&p->wlock);
    int rc = mib_send_frame(portid, MOKKA_IB_WIRE_UNREGISTER, req, sizeof req, NULL, 0);
    pthread_mutex_unlock(&p->wlock);
    return rc < 0 ? -EIO : 0;
}

EXPORT int umad_send(int portid, int agentid, void *umad, int length, int timeout_ms, int retries)
{
    if (!mib_on())
        PASS(umad_send, portid, agentid, umad, length, timeout_ms, retries);
    struct port *p = mib_port_of(portid);
    if (!p || !umad || length < 0 || length > MOKKA_IB_WIRE_MAX_FRAME - 1 - 12 - ADDR_SIZE) {
        errno = EINVAL;
        return -EINVAL;
    }
    size_t hdr = mib_umad_hdr();
    uint8_t head[12 + ADDR_SIZE] = {0};
    put32(head, (uint32_t)agentid);
    put32(head + 4, (uint32_t)timeout_ms);
    put32(head + 8, (uint32_t)retries);
    memcpy(head + 12, (uint8_t *)umad + 20, hdr - 20);    /* struct ib_user_mad.addr */
    pthread_mutex_lock(&p->wlock);
    int rc = mib_send_frame(portid, MOKKA_IB_WIRE_SEND, head, sizeof head, (uint8_t *)umad + hdr,
                        (size_t)length);
    pthread_mutex_unlock(&p->wlock);
    if (rc < 0) {
        errno = EIO;
        return -EIO;
    }
    return 0;
}

EXPORT int umad_poll(int portid, int timeout_ms)
{
    if (!mib_on())
        PASS(umad_poll, portid, timeout_ms);
    return mib_port_of(portid) ? mib_wait_readable(portid, timeout_ms) : -EINVAL;
}

EXPORT int umad_recv(int portid, void *umad, int *length, int timeout_ms)
{
    if (!mib_on())
        PASS(umad_recv, portid, umad, length, timeout_ms);
    struct port *p = mib_port_of(portid);
    if (!p || !umad || !length || *length < 0) {
        errno = EINVAL;
        return -EINVAL;
    }
    /* Wait without the read lock, so one thread blocked forever never holds up
     * another's timeout; then take the lock and make sure the frame is still
     * there (another reader may have taken it) before reading it. */
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        int left = timeout_ms;
        if (timeout_ms > 0) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            long spent = (now.tv_sec - start.tv_sec) * 1000L + (now.tv_nsec - start.tv_nsec) / 1000000L;
            left = spent >= timeout_ms ? 0 : timeout_ms - (int)spent;
        }
        int rc = mib_wait_readable(portid, left);
        if (rc < 0) {
            if (rc == -ETIMEDOUT && timeout_ms == 0) {
                errno = EWOULDBLOCK;
                return -EWOULDBLOCK;
            }
            return rc;
        }
        pthread_mutex_lock(&p->rlock);
        if (mib_wait_readable(portid, 0) == 0)
            break;
        pthread_mutex_unlock(&p->rlock);
    }
    uint8_t frame[MOKKA_IB_WIRE_MAX_FRAME];
    uint8_t type = 0;
    long n = mib_recv_frame(portid, &type, frame, sizeof frame);
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
    size_t hdr = mib_umad_hdr();
    uint32_t total = (uint32_t)(hdr + mad_len);
    memcpy(u + 16, &total, 4);
    memcpy(u + 20, frame + 8, hdr - 20);
    memcpy(u + hdr, frame + 8 + ADDR_SIZE, keep);
    *length = (int)keep;
    return (int)agent;
}
