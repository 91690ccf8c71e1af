/*
 * test_sim.c -- the simulated node agents against a real kplane server.
 *
 * What it proves: nodes register Ready with the fields clients need and
 * their Leases renew; a pod bound by hand goes ContainerCreating -> Running
 * and Ready with full container statuses; Never pods reach Succeeded (or
 * Failed with the exit-code annotation); a graceful delete finishes (404);
 * each sim.kplane.io/ annotation does what node.h says; pausing a node stops
 * its Lease renewals until it is resumed; a status another writer changed
 * (Ready False) is written again; bad configurations are refused.
 *
 * How: one server for the whole file (kpserver.c); each test runs its own
 * simulator with its own node names and short intervals, binds its own pods
 * (schedulerName "kplane-test-manual", so no scheduler takes them) and polls
 * the API for the states it expects, within a deadline.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/sdk.h"
#include "kpserver.h"
#include "lib/err.h"
#include "node/node.h"
#include "testutil.h"

#define WAIT_MS 20000
#define NS      "default"

typedef struct env {
    kpserver_t srv;
    json_t *storage;
    kc_client_t *c;
} env_t;

static env_t E;
static node_sim_t *cur; /* the running test's simulator, freed by sim_free */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int setup(void **state)
{
    (void)state;
    kpserver_start(&E.srv, NULL);
    return kpserver_client(&E.srv, NULL, &E.storage, &E.c) ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    kc_client_free(E.c);
    json_decref(E.storage);
    kpserver_stop(&E.srv);
    return 0;
}

/* ---- helpers ---- */

/* obj at a dotted path ("status.containerStatuses.0.state"), or NULL. */
static const json_t *at(const json_t *o, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    char *save = NULL;
    for (char *p = strtok_r(buf, ".", &save); p && o; p = strtok_r(NULL, ".", &save)) {
        if (json_is_array(o))
            o = json_array_get(o, strtoul(p, NULL, 10));
        else
            o = json_object_get(o, p);
    }
    return o;
}

static const char *str_at(const json_t *o, const char *path)
{
    return json_string_value(at(o, path));
}

/* The condition `type` of obj's status.conditions, or NULL. */
static const json_t *cond(const json_t *obj, const char *type)
{
    size_t i;
    const json_t *c;
    json_array_foreach(at(obj, "status.conditions"), i, c) {
        const char *t = json_string_value(json_object_get(c, "type"));
        if (t && !strcmp(t, type)) return c;
    }
    return NULL;
}

static void config(node_sim_config_t *cfg, const char *prefix, int count)
{
    node_sim_config_default(cfg);
    cfg->name_prefix = prefix;
    cfg->count = count;
    cfg->lease_renew_ms = 200;
    cfg->status_update_ms = 500;
    cfg->start_delay_ms = 200;
    cfg->run_ms = 300;
    cfg->stop_ms = 100;
    cfg->backoff_scale = 0.01; /* 10 s -> 100 ms */
    cfg->workers = 4;
}

static node_sim_t *sim_start(const char *prefix, int count)
{
    node_sim_config_t cfg;
    config(&cfg, prefix, count);
    node_sim_t *s = NULL;
    assert_int_equal(node_sim_new(E.c, &cfg, &s), 0);
    assert_int_equal(node_sim_start(s), 0);
    cur = s;
    return s;
}

/* Per-test teardown: free the test's simulator even when it failed. */
static int sim_free(void **state)
{
    (void)state;
    node_sim_free(cur);
    cur = NULL;
    return 0;
}

/* Create pod `name` (one container; restartPolicy rp; annotations "k=v"
 * NULL-terminated) and bind it to node; rv (NULL: not wanted, else 32
 * bytes) gets the created pod's resourceVersion: a watch from there sees
 * every state the pod goes through. */
static void pod_run_rv(const char *name, const char *node, const char *rp,
                       const char *const *ann, char *rv)
{
    json_t *pod = json_pack("{s:s, s:s, s:{s:s, s:{}}, s:{s:s, s:s, s:[{s:s, s:s}]}}", "apiVersion",
                            "v1", "kind", "Pod", "metadata", "name", name, "annotations", "spec",
                            "schedulerName", "kplane-test-manual", "restartPolicy", rp,
                            "containers", "name", "main", "image", "busybox:1.36");
    assert_non_null(pod);
    json_t *a = json_object_get(json_object_get(pod, "metadata"), "annotations");
    for (int i = 0; ann && ann[i]; i++) {
        const char *eq = strchr(ann[i], '=');
        char key[128];
        snprintf(key, sizeof key, "%.*s", (int)(eq - ann[i]), ann[i]);
        json_object_set_new(a, key, json_string(eq + 1));
    }
    json_t *created = NULL;
    assert_int_equal(kc_create(E.c, &kc_pods, NS, pod, &created, NULL), 0);
    json_decref(pod);
    if (rv) snprintf(rv, 32, "%s", str_at(created, "metadata.resourceVersion"));
    json_decref(created);
    assert_int_equal(kc_bind(E.c, NS, name, node), 0);
}

