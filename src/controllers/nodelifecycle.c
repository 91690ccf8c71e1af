/*
 * nodelifecycle.c -- the node lifecycle controller (Kubernetes'
 * node-lifecycle-controller): failure detection by heartbeats.
 *
 * INVARIANT: a Node says what the control plane knows of its machine.
 *   1. A node whose kubelet has given no sign of life (no change of its
 *      Lease kube-node-lease/<node> spec.renewTime nor of its Ready
 *      condition's lastHeartbeatTime) for --node-monitor-grace-period (40 s)
 *      has Ready, MemoryPressure, DiskPressure and PIDPressure Unknown with
 *      reason NodeStatusUnknown, "Kubelet stopped posting node status."
 *      (a node that never posted Ready: NodeStatusNeverUpdated, after the
 *      startup grace period, 1 min or the grace period if longer).
 *   2. Its taints follow its conditions (taint-based eviction and
 *      TaintNodesByCondition): Ready Unknown -> node.kubernetes.io/
 *      unreachable NoExecute and NoSchedule; Ready False -> not-ready
 *      NoExecute and NoSchedule; Ready True -> neither; MemoryPressure,
 *      DiskPressure, PIDPressure, NetworkUnavailable True and
 *      spec.unschedulable -> their NoSchedule taints. A node that comes back
 *      (a fresh heartbeat, Ready True) is untainted.
 *   3. Pods bound to a node whose Ready is Unknown are not Ready (the
 *      kubelet that would say so is gone): their Ready condition is False
 *      (Kubernetes' MarkPodsNotReady).
 * What happens to those pods is the taint eviction controller's
 * (tainteviction.c): it deletes the ones that do not tolerate the NoExecute
 * taints, when their tolerationSeconds run out.
 *
 * OWNS: the node conditions it sets to Unknown (through nodes/status), the
 * taints named in 2 (every other taint is kept as it is), the Ready
 * condition of pods on not-Ready nodes, and NodeNotReady events.
 *
 * Health is judged from what this controller observed, as Kubernetes does
 * (its nodeHealthMap): each node's probe time is the controller's monotonic
 * time when it last saw the Lease's renewTime or the Ready heartbeat
 * change (first sight counts), so clocks of other machines do not matter,
 * and a restarted controller gives every node a full grace period.
 *
 * Each node is synced when it or its Lease changes and every
 * --node-monitor-period (5 s), the monitor pass of Kubernetes. Writes carry
 * the resourceVersion they were computed from: a 409 retries the key.
 *
 * SIMPLIFIED: no eviction rate limits (--node-eviction-rate,
 * --secondary-node-eviction-rate) and no zone states (full disruption
 * stops evictions in Kubernetes): every node is tainted as soon as it is
 * found failed, so the taint eviction controller acts on all of them at once.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controllers/controller.h"
#include "controllers/ctrl_util.h"
#include "controllers/nodelifecycle_int.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/nodematch.h"
#include "lib/log.h"

#define DEFAULT_GRACE_MS  40000
#define DEFAULT_PERIOD_MS 5000
#define STARTUP_GRACE_MS  60000 /* --node-startup-grace-period's default */
#define NS_PER_MS         1000000LL

/* ---- pure logic (nodelifecycle_int.h) ---- */

