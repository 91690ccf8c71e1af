/*
 * crd.c -- CustomResourceDefinitions: new resources without touching the core.
 *
 * INVARIANT this file protects: the resources served (the current view,
 * registry.c) are exactly the served versions of the CustomResourceDefinitions
 * that exist and are not being deleted, and every such CRD says so in its
 * status (NamesAccepted and Established True, acceptedNames, storedVersions).
 * It owns: the run-time entries of the view, the status of CRDs, the
 * customresourcecleanup finalizer, and the deletion of a deleted CRD's
 * objects.
 *
 * Like any controller it is level-triggered: a thread waits for a change to
 * the CRD watch cache (or a second), then compares every CRD with what is
 * served and acts:
 *
 *   CRD created/changed --> build entries (api_dyn_new: opens a watch cache
 *                           for <group>/<plural>) --> publish a new view
 *                       --> write status (store CAS; a conflict is retried on
 *                           the next pass)
 *   CRD being deleted   --> stop serving it --> delete its objects (store)
 *                       --> drop the finalizer --> delete the CRD
 *
 * The strategy (defaults and validation of CRD objects themselves) is here
 * too: api_strategy_crd. Custom objects are checked against their version's
 * schema by crd_schema.c, called from the generic write path.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/crd_schema.h"
#include "apiserver_int.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "store/store.h"
#include "strategy.h"
#include "watchcache.h"

#define CRD_FINALIZER "customresourcecleanup.apiextensions.k8s.io"
#define CRD_RESYNC_MS 1000

/* ---- the strategy of CustomResourceDefinition objects ---- */

static json_t *child(json_t *obj, const char *key)
{
    json_t *c = json_object_get(obj, key);
    if (!json_is_object(c)) {
        c = json_object();
        json_object_set_new(obj, key, c);
    }
    return c;
}

static const char *str(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : "";
}

static void crd_prepare_create(json_t *obj)
{
    json_t *meta = child(obj, "metadata");
    json_t *fin = json_object_get(meta, "finalizers");
    if (!json_is_array(fin)) {
        fin = json_array();
        json_object_set_new(meta, "finalizers", fin);
    }
    size_t i;
    json_t *f;
    json_array_foreach(fin, i, f)
        if (!strcmp(json_string_value(f) ?: "", CRD_FINALIZER)) return;
    json_array_append_new(fin, json_string(CRD_FINALIZER));
    json_object_del(obj, "status");
}

static void lower(const char *in, char *out, size_t n)
{
    size_t i = 0;
    for (; in[i] && i + 1 < n; i++)
        out[i] = (char)(in[i] >= 'A' && in[i] <= 'Z' ? in[i] - 'A' + 'a' : in[i]);
    out[i] = '\0';
}

static void crd_defaults(json_t *obj)
{
    json_t *spec = child(obj, "spec");
    json_t *names = child(spec, "names");
    const char *kind = str(names, "kind");
    if (*kind && !json_object_get(names, "singular")) {
        char s[256];
        lower(kind, s, sizeof s);
        json_object_set_new(names, "singular", json_string(s));
    }
    if (*kind && !json_object_get(names, "listKind"))
        json_object_set_new(names, "listKind", json_sprintf("%sList", kind));
    if (!json_object_get(spec, "conversion"))
        json_object_set_new(spec, "conversion", json_pack("{s:s}", "strategy", "None"));
}

/* A DNS-1123 label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63. */
static int dns_label(const char *s)
{
    size_t n = strlen(s);
    if (!n || n > 63 || s[0] == '-' || s[n - 1] == '-') return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return 0;
    return 1;
}

