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
 * THE GRAPH is the informers' caches: one shared informer per resource kplane
 * serves built in (every listable, watchable kind but events, which
 * Kubernetes' GC ignores too), each with the index "gc-owners" (the uids an
 * object's ownerReferences name), so "the dependents of uid U" is one index
 * read per resource. The SDK has no discovery client, so the resources are
 * this file's built-in list plus, for every established
 * CustomResourceDefinition, its storage version (an informer of this
 * file's own, started when the CRD shows up: key "c/<crd name>").
 *
 * KEYS. "o/<res>/<ns>/<name>": look at one object (res: its index in the
 * list; ns empty for cluster-scoped). "d/<uid>": the object with that uid is
 * gone; look at each of its dependents.
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
#define MAX_RES      128 /* resources in the graph, built-in and custom */

static const kc_resource_t gc_serviceaccounts = {"", "v1", "serviceaccounts", "ServiceAccount", 1};
static const kc_resource_t gc_crds = {"apiextensions.k8s.io", "v1", "customresourcedefinitions",
                                      "CustomResourceDefinition", 0};

/* Every built-in resource whose objects may own or be owned. */
static const kc_resource_t *const builtin[] = {
    &kc_pods,         &kc_nodes,      &kc_namespaces,          &kc_services,    &kc_endpoints,
    &kc_configmaps,   &kc_secrets,    &gc_serviceaccounts,     &kc_deployments, &kc_replicasets,
    &kc_statefulsets, &kc_daemonsets, &kc_controllerrevisions, &kc_jobs,        &kc_leases,
    &gc_crds,
};
#define NBUILTIN  (sizeof builtin / sizeof builtin[0])
#define CRD_INDEX (NBUILTIN - 1) /* gc_crds */

/* One resource of the graph. Entries are appended (built-in ones at init,
 * custom resources when their CRD is established) and never move; an entry
 * is complete before `nres` counts it, so readers take no lock. */
typedef struct gc_res {
    kc_resource_t r;
    char api_version[128];
    kc_informer_t *inf;
    int own;           /* a custom resource's informer: this file starts and frees it */
    char strs[4][128]; /* a custom resource's group, version, plural, kind */
    _Atomic int dead;  /* its CRD went: no longer a resource */
} gc_res_t;

typedef struct gc {
    ctrl_t *c;
    gc_res_t res[MAX_RES];
    _Atomic size_t nres;
    pthread_mutex_t mu; /* serialises appends */
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

/* The index of the resource of (apiVersion, kind), or -1. */
static int res_of(gc_t *g, const char *api_version, const char *kind)
{
    if (!api_version || !kind) return -1;
    size_t n = nres(g);
    for (size_t i = 0; i < n; i++) {
        const gc_res_t *e = &g->res[i];
        if (!atomic_load(&e->dead) && !strcmp(e->api_version, api_version) &&
            !strcmp(e->r.kind, kind))
            return (int)i;
    }
    return -1;
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
    if (snprintf(key, sizeof key, "o/%d/%s/%s", res, g->res[res].r.namespaced ? ns : "", name) <
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

static void enqueue_crd(gc_t *g, const json_t *crd)
{
    char key[300];
    if (snprintf(key, sizeof key, "c/%s", ctrl_meta_str(crd, "name")) < (int)sizeof key)
        ctrl_enqueue(g->c, key);
}

static void on_add(void *arg, const json_t *obj)
{
    gc_t *g = arg;
    if (is_crd(obj)) enqueue_crd(g, obj);
    if (json_array_size(refs_of(obj)) || wants_gc(obj)) enqueue_self(g, obj);
}

static void on_update(void *arg, const json_t *old, const json_t *obj)
{
    gc_t *g = arg;
    if (old == obj) { /* resync: retry what waits on the collector */
        if (wants_gc(obj)) enqueue_self(g, obj);
        return;
    }
    if (is_crd(obj)) enqueue_crd(g, obj);
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
    if (is_crd(obj)) enqueue_crd(g, obj);
    if (*uid && snprintf(key, sizeof key, "d/%s", uid) < (int)sizeof key) ctrl_enqueue(g->c, key);
    enqueue_owners(g, obj);
}

static void set_api_version(gc_res_t *e)
{
    char av[sizeof e->api_version];
    if (*e->r.group)
        snprintf(av, sizeof av, "%s/%s", e->r.group, e->r.version);
    else
        snprintf(av, sizeof av, "%s", e->r.version);
    memcpy(e->api_version, av, sizeof av);
}

static void gc_free(void *self)
{
    gc_t *g = self;
    size_t n = nres(g);
    for (size_t i = 0; i < n; i++)
        if (g->res[i].own) kc_informer_free(g->res[i].inf);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

static int gc_init(ctrl_t *c, void **self)
{
    gc_t *g = calloc(1, sizeof *g);
    if (!g) return KP_ENOMEM;
    g->c = c;
    pthread_mutex_init(&g->mu, NULL);
    kc_handlers_t h = {.on_add = on_add, .on_update = on_update, .on_delete = on_delete, .arg = g};
    int rc = 0;
    for (size_t i = 0; i < NBUILTIN && !rc; i++) {
        gc_res_t *e = &g->res[i];
        e->r = *builtin[i];
        set_api_version(e);
        e->inf = ctrl_informer(c, builtin[i]);
        if (!e->inf) {
            rc = KP_ENOMEM;
            break;
        }
        rc = kc_informer_add_index(e->inf, OWNERS_INDEX, gc_index_owners);
        if (rc == KP_EEXIST) rc = 0;
        atomic_store(&g->nres, i + 1);
        if (!rc) rc = kc_informer_add_handlers(e->inf, &h);
    }
    if (rc) {
        for (size_t k = 0; k < nres(g); k++)
            if (g->res[k].inf) kc_informer_remove_handlers(g->res[k].inf, g);
        gc_free(g);
        return rc;
    }
    *self = g;
    return 0;
}

/* ---- custom resources ---- */

/* Bring custom resource `name`'s place in the graph in line with its CRD:
 * an informer while it is established, none once it is gone. */
static int sync_crd(gc_t *g, const char *name)
{
    json_t *crd = kc_informer_get(g->res[CRD_INDEX].inf, name);
    const json_t *spec = json_object_get(crd, "spec");
    const char *group = json_string_value(json_object_get(spec, "group"));
    const char *plural =
        json_string_value(json_object_get(json_object_get(spec, "names"), "plural"));
    const char *kind = json_string_value(json_object_get(json_object_get(spec, "names"), "kind"));
    const char *scope = json_string_value(json_object_get(spec, "scope"));
    const char *version = NULL;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(spec, "versions"), i, v) {
        if (json_is_true(json_object_get(v, "storage")))
            version = json_string_value(json_object_get(v, "name"));
    }
    int established = 0;
    json_array_foreach(json_object_get(json_object_get(crd, "status"), "conditions"), i, v) {
        const char *t = json_string_value(json_object_get(v, "type"));
        const char *st = json_string_value(json_object_get(v, "status"));
        if (t && st && !strcmp(t, "Established") && !strcmp(st, "True")) established = 1;
    }
    int want = crd && established && group && plural && kind && version && scope &&
               !json_object_get(json_object_get(crd, "metadata"), "deletionTimestamp");
    pthread_mutex_lock(&g->mu);
    int rc = 0;
    size_t n = nres(g), have = n;
    for (size_t k = NBUILTIN; k < n; k++) {
        gc_res_t *e = &g->res[k];
        if (!e->own || atomic_load(&e->dead)) continue;
        char full[300];
        snprintf(full, sizeof full, "%s.%s", e->r.resource, e->r.group);
        if (strcmp(full, name)) continue;
        if (want && !strcmp(e->r.version, version) && !strcmp(e->r.kind, kind))
            have = k;
        else {
            atomic_store(&e->dead, 1); /* its informer stops; freed with the collector */
            kc_informer_stop(e->inf);
        }
    }
    if (want && have == n) {
        if (n == MAX_RES) {
            rc = KP_ETOOLARGE;
            goto out;
        }
        gc_res_t *e = &g->res[n];
        memset(e, 0, sizeof *e);
        snprintf(e->strs[0], sizeof e->strs[0], "%s", group);
        snprintf(e->strs[1], sizeof e->strs[1], "%s", version);
        snprintf(e->strs[2], sizeof e->strs[2], "%s", plural);
        snprintf(e->strs[3], sizeof e->strs[3], "%s", kind);
        e->r = (kc_resource_t){e->strs[0], e->strs[1], e->strs[2], e->strs[3],
                               !strcmp(scope, "Namespaced")};
        set_api_version(e);
        e->own = 1;
        kc_handlers_t h = {
            .on_add = on_add, .on_update = on_update, .on_delete = on_delete, .arg = g};
        rc = kc_informer_new(ctrl_client(g->c), &e->r, NULL, NULL, NULL, 0, &e->inf);
        if (!rc) rc = kc_informer_add_index(e->inf, OWNERS_INDEX, gc_index_owners);
        if (!rc) rc = kc_informer_add_handlers(e->inf, &h);
        if (!rc) rc = kc_informer_start(e->inf);
        if (rc) {
            kc_informer_free(e->inf);
            e->inf = NULL;
            goto out;
        }
        atomic_store(&g->nres, n + 1);
        log_info("garbagecollector", "watching %s.%s/%s", plural, group, version);
    }
out:
    pthread_mutex_unlock(&g->mu);
    json_decref(crd);
    return rc;
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
    return kc_patch(ctrl_client(g->c), &g->res[r].r, ctrl_meta_str(obj, "namespace"),
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
    if (r >= 0 && g->res[r].own) {
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
    int rc = kc_delete(ctrl_client(g->c), &g->res[r].r, ctrl_meta_str(obj, "namespace"),
                       ctrl_meta_str(obj, "name"), opts, NULL);
    json_decref(opts);
    if (!rc)
        log_info("garbagecollector", "deleted %s %s/%s (%s)", g->res[r].r.kind,
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
    if (r < 0 || !name || !uid) {
        log_warn("garbagecollector", "%s/%s: ownerReference to %s %s: kind not served",
                 ctrl_meta_str(dep, "namespace"), ctrl_meta_str(dep, "name"), av ? av : "?",
                 kind ? kind : "?");
        return KP_EINVAL; /* retried with backoff, as Kubernetes retries a mapping error */
    }
    const char *dns = ctrl_meta_str(dep, "namespace");
    if (g->res[r].r.namespaced && !*dns) {
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
    if (g->res[r].r.namespaced)
        snprintf(key, sizeof key, "%s/%s", dns, name);
    else
        snprintf(key, sizeof key, "%s", name);
    json_t *owner = kc_informer_get(g->res[r].inf, key);
    if (!owner || strcmp(ctrl_meta_str(owner, "uid"), uid)) {
        json_decref(owner);
        owner = NULL;
        int rc = kc_get(ctrl_client(g->c), &g->res[r].r, g->res[r].r.namespaced ? dns : NULL, name,
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
    rc = kc_get(ctrl_client(g->c), &g->res[r].r, ctrl_meta_str(cached, "namespace"),
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
    if (!strncmp(key, "c/", 2)) return sync_crd(g, key + 2);
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
    .event_source = "garbage-collector-controller",
    .init = gc_init,
    .sync = gc_sync,
    .free = gc_free,
};
