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
 *   CRD created/changed --> decide its names (decide_names: against the
 *                           built-ins and the other CRDs of its group)
 *                       --> names accepted: build entries (api_dyn_new: opens
 *                           a watch cache for <group>/<plural>) --> publish a
 *                           new view
 *                       --> write status: NamesAccepted, Established,
 *                           KubernetesAPIApprovalPolicyConformant (store CAS;
 *                           a conflict is retried on the next pass)
 *   CRD being deleted   --> stop serving it --> delete its objects (store;
 *                           never under a built-in's key prefix)
 *                       --> drop the finalizer --> delete the CRD
 *
 * INVARIANT: no CRD is served, and no CRD's deletion deletes keys, under the
 * key prefix of a built-in resource (api_crd_builtin_clash). The strategy
 * refuses such CRDs on create; this file holds the line for any stored before.
 *
 * The strategy (defaults and validation of CRD objects themselves) is in
 * strategy_crd.c. Custom objects are checked against their version's schema
 * by crd_schema.c, called from the generic write path.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/schema/crd_schema.h"
#include "apiserver/http/http.h"
#include "apiserver/rest/rest.h"
#include "apiserver/crd/crd.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "store/store.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/rest/watchcache.h"

#define CRD_RESYNC_MS 1000

/* ---- building the served resources of a CRD ---- */

/* The schema requests are checked against: the version's openAPIV3Schema
 * with the root's apiVersion, kind and metadata declared, as Kubernetes
 * treats them (metadata is checked by the generic path). A new reference. */
static json_t *served_schema(const json_t *schema)
{
    json_t *s = json_deep_copy(schema);
    if (!s) return NULL;
    json_t *props = api_json_child(s, "properties");
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
        .group = api_json_str(spec, "group"),
        .version = api_json_str(version, "name"),
        .resource = api_json_str(names, "plural"),
        .singular = api_json_str(names, "singular"),
        .kind = api_json_str(names, "kind"),
        .list_kind = api_json_str(names, "listKind"),
        .namespaced = !strcmp(api_json_str(spec, "scope"), "Namespaced"),
        .verbs = API_V_ALL,
        .crd_terminating = json_object_get(json_object_get(crd, "metadata"),
                                           "deletionTimestamp") != NULL,
        .crd_schema = schema,
        .printer_columns = json_object_get(version, "additionalPrinterColumns"),
    };
    size_t i;
    json_t *sn;
    /* At most three of each (the rest are not listed in discovery). */
    json_array_foreach(json_object_get(names, "shortNames"), i, sn) {
        if (i < 3) res.short_names[i] = json_string_value(sn);
    }
    json_array_foreach(json_object_get(names, "categories"), i, sn) {
        if (i < 3) res.categories[i] = json_string_value(sn);
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
    api_loop_t *loop;
    /* What is served now, with the key each entry was built from. */
    api_dyn_t **dyn;
    char **keys;
    size_t n;
} crd_ctl_t;

/* An entry is rebuilt when its CRD's uid, generation or version changes, or
 * when it starts terminating. */
static void entry_key(const json_t *crd, const json_t *version, char *out, size_t n)
{
    const json_t *meta = json_object_get(crd, "metadata");
    snprintf(out, n, "%s/%" PRId64 "/%s%s", api_json_str(meta, "uid"),
             (int64_t)json_integer_value(json_object_get(meta, "generation")),
             api_json_str(version, "name"),
             json_object_get(meta, "deletionTimestamp") ? "/terminating" : "");
}

/* ---- names: which CRD may use which names (Kubernetes' naming controller) ----
 *
 * Within a group, a plural, singular or short name, and a kind or list kind,
 * belong to one resource. A CRD's names are accepted when no other holds
 * them: the built-ins of its group always hold theirs, and another CRD of
 * the group holds the names in its status.acceptedNames. A name a CRD has
 * already accepted stays its own. The decision of one pass is made in list
 * order, each CRD seeing the names decided for those before it, so that two
 * CRDs asking for one name at once do not both get it. A CRD with a name
 * not accepted is not served (Kubernetes goes on serving an established one
 * under its older accepted names; kplane stops serving it). */

/* What one pass decided for one CRD. */
typedef struct naming {
    json_t *accepted;  /* the accepted names (a new reference) */
    json_t *condition; /* NamesAccepted: {type, status, reason, message} */
    int serve;         /* all names accepted and no clash with a built-in */
} naming_t;

static void naming_clear(naming_t *n)
{
    json_decref(n->accepted);
    json_decref(n->condition);
    memset(n, 0, sizeof *n);
}

/* The names held in `group` by others than CRD `self` of `crds` (index
 * `self`): resources (plural, singular, short names) into res, kinds (kind,
 * list kind) into kinds, as JSON objects used as sets. */
static void held_names(const json_t *const *crds, const naming_t *decided, size_t n, size_t self,
                       const char *group, json_t *res, json_t *kinds)
{
    for (size_t i = 0; i < n; i++) {
        if (i == self || strcmp(api_json_str(json_object_get(crds[i], "spec"), "group"), group))
            continue;
        const json_t *names =
            i < self ? decided[i].accepted
                     : json_object_get(json_object_get(crds[i], "status"), "acceptedNames");
        static const char *const rk[] = {"plural", "singular"};
        for (size_t k = 0; k < 2; k++)
            if (*api_json_str(names, rk[k]))
                json_object_set_new(res, api_json_str(names, rk[k]), json_true());
        size_t j;
        json_t *sn;
        json_array_foreach(json_object_get(names, "shortNames"), j, sn)
            if (json_string_value(sn)) json_object_set_new(res, json_string_value(sn), json_true());
        static const char *const kk[] = {"kind", "listKind"};
        for (size_t k = 0; k < 2; k++)
            if (*api_json_str(names, kk[k]))
                json_object_set_new(kinds, api_json_str(names, kk[k]), json_true());
    }
}

/* Is `name` a resource name (kinds: a kind) of a built-in of `group`? */
static int builtin_holds(const char *group, const char *name, int kinds)
{
    for (size_t i = 0; i < api_registry_count(); i++) {
        const api_resource_t *b = api_registry_at(i);
        if (strcmp(b->group, group)) continue;
        if (kinds ? !strcmp(b->kind, name) || !strcmp(b->list_kind, name)
                  : !strcmp(b->resource, name) || !strcmp(b->singular, name))
            return 1;
        for (size_t k = 0; !kinds && k < 4 && b->short_names[k]; k++)
            if (!strcmp(b->short_names[k], name)) return 1;
    }
    return 0;
}

/* equalToAcceptedOrFresh, with the built-ins holding their names for good:
 * 0 if `want` may be used, else the message (into msg). */
static int name_taken(const char *group, const char *want, const char *accepted, const json_t *held,
                      int kinds, char *msg, size_t n)
{
    int taken = builtin_holds(group, want, kinds) ||
                (strcmp(want, accepted) && json_object_get(held, want));
    if (taken) snprintf(msg, n, "\"%s\" is already in use", want);
    return taken;
}

/* Decide the names of crds[self]; decided[0..self-1] are already set. */
static void decide_names(const json_t *const *crds, naming_t *decided, size_t n, size_t self)
{
    const json_t *crd = crds[self];
    const json_t *spec = json_object_get(crd, "spec");
    const char *group = api_json_str(spec, "group");
    const json_t *want = json_object_get(spec, "names");
    const json_t *had = json_object_get(json_object_get(crd, "status"), "acceptedNames");
    json_t *acc = json_is_object(had) ? json_deep_copy(had) : json_object();
    json_t *res = json_object(), *kinds = json_object();
    naming_t *out = &decided[self];
    if (!acc || !res || !kinds) { /* out of memory: it keeps what it had, undecided */
        json_decref(acc);
        json_decref(res);
        json_decref(kinds);
        out->accepted = json_incref((json_t *)had);
        return;
    }
    held_names(crds, decided, n, self, group, res, kinds);
    const char *reason = NULL;
    char msg[512] = "";
    static const struct {
        const char *key, *reason;
        int kinds;
    } one[] = {{"plural", "PluralConflict", 0},
               {"singular", "SingularConflict", 0},
               {"kind", "KindConflict", 1},
               {"listKind", "ListKindConflict", 1}};
    for (size_t k = 0; k < sizeof one / sizeof *one; k++) {
        const char *w = api_json_str(want, one[k].key);
        if (name_taken(group, w, api_json_str(had, one[k].key), one[k].kinds ? kinds : res,
                       one[k].kinds, msg, sizeof msg))
            reason = one[k].reason;
        else
            json_object_set(acc, one[k].key, json_object_get(want, one[k].key));
    }
    /* Short names: each must be ours already or free. */
    const json_t *sn_want = json_object_get(want, "shortNames");
    const json_t *sn_had = json_object_get(had, "shortNames");
    if (!api_json_same(sn_want, sn_had)) {
        int bad = 0;
        size_t i, j;
        json_t *sn, *h;
        json_array_foreach(sn_want, i, sn) {
            const char *v = json_string_value(sn) ?: "";
            int ours = !strcmp(v, api_json_str(had, "plural")) ||
                       !strcmp(v, api_json_str(had, "singular"));
            json_array_foreach(sn_had, j, h)
                ours |= json_equal(h, sn);
            if (builtin_holds(group, v, 0) || (!ours && json_object_get(res, v))) {
                snprintf(msg, sizeof msg, "\"%s\" is already in use", v);
                bad = 1;
            }
        }
        if (bad)
            reason = "ShortNamesConflict";
        else if (sn_want)
            json_object_set(acc, "shortNames", (json_t *)sn_want);
        else
            json_object_del(acc, "shortNames");
    }
    const json_t *cat = json_object_get(want, "categories");
    if (cat)
        json_object_set(acc, "categories", (json_t *)cat);
    else
        json_object_del(acc, "categories");
    /* Keys shared with a built-in: never served, whatever the names say. */
    if (!reason && api_crd_builtin_clash(group, api_json_str(want, "plural"))) {
        reason = "PluralConflict";
        snprintf(msg, sizeof msg, "\"%s\" is already in use", api_json_str(want, "plural"));
    }
    out->accepted = acc;
    out->condition =
        reason ? json_pack("{s:s, s:s, s:s, s:s}", "type", "NamesAccepted", "status", "False",
                           "reason", reason, "message", msg)
               : json_pack("{s:s, s:s, s:s, s:s}", "type", "NamesAccepted", "status", "True",
                           "reason", "NoConflicts", "message", "no conflicts found");
    out->serve = !reason && out->condition;
    json_decref(res);
    json_decref(kinds);
}

/* ---- the status of a CRD ---- */

/* Set condition `c` (a borrowed {type, status, reason, message}) in the
 * status' conditions: its lastTransitionTime is now when its status changes,
 * else kept. Returns 1 if anything but the time changed. */
static int set_condition(json_t *status, const json_t *c, const char *now)
{
    json_t *conds = json_object_get(status, "conditions");
    if (!json_is_array(conds)) {
        conds = json_array();
        json_object_set_new(status, "conditions", conds);
    }
    json_t *have = NULL;
    size_t i;
    json_t *x;
    json_array_foreach(conds, i, x)
        if (!strcmp(api_json_str(x, "type"), api_json_str(c, "type"))) have = x;
    if (!have) {
        have = json_deep_copy(c);
        json_object_set_new(have, "lastTransitionTime", json_string(now));
        json_array_append_new(conds, have);
        return 1;
    }
    static const char *const keys[] = {"status", "reason", "message"};
    int changed = 0;
    if (strcmp(api_json_str(have, "status"), api_json_str(c, "status")))
        json_object_set_new(have, "lastTransitionTime", json_string(now));
    for (size_t k = 0; k < 3; k++) {
        if (strcmp(api_json_str(have, keys[k]), api_json_str(c, keys[k]))) changed = 1;
        json_object_set(have, keys[k], json_object_get(c, keys[k]));
    }
    return changed;
}

/* Make crd's status say what `nm` decided (names, NamesAccepted, Established),
 * its approval condition, and its stored versions. Returns 0 to write, -1
 * when nothing but times would change (crd_rewrite's convention). */
static int set_status(json_t *crd, void *arg)
{
    const naming_t *nm = arg;
    const json_t *spec = json_object_get(crd, "spec");
    json_t *status = json_object_get(crd, "status");
    if (!json_is_object(status)) {
        status = json_object();
        json_object_set_new(crd, "status", status);
    }
    char now[32];
    api_now_rfc3339(now);
    int changed = 0;
    if (!api_json_same(json_object_get(status, "acceptedNames"), nm->accepted)) {
        json_object_set(status, "acceptedNames", nm->accepted);
        changed = 1;
    }
    changed |= set_condition(status, nm->condition, now);
    json_t *est =
        nm->serve
            ? json_pack("{s:s, s:s, s:s, s:s}", "type", "Established", "status", "True", "reason",
                        "InitialNamesAccepted", "message", "the initial names have been accepted")
            : json_pack("{s:s, s:s, s:s, s:s}", "type", "Established", "status", "False", "reason",
                        "NotAccepted", "message", "not all names are accepted");
    if (est) changed |= set_condition(status, est, now);
    json_decref(est);
    json_t *appr = api_crd_approval_condition(crd);
    if (appr) changed |= set_condition(status, appr, now);
    json_decref(appr);
    /* storedVersions: every version ever stored, the storage one added. */
    json_t *stored = json_object_get(status, "storedVersions");
    if (!json_is_array(stored)) {
        stored = json_array();
        json_object_set_new(status, "storedVersions", stored);
        changed = 1;
    }
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(spec, "versions"), i, v) {
        if (!json_is_true(json_object_get(v, "storage"))) continue;
        int have = 0;
        size_t j;
        json_t *s;
        json_array_foreach(stored, j, s)
            have |= json_equal(s, json_object_get(v, "name"));
        if (!have) {
            json_array_append(stored, json_object_get(v, "name"));
            changed = 1;
        }
    }
    return changed ? 0 : -1;
}

