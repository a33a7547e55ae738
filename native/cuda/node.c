/* The node, read through the one engine: Mokka's mock NVML library.
 *
 * The driver loads the libnvidia-ml.so.1 beside itself (the staged lib64, or
 * where the CDI spec mounts the pair), else the one the search path finds, and
 * refuses any library without Mokka's private calls, so a real driver's NVML
 * is never driven by mistake. NVML decides which GPUs this process sees
 * (MOCK_NVML_VISIBLE_DEVICES, the /dev/nvidiaN nodes present) and every value;
 * CUDA_DEVICE_ORDER and CUDA_VISIBLE_DEVICES then narrow and order them
 * (visible.c). Read once per process, at the first call that needs it, as the
 * real driver reads its devices at cuInit; memory in use is asked anew each
 * time (cu_nvml_memory), since every process of the node changes it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cu.h"
#include "mokka_keys.h"
#include "nvml/api/mokka_private.h"

pthread_mutex_t cu_lock = PTHREAD_MUTEX_INITIALIZER;

#define FN(name) __typeof__(name) *name
static struct {
    FN(nvmlInit_v2);
    FN(nvmlDeviceGetCount_v2);
    FN(nvmlDeviceGetHandleByIndex_v2);
    FN(nvmlDeviceGetName);
    FN(nvmlDeviceGetUUID);
    FN(nvmlDeviceGetPciInfo_v3);
    FN(nvmlDeviceGetMemoryInfo_v2);
    FN(nvmlDeviceGetCudaComputeCapability);
    FN(nvmlDeviceGetMaxClockInfo);
    FN(nvmlDeviceGetMemoryBusWidth);
    FN(nvmlDeviceGetEccMode);
    FN(nvmlDeviceGetComputeMode);
    FN(nvmlDeviceGetMultiGpuBoard);
    FN(nvmlDeviceGetMemoryAffinity);
    FN(nvmlDeviceGetP2PStatus);
    FN(nvmlSystemGetCudaDriverVersion_v2);
    FN(nvmlMokkaGetDeviceIdentity);
    FN(nvmlMokkaGetDeviceCudaValue);
    FN(nvmlMokkaSetProcessMemory);
    FN(nvmlMokkaReleaseProcess);
} nv;
#undef FN

/* Every entry of `nv`, by name, in order. */
static const char *const NV_NAMES[] = {
    "nvmlInit_v2", "nvmlDeviceGetCount_v2", "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetName",
    "nvmlDeviceGetUUID", "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetMemoryInfo_v2",
    "nvmlDeviceGetCudaComputeCapability", "nvmlDeviceGetMaxClockInfo", "nvmlDeviceGetMemoryBusWidth",
    "nvmlDeviceGetEccMode", "nvmlDeviceGetComputeMode", "nvmlDeviceGetMultiGpuBoard",
    "nvmlDeviceGetMemoryAffinity", "nvmlDeviceGetP2PStatus", "nvmlSystemGetCudaDriverVersion_v2",
    "nvmlMokkaGetDeviceIdentity", "nvmlMokkaGetDeviceCudaValue", "nvmlMokkaSetProcessMemory",
    "nvmlMokkaReleaseProcess",
};
_Static_assert(sizeof NV_NAMES / sizeof NV_NAMES[0] == sizeof nv / sizeof(void *),
               "NV_NAMES lists every NVML entry the driver uses");
/* Where Mokka's private calls start in NV_NAMES: a library without them is not the mock. */
#define NV_FIRST_PRIVATE 16

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static CUresult load_result;
static struct cu_node node;
static int initialized;                /* cuInit succeeded */
static int forked;                     /* this is a child forked after that */

