/* The engine: the loaded node, its GPUs, and the layered lookups (native/nvml/engine/).
 *
 * The lowest of the library's three rooms: the engine (this folder: reading the
 * state, the node, lookup, overrides, moving readings, the handles), MIG
 * (../mig/mig.h) above it and the API surface (../api/api.h) on top. A room includes
 * the headers of its own room and of the rooms below it, never above:
 * tests/native/test_rooms.py holds the library to that. What the engine needs of
 * MIG it is handed (struct mig_hooks below); it never calls MIG by name.
 *
 * A node is built by nvmlInit (node.c) from the compiled state companion and
 * is immutable once published, apart from the overrides layer (overrides.c),
 * which is swapped under its own lock. A value of a GPU is looked up through
 * the layers, highest first: the overrides of the GPU (`gpu<physical index>`),
 * the overrides of every GPU (`all`), what NVML's setters set on the node (settings.h),
 * what this process derived (the moving readings
 * of dynamic.c), the state's own
 * `gpu.<physical index>.K`. MIG partitions are the node's, kept apart (../mig/mig.h).
 */
#ifndef MOKKA_NVML_ENGINE_H
#define MOKKA_NVML_ENGINE_H

#include <stddef.h>

#include <nvml.h>

#include "flat.h"
#include "handles.h"
#include "kinds.h"
#include "mokka_keys.h"
#include "mokka_names.h"
#include "settings.h"

#define MOCK_MAX_GPUS MOKKA_MAX_GPUS
#define MOCK_PATH_MAX MOKKA_PATH_MAX
#define MOCK_VALUE_MAX 512

/* The handle nvmlDevice_t points at: mock_handles[visible index]. */
struct nvmlDevice_st {
    unsigned char unused;
};
extern struct nvmlDevice_st mock_handles[MOCK_MAX_GPUS];

struct mock_node;
struct mock_overrides;
struct mig_node;

/* What the engine asks of MIG, the room above it: ../mig/mig.h's mig_hooks, handed to
 * mock_init by nvmlInit (../api/init.c) and kept by the node it builds. */
struct mig_hooks {
    /* The node's partitions (node_build): NULL when out of memory. */
    struct mig_node *(*open)(const struct mock_node *n);
    void (*free)(struct mig_node *m);
    /* Whether two nodes show the same MIG devices (node_same). */
    int (*same)(const struct mig_node *a, const struct mig_node *b);
    /* MOCK_NVML_VISIBLE_DEVICES item `item` (a MIG UUID): keep its parent GPU and show
     * that MIG device (node_build's visibility pass). */
    void (*keep_listed)(struct mock_node *n, const char *item, int keep[]);
    /* What a query of a whole GPU answers a handle that is none of the node's GPUs
     * (mock_gpu_of): NOT_SUPPORTED for a live MIG device, else the handle's error. */
    nvmlReturn_t (*refuse)(nvmlDevice_t device);
};

struct mock_gpu {
    const struct mock_node *node;
    unsigned int phys;                 /* index in the state; overrides use it */
    unsigned int index;                /* visible index, renumbered from 0 */
    char base[24];                     /* "gpu.<phys>." */
};

struct mock_node {
    struct flat state;
    unsigned int count;                /* GPUs in the state */
    struct mock_gpu gpus[MOCK_MAX_GPUS];
    unsigned int nvisible;
    unsigned int visible[MOCK_MAX_GPUS];   /* visible index -> physical index */
    int fabric_ready;
    int clock_pinned;                  /* MOCK_NVML_CLOCK held a second (dynamic.c) */
    unsigned long long clock;
    char config_yaml[MOCK_PATH_MAX];
    char overrides_dir[MOCK_PATH_MAX];
    struct mock_overrides *overrides;  /* the one mutable part */
    struct mock_settings *settings;    /* what NVML's setters set, node-wide (settings.h) */
    struct mig_node *mig;              /* MIG: tables, this process's view, the partitions (mig.h) */
    const struct mig_hooks *mig_hooks; /* what opens, compares and frees it */
};

/* --- config.c ------------------------------------------------------------ */

