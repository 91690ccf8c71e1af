/*
 * grpc.c -- the gRPC client of grpc.h: one nghttp2 client session per
 * connection, fed and drained by the connection's I/O thread.
 *
 * THE LOCK. Everything of a connection (its session, the calls and streams
 * on it and their queues) is guarded by c->mu. Callers submit requests,
 * queue messages, release bytes and reset streams on the session under it,
 * then wake the I/O thread through the eventfd. The I/O thread polls and
 * does its socket I/O without the lock and runs the session under it, so
 * nghttp2's callbacks run under it. The owners' callbacks (on_msg, on_end)
 * never do: whole messages are queued on their stream and delivered by the
 * I/O thread with the lock dropped, one at a time (deliver()), so that they
 * may call grpc_stream_send() and grpc_stream_release().
 *
 * INVARIANTS
 *  1. An rpc (a unary call or a stream) is on c->rpcs from its submission
 *     until its owner lets go of it (the call returns; grpc_stream_close()).
 *     nghttp2 holds no pointer to it: every callback finds it by stream id
 *     on c->rpcs (find()), so a call's rpc may live on its caller's stack.
 *  2. r->done is set once: by the server's END_STREAM, a reset, the
 *     connection's death, the caller's deadline or grpc_stream_close()
 *     (set_done()); c->active counts the rpcs not done. After it, data for
 *     the stream is dropped (and consumed).
 *  3. OUTCOMES. A request counts as sent once a byte of its HEADERS frame
 *     was written to the socket: r->hdr_pos is where that frame starts in
 *     the connection's output (before_frame_send(), which nghttp2 calls just
 *     before mem_send returns the frame's first bytes) and c->written counts
 *     the bytes written (sent()). A deadline that passes once the frame is
 *     serialized counts it sent too: its bytes are on their way out.
 *  4. FLOW CONTROL. nghttp2 sends no WINDOW_UPDATE of its own
 *     (no_auto_window_update). The connection's window (CONN_WINDOW) is
 *     consumed as bytes arrive, so that only streams ever stop. A stream's
 *     window is GRPC_STREAM_WINDOW: its 5-byte prefixes are consumed at
 *     once, its message bytes when the owner releases them; a unary call's
 *     as they arrive. nghttp2 announces consumed bytes once they reach half
 *     the window, so a message over half of it might never arrive whole
 *     while the owner holds bytes: its bytes are consumed as they arrive
 *     and credited against the owner's later releases (r->credit).
 *  5. REFERENCES. c->refs is 1 for the owner (grpc_close()), one per stream
 *     not yet closed and one per call in progress; the last one frees c.
 *     grpc_close() stops the thread and deletes the session: what is left of
 *     c then is its lock and list, for the closes that come after.
 *  6. KEEPALIVE. While a call or stream is open, a PING goes out after
 *     keepalive_ms without a received byte, and its ACK missing for
 *     keepalive_timeout_ms kills the connection. An idle connection is not
 *     pinged: gRPC servers (etcd's too) answer repeated pings on a
 *     connection with no stream (grpc-go allows one per two hours) with
 *     GOAWAY ENHANCE_YOUR_CALM.
 *  7. ENDINGS. A call reset by the server (RST_STREAM, or a GOAWAY below
 *     its stream) before a whole answer ends as a lost connection would:
 *     KP_ETIMEDOUT once sent, else KP_EUNAVAILABLE. A stream so reset ends
 *     with rc 0 and a status made here from the HTTP/2 error code. An
 *     answer that breaks gRPC's rules (no grpc-status, a compressed message,
 *     a second message to a call, headers over MAX_HEADER_BYTES) gets a
 *     status made here: 13 INTERNAL, or the HTTP status's.
 */
#include "store/grpc.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"

#define CONN_WINDOW      (64 << 20) /* the connection's receive window (invariant 4) */
#define MAX_HEADER_BYTES (64 << 10) /* an answer's header blocks, counted as HTTP/2 does */
#define MAX_METHOD       1024       /* "/package.Service/Method" */
#define OUT_HIGH         (64 << 10) /* serialized bytes kept ahead of the socket */
#define READ_CHUNK       (64 << 10)
#define MSG_FIRST        (1 << 20) /* a message's buffer starts at most this big, then grows */

enum { RPC_CALL, RPC_STREAM };

/* gRPC's status codes used here. */
enum { ST_CANCELLED = 1, ST_UNKNOWN = 2, ST_RESOURCE_EXHAUSTED = 8, ST_UNIMPLEMENTED = 12 };
enum { ST_INTERNAL = 13, ST_UNAVAILABLE = 14, ST_PERMISSION_DENIED = 7, ST_UNAUTHENTICATED = 16 };

/* A message to send: its 5-byte prefix and bytes. */
typedef struct outmsg {
    struct outmsg *next;
    size_t len, off; /* bytes with the prefix; sent so far */
    uint8_t data[];
} outmsg_t;

/* A whole message received on a stream, waiting for on_msg. */
typedef struct inmsg {
    struct inmsg *next;
    uint8_t *data;
    size_t n;
} inmsg_t;

