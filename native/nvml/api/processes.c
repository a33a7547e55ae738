/* The node's compute processes: the records CUDA processes keep, and how NVML counts them.
 *
 * A process holding a CUDA context on a GPU (the mock CUDA driver calls
 * nvmlMokkaSetProcessMemory) keeps one record for that GPU in its user's
 * directory `processes/<uid>/` beside the profile (names.PROCESS_RECORDS_DIR,
 * mode 01777 as /tmp is, so any user may make its own directory there; each
 * user's is names.PROCESS_RECORDS_USER_MODE, owned by that uid and writable by
 * it alone), named `<physical index>.<16 hex digits>`:
 *
 *     mokka-process 1
 *     pid <its pid as it sees itself>
 *     used <bytes of device memory it holds on that GPU>
 *     name <argv[0]>
 *
 * Each update is a new file, written and locked first, then renamed over the
 * record, so a reader sees the old record or the new one. The writer holds two
 * write locks on the current file for as long as the process lives: an open
 * file description lock on byte 0 (the record is live while it is held; no
 * other close() in the process can drop it, and the kernel drops it the
 * moment the process dies, in whatever PID namespace it ran), and a POSIX lock
 * on byte 1, whose holder the kernel reports as a pid of the reader's own
 * namespace (F_GETLK). This file is the writer; process_scan.c reads the
 * records of the other processes, process_sweep.c removes the dead ones.
 *
 * Any user, and a container's root, can write anything in `processes/`, and a
 * user anything in its own directory, so every entry is hostile input and a
 * record says only what its lock holder can vouch for:
 *
 *  - Whose: a user's directory counts only when it is a directory (never a
 *    link) named by its owner's uid and writable by that owner alone; anything
 *    else in `processes/` is a stray that no reader opens and the agent removes.
 *    A directory another user made under this user's name (a squat) is refused
 *    by the writer with a warning until the agent's sweep has removed it.
 *  - Cost: one scan serves every NVML call of a process while `processes/` and
 *    the user directories are unchanged (inode, mtime, ctime) and the scan is
 *    younger than half a second (a SIGKILLed process's record stays, but its
 *    lock is gone: it drops out at the next scan). Every entry is listed (up
 *    to 2^20 a directory); a name that is not a record's is skipped with no
 *    system call. Per user and GPU at most READS_PER_USER_GPU records are
 *    opened, and two more for each process listed, so one user's junk costs a
 *    reader a bounded number of reads and cannot hide another user's records
 *    (READS_PER_USER_GPU, in process_scan.c, says what it can hide of its
 *    own). A reader never waits on a lock (F_OFD_GETLK,
 *    F_GETLK) and never opens this process's own records (their values are in
 *    memory, and a close would drop their POSIX lock).
 *  - Who: a record counts while byte 0 is locked. The process listed is the
 *    holder of byte 1 as the kernel numbers it in the reader's namespace,
 *    whatever pid the record claims; a holder outside that namespace (or none)
 *    cannot be verified, so the record is not listed (a GPU in a pod lists no
 *    foreign process either) but its bytes still count in memory used. A
 *    process keeps one record per GPU, so several records held by one pid on a
 *    GPU are that one process, listed once with the largest claim.
 *  - Name: the holder's own argv[0] (/proc/<pid>/cmdline) when readable, else
 *    the record's, made printable UTF-8 (printable.c) before NVML returns it.
 *  - Size: a claim is shown at most as the GPU's total memory. A claim past it
 *    is one no driver granted, so it is not counted in memory used (a forged
 *    2^64-1 fails no other process's cuMemAlloc); the counted claims are summed
 *    without overflow and never past the total (perf.c caps memory used at
 *    what the board has after its reserve).
 *  - Dead records: the writer removes its own user's when it writes its first
 *    record; nvmlMokkaSweepProcessRecords (the agent, root on the host) removes
 *    every user's record and stale temp file that no live process holds.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "mokka_private.h"
#include "printable.h"
#include "process_records.h"

struct own_record {
    int fd;                                       /* the current file, both locks held; -1: none */
    unsigned long long used;
    char name[32];                                /* "<phys>.<token>" */
    char dir[MOCK_PATH_MAX];                      /* the records directory (its user's is below) */
};

