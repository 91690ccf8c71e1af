/*
 * httpd_pull.c -- pulled streams (httpd_stream_pull): a producer that may
 * block (a watch waiting for its next event, a log follow waiting for more
 * output) runs on a thread of its own and hands each piece to the engine,
 * which never blocks; the thread waits while the client is behind.
 *
 * The thread waits on its own condition variable with h->mu, woken by the
 * engine when the stream's unsent bytes fall below half its budget
 * (httpd__drain_locked), when the client goes (httpd__req_detach,
 * httpd__tell_gone), and by httpd_pull_cancel().
 */
#include "httpd/httpd_int.h"

#include <stdlib.h>
#include <time.h>

#include "lib/err.h"
#include "lib/log.h"

struct httpd_pull {
    httpd_req_t *r;
    int stall_ms;
    int (*next)(void *arg, buf_t *out);
    void (*done)(void *arg);
    void *arg;
    pthread_cond_t cv; /* with h->mu */
    int drained;       /* the unsent bytes fell below half the budget */
    int cancelled;     /* httpd_pull_cancel() */
};

void httpd__pull_wake_locked(httpd_req_t *r, int drained)
{
    if (!r->pull) return;
    if (drained) r->pull->drained = 1;
    pthread_cond_broadcast(&r->pull->cv);
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
    if (r->pull) {
        r->pull->cancelled = 1;
        pthread_cond_broadcast(&r->pull->cv);
    }
    pthread_mutex_unlock(&r->h->mu);
}

/* Hand `len` bytes to the engine in pieces of a quarter of the budget,
 * waiting while the client is behind. Errors: KP_ECLOSED (gone or
 * cancelled), KP_ETIMEDOUT (no progress for stall_ms), KP_ENOMEM. */
static int put(struct httpd_pull *p, const char *data, size_t len)
{
    httpd_req_t *r = p->r;
    httpd_t *h = r->h;
    size_t piece = h->lim.stream_budget / 4 ? h->lim.stream_budget / 4 : 1;
    while (len) {
        size_t n = len < piece ? len : piece;
        int rc;
        while ((rc = httpd_stream_write(r, data, n)) == KP_ETOOLARGE) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += p->stall_ms / 1000;
            until.tv_nsec += (long)(p->stall_ms % 1000) * 1000000;
            if (until.tv_nsec >= 1000000000) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000;
            }
            int timed_out = 0;
            pthread_mutex_lock(&h->mu);
            while (!p->drained && !p->cancelled && !r->gone && !r->told && !timed_out)
                timed_out = pthread_cond_timedwait(&p->cv, &h->mu, &until) != 0;
            int drained = p->drained, stop = p->cancelled || r->gone || r->told;
            p->drained = 0;
            pthread_mutex_unlock(&h->mu);
            if (stop) return KP_ECLOSED;
            if (!drained) return KP_ETIMEDOUT;
        }
        if (rc) return rc;
        data += n;
        len -= n;
    }
    return 0;
}

static void *pull_run(void *arg)
{
    struct httpd_pull *p = arg;
    httpd_req_t *r = p->r;
    httpd_t *h = r->h;
    log_thread_name("httpd-stream", NULL);
    buf_t out;
    buf_init(&out, 64u << 20);
    int stuck = 0;
    while (!httpd_gone(r)) {
        buf_reset(&out);
        if (p->next(p->arg, &out) || !out.len) break; /* the end, or an error */
        if ((stuck = put(p, out.p, out.len) != 0)) break;
    }
    buf_free(&out);
    pthread_mutex_lock(&h->mu);
    stuck |= p->cancelled;
    int gone = r->gone || r->told;
    r->pull = NULL; /* no wake-ups from here on */
    pthread_mutex_unlock(&h->mu);
    p->done(p->arg); /* before the end: the request is still valid, no cancel can come later */
    /* A client that stopped reading gets no clean end (it would never read
     * it): its connection closes, or its HTTP/2 stream is reset. */
    if (stuck && !gone)
        httpd_stream_abort(r);
    else
        httpd_stream_end(r);
    pthread_cond_destroy(&p->cv);
    free(p);
    return NULL;
}

int httpd_stream_pull(httpd_req_t *r, int status, const char *const *headers, int stall_ms,
                      int (*next)(void *arg, buf_t *out), void (*done)(void *arg), void *arg)
{
    struct httpd_pull *p = calloc(1, sizeof *p);
    if (!p) return KP_ENOMEM;
    *p = (struct httpd_pull){.r = r, .stall_ms = stall_ms > 0 ? stall_ms : 60000, .next = next,
                             .done = done, .arg = arg};
    pthread_cond_init(&p->cv, NULL);
    int rc = httpd_stream_start(r, status, headers);
    if (rc) {
        pthread_cond_destroy(&p->cv);
        free(p);
        return rc;
    }
    pthread_mutex_lock(&r->h->mu);
    r->pull = p;
    pthread_mutex_unlock(&r->h->mu);
    pthread_attr_t at;
    pthread_t t;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&at, 256u << 10);
    if (pthread_create(&t, &at, pull_run, p)) {
        /* no thread: the stream ends at once (its client asks again) */
        pthread_mutex_lock(&r->h->mu);
        r->pull = NULL;
        pthread_mutex_unlock(&r->h->mu);
        done(arg);
        httpd_stream_end(r);
        pthread_cond_destroy(&p->cv);
        free(p);
    }
    pthread_attr_destroy(&at);
    return 0;
}
