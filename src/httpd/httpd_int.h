/*
 * httpd_int.h -- what the parts of the engine share. Users read httpd.h;
 * this is the engine's inside:
 *   httpd.c      requests, the worker pool, hand-back, connections, the API
 *   httpd_h1.c   HTTP/1.1 (http-parser): one request at a time per connection
 *   httpd_h2.c   HTTP/2 (nghttp2): many streams per connection
 *   httpd_tls.c  TLS (GnuTLS over in-memory transport functions) and ALPN
 *
 * THREADS. A connection (conn_t) and everything on it belong to the loop
 * thread. A request (httpd_req_t) is shared: the fields marked (mu) are
 * guarded by h->mu, the ones marked (loop) are the loop thread's, the rest
 * are written by the loop thread before the request reaches a worker and
 * only read after.
 *
 * A REQUEST'S END. It is freed (httpd__req_free) once both of these hold:
 * its reply is complete (state R_DONE, every byte handed to the socket or
 * dropped) and its connection (HTTP/1.1) or stream (HTTP/2) is done with
 * it. Whoever sees the second of the two frees it: the loop thread
 * (written, or the connection or stream closed: httpd__req_detach), a
 * worker (a request whose client left while it waited), or hand-back
 * (after the loop has ended).
 */
#ifndef KP_HTTPD_INT_H
#define KP_HTTPD_INT_H

#include <gnutls/gnutls.h>
#include <http_parser.h>
#include <nghttp2/nghttp2.h>
#include <pthread.h>
#include <stdatomic.h>
#include <uv.h>

#include "httpd/httpd.h"
#include "lib/buf.h"
#include "lib/heap.h"

#define HTTPD_HEADERS_MAX      128          /* header fields per request: 431 beyond */
#define HTTPD_READ_CHUNK       65536        /* one read from a socket */
#define HTTPD_PLAIN_CHUNK      16384        /* one decrypted TLS record at most */
#define HTTPD_WRITE_HIGH       (256u << 10) /* bytes in flight to a socket: stop producing */
#define HTTPD_DRAIN_BYTES      (256u << 10) /* after a refusal, as Go's net/http */
#define HTTPD_DRAIN_MS         1000
#define HTTPD_PULL_SPARE       4 /* workers beyond the kept ones for pulled streams' bursts */
#define HTTPD_H2_STREAM_WINDOW (256u << 10) /* kube-apiserver's upload buffer per stream */
#define HTTPD_ADOPT_MIN        (64u << 10) /* a whole reply's body this big is sent from where it is */

typedef struct conn conn_t;

/* A TLS connection's client certificate, as verified after its handshake
 * (httpd_tls.c; CLIENT CERTIFICATES in httpd.h). Made once, before the
 * connection's first request, and never changed after: any thread may read
 * it. The connection and each request on it hold a reference (a request
 * may outlive its connection); the last one frees it. */
typedef struct httpd_peer {
    atomic_int refs;
    int state;   /* 1 verified, -1 sent but not verified */
    char *cn;    /* verified: the subject's common name ("" if none) */
    char **orgs; /* verified: the subject's organizations */
    size_t norgs;
    const char *why; /* not verified: a static phrase */
} httpd_peer_t;

typedef struct hdr {
    char *name, *value;
} hdr_t;

enum { R_NONE = 0, R_STREAM, R_DONE }; /* httpd_req.state */
enum { P_SNIFF = 0, P_H1, P_H2 };      /* conn.proto */

struct httpd_req {
    httpd_t *h;
    conn_t *conn; /* (mu) NULL once its connection or stream is gone */
    char method[16];
    buf_t target;
    char *path, *query; /* decoded path; query points into target */
    char **args;        /* the query decoded: name, value (NULL: none) pairs */
    size_t nargs;
    hdr_t hdrs[HTTPD_HEADERS_MAX];
    size_t nhdrs;
    buf_t body;
    int keep_alive; /* HTTP/1.1 */
    int upgrade;    /* HTTP/1.1: it asks to switch protocols (UPGRADES in httpd.h) */
    int discard;    /* the body is read and dropped (httpd_discard_body) */
    int local;
    int h2;
    httpd_peer_t *peer; /* the connection's client certificate (a reference), or NULL */
    void *data;
    int taken;           /* on_headers() asked for the body: on_drop() unless on_request() ran */
    int status;          /* the reply's status, once one is given */
    char peer_addr[48];  /* the client's address (its connection's); "" on the Unix socket */
    char *xhead[3];      /* httpd_set_reply_header(): a name and a value (owned), NULL */
    httpd_req_t *qnext;  /* the worker queue (mu) */
    int queued;          /* (mu) it went to the worker queue */
    int picked;          /* (mu) a worker took it */
    int told;            /* (mu) on_gone() ran */
    int in_cb;           /* (mu) on_gone() or on_drain() is running for it */
    pthread_t cb_thread; /* (mu) ... on this thread */

