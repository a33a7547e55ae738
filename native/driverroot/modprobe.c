/* modprobe, as a Mokka driver root answers it.
 *
 *     /sbin/modprobe [-q] [-v] [-n] [-a] MODULE [PARAM=VALUE...]
 *
 * NVIDIA's GPU Operator validator loads the driver's modules with
 * `chroot /run/nvidia/driver /sbin/modprobe nvidia` (then nvidia-uvm, nvidia-modeset)
 * before it makes the device nodes. On a Mokka node the driver's modules are loaded
 * already as far as any program can see: the driver root's own /proc/modules (staged by
 * the agent from the profile) lists them. So this stand-in loads nothing and changes
 * nothing. A module that list has (dashes and underscores alike, as modprobe matches them)
 * exits 0 in silence, as modprobe does for a loaded module; any other gets modprobe's own
 * line, `modprobe: FATAL: Module X not found in directory /lib/modules/<release>`, and
 * exit 1. With -a every argument is a module; without it the words after the module are
 * its parameters, which a loaded module ignores. Unloading (-r) and the other options are
 * refused with one line. Static (musl): a driver root has no libc of its own. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "mokka_names.h"

#define LOADED_MAX (256 * 1024)     /* /proc/modules of a busy kernel is a few KiB */
#define NAME_MAX_LEN 64             /* the kernel's MODULE_NAME_LEN */

static char loaded[LOADED_MAX + 1];
static size_t loaded_len;

/* The module names the driver root's /proc/modules lists; nothing if it cannot be read
 * (then every module is "not found", as on a root whose kernel has none of them). */
static void read_loaded(void)
{
    int fd = open(MOKKA_MODPROBE_LOADED, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return;
    while (loaded_len < LOADED_MAX) {
        ssize_t n = read(fd, loaded + loaded_len, LOADED_MAX - loaded_len);
        if (n <= 0)
            break;
        loaded_len += (size_t)n;
    }
    close(fd);
    loaded[loaded_len] = '\0';
}

/* modprobe treats '-' and '_' in a module name as the same character. */
static int same_name(const char *a, size_t alen, const char *b)
{
    size_t i;
    for (i = 0; i < alen && b[i]; i++) {
        char x = a[i] == '-' ? '_' : a[i], y = b[i] == '-' ? '_' : b[i];
        if (x != y)
            return 0;
    }
    return i == alen && b[i] == '\0';
}

static int is_loaded(const char *module)
{
    const char *line = loaded, *end = loaded + loaded_len;
    while (line < end) {
        const char *stop = memchr(line, '\n', (size_t)(end - line));
        const char *eol = stop ? stop : end;
        size_t len = strcspn(line, " \t\n");
        if (line + len > eol)
            len = (size_t)(eol - line);
        if (len > 0 && len < NAME_MAX_LEN && same_name(line, len, module))
            return 1;
        line = eol + 1;
    }
    return 0;
}

static int probe(const char *module, int quiet)
{
    struct utsname u;
    if (is_loaded(module))
        return 0;
    if (!quiet)
        fprintf(stderr, "modprobe: FATAL: Module %s not found in directory %s/%s\n", module,
                MOKKA_MODPROBE_MODULES_DIR, uname(&u) == 0 ? u.release : "");
    return 1;
}

int main(int argc, char **argv)
{
    int quiet = 0, all = 0, i = 1, rc = 0;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *opt = argv[i];
        if (!strcmp(opt, "-q") || !strcmp(opt, "--quiet"))
            quiet = 1;
        else if (!strcmp(opt, "-a") || !strcmp(opt, "--all"))
            all = 1;
        else if (!strcmp(opt, "-v") || !strcmp(opt, "--verbose") || !strcmp(opt, "-n") ||
                 !strcmp(opt, "--dry-run") || !strcmp(opt, "-b") || !strcmp(opt, "--use-blacklist"))
            continue;                   /* nothing to load: nothing to show or skip */
        else if (!strcmp(opt, "--")) {
            i++;
            break;
        } else {
            fprintf(stderr, "modprobe: ERROR: %s: this driver root's modprobe (Mokka's mock "
                    "driver) only answers for loaded modules: use -q, -v, -n, -a or none\n", opt);
            return 1;
        }
    }
    if (i >= argc) {
        fputs("modprobe: ERROR: missing parameters. See -h.\n", stderr);
        return 1;
    }
    read_loaded();
    if (!all)
        return probe(argv[i], quiet);
    for (; i < argc; i++)
        rc |= probe(argv[i], quiet);
    return rc;
}
