/*
 * test_strategy_rbac.c -- Roles, ClusterRoles and their bindings
 * (src/apiserver/strategy_rbac.c) against Kubernetes' ValidateRole,
 * ValidateClusterRole, ValidateRoleBinding(Update) and the v1 defaults: each
 * rule with a good and a bad object.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "strategy_cases.h"

/* Declared by the generated registry (registry_gen.c). */
extern const api_strategy_t api_strategy_role, api_strategy_clusterrole,
    api_strategy_rolebinding, api_strategy_clusterrolebinding;

#define META "'metadata':{'name':'r','namespace':'ns'}"

static void test_role_rules(void **state)
{
    (void)state;
    static const strat_case_t cases[] = {
        {"{" META ",'rules':[{'apiGroups':[''],'resources':['pods'],'verbs':['get']}]}", NULL,
         NULL},
        {"{" META ",'rules':[{'apiGroups':[''],'resources':['pods'],'verbs':[]}]}", NULL,
         "rules[0].verbs: Required value: verbs must contain at least one value"},
        {"{" META ",'rules':[{'resources':['pods'],'verbs':['get']}]}", NULL,
         "rules[0].apiGroups: Required value: resource rules must supply at least one api "
         "group"},
        {"{" META ",'rules':[{'apiGroups':['apps'],'verbs':['get']}]}", NULL,
         "rules[0].resources: Required value: resource rules must supply at least one "
         "resource"},
        {"{" META ",'rules':[{'apiGroups':[''],'resources':['pods','secrets'],"
         "'resourceNames':['a'],'verbs':['get']}]}",
         NULL, "rules[0].resourceNames: Required value: resource names cannot apply to multiple "
               "resources"},
        {"{" META ",'rules':[{'nonResourceURLs':['/healthz'],'verbs':['get']}]}", NULL,
         "rules[0].nonResourceURLs: Invalid value: [\"/healthz\"]: namespaced rules cannot "
         "apply to non-resource URLs"},
    };
    strat_run(&api_strategy_role, cases, sizeof cases / sizeof cases[0]);
}

static void test_clusterrole(void **state)
{
    (void)state;
    static const strat_case_t cases[] = {
        {"{'metadata':{'name':'c'},'rules':[{'nonResourceURLs':['/healthz'],'verbs':['get']}]}",
         NULL, NULL},
        {"{'metadata':{'name':'c'},'rules':[{'nonResourceURLs':['/x'],'resources':['pods'],"
         "'verbs':['get']}]}",
         NULL, "rules[0].nonResourceURLs: Invalid value: [\"/x\"]: rules cannot apply to both "
               "regular resources and non-resource URLs"},
        {"{'metadata':{'name':'c'},'aggregationRule':{'clusterRoleSelectors':[{'matchLabels':"
         "{'a':'b'}}]}}",
         NULL, NULL},
        {"{'metadata':{'name':'c'},'aggregationRule':{'clusterRoleSelectors':[]}}", NULL,
         "aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector "
         "required if aggregationRule is non-nil"},
        {"{'metadata':{'name':'c'},'aggregationRule':{'clusterRoleSelectors':[{"
         "'matchExpressions':[{'key':'a','operator':'Foo'}]}]}}",
         NULL, "aggregationRule.clusterRoleSelectors[0]: Invalid value: "
               "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Foo\"}]}: \"Foo\" is not a "
               "valid label selector operator"},
    };
    strat_run(&api_strategy_clusterrole, cases, sizeof cases / sizeof cases[0]);
    assert_int_equal(api_strategy_clusterrole.name_rule, API_NAME_PATH_SEGMENT);
}

#define RB(ref, subjects)                                                                          \
    "{" META ",'roleRef':" ref ",'subjects':" subjects "}"
#define REF "{'kind':'Role','name':'r'}"

