/*
 * clockshift: an LD_PRELOAD library that shifts a process's wall clock (CLOCK_REALTIME, gettimeofday,
 * time) by an offset in nanoseconds that another process writes into a small file. lockcheck uses it to
 * jump redis-server's clock; libfaketime does not work with Debian's redis-server because jemalloc reads
 * the clock while it starts, before libfaketime is ready.
 *
 * So this library never allocates and never calls into libc beyond syscall(): the file named by
 * LOCKCHECK_CLOCK_FILE is opened and mapped with raw system calls on first use, and the real clock is read
 * with the clock_gettime system call. Monotonic clocks are left alone, as a real clock step leaves them.
 *
 * The file holds three little-endian int64s: the offset, a drift rate in parts per million and the real
 * time (ns) the drift is counted from, so a clock can also run fast or slow (a rate, not a jump):
 * shifted = real + offset + (real - anchor) * rate / 1e6. An 8-byte file from before the drift mode reads
 * as no drift (the rest of its mapped page is zeros).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile int64_t *offset_ns; /* mapped offset, rate (ppm) and anchor, or NULL when there are none */
static volatile int mapped;         /* set once the file is mapped, or known to be absent */

static int64_t offset(int64_t real_ns) {
	if (!mapped) {
		/* The clock is read very early (jemalloc's own start-up), maybe before the environment can be
		 * read: without a path, try again on the next call rather than give up for good. */
		const char *path = getenv("LOCKCHECK_CLOCK_FILE");
		if (path) {
			long fd = syscall(SYS_open, path, O_RDONLY | O_CLOEXEC);
			if (fd >= 0) {
				void *p = (void *)syscall(SYS_mmap, NULL, 3 * sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
				if (p != MAP_FAILED)
					offset_ns = (volatile int64_t *)p;
				syscall(SYS_close, fd);
			}
			mapped = 1;
		}
	}
	if (!offset_ns)
		return 0;
	int64_t off = offset_ns[0], rate = offset_ns[1], anchor = offset_ns[2];
	if (rate != 0 && real_ns > anchor)
		off += (real_ns - anchor) / 1000 * rate / 1000; /* µs × ppm / 1000: no overflow for days */
	return off;
}

static int real_clock_gettime(clockid_t clk, struct timespec *ts) {
	return (int)syscall(SYS_clock_gettime, clk, ts);
}

static void shift(struct timespec *ts) {
	int64_t real = (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
	int64_t ns = real + offset(real);
	ts->tv_sec = ns / 1000000000LL;
	ts->tv_nsec = ns % 1000000000LL;
	if (ts->tv_nsec < 0) {
		ts->tv_nsec += 1000000000LL;
		ts->tv_sec--;
	}
}

int clock_gettime(clockid_t clk, struct timespec *ts) {
	int rc = real_clock_gettime(clk, ts);
	if (rc == 0 && (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE))
		shift(ts);
	return rc;
}

int gettimeofday(struct timeval *tv, void *tz) {
	struct timespec ts;
	(void)tz;
	if (real_clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return -1;
	shift(&ts);
	if (tv) {
		tv->tv_sec = ts.tv_sec;
		tv->tv_usec = ts.tv_nsec / 1000;
	}
	return 0;
}

time_t time(time_t *out) {
	struct timespec ts;
	if (real_clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return (time_t)-1;
	shift(&ts);
	if (out)
		*out = ts.tv_sec;
	return ts.tv_sec;
}
