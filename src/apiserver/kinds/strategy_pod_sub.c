/*
 * strategy_pod_sub.c -- the pod's own subresources beyond log: binding and
 * eviction (strategy_pod.c lists them in its api_sub_t table).
 *
 * pods/binding sets a pending pod's spec.nodeName once (and its
 * PodScheduled condition), as the scheduler's only write to a pod; below
 * the field manager, as Kubernetes: no managedFields entry.
 * pods/eviction (a policy/v1 or v1beta1 Eviction) is a DELETE of the pod with
 * the Eviction's deleteOptions once its disruption budgets allow it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/http/http.h"
#include "apiserver/rest/rest.h"
#include "lib/err.h"
#include "apiserver/rest/rest_int.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/kinds/strategy_int.h"

/* ---- pods/binding and the namespace's bindings ----
 *
 * Kubernetes' BindingREST (pkg/registry/core/pod/storage): one operation
 * served twice, as the pods/binding subresource and as the namespace-level
 * bindings resource (LegacyBindingREST, where the Binding's metadata.name
 * names the pod). Both end in bind_pod(). */

/* What a bind carries into the update loop (borrowed from the Binding). */
typedef struct bind_arg {
    const char *node;
    const char *uid;             /* metadata.uid: a precondition, or NULL */
    int64_t rv;                  /* metadata.resourceVersion: a precondition, or 0 */
    const json_t *annotations;   /* merged into the pod's, or NULL */
} bind_arg_t;

/* Kubernetes turns every refusal of setPodHostAndAnnotations into a
 * Conflict on the resource "pods/binding". */
static void bind_conflict(api_req_t *r, const char *why)
{
    json_t *d = json_pack("{s:s, s:s}", "name", r->route.name, "kind", "pods/binding");
    api_reply_status(r, 409, "Conflict", d,
                     "Operation cannot be fulfilled on pods/binding \"%s\": %s", r->route.name,
                     why);
    json_decref(d);
}

static json_t *make_bound(api_req_t *r, const json_t *cur, void *arg, int64_t *pre)
{
    const bind_arg_t *a = arg;
    const json_t *meta = json_object_get(cur, "metadata");
    const json_t *spec = json_object_get(cur, "spec");
    const char *bound = json_string_value(json_object_get(spec, "nodeName"));
    const char *uid = json_string_value(json_object_get(meta, "uid"));
    char why[512];
    why[0] = '\0';
    if (a->uid && strcmp(a->uid, uid ? uid : ""))
        snprintf(why, sizeof why,
                 "Precondition failed: UID in precondition: %s, UID in object meta: %s", a->uid,
                 uid ? uid : "");
    else if (json_object_get(meta, "deletionTimestamp"))
        snprintf(why, sizeof why, "pod %s is being deleted, cannot be assigned to a host",
                 r->route.name);
    else if (bound && *bound)
        snprintf(why, sizeof why, "pod %s is already assigned to node \"%s\"", r->route.name,
                 bound);
    else if (json_array_size(json_object_get(spec, "schedulingGates")))
        snprintf(why, sizeof why, "pod %s has non-empty .spec.schedulingGates", r->route.name);
    if (why[0]) {
        bind_conflict(r, why);
        return NULL;
    }
    *pre = a->rv;
    json_t *out = json_deep_copy(cur);
    if (!out) goto oom;
    json_object_set_new(json_object_get(out, "spec"), "nodeName", json_string(a->node));
    if (json_object_size(a->annotations)) {
        json_t *m = json_object_get(out, "metadata");
        json_t *ann = json_object_get(m, "annotations");
        if (!json_is_object(ann)) {
            ann = json_object();
            json_object_set_new(m, "annotations", ann);
        }
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)a->annotations, k, v)
            if (json_is_string(v)) json_object_set(ann, k, v);
    }
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
        const char *type = json_string_value(json_object_get(c, "type"));
        if (type && !strcmp(type, "PodScheduled")) {
            json_array_remove(conds, i);
            break;
        }
    }
    json_array_append_new(conds, json_pack("{s:s, s:s, s:n, s:s}", "type", "PodScheduled",
                                           "status", "True", "lastProbeTime",
                                           "lastTransitionTime", now));
    return out;
oom:
    api_reply_error(r, KP_ENOMEM, NULL, "binding: %s", err_str(KP_ENOMEM));
    return NULL;
}

static int reply_bound(api_req_t *r, const json_t *obj, int64_t rev)
{
    (void)obj;
    (void)rev;
    json_t *s = api_status_new(201, "", "", NULL);
    return api_reply_json(r, 201, s);
}

/* Bind the pod r->route.name (r->route naming the pods resource) as the
 * Binding `b` (borrowed) asks: its namespace, name and target checked as
 * BindingREST.Create does, then spec.nodeName set once. Replies once. */
