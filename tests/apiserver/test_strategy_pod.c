/*
 * test_strategy_pod.c -- what the pod strategy (src/apiserver/strategy_pod.c)
 * sets at create: status.qosClass as Kubernetes' ComputePodQOS gives it for
 * the same spec (pkg/apis/core/helper/qos), including init containers, sums
 * over containers and pod-level resources; and the sysctl names a pod spec
 * may carry (IsValidSysctlName).
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

/* The causes of validating a pod spec with these sysctls (a JSON array). */
static void expect_sysctls(const char *sysctls, const char *want)
{
    json_error_t err;
    json_t *spec = json_pack("{s:[{s:s, s:s}], s:{s:o}}", "containers", "name", "c", "image",
                             "busybox", "securityContext", "sysctls",
                             json_loads(sysctls, 0, &err));
    assert_non_null(spec);
    json_t *causes = json_array();
    api_pod_spec_validate(spec, "spec", causes);
    char got[4096] = "";
    size_t i;
    json_t *x;
    json_array_foreach(causes, i, x) {
        size_t n = strlen(got);
        snprintf(got + n, sizeof got - n, "%s: %s\n",
                 json_string_value(json_object_get(x, "field")) ?: "",
                 json_string_value(json_object_get(x, "message")) ?: "");
    }
    json_decref(causes);
    json_decref(spec);
    if (strcmp(got, want)) fail_msg("%s: got:\n%swant:\n%s", sysctls, got, want);
}

#define SYSCTL_RE "([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?"

static void test_sysctls(void **state)
{
    (void)state;
    expect_sysctls("[{\"name\":\"kernel.shm_rmid_forced\",\"value\":\"0\"},"
                   "{\"name\":\"net/ipv4/ip_local_port_range\",\"value\":\"1 2\"},"
                   "{\"name\":\"net.ipv4.conf.eth0/1.forwarding\",\"value\":\"1\"}]",
                   "");
    expect_sysctls("[{\"name\":\"foo-\",\"value\":\"1\"},{\"name\":\"a..b\"},"
                   "{\"name\":\"Kernel.x\"},{\"name\":\"_a\"},{\"name\":\"\"}]",
                   "spec.securityContext.sysctls[0].name: Invalid value: \"foo-\": must have at "
                   "most 253 characters and match regex " SYSCTL_RE "\n"
                   "spec.securityContext.sysctls[1].name: Invalid value: \"a..b\": must have at "
                   "most 253 characters and match regex " SYSCTL_RE "\n"
                   "spec.securityContext.sysctls[2].name: Invalid value: \"Kernel.x\": must have "
                   "at most 253 characters and match regex " SYSCTL_RE "\n"
                   "spec.securityContext.sysctls[3].name: Invalid value: \"_a\": must have at "
                   "most 253 characters and match regex " SYSCTL_RE "\n"
                   "spec.securityContext.sysctls[4].name: Required value\n");
    expect_sysctls("[{\"name\":\"kernel.msgmax\"},{\"name\":\"kernel.msgmax\"}]",
                   "spec.securityContext.sysctls[1].name: Duplicate value: \"kernel.msgmax\"\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qos_best_effort),
        cmocka_unit_test(test_qos_guaranteed),
        cmocka_unit_test(test_qos_burstable),
        cmocka_unit_test(test_sysctls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
