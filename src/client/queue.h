/*
 * queue.h -- the controllers' work queue (dedupe, one worker per key, backoff).
 * Ownership, threads and errors as client.h states them.
 *
 * A key is in at most one of three places at a time, plus its backoff count:
 *
 *   queued      waiting for a worker (FIFO; a key is queued once however
 *               often it is added);
 *   processing  handed to a worker by get(), until that worker calls done();
 *               an add meanwhile marks it dirty, and done() queues it again,
 *               so two workers never hold the same key;
 *   delayed     waiting for its time (add_after, add_rate_limited); a key
 *               delayed twice keeps the earlier time.
 *
 * The default rate limiter is client-go's DefaultControllerRateLimiter: the
 * larger of a per-key exponential backoff (5 ms doubling, capped at 1000 s)
 * and an overall token bucket (10 qps, burst 100) that every retry draws on.
 *
 * Every call may be made from any thread, except kc_queue_free (below).
 */
#ifndef KP_CLIENT_QUEUE_H
#define KP_CLIENT_QUEUE_H

#include <stddef.h>
#include <stdint.h>

/* ---- the work queue ---- */

typedef struct kc_queue kc_queue_t;

typedef struct kc_queue_config {
    int base_delay_ms; /* per-item backoff start; 0: 5 */
    int max_delay_ms;  /* per-item backoff cap; 0: 1000000 (1000 s) */
    double qps;        /* overall retry rate; 0: 10 */
    int burst;         /* 0: 100 */
    size_t max_len;    /* pending keys (queued or delayed) at most; 0: unbounded */
} kc_queue_config_t;

/* cfg may be NULL (all defaults). *out is the caller's: kc_queue_free().
 * Errors: KP_EINVAL (a negative field), KP_ENOMEM. */
int kc_queue_new(const kc_queue_config_t *cfg, kc_queue_t **out);

/* Queue key now (a no-op returning 0 if it is queued already; if a worker
 * holds it, it is queued again once that worker calls done). The key is
 * copied. Errors: KP_EINVAL (NULL or empty key), KP_ETOOLARGE (max_len keys
 * are pending: nothing changed), KP_ECLOSED (shut down), KP_ENOMEM. */
int kc_queue_add(kc_queue_t *q, const char *key);

/* Queue key after delay_ms (<= 0: now, as kc_queue_add). A delayed key
 * counts against max_len. Errors as kc_queue_add. */
int kc_queue_add_after(kc_queue_t *q, const char *key, int delay_ms);

/* Queue key after its backoff (the larger of its per-item exponential delay
 * and the overall rate limit); counts a retry. Errors as kc_queue_add; a
 * failed call counts nothing. */
int kc_queue_add_rate_limited(kc_queue_t *q, const char *key);

/* Reset key's backoff (after a successful sync). */
void kc_queue_forget(kc_queue_t *q, const char *key);

/* How many rate-limited adds key has had since its last forget (client-go's
 * NumRequeues: a controller drops a key after N). */
int kc_queue_num_requeues(kc_queue_t *q, const char *key);

/* Take the next key (copied into buf, NUL-terminated), waiting up to
 * timeout_ms (negative: forever). The caller must call kc_queue_done(key)
 * after. Errors: KP_EINVAL (buf NULL or n 0), KP_ETOOLARGE (the next key
 * does not fit in n bytes: it stays queued), KP_ETIMEDOUT, KP_ECLOSED (shut
 * down and drained). */
int kc_queue_get(kc_queue_t *q, char *buf, size_t n, int timeout_ms);

/* The worker finished with key (a key it got from get). */
void kc_queue_done(kc_queue_t *q, const char *key);

/* Stop taking adds (they fail with KP_ECLOSED) and drop the delayed keys;
 * get() hands out what is queued, and keys made dirty while processing are
 * still queued by done(); then get() returns KP_ECLOSED. Wakes every get(). */
void kc_queue_shutdown(kc_queue_t *q);

/* Free the queue. No other call may be running or follow: shut down and
 * join the workers first. NULL is a no-op. */
void kc_queue_free(kc_queue_t *q);

typedef struct kc_queue_stats {
    size_t depth;           /* keys waiting now (not delayed ones) */
    size_t delayed;         /* keys waiting for their time */
    size_t processing;      /* keys held by workers */
    uint64_t adds, retries; /* since creation: keys that became queued (or
                               dirty), and rate-limited adds */
} kc_queue_stats_t;
void kc_queue_stats(kc_queue_t *q, kc_queue_stats_t *out);

#endif