/* A unary call (on its caller's stack) or a stream (grpc_stream_t). */
struct grpc_stream {
    grpc_conn_t *c;
    int kind;
    int32_t id;                       /* the HTTP/2 stream */
    struct grpc_stream *next, **prev; /* on c->rpcs (prev NULL: not on it) */
    int h2_closed;                    /* nghttp2 closed the stream */
    /* sending */
    outmsg_t *out, **out_tail;
    int out_eof;      /* END_STREAM after the queue (a call) */
    int64_t hdr_pos;  /* invariant 3; -1 until serialized */
    int64_t begun_ns; /* a call: when grpc_call() began (grpc_abandon_calls) */
    /* receiving */
    uint8_t pfx[5];
    size_t pfx_len;
    uint8_t *msg; /* the message being put together */
    size_t msg_len, msg_got, msg_cap;
    int prepay;          /* its bytes are consumed as they come (invariant 4) */
    size_t held, credit; /* delivered and not released; consumed ahead of release */
    size_t hdr_bytes;
    int http_status, have_status;
    uint8_t *resp; /* a call's answer */
    size_t resp_len;
    int nmsgs;
    /* the end (invariant 2) */
    int done, rc;
    grpc_status_t st;
    pthread_cond_t cv; /* a call's caller, or grpc_stream_close(), waits on it */
    /* a stream's deliveries (deliver()) */
    grpc_stream_cbs_t cbs;
    inmsg_t *in, **in_tail;
    int end_due;               /* on_end is to be called */
    int queued;                /* on c->notify */
    struct grpc_stream *nnext; /* on c->notify */
    int in_cb;                 /* a callback of it runs */
    int closing;               /* grpc_stream_close() has begun */
};
typedef struct grpc_stream rpc_t;

struct grpc_conn {
    pthread_mutex_t mu;
    pthread_cond_t cv;   /* grpc_connect() waits for the server's SETTINGS */
    nghttp2_session *h2; /* NULL once grpc_close() deleted it */
    int fd, efd;
    pthread_t thread;
    int refs; /* invariant 5 */
    int err;  /* grpc_conn_error(): set once */
    int dead; /* every rpc was ended; the thread is leaving */
    int closing;
    int settings_seen;
    int active; /* rpcs not done */
    rpc_t *rpcs;
    rpc_t *notify, **notify_tail; /* streams with deliveries due */
    char authority[300];
    int keepalive_ms, keepalive_timeout_ms;
    int64_t last_rx_ns, ping_at_ns;
    int ping_out;
    /* The output not yet written: the I/O thread's alone. */
    uint8_t *obuf;
    size_t olen, ooff, ocap;
    int64_t queued, written; /* bytes serialized, bytes written */
};

static size_t min_sz(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* ---- helpers (under c->mu) ---- */

static void wake(grpc_conn_t *c)
{
    uint64_t one = 1;
    if (c->efd >= 0 && write(c->efd, &one, sizeof one) < 0) {
        /* EAGAIN: the counter is full, the thread is awake anyway */
    }
}

static int live(const grpc_conn_t *c)
{
    return c->h2 && !c->dead && !c->closing && !c->err;
}

static rpc_t *find(grpc_conn_t *c, int32_t id)
{
    for (rpc_t *r = c->rpcs; r; r = r->next)
        if (r->id == id) return r;
    return NULL;
}

static int sent(const grpc_conn_t *c, const rpc_t *r)
{
    return r->hdr_pos >= 0 && c->written > r->hdr_pos;
}

static void notify(grpc_conn_t *c, rpc_t *r)
{
    if (r->queued || r->closing) return;
    r->queued = 1;
    r->nnext = NULL;
    *c->notify_tail = r;
    c->notify_tail = &r->nnext;
}

static void unnotify(grpc_conn_t *c, rpc_t *r)
{
    if (!r->queued) return;
    rpc_t **pp = &c->notify;
    while (*pp != r)
        pp = &(*pp)->nnext;
    *pp = r->nnext;
    if (c->notify_tail == &r->nnext) c->notify_tail = pp;
    r->queued = 0;
}

static void set_done(grpc_conn_t *c, rpc_t *r, int rc)
{
    r->done = 1;
    r->rc = rc;
    c->active--;
}

/* r is over (invariant 2): rc, and for rc 0 the status in r->st. */
static void finish(grpc_conn_t *c, rpc_t *r, int rc)
{
    if (r->done) return;
    set_done(c, r, rc);
    if (r->kind == RPC_CALL) {
        pthread_cond_signal(&r->cv);
    } else {
        r->end_due = 1;
        notify(c, r);
    }
}

static void reset(grpc_conn_t *c, rpc_t *r, uint32_t code)
{
    if (c->h2 && !c->dead && !r->h2_closed && r->id > 0)
        nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, r->id, code);
}

/* A status made here rather than by the server (gRPC clients do the same
 * for answers that break the protocol). */
static void local_status(rpc_t *r, int code, const char *msg)
{
    r->st.code = code;
    snprintf(r->st.message, sizeof r->st.message, "grpc: %s", msg);
}

/* r fails here, with a status or (rc) an error; the stream is reset. */
static void fail(grpc_conn_t *c, rpc_t *r, int rc, int code, const char *msg)
{
    if (!rc) local_status(r, code, msg);
    finish(c, r, rc);
    reset(c, r, NGHTTP2_CANCEL);
}

static int hexval(uint8_t ch)
{
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* grpc-message is percent-encoded; an invalid escape is kept as it is. */
static void percent_decode(const uint8_t *v, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 1 < cap; i++) {
        int hi = v[i] == '%' && i + 2 < n ? hexval(v[i + 1]) : -1;
        int lo = hi >= 0 ? hexval(v[i + 2]) : -1;
        if (lo >= 0) {
            out[o++] = (char)(hi << 4 | lo);
            i += 2;
        } else {
            out[o++] = (char)v[i];
        }
    }
    out[o] = '\0';
}

