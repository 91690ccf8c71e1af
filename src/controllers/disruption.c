/*
 * disruption.c -- the disruption controller (Kubernetes'
 * pkg/controller/disruption), for PodDisruptionBudgets.
 *
 * INVARIANT: a PodDisruptionBudget's status says how many of its pods may
 * be disrupted now: status.disruptionsAllowed = currentHealthy -
 * desiredHealthy (never below 0, and 0 when no pod is expected), where
 * currentHealthy counts its Ready pods that are not being deleted and not
 * recently evicted (status.disruptedPods), and desiredHealthy follows from
 * minAvailable or maxUnavailable against the pods expected: the pods
 * themselves for an integer minAvailable, else the replicas their
 * controllers (ReplicaSet, or the Deployment owning it; StatefulSet;
 * ReplicationController) ask for. The DisruptionAllowed condition and
 * observedGeneration go with it; an eviction (pods/eviction in the API
 * server) spends an allowed disruption and records the pod in
 * disruptedPods, which this controller forgets once the pod is gone or
 * after two minutes.
 *
 * OWNS: the status of PodDisruptionBudgets, nothing else. When the expected
 * count cannot be found (a pod without a known controller), the budget
 * allows no disruption (reason SyncFailed), as Kubernetes' failSafe does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controllers/controller.h"
#include "controllers/ctrl_util.h"
#include "controllers/disruption_int.h"
#include "lib/err.h"
#include "lib/log.h"

#define DISRUPTED_TIMEOUT_S 120 /* Kubernetes' DeletionTimeout */

typedef struct dis_ctl {
    ctrl_t *c;
    kc_informer_t *pdbs, *pods, *rss, *deps, *stss, *rcs;
} dis_ctl_t;

/* ---- the computation (disruption_int.h) ---- */

int dis_scaled(const json_t *v, int64_t total, int64_t *out)
{
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return 0;
    }
    const char *s = json_string_value(v);
    char *end = NULL;
    long long pct = s ? strtoll(s, &end, 10) : -1;
    if (!s || end == s || !end || strcmp(end, "%") || pct < 0) return KP_EINVAL;
    *out = (pct * total + 99) / 100; /* rounded up, as Kubernetes does here */
    return 0;
}

static int has_deletion(const json_t *o)
{
    return json_object_get(json_object_get(o, "metadata"), "deletionTimestamp") != NULL;
}

/* Replicas an owner asks for: spec.replicas, 1 when absent. */
static int64_t replicas_of(const json_t *owner)
{
    const json_t *r = json_object_get(json_object_get(owner, "spec"), "replicas");
    return json_is_integer(r) ? json_integer_value(r) : 1;
}

