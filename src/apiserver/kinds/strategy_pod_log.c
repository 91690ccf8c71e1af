/*
 * strategy_pod_log.c -- GET pods/<name>/log: a container's output, read from the
 * node the pod runs on, as kube-apiserver proxies it from the kubelet.
 *
 * Query: container, follow, previous, tailLines, sinceSeconds, sinceTime,
 * timestamps, limitBytes (insecureSkipTLSVerifyBackend is accepted and
 * ignored). The checks Kubernetes makes before it calls the kubelet are made
 * here, from the stored pod, with Kubernetes' messages:
 *   - no container named and several in the pod: 400 "a container name must
 *     be specified for pod P, choose one of: [a b]";
 *   - an unknown container: 400 "container c is not valid for pod P";
 *   - a container that never started: 400 "container \"c\" in pod \"p\" is
 *     waiting to start: <reason>" (ContainerCreating without a status);
 *   - previous=true without a terminated previous run: 400 "previous
 *     terminated container \"c\" in pod \"p\" not found";
 *   - a pod not yet scheduled: 200 with nothing (Kubernetes has no location).
 * Then the node's log server is asked: http://<InternalIP>:<status.
 * daemonEndpoints.kubeletEndpoint.Port>/containerLogs/<ns>/<pod>/<c>?...
 * over plain HTTP (the process runtime listens on 127.0.0.1), with the
 * admin token as the bearer. A node reporting port 0 (a simulated node)
 * serves no logs: 400 saying so. An unreachable node: 500, as Kubernetes
 * answers when the kubelet cannot be dialled.
 *
 * follow=true streams the node's chunked reply through as it comes (until
 * the container exits, or either side goes), looking every FOLLOW_POLL_MS
 * while the node sends nothing (no thread waits meanwhile); otherwise the
 * reply is read whole (capped at LOG_BODY_MAX) and passed on as text/plain.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/http/http.h"
#include "apiserver/rest/rest.h"
#include "lib/err.h"
#include "apiserver/rest/rest_int.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/kinds/strategy_int.h"

#define LOG_BODY_MAX   (64u << 20)
#define LOG_CONNECT_MS 3000
#define LOG_TIMEOUT_MS 60000
#define LOG_NAMES_MAX  1024
#define FOLLOW_POLL_MS 50 /* a follow with nothing new looks again after this */

/* "[a b]": the names of the containers in list `which`. */
static void names_of(const json_t *pod, const char *which, char *out, size_t n)
{
    size_t len = 0, i;
    const json_t *c;
    out[len++] = '[';
    json_array_foreach(json_object_get(json_object_get(pod, "spec"), which), i, c) {
        const char *name = json_string_value(json_object_get(c, "name"));
        int w = snprintf(out + len, n - len - 2, "%s%s", i ? " " : "", name ? name : "");
        if (w < 0 || (size_t)w >= n - len - 2) break;
        len += (size_t)w;
    }
    out[len++] = ']';
    out[len] = '\0';
}

static int has_container(const json_t *pod, const char *name)
{
    static const char *const lists[] = {"containers", "initContainers", "ephemeralContainers"};
    for (int l = 0; l < 3; l++) {
        size_t i;
        const json_t *c;
        json_array_foreach(json_object_get(json_object_get(pod, "spec"), lists[l]), i, c) {
            const char *n = json_string_value(json_object_get(c, "name"));
            if (n && !strcmp(n, name)) return 1;
        }
    }
    return 0;
}

static const json_t *container_status(const json_t *pod, const char *name)
{
    static const char *const lists[] = {"containerStatuses", "initContainerStatuses",
                                        "ephemeralContainerStatuses"};
    for (int l = 0; l < 3; l++) {
        size_t i;
        const json_t *c;
        json_array_foreach(json_object_get(json_object_get(pod, "status"), lists[l]), i, c) {
            const char *n = json_string_value(json_object_get(c, "name"));
            if (n && !strcmp(n, name)) return c;
        }
    }
    return NULL;
}

/* A query integer: 1 with *out, 0 absent, -1 malformed. */
static int query_int(api_req_t *r, const char *name, long long *out)
{
    const char *v = api_query(r, name);
    if (!v) return 0;
    char *end;
    long long n = strtoll(v, &end, 10);
    if (!*v || *end) return -1;
    *out = n;
    return 1;
}

/* ---- the node's reply ---- */

