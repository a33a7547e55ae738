/* Reading the other processes' records: one scan of the records directory and its
 * users' directories, kept while it is current, serves every NVML call that counts
 * or names processes (processes.c states the rules this file applies).
 *
 * The scan is the process's, not a GPU's: it holds the live records of every GPU,
 * so nvidia-smi's process box (a list per GPU, then a name per process) costs one
 * pass, however many records there are. A scan is kept while `processes/` and each
 * user's directory it read have the inode, mtime and ctime it saw and it is younger
 * than SNAPSHOT_TTL_NS; it runs under the records' lock, so this process's own
 * records cannot appear while it reads (it must never open them). The records directory
 * a scan read stays open: each call looks at it and at the users' directories in it
 * through that descriptor (a new record shows at once), and whether its path still names
 * it is looked up again at most every CHECK_NS, as the other layers recheck their files,
 * so a monitor polling every GPU many times a second walks the path once per window.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "engine/regular.h"
#include "printable.h"
#include "process_records.h"
#include "processes.h"

/* Directory entries listed per directory and scan: a safety bound only (getdents is
 * cheap, and a bound a user reaches with empty files would let it hide records). */
#define ENTRIES_MAX (1u << 20)
/* Users' directories read per scan: only root can make one for a uid not its own. */
#define USERS_MAX 1024u
/* Records opened per user and GPU, and two more for each process they list: each
 * costs a few system calls, and a user's junk must cost a reader a bounded number
 * (nvidia-smi's process box stays as quick as on a clean node). Each live process
 * a reader lists adds more than it costs, so a user's processes alone never run
 * out; its junk, its dead records (until swept) and records held from another PID
 * namespace spend the budget without adding to it, so those can hide the same
 * user's records read after them, never another user's. */
#define READS_PER_USER_GPU 64u
#define READS_PER_LISTED 2u
/* Records opened per scan in all. */
#define OPEN_MAX 8192u
/* How long a scan serves when the directories do not change: a process SIGKILLed
 * leaves its record unchanged, only its lock goes. */
#define SNAPSHOT_TTL_NS 500000000LL
/* How long the records directory's path is taken to name the directory held open (the
 * overrides layer's recheck interval, engine/overrides.c). */
#define CHECK_NS 250000000LL
/* The slots of a scan's table of listed processes: a power of two, twice the most it takes. */
#define TALLY_SLOTS (2u * OPEN_MAX)

/* What says a directory is unchanged since it was read. */
struct stamp {
    uid_t uid;                     /* a user's directory: whose */
    dev_t dev;
    ino_t ino;
    struct timespec mtim, ctim;
};

/* One live record of another process. */
struct seen {
    unsigned int phys;
    unsigned int pid;              /* the holder of byte 1 in this namespace; 0: not listed */
    unsigned long long used;       /* as claimed */
    char *name;                    /* printable; NULL when not listed */
};

static struct snapshot {
    int valid;
    char dir[MOCK_PATH_MAX];
    struct stamp top;
    struct stamp *users;           /* the users' directories read */
    unsigned int nusers;
    struct timespec taken;
    struct timespec checked;       /* when `dir` last named the directory held */
    int holding;                   /* `top_fd` is the records directory the scan read */
    int top_fd;
    struct seen *rec;
    unsigned int n;
} snap;

/* A place per listed process (GPU and pid) for one scan (open addressing). */
struct tally {
    unsigned long long *key;
    unsigned int *value;           /* 0: an empty slot; else the place + 1 */
};

static unsigned int *tally_slot(struct tally *t, unsigned long long key)
{
    unsigned int i = (unsigned int)((key * 0x9E3779B97F4A7C15ull) >> 40) & (TALLY_SLOTS - 1);
    while (t->value[i] && t->key[i] != key)
        i = (i + 1) & (TALLY_SLOTS - 1);          /* never full: at most OPEN_MAX keys */
    t->key[i] = key;
    return &t->value[i];
}

static int tally_init(struct tally *t)
{
    t->key = calloc(TALLY_SLOTS, sizeof *t->key);
    t->value = calloc(TALLY_SLOTS, sizeof *t->value);
    return t->key && t->value;
}

static void tally_free(struct tally *t)
{
    free(t->key);
    free(t->value);
}

static void drop(struct seen *rec, unsigned int n)
{
    for (unsigned int i = 0; i < n; i++)
        free(rec[i].name);
    free(rec);
}