/* gRPC's mapping of an HTTP status that came without grpc-status. */
static int http_to_grpc(int status)
{
    switch (status) {
    case 400:
        return ST_INTERNAL;
    case 401:
        return ST_UNAUTHENTICATED;
    case 403:
        return ST_PERMISSION_DENIED;
    case 404:
        return ST_UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
        return ST_UNAVAILABLE;
    default:
        return ST_UNKNOWN;
    }
}

/* The server ended r's answer (END_STREAM). */
static void answer_ended(grpc_conn_t *c, rpc_t *r)
{
    char why[64];
    if (!r->have_status) {
        snprintf(why, sizeof why, "HTTP status %d without grpc-status", r->http_status);
        local_status(r, r->http_status == 200 ? ST_INTERNAL : http_to_grpc(r->http_status), why);
    } else if (!r->st.code && (r->pfx_len || r->msg)) {
        local_status(r, ST_INTERNAL, "the answer ended inside a message");
    } else if (!r->st.code && r->kind == RPC_CALL && r->nmsgs != 1) {
        local_status(r, ST_INTERNAL, "a unary answer without its message");
    }
    finish(c, r, 0);
}

/* ---- receiving (nghttp2's callbacks, on the I/O thread) ---- */

static int on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t nlen,
                     const uint8_t *value, size_t vlen, uint8_t flags, void *u)
{
    (void)s;
    (void)flags;
    grpc_conn_t *c = u;
    rpc_t *r = find(c, f->hd.stream_id);
    if (!r || r->done) return 0;
    r->hdr_bytes += nlen + vlen + 32;
    if (r->hdr_bytes > MAX_HEADER_BYTES) {
        local_status(r, ST_INTERNAL, "the answer's headers are too long");
        finish(c, r, 0);
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* nghttp2 resets the stream */
    }
    if (nlen == 7 && !memcmp(name, ":status", 7)) {
        r->http_status = 0;
        for (size_t i = 0; i < vlen && i < 3; i++)
            r->http_status = r->http_status * 10 + (value[i] - '0');
    } else if (nlen == 11 && !memcmp(name, "grpc-status", 11)) {
        int code = 0;
        for (size_t i = 0; i < vlen && code >= 0; i++)
            code = value[i] < '0' || value[i] > '9' || i >= 9 ? -1 : code * 10 + (value[i] - '0');
        r->have_status = 1;
        r->st.code = vlen && code >= 0 ? code : ST_UNKNOWN;
    } else if (nlen == 12 && !memcmp(name, "grpc-message", 12)) {
        percent_decode(value, vlen, r->st.message, sizeof r->st.message);
    }
    return 0;
}

/* The 5-byte prefix of r's next message is in. */
static void begin_msg(grpc_conn_t *c, rpc_t *r)
{
    size_t n =
        (size_t)r->pfx[1] << 24 | (size_t)r->pfx[2] << 16 | (size_t)r->pfx[3] << 8 | r->pfx[4];
    if (r->pfx[0] != 0) {
        fail(c, r, 0, ST_INTERNAL, "a compressed message (none was asked for)");
    } else if (n > GRPC_MAX_MESSAGE) {
        fail(c, r, KP_ETOOLARGE, 0, NULL);
    } else if (r->kind == RPC_CALL && r->nmsgs) {
        fail(c, r, 0, ST_INTERNAL, "a unary answer of more than one message");
    } else {
        r->msg_len = n;
        r->msg_got = 0;
        r->msg_cap = min_sz(n, MSG_FIRST);
        r->msg = malloc(r->msg_cap ? r->msg_cap : 1);
        r->prepay = r->kind == RPC_STREAM && n > GRPC_STREAM_WINDOW / 2;
        if (!r->msg) fail(c, r, KP_ENOMEM, 0, NULL);
    }
}

/* r's message is whole. */
static void end_msg(grpc_conn_t *c, rpc_t *r)
{
    uint8_t *m = r->msg;
    size_t n = r->msg_len;
    r->msg = NULL;
    r->pfx_len = 0;
    r->msg_len = r->msg_got = r->msg_cap = 0;
    r->nmsgs++;
    if (r->kind == RPC_CALL) {
        r->resp = m;
        r->resp_len = n;
        return;
    }
    inmsg_t *im = malloc(sizeof *im);
    if (!im) {
        free(m);
        fail(c, r, KP_ENOMEM, 0, NULL);
        return;
    }
    im->next = NULL;
    im->data = m;
    im->n = n;
    *r->in_tail = im;
    r->in_tail = &im->next;
    r->held += n;
    notify(c, r);
}

