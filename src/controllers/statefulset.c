/*
 * statefulset.c -- the StatefulSet controller (apps/v1).
 *
 * INVARIANT: a StatefulSet of N replicas starting at ordinal S has exactly
 * one pod per ordinal S..S+N-1, named "<set>-<ordinal>", each with a stable
 * identity (labels statefulset.kubernetes.io/pod-name and
 * apps.kubernetes.io/pod-index, hostname = its name, subdomain =
 * spec.serviceName) and made from one of the set's ControllerRevisions
 * (label controller-revision-hash = that revision's name); and its status
 * says how many pods it has, how many are ready, available, current and
 * updated, and which revisions are current and the update target.
 *
 * ORDER. Under podManagementPolicy OrderedReady a pod is created only when
 * every lower ordinal is Running and Ready (and Available after
 * minReadySeconds), one per sync; scale-down removes the highest ordinal
 * first and waits until it is gone before the next. Parallel creates and
 * deletes without waiting. A RollingUpdate deletes, from the highest ordinal
 * down to spec.updateStrategy.rollingUpdate.partition, the first pod not at
 * the update revision, and waits for each replacement to be healthy;
 * ordinals below the partition keep (and are recreated at) the current
 * revision. OnDelete only gives recreated pods the update revision.
 * sts__plan() decides this from the pods' state alone.
 *
 * OWNS: the pods it creates (a controller ownerReference), the
 * ControllerRevisions "<set>-<hash>" holding each distinct template (data
 * {"spec":{"template":{..., "$patch":"replace"}}}), the ownerReferences it
 * adds to matching orphans (adoption) and removes from owned objects that
 * stopped matching (release), and the StatefulSet's /status. It deletes only
 * pods and revisions it controls; revisions beyond revisionHistoryLimit that
 * no pod uses are pruned, oldest first.
 *
 * EXPECTATIONS as replicaset.c: before creating or deleting pods a sync
 * records what it expects to see; until the informer has shown it all (or
 * 5 minutes passed) the set gets status updates only, so that a lagging
 * cache never makes it create or delete twice.
 *
 * PersistentVolumeClaims: kplane has none. The pods still get the volumes a
 * volumeClaimTemplate names ("<claim>-<pod>" claims), as Kubernetes writes
 * them; nothing creates or deletes the claims.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controllers/controller.h"
#include "controllers/ctrl_util.h"
#include "controllers/expectations.h"
#include "controllers/history.h"
#include "controllers/statefulset_int.h"
#include "lib/err.h"

#define BURST               500 /* pod creates or deletes per sync (Parallel) */
/* pods and revisions index: the namespace of objects without a controller */
#define ORPHANS        "statefulset-orphans"
#define COLLISIONS_MAX 32 /* hash collisions stepped past per sync */
#define KIND           "StatefulSet"

typedef struct sts_ctl {
    ctrl_t *c;
    kc_informer_t *sets, *pods, *revs;
    ctrl_exp_t *exp; /* by set key */
} sts_ctl_t;

/* ---- pure: names and the plan ---- */

int64_t sts__ordinal(const char *set, const char *pod)
{
    size_t ls = strlen(set), lp = strlen(pod);
    if (lp < ls + 2 || strncmp(pod, set, ls) || pod[ls] != '-') return -1;
    const char *d = pod + ls + 1;
    if (strlen(d) > 10) return -1;
    int64_t v = 0;
    for (; *d; d++) {
        if (*d < '0' || *d > '9') return -1;
        v = v * 10 + (*d - '0');
    }
    /* Kubernetes' regexp "(.*)-([0-9]+)$" is greedy on the parent: "web-1-2"
     * is ordinal 2 of "web-1", never a pod of "web". */
    return v > INT32_MAX ? -1 : v;
}

/* Running, Ready and Available, and not terminating (Kubernetes' negation
 * of isUnavailable). */
static int healthy(const sts_pod_t *p)
{
    return p->obj && p->ready && p->available && !p->terminating;
}

static int push(sts_action_t *out, size_t max, size_t *n, sts_op_t op, size_t index, int upd)
{
    if (*n >= max) return 0;
    out[(*n)++] = (sts_action_t){.op = op, .index = index, .update_rev = upd};
    return 1;
}