int dis_compute(const json_t *pdb, json_t *const *pods, size_t n, dis_scale_fn scale, void *arg,
                int64_t now, dis_result_t *out)
{
    memset(out, 0, sizeof *out);
    const json_t *spec = json_object_get(pdb, "spec");
    const json_t *min = json_object_get(spec, "minAvailable");
    const json_t *max = json_object_get(spec, "maxUnavailable");
    if (json_is_null(min)) min = NULL;
    if (json_is_null(max)) max = NULL;
    int rc = 0;
    /* The expected count. */
    if (max || (min && !json_is_integer(min))) {
        /* The controllers' replicas, each controller once. */
        const char **seen = calloc(n ? n : 1, sizeof *seen);
        size_t nseen = 0;
        if (!seen) return KP_ENOMEM;
        for (size_t i = 0; i < n && !rc; i++) {
            const char *uid, *kind, *name;
            if (!ctrl_owner(pods[i], &uid, &kind, &name)) {
                out->unmanaged++;
                continue;
            }
            int dup = 0;
            for (size_t k = 0; k < nseen && !dup; k++)
                dup = !strcmp(seen[k], uid);
            if (dup) continue;
            seen[nseen++] = uid;
            int64_t r = 0;
            rc = scale(arg, ctrl_meta_str(pods[i], "namespace"), kind, name, uid, &r);
            if (rc) snprintf(out->error, sizeof out->error,
                             "found no controllers for pod \"%s\"", ctrl_meta_str(pods[i], "name"));
            out->expected += r;
        }
        free(seen);
        if (rc) return rc;
        int64_t v = 0;
        if (max) {
            if (dis_scaled(max, out->expected, &v)) return KP_EINVAL;
            out->desired = out->expected - v > 0 ? out->expected - v : 0;
        } else {
            if (dis_scaled(min, out->expected, &v)) return KP_EINVAL;
            out->desired = v;
        }
    } else if (min) {
        out->expected = (int64_t)n;
        out->desired = json_integer_value(min);
    }
    /* Recently evicted pods still there: not healthy, until they go or the
     * eviction is two minutes old. */
    const json_t *disrupted =
        json_object_get(json_object_get(pdb, "status"), "disruptedPods");
    out->disrupted = json_object();
    if (!out->disrupted) return KP_ENOMEM;
    out->recheck = -1;
    const char *pod_name;
    json_t *when;
    json_object_foreach((json_t *)disrupted, pod_name, when) {
        const json_t *pod = NULL;
        for (size_t i = 0; i < n && !pod; i++)
            if (!strcmp(ctrl_meta_str(pods[i], "name"), pod_name)) pod = pods[i];
        if (!pod || has_deletion(pod)) continue;
        int64_t t = ctrl_time(json_string_value(when));
        if (t < 0 || t + DISRUPTED_TIMEOUT_S <= now) continue;
        json_object_set(out->disrupted, pod_name, when);
        if (out->recheck < 0 || t + DISRUPTED_TIMEOUT_S < out->recheck)
            out->recheck = t + DISRUPTED_TIMEOUT_S;
    }
    for (size_t i = 0; i < n; i++) {
        if (has_deletion(pods[i]) || !ctrl_pod_ready(pods[i])) continue;
        if (json_object_get(out->disrupted, ctrl_meta_str(pods[i], "name"))) continue;
        out->healthy++;
    }
    out->allowed = out->expected > 0 && out->healthy > out->desired ? out->healthy - out->desired
                                                                    : 0;
    return 0;
}

void dis_result_clear(dis_result_t *r)
{
    json_decref(r->disrupted);
    r->disrupted = NULL;
}

json_t *dis_status(const json_t *pdb, const dis_result_t *r, int failed, const char *now)
{
    const json_t *old = json_object_get(pdb, "status");
    json_int_t gen = json_integer_value(json_object_get(json_object_get(pdb, "metadata"),
                                                        "generation"));
    int64_t allowed = failed ? 0 : r->allowed;
    const char *cstatus = allowed > 0 ? "True" : "False";
    const char *reason = failed ? "SyncFailed" : allowed > 0 ? "SufficientPods" : "InsufficientPods";
    const char *message = failed ? r->error : "";
    /* lastTransitionTime moves only when the condition's status does. */
    const char *since = now;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(old, "conditions"), i, c) {
        const char *t = json_string_value(json_object_get(c, "type"));
        const char *s = json_string_value(json_object_get(c, "status"));
        const char *ltt = json_string_value(json_object_get(c, "lastTransitionTime"));
        if (t && !strcmp(t, "DisruptionAllowed") && s && !strcmp(s, cstatus) && ltt) since = ltt;
    }
    json_t *st = json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:[{s:s, s:s, s:I, s:s, s:s, s:s}]}", "observedGeneration",
        (json_int_t)gen, "disruptionsAllowed", (json_int_t)allowed, "currentHealthy",
        (json_int_t)(failed ? 0 : r->healthy), "desiredHealthy",
        (json_int_t)(failed ? 0 : r->desired), "expectedPods",
        (json_int_t)(failed ? 0 : r->expected), "conditions", "type", "DisruptionAllowed",
        "status", cstatus, "observedGeneration", (json_int_t)gen, "lastTransitionTime", since,
        "reason", reason, "message", message);
    if (st && r->disrupted && json_object_size(r->disrupted))
        json_object_set(st, "disruptedPods", r->disrupted);
    return st;
}

