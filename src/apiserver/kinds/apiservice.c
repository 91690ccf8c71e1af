/*
 * apiservice.c -- APIServices (apiregistration.k8s.io/v1), as kube-apiserver's
 * aggregator keeps them.
 *
 * INVARIANT: every group-version this server serves has an APIService named
 * "<version>.<group>" ("v1." for the core group) with Kubernetes' priorities
 * and Available=True (reason Local); one kplane created for a
 * CustomResourceDefinition's version goes when that version is no longer
 * served; an APIService naming a Service reports Available=False with
 * Kubernetes' reason, because kplane does not proxy to extension API servers
 * (aggregation is not built), and its group is never served.
 *
 * OWNS: the APIServices labelled kube-aggregator.kubernetes.io/automanaged
 * ("onstart" for built-ins, "true" for CRDs, as Kubernetes labels them), and
 * the status of every APIService. Users' APIServices are theirs otherwise.
 *
 * One thread, started with the server: it passes over the APIServices when
 * one changes, and once a second for changes of the served view (a CRD's
 * versions) and of the Services that non-local ones name (in memory: the
 * view, and look-ups in the Services' watch cache; no store read). Writes
 * go through the API (api_internal), as the CRD controller's do, each
 * conditional on the version read; a conflict is retried on the next pass,
 * so two API servers on one etcd agree.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/http/http.h"
#include "apiserver/rest/rest.h"
#include "apiserver/kinds/kinds.h"
#include "lib/err.h"
#include "lib/log.h"
#include "store/store.h"
#include "apiserver/rest/watchcache.h"

#define AS_PREFIX "/registry/apiregistration.k8s.io/apiservices/"
#define AS_LABEL "kube-aggregator.kubernetes.io/automanaged"
#define AS_RESYNC_MS 1000

/* Kubernetes' priorities of the built-in group-versions (its aggregator's
 * table); a group-version not listed gets no APIService, as there. */
static const struct prio {
    const char *group, *version;
    int group_min, version_prio;
} prios[] = {
    {"", "v1", 18000, 1},
    {"apiregistration.k8s.io", "v1", 18000, 15},
    {"apps", "v1", 17800, 15},
    {"events.k8s.io", "v1", 17750, 15},
    {"authentication.k8s.io", "v1", 17700, 15},
    {"authorization.k8s.io", "v1", 17600, 15},
    {"autoscaling", "v1", 17500, 15},
    {"autoscaling", "v2", 17500, 30},
    {"batch", "v1", 17400, 15},
    {"certificates.k8s.io", "v1", 17300, 15},
    {"networking.k8s.io", "v1", 17200, 15},
    {"policy", "v1", 17100, 15},
    {"rbac.authorization.k8s.io", "v1", 17000, 15},
    {"storage.k8s.io", "v1", 16800, 15},
    {"apiextensions.k8s.io", "v1", 16700, 15},
    {"admissionregistration.k8s.io", "v1", 16700, 15},
    {"scheduling.k8s.io", "v1", 16600, 15},
    {"coordination.k8s.io", "v1", 16500, 15},
    {"node.k8s.io", "v1", 16300, 15},
    {"discovery.k8s.io", "v1", 16200, 15},
    {"flowcontrol.apiserver.k8s.io", "v1", 16100, 21},
};
/* A CRD's versions (Kubernetes' crdregistration controller). */
#define CRD_GROUP_MIN 1000
#define CRD_VERSION_PRIO 100

typedef struct as_ctl {
    apiserver_t *srv;
    wc_t *cache;    /* the APIServices' */
    wc_t *services; /* the Services' */
    api_loop_t *loop;
} as_ctl_t;

static const struct prio *prio_of(const char *group, const char *version)
{
    for (size_t i = 0; i < sizeof prios / sizeof prios[0]; i++)
        if (!strcmp(prios[i].group, group) && !strcmp(prios[i].version, version)) return &prios[i];
    return NULL;
}

static void as_name(const char *group, const char *version, char *out, size_t n)
{
    snprintf(out, n, "%s.%s", version, group);
}

/* The Available condition an APIService should carry, or NULL when out of
 * memory. Local ones always are; a Service-backed one is not, with
 * Kubernetes' ServiceNotFound when the Service is missing. */
