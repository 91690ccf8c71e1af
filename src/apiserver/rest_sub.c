/*
 * rest_sub.c -- the scale, binding and eviction subresources.
 *
 * <workload>/scale reads and writes spec.replicas of its parent as an
 * autoscaling/v1 Scale (a custom resource names its paths in its CRD:
 * specReplicasPath, statusReplicasPath, labelSelectorPath); the Scale's
 * resourceVersion is the parent's, so a stale one is a 409. pods/binding sets a pending pod's spec.nodeName once
 * (and its PodScheduled condition), as the scheduler's only write to a pod.
 * pods/eviction (a policy/v1 or v1beta1 Eviction) is a DELETE of the pod with
 * the Eviction's deleteOptions once its disruption budgets allow it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver_int.h"
#include "lib/err.h"
#include "rest_int.h"
#include "store/store.h"
#include "strategy.h"

/* A metav1.LabelSelector as the string form Scale.status.selector carries.
 * A selector that is a plain label map (a core/v1 selector, with neither
 * matchLabels nor matchExpressions) reads as matchLabels, as Kubernetes'
 * labels.SelectorFromSet does for ReplicationControllers. */
static void selector_string(const json_t *sel, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    const char *k;
    json_t *v;
    const json_t *labels = json_object_get(sel, "matchLabels");
    if (!labels && !json_object_get(sel, "matchExpressions")) labels = sel;
    json_object_foreach((json_t *)labels, k, v) {
        if (!json_is_string(v)) continue;
        int w = snprintf(buf + len, n - len, "%s%s=%s", len ? "," : "", k, json_string_value(v));
        if (w < 0 || (size_t)w >= n - len) return;
        len += (size_t)w;
    }
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(sel, "matchExpressions"), i, e) {
        const char *key = json_string_value(json_object_get(e, "key"));
        const char *op = json_string_value(json_object_get(e, "operator"));
        if (!key || !op) continue;
        char vals[512] = "";
        size_t vl = 0, j;
        json_t *x;
        json_array_foreach(json_object_get(e, "values"), j, x) {
            int w = snprintf(vals + vl, sizeof vals - vl, "%s%s", j ? "," : "",
                             json_string_value(x));
            if (w > 0 && (size_t)w < sizeof vals - vl) vl += (size_t)w;
        }
        int w;
        if (!strcmp(op, "In")) w = snprintf(buf + len, n - len, "%s%s in (%s)", len ? "," : "", key, vals);
        else if (!strcmp(op, "NotIn")) w = snprintf(buf + len, n - len, "%s%s notin (%s)", len ? "," : "", key, vals);
        else if (!strcmp(op, "Exists")) w = snprintf(buf + len, n - len, "%s%s", len ? "," : "", key);
        else w = snprintf(buf + len, n - len, "%s!%s", len ? "," : "", key);
        if (w < 0 || (size_t)w >= n - len) return;
        len += (size_t)w;
    }
}

/* The value at a CRD scale path (".spec.replicas"); NULL if absent. With
 * `create`, missing objects on the way are made (the last key is not). */
static json_t *at_path(json_t *obj, const char *path, int create, json_t **parent,
                       char *last, size_t lastlen)
{
    if (!path || path[0] != '.') return NULL;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path + 1);
    json_t *cur = obj;
    char *seg = buf;
    for (;;) {
        char *dot = strchr(seg, '.');
        if (dot) *dot = '\0';
        if (!dot) {
            if (parent) *parent = cur;
            if (last) snprintf(last, lastlen, "%s", seg);
            return json_object_get(cur, seg);
        }
        json_t *next = json_object_get(cur, seg);
        if (!json_is_object(next)) {
            if (!create) return NULL;
            next = json_object();
            json_object_set_new(cur, seg, next);
        }
        cur = next;
        seg = dot + 1;
    }
}

static const char *scale_path(const api_resource_t *res, const char *which, const char *dflt)
{
    if (!res->crd_scale) return dflt;
    return json_string_value(json_object_get(res->crd_scale, which));
}

