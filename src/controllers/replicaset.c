/*
 * replicaset.c -- the ReplicaSet controller.
 *
 * INVARIANT: every ReplicaSet controls exactly spec.replicas active pods
 * that match its selector, and its status says how many it has, how many
 * are ready and how many available.
 *
 * OWNS: the pods it creates (generateName "<rs>-", a controller
 * ownerReference), the ownerReferences it adds to matching orphans
 * (adoption) and removes from owned pods that stopped matching (release),
 * and the ReplicaSet's /status. It deletes only pods it controls.
 *
 * EXPECTATIONS (expectations.h). The caches lag the API, so before acting
 * a sync records what it expects to see (n creates, a set of pod uids to
 * go); informer events count them off; until they all have been seen (or 5
 * minutes passed), the controller makes no new create/delete decision for
 * that ReplicaSet -- status only.
 *   1. A sync acts only when the RS's expectations are met or expired.
 *   2. Expectations are raised before the calls they stand for, and lowered
 *      at once for calls that failed or were not made.
 *   3. A pod is counted as gone when it gets a deletionTimestamp or is
 *      deleted, once (deletions are tracked by uid).
 *
 * SUMMARIES (replicaset_int.h). The pod handlers also keep, per
 * ReplicaSet, the counts a sync reads (active, ready, fully labeled, to
 * release). A sync with nothing to adopt, release or delete, and no
 * minReadySeconds, works from those counts: its cost does not grow with the
 * ReplicaSet's pods (at 100,000 pods the pass over them took one core). The
 * others pass over the pods, as before.
 *
 * Creates and deletes go out in slow-start batches (1, 2, 4, ...), at most
 * BURST per sync, each batch in parallel; the first failed batch stops the
 * sync (the error requeues it with backoff).
 *
 * REPLICATIONCONTROLLERS. The same controller serves core/v1
 * ReplicationControllers through an adapter (rs_kind_t), as Kubernetes'
 * pkg/controller/replication wraps its ReplicaSet controller: an RC's
 * spec.selector is a plain label map, read as matchLabels (and, when empty,
 * the template's labels, as Kubernetes' defaulting sets it); its pods carry
 * a controller reference of kind ReplicationController; status, conditions,
 * adoption, release and expectations are the ReplicaSet's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controllers/controller.h"
#include "controllers/ctrl_util.h"
#include "controllers/expectations.h"
#include "controllers/replicaset_int.h"
#include "lib/err.h"
#include "lib/log.h"

#define BURST               500 /* creates or deletes per sync */
#define PARALLEL            64                   /* API calls in flight per batch */
#define ORPHANS             "replicaset-orphans" /* pods index: namespace of pods without a controller */

/* What differs between the kinds this controller serves. */
typedef struct rs_kind {
    const kc_resource_t *res;
    const char *api_version, *kind;
    int map_selector; /* spec.selector is a label map (ReplicationController) */
} rs_kind_t;

static const rs_kind_t kind_rs = {&kc_replicasets, "apps/v1", "ReplicaSet", 0};
static const rs_kind_t kind_rc = {&kc_replicationcontrollers, "v1", "ReplicationController", 1};

typedef struct rs_ctl {
    ctrl_t *c;
    const rs_kind_t *k;
    kc_informer_t *rs, *pods;
    ctrl_exp_t *exp;  /* by RS key */
    rs__sums_t *sums; /* by RS key */
} rs_ctl_t;

/* ---- event handlers: only enqueue (and count expectations and summaries) ---- */

static void owner_key(const json_t *pod, const char *owner, char *key, size_t n)
{
    snprintf(key, n, "%s/%s", ctrl_meta_str(pod, "namespace"), owner);
}

/* The selector of rs as a metav1.LabelSelector (a new reference; NULL: none,
 * which selects nothing). A ReplicationController's label map becomes
 * matchLabels, its template's labels when empty. */
json_t *rs__selector(const json_t *rs, int map_selector)
{
    const json_t *spec = json_object_get(rs, "spec");
    const json_t *sel = json_object_get(spec, "selector");
    if (!map_selector) return sel ? json_incref((json_t *)sel) : NULL;
    if (!json_is_object(sel) || !json_object_size(sel))
        sel = json_object_get(json_object_get(json_object_get(spec, "template"), "metadata"),
                              "labels");
    if (!json_is_object(sel) || !json_object_size(sel)) return NULL;
    return json_pack("{s:O}", "matchLabels", sel);
}

