/*
 * deployment.c -- the Deployment controller: handlers, sync(key), adoption,
 * creating the new ReplicaSet, every write through the API, status and
 * conditions. Which ReplicaSet is new (hash, revisions), the strategy steps
 * and proportional scaling are in deployment_rolling.c; the contracts of
 * both files are in deployment_int.h.
 *
 * INVARIANT: a Deployment's pods come from ReplicaSets it controls, one per
 * pod template. The one whose template is the Deployment's (the "new" RS)
 * grows to spec.replicas while the others ("old") shrink to 0 within the
 * strategy's bounds; at most revisionHistoryLimit empty old ReplicaSets
 * remain; status and conditions say where the rollout stands.
 *
 * OWNS: the ReplicaSets it creates ("<deployment>-<pod-template-hash>",
 * controller ownerReference) or adopts (matching orphans; it releases owned
 * ones that stop matching): their spec.replicas, spec.minReadySeconds and
 * deployment.kubernetes.io/... annotations, and their deletion beyond the
 * history limit; the Deployment's deployment.kubernetes.io/revision
 * annotation and its /status. It never touches pods.
 *
 * RULES
 *   1. sync never waits: it acts on the caches, writes, returns; the
 *      informer events its writes cause (or ctrl_enqueue_after for a
 *      progress deadline) bring it back.
 *   2. Every write carries the resourceVersion its decision was made on, so
 *      a decision taken on a stale cache fails with a conflict and is
 *      retried instead of being applied twice (there are no expectations).
 *   3. /status is written only when it differs from the stored one.
 *
 * ONE SYNC (the function behind each branch):
 *
 *   claim (adopt/release), count terminating pods
 *     -> deleting? ----------------------------------------> status only
 *     -> paused condition (check_paused)
 *     -> find the new RS, sync its revision (find_new)
 *     -> paused or replicas changed? --> deploy__scale (+ cleanup if paused)
 *     -> Recreate:      old to 0 | wait for old pods | create new at R
 *        RollingUpdate: create new | new up (surge) | old down (unavailable)
 *     -> complete? deploy__cleanup -> status + Progressing (deadline requeue)
 *
 * A rollback is the user reverting the template (kubectl rollout undo): the
 * old RS with that template becomes the new one and takes the next revision.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controllers/ctrl_util.h"
#include "controllers/deployment_int.h"
#include "lib/err.h"
#include "lib/log.h"

#define COMP    "deployment"
#define KEY_MAX 600

/* ---- small JSON helpers ---- */

static const json_t *meta(const json_t *o)
{
    return json_object_get(o, "metadata");
}
static const json_t *spec(const json_t *o)
{
    return json_object_get(o, "spec");
}
static const json_t *status(const json_t *o)
{
    return json_object_get(o, "status");
}

static int32_t get_i32(const json_t *o, const char *key, int32_t dflt)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_integer(v)) return dflt;
    json_int_t x = json_integer_value(v);
    return x < INT32_MIN ? INT32_MIN : x > INT32_MAX ? INT32_MAX : (int32_t)x;
}

static const char *get_str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* obj[key], created as an empty object if absent (obj is ours). */
static json_t *child(json_t *obj, const char *key)
{
    json_t *c = json_object_get(obj, key);
    if (!json_is_object(c)) {
        c = json_object();
        if (json_object_set_new(obj, key, c)) return NULL;
    }
    return c;
}

/* ---- pure: status and conditions ---- */

void deploy__time_str(int64_t t, char out[DEPLOY_TIME_MAX])
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm) || !strftime(out, DEPLOY_TIME_MAX, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(out, DEPLOY_TIME_MAX, "1970-01-01T00:00:00Z");
}

json_t *deploy__condition(const char *type, const char *st, const char *reason, const char *message,
                          const char *now)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "type", type, "status", st, "lastUpdateTime",
                     now, "lastTransitionTime", now, "reason", reason, "message", message);
}

const json_t *deploy__condition_get(const json_t *st, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(st, "conditions"), i, c) {
        if (!strcmp(get_str(c, "type"), type)) return c;
    }
    return NULL;
}

void deploy__condition_remove(json_t *st, const char *type)
{
    json_t *list = json_object_get(st, "conditions");
    for (size_t i = 0; i < json_array_size(list);) {
        if (!strcmp(get_str(json_array_get(list, i), "type"), type))
            json_array_remove(list, i);
        else
            i++;
    }
    if (list && !json_array_size(list)) json_object_del(st, "conditions");
}

void deploy__condition_set(json_t *st, json_t *cond)
{
    if (!cond) return;
    const json_t *cur = deploy__condition_get(st, get_str(cond, "type"));
    if (cur && !strcmp(get_str(cur, "status"), get_str(cond, "status"))) {
        if (!strcmp(get_str(cur, "reason"), get_str(cond, "reason"))) {
            json_decref(cond);
            return;
        }
        json_object_set(cond, "lastTransitionTime", json_object_get(cur, "lastTransitionTime"));
    }
    deploy__condition_remove(st, get_str(cond, "type"));
    json_t *list = json_object_get(st, "conditions");
    if (!json_is_array(list)) {
        list = json_array();
        json_object_set_new(st, "conditions", list);
    }
    json_array_append_new(list, cond);
}

static void put_count(json_t *st, const char *key, int64_t v)
{
    if (v) json_object_set_new(st, key, json_integer(v)); /* omitempty, as Kubernetes */
}

