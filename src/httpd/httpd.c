/*
 * httpd.c -- the engine of httpd.h: requests' life across threads, the
 * worker pool, hand-back, connections and the API. A request itself (made,
 * its headers and target, its accessors) is httpd_req.c's; the protocols
 * live in httpd_h1.c (HTTP/1.1) and httpd_h2.c (HTTP/2), TLS in
 * httpd_tls.c, pulled streams in httpd_pull.c (their steps run on the same
 * workers as the handlers); httpd_int.h says what they share.
 *
 * A CONNECTION'S BYTES
 *   read (libuv) -> TLS (if the listener has a certificate: decrypt,
 *   choosing the protocol by ALPN) -> the protocol (a plain connection
 *   sniffs the HTTP/2 preface: HTTP/2 with prior knowledge, else HTTP/1.1).
 *   The protocol's output -> TLS (encrypt) -> uv_write.
 *
 * HAND-BACK
 *   A reply or stream write puts its bytes in the request's outbox under
 *   h->mu (HTTP/1.1: framed by the worker; HTTP/2: the head apart, the data
 *   raw), puts the request on h->ready (once) and signals the loop
 *   (uv_async_send). The loop moves each ready request's bytes on: HTTP/1.1
 *   to its socket (over TLS, no more than HTTPD_WRITE_HIGH encrypted ahead of
 *   the socket: the rest waits in the outbox, and is encrypted as the client
 *   reads), HTTP/2 to nghttp2 (whose data provider takes them as the
 *   stream's flow control allows).
 *
 * TIMERS (one per connection)
 *   HTTP/1.1: header_timeout from accept, and from a request's first byte,
 *   to its complete headers; idle_timeout between requests and while a body
 *   makes no progress; write_timeout while written bytes make no progress.
 *   None while a handler works on a request and nothing is waiting to be
 *   sent. HTTP/2: write_timeout likewise; with no stream open,
 *   header_timeout from accept until the first request, then idle_timeout
 *   from the last stream's close (frames that open no stream, a PING, do not
 *   extend it, as Go's http2 server).
 */
#include "httpd/httpd_int.h"

#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/err.h"
#include "lib/log.h"

/* ---- small helpers ---- */

httpd_limits_t httpd_limits_default(void)
{
    httpd_limits_t l = {
        .max_connections = 4096,
        .header_bytes = 64u << 10, /* Go's net/http default is 1 MiB; ours is issue 14's */
        .max_streams = 250,        /* Go's http2 server default, as kube-apiserver's */
        .stream_budget = 8u << 20,
        .header_timeout_ms = 10000,
        .idle_timeout_ms = 90000,
        .write_timeout_ms = 60000,
        .body_timeout_ms = 60000,
        .grace_ms = 5000,
    };
    return l;
}

static void limits_fill(httpd_limits_t *l)
{
    httpd_limits_t d = httpd_limits_default();
    if (!l->max_connections) l->max_connections = d.max_connections;
    if (!l->header_bytes) l->header_bytes = d.header_bytes;
    if (!l->max_streams) l->max_streams = d.max_streams;
    if (!l->stream_budget) l->stream_budget = d.stream_budget;
    if (!l->header_timeout_ms) l->header_timeout_ms = d.header_timeout_ms;
    if (!l->idle_timeout_ms) l->idle_timeout_ms = d.idle_timeout_ms;
    if (!l->write_timeout_ms) l->write_timeout_ms = d.write_timeout_ms;
    if (!l->body_timeout_ms) l->body_timeout_ms = d.body_timeout_ms;
    if (!l->grace_ms) l->grace_ms = d.grace_ms;
}

const char *httpd__reason(int status)
{
    switch (status) {
    case 101:
        return "Switching Protocols";
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 202:
        return "Accepted";
    case 204:
        return "No Content";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 410:
        return "Gone";
    case 413:
        return "Request Entity Too Large";
    case 414:
        return "Request-URI Too Long";
    case 415:
        return "Unsupported Media Type";
    case 422:
        return "Unprocessable Entity";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    default:
        return status < 300 ? "OK" : status < 500 ? "Bad Request" : "Internal Server Error";
    }
}

/* ---- requests (creation, headers, target: httpd_req.c) ---- */

static void ready_locked(httpd_t *h, httpd_req_t *r)
{
    if (r->in_ready) return;
    r->in_ready = 1;
    r->ready_next = h->ready;
    h->ready = r;
}

static void callback_locked(httpd_t *h, httpd_req_t *r, void (*fn)(void *, httpd_req_t *))
{
    if (!fn) return;
    r->in_cb++;
    r->cb_thread = pthread_self();
    pthread_mutex_unlock(&h->mu);
    fn(h->cfg.arg, r);
    pthread_mutex_lock(&h->mu);
    if (!--r->in_cb) pthread_cond_broadcast(&h->cb_cv);
}

void httpd__tell_gone(httpd_req_t *r)
{
    httpd_t *h = r->h;
    pthread_mutex_lock(&h->mu);
    if (r->picked && !r->told && r->state != R_DONE) {
        r->told = 1;
        httpd__pull_wake_locked(r, 0);
        callback_locked(h, r, h->cfg.on_gone);
    }
    pthread_mutex_unlock(&h->mu);
}

void httpd__drain_locked(httpd_t *h, httpd_req_t *r)
{
    if (!r->want_drain || r->unsent >= h->lim.stream_budget / 2 || r->gone || r->state == R_DONE)
        return;
    r->want_drain = 0;
    httpd__pull_wake_locked(r, 1);
    callback_locked(h, r, h->cfg.on_drain);
}

int httpd__body_late(conn_t *c, uint64_t began)
{
    return uv_now(&c->h->loop) - began > (uint64_t)c->h->lim.body_timeout_ms;
}

int httpd__idle_ms(conn_t *c)
{
    return c->proven ? c->h->lim.idle_timeout_ms : c->h->lim.header_timeout_ms;
}

