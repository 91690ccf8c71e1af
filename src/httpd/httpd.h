/*
 * httpd.h -- the HTTP server engine of issue 16: HTTP/1.1 and HTTP/2
 * (chosen by ALPN) over TLS on the TCP listener, on one event loop thread,
 * with the request handlers on a bounded pool of workers. A listener
 * without TLS (the Unix socket; TCP when no certificate is given) speaks
 * HTTP/1.1, and HTTP/2 to a client that opens with its preface (prior
 * knowledge, as curl --http2-prior-knowledge).
 *
 * It serves the API server, the node's log server and the components'
 * health endpoints. Libraries (README, "The next HTTP server"): libuv (the loop), GnuTLS over
 * in-memory transport functions (TLS 1.2 and 1.3 only), nghttp2 (HTTP/2
 * framing, flow control and flood limits), http-parser (HTTP/1.1). It knows
 * nothing of Kubernetes: the API server, the node's log server and the
 * components' health endpoints each sit on it.
 *
 * THREADS
 *   The loop thread does all I/O: accepting, TLS, parsing, framing, timers
 *   and every write to a socket. It never blocks: no handler, no fsync, no
 *   lock held across I/O runs on it.
 *   Workers (httpd_config_t.workers kept, up to max_workers while work
 *   waits) run on_request() and the steps of pulled streams. A handler may
 *   block (a store write's fsync, a lock); one blocked handler holds one
 *   worker. A pulled stream with nothing to send holds none.
 *   Workers run as SCHED_BATCH (Linux; where refused, as they were): a
 *   worker the loop wakes waits for the loop to sleep or for the scheduler's
 *   tick instead of taking the loop's core at once. Every request passes
 *   through the loop twice, so a loop put aside by the worker it just woke
 *   held up every connection; 16 clients creating ConfigMaps on 2 cores:
 *   5,850 to 6,450 a second, 183 to 162 µs of CPU each.
 *   httpd_reply*() and httpd_stream_*() may be called from any thread on a
 *   request the caller holds: they hand the work to the loop (uv_async) and
 *   return without waiting for the socket.
 *
 * A REQUEST'S LIFE
 *   1. Its headers are complete (loop thread): on_headers() sees the method,
 *      target, headers and peer. It must be quick and must not block (a
 *      bearer token's lookup in a map is its kind of work). It returns
 *      HTTPD_READ_BODY with the most body bytes it accepts, or replies at
 *      once (401, 413, 429...) and returns HTTPD_REPLIED. No body byte is
 *      read before then: an unauthenticated client cannot make the server
 *      buffer (issue 14).
 *   2. Its body is complete (loop thread): the request joins the worker
 *      queue. A full queue (HTTPD_QUEUE_MAX requests waiting) answers 429
 *      with Retry-After: 1, as Kubernetes' max-requests-inflight does.
 *   3. on_request() runs on a worker. The handler owes exactly one reply:
 *      httpd_reply(), or httpd_stream_start() followed by any number of
 *      httpd_stream_write() and one httpd_stream_end(). The request is the
 *      handler's until that reply is complete (after httpd_reply() or
 *      httpd_stream_end() returns it is gone; the engine frees it once
 *      sent). A handler may keep it past on_request()'s return, e.g. a watch
 *      fed by another thread.
 *   4. The client may go away at any time (connection closed, RST_STREAM, a
 *      timeout). The request is then gone for the network, but stays valid
 *      until the handler's reply is complete: replies are dropped, and
 *      httpd_stream_write() answers KP_ECLOSED so that a producer stops.
 *      on_gone() runs once (on the loop thread) so that a handler waiting
 *      elsewhere (a watch with no events) can be woken; a request no worker
 *      has begun is dropped without on_request() (on_drop() tells the
 *      application, as for a request the engine refuses after on_headers()
 *      took it: 413, 429). The loop keeps reading
 *      while a handler works, to notice a client leaving (what a client
 *      sends meanwhile waits, up to 128 KiB, for the next request). A
 *      client that shuts only its sending side (end of file) before its
 *      reply has begun streaming also gets on_gone(), as a Go handler's
 *      context ends then; its reply is still sent, and the connection
 *      closes after it. During a stream, end of file is the client gone.
 *
 * LIMITS AND TIMEOUTS (issue 14's, carried over; the README's Limits table)
 *   Every one answers with the protocol's own refusal: an HTTP status where
 *   a request exists (400, 413, 414, 431, 429), RST_STREAM or GOAWAY on
 *   HTTP/2, else a closed connection.
 *   - connections: at most max_connections open; an accept beyond it is
 *     closed at once.
 *   - time to the first complete request headers (TLS handshake included):
 *     header_timeout_ms; a keep-alive connection idle between requests:
 *     idle_timeout_ms; a reply whose bytes the client stops reading:
 *     write_timeout_ms without progress closes it.
 *   - request line and headers: header_bytes (431; on HTTP/2 the
 *     decompressed header list, SETTINGS_MAX_HEADER_LIST_SIZE); the target:
 *     414 beyond HTTPD_TARGET_MAX.
 *   - body: what on_headers() allowed (413 as soon as Content-Length or the
 *     bytes received pass it; nothing more is buffered).
 *   - HTTP/2: max_streams concurrent streams per connection
 *     (SETTINGS_MAX_CONCURRENT_STREAMS: a stream beyond it is refused with
 *     RST_STREAM(REFUSED_STREAM)); streams reset by the client count against
 *     nghttp2's token bucket (a burst of 1,000, then 33 a second; past it,
 *     GOAWAY: the rapid-reset defence of 1.52.0-1+deb12u1); nghttp2's own
 *     limits on PING, SETTINGS and CONTINUATION floods. A refusal on a stream
 *     whose body is still coming is followed by RST_STREAM(NO_ERROR), as
 *     Go's server does. Each stream's receive window is 256 KiB.
 *   - HTTP/2 timers: with no stream open, header_timeout from accept until
 *     the first request, then idle_timeout from the last stream's close
 *     (frames that open no stream do not extend it).
 *   - a request whose body was refused unread, a switched connection's
 *     end, and an HTTP/2 session's end (GOAWAY, e.g. a rapid-reset flood):
 *     once the last bytes are sent, our side is shut and up to 256 KiB more
 *     is read and dropped for up to 1 s before the close, so that the close
 *     does not reset the refusal or the GOAWAY away (as Go's net/http).
 *   - a streaming reply: at most stream_budget bytes not yet sent (see
 *     STREAMS).
 *
 * UNPROVEN (strangers cannot crowd out clients that authenticated)
 *   A TCP connection is unproven until the application calls httpd_prove()
 *   on one of its requests (the Unix socket's are proven from the start).
 *   An unproven connection waits between requests at most header_timeout_ms
 *   (not idle_timeout_ms). At max_connections, a new connection closes the
 *   oldest unproven one, else it is closed itself. Past max_unproven, a new
 *   connection closes the oldest unproven one that has sent nothing for 5 s
 *   and has no request in progress (a client busy with its handshake keeps
 *   its place). Unproven connections cost no thread: only memory.
 *
 * CALLBACKS AND THE END OF A REPLY
 *   on_gone() and on_drain() never run after the call that completes the
 *   reply (httpd_reply(), httpd_stream_end()) has returned: that call waits
 *   for one that is running on another thread. Both must be quick and must
 *   not wait for the handler; either may end the reply itself.
 *
 * STREAMS (watches, logs, follow)
 *   httpd_stream_write() copies its bytes into the request's queue and
 *   never blocks. HTTP/1.1 sends them as chunks, HTTP/2 as DATA frames
 *   within the stream's flow-control window. A client that never reads (or
 *   never opens its window) holds up to the budget: a pulled stream ends
 *   after its stall time (httpd_stream_pull); a producer that writes
 *   itself ends its stream when on_drain does not come
 *   (httpd_stream_abort). If the unsent bytes
 *   would pass stream_budget, the write is refused with KP_ETOOLARGE and
 *   nothing is queued: the producer ends the stream (Kubernetes closes a watcher that
 *   cannot keep up; the client relists). on_drain() (loop thread) tells a
 *   producer that paused itself that the queue fell below half the budget.
 *
 * CLIENT CERTIFICATES (httpd_config_t.client_ca_pem)
 *   The TLS handshake asks for a client certificate, sending the CAs'
 *   names, and goes on without one (GnuTLS' GNUTLS_CERT_REQUEST; Go's
 *   tls.RequestClientCert, as kube-apiserver asks). A certificate sent is
 *   verified once per connection, right after the handshake, on the loop
 *   thread: it must chain to one of the CAs, be within its validity period
 *   at that moment, and, when it has an extended key usage extension, list
 *   TLS client authentication (as Kubernetes' x509 authenticator demands
 *   ExtKeyUsageClientAuth). The result stays with the connection and every
 *   request on it (httpd_peer_cert()); a certificate that fails does not
 *   fail the handshake: the application decides (it may still accept a
 *   bearer token). What the names mean is the application's business.
 *
 * SHUTDOWN
 *   httpd_stop() stops accepting, sends GOAWAY on HTTP/2 connections and
 *   "Connection: close" on the next HTTP/1.1 reply, waits up to
 *   grace_ms for the requests in progress (streams are ended by their
 *   handlers through on_gone()), then closes everything and joins the loop
 *   and the workers.
 *
 * ERRORS: the KP_* convention of lib/err.h.
 */