static pthread_mutex_t records_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct own_record own[MOCK_MAX_GPUS];
static unsigned long long temp_counter;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

/* --- what the writer, the reader and the sweeper share ------------------------------ */

/* A child of fork() is another process: the records are its parent's. Its copies of
 * the descriptors share the parent's open file descriptions (and so the byte-0 lock),
 * so they are closed; the parent keeps its locks. The parent's records are another
 * process's to the child, so its snapshot, which left them out, goes too. */
static void forget_in_child(void)
{
    for (unsigned int i = 0; i < MOCK_MAX_GPUS; i++) {
        if (own[i].fd >= 0)
            close(own[i].fd);
        own[i].fd = -1;
        own[i].name[0] = '\0';
    }
    records_scan_forget();
    pthread_mutex_init(&records_mutex, NULL);
}

static void at_fork(void)
{
    for (unsigned int i = 0; i < MOCK_MAX_GPUS; i++)
        own[i].fd = -1;
    pthread_atfork(NULL, NULL, forget_in_child);
}

void records_lock(void)
{
    pthread_once(&fork_once, at_fork);
    pthread_mutex_lock(&records_mutex);
}

void records_unlock(void)
{
    pthread_mutex_unlock(&records_mutex);
}

int records_own(const char *name)
{
    for (unsigned int i = 0; i < MOCK_MAX_GPUS; i++)
        if (own[i].name[0] && strcmp(own[i].name, name) == 0)
            return 1;
    return 0;
}

int records_own_used(unsigned int phys, unsigned long long *used)
{
    if (phys >= MOCK_MAX_GPUS || !own[phys].name[0] || own[phys].fd < 0)
        return 0;
    *used = own[phys].used;
    return 1;
}

int records_dir(const struct mock_node *n, char *out, size_t size)
{
    const char *slash = strrchr(n->config_yaml, '/');
    int dir_len = slash ? (int)(slash - n->config_yaml) : 0;
    int len = snprintf(out, size, "%.*s/%s", dir_len, n->config_yaml, MOKKA_PROCESS_RECORDS_DIR);
    return len > 0 && (size_t)len < size;
}

int records_open_dir(const char *path, int create)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && create) {
        if (mkdir(path, MOKKA_PROCESS_RECORDS_MODE) != 0 && errno != EEXIST)
            return -1;
        fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == geteuid() &&
            (st.st_mode & 07777) != MOKKA_PROCESS_RECORDS_MODE)
            (void)fchmod(fd, MOKKA_PROCESS_RECORDS_MODE);  /* mkdir honoured the umask */
    }
    return fd;
}

int records_user_name(const char *name, uid_t *uid)
{
    unsigned long long v = 0;
    size_t i = 0;
    for (; name[i] >= '0' && name[i] <= '9' && i < 10; i++)
        v = v * 10 + (unsigned long long)(name[i] - '0');
    if (i == 0 || name[i] != '\0' || (i > 1 && name[0] == '0') || v >= 0xffffffffull)
        return 0;
    *uid = (uid_t)v;
    return 1;
}

int records_user_dir_ok(const struct stat *st, uid_t uid)
{
    return S_ISDIR(st->st_mode) && st->st_uid == uid && (st->st_mode & 022) == 0;
}

