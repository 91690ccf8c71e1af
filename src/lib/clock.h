/*
 * clock.h -- time in one place, so that code never mixes clocks by accident.
 */
#ifndef KP_CLOCK_H
#define KP_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* Nanoseconds on the monotonic clock (for durations and deadlines). */
int64_t clock_mono_ns(void);

/* Nanoseconds since the Unix epoch (for timestamps that outlive the process). */
int64_t clock_wall_ns(void);

/* The CLOCK_MONOTONIC time `ms` milliseconds from now, as a timespec for
 * pthread_cond_timedwait() on a condition variable set to CLOCK_MONOTONIC. */
struct timespec clock_deadline_ms(int64_t ms);

/* Initialise `cv` to time its waits on CLOCK_MONOTONIC, for deadlines from
 * clock_deadline_ms(). Returns 0 or KP_ENOMEM. */
int clock_cond_init(pthread_cond_t *cv);

#endif
