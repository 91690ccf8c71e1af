/*
 * daemonset.c -- the DaemonSet controller (apps/v1).
 *
 * INVARIANT: every node that should run a DaemonSet's pod (its template's
 * nodeSelector and required node affinity match the node, and the pod
 * tolerates the node's NoSchedule and NoExecute taints) runs exactly one,
 * and no other node runs one; with RollingUpdate, every pod ends up of the
 * current template while at most maxUnavailable of the desired nodes lack
 * an available pod; the DaemonSet's status says how far it is.
 *
 * OWNS: the pods it creates (generateName "<ds>-", a controller
 * ownerReference, labels controller-revision-hash and
 * pod-template-generation, Kubernetes' daemon tolerations, a required node
 * affinity matchFields metadata.name In [node] that pins each pod to its
 * node: the default scheduler binds it, as in Kubernetes since 1.12); the
 * ownerReferences it adds to matching orphan pods and removes from owned
 * pods that stopped matching; its ControllerRevisions (one per distinct
 * template, "<ds>-<hash>", pruned beyond revisionHistoryLimit) and the
 * DaemonSet's /status. It deletes only pods and revisions it controls.
 *
 * A sync (ds_sync), as Kubernetes' syncDaemonSet:
 *   1. the current revision: find or create the ControllerRevision of the
 *      template (a name taken by another template bumps
 *      status.collisionCount and retries); its hash labels new pods;
 *   2. if the expectations are met (see replicaset.c: creates and deletes
 *      issued by an earlier sync have all been observed, or 5 minutes
 *      passed), manage: create pods for nodes that need one, delete pods on
 *      nodes that must not have one, extra pods, and Failed pods (with a
 *      per-node backoff of 1 s doubling to 15 min, FailedDaemonPod event);
 *   3. if manage issued nothing and the expectations are still met,
 *      RollingUpdate deletes the old pods it may (ds__rolling): the next
 *      sync creates their replacements once they are gone (a sync's view
 *      predates its own calls, so it never rolls on top of them);
 *   4. prune old revisions no pod uses beyond revisionHistoryLimit;
 *   5. status (observedGeneration only when 2-4 ran).
 * A pod is counted against the node it is pinned to before it is bound, so
 * one observation never yields two pods for one node.
 *
 * Differences from Kubernetes, on purpose: pods for nodes that no longer
 * exist are deleted with grace 0 even when bound (Kubernetes leaves bound
 * ones to its pod garbage collector, which kplane does not have); maxSurge
 * is treated as 0; orphan ControllerRevisions are not adopted; the
 * pod-template-generation label is the DaemonSet's
 * deprecated.daemonset.template.generation annotation when the API server
 * keeps one, else its metadata.generation.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controllers/controller.h"
#include "controllers/ctrl_util.h"
#include "controllers/expectations.h"
#include "controllers/daemonset_int.h"
#include "controllers/history.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/nodematch.h"
#include "lib/log.h"

#define BURST               250 /* creates or deletes per sync (Kubernetes' burstReplicas) */
#define PARALLEL            64 /* API calls in flight per batch */
/* The pods index: namespace of pods without a controller (adoption). */
#define ORPHANS "daemonset-orphans"

#define T_NOT_READY     "node.kubernetes.io/not-ready"
#define T_UNREACHABLE   "node.kubernetes.io/unreachable"
#define T_DISK          "node.kubernetes.io/disk-pressure"
#define T_MEMORY        "node.kubernetes.io/memory-pressure"
#define T_PID           "node.kubernetes.io/pid-pressure"
#define T_UNSCHEDULABLE "node.kubernetes.io/unschedulable"
#define T_NETWORK       "node.kubernetes.io/network-unavailable"

/* ==== pure logic (daemonset_int.h) ==== */

