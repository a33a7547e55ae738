/* nvmlInternalGetExportTable: the private table NVIDIA's nvidia-smi asks for.
 *
 * Not in nvml.h, but exported by NVIDIA's library and required by nvidia-smi:
 * it asks for the table with the 16-byte id below and, on anything but
 * NVML_SUCCESS, prints "Mismatch in versions between nvidia-smi and NVML." and
 * exits 255. The real table for that id is 0x7d8 bytes: a size word, then 250
 * function slots. Every slot here answers (none is NULL), each through a
 * function of its own so the slot number is known; what the slots do was
 * learned by running nvidia-smi 550.163.01 over a slot-tracing build of this
 * file (build.py --cflag=-DMOKKA_TRACE_EXPORT_TABLE logs each call to stderr).
 *
 * The slots nvidia-smi 550 calls (a = argument):
 *   25  every command, a printf-style format as a0: a debug-log hook. SUCCESS,
 *       nothing printed.
 *   80  every command, once per GPU: (unsigned index, nvmlDevice_t *out, 0x22,
 *       0xffff): the handle by index.
 *   22  `topo -m`, once per ordered GPU pair: (record of GPU a, record of GPU b,
 *       unsigned int *level). A record starts with the GPU's 32-byte PCI bus id.
 *       The level is the matrix cell: 0 PIX, 1 PXB, 2 PHB, 3 NODE, 4 SYS,
 *       4 + n NV<n> (n = 1..18), anything above "Unknown". nvidia-smi reuses one
 *       buffer for every pair, so a level is always written (an unwritten one
 *       repeats the previous pair's).
 *   229 `-q`, per GPU: (device, unsigned int *gen): the PCIe "Host Max" row
 *       (pcie.max_host_link_gen; N/A there: NOT_SUPPORTED).
 *   239 `-q`, `-q -x` and `--query-gpu=temperature.gpu.tlimit`, per GPU:
 *       (device, int *margin): "GPU T.Limit Temp", printed as the signed 32-bit
 *       value written (an 8-byte write shows only its low half; the third
 *       argument is 1 from -q and NULL from --query-gpu, so not an input).
 *       NOT_SUPPORTED prints N/A, as before Ada.
 *   230 `-q`, per GPU: (device, char *, 0x50): "GPU Part Number"; 236 the same
 *       with 0x14 bytes: "FRU Part Number". The state's gpu_part_number and
 *       gpu_fru_part_number; NOT_SUPPORTED (N/A) without them.
 *   241 `-q`, per GPU: (device, unsigned int *mode, 1): "Addressing Mode", 0 None,
 *       1 HMM, 2 ATS (NVML 13's nvmlDeviceAddressingModeType_t).
 *   225 `-q`, per GPU: (device, unsigned int masks[2], 1): "Atomic Caps Outbound"
 *       then "Inbound", NVML_PCIE_ATOMICS_CAP_* bits.
 *   248 `-q`, per GPU: (device, unsigned int *mode, 1): "Sparse Operation Mode",
 *       1 Enabled. Each from the state (board.c); NOT_SUPPORTED without it.
 *   -q, per GPU, answered NOT_SUPPORTED (printed N/A, as on most real systems):
 *       164 IBMNPU Relaxed Ordering Mode; 231 a Memory clock row; 208 a Graphics row;
 *   212, 213, 214  per GPU in the default table, `--query-compute-apps` (212
 *       only) and `-q`: the compute, graphics and MPS processes, (device,
 *       unsigned int *count (in: the capacity, 500 or 250), entries, …). An entry
 *       is an nvmlProcessDetail_v1_t and the process name (4096 bytes): the box
 *       prints its pid, memory and name (system.c). NOT_SUPPORTED from any of the
 *       three gives "No running processes found".
 *   `-r`/`--gpu-reset` [-i N,…], in this order (learned the same way, by
 *   answering one slot at a time until nvidia-smi printed its success text):
 *   19  per GPU: (device, unsigned int *is_primary). An error prints "could not
 *       be determined if GPU … is the primary GPU", 1 "GPU … is the primary GPU";
 *       0 goes on.
 *   168 once: (unsigned int *mode). An error prints "fabric state could not be
 *       determined"; 1 makes nvidia-smi disable persistence mode first; 0 goes on.
 *   31, 196 per GPU, and 183: NOT_SUPPORTED goes on.
 *   181 once: (out, device array, count, 1): "allocate group of reset devices".
 *   182 once: "get group of reset devices". Both SUCCESS, nothing written.
 *   167 once: (count, device array, …): the reset itself. SUCCESS prints "GPU …
 *       was successfully reset." per GPU and "All done."; an error prints "GPU
 *       reset unavailable: <error string>" and exits 3. reset.c drops the GPUs'
 *       overrides here.
 *   With a NULL table those -q rows read "Uninitialized" and `topo -m` fails.
 *   `dmon` and `pmon` (learned the same way, answering one slot at a time and watching
 *   what nvidia-smi printed and which public entry points it called next):
 *   71  both, once per GPU, before anything else: (device, unsigned int *supported). Anything
 *       but SUCCESS with a non-zero 32-bit value prints "Not supported on the device(s)"
 *       and exits. Every mock GPU may be watched: 1. dmon then reads the public calls
 *       (power, temperatures, utilizations, clocks, memory, ECC, PCIe, violation status
 *       for pviol) and, for --gpm-metrics, nvmlGpmSampleGet once per line and
 *       nvmlGpmMetricsGet between that sample and the one before, on the first line a
 *       sample allocated but never taken (gpm.c).
 *   137 `dmon -s v`, per GPU and line: (device, nvmlViolationTime_t *): the thermal
 *       violation time; tviol prints 1 when violationTime grew since the last line, 0
 *       else, "-" on an error. nvmlDeviceGetViolationStatus's thermal policy: the SW
 *       and HW thermal slowdown times, summed (violations.c).
 *   144 `pmon -s u`, per GPU and line, before the process lists (212-214): (device, a
 *       wall-clock "last seen" in us, unsigned int *, unsigned int *samples (in: 100),
 *       records). Records lie 80 bytes apart, one per engine in pmon's column order (SM,
 *       memory, encoder, decoder, JPEG, OFA): a us timestamp at 0, a 32-bit utilization
 *       at 8 and the pid it belongs to at 16. A process's cell is the record's value
 *       divided by *samples where the pids match, "-" where none does or on an error;
 *       records past the sixth are not read, and neither is the third argument, so
 *       a GPU's second process shows "-" whatever is written. process_util.c writes the
 *       first process's shares, *samples 1.
 *   `-i <PCI bus id>` (any command), per GPU index i:
 *   11  (const char *text, unsigned *domain, *bus, *device, *function): the text
 *       as typed, "[domain:]bus:device.function" in hex; an error prints "Invalid
 *       PCI bus id format. Try format [domain:]bus:device.function" and exits 255.
 *   74  (i, unsigned *domain, *bus, *device): where GPU i sits on PCI; the GPU
 *       whose numbers match slot 11's is the one -i names (none: "No devices
 *       were found", exit 6).
 * Every other slot: NVML_ERROR_NOT_SUPPORTED.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/time.h>
#include <nvml.h>

#include "hooks.h"
#include "mokka_names.h"

#ifdef MOKKA_TRACE_EXPORT_TABLE
#include <stdio.h>
#endif

typedef struct {
    unsigned char bytes[16];
} nvmlExportTableId_t;

MOKKA_EXPORT nvmlReturn_t DECLDIR nvmlInternalGetExportTable(const void **table, const nvmlExportTableId_t *id);

enum {
    SLOT_COUNT = 250,
    SLOT_RESET_IS_PRIMARY = 19,
    SLOT_TOPO_LINK_LEVEL = MOKKA_NVML_EXPORT_SLOT_TOPO_LINK_LEVEL,
    SLOT_DEBUG_LOG = 25,
    SLOT_HANDLE_BY_INDEX = 80,
    SLOT_RESET = MOKKA_NVML_EXPORT_SLOT_RESET,
    SLOT_RESET_MODE = 168,
    SLOT_RESET_GROUP_ALLOC = 181,
    SLOT_RESET_GROUP_GET = 182,
    SLOT_COMPUTE_PROCESSES = 212,
    SLOT_GRAPHICS_PROCESSES = 213,
    SLOT_MPS_PROCESSES = 214,
    SLOT_HOST_MAX_PCIE_GEN = 229,
    SLOT_GPU_PART_NUMBER = 230,
    SLOT_FRU_PART_NUMBER = 236,
    SLOT_TLIMIT_TEMP = 239,
    SLOT_PCIE_ATOMICS = 225,
    SLOT_ADDRESSING_MODE = 241,
    SLOT_SPARSE_OPERATION_MODE = 248,
    SLOT_PARSE_BUS_ID = 11,
    SLOT_PCI_LOCATION = 74,
    SLOT_MONITOR_SUPPORTED = 71,
    SLOT_THERMAL_VIOLATION = 137,
    SLOT_PROCESS_ENGINES = 144,
};

/* The cell values slot 22 writes (measured with nvidia-smi 550.163.01). */
enum {
    TOPO_PIX = 0,           /* at most one PCIe bridge */
    TOPO_PXB = 1,           /* several PCIe bridges */
    TOPO_PHB = 2,           /* through a PCIe host bridge */
    TOPO_NODE = 3,          /* between host bridges of one NUMA node */
    TOPO_SYS = 4,           /* across NUMA nodes */
    TOPO_NV_BASE = 4,       /* NV<n> is TOPO_NV_BASE + n */
    TOPO_NV_MAX_LINKS = 18, /* NVML_NVLINK_MAX_LINKS: the largest n it prints */
};

