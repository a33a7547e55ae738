/* The node's /sys view inside a GPU container: the PCI tree, the driver's links and the
 * kernel modules where Go programs read them. gpu-feature-discovery reads
 * /sys/bus/pci/devices/<bus id>/class, mig-parted walks /sys/bus/pci/devices, the GPU
 * Operator's validator looks in /sys/module; LD_PRELOAD never reaches them.
 *
 * The GPUs a container may see are its device nodes: runc has made <rootfs>/dev/nvidia<N>
 * (the char device 195:N) for each before createContainer hooks run, whichever way the GPU
 * was given (the device plugin's allocation, the devices annotation, a CDI spec). Each one
 * with a staged OVERLAY/sysview/gpu/<N> lends its devices/ and bus/ trees as read-only
 * overlayfs lowers above the container's own /sys/devices and /sys/bus, in minor order, so
 * the kernel's entries stay visible beneath; /sys/module gains OVERLAY/sysview/module the
 * same way. A container whose environment selects InfiniBand also gets each staged
 * OVERLAY/sysview/hca/<n> (0 up, to the first missing) below its GPUs' lowers: the HCAs'
 * PCI functions, as on the node. The HCAs come with the GPU view, never alone: this is the
 * /sys view of a GPU container. No GPU node: no mount at all. The container's /sys is made
 * private first, so nothing propagates to the host; a view already there (the hook given
 * twice, by the NRI adjustment and by a CDI spec) is left as it is.
 *
 * Every path inside the rootfs is opened one name at a time without following links, and
 * the lowers are named to the kernel as /proc/self/fd/<fd> of those opens: the path the
 * kernel resolves is the one checked, and no ':' ',' or '\' of a real path can split
 * overlayfs's option string. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "hook.h"
#include "mokka_names.h"
#include "sysview.h"

#define OVERLAYFS_MAGIC 0x794c7630
#define OVERLAY_OPTIONS_MAX 4096        /* mount(2) takes one page of options */
#define LOWER_PREFIX "lowerdir="
#define SYS_NAME "sys"
#define SYS_DEVICES "devices"         /* the kernel's names under /sys */
#define SYS_BUS "bus"
#define SYS_MODULE "module"
#define DEV_NAME "dev"
#define GPU_NODE "nvidia"
#define REL_MAX 128
#define VIEW_FLAGS (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)

#define VIEWS_MAX (MOKKA_MAX_GPUS + MOKKA_MAX_HCAS)

/* The staged views a container gets, as paths under the overlay, topmost first. */
struct views {
    unsigned count, gpus;
    char rel[VIEWS_MAX][REL_MAX];
};

/* "lowerdir=/proc/self/fd/A:/proc/self/fd/B:..." of `count` fds, topmost first: 0, or -1
 * when it does not fit in size bytes. */
static int lower_options(char *out, size_t size, const int *fds, unsigned count)
{
    size_t used = 0;
    for (unsigned i = 0; i <= count; i++) {
        int n = i == 0 ? snprintf(out, size, "%s", LOWER_PREFIX)
                       : snprintf(out + used, size - used, "%s/proc/self/fd/%d", i > 1 ? ":" : "", fds[i - 1]);
        if (n < 0 || (size_t)n >= size - used)
            return -1;
        used += (size_t)n;
    }
    return 0;
}

/* The minors of the GPU nodes in <rootfs>/dev that have a staged view. The names are
 * made here (nvidia0 ... nvidia<MAX_GPUS - 1>), never read from the directory, so a
 * workload's /dev cannot make the walk long. */
