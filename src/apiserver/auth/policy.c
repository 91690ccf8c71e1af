/*
 * policy.c -- the bootstrap RBAC policy (policy.h's rows) made into objects
 * and reconciled at start, as kube-apiserver's rbac/bootstrap-roles
 * post-start hook does (pkg/registry/rbac/reconciliation):
 *
 *   - a missing object is created;
 *   - an object annotated rbac.authorization.kubernetes.io/autoupdate=false
 *     is left as it is;
 *   - otherwise it is extended, never narrowed: a role gains the rules it
 *     lacks (the atoms of the expected rules its own rules do not cover)
 *     and the aggregation selectors it lacks; a binding gains the subjects
 *     it lacks, and one whose roleRef differs is deleted and made again
 *     (roleRef cannot change); labels and annotations are added where
 *     missing, a user's values kept.
 *
 * Writes go through the normal write path (api_internal), so they carry
 * managedFields and reach the watch caches as any client's would.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/auth/authz.h"
#include "apiserver/auth/policy.h"
#include "apiserver/http/http.h"
#include "apiserver/rest/rest.h"
#include "apiserver/rest/watchcache.h"
#include "lib/err.h"
#include "lib/log.h"

#define RBAC_API       "/apis/rbac.authorization.k8s.io/v1"
#define RBAC_GROUP     "rbac.authorization.k8s.io"
#define RBAC_GV        RBAC_GROUP "/v1"
#define POLICY_MANAGER "kube-apiserver"
#define AUTOUPDATE     "rbac.authorization.kubernetes.io/autoupdate"

static json_t *strs(const char *const *v)
{
    json_t *a = json_array();
    for (size_t i = 0; a && v && v[i]; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

/* "key=value" into obj (an object) as key: value. */
static void set_pair(json_t *obj, const char *pair)
{
    const char *eq = strchr(pair, '=');
    if (!eq) return;
    char key[256];
    snprintf(key, sizeof key, "%.*s", (int)(eq - pair), pair);
    json_object_set_new(obj, key, json_string(eq + 1));
}

static json_t *meta_of(const char *name, const char *ns, const char *const *labels)
{
    json_t *l = json_pack("{s:s}", "kubernetes.io/bootstrapping", "rbac-defaults");
    for (size_t i = 0; l && labels && labels[i]; i++)
        set_pair(l, labels[i]);
    json_t *m = json_pack("{s:s,s:o,s:{s:s}}", "name", name, "labels", l, "annotations", AUTOUPDATE,
                          "true");
    if (m && ns) json_object_set_new(m, "namespace", json_string(ns));
    return m;
}

static json_t *rule_json(const pol_rule_t *r)
{
    json_t *o = json_object();
    if (!o) return NULL;
    json_object_set_new(o, "verbs", strs(r->verbs));
    if (r->groups) json_object_set_new(o, "apiGroups", strs(r->groups));
    if (r->resources) json_object_set_new(o, "resources", strs(r->resources));
    if (r->names) json_object_set_new(o, "resourceNames", strs(r->names));
    if (r->urls) json_object_set_new(o, "nonResourceURLs", strs(r->urls));
    return o;
}

json_t *api_policy_role_json(const pol_role_t *p)
{
    json_t *rules = json_array();
    for (size_t i = 0; rules && i < p->nrules; i++)
        json_array_append_new(rules, rule_json(&p->rules[i]));
    json_t *o = json_pack("{s:s,s:s,s:o,s:o}", "apiVersion", RBAC_GV, "kind",
                          p->ns ? "Role" : "ClusterRole", "metadata",
                          meta_of(p->name, p->ns, p->labels), "rules", rules);
    if (o && p->aggregate) {
        json_t *sels = json_array();
        for (size_t i = 0; sels && p->aggregate[i]; i++) {
            json_t *ml = json_object();
            set_pair(ml, p->aggregate[i]);
            json_array_append_new(sels, json_pack("{s:o}", "matchLabels", ml));
        }
        json_object_set_new(o, "aggregationRule", json_pack("{s:o}", "clusterRoleSelectors", sels));
    }
    return o;
}

json_t *api_policy_binding_json(const pol_binding_t *p)
{
    json_t *subjects = json_array();
    for (size_t i = 0; subjects && p->subjects && p->subjects[i]; i++) {
        const char *s = p->subjects[i], *colon = strchr(s, ':');
        if (!colon) continue;
        char kind[32];
        snprintf(kind, sizeof kind, "%.*s", (int)(colon - s), s);
        json_t *sub;
        if (!strcmp(kind, "ServiceAccount")) {
            const char *slash = strchr(colon + 1, '/');
            if (!slash) continue;
            char ns[256];
            snprintf(ns, sizeof ns, "%.*s", (int)(slash - colon - 1), colon + 1);
            sub = json_pack("{s:s,s:s,s:s}", "kind", kind, "name", slash + 1, "namespace", ns);
        } else {
            sub = json_pack("{s:s,s:s,s:s}", "kind", kind, "apiGroup", "rbac.authorization.k8s.io",
                            "name", colon + 1);
        }
        json_array_append_new(subjects, sub);
    }
    return json_pack("{s:s,s:s,s:o,s:{s:s,s:s,s:s},s:o}", "apiVersion", RBAC_GV, "kind",
                     p->ns ? "RoleBinding" : "ClusterRoleBinding", "metadata",
                     meta_of(p->name, p->ns, NULL), "roleRef", "apiGroup",
                     "rbac.authorization.k8s.io", "kind", p->role_kind, "name", p->role, "subjects",
                     subjects);
}

