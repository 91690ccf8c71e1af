/*
 * test_scheduler_api.c -- the scheduler (src/scheduler) against a real
 * kplane server (tests/client/kpserver.c), run without its own scheduler,
 * controllers or simulated nodes so that this test's scheduler is the only
 * actor.
 *
 * What it proves:
 *  - 10 pods onto 3 nodes: all bound (spec.nodeName, PodScheduled=True),
 *    spread 4/3/3, no node over its allocatable; a "Scheduled" event each.
 *  - A pod that fits nowhere gets PodScheduled=False, reason Unschedulable,
 *    Kubernetes' message ("0/3 nodes are available: 3 Insufficient cpu.")
 *    and a FailedScheduling event; a big enough node added binds it.
 *  - A pod whose nodeSelector no node matches is bound once a node is
 *    labelled to match (a node update retries unschedulable pods).
 *  - A pod for another scheduler is left alone; the metrics count it all.
 *  - With KP_SCHED_SCALE=1 in the environment: 10,000 pods onto 200 nodes,
 *    timed (wall and CPU of this process while the scheduler works).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/sdk.h"
#include "kpserver.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "scheduler/scheduler.h"
#include "testutil.h"

#define NS "sched-test"

typedef struct fixture {
    kpserver_t srv;
    kc_config_t cfg;
    json_t *storage;
    kc_client_t *c;
    sched_t *s; /* freed by teardown, also after a failed assertion */
} fixture_t;

static const char *const server_flags[] = {"--nodes", "0", "--no-scheduler", "--no-controllers",
                                           NULL};

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    kpserver_start(&f->srv, server_flags);
    assert_int_equal(kpserver_client(&f->srv, &f->cfg, &f->storage, &f->c), 0);
    json_t *ns = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                           "metadata", "name", NS);
    assert_int_equal(kc_create(f->c, &kc_namespaces, NULL, ns, NULL, NULL), 0);
    json_decref(ns);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    sched_free(f->s);
    kc_client_free(f->c);
    json_decref(f->storage);
    kpserver_stop(&f->srv);
    free(f);
    return 0;
}

/* A Ready node with this allocatable; its status is written through
 * nodes/status, as a kubelet does. labels: a JSON object text or NULL. */
static void mk_node(kc_client_t *c, const char *name, const char *cpu, const char *mem,
                    const char *pods, const char *labels)
{
    json_t *node = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Node", "metadata",
                             "name", name);
    if (labels)
        json_object_set_new(json_object_get(node, "metadata"), "labels",
                            json_loads(labels, 0, NULL));
    int rc = kc_create(c, &kc_nodes, NULL, node, NULL, NULL);
    if (rc) fprintf(stderr, "create node %s: %s\n", name, err_str(rc));
    assert_int_equal(rc, 0);
    json_decref(node);
    json_t *st = json_pack("{s:{s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}, s:[{s:s, s:s, s:s}]}}",
                           "status", "allocatable", "cpu", cpu, "memory", mem, "pods", pods,
                           "capacity", "cpu", cpu, "memory", mem, "pods", pods, "conditions",
                           "type", "Ready", "status", "True", "reason", "KubeletReady");
    rc = kc_patch(c, &kc_nodes, NULL, name, "status", KC_PATCH_MERGE, st, NULL, NULL, NULL);
    if (rc) fprintf(stderr, "patch node %s status: %s\n", name, err_str(rc));
    assert_int_equal(rc, 0);
    json_decref(st);
}

/* A pod asking for cpu and mem in one container; spec_extra (JSON object
 * text or NULL) is merged into its spec. */
static void mk_pod(kc_client_t *c, const char *name, const char *cpu, const char *mem,
                   const char *spec_extra)
{
    json_t *pod = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:[{s:s, s:s, s:{s:{s:s, s:s}}}]}}",
                            "apiVersion", "v1", "kind", "Pod", "metadata", "name", name,
                            "namespace", NS, "spec", "containers", "name", "c", "image",
                            "busybox:1", "resources", "requests", "cpu", cpu, "memory", mem);
    if (spec_extra) {
        json_t *extra = json_loads(spec_extra, 0, NULL);
        assert_non_null(extra);
        json_object_update(json_object_get(pod, "spec"), extra);
        json_decref(extra);
    }
    int rc = kc_create(c, &kc_pods, NS, pod, NULL, NULL);
    if (rc) fprintf(stderr, "create pod %s: %s\n", name, err_str(rc));
    assert_int_equal(rc, 0);
    json_decref(pod);
}

