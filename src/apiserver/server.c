/*
 * server.c -- the API server put together on the HTTP engine (src/httpd):
 * the listeners (TLS on TCP with HTTP/2 by ALPN, plain on the Unix socket),
 * request intake (limits, authentication on the headers), dispatch to the
 * rooms, in-process requests, start and stop.
 *
 * Threading: the engine's loop thread runs on_headers (authentication: a
 * map lookup); its workers (a pool that grows with waiting requests) run the
 * handlers; a streaming reply (a watch, a log follow) runs on a thread of
 * its own (http.c).
 *
 * Limits: a body over API_BODY_MAX gets 413 on its Content-Length before any
 * of it is read (a chunked one when it passes the cap); a stranger's body is
 * never read; more than max_inflight concurrent non-watch requests get 429;
 * more than max_watches open watches get 429, counted apart for the Unix
 * socket (max_watches_local) so that outside clients cannot take the
 * in-process components' watches. Connections, headers and timeouts: the
 * engine's limits (httpd.h), set from apiserver_config_t.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "apiserver/http/http.h"
#include "apiserver/rest/rest.h"
#include "apiserver/crd/crd.h"
#include "apiserver/kinds/kinds.h"
#include "apiserver/docs/docs.h"
#include "apiserver/apiserver_int.h"
#include "apiserver/encode/protobuf.h"
#include "apiserver/schema/schema.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/kinds/strategy_int.h"
#include "apiserver/rest/watchcache.h"
#include "httpd/httpd.h"

/* ---- intake ---- */

static int authenticate(api_req_t *r)
{
    /* x509: a client certificate the cluster CA signed (the engine verified
     * it), user = its CN (none: no user), groups = its O values. */
    const char *cn = NULL;
    if (r->hr && httpd_peer_cert(r->hr, &cn, NULL, NULL) == 1 && *cn) return 1;
    const char *h = api_header(r, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7)) return 0;
    /* The admin token and --token-auth-file's, compared in constant time
     * (authn.c); no authorization follows: AlwaysAllow. */
    return apiserver_authn_user(r->srv->admin_token, r->srv->cfg.tokens, h + 7) != NULL;
}

static int mutating(const api_req_t *r)
{
    return strcmp(r->method, "GET") && strcmp(r->method, "HEAD") && strcmp(r->method, "OPTIONS");
}

/* What can be decided on the headers alone, before any body byte is read:
 * who is asking, and whether the declared body fits. Replies (the body then
 * stays unread) and returns nonzero when the answer is known. On the
 * engine's loop thread: quick, no blocking. */
static int intake(api_req_t *r)
{
    apiserver_t *s = r->srv;
    r->authenticated = authenticate(r);
    if (r->authenticated) {
        httpd_prove(r->hr);
    } else {
        /* Health and version are public, as with kube-apiserver's
         * system:public-info-viewer; everything else, existing or not,
         * is 401 before routing. */
        api_route_t rt;
        api_view_t *v = api_view_get(s);
        int pub = !api_route_parse(v, r->path, &rt) &&
                  (rt.kind == API_ROUTE_HEALTH || rt.kind == API_ROUTE_VERSION);
        api_view_put(v);
        if (!pub) {
            api_reply_status(r, 401, "Unauthorized", NULL, "Unauthorized");
            return 1;
        }
    }
    const char *cl = api_header(r, "Content-Length");
    if (cl) {
        char *end;
        unsigned long long n = strtoull(cl, &end, 10);
        /* An authenticated client's is read and dropped, so that it reads
         * the 413 on a clean connection instead of a reset mid-upload; the
         * body timeout bounds the reading. A stranger's was refused above. */
        if (end != cl && !*end && n > API_BODY_MAX) {
            r->body_too_large = 1;
            httpd_discard_body(r->hr);
        }
    }
    return 0;
}