static int on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
                   void *u)
{
    (void)flags;
    grpc_conn_t *c = u;
    nghttp2_session_consume_connection(s, len); /* invariant 4 */
    rpc_t *r = find(c, id);
    size_t now = 0; /* bytes of this chunk consumed at once */
    while (len && r && !r->done) {
        size_t k;
        if (r->pfx_len < 5) {
            k = min_sz(5 - r->pfx_len, len);
            memcpy(r->pfx + r->pfx_len, data, k);
            r->pfx_len += k;
            now += k;
            data += k;
            len -= k;
            if (r->pfx_len == 5) begin_msg(c, r);
            if (r->pfx_len == 5 && !r->done && !r->msg_len) end_msg(c, r);
            continue;
        }
        k = min_sz(r->msg_len - r->msg_got, len);
        if (r->msg_got + k > r->msg_cap) {
            size_t cap = min_sz(r->msg_len,
                                2 * r->msg_cap > r->msg_got + k ? 2 * r->msg_cap : r->msg_got + k);
            uint8_t *m = realloc(r->msg, cap);
            if (!m) {
                fail(c, r, KP_ENOMEM, 0, NULL);
                break;
            }
            r->msg = m;
            r->msg_cap = cap;
        }
        memcpy(r->msg + r->msg_got, data, k);
        r->msg_got += k;
        if (r->kind == RPC_CALL || r->prepay) now += k;
        if (r->prepay) r->credit += k;
        data += k;
        len -= k;
        if (r->msg_got == r->msg_len) end_msg(c, r);
    }
    now += len; /* what no live rpc takes */
    if (now) nghttp2_session_consume_stream(s, id, now);
    return 0;
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *f, void *u)
{
    grpc_conn_t *c = u;
    rpc_t *r;
    switch (f->hd.type) {
    case NGHTTP2_SETTINGS:
        if (!(f->hd.flags & NGHTTP2_FLAG_ACK)) {
            c->settings_seen = 1;
            pthread_cond_broadcast(&c->cv);
        }
        break;
    case NGHTTP2_PING:
        if (f->hd.flags & NGHTTP2_FLAG_ACK) c->ping_out = 0;
        break;
    case NGHTTP2_GOAWAY:
        /* No new rpc; those the server took go on until the session ends. */
        if (!c->err) c->err = KP_EUNAVAILABLE;
        break;
    case NGHTTP2_HEADERS:
    case NGHTTP2_DATA:
        r = find(c, f->hd.stream_id);
        if (!r || r->done || !(f->hd.flags & NGHTTP2_FLAG_END_STREAM)) break;
        answer_ended(c, r);
        /* The server is done before us (a stream, or an early answer):
         * end our side too, as gRPC clients do. */
        if (!nghttp2_session_get_stream_local_close(s, f->hd.stream_id))
            reset(c, r, NGHTTP2_NO_ERROR);
        break;
    default:
        break;
    }
    return 0;
}

static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t code, void *u)
{
    (void)s;
    grpc_conn_t *c = u;
    rpc_t *r = find(c, id);
    if (!r) return 0;
    r->h2_closed = 1;
    if (r->done) return 0;
    /* Reset (by the server, or by a GOAWAY that did not cover it) with no
     * whole answer. */
    if (r->kind == RPC_CALL) {
        finish(c, r, sent(c, r) ? KP_ETIMEDOUT : KP_EUNAVAILABLE);
        return 0;
    }
    char why[64];
    snprintf(why, sizeof why, "the stream was reset (HTTP/2 error %u)", code);
    local_status(r,
                 code == NGHTTP2_REFUSED_STREAM      ? ST_UNAVAILABLE
                 : code == NGHTTP2_CANCEL            ? ST_CANCELLED
                 : code == NGHTTP2_ENHANCE_YOUR_CALM ? ST_RESOURCE_EXHAUSTED
                                                     : ST_INTERNAL,
                 why);
    finish(c, r, 0);
    return 0;
}

/* ---- sending ---- */

static ssize_t read_out(nghttp2_session *s, int32_t id, uint8_t *buf, size_t length,
                        uint32_t *flags, nghttp2_data_source *src, void *u)
{
    (void)s;
    (void)src;
    rpc_t *r = find(u, id);
    if (!r || r->done) return NGHTTP2_ERR_DEFERRED; /* its RST_STREAM follows */
    size_t n = 0;
    while (n < length && r->out) {
        outmsg_t *m = r->out;
        size_t k = min_sz(length - n, m->len - m->off);
        memcpy(buf + n, m->data + m->off, k);
        m->off += k;
        n += k;
        if (m->off == m->len) {
            if (!(r->out = m->next)) r->out_tail = &r->out;
            free(m);
        }
    }
    if (!r->out && r->out_eof)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    else if (!n)
        return NGHTTP2_ERR_DEFERRED; /* grpc_stream_send() resumes it */
    return (ssize_t)n;
}

static int before_frame_send(nghttp2_session *s, const nghttp2_frame *f, void *u)
{
    (void)s;
    grpc_conn_t *c = u;
    if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST) {
        rpc_t *r = find(c, f->hd.stream_id);
        if (r && r->hdr_pos < 0) r->hdr_pos = c->queued; /* invariant 3 */
    }
    return 0;
}

static int on_frame_send(nghttp2_session *s, const nghttp2_frame *f, void *u)
{
    (void)s;
    grpc_conn_t *c = u;
    if (f->hd.type == NGHTTP2_GOAWAY && f->goaway.error_code != NGHTTP2_NO_ERROR && !c->err)
        c->err = KP_ECORRUPT; /* nghttp2 found the server breaking HTTP/2 */
    return 0;
}

static int on_frame_not_send(nghttp2_session *s, const nghttp2_frame *f, int lib_error, void *u)
{
    (void)s;
    (void)lib_error;
    grpc_conn_t *c = u;
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    rpc_t *r = find(c, f->hd.stream_id);
    if (r) finish(c, r, KP_EUNAVAILABLE); /* never went out (a GOAWAY came first) */
    return 0;
}