static json_t *scale_of(const api_resource_t *res, const json_t *obj, int64_t rev)
{
    const json_t *meta = json_object_get(obj, "metadata");
    const json_t *spec = json_object_get(obj, "spec");
    char sel[1024], rv[24];
    if (res->crd_scale) {
        const json_t *s = at_path((json_t *)obj, scale_path(res, "labelSelectorPath", NULL), 0,
                                  NULL, NULL, 0);
        snprintf(sel, sizeof sel, "%s", json_string_value(s) ? json_string_value(s) : "");
    } else {
        selector_string(json_object_get(spec, "selector"), sel, sizeof sel);
    }
    snprintf(rv, sizeof rv, "%lld", (long long)rev);
    json_t *m = json_object();
    static const char *const keep[] = {"name", "namespace", "uid", "creationTimestamp", NULL};
    for (const char *const *k = keep; *k; k++) {
        json_t *v = json_object_get(meta, *k); /* copied: obj may be the watch cache's */
        if (v) json_object_set_new(m, *k, json_deep_copy(v));
    }
    json_object_set_new(m, "resourceVersion", json_string(rv));
    json_int_t want = json_integer_value(
        at_path((json_t *)obj, scale_path(res, "specReplicasPath", ".spec.replicas"), 0, NULL,
                NULL, 0));
    json_int_t have = json_integer_value(
        at_path((json_t *)obj, scale_path(res, "statusReplicasPath", ".status.replicas"), 0,
                NULL, NULL, 0));
    return json_pack("{s:s, s:s, s:o, s:{s:I}, s:{s:I, s:s}}", "kind", "Scale", "apiVersion",
                     "autoscaling/v1", "metadata", m, "spec", "replicas", want, "status",
                     "replicas", have, "selector", sel);
}

static int reply_scale(api_req_t *r, const json_t *obj, int64_t rev)
{
    return api_reply_json(r, 200, scale_of(r->route.res, obj, rev));
}

/* Write `scale` (a Scale the client sent, or the patched current one) into
 * the parent. */
static json_t *make_scaled(api_req_t *r, const json_t *cur, void *arg, int64_t *pre)
{
    json_t *scale = arg;
    int patch = !strcmp(r->method, "PATCH");
    json_t *in = scale;
    if (patch) { /* merge the patch into the Scale the parent has now */
        in = scale_of(r->route.res, cur, 0);
        json_object_del(json_object_get(in, "metadata"), "resourceVersion");
        rest_merge_patch(in, scale);
    }
    const json_t *rep = json_object_get(json_object_get(in, "spec"), "replicas");
    const char *rvs = json_string_value(json_object_get(json_object_get(in, "metadata"),
                                                        "resourceVersion"));
    json_t *out = NULL;
    if (!json_is_integer(rep) || json_integer_value(rep) < 0) {
        json_t *d = json_pack("{s:s, s:s, s:[{s:s, s:s, s:s}]}", "name", r->route.name, "kind",
                              "Scale", "causes", "reason", "FieldValueInvalid", "message",
                              "Invalid value: must be greater than or equal to 0", "field",
                              "spec.replicas");
        api_reply_status(r, 422, "Invalid", d,
                         "Scale.autoscaling \"%s\" is invalid: spec.replicas: Invalid value: "
                         "must be greater than or equal to 0",
                         r->route.name);
        json_decref(d);
    } else if (rest_parse_rv(rvs, pre)) {
        api_reply_status(r, 400, "BadRequest", NULL, "invalid resourceVersion");
    } else {
        out = json_deep_copy(cur);
        json_t *parent = NULL;
        char last[256];
        at_path(out, scale_path(r->route.res, "specReplicasPath", ".spec.replicas"), 1, &parent,
                last, sizeof last);
        if (parent) json_object_set(parent, last, (json_t *)rep);
        json_t *spec = json_object_get(out, "spec");
        json_int_t g = json_integer_value(json_object_get(json_object_get(cur, "metadata"),
                                                          "generation"));
        if (!api_json_same(json_object_get(cur, "spec"), spec))
            json_object_set_new(rest_meta(out), "generation", json_integer(g + 1));
    }
    if (patch) json_decref(in);
    return out;
}

