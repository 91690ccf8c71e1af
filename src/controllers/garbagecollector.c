/*
 * garbagecollector.c -- the garbage collector (Kubernetes' GC controller).
 *
 * INVARIANT: an object whose owners (by uid) are all gone does not stay; an
 * object deleted with the "orphan" finalizer leaves its dependents without
 * a reference to it before it goes; an object deleted with the
 * "foregroundDeletion" finalizer goes only after every dependent whose
 * reference to it has blockOwnerDeletion=true is gone.
 *
 * OWNS: the deletion of dependents (with a uid precondition), the
 * ownerReferences it drops from dependents (to dangling, waiting or
 * orphaning owners), and the removal of the "orphan" and
 * "foregroundDeletion" finalizers. It creates nothing.
 *
 * THE GRAPH is the informers' caches: one informer (a "monitor") per
 * resource that discovery lists in its group's preferred version with the
 * verbs list, watch and delete -- every built-in kind and every custom
 * resource -- but events, which Kubernetes' GC ignores too. Each has the
 * index "gc-owners" (the uids an object's ownerReferences name), so "the
 * dependents of uid U" is one index read per resource. A resource the
 * process watches already (another controller's informer, shared) is
 * watched through that informer; every other through a metadata informer
 * of this file's own (kc_client_metadata(): PartialObjectMetadata, as
 * Kubernetes' collector watches every resource), so that the collector
 * holds no object's contents (no Secret's data, no ConfigMap's). Those
 * objects are stamped with their resource's apiVersion and kind (stamp())
 * so that the graph reads every cached object alike.
 *
 * MONITORS FOLLOW DISCOVERY (Kubernetes' resyncMonitors): "r/tick" every
 * discovery period, "r/now" when a CustomResourceDefinition changes or an
 * ownerReference names a kind discovery serves but no monitor has, read
 * discovery again and start monitors for new resources and stop those of
 * resources no longer served.
 *
 * KEYS. "o/<res>/<ns>/<name>": look at one object (res: its index in the
 * list; ns empty for cluster-scoped). "d/<uid>": the object with that uid is
 * gone; look at each of its dependents. "r/tick", "r/now": resync monitors.
 *
 *   object sync:  deleted, "orphan"             -> drop refs from dependents,
 *                                                  then the finalizer
 *                 deleted, "foregroundDeletion" -> no blocking dependent left?
 *                                                  drop the finalizer; else
 *                                                  queue them (they go)
 *                 owners classified (gc_decide) -> keep | drop refs | delete
 *
 * An owner absent from the cache is looked up live (GET by name, uid
 * compared) before a dependent is deleted for it, as Kubernetes does: the
 * cache of the owner's resource may lag the dependent's.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/controller.h"
#include "controllers/ctrl_util.h"
#include "controllers/gc_int.h"
#include "lib/err.h"
#include "lib/log.h"

#define OWNERS_INDEX "gc-owners"
#define MAX_REFS     64  /* ownerReferences looked at per object */
#define MAX_RES      256 /* monitors started over the collector's life (slots are not reused) */
#define RESYNC_TICK  "r/tick"
#define RESYNC_NOW   "r/now"

/* One resource of the graph (a monitor). Entries are appended and never
 * move; an entry is complete before `nres` counts it, so readers take no
 * lock. */
typedef struct gc_res {
    kc_api_resource_t a; /* what discovery said (a.r points into it) */
    kc_informer_t *inf;
    int own;          /* this file's informer: it starts, stops and frees it */
    int custom;       /* served by a CRD: no strategic merge patch */
    _Atomic int dead; /* no longer served: its informer is stopped */
} gc_res_t;

typedef struct gc {
    ctrl_t *c;
    kc_client_t *meta;   /* the metadata client of the collector's own informers */
    kc_informer_t *crds; /* shared; its events resync the monitors */
    gc_res_t *res;       /* MAX_RES entries */
    _Atomic size_t nres;
    pthread_mutex_t mu; /* serialises appends and resyncs */
} gc_t;

/* ---- the pure part (gc_int.h) ---- */

gc_action_t gc_decide(const gc_owner_state_t *states, size_t n, int has_dependents)
{
    size_t solid = 0, dangling = 0, waiting = 0;
    for (size_t i = 0; i < n; i++) {
        if (states[i] == GC_OWNER_SOLID)
            solid++;
        else if (states[i] == GC_OWNER_DANGLING)
            dangling++;
        else
            waiting++;
    }
    if (!dangling && !waiting) return GC_KEEP;
    if (solid) return GC_REMOVE_REFS;
    if (waiting && has_dependents) return GC_DELETE_FG;
    return GC_DELETE;
}