static int selects(const rs_ctl_t *s, const json_t *rs, const json_t *pod)
{
    json_t *sel = rs__selector(rs, s->k->map_selector);
    int yes = sel && ctrl_selector_matches(sel, ctrl_labels(pod));
    json_decref(sel);
    return yes;
}

/* The key of the ReplicaSet controlling pod, or 0. */
static int rs_of(const rs_ctl_t *s, const json_t *pod, char *key, size_t n)
{
    const char *kind, *name;
    if (!ctrl_owner(pod, NULL, &kind, &name) || !kind || !name || strcmp(kind, s->k->kind))
        return 0;
    owner_key(pod, name, key, n);
    return 1;
}

/* Queue every ReplicaSet in pod's namespace whose selector matches it (an
 * orphan someone may adopt). */
static void enqueue_matching(rs_ctl_t *s, const json_t *pod)
{
    json_t **sets;
    size_t n;
    if (kc_informer_list(s->rs, "namespace", ctrl_meta_str(pod, "namespace"), &sets, &n)) return;
    for (size_t i = 0; i < n; i++)
        if (selects(s, sets[i], pod)) ctrl_enqueue_obj(s->c, sets[i]);
    kc_objs_free(sets, n);
}

static void pod_added(void *arg, const json_t *pod)
{
    rs_ctl_t *s = arg;
    char key[600];
    rs__sums_event(s->sums, NULL, pod); /* before the expectations count it */
    if (rs_of(s, pod, key, sizeof key)) {
        if (json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp"))
            ctrl_exp_del_seen(s->exp, key, ctrl_meta_str(pod, "uid"));
        else
            ctrl_exp_add_seen(s->exp, key, 1);
        ctrl_enqueue(s->c, key);
    } else {
        enqueue_matching(s, pod);
    }
}

static int same(const json_t *a, const json_t *b, const char *key)
{
    const json_t *x = json_object_get(a, key), *y = json_object_get(b, key);
    return x == y || (x && y && json_equal(x, y));
}

/* Whether a sync could decide differently after old became pod: a sync
 * reads labels, owners, deletion, phase and the Ready condition (status,
 * and since when for minReadySeconds). A pod bound to a node, or
 * ContainerCreating reported, changes none of them; skipping those saves
 * the ReplicaSet a pass over all its pods per pod update. */
static int rs_relevant(const json_t *old, const json_t *pod)
{
    const json_t *om = json_object_get(old, "metadata"), *pm = json_object_get(pod, "metadata");
    if (!same(om, pm, "labels") || !same(om, pm, "ownerReferences") ||
        !same(om, pm, "deletionTimestamp") ||
        !same(json_object_get(old, "status"), json_object_get(pod, "status"), "phase"))
        return 1;
    const json_t *oc = ctrl_pod_ready_condition(old), *pc = ctrl_pod_ready_condition(pod);
    return !(oc == pc || (oc && pc && same(oc, pc, "status") && same(oc, pc, "lastTransitionTime")));
}

static void pod_updated(void *arg, const json_t *old, const json_t *pod)
{
    rs_ctl_t *s = arg;
    if (old == pod) return; /* a resync: the ReplicaSets resync themselves */
    if (!rs_relevant(old, pod)) return;
    rs__sums_event(s->sums, old, pod);
    char key[600], oldkey[600];
    int has = rs_of(s, pod, key, sizeof key), had = rs_of(s, old, oldkey, sizeof oldkey);
    const json_t *meta = json_object_get(pod, "metadata");
    if (has && json_object_get(meta, "deletionTimestamp") &&
        !json_object_get(json_object_get(old, "metadata"), "deletionTimestamp"))
        ctrl_exp_del_seen(s->exp, key, ctrl_meta_str(pod, "uid"));
    if (has) ctrl_enqueue(s->c, key);
    if (had && (!has || strcmp(key, oldkey))) ctrl_enqueue(s->c, oldkey);
    if (!has && !json_equal(ctrl_labels(old), ctrl_labels(pod))) enqueue_matching(s, pod);
}

static void pod_deleted(void *arg, const json_t *pod)
{
    rs_ctl_t *s = arg;
    char key[600];
    rs__sums_event(s->sums, pod, NULL);
    if (!rs_of(s, pod, key, sizeof key)) return;
    ctrl_exp_del_seen(s->exp, key, ctrl_meta_str(pod, "uid"));
    ctrl_enqueue(s->c, key);
}

static void rs_changed(void *arg, const json_t *obj)
{
    ctrl_enqueue_obj(((rs_ctl_t *)arg)->c, obj);
}

static void rs_updated(void *arg, const json_t *old, const json_t *obj)
{
    (void)old;
    rs_changed(arg, obj);
}

static size_t orphan_index(const json_t *obj, char vals[][KC_INDEX_VALUE_MAX], size_t max)
{
    if (!max || ctrl_controller_uid(obj)) return 0;
    snprintf(vals[0], KC_INDEX_VALUE_MAX, "%s", ctrl_meta_str(obj, "namespace"));
    return 1;
}

static int init_kind(ctrl_t *c, const rs_kind_t *k, void **self)
{
    rs_ctl_t *s = calloc(1, sizeof *s);
    if (!s || !(s->exp = ctrl_exp_new()) || !(s->sums = rs__sums_new(k->kind))) {
        if (s) ctrl_exp_free(s->exp);
        free(s);
        return KP_ENOMEM;
    }
    s->c = c;
    s->k = k;
    s->rs = ctrl_informer(c, k->res);
    s->pods = ctrl_informer(c, &kc_pods);
    if (!s->rs || !s->pods) {
        ctrl_exp_free(s->exp);
        rs__sums_free(s->sums);
        free(s);
        return KP_ENOMEM;
    }
    kc_handlers_t rh = {
        .on_add = rs_changed, .on_update = rs_updated, .on_delete = rs_changed, .arg = s};
    kc_handlers_t ph = {
        .on_add = pod_added, .on_update = pod_updated, .on_delete = pod_deleted, .arg = s};
    int rc = kc_informer_add_handlers(s->rs, &rh);
    if (!rc) rc = kc_informer_add_handlers(s->pods, &ph);
    if (!rc || rc == KP_EEXIST) rc = kc_informer_add_index(s->pods, ORPHANS, orphan_index);
    if (rc == KP_EEXIST) rc = 0; /* a shared informer: there from an earlier init */
    if (rc) {
        kc_informer_remove_handlers(s->rs, s);
        kc_informer_remove_handlers(s->pods, s);
        ctrl_exp_free(s->exp);
        rs__sums_free(s->sums);
        free(s);
        return rc;
    }
    *self = s;
    return 0;
}

static int rs_init(ctrl_t *c, void **self)
{
    return init_kind(c, &kind_rs, self);
}

static int rc_init(ctrl_t *c, void **self)
{
    return init_kind(c, &kind_rc, self);
}

static void rs_free(void *self)
{
    rs_ctl_t *s = self;
    ctrl_exp_free(s->exp);
    rs__sums_free(s->sums);
    free(s);
}

/* ---- sync ---- */

typedef struct batch {
    rs_ctl_t *s;
    const json_t *rs;
    const char *key;
    json_t *pod;      /* the pod to create (creates) */
    json_t **victims; /* pods to delete (deletes) */
} batch_t;

static int create_one(void *arg, size_t i)
{
    (void)i;
    batch_t *b = arg;
    json_t *made = NULL;
    const char *ns = ctrl_meta_str(b->rs, "namespace");
    int rc = kc_create(ctrl_client(b->s->c), &kc_pods, ns, b->pod, &made, NULL);
    if (rc) {
        kc_event(ctrl_recorder(b->s->c), b->rs, "Warning", "FailedCreate", "Error creating: %s",
                 err_str(rc));
        ctrl_exp_add_seen(b->s->exp, b->key, 1); /* will never be seen */
    } else {
        kc_event(ctrl_recorder(b->s->c), b->rs, "Normal", "SuccessfulCreate", "Created pod: %s",
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
    int rc = kc_delete(ctrl_client(b->s->c), &kc_pods, ctrl_meta_str(pod, "namespace"),
                       ctrl_meta_str(pod, "name"), opts, NULL);
    json_decref(opts);
    if (rc) /* gone already (its deletion may have been seen before we expected it) or failed */
        ctrl_exp_del_seen(b->s->exp, b->key, ctrl_meta_str(pod, "uid"));
    if (rc == KP_ENOTFOUND) rc = 0;
    if (rc) {
        kc_event(ctrl_recorder(b->s->c), b->rs, "Warning", "FailedDelete", "Error deleting: %s",
                 err_str(rc));
    } else {
        kc_event(ctrl_recorder(b->s->c), b->rs, "Normal", "SuccessfulDelete", "Deleted pod: %s",
                 ctrl_meta_str(pod, "name"));
    }
    return rc;
}

/* The pod a ReplicaSet's template makes (a new reference). */
static json_t *pod_from_template(const rs_kind_t *k, const json_t *rs)
{
    const json_t *tmpl = json_object_get(json_object_get(rs, "spec"), "template");
    const json_t *tmeta = json_object_get(tmpl, "metadata");
    json_t *meta = json_pack("{s:s}", "generateName", "");
    json_object_set_new(meta, "generateName", json_sprintf("%s-", ctrl_meta_str(rs, "name")));
    static const char *const copy[] = {"labels", "annotations", "finalizers", NULL};
    for (const char *const *k = copy; *k; k++) {
        json_t *v = json_object_get(tmeta, *k);
        if (v) json_object_set_new(meta, *k, json_deep_copy(v));
    }
    json_object_set_new(meta, "ownerReferences",
                        json_pack("[o]", ctrl_controller_ref(rs, k->api_version, k->kind)));
    json_t *spec = json_deep_copy(json_object_get(tmpl, "spec"));
    return json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", "v1", "kind", "Pod", "metadata", meta,
                     "spec", spec ? spec : json_object());
}

/* Deletion order (Kubernetes' ActivePodsWithRanks, simplified): unassigned,
 * then Pending < Unknown < Running, not ready, lower deletion cost, more
 * recently ready, more restarts, newer. */
static int phase_rank(const json_t *pod)
{
    const char *p = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    if (!p || !strcmp(p, "Pending")) return 0;
    if (!strcmp(p, "Unknown")) return 1;
    return 2;
}

static long restarts(const json_t *pod)
{
    long n = 0;
    size_t i;
    json_t *cs;
    json_array_foreach(json_object_get(json_object_get(pod, "status"), "containerStatuses"), i, cs)
        n += (long)json_integer_value(json_object_get(cs, "restartCount"));
    return n;
}

static long deletion_cost(const json_t *pod)
{
    const char *v = json_string_value(
        json_object_get(json_object_get(json_object_get(pod, "metadata"), "annotations"),
                        "controller.kubernetes.io/pod-deletion-cost"));
    return v ? strtol(v, NULL, 10) : 0;
}

static int64_t ready_since(const json_t *pod)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(pod, "status"), "conditions"), i, c) {
        const char *t = json_string_value(json_object_get(c, "type"));
        if (t && !strcmp(t, "Ready"))
            return ctrl_time(json_string_value(json_object_get(c, "lastTransitionTime")));
    }
    return -1;
}

