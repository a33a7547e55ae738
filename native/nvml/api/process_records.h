/* The CUDA process records as their writer (processes.c), their reader (process_scan.c)
 * and their sweeper (process_sweep.c) share them: the format, the names, this
 * process's own records and the one lock over them. processes.c states the rules. */
#ifndef MOKKA_NVML_PROCESS_RECORDS_H
#define MOKKA_NVML_PROCESS_RECORDS_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "engine/engine.h"

#ifndef F_OFD_GETLK                               /* Linux 3.15; glibc 2.17 has no names for them */
#define F_OFD_GETLK 36
#define F_OFD_SETLK 37
#endif

#define RECORD_HEADER "mokka-process 1"
#define RECORD_MAX 512u
#define LIVE_BYTE 0
#define PID_BYTE 1
/* "<phys>." and 16 hex digits: the token of a record's name. */
#define RECORD_TOKEN_DIGITS 16
/* A temp file no live writer holds, left by one that was killed mid-update. */
#define STALE_TEMP_SECONDS 60

/* The lock over this process's own records and the reader's snapshot of the others'
 * (one lock: a scan must never open one of this process's records, so no record of
 * it may appear while a scan runs). */
void records_lock(void);
void records_unlock(void);
/* 1 when `name` is one of this process's records (lock held): never opened here,
 * since closing any descriptor of it would drop its POSIX lock. */
int records_own(const char *name);
/* 1 and the bytes this process holds on GPU `phys` when it keeps a record there (lock held). */
int records_own_used(unsigned int phys, unsigned long long *used);

/* 1 and the records directory beside the node's profile (absolute), or 0 if it does not fit. */
int records_dir(const struct mock_node *n, char *out, size_t size);
/* The directory, never through a symlink; created (mode 01777) when `create` and missing. */
int records_open_dir(const char *path, int create);
/* 1 and the uid when `name` is a user directory's name (a uid in decimal, as printed). */
int records_user_name(const char *name, uid_t *uid);
/* 1 when `st`, of the entry named for `uid` in the records directory, is that user's
 * directory: a directory (not a link) owned by `uid` that only its owner may write. */
int records_user_dir_ok(const struct stat *st, uid_t uid);
/* User `uid`'s directory in the records directory `top`, never through a symlink, with its
 * stat in *st; created (names.PROCESS_RECORDS_USER_MODE) when `create` and missing. -1 with
 * errno, EPERM when the entry is not that user's directory (records_user_dir_ok). */
int records_open_user_dir(int top, uid_t uid, int create, struct stat *st);

/* 1 and the GPU's physical index when `name` is a record's ("<phys>.<16 hex digits>"),
 * checked on the name alone. */
int record_name(const char *name, unsigned int *phys);
/* 1 when `name` is a writer's temp file (".<record name>.<digits>"). */
int record_temp_name(const char *name);
/* 1 when some open file description holds a lock on byte `byte` of `fd` as F_OFD_GETLK
 * reports (`ofd`) or as F_GETLK does, with the holder's pid (0: none in this process's
 * PID namespace) in *pid when not NULL; 0 when none does or the kernel cannot tell. */
int record_held(int fd, int ofd, off_t byte, pid_t *pid);
/* argv[0] of the process /proc/<pid> shows (0: this process), as read, or "" when
 * unreadable; the caller makes it printable. */
void record_cmdline(pid_t pid, char *out, size_t size);

/* The sweep of one user's directory `dir` (process_sweep.c): its records and stale temps
 * that no live process holds (lock held). The count removed, or -1 when the directory
 * cannot be read. */
int records_sweep(int dir);
/* The reader's snapshot is its parent's in a child of fork(): dropped (process_scan.c). */
void records_scan_forget(void);

#endif
