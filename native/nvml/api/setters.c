/* NVML's setters: power limit, persistence, compute and accounting mode, application and
 * locked clocks (graphics and memory), ECC mode, who may set application clocks. Each is
 * NVML's permission rule (a caller that is not root gets NO_PERMISSION, as the driver
 * answers one; application clocks once their restriction is lifted excepted), then the
 * board's bounds (its power limits, its supported clocks: INVALID_ARGUMENT past them),
 * then a change of the node's settings.nvml (../engine/settings.c), which every process
 * on the node and in every container reads back through the same getters. A MIG device
 * is none of these calls' target (NOT_SUPPORTED, as on the driver); a reset (reset.c)
 * clears what a reset clears.
 */
#define _GNU_SOURCE
#include <unistd.h>

#include "api.h"
#include "mokka_private.h"

/* The checks every setter makes: the handle, then the caller. */
static nvmlReturn_t target(nvmlDevice_t device, const struct mock_gpu **g)
{
    nvmlReturn_t ret = mock_gpu_of(device, g);
    if (ret != NVML_SUCCESS)
        return ret;
    return geteuid() == 0 ? NVML_SUCCESS : NVML_ERROR_NO_PERMISSION;
}

static nvmlReturn_t change(const struct mock_gpu *g, settings_edit edit, void *arg)
{
    return settings_change(g->node, g->phys, edit, arg);
}

/* --- power limit ---------------------------------------------------------------------- */

static nvmlReturn_t set_power(const struct mock_gpu *g, struct gpu_settings *s, void *arg)
{
    unsigned int mw = *(unsigned int *)arg;
    if (!settings_power_allowed(g, mw))
        return NVML_ERROR_INVALID_ARGUMENT;
    s->power_limit_mw = mw;
    return NVML_SUCCESS;
}

static nvmlReturn_t power_limit(nvmlDevice_t device, unsigned int mw)
{
    const struct mock_gpu *g;
    unsigned long long lo, hi;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret == NVML_SUCCESS && (!gpu_u64(g, K_POWER_MIN_LIMIT_MW, &lo) || !gpu_u64(g, K_POWER_MAX_LIMIT_MW, &hi)))
        return NVML_ERROR_NOT_SUPPORTED;          /* no limits the board reports: none to set */
    if (ret == NVML_SUCCESS)
        ret = target(device, &g);
    return ret != NVML_SUCCESS ? ret : change(g, set_power, &mw);
}

nvmlReturn_t DECLDIR nvmlDeviceSetPowerManagementLimit(nvmlDevice_t device, unsigned int limit)
{
    return power_limit(device, limit);
}

nvmlReturn_t DECLDIR nvmlDeviceSetPowerManagementLimit_v2(nvmlDevice_t device, nvmlPowerValue_v2_t *powerValue)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!powerValue)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (powerValue->version != nvmlPowerValue_v2)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (powerValue->powerScope != NVML_POWER_SCOPE_GPU)
        return NVML_ERROR_NOT_SUPPORTED;          /* the module's and memory's limits are not the GPU's */
    return power_limit(device, powerValue->powerValueMw);
}

/* --- modes ------------------------------------------------------------------------------- */

static nvmlReturn_t set_persistence(const struct mock_gpu *g, struct gpu_settings *s, void *arg)
{
    (void)g;
    s->persistence = *(int *)arg;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceSetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t mode)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (mode != NVML_FEATURE_DISABLED && mode != NVML_FEATURE_ENABLED)
        return NVML_ERROR_INVALID_ARGUMENT;
    int on = mode == NVML_FEATURE_ENABLED;
    ret = target(device, &g);
    return ret != NVML_SUCCESS ? ret : change(g, set_persistence, &on);
}

static nvmlReturn_t set_compute(const struct mock_gpu *g, struct gpu_settings *s, void *arg)
{
    (void)g;
    s->compute_mode = *(int *)arg;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceSetComputeMode(nvmlDevice_t device, nvmlComputeMode_t mode)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if ((unsigned int)mode >= NVML_COMPUTEMODE_COUNT)
        return NVML_ERROR_INVALID_ARGUMENT;
    int m = (int)mode;
    ret = target(device, &g);
    return ret != NVML_SUCCESS ? ret : change(g, set_compute, &m);
}