static int rank_cmp(const void *pa, const void *pb)
{
    const json_t *a = *(json_t *const *)pa, *b = *(json_t *const *)pb;
    const char *na = json_string_value(json_object_get(json_object_get(a, "spec"), "nodeName"));
    const char *nb = json_string_value(json_object_get(json_object_get(b, "spec"), "nodeName"));
    int ua = !na || !*na, ub = !nb || !*nb;
    if (ua != ub) return ua ? -1 : 1;
    int pra = phase_rank(a), prb = phase_rank(b);
    if (pra != prb) return pra - prb;
    int ra = ctrl_pod_ready(a), rb = ctrl_pod_ready(b);
    if (ra != rb) return ra - rb;
    long ca = deletion_cost(a), cb = deletion_cost(b);
    if (ca != cb) return ca < cb ? -1 : 1;
    if (ra && rb) {
        int64_t ta = ready_since(a), tb = ready_since(b);
        if (ta != tb) return ta > tb ? -1 : 1;
    }
    long xa = restarts(a), xb = restarts(b);
    if (xa != xb) return xa > xb ? -1 : 1;
    int64_t ka = ctrl_time(ctrl_meta_str(a, "creationTimestamp"));
    int64_t kb = ctrl_time(ctrl_meta_str(b, "creationTimestamp"));
    if (ka != kb) return ka > kb ? -1 : 1;
    return strcmp(ctrl_meta_str(a, "name"), ctrl_meta_str(b, "name"));
}