    /* the reply (mu) */
    int state;      /* R_NONE, R_STREAM (started), R_DONE (reply complete) */
    buf_t head;     /* HTTP/2: the response head, "name\0value\0" pairs, :status first */
    int no_body;    /* HTTP/2: the reply has no DATA (HEAD, 204, 304) */
    buf_t pre;      /* HTTP/1.1: a whole reply's head when out holds its adopted body */
    buf_t out;      /* bytes for the loop to send (HTTP/1.1: framed) */
    size_t out_off; /* what the loop has taken of out (sent on, or to nghttp2) */
    size_t unsent;  /* bytes handed back and not yet written (the budget's) */
    int gone;       /* the client went away */
    int want_drain; /* a stream write was refused over the budget */
    int aborted;    /* httpd_stream_abort(): close or reset, unsent bytes dropped */
    int tunnel;     /* httpd_upgrade(): the reply is raw bytes, the input on_data's */
    int resume;     /* httpd_upgrade_resume() asked to offer the held bytes again */
    int in_ready;
    httpd_req_t *ready_next;
    struct httpd_pull *pull; /* (mu) a pulled stream's (httpd_pull.c) */

    /* HTTP/2 (loop) */
    int32_t stream_id;
    size_t hdr_bytes;            /* the decompressed header list so far */
    int bad;                     /* a status to refuse with once the headers are in */
    int early;                   /* replied before the body was complete: the body is dropped */
    int submitted;               /* the response head went to nghttp2 */
    int deferred;                /* the data provider ran dry: resume on the next hand-back */
    uint64_t body_at;            /* uv_now() when the headers were complete */
    uint64_t drain_at;           /* answered early: uv_now() when the body began to be dropped */
    size_t dropped;              /* ... and the bytes of it dropped since */
    httpd_req_t *snext, **sprev; /* the connection's open streams */
};

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
    int stalled;       /* reading stopped for want of buffer room */
    int proto;         /* P_SNIFF until the protocol is known */
    size_t writing;    /* bytes in uv_write requests not completed */
    uint64_t wprog_at; /* uv_now() of the last write progress */
    uint64_t rx_at;    /* uv_now() of the last bytes read */
    uint64_t body_at;  /* HTTP/1.1: uv_now() when the current body began */
    int proven;        /* a request on it was authenticated (httpd_prove), or local */
    conn_t *next, **prev;
    conn_t *unext, **uprev; /* h->unproven, oldest first (while !proven) */

    /* TLS (httpd_tls.c) */
    int secure;           /* the listener speaks TLS */
    gnutls_session_t tls; /* NULL until the first TLS record is complete */
    int handshaken;
    httpd_peer_t *peer; /* the client's certificate (a reference), NULL: none */
    buf_t tin; /* ciphertext read and not yet decrypted */
    size_t tin_off;
    buf_t tout;  /* ciphertext to write */
    buf_t sniff; /* plain: the first bytes, until they tell the protocol */

    /* HTTP/1.1 (httpd_h1.c) */
    http_parser p;
    httpd_req_t *cur; /* being parsed, handled or written */
    int in_handler;   /* cur went to the workers (or was replied to) and is not done */
    int header_state; /* 0 none, 1 in a field, 2 in a value */
    size_t header_bytes;
    buf_t hname, hval;
    int refused;  /* a refusal reply is queued: close once it is sent */
    int peer_eof; /* the client shut its sending side: close after the reply */
    char peer_addr[48]; /* the client's IP address as text; "" on the Unix socket */
    int draining; /* httpd__conn_linger(): our side is shut; reading what the
                     client still sends (up to HTTPD_DRAIN_BYTES) so that
                     closing with unread bytes does not reset our last
                     reply, or GOAWAY, away */
    size_t drained;
    uv_shutdown_t shut;
    buf_t rest; /* bytes read while the parser was paused; switched:
                   bytes on_data did not take */
    int tunnel; /* switched (httpd_upgrade): input goes to on_data */

    /* HTTP/2 (httpd_h2.c) */
    nghttp2_session *h2;
    httpd_req_t *streams; /* open streams with a request */
    size_t nstreams;
    int h2_seen;      /* a request's headers came: idle, not header, timeout */
    uint64_t idle_at; /* uv_now() when the last stream closed (or accept) */
    int dirty;        /* on h->dirty: frames to produce */
    conn_t *dirty_next;
};

