/*
 * httpd.c -- the engine of httpd.h: this increment speaks plain HTTP/1.1
 * (TCP and Unix socket); TLS and HTTP/2 follow (httpd_start refuses a
 * certificate until then).
 *
 * OWNERSHIP
 *   A connection (conn_t) is the loop thread's alone. It serves one request
 *   at a time: once a request's headers and body are in, reading stops and
 *   the parser pauses (bytes already read wait in conn->rest) until the
 *   reply has been written; then the next request is parsed.
 *   A request (httpd_req_t) is shared: the loop thread parsed it, a worker
 *   handles it, and any thread may reply on it. Its reply fields (the
 *   outbox) are guarded by h->mu. It is freed by the loop thread once its
 *   handler is done (reply complete) and its connection is done with it
 *   (every byte written, or the connection gone).
 *
 * HAND-BACK
 *   A reply or stream write appends framed bytes to the request's outbox
 *   under h->mu, puts the request on h->ready (once) and signals the loop
 *   (uv_async_send). The loop moves each ready request's outbox to its
 *   socket with uv_write.
 *
 * TIMERS (one per connection)
 *   header_timeout from accept, and from a request's first byte, to its
 *   complete headers; idle_timeout between requests and while a body makes
 *   no progress; write_timeout while written bytes make no progress. None
 *   while a handler works on a request and nothing is waiting to be sent.
 */
#include "httpd/httpd.h"

#include <errno.h>
#include <http_parser.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <uv.h>

#include "lib/buf.h"
#include "lib/err.h"
#include "lib/log.h"

#define HTTPD_HEADERS_MAX 128 /* header fields per request: 431 beyond */
#define HTTPD_READ_CHUNK 65536
#define HTTPD_DRAIN_BYTES (256u << 10) /* after a refusal, as Go's net/http */
#define HTTPD_DRAIN_MS 1000

typedef struct conn conn_t;

typedef struct hdr {
    char *name, *value;
} hdr_t;

struct httpd_req {
    httpd_t *h;
    conn_t *conn; /* loop thread: NULL once the connection is gone */
    char method[16];
    buf_t target;
    char *path, *query; /* decoded path; query points into target */
    hdr_t hdrs[HTTPD_HEADERS_MAX];
    size_t nhdrs;
    buf_t body;
    size_t body_max;
    int keep_alive;
    int local;
    void *data;
    httpd_req_t *qnext; /* the worker queue (h->mu) */
    int queued;         /* it went to the worker queue (h->mu) */
    int picked;         /* a worker took it (h->mu) */
    int told;           /* on_gone() ran (h->mu) */

    /* h->mu */
    int state;       /* R_NONE, R_STREAM (started), R_DONE (reply complete) */
    buf_t out;       /* framed bytes for the loop to send */
    size_t unsent;   /* bytes handed to the loop and not yet written */
    int gone;        /* the client went away */
    int want_drain;  /* a stream write was refused over the budget */
    int in_ready;
    httpd_req_t *ready_next;
};

enum { R_NONE = 0, R_STREAM, R_DONE };

struct conn {
    httpd_t *h;
    union {
        uv_tcp_t tcp;
        uv_pipe_t pipe;
        uv_handle_t handle;
        uv_stream_t stream;
    } s;
    uv_timer_t timer;
    int local;
    int closing;
    int reading;
    http_parser p;
    httpd_req_t *cur;  /* being parsed, handled or written */
    int in_handler;    /* cur went to the workers and is not done */
    int header_state;  /* 0 none, 1 in a field, 2 in a value */
    size_t header_bytes;
    buf_t hname, hval;
    int refused;       /* a refusal reply is queued: close once it is sent */
    int peer_eof;      /* the client shut its sending side: close after the reply */
    int draining;      /* refused and replied: reading what the client still
                          sends (up to HTTPD_DRAIN_BYTES) so that closing with
                          unread bytes does not reset the reply away */
    size_t drained;
    uv_shutdown_t shut;
    buf_t rest;        /* bytes read while the parser was paused */
    size_t writing;    /* bytes in uv_write requests not completed */
    conn_t *next, **prev;
};

typedef struct wreq {
    uv_write_t w; /* first: the uv_write_t * is the wreq_t * */
    conn_t *c;
    httpd_req_t *r; /* whose bytes */
    size_t len;
    char *data;     /* owned */
} wreq_t;

struct httpd {
    httpd_config_t cfg;
    httpd_limits_t lim;
    uv_loop_t loop;
    uv_async_t wake;
    uv_tcp_t tcp;
    uv_pipe_t unixl;
    int has_tcp, has_unix;
    pthread_t loop_thread;
    pthread_t *workers;
    int nworkers;
    http_parser_settings settings;

