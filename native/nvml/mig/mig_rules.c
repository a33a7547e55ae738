/* Where MIG instances go and what is left: pure functions of a board's table and
 * one GPU's partitions (see mig.h). The one placement rule: runtime creation
 * (mig_gi.c) and the boot layout compile plans (mig_place_plan, which the API
 * exports as nvmlMokkaMigPlaceGpuInstances for mokka/core/mig.py) both place
 * through mig_gi_place.
 *
 * A GPU instance occupies the memory slices of its placement; a new one created
 * without a placement goes where NVIDIA's driver puts it. Among the free
 * placements of its profile, in order:
 *   1. the one that holds more of the board's memory slices no compute reaches
 *      (the slices no 1-slice placement can use: slice 7 of an A100 or H100), so
 *      a 3g goes to 4:4 first;
 *   2. the one that leaves the larger free regions whole: whose enclosing aligned
 *      blocks (twice its size, then four times, ...) are the most occupied
 *      already, counting the slices no placement of the profile can use;
 *   3. the lower start.
 * The observable rule is the MIG user guide's (docs.nvidia.com/datacenter/tesla/
 * mig-user-guide, "Instance Geometry" and "Creating GPU Instances", A100-40GB):
 * -cgi 19,14,5 gives 13 at 6:1, 5 at 4:2, 1 at 0:4; -cgi 9,19,14,19 gives 2 at
 * 4:4, 7 at 0:1, 4 at 2:2, 8 at 1:1; -cgi 19,19,14,9 gives 13, 11, 3 and no room
 * for the 3g (the guide's "create 3g.20gb first"); -cgi 14,19,19,19,19,19 gives
 * 5, 13, 7, 8, 9, 10; -cgi 9,3g.20gb gives 2 then 1; seven 1g instances get ids
 * 13, 11, 12, 7, 8, 9, 10. A compute instance occupies compute slices of its GPU
 * instance, at multiples of its size, the lowest free placement first.
 */
#include <stdlib.h>
#include <string.h>

#include "mig.h"

static unsigned int span(unsigned int start, unsigned int size)
{
    return size >= 32 ? ~0u : ((1u << size) - 1) << start;
}

int mig_gi_id_of(unsigned int start, unsigned int size)
{
    switch (size) {
    case 8:
        return start == 0 ? 0 : -1;
    case 4:
        return start % 4 == 0 && start < 8 ? 1 + (int)start / 4 : -1;
    case 2:
        return start % 2 == 0 && start < 8 ? 3 + (int)start / 2 : -1;
    case 1:
        return start < 8 ? 7 + (int)start : -1;
    default:
        return -1;
    }
}

static unsigned int gi_occupied(const struct mig_gpu *gpu)
{
    unsigned int used = 0;
    for (unsigned int i = 0; i < gpu->ngi; i++)
        used |= span(gpu->gi[i].start, gpu->gi[i].size);
    return used;
}

static unsigned int bits(unsigned int x)
{
    return (unsigned int)__builtin_popcount(x);
}

/* How occupied the aligned block of `block` slices around `start` is, the candidate's own slices aside. */
static unsigned int pressure(unsigned int taken, unsigned int start, unsigned int size, unsigned int block)
{
    unsigned int base = start / block * block;
    return bits(taken & span(base, block) & ~span(start, size));
}

/* The memory slices no compute reaches: those no placement of a 1-slice profile can use. */
static unsigned int computeless(const struct mig_table *t)
{
    unsigned int reached = 0;
    int any = 0;
    for (unsigned int q = 0; q < MIG_GI_PROFILES; q++) {
        const struct mig_gi_profile *prof = &t->gi[q];
        if (!prof->present || prof->placement_size != 1)
            continue;
        any = 1;
        for (unsigned int k = 0; k < prof->nplacements; k++)
            reached |= span(prof->placement_start[k], 1);
    }
    return any ? ~reached & span(0, MIG_MEMORY_SLICES) : 0;
}

/* Whether placement a is the better of two free ones (see the header comment). */
static int better(unsigned int dead, unsigned int taken, unsigned int size, unsigned int a, unsigned int b)
{
    unsigned int da = bits(dead & span(a, size)), db = bits(dead & span(b, size));
    if (da != db)
        return da > db;
    for (unsigned int block = size * 2; block <= MIG_MEMORY_SLICES; block *= 2) {
        unsigned int pa = pressure(taken, a, size, block), pb = pressure(taken, b, size, block);
        if (pa != pb)
            return pa > pb;
    }
    return a < b;
}

