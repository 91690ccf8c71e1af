/*
 * server.c -- the API server put together on libmicrohttpd: the listeners
 * and their daemons, request intake (limits, authentication on the headers),
 * dispatch to the rooms, in-process requests, start and stop.
 *
 * Threading: thread per connection (MHD_USE_THREAD_PER_CONNECTION). A watch
 * is a chunked reply whose reader callback blocks on its connection's own
 * thread until the next event, so it never holds up another request. Those
 * threads wait with poll(), not select(): a server with a thousand watches
 * and the clients of its own controllers holds more than FD_SETSIZE sockets.
 *
 * Limits: a body over API_BODY_MAX gets 413 (the rest of it is discarded);
 * more than max_inflight concurrent non-watch requests get 429; more than
 * max_watches open watches get 429, counted apart for the Unix socket
 * (max_watches_local) so that outside clients cannot take the in-process
 * components' watches. rest_watch.c closes a watch whose client stopped
 * reading through api_req_socket().
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
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

/* gnutls priorities of the TLS listener: its defaults without TLS 1.0/1.1. */
#define API_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

/* ---- intake ---- */

static int authenticate(api_req_t *r)
{
    const char *h = api_header(r, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncasecmp(h, "Bearer ", 7)) return 0;
    /* The admin token and --token-auth-file's, compared in constant time
     * (authn.c); no authorization follows: AlwaysAllow. */
    return apiserver_authn_user(r->srv->admin_token, r->srv->cfg.tokens, h + 7) != NULL;
}

static int mutating(const api_req_t *r)
{
    return strcmp(r->method, "GET") && strcmp(r->method, "HEAD") && strcmp(r->method, "OPTIONS");
}

/* What can be decided on the headers alone, before any body byte is kept:
 * who is asking. Replies (and so ends the request, its
 * body unread, the connection closed after the reply) when the answer is
 * known. */
static void intake(api_req_t *r)
{
    apiserver_t *s = r->srv;
    /* A header with a NUL byte (Go's server: 400) cannot be refused here:
     * libmicrohttpd 0.9.75 cuts the line at the NUL and reports only what
     * precedes it. The server of issue 16 parses headers itself. */
    r->authenticated = authenticate(r);
    if (r->authenticated) {
        api_conns_prove(s->conns, r->conn);
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
            return;
        }
    }
    /* A declared body over the cap: an authenticated client's is read and
     * dropped (none of it kept), so that it reads the 413 on a clean
     * connection instead of a reset mid-upload; the body timeout bounds the
     * reading. A stranger's was refused above on its headers. */
    const char *cl = api_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl) {
        char *end;
        unsigned long long n = strtoull(cl, &end, 10);
        if (end != cl && !*end && n > API_BODY_MAX) r->body_too_large = 1;
    }
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

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    (void)version;
    api_req_t *r = *con_cls;
    if (!r) {
        if (!(r = calloc(1, sizeof *r))) return MHD_NO;
        r->srv = cls;
        r->conn = conn;
        r->method = method;
        r->path = url;
        r->start_ns = clock_mono_ns();
        buf_init(&r->body, API_BODY_MAX);
        *con_cls = r;
        /* A reply queued here goes out at once; libmicrohttpd then reads
         * none of the body and closes the connection after the reply. */
        intake(r);
        return MHD_YES;
    }
    if (r->replied) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (*upload_data_size) {
        /* A body that trickles in is cut off at the body timeout (a
         * stalled one earlier, at the idle timeout). */
        int64_t limit = (int64_t)r->srv->cfg.body_timeout_s * 1000000000;
        if (clock_mono_ns() - r->start_ns > limit) return MHD_NO;
        if (!r->body_too_large && buf_append(&r->body, upload_data, *upload_data_size))
            r->body_too_large = 1;
        *upload_data_size = 0;
        return MHD_YES;
    }
    handle(r);
    /* A handler that could not queue a reply (out of memory) drops the connection. */
    return r->replied ? MHD_YES : MHD_NO;
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

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)conn, (void)toe;
    api_req_t *r = *con_cls;
    if (!r) return;
    /* Watches count when they end, with the time they were open. */
    if (r->replied)
        api_metrics_record(r->srv->metrics, r, api_verb_of(r), r->code,
                           (double)(clock_mono_ns() - r->start_ns) / 1e9);
    buf_free(&r->body);
    api_view_put(r->view);
    json_decref(r->warnings);
    free(r);
    *con_cls = NULL;
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

