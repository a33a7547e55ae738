/* A libc consumer for the path shims' tests, built by the tests with the
 * system gcc: with -D_FORTIFY_SOURCE=2 -O2 its open/readlink/realpath calls
 * become __open_2/__readlink_chk/__realpath_chk, and with
 * -D_FILE_OFFSET_BITS=64 the 64-bit variants (open64, stat64, fopen64...).
 *
 *   pathprobe calls DIR FILE LINK   one line per libc call: "<call> <result>"
 *   pathprobe stress PATH N         N threads and a SIGALRM handler stat and
 *                                   open PATH for a second; "ok <count>" */
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
#include <unistd.h>

/* Not known at compile time: fortify then calls __open_2 and __readlink_chk. */
static volatile int read_only = O_RDONLY;
static volatile size_t link_room = PATH_MAX - 1;

static void calls(const char *dir, const char *file, const char *link)
{
    char path[PATH_MAX], buf[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int fd = open(path, read_only);                 /* __open_2 under fortify */
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    printf("open %s\n", n > 0 ? (buf[n] = 0, strtok(buf, "\n")) : strerror(errno));
    if (fd >= 0)
        close(fd);
    fd = openat(AT_FDCWD, path, read_only);         /* __openat_2 under fortify */
    printf("openat %s\n", fd >= 0 ? "ok" : strerror(errno));
    if (fd >= 0)
        close(fd);
    FILE *f = fopen(path, "r");
    printf("fopen %s\n", f ? "ok" : strerror(errno));
    if (f)
        fclose(f);
    struct stat st;
    printf("stat %s\n", stat(path, &st) == 0 ? "ok" : strerror(errno));
    printf("lstat %s\n", lstat(dir, &st) == 0 ? "ok" : strerror(errno));
    printf("fstatat %s\n", fstatat(AT_FDCWD, path, &st, 0) == 0 ? "ok" : strerror(errno));
    printf("access %s\n", access(path, R_OK) == 0 ? "ok" : strerror(errno));
    printf("faccessat %s\n", faccessat(AT_FDCWD, path, R_OK, 0) == 0 ? "ok" : strerror(errno));
    n = readlink(link, buf, link_room);             /* __readlink_chk under fortify */
    printf("readlink %s\n", n > 0 ? (buf[n] = 0, buf) : strerror(errno));
    char *real = realpath(path, buf);               /* __realpath_chk under fortify */
    printf("realpath %s\n", real ? "ok" : strerror(errno));
    DIR *d = opendir(dir);
    printf("opendir %s\n", d ? "ok" : strerror(errno));
    if (d)
        closedir(d);
    struct dirent **list;
    int count = scandir(dir, &list, NULL, alphasort);
    printf("scandir %d\n", count);
    for (int i = 0; i < count; i++)
        free(list[i]);
    if (count >= 0)
        free(list);
    printf("chdir %s\n", chdir(dir) == 0 ? "ok" : strerror(errno));
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
    if (argc == 5 && strcmp(argv[1], "calls") == 0) {
        calls(argv[2], argv[3], argv[4]);
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "stress") == 0)
        return stress(argv[2], atoi(argv[3]) > 64 ? 64 : atoi(argv[3]));
    fprintf(stderr, "usage: pathprobe calls DIR FILE LINK | stress PATH N\n");
    return 2;
}
