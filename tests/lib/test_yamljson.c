/*
 * test_yamljson.c -- src/lib/yamljson.c: YAML documents as JSON, with YAML
 * 1.1's scalar resolution as Kubernetes reads manifests.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "lib/yamljson.h"

static void expect(const char *yaml, const char *want_json)
{
    json_t *got;
    char err[256];
    int rc = yaml_to_json(yaml, strlen(yaml), 64, 10000, &got, err, sizeof err);
    if (rc) fail_msg("yaml_to_json(%s): %d %s", yaml, rc, err);
    json_t *want = json_loads(want_json, JSON_DECODE_ANY, NULL);
    assert_non_null(want);
    if (!json_equal(got, want)) {
        char *g = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
        print_error("yaml %s: got %s, want %s\n", yaml, g, want_json);
        free(g);
        json_decref(got);
        json_decref(want);
        fail();
    }
    json_decref(got);
    json_decref(want);
}

static void test_scalars(void **state)
{
    (void)state;
    expect("a: 1\nb: -2\nc: 1.5\nd: true\ne: no\nf: ~\ng: null\nh:\ni: text\n",
           "{\"a\":1,\"b\":-2,\"c\":1.5,\"d\":true,\"e\":false,\"f\":null,\"g\":null,"
           "\"h\":null,\"i\":\"text\"}");
    expect("a: \"1\"\nb: 'true'\nd: 1.2.3\ne: \"\"\n",
           "{\"a\":\"1\",\"b\":\"true\",\"d\":\"1.2.3\",\"e\":\"\"}");
    expect("cron: \"* * * * */5\"\nv: 10Gi\nx: 0x1F\n",
           "{\"cron\":\"* * * * */5\",\"v\":\"10Gi\",\"x\":\"0x1F\"}");
}

static void test_structures(void **state)
{
    (void)state;
    expect("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels: {a: b}\n"
           "data:\n  k: v\nlist:\n- 1\n- {n: m}\n- [x, z]\n",
           "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\","
           "\"labels\":{\"a\":\"b\"}},\"data\":{\"k\":\"v\"},\"list\":[1,{\"n\":\"m\"},"
           "[\"x\",\"z\"]]}");
    expect("{\"json\": [1, 2, {\"a\": null}]}", "{\"json\":[1,2,{\"a\":null}]}");
    expect("base: &b {x: 1}\nuse: *b\n", "{\"base\":{\"x\":1},\"use\":{\"x\":1}}");
    expect("", "null");
    expect("text: |\n  line1\n  line2\n", "{\"text\":\"line1\\nline2\\n\"}");
}

static void test_errors(void **state)
{
    (void)state;
    json_t *out;
    char err[256];
    const char *bad = "a: [1, 2\n";
    assert_int_equal(yaml_to_json(bad, strlen(bad), 64, 1000, &out, err, sizeof err), KP_EINVAL);
    assert_non_null(strstr(err, "line"));
    const char *key = "? [a, b]\n: 1\n";
    assert_int_equal(yaml_to_json(key, strlen(key), 64, 1000, &out, err, sizeof err), KP_EINVAL);
    /* An alias bomb stops at the node cap. */
    const char *bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                       "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                       "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                       "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n";
    assert_int_equal(yaml_to_json(bomb, strlen(bomb), 64, 5000, &out, err, sizeof err),
                     KP_ETOOLARGE);
    const char *deep = "a: [[[[[[[[[[1]]]]]]]]]]\n";
    assert_int_equal(yaml_to_json(deep, strlen(deep), 5, 5000, &out, err, sizeof err),
                     KP_ETOOLARGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scalars),
        cmocka_unit_test(test_structures),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
