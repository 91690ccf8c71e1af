/*
 * http.c -- one request's side of HTTP on the engine (src/httpd): its query
 * and headers, warnings, and the replies (each request replies exactly
 * once, through api_reply_*()); an in-process request's reply is captured
 * instead (api_internal, server.c).
 *
 * Threading: a request's functions run on the worker that handles it (or
 * the in-process caller's thread). A streaming reply gets a thread of its
 * own (stream_run): its `next` may block until the next piece, which it
 * hands to the engine without waiting for the socket; when the client is
 * slower than the stream, the thread waits (on_drain) up to
 * API_STREAM_STALL_S, and ends the stream after that or when the client
 * goes (on_gone).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "apiserver/http/http.h"
#include "apiserver/encode/protobuf.h"
#include "httpd/httpd.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"

#define API_STREAM_STALL_S 60        /* a stream's client reads nothing: ended after */
#define API_STREAM_PIECE (API_STREAM_BUDGET / 4) /* the most handed to the engine at once */
#define API_WARNINGS_MAX 64           /* Warning headers per reply (as Kubernetes caps them) */

/* ---- the query ---- */

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    c = (char)(c | 32);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A query component decoded ('+' is a space, %XX a byte), malloc'd. */
static char *qdecode(const char *s, size_t n)
{
    char *out = malloc(n + 1);
    if (!out) return NULL;
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        int hi = s[i] == '%' && i + 2 < n ? hexval(s[i + 1]) : -1;
        int lo = hi >= 0 ? hexval(s[i + 2]) : -1;
        if (s[i] == '+') {
            out[j++] = ' ';
        } else if (lo >= 0) {
            out[j++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            out[j++] = s[i];
        }
    }
    out[j] = '\0';
    return out;
}

int api_req_parse_query(api_req_t *r)
{
    if (r->internal || r->qparsed) return 0;
    r->qparsed = 1;
    const char *q = httpd_query(r->hr);
    size_t cap = 1;
    for (const char *p = q; *p; p++) cap += *p == '&';
    if (!*q) return 0;
    if (!(r->qnames = calloc(cap, sizeof *r->qnames)) ||
        !(r->qvalues = calloc(cap, sizeof *r->qvalues)))
        return KP_ENOMEM;
    for (const char *p = q; *p;) {
        const char *end = strchr(p, '&');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', n);
        if (n) {
            size_t kn = eq ? (size_t)(eq - p) : n;
            char *k = qdecode(p, kn), *v = eq ? qdecode(eq + 1, n - kn - 1) : NULL;
            if (!k || (eq && !v)) {
                free(k);
                free(v);
                return KP_ENOMEM;
            }
            r->qnames[r->nq] = k;
            r->qvalues[r->nq++] = v;
        }
        p += n;
        if (*p == '&') p++;
    }
    return 0;
}

const char *api_query(api_req_t *r, const char *name)
{
    if (r->internal) {
        for (size_t i = 0; i < r->internal->nquery; i++)
            if (!strcmp(r->internal->names[i], name)) return r->internal->values[i];
        return NULL;
    }
    for (size_t i = 0; i < r->nq; i++)
        if (!strcmp(r->qnames[i], name)) return r->qvalues[i];
    return NULL;
}

void api_query_each(api_req_t *r, int (*fn)(void *arg, const char *name, const char *value),
                    void *arg)
{
    if (r->internal) {
        for (size_t i = 0; i < r->internal->nquery; i++)
            if (fn(arg, r->internal->names[i], r->internal->values[i])) return;
        return;
    }
    for (size_t i = 0; i < r->nq; i++)
        if (fn(arg, r->qnames[i], r->qvalues[i])) return;
}

const char *api_header(api_req_t *r, const char *name)
{
    if (r->internal) {
        if (!strcasecmp(name, "Content-Type")) return "application/json";
        if (!strcasecmp(name, "User-Agent")) return r->internal->manager;
        return NULL;
    }
    return httpd_header(r->hr, name);
}

