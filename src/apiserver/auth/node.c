/*
 * node.c -- Kubernetes' Node authorizer (plugin/pkg/auth/authorizer/node)
 * for users system:node:NAME in group system:nodes: a kubelet may read the
 * Secrets, ConfigMaps, PersistentVolumeClaims and PersistentVolumes the
 * pods bound to its node use, ask tokens for those pods' ServiceAccounts,
 * and touch its own Lease and CSINode; everything else it may do is the
 * static rules of the bootstrap ClusterRole system:node. Other users: no
 * opinion.
 *
 * Kubernetes keeps a graph of pods and what they reference; kplane asks the
 * pods' watch cache instead (the pods of that namespace bound to the node,
 * parsed), which costs more per check but only kubelets ask, and rarely.
 * That look is never taken on the engine's loop thread (a->quick): the
 * request is authorized again on its worker (server.c).
 * What it reads of Kubernetes' 1.32 gates: nodes and pods are read through
 * the static rules (AuthorizeNodeWithSelectors, which narrows them, is not
 * modelled); DRA's resource slices and claims are not served.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/auth/authz.h"
#include "apiserver/auth/node.h"
#include "apiserver/auth/policy.h"
#include "apiserver/auth/rbac.h"
#include "apiserver/rest/rest.h"
#include "apiserver/rest/watchcache.h"
#include "apiserver/schema/resource.h"

#define NODE_USER_PREFIX "system:node:"
#define NODE_GROUP       "system:nodes"

const char *api_node_identity(const api_user_t *u)
{
    if (!u || !api_user_in_group(u, NODE_GROUP)) return NULL;
    if (strncmp(u->name, NODE_USER_PREFIX, strlen(NODE_USER_PREFIX))) return "";
    return u->name + strlen(NODE_USER_PREFIX);
}

json_t *api_node_static_rules(void)
{
    for (size_t i = 0; i < api_policy_nroles; i++) {
        const pol_role_t *p = &api_policy_roles[i];
        if (p->ns || strcmp(p->name, "system:node")) continue;
        json_t *role = api_policy_role_json(p);
        json_t *rules = json_incref(json_object_get(role, "rules"));
        json_decref(role);
        return rules;
    }
    return json_array();
}

/* What a pod references, by kind: does `pod` name `name` as a secret,
 * configmap, claim or service account? */
static int names(const json_t *v, const char *key, const char *name)
{
    const char *s = json_string_value(json_object_get(v, key));
    return s && !strcmp(s, name);
}

static int container_refs(const json_t *c, const char *kind, const char *name)
{
    size_t i;
    const json_t *e;
    int secret = !strcmp(kind, "secrets");
    json_array_foreach(json_object_get(c, "env"), i, e) {
        const json_t *from = json_object_get(e, "valueFrom");
        if (names(json_object_get(from, secret ? "secretKeyRef" : "configMapKeyRef"), "name", name))
            return 1;
    }
    json_array_foreach(json_object_get(c, "envFrom"), i, e)
        if (names(json_object_get(e, secret ? "secretRef" : "configMapRef"), "name", name))
            return 1;
    return 0;
}

static int pod_refs(const json_t *pod, const char *kind, const char *name)
{
    const json_t *spec = json_object_get(pod, "spec");
    if (!strcmp(kind, "serviceaccounts")) return names(spec, "serviceAccountName", name);
    int secret = !strcmp(kind, "secrets"), claim = !strcmp(kind, "persistentvolumeclaims");
    size_t i, j;
    const json_t *v, *src;
    json_array_foreach(json_object_get(spec, "volumes"), i, v) {
        if (claim) {
            if (names(json_object_get(v, "persistentVolumeClaim"), "claimName", name)) return 1;
            continue;
        }
        if (secret ? names(json_object_get(v, "secret"), "secretName", name)
                   : names(json_object_get(v, "configMap"), "name", name))
            return 1;
        json_array_foreach(json_object_get(json_object_get(v, "projected"), "sources"), j, src) {
            if (names(json_object_get(src, secret ? "secret" : "configMap"), "name", name))
                return 1;
        }
    }
    if (claim) return 0;
    if (secret) {
        json_array_foreach(json_object_get(spec, "imagePullSecrets"), i, v)
            if (names(v, "name", name)) return 1;
    }
    static const char *const lists[] = {"containers", "initContainers", "ephemeralContainers"};
    for (size_t l = 0; l < 3; l++)
        json_array_foreach(json_object_get(spec, lists[l]), i, v)
            if (container_refs(v, kind, name)) return 1;
    return 0;
}

int api_node_pod_references(apiserver_t *s, const char *node, const char *ns, const char *kind,
                            const char *name)
{
    api_view_t *v = api_view_get(s);
    size_t pi = 0;
    const api_resource_t *pods = api_view_find(v, "", "v1", "pods", &pi);
    char prefix[512];
    wc_list_t *l = NULL;
    int found = 0;
    if (pods && !api_ns_prefix(pods, ns, prefix, sizeof prefix) &&
        !wc_list(v->caches[pi], prefix, NULL, 0, 0, 0, &l)) {
        for (size_t i = 0; i < l->count && !found; i++) {
            const char *on = wc_obj_field(l->objs[i], "spec.nodeName");
            if (!on || strcmp(on, node)) continue;
            json_t *pod = NULL;
            if (!wc_obj_copy(l->objs[i], &pod)) found = pod_refs(pod, kind, name);
            json_decref(pod);
        }
        wc_list_free(l);
    }
    api_view_put(v);
    return found;
}

