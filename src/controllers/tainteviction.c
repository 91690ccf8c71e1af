/*
 * tainteviction.c -- the taint eviction controller (Kubernetes'
 * taint-eviction-controller, the NoExecute half of the old taint manager).
 *
 * INVARIANT: no pod stays on a node with a NoExecute taint it does not
 * tolerate: a pod that tolerates none of them is deleted at once; a pod
 * whose tolerations carry tolerationSeconds is deleted when the first of
 * them runs out, counted from the taint's timeAdded (from when this
 * controller first saw the pod under it, for a taint without one); a pod
 * that tolerates every NoExecute taint forever stays.
 *
 * OWNS: those deletions, the DisruptionTarget condition it adds to a pod it
 * deletes (reason DeletionByTaintManager) and the TaintManagerEviction
 * events ("Marking for deletion Pod ns/name"). A deletion is an ordinary
 * DELETE: a bound pod goes Terminating with its grace period, and the node
 * agent finishes it -- which a node that is gone never does, so such a pod
 * stays Terminating (as in Kubernetes); its ReplicaSet no longer counts it
 * (a pod with a deletionTimestamp is not active) and replaces it.
 *
 * Keys are pods ("ns/name"). A pod is queued when it is bound or changes on
 * a node with NoExecute taints, and every pod of a node whose NoExecute
 * taints change; a pod with time left is queued again for when it runs out
 * (level-triggered: the sync re-reads node and pod, so a taint removed
 * meanwhile cancels the eviction).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controllers/controller.h"
#include "controllers/ctrl_util.h"
#include "controllers/nodelifecycle_int.h"
#include "lib/err.h"
#include "lib/log.h"

typedef struct te {
    ctrl_t *c;
    kc_informer_t *nodes, *pods;
    pthread_mutex_t mu; /* guards first */
    /* pod key -> {"uid": uid, "t": Unix s, "evicted": bool}: when a pod was
     * first seen under a NoExecute taint (for taints without timeAdded), and
     * whether it has been deleted already (so that a sync that runs before
     * the cache shows its deletionTimestamp does not delete it again) */
    json_t *first;
} te_t;

static const json_t *node_taints(const json_t *node)
{
    return json_object_get(json_object_get(node, "spec"), "taints");
}

/* The node's NoExecute taints as one comparable array (a new reference). */
static json_t *no_execute(const json_t *node)
{
    json_t *a = json_array();
    size_t i;
    const json_t *t;
    json_array_foreach(node_taints(node), i, t) {
        const char *e = json_string_value(json_object_get(t, "effect"));
        if (e && !strcmp(e, "NoExecute")) json_array_append(a, (json_t *)t);
    }
    return a;
}

static int has_no_execute(const json_t *node)
{
    size_t i;
    const json_t *t;
    json_array_foreach(node_taints(node), i, t) {
        const char *e = json_string_value(json_object_get(t, "effect"));
        if (e && !strcmp(e, "NoExecute")) return 1;
    }
    return 0;
}

static const char *node_of(const json_t *pod)
{
    return json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
}

/* ---- handlers: only enqueue ---- */

static void enqueue_node_pods(te_t *s, const char *node)
{
    json_t **pods;
    size_t n;
    if (kc_informer_list(s->pods, "node", node, &pods, &n)) return;
    for (size_t i = 0; i < n; i++)
        ctrl_enqueue_obj(s->c, pods[i]);
    kc_objs_free(pods, n);
}

static void node_added(void *arg, const json_t *node)
{
    te_t *s = arg;
    if (has_no_execute(node)) enqueue_node_pods(s, ctrl_meta_str(node, "name"));
}

static void node_updated(void *arg, const json_t *old, const json_t *node)
{
    te_t *s = arg;
    if (old == node) { /* a resync */
        node_added(arg, node);
        return;
    }
    if (!has_no_execute(old) && !has_no_execute(node)) return;
    json_t *a = no_execute(old), *b = no_execute(node);
    if (!json_equal(a, b)) enqueue_node_pods(s, ctrl_meta_str(node, "name"));
    json_decref(a);
    json_decref(b);
}

