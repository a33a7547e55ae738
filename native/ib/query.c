/* libibmockumad: libibumad's CA and port queries, asked of mock-ib on a short
 * connection each (a port's pkeys and a CA's ports are allocated as libibumad
 * does, so either library's release frees them). */
#include "umad.h"

/* ---------------------------------------------------------------- CA and port queries */

/* An answer of `size` bytes from mib_query (it returned `n`): 0, or the negative
 * errno: the call's, the status mock-ib put first, or EPROTO when it is short. */
static int check_answer(long n, const uint8_t *ans, size_t size)
{
    if (n < 4)
        return -(errno ? errno : EIO);
    int status = (int)get32(ans);
    if (status < 0)
        return status;
    return n < (long)size ? -EPROTO : 0;
}

/* A fixed-width, NUL-padded text field of the answer, always terminated. */
static void copy_text(char *dst, const uint8_t *src, size_t width)
{
    memcpy(dst, src, width);
    dst[width - 1] = 0;
}

static int fill_port(const char *ca_name, int portnum, mock_umad_port *port)
{
    uint8_t ans[4 + NAME_LEN + 4 * 9 + 16 + NAME_LEN];
    long n = mib_query(MOKKA_IB_WIRE_QUERY_PORT, ca_name, portnum, MOKKA_IB_WIRE_PORT, ans, sizeof ans);
    int rc = check_answer(n, ans, sizeof ans);
    if (rc < 0)
        return rc;
    const uint8_t *q = ans + 4;
    memset(port, 0, sizeof *port);
    copy_text(port->ca_name, q, NAME_LEN);
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
    copy_text(port->link_layer, q + 52, NAME_LEN);
    port->pkeys = calloc(1, sizeof *port->pkeys);
    if (!port->pkeys)
        return -ENOMEM;
    port->pkeys[0] = 0xffff;
    port->pkeys_size = 1;
    return 0;
}

EXPORT int umad_get_port(const char *ca_name, int portnum, mock_umad_port *port)
{
    if (!mib_on())
        PASS(umad_get_port, ca_name, portnum, port);
    if (!port)
        return -EINVAL;
    int rc = fill_port(ca_name, portnum, port);
    if (mib_absent(rc))
        PASS(umad_get_port, ca_name, portnum, port);
    return rc;
}

EXPORT int umad_release_port(mock_umad_port *port)
{
    if (!mib_on())
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
    if (!mib_on())
        PASS(umad_get_ca, ca_name, ca);
    if (!ca)
        return -EINVAL;
    uint8_t ans[4 + NAME_LEN + 8 + 20 + 40 + 20 + 16];
    long n = mib_query(MOKKA_IB_WIRE_QUERY_CA, ca_name, 0, MOKKA_IB_WIRE_CA, ans, sizeof ans);
    if (n < 4 && mib_absent(-errno))
        PASS(umad_get_ca, ca_name, ca);
    int checked = check_answer(n, ans, sizeof ans);
    if (checked < 0)
        return checked;
    const uint8_t *q = ans + 4;
    memset(ca, 0, sizeof *ca);
    copy_text(ca->ca_name, q, NAME_LEN);
    q += NAME_LEN;
    ca->node_type = get32(q);
    ca->numports = (int)get32(q + 4);
    copy_text(ca->fw_ver, q + 8, 20);
    copy_text(ca->ca_type, q + 28, 40);
    copy_text(ca->hw_ver, q + 68, 20);
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
    if (!mib_on())
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
    if (!mib_on())
        PASS(umad_get_cas_names, cas, max);
    uint8_t ans[4 + NAME_LEN * 64];
    long n = mib_query(MOKKA_IB_WIRE_QUERY_CAS, NULL, 0, MOKKA_IB_WIRE_CAS, ans, sizeof ans);
    if (n < 4 && mib_absent(-errno))
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
    if (!mib_on())
        PASS(umad_get_ca_portguids, ca_name, portguids, max);
    mock_umad_port port;
    int rc = fill_port(ca_name, 1, &port);
    if (mib_absent(rc))
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