void httpd__req_detach(httpd_req_t *r)
{
    httpd_t *h = r->h;
    int free_now = 0;
    pthread_mutex_lock(&h->mu);
    r->conn = NULL;
    if (!r->in_ready && (!r->queued || r->state == R_DONE)) {
        free_now = 1;
    } else {
        /* drain_ready frees it once its reply is done (in_ready), or a
         * worker does if none has picked it yet */
        r->gone = 1;
        if (!r->in_ready) {
            buf_reset(&r->pre);
            buf_reset(&r->out);
            r->out_off = 0;
        }
        httpd__pull_wake_locked(r, 0);
        if (r->picked && !r->told && r->state != R_DONE) {
            r->told = 1;
            callback_locked(h, r, h->cfg.on_gone);
        }
    }
    pthread_mutex_unlock(&h->mu);
    if (free_now) httpd__req_free(r);
}

/* ---- replies (any thread) ---- */

/* Put a reply's bytes in r's outbox and wake the loop. `head` (taken, may
 * be NULL) is the reply's head; `data` its bytes (HTTP/1.1 streams: framed
 * as a chunk here). `state` is what the reply becomes. Errors: KP_EINVAL
 * (wrong state), KP_ECLOSED (gone: the state still changes), KP_ETOOLARGE
 * (over the stream budget: nothing changes), KP_ENOMEM. */
static int hand_back(httpd_req_t *r, int from, int to, buf_t *head, const char *data, size_t len,
                     int budgeted, char **take)
{
    httpd_t *h = r->h;
    int rc = 0, free_now = 0;
    int chunk = budgeted && !r->h2 && !r->tunnel; /* an HTTP/1.1 stream write */
    char size[32] = "";
    size_t slen = chunk ? (size_t)snprintf(size, sizeof size, "%zx\r\n", len) : 0;
    size_t add = slen + len + (chunk ? 2 : 0);
    pthread_mutex_lock(&h->mu);
    while (to == R_DONE && r->in_cb && !pthread_equal(r->cb_thread, pthread_self()))
        pthread_cond_wait(&h->cb_cv, &h->mu); /* see CALLBACKS in httpd.h */
    if (r->state != from) {
        pthread_mutex_unlock(&h->mu);
        return KP_EINVAL;
    }
    if (r->gone) {
        rc = KP_ECLOSED;
    } else if (budgeted && r->unsent + add > h->lim.stream_budget) {
        r->want_drain = 1;
        pthread_mutex_unlock(&h->mu);
        return KP_ETOOLARGE;
    } else if (take && *take == data && len >= HTTPD_ADOPT_MIN && !r->out.len && !r->pre.len &&
               head) {
        /* A big whole body is sent from where it is, not copied behind
         * its head: HTTP/2's head goes apart anyway, HTTP/1.1's goes first
         * from r->pre. */
        buf_free(&r->out);
        r->out = (buf_t){.p = *take, .len = len, .cap = len, .max = SIZE_MAX};
        r->out_off = 0;
        *take = NULL;
        size_t hlen = r->h2 ? 0 : head->len;
        if (r->h2) {
            buf_free(&r->head);
            r->head = *head; /* taken */
        } else {
            buf_free(&r->pre);
            r->pre = *head;
        }
        buf_init(head, SIZE_MAX);
        r->unsent += hlen + len;
    } else {
        size_t mark = r->out.len, hlen = 0;
        if (head && r->h2) {
            buf_free(&r->head);
            r->head = *head; /* taken */
            buf_init(head, SIZE_MAX);
        } else if (head) {
            hlen = head->len;
            rc = buf_append(&r->out, head->p, head->len);
        }
        if (!rc && slen) rc = buf_append(&r->out, size, slen);
        if (!rc && len) rc = buf_append(&r->out, data, len);
        if (!rc && chunk) rc = buf_append(&r->out, "\r\n", 2);
        if (rc) {
            r->out.len = mark;
            pthread_mutex_unlock(&h->mu);
            return KP_ENOMEM;
        }
        r->unsent += hlen + add;
    }
    r->state = to;
    int wake = 0;
    if (h->loop_done) {
        free_now = to == R_DONE; /* no loop to send it: the client is gone */
    } else if (!r->gone || to == R_DONE) {
        ready_locked(h, r);
        wake = 1;
    }
    pthread_mutex_unlock(&h->mu);
    if (wake) uv_async_send(&h->wake);
    if (free_now) httpd__req_free(r);
    return rc;
}

static int head_for(httpd_req_t *r, buf_t *b, int status, const char *const *headers,
                    long long length)
{
    buf_init(b, SIZE_MAX);
    const char *const *more = r->xhead[0] ? (const char *const *)r->xhead : NULL;
    r->status = status; /* (one reply: on_drop's, for a refusal by the engine) */
    return r->h2 ? httpd__h2_head(b, status, headers, more, length)
                 : httpd__h1_head(b, status, headers, more, length, r->keep_alive);
}

int httpd__head_names(const char *const *headers, const char *name)
{
    for (size_t i = 0; headers && headers[i]; i += 2)
        if (!strcasecmp(headers[i], name)) return 1;
    return 0;
}

int httpd_reply(httpd_req_t *r, int status, const char *const *headers, char *body, size_t len)
{
    buf_t head;
    int no_body = !strcmp(r->method, "HEAD") || status == 204 || status == 304;
    int rc = head_for(r, &head, status, headers, (long long)len);
    if (!rc && r->h2) {
        pthread_mutex_lock(&r->h->mu);
        r->no_body = no_body;
        pthread_mutex_unlock(&r->h->mu);
    }
    if (!rc) rc = hand_back(r, R_NONE, R_DONE, &head, body, no_body ? 0 : len, 0, &body);
    if (rc == KP_ECLOSED) rc = 0; /* nobody to tell: done all the same */
    buf_free(&head);
    free(body);
    return rc;
}