/* An in-process request's reply: kept, not sent. */
static int capture(api_req_t *r, int code, const char *body, size_t len)
{
    r->replied = 1;
    r->code = code;
    buf_reset(&r->internal->out);
    return buf_append(&r->internal->out, body, len) ? KP_ENOMEM : 0;
}

void api_warn(api_req_t *r, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (!r->warnings) r->warnings = json_array();
    /* Kubernetes caps warnings per request too; a flood helps nobody. */
    if (r->warnings && json_array_size(r->warnings) < API_WARNINGS_MAX)
        json_array_append_new(r->warnings, json_string(text));
}

/* ---- a reply's headers ---- */

typedef struct heads {
    const char *v[2 * (API_WARNINGS_MAX + 16) + 1];
    size_t n;
    char *warn[API_WARNINGS_MAX]; /* the Warning values, malloc'd */
    size_t nwarn;
} heads_t;

static void heads_add(heads_t *h, const char *name, const char *value)
{
    if (h->n + 2 >= sizeof h->v / sizeof h->v[0]) return;
    h->v[h->n++] = name;
    h->v[h->n++] = value;
    h->v[h->n] = NULL;
}

/* Content-Type, Cache-Control (unless `extra` has one), Retry-After on 429,
 * r's warnings as RFC 7234 warn-text (a quoted string, " and \ escaped),
 * then `extra` (NULL or name, value pairs ending with a NULL name). */
static void heads_build(heads_t *h, api_req_t *r, int code, const char *ctype,
                        const char *const *extra)
{
    h->n = h->nwarn = 0;
    h->v[0] = NULL;
    if (ctype) heads_add(h, "Content-Type", ctype);
    int cache_control = 0;
    for (size_t i = 0; extra && extra[i]; i += 2)
        if (!strcasecmp(extra[i], "Cache-Control")) cache_control = 1;
    if (!cache_control) heads_add(h, "Cache-Control", "no-cache, private");
    if (code == 429) heads_add(h, "Retry-After", "1");
    size_t i;
    json_t *w;
    json_array_foreach(r->warnings, i, w) {
        const char *t = json_string_value(w);
        size_t cap = 2 * strlen(t) + 16;
        char *v = malloc(cap);
        if (!v) break;
        size_t n = (size_t)snprintf(v, cap, "299 - \"");
        for (; *t; t++) {
            if (*t == '"' || *t == '\\') v[n++] = '\\';
            v[n++] = *t;
        }
        v[n++] = '"';
        v[n] = '\0';
        h->warn[h->nwarn++] = v;
        heads_add(h, "Warning", v);
    }
    for (size_t k = 0; extra && extra[k]; k += 2) heads_add(h, extra[k], extra[k + 1]);
}

static void heads_free(heads_t *h)
{
    for (size_t i = 0; i < h->nwarn; i++) free(h->warn[i]);
}

/* ---- replies ---- */

int api_reply_take_with(api_req_t *r, int code, const char *ctype, char *body, size_t len,
                        const char *const *hdrs)
{
    if (r->internal) {
        int rc = capture(r, code, body, len);
        free(body);
        return rc;
    }
    if (!body && !(body = strdup(""))) return KP_ENOMEM;
    heads_t h;
    heads_build(&h, r, code, ctype, hdrs);
    r->replied = 1;
    r->code = code;
    int rc = httpd_reply(r->hr, code, h.v, body, len);
    heads_free(&h);
    return rc;
}

int api_reply_take(api_req_t *r, int code, const char *ctype, char *body, size_t len)
{
    return api_reply_take_with(r, code, ctype, body, len, NULL);
}

int api_reply_bytes(api_req_t *r, int code, const char *ctype, const char *body, size_t len)
{
    if (r->internal) return capture(r, code, body, len);
    char *copy = malloc(len + 1);
    if (!copy) return KP_ENOMEM;
    memcpy(copy, body, len);
    return api_reply_take(r, code, ctype, copy, len);
}

