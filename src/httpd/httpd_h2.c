/*
 * httpd_h2.c -- HTTP/2 on a connection (nghttp2), for httpd.c.
 *
 * nghttp2 does the framing, HPACK, flow control, stream states, SETTINGS
 * and the flood defences (PING and SETTINGS floods, CONTINUATION floods,
 * RST_STREAM rate: the rapid-reset fix of 1.52.0-1+deb12u1). This file maps
 * its streams to httpd requests:
 *   - a stream's header block becomes a request (pseudo-headers to method,
 *     target and Host); the application's on_headers() runs when it is
 *     complete; the body collects up to what on_headers() allowed; END_STREAM
 *     sends the request to the workers;
 *   - a reply's head (serialized by the worker, httpd__h2_head) is submitted
 *     on the loop; its data goes out through a data provider that takes from
 *     the request's outbox as the stream's window allows and defers when
 *     the outbox is empty (resumed by the next hand-back);
 *   - a stream that closes (RST_STREAM, or the connection) detaches its
 *     request: the handler hears on_gone().
 * A refusal (431, 413, 400, or the application's answer in on_headers()) is
 * a response on the stream. If the client is still sending its body, up to
 * 256 KiB more of it is read and dropped for up to 1 s (a small body then
 * ends normally: curl 7.88 drops a response that RST_STREAM follows), then
 * RST_STREAM(NO_ERROR) stops the upload, as Go's server does at once.
 *
 * Limits: SETTINGS_MAX_CONCURRENT_STREAMS = max_streams (nghttp2 refuses
 * streams beyond it), SETTINGS_MAX_HEADER_LIST_SIZE = header_bytes (431
 * beyond it), each stream's receive window 256 KiB (kube-apiserver's upload
 * buffer per stream), the connection's that times max_streams.
 */
#include "httpd/httpd_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "lib/err.h"

/* ---- the response head (any thread) ---- */

static int head_pair(buf_t *b, const char *n, size_t nlen, const char *v, size_t vlen)
{
    size_t mark = b->len;
    int rc = buf_append(b, n, nlen);
    if (!rc) rc = buf_append(b, "", 1);
    if (!rc) rc = buf_append(b, v, vlen);
    if (!rc) rc = buf_append(b, "", 1);
    if (rc) b->len = mark;
    return rc;
}

int httpd__h2_head(buf_t *b, int status, const char *const *headers, const char *const *more,
                   long long length)
{
    static const char *const engine[] = {"connection",
                                         "keep-alive",
                                         "proxy-connection",
                                         "transfer-encoding",
                                         "upgrade",
                                         "content-length",
                                         "date",
                                         NULL};
    char num[32], date[64], name[128];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    int rc = head_pair(b, ":status", 7, num, (size_t)snprintf(num, sizeof num, "%d", status));
    if (!rc) rc = head_pair(b, "date", 4, date, strlen(date));
    for (int list = 0; list < 2; list++) {
        const char *const *hs = list ? more : headers;
        for (size_t i = 0; !rc && hs && hs[i]; i += 2) {
            const char *n = hs[i], *v = hs[i + 1] ? hs[i + 1] : "";
            size_t nlen = strlen(n);
            if (!nlen || nlen >= sizeof name || strpbrk(n, "\r\n: ") || strpbrk(v, "\r\n") ||
                (list && httpd__head_names(headers, n)))
                continue;
            for (size_t k = 0; k <= nlen; k++) /* HTTP/2 field names are lower case */
                name[k] = (char)tolower((unsigned char)n[k]);
            int skip = 0;
            for (size_t k = 0; engine[k] && !skip; k++)
                skip = !strcmp(name, engine[k]);
            if (!skip) rc = head_pair(b, name, nlen, v, strlen(v));
        }
    }
    if (!rc && length >= 0)
        rc = head_pair(b, "content-length", 14, num,
                       (size_t)snprintf(num, sizeof num, "%lld", length));
    return rc ? KP_ENOMEM : 0;
}

/* ---- streams (loop thread) ---- */

