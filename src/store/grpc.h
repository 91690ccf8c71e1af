/*
 * grpc.h -- a gRPC client over HTTP/2 in cleartext (h2c with prior
 * knowledge, as gRPC's "http://" targets), on nghttp2: unary calls and
 * bidirectional streams, multiplexed on one connection. What the etcd
 * backend needs of etcd's v3 API (etcd_int.h), nothing more: no TLS yet, no
 * compression, no name resolution beyond a numeric or /etc/hosts host.
 *
 * MESSAGES are opaque bytes here (encode them with lib/pbwire.h), framed
 * as gRPC frames them: a 0 byte ("not compressed"), a 4-byte big-endian
 * length, the bytes. A received message is at most
 * GRPC_MAX_MESSAGE bytes; a longer one fails its call or stream with
 * KP_ETOOLARGE.
 *
 * A CONNECTION has one I/O thread of its own: it polls the socket and an
 * eventfd that callers write to when they queue work, and runs the nghttp2
 * session (used only under the connection's mutex). While a call or stream
 * is open it pings the server every keepalive_ms when nothing arrives, and
 * declares the connection dead when a ping is not answered within
 * keepalive_timeout_ms (so that a partitioned or frozen server is noticed
 * even by a call with a long deadline, and by idle watch streams); an idle
 * connection is not pinged (gRPC servers, etcd's too, close a connection
 * that pings with no stream open). A dead connection ends every call and
 * stream on it (below) and takes no new ones (KP_EUNAVAILABLE): the owner
 * connects again, to whichever endpoint it likes.
 *
 * OUTCOMES of a unary call, which the etcd backend needs to tell apart:
 *   0                the server answered with a gRPC status (*st); OK (0)
 *                    or not, the call is over, and st->code says how. An
 *                    answer that breaks gRPC's rules gets a status made
 *                    here (13 INTERNAL, or its HTTP status's).
 *   KP_EUNAVAILABLE  certainly not done: no byte of the request went out
 *                    (the connection was dead or died first, or the
 *                    deadline passed first).
 *   KP_ETIMEDOUT     maybe done: the request was (at least partly) sent and
 *                    no whole answer came within the deadline or before the
 *                    connection died. The stream is reset (RST_STREAM
 *                    CANCEL) when the connection still works.
 *   KP_ETOOLARGE     the answer was over GRPC_MAX_MESSAGE (the call was
 *                    done; its answer is lost).
 *   KP_ENOMEM, KP_EINVAL (a bad argument).
 *
 * THREADS. Every function may be called from any thread, concurrently
 * (many calls share a connection). A stream's callbacks run on the
 * connection's I/O thread, one at a time, and must not block or call
 * grpc_stream_close() or grpc_close(); grpc_stream_send() and
 * grpc_stream_release() are fine. Errors are KP_* (lib/err.h).
 */
#ifndef KP_GRPC_H
#define KP_GRPC_H

#include <stddef.h>
#include <stdint.h>

#define GRPC_MAX_MESSAGE   ((size_t)256 << 20) /* a received message, at most */
#define GRPC_STREAM_WINDOW ((size_t)8 << 20)   /* unreleased bytes per stream (below) */

typedef struct grpc_conn grpc_conn_t;
typedef struct grpc_stream grpc_stream_t;

/* gRPC's status of a finished call: grpc-status (0 OK, 1 CANCELLED,
 * 4 DEADLINE_EXCEEDED, 14 UNAVAILABLE, ...) and grpc-message
 * (percent-decoded, truncated to fit). */
typedef struct grpc_status {
    int code;
    char message[512];
} grpc_status_t;

typedef struct grpc_conn_opts {
    int connect_ms;           /* TCP connect and the server's SETTINGS; 0: 2000 */
    int keepalive_ms;         /* ping after this long without a frame; 0: 10000 */
    int keepalive_timeout_ms; /* a ping unanswered this long: dead; 0: 5000 */
} grpc_conn_opts_t;

/* Connect to host:port (HTTP/2 preface and SETTINGS sent; the server's
 * SETTINGS received within connect_ms). `opts` NULL: the defaults.
 * Errors: KP_EUNAVAILABLE (refused, unreachable, not HTTP/2, or too slow),
 * KP_EINVAL, KP_ENOMEM. */