int httpd__refuse_text(httpd_req_t *r, int status)
{
    static const char *const plain[] = {"Content-Type", "text/plain; charset=utf-8", NULL};
    char *body = NULL;
    int n = asprintf(&body, "%d %s\n", status, httpd__reason(status));
    if (n < 0) return KP_ENOMEM;
    return httpd_reply(r, status, plain, body, (size_t)n);
}

int httpd_stream_start(httpd_req_t *r, int status, const char *const *headers)
{
    buf_t head;
    int rc = head_for(r, &head, status, headers, -1);
    if (!rc) rc = hand_back(r, R_NONE, R_STREAM, &head, NULL, 0, 0, NULL);
    buf_free(&head);
    return rc == KP_ECLOSED ? 0 : rc;
}

int httpd_stream_write(httpd_req_t *r, const void *data, size_t len)
{
    if (!len) return 0;
    return hand_back(r, R_STREAM, R_STREAM, NULL, data, len, 1, NULL);
}

void httpd_stream_end(httpd_req_t *r)
{
    if (r->h2 || r->tunnel)
        hand_back(r, R_STREAM, R_DONE, NULL, NULL, 0, 0, NULL);
    else
        hand_back(r, R_STREAM, R_DONE, NULL, "0\r\n\r\n", 5, 0, NULL);
}

void httpd_stream_abort(httpd_req_t *r)
{
    httpd_t *h = r->h;
    int free_now = 0, wake = 0;
    pthread_mutex_lock(&h->mu);
    while (r->in_cb && !pthread_equal(r->cb_thread, pthread_self()))
        pthread_cond_wait(&h->cb_cv, &h->mu); /* see CALLBACKS in httpd.h */
    if (r->state != R_STREAM) {
        pthread_mutex_unlock(&h->mu);
        return;
    }
    r->state = R_DONE;
    r->aborted = 1;
    buf_reset(&r->pre);
    buf_reset(&r->out);
    r->out_off = 0;
    r->unsent = 0;
    if (h->loop_done) {
        free_now = 1;
    } else {
        ready_locked(h, r);
        wake = 1;
    }
    pthread_mutex_unlock(&h->mu);
    if (wake) uv_async_send(&h->wake);
    if (free_now) httpd__req_free(r);
}

/* ---- upgrades (UPGRADES in httpd.h) ---- */

const char *httpd_upgrade_asked(const httpd_req_t *r)
{
    return r->upgrade ? httpd_header(r, "Upgrade") : NULL;
}

int httpd_upgrade(httpd_req_t *r, const char *const *headers)
{
    if (!r->upgrade || r->h2 || !r->h->cfg.on_data) return KP_EINVAL;
    buf_t head;
    int rc = head_for(r, &head, 101, headers, -1);
    if (!rc) {
        pthread_mutex_lock(&r->h->mu);
        int fresh = r->state == R_NONE;
        if (fresh) r->tunnel = 1; /* before the head: the loop switches on seeing it */
        pthread_mutex_unlock(&r->h->mu);
        rc = fresh ? hand_back(r, R_NONE, R_STREAM, &head, NULL, 0, 0, NULL) : KP_EINVAL;
    }
    buf_free(&head);
    return rc == KP_ECLOSED ? 0 : rc;
}

void httpd_upgrade_resume(httpd_req_t *r)
{
    httpd_t *h = r->h;
    int wake = 0;
    pthread_mutex_lock(&h->mu);
    if (r->tunnel && r->state == R_STREAM && !r->gone && !h->loop_done) {
        r->resume = 1;
        if (!r->in_ready) ready_locked(h, r);
        wake = 1;
    }
    pthread_mutex_unlock(&h->mu);
    if (wake) uv_async_send(&h->wake);
}

/* ---- the worker queue ---- */

static int worker_add_locked(httpd_t *h);

void httpd__dispatch(httpd_req_t *r)
{
    httpd_t *h = r->h;
    if (!r->body.p && buf_append(&r->body, "", 0)) {
        if (httpd__refuse_text(r, 500)) httpd__conn_close(r->conn);
        return;
    }
    pthread_mutex_lock(&h->mu);
    int full = h->qlen >= HTTPD_QUEUE_MAX;
    if (!full) {
        r->queued = 1;
        r->qnext = NULL;
        *h->qtail = r;
        h->qtail = &r->qnext;
        h->qlen++;
        httpd__worker_wake_locked(h);
    }
    pthread_mutex_unlock(&h->mu);
    if (!full) return;
    static const char *const retry[] = {"Retry-After", "1", "Content-Type",
                                        "text/plain; charset=utf-8", NULL};
    static const char busy[] = "429 Too Many Requests\n";
    char *body = strdup(busy);
    atomic_fetch_add(&h->s_refused, 1);
    if (!body || httpd_reply(r, 429, retry, body, sizeof busy - 1)) httpd__conn_close(r->conn);
}

void httpd__worker_wake_locked(httpd_t *h)
{
    /* Requests wait and every worker is busy: one more each (a handler may
     * block), up to the cap. Pulled streams' steps do not block: a burst of
     * them (one write kicking a thousand watches) gets HTTPD_PULL_SPARE
     * workers beyond the kept ones at most. */
    int pull_room = h->live_workers < h->cfg.workers + HTTPD_PULL_SPARE;
    int more = h->idle_workers < (int)h->qlen || (!h->idle_workers && h->pqlen && pull_room);
    if (more && h->live_workers < h->cfg.max_workers) worker_add_locked(h);
    pthread_cond_signal(&h->cv);
    /* the only idle worker may be the one waiting for the timers */
    if (h->idle_workers == h->timer_waiter) pthread_cond_signal(&h->tcv);
}

/* Wait on cv (h->cv or h->tcv, with h->mu held) until `until_ns`
 * (CLOCK_MONOTONIC; 0: no limit). Returns whether the time passed. */