/* Does the cached CRD's status differ from what it should say? Checked on
 * the watch cache's copy, so that the once-a-second pass reads the store
 * only for a CRD that needs a write. */
static int status_stale(const json_t *crd, const naming_t *nm)
{
    json_t *copy = json_deep_copy(crd);
    int stale = copy && set_status(copy, (void *)nm) == 0;
    json_decref(copy);
    return stale;
}

/* The field manager of the controller's writes, as Kubernetes names it. */
#define CRD_MANAGER "kube-apiserver"

/* The same edit written to the store directly, for a CRD that the write
 * path refuses (one stored before its kind of CRD was refused: it must still
 * be able to go). A conflict is left for the next pass. */
static int crd_rewrite_stored(crd_ctl_t *c, const char *name, int (*edit)(json_t *crd, void *arg),
                              void *arg)
{
    char key[STORE_KEY_MAX + 1];
    snprintf(key, sizeof key, "/registry/apiextensions.k8s.io/customresourcedefinitions/%s", name);
    store_kv_t *kv;
    int rc = store_get(c->srv->cfg.store, key, 0, &kv);
    if (rc) return rc;
    json_t *crd = json_loadb(kv->value, kv->value_len, 0, NULL);
    int64_t rev = kv->mod_rev, out_rev;
    free(kv);
    if (!crd) return KP_ECORRUPT;
    if (edit(crd, arg) == 0) {
        json_t *meta = json_object_get(crd, "metadata");
        if (json_object_get(meta, "deletionTimestamp") &&
            !json_array_size(json_object_get(meta, "finalizers"))) {
            rc = store_delete(c->srv->cfg.store, key, rev, &out_rev);
        } else {
            char *text = json_dumps(crd, JSON_COMPACT);
            rc = text ? store_update(c->srv->cfg.store, key, text, strlen(text), rev, &out_rev)
                      : KP_ENOMEM;
            free(text);
        }
    }
    json_decref(crd);
    return rc;
}

