/* The node's compute processes: the records CUDA processes keep, and how NVML counts them.
 *
 * A process holding a CUDA context on a GPU (the mock CUDA driver calls
 * nvmlMokkaSetProcessMemory) keeps one record for that GPU in the directory
 * `processes/` beside the profile (names.PROCESS_RECORDS_DIR; mode 01777, so
 * any user may add records and none may replace another's), named
 * `<physical index>.<16 hex digits>`:
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
 * namespace (F_GETLK). A reader counts a record only while byte 0 is locked
 * (one non-blocking F_OFD_GETLK; it never waits), shows the pid the kernel
 * reports for byte 1 and the record's own pid when the holder is outside its
 * namespace, and never opens this process's own records (their values are
 * in memory, and a close would drop their POSIX lock).
 *
 * Every record is hostile input: names that are not records are skipped, a
 * file that is not a regular file (a link, a FIFO, a device) is never opened,
 * nor one larger than RECORD_MAX; at most SCAN_MAX entries are read; values
 * are bounded and summed without overflow. A record can claim memory for its
 * own process only: forging one needs holding its lock.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mock.h"
#include "mokka_private.h"
#include "processes.h"

#ifndef F_OFD_GETLK                               /* Linux 3.15; glibc 2.17 has no names for them */
#define F_OFD_GETLK 36
#define F_OFD_SETLK 37
#endif

#define RECORD_HEADER "mokka-process 1"
#define RECORD_MAX 512u
#define SCAN_MAX 4096u
#define LIVE_BYTE 0
#define PID_BYTE 1
/* A temp file no live writer holds, left by one that was killed mid-update. */
#define STALE_TEMP_SECONDS 60

struct own_record {
    int fd;                                       /* the current file, both locks held; -1: none */
    unsigned long long used;
    char name[32];                                /* "<phys>.<token>" */
    char dir[MOCK_PATH_MAX];                      /* where it was written */
};

static pthread_mutex_t own_lock = PTHREAD_MUTEX_INITIALIZER;
static struct own_record own[MOCK_MAX_GPUS];
static unsigned long long temp_counter;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

/* 1 and the directory beside the profile (absolute: config_locate), or 0 if it does not fit. */
static int records_dir(const struct mock_node *n, char *out, size_t size)
{
    const char *slash = strrchr(n->config_yaml, '/');
    int dir_len = slash ? (int)(slash - n->config_yaml) : 0;
    int len = snprintf(out, size, "%.*s/%s", dir_len, n->config_yaml, MOKKA_PROCESS_RECORDS_DIR);
    return len > 0 && (size_t)len < size;
}

/* The directory, never through a symlink; created (mode 01777) when `create` and missing. */
static int open_dir(const char *path, int create)
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

/* --- the writer ---------------------------------------------------------------------- */

/* A child of fork() is another process: the records are its parent's. Its copies of
 * the descriptors share the parent's open file descriptions (and so the byte-0 lock),
 * so they are closed; the parent keeps its locks. */
static void forget_in_child(void)
{
    for (unsigned int i = 0; i < MOCK_MAX_GPUS; i++) {
        if (own[i].fd >= 0)
            close(own[i].fd);
        own[i].fd = -1;
        own[i].name[0] = '\0';
    }
    pthread_mutex_init(&own_lock, NULL);
}

static void at_fork(void)
{
    for (unsigned int i = 0; i < MOCK_MAX_GPUS; i++)
        own[i].fd = -1;
    pthread_atfork(NULL, NULL, forget_in_child);
}