struct httpd {
    httpd_config_t cfg;
    httpd_limits_t lim;
    uv_loop_t loop;
    uv_async_t wake;
    uv_tcp_t tcp;
    uv_pipe_t unixl;
    int has_tcp, has_unix;
    pthread_t loop_thread;
    http_parser_settings settings;
    gnutls_certificate_credentials_t creds; /* NULL: plain TCP */
    int client_ca;                          /* creds trust client_ca_pem: ask for certificates */
    gnutls_priority_t prio;
    nghttp2_session_callbacks *h2cb;
    nghttp2_option *h2opt;

    pthread_mutex_t mu;
    pthread_cond_t cv;    /* the queue, stopping */
    pthread_cond_t cb_cv; /* a request's callback ended */
    int live_workers;     /* worker threads running (detached) */
    int idle_workers;     /* of those, waiting for a request */
    httpd_req_t *qhead, **qtail;
    size_t qlen;
    httpd_req_t *ready;
    int stopping;     /* workers exit; the loop closes everything */
    size_t live_reqs; /* requests not yet freed */
    int loop_done;    /* the loop thread has ended: replies free at once */
    pthread_cond_t done_cv;
    /* pulled streams (httpd_pull.c) */
    struct httpd_pull *pq_head, **pq_tail; /* ready to step, for the workers */
    size_t pqlen;
    kp_heap_t ptimers; /* parked with a wake time, earliest first */
    int timer_waiter;  /* an idle worker waits on tcv for the heap's top */
    pthread_cond_t tcv;
    size_t npulls; /* pulled streams not yet ended */

    /* loop thread */
    conn_t *conns;
    size_t nconns;
    conn_t *unproven, **unproven_tail;
    size_t nunproven;
    conn_t *dirty;                 /* HTTP/2 connections with frames to produce */
    int closing_all;               /* stopping: listeners closed */
    uv_timer_t grace;              /* stopping: closes what is left */
    char inbuf[HTTPD_READ_CHUNK];  /* each read is consumed before the next */
    char plain[HTTPD_PLAIN_CHUNK]; /* each decrypted record likewise */

    _Atomic uint64_t s_conns, s_h2conns, s_unproven, s_requests, s_refused, s_timeouts, s_evicted,
        s_accepted, s_h2accepted; /* httpd_stats() */
};

/* ---- httpd.c ---- */
const char *httpd__reason(int status);
/* Whether `headers` (name, value pairs ending with a NULL name; may be
 * NULL) names `name` (any case). */
int httpd__head_names(const char *const *headers, const char *name);
httpd_req_t *httpd__req_new(conn_t *c);
void httpd__req_free(httpd_req_t *r);
/* Add a request header (a repeated name joins the values with ", ").
 * Errors: KP_ETOOLARGE (HTTPD_HEADERS_MAX), KP_ENOMEM. */
int httpd__add_header(httpd_req_t *r, const char *n, size_t nlen, const char *v, size_t vlen);
/* %-decode the target's path into r->path; r->query after '?'. Errors:
 * KP_EINVAL (an encoded NUL), KP_ENOMEM. */
int httpd__split_target(httpd_req_t *r);
/* r's body is complete: to the worker queue, or 429 when it is full. */
void httpd__dispatch(httpd_req_t *r);
/* Reply with a short text/plain body; the reply is r's only one. Errors:
 * as httpd_reply. */
int httpd__refuse_text(httpd_req_t *r, int status);
/* Tell r's handler its client is gone (or has stopped sending), once. */
void httpd__tell_gone(httpd_req_t *r);
/* on_drain() for r if a refused stream write waits and the unsent bytes
 * fell below half the budget (h->mu held: released around the call). */
void httpd__drain_locked(httpd_t *h, httpd_req_t *r);
/* Whether r's body has taken longer than body_timeout_ms (loop thread). */
int httpd__body_late(conn_t *c, uint64_t began);
/* The timeout between requests: idle_timeout, or header_timeout while no
 * request on c has been authenticated. */
int httpd__idle_ms(conn_t *c);
/* r's connection or stream is gone: free r, or leave it to whoever ends
 * its reply (telling its handler). */
void httpd__req_detach(httpd_req_t *r);
void httpd__conn_close(conn_t *c);
/* Close c gracefully after what it sent: TLS close_notify, our end of
 * file, then read and drop what the client still sends (up to
 * HTTPD_DRAIN_BYTES, for HTTPD_DRAIN_MS) before the close. Closing with
 * unread bytes would reset the connection, and a reset can destroy our
 * last reply or GOAWAY on its way. */
void httpd__conn_linger(conn_t *c);
void httpd__timer_set(conn_t *c, int ms);
void httpd__set_reading(conn_t *c, int on);
/* Plaintext bytes (taken: malloc'd) to send on c; r is whose they are
 * (NULL: the connection's own). Encrypted first on TLS. */
void httpd__send(conn_t *c, httpd_req_t *r, char *bytes, size_t len);
/* TLS only: encrypt len plaintext bytes at p (borrowed: the ciphertext is
 * made before this returns) and send them. */