static void pod_run(const char *name, const char *node, const char *rp, const char *const *ann)
{
    pod_run_rv(name, node, rp, ann, NULL);
}

typedef int (*pod_pred)(const json_t *pod, void *arg);

/* Fail the test: pod `name` never reached `what`; its last status (not the
 * whole pod: managedFields would push the status out of cmocka's message). */
static void fail_pod(const char *name, const char *what, const json_t *pod)
{
    char *dump = pod ? json_dumps(json_object_get(pod, "status"), JSON_COMPACT) : NULL;
    fail_msg("pod %s: no %s within %d ms; last status: %s", name, what, WAIT_MS,
             dump ? dump : "(none)");
}

/* Watch pod `name` from resourceVersion rv until `until` holds; *first
 * (caller's) is the first state in which `seen` held, or NULL if none did.
 * A watch delivers every status the node wrote, however briefly it lasted:
 * a poll misses a state shorter than its interval, and a busy machine
 * stretches the interval (ContainerCreating lasts the start delay, 200 ms
 * here, minus the write's own latency). */
static void watch_pod(const char *name, const char *rv, pod_pred until, void *until_arg,
                      pod_pred seen, void *seen_arg, json_t **first, const char *what)
{
    char query[128];
    snprintf(query, sizeof query, "fieldSelector=metadata.name%%3D%s", name);
    kc_watch_t *w = NULL;
    assert_int_equal(kc_watch_open(E.c, &kc_pods, NS, query, rv, WAIT_MS / 1000, &w), 0);
    *first = NULL;
    json_t *last = NULL;
    int done = 0;
    for (int64_t deadline = now_ms() + WAIT_MS; !done && now_ms() < deadline;) {
        kc_event_type_t type;
        json_t *obj = NULL;
        int rc = kc_watch_next(w, (int)(deadline - now_ms()), &type, &obj);
        if (rc == KP_ETIMEDOUT) break;
        assert_int_equal(rc, 0);
        if (type == KC_BOOKMARK) {
            json_decref(obj);
            continue;
        }
        if (!*first && seen(obj, seen_arg)) *first = json_incref(obj);
        done = until(obj, until_arg);
        json_decref(last);
        last = obj;
    }
    kc_watch_close(w);
    if (!done) fail_pod(name, what, last);
    json_decref(last);
}

/* Poll pod `name` until pred holds; the pod (caller's), or fail the test. */
static json_t *wait_pod(const char *name, pod_pred pred, void *arg, const char *what)
{
    int64_t deadline = now_ms() + WAIT_MS;
    json_t *pod = NULL;
    while (now_ms() < deadline) {
        json_decref(pod);
        pod = NULL;
        int rc = kc_get(E.c, &kc_pods, NS, name, &pod);
        if (!rc && pred(pod, arg)) return pod;
        tu_sleep_ms(25);
    }
    fail_pod(name, what, pod);
    return NULL;
}

static int phase_is(const json_t *pod, void *arg)
{
    const char *p = str_at(pod, "status.phase");
    return p && !strcmp(p, arg);
}

static int running_ready(const json_t *pod, void *arg)
{
    (void)arg;
    const char *ready = str_at(cond(pod, "Ready"), "status");
    return phase_is(pod, "Running") && ready && !strcmp(ready, "True");
}

static int waiting_reason(const json_t *pod, void *arg)
{
    const char *r = str_at(pod, "status.containerStatuses.0.state.waiting.reason");
    return r && !strcmp(r, arg);
}

static int restarts_at_least(const json_t *pod, void *arg)
{
    return json_integer_value(at(pod, "status.containerStatuses.0.restartCount")) >= *(int *)arg;
}

static void pod_delete_now(const char *name)
{
    json_t *opts = json_pack("{s:i}", "gracePeriodSeconds", 0);
    kc_delete(E.c, &kc_pods, NS, name, opts, NULL);
    json_decref(opts);
}

static char *lease_renew_time(const char *node)
{
    json_t *l = NULL;
    if (kc_get(E.c, &kc_leases, "kube-node-lease", node, &l)) return NULL;
    const char *t = str_at(l, "spec.renewTime");
    char *r = t ? strdup(t) : NULL;
    json_decref(l);
    return r;
}

/* Wait until node's Lease shows a renewTime other than `before`: the new
 * one (caller frees), or fail the test. Renewals come every 200 ms; a busy
 * machine may take longer, never forever. */
