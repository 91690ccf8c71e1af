/*
 * strategy_componentstatus.c -- core/v1 componentstatuses (kubectl get cs):
 * Kubernetes' componentstatus REST (pkg/registry/core/componentstatus), a
 * read-only resource with no objects of its own, answered from health checks
 * at each request (the strategy's serve hook, strategy.h).
 *
 * Kubernetes probes the scheduler's and the controller-manager's /healthz
 * and the etcd servers. kplane reports what the API server can truthfully
 * know of the same three:
 *   etcd-0              the store's health, the check /readyz runs
 *                       (store_health(): the embedded store or etcd);
 *   scheduler,          running beside the API server in this process (the
 *   controller-manager  probe `kplane server` installs,
 *                       apiserver_set_component_probe()), or, elsewhere, its
 *                       leader-election Lease kube-system/kube-scheduler or
 *                       kube-controller-manager held and renewed within its
 *                       leaseDurationSeconds (what an electing component
 *                       does; one that does not elect has no Lease, and is
 *                       reported Unhealthy: nothing shows it runs).
 * Each item has one condition, type Healthy, status "True" with message
 * "ok", or "False" with what failed (in message, as a failed HTTP probe puts
 * it; the store's failure in error, as Kubernetes' etcd check does).
 *
 * As Kubernetes: every reply carries the Warning "v1 ComponentStatus is
 * deprecated in v1.19+"; a GET of another name is its 500 "Component not
 * found: NAME"; a list honours label and field selectors (the items have no
 * labels) and has no resourceVersion.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "apiserver/http/http.h"
#include "apiserver/rest/rest.h"
#include "apiserver/encode/table.h"
#include "apiserver/kinds/strategy_int.h"
#include "apiserver/rest/rest_int.h"
#include "apiserver/schema/strategy.h"
#include "lib/err.h"
#include "store/store.h"

#define CS_WHY_MAX 512

/* The components, in the order they are listed; lease: the Lease the
 * component renews in kube-system, NULL for the store. */
static const struct cs_component {
    const char *name;
    const char *lease;
} components[] = {
    {"scheduler", "kube-scheduler"},
    {"controller-manager", "kube-controller-manager"},
    {"etcd-0", NULL},
};
#define CS_COUNT (sizeof components / sizeof components[0])

/* RFC 3339 ("2024-05-01T10:00:00.000000Z", UTC) to Unix seconds; -1 if not. */
static int64_t cs_time(const char *s)
{
    struct tm tm = {0};
    const char *end = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
    return end ? (int64_t)timegm(&tm) : -1;
}

/* Is the Lease kube-system/`name` held and renewed within its duration?
 * 1, or 0 with why (the message) set. */
static int lease_renewed(api_req_t *r, const char *name, char *why, size_t len)
{
    const api_resource_t *leases =
        api_view_find(r->view, "coordination.k8s.io", "v1", "leases", NULL);
    char key[STORE_KEY_MAX + 1];
    store_kv_t *kv = NULL;
    json_t *lease = NULL;
    int ok = 0;
    int rc = leases ? api_object_key(leases, "kube-system", name, key, sizeof key) : KP_ENOTFOUND;
    if (!rc) rc = store_get(r->srv->cfg.store, key, 0, &kv);
    if (rc == KP_ENOTFOUND) {
        snprintf(why, len, "no Lease kube-system/%s: not running here, and not electing a leader",
                 name);
        goto out;
    }
    if (rc || !(lease = json_loadb(kv->value, kv->value_len, 0, NULL))) {
        snprintf(why, len, "reading Lease kube-system/%s: %s", name,
                 err_str(rc ? rc : KP_ECORRUPT));
        goto out;
    }
    const json_t *spec = json_object_get(lease, "spec");
    const char *holder = json_string_value(json_object_get(spec, "holderIdentity"));
    int64_t renewed = cs_time(json_string_value(json_object_get(spec, "renewTime")));
    json_int_t dur = json_integer_value(json_object_get(spec, "leaseDurationSeconds"));
    int64_t now = (int64_t)time(NULL);
    if (!holder || !*holder)
        snprintf(why, len, "Lease kube-system/%s has no holder", name);
    else if (renewed < 0 || dur <= 0 || now > renewed + dur)
        snprintf(why, len, "Lease kube-system/%s held by %s not renewed for %llds (duration %llds)",
                 name, holder, renewed < 0 ? -1LL : (long long)(now - renewed), (long long)dur);
    else
        ok = 1;
out:
    json_decref(lease);
    free(kv);
    return ok;
}