static const char *str(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static json_t *child(json_t *obj, const char *key)
{
    json_t *c = json_object_get(obj, key);
    if (!json_is_object(c)) {
        c = json_object();
        if (!c || json_object_set_new(obj, key, c)) return NULL;
    }
    return c;
}

static int add_toleration(json_t *tols, const char *key, const char *effect)
{
    json_t *t = json_pack("{s:s, s:s, s:s}", "key", key, "operator", "Exists", "effect", effect);
    if (!t) return KP_ENOMEM;
    size_t i;
    json_t *x;
    json_array_foreach(tols, i, x) {
        /* Kubernetes' MatchToleration: same key, operator, value, effect. */
        const char *op = str(x, "operator");
        if (!strcmp(str(x, "key"), key) && !strcmp(op, "Exists") && !*str(x, "value") &&
            !strcmp(str(x, "effect"), effect))
            return json_array_set_new(tols, i, t) ? KP_ENOMEM : 0;
    }
    return json_array_append_new(tols, t) ? KP_ENOMEM : 0;
}

int ds__add_tolerations(json_t *spec)
{
    json_t *tols = json_object_get(spec, "tolerations");
    if (!json_is_array(tols)) {
        tols = json_array();
        if (!tols || json_object_set_new(spec, "tolerations", tols)) return KP_ENOMEM;
    }
    static const struct {
        const char *key, *effect;
    } add[] = {
        {T_NOT_READY, "NoExecute"}, {T_UNREACHABLE, "NoExecute"}, {T_DISK, "NoSchedule"},
        {T_MEMORY, "NoSchedule"},   {T_PID, "NoSchedule"},        {T_UNSCHEDULABLE, "NoSchedule"},
    };
    for (size_t i = 0; i < sizeof add / sizeof add[0]; i++)
        if (add_toleration(tols, add[i].key, add[i].effect)) return KP_ENOMEM;
    if (json_is_true(json_object_get(spec, "hostNetwork")) &&
        add_toleration(tols, T_NETWORK, "NoSchedule"))
        return KP_ENOMEM;
    return 0;
}

json_t *ds__pod_template(const json_t *ds, const char *hash, const char *gen)
{
    const json_t *t = json_object_get(json_object_get(ds, "spec"), "template");
    json_t *tmpl = json_is_object(t) ? json_deep_copy(t) : json_object();
    if (!tmpl) return NULL;
    json_t *meta = child(tmpl, "metadata"), *spec = child(tmpl, "spec");
    json_t *labels = meta ? child(meta, "labels") : NULL;
    if (!spec || !labels || ds__add_tolerations(spec) ||
        (gen && json_object_set_new(labels, DS_GEN_LABEL, json_string(gen))) ||
        (hash && *hash && json_object_set_new(labels, DS_HASH_LABEL, json_string(hash)))) {
        json_decref(tmpl);
        return NULL;
    }
    return tmpl;
}

const char *ds__generation(const json_t *ds, char *buf, size_t n)
{
    const json_t *meta = json_object_get(ds, "metadata");
    const char *ann =
        json_string_value(json_object_get(json_object_get(meta, "annotations"), DS_GEN_ANN));
    if (ann && *ann) {
        snprintf(buf, n, "%s", ann);
        return buf;
    }
    const json_t *g = json_object_get(meta, "generation");
    if (!json_is_integer(g)) return NULL;
    snprintf(buf, n, "%lld", (long long)json_integer_value(g));
    return buf;
}

int ds__pin(json_t *spec, const char *node)
{
    json_t *aff = child(spec, "affinity");
    json_t *na = aff ? child(aff, "nodeAffinity") : NULL;
    json_t *req = json_pack("{s:[{s:[{s:s, s:s, s:[s]}]}]}", "nodeSelectorTerms", "matchFields",
                            "key", "metadata.name", "operator", "In", "values", node);
    if (!na || !req ||
        json_object_set_new(na, "requiredDuringSchedulingIgnoredDuringExecution", req))
        return KP_ENOMEM;
    return 0;
}

const char *ds__pod_node(const json_t *pod)
{
    const json_t *spec = json_object_get(pod, "spec");
    const char *nn = json_string_value(json_object_get(spec, "nodeName"));
    if (nn && *nn) return nn;
    const json_t *req =
        json_object_get(json_object_get(json_object_get(spec, "affinity"), "nodeAffinity"),
                        "requiredDuringSchedulingIgnoredDuringExecution");
    size_t i, j;
    const json_t *term, *r;
    json_array_foreach(json_object_get(req, "nodeSelectorTerms"), i, term) {
        json_array_foreach(json_object_get(term, "matchFields"), j, r) {
            const json_t *vals = json_object_get(r, "values");
            if (!strcmp(str(r, "key"), "metadata.name") && !strcmp(str(r, "operator"), "In") &&
                json_array_size(vals) == 1 && json_is_string(json_array_get(vals, 0)))
                return json_string_value(json_array_get(vals, 0));
        }
    }
    return NULL;
}

int ds__should_run(const json_t *tmpl, const json_t *node, int *should_continue)
{
    *should_continue = 0;
    const json_t *spec = json_object_get(tmpl, "spec");
    const char *name = str(json_object_get(node, "metadata"), "name");
    const char *pinned = str(spec, "nodeName");
    if (*pinned && strcmp(pinned, name)) return 0;
    if (!kp_pod_spec_selects_node(spec, node)) return 0;
    const json_t *tols = json_object_get(spec, "tolerations");
    int no_schedule = 0, no_execute = 0;
    size_t i;
    const json_t *t;
    json_array_foreach(json_object_get(json_object_get(node, "spec"), "taints"), i, t) {
        const char *eff = str(t, "effect");
        if (strcmp(eff, "NoSchedule") && strcmp(eff, "NoExecute")) continue;
        if (kp_tolerates_taint(tols, t)) continue;
        if (!strcmp(eff, "NoExecute"))
            no_execute = 1;
        else
            no_schedule = 1;
    }
    /* Not Ready: the NoSchedule taint the node lifecycle controller gives
     * (or will give) it, as the scheduler assumes too. */
    const char *ready = NULL;
    const json_t *c;
    json_array_foreach(json_object_get(json_object_get(node, "status"), "conditions"), i, c) {
        if (!strcmp(str(c, "type"), "Ready")) ready = str(c, "status");
    }
    if (!ready || strcmp(ready, "True")) {
        const char *key = ready && !strcmp(ready, "False") ? T_NOT_READY : T_UNREACHABLE;
        if (!kp_tolerates(tols, key, "", "NoSchedule")) no_schedule = 1;
    }
    if (no_execute) return 0;
    *should_continue = 1;
    return !no_schedule;
}

int ds__pod_updated(const json_t *pod, const char *hash, const char *gen)
{
    const json_t *labels = ctrl_labels(pod);
    const char *h = json_string_value(json_object_get(labels, DS_HASH_LABEL));
    const char *g = json_string_value(json_object_get(labels, DS_GEN_LABEL));
    return (hash && *hash && h && !strcmp(h, hash)) || (gen && g && !strcmp(g, gen));
}

int ds__max_unavailable(const json_t *ds, int32_t desired, int32_t *out)
{
    *out = 1;
    const json_t *v = json_object_get(
        json_object_get(json_object_get(json_object_get(ds, "spec"), "updateStrategy"),
                        "rollingUpdate"),
        "maxUnavailable");
    int64_t r = 1;
    if (json_is_integer(v)) {
        r = json_integer_value(v);
        if (r < 0) return KP_EINVAL;
    } else if (json_is_string(v)) {
        const char *s = json_string_value(v);
        size_t len = strlen(s);
        char *end;
        long pct = strtol(s, &end, 10);
        if (len < 2 || s[len - 1] != '%' || end != s + len - 1 || pct < 0) return KP_EINVAL;
        r = ((int64_t)pct * (desired > 0 ? desired : 0) + 99) / 100; /* rounded up */
    } else if (v && !json_is_null(v)) {
        return KP_EINVAL;
    }
    if (r == 0 && desired > 0) r = 1;
    *out = r > INT32_MAX ? INT32_MAX : (int32_t)r;
    return 0;
}

/* ---- the view ---- */

typedef struct pod_ref {
    const char *node;
    const json_t *pod;
} pod_ref_t;

static int ref_cmp(const void *a, const void *b)
{
    return strcmp(((const pod_ref_t *)a)->node, ((const pod_ref_t *)b)->node);
}

static int node_cmp(const void *a, const void *b)
{
    return strcmp(str(json_object_get(*(json_t *const *)a, "metadata"), "name"),
                  str(json_object_get(*(json_t *const *)b, "metadata"), "name"));
}

/* Kubernetes' podByCreationTimestampAndPhase: scheduled first, then oldest,
 * then by name. */
static int age_cmp(const void *pa, const void *pb)
{
    const json_t *a = *(const json_t *const *)pa, *b = *(const json_t *const *)pb;
    int sa = *str(json_object_get(a, "spec"), "nodeName") != 0;
    int sb = *str(json_object_get(b, "spec"), "nodeName") != 0;
    if (sa != sb) return sa ? -1 : 1;
    int64_t ta = ctrl_time(ctrl_meta_str(a, "creationTimestamp"));
    int64_t tb = ctrl_time(ctrl_meta_str(b, "creationTimestamp"));
    if (ta != tb) return ta < tb ? -1 : 1;
    return strcmp(ctrl_meta_str(a, "name"), ctrl_meta_str(b, "name"));
}

int ds__view(const ds_in_t *in, ds_view_t *out)
{
    memset(out, 0, sizeof *out);
    int rc = KP_ENOMEM;
    pod_ref_t *refs = calloc(in->npods + 1, sizeof *refs);
    json_t **nodes = calloc(in->nnodes + 1, sizeof *nodes);
    out->v = calloc(in->nnodes + in->npods + 1, sizeof *out->v);
    out->store = calloc(in->npods + 1, sizeof *out->store);
    if (!refs || !nodes || !out->v || !out->store) goto done;
    size_t nr = 0;
    for (size_t i = 0; i < in->npods; i++) {
        const char *node = ds__pod_node(in->pods[i]);
        if (node) refs[nr++] = (pod_ref_t){node, in->pods[i]};
    }
    qsort(refs, nr, sizeof *refs, ref_cmp);
    if (in->nnodes) memcpy(nodes, in->nodes, in->nnodes * sizeof *nodes);
    qsort(nodes, in->nnodes, sizeof *nodes, node_cmp);
    /* Merge the sorted nodes with the sorted pods' node names. */
    size_t i = 0, j = 0, used = 0;
    while (i < in->nnodes || j < nr) {
        ds_entry_t *e = &out->v[out->n];
        const char *nn = i < in->nnodes ? str(json_object_get(nodes[i], "metadata"), "name") : NULL;
        int c = !nn ? 1 : j >= nr ? -1 : strcmp(nn, refs[j].node);
        if (c <= 0) {
            e->node = nn;
            e->obj = nodes[i++];
            e->run = ds__should_run(in->tmpl, e->obj, &e->cont);
        } else {
            e->node = refs[j].node;
        }
        e->pods = out->store + used;
        while (j < nr && !strcmp(refs[j].node, e->node))
            out->store[used + e->n++] = refs[j++].pod;
        used += e->n;
        qsort(e->pods, e->n, sizeof *e->pods, age_cmp);
        if (c > 0 && !e->n) continue; /* cannot happen: a name from a pod */
        out->n++;
    }
    rc = 0;
done:
    free(refs);
    free(nodes);
    if (rc) ds__view_free(out);
    return rc;
}

void ds__view_free(ds_view_t *v)
{
    free(v->v);
    free(v->store);
    memset(v, 0, sizeof *v);
}

static int deleting(const json_t *pod)
{
    return json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp") != NULL;
}

static int failed(const json_t *pod)
{
    return !strcmp(str(json_object_get(pod, "status"), "phase"), "Failed");
}

int ds__manage(const ds_in_t *in, const ds_view_t *v, ds_plan_t *out)
{
    memset(out, 0, sizeof *out);
    size_t np = in->npods + 1;
    out->create = calloc(v->n + 1, sizeof *out->create);
    out->del = calloc(np, sizeof *out->del);
    out->failed = calloc(np, sizeof *out->failed);
    out->failed_node = calloc(np, sizeof *out->failed_node);
    out->orphans = calloc(np, sizeof *out->orphans);
    if (!out->create || !out->del || !out->failed || !out->failed_node || !out->orphans) {
        ds__plan_free(out);
        return KP_ENOMEM;
    }
    for (size_t i = 0; i < v->n; i++) {
        const ds_entry_t *e = &v->v[i];
        if (!e->obj) {
            for (size_t k = 0; k < e->n; k++)
                if (!deleting(e->pods[k])) out->orphans[out->norphans++] = e->pods[k];
        } else if (e->run && !e->n) {
            out->create[out->ncreate++] = e->node;
        } else if (e->cont) {
            size_t running = 0;
            for (size_t k = 0; k < e->n; k++) {
                const json_t *p = e->pods[k];
                if (deleting(p)) continue;
                if (failed(p)) {
                    out->failed_node[out->nfailed] = e->node;
                    out->failed[out->nfailed++] = p;
                    continue;
                }
                if (running++) out->del[out->ndel++] = p; /* all but the oldest */
            }
        } else {
            for (size_t k = 0; k < e->n; k++)
                if (!deleting(e->pods[k])) out->del[out->ndel++] = e->pods[k];
        }
    }
    return 0;
}

void ds__plan_free(ds_plan_t *p)
{
    free(p->create);
    free(p->del);
    free(p->failed);
    free(p->failed_node);
    free(p->orphans);
    memset(p, 0, sizeof *p);
}

int ds__rolling(const ds_in_t *in, const ds_view_t *v, int32_t max_unavailable, const json_t ***del,
                size_t *ndel)
{
    *del = NULL;
    *ndel = 0;
    const json_t **out = calloc(in->npods + 1, sizeof *out);
    const json_t **cand = calloc(in->npods + 1, sizeof *cand);
    if (!out || !cand) {
        free(out);
        free(cand);
        return KP_ENOMEM;
    }
    size_t nout = 0, ncand = 0;
    int32_t unavailable = 0;
    for (size_t i = 0; i < v->n; i++) {
        const ds_entry_t *e = &v->v[i];
        if (!e->n) continue;
        const json_t *newp = NULL, *oldp = NULL;
        int ok = 1;
        for (size_t k = 0; ok && k < e->n; k++) {
            const json_t *p = e->pods[k];
            if (deleting(p)) continue;
            const json_t **slot = ds__pod_updated(p, in->hash, in->gen) ? &newp : &oldp;
            if (*slot) ok = 0; /* two of a kind: manage() sorts the node out */
            *slot = p;
        }
        if (!ok || (!newp && !oldp) || (newp && oldp)) {
            unavailable++;
        } else if (newp) {
            if (!ctrl_pod_available(newp, in->min_ready_s, in->now, NULL)) unavailable++;
        } else if (!ctrl_pod_available(oldp, in->min_ready_s, in->now, NULL)) {
            out[nout++] = oldp; /* not serving anyway: replace it now */
        } else if (unavailable < max_unavailable) {
            cand[ncand++] = oldp;
        }
    }
    int32_t room = max_unavailable - unavailable;
    for (size_t k = 0; room > 0 && k < ncand; k++, room--)
        out[nout++] = cand[k];
    free(cand);
    if (!nout) {
        free(out);
        return 0;
    }
    *del = out;
    *ndel = nout;
    return 0;
}

void ds__counts(const ds_in_t *in, const ds_view_t *v, ds_counts_t *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < v->n; i++) {
        const ds_entry_t *e = &v->v[i];
        if (!e->obj) continue;
        if (!e->run) {
            if (e->n) out->misscheduled++;
            continue;
        }
        out->desired++;
        if (!e->n) continue;
        out->current++;
        const json_t *p = e->pods[0];
        if (ctrl_pod_ready(p)) {
            out->ready++;
            int wait = 0;
            if (ctrl_pod_available(p, in->min_ready_s, in->now, &wait))
                out->available++;
            else if (wait && (!out->wait_s || wait < out->wait_s))
                out->wait_s = wait;
        }
        if (ds__pod_updated(p, in->hash, in->gen)) out->updated++;
    }
    out->unavailable = out->desired - out->available;
}

