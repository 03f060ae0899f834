/*
 * tp_clock.h - the clocks, once: every part reads time through these.
 *
 * Monotonic (CLOCK_MONOTONIC): durations, deadlines, ages and timeouts
 * inside one process; it never jumps, and it means nothing to another
 * host. Real time (CLOCK_REALTIME): times other hosts read (file times,
 * a capability's expiry, which both daemons compare), and the deadlines
 * of pthread_cond_timedwait on a default condition variable.
 */
#ifndef TESSERA_TP_CLOCK_H
#define TESSERA_TP_CLOCK_H

#include <stdint.h>
#include <time.h>

#define TP_NS_PER_S 1000000000ull
#define TP_NS_PER_MS 1000000ull

/* Monotonic nanoseconds (since an arbitrary start). */
static inline uint64_t tp_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * TP_NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* Monotonic seconds, for code that reckons deadlines in seconds. */
static inline double tp_mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Real time: nanoseconds since the Unix epoch. */
static inline int64_t tp_real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * (int64_t)TP_NS_PER_S + ts.tv_nsec;
}

/* The real time `ms` milliseconds from now, as pthread_cond_timedwait
 * takes its deadline. */
static inline struct timespec tp_real_deadline(uint64_t ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * (long)TP_NS_PER_MS;
	if (ts.tv_nsec >= (long)TP_NS_PER_S) {
		ts.tv_sec++;
		ts.tv_nsec -= (long)TP_NS_PER_S;
	}
	return ts;
}

#endif /* TESSERA_TP_CLOCK_H */
