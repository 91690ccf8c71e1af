/*
 * test_disruption.c -- the disruption controller's computation
 * (src/controllers/disruption_int.h) on plain objects: expected, desired and
 * healthy counts for minAvailable (integer and percentage) and
 * maxUnavailable, Kubernetes' rounding, unready and deleting pods,
 * disruptedPods kept, dropped when the pod goes or after two minutes, a
 * missing controller failing safe, and the status with its condition.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "controllers/disruption_int.h"
#include "lib/err.h"

#define NOW 1767225600 /* 2026-01-01T00:00:00Z */

/* A pod of ReplicaSet "rs" (uid u-rs): ready or not, deleting or not. */
static json_t *pod(const char *name, int ready, int deleting, const char *owner_uid)
{
    json_t *p = json_pack("{s:{s:s, s:s}, s:{s:[{s:s, s:s}]}}", "metadata", "name", name,
                          "namespace", "ns", "status", "conditions", "type", "Ready", "status",
                          ready ? "True" : "False");
    json_t *meta = json_object_get(p, "metadata");
    if (deleting) json_object_set_new(meta, "deletionTimestamp", json_string("2026-01-01T00:00:00Z"));
    if (owner_uid)
        json_object_set_new(meta, "ownerReferences",
                            json_pack("[{s:s, s:s, s:s, s:s, s:b}]", "apiVersion", "apps/v1",
                                      "kind", "ReplicaSet", "name", "rs", "uid", owner_uid,
                                      "controller", 1));
    return p;
}

static int calls;
static int scale5(void *arg, const char *ns, const char *kind, const char *name, const char *uid,
                  int64_t *out)
{
    (void)arg;
    (void)ns;
    (void)kind;
    (void)name;
    calls++;
    if (strcmp(uid, "u-rs")) return KP_ENOTFOUND;
    *out = 5;
    return 0;
}

static json_t *budget(const char *spec_json, const char *status_json)
{
    json_t *b = json_pack("{s:{s:s, s:s, s:i}}", "metadata", "name", "b", "namespace", "ns",
                          "generation", 3);
    json_object_set_new(b, "spec", json_loads(spec_json, 0, NULL));
    if (status_json) json_object_set_new(b, "status", json_loads(status_json, 0, NULL));
    return b;
}

static void free_pods(json_t **pods, size_t n)
{
    for (size_t i = 0; i < n; i++)
        json_decref(pods[i]);
}

static void test_min_available_int(void **state)
{
    (void)state;
    json_t *pods[] = {pod("a", 1, 0, "u-rs"), pod("b", 1, 0, "u-rs"), pod("c", 0, 0, "u-rs"),
                      pod("d", 1, 1, "u-rs")};
    json_t *b = budget("{\"minAvailable\":1}", NULL);
    dis_result_t r;
    calls = 0;
    assert_int_equal(dis_compute(b, pods, 4, scale5, NULL, NOW, &r), 0);
    assert_int_equal(calls, 0); /* an integer minAvailable counts the pods themselves */
    assert_int_equal(r.expected, 4);
    assert_int_equal(r.desired, 1);
    assert_int_equal(r.healthy, 2); /* c unready, d deleting */
    assert_int_equal(r.allowed, 1);
    json_t *st = dis_status(b, &r, 0, "2026-01-01T00:00:00Z");
    assert_int_equal(json_integer_value(json_object_get(st, "disruptionsAllowed")), 1);
    assert_int_equal(json_integer_value(json_object_get(st, "observedGeneration")), 3);
    json_t *c = json_array_get(json_object_get(st, "conditions"), 0);
    assert_string_equal(json_string_value(json_object_get(c, "reason")), "SufficientPods");
    assert_string_equal(json_string_value(json_object_get(c, "status")), "True");
    json_decref(st);
    dis_result_clear(&r);
    json_decref(b);
    free_pods(pods, 4);
}

