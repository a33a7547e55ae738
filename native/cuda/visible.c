/* CUDA_DEVICE_ORDER and CUDA_VISIBLE_DEVICES, which the driver applies (cudart
 * reads neither), over the GPUs NVML lets this process see.
 *
 * Order: FASTEST_FIRST (the default, also for an unknown value) puts the
 * fastest first by a simple guess (compute capability, then multiprocessors
 * times clock) and leaves the rest as they were, which CUDA leaves unspecified:
 * here NVML's order, so on a node of one board CUDA's ordinals are nvidia-smi's
 * indices, as on a real node where both follow the PCI bus; PCI_BUS_ID is PCI
 * bus order.
 *
 * Visibility, as NVIDIA's programming guide gives it: unset keeps every
 * device; set, it is a comma list read in order, and the list stops at the
 * first entry that names no device: a decimal index into the order above
 * (`0,2,-1,1` keeps 0 and 2), or `GPU-` and a prefix of exactly one device's
 * UUID (any case). An index or UUID already listed, a prefix that matches
 * several devices, and `MIG-` names (no MIG device exists here) stop it too.
 * So the empty string keeps none. Blanks around an entry are ignored.
 *
 * Pure: a function of its arguments.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "cu.h"

static int pci_less(const struct cu_candidate *a, const struct cu_candidate *b)
{
    if (a->domain != b->domain)
        return a->domain < b->domain;
    if (a->bus != b->bus)
        return a->bus < b->bus;
    if (a->device != b->device)
        return a->device < b->device;
    return a->function < b->function;
}

void cu_order(const char *order, const struct cu_candidate *c, unsigned int n, unsigned int out[])
{                                                 /* c[] is in NVML's order */
    int fastest = !order || strcmp(order, MOKKA_CUDA_ORDER_PCI_BUS_ID) != 0;
    for (unsigned int i = 0; i < n; i++)
        out[i] = i;
    for (unsigned int i = 1; i < n; i++) {        /* insertion sort: stable, n <= 64 */
        unsigned int x = out[i], j = i;
        while (j > 0) {
            const struct cu_candidate *a = &c[x], *b = &c[out[j - 1]];
            int before = fastest ? a->speed > b->speed : pci_less(a, b);
            if (!before)
                break;
            out[j] = out[j - 1];
            j--;
        }
        out[j] = x;
    }
}

static int is_blank(char ch)
{
    return ch == ' ' || ch == '\t';
}

/* The entry [s, end) without blanks around it, into buf (NUL-terminated); 0 if too long. */
static int entry_text(const char *s, const char *end, char *buf, size_t size)
{
    while (s < end && is_blank(*s))
        s++;
    while (end > s && is_blank(end[-1]))
        end--;
    if ((size_t)(end - s) >= size)
        return 0;
    memcpy(buf, s, (size_t)(end - s));
    buf[end - s] = '\0';
    return 1;
}

/* The position (in `ordered`) the entry names, or -1. */
static int lookup(const char *e, const struct cu_candidate *c, const unsigned int ordered[], unsigned int n)
{
    if (*e && strspn(e, "0123456789") == strlen(e)) {
        if (strlen(e) > 9)
            return -1;
        unsigned long idx = 0;
        for (const char *p = e; *p; p++)
            idx = idx * 10 + (unsigned long)(*p - '0');
        return idx < n ? (int)idx : -1;
    }
    size_t len = strlen(e);
    if (len <= 4 || strncasecmp(e, "GPU-", 4) != 0)
        return -1;
    int hit = -1;
    for (unsigned int i = 0; i < n; i++) {
        const char *uuid = c[ordered[i]].uuid;
        if (uuid && strlen(uuid) >= len && strncasecmp(uuid, e, len) == 0) {
            if (hit >= 0)
                return -1;                        /* not unique */
            hit = (int)i;
        }
    }
    return hit;
}

unsigned int cu_visible(const char *value, const struct cu_candidate *c, const unsigned int ordered[],
                        unsigned int n, unsigned int out[])
{
    if (!value) {
        for (unsigned int i = 0; i < n; i++)
            out[i] = i;
        return n;
    }
    unsigned int kept = 0;
    int taken[CU_MAX_DEVICES] = {0};
    for (const char *s = value;;) {
        const char *comma = strchr(s, ',');
        const char *end = comma ? comma : s + strlen(s);
        char e[128];
        int at = entry_text(s, end, e, sizeof e) ? lookup(e, c, ordered, n) : -1;
        if (at < 0 || taken[at] || kept >= CU_MAX_DEVICES)
            break;
        taken[at] = 1;
        out[kept++] = (unsigned int)at;
        if (!comma)
            break;
        s = comma + 1;
    }
    return kept;
}