json_t *deploy__status_calc(const json_t *d, const deploy_params_t *p, const deploy_rs_t *rs,
                            size_t n, int newi, const char *now)
{
    int64_t replicas = 0, ready = 0, available = 0, total = 0;
    for (size_t i = 0; i < n; i++) {
        replicas += rs[i].replicas;
        ready += rs[i].ready;
        available += rs[i].available;
        total += rs[i].spec;
    }
    json_t *st = json_object();
    if (!st) return NULL;
    const json_t *old = status(d);
    put_count(st, "observedGeneration", json_integer_value(json_object_get(meta(d), "generation")));
    put_count(st, "replicas", replicas);
    put_count(st, "updatedReplicas", newi >= 0 ? rs[newi].replicas : 0);
    put_count(st, "readyReplicas", ready);
    put_count(st, "availableReplicas", available);
    put_count(st, "unavailableReplicas", total > available ? total - available : 0);
    const json_t *conds = json_object_get(old, "conditions");
    if (json_is_array(conds) && json_array_size(conds))
        json_object_set_new(st, "conditions", json_deep_copy(conds));
    const json_t *cc = json_object_get(old, "collisionCount");
    if (json_is_integer(cc)) json_object_set(st, "collisionCount", (json_t *)cc);
    if (available >= (int64_t)p->replicas - p->max_unavailable)
        deploy__condition_set(st, deploy__condition("Available", "True", DEPLOY_R_AVAILABLE,
                                                    "Deployment has minimum availability.", now));
    else
        deploy__condition_set(
            st, deploy__condition("Available", "False", DEPLOY_R_UNAVAILABLE,
                                  "Deployment does not have minimum availability.", now));
    return st;
}

int deploy__complete(const json_t *d, const json_t *st)
{
    int32_t want = get_i32(spec(d), "replicas", 1);
    return get_i32(st, "updatedReplicas", 0) == want && get_i32(st, "replicas", 0) == want &&
           get_i32(st, "availableReplicas", 0) == want &&
           json_integer_value(json_object_get(st, "observedGeneration")) >=
               json_integer_value(json_object_get(meta(d), "generation"));
}

int deploy__progressing(const json_t *d, const json_t *st)
{
    const json_t *old = status(d);
    int64_t old_old = (int64_t)get_i32(old, "replicas", 0) - get_i32(old, "updatedReplicas", 0);
    int64_t new_old = (int64_t)get_i32(st, "replicas", 0) - get_i32(st, "updatedReplicas", 0);
    return get_i32(st, "updatedReplicas", 0) > get_i32(old, "updatedReplicas", 0) ||
           new_old < old_old ||
           get_i32(st, "readyReplicas", 0) > get_i32(old, "readyReplicas", 0) ||
           get_i32(st, "availableReplicas", 0) > get_i32(old, "availableReplicas", 0);
}

int deploy__timed_out(const deploy_params_t *p, const json_t *st, int64_t now)
{
    if (p->deadline_s < 0) return 0;
    const json_t *c = deploy__condition_get(st, "Progressing");
    if (!c) return 0;
    const char *reason = get_str(c, "reason");
    if (!strcmp(reason, DEPLOY_R_COMPLETE)) return 0;
    if (!strcmp(reason, DEPLOY_R_TIMEDOUT)) return 1;
    int64_t from = ctrl_time(get_str(c, "lastUpdateTime"));
    return from >= 0 && from + p->deadline_s < now;
}

/* The ReplicaFailure conditions of the new RS, else of any RS, as the
 * Deployment carries them. */
static json_t *replica_failure(const deploy_rs_t *rs, size_t n, int newi)
{
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < n; i++) {
            if ((pass == 0) != ((int)i == newi) || !rs[i].obj) continue;
            size_t k;
            json_t *c;
            json_array_foreach(json_object_get(status(rs[i].obj), "conditions"), k, c) {
                if (strcmp(get_str(c, "type"), "ReplicaFailure")) continue;
                const char *t = get_str(c, "lastTransitionTime");
                return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "type", "ReplicaFailure",
                                 "status", get_str(c, "status"), "lastUpdateTime", t,
                                 "lastTransitionTime", t, "reason", get_str(c, "reason"), "message",
                                 get_str(c, "message"));
            }
        }
    }
    return NULL;
}

void deploy__rollout_conditions(const json_t *d, const deploy_params_t *p, json_t *st,
                                const deploy_rs_t *rs, size_t n, int newi, int64_t now)
{
    char now_s[DEPLOY_TIME_MAX], msg[600];
    deploy__time_str(now, now_s);
    if (p->deadline_s < 0) deploy__condition_remove(st, "Progressing");
    const json_t *cur = deploy__condition_get(status(d), "Progressing");
    /* Only one RS active and the last rollout done: a resync, not progress. */
    int done = get_i32(st, "replicas", 0) == get_i32(st, "updatedReplicas", 0) && cur &&
               !strcmp(get_str(cur, "reason"), DEPLOY_R_COMPLETE);
    const char *what = newi >= 0 ? "ReplicaSet" : "Deployment";
    const char *who = newi >= 0 ? rs[newi].name : get_str(meta(d), "name");
    if (p->deadline_s >= 0 && !done) {
        if (deploy__complete(d, st)) {
            snprintf(msg, sizeof msg, "%s \"%s\" has successfully progressed.", what, who);
            deploy__condition_set(
                st, deploy__condition("Progressing", "True", DEPLOY_R_COMPLETE, msg, now_s));
        } else if (deploy__progressing(d, st)) {
            snprintf(msg, sizeof msg, "%s \"%s\" is progressing.", what, who);
            json_t *c = deploy__condition("Progressing", "True", DEPLOY_R_UPDATED, msg, now_s);
            /* Progress refreshes lastUpdateTime: the deadline counts from it. */
            if (c && cur && !strcmp(get_str(cur, "status"), "True"))
                json_object_set(c, "lastTransitionTime",
                                json_object_get(cur, "lastTransitionTime"));
            deploy__condition_remove(st, "Progressing");
            deploy__condition_set(st, c);
        } else if (deploy__timed_out(p, st, now)) {
            snprintf(msg, sizeof msg, "%s \"%s\" has timed out progressing.", what, who);
            deploy__condition_set(
                st, deploy__condition("Progressing", "False", DEPLOY_R_TIMEDOUT, msg, now_s));
        }
    }
    json_t *failure = replica_failure(rs, n, newi);
    if (failure)
        deploy__condition_set(st, failure);
    else
        deploy__condition_remove(st, "ReplicaFailure");
}