int gc_has_finalizer(const json_t *obj, const char *fin)
{
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "finalizers"), i, f) {
        if (json_is_string(f) && !strcmp(json_string_value(f), fin)) return 1;
    }
    return 0;
}

static int deleting(const json_t *obj)
{
    return json_object_get(json_object_get(obj, "metadata"), "deletionTimestamp") != NULL;
}

int gc_deleting_dependents(const json_t *obj)
{
    return deleting(obj) && gc_has_finalizer(obj, GC_FIN_FOREGROUND);
}

const char *gc_policy_of(const json_t *obj)
{
    if (gc_has_finalizer(obj, GC_FIN_ORPHAN)) return "Orphan";
    if (gc_has_finalizer(obj, GC_FIN_FOREGROUND)) return "Foreground";
    return "Background";
}

static const json_t *refs_of(const json_t *obj)
{
    return json_object_get(json_object_get(obj, "metadata"), "ownerReferences");
}

int gc_blocks(const json_t *dep, const char *owner_uid)
{
    size_t i;
    json_t *ref;
    json_array_foreach(refs_of(dep), i, ref) {
        const char *uid = json_string_value(json_object_get(ref, "uid"));
        if (uid && !strcmp(uid, owner_uid) &&
            json_is_true(json_object_get(ref, "blockOwnerDeletion")))
            return 1;
    }
    return 0;
}

size_t gc_index_owners(const json_t *obj, char vals[][KC_INDEX_VALUE_MAX], size_t max)
{
    size_t n = 0, i;
    json_t *ref;
    json_array_foreach(refs_of(obj), i, ref) {
        const char *uid = json_string_value(json_object_get(ref, "uid"));
        if (!uid || !*uid || n == max) continue;
        snprintf(vals[n++], KC_INDEX_VALUE_MAX, "%s", uid);
    }
    return n;
}

static json_t *refs_patch(const char *dep_uid, const char *const *uids, size_t n, int unblock)
{
    json_t *refs = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *e = unblock ? json_pack("{s:s, s:b}", "uid", uids[i], "blockOwnerDeletion", 0)
                            : json_pack("{s:s, s:s}", "$patch", "delete", "uid", uids[i]);
        json_array_append_new(refs, e);
    }
    return json_pack("{s:{s:o, s:s}}", "metadata", "ownerReferences", refs, "uid", dep_uid);
}

json_t *gc_patch_drop_refs(const char *dep_uid, const char *const *uids, size_t n)
{
    return refs_patch(dep_uid, uids, n, 0);
}

json_t *gc_patch_unblock(const char *dep_uid, const char *const *uids, size_t n)
{
    return refs_patch(dep_uid, uids, n, 1);
}

json_t *gc_patch_drop_finalizer(const json_t *obj, const char *fin)
{
    json_t *left = json_array();
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "finalizers"), i, f) {
        if (!json_is_string(f) || strcmp(json_string_value(f), fin)) json_array_append(left, f);
    }
    if (!json_array_size(left)) {
        json_decref(left);
        left = json_null();
    }
    return json_pack("{s:{s:o, s:s}}", "metadata", "finalizers", left, "resourceVersion",
                     ctrl_meta_str(obj, "resourceVersion"));
}

/* ---- resources and keys ---- */

static size_t nres(gc_t *g)
{
    return atomic_load(&g->nres);
}

/* The index of the monitor of (apiVersion, kind), or -1. An apiVersion
 * that is not the watched version of its group finds the group's monitor of
 * that kind (the uid, not the version, names an owner). */
static int res_of(gc_t *g, const char *api_version, const char *kind)
{
    if (!api_version || !kind) return -1;
    const char *slash = strchr(api_version, '/');
    size_t glen = slash ? (size_t)(slash - api_version) : 0;
    size_t n = nres(g);
    int same_group = -1;
    for (size_t i = 0; i < n; i++) {
        const gc_res_t *e = &g->res[i];
        if (atomic_load(&e->dead) || strcmp(e->a.kind, kind)) continue;
        if (!strcmp(e->a.api_version, api_version)) return (int)i;
        if (strlen(e->a.group) == glen && !strncmp(e->a.group, api_version, glen))
            same_group = (int)i;
    }
    return same_group;
}

