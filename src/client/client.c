/*
 * client.c -- the API client: kubeconfig loading, the resource table and
 * the request verbs (GET, LIST with continue, POST, PUT, PATCH, DELETE,
 * pods/binding) over libcurl.
 *
 * Why this shape. A libcurl easy handle is the unit of one transfer at a
 * time and keeps its own connection cache, so "one handle per request in
 * flight" is the simple correct threading model; a mutex-protected free
 * list of idle handles makes the next request on any thread reuse a
 * keep-alive connection (and its TLS session) instead of handshaking again.
 * Watches (watch.c) need their own handles on a multi, so they do not use
 * the pool.
 *
 * Failover: the client holds up to KC__SERVERS_MAX server URLs; c->cur
 * names the one in use. URLs are built per attempt (server + path), so a
 * request that meets a dead connection is sent again to the next server
 * when that is safe (see kc_config_t in client.h); each server is tried at
 * most once per call.
 *
 * Invariants:
 *  1. A handle is either in c->pool (idle, owned by the client) or held by
 *     exactly one request; c->npool <= KC__POOL_MAX.
 *  2. Every request passes kc__rate_wait() once before it is sent, and is
 *     counted once in c->requests, and once in c->errors when it fails.
 *  3. Out-parameters are NULL on every failure; *status is set only for an
 *     answer from the server (never for transport errors).
 *
 * Threads: every function here may be called from any thread at once; the
 * client's mutable parts are the pool (pool_mu), the token bucket (rl_mu),
 * the atomic counters and the current server (atomic c->cur). Nothing else
 * changes after kc_client_new().
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/client_int.h"
#include "lib/base64.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/jsonspan.h"
#include "lib/log.h"
#include "lib/yamljson.h"

#define KC_LIST_PAGE    500
#define KC_CONFIG_MAX   (16u << 20) /* cap on a kubeconfig and files it names */
#define KC_CONFIG_DEPTH 64
#define KC_CONFIG_JSON_MAX (2 * KC_CONFIG_MAX) /* a kubeconfig as JSON, aliases expanded */
#define KC_CONFIG_ALIAS_MAX (1u << 20) /* of which from alias expansions */

/* ---- resources ---- */

const kc_resource_t kc_pods = {"", "v1", "pods", "Pod", 1};
const kc_resource_t kc_nodes = {"", "v1", "nodes", "Node", 0};
const kc_resource_t kc_namespaces = {"", "v1", "namespaces", "Namespace", 0};
const kc_resource_t kc_events = {"", "v1", "events", "Event", 1};
const kc_resource_t kc_services = {"", "v1", "services", "Service", 1};
const kc_resource_t kc_endpoints = {"", "v1", "endpoints", "Endpoints", 1};
const kc_resource_t kc_configmaps = {"", "v1", "configmaps", "ConfigMap", 1};
const kc_resource_t kc_secrets = {"", "v1", "secrets", "Secret", 1};
const kc_resource_t kc_deployments = {"apps", "v1", "deployments", "Deployment", 1};
const kc_resource_t kc_replicasets = {"apps", "v1", "replicasets", "ReplicaSet", 1};
const kc_resource_t kc_statefulsets = {"apps", "v1", "statefulsets", "StatefulSet", 1};
const kc_resource_t kc_daemonsets = {"apps", "v1", "daemonsets", "DaemonSet", 1};
const kc_resource_t kc_controllerrevisions = {"apps", "v1", "controllerrevisions",
                                              "ControllerRevision", 1};
const kc_resource_t kc_jobs = {"batch", "v1", "jobs", "Job", 1};
const kc_resource_t kc_replicationcontrollers = {"", "v1", "replicationcontrollers",
                                                 "ReplicationController", 1};
const kc_resource_t kc_poddisruptionbudgets = {"policy", "v1", "poddisruptionbudgets",
                                               "PodDisruptionBudget", 1};
const kc_resource_t kc_leases = {"coordination.k8s.io", "v1", "leases", "Lease", 1};
const kc_resource_t kc_serviceaccounts = {"", "v1", "serviceaccounts", "ServiceAccount", 1};
const kc_resource_t kc_crds = {"apiextensions.k8s.io", "v1", "customresourcedefinitions",
                               "CustomResourceDefinition", 0};
const kc_resource_t kc_clusterroles = {"rbac.authorization.k8s.io", "v1", "clusterroles",
                                       "ClusterRole", 0};

static const kc_resource_t *const builtins[] = {
    &kc_pods,
    &kc_nodes,
    &kc_namespaces,
    &kc_events,
    &kc_services,
    &kc_endpoints,
    &kc_configmaps,
    &kc_secrets,
    &kc_deployments,
    &kc_replicasets,
    &kc_statefulsets,
    &kc_daemonsets,
    &kc_controllerrevisions,
    &kc_jobs,
    &kc_leases,
    &kc_replicationcontrollers,
    &kc_poddisruptionbudgets,
    &kc_serviceaccounts,
    &kc_crds,
    &kc_clusterroles,
};

const kc_resource_t *kc_resource_builtin(const char *group, const char *version,
                                         const char *resource)
{
    if (!group || !version || !resource) return NULL;
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        if (!strcmp(builtins[i]->group, group) && !strcmp(builtins[i]->version, version) &&
            !strcmp(builtins[i]->resource, resource))
            return builtins[i];
    return NULL;
}

/* ---- kubeconfig ---- */

static void set_err(char *err, size_t errlen, const char *fmt, const char *a, const char *b)
{
    if (err && errlen) snprintf(err, errlen, fmt, a, b);
}

/* Read a whole file (at most KC_CONFIG_MAX bytes), NUL-terminated; the
 * caller frees *data. Errors: KP_ENOTFOUND, KP_EIO, KP_ETOOLARGE, KP_ENOMEM. */
static int read_file(const char *path, char **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    buf_t b;
    buf_init(&b, KC_CONFIG_MAX);
    int rc = buf_append_file(&b, path);
    if (rc) {
        buf_free(&b);
        return rc;
    }
    *data = buf_detach(&b, len);
    return 0;
}

/* The entry named `name` in the list doc[list] ({name, <field>: {...}}):
 * its <field> object, or NULL. */
static json_t *find_named(json_t *doc, const char *list, const char *name, const char *field)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(doc, list), i, e) {
        const char *n = json_string_value(json_object_get(e, "name"));
        json_t *v = json_object_get(e, field);
        if (n && !strcmp(n, name) && json_is_object(v)) return v;
    }
    return NULL;
}

