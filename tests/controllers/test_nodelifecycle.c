/*
 * test_nodelifecycle.c -- the pure logic of the node lifecycle and taint
 * eviction controllers (src/controllers/nodelifecycle.c through
 * nodelifecycle_int.h): toleration matching as Kubernetes' ToleratesTaint,
 * when a pod must leave a NoExecute-tainted node (tolerationSeconds counted
 * from timeAdded), staleness, the Unknown conditions of a silent node, and
 * the taints a node's conditions call for.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/nodelifecycle_int.h"
#include "lib/nodematch.h"

#define NOW   1700000000 /* 2023-11-14T22:13:20Z */
#define NOW_S "2023-11-14T22:13:20Z"

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    if (!v) fail_msg("bad test JSON: %s: %s", e.text, text);
    return v;
}

static int tolerates(const char *tol, const char *taint)
{
    json_t *a = parse(tol), *b = parse(taint), *list = json_pack("[O]", a);
    int r = kp_tolerates_taint(list, b); /* lib/nodematch.h, as the controllers use it */
    json_decref(list);
    json_decref(a);
    json_decref(b);
    return r;
}

static void test_tolerates(void **state)
{
    (void)state;
    const char *unreach = "{\"key\":\"node.kubernetes.io/unreachable\",\"effect\":\"NoExecute\"}";
    /* Exists on the key, any effect or this one. */
    assert_true(
        tolerates("{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\"}", unreach));
    assert_true(tolerates("{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\","
                          "\"effect\":\"NoExecute\"}",
                          unreach));
    /* Another effect or key does not. */
    assert_false(tolerates("{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\","
                           "\"effect\":\"NoSchedule\"}",
                           unreach));
    assert_false(
        tolerates("{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\"}", unreach));
    /* An empty key with Exists tolerates everything; with Equal nothing. */
    assert_true(tolerates("{\"operator\":\"Exists\"}", unreach));
    assert_false(tolerates("{\"operator\":\"Equal\"}", unreach));
    /* Equal (the default operator) compares values. */
    const char *gpu = "{\"key\":\"gpu\",\"value\":\"a100\",\"effect\":\"NoSchedule\"}";
    assert_true(tolerates("{\"key\":\"gpu\",\"value\":\"a100\"}", gpu));
    assert_true(tolerates("{\"key\":\"gpu\",\"operator\":\"Equal\",\"value\":\"a100\"}", gpu));
    assert_false(tolerates("{\"key\":\"gpu\",\"value\":\"h100\"}", gpu));
    assert_true(tolerates("{\"key\":\"gpu\",\"operator\":\"Exists\"}", gpu));
    /* An empty value matches a taint without one. */
    assert_true(tolerates("{\"key\":\"node.kubernetes.io/unreachable\"}", unreach));
}

/* nlc_eviction over taints and tolerations given as JSON arrays. */
static int eviction(const char *taints, const char *tols, int64_t added_default, int64_t *at)
{
    json_t *a = parse(taints), *b = parse(tols);
    *at = -1;
    int r = nlc_eviction(a, b, NOW, added_default, at);
    json_decref(a);
    json_decref(b);
    return r;
}

#define T_UNREACH(added)                                                                           \
    "{\"key\":\"node.kubernetes.io/unreachable\",\"effect\":\"NoExecute\",\"timeAdded\":\"" added  \
    "\"}"
#define T_UNREACH_NS "{\"key\":\"node.kubernetes.io/unreachable\",\"effect\":\"NoSchedule\"}"
#define TOL_UNREACH(secs)                                                                          \
    "{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\",\"effect\":"              \
    "\"NoExecute\"" secs "}"
#define TOL_NOTREADY(secs)                                                                         \
    "{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\",\"effect\":"                \
    "\"NoExecute\"" secs "}"

