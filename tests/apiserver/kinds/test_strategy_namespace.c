/*
 * test_strategy_namespace.c -- the namespace strategy
 * (src/apiserver/strategy_namespace.c) as Kubernetes'
 * pkg/registry/core/namespace has it: what create and update set and keep,
 * the finalizer name rule, and the delete hooks (finalizing, the Terminating
 * mark, the immortal namespaces, the 409 of a second delete).
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

static const api_strategy_t *const st = &api_strategy_namespace;

static json_t *parse(const char *text)
{
    json_t *v = json_loads(text, 0, NULL);
    assert_non_null(v);
    return v;
}

/* 1 if a and b (JSON text) are equal; consumes a. */
static int same(json_t *a, const char *b)
{
    json_t *want = parse(b);
    int eq = json_equal(a, want);
    if (!eq) {
        char *got = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS);
        fprintf(stderr, "got  %s\nwant %s\n", got, b);
        free(got);
    }
    json_decref(want);
    json_decref(a);
    return eq;
}

static void test_prepare_create(void **state)
{
    (void)state;
    /* No spec: "kubernetes" alone; a client's status is replaced. */
    json_t *ns = parse("{\"metadata\":{\"name\":\"a\"},\"status\":{\"phase\":\"Terminating\"}}");
    st->prepare_create(ns);
    assert_true(same(ns, "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"finalizers\":[\"kubernetes\"]},"
                         "\"status\":{\"phase\":\"Active\"}}"));
    /* The client's finalizers stay, "kubernetes" is appended once. */
    ns = parse("{\"spec\":{\"finalizers\":[\"example.com/x\"]}}");
    st->prepare_create(ns);
    assert_true(same(ns, "{\"spec\":{\"finalizers\":[\"example.com/x\",\"kubernetes\"]},"
                         "\"status\":{\"phase\":\"Active\"}}"));
    ns = parse("{\"spec\":{\"finalizers\":[\"kubernetes\",\"example.com/x\"]}}");
    st->prepare_create(ns);
    assert_true(same(ns, "{\"spec\":{\"finalizers\":[\"kubernetes\",\"example.com/x\"]},"
                         "\"status\":{\"phase\":\"Active\"}}"));
    /* A spec of the wrong shape is replaced, not trusted. */
    ns = parse("{\"spec\":\"x\"}");
    st->prepare_create(ns);
    assert_true(same(ns, "{\"spec\":{\"finalizers\":[\"kubernetes\"]},\"status\":{\"phase\":\"Active\"}}"));
}

static void test_prepare_update(void **state)
{
    (void)state;
    json_t *old = parse("{\"spec\":{\"finalizers\":[\"kubernetes\"]}}");
    /* An update may not drop or change spec.finalizers... */
    json_t *ns = parse("{\"metadata\":{\"labels\":{\"a\":\"b\"}},\"spec\":{\"finalizers\":[]}}");
    st->prepare_update(ns, old);
    assert_true(same(ns, "{\"metadata\":{\"labels\":{\"a\":\"b\"}},\"spec\":{\"finalizers\":[\"kubernetes\"]}}"));
    ns = parse("{}");
    st->prepare_update(ns, old);
    assert_true(same(ns, "{\"spec\":{\"finalizers\":[\"kubernetes\"]}}"));
    json_decref(old);
    /* ...nor add one once the list is gone. */
    old = parse("{\"spec\":{}}");
    ns = parse("{\"spec\":{\"finalizers\":[\"kubernetes\"]}}");
    st->prepare_update(ns, old);
    assert_true(same(ns, "{\"spec\":{}}"));
    json_decref(old);
}

static void test_validate(void **state)
{
    (void)state;
    json_t *causes = json_array();
    json_t *ns = parse("{\"spec\":{\"finalizers\":[\"kubernetes\",\"example.com/x\"]}}");
    st->validate(ns, NULL, causes);
    assert_int_equal(json_array_size(causes), 0);
    json_decref(ns);
    ns = parse("{\"spec\":{\"finalizers\":[\"kubernetes\",\"bad\",7]}}");
    st->validate(ns, NULL, causes);
    assert_int_equal(json_array_size(causes), 2);
    assert_true(same(json_incref(json_array_get(causes, 0)),
                     "{\"reason\":\"FieldValueInvalid\",\"field\":\"spec.finalizers\",\"message\":"
                     "\"Invalid value: \\\"bad\\\": name is neither a standard finalizer name nor "
                     "is it fully qualified\"}"));
    assert_string_equal(json_string_value(json_object_get(json_array_get(causes, 1), "field")),
                        "spec.finalizers[2]");
    json_decref(ns);
    json_decref(causes);
}

static void test_delete_hooks(void **state)
{
    (void)state;
    json_t *ns = parse("{\"spec\":{\"finalizers\":[\"kubernetes\"]},\"status\":{\"phase\":\"Active\"}}");
    assert_true(st->finalizing(ns));
    st->delete_mark(ns);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(ns, "status"), "phase")), "Terminating");
    json_object_set_new(ns, "spec", json_object());
    assert_false(st->finalizing(ns));
    json_decref(ns);
    ns = parse("{}");
    assert_false(st->finalizing(ns));
    st->delete_mark(ns); /* makes the status it lacks */
    assert_true(same(ns, "{\"status\":{\"phase\":\"Terminating\"}}"));

    assert_string_equal(st->delete_refused("default"), "this namespace may not be deleted");
    assert_non_null(st->delete_refused("kube-system"));
    assert_non_null(st->delete_refused("kube-public"));
    assert_null(st->delete_refused("kube-node-lease"));
    assert_null(st->delete_refused("defaults"));
    assert_non_null(strstr(st->finalizing_conflict, "ensuring all content is removed"));
}

static void test_rules(void **state)
{
    (void)state;
    assert_int_equal(st->name_rule, API_NAME_LABEL);
    assert_false(st->default_orphan);
    assert_false(st->delete_returns_object);
    assert_null(st->graceful);
    const api_sub_t *f = api_strategy_sub(st, "finalize");
    assert_non_null(f);
    assert_non_null(f->handler);
    assert_string_equal(f->verbs[0], "update");
    assert_null(f->verbs[1]);
    assert_null(f->kind); /* discovery lists the parent's kind */
    assert_null(api_strategy_sub(st, "status")); /* generic, not the kind's */
    assert_null(api_strategy_sub(st, "log"));
    assert_null(api_strategy_sub(NULL, "finalize"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prepare_create), cmocka_unit_test(test_prepare_update),
        cmocka_unit_test(test_validate),       cmocka_unit_test(test_delete_hooks),
        cmocka_unit_test(test_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
