/*
 * test_schema.c -- src/apiserver/schema.c (the API's type facts) and
 * src/apiserver/fields.c (pruning and type checks by those facts).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "apiserver/schema/fields.h"
#include "apiserver/schema/schema.h"
#include "lib/err.h"

static json_t *js(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, 0, &e);
    if (!v) fail_msg("bad JSON in test: %s: %s", text, e.text);
    return v;
}

static int setup(void **state)
{
    api_schema_t *s;
    assert_int_equal(api_schema_load(&s), 0);
    *state = s;
    return 0;
}

static int teardown(void **state)
{
    api_schema_free(*state);
    return 0;
}

static void test_kinds(void **state)
{
    api_schema_t *s = *state;
    const char *name;
    assert_non_null(api_schema_kind(s, "apps", "v1", "Deployment", &name));
    assert_string_equal(name, "io.k8s.api.apps.v1.Deployment");
    assert_non_null(api_schema_kind(s, "", "v1", "Pod", &name));
    assert_string_equal(name, "io.k8s.api.core.v1.Pod");
    assert_non_null(api_schema_kind(s, "coordination.k8s.io", "v1", "Lease", NULL));
    assert_null(api_schema_kind(s, "apps", "v1", "Nothing", &name));
    assert_null(name);
    /* No descriptions were carried over (a field may be named "description"). */
    int parts = 0;
    for (const api_facts_part_t *p = api_openapi_facts; p->name; p++, parts++) {
        assert_null(strstr(p->json, "describes how to replace existing pods"));
        assert_null(strstr(p->json, "\"description\":\""));
    }
    assert_int_equal(parts, 4);
}

static void test_walk(void **state)
{
    api_schema_t *s = *state;
    const json_t *dep = api_schema_kind(s, "apps", "v1", "Deployment", NULL);
    const json_t *spec = api_schema_field(s, dep, "spec");
    assert_int_equal(api_schema_type(s, spec), API_SCHEMA_OBJECT);
    assert_int_equal(api_schema_type(s, api_schema_field(s, spec, "replicas")),
                     API_SCHEMA_INTEGER);
    const json_t *strategy = api_schema_field(s, spec, "strategy");
    assert_true(api_schema_retain_keys(strategy));
    const json_t *podspec = api_schema_field(s, api_schema_field(s, spec, "template"), "spec");
    const json_t *containers = api_schema_field(s, podspec, "containers");
    api_list_rules_t lr;
    api_schema_list_rules(containers, &lr);
    assert_string_equal(lr.merge_key, "name");
    assert_true(lr.merge);
    assert_false(lr.retain_keys);
    assert_string_equal(lr.list_type, "map");
    const json_t *container = api_schema_items(s, containers);
    assert_int_equal(api_schema_type(s, api_schema_field(s, container, "ports")),
                     API_SCHEMA_ARRAY);
    api_schema_list_rules(api_schema_field(s, podspec, "volumes"), &lr);
    assert_true(lr.merge && lr.retain_keys);
    api_schema_list_rules(api_schema_field(s, podspec, "tolerations"), &lr);
    assert_null(lr.merge_key);
    assert_false(lr.merge);
    /* labels: a map of strings */
    const json_t *meta = api_schema_field(s, dep, "metadata");
    const json_t *labels = api_schema_field(s, meta, "labels");
    assert_int_equal(api_schema_type(s, labels), API_SCHEMA_MAP);
    assert_int_equal(api_schema_type(s, api_schema_field(s, labels, "any-key")),
                     API_SCHEMA_STRING);
    /* intstr and unknown fields */
    const json_t *ru = api_schema_field(s, strategy, "rollingUpdate");
    assert_int_equal(api_schema_type(s, api_schema_field(s, ru, "maxSurge")),
                     API_SCHEMA_INT_OR_STRING);
    assert_null(api_schema_field(s, spec, "replicaz"));
}

static void test_prune(void **state)
{
    api_schema_t *s = *state;
    const json_t *dep = api_schema_kind(s, "apps", "v1", "Deployment", NULL);
    json_t *obj = js("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
                     "\"metadata\":{\"name\":\"x\",\"labels\":{\"a\":\"b\"},\"bogus\":1},"
                     "\"spec\":{\"replicaz\":3,\"replicas\":2,\"template\":{\"spec\":{"
                     "\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"imagePullPolicyy\":\"x\","
                     "\"ports\":[{\"containerPort\":80}]}]}},"
                     "\"strategy\":{\"rollingUpdate\":{\"maxSurge\":\"25%\","
                     "\"maxUnavailable\":1}}}}");
    json_t *unknown = json_array();
    char err[256];
    assert_int_equal(api_fields_prune(s, dep, "Deployment", obj, unknown, err, sizeof err), 0);
    json_t *want_unknown = js("[\"metadata.bogus\",\"spec.replicaz\","
                              "\"spec.template.spec.containers[0].imagePullPolicyy\"]");
    /* order follows object iteration: compare as sets */
    assert_int_equal(json_array_size(unknown), 3);
    for (size_t i = 0; i < 3; i++) {
        int found = 0;
        for (size_t j = 0; j < 3; j++)
            found |= json_equal(json_array_get(unknown, i), json_array_get(want_unknown, j));
        assert_true(found);
    }
    assert_null(json_object_get(json_object_get(obj, "spec"), "replicaz"));
    assert_non_null(json_object_get(json_object_get(obj, "spec"), "replicas"));
    json_decref(want_unknown);
    json_decref(unknown);
    json_decref(obj);
}