static const char *str(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

int nlc_eviction(const json_t *taints, const json_t *tolerations, int64_t now_s,
                 int64_t added_default_s, int64_t *at_s)
{
    int finite = 0;
    int64_t at = 0;
    size_t i, j;
    const json_t *t, *tol;
    json_array_foreach(taints, i, t) {
        if (strcmp(str(t, "effect"), "NoExecute")) continue;
        const json_t *used = NULL;
        json_array_foreach(tolerations, j, tol) {
            if (kp_toleration_matches(tol, str(t, "key"), str(t, "value"), str(t, "effect"))) {
                used = tol;
                break;
            }
        }
        if (!used) return NLC_EVICT_NOW;
        const json_t *secs = json_object_get(used, "tolerationSeconds");
        if (!json_is_integer(secs)) continue; /* forever */
        int64_t s = json_integer_value(secs);
        if (s <= 0) return NLC_EVICT_NOW;
        int64_t added = ctrl_time(str(t, "timeAdded"));
        if (added < 0) added = added_default_s;
        if (!finite || added + s < at) at = added + s;
        finite = 1;
    }
    if (!finite) return NLC_KEEP;
    if (at <= now_s) return NLC_EVICT_NOW;
    *at_s = at;
    return NLC_EVICT_AT;
}

int nlc_has_taint(const json_t *taints, const char *key, const char *effect)
{
    size_t i;
    const json_t *t;
    json_array_foreach(taints, i, t) {
        if (!strcmp(str(t, "key"), key) && !strcmp(str(t, "effect"), effect)) return 1;
    }
    return 0;
}

const json_t *nlc_condition(const json_t *node, const char *type)
{
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(json_object_get(node, "status"), "conditions"), i, c) {
        if (!strcmp(str(c, "type"), type)) return c;
    }
    return NULL;
}

int nlc_stale(int64_t probe_ms, int64_t now_ms, int64_t grace_ms)
{
    return now_ms - probe_ms > grace_ms;
}

json_t *nlc_unknown_conditions(const json_t *node, const char *now)
{
    static const char *const types[] = {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"};
    const json_t *ready = nlc_condition(node, "Ready");
    if (ready && !strcmp(str(ready, "status"), "Unknown")) return NULL;
    const json_t *old = json_object_get(json_object_get(node, "status"), "conditions");
    json_t *out = json_is_array(old) ? json_deep_copy(old) : json_array();
    if (!out) return NULL;
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        json_t *c = NULL;
        size_t i;
        json_t *x;
        json_array_foreach(out, i, x) {
            if (!strcmp(str(x, "type"), types[k])) c = x;
        }
        if (!c) {
            /* Never posted: heartbeat and transition now, as Kubernetes. */
            c = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "type", types[k], "status", "Unknown",
                          "reason", NLC_R_NEVER, "message", NLC_M_NEVER, "lastHeartbeatTime", now,
                          "lastTransitionTime", now);
            if (!c || json_array_append_new(out, c)) {
                json_decref(out);
                return NULL;
            }
            continue;
        }
        if (strcmp(str(c, "status"), "Unknown"))
            json_object_set_new(c, "lastTransitionTime", json_string(now));
        json_object_set_new(c, "status", json_string("Unknown"));
        json_object_set_new(c, "reason", json_string(NLC_R_UNKNOWN));
        json_object_set_new(c, "message", json_string(NLC_M_UNKNOWN));
    }
    return out;
}

/* The taints this controller manages, and whether the node wants each. */
static const struct managed {
    const char *key, *effect;
    const char *cond, *status; /* wanted while condition `cond` has `status` */
} managed[] = {
    {NLC_TAINT_NOT_READY, "NoExecute", "Ready", "False"},
    {NLC_TAINT_UNREACHABLE, "NoExecute", "Ready", "Unknown"},
    {NLC_TAINT_NOT_READY, "NoSchedule", "Ready", "False"},
    {NLC_TAINT_UNREACHABLE, "NoSchedule", "Ready", "Unknown"},
    {NLC_TAINT_MEMORY, "NoSchedule", "MemoryPressure", "True"},
    {NLC_TAINT_DISK, "NoSchedule", "DiskPressure", "True"},
    {NLC_TAINT_PID, "NoSchedule", "PIDPressure", "True"},
    {NLC_TAINT_NETWORK, "NoSchedule", "NetworkUnavailable", "True"},
    {NLC_TAINT_UNSCHEDULABLE, "NoSchedule", NULL, NULL}, /* spec.unschedulable */
};
#define NMANAGED (sizeof managed / sizeof managed[0])

static int wanted(const json_t *node, const struct managed *m)
{
    if (!m->cond)
        return json_is_true(json_object_get(json_object_get(node, "spec"), "unschedulable"));
    const json_t *c = nlc_condition(node, m->cond);
    return c && !strcmp(str(c, "status"), m->status);
}