/* A path from a kubeconfig: relative ones are relative to its directory. */
static void resolve_path(const char *kubeconfig, const char *p, char *out, size_t n)
{
    const char *slash = strrchr(kubeconfig, '/');
    if (p[0] == '/' || !slash)
        snprintf(out, n, "%s", p);
    else
        snprintf(out, n, "%.*s/%s", (int)(slash - kubeconfig), kubeconfig, p);
}

/* Read the file a kubeconfig names and keep its text in store[key]. */
static int store_file(json_t *store, const char *key, const char *kubeconfig, const char *p,
                      int trim, char *err, size_t errlen)
{
    char path[PATH_MAX];
    resolve_path(kubeconfig, p, path, sizeof path);
    char *data = NULL;
    size_t len = 0;
    int rc = read_file(path, &data, &len);
    if (rc) {
        set_err(err, errlen, "cannot read %s: %s", path, err_str(rc));
        return rc == KP_ENOMEM ? rc : KP_EINVAL;
    }
    while (trim && len && strchr(" \t\r\n", data[len - 1]))
        len--;
    json_t *s = json_stringn(data, len);
    free(data);
    if (!s) {
        set_err(err, errlen, "%s is not text%s", path, "");
        return KP_EINVAL;
    }
    json_object_set_new(store, key, s);
    return 0;
}

/* A kubeconfig's PEM: *_data (base64, as certificate-authority-data) or
 * the file *_file names, into store[key]; neither: nothing. what names the
 * field and owner for messages. */
static int store_pem(json_t *store, const char *key, const char *kubeconfig, const char *data,
                     const char *file, const char *what, char *err, size_t errlen)
{
    if (data && *data) {
        size_t n = strlen(data), outlen = 0;
        char *pem = malloc(n / 4 * 3 + 4);
        if (!pem) return KP_ENOMEM;
        int rc = base64_decode(data, n, pem, n / 4 * 3 + 3, &outlen);
        json_t *s = rc ? NULL : json_stringn(pem, outlen);
        free(pem);
        if (!s) {
            set_err(err, errlen, "%s: %s is not base64 PEM", kubeconfig, what);
            return KP_EINVAL;
        }
        json_object_set_new(store, key, s);
        return 0;
    }
    if (file && *file) return store_file(store, key, kubeconfig, file, 0, err, errlen);
    return 0;
}

static int load_doc(json_t *doc, const char *path, json_t *store, char *err, size_t errlen)
{
    if (!json_is_object(doc)) {
        set_err(err, errlen, "%s: not a kubeconfig (not a mapping)%s", path, "");
        return KP_EINVAL;
    }
    const char *cur = json_string_value(json_object_get(doc, "current-context"));
    if (!cur || !*cur) {
        set_err(err, errlen, "%s: no current-context%s", path, "");
        return KP_EINVAL;
    }
    json_t *ctx = find_named(doc, "contexts", cur, "context");
    if (!ctx) {
        set_err(err, errlen, "%s: context \"%s\" not found", path, cur);
        return KP_EINVAL;
    }
    const char *cname = json_string_value(json_object_get(ctx, "cluster"));
    json_t *cl = cname ? find_named(doc, "clusters", cname, "cluster") : NULL;
    if (!cl) {
        set_err(err, errlen, "%s: the cluster of context \"%s\" is not defined", path, cur);
        return KP_EINVAL;
    }
    const char *server = json_string_value(json_object_get(cl, "server"));
    if (!server || !*server) {
        set_err(err, errlen, "%s: cluster \"%s\" has no server", path, cname);
        return KP_EINVAL;
    }
    json_object_set_new(store, "server", json_string(server));

    char what[256];
    snprintf(what, sizeof what, "certificate-authority-data of \"%s\"", cname);
    int rc = store_pem(
        store, "ca_pem", path, json_string_value(json_object_get(cl, "certificate-authority-data")),
        json_string_value(json_object_get(cl, "certificate-authority")), what, err, errlen);
    if (rc) return rc;
    json_t *ins = json_object_get(cl, "insecure-skip-tls-verify");
    const char *inss = json_string_value(ins);
    json_object_set_new(store, "insecure",
                        json_boolean(json_is_true(ins) || (inss && !strcmp(inss, "true"))));

    const char *uname = json_string_value(json_object_get(ctx, "user"));
    if (!uname || !*uname) return 0; /* no credentials: anonymous */
    json_t *u = find_named(doc, "users", uname, "user");
    if (!u) {
        set_err(err, errlen, "%s: user \"%s\" is not defined", path, uname);
        return KP_EINVAL;
    }
    const char *tok = json_string_value(json_object_get(u, "token"));
    const char *tokf = json_string_value(json_object_get(u, "tokenFile"));
    if (tok && *tok)
        json_object_set_new(store, "token", json_string(tok));
    else if (tokf && *tokf)
        rc = store_file(store, "token", path, tokf, 1, err, errlen);
    /* A client certificate (client-go's: beside a token, both are sent). */
    snprintf(what, sizeof what, "client-certificate-data of \"%s\"", uname);
    if (!rc)
        rc = store_pem(store, "cert_pem", path,
                       json_string_value(json_object_get(u, "client-certificate-data")),
                       json_string_value(json_object_get(u, "client-certificate")), what, err,
                       errlen);
    snprintf(what, sizeof what, "client-key-data of \"%s\"", uname);
    if (!rc)
        rc = store_pem(store, "key_pem", path,
                       json_string_value(json_object_get(u, "client-key-data")),
                       json_string_value(json_object_get(u, "client-key")), what, err, errlen);
    if (rc) return rc;
    if (!json_object_get(store, "cert_pem") != !json_object_get(store, "key_pem")) {
        set_err(err, errlen,
                "%s: user \"%s\" has a client certificate without its key, or a key "
                "without its certificate",
                path, uname);
        return KP_EINVAL;
    }
    if (!json_object_get(store, "token") && !json_object_get(store, "cert_pem") &&
        (json_object_get(u, "exec") || json_object_get(u, "auth-provider"))) {
        set_err(err, errlen,
                "%s: user \"%s\" needs a plugin (exec or auth-provider); "
                "only tokens and client certificates are supported",
                path, uname);
        return KP_EINVAL;
    }
    return 0;
}

