/*
 * httpd_pull.c -- pulled streams (httpd_stream_pull): the engine asks the
 * producer for each piece on the worker pool and hands it on, never
 * blocking. A stream that has nothing to send (its producer said
 * KP_EAGAIN) or whose client is behind is parked: it holds no thread, only
 * its place in the timer heap while it waits for a time.
 *
 * A stream is in one state at a time, all under h->mu:
 *   P_QUEUED   in the pull queue (h->pq_head), for the next free worker
 *   P_RUNNING  a worker steps it (httpd__pull_step, without the lock)
 *   P_PARKED   its producer has nothing now: back to the queue on
 *              httpd_pull_kick(), when its wake time passes, when the client
 *              goes, or on httpd_pull_cancel()
 *   P_BEHIND   its client has not taken what it was sent: back to the queue
 *              when the unsent bytes fall below half the budget
 *              (httpd__drain_locked), the client goes, or stall_ms passes
 *              (then it ends abruptly)
 * A kick while P_RUNNING is remembered (kicked) so that a producer's
 * KP_EAGAIN cannot lose an event that came as it answered.
 *
 * The timer heap holds parked streams that have a wake time, earliest
 * first; idle workers wait until its top (httpd__pull_take_locked tells
 * them when) and move what is due to the queue.
 */
#include "httpd/httpd_int.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "lib/err.h"
#include "lib/heap.h"
#include "lib/log.h"

#define PULL_PIECES_PER_STEP 4 /* then the stream goes to the back of the queue */

enum { P_QUEUED, P_RUNNING, P_PARKED, P_BEHIND };

struct httpd_pull {
    httpd_req_t *r;
    int stall_ms;
    int (*next)(void *arg, buf_t *out, int *wait_ms);
    void (*done)(void *arg);
    void *arg;
    buf_t out;  /* the producer's last piece */
    size_t off; /* what of it the engine has taken */
    /* (h->mu) */
    int state;
    int kicked;               /* httpd_pull_kick() while P_RUNNING */
    int drained;              /* the unsent bytes fell below half the budget */
    int stalled;              /* P_BEHIND for stall_ms */
    int cancelled;            /* httpd_pull_cancel() */
    kp_heap_node_t timer;     /* in h->ptimers: when (CLOCK_MONOTONIC ns) */
    struct httpd_pull *qnext; /* the pull queue */
};

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- the timer heap (h->ptimers, h->mu) ---- */

static struct httpd_pull *of_node(kp_heap_node_t *n)
{
    return (struct httpd_pull *)((char *)n - offsetof(struct httpd_pull, timer));
}

/* Errors: KP_ENOMEM (then the stream waits without a timer). */
static int heap_add(httpd_t *h, struct httpd_pull *p, int64_t wake_ns)
{
    int rc = kp_heap_add(&h->ptimers, &p->timer, wake_ns);
    /* a new earliest time: the worker that waits for the top sleeps past it */
    if (!rc && kp_heap_top(&h->ptimers) == &p->timer) pthread_cond_signal(&h->tcv);
    return rc;
}

/* ---- states (h->mu) ---- */

static void enqueue_locked(httpd_t *h, struct httpd_pull *p)
{
    kp_heap_del(&h->ptimers, &p->timer);
    p->state = P_QUEUED;
    p->qnext = NULL;
    *h->pq_tail = p;
    h->pq_tail = &p->qnext;
    h->pqlen++;
    httpd__worker_wake_locked(h);
}

struct httpd_pull *httpd__pull_take_locked(httpd_t *h, int64_t *wake_ns)
{
    kp_heap_node_t *top = kp_heap_top(&h->ptimers);
    int64_t now = top ? mono_ns() : 0;
    for (; top && top->key <= now; top = kp_heap_top(&h->ptimers)) {
        struct httpd_pull *p = of_node(top);
        if (p->state == P_BEHIND) p->stalled = 1;
        enqueue_locked(h, p); /* out of the heap */
    }
    *wake_ns = top ? top->key : 0;
    struct httpd_pull *p = h->pq_head;
    if (!p) return NULL;
    h->pq_head = p->qnext;
    if (!h->pq_head) h->pq_tail = &h->pq_head;
    h->pqlen--;
    p->state = P_RUNNING;
    return p;
}

void httpd__pull_wake_locked(httpd_req_t *r, int drained)
{
    struct httpd_pull *p = r->pull;
    if (!p) return;
    if (drained) p->drained = 1;
    if (p->state == P_BEHIND || (!drained && p->state == P_PARKED)) enqueue_locked(r->h, p);
}

int httpd_gone(httpd_req_t *r)
{
    pthread_mutex_lock(&r->h->mu);
    int gone = r->gone || r->told;
    pthread_mutex_unlock(&r->h->mu);
    return gone;
}

void httpd_pull_cancel(httpd_req_t *r)
{
    pthread_mutex_lock(&r->h->mu);
    struct httpd_pull *p = r->pull;
    if (p) {
        p->cancelled = 1;
        if (p->state == P_PARKED || p->state == P_BEHIND) enqueue_locked(r->h, p);
    }
    pthread_mutex_unlock(&r->h->mu);
}