#ifndef KP_HTTPD_H
#define KP_HTTPD_H

#include <stddef.h>
#include <stdint.h>

#include "lib/buf.h"

#define HTTPD_TARGET_MAX 8192 /* request target (path and query): 414 beyond */
#define HTTPD_QUEUE_MAX  1024 /* requests waiting for a worker: 429 beyond */

typedef struct httpd httpd_t;
typedef struct httpd_req httpd_req_t;

/* on_headers()'s answer. */
typedef enum httpd_next {
    HTTPD_READ_BODY = 0, /* read the body (up to *body_max), then on_request() */
    HTTPD_REPLIED = 1,   /* on_headers() replied; the body is not read */
} httpd_next_t;

typedef struct httpd_limits {
    size_t max_connections; /* open at once, all listeners */
    size_t header_bytes;    /* request line and headers */
    size_t max_streams;     /* HTTP/2 concurrent streams per connection */
    size_t stream_budget;   /* unsent bytes of one streaming reply */
    int header_timeout_ms;  /* accept to the first complete headers */
    int idle_timeout_ms;    /* between requests on a kept-alive connection */
    int write_timeout_ms;   /* a reply's bytes making no progress */
    int body_timeout_ms;    /* a request body, from its headers to its end */
    int grace_ms;           /* httpd_stop(): requests in progress may finish */
    size_t max_unproven;    /* TCP connections with no authenticated request yet
                               (see UNPROVEN); 0: no such cap */
} httpd_limits_t;