static const char *str_at(const json_t *o, const char *a, const char *b)
{
    return json_string_value(json_object_get(json_object_get(o, a), b));
}

/* The pod's node ("" while unbound) into buf; its PodScheduled condition
 * (a new reference, or NULL) into *cond when cond is not NULL. */
static void pod_state(kc_client_t *c, const char *name, char *buf, size_t n, json_t **cond)
{
    json_t *pod = NULL;
    assert_int_equal(kc_get(c, &kc_pods, NS, name, &pod), 0);
    const char *node = str_at(pod, "spec", "nodeName");
    snprintf(buf, n, "%s", node ? node : "");
    if (cond) {
        *cond = NULL;
        size_t i;
        json_t *x;
        json_array_foreach(json_object_get(json_object_get(pod, "status"), "conditions"), i, x) {
            const char *type = json_string_value(json_object_get(x, "type"));
            if (type && !strcmp(type, "PodScheduled")) *cond = json_incref(x);
        }
    }
    json_decref(pod);
}

/* Wait until the pod is bound (node into buf) or timeout_ms passes. */
static int wait_bound(kc_client_t *c, const char *name, char *buf, size_t n, int timeout_ms)
{
    int64_t end = clock_mono_ns() + (int64_t)timeout_ms * 1000000;
    do {
        pod_state(c, name, buf, n, NULL);
        if (*buf) return 1;
        tu_sleep_ms(50);
    } while (clock_mono_ns() < end);
    return 0;
}

/* Wait until the pod's PodScheduled is False/Unschedulable; its message
 * into msg. */
static int wait_unschedulable(kc_client_t *c, const char *name, char *msg, size_t n, int timeout_ms)
{
    int64_t end = clock_mono_ns() + (int64_t)timeout_ms * 1000000;
    do {
        char node[256];
        json_t *cond;
        pod_state(c, name, node, sizeof node, &cond);
        const char *st = json_string_value(json_object_get(cond, "status"));
        const char *reason = json_string_value(json_object_get(cond, "reason"));
        const char *m = json_string_value(json_object_get(cond, "message"));
        int ok = st && !strcmp(st, "False") && reason && !strcmp(reason, "Unschedulable");
        if (ok) snprintf(msg, n, "%s", m ? m : "");
        json_decref(cond);
        if (ok) return 1;
        tu_sleep_ms(50);
    } while (clock_mono_ns() < end);
    return 0;
}

/* How many events in NS have this reason (and message, when not NULL). */
static int count_events(kc_client_t *c, const char *reason, const char *object, const char *message)
{
    char query[256];
    snprintf(query, sizeof query, "fieldSelector=reason%%3D%s", reason);
    json_t *list = NULL;
    assert_int_equal(kc_list(c, &kc_events, NS, query, &list), 0);
    int n = 0;
    size_t i;
    json_t *ev;
    json_array_foreach(json_object_get(list, "items"), i, ev) {
        const char *obj = str_at(ev, "involvedObject", "name");
        const char *msg = json_string_value(json_object_get(ev, "message"));
        if (object && (!obj || strcmp(obj, object))) continue;
        if (message && (!msg || strcmp(msg, message))) continue;
        n++;
    }
    json_decref(list);
    return n;
}

static int wait_events(kc_client_t *c, const char *reason, const char *object, const char *message,
                       int want, int timeout_ms)
{
    int64_t end = clock_mono_ns() + (int64_t)timeout_ms * 1000000;
    int n;
    while ((n = count_events(c, reason, object, message)) < want && clock_mono_ns() < end)
        tu_sleep_ms(100);
    return n;
}

