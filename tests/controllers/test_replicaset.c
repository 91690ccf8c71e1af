/*
 * test_replicaset.c -- the pure part of the ReplicaSet controller
 * (replicaset_int.h): the selector of a ReplicaSet and of a
 * ReplicationController (Kubernetes' conversion.go reads an RC's label map
 * as matchLabels; defaulting gives an empty one the template's labels).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "controllers/ctrl_util.h"
#include "controllers/replicaset_int.h"

static json_t *J(const char *text)
{
    char *t = strdup(text);
    for (char *p = t; *p; p++)
        if (*p == '\'') *p = '"';
    json_t *v = json_loads(t, 0, NULL);
    if (!v) fail_msg("bad test JSON: %s", t);
    free(t);
    return v;
}

static int matches(const json_t *obj, int map_selector, const char *labels)
{
    json_t *sel = rs__selector(obj, map_selector);
    json_t *l = J(labels);
    int yes = sel && ctrl_selector_matches(sel, l);
    json_decref(sel);
    json_decref(l);
    return yes;
}

static void test_rc_selector(void **state)
{
    (void)state;
    json_t *rc = J("{'spec':{'selector':{'app':'web','tier':'fe'},"
                   "'template':{'metadata':{'labels':{'app':'web','tier':'fe','x':'1'}}}}}");
    json_t *sel = rs__selector(rc, 1);
    json_t *want = J("{'matchLabels':{'app':'web','tier':'fe'}}");
    assert_true(json_equal(sel, want));
    json_decref(sel);
    json_decref(want);
    assert_true(matches(rc, 1, "{'app':'web','tier':'fe','other':'y'}"));
    assert_false(matches(rc, 1, "{'app':'web'}"));
    assert_false(matches(rc, 1, "{'app':'web','tier':'be'}"));
    json_decref(rc);

    /* Empty or absent: the template's labels. */
    rc = J("{'spec':{'selector':{},'template':{'metadata':{'labels':{'app':'db'}}}}}");
    assert_true(matches(rc, 1, "{'app':'db'}"));
    assert_false(matches(rc, 1, "{'app':'web'}"));
    json_decref(rc);
    rc = J("{'spec':{'template':{'metadata':{'labels':{'app':'db'}}}}}");
    assert_true(matches(rc, 1, "{'app':'db'}"));
    json_decref(rc);
    /* Neither: selects nothing (not everything). */
    rc = J("{'spec':{'template':{'metadata':{}}}}");
    assert_null(rs__selector(rc, 1));
    assert_false(matches(rc, 1, "{'app':'db'}"));
    json_decref(rc);
}

static void test_rs_selector(void **state)
{
    (void)state;
    json_t *rs = J("{'spec':{'selector':{'matchExpressions':[{'key':'app','operator':'In',"
                   "'values':['a','b']}]}}}");
    assert_true(matches(rs, 0, "{'app':'b'}"));
    assert_false(matches(rs, 0, "{'app':'c'}"));
    /* A ReplicaSet's selector is a LabelSelector: not read as a label map. */
    assert_false(matches(rs, 1, "{'app':'b'}"));
    json_decref(rs);
    rs = J("{'spec':{'template':{'metadata':{'labels':{'app':'db'}}}}}");
    assert_null(rs__selector(rs, 0)); /* no defaulting from the template */
    json_decref(rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc_selector),
        cmocka_unit_test(test_rs_selector),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
