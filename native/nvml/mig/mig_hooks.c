/* What the engine calls of MIG (struct mig_hooks of ../engine/engine.h): the node's
 * partitions (mig_state.c), the MIG devices MOCK_NVML_VISIBLE_DEVICES names
 * (mig_view.c) and what a MIG handle answers a query of a whole GPU (mig_device.c).
 * nvmlInit (../api/init.c) hands this table to the engine, which never calls MIG
 * by name.
 */
#include "mig.h"

const struct mig_hooks mig_hooks = {
    .open = mig_node_open,
    .free = mig_node_free,
    .same = mig_node_same,
    .keep_listed = mig_view_keep_listed,
    .refuse = mig_refuse,
};
