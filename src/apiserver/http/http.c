/*
 * http.c -- one request's side of HTTP on libmicrohttpd: its query and
 * headers, warnings, and the replies (each request replies exactly once,
 * through api_reply_*()); an in-process request's reply is captured instead
 * (api_internal, server.c).
 *
 * Threading: a request's functions run on its connection's thread (or the
 * in-process caller's); a stream reply's `next` runs there too and may
 * block until its next piece.
 */
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "apiserver/http/http.h"
#include "apiserver/encode/protobuf.h"
#include "lib/err.h"

const char *api_query(api_req_t *r, const char *name)
{
    if (r->internal) {
        for (size_t i = 0; i < r->internal->nquery; i++)
            if (!strcmp(r->internal->names[i], name)) return r->internal->values[i];
        return NULL;
    }
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

typedef struct each {
    int (*fn)(void *arg, const char *name, const char *value);
    void *arg;
} each_t;

static enum MHD_Result on_query(void *cls, enum MHD_ValueKind kind, const char *key,
                                const char *value)
{
    (void)kind;
    const each_t *e = cls;
    return e->fn(e->arg, key, value) ? MHD_NO : MHD_YES;
}

void api_query_each(api_req_t *r, int (*fn)(void *arg, const char *name, const char *value),
                    void *arg)
{
    if (r->internal) {
        for (size_t i = 0; i < r->internal->nquery; i++)
            if (fn(arg, r->internal->names[i], r->internal->values[i])) return;
        return;
    }
    each_t e = {fn, arg};
    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, on_query, &e);
}

const char *api_header(api_req_t *r, const char *name)
{
    if (r->internal) {
        if (!strcasecmp(name, "Content-Type")) return "application/json";
        if (!strcasecmp(name, "User-Agent")) return r->internal->manager;
        return NULL;
    }
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
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
    if (r->warnings && json_array_size(r->warnings) < 64)
        json_array_append_new(r->warnings, json_string(text));
}

/* RFC 7234 warn-text: a quoted string with " and \ escaped. */
static void add_warnings(api_req_t *r, struct MHD_Response *resp)
{
    size_t i;
    json_t *w;
    json_array_foreach(r->warnings, i, w) {
        char hdr[2200] = "299 - \"";
        size_t n = strlen(hdr);
        for (const char *p = json_string_value(w); *p && n < sizeof hdr - 3; p++) {
            if (*p == '"' || *p == '\\') hdr[n++] = '\\';
            hdr[n++] = *p;
        }
        hdr[n++] = '"';
        hdr[n] = '\0';
        MHD_add_response_header(resp, "Warning", hdr);
    }
}

/* `hdrs`: NULL or name, value pairs ending with a NULL name; a
 * Cache-Control among them replaces the default. */
static int queue_with(api_req_t *r, int code, struct MHD_Response *resp, const char *ctype,
                      const char *const *hdrs)
{
    if (!resp) return KP_ENOMEM;
    add_warnings(r, resp);
    if (ctype) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    int cache_control = 0;
    for (size_t i = 0; hdrs && hdrs[i]; i += 2) {
        MHD_add_response_header(resp, hdrs[i], hdrs[i + 1]);
        if (!strcasecmp(hdrs[i], "Cache-Control")) cache_control = 1;
    }
    if (!cache_control) MHD_add_response_header(resp, "Cache-Control", "no-cache, private");
    if (code == 429) MHD_add_response_header(resp, "Retry-After", "1");
    enum MHD_Result ok = MHD_queue_response(r->conn, (unsigned)code, resp);
    MHD_destroy_response(resp);
    r->replied = 1;
    r->code = code;
    return ok == MHD_YES ? 0 : KP_EIO;
}

static int queue(api_req_t *r, int code, struct MHD_Response *resp, const char *ctype)
{
    return queue_with(r, code, resp, ctype, NULL);
}

int api_reply_bytes(api_req_t *r, int code, const char *ctype, const char *body, size_t len)
{
    if (r->internal) return capture(r, code, body, len);
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    return queue(r, code, resp, ctype);
}

int api_reply_take_with(api_req_t *r, int code, const char *ctype, char *body, size_t len,
                        const char *const *hdrs)
{
    if (r->internal) {
        int rc = capture(r, code, body, len);
        free(body);
        return rc;
    }
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!resp) free(body);
    return queue_with(r, code, resp, ctype, hdrs);
}

int api_reply_take(api_req_t *r, int code, const char *ctype, char *body, size_t len)
{
    return api_reply_take_with(r, code, ctype, body, len, NULL);
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
    if (r->internal) return api_reply_take(r, code, "application/json", text, strlen(text));
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (!resp) free(text);
    return queue(r, code, resp, "application/json");
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

typedef struct stream {
    int (*next)(void *arg, buf_t *out);
    void (*free_fn)(void *arg);
    void *arg;
    buf_t pending;
    size_t off;
    int done;
} stream_t;

static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
    (void)pos;
    stream_t *st = cls;
    while (st->off == st->pending.len) {
        if (st->done) return MHD_CONTENT_READER_END_OF_STREAM;
        buf_reset(&st->pending);
        st->off = 0;
        if (st->next(st->arg, &st->pending) || st->pending.len == 0) st->done = 1;
    }
    size_t n = st->pending.len - st->off;
    if (n > max) n = max;
    memcpy(out, st->pending.p + st->off, n);
    st->off += n;
    return (ssize_t)n;
}

static void stream_free(void *cls)
{
    stream_t *st = cls;
    if (st->free_fn) st->free_fn(st->arg);
    buf_free(&st->pending);
    free(st);
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
    stream_t *st = calloc(1, sizeof *st);
    if (!st) {
        if (free_fn) free_fn(arg);
        return api_reply_status(r, 500, "InternalError", NULL, "out of memory");
    }
    st->next = next;
    st->free_fn = free_fn;
    st->arg = arg;
    buf_init(&st->pending, 64u << 20);
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32 * 1024, stream_read, st,
                                          stream_free);
    if (!resp) {
        stream_free(st);
        return api_reply_status(r, 500, "InternalError", NULL, "out of memory");
    }
    /* The idle timeout is not for streams: libmicrohttpd counts the time its
     * thread waits in `next` for the next event as silence, and would end a
     * quiet watch when its next event came. A stream ends by itself (a
     * watch at its timeoutSeconds or when it falls behind). */
    MHD_set_connection_option(r->conn, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
    return queue(r, 200, resp, ctype);
}

int api_req_local(api_req_t *r)
{
    if (r->internal) return 1; /* in-process */
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_DAEMON);
    pthread_mutex_lock(&r->srv->mu);
    int local = ci && r->srv->unix_daemon && ci->daemon == r->srv->unix_daemon;
    pthread_mutex_unlock(&r->srv->mu);
    return local;
}

int api_req_socket(api_req_t *r)
{
    /* libmicrohttpd closes it after the response's free callback (in
     * MHD_connection_close_, on the connection's thread). */
    if (!r->conn) return -1; /* in-process: none */
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