static char *wait_renewed(const char *node, const char *before)
{
    char *t = NULL;
    for (int64_t deadline = now_ms() + WAIT_MS; now_ms() < deadline; tu_sleep_ms(50)) {
        free(t);
        t = lease_renew_time(node);
        if (t && strcmp(t, before)) return t;
    }
    fail_msg("lease %s: not renewed since %s within %d ms", node, before, WAIT_MS);
    return NULL;
}

/* ---- tests ---- */

static void test_config_refused(void **state)
{
    (void)state;
    node_sim_config_t cfg;
    node_sim_t *s = NULL;
    config(&cfg, "bad-", 0);
    assert_int_equal(node_sim_new(E.c, &cfg, &s), KP_EINVAL);
    config(&cfg, "bad-", 1);
    cfg.lease_renew_ms = 0;
    assert_int_equal(node_sim_new(E.c, &cfg, &s), KP_EINVAL);
    const char *const dup[] = {"a", "b", "a", NULL};
    config(&cfg, "bad-", 1);
    cfg.names = dup;
    assert_int_equal(node_sim_new(E.c, &cfg, &s), KP_EINVAL);
    const char *const labels[] = {"novalue", NULL};
    config(&cfg, "bad-", 1);
    cfg.labels = labels;
    assert_int_equal(node_sim_new(E.c, &cfg, &s), KP_EINVAL);
    assert_null(s);
    /* Explicit names, not started: nothing sent, freed cleanly. */
    const char *const names[] = {"x-b", "x-a", NULL};
    config(&cfg, "ignored-", 5);
    cfg.names = names;
    assert_int_equal(node_sim_new(E.c, &cfg, &s), 0);
    assert_int_equal(node_sim_count(s), 2);
    assert_string_equal(node_sim_name(s, 0), "x-b");
    assert_null(node_sim_name(s, 2));
    assert_int_equal(node_sim_pause(s, "x-c", 1), KP_ENOTFOUND);
    node_sim_free(s);
}

static void test_nodes_register_and_renew(void **state)
{
    (void)state;
    node_sim_t *s = sim_start("reg-node-", 3);
    char *first[3];
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "reg-node-%d", i);
        json_t *n = NULL;
        assert_int_equal(kc_get(E.c, &kc_nodes, NULL, name, &n), 0);
        const json_t *ready = cond(n, "Ready");
        assert_non_null(ready);
        assert_string_equal(str_at(ready, "status"), "True");
        assert_string_equal(str_at(ready, "reason"), "KubeletReady");
        assert_string_equal(str_at(ready, "message"), "kubelet is posting ready status");
        assert_string_equal(str_at(cond(n, "MemoryPressure"), "status"), "False");
        assert_string_equal(str_at(cond(n, "DiskPressure"), "reason"), "KubeletHasNoDiskPressure");
        assert_string_equal(str_at(cond(n, "PIDPressure"), "status"), "False");
        const json_t *labels = at(n, "metadata.labels");
        assert_string_equal(json_string_value(json_object_get(labels, "kubernetes.io/hostname")),
                            name);
        assert_string_equal(json_string_value(json_object_get(labels, "kubernetes.io/os")),
                            "linux");
        assert_string_equal(json_string_value(json_object_get(labels, "kubernetes.io/arch")),
                            "amd64");
        assert_string_equal(
            json_string_value(json_object_get(labels, "node.kubernetes.io/instance-type")),
            "kplane-sim");
        assert_string_equal(str_at(n, "status.capacity.cpu"), "4");
        assert_string_equal(str_at(n, "status.allocatable.memory"), "8Gi");
        assert_string_equal(str_at(n, "status.capacity.pods"), "110");
        assert_non_null(str_at(n, "status.capacity.ephemeral-storage"));
        assert_string_equal(str_at(n, "status.addresses.0.type"), "InternalIP");
        assert_string_equal(str_at(n, "status.addresses.1.address"), name);
        /* Simulated nodes serve no kubelet API (pods/log): port 0. */
        assert_non_null(at(n, "status.daemonEndpoints.kubeletEndpoint.Port"));
        assert_int_equal(json_integer_value(at(n, "status.daemonEndpoints.kubeletEndpoint.Port")),
                         0);
        static const char *const info[] = {"machineID",       "systemUUID",
                                           "bootID",          "kernelVersion",
                                           "osImage",         "containerRuntimeVersion",
                                           "kubeletVersion",  "kubeProxyVersion",
                                           "operatingSystem", "architecture"};
        for (size_t k = 0; k < 10; k++) {
            const json_t *v = json_object_get(at(n, "status.nodeInfo"), info[k]);
            assert_true(json_is_string(v));
        }
        assert_string_equal(str_at(n, "status.nodeInfo.osImage"), "kplane simulated node");
        assert_string_equal(str_at(n, "status.nodeInfo.containerRuntimeVersion"), "sim://1.0");
        assert_string_equal(str_at(n, "status.nodeInfo.kubeletVersion"), "v1.32.0-kplane");
        const char *uid = str_at(n, "metadata.uid");

        json_t *l = NULL;
        assert_int_equal(kc_get(E.c, &kc_leases, "kube-node-lease", name, &l), 0);
        assert_string_equal(str_at(l, "spec.holderIdentity"), name);
        assert_int_equal(json_integer_value(at(l, "spec.leaseDurationSeconds")), 40);
        assert_string_equal(str_at(l, "metadata.ownerReferences.0.kind"), "Node");
        assert_string_equal(str_at(l, "metadata.ownerReferences.0.uid"), uid);
        first[i] = strdup(str_at(l, "spec.renewTime"));
        json_decref(l);
        json_decref(n);
    }
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "reg-node-%d", i);
        free(wait_renewed(name, first[i]));
        free(first[i]);
    }
    char *m = NULL;
    assert_int_equal(node_sim_metrics(s, &m), 0);
    assert_non_null(strstr(m, "kplane_node_sim_nodes 3"));
    assert_null(strstr(m, "kplane_node_sim_lease_renewals_total 0\n"));
    free(m);
    node_sim_free(s);
    cur = NULL;

    /* A second simulator over the same names keeps the Nodes. */
    json_t *before = NULL, *after = NULL;
    assert_int_equal(kc_get(E.c, &kc_nodes, NULL, "reg-node-0", &before), 0);
    s = sim_start("reg-node-", 1);
    assert_int_equal(kc_get(E.c, &kc_nodes, NULL, "reg-node-0", &after), 0);
    assert_string_equal(str_at(before, "metadata.uid"), str_at(after, "metadata.uid"));
    assert_string_equal(str_at(cond(after, "Ready"), "status"), "True");

    /* A deleted Node is registered again (its status update answers 404). */
    assert_int_equal(kc_delete(E.c, &kc_nodes, NULL, "reg-node-0", NULL, NULL), 0);
    json_t *again = NULL;
    int64_t deadline = now_ms() + WAIT_MS;
    while (now_ms() < deadline) {
        if (!kc_get(E.c, &kc_nodes, NULL, "reg-node-0", &again) &&
            strcmp(str_at(again, "metadata.uid"), str_at(after, "metadata.uid")))
            break;
        json_decref(again);
        again = NULL;
        tu_sleep_ms(50);
    }
    assert_non_null(again);
    assert_string_equal(str_at(cond(again, "Ready"), "status"), "True");
    json_decref(again);
    json_decref(before);
    json_decref(after);
    (void)s; /* sim_free frees it */
}

