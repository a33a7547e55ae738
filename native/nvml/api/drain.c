/* Drain states: nvmlDeviceModifyDrainState and nvmlDeviceQueryDrainState, by PCI
 * address, held node-wide so every process and both nvidia-smis see one state.
 *
 * A drained GPU is the file `drain-gpu<physical index>.nvml` beside config.yaml
 * (names.DRAIN_STATE_*): the header line, then `uuid <the GPU's UUID>`. One file per
 * GPU, so two processes draining two GPUs never rewrite each other's state; each is
 * written to a temp file and renamed, and leaving the drain state removes it. A GPU
 * reset removes it too (reset.c), as the reset re-initializes the GPU; the agent
 * removes them at boot, as a reboot loses the driver's state.
 *
 * Every container can write that directory: the reader takes only a regular file
 * (never a link, a FIFO or a device), of at most DRAIN_STATE_MAX_BYTES, that is
 * exactly the two lines naming this GPU's UUID; anything else reads as not draining,
 * and the next change replaces it.
 *
 * NVML's rules: changing the state is an administrator's (NO_PERMISSION otherwise);
 * entering it needs persistence mode off (IN_USE otherwise: "Persistence mode must be
 * disabled to perform this function", nvidia-smi drain -h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"
#include "engine/regular.h"

/* The GPU this process sees at `pci`'s domain, bus and device, or NULL. */
static const struct mock_gpu *gpu_at(const struct mock_node *n, const nvmlPciInfo_t *pci)
{
    for (unsigned int i = 0; i < n->nvisible; i++) {
        const struct mock_gpu *g = &n->gpus[n->visible[i]];
        unsigned long long domain, bus, device;
        if (gpu_u64(g, K_PCI_DOMAIN, &domain) && gpu_u64(g, K_PCI_BUS, &bus) && gpu_u64(g, K_PCI_DEVICE, &device) &&
            domain == pci->domain && bus == pci->bus && device == pci->device)
            return g;
    }
    return NULL;
}

