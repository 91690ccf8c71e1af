/*
 * clusterroleaggregation.c -- the ClusterRole aggregation controller
 * (Kubernetes' pkg/controller/clusterroleaggregation).
 *
 * INVARIANT: the rules of a ClusterRole with an aggregationRule are the
 * rules of every other ClusterRole one of its clusterRoleSelectors selects,
 * those roles taken in name order, each rule once (a rule equal to one
 * already taken is skipped). `admin`, `edit` and `view` are built so from
 * the system:aggregate-to-* roles, and a CRD's author extends them by
 * labelling a ClusterRole.
 *
 * OWNS: the `rules` of aggregated ClusterRoles, and nothing else of them.
 *
 * Keys are the names of aggregated ClusterRoles: any ClusterRole added,
 * changed or deleted queues every aggregated one (a label change may move a
 * role into or out of any selector).
 */
#include <stdlib.h>
#include <string.h>

#include "controllers/controller.h"
#include "controllers/ctrl_util.h"
#include "lib/err.h"

typedef struct agg_ctl {
    ctrl_t *c;
    kc_informer_t *roles;
} agg_ctl_t;

static int aggregated(const json_t *role)
{
    return json_is_object(json_object_get(role, "aggregationRule"));
}

static void queue_all(void *arg, const json_t *changed)
{
    agg_ctl_t *a = arg;
    (void)changed;
    json_t **objs = NULL;
    size_t n = 0;
    if (kc_informer_list(a->roles, NULL, NULL, &objs, &n)) return;
    for (size_t i = 0; i < n; i++)
        if (aggregated(objs[i])) ctrl_enqueue(a->c, ctrl_meta_str(objs[i], "name"));
    kc_objs_free(objs, n);
}

static void role_updated(void *arg, const json_t *old, const json_t *role)
{
    (void)old;
    queue_all(arg, role);
}

static int agg_init(ctrl_t *c, void **self)
{
    agg_ctl_t *a = calloc(1, sizeof *a);
    if (!a) return KP_ENOMEM;
    a->c = c;
    if (!(a->roles = ctrl_informer(c, &kc_clusterroles))) {
        free(a);
        return KP_ENOMEM;
    }
    kc_handlers_t h = {
        .on_add = queue_all, .on_update = role_updated, .on_delete = queue_all, .arg = a};
    int rc = kc_informer_add_handlers(a->roles, &h);
    if (rc) {
        free(a);
        return rc;
    }
    *self = a;
    return 0;
}

static void agg_free(void *self)
{
    free(self);
}

static int by_name(const void *x, const void *y)
{
    return strcmp(ctrl_meta_str(*(json_t *const *)x, "name"),
                  ctrl_meta_str(*(json_t *const *)y, "name"));
}

/* Whether any selector of `rule` (an aggregationRule) selects `role`. */
static int selected(const json_t *rule, const json_t *role)
{
    const json_t *labels = json_object_get(json_object_get(role, "metadata"), "labels");
    size_t i;
    const json_t *sel;
    json_array_foreach(json_object_get(rule, "clusterRoleSelectors"), i, sel) {
        if (ctrl_selector_matches(sel, labels)) return 1;
    }
    return 0;
}

/* The rules `role` aggregates, from `objs` (sorted by name): a new array. */
static json_t *aggregate(const json_t *role, json_t **objs, size_t n)
{
    const json_t *rule = json_object_get(role, "aggregationRule");
    const char *me = ctrl_meta_str(role, "name");
    json_t *rules = json_array();
    for (size_t i = 0; rules && i < n; i++) {
        if (!strcmp(ctrl_meta_str(objs[i], "name"), me) || !selected(rule, objs[i])) continue;
        size_t j;
        json_t *r;
        json_array_foreach(json_object_get(objs[i], "rules"), j, r) {
            size_t k;
            json_t *have;
            int dup = 0;
            json_array_foreach(rules, k, have)
                dup |= json_equal(have, r);
            if (!dup && json_array_append(rules, r)) {
                json_decref(rules);
                return NULL;
            }
        }
    }
    return rules;
}

static int agg_sync(ctrl_t *c, void *self, const char *key)
{
    agg_ctl_t *a = self;
    json_t *role = kc_informer_get(a->roles, key);
    if (!role || !aggregated(role)) {
        json_decref(role);
        return 0;
    }
    json_t **objs = NULL;
    size_t n = 0;
    int rc = kc_informer_list(a->roles, NULL, NULL, &objs, &n);
    if (rc) {
        json_decref(role);
        return rc;
    }
    if (n) qsort(objs, n, sizeof *objs, by_name);
    json_t *rules = aggregate(role, objs, n);
    kc_objs_free(objs, n);
    if (!rules) {
        json_decref(role);
        return KP_ENOMEM;
    }
    const json_t *have = json_object_get(role, "rules");
    int same = json_equal(rules, have) || (!json_array_size(rules) && !json_array_size(have));
    if (!same) {
        /* An update from the cached version: a conflict means a newer one
         * is on its way, and its event queues the role again. */
        json_t *upd = json_deep_copy(role);
        rc = upd ? 0 : KP_ENOMEM;
        if (!rc) json_object_set(upd, "rules", rules);
        if (!rc) rc = kc_update(ctrl_client(c), &kc_clusterroles, NULL, upd, NULL, NULL, NULL);
        json_decref(upd);
        if (rc == KP_ECONFLICT || rc == KP_ENOTFOUND) rc = 0;
    }
    json_decref(rules);
    json_decref(role);
    return rc;
}

const ctrl_ops_t ctrl_clusterroleaggregation = {
    .name = "clusterrole-aggregation",
    .event_source = "clusterrole-aggregation-controller",
    .init = agg_init,
    .sync = agg_sync,
    .free = agg_free,
};