static void test_eviction_time(void **state)
{
    (void)state;
    int64_t at;
    /* No NoExecute taint: stay, whatever the tolerations. */
    assert_int_equal(eviction("[]", "[]", NOW, &at), NLC_KEEP);
    assert_int_equal(eviction("[" T_UNREACH_NS "]", "[]", NOW, &at), NLC_KEEP);
    /* Not tolerated: at once. */
    assert_int_equal(eviction("[" T_UNREACH(NOW_S) "]", "[]", NOW, &at), NLC_EVICT_NOW);
    assert_int_equal(eviction("[" T_UNREACH(NOW_S) "]",
                              "[" TOL_NOTREADY(",\"tolerationSeconds\":300") "]", NOW, &at),
                     NLC_EVICT_NOW);
    /* Tolerated forever: stay. */
    assert_int_equal(eviction("[" T_UNREACH(NOW_S) "]", "[" TOL_UNREACH("") "]", NOW, &at),
                     NLC_KEEP);
    assert_int_equal(eviction("[" T_UNREACH(NOW_S) "]", "[{\"operator\":\"Exists\"}]", NOW, &at),
                     NLC_KEEP);
    /* 300 s from timeAdded: the taint was added 100 s ago, 200 s left. */
    assert_int_equal(eviction("[" T_UNREACH("2023-11-14T22:11:40Z") "]",
                              "[" TOL_UNREACH(",\"tolerationSeconds\":300") "]", NOW, &at),
                     NLC_EVICT_AT);
    assert_int_equal(at, NOW + 200);
    /* Run out: now. Exactly at the deadline counts as run out. */
    assert_int_equal(eviction("[" T_UNREACH("2023-11-14T22:08:20Z") "]",
                              "[" TOL_UNREACH(",\"tolerationSeconds\":300") "]", NOW, &at),
                     NLC_EVICT_NOW);
    assert_int_equal(eviction("[" T_UNREACH("2023-11-14T22:00:00Z") "]",
                              "[" TOL_UNREACH(",\"tolerationSeconds\":300") "]", NOW, &at),
                     NLC_EVICT_NOW);
    /* Zero and negative seconds: at once. */
    assert_int_equal(eviction("[" T_UNREACH(NOW_S) "]",
                              "[" TOL_UNREACH(",\"tolerationSeconds\":0") "]", NOW, &at),
                     NLC_EVICT_NOW);
    assert_int_equal(eviction("[" T_UNREACH(NOW_S) "]",
                              "[" TOL_UNREACH(",\"tolerationSeconds\":-5") "]", NOW, &at),
                     NLC_EVICT_NOW);
    /* No timeAdded: counted from added_default (when first seen). */
    assert_int_equal(
        eviction("[{\"key\":\"node.kubernetes.io/unreachable\",\"effect\":\"NoExecute\"}]",
                 "[" TOL_UNREACH(",\"tolerationSeconds\":30") "]", NOW - 10, &at),
        NLC_EVICT_AT);
    assert_int_equal(at, NOW + 20);
    /* The first matching toleration is the one used (as Kubernetes'
     * GetMatchingTolerations): forever first wins over 10 s after it. */
    assert_int_equal(eviction("[" T_UNREACH(NOW_S) "]",
                              "[" TOL_UNREACH("") "," TOL_UNREACH(",\"tolerationSeconds\":10") "]",
                              NOW, &at),
                     NLC_KEEP);
    assert_int_equal(eviction("[" T_UNREACH(NOW_S) "]",
                              "[" TOL_UNREACH(",\"tolerationSeconds\":10") "," TOL_UNREACH("") "]",
                              NOW, &at),
                     NLC_EVICT_AT);
    assert_int_equal(at, NOW + 10);
    /* Two taints: the earliest deadline; one untolerated taint wins. */
    const char *two =
        "[" T_UNREACH("2023-11-14T22:13:00Z") ","
                                              "{\"key\":\"node.kubernetes.io/"
                                              "not-ready\",\"effect\":\"NoExecute\","
                                              "\"timeAdded\":\"2023-11-14T22:13:10Z\"}]";
    assert_int_equal(eviction(two,
                              "[" TOL_UNREACH(",\"tolerationSeconds\":300") "," TOL_NOTREADY(
                                  ",\"tolerationSeconds\":60") "]",
                              NOW, &at),
                     NLC_EVICT_AT);
    assert_int_equal(at, NOW - 10 + 60);
    assert_int_equal(eviction(two, "[" TOL_UNREACH(",\"tolerationSeconds\":300") "]", NOW, &at),
                     NLC_EVICT_NOW);
    /* One forever, one timed: the timed one decides. */
    assert_int_equal(eviction(two,
                              "[" TOL_UNREACH("") "," TOL_NOTREADY(",\"tolerationSeconds\":60") "]",
                              NOW, &at),
                     NLC_EVICT_AT);
    assert_int_equal(at, NOW + 50);
}