static outmsg_t *outmsg_new(const void *msg, size_t n)
{
    outmsg_t *m = malloc(sizeof *m + 5 + n);
    if (!m) return NULL;
    m->next = NULL;
    m->len = 5 + n;
    m->off = 0;
    m->data[0] = 0; /* not compressed */
    m->data[1] = (uint8_t)(n >> 24);
    m->data[2] = (uint8_t)(n >> 16);
    m->data[3] = (uint8_t)(n >> 8);
    m->data[4] = (uint8_t)n;
    if (n) memcpy(m->data + 5, msg, n);
    return m;
}

static int method_ok(const char *method)
{
    size_t n = method ? strnlen(method, MAX_METHOD + 1) : 0;
    return n > 1 && n <= MAX_METHOD && method[0] == '/' && !strpbrk(method, "\r\n");
}

static nghttp2_nv nv(const char *name, const char *value)
{
    return (nghttp2_nv){(uint8_t *)name, (uint8_t *)value, strlen(name), strlen(value),
                        NGHTTP2_NV_FLAG_NONE};
}

/* Submit r's HEADERS (and its data, as it is queued); r goes on c->rpcs. */
static int submit(grpc_conn_t *c, rpc_t *r, const char *method, int timeout_ms)
{
    char tmo[32];
    nghttp2_nv h[8];
    size_t n = 0;
    h[n++] = nv(":method", "POST");
    h[n++] = nv(":scheme", "http");
    h[n++] = nv(":path", method);
    h[n++] = nv(":authority", c->authority);
    h[n++] = nv("content-type", "application/grpc");
    h[n++] = nv("te", "trailers");
    h[n++] = nv("user-agent", "kplane");
    if (timeout_ms > 0) { /* at most 8 digits */
        if (timeout_ms <= 99999999)
            snprintf(tmo, sizeof tmo, "%dm", timeout_ms);
        else
            snprintf(tmo, sizeof tmo, "%dS", timeout_ms / 1000 + 1);
        h[n++] = nv("grpc-timeout", tmo);
    }
    nghttp2_data_provider prd = {.source = {.ptr = NULL}, .read_callback = read_out};
    int32_t id = nghttp2_submit_request(c->h2, NULL, h, n, &prd, NULL);
    if (id < 0) {
        if (id == NGHTTP2_ERR_NOMEM) return KP_ENOMEM;
        c->err = KP_EUNAVAILABLE; /* stream ids used up: the owner connects again */
        return KP_EUNAVAILABLE;
    }
    r->id = id;
    r->next = c->rpcs;
    if (r->next) r->next->prev = &r->next;
    r->prev = &c->rpcs;
    c->rpcs = r;
    c->active++;
    wake(c);
    return 0;
}

/* Take r off c (invariant 1). */
static void detach(grpc_conn_t *c, rpc_t *r)
{
    if (!r->prev) return;
    *r->prev = r->next;
    if (r->next) r->next->prev = r->prev;
    r->prev = NULL;
    unnotify(c, r);
    wake(c);
}

static int rpc_init(rpc_t *r, grpc_conn_t *c, int kind)
{
    memset(r, 0, sizeof *r);
    r->c = c;
    r->kind = kind;
    r->hdr_pos = -1;
    r->out_tail = &r->out;
    r->in_tail = &r->in;
    return clock_cond_init(&r->cv);
}

static void rpc_free_parts(rpc_t *r)
{
    for (outmsg_t *m = r->out, *next; m; m = next) {
        next = m->next;
        free(m);
    }
    for (inmsg_t *m = r->in, *next; m; m = next) {
        next = m->next;
        free(m->data);
        free(m);
    }
    free(r->msg);
    free(r->resp);
    pthread_cond_destroy(&r->cv);
}

/* ---- the I/O thread ---- */

/* Everything on c ends (rc: why), the socket closes. */
static void die(grpc_conn_t *c, int rc)
{
    if (c->dead) return;
    if (!c->err) c->err = rc;
    c->dead = 1;
    log_debug("grpc", "connection to %s ended: %s", c->authority, err_str(c->err));
    for (rpc_t *r = c->rpcs; r; r = r->next) {
        if (r->kind == RPC_CALL)
            finish(c, r, sent(c, r) ? KP_ETIMEDOUT : KP_EUNAVAILABLE);
        else
            finish(c, r, rc == KP_ECLOSED ? KP_ECLOSED : KP_EUNAVAILABLE);
    }
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    pthread_cond_broadcast(&c->cv);
}

/* Run the streams' callbacks that are due, with c->mu dropped around each. */
static void deliver(grpc_conn_t *c)
{
    rpc_t *r;
    while ((r = c->notify)) {
        if (!(c->notify = r->nnext)) c->notify_tail = &c->notify;
        r->queued = 0;
        while (!r->closing) {
            inmsg_t *m = r->in;
            if (m) {
                if (!(r->in = m->next)) r->in_tail = &r->in;
            } else if (r->end_due) {
                r->end_due = 0;
            } else {
                break;
            }
            int rc = r->rc;
            grpc_status_t st = r->st;
            r->in_cb = 1;
            pthread_mutex_unlock(&c->mu);
            if (m) {
                if (r->cbs.on_msg) r->cbs.on_msg(r->cbs.arg, m->data, m->n);
                free(m->data);
                free(m);
            } else if (r->cbs.on_end) {
                r->cbs.on_end(r->cbs.arg, rc, rc ? NULL : &st);
            }
            pthread_mutex_lock(&c->mu);
            r->in_cb = 0;
            if (r->closing) pthread_cond_broadcast(&r->cv); /* r is not touched again */
        }
    }
}