int64_t deploy__requeue_ms(const deploy_params_t *p, const json_t *d, const json_t *st, int64_t now)
{
    if (p->deadline_s < 0) return -1;
    const json_t *cur = deploy__condition_get(status(d), "Progressing");
    if (!cur || deploy__complete(d, st) || !strcmp(get_str(cur, "reason"), DEPLOY_R_TIMEDOUT))
        return -1;
    int64_t from = ctrl_time(get_str(cur, "lastUpdateTime"));
    if (from < 0) return -1;
    int64_t left = from + p->deadline_s - now;
    /* The deadline passes when now > from + deadline: look one second after.
     * Already past means the condition does not count time (e.g. a complete
     * rollout being scaled): nothing to wait for. */
    return left < 0 ? -1 : (left + 1) * 1000;
}

int deploy__paused_condition(const deploy_params_t *p, json_t *st, const char *now)
{
    if (p->deadline_s < 0) return 0;
    const json_t *c = deploy__condition_get(st, "Progressing");
    const char *reason = c ? get_str(c, "reason") : "";
    if (!strcmp(reason, DEPLOY_R_TIMEDOUT)) return 0; /* keep the failure visible */
    int shown = !strcmp(reason, DEPLOY_R_PAUSED);
    if (p->paused && !shown)
        deploy__condition_set(st, deploy__condition("Progressing", "Unknown", DEPLOY_R_PAUSED,
                                                    "Deployment is paused", now));
    else if (!p->paused && shown)
        deploy__condition_set(st, deploy__condition("Progressing", "Unknown", DEPLOY_R_RESUMED,
                                                    "Deployment is resumed", now));
    else
        return 0;
    return 1;
}

/* ---- the sync's state ---- */

/* Fill r from obj (a reference r takes over). */
static void rs_fill(deploy_rs_t *r, json_t *obj)
{
    if (r->obj != obj) json_decref(r->obj);
    memset(r, 0, sizeof *r);
    r->obj = obj;
    const json_t *md = meta(obj), *sp = spec(obj), *st = status(obj);
    const json_t *ann = json_object_get(md, "annotations");
    r->name = get_str(md, "name");
    r->created = ctrl_time(get_str(md, "creationTimestamp"));
    r->revision = deploy__ann_num(ann, DEPLOY_ANN_REVISION);
    if (r->revision < 0) r->revision = 0;
    r->spec = get_i32(sp, "replicas", 1);
    r->replicas = get_i32(st, "replicas", 0);
    r->ready = get_i32(st, "readyReplicas", 0);
    r->available = get_i32(st, "availableReplicas", 0);
    int64_t v = deploy__ann_num(ann, DEPLOY_ANN_DESIRED);
    r->desired = v > INT32_MAX ? -1 : (int32_t)v;
    v = deploy__ann_num(ann, DEPLOY_ANN_MAX);
    r->max = v > INT32_MAX ? -1 : (int32_t)v;
    r->deleting = json_object_get(md, "deletionTimestamp") != NULL;
    r->stale = json_integer_value(json_object_get(md, "generation")) >
               json_integer_value(json_object_get(st, "observedGeneration"));
    r->target = r->spec;
}

/* Add RS obj (a reference the sync takes over) to s->rs. */
static int rs_add(deploy_sync_t *s, json_t *obj)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        deploy_rs_t *rs = realloc(s->rs, cap * sizeof *rs);
        if (!rs) {
            json_decref(obj);
            return KP_ENOMEM;
        }
        s->rs = rs;
        s->cap = cap;
    }
    deploy_rs_t *r = &s->rs[s->n++];
    r->obj = NULL;
    rs_fill(r, obj);
    return 0;
}

/* Sort s->rs and find s->newi again (they move). */
static void rs_sort(deploy_sync_t *s)
{
    const json_t *new_obj = s->newi >= 0 ? s->rs[s->newi].obj : NULL;
    deploy__sort(s->rs, s->n);
    s->newi = -1;
    for (size_t i = 0; i < s->n && new_obj; i++)
        if (s->rs[i].obj == new_obj) s->newi = (int)i;
}

static void sync_free(deploy_sync_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        json_decref(s->rs[i].obj);
    free(s->rs);
    json_decref(s->d);
    json_decref(s->evref);
}

static void sync_key(const deploy_sync_t *s, char *key, size_t n)
{
    snprintf(key, n, "%s/%s", s->ns, s->name);
}

/* The involvedObject of events about the Deployment. */
static const json_t *evref(deploy_sync_t *s)
{
    if (!s->evref) {
        const json_t *md = meta(s->d);
        s->evref = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s}}", "apiVersion", "apps/v1", "kind",
                             "Deployment", "metadata", "name", s->name, "namespace", s->ns, "uid",
                             get_str(md, "uid"), "resourceVersion", get_str(md, "resourceVersion"));
    }
    return s->evref ? s->evref : s->d;
}

/* A JSON object {"metadata": {"resourceVersion": rv}} to build a patch on. */
static json_t *patch_base(const json_t *obj)
{
    return json_pack("{s:{s:s}}", "metadata", "resourceVersion",
                     get_str(meta(obj), "resourceVersion"));
}

/* ---- writes to the Deployment ---- */