static void test_percentages(void **state)
{
    (void)state;
    json_t *pods[] = {pod("a", 1, 0, "u-rs"), pod("b", 1, 0, "u-rs"), pod("c", 1, 0, "u-rs")};
    dis_result_t r;
    /* maxUnavailable 30% of 5 replicas: 2 (rounded up), desired 3. */
    json_t *b = budget("{\"maxUnavailable\":\"30%\"}", NULL);
    calls = 0;
    assert_int_equal(dis_compute(b, pods, 3, scale5, NULL, NOW, &r), 0);
    assert_int_equal(calls, 1); /* one controller, asked once */
    assert_int_equal(r.expected, 5);
    assert_int_equal(r.desired, 3);
    assert_int_equal(r.healthy, 3);
    assert_int_equal(r.allowed, 0);
    dis_result_clear(&r);
    json_decref(b);
    /* minAvailable 50% of 5: 3 (rounded up). */
    b = budget("{\"minAvailable\":\"50%\"}", NULL);
    assert_int_equal(dis_compute(b, pods, 3, scale5, NULL, NOW, &r), 0);
    assert_int_equal(r.desired, 3);
    assert_int_equal(r.allowed, 0);
    dis_result_clear(&r);
    json_decref(b);
    /* maxUnavailable 100%: desired 0, every healthy pod may go. */
    b = budget("{\"maxUnavailable\":\"100%\"}", NULL);
    assert_int_equal(dis_compute(b, pods, 3, scale5, NULL, NOW, &r), 0);
    assert_int_equal(r.desired, 0);
    assert_int_equal(r.allowed, 3);
    dis_result_clear(&r);
    json_decref(b);
    free_pods(pods, 3);
}

static void test_disrupted_pods(void **state)
{
    (void)state;
    json_t *pods[] = {pod("a", 1, 0, "u-rs"), pod("b", 1, 0, "u-rs"), pod("c", 1, 1, "u-rs")};
    /* a evicted a minute ago: not healthy; b's record is three minutes old:
     * dropped; c is being deleted: dropped; gone is gone: dropped. */
    json_t *b = budget("{\"minAvailable\":1}",
                       "{\"disruptedPods\":{\"a\":\"2025-12-31T23:59:00Z\","
                       "\"b\":\"2025-12-31T23:57:00Z\",\"c\":\"2025-12-31T23:59:30Z\","
                       "\"gone\":\"2025-12-31T23:59:30Z\"}}");
    dis_result_t r;
    assert_int_equal(dis_compute(b, pods, 3, scale5, NULL, NOW, &r), 0);
    assert_int_equal(json_object_size(r.disrupted), 1);
    assert_non_null(json_object_get(r.disrupted, "a"));
    assert_int_equal(r.healthy, 1); /* b */
    assert_int_equal(r.allowed, 0);
    assert_int_equal(r.recheck, NOW - 60 + 120); /* when a's record expires */
    json_t *st = dis_status(b, &r, 0, "2026-01-01T00:00:00Z");
    assert_non_null(json_object_get(json_object_get(st, "disruptedPods"), "a"));
    json_t *c = json_array_get(json_object_get(st, "conditions"), 0);
    assert_string_equal(json_string_value(json_object_get(c, "reason")), "InsufficientPods");
    json_decref(st);
    dis_result_clear(&r);
    json_decref(b);
    free_pods(pods, 3);
}

static void test_fail_safe(void **state)
{
    (void)state;
    json_t *pods[] = {pod("a", 1, 0, "u-other")};
    json_t *b = budget("{\"maxUnavailable\":1}",
                       "{\"conditions\":[{\"type\":\"DisruptionAllowed\",\"status\":\"False\","
                       "\"lastTransitionTime\":\"2025-01-01T00:00:00Z\"}]}");
    dis_result_t r;
    assert_int_equal(dis_compute(b, pods, 1, scale5, NULL, NOW, &r), KP_ENOTFOUND);
    assert_non_null(strstr(r.error, "found no controllers for pod \"a\""));
    json_t *st = dis_status(b, &r, 1, "2026-01-01T00:00:00Z");
    assert_int_equal(json_integer_value(json_object_get(st, "disruptionsAllowed")), 0);
    json_t *c = json_array_get(json_object_get(st, "conditions"), 0);
    assert_string_equal(json_string_value(json_object_get(c, "reason")), "SyncFailed");
    /* Still False: the transition time stays. */
    assert_string_equal(json_string_value(json_object_get(c, "lastTransitionTime")),
                        "2025-01-01T00:00:00Z");
    json_decref(st);
    dis_result_clear(&r);
    json_decref(b);
    /* Pods without a controller are skipped, not fatal. */
    json_t *lone[] = {pod("x", 1, 0, NULL)};
    b = budget("{\"maxUnavailable\":1}", NULL);
    assert_int_equal(dis_compute(b, lone, 1, scale5, NULL, NOW, &r), 0);
    assert_int_equal(r.unmanaged, 1);
    assert_int_equal(r.expected, 0);
    assert_int_equal(r.allowed, 0); /* nothing expected: nothing may go */
    dis_result_clear(&r);
    json_decref(b);
    free_pods(pods, 1);
    free_pods(lone, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_min_available_int),
        cmocka_unit_test(test_percentages),
        cmocka_unit_test(test_disrupted_pods),
        cmocka_unit_test(test_fail_safe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