int ds__backoff(json_t *map, const char *key, int64_t now_ns, int64_t *wait_ms)
{
    const int64_t forget_ns = 2 * DS_BACKOFF_MAX_MS * 1000000;
    const char *k;
    json_t *e, *tmp;
    json_object_foreach_safe(map, tmp, k, e) {
        if (now_ns - json_integer_value(json_object_get(e, "t")) > forget_ns)
            json_object_del(map, k);
    }
    e = json_object_get(map, key);
    int64_t d = e ? json_integer_value(json_object_get(e, "d")) : 0;
    int64_t t = e ? json_integer_value(json_object_get(e, "t")) : 0;
    if (e && now_ns - t < d * 1000000) {
        *wait_ms = d - (now_ns - t) / 1000000;
        if (*wait_ms < 1) *wait_ms = 1;
        return 1;
    }
    d = e ? (d * 2 > DS_BACKOFF_MAX_MS ? DS_BACKOFF_MAX_MS : d * 2) : DS_BACKOFF_INITIAL_MS;
    json_object_set_new(map, key,
                        json_pack("{s:I, s:I}", "d", (json_int_t)d, "t", (json_int_t)now_ns));
    *wait_ms = 0;
    return 0;
}

/* ==== the controller ==== */

typedef struct ds_ctl {
    ctrl_t *c;
    kc_informer_t *ds, *pods, *nodes, *revs;
    ctrl_exp_t *exp;    /* by DS key */
    pthread_mutex_t mu; /* guards backoff */
    /* "<ds uid>/<observedGeneration>/<node>" -> ds__backoff's entry */
    json_t *backoff;
} ds_ctl_t;

