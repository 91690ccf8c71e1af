/*
 * test_strategy_pod.c -- what the pod strategy (src/apiserver/strategy_pod.c)
 * sets at create: status.qosClass as Kubernetes' ComputePodQOS gives it for
 * the same spec (pkg/apis/core/helper/qos), including init containers, sums
 * over containers and pod-level resources; the sysctl names a pod spec
 * may carry (IsValidSysctlName); CheckGracefulDelete as Kubernetes'
 * pkg/registry/core/pod/strategy.go decides it (with kplane's 30 s when the
 * pod has no terminationGracePeriodSeconds), DefaultTolerationSeconds with
 * the server's flags, the pod's own subresources; and the Job strategy's
 * default deletion propagation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "apiserver/http/http.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/kinds/strategy_int.h"

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

/* ---- the delete and admission hooks, the subresource table ---- */

static json_t *pod(const char *node, const char *phase, long long tgps)
{
    json_t *p = json_pack("{s:{}, s:{}}", "spec", "status");
    assert_non_null(p);
    json_t *spec = json_object_get(p, "spec");
    if (node) json_object_set_new(spec, "nodeName", json_string(node));
    if (tgps >= 0) json_object_set_new(spec, "terminationGracePeriodSeconds", json_integer(tgps));
    if (phase) json_object_set_new(json_object_get(p, "status"), "phase", json_string(phase));
    return p;
}

/* graceful() of a pod made by pod(), with `requested` (-1: none); *grace
 * into *g. */
static int graceful(const char *node, const char *phase, long long tgps, long long requested,
                    long long *g)
{
    json_t *p = pod(node, phase, tgps);
    *g = -7;
    int mark = api_strategy_pod.graceful(p, requested, g);
    json_decref(p);
    return mark;
}

static void test_graceful(void **state)
{
    (void)state;
    long long g;
    /* A bound, running pod waits for its node: the pod's period... */
    assert_int_equal(graceful("n1", "Running", 45, -1, &g), 1);
    assert_int_equal(g, 45);
    /* ...or 30 when it has none... */
    assert_int_equal(graceful("n1", "Running", -1, -1, &g), 1);
    assert_int_equal(g, 30);
    /* ...or the request's. */
    assert_int_equal(graceful("n1", "Running", 45, 5, &g), 1);
    assert_int_equal(g, 5);
    /* A grace period of 0, asked or the pod's: at once. */
    assert_int_equal(graceful("n1", "Running", 45, 0, &g), 0);
    assert_int_equal(graceful("n1", "Running", 0, -1, &g), 0);
    /* Unbound: nothing to stop. */
    assert_int_equal(graceful(NULL, "Pending", 45, -1, &g), 0);
    assert_int_equal(graceful("", "Pending", 45, -1, &g), 0);
    /* Ended: nothing to stop either. */
    assert_int_equal(graceful("n1", "Succeeded", 45, -1, &g), 0);
    assert_int_equal(graceful("n1", "Failed", 45, 10, &g), 0);
    /* Pending on a node (pulling images): waits. */
    assert_int_equal(graceful("n1", "Pending", 45, -1, &g), 1);
}

static long long toleration_seconds(const json_t *p, const char *key)
{
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(json_object_get(p, "spec"), "tolerations"), i, t) {
        if (!strcmp(json_string_value(json_object_get(t, "key")), key))
            return json_integer_value(json_object_get(t, "tolerationSeconds"));
    }
    return -1;
}

static void test_admit(void **state)
{
    (void)state;
    struct apiserver *srv = calloc(1, sizeof *srv);
    assert_non_null(srv);
    api_ctx_t c = {.srv = srv};
    /* Flags not given: 300 s each. */
    json_t *p = pod(NULL, NULL, -1);
    api_strategy_pod.admit(&c, p, NULL);
    assert_int_equal(toleration_seconds(p, "node.kubernetes.io/not-ready"), 300);
    assert_int_equal(toleration_seconds(p, "node.kubernetes.io/unreachable"), 300);
    json_decref(p);
    /* The server's flags. */
    srv->cfg.toleration_seconds_set = 1;
    srv->cfg.not_ready_toleration_s = 20;
    srv->cfg.unreachable_toleration_s = 40;
    p = pod(NULL, NULL, -1);
    api_strategy_pod.admit(&c, p, NULL);
    assert_int_equal(toleration_seconds(p, "node.kubernetes.io/not-ready"), 20);
    assert_int_equal(toleration_seconds(p, "node.kubernetes.io/unreachable"), 40);
    /* An update of a pod that has them adds nothing. */
    json_t *old = json_deep_copy(p);
    api_strategy_pod.admit(&c, p, old);
    assert_true(json_equal(p, old));
    json_decref(old);
    json_decref(p);
    free(srv);
}

static void test_subresources(void **state)
{
    (void)state;
    assert_true(api_strategy_pod.delete_returns_object);
    assert_false(api_strategy_pod.default_orphan);
    assert_null(api_strategy_pod.finalizing);
    const api_sub_t *b = api_strategy_sub(&api_strategy_pod, "binding");
    const api_sub_t *l = api_strategy_sub(&api_strategy_pod, "log");
    const api_sub_t *e = api_strategy_sub(&api_strategy_pod, "eviction");
    assert_non_null(b);
    assert_non_null(l);
    assert_non_null(e);
    assert_ptr_equal(b->handler, api_pod_binding);
    assert_ptr_equal(l->handler, api_pod_log);
    assert_ptr_equal(e->handler, api_pod_eviction);
    /* What discovery lists, as kube-apiserver 1.32 does. */
    assert_string_equal(b->kind, "Binding");
    assert_null(b->group);
    assert_string_equal(b->verbs[0], "create");
    assert_null(l->kind); /* the parent's: Pod */
    assert_string_equal(l->verbs[0], "get");
    assert_string_equal(e->group, "policy");
    assert_string_equal(e->version, "v1");
    assert_string_equal(e->kind, "Eviction");
    assert_null(api_strategy_sub(&api_strategy_pod, "finalize"));
    assert_null(api_strategy_sub(&api_strategy_pod, "scale"));
    assert_null(api_strategy_sub(&api_strategy_deployment, "log"));
}

static void test_job(void **state)
{
    (void)state;
    /* batch/v1 Jobs orphan their pods unless told otherwise (Kubernetes
     * keeps it for compatibility); other kinds delete in the background. */
    assert_true(api_strategy_job.default_orphan);
    assert_false(api_strategy_replicaset.default_orphan);
    assert_false(api_strategy_deployment.default_orphan);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qos_best_effort),
        cmocka_unit_test(test_qos_guaranteed),
        cmocka_unit_test(test_qos_burstable),
        cmocka_unit_test(test_sysctls),
        cmocka_unit_test(test_graceful),
        cmocka_unit_test(test_admit),
        cmocka_unit_test(test_subresources),
        cmocka_unit_test(test_job),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