int api_reply_json(api_req_t *r, int code, json_t *doc)
{
    if (!doc) return api_reply_status(r, 500, "InternalError", NULL, "out of memory");
    if (api_pb_accepts(api_header(r, "Accept"))) {
        /* client-go's typed clients ask for protobuf first; a kind without
         * a message (a CRD's, a Table) is answered in JSON, their second
         * choice. */
        buf_t b;
        buf_init(&b, API_PB_REPLY_MAX);
        if (!api_pb_encode(doc, &b)) {
            json_decref(doc);
            size_t len;
            char *body = buf_detach(&b, &len);
            return api_reply_take(r, code, API_PB_MEDIA_TYPE, body, len);
        }
        buf_free(&b);
    }
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    if (!text) return api_reply_status(r, 500, "InternalError", NULL, "out of memory");
    return api_reply_take(r, code, "application/json", text, strlen(text));
}

static int reply_status_v(api_req_t *r, int code, const char *reason, const json_t *details,
                          const char *fmt, va_list ap)
{
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    json_t *st = api_status_new(code, reason, msg, details);
    return api_reply_json(r, code, st);
}

int api_reply_status(api_req_t *r, int code, const char *reason, const json_t *details,
                     const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = reply_status_v(r, code, reason, details, fmt, ap);
    va_end(ap);
    return rc;
}

int api_reply_error(api_req_t *r, int rc, const json_t *details, const char *fmt, ...)
{
    const char *reason, *fixed = api_status_message(rc);
    int code = api_status_code(rc, &reason);
    if (fixed) return api_reply_status(r, code, reason, (json_t *)details, "%s", fixed);
    va_list ap;
    va_start(ap, fmt);
    int out = reply_status_v(r, code, reason, details, fmt, ap);
    va_end(ap);
    return out;
}

/* ---- streaming ---- */

struct api_stream {
    api_req_t *r;
    int (*next)(void *arg, buf_t *out);
    void (*free_fn)(void *arg);
    void *arg;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int drained; /* on_drain since the last refused write */
    int aborted; /* api_req_abort: stop waiting for the client */
};

int api_req_gone(api_req_t *r) { return __atomic_load_n(&r->gone, __ATOMIC_ACQUIRE); }

void api_req_client_gone(api_req_t *r)
{
    __atomic_store_n(&r->gone, 1, __ATOMIC_RELEASE);
    api_stream_t *st = __atomic_load_n(&r->stream, __ATOMIC_ACQUIRE);
    if (!st) return;
    pthread_mutex_lock(&st->mu);
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
}

void api_req_abort(api_req_t *r)
{
    api_stream_t *st = __atomic_load_n(&r->stream, __ATOMIC_ACQUIRE);
    if (!st) return;
    pthread_mutex_lock(&st->mu);
    st->aborted = 1;
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
}

void api_req_drained(api_req_t *r)
{
    api_stream_t *st = __atomic_load_n(&r->stream, __ATOMIC_ACQUIRE);
    if (!st) return;
    pthread_mutex_lock(&st->mu);
    st->drained = 1;
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
}

/* Hand `len` bytes to the engine, waiting while the client is behind.
 * Errors: KP_ECLOSED (gone), KP_ETIMEDOUT (stalled), KP_ENOMEM. */
static int stream_put(api_stream_t *st, const char *p, size_t len)
{
    api_req_t *r = st->r;
    while (len) {
        size_t n = len < API_STREAM_PIECE ? len : API_STREAM_PIECE;
        int64_t deadline = clock_mono_ns() + (int64_t)API_STREAM_STALL_S * 1000000000;
        int rc;
        while ((rc = httpd_stream_write(r->hr, p, n)) == KP_ETOOLARGE) {
            pthread_mutex_lock(&st->mu);
            while (!st->drained && !st->aborted && !api_req_gone(r) &&
                   clock_mono_ns() < deadline) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_sec += 1;
                pthread_cond_timedwait(&st->cv, &st->mu, &ts);
            }
            int drained = st->drained, aborted = st->aborted;
            st->drained = 0;
            pthread_mutex_unlock(&st->mu);
            if (api_req_gone(r) || aborted) return KP_ECLOSED;
            if (!drained && clock_mono_ns() >= deadline) return KP_ETIMEDOUT;
        }
        if (rc) return rc;
        p += n;
        len -= n;
    }
    return 0;
}

