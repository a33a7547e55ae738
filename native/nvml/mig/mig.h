/* MIG (native/nvml/mig/): the board's partition table, the node-wide partition
 * state and the rules that join them.
 *
 * The middle room: its files include the engine's headers (../engine/) and this
 * folder's, never the API's (../api/). What the engine needs of MIG it is handed
 * at nvmlInit (mig_hooks below, struct mig_hooks of ../engine/engine.h).
 *
 *   mig_table.c   the table a GPU's profile declares (GPU and compute instance
 *                 profiles, placements, the GPU instances it boots with), read
 *                 once per node
 *   mig_rules.c   pure decisions over a table and one GPU's partitions: where an
 *                 instance goes, what is left, which ids it gets, whether a state
 *                 read from disk is one the board can be in
 *   mig_state.c   the partitions of every GPU of the node, kept in
 *                 driver/config/mig.nvml beside config.yaml, read and written by
 *                 every process; mig_file.c is its on-disk form
 *   mig_view.c    what this process sees of them (the capability nodes it has,
 *                 MOCK_NVML_VISIBLE_DEVICES' MIG UUIDs) and the MIG UUIDs
 *   mig.c, mig_gi.c, mig_ci.c, mig_device.c   the NVML calls (nvmlDeviceSetMigMode's
 *                 exported entry is the API room's, ../api/mig_mode.c: it knows the
 *                 process records, and hands mig_set_mode whether one holds the GPU)
 *   mig_hooks.c   what the engine calls of MIG (struct mig_hooks)
 *
 * Ids: a GPU instance's id follows from its placement (0:8 is 0, 0:4 and 4:4 are
 * 1 and 2, size 2 at 0/2/4/6 is 3-6, size 1 at n is 7+n: ids 0-14, the gi numbers
 * of nvidia-caps/mig-minors); compute instance ids are 0-7 within their GPU
 * instance, the lowest free one.
 */
#ifndef MOKKA_NVML_MIG_H
#define MOKKA_NVML_MIG_H

#include <nvml.h>

#include "engine/engine.h"

#define MIG_GI_PROFILES NVML_GPU_INSTANCE_PROFILE_COUNT       /* NVML's GPU instance profile indices */
#define MIG_CI_PROFILES NVML_COMPUTE_INSTANCE_PROFILE_COUNT   /* and compute instance ones */
#define MIG_MEMORY_SLICES 8                                    /* what a GPU instance placement counts */
#define MIG_GI_IDS MOKKA_MIG_GPU_INSTANCE_IDS                   /* ids 0..14 */
#define MIG_CI_IDS MOKKA_MIG_COMPUTE_INSTANCE_IDS               /* ids 0..7 */
#define MIG_MAX_GIS 8                                          /* never more than memory slices */
#define MIG_NAME_MAX 32
#define MIG_UUID_SIZE 48                                       /* "MIG-" and a UUID */

/* --- mig_table.c ------------------------------------------------------------ */

struct mig_ci_profile {
    int present;
    unsigned int id, slices, instances, multiprocessors;
    char name[MIG_NAME_MAX];
    unsigned int nplacements, placement_start[MIG_MEMORY_SLICES];   /* none: multiples of its slices */
};

struct mig_gi_profile {
    int present;
    unsigned int id, slices, instances, multiprocessors;
    unsigned int copy_engines, decoders, encoders, jpegs, ofas;
    int p2p;
    unsigned long long memory_mib;
    char name[MIG_NAME_MAX];
    unsigned int placement_size, nplacements, placement_start[MIG_MEMORY_SLICES];
    struct mig_ci_profile ci[MIG_CI_PROFILES];   /* by NVML compute instance profile index */
};

struct mig_table {
    unsigned int max_devices;                    /* mig.max_gpu_instances */
    int unpublished;                             /* MIG-capable, no profiles declared: always disabled */
    int boot_current, boot_pending;              /* the modes the profile boots with */
    struct mig_gi_profile gi[MIG_GI_PROFILES];   /* by NVML GPU instance profile index */
    unsigned int nboot;                          /* the GPU instances it boots with (mig.boot) */
    struct { unsigned int profile, start; } boot[MIG_MAX_GIS];
};

