/*
 * test_informer_mem.c -- what an informer keeps of each object, and what it
 * parses. The events' managedFields are cut out of their bytes before
 * parsing (watch.c), whatever their place among metadata's members. The
 * shared subtrees (src/client/intern.c):
 * equal object and array fields of metadata and spec become one shared
 * tree, unequal ones stay apart, status is never shared, nothing shared
 * changes what an object says, an update keeps what it did not change, and
 * entries nobody holds are swept.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_int.h"

static json_t *pod(const char *name, const char *image, const char *ip)
{
    json_t *p = json_pack("{s:{s:s, s:{s:s}, s:[{s:s, s:s}]}, s:{s:[{s:s, s:s}], s:s, s:[]},"
                          " s:{s:s, s:[{s:s, s:s}]}}",
                          "metadata", "name", name, "labels", "app", "web", "ownerReferences",
                          "kind", "ReplicaSet", "uid", "u1", "spec", "containers", "name", "c",
                          "image", image, "nodeName", name, "volumes", "status", "podIP", ip,
                          "conditions", "type", "Ready", "status", "True");
    assert_non_null(p);
    return p;
}

static const json_t *at(const json_t *o, const char *a, const char *b)
{
    return json_object_get(json_object_get(o, a), b);
}

static void test_shared_when_equal(void **state)
{
    (void)state;
    kc__intern_t *t = kc__intern_new();
    assert_non_null(t);
    json_t *a = pod("a", "nginx", "10.0.0.1"), *b = pod("b", "nginx", "10.0.0.1");
    json_t *c = pod("c", "redis", "10.0.0.2");
    json_t *b_before = json_deep_copy(b), *c_before = json_deep_copy(c);
    kc__intern(t, a, NULL);
    kc__intern(t, b, NULL);
    kc__intern(t, c, NULL);
    /* equal: one tree */
    assert_ptr_equal(at(a, "spec", "containers"), at(b, "spec", "containers"));
    assert_ptr_equal(at(a, "spec", "volumes"), at(b, "spec", "volumes"));
    assert_ptr_equal(at(a, "metadata", "labels"), at(b, "metadata", "labels"));
    assert_ptr_equal(at(a, "metadata", "ownerReferences"), at(c, "metadata", "ownerReferences"));
    /* unequal: apart; status never shared */
    assert_ptr_not_equal(at(a, "spec", "containers"), at(c, "spec", "containers"));
    assert_ptr_not_equal(at(a, "status", "conditions"), at(b, "status", "conditions"));
    /* and nothing says anything else */
    assert_true(json_equal(b, b_before));
    assert_true(json_equal(c, c_before));
    /* An update takes the fields it did not change from the version it
     * replaces, the others from the table. */
    json_t *a2 = pod("a", "nginx", "10.0.0.7"), *a3 = pod("a", "redis", "10.0.0.7");
    kc__intern(t, a2, a);
    kc__intern(t, a3, a2);
    assert_ptr_equal(at(a2, "spec", "containers"), at(a, "spec", "containers"));
    assert_ptr_equal(at(a3, "spec", "containers"), at(c, "spec", "containers"));
    assert_ptr_equal(at(a3, "metadata", "labels"), at(a, "metadata", "labels"));
    json_decref(a2);
    json_decref(a3);
    json_decref(a);
    json_decref(b);
    json_decref(c);
    json_decref(b_before);
    json_decref(c_before);
    kc__intern_free(t);
}

/* Subtrees whose objects are gone leave the table at a sweep: many
 * distinct images, each object freed at once, keep the table bounded. */
static void test_swept(void **state)
{
    (void)state;
    kc__intern_t *t = kc__intern_new();
    json_t *keep = pod("keep", "kept", "10.0.0.9");
    kc__intern(t, keep, NULL);
    for (int i = 0; i < 20000; i++) {
        char image[32];
        snprintf(image, sizeof image, "image-%d", i);
        json_t *p = pod("p", image, "10.0.0.1");
        kc__intern(t, p, NULL);
        json_decref(p);
    }
    /* The kept object's trees are still shared with a new equal one. */
    json_t *again = pod("again", "kept", "10.0.0.9");
    kc__intern(t, again, NULL);
    assert_ptr_equal(at(keep, "spec", "containers"), at(again, "spec", "containers"));
    /* 20,000 distinct containers went through; the table holds at most
     * twice what was live at the last sweep, plus the sweep's minimum. */
    size_t n = kc__intern_size(t);
    assert_true(n < 2 * 8 + 1024 + 8);
    json_decref(keep);
    json_decref(again);
    kc__intern_free(t);
}

/* The line with managedFields cut out parses to the object without them,
 * whether they come first, in the middle, last or alone in metadata. */
static void test_cut_managed_fields(void **state)
{
    (void)state;
    static const char *const lines[] = {
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"managedFields\":[{\"manager\":\"a,b}\"}],"
        "\"name\":\"x\",\"uid\":\"u\"},\"spec\":{\"managedFields\":1}}}",
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"x\", \"managedFields\" : [ ] ,"
        "\"uid\":\"u\"},\"spec\":{\"managedFields\":1}}}",
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"x\",\"uid\":\"u\" , "
        "\"managedFields\":[{\"f\":{\"}\":\"]\"}}]},\"spec\":{\"managedFields\":1}}}",
        "{\"object\":{\"spec\":{\"managedFields\":1},\"metadata\":{\"managedFields\":[]}},"
        "\"type\":\"ADDED\"}",
    };
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
        json_t *want = json_loads(lines[i], 0, NULL);
        assert_non_null(want);
        json_object_del(json_object_get(json_object_get(want, "object"), "metadata"),
                        "managedFields");
        char *cut;
        size_t n = kc__drop_managed_fields(lines[i], strlen(lines[i]), &cut);
        assert_non_null(cut);
        json_t *got = json_loadb(cut, n, 0, NULL);
        assert_non_null(got);
        assert_true(json_equal(got, want));
        free(cut);
        json_decref(got);
        json_decref(want);
    }
    /* none: nothing cut */
    const char *none = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"x\"}}}";
    char *cut;
    assert_int_equal(kc__drop_managed_fields(none, strlen(none), &cut), 0);
    assert_null(cut);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_when_equal),
        cmocka_unit_test(test_swept),
        cmocka_unit_test(test_cut_managed_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