/* The directory the drain files are in (config.yaml's), opened without following a link. */
static int state_dir(const struct mock_node *n)
{
    char dir[MOCK_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", n->config_yaml);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    return open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

static void file_name(const struct mock_gpu *g, char *out, size_t size)
{
    snprintf(out, size, MOKKA_DRAIN_STATE_PREFIX "%u" MOKKA_DRAIN_STATE_SUFFIX, g->phys);
}

/* What the file of a drained `g` holds, into out; 0 when the GPU has no UUID to name. */
static int body(const struct mock_gpu *g, char *out, size_t size)
{
    char uuid[96];
    if (gpu_str(g, K_UUID, uuid, sizeof uuid) != 1 || strchr(uuid, '\n'))
        return 0;
    int w = snprintf(out, size, MOKKA_DRAIN_STATE_HEADER "\nuuid %s\n", uuid);
    return w > 0 && (size_t)w < size;
}

/* 1 when `g` is drained: its file holds exactly what body() writes for it. */
static int drained(const struct mock_node *n, const struct mock_gpu *g)
{
    char want[MOKKA_DRAIN_STATE_MAX_BYTES + 1], got[MOKKA_DRAIN_STATE_MAX_BYTES + 2], name[64];
    if (!body(g, want, sizeof want))
        return 0;
    file_name(g, name, sizeof name);
    int dirfd = state_dir(n);
    if (dirfd < 0)
        return 0;
    struct stat st;
    int fd = regular_open(dirfd, name, &st);
    close(dirfd);
    if (fd < 0)
        return 0;
    size_t used = 0;
    while (used < sizeof got - 1) {             /* bounded: one byte past the most it may hold */
        ssize_t r = read(fd, got + used, sizeof got - 1 - used);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        used += (size_t)r;
    }
    close(fd);
    got[used] = '\0';
    return used == strlen(want) && memcmp(got, want, used) == 0;
}

/* Enter (write the file) or leave (remove it) the drain state: NVML_SUCCESS or why not. */
static nvmlReturn_t change(const struct mock_node *n, const struct mock_gpu *g, int enter)
{
    char name[64], text[MOKKA_DRAIN_STATE_MAX_BYTES + 1], tmp[96];
    file_name(g, name, sizeof name);
    if (enter && !body(g, text, sizeof text))
        return NVML_ERROR_UNKNOWN;
    int dirfd = state_dir(n);
    if (dirfd < 0) {
        mock_say("cannot change the drain state: the directory of %s cannot be opened", n->config_yaml);
        return NVML_ERROR_UNKNOWN;
    }
    nvmlReturn_t ret = NVML_SUCCESS;
    if (!enter) {
        if (unlinkat(dirfd, name, 0) != 0 && errno != ENOENT)
            ret = errno == EACCES || errno == EPERM || errno == EROFS ? NVML_ERROR_NO_PERMISSION
                                                                       : NVML_ERROR_UNKNOWN;
        close(dirfd);
        return ret;
    }
    static unsigned int serial;
    int fd = -1;
    for (int attempt = 0; attempt < 8 && fd < 0; attempt++) {   /* a name a workload planted: another */
        snprintf(tmp, sizeof tmp, ".%s.%ld.%u.tmp", name, (long)getpid(),
                 __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED));
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        ret = errno == EACCES || errno == EPERM || errno == EROFS ? NVML_ERROR_NO_PERMISSION : NVML_ERROR_UNKNOWN;
    } else {
        fchmod(fd, 0644);                         /* whatever the umask: every process reads it */
        size_t len = strlen(text), done = 0;
        while (done < len) {
            ssize_t w = write(fd, text + done, len - done);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                break;
            done += (size_t)w;
        }
        if (close(fd) != 0 || done != len || renameat(dirfd, tmp, dirfd, name) != 0) {
            ret = NVML_ERROR_UNKNOWN;
            unlinkat(dirfd, tmp, 0);
        }
    }
    close(dirfd);
    return ret;
}

nvmlReturn_t DECLDIR nvmlDeviceQueryDrainState (nvmlPciInfo_t *pciInfo, nvmlEnableState_t *currentState)
{
    nvmlReturn_t ret = mock_require_init();
    if (ret != NVML_SUCCESS)
        return ret;
    const struct mock_node *n = mock_node();
    const struct mock_gpu *g = n && pciInfo ? gpu_at(n, pciInfo) : NULL;
    if (!g || !currentState)
        return NVML_ERROR_INVALID_ARGUMENT;
    *currentState = drained(n, g) ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceModifyDrainState (nvmlPciInfo_t *pciInfo, nvmlEnableState_t newState)
{
    nvmlReturn_t ret = mock_require_init();
    if (ret != NVML_SUCCESS)
        return ret;
    const struct mock_node *n = mock_node();
    const struct mock_gpu *g = n && pciInfo ? gpu_at(n, pciInfo) : NULL;
    if (!g || (newState != NVML_FEATURE_ENABLED && newState != NVML_FEATURE_DISABLED))
        return NVML_ERROR_INVALID_ARGUMENT;
    if (geteuid() != 0)
        return NVML_ERROR_NO_PERMISSION;
    nvmlEnableState_t persistence;
    if (newState == NVML_FEATURE_ENABLED &&
        nvmlDeviceGetPersistenceMode(mock_handle_of(g), &persistence) == NVML_SUCCESS &&
        persistence == NVML_FEATURE_ENABLED)
        return NVML_ERROR_IN_USE;
    return change(n, g, newState == NVML_FEATURE_ENABLED);
}

nvmlReturn_t mock_undrain(const struct mock_node *n, unsigned int phys)
{
    return phys < n->count ? change(n, &n->gpus[phys], 0) : NVML_ERROR_INVALID_ARGUMENT;
}