typedef struct httpd_config {
    int tcp_fd;            /* listening TCP socket, or -1; the engine's from httpd_start */
    int unix_fd;           /* listening Unix socket, or -1;  on (closed if it fails) */
    const char *cert_pem;  /* TLS on tcp_fd: the certificate chain and key (PEM, */
    const char *key_pem;   /*   read at start); both NULL: plain on tcp_fd */
    /* CAs whose client certificates the TLS listener accepts (PEM, read at
     * start; with cert_pem only). The handshake asks for a certificate
     * (naming these CAs) without requiring one; see CLIENT CERTIFICATES.
     * NULL: none is asked for. */
    const char *client_ca_pem;
    int workers;           /* handler threads kept (>= 1) */
    int max_workers;       /* more are started while requests wait, up to
                              this (0: workers); each extra one ends after
                              10 s without work */
    httpd_limits_t limits; /* zeros: the defaults httpd_limits_default() gives */
    /* Loop thread, quick, non-blocking: see A REQUEST'S LIFE, 1. *body_max
     * comes in as 0 (no body) and may be raised. */
    httpd_next_t (*on_headers)(void *arg, httpd_req_t *r, size_t *body_max);
    /* A worker: see A REQUEST'S LIFE, 3. */
    void (*on_request)(void *arg, httpd_req_t *r);
    /* Loop thread, once, for a request whose handler still holds it when its
     * client goes away; may be NULL. */
    void (*on_gone)(void *arg, httpd_req_t *r);
    /* Loop thread: a stream's unsent bytes fell below half its budget after
     * a write was refused; may be NULL. */
    void (*on_drain)(void *arg, httpd_req_t *r);
    /* A request on_headers() took (HTTPD_READ_BODY) ends without
     * on_request(): the engine refused it (`status` 413: its body passed
     * body_max; 429: the worker queue was full; 400, 500) or its client left
     * before a worker took it (`status` 0). For the application's data
     * (httpd_data); r is freed after it returns. Loop thread or a worker,
     * once, quick; never for a request whose on_request() ran, nor for one
     * on_headers() replied to. May be NULL. */
    void (*on_drop)(void *arg, httpd_req_t *r, int status);
    /* Loop thread: bytes from the client of a switched connection (see
     * UPGRADES), borrowed for the call. Quick, non-blocking. Returns how
     * many it took (at most n): the engine keeps the rest, and stops
     * reading, until httpd_upgrade_resume(). NULL: no handler upgrades. */
    size_t (*on_data)(void *arg, httpd_req_t *r, const char *p, size_t n);
    void *arg;
} httpd_config_t;

