/*
 * ctrl_util.c -- helpers the controllers share (see ctrl_util.h).
 *
 * INVARIANT: every controller reads selectors, pod state and ownership the
 * same way, as Kubernetes defines them (one definition of "active",
 * "ready", "available", "matches" and "controlled by"), so that two
 * controllers never disagree about the same pod. It owns no objects: every
 * function reads its arguments and writes nothing but its results.
 */
#include "controllers/ctrl_util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/err.h"

static int value_in(const json_t *values, const char *v)
{
    size_t i;
    json_t *x;
    json_array_foreach(values, i, x) {
        if (json_is_string(x) && !strcmp(json_string_value(x), v)) return 1;
    }
    return 0;
}

int ctrl_selector_matches(const json_t *sel, const json_t *labels)
{
    if (!json_is_object(sel)) return 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)json_object_get(sel, "matchLabels"), k, v) {
        const char *have = json_string_value(json_object_get(labels, k));
        if (!have || !json_is_string(v) || strcmp(have, json_string_value(v))) return 0;
    }
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(sel, "matchExpressions"), i, e) {
        const char *key = json_string_value(json_object_get(e, "key"));
        const char *op = json_string_value(json_object_get(e, "operator"));
        if (!key || !op) return 0;
        const char *have = json_string_value(json_object_get(labels, key));
        const json_t *values = json_object_get(e, "values");
        int ok;
        if (!strcmp(op, "In"))
            ok = have && value_in(values, have);
        else if (!strcmp(op, "NotIn"))
            ok = !have || !value_in(values, have);
        else if (!strcmp(op, "Exists"))
            ok = have != NULL;
        else if (!strcmp(op, "DoesNotExist"))
            ok = have == NULL;
        else
            ok = 0;
        if (!ok) return 0;
    }
    return 1;
}

const char *ctrl_meta_str(const json_t *obj, const char *field)
{
    const char *s = json_string_value(json_object_get(json_object_get(obj, "metadata"), field));
    return s ? s : "";
}

const json_t *ctrl_labels(const json_t *obj)
{
    return json_object_get(json_object_get(obj, "metadata"), "labels");
}

int ctrl_namespace_terminating(const json_t *ns)
{
    const char *phase = json_string_value(json_object_get(json_object_get(ns, "status"), "phase"));
    return !ns || json_object_get(json_object_get(ns, "metadata"), "deletionTimestamp") ||
           (phase && !strcmp(phase, "Terminating"));
}

int ctrl_pod_active(const json_t *pod)
{
    const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    if (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"))) return 0;
    return !json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp");
}

const json_t *ctrl_pod_ready_condition(const json_t *pod)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(pod, "status"), "conditions"), i, c) {
        const char *type = json_string_value(json_object_get(c, "type"));
        if (type && !strcmp(type, "Ready")) return c;
    }
    return NULL;
}

int ctrl_pod_ready(const json_t *pod)
{
    const json_t *c = ctrl_pod_ready_condition(pod);
    const char *st = json_string_value(json_object_get(c, "status"));
    return st && !strcmp(st, "True");
}

int64_t ctrl_time(const char *s)
{
    if (!s || !*s) return -1;
    struct tm tm = {0};
    const char *end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!end) return -1;
    return (int64_t)timegm(&tm);
}

int ctrl_pod_available(const json_t *pod, int min_ready_s, int64_t now_s, int *wait_s)
{
    if (wait_s) *wait_s = 0;
    if (!ctrl_pod_ready(pod)) return 0;
    if (min_ready_s <= 0) return 1;
    int64_t since =
        ctrl_time(json_string_value(
            json_object_get(ctrl_pod_ready_condition(pod), "lastTransitionTime")));
    if (since < 0) return 0;
    int64_t left = since + min_ready_s - now_s;
    if (left <= 0) return 1;
    if (wait_s) *wait_s = (int)left;
    return 0;
}

json_t *ctrl_controller_ref(const json_t *owner, const char *api_version, const char *kind)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:b, s:b}", "apiVersion", api_version, "kind", kind,
                     "name", ctrl_meta_str(owner, "name"), "uid", ctrl_meta_str(owner, "uid"),
                     "controller", 1, "blockOwnerDeletion", 1);
}

const char *ctrl_controller_uid(const json_t *obj)
{
    size_t i;
    json_t *ref;
    json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "ownerReferences"), i,
                       ref) {
        if (json_is_true(json_object_get(ref, "controller")))
            return json_string_value(json_object_get(ref, "uid"));
    }
    return NULL;
}

