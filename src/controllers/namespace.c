/*
 * namespace.c -- the namespace controller (Kubernetes' namespace deleter).
 *
 * INVARIANT: a namespace that is being deleted (deletionTimestamp, phase
 * Terminating) loses all its content, and once nothing is left in it, its
 * "kubernetes" finalizer goes (PUT .../namespaces/NAME/finalize), after
 * which the API server removes it (when metadata.finalizers is empty too).
 * While content remains, the namespace's status conditions say what and why.
 *
 * OWNS: the deletion of every namespaced object in a terminating namespace,
 * the namespace's deletion conditions (/status), and the "kubernetes"
 * entry of spec.finalizers.
 *
 *   sync(name): GET the namespace (live, as Kubernetes) -> not deleted, or
 *     no "kubernetes" finalizer: done -> for every namespaced resource: list,
 *     delete each object (propagationPolicy Background; the SDK has no
 *     deletecollection call, and Kubernetes itself falls back to this), list
 *     again and count what remains, by resource and by finalizer -> write the
 *     conditions when they changed -> content left: look again after
 *     estimate/2+1 s (estimate: the longest pod grace period, or 15 s when
 *     only finalizers hold objects) -> none left: finalize.
 *
 * Resources: asked of discovery at each sync, as Kubernetes'
 * namespaced_resources_deleter does (concurrent syncs share one read):
 * every namespaced resource, in its group's
 * preferred version, that can be listed and deleted -- built-in kinds and
 * custom resources alike. A group-version discovery could not read counts
 * as NamespaceDeletionDiscoveryFailure, and the namespace waits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controllers/controller.h"
#include "controllers/ctrl_util.h"
#include "lib/err.h"
#include "lib/log.h"

#define FINALIZER_ESTIMATE_S 15 /* Kubernetes' wait when finalizers hold content */
#define MAX_FINALIZERS       32 /* distinct finalizers counted */
#define MSG_MAX              2048


typedef struct ns_ctl {
    ctrl_t *c;
    kc_informer_t *ns;
} ns_ctl_t;

/* What one pass over the content found. */
typedef struct tally {
    char remaining[MSG_MAX]; /* "pods. has 3 resource instances, ..." (unsorted parts) */
    char *parts[64];
    size_t nparts;
    struct {
        char name[256];
        int count;
    } fin[MAX_FINALIZERS];
    size_t nfin;
    char errors[MSG_MAX];
    int nerrors;
    size_t discovery_failed; /* group-versions discovery could not read */
    long long estimate; /* seconds */
} tally_t;

static void on_ns(void *arg, const json_t *obj)
{
    ns_ctl_t *s = arg;
    if (json_object_get(json_object_get(obj, "metadata"), "deletionTimestamp"))
        ctrl_enqueue_obj(s->c, obj);
}

static void on_ns_update(void *arg, const json_t *old, const json_t *obj)
{
    (void)old;
    on_ns(arg, obj);
}

static int ns_init(ctrl_t *c, void **self)
{
    ns_ctl_t *s = calloc(1, sizeof *s);
    if (!s) return KP_ENOMEM;
    s->c = c;
    s->ns = ctrl_informer(c, &kc_namespaces);
    if (!s->ns) {
        free(s);
        return KP_ENOMEM;
    }
    kc_handlers_t h = {.on_add = on_ns, .on_update = on_ns_update, .arg = s};
    int rc = kc_informer_add_handlers(s->ns, &h);
    if (rc) {
        free(s);
        return rc;
    }
    *self = s;
    return 0;
}

static void ns_free(void *self)
{
    free(self);
}

static int has_kubernetes_finalizer(const json_t *ns)
{
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(json_object_get(ns, "spec"), "finalizers"), i, f) {
        if (json_is_string(f) && !strcmp(json_string_value(f), "kubernetes")) return 1;
    }
    return 0;
}

static void add_error(tally_t *t, const char *fmt, const char *a, const char *b)
{
    size_t len = strlen(t->errors);
    snprintf(t->errors + len, sizeof t->errors - len, "%s", len ? ", " : "");
    len = strlen(t->errors);
    snprintf(t->errors + len, sizeof t->errors - len, fmt, a, b);
    t->nerrors++;
}