static void test_schedule(void **state)
{
    fixture_t *f = *state;
    kc_client_t *c = f->c;
    mk_node(c, "n1", "2", "4Gi", "110", NULL);
    mk_node(c, "n2", "2", "4Gi", "110", NULL);
    mk_node(c, "n3", "2", "4Gi", "110", NULL);

    sched_config_t cfg = {.workers = 4, .backoff_initial_ms = 200, .backoff_max_ms = 2000};
    assert_int_equal(sched_new(c, &cfg, &f->s), 0);
    sched_t *s = f->s;
    assert_int_equal(sched_start(s), 0);
    assert_int_equal(sched_start(s), KP_EBUSY);

    /* Ten pods of 500m: 12 fit in all, and least-allocated spreads them. */
    char name[64], node[256];
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof name, "web-%d", i);
        mk_pod(c, name, "500m", "256Mi", NULL);
    }
    mk_pod(c, "other", "100m", "1Mi", "{\"schedulerName\": \"someone-else\"}");
    int per[3] = {0};
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof name, "web-%d", i);
        assert_true(wait_bound(c, name, node, sizeof node, 20000));
        assert_true(node[0] == 'n' && node[1] >= '1' && node[1] <= '3' && !node[2]);
        per[node[1] - '1']++;
        json_t *cond;
        pod_state(c, name, node, sizeof node, &cond);
        assert_string_equal(json_string_value(json_object_get(cond, "status")), "True");
        json_decref(cond);
    }
    for (int i = 0; i < 3; i++) {
        fprintf(stderr, "n%d: %d pods\n", i + 1, per[i]);
        assert_true(per[i] == 3 || per[i] == 4); /* 4 x 500m = the node's 2 cpu */
    }
    assert_int_equal(wait_events(c, "Scheduled", NULL, NULL, 10, 10000), 10);
    json_t *list = NULL;
    assert_int_equal(kc_list(c, &kc_events, NS, "fieldSelector=reason%3DScheduled", &list), 0);
    const char *msg0 = json_string_value(
        json_object_get(json_array_get(json_object_get(list, "items"), 0), "message"));
    assert_non_null(msg0);
    const char *want = "Successfully assigned " NS "/web-";
    assert_true(!strncmp(msg0, want, strlen(want)));
    json_decref(list);

    /* Three cpus fit nowhere. */
    char msg[512];
    mk_pod(c, "big", "3", "1Gi", NULL);
    assert_true(wait_unschedulable(c, "big", msg, sizeof msg, 10000));
    assert_string_equal(msg, "0/3 nodes are available: 3 Insufficient cpu.");
    assert_int_equal(wait_events(c, "FailedScheduling", "big", msg, 1, 10000), 1);
    pod_state(c, "big", node, sizeof node, NULL);
    assert_string_equal(node, "");
    /* A node that is big enough: bound there promptly, not after a backoff. */
    int64_t t0 = clock_mono_ns();
    mk_node(c, "n4", "4", "8Gi", "110", NULL);
    assert_true(wait_bound(c, "big", node, sizeof node, 10000));
    assert_string_equal(node, "n4");
    fprintf(stderr, "big bound %.0f ms after n4 appeared\n", (double)(clock_mono_ns() - t0) / 1e6);

    /* No node has disk=ssd: unschedulable, until n4 (with room left) gets
     * the label. */
    mk_pod(c, "picky", "100m", "1Mi", "{\"nodeSelector\": {\"disk\": \"ssd\"}}");
    assert_true(wait_unschedulable(c, "picky", msg, sizeof msg, 10000));
    assert_string_equal(msg, "0/4 nodes are available: 4 node(s) didn't match Pod's node "
                             "affinity/selector.");
    json_t *patch = json_pack("{s:{s:{s:s}}}", "metadata", "labels", "disk", "ssd");
    assert_int_equal(
        kc_patch(c, &kc_nodes, NULL, "n4", NULL, KC_PATCH_MERGE, patch, NULL, NULL, NULL), 0);
    json_decref(patch);
    assert_true(wait_bound(c, "picky", node, sizeof node, 10000));
    assert_string_equal(node, "n4");

    /* Every node's bound pods within its allocatable. */
    const char *nodes[] = {"n1", "n2", "n3", "n4"};
    const int cap_m[] = {2000, 2000, 2000, 4000};
    for (int n = 0; n < 4; n++) {
        char q[64];
        snprintf(q, sizeof q, "fieldSelector=spec.nodeName%%3D%s", nodes[n]);
        assert_int_equal(kc_list(c, &kc_pods, NS, q, &list), 0);
        int cpu = 0;
        size_t i;
        json_t *p;
        json_array_foreach(json_object_get(list, "items"), i, p) {
            const char *r = json_string_value(json_object_get(
                json_object_get(
                    json_object_get(
                        json_array_get(json_object_get(json_object_get(p, "spec"), "containers"),
                                       0),
                        "resources"),
                    "requests"),
                "cpu"));
            assert_non_null(r);
            cpu += !strcmp(r, "3") ? 3000 : !strcmp(r, "500m") ? 500 : 100;
        }
        json_decref(list);
        assert_true(cpu <= cap_m[n]);
    }

    /* Someone else's pod is not ours. */
    pod_state(c, "other", node, sizeof node, NULL);
    assert_string_equal(node, "");

    char *text = NULL;
    assert_int_equal(sched_metrics(s, &text), 0);
    fprintf(stderr, "%s", text);
    assert_non_null(strstr(text, "kplane_scheduler_bind_successes_total 12\n"));
    assert_non_null(strstr(text, "kplane_scheduler_pending_pods 0\n"));
    assert_non_null(
        strstr(text, "kplane_scheduler_schedule_attempts_total{result=\"scheduled\"} 12\n"));
    assert_null(
        strstr(text, "kplane_scheduler_schedule_attempts_total{result=\"unschedulable\"} 0\n"));
    free(text);

    /* Stop, and start again from a fresh list: nothing left to do. */
    sched_stop(s);
    sched_stop(s);
    assert_int_equal(sched_start(s), 0);
    mk_pod(c, "late", "100m", "1Mi", NULL);
    assert_true(wait_bound(c, "late", node, sizeof node, 10000));
}