static void find_gpus(int root, const char *rootfs, int overlay, const char *overlay_path, struct views *out)
{
    out->count = out->gpus = 0;
    int dev = openat(root, DEV_NAME, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dev < 0) {
        say("cannot open %s/%s: %s; no /sys view", rootfs, DEV_NAME, strerror(errno));
        return;
    }
    for (unsigned n = 0; n < MOKKA_MAX_GPUS; n++) {
        char name[32], rel[REL_MAX];
        snprintf(name, sizeof name, "%s%u", GPU_NODE, n);
        struct stat st;
        if (fstatat(dev, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (!S_ISCHR(st.st_mode) || major(st.st_rdev) != MOKKA_NVIDIA_MAJOR || minor(st.st_rdev) != n) {
            say("%s/%s/%s is not the char device %d:%u: not a GPU this container may see",
                rootfs, DEV_NAME, name, MOKKA_NVIDIA_MAJOR, n);
            continue;
        }
        snprintf(rel, sizeof rel, "%s/%s/%u", MOKKA_SYS_VIEW_DIR, MOKKA_SYS_VIEW_GPU_DIR, n);
        int staged = open_beneath(overlay, rel, O_PATH | O_DIRECTORY);
        if (staged < 0) {
            say("no staged /sys view of GPU %u at %s/%s (%s): the agent stages one per GPU",
                n, overlay_path, rel, strerror(errno));
            continue;
        }
        close(staged);
        memcpy(out->rel[out->count++], rel, sizeof rel);
    }
    out->gpus = out->count;
    close(dev);
}

/* The staged HCA views (sysview/hca/0, 1, ... to the first one missing) after the GPUs'. */
static void find_hcas(int overlay, const char *overlay_path, struct views *out)
{
    for (unsigned n = 0; n < MOKKA_MAX_HCAS && out->count < VIEWS_MAX; n++) {
        char rel[REL_MAX];
        snprintf(rel, sizeof rel, "%s/%s/%u", MOKKA_SYS_VIEW_DIR, MOKKA_SYS_VIEW_HCA_DIR, n);
        int staged = open_beneath(overlay, rel, O_PATH | O_DIRECTORY);
        if (staged < 0) {
            if (errno != ENOENT)
                say("cannot open the staged /sys view of HCA %u at %s/%s: %s; no HCA from it on",
                    n, overlay_path, rel, strerror(errno));
            else if (n == 0)
                say("InfiniBand is selected but %s/%s has no HCA view: the profile has no HCA",
                    overlay_path, MOKKA_SYS_VIEW_DIR);
            return;
        }
        close(staged);
        memcpy(out->rel[out->count++], rel, sizeof rel);
    }
}

/* Mounts on <rootfs>/sys/<name> a read-only overlay of staged lowers (the <sub> tree of
 * each view, or with views NULL the one tree `sub` of sysview/) above the container's own
 * directory. */
static void give_tree(int sys, const char *rootfs, int overlay, const char *overlay_path,
                      const char *name, const struct views *views, const char *sub)
{
    int target = openat(sys, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (target < 0) {
        say("cannot open %s/%s/%s: %s; no view there", rootfs, SYS_NAME, name, strerror(errno));
        return;
    }
    struct statfs fs;
    if (fstatfs(target, &fs) != 0) {
        say("cannot statfs %s/%s/%s: %s; no view there", rootfs, SYS_NAME, name, strerror(errno));
        close(target);
        return;
    }
    if ((unsigned long)fs.f_type == OVERLAYFS_MAGIC) {      /* the view is there already */
        close(target);
        return;
    }
    int lowers[VIEWS_MAX + 1];
    unsigned count = 0;
    unsigned wanted = views ? views->count : 1;
    for (unsigned i = 0; i < wanted; i++) {
        char rel[2 * REL_MAX];
        if (views)
            snprintf(rel, sizeof rel, "%s/%s", views->rel[i], sub);
        else
            snprintf(rel, sizeof rel, "%s/%s", MOKKA_SYS_VIEW_DIR, sub);
        int fd = open_beneath(overlay, rel, O_PATH | O_DIRECTORY);
        if (fd >= 0)
            lowers[count++] = fd;
        else if (views || errno != ENOENT)       /* a node without modules stages none */
            say("cannot open the staged %s/%s: %s; left out of /%s/%s",
                overlay_path, rel, strerror(errno), SYS_NAME, name);
    }
    if (count > 0) {
        lowers[count++] = target;               /* the container's own, lowest */
        char options[OVERLAY_OPTIONS_MAX], path[FD_PATH];
        fd_path(path, target);
        if (lower_options(options, sizeof options, lowers, count) != 0)
            say("the overlay options for %s/%s/%s exceed %d bytes: no view there",
                rootfs, SYS_NAME, name, OVERLAY_OPTIONS_MAX);
        else if (mount("overlay", path, "overlay", VIEW_FLAGS, options) != 0)
            say("cannot mount the node's view on %s/%s/%s: %s", rootfs, SYS_NAME, name, strerror(errno));
        count--;
    }
    for (unsigned i = 0; i < count; i++)
        close(lowers[i]);
    close(target);
}

void sysview_give(int root, const char *rootfs, int overlay, const char *overlay_path, int infiniband)
{
    static struct views views;          /* ~24 KiB: off the stack */
    find_gpus(root, rootfs, overlay, overlay_path, &views);
    if (views.gpus == 0)
        return;
    if (infiniband)
        find_hcas(overlay, overlay_path, &views);
    int sys = openat(root, SYS_NAME, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat root_st, sys_st;
    if (sys < 0) {
        say("cannot open %s/%s: %s; no /sys view", rootfs, SYS_NAME, strerror(errno));
        return;
    }
    if (fstat(root, &root_st) != 0 || fstat(sys, &sys_st) != 0 || root_st.st_dev == sys_st.st_dev) {
        say("%s/%s is not a mount of its own: the container has no /sys to add to", rootfs, SYS_NAME);
        close(sys);
        return;
    }
    char path[FD_PATH];
    fd_path(path, sys);
    if (mount(NULL, path, NULL, MS_PRIVATE | MS_REC, NULL) != 0) {
        say("cannot make the container's /sys private: %s; leaving it as it is", strerror(errno));
        close(sys);
        return;
    }
    give_tree(sys, rootfs, overlay, overlay_path, SYS_DEVICES, &views, MOKKA_SYS_VIEW_DEVICES);
    give_tree(sys, rootfs, overlay, overlay_path, SYS_BUS, &views, MOKKA_SYS_VIEW_BUS);
    give_tree(sys, rootfs, overlay, overlay_path, SYS_MODULE, NULL, MOKKA_SYS_VIEW_MODULE_DIR);
    close(sys);
}