static const struct managed *managed_of(const json_t *taint)
{
    for (size_t k = 0; k < NMANAGED; k++)
        if (!strcmp(str(taint, "key"), managed[k].key) &&
            !strcmp(str(taint, "effect"), managed[k].effect))
            return &managed[k];
    return NULL;
}

json_t *nlc_wanted_taints(const json_t *node, const char *now, int *changed)
{
    const json_t *old = json_object_get(json_object_get(node, "spec"), "taints");
    json_t *out = json_array();
    if (!out) return NULL;
    *changed = 0;
    size_t i;
    const json_t *t;
    json_array_foreach(old, i, t) {
        const struct managed *m = managed_of(t);
        if (m && !wanted(node, m)) {
            *changed = 1; /* dropped */
            continue;
        }
        json_array_append_new(out, json_deep_copy(t));
    }
    for (size_t k = 0; k < NMANAGED; k++) {
        if (!wanted(node, &managed[k]) || nlc_has_taint(old, managed[k].key, managed[k].effect))
            continue;
        json_t *nt = json_pack("{s:s, s:s, s:s}", "key", managed[k].key, "effect",
                               managed[k].effect, "timeAdded", now);
        if (!nt || json_array_append_new(out, nt)) {
            json_decref(out);
            return NULL;
        }
        *changed = 1;
    }
    return out;
}

void nlc_time(char *buf, size_t n, int64_t t)
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ---- the controller ---- */

typedef struct nlc {
    ctrl_t *c;
    kc_informer_t *nodes, *leases, *pods;
    int64_t grace_ms, period_ms, startup_ms;
    pthread_mutex_t mu; /* guards health */
    /* node name -> {"r": renewTime, "h": Ready heartbeat, "t": probe (mono ms)} */
    json_t *health;
} nlc_t;

static int64_t mono_ms(void)
{
    return clock_mono_ns() / NS_PER_MS;
}

/* Record what node `name` shows now; returns its probe time (mono ms). */
static int64_t observe(nlc_t *s, const char *name, const char *renew, const char *hb)
{
    int64_t now = mono_ms();
    pthread_mutex_lock(&s->mu);
    json_t *h = json_object_get(s->health, name);
    if (!h || strcmp(str(h, "r"), renew) || strcmp(str(h, "h"), hb)) {
        json_object_set_new(
            s->health, name,
            json_pack("{s:s, s:s, s:I}", "r", renew, "h", hb, "t", (json_int_t)now));
        h = json_object_get(s->health, name);
    }
    int64_t probe = h ? json_integer_value(json_object_get(h, "t")) : now;
    pthread_mutex_unlock(&s->mu);
    return probe;
}

static void forget(nlc_t *s, const char *name)
{
    pthread_mutex_lock(&s->mu);
    json_object_del(s->health, name);
    pthread_mutex_unlock(&s->mu);
}

/* Does the node need a sync before its next monitor pass (a lease renewal
 * of a node we may have to untaint)? */
static int needs_attention(const json_t *node)
{
    const json_t *ready = nlc_condition(node, "Ready");
    if (!ready || strcmp(str(ready, "status"), "True")) return 1;
    const json_t *taints = json_object_get(json_object_get(node, "spec"), "taints");
    return nlc_has_taint(taints, NLC_TAINT_UNREACHABLE, "NoExecute") ||
           nlc_has_taint(taints, NLC_TAINT_NOT_READY, "NoExecute");
}

static void node_added(void *arg, const json_t *obj)
{
    ctrl_enqueue_obj(((nlc_t *)arg)->c, obj);
}

static void node_updated(void *arg, const json_t *old, const json_t *obj)
{
    (void)old;
    node_added(arg, obj);
}

