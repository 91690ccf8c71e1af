/*
 * queue.h -- the controllers' work queue (dedupe, one worker per key, backoff).
 * Ownership, threads and errors as client.h states them.
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
    size_t max_len;    /* queued keys at most; 0: unbounded */
} kc_queue_config_t;

int kc_queue_new(const kc_queue_config_t *cfg, kc_queue_t **out);
/* Queue key now (a no-op if it is queued; if a worker holds it, it is
 * queued again once that worker calls done). Errors: KP_ETOOLARGE (full),
 * KP_ECLOSED. */
int kc_queue_add(kc_queue_t *q, const char *key);
/* Queue key after delay_ms. */
int kc_queue_add_after(kc_queue_t *q, const char *key, int delay_ms);
/* Queue key after its backoff (the larger of its per-item exponential delay
 * and the overall rate limit); counts a retry. */
int kc_queue_add_rate_limited(kc_queue_t *q, const char *key);
/* Reset key's backoff (after a successful sync). */
void kc_queue_forget(kc_queue_t *q, const char *key);
/* Take the next key (copied into buf), waiting up to timeout_ms (negative:
 * forever). Errors: KP_ETIMEDOUT, KP_ECLOSED (shut down and drained). */
int kc_queue_get(kc_queue_t *q, char *buf, size_t n, int timeout_ms);
/* The worker finished with key. */
void kc_queue_done(kc_queue_t *q, const char *key);
/* Stop taking adds; get() returns KP_ECLOSED once empty. */
void kc_queue_shutdown(kc_queue_t *q);
void kc_queue_free(kc_queue_t *q);

typedef struct kc_queue_stats {
    size_t depth;             /* keys waiting now (not delayed ones) */
    uint64_t adds, retries;   /* since creation */
} kc_queue_stats_t;
void kc_queue_stats(kc_queue_t *q, kc_queue_stats_t *out);

#endif
