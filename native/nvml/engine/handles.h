/* What a caller that never looks inside the state needs of the engine (handles.c):
 * whether nvmlInit holds, whether a handle is one of this library's, and nvmlInit's
 * way in. The generated stubs, the events and the export table reach the engine
 * only through here (../api/hooks.h).
 */
#ifndef MOKKA_NVML_HANDLES_H
#define MOKKA_NVML_HANDLES_H

#include <nvml.h>

struct mig_hooks;

/* NVML_SUCCESS while nvmlInit* holds a reference, else NVML_ERROR_UNINITIALIZED. */
nvmlReturn_t mock_require_init(void);

/* NVML_SUCCESS if `device` is a handle this library handed out and still visible,
 * NVML_ERROR_INVALID_ARGUMENT otherwise (NULL included), NVML_ERROR_UNINITIALIZED
 * before nvmlInit. */
nvmlReturn_t mock_check_device(nvmlDevice_t device);

/* nvmlInit*: take a reference; the first builds a node (its MIG part opened by `mig`)
 * and publishes it unless it equals the published one. */
nvmlReturn_t mock_init(const struct mig_hooks *mig);
/* nvmlShutdown: drop a reference (NVML_ERROR_UNINITIALIZED when none is held). */
nvmlReturn_t mock_shutdown(void);

#endif
