/*
 * test_patch.c -- src/apiserver/patch.c: JSON patch (RFC 6902, with the Go
 * json-patch library's messages), merge patch (RFC 7386) and Kubernetes'
 * strategic merge patch driven by the real schema facts (apimachinery
 * pkg/util/strategicpatch semantics). Every result is compared in full with
 * json_equal against an expected literal; arrays compare in order.
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

#include "apiserver/apply/patch.h"
#include "lib/err.h"

static json_t *js(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &e);
    if (!j) fail_msg("bad test JSON %s: %s", text, e.text);
    return j;
}

/* Fail unless `got` equals the JSON text `want`. */
static void expect_json(const json_t *got, const char *want)
{
    json_t *w = js(want);
    if (!json_equal((json_t *)got, w)) {
        char *g = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        char *x = json_dumps(w, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        print_error("got:  %s\nwant: %s\n", g ? g : "(null)", x ? x : "(null)");
        free(g);
        free(x);
        json_decref(w);
        fail();
    }
    json_decref(w);
}

/* ---- JSON patch ---------------------------------------------------------------------- */

static void jp_ok(const char *doc, const char *ops, const char *want)
{
    json_t *d = js(doc), *o = js(ops);
    char err[512] = "x";
    int rc = api_json_patch(&d, o, err, sizeof err);
    if (rc) fail_msg("json patch %s failed (%d): %s", ops, rc, err);
    assert_string_equal(err, "");
    expect_json(d, want);
    json_decref(d);
    json_decref(o);
}

static void jp_fail(const char *doc, const char *ops, int want_rc, const char *want_msg)
{
    json_t *d = js(doc), *o = js(ops);
    char err[512] = "";
    int rc = api_json_patch(&d, o, err, sizeof err);
    if (rc != want_rc) fail_msg("json patch %s: rc %d, want %d (%s)", ops, rc, want_rc, err);
    assert_string_equal(err, want_msg);
    assert_non_null(d);
    json_decref(d);
    json_decref(o);
}

static void test_jp_add(void **state)
{
    (void)state;
    jp_ok("{\"spec\":{}}", "[{\"op\":\"add\",\"path\":\"/spec/replicas\",\"value\":3}]",
          "{\"spec\":{\"replicas\":3}}");
    /* add over an existing member replaces it */
    jp_ok("{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/a\",\"value\":{\"b\":[1]}}]",
          "{\"a\":{\"b\":[1]}}");
    /* arrays: insert at an index, at the length, and "-" appends */
    jp_ok("{\"l\":[1,2]}", "[{\"op\":\"add\",\"path\":\"/l/0\",\"value\":0}]", "{\"l\":[0,1,2]}");
    jp_ok("{\"l\":[1,2]}", "[{\"op\":\"add\",\"path\":\"/l/2\",\"value\":3}]", "{\"l\":[1,2,3]}");
    jp_ok("{\"l\":[1,2]}", "[{\"op\":\"add\",\"path\":\"/l/-\",\"value\":3}]", "{\"l\":[1,2,3]}");
    jp_ok("{\"l\":[]}", "[{\"op\":\"add\",\"path\":\"/l/-\",\"value\":null}]", "{\"l\":[null]}");
    /* escapes: ~1 is '/', ~0 is '~'; the empty key is a key too */
    jp_ok("{\"metadata\":{\"annotations\":{}}}",
          "[{\"op\":\"add\",\"path\":\"/metadata/annotations/kubernetes.io~1change-cause\","
          "\"value\":\"v2\"},{\"op\":\"add\",\"path\":\"/metadata/annotations/a~0b~01\","
          "\"value\":\"t\"},{\"op\":\"add\",\"path\":\"/metadata/annotations/\",\"value\":\"e\"}]",
          "{\"metadata\":{\"annotations\":{\"kubernetes.io/change-cause\":\"v2\","
          "\"a~b~1\":\"t\",\"\":\"e\"}}}");
    /* the root path replaces the whole document */
    jp_ok("{\"a\":1}", "[{\"op\":\"add\",\"path\":\"\",\"value\":{\"b\":2}}]", "{\"b\":2}");
    jp_ok("{\"a\":1}", "[]", "{\"a\":1}");
}

static void test_jp_remove_replace(void **state)
{
    (void)state;
    jp_ok("{\"a\":1,\"b\":2}", "[{\"op\":\"remove\",\"path\":\"/a\"}]", "{\"b\":2}");
    jp_ok("{\"l\":[1,2,3]}", "[{\"op\":\"remove\",\"path\":\"/l/1\"}]", "{\"l\":[1,3]}");
    jp_ok("{\"spec\":{\"replicas\":1}}",
          "[{\"op\":\"replace\",\"path\":\"/spec/replicas\",\"value\":5}]",
          "{\"spec\":{\"replicas\":5}}");
    jp_ok("{\"l\":[1,2,3]}", "[{\"op\":\"replace\",\"path\":\"/l/2\",\"value\":{\"x\":1}}]",
          "{\"l\":[1,2,{\"x\":1}]}");
    jp_ok("{\"a\":1}", "[{\"op\":\"replace\",\"path\":\"\",\"value\":{\"z\":0}}]", "{\"z\":0}");
    /* kubectl rollout undo: two replaces of whole subtrees */
    jp_ok("{\"metadata\":{\"annotations\":{\"a\":\"1\"}},\"spec\":{\"template\":{\"x\":1}}}",
          "[{\"op\":\"replace\",\"path\":\"/spec/template\",\"value\":{\"y\":2}},"
          "{\"op\":\"replace\",\"path\":\"/metadata/annotations\",\"value\":{\"b\":\"2\"}}]",
          "{\"metadata\":{\"annotations\":{\"b\":\"2\"}},\"spec\":{\"template\":{\"y\":2}}}");
}

static void test_jp_move_copy_test(void **state)
{
    (void)state;
    jp_ok("{\"a\":{\"b\":1},\"c\":{}}", "[{\"op\":\"move\",\"from\":\"/a/b\",\"path\":\"/c/d\"}]",
          "{\"a\":{},\"c\":{\"d\":1}}");
    /* within an array: removed first, then inserted (indices shift) */
    jp_ok("{\"l\":[1,2,3,4]}", "[{\"op\":\"move\",\"from\":\"/l/0\",\"path\":\"/l/3\"}]",
          "{\"l\":[2,3,4,1]}");
    jp_ok("{\"a\":1}", "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/a\"}]", "{\"a\":1}");
    jp_ok("{\"a\":{\"b\":1}}", "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"\"}]", "{\"b\":1}");
    jp_ok("{\"a\":[1,{\"x\":2}]}", "[{\"op\":\"copy\",\"from\":\"/a/1\",\"path\":\"/b\"}]",
          "{\"a\":[1,{\"x\":2}],\"b\":{\"x\":2}}");
    jp_ok("{\"a\":{\"b\":1}}", "[{\"op\":\"copy\",\"from\":\"\",\"path\":\"/a/c\"}]",
          "{\"a\":{\"b\":1,\"c\":{\"a\":{\"b\":1}}}}");
    /* test: deep equality, the root, and (as Kubernetes) a missing member as null */
    jp_ok("{\"a\":{\"b\":[1,\"x\",{\"c\":true}]}}",
          "[{\"op\":\"test\",\"path\":\"/a\",\"value\":{\"b\":[1,\"x\",{\"c\":true}]}},"
          "{\"op\":\"test\",\"path\":\"\",\"value\":{\"a\":{\"b\":[1,\"x\",{\"c\":true}]}}},"
          "{\"op\":\"test\",\"path\":\"/a/b/1\",\"value\":\"x\"},"
          "{\"op\":\"test\",\"path\":\"/a/nope\",\"value\":null}]",
          "{\"a\":{\"b\":[1,\"x\",{\"c\":true}]}}");
    /* operations apply in order and see each other's results */
    jp_ok("{}",
          "[{\"op\":\"add\",\"path\":\"/a\",\"value\":{}},{\"op\":\"add\",\"path\":\"/a/b\","
          "\"value\":1},{\"op\":\"test\",\"path\":\"/a/b\",\"value\":1},{\"op\":\"copy\","
          "\"from\":\"/a\",\"path\":\"/c\"},{\"op\":\"remove\",\"path\":\"/a/b\"}]",
          "{\"a\":{},\"c\":{\"b\":1}}");
}

static void test_jp_values_are_copies(void **state)
{
    (void)state;
    json_t *d = js("{}");
    json_t *ops = js("[{\"op\":\"add\",\"path\":\"/a\",\"value\":{\"l\":[1]}},"
                     "{\"op\":\"add\",\"path\":\"/b\",\"value\":{\"l\":[1]}},"
                     "{\"op\":\"add\",\"path\":\"/b/l/-\",\"value\":2}]");
    char err[256];
    assert_int_equal(api_json_patch(&d, ops, err, sizeof err), 0);
    expect_json(d, "{\"a\":{\"l\":[1]},\"b\":{\"l\":[1,2]}}");
    json_array_append_new(json_object_get(json_object_get(d, "a"), "l"), json_integer(9));
    expect_json(ops, "[{\"op\":\"add\",\"path\":\"/a\",\"value\":{\"l\":[1]}},"
                     "{\"op\":\"add\",\"path\":\"/b\",\"value\":{\"l\":[1]}},"
                     "{\"op\":\"add\",\"path\":\"/b/l/-\",\"value\":2}]");
    json_decref(d);
    json_decref(ops);
}

static void test_jp_malformed(void **state)
{
    (void)state;
    jp_fail("{}", "{\"op\":\"add\"}", KP_EINVAL,
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch");
    jp_fail("{}", "[\"add\"]", KP_EINVAL,
            "json: cannot unmarshal string into Go value of type jsonpatch.Operation");
    jp_fail("{}", "[{\"path\":\"/a\",\"value\":1}]", KP_EINVAL, "Unexpected kind: unknown");
    jp_fail("{}", "[{\"op\":\"frob\",\"path\":\"/a\"}]", KP_EINVAL, "Unexpected kind: frob");
    jp_fail("{}", "[{\"op\":\"remove\"}]", KP_EINVAL,
            "remove operation failed to decode path: operation missing path field: missing value");
    jp_fail("{}", "[{\"op\":\"add\",\"path\":\"a\",\"value\":1}]", KP_EINVAL,
            "add operation failed to decode path: invalid JSON pointer \"a\"");
    jp_fail("{}", "[{\"op\":\"add\",\"path\":\"/a~2\",\"value\":1}]", KP_EINVAL,
            "add operation failed to decode path: invalid JSON pointer \"/a~2\"");
    jp_fail("{}", "[{\"op\":\"add\",\"path\":\"/a\"}]", KP_EINVAL,
            "add operation failed: operation, missing value field: missing value");
    jp_fail("{}", "[{\"op\":\"test\",\"path\":\"/a\"}]", KP_EINVAL,
            "test operation failed: operation, missing value field: missing value");
    jp_fail("{}", "[{\"op\":\"move\",\"path\":\"/a\"}]", KP_EINVAL,
            "move operation failed to decode from: operation, missing from field: missing value");
    jp_fail("{}", "[{\"op\":\"copy\",\"path\":\"/a\",\"from\":\"x~\"}]", KP_EINVAL,
            "copy operation failed to decode from: invalid JSON pointer \"x~\"");
    /* the whole document is checked before anything applies */
    json_t *d = js("{\"a\":1}"), *o = js("[{\"op\":\"remove\",\"path\":\"/a\"},{\"op\":\"x\"}]");
    char err[128];
    assert_int_equal(api_json_patch(&d, o, err, sizeof err), KP_EINVAL);
    expect_json(d, "{\"a\":1}");
    json_decref(d);
    json_decref(o);
}

static void test_jp_does_not_apply(void **state)
{
    (void)state;
    const char *doc = "{\"spec\":{\"replicas\":1,\"l\":[1,2]}}";
    jp_fail(doc, "[{\"op\":\"replace\",\"path\":\"/spec/foo\",\"value\":1}]", KP_ECONFLICT,
            "replace operation does not apply: doc is missing key: /spec/foo: missing value");
    jp_fail(doc, "[{\"op\":\"replace\",\"path\":\"/x/foo\",\"value\":1}]", KP_ECONFLICT,
            "replace operation does not apply: doc is missing path: /x/foo: missing value");
    jp_fail(doc, "[{\"op\":\"replace\",\"path\":\"/spec/l/2\",\"value\":1}]", KP_ECONFLICT,
            "replace operation does not apply: doc is missing key: /spec/l/2: missing value");
    jp_fail(doc, "[{\"op\":\"test\",\"path\":\"/spec/replicas\",\"value\":2}]", KP_ECONFLICT,
            "testing value /spec/replicas failed: test failed");
    jp_fail(doc, "[{\"op\":\"test\",\"path\":\"/spec/replicas\",\"value\":1.0}]", KP_ECONFLICT,
            "testing value /spec/replicas failed: test failed");
    jp_fail(doc, "[{\"op\":\"test\",\"path\":\"/spec/nope\",\"value\":0}]", KP_ECONFLICT,
            "testing value /spec/nope failed: test failed");
    jp_fail(doc, "[{\"op\":\"test\",\"path\":\"\",\"value\":{}}]", KP_ECONFLICT,
            "testing value  failed: test failed");
    jp_fail(doc, "[{\"op\":\"test\",\"path\":\"/a/b\",\"value\":0}]", KP_ECONFLICT,
            "test operation does not apply: is missing path: /a/b: missing value");
    jp_fail(doc, "[{\"op\":\"remove\",\"path\":\"/spec/foo\"}]", KP_ECONFLICT,
            "error in remove for path: '/spec/foo': Unable to remove nonexistent key: foo: "
            "missing value");
    jp_fail(doc, "[{\"op\":\"remove\",\"path\":\"/x/y/z\"}]", KP_ECONFLICT,
            "remove operation does not apply: doc is missing path: \"/x/y/z\": missing value");
    jp_fail(doc, "[{\"op\":\"remove\",\"path\":\"/spec/l/2\"}]", KP_ECONFLICT,
            "error in remove for path: '/spec/l/2': Unable to access invalid index: 2: invalid "
            "index referenced");
    jp_fail(doc, "[{\"op\":\"remove\",\"path\":\"\"}]", KP_ECONFLICT,
            "remove operation does not apply: the document root cannot be removed");
    jp_fail(doc, "[{\"op\":\"add\",\"path\":\"/x/y\",\"value\":1}]", KP_ECONFLICT,
            "add operation does not apply: doc is missing path: \"/x/y\": missing value");
    /* a scalar has no members */
    jp_fail(doc, "[{\"op\":\"add\",\"path\":\"/spec/replicas/x\",\"value\":1}]", KP_ECONFLICT,
            "add operation does not apply: doc is missing path: \"/spec/replicas/x\": missing "
            "value");
    jp_fail(doc, "[{\"op\":\"add\",\"path\":\"/spec/l/3\",\"value\":1}]", KP_ECONFLICT,
            "error in add for path: '/spec/l/3': Unable to access invalid index: 3: invalid "
            "index referenced");
    jp_fail(doc, "[{\"op\":\"add\",\"path\":\"/spec/l/01\",\"value\":1}]", KP_ECONFLICT,
            "error in add for path: '/spec/l/01': value was not a proper array index: '01'");
    jp_fail(doc, "[{\"op\":\"add\",\"path\":\"/spec/l/-1\",\"value\":1}]", KP_ECONFLICT,
            "error in add for path: '/spec/l/-1': value was not a proper array index: '-1'");
    jp_fail(doc, "[{\"op\":\"replace\",\"path\":\"/spec/l/01\",\"value\":1}]", KP_ECONFLICT,
            "replace operation does not apply: doc is missing key: /spec/l/01: missing value");
    jp_fail(doc, "[{\"op\":\"add\",\"path\":\"/spec/l/99999999999999999999999\",\"value\":1}]",
            KP_ECONFLICT,
            "error in add for path: '/spec/l/99999999999999999999999': Unable to access invalid "
            "index: 99999999999999999999999: invalid index referenced");
    jp_fail(doc, "[{\"op\":\"move\",\"from\":\"/spec\",\"path\":\"/spec/x\"}]", KP_ECONFLICT,
            "move operation does not apply: cannot move /spec into its own child /spec/x");
    jp_fail(doc, "[{\"op\":\"move\",\"from\":\"\",\"path\":\"/x\"}]", KP_ECONFLICT,
            "move operation does not apply: cannot move  into its own child /x");
    jp_fail(doc, "[{\"op\":\"move\",\"from\":\"/nope\",\"path\":\"/x\"}]", KP_ECONFLICT,
            "error in move for path: '/nope': Unable to remove nonexistent key: nope: missing "
            "value");
    jp_fail(doc, "[{\"op\":\"move\",\"from\":\"/a/b\",\"path\":\"/x\"}]", KP_ECONFLICT,
            "move operation does not apply: doc is missing from path: /a/b: missing value");
    jp_fail(doc, "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/a\"}]", KP_ECONFLICT,
            "move operation does not apply: doc is missing from path: /a: missing value");
    jp_fail(doc, "[{\"op\":\"move\",\"from\":\"/spec/replicas\",\"path\":\"/q/r\"}]", KP_ECONFLICT,
            "move operation does not apply: doc is missing destination path: /q/r: missing value");
    jp_fail(doc, "[{\"op\":\"copy\",\"from\":\"/nope\",\"path\":\"/x\"}]", KP_ECONFLICT,
            "copy operation does not apply: doc is missing from path: /nope: missing value");
    jp_fail(doc, "[{\"op\":\"copy\",\"from\":\"/spec\",\"path\":\"/q/r\"}]", KP_ECONFLICT,
            "copy operation does not apply: doc is missing destination path: /q/r: missing value");
    /* a failing op stops the run; earlier ones stay applied to the caller's copy */
    json_t *d = js("{\"a\":1}");
    json_t *o = js("[{\"op\":\"add\",\"path\":\"/b\",\"value\":2},"
                   "{\"op\":\"test\",\"path\":\"/a\",\"value\":2},"
                   "{\"op\":\"add\",\"path\":\"/c\",\"value\":3}]");
    char err[128];
    assert_int_equal(api_json_patch(&d, o, err, sizeof err), KP_ECONFLICT);
    expect_json(d, "{\"a\":1,\"b\":2}");
    json_decref(d);
    json_decref(o);
}

static void test_jp_too_large(void **state)
{
    (void)state;
    json_t *ops = json_array();
    for (int i = 0; i < API_JSON_PATCH_MAX; i++)
        json_array_append_new(ops, js("{\"op\":\"test\",\"path\":\"/a\",\"value\":1}"));
    json_t *d = js("{\"a\":1}");
    char err[256] = "";
    assert_int_equal(api_json_patch(&d, ops, err, sizeof err), 0);
    json_array_append_new(ops, js("{\"op\":\"test\",\"path\":\"/a\",\"value\":1}"));
    assert_int_equal(api_json_patch(&d, ops, err, sizeof err), KP_ETOOLARGE);
    assert_string_equal(err, "The allowed maximum operations in a JSON patch is 10000, got 10001");
    json_decref(d);
    json_decref(ops);
}

static void test_jp_err_buffer(void **state)
{
    (void)state;
    json_t *d = js("{}"), *o = js("[{\"op\":\"frob\",\"path\":\"/a\"}]");
    char err[8];
    memset(err, 'x', sizeof err);
    assert_int_equal(api_json_patch(&d, o, err, sizeof err), KP_EINVAL);
    assert_string_equal(err, "Unexpec");
    assert_int_equal(api_json_patch(&d, o, NULL, 0), KP_EINVAL);
    json_decref(d);
    json_decref(o);
}

/* ---- merge patch --------------------------------------------------------------------- */

static void mp(const char *target, const char *patch, const char *want)
{
    json_t *t = js(target), *p = js(patch);
    api_merge_patch(t, p);
    expect_json(t, want);
    json_decref(t);
    json_decref(p);
}

static void test_merge_patch(void **state)
{
    (void)state;
    /* the examples of RFC 7386 whose target and patch are objects */
    mp("{\"a\":\"b\"}", "{\"a\":\"c\"}", "{\"a\":\"c\"}");
    mp("{\"a\":\"b\"}", "{\"b\":\"c\"}", "{\"a\":\"b\",\"b\":\"c\"}");
    mp("{\"a\":\"b\"}", "{\"a\":null}", "{}");
    mp("{\"a\":\"b\",\"b\":\"c\"}", "{\"a\":null}", "{\"b\":\"c\"}");
    mp("{\"a\":[\"b\"]}", "{\"a\":\"c\"}", "{\"a\":\"c\"}");
    mp("{\"a\":\"c\"}", "{\"a\":[\"b\"]}", "{\"a\":[\"b\"]}");
    mp("{\"a\":{\"b\":\"c\"}}", "{\"a\":{\"b\":\"d\",\"c\":null}}", "{\"a\":{\"b\":\"d\"}}");
    mp("{\"a\":[{\"b\":\"c\"}]}", "{\"a\":[1]}", "{\"a\":[1]}");
    mp("{\"e\":null}", "{\"a\":1}", "{\"e\":null,\"a\":1}");
    mp("{\"a\":\"foo\"}", "{\"a\":{\"bb\":{\"ccc\":null}}}", "{\"a\":{\"bb\":{}}}");
    mp("{}", "{\"a\":{\"bb\":{\"ccc\":null}}}", "{\"a\":{\"bb\":{}}}");
    /* arrays are values: nulls inside them stay */
    mp("{}", "{\"l\":[null,{\"x\":null}]}", "{\"l\":[null,{\"x\":null}]}");
    /* kubectl label / scale */
    mp("{\"metadata\":{\"labels\":{\"a\":\"1\",\"b\":\"2\"}},\"spec\":{\"replicas\":1}}",
       "{\"metadata\":{\"labels\":{\"a\":null,\"c\":\"3\"}},\"spec\":{\"replicas\":3}}",
       "{\"metadata\":{\"labels\":{\"b\":\"2\",\"c\":\"3\"}},\"spec\":{\"replicas\":3}}");
    /* values are copied out of the patch */
    json_t *t = js("{}"), *p = js("{\"l\":[1]}");
    api_merge_patch(t, p);
    json_array_append_new(json_object_get(t, "l"), json_integer(2));
    expect_json(p, "{\"l\":[1]}");
    json_decref(t);
    json_decref(p);
}

/* ---- strategic merge patch ----------------------------------------------------------- */

typedef struct kind {
    const char *group, *version, *kind;
} kind_t;

static const kind_t DEPLOY = {"apps", "v1", "Deployment"};
static const kind_t POD = {"", "v1", "Pod"};

static const json_t *node_of(void **state, const kind_t *k)
{
    if (!k) return NULL;
    const json_t *n = api_schema_kind(*state, k->group, k->version, k->kind, NULL);
    if (!n) fail_msg("no facts for %s/%s %s", k->group, k->version, k->kind);
    return n;
}

static void smp_ok(void **state, const kind_t *k, const char *target, const char *patch,
                   const char *want)
{
    json_t *t = js(target), *p = js(patch), *pcopy = json_deep_copy(p);
    char err[512] = "x";
    int rc = api_strategic_merge_patch(*state, node_of(state, k), t, p, err, sizeof err);
    if (rc) fail_msg("strategic merge patch %s failed (%d): %s", patch, rc, err);
    assert_string_equal(err, "");
    expect_json(t, want);
    assert_true(json_equal(p, pcopy)); /* the patch is left alone */
    json_decref(t);
    json_decref(p);
    json_decref(pcopy);
}

static void smp_fail(void **state, const kind_t *k, const char *target, const char *patch,
                     int want_rc, const char *want_msg)
{
    json_t *t = js(target), *p = js(patch);
    char err[512] = "";
    int rc = api_strategic_merge_patch(*state, node_of(state, k), t, p, err, sizeof err);
    if (rc != want_rc)
        fail_msg("strategic merge patch %s: rc %d, want %d (%s)", patch, rc, want_rc, err);
    assert_string_equal(err, want_msg);
    json_decref(t);
    json_decref(p);
}

#define DEP2                                                                                       \
    "{\"metadata\":{\"name\":\"web\"},\"spec\":{\"replicas\":2,\"template\":{\"spec\":{"           \
    "\"containers\":[{\"name\":\"a\",\"image\":\"img1\"},{\"name\":\"b\",\"image\":\"img1\"}]}}}}"

static void test_smp_set_image(void **state)
{
    /* kubectl set image deployment/web b=img2 */
    smp_ok(state, &DEPLOY, DEP2,
           "{\"spec\":{\"template\":{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"a\"},"
           "{\"name\":\"b\"}],\"containers\":[{\"image\":\"img2\",\"name\":\"b\"}]}}}}",
           "{\"metadata\":{\"name\":\"web\"},\"spec\":{\"replicas\":2,\"template\":{\"spec\":{"
           "\"containers\":[{\"name\":\"a\",\"image\":\"img1\"},{\"name\":\"b\",\"image\":"
           "\"img2\"}]}}}}");
    /* the order list reorders the live list too */
    smp_ok(state, &DEPLOY, DEP2,
           "{\"spec\":{\"template\":{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"b\"},"
           "{\"name\":\"a\"}],\"containers\":[{\"image\":\"img2\",\"name\":\"a\"}]}}}}",
           "{\"metadata\":{\"name\":\"web\"},\"spec\":{\"replicas\":2,\"template\":{\"spec\":{"
           "\"containers\":[{\"name\":\"b\",\"image\":\"img1\"},{\"name\":\"a\",\"image\":"
           "\"img2\"}]}}}}");
    /* an order list alone (no patch list) */
    smp_ok(state, &DEPLOY, DEP2,
           "{\"spec\":{\"template\":{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"b\"},"
           "{\"name\":\"a\"}]}}}}",
           "{\"metadata\":{\"name\":\"web\"},\"spec\":{\"replicas\":2,\"template\":{\"spec\":{"
           "\"containers\":[{\"name\":\"b\",\"image\":\"img1\"},{\"name\":\"a\",\"image\":"
           "\"img1\"}]}}}}");
}

static void test_smp_containers_add_delete(void **state)
{
    /* a new container with its order (kubectl apply/edit) lands where the order says */
    smp_ok(state, &DEPLOY, DEP2,
           "{\"spec\":{\"template\":{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"a\"},"
           "{\"name\":\"b\"},{\"name\":\"c\"}],\"containers\":[{\"name\":\"c\",\"image\":\"i3\"}]"
           "}}}}",
           "{\"metadata\":{\"name\":\"web\"},\"spec\":{\"replicas\":2,\"template\":{\"spec\":{"
           "\"containers\":[{\"name\":\"a\",\"image\":\"img1\"},{\"name\":\"b\",\"image\":"
           "\"img1\"},{\"name\":\"c\",\"image\":\"i3\"}]}}}}");
    /* without an order list Kubernetes puts patch elements the live list lacks
     * before the live-only ones (mergeSortedSlice) */
    smp_ok(state, &DEPLOY, DEP2,
           "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":"
           "\"i3\"}]}}}}",
           "{\"metadata\":{\"name\":\"web\"},\"spec\":{\"replicas\":2,\"template\":{\"spec\":{"
           "\"containers\":[{\"name\":\"c\",\"image\":\"i3\"},{\"name\":\"a\",\"image\":"
           "\"img1\"},{\"name\":\"b\",\"image\":\"img1\"}]}}}}");
    /* a live-only element standing before a patched one keeps its place */
    smp_ok(state, &DEPLOY, DEP2,
           "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"b\",\"image\":"
           "\"i3\"}]}}}}",
           "{\"metadata\":{\"name\":\"web\"},\"spec\":{\"replicas\":2,\"template\":{\"spec\":{"
           "\"containers\":[{\"name\":\"a\",\"image\":\"img1\"},{\"name\":\"b\",\"image\":"
           "\"i3\"}]}}}}");
    /* delete a container by its key (all elements with that key go) */
    smp_ok(state, &DEPLOY, DEP2,
           "{\"spec\":{\"template\":{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"b\"}],"
           "\"containers\":[{\"$patch\":\"delete\",\"name\":\"a\"}]}}}}",
           "{\"metadata\":{\"name\":\"web\"},\"spec\":{\"replicas\":2,\"template\":{\"spec\":{"
           "\"containers\":[{\"name\":\"b\",\"image\":\"img1\"}]}}}}");
    /* deleting what is not there is no error */
    smp_ok(state, &DEPLOY, DEP2,
           "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"$patch\":\"delete\",\"name\":"
           "\"zz\"}]}}}}",
           DEP2);
}

static void test_smp_env_delete(void **state)
{
    smp_ok(state, &POD,
           "{\"spec\":{\"containers\":[{\"name\":\"a\",\"env\":[{\"name\":\"X\",\"value\":\"1\"},"
           "{\"name\":\"Y\",\"value\":\"2\"},{\"name\":\"Z\",\"value\":\"3\"}]}]}}",
           "{\"spec\":{\"containers\":[{\"name\":\"a\",\"env\":[{\"$patch\":\"delete\",\"name\":"
           "\"Y\"},{\"name\":\"Z\",\"value\":\"4\"}]}]}}",
           "{\"spec\":{\"containers\":[{\"name\":\"a\",\"env\":[{\"name\":\"X\",\"value\":\"1\"},"
           "{\"name\":\"Z\",\"value\":\"4\"}]}]}}");
    /* kubectl set env: nulls inside a merged element delete fields */
    smp_ok(state, &POD,
           "{\"spec\":{\"containers\":[{\"name\":\"a\",\"env\":[{\"name\":\"X\",\"value\":\"1\"}]"
           "}]}}",
           "{\"spec\":{\"containers\":[{\"name\":\"a\",\"env\":[{\"name\":\"X\",\"value\":null,"
           "\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.name\",\"x\":null}}}]}]}}",
           "{\"spec\":{\"containers\":[{\"name\":\"a\",\"env\":[{\"name\":\"X\",\"valueFrom\":"
           "{\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}}]}]}}");
}

static void test_smp_ports(void **state)
{
    const char *pod = "{\"spec\":{\"containers\":[{\"name\":\"a\",\"ports\":[{\"containerPort\":80,"
                      "\"name\":\"http\"},{\"containerPort\":443}]}]}}";
    smp_ok(state, &POD, pod,
           "{\"spec\":{\"containers\":[{\"name\":\"a\",\"ports\":[{\"containerPort\":80,"
           "\"name\":\"web\",\"protocol\":\"TCP\"}]}]}}",
           "{\"spec\":{\"containers\":[{\"name\":\"a\",\"ports\":[{\"containerPort\":80,\"name\":"
           "\"web\",\"protocol\":\"TCP\"},{\"containerPort\":443}]}]}}");
    smp_ok(state, &POD, pod,
           "{\"spec\":{\"containers\":[{\"name\":\"a\",\"ports\":[{\"$patch\":\"delete\","
           "\"containerPort\":80},{\"containerPort\":8080}]}]}}",
           "{\"spec\":{\"containers\":[{\"name\":\"a\",\"ports\":[{\"containerPort\":8080},"
           "{\"containerPort\":443}]}]}}");
    /* a service's ports merge by port */
    kind_t svc = {"", "v1", "Service"};
    smp_ok(state, &svc, "{\"spec\":{\"ports\":[{\"port\":80,\"targetPort\":8080}]}}",
           "{\"spec\":{\"ports\":[{\"port\":80,\"targetPort\":9090}]}}",
           "{\"spec\":{\"ports\":[{\"port\":80,\"targetPort\":9090}]}}");
}

static void test_smp_retain_keys(void **state)
{
    const char *dep = "{\"spec\":{\"strategy\":{\"type\":\"RollingUpdate\",\"rollingUpdate\":"
                      "{\"maxSurge\":\"25%\",\"maxUnavailable\":\"25%\"}}}}";
    smp_ok(state, &DEPLOY, dep,
           "{\"spec\":{\"strategy\":{\"$retainKeys\":[\"type\"],\"type\":\"Recreate\"}}}",
           "{\"spec\":{\"strategy\":{\"type\":\"Recreate\"}}}");
    /* kubectl apply going back: both keys listed, rollingUpdate merged */
    smp_ok(state, &DEPLOY, "{\"spec\":{\"strategy\":{\"type\":\"Recreate\"}}}",
           "{\"spec\":{\"strategy\":{\"$retainKeys\":[\"rollingUpdate\",\"type\"],"
           "\"rollingUpdate\":{\"maxSurge\":1},\"type\":\"RollingUpdate\"}}}",
           "{\"spec\":{\"strategy\":{\"type\":\"RollingUpdate\",\"rollingUpdate\":"
           "{\"maxSurge\":1}}}}");
    /* without the directive the strategy merges */
    smp_ok(state, &DEPLOY, dep, "{\"spec\":{\"strategy\":{\"rollingUpdate\":{\"maxSurge\":1}}}}",
           "{\"spec\":{\"strategy\":{\"type\":\"RollingUpdate\",\"rollingUpdate\":"
           "{\"maxSurge\":1,\"maxUnavailable\":\"25%\"}}}}");
    /* a volume switching source (PodSpec.volumes: merge,retainKeys) */
    smp_ok(state, &POD, "{\"spec\":{\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}}]}}",
           "{\"spec\":{\"volumes\":[{\"$retainKeys\":[\"hostPath\",\"name\"],\"hostPath\":"
           "{\"path\":\"/x\"},\"name\":\"v\"}]}}",
           "{\"spec\":{\"volumes\":[{\"name\":\"v\",\"hostPath\":{\"path\":\"/x\"}}]}}");
    /* errors: a key of the patch not listed, a list that is not a list */
    smp_fail(state, &DEPLOY, dep,
             "{\"spec\":{\"strategy\":{\"$retainKeys\":[\"type\"],\"type\":\"Recreate\","
             "\"rollingUpdate\":{}}}}",
             KP_EINVAL, "invalid patch format of retainKeys");
    smp_fail(state, &DEPLOY, dep,
             "{\"spec\":{\"strategy\":{\"$retainKeys\":\"type\",\"type\":\"Recreate\"}}}",
             KP_EINVAL, "invalid patch format of retainKeys");
    /* nulls need not be listed */
    smp_ok(state, &DEPLOY, dep,
           "{\"spec\":{\"strategy\":{\"$retainKeys\":[\"type\"],\"type\":\"Recreate\","
           "\"rollingUpdate\":null}}}",
           "{\"spec\":{\"strategy\":{\"type\":\"Recreate\"}}}");
}

static void test_smp_finalizers(void **state)
{
    const char *obj = "{\"metadata\":{\"finalizers\":[\"a\",\"b\"]}}";
    smp_ok(state, &POD, obj, "{\"metadata\":{\"finalizers\":[\"b\",\"c\"]}}",
           "{\"metadata\":{\"finalizers\":[\"a\",\"b\",\"c\"]}}");
    smp_ok(state, &POD, obj,
           "{\"metadata\":{\"$deleteFromPrimitiveList/finalizers\":[\"a\",\"z\"]}}",
           "{\"metadata\":{\"finalizers\":[\"b\"]}}");
    /* kubectl's computed patch: additions, deletions and the order together */
    smp_ok(state, &POD, obj,
           "{\"metadata\":{\"$setElementOrder/finalizers\":[\"c\",\"b\"],"
           "\"$deleteFromPrimitiveList/finalizers\":[\"a\"],\"finalizers\":[\"c\"]}}",
           "{\"metadata\":{\"finalizers\":[\"c\",\"b\"]}}");
    /* patch values go in patch order, live-only ones keep their live place */
    smp_ok(state, &POD, "{\"metadata\":{\"finalizers\":[\"a\",\"b\",\"c\"]}}",
           "{\"metadata\":{\"finalizers\":[\"c\",\"a\"]}}",
           "{\"metadata\":{\"finalizers\":[\"b\",\"c\",\"a\"]}}");
    /* a list the object lacks; a deletion from a missing list */
    smp_ok(state, &POD, "{\"metadata\":{}}",
           "{\"metadata\":{\"finalizers\":[\"x\",\"x\"],"
           "\"$deleteFromPrimitiveList/labels2\":[\"y\"]}}",
           "{\"metadata\":{\"finalizers\":[\"x\"]}}");
    /* an empty patch list changes nothing; null removes the list */
    smp_ok(state, &POD, obj, "{\"metadata\":{\"finalizers\":[]}}", obj);
    smp_ok(state, &POD, obj, "{\"metadata\":{\"finalizers\":null}}", "{\"metadata\":{}}");
    smp_fail(state, &POD, obj, "{\"metadata\":{\"$deleteFromPrimitiveList/finalizers\":\"a\"}}",
             KP_EINVAL, "invalid patch format of primitive list");
}

static void test_smp_atomic_lists(void **state)
{
    smp_ok(state, &POD,
           "{\"spec\":{\"tolerations\":[{\"key\":\"a\",\"operator\":\"Exists\"}],\"containers\":"
           "[{\"name\":\"c\",\"args\":[\"x\",\"y\"]}]}}",
           "{\"spec\":{\"tolerations\":[{\"key\":\"b\",\"operator\":\"Exists\",\"x\":null}],"
           "\"containers\":[{\"name\":\"c\",\"args\":[\"y\"]}]}}",
           "{\"spec\":{\"tolerations\":[{\"key\":\"b\",\"operator\":\"Exists\"}],\"containers\":"
           "[{\"name\":\"c\",\"args\":[\"y\"]}]}}");
    /* kubectl taint replaces the node's taints */
    kind_t node = {"", "v1", "Node"};
    smp_ok(state, &node, "{\"spec\":{\"taints\":[{\"key\":\"a\",\"effect\":\"NoSchedule\"}]}}",
           "{\"spec\":{\"taints\":[]}}", "{\"spec\":{\"taints\":[]}}");
}

static void test_smp_conditions(void **state)
{
    const char *pod = "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"},"
                      "{\"type\":\"PodScheduled\",\"status\":\"True\"}]}}";
    smp_ok(state, &POD, pod,
           "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
           "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},"
           "{\"type\":\"PodScheduled\",\"status\":\"True\"}]}}");
    smp_ok(state, &POD, pod,
           "{\"status\":{\"$setElementOrder/conditions\":[{\"type\":\"Ready\"},{\"type\":"
           "\"PodScheduled\"},{\"type\":\"Initialized\"}],\"conditions\":[{\"type\":"
           "\"PodScheduled\",\"status\":\"False\"},{\"type\":\"Initialized\",\"status\":\"True\"}"
           "]}}",
           "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"},"
           "{\"type\":\"PodScheduled\",\"status\":\"False\"},{\"type\":\"Initialized\","
           "\"status\":\"True\"}]}}");
    kind_t dep = DEPLOY;
    smp_ok(state, &dep,
           "{\"status\":{\"conditions\":[{\"type\":\"Available\",\"status\":\"False\"}]}}",
           "{\"status\":{\"conditions\":[{\"type\":\"Available\",\"status\":\"True\",\"reason\":"
           "\"MinimumReplicasAvailable\"}],\"replicas\":2}}",
           "{\"status\":{\"conditions\":[{\"type\":\"Available\",\"status\":\"True\",\"reason\":"
           "\"MinimumReplicasAvailable\"}],\"replicas\":2}}");
    /* owner references merge by uid */
    smp_ok(state, &POD, "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"1\",\"name\":\"rs\"}]}}",
           "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"1\",\"controller\":true},{\"uid\":"
           "\"2\",\"name\":\"x\"}]}}",
           "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"1\",\"name\":\"rs\",\"controller\":"
           "true},{\"uid\":\"2\",\"name\":\"x\"}]}}");
}

