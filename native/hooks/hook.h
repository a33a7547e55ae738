/* What the proc hook's parts share: the one-line report, bounded reads, fd paths, and
 * opening a path below a directory without following links (the rootfs is the workload's). */
#ifndef MOKKA_HOOK_H
#define MOKKA_HOOK_H

#include <stddef.h>
#include <sys/mount.h>

/* What every mount the hook makes carries: no setuid, devices or programs from it. */
#define RO_FLAGS (MS_NOSUID | MS_NODEV | MS_NOEXEC)

/* /proc/self/fd/<fd>: how a mount call names a file the hook holds open. */
#define FD_PATH 32

/* One line on stderr, prefixed with the hook's name. */
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* At most max bytes of fd; the length in *len, NULL (errno set) past max or on error. */
char *read_all(int fd, size_t max, size_t *len);

void fd_path(char out[FD_PATH], int fd);

/* Bind-mounts what `source` is onto `target` (both open fds), MS_BIND | extra. */
int bind_fd(int source, int target, unsigned long extra);

/* Remounts read-only (and RO_FLAGS) what `name` under dir is now: a bind mount's root. */
int read_only(int dir, const char *name);

/* Opens rel (names separated by '/') below dir one name at a time, never following a
 * link, every name but the last as an O_PATH directory; the last with `flags`
 * (O_NOFOLLOW and O_CLOEXEC added). -1 with errno set when any name is missing, a link,
 * or not a directory where one is needed. */
int open_beneath(int dir, const char *rel, int flags);

#endif
