/*
 * test_priority.c -- Kubernetes' Priority admission
 * (src/apiserver/kinds/admission_priority.c) against a real kplane server.
 *
 * What it proves:
 *  - A pod without a class gets priority 0 and PreemptLowerPriority while no
 *    class is the global default; one naming a class gets its value and
 *    preemptionPolicy (the system classes exist from the start).
 *  - An unknown class, a spec.priority or preemptionPolicy differing from the
 *    computed one: 403 Forbidden in Kubernetes' words; an equal one passes.
 *  - At most one globalDefault class: a second one, or marking another, is
 *    403; the default itself may be updated.
 *  - With a default class, a pod without a class gets its name, value and
 *    preemptionPolicy; a PUT leaving priority out keeps it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "kpserver.h"
#include "lib/err.h"

static const kc_resource_t pcs = {"scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass",
                                  0};

typedef struct fx {
    kpserver_t s;
    kc_config_t cfg;
    json_t *storage;
    kc_client_t *c;
} fx_t;

static int fx_setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    if (!f) return -1;
    static const char *const flags[] = {"--nodes", "0", "--no-controllers", "--no-scheduler",
                                        NULL};
    kpserver_start(&f->s, flags);
    if (kpserver_client(&f->s, &f->cfg, &f->storage, &f->c)) return -1;
    *state = f;
    return 0;
}

static int fx_teardown(void **state)
{
    fx_t *f = *state;
    kc_client_free(f->c);
    json_decref(f->storage);
    kpserver_stop(&f->s);
    free(f);
    return 0;
}

/* The HTTP code of a request that returned rc (`ok` when 0), and the
 * Status message into why (n bytes); consumes status. */
static int outcome(int rc, int ok, json_t *status, char *why, size_t n)
{
    const char *m = json_string_value(json_object_get(status, "message"));
    int code = rc ? (int)json_integer_value(json_object_get(status, "code")) : ok;
    snprintf(why, n, "%s", m ? m : "");
    json_decref(status);
    return code;
}

/* Create pod `name` with `spec_extra` (JSON members of spec, "" for none).
 * Returns the HTTP code; *out the created pod (200/201) or NULL; *msg the
 * Status message (static buffer) on an error. */
static int make_pod(fx_t *f, const char *name, const char *spec_extra, json_t **out,
                    const char **msg)
{
    static char text[4096], why[1024];
    snprintf(text, sizeof text,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\"},"
             "\"spec\":{%s%s\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}",
             name, spec_extra, *spec_extra ? "," : "");
    json_t *pod = json_loads(text, 0, NULL);
    assert_non_null(pod);
    json_t *status = NULL;
    *out = NULL;
    int rc = kc_create(f->c, &kc_pods, "default", pod, out, &status);
    json_decref(pod);
    *msg = why;
    return outcome(rc, 201, status, why, sizeof why);
}

/* Create (or, with update, PUT) a PriorityClass; the HTTP code, *msg as above. */
static int put_class(fx_t *f, const char *text, int update, const char **msg)
{
    static char why[1024];
    json_t *pc = json_loads(text, 0, NULL);
    assert_non_null(pc);
    json_t *status = NULL;
    int rc = update ? kc_update(f->c, &pcs, NULL, pc, NULL, NULL, &status)
                    : kc_create(f->c, &pcs, NULL, pc, NULL, &status);
    json_decref(pc);
    *msg = why;
    return outcome(rc, 200, status, why, sizeof why);
}

static const char *spec_str(const json_t *pod, const char *k)
{
    const char *s = json_string_value(json_object_get(json_object_get(pod, "spec"), k));
    return s ? s : "";
}

static long long spec_int(const json_t *pod, const char *k)
{
    const json_t *v = json_object_get(json_object_get(pod, "spec"), k);
    assert_true(json_is_integer(v));
    return (long long)json_integer_value(v);
}