/* Write st (stolen) as the Deployment's status unless it is what it has. */
static int write_status(deploy_sync_t *s, json_t *st)
{
    if (!st) return KP_ENOMEM;
    const json_t *cur = status(s->d);
    if (cur ? json_equal(cur, st) : !json_object_size(st)) {
        json_decref(st);
        return 0;
    }
    json_object_set_new(s->d, "status", st);
    json_t *out = NULL;
    int rc = kc_update(ctrl_client(s->ctl->c), &kc_deployments, s->ns, s->d, "status", &out, NULL);
    if (rc) {
        log_debug(COMP, "%s/%s: status: %s", s->ns, s->name, err_str(rc));
        return rc;
    }
    json_decref(s->d);
    s->d = out;
    return 0;
}

/* A copy of the Deployment's status to edit. */
static json_t *status_copy(const deploy_sync_t *s)
{
    const json_t *st = status(s->d);
    return json_is_object(st) ? json_deep_copy(st) : json_object();
}

/* deployment.kubernetes.io/revision on the Deployment = rev. */
static int set_revision(deploy_sync_t *s, int64_t rev)
{
    const json_t *ann = json_object_get(meta(s->d), "annotations");
    if (rev <= 0 || deploy__ann_num(ann, DEPLOY_ANN_REVISION) == rev) return 0;
    json_t *patch = patch_base(s->d), *out = NULL;
    json_t *pann = patch ? child(child(patch, "metadata"), "annotations") : NULL;
    if (!pann) {
        json_decref(patch);
        return KP_ENOMEM;
    }
    deploy__set_num(pann, DEPLOY_ANN_REVISION, rev);
    int rc = ctrl_update_merged(ctrl_client(s->ctl->c), &kc_deployments, s->d, NULL, patch, &out);
    json_decref(patch);
    if (rc) return rc;
    json_decref(s->d);
    s->d = out;
    return 0;
}

/* ---- writes to ReplicaSets ---- */

/* The max-replicas annotation: replicas + maxSurge. */
static int32_t max_replicas(const deploy_params_t *p)
{
    int64_t m = (int64_t)p->replicas + p->max_surge;
    return m > INT32_MAX ? INT32_MAX : (int32_t)m;
}

/* Merge-patch s->rs[i] with patch (borrowed); its answer replaces it. */
static int patch_rs(deploy_sync_t *s, size_t i, const json_t *patch)
{
    json_t *out = NULL;
    int rc = kc_patch(ctrl_client(s->ctl->c), &kc_replicasets, s->ns, s->rs[i].name, NULL,
                      KC_PATCH_MERGE, patch, NULL, &out, NULL);
    if (rc) {
        log_debug(COMP, "%s/%s: patch replica set %s: %s", s->ns, s->name, s->rs[i].name,
                  err_str(rc));
        return rc;
    }
    /* The decisions stay (a patch of annotations carries none out). */
    int32_t target = s->rs[i].target, terminating = s->rs[i].terminating;
    int touch = s->rs[i].touch, remove = s->rs[i].remove;
    rs_fill(&s->rs[i], out);
    s->rs[i].terminating = terminating;
    s->rs[i].target = target;
    s->rs[i].touch = touch;
    s->rs[i].remove = remove;
    return 0;
}

int deploy__apply(deploy_sync_t *s)
{
    kc_client_t *cl = ctrl_client(s->ctl->c);
    int32_t desired = s->p.replicas, max = max_replicas(&s->p);
    for (size_t i = 0; i < s->n; i++) {
        deploy_rs_t *r = &s->rs[i];
        int rc;
        if (r->remove) {
            log_info(COMP, "%s/%s: deleting old replica set %s", s->ns, s->name, r->name);
            rc = kc_delete(cl, &kc_replicasets, s->ns, r->name, NULL, NULL);
            if (rc && rc != KP_ENOTFOUND) return rc;
            r->remove = 0;
            continue;
        }
        int resize = r->target != r->spec;
        int reannotate = (resize || r->touch) && (r->desired != desired || r->max != max);
        r->touch = 0;
        if (!resize && !reannotate) continue;
        json_t *patch = patch_base(r->obj);
        json_t *ann = patch ? child(child(patch, "metadata"), "annotations") : NULL;
        json_t *sp = patch ? child(patch, "spec") : NULL;
        if (!ann || !sp) {
            json_decref(patch);
            return KP_ENOMEM;
        }
        deploy__set_num(ann, DEPLOY_ANN_DESIRED, desired);
        deploy__set_num(ann, DEPLOY_ANN_MAX, max);
        json_object_set_new(sp, "replicas", json_integer(r->target));
        int32_t from = r->spec, to = r->target;
        char name[254];
        snprintf(name, sizeof name, "%s", r->name);
        rc = patch_rs(s, i, patch);
        json_decref(patch);
        if (rc) return rc;
        if (resize)
            kc_event(ctrl_recorder(s->ctl->c), evref(s), "Normal", "ScalingReplicaSet",
                     "Scaled %s replica set %s from %d to %d", to > from ? "up" : "down", name,
                     (int)from, (int)to);
    }
    return 0;
}

/* ---- the new ReplicaSet ---- */

/* Kubernetes' getNewReplicaSet for an existing one: the Deployment's
 * revision, then the RS's revision, copied annotations and minReadySeconds,
 * and a FoundNewReplicaSet condition if there is no Progressing one. */