/* ---- event handlers: only enqueue (and count expectations) ---- */

/* The key of the DaemonSet controlling obj, or 0. */
static int ds_of(const json_t *obj, char *key, size_t n)
{
    const char *kind, *name;
    if (!ctrl_owner(obj, NULL, &kind, &name) || !kind || !name || strcmp(kind, "DaemonSet"))
        return 0;
    snprintf(key, n, "%s/%s", ctrl_meta_str(obj, "namespace"), name);
    return 1;
}

static void enqueue_all(ds_ctl_t *s)
{
    json_t **sets;
    size_t n;
    if (kc_informer_list(s->ds, NULL, NULL, &sets, &n)) return;
    for (size_t i = 0; i < n; i++)
        ctrl_enqueue_obj(s->c, sets[i]);
    kc_objs_free(sets, n);
}

/* Queue every DaemonSet in pod's namespace whose selector matches it. */
static void enqueue_matching(ds_ctl_t *s, const json_t *pod)
{
    json_t **sets;
    size_t n;
    if (kc_informer_list(s->ds, "namespace", ctrl_meta_str(pod, "namespace"), &sets, &n)) return;
    for (size_t i = 0; i < n; i++)
        if (ctrl_selector_matches(json_object_get(json_object_get(sets[i], "spec"), "selector"),
                                  ctrl_labels(pod)))
            ctrl_enqueue_obj(s->c, sets[i]);
    kc_objs_free(sets, n);
}

static void pod_added(void *arg, const json_t *pod)
{
    ds_ctl_t *s = arg;
    char key[600];
    if (ds_of(pod, key, sizeof key)) {
        if (json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp"))
            ctrl_exp_del_seen(s->exp, key, ctrl_meta_str(pod, "uid"));
        else
            ctrl_exp_add_seen(s->exp, key, 1);
        ctrl_enqueue(s->c, key);
    } else {
        enqueue_matching(s, pod);
    }
}

static void pod_updated(void *arg, const json_t *old, const json_t *pod)
{
    ds_ctl_t *s = arg;
    if (old == pod) return; /* a resync: the DaemonSets resync themselves */
    char key[600], oldkey[600];
    int has = ds_of(pod, key, sizeof key), had = ds_of(old, oldkey, sizeof oldkey);
    if (has && json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp") &&
        !json_object_get(json_object_get(old, "metadata"), "deletionTimestamp"))
        ctrl_exp_del_seen(s->exp, key, ctrl_meta_str(pod, "uid"));
    if (has) ctrl_enqueue(s->c, key);
    if (had && (!has || strcmp(key, oldkey))) ctrl_enqueue(s->c, oldkey);
    if (!has && !json_equal(ctrl_labels(old), ctrl_labels(pod))) enqueue_matching(s, pod);
}

static void pod_deleted(void *arg, const json_t *pod)
{
    ds_ctl_t *s = arg;
    char key[600];
    if (!ds_of(pod, key, sizeof key)) return;
    ctrl_exp_del_seen(s->exp, key, ctrl_meta_str(pod, "uid"));
    ctrl_enqueue(s->c, key);
}

static void ds_changed(void *arg, const json_t *obj)
{
    ctrl_enqueue_obj(((ds_ctl_t *)arg)->c, obj);
}

static void ds_updated(void *arg, const json_t *old, const json_t *obj)
{
    (void)old;
    ds_changed(arg, obj);
}

static void node_changed(void *arg, const json_t *node)
{
    (void)node;
    enqueue_all(arg);
}

static const char *ready_status(const json_t *node)
{
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(json_object_get(node, "status"), "conditions"), i, c) {
        if (!strcmp(str(c, "type"), "Ready")) return str(c, "status");
    }
    return "";
}

/* Only what decides where daemon pods run: not the heartbeats. */
static void node_updated(void *arg, const json_t *old, const json_t *node)
{
    if (old == node) return;
    const json_t *os = json_object_get(old, "spec"), *ns = json_object_get(node, "spec");
    if (json_equal(ctrl_labels(old), ctrl_labels(node)) &&
        json_equal(json_object_get(os, "taints"), json_object_get(ns, "taints")) &&
        json_is_true(json_object_get(os, "unschedulable")) ==
            json_is_true(json_object_get(ns, "unschedulable")) &&
        !strcmp(ready_status(old), ready_status(node)))
        return;
    enqueue_all(arg);
}

static void rev_changed(void *arg, const json_t *rev)
{
    char key[600];
    if (ds_of(rev, key, sizeof key)) ctrl_enqueue(((ds_ctl_t *)arg)->c, key);
}

static void rev_updated(void *arg, const json_t *old, const json_t *rev)
{
    if (old != rev) rev_changed(arg, rev);
}

static size_t orphan_index(const json_t *obj, char vals[][KC_INDEX_VALUE_MAX], size_t max)
{
    if (!max || ctrl_controller_uid(obj)) return 0;
    snprintf(vals[0], KC_INDEX_VALUE_MAX, "%s", ctrl_meta_str(obj, "namespace"));
    return 1;
}