static void timer_update(conn_t *c)
{
    httpd_t *h = c->h;
    uint64_t now = uv_now(&h->loop), deadline;
    if (c->writing) {
        deadline = c->wprog_at + (uint64_t)h->lim.write_timeout_ms;
    } else if (c->nstreams) {
        deadline = 0; /* unless a refused body is being dropped */
        for (httpd_req_t *r = c->streams; r; r = r->snext)
            if (r->drain_at && (!deadline || r->drain_at + HTTPD_DRAIN_MS < deadline))
                deadline = r->drain_at + HTTPD_DRAIN_MS;
    } else
        deadline =
            c->idle_at + (uint64_t)(c->h2_seen ? httpd__idle_ms(c) : h->lim.header_timeout_ms);
    httpd__timer_set(c, !deadline ? 0 : deadline > now ? (int)(deadline - now) : 1);
}

static void unlink_stream(conn_t *c, httpd_req_t *r)
{
    *r->sprev = r->snext;
    if (r->snext) r->snext->sprev = r->sprev;
    r->snext = NULL;
    r->sprev = NULL;
    if (!--c->nstreams) c->idle_at = uv_now(&c->h->loop);
}

/* Answer r with `status` now; its body (if any is still coming) is dropped. */
static void refuse(conn_t *c, httpd_req_t *r, int status)
{
    r->early = 1;
    atomic_fetch_add(&c->h->s_refused, 1);
    if (httpd__refuse_text(r, status))
        nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, r->stream_id, NGHTTP2_INTERNAL_ERROR);
}

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *f, void *u)
{
    conn_t *c = u;
    if (c->closing) return NGHTTP2_ERR_CALLBACK_FAILURE;
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    httpd_req_t *r = httpd__req_new(c);
    if (!r) return NGHTTP2_ERR_CALLBACK_FAILURE;
    r->h2 = 1;
    r->stream_id = f->hd.stream_id;
    r->snext = c->streams;
    if (r->snext) r->snext->sprev = &r->snext;
    r->sprev = &c->streams;
    c->streams = r;
    c->nstreams++;
    if (nghttp2_session_set_stream_user_data(s, f->hd.stream_id, r)) {
        unlink_stream(c, r);
        httpd__req_free(r);
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    return 0;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t nlen,
                     const uint8_t *value, size_t vlen, uint8_t flags, void *u)
{
    (void)flags;
    conn_t *c = u;
    if (c->closing) return NGHTTP2_ERR_CALLBACK_FAILURE;
    httpd_req_t *r = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
    if (!r || f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0; /* trailers: not used */
    const char *n = (const char *)name, *v = (const char *)value;
    r->hdr_bytes += nlen + vlen + 32; /* as SETTINGS_MAX_HEADER_LIST_SIZE counts */
    if (r->bad) return 0;
    if (r->hdr_bytes > c->h->lim.header_bytes) {
        r->bad = 431;
        return 0;
    }
    if (nlen && n[0] == ':') { /* nghttp2 checked the pseudo-headers' rules */
        if (nlen == 7 && !memcmp(n, ":method", 7)) {
            if (vlen >= sizeof r->method) {
                r->bad = 400;
                return 0;
            }
            memcpy(r->method, v, vlen);
            r->method[vlen] = '\0';
        } else if (nlen == 5 && !memcmp(n, ":path", 5)) {
            if (buf_append(&r->target, v, vlen)) r->bad = 414;
        } else if (nlen == 10 && !memcmp(n, ":authority", 10)) {
            int rc = httpd__add_header(r, "host", 4, v, vlen);
            if (rc) r->bad = rc == KP_ENOMEM ? 500 : 431;
        }
        return 0;
    }
    int rc = httpd__add_header(r, n, nlen, v, vlen);
    if (rc) r->bad = rc == KP_ENOMEM ? 500 : 431;
    return 0;
}

/* r's header block is complete. */
static void headers_done(conn_t *c, httpd_req_t *r)
{
    httpd_t *h = c->h;
    c->h2_seen = 1;
    if (r->bad) {
        refuse(c, r, r->bad);
        return;
    }
    int rc = r->method[0] && r->target.len ? httpd__split_target(r) : KP_EINVAL;
    if (rc) {
        refuse(c, r, rc == KP_ENOMEM ? 500 : 400);
        return;
    }
    size_t body_max = 0;
    if (h->cfg.on_headers(h->cfg.arg, r, &body_max) == HTTPD_REPLIED) {
        r->early = 1;
        return;
    }
    r->taken = 1;
    const char *cl = httpd_header(r, "content-length");
    if (!r->discard && cl && strtoull(cl, NULL, 10) > body_max) {
        refuse(c, r, 413);
        return;
    }
    r->body.max = body_max;
    r->body_at = uv_now(&h->loop);
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *f, void *u)
{
    conn_t *c = u;
    if (c->closing) return NGHTTP2_ERR_CALLBACK_FAILURE;
    if (f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA) return 0;
    httpd_req_t *r = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
    if (!r) return 0;
    if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST) headers_done(c, r);
    if (!c->closing && (f->hd.flags & NGHTTP2_FLAG_END_STREAM) && !r->early)
        httpd__dispatch(r); /* the body is complete */
    return c->closing ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
}

/* r was answered before its body ended: drop what comes, then reset. */
static void drain_start(conn_t *c, httpd_req_t *r)
{
    if (!r->drain_at) r->drain_at = uv_now(&c->h->loop);
}

int httpd__h2_timer(conn_t *c)
{
    if (!c->h2 || c->writing) return 0;
    uint64_t now = uv_now(&c->h->loop);
    int reset = 0;
    for (httpd_req_t *r = c->streams; r; r = r->snext) {
        if (!r->drain_at || now < r->drain_at + HTTPD_DRAIN_MS) continue;
        r->drain_at = 0;
        nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, r->stream_id, NGHTTP2_NO_ERROR);
        reset = 1;
    }
    if (reset) httpd__h2_flush(c);
    return reset;
}