static int find_new(deploy_sync_t *s)
{
    const json_t *tmpl = json_object_get(spec(s->d), "template");
    s->newi = deploy__find_new(tmpl, s->rs, s->n);
    if (s->newi < 0) return 0;
    deploy_rs_t *r = &s->rs[s->newi];
    int64_t rev = deploy__max_revision(s->rs, s->n, s->newi) + 1;
    const json_t *rs_ann = json_object_get(meta(r->obj), "annotations");
    json_t *ann = json_is_object(rs_ann) ? json_deep_copy(rs_ann) : json_object();
    if (!ann) return KP_ENOMEM;
    int changed =
        deploy__rs_annotations(ann, json_object_get(meta(s->d), "annotations"), rev, 1, 0, 0);
    int mrs = get_i32(spec(r->obj), "minReadySeconds", 0) != s->p.min_ready_s;
    /* The Deployment's revision first: its resourceVersion precondition
     * proves the template we matched is current, so a stale cache can never
     * renumber an old ReplicaSet (a rollback that did not happen). */
    int rc = set_revision(s, deploy__ann_num(ann, DEPLOY_ANN_REVISION));
    if (!rc && (changed || mrs)) {
        json_t *patch = patch_base(r->obj);
        if (!patch || json_object_set(child(patch, "metadata"), "annotations", ann) ||
            json_object_set_new(child(patch, "spec"), "minReadySeconds",
                                json_integer(s->p.min_ready_s)))
            rc = KP_ENOMEM;
        if (!rc) rc = patch_rs(s, (size_t)s->newi, patch);
        json_decref(patch);
    }
    json_decref(ann);
    if (rc) return rc;
    if (s->p.deadline_s >= 0 && !deploy__condition_get(status(s->d), "Progressing")) {
        char msg[600];
        snprintf(msg, sizeof msg, "Found new replica set \"%s\"", s->rs[s->newi].name);
        json_t *st = status_copy(s);
        if (st)
            deploy__condition_set(
                st, deploy__condition("Progressing", "True", DEPLOY_R_FOUND, msg, s->now_str));
        rc = write_status(s, st);
    }
    return rc;
}

/* The ReplicaSet the Deployment's template makes, ready to POST. */
static json_t *new_rs_object(deploy_sync_t *s, const char *hash, int32_t replicas, int64_t rev)
{
    const json_t *dsp = spec(s->d);
    json_t *tmpl = json_deep_copy(json_object_get(dsp, "template"));
    json_t *sel = json_deep_copy(json_object_get(dsp, "selector"));
    json_t *ann = json_object();
    json_t *rs = NULL;
    if (!tmpl || !sel || !ann) goto fail;
    json_t *labels = child(child(tmpl, "metadata"), "labels");
    json_t *ml = child(sel, "matchLabels");
    if (!labels || !ml || json_object_set_new(labels, DEPLOY_HASH_LABEL, json_string(hash)) ||
        json_object_set_new(ml, DEPLOY_HASH_LABEL, json_string(hash)))
        goto fail;
    deploy__rs_annotations(ann, json_object_get(meta(s->d), "annotations"), rev, 0, s->p.replicas,
                           max_replicas(&s->p));
    char name[300];
    snprintf(name, sizeof name, "%s-%s", s->name, hash);
    rs = json_pack("{s:s, s:s, s:{s:s, s:s, s:O, s:O, s:[o]}, s:{s:i, s:i, s:O, s:O}}",
                   "apiVersion", "apps/v1", "kind", "ReplicaSet", "metadata", "name", name,
                   "namespace", s->ns, "labels", labels, "annotations", ann, "ownerReferences",
                   ctrl_controller_ref(s->d, "apps/v1", "Deployment"), "spec", "replicas",
                   (int)replicas, "minReadySeconds", (int)s->p.min_ready_s, "selector", sel,
                   "template", tmpl);
fail:
    json_decref(tmpl);
    json_decref(sel);
    json_decref(ann);
    return rs;
}

/* After a create failed with AlreadyExists: is the RS of that name ours
 * with our template (our cache is behind)? *out gets it if so. */
static int existing_is_ours(deploy_sync_t *s, const char *name, json_t **out)
{
    *out = NULL;
    json_t *rs = NULL;
    if (kc_get(ctrl_client(s->ctl->c), &kc_replicasets, s->ns, name, &rs)) return 0;
    const char *uid = ctrl_controller_uid(rs);
    if (uid && !strcmp(uid, get_str(meta(s->d), "uid")) &&
        deploy__template_equal(json_object_get(spec(rs), "template"),
                               json_object_get(spec(s->d), "template"))) {
        *out = rs;
        return 1;
    }
    json_decref(rs);
    return 0;
}

int deploy__ensure_new(deploy_sync_t *s)
{
    if (s->newi >= 0) return 0;
    int64_t rev = deploy__max_revision(s->rs, s->n, -1) + 1;
    const json_t *cc = json_object_get(status(s->d), "collisionCount");
    int64_t collisions = json_is_integer(cc) ? json_integer_value(cc) : -1;
    char hash[DEPLOY_HASH_MAX], msg[800];
    int rc = deploy__hash(json_object_get(spec(s->d), "template"), collisions, hash);
    if (rc) return rc;
    int32_t replicas = deploy__new_replicas(&s->p, s->rs, s->n, -1);
    json_t *obj = new_rs_object(s, hash, replicas, rev);
    if (!obj) return KP_ENOMEM;
    const char *name = get_str(meta(obj), "name");
    json_t *out = NULL;
    int exists = 0;
    rc = kc_create(ctrl_client(s->ctl->c), &kc_replicasets, s->ns, obj, &out, NULL);
    if (rc == KP_EEXIST && existing_is_ours(s, name, &out)) {
        exists = 1;
        rc = 0;
    } else if (rc == KP_EEXIST) {
        /* Another template has this name: change the hash and come back. */
        log_info(COMP, "%s/%s: hash collision on %s; collisionCount %" PRId64, s->ns, s->name, name,
                 collisions + 1 > 0 ? collisions + 1 : 1);
        json_t *st = status_copy(s);
        if (st)
            json_object_set_new(st, "collisionCount",
                                json_integer(collisions < 0 ? 1 : collisions + 1));
        int wrc = write_status(s, st);
        json_decref(obj);
        return wrc ? wrc : KP_EEXIST;
    } else if (rc) {
        snprintf(msg, sizeof msg, "Failed to create new replica set \"%s\": %s", name, err_str(rc));
        if (s->p.deadline_s >= 0) {
            json_t *st = status_copy(s);
            if (st)
                deploy__condition_set(st, deploy__condition("Progressing", "False",
                                                            DEPLOY_R_CREATEFAIL, msg, s->now_str));
            write_status(s, st); /* best effort: rc is what we report */
        }
        kc_event(ctrl_recorder(s->ctl->c), evref(s), "Warning", "FailedCreate", "%s", msg);
        json_decref(obj);
        return rc;
    }
    json_decref(obj);
    if ((rc = rs_add(s, out))) return rc;
    s->newi = (int)s->n - 1;
    rs_sort(s);
    deploy_rs_t *r = &s->rs[s->newi];
    if (!exists && r->spec > 0)
        kc_event(ctrl_recorder(s->ctl->c), evref(s), "Normal", "ScalingReplicaSet",
                 "Scaled up replica set %s from 0 to %d", r->name, (int)r->spec);
    if ((rc = set_revision(s, r->revision))) return rc;
    if (!exists && s->p.deadline_s >= 0) {
        snprintf(msg, sizeof msg, "Created new replica set \"%s\"", s->rs[s->newi].name);
        json_t *st = status_copy(s);
        if (st)
            deploy__condition_set(
                st, deploy__condition("Progressing", "True", DEPLOY_R_CREATED, msg, s->now_str));
        rc = write_status(s, st);
    }
    return rc;
}