static int wait_until(httpd_t *h, pthread_cond_t *cv, int64_t until_ns)
{
    if (!until_ns) {
        pthread_cond_wait(cv, &h->mu);
        return 0;
    }
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t left = until_ns - ((int64_t)now.tv_sec * 1000000000 + now.tv_nsec);
    if (left <= 0) return 1;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts); /* h->cv's clock */
    ts.tv_sec += (time_t)(left / 1000000000);
    ts.tv_nsec += (long)(left % 1000000000);
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    return pthread_cond_timedwait(cv, &h->mu, &ts) != 0;
}

/* A worker: pulled streams' steps first (short, and a watch's latency),
 * then requests. One idle worker at a time waits for the parked streams'
 * next wake time too (on h->tcv, so that the others sleep through it).
 * Workers beyond cfg.workers end after 10 s without work; none ends while
 * a pulled stream is still to end (httpd_stop waits for them). */
static void *worker_run(void *arg)
{
    httpd_t *h = arg;
    log_thread_name("httpd-worker", NULL);
    struct sched_param batch = {0}; /* see THREADS in httpd.h */
    (void)pthread_setschedparam(pthread_self(), SCHED_BATCH, &batch);
    pthread_mutex_lock(&h->mu);
    for (;;) {
        int idle_out = 0;
        int64_t idle_until = 0, wake = 0;
        struct httpd_pull *p = NULL;
        while (!(p = httpd__pull_take_locked(h, &wake)) && !h->qhead && !idle_out &&
               !(h->stopping && !h->npulls)) {
            int spare = h->live_workers > h->cfg.workers;
            if (spare && !idle_until) {
                struct timespec now;
                clock_gettime(CLOCK_MONOTONIC, &now);
                idle_until = ((int64_t)now.tv_sec + 10) * 1000000000 + now.tv_nsec;
            }
            int64_t until = spare ? idle_until : 0;
            int timer = wake && !h->timer_waiter;
            if (timer && (!until || wake < until)) until = wake;
            h->idle_workers++;
            h->timer_waiter += timer;
            int timed_out = wait_until(h, timer ? &h->tcv : &h->cv, until);
            h->timer_waiter -= timer;
            h->idle_workers--;
            idle_out = timed_out && until == idle_until && spare && !h->qhead && !h->pq_head &&
                       h->live_workers > h->cfg.workers;
        }
        /* to work, or to end: another idle worker takes over the timers */
        if ((p || h->qhead || idle_out) && h->ptimers.n && !h->timer_waiter && h->idle_workers)
            pthread_cond_signal(&h->cv);
        if (p) {
            pthread_mutex_unlock(&h->mu);
            httpd__pull_step(p);
            pthread_mutex_lock(&h->mu);
            continue;
        }
        httpd_req_t *r = h->qhead;
        if (!r) break; /* stopping or idle, and nothing queued */
        h->qhead = r->qnext;
        if (!h->qhead) h->qtail = &h->qhead;
        h->qlen--;
        if (r->gone) { /* its client left while it waited: nobody else has it */
            pthread_mutex_unlock(&h->mu);
            httpd__req_free(r);
            pthread_mutex_lock(&h->mu);
            continue;
        }
        r->picked = 1;
        pthread_mutex_unlock(&h->mu);
        h->cfg.on_request(h->cfg.arg, r);
        pthread_mutex_lock(&h->mu);
    }
    h->live_workers--;
    pthread_cond_broadcast(&h->done_cv);
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* Start a worker (h->mu held). Errors: KP_ENOMEM. */
static int worker_add_locked(httpd_t *h)
{
    pthread_attr_t at;
    pthread_t t;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&at, 512u << 10);
    int rc = pthread_create(&t, &at, worker_run, h);
    pthread_attr_destroy(&at);
    if (rc) return KP_ENOMEM;
    h->live_workers++;
    return 0;
}

/* ---- connections (loop thread) ---- */

static void timer_fired(uv_timer_t *t)
{
    conn_t *c = t->data;
    if (c->proto == P_H2 && !c->draining && httpd__h2_timer(c))
        return; /* a stream's deadline, not the connection's */
    if (!c->draining) atomic_fetch_add(&c->h->s_timeouts, 1);
    httpd__conn_close(c);
}

void httpd__timer_set(conn_t *c, int ms)
{
    if (c->closing) return;
    if (ms > 0)
        uv_timer_start(&c->timer, timer_fired, (uint64_t)ms, 0);
    else
        uv_timer_stop(&c->timer);
}

size_t httpd__room(conn_t *c)
{
    if (c->tunnel) return c->rest.len ? 0 : HTTPD_PLAIN_CHUNK; /* held bytes first */
    if (c->proto != P_H1 || !c->in_handler || c->draining || c->refused) return HTTPD_PLAIN_CHUNK;
    /* HTTP/1.1 while a handler has the request: what comes is kept for
     * later, up to the room in c->rest. */
    return c->rest.max > c->rest.len ? c->rest.max - c->rest.len : 0;
}

static void on_alloc(uv_handle_t *hd, size_t want, uv_buf_t *b)
{
    (void)want;
    conn_t *c = hd->data;
    httpd_t *h = c->h;
    /* One loop thread: on_read consumes (or copies) the bytes before the
     * next read. None room left: UV_ENOBUFS, and reading stops until the
     * protocol takes more. */
    size_t room;
    if (c->secure) {
        if (c->tin_off) { /* move what is left to the front */
            memmove(c->tin.p, c->tin.p + c->tin_off, c->tin.len - c->tin_off);
            c->tin.len -= c->tin_off;
            c->tin_off = 0;
        }
        room = c->tin.max - c->tin.len;
    } else {
        room = httpd__room(c);
        if (room == HTTPD_PLAIN_CHUNK) room = sizeof h->inbuf;
    }
    if (room > sizeof h->inbuf) room = sizeof h->inbuf;
    *b = room ? uv_buf_init(h->inbuf, (unsigned)room) : uv_buf_init(NULL, 0);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b);

