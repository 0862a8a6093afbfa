/* The guest's punctuality canary: sleeps PERIOD_MS at a time and records every wake-up that
 * came LATE_MS or more after its deadline, as "<wake_ms> <late_ms>" lines (CLOCK_BOOTTIME, the
 * clock of /proc/uptime) appended to the file named by argv[1].
 *
 * Why: under TCG a host that starves QEMU's vCPU thread makes every guest timer late, the
 * daemon's and the test's alike. The host judges a guest-side deadline net of the time this
 * canary lost over the same window (tests/vm/canary.py), so a test fails when reclaimd is late
 * and not when the host is crowded.
 *
 * SCHED_FIFO: the canary measures whether the vCPU runs at all, not how busy the guest keeps
 * it; a daemon that is late because the guest is busy stays late. It prints nothing while it
 * runs (every byte on the serial port costs guest CPU under TCG, and idle judgements are in
 * guest CPU time); guest/init.sh prints the file after the test.
 * Built static by tests/vm/canary.py (the guest has no libc of its own). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* 500 ms: a stall longer than this overlaps a deadline, so the canary sees at least its tail;
 * shorter ones it sees in part or not at all, which only leaves more of a delay unexcused. Each
 * wake-up costs the guest about 0.5 ms under TCG on a loaded host (schedstat): at 100 ms that
 * was 0.5 % of the vCPU (0.2 % counted busy), a whole idle budget; at 500 ms it is a fifth. */
enum { PERIOD_MS = 500, LATE_MS = 5 };

static long long now_ms(void) {
	struct timespec t;
	clock_gettime(CLOCK_BOOTTIME, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

int main(int argc, char **argv) {
	if (argc != 2) {
		fprintf(stderr, "usage: %s FILE\n", argv[0]);
		return 2;
	}
	int fd = open(argv[1], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	struct sched_param sp = {.sched_priority = 1};
	if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0)
		dprintf(fd, "# no SCHED_FIFO: %s\n", strerror(errno));
	mlockall(MCL_CURRENT); /* a reclaim must not make the canary fault */
	dprintf(fd, "# period_ms=%d late_ms=%d start_ms=%lld\n", PERIOD_MS, LATE_MS, now_ms());
	for (;;) {
		long long due = now_ms() + PERIOD_MS;
		struct timespec d = {.tv_sec = PERIOD_MS / 1000, .tv_nsec = (PERIOD_MS % 1000) * 1000000L};
		while (nanosleep(&d, &d) != 0) {
		}
		long long woke = now_ms();
		if (woke - due >= LATE_MS)
			dprintf(fd, "%lld %lld\n", woke, woke - due);
	}
}