static int res_of_obj(gc_t *g, const json_t *obj)
{
    return res_of(g, json_string_value(json_object_get(obj, "apiVersion")),
                  json_string_value(json_object_get(obj, "kind")));
}

static void enqueue_obj(gc_t *g, int res, const char *ns, const char *name)
{
    if (res < 0 || !name || !*name) return;
    char key[600];
    if (snprintf(key, sizeof key, "o/%d/%s/%s", res, g->res[res].a.r.namespaced ? ns : "", name) <
        (int)sizeof key)
        ctrl_enqueue(g->c, key);
}

static void enqueue_self(gc_t *g, const json_t *obj)
{
    enqueue_obj(g, res_of_obj(g, obj), ctrl_meta_str(obj, "namespace"), ctrl_meta_str(obj, "name"));
}

/* Queue the owners obj's refs name (in obj's namespace when namespaced). */
static void enqueue_owners(gc_t *g, const json_t *obj)
{
    size_t i;
    json_t *ref;
    json_array_foreach(refs_of(obj), i, ref) {
        int r = res_of(g, json_string_value(json_object_get(ref, "apiVersion")),
                       json_string_value(json_object_get(ref, "kind")));
        enqueue_obj(g, r, ctrl_meta_str(obj, "namespace"),
                    json_string_value(json_object_get(ref, "name")));
    }
}

/* ---- handlers: only queue keys ---- */

static int wants_gc(const json_t *obj)
{
    return deleting(obj) &&
           (gc_has_finalizer(obj, GC_FIN_ORPHAN) || gc_has_finalizer(obj, GC_FIN_FOREGROUND));
}

static int is_crd(const json_t *obj)
{
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    return kind && !strcmp(kind, "CustomResourceDefinition");
}

static void on_add(void *arg, const json_t *obj)
{
    gc_t *g = arg;
    if (is_crd(obj)) ctrl_enqueue(g->c, RESYNC_NOW);
    if (json_array_size(refs_of(obj)) || wants_gc(obj)) enqueue_self(g, obj);
}

static void on_update(void *arg, const json_t *old, const json_t *obj)
{
    gc_t *g = arg;
    if (old == obj) { /* resync: retry what waits on the collector */
        if (wants_gc(obj)) enqueue_self(g, obj);
        return;
    }
    if (is_crd(obj)) ctrl_enqueue(g->c, RESYNC_NOW);
    int refs_changed = !json_equal((json_t *)refs_of(old), (json_t *)refs_of(obj));
    const json_t *ofin = json_object_get(json_object_get(old, "metadata"), "finalizers");
    const json_t *nfin = json_object_get(json_object_get(obj, "metadata"), "finalizers");
    if (refs_changed || wants_gc(obj) != wants_gc(old) ||
        (wants_gc(obj) && !json_equal((json_t *)ofin, (json_t *)nfin)))
        enqueue_self(g, obj);
    if (refs_changed) enqueue_owners(g, old); /* a foreground owner may wait on this one */
}

static void on_delete(void *arg, const json_t *obj)
{
    gc_t *g = arg;
    const char *uid = ctrl_meta_str(obj, "uid");
    char key[128];
    if (is_crd(obj)) ctrl_enqueue(g->c, RESYNC_NOW);
    if (*uid && snprintf(key, sizeof key, "d/%s", uid) < (int)sizeof key) ctrl_enqueue(g->c, key);
    enqueue_owners(g, obj);
}

static void gc_free(void *self)
{
    gc_t *g = self;
    size_t n = nres(g);
    for (size_t i = 0; i < n; i++)
        if (g->res[i].own) kc_informer_free(g->res[i].inf);
    kc_client_free(g->meta); /* after its informers */
    pthread_mutex_destroy(&g->mu);
    free(g->res);
    free(g);
}

/* Does the collector watch resources like e (Kubernetes'
 * GetDeletableResources less its ignored resources)? */
static int deletable(const kc_api_resource_t *e)
{
    const unsigned need = KC_VERB_LIST | KC_VERB_WATCH | KC_VERB_DELETE;
    if (!e->preferred || (e->verbs & need) != need) return 0;
    return strcmp(e->resource, "events") ||
           (*e->group && strcmp(e->group, "events.k8s.io")); /* ignored, as Kubernetes */
}

/* Is resource e served by a CustomResourceDefinition (in the CRD cache)? */
static int is_custom(gc_t *g, const kc_api_resource_t *e)
{
    if (!*e->group) return 0;
    char name[600];
    snprintf(name, sizeof name, "%s.%s", e->resource, e->group);
    json_t *crd = kc_informer_get(g->crds, name);
    json_decref(crd);
    return crd != NULL;
}