static nvmlReturn_t set_accounting(const struct mock_gpu *g, struct gpu_settings *s, void *arg)
{
    (void)g;
    s->accounting = *(int *)arg;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceSetAccountingMode(nvmlDevice_t device, nvmlEnableState_t mode)
{
    const struct mock_gpu *g;
    char v[32];
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (mode != NVML_FEATURE_DISABLED && mode != NVML_FEATURE_ENABLED)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (gpu_str(g, K_ACCOUNTING_MODE, v, sizeof v) != 1)
        return NVML_ERROR_NOT_SUPPORTED;          /* a board that reports no accounting mode has none */
    int on = mode == NVML_FEATURE_ENABLED;
    ret = target(device, &g);
    return ret != NVML_SUCCESS ? ret : change(g, set_accounting, &on);
}

/* ECC: the mode set is pending; a reset of the GPU makes it current (settings_reset). */
static nvmlReturn_t set_ecc(const struct mock_gpu *g, struct gpu_settings *s, void *arg)
{
    if (s->ecc_current < 0)
        s->ecc_current = ecc_enabled(g);
    s->ecc_pending = *(int *)arg;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceSetEccMode(nvmlDevice_t device, nvmlEnableState_t ecc)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (ecc != NVML_FEATURE_DISABLED && ecc != NVML_FEATURE_ENABLED)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!settings_ecc_supported(g))
        return NVML_ERROR_NOT_SUPPORTED;
    int on = ecc == NVML_FEATURE_ENABLED;
    ret = target(device, &g);
    return ret != NVML_SUCCESS ? ret : change(g, set_ecc, &on);
}

/* --- clocks ------------------------------------------------------------------------------ */

struct clock_pair {
    unsigned int a, b;
};

static nvmlReturn_t set_app_clocks(const struct mock_gpu *g, struct gpu_settings *s, void *arg)
{
    const struct clock_pair *c = arg;
    if (!settings_clocks_supported(g, c->a, c->b))
        return NVML_ERROR_INVALID_ARGUMENT;
    s->app_memory_mhz = c->a;
    s->app_graphics_mhz = c->b;
    return NVML_SUCCESS;
}

static nvmlReturn_t reset_app_clocks(const struct mock_gpu *g, struct gpu_settings *s, void *arg)
{
    (void)g;
    (void)arg;
    s->app_memory_mhz = s->app_graphics_mhz = 0;
    return NVML_SUCCESS;
}

/* The handle, the board's application clocks (a board whose NVML refuses to read them
 * refuses to set them). */
static nvmlReturn_t app_clocks_of(nvmlDevice_t device, const struct mock_gpu **g)
{
    nvmlReturn_t ret = mock_gpu_of(device, g);
    if (ret == NVML_SUCCESS)
        ret = api_refusal(*g, K_REFUSED_APPLICATIONS_CLOCKS);
    if (ret == NVML_SUCCESS && gpu_list_len(*g, K_SUPPORTED_CLOCKS_MEMORY_CLOCKS) == 0)
        ret = NVML_ERROR_NOT_SUPPORTED;
    return ret;
}

/* Application clocks are restricted to root until nvmlDeviceSetAPIRestriction lifts it. */
static int app_clocks_restricted(const struct mock_gpu *g)
{
    struct gpu_settings s;
    settings_get(g->node, g->phys, &s);
    return s.app_clocks_restricted != 0;
}

/* ... then the caller: root, or anyone while the restriction is lifted. */
static nvmlReturn_t app_target(nvmlDevice_t device, const struct mock_gpu **g)
{
    nvmlReturn_t ret = app_clocks_of(device, g);
    if (ret != NVML_SUCCESS)
        return ret;
    return geteuid() == 0 || !app_clocks_restricted(*g) ? NVML_SUCCESS : NVML_ERROR_NO_PERMISSION;
}

nvmlReturn_t DECLDIR nvmlDeviceSetApplicationsClocks(nvmlDevice_t device, unsigned int memClockMHz,
                                                     unsigned int graphicsClockMHz)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = app_target(device, &g);
    struct clock_pair c = {memClockMHz, graphicsClockMHz};
    return ret != NVML_SUCCESS ? ret : change(g, set_app_clocks, &c);
}

nvmlReturn_t DECLDIR nvmlDeviceResetApplicationsClocks(nvmlDevice_t device)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = app_target(device, &g);
    return ret != NVML_SUCCESS ? ret : change(g, reset_app_clocks, NULL);
}

/* Who may set application clocks (NVML_RESTRICTED_API_SET_APPLICATION_CLOCKS): root only,
 * as the driver starts, or anyone. Auto boost, the other restricted API, is none a
 * data-center board offers since Volta: NOT_SUPPORTED, as nvmlDeviceGetAutoBoostedClocksEnabled. */