size_t sts__plan(const sts_params_t *p, const sts_pod_t *slots, size_t nslots,
                 const sts_pod_t *condemned, size_t ncondemned, sts_action_t *out, size_t max)
{
    size_t n = 0;
    /* The first unhealthy pod: the lowest slot, else the lowest condemned
     * (as Kubernetes picks it: an unhealthy condemned pod above it waits). */
    const sts_pod_t *first_unhealthy = NULL;
    for (size_t i = 0; i < nslots && !first_unhealthy; i++)
        if (!healthy(&slots[i])) first_unhealthy = &slots[i];
    for (size_t i = ncondemned; i-- > 0 && !first_unhealthy;)
        if (!healthy(&condemned[i])) first_unhealthy = &condemned[i];

    int stop = 0;
    for (size_t i = 0; i < nslots && !stop; i++) {
        const sts_pod_t *s = &slots[i];
        if (s->obj && s->finished) {
            /* Recreated on a later sync, once this one is gone. */
            if (!s->terminating) push(out, max, &n, STS_DELETE, i, 0);
            if (p->monotonic) stop = 1;
        } else if (!s->obj) {
            int upd = !p->rolling || (int64_t)i >= p->partition;
            push(out, max, &n, STS_CREATE, i, upd);
            if (p->monotonic) stop = 1;
        } else if (p->monotonic && (s->terminating || !s->ready || !s->available)) {
            stop = 1;
        } else if (!s->identity_ok) {
            push(out, max, &n, STS_FIX, i, 0);
        }
    }
    if (stop) return n;

    for (size_t i = 0; i < ncondemned && !stop; i++) {
        const sts_pod_t *s = &condemned[i];
        if (s->terminating) {
            if (p->monotonic) stop = 1;
            continue;
        }
        if (p->monotonic && (!s->ready || !s->available) && s != first_unhealthy) {
            stop = 1;
            continue;
        }
        push(out, max, &n, STS_CONDEMN, i, 0);
        if (p->monotonic) stop = 1;
    }
    if (stop || !p->rolling) return n;

    int64_t lo = p->partition < 0 ? 0 : p->partition;
    for (int64_t t = (int64_t)nslots - 1; t >= lo; t--) {
        const sts_pod_t *s = &slots[t];
        if (!s->obj) break; /* just created: wait for it */
        if (!s->updated && !s->terminating) {
            push(out, max, &n, STS_DELETE, (size_t)t, 0);
            break;
        }
        if (!healthy(s)) break;
    }
    return n;
}

/* ---- event handlers: only enqueue (and count expectations) ---- */

static const json_t *spec_of(const json_t *o)
{
    return json_object_get(o, "spec");
}

/* The key of the StatefulSet controlling obj, or 0. */
static int set_of(const json_t *obj, char *key, size_t n)
{
    const char *kind, *name;
    if (!ctrl_owner(obj, NULL, &kind, &name) || !kind || !name || strcmp(kind, KIND)) return 0;
    snprintf(key, n, "%s/%s", ctrl_meta_str(obj, "namespace"), name);
    return 1;
}

/* Queue every StatefulSet in obj's namespace whose selector matches it (an
 * orphan one of them may adopt). */
static void enqueue_matching(sts_ctl_t *s, const json_t *obj)
{
    json_t **sets;
    size_t n;
    if (kc_informer_list(s->sets, "namespace", ctrl_meta_str(obj, "namespace"), &sets, &n)) return;
    for (size_t i = 0; i < n; i++)
        if (ctrl_selector_matches(json_object_get(spec_of(sets[i]), "selector"), ctrl_labels(obj)))
            ctrl_enqueue_obj(s->c, sets[i]);
    kc_objs_free(sets, n);
}

static int deleting(const json_t *obj)
{
    return json_object_get(json_object_get(obj, "metadata"), "deletionTimestamp") != NULL;
}

