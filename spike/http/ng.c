/*
 * ng.c -- the spike's nghttp2 candidate: nghttp2 1.52 (HTTP/2 framing),
 * libuv 1.44 (event loop), OpenSSL over memory BIOs (TLS, ALPN h2 +
 * http/1.1) and the joyent http_parser 2.9 (HTTP/1.1). See common.h.
 * Built with -DSPIKE_GNUTLS (the run script's "ngg"), GnuTLS 3.7 over
 * in-memory transport functions replaces OpenSSL, to tell whether the TLS
 * library kplane already serves with costs more per request in the same glue.
 *
 * None of these libraries does I/O for another, so this file is the glue:
 * a connection moves ciphertext from libuv into OpenSSL's read BIO (GnuTLS:
 * the `tin` buffer its pull function reads), feeds the plaintext to
 * http_parser or nghttp2, and takes what they produce through SSL_write and
 * the write BIO (GnuTLS: its push function fills `tout`) back out with
 * uv_write.
 *
 * Backpressure: a connection stops pulling frames from nghttp2 (and stops
 * reading) while libuv and the write BIO hold WRITE_HIGH unsent bytes. The h2
 * watch is a data provider answering NGHTTP2_ERR_DEFERRED until the timer has
 * queued an event (then nghttp2_session_resume_data), so the stream's flow
 * control window decides when bytes leave its queue; the HTTP/1.1 watch
 * writes a chunk only while the socket's write queue is below WRITE_HIGH.
 * A watch whose unsent bytes pass SPIKE_WATCH_QUEUE_MAX is ended (h2:
 * RST_STREAM INTERNAL_ERROR; HTTP/1.1: the connection is closed).
 */
#include <http_parser.h>
#include <nghttp2/nghttp2.h>
#ifdef SPIKE_GNUTLS
#include <errno.h>
#include <gnutls/gnutls.h>
#else
#include <openssl/ssl.h>
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "common.h"

#define WRITE_HIGH ((size_t)64 << 10) /* unsent bytes per connection: stop producing */
#define URL_MAX 8192

typedef struct buf {
    char *p;
    size_t len, cap;
} buf_t;

typedef struct conn conn_t;

/* A request: the HTTP/1.1 one being parsed or streamed, or an h2 stream. */
typedef struct req {
    conn_t *conn;
    struct req *next, **prev; /* conn->reqs */
    int32_t stream_id;        /* h2 only */
    int method;               /* enum http_method, -1 for others */
    int create, too_big, keep_alive, answered, status;
    buf_t path, body;
    buf_t out; /* the response body, or the watch's queue of unsent events */
    size_t out_off;
    int watch, watch_next, watch_done;
    uv_timer_t timer; /* the watch's tick; closed before the req is freed */
} req_t;

struct conn {
    uv_tcp_t tcp;
#ifdef SPIKE_GNUTLS
    gnutls_session_t ssl;
    buf_t tin, tout; /* ciphertext in from the socket (tin_off read), out to it */
    size_t tin_off;
#else
    SSL *ssl;
    BIO *rbio, *wbio; /* ciphertext in from the socket, out to it */
#endif
    enum { P_TLS, P_H1, P_H2 } proto;
    int reading, writes, closing;
    int close_when_sent; /* 1: close once the output is written; 2: close_notify queued */
    http_parser h1;
    req_t *h1_req;  /* being parsed, or a watch streaming (the parser is paused) */
    buf_t h1_rest;  /* plaintext after a watch request, parsed once the watch ends */
    nghttp2_session *h2;
    req_t *reqs;
};

typedef struct wreq {
    uv_write_t req;
    uv_buf_t buf;
    char data[];
} wreq_t;

static uv_loop_t *loop;
#ifdef SPIKE_GNUTLS
static gnutls_certificate_credentials_t creds;
static gnutls_priority_t prio;
#else
static SSL_CTX *tls;
#endif
static nghttp2_session_callbacks *h2_callbacks;
static char inbuf[65536], plain[16384], stage[32768]; /* one thread: shared scratch */
static const char too_large[] = "{\"kind\":\"Status\",\"code\":413}";

static void conn_close(conn_t *c);
static void conn_flush(conn_t *c);

static int buf_add(buf_t *b, const void *d, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) return -1;
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->len, d, n);
    b->len += n;
    return 0;
}