/* Ping or die (invariant 6); returns poll()'s timeout. */
static int keepalive(grpc_conn_t *c)
{
    int64_t now = clock_mono_ns(), left;
    if (c->ping_out) {
        left = c->ping_at_ns + (int64_t)c->keepalive_timeout_ms * 1000000 - now;
        if (left <= 0) {
            die(c, KP_EUNAVAILABLE);
            return 0;
        }
    } else if (!c->active) {
        return -1;
    } else if ((left = c->last_rx_ns + (int64_t)c->keepalive_ms * 1000000 - now) <= 0) {
        if (nghttp2_submit_ping(c->h2, NGHTTP2_FLAG_NONE, NULL)) {
            die(c, KP_EUNAVAILABLE);
            return 0;
        }
        c->ping_out = 1;
        c->ping_at_ns = now;
        left = (int64_t)c->keepalive_timeout_ms * 1000000;
    }
    return (int)((left + 999999) / 1000000);
}

static int out_append(grpc_conn_t *c, const uint8_t *p, size_t n)
{
    if (c->ooff == c->olen) c->ooff = c->olen = 0;
    if (c->olen + n > c->ocap && c->ooff) {
        memmove(c->obuf, c->obuf + c->ooff, c->olen - c->ooff);
        c->olen -= c->ooff;
        c->ooff = 0;
    }
    if (c->olen + n > c->ocap) {
        size_t cap = c->ocap ? c->ocap : 2 * OUT_HIGH;
        while (cap < c->olen + n)
            cap *= 2;
        uint8_t *b = realloc(c->obuf, cap);
        if (!b) return KP_ENOMEM;
        c->obuf = b;
        c->ocap = cap;
    }
    memcpy(c->obuf + c->olen, p, n);
    c->olen += n;
    c->queued += (int64_t)n;
    return 0;
}

/* Serialize what the session has to send, up to OUT_HIGH ahead. */
static void pump(grpc_conn_t *c)
{
    while (!c->dead && c->olen - c->ooff < OUT_HIGH) {
        const uint8_t *p;
        ssize_t n = nghttp2_session_mem_send(c->h2, &p);
        if (n < 0) die(c, n == NGHTTP2_ERR_NOMEM ? KP_EUNAVAILABLE : KP_ECORRUPT);
        if (n <= 0) return;
        if (out_append(c, p, (size_t)n)) die(c, KP_EUNAVAILABLE);
    }
}

static void *io_main(void *arg)
{
    grpc_conn_t *c = arg;
    uint8_t rbuf[READ_CHUNK];
    log_thread_name("grpc", "io");
    pthread_mutex_lock(&c->mu);
    for (;;) {
        if (c->closing) die(c, KP_ECLOSED);
        deliver(c);
        if (c->dead) break;
        int timeout = keepalive(c);
        pump(c);
        if (!c->dead && !nghttp2_session_want_read(c->h2) && !nghttp2_session_want_write(c->h2) &&
            c->ooff == c->olen)
            die(c, c->err ? c->err : KP_EUNAVAILABLE); /* the session is over (GOAWAY) */
        if (c->dead || c->notify) continue;

        struct pollfd p[2] = {{.fd = c->fd, .events = POLLIN}, {.fd = c->efd, .events = POLLIN}};
        if (c->olen > c->ooff) p[0].events |= POLLOUT;
        pthread_mutex_unlock(&c->mu);

        /* Socket I/O without the lock: the fd and the output are ours. */
        int n = poll(p, 2, timeout), werr = 0;
        ssize_t rn = -1, wn = 0;
        uint64_t v;
        if (n > 0 && (p[1].revents & POLLIN) && read(c->efd, &v, sizeof v) < 0) {
            /* EAGAIN: another wakeup took it */
        }
        while (n > 0 && (p[0].revents & POLLOUT) && c->ooff < c->olen) {
            ssize_t w = send(c->fd, c->obuf + c->ooff, c->olen - c->ooff, MSG_NOSIGNAL);
            if (w > 0) {
                c->ooff += (size_t)w;
                wn += w;
            } else if (w < 0 && errno == EINTR) {
                continue;
            } else {
                werr = !(w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
                break;
            }
        }
        int rerr = 0;
        if (n > 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
            rn = recv(c->fd, rbuf, sizeof rbuf, 0);
            rerr = rn == 0 || (rn < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
        }

        pthread_mutex_lock(&c->mu);
        c->written += wn;
        if (rn > 0) { /* answers that came before a broken write still count */
            c->last_rx_ns = clock_mono_ns();
            ssize_t m = nghttp2_session_mem_recv(c->h2, rbuf, (size_t)rn);
            if (m < 0) die(c, m == NGHTTP2_ERR_NOMEM ? KP_EUNAVAILABLE : KP_ECORRUPT);
        }
        if (werr || rerr) die(c, KP_EUNAVAILABLE);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* ---- connections ---- */

static void conn_unref(grpc_conn_t *c)
{
    pthread_mutex_lock(&c->mu);
    int last = --c->refs == 0;
    pthread_mutex_unlock(&c->mu);
    if (!last) return;
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* A TCP connection to host:port by the deadline (CLOCK_MONOTONIC ns). */
static int dial(const char *host, int port, int64_t deadline, int *out)
{
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *ai;
    if (getaddrinfo(host, ps, &hints, &ai)) return KP_EUNAVAILABLE;
    int rc = KP_EUNAVAILABLE;
    for (struct addrinfo *a = ai; a && rc; a = a->ai_next) {
        int fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) continue;
        int r = connect(fd, a->ai_addr, a->ai_addrlen);
        if (r && errno == EINPROGRESS) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            int64_t left;
            do {
                left = (deadline - clock_mono_ns() + 999999) / 1000000;
                r = left > 0 ? poll(&p, 1, (int)left) : 0;
            } while (r < 0 && errno == EINTR);
            int err = 0;
            socklen_t elen = sizeof err;
            r = r == 1 && !getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) && !err ? 0 : -1;
        }
        if (r) {
            close(fd);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        *out = fd;
        rc = 0;
    }
    freeaddrinfo(ai);
    return rc;
}

static int session_new(grpc_conn_t *c)
{
    nghttp2_session_callbacks *cb;
    nghttp2_option *opt;
    if (nghttp2_session_callbacks_new(&cb)) return KP_ENOMEM;
    if (nghttp2_option_new(&opt)) {
        nghttp2_session_callbacks_del(cb);
        return KP_ENOMEM;
    }
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    nghttp2_session_callbacks_set_before_frame_send_callback(cb, before_frame_send);
    nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_frame_send);
    nghttp2_session_callbacks_set_on_frame_not_send_callback(cb, on_frame_not_send);
    nghttp2_option_set_no_auto_window_update(opt, 1);
    int rc = nghttp2_session_client_new2(&c->h2, cb, c, opt) ? KP_ENOMEM : 0;
    nghttp2_session_callbacks_del(cb);
    nghttp2_option_del(opt);
    if (rc) return rc;
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, (uint32_t)GRPC_STREAM_WINDOW},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, MAX_HEADER_BYTES},
    };
    if (nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, iv, sizeof iv / sizeof iv[0]) ||
        nghttp2_session_set_local_window_size(c->h2, NGHTTP2_FLAG_NONE, 0, CONN_WINDOW))
        return KP_ENOMEM;
    return 0;
}