/* A metadata informer's transform: the object (a PartialObjectMetadata)
 * as its monitor's resource (arg), without managedFields. */
static void stamp(void *arg, json_t *obj)
{
    const gc_res_t *e = arg;
    json_object_set_new(obj, "apiVersion", json_string(e->a.api_version));
    json_object_set_new(obj, "kind", json_string(e->a.kind));
    kc_transform_strip_managed_fields(NULL, obj);
}

/* Start a monitor for e. During init, a resource the process shares an
 * informer of takes it (the manager waits for its cache); any other gets a
 * metadata informer of its own, started now. Caller holds g->mu (or is
 * init). */
static int add_monitor(gc_t *g, const kc_api_resource_t *a, int in_init)
{
    size_t n = nres(g);
    if (n == MAX_RES) return KP_ETOOLARGE;
    gc_res_t *e = &g->res[n];
    memset(e, 0, sizeof *e);
    e->a = *a;
    e->a.r = (kc_resource_t){e->a.group, e->a.version, e->a.resource, e->a.kind,
                             a->r.namespaced};
    e->custom = is_custom(g, a);
    kc_handlers_t h = {.on_add = on_add, .on_update = on_update, .on_delete = on_delete, .arg = g};
    const kc_resource_t *builtin = in_init ? kc_resource_builtin(a->group, a->version, a->resource)
                                           : NULL;
    kc_informer_t *shared = builtin ? ctrl_informer_if_shared(g->c, builtin) : NULL;
    int rc;
    if (shared) {
        e->inf = shared;
        rc = kc_informer_add_index(e->inf, OWNERS_INDEX, gc_index_owners);
        if (rc == KP_EEXIST) rc = 0;
        /* Counted before handlers are added: init's unwinding removes them
         * from every counted informer. */
        atomic_store(&g->nres, n + 1);
        if (!rc) rc = kc_informer_add_handlers(e->inf, &h);
        return rc;
    }
    e->own = 1;
    rc = kc_informer_new(g->meta, &e->a.r, NULL, NULL, NULL, 0, &e->inf);
    if (!rc) kc_informer_set_transform(e->inf, stamp, e);
    if (!rc) rc = kc_informer_add_index(e->inf, OWNERS_INDEX, gc_index_owners);
    if (!rc) rc = kc_informer_add_handlers(e->inf, &h);
    if (rc) {
        kc_informer_free(e->inf);
        e->inf = NULL;
        return rc;
    }
    /* Counted before it starts: its first events must find it (res_of). */
    atomic_store(&g->nres, n + 1);
    if ((rc = kc_informer_start(e->inf))) {
        atomic_store(&e->dead, 1); /* freed with the collector */
        return rc;
    }
    log_info("garbagecollector", "monitoring %s/%s", e->a.api_version, e->a.resource);
    return 0;
}

/* Is a live monitor of (group, version, resource) there? */
static int monitored(gc_t *g, const kc_api_resource_t *a)
{
    size_t n = nres(g);
    for (size_t i = 0; i < n; i++) {
        const gc_res_t *e = &g->res[i];
        if (!atomic_load(&e->dead) && !strcmp(e->a.group, a->group) &&
            !strcmp(e->a.version, a->version) && !strcmp(e->a.resource, a->resource) &&
            !strcmp(e->a.kind, a->kind) && e->a.r.namespaced == a->r.namespaced)
            return 1;
    }
    return 0;
}

/* Bring the monitors in line with discovery map m: start one for each
 * deletable resource without one; stop those of resources m does not
 * list (their slots stay, dead). */