static void *stream_run(void *arg)
{
    api_stream_t *st = arg;
    api_req_t *r = st->r;
    log_thread_name("api-stream", NULL);
    buf_t out;
    buf_init(&out, 64u << 20);
    int stuck = 0;
    while (!api_req_gone(r)) {
        buf_reset(&out);
        if (st->next(st->arg, &out) || !out.len) break; /* the end, or an error: end it */
        if ((stuck = stream_put(st, out.p, out.len) != 0)) break;  /* stalled, or aborted */
    }
    buf_free(&out);
    pthread_mutex_lock(&st->mu);
    stuck |= st->aborted; /* its producer gave up on a client that does not read */
    pthread_mutex_unlock(&st->mu);
    /* A client that stopped reading gets no clean end (it would never read
     * it): its connection closes, or its HTTP/2 stream is reset. From here
     * on no on_gone or on_drain for r. */
    if (stuck && !api_req_gone(r))
        httpd_stream_abort(r->hr);
    else
        httpd_stream_end(r->hr);
    if (st->free_fn) st->free_fn(st->arg);
    api_req_release(r);
    return NULL;
}

int api_reply_stream(api_req_t *r, int (*next)(void *arg, buf_t *out), void *arg,
                     void (*free_fn)(void *arg))
{
    return api_reply_stream_as(r, "application/json", next, arg, free_fn);
}

int api_reply_stream_as(api_req_t *r, const char *ctype, int (*next)(void *arg, buf_t *out),
                        void *arg, void (*free_fn)(void *arg))
{
    if (r->internal) {
        if (free_fn) free_fn(arg);
        return api_reply_status(r, 500, "InternalError", NULL,
                                "streams are not served to in-process requests");
    }
    api_stream_t *st = calloc(1, sizeof *st);
    if (!st) {
        if (free_fn) free_fn(arg);
        return api_reply_status(r, 500, "InternalError", NULL, "out of memory");
    }
    *st = (api_stream_t){.r = r, .next = next, .free_fn = free_fn, .arg = arg};
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->cv, NULL);
    __atomic_store_n(&r->stream, st, __ATOMIC_RELEASE);
    heads_t h;
    heads_build(&h, r, 200, ctype, NULL);
    int rc = httpd_stream_start(r->hr, 200, h.v);
    heads_free(&h);
    if (rc) {
        __atomic_store_n(&r->stream, NULL, __ATOMIC_RELEASE);
        pthread_mutex_destroy(&st->mu);
        pthread_cond_destroy(&st->cv);
        free(st);
        if (free_fn) free_fn(arg);
        return api_reply_status(r, 500, "InternalError", NULL, "out of memory");
    }
    r->replied = 1;
    r->code = 200;
    pthread_attr_t at;
    pthread_t t;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&at, 256u << 10);
    __atomic_add_fetch(&r->refs, 1, __ATOMIC_ACQ_REL); /* the stream thread's */
    if (pthread_create(&t, &at, stream_run, st)) {
        /* no thread: the stream ends at once (its client watches again) */
        httpd_stream_end(r->hr);
        if (free_fn) free_fn(arg);
        st->free_fn = NULL;
        api_req_release(r);
    }
    pthread_attr_destroy(&at);
    return 0;
}

int api_req_local(api_req_t *r)
{
    if (r->internal) return 1; /* in-process */
    return httpd_is_local(r->hr);
}

void api_req_release(api_req_t *r)
{
    if (__atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL)) return;
    if (r->srv->req_done) r->srv->req_done(r); /* metrics, the view (server.c) */
    if (!r->body_borrowed) buf_free(&r->body);
    json_decref(r->warnings);
    for (size_t i = 0; i < r->nq; i++) {
        free(r->qnames[i]);
        free(r->qvalues[i]);
    }
    free(r->qnames);
    free(r->qvalues);
    free(r->path_buf);
    api_stream_t *st = r->stream;
    if (st) {
        pthread_mutex_destroy(&st->mu);
        pthread_cond_destroy(&st->cv);
        free(st);
    }
    free(r);
}