/* Read-modify-write of a CRD through the normal write path (an in-process
 * request: validation, managedFields, the watch cache): `edit` returns 0 to
 * write, -1 for no change; `sub` is "" for the object, "status" for its
 * status. The write carries the read's resourceVersion: a conflict is left
 * for the next pass. A CRD the write path finds invalid (422) is rewritten
 * in the store (crd_rewrite_stored). 0, or KP_EIO when the write was
 * refused otherwise (logged). */
static int crd_rewrite(crd_ctl_t *c, const char *name, const char *sub,
                       int (*edit)(json_t *crd, void *arg), void *arg)
{
    char path[512];
    snprintf(path, sizeof path, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/%s%s%s",
             name, *sub ? "/" : "", sub);
    json_t *crd = NULL;
    int code = 0;
    int rc = api_internal(c->srv, "GET", path, NULL, CRD_MANAGER, &code, &crd);
    if (rc || code != 200 || !json_is_object(crd)) {
        json_decref(crd);
        return rc ? rc : code == 404 ? 0 : KP_EIO;
    }
    if (edit(crd, arg) == 0) {
        json_t *reply = NULL;
        rc = api_internal(c->srv, "PUT", path, crd, CRD_MANAGER, &code, &reply);
        if (!rc && code == 422) {
            rc = crd_rewrite_stored(c, name, edit, arg);
        } else if (!rc && code >= 300 && code != 409 && code != 404) {
            log_warn("crd", "%s: writing%s%s: %d %s", name, *sub ? " " : "", sub, code,
                     api_json_str(reply, "message"));
            rc = KP_EIO;
        }
        json_decref(reply);
    }
    json_decref(crd);
    return rc;
}