static void test_stale(void **state)
{
    (void)state;
    assert_false(nlc_stale(1000, 1000, 40000));
    assert_false(nlc_stale(1000, 41000, 40000)); /* exactly the grace period: not yet */
    assert_true(nlc_stale(1000, 41001, 40000));
    assert_false(nlc_stale(5000, 1000, 40000)); /* a probe after now (clock of the caller) */
}

static json_t *healthy_node(void)
{
    return parse(
        "{\"metadata\":{\"name\":\"n1\"},\"spec\":{},\"status\":{\"conditions\":["
        "{\"type\":\"MemoryPressure\",\"status\":\"False\",\"reason\":"
        "\"KubeletHasSufficientMemory\","
        "\"message\":\"m\",\"lastHeartbeatTime\":\"2023-11-14T22:00:00Z\","
        "\"lastTransitionTime\":\"2023-11-14T20:00:00Z\"},"
        "{\"type\":\"DiskPressure\",\"status\":\"False\",\"reason\":\"KubeletHasNoDiskPressure\","
        "\"message\":\"d\",\"lastHeartbeatTime\":\"2023-11-14T22:00:00Z\","
        "\"lastTransitionTime\":\"2023-11-14T20:00:00Z\"},"
        "{\"type\":\"PIDPressure\",\"status\":\"False\",\"reason\":\"KubeletHasSufficientPID\","
        "\"message\":\"p\",\"lastHeartbeatTime\":\"2023-11-14T22:00:00Z\","
        "\"lastTransitionTime\":\"2023-11-14T20:00:00Z\"},"
        "{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"KubeletReady\","
        "\"message\":\"r\",\"lastHeartbeatTime\":\"2023-11-14T22:00:00Z\","
        "\"lastTransitionTime\":\"2023-11-14T20:00:00Z\"}]}}");
}

static void test_unknown_conditions(void **state)
{
    (void)state;
    json_t *node = healthy_node();
    json_t *c = nlc_unknown_conditions(node, NOW_S);
    assert_non_null(c);
    assert_int_equal(json_array_size(c), 4);
    size_t i;
    json_t *x;
    json_array_foreach(c, i, x) {
        assert_string_equal(json_string_value(json_object_get(x, "status")), "Unknown");
        assert_string_equal(json_string_value(json_object_get(x, "reason")), "NodeStatusUnknown");
        assert_string_equal(json_string_value(json_object_get(x, "message")),
                            "Kubelet stopped posting node status.");
        /* The heartbeat is the kubelet's last; the transition is now. */
        assert_string_equal(json_string_value(json_object_get(x, "lastHeartbeatTime")),
                            "2023-11-14T22:00:00Z");
        assert_string_equal(json_string_value(json_object_get(x, "lastTransitionTime")), NOW_S);
    }
    /* The input is untouched (cached objects are read-only). */
    assert_string_equal(json_string_value(json_object_get(nlc_condition(node, "Ready"), "status")),
                        "True");
    /* Unknown already: nothing to write. */
    json_t *st = json_object_get(node, "status");
    json_object_set(st, "conditions", c);
    json_decref(c);
    assert_null(nlc_unknown_conditions(node, NOW_S));
    json_decref(node);

    /* A node that never posted: the four conditions, NodeStatusNeverUpdated. */
    node = parse("{\"metadata\":{\"name\":\"n2\"},\"spec\":{}}");
    c = nlc_unknown_conditions(node, NOW_S);
    assert_non_null(c);
    assert_int_equal(json_array_size(c), 4);
    assert_string_equal(json_string_value(json_object_get(json_array_get(c, 0), "type")), "Ready");
    assert_string_equal(json_string_value(json_object_get(json_array_get(c, 0), "reason")),
                        "NodeStatusNeverUpdated");
    assert_string_equal(json_string_value(json_object_get(json_array_get(c, 0), "message")),
                        "Kubelet never posted node status.");
    json_decref(c);
    json_decref(node);
}

