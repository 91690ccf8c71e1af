/*
 * test_queue.c -- src/client/queue.c: dedupe, one worker per key, re-adds
 * while processing, delays, per-item backoff and the overall bucket,
 * max_len, shutdown draining and get timeouts.
 *
 * Timing assertions have a strict lower bound (a key is never early) and a
 * loose upper bound (sanitizer builds on a busy machine are slow).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/queue.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "testutil.h"

#define SLACK_MS 250.0 /* upper-bound slack for timing checks */

static double now_ms(void)
{
    return (double)clock_mono_ns() / 1e6;
}

static kc_queue_t *queue_new(const kc_queue_config_t *cfg)
{
    kc_queue_t *q = NULL;
    assert_int_equal(kc_queue_new(cfg, &q), 0);
    assert_non_null(q);
    return q;
}

static void expect_get(kc_queue_t *q, const char *want, int timeout_ms)
{
    char buf[64];
    assert_int_equal(kc_queue_get(q, buf, sizeof buf, timeout_ms), 0);
    assert_string_equal(buf, want);
}

static void expect_empty(kc_queue_t *q, int timeout_ms)
{
    char buf[64];
    assert_int_equal(kc_queue_get(q, buf, sizeof buf, timeout_ms), KP_ETIMEDOUT);
}

static kc_queue_stats_t stats(kc_queue_t *q)
{
    kc_queue_stats_t s;
    kc_queue_stats(q, &s);
    return s;
}

static void test_bad_arguments(void **state)
{
    (void)state;
    kc_queue_t *q = (kc_queue_t *)1;
    kc_queue_config_t neg = {.base_delay_ms = -1};
    assert_int_equal(kc_queue_new(&neg, &q), KP_EINVAL);
    assert_null(q);
    kc_queue_config_t negq = {.qps = -1};
    assert_int_equal(kc_queue_new(&negq, &q), KP_EINVAL);

    q = queue_new(NULL);
    char buf[4];
    assert_int_equal(kc_queue_add(q, NULL), KP_EINVAL);
    assert_int_equal(kc_queue_add(q, ""), KP_EINVAL);
    assert_int_equal(kc_queue_add_after(q, "", 5), KP_EINVAL);
    assert_int_equal(kc_queue_add_rate_limited(q, NULL), KP_EINVAL);
    assert_int_equal(kc_queue_get(q, NULL, 10, 0), KP_EINVAL);
    assert_int_equal(kc_queue_get(q, buf, 0, 0), KP_EINVAL);
    kc_queue_forget(q, NULL);
    kc_queue_done(q, "never-taken"); /* harmless */
    assert_int_equal(kc_queue_num_requeues(q, "x"), 0);

    /* A key that does not fit stays queued for a bigger buffer. */
    assert_int_equal(kc_queue_add(q, "long-key"), 0);
    assert_int_equal(kc_queue_get(q, buf, sizeof buf, 0), KP_ETOOLARGE);
    assert_int_equal(stats(q).depth, 1);
    expect_get(q, "long-key", 0);
    kc_queue_done(q, "long-key");
    kc_queue_free(q);
    kc_queue_free(NULL);
}

static void test_dedupe_and_fifo(void **state)
{
    (void)state;
    kc_queue_t *q = queue_new(NULL);
    assert_int_equal(kc_queue_add(q, "a"), 0);
    assert_int_equal(kc_queue_add(q, "b"), 0);
    assert_int_equal(kc_queue_add(q, "a"), 0);
    assert_int_equal(kc_queue_add(q, "c"), 0);
    assert_int_equal(kc_queue_add(q, "b"), 0);
    kc_queue_stats_t s = stats(q);
    assert_int_equal(s.depth, 3);
    assert_int_equal(s.adds, 3);
    expect_get(q, "a", 0);
    expect_get(q, "b", 0);
    expect_get(q, "c", 0);
    expect_empty(q, 0);
    s = stats(q);
    assert_int_equal(s.depth, 0);
    assert_int_equal(s.processing, 3);
    kc_queue_done(q, "a");
    kc_queue_done(q, "b");
    kc_queue_done(q, "c");
    assert_int_equal(stats(q).processing, 0);
    expect_empty(q, 0);
    kc_queue_free(q);
}