/* nvidia-smi's id, as the bytes it passes in memory. */
static const unsigned char SMI_TABLE_ID[16] = MOKKA_NVML_EXPORT_TABLE_ID;

/* Bus ids compare without case: "00000000:1A:00.0" is "00000000:1a:00.0". */
static int same_bus_id(const char *x, const char *y)
{
    for (;; x++, y++) {
        char cx = (*x >= 'a' && *x <= 'f') ? (char)(*x - 'a' + 'A') : *x;
        char cy = (*y >= 'a' && *y <= 'f') ? (char)(*y - 'a' + 'A') : *y;
        if (cx != cy)
            return 0;
        if (cx == '\0')
            return 1;
    }
}

typedef nvmlReturn_t (*slot_fn)(void *, void *, void *, void *, void *, void *);

/* Slot 22 names each GPU by a record that starts with its PCI bus id
 * ("00000000:18:00.0", NVML's 32-byte busId), not by handle. */
static nvmlReturn_t device_by_bus_id(const char *record, nvmlDevice_t *device)
{
    char bus_id[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
    unsigned int count = 0;

    if (record == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    memcpy(bus_id, record, sizeof bus_id);
    bus_id[sizeof bus_id - 1] = '\0';
    nvmlReturn_t ret = nvmlDeviceGetCount_v2(&count);
    if (ret != NVML_SUCCESS)
        return ret;
    for (unsigned int i = 0; i < count; i++) {
        nvmlDevice_t candidate;
        nvmlPciInfo_t pci;
        if (nvmlDeviceGetHandleByIndex_v2(i, &candidate) != NVML_SUCCESS
            || nvmlDeviceGetPciInfo_v3(candidate, &pci) != NVML_SUCCESS)
            continue;
        if (same_bus_id(pci.busId, bus_id)) {
            *device = candidate;
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

/* The PCIe path between two GPUs, from the public topology call; PIX when the
 * library has no topology for them. */
static unsigned int pcie_level(nvmlDevice_t a, nvmlDevice_t b)
{
    nvmlGpuTopologyLevel_t level;
    if (nvmlDeviceGetTopologyCommonAncestor(a, b, &level) != NVML_SUCCESS)
        return TOPO_PIX;
    switch (level) {
    case NVML_TOPOLOGY_MULTIPLE:
        return TOPO_PXB;
    case NVML_TOPOLOGY_HOSTBRIDGE:
        return TOPO_PHB;
    case NVML_TOPOLOGY_NODE:
        return TOPO_NODE;
    case NVML_TOPOLOGY_SYSTEM:
        return TOPO_SYS;
    default:                    /* INTERNAL, SINGLE */
        return TOPO_PIX;
    }
}

static nvmlReturn_t topo_link_level(const void *a, const void *b, void *level)
{
    nvmlDevice_t first, second;
    unsigned int links = 0;
    nvmlReturn_t ret;

    if (level == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((ret = device_by_bus_id(a, &first)) != NVML_SUCCESS
        || (ret = device_by_bus_id(b, &second)) != NVML_SUCCESS
        || (ret = mock_nvlinks_between(first, second, &links)) != NVML_SUCCESS)
        return ret;
    *(unsigned int *)level = links > 0 ? TOPO_NV_BASE + (links < TOPO_NV_MAX_LINKS ? links : TOPO_NV_MAX_LINKS)
                                       : pcie_level(first, second);
    return NVML_SUCCESS;
}

static nvmlReturn_t host_max_pcie_gen(void *device, void *gen)
{
    if (gen == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    return mock_host_max_pcie_gen((nvmlDevice_t)device, (unsigned int *)gen);
}

/* No mock GPU drives a display: none is the primary GPU that a reset must spare. */
static nvmlReturn_t reset_is_primary(void *device, void *is_primary)
{
    nvmlReturn_t ret = mock_check_device((nvmlDevice_t)device);
    if (ret != NVML_SUCCESS)
        return ret;
    if (is_primary == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *(unsigned int *)is_primary = 0;
    return NVML_SUCCESS;
}

/* A hex number of 1 to `max` digits at *s, no larger than `limit`, and the end past it: 1; else 0. */
static int hex_field(const char **s, unsigned int max, unsigned long limit, unsigned int *out)
{
    unsigned long v = 0;
    unsigned int n = 0;
    for (const char *p = *s;; p++, n++) {
        int d = (*p >= '0' && *p <= '9') ? *p - '0' : (*p >= 'a' && *p <= 'f') ? *p - 'a' + 10
              : (*p >= 'A' && *p <= 'F') ? *p - 'A' + 10 : -1;
        if (d < 0) {
            if (n == 0 || n > max || v > limit)
                return 0;
            *s = p;
            *out = (unsigned int)v;
            return 1;
        }
        if (n < max)
            v = v * 16 + (unsigned long)d;
    }
}

/* Slot 11: nvidia-smi's `-i <PCI bus id>`, "[domain:]bus:device.function" in hex
 * (00000000:1B:00.0, 0000:1b:00.0, 1B:00.0), into its four numbers. */
static nvmlReturn_t parse_bus_id(const char *text, unsigned int *domain, unsigned int *bus, unsigned int *device,
                                 unsigned int *function)
{
    if (!text || !domain || !bus || !device || !function)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int f[4];
    const char *p = text;
    int n = 0;
    if (!hex_field(&p, 8, 0xffffffffUL, &f[n++]) || *p++ != ':' || !hex_field(&p, 8, 0xffffffffUL, &f[n++]))
        return NVML_ERROR_INVALID_ARGUMENT;
    if (*p == ':') {                              /* domain:bus:device */
        p++;
        if (!hex_field(&p, 2, 0x1f, &f[n++]))
            return NVML_ERROR_INVALID_ARGUMENT;
    } else {                                      /* bus:device: domain 0 */
        f[2] = f[1], f[1] = f[0], f[0] = 0, n = 3;
    }
    if (*p++ != '.' || !hex_field(&p, 1, 7, &f[3]) || *p != '\0' || f[1] > 0xff || f[2] > 0x1f)
        return NVML_ERROR_INVALID_ARGUMENT;
    *domain = f[0], *bus = f[1], *device = f[2], *function = f[3];
    return NVML_SUCCESS;
}

/* Slot 71: whether dmon and pmon may watch the GPU. Every mock GPU may. */
static nvmlReturn_t monitor_supported(void *device, unsigned int *supported)
{
    nvmlReturn_t ret = mock_check_device((nvmlDevice_t)device);
    if (ret != NVML_SUCCESS)
        return ret;
    if (supported == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *supported = 1;
    return NVML_SUCCESS;
}

/* Slot 137: the time thermal slowdowns held the clocks back: NVML's thermal perf-policy
 * violation time (violations.c), which the public call answers too. */
static nvmlReturn_t thermal_violation(void *device, nvmlViolationTime_t *time)
{
    return nvmlDeviceGetViolationStatus((nvmlDevice_t)device, NVML_PERF_POLICY_THERMAL, time);
}

/* Slot 74: (GPU index, unsigned *domain, *bus, *device, 1): where GPU `index` sits on
 * PCI, which nvidia-smi compares with slot 11's numbers to find `-i <PCI bus id>`. */
static nvmlReturn_t pci_location(unsigned int index, unsigned int *domain, unsigned int *bus, unsigned int *device)
{
    nvmlDevice_t handle;
    nvmlPciInfo_t pci;
    if (!domain || !bus || !device)
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t ret = nvmlDeviceGetHandleByIndex_v2(index, &handle);
    if (ret == NVML_SUCCESS)
        ret = nvmlDeviceGetPciInfo_v3(handle, &pci);
    if (ret != NVML_SUCCESS)
        return ret;
    *domain = pci.domain, *bus = pci.bus, *device = pci.device;
    return NVML_SUCCESS;
}

static nvmlReturn_t dispatch(unsigned int slot, void *a0, void *a1, void *a2, void *a3, void *a4, void *a5)
{
#ifdef MOKKA_TRACE_EXPORT_TABLE
    fprintf(stderr, "mokka-export-table: slot %u (%p, %p, %p, %p, %p, %p)\n", slot, a0, a1, a2, a3, a4, a5);
    if (slot == SLOT_DEBUG_LOG && a0 != NULL)
        fprintf(stderr, "mokka-export-table: slot %u format \"%.120s\"\n", slot, (const char *)a0);
#else
    (void)a3, (void)a4, (void)a5;
#endif
#ifdef MOKKA_TRACE_EXPORT_TABLE
    if (slot == SLOT_PARSE_BUS_ID && a0 != NULL)
        fprintf(stderr, "mokka-export-table: slot %u string \"%.60s\"\n", slot, (const char *)a0);
#endif
    switch (slot) {
    case SLOT_PARSE_BUS_ID:
        return parse_bus_id(a0, a1, a2, a3, a4);
    case SLOT_PCI_LOCATION:
        return pci_location((unsigned int)(uintptr_t)a0, a1, a2, a3);
    case SLOT_TOPO_LINK_LEVEL:
        return topo_link_level(a0, a1, a2);
    case SLOT_MONITOR_SUPPORTED:
        return monitor_supported(a0, a1);
    case SLOT_THERMAL_VIOLATION:
        return thermal_violation(a0, a1);
    case SLOT_PROCESS_ENGINES:
        return mock_smi_engine_records((nvmlDevice_t)a0, (unsigned int *)a3, a4);
    case SLOT_DEBUG_LOG:
        return NVML_SUCCESS;
    case SLOT_HANDLE_BY_INDEX:
        if (a1 == NULL)
            return NVML_ERROR_INVALID_ARGUMENT;
        return nvmlDeviceGetHandleByIndex_v2((unsigned int)(uintptr_t)a0, (nvmlDevice_t *)a1);
    case SLOT_COMPUTE_PROCESSES:
        return mock_smi_processes((nvmlDevice_t)a0, 'C', (unsigned int *)a1, a2);
    case SLOT_GRAPHICS_PROCESSES:
        return mock_smi_processes((nvmlDevice_t)a0, 'G', (unsigned int *)a1, a2);
    case SLOT_MPS_PROCESSES:
        return mock_smi_processes((nvmlDevice_t)a0, 0, (unsigned int *)a1, a2);
    case SLOT_HOST_MAX_PCIE_GEN:
        return host_max_pcie_gen(a0, a1);
    case SLOT_TLIMIT_TEMP:
        return mock_tlimit_temperature((nvmlDevice_t)a0, (int *)a1);
    case SLOT_ADDRESSING_MODE:
        return mock_addressing_mode((nvmlDevice_t)a0, (unsigned int *)a1);
    case SLOT_PCIE_ATOMICS:
        return mock_pcie_atomics((nvmlDevice_t)a0, (unsigned int *)a1);
    case SLOT_SPARSE_OPERATION_MODE:
        return mock_sparse_operation_mode((nvmlDevice_t)a0, (unsigned int *)a1);
    case SLOT_GPU_PART_NUMBER:
        return mock_part_number((nvmlDevice_t)a0, 0, (char *)a1, (unsigned int)(uintptr_t)a2);
    case SLOT_FRU_PART_NUMBER:
        return mock_part_number((nvmlDevice_t)a0, 1, (char *)a1, (unsigned int)(uintptr_t)a2);
    case SLOT_RESET_IS_PRIMARY:
        return reset_is_primary(a0, a1);
    case SLOT_RESET_MODE:
        if (a0 == NULL)
            return NVML_ERROR_INVALID_ARGUMENT;
        *(unsigned int *)a0 = 0;            /* reset at once: no persistence mode to drop */
        return NVML_SUCCESS;
    case SLOT_RESET_GROUP_ALLOC:
    case SLOT_RESET_GROUP_GET:
        return mock_require_init();
    case SLOT_RESET:
        return mock_reset_gpus((unsigned int)(uintptr_t)a0, (const nvmlDevice_t *)a1);
    default:
        (void)a0, (void)a1, (void)a2;
        return NVML_ERROR_NOT_SUPPORTED;
    }
}

/* One function per slot, so dispatch() knows which slot was called. */
#define SLOT(n) \
    static nvmlReturn_t slot_##n(void *a0, void *a1, void *a2, void *a3, void *a4, void *a5) \
    { return dispatch(n, a0, a1, a2, a3, a4, a5); }
#define SLOTS10(t) SLOT(t##0) SLOT(t##1) SLOT(t##2) SLOT(t##3) SLOT(t##4) \
                   SLOT(t##5) SLOT(t##6) SLOT(t##7) SLOT(t##8) SLOT(t##9)
#define REF(n) slot_##n,
#define REFS10(t) REF(t##0) REF(t##1) REF(t##2) REF(t##3) REF(t##4) \
                  REF(t##5) REF(t##6) REF(t##7) REF(t##8) REF(t##9)
/* slot_0 .. slot_9 are written out: 00..09 would read as octal. */
SLOT(0) SLOT(1) SLOT(2) SLOT(3) SLOT(4) SLOT(5) SLOT(6) SLOT(7) SLOT(8) SLOT(9)
SLOTS10(1) SLOTS10(2) SLOTS10(3) SLOTS10(4) SLOTS10(5) SLOTS10(6) SLOTS10(7) SLOTS10(8)
SLOTS10(9) SLOTS10(10) SLOTS10(11) SLOTS10(12) SLOTS10(13) SLOTS10(14) SLOTS10(15) SLOTS10(16)
SLOTS10(17) SLOTS10(18) SLOTS10(19) SLOTS10(20) SLOTS10(21) SLOTS10(22) SLOTS10(23) SLOTS10(24)

static const struct {
    size_t size;                        /* bytes, this word included: 0x7d8 */
    slot_fn slots[SLOT_COUNT];
} smi_table = {
    sizeof smi_table,
    {
        REF(0) REF(1) REF(2) REF(3) REF(4) REF(5) REF(6) REF(7) REF(8) REF(9)
        REFS10(1) REFS10(2) REFS10(3) REFS10(4) REFS10(5) REFS10(6) REFS10(7) REFS10(8)
        REFS10(9) REFS10(10) REFS10(11) REFS10(12) REFS10(13) REFS10(14) REFS10(15) REFS10(16)
        REFS10(17) REFS10(18) REFS10(19) REFS10(20) REFS10(21) REFS10(22) REFS10(23) REFS10(24)
    },
};

_Static_assert(sizeof smi_table == 0x7d8, "NVIDIA's table for this id is 0x7d8 bytes");

nvmlReturn_t DECLDIR nvmlInternalGetExportTable(const void **table, const nvmlExportTableId_t *id)
{
    if (table == NULL || id == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
#ifdef MOKKA_TRACE_EXPORT_TABLE
    fprintf(stderr, "mokka-export-table: id");
    for (int i = 0; i < 16; i++)
        fprintf(stderr, " %02x", id->bytes[i]);
    fprintf(stderr, "\n");
#endif
    if (memcmp(id->bytes, SMI_TABLE_ID, sizeof SMI_TABLE_ID) != 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *table = &smi_table;
    return NVML_SUCCESS;
}