static void test_pod_runs_and_deletes(void **state)
{
    (void)state;
    node_sim_t *s = sim_start("run-node-", 2);
    int64_t t0 = now_ms();
    char rv[32];
    pod_run_rv("run-a", "run-node-1", "Always", NULL, rv);
    /* ContainerCreating first (the start delay is 200 ms), then Running. */
    json_t *pod = NULL;
    watch_pod("run-a", rv, running_ready, NULL, waiting_reason, "ContainerCreating", &pod,
              "Running and Ready");
    if (!pod) fail_msg("pod run-a: Running without ContainerCreating before");
    assert_string_equal(str_at(pod, "status.phase"), "Pending");
    assert_string_equal(str_at(cond(pod, "Ready"), "status"), "False");
    json_decref(pod);
    pod = wait_pod("run-a", running_ready, NULL, "Running and Ready");
    assert_true(now_ms() - t0 >= 150);
    const json_t *cs = at(pod, "status.containerStatuses.0");
    assert_string_equal(str_at(cs, "name"), "main");
    assert_string_equal(str_at(cs, "image"), "busybox:1.36");
    assert_string_equal(str_at(cs, "imageID"), "sim://busybox:1.36");
    assert_memory_equal(str_at(cs, "containerID"), "sim://", 6);
    assert_true(json_is_true(json_object_get(cs, "ready")));
    assert_true(json_is_true(json_object_get(cs, "started")));
    assert_int_equal(json_integer_value(json_object_get(cs, "restartCount")), 0);
    assert_non_null(str_at(cs, "state.running.startedAt"));
    assert_string_equal(str_at(pod, "status.hostIP"), "10.0.0.2");
    assert_non_null(str_at(pod, "status.podIP"));
    assert_string_equal(str_at(pod, "status.podIPs.0.ip"), str_at(pod, "status.podIP"));
    assert_non_null(str_at(pod, "status.startTime"));
    assert_string_equal(str_at(pod, "status.qosClass"), "BestEffort");
    static const char *const conds[] = {"PodScheduled", "Initialized", "ContainersReady", "Ready"};
    for (int i = 0; i < 4; i++)
        assert_string_equal(str_at(cond(pod, conds[i]), "status"), "True");
    char ip_a[32];
    snprintf(ip_a, sizeof ip_a, "%s", str_at(pod, "status.podIP"));
    json_decref(pod);

    /* Events like a kubelet's (sent in the background). */
    int seen = 0;
    for (int64_t deadline = now_ms() + WAIT_MS; seen != 7 && now_ms() < deadline;) {
        json_t *list = NULL;
        seen = 0;
        assert_int_equal(
            kc_list(E.c, &kc_events, NS, "fieldSelector=involvedObject.name%3Drun-a", &list), 0);
        size_t i;
        const json_t *ev;
        json_array_foreach(json_object_get(list, "items"), i, ev) {
            const char *r = str_at(ev, "reason");
            if (!strcmp(r, "Pulled")) seen |= 1;
            if (!strcmp(r, "Created")) seen |= 2;
            if (!strcmp(r, "Started")) {
                seen |= 4;
                assert_string_equal(str_at(ev, "message"), "Started container main");
                assert_string_equal(str_at(ev, "type"), "Normal");
            }
        }
        json_decref(list);
        if (seen != 7) tu_sleep_ms(50);
    }
    assert_int_equal(seen, 7);

    /* A second pod gets another IP. */
    pod_run("run-b", "run-node-0", "Always", NULL);
    pod = wait_pod("run-b", running_ready, NULL, "Running and Ready");
    assert_string_not_equal(str_at(pod, "status.podIP"), ip_a);
    assert_string_equal(str_at(pod, "status.hostIP"), "10.0.0.1");
    json_decref(pod);

    /* A graceful delete (the pod's 30 s grace) finishes in about stop_ms. */
    t0 = now_ms();
    assert_int_equal(kc_delete(E.c, &kc_pods, NS, "run-a", NULL, NULL), 0);
    json_t *gone = NULL;
    int rc = 0;
    while (now_ms() - t0 < WAIT_MS && (rc = kc_get(E.c, &kc_pods, NS, "run-a", &gone)) == 0) {
        json_decref(gone);
        gone = NULL;
        tu_sleep_ms(20);
    }
    /* Gone before WAIT_MS (20 s), well inside its 30 s grace: the node
     * stopped it (in stop_ms) and deleted it, rather than the grace running
     * out. A bound in seconds would only measure how busy the machine is. */
    assert_int_equal(rc, KP_ENOTFOUND);
    assert_true(now_ms() - t0 < 30000);
    assert_int_equal(kc_delete(E.c, &kc_pods, NS, "run-b", NULL, NULL), 0);
    char *m = NULL;
    assert_int_equal(node_sim_metrics(s, &m), 0);
    assert_non_null(strstr(m, "kplane_node_sim_pod_starts_total 2"));
    free(m);
    (void)s; /* sim_free frees it */
}