static void ds_free(void *self)
{
    ds_ctl_t *s = self;
    ctrl_exp_free(s->exp);
    json_decref(s->backoff);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static int ds_init(ctrl_t *c, void **self)
{
    ds_ctl_t *s = calloc(1, sizeof *s);
    if (!s) return KP_ENOMEM;
    pthread_mutex_init(&s->mu, NULL);
    s->c = c;
    s->exp = ctrl_exp_new();
    s->backoff = json_object();
    s->ds = ctrl_informer(c, &kc_daemonsets);
    s->pods = ctrl_informer(c, &kc_pods);
    s->nodes = ctrl_informer(c, &kc_nodes);
    s->revs = ctrl_informer(c, &kc_controllerrevisions);
    if (!s->exp || !s->backoff || !s->ds || !s->pods || !s->nodes || !s->revs) {
        ds_free(s);
        return KP_ENOMEM;
    }
    kc_handlers_t dh = {
        .on_add = ds_changed, .on_update = ds_updated, .on_delete = ds_changed, .arg = s};
    kc_handlers_t ph = {
        .on_add = pod_added, .on_update = pod_updated, .on_delete = pod_deleted, .arg = s};
    kc_handlers_t nh = {
        .on_add = node_changed, .on_update = node_updated, .on_delete = node_changed, .arg = s};
    kc_handlers_t rh = {
        .on_add = rev_changed, .on_update = rev_updated, .on_delete = rev_changed, .arg = s};
    int rc = kc_informer_add_index(s->pods, ORPHANS, orphan_index);
    if (rc == KP_EEXIST) rc = 0; /* a shared informer: there from an earlier init */
    if (!rc) rc = kc_informer_add_handlers(s->ds, &dh);
    if (!rc) rc = kc_informer_add_handlers(s->pods, &ph);
    if (!rc) rc = kc_informer_add_handlers(s->nodes, &nh);
    if (!rc) rc = kc_informer_add_handlers(s->revs, &rh);
    if (rc) {
        kc_informer_remove_handlers(s->ds, s);
        kc_informer_remove_handlers(s->pods, s);
        kc_informer_remove_handlers(s->nodes, s);
        kc_informer_remove_handlers(s->revs, s);
        ds_free(s);
        return rc;
    }
    *self = s;
    return 0;
}

/* ---- revisions ---- */

static const char *rev_hash(const json_t *rev)
{
    return json_string_value(json_object_get(ctrl_labels(rev), DS_HASH_LABEL));
}

static int64_t collision_count(const json_t *ds)
{
    return json_integer_value(json_object_get(json_object_get(ds, "status"), "collisionCount"));
}

/* A new ControllerRevision of ds's current template, number `revision`
 * (a new reference; NULL: out of memory): name "<ds>-<hash>", labels the
 * template's and controller-revision-hash, the DaemonSet's annotations, a
 * controller ownerReference. */
static json_t *revision_new(const json_t *ds, const json_t *data, int64_t revision)
{
    char hash[CTRL_HASH_MAX];
    const json_t *tmpl = json_object_get(json_object_get(ds, "spec"), "template");
    if (ctrl_history_hash(tmpl, collision_count(ds), hash)) return NULL;
    json_t *rev = ctrl_history_new(ds, "apps/v1", "DaemonSet", data, revision, collision_count(ds));
    if (!rev) return NULL;
    json_t *meta = json_object_get(rev, "metadata");
    const json_t *tl = json_object_get(json_object_get(tmpl, "metadata"), "labels");
    json_t *labels = json_is_object(tl) ? json_deep_copy(tl) : json_object();
    const json_t *ann = json_object_get(json_object_get(ds, "metadata"), "annotations");
    if (!meta || !labels || json_object_set_new(labels, DS_HASH_LABEL, json_string(hash)) ||
        json_object_set_new(meta, "labels", labels) ||
        json_object_set_new(meta, "name", json_sprintf("%s-%s", ctrl_meta_str(ds, "name"), hash)) ||
        json_object_set_new(meta, "namespace", json_string(ctrl_meta_str(ds, "namespace"))) ||
        json_object_set_new(meta, "ownerReferences",
                            json_pack("[o]", ctrl_controller_ref(ds, "apps/v1", "DaemonSet"))) ||
        (json_is_object(ann) && json_object_set_new(meta, "annotations", json_deep_copy(ann)))) {
        json_decref(rev);
        return NULL;
    }
    return rev;
}

static int same_data(const json_t *rev, const json_t *data)
{
    return json_equal(json_object_get(rev, "data"), data);
}

/* Relabel the DaemonSet's pods of revision hash `from` to `to` (a
 * duplicate revision goes away). */
static int relabel_pods(ds_ctl_t *s, const json_t *ds, const char *from, const char *to)
{
    json_t **pods;
    size_t n;
    int rc = kc_informer_list(s->pods, "controller", ctrl_meta_str(ds, "uid"), &pods, &n);
    for (size_t i = 0; !rc && i < n; i++) {
        const char *h = json_string_value(json_object_get(ctrl_labels(pods[i]), DS_HASH_LABEL));
        if (!h || strcmp(h, from)) continue;
        json_t *patch = json_pack("{s:{s:{s:s}}}", "metadata", "labels", DS_HASH_LABEL, to);
        rc =
            kc_patch(ctrl_client(s->c), &kc_pods, ctrl_meta_str(pods[i], "namespace"),
                     ctrl_meta_str(pods[i], "name"), NULL, KC_PATCH_MERGE, patch, NULL, NULL, NULL);
        json_decref(patch);
        if (rc == KP_ENOTFOUND) rc = 0;
    }
    kc_objs_free(pods, n);
    return rc;
}

/* Kubernetes' constructHistory: the current revision (*cur, a new
 * reference) and the old ones (*old, references; kc_objs_free). */
static int construct_history(ds_ctl_t *s, const json_t *ds, json_t **cur, json_t ***old,
                             size_t *nold)
{
    kc_client_t *cl = ctrl_client(s->c);
    const char *ns = ctrl_meta_str(ds, "namespace");
    *cur = NULL;
    *old = NULL;
    *nold = 0;
    json_t **revs;
    size_t n;
    int rc = kc_informer_list(s->revs, "controller", ctrl_meta_str(ds, "uid"), &revs, &n);
    if (rc) return rc;
    json_t *data = ctrl_history_template_patch(ds);
    json_t **olds = calloc(n + 1, sizeof *olds), **curs = calloc(n + 1, sizeof *curs);
    size_t no = 0, nc = 0;
    if (!data || !olds || !curs) {
        rc = KP_ENOMEM;
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *rev = json_incref(revs[i]);
        if (!rev_hash(rev)) { /* as Kubernetes: the name stands for the hash */
            json_t *patch = json_pack("{s:{s:{s:s}}}", "metadata", "labels", DS_HASH_LABEL,
                                      ctrl_meta_str(rev, "name"));
            json_t *upd = NULL;
            rc = kc_patch(cl, &kc_controllerrevisions, ns, ctrl_meta_str(rev, "name"), NULL,
                          KC_PATCH_MERGE, patch, NULL, &upd, NULL);
            json_decref(patch);
            json_decref(rev);
            if (rc) goto done;
            rev = upd;
        }
        if (same_data(rev, data))
            curs[nc++] = rev;
        else
            olds[no++] = rev;
    }
    int64_t next = ctrl_history_max_revision((const json_t *const *)olds, no) + 1;
    json_t *keep = NULL;
    if (!nc) {
        json_t *rev = revision_new(ds, data, next);
        if (!rev) {
            rc = KP_ENOMEM;
            goto done;
        }
        rc = kc_create(cl, &kc_controllerrevisions, ns, rev, &keep, NULL);
        if (rc == KP_EEXIST) {
            /* The name is taken: ours (a cache behind), or another template's. */
            json_t *there = NULL;
            rc = kc_get(cl, &kc_controllerrevisions, ns, ctrl_meta_str(rev, "name"), &there);
            if (!rc && same_data(there, data)) {
                keep = there;
                there = NULL;
            } else if (!rc) {
                json_t *fresh = NULL;
                rc = kc_get(cl, &kc_daemonsets, ns, ctrl_meta_str(ds, "name"), &fresh);
                if (!rc && collision_count(fresh) != collision_count(ds)) {
                    rc = KP_ECONFLICT; /* stale: retry with the new count */
                } else if (!rc) {
                    json_t *patch = json_pack("{s:{s:I}}", "status", "collisionCount",
                                              (json_int_t)(collision_count(ds) + 1));
                    rc = ctrl_update_merged(cl, &kc_daemonsets, fresh, "status", patch, NULL);
                    json_decref(patch);
                    log_info("daemonset", "%s/%s: revision name collision, collisionCount %lld", ns,
                             ctrl_meta_str(ds, "name"), (long long)collision_count(ds) + 1);
                    if (!rc) rc = KP_EEXIST; /* retry: the new count gives a new name */
                }
                json_decref(fresh);
            }
            json_decref(there);
        }
        json_decref(rev);
        if (rc) goto done;
    } else {
        /* Several revisions of this template (Kubernetes' dedupCurHistories):
         * keep the newest, move pods of the others to it, delete them. */
        size_t k = 0;
        for (size_t i = 1; i < nc; i++)
            if (ctrl_history_revision(curs[i]) > ctrl_history_revision(curs[k])) k = i;
        keep = json_incref(curs[k]);
        for (size_t i = 0; i < nc; i++) {
            if (i == k) continue;
            const char *from = rev_hash(curs[i]), *to = rev_hash(keep);
            if (from && to && strcmp(from, to) && (rc = relabel_pods(s, ds, from, to))) goto done;
            rc = kc_delete(cl, &kc_controllerrevisions, ns, ctrl_meta_str(curs[i], "name"), NULL,
                           NULL);
            if (rc && rc != KP_ENOTFOUND) goto done;
            rc = 0;
        }
        if (ctrl_history_revision(keep) < next) {
            json_t *patch = json_pack("{s:I}", "revision", (json_int_t)next);
            json_t *upd = NULL;
            rc = kc_patch(cl, &kc_controllerrevisions, ns, ctrl_meta_str(keep, "name"), NULL,
                          KC_PATCH_MERGE, patch, NULL, &upd, NULL);
            json_decref(patch);
            if (rc) goto done;
            json_decref(keep);
            keep = upd;
        }
    }
    *cur = keep;
    keep = NULL;
    *old = olds;
    *nold = no;
    olds = NULL;
    no = 0;
done:
    if (rc) json_decref(keep);
    kc_objs_free(olds, no);
    kc_objs_free(curs, nc);
    kc_objs_free(revs, n);
    json_decref(data);
    return rc;
}

/* Delete old revisions beyond revisionHistoryLimit that no pod uses,
 * oldest first. */
static int cleanup_history(ds_ctl_t *s, const json_t *ds, json_t **old, size_t nold,
                           json_t *const *pods, size_t npods)
{
    const json_t *lim = json_object_get(json_object_get(ds, "spec"), "revisionHistoryLimit");
    long keep = json_is_integer(lim) ? (long)json_integer_value(lim) : 10;
    long kill = (long)nold - keep;
    if (kill <= 0) return 0;
    ctrl_history_sort((const json_t **)old, nold);
    for (size_t i = 0; kill > 0 && i < nold; i++) {
        const char *h = rev_hash(old[i]);
        int live = 0;
        for (size_t k = 0; h && !live && k < npods; k++) {
            const char *ph =
                json_string_value(json_object_get(ctrl_labels(pods[k]), DS_HASH_LABEL));
            live = ph && !strcmp(ph, h);
        }
        if (live) continue;
        int rc =
            kc_delete(ctrl_client(s->c), &kc_controllerrevisions, ctrl_meta_str(ds, "namespace"),
                      ctrl_meta_str(old[i], "name"), NULL, NULL);
        if (rc && rc != KP_ENOTFOUND) return rc;
        kill--;
    }
    return 0;
}

/* ---- pods ---- */

/* Adopt matching orphans, release owned pods that stopped matching (as
 * replicaset.c). *out gets every pod the DS controls afterwards (any state,
 * a reference each; kc_objs_free). */
static int claim_pods(ds_ctl_t *s, const json_t *ds, json_t ***out, size_t *nout)
{
    kc_client_t *cl = ctrl_client(s->c);
    const char *ns = ctrl_meta_str(ds, "namespace"), *uid = ctrl_meta_str(ds, "uid");
    const json_t *sel = json_object_get(json_object_get(ds, "spec"), "selector");
    json_t **owned, **orphans;
    size_t no, nr;
    int rc = kc_informer_list(s->pods, "controller", uid, &owned, &no);
    if (rc) return rc;
    if ((rc = kc_informer_list(s->pods, ORPHANS, ns, &orphans, &nr))) {
        kc_objs_free(owned, no);
        return rc;
    }
    json_t **keep = calloc(no + nr + 1, sizeof *keep);
    size_t nk = 0;
    if (!keep) rc = KP_ENOMEM;
    for (size_t i = 0; !rc && i < no; i++) {
        const json_t *pod = owned[i];
        if (ctrl_selector_matches(sel, ctrl_labels(pod)) || deleting(pod)) {
            keep[nk++] = json_incref(owned[i]);
            continue;
        }
        rc = ctrl_release(cl, &kc_pods, pod, uid); /* it stopped matching */
    }
    for (size_t i = 0; !rc && i < nr; i++) {
        const json_t *pod = orphans[i];
        if (!ctrl_pod_active(pod) || !ctrl_selector_matches(sel, ctrl_labels(pod))) continue;
        json_t *adopted;
        int prc = ctrl_adopt(cl, &kc_pods, pod, ds, "apps/v1", "DaemonSet", &adopted);
        if (!prc)
            keep[nk++] = adopted;
        else if (prc != KP_ENOTFOUND && prc != KP_ECONFLICT)
            rc = prc;
    }
    kc_objs_free(owned, no);
    kc_objs_free(orphans, nr);
    if (rc) {
        kc_objs_free(keep, nk);
        return rc;
    }
    *out = keep;
    *nout = nk;
    return 0;
}

typedef struct batch {
    ds_ctl_t *s;
    const json_t *ds;
    const char *key;
    const json_t *tmpl;           /* creates: the pod template */
    const char *const *nodes;     /* creates: one pod for each */
    const json_t *const *victims; /* deletes */
    const int *force;             /* deletes: grace 0 (NULL: none) */
} batch_t;

static int create_one(void *arg, size_t i)
{
    batch_t *b = arg;
    const char *node = b->nodes[i];
    json_t *pod =
        json_pack("{s:s, s:s, s:O, s:O}", "apiVersion", "v1", "kind", "Pod", "metadata",
                  json_object_get(b->tmpl, "metadata"), "spec", json_object_get(b->tmpl, "spec"));
    int rc = KP_ENOMEM;
    json_t *made = NULL;
    if (pod) {
        /* Deep copies: the spec's affinity is changed per node. */
        json_t *meta = json_deep_copy(json_object_get(pod, "metadata"));
        json_t *spec = json_deep_copy(json_object_get(pod, "spec"));
        if (meta && spec) {
            json_object_del(meta, "name");
            json_object_set_new(meta, "generateName",
                                json_sprintf("%s-", ctrl_meta_str(b->ds, "name")));
            json_object_set_new(meta, "namespace", json_string(ctrl_meta_str(b->ds, "namespace")));
            json_object_set_new(
                meta, "ownerReferences",
                json_pack("[o]", ctrl_controller_ref(b->ds, "apps/v1", "DaemonSet")));
            rc = ds__pin(spec, node);
        }
        json_object_set_new(pod, "metadata", meta ? meta : json_object());
        json_object_set_new(pod, "spec", spec ? spec : json_object());
        if (!rc)
            rc = kc_create(ctrl_client(b->s->c), &kc_pods, ctrl_meta_str(b->ds, "namespace"), pod,
                           &made, NULL);
    }
    json_decref(pod);
    if (rc) {
        kc_event(ctrl_recorder(b->s->c), b->ds, "Warning", "FailedCreate", "Error creating: %s",
                 err_str(rc));
        ctrl_exp_add_seen(b->s->exp, b->key, 1); /* will never be seen */
    } else {
        kc_event(ctrl_recorder(b->s->c), b->ds, "Normal", "SuccessfulCreate", "Created pod: %s",
                 ctrl_meta_str(made, "name"));
    }
    json_decref(made);
    return rc;
}

static int delete_one(void *arg, size_t i)
{
    batch_t *b = arg;
    const json_t *pod = b->victims[i];
    json_t *opts = json_pack("{s:{s:s}}", "preconditions", "uid", ctrl_meta_str(pod, "uid"));
    if (b->force && b->force[i]) json_object_set_new(opts, "gracePeriodSeconds", json_integer(0));
    int rc = kc_delete(ctrl_client(b->s->c), &kc_pods, ctrl_meta_str(pod, "namespace"),
                       ctrl_meta_str(pod, "name"), opts, NULL);
    json_decref(opts);
    if (rc) ctrl_exp_del_seen(b->s->exp, b->key, ctrl_meta_str(pod, "uid"));
    if (rc == KP_ENOTFOUND) rc = 0;
    if (rc)
        kc_event(ctrl_recorder(b->s->c), b->ds, "Warning", "FailedDelete", "Error deleting: %s",
                 err_str(rc));
    else
        kc_event(ctrl_recorder(b->s->c), b->ds, "Normal", "SuccessfulDelete", "Deleted pod: %s",
                 ctrl_meta_str(pod, "name"));
    return rc;
}

/* Kubernetes' syncNodes: raise the expectations, delete `del` (force[i]:
 * grace 0), then create one pod per node in slow-start batches (1, 2, 4,
 * ...), each capped at BURST. */
static int sync_nodes(ds_ctl_t *s, const json_t *ds, const char *key, const json_t *tmpl,
                      const char *const *nodes, size_t ncreate, const json_t *const *del,
                      const int *force, size_t ndel)
{
    if (ncreate > BURST) ncreate = BURST;
    if (ndel > BURST) ndel = BURST;
    if (!ncreate && !ndel) return 0;
    json_t *uids = json_object();
    if (!uids) return KP_ENOMEM;
    for (size_t i = 0; i < ndel; i++)
        json_object_set_new(uids, ctrl_meta_str(del[i], "uid"), json_true());
    ctrl_exp_set(s->exp, key, (int)ncreate, uids);
    batch_t b = {.s = s, .ds = ds, .key = key, .tmpl = tmpl, .victims = del, .force = force};
    int rc = 0;
    if (ndel && ctrl_parallel(ndel, PARALLEL, delete_one, &b, NULL) < ndel) rc = KP_EUNAVAILABLE;
    size_t batch = 1, done = 0;
    while (done < ncreate) {
        size_t m = ncreate - done < batch ? ncreate - done : batch;
        b.nodes = nodes + done;
        size_t ok = ctrl_parallel(m, PARALLEL, create_one, &b, NULL);
        done += m;
        if (ok < m) {
            rc = KP_EUNAVAILABLE;
            break;
        }
        batch *= 2;
    }
    if (done < ncreate) ctrl_exp_add_seen(s->exp, key, (int)(ncreate - done)); /* not sent */
    return rc;
}

/* manage(): creates and deletes toward one pod per node that should run
 * one. Failed pods are deleted unless their node is in backoff. *acted: it
 * issued calls (the view is stale then). */
static int manage(ds_ctl_t *s, const json_t *ds, const char *key, const ds_in_t *in,
                  const ds_view_t *v, int *acted)
{
    *acted = 0;
    ds_plan_t p;
    int rc = ds__manage(in, v, &p);
    if (rc) return rc;
    size_t cap = p.ndel + p.nfailed + p.norphans + 1;
    const json_t **del = calloc(cap, sizeof *del);
    int *force = calloc(cap, sizeof *force);
    if (!del || !force) {
        rc = KP_ENOMEM;
        goto out;
    }
    size_t n = 0;
    for (size_t i = 0; i < p.ndel; i++)
        del[n++] = p.del[i];
    for (size_t i = 0; i < p.norphans; i++) {
        force[n] = 1;
        del[n++] = p.orphans[i];
    }
    const json_t *status = json_object_get(ds, "status");
    for (size_t i = 0; i < p.nfailed; i++) {
        char bkey[1024];
        snprintf(bkey, sizeof bkey, "%s/%lld/%s", ctrl_meta_str(ds, "uid"),
                 (long long)json_integer_value(json_object_get(status, "observedGeneration")),
                 p.failed_node[i]);
        int64_t wait_ms;
        pthread_mutex_lock(&s->mu);
        int in_backoff = ds__backoff(s->backoff, bkey, clock_mono_ns(), &wait_ms);
        pthread_mutex_unlock(&s->mu);
        if (in_backoff) {
            ctrl_enqueue_after(s->c, key, (int)wait_ms);
            continue;
        }
        const json_t *pod = p.failed[i];
        kc_event(ctrl_recorder(s->c), ds, "Warning", "FailedDaemonPod",
                 "Found failed daemon pod %s/%s on node %s, will try to kill it",
                 ctrl_meta_str(pod, "namespace"), ctrl_meta_str(pod, "name"), p.failed_node[i]);
        del[n++] = pod;
    }
    *acted = p.ncreate || n;
    rc = sync_nodes(s, ds, key, in->tmpl, p.create, p.ncreate, del, force, n);
out:
    free(del);
    free(force);
    ds__plan_free(&p);
    return rc;
}

/* ---- status ---- */

static int update_status(ds_ctl_t *s, const json_t *ds, const ds_counts_t *k, int observed)
{
    const json_t *old = json_object_get(ds, "status");
    json_t *st =
        json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:i}", "desiredNumberScheduled", k->desired,
                  "currentNumberScheduled", k->current, "numberMisscheduled", k->misscheduled,
                  "numberReady", k->ready, "updatedNumberScheduled", k->updated, "numberAvailable",
                  k->available, "numberUnavailable", k->unavailable);
    if (!st) return KP_ENOMEM;
    if (observed)
        json_object_set_new(st, "observedGeneration",
                            json_integer(json_integer_value(
                                json_object_get(json_object_get(ds, "metadata"), "generation"))));
    /* Kubernetes omits these when 0 (omitempty): null removes them. */
    static const char *const omit[] = {"updatedNumberScheduled", "numberAvailable",
                                       "numberUnavailable", "observedGeneration", NULL};
    for (const char *const *o = omit; *o; o++) {
        const json_t *x = json_object_get(st, *o);
        if (x && json_integer_value(x) == 0) json_object_set_new(st, *o, json_null());
    }
    int same = 1;
    const char *f;
    json_t *v;
    json_object_foreach(st, f, v) {
        const json_t *o = json_object_get(old, f);
        if (json_is_null(v) ? o != NULL : !(o && json_equal(o, v))) same = 0;
    }
    int rc = 0;
    if (!same) {
        json_t *patch = json_pack("{s:O}", "status", st);
        rc = ctrl_update_merged(ctrl_client(s->c), &kc_daemonsets, ds, "status", patch, NULL);
        json_decref(patch);
        if (rc == KP_ENOTFOUND) rc = 0;
    }
    json_decref(st);
    return rc;
}