/* The records directory held open is let go: closed only if the descriptor is still it
 * (a program may have closed it and had the number reused). */
static void release_top(void)
{
    struct stat st;
    if (snap.holding && fstat(snap.top_fd, &st) == 0 && st.st_dev == snap.top.dev && st.st_ino == snap.top.ino)
        close(snap.top_fd);
    snap.holding = 0;
}

void records_scan_forget(void)
{
    release_top();                                /* the child's copy of the descriptor */
    memset(&snap, 0, sizeof snap);                /* the parent's copy: not freed in the child */
}

static void stamp_of(struct stamp *s, const struct stat *st, uid_t uid)
{
    s->uid = uid;
    s->dev = st->st_dev;
    s->ino = st->st_ino;
    s->mtim = st->st_mtim;
    s->ctim = st->st_ctim;
}

static int same_time(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

static int same_stamp(const struct stamp *s, const struct stat *st)
{
    return s->dev == st->st_dev && s->ino == st->st_ino && same_time(&s->mtim, &st->st_mtim) &&
           same_time(&s->ctim, &st->st_ctim);
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

/* The record's text: 1 with its claim and the start of its name (in `text`), 0 when it is not one. */
static int parse_record(char *text, unsigned long long *used, char **name)
{
    char *p = text;
    size_t h = sizeof RECORD_HEADER - 1;
    if (strncmp(p, RECORD_HEADER "\n", h + 1) != 0)
        return 0;
    p += h + 1;
    unsigned long long pid;
    if (!parse_u64_line(&p, "pid", &pid) || pid == 0 || pid > 0xffffffffull ||
        !parse_u64_line(&p, "used", used) || strncmp(p, "name ", 5) != 0)
        return 0;
    char *nl = strchr(p + 5, '\n');
    if (!nl || nl[1] != '\0')
        return 0;
    *nl = '\0';
    *name = p + 5;
    return 1;
}

/* One record of another process, if it is live and well formed: its claim, its
 * holder and the name the record gives (in `text`). */
static int read_record(int dir, const char *file, struct seen *out, char *text, char **name)
{
    struct stat st;
    int fd = regular_open(dir, file, &st);        /* never opens a FIFO or a device */
    if (fd < 0)
        return 0;
    int ok = 0;
    pid_t holder = 0;
    if (st.st_size > 0 && (unsigned long long)st.st_size <= RECORD_MAX &&
        record_held(fd, 1, LIVE_BYTE, NULL)) {
        ssize_t got = pread(fd, text, RECORD_MAX + 1, 0);
        if (got > 0 && (size_t)got <= RECORD_MAX) {
            text[got] = '\0';
            ok = parse_record(text, &out->used, name);
        }
        if (ok && !record_held(fd, 0, PID_BYTE, &holder))
            holder = 0;
    }
    close(fd);
    out->pid = (unsigned int)holder;
    out->name = NULL;
    return ok;
}

/* One scan in the making. */
struct scan {
    struct seen *rec;
    unsigned int n, cap, opened;
    struct tally places;
    struct stamp *users;
    unsigned int nusers;
    char text[RECORD_MAX + 1];
};

/* `s` in the scan's list (a listed holder once per GPU: its largest claim): 1 when it
 * lists a process not listed before on its GPU, 0 when not, -1 when memory runs out. */
static int add(struct scan *sc, struct seen *s, const char *record_name)
{
    unsigned int *place = NULL;
    if (s->pid) {
        place = tally_slot(&sc->places, (unsigned long long)s->phys << 32 | s->pid);
        if (*place) {
            struct seen *known = &sc->rec[*place - 1];
            if (s->used > known->used)
                known->used = s->used;
            return 0;
        }
    }
    if (sc->n == sc->cap) {
        unsigned int grown = sc->cap ? sc->cap * 2 : 16;
        struct seen *more = realloc(sc->rec, grown * sizeof *more);
        if (!more)
            return -1;
        sc->rec = more;
        sc->cap = grown;
    }
    if (s->pid) {
        char name[256];
        record_cmdline((pid_t)s->pid, name, sizeof name);
        printable_copy(name, sizeof name, name[0] ? name : record_name);
        if (!(s->name = strdup(name)))
            return -1;
        *place = sc->n + 1;
    }
    sc->rec[sc->n++] = *s;
    return s->pid != 0;
}

/* The records of one user's directory `dir` into the scan; 0 when the scan must stop
 * (memory, or OPEN_MAX reached). */
static int scan_user(struct scan *sc, int dir)
{
    unsigned int budget[MOCK_MAX_GPUS];
    for (unsigned int i = 0; i < MOCK_MAX_GPUS; i++)
        budget[i] = READS_PER_USER_GPU;
    int fd = dup(dir), go_on = 1;
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return 1;
    }
    struct dirent *e;
    for (unsigned int entries = 0; entries < ENTRIES_MAX && (e = readdir(d)) != NULL; entries++) {
        struct seen s;
        char *name;
        if (!record_name(e->d_name, &s.phys) || (e->d_type != DT_REG && e->d_type != DT_UNKNOWN) ||
            budget[s.phys] == 0 || records_own(e->d_name))
            continue;
        budget[s.phys]--;
        if (++sc->opened > OPEN_MAX) {
            go_on = 0;
            break;
        }
        if (!read_record(dir, e->d_name, &s, sc->text, &name))
            continue;
        int added = add(sc, &s, name);
        if (added < 0) {
            go_on = 0;
            break;
        }
        budget[s.phys] += added ? READS_PER_LISTED : 0;
    }
    closedir(d);
    return go_on;
}

/* A new scan of the records directory `top` into the snapshot (lock held). When
 * memory runs out, the records read so far are the scan. */
static void scan(int top)
{
    struct scan *sc = calloc(1, sizeof *sc);
    int fd = sc && tally_init(&sc->places) ? dup(top) : -1;
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d && fd >= 0)
        close(fd);
    struct dirent *e;
    for (unsigned int entries = 0; d && entries < ENTRIES_MAX && (e = readdir(d)) != NULL; entries++) {
        uid_t uid;
        struct stat st;
        if (!records_user_name(e->d_name, &uid) || (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN))
            continue;
        if (sc->nusers == USERS_MAX)
            break;
        if (sc->nusers % 16 == 0) {
            struct stamp *more = realloc(sc->users, (sc->nusers + 16) * sizeof *more);
            if (!more)
                break;
            sc->users = more;
        }
        int user = records_open_user_dir(top, uid, 0, &st);
        if (user < 0)
            continue;                             /* a stray: no reader opens it */
        stamp_of(&sc->users[sc->nusers++], &st, uid);
        int go_on = scan_user(sc, user);
        close(user);
        if (!go_on)
            break;
    }
    if (d)
        closedir(d);
    drop(snap.rec, snap.n);
    free(snap.users);
    snap.rec = sc ? sc->rec : NULL;
    snap.n = sc ? sc->n : 0;
    snap.users = sc ? sc->users : NULL;
    snap.nusers = sc ? sc->nusers : 0;
    if (sc)
        tally_free(&sc->places);
    free(sc);
}