/* The longest grace period of the pods that still run (Kubernetes'
 * estimateGracefulTermination). */
static long long pod_estimate(const json_t *items)
{
    long long est = 0;
    size_t i;
    json_t *p;
    json_array_foreach(items, i, p) {
        const char *phase =
            json_string_value(json_object_get(json_object_get(p, "status"), "phase"));
        if (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"))) continue;
        const json_t *g =
            json_object_get(json_object_get(p, "spec"), "terminationGracePeriodSeconds");
        long long v = json_is_integer(g) ? json_integer_value(g) : 30;
        if (v > est) est = v;
    }
    return est;
}

/* Delete every object of r in ns, then count what remains into t. */
static void empty_resource(ns_ctl_t *s, const kc_resource_t *r, const char *ns, int64_t deleted_at,
                           tally_t *t)
{
    kc_client_t *kc = ctrl_client(s->c);
    json_t *list = NULL;
    int rc = kc_list(kc, r, ns, NULL, &list);
    if (rc == KP_ENOTFOUND) return; /* not served (a CRD on its way) */
    char what[200];
    snprintf(what, sizeof what, "%s.%s", r->resource, r->group);
    if (rc) {
        add_error(t, "%s: %s", what, err_str(rc));
        return;
    }
    const json_t *items = json_object_get(list, "items");
    long long estimate = !strcmp(r->resource, "pods") && !*r->group ? pod_estimate(items) : 0;
    /* No wait beyond the grace periods since the namespace was deleted. */
    if (deleted_at >= 0 && (long long)(time(NULL) - deleted_at) >= estimate) estimate = 0;
    json_t *opts = json_pack("{s:s, s:s, s:s}", "kind", "DeleteOptions", "apiVersion", "v1",
                             "propagationPolicy", "Background");
    size_t i, deleted = 0;
    json_t *o;
    json_array_foreach(items, i, o) {
        if (json_object_get(json_object_get(o, "metadata"), "deletionTimestamp")) continue;
        rc = kc_delete(kc, r, ns, ctrl_meta_str(o, "name"), opts, NULL);
        if (rc && rc != KP_ENOTFOUND) {
            add_error(t, "%s: %s", what, err_str(rc));
            break;
        }
        deleted++;
    }
    json_decref(opts);
    if (deleted) { /* what is left after the deletes */
        json_decref(list);
        list = NULL;
        if ((rc = kc_list(kc, r, ns, NULL, &list))) {
            add_error(t, "%s: %s", what, err_str(rc));
            return;
        }
        items = json_object_get(list, "items");
    }
    size_t left = json_array_size(items);
    if (!left) {
        json_decref(list);
        return;
    }
    int finalizers = 0;
    json_array_foreach(items, i, o) {
        size_t k;
        json_t *f;
        json_array_foreach(json_object_get(json_object_get(o, "metadata"), "finalizers"), k, f) {
            const char *name = json_string_value(f);
            if (!name) continue;
            finalizers = 1;
            size_t j = 0;
            while (j < t->nfin && strcmp(t->fin[j].name, name))
                j++;
            if (j == t->nfin && t->nfin < MAX_FINALIZERS) {
                snprintf(t->fin[j].name, sizeof t->fin[j].name, "%s", name);
                t->fin[j].count = 0;
                t->nfin++;
            }
            if (j < t->nfin) t->fin[j].count++;
        }
    }
    json_decref(list);
    if (t->nparts < sizeof t->parts / sizeof t->parts[0]) {
        char part[300];
        snprintf(part, sizeof part, "%s has %zu resource instances", what, left);
        t->parts[t->nparts++] = strdup(part);
    }
    if (!estimate && finalizers) estimate = FINALIZER_ESTIMATE_S;
    if (!estimate && !finalizers) {
        /* Nothing holds them: they should have gone. */
        char msg[300];
        snprintf(msg, sizeof msg, "unexpected items still remain in namespace: %s for gvr: %s", ns,
                 what);
        add_error(t, "%s%s", msg, "");
    }
    if (estimate > t->estimate) t->estimate = estimate;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Join sorted parts with ", " into out. */
static void join(char **parts, size_t n, char *out, size_t len)
{
    qsort(parts, n, sizeof *parts, cmp_str);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(out);
        snprintf(out + l, len - l, "%s%s", i ? ", " : "", parts[i]);
    }
}

/* Set condition `type` in conds (a JSON array, modified) to status, reason,
 * message; lastTransitionTime moves only with the status. 1 if it changed. */
static int set_condition(json_t *conds, const char *type, const char *status, const char *reason,
                         const char *msg, const char *now)
{
    size_t i;
    json_t *c;
    json_array_foreach(conds, i, c) {
        if (!json_is_object(c)) continue;
        const char *t = json_string_value(json_object_get(c, "type"));
        if (!t || strcmp(t, type)) continue;
        const char *os = json_string_value(json_object_get(c, "status"));
        const char *orsn = json_string_value(json_object_get(c, "reason"));
        const char *om = json_string_value(json_object_get(c, "message"));
        int same_status = os && !strcmp(os, status);
        if (same_status && orsn && !strcmp(orsn, reason) && om && !strcmp(om, msg)) return 0;
        if (!same_status) json_object_set_new(c, "lastTransitionTime", json_string(now));
        json_object_set_new(c, "status", json_string(status));
        json_object_set_new(c, "reason", json_string(reason));
        json_object_set_new(c, "message", json_string(msg));
        return 1;
    }
    json_array_append_new(conds,
                          json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", type, "status", status,
                                    "lastTransitionTime", now, "reason", reason, "message", msg));
    return 1;
}

