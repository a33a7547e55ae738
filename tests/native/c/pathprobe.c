/* A libc consumer for the path shims' tests, built by the tests with the
 * system gcc: with -D_FORTIFY_SOURCE=2 -O2 its open/readlink/realpath calls
 * become __open_2/__readlink_chk/__realpath_chk, and with
 * -D_FILE_OFFSET_BITS=64 the 64-bit variants (open64, stat64, fopen64...).
 *
 *   pathprobe report CHDIR DIRFD PATH...
 *       every libc path call on every PATH ("NULL": a NULL pointer), one line
 *       "<call>\t<path>\t<result>" each; each call runs in a child of its own,
 *       so a call that crashes reports "signal <n>". CHDIR: a directory to
 *       chdir() into first, DIRFD: a path to open() for the *at calls'
 *       directory fd (a file too: their relative paths then fail ENOTDIR;
 *       "-": AT_FDCWD), both through the shims as any path.
 *       A result is what the call gives (first line read, inode, link text,
 *       sorted names, xattr value) or strerror(errno).
 *   pathprobe stress PATH N
 *       N threads and a SIGALRM handler stat and open PATH for a second;
 *       "ok busy" */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

/* Not known at compile time: fortify then calls __open_2 and __readlink_chk. */
static volatile int read_only = O_RDONLY;
static volatile size_t link_room = PATH_MAX - 1;

#define XATTR "user.mokka"              /* the tests set it on files of the mock tree */
#define ABSENT_XATTR "user.mokka-absent"

typedef void (*call_fn)(int dirfd, const char *path, char *out, size_t size);

static void failed(char *out, size_t size)
{
    snprintf(out, size, "%s", strerror(errno));
}

static void first_line(int fd, char *out, size_t size)
{
    ssize_t n = read(fd, out, size - 1);
    if (n < 0) {
        failed(out, size);
    } else {
        out[n] = '\0';
        out[strcspn(out, "\n")] = '\0';
    }
    close(fd);
}

static void opened(int fd, char *out, size_t size)
{
    if (fd < 0)
        failed(out, size);
    else
        first_line(fd, out, size);
}

static void stated(int rc, ino_t ino, char *out, size_t size)
{
    if (rc != 0)
        failed(out, size);
    else
        snprintf(out, size, "ino %llu", (unsigned long long)ino);
}

static void done(long rc, char *out, size_t size)
{
    if (rc < 0)
        failed(out, size);
    else
        snprintf(out, size, "ok");
}

static void text(ssize_t n, const char *buf, char *out, size_t size)
{
    if (n < 0)
        failed(out, size);
    else
        snprintf(out, size, "%.*s", (int)n, buf);
}