static void test_smp_patch_replace(void **state)
{
    /* on a map: the rest of the patch map replaces it */
    smp_ok(state, &POD,
           "{\"spec\":{\"securityContext\":{\"runAsUser\":1,\"fsGroup\":2},\"hostname\":\"h\"}}",
           "{\"spec\":{\"securityContext\":{\"$patch\":\"replace\",\"runAsGroup\":3,"
           "\"x\":null}}}",
           "{\"spec\":{\"securityContext\":{\"runAsGroup\":3},\"hostname\":\"h\"}}");
    /* on a map: delete leaves it empty, as Kubernetes does */
    smp_ok(state, &POD, "{\"metadata\":{\"labels\":{\"a\":\"1\"},\"name\":\"p\"}}",
           "{\"metadata\":{\"labels\":{\"$patch\":\"delete\"}}}",
           "{\"metadata\":{\"labels\":{},\"name\":\"p\"}}");
    /* on a list: the other elements are the list */
    smp_ok(state, &DEPLOY, DEP2,
           "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"z\",\"image\":\"z\"},"
           "{\"$patch\":\"replace\"}]}}}}",
           "{\"metadata\":{\"name\":\"web\"},\"spec\":{\"replicas\":2,\"template\":{\"spec\":{"
           "\"containers\":[{\"name\":\"z\",\"image\":\"z\"}]}}}}");
    /* the whole object (a ControllerRevision's data does this for the template) */
    smp_ok(state, &DEPLOY, DEP2,
           "{\"spec\":{\"template\":{\"$patch\":\"replace\",\"spec\":{\"containers\":[{\"name\":"
           "\"n\"}]}}}}",
           "{\"metadata\":{\"name\":\"web\"},\"spec\":{\"replicas\":2,\"template\":{\"spec\":{"
           "\"containers\":[{\"name\":\"n\"}]}}}}");
    smp_ok(state, &POD, "{\"a\":1,\"b\":2}", "{\"$patch\":\"replace\",\"c\":3}", "{\"c\":3}");
    /* PodDisruptionBudget.spec.selector has the strategy "replace" */
    kind_t pdb = {"policy", "v1", "PodDisruptionBudget"};
    smp_ok(state, &pdb,
           "{\"spec\":{\"minAvailable\":1,\"selector\":{\"matchLabels\":{\"a\":\"1\"}}}}",
           "{\"spec\":{\"selector\":{\"matchLabels\":{\"b\":\"2\"}}}}",
           "{\"spec\":{\"minAvailable\":1,\"selector\":{\"matchLabels\":{\"b\":\"2\"}}}}");
}