static int handle(api_req_t *r)
{
    apiserver_t *s = r->srv;
    if (r->body_too_large)
        return api_reply_status(r, 413, "RequestEntityTooLarge", NULL,
                                "Request entity too large: limit is %u", API_BODY_MAX);
    r->view = api_view_get(s);
    if (api_route_parse(r->view, r->path, &r->route))
        return api_reply_status(r, 404, "NotFound", NULL,
                                "the server could not find the requested resource");
    /* Now, while the query is there (the engine's request goes with the
     * reply; the metrics are recorded after it). */
    r->verb = api_verb_of(r);
    switch (r->route.kind) {
    case API_ROUTE_HEALTH:
    case API_ROUTE_VERSION:
        return api_serve_discovery(r);
    default:
        break;
    }
    if (!r->authenticated) return api_reply_status(r, 401, "Unauthorized", NULL, "Unauthorized");

    /* Kubernetes' max-requests-inflight and max-mutating-requests-inflight:
     * two budgets, so that a flood of writes cannot starve reads (and the
     * reverse). A watch is counted only while it is set up. */
    int mut = mutating(r);
    size_t *count = mut ? &s->inflight_mutating : &s->inflight;
    size_t cap = mut ? s->cfg.max_mutating_inflight : s->cfg.max_inflight;
    pthread_mutex_lock(&s->mu);
    int busy = *count >= cap;
    if (!busy) (*count)++;
    pthread_mutex_unlock(&s->mu);
    if (busy) /* as kube-apiserver's maxinflight filter: plain text, Retry-After 1 */
        return api_reply_bytes(r, 429, "text/plain; charset=utf-8",
                               "Too many requests, please try again later.\n", 43);

    int rc = r->route.kind == API_ROUTE_RESOURCE  ? api_serve_resource(r)
             : r->route.kind == API_ROUTE_METRICS ? api_serve_metrics(r)
                                                  : api_serve_discovery(r);
    pthread_mutex_lock(&s->mu);
    (*count)--;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* ---- the engine's callbacks ---- */

/* A request's end (http.c's api_req_release): watches count when they end,
 * with the time they were open. */
static void req_done(api_req_t *r)
{
    if (r->replied)
        api_metrics_record(r->srv->metrics, r, r->verb, r->code,
                           (double)(clock_mono_ns() - r->start_ns) / 1e9);
    api_view_put(r->view);
    r->view = NULL;
}

static httpd_next_t on_headers(void *arg, httpd_req_t *hr, size_t *body_max)
{
    api_req_t *r = calloc(1, sizeof *r);
    if (!r) {
        httpd_reply(hr, 500, NULL, NULL, 0);
        return HTTPD_REPLIED;
    }
    r->srv = arg;
    r->hr = hr;
    r->refs = 1;
    r->verb = API_VERB_OTHER; /* until routed (handle) */
    snprintf(r->method_buf, sizeof r->method_buf, "%s", httpd_method(hr));
    r->method = r->method_buf;
    if (!(r->path_buf = strdup(httpd_path(hr)))) {
        free(r);
        httpd_reply(hr, 500, NULL, NULL, 0);
        return HTTPD_REPLIED;
    }
    r->path = r->path_buf;
    r->start_ns = clock_mono_ns();
    httpd_set_data(hr, r);
    if (intake(r)) { /* replied: the reply is complete */
        api_req_release(r);
        return HTTPD_REPLIED;
    }
    *body_max = API_BODY_MAX;
    return HTTPD_READ_BODY;
}

static void on_request(void *arg, httpd_req_t *hr)
{
    (void)arg;
    api_req_t *r = httpd_data(hr);
    size_t len;
    const char *body = httpd_body(hr, &len);
    r->body = (buf_t){.p = (char *)body, .len = len, .cap = len + 1, .max = len};
    r->body_borrowed = 1;
    handle(r);
    if (!r->replied) /* a handler that could not reply (out of memory) */
        api_reply_status(r, 500, "InternalError", NULL, "out of memory");
    api_req_release(r);
}

int api_internal(apiserver_t *s, const char *method, const char *path, const json_t *body,
                 const char *manager, int *code, json_t **out)
{
    *code = 0;
    if (out) *out = NULL;
    char copy[2048];
    if (strlen(path) >= sizeof copy) return KP_EINVAL;
    snprintf(copy, sizeof copy, "%s", path);
    api_internal_t in = {.manager = manager};
    char *q = strchr(copy, '?');
    if (q) {
        *q++ = '\0';
        for (char *save = NULL, *kv = strtok_r(q, "&", &save); kv; kv = strtok_r(NULL, "&", &save)) {
            if (in.nquery == API_INTERNAL_QUERY_MAX) return KP_EINVAL;
            char *eq = strchr(kv, '=');
            if (eq) *eq++ = '\0';
            in.names[in.nquery] = kv;
            in.values[in.nquery++] = eq ? eq : "";
        }
    }
    api_req_t r = {.srv = s, .internal = &in, .method = method, .path = copy,
                   .authenticated = 1, .start_ns = clock_mono_ns()};
    buf_init(&r.body, API_BODY_MAX);
    buf_init(&in.out, (size_t)256 << 20);
    int rc = 0;
    if (body) {
        char *text = json_dumps(body, JSON_COMPACT);
        rc = !text || buf_append(&r.body, text, strlen(text)) ? KP_ENOMEM : 0;
        free(text);
    }
    if (!rc) {
        r.view = api_view_get(s);
        if (api_route_parse(r.view, r.path, &r.route) || r.route.kind != API_ROUTE_RESOURCE)
            api_reply_status(&r, 404, "NotFound", NULL,
                             "the server could not find the requested resource");
        else
            api_serve_resource(&r);
        *code = r.code;
        if (out && in.out.len) *out = json_loadb(in.out.p, in.out.len, 0, NULL);
    }
    api_view_put(r.view);
    json_decref(r.warnings);
    buf_free(&r.body);
    buf_free(&in.out);
    return rc;
}

int apiserver_listen_addr(const char *listen, struct sockaddr_in *sa)
{
    char host[64];
    const char *colon = strrchr(listen, ':');
    if (!colon || (size_t)(colon - listen) >= sizeof host) return KP_EINVAL;
    memcpy(host, listen, (size_t)(colon - listen));
    host[colon - listen] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535) return KP_EINVAL;
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    if (!*host || !strcmp(host, "localhost")) snprintf(host, sizeof host, "127.0.0.1");
    if (inet_pton(AF_INET, host, &sa->sin_addr) != 1) return KP_EINVAL;
    return 0;
}

