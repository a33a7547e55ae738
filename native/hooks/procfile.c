/* A kernel proc file with the node's lines added, bound read-only over it (procfile.h).
 *
 * Go programs read two of the kernel's proc files for the driver: mig-parted looks for
 * `nvidia` in /proc/modules, and the GPU Operator's validator takes the majors of `nvidia`,
 * `nvidia-uvm` and `nvidia-caps` from /proc/devices (without them: "no NVIDIA devices
 * found"). runc refuses OCI mounts under /proc, so the hook copies the kernel's file, adds
 * the lines the agent stages where the kernel would print them, and binds the copy
 * read-only over the file:
 *
 *   /proc/modules   OVERLAY/sysview/proc-modules after the kernel's lines, unless one of
 *                   those is the `nvidia` module's;
 *   /proc/devices   OVERLAY/sysview/proc-devices at the end of the "Character devices:"
 *                   section (before the blank line that precedes "Block devices:"), unless
 *                   that section has a device named `nvidia` or, before driver 545,
 *                   `nvidia-frontend`: a real driver, left as it is.
 *
 * Only a file the kernel has is covered: a kernel without module support has no
 * /proc/modules, and its containers have none either; that is normal, nothing is said. The
 * copy is written in a scratch tmpfs mounted on a hidden directory of the hook's new
 * /proc/driver tmpfs. Once the copy is bound, the scratch tmpfs is detached and its
 * directory removed: the bind keeps the copy alive, and the /proc/driver tmpfs keeps no
 * removed-but-used file (one would stop it from turning read-only: EBUSY). Both the
 * kernel's file and the staged lines are read within bounds, neither through a link. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hook.h"
#include "mokka_names.h"
#include "procfile.h"

#define KERNEL_MAX (1 << 20)            /* /proc/modules of a busy kernel is tens of KiB */
#define STAGED_MAX (64 << 10)
#define SCRATCH ".scratch"
/* Room for the kernel's lines (KERNEL_MAX) and the staged ones (STAGED_MAX). */
#define SCRATCH_OPTIONS "mode=0700,size=2m,nr_inodes=4"
#define CHAR_SECTION "Character devices:"
#define REL_MAX 64

/* Where the staged lines go in the kernel's text (len bytes): 1 and *at; 0 when a driver's
 * lines are there already; -1 when the text has no place for them. */
typedef int (*place_fn)(const char *text, size_t len, size_t *at);

struct procfile {
    const char *name;           /* the kernel's file, under /proc */
    const char *staged;         /* the lines to add, under OVERLAY/sysview */
    const char *what;           /* what those lines are, for the lines said */
    place_fn place;
};

/* The line at text[i] ends at the returned offset (its '\n', or len). */
static size_t line_end(const char *text, size_t len, size_t i)
{
    const char *nl = memchr(text + i, '\n', len - i);
    return nl ? (size_t)(nl - text) : len;
}

static int module_named(const char *line, size_t n, const char *name)
{
    size_t k = strlen(name);
    return n > k && memcmp(line, name, k) == 0 && line[k] == ' ';
}

/* A /proc/devices line: "%3d %s", the major right-aligned. 1 when it is one, with its name
 * at *name (*name_len bytes). */
static int device_line(const char *line, size_t n, const char **name, size_t *name_len)
{
    size_t i = 0;
    while (i < n && line[i] == ' ')
        i++;
    size_t digits = i;
    while (i < n && line[i] >= '0' && line[i] <= '9')
        i++;
    if (i == digits || i >= n || line[i] != ' ')
        return 0;
    *name = line + i + 1;
    *name_len = n - i - 1;
    return 1;
}

static int is(const char *text, size_t n, const char *word)
{
    return n == strlen(word) && memcmp(text, word, n) == 0;
}

/* /proc/modules: after the kernel's lines, unless the nvidia module is loaded. */
static int place_modules(const char *text, size_t len, size_t *at)
{
    for (size_t i = 0; i < len; i = line_end(text, len, i) + 1)
        if (module_named(text + i, line_end(text, len, i) - i, "nvidia"))
            return 0;
    *at = len;
    return 1;
}

/* /proc/devices: after the last line of the "Character devices:" section, unless a driver
 * registered its devices there. */
static int place_devices(const char *text, size_t len, size_t *at)
{
    int in_section = 0;
    size_t i = 0;
    for (; i < len; i = line_end(text, len, i) + 1) {
        size_t n = line_end(text, len, i) - i;
        const char *name;
        size_t name_len;
        if (!in_section)
            in_section = is(text + i, n, CHAR_SECTION);
        else if (!device_line(text + i, n, &name, &name_len))
            break;                      /* the blank line before "Block devices:" */
        else if (is(name, name_len, "nvidia") || is(name, name_len, "nvidia-frontend"))
            return 0;
    }
    if (!in_section)
        return -1;
    *at = i < len ? i : len;
    return 1;
}

static const struct procfile FILES[] = {
    {"modules", MOKKA_SYS_VIEW_PROC_MODULES, "module lines", place_modules},
    {"devices", MOKKA_SYS_VIEW_PROC_DEVICES, "char device lines", place_devices},
};

