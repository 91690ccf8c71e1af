/*
 * test_gc.c -- the pure logic of the garbage collector
 * (src/controllers/garbagecollector.c through gc_int.h): what happens to a
 * dependent for each mix of owner states (Kubernetes' attemptToDeleteItem),
 * the finalizers and policies read off an object, which references block an
 * owner's foreground deletion, the owners index, and the exact patches sent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "controllers/gc_int.h"

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, 0, &e);
    if (!v) fail_msg("bad test JSON: %s: %s", e.text, text);
    return v;
}

static void assert_json(const json_t *got, const char *want)
{
    json_t *w = parse(want);
    if (!json_equal((json_t *)got, w)) {
        char *g = json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT);
        fail_msg("got %s, want %s", g, want);
    }
    json_decref(w);
}

#define S GC_OWNER_SOLID
#define D GC_OWNER_DANGLING
#define W GC_OWNER_WAITING

static void test_decide(void **state)
{
    (void)state;
    gc_owner_state_t none[1] = {S};
    assert_int_equal(gc_decide(none, 0, 0), GC_KEEP); /* no owners: nothing to do */
    gc_owner_state_t s[] = {S, S};
    assert_int_equal(gc_decide(s, 2, 1), GC_KEEP);
    /* a solid owner remains: only the refs to the others go */
    gc_owner_state_t sd[] = {S, D};
    assert_int_equal(gc_decide(sd, 2, 0), GC_REMOVE_REFS);
    gc_owner_state_t ws[] = {W, S};
    assert_int_equal(gc_decide(ws, 2, 1), GC_REMOVE_REFS);
    /* all owners gone: deleted (its own finalizers choose the policy) */
    gc_owner_state_t d[] = {D};
    assert_int_equal(gc_decide(d, 1, 0), GC_DELETE);
    assert_int_equal(gc_decide(d, 1, 1), GC_DELETE);
    /* an owner waits for it: foreground if it has dependents of its own */
    gc_owner_state_t w[] = {W};
    assert_int_equal(gc_decide(w, 1, 1), GC_DELETE_FG);
    assert_int_equal(gc_decide(w, 1, 0), GC_DELETE);
    gc_owner_state_t dw[] = {D, W};
    assert_int_equal(gc_decide(dw, 2, 1), GC_DELETE_FG);
}

static void test_finalizers_and_policy(void **state)
{
    (void)state;
    json_t *plain = parse("{\"metadata\":{\"name\":\"a\"}}");
    json_t *orphan = parse("{\"metadata\":{\"finalizers\":[\"x.io/y\",\"orphan\"]}}");
    json_t *fg = parse("{\"metadata\":{\"finalizers\":[\"foregroundDeletion\"]}}");
    json_t *fg_del = parse("{\"metadata\":{\"deletionTimestamp\":\"2024-01-01T00:00:00Z\","
                           "\"finalizers\":[\"foregroundDeletion\"]}}");
    assert_false(gc_has_finalizer(plain, GC_FIN_ORPHAN));
    assert_true(gc_has_finalizer(orphan, GC_FIN_ORPHAN));
    assert_false(gc_has_finalizer(orphan, GC_FIN_FOREGROUND));
    assert_string_equal(gc_policy_of(plain), "Background");
    assert_string_equal(gc_policy_of(orphan), "Orphan");
    assert_string_equal(gc_policy_of(fg), "Foreground");
    /* waiting for dependents means deleted AND the finalizer */
    assert_false(gc_deleting_dependents(fg));
    assert_true(gc_deleting_dependents(fg_del));
    assert_false(gc_deleting_dependents(plain));
    json_decref(plain);
    json_decref(orphan);
    json_decref(fg);
    json_decref(fg_del);
}

static void test_blocks(void **state)
{
    (void)state;
    json_t *dep = parse("{\"metadata\":{\"ownerReferences\":["
                        "{\"uid\":\"u1\",\"blockOwnerDeletion\":true},"
                        "{\"uid\":\"u2\",\"blockOwnerDeletion\":false},"
                        "{\"uid\":\"u3\"}]}}");
    assert_true(gc_blocks(dep, "u1"));
    assert_false(gc_blocks(dep, "u2")); /* blockOwnerDeletion false: no wait */
    assert_false(gc_blocks(dep, "u3")); /* absent: no wait */
    assert_false(gc_blocks(dep, "u4")); /* not an owner */
    json_decref(dep);
}

static void test_index(void **state)
{
    (void)state;
    char vals[4][KC_INDEX_VALUE_MAX];
    json_t *dep = parse("{\"metadata\":{\"ownerReferences\":[{\"uid\":\"u1\"},{\"name\":\"x\"},"
                        "{\"uid\":\"\"},{\"uid\":\"u2\"}]}}");
    assert_int_equal(gc_index_owners(dep, vals, 4), 2);
    assert_string_equal(vals[0], "u1");
    assert_string_equal(vals[1], "u2");
    assert_int_equal(gc_index_owners(dep, vals, 1), 1); /* capped */
    json_t *none = parse("{\"metadata\":{}}");
    assert_int_equal(gc_index_owners(none, vals, 4), 0);
    json_decref(dep);
    json_decref(none);
}

static void test_patches(void **state)
{
    (void)state;
    const char *uids[] = {"o1", "o2"};
    json_t *p = gc_patch_drop_refs("dep-uid", uids, 2);
    assert_json(p,
                "{\"metadata\":{\"uid\":\"dep-uid\",\"ownerReferences\":["
                "{\"$patch\":\"delete\",\"uid\":\"o1\"},{\"$patch\":\"delete\",\"uid\":\"o2\"}]}}");
    json_decref(p);
    p = gc_patch_unblock("dep-uid", uids, 1);
    assert_json(p, "{\"metadata\":{\"uid\":\"dep-uid\",\"ownerReferences\":["
                   "{\"uid\":\"o1\",\"blockOwnerDeletion\":false}]}}");
    json_decref(p);
    /* finalizers: only the GC's goes, conditional on the resourceVersion */
    json_t *obj = parse("{\"metadata\":{\"resourceVersion\":\"42\","
                        "\"finalizers\":[\"a.io/b\",\"orphan\",\"c.io/d\"]}}");
    p = gc_patch_drop_finalizer(obj, GC_FIN_ORPHAN);
    assert_json(
        p, "{\"metadata\":{\"resourceVersion\":\"42\",\"finalizers\":[\"a.io/b\",\"c.io/d\"]}}");
    json_decref(p);
    json_decref(obj);
    /* the last one: null (a merge patch deletes the list) */
    obj =
        parse("{\"metadata\":{\"resourceVersion\":\"7\",\"finalizers\":[\"foregroundDeletion\"]}}");
    p = gc_patch_drop_finalizer(obj, GC_FIN_FOREGROUND);
    assert_json(p, "{\"metadata\":{\"resourceVersion\":\"7\",\"finalizers\":null}}");
    json_decref(p);
    json_decref(obj);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decide),  cmocka_unit_test(test_finalizers_and_policy),
        cmocka_unit_test(test_blocks),  cmocka_unit_test(test_index),
        cmocka_unit_test(test_patches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
