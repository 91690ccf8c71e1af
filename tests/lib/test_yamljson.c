/*
 * test_yamljson.c -- src/lib/yamljson.c: YAML documents as JSON, with YAML
 * 1.1's scalar resolution as Kubernetes reads manifests, and the budgets
 * (depth, output bytes, alias bytes) that stop deep nesting and alias bombs
 * before the work is spent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/err.h"
#include "lib/yamljson.h"

static const yamljson_limits_t roomy = {
    .max_depth = 64, .max_bytes = 1u << 20, .max_alias_bytes = 1u << 20};

static void expect(const char *yaml, const char *want_json)
{
    json_t *got;
    char err[256];
    int rc = yaml_to_json(yaml, strlen(yaml), &roomy, &got, err, sizeof err);
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

/* yaml_to_json on text that must fail with rc; the message must contain
 * `msg` (and always names a line and a column). */
static void refuse(const char *text, size_t len, const yamljson_limits_t *lim, int want_rc,
                   const char *msg)
{
    json_t *out = (json_t *)1;
    char err[256];
    int rc = yaml_to_json(text, len, lim, &out, err, sizeof err);
    if (rc != want_rc) fail_msg("rc %d, want %d (%s)", rc, want_rc, err);
    assert_null(out);
    if (!strstr(err, msg) || !strstr(err, "line ") || !strstr(err, "column "))
        fail_msg("message '%s' lacks '%s' or a line and column", err, msg);
}

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
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
    /* An explicit !!str keeps the text, as in Kubernetes. */
    expect("a: !!str 123\nb: !!str true\nc: 123\n", "{\"a\":\"123\",\"b\":\"true\",\"c\":123}");
    /* A key is the scalar's text, whatever it would resolve to. */
    expect("1: a\ntrue: b\n~: c\n", "{\"1\":\"a\",\"true\":\"b\",\"~\":\"c\"}");
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
    expect("---\n", "null");
    expect("text: |\n  line1\n  line2\n", "{\"text\":\"line1\\nline2\\n\"}");
    expect("- [[]]\n- {}\n- []\n", "[[[]],{},[]]");
    /* Anchors on scalars and keys; an alias as a key; a redefined anchor. */
    expect("a: &s hello\nb: *s\n*s : 1\n", "{\"a\":\"hello\",\"b\":\"hello\",\"hello\":1}");
    expect("a: &n 1\nb: *n\nc: &n two\nd: *n\n", "{\"a\":1,\"b\":1,\"c\":\"two\",\"d\":\"two\"}");
    expect("a: &m {x: &l [1, 2]}\nb: *l\nc: *m\n",
           "{\"a\":{\"x\":[1,2]},\"b\":[1,2],\"c\":{\"x\":[1,2]}}");
    /* The first document only; what follows is not parsed (as before). */
    expect("a: 1\n---\nb: [[[\n", "{\"a\":1}");
    expect("--- [1]\n...\n--- [2]\n", "[1]");
}

/* An alias's expansion is a copy: changing it leaves the anchored node. */
static void test_alias_copies(void **state)
{
    (void)state;
    const char *y = "a: &a {x: [1]}\nb: *a\n";
    json_t *out;
    char err[256];
    assert_int_equal(yaml_to_json(y, strlen(y), &roomy, &out, err, sizeof err), 0);
    json_t *a = json_object_get(out, "a"), *b = json_object_get(out, "b");
    assert_true(a != b && json_object_get(a, "x") != json_object_get(b, "x"));
    json_array_append_new(json_object_get(b, "x"), json_integer(2));
    assert_int_equal(json_array_size(json_object_get(a, "x")), 1);
    json_decref(out);
}

static void test_errors(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"a: [1, 2\n", "did not find expected"},
        {"? [a, b]\n: 1\n", "a mapping key must be a scalar"},
        {"a: &a [1]\n*a : 2\n", "a mapping key must be a scalar"},
        {"a: *nope\n", "unknown anchor 'nope'"},
        /* An alias of a node still open is unknown: no cycles. */
        {"a: &a [1, *a]\n", "unknown anchor 'a'"},
        /* Where it stopped: line 2, column 8. */
        {"a: 1\nb: [x, *q]\n", "line 2, column 8"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        refuse(cases[i][0], strlen(cases[i][0]), &roomy, KP_EINVAL, cases[i][1]);
}

/* Depth: max_depth collections nest, one more is refused; aliases count
 * the depth of the copy where it lands. */
