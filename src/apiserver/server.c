/*
 * server.c -- the API server put together on the HTTP engine (src/httpd):
 * the listeners (TLS on TCP with HTTP/2 by ALPN, plain on the Unix socket),
 * request intake (limits, authentication on the headers), dispatch to the
 * rooms, in-process requests, start and stop. The audit log (audit/audit.h)
 * hooks in at on_headers (the Audit-ID), once authenticated and authorized
 * (intake), and at the request's end (req_done).
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
#include <pthread.h>
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
#include "apiserver/auth/authz.h"
#include "apiserver/auth/satoken.h"
#include "apiserver/audit/audit.h"
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
#include "lib/par.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/kinds/strategy_int.h"
#include "apiserver/rest/watchcache.h"
#include "apiserver/ui/ui.h"
#include "httpd/httpd.h"

/* ---- intake ---- */

static const char *const anonymous_groups[] = {API_GROUP_UNAUTHENTICATED};

/* The authentication chain (authn.h): a verified client certificate, then a
 * bearer token. Sets r->user on API_AUTHN_OK. */
static api_authn_result_t authenticate(api_req_t *r)
{
    apiserver_t *s = r->srv;
    /* x509: a client certificate the cluster CA signed (the engine verified
     * it once per connection): user = its CN, groups = its O values, and
     * system:authenticated. One that did not verify is no credential. */
    const char *cn = NULL;
    const char *const *orgs = NULL;
    size_t norgs = 0;
    int cert = r->hr ? httpd_peer_cert(r->hr, &cn, &orgs, &norgs) : 0;
    if (cert == 1 && cn && *cn) {
        const char **groups = calloc(norgs + 1, sizeof *groups);
        if (!groups) return API_AUTHN_FAILED;
        size_t n = 0;
        int member = 0;
        for (size_t i = 0; i < norgs; i++) {
            groups[n++] = orgs[i];
            member |= !strcmp(orgs[i], API_GROUP_AUTHENTICATED);
        }
        if (!member) groups[n++] = API_GROUP_AUTHENTICATED;
        free(r->user_owned);
        r->user_owned = groups;
        r->user = (api_user_t){.name = cn, .uid = "", .groups = groups, .ngroups = n};
        return API_AUTHN_OK;
    }
    /* A certificate that did not verify is an error, not "no credentials":
     * unless a token succeeds, 401 (never the anonymous user). */
    api_authn_result_t none = cert == -1 ? API_AUTHN_FAILED : API_AUTHN_NONE;
    const char *h = api_header(r, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7)) return none;
    const char *tok = h + 7;
    /* A JWT of ours: a ServiceAccount token (satoken.h). */
    if (s->sa && api_sa_is_jwt(tok)) {
        char err[256];
        void *owned = NULL;
        api_authn_result_t a =
            api_sa_authenticate(s->sa, tok, NULL, 0, &r->user, &owned, err, sizeof err);
        if (a == API_AUTHN_OK) {
            free(r->user_owned);
            r->user_owned = owned;
        }
        if (a != API_AUTHN_NONE) return a;
    }
    /* Compared in constant time (authn.c). */
    return api_authn_token(s->admin_token, &s->admin_user, s->cfg.tokens, tok, &r->user);
}

/* Answer 403 for attributes no authorizer allowed, as Kubernetes'
 * responsewriters.Forbidden words it. */
static void forbidden(api_req_t *r, const api_attrs_t *a, const char *reason)
{
    char msg[2048], gr[256];
    api_authz_forbidden_message(a, msg, sizeof msg);
    /* A component refused is a cluster that does not work: say so (users
     * refused are only answered). */
    const char *u = a->user && a->user->name ? a->user->name : "";
    if (!strncmp(u, "system:serviceaccount:kube-system:", 34) || !strncmp(u, "system:kube-", 12) ||
        !strcmp(u, APISERVER_NODE_SIMULATOR_USER))
        log_warn("apiserver", "a component was refused: %s", msg);
    snprintf(gr, sizeof gr, "%s%s%s", a->resource, *a->group ? "." : "", a->group);
    json_t *details = json_object();
    if (details && *a->name) json_object_set_new(details, "name", json_string(a->name));
    if (details && *a->group) json_object_set_new(details, "group", json_string(a->group));
    if (details && *a->resource) json_object_set_new(details, "kind", json_string(a->resource));
    const char *sep = *reason ? ": " : "";
    if (!a->resource_request || !*a->resource)
        api_reply_status(r, 403, "Forbidden", details, "forbidden: %s%s%s", msg, sep, reason);
    else if (*a->name)
        api_reply_status(r, 403, "Forbidden", details, "%s \"%s\" is forbidden: %s%s%s", gr,
                         a->name, msg, sep, reason);
    else
        api_reply_status(r, 403, "Forbidden", details, "%s is forbidden: %s%s%s", gr, msg, sep,
                         reason);
    json_decref(details);
}

