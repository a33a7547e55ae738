/* Mokka's private calls of the mock NVML library: what its own clients (our
 * nvidia-smi, check-fabric, `mokka ctl`, the mock CUDA driver of native/cuda)
 * ask beyond NVML's API. native/nvml/api/private.c, processes.c, process_sweep.c, setters.c and
 * native/nvml/mig/mig_rules.c define them; a client finds them with dlsym, and a library without them is not
 * Mokka's.
 */
#ifndef MOKKA_NVML_PRIVATE_H
#define MOKKA_NVML_PRIVATE_H

#include <nvml.h>

#ifndef MOKKA_EXPORT
#define MOKKA_EXPORT __attribute__((visibility("default")))
#endif

/* Where the node's files are: MOKKA_NODE_PATH_PROFILE, _OVERRIDES, _XID_EVENTS. */
MOKKA_EXPORT nvmlReturn_t nvmlMokkaGetNodePath(unsigned int which, char *path, unsigned int length);
/* Which GPU of the profile visible index `index` is, lost or not. */
MOKKA_EXPORT nvmlReturn_t nvmlMokkaGetDeviceIdentity(unsigned int index, unsigned int *physicalIndex,
                                                     char *uuid, unsigned int length);
/* A value of the GPU's `cuda` block (`key` one of mokka_keys.h's K_CUDA_...): the
 * board values the CUDA driver reports that NVML has no call for. NOT_SUPPORTED
 * when the state has none, INVALID_ARGUMENT for a key outside the block. */
MOKKA_EXPORT nvmlReturn_t nvmlMokkaGetDeviceCudaValue(nvmlDevice_t device, const char *key,
                                                      long long *value);
/* This process holds a CUDA context on `device` and `usedBytes` of its memory:
 * its record, which NVML's process list and memory used count on every process
 * of the node while this process lives (processes.c). */
MOKKA_EXPORT nvmlReturn_t nvmlMokkaSetProcessMemory(nvmlDevice_t device, unsigned long long usedBytes);
/* This process no longer holds a context on `device`: its record goes. */
MOKKA_EXPORT nvmlReturn_t nvmlMokkaReleaseProcess(nvmlDevice_t device);
/* The node agent's sweep of a records directory (`dir`, names.PROCESS_RECORDS_DIR):
 * removes every record and stale temp file no live process holds in each user's
 * directory, of every owner this process may remove (root: all), never through a
 * link. Needs no nvmlInit. Returns how many it removed, or -1 (errno set) when
 * `dir` cannot be read. */
MOKKA_EXPORT int nvmlMokkaSweepProcessRecords(const char *dir);
/* 1 when the entry `name` of the records directory open as `dir` is not a user's
 * directory (processes.c: a directory named by its owner's uid that only the owner
 * may write), so no reader opens it and the agent may remove it; 0 when it is one;
 * -1 (errno set) when it cannot be looked at. Never follows a link. */
MOKKA_EXPORT int nvmlMokkaProcessRecordsStray(int dir, const char *name);

/* What NVML's setters set on the profile's GPU `physicalIndex` (visible or not, lost or
 * not) back to the board's, as a reset does (the ECC mode set pending becomes current):
 * what `mokka ctl reset` asks. NO_PERMISSION when the settings cannot be written (setters.c). */
MOKKA_EXPORT nvmlReturn_t nvmlMokkaResetDeviceSettings(unsigned int physicalIndex);

/* How the calling thread reads ECC counts and NVLink error counters: as every NVML caller
 * does, less what nvmlDeviceClearEccErrorCounts cleared and nvmlDeviceResetNvLinkErrorCounters
 * reset (0), or whole, as the layers hold them (1): what `mokka ctl ecc` and `ctl nvlink`
 * add an injection to, so the counts they write grow from there. */
MOKKA_EXPORT void nvmlMokkaReadWholeErrorCounts(unsigned int whole);

/* Where NVIDIA's driver puts GPU instances created one after another without a
 * placement on an empty GPU, by the library's one placement rule (mig/mig_rules.c): what
 * compile plans a boot layout with (mokka/core/mig.py). `profiles` holds `nprofiles`
 * rows of MOKKA_MIG_PLACE_ROW numbers: instances, placement size, how many placements,
 * and their starts (8 at most); `create` the `count` row indices to create, in order.
 * Fills starts[i] for each placed and *placed with how many; INSUFFICIENT_RESOURCES
 * at the first that does not fit. Needs no nvmlInit. */
#define MOKKA_MIG_PLACE_ROW 11
MOKKA_EXPORT nvmlReturn_t nvmlMokkaMigPlaceGpuInstances(unsigned int nprofiles, const unsigned int *profiles,
                                                        unsigned int count, const unsigned int *create,
                                                        unsigned int *starts, unsigned int *placed);

#endif
