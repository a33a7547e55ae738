/* nvmlDeviceGetFieldValues: every field the state can answer; each other entry
 * gets NOT_SUPPORTED in its own nvmlReturn while the call succeeds (or the error
 * the GPU's `refused` block gives it). The -q fields of nvidia-smi 550 (82, 95,
 * 185-190 and 192 per power scope, 193-196, 226, 227), those of `nvidia-smi
 * nvlink -s` (91, 164, 165), and of the 580 report: the clocks event reason
 * counters (74, 76, 251-253), the PCIe atomics (228, 229) and the inactive row
 * remappings (301, 302) of NVML 13 included. The recovery action (230) is the GPU's
 * failure.recovery_action; "Reset Required" (226) and "Drain and Reset Recommended"
 * (227) follow from it, as NVIDIA's error recovery flags pair them. The ECC totals (3-6), the
 * retired pages (29-31), the remapped rows (142-145) and the NVLink error counters (32-59,
 * 96-119, 148-163) read what `mokka ctl ecc` and `ctl nvlink` raise; the ECC counts per
 * location (7-28) are nvmlDeviceGetMemoryErrorCounter's.
 *
 * The NVLink throughput counters (138, 139: KiB sent and received since the driver loaded,
 * which nvml.h names in place of the deprecated utilization counters; DCGM's NVLink
 * bandwidth is their rate) grow at the GPU's mean traffic: each active link's bandwidth
 * times the mean of its utilization's pattern (all of it with no moving utilization), so
 * the rate a poller derives is steady and agrees over time with GPM's NVLink metrics, which
 * follow the utilization second by second. scopeId names a link, or UINT_MAX all of them. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>

#include "api.h"

/* Later headers than this nvml.h. The clocks event reason counters of NVML 12.8
 * are 74 and 76 (this header's PERF_POLICY_POWER and _SYNC_BOOST) and these. */
#define FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN 251
#define FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN 252
#define FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN 253
#define FI_DEV_RESET_STATUS 226
#define FI_DEV_DRAIN_AND_RESET_STATUS 227
#define FI_DEV_GET_GPU_RECOVERY_ACTION 230
#define FI_DEV_PCIE_OUTBOUND_ATOMICS_MASK 228
#define FI_DEV_PCIE_INBOUND_ATOMICS_MASK 229
#define FI_DEV_REMAPPED_ROWS_COR_INACTIVE 301
#define FI_DEV_REMAPPED_ROWS_UNC_INACTIVE 302
#define ALL_LINKS 0xFFFFFFFFu                  /* scopeId: every NVLink of the GPU */
#define RECOVERY_GPU_RESET 1u                 /* nvmlDeviceGpuRecoveryAction_t */
#define RECOVERY_DRAIN_AND_RESET 4u
#define POWER_SCOPE_GPU 0u
#define POWER_SCOPE_MODULE 1u
#define POWER_SCOPE_MEMORY 2u

static int set_u32(nvmlFieldValue_t *v, unsigned long long x)
{
    v->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
    v->value.uiVal = (unsigned int)x;
    return 1;
}

static int set_u64(nvmlFieldValue_t *v, unsigned long long x)
{
    v->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
    v->value.ullVal = x;
    return 1;
}

static int key_u32(const struct mock_gpu *g, const char *key, nvmlFieldValue_t *v)
{
    unsigned long long x;
    return gpu_u64(g, key, &x) && set_u32(v, x);
}

/* How far `key` lies below T.Limit, Ada on; 0 when the GPU has no T.Limit sensor
 * or the state lacks either reading. T.Limit is the GPU's maximum operating
 * temperature: every capture of a real board from Ada on prints its "GPU Max
 * Operating T.Limit Temp" as 0 C, the shutdown and slowdown rows below zero. */
static int tlimit_margin(const struct mock_gpu *g, const char *key, int *margin)
{
    long long limit, x;
    if (api_pre_ada(g) || !gpu_i64(g, K_THERMAL_MAX_OPERATING_C, &limit) || !gpu_i64(g, key, &x))
        return 0;
    long long d;                                 /* an override can hold any integer */
    if (__builtin_sub_overflow(limit, x, &d) || d > INT_MAX || d < INT_MIN)
        return 0;
    *margin = (int)d;
    return 1;
}

static int tlimit(const struct mock_gpu *g, const char *key, nvmlFieldValue_t *v)
{
    int margin;
    if (!tlimit_margin(g, key, &margin))
        return 0;
    v->valueType = NVML_VALUE_TYPE_SIGNED_INT;
    v->value.siVal = margin;
    return 1;
}