/* Close every watch cache, the run-time resources' too (requests may still
 * hold them: their calls then end with KP_ECLOSED). */
/* libmicrohttpd's own messages are mostly clients going away mid-stream (a
 * watcher that stopped reading, a TLS peer that hung up): normal for a
 * server, so they go to the debug log rather than stderr. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    if (n && msg[n - 1] == '\n') msg[n - 1] = '\0';
    log_debug("http", "%s", msg);
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

/* The MHD daemon of cfg.unix_socket: plain HTTP, the same handlers. */
static int start_unix(apiserver_t *s)
{
    int fd = unix_listen(s->cfg.unix_socket);
    if (fd < 0) return fd;
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
            MHD_USE_ERROR_LOG,
        0, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)(s->cfg.max_watches_local + s->cfg.max_inflight + 64),
        MHD_OPTION_THREAD_STACK_SIZE, (size_t)(256 * 1024), MHD_OPTION_END);
    pthread_mutex_lock(&s->mu); /* api_req_local() reads it */
    s->unix_daemon = d;
    pthread_mutex_unlock(&s->mu);
    if (!d) {
        close(fd);
        unlink(s->cfg.unix_socket);
        return KP_EIO;
    }
    return 0;
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
        wc_config_t wcc = {.history_bytes = s->cfg.watch_cache_bytes};
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
    int tls = cfg->tls_cert_pem && cfg->tls_key_pem;
    api_conns_config_t ccfg = {.listen_fd = lfd, .tls = tls,
                               .max_connections = s->cfg.max_connections,
                               .max_unproven = s->cfg.max_unauth_connections,
                               .header_timeout_s = s->cfg.header_timeout_s};
    if ((rc = api_conns_new(&ccfg, &s->conns))) goto fail;

    /* Connections come from the front door (http_conn.c), not a socket of
     * libmicrohttpd's own. */
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_POLL | MHD_USE_ERROR_LOG | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC;
    if (tls) flags |= MHD_USE_TLS;
    struct MHD_OptionItem tls_opts[4] = {{MHD_OPTION_END, 0, NULL}};
    if (tls) {
        tls_opts[0] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0,
                                              (void *)cfg->tls_key_pem};
        tls_opts[1] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0,
                                              (void *)cfg->tls_cert_pem};
        /* TLS 1.2 and 1.3 only, as kube-apiserver's default minimum. */
        tls_opts[2] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0,
                                              (void *)API_TLS_PRIORITIES};
    }
    /* Limits: see apiserver_config_t and http_conn.c. */
    s->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_ARRAY, tls_opts, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_NOTIFY_CONNECTION,
        api_conns_notify, s->conns, MHD_OPTION_CONNECTION_LIMIT, (unsigned)s->cfg.max_connections,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)s->cfg.idle_timeout_s,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)API_HEADER_MEMORY,
        MHD_OPTION_THREAD_STACK_SIZE,
        (size_t)(256 * 1024), MHD_OPTION_END);
    if (!s->daemon) {
        rc = KP_EIO;
        goto fail;
    }
    if (cfg->unix_socket && (rc = start_unix(s))) {
        log_error("apiserver", "serving on %s: %s", cfg->unix_socket, err_str(rc));
        MHD_stop_daemon(s->daemon);
        goto fail;
    }
    if ((rc = api_conns_start(s->conns, s->daemon))) {
        if (s->unix_daemon) MHD_stop_daemon(s->unix_daemon);
        MHD_stop_daemon(s->daemon);
        goto fail;
    }
    *out = s;
    return 0;
fail:
    api_apiservice_stop(s);
    api_crd_stop(s);
    api_services_stop(s);
    api_conns_free(s->conns);
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
    /* Ending the watches lets the connection threads MHD_stop_daemon() waits
     * for finish; the caches close after them, when no request can use them. */
    api_apiservice_stop(s);
    api_crd_stop(s);
    end_watches(s);
    if (s->unix_daemon) {
        MHD_stop_daemon(s->unix_daemon); /* closes the listening socket */
        unlink(s->cfg.unix_socket);
    }
    api_conns_stop(s->conns); /* no more connections, before the daemon goes */
    MHD_stop_daemon(s->daemon);
    api_conns_free(s->conns);
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