static void test_smp_nulls_and_scalars(void **state)
{
    smp_ok(state, &DEPLOY,
           "{\"metadata\":{\"labels\":{\"a\":\"1\",\"b\":\"2\"}},\"spec\":{\"paused\":true,"
           "\"replicas\":1}}",
           "{\"metadata\":{\"labels\":{\"a\":null,\"zz\":null}},\"spec\":{\"paused\":null,"
           "\"replicas\":4,\"nope\":null}}",
           "{\"metadata\":{\"labels\":{\"b\":\"2\"}},\"spec\":{\"replicas\":4}}");
    /* kubectl cordon / uncordon */
    kind_t node = {"", "v1", "Node"};
    smp_ok(state, &node, "{\"spec\":{}}", "{\"spec\":{\"unschedulable\":true}}",
           "{\"spec\":{\"unschedulable\":true}}");
    smp_ok(state, &node, "{\"spec\":{\"unschedulable\":true}}",
           "{\"spec\":{\"unschedulable\":null}}", "{\"spec\":{}}");
    /* a value of another type replaces; a new map loses its nulls */
    smp_ok(state, &DEPLOY, "{\"spec\":{\"template\":\"x\"}}",
           "{\"spec\":{\"template\":{\"metadata\":{\"labels\":{\"a\":\"1\",\"b\":null}}}}}",
           "{\"spec\":{\"template\":{\"metadata\":{\"labels\":{\"a\":\"1\"}}}}}");
}