static void test_readd_while_processing(void **state)
{
    (void)state;
    kc_queue_t *q = queue_new(NULL);
    assert_int_equal(kc_queue_add(q, "a"), 0);
    expect_get(q, "a", 0);
    /* Held by a worker: the add marks it dirty but does not queue it. */
    assert_int_equal(kc_queue_add(q, "a"), 0);
    assert_int_equal(kc_queue_add(q, "a"), 0);
    assert_int_equal(stats(q).depth, 0);
    expect_empty(q, 20);
    assert_int_equal(kc_queue_add(q, "b"), 0);
    expect_get(q, "b", 0);
    kc_queue_done(q, "b");
    kc_queue_done(q, "a"); /* now it is queued again, once */
    assert_int_equal(stats(q).depth, 1);
    expect_get(q, "a", 0);
    kc_queue_done(q, "a");
    expect_empty(q, 0);
    kc_queue_free(q);
}

/* ---- four workers hammering twenty keys ---- */

#define HK    20
#define HW    4
#define HP    2
#define HADDS 20000

typedef struct hammer {
    kc_queue_t *q;
    atomic_int busy[HK];  /* workers holding the key now (must be <= 1) */
    atomic_long gen[HK];  /* bumped by producers before each add */
    atomic_long seen[HK]; /* the gen a worker saw when it took the key */
    atomic_long processed;
    atomic_int violations;
} hammer_t;

static void *hammer_producer(void *arg)
{
    hammer_t *h = arg;
    unsigned seed = (unsigned)(uintptr_t)&seed;
    for (int i = 0; i < HADDS; i++) {
        int k = (int)(rand_r(&seed) % HK);
        char key[16];
        snprintf(key, sizeof key, "ns/k%d", k);
        atomic_fetch_add(&h->gen[k], 1);
        if (kc_queue_add(h->q, key) != 0) atomic_fetch_add(&h->violations, 1);
    }
    return NULL;
}

static void *hammer_worker(void *arg)
{
    hammer_t *h = arg;
    char key[16];
    while (kc_queue_get(h->q, key, sizeof key, -1) == 0) {
        int k = (int)strtol(key + 4, NULL, 10);
        if (atomic_fetch_add(&h->busy[k], 1) != 0) atomic_fetch_add(&h->violations, 1);
        /* Level-triggered: the gen read now covers every add before get. */
        atomic_store(&h->seen[k], atomic_load(&h->gen[k]));
        sched_yield();
        atomic_fetch_sub(&h->busy[k], 1);
        atomic_fetch_add(&h->processed, 1);
        kc_queue_done(h->q, key);
    }
    return NULL;
}

static void test_one_worker_per_key(void **state)
{
    (void)state;
    hammer_t *h = calloc(1, sizeof *h);
    assert_non_null(h);
    h->q = queue_new(NULL);
    pthread_t w[HW], p[HP];
    for (int i = 0; i < HW; i++)
        assert_int_equal(pthread_create(&w[i], NULL, hammer_worker, h), 0);
    for (int i = 0; i < HP; i++)
        assert_int_equal(pthread_create(&p[i], NULL, hammer_producer, h), 0);
    for (int i = 0; i < HP; i++)
        pthread_join(p[i], NULL);
    /* Let the workers drain what the last adds queued, then shut down:
     * get() still hands out anything queued before it reports KP_ECLOSED. */
    kc_queue_shutdown(h->q);
    for (int i = 0; i < HW; i++)
        pthread_join(w[i], NULL);

    assert_int_equal(atomic_load(&h->violations), 0);
    for (int k = 0; k < HK; k++) {
        /* Every key's last add was followed by a processing that saw it. */
        assert_int_equal(atomic_load(&h->seen[k]), atomic_load(&h->gen[k]));
        assert_int_equal(atomic_load(&h->busy[k]), 0);
    }
    long n = atomic_load(&h->processed);
    assert_true(n >= HK && n <= (long)HP * HADDS);
    kc_queue_stats_t s = stats(h->q);
    assert_int_equal(s.depth, 0);
    assert_int_equal(s.processing, 0);
    assert_int_equal((long)s.adds, n); /* each queued key was processed once */
    kc_queue_free(h->q);
    free(h);
}