/* The defaults: Kubernetes' where it has one (a 3 MiB body is the caller's,
 * through on_headers()). */
httpd_limits_t httpd_limits_default(void);

/* Start the loop thread and the workers. *out is the caller's until
 * httpd_stop(). SIGPIPE left at its default is set to ignored (a client
 * that closes must not kill the process). Errors: KP_EINVAL (no listener, bad PEM, workers < 1,
 * client_ca_pem without cert_pem), KP_ENOMEM, KP_EIO. */
int httpd_start(const httpd_config_t *cfg, httpd_t **out);

/* Stop (see SHUTDOWN) and free. Not from a handler or a callback. NULL:
 * no-op. */
void httpd_stop(httpd_t *h);

/* ---- a request (valid while its handler holds it; strings borrowed) ---- */

const char *httpd_method(const httpd_req_t *r);
const char *httpd_path(const httpd_req_t *r);  /* %-decoded, without the query */
const char *httpd_query(const httpd_req_t *r); /* raw, without '?'; "" if none */
/* The query decoded ('+' a space, %XX a byte, as Go's url.ParseQuery): the
 * first value of `name` (NULL when absent or given without '='), and every
 * pair in order (value NULL for a bare name). */
const char *httpd_arg(const httpd_req_t *r, const char *name);
size_t httpd_nargs(const httpd_req_t *r);
void httpd_arg_at(const httpd_req_t *r, size_t i, const char **name, const char **value);
/* A header's value (names case-insensitive; repeated headers joined with
 * ", " as RFC 9110 allows), or NULL. */
const char *httpd_header(const httpd_req_t *r, const char *name);
/* Header i in the order received: its value, and its name in *name; NULL
 * when i is past the last. For headers that repeat or share a prefix. */
const char *httpd_header_at(const httpd_req_t *r, size_t i, const char **name);
/* The body (NUL-terminated past len; "" with len 0 when none). Only from
 * on_request() on. */
const char *httpd_body(const httpd_req_t *r, size_t *len);
int httpd_is_h2(const httpd_req_t *r);    /* came as an HTTP/2 stream */
int httpd_is_local(const httpd_req_t *r); /* came in on the Unix socket */
/* Read r's body and drop it (on_headers() only): on_request() then runs
 * with an empty body, for a reply (413) that the client reads on a clean
 * connection instead of a reset in the middle of its upload. The reading is
 * bounded by body_timeout_ms. For clients that proved who they are: a
 * stranger's body is not worth reading. */
void httpd_discard_body(httpd_req_t *r);
/* The request's client proved who it is (on_headers() only, loop thread):
 * its connection is no longer subject to UNPROVEN's rules. */
void httpd_prove(httpd_req_t *r);
/* The client certificate of r's connection (see CLIENT CERTIFICATES): 1
 * verified, with *cn its subject's common name ("" when it has none) and
 * (*orgs)[0..*norgs) its subject's organizations in order; 0 none (a
 * plain or Unix socket connection, no client_ca_pem, or the client sent
 * none); -1 one was sent but did not verify. On 0 and -1, *cn and *orgs are
 * NULL and *norgs 0. Any out-pointer may be NULL. The strings are borrowed,
 * valid while r is (they outlive its connection). Any thread, while r is
 * held (on_headers() included). */