nvmlReturn_t mock_tlimit_temperature(nvmlDevice_t device, int *margin)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!margin)
        return NVML_ERROR_INVALID_ARGUMENT;
    return tlimit_margin(g, K_THERMAL_TEMPERATURE_GPU_C, margin) ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

/* A field the GPU's `refused` block refuses: 1 with its error in v->nvmlReturn. */
static int refused(const struct mock_gpu *g, const char *key, nvmlFieldValue_t *v)
{
    nvmlReturn_t ret = api_refusal(g, key);
    if (ret == NVML_SUCCESS)
        return 0;
    v->nvmlReturn = ret;
    return 1;
}

/* The power fields by scope (scopeId): the GPU's own, its module's (a Grace
 * superchip's), its memory's. The GPU's average is the current draw unless the
 * state keeps one of its own (N/A on boards that average none). */
static int power_field(const struct mock_gpu *g, nvmlFieldValue_t *v)
{
    static const struct { unsigned int id; const char *gpu, *module, *memory; } keys[] = {
        {NVML_FI_DEV_POWER_AVERAGE, K_POWER_AVERAGE_DRAW_MW, K_POWER_MODULE_AVERAGE_DRAW_MW,
         K_POWER_MEMORY_AVERAGE_DRAW_MW},
        {NVML_FI_DEV_POWER_INSTANT, K_POWER_CURRENT_DRAW_MW, K_POWER_MODULE_INSTANT_DRAW_MW,
         K_POWER_MEMORY_INSTANT_DRAW_MW},
        {NVML_FI_DEV_POWER_MIN_LIMIT, K_POWER_MIN_LIMIT_MW, K_POWER_MODULE_MIN_LIMIT_MW, NULL},
        {NVML_FI_DEV_POWER_MAX_LIMIT, K_POWER_MAX_LIMIT_MW, K_POWER_MODULE_MAX_LIMIT_MW, NULL},
        {NVML_FI_DEV_POWER_DEFAULT_LIMIT, K_POWER_DEFAULT_LIMIT_MW, K_POWER_MODULE_DEFAULT_LIMIT_MW, NULL},
        {NVML_FI_DEV_POWER_CURRENT_LIMIT, K_POWER_ENFORCED_LIMIT_MW, K_POWER_MODULE_CURRENT_LIMIT_MW, NULL},
        {NVML_FI_DEV_POWER_REQUESTED_LIMIT, K_POWER_ENFORCED_LIMIT_MW, K_POWER_MODULE_REQUESTED_LIMIT_MW, NULL}};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (keys[i].id != v->fieldId)
            continue;
        if (v->scopeId == POWER_SCOPE_MODULE)
            return key_u32(g, keys[i].module, v);
        if (v->scopeId == POWER_SCOPE_MEMORY)
            return keys[i].memory && key_u32(g, keys[i].memory, v);
        if (v->scopeId != POWER_SCOPE_GPU)
            return 0;
        char raw[MOCK_VALUE_MAX];
        if (v->fieldId == NVML_FI_DEV_POWER_AVERAGE && gpu_raw(g, K_POWER_AVERAGE_DRAW_MW, raw, sizeof raw) == 1)
            return key_u32(g, K_POWER_AVERAGE_DRAW_MW, v);
        return key_u32(g, v->fieldId == NVML_FI_DEV_POWER_AVERAGE ? K_POWER_CURRENT_DRAW_MW : keys[i].gpu, v);
    }
    return 0;
}

static int clocks_event(const struct mock_gpu *g, const char *counter_key, nvmlFieldValue_t *v)
{
    unsigned long long ns;
    return clocks_event_ns(g, counter_key, &ns) && set_u64(v, ns);
}

/* KiB an NVLink has carried each way by v->timestamp (µs; the pinned second when
 * MOCK_NVML_CLOCK is set), at the GPU's mean utilization; link ALL_LINKS sums the active ones. */
