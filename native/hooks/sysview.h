/* The node's /sys view in a GPU container (sysview.c). */
#ifndef MOKKA_HOOK_SYSVIEW_H
#define MOKKA_HOOK_SYSVIEW_H

/* Gives the container whose rootfs is open at `root` (O_PATH; `rootfs` its path, for the
 * lines it says) the staged /sys view of the GPUs its /dev holds, with the node's HCAs when
 * `infiniband` (the container selects InfiniBand), from the overlay root open at `overlay`
 * (`overlay_path` its path). Never fails: problems are lines on stderr. */
void sysview_give(int root, const char *rootfs, int overlay, const char *overlay_path, int infiniband);

#endif