/* Authorize r (authz.h) and answer 403 when no authorizer allows it:
 * returns nonzero when it replied. On the loop thread (`quick`), a
 * decision that needs the node's pods is left to the request's worker
 * (r->authz_later: handle() asks again); the body of such a request, an
 * authenticated kubelet's, is read meanwhile. */
static int authorize(api_req_t *r, int quick)
{
    apiserver_t *s = r->srv;
    if (!s->authz) return 0;
    /* system:masters may do everything (authz.h): no attributes to read. */
    if (api_user_in_group(&r->user, API_GROUP_MASTERS)) {
        api_audit_authorized(r, 1, "");
        return 0;
    }
    api_attrs_t a;
    if (api_attrs_of(r, &r->user, &a)) {
        api_reply_status(r, 500, "InternalError", NULL, "out of memory");
        return 1;
    }
    a.quick = quick;
    char reason[1024];
    int ok = api_authorize(s->authz, &a, reason, sizeof reason);
    r->authz_later = ok == API_AUTHZ_LATER;
    if (r->authz_later) {
        api_attrs_clear(&a);
        return 0;
    }
    api_audit_authorized(r, ok, reason);
    if (!ok) forbidden(r, &a, reason);
    api_attrs_clear(&a);
    return !ok;
}

/* ---- impersonation (Kubernetes' WithImpersonation) ---- */

#define IMP_PREFIX_EXTRA "Impersonate-Extra-"

/* May r's user impersonate: verb impersonate on resource (group) `name`
 * (for user extras: subresource `sub`)? 0, or nonzero after a 403. */
static int may_impersonate(api_req_t *r, const char *group, const char *resource, const char *ns,
                           const char *sub, const char *name)
{
    if (!r->srv->authz) return 0;
    api_attrs_t a = {.user = &r->user,
                     .verb = "impersonate",
                     .resource_request = 1,
                     .ns = ns,
                     .group = group,
                     .version = "",
                     .resource = resource,
                     .sub = sub,
                     .name = name,
                     .path = r->path};
    char reason[1024];
    if (api_authorize(r->srv->authz, &a, reason, sizeof reason)) return 0;
    forbidden(r, &a, reason);
    return 1;
}

/* An extra key as Kubernetes reads it from the header name: lower case,
 * %-escapes decoded. */
static void extra_key(const char *in, char *out, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; in[i] && o + 1 < len; i++) {
        unsigned v;
        if (in[i] == '%' && in[i + 1] && in[i + 2] && sscanf(in + i + 1, "%2x", &v) == 1) {
            out[o++] = (char)v;
            i += 2;
        } else {
            out[o++] = (char)(in[i] >= 'A' && in[i] <= 'Z' ? in[i] - 'A' + 'a' : in[i]);
        }
    }
    out[o] = '\0';
}

/* The user r's Impersonate-* headers ask to act as, each part authorized
 * for the authenticated user; r->user becomes it (its strings copied into
 * r->user_owned). 0 to go on (also when no header asks), or nonzero after
 * replying (400, 403). */
