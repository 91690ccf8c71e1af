/*
 * queue.c -- the controllers' work queue: client-go's workqueue (queue.go),
 * delaying queue and DefaultControllerRateLimiter in one structure.
 *
 * Why one structure: a controller needs all three together, and keeping them
 * under one mutex makes "a key is handed to one worker at a time" and "a
 * delayed key becomes queued" single steps instead of a protocol between
 * three objects and a timer goroutine.
 *
 * Each key known to the queue has one entry (qent_t) in a hash map. An entry
 * carries flags for the sets it is in, a link for the FIFO, its slot in the
 * delay heap, and its failure count for the backoff:
 *
 *   dirty       the key must be (re)processed: it is in the FIFO, or it is
 *               processing and goes to the FIFO at done();
 *   processing  a worker holds it (between get and done);
 *   delay       in q->delayed while delayed: a min-heap on its time;
 *   failures    rate-limited adds since the last forget.
 *
 * Invariants (queue_check() asserts the O(1) ones on entry of each call):
 *
 *  1. In the FIFO  <=>  dirty && !processing. So a key is queued at most
 *     once, and a processing key is never queued: one worker per key.
 *  2. An entry exists iff dirty || processing || delayed || failures > 0;
 *     entry_release() frees it the moment none holds.
 *  3. ndirty + delayed.n <= max_len (when max_len > 0). Only add and add_after
 *     grow the sum, and they check it first; promote() moves a key from the
 *     heap to dirty, which never grows it.
 *  4. Delayed keys are promoted lazily: every call that looks at the FIFO
 *     first moves the keys whose time has come (promote()), and get() sleeps
 *     no later than the earliest delayed time. No timer thread.
 *  5. After shutdown no key enters the queue from outside (add* fail with
 *     KP_ECLOSED) and the heap is empty; done() may still queue a dirty key,
 *     so get() drains everything before it reports KP_ECLOSED.
 *
 * The states of a key (the function behind each transition):
 *
 *   (none) --add--> QUEUED --get--> PROCESSING --done--> (none)
 *   (none) --add_after--> DELAYED --promote--> QUEUED
 *   PROCESSING --add--> PROCESSING+DIRTY --done--> QUEUED
 *
 * Threads: any number of threads call in; one mutex (q->mu) guards it all;
 * get() waits on q->cv (CLOCK_MONOTONIC). Wake-ups: add/done signal one
 * waiter per newly queued key; a get() that leaves keys queued signals the
 * next waiter (so a batch promoted at once is shared out); an add_after that
 * makes a new earliest time broadcasts, so every sleeping get() always wakes
 * no later than the earliest delayed key; shutdown broadcasts.
 */
#include "client/queue.h"

#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/heap.h"

#define Q_BASE_MS_DEFAULT 5
#define Q_MAX_MS_DEFAULT  1000000
#define Q_QPS_DEFAULT     10.0
#define Q_BURST_DEFAULT   100
#define Q_NS_PER_MS       INT64_C(1000000)
#define Q_BUCKETS_MIN     64

typedef struct qent {
    struct qent *hnext; /* hash chain */
    struct qent *qnext; /* FIFO link while queued */
    kp_heap_node_t delay; /* in q->delayed while delayed; its key: when ready */
    int failures;
    bool dirty, processing;
    uint64_t hash;
    size_t len;
    char key[];
} qent_t;

struct kc_queue {
    pthread_mutex_t mu;
    pthread_cond_t cv;

    int64_t base_ns, max_ns;
    double qps, burst;
    size_t max_len;

    qent_t **buckets; /* the map of every entry */
    size_t nbuckets, nents;

    qent_t *head, *tail; /* the FIFO */
    size_t depth;

    kp_heap_t delayed; /* delayed keys, earliest first */

    size_t ndirty, nprocessing;

    double tokens; /* the overall bucket; may go negative (reservations) */
    int64_t tokens_ns;

