/* What the generated stubs, the events and the export table need from the core.
 *
 * The core (init.c and friends) implements these; stubs.c, events.c and
 * export_table.c call them, so those files never look inside the state.
 */
#ifndef MOKKA_NVML_HOOKS_H
#define MOKKA_NVML_HOOKS_H

#include <nvml.h>

/* NVML_SUCCESS while nvmlInit* holds a reference, else NVML_ERROR_UNINITIALIZED. */
nvmlReturn_t mock_require_init(void);

/* NVML_SUCCESS if `device` is a handle this library handed out and still visible,
 * NVML_ERROR_INVALID_ARGUMENT otherwise (NULL included), NVML_ERROR_UNINITIALIZED
 * before nvmlInit. */
nvmlReturn_t mock_check_device(nvmlDevice_t device);

/* The number of NVLinks that join two visible devices (0 when none or when
 * a == b); what `nvidia-smi topo -m` prints as NV<n>. */
nvmlReturn_t mock_nvlinks_between(nvmlDevice_t a, nvmlDevice_t b, unsigned int *links);

#endif
