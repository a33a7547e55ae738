/* The mock CUDA driver's shared view: the devices it read through the mock NVML
 * library, its contexts, allocations, streams and handles.
 *
 * Nothing executes: memory is host memory reserved lazily, copies are memcpy,
 * kernels are accepted and launched as no-ops, and every stream is complete
 * when a call returns. What a device is comes from NVML, once, at cuInit
 * (node.c); what NVML's API has no call for, from the GPU's `cuda` block
 * through Mokka's private call. One mutex (cu_lock) guards the mutable parts.
 */
#ifndef MOKKA_CUDA_CU_H
#define MOKKA_CUDA_CU_H

#include <pthread.h>
#include <stddef.h>

#include <nvml.h>

#include "mokka_names.h"

#define CU_MAX_DEVICES MOKKA_MAX_GPUS
#define CU_NAME_MAX 256

struct CUctx_st;

struct cu_device {
    nvmlDevice_t nvml;                 /* the NVML handle of this process's view */
    unsigned int phys;                 /* the profile's index (what the process records name) */
    char name[CU_NAME_MAX];
    char uuid_text[96];                /* as NVML prints it: GPU-xxxxxxxx-... */
    CUuuid uuid;                       /* the same 16 bytes */
    unsigned int pci_domain, pci_bus, pci_device, pci_function;
    size_t total_mem;                  /* NVML's total less what the driver reserves */
    int cc_major, cc_minor;
    int attrs[CU_DEVICE_ATTRIBUTE_MAX];     /* every CUdevice_attribute, at cuInit */
    /* mutable, under cu_lock */
    struct CUctx_st *primary;
    unsigned int contexts;             /* live contexts on it: the process record exists while > 0 */
    size_t used;                       /* bytes of device memory this process holds on it */
};

struct cu_node {
    unsigned int count;                /* after CUDA_VISIBLE_DEVICES */
    struct cu_device dev[CU_MAX_DEVICES];    /* by CUDA ordinal (CUDA_DEVICE_ORDER) */
    int driver_version;                /* the profile's CUDA version, 12040 for 12.4 */
};

extern pthread_mutex_t cu_lock;

/* --- node.c: NVML, the devices -------------------------------------------------------- */

/* The node, read once (thread-safe); CUDA_SUCCESS or why not (one line printed). */
CUresult cu_node_load(const struct cu_node **out);
/* The node once cuInit succeeded in this process, else NULL. */
const struct cu_node *cu_node(void);
/* CUDA_SUCCESS when cuInit succeeded (and this is not a child forked after it). */
CUresult cu_ready(void);
/* The device of ordinal `dev`, or NULL (with *err set). */
struct cu_device *cu_device(CUdevice dev, CUresult *err);
/* NVML's free and total bytes of a device, this process's allocations and every other
 * process's included; 0 when NVML cannot say. */
int cu_nvml_memory(const struct cu_device *d, unsigned long long *free_bytes);
/* Tell NVML what this process holds on `d` (its process record). Under cu_lock. */
void cu_account(struct cu_device *d);
/* Whether NVML lets two devices reach each other's memory (P2P read). */
int cu_nvml_p2p(const struct cu_device *a, const struct cu_device *b);
/* One line on stderr: "mock CUDA: <message>", printed once per process. */
void cu_say_once(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* --- visible.c: CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER (pure) ------------------------ */

struct cu_candidate {
    const char *uuid;                  /* NVML's text */
    unsigned int domain, bus, device, function;
    long long speed;                   /* larger is faster */
};

/* The order CUDA_DEVICE_ORDER gives `n` candidates (`order`: NULL, FASTEST_FIRST or
 * PCI_BUS_ID) into out[]: indices into `c`. */
void cu_order(const char *order, const struct cu_candidate *c, unsigned int n, unsigned int out[]);
/* Which of the ordered candidates CUDA_VISIBLE_DEVICES keeps (`value` NULL: unset),
 * in its order, into out[] (positions in `ordered`); returns how many. */
unsigned int cu_visible(const char *value, const struct cu_candidate *c, const unsigned int ordered[],
                        unsigned int n, unsigned int out[]);

/* --- attributes.c ---------------------------------------------------------------------- */

struct cu_board {                      /* what attributes.c derives attributes from */
    unsigned int sm_clock_mhz, mem_clock_mhz, bus_width;
    int ecc, compute_mode, multi_gpu_board, host_numa;
    long long sm_count, l2, threads_per_sm, blocks_per_sm, smem_per_sm, smem_optin, regs_per_sm, engines;
};

void cu_fill_attributes(struct cu_device *d, const struct cu_board *b);

/* --- context.c ------------------------------------------------------------------------- */

struct CUctx_st {
    unsigned int dev;                  /* CUDA ordinal */
    unsigned int flags;
    int primary;
    unsigned int retained;             /* primary: retain count; 0 inactive */
    unsigned long long id;
    size_t limits[8];                  /* CUlimit values, by CUlimit */
    CUfunc_cache cache_config;
};

/* The calling thread's current context, when it is live: CUDA_SUCCESS, else
 * CUDA_ERROR_INVALID_CONTEXT (or the init error). */
CUresult cu_current(struct CUctx_st **ctx);
/* Whether `ctx` is a live context of this process. Under cu_lock. */
int cu_ctx_live(const struct CUctx_st *ctx);

/* --- memory.c: the allocations ---------------------------------------------------------- */

enum cu_mem_kind { CU_MEM_DEVICE, CU_MEM_MANAGED, CU_MEM_HOST, CU_MEM_REGISTERED };

struct cu_alloc {
    char *base;
    size_t size;
    enum cu_mem_kind kind;
    struct CUctx_st *ctx;
    unsigned int flags;
    unsigned long long id;
};

/* The allocation holding [p, p + n) (n 0: holding p): 1 and a copy in *out, or 0. */
int cu_alloc_find(const void *p, size_t n, struct cu_alloc *out);
/* Free every allocation of `ctx` (a context going away). Under cu_lock. */
void cu_alloc_drop_context(struct CUctx_st *ctx);

/* --- stream.c --------------------------------------------------------------------------- */

/* Whether `s` is a stream a call may name: NULL, the two special streams, or a live one. */
int cu_stream_ok(CUstream s);

/* --- handles.c: opaque handles this library handed out ----------------------------------- */

enum cu_kind { CU_KIND_CONTEXT = 1, CU_KIND_STREAM, CU_KIND_EVENT, CU_KIND_MODULE, CU_KIND_FUNCTION,
               CU_KIND_LIBRARY, CU_KIND_KERNEL, CU_KIND_LINK };

/* Under cu_lock. add: 0 on success, -1 out of memory. */
int cu_handle_add(const void *h, enum cu_kind kind);
int cu_handle_is(const void *h, enum cu_kind kind);
void cu_handle_remove(const void *h);

#endif