/* Adopt matching orphans, release owned pods that stopped matching. *out
 * gets every pod the RS controls afterwards (a reference each, active or
 * not; free with kc_objs_free) and *nout their number. */
static int claim_pods(rs_ctl_t *s, const json_t *rs, json_t ***out, size_t *nout)
{
    kc_client_t *cl = ctrl_client(s->c);
    const char *ns = ctrl_meta_str(rs, "namespace"), *uid = ctrl_meta_str(rs, "uid");
    json_t *sel = rs__selector(rs, s->k->map_selector);
    json_t **owned, **orphans;
    size_t no, nr;
    int rc = kc_informer_list(s->pods, "controller", uid, &owned, &no);
    if (rc) {
        json_decref(sel);
        return rc;
    }
    if ((rc = kc_informer_list(s->pods, ORPHANS, ns, &orphans, &nr))) {
        kc_objs_free(owned, no);
        json_decref(sel);
        return rc;
    }
    json_t **keep = calloc(no + nr + 1, sizeof *keep);
    size_t nk = 0;
    if (!keep) rc = KP_ENOMEM;
    for (size_t i = 0; !rc && i < no; i++) {
        const json_t *pod = owned[i];
        if (ctrl_selector_matches(sel, ctrl_labels(pod)) ||
            json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp")) {
            keep[nk++] = json_incref(owned[i]);
            continue;
        }
        rc = ctrl_release(cl, &kc_pods, pod, uid); /* it stopped matching */
    }
    for (size_t i = 0; !rc && i < nr; i++) {
        const json_t *pod = orphans[i];
        if (!ctrl_pod_active(pod) || !ctrl_selector_matches(sel, ctrl_labels(pod))) continue;
        json_t *adopted;
        int prc = ctrl_adopt(cl, &kc_pods, pod, rs, s->k->api_version, s->k->kind, &adopted);
        if (!prc)
            keep[nk++] = adopted;
        else if (prc != KP_ENOTFOUND && prc != KP_ECONFLICT)
            rc = prc;
    }
    kc_objs_free(owned, no);
    kc_objs_free(orphans, nr);
    json_decref(sel);
    if (rc) {
        kc_objs_free(keep, nk);
        return rc;
    }
    *out = keep;
    *nout = nk;
    return 0;
}

