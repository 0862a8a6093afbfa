/* mtouch: touch files through mmap, as a linker reads its inputs or an editor its mapped files.
 *
 *   mtouch [-n PASSES] [-p PERIOD_MS] FILE...
 *
 * Maps every FILE read-only (shared) and reads one byte of each page, PASSES times (default 1)
 * one after the other; with -p it keeps the mappings and touches them again every PERIOD_MS,
 * until killed. Built on the host by tests/bench/matrix.py and tests/vm/matrix_test.py for the
 * matrix guest (guest/matrix.sh); busybox has no tool that reads through a mapping. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct map {
    const volatile unsigned char* p;
    size_t len;
};

static unsigned long touch(const struct map* m, int n, long page) {
    unsigned long sum = 0;
    for (int i = 0; i < n; i++)
        for (size_t off = 0; off < m[i].len; off += (size_t)page) sum += m[i].p[off];
    return sum;
}

static long number(const char* s, const char* what) {
    char* end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < 0) {
        fprintf(stderr, "mtouch: %s must be a non-negative number, not '%s'\n", what, s);
        exit(2);
    }
    return v;
}

int main(int argc, char** argv) {
    long passes = 1, period_ms = -1;
    int opt;
    while ((opt = getopt(argc, argv, "n:p:")) != -1) {
        if (opt == 'n')
            passes = number(optarg, "-n");
        else if (opt == 'p')
            period_ms = number(optarg, "-p");
        else
            return 2;
    }
    int n = argc - optind;
    if (n <= 0) {
        fprintf(stderr, "usage: mtouch [-n PASSES] [-p PERIOD_MS] FILE...\n");
        return 2;
    }
    struct map* m = calloc((size_t)n, sizeof *m);
    if (!m) return 1;
    for (int i = 0; i < n; i++) {
        const char* path = argv[optind + i];
        int fd = open(path, O_RDONLY);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0) {
            perror(path);
            return 1;
        }
        m[i].len = (size_t)st.st_size;
        if (m[i].len == 0) continue;
        void* p = mmap(NULL, m[i].len, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            perror(path);
            return 1;
        }
        m[i].p = p;
        close(fd);
    }
    long page = sysconf(_SC_PAGESIZE);
    volatile unsigned long sink = 0;
    for (long i = 0; i < passes; i++) sink += touch(m, n, page);
    while (period_ms >= 0) {
        struct timespec ts = {period_ms / 1000, (period_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        sink += touch(m, n, page);
    }
    (void)sink;
    return 0;
}