/* The TCP listening socket (non-blocking), or a negative KP_* code: KP_EBUSY
 * when the address is in use. SO_REUSEADDR (a restart need not wait out
 * TIME_WAIT) but never SO_REUSEPORT, which would let a second server share
 * the port and take half of the connections. */
static int tcp_listen(const struct sockaddr_in *sa)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return KP_EIO;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (const struct sockaddr *)sa, sizeof *sa) || listen(fd, 4096)) {
        int rc = errno == EADDRINUSE ? KP_EBUSY : KP_EIO;
        close(fd);
        return rc;
    }
    return fd;
}

/* End every watch stream (its connection thread then finishes). */
static void end_watches(apiserver_t *s)
{
    api_view_t *v = s->view;
    for (size_t i = 0; v && i < v->dyn_count; i++) api_dyn_end(v->dyn[i]);
    for (size_t i = 0; s->caches && i < api_registry_count(); i++) wc_end(s->caches[i]);
}

static void close_caches(apiserver_t *s)
{
    api_view_t *v = s->view;
    for (size_t i = 0; v && i < v->dyn_count; i++) api_dyn_shutdown(v->dyn[i]);
    if (!s->caches) return;
    for (size_t i = 0; i < api_registry_count(); i++) wc_close(s->caches[i]);
    free(s->caches);
    s->caches = NULL;
}

/* A listening Unix socket at path (mode 0600; a stale file there is
 * replaced, a live one is KP_EBUSY), or a negative KP_* code. */
