/* nvml-mock-proc-hook: the driver's proc files and the node's /sys view inside a
 * container, as an OCI createContainer hook.
 *
 *     nvml-mock-proc-hook OVERLAY          (the OCI state on stdin: runc's createContainer hook)
 *     nvml-mock-proc-hook OVERLAY ROOTFS   (no state read: `mokka exec`, ROOTFS "/" inside a
 *                                           private mount namespace it made)
 *
 * Programs that read /proc and /sys themselves (the device plugin reads
 * /proc/driver/nvidia-caps/mig-minors, mig-parted looks for `nvidia` in /proc/modules and
 * walks /sys/bus/pci/devices) cannot be reached by LD_PRELOAD, and runc refuses OCI mounts
 * under /proc. A createContainer hook runs in the container's mount namespace before
 * pivot_root, with the container's /proc and /sys already mounted in the rootfs: there
 * this helper
 *
 *   - mounts a small read-only tmpfs on <rootfs>/proc/driver holding each directory
 *     of the staged driver proc tree (OVERLAY/driver/proc/driver: nvidia/, nvidia-caps/)
 *     bound read-only, and every entry the kernel's /proc/driver had bound back in;
 *   - where the kernel has /proc/modules and /proc/devices, binds over each a read-only
 *     copy with the driver's lines added: its modules (OVERLAY/sysview/proc-modules) and
 *     the char devices they register (OVERLAY/sysview/proc-devices, whose majors the GPU
 *     Operator's validator reads), unless a driver's lines are there already (procfile.c);
 *   - gives <rootfs>/sys the staged PCI tree and modules of the GPUs the container's /dev
 *     holds, and the node's HCAs when the container's environment selects InfiniBand
 *     (MOCK_IB set and not "off": config.json's process.env, or under `mokka exec` the
 *     hook's own environment, which exec gives it) (sysview.c).
 *
 * It never fails the container: every problem is one line on stderr and exit 0, the
 * container then starts without the files. The mounts live and die with the container's
 * mount namespace; the container's /proc and /sys are made private first, so none of them
 * propagates back to the host. Given twice (the NRI adjustment and a CDI spec both name
 * it), the second run finds its mounts there and changes nothing. Paths inside the rootfs
 * are opened one component at a time without following links; the OCI state, config.json,
 * the kernel's proc files and the staged lines are read within bounds. Static (musl): it
 * runs in the runtime's namespace, whatever the host's libc. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "hook.h"
#include "json.h"
#include "mokka_names.h"
#include "procfile.h"
#include "sysview.h"

#define STATE_MAX (1 << 20)
#define CONFIG_MAX (16 << 20)
#define TMPFS_MAGIC 0x01021994
#define ENTRIES_MAX 64
#define NAME_MAX_LEN 255
#define PROC_NAME "proc"
#define DRIVER_NAME "driver"

#define ENV_VALUE_MAX 256

/* Whether the container's MOCK_IB (NULL: unset) selects InfiniBand: set, and not "off". */
static int infiniband_selected(const char *value)
{
    return value && value[0] && strcmp(value, MOKKA_IB_OFF) != 0;
}

/* The rootfs: config.json's root.path, against the bundle when relative; and in
 * *infiniband whether the container's environment (process.env) selects InfiniBand. */