/* ---- status ---- */

int deploy__rollout_status(deploy_sync_t *s)
{
    json_t *st = deploy__status_calc(s->d, &s->p, s->rs, s->n, s->newi, s->now_str);
    if (!st) return KP_ENOMEM;
    deploy__rollout_conditions(s->d, &s->p, st, s->rs, s->n, s->newi, s->now);
    const json_t *cur = status(s->d);
    if (cur && json_equal(cur, st)) {
        int64_t ms = deploy__requeue_ms(&s->p, s->d, st, s->now);
        json_decref(st);
        if (ms >= 0) {
            char key[KEY_MAX];
            sync_key(s, key, sizeof key);
            ctrl_enqueue_after(s->ctl->c, key, ms > INT_MAX ? INT_MAX : (int)ms);
        }
        return 0;
    }
    return write_status(s, st);
}

static int status_only(deploy_sync_t *s)
{
    return write_status(s, deploy__status_calc(s->d, &s->p, s->rs, s->n, s->newi, s->now_str));
}

int deploy__old_pods_running(deploy_sync_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        if ((int)i != s->newi && s->rs[i].replicas > 0) return 1;
    int running = 0;
    for (size_t i = 0; i < s->n && !running; i++) {
        if ((int)i == s->newi) continue;
        json_t **pods = NULL;
        size_t np = 0;
        if (kc_informer_list(s->ctl->pods, "controller", get_str(meta(s->rs[i].obj), "uid"), &pods,
                             &np))
            return 1; /* cannot tell: assume they run */
        for (size_t k = 0; k < np && !running; k++) {
            const char *phase = get_str(status(pods[k]), "phase");
            running = strcmp(phase, "Succeeded") && strcmp(phase, "Failed");
        }
        kc_objs_free(pods, np);
    }
    return running;
}

/* How many pods of each RS are being deleted but still run: they hold
 * surge room (deploy_params_t.count_terminating). */
static int count_terminating(deploy_sync_t *s)
{
    for (size_t i = 0; i < s->n; i++) {
        json_t **pods = NULL;
        size_t np = 0;
        int rc = kc_informer_list(s->ctl->pods, "controller", get_str(meta(s->rs[i].obj), "uid"),
                                  &pods, &np);
        if (rc) return rc;
        int32_t t = 0;
        for (size_t k = 0; k < np; k++) {
            const char *phase = get_str(status(pods[k]), "phase");
            if (json_object_get(meta(pods[k]), "deletionTimestamp") && strcmp(phase, "Succeeded") &&
                strcmp(phase, "Failed"))
                t++;
        }
        s->rs[i].terminating = t;
        kc_objs_free(pods, np);
    }
    return 0;
}

/* ---- adoption ---- */

/* Kubernetes re-reads the Deployment before adopting: a Deployment being
 * deleted (or replaced under the same name) must not take new children. */
static int can_adopt(deploy_sync_t *s, int *checked, int *ok)
{
    if (*checked) return 0;
    json_t *fresh = NULL;
    int rc = kc_get(ctrl_client(s->ctl->c), &kc_deployments, s->ns, s->name, &fresh);
    if (rc == KP_ENOTFOUND) {
        *checked = 1;
        *ok = 0;
        return 0;
    }
    if (rc) return rc;
    *checked = 1;
    *ok = !strcmp(get_str(meta(fresh), "uid"), get_str(meta(s->d), "uid")) &&
          !json_object_get(meta(fresh), "deletionTimestamp");
    json_decref(fresh);
    return 0;
}

/* Strategic-merge-patch rs's ownerReferences (merged by uid): add ref, or
 * delete the one with uid `drop`. *out gets the answer. */
static int patch_owner(deploy_sync_t *s, const json_t *rs, json_t *ref, const char *drop,
                       json_t **out)
{
    json_t *item = ref ? ref : json_pack("{s:s, s:s}", "$patch", "delete", "uid", drop);
    json_t *patch = json_pack("{s:{s:[o], s:s}}", "metadata", "ownerReferences", item, "uid",
                              get_str(meta(rs), "uid"));
    if (!patch) return KP_ENOMEM;
    int rc = kc_patch(ctrl_client(s->ctl->c), &kc_replicasets, s->ns, get_str(meta(rs), "name"),
                      NULL, KC_PATCH_STRATEGIC, patch, NULL, out, NULL);
    json_decref(patch);
    return rc;
}

/* Collect the ReplicaSets this Deployment controls into s->rs, adopting
 * matching orphans and releasing owned ones that no longer match. */