/* The table of physical GPU `phys`, or NULL when its board has none (not MIG-capable).
 * A board that declares max_gpu_instances but no GPU instance profiles (gb300: its
 * partition table is not public) is MIG-capable with an empty, `unpublished` table:
 * its mode reads Disabled and enabling it is refused (mig.c).
 * Read from the node's state on first use; immutable after. */
const struct mig_table *mig_table(const struct mock_node *n, unsigned int phys);
/* The tables of a node's GPUs, read on first use (mig_state.c keeps them with the node). */
struct mig_tables;
struct mig_tables *mig_tables_open(void);
void mig_tables_free(struct mig_tables *ts);
const struct mig_table *mig_tables_get(struct mig_tables *ts, const struct mock_node *n, unsigned int phys);
/* The index of the GPU instance profile with this id, or -1. */
int mig_gi_profile_by_id(const struct mig_table *t, unsigned int id);
/* The index of GPU instance profile `gi`'s compute instance profile with this id, or -1. */
int mig_ci_profile_by_id(const struct mig_gi_profile *gi, unsigned int id);

/* --- mig_rules.c: one GPU's partitions --------------------------------------- */

struct mig_ci {
    unsigned char id, profile, start, size;      /* profile: compute instance profile index */
};

struct mig_gi {
    unsigned char id, profile, start, size;      /* profile: GPU instance profile index */
    unsigned char nci;
    struct mig_ci ci[MIG_CI_IDS];                /* by ascending id */
};

struct mig_gpu {
    unsigned char current, pending;              /* MIG mode: 1 enabled */
    unsigned char ngi;
    struct mig_gi gi[MIG_MAX_GIS];               /* by ascending id */
};

/* The id of a GPU instance at this placement, or -1 for a placement no id names. */
int mig_gi_id_of(unsigned int start, unsigned int size);
/* How many more GPU instances of profile `p` fit beside the existing ones. */
unsigned int mig_gi_capacity(const struct mig_table *t, const struct mig_gpu *gpu, unsigned int p);
/* Where a new GPU instance of profile `p` goes (*start): 1, or 0 when none fits.
 * With want >= 0 only that start is tried. */
int mig_gi_place(const struct mig_table *t, const struct mig_gpu *gpu, unsigned int p, int want,
                 unsigned int *start);
/* The GPU instances created one after another without a placement on an empty GPU,
 * placed by mig_gi_place: the library's one rule, for the boot layout compile plans.
 * `profiles`: `nprofiles` rows of MIG_PLACE_ROW numbers (instances, placement size,
 * how many placements, their starts); `create`: the `count` rows to create, in order.
 * Exported as nvmlMokkaMigPlaceGpuInstances (api/mokka_private.h has the contract). */
#define MIG_PLACE_ROW 11
nvmlReturn_t mig_place_plan(unsigned int nprofiles, const unsigned int *profiles, unsigned int count,
                            const unsigned int *create, unsigned int *starts, unsigned int *placed);

/* Add a GPU instance of profile `p` at `start` (placed by mig_gi_place); its index in gpu->gi. */
int mig_gi_add(struct mig_gpu *gpu, unsigned int p, unsigned int start, unsigned int size);
/* The index in gpu->gi of GPU instance `id`, or -1. */
int mig_gi_find(const struct mig_gpu *gpu, unsigned int id);
void mig_gi_remove(struct mig_gpu *gpu, unsigned int at);

/* The placements of compute instance profile `c` within GPU instance profile `p`:
 * the profile's, or where it names none, starts at multiples of its size that fit
 * in the GPU instance's slices. */
unsigned int mig_ci_placements(const struct mig_gi_profile *p, unsigned int c, unsigned int *starts,
                               unsigned int cap);