int kc_config_load(const char *path, kc_config_t *cfg, json_t **storage, char *err, size_t errlen)
{
    memset(cfg, 0, sizeof *cfg);
    *storage = NULL;
    if (err && errlen) err[0] = '\0';
    char def[PATH_MAX];
    if (!path || !*path) {
        const char *env = getenv("KUBECONFIG"), *home = getenv("HOME");
        if (env && *env)
            snprintf(def, sizeof def, "%.*s", (int)strcspn(env, ":"), env);
        else
            snprintf(def, sizeof def, "%s/.kube/config", home ? home : "");
        path = def;
    }
    char *text = NULL;
    size_t len = 0;
    json_t *doc = NULL, *store = NULL;
    int rc = read_file(path, &text, &len);
    if (rc) {
        set_err(err, errlen, "%s: %s", path, err_str(rc));
        return rc;
    }
    char yerr[256] = "";
    static const yamljson_limits_t lim = {.max_depth = KC_CONFIG_DEPTH,
                                          .max_bytes = KC_CONFIG_JSON_MAX,
                                          .max_alias_bytes = KC_CONFIG_ALIAS_MAX};
    rc = yaml_to_json(text, len, &lim, &doc, yerr, sizeof yerr);
    free(text);
    if (rc) {
        set_err(err, errlen, "%s: %s", path, yerr[0] ? yerr : err_str(rc));
        return rc == KP_ENOMEM ? rc : KP_EINVAL;
    }
    if (!(store = json_object())) {
        rc = KP_ENOMEM;
        goto fail;
    }
    if ((rc = load_doc(doc, path, store, err, errlen))) goto fail;
    json_decref(doc);
    cfg->server = json_string_value(json_object_get(store, "server"));
    cfg->token = json_string_value(json_object_get(store, "token"));
    cfg->ca_pem = json_string_value(json_object_get(store, "ca_pem"));
    cfg->cert_pem = json_string_value(json_object_get(store, "cert_pem"));
    cfg->key_pem = json_string_value(json_object_get(store, "key_pem"));
    cfg->insecure = json_is_true(json_object_get(store, "insecure"));
    *storage = store;
    return 0;
fail:
    json_decref(store);
    json_decref(doc);
    return rc;
}

/* ---- the client ---- */

/* A usable server URL: http(s)://host..., no white space. */
static int good_server(const char *s)
{
    if (!s || (strncmp(s, "http://", 7) && strncmp(s, "https://", 8))) return 0;
    const char *host = strstr(s, "://") + 3;
    return *host && *host != '/' && !strpbrk(s, " \t\r\n");
}

/* c's configuration (strings borrowed from c; `servers` holds the list). */
static kc_config_t config_of(const kc_client_t *c, const char *servers[KC__SERVERS_MAX + 1])
{
    for (size_t i = 0; i <= KC__SERVERS_MAX; i++)
        servers[i] = i < c->nservers ? c->servers[i] : NULL;
    static const char bearer[] = "Authorization: Bearer ";
    return (kc_config_t){.servers = servers,
                         .token = c->auth_header ? c->auth_header + sizeof bearer - 1 : NULL,
                         .ca_pem = c->ca_pem,
                         .cert_pem = c->cert_pem,
                         .key_pem = c->key_pem,
                         .user_agent = c->user_agent,
                         .qps = c->qps,
                         .burst = (int)c->burst,
                         .timeout_ms = c->timeout_ms,
                         .insecure = c->insecure,
                         .unix_socket = c->unix_socket};
}

/* ---- tokens made again as they age (kc_client_with_token_source) ---- */

/* Fetch again once this much of a token's lifetime has passed (100 minus
 * kube-controller-manager's leeway percent), or this long after a failure. */
#define TOKEN_USE_PERCENT 80
#define TOKEN_RETRY_NS 1000000000LL

struct kc_token_src {
    pthread_mutex_t mu;
    char *header;       /* "Authorization: Bearer <token>" (mu) */
    int64_t refresh_ns; /* CLOCK_MONOTONIC: fetch again from then on (mu) */
    kc_token_fetch_fn fetch;
    void *arg;
    _Atomic int refs; /* the clients sharing it */
};

/* A new token into ts (mu held, or ts not yet shared). On failure the
 * current one stays, and the next try is TOKEN_RETRY_NS away. */
static int token_fetch(struct kc_token_src *ts)
{
    char *token = NULL, *header = NULL;
    int64_t expires_s = 0;
    int rc = ts->fetch(ts->arg, &token, &expires_s);
    if (!rc && (!token || !*token || strpbrk(token, "\r\n"))) rc = KP_EINVAL;
    if (!rc && asprintf(&header, "Authorization: Bearer %s", token) < 0) rc = KP_ENOMEM;
    free(token);
    int64_t now = clock_mono_ns();
    if (rc) {
        ts->refresh_ns = now + TOKEN_RETRY_NS;
        return rc;
    }
    free(ts->header);
    ts->header = header;
    int64_t life_s = expires_s - (int64_t)time(NULL);
    if (life_s < 0) life_s = 0;
    ts->refresh_ns = now + life_s * 1000000000LL / 100 * TOKEN_USE_PERCENT;
    return 0;
}

static void token_unref(struct kc_token_src *ts)
{
    if (!ts || atomic_fetch_sub(&ts->refs, 1) != 1) return;
    pthread_mutex_destroy(&ts->mu);
    free(ts->header);
    free(ts);
}

/* Append ts's current header to l, fetching a new token first when it is
 * due. Returns the new list's tail (NULL: out of memory). */
static struct curl_slist *token_append(struct kc_token_src *ts, struct curl_slist *l)
{
    pthread_mutex_lock(&ts->mu);
    if (clock_mono_ns() >= ts->refresh_ns) {
        int rc = token_fetch(ts);
        if (rc) log_warn("client", "a new token: %s; the current one goes on", err_str(rc));
    }
    struct curl_slist *t = curl_slist_append(l, ts->header);
    pthread_mutex_unlock(&ts->mu);
    return t;
}

int kc_client_with_token_source(const kc_client_t *c, kc_token_fetch_fn fetch, void *arg,
                                kc_client_t **out)
{
    *out = NULL;
    struct kc_token_src *ts = calloc(1, sizeof *ts);
    if (!ts) return KP_ENOMEM;
    ts->fetch = fetch;
    ts->arg = arg;
    atomic_init(&ts->refs, 1);
    int rc = pthread_mutex_init(&ts->mu, NULL) ? KP_ENOMEM : 0;
    if (rc) {
        free(ts);
        return rc;
    }
    if ((rc = token_fetch(ts))) {
        token_unref(ts);
        return rc;
    }
    const char *servers[KC__SERVERS_MAX + 1];
    kc_config_t cfg = config_of(c, servers);
    cfg.token = NULL;
    cfg.cert_pem = cfg.key_pem = NULL; /* its own identity, only */
    if ((rc = kc_client_new(&cfg, out))) {
        token_unref(ts);
        return rc;
    }
    (*out)->tok = ts;
    return 0;
}