static void check_names(const json_t *names, json_t *causes)
{
    static const char *const keys[] = {"plural", "singular"};
    for (int k = 0; k < 2; k++) {
        const char *v = str(names, keys[k]);
        char field[64];
        snprintf(field, sizeof field, "spec.names.%s", keys[k]);
        if (!*v && k == 0)
            api_cause(causes, "FieldValueRequired", field, "Required value");
        else if (*v && !dns_label(v))
            api_cause(causes, "FieldValueInvalid", field,
                      "Invalid value: \"%s\": a lowercase RFC 1123 label must consist of lower "
                      "case alphanumeric characters or '-', and must start and end with an "
                      "alphanumeric character",
                      v);
    }
    if (!*str(names, "kind"))
        api_cause(causes, "FieldValueRequired", "spec.names.kind", "Required value");
    size_t i;
    json_t *sn;
    json_array_foreach(json_object_get(names, "shortNames"), i, sn) {
        const char *v = json_string_value(sn);
        if (!v || !dns_label(v))
            api_cause(causes, "FieldValueInvalid", "spec.names.shortNames",
                      "Invalid value: \"%s\": a lowercase RFC 1123 label must consist of lower "
                      "case alphanumeric characters or '-', and must start and end with an "
                      "alphanumeric character",
                      v ? v : "");
    }
}

static void check_version(const json_t *v, size_t i, json_t *causes)
{
    char path[128];
    const char *name = str(v, "name");
    snprintf(path, sizeof path, "spec.versions[%zu].name", i);
    if (!*name)
        api_cause(causes, "FieldValueRequired", path, "Required value");
    else if (!dns_label(name))
        api_cause(causes, "FieldValueInvalid", path,
                  "Invalid value: \"%s\": a DNS-1035 label must consist of lower case "
                  "alphanumeric characters or '-', start with an alphabetic character, and end "
                  "with an alphanumeric character",
                  name);
    static const char *const flags[] = {"served", "storage"};
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "spec.versions[%zu].%s", i, flags[k]);
        if (!json_is_boolean(json_object_get(v, flags[k])))
            api_cause(causes, "FieldValueRequired", path, "Required value");
    }
    const json_t *schema = json_object_get(json_object_get(v, "schema"), "openAPIV3Schema");
    snprintf(path, sizeof path, "spec.versions[%zu].schema.openAPIV3Schema", i);
    if (!json_is_object(schema))
        api_cause(causes, "FieldValueRequired", path, "Required value: schemas are required");
    else
        api_crd_schema_check(schema, path, causes);
    const json_t *scale = json_object_get(json_object_get(v, "subresources"), "scale");
    if (scale) {
        static const char *const paths[] = {"specReplicasPath", "statusReplicasPath"};
        for (int k = 0; k < 2; k++) {
            const char *p = str(scale, paths[k]);
            snprintf(path, sizeof path, "spec.versions[%zu].subresources.scale.%s", i, paths[k]);
            if (!*p)
                api_cause(causes, "FieldValueRequired", path, "Required value");
            else if (p[0] != '.' || strchr(p, '['))
                api_cause(causes, "FieldValueInvalid", path,
                          "Invalid value: \"%s\": should be a json path under .spec or .status", p);
        }
    }
    size_t j;
    json_t *col;
    json_array_foreach(json_object_get(v, "additionalPrinterColumns"), j, col) {
        static const char *const req[] = {"name", "type", "jsonPath"};
        for (int k = 0; k < 3; k++) {
            snprintf(path, sizeof path, "spec.versions[%zu].additionalPrinterColumns[%zu].%s", i, j,
                     req[k]);
            if (!*str(col, req[k])) api_cause(causes, "FieldValueRequired", path, "Required value");
        }
    }
}