static int sync_monitors(gc_t *g, const kc_restmap_t *m, int in_init)
{
    int rc = 0;
    size_t added = 0;
    for (size_t i = 0; i < kc_restmap_count(m); i++) {
        const kc_api_resource_t *a = kc_restmap_at(m, i);
        if (!deletable(a) || monitored(g, a)) continue;
        int arc = add_monitor(g, a, in_init);
        if (arc) {
            log_warn("garbagecollector", "monitoring %s/%s: %s", a->api_version, a->resource,
                     err_str(arc));
            if (!rc) rc = arc;
            if (in_init && arc != KP_ETOOLARGE) return rc;
        } else {
            added++;
        }
    }
    size_t n = nres(g);
    for (size_t i = 0; i < n && !in_init; i++) {
        gc_res_t *e = &g->res[i];
        if (!e->own || atomic_load(&e->dead)) continue;
        const kc_api_resource_t *a =
            kc_restmap_for_resource(m, e->a.group, e->a.version, e->a.resource);
        if (a && deletable(a) && !strcmp(a->kind, e->a.kind)) continue;
        atomic_store(&e->dead, 1); /* its informer stops; freed with the collector */
        kc_informer_stop(e->inf);
        log_info("garbagecollector", "no longer monitoring %s/%s", e->a.api_version,
                 e->a.resource);
    }
    if (added && !in_init) log_info("garbagecollector", "%zu new monitors", added);
    return rc;
}

static int resync(gc_t *g)
{
    kc_restmap_t *m;
    int rc = kc_discovery_map(ctrl_discovery(g->c), 0, &m);
    if (rc) return rc;
    pthread_mutex_lock(&g->mu);
    rc = sync_monitors(g, m, 0);
    pthread_mutex_unlock(&g->mu);
    kc_restmap_unref(m);
    return rc;
}

static int gc_init(ctrl_t *c, void **self)
{
    gc_t *g = calloc(1, sizeof *g);
    if (!g || !(g->res = calloc(MAX_RES, sizeof *g->res))) {
        free(g);
        return KP_ENOMEM;
    }
    g->c = c;
    pthread_mutex_init(&g->mu, NULL);
    g->crds = ctrl_informer(c, &kc_crds);
    if (!g->crds || kc_client_metadata(ctrl_client(c), &g->meta)) {
        gc_free(g);
        return KP_ENOMEM;
    }
    kc_restmap_t *m = NULL;
    int rc = kc_discovery_map(ctrl_discovery(c), -1, &m);
    if (rc) { /* the monitors come with the first resync that reads it */
        log_warn("garbagecollector", "discovery: %s; resyncing later", err_str(rc));
        rc = 0;
    } else {
        rc = sync_monitors(g, m, 1);
        if (rc == KP_ETOOLARGE) rc = 0; /* logged; the others work */
    }
    kc_restmap_unref(m);
    if (!rc) {
        /* CRD events only ask for a resync (no handler of the collector's
         * own unless the CRDs are monitored already). */
        kc_handlers_t h = {.on_add = on_add, .on_update = on_update, .on_delete = on_delete,
                           .arg = g};
        int watched = 0;
        for (size_t k = 0; k < nres(g); k++)
            if (g->res[k].inf == g->crds) watched = 1;
        if (!watched) rc = kc_informer_add_handlers(g->crds, &h);
    }
    if (rc) {
        for (size_t k = 0; k < nres(g); k++)
            if (g->res[k].inf && !g->res[k].own)
                kc_informer_remove_handlers(g->res[k].inf, g);
        kc_informer_remove_handlers(g->crds, g);
        gc_free(g);
        return rc;
    }
    ctrl_enqueue_after(c, RESYNC_TICK, ctrl_config(c)->discovery_period_ms > 0
                                           ? ctrl_config(c)->discovery_period_ms
                                           : 30000);
    *self = g;
    return 0;
}

/* ---- sync ---- */

/* Every cached dependent of uid: *deps (kc_objs_free) and *n. */
static int dependents(gc_t *g, const char *uid, json_t ***deps, size_t *n)
{
    *deps = NULL;
    *n = 0;
    size_t nr = nres(g);
    for (size_t i = 0; i < nr; i++) {
        if (atomic_load(&g->res[i].dead)) continue;
        json_t **objs;
        size_t k;
        int rc = kc_informer_list(g->res[i].inf, OWNERS_INDEX, uid, &objs, &k);
        if (rc) {
            kc_objs_free(*deps, *n);
            return rc;
        }
        if (!k) continue;
        json_t **all = realloc(*deps, (*n + k) * sizeof *all);
        if (!all) {
            kc_objs_free(objs, k);
            kc_objs_free(*deps, *n);
            return KP_ENOMEM;
        }
        memcpy(all + *n, objs, k * sizeof *all);
        free(objs);
        *deps = all;
        *n += k;
    }
    return 0;
}

/* Errors that mean "nothing left to do": the object is gone or is another. */
static int settled(int rc)
{
    return rc == KP_ENOTFOUND || rc == KP_ECONFLICT ? 0 : rc;
}

