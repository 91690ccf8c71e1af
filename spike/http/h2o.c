/*
 * h2o.c -- the spike's h2o candidate: libh2o-evloop 2.2.5 (Debian), its own
 * event loop, OpenSSL with ALPN h2 + http/1.1. See common.h.
 *
 * The whole request body arrives as req->entity: h2o buffers it and refuses
 * more than globalconf.max_request_entity_size on its own (HTTP/1.1: 413 and
 * the connection is closed; HTTP/2: RST_STREAM REFUSED_STREAM, no 413).
 * The watch stream is a generator: h2o calls proceed() once the previous
 * h2o_send() has been written out (socket writable, h2 window open), so events
 * produced meanwhile by the loop's 10 ms timeout wait in our queue.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <h2o.h>
#include <h2o/http2.h>

#include "common.h"

#define COLLECTION "/api/v1/namespaces/default/configmaps"

static h2o_globalconf_t config;
static h2o_context_t ctx;
static h2o_accept_ctx_t accept_ctx;
static h2o_timeout_t watch_every; /* one timeout list for every watch's tick */

static void reply(h2o_req_t *req, int status, const char *reason, const char *body, size_t len)
{
    req->res.status = status;
    req->res.reason = reason;
    req->res.content_length = len;
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
                   H2O_STRLIT("application/json"));
    h2o_send_inline(req, body, len); /* copies body into the request's pool */
}

static int not_found(h2o_req_t *req)
{
    size_t len;
    const char *body = spike_not_found(&len);
    reply(req, 404, "Not Found", body, len);
    return 0;
}

/* ---- the watch stream ---- */

typedef struct watch {
    h2o_generator_t super; /* proceed / stop */
    h2o_req_t *req;
    h2o_timeout_entry_t tick;
    int next;          /* events produced so far */
    int in_flight;     /* h2o_send() called, proceed() not yet */
    int ended;         /* final or error state sent, or stopped */
    int overflow;      /* client too slow: end with an error */
    char *out, *queue; /* bytes handed to h2o_send / waiting for proceed */
    size_t out_len, out_cap, queue_len, queue_cap;
} watch_t;

static void watch_flush(watch_t *w)
{
    if (w->ended || w->in_flight) return;
    if (w->overflow) {
        w->ended = 1;
        h2o_send(w->req, NULL, 0, H2O_SEND_STATE_ERROR);
        return;
    }
    int final = w->next == SPIKE_WATCH_EVENTS;
    if (!w->queue_len && !final) return; /* idle until the next tick */
    char *t = w->out; /* swap: the queue goes out, the sent buffer is reused */
    size_t cap = w->out_cap;
    w->out = w->queue;
    w->out_cap = w->queue_cap;
    w->out_len = w->queue_len;
    w->queue = t;
    w->queue_cap = cap;
    w->queue_len = 0;
    h2o_iovec_t buf = h2o_iovec_init(w->out, w->out_len);
    w->in_flight = !final;
    w->ended = final;
    h2o_send(w->req, &buf, buf.len ? 1 : 0, final ? H2O_SEND_STATE_FINAL : H2O_SEND_STATE_IN_PROGRESS);
}

static void watch_proceed(h2o_generator_t *g, h2o_req_t *req)
{
    (void)req;
    watch_t *w = (watch_t *)g;
    w->in_flight = 0;
    w->out_len = 0;
    watch_flush(w);
}

static void watch_stop(h2o_generator_t *g, h2o_req_t *req)
{
    (void)req;
    watch_t *w = (watch_t *)g;
    h2o_timeout_unlink(&w->tick);
    w->ended = 1;
}

static void watch_dispose(void *p) /* with the request's pool */
{
    watch_t *w = p;
    h2o_timeout_unlink(&w->tick);
    free(w->out);
    free(w->queue);
}

static void watch_tick(h2o_timeout_entry_t *entry)
{
    watch_t *w = H2O_STRUCT_FROM_MEMBER(watch_t, tick, entry);
    size_t len;
    char *ev = spike_event(w->next, &len);
    if (!ev || w->out_len + w->queue_len + len > SPIKE_WATCH_QUEUE_MAX) {
        free(ev);
        w->overflow = 1; /* sent as an error once the client has read what it has */
        watch_flush(w);
        return;
    }
    if (w->queue_len + len > w->queue_cap) {
        size_t cap = (w->queue_len + len) * 2;
        char *q = realloc(w->queue, cap);
        if (!q) {
            free(ev);
            w->overflow = 1;
            watch_flush(w);
            return;
        }
        w->queue = q;
        w->queue_cap = cap;
    }
    memcpy(w->queue + w->queue_len, ev, len);
    w->queue_len += len;
    free(ev);
    if (++w->next < SPIKE_WATCH_EVENTS) h2o_timeout_link(ctx.loop, &watch_every, &w->tick);
    watch_flush(w);
}