static void test_rolebinding(void **state)
{
    (void)state;
    static const strat_case_t cases[] = {
        {RB(REF, "[{'kind':'User','name':'alice'},{'kind':'ServiceAccount','name':'sa'}]"), NULL,
         NULL},
        {RB("{'kind':'Foo','name':'r'}", "[]"), NULL,
         "roleRef.kind: Unsupported value: \"Foo\": supported values: \"Role\", \"ClusterRole\""},
        {RB("{'kind':'Role'}", "[]"), NULL, "roleRef.name: Required value"},
        {RB("{'kind':'Role','name':'a/b'}", "[]"), NULL,
         "roleRef.name: Invalid value: \"a/b\": may not contain '/'"},
        {RB("{'kind':'Role','name':'r','apiGroup':'example.com'}", "[]"), NULL,
         "roleRef.apiGroup: Unsupported value: \"example.com\": supported values: "
         "\"rbac.authorization.k8s.io\""},
        {RB(REF, "[{'kind':'Robot','name':'x'}]"), NULL,
         "subjects[0].kind: Unsupported value: \"Robot\": supported values: \"ServiceAccount\", "
         "\"User\", \"Group\""},
        {RB(REF, "[{'kind':'Group'}]"), NULL,
         "subjects[0].name: Invalid value: \"\": group name cannot be empty"},
        {RB(REF, "[{'kind':'ServiceAccount','name':'sa','apiGroup':'x'}]"), NULL,
         "subjects[0].apiGroup: Unsupported value: \"x\": supported values: \"\""},
        {RB(REF, "[{'kind':'ServiceAccount','name':'Bad_SA'}]"), NULL,
         "subjects[0].name: Invalid value: \"Bad_SA\": a lowercase RFC 1123 subdomain must "
         "consist of lower case alphanumeric characters, '-' or '.', and must start and end with "
         "an alphanumeric character (e.g. 'example.com', regex used for validation is "
         "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"},
        /* roleRef is immutable */
        {RB(REF, "[]"), RB(REF, "[{'kind':'User','name':'bob'}]"), NULL},
        {RB("{'kind':'ClusterRole','name':'r'}", "[]"), RB(REF, "[]"),
         "roleRef: Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", "
         "Kind:\"ClusterRole\", Name:\"r\"}: cannot change roleRef"},
    };
    strat_run(&api_strategy_rolebinding, cases, sizeof cases / sizeof cases[0]);
}

static void test_clusterrolebinding(void **state)
{
    (void)state;
    static const strat_case_t cases[] = {
        {"{'metadata':{'name':'b'},'roleRef':{'kind':'ClusterRole','name':'r'},'subjects':"
         "[{'kind':'ServiceAccount','name':'sa','namespace':'ns'}]}",
         NULL, NULL},
        {"{'metadata':{'name':'b'},'roleRef':{'kind':'ClusterRole','name':'r'},'subjects':"
         "[{'kind':'ServiceAccount','name':'sa'}]}",
         NULL, "subjects[0].namespace: Required value"},
        {"{'metadata':{'name':'b'},'roleRef':{'kind':'Role','name':'r'}}", NULL,
         "roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\""},
    };
    strat_run(&api_strategy_clusterrolebinding, cases, sizeof cases / sizeof cases[0]);
}

static void test_binding_defaults(void **state)
{
    (void)state;
    json_t *b = strat_created(&api_strategy_rolebinding,
                              RB(REF, "[{'kind':'User','name':'a'},{'kind':'Group','name':'g'},"
                                      "{'kind':'ServiceAccount','name':'s'}]"));
    strat_expect(b, "roleRef.apiGroup", "'rbac.authorization.k8s.io'");
    strat_expect(b, "subjects.0.apiGroup", "'rbac.authorization.k8s.io'");
    strat_expect(b, "subjects.1.apiGroup", "'rbac.authorization.k8s.io'");
    assert_null(json_object_get(json_array_get(json_object_get(b, "subjects"), 2), "apiGroup"));
    json_decref(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_role_rules),        cmocka_unit_test(test_clusterrole),
        cmocka_unit_test(test_rolebinding),       cmocka_unit_test(test_clusterrolebinding),
        cmocka_unit_test(test_binding_defaults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
