/* GPU reset: what NVIDIA's `nvidia-smi -r -i N` does over the mock.
 *
 * A reset drops the GPU's runtime overrides, as `mokka ctl reset N` and our
 * nvidia-smi do (mokka/engine/overrides.reset): it removes the GPU's document
 * from the overrides directory, the YAML first (a companion alone counts as no
 * document) and the companion after. Nothing is parsed or edited, so a reset
 * needs no lock and works whatever style the document was written in; the
 * documents of other GPUs and the one for every GPU stay as they are, and so does the GPU's
 * lasting-gpu<N> document: what the real GPU keeps across a reset (its aggregate ECC counts,
 * remapped rows and retired pages, in the InfoROM), while its volatile counts, NVLink error
 * counters and pending remaps or retirements go with its own document.
 *
 * It also does to the GPU's MIG partitions what a reset does on the real driver
 * (mig.c): a pending MIG mode becomes the current one, and no instance survives.
 * Its recovery action, an override,
 * goes with the overrides: after a reset NVML reports NONE, as NVIDIA documents a
 * reset recovering a GPU whose action was GPU_RESET ("Error Recovery and Response
 * Flags"; a NODE_REBOOT is cleared too, though on a real node only a reboot would).
 * And what NVML's setters set goes back to the board's (../engine/settings.c), but a
 * pending ECC mode, which becomes the current one; a drained GPU leaves the drain state
 * with them (drain.c): the reset re-initializes it, and what held it out of service
 * ends with that.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "mig/mig.h"

/* `name` removed from the overrides directory (a link in its place is removed, never
 * followed; so is the directory: a link there is refused). */
static int remove_file(int dirfd, const char *dir, const char *name)
{
    if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
        return 1;
    mock_say("cannot reset: removing %s/%s: %s (try 'mokka ctl reset' as the file's owner)", dir, name,
             strerror(errno));
    return 0;
}

static nvmlReturn_t reset_one(const struct mock_node *n, unsigned int phys)
{
    char yaml[32], nvml[32];
    snprintf(yaml, sizeof yaml, "%s%u.yaml", MOKKA_OVERRIDES_GPU_SCOPE_PREFIX, phys);
    config_companion_path(yaml, nvml, sizeof nvml);
    int dirfd = flat_open_dir(AT_FDCWD, n->overrides_dir);
    if (dirfd < 0 && errno == ENOENT)
        return NVML_SUCCESS;                      /* no overrides at all */
    if (dirfd < 0) {
        mock_say("cannot reset: %s is not a directory (a link is not followed)", n->overrides_dir);
        return NVML_ERROR_NO_PERMISSION;
    }
    int ok = remove_file(dirfd, n->overrides_dir, yaml) && remove_file(dirfd, n->overrides_dir, nvml);
    close(dirfd);
    return ok ? NVML_SUCCESS : NVML_ERROR_NO_PERMISSION;
}

nvmlReturn_t mock_reset_gpus(unsigned int count, const nvmlDevice_t *devices)
{
    const struct mock_node *n = mock_node();
    if (!n || !devices)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int phys[MOCK_MAX_GPUS];
    if (count > MOCK_MAX_GPUS)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned int i = 0; i < count; i++)
        if (!mock_physical_of(devices[i], &phys[i]))
            return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned int i = 0; i < count; i++) {
        nvmlReturn_t ret = reset_one(n, phys[i]);
        if (ret == NVML_SUCCESS)
            ret = mig_reset(n, phys[i]);
        if (ret == NVML_SUCCESS)
            ret = settings_reset(n, phys[i]);
        if (ret != NVML_SUCCESS)
            return ret;
    }
    return NVML_SUCCESS;
}