int rest_scale(api_req_t *r)
{
    const char *m = r->method;
    if (!strcmp(m, "GET")) {
        json_t *obj;
        int64_t rev;
        if (rest_load_route(r, &obj, &rev)) return 0;
        int rc = reply_scale(r, obj, rev);
        json_decref(obj);
        return rc;
    }
    if (strcmp(m, "PUT") && strcmp(m, "PATCH"))
        return api_reply_status(r, 405, "MethodNotAllowed", NULL,
                                "the server does not allow this method on the requested resource");
    json_t *body;
    int rc = !strcmp(m, "PATCH") ? rest_patch_body(r, &body) : rest_body_object(r, &body);
    if (rc || !body) return rc;
    rc = rest_update_loop(r, make_scaled, body, reply_scale);
    json_decref(body);
    return rc;
}

/* ---- pods/binding ---- */

static json_t *make_bound(api_req_t *r, const json_t *cur, void *arg, int64_t *pre)
{
    const char *node = arg;
    (void)pre;
    const json_t *spec = json_object_get(cur, "spec");
    const char *bound = json_string_value(json_object_get(spec, "nodeName"));
    /* Kubernetes: a Conflict on the resource "pods/binding". */
    int deleting = json_object_get(json_object_get(cur, "metadata"), "deletionTimestamp") != NULL;
    if ((bound && *bound) || deleting) {
        json_t *d = json_pack("{s:s, s:s}", "name", r->route.name, "kind", "pods/binding");
        if (deleting)
            api_reply_status(r, 409, "Conflict", d,
                             "Operation cannot be fulfilled on pods/binding \"%s\": pod %s is "
                             "being deleted, cannot be assigned to a host",
                             r->route.name, r->route.name);
        else
            api_reply_status(r, 409, "Conflict", d,
                             "Operation cannot be fulfilled on pods/binding \"%s\": pod %s is "
                             "already assigned to node \"%s\"",
                             r->route.name, r->route.name, bound);
        json_decref(d);
        return NULL;
    }
    json_t *out = json_deep_copy(cur);
    json_object_set_new(json_object_get(out, "spec"), "nodeName", json_string(node));
    json_t *status = json_object_get(out, "status");
    if (!json_is_object(status)) {
        status = json_object();
        json_object_set_new(out, "status", status);
    }
    json_t *conds = json_object_get(status, "conditions");
    if (!json_is_array(conds)) {
        conds = json_array();
        json_object_set_new(status, "conditions", conds);
    }
    char now[32];
    api_now_rfc3339(now);
    size_t i;
    json_t *c;
    json_array_foreach(conds, i, c) {
        if (!strcmp(json_string_value(json_object_get(c, "type")) ? json_string_value(json_object_get(c, "type")) : "", "PodScheduled")) {
            json_array_remove(conds, i);
            break;
        }
    }
    json_array_append_new(conds, json_pack("{s:s, s:s, s:n, s:s}", "type", "PodScheduled",
                                           "status", "True", "lastProbeTime",
                                           "lastTransitionTime", now));
    return out;
}

static int reply_bound(api_req_t *r, const json_t *obj, int64_t rev)
{
    (void)obj;
    (void)rev;
    json_t *s = api_status_new(201, "", "", NULL);
    return api_reply_json(r, 201, s);
}