static void crd_validate(const json_t *obj, const json_t *old, json_t *causes)
{
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *names = json_object_get(spec, "names");
    const char *group = str(spec, "group"), *plural = str(names, "plural");
    const char *name = str(json_object_get(obj, "metadata"), "name");
    if (!*group)
        api_cause(causes, "FieldValueRequired", "spec.group", "Required value");
    else if (!strchr(group, '.'))
        api_cause(causes, "FieldValueInvalid", "spec.group",
                  "Invalid value: \"%s\": should be a domain with at least one dot", group);
    check_names(names, causes);
    char want[512];
    snprintf(want, sizeof want, "%s.%s", plural, group);
    if (*plural && *group && strcmp(name, want))
        api_cause(causes, "FieldValueInvalid", "metadata.name",
                  "Invalid value: \"%s\": must be spec.names.plural+\".\"+spec.group", name);
    const char *scope = str(spec, "scope");
    if (strcmp(scope, "Namespaced") && strcmp(scope, "Cluster"))
        api_cause(causes, *scope ? "FieldValueNotSupported" : "FieldValueRequired", "spec.scope",
                  *scope ? "Unsupported value: \"%s\": supported values: \"Cluster\", "
                           "\"Namespaced\""
                         : "Required value%s",
                  scope);
    const json_t *versions = json_object_get(spec, "versions");
    size_t storage = 0, i;
    json_t *v;
    if (!json_array_size(versions))
        api_cause(causes, "FieldValueInvalid", "spec.versions",
                  "Invalid value: null: must have exactly one version marked as storage version");
    json_array_foreach(versions, i, v) {
        check_version(v, i, causes);
        storage += json_is_true(json_object_get(v, "storage"));
    }
    if (json_array_size(versions) && storage != 1)
        api_cause(causes, "FieldValueInvalid", "spec.versions",
                  "Invalid value: %zu: must have exactly one version marked as storage version",
                  storage);
    if (old) {
        const json_t *ospec = json_object_get(old, "spec");
        if (strcmp(str(ospec, "scope"), scope))
            api_cause(causes, "FieldValueInvalid", "spec.scope",
                      "Invalid value: \"%s\": field is immutable", scope);
        if (strcmp(str(ospec, "group"), group))
            api_cause(causes, "FieldValueInvalid", "spec.group",
                      "Invalid value: \"%s\": field is immutable", group);
    }
}

const api_strategy_t api_strategy_crd = {
    .prepare_create = crd_prepare_create,
    .defaults = crd_defaults,
    .validate = crd_validate,
    .generation = 1,
};

/* ---- building the served resources of a CRD ---- */

/* The schema requests are checked against: the version's openAPIV3Schema
 * with the root's apiVersion, kind and metadata declared, as Kubernetes
 * treats them (metadata is checked by the generic path). A new reference. */
static json_t *served_schema(const json_t *schema)
{
    json_t *s = json_deep_copy(schema);
    if (!s) return NULL;
    json_t *props = child(s, "properties");
    json_object_set_new(props, "apiVersion", json_pack("{s:s}", "type", "string"));
    json_object_set_new(props, "kind", json_pack("{s:s}", "type", "string"));
    json_object_set_new(
        props, "metadata",
        json_pack("{s:s, s:b}", "type", "object", "x-kubernetes-preserve-unknown-fields", 1));
    return s;
}

/* The entry for one served version: `owner` keeps every string alive. */
static int make_entry(apiserver_t *s, const json_t *crd, const json_t *version, api_dyn_t **out)
{
    json_t *owner = json_pack("{s:O}", "crd", crd);
    if (!owner) return KP_ENOMEM;
    const json_t *spec = json_object_get(crd, "spec");
    const json_t *names = json_object_get(spec, "names");
    json_t *schema =
        served_schema(json_object_get(json_object_get(version, "schema"), "openAPIV3Schema"));
    if (!schema) {
        json_decref(owner);
        return KP_ENOMEM;
    }
    json_object_set_new(owner, "schema", schema);
    api_resource_t res = {
        .group = str(spec, "group"),
        .version = str(version, "name"),
        .resource = str(names, "plural"),
        .singular = str(names, "singular"),
        .kind = str(names, "kind"),
        .list_kind = str(names, "listKind"),
        .namespaced = !strcmp(str(spec, "scope"), "Namespaced"),
        .crd_schema = schema,
        .printer_columns = json_object_get(version, "additionalPrinterColumns"),
    };
    size_t i;
    json_t *sn;
    json_array_foreach(json_object_get(names, "shortNames"), i, sn) {
        if (i < 3) res.short_names[i] = json_string_value(sn);
    }
    json_array_foreach(json_object_get(names, "categories"), i, sn) {
        if (!strcmp(json_string_value(sn) ?: "", "all")) res.category_all = 1;
    }
    const json_t *sub = json_object_get(version, "subresources");
    if (json_object_get(sub, "status")) res.subresources |= API_SUB_STATUS;
    if (json_object_get(sub, "scale")) {
        res.subresources |= API_SUB_SCALE;
        res.crd_scale = json_object_get(sub, "scale");
    }
    int rc = api_dyn_new(s, &res, owner, out);
    json_decref(owner);
    return rc;
}

