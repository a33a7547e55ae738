/* The API surface (native/nvml/api/): NVML's calls over the engine and MIG, and the
 * shapes most of them share.
 *
 * The top room: its files include the engine's headers (../engine/) and MIG's
 * (../mig/), and nothing below calls into it. The one-key getters are generated
 * into getters.c from ../getters.py (../gen_getters.py) and every other name of
 * nvml.h into stubs.c (../gen_stubs.py); both belong to this room.
 */
#ifndef MOKKA_NVML_API_H
#define MOKKA_NVML_API_H

#include <nvml.h>

#include "engine/engine.h"
#include "hooks.h"

/* --- nvlink.c ----------------------------------------------------------- */

/* The GPU's NVLinks (0 when none); whether link number `link` exists and is active. */
unsigned int nvlink_count(const struct mock_gpu *g);
int nvlink_state(const struct mock_gpu *g, unsigned int link, unsigned int *active);
/* The GPU's NVLink version as NVML answers it (an nvmlNvlinkVersion_t): 1, or 0 when the
 * profile names no generation it knows (nvlink.c). */
int nvlink_version(const struct mock_gpu *g, unsigned int *version);
/* The GPU's active NVLinks whose remote end is an NVSwitch (nvlink.c). */
unsigned int nvlink_switch_links(const struct mock_gpu *g);
/* Link `link`'s error counter `counter` (nvmlNvLinkErrorCounter_t): 0 when the GPU has no such link. */
int nvlink_error_count(const struct mock_gpu *g, unsigned int link, unsigned int counter, unsigned long long *out);

/* --- api.c: the shapes most queries share -------------------------------- */

nvmlReturn_t api_copy_string(const char *value, char *buf, unsigned int length);
nvmlReturn_t api_u32(nvmlDevice_t device, const char *key, unsigned int *out);
nvmlReturn_t api_u64(nvmlDevice_t device, const char *key, unsigned long long *out);
nvmlReturn_t api_string(nvmlDevice_t device, const char *key, char *buf, unsigned int length);
nvmlReturn_t api_enabled(nvmlDevice_t device, const char *key, nvmlEnableState_t *out);
/* Fill an nvmlPciInfo_t from a bus id text ("00000000:1A:00.0" or "0000:1a:00.0"). */
int api_parse_bus_id(const char *text, unsigned int *domain, unsigned int *bus,
                     unsigned int *device, unsigned int *function);
void api_fill_pci(nvmlPciInfo_t *pci, unsigned int domain, unsigned int bus, unsigned int device,
                  unsigned int function, unsigned int device_id, unsigned int subsystem_id);
/* Whether the GPU's architecture comes before `generation` (a lower-case name: "ampere",
 * "ada", ...): 1, 0 for that one, a later one or a name not known, -1 when the state names
 * no architecture. */
int api_arch_before(const struct mock_gpu *g, const char *generation);
/* api_arch_before(g, "ada") == 1. */
int api_pre_ada(const struct mock_gpu *g);
/* NVML_SUCCESS unless the GPU's `refused` block names the reading `key` (K_REFUSED_...):
 * then the error its word stands for (names.REFUSALS). */
nvmlReturn_t api_refusal(const struct mock_gpu *g, const char *key);

/* --- ecc.c, sram.c: ECC counters ---------------------------------------- */

/* Whether the GPU's ECC mode is enabled now: its counters exist only then. */
int ecc_enabled(const struct mock_gpu *g);
/* An SRAM count of a scope (volatile or aggregate), as nvmlDeviceGetMemoryErrorCounter
 * gives it: 1 and *out, or 0 when ECC is off, the state has no ecc.sram or the sum
 * does not fit. */
int sram_count(const struct mock_gpu *g, int corrected, int aggregate, unsigned long long *out);

/* --- board.c ------------------------------------------------------------ */

/* The GPU's PCIe atomic operations of a direction (NVML_PCIE_ATOMICS_CAP_* bits):
 * 1, or 0 when the state lists none. */
int board_atomics(const struct mock_gpu *g, int inbound, unsigned int *mask);

/* --- violations.c: how long a reason held the clocks back -------------------- */

/* clocks_throttle_reasons.counters.<reason>_us in nanoseconds: 1, or 0 when the
 * state has no such counter or it does not fit. */
int clocks_event_ns(const struct mock_gpu *g, const char *counter_key, unsigned long long *ns);
/* A perf policy's violation time in ns (nvmlPerfPolicyType_t): 1, or 0 when the state keeps
 * no counter for it (violations.c). */
int perf_policy_ns(const struct mock_gpu *g, unsigned int policy, unsigned long long *ns);

/* --- drain.c: the drain states ---------------------------------------------------- */

#endif