static int impersonate(api_req_t *r)
{
    const char *user = api_header(r, "Impersonate-User");
    const char *uid = api_header(r, "Impersonate-Uid");
    size_t ngroups = 0, nextra = 0, bytes = 0;
    const char *name, *value;
    for (size_t i = 0; (value = api_header_at(r, i, &name)); i++) {
        if (!strcasecmp(name, "Impersonate-Group")) {
            ngroups++;
            bytes += strlen(value) + 1;
        } else if (!strncasecmp(name, IMP_PREFIX_EXTRA, strlen(IMP_PREFIX_EXTRA))) {
            nextra++;
            bytes += strlen(name) + strlen(value) + 2;
        }
    }
    if (!user && !uid && !ngroups && !nextra) return 0;
    if (!user) {
        api_reply_status(r, 400, "BadRequest", NULL,
                         "requested impersonation of groups, extra or uid without "
                         "impersonating a user");
        return 1;
    }
    /* Each part, as the authenticated user. */
    char sa_ns[256] = "", sa_name[256] = "";
    int sa = !strncmp(user, "system:serviceaccount:", 22) &&
             sscanf(user + 22, "%255[^:]:%255s", sa_ns, sa_name) == 2;
    if (sa ? may_impersonate(r, "", "serviceaccounts", sa_ns, "", sa_name)
           : may_impersonate(r, "", "users", "", "", user))
        return 1;
    for (size_t i = 0; (value = api_header_at(r, i, &name)); i++) {
        if (!strcasecmp(name, "Impersonate-Group")) {
            if (may_impersonate(r, "", "groups", "", "", value)) return 1;
        } else if (!strncasecmp(name, IMP_PREFIX_EXTRA, strlen(IMP_PREFIX_EXTRA))) {
            char key[256];
            extra_key(name + strlen(IMP_PREFIX_EXTRA), key, sizeof key);
            if (may_impersonate(r, "", "userextras", "", key, value)) return 1;
        }
    }
    if (uid && may_impersonate(r, "authentication.k8s.io", "uids", "", "", uid)) return 1;

    /* The user: one block for the arrays and the strings. */
    size_t ng = ngroups + 3; /* + the ServiceAccount groups, + (un)authenticated */
    bytes += strlen(user) + (uid ? strlen(uid) : 0) + strlen(sa_ns) + 64;
    size_t head = ng * sizeof(char *) + nextra * (sizeof(api_user_extra_t) + sizeof(char *));
    char *block = calloc(1, head + bytes);
    if (!block) {
        api_reply_status(r, 500, "InternalError", NULL, "out of memory");
        return 1;
    }
    const char **groups = (const char **)block;
    api_user_extra_t *extra = (api_user_extra_t *)(block + ng * sizeof(char *));
    const char **values = (const char **)(extra + nextra);
    char *p = block + head;
#define COPY(dst, src)                                                                             \
    do {                                                                                           \
        size_t n_ = strlen(src) + 1;                                                               \
        memcpy(p, src, n_);                                                                        \
        dst = p;                                                                                   \
        p += n_;                                                                                   \
    } while (0)
    api_user_t u = {.uid = ""};
    COPY(u.name, user);
    if (uid) COPY(u.uid, uid);
    size_t n = 0, ne = 0, nv = 0;
    int has_auth = 0, has_unauth = 0;
    for (size_t i = 0; (value = api_header_at(r, i, &name)); i++) {
        if (!strcasecmp(name, "Impersonate-Group")) {
            COPY(groups[n], value);
            has_auth |= !strcmp(value, API_GROUP_AUTHENTICATED);
            has_unauth |= !strcmp(value, API_GROUP_UNAUTHENTICATED);
            n++;
        } else if (!strncasecmp(name, IMP_PREFIX_EXTRA, strlen(IMP_PREFIX_EXTRA))) {
            char key[256];
            extra_key(name + strlen(IMP_PREFIX_EXTRA), key, sizeof key);
            /* Values of one key together, in the order received. */
            size_t k = 0;
            while (k < ne && strcmp(extra[k].key, key))
                k++;
            if (k == ne) {
                COPY(extra[k].key, key);
                extra[k].values = values + nv;
                ne++;
            }
            /* Values are laid out per key: move later keys' values up. */
            const char **slot = (const char **)extra[k].values + extra[k].nvalues;
            size_t later = 0;
            for (size_t j = k + 1; j < ne; j++)
                later += extra[j].nvalues;
            memmove(slot + 1, slot, later * sizeof *slot);
            for (size_t j = k + 1; j < ne; j++)
                extra[j].values++;
            COPY(*slot, value);
            extra[k].nvalues++;
            nv++;
        }
    }
    if (sa && !ngroups) { /* a ServiceAccount's groups are known */
        COPY(groups[n], "system:serviceaccounts");
        n++;
        char g[300];
        snprintf(g, sizeof g, "system:serviceaccounts:%s", sa_ns);
        COPY(groups[n], g);
        n++;
    }
    if (strcmp(user, API_USER_ANONYMOUS)) {
        if (!has_auth && !has_unauth) groups[n++] = API_GROUP_AUTHENTICATED;
    } else if (!has_unauth) {
        groups[n++] = API_GROUP_UNAUTHENTICATED;
    }
#undef COPY
    u.groups = groups;
    u.ngroups = n;
    u.extra = extra;
    u.nextra = ne;
    free(r->user_owned);
    r->user_owned = block;
    r->user = u;
    return 0;
}