static int on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
                   void *u)
{
    (void)flags;
    conn_t *c = u;
    if (c->closing) return NGHTTP2_ERR_CALLBACK_FAILURE;
    httpd_req_t *r = nghttp2_session_get_stream_user_data(s, id);
    if (r && r->drain_at && (r->dropped += len) > HTTPD_DRAIN_BYTES) {
        r->drain_at = 0; /* enough: stop the upload */
        nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, id, NGHTTP2_NO_ERROR);
        return 0;
    }
    if (!r || r->early) return 0;          /* dropped (the window is still given back) */
    if (httpd__body_late(c, r->body_at)) { /* a body that trickles: cut off */
        r->early = 1;
        atomic_fetch_add(&c->h->s_timeouts, 1);
        nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
        return 0;
    }
    if (r->discard) return 0;
    int rc = buf_append(&r->body, data, len);
    if (rc) refuse(c, r, rc == KP_ETOOLARGE ? 413 : 500);
    return 0;
}

static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t err, void *u)
{
    (void)err;
    conn_t *c = u;
    httpd_req_t *r = nghttp2_session_get_stream_user_data(s, id);
    if (!r) return 0;
    unlink_stream(c, r);
    httpd__req_detach(r);
    return 0;
}

/* The data provider: what the outbox holds, as far as the window goes. */
static ssize_t provide(nghttp2_session *s, int32_t id, uint8_t *out, size_t max, uint32_t *flags,
                       nghttp2_data_source *src, void *u)
{
    conn_t *c = u;
    httpd_t *h = c->h;
    httpd_req_t *r = src->ptr;
    if (c->closing) return NGHTTP2_ERR_CALLBACK_FAILURE;
    pthread_mutex_lock(&h->mu);
    size_t n = r->out.len - r->out_off;
    if (n > max) n = max;
    if (n) memcpy(out, r->out.p + r->out_off, n);
    r->out_off += n;
    r->unsent -= n;
    if (r->out_off == r->out.len) {
        buf_reset(&r->out);
        r->out_off = 0;
    }
    /* An aborted stream is not ended here: drain_ready() resets it (CANCEL),
     * as abort queued it there; until then it waits. */
    int eof = !r->out.len && r->state == R_DONE && !r->aborted;
    if (!n && !eof) r->deferred = 1;
    httpd__drain_locked(h, r);
    pthread_mutex_unlock(&h->mu);
    if (!n && !eof) return NGHTTP2_ERR_DEFERRED;
    if (eof) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        if (!nghttp2_session_get_stream_remote_close(s, id)) drain_start(c, r); /* answered early */
    }
    return (ssize_t)n;
}