/* 1 when every user's directory the snapshot read is as it was. A directory made
 * since, or one removed, changes `processes/` itself. */
static int users_unchanged(int top)
{
    char name[16];
    struct stat st;
    for (unsigned int i = 0; i < snap.nusers; i++) {
        snprintf(name, sizeof name, "%u", (unsigned int)snap.users[i].uid);
        if (fstatat(top, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !same_stamp(&snap.users[i], &st))
            return 0;
    }
    return 1;
}

static long long ns_since(const struct timespec *then, const struct timespec *now)
{
    return (long long)(now->tv_sec - then->tv_sec) * 1000000000LL + (now->tv_nsec - then->tv_nsec);
}

/* 1 when the snapshot's records directory is still `path`'s: looked up once per CHECK_NS. */
static int same_directory(const char *path, const struct timespec *now)
{
    if (!snap.valid || !snap.holding || strcmp(snap.dir, path) != 0)
        return 0;
    long long looked = ns_since(&snap.checked, now);
    if (looked >= 0 && looked < CHECK_NS)
        return 1;
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_dev != snap.top.dev || st.st_ino != snap.top.ino)
        return 0;
    snap.checked = *now;
    return 1;
}

/* The snapshot of `node`'s records, scanned again unless it is current (lock held);
 * 0 when there is no directory to read (no records). */