static unsigned int count_profile(const struct mig_gpu *gpu, unsigned int p)
{
    unsigned int n = 0;
    for (unsigned int i = 0; i < gpu->ngi; i++)
        n += gpu->gi[i].profile == p;
    return n;
}

int mig_gi_place(const struct mig_table *t, const struct mig_gpu *gpu, unsigned int p, int want,
                 unsigned int *start)
{
    const struct mig_gi_profile *prof = &t->gi[p];
    if (!prof->present || count_profile(gpu, p) >= prof->instances || gpu->ngi >= MIG_MAX_GIS)
        return 0;
    unsigned int used = gi_occupied(gpu), reachable = 0;
    for (unsigned int k = 0; k < prof->nplacements; k++)
        reachable |= span(prof->placement_start[k], prof->placement_size);
    unsigned int taken = used | (~reachable & span(0, MIG_MEMORY_SLICES)), dead = computeless(t);
    int found = 0;
    for (unsigned int k = 0; k < prof->nplacements; k++) {
        unsigned int s = prof->placement_start[k];
        if ((used & span(s, prof->placement_size)) || (want >= 0 && s != (unsigned int)want))
            continue;
        if (!found || better(dead, taken, prof->placement_size, s, *start))
            *start = s;
        found = 1;
    }
    return found;
}

unsigned int mig_gi_capacity(const struct mig_table *t, const struct mig_gpu *gpu, unsigned int p)
{
    const struct mig_gi_profile *prof = &t->gi[p];
    if (!prof->present)
        return 0;
    unsigned int used = gi_occupied(gpu), fits = 0;
    for (unsigned int k = 0; k < prof->nplacements; k++) {
        unsigned int s = span(prof->placement_start[k], prof->placement_size);
        if (!(used & s)) {
            used |= s;                            /* the next must fit beside this one too */
            fits++;
        }
    }
    unsigned int have = count_profile(gpu, p);
    unsigned int left = prof->instances > have ? prof->instances - have : 0;
    unsigned int room = MIG_MAX_GIS - gpu->ngi;
    if (fits > room)
        fits = room;
    return fits < left ? fits : left;
}

int mig_gi_add(struct mig_gpu *gpu, unsigned int p, unsigned int start, unsigned int size)
{
    int id = mig_gi_id_of(start, size);
    if (id < 0 || gpu->ngi >= MIG_MAX_GIS)
        return -1;
    unsigned int at = 0;
    while (at < gpu->ngi && gpu->gi[at].id < id)
        at++;
    memmove(&gpu->gi[at + 1], &gpu->gi[at], (gpu->ngi - at) * sizeof gpu->gi[0]);
    memset(&gpu->gi[at], 0, sizeof gpu->gi[at]);
    gpu->gi[at].id = (unsigned char)id;
    gpu->gi[at].profile = (unsigned char)p;
    gpu->gi[at].start = (unsigned char)start;
    gpu->gi[at].size = (unsigned char)size;
    gpu->ngi++;
    return (int)at;
}

int mig_gi_find(const struct mig_gpu *gpu, unsigned int id)
{
    for (unsigned int i = 0; i < gpu->ngi; i++)
        if (gpu->gi[i].id == id)
            return (int)i;
    return -1;
}

void mig_gi_remove(struct mig_gpu *gpu, unsigned int at)
{
    memmove(&gpu->gi[at], &gpu->gi[at + 1], (gpu->ngi - at - 1) * sizeof gpu->gi[0]);
    gpu->ngi--;
}

nvmlReturn_t mig_place_plan(unsigned int nprofiles, const unsigned int *profiles, unsigned int count,
                            const unsigned int *create, unsigned int *starts, unsigned int *placed)
{
    if (!profiles || (count && (!create || !starts)) || !placed || nprofiles > MIG_GI_PROFILES)
        return NVML_ERROR_INVALID_ARGUMENT;
    *placed = 0;
    struct mig_table *t = calloc(1, sizeof *t);
    if (!t)
        return NVML_ERROR_MEMORY;
    nvmlReturn_t ret = NVML_SUCCESS;
    for (unsigned int p = 0; p < nprofiles && ret == NVML_SUCCESS; p++) {
        const unsigned int *row = profiles + (size_t)p * MIG_PLACE_ROW;
        struct mig_gi_profile *prof = &t->gi[p];
        if (row[1] == 0 || row[1] > MIG_MEMORY_SLICES || row[2] > MIG_MEMORY_SLICES) {
            ret = NVML_ERROR_INVALID_ARGUMENT;
            break;
        }
        prof->present = 1;
        prof->instances = row[0];
        prof->placement_size = row[1];
        prof->nplacements = row[2];
        for (unsigned int k = 0; k < prof->nplacements; k++) {
            if (row[3 + k] + row[1] > MIG_MEMORY_SLICES)
                ret = NVML_ERROR_INVALID_ARGUMENT;
            prof->placement_start[k] = row[3 + k];
        }
    }
    struct mig_gpu gpu;
    memset(&gpu, 0, sizeof gpu);
    gpu.current = 1;
    for (unsigned int i = 0; i < count && ret == NVML_SUCCESS; i++) {
        unsigned int p = create[i], start;
        if (p >= nprofiles) {
            ret = NVML_ERROR_INVALID_ARGUMENT;
        } else if (!mig_gi_place(t, &gpu, p, -1, &start) ||      /* as CreateGpuInstance places */
                   mig_gi_add(&gpu, p, start, t->gi[p].placement_size) < 0) {
            ret = NVML_ERROR_INSUFFICIENT_RESOURCES;
        } else {
            starts[i] = start;
            *placed = i + 1;
        }
    }
    free(t);
    return ret;
}