static void test_pods_and_classes(void **state)
{
    fx_t *f = *state;
    json_t *pod;
    const char *msg;

    /* No default class yet: 0 and PreemptLowerPriority, no class name. */
    assert_int_equal(make_pod(f, "plain", "", &pod, &msg), 201);
    assert_int_equal(spec_int(pod, "priority"), 0);
    assert_string_equal(spec_str(pod, "preemptionPolicy"), "PreemptLowerPriority");
    assert_string_equal(spec_str(pod, "priorityClassName"), "");
    json_decref(pod);

    /* A system class. */
    assert_int_equal(make_pod(f, "crit", "\"priorityClassName\":\"system-node-critical\"", &pod,
                              &msg), 201);
    assert_int_equal(spec_int(pod, "priority"), 2000001000LL);
    assert_string_equal(spec_str(pod, "preemptionPolicy"), "PreemptLowerPriority");
    json_decref(pod);

    /* Unknown class; a priority that disagrees; one that agrees. */
    assert_int_equal(make_pod(f, "lost", "\"priorityClassName\":\"nope\"", &pod, &msg), 403);
    assert_null(pod);
    assert_string_equal(msg, "pods \"lost\" is forbidden: no PriorityClass with name nope was "
                             "found");
    assert_int_equal(make_pod(f, "liar",
                              "\"priorityClassName\":\"system-cluster-critical\","
                              "\"priority\":5",
                              &pod, &msg), 403);
    assert_string_equal(msg, "pods \"liar\" is forbidden: the integer value of priority (5) "
                             "must not be provided in pod spec; priority admission controller "
                             "computed 2000000000 from the given PriorityClass name");
    assert_int_equal(make_pod(f, "honest",
                              "\"priorityClassName\":\"system-cluster-critical\","
                              "\"priority\":2000000000",
                              &pod, &msg), 201);
    json_decref(pod);
    assert_int_equal(make_pod(f, "zero", "\"priority\":7", &pod, &msg), 403);

    /* One globalDefault class at most. */
    assert_int_equal(put_class(f, "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":"
                                  "\"PriorityClass\",\"metadata\":{\"name\":\"high\"},"
                                  "\"value\":1000,\"globalDefault\":true,"
                                  "\"preemptionPolicy\":\"Never\"}",
                               0, &msg), 200);
    assert_int_equal(put_class(f, "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":"
                                  "\"PriorityClass\",\"metadata\":{\"name\":\"high2\"},"
                                  "\"value\":2000,\"globalDefault\":true}",
                               0, &msg), 403);
    assert_string_equal(msg, "priorityclasses.scheduling.k8s.io \"high2\" is forbidden: "
                             "PriorityClass high is already marked as default. Only one "
                             "default can exist");
    assert_int_equal(put_class(f, "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":"
                                  "\"PriorityClass\",\"metadata\":{\"name\":\"low\"},"
                                  "\"value\":10}",
                               0, &msg), 200);
    assert_int_equal(put_class(f, "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":"
                                  "\"PriorityClass\",\"metadata\":{\"name\":\"low\"},"
                                  "\"value\":10,\"globalDefault\":true}",
                               1, &msg), 403);
    assert_int_equal(put_class(f, "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":"
                                  "\"PriorityClass\",\"metadata\":{\"name\":\"high\","
                                  "\"labels\":{\"a\":\"b\"}},\"value\":1000,"
                                  "\"globalDefault\":true,\"preemptionPolicy\":\"Never\"}",
                               1, &msg), 200);

    /* The default class now applies to a pod without one. */
    assert_int_equal(make_pod(f, "defaulted", "", &pod, &msg), 201);
    assert_string_equal(spec_str(pod, "priorityClassName"), "high");
    assert_int_equal(spec_int(pod, "priority"), 1000);
    assert_string_equal(spec_str(pod, "preemptionPolicy"), "Never");
    /* A PUT that leaves priority and preemptionPolicy out keeps them. */
    json_t *spec = json_object_get(pod, "spec");
    json_object_del(spec, "priority");
    json_object_del(spec, "preemptionPolicy");
    json_object_set_new(json_object_get(pod, "metadata"), "labels", json_pack("{s:s}", "x", "y"));
    json_t *updated = NULL, *status = NULL;
    int rc = kc_update(f->c, &kc_pods, "default", pod, NULL, &updated, &status);
    if (rc) fprintf(stderr, "update: %s\n", json_string_value(json_object_get(status, "message")));
    assert_int_equal(rc, 0);
    json_decref(status);
    assert_int_equal(spec_int(updated, "priority"), 1000);
    assert_string_equal(spec_str(updated, "preemptionPolicy"), "Never");
    json_decref(updated);
    json_decref(pod);
    assert_int_equal(make_pod(f, "preempter", "\"preemptionPolicy\":\"PreemptLowerPriority\"",
                              &pod, &msg), 403);
    assert_string_equal(msg, "pods \"preempter\" is forbidden: the string value of "
                             "PreemptionPolicy (PreemptLowerPriority) must not be provided in "
                             "pod spec; priority admission controller computed Never from the "
                             "given PriorityClass name");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pods_and_classes, fx_setup, fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