void httpd_pull_kick(httpd_req_t *r)
{
    pthread_mutex_lock(&r->h->mu);
    struct httpd_pull *p = r->pull;
    if (p && p->state == P_RUNNING) p->kicked = 1;
    if (p && p->state == P_PARKED) enqueue_locked(r->h, p);
    pthread_mutex_unlock(&r->h->mu);
}

/* Park p (P_PARKED for `wait_ms`, negative: until woken; or P_BEHIND for
 * its stall time). Returns 1 instead when what it would wait for came
 * already (a kick, a drain): step on. */
static int park(struct httpd_pull *p, int state, int wait_ms)
{
    httpd_t *h = p->r->h;
    pthread_mutex_lock(&h->mu);
    int again = state == P_PARKED ? p->kicked : p->drained;
    p->kicked = p->drained = 0;
    if (!again) {
        p->state = state;
        if (wait_ms >= 0) heap_add(h, p, mono_ns() + (int64_t)wait_ms * 1000000);
    }
    pthread_mutex_unlock(&h->mu);
    return again;
}

/* ---- a step (a worker, no lock held) ---- */

/* The stream ends: its producer's state goes first (done), then the reply,
 * abruptly when `stuck` (the client stopped reading, or the stream was
 * cancelled) and the client is still there, else cleanly. */
static void finish(struct httpd_pull *p, int stuck)
{
    httpd_req_t *r = p->r;
    httpd_t *h = r->h;
    pthread_mutex_lock(&h->mu);
    stuck |= p->cancelled;
    int gone = r->gone || r->told;
    kp_heap_del(&h->ptimers, &p->timer);
    r->pull = NULL; /* no wake-ups from here on */
    if (!--h->npulls && h->stopping) {
        pthread_cond_broadcast(&h->cv);
        pthread_cond_broadcast(&h->tcv);
    }
    pthread_mutex_unlock(&h->mu);
    p->done(p->arg); /* the request is still valid; no cancel or kick can come later */
    if (stuck && !gone)
        httpd_stream_abort(r);
    else
        httpd_stream_end(r);
    buf_free(&p->out);
    free(p);
}

/* Hand p's piece to the engine in parts of a quarter of the budget.
 * Errors: KP_ETOOLARGE (the client is behind: the rest waits), as
 * httpd_stream_write. */
static int put(struct httpd_pull *p)
{
    httpd_t *h = p->r->h;
    size_t part = h->lim.stream_budget / 4 ? h->lim.stream_budget / 4 : 1;
    while (p->off < p->out.len) {
        size_t n = p->out.len - p->off;
        if (n > part) n = part;
        int rc = httpd_stream_write(p->r, p->out.p + p->off, n);
        if (rc) return rc;
        p->off += n;
    }
    return 0;
}

void httpd__pull_step(struct httpd_pull *p)
{
    httpd_req_t *r = p->r;
    httpd_t *h = r->h;
    for (int i = 0; i < PULL_PIECES_PER_STEP; i++) {
        pthread_mutex_lock(&h->mu);
        int stop = p->cancelled || r->gone || r->told, stalled = p->stalled;
        p->stalled = 0;
        if (p->off == p->out.len) p->kicked = 0; /* the producer runs next: it sees what came */
        pthread_mutex_unlock(&h->mu);
        if (stop) {
            finish(p, 0);
            return;
        }
        if (p->off < p->out.len) {
            int rc = put(p);
            if (rc == KP_ETOOLARGE && !stalled) {
                if (park(p, P_BEHIND, p->stall_ms)) continue; /* drained meanwhile */
                return;
            }
            if (rc) {
                finish(p, 1);
                return;
            }
        }
        buf_reset(&p->out);
        p->off = 0;
        int wait_ms = -1;
        int rc = p->next(p->arg, &p->out, &wait_ms);
        if (rc == KP_EAGAIN && p->out.len) rc = 0; /* its bytes first; it is asked again after */
        if (rc == KP_EAGAIN) {
            if (park(p, P_PARKED, wait_ms)) continue; /* kicked meanwhile */
            return;
        }
        if (rc || !p->out.len) {
            finish(p, 0);
            return;
        }
    }
    pthread_mutex_lock(&h->mu);
    enqueue_locked(h, p); /* more to do: after the others */
    pthread_mutex_unlock(&h->mu);
}

void httpd__pull_free_globals(httpd_t *h)
{
    kp_heap_free(&h->ptimers);
}

int httpd_stream_pull(httpd_req_t *r, int status, const char *const *headers, int stall_ms,
                      int (*next)(void *arg, buf_t *out, int *wait_ms), void (*done)(void *arg),
                      void *arg)
{
    struct httpd_pull *p = calloc(1, sizeof *p);
    if (!p) return KP_ENOMEM;
    *p = (struct httpd_pull){.r = r,
                             .stall_ms = stall_ms > 0 ? stall_ms : 60000,
                             .next = next,
                             .done = done,
                             .arg = arg};
    kp_heap_node_init(&p->timer);
    buf_init(&p->out, 64u << 20);
    int rc = httpd_stream_start(r, status, headers);
    if (rc) {
        free(p);
        return rc;
    }
    httpd_t *h = r->h;
    pthread_mutex_lock(&h->mu);
    r->pull = p;
    h->npulls++;
    enqueue_locked(h, p);
    pthread_mutex_unlock(&h->mu);
    return 0;
}