static json_t *available_condition(as_ctl_t *c, const json_t *as)
{
    const json_t *svc = json_object_get(json_object_get(as, "spec"), "service");
    if (!json_is_object(svc))
        return json_pack("{s:s, s:s, s:s, s:s}", "type", "Available", "status", "True", "reason",
                         "Local", "message", "Local APIServices are always available");
    const char *ns = api_json_str(svc, "namespace"), *name = api_json_str(svc, "name");
    char key[STORE_KEY_MAX + 1];
    snprintf(key, sizeof key, "/registry/core/services/%s/%s", ns, name);
    const wc_obj_t *found = NULL;
    int rc = c->services ? wc_get(c->services, key, &found) : KP_ENOTFOUND;
    wc_obj_unref(found);
    char msg[600];
    if (rc) {
        snprintf(msg, sizeof msg, "service/%s in \"%s\" is not present", name, ns);
        return json_pack("{s:s, s:s, s:s, s:s}", "type", "Available", "status", "False",
                         "reason", "ServiceNotFound", "message", msg);
    }
    snprintf(msg, sizeof msg,
             "failing or missing response from service/%s in \"%s\": kplane does not proxy to "
             "extension API servers",
             name, ns);
    return json_pack("{s:s, s:s, s:s, s:s}", "type", "Available", "status", "False", "reason",
                     "FailedDiscoveryCheck", "message", msg);
}

/* The Available condition in `as` and its index (*at), or NULL. */
static json_t *available_of(const json_t *as, size_t *at)
{
    json_t *conds = json_object_get(json_object_get(as, "status"), "conditions"), *v, *found = NULL;
    size_t i;
    json_array_foreach(conds, i, v) if (!strcmp(api_json_str(v, "type"), "Available")) {
        found = v;
        *at = i;
    }
    return found;
}

/* Does `as` already say `cond` (status, reason and message)? */
static int says_available(const json_t *as, const json_t *cond)
{
    size_t at;
    const json_t *old = available_of(as, &at);
    const char *keys[] = {"status", "reason", "message"};
    int same = old != NULL;
    for (size_t k = 0; same && k < 3; k++)
        same = !strcmp(api_json_str(old, keys[k]), api_json_str(cond, keys[k]));
    return same;
}

/* Set `cond` (borrowed) in as.status.conditions; lastTransitionTime changes
 * only with the status. 1 if the object changed. */
static int set_available(json_t *as, const json_t *cond)
{
    if (says_available(as, cond)) return 0;
    json_t *st = json_object_get(as, "status");
    if (!json_is_object(st)) json_object_set_new(as, "status", st = json_object());
    json_t *conds = json_object_get(st, "conditions");
    if (!json_is_array(conds)) json_object_set_new(st, "conditions", conds = json_array());
    size_t at = 0;
    json_t *old = available_of(as, &at);
    json_t *next = json_deep_copy(cond);
    if (!next) return 0;
    char now[32];
    api_now_rfc3339(now);
    if (old && !strcmp(api_json_str(old, "status"), api_json_str(cond, "status")) &&
        json_object_get(old, "lastTransitionTime"))
        json_object_set(next, "lastTransitionTime", json_object_get(old, "lastTransitionTime"));
    else
        json_object_set_new(next, "lastTransitionTime", json_string(now));
    if (old) json_array_set_new(conds, at, next);
    else json_array_append_new(conds, next);
    return 1;
}

#define AS_PATH "/apis/apiregistration.k8s.io/v1/apiservices"
#define AS_MANAGER "kube-apiserver"

/* A write through the API (api_internal: validation, managedFields, the
 * watch cache), as a client's would be; `what` names it in the log. A
 * conflict or a create that finds the object waits for the next pass. */
static void as_write(as_ctl_t *c, const char *method, const char *path, const json_t *body,
                     const char *what)
{
    json_t *reply = NULL;
    int code = 0;
    int rc = api_internal(c->srv, method, path, body, AS_MANAGER, &code, &reply);
    if (rc)
        log_warn("apiservice", "%s: %s", what, err_str(rc));
    else if (code >= 300 && code != 409 && code != 404)
        log_warn("apiservice", "%s: %d %s", what, code, api_json_str(reply, "message"));
    json_decref(reply);
}

/* Create the automanaged APIService for group/version (label `managed`);
 * its status comes with the next pass, as the create drops it. */
static void create_local(as_ctl_t *c, const char *group, const char *version, int group_min,
                         int version_prio, const char *managed)
{
    char name[320], what[400];
    as_name(group, version, name, sizeof name);
    json_t *as = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s, s:s, s:i, s:i}}", "kind",
                           "APIService", "apiVersion", "apiregistration.k8s.io/v1", "metadata",
                           "name", name, "labels", AS_LABEL, managed, "spec", "group", group,
                           "version", version, "groupPriorityMinimum", group_min,
                           "versionPriority", version_prio);
    snprintf(what, sizeof what, "creating %s", name);
    if (as) as_write(c, "POST", AS_PATH, as, what);
    json_decref(as);
}

/* Write `as` (the cached version at `rev`) as its status, or delete it:
 * either only if it is still that version. */