static void test_never_pods(void **state)
{
    (void)state;
    node_sim_t *s = sim_start("job-node-", 1);
    pod_run("job-ok", "job-node-0", "Never", NULL);
    const char *const fail_ann[] = {NODE_SIM_ANN_EXIT_CODE "=3", NULL};
    pod_run("job-fail", "job-node-0", "Never", fail_ann);
    pod_run("job-onfailure", "job-node-0", "OnFailure", NULL);

    json_t *pod = wait_pod("job-ok", phase_is, "Succeeded", "Succeeded");
    const json_t *term = at(pod, "status.containerStatuses.0.state.terminated");
    assert_non_null(term);
    assert_int_equal(json_integer_value(json_object_get(term, "exitCode")), 0);
    assert_string_equal(str_at(term, "reason"), "Completed");
    assert_non_null(str_at(term, "finishedAt"));
    assert_string_equal(str_at(cond(pod, "Ready"), "reason"), "PodCompleted");
    json_decref(pod);

    pod = wait_pod("job-fail", phase_is, "Failed", "Failed");
    term = at(pod, "status.containerStatuses.0.state.terminated");
    assert_int_equal(json_integer_value(json_object_get(term, "exitCode")), 3);
    assert_string_equal(str_at(term, "reason"), "Error");
    json_decref(pod);

    pod = wait_pod("job-onfailure", phase_is, "Succeeded", "Succeeded");
    json_decref(pod);

    /* OnFailure with a failing exit: restarted in place, as a kubelet does. */
    const char *const retry_ann[] = {NODE_SIM_ANN_EXIT_CODE "=2", NODE_SIM_ANN_RUN "=50", NULL};
    pod_run("job-retry", "job-node-0", "OnFailure", retry_ann);
    int two = 2;
    pod = wait_pod("job-retry", restarts_at_least, &two, "2 restarts");
    assert_string_equal(str_at(pod, "status.phase"), "Running");
    json_decref(pod);
    pod_delete_now("job-retry");

    /* Deleting a finished pod removes it at once. */
    int64_t t0 = now_ms();
    assert_int_equal(kc_delete(E.c, &kc_pods, NS, "job-ok", NULL, NULL), 0);
    json_t *gone = NULL;
    int rc = 0;
    while (now_ms() - t0 < WAIT_MS && (rc = kc_get(E.c, &kc_pods, NS, "job-ok", &gone)) == 0) {
        json_decref(gone);
        gone = NULL;
        tu_sleep_ms(20);
    }
    assert_int_equal(rc, KP_ENOTFOUND);
    pod_delete_now("job-fail");
    pod_delete_now("job-onfailure");
    (void)s; /* sim_free frees it */
}