int grpc_connect(const char *host, int port, const grpc_conn_opts_t *opts, grpc_conn_t **out)
{
    if (out) *out = NULL;
    grpc_conn_opts_t o = opts ? *opts : (grpc_conn_opts_t){0};
    if (!host || !*host || strnlen(host, 256) > 255 || port <= 0 || port > 65535 || !out ||
        o.connect_ms < 0 || o.keepalive_ms < 0 || o.keepalive_timeout_ms < 0)
        return KP_EINVAL;
    if (!o.connect_ms) o.connect_ms = 2000;
    if (!o.keepalive_ms) o.keepalive_ms = 10000;
    if (!o.keepalive_timeout_ms) o.keepalive_timeout_ms = 5000;
    int64_t deadline = clock_mono_ns() + (int64_t)o.connect_ms * 1000000;
    int fd = -1;
    int rc = dial(host, port, deadline, &fd);
    if (rc) return rc;

    grpc_conn_t *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        return KP_ENOMEM;
    }
    c->fd = fd;
    c->refs = 1;
    c->notify_tail = &c->notify;
    c->keepalive_ms = o.keepalive_ms;
    c->keepalive_timeout_ms = o.keepalive_timeout_ms;
    c->last_rx_ns = clock_mono_ns();
    snprintf(c->authority, sizeof c->authority, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host,
             port);
    pthread_mutex_init(&c->mu, NULL);
    if ((rc = clock_cond_init(&c->cv))) goto fail_mu;
    c->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (c->efd < 0) {
        rc = KP_ENOMEM;
        goto fail_cv;
    }
    if ((rc = session_new(c))) goto fail_session;
    if (pthread_create(&c->thread, NULL, io_main, c)) {
        rc = KP_ENOMEM;
        goto fail_session;
    }

    /* The server's SETTINGS within connect_ms, or it is not a (working)
     * HTTP/2 server. */
    pthread_mutex_lock(&c->mu);
    int64_t left = (deadline - clock_mono_ns()) / 1000000;
    struct timespec ts = clock_deadline_ms(left > 0 ? left : 0);
    int timed_out = 0;
    while (!c->settings_seen && !c->dead && !timed_out)
        timed_out = pthread_cond_timedwait(&c->cv, &c->mu, &ts) == ETIMEDOUT;
    int ok = c->settings_seen && !c->err;
    pthread_mutex_unlock(&c->mu);
    if (!ok) {
        grpc_close(c);
        return KP_EUNAVAILABLE;
    }
    *out = c;
    return 0;

fail_session:
    nghttp2_session_del(c->h2);
    if (c->efd >= 0) close(c->efd);
fail_cv:
    pthread_cond_destroy(&c->cv);
fail_mu:
    pthread_mutex_destroy(&c->mu);
    close(fd);
    free(c);
    return rc;
}

void grpc_close(grpc_conn_t *c)
{
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    c->closing = 1;
    wake(c);
    pthread_mutex_unlock(&c->mu);
    /* The thread ends every call and stream (die()) and runs the streams'
     * last callbacks before it leaves. */
    pthread_join(c->thread, NULL);
    pthread_mutex_lock(&c->mu);
    nghttp2_session_del(c->h2);
    c->h2 = NULL;
    close(c->efd);
    c->efd = -1;
    free(c->obuf);
    c->obuf = NULL;
    pthread_mutex_unlock(&c->mu);
    conn_unref(c);
}

int grpc_conn_error(grpc_conn_t *c)
{
    if (!c) return KP_EINVAL;
    pthread_mutex_lock(&c->mu);
    int rc = c->err;
    pthread_mutex_unlock(&c->mu);
    return rc;
}

/* ---- unary calls ---- */