static nvmlReturn_t restriction_of(nvmlDevice_t device, nvmlRestrictedAPI_t api, const struct mock_gpu **g)
{
    nvmlReturn_t ret = mock_gpu_of(device, g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (api == NVML_RESTRICTED_API_SET_AUTO_BOOSTED_CLOCKS)
        return NVML_ERROR_NOT_SUPPORTED;
    if (api != NVML_RESTRICTED_API_SET_APPLICATION_CLOCKS)
        return NVML_ERROR_INVALID_ARGUMENT;
    return app_clocks_of(device, g);
}

nvmlReturn_t DECLDIR nvmlDeviceGetAPIRestriction(nvmlDevice_t device, nvmlRestrictedAPI_t apiType,
                                                 nvmlEnableState_t *isRestricted)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = restriction_of(device, apiType, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!isRestricted)
        return NVML_ERROR_INVALID_ARGUMENT;
    *isRestricted = app_clocks_restricted(g) ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

static nvmlReturn_t set_restriction(const struct mock_gpu *g, struct gpu_settings *s, void *arg)
{
    (void)g;
    s->app_clocks_restricted = *(int *)arg;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceSetAPIRestriction(nvmlDevice_t device, nvmlRestrictedAPI_t apiType,
                                                 nvmlEnableState_t isRestricted)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = restriction_of(device, apiType, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (isRestricted != NVML_FEATURE_DISABLED && isRestricted != NVML_FEATURE_ENABLED)
        return NVML_ERROR_INVALID_ARGUMENT;
    int on = isRestricted == NVML_FEATURE_ENABLED;
    ret = target(device, &g);
    return ret != NVML_SUCCESS ? ret : change(g, set_restriction, &on);
}

/* NVML's symbolic limits (nvmlClockLimitId_t): both or neither, TDP the board's maximum. */
static nvmlReturn_t set_locked(const struct mock_gpu *g, struct gpu_settings *s, void *arg)
{
    const struct clock_pair *c = arg;
    unsigned int lo, hi, min = c->a, max = c->b;
    if (!settings_graphics_range(g, &lo, &hi))
        return NVML_ERROR_NOT_SUPPORTED;
    int sym_min = min > NVML_CLOCK_LIMIT_ID_RANGE_START, sym_max = max > NVML_CLOCK_LIMIT_ID_RANGE_START;
    if (sym_min != sym_max)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (sym_min) {
        if ((min != NVML_CLOCK_LIMIT_ID_TDP && min != NVML_CLOCK_LIMIT_ID_UNLIMITED) ||
            (max != NVML_CLOCK_LIMIT_ID_TDP && max != NVML_CLOCK_LIMIT_ID_UNLIMITED))
            return NVML_ERROR_INVALID_ARGUMENT;
        if (min == NVML_CLOCK_LIMIT_ID_UNLIMITED && max == NVML_CLOCK_LIMIT_ID_UNLIMITED) {
            s->locked_min_mhz = s->locked_max_mhz = 0;
            return NVML_SUCCESS;
        }
        min = min == NVML_CLOCK_LIMIT_ID_TDP ? hi : lo;
        max = hi;
    }
    if (min > max || min < lo || max > hi)
        return NVML_ERROR_INVALID_ARGUMENT;
    s->locked_min_mhz = min;
    s->locked_max_mhz = max;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceSetGpuLockedClocks(nvmlDevice_t device, unsigned int minGpuClockMHz,
                                                  unsigned int maxGpuClockMHz)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = target(device, &g);
    struct clock_pair c = {minGpuClockMHz, maxGpuClockMHz};
    return ret != NVML_SUCCESS ? ret : change(g, set_locked, &c);
}

nvmlReturn_t DECLDIR nvmlDeviceResetGpuLockedClocks(nvmlDevice_t device)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = target(device, &g);
    struct clock_pair c = {NVML_CLOCK_LIMIT_ID_UNLIMITED, NVML_CLOCK_LIMIT_ID_UNLIMITED};
    return ret != NVML_SUCCESS ? ret : change(g, set_locked, &c);
}

static nvmlReturn_t set_memory_locked(const struct mock_gpu *g, struct gpu_settings *s, void *arg)
{
    const struct clock_pair *c = arg;
    unsigned int lo, hi;
    if (!settings_memory_range(g, &lo, &hi))
        return NVML_ERROR_NOT_SUPPORTED;
    if (c->a == 0 && c->b == 0) {                 /* the reset */
        s->mem_locked_min_mhz = s->mem_locked_max_mhz = 0;
        return NVML_SUCCESS;
    }
    if (c->a > c->b || c->a < lo || c->b > hi)
        return NVML_ERROR_INVALID_ARGUMENT;
    s->mem_locked_min_mhz = c->a;
    s->mem_locked_max_mhz = c->b;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceSetMemoryLockedClocks(nvmlDevice_t device, unsigned int minMemClockMHz,
                                                     unsigned int maxMemClockMHz)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = target(device, &g);
    struct clock_pair c = {minMemClockMHz, maxMemClockMHz};
    if (ret == NVML_SUCCESS && c.a == 0 && c.b == 0)
        return NVML_ERROR_INVALID_ARGUMENT;       /* no clock: the reset is its own call */
    return ret != NVML_SUCCESS ? ret : change(g, set_memory_locked, &c);
}

nvmlReturn_t DECLDIR nvmlDeviceResetMemoryLockedClocks(nvmlDevice_t device)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = target(device, &g);
    struct clock_pair c = {0, 0};
    return ret != NVML_SUCCESS ? ret : change(g, set_memory_locked, &c);
}

/* --- Mokka's own: what `mokka ctl reset` clears --------------------------------------------- */

nvmlReturn_t nvmlMokkaResetDeviceSettings(unsigned int physicalIndex)
{
    const struct mock_node *n = mock_node();
    if (!n)
        return NVML_ERROR_UNINITIALIZED;
    if (physicalIndex >= n->count)
        return NVML_ERROR_INVALID_ARGUMENT;
    return settings_reset(n, physicalIndex);
}