static void test_depth(void **state)
{
    (void)state;
    const yamljson_limits_t lim = {
        .max_depth = 3, .max_bytes = 1u << 20, .max_alias_bytes = 1u << 20};
    json_t *out;
    char err[256];
    const char *ok = "a: [[1]]\n";
    assert_int_equal(yaml_to_json(ok, strlen(ok), &lim, &out, err, sizeof err), 0);
    json_decref(out);
    const char *deep = "a: [[[1]]]\n";
    refuse(deep, strlen(deep), &lim, KP_ETOOLARGE, "nested deeper than 3 levels");
    const char *block = "a:\n  b:\n    c:\n      d: 1\n";
    refuse(block, strlen(block), &lim, KP_ETOOLARGE, "nested deeper than 3 levels");
    const char *via_alias_ok = "- &a [1]\n- [*a]\n";
    assert_int_equal(yaml_to_json(via_alias_ok, strlen(via_alias_ok), &lim, &out, err, sizeof err),
                     0);
    json_decref(out);
    const char *via_alias = "- &a [[1]]\n- [*a]\n";
    refuse(via_alias, strlen(via_alias), &lim, KP_ETOOLARGE, "nested deeper than 3 levels");
}

/* `open` n times, then `close` n times: a document n levels deep. */
static char *nested(const char *open, const char *close, size_t n, size_t *len)
{
    size_t lo = strlen(open), lc = strlen(close);
    char *s = malloc(n * (lo + lc) + 1);
    assert_non_null(s);
    for (size_t i = 0; i < n; i++) {
        memcpy(s + i * lo, open, lo);
        memcpy(s + n * lo + i * lc, close, lc);
    }
    *len = n * (lo + lc);
    s[*len] = '\0';
    return s;
}

/* Deep nesting is refused at the cap, before libyaml (quadratic in flow
 * depth on its own) gets deep: 50,000 and 1,000,000 levels in well under
 * 100 ms of CPU. The assertion allows 1 s so as never to be flaky on a
 * loaded machine; the figures are printed. */
static void test_deep_nesting_fast(void **state)
{
    (void)state;
    const yamljson_limits_t lim = {
        .max_depth = 100, .max_bytes = 6u << 20, .max_alias_bytes = 1u << 20};
    const size_t depths[] = {50000, 1000000};
    const char *const shapes[][2] = {{"[", "]"}, {"{a: ", "}"}, {"- ", ""}};
    for (size_t i = 0; i < 2; i++)
        for (size_t j = 0; j < 3; j++) {
            size_t len;
            char *s = nested(shapes[j][0], shapes[j][1], depths[i], &len);
            double t0 = cpu_seconds();
            refuse(s, len, &lim, KP_ETOOLARGE, "the document is nested deeper than 100 levels");
            double dt = cpu_seconds() - t0;
            print_message("%zu levels of '%s' (%zu bytes): refused in %.2f ms of CPU\n", depths[i],
                          shapes[j][0], len, dt * 1e3);
            assert_true(dt < 1.0);
            free(s);
        }
    /* The place named is the collection past the cap: the 101st "[". */
    size_t len;
    char *s = nested("[", "]", 200, &len);
    refuse(s, len, &lim, KP_ETOOLARGE, "line 1, column 101: ");
    free(s);
}

/* ---- a counting allocator for jansson: the peak of live bytes ---- */

typedef struct {
    size_t live, peak;
} mem_count_t;

static mem_count_t g_mem; /* test-only; one test at a time uses it */

static void *count_malloc(size_t n)
{
    size_t *p = malloc(n + sizeof(size_t) * 2);
    if (!p) return NULL;
    p[0] = n;
    g_mem.live += n;
    if (g_mem.live > g_mem.peak) g_mem.peak = g_mem.live;
    return p + 2;
}

static void count_free(void *q)
{
    if (!q) return;
    size_t *p = (size_t *)q - 2;
    g_mem.live -= p[0];
    free(p);
}

/* The "billion laughs" (9 levels of 10 aliases: 10^9 strings if expanded)
 * and a large scalar aliased a few times are refused by the alias budget,
 * with jansson's memory bounded by about the budget; the same document
 * under the old node count would have expanded a 500 KB scalar 3 times. */