int kc_client_metadata(const kc_client_t *c, kc_client_t **out)
{
    const char *servers[KC__SERVERS_MAX + 1];
    kc_config_t cfg = config_of(c, servers);
    int rc = kc_client_new(&cfg, out);
    if (!rc) (*out)->metadata_only = 1;
    if (!rc && c->tok) { /* the same identity: its tokens */
        atomic_fetch_add(&c->tok->refs, 1);
        (*out)->tok = c->tok;
    }
    return rc;
}

int kc_client_as(const kc_client_t *c, const char *token, const char *user_agent, kc_client_t **out)
{
    const char *servers[KC__SERVERS_MAX + 1];
    kc_config_t cfg = config_of(c, servers);
    cfg.token = token;
    cfg.cert_pem = cfg.key_pem = NULL; /* its own identity, only */
    if (user_agent) cfg.user_agent = user_agent;
    return kc_client_new(&cfg, out);
}

int kc_client_with_token(const kc_client_t *c, const char *token, kc_client_t **out)
{
    return kc_client_as(c, token, NULL, out);
}

int kc_client_new(const kc_config_t *cfg, kc_client_t **out)
{
    *out = NULL;
    const char *one[2] = {cfg ? cfg->server : NULL, NULL};
    const char *const *list = cfg && cfg->servers && cfg->servers[0] ? cfg->servers : one;
    size_t nlist = 0;
    for (; list[nlist]; nlist++)
        if (nlist == KC__SERVERS_MAX || !good_server(list[nlist])) return KP_EINVAL;
    if (!nlist) return KP_EINVAL;
    if (cfg->token && strpbrk(cfg->token, "\r\n")) return KP_EINVAL;
    if (cfg->qps < 0 || cfg->timeout_ms < 0) return KP_EINVAL;
    if (!cfg->cert_pem != !cfg->key_pem) return KP_EINVAL;
    if (cfg->unix_socket && (!*cfg->unix_socket || strlen(cfg->unix_socket) > 107))
        return KP_EINVAL;

    kc_client_t *c = calloc(1, sizeof *c);
    if (!c) return KP_ENOMEM;
    int mu1 = 0, mu2 = 0, rc = KP_ENOMEM;
    if (kc_library_hold()) goto fail_nocurl;
    atomic_init(&c->cur, 0);
    for (size_t i = 0; i < nlist; i++) {
        size_t n = strlen(list[i]);
        while (n > 0 && list[i][n - 1] == '/')
            n--;
        if (!(c->servers[i] = strndup(list[i], n))) goto fail;
        c->nservers++;
    }
    if (cfg->token && *cfg->token) {
        size_t hn = strlen(cfg->token) + 32;
        if (!(c->auth_header = malloc(hn))) goto fail;
        snprintf(c->auth_header, hn, "Authorization: Bearer %s", cfg->token);
    }
    if (cfg->ca_pem && *cfg->ca_pem) {
        if (!(c->ca_pem = strdup(cfg->ca_pem))) goto fail;
        c->ca_len = strlen(c->ca_pem);
    }
    if (cfg->cert_pem &&
        (!(c->cert_pem = strdup(cfg->cert_pem)) || !(c->key_pem = strdup(cfg->key_pem))))
        goto fail;
    if (!(c->user_agent = strdup(cfg->user_agent ? cfg->user_agent : "kplane"))) goto fail;
    c->insecure = cfg->insecure;
    if (cfg->unix_socket && !(c->unix_socket = strdup(cfg->unix_socket))) goto fail;
    c->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : KC__DEFAULT_TIMEOUT_MS;
    c->qps = cfg->qps;
    c->burst = cfg->burst >= 1 ? cfg->burst : 1;
    c->tokens = c->burst;
    c->rl_last_ns = clock_mono_ns();
    if (pthread_mutex_init(&c->rl_mu, NULL)) goto fail;
    mu1 = 1;
    if (pthread_mutex_init(&c->pool_mu, NULL)) goto fail;
    mu2 = 1;
    *out = c;
    return 0;
fail:
    kc_library_release();
fail_nocurl:
    if (mu1) pthread_mutex_destroy(&c->rl_mu);
    if (mu2) pthread_mutex_destroy(&c->pool_mu);
    for (size_t i = 0; i < c->nservers; i++)
        free(c->servers[i]);
    free(c->auth_header);
    free(c->ca_pem);
    free(c->cert_pem);
    free(c->key_pem);
    free(c->unix_socket);
    free(c->user_agent);
    free(c);
    return rc;
}

void kc_client_free(kc_client_t *c)
{
    if (!c) return;
    for (size_t i = 0; i < c->npool; i++)
        curl_easy_cleanup(c->pool[i]);
    pthread_mutex_destroy(&c->rl_mu);
    pthread_mutex_destroy(&c->pool_mu);
    for (size_t i = 0; i < c->nservers; i++)
        free(c->servers[i]);
    free(c->auth_header);
    free(c->ca_pem);
    free(c->cert_pem);
    free(c->key_pem);
    free(c->unix_socket);
    free(c->user_agent);
    token_unref(c->tok);
    free(c);
    kc_library_release();
}

int kc_library_hold(void)
{
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : KP_ENOMEM;
}

void kc_library_release(void) { curl_global_cleanup(); }

void kc_client_stats(const kc_client_t *c, kc_client_stats_t *out)
{
    out->requests = atomic_load(&((kc_client_t *)c)->requests);
    out->errors = atomic_load(&((kc_client_t *)c)->errors);
    out->watches = atomic_load(&((kc_client_t *)c)->watches);
}

/* ---- internals shared with watch.c ---- */

size_t kc__server_cur(kc_client_t *c)
{
    return atomic_load(&c->cur) % c->nservers;
}

void kc__server_failed(kc_client_t *c, size_t idx)
{
    if (c->nservers < 2) return;
    size_t want = idx;
    /* Only the first of several requests failing on idx moves on. */
    if (atomic_compare_exchange_strong(&c->cur, &want, (idx + 1) % c->nservers))
        log_warn("client", "API server %s is unreachable; using %s", c->servers[idx],
                 c->servers[(idx + 1) % c->nservers]);
}