/* A CRD schema whose root keeps unknown fields (x-kubernetes-preserve-
 * unknown-fields): they stay and are not reported, but a declared object
 * that does not keep them still has its unknown fields reported. */
static void test_preserve_root(void **state)
{
    api_schema_t *s = *state;
    json_t *node = js("{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true,"
                      "\"properties\":{\"spec\":{\"type\":\"object\",\"properties\":{"
                      "\"size\":{\"type\":\"integer\"},\"free\":{\"type\":\"object\","
                      "\"x-kubernetes-preserve-unknown-fields\":true}}}}}");
    json_t *obj = js("{\"extra\":{\"x\":1},\"spec\":{\"size\":1,\"bogus\":2,"
                     "\"free\":{\"any\":3}}}");
    json_t *unknown = json_array();
    char err[256];
    assert_int_equal(api_fields_prune(s, node, "Widget", obj, unknown, err, sizeof err), 0);
    assert_int_equal(json_array_size(unknown), 1);
    assert_string_equal(json_string_value(json_array_get(unknown, 0)), "spec.bogus");
    json_t *want = js("{\"extra\":{\"x\":1},\"spec\":{\"size\":1,\"free\":{\"any\":3}}}");
    assert_true(json_equal(obj, want));
    json_decref(want);
    json_decref(unknown);
    json_decref(obj);
    json_decref(node);
}

static void test_types(void **state)
{
    api_schema_t *s = *state;
    const json_t *dep = api_schema_kind(s, "apps", "v1", "Deployment", NULL);
    char err[256];
    json_t *obj = js("{\"spec\":{\"replicas\":\"three\"}}");
    assert_int_equal(api_fields_prune(s, dep, "Deployment", obj, NULL, err, sizeof err),
                     KP_EINVAL);
    assert_string_equal(err, "json: cannot unmarshal string into Go struct field "
                             "DeploymentSpec.spec.replicas of type int32");
    json_decref(obj);
    obj = js("{\"spec\":\"x\"}");
    assert_int_equal(api_fields_prune(s, dep, "Deployment", obj, NULL, err, sizeof err),
                     KP_EINVAL);
    assert_string_equal(err, "json: cannot unmarshal string into Go struct field "
                             "Deployment.spec of type v1.DeploymentSpec");
    json_decref(obj);
    obj = js("{\"spec\":{\"template\":{\"spec\":{\"containers\":{}}}}}");
    assert_int_equal(api_fields_prune(s, dep, "Deployment", obj, NULL, err, sizeof err),
                     KP_EINVAL);
    assert_string_equal(err, "json: cannot unmarshal object into Go struct field "
                             "PodSpec.spec.template.spec.containers of type []v1.Container");
    json_decref(obj);
    /* null anywhere, 3.0 as an integer, int-or-string both ways */
    obj = js("{\"spec\":{\"replicas\":3.0,\"paused\":null,\"strategy\":{\"rollingUpdate\":"
             "{\"maxSurge\":1,\"maxUnavailable\":\"10%\"}}}}");
    assert_int_equal(api_fields_prune(s, dep, "Deployment", obj, NULL, err, sizeof err), 0);
    json_decref(obj);
    obj = js("{\"spec\":{\"replicas\":3.5}}");
    assert_int_equal(api_fields_prune(s, dep, "Deployment", obj, NULL, err, sizeof err),
                     KP_EINVAL);
    json_decref(obj);
}

/* Integer ranges by the facts' format, as Go decodes into int32 and int64
 * fields: a value out of range is a decode error quoting the number. */
static void expect_int(api_schema_t *s, const char *group, const char *kind, const char *text,
                       const char *want_err)
{
    const json_t *node = api_schema_kind(s, group, "v1", kind, NULL);
    assert_non_null(node);
    char err[256];
    json_t *obj = js(text);
    int rc = api_fields_prune(s, node, kind, obj, NULL, err, sizeof err);
    if (!want_err) {
        if (rc) fail_msg("%s: %s", text, err);
    } else {
        assert_int_equal(rc, KP_EINVAL);
        assert_string_equal(err, want_err);
    }
    json_decref(obj);
}