    pthread_mutex_t mu;
    pthread_cond_t cv; /* the queue, stopping */
    httpd_req_t *qhead, **qtail;
    size_t qlen;
    httpd_req_t *ready;
    int stopping;      /* workers exit; the loop closes everything */
    size_t live_reqs;  /* requests not yet freed */
    int loop_done;     /* the loop thread has ended: replies free at once */
    pthread_cond_t done_cv;

    /* loop thread */
    conn_t *conns;
    size_t nconns;
    int closing_all;              /* stopping: listeners closed */
    uv_timer_t grace;             /* stopping: closes what is left */
    char inbuf[HTTPD_READ_CHUNK]; /* each read is consumed before the next */

    _Atomic uint64_t s_conns, s_requests, s_refused, s_timeouts; /* httpd_stats() */
};

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
    if (!l->grace_ms) l->grace_ms = d.grace_ms;
}

static const char *reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 413: return "Request Entity Too Large";
    case 414: return "Request-URI Too Long";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return status < 300 ? "OK" : status < 500 ? "Bad Request" : "Internal Server Error";
    }
}

/* The head of a reply: status line, the caller's headers, the engine's. */
static int frame_head(buf_t *b, int status, const char *const *headers, long long length,
                      int keep_alive)
{
    char date[64];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    int rc = buf_printf(b, "HTTP/1.1 %d %s\r\nDate: %s\r\n", status, reason(status), date);
    for (size_t i = 0; !rc && headers && headers[i]; i += 2) {
        const char *n = headers[i], *v = headers[i + 1] ? headers[i + 1] : "";
        if (!strcasecmp(n, "Content-Length") || !strcasecmp(n, "Transfer-Encoding") ||
            !strcasecmp(n, "Connection") || !strcasecmp(n, "Date") || strpbrk(n, "\r\n:") ||
            strpbrk(v, "\r\n"))
            continue; /* the engine's, or unsafe */
        rc = buf_append(b, n, strlen(n));
        if (!rc) rc = buf_append(b, ": ", 2);
        if (!rc) rc = buf_append(b, v, strlen(v));
        if (!rc) rc = buf_append(b, "\r\n", 2);
    }
    if (!rc && length >= 0) rc = buf_printf(b, "Content-Length: %lld\r\n", length);
    if (!rc && length < 0) rc = buf_printf(b, "Transfer-Encoding: chunked\r\n");
    if (!rc && !keep_alive) rc = buf_printf(b, "Connection: close\r\n");
    if (!rc) rc = buf_append(b, "\r\n", 2);
    return rc;
}

/* ---- requests ---- */

static httpd_req_t *req_new(httpd_t *h, conn_t *c)
{
    httpd_req_t *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->h = h;
    r->conn = c;
    r->local = c->local;
    buf_init(&r->target, HTTPD_TARGET_MAX);
    buf_init(&r->body, 0);
    buf_init(&r->out, SIZE_MAX);
    pthread_mutex_lock(&h->mu);
    h->live_reqs++;
    pthread_mutex_unlock(&h->mu);
    return r;
}

static void req_free(httpd_req_t *r)
{
    httpd_t *h = r->h;
    buf_free(&r->target);
    buf_free(&r->body);
    buf_free(&r->out);
    free(r->path);
    for (size_t i = 0; i < r->nhdrs; i++) {
        free(r->hdrs[i].name);
        free(r->hdrs[i].value);
    }
    free(r);
    pthread_mutex_lock(&h->mu);
    h->live_reqs--;
    pthread_cond_broadcast(&h->done_cv);
    pthread_mutex_unlock(&h->mu);
}

/* Queue r for the loop (h->mu held). */
static void ready_locked(httpd_t *h, httpd_req_t *r)
{
    if (r->in_ready) return;
    r->in_ready = 1;
    r->ready_next = h->ready;
    h->ready = r;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    c = (char)(c | 32);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* %-decode the path part of r->target into r->path; r->query after '?'.
 * Errors: KP_EINVAL (an encoded NUL), KP_ENOMEM. */
static int split_target(httpd_req_t *r)
{
    char *t = r->target.p ? r->target.p : (char *)"";
    char *q = strchr(t, '?');
    size_t n = q ? (size_t)(q - t) : strlen(t);
    r->query = q ? q + 1 : t + strlen(t);
    char *p = malloc(n + 1);
    if (!p) return KP_ENOMEM;
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        int hi = t[i] == '%' && i + 2 < n ? hexval(t[i + 1]) : -1;
        int lo = hi >= 0 ? hexval(t[i + 2]) : -1;
        if (lo < 0) {
            p[j++] = t[i];
            continue;
        }
        if (!hi && !lo) {
            free(p);
            return KP_EINVAL;
        }
        p[j++] = (char)(hi * 16 + lo);
        i += 2;
    }
    p[j] = '\0';
    r->path = p;
    return 0;
}

/* ---- connections (loop thread) ---- */

