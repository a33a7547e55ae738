/* mokka_shim_map: the library's configuration, read once at load, applied. */
#define _GNU_SOURCE
#include <errno.h>

#include "shim.h"

static struct mokka_shim_config config;
static int configured;                  /* atomic: set once config is complete */

__attribute__((constructor)) static void load(void)
{
    struct mokka_shim_config c;
    mokka_shim_configure(&c);
    config = c;
    __atomic_store_n(&configured, 1, __ATOMIC_RELEASE);
}

const char *mokka_shim_map(const char *path, char buf[MOKKA_SHIM_PATH_MAX])
{
    int saved = errno;
    const char *out;
    if (__atomic_load_n(&configured, __ATOMIC_ACQUIRE)) {
        out = mokka_shim_rewrite(&config, path, buf, MOKKA_SHIM_PATH_MAX);
    } else {                            /* called before our constructor ran */
        struct mokka_shim_config c;
        mokka_shim_configure(&c);
        out = mokka_shim_rewrite(&c, path, buf, MOKKA_SHIM_PATH_MAX);
    }
    if (out != NULL)
        errno = saved;
    return out;
}