static void test_int_ranges(void **state)
{
    api_schema_t *s = *state;
    /* DeploymentSpec.replicas is int32 */
    expect_int(s, "apps", "Deployment", "{\"spec\":{\"replicas\":2147483647}}", NULL);
    expect_int(s, "apps", "Deployment", "{\"spec\":{\"replicas\":-2147483648}}", NULL);
    expect_int(s, "apps", "Deployment", "{\"spec\":{\"replicas\":4294967297}}",
               "json: cannot unmarshal number 4294967297 into Go struct field "
               "DeploymentSpec.spec.replicas of type int32");
    expect_int(s, "apps", "Deployment", "{\"spec\":{\"replicas\":2147483648}}",
               "json: cannot unmarshal number 2147483648 into Go struct field "
               "DeploymentSpec.spec.replicas of type int32");
    expect_int(s, "apps", "Deployment", "{\"spec\":{\"replicas\":-2147483649}}",
               "json: cannot unmarshal number -2147483649 into Go struct field "
               "DeploymentSpec.spec.replicas of type int32");
    /* a real out of range (and one no integer type holds) */
    expect_int(s, "apps", "Deployment", "{\"spec\":{\"replicas\":4294967296.0}}",
               "json: cannot unmarshal number 4294967296 into Go struct field "
               "DeploymentSpec.spec.replicas of type int32");
    expect_int(s, "apps", "Deployment", "{\"spec\":{\"replicas\":1e300}}",
               "json: cannot unmarshal number 1.0000000000000001e+300 into Go struct field "
               "DeploymentSpec.spec.replicas of type int32");
    /* deep in a template: containers[].ports[].containerPort is int32 */
    expect_int(s, "apps", "Deployment",
               "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\","
               "\"ports\":[{\"containerPort\":99999999999}]}]}}}}",
               "json: cannot unmarshal number 99999999999 into Go struct field "
               "ContainerPort.spec.template.spec.containers[0].ports[0].containerPort of type int32");
    /* int64 fields take what int32 ones refuse: PodSpec.activeDeadlineSeconds */
    expect_int(s, "", "Pod", "{\"spec\":{\"activeDeadlineSeconds\":4294967297}}", NULL);
    expect_int(s, "", "Pod", "{\"spec\":{\"activeDeadlineSeconds\":9223372036854775807}}", NULL);
    expect_int(s, "", "Pod", "{\"spec\":{\"activeDeadlineSeconds\":1e19}}",
               "json: cannot unmarshal number 1e+19 into Go struct field "
               "PodSpec.spec.activeDeadlineSeconds of type int64");
}

/* Against a base version: what equals base's at the same path is not
 * walked (a planted unknown field there survives: proof of the skip), and
 * everything that differs is checked as ever: unknown fields dropped and
 * reported, types enforced. */
static void test_prune_since(void **state)
{
    api_schema_t *s = *state;
    const json_t *dep = api_schema_kind(s, "apps", "v1", "Deployment", NULL);
    json_t *base = js("{\"metadata\":{\"name\":\"x\",\"labels\":{\"a\":\"b\",\"zz\":{\"q\":1}}},"
                      "\"spec\":{\"replicas\":2,\"template\":{\"spec\":{\"containers\":"
                      "[{\"name\":\"c\",\"image\":\"i\",\"planted\":1}]}}},"
                      "\"status\":{\"replicas\":1}}");
    json_t *obj = json_deep_copy(base);
    json_object_set_new(json_object_get(obj, "status"), "replicaz", json_integer(4));
    json_object_set_new(json_object_get(obj, "status"), "replicas", json_integer(2));
    json_t *unknown = json_array();
    char err[256];
    assert_int_equal(
        api_fields_prune_since(s, dep, "Deployment", obj, base, unknown, err, sizeof err), 0);
    assert_int_equal(json_array_size(unknown), 1);
    assert_string_equal(json_string_value(json_array_get(unknown, 0)), "status.replicaz");
    const json_t *c0 = json_array_get(json_object_get(json_object_get(json_object_get(
                           json_object_get(obj, "spec"), "template"), "spec"), "containers"), 0);
    assert_non_null(json_object_get(c0, "planted")); /* unchanged: not walked */
    json_decref(unknown);

    /* A changed container is walked: the planted field goes; a changed
     * value of the wrong type fails. */
    json_object_set_new((json_t *)c0, "image", json_string("j"));
    assert_int_equal(
        api_fields_prune_since(s, dep, "Deployment", obj, base, NULL, err, sizeof err), 0);
    assert_null(json_object_get(c0, "planted"));
    json_object_set_new(json_object_get(obj, "spec"), "replicas", json_string("three"));
    assert_int_equal(
        api_fields_prune_since(s, dep, "Deployment", obj, base, NULL, err, sizeof err),
        KP_EINVAL);
    json_decref(obj);
    json_decref(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_walk),
        cmocka_unit_test(test_prune),
        cmocka_unit_test(test_types),
        cmocka_unit_test(test_int_ranges),
        cmocka_unit_test(test_preserve_root),
        cmocka_unit_test(test_prune_since),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