static int drop_finalizer(json_t *crd, void *arg)
{
    (void)arg;
    json_t *meta = json_object_get(crd, "metadata");
    json_t *fin = json_object_get(meta, "finalizers");
    size_t i;
    json_t *f;
    json_array_foreach(fin, i, f) {
        if (!strcmp(json_string_value(f) ?: "", API_CRD_FINALIZER)) {
            json_array_remove(fin, i);
            break;
        }
    }
    return 0; /* the update path removes a deleted object whose last finalizer goes */
}

/* Delete every object of a CRD being deleted, through the normal delete path
 * (an in-process DELETE of the collection, all namespaces, through a served
 * version): their finalizers run and their watchers see them go, as
 * Kubernetes' CRD finalizer does. Returns 0 once none is left, KP_EBUSY
 * while some remain (their finalizers hold them). A CRD whose prefix a
 * built-in shares (stored before such CRDs were refused) owns no keys: none
 * is deleted. A CRD serving no version has its objects' keys deleted
 * directly, as no path reaches them. */
static int delete_objects(crd_ctl_t *c, const json_t *crd)
{
    const json_t *spec = json_object_get(crd, "spec");
    const char *group = api_json_str(spec, "group"),
               *plural = api_json_str(json_object_get(spec, "names"), "plural");
    const api_resource_t *b = api_crd_builtin_clash(group, plural);
    if (b) {
        log_warn("crd", "%s.%s: its objects would be the built-in %s: none deleted", plural, group,
                 b->resource);
        return 0;
    }
    api_resource_t r = {.group = group, .resource = plural};
    char prefix[STORE_KEY_MAX + 1];
    int rc = api_key_prefix(&r, prefix, sizeof prefix);
    if (rc || !*group || !*plural) return rc; /* no key can have such a prefix */
    const char *version = NULL;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(spec, "versions"), i, v)
        if (json_is_true(json_object_get(v, "served")) && !version)
            version = api_json_str(v, "name");
    if (version) {
        char path[512];
        snprintf(path, sizeof path, "/apis/%s/%s/%s?propagationPolicy=Background", group,
                 version, plural);
        int code = 0;
        json_t *reply = NULL;
        rc = api_internal(c->srv, "DELETE", path, NULL, CRD_MANAGER, &code, &reply);
        if (!rc && code >= 300 && code != 404)
            log_warn("crd", "%s.%s: deleting its objects: %d %s", plural, group, code,
                     api_json_str(reply, "message"));
        json_decref(reply);
        if (rc) return rc;
    }
    store_range_t *page;
    if ((rc = store_range(c->srv->cfg.store, prefix, NULL, version ? 1 : 500, 0, &page)))
        return rc;
    size_t left = page->count;
    for (size_t k = 0; !version && k < page->count && !rc; k++) {
        int64_t rev;
        rc = store_delete(c->srv->cfg.store, page->kvs[k].key, page->kvs[k].mod_rev, &rev);
        if (rc == KP_ECONFLICT || rc == KP_ENOTFOUND) rc = 0; /* next pass */
    }
    store_range_free(page);
    return rc ? rc : left ? KP_EBUSY : 0;
}

