/* What the generated stubs, the events and the export table need of the API room.
 *
 * The rest of this room (xid.c, reset.c, system.c, fields.c, board.c, process_util.c)
 * implements these over the state; stubs.c, events.c and export_table.c call them, and
 * the engine's handle checks (../engine/handles.h), so those files never look inside
 * the state.
 */
#ifndef MOKKA_NVML_HOOKS_H
#define MOKKA_NVML_HOOKS_H

#include <stddef.h>

#include <nvml.h>

#include "engine/handles.h"

/* The number of NVLinks that join two visible devices (0 when none or when
 * a == b); what `nvidia-smi topo -m` prints as NV<n>. */
nvmlReturn_t mock_nvlinks_between(nvmlDevice_t a, nvmlDevice_t b, unsigned int *links);

/* --- xid.c: the Xid events of the kernellog daemon ---------------------------- */

struct mock_xid_event {
    unsigned long long seq;            /* never reused; a set delivers those newer than it */
    unsigned long long code;           /* the Xid */
    unsigned int gpu;                  /* the physical index (the state's) */
    unsigned int gi, ci;               /* the MIG instances it names; MOCK_XID_NO_INSTANCE: none */
    unsigned long long type;           /* its NVML event type: an Xid's, or an ECC error's */
};

/* nvmlEventData_t's instance id of an Xid no GPU or compute instance is named by. */
#define MOCK_XID_NO_INSTANCE 0xFFFFFFFFu

/* `xid-events.yaml` beside the profile this process loaded (absolute); 0 before nvmlInit. */
int mock_xid_events_path(char *out, size_t size);
/* The events newer than `after` (up to `max`, by sequence) and *last the newest
 * sequence number ever written; -1 when there is no usable file (absent, or its
 * companion missing or stale while it is being rewritten). `settle`: a pair caught
 * between its writer's two renames is read again until it settles (flat_load_settled),
 * for a read that has no later poll to catch up with it. */
int mock_xid_read(const char *yaml, unsigned long long after, struct mock_xid_event *out,
                  unsigned int max, unsigned long long *last, int settle);
/* The handle of physical GPU `phys` when this process sees it, else NULL. */
nvmlDevice_t mock_handle_of_physical(unsigned int phys);
/* The physical index of a valid handle: 1, or 0 for an invalid one. */
int mock_physical_of(nvmlDevice_t device, unsigned int *phys);

/* --- reset.c: what a GPU reset does over the mock ------------------------------ */

/* Drop the runtime overrides of `count` devices (a valid handle each), as
 * `nvidia-smi -r` and `mokka ctl reset` do: NVML_SUCCESS, or the error of the
 * first that could not be dropped (one line on stderr says why). */
nvmlReturn_t mock_reset_gpus(unsigned int count, const nvmlDevice_t *devices);

/* --- system.c: the process lists of nvidia-smi's private slots ------------------------ */

/* The GPU's processes of `kind` ('C' compute, 'G' graphics, 0 MPS) as nvidia-smi 550's
 * slots 212-214 return them: *count in is the capacity, out the number written (or
 * needed, with INSUFFICIENT_SIZE); each entry a process detail and its name. */
nvmlReturn_t mock_smi_processes(nvmlDevice_t device, char kind, unsigned int *count, void *entries);

/* --- fields.c: T.Limit --------------------------------------------------------- */

/* How far the GPU's temperature lies below T.Limit (its maximum operating temperature), in
 * degrees C, negative past it: `nvidia-smi -q`'s "GPU T.Limit Temp". NVML_SUCCESS,
 * NVML_ERROR_NOT_SUPPORTED before Ada (no T.Limit sensor) or without the readings,
 * or the handle's error. */
nvmlReturn_t mock_tlimit_temperature(nvmlDevice_t device, int *margin);

/* --- process_util.c: what nvidia-smi 550's pmon reads ------------------------------ */

/* pmon's utilization of the GPU's processes (slot 144): one record per engine (SM, memory,
 * encoder, decoder, JPEG, OFA, in that order), each naming one process and its share;
 * *samples in the room given (INSUFFICIENT_SIZE below MOCK_SMI_ENGINES), out 1: the number
 * of samples each share sums (pmon divides by it).
 * NVML_ERROR_NOT_FOUND when no process holds the GPU, NOT_SUPPORTED with MIG enabled. */
#define MOCK_SMI_ENGINES 6
struct mock_smi_engine_record {
    unsigned long long timestamp;      /* us */
    unsigned int share;                /* percent */
    unsigned int reserved;
    unsigned int pid;
    unsigned char unused[60];          /* pmon reads none of it */
};
nvmlReturn_t mock_smi_engine_records(nvmlDevice_t device, unsigned int *samples,
                                     struct mock_smi_engine_record records[MOCK_SMI_ENGINES]);

/* --- board.c: rows of the report NVML has no call for ------------------------ */

/* The host's maximum PCIe generation (pcie.max_host_link_gen). */
nvmlReturn_t mock_host_max_pcie_gen(nvmlDevice_t device, unsigned int *gen);
/* The addressing mode (0 none, 1 HMM, 2 ATS), the sparse operation mode (1 enabled)
 * and the PCIe atomics, outbound and inbound (NVML_PCIE_ATOMICS_CAP_* bits). */
nvmlReturn_t mock_addressing_mode(nvmlDevice_t device, unsigned int *mode);
nvmlReturn_t mock_sparse_operation_mode(nvmlDevice_t device, unsigned int *mode);
nvmlReturn_t mock_pcie_atomics(nvmlDevice_t device, unsigned int masks[2]);
/* The GPU part number (fru 0) or FRU part number (fru 1), as a string of `length` bytes. */
nvmlReturn_t mock_part_number(nvmlDevice_t device, int fru, char *buf, unsigned int length);

#endif
