/*
 * test_selector.c -- src/apiserver/selector.c: label and field selectors, with
 * the semantics and the exact error texts of Kubernetes (apimachinery
 * pkg/labels/selector.go, pkg/fields/selector.go, metav1 helpers.go,
 * util/validation/validation.go).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/schema/selector.h"
#include "lib/err.h"

/* Kubernetes' validation texts, as the API server prints them. */
#define QNAME_RULE                                                                                 \
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "            \
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "          \
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
#define VALUE_RULE                                                                                 \
    "a valid label must be an empty string or consist of alphanumeric characters, '-', "           \
    "'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  "         \
    "or 'my_value',  or '12345', regex used for validation is "                                    \
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
#define DNS_RULE                                                                                   \
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "          \
    "'-' or '.', and must start and end with an alphanumeric character (e.g. "                     \
    "'example.com', regex used for validation is "                                                 \
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
#define REQ "unable to parse requirement: "

static json_t *js(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &e);
    if (!j) fail_msg("bad test JSON %s: %s", text, e.text);
    return j;
}

static sel_label_t *lparse(const char *text)
{
    char err[1024] = "";
    sel_label_t *s = (sel_label_t *)1;
    int rc = sel_label_parse(text, &s, err, sizeof err);
    if (rc) fail_msg("parse of \"%s\" failed (%d): %s", text ? text : "(null)", rc, err);
    assert_non_null(s);
    return s;
}

/* Parse `sel` and match it against the labels object `labels` (NULL: none). */
static int lmatch(const char *sel, const char *labels)
{
    sel_label_t *s = lparse(sel);
    json_t *l = labels ? js(labels) : NULL;
    int m = sel_label_match(s, l);
    json_decref(l);
    sel_label_free(s);
    return m;
}

static void lerr(const char *text, const char *want)
{
    char err[4096] = "";
    sel_label_t *s = (sel_label_t *)1;
    assert_int_equal(sel_label_parse(text, &s, err, sizeof err), KP_EINVAL);
    assert_null(s);
    assert_string_equal(err, want);
}

static sel_label_t *jparse(const char *text)
{
    char err[1024] = "";
    sel_label_t *s = NULL;
    json_t *j = text ? js(text) : NULL;
    int rc = sel_label_from_json(j, &s, err, sizeof err);
    json_decref(j);
    if (rc) fail_msg("from_json of %s failed (%d): %s", text ? text : "NULL", rc, err);
    assert_non_null(s);
    return s;
}

static int jmatch(const char *sel, const char *labels)
{
    sel_label_t *s = jparse(sel);
    json_t *l = labels ? js(labels) : NULL;
    int m = sel_label_match(s, l);
    json_decref(l);
    sel_label_free(s);
    return m;
}

static void jerr(const char *text, const char *want)
{
    char err[4096] = "";
    sel_label_t *s = (sel_label_t *)1;
    json_t *j = js(text);
    assert_int_equal(sel_label_from_json(j, &s, err, sizeof err), KP_EINVAL);
    json_decref(j);
    assert_null(s);
    if (want)
        assert_string_equal(err, want);
    else
        assert_true(err[0] != '\0');
}

static sel_field_t *fparse(const char *text)
{
    char err[1024] = "";
    sel_field_t *s = (sel_field_t *)1;
    int rc = sel_field_parse(text, &s, err, sizeof err);
    if (rc) fail_msg("field parse of \"%s\" failed (%d): %s", text ? text : "(null)", rc, err);
    assert_non_null(s);
    return s;
}

static int fmatch(const char *sel, const char *obj)
{
    sel_field_t *s = fparse(sel);
    json_t *o = js(obj);
    int m = sel_field_match(s, o);
    json_decref(o);
    sel_field_free(s);
    return m;
}

static void ferr(const char *text, const char *want)
{
    char err[1024] = "";
    sel_field_t *s = (sel_field_t *)1;
    assert_int_equal(sel_field_parse(text, &s, err, sizeof err), KP_EINVAL);
    assert_null(s);
    assert_string_equal(err, want);
}

/* ---- label selectors: matching ---- */

static void test_label_empty(void **state)
{
    (void)state;
    const char *empties[] = {NULL, "", "   ", " \t\r\n "};
    for (size_t i = 0; i < sizeof empties / sizeof *empties; i++) {
        sel_label_t *s = lparse(empties[i]);
        assert_true(sel_label_empty(s));
        assert_true(sel_label_match(s, NULL));
        json_t *l = js("{\"a\":\"b\"}");
        assert_true(sel_label_match(s, l));
        json_decref(l);
        sel_label_free(s);
    }
    assert_true(sel_label_empty(NULL));
    assert_true(sel_label_match(NULL, NULL));
    sel_label_free(NULL);
    sel_label_t *s = lparse("a");
    assert_false(sel_label_empty(s));
    sel_label_free(s);
}