static void test_annotations(void **state)
{
    (void)state;
    node_sim_t *s = sim_start("ann-node-", 1);
    /* Slow start: ContainerCreating for 1.5 s. */
    const char *const slow[] = {NODE_SIM_ANN_START_DELAY "=1500", NULL};
    int64_t t0 = now_ms();
    pod_run("ann-slow", "ann-node-0", "Always", slow);
    /* Never ready. */
    const char *const unready[] = {NODE_SIM_ANN_NEVER_READY "=true", NULL};
    pod_run("ann-unready", "ann-node-0", "Always", unready);
    /* Crash loop: exits 1 after 100 ms, restarts after 0, 100, 200 ms ... */
    const char *const crash[] = {NODE_SIM_ANN_CRASH_LOOP "=true", NODE_SIM_ANN_RUN "=100", NULL};
    pod_run("ann-crash", "ann-node-0", "Always", crash);

    json_t *pod = wait_pod("ann-slow", running_ready, NULL, "Running and Ready");
    assert_true(now_ms() - t0 >= 1400);
    json_decref(pod);

    pod = wait_pod("ann-unready", phase_is, "Running", "Running");
    tu_sleep_ms(500);
    json_decref(pod);
    assert_int_equal(kc_get(E.c, &kc_pods, NS, "ann-unready", &pod), 0);
    assert_string_equal(str_at(pod, "status.phase"), "Running");
    assert_string_equal(str_at(cond(pod, "Ready"), "status"), "False");
    assert_string_equal(str_at(cond(pod, "ContainersReady"), "reason"), "ContainersNotReady");
    assert_false(json_is_true(at(pod, "status.containerStatuses.0.ready")));
    assert_true(json_is_true(at(pod, "status.containerStatuses.0.started")));
    assert_non_null(at(pod, "status.containerStatuses.0.state.running"));
    json_decref(pod);

    pod = wait_pod("ann-crash", waiting_reason, "CrashLoopBackOff", "CrashLoopBackOff");
    assert_string_equal(str_at(pod, "status.phase"), "Running");
    assert_int_equal(
        json_integer_value(at(pod, "status.containerStatuses.0.lastState.terminated.exitCode")), 1);
    assert_string_equal(str_at(pod, "status.containerStatuses.0.lastState.terminated.reason"),
                        "Error");
    assert_non_null(strstr(str_at(pod, "status.containerStatuses.0.state.waiting.message"),
                           "restarting failed container=main"));
    json_decref(pod);
    int three = 3;
    pod = wait_pod("ann-crash", restarts_at_least, &three, "3 restarts");
    json_decref(pod);

    /* A crash-looping pod still deletes gracefully. */
    assert_int_equal(kc_delete(E.c, &kc_pods, NS, "ann-crash", NULL, NULL), 0);
    t0 = now_ms();
    json_t *gone = NULL;
    int rc = 0;
    while (now_ms() - t0 < WAIT_MS && (rc = kc_get(E.c, &kc_pods, NS, "ann-crash", &gone)) == 0) {
        json_decref(gone);
        gone = NULL;
        tu_sleep_ms(20);
    }
    assert_int_equal(rc, KP_ENOTFOUND);
    pod_delete_now("ann-slow");
    pod_delete_now("ann-unready");
    (void)s; /* sim_free frees it */
}