int records_open_user_dir(int top, uid_t uid, int create, struct stat *st)
{
    char name[16];
    snprintf(name, sizeof name, "%u", (unsigned int)uid);
    int fd = openat(top, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && create) {
        if (mkdirat(top, name, MOKKA_PROCESS_RECORDS_USER_MODE) != 0 && errno != EEXIST)
            return -1;
        fd = openat(top, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0 && fstat(fd, st) == 0 && st->st_uid == uid &&
            (st->st_mode & 07777) != MOKKA_PROCESS_RECORDS_USER_MODE)
            (void)fchmod(fd, MOKKA_PROCESS_RECORDS_USER_MODE);  /* mkdir honoured the umask */
    }
    if (fd < 0)
        return -1;
    if (fstat(fd, st) != 0 || !records_user_dir_ok(st, uid)) {
        close(fd);
        errno = EPERM;                            /* made by another user, or open to others */
        return -1;
    }
    return fd;
}

static int is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* The length of "<phys>.<16 hex digits>" at the start of `name` (0: none), its index in *phys. */
static size_t record_prefix(const char *name, unsigned int *phys)
{
    unsigned int p = 0;
    size_t i = 0;
    for (; i < 4 && name[i] >= '0' && name[i] <= '9'; i++)
        p = p * 10 + (unsigned int)(name[i] - '0');
    if (i == 0 || (i > 1 && name[0] == '0') || p >= MOCK_MAX_GPUS || name[i] != '.')
        return 0;
    i++;
    for (size_t k = 0; k < RECORD_TOKEN_DIGITS; k++, i++)
        if (!is_hex(name[i]))
            return 0;
    *phys = p;
    return i;
}

int record_name(const char *name, unsigned int *phys)
{
    size_t len = record_prefix(name, phys);
    return len > 0 && name[len] == '\0';
}

int record_temp_name(const char *name)
{
    unsigned int phys;
    if (name[0] != '.')
        return 0;
    size_t len = record_prefix(name + 1, &phys);
    const char *rest = name + 1 + len;
    if (len == 0 || rest[0] != '.' || rest[1] == '\0')
        return 0;
    for (rest++; *rest; rest++)
        if (*rest < '0' || *rest > '9')
            return 0;
    return 1;
}

int record_held(int fd, int ofd, off_t byte, pid_t *pid)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = byte, .l_len = 1};
    if (fcntl(fd, ofd ? F_OFD_GETLK : F_GETLK, &fl) != 0 || fl.l_type == F_UNLCK)
        return 0;
    if (pid)
        *pid = fl.l_pid > 0 ? fl.l_pid : 0;
    return 1;
}

void record_cmdline(pid_t pid, char *out, size_t size)
{
    char path[32];
    if (pid > 0)
        snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    else
        snprintf(path, sizeof path, "/proc/self/cmdline");
    out[0] = '\0';
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
    if (fd >= 0) {
        ssize_t got = read(fd, out, size - 1);
        out[got > 0 ? got : 0] = '\0';           /* argv[0]: up to its NUL */
        close(fd);
    }
}

/* --- the writer ---------------------------------------------------------------------- */

/* This process's user directory in the records directory `top` (a path), made when
 * `create` and missing; -1 with errno (EPERM: another user's, see processes.c). */
static int user_dir(const char *top, int create)
{
    int t = records_open_dir(top, create);
    if (t < 0)
        return -1;
    struct stat st;
    int fd = records_open_user_dir(t, geteuid(), create, &st);
    int saved = errno;
    close(t);
    errno = saved;
    return fd;
}

__attribute__((destructor)) static void drop_own_records(void)
{
    for (unsigned int i = 0; i < MOCK_MAX_GPUS; i++) {
        if (own[i].name[0] && own[i].fd >= 0) {
            int dir = user_dir(own[i].dir, 0);
            if (dir >= 0) {
                unlinkat(dir, own[i].name, 0);
                close(dir);
            }
        }
    }
}

static unsigned long long token(void)
{
    unsigned long long t = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, &t, sizeof t) != (ssize_t)sizeof t)
            t = 0;
        close(fd);
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return t ^ ((unsigned long long)now.tv_nsec << 20) ^ (unsigned long long)now.tv_sec ^
           ((unsigned long long)getpid() << 40);
}

