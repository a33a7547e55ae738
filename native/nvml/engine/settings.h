/* What NVML's setters set, node-wide (settings.c; settings_file.c is its form on
 * disk): one truth for every process on the node and in every injected container,
 * kept in settings.nvml beside config.yaml and mig.nvml. lookup.c answers the
 * state keys they stand for from here, above the moving readings and the state and
 * below the overrides, so every reader (NVML's getters, both nvidia-smis) follows. */
#ifndef MOKKA_NVML_SETTINGS_H
#define MOKKA_NVML_SETTINGS_H

#include <nvml.h>

#define SETTINGS_UUID_MAX 80
/* A clock a setting may name, in MHz: above any board's. */
#define SETTINGS_MHZ_MAX 100000
/* The ECC counts a clearing sets back to zero, per counter type (settings_ecc_keys). */
#define SETTINGS_ECC_COUNTS 16
/* The NVLink error counters a reset of a link sets back to zero: every link's, each
 * nvmlNvLinkErrorCounter_t's. */
#define SETTINGS_NVLINK_LINKS MOKKA_MAX_NVLINK_LINKS
#define SETTINGS_NVLINK_COUNTERS NVML_NVLINK_ERROR_COUNT

/* One GPU's settings; a field at its "unset" value leaves the board's reading. */
struct gpu_settings {
    unsigned int power_limit_mw;               /* 0: unset */
    int persistence;                           /* -1: unset; 0, 1 */
    int compute_mode;                          /* -1: unset; nvmlComputeMode_t */
    int accounting;                            /* -1: unset; 0, 1 */
    unsigned int app_memory_mhz, app_graphics_mhz;   /* both 0: unset */
    unsigned int locked_min_mhz, locked_max_mhz;     /* graphics; both 0: unlocked */
    unsigned int mem_locked_min_mhz, mem_locked_max_mhz;   /* memory; both 0: unlocked */
    int ecc_current, ecc_pending;              /* -1: unset; 0, 1 (both set or neither) */
    int drain;                                 /* -1: not draining; 1: drained */
    /* The clocks' VF offsets (MHz, within +-MOKKA_CLOCK_VF_OFFSET_LIMIT_MHZ); 0: none. */
    int gpc_vf_offset_mhz, mem_vf_offset_mhz;
    int app_clocks_restricted;                 /* -1: unset (restricted); 0, 1 */
    int ecc_cleared[2];                        /* by nvmlEccCounterType_t: 1 when a baseline is held */
    unsigned int ecc_base[2][SETTINGS_ECC_COUNTS];   /* the counts at the clearing (settings_ecc_keys) */
    /* Each link's error counters at its last nvmlDeviceResetNvLinkErrorCounters; 0: none. */
    unsigned long long nvlink_base[SETTINGS_NVLINK_LINKS][SETTINGS_NVLINK_COUNTERS];
};

struct settings_file_gpu {
    int present;                               /* the file has lines of this GPU */
    char uuid[SETTINGS_UUID_MAX];              /* "" when not recorded */
    struct gpu_settings s;
};

struct settings_file {
    struct settings_file_gpu gpu[MOKKA_MAX_GPUS];    /* by physical index */
};

/* --- settings_file.c: settings.nvml's bytes ---------------------------------------- */

/* Nothing set. */
void settings_clear(struct gpu_settings *s);
/* The file in directory `dirfd`: NULL and *text (malloc'd), DOCFILE_ABSENT, or why not. */
const char *settings_file_read(int dirfd, char **text, size_t *len);
/* Its text into f (text is cut up): NULL, or what is wrong ("it ..."), *holds as docfile_parse. */
const char *settings_file_parse(char *text, size_t len, unsigned int count, struct settings_file *f, int *holds);
/* f as the file in `dirfd`, temp and rename: NULL, or why not. */
const char *settings_file_write(int dirfd, const struct settings_file *f, unsigned int count);

/* --- settings.c: the node's settings ----------------------------------------------- */

struct mock_node;
struct mock_gpu;
struct mock_settings;

struct mock_settings *settings_open(const struct mock_node *n);
void settings_free(struct mock_settings *s);
/* GPU `phys`'s settings as the node holds them now (re-read at most every 250 ms). */
void settings_get(const struct mock_node *n, unsigned int phys, struct gpu_settings *out);
/* The value of state key `key` a setting holds, as text: 1, or 0 (lookup.c's layer). */
int settings_value(const struct mock_gpu *g, const char *key, char *out, size_t size);
/* A reading of `key` found in any layer as the settings let it be: a current clock (MHz)
 * within its locked clocks, a power draw (mW) at most the power limit. */
unsigned long long settings_capped(const struct mock_gpu *g, const char *key, unsigned long long value);
/* The state keys of the ECC counts of counter type `scope` (nvmlEccCounterType_t), in
 * the order of gpu_settings.ecc_base. */
extern const char *const settings_ecc_keys[2][SETTINGS_ECC_COUNTS];

/* What a change does to one GPU's settings: NVML_SUCCESS, or the error to answer. */
typedef nvmlReturn_t (*settings_edit)(const struct mock_gpu *g, struct gpu_settings *s, void *arg);
/* A read-modify-write of settings.nvml under the config directory's flock. */
nvmlReturn_t settings_change(const struct mock_node *n, unsigned int phys, settings_edit edit, void *arg);
/* What a reset of GPU `phys` does: its settings go, a pending ECC mode becomes current. */
nvmlReturn_t settings_reset(const struct mock_node *n, unsigned int phys);
/* How the calling thread reads the ECC counts and the NVLink error counters: less their
 * clearing or reset (0), or whole (1). */
void settings_whole_counts(int whole);
/* nvmlDeviceClearEccErrorCounts: the counts of `scope` as they are now read zero from now on. */
nvmlReturn_t settings_clear_ecc(const struct mock_node *n, unsigned int phys, int scope);
/* An NVLink error counter as its readers see it: `whole` (what the layers hold) less the
 * link's reset, unless the thread reads whole counts; a counter below it started again. */
unsigned long long settings_nvlink_error(const struct mock_gpu *g, unsigned int link, unsigned int counter,
                                         unsigned long long whole);
/* nvmlDeviceResetNvLinkErrorCounters: the link's counters, `whole` (SETTINGS_NVLINK_COUNTERS
 * of them, as the layers hold them now), read zero from now on. */
nvmlReturn_t settings_reset_nvlink(const struct mock_node *n, unsigned int phys, unsigned int link,
                                   const unsigned long long *whole);

/* --- settings_board.c: what the board allows a setter --------------------------------- */

/* A power limit within its limits; a memory/graphics pair among its supported clocks; the
 * lowest and highest graphics (memory) clock it supports (1, or 0: none known); an ECC mode. */
int settings_power_allowed(const struct mock_gpu *g, unsigned int mw);
int settings_clocks_supported(const struct mock_gpu *g, unsigned int mem, unsigned int gfx);
int settings_graphics_range(const struct mock_gpu *g, unsigned int *lo, unsigned int *hi);
int settings_memory_range(const struct mock_gpu *g, unsigned int *lo, unsigned int *hi);
int settings_ecc_supported(const struct mock_gpu *g);

#endif