static void lease_changed(void *arg, const json_t *lease)
{
    nlc_t *s = arg;
    if (strcmp(ctrl_meta_str(lease, "namespace"), NLC_LEASE_NS)) return;
    const char *name = ctrl_meta_str(lease, "name");
    json_t *node = kc_informer_get(s->nodes, name);
    /* A healthy node's renewals are only recorded by its monitor pass. */
    if (node && needs_attention(node)) ctrl_enqueue(s->c, name);
    json_decref(node);
}

static void lease_updated(void *arg, const json_t *old, const json_t *obj)
{
    if (old != obj) lease_changed(arg, obj);
}

static int nlc_init(ctrl_t *c, void **self)
{
    nlc_t *s = calloc(1, sizeof *s);
    if (!s || !(s->health = json_object())) {
        free(s);
        return KP_ENOMEM;
    }
    s->c = c;
    const ctrl_manager_config_t *cfg = ctrl_config(c);
    s->grace_ms = cfg->node_monitor_grace_ms > 0 ? cfg->node_monitor_grace_ms : DEFAULT_GRACE_MS;
    s->period_ms =
        cfg->node_monitor_period_ms > 0 ? cfg->node_monitor_period_ms : DEFAULT_PERIOD_MS;
    s->startup_ms = s->grace_ms > STARTUP_GRACE_MS ? s->grace_ms : STARTUP_GRACE_MS;
    pthread_mutex_init(&s->mu, NULL);
    s->nodes = ctrl_informer(c, &kc_nodes);
    s->leases = ctrl_informer(c, &kc_leases);
    s->pods = ctrl_informer(c, &kc_pods);
    int rc = KP_ENOMEM;
    if (s->nodes && s->leases && s->pods) {
        kc_handlers_t nh = {
            .on_add = node_added, .on_update = node_updated, .on_delete = node_added, .arg = s};
        kc_handlers_t lh = {.on_add = lease_changed, .on_update = lease_updated, .arg = s};
        rc = kc_informer_add_handlers(s->nodes, &nh);
        if (!rc) rc = kc_informer_add_handlers(s->leases, &lh);
    }
    if (rc) {
        if (s->nodes) kc_informer_remove_handlers(s->nodes, s);
        if (s->leases) kc_informer_remove_handlers(s->leases, s);
        json_decref(s->health);
        pthread_mutex_destroy(&s->mu);
        free(s);
        return rc;
    }
    log_info("nodelifecycle", "grace period %lld ms, monitor period %lld ms",
             (long long)s->grace_ms, (long long)s->period_ms);
    *self = s;
    return 0;
}