typedef struct fetch {
    buf_t body;
    int too_big;
} fetch_t;

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
    fetch_t *f = ud;
    size_t n = size * nmemb;
    if (buf_append(&f->body, ptr, n)) {
        f->too_big = 1;
        return 0;
    }
    return n;
}

static CURL *easy_for(const char *url, const char *token, struct curl_slist **hdrs, fetch_t *f)
{
    CURL *e = curl_easy_init();
    if (!e) return NULL;
    char auth[512];
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", token ? token : "");
    *hdrs = curl_slist_append(NULL, auth);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, *hdrs);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)LOG_CONNECT_MS);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, f);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http");
    return e;
}

/* ---- follow: stream the node's reply through ---- */

typedef struct follow {
    CURLM *m;
    CURL *e;
    struct curl_slist *hdrs;
    fetch_t f;
    int done;
    api_req_t *req; /* the request (valid while its reply streams) */
} follow_t;

/* Has the client hung up? (A silent container sends nothing that would
 * fail, so the stream asks.) */
static int client_gone(follow_t *fl) { return fl->req && api_req_gone(fl->req); }

static void follow_free(void *arg)
{
    follow_t *fl = arg;
    if (fl->m && fl->e) curl_multi_remove_handle(fl->m, fl->e);
    if (fl->e) curl_easy_cleanup(fl->e);
    if (fl->m) curl_multi_cleanup(fl->m);
    curl_slist_free_all(fl->hdrs);
    buf_free(&fl->f.body);
    free(fl);
}

/* The node's bytes as they come. The node's connection is curl's, not the
 * engine's: with nothing yet, the stream parks and looks again after
 * FOLLOW_POLL_MS. */
static int follow_next(void *arg, buf_t *out, int *wait_ms)
{
    follow_t *fl = arg;
    for (;;) {
        if (fl->f.body.len) {
            int rc = buf_append(out, fl->f.body.p, fl->f.body.len);
            buf_reset(&fl->f.body);
            return rc;
        }
        if (fl->done) return 0; /* nothing more: the stream ends */
        int running = 0;
        if (curl_multi_perform(fl->m, &running) != CURLM_OK) {
            fl->done = 1;
            continue;
        }
        if (!running) {
            fl->done = 1;
            continue;
        }
        if (client_gone(fl)) return KP_ECLOSED; /* ends the stream; the node sees us go */
        if (!fl->f.body.len) {
            *wait_ms = FOLLOW_POLL_MS;
            return KP_EAGAIN;
        }
    }
}

/* ---- the handler ---- */

/* 422 Invalid of the PodLogOptions: one cause. */
static int reply_invalid(api_req_t *r, const char *pod, const char *reason, const char *field,
                         const char *msg)
{
    json_t *causes = json_array();
    if (!causes) return api_reply_status(r, 500, "InternalError", NULL, "out of memory");
    api_cause(causes, reason, field, "%s", msg);
    int rc = rest_reply_causes(r, "", "PodLogOptions", pod, causes);
    json_decref(causes);
    return rc < 0 ? 0 : rc;
}