static int is(const buf_t *b, const char *s)
{
    return b->len == strlen(s) && !memcmp(b->p, s, b->len);
}

/* ---- requests: routing and the watch, shared by h1 and h2 ---- */

static req_t *req_new(conn_t *c, int32_t stream_id)
{
    req_t *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->conn = c;
    r->stream_id = stream_id;
    r->method = -1;
    r->next = c->reqs;
    if (c->reqs) c->reqs->prev = &r->next;
    r->prev = &c->reqs;
    c->reqs = r;
    return r;
}

static void req_freed(uv_handle_t *h) { free(h->data); }

static void req_free(req_t *r)
{
    *r->prev = r->next;
    if (r->next) r->next->prev = r->prev;
    if (r->conn->h1_req == r) r->conn->h1_req = NULL;
    free(r->path.p);
    free(r->body.p);
    free(r->out.p);
    if (r->watch)
        uv_close((uv_handle_t *)&r->timer, req_freed);
    else
        free(r);
}

static void refuse(req_t *r) /* 413: the body is past SPIKE_BODY_MAX */
{
    r->status = 413;
    r->out.len = r->out_off = 0;
    buf_add(&r->out, too_large, sizeof too_large - 1);
}

static void watch_tick(uv_timer_t *t)
{
    req_t *r = t->data;
    conn_t *c = r->conn;
    size_t len, unsent = r->out.len - r->out_off;
    if (c->proto == P_H1) unsent += uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp);
    char *ev = spike_event(r->watch_next, &len);
    if (!ev || unsent + len > SPIKE_WATCH_QUEUE_MAX || buf_add(&r->out, ev, len)) {
        free(ev); /* the client is too slow: end the stream */
        uv_timer_stop(t);
        if (c->proto == P_H1) {
            conn_close(c);
            return;
        }
        nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, r->stream_id, NGHTTP2_INTERNAL_ERROR);
    } else {
        free(ev);
        if (++r->watch_next == SPIKE_WATCH_EVENTS) {
            r->watch_done = 1;
            uv_timer_stop(t);
        }
        if (c->proto == P_H2) nghttp2_session_resume_data(c->h2, r->stream_id);
    }
    conn_flush(c);
}

/* Fills r->status and r->out, or starts a watch. */
static int route(req_t *r)
{
    size_t len;
    if (r->method == HTTP_GET && is(&r->path, SPIKE_WATCH_PATH)) {
        r->watch = 1;
        r->status = 200;
        uv_timer_init(loop, &r->timer);
        r->timer.data = r;
        return uv_timer_start(&r->timer, watch_tick, SPIKE_WATCH_EVERY_MS, SPIKE_WATCH_EVERY_MS);
    }
    if (!r->create) {
        const char *nf = spike_not_found(&len);
        r->status = 404;
        return buf_add(&r->out, nf, len);
    }
    char *out = spike_create(r->body.p ? r->body.p : "", r->body.len, &r->status, &len);
    if (!out) return -1;
    free(r->out.p);
    r->out = (buf_t){out, len, len};
    return 0;
}

/* ---- the connection: libuv <-> OpenSSL memory BIOs ---- */

#ifdef SPIKE_GNUTLS
static size_t queued(conn_t *c)
{
    return uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp) + c->tout.len;
}