int grpc_connect(const char *host, int port, const grpc_conn_opts_t *opts, grpc_conn_t **out);

/* End every call (KP_ETIMEDOUT once sent, else KP_EUNAVAILABLE) and stream
 * (on_end with KP_ECLOSED) still on c, stop its thread, free it. Every
 * stream must still be closed with grpc_stream_close(), before or after
 * (what a stream needs of c lives until then). NULL is a no-op. */
void grpc_close(grpc_conn_t *c);

/* 0 while c works; else why it died (KP_EUNAVAILABLE: the server closed or
 * reset it, or a ping went unanswered; KP_ECORRUPT: it broke HTTP/2). */
int grpc_conn_error(grpc_conn_t *c);

/* One unary call of `method` ("/etcdserverpb.KV/Range") with the message
 * `req` (req_len bytes), waiting at most timeout_ms (> 0; also sent as
 * grpc-timeout). On 0, *st is the call's status and, when st->code is 0,
 * *resp the answer's message (malloc'd, the caller frees; a zero-length
 * message is a valid 1-byte allocation) of *resp_len bytes; else *resp is
 * NULL. Other outcomes: see OUTCOMES above. */
int grpc_call(grpc_conn_t *c, const char *method, const void *req, size_t req_len, int timeout_ms,
              grpc_status_t *st, uint8_t **resp, size_t *resp_len);

/* Give up on the unary calls on c that began (entered grpc_call) before
 * before_ns (clock_mono_ns()) and still wait: each ends now as at its
 * deadline (KP_ETIMEDOUT once serialized, else KP_EUNAVAILABLE; the stream
 * is reset), and c goes on working. For an owner that learned their answers
 * may never come: etcd loses the proposals a follower forwarded to a leader
 * that died, and answers them only at its request timeout (5 s + 2 election
 * timeouts). Any thread. */
int grpc_abandon_calls(grpc_conn_t *c, int64_t before_ns); /* how many */

/* A bidirectional stream's owner. */
typedef struct grpc_stream_cbs {
    /* One whole message from the server, n bytes at p (borrowed for the
     * call). Its bytes count against the stream's receive window until the
     * owner releases them (grpc_stream_release()); with GRPC_STREAM_WINDOW
     * bytes unreleased the server is told to stop sending (HTTP/2 flow
     * control), and other streams go on. A message over half of that
     * window is let in whole all the same. */
    void (*on_msg)(void *arg, const uint8_t *p, size_t n);
    /* The stream is over, once, after its last on_msg: rc 0 with the
     * server's status in *st (code 0 when it ended the stream cleanly; a
     * status made here when it reset the stream or broke gRPC's rules), or
     * rc KP_EUNAVAILABLE (the connection died), KP_ETOOLARGE (a message over
     * GRPC_MAX_MESSAGE; the stream is reset), KP_ECLOSED (grpc_close()),
     * KP_ENOMEM (a message could not be held; the stream is reset), with st
     * NULL. Not called after grpc_stream_close() has begun. */
    void (*on_end)(void *arg, int rc, const grpc_status_t *st);
    void *arg;
} grpc_stream_cbs_t;

/* Open a stream of `method` ("/etcdserverpb.Watch/Watch"); messages go with
 * grpc_stream_send(). No deadline: it lasts until either side ends it or
 * the connection dies. Errors: KP_EUNAVAILABLE (c is dead), KP_EINVAL,
 * KP_ENOMEM. */
int grpc_stream_open(grpc_conn_t *c, const char *method, const grpc_stream_cbs_t *cbs,
                     grpc_stream_t **out);

/* Queue one message (copied) to go out in order. Errors: KP_ECLOSED (the
 * stream has ended, or its sending side was closed), KP_ENOMEM, KP_EINVAL
 * (over GRPC_MAX_MESSAGE). */
int grpc_stream_send(grpc_stream_t *s, const void *msg, size_t n);

/* The owner is done with n bytes of delivered messages: they leave the
 * receive window (a WINDOW_UPDATE goes out as it reopens). */
void grpc_stream_release(grpc_stream_t *s, size_t n);

/* End the stream (RST_STREAM CANCEL if it is still open), wait until none
 * of its callbacks runs, free it. NULL is a no-op. */
void grpc_stream_close(grpc_stream_t *s);

#endif