/* Submit r's response head (and its data provider). */
static void submit(conn_t *c, httpd_req_t *r)
{
    httpd_t *h = c->h;
    pthread_mutex_lock(&h->mu);
    size_t hlen = 0;
    char *hb = r->head.len ? buf_detach(&r->head, &hlen) : NULL;
    /* An aborted stream is never ended cleanly: it gets its data provider,
     * which waits, and drain_ready() resets it (abort can come between the
     * loop's look at r->aborted there and this). */
    int bare = r->no_body || (r->state == R_DONE && r->out.len == r->out_off && !r->aborted);
    pthread_mutex_unlock(&h->mu);
    if (!hb) return; /* nothing to submit yet */
    size_t npairs = 0;
    for (size_t i = 0; i < hlen; i++)
        npairs += !hb[i];
    npairs /= 2;
    nghttp2_nv *nv = calloc(npairs ? npairs : 1, sizeof *nv);
    int rv = nv ? 0 : NGHTTP2_ERR_NOMEM;
    char *p = hb;
    for (size_t i = 0; nv && i < npairs; i++) {
        size_t nlen = strlen(p);
        char *v = p + nlen + 1;
        size_t vlen = strlen(v);
        nv[i] = (nghttp2_nv){(uint8_t *)p, (uint8_t *)v, nlen, vlen, NGHTTP2_NV_FLAG_NONE};
        p = v + vlen + 1;
    }
    nghttp2_data_provider dp = {.source.ptr = r, .read_callback = provide};
    r->submitted = 1;
    if (!rv) rv = nghttp2_submit_response(c->h2, r->stream_id, nv, npairs, bare ? NULL : &dp);
    free(nv);
    free(hb);
    if (rv)
        nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, r->stream_id, NGHTTP2_INTERNAL_ERROR);
    else if (bare && !nghttp2_session_get_stream_remote_close(c->h2, r->stream_id))
        drain_start(c, r); /* answered early */
}

void httpd__h2_ready(conn_t *c, httpd_req_t *r)
{
    if (!r->submitted) {
        submit(c, r);
    } else if (r->deferred) {
        r->deferred = 0;
        nghttp2_session_resume_data(c->h2, r->stream_id);
    }
    httpd__h2_dirty(c);
}

/* ---- the session ---- */