static int unix_listen(const char *path)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sun.sun_path) return KP_EINVAL;
    memcpy(sun.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return KP_EIO;
    if (!connect(fd, (struct sockaddr *)&sun, sizeof sun)) { /* another server serves there */
        close(fd);
        return KP_EBUSY;
    }
    close(fd);
    if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) return KP_EIO;
    unlink(path);
    mode_t old = umask(0177); /* born 0600: no moment where others may connect */
    int rc = bind(fd, (struct sockaddr *)&sun, sizeof sun);
    umask(old);
    if (rc || listen(fd, 512)) {
        rc = errno == EADDRINUSE ? KP_EBUSY : KP_EIO;
        close(fd);
        return rc;
    }
    return fd;
}

int apiserver_start(const apiserver_config_t *cfg, apiserver_t **out)
{
    struct sockaddr_in sa;
    int rc = apiserver_listen_addr(cfg->listen ? cfg->listen : "127.0.0.1:6443", &sa);
    if (rc) return rc;
    if (!cfg->store || !cfg->admin_token || !*cfg->admin_token) return KP_EINVAL;

    apiserver_t *s = calloc(1, sizeof *s);
    if (!s) return KP_ENOMEM;
    s->cfg = *cfg;
    if (!s->cfg.max_inflight) s->cfg.max_inflight = 400;
    if (!s->cfg.max_mutating_inflight) s->cfg.max_mutating_inflight = 200;
    if (!s->cfg.max_watches) s->cfg.max_watches = 10000;
    if (!s->cfg.max_watches_local) s->cfg.max_watches_local = 10000;
    if (!s->cfg.max_connections) s->cfg.max_connections = 16384;
    if (!s->cfg.max_unauth_connections) s->cfg.max_unauth_connections = 256;
    if (s->cfg.header_timeout_s <= 0) s->cfg.header_timeout_s = 32;
    if (s->cfg.idle_timeout_s <= 0) s->cfg.idle_timeout_s = 90;
    if (s->cfg.body_timeout_s <= 0) s->cfg.body_timeout_s = 60;
    if (!(s->admin_token = strdup(cfg->admin_token))) {
        free(s);
        return KP_ENOMEM;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->metrics_mu, NULL);
    s->admit_create = api_namespace_admit_create;
    s->req_done = req_done;
    if (!(s->metrics = api_metrics_new())) {
        rc = KP_ENOMEM;
        goto fail;
    }
    if ((rc = api_schema_load(&s->schema))) goto fail;
    if ((rc = api_ensure_namespaces(s)) || (rc = api_ensure_objects(s))) goto fail;
    size_t nres = api_registry_count();
    if (!(s->caches = calloc(nres, sizeof *s->caches))) {
        rc = KP_ENOMEM;
        goto fail;
    }
    for (size_t i = 0; i < nres; i++) {
        char prefix[128];
        api_key_prefix(api_registry_at(i), prefix, sizeof prefix);
        /* A version served from another's keys keeps its own cache of them,
         * converted (so its objects are encoded once, as every cache's). */
        const api_resource_t *res = api_registry_at(i);
        wc_config_t wcc = {.history_bytes = s->cfg.watch_cache_bytes,
                           .fields = res->field_selectors};
        if (api_served_differs(res)) wcc.convert = api_as_served, wcc.convert_arg = (void *)res;
        if ((rc = wc_open(cfg->store, prefix, &wcc, &s->caches[i]))) {
            log_error("apiserver", "watch cache for %s: %s", prefix, err_str(rc));
            goto fail;
        }
    }
    if ((rc = api_view_publish(s, NULL, 0)) || (rc = api_crd_start(s)) ||
        (rc = api_apiservice_start(s)))
        goto fail;
    int lfd = tcp_listen(&sa);
    if (lfd < 0) {
        rc = lfd;
        goto fail;
    }
    struct sockaddr_in bound;
    socklen_t blen = sizeof bound;
    s->port = getsockname(lfd, (struct sockaddr *)&bound, &blen) ? ntohs(sa.sin_port)
                                                                 : ntohs(bound.sin_port);
    /* Before the first request: repaired allocations, the kubernetes Service. */
    if ((rc = api_services_start(s))) {
        close(lfd);
        goto fail;
    }
    int ufd = -1;
    if (cfg->unix_socket && (ufd = unix_listen(cfg->unix_socket)) < 0) {
        rc = ufd;
        log_error("apiserver", "serving on %s: %s", cfg->unix_socket, err_str(rc));
        close(lfd);
        goto fail;
    }
    int tls = cfg->tls_cert_pem && cfg->tls_key_pem;
    /* Workers: a few kept, more while requests wait, up to the in-flight
     * caps (handle() answers 429 beyond them) and some room for the quick
     * answers (401, 429, health). */
    httpd_config_t hc = {
        .tcp_fd = lfd,
        .unix_fd = ufd,
        .cert_pem = tls ? cfg->tls_cert_pem : NULL,
        .key_pem = tls ? cfg->tls_key_pem : NULL,
        .client_ca_pem = tls ? cfg->client_ca_pem : NULL,
        .workers = 4,
        .max_workers = (int)(s->cfg.max_inflight + s->cfg.max_mutating_inflight + 32),
        .limits = {.max_connections = s->cfg.max_connections,
                   .header_bytes = API_HEADER_MEMORY,
                   .header_timeout_ms = s->cfg.header_timeout_s * 1000,
                   .idle_timeout_ms = s->cfg.idle_timeout_s * 1000,
                   .body_timeout_ms = s->cfg.body_timeout_s * 1000,
                   /* a stream's bytes the client has not taken: with the
                    * watch cache's queue (watch_queue_bytes), what a watcher
                    * that stopped reading holds */
                   .stream_budget = API_STREAM_BUDGET,
                   .grace_ms = 1000,
                   .max_unproven = s->cfg.max_unauth_connections},
        .on_headers = on_headers,
        .on_request = on_request,
        .arg = s,
    };
    if ((rc = httpd_start(&hc, &s->httpd))) {
        log_error("apiserver", "HTTP server: %s", err_str(rc));
        if (ufd >= 0) unlink(cfg->unix_socket);
        goto fail;
    }
    *out = s;
    return 0;
fail:
    api_apiservice_stop(s);
    api_crd_stop(s);
    api_services_stop(s);
    close_caches(s);
    api_view_put(s->view);
    api_schema_free(s->schema);
    api_metrics_free(s->metrics);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->metrics_mu);
    free(s->admin_token);
    free(s);
    return rc;
}