static int claim(deploy_sync_t *s)
{
    json_t **sets = NULL;
    size_t n = 0;
    int rc = kc_informer_list(s->ctl->sets, "namespace", s->ns, &sets, &n);
    if (rc) return rc;
    const json_t *sel = json_object_get(spec(s->d), "selector");
    const char *uid = get_str(meta(s->d), "uid");
    int deleting = json_object_get(meta(s->d), "deletionTimestamp") != NULL;
    int checked = 0, adopt_ok = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        json_t *rs = sets[i], *out = NULL;
        const char *owner = ctrl_controller_uid(rs);
        int match = ctrl_selector_matches(sel, ctrl_labels(rs));
        int rs_deleting = json_object_get(meta(rs), "deletionTimestamp") != NULL;
        if (owner) {
            if (strcmp(owner, uid)) continue;
            if (match) {
                rc = rs_add(s, json_incref(rs));
            } else if (!rs_deleting) {
                log_info(COMP, "%s/%s: releasing replica set %s", s->ns, s->name,
                         get_str(meta(rs), "name"));
                rc = patch_owner(s, rs, NULL, uid, NULL);
                if (rc == KP_ENOTFOUND) rc = 0;
            }
            continue;
        }
        if (!match || deleting || rs_deleting) continue;
        if ((rc = can_adopt(s, &checked, &adopt_ok)) || !adopt_ok) continue;
        log_info(COMP, "%s/%s: adopting replica set %s", s->ns, s->name, get_str(meta(rs), "name"));
        rc = patch_owner(s, rs, ctrl_controller_ref(s->d, "apps/v1", "Deployment"), NULL, &out);
        if (!rc)
            rc = rs_add(s, out);
        else if (rc == KP_ENOTFOUND)
            rc = 0;
    }
    kc_objs_free(sets, n);
    return rc;
}

/* ---- sync ---- */

/* Progressing Unknown while paused (and once on resume). */
static int check_paused(deploy_sync_t *s)
{
    json_t *st = status_copy(s);
    if (!st) return KP_ENOMEM;
    if (!deploy__paused_condition(&s->p, st, s->now_str)) {
        json_decref(st);
        return 0;
    }
    return write_status(s, st);
}

/* Paused, or spec.replicas changed: resize only (Kubernetes' sync()). */
static int sync_scale(deploy_sync_t *s)
{
    deploy__scale(&s->p, s->rs, s->n, s->newi);
    int rc = deploy__apply(s);
    if (!rc && s->p.paused && deploy__cleanup(&s->p, s->rs, s->n, s->newi)) rc = deploy__apply(s);
    return rc ? rc : status_only(s);
}

static int selects_everything(const json_t *sel)
{
    return json_is_object(sel) && !json_object_size(json_object_get(sel, "matchLabels")) &&
           !json_array_size(json_object_get(sel, "matchExpressions"));
}

static int deploy_sync(ctrl_t *c, void *self, const char *key)
{
    deploy_ctl_t *ctl = self;
    json_t *cached = kc_informer_get(ctl->deploys, key);
    if (!cached) return 0; /* deleted: its ReplicaSets go by garbage collection */
    deploy_sync_t s = {.ctl = ctl, .newi = -1};
    s.d = json_deep_copy(cached);
    json_decref(cached);
    if (!s.d) return KP_ENOMEM;
    (void)c;
    int rc = 0;
    snprintf(s.ns, sizeof s.ns, "%s", get_str(meta(s.d), "namespace"));
    snprintf(s.name, sizeof s.name, "%s", get_str(meta(s.d), "name"));
    s.now = (int64_t)time(NULL);
    deploy__time_str(s.now, s.now_str);
    if ((rc = deploy__params(s.d, &s.p))) {
        /* The API validates these; a bad one cannot be fixed by retrying. */
        log_warn(COMP, "%s: bad rolling update parameters", key);
        rc = 0;
        goto out;
    }
    if (selects_everything(json_object_get(spec(s.d), "selector"))) {
        kc_event(ctrl_recorder(ctl->c), evref(&s), "Warning", "SelectingAll",
                 "This deployment is selecting all pods. A non-empty selector is required.");
        json_t *st = status_copy(&s);
        if (st)
            json_object_set_new(
                st, "observedGeneration",
                json_integer(json_integer_value(json_object_get(meta(s.d), "generation"))));
        rc = write_status(&s, st);
        goto out;
    }
    if ((rc = claim(&s))) goto out;
    rs_sort(&s);
    if (!s.p.recreate && s.p.count_terminating && (rc = count_terminating(&s))) goto out;
    if (json_object_get(meta(s.d), "deletionTimestamp")) {
        s.newi = deploy__find_new(json_object_get(spec(s.d), "template"), s.rs, s.n);
        rc = status_only(&s);
        goto out;
    }
    if ((rc = check_paused(&s))) goto out;
    if ((rc = find_new(&s))) goto out;
    if (s.p.paused || deploy__is_scaling_event(&s.p, s.rs, s.n))
        rc = sync_scale(&s);
    else if (s.p.recreate)
        rc = deploy__rollout_recreate(&s);
    else
        rc = deploy__rollout_rolling(&s);
out:
    sync_free(&s);
    return rc;
}

/* ---- handlers: only enqueue ---- */

/* The cached Deployment controlling obj (kind Deployment, same uid), as a
 * reference, or NULL. */
static json_t *controlling_deployment(deploy_ctl_t *ctl, const json_t *obj)
{
    const char *uid, *kind, *name;
    if (!ctrl_owner(obj, &uid, &kind, &name) || !kind || !name || !uid ||
        strcmp(kind, "Deployment"))
        return NULL;
    char key[KEY_MAX];
    snprintf(key, sizeof key, "%s/%s", get_str(meta(obj), "namespace"), name);
    json_t *d = kc_informer_get(ctl->deploys, key);
    if (d && strcmp(get_str(meta(d), "uid"), uid)) {
        json_decref(d);
        d = NULL;
    }
    return d;
}