static int link_throughput(const struct mock_gpu *g, unsigned int link, nvmlFieldValue_t *v)
{
    unsigned long long mbps, percent;
    unsigned int active = 0, links = 0;
    if (nvlink_count(g) == 0 || !node_u64(g->node, NODE_NVLINK_BANDWIDTH_PER_LINK_MBPS, &mbps))
        return 0;
    if (link == ALL_LINKS) {
        for (unsigned int l = 0; l < NVML_NVLINK_MAX_LINKS; l++)
            links += nvlink_state(g, l, &active) && active;
    } else if (!nvlink_state(g, link, &active)) {
        return 0;
    } else {
        links = active;
    }
    if (!dynamic_mean_utilization(g, &percent) && !gpu_u64(g, K_UTILIZATION_GPU, &percent))
        percent = 0;
    if (percent > 100)
        percent = 100;
    unsigned long long us = g->node->clock_pinned ? g->node->clock * 1000000ull : (unsigned long long)v->timestamp;
    /* MB/s * percent/100 * s = 10^6 B * percent * us / (100 * 10^6 us) = B * percent * us / 10^8; in KiB. */
    unsigned __int128 kib = (unsigned __int128)mbps * links * percent * us / (100ull * 1024ull);
    return set_u64(v, kib > ~0ull ? ~0ull : (unsigned long long)kib);
}

static int link_field(const struct mock_gpu *g, unsigned int fid, unsigned int link, nvmlFieldValue_t *v)
{
    unsigned int active;
    unsigned long long x;
    if (!nvlink_state(g, link, &active))
        return 0;
    if (fid == NVML_FI_DEV_NVLINK_GET_STATE)
        return set_u32(v, active);
    if (fid == NVML_FI_DEV_NVLINK_GET_VERSION) {
        unsigned int version;
        return nvlink_version(g, &version) && set_u32(v, version);
    }
    return node_u64(g->node, NODE_NVLINK_BANDWIDTH_PER_LINK_MBPS, &x) && set_u32(v, active ? x : 0);
}

/* The NVLink error counters' field ids of nvml.h, per counter: links 0-5, their total, links 6-11. */
static const struct { unsigned int counter, first, total, later; } link_errors[] = {
    {NVML_NVLINK_ERROR_DL_CRC_FLIT, NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L0,
     NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL, NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L6},
    {NVML_NVLINK_ERROR_DL_CRC_DATA, NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L0,
     NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL, NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L6},
    {NVML_NVLINK_ERROR_DL_REPLAY, NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L0,
     NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL, NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L6},
    {NVML_NVLINK_ERROR_DL_RECOVERY, NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_L0,
     NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL, NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_L6},
};

/* The sum of counter `counter` over the GPU's links, held at what 64 bits count. */
static int link_error_total(const struct mock_gpu *g, unsigned int counter, nvmlFieldValue_t *v)
{
    unsigned long long total = 0, x;
    if (nvlink_count(g) == 0)
        return 0;
    for (unsigned int link = 0; link < NVML_NVLINK_MAX_LINKS; link++)
        if (nvlink_error_count(g, link, counter, &x) && __builtin_add_overflow(total, x, &total))
            total = ~0ull;
    return set_u64(v, total);
}

/* An NVLink error counter's field: 1 with v set, 0 when the GPU cannot answer it;
 * -1 when `fid` is none of them. The per-link ids of NVML 12 (161 to 163) name the link
 * in scopeId; the CRC one (what NVIDIA's nvidia-smi nvlink -e prints as CRC Errors) is the
 * link's flit CRC counter, the one the data link checks every flit with. */
static int link_error_field(const struct mock_gpu *g, unsigned int fid, unsigned int scope, nvmlFieldValue_t *v)
{
    unsigned long long x;
    if (fid == NVML_FI_DEV_NVLINK_ERROR_DL_CRC)
        return nvlink_error_count(g, scope, NVML_NVLINK_ERROR_DL_CRC_FLIT, &x) && set_u64(v, x);
    if (fid == NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY || fid == NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY)
        return nvlink_error_count(g, scope, fid == NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY ? NVML_NVLINK_ERROR_DL_REPLAY
                                                 : NVML_NVLINK_ERROR_DL_RECOVERY, &x) && set_u64(v, x);
    if (fid >= NVML_FI_DEV_NVLINK_ECC_DATA_ERROR_COUNT_L0 && fid <= NVML_FI_DEV_NVLINK_ECC_DATA_ERROR_COUNT_L11)
        return nvlink_error_count(g, fid - NVML_FI_DEV_NVLINK_ECC_DATA_ERROR_COUNT_L0, NVML_NVLINK_ERROR_DL_ECC_DATA,
                                  &x) && set_u64(v, x);
    if (fid == NVML_FI_DEV_NVLINK_ECC_DATA_ERROR_COUNT_TOTAL)
        return link_error_total(g, NVML_NVLINK_ERROR_DL_ECC_DATA, v);
    for (size_t i = 0; i < sizeof link_errors / sizeof link_errors[0]; i++) {
        unsigned int c = link_errors[i].counter;
        if (fid >= link_errors[i].first && fid < link_errors[i].first + 6)
            return nvlink_error_count(g, fid - link_errors[i].first, c, &x) && set_u64(v, x);
        if (fid >= link_errors[i].later && fid < link_errors[i].later + 6)
            return nvlink_error_count(g, fid - link_errors[i].later + 6, c, &x) && set_u64(v, x);
        if (fid == link_errors[i].total)
            return link_error_total(g, c, v);
    }
    return -1;
}