void httpd__send_ref(conn_t *c, httpd_req_t *r, const char *p, size_t len);
/* Plaintext from the client: to the protocol (sniffing it first). */
void httpd__deliver(conn_t *c, const char *data, size_t n);
/* The client's end of file (clean) or a read error. */
void httpd__eof(conn_t *c, int clean);
/* How many plaintext bytes c's protocol takes now (0: none until resumed). */
size_t httpd__room(conn_t *c);

/* ---- httpd_h1.c ---- */
void httpd__h1_settings(http_parser_settings *s);
void httpd__h1_start(conn_t *c);
void httpd__h1_input(conn_t *c, const char *data, size_t n);
void httpd__h1_eof(conn_t *c, int clean);
/* A head for r's reply: `headers`, then those of `more` (NULL, or pairs
 * as headers; the request's httpd_set_reply_header()) that headers does not
 * name. length < 0: chunked. Status 101: "Connection: Upgrade", no length.
 * Errors: KP_ENOMEM. */
int httpd__h1_head(buf_t *b, int status, const char *const *headers, const char *const *more,
                   long long length, int keep_alive);
/* The loop's side: c's request has bytes (or its completion) for it. */
void httpd__h1_ready(conn_t *c);
/* A write of c completed. */
void httpd__h1_written(conn_t *c);

/* ---- httpd_h2.c ---- */
int httpd__h2_global(httpd_t *h); /* callbacks and options; KP_ENOMEM */
void httpd__h2_global_free(httpd_t *h);
int httpd__h2_start(conn_t *c); /* the session and our SETTINGS; KP_ENOMEM */
void httpd__h2_input(conn_t *c, const char *data, size_t n);
/* r has something for the loop (head, data, end): submit or resume. */
void httpd__h2_ready(conn_t *c, httpd_req_t *r);
/* Produce frames while the socket keeps up; close a finished session. */
void httpd__h2_flush(conn_t *c);
/* Mark c for httpd__h2_flush at the end of this loop pass. */
void httpd__h2_dirty(conn_t *c);
void httpd__h2_flush_dirty(httpd_t *h);
void httpd__h2_close(conn_t *c);  /* the connection closes: every stream is gone */
void httpd__h2_goaway(conn_t *c); /* stopping: no new streams */
/* The connection's timer fired: reset the streams whose refused body has
 * been read long enough, and say so (nonzero); zero: the connection's own
 * deadline. */
int httpd__h2_timer(conn_t *c);
/* A response head for r (`more` as for httpd__h1_head). Errors: KP_ENOMEM. */
int httpd__h2_head(buf_t *b, int status, const char *const *headers, const char *const *more,
                   long long length);

/* Work is queued (h->mu held): wake an idle worker, or start one if every
 * worker is busy and the pool is below max_workers. */
void httpd__worker_wake_locked(httpd_t *h);

/* ---- httpd_pull.c ---- */
/* Wake r's pulled stream, if any (h->mu held): its client read (drained),
 * or went. */
void httpd__pull_wake_locked(httpd_req_t *r, int drained);
/* The next pulled stream to step (h->mu held; due timers first go to the
 * queue), NULL: none; *wake_ns: the earliest wake time still waiting
 * (CLOCK_MONOTONIC ns), 0: none. */
struct httpd_pull *httpd__pull_take_locked(httpd_t *h, int64_t *wake_ns);
/* Step a taken stream (a worker, no lock held). */
void httpd__pull_step(struct httpd_pull *p);
void httpd__pull_free_globals(httpd_t *h);

/* ---- httpd_tls.c ---- */
/* Credentials from PEM, TLS 1.2 and 1.3 only; client_ca_pem (NULL: none)
 * the CAs of client certificates. Errors: KP_EINVAL, KP_ENOMEM. */
int httpd__tls_global(httpd_t *h, const char *cert_pem, const char *key_pem,
                      const char *client_ca_pem);
void httpd__tls_global_free(httpd_t *h);
int httpd__tls_conn(conn_t *c); /* a server session; KP_ENOMEM */
void httpd__tls_conn_free(conn_t *c);
/* Drop a reference to p (NULL: no-op); the last one frees it. Any thread. */
void httpd__peer_put(httpd_peer_t *p);
/* Ciphertext in c->tin: handshake, decrypt, deliver while the protocol takes it. */
void httpd__tls_input(conn_t *c);
/* Encrypt into c->tout. Errors: KP_EIO, KP_ENOMEM. */
int httpd__tls_send(conn_t *c, const char *p, size_t n);
/* close_notify into c->tout. */
void httpd__tls_bye(conn_t *c);
/* Write what c->tout holds. */
void httpd__tls_flush(conn_t *c);

#endif