static void enqueue_owner(deploy_ctl_t *ctl, const json_t *rs)
{
    json_t *d = controlling_deployment(ctl, rs);
    if (d) ctrl_enqueue_obj(ctl->c, d);
    json_decref(d);
}

/* An orphan ReplicaSet: every Deployment that might adopt it. */
static void enqueue_matching(deploy_ctl_t *ctl, const json_t *rs)
{
    json_t **ds;
    size_t n;
    if (kc_informer_list(ctl->deploys, "namespace", get_str(meta(rs), "namespace"), &ds, &n))
        return;
    for (size_t i = 0; i < n; i++) {
        const json_t *sel = json_object_get(spec(ds[i]), "selector");
        if (!selects_everything(sel) && ctrl_selector_matches(sel, ctrl_labels(rs)))
            ctrl_enqueue_obj(ctl->c, ds[i]);
    }
    kc_objs_free(ds, n);
}

static void deploy_added(void *arg, const json_t *d)
{
    ctrl_enqueue_obj(((deploy_ctl_t *)arg)->c, d);
}

static void deploy_updated(void *arg, const json_t *old, const json_t *d)
{
    (void)old;
    ctrl_enqueue_obj(((deploy_ctl_t *)arg)->c, d);
}

static void rs_deleted(void *arg, const json_t *rs)
{
    enqueue_owner(arg, rs);
}

static void rs_added(void *arg, const json_t *rs)
{
    deploy_ctl_t *ctl = arg;
    if (json_object_get(meta(rs), "deletionTimestamp"))
        rs_deleted(arg, rs);
    else if (ctrl_owner(rs, NULL, NULL, NULL))
        enqueue_owner(ctl, rs);
    else
        enqueue_matching(ctl, rs);
}

static void rs_updated(void *arg, const json_t *old, const json_t *rs)
{
    deploy_ctl_t *ctl = arg;
    if (old == rs ||
        !strcmp(get_str(meta(old), "resourceVersion"), get_str(meta(rs), "resourceVersion")))
        return; /* a resync: the Deployments resync themselves */
    const char *old_uid = ctrl_controller_uid(old), *uid = ctrl_controller_uid(rs);
    int ref_changed = (old_uid == NULL) != (uid == NULL) || (uid && strcmp(uid, old_uid));
    if (ref_changed && old_uid) enqueue_owner(ctl, old);
    if (uid) {
        enqueue_owner(ctl, rs);
        return;
    }
    const json_t *ol = ctrl_labels(old), *nl = ctrl_labels(rs);
    int labels_changed = !(ol == nl || (ol && nl && json_equal(ol, nl)));
    if (labels_changed || ref_changed) enqueue_matching(ctl, rs);
}

/* A pod of a Deployment's RS went away or finished: the Deployment may be
 * waiting for exactly that (Recreate: for the old pods to go; RollingUpdate:
 * for terminating pods to free surge room). */
static void pod_gone(deploy_ctl_t *ctl, const json_t *pod)
{
    const char *uid, *kind, *name;
    if (!ctrl_owner(pod, &uid, &kind, &name) || !kind || !name || strcmp(kind, "ReplicaSet"))
        return;
    char key[KEY_MAX];
    snprintf(key, sizeof key, "%s/%s", get_str(meta(pod), "namespace"), name);
    json_t *rs = kc_informer_get(ctl->sets, key);
    json_t *d = rs ? controlling_deployment(ctl, rs) : NULL;
    if (d) ctrl_enqueue_obj(ctl->c, d);
    json_decref(d);
    json_decref(rs);
}

static void pod_deleted(void *arg, const json_t *pod)
{
    pod_gone(arg, pod);
}

static void pod_updated(void *arg, const json_t *old, const json_t *pod)
{
    const char *was = get_str(status(old), "phase"), *is = get_str(status(pod), "phase");
    int finished = !strcmp(is, "Succeeded") || !strcmp(is, "Failed");
    if (finished && strcmp(was, is)) pod_gone(arg, pod);
}

/* ---- lifecycle ---- */

static int deploy_init(ctrl_t *c, void **self)
{
    deploy_ctl_t *ctl = calloc(1, sizeof *ctl);
    if (!ctl) return KP_ENOMEM;
    ctl->c = c;
    ctl->deploys = ctrl_informer(c, &kc_deployments);
    ctl->sets = ctrl_informer(c, &kc_replicasets);
    ctl->pods = ctrl_informer(c, &kc_pods);
    int rc = 0;
    if (!ctl->deploys || !ctl->sets || !ctl->pods) rc = KP_ENOMEM;
    kc_handlers_t dh = {
        .on_add = deploy_added, .on_update = deploy_updated, .on_delete = deploy_added, .arg = ctl};
    kc_handlers_t rh = {
        .on_add = rs_added, .on_update = rs_updated, .on_delete = rs_deleted, .arg = ctl};
    kc_handlers_t ph = {.on_update = pod_updated, .on_delete = pod_deleted, .arg = ctl};
    if (!rc) rc = kc_informer_add_handlers(ctl->deploys, &dh);
    if (!rc) rc = kc_informer_add_handlers(ctl->sets, &rh);
    if (!rc) rc = kc_informer_add_handlers(ctl->pods, &ph);
    if (rc) {
        kc_informer_t *infs[] = {ctl->deploys, ctl->sets, ctl->pods};
        for (size_t i = 0; i < 3; i++)
            if (infs[i]) kc_informer_remove_handlers(infs[i], ctl);
        free(ctl);
        return rc;
    }
    *self = ctl;
    return 0;
}

static void deploy_free(void *self)
{
    free(self);
}

const ctrl_ops_t ctrl_deployment = {
    .name = "deployment",
    .init = deploy_init,
    .sync = deploy_sync,
    .free = deploy_free,
};