int httpd_peer_cert(const httpd_req_t *r, const char **cn, const char *const **orgs, size_t *norgs);
/* Why r's connection's client certificate did not verify (a short phrase:
 * "signed by an unknown authority", "expired", "not for client
 * authentication"...), NULL when httpd_peer_cert() is not -1. Borrowed as
 * httpd_peer_cert()'s strings. */
const char *httpd_peer_cert_error(const httpd_req_t *r);
/* The request target as received (path and query, not decoded), as Go's
 * RequestURI. */
const char *httpd_target(const httpd_req_t *r);
/* The client's IP address as text ("127.0.0.1", "::1"); "" on the Unix
 * socket. */
const char *httpd_peer(const httpd_req_t *r);
/* A header (name and value copied) that every reply to r carries: the
 * application's, and the engine's refusals after on_headers() (413, 429).
 * A header of the same name the reply gives itself wins. on_headers() only,
 * before any reply. Errors: KP_ENOMEM. */
int httpd_set_reply_header(httpd_req_t *r, const char *name, const char *value);
/* The handler's own pointer, for on_gone() and on_drain(). */
void httpd_set_data(httpd_req_t *r, void *data);
void *httpd_data(const httpd_req_t *r);

/* ---- replies: exactly one per request ----
 * `headers` is NULL or name, value pairs ending with a NULL name (copied).
 * Content-Length, Date, Transfer-Encoding and Connection are the engine's. */

/* A whole reply. `body` is taken (malloc'd; freed once sent or dropped).
 * Errors: KP_EINVAL (a reply was already given), KP_ENOMEM (body freed). */
int httpd_reply(httpd_req_t *r, int status, const char *const *headers, char *body, size_t len);

/* Begin a streaming reply. Errors: KP_EINVAL, KP_ENOMEM. */
int httpd_stream_start(httpd_req_t *r, int status, const char *const *headers);
/* Queue bytes (copied). Errors: KP_ETOOLARGE (over the stream's budget:
 * nothing queued), KP_ECLOSED (the client is gone), KP_ENOMEM. */
int httpd_stream_write(httpd_req_t *r, const void *data, size_t len);
/* End it (the last chunk, or END_STREAM); the request is gone after this. */
void httpd_stream_end(httpd_req_t *r);
/* End it abruptly, dropping what is not yet sent (a client that stopped
 * reading): HTTP/1.1 closes the connection, HTTP/2 resets the stream
 * (RST_STREAM CANCEL). The request is gone after this. */
void httpd_stream_abort(httpd_req_t *r);

/* ---- pulled streams: a producer asked for each piece, holding no thread
 * while it has none ----
 * httpd_stream_pull() starts a streaming reply (as httpd_stream_start) and
 * calls next(arg, out, wait_ms) on the worker pool for each piece. next
 * returns 0 with bytes in *out to send them; 0 with none, or an error, to
 * end the stream; KP_EAGAIN with none when it has nothing yet: the stream
 * then parks, holding no thread, until httpd_pull_kick(), or until
 * *wait_ms milliseconds pass (next may set it; it comes as -1: no time).
 * next should not block: a producer that blocks holds a worker meanwhile.
 * The engine hands each piece on in parts of a quarter of the stream
 * budget; while the client is behind, the stream parks too, for up to
 * stall_ms (0: 60 s) of no progress. The stream ends when next says so,
 * when the client goes, or after a stall or httpd_pull_cancel(): abruptly
 * (httpd_stream_abort) when the client was not reading, else cleanly.
 * done(arg) runs on a worker just before the end (r is still valid then;
 * it is gone after). next and done never run at the same time on two
 * threads. on_gone and on_drain still reach the application. Errors
 * (done not called): as httpd_stream_start, KP_ENOMEM. */
int httpd_stream_pull(httpd_req_t *r, int status, const char *const *headers, int stall_ms,
                      int (*next)(void *arg, buf_t *out, int *wait_ms), void (*done)(void *arg),
                      void *arg);