__attribute__((destructor)) static void drop_own_records(void)
{
    for (unsigned int i = 0; i < MOCK_MAX_GPUS; i++) {
        if (own[i].name[0] && own[i].fd >= 0) {
            int dir = open_dir(own[i].dir, 0);
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

/* argv[0] as the record's name: printable, one line. */
static void process_name(char *out, size_t size)
{
    out[0] = '\0';
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t got = read(fd, out, size - 1);
        out[got > 0 ? got : 0] = '\0';
        close(fd);
    }
    for (char *p = out; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
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
    process_name(name, sizeof name);
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

/* 1 when `name` is one of this process's records (own_lock held): never opened here,
 * since closing any descriptor of it would drop its POSIX lock. */
static int is_own(const char *name)
{
    for (unsigned int i = 0; i < MOCK_MAX_GPUS; i++)
        if (own[i].name[0] && strcmp(own[i].name, name) == 0)
            return 1;
    return 0;
}

/* Records and temp files no process holds any more, where this user may remove them
 * (own_lock held). */
static void sweep(int dir)
{
    int fd = dup(dir);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct dirent *e;
    time_t now = time(NULL);
    for (unsigned int seen = 0; seen < SCAN_MAX && (e = readdir(d)) != NULL; seen++) {
        struct stat st;
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
            continue;
        if (is_own(e->d_name) || fstatat(dir, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode) || st.st_uid != geteuid())
            continue;
        if (e->d_name[0] == '.') {
            if (now - st.st_mtime > STALE_TEMP_SECONDS)
                unlinkat(dir, e->d_name, 0);
            continue;
        }
        int rfd = openat(dir, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (rfd < 0)
            continue;
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = LIVE_BYTE, .l_len = 1};
        if (fcntl(rfd, F_OFD_GETLK, &fl) == 0 && fl.l_type == F_UNLCK)
            unlinkat(dir, e->d_name, 0);
        close(rfd);
    }
    closedir(d);
}

static nvmlReturn_t set_record(nvmlDevice_t device, int keep, unsigned long long used)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    pthread_once(&fork_once, at_fork);
    pthread_mutex_lock(&own_lock);
    struct own_record *rec = &own[g->phys];
    char path[MOCK_PATH_MAX];
    if (rec->name[0])
        memcpy(path, rec->dir, sizeof path);
    else if (!records_dir(g->node, path, sizeof path))
        path[0] = '\0';
    int dir = path[0] ? open_dir(path, keep) : -1;
    if (dir < 0) {
        pthread_mutex_unlock(&own_lock);
        if (keep)
            mock_warn_once("cannot keep this process's GPU memory record in %s: %s; NVML will not "
                           "list it", path, strerror(errno));
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
            sweep(dir);
            snprintf(rec->name, sizeof rec->name, "%u.%016llx", g->phys, token());
            memcpy(rec->dir, path, sizeof rec->dir);
        }
        ret = publish(dir, rec, used) == 0 ? NVML_SUCCESS : NVML_ERROR_NO_PERMISSION;
        if (ret != NVML_SUCCESS && rec->fd < 0)
            rec->name[0] = '\0';
        if (ret != NVML_SUCCESS)
            mock_warn_once("cannot keep this process's GPU memory record in %s: %s; NVML will not "
                           "list it", path, strerror(errno));
    }
    close(dir);
    pthread_mutex_unlock(&own_lock);
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

/* --- the reader ---------------------------------------------------------------------- */

/* "<phys>." at the start of a record's name: 1 when it is GPU `phys`'s. */
static int names_gpu(const char *name, unsigned int phys)
{
    char want[16];
    int n = snprintf(want, sizeof want, "%u.", phys);
    return strncmp(name, want, (size_t)n) == 0 && name[n] != '\0';
}

static int parse_u64_line(char **p, const char *key, unsigned long long *out)
{
    size_t k = strlen(key);
    if (strncmp(*p, key, k) != 0 || (*p)[k] != ' ')
        return 0;
    char *value = *p + k + 1, *nl = strchr(value, '\n');
    if (!nl)
        return 0;
    *nl = '\0';
    int ok = flat_parse_u64(value, out);
    *p = nl + 1;
    return ok;
}

/* The record's text into *out; 0 when it is not one. */
static int parse_record(char *text, struct mock_process *out)
{
    char *p = text;
    size_t h = sizeof RECORD_HEADER - 1;
    if (strncmp(p, RECORD_HEADER "\n", h + 1) != 0)
        return 0;
    p += h + 1;
    unsigned long long pid, used;
    if (!parse_u64_line(&p, "pid", &pid) || pid == 0 || pid > 0xffffffffull ||
        !parse_u64_line(&p, "used", &used) || strncmp(p, "name ", 5) != 0)
        return 0;
    char *name = p + 5, *nl = strchr(name, '\n');
    if (!nl || nl[1] != '\0')
        return 0;
    *nl = '\0';
    for (char *c = name; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            return 0;
    out->pid = (unsigned int)pid;
    out->used_bytes = used;
    snprintf(out->name, sizeof out->name, "%s", name);
    return 1;
}

/* One record of another process, if it is live and well formed. */
static int read_record(int dir, const char *name, struct mock_process *out)
{
    struct stat st;
    if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
        (unsigned long long)st.st_size > RECORD_MAX)
        return 0;
    int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return 0;
    int ok = 0;
    char text[RECORD_MAX + 1];
    struct flock live = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = LIVE_BYTE, .l_len = 1};
    struct flock holder = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = PID_BYTE, .l_len = 1};
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && fcntl(fd, F_OFD_GETLK, &live) == 0 &&
        live.l_type != F_UNLCK) {
        ssize_t got = pread(fd, text, RECORD_MAX + 1, 0);
        if (got > 0 && (size_t)got <= RECORD_MAX) {
            text[got] = '\0';
            ok = parse_record(text, out);
        }
        /* The holder as this process's namespace numbers it (0: not in it). */
        if (ok && fcntl(fd, F_GETLK, &holder) == 0 && holder.l_type != F_UNLCK && holder.l_pid > 0)
            out->pid = (unsigned int)holder.l_pid;
    }
    close(fd);
    return ok;
}

unsigned int mock_processes_each(const struct mock_gpu *g, each_process each, void *arg)
{
    unsigned int found = 0;
    char own_name[sizeof own[0].name] = "";
    struct mock_process p;
    pthread_mutex_lock(&own_lock);
    const struct own_record *rec = &own[g->phys];
    int mine = rec->name[0] && rec->fd >= 0;
    if (mine) {
        snprintf(own_name, sizeof own_name, "%s", rec->name);
        p.pid = (unsigned int)getpid();
        p.used_bytes = rec->used;
    }
    pthread_mutex_unlock(&own_lock);
    if (mine) {
        process_name(p.name, sizeof p.name);
        each(&p, arg);
        found++;
    }
    char path[MOCK_PATH_MAX];
    int dir = records_dir(g->node, path, sizeof path) ? open_dir(path, 0) : -1;
    if (dir < 0)
        return found;
    int fd = dup(dir);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        close(dir);
        return found;
    }
    struct dirent *e;
    for (unsigned int seen = 0; seen < SCAN_MAX && (e = readdir(d)) != NULL; seen++) {
        if (e->d_name[0] == '.' || !names_gpu(e->d_name, g->phys) || strcmp(e->d_name, own_name) == 0)
            continue;
        if (!read_record(dir, e->d_name, &p))
            continue;
        each(&p, arg);
        found++;
    }
    closedir(d);
    close(dir);
    return found;
}

static void add_used(const struct mock_process *p, void *arg)
{
    unsigned long long *sum = arg;
    *sum = p->used_bytes > ~0ull - *sum ? ~0ull : *sum + p->used_bytes;
}

unsigned long long mock_processes_used(const struct mock_gpu *g)
{
    unsigned long long sum = 0;
    mock_processes_each(g, add_used, &sum);
    return sum;
}