static int has_finalizer(const json_t *crd)
{
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(json_object_get(crd, "metadata"), "finalizers"), i, f)
        if (!strcmp(json_string_value(f) ?: "", API_CRD_FINALIZER)) return 1;
    return 0;
}

/* Add the entries serving crd (its served versions) to dyn/keys (n of cap),
 * reusing those served now; *changed is set when one is new. */
static void serve_crd(crd_ctl_t *c, const json_t *crd, const char *name, api_dyn_t ***dyn,
                      char ***keys, size_t *n, size_t *cap, int *changed)
{
    size_t j;
    json_t *v;
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
                log_error("crd", "%s: serving version %s: %s", name, api_json_str(v, "name"),
                          err_str(rc));
                continue;
            }
            *changed = 1;
        }
        char *k = strdup(key);
        if (*n == *cap) {
            *cap *= 2;
            api_dyn_t **nd = realloc(*dyn, *cap * sizeof **dyn);
            if (nd) *dyn = nd;
            char **nk = nd ? realloc(*keys, *cap * sizeof **keys) : NULL;
            if (nk) *keys = nk;
            if (!nd || !nk) *cap /= 2;
        }
        if (!k || *n == *cap) {
            free(k);
            api_dyn_unref(d);
            return;
        }
        (*dyn)[*n] = d;
        (*keys)[*n] = k;
        (*n)++;
    }
}