static void pod_changed(void *arg, const json_t *pod)
{
    te_t *s = arg;
    const char *name = node_of(pod);
    if (!name || !*name) return;
    if (json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp")) return;
    json_t *node = kc_informer_get(s->nodes, name);
    if (node && has_no_execute(node)) ctrl_enqueue_obj(s->c, pod);
    json_decref(node);
}

static void pod_updated(void *arg, const json_t *old, const json_t *pod)
{
    (void)old;
    pod_changed(arg, pod);
}

static void pod_deleted(void *arg, const json_t *pod)
{
    te_t *s = arg;
    char key[600];
    if (kc_key_of(pod, key, sizeof key)) return;
    pthread_mutex_lock(&s->mu);
    json_object_del(s->first, key);
    pthread_mutex_unlock(&s->mu);
}

static int te_init(ctrl_t *c, void **self)
{
    te_t *s = calloc(1, sizeof *s);
    if (!s || !(s->first = json_object())) {
        free(s);
        return KP_ENOMEM;
    }
    s->c = c;
    pthread_mutex_init(&s->mu, NULL);
    s->nodes = ctrl_informer(c, &kc_nodes);
    s->pods = ctrl_informer(c, &kc_pods);
    int rc = KP_ENOMEM;
    if (s->nodes && s->pods) {
        kc_handlers_t nh = {.on_add = node_added, .on_update = node_updated, .arg = s};
        kc_handlers_t ph = {
            .on_add = pod_changed, .on_update = pod_updated, .on_delete = pod_deleted, .arg = s};
        rc = kc_informer_add_handlers(s->nodes, &nh);
        if (!rc) rc = kc_informer_add_handlers(s->pods, &ph);
    }
    if (rc) {
        if (s->nodes) kc_informer_remove_handlers(s->nodes, s);
        if (s->pods) kc_informer_remove_handlers(s->pods, s);
        json_decref(s->first);
        pthread_mutex_destroy(&s->mu);
        free(s);
        return rc;
    }
    *self = s;
    return 0;
}

static void te_free(void *self)
{
    te_t *s = self;
    json_decref(s->first);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* ---- sync ---- */

/* When pod `key` (uid) was first seen under a NoExecute taint; *evicted
 * (if not NULL) gets whether it was deleted already. */
static int64_t first_seen(te_t *s, const char *key, const char *uid, int64_t now, int *evicted)
{
    pthread_mutex_lock(&s->mu);
    json_t *f = json_object_get(s->first, key);
    const char *fu = json_string_value(json_object_get(f, "uid"));
    if (!f || !fu || strcmp(fu, uid)) {
        json_object_set_new(s->first, key,
                            json_pack("{s:s, s:I, s:b}", "uid", uid, "t", now, "evicted", 0));
        f = json_object_get(s->first, key);
    }
    int64_t t = f ? json_integer_value(json_object_get(f, "t")) : now;
    if (evicted) *evicted = json_is_true(json_object_get(f, "evicted"));
    pthread_mutex_unlock(&s->mu);
    return t;
}

static void mark_evicted(te_t *s, const char *key)
{
    pthread_mutex_lock(&s->mu);
    json_object_set_new(json_object_get(s->first, key), "evicted", json_true());
    pthread_mutex_unlock(&s->mu);
}

static void forget(te_t *s, const char *key)
{
    pthread_mutex_lock(&s->mu);
    json_object_del(s->first, key);
    pthread_mutex_unlock(&s->mu);
}

/* Delete the pod as Kubernetes' taint eviction does: event, the
 * DisruptionTarget condition, then DELETE (guarded by its uid). */
static int evict(te_t *s, const json_t *pod)
{
    kc_client_t *cl = ctrl_client(s->c);
    const char *ns = ctrl_meta_str(pod, "namespace"), *name = ctrl_meta_str(pod, "name");
    kc_event(ctrl_recorder(s->c), pod, "Normal", "TaintManagerEviction",
             "Marking for deletion Pod %s/%s", ns, name);
    char now[NLC_TIME_MAX];
    nlc_time(now, sizeof now, time(NULL));
    json_t *patch = json_pack(
        "{s:{s:[{s:s, s:s, s:s, s:s, s:s}]}}", "status", "conditions", "type", "DisruptionTarget",
        "status", "True", "reason", "DeletionByTaintManager", "message",
        "Taint manager: deleting due to NoExecute taint", "lastTransitionTime", now);
    int rc = patch ? kc_patch(cl, &kc_pods, ns, name, "status", KC_PATCH_STRATEGIC, patch, NULL,
                              NULL, NULL)
                   : KP_ENOMEM;
    json_decref(patch);
    if (rc == KP_ENOTFOUND) return 0;
    if (rc) log_warn("taint-eviction", "pod %s/%s: DisruptionTarget: %s", ns, name, err_str(rc));
    json_t *opts = json_pack("{s:{s:s}}", "preconditions", "uid", ctrl_meta_str(pod, "uid"));
    rc = kc_delete(cl, &kc_pods, ns, name, opts, NULL);
    json_decref(opts);
    if (rc == KP_ENOTFOUND || rc == KP_ECONFLICT) return 0; /* gone, or another pod now */
    if (!rc) log_info("taint-eviction", "pod %s/%s marked for deletion", ns, name);
    return rc;
}

static int te_sync(ctrl_t *c, void *self, const char *key)
{
    te_t *s = self;
    (void)c;
    json_t *pod = kc_informer_get(s->pods, key);
    const char *nname = pod ? node_of(pod) : NULL;
    if (!pod || !nname || !*nname ||
        json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp")) {
        forget(s, key);
        json_decref(pod);
        return 0;
    }
    json_t *node = kc_informer_get(s->nodes, nname);
    int64_t now = time(NULL), at = 0;
    int rc = 0;
    const json_t *tols = json_object_get(json_object_get(pod, "spec"), "tolerations");
    int what = NLC_KEEP, evicted = 0;
    if (node) {
        json_t *ne = no_execute(node);
        if (json_array_size(ne)) {
            int64_t first = first_seen(s, key, ctrl_meta_str(pod, "uid"), now, &evicted);
            what = nlc_eviction(ne, tols, now, first, &at);
        }
        json_decref(ne);
    }
    if (what == NLC_KEEP) {
        forget(s, key);
    } else if (what == NLC_EVICT_AT) {
        ctrl_enqueue_after(s->c, key, (int)((at - now) * 1000 + 100));
    } else if (!evicted) {
        rc = evict(s, pod);
        if (!rc) mark_evicted(s, key); /* until the cache shows it terminating or gone */
    }
    json_decref(node);
    json_decref(pod);
    return rc;
}

const ctrl_ops_t ctrl_tainteviction = {
    .name = "taint-eviction",
    .service_account = "node-controller",
    .init = te_init,
    .sync = te_sync,
    .free = te_free,
};
