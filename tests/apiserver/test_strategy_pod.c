/*
 * test_strategy_pod.c -- what the pod strategy (src/apiserver/strategy_pod.c)
 * sets at create: status.qosClass as Kubernetes' ComputePodQOS gives it for
 * the same spec (pkg/apis/core/helper/qos), including init containers, sums
 * over containers and pod-level resources.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "apiserver/strategy.h"

/* The qosClass a create of a pod with this spec (JSON) records. */
static void expect_qos(const char *spec, const char *want)
{
    json_error_t err;
    json_t *pod =
        json_pack("{s:{s:s}, s:o}", "metadata", "name", "p", "spec", json_loads(spec, 0, &err));
    assert_non_null(pod);
    api_strategy_pod.prepare_create(pod);
    const char *got =
        json_string_value(json_object_get(json_object_get(pod, "status"), "qosClass"));
    if (!got || strcmp(got, want)) fail_msg("%s: got %s, want %s", spec, got, want);
    json_decref(pod);
}

static void test_qos_best_effort(void **state)
{
    (void)state;
    expect_qos("{\"containers\":[{\"name\":\"a\",\"image\":\"x\"}]}", "BestEffort");
    /* Zero quantities and other resources do not count. */
    expect_qos("{\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"cpu\":\"0\","
               "\"nvidia.com/gpu\":\"1\"}}}]}",
               "BestEffort");
}

static void test_qos_guaranteed(void **state)
{
    (void)state;
    /* Limits only: requests default to them. */
    expect_qos("{\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"cpu\":\"500m\","
               "\"memory\":\"64Mi\"}}}]}",
               "Guaranteed");
    /* Equal in other spellings (0.5 == 500m, 64Mi == 67108864). */
    expect_qos("{\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"cpu\":\"0.5\","
               "\"memory\":\"64Mi\"},\"requests\":{\"cpu\":\"500m\",\"memory\":\"67108864\"}}}],"
               "\"initContainers\":[{\"name\":\"i\",\"resources\":{\"limits\":{\"cpu\":\"1\","
               "\"memory\":\"1Gi\"}}}]}",
               "Guaranteed");
    /* Pod-level resources decide when they name cpu or memory. */
    expect_qos("{\"resources\":{\"limits\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}},"
               "\"containers\":[{\"name\":\"a\"}]}",
               "Guaranteed");
}

static void test_qos_burstable(void **state)
{
    (void)state;
    expect_qos("{\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}",
               "Burstable");
    /* One container without limits makes the pod Burstable... */
    expect_qos("{\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"cpu\":\"1\","
               "\"memory\":\"1Gi\"}}},{\"name\":\"b\"}]}",
               "Burstable");
    /* ...so does an init container limiting memory only... */
    expect_qos("{\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"cpu\":\"1\","
               "\"memory\":\"1Gi\"}}}],\"initContainers\":[{\"name\":\"i\",\"resources\":{"
               "\"limits\":{\"memory\":\"1Gi\"}}}]}",
               "Burstable");
    /* ...and a request below its limit. */
    expect_qos("{\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"cpu\":\"1\","
               "\"memory\":\"1Gi\"},\"requests\":{\"cpu\":\"100m\"}}}]}",
               "Burstable");
    expect_qos("{\"resources\":{\"requests\":{\"memory\":\"1Gi\"}},"
               "\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"cpu\":\"1\","
               "\"memory\":\"1Gi\"}}}]}",
               "Burstable");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qos_best_effort),
        cmocka_unit_test(test_qos_guaranteed),
        cmocka_unit_test(test_qos_burstable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