    bool shutdown;
    uint64_t adds, retries;
};

/* ---- checks ---- */

#ifndef NDEBUG
static bool queue_check(const kc_queue_t *q)
{
    if (q->depth > q->ndirty || q->delayed.n > q->delayed.cap) return false;
    if ((q->depth == 0) != (q->head == NULL) || (q->head == NULL) != (q->tail == NULL))
        return false;
    if (q->max_len && q->ndirty + q->delayed.n > q->max_len) return false;
    if (q->shutdown && q->delayed.n) return false;
    if (q->delayed.n && q->delayed.v[0]->idx != 0) return false;
    for (size_t i = 1; i < q->delayed.n && i < 3; i++)
        if (q->delayed.v[i]->key < q->delayed.v[0]->key) return false;
    return q->nents >= q->ndirty && q->nents >= q->nprocessing;
}
#endif

/* ---- the map ---- */

static uint64_t key_hash(const char *key, size_t len)
{
    uint64_t h = UINT64_C(1469598103934665603); /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)key[i];
        h *= UINT64_C(1099511628211);
    }
    return h;
}

static qent_t *entry_find(const kc_queue_t *q, const char *key, size_t len, uint64_t h)
{
    for (qent_t *e = q->buckets[h & (q->nbuckets - 1)]; e; e = e->hnext)
        if (e->hash == h && e->len == len && memcmp(e->key, key, len) == 0) return e;
    return NULL;
}

/* Double the table when it is full; on ENOMEM keep the old one (longer
 * chains, still correct). */
static void map_grow(kc_queue_t *q)
{
    size_t n = q->nbuckets * 2;
    qent_t **b = calloc(n, sizeof *b);
    if (!b) return;
    for (size_t i = 0; i < q->nbuckets; i++) {
        qent_t *e = q->buckets[i];
        while (e) {
            qent_t *next = e->hnext;
            e->hnext = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
            e = next;
        }
    }
    free(q->buckets);
    q->buckets = b;
    q->nbuckets = n;
}

/* The entry of key, created (in no set) if absent. NULL: KP_ENOMEM. */
static qent_t *entry_get(kc_queue_t *q, const char *key, size_t len)
{
    uint64_t h = key_hash(key, len);
    qent_t *e = entry_find(q, key, len, h);
    if (e) return e;
    if (!(e = calloc(1, sizeof *e + len + 1))) return NULL;
    e->hash = h;
    e->len = len;
    kp_heap_node_init(&e->delay);
    memcpy(e->key, key, len);
    if (q->nents >= q->nbuckets) map_grow(q);
    qent_t **slot = &q->buckets[h & (q->nbuckets - 1)];
    e->hnext = *slot;
    *slot = e;
    q->nents++;
    return e;
}

/* Invariant 2: free e once nothing holds it. */
static void entry_release(kc_queue_t *q, qent_t *e)
{
    if (e->dirty || e->processing || kp_heap_has(&e->delay) || e->failures > 0) return;
    qent_t **p = &q->buckets[e->hash & (q->nbuckets - 1)];
    while (*p != e)
        p = &(*p)->hnext;
    *p = e->hnext;
    q->nents--;
    free(e);
}

/* ---- the FIFO ---- */

static void fifo_push(kc_queue_t *q, qent_t *e)
{
    e->qnext = NULL;
    if (q->tail)
        q->tail->qnext = e;
    else
        q->head = e;
    q->tail = e;
    q->depth++;
}

static qent_t *fifo_pop(kc_queue_t *q)
{
    qent_t *e = q->head;
    q->head = e->qnext;
    if (!q->head) q->tail = NULL;
    e->qnext = NULL;
    q->depth--;
    return e;
}

/* Mark e dirty and queue it unless a worker holds it. Returns 1 if it went
 * into the FIFO (a waiter should be woken). Caller checked max_len. */