/* The GPU's recovery action (nvmlDeviceGpuRecoveryAction_t): its failure.recovery_action
 * (a profile's, or `mokka ctl set GPU recovery_action=...`); NONE (0) without one, and
 * for a word that is not one of names.GPU_RECOVERY_ACTIONS (a hand-written override). */
static unsigned int recovery_action(const struct mock_gpu *g)
{
    static const char *const actions[] = MOKKA_GPU_RECOVERY_ACTIONS;
    char word[32];
    if (gpu_raw(g, K_FAILURE_RECOVERY_ACTION, word, sizeof word) != 1)
        return 0;
    for (unsigned int i = 0; i < sizeof actions / sizeof actions[0]; i++)
        if (strcasecmp(word, actions[i]) == 0)
            return i;
    return 0;
}

/* 1 with v's value set, 0 when the state cannot answer. */
static int field(const struct mock_gpu *g, nvmlFieldValue_t *v)
{
    unsigned long long x;
    unsigned int mask;
    int on;
    switch (v->fieldId) {
    case NVML_FI_DEV_ECC_CURRENT:
        return gpu_flag(g, K_ECC_MODE_CURRENT, &on) && set_u32(v, (unsigned int)on);
    case NVML_FI_DEV_ECC_PENDING:
        return gpu_flag(g, K_ECC_MODE_PENDING, &on) && set_u32(v, (unsigned int)on);
    case NVML_FI_DEV_ECC_SBE_VOL_TOTAL:
        return ecc_enabled(g) && gpu_u64(g, K_ECC_ERRORS_VOLATILE_SINGLE_BIT_TOTAL, &x) && set_u64(v, x);
    case NVML_FI_DEV_ECC_DBE_VOL_TOTAL:
        return ecc_enabled(g) && gpu_u64(g, K_ECC_ERRORS_VOLATILE_DOUBLE_BIT_TOTAL, &x) && set_u64(v, x);
    case NVML_FI_DEV_ECC_SBE_AGG_TOTAL:
        return ecc_enabled(g) && gpu_u64(g, K_ECC_ERRORS_AGGREGATE_SINGLE_BIT_TOTAL, &x) && set_u64(v, x);
    case NVML_FI_DEV_ECC_DBE_AGG_TOTAL:
        return ecc_enabled(g) && gpu_u64(g, K_ECC_ERRORS_AGGREGATE_DOUBLE_BIT_TOTAL, &x) && set_u64(v, x);
    case NVML_FI_DEV_MEMORY_TEMP:
        return key_u32(g, K_THERMAL_TEMPERATURE_MEMORY_C, v);
    case NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION:
    case NVML_FI_DEV_ENERGY:
        return gpu_u64(g, K_POWER_TOTAL_ENERGY_CONSUMPTION_MJ, &x) && set_u64(v, x);
    case NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON:
        return nvlink_count(g) > 0 && node_u64(g->node, NODE_NVLINK_BANDWIDTH_PER_LINK_MBPS, &x) && set_u32(v, x);
    case NVML_FI_DEV_NVLINK_LINK_COUNT:
        return gpu_has_prefix(g, K_NVLINK_LINKS ".") && set_u32(v, nvlink_count(g));
    case NVML_FI_DEV_NVLINK_GET_SPEED:
    case NVML_FI_DEV_NVLINK_GET_STATE:
    case NVML_FI_DEV_NVLINK_GET_VERSION:
        return link_field(g, v->fieldId, v->scopeId, v);
    case NVML_FI_DEV_PCIE_REPLAY_COUNTER:
        return key_u32(g, K_PCIE_REPLAY_COUNTER, v);
    case NVML_FI_DEV_PCIE_REPLAY_ROLLOVER_COUNTER:
        return set_u32(v, 0);                     /* nvidia-smi: "Replay Number Rollovers: 0" */
    case NVML_FI_DEV_POWER_AVERAGE:
    case NVML_FI_DEV_POWER_INSTANT:
    case NVML_FI_DEV_POWER_MIN_LIMIT:
    case NVML_FI_DEV_POWER_MAX_LIMIT:
    case NVML_FI_DEV_POWER_DEFAULT_LIMIT:
    case NVML_FI_DEV_POWER_CURRENT_LIMIT:
    case NVML_FI_DEV_POWER_REQUESTED_LIMIT:
        return power_field(g, v);
    case NVML_FI_DEV_TEMPERATURE_SHUTDOWN_TLIMIT:
        return tlimit(g, K_THERMAL_SHUTDOWN_THRESHOLD_C, v);
    case NVML_FI_DEV_TEMPERATURE_SLOWDOWN_TLIMIT:
        return tlimit(g, K_THERMAL_SLOWDOWN_THRESHOLD_C, v);
    case NVML_FI_DEV_TEMPERATURE_GPU_MAX_TLIMIT:
        return tlimit(g, K_THERMAL_MAX_OPERATING_C, v);
    case NVML_FI_DEV_TEMPERATURE_MEM_MAX_TLIMIT:
        return tlimit(g, K_THERMAL_MEMORY_MAX_C, v);
    case FI_DEV_PCIE_OUTBOUND_ATOMICS_MASK:
        return board_atomics(g, 0, &mask) && set_u32(v, mask);
    case FI_DEV_PCIE_INBOUND_ATOMICS_MASK:
        return board_atomics(g, 1, &mask) && set_u32(v, mask);
    case FI_DEV_REMAPPED_ROWS_COR_INACTIVE:
        return key_u32(g, K_REMAPPED_ROWS_CORRECTABLE_INACTIVE, v);
    case FI_DEV_REMAPPED_ROWS_UNC_INACTIVE:
        return key_u32(g, K_REMAPPED_ROWS_UNCORRECTABLE_INACTIVE, v);
    case NVML_FI_DEV_PERF_POLICY_POWER:           /* CLOCKS_EVENT_REASON_SW_POWER_CAP */
        return perf_policy_ns(g, NVML_PERF_POLICY_POWER, &x) && set_u64(v, x);
    case NVML_FI_DEV_PERF_POLICY_SYNC_BOOST:      /* CLOCKS_EVENT_REASON_SYNC_BOOST */
        return perf_policy_ns(g, NVML_PERF_POLICY_SYNC_BOOST, &x) && set_u64(v, x);
    case NVML_FI_DEV_PERF_POLICY_THERMAL:
        return perf_policy_ns(g, NVML_PERF_POLICY_THERMAL, &x) && set_u64(v, x);
    case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX:
    case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX:
        return link_throughput(g, v->scopeId, v);
    case NVML_FI_DEV_NVSWITCH_CONNECTED_LINK_COUNT:
        return nvlink_count(g) > 0 && set_u32(v, nvlink_switch_links(g));
    case NVML_FI_DEV_PCIE_COUNT_CORRECTABLE_ERRORS:
        return set_u32(v, 0);                     /* a clean link's count, as the replay counter's */
    case FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN:
        return clocks_event(g, K_CLOCKS_THROTTLE_REASONS_COUNTERS_SW_THERMAL_SLOWDOWN_US, v);
    case FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN:
        return clocks_event(g, K_CLOCKS_THROTTLE_REASONS_COUNTERS_HW_THERMAL_SLOWDOWN_US, v);
    case FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN:
        return clocks_event(g, K_CLOCKS_THROTTLE_REASONS_COUNTERS_HW_POWER_BRAKE_SLOWDOWN_US, v);
    case FI_DEV_RESET_STATUS:                     /* "Reset Required": the recovery action says so */
        return refused(g, K_REFUSED_RESET_STATUS, v) || set_u32(v, recovery_action(g) == RECOVERY_GPU_RESET);
    case FI_DEV_DRAIN_AND_RESET_STATUS:           /* "Drain and Reset Recommended" */
        return refused(g, K_REFUSED_RESET_STATUS, v) || set_u32(v, recovery_action(g) == RECOVERY_DRAIN_AND_RESET);
    case FI_DEV_GET_GPU_RECOVERY_ACTION:
        return set_u32(v, recovery_action(g));
    default: {
        int found = link_error_field(g, v->fieldId, v->scopeId, v);
        return found > 0;
    }
    }
}