static void test_qos_and_init(void **state)
{
    (void)state;
    node_sim_t *s = sim_start("qos-node-", 1);
    json_t *pod = json_pack(
        "{s:s, s:s, s:{s:s}, s:{s:s, s:[{s:s, s:s}], s:[{s:s, s:s, s:{s:{s:s, s:s}, "
        "s:{s:s, s:s}}}]}}",
        "apiVersion", "v1", "kind", "Pod", "metadata", "name", "qos-g", "spec", "schedulerName",
        "kplane-test-manual", "initContainers", "name", "setup", "image", "busybox:1.36",
        "containers", "name", "app", "image", "nginx:1.25", "resources", "limits", "cpu", "500m",
        "memory", "64Mi", "requests", "cpu", "0.5", "memory", "64Mi");
    /* Guaranteed needs limits on every container, init containers too. */
    json_t *res = json_deep_copy(at(pod, "spec.containers.0.resources"));
    json_t *init0 =
        json_array_get(json_object_get(json_object_get(pod, "spec"), "initContainers"), 0);
    json_object_set_new(init0, "resources", res);
    assert_int_equal(kc_create(E.c, &kc_pods, NS, pod, NULL, NULL), 0);
    json_decref(pod);
    assert_int_equal(kc_bind(E.c, NS, "qos-g", "qos-node-0"), 0);
    pod = wait_pod("qos-g", running_ready, NULL, "Running and Ready");
    assert_string_equal(str_at(pod, "status.qosClass"), "Guaranteed");
    const json_t *init = at(pod, "status.initContainerStatuses.0");
    assert_non_null(init);
    assert_string_equal(str_at(init, "name"), "setup");
    assert_string_equal(str_at(init, "state.terminated.reason"), "Completed");
    assert_int_equal(json_integer_value(at(init, "state.terminated.exitCode")), 0);
    assert_string_equal(str_at(cond(pod, "Initialized"), "status"), "True");
    json_decref(pod);

    pod = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:[{s:s, s:s, s:{s:{s:s}}}]}}", "apiVersion", "v1",
                    "kind", "Pod", "metadata", "name", "qos-b", "spec", "schedulerName",
                    "kplane-test-manual", "containers", "name", "app", "image", "nginx:1.25",
                    "resources", "requests", "cpu", "100m");
    assert_int_equal(kc_create(E.c, &kc_pods, NS, pod, NULL, NULL), 0);
    json_decref(pod);
    assert_int_equal(kc_bind(E.c, NS, "qos-b", "qos-node-0"), 0);
    pod = wait_pod("qos-b", running_ready, NULL, "Running and Ready");
    assert_string_equal(str_at(pod, "status.qosClass"), "Burstable");
    json_decref(pod);
    pod_delete_now("qos-g");
    pod_delete_now("qos-b");
    (void)s; /* sim_free frees it */
}

static void test_pause(void **state)
{
    (void)state;
    node_sim_t *s = sim_start("pause-node-", 2);
    tu_sleep_ms(300);
    assert_int_equal(node_sim_pause(s, "pause-node-0", 1), 0);
    tu_sleep_ms(300); /* a renewal in flight lands */
    char *t1 = lease_renew_time("pause-node-0");
    char *o1 = lease_renew_time("pause-node-1");
    /* Pods on a paused node wait. */
    pod_run("pause-pod", "pause-node-0", "Always", NULL);
    tu_sleep_ms(1000); /* five renewal intervals, none of which may renew it */
    char *t2 = lease_renew_time("pause-node-0");
    assert_non_null(t1);
    assert_non_null(o1);
    assert_string_equal(t1, t2);                   /* no renewals while paused */
    char *o2 = wait_renewed("pause-node-1", o1); /* the other node keeps renewing */
    json_t *pod = NULL;
    assert_int_equal(kc_get(E.c, &kc_pods, NS, "pause-pod", &pod), 0);
    assert_null(at(pod, "status.containerStatuses"));
    json_decref(pod);
    char *m = NULL;
    assert_int_equal(node_sim_metrics(s, &m), 0);
    assert_non_null(strstr(m, "kplane_node_sim_nodes_paused 1"));
    free(m);

    /* What the node lifecycle controller would do to a silent node. */
    json_t *node = NULL;
    assert_int_equal(kc_get(E.c, &kc_nodes, NULL, "pause-node-0", &node), 0);
    char since[64];
    snprintf(since, sizeof since, "%s", str_at(cond(node, "Ready"), "lastTransitionTime"));
    json_decref(node);
    json_t *unknown = json_pack("{s:{s:[{s:s, s:s, s:s}]}}", "status", "conditions", "type",
                                "Ready", "status", "Unknown", "reason", "NodeStatusUnknown");
    assert_int_equal(kc_patch(E.c, &kc_nodes, NULL, "pause-node-0", "status", KC_PATCH_MERGE,
                              unknown, NULL, NULL, NULL),
                     0);
    json_decref(unknown);

    assert_int_equal(node_sim_pause(s, "pause-node-0", 0), 0);
    /* Ready again, as a new transition. */
    int64_t deadline = now_ms() + WAIT_MS;
    const char *ready = NULL;
    while (now_ms() < deadline) {
        assert_int_equal(kc_get(E.c, &kc_nodes, NULL, "pause-node-0", &node), 0);
        ready = str_at(cond(node, "Ready"), "status");
        if (ready && !strcmp(ready, "True")) break;
        json_decref(node);
        node = NULL;
        tu_sleep_ms(50);
    }
    assert_non_null(node);
    assert_string_equal(str_at(cond(node, "Ready"), "reason"), "KubeletReady");
    assert_string_not_equal(str_at(cond(node, "Ready"), "lastTransitionTime"), since);
    json_decref(node);
    char *t3 = wait_renewed("pause-node-0", t2);
    pod = wait_pod("pause-pod", running_ready, NULL, "Running and Ready after resume");
    json_decref(pod);
    free(t1);
    free(t2);
    free(t3);
    free(o1);
    free(o2);
    pod_delete_now("pause-pod");
    (void)s; /* sim_free frees it */
}