static void test_label_equality(void **state)
{
    (void)state;
    const char *prod = "{\"env\":\"prod\"}", *dev = "{\"env\":\"dev\"}", *none = "{\"x\":\"y\"}";
    for (int i = 0; i < 4; i++) {
        const char *sel =
            (const char *[]){"env=prod", "env==prod", " env = prod ", "env\t==\tprod"}[i];
        assert_true(lmatch(sel, prod));
        assert_false(lmatch(sel, dev));
        assert_false(lmatch(sel, none));
        assert_false(lmatch(sel, NULL));
    }
    /* != matches objects without the key, as Kubernetes does. */
    assert_false(lmatch("env!=prod", prod));
    assert_true(lmatch("env!=prod", dev));
    assert_true(lmatch("env!=prod", none));
    assert_true(lmatch("env!=prod", NULL));
    assert_true(lmatch("env != prod", "{}"));
    /* An empty value: `env=` needs env present and empty. */
    assert_true(lmatch("env=", "{\"env\":\"\"}"));
    assert_false(lmatch("env=", none));
    assert_false(lmatch("env==", prod));
    assert_true(lmatch("env!=", prod));
    assert_true(lmatch("env!=", none));
    assert_false(lmatch("env!=", "{\"env\":\"\"}"));
    assert_true(lmatch("env=,x", "{\"env\":\"\",\"x\":\"1\"}"));
    /* Labels that are not an object count as no labels. */
    assert_false(lmatch("env=prod", "[\"env\",\"prod\"]"));
    assert_true(lmatch("env!=prod", "\"env=prod\""));
}

static void test_label_set_ops(void **state)
{
    (void)state;
    assert_true(lmatch("env in (a,b)", "{\"env\":\"a\"}"));
    assert_true(lmatch("env in (a,b)", "{\"env\":\"b\"}"));
    assert_false(lmatch("env in (a,b)", "{\"env\":\"c\"}"));
    assert_false(lmatch("env in (a,b)", "{}"));
    assert_true(lmatch("env in ( a , b )", "{\"env\":\"b\"}"));
    assert_true(lmatch("env in(a)", "{\"env\":\"a\"}"));
    assert_true(lmatch("env\tin\t(\ta\t)", "{\"env\":\"a\"}"));
    /* notin matches objects without the key. */
    assert_false(lmatch("env notin (a,b)", "{\"env\":\"a\"}"));
    assert_true(lmatch("env notin (a,b)", "{\"env\":\"c\"}"));
    assert_true(lmatch("env notin (a,b)", "{}"));
    assert_true(lmatch("env notin (a,b)", NULL));
    assert_true(lmatch("env notin(a)", "{\"env\":\"b\"}"));
    /* Empty members are the empty value: "()" is {""}, "(a,)" is {a,""}. */
    assert_true(lmatch("env in ()", "{\"env\":\"\"}"));
    assert_false(lmatch("env in ()", "{\"env\":\"a\"}"));
    assert_false(lmatch("env notin ()", "{\"env\":\"\"}"));
    assert_true(lmatch("env notin ()", "{\"env\":\"a\"}"));
    assert_true(lmatch("x in (foo,,baz)", "{\"x\":\"\"}"));
    assert_true(lmatch("x in (foo,,baz)", "{\"x\":\"baz\"}"));
    assert_true(lmatch("x in (a,)", "{\"x\":\"\"}"));
    assert_true(lmatch("x in (,a)", "{\"x\":\"\"}"));
    assert_true(lmatch("x in (,a)", "{\"x\":\"a\"}"));
    assert_true(lmatch("x in (a,a,b)", "{\"x\":\"b\"}"));
    /* "in" and "notin" are plain words where a key or value is expected. */
    assert_true(lmatch("x in (in,notin)", "{\"x\":\"notin\"}"));
    assert_true(lmatch("in=notin", "{\"in\":\"notin\"}"));
    assert_true(lmatch("notin in (in)", "{\"notin\":\"in\"}"));
    assert_true(lmatch("!in", "{}"));
}

static void test_label_exists(void **state)
{
    (void)state;
    assert_true(lmatch("env", "{\"env\":\"\"}"));
    assert_true(lmatch("env", "{\"env\":\"x\"}"));
    assert_false(lmatch("env", "{\"x\":\"y\"}"));
    assert_false(lmatch("env", NULL));
    assert_false(lmatch("!env", "{\"env\":\"\"}"));
    assert_true(lmatch("!env", "{\"x\":\"y\"}"));
    assert_true(lmatch("!env", NULL));
    assert_true(lmatch("! env", "{}"));
    assert_true(lmatch(" env , ! tier ", "{\"env\":\"a\"}"));
    assert_false(lmatch("env,!tier", "{\"env\":\"a\",\"tier\":\"b\"}"));
    /* A null label value reads as "" (as Go decodes it); other JSON types are
     * present but equal to no string. */
    assert_true(lmatch("env=", "{\"env\":null}"));
    assert_true(lmatch("env", "{\"env\":5}"));
    assert_false(lmatch("env=5", "{\"env\":5}"));
    assert_true(lmatch("env!=5", "{\"env\":5}"));
}