static void test_smp_directives_stripped(void **state)
{
    /* values the object lacks still have their directives applied and removed */
    smp_ok(state, &DEPLOY, "{\"spec\":{}}",
           "{\"spec\":{\"strategy\":{\"$retainKeys\":[\"type\"],\"type\":\"Recreate\"},"
           "\"template\":{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"b\"},{\"name\":"
           "\"a\"}],\"containers\":[{\"name\":\"b\",\"env\":[{\"name\":\"x\",\"$patch\":"
           "\"delete\"},{\"name\":\"y\"}]},{\"name\":\"a\",\"resources\":{\"$patch\":\"replace\","
           "\"limits\":{\"cpu\":\"1\"}}}],\"tolerations\":[{\"$patch\":\"delete\",\"key\":\"t\"},"
           "{\"key\":\"u\"},{\"$patch\":\"replace\"}],\"securityContext\":{\"$patch\":"
           "\"delete\"}}}}}",
           "{\"spec\":{\"strategy\":{\"type\":\"Recreate\"},\"template\":{\"spec\":{\"containers\":"
           "[{\"name\":\"b\",\"env\":[{\"name\":\"y\"}]},{\"name\":\"a\",\"resources\":"
           "{\"limits\":{\"cpu\":\"1\"}}}],\"tolerations\":[{\"key\":\"u\"}],"
           "\"securityContext\":{}}}}}");
}