static int rootfs_path(char *out, size_t size, int *infiniband)
{
    size_t len;
    char *state = read_all(STDIN_FILENO, STATE_MAX, &len);
    if (!state) {
        say("cannot read the OCI state on stdin: %s", strerror(errno));
        return -1;
    }
    char bundle[4096];
    int found = json_string_member(state, len, "bundle", bundle, sizeof bundle);
    free(state);
    if (found != 1 || bundle[0] != '/') {
        say("the OCI state names no absolute bundle");
        return -1;
    }
    char config_path[4096 + 16];
    snprintf(config_path, sizeof config_path, "%s/config.json", bundle);
    int fd = open(config_path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        say("cannot open %s: %s", config_path, strerror(errno));
        return -1;
    }
    char *config = read_all(fd, CONFIG_MAX, &len);
    close(fd);
    if (!config) {
        say("cannot read %s: %s", config_path, strerror(errno));
        return -1;
    }
    char root[4096], ib[ENV_VALUE_MAX];
    found = json_nested_string(config, len, "root", "path", root, sizeof root);
    *infiniband = json_process_env(config, len, MOKKA_ENV_IB, ib, sizeof ib) == 1 && infiniband_selected(ib);
    free(config);
    if (found != 1 || !root[0]) {
        say("%s names no root.path", config_path);
        return -1;
    }
    int n = root[0] == '/' ? snprintf(out, size, "%s", root) : snprintf(out, size, "%s/%s", bundle, root);
    if (n < 0 || (size_t)n >= size) {
        say("the rootfs path is too long");
        return -1;
    }
    return 0;
}

struct entries {
    unsigned count;
    char name[ENTRIES_MAX][NAME_MAX_LEN + 1];
    unsigned char dir[ENTRIES_MAX];
};

/* The entries of an open directory (its offset moves; the fd stays usable for *at). */
static int list(int dir, struct entries *out)
{
    int copy = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (copy < 0)
        return -1;
    DIR *d = fdopendir(copy);
    if (!d) {
        close(copy);
        return -1;
    }
    out->count = 0;
    struct dirent *e;
    while ((e = readdir(d)) && out->count < ENTRIES_MAX) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 || e->d_name[0] == '.')
            continue;
        struct stat st;
        if (fstatat(dir, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
            continue;                          /* procfs has links (self): not ours to keep */
        snprintf(out->name[out->count], sizeof out->name[0], "%s", e->d_name);
        out->dir[out->count++] = S_ISDIR(st.st_mode) ? 1 : 0;
    }
    closedir(d);
    return 0;
}

static int listed(const struct entries *e, const char *name)
{
    for (unsigned i = 0; i < e->count; i++)
        if (strcmp(e->name[i], name) == 0)
            return 1;
    return 0;
}