void httpd__set_reading(conn_t *c, int on)
{
    c->stalled = 0; /* on_read sets it again after a stop for want of room */
    if (c->closing || on == c->reading) return;
    c->reading = on;
    if (on) {
        uv_read_start(&c->s.stream, on_alloc, on_read);
    } else {
        uv_read_stop(&c->s.stream);
    }
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    conn_t *c = s->data;
    if (n == UV_ENOBUFS) { /* no room: the protocol resumes reading when it takes more */
        httpd__set_reading(c, 0);
        c->stalled = 1;
        return;
    }
    if (n == 0) return;
    if (n < 0) {
        httpd__eof(c, n == UV_EOF);
        return;
    }
    c->rx_at = uv_now(&c->h->loop);
    if (!c->secure) {
        httpd__deliver(c, b->base, (size_t)n);
        return;
    }
    if (buf_append(&c->tin, b->base, (size_t)n)) { /* on_alloc gave no more than the room */
        httpd__conn_close(c);
        return;
    }
    httpd__tls_input(c);
}

static const char h2_preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

void httpd__conn_linger(conn_t *c)
{
    if (c->closing || c->draining) return;
    if (c->secure) {
        httpd__tls_bye(c);
        httpd__tls_flush(c);
    }
    if (c->closing || uv_shutdown(&c->shut, &c->s.stream, NULL)) {
        httpd__conn_close(c);
        return;
    }
    c->draining = 1;
    buf_reset(&c->rest);
    httpd__timer_set(c, HTTPD_DRAIN_MS);
    httpd__set_reading(c, 1);
}

void httpd__deliver(conn_t *c, const char *data, size_t n)
{
    if (c->draining) { /* httpd__conn_linger: read and dropped */
        c->drained += n;
        if (c->drained > HTTPD_DRAIN_BYTES) httpd__conn_close(c);
        return;
    }
    if (c->proto == P_SNIFF) {
        /* A plain connection: HTTP/2 with prior knowledge opens with the
         * preface; anything else is HTTP/1.1. Bytes that may still become
         * the preface wait. */
        size_t have = c->sniff.len, plen = sizeof h2_preface - 1;
        size_t cmp = have + n < plen ? n : plen - have;
        if (!memcmp(h2_preface + have, data, cmp) && have + n < plen) {
            if (buf_append(&c->sniff, data, n)) httpd__conn_close(c);
            return;
        }
        int h2 = !memcmp(h2_preface + have, data, cmp);
        size_t len = 0;
        char *seen = buf_detach(&c->sniff, &len);
        if (h2) {
            if (httpd__h2_start(c)) {
                free(seen);
                httpd__conn_close(c);
                return;
            }
        } else {
            httpd__h1_start(c);
        }
        if (len) httpd__deliver(c, seen, len);
        free(seen);
        if (c->closing) return;
    }
    if (c->proto == P_H2)
        httpd__h2_input(c, data, n);
    else
        httpd__h1_input(c, data, n);
}

void httpd__eof(conn_t *c, int clean)
{
    if (c->proto == P_H1)
        httpd__h1_eof(c, clean);
    else
        httpd__conn_close(c);
}

static void on_closed(uv_handle_t *hd)
{
    conn_t *c = hd->data;
    if (c->h2) nghttp2_session_del(c->h2); /* calls no callbacks */
    httpd__tls_conn_free(c);
    buf_free(&c->tin);
    buf_free(&c->tout);
    buf_free(&c->sniff);
    buf_free(&c->hname);
    buf_free(&c->hval);
    buf_free(&c->rest);
    free(c);
}

static void on_timer_closed(uv_handle_t *hd)
{
    conn_t *c = hd->data;
    uv_close(&c->s.handle, on_closed);
}

/* Take c off the unproven list (it proved itself, or it closes). */
static void unprove_unlink(conn_t *c)
{
    httpd_t *h = c->h;
    if (c->proven || !c->uprev) return;
    *c->uprev = c->unext;
    if (c->unext)
        c->unext->uprev = c->uprev;
    else
        h->unproven_tail = c->uprev;
    c->uprev = NULL;
    h->nunproven--;
    atomic_fetch_sub(&h->s_unproven, 1);
}

void httpd_discard_body(httpd_req_t *r)
{
    r->discard = 1;
}

void httpd_prove(httpd_req_t *r)
{
    conn_t *c = r->conn;
    if (!c || c->proven) return;
    unprove_unlink(c);
    c->proven = 1;
}

/* Close an unproven connection other than `keep` to make room: the oldest
 * (`any`), else the oldest that has sent nothing for UNPROVEN_QUIET_MS and
 * has no request in progress. Whether one was closed. */
#define UNPROVEN_QUIET_MS 5000
#define UNPROVEN_SCAN     64
static int evict(httpd_t *h, conn_t *keep, int any)
{
    uint64_t now = uv_now(&h->loop);
    int n = 0;
    for (conn_t *c = h->unproven; c && n < UNPROVEN_SCAN; c = c->unext, n++) {
        if (c == keep) continue;
        if (!any && (now - c->rx_at < UNPROVEN_QUIET_MS || c->in_handler || c->nstreams))
            continue; /* talking, or being answered */
        atomic_fetch_add(&h->s_evicted, 1);
        httpd__conn_close(c);
        return 1;
    }
    return 0;
}

/* Stopping and no connection left: close the last handles; uv_run returns. */
static void end_loop(httpd_t *h)
{
    pthread_mutex_lock(&h->mu);
    h->loop_done = 1; /* no uv_async_send from here on */
    pthread_mutex_unlock(&h->mu);
    if (!uv_is_closing((uv_handle_t *)&h->grace)) uv_close((uv_handle_t *)&h->grace, NULL);
    if (!uv_is_closing((uv_handle_t *)&h->wake)) uv_close((uv_handle_t *)&h->wake, NULL);
}