/* ---- delays ---- */

static void test_delays_in_order(void **state)
{
    (void)state;
    kc_queue_t *q = queue_new(NULL);
    double t0 = now_ms();
    assert_int_equal(kc_queue_add_after(q, "c", 150), 0);
    assert_int_equal(kc_queue_add_after(q, "a", 50), 0);
    assert_int_equal(kc_queue_add_after(q, "b", 100), 0);
    assert_int_equal(kc_queue_add_after(q, "b", 400), 0); /* keeps the earlier time */
    assert_int_equal(kc_queue_add_after(q, "now", 0), 0); /* 0: at once */
    kc_queue_stats_t s = stats(q);
    assert_int_equal(s.depth, 1);
    assert_int_equal(s.delayed, 3);
    expect_get(q, "now", 0);
    expect_empty(q, 0); /* the others are not due yet */
    const char *order[] = {"a", "b", "c"};
    const double due[] = {50, 100, 150};
    for (int i = 0; i < 3; i++) {
        expect_get(q, order[i], 2000);
        double t = now_ms() - t0;
        assert_true(t >= due[i] - 1);
        assert_true(t < due[i] + SLACK_MS);
        kc_queue_done(q, order[i]);
    }
    kc_queue_done(q, "now");
    expect_empty(q, 20);
    assert_int_equal(stats(q).delayed, 0);

    /* A key delayed again with an earlier time moves up. */
    assert_int_equal(kc_queue_add_after(q, "x", 5000), 0);
    assert_int_equal(kc_queue_add_after(q, "y", 100), 0);
    assert_int_equal(kc_queue_add_after(q, "x", 30), 0);
    expect_get(q, "x", 2000);
    expect_get(q, "y", 2000);
    kc_queue_done(q, "x");
    kc_queue_done(q, "y");
    kc_queue_free(q);
}

typedef struct getter {
    kc_queue_t *q;
    int timeout_ms;
    int rc;
    char key[32];
} getter_t;

static void *getter_run(void *arg)
{
    getter_t *g = arg;
    g->rc = kc_queue_get(g->q, g->key, sizeof g->key, g->timeout_ms);
    return NULL;
}

/* A getter sleeping forever is woken for a delayed key that arrives while
 * it sleeps, even if the getter that was woken first leaves on its own
 * short deadline. */
static void test_sleeping_getters_see_delayed_keys(void **state)
{
    (void)state;
    kc_queue_t *q = queue_new(NULL);
    getter_t forever = {q, -1, 1, ""}, brief = {q, 30, 1, ""};
    pthread_t t1, t2;
    assert_int_equal(pthread_create(&t1, NULL, getter_run, &forever), 0);
    assert_int_equal(pthread_create(&t2, NULL, getter_run, &brief), 0);
    tu_sleep_ms(10);
    assert_int_equal(kc_queue_add_after(q, "late", 80), 0);
    pthread_join(t2, NULL);
    assert_int_equal(brief.rc, KP_ETIMEDOUT);
    pthread_join(t1, NULL);
    assert_int_equal(forever.rc, 0);
    assert_string_equal(forever.key, "late");
    kc_queue_done(q, "late");
    kc_queue_free(q);
}