static void test_smp_no_schema(void **state)
{
    /* a kind without facts: maps merge, lists are replaced, directives still apply */
    smp_ok(state, NULL, DEP2,
           "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"b\",\"image\":"
           "\"img2\"}]}},\"replicas\":null,\"extra\":{\"$patch\":\"replace\",\"k\":1}}}",
           "{\"metadata\":{\"name\":\"web\"},\"spec\":{\"template\":{\"spec\":{\"containers\":"
           "[{\"name\":\"b\",\"image\":\"img2\"}]}},\"extra\":{\"k\":1}}}");
    /* unknown fields of a known kind behave the same */
    smp_ok(state, &POD, "{\"spec\":{\"frob\":{\"l\":[1,2],\"m\":{\"a\":1}}}}",
           "{\"spec\":{\"frob\":{\"l\":[3],\"m\":{\"b\":2}}}}",
           "{\"spec\":{\"frob\":{\"l\":[3],\"m\":{\"a\":1,\"b\":2}}}}");
}

static void test_smp_delete_list_on_atomic(void **state)
{
    /* a delete list removes its values whatever the field's strategy */
    smp_ok(state, &POD,
           "{\"spec\":{\"containers\":[{\"name\":\"c\",\"args\":[\"x\",\"y\",\"x\"]}]}}",
           "{\"spec\":{\"containers\":[{\"name\":\"c\",\"$deleteFromPrimitiveList/args\":"
           "[\"x\"]}]}}",
           "{\"spec\":{\"containers\":[{\"name\":\"c\",\"args\":[\"y\"]}]}}");
}