void httpd__conn_close(conn_t *c)
{
    if (c->closing) return;
    httpd_t *h = c->h;
    c->closing = 1;
    *c->prev = c->next;
    if (c->next) c->next->prev = c->prev;
    h->nconns--;
    atomic_fetch_sub(&h->s_conns, 1);
    unprove_unlink(c);
    if (c->proto == P_H2) atomic_fetch_sub(&h->s_h2conns, 1);
    httpd__h2_close(c); /* its streams are gone (nothing without HTTP/2) */
    if (c->dirty) {     /* off the list of connections to flush */
        conn_t **pp = &h->dirty;
        while (*pp != c)
            pp = &(*pp)->dirty_next;
        *pp = c->dirty_next;
        c->dirty = 0;
    }
    httpd_req_t *r = c->cur;
    c->cur = NULL;
    if (r) httpd__req_detach(r);
    uv_timer_stop(&c->timer);
    /* The timer closes first, then the stream; on_closed frees c. Pending
     * writes are cancelled on the stream's close (on_written, closing). */
    uv_close((uv_handle_t *)&c->timer, on_timer_closed);
    if (h->closing_all && !h->conns) end_loop(h);
}

typedef struct wreq {
    uv_write_t w; /* first: the uv_write_t * is the wreq_t * */
    conn_t *c;
    httpd_req_t *r; /* whose bytes, or NULL */
    size_t plain;   /* the plaintext bytes of r's this write carries */
    size_t len;     /* bytes on the wire */
    char *data;     /* owned */
} wreq_t;

static void on_written(uv_write_t *w, int status)
{
    wreq_t *q = (wreq_t *)w;
    conn_t *c = q->c;
    httpd_t *h = c->h;
    httpd_req_t *r = q->r;
    size_t plain = q->plain;
    c->writing -= q->len;
    c->wprog_at = uv_now(&h->loop);
    free(q->data);
    free(q);
    if (c->closing) return; /* cancelled: r may be gone, and is not touched */
    if (status < 0) {
        httpd__conn_close(c);
        return;
    }
    if (r) { /* HTTP/1.1: HTTP/2 counts its bytes out in its data provider */
        pthread_mutex_lock(&h->mu);
        r->unsent -= plain;
        httpd__drain_locked(h, r);
        pthread_mutex_unlock(&h->mu);
    }
    if (c->proto == P_H2)
        httpd__h2_flush(c);
    else
        httpd__h1_written(c);
}

/* Bytes on the wire (taken). */
static void write_raw(conn_t *c, httpd_req_t *r, char *bytes, size_t len, size_t plain)
{
    wreq_t *q = malloc(sizeof *q);
    if (!q) {
        free(bytes);
        httpd__conn_close(c);
        return;
    }
    *q = (wreq_t){.c = c, .r = r, .plain = plain, .len = len, .data = bytes};
    uv_buf_t b = uv_buf_init(bytes, (unsigned)len);
    if (uv_write(&q->w, &c->s.stream, &b, 1, on_written)) {
        free(q);
        free(bytes);
        httpd__conn_close(c);
        return;
    }
    if (!c->writing) c->wprog_at = uv_now(&c->h->loop);
    c->writing += len;
    httpd__timer_set(c, c->h->lim.write_timeout_ms);
}

void httpd__send(conn_t *c, httpd_req_t *r, char *bytes, size_t len)
{
    if (c->closing || !c->secure) {
        if (c->closing)
            free(bytes);
        else
            write_raw(c, r, bytes, len, len);
        return;
    }
    httpd__send_ref(c, r, bytes, len);
    free(bytes);
}

void httpd__send_ref(conn_t *c, httpd_req_t *r, const char *p, size_t len)
{
    if (c->closing) return;
    int rc = httpd__tls_send(c, p, len);
    size_t n = 0;
    char *wire = buf_detach(&c->tout, &n);
    if (rc) {
        free(wire);
        httpd__conn_close(c);
        return;
    }
    if (wire)
        write_raw(c, r, wire, n, len);
    else
        free(wire);
}

void httpd__tls_flush(conn_t *c)
{
    size_t n = 0;
    char *wire = buf_detach(&c->tout, &n);
    if (wire && n && !c->closing)
        write_raw(c, NULL, wire, n, 0);
    else
        free(wire);
}

/* ---- the loop's side of hand-back ---- */

/* Move each ready request's bytes on. */
static void drain_ready(httpd_t *h)
{
    pthread_mutex_lock(&h->mu);
    httpd_req_t *list = h->ready;
    h->ready = NULL;
    pthread_mutex_unlock(&h->mu);
    while (list) {
        httpd_req_t *r = list;
        pthread_mutex_lock(&h->mu);
        list = r->ready_next;
        r->in_ready = 0;
        int done = r->state == R_DONE;
        conn_t *c = r->conn;
        if (!c || c->closing) { /* its connection or stream is gone */
            buf_reset(&r->pre);
            buf_reset(&r->out);
            r->out_off = 0;
            pthread_mutex_unlock(&h->mu);
            if (!c && done) httpd__req_free(r);
            continue;
        }
        int aborted = r->aborted;
        pthread_mutex_unlock(&h->mu);
        if (aborted && r->h2) {
            nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, r->stream_id, NGHTTP2_CANCEL);
            httpd__h2_dirty(c);
        } else if (aborted) {
            httpd__conn_close(c); /* HTTP/1.1 cannot end a body early otherwise */
        } else if (r->h2) {
            httpd__h2_ready(c, r);
        } else {
            httpd__h1_ready(c);
        }
    }
    httpd__h2_flush_dirty(h);
}

/* ---- accepting, stopping (loop thread) ---- */