/* ---- the controller ---- */

typedef struct crd_ctl {
    apiserver_t *srv;
    wc_t *cache; /* the CRDs' watch cache (a built-in) */
    pthread_t thread;
    pthread_mutex_t mu;
    int stop;
    wc_watcher_t *w;
    /* What is served now, with the key each entry was built from. */
    api_dyn_t **dyn;
    char **keys;
    size_t n;
} crd_ctl_t;

/* An entry is rebuilt when its CRD's uid, generation or version changes. */
static void entry_key(const json_t *crd, const json_t *version, char *out, size_t n)
{
    const json_t *meta = json_object_get(crd, "metadata");
    snprintf(out, n, "%s/%" PRId64 "/%s", str(meta, "uid"),
             (int64_t)json_integer_value(json_object_get(meta, "generation")),
             str(version, "name"));
}

static int condition_true(const json_t *crd, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(crd, "status"), "conditions"), i, c) {
        if (!strcmp(str(c, "type"), type)) return !strcmp(str(c, "status"), "True");
    }
    return 0;
}

/* The status a served CRD should have; a new reference. */
static json_t *wanted_status(const json_t *crd)
{
    const json_t *spec = json_object_get(crd, "spec");
    const json_t *old = json_object_get(crd, "status");
    char now[32];
    api_now_rfc3339(now);
    json_t *stored = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(old, "storedVersions"), i, v)
        json_array_append(stored, v);
    json_array_foreach(json_object_get(spec, "versions"), i, v) {
        if (!json_is_true(json_object_get(v, "storage"))) continue;
        int have = 0;
        size_t j;
        json_t *s;
        json_array_foreach(stored, j, s)
            have |= json_equal(s, json_object_get(v, "name"));
        if (!have) json_array_append(stored, json_object_get(v, "name"));
    }
    return json_pack("{s:[{s:s, s:s, s:s, s:s, s:s}, {s:s, s:s, s:s, s:s, s:s}], s:O, s:o}",
                     "conditions", "type", "NamesAccepted", "status", "True", "lastTransitionTime",
                     now, "reason", "NoConflicts", "message", "no conflicts found", "type",
                     "Established", "status", "True", "lastTransitionTime", now, "reason",
                     "InitialNamesAccepted", "message", "the initial names have been accepted",
                     "acceptedNames", json_object_get(spec, "names"), "storedVersions", stored);
}

static void crd_key(const char *name, char *key, size_t n)
{
    snprintf(key, n, "/registry/apiextensions.k8s.io/customresourcedefinitions/%s", name);
}

/* Read-modify-write of a CRD in the store; `edit` returns 1 to delete it,
 * 0 to write it, -1 for no change. A conflict is left for the next pass. */
static int crd_rewrite(crd_ctl_t *c, const char *name, int (*edit)(json_t *crd, void *arg),
                       void *arg)
{
    char key[STORE_KEY_MAX + 1];
    crd_key(name, key, sizeof key);
    store_kv_t *kv;
    int rc = store_get(c->srv->cfg.store, key, 0, &kv);
    if (rc) return rc;
    json_t *crd = json_loadb(kv->value, kv->value_len, 0, NULL);
    int64_t rev = kv->mod_rev, out_rev;
    free(kv);
    if (!crd) return KP_ECORRUPT;
    int what = edit(crd, arg);
    if (what == 1) {
        rc = store_delete(c->srv->cfg.store, key, rev, &out_rev);
    } else if (what == 0) {
        char *text = json_dumps(crd, JSON_COMPACT);
        rc = text ? store_update(c->srv->cfg.store, key, text, strlen(text), rev, &out_rev)
                  : KP_ENOMEM;
        free(text);
    }
    json_decref(crd);
    return rc;
}

static int set_status(json_t *crd, void *arg)
{
    (void)arg;
    json_t *want = wanted_status(crd);
    const json_t *old = json_object_get(crd, "status");
    /* Unchanged but for the times: leave it. */
    if (condition_true(crd, "Established") && condition_true(crd, "NamesAccepted") &&
        json_equal(json_object_get(old, "acceptedNames"), json_object_get(want, "acceptedNames")) &&
        json_equal(json_object_get(old, "storedVersions"),
                   json_object_get(want, "storedVersions"))) {
        json_decref(want);
        return -1;
    }
    json_object_set_new(crd, "status", want);
    return 0;
}