/* The profile YAML this process uses, or an NVML error after printing one line. */
nvmlReturn_t config_locate(char *yaml, size_t size);
/* `…/X.yaml` -> `…/X.nvml`, as flatstate.companion_path. */
void config_companion_path(const char *yaml, char *out, size_t size);
/* The overrides directory: MOCK_NVML_OVERRIDES, else `overrides` beside the config. */
void config_overrides_dir(const char *config_yaml, char *out, size_t size);
/* One line on stderr: "mock NVML: <message>". */
void mock_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same, but a line already printed by this process is not repeated. */
void mock_warn_once(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The one line of a document that cannot be used (flat_load failed): the file and the
 * reason, never a value read from it. For the profile (ignoring NULL: nvmlInit fails),
 * or a document that is ignored ("overrides", "Xid events": a
 * warning, printed once); `compilable`: 'mokka compile --companion' writes its companion. */
void mock_say_unusable(const char *ignoring, const char *yaml, const struct flat_why *why, int compilable);

/* --- node.c -------------------------------------------------------------- */

/* The node this process sees, its MIG part opened by `mig`. */
nvmlReturn_t node_build(const struct mig_hooks *mig, struct mock_node **out);
int node_same(const struct mock_node *a, const struct mock_node *b);
void node_free(struct mock_node *n);
/* A node-wide value (system.*, nvlink.*, pcie_topology.*), or NULL. */
const char *node_get(const struct mock_node *n, const char *key);
int node_u64(const struct mock_node *n, const char *key, unsigned long long *out);
/* What fabric `state: auto` is on this node: completed once the fabricmanager is ready. */
const char *node_fabric_auto(const struct mock_node *n);
/* `<MOCK_NVML_DEV_ROOT>/dev/<name>`: where this process looks for a device node. */
void node_dev_path(char *out, size_t size, const char *name);

/* --- overrides.c --------------------------------------------------------- */

/* The overrides of a node of `count` GPUs, kept in directory `dir`. */
struct mock_overrides *overrides_open(const char *dir, unsigned int count);
void overrides_start(struct mock_overrides *o);   /* first load; warns at once */
struct ovr_layer;
struct ovr_layer *overrides_acquire(struct mock_overrides *o);
void overrides_release(struct mock_overrides *o, struct ovr_layer *l);
/* The layer's document for physical GPU `phys`, and the one for every GPU (NULL: none). */
const struct flat *overrides_gpu(const struct ovr_layer *l, unsigned int phys);
/* What a reset of physical GPU `phys` keeps (lasting-gpu<N>): below the GPU's own scope. */
const struct flat *overrides_lasting(const struct ovr_layer *l, unsigned int phys);
const struct flat *overrides_all(const struct ovr_layer *l);

/* --- lookup.c: one GPU's values through the layers ------------------------ */

/* 1 and the value copied into out; 0 when no layer has it; -1 when out is too small. */
int gpu_raw(const struct mock_gpu *g, const char *key, char *out, size_t size);
/* As gpu_raw, but values nvidia-smi prints as N/A ("", "N/A", "NA") count as missing. */
int gpu_str(const struct mock_gpu *g, const char *key, char *out, size_t size);
int gpu_u64(const struct mock_gpu *g, const char *key, unsigned long long *out);
/* gpu_u64 as the layers answered at second `t`: the moving readings at that second. */
int gpu_u64_at(const struct mock_gpu *g, const char *key, unsigned long long t, unsigned long long *out);
int gpu_i64(const struct mock_gpu *g, const char *key, long long *out);
/* true/enabled -> 1, false/disabled -> 0 (case-insensitive); else missing. */
int gpu_flag(const struct mock_gpu *g, const char *key, int *out);
/* Whether any layer has a key under `prefix` (e.g. "fabric."). */
int gpu_has_prefix(const struct mock_gpu *g, const char *prefix);
/* The number of items of list `key` ("nvlink_links"), 0 when absent. */
unsigned int gpu_list_len(const struct mock_gpu *g, const char *key);
int mock_is_na(const char *value);

/* --- dynamic.c: moving readings (the algorithm is documented there) --------- */

/* MOCK_NVML_CLOCK into n->clock / n->clock_pinned (node_build). */
void dynamic_read_clock(struct mock_node *n);
/* The second the readings are for: the pinned one, else the real time. */
unsigned long long dynamic_clock(const struct mock_node *n);
/* The moving value of `key` (temperature, power draw, utilization) at second `t` as decimal
 * text: 1, or 0 when the key does not move for this GPU. lookup.c's derived layer asks for
 * the second of dynamic_clock; nvmlDeviceGetSamples for past seconds too. */
int dynamic_reading_at(const struct mock_gpu *g, const char *key, unsigned long long t, char *out,
                       size_t size);
/* The GPU utilization's mean over time, in percent, of its pattern (steady: the middle of
 * its range; burst: weighted by the seconds at each end): 1, or 0 when it does not move. */
int dynamic_mean_utilization(const struct mock_gpu *g, unsigned long long *percent);

/* --- handles.c: the published node and its handles (handles.h: init, checks) --- */

/* The GPU behind a handle, after the init and handle checks of every query. */
nvmlReturn_t mock_gpu_of(nvmlDevice_t device, const struct mock_gpu **g);
/* Whether `mokka ctl set GPU lost=true` holds for the GPU: every query of it fails. */
int mock_gpu_lost(const struct mock_gpu *g);
/* The published node (NULL before the first successful nvmlInit). */
const struct mock_node *mock_node(void);
nvmlDevice_t mock_handle_of(const struct mock_gpu *g);

#endif
