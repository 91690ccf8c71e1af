/*
 * test_strategy_configmap.c -- ConfigMap and Secret rules
 * (src/apiserver/strategy_configmap.c, strategy_secret.c), each compared
 * with the field path and message Kubernetes' ValidateConfigMap(Update) and
 * ValidateSecret(Update) give: config-map keys, duplicates between data and
 * binaryData, the 1 MiB budget, `immutable`, the Secret type default and
 * immutability, stringData, and the keys each Secret type requires.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "apiserver/schema/strategy.h"
#include "apiserver/kinds/strategy_int.h"

#define KEYMSG                                                                                     \
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "           \
    "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
#define IMMUTABLE "Forbidden: field is immutable when `immutable` is set"

static json_t *J(const char *text)
{
    json_error_t err;
    json_t *v = json_loads(text, 0, &err);
    if (!v) fail_msg("bad fixture %s: %s", text, err.text);
    return v;
}

/* Default then validate obj (against old, may be NULL) with strategy st and
 * compare the causes, as "field: message" lines, with want. Consumes obj
 * and old. */
static void expect(const api_strategy_t *st, json_t *obj, json_t *old, const char *want)
{
    if (st->defaults) st->defaults(obj);
    json_t *causes = json_array();
    st->validate(obj, old, causes);
    char got[8192] = "";
    size_t i;
    json_t *x;
    json_array_foreach(causes, i, x) {
        size_t n = strlen(got);
        snprintf(got + n, sizeof got - n, "%s: %s\n",
                 json_string_value(json_object_get(x, "field")) ?: "",
                 json_string_value(json_object_get(x, "message")) ?: "");
    }
    json_decref(causes);
    json_decref(obj);
    json_decref(old);
    if (strcmp(got, want)) fail_msg("got:\n%swant:\n%s", got, want);
}

static void test_configmap_keys(void **state)
{
    (void)state;
    const api_strategy_t *st = &api_strategy_configmap;
    expect(st, J("{\"data\":{\"a.b\":\"1\",\"A_b-9\":\"2\"},\"binaryData\":{\"c\":\"AAE=\"}}"), NULL,
           "");
    expect(st, J("{\"data\":{\"\":\"x\"}}"), NULL, "data[]: Invalid value: \"\": " KEYMSG "\n");
    expect(st, J("{\"binaryData\":{\"a b\":\"AA==\"}}"), NULL,
           "binaryData[a b]: Invalid value: \"a b\": " KEYMSG "\n");
    expect(st, J("{\"data\":{\"..x\":\"\"}}"), NULL,
           "data[..x]: Invalid value: \"..x\": must not start with '..'\n");
    expect(st, J("{\"data\":{\".\":\"\"}}"), NULL, "data[.]: Invalid value: \".\": must not be '.'\n");
    expect(st, J("{\"data\":{\"k\":\"v\"},\"binaryData\":{\"k\":\"AA==\"}}"), NULL,
           "data[k]: Invalid value: \"k\": duplicate of key present in binaryData\n");
}

static void test_configmap_size(void **state)
{
    (void)state;
    size_t n = 1024 * 1024;
    char *big = malloc(n + 2);
    assert_non_null(big);
    memset(big, 'x', n + 1);
    big[n] = '\0'; /* exactly 1 MiB: allowed */
    json_t *cm = json_pack("{s:{s:s}}", "data", "k", big);
    expect(&api_strategy_configmap, cm, NULL, "");
    cm = json_pack("{s:{s:s, s:s}}", "data", "k", big, "l", "1");
    expect(&api_strategy_configmap, cm, NULL, ": Too long: must have at most 1048576 bytes\n");
    free(big);
}

static void test_configmap_immutable(void **state)
{
    (void)state;
    const api_strategy_t *st = &api_strategy_configmap;
    const char *old = "{\"immutable\":true,\"data\":{\"k\":\"v\"}}";
    expect(st, J(old), J(old), "");
    expect(st, J("{\"immutable\":true,\"data\":{\"k\":\"w\"}}"), J(old), "data: " IMMUTABLE "\n");
    expect(st, J("{\"immutable\":false,\"data\":{\"k\":\"v\"},\"binaryData\":{\"b\":\"AA==\"}}"),
           J(old), "immutable: " IMMUTABLE "\nbinaryData: " IMMUTABLE "\n");
    /* Not immutable before: anything goes, and it may become immutable. */
    expect(st, J("{\"immutable\":true,\"data\":{\"k\":\"w\"}}"), J("{\"data\":{\"k\":\"v\"}}"), "");
}