static long want_replicas(const json_t *rs)
{
    const json_t *r = json_object_get(json_object_get(rs, "spec"), "replicas");
    return r ? (long)json_integer_value(r) : 1;
}

/* Create or delete pods toward spec.replicas. active holds the n active
 * pods, ranked here for deletion; it may be NULL when n is not above
 * spec.replicas. */
static int manage(rs_ctl_t *s, const json_t *rs, const char *key, json_t **active, size_t n)
{
    long want = want_replicas(rs);
    long diff = (long)n - (long)want;
    if (!diff) return 0;
    batch_t b = {.s = s, .rs = rs, .key = key};
    if (diff < 0) {
        size_t todo = (size_t)(-diff) > BURST ? BURST : (size_t)(-diff);
        ctrl_exp_set(s->exp, key, (int)todo, NULL);
        b.pod = pod_from_template(s->k, rs);
        if (!b.pod) return KP_ENOMEM;
        size_t batch = 1, done = 0;
        int rc = 0;
        while (done < todo) {
            size_t m = todo - done < batch ? todo - done : batch;
            size_t ok = ctrl_parallel(m, PARALLEL, create_one, &b, NULL);
            done += m;
            if (ok < m) {
                rc = KP_EUNAVAILABLE;
                break;
            }
            batch *= 2;
        }
        if (done < todo) ctrl_exp_add_seen(s->exp, key, (int)(todo - done)); /* not sent */
        json_decref(b.pod);
        return rc;
    }
    size_t todo = (size_t)diff > BURST ? BURST : (size_t)diff;
    qsort(active, n, sizeof *active, rank_cmp);
    json_t *uids = json_object();
    for (size_t i = 0; i < todo; i++)
        json_object_set_new(uids, ctrl_meta_str(active[i], "uid"), json_true());
    ctrl_exp_set(s->exp, key, 0, uids);
    b.victims = active;
    size_t ok = ctrl_parallel(todo, PARALLEL, delete_one, &b, NULL);
    return ok < todo ? KP_EUNAVAILABLE : 0;
}