typedef struct par {
    size_t n;
    atomic_size_t next, ok;
    int (*fn)(void *arg, size_t i);
    void *arg;
    int *rcs;
} par_t;

static void *par_run(void *arg)
{
    par_t *p = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n) return NULL;
        int rc = p->fn(p->arg, i);
        if (p->rcs) p->rcs[i] = rc;
        if (!rc) atomic_fetch_add(&p->ok, 1);
    }
}

size_t ctrl_parallel(size_t n, int threads, int (*fn)(void *arg, size_t i), void *arg, int *rcs)
{
    par_t p = {.n = n, .fn = fn, .arg = arg, .rcs = rcs};
    atomic_init(&p.next, 0);
    atomic_init(&p.ok, 0);
    if (threads < 1) threads = 1;
    if ((size_t)threads > n) threads = (int)n;
    pthread_t tid[64];
    if (threads > 64) threads = 64;
    int started = 0;
    for (int t = 1; t < threads; t++)
        if (!pthread_create(&tid[started], NULL, par_run, &p)) started++;
    par_run(&p); /* this thread works too */
    for (int t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
    return atomic_load(&p.ok);
}

/* ---- adoption and release ---- */

int ctrl_release(kc_client_t *cl, const kc_resource_t *r, const json_t *obj,
                 const char *owner_uid)
{
    json_t *patch = json_pack("{s:{s:[{s:s, s:s}], s:s}}", "metadata", "ownerReferences",
                              "$patch", "delete", "uid", owner_uid, "uid", ctrl_meta_str(obj, "uid"));
    if (!patch) return KP_ENOMEM;
    int rc = kc_patch(cl, r, ctrl_meta_str(obj, "namespace"), ctrl_meta_str(obj, "name"), NULL,
                      KC_PATCH_STRATEGIC, patch, NULL, NULL, NULL);
    json_decref(patch);
    return rc == KP_ENOTFOUND ? 0 : rc;
}

int ctrl_adopt(kc_client_t *cl, const kc_resource_t *r, const json_t *obj, const json_t *owner,
               const char *api_version, const char *kind, json_t **adopted)
{
    *adopted = NULL;
    json_t *refs =
        json_deep_copy(json_object_get(json_object_get(obj, "metadata"), "ownerReferences"));
    if (!json_is_array(refs)) {
        json_decref(refs);
        refs = json_array();
    }
    json_array_append_new(refs, ctrl_controller_ref(owner, api_version, kind));
    json_t *patch = json_pack("{s:{s:o, s:s}}", "metadata", "ownerReferences", refs, "uid",
                              ctrl_meta_str(obj, "uid"));
    if (!patch) return KP_ENOMEM;
    int rc = kc_patch(cl, r, ctrl_meta_str(obj, "namespace"), ctrl_meta_str(obj, "name"), NULL,
                      KC_PATCH_MERGE, patch, NULL, adopted, NULL);
    json_decref(patch);
    return rc;
}

/* RFC 7386: patch merged into target (a null deletes a member). */
static void merge_into(json_t *target, const json_t *patch)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)patch, k, v) {
        json_t *t = json_object_get(target, k);
        if (json_is_null(v))
            json_object_del(target, k);
        else if (json_is_object(v) && json_is_object(t))
            merge_into(t, v);
        else if (json_is_object(v))
            json_object_set_new(target, k, json_deep_copy(v));
        else
            json_object_set(target, k, v);
    }
    /* An object of the patch that is now empty stays: as RFC 7386 leaves it. */
}

int ctrl_update_merged(kc_client_t *cl, const kc_resource_t *r, const json_t *obj, const char *sub,
                       const json_t *patch, json_t **out)
{
    if (out) *out = NULL;
    /* A patch that names the resourceVersion wants exactly that one. */
    int retry = !json_object_get(json_object_get(patch, "metadata"), "resourceVersion");
    const char *ns = ctrl_meta_str(obj, "namespace"), *name = ctrl_meta_str(obj, "name");
    json_t *fresh = NULL;
    int rc = KP_ECONFLICT;
    for (int attempt = 0; attempt < 2 && rc == KP_ECONFLICT; attempt++) {
        if (attempt && (!retry || (rc = kc_get(cl, r, *ns ? ns : NULL, name, &fresh)))) break;
        json_t *upd = json_deep_copy(attempt ? fresh : obj);
        json_decref(fresh);
        fresh = NULL;
        if (!upd) return KP_ENOMEM;
        merge_into(upd, patch);
        rc = kc_update(cl, r, *ns ? ns : NULL, upd, sub, out, NULL);
        json_decref(upd);
    }
    return rc;
}