/* Another writer marks a running pod not ready, as the node lifecycle
 * controller marks the pods of a node it has lost: the node says Ready
 * again (a kubelet's status manager reconciles). Under load the controller's
 * mark could land after the node came back and wrote Running; the pod then
 * stayed not ready for good. */
static void test_status_reconciled(void **state)
{
    (void)state;
    node_sim_t *s = sim_start("rec-node-", 1);
    pod_run("rec-pod", "rec-node-0", "Always", NULL);
    json_t *pod = wait_pod("rec-pod", running_ready, NULL, "Running and Ready");
    json_t *conds = json_deep_copy(at(pod, "status.conditions"));
    size_t i;
    json_t *c;
    json_array_foreach(conds, i, c) {
        if (!strcmp(str_at(c, "type"), "Ready"))
            json_object_set_new(c, "status", json_string("False"));
    }
    json_t *patch = json_pack("{s:{s:o}}", "status", "conditions", conds);
    assert_int_equal(kc_patch(E.c, &kc_pods, NS, "rec-pod", "status", KC_PATCH_MERGE, patch,
                              NULL, NULL, NULL),
                     0);
    json_decref(patch);
    json_decref(pod);
    pod = wait_pod("rec-pod", running_ready, NULL, "Ready again");
    json_decref(pod);
    char *m = NULL;
    assert_int_equal(node_sim_metrics(s, &m), 0);
    assert_null(strstr(m, "kplane_node_sim_pod_status_reconciles_total 0\n"));
    free(m);
    pod_delete_now("rec-pod");
}

/* Another writer (the node lifecycle controller, after the node's Lease went
 * unrenewed while the API server could not reach its store) marks a node
 * that is not paused Ready Unknown: it is Ready again at once, as a new
 * transition, as a kubelet does within its 10 s status check, not at its
 * next periodic status post (60 s here, as by default). */
static void test_node_ready_again(void **state)
{
    (void)state;
    node_sim_config_t cfg;
    config(&cfg, "again-node-", 1);
    cfg.status_update_ms = 60000;
    node_sim_t *s = NULL;
    assert_int_equal(node_sim_new(E.c, &cfg, &s), 0);
    assert_int_equal(node_sim_start(s), 0);
    cur = s;
    json_t *node = NULL;
    assert_int_equal(kc_get(E.c, &kc_nodes, NULL, "again-node-0", &node), 0);
    assert_string_equal(str_at(cond(node, "Ready"), "status"), "True");
    char since[64];
    snprintf(since, sizeof since, "%s", str_at(cond(node, "Ready"), "lastTransitionTime"));
    json_decref(node);
    tu_sleep_ms(1100); /* a transition a second later shows in the RFC 3339 time */
    json_t *unknown = json_pack("{s:{s:[{s:s, s:s, s:s}]}}", "status", "conditions", "type",
                                "Ready", "status", "Unknown", "reason", "NodeStatusUnknown");
    assert_int_equal(kc_patch(E.c, &kc_nodes, NULL, "again-node-0", "status", KC_PATCH_MERGE,
                              unknown, NULL, NULL, NULL),
                     0);
    json_decref(unknown);
    int64_t t0 = now_ms(), deadline = t0 + 10000;
    const char *ready = NULL;
    for (;;) {
        node = NULL;
        assert_int_equal(kc_get(E.c, &kc_nodes, NULL, "again-node-0", &node), 0);
        ready = str_at(cond(node, "Ready"), "status");
        if ((ready && !strcmp(ready, "True")) || now_ms() >= deadline) break;
        json_decref(node);
        tu_sleep_ms(50);
    }
    assert_string_equal(ready, "True"); /* within 10 s, not the 60 s of its status period */
    assert_string_equal(str_at(cond(node, "Ready"), "reason"), "KubeletReady");
    assert_string_not_equal(str_at(cond(node, "Ready"), "lastTransitionTime"), since);
    json_decref(node);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_refused),
        cmocka_unit_test_teardown(test_nodes_register_and_renew, sim_free),
        cmocka_unit_test_teardown(test_pod_runs_and_deletes, sim_free),
        cmocka_unit_test_teardown(test_never_pods, sim_free),
        cmocka_unit_test_teardown(test_annotations, sim_free),
        cmocka_unit_test_teardown(test_qos_and_init, sim_free),
        cmocka_unit_test_teardown(test_pause, sim_free),
        cmocka_unit_test_teardown(test_status_reconciled, sim_free),
        cmocka_unit_test_teardown(test_node_ready_again, sim_free),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