/* Write the deletion conditions of ns (a copy the caller owns) when they
 * changed. */
static int update_conditions(ns_ctl_t *s, json_t *ns, tally_t *t)
{
    char now[32];
    time_t tt = time(NULL);
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_t *st = json_object_get(ns, "status");
    if (!json_is_object(st)) json_object_set_new(ns, "status", st = json_object());
    json_t *conds = json_object_get(st, "conditions");
    if (!json_is_array(conds)) json_object_set_new(st, "conditions", conds = json_array());
    int changed = 0;
    char msg[MSG_MAX + 128];
    if (t->discovery_failed) {
        snprintf(msg, sizeof msg, "Discovery failed for some groups, %zu failing",
                 t->discovery_failed);
        changed |= set_condition(conds, "NamespaceDeletionDiscoveryFailure", "True",
                                 "DiscoveryFailed", msg, now);
    } else {
        changed |=
            set_condition(conds, "NamespaceDeletionDiscoveryFailure", "False",
                          "ResourcesDiscovered", "All resources successfully discovered", now);
    }
    changed |=
        set_condition(conds, "NamespaceDeletionGroupVersionParsingFailure", "False",
                      "ParsedGroupVersions", "All legacy kube types successfully parsed", now);
    if (t->nerrors) {
        snprintf(msg, sizeof msg, "Failed to delete all resource types, %d remaining: %s",
                 t->nerrors, t->errors);
        changed |= set_condition(conds, "NamespaceDeletionContentFailure", "True",
                                 "ContentDeletionFailed", msg, now);
    } else {
        changed |=
            set_condition(conds, "NamespaceDeletionContentFailure", "False", "ContentDeleted",
                          "All content successfully deleted, may be waiting on finalization", now);
    }
    if (t->nparts) {
        char list[MSG_MAX];
        join(t->parts, t->nparts, list, sizeof list);
        snprintf(msg, sizeof msg, "Some resources are remaining: %s", list);
        changed |= set_condition(conds, "NamespaceContentRemaining", "True", "SomeResourcesRemain",
                                 msg, now);
    } else {
        changed |= set_condition(conds, "NamespaceContentRemaining", "False", "ContentRemoved",
                                 "All content successfully removed", now);
    }
    if (t->nfin) {
        char *parts[MAX_FINALIZERS];
        char bufs[MAX_FINALIZERS][300];
        for (size_t i = 0; i < t->nfin; i++) {
            snprintf(bufs[i], sizeof bufs[i], "%s in %d resource instances", t->fin[i].name,
                     t->fin[i].count);
            parts[i] = bufs[i];
        }
        char list[MSG_MAX];
        join(parts, t->nfin, list, sizeof list);
        snprintf(msg, sizeof msg, "Some content in the namespace has finalizers remaining: %s",
                 list);
        changed |= set_condition(conds, "NamespaceFinalizersRemaining", "True",
                                 "SomeFinalizersRemain", msg, now);
    } else {
        changed |=
            set_condition(conds, "NamespaceFinalizersRemaining", "False", "ContentHasNoFinalizers",
                          "All content-preserving finalizers finished", now);
    }
    if (!changed) return 0;
    int rc = kc_update(ctrl_client(s->c), &kc_namespaces, NULL, ns, "status", NULL, NULL);
    return rc == KP_ENOTFOUND ? 0 : rc;
}

