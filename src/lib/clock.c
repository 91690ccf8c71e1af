#include "clock.h"

#include "err.h"

static int64_t now_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t clock_mono_ns(void) { return now_ns(CLOCK_MONOTONIC); }
int64_t clock_wall_ns(void) { return now_ns(CLOCK_REALTIME); }

struct timespec clock_deadline_ms(int64_t ms)
{
    int64_t t = now_ns(CLOCK_MONOTONIC) + ms * 1000000;
    struct timespec ts = {.tv_sec = t / 1000000000, .tv_nsec = t % 1000000000};
    return ts;
}

int clock_cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t a;
    if (pthread_condattr_init(&a)) return KP_ENOMEM;
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
    return rc ? KP_ENOMEM : 0;
}
