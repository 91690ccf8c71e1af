/*
 * strategy_pod_sub.c -- the pod's own subresources beyond log: binding and
 * eviction (strategy_pod.c lists them in its api_sub_t table).
 *
 * pods/binding sets a pending pod's spec.nodeName once (and its
 * PodScheduled condition), as the scheduler's only write to a pod.
 * pods/eviction (a policy/v1 or v1beta1 Eviction) is a DELETE of the pod with
 * the Eviction's deleteOptions once its disruption budgets allow it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/http/http.h"
#include "lib/err.h"
#include "apiserver/rest/rest_int.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/kinds/strategy_int.h"

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

int api_pod_binding(api_req_t *r)
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