static int bind_pod(api_req_t *r, const json_t *b)
{
    const json_t *meta = json_object_get(b, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const json_t *target = json_object_get(b, "target");
    const char *node = json_string_value(json_object_get(target, "name"));
    const char *tkind = json_string_value(json_object_get(target, "kind"));
    if (ns && *ns && strcmp(ns, r->route.ns))
        return api_reply_status(r, 400, "BadRequest", NULL,
                                "the namespace of the provided object does not match the "
                                "namespace sent on the request");
    if (!*r->route.name)
        return api_reply_status(r, 400, "BadRequest", NULL, "Name parameter required.");
    if (strcmp(name ? name : "", r->route.name))
        return api_reply_status(r, 400, "BadRequest", NULL,
                                "name in URL does not match name in Binding object");
    /* ValidatePodBinding. Kubernetes hands its field errors up unwrapped
     * (a 500 whose message is the aggregate); kplane answers the 422 Invalid
     * such causes get everywhere else, as pods/binding always did here. */
    json_t *causes = json_array();
    if (!causes) return api_reply_error(r, KP_ENOMEM, NULL, "binding: %s", err_str(KP_ENOMEM));
    if (tkind && *tkind && strcmp(tkind, "Node"))
        json_array_append_new(causes,
                              json_pack("{s:s, s:s, s:s}", "reason", "FieldValueNotSupported",
                                        "message",
                                        "Unsupported value: supported values: \"Node\", "
                                        "\"<empty>\"",
                                        "field", "target.kind"));
    if (!node || !*node)
        json_array_append_new(causes, json_pack("{s:s, s:s, s:s}", "reason",
                                                "FieldValueRequired", "message",
                                                "Required value", "field", "target.name"));
    if (json_array_size(causes)) {
        const json_t *c0 = json_array_get(causes, 0);
        json_t *d = json_pack("{s:s, s:s, s:O}", "name", r->route.name, "kind", "Binding",
                              "causes", causes);
        int rc = api_reply_status(r, 422, "Invalid", d, "Binding \"%s\" is invalid: %s: %s",
                                  r->route.name,
                                  json_string_value(json_object_get(c0, "field")),
                                  json_string_value(json_object_get(c0, "message")));
        json_decref(d);
        json_decref(causes);
        return rc;
    }
    json_decref(causes);
    bind_arg_t a = {.node = node, .annotations = json_object_get(meta, "annotations")};
    const char *uid = json_string_value(json_object_get(meta, "uid"));
    if (uid && *uid) a.uid = uid;
    const char *rvs = json_string_value(json_object_get(meta, "resourceVersion"));
    if (rvs && *rvs && (rest_parse_rv(rvs, &a.rv) || a.rv <= 0))
        return api_reply_status(r, 400, "BadRequest", NULL, "invalid resourceVersion: %s", rvs);
    /* Kubernetes binds below the field manager (GuaranteedUpdate on the
     * pod's storage): the pod's managedFields stay as they were. */
    r->fields_untracked = 1;
    return rest_update_loop(r, make_bound, &a, reply_bound);
}

/* Parse the body of a POST as the Binding, or reply (405, 400): 0 with *b
 * (caller owns) or with *b NULL after replying. */
static int binding_body(api_req_t *r, json_t **b)
{
    *b = NULL;
    if (strcmp(r->method, "POST"))
        return api_reply_status(r, 405, "MethodNotAllowed", NULL,
                                "the server does not allow this method on the requested resource");
    int rc = rest_body_object(r, b);
    if (rc || !*b) return rc;
    const char *kind = json_string_value(json_object_get(*b, "kind"));
    if (kind && *kind && strcmp(kind, "Binding")) {
        rc = api_reply_status(r, 400, "BadRequest", NULL, "not a Binding object: %s", kind);
        json_decref(*b);
        *b = NULL;
    }
    return rc;
}

int api_pod_binding(api_req_t *r)
{
    json_t *b;
    int rc = binding_body(r, &b);
    if (rc || !b) return rc;
    rc = bind_pod(r, b);
    json_decref(b);
    return rc;
}

/* POST /api/v1/namespaces/{ns}/bindings: the same bind, of the pod the
 * Binding's metadata.name names. The request is retargeted at the pods
 * resource (and its watch cache), as the subresource pods/NAME/binding. */
static int bindings_serve(api_req_t *r)
{
    json_t *b;
    int rc = binding_body(r, &b);
    if (rc || !b) return rc;
    size_t index;
    const api_resource_t *pods = api_view_find(r->view, "", "v1", "pods", &index);
    const char *name = json_string_value(json_object_get(json_object_get(b, "metadata"), "name"));
    if (!pods) {
        rc = api_reply_error(r, KP_ENOTFOUND, NULL, "pods are not served");
        goto out;
    }
    r->route.res = pods;
    r->route.index = index;
    snprintf(r->route.resource, sizeof r->route.resource, "pods");
    snprintf(r->route.sub, sizeof r->route.sub, "binding");
    if (name && strlen(name) >= sizeof r->route.name) {
        rc = rest_not_found(r, name); /* no pod has so long a name */
        goto out;
    }
    snprintf(r->route.name, sizeof r->route.name, "%s", name ? name : "");
    rc = bind_pod(r, b);
out:
    json_decref(b);
    return rc;
}

const api_strategy_t api_strategy_binding = {
    .serve = bindings_serve,
};

/* ---- pods/eviction (Kubernetes' EvictionREST) ---- */

/* May `pod` (borrowed) be disrupted now? 0 if so; -1 after replying (429
 * TooManyRequests with a DisruptionBudget cause when a budget forbids it).
 *
 * PodDisruptionBudgets are checked here, as Kubernetes does: a
 * pod api_pod_eviction_skips_budget() names goes at once; otherwise more
 * than one matching budget is a 500, a budget whose status lags its
 * generation or allows no disruption is a 429, and an allowed disruption is
 * recorded in the budget's status.disruptedPods (not under dryRun) before
 * the pod is deleted (strategy_poddisruptionbudget.c). */
static int eviction_allowed(api_req_t *r, const json_t *pod)
{
    if (api_pod_eviction_skips_budget(pod)) return 0;
    return api_pdb_admit_eviction(r, pod);
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

int api_pod_eviction(api_req_t *r)
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
