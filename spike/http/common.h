/*
 * common.h -- what every candidate server of the HTTP spike does with a
 * request, so that the candidates differ only in their HTTP layer.
 *
 * The spike (issue 16, item 1) measures HTTP/1.1 and HTTP/2 servers built on
 * Debian's field libraries: h2o (libh2o-evloop), libwebsockets, and nghttp2
 * with libuv, against today's libmicrohttpd. Each candidate is one file,
 * `<name>.c`, built and measured by `spike/http/run`. Each:
 *
 *   - runs as `<name> PORT CERT KEY` (PEM files), listens on 127.0.0.1:PORT
 *     with TLS only, offers ALPN "h2" and "http/1.1" (mhd: http/1.1 only),
 *     and prints "ready" on stdout once it accepts;
 *   - serves POST SPIKE_CREATE_PATH: the whole body (at most SPIKE_BODY_MAX
 *     bytes, else 413 before reading on) goes to spike_create(), whose status
 *     and bytes are the reply, with Content-Type application/json;
 *   - serves GET SPIKE_WATCH_PATH as a stream: SPIKE_WATCH_EVENTS lines of
 *     spike_event() sent one every SPIKE_WATCH_EVERY_MS from the event loop's
 *     timer (never a thread per stream), sent only as fast as the client
 *     reads (each candidate's backpressure: a stream whose unsent bytes exceed
 *     SPIKE_WATCH_QUEUE_MAX is ended);
 *   - answers anything else 404 with spike_not_found()'s body;
 *   - runs the event loop on one thread; handlers run inline.
 *
 * Thread-safe: the only state is spike_create()'s counter, an atomic.
 */
#ifndef SPIKE_COMMON_H
#define SPIKE_COMMON_H

#include <stddef.h>

#define SPIKE_CREATE_PATH "/api/v1/namespaces/default/configmaps"
#define SPIKE_WATCH_PATH "/api/v1/namespaces/default/configmaps?watch=1"
#define SPIKE_BODY_MAX ((size_t)3 << 20)
#define SPIKE_WATCH_EVENTS 100
#define SPIKE_WATCH_EVERY_MS 10
#define SPIKE_WATCH_QUEUE_MAX ((size_t)1 << 20)

/* A create: `body` (len bytes) parsed as a JSON object, given a uid,
 * resourceVersion and creationTimestamp, encoded again. Returns the reply
 * (malloc'd, caller frees; NULL only without memory) with its length in
 * *out_len and the status in *status: 201, or 400 with a Status naming the
 * problem. */
char *spike_create(const char *body, size_t len, int *status, size_t *out_len);

/* The n-th watch event, one line of JSON ending in '\n' (malloc'd). */
char *spike_event(int n, size_t *out_len);

/* A 404 Status body (static). */
const char *spike_not_found(size_t *out_len);

#endif