char *kc__full_url(const kc_client_t *c, size_t idx, const char *path)
{
    size_t a = strlen(c->servers[idx]), b = strlen(path);
    char *u = malloc(a + b + 1);
    if (!u) return NULL;
    memcpy(u, c->servers[idx], a);
    memcpy(u + a, path, b + 1);
    return u;
}

kc__conn_fail_t kc__conn_fail(CURL *h, CURLcode cc)
{
    long code = 0;
    curl_off_t pre = 0;
    switch (cc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
        return KC__CONN_NOT_SENT;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_OPERATION_TIMEDOUT:
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        if (code) return KC__CONN_OK; /* the answer had begun */
        /* Before the transfer phase (TCP and TLS set up) nothing was sent. */
        if (curl_easy_getinfo(h, CURLINFO_PRETRANSFER_TIME_T, &pre) == CURLE_OK && pre == 0)
            return KC__CONN_NOT_SENT;
        return KC__CONN_LOST;
    default:
        return KC__CONN_OK;
    }
}

CURL *kc__easy_get(kc_client_t *c)
{
    CURL *h = NULL;
    pthread_mutex_lock(&c->pool_mu);
    if (c->npool) h = c->pool[--c->npool];
    pthread_mutex_unlock(&c->pool_mu);
    if (h)
        curl_easy_reset(h);
    else
        h = curl_easy_init();
    return h;
}

void kc__easy_put(kc_client_t *c, CURL *h)
{
    if (!h) return;
    pthread_mutex_lock(&c->pool_mu);
    if (c->npool < KC__POOL_MAX) {
        c->pool[c->npool++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&c->pool_mu);
    if (h) curl_easy_cleanup(h);
}

const char *kc__accept(const kc_client_t *c, int list)
{
    if (!c->metadata_only) return NULL;
    /* client-go's metadata client asks for protobuf first; kplane answers
     * these in JSON, which it accepts as well. */
    return list ? "Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
                  "application/json"
                : "Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,"
                  "application/json";
}

int kc__easy_setup(kc_client_t *c, CURL *h, const char *url, const char *ctype,
                   const char *accept, struct curl_slist **hdrs)
{
    *hdrs = NULL;
    struct curl_slist *l = curl_slist_append(NULL, accept ? accept : "Accept: application/json");
    struct curl_slist *t = l;
    /* No "Expect: 100-continue" round trip before large bodies. */
    if (t) t = curl_slist_append(l, "Expect:");
    if (t && c->tok)
        t = token_append(c->tok, l);
    else if (t && c->auth_header)
        t = curl_slist_append(l, c->auth_header);
    if (t && ctype) {
        char ct[128];
        snprintf(ct, sizeof ct, "Content-Type: %s", ctype);
        t = curl_slist_append(l, ct);
    }
    if (!t) {
        curl_slist_free_all(l);
        return KP_ENOMEM;
    }
    CURLcode cc = curl_easy_setopt(h, CURLOPT_URL, url);
    if (!cc) cc = curl_easy_setopt(h, CURLOPT_HTTPHEADER, l);
    if (!cc) cc = curl_easy_setopt(h, CURLOPT_USERAGENT, c->user_agent);
    if (!cc) cc = curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    if (!cc && c->unix_socket) cc = curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, c->unix_socket);
    else if (!cc) cc = curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    if (!cc) cc = curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)c->timeout_ms);
    if (!cc) cc = curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    if (!cc && c->ca_pem) {
        struct curl_blob blob = {c->ca_pem, c->ca_len, CURL_BLOB_COPY};
        cc = curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
    }
    if (!cc && c->cert_pem) { /* curl copies the blobs */
        struct curl_blob cert = {c->cert_pem, strlen(c->cert_pem), CURL_BLOB_COPY};
        struct curl_blob key = {c->key_pem, strlen(c->key_pem), CURL_BLOB_COPY};
        cc = curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cert);
        if (!cc) cc = curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
        if (!cc) cc = curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &key);
        if (!cc) cc = curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (!cc && c->insecure) {
        cc = curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        if (!cc) cc = curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (cc) {
        curl_slist_free_all(l);
        return cc == CURLE_OUT_OF_MEMORY ? KP_ENOMEM : KP_EINVAL;
    }
    *hdrs = l;
    return 0;
}

int kc__escape(buf_t *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    int rc = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && !rc; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '.' || *p == '_' || *p == '~') {
            rc = buf_append(b, p, 1);
        } else {
            char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            rc = buf_append(b, e, 3);
        }
    }
    return rc;
}

int kc__url(const kc_client_t *c, const kc_resource_t *r, const char *ns, const char *name,
            const char *sub, const char *query, buf_t *url)
{
    buf_init(url, KC__URL_MAX);
    char gv[256];
    if (r->group && *r->group)
        snprintf(gv, sizeof gv, "/apis/%s/%s", r->group, r->version);
    else
        snprintf(gv, sizeof gv, "/api/%s", r->version);
    (void)c;
    int rc = buf_append(url, gv, strlen(gv));
    if (!rc && r->namespaced && ns && *ns) {
        rc = buf_append(url, "/namespaces/", 12);
        if (!rc) rc = kc__escape(url, ns);
    }
    if (!rc) rc = buf_append(url, "/", 1);
    if (!rc) rc = buf_append(url, r->resource, strlen(r->resource));
    if (!rc && name) {
        rc = buf_append(url, "/", 1);
        if (!rc) rc = kc__escape(url, name);
    }
    if (!rc && sub && *sub) {
        rc = buf_append(url, "/", 1);
        if (!rc) rc = buf_append(url, sub, strlen(sub));
    }
    if (!rc && query && *query) {
        rc = buf_append(url, "?", 1);
        if (!rc) rc = buf_append(url, query, strlen(query));
    }
    if (rc) buf_free(url);
    return rc;
}

void kc__rate_wait(kc_client_t *c)
{
    if (c->qps <= 0) return;
    pthread_mutex_lock(&c->rl_mu);
    int64_t now = clock_mono_ns();
    c->tokens += (double)(now - c->rl_last_ns) / 1e9 * c->qps;
    if (c->tokens > c->burst) c->tokens = c->burst;
    c->rl_last_ns = now;
    c->tokens -= 1;
    double wait_s = c->tokens < 0 ? -c->tokens / c->qps : 0;
    pthread_mutex_unlock(&c->rl_mu);
    if (wait_s > 0) {
        struct timespec ts = {(time_t)wait_s, (long)((wait_s - (double)(time_t)wait_s) * 1e9)};
        while (nanosleep(&ts, &ts) && errno == EINTR) {
        }
    }
}