static const json_t *template_labels(const json_t *rs)
{
    const json_t *tmpl = json_object_get(json_object_get(rs, "spec"), "template");
    return json_object_get(json_object_get(tmpl, "metadata"), "labels");
}

static int min_ready_seconds(const json_t *rs)
{
    return (int)json_integer_value(json_object_get(json_object_get(rs, "spec"), "minReadySeconds"));
}

/* Count the n active pods for status: *c (release left 0), *avail the
 * available ones; *requeue_s gets the seconds until a ready pod becomes
 * available (0: none waiting). */
static void count_active(const json_t *rs, json_t **active, size_t n, rs__counts_t *c, long *avail,
                         int *requeue_s)
{
    const json_t *tlabels = template_labels(rs);
    int min_ready = min_ready_seconds(rs);
    int64_t now = time(NULL);
    *c = (rs__counts_t){.active = (long)n};
    *avail = 0;
    *requeue_s = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *labels = ctrl_labels(active[i]);
        int all = 1;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)tlabels, k, v) {
            if (!json_equal(json_object_get(labels, k), v)) all = 0;
        }
        c->full += all;
        int is_ready = ctrl_pod_ready(active[i]), wait = 0;
        c->ready += is_ready;
        if (is_ready && (min_ready <= 0 || ctrl_pod_available(active[i], min_ready, now, &wait)))
            (*avail)++;
        else if (wait && (!*requeue_s || wait < *requeue_s))
            *requeue_s = wait;
    }
}

/* Write status (counts c, avail available) when it changed. */
static int update_status(rs_ctl_t *s, const json_t *rs, const rs__counts_t *c, long avail,
                         int failed)
{
    const json_t *old = json_object_get(rs, "status");
    json_t *st = json_pack(
        "{s:I, s:I, s:I, s:I, s:I}", "replicas", (json_int_t)c->active, "fullyLabeledReplicas",
        (json_int_t)c->full, "readyReplicas", (json_int_t)c->ready, "availableReplicas",
        (json_int_t)avail, "observedGeneration",
        json_integer_value(json_object_get(json_object_get(rs, "metadata"), "generation")));
    /* ReplicaFailure: set while creates or deletes fail, cleared after. */
    const json_t *oldc = json_object_get(old, "conditions");
    if (failed) {
        char now_s[32];
        time_t t = time(NULL);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(now_s, sizeof now_s, "%Y-%m-%dT%H:%M:%SZ", &tm);
        json_object_set_new(st, "conditions",
                            json_pack("[{s:s, s:s, s:s, s:s, s:s}]", "type", "ReplicaFailure",
                                      "status", "True", "lastTransitionTime", now_s, "reason",
                                      failed > 0 ? "FailedCreate" : "FailedDelete", "message",
                                      "creating or deleting pods failed; see events"));
        if (json_array_size(oldc)) /* keep the first transition time */
            json_object_set(json_array_get(json_object_get(st, "conditions"), 0),
                            "lastTransitionTime",
                            json_object_get(json_array_get(oldc, 0), "lastTransitionTime"));
    } else if (json_array_size(oldc)) {
        json_object_set_new(st, "conditions", json_null()); /* merge patch: remove */
    }
    int same = 1;
    const char *k;
    json_t *v;
    json_object_foreach(st, k, v) {
        const json_t *o = json_object_get(old, k);
        if (json_is_null(v) ? o != NULL : !(o && json_equal(o, v))) same = 0;
    }
    int rc = 0;
    if (!same) {
        json_t *patch = json_pack("{s:O}", "status", st);
        rc = ctrl_update_merged(ctrl_client(s->c), s->k->res, rs, "status", patch, NULL);
        json_decref(patch);
        if (rc == KP_ENOTFOUND) rc = 0;
    }
    json_decref(st);
    return rc;
}

typedef struct owned {
    rs_ctl_t *s;
    const char *uid;
} owned_t;

static int list_owned(void *arg, json_t ***pods, size_t *n)
{
    owned_t *o = arg;
    return kc_informer_list(o->s->pods, "controller", o->uid, pods, n);
}