/* ---- the controller ---- */

/* The replicas the controller `kind`/`name` (uid) of a pod asks for. */
static int scale_of(void *arg, const char *ns, const char *kind, const char *name,
                    const char *uid, int64_t *out)
{
    dis_ctl_t *s = arg;
    char key[512];
    snprintf(key, sizeof key, "%s/%s", ns, name);
    kc_informer_t *inf = !strcmp(kind, "ReplicaSet")              ? s->rss
                         : !strcmp(kind, "StatefulSet")           ? s->stss
                         : !strcmp(kind, "ReplicationController") ? s->rcs
                         : !strcmp(kind, "Deployment")            ? s->deps
                                                                  : NULL;
    json_t *owner = inf ? kc_informer_get(inf, key) : NULL;
    if (!owner || strcmp(ctrl_meta_str(owner, "uid"), uid)) {
        json_decref(owner);
        return KP_ENOTFOUND;
    }
    /* A ReplicaSet of a Deployment: the Deployment's replicas. */
    const char *duid, *dkind, *dname;
    if (inf == s->rss && ctrl_owner(owner, &duid, &dkind, &dname) &&
        !strcmp(dkind, "Deployment")) {
        snprintf(key, sizeof key, "%s/%s", ns, dname);
        json_t *dep = kc_informer_get(s->deps, key);
        if (dep && !strcmp(ctrl_meta_str(dep, "uid"), duid)) {
            json_decref(owner);
            owner = dep;
        } else {
            json_decref(dep);
        }
    }
    *out = replicas_of(owner);
    json_decref(owner);
    return 0;
}

/* Queue every budget of pod's namespace whose selector matches it. */
static void enqueue_budgets_of(dis_ctl_t *s, const json_t *pod)
{
    json_t **pdbs = NULL;
    size_t n = 0;
    if (kc_informer_list(s->pdbs, "namespace", ctrl_meta_str(pod, "namespace"), &pdbs, &n)) return;
    for (size_t i = 0; i < n; i++) {
        const json_t *sel = json_object_get(json_object_get(pdbs[i], "spec"), "selector");
        if (ctrl_selector_matches(sel, ctrl_labels(pod))) ctrl_enqueue_obj(s->c, pdbs[i]);
    }
    kc_objs_free(pdbs, n);
}

static void pdb_added(void *arg, const json_t *pdb) { ctrl_enqueue_obj(((dis_ctl_t *)arg)->c, pdb); }
static void pdb_updated(void *arg, const json_t *old, const json_t *pdb)
{
    (void)old;
    pdb_added(arg, pdb);
}
static void pod_added(void *arg, const json_t *pod) { enqueue_budgets_of(arg, pod); }
static void pod_updated(void *arg, const json_t *old, const json_t *pod)
{
    enqueue_budgets_of(arg, pod);
    /* A label change may move the pod out of a budget. */
    if (!json_equal(json_object_get(json_object_get(old, "metadata"), "labels"),
                    json_object_get(json_object_get(pod, "metadata"), "labels")))
        enqueue_budgets_of(arg, old);
}