int apiserver_port(const apiserver_t *s) { return s->port; }

void apiserver_set_metrics_source(apiserver_t *s, int (*fn)(void *arg, char **text), void *arg)
{
    pthread_mutex_lock(&s->metrics_mu);
    s->metrics_fn = fn;
    s->metrics_arg = arg;
    pthread_mutex_unlock(&s->metrics_mu);
}

void apiserver_set_component_probe(apiserver_t *s, int (*fn)(void *arg, const char *name),
                                   void *arg)
{
    pthread_mutex_lock(&s->metrics_mu);
    s->component_fn = fn;
    s->component_arg = arg;
    pthread_mutex_unlock(&s->metrics_mu);
}

void apiserver_stop(apiserver_t *s)
{
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    pthread_mutex_unlock(&s->mu);
    /* Ending the watches ends their streams, which httpd_stop() waits for;
     * the caches close after them, when no request can use them. */
    api_apiservice_stop(s);
    api_crd_stop(s);
    end_watches(s);
    httpd_stop(s->httpd); /* closes the listening sockets */
    if (s->cfg.unix_socket) unlink(s->cfg.unix_socket);
    api_services_stop(s); /* no request can allocate any more */
    close_caches(s);
    api_view_put(s->view);
    api_schema_free(s->schema);
    api_metrics_free(s->metrics);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->metrics_mu);
    free(s->admin_token);
    free(s);
}