static int mark_dirty(kc_queue_t *q, qent_t *e)
{
    if (e->dirty) return 0;
    e->dirty = true;
    q->ndirty++;
    q->adds++;
    if (e->processing) return 0;
    fifo_push(q, e);
    return 1;
}

/* ---- the delay heap (lib/heap.h) ---- */

static qent_t *of_delay(kp_heap_node_t *n)
{
    return (qent_t *)((char *)n - offsetof(qent_t, delay));
}

static qent_t *heap_pop(kc_queue_t *q)
{
    return of_delay(kp_heap_pop(&q->delayed));
}

/* Invariant 4: queue every delayed key whose time has come. Returns how many
 * entered the FIFO. */
static int promote(kc_queue_t *q, int64_t now)
{
    int queued = 0;
    while (q->delayed.n && kp_heap_top(&q->delayed)->key <= now) {
        qent_t *e = heap_pop(q);
        queued += mark_dirty(q, e);
        entry_release(q, e); /* a no-op: e is dirty now */
    }
    return queued;
}

/* ---- the rate limiter ---- */

/* Per-item exponential backoff: base * 2^failures, capped; counts a failure. */
static int64_t item_backoff(kc_queue_t *q, qent_t *e)
{
    int exp = e->failures;
    if (e->failures < 1000000) e->failures++;
    double d = ldexp((double)q->base_ns, exp);
    return d >= (double)q->max_ns ? q->max_ns : (int64_t)d;
}

/* The overall bucket: take a token now, possibly one not yet refilled, and
 * return how long until it would have been there (a reservation). */
static int64_t bucket_reserve(kc_queue_t *q, int64_t now)
{
    q->tokens += (double)(now - q->tokens_ns) / 1e9 * q->qps;
    if (q->tokens > q->burst) q->tokens = q->burst;
    q->tokens_ns = now;
    q->tokens -= 1.0;
    return q->tokens >= 0 ? 0 : (int64_t)(-q->tokens / q->qps * 1e9);
}

/* ---- the API ---- */

int kc_queue_new(const kc_queue_config_t *cfg, kc_queue_t **out)
{
    kc_queue_config_t c = {0};
    if (cfg) c = *cfg;
    *out = NULL;
    if (c.base_delay_ms < 0 || c.max_delay_ms < 0 || c.qps < 0 || c.burst < 0 || isnan(c.qps))
        return KP_EINVAL;
    kc_queue_t *q = calloc(1, sizeof *q);
    if (!q) return KP_ENOMEM;
    q->base_ns = (c.base_delay_ms ? c.base_delay_ms : Q_BASE_MS_DEFAULT) * Q_NS_PER_MS;
    q->max_ns = (c.max_delay_ms ? c.max_delay_ms : Q_MAX_MS_DEFAULT) * Q_NS_PER_MS;
    if (q->max_ns < q->base_ns) q->max_ns = q->base_ns;
    q->qps = c.qps > 0 ? c.qps : Q_QPS_DEFAULT;
    q->burst = c.burst ? c.burst : Q_BURST_DEFAULT;
    q->max_len = c.max_len;
    q->tokens = q->burst;
    q->tokens_ns = clock_mono_ns();
    q->nbuckets = Q_BUCKETS_MIN;
    if (!(q->buckets = calloc(q->nbuckets, sizeof *q->buckets))) goto fail_buckets;
    if (pthread_mutex_init(&q->mu, NULL)) goto fail_mu;
    if (clock_cond_init(&q->cv)) goto fail_cv;
    *out = q;
    return 0;

fail_cv:
    pthread_mutex_destroy(&q->mu);
fail_mu:
    free(q->buckets);
fail_buckets:
    free(q);
    return KP_ENOMEM;
}

static bool key_ok(const char *key)
{
    return key && key[0];
}