int api_pod_log(api_req_t *r)
{
    if (strcmp(r->method, "GET"))
        return api_reply_status(r, 405, "MethodNotAllowed", NULL,
                                "the server does not allow this method on the requested resource");
    json_t *pod = NULL;
    int64_t rev = 0;
    if (rest_load_route(r, &pod, &rev)) return 0;
    int rc = 0;
    json_t *node = NULL;
    char *url = NULL;
    const char *pname = rest_meta_str(pod, "name"), *ns = rest_meta_str(pod, "namespace");
    long long tail = 0, since = 0, limit = 0;
    if (query_int(r, "tailLines", &tail) < 0 || tail < 0 ||
        query_int(r, "sinceSeconds", &since) < 0 || (api_query(r, "sinceSeconds") && since < 1) ||
        query_int(r, "limitBytes", &limit) < 0 || (api_query(r, "limitBytes") && limit < 1)) {
        const char *field =
            query_int(r, "tailLines", &tail) < 0 || tail < 0 ? "tailLines"
            : api_query(r, "limitBytes") && (query_int(r, "limitBytes", &limit) < 0 || limit < 1)
                ? "limitBytes"
                : "sinceSeconds";
        char why[64];
        snprintf(why, sizeof why, "Invalid value: must be %s",
                 !strcmp(field, "tailLines") ? "greater than or equal to 0" : "greater than 0");
        rc = reply_invalid(r, pname, "FieldValueInvalid", field, why);
        goto out;
    }
    if (api_query(r, "sinceSeconds") && api_query(r, "sinceTime")) {
        rc = reply_invalid(r, pname, "FieldValueForbidden", "",
                           "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be "
                           "specified");
        goto out;
    }
    const char *ctr = api_query(r, "container");
    if (!ctr || !*ctr) {
        const json_t *cs = json_object_get(json_object_get(pod, "spec"), "containers");
        if (json_array_size(cs) == 1) {
            ctr = json_string_value(json_object_get(json_array_get(cs, 0), "name"));
        } else {
            char names[LOG_NAMES_MAX], init[LOG_NAMES_MAX];
            names_of(pod, "containers", names, sizeof names);
            names_of(pod, "initContainers", init, sizeof init);
            if (strcmp(init, "[]"))
                rc = api_reply_status(r, 400, "BadRequest", NULL,
                                      "a container name must be specified for pod %s, choose one "
                                      "of: %s or one of the init containers: %s",
                                      pname, names, init);
            else
                rc = api_reply_status(r, 400, "BadRequest", NULL,
                                      "a container name must be specified for pod %s, choose one "
                                      "of: %s",
                                      pname, names);
            goto out;
        }
    }
    if (!ctr || !has_container(pod, ctr)) {
        rc = api_reply_status(r, 400, "BadRequest", NULL, "container %s is not valid for pod %s",
                              ctr ? ctr : "", pname);
        goto out;
    }
    const char *node_name =
        json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
    if (!node_name || !*node_name) {
        /* Not scheduled: Kubernetes has no location and streams nothing. */
        rc = api_reply_bytes(r, 200, "text/plain", "", 0);
        goto out;
    }
    int previous = rest_query_bool(r, "previous");
    const json_t *st = container_status(pod, ctr);
    const json_t *state = json_object_get(st, "state");
    const json_t *last_term = json_object_get(json_object_get(st, "lastState"), "terminated");
    if (previous && !last_term) {
        rc = api_reply_status(r, 400, "BadRequest", NULL,
                              "previous terminated container \"%s\" in pod \"%s\" not found", ctr,
                              pname);
        goto out;
    }
    if (!previous && (!st || (json_object_get(state, "waiting") && !last_term &&
                              !json_object_get(st, "containerID")))) {
        const char *why =
            json_string_value(json_object_get(json_object_get(state, "waiting"), "reason"));
        rc = api_reply_status(r, 400, "BadRequest", NULL,
                              "container \"%s\" in pod \"%s\" is waiting to start: %s", ctr, pname,
                              why ? why : "ContainerCreating");
        goto out;
    }
    /* The node's log server. */
    const api_resource_t *nodes = api_registry_find("", "v1", "nodes");
    char key[512];
    if (!nodes || api_object_key(nodes, NULL, node_name, key, sizeof key)) {
        rc = api_reply_status(r, 500, "InternalError", NULL, "no nodes resource");
        goto out;
    }
    rc = rest_load(r, key, &node, &rev);
    if (rc == KP_ENOTFOUND) {
        rc = rest_store_error_for(r, nodes, rc, node_name);
        goto out;
    }
    if (rc) {
        rc = api_reply_error(r, rc, NULL, "reading node %s", node_name);
        goto out;
    }
    const json_t *nst = json_object_get(node, "status");
    json_int_t port = json_integer_value(json_object_get(
        json_object_get(json_object_get(nst, "daemonEndpoints"), "kubeletEndpoint"), "Port"));
    const char *ip = NULL;
    size_t i;
    const json_t *a;
    json_array_foreach(json_object_get(nst, "addresses"), i, a) {
        const char *type = json_string_value(json_object_get(a, "type"));
        if (type && !strcmp(type, "InternalIP") && !ip)
            ip = json_string_value(json_object_get(a, "address"));
    }
    if (port <= 0 || port > 65535 || !ip) {
        rc = api_reply_status(r, 400, "BadRequest", NULL,
                              "node \"%s\" serves no container logs (its kubelet port is 0: a "
                              "simulated node); run pods on a node started with --runtime "
                              "process to read their logs",
                              node_name);
        goto out;
    }
    /* The query passed on (values are URL-encoded again). */
    static const char *const pass[] = {"follow",    "previous",   "tailLines", "sinceSeconds",
                                       "sinceTime", "timestamps", "limitBytes"};
    buf_t u;
    buf_init(&u, 8192);
    CURL *esc = curl_easy_init();
    buf_printf(&u, "http://%s:%d/containerLogs/%s/%s/%s?", ip, (int)port, ns, pname, ctr);
    for (size_t k = 0; esc && k < sizeof pass / sizeof pass[0]; k++) {
        const char *v = api_query(r, pass[k]);
        if (!v) continue;
        char *ev = curl_easy_escape(esc, v, 0);
        if (ev) buf_printf(&u, "%s=%s&", pass[k], ev);
        curl_free(ev);
    }
    if (esc) curl_easy_cleanup(esc);
    if (u.len && (u.p[u.len - 1] == '&' || u.p[u.len - 1] == '?')) u.p[--u.len] = '\0';
    size_t ulen = 0;
    url = buf_detach(&u, &ulen);
    buf_free(&u);
    if (!url) {
        rc = api_reply_status(r, 500, "InternalError", NULL, "out of memory");
        goto out;
    }
    if (rest_query_bool(r, "follow")) {
        follow_t *fl = calloc(1, sizeof *fl);
        if (!fl) {
            rc = api_reply_status(r, 500, "InternalError", NULL, "out of memory");
            goto out;
        }
        buf_init(&fl->f.body, LOG_BODY_MAX);
        fl->req = r;
        fl->e = easy_for(url, r->srv->admin_token, &fl->hdrs, &fl->f);
        fl->m = curl_multi_init();
        if (!fl->e || !fl->m || curl_multi_add_handle(fl->m, fl->e) != CURLM_OK) {
            follow_free(fl);
            rc = api_reply_status(r, 500, "InternalError", NULL, "out of memory");
            goto out;
        }
        /* Wait for the node's answer first, so that its errors are errors. */
        long code = 0;
        for (;;) {
            int running = 0;
            curl_multi_perform(fl->m, &running);
            curl_easy_getinfo(fl->e, CURLINFO_RESPONSE_CODE, &code);
            if (code || !running) break;
            curl_multi_poll(fl->m, NULL, 0, 200, NULL);
        }
        if (code != 200) {
            int done = 0;
            for (int k = 0; k < 50 && !done; k++) { /* the rest of an error body */
                int running = 0;
                curl_multi_perform(fl->m, &running);
                done = !running;
                if (!done) curl_multi_poll(fl->m, NULL, 0, 100, NULL);
            }
            if (!code)
                rc = api_reply_status(r, 500, "InternalError", NULL,
                                      "Get \"%s\": the node's log server does not answer", url);
            else
                rc = api_reply_status(r,
                                      (int)code == 404   ? 404
                                      : (int)code >= 500 ? 500
                                                         : 400,
                                      (int)code == 404   ? "NotFound"
                                      : (int)code >= 500 ? "InternalError"
                                                         : "BadRequest",
                                      NULL, "%.*s", (int)fl->f.body.len,
                                      fl->f.body.p ? fl->f.body.p : "");
            follow_free(fl);
            goto out;
        }
        rc = api_reply_stream(r, follow_next, fl, follow_free);
        goto out;
    }
    fetch_t f;
    buf_init(&f.body, LOG_BODY_MAX);
    f.too_big = 0;
    struct curl_slist *hdrs = NULL;
    CURL *e = easy_for(url, r->srv->admin_token, &hdrs, &f);
    if (!e) {
        rc = api_reply_status(r, 500, "InternalError", NULL, "out of memory");
        goto out;
    }
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)LOG_TIMEOUT_MS);
    CURLcode cc = curl_easy_perform(e);
    long code = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(e);
    curl_slist_free_all(hdrs);
    if (cc != CURLE_OK && !(f.too_big && code == 200)) {
        rc = api_reply_status(r, 500, "InternalError", NULL, "Get \"%s\": %s", url,
                              curl_easy_strerror(cc));
    } else if (code != 200) {
        rc = api_reply_status(r,
                              code == 404   ? 404
                              : code >= 500 ? 500
                                            : 400,
                              code == 404   ? "NotFound"
                              : code >= 500 ? "InternalError"
                                            : "BadRequest",
                              NULL, "%.*s", (int)f.body.len, f.body.p ? f.body.p : "");
    } else {
        size_t len = 0;
        char *body = buf_detach(&f.body, &len);
        rc = body ? api_reply_take(r, 200, "text/plain", body, len)
                  : api_reply_bytes(r, 200, "text/plain", "", 0);
    }
    buf_free(&f.body);
out:
    free(url);
    json_decref(pod);
    json_decref(node);
    return rc;
}
