/* libmockfs: /sys/bus/pci and /sys/devices/pci* into $MOCK_PCI_ROOT (unset:
 * every path passes), where the node agent stages the PCI tree. */
#include "mokka_names.h"
#include "shim.h"

static const struct mokka_prefix prefixes[] = {
    {"/sys/bus/pci", 1},
    {"/sys/devices/pci", 0},            /* pci0000:00, pci0000:80, ... */
    {NULL, 0},
};

void mokka_shim_configure(struct mokka_shim_config *out)
{
    out->root = mokka_shim_getenv(MOKKA_ENV_PCI_ROOT);
    out->prefixes = prefixes;
}