/* add_after's body with q->mu held; delay_ns > 0. */
static int add_delayed_locked(kc_queue_t *q, const char *key, int64_t delay_ns)
{
    size_t len = strlen(key);
    qent_t *e = entry_get(q, key, len);
    if (!e) return KP_ENOMEM;
    int64_t when = clock_mono_ns() + delay_ns;
    if (kp_heap_has(&e->delay)) { /* delayed already: keep the earlier time */
        if (when < e->delay.key) kp_heap_set_key(&q->delayed, &e->delay, when);
    } else {
        if (q->max_len && q->ndirty + q->delayed.n >= q->max_len) {
            entry_release(q, e);
            return KP_ETOOLARGE;
        }
        if (kp_heap_add(&q->delayed, &e->delay, when)) {
            entry_release(q, e);
            return KP_ENOMEM;
        }
    }
    /* A new earliest time: every waiter recomputes its sleep, since any one
     * of them may leave on its own deadline before the key is ready. */
    if (e->delay.idx == 0) pthread_cond_broadcast(&q->cv);
    return 0;
}

static int add_now_locked(kc_queue_t *q, const char *key)
{
    if (promote(q, clock_mono_ns())) pthread_cond_broadcast(&q->cv);
    size_t len = strlen(key);
    qent_t *e = entry_get(q, key, len);
    if (!e) return KP_ENOMEM;
    if (e->dirty) return 0;
    if (q->max_len && q->ndirty + q->delayed.n >= q->max_len) {
        entry_release(q, e);
        return KP_ETOOLARGE;
    }
    if (mark_dirty(q, e)) pthread_cond_signal(&q->cv);
    return 0;
}

int kc_queue_add(kc_queue_t *q, const char *key)
{
    if (!key_ok(key)) return KP_EINVAL;
    pthread_mutex_lock(&q->mu);
    assert(queue_check(q));
    int rc = q->shutdown ? KP_ECLOSED : add_now_locked(q, key);
    pthread_mutex_unlock(&q->mu);
    return rc;
}

int kc_queue_add_after(kc_queue_t *q, const char *key, int delay_ms)
{
    if (!key_ok(key)) return KP_EINVAL;
    pthread_mutex_lock(&q->mu);
    assert(queue_check(q));
    int rc;
    if (q->shutdown)
        rc = KP_ECLOSED;
    else if (delay_ms <= 0)
        rc = add_now_locked(q, key);
    else
        rc = add_delayed_locked(q, key, delay_ms * Q_NS_PER_MS);
    pthread_mutex_unlock(&q->mu);
    return rc;
}

int kc_queue_add_rate_limited(kc_queue_t *q, const char *key)
{
    if (!key_ok(key)) return KP_EINVAL;
    int rc = 0;
    pthread_mutex_lock(&q->mu);
    assert(queue_check(q));
    if (q->shutdown) {
        rc = KP_ECLOSED;
        goto out;
    }
    qent_t *e = entry_get(q, key, strlen(key));
    if (!e) {
        rc = KP_ENOMEM;
        goto out;
    }
    /* Refuse before counting anything: a full queue is not a retry. */
    if (!kp_heap_has(&e->delay) && q->max_len && q->ndirty + q->delayed.n >= q->max_len) {
        entry_release(q, e);
        rc = KP_ETOOLARGE;
        goto out;
    }
    int64_t item = item_backoff(q, e); /* e now has failures > 0: it stays */
    int64_t overall = bucket_reserve(q, clock_mono_ns());
    q->retries++;
    rc = add_delayed_locked(q, key, item > overall ? item : overall);
out:
    pthread_mutex_unlock(&q->mu);
    return rc;
}

void kc_queue_forget(kc_queue_t *q, const char *key)
{
    if (!key_ok(key)) return;
    pthread_mutex_lock(&q->mu);
    assert(queue_check(q));
    size_t len = strlen(key);
    qent_t *e = entry_find(q, key, len, key_hash(key, len));
    if (e) {
        e->failures = 0;
        entry_release(q, e);
    }
    pthread_mutex_unlock(&q->mu);
}