/* One pass: make the served entries and the CRDs' status match the CRDs. */
static void sync_all(crd_ctl_t *c)
{
    wc_list_t *l;
    if (wc_list(c->cache, "", NULL, 0, 0, 0, &l)) return;
    size_t cap = 8, n = 0;
    api_dyn_t **dyn = calloc(cap, sizeof *dyn);
    char **keys = calloc(cap, sizeof *keys);
    json_t **crds = calloc(l->count + 1, sizeof *crds); /* parsed, ours */
    naming_t *names = calloc(l->count + 1, sizeof *names);
    int changed = 0, parsed = 1;
    for (size_t i = 0; crds && parsed && i < l->count; i++)
        parsed = !wc_obj_copy(l->objs[i], &crds[i]);
    for (size_t i = 0; dyn && keys && crds && parsed && names && i < l->count; i++) {
        const json_t *crd = crds[i];
        const char *name = l->objs[i]->name;
        if (json_object_get(json_object_get(crd, "metadata"), "deletionTimestamp")) {
            /* It keeps its names until it is gone. */
            names[i].accepted =
                json_incref(json_object_get(json_object_get(crd, "status"), "acceptedNames"));
            /* Served while its objects go (reads, watches and deletes; not
             * creates), as Kubernetes serves a terminating CRD. */
            serve_crd(c, crd, name, &dyn, &keys, &n, &cap, &changed);
            if (has_finalizer(crd) && !delete_objects(c, crd))
                crd_rewrite(c, name, "", drop_finalizer, NULL);
            continue;
        }
        decide_names((const json_t *const *)crds, names, l->count, i);
        if (!names[i].condition) continue; /* out of memory: the next pass decides */
        if (names[i].serve) serve_crd(c, crd, name, &dyn, &keys, &n, &cap, &changed);
        if (status_stale(crd, &names[i])) crd_rewrite(c, name, "status", set_status, &names[i]);
    }
    int whole = crds && parsed && names; /* else the pass saw nothing: keep what is served */
    for (size_t i = 0; names && i < l->count; i++)
        naming_clear(&names[i]);
    free(names);
    for (size_t i = 0; crds && i < l->count; i++)
        json_decref(crds[i]);
    free(crds);
    wc_list_free(l);
    if (!dyn || !keys || !whole) {
        for (size_t i = 0; i < n; i++) {
            api_dyn_unref(dyn[i]);
            free(keys[i]);
        }
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
        for (size_t k = 0; k < n && !kept; k++)
            kept = dyn[k] == c->dyn[i];
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

/* Resync every second regardless of changes, so that a status write lost
 * to a conflict is retried. */
static void crd_pass(void *arg) { sync_all(arg); }

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
    int rc = api_loop_start(cache, CRD_RESYNC_MS, crd_pass, c, &c->loop);
    if (rc) {
        free(c);
        return rc;
    }
    s->crd = c;
    return 0;
}

void api_crd_stop(apiserver_t *s)
{
    crd_ctl_t *c = s->crd;
    if (!c) return;
    api_loop_stop(c->loop);
    for (size_t i = 0; i < c->n; i++) {
        api_dyn_unref(c->dyn[i]);
        free(c->keys[i]);
    }
    free(c->dyn);
    free(c->keys);
    free(c);
    s->crd = NULL;
}