static int patch_obj(gc_t *g, const json_t *obj, kc_patch_type_t type, const json_t *patch)
{
    int r = res_of_obj(g, obj);
    if (r < 0) return KP_EINVAL;
    return kc_patch(ctrl_client(g->c), &g->res[r].a.r, ctrl_meta_str(obj, "namespace"),
                    ctrl_meta_str(obj, "name"), NULL, type, patch, NULL, NULL, NULL);
}

static int drop_refs(gc_t *g, const json_t *dep, const char *const *uids, size_t n, int unblock)
{
    json_t *p = unblock ? gc_patch_unblock(ctrl_meta_str(dep, "uid"), uids, n)
                        : gc_patch_drop_refs(ctrl_meta_str(dep, "uid"), uids, n);
    if (!p) return KP_ENOMEM;
    /* Custom resources take no strategic merge patch: a merge patch of the
     * refs that stay, conditional on the resourceVersion, instead. */
    int r = res_of_obj(g, dep);
    int rc;
    if (r >= 0 && g->res[r].custom) {
        json_decref(p);
        json_t *keep = json_array();
        size_t i;
        json_t *ref;
        json_array_foreach(refs_of(dep), i, ref) {
            const char *uid = json_string_value(json_object_get(ref, "uid"));
            size_t k = 0;
            while (k < n && (!uid || strcmp(uid, uids[k])))
                k++;
            if (k == n)
                json_array_append_new(keep, json_deep_copy(ref));
            else if (unblock) {
                json_t *c = json_deep_copy(ref);
                json_object_set_new(c, "blockOwnerDeletion", json_false());
                json_array_append_new(keep, c);
            }
        }
        p = json_pack("{s:{s:o, s:s}}", "metadata", "ownerReferences",
                      json_array_size(keep) ? keep : (json_decref(keep), json_null()),
                      "resourceVersion", ctrl_meta_str(dep, "resourceVersion"));
        if (!p) return KP_ENOMEM;
        rc = patch_obj(g, dep, KC_PATCH_MERGE, p);
        json_decref(p);
        return rc == KP_ECONFLICT ? rc : settled(rc); /* a newer version: look again */
    }
    rc = patch_obj(g, dep, KC_PATCH_STRATEGIC, p);
    json_decref(p);
    return settled(rc);
}
static int drop_finalizer(gc_t *g, const json_t *obj, const char *fin)
{
    json_t *p = gc_patch_drop_finalizer(obj, fin);
    if (!p) return KP_ENOMEM;
    int rc = patch_obj(g, obj, KC_PATCH_MERGE, p);
    json_decref(p);
    if (rc == KP_ECONFLICT) return rc; /* a newer version: look again */
    return settled(rc);
}

static int delete_obj(gc_t *g, int r, const json_t *obj, const char *policy)
{
    json_t *opts =
        json_pack("{s:s, s:s, s:s, s:{s:s}}", "kind", "DeleteOptions", "apiVersion", "v1",
                  "propagationPolicy", policy, "preconditions", "uid", ctrl_meta_str(obj, "uid"));
    if (!opts) return KP_ENOMEM;
    int rc = kc_delete(ctrl_client(g->c), &g->res[r].a.r, ctrl_meta_str(obj, "namespace"),
                       ctrl_meta_str(obj, "name"), opts, NULL);
    json_decref(opts);
    if (!rc)
        log_info("garbagecollector", "deleted %s %s/%s (%s)", g->res[r].a.r.kind,
                 ctrl_meta_str(obj, "namespace"), ctrl_meta_str(obj, "name"), policy);
    return settled(rc);
}

/* "orphan": no dependent keeps a reference to owner; then the finalizer goes. */
static int orphan_dependents(gc_t *g, const json_t *owner)
{
    const char *uid = ctrl_meta_str(owner, "uid");
    json_t **deps;
    size_t n;
    int rc = dependents(g, uid, &deps, &n);
    for (size_t i = 0; i < n && !rc; i++)
        rc = drop_refs(g, deps[i], &uid, 1, 0);
    kc_objs_free(deps, n);
    if (rc) return rc;
    return drop_finalizer(g, owner, GC_FIN_ORPHAN);
}