static int tls_write(conn_t *c, const void *d, size_t n)
{
    const char *p = d;
    while (n) { /* a record at a time; the push into tout never blocks */
        ssize_t k = gnutls_record_send(c->ssl, p, n);
        if (k == GNUTLS_E_INTERRUPTED || k == GNUTLS_E_AGAIN) continue;
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static ssize_t tls_push(gnutls_transport_ptr_t p, const void *d, size_t n)
{
    conn_t *c = p;
    if (buf_add(&c->tout, d, n)) {
        gnutls_transport_set_errno(c->ssl, ENOMEM);
        return -1;
    }
    return (ssize_t)n;
}

static ssize_t tls_pull(gnutls_transport_ptr_t p, void *d, size_t n)
{
    conn_t *c = p;
    size_t have = c->tin.len - c->tin_off;
    if (!have) {
        gnutls_transport_set_errno(c->ssl, EAGAIN);
        return -1;
    }
    if (n > have) n = have;
    memcpy(d, c->tin.p + c->tin_off, n);
    c->tin_off += n;
    if (c->tin_off == c->tin.len) c->tin.len = c->tin_off = 0;
    return (ssize_t)n;
}
#else
static size_t queued(conn_t *c)
{
    return uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp) + BIO_ctrl_pending(c->wbio);
}

static int tls_write(conn_t *c, const void *d, size_t n)
{
    return n && SSL_write(c->ssl, d, (int)n) <= 0 ? -1 : 0;
}
#endif

static void on_write(uv_write_t *w, int status)
{
    conn_t *c = w->handle->data;
    free(w);
    c->writes--;
    if (c->closing) return;
    if (status < 0)
        conn_close(c);
    else
        conn_flush(c);
}

static int tls_drain(conn_t *c) /* the write BIO's ciphertext to the socket */
{
#ifdef SPIKE_GNUTLS
    size_t n = c->tout.len;
    if (!n) return 0;
    wreq_t *w = malloc(sizeof *w + n);
    if (!w) return -1;
    memcpy(w->data, c->tout.p, n);
    c->tout.len = 0;
    w->buf = uv_buf_init(w->data, (unsigned)n);
#else
    size_t n = BIO_ctrl_pending(c->wbio);
    if (!n) return 0;
    wreq_t *w = malloc(sizeof *w + n);
    if (!w) return -1;
    w->buf = uv_buf_init(w->data, (unsigned)BIO_read(c->wbio, w->data, (int)n));
#endif
    if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &w->buf, 1, on_write)) {
        free(w);
        return -1;
    }
    c->writes++;
    return 0;
}

static void on_alloc(uv_handle_t *h, size_t want, uv_buf_t *b)
{
    (void)h;
    (void)want;
    *b = uv_buf_init(inbuf, sizeof inbuf); /* consumed before the next read */
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b);

static void set_reading(conn_t *c, int on)
{
    if (on == c->reading) return;
    c->reading = on;
    if (on)
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    else
        uv_read_stop((uv_stream_t *)&c->tcp);
}

static int h1_flush(conn_t *c);
static int h2_flush(conn_t *c);

/* Produces what the protocol has to send while the socket keeps up. */
static void conn_flush(conn_t *c)
{
    if (c->closing) return;
    int rc = c->proto == P_H2 ? h2_flush(c) : c->proto == P_H1 ? h1_flush(c) : 0;
    if (c->proto == P_H2 && !c->close_when_sent && !nghttp2_session_want_read(c->h2) &&
        !nghttp2_session_want_write(c->h2))
        c->close_when_sent = 1; /* GOAWAY exchanged */
    if (c->close_when_sent == 1) {
#ifdef SPIKE_GNUTLS
        gnutls_bye(c->ssl, GNUTLS_SHUT_WR); /* close_notify */
#else
        SSL_shutdown(c->ssl); /* close_notify */
#endif
        c->close_when_sent = 2;
    }
    if (rc || tls_drain(c)) {
        conn_close(c);
        return;
    }
    if (c->close_when_sent && !c->writes) {
        conn_close(c);
        return;
    }
#ifdef SPIKE_GNUTLS
    set_reading(c, !c->close_when_sent && queued(c) < WRITE_HIGH && c->tin.len - c->tin_off < WRITE_HIGH);
#else
    set_reading(c, !c->close_when_sent && queued(c) < WRITE_HIGH && BIO_ctrl_pending(c->rbio) < WRITE_HIGH);
#endif
}

static void conn_closed(uv_handle_t *h)
{
    conn_t *c = h->data;
#ifdef SPIKE_GNUTLS
    if (c->ssl) gnutls_deinit(c->ssl);
    free(c->tin.p);
    free(c->tout.p);
#else
    SSL_free(c->ssl); /* and its BIOs */
#endif
    free(c->h1_rest.p);
    free(c);
}

static void conn_close(conn_t *c)
{
    if (c->closing) return;
    c->closing = 1;
    nghttp2_session_del(c->h2); /* calls no stream callbacks */
    c->h2 = NULL;
    while (c->reqs) req_free(c->reqs);
    uv_close((uv_handle_t *)&c->tcp, conn_closed); /* cancels pending writes first */
}

static int h1_start(conn_t *c);
static int h1_recv(conn_t *c, const char *d, size_t n);
static int h2_start(conn_t *c);
static int h2_recv(conn_t *c, const char *d, size_t n);