/* Many keys with random delays: each comes out once, none early, and in the
 * order of their times. Exercises the map's growth and the heap. */
static void test_many_delayed_keys(void **state)
{
    (void)state;
    enum { N = 3000 };
    kc_queue_t *q = queue_new(NULL);
    static double lo[N], hi[N]; /* the queue reads its clock between the two */
    static char got[N];
    unsigned seed = 7;
    double t0 = now_ms();
    for (int i = 0; i < N; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        int delay = 1 + (int)(rand_r(&seed) % 200);
        lo[i] = now_ms() - t0 + delay;
        assert_int_equal(kc_queue_add_after(q, key, delay), 0);
        hi[i] = now_ms() - t0 + delay;
    }
    kc_queue_stats_t s = stats(q); /* some may be due already */
    assert_int_equal(s.delayed + s.depth, N);
    double last_lo = 0;
    for (int i = 0; i < N; i++) {
        char key[16];
        assert_int_equal(kc_queue_get(q, key, sizeof key, 5000), 0);
        int k = (int)strtol(key + 1, NULL, 10);
        assert_false(got[k]);
        got[k] = 1;
        assert_true(now_ms() - t0 >= lo[k]);
        /* in the order of their times: never one surely due before another
         * that came out earlier */
        if (hi[k] + 0.01 < last_lo)
            fail_msg("key %d due by %.2f after one due %.2f", k, hi[k], last_lo);
        if (lo[k] > last_lo) last_lo = lo[k];
        kc_queue_done(q, key);
    }
    expect_empty(q, 0);
    kc_queue_free(q);
}

/* ---- backoff ---- */

/* How long a rate-limited add of key takes to come out of get(). */
static double retry_delay(kc_queue_t *q, const char *key)
{
    double t0 = now_ms();
    assert_int_equal(kc_queue_add_rate_limited(q, key), 0);
    expect_get(q, key, 10000);
    kc_queue_done(q, key);
    return now_ms() - t0;
}

static void test_backoff_grows_and_forget_resets(void **state)
{
    (void)state;
    kc_queue_config_t cfg = {.base_delay_ms = 20, .max_delay_ms = 160, .qps = 1000, .burst = 1000};
    kc_queue_t *q = queue_new(&cfg);
    const double want[] = {20, 40, 80, 160, 160, 160};
    for (int i = 0; i < 6; i++) {
        double d = retry_delay(q, "k");
        assert_true(d >= want[i] - 1);
        assert_true(d < want[i] + SLACK_MS);
        assert_int_equal(kc_queue_num_requeues(q, "k"), i + 1);
    }
    /* The backoff is per key: another key starts at the base. */
    double other = retry_delay(q, "other");
    assert_true(other >= 19 && other < 20 + SLACK_MS);
    kc_queue_forget(q, "k");
    assert_int_equal(kc_queue_num_requeues(q, "k"), 0);
    double d = retry_delay(q, "k");
    assert_true(d >= 19 && d < 20 + SLACK_MS);
    kc_queue_forget(q, "k");
    kc_queue_forget(q, "other");
    assert_int_equal(stats(q).retries, 8);
    kc_queue_free(q);
}

/* The default limiter: 5 ms doubling (the first retries are quick). */
static void test_default_backoff(void **state)
{
    (void)state;
    kc_queue_t *q = queue_new(NULL);
    double sum = 0;
    for (int i = 0; i < 5; i++)
        sum += retry_delay(q, "k"); /* 5+10+20+40+80 */
    assert_true(sum >= 155 - 5);
    assert_true(sum < 155 + 2 * SLACK_MS);
    assert_int_equal(kc_queue_num_requeues(q, "k"), 5);
    kc_queue_free(q); /* frees the failure count too */
}