/* ---- scale (KP_SCHED_SCALE=1) ---- */

typedef struct maker {
    kc_client_t *c;
    int from, to;
} maker_t;

static void *make_pods(void *arg)
{
    maker_t *m = arg;
    char name[64];
    for (int i = m->from; i < m->to; i++) {
        snprintf(name, sizeof name, "s-%05d", i);
        mk_pod(m->c, name, "100m", "64Mi", NULL);
    }
    return NULL;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds (user + system) the process pid has used so far. */
static double proc_cpu_s(pid_t pid)
{
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[n] = 0;
    const char *p = strrchr(line, ')'); /* after the command name */
    unsigned long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return 0;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static void test_scale(void **state)
{
    fixture_t *f = *state;
    enum { NODES = 200, PODS = 10000, MAKERS = 8 };
    char name[64];
    for (int i = 0; i < NODES; i++) {
        snprintf(name, sizeof name, "big-%03d", i);
        mk_node(f->c, name, "32", "256Gi", "110", NULL);
    }
    pthread_t t[MAKERS];
    maker_t m[MAKERS];
    for (int i = 0; i < MAKERS; i++) {
        m[i] = (maker_t){f->c, i * PODS / MAKERS, (i + 1) * PODS / MAKERS};
        assert_int_equal(pthread_create(&t[i], NULL, make_pods, &m[i]), 0);
    }
    for (int i = 0; i < MAKERS; i++)
        pthread_join(t[i], NULL);

    const char *w = getenv("KP_SCHED_WORKERS");
    sched_config_t cfg = {.workers = w ? (int)strtol(w, NULL, 10) : 0};
    assert_int_equal(sched_new(f->c, &cfg, &f->s), 0);
    sched_t *s = f->s;
    double c0 = cpu_s(), srv0 = proc_cpu_s(f->srv.pid);
    int64_t t0 = clock_mono_ns();
    assert_int_equal(sched_start(s), 0);
    double synced = (double)(clock_mono_ns() - t0) / 1e9, c1 = cpu_s();
    char *text = NULL;
    int polls = 0;
    for (;;) {
        assert_int_equal(sched_metrics(s, &text), 0);
        const char *p = strstr(text, "\nkplane_scheduler_bind_successes_total ");
        long done = p ? strtol(p + 39, NULL, 10) : 0;
        free(text);
        if (done >= PODS) break;
        if (++polls % 250 == 0)
            fprintf(stderr, "%.1f s: %ld bound\n", (double)(clock_mono_ns() - t0) / 1e9, done);
        assert_true(clock_mono_ns() - t0 < 300LL * 1000000000); /* sanitizer builds are slow */
        tu_sleep_ms(20);
    }
    double wall = (double)(clock_mono_ns() - t0) / 1e9, cpu = cpu_s() - c0;
    double srv = proc_cpu_s(f->srv.pid) - srv0;
    kc_client_stats_t cs;
    kc_client_stats(f->c, &cs);
    fprintf(stderr, "client: %llu requests, %llu errors, %llu watches in all\n",
            (unsigned long long)cs.requests, (unsigned long long)cs.errors,
            (unsigned long long)cs.watches);
    fprintf(stderr,
            "%d pods onto %d nodes: %.2f s wall (sync %.2f s, binding %.2f s); CPU: this "
            "process %.2f s (sync %.2f s, binding %.2f s), the API server %.2f s\n",
            PODS, NODES, wall, synced, wall - synced, cpu, c1 - c0, cpu - (c1 - c0), srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_schedule, setup, teardown),
    };
    const struct CMUnitTest scale[] = {
        cmocka_unit_test_setup_teardown(test_scale, setup, teardown),
    };
    if (getenv("KP_SCHED_SCALE")) return cmocka_run_group_tests(scale, NULL, NULL);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