/* ---- sync ---- */

static int ds_sync(ctrl_t *c, void *self, const char *key)
{
    ds_ctl_t *s = self;
    (void)c;
    json_t *ds = kc_informer_get(s->ds, key);
    if (!ds) {
        ctrl_exp_forget(s->exp, key);
        return 0;
    }
    json_t *cur = NULL, **old = NULL, **pods = NULL, **nodes = NULL, *tmpl = NULL;
    size_t nold = 0, npods = 0, nnodes = 0;
    ds_view_t view = {0};
    int rc = 0;
    const json_t *spec = json_object_get(ds, "spec");
    if (deleting(ds)) goto out;
    const json_t *sel = json_object_get(spec, "selector");
    if (json_is_object(sel) && !json_object_size(json_object_get(sel, "matchLabels")) &&
        !json_array_size(json_object_get(sel, "matchExpressions"))) {
        kc_event(ctrl_recorder(s->c), ds, "Warning", "SelectingAll",
                 "This daemon set is selecting all pods. A non-empty selector is required.");
        goto out;
    }
    int met = ctrl_exp_met(s->exp, key); /* before the list: see replicaset.c */
    if ((rc = kc_informer_list(s->nodes, NULL, NULL, &nodes, &nnodes))) goto out;
    if ((rc = claim_pods(s, ds, &pods, &npods))) goto out;
    if ((rc = construct_history(s, ds, &cur, &old, &nold))) goto out;
    const char *hash = rev_hash(cur);
    char genbuf[32];
    const char *gen = ds__generation(ds, genbuf, sizeof genbuf);
    if (!(tmpl = ds__pod_template(ds, hash, gen))) {
        rc = KP_ENOMEM;
        goto out;
    }
    ds_in_t in = {.tmpl = tmpl,
                  .nodes = nodes,
                  .nnodes = nnodes,
                  .pods = pods,
                  .npods = npods,
                  .hash = hash,
                  .gen = gen,
                  .min_ready_s = (int)json_integer_value(json_object_get(spec, "minReadySeconds")),
                  .now = time(NULL)};
    if ((rc = ds__view(&in, &view))) goto out;
    int observed = 0;
    if (met) {
        observed = 1;
        int acted;
        rc = manage(s, ds, key, &in, &view, &acted);
        /* Kubernetes rolls only when the expectations are met after
         * manage(); since this view predates manage's calls, also only
         * when manage did nothing (the events of its calls sync again). A
         * stale view could miss a pod just created and delete one more. */
        const char *type = str(json_object_get(spec, "updateStrategy"), "type");
        if (!rc && !acted && ctrl_exp_met(s->exp, key) && (!*type || !strcmp(type, "RollingUpdate"))) {
            ds_counts_t k;
            ds__counts(&in, &view, &k);
            int32_t maxu;
            const json_t **del = NULL;
            size_t ndel = 0;
            if (ds__max_unavailable(ds, k.desired, &maxu))
                /* The API should not have taken it; nothing to retry. */
                log_warn("daemonset", "%s: bad maxUnavailable: no rolling update", key);
            else if (!(rc = ds__rolling(&in, &view, maxu, &del, &ndel)) && ndel)
                rc = sync_nodes(s, ds, key, tmpl, NULL, 0, del, NULL, ndel);
            free(del);
        }
        if (!rc) rc = cleanup_history(s, ds, old, nold, pods, npods);
    }
    ds_counts_t k;
    ds__counts(&in, &view, &k);
    int src = update_status(s, ds, &k, observed);
    if (!rc) rc = src;
    if (k.wait_s) ctrl_enqueue_after(s->c, key, k.wait_s * 1000 + 100);
out:
    ds__view_free(&view);
    json_decref(tmpl);
    json_decref(cur);
    kc_objs_free(old, nold);
    kc_objs_free(pods, npods);
    kc_objs_free(nodes, nnodes);
    json_decref(ds);
    return rc;
}

const ctrl_ops_t ctrl_daemonset = {
    .name = "daemonset",
    .service_account = "daemon-set-controller",
    .init = ds_init,
    .sync = ds_sync,
    .free = ds_free,
};