static void on_connection(uv_stream_t *server, int status)
{
    httpd_t *h = server->data;
    if (status < 0) return;
    conn_t *c = calloc(1, sizeof *c);
    if (!c) return;
    c->h = h;
    c->local = server == (uv_stream_t *)&h->unixl;
    int rc = c->local ? uv_pipe_init(&h->loop, &c->s.pipe, 0) : uv_tcp_init(&h->loop, &c->s.tcp);
    if (rc) {
        free(c);
        return;
    }
    c->s.handle.data = c;
    uv_timer_init(&h->loop, &c->timer);
    c->timer.data = c;
    buf_init(&c->tin, 2 * HTTPD_READ_CHUNK);
    buf_init(&c->tout, SIZE_MAX);
    buf_init(&c->sniff, sizeof h2_preface);
    buf_init(&c->hname, SIZE_MAX);
    buf_init(&c->hval, SIZE_MAX);
    buf_init(&c->rest, 2 * HTTPD_READ_CHUNK);
    c->idle_at = c->rx_at = uv_now(&h->loop);
    c->next = h->conns;
    if (c->next) c->next->prev = &c->next;
    c->prev = &h->conns;
    h->conns = c;
    h->nconns++;
    atomic_fetch_add(&h->s_conns, 1);
    atomic_fetch_add(&h->s_accepted, 1);
    c->proven = c->local; /* the Unix socket's peers are the process's own */
    if (!c->proven) {
        c->uprev = h->unproven_tail;
        *h->unproven_tail = c;
        h->unproven_tail = &c->unext;
        h->nunproven++;
        atomic_fetch_add(&h->s_unproven, 1);
    }
    int over = h->nconns > h->lim.max_connections && !evict(h, c, 1);
    if (!over && h->lim.max_unproven && h->nunproven > h->lim.max_unproven) evict(h, c, 0);
    c->secure = !c->local && h->creds; /* its TLS session comes with its first record */
    if (uv_accept(server, &c->s.stream) || over) {
        if (over) atomic_fetch_add(&h->s_refused, 1);
        httpd__conn_close(c);
        return;
    }
    if (!c->local) {
        uv_tcp_nodelay(&c->s.tcp, 1);
        struct sockaddr_storage ss;
        int sl = sizeof ss;
        if (!uv_tcp_getpeername(&c->s.tcp, (struct sockaddr *)&ss, &sl)) {
            if (ss.ss_family == AF_INET)
                uv_ip4_name((struct sockaddr_in *)&ss, c->peer_addr, sizeof c->peer_addr);
            else if (ss.ss_family == AF_INET6)
                uv_ip6_name((struct sockaddr_in6 *)&ss, c->peer_addr, sizeof c->peer_addr);
        }
    }
    httpd__timer_set(c, h->lim.header_timeout_ms);
    httpd__set_reading(c, 1);
}

static void close_if_open(uv_handle_t *hd)
{
    if (!uv_is_closing(hd)) uv_close(hd, NULL);
}

static void on_grace(uv_timer_t *t)
{
    httpd_t *h = t->data;
    while (h->conns)
        httpd__conn_close(h->conns);
}

/* Stopping: listeners closed, idle connections closed, HTTP/2 ones told
 * GOAWAY, busy ones closed after their reply; the rest when the grace
 * period ends; the loop ends when no connection is left. */
static void stop_step(httpd_t *h)
{
    if (!h->closing_all) {
        h->closing_all = 1;
        if (h->has_tcp) close_if_open((uv_handle_t *)&h->tcp);
        if (h->has_unix) close_if_open((uv_handle_t *)&h->unixl);
        uv_timer_init(&h->loop, &h->grace);
        h->grace.data = h;
        uv_timer_start(&h->grace, on_grace, (uint64_t)h->lim.grace_ms, 0);
        for (conn_t *c = h->conns; c; c = c->next)
            if (c->proto == P_H2) httpd__h2_goaway(c);
        httpd__h2_flush_dirty(h);
    }
    for (conn_t *c = h->conns, *next; c; c = next) {
        next = c->next;
        if (c->proto != P_H2 && !c->cur) httpd__conn_close(c); /* between requests */
    }
    if (!h->conns) end_loop(h);
}

static void on_wake(uv_async_t *a)
{
    httpd_t *h = a->data;
    drain_ready(h);
    pthread_mutex_lock(&h->mu);
    int stopping = h->stopping;
    pthread_mutex_unlock(&h->mu);
    if (stopping) stop_step(h);
}

static void *loop_run(void *arg)
{
    httpd_t *h = arg;
    log_thread_name("httpd-loop", NULL);
    uv_run(&h->loop, UV_RUN_DEFAULT);
    return NULL;
}

/* ---- the API ---- */

static int listen_on(httpd_t *h, int fd, int is_unix)
{
    uv_stream_t *s;
    int rc;
    if (is_unix) {
        rc = uv_pipe_init(&h->loop, &h->unixl, 0);
        if (!rc) rc = uv_pipe_open(&h->unixl, fd);
        s = (uv_stream_t *)&h->unixl;
        h->has_unix = 1;
    } else {
        rc = uv_tcp_init(&h->loop, &h->tcp);
        if (!rc) rc = uv_tcp_open(&h->tcp, fd);
        s = (uv_stream_t *)&h->tcp;
        h->has_tcp = 1;
    }
    s->data = h;
    if (!rc) rc = uv_listen(s, 1024, on_connection);
    return rc ? KP_EIO : 0;
}

static void free_globals(httpd_t *h)
{
    httpd__tls_global_free(h);
    httpd__h2_global_free(h);
    httpd__pull_free_globals(h);
}

/* An early failure: the listening sockets were the engine's, and close. */
static int fail_fds(const httpd_config_t *cfg, int rc)
{
    if (cfg && cfg->tcp_fd >= 0) close(cfg->tcp_fd);
    if (cfg && cfg->unix_fd >= 0) close(cfg->unix_fd);
    return rc;
}