static void conn_close(conn_t *c);
static void feed(conn_t *c, const char *data, size_t n);

static void timer_fired(uv_timer_t *t)
{
    conn_t *c = t->data;
    if (!c->draining) atomic_fetch_add(&c->h->s_timeouts, 1);
    conn_close(c);
}

static void timer_set(conn_t *c, int ms)
{
    if (c->closing) return;
    if (ms > 0)
        uv_timer_start(&c->timer, timer_fired, (uint64_t)ms, 0);
    else
        uv_timer_stop(&c->timer);
}

static void on_alloc(uv_handle_t *hd, size_t want, uv_buf_t *b)
{
    (void)want;
    conn_t *c = hd->data;
    httpd_t *h = c->h;
    /* One loop thread: on_read consumes (or copies) the bytes before the
     * next read. While a handler has the request, what comes is kept for
     * later, up to the room in c->rest; none left: UV_ENOBUFS, and reading
     * stops. */
    size_t room = sizeof h->inbuf;
    if (c->in_handler && !c->draining && !c->refused)
        room = c->rest.max > c->rest.len ? c->rest.max - c->rest.len : 0;
    if (room > sizeof h->inbuf) room = sizeof h->inbuf;
    *b = room ? uv_buf_init(h->inbuf, (unsigned)room) : uv_buf_init(NULL, 0);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b);

static void set_reading(conn_t *c, int on)
{
    if (c->closing || on == c->reading) return;
    c->reading = on;
    if (on)
        uv_read_start(&c->s.stream, on_alloc, on_read);
    else
        uv_read_stop(&c->s.stream);
}