static void test_label_gt_lt(void **state)
{
    (void)state;
    assert_true(lmatch("replicas>3", "{\"replicas\":\"5\"}"));
    assert_false(lmatch("replicas>3", "{\"replicas\":\"3\"}"));
    assert_false(lmatch("replicas>3", "{\"replicas\":\"2\"}"));
    assert_true(lmatch("replicas<3", "{\"replicas\":\"2\"}"));
    assert_false(lmatch("replicas<3", "{\"replicas\":\"3\"}"));
    assert_true(lmatch(" replicas < 10 ", "{\"replicas\":\"-4\"}"));
    assert_true(lmatch("replicas>0", "{\"replicas\":\"+7\"}")); /* ParseInt takes a sign */
    assert_true(lmatch("replicas>7", "{\"replicas\":\"0010\"}"));
    assert_true(lmatch("n>9223372036854775806", "{\"n\":\"9223372036854775807\"}"));
    assert_true(lmatch("n<0", "{\"n\":\"-9223372036854775808\"}"));
    /* The label must be an integer, else no match (for < and > alike). */
    assert_false(lmatch("replicas>3", "{\"replicas\":\"five\"}"));
    assert_false(lmatch("replicas<3", "{\"replicas\":\"five\"}"));
    assert_false(lmatch("replicas<3", "{\"replicas\":\"\"}"));
    assert_false(lmatch("replicas<3", "{\"replicas\":\"1.5\"}"));
    assert_false(lmatch("replicas<3", "{\"replicas\":\" 1\"}"));
    assert_false(lmatch("replicas<3", "{\"replicas\":\"1_0\"}"));
    assert_false(lmatch("n>0", "{\"n\":\"9223372036854775808\"}")); /* out of range */
    assert_false(lmatch("n<0", "{\"n\":\"-9223372036854775809\"}"));
    assert_false(lmatch("replicas>3", "{}"));
    assert_false(lmatch("replicas<3", NULL));
}

static void test_label_and_prefixed(void **state)
{
    (void)state;
    const char *sel = "app.kubernetes.io/name=web,tier in (fe,be),!canary,env,n>2";
    assert_true(lmatch(sel, "{\"app.kubernetes.io/name\":\"web\",\"tier\":\"fe\",\"env\":\"x\","
                            "\"n\":\"3\"}"));
    assert_false(lmatch(sel, "{\"app.kubernetes.io/name\":\"web\",\"tier\":\"fe\",\"env\":\"x\","
                             "\"n\":\"3\",\"canary\":\"1\"}"));
    assert_false(lmatch(sel, "{\"app.kubernetes.io/name\":\"web\",\"tier\":\"db\",\"env\":\"x\","
                             "\"n\":\"3\"}"));
    assert_false(lmatch(sel, "{\"app.kubernetes.io/name\":\"web\",\"tier\":\"fe\",\"n\":\"3\"}"));
    assert_false(lmatch(sel, "{\"name\":\"web\",\"tier\":\"fe\",\"env\":\"x\",\"n\":\"3\"}"));
    assert_true(lmatch("example.com/Key_1.x-y=V.a_b-9", "{\"example.com/Key_1.x-y\":\"V.a_b-9\"}"));
    assert_true(lmatch("a-b.c/d!=e", "{\"d\":\"e\"}"));
    /* Both requirements on one key must hold. */
    assert_true(lmatch("a!=1,a!=2", "{\"a\":\"3\"}"));
    assert_false(lmatch("a!=1,a!=2", "{\"a\":\"2\"}"));
    assert_false(lmatch("a=1,a=2", "{\"a\":\"1\"}"));
    /* Longest legal key and value. */
    char sel2[400], lab[400];
    char name[64], prefix[254], value[64];
    memset(name, 'n', 63), name[63] = '\0';
    memset(value, 'v', 63), value[63] = '\0';
    memset(prefix, 'p', 253), prefix[253] = '\0';
    snprintf(sel2, sizeof sel2, "%s/%s=%s", prefix, name, value);
    snprintf(lab, sizeof lab, "{\"%s/%s\":\"%s\"}", prefix, name, value);
    assert_true(lmatch(sel2, lab));
}

/* ---- label selectors: parse errors ---- */