static void test_smp_errors(void **state)
{
    const char *pod = "{\"metadata\":{\"finalizers\":[\"a\"]},\"spec\":{\"containers\":"
                      "[{\"name\":\"a\",\"image\":\"i\"}]}}";
    smp_fail(state, &POD, pod, "{\"metadata\":{\"finalizers\":[[\"b\"]]}}", KP_ECONFLICT,
             "list element types are not identical: string and array");
    smp_fail(state, &POD, "{\"metadata\":{\"finalizers\":[]}}",
             "{\"metadata\":{\"finalizers\":[[\"b\"]]}}", KP_ECONFLICT,
             "lists of lists are not supported");
    smp_fail(state, &POD, "{\"metadata\":{}}", "{\"metadata\":{\"finalizers\":[[\"b\"]]}}",
             KP_ECONFLICT, "lists of lists are not supported");
    smp_fail(state, &POD, pod, "{\"metadata\":{\"finalizers\":[1]}}", KP_ECONFLICT,
             "list element types are not identical: string and number");
    smp_fail(state, &POD, pod, "{\"spec\":{\"containers\":[{\"image\":\"x\"}]}}", KP_EINVAL,
             "map: {\"image\":\"x\"} does not contain declared merge key: name");
    smp_fail(state, &POD, pod,
             "{\"spec\":{\"containers\":[{\"$patch\":\"delete\",\"image\":\"x\"}]}}", KP_EINVAL,
             "map: {\"$patch\":\"delete\",\"image\":\"x\"} does not contain declared merge key: "
             "name");
    smp_fail(state, &POD, "{\"spec\":{\"containers\":[{\"image\":\"i\"}]}}",
             "{\"spec\":{\"containers\":[{\"name\":\"b\"}]}}", KP_ECONFLICT,
             "map: {\"image\":\"i\"} does not contain declared merge key: name");
    smp_fail(state, &POD, pod, "{\"spec\":{\"containers\":[{\"$patch\":\"merge\"}]}}", KP_EINVAL,
             "merging lists cannot yet be specified in the patch");
    smp_fail(state, &POD, pod, "{\"spec\":{\"containers\":[{\"$patch\":\"frob\"}]}}", KP_EINVAL,
             "unknown patch type: \"frob\" in map: {\"$patch\":\"frob\"}");
    smp_fail(state, &POD, pod, "{\"spec\":{\"$patch\":\"merge\"}}", KP_EINVAL,
             "unknown patch type: \"merge\" in map: {\"$patch\":\"merge\"}");
    smp_fail(state, &POD, pod, "{\"spec\":{\"$patch\":1}}", KP_EINVAL,
             "unknown patch type: 1 in map: {\"$patch\":1}");
    smp_fail(state, &POD, pod, "{\"spec\":{\"$setElementOrder/containers\":{}}}", KP_EINVAL,
             "invalid patch format of setElementOrder list");
    smp_fail(state, &POD, pod, "{\"spec\":{\"$setElementOrder/\":[]}}", KP_EINVAL,
             "invalid patch format of setElementOrder list");
    smp_fail(state, &POD, pod,
             "{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"a\"}],\"containers\":"
             "{\"name\":\"a\"}}}",
             KP_EINVAL, "invalid patch format of setElementOrder list");
    smp_fail(state, &POD, pod,
             "{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"a\"},{\"name\":\"b\"}],"
             "\"containers\":[{\"name\":\"b\"},{\"name\":\"a\"}]}}",
             KP_EINVAL,
             "The order in patch list: [{\"name\":\"b\"},{\"name\":\"a\"}] doesn't match "
             "$setElementOrder list: [{\"name\":\"a\"},{\"name\":\"b\"}]");
    smp_fail(state, &POD, pod,
             "{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"a\"}],\"containers\":"
             "[{\"name\":\"c\"}]}}",
             KP_EINVAL,
             "The order in patch list: [{\"name\":\"c\"}] doesn't match $setElementOrder list: "
             "[{\"name\":\"a\"}]");
    smp_fail(state, &POD, pod, "{\"spec\":{\"$setElementOrder/containers\":[{\"image\":\"a\"}]}}",
             KP_EINVAL, "map: {\"image\":\"a\"} does not contain declared merge key: name");
    smp_fail(state, &POD, "{\"spec\":{\"containers\":\"x\"}}",
             "{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"a\"}]}}", KP_ECONFLICT,
             "containers: $setElementOrder names a field that holds a string, not a list");
    json_t *t = js("{}"), *arr = js("[]");
    char err[128] = "x";
    assert_int_equal(api_strategic_merge_patch(*state, NULL, t, arr, err, sizeof err), KP_EINVAL);
    assert_string_equal(err, "a strategic merge patch must be a JSON object");
    json_decref(t);
    json_decref(arr);
}

/* ---- allocation failures ------------------------------------------------------------- */

/* jansson's allocator, failing its Nth call while armed (tests run one at a
 * time in this process). */
static long alloc_countdown = -1;

static void *failing_malloc(size_t n)
{
    if (alloc_countdown == 0) return NULL;
    if (alloc_countdown > 0) alloc_countdown--;
    return malloc(n);
}

/* Run `fn` with the Nth jansson allocation failing, for every N until a run
 * needs no more; each run must succeed with `want` or fail with KP_ENOMEM,
 * and ASan checks that nothing leaks on the way out. */
typedef int (*patch_fn)(void **state, json_t **doc, const json_t *patch);

static void torture(void **state, patch_fn fn, const char *doc, const char *patch, const char *want)
{
    json_set_alloc_funcs(failing_malloc, free);
    int finished = 0, failures = 0;
    for (long n = 0; !finished; n++) {
        json_t *d = js(doc), *p = js(patch);
        alloc_countdown = n;
        int rc = fn(state, &d, p);
        finished = alloc_countdown > 0; /* the failure point was never reached */
        alloc_countdown = -1;
        if (rc) {
            assert_int_equal(rc, KP_ENOMEM);
            failures++;
        } else {
            expect_json(d, want); /* no failure may be swallowed */
        }
        json_decref(d);
        json_decref(p);
    }
    json_set_alloc_funcs(malloc, free);
    assert_true(failures > 10);
}

static int run_smp(void **state, json_t **doc, const json_t *patch)
{
    char err[256];
    return api_strategic_merge_patch(*state, node_of(state, &DEPLOY), *doc, patch, err, sizeof err);
}

static int run_jp(void **state, json_t **doc, const json_t *patch)
{
    (void)state;
    char err[256];
    return api_json_patch(doc, patch, err, sizeof err);
}

/* Long keyed lists merge in linear time: 20,000 env entries patched
 * against 20,000 others (took 43 s of CPU with scans; 0.8 s under ASan
 * now). The patch's new elements come first (the live list lacks them),
 * then the live order, with the updated e2 in its place. */