static void test_alias_bombs(void **state)
{
    (void)state;
    const yamljson_limits_t lim = {
        .max_depth = 100, .max_bytes = 6u << 20, .max_alias_bytes = 1u << 20};
    char bomb[2048];
    size_t n = (size_t)snprintf(bomb, sizeof bomb,
                                "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, "
                                "lol, lol, lol]\n");
    for (int i = 1; i < 10; i++) {
        n += (size_t)snprintf(bomb + n, sizeof bomb - n, "a%d: &a%d [", i, i);
        for (int j = 0; j < 10; j++)
            n += (size_t)snprintf(bomb + n, sizeof bomb - n, "%s*a%d", j ? ", " : "", i - 1);
        n += (size_t)snprintf(bomb + n, sizeof bomb - n, "]\n");
    }
    assert_true(n < sizeof bomb);

    json_set_alloc_funcs(count_malloc, count_free);
    g_mem = (mem_count_t){0};
    double t0 = cpu_seconds();
    refuse(bomb, n, &lim, KP_ETOOLARGE, "aliases expand to more than 1048576 bytes");
    double dt = cpu_seconds() - t0;
    print_message("billion laughs (%zu bytes): refused in %.2f ms of CPU, jansson peak %zu KiB\n",
                  n, dt * 1e3, g_mem.peak >> 10);
    assert_true(dt < 1.0);
    assert_true(g_mem.peak < (64u << 20));
    assert_int_equal(g_mem.live, 0);

    /* One 500 KB scalar, aliased three times: 1.5 MB, over the 1 MiB budget. */
    size_t big = 500000;
    char *s = malloc(big + 64);
    assert_non_null(s);
    memcpy(s, "a: &a ", 6);
    memset(s + 6, 'x', big);
    n = 6 + big;
    n += (size_t)snprintf(s + n, 64, "\nb: [*a, *a, *a]\n");
    g_mem = (mem_count_t){0};
    refuse(s, n, &lim, KP_ETOOLARGE, "aliases expand to more than");
    print_message("500 KB scalar aliased 3 times: refused, jansson peak %zu KiB\n",
                  g_mem.peak >> 10);
    assert_true(g_mem.peak < (4u << 20));
    assert_int_equal(g_mem.live, 0);
    /* Twice is within the budget. */
    n = 6 + big;
    n += (size_t)snprintf(s + n, 64, "\nb: [*a, *a]\n");
    json_t *out;
    char err[256];
    assert_int_equal(yaml_to_json(s, n, &lim, &out, err, sizeof err), 0);
    assert_int_equal(json_string_length(json_array_get(json_object_get(out, "b"), 1)), big);
    json_decref(out);
    assert_int_equal(g_mem.live, 0);
    json_set_alloc_funcs(malloc, free);
    free(s);
}

/* The output budget without aliases, and the alias budget's boundary. */
static void test_output_budget(void **state)
{
    (void)state;
    /* "a: xxxxxxxx" as JSON, with separators: {} 3, "a": 5, "xxxxxxxx" 11. */
    const char *y = "a: xxxxxxxx\n";
    yamljson_limits_t lim = {.max_depth = 10, .max_bytes = 19, .max_alias_bytes = 0};
    json_t *out;
    char err[256];
    assert_int_equal(yaml_to_json(y, strlen(y), &lim, &out, err, sizeof err), 0);
    json_decref(out);
    lim.max_bytes = 18;
    refuse(y, strlen(y), &lim, KP_ETOOLARGE, "decodes to more than 18 bytes");
    /* &s xyz counts 6; one alias of it needs 6 bytes of alias budget. */
    const char *a = "- &s xyz\n- *s\n";
    lim = (yamljson_limits_t){.max_depth = 10, .max_bytes = 100, .max_alias_bytes = 6};
    assert_int_equal(yaml_to_json(a, strlen(a), &lim, &out, err, sizeof err), 0);
    json_decref(out);
    lim.max_alias_bytes = 5;
    refuse(a, strlen(a), &lim, KP_ETOOLARGE, "aliases expand to more than 5 bytes");
}

/* A large ordinary manifest (about 2 MB, 20,000 list items) parses as
 * before, in time linear in its size; the figure is printed. */
static void test_large_document(void **state)
{
    (void)state;
    const yamljson_limits_t lim = {
        .max_depth = 100, .max_bytes = 6u << 20, .max_alias_bytes = 1u << 20};
    size_t cap = 3u << 20, n = 0;
    char *s = malloc(cap);
    assert_non_null(s);
    n += (size_t)snprintf(s, cap,
                          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n"
                          "data:\n");
    for (int i = 0; i < 20000; i++)
        n += (size_t)snprintf(s + n, cap - n,
                              "  key%05d: \"value number %d with some text to make it longer, "
                              "like a real configuration line\"\n",
                              i, i);
    n += (size_t)snprintf(s + n, cap - n, "list:\n");
    for (int i = 0; i < 5000; i++)
        n += (size_t)snprintf(s + n, cap - n,
                              "- {name: c%d, image: \"registry/x:%d\", ports: [%d, %d], on: yes}\n",
                              i, i, i, i + 1);
    assert_true(n < cap);
    json_t *out;
    char err[256];
    double t0 = cpu_seconds();
    assert_int_equal(yaml_to_json(s, n, &lim, &out, err, sizeof err), 0);
    double dt = cpu_seconds() - t0;
    print_message("%zu-byte manifest: parsed in %.1f ms of CPU\n", n, dt * 1e3);
    assert_int_equal(json_object_size(json_object_get(out, "data")), 20000);
    json_t *last = json_array_get(json_object_get(out, "list"), 4999);
    assert_string_equal(json_string_value(json_object_get(last, "image")), "registry/x:4999");
    assert_true(json_is_true(json_object_get(last, "on")));
    assert_int_equal(json_integer_value(json_array_get(json_object_get(last, "ports"), 1)), 5000);
    json_decref(out);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scalars),        cmocka_unit_test(test_structures),
        cmocka_unit_test(test_alias_copies),   cmocka_unit_test(test_errors),
        cmocka_unit_test(test_depth),          cmocka_unit_test(test_deep_nesting_fast),
        cmocka_unit_test(test_alias_bombs),    cmocka_unit_test(test_output_budget),
        cmocka_unit_test(test_large_document),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