/* The kernel's text with `ours` at `at` (each part ending its last line): NULL on ENOMEM. */
static char *with_lines(const char *text, size_t len, size_t at, const char *ours, size_t extra,
                        size_t *out_len)
{
    int newline_before = at > 0 && text[at - 1] != '\n';
    int newline_after = extra > 0 && ours[extra - 1] != '\n';
    char *out = malloc(len + extra + 3);
    if (!out)
        return NULL;
    size_t n = 0;
    memcpy(out, text, at);
    n += at;
    if (newline_before)
        out[n++] = '\n';
    memcpy(out + n, ours, extra);
    n += extra;
    if (newline_after)
        out[n++] = '\n';
    memcpy(out + n, text + at, len - at);
    n += len - at;
    *out_len = n;
    return out;
}

/* The lines the node stages for `f`, read within bounds without following a link; NULL
 * (one line said) when there are none. */
static char *staged_lines(int overlay, const char *overlay_path, const struct procfile *f, size_t *len)
{
    char rel[REL_MAX];
    snprintf(rel, sizeof rel, "%s/%s", MOKKA_SYS_VIEW_DIR, f->staged);
    int fd = open_beneath(overlay, rel, O_RDONLY | O_NONBLOCK);
    struct stat st;
    char *text = NULL;
    if (fd < 0)
        say("no staged %s at %s/%s (%s): /proc/%s left as the kernel has it",
            f->what, overlay_path, rel, strerror(errno), f->name);
    else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        say("%s/%s is not a file: /proc/%s left as the kernel has it", overlay_path, rel, f->name);
    else if (!(text = read_all(fd, STAGED_MAX, len)))
        say("cannot read %s/%s: %s; /proc/%s left as the kernel has it",
            overlay_path, rel, strerror(errno), f->name);
    if (fd >= 0)
        close(fd);
    return text;
}

static int write_all(int fd, const char *text, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, text, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        text += n;
        len -= (size_t)n;
    }
    return 0;
}

/* `text` as the file <proc>/<name>: written in a scratch tmpfs below `tmpfs`, bound
 * read-only over the kernel's file; the scratch tmpfs then detached and its directory gone. */
static void bind_copy(int proc, int tmpfs, const char *name, const char *text, size_t len)
{
    char where[FD_PATH];
    int made = mkdirat(tmpfs, SCRATCH, 0700);
    int hole = made == 0 ? openat(tmpfs, SCRATCH, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
    if (hole >= 0)
        fd_path(where, hole);
    int mounted = hole >= 0 && mount("tmpfs", where, "tmpfs", RO_FLAGS, SCRATCH_OPTIONS) == 0;
    int scratch = mounted ? openat(tmpfs, SCRATCH, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
    int fd = scratch >= 0 ? openat(scratch, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444) : -1;
    int ok = fd >= 0 && write_all(fd, text, len) == 0;
    if (fd >= 0)
        close(fd);
    int from = ok ? openat(scratch, name, O_PATH | O_NOFOLLOW | O_CLOEXEC) : -1;
    int to = ok ? openat(proc, name, O_PATH | O_NOFOLLOW | O_CLOEXEC) : -1;
    if (!ok || from < 0 || to < 0 || bind_fd(from, to, 0) != 0 || read_only(proc, name) != 0)
        say("cannot mount the driver's /proc/%s: %s", name, strerror(errno));
    if (from >= 0)
        close(from);
    if (to >= 0)
        close(to);
    if (scratch >= 0) {
        fd_path(where, scratch);
        if (umount2(where, MNT_DETACH) != 0)
            say("cannot detach the scratch tmpfs of /proc/%s: %s", name, strerror(errno));
        close(scratch);
    } else if (mounted) {
        say("cannot open the scratch tmpfs of /proc/%s: %s", name, strerror(errno));
    }
    if (hole >= 0)
        close(hole);
    if (made == 0)
        unlinkat(tmpfs, SCRATCH, AT_REMOVEDIR);
}

static void give(int proc, int tmpfs, int overlay, const char *overlay_path, const struct procfile *f)
{
    int kernel = openat(proc, f->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (kernel < 0) {
        if (errno != ENOENT)            /* none: a kernel without it, nothing to add to */
            say("cannot open /proc/%s: %s; no driver lines in it", f->name, strerror(errno));
        return;
    }
    struct stat st;
    size_t len = 0;
    char *text = NULL;
    if (fstat(kernel, &st) != 0 || !S_ISREG(st.st_mode))
        say("/proc/%s is not the kernel's file: no driver lines in it", f->name);
    else if (!(text = read_all(kernel, KERNEL_MAX, &len)))
        say("cannot read /proc/%s: %s; no driver lines in it", f->name, strerror(errno));
    close(kernel);
    if (!text)
        return;
    size_t at = 0, extra = 0, out_len = 0;
    int where = f->place(text, len, &at);
    char *ours = where == 1 ? staged_lines(overlay, overlay_path, f, &extra) : NULL;
    char *copy = ours ? with_lines(text, len, at, ours, extra, &out_len) : NULL;
    if (where < 0)
        say("/proc/%s has no \"%s\" section: left as the kernel has it", f->name, CHAR_SECTION);
    else if (ours && !copy)
        say("cannot copy /proc/%s: %s", f->name, strerror(errno));
    else if (copy)
        bind_copy(proc, tmpfs, f->name, copy, out_len);
    free(copy);
    free(ours);
    free(text);
}

void procfile_give(int proc, int tmpfs, int overlay, const char *overlay_path)
{
    for (size_t i = 0; i < sizeof FILES / sizeof FILES[0]; i++)
        give(proc, tmpfs, overlay, overlay_path, &FILES[i]);
}
