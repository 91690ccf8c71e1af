/*
 * test_strategy_pod.c -- the pod strategy's delete and admission hooks
 * (src/apiserver/strategy_pod.c): CheckGracefulDelete as Kubernetes'
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

#include "apiserver/apiserver_int.h"
#include "apiserver/strategy.h"

static const api_strategy_t *const st = &api_strategy_pod;

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
    int mark = st->graceful(p, requested, g);
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
    st->admit(&c, p, NULL);
    assert_int_equal(toleration_seconds(p, "node.kubernetes.io/not-ready"), 300);
    assert_int_equal(toleration_seconds(p, "node.kubernetes.io/unreachable"), 300);
    json_decref(p);
    /* The server's flags. */
    srv->cfg.toleration_seconds_set = 1;
    srv->cfg.not_ready_toleration_s = 20;
    srv->cfg.unreachable_toleration_s = 40;
    p = pod(NULL, NULL, -1);
    st->admit(&c, p, NULL);
    assert_int_equal(toleration_seconds(p, "node.kubernetes.io/not-ready"), 20);
    assert_int_equal(toleration_seconds(p, "node.kubernetes.io/unreachable"), 40);
    /* An update of a pod that has them adds nothing. */
    json_t *old = json_deep_copy(p);
    st->admit(&c, p, old);
    assert_true(json_equal(p, old));
    json_decref(old);
    json_decref(p);
    free(srv);
}

static void test_subresources(void **state)
{
    (void)state;
    assert_true(st->delete_returns_object);
    assert_false(st->default_orphan);
    assert_null(st->finalizing);
    const api_sub_t *b = api_strategy_sub(st, "binding");
    const api_sub_t *l = api_strategy_sub(st, "log");
    const api_sub_t *e = api_strategy_sub(st, "eviction");
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
    assert_null(api_strategy_sub(st, "finalize"));
    assert_null(api_strategy_sub(st, "scale"));
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
        cmocka_unit_test(test_graceful),
        cmocka_unit_test(test_admit),
        cmocka_unit_test(test_subresources),
        cmocka_unit_test(test_job),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