/* "key:effect key:effect ..." of a taints array. */
static void taint_list(const json_t *taints, char *buf, size_t n)
{
    buf[0] = 0;
    size_t i, len = 0;
    json_t *t;
    json_array_foreach(taints, i, t) {
        len += (size_t)snprintf(buf + len, n - len, "%s%s:%s", len ? " " : "",
                                json_string_value(json_object_get(t, "key")),
                                json_string_value(json_object_get(t, "effect")));
    }
}

static void set_ready(json_t *node, const char *status)
{
    json_object_set_new((json_t *)nlc_condition(node, "Ready"), "status", json_string(status));
}

static void test_wanted_taints(void **state)
{
    (void)state;
    char buf[1024];
    int changed;
    json_t *node = healthy_node();
    /* Healthy: none, no change. */
    json_t *t = nlc_wanted_taints(node, NOW_S, &changed);
    assert_non_null(t);
    assert_int_equal(json_array_size(t), 0);
    assert_false(changed);
    json_decref(t);

    /* Unknown: unreachable NoExecute + NoSchedule, with timeAdded. */
    set_ready(node, "Unknown");
    t = nlc_wanted_taints(node, NOW_S, &changed);
    assert_true(changed);
    taint_list(t, buf, sizeof buf);
    assert_string_equal(buf, "node.kubernetes.io/unreachable:NoExecute "
                             "node.kubernetes.io/unreachable:NoSchedule");
    assert_string_equal(json_string_value(json_object_get(json_array_get(t, 0), "timeAdded")),
                        NOW_S);
    /* Applied, with a user's taint beside them: stable, timeAdded kept. */
    json_array_append_new(t, parse("{\"key\":\"team\",\"value\":\"a\",\"effect\":\"NoSchedule\"}"));
    json_object_set_new(json_object_get(node, "spec"), "taints", t);
    t = nlc_wanted_taints(node, "2023-11-14T23:00:00Z", &changed);
    assert_false(changed);
    assert_string_equal(json_string_value(json_object_get(json_array_get(t, 0), "timeAdded")),
                        NOW_S);
    json_decref(t);

    /* False: not-ready replaces unreachable; the user's taint stays. */
    set_ready(node, "False");
    t = nlc_wanted_taints(node, NOW_S, &changed);
    assert_true(changed);
    taint_list(t, buf, sizeof buf);
    assert_string_equal(buf, "team:NoSchedule node.kubernetes.io/not-ready:NoExecute "
                             "node.kubernetes.io/not-ready:NoSchedule");
    json_decref(t);

    /* Back to True: only the user's taint. */
    set_ready(node, "True");
    t = nlc_wanted_taints(node, NOW_S, &changed);
    assert_true(changed);
    taint_list(t, buf, sizeof buf);
    assert_string_equal(buf, "team:NoSchedule");
    json_decref(t);

    /* Pressure conditions and spec.unschedulable: their NoSchedule taints. */
    json_object_set_new((json_t *)nlc_condition(node, "MemoryPressure"), "status",
                        json_string("True"));
    json_object_set_new(json_object_get(node, "spec"), "unschedulable", json_true());
    json_object_del(json_object_get(node, "spec"), "taints");
    t = nlc_wanted_taints(node, NOW_S, &changed);
    assert_true(changed);
    taint_list(t, buf, sizeof buf);
    assert_string_equal(buf, "node.kubernetes.io/memory-pressure:NoSchedule "
                             "node.kubernetes.io/unschedulable:NoSchedule");
    json_decref(t);
    json_decref(node);
}

static void test_time(void **state)
{
    (void)state;
    char buf[NLC_TIME_MAX];
    nlc_time(buf, sizeof buf, NOW);
    assert_string_equal(buf, NOW_S);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tolerates),     cmocka_unit_test(test_eviction_time),
        cmocka_unit_test(test_stale),         cmocka_unit_test(test_unknown_conditions),
        cmocka_unit_test(test_wanted_taints), cmocka_unit_test(test_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