static void test_label_syntax_errors(void **state)
{
    (void)state;
    lerr("env in a", REQ "found 'a' expected: '('");
    lerr("=v", "found '=', expected: !, identifier, or 'end of string'");
    lerr("k=v=x", "found '=', expected: ',' or 'end of string'");
    lerr("k v", REQ "found 'v', expected: in, notin, =, ==, !=, gt, lt");
    lerr("k)", REQ "found ')', expected: in, notin, =, ==, !=, gt, lt");
    lerr("k,", "found '', expected: identifier after ','");
    lerr("k,,j", "found ',', expected: identifier after ','");
    lerr(",", "found ',', expected: !, identifier, or 'end of string'");
    lerr("(", "found '(', expected: !, identifier, or 'end of string'");
    lerr("!", REQ "found '', expected: identifier");
    lerr("!!k", REQ "found '!', expected: identifier");
    lerr("!k=v", "found '=', expected: ',' or 'end of string'");
    lerr("k in (a b)", REQ "found 'b', expected: ',' or ')'");
    lerr("k in (a", REQ "found '', expected: ',' or ')'");
    lerr("k in (", REQ "found '', expected: ',', ')' or identifier");
    lerr("k in", REQ "found '' expected: '('");
    lerr("k in ((a))", REQ "found '(', expected: ',', ')' or identifier");
    lerr("k in (a,=)", REQ "found '=', expected: ',', or identifier");
    lerr("k in (a)x", "found 'x', expected: ',' or 'end of string'");
    lerr("k in in (a)", REQ "found 'in' expected: '('");
    lerr("k===v", REQ "found '=', expected: identifier");
    lerr("k>=5", REQ "found '=', expected: identifier");
    lerr("k=(a)", REQ "found '(', expected: identifier");
    lerr("k!v", REQ "found '!', expected: in, notin, =, ==, !=, gt, lt");
}