static int set_lock(int fd, int cmd, off_t byte)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = byte, .l_len = 1};
    return fcntl(fd, cmd, &fl);
}

static int write_all(int fd, const char *text, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, text, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        text += w;
        len -= (size_t)w;
    }
    return 0;
}

/* A new file holding the record, both locks taken, renamed over `rec->name`. */
static int publish(int dir, struct own_record *rec, unsigned long long used)
{
    char tmp[64], text[RECORD_MAX], name[256];
    snprintf(tmp, sizeof tmp, ".%s.%llu", rec->name, ++temp_counter);
    record_cmdline(0, name, sizeof name);
    printable_copy(name, sizeof name, name);
    int len = snprintf(text, sizeof text, RECORD_HEADER "\npid %u\nused %llu\nname %s\n",
                       (unsigned int)getpid(), used, name);
    int fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    if (fchmod(fd, 0644) != 0 || set_lock(fd, F_OFD_SETLK, LIVE_BYTE) != 0 ||
        set_lock(fd, F_SETLK, PID_BYTE) != 0 || write_all(fd, text, (size_t)len) != 0 ||
        renameat(dir, tmp, dir, rec->name) != 0) {
        unlinkat(dir, tmp, 0);
        close(fd);
        return -1;
    }
    if (rec->fd >= 0)
        close(rec->fd);                           /* the old file: its locks go with it */
    rec->fd = fd;
    rec->used = used;
    return 0;
}

/* The one warning a process gives when it cannot keep its record (NVML will not list it). */
static void cannot_keep(const char *top, int err)
{
    if (err == EPERM)
        mock_warn_once("cannot keep this process's GPU memory record in %s/%u: another user made it "
                       "(the node agent removes it); NVML will not list this process until then",
                       top, (unsigned int)geteuid());
    else
        mock_warn_once("cannot keep this process's GPU memory record in %s/%u: %s; NVML will not "
                       "list it", top, (unsigned int)geteuid(), strerror(err));
}

static nvmlReturn_t set_record(nvmlDevice_t device, int keep, unsigned long long used)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    records_lock();
    struct own_record *rec = &own[g->phys];
    char path[MOCK_PATH_MAX];
    if (rec->name[0])
        memcpy(path, rec->dir, sizeof path);
    else if (!records_dir(g->node, path, sizeof path))
        path[0] = '\0';
    int dir = path[0] ? user_dir(path, keep) : -1;
    if (dir < 0) {
        int err = path[0] ? errno : ENAMETOOLONG;
        records_unlock();
        if (keep)
            cannot_keep(path, err);
        return keep ? NVML_ERROR_NO_PERMISSION : NVML_SUCCESS;
    }
    if (!keep) {
        if (rec->name[0])
            unlinkat(dir, rec->name, 0);
        if (rec->fd >= 0)
            close(rec->fd);
        rec->fd = -1;
        rec->name[0] = '\0';
        ret = NVML_SUCCESS;
    } else {
        if (!rec->name[0]) {
            records_sweep(dir);
            snprintf(rec->name, sizeof rec->name, "%u.%016llx", g->phys, token());
            memcpy(rec->dir, path, sizeof rec->dir);
        }
        ret = publish(dir, rec, used) == 0 ? NVML_SUCCESS : NVML_ERROR_NO_PERMISSION;
        int err = errno;
        if (ret != NVML_SUCCESS && rec->fd < 0)
            rec->name[0] = '\0';
        if (ret != NVML_SUCCESS)
            cannot_keep(path, err);
    }
    close(dir);
    records_unlock();
    return ret;
}

nvmlReturn_t nvmlMokkaSetProcessMemory(nvmlDevice_t device, unsigned long long usedBytes)
{
    return set_record(device, 1, usedBytes);
}

nvmlReturn_t nvmlMokkaReleaseProcess(nvmlDevice_t device)
{
    return set_record(device, 0, 0);
}