static int start_watch(h2o_req_t *req)
{
    watch_t *w = h2o_mem_alloc_shared(&req->pool, sizeof *w, watch_dispose);
    memset(w, 0, sizeof *w);
    w->super.proceed = watch_proceed;
    w->super.stop = watch_stop;
    w->req = req;
    w->tick.cb = watch_tick;
    req->res.status = 200;
    req->res.reason = "OK";
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
                   H2O_STRLIT("application/json"));
    h2o_start_response(req, &w->super);
    w->in_flight = 1;
    h2o_send(req, NULL, 0, H2O_SEND_STATE_IN_PROGRESS); /* headers now */
    h2o_timeout_link(ctx.loop, &watch_every, &w->tick);
    return 0;
}

static int query_has(h2o_req_t *req, const char *param)
{
    if (req->query_at == SIZE_MAX) return 0;
    const char *p = req->path.base + req->query_at + 1, *end = req->path.base + req->path.len;
    size_t n = strlen(param);
    while (p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        if (!amp) amp = end;
        if ((size_t)(amp - p) == n && !memcmp(p, param, n)) return 1;
        p = amp + 1;
    }
    return 0;
}

/* ---- handlers, registered by path ---- */

static int on_collection(h2o_handler_t *self, h2o_req_t *req)
{
    (void)self;
    if (!h2o_memis(req->path_normalized.base, req->path_normalized.len, H2O_STRLIT(COLLECTION)))
        return not_found(req);
    if (h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) &&
        (query_has(req, "watch=1") || query_has(req, "watch=true")))
        return start_watch(req);
    if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("POST"))) return not_found(req);
    if (req->entity.len > SPIKE_BODY_MAX) { /* h2o refused it already; kept as the contract */
        static const char msg[] = "{\"kind\":\"Status\",\"code\":413}";
        reply(req, 413, "Payload Too Large", msg, sizeof msg - 1);
        return 0;
    }
    int status;
    size_t len;
    char *out = spike_create(req->entity.base ? req->entity.base : "", req->entity.len, &status, &len);
    if (!out) {
        h2o_send_error_500(req, "Internal Server Error", "out of memory", 0);
        return 0;
    }
    reply(req, status, status == 201 ? "Created" : "Bad Request", out, len);
    free(out);
    return 0;
}

static int on_other(h2o_handler_t *self, h2o_req_t *req)
{
    (void)self;
    return not_found(req);
}

static void on_accept(h2o_socket_t *listener, const char *err)
{
    if (err) return;
    for (int i = 0; i < 64; i++) {
        h2o_socket_t *sock = h2o_evloop_socket_accept(listener);
        if (!sock) break;
        h2o_accept(&accept_ctx, sock); /* TLS handshake, ALPN, then h1 or h2 */
    }
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s PORT CERT KEY\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);

    SSL_CTX *ssl = SSL_CTX_new(TLS_server_method());
    if (!ssl || SSL_CTX_use_certificate_chain_file(ssl, argv[2]) != 1 ||
        SSL_CTX_use_PrivateKey_file(ssl, argv[3], SSL_FILETYPE_PEM) != 1) {
        fprintf(stderr, "cannot load %s / %s\n", argv[2], argv[3]);
        return 1;
    }
    SSL_CTX_set_min_proto_version(ssl, TLS1_2_VERSION);
    h2o_ssl_register_alpn_protocols(ssl, h2o_http2_alpn_protocols); /* h2, h2-16, h2-14, http/1.1 */

    h2o_config_init(&config);
    config.max_request_entity_size = SPIKE_BODY_MAX;
    h2o_hostconf_t *host = h2o_config_register_host(&config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    h2o_create_handler(h2o_config_register_path(host, COLLECTION, 0), sizeof(h2o_handler_t))->on_req =
        on_collection;
    h2o_create_handler(h2o_config_register_path(host, "/", 0), sizeof(h2o_handler_t))->on_req = on_other;

    h2o_evloop_t *loop = h2o_evloop_create();
    h2o_context_init(&ctx, loop, &config);
    h2o_timeout_init(loop, &watch_every, SPIKE_WATCH_EVERY_MS);
    accept_ctx.ctx = &ctx;
    accept_ctx.hosts = config.hosts;
    accept_ctx.ssl_ctx = ssl;

    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1])),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, SOMAXCONN) != 0) {
        perror("listen");
        return 1;
    }
    h2o_socket_read_start(h2o_evloop_socket_create(loop, fd, H2O_SOCKET_FLAG_DONT_READ), on_accept);

    printf("ready\n");
    fflush(stdout);
    while (h2o_evloop_run(loop, INT32_MAX) == 0)
        ;
    return 1;
}
