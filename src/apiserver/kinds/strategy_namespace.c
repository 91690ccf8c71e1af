/*
 * strategy_namespace.c -- namespaces: Kubernetes' namespace registry
 * (pkg/registry/core/namespace: strategy.go and storage.go), the
 * NamespaceLifecycle admission plugin and the namespaces every cluster
 * starts with.
 *
 * A namespace's life:
 *
 *   create (prepare_create: spec.finalizers gets "kubernetes", phase Active)
 *     -> DELETE: marked (deletionTimestamp, delete_mark: phase Terminating)
 *        while spec.finalizers is not empty (finalizing); a second DELETE
 *        is a 409 (finalizing_conflict)
 *     -> the namespace controller empties it and drops "kubernetes" through
 *        PUT .../finalize (finalize_sub); the update that leaves both
 *        finalizer lists empty removes it (rest_update_loop)
 *
 * Invariants:
 *  1. spec.finalizers changes only through /finalize (prepare_update keeps
 *     the stored list; status is kept by the generic status rule).
 *  2. default, kube-system and kube-public are never deleted
 *     (delete_refused).
 *  3. Nothing is created in a namespace that does not exist or is
 *     terminating (api_namespace_admit_create()).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/http/http.h"
#include "apiserver/rest/rest.h"
#include "apiserver/kinds/kinds.h"
#include "lib/err.h"
#include "lib/par.h"
#include "apiserver/rest/rest_int.h"
#include "store/store.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/kinds/strategy_int.h"
#include "apiserver/rest/watchcache.h"

#define FIN_KUBERNETES "kubernetes" /* the namespace controller's finalizer */

static size_t spec_finalizers(const json_t *ns)
{
    return json_array_size(json_object_get(json_object_get(ns, "spec"), "finalizers"));
}

static json_t *child_object(json_t *obj, const char *key)
{
    json_t *c = json_object_get(obj, key);
    if (!json_is_object(c)) json_object_set_new(obj, key, c = json_object());
    return c;
}

/* PrepareForCreate: phase Active; "kubernetes" joins whatever finalizers
 * the client asked for. */
static void ns_prepare_create(json_t *ns)
{
    json_t *spec = child_object(ns, "spec");
    json_t *fin = json_object_get(spec, "finalizers");
    if (!json_is_array(fin)) json_object_set_new(spec, "finalizers", fin = json_array());
    int has = 0;
    size_t i;
    json_t *f;
    json_array_foreach(fin, i, f) has |= json_is_string(f) && !strcmp(json_string_value(f), FIN_KUBERNETES);
    if (!has) json_array_append_new(fin, json_string(FIN_KUBERNETES));
    json_object_set_new(ns, "status", json_pack("{s:s}", "phase", "Active"));
}

/* PrepareForUpdate: spec.finalizers is /finalize's (invariant 1). */
static void ns_prepare_update(json_t *ns, const json_t *old)
{
    json_t *cf = json_object_get(json_object_get(old, "spec"), "finalizers");
    json_t *spec = child_object(ns, "spec");
    if (cf) json_object_set(spec, "finalizers", cf);
    else json_object_del(spec, "finalizers");
}

/* Kubernetes' validateFinalizerName for a namespace's spec.finalizers:
 * "kubernetes" or a name with a prefix. NULL if valid, else the message. */
static const char *finalizer_invalid(const char *v)
{
    if (strchr(v, '/') || !strcmp(v, FIN_KUBERNETES)) return NULL;
    return "name is neither a standard finalizer name nor is it fully qualified";
}

/* The causes of a bad spec.finalizers list `fin` (borrowed). */
static void validate_finalizers(const json_t *fin, json_t *causes)
{
    size_t i;
    json_t *f;
    json_array_foreach(fin, i, f) {
        const char *v = json_string_value(f);
        char field[64];
        snprintf(field, sizeof field, "spec.finalizers[%zu]", i);
        if (!v) {
            api_cause(causes, "FieldValueInvalid", field, "Invalid value: \"\": must be a string");
            continue;
        }
        const char *why = finalizer_invalid(v);
        if (why)
            api_cause(causes, "FieldValueInvalid", "spec.finalizers", "Invalid value: \"%s\": %s",
                      v, why);
    }
}

static void ns_validate(const json_t *ns, const json_t *old, json_t *causes)
{
    (void)old;
    validate_finalizers(json_object_get(json_object_get(ns, "spec"), "finalizers"), causes);
}

static int ns_finalizing(const json_t *ns)
{
    return spec_finalizers(ns) > 0;
}

static void ns_delete_mark(json_t *ns)
{
    json_object_set_new(child_object(ns, "status"), "phase", json_string("Terminating"));
}

/* NamespaceLifecycle: the immortal namespaces (invariant 2). */
static const char *ns_delete_refused(const char *name)
{
    static const char *const immortal[] = {"default", "kube-system", "kube-public", NULL};
    for (const char *const *n = immortal; *n; n++)
        if (!strcmp(name, *n)) return "this namespace may not be deleted";
    return NULL;
}

/* ---- namespaces/NAME/finalize (Kubernetes' FinalizeREST) ----
 * The body's spec.finalizers replace the stored ones; nothing else changes. */

static json_t *make_finalize(api_req_t *r, const json_t *cur, void *arg, int64_t *pre)
{
    json_t *in = arg;
    if (rest_parse_rv(rest_meta_str(in, "resourceVersion"), pre)) {
        api_reply_status(r, 400, "BadRequest", NULL, "invalid resourceVersion");
        return NULL;
    }
    const json_t *fin = json_object_get(json_object_get(in, "spec"), "finalizers");
    json_t *causes = json_array();
    validate_finalizers(fin, causes);
    const api_resource_t *res = r->route.res;
    int bad = rest_reply_causes(r, res->group, res->kind, r->route.name, causes);
    json_decref(causes);
    if (bad) return NULL;
    json_t *out = json_deep_copy(cur);
    json_t *spec = child_object(out, "spec");
    if (json_array_size(fin)) json_object_set(spec, "finalizers", (json_t *)fin);
    else json_object_del(spec, "finalizers");
    return out;
}