/* --- compute instances ----------------------------------------------------------- */

unsigned int mig_ci_placements(const struct mig_gi_profile *p, unsigned int c, unsigned int *starts,
                               unsigned int cap)
{
    const struct mig_ci_profile *ci = &p->ci[c];
    unsigned int n = 0;
    if (!ci->present || ci->slices == 0)
        return 0;
    for (unsigned int k = 0; k < ci->nplacements && n < cap; k++)
        starts[n++] = ci->placement_start[k];
    for (unsigned int s = 0; ci->nplacements == 0 && s + ci->slices <= p->slices && n < cap; s += ci->slices)
        starts[n++] = s;
    return n;
}

static unsigned int ci_occupied(const struct mig_gi *gi)
{
    unsigned int used = 0;
    for (unsigned int i = 0; i < gi->nci; i++)
        used |= span(gi->ci[i].start, gi->ci[i].size);
    return used;
}

static unsigned int ci_count_profile(const struct mig_gi *gi, unsigned int c)
{
    unsigned int n = 0;
    for (unsigned int i = 0; i < gi->nci; i++)
        n += gi->ci[i].profile == c;
    return n;
}

int mig_ci_place(const struct mig_table *t, const struct mig_gi *gi, unsigned int c, int want,
                 unsigned int *start)
{
    const struct mig_gi_profile *p = &t->gi[gi->profile];
    const struct mig_ci_profile *ci = &p->ci[c];
    unsigned int starts[MIG_MEMORY_SLICES];
    unsigned int n = mig_ci_placements(p, c, starts, MIG_MEMORY_SLICES);
    if (ci_count_profile(gi, c) >= ci->instances || gi->nci >= MIG_CI_IDS)
        return 0;
    unsigned int used = ci_occupied(gi);
    for (unsigned int k = 0; k < n; k++) {
        if ((used & span(starts[k], ci->slices)) || (want >= 0 && starts[k] != (unsigned int)want))
            continue;
        *start = starts[k];
        return 1;
    }
    return 0;
}

unsigned int mig_ci_capacity(const struct mig_table *t, const struct mig_gi *gi, unsigned int c)
{
    const struct mig_gi_profile *p = &t->gi[gi->profile];
    const struct mig_ci_profile *ci = &p->ci[c];
    unsigned int starts[MIG_MEMORY_SLICES];
    unsigned int n = mig_ci_placements(p, c, starts, MIG_MEMORY_SLICES), used = ci_occupied(gi), fits = 0;
    for (unsigned int k = 0; k < n; k++) {
        unsigned int s = span(starts[k], ci->slices);
        if (!(used & s)) {
            used |= s;
            fits++;
        }
    }
    unsigned int have = ci_count_profile(gi, c);
    unsigned int left = ci->instances > have ? ci->instances - have : 0;
    unsigned int room = MIG_CI_IDS - gi->nci;
    if (fits > room)
        fits = room;
    return fits < left ? fits : left;
}

int mig_ci_add(struct mig_gi *gi, unsigned int c, unsigned int start, unsigned int size)
{
    if (gi->nci >= MIG_CI_IDS)
        return -1;
    unsigned int id = 0, at = 0;
    while (at < gi->nci && gi->ci[at].id == id) {    /* ids ascend: the first gap is the lowest free */
        at++;
        id++;
    }
    memmove(&gi->ci[at + 1], &gi->ci[at], (gi->nci - at) * sizeof gi->ci[0]);
    gi->ci[at].id = (unsigned char)id;
    gi->ci[at].profile = (unsigned char)c;
    gi->ci[at].start = (unsigned char)start;
    gi->ci[at].size = (unsigned char)size;
    gi->nci++;
    return (int)at;
}

