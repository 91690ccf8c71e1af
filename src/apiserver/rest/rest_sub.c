/*
 * rest_sub.c -- the generic scale subresource.
 *
 * <workload>/scale reads and writes spec.replicas of its parent as an
 * autoscaling/v1 Scale (a custom resource names its paths in its CRD:
 * specReplicasPath, statusReplicasPath, labelSelectorPath); the Scale's
 * resourceVersion is the parent's, so a stale one is a 409. The kinds' own
 * subresources are their strategies' (strategy.h, api_sub_t).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/http/http.h"
#include "lib/err.h"
#include "apiserver/rest/rest_int.h"
#include "store/store.h"

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