/* The overall bucket: burst keys go at the per-item delay, the rest at qps. */
static void test_overall_bucket(void **state)
{
    (void)state;
    kc_queue_config_t cfg = {.base_delay_ms = 1, .max_delay_ms = 1, .qps = 20, .burst = 3};
    kc_queue_t *q = queue_new(&cfg);
    double t0 = now_ms();
    for (int i = 0; i < 6; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(kc_queue_add_rate_limited(q, key), 0);
    }
    const double due[] = {1, 1, 1, 50, 100, 150};
    for (int i = 0; i < 6; i++) {
        char key[16], want[16];
        snprintf(want, sizeof want, "k%d", i);
        assert_int_equal(kc_queue_get(q, key, sizeof key, 5000), 0);
        double t = now_ms() - t0;
        if (i < 3) {
            assert_int_equal(key[0], 'k');
        } else {
            assert_string_equal(key, want); /* beyond the burst: in qps order */
        }
        assert_true(t >= due[i] - 1);
        assert_true(t < due[i] + SLACK_MS);
        kc_queue_done(q, key);
        kc_queue_forget(q, key);
    }
    kc_queue_free(q);
}

/* The default bucket (10 qps, burst 100): the 101st retry waits ~100 ms. */
static void test_default_bucket_burst(void **state)
{
    (void)state;
    kc_queue_t *q = queue_new(NULL);
    double t0 = now_ms();
    for (int i = 0; i < 101; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(kc_queue_add_rate_limited(q, key), 0);
    }
    for (int i = 0; i < 100; i++) {
        char key[16];
        assert_int_equal(kc_queue_get(q, key, sizeof key, 5000), 0);
        assert_string_not_equal(key, "k100");
        kc_queue_done(q, key);
    }
    assert_true(now_ms() - t0 < 5 + SLACK_MS);
    expect_get(q, "k100", 5000);
    double t = now_ms() - t0;
    assert_true(t >= 99 && t < 100 + SLACK_MS);
    kc_queue_done(q, "k100");
    kc_queue_free(q);
}

/* ---- caps, shutdown, timeouts ---- */

static void test_max_len(void **state)
{
    (void)state;
    kc_queue_config_t cfg = {.max_len = 2};
    kc_queue_t *q = queue_new(&cfg);
    assert_int_equal(kc_queue_add(q, "a"), 0);
    assert_int_equal(kc_queue_add(q, "b"), 0);
    assert_int_equal(kc_queue_add(q, "c"), KP_ETOOLARGE);
    assert_int_equal(kc_queue_add(q, "a"), 0); /* queued already: no growth */
    assert_int_equal(kc_queue_add_after(q, "c", 50), KP_ETOOLARGE);
    assert_int_equal(kc_queue_add_rate_limited(q, "c"), KP_ETOOLARGE);
    assert_int_equal(kc_queue_num_requeues(q, "c"), 0); /* not counted */
    kc_queue_stats_t s = stats(q);
    assert_int_equal(s.depth, 2);
    assert_int_equal(s.retries, 0);
    expect_get(q, "a", 0); /* processing keys do not count */
    assert_int_equal(kc_queue_add_after(q, "c", 30), 0);
    assert_int_equal(kc_queue_add(q, "d"), KP_ETOOLARGE); /* delayed keys do */
    assert_int_equal(kc_queue_add(q, "a"), KP_ETOOLARGE); /* so does a dirty re-add */
    kc_queue_done(q, "a");
    expect_get(q, "b", 0);
    expect_get(q, "c", 2000);
    assert_int_equal(kc_queue_add(q, "d"), 0);
    assert_int_equal(kc_queue_add(q, "e"), 0);
    assert_int_equal(kc_queue_add(q, "f"), KP_ETOOLARGE);
    kc_queue_done(q, "b");
    kc_queue_done(q, "c");
    expect_get(q, "d", 0);
    expect_get(q, "e", 0);
    kc_queue_done(q, "d");
    kc_queue_done(q, "e");
    kc_queue_free(q);
}