/* A parked stream's producer has something: next runs again soon (a kick
 * while next runs makes it run once more). Any thread, while the stream
 * runs (until done()); it never blocks, so it may be called with the
 * producer's own locks held. */
void httpd_pull_kick(httpd_req_t *r);
/* Give up on a pulled stream's client: a wait for it to read ends, and the
 * stream with it. Any thread, while the stream runs (until done()). */
void httpd_pull_cancel(httpd_req_t *r);
/* Whether r's client has gone (its connection closed, its stream reset, or
 * it stopped sending: on_gone's cases). Any thread, while r is held. */
int httpd_gone(httpd_req_t *r);

/* ---- UPGRADES (HTTP/1.1's Upgrade: WebSocket, SPDY/3.1) ----
 * A request that asks to switch protocols ("Connection: Upgrade" and an
 * Upgrade header, with no body; CONNECT is refused with 400) reaches
 * on_headers() and on_request() as any other, with httpd_upgrade_asked()
 * true. Its handler either replies to it as to any request (the connection
 * closes after that reply: the client may have sent bytes of the new
 * protocol behind its request), or switches with httpd_upgrade(). HTTP/2
 * has no Upgrade (RFC 9113 8.6): clients send these requests over
 * HTTP/1.1, as Go's do.
 *
 * On a switched connection the reply is a stream of the application's raw
 * bytes, and the client's bytes go to on_data() instead of a parser:
 *   - httpd_stream_write() queues bytes as they are (no chunks), within
 *     stream_budget; on_drain() as for any stream.
 *   - on_data() gets the client's bytes in order; bytes that came behind
 *     the request, before the switch, come first. What it does not take
 *     waits (reading stops) until httpd_upgrade_resume().
 *   - httpd_stream_end() closes the connection once every queued byte is
 *     sent (TLS close_notify, then end of file); httpd_stream_abort()
 *     closes it at once.
 *   - the client's end of file, a reset, or a write stalled for
 *     write_timeout_ms is on_gone(); on_data() does not run after it.
 *   - no other engine timeout runs: how long a switched connection may
 *     stay quiet is its protocol's to bound (WebSocket pings, Kubernetes'
 *     streaming idle timeout), and its handler's.
 * on_gone(), on_drain() and on_data() never run after httpd_stream_end()
 * or httpd_stream_abort() has returned (CALLBACKS AND THE END OF A REPLY). */

/* Whether r asks to switch protocols: its Upgrade header's value (e.g.
 * "websocket", "SPDY/3.1"), NULL when it does not. */
const char *httpd_upgrade_asked(const httpd_req_t *r);
/* Switch r's connection (a worker, before any reply): 101 Switching
 * Protocols with `headers` (the application's: Upgrade,
 * Sec-WebSocket-Accept, X-Stream-Protocol-Version, ...; Connection is the
 * engine's). Errors: KP_EINVAL (not asked, an HTTP/2 stream, a reply
 * already given, no on_data), KP_ENOMEM. The client having gone is not an
 * error: on_gone() tells. */
int httpd_upgrade(httpd_req_t *r, const char *const *headers);
/* on_data() left bytes: offer them again, and read on once it takes them
 * all. Any thread, while r is held. */
void httpd_upgrade_resume(httpd_req_t *r);

/* ---- counters (any thread) ---- */
typedef struct httpd_stats {
    uint64_t connections;    /* open now */
    uint64_t h2_connections; /* of those, HTTP/2 */
    uint64_t accepted;       /* accepted since start */
    uint64_t h2_accepted;    /* of those, became HTTP/2 */
    uint64_t requests;       /* served since start */
    uint64_t queued;         /* waiting for a worker now */
    uint64_t workers;        /* worker threads now */
    uint64_t streams;        /* pulled streams open now (parked ones hold no thread) */
    uint64_t unproven;       /* connections open with no authenticated request */
    uint64_t evicted;        /* unproven connections closed for newer ones */
    uint64_t refused;        /* connections refused or closed by a limit */
    uint64_t timeouts;       /* connections closed by a timeout */
} httpd_stats_t;
void httpd_stats(httpd_t *h, httpd_stats_t *out);

#endif