/* Does the cached CRD's status differ from what it should say? Checked on
 * the watch cache's copy, so that the once-a-second pass reads the store
 * only for a CRD that needs a write. */
static int status_stale(const json_t *crd)
{
    json_t *copy = json_deep_copy(crd);
    int stale = copy && set_status(copy, NULL) == 0;
    json_decref(copy);
    return stale;
}

static int drop_finalizer(json_t *crd, void *arg)
{
    (void)arg;
    json_t *meta = json_object_get(crd, "metadata");
    json_t *fin = json_object_get(meta, "finalizers");
    size_t i;
    json_t *f;
    json_array_foreach(fin, i, f) {
        if (!strcmp(json_string_value(f) ?: "", CRD_FINALIZER)) {
            json_array_remove(fin, i);
            break;
        }
    }
    /* Deleted and no finalizer left: the object goes, as the update path does. */
    return json_array_size(fin) == 0 && json_object_get(meta, "deletionTimestamp") ? 1 : 0;
}

/* Delete every object of a CRD being deleted (all versions share one key
 * prefix). Returns 0 once none is left. */
static int delete_objects(crd_ctl_t *c, const json_t *crd)
{
    const json_t *spec = json_object_get(crd, "spec");
    char prefix[STORE_KEY_MAX + 1];
    snprintf(prefix, sizeof prefix, "/registry/%s/%s/", str(spec, "group"),
             str(json_object_get(spec, "names"), "plural"));
    for (;;) {
        store_range_t *page;
        int rc = store_range(c->srv->cfg.store, prefix, NULL, 500, 0, &page);
        if (rc) return rc;
        size_t n = page->count;
        for (size_t i = 0; i < n && !rc; i++) {
            int64_t rev;
            rc = store_delete(c->srv->cfg.store, page->kvs[i].key, page->kvs[i].mod_rev, &rev);
            if (rc == KP_ECONFLICT || rc == KP_ENOTFOUND) rc = 0; /* next pass */
        }
        store_range_free(page);
        if (rc) return rc;
        if (!n) return 0;
    }
}

static int has_finalizer(const json_t *crd)
{
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(json_object_get(crd, "metadata"), "finalizers"), i, f)
        if (!strcmp(json_string_value(f) ?: "", CRD_FINALIZER)) return 1;
    return 0;
}

/* One pass: make the served entries and the CRDs' status match the CRDs. */
static void sync_all(crd_ctl_t *c)
{
    wc_list_t *l;
    if (wc_list(c->cache, "", NULL, 0, 0, 0, &l)) return;
    size_t cap = 8, n = 0;
    api_dyn_t **dyn = calloc(cap, sizeof *dyn);
    char **keys = calloc(cap, sizeof *keys);
    int changed = 0;
    for (size_t i = 0; dyn && keys && i < l->count; i++) {
        const json_t *crd = l->objs[i]->doc;
        const char *name = l->objs[i]->name;
        if (json_object_get(json_object_get(crd, "metadata"), "deletionTimestamp")) {
            /* Stop serving first (below: it is not carried over), then clean up. */
            if (has_finalizer(crd) && !delete_objects(c, crd))
                crd_rewrite(c, name, drop_finalizer, NULL);
            continue;
        }
        size_t j;
        json_t *v;
        int served = 0;
        json_array_foreach(json_object_get(json_object_get(crd, "spec"), "versions"), j, v) {
            if (!json_is_true(json_object_get(v, "served"))) continue;
            char key[256];
            entry_key(crd, v, key, sizeof key);
            api_dyn_t *d = NULL;
            for (size_t k = 0; k < c->n && !d; k++)
                if (!strcmp(c->keys[k], key)) d = api_dyn_ref(c->dyn[k]);
            if (!d) {
                int rc = make_entry(c->srv, crd, v, &d);
                if (rc) {
                    log_error("crd", "%s: serving version %s: %s", name, str(v, "name"),
                              err_str(rc));
                    continue;
                }
                changed = 1;
            }
            if (n == cap) {
                cap *= 2;
                api_dyn_t **nd = realloc(dyn, cap * sizeof *dyn);
                char **nk = nd ? realloc(keys, cap * sizeof *keys) : NULL;
                if (nd) dyn = nd;
                if (nk) keys = nk;
                if (!nd || !nk) {
                    api_dyn_unref(d);
                    break;
                }
            }
            dyn[n] = d;
            keys[n] = strdup(key);
            n++;
            served = 1;
        }
        if (served && status_stale(crd)) crd_rewrite(c, name, set_status, NULL);
    }
    wc_list_free(l);
    if (!dyn || !keys) {
        free(dyn);
        free(keys);
        return;
    }
    if (n != c->n) changed = 1;
    if (changed && api_view_publish(c->srv, dyn, n)) changed = 0;
    if (!changed) { /* keep what is served; drop this pass's references */
        for (size_t i = 0; i < n; i++) {
            api_dyn_unref(dyn[i]);
            free(keys[i]);
        }
        free(dyn);
        free(keys);
        return;
    }
    for (size_t i = 0; i < c->n; i++) {
        int kept = 0; /* an entry no longer served ends its watches, as Kubernetes does */
        for (size_t k = 0; k < n && !kept; k++) kept = dyn[k] == c->dyn[i];
        if (!kept) api_dyn_end(c->dyn[i]);
        api_dyn_unref(c->dyn[i]);
        free(c->keys[i]);
    }
    free(c->dyn);
    free(c->keys);
    c->dyn = dyn;
    c->keys = keys;
    c->n = n;
}