unsigned int mig_ci_capacity(const struct mig_table *t, const struct mig_gi *gi, unsigned int c);
int mig_ci_place(const struct mig_table *t, const struct mig_gi *gi, unsigned int c, int want,
                 unsigned int *start);
int mig_ci_add(struct mig_gi *gi, unsigned int c, unsigned int start, unsigned int size);
int mig_ci_find(const struct mig_gi *gi, unsigned int id);
void mig_ci_remove(struct mig_gi *gi, unsigned int at);

/* The partitions the profile boots with: its modes, and the GPU instances of its
 * layout when MIG is on (compiled with their placements: mig.boot), each with its
 * default compute instance. */
void mig_gpu_boot(const struct mig_table *t, struct mig_gpu *gpu);
/* Whether `gpu` is a state the board can be in (a file's content is hostile):
 * NULL, or what is wrong, for one line. */
const char *mig_gpu_invalid(const struct mig_table *t, const struct mig_gpu *gpu);
/* The default compute instance profile of GPU instance profile `p` (the one as
 * large as the GPU instance: what `nvidia-smi mig -cgi ... -C` creates), or -1. */
int mig_ci_default(const struct mig_gi_profile *p);

/* --- mig_state.c: the node's partitions ---------------------------------------- */

struct mig_node;
struct mig_view;

/* What the engine calls of MIG (struct mig_hooks; mig_hooks.c): mig_node_open, mig_node_free,
 * mig_node_same, mig_view_keep_listed and mig_refuse. nvmlInit hands it over. */
extern const struct mig_hooks mig_hooks;

struct mig_node *mig_node_open(const struct mock_node *n);
void mig_node_free(struct mig_node *m);
/* Whether two nodes show the same MIG devices (nvmlInit keeps the published node). */
int mig_node_same(const struct mig_node *a, const struct mig_node *b);

/* A copy of physical GPU `phys`'s partitions, at most CHECK_MS old: 1, or 0 when
 * the GPU is not MIG-capable. */
int mig_gpu_get(const struct mock_node *n, unsigned int phys, struct mig_gpu *out);

/* Change one GPU's partitions for every process of the node: under the node's
 * lock, on the partitions as they are on disk now, `edit` decides (pure), and
 * what it returns NVML_SUCCESS for is written. */
typedef nvmlReturn_t (*mig_edit)(const struct mig_table *t, struct mig_gpu *gpu, void *arg);
nvmlReturn_t mig_gpu_change(const struct mock_node *n, unsigned int phys, mig_edit edit, void *arg);
/* The node's view (mig_view.c), or NULL before it has one. */
struct mig_view *mig_node_view(const struct mock_node *n);

/* --- mig_view.c: what this process sees ---------------------------------------- */

/* This process's view of a node's MIG devices (mig_state.c keeps it with the node). */
struct mig_view *mig_view_open(const struct mock_node *n);
void mig_view_free(struct mig_view *v);
int mig_view_same(const struct mig_view *a, const struct mig_view *b);

/* MOCK_NVML_VISIBLE_DEVICES item `item` (a MIG UUID): keep its parent GPU and
 * show that MIG device (node_build's visibility pass). */
void mig_view_keep_listed(struct mock_node *n, const char *item, int keep[]);
/* Whether this process sees MIG device (gi, ci) of physical GPU `phys`. */
int mig_view_sees(const struct mock_node *n, unsigned int phys, unsigned int gi, unsigned int ci);
/* "MIG-<uuid>" of MIG device (gi, ci) of physical GPU `phys`: 1, or 0 when the GPU has no UUID. */
int mig_uuid(const struct mock_gpu *g, unsigned int gi, unsigned int ci, char out[MIG_UUID_SIZE]);

/* --- mig_device.c: MIG device handles --------------------------------------------- */

struct mig_device {
    const struct mock_gpu *parent;
    struct mig_gi gi;                            /* its GPU instance, CIs included */
    struct mig_ci ci;
    const struct mig_table *table;
};