int kc__http_err(long code, const json_t *status)
{
    if (code >= 200 && code < 300) return 0;
    switch (code) {
    case 404:
        return KP_ENOTFOUND;
    case 409: {
        const char *reason = json_string_value(json_object_get(status, "reason"));
        return reason && !strcmp(reason, "AlreadyExists") ? KP_EEXIST : KP_ECONFLICT;
    }
    case 410:
        return KP_ECOMPACTED;
    case 413:
        return KP_ETOOLARGE;
    case 429:
        return KP_EBUSY;
    }
    if (code >= 500 || code < 100) return KP_EUNAVAILABLE;
    return KP_EINVAL; /* 400, 401, 403, 405, 415, 422, ... */
}

int kc__curl_err(CURLcode cc)
{
    switch (cc) {
    case CURLE_OK:
        return 0;
    case CURLE_OPERATION_TIMEDOUT:
        return KP_ETIMEDOUT;
    case CURLE_OUT_OF_MEMORY:
        return KP_ENOMEM;
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
        return KP_EINVAL;
    default:
        return KP_EUNAVAILABLE; /* no connection, TLS, reset, ... */
    }
}

/* ---- one request ---- */

typedef struct req {
    const char *method; /* "GET", "POST", "PUT", "PATCH", "DELETE" */
    const char *url;    /* the path (kc__url): each attempt prefixes its server */
    const char *ctype; /* Content-Type of body, NULL when no body */
    const char *body;
    size_t blen;
    json_t **out;    /* the 2xx body, parsed; NULL: not wanted */
    json_t **status; /* the error body, parsed; NULL: not wanted */
    const char *accept; /* NULL: JSON (kc__accept()) */
    int64_t *rv;        /* the 2xx body's metadata.resourceVersion, read without
                           parsing the body (0: none, or not a number); NULL: not wanted */
} req_t;

typedef struct sink {
    buf_t b;
    int rc; /* why the write callback refused */
} sink_t;

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    sink_t *s = arg;
    int rc = buf_append(&s->b, p, size * n);
    if (rc) {
        s->rc = rc;
        return 0; /* != size * n: curl stops with CURLE_WRITE_ERROR */
    }
    return size * n;
}

/* A Status for an error answer whose body is not one (a proxy's HTML). */
static json_t *status_of(long code, const char *body, size_t len)
{
    json_t *st = body ? json_loadb(body, len, 0, NULL) : NULL;
    if (json_is_object(st)) return st;
    json_decref(st);
    return json_pack("{s:s,s:s,s:{},s:s,s:s%,s:I}", "kind", "Status", "apiVersion", "v1",
                     "metadata", "status", "Failure", "message", body ? body : "",
                     body ? (len > 1024 ? 1024 : len) : 0, "code", (json_int_t)code);
}

/* metadata.resourceVersion of the object whose JSON text is p (len bytes)
 * as a number; 0 when absent or not a positive decimal. */
static int64_t text_rv(const char *p, size_t len)
{
    if (!p) return 0;
    const char *end = p + len, *mb, *me, *vb, *ve;
    if (jspan_member(p, end, "metadata", NULL, &mb, &me) ||
        jspan_member(mb, me, "resourceVersion", NULL, &vb, &ve) || ve - vb < 3 || *vb != '"')
        return 0;
    int64_t n = 0;
    for (const char *q = vb + 1; q < ve - 1; q++) {
        if (*q < '0' || *q > '9' || n > (INT64_MAX - 9) / 10) return 0;
        n = n * 10 + (*q - '0');
    }
    return ve[-1] == '"' ? n : 0;
}

/* One attempt of q on server idx; *fail says how a connection failure
 * happened (KC__CONN_OK for everything else). */
static int attempt(kc_client_t *c, const req_t *q, size_t idx, kc__conn_fail_t *fail)
{
    *fail = KC__CONN_OK;
    if (q->out) *q->out = NULL;
    if (q->status) *q->status = NULL;
    struct curl_slist *hdrs = NULL;
    sink_t sink = {.rc = 0};
    buf_init(&sink.b, KC__BODY_MAX);
    long code = 0;
    char errbuf[CURL_ERROR_SIZE] = "";
    char *url = kc__full_url(c, idx, q->url);
    CURL *h = url ? kc__easy_get(c) : NULL;
    int rc = h ? kc__easy_setup(c, h, url, q->ctype, q->accept, &hdrs) : KP_ENOMEM;
    if (rc) goto done;
    CURLcode cc = curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
    if (!cc) cc = curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    if (!cc) cc = curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    if (!cc) cc = curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
    if (!cc && strcmp(q->method, "GET")) cc = curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, q->method);
    if (!cc && q->body) {
        cc = curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q->blen);
        if (!cc) cc = curl_easy_setopt(h, CURLOPT_POSTFIELDS, q->body);
    }
    if (!cc) cc = curl_easy_perform(h);
    if (cc) {
        rc = sink.rc ? sink.rc : kc__curl_err(cc);
        if (!sink.rc && !sink.b.len) *fail = kc__conn_fail(h, cc);
        log_debug("client", "%s %s: %s (%s)", q->method, url, curl_easy_strerror(cc), errbuf);
        goto done;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    if (code >= 200 && code < 300) {
        if (q->rv) *q->rv = text_rv(sink.b.p, sink.b.len);
        if (q->out) {
            json_error_t jerr;
            *q->out = sink.b.p ? json_loadb(sink.b.p, sink.b.len, 0, &jerr) : NULL;
            if (!json_is_object(*q->out)) {
                json_decref(*q->out);
                *q->out = NULL;
                rc = KP_ECORRUPT;
            }
        }
        goto done;
    }
    json_t *st = status_of(code, sink.b.p, sink.b.len);
    rc = kc__http_err(code, st);
    log_debug("client", "%s %s: HTTP %ld: %s", q->method, url, code,
              json_string_value(json_object_get(st, "message")));
    if (q->status)
        *q->status = st;
    else
        json_decref(st);
done:
    curl_slist_free_all(hdrs);
    if (h) curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL); /* errbuf dies here */
    kc__easy_put(c, h);
    buf_free(&sink.b);
    free(url);
    return rc;
}

/* Send q to the current server; after a connection failure move on to the
 * next one and send it again there when that is safe: a GET, or a request
 * that certainly was not sent. Each server is tried once. */