/* "foregroundDeletion": the finalizer goes once no dependent blocks. */
static int foreground(gc_t *g, const json_t *owner)
{
    const char *uid = ctrl_meta_str(owner, "uid");
    json_t **deps;
    size_t n, blocking = 0;
    int rc = dependents(g, uid, &deps, &n);
    if (rc) return rc;
    for (size_t i = 0; i < n; i++) {
        if (!gc_blocks(deps[i], uid)) continue;
        blocking++;
        if (!gc_deleting_dependents(deps[i])) enqueue_self(g, deps[i]); /* it goes next */
    }
    kc_objs_free(deps, n);
    if (blocking) return 0; /* their deletes queue this owner again */
    return drop_finalizer(g, owner, GC_FIN_FOREGROUND);
}

/* The state of the owner `ref` names for dependent `dep`. */
static int owner_state(gc_t *g, const json_t *dep, const json_t *ref, int quiet,
                       gc_owner_state_t *st)
{
    const char *av = json_string_value(json_object_get(ref, "apiVersion"));
    const char *kind = json_string_value(json_object_get(ref, "kind"));
    const char *name = json_string_value(json_object_get(ref, "name"));
    const char *uid = json_string_value(json_object_get(ref, "uid"));
    int r = res_of(g, av, kind);
    if (r < 0 && name && uid) {
        /* A kind no monitor has: perhaps new since the last resync. Ask
         * discovery (it reads again at most once a second); if it is served
         * the monitors resync and this dependent is retried after. */
        kc_restmap_t *m;
        const kc_api_resource_t *a;
        if (!kc_discovery_lookup(ctrl_discovery(g->c), av, kind, &m, &a)) {
            kc_restmap_unref(m);
            ctrl_enqueue(g->c, RESYNC_NOW);
            return KP_EBUSY; /* retried with backoff after the resync */
        }
    }
    if (r < 0 || !name || !uid) {
        log_warn("garbagecollector", "%s/%s: ownerReference to %s %s: kind not served",
                 ctrl_meta_str(dep, "namespace"), ctrl_meta_str(dep, "name"), av ? av : "?",
                 kind ? kind : "?");
        return KP_EINVAL; /* retried with backoff, as Kubernetes retries a mapping error */
    }
    const char *dns = ctrl_meta_str(dep, "namespace");
    if (g->res[r].a.r.namespaced && !*dns) {
        /* A cluster-scoped dependent cannot have a namespaced owner. */
        if (!quiet)
            kc_event(ctrl_recorder(g->c), dep, "Warning", "OwnerRefInvalidNamespace",
                     "ownerRef [%s/%s, namespace: , name: %s, uid: %s] does not exist in namespace "
                     "\"\"",
                     av, kind, name, uid);
        *st = GC_OWNER_DANGLING;
        return 0;
    }
    char key[600];
    if (g->res[r].a.r.namespaced)
        snprintf(key, sizeof key, "%s/%s", dns, name);
    else
        snprintf(key, sizeof key, "%s", name);
    json_t *owner = kc_informer_get(g->res[r].inf, key);
    if (!owner || strcmp(ctrl_meta_str(owner, "uid"), uid)) {
        json_decref(owner);
        owner = NULL;
        int rc = kc_get(ctrl_client(g->c), &g->res[r].a.r, g->res[r].a.r.namespaced ? dns : NULL, name,
                        &owner);
        if (rc == KP_ENOTFOUND) {
            *st = GC_OWNER_DANGLING;
            return 0;
        }
        if (rc) return rc;
        if (strcmp(ctrl_meta_str(owner, "uid"), uid)) {
            json_decref(owner);
            *st = GC_OWNER_DANGLING;
            return 0;
        }
    }
    *st = gc_deleting_dependents(owner) ? GC_OWNER_WAITING : GC_OWNER_SOLID;
    json_decref(owner);
    return 0;
}

/* Classify obj's owners, then act on them (dry: 1 if there is something
 * to do, 0 if not). */