static void write_back(as_ctl_t *c, const char *name, json_t *as, int64_t rev)
{
    char path[512], what[400], rv[24];
    snprintf(rv, sizeof rv, "%lld", (long long)rev);
    if (!as) {
        snprintf(path, sizeof path, AS_PATH "/%s", name);
        snprintf(what, sizeof what, "deleting %s", name);
        json_t *opts = json_pack("{s:s, s:s, s:{s:s}}", "kind", "DeleteOptions", "apiVersion",
                                 "v1", "preconditions", "resourceVersion", rv);
        if (opts) as_write(c, "DELETE", path, opts, what);
        json_decref(opts);
        return;
    }
    snprintf(path, sizeof path, AS_PATH "/%s/status", name);
    snprintf(what, sizeof what, "updating %s's status", name);
    if (!json_object_set_new(json_object_get(as, "metadata"), "resourceVersion", json_string(rv)))
        as_write(c, "PUT", path, as, what);
}

/* Is group/version served in view `v`? */
static int served(const api_view_t *v, const char *group, const char *version)
{
    for (size_t i = 0; i < v->count; i++)
        if (!strcmp(v->res[i]->group, group) && !strcmp(v->res[i]->version, version)) return 1;
    return 0;
}

static void sync_all(as_ctl_t *c)
{
    api_view_t *v = api_view_get(c->srv);
    wc_list_t *l = NULL;
    if (!v || wc_list(c->cache, "", NULL, 0, 0, 0, &l)) {
        api_view_put(v);
        return;
    }
    /* What exists: fix status, drop automanaged CRD ones no longer served. */
    for (size_t i = 0; i < l->count; i++) {
        json_t *as;
        if (wc_obj_copy(l->objs[i], &as)) continue; /* the next pass */
        const json_t *spec = json_object_get(as, "spec");
        const char *managed =
            api_json_str(json_object_get(json_object_get(as, "metadata"), "labels"), AS_LABEL);
        if (!strcmp(managed, "true") && !json_is_object(json_object_get(spec, "service")) &&
            !served(v, api_json_str(spec, "group"), api_json_str(spec, "version"))) {
            write_back(c, l->objs[i]->name, NULL, l->objs[i]->rev);
            json_decref(as);
            continue;
        }
        json_t *cond = available_condition(c, as);
        if (cond && !says_available(as, cond) && set_available(as, cond))
            write_back(c, l->objs[i]->name, as, l->objs[i]->rev);
        json_decref(as);
        json_decref(cond);
    }
    /* What is missing: one per served group-version (the view lists the
     * built-ins first, then the CRDs' resources). */
    for (size_t i = 0; i < v->count; i++) {
        const api_resource_t *r = v->res[i];
        int dup = 0;
        for (size_t j = 0; j < i && !dup; j++)
            dup = !strcmp(v->res[j]->group, r->group) && !strcmp(v->res[j]->version, r->version);
        if (dup) continue;
        char name[320], key[STORE_KEY_MAX + 1];
        as_name(r->group, r->version, name, sizeof name);
        snprintf(key, sizeof key, AS_PREFIX "%s", name);
        const wc_obj_t *have = NULL;
        if (!wc_get(c->cache, key, &have)) {
            wc_obj_unref(have);
            continue;
        }
        if (i >= api_registry_count()) { /* a CustomResourceDefinition's */
            create_local(c, r->group, r->version, CRD_GROUP_MIN, CRD_VERSION_PRIO, "true");
        } else {
            const struct prio *p = prio_of(r->group, r->version);
            if (p) create_local(c, r->group, r->version, p->group_min, p->version_prio, "onstart");
        }
    }
    wc_list_free(l);
    api_view_put(v);
}

static void as_pass(void *arg) { sync_all(arg); }

int api_apiservice_start(apiserver_t *s)
{
    api_view_t *v = api_view_get(s);
    size_t ai = 0, si = 0;
    const api_resource_t *ar = api_view_find(v, "apiregistration.k8s.io", "v1", "apiservices", &ai);
    const api_resource_t *sr = api_view_find(v, "", "v1", "services", &si);
    wc_t *cache = ar ? v->caches[ai] : NULL, *services = sr ? v->caches[si] : NULL;
    api_view_put(v);
    if (!cache) return 0; /* not served: nothing to keep */
    as_ctl_t *c = calloc(1, sizeof *c);
    if (!c) return KP_ENOMEM;
    c->srv = s;
    c->cache = cache;
    c->services = services;
    int rc = api_loop_start(cache, AS_RESYNC_MS, as_pass, c, &c->loop);
    if (rc) {
        free(c);
        return rc;
    }
    s->apiservices = c;
    return 0;
}

void api_apiservice_stop(apiserver_t *s)
{
    as_ctl_t *c = s->apiservices;
    if (!c) return;
    api_loop_stop(c->loop);
    free(c);
    s->apiservices = NULL;
}
