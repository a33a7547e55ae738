/* Where the profile is: MOCK_NVML_CONFIG, or the overlay this library sits in,
 * or the fixed places the CDI spec and the overlay mount it. Also the one
 * wording of the messages nvmlInit prints. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <pthread.h>

#include "engine.h"

#define SAY_PREFIX "mock NVML: "
#define COMPILE_HINT MOKKA_COMPANION_COMMAND     /* mokka/core/names.py */
/* Where `node-agent --host-root ROOT` stages a node's config: the way to aim any tool at it. */
#define STAGED_CONFIG "ROOT" MOKKA_OVERLAY_HOST_PATH "/" MOKKA_DRIVER_CONFIG_DIR "/" MOKKA_PROFILE_FILE

static void vsay(const char *fmt, va_list ap, char *line, size_t size)
{
    size_t n = (size_t)snprintf(line, size, "%s", SAY_PREFIX);
    vsnprintf(line + n, size - n - 1, fmt, ap);
    for (char *p = line; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';                     /* exactly one line, whatever a path holds */
    strcat(line, "\n");
}

static void emit(const char *line)
{
    size_t len = strlen(line);
    while (len > 0) {
        ssize_t w = write(STDERR_FILENO, line, len);
        if (w <= 0)
            return;
        line += w;
        len -= (size_t)w;
    }
}

void mock_say(const char *fmt, ...)
{
    char line[2 * MOCK_PATH_MAX + 512];
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap, line, sizeof line);
    va_end(ap);
    emit(line);
}

static unsigned long fnv1a(const char *s)
{
    unsigned long h = 2166136261ul;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619ul;
    return h;
}

void mock_warn_once(const char *fmt, ...)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static unsigned long seen[32];
    static unsigned int nseen;
    char line[2 * MOCK_PATH_MAX + 512];
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap, line, sizeof line);
    va_end(ap);
    unsigned long h = fnv1a(line);
    pthread_mutex_lock(&lock);
    int repeat = 0;
    for (unsigned int i = 0; i < nseen && i < 32; i++)
        repeat |= seen[i] == h;
    if (!repeat)
        seen[nseen++ % 32] = h;
    pthread_mutex_unlock(&lock);
    if (!repeat)
        emit(line);
}