static void test_smp_long_lists(void **state)
{
    enum { N = 20000 };
    json_t *live = json_array(), *mine = json_array();
    char name[32];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "e%d", i);
        json_array_append_new(live, json_pack("{s:s, s:s}", "name", name, "value", "v"));
        snprintf(name, sizeof name, "f%d", i);
        json_array_append_new(mine, json_pack("{s:s, s:s}", "name", name, "value", "w"));
    }
    /* one deletion and one update of a live entry as well */
    json_array_append_new(mine, json_pack("{s:s, s:s}", "name", "e1", "$patch", "delete"));
    json_array_append_new(mine, json_pack("{s:s, s:s}", "name", "e2", "value", "x"));
    json_t *t = json_pack("{s:{s:{s:{s:[{s:s, s:o}]}}}}", "spec", "template", "spec", "containers",
                          "name", "c", "env", live);
    json_t *p = json_pack("{s:{s:{s:{s:[{s:s, s:o}]}}}}", "spec", "template", "spec", "containers",
                          "name", "c", "env", mine);
    char err[256];
    clock_t t0 = clock();
    int rc = api_strategic_merge_patch(*state, node_of(state, &DEPLOY), t, p, err, sizeof err);
    double cpu_ms = (double)(clock() - t0) * 1000.0 / CLOCKS_PER_SEC;
    if (rc) fail_msg("rc %d: %s", rc, err);
    print_message("%d against %d keyed entries: %.1f ms of CPU\n", N, N, cpu_ms);
    const json_t *env = json_object_get(
        json_array_get(
            json_object_get(json_object_get(json_object_get(json_object_get(t, "spec"), "template"),
                                            "spec"),
                            "containers"),
            0),
        "env");
    assert_int_equal(json_array_size(env), 2 * N - 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(env, 0), "name")), "f0");
    assert_string_equal(json_string_value(json_object_get(json_array_get(env, N - 1), "name")),
                        "f19999");
    assert_string_equal(json_string_value(json_object_get(json_array_get(env, N), "name")), "e0");
    assert_string_equal(json_string_value(json_object_get(json_array_get(env, N + 1), "name")),
                        "e2");
    assert_string_equal(json_string_value(json_object_get(json_array_get(env, N + 1), "value")),
                        "x");
    assert_string_equal(json_string_value(json_object_get(json_array_get(env, N + 2), "name")),
                        "e3");
    assert_true(cpu_ms < 5000.0); /* scans: ~400 times that */
    json_decref(t);
    json_decref(p);
}

/* The same within limits: the counting paths fail as cleanly. */
static int run_jp_limited(void **state, json_t **doc, const json_t *patch)
{
    (void)state;
    char err[256];
    static const api_patch_limits_t lim = {.copy_max = 1000, .result_max = 1000, .depth_max = 10};
    return api_json_patch_limited(doc, patch, &lim, err, sizeof err);
}

static void test_alloc_failures(void **state)
{
    torture(
        state, run_smp,
        "{\"metadata\":{\"finalizers\":[\"a\",\"b\"],\"labels\":{\"x\":\"1\"}},\"spec\":{"
        "\"strategy\":{\"type\":\"RollingUpdate\",\"rollingUpdate\":{\"maxSurge\":1}},"
        "\"template\":{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"1\",\"env\":"
        "[{\"name\":\"E\"}]},{\"name\":\"b\",\"image\":\"1\"}]}}}}",
        "{\"metadata\":{\"$setElementOrder/finalizers\":[\"c\",\"b\"],"
        "\"$deleteFromPrimitiveList/finalizers\":[\"a\"],\"finalizers\":[\"c\"],\"labels\":"
        "{\"x\":null,\"y\":\"2\"}},\"spec\":{\"strategy\":{\"$retainKeys\":[\"type\"],"
        "\"type\":\"Recreate\"},\"template\":{\"spec\":{\"$setElementOrder/containers\":"
        "[{\"name\":\"b\"},{\"name\":\"c\"}],\"containers\":[{\"name\":\"a\",\"$patch\":"
        "\"delete\"},{\"name\":\"b\",\"image\":\"2\"},{\"name\":\"c\",\"env\":[{\"name\":\"F\","
        "\"value\":\"v\"}]}],\"tolerations\":[{\"key\":\"t\"}]}}}}",
        "{\"metadata\":{\"finalizers\":[\"c\",\"b\"],\"labels\":{\"y\":\"2\"}},\"spec\":{"
        "\"strategy\":{\"type\":\"Recreate\"},\"template\":{\"spec\":{\"containers\":[{\"name\":"
        "\"b\",\"image\":\"2\"},{\"name\":\"c\",\"env\":[{\"name\":\"F\",\"value\":\"v\"}]}],"
        "\"tolerations\":[{\"key\":\"t\"}]}}}}");
    torture(state, run_jp, "{\"a\":{\"b\":[1,2]},\"c\":\"x\"}",
            "[{\"op\":\"add\",\"path\":\"/a/b/1\",\"value\":{\"k\":[1]}},"
            "{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/d\"},"
            "{\"op\":\"move\",\"from\":\"/c\",\"path\":\"/a/c~1d\"},"
            "{\"op\":\"replace\",\"path\":\"/a/b/0\",\"value\":\"z\"},"
            "{\"op\":\"remove\",\"path\":\"/d/b/2\"},"
            "{\"op\":\"test\",\"path\":\"/d/b\",\"value\":[1,{\"k\":[1]}]}]",
            "{\"a\":{\"b\":[\"z\",{\"k\":[1]},2],\"c/d\":\"x\"},\"d\":{\"b\":[1,{\"k\":[1]}]}}");
    torture(state, run_jp_limited, "{\"a\":{\"b\":[1,2]},\"c\":\"x\"}",
            "[{\"op\":\"add\",\"path\":\"/a/b/1\",\"value\":{\"k\":[1]}},"
            "{\"op\":\"add\",\"path\":\"/e\",\"value\":1},"
            "{\"op\":\"add\",\"path\":\"/e\",\"value\":2},"
            "{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/d\"},"
            "{\"op\":\"move\",\"from\":\"/c\",\"path\":\"/a/c~1d\"},"
            "{\"op\":\"replace\",\"path\":\"/a/b/0\",\"value\":\"z\"},"
            "{\"op\":\"remove\",\"path\":\"/d/b/2\"}]",
            "{\"a\":{\"b\":[\"z\",{\"k\":[1]},2],\"c/d\":\"x\"},\"d\":{\"b\":[1,{\"k\":[1]}]},"
            "\"e\":2}");
}

static int group_setup(void **state)
{
    api_schema_t *s;
    if (api_schema_load(&s)) return -1;
    *state = s;
    return 0;
}

static int group_teardown(void **state)
{
    api_schema_free(*state);
    return 0;
}

/* ---- JSON patch budgets ------------------------------------------------------------- */

static const api_patch_limits_t k8s_limits = {
    .copy_max = API_JSON_PATCH_COPY_MAX, .result_max = 3u << 20, .depth_max = 100};

static int jp_lim(json_t **d, const char *ops, const api_patch_limits_t *lim, char *err,
                  size_t errlen)
{
    json_t *o = js(ops);
    int rc = api_json_patch_limited(d, o, lim, err, errlen);
    json_decref(o);
    return rc;
}

/* api_json_size: the compact text's length (Go's escapes), cut off past the
 * limit, depth reported. */
static void test_jp_size(void **state)
{
    (void)state;
    const char *texts[] = {"{}", "[]", "null", "true", "false", "-12345", "0.5",
                           "{\"a\":[1,2,{\"b\":\"c\\\"d\\n\"}],\"e\":{}}", "\"\"",
                           "[[],[[]],{\"x\":null}]"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        json_t *v = js(texts[i]);
        char *c = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        int deep = 1;
        assert_int_equal(api_json_size(v, 1000, 100, &deep), strlen(c));
        assert_int_equal(deep, 0);
        free(c);
        json_decref(v);
    }
    /* Go writes <, > and & as \u003c and the other control bytes as \u00XX */
    json_t *v = js("\"<&>\\u0001\"");
    assert_int_equal(api_json_size(v, 1000, 100, NULL), 2 + 4 * 6);
    json_decref(v);
    /* cut off: limit + 1, whatever the real size */
    v = js("{\"a\":\"0123456789\",\"b\":[1,2,3,4,5,6,7,8,9]}");
    assert_int_equal(api_json_size(v, 10, 100, NULL), 11);
    assert_int_equal(api_json_size(v, 0, 100, NULL), 1);
    /* depth: v is level 1, "b" level 2 */
    int deep = 0;
    api_json_size(v, 1000, 2, &deep);
    assert_int_equal(deep, 0);
    api_json_size(v, 1000, 1, &deep);
    assert_int_equal(deep, 1);
    json_decref(v);
}

/* Copies count against the budget before they are made, with json-patch's
 * message; what was copied before stays counted. */
static void test_jp_copy_budget(void **state)
{
    (void)state;
    /* "x" is 12 bytes of JSON: "0123456789" with its quotes */
    api_patch_limits_t lim = {.copy_max = 30, .result_max = 1000, .depth_max = 10};
    char err[256];
    json_t *d = js("{\"x\":\"0123456789\",\"l\":[]}");
    int rc = jp_lim(&d,
                    "[{\"op\":\"copy\",\"from\":\"/x\",\"path\":\"/l/-\"},"
                    "{\"op\":\"copy\",\"from\":\"/x\",\"path\":\"/l/-\"}]",
                    &lim, err, sizeof err);
    assert_int_equal(rc, 0);
    expect_json(d, "{\"x\":\"0123456789\",\"l\":[\"0123456789\",\"0123456789\"]}");
    json_decref(d);
    d = js("{\"x\":\"0123456789\",\"l\":[]}");
    rc = jp_lim(&d,
                "[{\"op\":\"copy\",\"from\":\"/x\",\"path\":\"/l/-\"},"
                "{\"op\":\"copy\",\"from\":\"/x\",\"path\":\"/l/-\"},"
                "{\"op\":\"copy\",\"from\":\"/x\",\"path\":\"/l/-\"}]",
                &lim, err, sizeof err);
    assert_int_equal(rc, KP_ECONFLICT);
    assert_string_equal(err, "Unable to complete the copy, the accumulated size increase of "
                             "copy is 31, exceeding the limit 30");
    /* the third copy was never made */
    assert_int_equal(json_array_size(json_object_get(d, "l")), 2);
    json_decref(d);
    /* removing copies gives nothing back: the budget is of copies made */
    d = js("{\"x\":\"0123456789\"}");
    rc = jp_lim(&d,
                "[{\"op\":\"copy\",\"from\":\"/x\",\"path\":\"/y\"},"
                "{\"op\":\"remove\",\"path\":\"/y\"},"
                "{\"op\":\"copy\",\"from\":\"/x\",\"path\":\"/y\"},"
                "{\"op\":\"remove\",\"path\":\"/y\"},"
                "{\"op\":\"copy\",\"from\":\"/x\",\"path\":\"/y\"}]",
                &lim, err, sizeof err);
    assert_int_equal(rc, KP_ECONFLICT);
    json_decref(d);
}

