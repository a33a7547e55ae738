/* The kernel's /proc/modules and /proc/devices with the driver's lines, in a GPU container
 * (procfile.c). */
#ifndef MOKKA_HOOK_PROCFILE_H
#define MOKKA_HOOK_PROCFILE_H

/* Where the container's /proc (open at `proc`) has modules and devices files of the kernel's,
 * binds over each, read-only, a copy with the lines the node stages under
 * OVERLAY/sysview/ added, unless the kernel's copy shows a loaded driver already. `tmpfs`
 * is the hook's new /proc/driver, still writable: the copies are written in a scratch
 * tmpfs below it, which is gone again on return. Never fails: problems are lines on
 * stderr, and the file stays as the kernel has it. */
void procfile_give(int proc, int tmpfs, int overlay, const char *overlay_path);

#endif
