/*
 * admission_noderestriction.c -- Kubernetes' NodeRestriction admission
 * plugin (plugin/pkg/admission/noderestriction): what a kubelet
 * (system:node:NAME) writes is about its own node.
 *
 *   nodes, nodes/status   only its own Node; no node-restriction.kubernetes.io/
 *                         labels set or changed
 *   pods                  create: mirror pods bound to itself; delete,
 *                         pods/status, pods/eviction: pods bound to itself
 *   leases                only its own (kube-node-lease/NAME)
 *   csinodes              only its own
 *   serviceaccounts/token only bound to a pod running on it
 *
 * Two doors: api_node_restrict_write() sees a create or update's object
 * (the write path's admission, every subresource included);
 * api_node_restrict_request() decides deletes and evictions on the request
 * and the pods' watch cache, before any body is read.
 *
 * Refusals are 403 with Kubernetes' wording. Other users pass untouched.
 */
#include <stdio.h>
#include <string.h>

#include "apiserver/auth/node.h"
#include "apiserver/http/http.h"
#include "apiserver/kinds/strategy_int.h"
#include "apiserver/rest/rest.h"
#include "apiserver/rest/watchcache.h"
#include "apiserver/schema/resource.h"

#define MIRROR_ANNOTATION "kubernetes.io/config.mirror"
#define RESTRICTED_LABELS "node-restriction.kubernetes.io/"

static int is(const char *a, const char *b)
{
    return !strcmp(a, b);
}

static const char *label_str(const json_t *obj, const char *map, const char *key)
{
    const char *v = json_string_value(
        json_object_get(json_object_get(json_object_get(obj, "metadata"), map), key));
    return v ? v : NULL;
}

/* A restricted label of `now` that differs from `was` (NULL: none), into
 * out; 0 when none. */
static int restricted_label_changed(const json_t *now, const json_t *was, char *out, size_t len)
{
    const json_t *a = json_object_get(json_object_get(now, "metadata"), "labels");
    const json_t *b = json_object_get(json_object_get(was, "metadata"), "labels");
    const json_t *maps[2] = {a, b};
    for (int m = 0; m < 2; m++) {
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)maps[m], k, v) {
            if (strncmp(k, RESTRICTED_LABELS, strlen(RESTRICTED_LABELS))) continue;
            if (!json_equal(json_object_get(a, k), json_object_get(b, k))) {
                snprintf(out, len, "%s", k);
                return 1;
            }
        }
    }
    return 0;
}

int api_node_restrict_write(api_req_t *r, json_t *obj, const json_t *old, const char *name)
{
    const char *node = api_node_identity(&r->user);
    if (!node) return 0;
    const api_route_t *rt = &r->route;
    const char *g = rt->group, *res = rt->resource, *sub = rt->sub;
    if (is(g, "") && is(res, "nodes")) {
        if (!is(name, node))
            return api__reply_forbidden(r, name, "node \"%s\" is not allowed to modify node \"%s\"",
                                        node, name);
        char label[320];
        if (!*sub && restricted_label_changed(obj, old, label, sizeof label))
            return api__reply_forbidden(r, name, "node \"%s\" is not allowed to modify labels: %s",
                                        node, label);
        return 0;
    }
    if (is(g, "") && is(res, "pods")) {
        const json_t *pod = old ? old : obj;
        const char *bound =
            json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
        if (!old && !*sub) {
            if (!label_str(obj, "annotations", MIRROR_ANNOTATION))
                return api__reply_forbidden(r, name,
                                            "pod does not have \"%s\" annotation, node \"%s\" "
                                            "can only create mirror pods",
                                            MIRROR_ANNOTATION, node);
            if (!bound || !is(bound, node))
                return api__reply_forbidden(r, name,
                                            "node \"%s\" can only create pods with spec.nodeName "
                                            "set to itself",
                                            node);
            return 0;
        }
        if (is(sub, "status") && (!bound || !is(bound, node)))
            return api__reply_forbidden(r, name,
                                        "node \"%s\" can only update pod status for pods with "
                                        "spec.nodeName set to itself",
                                        node);
        return 0;
    }
    if (is(g, "coordination.k8s.io") && is(res, "leases")) {
        if (!is(rt->ns, "kube-node-lease") || !is(name, node))
            return api__reply_forbidden(r, name,
                                        "can only access node lease with the same name as the "
                                        "requesting node");
        return 0;
    }
    if (is(g, "storage.k8s.io") && is(res, "csinodes")) {
        if (!is(name, node))
            return api__reply_forbidden(r, name,
                                        "can only access CSINode with the same name as the "
                                        "requesting node");
        return 0;
    }
    return 0;
}

/* The cached pod's spec.nodeName (copied into out); 0, or -1 when the pod
 * is not in the cache. */
static int pod_node(api_req_t *r, const char *ns, const char *name, char *out, size_t len)
{
    const wc_obj_t *o = NULL;
    if (api_view_cached(r->view, "", "v1", "pods", ns, name, &o)) return -1;
    const char *n = wc_obj_field(o, "spec.nodeName");
    snprintf(out, len, "%s", n ? n : "");
    wc_obj_unref(o);
    return 0;
}

int api_node_restrict_request(api_req_t *r)
{
    const char *node = api_node_identity(&r->user);
    if (!node || !*node || r->route.kind != API_ROUTE_RESOURCE || !r->route.res) return 0;
    const api_route_t *rt = &r->route;
    if (!is(rt->group, "") || !is(rt->resource, "pods") || !*rt->name) return 0;
    int del = is(r->method, "DELETE") && !*rt->sub;
    int evict = is(r->method, "POST") && is(rt->sub, "eviction");
    if (!del && !evict) return 0;
    char bound[256];
    if (pod_node(r, rt->ns, rt->name, bound, sizeof bound)) return 0; /* 404 follows */
    if (is(bound, node)) return 0;
    return api__reply_forbidden(r, rt->name,
                                "node \"%s\" can only %s pods with spec.nodeName set to itself",
                                node, del ? "delete" : "evict");
}

/* serviceaccounts/token: a node may ask only for a token bound to a pod
 * that runs on it. Called by the token subresource with the request. */
int api_node_restrict_token(api_req_t *r, const json_t *bound_ref)
{
    const char *node = api_node_identity(&r->user);
    if (!node) return 0;
    const char *kind = json_string_value(json_object_get(bound_ref, "kind"));
    if (!kind || !is(kind, "Pod"))
        return api__reply_forbidden(r, r->route.name, "node requested token not bound to a pod");
    const char *pod = json_string_value(json_object_get(bound_ref, "name"));
    char bound[256];
    if (!pod || pod_node(r, r->route.ns, pod, bound, sizeof bound) || !is(bound, node))
        return api__reply_forbidden(r, r->route.name,
                                    "node requested token bound to a pod scheduled on a different "
                                    "node");
    return 0;
}