static int current(const struct mock_node *node)
{
    char path[MOCK_PATH_MAX];
    struct stat st;
    struct timespec now;
    if (!records_dir(node, path, sizeof path))
        return 0;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long age = ns_since(&snap.taken, &now);
    if (same_directory(path, &now) && fstat(snap.top_fd, &st) == 0 && same_stamp(&snap.top, &st) &&
        age >= 0 && age < SNAPSHOT_TTL_NS && users_unchanged(snap.top_fd))
        return 1;
    if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return 0;
    int dir = records_open_dir(path, 0);
    if (dir < 0 || fstat(dir, &st) != 0) {        /* replaced since: no records this time */
        if (dir >= 0)
            close(dir);
        return 0;
    }
    /* Stamped as before the scan: a change during it reads as a change next time (or,
     * in the same tick of the file system's clock, once the scan is SNAPSHOT_TTL_NS old);
     * the users' directories are stamped as each is opened. */
    release_top();
    stamp_of(&snap.top, &st, 0);
    scan(dir);
    snap.top_fd = dir;
    snap.holding = 1;
    snap.valid = 1;
    snprintf(snap.dir, sizeof snap.dir, "%s", path);
    snap.taken = snap.checked = now;
    return 1;
}

/* The GPU's total memory: the most any claim is shown as, and the most all count for. */
static unsigned long long total_of(const struct mock_gpu *g)
{
    unsigned long long total;
    return gpu_u64(g, K_MEMORY_TOTAL_BYTES, &total) ? total : ~0ull;
}

unsigned int mock_processes_each(const struct mock_gpu *g, each_process each, void *arg)
{
    unsigned long long total = total_of(g);
    unsigned int found = 0;
    char own_name[256];
    struct mock_process p;
    records_lock();
    if (records_own_used(g->phys, &p.used_bytes)) {
        record_cmdline(0, own_name, sizeof own_name);
        printable_copy(own_name, sizeof own_name, own_name);
        p.pid = (unsigned int)getpid();
        p.name = own_name;
        each(&p, arg);
        found++;
    }
    if (current(g->node)) {
        for (unsigned int i = 0; i < snap.n && found < MOKKA_MAX_GPU_PROCESSES; i++) {
            const struct seen *s = &snap.rec[i];
            if (s->phys != g->phys || !s->pid)
                continue;
            p.pid = s->pid;
            p.used_bytes = s->used < total ? s->used : total;
            p.name = s->name;
            each(&p, arg);
            found++;
        }
    }
    records_unlock();
    return found;
}

unsigned long long mock_processes_used(const struct mock_gpu *g)
{
    unsigned long long total = total_of(g), sum = 0, own_used;
    records_lock();
    if (records_own_used(g->phys, &own_used))
        sum = own_used;
    if (current(g->node)) {
        for (unsigned int i = 0; i < snap.n; i++) {
            const struct seen *s = &snap.rec[i];
            if (s->phys == g->phys && s->used <= total)   /* past the board: no driver granted it */
                sum = s->used > ~0ull - sum ? ~0ull : sum + s->used;
        }
    }
    records_unlock();
    return sum < total ? sum : total;
}

int mock_processes_hold(const struct mock_gpu *g)
{
    unsigned long long own_used;
    int held = 0;
    records_lock();
    held = records_own_used(g->phys, &own_used);
    if (!held && current(g->node)) {
        for (unsigned int i = 0; i < snap.n && !held; i++)
            held = snap.rec[i].phys == g->phys;
    }
    records_unlock();
    return held;
}

int mock_processes_name(const struct mock_node *node, unsigned int pid, char *name, size_t length)
{
    int found = 0;
    char own_name[256];
    records_lock();
    for (unsigned int v = 0; v < node->nvisible && !found; v++) {
        unsigned int phys = node->visible[v];
        unsigned long long used;
        if (pid == (unsigned int)getpid() && records_own_used(phys, &used)) {
            record_cmdline(0, own_name, sizeof own_name);
            printable_copy(name, length, own_name);
            found = 1;
        }
    }
    if (!found && current(node)) {
        for (unsigned int i = 0; i < snap.n && !found; i++) {
            const struct seen *s = &snap.rec[i];
            if (s->pid != pid || !s->pid)
                continue;
            for (unsigned int v = 0; v < node->nvisible && !found; v++) {
                if (node->visible[v] == s->phys) {
                    printable_copy(name, length, s->name);
                    found = 1;
                }
            }
        }
    }
    records_unlock();
    return found;
}