static int dis_init(ctrl_t *c, void **self)
{
    dis_ctl_t *s = calloc(1, sizeof *s);
    if (!s) return KP_ENOMEM;
    s->c = c;
    s->pdbs = ctrl_informer(c, &kc_poddisruptionbudgets);
    s->pods = ctrl_informer(c, &kc_pods);
    s->rss = ctrl_informer(c, &kc_replicasets);
    s->deps = ctrl_informer(c, &kc_deployments);
    s->stss = ctrl_informer(c, &kc_statefulsets);
    s->rcs = ctrl_informer(c, &kc_replicationcontrollers);
    int rc = KP_ENOMEM;
    if (!s->pdbs || !s->pods || !s->rss || !s->deps || !s->stss || !s->rcs) goto fail;
    kc_handlers_t hp = {.on_add = pdb_added, .on_update = pdb_updated, .arg = s};
    kc_handlers_t hpod = {.on_add = pod_added, .on_update = pod_updated, .on_delete = pod_added,
                          .arg = s};
    if ((rc = kc_informer_add_handlers(s->pdbs, &hp)) ||
        (rc = kc_informer_add_handlers(s->pods, &hpod)))
        goto fail;
    *self = s;
    return 0;
fail:
    if (s->pdbs) kc_informer_remove_handlers(s->pdbs, s);
    if (s->pods) kc_informer_remove_handlers(s->pods, s);
    free(s);
    return rc;
}

static void dis_free(void *self) { free(self); }

/* The pods of the budget's namespace that its selector selects. */
static int budget_pods(dis_ctl_t *s, const json_t *pdb, json_t ***out, size_t *n)
{
    json_t **pods = NULL;
    size_t all = 0, k = 0;
    int rc = kc_informer_list(s->pods, "namespace", ctrl_meta_str(pdb, "namespace"), &pods, &all);
    if (rc) return rc;
    const json_t *sel = json_object_get(json_object_get(pdb, "spec"), "selector");
    for (size_t i = 0; i < all; i++) {
        if (ctrl_selector_matches(sel, ctrl_labels(pods[i]))) pods[k++] = pods[i];
        else json_decref(pods[i]);
    }
    *out = pods;
    *n = k;
    return 0;
}

static int dis_sync(ctrl_t *c, void *self, const char *key)
{
    dis_ctl_t *s = self;
    json_t *pdb = kc_informer_get(s->pdbs, key);
    if (!pdb) return 0;
    if (has_deletion(pdb)) {
        json_decref(pdb);
        return 0;
    }
    json_t **pods = NULL;
    size_t n = 0;
    int rc = budget_pods(s, pdb, &pods, &n);
    if (rc) {
        json_decref(pdb);
        return rc;
    }
    if (n == 0) kc_event(ctrl_recorder(c), pdb, "Normal", "NoPods", "No matching pods found");
    int64_t now = (int64_t)time(NULL);
    dis_result_t res;
    int failed = dis_compute(pdb, pods, n, scale_of, s, now, &res) != 0;
    if (failed) {
        if (!res.error[0]) snprintf(res.error, sizeof res.error, "invalid budget");
        kc_event(ctrl_recorder(c), pdb, "Warning", "CalculateExpectedPodCountFailed",
                 "Failed to calculate the number of expected pods: %s", res.error);
    }
    char ts[32];
    struct tm tm;
    time_t t = (time_t)now;
    gmtime_r(&t, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_t *st = dis_status(pdb, &res, failed, ts);
    if (!st) {
        rc = KP_ENOMEM;
    } else if (!json_equal(st, json_object_get(pdb, "status"))) {
        json_t *next = json_deep_copy(pdb);
        if (next && !json_object_set(next, "status", st))
            rc = kc_update(ctrl_client(c), &kc_poddisruptionbudgets, NULL, next, "status", NULL,
                           NULL);
        else
            rc = KP_ENOMEM;
        json_decref(next);
        if (rc == KP_ENOTFOUND) rc = 0;
    }
    if (!rc && res.recheck > 0) ctrl_enqueue_after(c, key, (int)(res.recheck - now) * 1000 + 100);
    json_decref(st);
    dis_result_clear(&res);
    kc_objs_free(pods, n);
    json_decref(pdb);
    return rc;
}

const ctrl_ops_t ctrl_disruption = {
    .name = "disruption",
    .init = dis_init,
    .sync = dis_sync,
    .free = dis_free,
};