/* ---- reconciling ---- */

/* Expected's labels and annotations added to have's where missing. 1 when
 * something was added. */
static int merge_meta(json_t *have, const json_t *expected)
{
    int changed = 0;
    json_t *hm = json_object_get(have, "metadata");
    const json_t *em = json_object_get(expected, "metadata");
    static const char *const maps[] = {"labels", "annotations"};
    for (size_t m = 0; m < 2; m++) {
        json_t *h = json_object_get(hm, maps[m]);
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)json_object_get(em, maps[m]), k, v) {
            if (!h) json_object_set_new(hm, maps[m], h = json_object());
            if (!json_object_get(h, k)) {
                json_object_set(h, k, v);
                changed = 1;
            }
        }
    }
    return changed;
}

/* have extended by expected (a role): 1 when changed, -1 out of memory. */
static int extend_role(json_t *have, const json_t *expected)
{
    int changed = merge_meta(have, expected);
    json_t *rules = json_object_get(have, "rules");
    json_t *missing = api_rules_uncovered(rules, json_object_get(expected, "rules"));
    if (!missing) return -1;
    if (json_array_size(missing)) {
        if (!json_is_array(rules)) json_object_set_new(have, "rules", rules = json_array());
        json_array_extend(rules, missing);
        changed = 1;
    }
    json_decref(missing);
    const json_t *eagg = json_object_get(expected, "aggregationRule");
    if (eagg) {
        json_t *hagg = json_object_get(have, "aggregationRule");
        if (!json_is_object(hagg)) {
            json_object_set(have, "aggregationRule", (json_t *)eagg);
            changed = 1;
        } else {
            json_t *hs = json_object_get(hagg, "clusterRoleSelectors");
            if (!json_is_array(hs))
                json_object_set_new(hagg, "clusterRoleSelectors", hs = json_array());
            size_t i, j;
            json_t *e, *h;
            json_array_foreach(json_object_get(eagg, "clusterRoleSelectors"), i, e) {
                int found = 0;
                json_array_foreach(hs, j, h)
                    found |= json_equal(h, e);
                if (!found) {
                    json_array_append(hs, e);
                    changed = 1;
                }
            }
        }
    }
    return changed;
}

static int same_subject(const json_t *a, const json_t *b)
{
    static const char *const keys[] = {"kind", "name", "namespace"};
    for (size_t i = 0; i < 3; i++) {
        const char *x = json_string_value(json_object_get(a, keys[i]));
        const char *y = json_string_value(json_object_get(b, keys[i]));
        if (strcmp(x ? x : "", y ? y : "")) return 0;
    }
    return 1;
}

/* have extended by expected (a binding): 1 when changed. */
static int extend_binding(json_t *have, const json_t *expected)
{
    int changed = merge_meta(have, expected);
    json_t *subs = json_object_get(have, "subjects");
    if (!json_is_array(subs)) json_object_set_new(have, "subjects", subs = json_array());
    size_t i, j;
    json_t *e, *h;
    json_array_foreach(json_object_get(expected, "subjects"), i, e) {
        int found = 0;
        json_array_foreach(subs, j, h)
            found |= same_subject(h, e);
        if (!found) {
            json_array_append(subs, e);
            changed = 1;
        }
    }
    return changed;
}

/* Reconcile one object at `path` (its collection: `coll`); `absent`: its
 * watch cache has no such object, so the first attempt creates it without
 * asking (every object, on a first start). */
static int reconcile(apiserver_t *s, const char *coll, const char *path, const json_t *expected,
                     int binding, int absent)
{
    for (int attempt = 0; attempt < 5; attempt++) {
        int code = 0;
        json_t *have = NULL;
        int rc = 0;
        if (attempt == 0 && absent)
            code = 404;
        else if ((rc = api_internal(s, "GET", path, NULL, POLICY_MANAGER, &code, &have)))
            return rc;
        if (code == 404) {
            json_decref(have);
            rc = api_internal(s, "POST", coll, expected, POLICY_MANAGER, &code, NULL);
            if (rc) return rc;
            if (code == 409) continue; /* made meanwhile (another API server) */
            return code == 201 || code == 200 ? 0 : KP_EIO;
        }
        if (code != 200 || !have) {
            json_decref(have);
            return KP_EIO;
        }
        const char *au = json_string_value(json_object_get(
            json_object_get(json_object_get(have, "metadata"), "annotations"), AUTOUPDATE));
        if (au && !strcmp(au, "false")) {
            json_decref(have);
            return 0;
        }
        if (binding &&
            !json_equal(json_object_get(have, "roleRef"), json_object_get(expected, "roleRef"))) {
            /* roleRef is immutable: delete and make again. */
            json_decref(have);
            rc = api_internal(s, "DELETE", path, NULL, POLICY_MANAGER, &code, NULL);
            if (rc) return rc;
            continue;
        }
        int changed = binding ? extend_binding(have, expected) : extend_role(have, expected);
        if (changed < 0) {
            json_decref(have);
            return KP_ENOMEM;
        }
        if (changed) {
            json_object_del(json_object_get(have, "metadata"), "managedFields");
            rc = api_internal(s, "PUT", path, have, POLICY_MANAGER, &code, NULL);
            json_decref(have);
            if (rc) return rc;
            if (code == 409) continue; /* changed meanwhile: again */
            return code == 200 ? 0 : KP_EIO;
        }
        json_decref(have);
        return 0;
    }
    return KP_ECONFLICT;
}