static void on_closed(uv_handle_t *hd)
{
    conn_t *c = hd->data;
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

/* Tell r's handler its client is gone (or has stopped sending), once, if a
 * worker has begun r and its reply is not complete. */
static void tell_gone(httpd_t *h, httpd_req_t *r)
{
    pthread_mutex_lock(&h->mu);
    int call = r->picked && !r->told && r->state != R_DONE;
    if (call) r->told = 1;
    pthread_mutex_unlock(&h->mu);
    if (call && h->cfg.on_gone) h->cfg.on_gone(h->cfg.arg, r);
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

static void conn_close(conn_t *c)
{
    if (c->closing) return;
    httpd_t *h = c->h;
    c->closing = 1;
    *c->prev = c->next;
    if (c->next) c->next->prev = c->prev;
    h->nconns--;
    atomic_fetch_sub(&h->s_conns, 1);
    httpd_req_t *r = c->cur;
    c->cur = NULL;
    if (r) {
        int call_gone = 0, free_now = 0;
        pthread_mutex_lock(&h->mu);
        r->conn = NULL;
        if (!r->in_ready && (!r->queued || r->state == R_DONE)) {
            free_now = 1;
        } else {
            /* drain_ready frees it once its reply is done (in_ready), or
             * a worker does if none has picked it yet */
            r->gone = 1;
            if (!r->in_ready) buf_reset(&r->out);
            call_gone = r->picked && !r->told && r->state != R_DONE;
            if (call_gone) r->told = 1;
        }
        pthread_mutex_unlock(&h->mu);
        if (free_now) req_free(r);
        if (call_gone && h->cfg.on_gone) h->cfg.on_gone(h->cfg.arg, r);
    }
    uv_timer_stop(&c->timer);
    /* The timer closes first, then the stream; on_closed frees c. Pending
     * writes are cancelled on the stream's close (on_written, closing). */
    uv_close((uv_handle_t *)&c->timer, on_timer_closed);
    if (h->closing_all && !h->conns) end_loop(h);
}

/* The request on c is complete (its reply written): go on to the next one,
 * or close. */
static void conn_next(conn_t *c)
{
    httpd_t *h = c->h;
    httpd_req_t *r = c->cur;
    atomic_fetch_add(&h->s_requests, 1);
    pthread_mutex_lock(&h->mu);
    int keep = r && r->keep_alive && !c->refused && !c->peer_eof && !h->stopping;
    pthread_mutex_unlock(&h->mu);
    if (!keep && c->refused && !c->draining &&
        !uv_shutdown(&c->shut, &c->s.stream, NULL)) {
        /* The reply is out; the client may still be sending the body we
         * refused. Read and drop some of it before closing: closing with
         * unread bytes sends a reset, which can destroy the reply on its
         * way. */
        c->draining = 1;
        buf_reset(&c->rest);
        timer_set(c, HTTPD_DRAIN_MS);
        set_reading(c, 1);
        return;
    }
    if (!keep) {
        conn_close(c);
        return;
    }
    c->cur = NULL;
    c->in_handler = 0;
    req_free(r);
    http_parser_pause(&c->p, 0);
    timer_set(c, h->lim.idle_timeout_ms);
    set_reading(c, 1);
    if (c->rest.len) {
        size_t n;
        char *rest = buf_detach(&c->rest, &n);
        feed(c, rest, n);
        free(rest);
    }
}

/* Is c's current request done, reply and all? */
static int cur_done(conn_t *c)
{
    if (!c->cur || c->writing) return 0;
    pthread_mutex_lock(&c->h->mu);
    int done = c->cur->state == R_DONE && !c->cur->out.len && !c->cur->in_ready;
    pthread_mutex_unlock(&c->h->mu);
    return done;
}

static void on_written(uv_write_t *w, int status)
{
    wreq_t *q = (wreq_t *)w;
    conn_t *c = q->c;
    httpd_t *h = c->h;
    httpd_req_t *r = q->r;
    size_t len = q->len;
    free(q->data);
    free(q);
    c->writing -= len;
    if (c->closing) return; /* cancelled: r may be gone, and is not touched */
    if (status < 0) {
        conn_close(c);
        return;
    }
    int drain = 0;
    pthread_mutex_lock(&h->mu);
    r->unsent -= len;
    if (r->want_drain && r->unsent < h->lim.stream_budget / 2 && !r->gone) {
        r->want_drain = 0;
        drain = 1;
    }
    pthread_mutex_unlock(&h->mu);
    if (drain && h->cfg.on_drain) h->cfg.on_drain(h->cfg.arg, r);
    timer_set(c, c->writing ? h->lim.write_timeout_ms : 0);
    if (cur_done(c)) conn_next(c);
}

/* Send bytes (taken: malloc'd) of r on c. */
static void conn_write(conn_t *c, httpd_req_t *r, char *bytes, size_t len)
{
    wreq_t *q = malloc(sizeof *q);
    if (!q) {
        free(bytes);
        conn_close(c);
        return;
    }
    q->c = c;
    q->r = r;
    q->len = len;
    q->data = bytes;
    uv_buf_t b = uv_buf_init(bytes, (unsigned)len);
    int rc = uv_write(&q->w, &c->s.stream, &b, 1, on_written);
    if (rc) {
        free(q);
        free(bytes);
        conn_close(c);
        return;
    }
    c->writing += len;
    timer_set(c, c->h->lim.write_timeout_ms);
}

/* ---- replies (any thread) ---- */

/* Append bytes for the loop to send on r and wake it. `state` is what the
 * reply becomes. Errors: KP_EINVAL (wrong state), KP_ECLOSED (gone: the
 * state still changes), KP_ETOOLARGE (over the stream budget: nothing
 * changes), KP_ENOMEM. */
static int hand_back(httpd_req_t *r, int from, int to, const char *a, size_t alen, const char *b,
                     size_t blen, int budgeted)
{
    httpd_t *h = r->h;
    int rc = 0, free_now = 0;
    pthread_mutex_lock(&h->mu);
    if (r->state != from) {
        pthread_mutex_unlock(&h->mu);
        return KP_EINVAL;
    }
    if (r->gone) {
        rc = KP_ECLOSED;
    } else if (budgeted && r->unsent + alen + blen > h->lim.stream_budget) {
        r->want_drain = 1;
        pthread_mutex_unlock(&h->mu);
        return KP_ETOOLARGE;
    } else {
        size_t mark = r->out.len;
        rc = buf_append(&r->out, a, alen);
        if (!rc && blen) rc = buf_append(&r->out, b, blen);
        if (rc) {
            r->out.len = mark;
            pthread_mutex_unlock(&h->mu);
            return KP_ENOMEM;
        }
        r->unsent += alen + blen;
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
    if (free_now) req_free(r);
    return rc;
}

int httpd_reply(httpd_req_t *r, int status, const char *const *headers, char *body, size_t len)
{
    buf_t head;
    buf_init(&head, SIZE_MAX);
    int rc = frame_head(&head, status, headers, (long long)len, r->keep_alive);
    int head_only = !strcmp(r->method, "HEAD") || status == 204 || status == 304;
    if (!rc)
        rc = hand_back(r, R_NONE, R_DONE, head.p, head.len, body, head_only ? 0 : len, 0);
    if (rc == KP_ECLOSED) rc = 0; /* nobody to tell: done all the same */
    buf_free(&head);
    free(body);
    return rc;
}

int httpd_stream_start(httpd_req_t *r, int status, const char *const *headers)
{
    buf_t head;
    buf_init(&head, SIZE_MAX);
    int rc = frame_head(&head, status, headers, -1, r->keep_alive);
    if (!rc) rc = hand_back(r, R_NONE, R_STREAM, head.p, head.len, NULL, 0, 0);
    buf_free(&head);
    return rc == KP_ECLOSED ? 0 : rc;
}

int httpd_stream_write(httpd_req_t *r, const void *data, size_t len)
{
    if (!len) return 0;
    char size[32];
    int n = snprintf(size, sizeof size, "%zx\r\n", len);
    buf_t chunk;
    buf_init(&chunk, SIZE_MAX);
    int rc = buf_append(&chunk, size, (size_t)n);
    if (!rc) rc = buf_append(&chunk, data, len);
    if (!rc) rc = buf_append(&chunk, "\r\n", 2);
    if (!rc) rc = hand_back(r, R_STREAM, R_STREAM, chunk.p, chunk.len, NULL, 0, 1);
    buf_free(&chunk);
    return rc;
}

void httpd_stream_end(httpd_req_t *r)
{
    hand_back(r, R_STREAM, R_DONE, "0\r\n\r\n", 5, NULL, 0, 0);
}

/* ---- the loop's side of hand-back ---- */

static void on_wake(uv_async_t *a);

/* Move each ready request's bytes to its socket. */
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
        size_t len = 0;
        char *bytes = buf_detach(&r->out, &len);
        int done = r->state == R_DONE;
        conn_t *c = r->conn;
        pthread_mutex_unlock(&h->mu);
        if (!c) { /* its connection is gone */
            free(bytes);
            if (done) req_free(r);
            continue;
        }
        if (len)
            conn_write(c, r, bytes, len);
        else
            free(bytes);
        if (!c->closing && cur_done(c)) conn_next(c);
    }
}

/* ---- HTTP/1.1 parsing (loop thread) ---- */

/* Stop the parser where it is (http-parser asserts on pausing a parser
 * that failed: a failed one stops anyway). */
static void pause_parser(conn_t *c)
{
    if (HTTP_PARSER_ERRNO(&c->p) == HPE_OK) http_parser_pause(&c->p, 1);
}

/* Refuse c's request with `status` (plain text) and close after it. */
static void refuse(conn_t *c, int status)
{
    httpd_t *h = c->h;
    c->refused = 1;
    pause_parser(c);
    set_reading(c, 0);
    timer_set(c, h->lim.write_timeout_ms);
    atomic_fetch_add(&h->s_refused, 1);
    httpd_req_t *r = c->cur;
    if (!r || c->in_handler) {
        conn_close(c);
        return;
    }
    r->keep_alive = 0;
    c->in_handler = 1; /* the reply below is its only one */
    char text[96];
    int n = snprintf(text, sizeof text, "%d %s\n", status, reason(status));
    static const char *const plain[] = {"Content-Type", "text/plain; charset=utf-8", NULL};
    char *body = strndup(text, (size_t)n);
    if (!body || httpd_reply(r, status, plain, body, (size_t)n)) conn_close(c);
}

static int commit_header(conn_t *c)
{
    httpd_req_t *r = c->cur;
    if (c->header_state != 2) return 0;
    c->header_state = 0;
    if (r->nhdrs == HTTPD_HEADERS_MAX) return KP_ETOOLARGE;
    char *n = strndup(c->hname.p ? c->hname.p : "", c->hname.len);
    char *v = strndup(c->hval.p ? c->hval.p : "", c->hval.len);
    buf_reset(&c->hname);
    buf_reset(&c->hval);
    if (!n || !v) {
        free(n);
        free(v);
        return KP_ENOMEM;
    }
    for (size_t i = 0; i < r->nhdrs; i++) { /* a repeated field: one value, ", "-joined */
        if (strcasecmp(r->hdrs[i].name, n)) continue;
        size_t a = strlen(r->hdrs[i].value), b = strlen(v);
        char *j = realloc(r->hdrs[i].value, a + 2 + b + 1);
        if (!j) {
            free(n);
            free(v);
            return KP_ENOMEM;
        }
        memcpy(j + a, ", ", 2);
        memcpy(j + a + 2, v, b + 1);
        r->hdrs[i].value = j;
        free(n);
        free(v);
        return 0;
    }
    r->hdrs[r->nhdrs++] = (hdr_t){n, v};
    return 0;
}

static int header_room(conn_t *c, size_t n)
{
    c->header_bytes += n;
    return c->header_bytes <= c->h->lim.header_bytes;
}

static int on_message_begin(http_parser *p)
{
    conn_t *c = p->data;
    c->cur = req_new(c->h, c);
    if (!c->cur) return -1;
    c->in_handler = 0;
    c->header_state = 0;
    c->header_bytes = 0;
    buf_reset(&c->hname);
    buf_reset(&c->hval);
    timer_set(c, c->h->lim.header_timeout_ms);
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t n)
{
    conn_t *c = p->data;
    if (!header_room(c, n)) {
        refuse(c, 431);
        return -1;
    }
    if (buf_append(&c->cur->target, at, n)) {
        refuse(c, 414);
        return -1;
    }
    return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t n)
{
    conn_t *c = p->data;
    int rc = header_room(c, n) ? commit_header(c) : KP_ETOOLARGE;
    if (!rc) rc = buf_append(&c->hname, at, n);
    if (rc) {
        refuse(c, rc == KP_ENOMEM ? 500 : 431);
        return -1;
    }
    c->header_state = 1;
    return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t n)
{
    conn_t *c = p->data;
    int rc = header_room(c, n) ? buf_append(&c->hval, at, n) : KP_ETOOLARGE;
    if (rc || memchr(at, '\0', n)) {
        refuse(c, rc == KP_ENOMEM ? 500 : rc ? 431 : 400);
        return -1;
    }
    c->header_state = 2;
    return 0;
}

static int on_headers_complete(http_parser *p)
{
    conn_t *c = p->data;
    httpd_t *h = c->h;
    httpd_req_t *r = c->cur;
    int rc = commit_header(c);
    if (rc) {
        refuse(c, rc == KP_ENOMEM ? 500 : 431);
        return -1;
    }
    snprintf(r->method, sizeof r->method, "%s", http_method_str((enum http_method)p->method));
    if ((rc = split_target(r))) {
        refuse(c, rc == KP_ENOMEM ? 500 : 400);
        return -1;
    }
    if (p->upgrade) { /* WebSocket and SPDY come with exec and port-forward */
        refuse(c, 400);
        return -1;
    }
    timer_set(c, 0);
    int has_body = (p->flags & F_CHUNKED) || (p->content_length > 0 && p->content_length != ULLONG_MAX);
    int keep = http_should_keep_alive(p);
    r->keep_alive = keep && !has_body; /* a refusal leaves the body unread */
    size_t body_max = 0;
    if (h->cfg.on_headers(h->cfg.arg, r, &body_max) == HTTPD_REPLIED) {
        c->in_handler = 1;
        if (has_body) { /* the body is never read: the connection ends */
            c->refused = 1;
            pause_parser(c);
            set_reading(c, 0);
        }
        return 0;
    }
    r->keep_alive = keep;
    if (has_body && !(p->flags & F_CHUNKED) && p->content_length > body_max) {
        refuse(c, 413);
        return -1;
    }
    r->body_max = body_max;
    r->body.max = body_max;
    if (has_body) timer_set(c, h->lim.idle_timeout_ms);
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
    conn_t *c = p->data;
    if (c->in_handler) return 0; /* replied before the body: dropped */
    int rc = buf_append(&c->cur->body, at, n);
    if (rc) {
        refuse(c, rc == KP_ETOOLARGE ? 413 : 500);
        return -1;
    }
    timer_set(c, c->h->lim.idle_timeout_ms);
    return 0;
}

static int on_message_complete(http_parser *p)
{
    conn_t *c = p->data;
    httpd_t *h = c->h;
    httpd_req_t *r = c->cur;
    pause_parser(c);
    timer_set(c, 0);
    /* Reading goes on while the handler works, so that a client that goes
     * away is noticed (on_gone); what it sends meanwhile waits in c->rest. */
    if (c->in_handler) return 0; /* on_headers replied */
    if (!r->body.p && buf_append(&r->body, "", 0)) {
        refuse(c, 500);
        return 0;
    }
    pthread_mutex_lock(&h->mu);
    int full = h->qlen >= HTTPD_QUEUE_MAX;
    if (!full) {
        r->queued = 1;
        r->qnext = NULL;
        *h->qtail = r;
        h->qtail = &r->qnext;
        h->qlen++;
        pthread_cond_signal(&h->cv);
    }
    pthread_mutex_unlock(&h->mu);
    c->in_handler = 1;
    if (full) {
        static const char *const retry[] = {"Retry-After", "1", "Content-Type",
                                            "text/plain; charset=utf-8", NULL};
        static const char busy[] = "429 Too Many Requests\n";
        char *body = strdup(busy);
        atomic_fetch_add(&h->s_refused, 1);
        if (!body || httpd_reply(r, 429, retry, body, sizeof busy - 1))
            conn_close(c);
    }
    return 0;
}

static void feed(conn_t *c, const char *data, size_t n)
{
    size_t done = http_parser_execute(&c->p, &c->h->settings, data, n);
    if (c->closing) return;
    enum http_errno e = HTTP_PARSER_ERRNO(&c->p);
    if (e == HPE_PAUSED) {
        if (done < n && !c->refused && buf_append(&c->rest, data + done, n - done)) conn_close(c);
        return;
    }
    if (e != HPE_OK && !c->refused) {
        if (c->cur && !c->in_handler)
            refuse(c, 400);
        else
            conn_close(c);
    }
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    conn_t *c = s->data;
    if (n == UV_ENOBUFS) { /* c->rest is full: the client waits for its reply */
        set_reading(c, 0);
        return;
    }
    int streaming = 0;
    if (n == UV_EOF && c->cur) {
        pthread_mutex_lock(&c->h->mu);
        streaming = c->cur->state == R_STREAM;
        pthread_mutex_unlock(&c->h->mu);
    }
    if (n == UV_EOF && c->cur && c->in_handler && !c->refused && !streaming) {
        /* The client stopped sending, maybe to wait for this reply (a
         * half-close), maybe for good. As Go's net/http, the handler hears
         * of it; the reply still goes out, and the connection closes then.
         * A stream's client that stops sending has left (a watch's client
         * closes to stop it): that is the close below. */
        c->peer_eof = 1;
        set_reading(c, 0);
        tell_gone(c->h, c->cur);
        return;
    }
    if (n < 0) { /* EOF between requests, or an error */
        conn_close(c);
        return;
    }
    if (n == 0) return;
    if (c->draining) {
        c->drained += (size_t)n;
        if (c->drained > HTTPD_DRAIN_BYTES) conn_close(c);
        return;
    }
    if (c->refused) return; /* its reply is on the way; then draining */
    if (c->in_handler) { /* the parser waits: keep what came (on_alloc's room) */
        if (buf_append(&c->rest, b->base, (size_t)n)) conn_close(c);
        return;
    }
    feed(c, b->base, (size_t)n);
}

/* ---- workers ---- */

static void *worker_run(void *arg)
{
    httpd_t *h = arg;
    log_thread_name("httpd-worker", NULL);
    pthread_mutex_lock(&h->mu);
    for (;;) {
        while (!h->qhead && !h->stopping)
            pthread_cond_wait(&h->cv, &h->mu);
        httpd_req_t *r = h->qhead;
        if (!r) break; /* stopping, and nothing queued */
        h->qhead = r->qnext;
        if (!h->qhead) h->qtail = &h->qhead;
        h->qlen--;
        if (r->gone) { /* its client left while it waited: nobody else has it */
            pthread_mutex_unlock(&h->mu);
            req_free(r);
            pthread_mutex_lock(&h->mu);
            continue;
        }
        r->picked = 1;
        pthread_mutex_unlock(&h->mu);
        h->cfg.on_request(h->cfg.arg, r);
        pthread_mutex_lock(&h->mu);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
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
    buf_init(&c->hname, SIZE_MAX);
    buf_init(&c->hval, SIZE_MAX);
    buf_init(&c->rest, 2 * HTTPD_READ_CHUNK);
    http_parser_init(&c->p, HTTP_REQUEST);
    c->p.data = c;
    c->next = h->conns;
    if (c->next) c->next->prev = &c->next;
    c->prev = &h->conns;
    h->conns = c;
    h->nconns++;
    atomic_fetch_add(&h->s_conns, 1);
    if (uv_accept(server, &c->s.stream) || h->nconns > h->lim.max_connections) {
        if (h->nconns > h->lim.max_connections) atomic_fetch_add(&h->s_refused, 1);
        conn_close(c);
        return;
    }
    if (!c->local) uv_tcp_nodelay(&c->s.tcp, 1);
    timer_set(c, h->lim.header_timeout_ms);
    set_reading(c, 1);
}

static void close_if_open(uv_handle_t *hd)
{
    if (!uv_is_closing(hd)) uv_close(hd, NULL);
}

static void on_grace(uv_timer_t *t)
{
    httpd_t *h = t->data;
    while (h->conns)
        conn_close(h->conns);
}

/* Stopping: listeners closed, idle connections closed, busy ones closed
 * after their reply; the rest when the grace period ends; the loop ends when
 * no connection is left. */
static void stop_step(httpd_t *h)
{
    if (!h->closing_all) {
        h->closing_all = 1;
        if (h->has_tcp) close_if_open((uv_handle_t *)&h->tcp);
        if (h->has_unix) close_if_open((uv_handle_t *)&h->unixl);
        uv_timer_init(&h->loop, &h->grace);
        h->grace.data = h;
        uv_timer_start(&h->grace, on_grace, (uint64_t)h->lim.grace_ms, 0);
    }
    for (conn_t *c = h->conns, *next; c; c = next) {
        next = c->next;
        if (!c->cur) conn_close(c); /* between requests */
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

int httpd_start(const httpd_config_t *cfg, httpd_t **out)
{
    *out = NULL;
    if (!cfg || !cfg->on_headers || !cfg->on_request || cfg->workers < 1 ||
        (cfg->tcp_fd < 0 && cfg->unix_fd < 0))
        return KP_EINVAL;
    if (cfg->cert_pem || cfg->key_pem) return KP_EINVAL; /* TLS: the next increment */
    /* libuv writes with writev(2): a client that closed would raise SIGPIPE
     * and kill the process. */
    struct sigaction old;
    if (sigaction(SIGPIPE, NULL, &old) == 0 && old.sa_handler == SIG_DFL)
        signal(SIGPIPE, SIG_IGN);
    httpd_t *h = calloc(1, sizeof *h);
    if (!h) return KP_ENOMEM;
    h->cfg = *cfg;
    h->lim = cfg->limits;
    limits_fill(&h->lim);
    h->qtail = &h->qhead;
    h->settings = (http_parser_settings){
        .on_message_begin = on_message_begin,
        .on_url = on_url,
        .on_header_field = on_header_field,
        .on_header_value = on_header_value,
        .on_headers_complete = on_headers_complete,
        .on_body = on_body,
        .on_message_complete = on_message_complete,
    };
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    pthread_cond_init(&h->done_cv, NULL);
    if (uv_loop_init(&h->loop)) {
        free(h);
        return KP_ENOMEM;
    }
    if (uv_async_init(&h->loop, &h->wake, on_wake)) {
        uv_loop_close(&h->loop);
        free(h);
        return KP_ENOMEM;
    }
    int rc = 0;
    h->wake.data = h;
    if (!rc && cfg->tcp_fd >= 0) rc = listen_on(h, cfg->tcp_fd, 0);
    if (!rc && cfg->unix_fd >= 0) rc = listen_on(h, cfg->unix_fd, 1);
    h->workers = rc ? NULL : calloc((size_t)cfg->workers, sizeof *h->workers);
    if (!rc && !h->workers) rc = KP_ENOMEM;
    if (!rc && pthread_create(&h->loop_thread, NULL, loop_run, h)) rc = KP_ENOMEM;
    if (rc) {
        /* No thread runs yet: close what was opened and run the loop dry. */
        if (h->has_tcp) close_if_open((uv_handle_t *)&h->tcp);
        if (h->has_unix) close_if_open((uv_handle_t *)&h->unixl);
        close_if_open((uv_handle_t *)&h->wake);
        uv_run(&h->loop, UV_RUN_DEFAULT);
        uv_loop_close(&h->loop);
        free(h->workers);
        free(h);
        return rc;
    }
    for (int i = 0; i < cfg->workers; i++) {
        if (pthread_create(&h->workers[i], NULL, worker_run, h)) break;
        h->nworkers++;
    }
    if (!h->nworkers) {
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
    pthread_mutex_unlock(&h->mu);
    uv_async_send(&h->wake);
    pthread_join(h->loop_thread, NULL);

    /* No loop from here on (end_loop set loop_done): what was handed back
     * for it is done with. */
    pthread_mutex_lock(&h->mu);
    h->loop_done = 1;
    httpd_req_t *list = h->ready;
    h->ready = NULL;
    for (httpd_req_t *r = list; r; r = r->ready_next) r->in_ready = 0;
    pthread_mutex_unlock(&h->mu);
    while (list) {
        httpd_req_t *r = list;
        list = r->ready_next;
        pthread_mutex_lock(&h->mu);
        int done = r->state == R_DONE;
        pthread_mutex_unlock(&h->mu);
        if (done) req_free(r);
    }
    for (int i = 0; i < h->nworkers; i++)
        pthread_join(h->workers[i], NULL);
    /* Handlers that still hold a request got on_gone(); wait for their
     * replies to end. */
    pthread_mutex_lock(&h->mu);
    while (h->live_reqs)
        pthread_cond_wait(&h->done_cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
    uv_loop_close(&h->loop);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    pthread_cond_destroy(&h->done_cv);
    free(h->workers);
    free(h);
}

/* ---- a request ---- */

const char *httpd_method(const httpd_req_t *r) { return r->method; }
const char *httpd_path(const httpd_req_t *r) { return r->path ? r->path : ""; }
const char *httpd_query(const httpd_req_t *r) { return r->query ? r->query : ""; }

const char *httpd_header(const httpd_req_t *r, const char *name)
{
    for (size_t i = 0; i < r->nhdrs; i++)
        if (!strcasecmp(r->hdrs[i].name, name)) return r->hdrs[i].value;
    return NULL;
}

const char *httpd_body(const httpd_req_t *r, size_t *len)
{
    *len = r->body.len;
    return r->body.p ? r->body.p : "";
}

int httpd_is_h2(const httpd_req_t *r)
{
    (void)r;
    return 0; /* HTTP/2 comes with TLS */
}

int httpd_is_local(const httpd_req_t *r) { return r->local; }
void httpd_set_data(httpd_req_t *r, void *data) { r->data = data; }
void *httpd_data(const httpd_req_t *r) { return r->data; }

void httpd_stats(httpd_t *h, httpd_stats_t *out)
{
    out->connections = atomic_load(&h->s_conns);
    out->h2_connections = 0;
    out->requests = atomic_load(&h->s_requests);
    pthread_mutex_lock(&h->mu);
    out->queued = h->qlen;
    pthread_mutex_unlock(&h->mu);
    out->refused = atomic_load(&h->s_refused);
    out->timeouts = atomic_load(&h->s_timeouts);
}