static int finalize_sub(api_req_t *r)
{
    if (strcmp(r->method, "PUT"))
        return api_reply_status(r, 405, "MethodNotAllowed", NULL,
                                "the server does not allow this method on the requested resource");
    json_t *in;
    int rc = rest_body_object(r, &in);
    if (rc || !in) return rc;
    if (!rest_check_type(r, in) && !rest_check_url_name(r, in))
        rc = rest_update_loop(r, make_finalize, in, NULL);
    json_decref(in);
    return rc;
}

static const char *const update_verbs[] = {"update", NULL};
static const api_sub_t ns_subs[] = {
    {"finalize", NULL, NULL, NULL, update_verbs, finalize_sub, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};

const api_strategy_t api_strategy_namespace = {
    .name_rule = API_NAME_LABEL,
    .prepare_create = ns_prepare_create,
    .prepare_update = ns_prepare_update,
    .validate = ns_validate,
    .delete_refused = ns_delete_refused,
    .finalizing = ns_finalizing,
    .finalizing_conflict = "The system is ensuring all content is removed from this "
                           "namespace.  Upon completion, this namespace will automatically be "
                           "purged by the system.",
    .delete_mark = ns_delete_mark,
    .subs = ns_subs,
};

/* ---- NamespaceLifecycle on create (invariant 3) ---- */

int api_namespace_admit_create(api_req_t *r, const char *name)
{
    if (!r->route.res->namespaced) return 0;
    /* The namespaces' watch cache answers without a store read or a parse, as
     * kube-apiserver's admission asks its informer; a namespace the cache has
     * not seen yet (created a moment ago) is looked up in the store. */
    size_t nsi = 0;
    const api_resource_t *nsres = api_view_find(r->view, "", "v1", "namespaces", &nsi);
    char key[STORE_KEY_MAX + 1];
    if (!nsres || api_object_key(nsres, NULL, r->route.ns, key, sizeof key)) {
        api_reply_error(r, KP_EINVAL, NULL, "namespace \"%s\": no such resource", r->route.ns);
        return -1;
    }
    const wc_obj_t *cached = NULL;
    json_t *ns = NULL;
    int rc = wc_get(r->view->caches[nsi], key, &cached);
    if (rc == KP_ENOTFOUND) rc = rest_load(r, key, &ns, &(int64_t){0});
    if (rc == KP_ENOTFOUND) {
        json_t *d = json_pack("{s:s, s:s, s:s}", "name", r->route.ns, "group", "", "kind",
                              nsres->resource);
        api_reply_status(r, 404, "NotFound", d, "%s \"%s\" not found", nsres->resource,
                         r->route.ns);
        json_decref(d);
        return -1;
    }
    if (rc) {
        api_reply_error(r, rc, NULL, "reading namespace: %s", err_str(rc));
        return -1;
    }
    /* status.phase is a namespace's selectable field: the cache keeps it. */
    const char *phase =
        cached ? wc_obj_field(cached, "status.phase")
               : json_string_value(json_object_get(json_object_get(ns, "status"), "phase"));
    int terminating = phase && !strcmp(phase, "Terminating");
    wc_obj_unref(cached);
    json_decref(ns);
    if (terminating) {
        char q[128];
        json_t *d = json_pack("{s:s, s:s, s:s, s:[{s:s, s:s, s:s}]}", "name", name, "group",
                              r->route.res->group, "kind", r->route.res->resource, "causes",
                              "reason", "NamespaceTerminating", "message",
                              "namespace is being terminated", "field", "metadata.namespace");
        api_reply_status(r, 403, "Forbidden", d,
                         "%s \"%s\" is forbidden: unable to create new content in namespace %s "
                         "because it is being terminated",
                         rest_qualified(r->route.res, q, sizeof q), name, r->route.ns);
        json_decref(d);
        return -1;
    }
    return 0;
}

/* The namespaces every cluster starts with, created at once (their writes
 * share the store's commits). */
static const char *const boot_namespaces[] = {"default", "kube-system", "kube-public",
                                              "kube-node-lease"};

typedef struct ns_boot {
    apiserver_t *srv;
    const api_resource_t *res;
    int rc[sizeof boot_namespaces / sizeof boot_namespaces[0]];
} ns_boot_t;

static void ensure_one(void *arg, size_t i)
{
    ns_boot_t *b = arg;
    const char *name = boot_namespaces[i];
    /* uid and creationTimestamp: filled in by api_boot_create(), in place */
    json_t *ns = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:{s:s}}}", "kind", b->res->kind,
                           "apiVersion", "v1", "metadata", "name", name, "uid", "",
                           "creationTimestamp", "", "labels", "kubernetes.io/metadata.name", name);
    if (ns) ns_prepare_create(ns);
    b->rc[i] = ns ? api_boot_create(b->srv, b->res, ns) : KP_ENOMEM;
    json_decref(ns);
}

int api_ensure_namespaces(apiserver_t *s)
{
    ns_boot_t b = {.srv = s, .res = api_registry_find("", "v1", "namespaces")};
    if (!b.res) return KP_EINVAL;
    size_t n = sizeof boot_namespaces / sizeof boot_namespaces[0];
    par_each(n, ensure_one, &b);
    for (size_t i = 0; i < n; i++)
        if (b.rc[i]) return b.rc[i];
    return 0;
}