static void nlc_free(void *self)
{
    nlc_t *s = self;
    json_decref(s->health);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* Kubernetes' MarkPodsNotReady: the Ready condition of every pod on the
 * node goes False (the kubelet that reports it is gone). */
static int mark_pods_not_ready(nlc_t *s, const char *node, const char *now)
{
    json_t **pods;
    size_t n;
    int rc = kc_informer_list(s->pods, "node", node, &pods, &n);
    if (rc) return rc;
    for (size_t i = 0; i < n; i++) {
        const json_t *pod = pods[i];
        if (!ctrl_pod_ready(pod)) continue;
        json_t *conds =
            json_deep_copy(json_object_get(json_object_get(pod, "status"), "conditions"));
        size_t k;
        json_t *cd;
        json_array_foreach(conds, k, cd) {
            if (strcmp(str(cd, "type"), "Ready")) continue;
            json_object_set_new(cd, "status", json_string("False"));
            json_object_set_new(cd, "lastTransitionTime", json_string(now));
        }
        json_t *patch =
            json_pack("{s:{s:s}, s:{s:o}}", "metadata", "resourceVersion",
                      ctrl_meta_str(pod, "resourceVersion"), "status", "conditions", conds);
        int prc = patch ? kc_patch(ctrl_client(s->c), &kc_pods, ctrl_meta_str(pod, "namespace"),
                                   ctrl_meta_str(pod, "name"), "status", KC_PATCH_MERGE, patch,
                                   NULL, NULL, NULL)
                        : KP_ENOMEM;
        json_decref(patch);
        if (prc && prc != KP_ENOTFOUND && !rc) rc = prc; /* a conflict: next pass */
    }
    kc_objs_free(pods, n);
    return rc;
}

static int nlc_sync(ctrl_t *c, void *self, const char *key)
{
    nlc_t *s = self;
    (void)c;
    json_t *node = kc_informer_get(s->nodes, key);
    if (!node) {
        forget(s, key);
        return 0;
    }
    char lkey[600];
    snprintf(lkey, sizeof lkey, "%s/%s", NLC_LEASE_NS, key);
    json_t *lease = kc_informer_get(s->leases, lkey);
    const json_t *ready = nlc_condition(node, "Ready");
    int64_t probe = observe(s, key, str(json_object_get(lease, "spec"), "renewTime"),
                            str(ready, "lastHeartbeatTime"));
    json_decref(lease);
    char now[NLC_TIME_MAX];
    nlc_time(now, sizeof now, time(NULL));
    json_t *cur = node; /* the node as last written */
    int rc = 0;

    /* 1. A silent node's conditions go Unknown. */
    if (nlc_stale(probe, mono_ms(), ready ? s->grace_ms : s->startup_ms)) {
        json_t *conds = nlc_unknown_conditions(node, now);
        if (conds) {
            int was_ready = ready && !strcmp(str(ready, "status"), "True");
            json_t *patch =
                json_pack("{s:{s:s}, s:{s:o}}", "metadata", "resourceVersion",
                          ctrl_meta_str(node, "resourceVersion"), "status", "conditions", conds);
            json_t *got = NULL;
            rc = patch ? kc_patch(ctrl_client(s->c), &kc_nodes, NULL, key, "status", KC_PATCH_MERGE,
                                  patch, NULL, &got, NULL)
                       : KP_ENOMEM;
            json_decref(patch);
            if (rc) goto out;
            log_info("nodelifecycle", "node %s: no heartbeat for %lld ms: Ready Unknown", key,
                     (long long)(mono_ms() - probe));
            if (was_ready)
                kc_event(ctrl_recorder(s->c), got, "Normal", "NodeNotReady",
                         "Node %s status is now: NodeNotReady", key);
            cur = got;
        }
    }

    /* 2. Taints follow the conditions. */
    int changed = 0;
    json_t *taints = nlc_wanted_taints(cur, now, &changed);
    if (!taints) {
        rc = KP_ENOMEM;
        goto out;
    }
    if (changed) {
        json_t *patch = json_pack("{s:{s:s}, s:{s:o}}", "metadata", "resourceVersion",
                                  ctrl_meta_str(cur, "resourceVersion"), "spec", "taints", taints);
        rc = patch ? kc_patch(ctrl_client(s->c), &kc_nodes, NULL, key, NULL, KC_PATCH_MERGE, patch,
                              NULL, NULL, NULL)
                   : KP_ENOMEM;
        json_decref(patch);
        if (rc) goto out;
        log_info("nodelifecycle", "node %s: taints updated (Ready %s)", key,
                 str(nlc_condition(cur, "Ready"), "status"));
    } else {
        json_decref(taints);
    }

    /* 3. Pods on a node that is not Ready are not Ready. */
    const json_t *r = nlc_condition(cur, "Ready");
    if (r && !strcmp(str(r, "status"), "Unknown")) rc = mark_pods_not_ready(s, key, now);

out:
    if (rc == KP_ENOTFOUND) rc = 0; /* deleted meanwhile: its delete event syncs it */
    /* The next monitor pass, also after an error: of two delays the queue
     * keeps the earlier, so a long retry back-off never delays it. */
    ctrl_enqueue_after(s->c, key, (int)s->period_ms);
    if (cur != node) json_decref(cur);
    json_decref(node);
    return rc;
}

const ctrl_ops_t ctrl_nodelifecycle = {
    .name = "nodelifecycle",
    .service_account = "node-controller",
    .event_source = "node-controller", /* Kubernetes' name for its events */
    .init = nlc_init,
    .sync = nlc_sync,
    .free = nlc_free,
};