/* A GPU that this process sees, by physical index, or NULL. */
const struct mock_gpu *mig_visible_gpu(const struct mock_node *n, unsigned int phys);
/* A handle of this library that is a MIG device: 1 and *phys, *gi, *ci; else 0. */
int mig_handle_ids(nvmlDevice_t device, unsigned int *phys, unsigned int *gi, unsigned int *ci);
/* The MIG device behind a handle that exists now and this process sees. */
nvmlReturn_t mig_device_of(nvmlDevice_t device, struct mig_device *out);
nvmlDevice_t mig_device_handle(unsigned int phys, unsigned int gi, unsigned int ci);
/* "NVIDIA H100 80GB HBM3 MIG 1g.10gb" */
void mig_device_name(const struct mig_device *d, char *out, size_t size);
/* What a query that only a whole GPU answers says to a live MIG handle (NOT_SUPPORTED),
 * or the handle's error (the engine's mock_gpu_of, through mig_hooks). */
nvmlReturn_t mig_refuse(nvmlDevice_t device);
/* What a query only a MIG device answers says to any other handle: NOT_SUPPORTED for a
 * whole GPU, the handle's error else. */
nvmlReturn_t mig_not_a_mig_device(nvmlDevice_t device);
/* The GPU behind a GPU handle, or the parent of a MIG device: for the queries a MIG
 * device answers with its parent's value. */
nvmlReturn_t mig_gpu_or_parent(nvmlDevice_t device, const struct mock_gpu **g);
/* mock_check_device for queries a MIG device answers too. */
nvmlReturn_t mig_check_any(nvmlDevice_t device);
/* GetHandleByUUID for "MIG-..." (../api/init.c). */
nvmlReturn_t mig_handle_by_uuid(const char *uuid, nvmlDevice_t *device);
/* A MIG handle's index under its parent (device.c): 1 with *ret and *index, or 0 for any other handle. */
int mig_index(nvmlDevice_t device, nvmlReturn_t *ret, unsigned int *index);
/* A MIG handle's memory (perf.c): 1 with *ret and *total bytes, or 0 for any other handle. */
int mig_memory(nvmlDevice_t device, nvmlReturn_t *ret, unsigned long long *total);

/* --- mig_gi.c: GPU instance handles --------------------------------------------- */

struct mig_gi_ref {
    const struct mock_gpu *g;                    /* the parent */
    const struct mig_table *t;
    struct mig_gpu st;                           /* its partitions, as the handle was checked */
    int at;                                      /* the GPU instance's index in st.gi */
};

nvmlGpuInstance_t mig_gi_handle(unsigned int phys, unsigned int id);
/* The GPU instance behind a handle that exists now. */
nvmlReturn_t mig_gi_of(nvmlGpuInstance_t handle, struct mig_gi_ref *out);
/* The GPU behind a handle, with its table and partitions: NOT_SUPPORTED without a
 * table, or while MIG is disabled when `enabled` asks for it. */
nvmlReturn_t mig_gpu_of(nvmlDevice_t device, int enabled, const struct mock_gpu **g, const struct mig_table **t,
                        struct mig_gpu *st);
/* "MIG <profile name>": what NVML calls a profile. */
void mig_profile_name(const char *name, char out[NVML_DEVICE_NAME_V2_BUFFER_SIZE]);

/* --- mig.c --------------------------------------------------------------------- */

/* Whether MIG is enabled on the GPU now (queries that a MIG-enabled GPU does not answer). */
int mig_enabled(const struct mock_gpu *g);
/* What a GPU reset does to its MIG partitions: a pending mode takes effect, and
 * instances do not survive it (reset.c). */
nvmlReturn_t mig_reset(const struct mock_node *n, unsigned int phys);
/* nvmlDeviceSetMigMode over the partitions; `busy`: some process holds the GPU (the API
 * room knows the process records: ../api/mig_mode.c), so the mode is left pending with
 * activation IN_USE instead of made current at once. */
nvmlReturn_t mig_set_mode(nvmlDevice_t device, unsigned int mode, int busy, nvmlReturn_t *activationStatus);

#endif