static int do_request(kc_client_t *c, const req_t *q)
{
    kc__rate_wait(c);
    atomic_fetch_add(&c->requests, 1);
    int idempotent = !strcmp(q->method, "GET");
    int rc = 0;
    for (size_t i = 0; i < c->nservers; i++) {
        size_t idx = kc__server_cur(c);
        kc__conn_fail_t fail;
        rc = attempt(c, q, idx, &fail);
        if (fail == KC__CONN_OK) break;
        kc__server_failed(c, idx);
        if (fail == KC__CONN_LOST && !idempotent) break; /* it may have been done */
    }
    if (rc) atomic_fetch_add(&c->errors, 1);
    return rc;
}

/* The namespace a request on r goes to: ns, else obj's, else none (an error
 * for a namespaced resource). */
static int pick_ns(const kc_resource_t *r, const char *ns, const json_t *obj, const char **res)
{
    *res = NULL;
    if (!r || !r->resource || !r->version) return KP_EINVAL;
    if (!r->namespaced) return 0;
    if (ns && *ns) {
        *res = ns;
        return 0;
    }
    const char *o =
        json_string_value(json_object_get(json_object_get(obj, "metadata"), "namespace"));
    if (o && *o) {
        *res = o;
        return 0;
    }
    return KP_EINVAL;
}

/* Serialise, send, and parse. */
static int send_json_rv(kc_client_t *c, const char *method, const buf_t *url, const char *ctype,
                        const json_t *body, json_t **out, int64_t *rv, json_t **status)
{
    char *js = NULL;
    if (rv) *rv = 0;
    if (body && !(js = json_dumps(body, JSON_COMPACT))) {
        if (out) *out = NULL;
        if (status) *status = NULL;
        return KP_ENOMEM;
    }
    req_t q = {method, url->p, js ? ctype : NULL, js, js ? strlen(js) : 0, out, status, NULL, rv};
    int rc = do_request(c, &q);
    free(js);
    return rc;
}

static int send_json(kc_client_t *c, const char *method, const buf_t *url, const char *ctype,
                     const json_t *body, json_t **out, json_t **status)
{
    return send_json_rv(c, method, url, ctype, body, out, NULL, status);
}

/* ---- the verbs ---- */

int kc_get(kc_client_t *c, const kc_resource_t *r, const char *ns, const char *name, json_t **out)
{
    *out = NULL;
    const char *n = NULL;
    int rc = pick_ns(r, ns, NULL, &n);
    if (rc || !name || !*name) return KP_EINVAL;
    buf_t url;
    if ((rc = kc__url(c, r, n, name, NULL, NULL, &url))) return rc;
    req_t q = {"GET", url.p, NULL, NULL, 0, out, NULL, kc__accept(c, 0), NULL};
    rc = do_request(c, &q);
    buf_free(&url);
    return rc;
}

int kc_get_path(kc_client_t *c, const char *path, json_t **out)
{
    *out = NULL;
    if (!path || path[0] != '/' || strlen(path) >= KC__URL_MAX) return KP_EINVAL;
    req_t q = {"GET", path, NULL, NULL, 0, out, NULL, NULL, NULL};
    return do_request(c, &q);
}

/* Is parameter `name` in query text q? */
static int has_param(const char *q, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = q; p && *p; p = strchr(p, '&'), p = p ? p + 1 : NULL)
        if (!strncmp(p, name, n) && p[n] == '=') return 1;
    return 0;
}

/* The query of one LIST page: limit (unless the caller set one), the
 * caller's query (without resourceVersion[Match] after the first page: the
 * continue token carries the snapshot), and continue. */
static int page_query(buf_t *b, const char *query, const char *cont)
{
    buf_init(b, KC__URL_MAX);
    int rc = buf_append(b, "", 0);
    if (!rc && !has_param(query, "limit")) {
        char lim[32];
        snprintf(lim, sizeof lim, "limit=%d", KC_LIST_PAGE);
        rc = buf_append(b, lim, strlen(lim));
    }
    for (const char *p = query; !rc && p && *p;) {
        size_t n = strcspn(p, "&");
        int skip = n == 0 || (cont && (!strncmp(p, "resourceVersion=", 16) ||
                                       !strncmp(p, "resourceVersionMatch=", 21)));
        if (!skip && b->len) rc = buf_append(b, "&", 1);
        if (!skip && !rc) rc = buf_append(b, p, n);
        p = p[n] ? p + n + 1 : NULL;
    }
    if (!rc && cont) {
        rc = buf_append(b, b->len ? "&continue=" : "continue=", b->len ? 10 : 9);
        if (!rc) rc = kc__escape(b, cont);
    }
    if (rc) buf_free(b);
    return rc;
}

int kc_list(kc_client_t *c, const kc_resource_t *r, const char *ns, const char *query, json_t **out)
{
    *out = NULL;
    if (!r || !r->resource || !r->version) return KP_EINVAL;
    json_t *list = NULL, *page = NULL;
    char *cont = NULL, *next = NULL;
    int rc;
    do {
        buf_t qb, url;
        if ((rc = page_query(&qb, query, cont))) goto fail;
        rc = kc__url(c, r, ns, NULL, NULL, qb.p, &url);
        buf_free(&qb);
        if (rc) goto fail;
        req_t q = {"GET", url.p, NULL, NULL, 0, &page, NULL, kc__accept(c, 1), NULL};
        rc = do_request(c, &q);
        buf_free(&url);
        if (rc) goto fail;
        json_t *items = json_object_get(page, "items");
        if (items && !json_is_array(items) && !json_is_null(items)) {
            rc = KP_ECORRUPT;
            goto fail;
        }
        const char *pc =
            json_string_value(json_object_get(json_object_get(page, "metadata"), "continue"));
        if (pc && *pc && !(next = strdup(pc))) {
            rc = KP_ENOMEM;
            goto fail;
        }
        if (cont && next && !strcmp(cont, next)) {
            rc = KP_ECORRUPT; /* the same page again: a server that loops */
            goto fail;
        }
        if (!list) {
            /* The first page's metadata stays: its resourceVersion is the
             * snapshot every later page continues. */
            list = page;
            if (!json_is_array(items)) json_object_set_new(list, "items", json_array());
        } else {
            if (json_is_array(items) && json_array_extend(json_object_get(list, "items"), items)) {
                rc = KP_ENOMEM;
                goto fail;
            }
            json_decref(page);
        }
        page = NULL;
        free(cont);
        cont = next;
        next = NULL;
    } while (cont);
    json_t *md = json_object_get(list, "metadata");
    json_object_del(md, "continue");
    json_object_del(md, "remainingItemCount");
    *out = list;
    return 0;
fail:
    free(cont);
    free(next);
    json_decref(page);
    json_decref(list);
    return rc;
}