static void test_secret_defaults(void **state)
{
    (void)state;
    json_t *s = J("{\"data\":{\"a\":\"eA==\"},\"stringData\":{\"a\":\"hello\",\"b\":\"\"}}");
    api_strategy_secret.defaults(s);
    assert_string_equal(json_string_value(json_object_get(s, "type")), "Opaque");
    assert_null(json_object_get(s, "stringData"));
    const json_t *data = json_object_get(s, "data");
    assert_string_equal(json_string_value(json_object_get(data, "a")), "aGVsbG8=");
    assert_string_equal(json_string_value(json_object_get(data, "b")), "");
    json_decref(s);
}

static void test_secret_rules(void **state)
{
    (void)state;
    const api_strategy_t *st = &api_strategy_secret;
    expect(st, J("{\"data\":{\"\":\"eA==\"}}"), NULL, "data[]: Invalid value: \"\": " KEYMSG "\n");
    expect(st, J("{\"type\":\"kubernetes.io/service-account-token\"}"), NULL,
           "metadata.annotations[kubernetes.io/service-account.name]: Required value\n");
    expect(st,
           J("{\"type\":\"kubernetes.io/service-account-token\",\"metadata\":{\"annotations\":"
             "{\"kubernetes.io/service-account.name\":\"default\"}}}"),
           NULL, "");
    expect(st, J("{\"type\":\"kubernetes.io/dockerconfigjson\"}"), NULL,
           "data[.dockerconfigjson]: Required value\n");
    /* {"auths":{}} */
    expect(st,
           J("{\"type\":\"kubernetes.io/dockerconfigjson\",\"data\":{\".dockerconfigjson\":"
             "\"eyJhdXRocyI6e319\"}}"),
           NULL, "");
    expect(st, J("{\"type\":\"kubernetes.io/tls\",\"data\":{\"tls.crt\":\"\"}}"), NULL,
           "data[tls.key]: Required value\n");
    expect(st, J("{\"type\":\"kubernetes.io/basic-auth\"}"), NULL,
           "data[username]: Required value\ndata[password]: Required value\n");
    expect(st, J("{\"type\":\"kubernetes.io/basic-auth\",\"stringData\":{\"password\":\"\"}}"), NULL,
           "");
    expect(st, J("{\"type\":\"kubernetes.io/ssh-auth\",\"data\":{\"ssh-privatekey\":\"\"}}"), NULL,
           "data[ssh-privatekey]: Required value\n");
    expect(st, J("{\"type\":\"example.com/any\"}"), NULL, "");
}

static void test_secret_update(void **state)
{
    (void)state;
    const api_strategy_t *st = &api_strategy_secret;
    expect(st, J("{\"type\":\"kubernetes.io/tls\",\"data\":{\"tls.crt\":\"\",\"tls.key\":\"\"}}"),
           J("{\"type\":\"Opaque\"}"),
           "type: Invalid value: \"kubernetes.io/tls\": field is immutable\n");
    /* No type on update: defaulted to Opaque, the same. */
    expect(st, J("{\"data\":{}}"), J("{\"type\":\"Opaque\"}"), "");
    const char *old = "{\"type\":\"Opaque\",\"immutable\":true,\"data\":{\"k\":\"eA==\"}}";
    expect(st, J("{\"immutable\":true,\"stringData\":{\"k\":\"y\"}}"), J(old),
           "data: " IMMUTABLE "\n");
    expect(st, J("{\"data\":{\"k\":\"eA==\"}}"), J(old), "immutable: " IMMUTABLE "\n");
}

static void test_secret_size(void **state)
{
    (void)state;
    /* 1 MiB + 2 bytes of decoded data: base64 of length 4 * 349526. */
    size_t n = 4 * 349526;
    char *big = malloc(n + 1);
    assert_non_null(big);
    memset(big, 'Q', n);
    big[n] = '\0';
    expect(&api_strategy_secret, json_pack("{s:{s:s}}", "data", "k", big), NULL,
           "data: Too long: must have at most 1048576 bytes\n");
    big[n - 4] = '\0'; /* 1048575 bytes */
    expect(&api_strategy_secret, json_pack("{s:{s:s}}", "data", "k", big), NULL, "");
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_configmap_keys),     cmocka_unit_test(test_configmap_size),
        cmocka_unit_test(test_configmap_immutable), cmocka_unit_test(test_secret_defaults),
        cmocka_unit_test(test_secret_rules),       cmocka_unit_test(test_secret_update),
        cmocka_unit_test(test_secret_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