/* The bomb: each copy of the root doubles the document. 60 ops would make
 * 2^60 copies; the budget stops it after a few MB, fast. */
static void test_jp_copy_bomb(void **state)
{
    (void)state;
    char ops[60 * 64 + 8];
    size_t n = 0;
    n += (size_t)snprintf(ops + n, sizeof ops - n, "[");
    for (int i = 0; i < 60; i++)
        n += (size_t)snprintf(ops + n, sizeof ops - n,
                              "%s{\"op\":\"copy\",\"from\":\"\",\"path\":\"/x%d\"}",
                              i ? "," : "", i);
    snprintf(ops + n, sizeof ops - n, "]");
    /* and copies of a member into itself */
    char ops2[60 * 128 + 8];
    n = 0;
    n += (size_t)snprintf(ops2 + n, sizeof ops2 - n, "[");
    for (int i = 0; i < 60; i++)
        n += (size_t)snprintf(ops2 + n, sizeof ops2 - n,
                              "%s{\"op\":\"copy\",\"from\":\"/data\",\"path\":\"/data/x%d\"}",
                              i ? "," : "", i);
    snprintf(ops2 + n, sizeof ops2 - n, "]");
    const char *bombs[] = {ops, ops2};
    for (int b = 0; b < 2; b++) {
        json_t *d = js("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
                       "{\"name\":\"cpatch\",\"namespace\":\"default\"},\"data\":"
                       "{\"a\":\"0123456789abcdef\"},\"l\":[]}");
        char err[256];
        clock_t t0 = clock();
        int rc = jp_lim(&d, bombs[b], &k8s_limits, err, sizeof err);
        double cpu_ms = (double)(clock() - t0) * 1000.0 / CLOCKS_PER_SEC;
        if (rc != KP_ECONFLICT && rc != KP_ETOOLARGE) fail_msg("bomb %d: rc %d (%s)", b, rc, err);
        /* whatever stopped it, the document never passed the limits */
        size_t size = api_json_size(d, SIZE_MAX - 1, 1000, NULL);
        print_message("bomb %d: %s; %.1f ms of CPU, document left at %zu bytes\n", b, err, cpu_ms,
                      size);
        assert_true(size <= (3u << 20) + API_JSON_PATCH_COPY_MAX);
        /* ~70 ms optimized, ~350 ms under ASan: the bound leaves room for load */
        assert_true(cpu_ms < 2000.0);
        json_decref(d);
    }
}

/* The result is counted as it grows: adds and replaces are priced before
 * their value is copied out of the patch; removed and replaced values give
 * their bytes back; a move changes only the key. */
static void test_jp_result_limit(void **state)
{
    (void)state;
    api_patch_limits_t lim = {.copy_max = 1000, .result_max = 40, .depth_max = 10};
    char err[256];
    /* {"a":"0123456789"} is 18 bytes; each add of "b..." adds 17 */
    json_t *d = js("{\"a\":\"0123456789\"}");
    int rc = jp_lim(&d, "[{\"op\":\"add\",\"path\":\"/b\",\"value\":\"0123456789\"}]", &lim,
                    err, sizeof err);
    assert_int_equal(rc, 0);
    rc = jp_lim(&d, "[{\"op\":\"add\",\"path\":\"/c\",\"value\":\"0123456789\"}]", &lim,
                err, sizeof err);
    assert_int_equal(rc, KP_ETOOLARGE);
    assert_string_equal(err, "Request entity too large: limit is 40");
    expect_json(d, "{\"a\":\"0123456789\",\"b\":\"0123456789\"}");
    /* replace and remove give bytes back, so these all fit */
    rc = jp_lim(&d,
                "[{\"op\":\"replace\",\"path\":\"/a\",\"value\":\"9876543210\"},"
                "{\"op\":\"replace\",\"path\":\"/a\",\"value\":\"0123456789\"},"
                "{\"op\":\"remove\",\"path\":\"/b\"},"
                "{\"op\":\"add\",\"path\":\"/c\",\"value\":\"0123456789\"},"
                "{\"op\":\"add\",\"path\":\"/c\",\"value\":\"0123456789\"},"
                "{\"op\":\"move\",\"from\":\"/c\",\"path\":\"/d\"},"
                "{\"op\":\"move\",\"from\":\"/d\",\"path\":\"/c\"}]",
                &lim, err, sizeof err);
    if (rc) fail_msg("rc %d: %s", rc, err);
    expect_json(d, "{\"a\":\"0123456789\",\"c\":\"0123456789\"}");
    /* a move to a longer key is counted */
    rc = jp_lim(&d, "[{\"op\":\"move\",\"from\":\"/c\",\"path\":\"/cccccccccccc\"}]", &lim,
                err, sizeof err);
    assert_int_equal(rc, KP_ETOOLARGE);
    json_decref(d);
    /* a copy is checked against the result's room too */
    d = js("{\"a\":\"0123456789\",\"b\":\"0123456789\"}");
    rc = jp_lim(&d, "[{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/c\"}]", &lim, err,
                sizeof err);
    assert_int_equal(rc, KP_ETOOLARGE);
    json_decref(d);
}

/* Nesting: an added or copied value is refused before it is placed deeper
 * than depth_max; a move that nests deeper is refused at the end. */
static void test_jp_depth_limit(void **state)
{
    (void)state;
    api_patch_limits_t lim = {.copy_max = 1000, .result_max = 1000, .depth_max = 3};
    char err[256];
    json_t *d = js("{\"a\":{\"b\":{}}}"); /* 3 levels */
    int rc = jp_lim(&d, "[{\"op\":\"add\",\"path\":\"/a/b/c\",\"value\":1}]", &lim, err,
                    sizeof err);
    assert_int_equal(rc, 0);
    rc = jp_lim(&d, "[{\"op\":\"add\",\"path\":\"/a/b/d\",\"value\":[]}]", &lim, err,
                sizeof err);
    assert_int_equal(rc, KP_EINVAL);
    assert_string_equal(err, "the patched object is nested deeper than 3 levels");
    rc = jp_lim(&d, "[{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/a/b/e\"}]", &lim, err,
                sizeof err);
    assert_int_equal(rc, KP_EINVAL);
    expect_json(d, "{\"a\":{\"b\":{\"c\":1}}}");
    json_decref(d);
    d = js("{\"a\":{\"b\":{}},\"x\":{\"y\":{}}}");
    rc = jp_lim(&d, "[{\"op\":\"move\",\"from\":\"/x\",\"path\":\"/a/b/x\"}]", &lim, err,
                sizeof err);
    assert_int_equal(rc, KP_EINVAL);
    json_decref(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jp_add),
        cmocka_unit_test(test_jp_remove_replace),
        cmocka_unit_test(test_jp_move_copy_test),
        cmocka_unit_test(test_jp_values_are_copies),
        cmocka_unit_test(test_jp_size),
        cmocka_unit_test(test_jp_copy_budget),
        cmocka_unit_test(test_jp_copy_bomb),
        cmocka_unit_test(test_jp_result_limit),
        cmocka_unit_test(test_jp_depth_limit),
        cmocka_unit_test(test_jp_malformed),
        cmocka_unit_test(test_jp_does_not_apply),
        cmocka_unit_test(test_jp_too_large),
        cmocka_unit_test(test_jp_err_buffer),
        cmocka_unit_test(test_merge_patch),
        cmocka_unit_test(test_smp_set_image),
        cmocka_unit_test(test_smp_containers_add_delete),
        cmocka_unit_test(test_smp_env_delete),
        cmocka_unit_test(test_smp_ports),
        cmocka_unit_test(test_smp_retain_keys),
        cmocka_unit_test(test_smp_finalizers),
        cmocka_unit_test(test_smp_atomic_lists),
        cmocka_unit_test(test_smp_conditions),
        cmocka_unit_test(test_smp_patch_replace),
        cmocka_unit_test(test_smp_nulls_and_scalars),
        cmocka_unit_test(test_smp_directives_stripped),
        cmocka_unit_test(test_smp_no_schema),
        cmocka_unit_test(test_smp_delete_list_on_atomic),
        cmocka_unit_test(test_smp_errors),
        cmocka_unit_test(test_smp_long_lists),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