int kc_create(kc_client_t *c, const kc_resource_t *r, const char *ns, const json_t *obj,
              json_t **out, json_t **status)
{
    if (out) *out = NULL;
    if (status) *status = NULL;
    const char *n = NULL;
    int rc = pick_ns(r, ns, obj, &n);
    if (rc || !json_is_object(obj)) return KP_EINVAL;
    buf_t url;
    if ((rc = kc__url(c, r, n, NULL, NULL, NULL, &url))) return rc;
    rc = send_json(c, "POST", &url, "application/json", obj, out, status);
    buf_free(&url);
    return rc;
}

int kc_update(kc_client_t *c, const kc_resource_t *r, const char *ns, const json_t *obj,
              const char *subresource, json_t **out, json_t **status)
{
    if (out) *out = NULL;
    if (status) *status = NULL;
    const char *n = NULL;
    int rc = pick_ns(r, ns, obj, &n);
    const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
    if (rc || !name || !*name) return KP_EINVAL;
    buf_t url;
    if ((rc = kc__url(c, r, n, name, subresource, NULL, &url))) return rc;
    rc = send_json(c, "PUT", &url, "application/json", obj, out, status);
    buf_free(&url);
    return rc;
}

static int patch_req(kc_client_t *c, const kc_resource_t *r, const char *ns, const char *name,
                     const char *subresource, kc_patch_type_t type, const json_t *patch,
                     const char *query, json_t **out, int64_t *rv, json_t **status)
{
    if (out) *out = NULL;
    if (rv) *rv = 0;
    if (status) *status = NULL;
    const char *ctype = NULL;
    switch (type) {
    case KC_PATCH_MERGE:
        ctype = "application/merge-patch+json";
        break;
    case KC_PATCH_STRATEGIC:
        ctype = "application/strategic-merge-patch+json";
        break;
    case KC_PATCH_JSON:
        ctype = "application/json-patch+json";
        break;
    case KC_PATCH_APPLY:
        ctype = "application/apply-patch+yaml";
        break; /* JSON is YAML */
    }
    const char *n = NULL;
    int rc = pick_ns(r, ns, NULL, &n);
    if (rc || !ctype || !name || !*name || !patch) return KP_EINVAL;
    /* Server-side apply needs a field manager: the user agent unless given. */
    buf_t qb;
    buf_init(&qb, KC__URL_MAX);
    rc = buf_append(&qb, "", 0);
    if (!rc && type == KC_PATCH_APPLY && !has_param(query, "fieldManager")) {
        rc = buf_append(&qb, "fieldManager=", 13);
        if (!rc) rc = kc__escape(&qb, c->user_agent);
    }
    if (!rc && query && *query) {
        if (qb.len) rc = buf_append(&qb, "&", 1);
        if (!rc) rc = buf_append(&qb, query, strlen(query));
    }
    buf_t url;
    if (!rc) rc = kc__url(c, r, n, name, subresource, qb.p, &url);
    buf_free(&qb);
    if (rc) return rc;
    rc = send_json_rv(c, "PATCH", &url, ctype, patch, out, rv, status);
    buf_free(&url);
    return rc;
}

int kc_patch(kc_client_t *c, const kc_resource_t *r, const char *ns, const char *name,
             const char *subresource, kc_patch_type_t type, const json_t *patch, const char *query,
             json_t **out, json_t **status)
{
    return patch_req(c, r, ns, name, subresource, type, patch, query, out, NULL, status);
}

int kc_patch_rv(kc_client_t *c, const kc_resource_t *r, const char *ns, const char *name,
                const char *subresource, kc_patch_type_t type, const json_t *patch, int64_t *rv,
                json_t **status)
{
    return patch_req(c, r, ns, name, subresource, type, patch, NULL, NULL, rv, status);
}

int kc_delete(kc_client_t *c, const kc_resource_t *r, const char *ns, const char *name,
              const json_t *opts, json_t **status)
{
    if (status) *status = NULL;
    const char *n = NULL;
    int rc = pick_ns(r, ns, NULL, &n);
    if (rc || !name || !*name) return KP_EINVAL;
    buf_t url;
    if ((rc = kc__url(c, r, n, name, NULL, NULL, &url))) return rc;
    rc = send_json(c, "DELETE", &url, "application/json", opts, NULL, status);
    buf_free(&url);
    return rc;
}

int kc_request_token(kc_client_t *c, const char *ns, const char *sa, long long seconds,
                     char **token)
{
    *token = NULL;
    if (!ns || !*ns || !sa || !*sa || seconds <= 0) return KP_EINVAL;
    json_t *b = json_pack("{s:s,s:s,s:{s:I}}", "apiVersion", "authentication.k8s.io/v1", "kind",
                          "TokenRequest", "spec", "expirationSeconds", (json_int_t)seconds);
    if (!b) return KP_ENOMEM;
    buf_t url;
    json_t *out = NULL;
    int rc = kc__url(c, &kc_serviceaccounts, ns, sa, "token", NULL, &url);
    if (!rc) {
        rc = send_json(c, "POST", &url, "application/json", b, &out, NULL);
        buf_free(&url);
    }
    json_decref(b);
    const char *t = json_string_value(json_object_get(json_object_get(out, "status"), "token"));
    if (!rc && !t) rc = KP_ECORRUPT;
    if (!rc && !(*token = strdup(t))) rc = KP_ENOMEM;
    json_decref(out);
    return rc;
}

int kc_bind(kc_client_t *c, const char *ns, const char *pod, const char *node)
{
    if (!ns || !*ns || !pod || !*pod || !node || !*node) return KP_EINVAL;
    json_t *b = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s,s:s,s:s}}", "apiVersion", "v1", "kind",
                          "Binding", "metadata", "name", pod, "namespace", ns, "target",
                          "apiVersion", "v1", "kind", "Node", "name", node);
    if (!b) return KP_ENOMEM;
    buf_t url;
    int rc = kc__url(c, &kc_pods, ns, pod, "binding", NULL, &url);
    if (!rc) {
        rc = send_json(c, "POST", &url, "application/json", b, NULL, NULL);
        buf_free(&url);
    }
    json_decref(b);
    return rc;
}