int httpd_start(const httpd_config_t *cfg, httpd_t **out)
{
    *out = NULL;
    if (!cfg || !cfg->on_headers || !cfg->on_request || cfg->workers < 1 ||
        (cfg->tcp_fd < 0 && cfg->unix_fd < 0) || !cfg->cert_pem != !cfg->key_pem ||
        (cfg->client_ca_pem && !cfg->cert_pem))
        return fail_fds(cfg, KP_EINVAL);
    /* libuv writes with writev(2): a client that closed would raise SIGPIPE
     * and kill the process. */
    struct sigaction old;
    if (sigaction(SIGPIPE, NULL, &old) == 0 && old.sa_handler == SIG_DFL) signal(SIGPIPE, SIG_IGN);
    httpd_t *h = calloc(1, sizeof *h);
    if (!h) return fail_fds(cfg, KP_ENOMEM);
    h->cfg = *cfg;
    /* Not kept: the credentials are. */
    h->cfg.cert_pem = h->cfg.key_pem = h->cfg.client_ca_pem = NULL;
    if (h->cfg.max_workers < h->cfg.workers) h->cfg.max_workers = h->cfg.workers;
    h->lim = cfg->limits;
    limits_fill(&h->lim);
    h->qtail = &h->qhead;
    h->pq_tail = &h->pq_head;
    h->unproven_tail = &h->unproven;
    httpd__h1_settings(&h->settings);
    int rc = httpd__h2_global(h);
    if (!rc && cfg->cert_pem)
        rc = httpd__tls_global(h, cfg->cert_pem, cfg->key_pem, cfg->client_ca_pem);
    if (rc) {
        free_globals(h);
        free(h);
        return fail_fds(cfg, rc);
    }
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    pthread_cond_init(&h->tcv, NULL);
    pthread_cond_init(&h->done_cv, NULL);
    pthread_cond_init(&h->cb_cv, NULL);
    if (uv_loop_init(&h->loop)) {
        free_globals(h);
        free(h);
        return fail_fds(cfg, KP_ENOMEM);
    }
    if (uv_async_init(&h->loop, &h->wake, on_wake)) {
        uv_loop_close(&h->loop);
        free_globals(h);
        free(h);
        return fail_fds(cfg, KP_ENOMEM);
    }
    h->wake.data = h;
    if (!rc && cfg->tcp_fd >= 0) rc = listen_on(h, cfg->tcp_fd, 0);
    if (!rc && cfg->unix_fd >= 0) rc = listen_on(h, cfg->unix_fd, 1);
    if (!rc && pthread_create(&h->loop_thread, NULL, loop_run, h)) rc = KP_ENOMEM;
    if (rc) {
        /* No thread runs yet: close what was opened and run the loop dry. */
        if (h->has_tcp) close_if_open((uv_handle_t *)&h->tcp);
        if (h->has_unix) close_if_open((uv_handle_t *)&h->unixl);
        close_if_open((uv_handle_t *)&h->wake);
        uv_run(&h->loop, UV_RUN_DEFAULT);
        uv_loop_close(&h->loop);
        free_globals(h);
        free(h);
        return rc;
    }
    pthread_mutex_lock(&h->mu);
    for (int i = 0; i < cfg->workers; i++)
        if (worker_add_locked(h)) break;
    int none = !h->live_workers;
    pthread_mutex_unlock(&h->mu);
    if (none) {
        httpd_stop(h);
        return KP_ENOMEM;
    }
    *out = h;
    return 0;
}

void httpd_stop(httpd_t *h)
{
    if (!h) return;
    pthread_mutex_lock(&h->mu);
    h->stopping = 1;
    pthread_cond_broadcast(&h->cv);
    pthread_cond_broadcast(&h->tcv);
    pthread_mutex_unlock(&h->mu);
    uv_async_send(&h->wake);
    pthread_join(h->loop_thread, NULL);

    /* No loop from here on (end_loop set loop_done): what was handed back
     * for it is done with. */
    pthread_mutex_lock(&h->mu);
    h->loop_done = 1;
    httpd_req_t *list = h->ready;
    h->ready = NULL;
    for (httpd_req_t *r = list; r; r = r->ready_next)
        r->in_ready = 0;
    pthread_mutex_unlock(&h->mu);
    while (list) {
        httpd_req_t *r = list;
        list = r->ready_next;
        pthread_mutex_lock(&h->mu);
        int done = r->state == R_DONE;
        pthread_mutex_unlock(&h->mu);
        if (done) httpd__req_free(r);
    }
    /* The workers end (detached); handlers that still hold a request got
     * on_gone(): wait for their replies to end. */
    pthread_mutex_lock(&h->mu);
    while (h->live_reqs || h->live_workers)
        pthread_cond_wait(&h->done_cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
    uv_loop_close(&h->loop);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    pthread_cond_destroy(&h->tcv);
    pthread_cond_destroy(&h->done_cv);
    pthread_cond_destroy(&h->cb_cv);
    free_globals(h);
    free(h);
}

void httpd_stats(httpd_t *h, httpd_stats_t *out)
{
    out->connections = atomic_load(&h->s_conns);
    out->h2_connections = atomic_load(&h->s_h2conns);
    out->accepted = atomic_load(&h->s_accepted);
    out->h2_accepted = atomic_load(&h->s_h2accepted);
    out->requests = atomic_load(&h->s_requests);
    pthread_mutex_lock(&h->mu);
    out->queued = h->qlen;
    out->workers = (uint64_t)h->live_workers;
    out->streams = h->npulls;
    pthread_mutex_unlock(&h->mu);
    out->unproven = atomic_load(&h->s_unproven);
    out->evicted = atomic_load(&h->s_evicted);
    out->refused = atomic_load(&h->s_refused);
    out->timeouts = atomic_load(&h->s_timeouts);
}