int mig_ci_find(const struct mig_gi *gi, unsigned int id)
{
    for (unsigned int i = 0; i < gi->nci; i++)
        if (gi->ci[i].id == id)
            return (int)i;
    return -1;
}

void mig_ci_remove(struct mig_gi *gi, unsigned int at)
{
    memmove(&gi->ci[at], &gi->ci[at + 1], (gi->nci - at - 1) * sizeof gi->ci[0]);
    gi->nci--;
}

int mig_ci_default(const struct mig_gi_profile *p)
{
    for (unsigned int c = 0; c < MIG_CI_PROFILES; c++)
        if (p->ci[c].present && p->ci[c].slices == p->slices)
            return (int)c;
    return -1;
}

/* --- the boot state, and whether a state read from disk is possible -------------- */

void mig_gpu_boot(const struct mig_table *t, struct mig_gpu *gpu)
{
    memset(gpu, 0, sizeof *gpu);
    gpu->current = t->boot_current ? 1 : 0;
    gpu->pending = t->boot_pending ? 1 : 0;
    if (!gpu->current)
        return;
    for (unsigned int k = 0; k < t->nboot; k++) {
        unsigned int p = t->boot[k].profile, start;
        if (!mig_gi_place(t, gpu, p, (int)t->boot[k].start, &start))
            continue;                             /* overlapping: compile keeps that from happening */
        int at = mig_gi_add(gpu, p, start, t->gi[p].placement_size);
        int c = mig_ci_default(&t->gi[p]);
        unsigned int cstart;
        if (at >= 0 && c >= 0 && mig_ci_place(t, &gpu->gi[at], (unsigned int)c, -1, &cstart))
            mig_ci_add(&gpu->gi[at], (unsigned int)c, cstart, t->gi[p].ci[c].slices);
    }
}

static const char *ci_invalid(const struct mig_table *t, const struct mig_gi *gi)
{
    const struct mig_gi_profile *p = &t->gi[gi->profile];
    struct mig_gi built;
    memset(&built, 0, sizeof built);
    built.profile = gi->profile;
    if (gi->nci > MIG_CI_IDS)
        return "too many compute instances";
    for (unsigned int i = 0; i < gi->nci; i++) {
        const struct mig_ci *ci = &gi->ci[i];
        unsigned int start;
        if (ci->profile >= MIG_CI_PROFILES || !p->ci[ci->profile].present)
            return "a compute instance profile the GPU instance does not have";
        if (ci->id >= MIG_CI_IDS || (i > 0 && ci->id <= gi->ci[i - 1].id))
            return "compute instance ids out of range or repeated";
        if (ci->size != p->ci[ci->profile].slices || !mig_ci_place(t, &built, ci->profile, ci->start, &start))
            return "a compute instance placement the GPU instance cannot hold";
        built.ci[built.nci] = *ci;
        built.nci++;
    }
    return NULL;
}

const char *mig_gpu_invalid(const struct mig_table *t, const struct mig_gpu *gpu)
{
    if (gpu->current > 1 || gpu->pending > 1)
        return "a MIG mode other than 0 or 1";
    if (t->unpublished && (gpu->current || gpu->pending))
        return "MIG enabled on a board whose partition table is not public";
    if (gpu->ngi > MIG_MAX_GIS)
        return "too many GPU instances";
    if (!gpu->current && gpu->ngi > 0)
        return "GPU instances while MIG is disabled";
    struct mig_gpu built;
    memset(&built, 0, sizeof built);
    unsigned int devices = 0;
    for (unsigned int i = 0; i < gpu->ngi; i++) {
        const struct mig_gi *gi = &gpu->gi[i];
        unsigned int start;
        if (gi->profile >= MIG_GI_PROFILES || !t->gi[gi->profile].present)
            return "a GPU instance profile the board does not have";
        if (gi->size != t->gi[gi->profile].placement_size || mig_gi_id_of(gi->start, gi->size) != gi->id ||
            (i > 0 && gi->id <= gpu->gi[i - 1].id))
            return "a GPU instance id that is not its placement's, or ids out of order";
        if (!mig_gi_place(t, &built, gi->profile, gi->start, &start))
            return "a GPU instance placement the board cannot hold";
        const char *why = ci_invalid(t, gi);
        if (why)
            return why;
        built.gi[built.ngi++] = *gi;
        devices += gi->nci;
    }
    if (t->max_devices > 0 && devices > t->max_devices)
        return "more MIG devices than the board has";
    return NULL;
}
