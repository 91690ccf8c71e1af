/*
 * sim_node.c -- node registration and heartbeats for every simulated node.
 *
 * INVARIANT: each node that is not paused has a Node whose status says
 * Ready (re-registered if someone deletes it) and a Lease
 * kube-node-lease/<node> (owner: the Node) whose spec.renewTime is at most
 * one renew interval old, give or take the API's latency.
 *
 * OWNS nothing but each node's heartbeat schedule (sim_node_t's dues,
 * guarded by hb_mu) and its registration state (this thread's alone).
 *
 * One thread serves every node. Node i's Lease is due at i/N of the renew
 * interval after start, and every renewal moves its due time on by exactly
 * one interval, so N nodes renew at an even rate of N per interval rather
 * than in bursts, and a late renewal does not shift the others. The thread
 * sleeps on hb_cv until the earliest due time, a resumed node, or stop.
 * Node status is re-posted every cfg.status_update_ms (a kubelet posts it
 * when it changes, else every 5 min; the simulated status never changes but
 * its heartbeat times, so a shorter default keeps them fresh for kubectl
 * at a small cost: 200 nodes at 60 s are 3.3 writes/s). The Lease is the
 * heartbeat that matters for failure detection.
 *
 *   unregistered --sim__node_register ok--> registered
 *        ^  (fails: retry after 0.5 s doubling to 30 s)      |
 *        +------- status update answers 404 (Node deleted) --+
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "node/sim_int.h"

#define RETRY_MAX_MS 30000
#define HB_IDLE_MS   60000

#define NS_PER_MS 1000000LL

static const char *const version = "v1.32.0-kplane";

/* The four conditions a healthy kubelet reports, heart-beaten `now`. */
static json_t *node_conditions(const sim_node_t *n, const char *now)
{
    static const char *const c[4][4] = {
        {"MemoryPressure", "False", "KubeletHasSufficientMemory",
         "kubelet has sufficient memory available"},
        {"DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
        {"PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
        {"Ready", "True", "KubeletReady", "kubelet is posting ready status"},
    };
    json_t *a = json_array();
    for (int i = 0; a && i < 4; i++) {
        json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "type", c[i][0], "status", c[i][1],
                              "reason", c[i][2], "message", c[i][3], "lastHeartbeatTime", now,
                              "lastTransitionTime", n->ready_since);
        if (!o || json_array_append_new(a, o)) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static json_t *node_resources(node_sim_t *s)
{
    char pods[16];
    snprintf(pods, sizeof pods, "%d", s->cfg.max_pods);
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "cpu", s->cfg.cpu, "memory", s->cfg.memory,
                     "pods", pods, "ephemeral-storage", s->cfg.ephemeral_storage, "hugepages-1Gi",
                     "0", "hugepages-2Mi", "0");
}

static json_t *node_status(node_sim_t *s, const sim_node_t *n, const char *now)
{
    json_t *res = node_resources(s);
    if (!res) return NULL;
    /* daemonEndpoints.kubeletEndpoint's key is "Port", capitalised, as in
     * Kubernetes' DaemonEndpoint. Simulated nodes serve no kubelet API (no
     * logs): port 0, which the API server's pods/log answers with a clear
     * error; the process runtime reports its log server's port. */
    return json_pack("{s:O, s:o, s:o, s:[{s:s, s:s}, {s:s, s:s}], s:{s:{s:i}},"
                     " s:{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}}",
                     "capacity", res, "allocatable", res, "conditions", node_conditions(n, now),
                     "addresses", "type", "InternalIP", "address", n->ip, "type", "Hostname",
                     "address", n->name, "daemonEndpoints", "kubeletEndpoint", "Port", s->rt_port,
                     "nodeInfo", "machineID", n->machine_id, "systemUUID", n->system_uuid, "bootID",
                     n->boot_id, "kernelVersion", "6.1.0-kplane-sim", "osImage",
                     s->rt_os_image ? s->rt_os_image : "kplane simulated node",
                     "containerRuntimeVersion", s->rt_version ? s->rt_version : "sim://1.0",
                     "kubeletVersion", version, "kubeProxyVersion", version, "operatingSystem",
                     "linux", "architecture", "amd64");
}

static json_t *node_labels(node_sim_t *s, const sim_node_t *n)
{
    json_t *l = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "kubernetes.io/hostname", n->name,
                          "kubernetes.io/os", "linux", "kubernetes.io/arch", "amd64",
                          "beta.kubernetes.io/os", "linux", "beta.kubernetes.io/arch", "amd64",
                          "node.kubernetes.io/instance-type",
                          s->rt_instance ? s->rt_instance : "kplane-sim");
    for (size_t i = 0; l && s->cfg.labels && s->cfg.labels[i]; i++) {
        const char *kv = s->cfg.labels[i], *eq = strchr(kv, '=');
        char key[320];
        snprintf(key, sizeof key, "%.*s", (int)(eq - kv), kv);
        if (json_object_set_new(l, key, json_string(eq + 1))) {
            json_decref(l);
            return NULL;
        }
    }
    return l;
}

static json_t *lease_owner(const sim_node_t *n)
{
    return json_pack("[{s:s, s:s, s:s, s:s}]", "apiVersion", "v1", "kind", "Node", "name", n->name,
                     "uid", n->uid);
}

/* Renew node n's Lease: a merge patch of its spec (with `own`, also of its
 * ownerReference to the Node), or a create when it is missing. `own` is
 * registration, where a missing Lease is likely: create first, then patch
 * an existing one; a renewal patches first. */
static int lease_renew(node_sim_t *s, const sim_node_t *n, int own)
{
    char now[SIM_TIME_MAX];
    sim__time(now, sizeof now, clock_wall_ns(), 1);
    json_t *spec = json_pack("{s:s, s:i, s:s}", "holderIdentity", n->name, "leaseDurationSeconds",
                             s->cfg.lease_duration_s, "renewTime", now);
    json_t *patch = json_pack("{s:O}", "spec", spec);
    json_t *lease =
        json_pack("{s:s, s:s, s:{s:s, s:s, s:o}, s:O}", "apiVersion", "coordination.k8s.io/v1",
                  "kind", "Lease", "metadata", "name", n->name, "namespace", SIM_LEASE_NS,
                  "ownerReferences", lease_owner(n), "spec", spec);
    int rc = KP_ENOMEM;
    if (!spec || !patch || !lease) goto out;
    if (own && json_object_set_new(patch, "metadata",
                                   json_pack("{s:o}", "ownerReferences", lease_owner(n))))
        goto out;
    if (own) {
        rc = kc_create(s->client, &kc_leases, SIM_LEASE_NS, lease, NULL, NULL);
        if (rc == KP_EEXIST)
            rc = kc_patch(s->client, &kc_leases, SIM_LEASE_NS, n->name, NULL, KC_PATCH_MERGE, patch,
                          NULL, NULL, NULL);
    } else {
        rc = kc_patch(s->client, &kc_leases, SIM_LEASE_NS, n->name, NULL, KC_PATCH_MERGE, patch,
                      NULL, NULL, NULL);
        if (rc == KP_ENOTFOUND)
            rc = kc_create(s->client, &kc_leases, SIM_LEASE_NS, lease, NULL, NULL);
    }
out:
    json_decref(spec);
    json_decref(patch);
    json_decref(lease);
    return rc;
}

int sim__node_register(node_sim_t *s, int i)
{
    sim_node_t *n = &s->nodes[i];
    char now[SIM_TIME_MAX];
    sim__time(now, sizeof now, clock_wall_ns(), 0);
    if (!n->ready_since[0]) snprintf(n->ready_since, sizeof n->ready_since, "%s", now);
    json_t *labels = node_labels(s, n), *status = node_status(s, n, now), *got = NULL;
    json_t *node = NULL, *patch = NULL;
    int rc = KP_ENOMEM;
    if (!labels || !status) goto out;
    node = json_pack("{s:s, s:s, s:{s:s, s:O}, s:{}, s:O}", "apiVersion", "v1", "kind", "Node",
                     "metadata", "name", n->name, "labels", labels, "spec", "status", status);
    if (!node) goto out;
    rc = kc_create(s->client, &kc_nodes, NULL, node, &got, NULL);
    int existed = rc == KP_EEXIST;
    if (existed) {
        /* Keep the Node (its spec, taints and other labels are not ours)
         * but make sure our labels are there. */
        patch = json_pack("{s:{s:O}}", "metadata", "labels", labels);
        rc = patch ? kc_patch(s->client, &kc_nodes, NULL, n->name, NULL, KC_PATCH_MERGE, patch,
                              NULL, &got, NULL)
                   : KP_ENOMEM;
        json_decref(patch);
        patch = NULL;
    }
    if (rc) goto out;
    const json_t *st = json_object_get(got, "status");
    if (existed || !json_object_get(st, "nodeInfo") || !json_object_get(st, "conditions")) {
        /* An existing Node gets our status; so does a new one if the server
         * dropped the status a create carried. */
        patch = json_pack("{s:O}", "status", status);
        json_decref(got);
        got = NULL;
        rc = patch ? kc_patch(s->client, &kc_nodes, NULL, n->name, "status", KC_PATCH_MERGE, patch,
                              NULL, &got, NULL)
                   : KP_ENOMEM;
        if (rc) goto out;
    }
    const char *uid = json_string_value(json_object_get(json_object_get(got, "metadata"), "uid"));
    snprintf(n->uid, sizeof n->uid, "%s", uid ? uid : "");
    rc = lease_renew(s, n, 1);
    if (rc) goto out;
    n->registered = 1;
    atomic_fetch_add(&s->registrations, 1);
    log_debug(SIM_COMPONENT, "node %s registered (%s)", n->name, existed ? "existed" : "created");
out:
    if (rc) atomic_fetch_add(&s->registration_errors, 1);
    json_decref(labels);
    json_decref(status);
    json_decref(node);
    json_decref(patch);
    json_decref(got);
    return rc;
}

/* The heartbeat of the Node's status: its conditions, heart-beaten now. */
static int status_update(node_sim_t *s, sim_node_t *n)
{
    char now[SIM_TIME_MAX];
    sim__time(now, sizeof now, clock_wall_ns(), 0);
    if (atomic_exchange(&n->recheck, 0)) {
        /* Resumed: someone (the node lifecycle controller) may have marked
         * the node not Ready meanwhile; Ready again is then a transition. */
        json_t *cur = NULL;
        int rc = kc_get(s->client, &kc_nodes, NULL, n->name, &cur);
        if (rc == KP_ENOTFOUND) return rc;
        const char *ready = NULL;
        size_t i;
        const json_t *c;
        json_array_foreach(json_object_get(json_object_get(cur, "status"), "conditions"), i, c) {
            const char *type = json_string_value(json_object_get(c, "type"));
            if (type && !strcmp(type, "Ready"))
                ready = json_string_value(json_object_get(c, "status"));
        }
        if (!rc && (!ready || strcmp(ready, "True")))
            snprintf(n->ready_since, sizeof n->ready_since, "%s", now);
        json_decref(cur);
    }
    json_t *patch = json_pack("{s:{s:o}}", "status", "conditions", node_conditions(n, now));
    int rc = patch ? kc_patch(s->client, &kc_nodes, NULL, n->name, "status", KC_PATCH_MERGE, patch,
                              NULL, NULL, NULL)
                   : KP_ENOMEM;
    json_decref(patch);
    return rc;
}

/* Move *due on by whole intervals past now, keeping its phase. */
static void advance(int64_t *due, int64_t interval, int64_t now)
{
    *due += interval;
    if (*due <= now) *due += ((now - *due) / interval + 1) * interval;
}

static void note_result(node_sim_t *s, sim_node_t *n, const char *what, int rc)
{
    if (rc && !n->failing)
        log_warn(SIM_COMPONENT, "node %s: %s failed: %s", n->name, what, err_str(rc));
    else if (!rc && n->failing)
        log_info(SIM_COMPONENT, "node %s: heartbeating again (%s ok)", n->name, what);
    n->failing = rc != 0;
    (void)s;
}

/* Around each request: hb_mu is dropped, and n->busy tells node_sim_pause
 * that a heartbeat of n is in flight. */
static void begin_call(node_sim_t *s, sim_node_t *n)
{
    n->busy = 1;
    pthread_mutex_unlock(&s->hb_mu);
}

static void end_call(node_sim_t *s, sim_node_t *n)
{
    pthread_mutex_lock(&s->hb_mu);
    n->busy = 0;
    pthread_cond_broadcast(&s->hb_cv);
}

/* Serve node i's due heartbeats; called and returns with hb_mu held. */
static void serve_node(node_sim_t *s, int i)
{
    sim_node_t *n = &s->nodes[i];
    const int64_t renew = (int64_t)s->cfg.lease_renew_ms * NS_PER_MS;
    const int64_t status = (int64_t)s->cfg.status_update_ms * NS_PER_MS;
    const int64_t retry = (renew < 1000 * NS_PER_MS ? renew : 1000 * NS_PER_MS);
    int64_t now = clock_mono_ns();
    if (!n->registered) {
        if (n->register_due > now) return;
        begin_call(s, n);
        int rc = sim__node_register(s, i);
        end_call(s, n);
        note_result(s, n, "registration", rc);
        now = clock_mono_ns();
        if (rc) {
            n->register_due = now + (int64_t)n->retry_ms * NS_PER_MS;
            n->retry_ms = n->retry_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : n->retry_ms * 2;
        } else {
            n->retry_ms = 500;
            if (n->lease_due < now) advance(&n->lease_due, renew, now);
            if (n->status_due < now) advance(&n->status_due, status, now);
        }
        return;
    }
    if (n->lease_due <= now) {
        begin_call(s, n);
        int rc = lease_renew(s, n, 0);
        end_call(s, n);
        atomic_fetch_add(rc ? &s->lease_errors : &s->lease_renewals, 1);
        note_result(s, n, "lease renewal", rc);
        now = clock_mono_ns();
        if (rc)
            n->lease_due = now + retry;
        else
            advance(&n->lease_due, renew, now);
    }
    if (n->status_due <= now && !atomic_load(&n->paused)) {
        begin_call(s, n);
        int rc = status_update(s, n);
        end_call(s, n);
        atomic_fetch_add(rc ? &s->node_status_errors : &s->node_status_updates, 1);
        note_result(s, n, "status update", rc);
        now = clock_mono_ns();
        if (rc == KP_ENOTFOUND) {
            /* The Node was deleted: register it again. */
            n->registered = 0;
            n->register_due = now;
            n->ready_since[0] = '\0';
        } else if (rc) {
            n->status_due = now + retry;
        } else {
            advance(&n->status_due, status, now);
        }
    }
}

void *sim__heartbeat_main(void *arg)
{
    node_sim_t *s = arg;
    log_thread_name("sim", "heartbeat");
    pthread_mutex_lock(&s->hb_mu);
    while (!atomic_load(&s->stopping)) {
        for (int i = 0; i < s->nnodes && !atomic_load(&s->stopping); i++)
            if (!atomic_load(&s->nodes[i].paused)) serve_node(s, i);
        /* Sleep until the earliest due time of a node that is not paused. */
        int64_t now = clock_mono_ns(), next = now + HB_IDLE_MS * NS_PER_MS;
        for (int i = 0; i < s->nnodes; i++) {
            const sim_node_t *n = &s->nodes[i];
            if (atomic_load(&n->paused)) continue;
            if (!n->registered) {
                if (n->register_due < next) next = n->register_due;
                continue;
            }
            if (n->lease_due < next) next = n->lease_due;
            if (n->status_due < next) next = n->status_due;
        }
        if (next > now && !atomic_load(&s->stopping)) {
            int64_t ms = (next - now + NS_PER_MS - 1) / NS_PER_MS;
            struct timespec dl = clock_deadline_ms(ms);
            pthread_cond_timedwait(&s->hb_cv, &s->hb_mu, &dl);
        }
    }
    pthread_mutex_unlock(&s->hb_mu);
    return NULL;
}