static void *crd_run(void *arg)
{
    crd_ctl_t *c = arg;
    for (;;) {
        pthread_mutex_lock(&c->mu);
        int stop = c->stop;
        pthread_mutex_unlock(&c->mu);
        if (stop) break;
        sync_all(c);
        /* Wait for a change to any CRD; resync every second regardless, so
         * that a status write lost to a conflict is retried. */
        wc_event_t ev;
        int rc = wc_watcher_next(c->w, CRD_RESYNC_MS, &ev);
        if (!rc) {
            wc_event_clear(&ev);
            /* Drain what else arrived: one pass covers them all. */
            while (!wc_watcher_next(c->w, 0, &ev))
                wc_event_clear(&ev);
        } else if (rc != KP_ETIMEDOUT) {
            break; /* closed */
        }
    }
    return NULL;
}

int api_crd_start(apiserver_t *s)
{
    size_t idx;
    api_view_t *v = api_view_get(s);
    const api_resource_t *res =
        api_view_find(v, "apiextensions.k8s.io", "v1", "customresourcedefinitions", &idx);
    wc_t *cache = res ? v->caches[idx] : NULL;
    api_view_put(v);
    if (!cache) return KP_EINVAL;
    crd_ctl_t *c = calloc(1, sizeof *c);
    if (!c) return KP_ENOMEM;
    c->srv = s;
    c->cache = cache;
    pthread_mutex_init(&c->mu, NULL);
    /* In-process and prompt: bounded by count as before, not by bytes. */
    wc_watch_opts_t wo = {.backlog = 100000, .backlog_bytes = SIZE_MAX};
    int rc = wc_watch(cache, "", -1, &wo, &c->w);
    if (rc) goto fail;
    if (pthread_create(&c->thread, NULL, crd_run, c)) {
        rc = KP_ENOMEM;
        goto fail;
    }
    s->crd = c;
    return 0;
fail:
    if (c->w) wc_watcher_close(c->w);
    pthread_mutex_destroy(&c->mu);
    free(c);
    return rc;
}

void api_crd_stop(apiserver_t *s)
{
    crd_ctl_t *c = s->crd;
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    c->stop = 1;
    pthread_mutex_unlock(&c->mu);
    wc_watcher_cancel(c->w);
    pthread_join(c->thread, NULL);
    wc_watcher_close(c->w);
    for (size_t i = 0; i < c->n; i++) {
        api_dyn_unref(c->dyn[i]);
        free(c->keys[i]);
    }
    free(c->dyn);
    free(c->keys);
    pthread_mutex_destroy(&c->mu);
    free(c);
    s->crd = NULL;
}
