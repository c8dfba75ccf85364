/*
 * The floor of a scan on this machine: what opening, reading and closing
 * every file of a tree costs with nothing else (no ignore rules, no
 * matcher, no output), for BENCHMARKS.md "Per-call overhead". Lists each
 * directory with getdents64, opens each entry relative to its directory
 * (openat), reads it with one read(2) into a 1 MiB buffer, closes it:
 * the system calls a scan cannot avoid, in C, in one thread.
 *
 *   cc -O2 scripts/syscall-floor.c -o /tmp/syscall-floor
 *   /tmp/syscall-floor DIR N PAUSE_US [COMMAND]
 *
 * Times N walks of DIR and prints the median and the fastest. PAUSE_US
 * sleeps before each walk; COMMAND, when given, runs (through system(3))
 * before each walk and untimed, to leave the caches as a bench that
 * alternates with rg leaves them: for example
 *   "rg -q device_state DIR </dev/null >/dev/null".
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static char buf[1 << 20];
static long files;

struct entry {
    unsigned long ino;
    long off;
    unsigned short reclen;
    unsigned char type;
    char name[];
};

static void walk(int dir)
{
    char listing[32768];
    for (;;) {
        long n = syscall(SYS_getdents64, dir, listing, sizeof listing);
        if (n <= 0)
            return;
        for (long at = 0; at < n;) {
            struct entry *e = (struct entry *)(listing + at);
            at += e->reclen;
            const char *s = e->name;
            if (s[0] == '.' && (s[1] == 0 || (s[1] == '.' && s[2] == 0)))
                continue;
            if (e->type == DT_DIR) {
                int sub = openat(dir, s, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (sub >= 0) {
                    walk(sub);
                    close(sub);
                }
            } else {
                int f = openat(dir, s, O_RDONLY | O_CLOEXEC);
                if (f >= 0) {
                    if (read(f, buf, sizeof buf) >= 0)
                        files++;
                    close(f);
                }
            }
        }
    }
}

static double micros(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int ascending(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: syscall-floor DIR N PAUSE_US [COMMAND]\n");
        return 2;
    }
    int n = atoi(argv[2]), pause = atoi(argv[3]);
    if (n < 1) {
        fprintf(stderr, "syscall-floor: N must be at least 1\n");
        return 2;
    }
    double *t = malloc(n * sizeof *t);
    for (int i = 0; i < n; i++) {
        if (pause)
            usleep(pause);
        if (argc > 4 && system(argv[4]) == -1)
            return 2;
        double start = micros();
        int root = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (root < 0) {
            perror(argv[1]);
            return 2;
        }
        files = 0;
        walk(root);
        close(root);
        t[i] = micros() - start;
    }
    qsort(t, n, sizeof *t, ascending);
    printf("median %.1f us, fastest %.1f us, %ld files a walk\n", t[n / 2], t[0], files);
    return 0;
}