static void test_label_validation_errors(void **state)
{
    (void)state;
    /* Values: checked by NewRequirement, paths relative to the requirement. */
    char sel[512], want[2048], long64[65];
    memset(long64, 'a', 64), long64[64] = '\0';
    snprintf(sel, sizeof sel, "k=%s", long64);
    snprintf(want, sizeof want,
             REQ "values[0][k]: Invalid value: \"%s\": must be no more than 63 characters", long64);
    lerr(sel, want);
    snprintf(sel, sizeof sel, "k=%s-", long64);
    snprintf(
        want, sizeof want,
        REQ "values[0][k]: Invalid value: \"%s-\": must be no more than 63 characters; " VALUE_RULE,
        long64);
    lerr(sel, want);
    lerr("k=a@b", REQ "values[0][k]: Invalid value: \"a@b\": " VALUE_RULE);
    lerr("k=-a", REQ "values[0][k]: Invalid value: \"-a\": " VALUE_RULE);
    lerr("k=a.", REQ "values[0][k]: Invalid value: \"a.\": " VALUE_RULE);
    lerr("k=\"x\"", REQ "values[0][k]: Invalid value: \"\\\"x\\\"\": " VALUE_RULE);
    lerr("a/k=caf\xc3\xa9", REQ "values[0][a/k]: Invalid value: \"caf\xc3\xa9\": " VALUE_RULE);
    lerr("k=\x01", REQ "values[0][k]: Invalid value: \"\\x01\": " VALUE_RULE);
    /* A set is sorted and de-duplicated first, so indexes follow that order. */
    lerr("k in (b@,ok,a@,b@)", REQ "[values[0][k]: Invalid value: \"a@\": " VALUE_RULE
                                   ", values[1][k]: Invalid value: \"b@\": " VALUE_RULE "]");
    /* Integers for > and <. */
    lerr("k>abc", REQ "values[0]: Invalid value: \"abc\": for 'Gt', 'Lt' operators, the value "
                      "must be an integer");
    lerr("k<", REQ "values[0]: Invalid value: \"\": for 'Gt', 'Lt' operators, the value must "
                   "be an integer");
    lerr("k>9223372036854775808", REQ "values[0]: Invalid value: \"9223372036854775808\": for "
                                      "'Gt', 'Lt' operators, the value must be an integer");
    lerr("k<-1", REQ "values[0][k]: Invalid value: \"-1\": " VALUE_RULE);
    lerr("k>a@", REQ "[values[0]: Invalid value: \"a@\": for 'Gt', 'Lt' operators, the value "
                     "must be an integer, values[0][k]: Invalid value: \"a@\": " VALUE_RULE "]");

    /* Keys: checked by the parser with a nil path. */
    lerr("a@b=c", REQ "<nil>: Invalid value: \"a@b\": name part " QNAME_RULE);
    lerr("-a", REQ "<nil>: Invalid value: \"-a\": name part " QNAME_RULE);
    lerr("!a.", REQ "<nil>: Invalid value: \"a.\": name part " QNAME_RULE);
    lerr("Example.com/k=v", REQ "<nil>: Invalid value: \"Example.com/k\": prefix part " DNS_RULE);
    lerr("a..b/k", REQ "<nil>: Invalid value: \"a..b/k\": prefix part " DNS_RULE);
    lerr("a_b/k", REQ "<nil>: Invalid value: \"a_b/k\": prefix part " DNS_RULE);
    lerr("/k in (a)", REQ "<nil>: Invalid value: \"/k\": prefix part must be non-empty");
    lerr("k/",
         REQ "<nil>: Invalid value: \"k/\": name part must be non-empty; name part " QNAME_RULE);
    lerr("a/b/c=d",
         REQ "<nil>: Invalid value: \"a/b/c\": a qualified name " QNAME_RULE
             " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
    snprintf(sel, sizeof sel, "%s=v", long64);
    snprintf(want, sizeof want,
             REQ "<nil>: Invalid value: \"%s\": name part must be no more than 63 characters",
             long64);
    lerr(sel, want);
    char prefix[255];
    memset(prefix, 'p', 254), prefix[254] = '\0';
    snprintf(sel, sizeof sel, "%s/k", prefix);
    snprintf(want, sizeof want,
             REQ "<nil>: Invalid value: \"%s/k\": prefix part must be no more than 253 characters",
             prefix);
    lerr(sel, want);
    /* The first bad requirement is the one reported. */
    lerr("ok=1,b@d=2,c@=3", REQ "<nil>: Invalid value: \"b@d\": name part " QNAME_RULE);
}

static void test_label_err_buffer(void **state)
{
    (void)state;
    sel_label_t *s = (sel_label_t *)1;
    assert_int_equal(sel_label_parse("=", &s, NULL, 0), KP_EINVAL);
    assert_null(s);
    char small[8];
    assert_int_equal(sel_label_parse("=", &s, small, sizeof small), KP_EINVAL);
    assert_string_equal(small, "found '");
}

/* ---- metav1.LabelSelector ---- */

static void test_label_json(void **state)
{
    (void)state;
    const char *empties[] = {NULL,
                             "null",
                             "{}",
                             "{\"matchLabels\":{}}",
                             "{\"matchExpressions\":[]}",
                             "{\"matchLabels\":null,\"matchExpressions\":null}"};
    for (size_t i = 0; i < sizeof empties / sizeof *empties; i++) {
        sel_label_t *s = jparse(empties[i]);
        assert_true(sel_label_empty(s));
        assert_true(sel_label_match(s, NULL));
        sel_label_free(s);
    }
    const char *ml = "{\"matchLabels\":{\"app\":\"web\",\"tier\":\"fe\"}}";
    assert_true(jmatch(ml, "{\"app\":\"web\",\"tier\":\"fe\",\"x\":\"y\"}"));
    assert_false(jmatch(ml, "{\"app\":\"web\"}"));
    assert_false(jmatch(ml, "{\"app\":\"web\",\"tier\":\"be\"}"));
    assert_true(jmatch("{\"matchLabels\":{\"app\":\"\"}}", "{\"app\":\"\"}"));
    assert_false(jmatch("{\"matchLabels\":{\"app\":\"\"}}", "{}"));

    const char *me = "{\"matchLabels\":{\"app\":\"web\"},\"matchExpressions\":["
                     "{\"key\":\"tier\",\"operator\":\"In\",\"values\":[\"fe\",\"be\"]},"
                     "{\"key\":\"env\",\"operator\":\"NotIn\",\"values\":[\"dev\"]},"
                     "{\"key\":\"release\",\"operator\":\"Exists\"},"
                     "{\"key\":\"canary\",\"operator\":\"DoesNotExist\",\"values\":[]}]}";
    assert_true(jmatch(me, "{\"app\":\"web\",\"tier\":\"be\",\"release\":\"1\"}"));
    assert_true(jmatch(me, "{\"app\":\"web\",\"tier\":\"be\",\"release\":\"1\",\"env\":\"prod\"}"));
    assert_false(jmatch(me, "{\"app\":\"web\",\"tier\":\"be\",\"release\":\"1\",\"env\":\"dev\"}"));
    assert_false(jmatch(me, "{\"app\":\"web\",\"tier\":\"db\",\"release\":\"1\"}"));
    assert_false(jmatch(me, "{\"app\":\"web\",\"tier\":\"be\"}"));
    assert_false(jmatch(me, "{\"app\":\"web\",\"tier\":\"be\",\"release\":\"1\",\"canary\":\"\"}"));
    assert_false(jmatch(me, "{\"app\":\"api\",\"tier\":\"be\",\"release\":\"1\"}"));
    assert_false(jmatch(me, NULL));
    /* Only the expressions: a NotIn-only selector matches an unlabelled object. */
    assert_true(jmatch("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"NotIn\","
                       "\"values\":[\"x\"]}]}",
                       NULL));
}

static void test_label_json_errors(void **state)
{
    (void)state;
    jerr("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Foo\",\"values\":[\"x\"]}]}",
         "\"Foo\" is not a valid label selector operator");
    jerr("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"in\",\"values\":[\"x\"]}]}",
         "\"in\" is not a valid label selector operator");
    jerr("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"=\",\"values\":[\"x\"]}]}",
         "\"=\" is not a valid label selector operator");
    jerr("{\"matchExpressions\":[{\"key\":\"a\"}]}", "\"\" is not a valid label selector operator");
    jerr("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\"}]}",
         "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty");
    jerr("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"NotIn\",\"values\":[]}]}",
         "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty");
    jerr("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Exists\",\"values\":[\"x\",\"<y>\"]}"
         "]}",
         "[values: Invalid value: [\"x\",\"\\u003cy\\u003e\"]: values set must be empty for exists "
         "and does not exist, values[1][a]: Invalid value: \"<y>\": " VALUE_RULE "]");
    jerr("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"DoesNotExist\",\"values\":[\"\"]}]}",
         "values: Invalid value: [\"\"]: values set must be empty for exists and does not exist");
    jerr("{\"matchExpressions\":[{\"key\":\"a@\",\"operator\":\"Exists\"}]}",
         "key: Invalid value: \"a@\": name part " QNAME_RULE);
    jerr("{\"matchExpressions\":[{\"operator\":\"Exists\"}]}",
         "key: Invalid value: \"\": name part must be non-empty; name part " QNAME_RULE);
    jerr("{\"matchExpressions\":[{\"key\":\"k\",\"operator\":\"In\",\"values\":[\"ok\",\"b d\"]}]}",
         "values[1][k]: Invalid value: \"b d\": " VALUE_RULE);
    jerr("{\"matchLabels\":{\"a@\":\"x\"}}", "key: Invalid value: \"a@\": name part " QNAME_RULE);
    jerr("{\"matchLabels\":{\"app\":\"a b\"}}",
         "values[0][app]: Invalid value: \"a b\": " VALUE_RULE);
    jerr("{\"matchLabels\":{\"a@\":\"-\"}}",
         "[key: Invalid value: \"a@\": name part " QNAME_RULE
         ", values[0][a@]: Invalid value: \"-\": " VALUE_RULE "]");
    jerr("{\"matchExpressions\":[{\"key\":\"a@\",\"operator\":\"In\"}]}",
         "[key: Invalid value: \"a@\": name part " QNAME_RULE
         ", values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty]");
    /* matchLabels are checked before matchExpressions. */
    jerr("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Foo\"}],\"matchLabels\":{\"b@\":"
         "\"x\"}}",
         "key: Invalid value: \"b@\": name part " QNAME_RULE);
    /* Members of the wrong JSON type (Kubernetes fails to decode them). */
    jerr("\"app=web\"", NULL);
    jerr("{\"matchLabels\":[]}", NULL);
    jerr("{\"matchLabels\":{\"a\":1}}", NULL);
    jerr("{\"matchExpressions\":{}}", NULL);
    jerr("{\"matchExpressions\":[\"a\"]}", NULL);
    jerr("{\"matchExpressions\":[{\"key\":1,\"operator\":\"Exists\"}]}", NULL);
    jerr("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\",\"values\":[1]}]}", NULL);
    jerr("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\",\"values\":\"x\"}]}", NULL);
}

/* ---- field selectors ---- */

static const char *POD_UNSCHED = "{\"metadata\":{\"name\":\"p\",\"namespace\":\"default\"},"
                                 "\"spec\":{\"containers\":[]}}";
static const char *POD_RUNNING = "{\"metadata\":{\"name\":\"p\",\"namespace\":\"default\"},"
                                 "\"spec\":{\"nodeName\":\"n1\",\"hostNetwork\":true},"
                                 "\"status\":{\"phase\":\"Running\"}}";
static const char *POD_DONE =
    "{\"metadata\":{\"name\":\"q\",\"namespace\":\"kube-system\"},"
    "\"spec\":{\"nodeName\":\"n1\"},\"status\":{\"phase\":\"Succeeded\"}}";

static void test_field_empty(void **state)
{
    (void)state;
    const char *empties[] = {NULL, "", ",", ",,"};
    for (size_t i = 0; i < sizeof empties / sizeof *empties; i++) {
        sel_field_t *s = fparse(empties[i]);
        assert_true(sel_field_empty(s));
        json_t *o = js(POD_RUNNING);
        assert_true(sel_field_match(s, o));
        json_decref(o);
        assert_int_equal(sel_field_check(s, NULL, NULL, 0), 0);
        sel_field_free(s);
    }
    assert_true(sel_field_empty(NULL));
    sel_field_free(NULL);
}

static void test_field_match(void **state)
{
    (void)state;
    assert_true(fmatch("metadata.name=p", POD_RUNNING));
    assert_true(fmatch("metadata.name==p", POD_RUNNING));
    assert_false(fmatch("metadata.name=q", POD_RUNNING));
    assert_false(fmatch("metadata.name!=p", POD_RUNNING));
    assert_true(fmatch("metadata.name!=q", POD_RUNNING));
    assert_true(fmatch("metadata.namespace=kube-system", POD_DONE));
    /* A missing field compares as "". */
    assert_true(fmatch("spec.nodeName=", POD_UNSCHED));
    assert_false(fmatch("spec.nodeName=", POD_RUNNING));
    assert_true(fmatch("spec.nodeName!=", POD_RUNNING));
    assert_true(fmatch("status.phase!=Running", POD_UNSCHED));
    assert_false(fmatch("status.phase!=Running", POD_RUNNING));
    assert_true(fmatch("status.phase=", POD_UNSCHED));
    assert_true(fmatch("metadata.namespace=", "{\"metadata\":{\"name\":\"n1\"}}"));
    assert_false(fmatch("spec.nodeName=n1", "{\"spec\":\"n1\"}"));
    assert_true(fmatch("spec.nodeName=", "{\"spec\":null}"));
    /* What kubectl describe node sends: AND of all terms. */
    const char *describe = "spec.nodeName=n1,status.phase!=Succeeded,status.phase!=Failed";
    assert_true(fmatch(describe, POD_RUNNING));
    assert_false(fmatch(describe, POD_DONE));
    assert_false(fmatch(describe, POD_UNSCHED));
    /* Booleans and numbers compare as their text. */
    assert_true(fmatch("spec.hostNetwork=true", POD_RUNNING));
    assert_false(fmatch("spec.hostNetwork=false", POD_RUNNING));
    assert_true(fmatch("spec.unschedulable=true", "{\"spec\":{\"unschedulable\":true}}"));
    assert_true(fmatch("spec.unschedulable=false", "{\"spec\":{\"unschedulable\":false}}"));
    assert_false(fmatch("spec.unschedulable=True", "{\"spec\":{\"unschedulable\":true}}"));
    assert_true(fmatch("status.replicas=3", "{\"status\":{\"replicas\":3}}"));
    assert_true(fmatch("status.replicas!=03", "{\"status\":{\"replicas\":3}}"));
    assert_true(fmatch("status.n=-12", "{\"status\":{\"n\":-12}}"));
    assert_true(fmatch("x=1.5,y=0.1,z=-2", "{\"x\":1.5,\"y\":0.1,\"z\":-2}"));
    assert_true(fmatch("x.y=", "{\"x\":{\"y\":{\"z\":1}}}"));
    assert_true(fmatch("x.y=", "{\"x\":{\"y\":[1]}}"));
    /* Go bools Kubernetes reads as "false" when absent. */
    assert_true(fmatch("spec.hostNetwork=false", POD_UNSCHED));
    assert_true(fmatch("spec.unschedulable=false", "{\"metadata\":{\"name\":\"n1\"}}"));
    assert_true(fmatch("spec.unschedulable!=true", "{\"spec\":{\"unschedulable\":null}}"));
    /* Events. */
    const char *ev = "{\"involvedObject\":{\"kind\":\"Pod\",\"name\":\"p\",\"namespace\":\"d\","
                     "\"uid\":\"u-1\"},\"reason\":\"Scheduled\",\"type\":\"Normal\","
                     "\"source\":{\"component\":\"default-scheduler\"}}";
    assert_true(fmatch("involvedObject.kind=Pod,involvedObject.name=p,involvedObject.namespace=d,"
                       "involvedObject.uid=u-1",
                       ev));
    assert_false(fmatch("involvedObject.kind=Node", ev));
    assert_true(fmatch("reason=Scheduled,type=Normal", ev));
    assert_true(fmatch("source=default-scheduler", ev));
    assert_true(fmatch("source=", "{\"reason\":\"x\"}"));
}

static void test_field_escapes(void **state)
{
    (void)state;
    assert_true(fmatch("metadata.name=a\\,b", "{\"metadata\":{\"name\":\"a,b\"}}"));
    assert_true(fmatch("metadata.name=a\\=b", "{\"metadata\":{\"name\":\"a=b\"}}"));
    assert_true(fmatch("metadata.name=a\\\\b", "{\"metadata\":{\"name\":\"a\\\\b\"}}"));
    assert_true(fmatch("metadata.name!=a\\,b,metadata.namespace=x\\=y\\\\",
                       "{\"metadata\":{\"name\":\"a\",\"namespace\":\"x=y\\\\\"}}"));
    /* The first operator in the term splits it; "!=" and "==" win over "=". */
    assert_true(fmatch("a=!b", "{\"a\":\"!b\"}"));
    assert_true(fmatch("a==b", "{\"a\":\"b\"}"));
    assert_true(fmatch("a!=b", "{\"a\":\"c\"}"));
    /* Values keep their spaces and other characters. */
    assert_true(fmatch("a= b ", "{\"a\":\" b \"}"));
    assert_true(fmatch("a=caf\xc3\xa9", "{\"a\":\"caf\xc3\xa9\"}"));
    /* An unescaped value is kept byte for byte; an escaped one is read as
     * UTF-8, where Go turns an invalid byte into U+FFFD. */
    sel_field_t *s = fparse("a=\xff,b=\xff\\,");
    json_t *o = js("{\"a\":\"x\",\"b\":\"\\ufffd,\"}");
    assert_false(sel_field_match(s, o));
    json_object_set_new(o, "a", json_stringn_nocheck("\xff", 1));
    assert_true(sel_field_match(s, o));
    json_decref(o);
    sel_field_free(s);
}

static void test_field_errors(void **state)
{
    (void)state;
    ferr("foo", "invalid selector: 'foo'; can't understand 'foo'");
    ferr("metadata.name=a,foo", "invalid selector: 'metadata.name=a,foo'; can't understand 'foo'");
    /* Terms are parsed in sorted order: "a" comes before "b=1". */
    ferr("b=1,a", "invalid selector: 'b=1,a'; can't understand 'a'");
    ferr("a=b\\x", "invalid field selector: invalid escape sequence: \\x");
    ferr("a=b\\\xc3\xa9", "invalid field selector: invalid escape sequence: \\\xc3\xa9");
    ferr("a=b\\", "invalid field selector: invalid escape sequence: \\");
    /* Go reads an invalid UTF-8 byte as U+FFFD. */
    ferr("a=b\\\xff", "invalid field selector: invalid escape sequence: \\\xef\xbf\xbd");
    ferr("a=b=c", "invalid field selector: unescaped character in value: 61");
    ferr("a===b", "invalid field selector: unescaped character in value: 61");
    ferr("a!==b", "invalid field selector: unescaped character in value: 61");
    /* An escaped backslash before a comma leaves the comma a separator. */
    ferr("metadata.name=a\\\\,b",
         "invalid selector: 'metadata.name=a\\\\,b'; can't understand 'b'");
    char small[10];
    sel_field_t *s = (sel_field_t *)1;
    assert_int_equal(sel_field_parse("foo", &s, small, sizeof small), KP_EINVAL);
    assert_null(s);
    assert_string_equal(small, "invalid s");
}

static void test_field_check(void **state)
{
    (void)state;
    const char *const pods[] = {"metadata.name", "metadata.namespace", "spec.nodeName",
                                "status.phase", NULL};
    char err[256] = "";
    sel_field_t *s = fparse("spec.nodeName=n1,status.phase!=Failed,metadata.name=x");
    assert_int_equal(sel_field_check(s, pods, err, sizeof err), 0);
    sel_field_free(s);

    s = fparse("spec.nodeName=n1,spec.foo=x");
    assert_int_equal(sel_field_check(s, pods, err, sizeof err), KP_EINVAL);
    assert_string_equal(err, "field label not supported: spec.foo");
    sel_field_free(s);

    /* Kubernetes checks the terms in sorted order: "a.b" is named first. */
    s = fparse("z.z=1,a.b=2");
    assert_int_equal(sel_field_check(s, pods, err, sizeof err), KP_EINVAL);
    assert_string_equal(err, "field label not supported: a.b");
    sel_field_free(s);

    /* Field names are taken verbatim: no trimming, and may be empty. */
    s = fparse("metadata.name = x");
    assert_int_equal(sel_field_check(s, pods, err, sizeof err), KP_EINVAL);
    assert_string_equal(err, "field label not supported: metadata.name ");
    sel_field_free(s);
    s = fparse("=x");
    assert_int_equal(sel_field_check(s, pods, err, sizeof err), KP_EINVAL);
    assert_string_equal(err, "field label not supported: ");
    sel_field_free(s);

    /* A NULL list supports nothing. */
    s = fparse("metadata.name=x");
    assert_int_equal(sel_field_check(s, NULL, err, sizeof err), KP_EINVAL);
    assert_string_equal(err, "field label not supported: metadata.name");
    assert_int_equal(sel_field_check(s, NULL, NULL, 0), KP_EINVAL);
    sel_field_free(s);
}

/* ---- concurrency: one parsed selector, many matching threads ---- */

typedef struct shared {
    const sel_label_t *l;
    const sel_field_t *f;
    json_t *yes, *no;
    int bad;
} shared_t;

static void *matcher(void *arg)
{
    shared_t *sh = arg;
    for (int i = 0; i < 20000; i++) {
        if (!sel_label_match(sh->l, json_object_get(sh->yes, "labels")) ||
            sel_label_match(sh->l, json_object_get(sh->no, "labels")) ||
            !sel_field_match(sh->f, sh->yes) || sel_field_match(sh->f, sh->no))
            __atomic_add_fetch(&sh->bad, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void test_concurrent_match(void **state)
{
    (void)state;
    shared_t sh = {0};
    sel_label_t *l = lparse("app in (web,api),!canary,n>1");
    sel_field_t *f = fparse("metadata.name!=x,status.phase=Running");
    sh.l = l, sh.f = f;
    sh.yes = js("{\"metadata\":{\"name\":\"a\"},\"labels\":{\"app\":\"web\",\"n\":\"2\"},"
                "\"status\":{\"phase\":\"Running\"}}");
    sh.no = js("{\"metadata\":{\"name\":\"x\"},\"labels\":{\"app\":\"web\",\"canary\":\"1\"}}");
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, matcher, &sh), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(sh.bad, 0);
    json_decref(sh.yes);
    json_decref(sh.no);
    sel_label_free(l);
    sel_field_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_label_empty),         cmocka_unit_test(test_label_equality),
        cmocka_unit_test(test_label_set_ops),       cmocka_unit_test(test_label_exists),
        cmocka_unit_test(test_label_gt_lt),         cmocka_unit_test(test_label_and_prefixed),
        cmocka_unit_test(test_label_syntax_errors), cmocka_unit_test(test_label_validation_errors),
        cmocka_unit_test(test_label_err_buffer),    cmocka_unit_test(test_label_json),
        cmocka_unit_test(test_label_json_errors),   cmocka_unit_test(test_field_empty),
        cmocka_unit_test(test_field_match),         cmocka_unit_test(test_field_escapes),
        cmocka_unit_test(test_field_errors),        cmocka_unit_test(test_field_check),
        cmocka_unit_test(test_concurrent_match),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