/* A mount point for `name` in the new tmpfs, bound from `source`'s entry of that name. */
static void bind_entry(int tmpfs, int source, const char *name, int is_dir, int make_read_only)
{
    int made = is_dir ? mkdirat(tmpfs, name, 0555) : 0;
    if (!is_dir) {
        int fd = openat(tmpfs, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
        made = fd < 0 ? -1 : close(fd);
    }
    int from = openat(source, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    int to = openat(tmpfs, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (made != 0 || from < 0 || to < 0 || bind_fd(from, to, 0) != 0)
        say("cannot mount /proc/driver/%s: %s", name, strerror(errno));
    else if (make_read_only && read_only(tmpfs, name) != 0)
        say("cannot make /proc/driver/%s read-only: %s", name, strerror(errno));
    if (from >= 0)
        close(from);
    if (to >= 0)
        close(to);
}

/* A tmpfs on /proc/driver: the kernel's entries bound back, the staged directories bound
 * read-only, the driver's lines in /proc/modules and /proc/devices (procfile.c, whose
 * scratch space is a hidden directory of this tmpfs); then the tmpfs itself read-only. */
static void give_driver_dir(int proc, int staged, int overlay, const char *overlay_path)
{
    int kernel = openat(proc, DRIVER_NAME, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (kernel < 0) {
        say("the kernel has no /proc/driver (%s): no driver proc files", strerror(errno));
        return;
    }
    struct statfs fs;
    if (fstatfs(kernel, &fs) == 0 && (unsigned long)fs.f_type == TMPFS_MAGIC) {
        close(kernel);          /* procfs never has a tmpfs there: ours, from a first run */
        return;
    }
    struct entries had, ours;
    if (list(kernel, &had) != 0 || list(staged, &ours) != 0) {
        say("cannot list /proc/driver or the staged tree: %s", strerror(errno));
        close(kernel);
        return;
    }
    char target[FD_PATH];
    fd_path(target, kernel);
    if (mount("tmpfs", target, "tmpfs", RO_FLAGS, "mode=0555,size=65536,nr_inodes=1024") != 0) {
        say("cannot mount a tmpfs on /proc/driver: %s", strerror(errno));
        close(kernel);
        return;
    }
    int tmpfs = openat(proc, DRIVER_NAME, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (tmpfs < 0) {
        say("cannot open the new /proc/driver: %s", strerror(errno));
        close(kernel);
        return;
    }
    for (unsigned i = 0; i < had.count; i++)   /* the kernel's own entries, as they were */
        if (!listed(&ours, had.name[i]))
            bind_entry(tmpfs, kernel, had.name[i], had.dir[i], 0);
    for (unsigned i = 0; i < ours.count; i++)
        if (ours.dir[i])
            bind_entry(tmpfs, staged, ours.name[i], 1, 1);
    procfile_give(proc, tmpfs, overlay, overlay_path);
    char root[FD_PATH];
    fd_path(root, tmpfs);
    if (mount(NULL, root, NULL, MS_REMOUNT | MS_RDONLY | RO_FLAGS, "mode=0555") != 0)
        say("cannot make /proc/driver read-only: %s", strerror(errno));
    close(tmpfs);
    close(kernel);
}

/* The container's /proc gains the driver's files (give_driver_dir). */
static void give_proc(int root, const char *rootfs, int overlay, const char *overlay_path)
{
    int staged = open_beneath(overlay, MOKKA_DRIVER_PROC_ROOT, O_RDONLY | O_DIRECTORY);
    int proc = openat(root, PROC_NAME, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat root_st, proc_st;
    if (staged < 0) {
        say("no staged driver proc tree at %s/%s: %s", overlay_path, MOKKA_DRIVER_PROC_ROOT, strerror(errno));
    } else if (proc < 0) {
        say("cannot open %s/%s: %s", rootfs, PROC_NAME, strerror(errno));
    } else if (fstat(root, &root_st) != 0 || fstat(proc, &proc_st) != 0 || root_st.st_dev == proc_st.st_dev) {
        say("%s/%s is not a mount of its own: the container has no /proc to add to", rootfs, PROC_NAME);
    } else {
        char path[FD_PATH];
        fd_path(path, proc);
        if (mount(NULL, path, NULL, MS_PRIVATE, NULL) != 0)
            say("cannot make the container's /proc private: %s; leaving it as it is", strerror(errno));
        else
            give_driver_dir(proc, staged, overlay, overlay_path);
    }
    if (proc >= 0)
        close(proc);
    if (staged >= 0)
        close(staged);
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3 || argv[1][0] != '/' || (argc == 3 && argv[2][0] != '/')) {
        say("usage: %s OVERLAY [ROOTFS] (absolute paths; without ROOTFS the OCI state on stdin)",
            MOKKA_PROC_HOOK_FILE);
        return 0;
    }
    char rootfs[4096];
    int infiniband = 0;
    if (argc == 3) {
        if (snprintf(rootfs, sizeof rootfs, "%s", argv[2]) >= (int)sizeof rootfs) {
            say("the rootfs path is too long");
            return 0;
        }
        /* `mokka exec` runs the hook with the environment the command gets. */
        infiniband = infiniband_selected(getenv(MOKKA_ENV_IB));
    } else if (rootfs_path(rootfs, sizeof rootfs, &infiniband) != 0) {
        return 0;
    }
    int overlay = open(argv[1], O_PATH | O_DIRECTORY | O_CLOEXEC);
    int root = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (overlay < 0)
        say("cannot open the overlay %s: %s", argv[1], strerror(errno));
    else if (root < 0)
        say("cannot open the rootfs %s: %s", rootfs, strerror(errno));
    else {
        give_proc(root, rootfs, overlay, argv[1]);
        sysview_give(root, rootfs, overlay, argv[1], infiniband);
    }
    if (root >= 0)
        close(root);
    if (overlay >= 0)
        close(overlay);
    return 0;
}