int httpd__h2_global(httpd_t *h)
{
    if (nghttp2_session_callbacks_new(&h->h2cb)) return KP_ENOMEM;
    nghttp2_session_callbacks_set_on_begin_headers_callback(h->h2cb, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(h->h2cb, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(h->h2cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(h->h2cb, on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(h->h2cb, on_stream_close);
    if (nghttp2_option_new(&h->h2opt)) return KP_ENOMEM;
    /* nghttp2's own rapid-reset defaults, stated: a burst of 1,000 resets,
     * then 33 a second; past it the connection ends. */
    nghttp2_option_set_stream_reset_rate_limit(h->h2opt, 1000, 33);
    /* A value with a space at its end ("Bearer " from curl -H) is the
     * application's to judge, as Go's server lets it through: RFC 9113's
     * check would reset the stream instead of the 401 Kubernetes gives. */
    nghttp2_option_set_no_rfc9113_leading_and_trailing_ws_validation(h->h2opt, 1);
    return 0;
}

void httpd__h2_global_free(httpd_t *h)
{
    if (h->h2cb) nghttp2_session_callbacks_del(h->h2cb);
    if (h->h2opt) nghttp2_option_del(h->h2opt);
    h->h2cb = NULL;
    h->h2opt = NULL;
}

int httpd__h2_start(conn_t *c)
{
    httpd_t *h = c->h;
    c->proto = P_H2;
    atomic_fetch_add(&h->s_h2conns, 1);
    atomic_fetch_add(&h->s_h2accepted, 1);
    if (nghttp2_session_server_new2(&c->h2, h->h2cb, c, h->h2opt)) {
        c->h2 = NULL;
        return KP_ENOMEM;
    }
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, (uint32_t)h->lim.max_streams},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, HTTPD_H2_STREAM_WINDOW},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, (uint32_t)h->lim.header_bytes},
    };
    uint64_t win = (uint64_t)HTTPD_H2_STREAM_WINDOW * h->lim.max_streams;
    if (win > NGHTTP2_MAX_WINDOW_SIZE) win = NGHTTP2_MAX_WINDOW_SIZE;
    if (nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, iv, sizeof iv / sizeof iv[0]) ||
        nghttp2_session_set_local_window_size(c->h2, NGHTTP2_FLAG_NONE, 0, (int32_t)win))
        return KP_ENOMEM;
    return 0;
}

void httpd__h2_input(conn_t *c, const char *data, size_t n)
{
    ssize_t rv = nghttp2_session_mem_recv(c->h2, (const uint8_t *)data, n);
    if (c->closing) return;
    if (rv < 0) { /* not HTTP/2, a flood, or out of memory */
        atomic_fetch_add(&c->h->s_refused, 1);
        httpd__conn_close(c);
        return;
    }
    httpd__h2_flush(c);
}

void httpd__h2_flush(conn_t *c)
{
    if (c->closing || !c->h2 || c->draining) return;
    buf_t stage;
    buf_init(&stage, SIZE_MAX);
    while (c->writing + stage.len < HTTPD_WRITE_HIGH) {
        const uint8_t *d;
        ssize_t len = nghttp2_session_mem_send(c->h2, &d);
        if (len < 0 || c->closing || (len > 0 && buf_append(&stage, d, (size_t)len))) {
            buf_free(&stage);
            httpd__conn_close(c);
            return;
        }
        if (!len) break;
    }
    if (stage.len) {
        size_t n = 0;
        char *bytes = buf_detach(&stage, &n);
        httpd__send(c, NULL, bytes, n);
        if (c->closing) return;
    }
    buf_free(&stage);
    int want_read = nghttp2_session_want_read(c->h2);
    if (!want_read && !nghttp2_session_want_write(c->h2) && !c->writing) {
        httpd__conn_linger(c); /* GOAWAY given or taken, and every stream done */
        return;
    }
    httpd__set_reading(c, want_read && c->writing < HTTPD_WRITE_HIGH);
    timer_update(c);
}

void httpd__h2_dirty(conn_t *c)
{
    if (c->dirty) return;
    c->dirty = 1;
    c->dirty_next = c->h->dirty;
    c->h->dirty = c;
}

void httpd__h2_flush_dirty(httpd_t *h)
{
    while (h->dirty) {
        conn_t *c = h->dirty;
        h->dirty = c->dirty_next;
        c->dirty = 0;
        c->dirty_next = NULL;
        httpd__h2_flush(c);
    }
}

void httpd__h2_close(conn_t *c)
{
    while (c->streams) {
        httpd_req_t *r = c->streams;
        if (c->h2) nghttp2_session_set_stream_user_data(c->h2, r->stream_id, NULL);
        unlink_stream(c, r);
        httpd__req_detach(r);
    }
    /* The session itself goes with the connection's memory (on_closed): this
     * may run inside one of its callbacks. */
}

void httpd__h2_goaway(conn_t *c)
{
    if (!c->h2) return;
    nghttp2_submit_goaway(c->h2, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(c->h2),
                          NGHTTP2_NO_ERROR, NULL, 0);
    httpd__h2_dirty(c);
}