/* The ECC counts per location (7-17 volatile, 18-28 aggregate: single then double bit for
 * L1, L2, device memory, register file, texture memory, then the CBU's double bit), as
 * nvmlDeviceGetMemoryErrorCounter counts them: 1 with v set, 0 when it cannot answer, -1 for
 * another field. */
static int ecc_location_field(nvmlDevice_t device, nvmlFieldValue_t *v)
{
    static const nvmlMemoryLocation_t where[] = {NVML_MEMORY_LOCATION_L1_CACHE, NVML_MEMORY_LOCATION_L2_CACHE,
                                                 NVML_MEMORY_LOCATION_DEVICE_MEMORY,
                                                 NVML_MEMORY_LOCATION_REGISTER_FILE,
                                                 NVML_MEMORY_LOCATION_TEXTURE_MEMORY};
    unsigned int fid = v->fieldId, k;
    nvmlEccCounterType_t counter;
    if (fid >= NVML_FI_DEV_ECC_SBE_VOL_L1 && fid <= NVML_FI_DEV_ECC_DBE_VOL_CBU) {
        k = fid - NVML_FI_DEV_ECC_SBE_VOL_L1;
        counter = NVML_VOLATILE_ECC;
    } else if (fid >= NVML_FI_DEV_ECC_SBE_AGG_L1 && fid <= NVML_FI_DEV_ECC_DBE_AGG_CBU) {
        k = fid - NVML_FI_DEV_ECC_SBE_AGG_L1;
        counter = NVML_AGGREGATE_ECC;
    } else {
        return -1;
    }
    nvmlMemoryLocation_t location = k / 2 < sizeof where / sizeof where[0] ? where[k / 2] : NVML_MEMORY_LOCATION_CBU;
    nvmlMemoryErrorType_t type = k % 2 == 0 && k / 2 < sizeof where / sizeof where[0]
                                     ? NVML_MEMORY_ERROR_TYPE_CORRECTED : NVML_MEMORY_ERROR_TYPE_UNCORRECTED;
    unsigned long long count;
    return nvmlDeviceGetMemoryErrorCounter(device, type, counter, location, &count) == NVML_SUCCESS &&
           set_u64(v, count);
}