static int tls_recv(conn_t *c)
{
    if (c->proto == P_TLS) {
#ifdef SPIKE_GNUTLS
        int rc = gnutls_handshake(c->ssl);
        if (rc == GNUTLS_E_AGAIN || rc == GNUTLS_E_INTERRUPTED) return 0;
        if (rc < 0) return -1;
        gnutls_datum_t alpn = {NULL, 0};
        gnutls_alpn_get_selected_protocol(c->ssl, &alpn);
        if (alpn.size == 2 && !memcmp(alpn.data, "h2", 2) ? h2_start(c) : h1_start(c)) return -1;
#else
        int rc = SSL_do_handshake(c->ssl);
        if (rc <= 0) return SSL_get_error(c->ssl, rc) == SSL_ERROR_WANT_READ ? 0 : -1;
        const unsigned char *alpn;
        unsigned len;
        SSL_get0_alpn_selected(c->ssl, &alpn, &len);
        if (len == 2 && !memcmp(alpn, "h2", 2) ? h2_start(c) : h1_start(c)) return -1;
#endif
    }
    for (;;) {
        if (c->proto == P_H1 && c->h1_req && c->h1_req->watch) return 0; /* rest waits in the BIO */
#ifdef SPIKE_GNUTLS
        ssize_t n = gnutls_record_recv(c->ssl, plain, sizeof plain);
        if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED) return 0;
        if (n <= 0) return -1;
#else
        int n = SSL_read(c->ssl, plain, sizeof plain);
        if (n <= 0) return SSL_get_error(c->ssl, n) == SSL_ERROR_WANT_READ ? 0 : -1;
#endif
        int rc = c->proto == P_H2 ? h2_recv(c, plain, (size_t)n) : h1_recv(c, plain, (size_t)n);
        if (rc || c->closing) return -1;
    }
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    conn_t *c = s->data;
#ifdef SPIKE_GNUTLS
    if (n < 0 || (n > 0 && (buf_add(&c->tin, b->base, (size_t)n) || tls_recv(c)))) {
#else
    if (n < 0 || (n > 0 && (BIO_write(c->rbio, b->base, (int)n) != n || tls_recv(c)))) {
#endif
        conn_close(c);
        return;
    }
    conn_flush(c);
}

static void on_connection(uv_stream_t *server, int status)
{
    conn_t *c = status < 0 ? NULL : calloc(1, sizeof *c);
    if (!c) return;
    uv_tcp_init(loop, &c->tcp);
    c->tcp.data = c;
#ifdef SPIKE_GNUTLS
    static const gnutls_datum_t protos[] = {{(unsigned char *)"h2", 2},
                                            {(unsigned char *)"http/1.1", 8}};
    int ok = gnutls_init(&c->ssl, GNUTLS_SERVER | GNUTLS_NONBLOCK) == 0;
    if (ok)
        ok = gnutls_priority_set(c->ssl, prio) == 0 &&
             gnutls_credentials_set(c->ssl, GNUTLS_CRD_CERTIFICATE, creds) == 0 &&
             gnutls_alpn_set_protocols(c->ssl, protos, 2, GNUTLS_ALPN_SERVER_PRECEDENCE) == 0;
    else
        c->ssl = NULL;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) || !ok) {
        conn_close(c);
        return;
    }
    gnutls_transport_set_ptr(c->ssl, c);
    gnutls_transport_set_push_function(c->ssl, tls_push);
    gnutls_transport_set_pull_function(c->ssl, tls_pull);
#else
    c->ssl = SSL_new(tls);
    BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());
    if (c->ssl && rb && wb) {
        SSL_set_bio(c->ssl, c->rbio = rb, c->wbio = wb); /* the SSL owns them */
    } else {
        BIO_free(rb);
        BIO_free(wb);
    }
    if (uv_accept(server, (uv_stream_t *)&c->tcp) || !c->rbio) {
        conn_close(c);
        return;
    }
    SSL_set_accept_state(c->ssl);
#endif
    uv_tcp_nodelay(&c->tcp, 1);
    set_reading(c, 1);
}