void cu_say_once(const char *fmt, ...)
{
    static int said;
    if (__atomic_exchange_n(&said, 1, __ATOMIC_ACQ_REL))
        return;
    char line[2048] = "mock CUDA: ";
    size_t n = strlen(line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
    va_end(ap);
    for (char *p = line; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    strcat(line, "\n");
    for (size_t left = strlen(line), at = 0; left > 0;) {
        ssize_t w = write(STDERR_FILENO, line + at, left);
        if (w <= 0)
            break;
        at += (size_t)w;
        left -= (size_t)w;
    }
}

/* --- finding and binding the library ----------------------------------------------------- */

static const char here_in_the_driver = 0;

static void *open_nvml(char *where, size_t size)
{
    Dl_info info;
    if (dladdr(&here_in_the_driver, &info) && info.dli_fname && strchr(info.dli_fname, '/')) {
        snprintf(where, size, "%s", info.dli_fname);
        char *slash = strrchr(where, '/');
        snprintf(slash + 1, size - (size_t)(slash + 1 - where), "%s", MOKKA_NVML_LIB_FILE);
        if (access(where, F_OK) == 0) {
            void *lib = dlopen(where, RTLD_NOW | RTLD_LOCAL);
            if (lib)
                return lib;
        }
    }
    snprintf(where, size, "%s", MOKKA_NVML_LIB_FILE);
    return dlopen(MOKKA_NVML_LIB_FILE, RTLD_NOW | RTLD_LOCAL);
}

static CUresult bind_nvml(void)
{
    char where[4096];
    void *lib = open_nvml(where, sizeof where);
    if (!lib) {
        const char *why = dlerror();
        cu_say_once("cannot load %s (%s): the mock CUDA driver reads the node through Mokka's mock NVML "
                    "library; stage both (node-agent) or keep them in one directory", where,
                    why ? why : "not found");
        return CUDA_ERROR_NO_DEVICE;
    }
    void **slots = (void **)&nv;
    for (unsigned int i = 0; i < sizeof NV_NAMES / sizeof NV_NAMES[0]; i++) {
        slots[i] = dlsym(lib, NV_NAMES[i]);
        if (slots[i])
            continue;
        if (i >= NV_FIRST_PRIVATE)
            cu_say_once("%s is not Mokka's mock NVML library of this release (no %s): stage "
                        "libcuda.so.1 and libnvidia-ml.so.1 from the same Mokka", where, NV_NAMES[i]);
        else
            cu_say_once("%s has no %s: stage the mock NVML library of this Mokka", where, NV_NAMES[i]);
        return CUDA_ERROR_NO_DEVICE;
    }
    return CUDA_SUCCESS;
}

/* --- one device -------------------------------------------------------------------------- */

static long long cuda_value(nvmlDevice_t h, const char *key)
{
    long long v = 0;
    return nv.nvmlMokkaGetDeviceCudaValue(h, key, &v) == NVML_SUCCESS ? v : 0;
}

/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" -> its 16 bytes (zeros when malformed). */
static void uuid_bytes(const char *text, CUuuid *out)
{
    memset(out, 0, sizeof *out);
    const char *p = strchr(text, '-');
    unsigned int n = 0;
    unsigned char bytes[16];
    for (p = p ? p + 1 : text; *p && n < 32; p++) {
        if (*p == '-')
            continue;
        int v = *p >= '0' && *p <= '9' ? *p - '0' : (*p | 0x20) >= 'a' && (*p | 0x20) <= 'f'
                ? (*p | 0x20) - 'a' + 10 : -1;
        if (v < 0)
            return;
        bytes[n / 2] = (unsigned char)(n % 2 ? (bytes[n / 2] << 4) | v : v);
        n++;
    }
    if (n == 32 && !*p)
        memcpy(out->bytes, bytes, sizeof bytes);
}

static int first_numa_node(nvmlDevice_t h)
{
    unsigned long set[4] = {0};
    if (nv.nvmlDeviceGetMemoryAffinity(h, 4, set, NVML_AFFINITY_SCOPE_NODE) != NVML_SUCCESS)
        return -1;
    for (unsigned int i = 0; i < 4 * 8 * sizeof set[0]; i++)
        if (set[i / (8 * sizeof set[0])] & (1ul << (i % (8 * sizeof set[0]))))
            return (int)i;
    return -1;
}

/* 1 and the device filled from NVML, or 0 when NVML refuses it (a lost GPU). */
static int read_device(unsigned int index, struct cu_device *d, struct cu_board *b)
{
    memset(d, 0, sizeof *d);
    memset(b, 0, sizeof *b);
    nvmlDevice_t h;
    char ignored[96];
    if (nv.nvmlDeviceGetHandleByIndex_v2(index, &h) != NVML_SUCCESS ||
        nv.nvmlMokkaGetDeviceIdentity(index, &d->phys, ignored, sizeof ignored) != NVML_SUCCESS)
        return 0;
    d->nvml = h;
    if (nv.nvmlDeviceGetName(h, d->name, sizeof d->name) != NVML_SUCCESS)
        snprintf(d->name, sizeof d->name, "NVIDIA GPU");
    if (nv.nvmlDeviceGetUUID(h, d->uuid_text, sizeof d->uuid_text) != NVML_SUCCESS)
        d->uuid_text[0] = '\0';
    uuid_bytes(d->uuid_text, &d->uuid);
    nvmlPciInfo_t pci;
    if (nv.nvmlDeviceGetPciInfo_v3(h, &pci) == NVML_SUCCESS) {
        unsigned int fn = 0;
        const char *dot = strrchr(pci.busId, '.');
        if (dot)
            fn = (unsigned int)strtoul(dot + 1, NULL, 16);
        d->pci_domain = pci.domain;
        d->pci_bus = pci.bus;
        d->pci_device = pci.device;
        d->pci_function = fn;
    }
    nvmlMemory_v2_t mem = {.version = nvmlMemory_v2};
    if (nv.nvmlDeviceGetMemoryInfo_v2(h, &mem) == NVML_SUCCESS)
        d->total_mem = (size_t)(mem.total > mem.reserved ? mem.total - mem.reserved : 0);
    if (nv.nvmlDeviceGetCudaComputeCapability(h, &d->cc_major, &d->cc_minor) != NVML_SUCCESS)
        d->cc_major = d->cc_minor = 0;
    nv.nvmlDeviceGetMaxClockInfo(h, NVML_CLOCK_SM, &b->sm_clock_mhz);
    nv.nvmlDeviceGetMaxClockInfo(h, NVML_CLOCK_MEM, &b->mem_clock_mhz);
    nv.nvmlDeviceGetMemoryBusWidth(h, &b->bus_width);
    nvmlEnableState_t ecc, pending;
    b->ecc = nv.nvmlDeviceGetEccMode(h, &ecc, &pending) == NVML_SUCCESS && ecc == NVML_FEATURE_ENABLED;
    nvmlComputeMode_t mode;
    b->compute_mode = nv.nvmlDeviceGetComputeMode(h, &mode) == NVML_SUCCESS ? (int)mode : 0;
    unsigned int multi = 0;
    b->multi_gpu_board = nv.nvmlDeviceGetMultiGpuBoard(h, &multi) == NVML_SUCCESS && multi;
    b->host_numa = first_numa_node(h);
    b->sm_count = cuda_value(h, K_CUDA_MULTIPROCESSOR_COUNT);
    b->l2 = cuda_value(h, K_CUDA_L2_CACHE_BYTES);
    b->threads_per_sm = cuda_value(h, K_CUDA_MAX_THREADS_PER_MULTIPROCESSOR);
    b->blocks_per_sm = cuda_value(h, K_CUDA_MAX_BLOCKS_PER_MULTIPROCESSOR);
    b->smem_per_sm = cuda_value(h, K_CUDA_SHARED_MEMORY_PER_MULTIPROCESSOR_BYTES);
    b->smem_optin = cuda_value(h, K_CUDA_SHARED_MEMORY_PER_BLOCK_OPTIN_BYTES);
    b->regs_per_sm = cuda_value(h, K_CUDA_REGISTERS_PER_MULTIPROCESSOR);
    b->engines = cuda_value(h, K_CUDA_ASYNC_ENGINE_COUNT);
    return 1;
}

/* --- the node ---------------------------------------------------------------------------- */

static void forget_after_fork(void)
{
    forked = 1;                        /* as the real driver: a forked child cannot use CUDA */
}

static void load(void)
{
    pthread_atfork(NULL, NULL, forget_after_fork);
    load_result = bind_nvml();
    if (load_result != CUDA_SUCCESS)
        return;
    if (nv.nvmlInit_v2() != NVML_SUCCESS) {           /* NVML said why, in one line */
        load_result = CUDA_ERROR_NO_DEVICE;
        return;
    }
    int version = 0;
    node.driver_version = nv.nvmlSystemGetCudaDriverVersion_v2(&version) == NVML_SUCCESS ? version
                                                                                        : CUDA_VERSION;
    unsigned int count = 0;
    nv.nvmlDeviceGetCount_v2(&count);
    static struct cu_device seen[CU_MAX_DEVICES];
    static struct cu_board boards[CU_MAX_DEVICES];
    struct cu_candidate cand[CU_MAX_DEVICES];
    unsigned int n = 0;
    for (unsigned int i = 0; i < count && n < CU_MAX_DEVICES; i++) {
        if (!read_device(i, &seen[n], &boards[n]))
            continue;
        const struct cu_device *d = &seen[n];
        cand[n] = (struct cu_candidate){d->uuid_text, d->pci_domain, d->pci_bus, d->pci_device,
                                        d->pci_function,
                                        (long long)(d->cc_major * 10 + d->cc_minor) << 40 |
                                            (boards[n].sm_count * boards[n].sm_clock_mhz)};
        n++;
    }
    unsigned int ordered[CU_MAX_DEVICES], kept[CU_MAX_DEVICES];
    cu_order(getenv(MOKKA_ENV_CUDA_DEVICE_ORDER), cand, n, ordered);
    node.count = cu_visible(getenv(MOKKA_ENV_CUDA_VISIBLE_DEVICES), cand, ordered, n, kept);
    for (unsigned int i = 0; i < node.count; i++) {
        unsigned int from = ordered[kept[i]];
        node.dev[i] = seen[from];
        cu_fill_attributes(&node.dev[i], &boards[from]);
    }
}

CUresult cu_node_load(const struct cu_node **out)
{
    pthread_once(&load_once, load);
    if (out)
        *out = &node;
    return load_result;
}

CUresult CUDAAPI cuInit(unsigned int Flags)
{
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (__atomic_load_n(&forked, __ATOMIC_ACQUIRE))
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult ret = cu_node_load(NULL);
    if (ret == CUDA_SUCCESS && node.count == 0)
        ret = CUDA_ERROR_NO_DEVICE;
    if (ret == CUDA_SUCCESS)
        __atomic_store_n(&initialized, 1, __ATOMIC_RELEASE);
    return ret;
}

CUresult CUDAAPI cuDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = cu_node_load(NULL) == CUDA_SUCCESS ? node.driver_version : CUDA_VERSION;
    return CUDA_SUCCESS;
}

CUresult cu_ready(void)
{
    if (!__atomic_load_n(&initialized, __ATOMIC_ACQUIRE) || __atomic_load_n(&forked, __ATOMIC_ACQUIRE))
        return CUDA_ERROR_NOT_INITIALIZED;
    return CUDA_SUCCESS;
}

const struct cu_node *cu_node(void)
{
    return cu_ready() == CUDA_SUCCESS ? &node : NULL;
}

struct cu_device *cu_device(CUdevice dev, CUresult *err)
{
    *err = cu_ready();
    if (*err != CUDA_SUCCESS)
        return NULL;
    if (dev < 0 || (unsigned int)dev >= node.count) {
        *err = CUDA_ERROR_INVALID_DEVICE;
        return NULL;
    }
    return &node.dev[dev];
}

int cu_nvml_memory(const struct cu_device *d, unsigned long long *free_bytes)
{
    nvmlMemory_v2_t mem = {.version = nvmlMemory_v2};
    if (nv.nvmlDeviceGetMemoryInfo_v2(d->nvml, &mem) != NVML_SUCCESS)
        return 0;
    *free_bytes = mem.free;
    return 1;
}

void cu_account(struct cu_device *d)
{
    if (d->contexts > 0)
        nv.nvmlMokkaSetProcessMemory(d->nvml, d->used);
    else
        nv.nvmlMokkaReleaseProcess(d->nvml);
}

int cu_nvml_p2p(const struct cu_device *a, const struct cu_device *b)
{
    nvmlGpuP2PStatus_t status;
    return nv.nvmlDeviceGetP2PStatus(a->nvml, b->nvml, NVML_P2P_CAPS_INDEX_READ, &status) == NVML_SUCCESS &&
           status == NVML_P2P_STATUS_OK;
}