/* The names joined by ',' (truncated at size). */
static void names(char **list, int count, char *out, size_t size)
{
    size_t at = 0;
    out[0] = '\0';
    for (int i = 0; i < count && at < size; i++)
        at += (size_t)snprintf(out + at, size - at, "%s%s", i ? "," : "", list[i]);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void c_open(int dirfd, const char *p, char *out, size_t size)
{
    (void)dirfd;
    opened(open(p, read_only), out, size);          /* __open_2 under fortify */
}

static void c_openat(int dirfd, const char *p, char *out, size_t size)
{
    opened(openat(dirfd, p, read_only), out, size); /* __openat_2 under fortify */
}

static void c_fopen(int dirfd, const char *p, char *out, size_t size)
{
    (void)dirfd;
    FILE *f = fopen(p, "r");
    if (f == NULL) {
        failed(out, size);
        return;
    }
    first_line(dup(fileno(f)), out, size);
    fclose(f);
}

static void c_stat(int dirfd, const char *p, char *out, size_t size)
{
    (void)dirfd;
    struct stat st = {0};
    int rc = stat(p, &st);
    stated(rc, st.st_ino, out, size);
}

static void c_lstat(int dirfd, const char *p, char *out, size_t size)
{
    (void)dirfd;
    struct stat st = {0};
    int rc = lstat(p, &st);
    stated(rc, st.st_ino, out, size);
}

static void c_fstatat(int dirfd, const char *p, char *out, size_t size)
{
    struct stat st = {0};
    int rc = fstatat(dirfd, p, &st, 0);
    stated(rc, st.st_ino, out, size);
}

static void c_statx(int dirfd, const char *p, char *out, size_t size)
{
    struct statx stx = {0};
    int rc = statx(dirfd, p, 0, STATX_INO, &stx);
    stated(rc, stx.stx_ino, out, size);
}

static void c_access(int dirfd, const char *p, char *out, size_t size)
{
    (void)dirfd;
    done(access(p, R_OK), out, size);
}

static void c_faccessat(int dirfd, const char *p, char *out, size_t size)
{
    done(faccessat(dirfd, p, R_OK, 0), out, size);
}

static void c_euidaccess(int dirfd, const char *p, char *out, size_t size)
{
    (void)dirfd;
    done(euidaccess(p, R_OK), out, size);
}

static void c_readlink(int dirfd, const char *p, char *out, size_t size)
{
    (void)dirfd;
    char buf[PATH_MAX];
    text(readlink(p, buf, link_room), buf, out, size);    /* __readlink_chk under fortify */
}

static void c_readlinkat(int dirfd, const char *p, char *out, size_t size)
{
    char buf[PATH_MAX];
    text(readlinkat(dirfd, p, buf, link_room), buf, out, size);
}

static void c_realpath(int dirfd, const char *p, char *out, size_t size)
{
    (void)dirfd;
    char buf[PATH_MAX];
    char *real = realpath(p, buf);                  /* __realpath_chk under fortify */
    text(real ? (ssize_t)strlen(real) : -1, buf, out, size);
}

static void c_opendir(int dirfd, const char *p, char *out, size_t size)
{
    (void)dirfd;
    DIR *d = opendir(p);
    if (d == NULL) {
        failed(out, size);
        return;
    }
    char *list[256];
    int count = 0;
    for (struct dirent *e; count < 256 && (e = readdir(d)) != NULL;)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            list[count++] = strdup(e->d_name);
    qsort(list, (size_t)count, sizeof *list, by_name);
    names(list, count, out, size);
    closedir(d);
}

static int not_dots(const struct dirent *e)
{
    return strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
}

static void c_scandir(int dirfd, const char *p, char *out, size_t size)
{
    (void)dirfd;
    struct dirent **found;
    int count = scandir(p, &found, not_dots, alphasort);
    if (count < 0) {
        failed(out, size);
        return;
    }
    char *list[256];
    for (int i = 0; i < count && i < 256; i++)
        list[i] = found[i]->d_name;
    names(list, count < 256 ? count : 256, out, size);
}

static void c_chdir(int dirfd, const char *p, char *out, size_t size)
{
    (void)dirfd;
    char cwd[PATH_MAX];
    if (chdir(p) != 0)
        failed(out, size);
    else
        snprintf(out, size, "%s", getcwd(cwd, sizeof cwd) ? cwd : strerror(errno));
}

static void c_getxattr(int dirfd, const char *p, char *out, size_t size)
{
    (void)dirfd;
    char buf[256];
    text(getxattr(p, XATTR, buf, sizeof buf), buf, out, size);
}

static void c_lgetxattr(int dirfd, const char *p, char *out, size_t size)
{
    (void)dirfd;
    char buf[256];
    text(lgetxattr(p, XATTR, buf, sizeof buf), buf, out, size);
}

static void listed(ssize_t n, char *buf, char *out, size_t size)
{
    if (n < 0) {
        failed(out, size);
        return;
    }
    char *list[64];
    int count = 0;
    for (char *name = buf; name < buf + n && count < 64; name += strlen(name) + 1)
        list[count++] = name;
    qsort(list, (size_t)count, sizeof *list, by_name);
    names(list, count, out, size);
}

static void c_listxattr(int dirfd, const char *p, char *out, size_t size)
{
    (void)dirfd;
    char buf[1024];
    listed(listxattr(p, buf, sizeof buf), buf, out, size);
}

static void c_llistxattr(int dirfd, const char *p, char *out, size_t size)
{
    (void)dirfd;
    char buf[1024];
    listed(llistxattr(p, buf, sizeof buf), buf, out, size);
}

/* Replace and remove an attribute nobody set: they reach the file and change nothing. */
static void c_setxattr(int dirfd, const char *p, char *out, size_t size)
{
    (void)dirfd;
    done(setxattr(p, ABSENT_XATTR, "x", 1, XATTR_REPLACE), out, size);
}

static void c_lsetxattr(int dirfd, const char *p, char *out, size_t size)
{
    (void)dirfd;
    done(lsetxattr(p, ABSENT_XATTR, "x", 1, XATTR_REPLACE), out, size);
}

static void c_removexattr(int dirfd, const char *p, char *out, size_t size)
{
    (void)dirfd;
    done(removexattr(p, ABSENT_XATTR), out, size);
}

static void c_lremovexattr(int dirfd, const char *p, char *out, size_t size)
{
    (void)dirfd;
    done(lremovexattr(p, ABSENT_XATTR), out, size);
}

static const struct {
    const char *name;
    call_fn run;
} CALLS[] = {
    {"open", c_open}, {"openat", c_openat}, {"fopen", c_fopen}, {"stat", c_stat},
    {"lstat", c_lstat}, {"fstatat", c_fstatat}, {"statx", c_statx}, {"access", c_access},
    {"faccessat", c_faccessat}, {"euidaccess", c_euidaccess}, {"readlink", c_readlink},
    {"readlinkat", c_readlinkat}, {"realpath", c_realpath}, {"opendir", c_opendir},
    {"scandir", c_scandir}, {"chdir", c_chdir}, {"getxattr", c_getxattr},
    {"lgetxattr", c_lgetxattr}, {"listxattr", c_listxattr}, {"llistxattr", c_llistxattr},
    {"setxattr", c_setxattr}, {"lsetxattr", c_lsetxattr}, {"removexattr", c_removexattr},
    {"lremovexattr", c_lremovexattr},
};

static const char *volatile no_path = NULL;  /* hidden from the nonnull attributes */

static int report(const char *dir, const char *at, char **paths, int count)
{
    if (strcmp(dir, "-") != 0 && chdir(dir) != 0) {
        printf("chdir\t%s\t%s\n", dir, strerror(errno));
        return 0;
    }
    int dirfd = AT_FDCWD;
    if (strcmp(at, "-") != 0 && (dirfd = open(at, O_RDONLY)) < 0) {
        printf("dirfd\t%s\t%s\n", at, strerror(errno));
        return 0;
    }
    for (int i = 0; i < count; i++) {
        const char *path = strcmp(paths[i], "NULL") == 0 ? no_path : paths[i];
        for (size_t c = 0; c < sizeof CALLS / sizeof *CALLS; c++) {
            fflush(stdout);
            pid_t child = fork();
            if (child == 0) {
                char out[2048];
                errno = 0;
                CALLS[c].run(dirfd, path, out, sizeof out);
                printf("%s\t%s\t%s\n", CALLS[c].name, paths[i], out);
                fflush(stdout);
                _exit(0);
            }
            int status = 0;
            if (child < 0 || waitpid(child, &status, 0) != child)
                return 2;
            if (WIFSIGNALED(status))
                printf("%s\t%s\tsignal %d\n", CALLS[c].name, paths[i], WTERMSIG(status));
        }
    }
    return 0;
}

static const char *stress_path;
static volatile sig_atomic_t stop, in_handler_ok;

static void on_alarm(int sig)
{
    (void)sig;
    int saved = errno;
    struct stat st;
    if (stat(stress_path, &st) == 0)                /* the shim, inside a signal handler */
        in_handler_ok++;
    errno = saved;
}

static void *worker(void *arg)
{
    long *count = arg;
    while (!stop) {
        int fd = open(stress_path, O_RDONLY);
        if (fd < 0) {
            fprintf(stderr, "open %s: %s\n", stress_path, strerror(errno));
            exit(2);
        }
        close(fd);
        (*count)++;
    }
    return NULL;
}

static int stress(const char *path, int threads)
{
    stress_path = path;
    struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval every = {{0, 1000}, {0, 1000}};
    setitimer(ITIMER_REAL, &every, NULL);
    pthread_t t[64];
    long counts[64] = {0};
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, worker, &counts[i]);
    struct timespec second = {1, 0};
    while (nanosleep(&second, &second) != 0)
        ;
    stop = 1;
    long total = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        total += counts[i];
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    printf("ok %s\n", total > 0 && in_handler_ok > 0 ? "busy" : "idle");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 5 && strcmp(argv[1], "report") == 0)
        return report(argv[2], argv[3], argv + 4, argc - 4);
    if (argc == 4 && strcmp(argv[1], "stress") == 0)
        return stress(argv[2], atoi(argv[3]) > 64 ? 64 : atoi(argv[3]));
    fprintf(stderr, "usage: pathprobe report CHDIR DIRFD PATH... | stress PATH N\n");
    return 2;
}