#ifndef SPIKE_GNUTLS
static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned inlen, void *arg)
{
    (void)ssl;
    (void)arg;
    static const unsigned char ours[] = "\x02h2\x08http/1.1";
    return SSL_select_next_proto((unsigned char **)out, outlen, ours, sizeof ours - 1, in, inlen) ==
                   OPENSSL_NPN_NEGOTIATED
               ? SSL_TLSEXT_ERR_OK
               : SSL_TLSEXT_ERR_NOACK;
}
#endif

/* ---- HTTP/1.1: http_parser, keep-alive, chunked watch ---- */

static const char *reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 413: return "Payload Too Large";
    default: return "Internal Server Error";
    }
}

static int h1_respond(conn_t *c, req_t *r)
{
    int k = snprintf(stage, 256, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n", r->status,
                     reason(r->status));
    if (r->watch)
        k += snprintf(stage + k, 256, "Transfer-Encoding: chunked\r\n\r\n");
    else
        k += snprintf(stage + k, 256, "Content-Length: %zu\r\n%s\r\n", r->out.len,
                      r->keep_alive ? "" : "Connection: close\r\n");
    if (r->watch) return tls_write(c, stage, (size_t)k); /* the chunks follow in h1_flush */
    int rc;
    if ((size_t)k + r->out.len <= sizeof stage) { /* one TLS record when it fits */
        memcpy(stage + k, r->out.p, r->out.len);
        rc = tls_write(c, stage, (size_t)k + r->out.len);
    } else {
        rc = tls_write(c, stage, (size_t)k) || tls_write(c, r->out.p, r->out.len);
    }
    if (!r->keep_alive) c->close_when_sent = 1;
    req_free(r);
    return rc;
}

static int h1_begin(http_parser *p)
{
    conn_t *c = p->data;
    return (c->h1_req = req_new(c, 0)) ? 0 : -1;
}

static int h1_url(http_parser *p, const char *at, size_t n)
{
    req_t *r = ((conn_t *)p->data)->h1_req;
    return r->path.len + n > URL_MAX || buf_add(&r->path, at, n) ? -1 : 0;
}

static int h1_refuse(conn_t *c) /* answer 413 now, read no further */
{
    refuse(c->h1_req);
    c->h1_req->keep_alive = 0;
    h1_respond(c, c->h1_req);
    return -1;
}

static int h1_headers_done(http_parser *p)
{
    conn_t *c = p->data;
    req_t *r = c->h1_req;
    r->method = p->method;
    r->create = r->method == HTTP_POST && is(&r->path, SPIKE_CREATE_PATH);
    if (r->create && (p->flags & F_CONTENTLENGTH) && p->content_length > SPIKE_BODY_MAX)
        return h1_refuse(c);
    return 0;
}

static int h1_body(http_parser *p, const char *at, size_t n)
{
    conn_t *c = p->data;
    req_t *r = c->h1_req;
    if (!r->create) return 0; /* discarded */
    if (r->body.len + n > SPIKE_BODY_MAX) return h1_refuse(c);
    return buf_add(&r->body, at, n);
}

static int h1_complete(http_parser *p)
{
    conn_t *c = p->data;
    req_t *r = c->h1_req;
    r->keep_alive = http_should_keep_alive(p);
    if (route(r)) return -1;
    if (r->watch) http_parser_pause(p, 1); /* the next request waits for the watch's end */
    return h1_respond(c, r) ? -1 : 0;
}

static const http_parser_settings h1_settings = {
    .on_message_begin = h1_begin,
    .on_url = h1_url,
    .on_headers_complete = h1_headers_done,
    .on_body = h1_body,
    .on_message_complete = h1_complete,
};

static int h1_start(conn_t *c)
{
    c->proto = P_H1;
    http_parser_init(&c->h1, HTTP_REQUEST);
    c->h1.data = c;
    return 0;
}

static int h1_recv(conn_t *c, const char *d, size_t n)
{
    if (c->close_when_sent) return 0; /* answered 413 or closing: read no more */
    size_t used = http_parser_execute(&c->h1, &h1_settings, d, n);
    if (c->closing || c->close_when_sent) return 0;
    if (HTTP_PARSER_ERRNO(&c->h1) == HPE_PAUSED) return buf_add(&c->h1_rest, d + used, n - used);
    if (HTTP_PARSER_ERRNO(&c->h1) == HPE_OK && used == n) return 0;
    static const char bad[] = "HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
    c->close_when_sent = 1;
    return tls_write(c, bad, sizeof bad - 1);
}