/* The memory health fields, each as its own call answers it (ecc.c): the remapped rows from
 * Ampere on, the retired pages before; 1 with v set, 0 when the board cannot answer, -1 for
 * another field. */
static int memory_health_field(nvmlDevice_t device, nvmlFieldValue_t *v)
{
    unsigned int rows[4];
    nvmlEnableState_t pending;
    unsigned int count = 0;
    switch (v->fieldId) {
    case NVML_FI_DEV_REMAPPED_COR:
    case NVML_FI_DEV_REMAPPED_UNC:
    case NVML_FI_DEV_REMAPPED_PENDING:
    case NVML_FI_DEV_REMAPPED_FAILURE:
        return nvmlDeviceGetRemappedRows(device, &rows[0], &rows[1], &rows[2], &rows[3]) == NVML_SUCCESS &&
               set_u32(v, rows[v->fieldId - NVML_FI_DEV_REMAPPED_COR]);
    case NVML_FI_DEV_RETIRED_SBE:
    case NVML_FI_DEV_RETIRED_DBE: {
        nvmlPageRetirementCause_t cause = v->fieldId == NVML_FI_DEV_RETIRED_SBE
                                              ? NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS
                                              : NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR;
        nvmlReturn_t ret = nvmlDeviceGetRetiredPages(device, cause, &count, NULL);
        return (ret == NVML_SUCCESS || ret == NVML_ERROR_INSUFFICIENT_SIZE) && set_u32(v, count);
    }
    case NVML_FI_DEV_RETIRED_PENDING:
        return nvmlDeviceGetRetiredPagesPendingStatus(device, &pending) == NVML_SUCCESS &&
               set_u32(v, pending == NVML_FEATURE_ENABLED);
    default:
        return ecc_location_field(device, v);
    }
}

nvmlReturn_t DECLDIR nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount, nvmlFieldValue_t *values)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (valuesCount <= 0 || !values)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct timeval now;
    gettimeofday(&now, NULL);
    long long stamp = (long long)now.tv_sec * 1000000 + now.tv_usec;
    for (int i = 0; i < valuesCount; i++) {
        nvmlFieldValue_t *v = &values[i];
        memset(&v->value, 0, sizeof v->value);
        v->timestamp = stamp;
        v->latencyUsec = 0;
        v->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
        v->nvmlReturn = NVML_SUCCESS;
        int health = memory_health_field(device, v);
        if (health == 0 || (health < 0 && !field(g, v)))
            v->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
    }
    return NVML_SUCCESS;
}