/* Is there an active orphan in rs's namespace that sel selects (one to
 * adopt)? Errors: those of the informer. */
static int adoptable(rs_ctl_t *s, const json_t *rs, const json_t *sel, int *yes)
{
    json_t **orphans;
    size_t n;
    *yes = 0;
    int rc = kc_informer_list(s->pods, ORPHANS, ctrl_meta_str(rs, "namespace"), &orphans, &n);
    for (size_t i = 0; !rc && !*yes && i < n; i++)
        *yes = ctrl_pod_active(orphans[i]) && ctrl_selector_matches(sel, ctrl_labels(orphans[i]));
    if (!rc) kc_objs_free(orphans, n);
    return rc;
}

/* The sync from the summary's counts, when they suffice: nothing to adopt
 * or release, nothing to delete, and availability is readiness (no
 * minReadySeconds). *done 0: they do not; the caller passes over the pods. */
static int sync_counted(rs_ctl_t *s, const json_t *rs, const char *key, int met, int *done)
{
    *done = 0;
    if (min_ready_seconds(rs) > 0) return 0;
    json_t *sel = rs__selector(rs, s->k->map_selector);
    owned_t o = {s, ctrl_meta_str(rs, "uid")};
    rs__counts_t c;
    int orphan = 0;
    int rc = rs__sums_counts(s->sums, key, o.uid, sel, template_labels(rs), list_owned, &o, &c);
    if (!rc) rc = adoptable(s, rs, sel, &orphan);
    json_decref(sel);
    if (rc || orphan || c.release || (met && c.active > want_replicas(rs))) return rc;
    *done = 1;
    int failed = 0;
    if (met) {
        rc = manage(s, rs, key, NULL, (size_t)c.active); /* creates only */
        if (rc) failed = 1;
    }
    int src = update_status(s, rs, &c, c.ready, failed);
    return rc ? rc : src;
}

static int rs_sync(ctrl_t *c, void *self, const char *key)
{
    rs_ctl_t *s = self;
    (void)c;
    json_t *rs = kc_informer_get(s->rs, key);
    if (!rs) {
        ctrl_exp_forget(s->exp, key);
        rs__sums_forget(s->sums, key);
        return 0;
    }
    int rc = 0, done = 0;
    if (json_object_get(json_object_get(rs, "metadata"), "deletionTimestamp")) goto out;
    /* Expectations first, the pods after: met means the informer has shown
     * every pod we expected, so the list below holds them (its cache is
     * filled before handlers count them off), and so does the summary
     * (counted before them). Read the other way round, a create seen
     * between the two reads makes a short list look final, and the
     * difference is created twice. */
    int met = ctrl_exp_met(s->exp, key);
    if ((rc = sync_counted(s, rs, key, met, &done)) || done) goto out;
    json_t **pods;
    size_t n;
    if ((rc = claim_pods(s, rs, &pods, &n))) goto out;
    /* Active pods first; the rest stay out of the count. */
    size_t na = 0;
    for (size_t i = 0; i < n; i++) {
        if (!ctrl_pod_active(pods[i])) continue;
        json_t *t = pods[na];
        pods[na++] = pods[i];
        pods[i] = t;
    }
    int failed = 0;
    if (met) {
        rc = manage(s, rs, key, pods, na);
        if (rc) failed = (long)na < want_replicas(rs) ? 1 : -1;
    }
    int requeue = 0;
    rs__counts_t counts;
    long avail;
    count_active(rs, pods, na, &counts, &avail, &requeue);
    int src = update_status(s, rs, &counts, avail, failed);
    if (!rc) rc = src;
    if (requeue) ctrl_enqueue_after(s->c, key, requeue * 1000 + 100);
    kc_objs_free(pods, n);
out:
    json_decref(rs);
    return rc;
}

const ctrl_ops_t ctrl_replicaset = {
    .name = "replicaset",
    .init = rs_init,
    .sync = rs_sync,
    .free = rs_free,
};

/* Kubernetes names it "replicationcontroller" in --controllers and its
 * events' source "replication-controller". */
const ctrl_ops_t ctrl_replicationcontroller = {
    .name = "replicationcontroller",
    .service_account = "replication-controller",
    .event_source = "replication-controller",
    .init = rc_init,
    .sync = rs_sync,
    .free = rs_free,
};