/* The HTTP/1.1 watch: queued events go out as chunks while the socket keeps up. */
static int h1_flush(conn_t *c)
{
    req_t *r = c->h1_req;
    if (!r || !r->watch) return 0;
    while (r->out_off < r->out.len && queued(c) < WRITE_HIGH) {
        size_t n = r->out.len - r->out_off;
        if (n > sizeof stage - 32) n = sizeof stage - 32;
        int k = snprintf(stage, 32, "%zx\r\n", n);
        memcpy(stage + k, r->out.p + r->out_off, n);
        memcpy(stage + k + n, "\r\n", 2);
        if (tls_write(c, stage, (size_t)k + n + 2)) return -1;
        r->out_off += n;
    }
    if (r->out_off < r->out.len) return 0;
    r->out_off = r->out.len = 0;
    if (!r->watch_done) return 0;
    if (!r->keep_alive) c->close_when_sent = 1;
    req_free(r);
    if (tls_write(c, "0\r\n\r\n", 5)) return -1;
    buf_t rest = c->h1_rest; /* what came after the watch request, then the read BIO */
    c->h1_rest = (buf_t){0};
    http_parser_pause(&c->h1, 0);
    int rc = (rest.len && h1_recv(c, rest.p, rest.len)) || tls_recv(c);
    free(rest.p);
    return rc;
}

/* ---- HTTP/2: nghttp2 session callbacks and the data provider ---- */

static int h2_start(conn_t *c)
{
    nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100}};
    c->proto = P_H2;
    if (nghttp2_session_server_new(&c->h2, h2_callbacks, c)) return -1;
    return nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, iv, 1);
}

static int h2_recv(conn_t *c, const char *d, size_t n)
{
    return nghttp2_session_mem_recv(c->h2, (const uint8_t *)d, n) < 0 ? -1 : 0;
}

/* Frames to TLS, gathered into records, until the socket falls behind. */
static int h2_flush(conn_t *c)
{
    size_t n = 0;
    while (queued(c) + n < WRITE_HIGH) {
        const uint8_t *d;
        ssize_t len = nghttp2_session_mem_send(c->h2, &d);
        if (len <= 0) {
            if (len < 0) return -1;
            break;
        }
        if (n + (size_t)len > sizeof stage) {
            if (tls_write(c, stage, n)) return -1;
            n = 0;
        }
        if ((size_t)len > sizeof stage) {
            if (tls_write(c, d, (size_t)len)) return -1;
            continue;
        }
        memcpy(stage + n, d, (size_t)len);
        n += (size_t)len;
    }
    return tls_write(c, stage, n);
}

static ssize_t h2_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t max, uint32_t *flags,
                       nghttp2_data_source *src, void *u)
{
    (void)u;
    req_t *r = src->ptr;
    size_t n = r->out.len - r->out_off;
    if (n > max) n = max;
    if (n) memcpy(buf, r->out.p + r->out_off, n);
    r->out_off += n;
    if (r->out_off < r->out.len) return (ssize_t)n;
    r->out_off = r->out.len = 0;
    if (r->watch && !r->watch_done) return n ? (ssize_t)n : NGHTTP2_ERR_DEFERRED; /* until the tick */
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    if (!nghttp2_session_get_stream_remote_close(s, id)) /* answered early (413): stop the upload */
        nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, id, NGHTTP2_NO_ERROR);
    return (ssize_t)n;
}

#define NV(n, v) {(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE}

static int h2_respond(nghttp2_session *s, req_t *r)
{
    char status[8], len[24];
    snprintf(status, sizeof status, "%d", r->status);
    snprintf(len, sizeof len, "%zu", r->out.len);
    nghttp2_nv nv[] = {NV(":status", status), NV("content-type", "application/json"), NV("content-length", len)};
    nghttp2_data_provider dp = {.source.ptr = r, .read_callback = h2_read};
    r->answered = 1;
    return nghttp2_submit_response(s, r->stream_id, nv, r->watch ? 2 : 3, &dp);
}

static int h2_begin_headers(nghttp2_session *s, const nghttp2_frame *f, void *u)
{
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    req_t *r = req_new(u, f->hd.stream_id);
    return r ? nghttp2_session_set_stream_user_data(s, f->hd.stream_id, r) : NGHTTP2_ERR_CALLBACK_FAILURE;
}