/* The ComponentStatus of components[i], a new object (NULL: out of memory). */
static json_t *cs_status(api_req_t *r, size_t i)
{
    const struct cs_component *c = &components[i];
    char why[CS_WHY_MAX] = "";
    int healthy, in_error = 0;
    if (!c->lease) {
        healthy = !store_health(r->srv->cfg.store, why, sizeof why);
        in_error = !healthy;
    } else {
        pthread_mutex_lock(&r->srv->metrics_mu);
        int here = r->srv->component_fn ? r->srv->component_fn(r->srv->component_arg, c->name) : -1;
        pthread_mutex_unlock(&r->srv->metrics_mu);
        healthy = here == 1 || lease_renewed(r, c->lease, why, sizeof why);
    }
    json_t *cond = json_pack("{s:s, s:s}", "type", "Healthy", "status", healthy ? "True" : "False");
    if (cond) {
        if (healthy) json_object_set_new(cond, "message", json_string("ok"));
        else json_object_set_new(cond, in_error ? "error" : "message", json_string(why));
    }
    return json_pack("{s:s, s:s, s:{s:s}, s:[o]}", "kind", "ComponentStatus", "apiVersion", "v1",
                     "metadata", "name", c->name, "conditions", cond);
}

/* Reply with `items` (stolen: an array of ComponentStatus), one object when
 * `one` (the request named it), as a Table when asked. */
static int cs_reply(api_req_t *r, json_t *items, int one)
{
    int include, rc;
    int table = rest_wants_table(r, &include);
    if (table < 0) {
        json_decref(items);
        return 0;
    }
    json_t *out;
    if (table) {
        out = api_table_new(r->route.res, 1);
        size_t i;
        json_t *it;
        rc = out ? 0 : KP_ENOMEM;
        json_array_foreach(items, i, it) {
            if (!rc) rc = api_table_add_row(out, r->route.res, it, (api_table_include_t)include,
                                            (int64_t)time(NULL));
        }
    } else if (one) {
        out = json_incref(json_array_get(items, 0));
        rc = out ? 0 : KP_ENOMEM;
    } else {
        size_t i;
        json_t *it;
        json_array_foreach(items, i, it) {
            json_object_del(it, "kind"); /* a typed list's items carry no type */
            json_object_del(it, "apiVersion");
        }
        out = json_pack("{s:s, s:s, s:{}, s:O}", "kind", "ComponentStatusList", "apiVersion",
                        "v1", "metadata", "items", items);
        rc = out ? 0 : KP_ENOMEM;
    }
    json_decref(items);
    if (rc) {
        json_decref(out);
        return api_reply_error(r, rc, NULL, "componentstatuses: %s", err_str(rc));
    }
    return api_reply_json(r, 200, out);
}

static int cs_serve(api_req_t *r)
{
    api_warn(r, "v1 ComponentStatus is deprecated in v1.19+");
    json_t *items = json_array();
    if (!items) return api_reply_error(r, KP_ENOMEM, NULL, "componentstatuses: out of memory");
    if (*r->route.name) { /* a GET: the verb check let nothing else through */
        for (size_t i = 0; i < CS_COUNT; i++) {
            if (strcmp(components[i].name, r->route.name)) continue;
            if (json_array_append_new(items, cs_status(r, i))) goto oom;
            return cs_reply(r, items, 1);
        }
        json_decref(items);
        /* Kubernetes answers a plain error here: a 500 with its text. */
        return api_reply_status(r, 500, "", NULL, "Component not found: %s", r->route.name);
    }
    rest_filter_t f;
    if (rest_selectors(r, &f)) {
        json_decref(items);
        return 0;
    }
    for (size_t i = 0; i < CS_COUNT; i++) {
        json_t *s = cs_status(r, i);
        int bad = !s || (rest_filter_match(&f, s) && json_array_append(items, s));
        json_decref(s);
        if (bad) {
            rest_filter_free(&f);
            goto oom;
        }
    }
    rest_filter_free(&f);
    return cs_reply(r, items, 0);
oom:
    json_decref(items);
    return api_reply_error(r, KP_ENOMEM, NULL, "componentstatuses: %s", err_str(KP_ENOMEM));
}

const api_strategy_t api_strategy_componentstatus = {
    .serve = cs_serve,
};