int kc_queue_num_requeues(kc_queue_t *q, const char *key)
{
    if (!key_ok(key)) return 0;
    pthread_mutex_lock(&q->mu);
    size_t len = strlen(key);
    qent_t *e = entry_find(q, key, len, key_hash(key, len));
    int n = e ? e->failures : 0;
    pthread_mutex_unlock(&q->mu);
    return n;
}

static struct timespec ns_to_ts(int64_t ns)
{
    struct timespec ts = {.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000};
    return ts;
}

int kc_queue_get(kc_queue_t *q, char *buf, size_t n, int timeout_ms)
{
    if (!buf || n == 0) return KP_EINVAL;
    int rc;
    int64_t now = clock_mono_ns();
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : now + timeout_ms * Q_NS_PER_MS;
    pthread_mutex_lock(&q->mu);
    assert(queue_check(q));
    for (;;) {
        promote(q, now);
        if (q->head) {
            if (q->head->len >= n) {
                pthread_cond_signal(&q->cv); /* another worker may take it */
                rc = KP_ETOOLARGE;
                break;
            }
            qent_t *e = fifo_pop(q);
            e->dirty = false;
            q->ndirty--;
            e->processing = true;
            q->nprocessing++;
            memcpy(buf, e->key, e->len + 1);
            if (q->head) pthread_cond_signal(&q->cv); /* share a promoted batch */
            rc = 0;
            break;
        }
        if (q->shutdown) {
            rc = KP_ECLOSED;
            break;
        }
        if (now >= deadline) {
            rc = KP_ETIMEDOUT;
            break;
        }
        int64_t wake = deadline;
        if (q->delayed.n && kp_heap_top(&q->delayed)->key < wake)
            wake = kp_heap_top(&q->delayed)->key;
        if (wake == INT64_MAX) {
            pthread_cond_wait(&q->cv, &q->mu);
        } else {
            struct timespec ts = ns_to_ts(wake);
            pthread_cond_timedwait(&q->cv, &q->mu, &ts);
        }
        now = clock_mono_ns();
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}

void kc_queue_done(kc_queue_t *q, const char *key)
{
    if (!key_ok(key)) return;
    pthread_mutex_lock(&q->mu);
    assert(queue_check(q));
    size_t len = strlen(key);
    qent_t *e = entry_find(q, key, len, key_hash(key, len));
    if (e && e->processing) {
        e->processing = false;
        q->nprocessing--;
        if (e->dirty) {
            fifo_push(q, e); /* invariant 1: dirty and no longer processing */
            pthread_cond_signal(&q->cv);
        }
        entry_release(q, e);
    }
    pthread_mutex_unlock(&q->mu);
}

void kc_queue_shutdown(kc_queue_t *q)
{
    pthread_mutex_lock(&q->mu);
    assert(queue_check(q));
    q->shutdown = true;
    while (q->delayed.n)
        entry_release(q, heap_pop(q)); /* invariant 5 */
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

void kc_queue_free(kc_queue_t *q)
{
    if (!q) return;
    for (size_t i = 0; i < q->nbuckets; i++) {
        qent_t *e = q->buckets[i];
        while (e) {
            qent_t *next = e->hnext;
            free(e);
            e = next;
        }
    }
    free(q->buckets);
    kp_heap_free(&q->delayed);
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
    free(q);
}

void kc_queue_stats(kc_queue_t *q, kc_queue_stats_t *out)
{
    pthread_mutex_lock(&q->mu);
    if (promote(q, clock_mono_ns())) pthread_cond_broadcast(&q->cv);
    out->depth = q->depth;
    out->delayed = q->delayed.n;
    out->processing = q->nprocessing;
    out->adds = q->adds;
    out->retries = q->retries;
    pthread_mutex_unlock(&q->mu);
}