/* The claim `name` in ns: its spec.volumeName into out ("" if unbound). */
static void claim_volume(apiserver_t *s, const char *ns, const char *name, char *out, size_t len)
{
    out[0] = '\0';
    api_view_t *v = api_view_get(s);
    const wc_obj_t *o = NULL;
    json_t *pvc = NULL;
    if (!api_view_cached(v, "", "v1", "persistentvolumeclaims", ns, name, &o) &&
        !wc_obj_copy(o, &pvc)) {
        const char *vol =
            json_string_value(json_object_get(json_object_get(pvc, "spec"), "volumeName"));
        if (vol) snprintf(out, len, "%s", vol);
    }
    json_decref(pvc);
    wc_obj_unref(o);
    api_view_put(v);
}

/* A PersistentVolume is the node's when a claim one of its pods uses is
 * bound to it. */
static int node_uses_volume(apiserver_t *s, const char *node, const char *pv)
{
    api_view_t *v = api_view_get(s);
    size_t pi = 0;
    const api_resource_t *pods = api_view_find(v, "", "v1", "pods", &pi);
    wc_list_t *l = NULL;
    int found = 0;
    if (pods && !wc_list(v->caches[pi], "", NULL, 0, 0, 0, &l)) {
        for (size_t i = 0; i < l->count && !found; i++) {
            const char *on = wc_obj_field(l->objs[i], "spec.nodeName");
            if (!on || strcmp(on, node)) continue;
            json_t *pod = NULL;
            if (wc_obj_copy(l->objs[i], &pod)) continue;
            size_t k;
            const json_t *vol;
            json_array_foreach(json_object_get(json_object_get(pod, "spec"), "volumes"), k, vol) {
                const char *claim = json_string_value(
                    json_object_get(json_object_get(vol, "persistentVolumeClaim"), "claimName"));
                char bound[256];
                if (!claim) continue;
                claim_volume(s, l->objs[i]->ns, claim, bound, sizeof bound);
                if (!strcmp(bound, pv)) found = 1;
            }
            json_decref(pod);
        }
        wc_list_free(l);
    }
    api_view_put(v);
    return found;
}

static int is(const char *a, const char *b)
{
    return !strcmp(a, b);
}

static int no_relationship(const char *node, char *reason, size_t len)
{
    if (reason && len)
        snprintf(reason, len, "no relationship found between node '%s' and this object", node);
    return 0;
}

int api_node_authorize(apiserver_t *s, const json_t *static_rules, const api_attrs_t *a,
                       char *reason, size_t len)
{
    const char *node = api_node_identity(a->user);
    if (!node) return 0;
    if (!*node) {
        if (reason && len) snprintf(reason, len, "unknown node for user \"%s\"", a->user->name);
        return 0;
    }
    if (a->resource_request) {
        const char *g = a->group, *res = a->resource;
        int read = is(a->verb, "get") || is(a->verb, "list") || is(a->verb, "watch");
        if (is(g, "") && (is(res, "secrets") || is(res, "configmaps"))) {
            /* get, or a list or watch of one name (fieldSelector). */
            if (!read || !*a->name || *a->sub) return 0;
            if (a->quick) return API_AUTHZ_LATER; /* the pods: off the loop */
            return api_node_pod_references(s, node, a->ns, res, a->name) ||
                   no_relationship(node, reason, len);
        }
        if (is(g, "") && is(res, "persistentvolumeclaims")) {
            int status = is(a->sub, "status") &&
                         (is(a->verb, "update") || is(a->verb, "patch") || is(a->verb, "get"));
            if ((!status && !(is(a->verb, "get") && !*a->sub)) || !*a->name) return 0;
            if (a->quick) return API_AUTHZ_LATER; /* the pods: off the loop */
            return api_node_pod_references(s, node, a->ns, res, a->name) ||
                   no_relationship(node, reason, len);
        }
        if (is(g, "") && is(res, "persistentvolumes")) {
            if (!is(a->verb, "get") || !*a->name || *a->sub) return 0;
            if (a->quick) return API_AUTHZ_LATER; /* the pods: off the loop */
            return node_uses_volume(s, node, a->name) || no_relationship(node, reason, len);
        }
        if (is(g, "") && is(res, "serviceaccounts")) {
            if (!is(a->sub, "token") || !is(a->verb, "create") || !*a->name) return 0;
            if (a->quick) return API_AUTHZ_LATER; /* the pods: off the loop */
            return api_node_pod_references(s, node, a->ns, res, a->name) ||
                   no_relationship(node, reason, len);
        }
        if (is(g, "coordination.k8s.io") && is(res, "leases")) {
            /* Its own Lease in kube-node-lease, and nothing else. */
            if (!is(a->ns, "kube-node-lease") || *a->sub) return 0;
            if (is(a->verb, "create")) return 1; /* NodeRestriction checks the name */
            return *a->name && is(a->name, node) &&
                   (read || is(a->verb, "update") || is(a->verb, "patch") || is(a->verb, "delete"));
        }
        if (is(g, "storage.k8s.io") && is(res, "csinodes")) {
            if (is(a->verb, "create")) return 1; /* NodeRestriction checks the name */
            return *a->name && is(a->name, node) && !is(a->verb, "list") && !is(a->verb, "watch");
        }
    }
    return rbac_json_rules_allow(static_rules, a);
}
