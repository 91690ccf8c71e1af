/*
 * http.c -- one request's side of HTTP on the engine (src/httpd): its query
 * and headers, warnings, and the replies (each request replies exactly
 * once, through api_reply_*()); an in-process request's reply is captured
 * instead (api_internal, server.c).
 *
 * Threading: a request's functions run on the worker that handles it (or
 * the in-process caller's thread). A streaming reply is the engine's pulled
 * stream (httpd_stream_pull): its `next` runs on a worker for each piece,
 * and a stream with nothing to send, or whose client is behind, waits
 * without a thread. A client behind for API_STREAM_STALL_S ends it, as do
 * the client going and its producer giving up on the client
 * (api_req_abort).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "apiserver/http/http.h"
#include "apiserver/encode/protobuf.h"
#include "httpd/httpd.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"

#define API_STREAM_STALL_S 60        /* a stream's client reads nothing: ended after */
#define API_WARNINGS_MAX 64           /* Warning headers per reply (as Kubernetes caps them) */

/* ---- the query (decoded by the engine) ---- */

const char *api_query(api_req_t *r, const char *name)
{
    if (r->internal) {
        for (size_t i = 0; i < r->internal->nquery; i++)
            if (!strcmp(r->internal->names[i], name)) return r->internal->values[i];
        return NULL;
    }
    return httpd_arg(r->hr, name);
}

void api_query_each(api_req_t *r, int (*fn)(void *arg, const char *name, const char *value),
                    void *arg)
{
    if (r->internal) {
        for (size_t i = 0; i < r->internal->nquery; i++)
            if (fn(arg, r->internal->names[i], r->internal->values[i])) return;
        return;
    }
    for (size_t i = 0, n = httpd_nargs(r->hr); i < n; i++) {
        const char *name, *value;
        httpd_arg_at(r->hr, i, &name, &value);
        if (fn(arg, name, value)) return;
    }
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

const char *api_header_at(api_req_t *r, size_t i, const char **name)
{
    return r->internal ? NULL : httpd_header_at(r->hr, i, name);
}

/* An in-process request's reply: kept, not sent. */
static int capture(api_req_t *r, int code, const char *body, size_t len)
{
    r->replied = 1;
    r->code = code;
    buf_reset(&r->internal->out);
    if (r->internal->drop_body) return 0;
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

/* The one door of every reply (but streams): to the audit log (`doc`: the
 * Status or object being replied, NULL for bytes), then to the engine. */
static int send_reply(api_req_t *r, int code, const char *ctype, char *body, size_t len,
                      const char *const *hdrs, const json_t *doc)
{
    if (r->internal) {
        int rc = capture(r, code, body, len);
        free(body);
        return rc;
    }
    if (!body && !(body = strdup(""))) return KP_ENOMEM;
    if (r->audit && r->srv->on_reply) r->srv->on_reply(r, code, ctype, doc, body, len, 0);
    heads_t h;
    heads_build(&h, r, code, ctype, hdrs);
    r->replied = 1;
    r->code = code;
    int rc = httpd_reply(r->hr, code, h.v, body, len);
    heads_free(&h);
    return rc;
}

int api_reply_take_with(api_req_t *r, int code, const char *ctype, char *body, size_t len,
                        const char *const *hdrs)
{
    return send_reply(r, code, ctype, body, len, hdrs, NULL);
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
            size_t len;
            char *body = buf_detach(&b, &len);
            int rc = send_reply(r, code, API_PB_MEDIA_TYPE, body, len, NULL, doc);
            json_decref(doc);
            return rc;
        }
        buf_free(&b);
    }
    char *text = json_dumps(doc, JSON_COMPACT);
    if (!text) {
        json_decref(doc);
        return api_reply_status(r, 500, "InternalError", NULL, "out of memory");
    }
    int rc = send_reply(r, code, "application/json", text, strlen(text), NULL, doc);
    json_decref(doc);
    return rc;
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

/* ---- streaming (the engine's pulled streams) ---- */

typedef struct stream {
    api_req_t *r;
    int (*next)(void *arg, buf_t *out, int *wait_ms);
    void (*free_fn)(void *arg);
    void *arg;
} stream_t;

static int stream_next(void *arg, buf_t *out, int *wait_ms)
{
    stream_t *st = arg;
    return st->next(st->arg, out, wait_ms);
}

/* Just before the stream's end (httpd_stream_pull): the producer's state
 * goes (a watch's watcher is closed: no api_req_abort() after this), then
 * the stream's reference to the request. */
static void stream_done(void *arg)
{
    stream_t *st = arg;
    api_req_t *r = st->r;
    if (st->free_fn) st->free_fn(st->arg);
    __atomic_store_n(&r->streaming, 0, __ATOMIC_RELEASE);
    free(st);
    api_req_release(r);
}

int api_req_gone(api_req_t *r) { return r->hr && httpd_gone(r->hr); }

void api_req_abort(api_req_t *r)
{
    if (r->hr && __atomic_load_n(&r->streaming, __ATOMIC_ACQUIRE)) httpd_pull_cancel(r->hr);
}

void api_req_kick(api_req_t *r)
{
    if (r->hr && __atomic_load_n(&r->streaming, __ATOMIC_ACQUIRE)) httpd_pull_kick(r->hr);
}

int api_reply_stream(api_req_t *r, int (*next)(void *arg, buf_t *out, int *wait_ms), void *arg,
                     void (*free_fn)(void *arg))
{
    return api_reply_stream_as(r, "application/json", next, arg, free_fn);
}

int api_reply_stream_as(api_req_t *r, const char *ctype,
                        int (*next)(void *arg, buf_t *out, int *wait_ms), void *arg,
                        void (*free_fn)(void *arg))
{
    if (r->internal) {
        if (free_fn) free_fn(arg);
        return api_reply_status(r, 500, "InternalError", NULL,
                                "streams are not served to in-process requests");
    }
    stream_t *st = calloc(1, sizeof *st);
    if (!st) {
        if (free_fn) free_fn(arg);
        return api_reply_status(r, 500, "InternalError", NULL, "out of memory");
    }
    *st = (stream_t){.r = r, .next = next, .free_fn = free_fn, .arg = arg};
    if (r->audit && r->srv->on_reply) r->srv->on_reply(r, 200, ctype, NULL, NULL, 0, 1);
    heads_t h;
    heads_build(&h, r, 200, ctype, NULL);
    __atomic_add_fetch(&r->refs, 1, __ATOMIC_ACQ_REL); /* the stream's, until stream_done */
    __atomic_store_n(&r->streaming, 1, __ATOMIC_RELEASE);
    r->replied = 1;
    r->code = 200;
    int rc = httpd_stream_pull(r->hr, 200, h.v, API_STREAM_STALL_S * 1000, stream_next,
                               stream_done, st);
    heads_free(&h);
    if (rc) {
        __atomic_store_n(&r->streaming, 0, __ATOMIC_RELEASE);
        __atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL);
        r->replied = 0;
        free(st);
        if (free_fn) free_fn(arg);
        return api_reply_status(r, 500, "InternalError", NULL, "out of memory");
    }
    return 0;
}

int api_set_reply_header(api_req_t *r, const char *name, const char *value)
{
    return r->internal ? 0 : httpd_set_reply_header(r->hr, name, value);
}

const char *api_req_target(api_req_t *r)
{
    return r->internal ? r->path : httpd_target(r->hr);
}

const char *api_req_peer(api_req_t *r)
{
    return r->internal ? "" : httpd_peer(r->hr);
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
    free(r->path_buf);
    free(r->user_owned);
    free(r);
}