/* Does the namespace deleter empty resources like e? */
static int deletable(const kc_api_resource_t *e)
{
    const unsigned need = KC_VERB_LIST | KC_VERB_DELETE;
    return e->preferred && e->r.namespaced && (e->verbs & need) == need;
}

/* Empty every namespaced resource discovery lists (see the top). */
static int empty_all(ns_ctl_t *s, const char *ns, int64_t deleted_at, tally_t *t)
{
    kc_restmap_t *m;
    int rc = kc_discovery_map(ctrl_discovery(s->c), 0, &m);
    if (rc) return rc;
    t->discovery_failed = kc_restmap_failed(m);
    for (size_t i = 0; i < kc_restmap_count(m); i++) {
        const kc_api_resource_t *e = kc_restmap_at(m, i);
        if (deletable(e)) empty_resource(s, &e->r, ns, deleted_at, t);
    }
    kc_restmap_unref(m);
    return 0;
}

static int ns_sync(ctrl_t *c, void *self, const char *key)
{
    ns_ctl_t *s = self;
    json_t *ns = NULL;
    int rc = kc_get(ctrl_client(c), &kc_namespaces, NULL, key, &ns);
    if (rc == KP_ENOTFOUND) return 0;
    if (rc) return rc;
    if (!json_object_get(json_object_get(ns, "metadata"), "deletionTimestamp") ||
        !has_kubernetes_finalizer(ns)) {
        json_decref(ns);
        return 0;
    }
    tally_t *t = calloc(1, sizeof *t);
    if (!t) {
        json_decref(ns);
        return KP_ENOMEM;
    }
    int64_t deleted_at = ctrl_time(
        json_string_value(json_object_get(json_object_get(ns, "metadata"), "deletionTimestamp")));
    rc = empty_all(s, key, deleted_at, t);
    if (!rc) rc = update_conditions(s, ns, t);
    long long estimate = t->estimate;
    int failed = t->nerrors || t->discovery_failed;
    size_t left = t->nparts;
    for (size_t i = 0; i < t->nparts; i++)
        free(t->parts[i]);
    free(t);
    if (!rc && failed) rc = KP_EUNAVAILABLE; /* retried with backoff, as Kubernetes */
    if (!rc && left) {
        ctrl_enqueue_after(c, key, (int)(estimate / 2 + 1) * 1000);
    } else if (!rc) {
        /* Nothing left: drop our finalizer; the API server removes the
         * namespace when no finalizer is left. */
        json_t *fin = json_array();
        size_t i;
        json_t *f;
        json_array_foreach(json_object_get(json_object_get(ns, "spec"), "finalizers"), i, f) {
            if (!json_is_string(f) || strcmp(json_string_value(f), "kubernetes"))
                json_array_append(fin, f);
        }
        json_t *spec = json_object_get(ns, "spec");
        if (!json_is_object(spec)) json_object_set_new(ns, "spec", spec = json_object());
        json_object_set_new(spec, "finalizers", fin);
        json_object_del(json_object_get(ns, "metadata"), "resourceVersion");
        rc = kc_update(ctrl_client(c), &kc_namespaces, NULL, ns, "finalize", NULL, NULL);
        if (rc == KP_ENOTFOUND) rc = 0;
        if (!rc) log_info("namespace", "%s: content removed, finalized", key);
    }
    json_decref(ns);
    return rc;
}

const ctrl_ops_t ctrl_namespace = {
    .name = "namespace",
    .init = ns_init,
    .sync = ns_sync,
    .free = ns_free,
};