int rest_binding(api_req_t *r)
{
    if (strcmp(r->method, "POST"))
        return api_reply_status(r, 405, "MethodNotAllowed", NULL,
                                "the server does not allow this method on the requested resource");
    json_t *b;
    int rc = rest_body_object(r, &b);
    if (rc || !b) return rc;
    const char *name = json_string_value(json_object_get(json_object_get(b, "metadata"), "name"));
    const char *node = json_string_value(json_object_get(json_object_get(b, "target"), "name"));
    if (name && *name && strcmp(name, r->route.name)) {
        rc = api_reply_status(r, 400, "BadRequest", NULL,
                              "the name of the binding (%s) does not match the pod (%s)", name,
                              r->route.name);
    } else if (!node || !*node) {
        json_t *d = json_pack("{s:s, s:s, s:[{s:s, s:s, s:s}]}", "name", r->route.name, "kind",
                              "Binding", "causes", "reason", "FieldValueRequired", "message",
                              "Required value", "field", "target.name");
        rc = api_reply_status(r, 422, "Invalid", d,
                              "Binding \"%s\" is invalid: target.name: Required value",
                              r->route.name);
        json_decref(d);
    } else {
        rc = rest_update_loop(r, make_bound, (void *)node, reply_bound);
    }
    json_decref(b);
    return rc;
}

/* ---- pods/eviction (Kubernetes' EvictionREST) ---- */

/* May `pod` (borrowed) be disrupted now? 0 if so; -1 after replying (429
 * TooManyRequests with a DisruptionBudget cause when a budget forbids it).
 *
 * This is where PodDisruptionBudgets are checked once kplane serves them: a
 * pod api_pod_eviction_skips_budget() names goes at once; otherwise more
 * than one matching budget is a 500, a budget whose status lags its
 * generation or allows no disruption is a 429, and an allowed disruption is
 * recorded in the budget's status.disruptedPods (not under dryRun) before
 * the pod is deleted with its resourceVersion as a precondition. With no
 * budget kinds served, every eviction is allowed. */
static int eviction_allowed(api_req_t *r, const json_t *pod)
{
    (void)r;
    if (api_pod_eviction_skips_budget(pod)) return 0;
    return 0; /* no PodDisruptionBudgets served yet */
}

/* Kubernetes answers an eviction with a Status Success, code 201. */
static int reply_evicted(api_req_t *r)
{
    return api_reply_json(r, 201, api_status_new(201, "", "", NULL));
}

/* The Eviction's type, name and namespace must be the URL's. -1 after
 * replying 400. */
static int eviction_check(api_req_t *r, const json_t *ev)
{
    const char *kind = json_string_value(json_object_get(ev, "kind"));
    const char *av = json_string_value(json_object_get(ev, "apiVersion"));
    if (kind && *kind && strcmp(kind, "Eviction")) {
        api_reply_status(r, 400, "BadRequest", NULL, "not a Eviction object: %s", kind);
        return -1;
    }
    if (av && *av && strcmp(av, "policy/v1") && strcmp(av, "policy/v1beta1")) {
        api_reply_status(r, 400, "BadRequest", NULL,
                         "the API version in the data (%s) does not match the expected API "
                         "version (policy/v1)",
                         av);
        return -1;
    }
    if (strcmp(rest_meta_str(ev, "name"), r->route.name)) {
        api_reply_status(r, 400, "BadRequest", NULL,
                         "name in URL does not match name in Eviction object");
        return -1;
    }
    const char *ns = rest_meta_str(ev, "namespace");
    if (*ns && strcmp(ns, r->route.ns)) {
        api_reply_status(r, 400, "BadRequest", NULL,
                         "the namespace of the provided object does not match the namespace "
                         "sent on the request");
        return -1;
    }
    return 0;
}

int rest_eviction(api_req_t *r)
{
    if (strcmp(r->method, "POST"))
        return api_reply_status(r, 405, "MethodNotAllowed", NULL,
                                "the server does not allow this method on the requested resource");
    json_t *ev;
    int rc = rest_body_object(r, &ev);
    if (rc || !ev) return rc;
    json_t *pod = NULL;
    rest_delete_opts_t o = REST_DELETE_OPTS_INIT;
    /* dryRun may come from the query (r->dry_run) or deleteOptions: either. */
    if (eviction_check(r, ev) || rest_delete_options(r, json_object_get(ev, "deleteOptions"), &o))
        goto out;
    int64_t rev;
    if (rest_load_route(r, &pod, &rev)) goto out;
    if (eviction_allowed(r, pod)) goto out;
    rc = rest_delete_route(r, &o, reply_evicted);
out:
    json_decref(pod);
    json_decref(ev);
    return rc;
}
