/* libibmocksys: /sys/class/infiniband* and /dev/infiniband into $MOCK_IB_ROOT,
 * while MOCK_IB is sysfs or full (off, unset or unknown: every path passes). */
#include <string.h>

#include "mokka_names.h"
#include "shim.h"

static const struct mokka_prefix prefixes[] = {
    {"/sys/class/infiniband", 0},       /* infiniband, infiniband_mad, _verbs, _cm */
    {"/dev/infiniband", 1},
    {NULL, 0},
};

void mokka_shim_configure(struct mokka_shim_config *out)
{
    const char *tier = mokka_shim_getenv(MOKKA_ENV_IB);
    int on = tier != NULL && (strcmp(tier, MOKKA_IB_SYSFS) == 0 || strcmp(tier, MOKKA_IB_FULL) == 0);
    out->root = on ? mokka_shim_getenv(MOKKA_ENV_IB_ROOT) : NULL;
    out->prefixes = prefixes;
}