static void test_shutdown_drains(void **state)
{
    (void)state;
    kc_queue_t *q = queue_new(NULL);
    assert_int_equal(kc_queue_add(q, "a"), 0);
    assert_int_equal(kc_queue_add(q, "b"), 0);
    assert_int_equal(kc_queue_add_after(q, "late", 20), 0);
    expect_get(q, "a", 0);
    assert_int_equal(kc_queue_add(q, "a"), 0); /* dirty while processing */
    kc_queue_shutdown(q);
    assert_int_equal(kc_queue_add(q, "c"), KP_ECLOSED);
    assert_int_equal(kc_queue_add_after(q, "c", 10), KP_ECLOSED);
    assert_int_equal(kc_queue_add_rate_limited(q, "c"), KP_ECLOSED);
    assert_int_equal(stats(q).delayed, 0); /* delayed keys are dropped */
    expect_get(q, "b", -1);                /* queued keys are still handed out */
    kc_queue_done(q, "b");
    char buf[16];
    /* Empty while "a" is being processed: closed (as client-go's Get) ... */
    assert_int_equal(kc_queue_get(q, buf, sizeof buf, -1), KP_ECLOSED);
    /* ... but done() still queues the dirty key, and it is drained. */
    kc_queue_done(q, "a");
    expect_get(q, "a", -1);
    kc_queue_done(q, "a");
    tu_sleep_ms(30);
    assert_int_equal(kc_queue_get(q, buf, sizeof buf, -1), KP_ECLOSED);
    kc_queue_shutdown(q); /* twice is harmless */
    kc_queue_free(q);
}

static void test_shutdown_wakes_getters(void **state)
{
    (void)state;
    kc_queue_t *q = queue_new(NULL);
    getter_t g[3];
    pthread_t t[3];
    for (int i = 0; i < 3; i++) {
        g[i] = (getter_t){q, -1, 1, ""};
        assert_int_equal(pthread_create(&t[i], NULL, getter_run, &g[i]), 0);
    }
    tu_sleep_ms(30);
    kc_queue_shutdown(q);
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(g[i].rc, KP_ECLOSED);
    }
    kc_queue_free(q);
}

static void test_get_timeout(void **state)
{
    (void)state;
    kc_queue_t *q = queue_new(NULL);
    double t0 = now_ms();
    expect_empty(q, 60);
    double t = now_ms() - t0;
    assert_true(t >= 59 && t < 60 + SLACK_MS);
    t0 = now_ms();
    expect_empty(q, 0); /* 0: do not wait */
    assert_true(now_ms() - t0 < 50);
    /* A key added while a getter waits ends the wait at once. */
    getter_t g = {q, 5000, 1, ""};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, getter_run, &g), 0);
    tu_sleep_ms(20);
    t0 = now_ms();
    assert_int_equal(kc_queue_add(q, "k"), 0);
    pthread_join(th, NULL);
    assert_int_equal(g.rc, 0);
    assert_string_equal(g.key, "k");
    assert_true(now_ms() - t0 < SLACK_MS);
    kc_queue_done(q, "k");
    kc_queue_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_dedupe_and_fifo),
        cmocka_unit_test(test_readd_while_processing),
        cmocka_unit_test(test_one_worker_per_key),
        cmocka_unit_test(test_delays_in_order),
        cmocka_unit_test(test_sleeping_getters_see_delayed_keys),
        cmocka_unit_test(test_many_delayed_keys),
        cmocka_unit_test(test_backoff_grows_and_forget_resets),
        cmocka_unit_test(test_default_backoff),
        cmocka_unit_test(test_overall_bucket),
        cmocka_unit_test(test_default_bucket_burst),
        cmocka_unit_test(test_max_len),
        cmocka_unit_test(test_shutdown_drains),
        cmocka_unit_test(test_shutdown_wakes_getters),
        cmocka_unit_test(test_get_timeout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