int grpc_call(grpc_conn_t *c, const char *method, const void *req, size_t req_len, int timeout_ms,
              grpc_status_t *st, uint8_t **resp, size_t *resp_len)
{
    if (resp) *resp = NULL;
    if (resp_len) *resp_len = 0;
    if (!c || !method_ok(method) || (!req && req_len) || req_len > GRPC_MAX_MESSAGE ||
        timeout_ms <= 0 || !st || !resp || !resp_len)
        return KP_EINVAL;
    st->code = 0;
    st->message[0] = '\0';
    rpc_t r;
    int rc = rpc_init(&r, c, RPC_CALL);
    if (rc) return rc;
    if (!(r.out = outmsg_new(req, req_len))) {
        rpc_free_parts(&r);
        return KP_ENOMEM;
    }
    r.out_tail = &r.out->next;
    r.out_eof = 1;
    struct timespec ts = clock_deadline_ms(timeout_ms);
    r.begun_ns = clock_mono_ns();

    pthread_mutex_lock(&c->mu);
    rc = live(c) ? submit(c, &r, method, timeout_ms) : KP_EUNAVAILABLE;
    if (!rc) {
        c->refs++;
        while (!r.done && pthread_cond_timedwait(&r.cv, &c->mu, &ts) != ETIMEDOUT)
            ;
        if (!r.done) { /* the deadline (invariant 3) */
            set_done(c, &r, r.hdr_pos >= 0 ? KP_ETIMEDOUT : KP_EUNAVAILABLE);
            reset(c, &r, NGHTTP2_CANCEL); /* also takes back HEADERS not yet sent */
        }
        detach(c, &r);
        rc = r.rc;
    }
    pthread_mutex_unlock(&c->mu);
    if (r.id > 0) conn_unref(c);

    if (!rc) {
        *st = r.st;
        if (!r.st.code) {
            *resp = r.resp;
            *resp_len = r.resp_len;
            r.resp = NULL;
        }
    }
    rpc_free_parts(&r);
    return rc;
}

int grpc_abandon_calls(grpc_conn_t *c, int64_t before_ns)
{
    if (!c) return 0;
    pthread_mutex_lock(&c->mu);
    int any = 0;
    for (rpc_t *r = c->rpcs; r; r = r->next) {
        if (r->kind != RPC_CALL || r->done || r->begun_ns >= before_ns) continue;
        finish(c, r, r->hdr_pos >= 0 ? KP_ETIMEDOUT : KP_EUNAVAILABLE);
        reset(c, r, NGHTTP2_CANCEL); /* as at the deadline */
        any++;
    }
    if (any) wake(c);
    pthread_mutex_unlock(&c->mu);
    return any;
}

/* ---- streams ---- */

int grpc_stream_open(grpc_conn_t *c, const char *method, const grpc_stream_cbs_t *cbs,
                     grpc_stream_t **out)
{
    if (out) *out = NULL;
    if (!c || !method_ok(method) || !cbs || !out) return KP_EINVAL;
    rpc_t *s = malloc(sizeof *s);
    if (!s) return KP_ENOMEM;
    int rc = rpc_init(s, c, RPC_STREAM);
    if (rc) {
        free(s);
        return rc;
    }
    s->cbs = *cbs;
    pthread_mutex_lock(&c->mu);
    rc = live(c) ? submit(c, s, method, 0) : KP_EUNAVAILABLE;
    if (!rc) c->refs++;
    pthread_mutex_unlock(&c->mu);
    if (rc) {
        rpc_free_parts(s);
        free(s);
        return rc;
    }
    *out = s;
    return 0;
}

int grpc_stream_send(grpc_stream_t *s, const void *msg, size_t n)
{
    if (!s || (!msg && n) || n > GRPC_MAX_MESSAGE) return KP_EINVAL;
    outmsg_t *m = outmsg_new(msg, n);
    if (!m) return KP_ENOMEM;
    grpc_conn_t *c = s->c;
    pthread_mutex_lock(&c->mu);
    int rc = s->done || s->closing || !c->h2 || c->dead ? KP_ECLOSED : 0;
    if (!rc) {
        *s->out_tail = m;
        s->out_tail = &m->next;
        if (!s->h2_closed) nghttp2_session_resume_data(c->h2, s->id); /* if deferred */
        wake(c);
    }
    pthread_mutex_unlock(&c->mu);
    if (rc) free(m);
    return rc;
}

void grpc_stream_release(grpc_stream_t *s, size_t n)
{
    if (!s) return;
    grpc_conn_t *c = s->c;
    pthread_mutex_lock(&c->mu);
    n = min_sz(n, s->held);
    s->held -= n;
    size_t paid = min_sz(n, s->credit); /* invariant 4 */
    s->credit -= paid;
    n -= paid;
    if (n && !s->done && !s->h2_closed && c->h2 && !c->dead) {
        nghttp2_session_consume_stream(c->h2, s->id, n); /* WINDOW_UPDATE at half */
        wake(c);
    }
    pthread_mutex_unlock(&c->mu);
}

void grpc_stream_close(grpc_stream_t *s)
{
    if (!s) return;
    grpc_conn_t *c = s->c;
    pthread_mutex_lock(&c->mu);
    s->closing = 1;
    if (!s->done) {
        set_done(c, s, KP_ECLOSED);
        reset(c, s, NGHTTP2_CANCEL);
    }
    detach(c, s);
    while (s->in_cb)
        pthread_cond_wait(&s->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
    rpc_free_parts(s);
    free(s);
    conn_unref(c);
}