static int mutating(const api_req_t *r)
{
    return strcmp(r->method, "GET") && strcmp(r->method, "HEAD") && strcmp(r->method, "OPTIONS");
}

/* What can be decided on the headers alone, before any body byte is read:
 * who is asking, whether they may, and whether the declared body fits.
 * Replies (the body then stays unread) and returns nonzero when the answer
 * is known. On the engine's loop thread: quick, no blocking. */
static int intake(api_req_t *r)
{
    apiserver_t *s = r->srv;
    api_authn_result_t who = authenticate(r);
    if (who == API_AUTHN_FAILED || (who == API_AUTHN_NONE && s->cfg.no_anonymous)) {
        api_reply_status(r, 401, "Unauthorized", NULL, "Unauthorized");
        return 1;
    }
    if (who == API_AUTHN_OK) {
        httpd_prove(r->hr);
    } else {
        /* No credentials: the anonymous user, who may do what RBAC grants
         * system:unauthenticated (health, version, discovery). Its
         * connection stays unproven and a refused request's body unread. */
        r->user = (api_user_t){
            .name = API_USER_ANONYMOUS, .uid = "", .groups = anonymous_groups, .ngroups = 1};
    }
    api_audit_authenticated(r); /* the audit log: the policy, RequestReceived */
    /* The dashboard (ui/ui.h): its files hold no cluster data, so anyone
     * may load them (the page then asks the API as its user); its own
     * endpoints run labs, for authenticated users the authorizers allow
     * (anonymous: 401, so that the page asks for a token). */
    api_ui_path_t ui = api_ui_path_kind(r->path);
    if (ui == API_UI_API && who != API_AUTHN_OK) {
        api_reply_status(r, 401, "Unauthorized", NULL, "Unauthorized");
        return 1;
    }
    if (ui != API_UI_ASSET && (impersonate(r) || authorize(r, 1))) return 1;
    const char *cl = api_header(r, "Content-Length");
    if (cl) {
        char *end;
        unsigned long long n = strtoull(cl, &end, 10);
        /* An authorized client's is read and dropped, so that it reads
         * the 413 on a clean connection instead of a reset mid-upload; the
         * body timeout bounds the reading. A refused one's was not read. */
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
    if (r->authz_later && authorize(r, 0)) return 0; /* replied: 403 */
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
    if (api_node_restrict_request(r)) return 0; /* replied: 403 */
    switch (r->route.kind) {
    case API_ROUTE_HEALTH:
    case API_ROUTE_VERSION:
        return api_serve_discovery(r);
    default:
        break;
    }
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
             : r->route.kind == API_ROUTE_OIDC    ? api_sa_serve_oidc(r)
             : r->route.kind == API_ROUTE_UI      ? api_ui_serve(r)
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
    api_audit_end(r);
    api_view_put(r->view);
    r->view = NULL;
}

/* A request taken at its headers that no handler will see: the engine
 * refused it (`status`: 413, 429) or its client left while it waited. */
static void on_drop(void *arg, httpd_req_t *hr, int status)
{
    (void)arg;
    api_req_t *r = httpd_data(hr);
    if (!r) return;
    if (status) {
        r->replied = 1;
        r->code = status;
    }
    api_req_release(r);
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
    api_audit_init(r); /* the Audit-ID; the audit log's record */
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
    if (!r->replied) { /* a handler that could not reply (out of memory) */
        api_audit_panic(r);
        api_reply_status(r, 500, "InternalError", NULL, "out of memory");
    }
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
    api_internal_t in = {.manager = manager, .drop_body = !out};
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
    /* The server itself asks: it may do everything. */
    static const char *const masters[] = {API_GROUP_MASTERS, API_GROUP_AUTHENTICATED};
    api_req_t r = {.srv = s,
                   .internal = &in,
                   .method = method,
                   .path = copy,
                   .user = {.name = "system:apiserver", .uid = "", .groups = masters, .ngroups = 2},
                   .start_ns = clock_mono_ns()};
    buf_init(&r.body, API_BODY_MAX);
    buf_init(&in.out, (size_t)256 << 20);
    int rc = 0;
    /* A create's or update's object is decoded as a copy of the caller's,
     * not dumped to text and parsed again. */
    if (body && (!strcmp(method, "POST") || !strcmp(method, "PUT"))) {
        in.body = body;
    } else if (body) {
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
    for (size_t i = 0; s->caches && i < api_registry_count(); i++)
        if (s->caches[i]) wc_end(s->caches[i]);
}

/* The type facts parsed on a thread of their own (apiserver.h). */
struct apiserver_facts {
    api_schema_t *schema;
    int rc;
    pthread_t thread;
    int started;
};

static void *facts_main(void *arg)
{
    apiserver_facts_t *f = arg;
    f->rc = api_schema_load(&f->schema);
    return NULL;
}

int apiserver_facts_begin(apiserver_facts_t **out)
{
    apiserver_facts_t *f = calloc(1, sizeof *f);
    if (!f) return KP_ENOMEM;
    f->started = !pthread_create(&f->thread, NULL, facts_main, f);
    *out = f;
    return 0;
}

/* The facts of f (freed), once parsed; *out the caller's. */
static int facts_take(apiserver_facts_t *f, api_schema_t **out)
{
    if (f->started)
        pthread_join(f->thread, NULL);
    else
        facts_main(f); /* no thread to be had: here */
    int rc = f->rc;
    *out = f->schema;
    free(f);
    return rc;
}

void apiserver_facts_free(apiserver_facts_t *f)
{
    if (!f) return;
    api_schema_t *schema = NULL;
    facts_take(f, &schema);
    api_schema_free(schema);
}

typedef struct {
    apiserver_t *srv;
    int rc[2];
} defaults_job_t;

/* The namespaces (0) or the other objects (1) every cluster starts with. */
static void ensure_defaults(void *arg, size_t i)
{
    defaults_job_t *j = arg;
    j->rc[i] = i ? api_ensure_objects(j->srv) : api_ensure_namespaces(j->srv);
}

/* A watch cache per served resource with objects in the store (none for
 * one its strategy serves itself: the reviews, bindings, componentstatuses);
 * close_caches() closes them. */
static int open_caches(apiserver_t *s)
{
    size_t nres = api_registry_count();
    if (!(s->caches = calloc(nres, sizeof *s->caches))) return KP_ENOMEM;
    for (size_t i = 0; i < nres; i++) {
        char prefix[128];
        const api_resource_t *res = api_registry_at(i);
        if (res->strategy && res->strategy->serve) continue;
        api_key_prefix(res, prefix, sizeof prefix);
        /* A version served from another's keys keeps its own cache of them,
         * converted (so its objects are encoded once, as every cache's). */
        wc_config_t wcc = {.history_bytes = s->cfg.watch_cache_bytes,
                           .fields = res->field_selectors};
        if (api_served_differs(res)) wcc.convert = api_as_served, wcc.convert_arg = (void *)res;
        int rc = wc_open(s->cfg.store, prefix, &wcc, &s->caches[i]);
        if (rc) {
            log_error("apiserver", "watch cache for %s: %s", prefix, err_str(rc));
            return rc;
        }
    }
    return 0;
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

int apiserver_check_authorization_mode(const char *modes, char *err, size_t errlen)
{
    return api_authz_check_modes(modes, err, errlen);
}

int apiserver_start(const apiserver_config_t *cfg, apiserver_t **out)
{
    apiserver_facts_t *facts = cfg->facts; /* ours from here */
    struct sockaddr_in sa;
    int rc = apiserver_listen_addr(cfg->listen ? cfg->listen : "127.0.0.1:6443", &sa);
    if (!rc && (!cfg->store || !cfg->admin_token || !*cfg->admin_token)) rc = KP_EINVAL;
    apiserver_t *s = rc ? NULL : calloc(1, sizeof *s);
    if (!s) {
        apiserver_facts_free(facts);
        return rc ? rc : KP_ENOMEM;
    }
    s->lfd = s->ufd = -1;
    s->cfg = *cfg;
    s->cfg.facts = NULL;
    if (!s->cfg.max_inflight) s->cfg.max_inflight = 400;
    if (!s->cfg.max_mutating_inflight) s->cfg.max_mutating_inflight = 200;
    if (!s->cfg.max_watches) s->cfg.max_watches = 10000;
    if (!s->cfg.max_watches_local) s->cfg.max_watches_local = 10000;
    if (!s->cfg.max_connections) s->cfg.max_connections = 16384;
    if (!s->cfg.max_unauth_connections) s->cfg.max_unauth_connections = 256;
    if (s->cfg.header_timeout_s <= 0) s->cfg.header_timeout_s = 32;
    if (s->cfg.idle_timeout_s <= 0) s->cfg.idle_timeout_s = 90;
    if (s->cfg.body_timeout_s <= 0) s->cfg.body_timeout_s = 60;
    static const char *const admin_groups[] = {API_GROUP_MASTERS, API_GROUP_AUTHENTICATED};
    s->admin_user =
        (api_user_t){.name = API_ADMIN_USER, .uid = "", .groups = admin_groups, .ngroups = 2};
    if (!(s->admin_token = strdup(cfg->admin_token))) {
        apiserver_facts_free(facts);
        free(s);
        return KP_ENOMEM;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->metrics_mu, NULL);
    s->admit_create = api_namespace_admit_create;
    s->admit_write = api_node_restrict_write;
    s->req_done = req_done;
    s->on_reply = api_audit_reply;
    if (cfg->audit_policy && cfg->audit_log_path) {
        api_audit_file_opts_t fo = {.path = cfg->audit_log_path,
                                    .max_bytes = (size_t)cfg->audit_log_maxsize_mb << 20,
                                    .max_backups = cfg->audit_log_maxbackup,
                                    .max_age_days = cfg->audit_log_maxage_days};
        char err[512];
        if ((rc = api_audit_start(cfg->audit_policy, &fo, &s->audit, err, sizeof err))) {
            log_error("apiserver", "--audit-log-path: %s", err);
            goto fail;
        }
    }
    if (!(s->metrics = api_metrics_new())) {
        rc = KP_ENOMEM;
        goto fail;
    }
    if ((rc = api_ui_start(s))) goto fail;
    /* The type facts parse (4-6 ms of CPU) while the default objects are
     * written and the caches load (2-6 ms), if the caller has not begun
     * them already. */
    if (!facts && (rc = apiserver_facts_begin(&facts))) goto fail;
    /* The default objects, all at once: on a first start their creates
     * share the store's commits instead of waiting for one each. */
    defaults_job_t dj = {.srv = s};
    par_each(2, ensure_defaults, &dj);
    rc = dj.rc[0] ? dj.rc[0] : dj.rc[1];
    if (!rc) rc = open_caches(s);
    int frc = facts_take(facts, &s->schema);
    facts = NULL;
    if (!rc) rc = frc;
    if (rc) goto fail;
    /* The bootstrap policy is written on threads of its own while the
     * rest starts, and waited for by apiserver_serve(). */
    if ((rc = api_view_publish(s, NULL, 0)) || (rc = api_crd_start(s)) ||
        (rc = api_policy_begin(s, &s->policy)))
        goto fail;
    char why[256];
    if ((rc = api_sa_start(s, &s->sa, why, sizeof why))) {
        log_error("apiserver", "ServiceAccount tokens: %s", why);
        goto fail;
    }
    if ((s->lfd = tcp_listen(&sa)) < 0) {
        rc = s->lfd;
        goto fail;
    }
    struct sockaddr_in bound;
    socklen_t blen = sizeof bound;
    s->port = getsockname(s->lfd, (struct sockaddr *)&bound, &blen) ? ntohs(sa.sin_port)
                                                                    : ntohs(bound.sin_port);
    /* Before the first request: repaired allocations, the kubernetes Service. */
    if ((rc = api_services_start(s))) goto fail;
    if (cfg->unix_socket && (s->ufd = unix_listen(cfg->unix_socket)) < 0) {
        rc = s->ufd;
        log_error("apiserver", "serving on %s: %s", cfg->unix_socket, err_str(rc));
        goto fail;
    }
    *out = s;
    return 0;
fail:
    apiserver_facts_free(facts);
    apiserver_stop(s);
    return rc;
}

int apiserver_serve(apiserver_t *s)
{
    int rc = api_policy_wait(s->policy);
    s->policy = NULL;
    if (rc || (rc = api_authz_start(s, s->cfg.authorization_mode, &s->authz)) ||
        (rc = api_apiservice_start(s)))
        return rc;
    const apiserver_config_t *cfg = &s->cfg;
    int tls = cfg->tls_cert_pem && cfg->tls_key_pem;
    /* Workers: a few kept, more while requests wait, up to the in-flight
     * caps (handle() answers 429 beyond them) and some room for the quick
     * answers (401, 429, health). */
    httpd_config_t hc = {
        .tcp_fd = s->lfd,
        .unix_fd = s->ufd,
        .cert_pem = tls ? cfg->tls_cert_pem : NULL,
        .key_pem = tls ? cfg->tls_key_pem : NULL,
        .client_ca_pem = tls ? cfg->client_ca_pem : NULL,
        .workers = 4,
        .max_workers = (int)(cfg->max_inflight + cfg->max_mutating_inflight + 32),
        .limits = {.max_connections = cfg->max_connections,
                   .header_bytes = API_HEADER_MEMORY,
                   .header_timeout_ms = cfg->header_timeout_s * 1000,
                   .idle_timeout_ms = cfg->idle_timeout_s * 1000,
                   .body_timeout_ms = cfg->body_timeout_s * 1000,
                   /* a stream's bytes the client has not taken: with the
                    * watch cache's queue (watch_queue_bytes), what a watcher
                    * that stopped reading holds */
                   .stream_budget = API_STREAM_BUDGET,
                   .grace_ms = 1000,
                   .max_unproven = cfg->max_unauth_connections},
        .on_headers = on_headers,
        .on_request = on_request,
        .on_drop = on_drop,
        .arg = s,
    };
    s->lfd = s->ufd = -1; /* httpd's now, also when it fails */
    if ((rc = httpd_start(&hc, &s->httpd))) {
        log_error("apiserver", "HTTP server: %s", err_str(rc));
        if (hc.unix_fd >= 0) unlink(cfg->unix_socket);
    }
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
    api_policy_wait(s->policy); /* started, never served: its writes end first */
    /* Ending the watches ends their streams, which httpd_stop() waits for;
     * the caches close after them, when no request can use them. */
    api_apiservice_stop(s);
    api_crd_stop(s);
    end_watches(s);
    /* The Unix socket is ours once made: by httpd, or held since then. */
    int made_unix = s->cfg.unix_socket && (s->httpd || s->ufd >= 0);
    httpd_stop(s->httpd); /* closes the listening sockets it has */
    if (s->lfd >= 0) close(s->lfd);
    if (s->ufd >= 0) close(s->ufd);
    if (made_unix) unlink(s->cfg.unix_socket);
    api_services_stop(s); /* no request can allocate any more */
    api_authz_stop(s->authz);
    api_sa_stop(s->sa);
    api_ui_stop(s);           /* after the last request: a lab still running is ended */
    api_audit_stop(s->audit); /* after the last request: what is queued is written */
    close_caches(s);
    api_view_put(s->view);
    api_schema_free(s->schema);
    api_metrics_free(s->metrics);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->metrics_mu);
    free(s->admin_token);
    free(s);
}