void mock_say_unusable(const char *ignoring, const char *yaml, const struct flat_why *why, int compilable)
{
    int of_yaml = why->file == yaml;
    const char *file = why->file ? why->file : yaml;
    if (!ignoring && of_yaml)
        mock_say("cannot read %s (%s): set %s to a readable profile", yaml, why->reason, MOKKA_ENV_NVML_CONFIG);
    else if (!ignoring)
        mock_say("%s has no compiled state (%s: %s): run '" COMPILE_HINT " %s'", yaml, file, why->reason, yaml);
    else if (of_yaml)
        mock_warn_once("ignoring %s %s: %s", ignoring, yaml, why->reason);
    else if (compilable)
        mock_warn_once("ignoring %s %s: %s: %s: run '" COMPILE_HINT " %s'", ignoring, yaml, file, why->reason,
                       yaml);
    else
        mock_warn_once("ignoring %s %s: %s: %s", ignoring, yaml, file, why->reason);
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int join(char *out, size_t size, const char *a, const char *b, const char *c)
{
    int n = snprintf(out, size, "%s/%s%s%s", a, b, c ? "/" : "", c ? c : "");
    return n > 0 && (size_t)n < size;
}

void config_companion_path(const char *yaml, char *out, size_t size)
{
    const char *dot = strrchr(yaml, '.');
    const char *slash = strrchr(yaml, '/');
    size_t head = dot ? (size_t)(dot - yaml) : 0;
    size_t after_slash = slash ? (size_t)(slash - yaml) + 1 : 0;
    size_t keep = dot && head > after_slash ? head : strlen(yaml);
    snprintf(out, size, "%.*s%s", (int)keep, yaml, MOKKA_NVML_COMPANION_SUFFIX);
}

void config_overrides_dir(const char *config_yaml, char *out, size_t size)
{
    const char *env = getenv(MOKKA_ENV_NVML_OVERRIDES);
    if (env && *env) {
        snprintf(out, size, "%s", env);
        return;
    }
    char dir[MOCK_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", config_yaml);     /* absolute (config_locate) */
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    snprintf(out, size, "%s/%s", dir, MOKKA_OVERRIDES_DIR);
}

/* `<root>/driver/usr/lib64/<this library>` -> `<root>/driver/config/config.yaml`. */
static int beside_library(const char *lib, char *out, size_t size)
{
    char dir[MOCK_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", lib);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return 0;
    *slash = '\0';
    if (!ends_with(dir, "/" MOKKA_DRIVER_LIB_DIR))
        return 0;
    dir[strlen(dir) - strlen(MOKKA_DRIVER_LIB_DIR) - 1] = '\0';
    return join(out, size, dir, MOKKA_DRIVER_CONFIG_DIR, MOKKA_PROFILE_FILE) && exists(out);
}

/* Any object of this library tells dladdr which file it came from. */
static const char here_in_the_library = 0;

static int from_library_path(char *out, size_t size)
{
    Dl_info info;
    if (!dladdr(&here_in_the_library, &info) || !info.dli_fname)
        return 0;
    if (beside_library(info.dli_fname, out, size))
        return 1;
    char real[PATH_MAX];
    return realpath(info.dli_fname, real) && beside_library(real, out, size);
}

/* os.path.abspath: relative to the working directory at nvmlInit, so a later
 * chdir moves nothing. 0 when the result does not fit. */
static int make_absolute(char *path, size_t size)
{
    if (path[0] == '/')
        return 1;
    char cwd[MOCK_PATH_MAX], rel[MOCK_PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return 0;
    snprintf(rel, sizeof rel, "%s", path);
    int n = snprintf(path, size, "%s/%s", cwd, rel);
    return n > 0 && (size_t)n < size;
}

static nvmlReturn_t locate(char *yaml, size_t size);

nvmlReturn_t config_locate(char *yaml, size_t size)
{
    nvmlReturn_t ret = locate(yaml, size);
    if (ret == NVML_SUCCESS && !make_absolute(yaml, size)) {
        mock_say("%s: the working directory and this path are too long: give an absolute %s",
                 yaml, MOKKA_ENV_NVML_CONFIG);
        return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    return ret;
}

static nvmlReturn_t locate(char *yaml, size_t size)
{
    const char *env = getenv(MOKKA_ENV_NVML_CONFIG);
    if (env && *env) {
        if (!exists(env)) {
            mock_say("%s=%s does not exist: set it to a staged node's config (" STAGED_CONFIG ") or to a "
                     "profile compiled with '" COMPILE_HINT " PROFILE'", MOKKA_ENV_NVML_CONFIG, env);
            return NVML_ERROR_DRIVER_NOT_LOADED;
        }
        snprintf(yaml, size, "%s", env);
        return NVML_SUCCESS;
    }
    if (from_library_path(yaml, size))
        return NVML_SUCCESS;
    if (join(yaml, size, MOKKA_CDI_CONFIG_MOUNT, MOKKA_PROFILE_FILE, NULL) && exists(yaml))
        return NVML_SUCCESS;
    if (join(yaml, size, MOKKA_OVERLAY_MOUNT_PATH, MOKKA_DRIVER_CONFIG_DIR, MOKKA_PROFILE_FILE) &&
        exists(yaml))
        return NVML_SUCCESS;
    if (join(yaml, size, MOKKA_OVERLAY_HOST_PATH, MOKKA_DRIVER_CONFIG_DIR, MOKKA_PROFILE_FILE) &&
        exists(yaml))
        return NVML_SUCCESS;
    mock_say("no GPU profile found: set %s to a staged node's config (" STAGED_CONFIG "), or run the "
             "tools staged in its driver/usr/bin", MOKKA_ENV_NVML_CONFIG);
    return NVML_ERROR_DRIVER_NOT_LOADED;
}