/* Reconcile `obj` (taken) as the object `name` of `resource`, in ns
 * (NULL: cluster-scoped); logs a failure. */
static int reconcile_one(apiserver_t *s, const char *ns, const char *resource, const char *name,
                         json_t *obj, int binding)
{
    if (!obj) return KP_ENOMEM;
    char coll[512], path[1024];
    if (ns) snprintf(coll, sizeof coll, RBAC_API "/namespaces/%s/%s", ns, resource);
    else snprintf(coll, sizeof coll, RBAC_API "/%s", resource);
    snprintf(path, sizeof path, "%s/%s", coll, name);
    api_view_t *v = api_view_get(s);
    const wc_obj_t *cached = NULL;
    int absent =
        v && api_view_cached(v, RBAC_GROUP, "v1", resource, ns, name, &cached) == KP_ENOTFOUND;
    wc_obj_unref(cached);
    api_view_put(v);
    int rc = reconcile(s, coll, path, obj, binding, absent);
    json_decref(obj);
    if (rc) log_error("apiserver", "bootstrap policy: %s: %s", path, err_str(rc));
    return rc;
}

/* kplane's own bootstrap objects, beside Kubernetes' policy: the simulated
 * nodes of kplane server act as one user with a kubelet's role. */
static const pol_binding_t kplane_bindings[] = {
    {.name = "kplane:node-simulator",
     .role_kind = "ClusterRole",
     .role = "system:node",
     .subjects = (const char *const[]){"User:" APISERVER_NODE_SIMULATOR_USER, NULL}},
};

/* Reconcilers at once. On a first start each object is a write: one at a
 * time, the 124 objects took 57 ms (a commit each); 16 at a time, 14 ms,
 * their writes sharing commits and both cores. */
#define RECONCILERS 16

/* The reconcilers share one counter of the objects taken; each writes
 * through the normal path, so a few at once share the store's commits. */
struct api_policy_run {
    apiserver_t *srv;
    atomic_size_t next;
    atomic_int rc;
    pthread_t th[RECONCILERS];
    int started;
};

static size_t npolicy(void)
{
    return api_policy_nroles + api_policy_nbindings +
           sizeof kplane_bindings / sizeof kplane_bindings[0];
}

static int reconcile_at(apiserver_t *s, size_t i)
{
    if (i < api_policy_nroles) {
        const pol_role_t *p = &api_policy_roles[i];
        return reconcile_one(s, p->ns, p->ns ? "roles" : "clusterroles", p->name,
                             api_policy_role_json(p), 0);
    }
    i -= api_policy_nroles;
    const pol_binding_t *p = i < api_policy_nbindings ? &api_policy_bindings[i]
                                                      : &kplane_bindings[i - api_policy_nbindings];
    return reconcile_one(s, p->ns, p->ns ? "rolebindings" : "clusterrolebindings", p->name,
                         api_policy_binding_json(p), 1);
}

static void *reconciler(void *arg)
{
    api_policy_run_t *run = arg;
    for (size_t i;
         atomic_load(&run->rc) == 0 && (i = atomic_fetch_add(&run->next, 1)) < npolicy();) {
        int rc = reconcile_at(run->srv, i);
        int none = 0;
        if (rc) atomic_compare_exchange_strong(&run->rc, &none, rc);
    }
    return NULL;
}

int api_policy_begin(apiserver_t *s, api_policy_run_t **out)
{
    api_policy_run_t *run = calloc(1, sizeof *run);
    if (!run) return KP_ENOMEM;
    run->srv = s;
    atomic_init(&run->next, 0);
    atomic_init(&run->rc, 0);
    while (run->started < RECONCILERS &&
           !pthread_create(&run->th[run->started], NULL, reconciler, run))
        run->started++;
    *out = run;
    return 0;
}

int api_policy_wait(api_policy_run_t *run)
{
    if (!run) return 0;
    if (!run->started) reconciler(run); /* no thread to be had: this one does all */
    for (int i = 0; i < run->started; i++)
        pthread_join(run->th[i], NULL);
    int rc = atomic_load(&run->rc);
    if (!rc) log_info("apiserver", "bootstrap RBAC policy: %zu objects reconciled", npolicy());
    free(run);
    return rc;
}