static int h2_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t nlen,
                     const uint8_t *value, size_t vlen, uint8_t flags, void *u)
{
    (void)flags;
    (void)u;
    req_t *r = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
    if (!r || f->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    const char *n = (const char *)name, *v = (const char *)value; /* both NUL-terminated */
    if (nlen == 7 && !memcmp(n, ":method", 7))
        r->method = !strcmp(v, "GET") ? HTTP_GET : !strcmp(v, "POST") ? HTTP_POST : -1;
    else if (nlen == 5 && !memcmp(n, ":path", 5))
        return buf_add(&r->path, v, vlen) ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
    else if (nlen == 14 && !memcmp(n, "content-length", 14)) /* nghttp2 checked it is a number */
        r->too_big = strtoull(v, NULL, 10) > SPIKE_BODY_MAX;
    return 0;
}

static int h2_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *d, size_t n, void *u)
{
    (void)flags;
    (void)u;
    req_t *r = nghttp2_session_get_stream_user_data(s, id);
    if (!r || r->answered || !r->create) return 0; /* discarded; nghttp2 still opens the window */
    if (r->body.len + n > SPIKE_BODY_MAX) {
        refuse(r);
        return h2_respond(s, r) ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
    }
    return buf_add(&r->body, d, n) ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
}

static int h2_frame(nghttp2_session *s, const nghttp2_frame *f, void *u)
{
    (void)u;
    req_t *r = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
    if (!r || r->answered || (f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA)) return 0;
    if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST) {
        r->create = r->method == HTTP_POST && is(&r->path, SPIKE_CREATE_PATH);
        if (r->create && r->too_big) {
            refuse(r);
            return h2_respond(s, r) ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
        }
    }
    if (!(f->hd.flags & NGHTTP2_FLAG_END_STREAM)) return 0;
    return route(r) || h2_respond(s, r) ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
}

static int h2_stream_closed(nghttp2_session *s, int32_t id, uint32_t err, void *u)
{
    (void)err;
    (void)u;
    req_t *r = nghttp2_session_get_stream_user_data(s, id);
    if (r) req_free(r);
    return 0;
}

/* ---- main ---- */

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s PORT CERT KEY\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);

#ifdef SPIKE_GNUTLS
    if (gnutls_certificate_allocate_credentials(&creds) ||
        gnutls_certificate_set_x509_key_file(creds, argv[2], argv[3], GNUTLS_X509_FMT_PEM) < 0 ||
        gnutls_priority_init(&prio, "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2", NULL)) {
        fprintf(stderr, "cannot load %s / %s\n", argv[2], argv[3]);
        return 1;
    }
#else
    tls = SSL_CTX_new(TLS_server_method());
    if (!tls || SSL_CTX_use_certificate_chain_file(tls, argv[2]) != 1 ||
        SSL_CTX_use_PrivateKey_file(tls, argv[3], SSL_FILETYPE_PEM) != 1) {
        fprintf(stderr, "cannot load %s / %s\n", argv[2], argv[3]);
        return 1;
    }
    SSL_CTX_set_min_proto_version(tls, TLS1_2_VERSION);
    SSL_CTX_set_mode(tls, SSL_MODE_RELEASE_BUFFERS); /* idle connections keep no record buffers */
    SSL_CTX_set_alpn_select_cb(tls, alpn_select, NULL);
#endif

    if (nghttp2_session_callbacks_new(&h2_callbacks)) return 1;
    nghttp2_session_callbacks_set_on_begin_headers_callback(h2_callbacks, h2_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(h2_callbacks, h2_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(h2_callbacks, h2_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(h2_callbacks, h2_frame);
    nghttp2_session_callbacks_set_on_stream_close_callback(h2_callbacks, h2_stream_closed);

    loop = uv_default_loop();
    uv_tcp_t server;
    struct sockaddr_in sa;
    int rc = uv_ip4_addr("127.0.0.1", atoi(argv[1]), &sa);
    if (rc || (rc = uv_tcp_init(loop, &server)) || (rc = uv_tcp_bind(&server, (struct sockaddr *)&sa, 0)) ||
        (rc = uv_listen((uv_stream_t *)&server, 1024, on_connection))) {
        fprintf(stderr, "listen: %s\n", uv_strerror(rc));
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    return uv_run(loop, UV_RUN_DEFAULT);
}
