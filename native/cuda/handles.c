/* The opaque handles this library handed out (contexts, streams, events,
 * modules, functions, libraries, kernels, link states), so a call can check one without
 * reading through it: an open-addressing set keyed by the pointer, grown by
 * doubling, under cu_lock. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>

#include "cu.h"

struct slot {
    const void *h;                     /* NULL: empty; TOMBSTONE: removed */
    enum cu_kind kind;
};

static const char tombstone_byte;
#define TOMBSTONE ((const void *)&tombstone_byte)

static struct slot *slots;
static size_t cap, used;               /* used counts tombstones too */

static size_t hash(const void *h)
{
    uint64_t x = (uint64_t)(uintptr_t)h;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

static struct slot *find(const void *h)
{
    if (!cap)
        return NULL;
    for (size_t i = hash(h) & (cap - 1), n = 0; n < cap; i = (i + 1) & (cap - 1), n++) {
        if (slots[i].h == h)
            return &slots[i];
        if (!slots[i].h)
            return NULL;
    }
    return NULL;
}

/* Rehash: double when the live handles fill a quarter, else only drop the tombstones. */
static int grow(void)
{
    size_t live_now = 0;
    for (size_t i = 0; i < cap; i++)
        live_now += slots[i].h && slots[i].h != TOMBSTONE;
    size_t ncap = !cap ? 64 : live_now * 4 >= cap ? cap * 2 : cap;
    struct slot *fresh = calloc(ncap, sizeof *fresh);
    if (!fresh)
        return -1;
    size_t live = 0;
    for (size_t i = 0; i < cap; i++) {
        if (!slots[i].h || slots[i].h == TOMBSTONE)
            continue;
        size_t j = hash(slots[i].h) & (ncap - 1);
        while (fresh[j].h)
            j = (j + 1) & (ncap - 1);
        fresh[j] = slots[i];
        live++;
    }
    free(slots);
    slots = fresh;
    cap = ncap;
    used = live;
    return 0;
}

int cu_handle_add(const void *h, enum cu_kind kind)
{
    if (!h || h == TOMBSTONE)
        return -1;
    if ((used + 1) * 2 > cap && grow() != 0)
        return -1;
    size_t i = hash(h) & (cap - 1);
    while (slots[i].h && slots[i].h != TOMBSTONE && slots[i].h != h)
        i = (i + 1) & (cap - 1);
    if (!slots[i].h)
        used++;
    slots[i].h = h;
    slots[i].kind = kind;
    return 0;
}

int cu_handle_is(const void *h, enum cu_kind kind)
{
    const struct slot *s = h ? find(h) : NULL;
    return s && s->kind == kind;
}

void cu_handle_remove(const void *h)
{
    struct slot *s = h ? find(h) : NULL;
    if (s)
        s->h = TOMBSTONE;
}