static void pod_added(void *arg, const json_t *pod)
{
    sts_ctl_t *s = arg;
    char key[600];
    if (set_of(pod, key, sizeof key)) {
        if (deleting(pod))
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
    sts_ctl_t *s = arg;
    if (old == pod) return; /* a resync: the sets resync themselves */
    char key[600], oldkey[600];
    int has = set_of(pod, key, sizeof key), had = set_of(old, oldkey, sizeof oldkey);
    if (has && deleting(pod) && !deleting(old)) ctrl_exp_del_seen(s->exp, key, ctrl_meta_str(pod, "uid"));
    if (has) ctrl_enqueue(s->c, key);
    if (had && (!has || strcmp(key, oldkey))) ctrl_enqueue(s->c, oldkey);
    if (!has && !json_equal(ctrl_labels(old), ctrl_labels(pod))) enqueue_matching(s, pod);
}

static void pod_deleted(void *arg, const json_t *pod)
{
    sts_ctl_t *s = arg;
    char key[600];
    if (!set_of(pod, key, sizeof key)) return;
    ctrl_exp_del_seen(s->exp, key, ctrl_meta_str(pod, "uid"));
    ctrl_enqueue(s->c, key);
}

static void rev_added(void *arg, const json_t *rev)
{
    sts_ctl_t *s = arg;
    char key[600];
    if (set_of(rev, key, sizeof key))
        ctrl_enqueue(s->c, key);
    else if (!ctrl_controller_uid(rev))
        enqueue_matching(s, rev);
}

static void rev_updated(void *arg, const json_t *old, const json_t *rev)
{
    if (old == rev) return;
    rev_added(arg, rev);
}

static void set_changed(void *arg, const json_t *obj)
{
    ctrl_enqueue_obj(((sts_ctl_t *)arg)->c, obj);
}

static void set_updated(void *arg, const json_t *old, const json_t *obj)
{
    (void)old;
    set_changed(arg, obj);
}

static size_t orphan_index(const json_t *obj, char vals[][KC_INDEX_VALUE_MAX], size_t max)
{
    if (!max || ctrl_controller_uid(obj)) return 0;
    snprintf(vals[0], KC_INDEX_VALUE_MAX, "%s", ctrl_meta_str(obj, "namespace"));
    return 1;
}

static int sts_init(ctrl_t *c, void **self)
{
    sts_ctl_t *s = calloc(1, sizeof *s);
    if (!s || !(s->exp = ctrl_exp_new())) {
        free(s);
        return KP_ENOMEM;
    }
    s->c = c;
    s->sets = ctrl_informer(c, &kc_statefulsets);
    s->pods = ctrl_informer(c, &kc_pods);
    s->revs = ctrl_informer(c, &kc_controllerrevisions);
    int rc = s->sets && s->pods && s->revs ? 0 : KP_ENOMEM;
    kc_handlers_t sh = {
        .on_add = set_changed, .on_update = set_updated, .on_delete = set_changed, .arg = s};
    kc_handlers_t ph = {
        .on_add = pod_added, .on_update = pod_updated, .on_delete = pod_deleted, .arg = s};
    kc_handlers_t rh = {
        .on_add = rev_added, .on_update = rev_updated, .on_delete = rev_added, .arg = s};
    if (!rc) rc = kc_informer_add_handlers(s->sets, &sh);
    if (!rc) rc = kc_informer_add_handlers(s->pods, &ph);
    if (!rc) rc = kc_informer_add_handlers(s->revs, &rh);
    if (!rc || rc == KP_EEXIST) rc = kc_informer_add_index(s->pods, ORPHANS, orphan_index);
    if (!rc || rc == KP_EEXIST) rc = kc_informer_add_index(s->revs, ORPHANS, orphan_index);
    if (rc == KP_EEXIST) rc = 0; /* a shared informer: there from an earlier init */
    if (rc) {
        if (s->sets) kc_informer_remove_handlers(s->sets, s);
        if (s->pods) kc_informer_remove_handlers(s->pods, s);
        if (s->revs) kc_informer_remove_handlers(s->revs, s);
        ctrl_exp_free(s->exp);
        free(s);
        return rc;
    }
    *self = s;
    return 0;
}

static void sts_free(void *self)
{
    sts_ctl_t *s = self;
    ctrl_exp_free(s->exp);
    free(s);
}

/* ---- claims: adopt matching orphans, release what stopped matching ---- */

/* Is obj one the set may control: its selector matches, and for pods the
 * name is "<set>-<ordinal>" (Kubernetes' isMemberOf)? */
static int claimable(const json_t *set, const json_t *obj, int pods)
{
    if (!ctrl_selector_matches(json_object_get(spec_of(set), "selector"), ctrl_labels(obj)))
        return 0;
    return !pods || sts__ordinal(ctrl_meta_str(set, "name"), ctrl_meta_str(obj, "name")) >= 0;
}

/* The objects of informer inf (resource r) the set controls once claimed:
 * *out (references; kc_objs_free) and *nout. */
static int claim(sts_ctl_t *s, const json_t *set, kc_informer_t *inf, const kc_resource_t *r,
                 json_t ***out, size_t *nout)
{
    kc_client_t *cl = ctrl_client(s->c);
    const char *ns = ctrl_meta_str(set, "namespace"), *uid = ctrl_meta_str(set, "uid");
    int pods = r == &kc_pods;
    json_t **owned, **orphans;
    size_t no, nr;
    int rc = kc_informer_list(inf, "controller", uid, &owned, &no);
    if (rc) return rc;
    if ((rc = kc_informer_list(inf, ORPHANS, ns, &orphans, &nr))) {
        kc_objs_free(owned, no);
        return rc;
    }
    json_t **keep = calloc(no + nr + 1, sizeof *keep);
    size_t nk = 0;
    if (!keep) rc = KP_ENOMEM;
    for (size_t i = 0; !rc && i < no; i++) {
        if (claimable(set, owned[i], pods) || deleting(owned[i])) {
            keep[nk++] = json_incref(owned[i]);
            continue;
        }
        rc = ctrl_release(cl, r, owned[i], uid); /* it stopped matching */
    }
    /* Never adopt for a set being deleted: the garbage collector orphans its
     * objects (--cascade=orphan), and taking them back would have them
     * deleted with it. The cache may lag: before the first adoption, ask the
     * API, as Kubernetes' RecheckDeletionTimestamp does. */
    int may_adopt = deleting(set) ? 0 : -1;
    for (size_t i = 0; !rc && i < nr && may_adopt; i++) {
        const json_t *o = orphans[i];
        if (deleting(o) || !claimable(set, o, pods)) continue;
        if (pods && !ctrl_pod_active(o)) continue;
        if (may_adopt < 0) {
            json_t *fresh = NULL;
            int grc = kc_get(cl, &kc_statefulsets, ns, ctrl_meta_str(set, "name"), &fresh);
            may_adopt = !grc && !deleting(fresh) && !strcmp(ctrl_meta_str(fresh, "uid"), uid);
            json_decref(fresh);
            if (grc && grc != KP_ENOTFOUND) rc = grc;
            if (!may_adopt) break;
        }
        json_t *adopted;
        int prc = ctrl_adopt(cl, r, o, set, "apps/v1", KIND, &adopted);
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

/* ---- revisions ---- */

static int64_t collision_count(const json_t *set)
{
    return json_integer_value(json_object_get(json_object_get(set, "status"), "collisionCount"));
}

/* Create a revision of data numbered `number`, stepping past names taken by
 * other data (*collisions counts the steps, as status.collisionCount).
 * *out: the revision made or found (a reference). */
static int revision_create(sts_ctl_t *s, const json_t *set, const json_t *data, int64_t number,
                           int64_t *collisions, json_t **out)
{
    kc_client_t *cl = ctrl_client(s->c);
    const char *ns = ctrl_meta_str(set, "namespace");
    for (int tries = 0; tries < COLLISIONS_MAX; tries++) {
        json_t *rev = ctrl_history_new(set, "apps/v1", KIND, data, number, *collisions);
        if (!rev) return KP_ENOMEM;
        const json_t *ann = json_object_get(json_object_get(set, "metadata"), "annotations");
        if (json_is_object(ann) && json_object_size(ann))
            json_object_set_new(json_object_get(rev, "metadata"), "annotations",
                                json_deep_copy(ann));
        json_t *made = NULL;
        int rc = kc_create(cl, &kc_controllerrevisions, ns, rev, &made, NULL);
        if (rc != KP_EEXIST) {
            json_decref(rev);
            *out = made;
            return rc;
        }
        json_t *have = NULL;
        rc = kc_get(cl, &kc_controllerrevisions, ns, ctrl_meta_str(rev, "name"), &have);
        json_decref(rev);
        if (rc) return rc == KP_ENOTFOUND ? KP_ECONFLICT : rc; /* gone again: retry later */
        json_t *want = json_pack("{s:O}", "data", data);
        int same = want && ctrl_history_equal(have, want);
        json_decref(want);
        if (same) {
            *out = have;
            return 0;
        }
        json_decref(have);
        (*collisions)++;
    }
    return KP_ECONFLICT;
}

typedef struct revs {
    json_t **own; /* claimed revisions (references) */
    size_t n;
    const json_t **sorted;    /* own, by .revision ascending (borrowed) */
    json_t *current, *update; /* references */
    int64_t collisions;
} revs_t;

static void revs_free(revs_t *r)
{
    kc_objs_free(r->own, r->n);
    free(r->sorted);
    json_decref(r->current);
    json_decref(r->update);
}

/* Kubernetes' getStatefulSetRevisions: the update revision is the one whose
 * data is the set's template (created, or renumbered to be the newest);
 * the current one is status.currentRevision's, or the update revision. */
static int revisions(sts_ctl_t *s, const json_t *set, revs_t *r)
{
    memset(r, 0, sizeof *r);
    r->collisions = collision_count(set);
    int rc = claim(s, set, s->revs, &kc_controllerrevisions, &r->own, &r->n);
    if (rc) return rc;
    if (!(r->sorted = calloc(r->n + 1, sizeof *r->sorted))) return KP_ENOMEM;
    for (size_t i = 0; i < r->n; i++)
        r->sorted[i] = r->own[i];
    ctrl_history_sort(r->sorted, r->n);
    json_t *data = ctrl_history_template_patch(set);
    json_t *want = data ? json_pack("{s:O}", "data", data) : NULL;
    if (!want) {
        json_decref(data);
        return KP_ENOMEM;
    }
    const json_t *equal = NULL;
    for (size_t i = 0; i < r->n; i++)
        if (ctrl_history_equal(r->sorted[i], want)) equal = r->sorted[i];
    int64_t max = ctrl_history_max_revision(r->sorted, r->n);
    if (equal && equal == r->sorted[r->n - 1]) {
        r->update = json_incref((json_t *)equal);
    } else if (equal) {
        /* A rollback to an older template: that revision becomes the newest. */
        json_t *patch = json_pack("{s:I}", "revision", (json_int_t)(max + 1));
        rc = kc_patch(ctrl_client(s->c), &kc_controllerrevisions, ctrl_meta_str(set, "namespace"),
                      ctrl_meta_str(equal, "name"), NULL, KC_PATCH_MERGE, patch, NULL, &r->update,
                      NULL);
        json_decref(patch);
    } else {
        rc = revision_create(s, set, data, max + 1, &r->collisions, &r->update);
    }
    json_decref(data);
    json_decref(want);
    if (rc) return rc;
    const char *cur =
        json_string_value(json_object_get(json_object_get(set, "status"), "currentRevision"));
    for (size_t i = 0; cur && i < r->n; i++)
        if (!strcmp(ctrl_meta_str(r->sorted[i], "name"), cur))
            r->current = json_incref((json_t *)r->sorted[i]);
    if (!r->current) r->current = json_incref(r->update);
    return 0;
}

/* Delete the oldest revisions beyond revisionHistoryLimit that neither a
 * pod nor the status uses (Kubernetes' truncateHistory). */
static int truncate_history(sts_ctl_t *s, const json_t *set, const revs_t *r, json_t **pods,
                            size_t npods)
{
    const json_t *lim = json_object_get(spec_of(set), "revisionHistoryLimit");
    int64_t limit = json_is_integer(lim) ? json_integer_value(lim) : 10;
    const char *cur = ctrl_meta_str(r->current, "name"), *upd = ctrl_meta_str(r->update, "name");
    size_t nold = 0;
    const json_t **old = calloc(r->n + 1, sizeof *old);
    if (!old) return KP_ENOMEM;
    for (size_t i = 0; i < r->n; i++) {
        const char *name = ctrl_meta_str(r->sorted[i], "name");
        int live = !strcmp(name, cur) || !strcmp(name, upd);
        for (size_t j = 0; j < npods && !live; j++) {
            const char *h =
                json_string_value(json_object_get(ctrl_labels(pods[j]), CTRL_HASH_LABEL));
            live = h && !strcmp(h, name);
        }
        if (!live) old[nold++] = r->sorted[i];
    }
    int rc = 0;
    for (size_t i = 0; (int64_t)(nold - i) > limit && i < nold; i++) {
        int drc = kc_delete(ctrl_client(s->c), &kc_controllerrevisions,
                            ctrl_meta_str(old[i], "namespace"), ctrl_meta_str(old[i], "name"), NULL,
                            NULL);
        if (drc && drc != KP_ENOTFOUND && !rc) rc = drc;
    }
    free(old);
    return rc;
}

/* ---- pods ---- */

static const char *pod_revision(const json_t *pod)
{
    const char *h = json_string_value(json_object_get(ctrl_labels(pod), CTRL_HASH_LABEL));
    return h ? h : "";
}

static int running_ready(const json_t *pod)
{
    const char *ph = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    return ph && !strcmp(ph, "Running") && ctrl_pod_ready(pod);
}

static int identity_ok(const json_t *pod, int64_t ord)
{
    const json_t *l = ctrl_labels(pod);
    const char *pn = json_string_value(json_object_get(l, STS_POD_NAME_LABEL));
    const char *pi = json_string_value(json_object_get(l, STS_POD_INDEX_LABEL));
    char idx[24];
    snprintf(idx, sizeof idx, "%" PRId64, ord);
    return pn && !strcmp(pn, ctrl_meta_str(pod, "name")) && pi && !strcmp(pi, idx);
}

/* The pod of ordinal ord from revision rev's template (a new reference;
 * NULL: out of memory), as Kubernetes' newVersionedStatefulSetPod. */
static json_t *pod_new(const json_t *set, const json_t *rev, int64_t ord)
{
    const json_t *tmpl =
        json_object_get(json_object_get(json_object_get(rev, "data"), "spec"), "template");
    const json_t *tmeta = json_object_get(tmpl, "metadata");
    char name[320], idx[24];
    snprintf(name, sizeof name, "%s-%" PRId64, ctrl_meta_str(set, "name"), ord);
    snprintf(idx, sizeof idx, "%" PRId64, ord);
    const json_t *tl = json_object_get(tmeta, "labels");
    json_t *labels = json_is_object(tl) ? json_deep_copy(tl) : json_object();
    json_t *meta = json_object();
    json_t *spec = json_deep_copy(json_object_get(tmpl, "spec"));
    if (!spec) spec = json_object();
    json_t *pod = NULL;
    if (!labels || !meta || !spec) goto out;
    json_object_set_new(labels, STS_POD_NAME_LABEL, json_string(name));
    json_object_set_new(labels, STS_POD_INDEX_LABEL, json_string(idx));
    json_object_set_new(labels, CTRL_HASH_LABEL, json_string(ctrl_meta_str(rev, "name")));
    json_object_set_new(meta, "name", json_string(name));
    json_object_set_new(meta, "namespace", json_string(ctrl_meta_str(set, "namespace")));
    json_object_set(meta, "labels", labels);
    static const char *const copy[] = {"annotations", "finalizers", NULL};
    for (const char *const *k = copy; *k; k++) {
        json_t *v = json_object_get(tmeta, *k);
        if (v) json_object_set_new(meta, *k, json_deep_copy(v));
    }
    json_object_set_new(meta, "ownerReferences",
                        json_pack("[o]", ctrl_controller_ref(set, "apps/v1", KIND)));
    json_object_set_new(spec, "hostname", json_string(name));
    const char *svc = json_string_value(json_object_get(spec_of(set), "serviceName"));
    if (svc && *svc) json_object_set_new(spec, "subdomain", json_string(svc));
    /* Storage as Kubernetes' updateStorage: a claim volume per template,
     * replacing a template volume of the same name. */
    size_t i;
    json_t *ct;
    json_array_foreach(json_object_get(spec_of(set), "volumeClaimTemplates"), i, ct) {
        const char *cn = ctrl_meta_str(ct, "name");
        if (!*cn) continue;
        json_t *vols = json_object_get(spec, "volumes");
        if (!json_is_array(vols)) {
            vols = json_array();
            json_object_set_new(spec, "volumes", vols);
        }
        for (size_t j = json_array_size(vols); j-- > 0;) {
            const char *vn = json_string_value(json_object_get(json_array_get(vols, j), "name"));
            if (vn && !strcmp(vn, cn)) json_array_remove(vols, j);
        }
        json_array_append_new(vols, json_pack("{s:s, s:{s:o}}", "name", cn, "persistentVolumeClaim",
                                              "claimName", json_sprintf("%s-%s", cn, name)));
    }
    pod = json_pack("{s:s, s:s, s:O, s:O}", "apiVersion", "v1", "kind", "Pod", "metadata", meta,
                    "spec", spec);
out:
    json_decref(labels);
    json_decref(meta);
    json_decref(spec);
    return pod;
}

static int create_pod(sts_ctl_t *s, const json_t *set, const char *key, const json_t *rev,
                      int64_t ord)
{
    json_t *pod = pod_new(set, rev, ord);
    if (!pod) return KP_ENOMEM;
    const char *name = ctrl_meta_str(pod, "name");
    json_t *status = NULL;
    int rc =
        kc_create(ctrl_client(s->c), &kc_pods, ctrl_meta_str(set, "namespace"), pod, NULL, &status);
    if (rc) {
        ctrl_exp_add_seen(s->exp, key, 1); /* will never be seen */
        const char *msg = json_string_value(json_object_get(status, "message"));
        kc_event(ctrl_recorder(s->c), set, "Warning", "FailedCreate",
                 "create Pod %s in StatefulSet %s failed error: %s", name,
                 ctrl_meta_str(set, "name"), msg ? msg : err_str(rc));
    } else {
        kc_event(ctrl_recorder(s->c), set, "Normal", "SuccessfulCreate",
                 "create Pod %s in StatefulSet %s successful", name, ctrl_meta_str(set, "name"));
    }
    json_decref(status);
    json_decref(pod);
    return rc;
}

static int delete_pod(sts_ctl_t *s, const json_t *set, const char *key, const json_t *pod)
{
    const char *uid = ctrl_meta_str(pod, "uid"), *name = ctrl_meta_str(pod, "name");
    json_t *opts = json_pack("{s:{s:s}}", "preconditions", "uid", uid);
    int rc =
        kc_delete(ctrl_client(s->c), &kc_pods, ctrl_meta_str(pod, "namespace"), name, opts, NULL);
    json_decref(opts);
    if (rc) ctrl_exp_del_seen(s->exp, key, uid); /* gone already, or failed */
    if (rc == KP_ENOTFOUND) return 0;
    if (rc)
        kc_event(ctrl_recorder(s->c), set, "Warning", "FailedDelete",
                 "delete Pod %s in StatefulSet %s failed error: %s", name,
                 ctrl_meta_str(set, "name"), err_str(rc));
    else
        kc_event(ctrl_recorder(s->c), set, "Normal", "SuccessfulDelete",
                 "delete Pod %s in StatefulSet %s successful", name, ctrl_meta_str(set, "name"));
    return rc;
}

static int fix_identity(sts_ctl_t *s, const json_t *set, const json_t *pod, int64_t ord)
{
    char idx[24];
    snprintf(idx, sizeof idx, "%" PRId64, ord);
    json_t *patch = json_pack("{s:{s:{s:s, s:s}}}", "metadata", "labels", STS_POD_NAME_LABEL,
                              ctrl_meta_str(pod, "name"), STS_POD_INDEX_LABEL, idx);
    int rc = kc_patch(ctrl_client(s->c), &kc_pods, ctrl_meta_str(pod, "namespace"),
                      ctrl_meta_str(pod, "name"), NULL, KC_PATCH_MERGE, patch, NULL, NULL, NULL);
    json_decref(patch);
    if (rc && rc != KP_ENOTFOUND)
        kc_event(ctrl_recorder(s->c), set, "Warning", "FailedUpdate",
                 "update Pod %s in StatefulSet %s failed error: %s", ctrl_meta_str(pod, "name"),
                 ctrl_meta_str(set, "name"), err_str(rc));
    return rc == KP_ENOTFOUND ? 0 : rc;
}

/* ---- status ---- */

static const char *phase(const json_t *pod)
{
    const char *p = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    return p ? p : "";
}

/* Write status when it changed; *requeue_s gets the seconds until a ready
 * pod becomes available (0: none waiting). */
static int update_status(sts_ctl_t *s, const json_t *set, const revs_t *r, json_t **pods, size_t n,
                         int *requeue_s)
{
    const json_t *spec = spec_of(set);
    int min_ready = (int)json_integer_value(json_object_get(spec, "minReadySeconds"));
    int64_t now = time(NULL);
    const char *cur = ctrl_meta_str(r->current, "name"), *upd = ctrl_meta_str(r->update, "name");
    long replicas = 0, ready = 0, avail = 0, current = 0, updated = 0;
    *requeue_s = 0;
    for (size_t i = 0; i < n; i++) {
        replicas++;
        if (running_ready(pods[i])) {
            ready++;
            int wait;
            if (ctrl_pod_available(pods[i], min_ready, now, &wait))
                avail++;
            else if (wait && (!*requeue_s || wait < *requeue_s))
                *requeue_s = wait;
        }
        if (deleting(pods[i])) continue;
        if (!strcmp(pod_revision(pods[i]), cur)) current++;
        if (!strcmp(pod_revision(pods[i]), upd)) updated++;
    }
    const char *ut =
        json_string_value(json_object_get(json_object_get(spec, "updateStrategy"), "type"));
    /* Kubernetes' completeRollingUpdate: every pod updated and ready. */
    if ((!ut || !strcmp(ut, "RollingUpdate")) && updated == replicas && ready == replicas) {
        current = updated;
        cur = upd;
    }
    json_t *st = json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:s, s:I}", "observedGeneration",
        json_integer_value(json_object_get(json_object_get(set, "metadata"), "generation")),
        "replicas", (json_int_t)replicas, "readyReplicas", (json_int_t)ready, "currentReplicas",
        (json_int_t)current, "updatedReplicas", (json_int_t)updated, "availableReplicas",
        (json_int_t)avail, "currentRevision", cur, "updateRevision", upd, "collisionCount",
        (json_int_t)r->collisions);
    if (!st) return KP_ENOMEM;
    const json_t *old = json_object_get(set, "status");
    int same = 1;
    const char *k;
    json_t *v;
    json_object_foreach(st, k, v) {
        const json_t *o = json_object_get(old, k);
        if (!(o && json_equal(o, v))) same = 0;
    }
    int rc = 0;
    if (!same) {
        json_t *patch = json_pack("{s:O}", "status", st);
        rc = ctrl_update_merged(ctrl_client(s->c), &kc_statefulsets, set, "status", patch, NULL);
        json_decref(patch);
        if (rc == KP_ENOTFOUND) rc = 0;
    }
    json_decref(st);
    return rc;
}

/* ---- sync ---- */

static int cmp_ord_desc(const void *a, const void *b)
{
    const sts_pod_t *x = a, *y = b;
    return x->ordinal < y->ordinal ? 1 : x->ordinal > y->ordinal ? -1 : 0;
}

static void pod_state(sts_pod_t *p, const json_t *pod, int64_t ord, const char *upd, int min_ready,
                      int64_t now)
{
    const char *ph = phase(pod);
    p->obj = pod;
    p->ordinal = ord;
    p->finished = !strcmp(ph, "Failed") || !strcmp(ph, "Succeeded");
    p->terminating = deleting(pod);
    p->ready = running_ready(pod);
    p->available = p->ready && ctrl_pod_available(pod, min_ready, now, NULL);
    p->updated = !strcmp(pod_revision(pod), upd);
    p->identity_ok = identity_ok(pod, ord);
}

/* Act on the pods: the plan's actions, in order; the first failure stops. */
static int manage(sts_ctl_t *s, const json_t *set, const char *key, const revs_t *r, json_t **pods,
                  size_t npods)
{
    const json_t *spec = spec_of(set);
    const json_t *rj = json_object_get(spec, "replicas");
    int64_t want = json_is_integer(rj) ? json_integer_value(rj) : 1;
    int64_t start = json_integer_value(json_object_get(json_object_get(spec, "ordinals"), "start"));
    if (want < 0) want = 0;
    if (start < 0) start = 0;
    int min_ready = (int)json_integer_value(json_object_get(spec, "minReadySeconds"));
    const char *pmp = json_string_value(json_object_get(spec, "podManagementPolicy"));
    const json_t *us = json_object_get(spec, "updateStrategy");
    const char *ut = json_string_value(json_object_get(us, "type"));
    sts_params_t p = {
        .monotonic = !pmp || strcmp(pmp, "Parallel"),
        .rolling = !ut || !strcmp(ut, "RollingUpdate"),
        .partition =
            json_integer_value(json_object_get(json_object_get(us, "rollingUpdate"), "partition")),
    };
    const char *upd = ctrl_meta_str(r->update, "name"), *sname = ctrl_meta_str(set, "name");
    int64_t now = time(NULL);
    sts_pod_t *slots = calloc((size_t)want + 1, sizeof *slots);
    sts_pod_t *cond = calloc(npods + 1, sizeof *cond);
    size_t ncond = 0, max = (size_t)want + npods + 1;
    if (max > BURST) max = BURST; /* Parallel: the rest on the next sync */
    sts_action_t *acts = calloc(max, sizeof *acts);
    int rc = 0;
    if (!slots || !cond || !acts) {
        rc = KP_ENOMEM;
        goto out;
    }
    for (int64_t i = 0; i < want; i++)
        slots[i].ordinal = start + i;
    for (size_t i = 0; i < npods; i++) {
        int64_t ord = sts__ordinal(sname, ctrl_meta_str(pods[i], "name"));
        if (ord < 0) continue;
        if (ord >= start && ord < start + want)
            pod_state(&slots[ord - start], pods[i], ord, upd, min_ready, now);
        else
            pod_state(&cond[ncond++], pods[i], ord, upd, min_ready, now);
    }
    qsort(cond, ncond, sizeof *cond, cmp_ord_desc);
    size_t n = sts__plan(&p, slots, (size_t)want, cond, ncond, acts, max);
    /* Expectations first (invariant 2 of replicaset.c): every create and
     * delete of this sync, lowered again for those that fail or are not sent. */
    int adds = 0;
    json_t *dels = json_object();
    if (!dels) {
        rc = KP_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (acts[i].op == STS_CREATE) adds++;
        if (acts[i].op == STS_DELETE)
            json_object_set_new(dels, ctrl_meta_str(slots[acts[i].index].obj, "uid"), json_true());
        if (acts[i].op == STS_CONDEMN)
            json_object_set_new(dels, ctrl_meta_str(cond[acts[i].index].obj, "uid"), json_true());
    }
    if (adds || json_object_size(dels))
        ctrl_exp_set(s->exp, key, adds, dels);
    else
        json_decref(dels);
    size_t i = 0;
    for (; i < n && !rc; i++) {
        const sts_action_t *a = &acts[i];
        switch (a->op) {
        case STS_CREATE:
            rc = create_pod(s, set, key, a->update_rev ? r->update : r->current,
                            slots[a->index].ordinal);
            break;
        case STS_DELETE:
            rc = delete_pod(s, set, key, slots[a->index].obj);
            break;
        case STS_CONDEMN:
            rc = delete_pod(s, set, key, cond[a->index].obj);
            break;
        case STS_FIX:
            rc = fix_identity(s, set, slots[a->index].obj, slots[a->index].ordinal);
            break;
        }
    }
    for (; i < n; i++) { /* not sent */
        if (acts[i].op == STS_CREATE) ctrl_exp_add_seen(s->exp, key, 1);
        if (acts[i].op == STS_DELETE)
            ctrl_exp_del_seen(s->exp, key, ctrl_meta_str(slots[acts[i].index].obj, "uid"));
        if (acts[i].op == STS_CONDEMN)
            ctrl_exp_del_seen(s->exp, key, ctrl_meta_str(cond[acts[i].index].obj, "uid"));
    }
out:
    free(slots);
    free(cond);
    free(acts);
    return rc;
}

static int sts_sync(ctrl_t *c, void *self, const char *key)
{
    sts_ctl_t *s = self;
    (void)c;
    json_t *set = kc_informer_get(s->sets, key);
    if (!set) {
        ctrl_exp_forget(s->exp, key);
        return 0;
    }
    int rc = 0;
    json_t **pods = NULL;
    size_t n = 0;
    revs_t r;
    memset(&r, 0, sizeof r);
    int met = ctrl_exp_met(s->exp, key); /* before the list: see replicaset.c */
    if ((rc = revisions(s, set, &r))) goto out;
    if ((rc = claim(s, set, s->pods, &kc_pods, &pods, &n))) goto out;
    /* A set being deleted gets status only; the garbage collector takes its pods. */
    if (!deleting(set) && met) rc = manage(s, set, key, &r, pods, n);
    int requeue = 0;
    int src = update_status(s, set, &r, pods, n, &requeue);
    if (!rc) rc = src;
    if (requeue) ctrl_enqueue_after(s->c, key, requeue * 1000 + 100);
    if (!rc && !deleting(set)) rc = truncate_history(s, set, &r, pods, n);
out:
    kc_objs_free(pods, n);
    revs_free(&r);
    json_decref(set);
    return rc;
}

const ctrl_ops_t ctrl_statefulset = {
    .name = "statefulset",
    .init = sts_init,
    .sync = sts_sync,
    .free = sts_free,
};