static int collect_now(gc_t *g, int r, const json_t *obj, int dry)
{
    const json_t *refs = refs_of(obj);
    size_t n = json_array_size(refs);
    if (n > MAX_REFS) n = MAX_REFS;
    gc_owner_state_t st[MAX_REFS];
    const char *gone[MAX_REFS], *waiting[MAX_REFS];
    size_t ngone = 0, nwait = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *ref = json_array_get(refs, i);
        int rc = owner_state(g, obj, ref, dry, &st[i]);
        if (rc) return rc;
        const char *uid = json_string_value(json_object_get(ref, "uid"));
        if (st[i] != GC_OWNER_SOLID) gone[ngone++] = uid;
        if (st[i] == GC_OWNER_WAITING) waiting[nwait++] = uid;
    }
    const char *uid = ctrl_meta_str(obj, "uid");
    json_t **deps = NULL;
    size_t ndeps = 0;
    int rc = 0;
    gc_action_t a = gc_decide(st, n, 1);
    if (dry) return a == GC_KEEP ? 0 : 1;
    switch (a) {
    case GC_KEEP:
        return 0;
    case GC_REMOVE_REFS:
        return drop_refs(g, obj, gone, ngone, 0);
    case GC_DELETE_FG:
        if ((rc = dependents(g, uid, &deps, &ndeps))) return rc;
        if (!ndeps) break; /* no dependents of its own: a plain delete */
        /* A dependent of its own that waits on it too could wait forever on
         * a cycle: unblock the refs to the waiting owners first. */
        for (size_t i = 0; i < ndeps && !rc; i++)
            if (gc_deleting_dependents(deps[i])) {
                rc = drop_refs(g, obj, waiting, nwait, 1);
                break;
            }
        kc_objs_free(deps, ndeps);
        return rc ? rc : delete_obj(g, r, obj, "Foreground");
    case GC_DELETE:
        break;
    }
    return delete_obj(g, r, obj, gc_policy_of(obj));
}

/* A dependent: classify its owners and act (Kubernetes' attemptToDeleteItem).
 * The cached copy decides whether to look at all; the object's live version
 * decides what is done, as Kubernetes reads it again: the cache may still
 * show a reference an orphaning owner has just had dropped. */
static int collect(gc_t *g, int r, const json_t *cached)
{
    int rc = collect_now(g, r, cached, 1);
    if (rc <= 0) return rc;
    json_t *live = NULL;
    rc = kc_get(ctrl_client(g->c), &g->res[r].a.r, ctrl_meta_str(cached, "namespace"),
                ctrl_meta_str(cached, "name"), &live);
    if (rc) return settled(rc);
    if (!strcmp(ctrl_meta_str(live, "uid"), ctrl_meta_str(cached, "uid")) && !deleting(live) &&
        json_array_size(refs_of(live)))
        rc = collect_now(g, r, live, 0);
    json_decref(live);
    return rc;
}

static int gc_sync(ctrl_t *c, void *self, const char *key)
{
    (void)c;
    gc_t *g = self;
    if (!strcmp(key, RESYNC_TICK) || !strcmp(key, RESYNC_NOW)) {
        int rc = resync(g);
        if (!strcmp(key, RESYNC_TICK)) /* the next tick, whatever this one did */
            ctrl_enqueue_after(g->c, RESYNC_TICK, ctrl_config(g->c)->discovery_period_ms > 0
                                                      ? ctrl_config(g->c)->discovery_period_ms
                                                      : 30000);
        return rc;
    }
    if (!strncmp(key, "d/", 2)) { /* an owner went: look at its dependents */
        json_t **deps;
        size_t n;
        int rc = dependents(g, key + 2, &deps, &n);
        for (size_t i = 0; i < n; i++)
            enqueue_self(g, deps[i]);
        kc_objs_free(deps, n);
        return rc;
    }
    int r;
    char ns[300], name[300];
    if (sscanf(key, "o/%d/%299[^/]/%299s", &r, ns, name) != 3) {
        ns[0] = '\0';
        if (sscanf(key, "o/%d//%299s", &r, name) != 2) return 0;
    }
    if (r < 0 || (size_t)r >= nres(g) || atomic_load(&g->res[r].dead)) return 0;
    char ckey[620];
    if (*ns)
        snprintf(ckey, sizeof ckey, "%s/%s", ns, name);
    else
        snprintf(ckey, sizeof ckey, "%s", name);
    json_t *obj = kc_informer_get(g->res[r].inf, ckey);
    if (!obj) return 0; /* gone: its delete queued what depends on it */
    int rc = 0;
    if (deleting(obj)) {
        if (gc_has_finalizer(obj, GC_FIN_ORPHAN))
            rc = orphan_dependents(g, obj);
        else if (gc_has_finalizer(obj, GC_FIN_FOREGROUND))
            rc = foreground(g, obj);
        /* otherwise it is on its way out: nothing to collect */
    } else if (json_array_size(refs_of(obj))) {
        rc = collect(g, r, obj);
    }
    json_decref(obj);
    return rc;
}

const ctrl_ops_t ctrl_garbagecollector = {
    .name = "garbagecollector",
    .service_account = "generic-garbage-collector",
    .event_source = "garbage-collector-controller",
    .init = gc_init,
    .sync = gc_sync,
    .free = gc_free,
};
