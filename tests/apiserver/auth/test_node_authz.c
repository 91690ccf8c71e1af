/*
 * test_node_authz.c -- the Node authorizer's answers that need no server
 * (src/apiserver/auth/node.c): asked on the engine's loop thread (quick),
 * every decision that would look at the node's pods is left for later, and
 * the others are made at once. The looks themselves run in e2e_rbac.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "apiserver/auth/authz.h"
#include "apiserver/auth/node.h"

static const char *const node_groups[] = {"system:nodes", "system:authenticated"};
static const api_user_t n1 = {
    .name = "system:node:n1", .uid = "", .groups = node_groups, .ngroups = 2};

/* The answer for user u (quick, with the server NULL: a look at the pods
 * would crash) to verb on group/resource[/sub] ns/name. */
static int ask_as(const api_user_t *u, const char *verb, const char *group, const char *resource,
                  const char *sub, const char *ns, const char *name)
{
    json_t *rules = api_node_static_rules();
    assert_non_null(rules);
    api_attrs_t a = {.user = u,
                     .verb = verb,
                     .resource_request = 1,
                     .ns = ns,
                     .group = group,
                     .version = "v1",
                     .resource = resource,
                     .sub = sub,
                     .name = name,
                     .path = "",
                     .quick = 1};
    char reason[256] = "";
    int ok = api_node_authorize(NULL, rules, &a, reason, sizeof reason);
    json_decref(rules);
    return ok;
}

/* The same for node n1. */
static int ask(const char *verb, const char *group, const char *resource, const char *sub,
               const char *ns, const char *name)
{
    return ask_as(&n1, verb, group, resource, sub, ns, name);
}

static void test_pods_looked_at_later(void **state)
{
    (void)state;
    assert_int_equal(ask("get", "", "secrets", "", "team", "s"), API_AUTHZ_LATER);
    assert_int_equal(ask("watch", "", "configmaps", "", "team", "c"), API_AUTHZ_LATER);
    assert_int_equal(ask("get", "", "persistentvolumeclaims", "", "team", "p"), API_AUTHZ_LATER);
    assert_int_equal(ask("patch", "", "persistentvolumeclaims", "status", "team", "p"),
                     API_AUTHZ_LATER);
    assert_int_equal(ask("get", "", "persistentvolumes", "", "", "pv"), API_AUTHZ_LATER);
    assert_int_equal(ask("create", "", "serviceaccounts", "token", "team", "default"),
                     API_AUTHZ_LATER);
}

static void test_decided_at_once(void **state)
{
    (void)state;
    /* No name, another verb: no opinion, without a look. */
    assert_int_equal(ask("list", "", "secrets", "", "team", ""), 0);
    assert_int_equal(ask("delete", "", "secrets", "", "team", "s"), 0);
    assert_int_equal(ask("update", "", "persistentvolumes", "", "", "pv"), 0);
    assert_int_equal(ask("get", "", "serviceaccounts", "", "team", "default"), 0);
    /* Its own Lease and CSINode; not another node's. */
    assert_int_equal(ask("update", "coordination.k8s.io", "leases", "", "kube-node-lease", "n1"),
                     1);
    assert_int_equal(ask("get", "coordination.k8s.io", "leases", "", "kube-node-lease", "n2"), 0);
    assert_int_equal(ask("get", "storage.k8s.io", "csinodes", "", "", "n1"), 1);
    /* system:node's static rules: nodes and pods. */
    assert_int_equal(ask("list", "", "pods", "", "", ""), 1);
    assert_int_equal(ask("get", "", "nodes", "", "", "n2"), 1);
}

static void test_other_users(void **state)
{
    (void)state;
    static const char *const groups[] = {"system:authenticated"};
    const api_user_t jane = {.name = "jane", .uid = "", .groups = groups, .ngroups = 1};
    assert_int_equal(ask_as(&jane, "get", "", "secrets", "", "team", "s"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pods_looked_at_later),
        cmocka_unit_test(test_decided_at_once),
        cmocka_unit_test(test_other_users),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
