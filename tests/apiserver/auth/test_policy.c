/*
 * test_policy.c -- the bootstrap RBAC policy table (src/apiserver/auth/
 * policy.h, policy_data.c): its consistency (names, rules, references,
 * aggregation, subjects) and facts of Kubernetes 1.32's policy that a
 * transcription mistake would change.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "apiserver/auth/policy.h"

/*
 * The counts of Kubernetes v1.32.0's
 * plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata (default feature
 * gates): cluster-roles.yaml has 31 ClusterRoles and controller-roles.yaml
 * 33; cluster-role-bindings.yaml has 12 ClusterRoleBindings and
 * controller-role-bindings.yaml 33; namespace-roles.yaml has 7 Roles (1 in
 * kube-public, 6 in kube-system) and namespace-role-bindings.yaml 7
 * RoleBindings (the same split).
 */
#define N_CLUSTER_ROLES         (31 + 33)
#define N_CONTROLLER_ROLES      33
#define N_CLUSTER_ROLE_BINDINGS (12 + 33)
#define N_ROLES                 7
#define N_ROLE_BINDINGS         7

#define CTL "system:controller:"

static size_t list_len(const char *const *l)
{
    size_t n = 0;
    while (l && l[n])
        n++;
    return n;
}

static bool list_has(const char *const *l, const char *s)
{
    for (size_t i = 0; l && l[i]; i++)
        if (!strcmp(l[i], s)) return true;
    return false;
}

static bool same_ns(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

static const pol_role_t *find_role(const char *name, const char *ns)
{
    for (size_t i = 0; i < api_policy_nroles; i++)
        if (!strcmp(api_policy_roles[i].name, name) && same_ns(api_policy_roles[i].ns, ns))
            return &api_policy_roles[i];
    return NULL;
}

static const pol_binding_t *find_binding(const char *name, const char *ns)
{
    for (size_t i = 0; i < api_policy_nbindings; i++)
        if (!strcmp(api_policy_bindings[i].name, name) && same_ns(api_policy_bindings[i].ns, ns))
            return &api_policy_bindings[i];
    return NULL;
}

/* Does the list allow `s`: it names it, or "*" (as RBAC matches). */
static bool list_allows(const char *const *l, const char *s)
{
    return list_has(l, "*") || list_has(l, s);
}

static bool rule_allows(const pol_rule_t *r, const char *verb, const char *group,
                        const char *resource)
{
    if (!r->resources || !list_allows(r->verbs, verb)) return false;
    return list_allows(r->groups, group) && list_allows(r->resources, resource);
}

static bool rule_allows_url(const pol_rule_t *r, const char *verb, const char *url)
{
    return r->urls && list_allows(r->verbs, verb) && list_allows(r->urls, url);
}

/* The roles an aggregated role collects: those whose labels carry one of
 * its selector pairs, followed through aggregated parts (as the aggregation
 * controller's result does). Returns the count written to out. */
static size_t parts_of(const pol_role_t *agg, const pol_role_t **out, size_t n, size_t cap)
{
    for (size_t s = 0; agg->aggregate && agg->aggregate[s]; s++)
        for (size_t i = 0; i < api_policy_nroles; i++) {
            const pol_role_t *r = &api_policy_roles[i];
            if (r == agg || r->ns || !list_has(r->labels, agg->aggregate[s])) continue;
            bool seen = false;
            for (size_t k = 0; k < n; k++)
                seen = seen || out[k] == r;
            if (seen || n == cap) continue;
            out[n++] = r;
            if (r->aggregate) n = parts_of(r, out, n, cap);
        }
    return n;
}

/* Does the role, or an aggregated role's parts, allow the request. */
static bool role_allows(const pol_role_t *role, const char *verb, const char *group,
                        const char *resource)
{
    const pol_role_t *parts[64];
    size_t n = 0;
    parts[n++] = role;
    if (role->aggregate) n = parts_of(role, parts, n, 64);
    for (size_t p = 0; p < n; p++)
        for (size_t i = 0; i < parts[p]->nrules; i++)
            if (rule_allows(&parts[p]->rules[i], verb, group, resource)) return true;
    return false;
}

static void test_counts(void **state)
{
    (void)state;
    size_t cluster = 0, ctl = 0, ns = 0, crb = 0, ctlb = 0, rb = 0;
    for (size_t i = 0; i < api_policy_nroles; i++) {
        const pol_role_t *r = &api_policy_roles[i];
        if (r->ns) {
            ns++;
            continue;
        }
        cluster++;
        if (!strncmp(r->name, CTL, strlen(CTL))) ctl++;
    }
    for (size_t i = 0; i < api_policy_nbindings; i++) {
        const pol_binding_t *b = &api_policy_bindings[i];
        if (b->ns) {
            rb++;
            continue;
        }
        crb++;
        if (!strncmp(b->name, CTL, strlen(CTL))) ctlb++;
    }
    assert_int_equal(cluster, N_CLUSTER_ROLES);
    assert_int_equal(ctl, N_CONTROLLER_ROLES);
    assert_int_equal(ns, N_ROLES);
    assert_int_equal(crb, N_CLUSTER_ROLE_BINDINGS);
    assert_int_equal(ctlb, N_CONTROLLER_ROLES);
    assert_int_equal(rb, N_ROLE_BINDINGS);
}

/* Names are unique per kind and namespace. */
static void test_unique_names(void **state)
{
    (void)state;
    for (size_t i = 0; i < api_policy_nroles; i++)
        for (size_t j = i + 1; j < api_policy_nroles; j++)
            if (!strcmp(api_policy_roles[i].name, api_policy_roles[j].name) &&
                same_ns(api_policy_roles[i].ns, api_policy_roles[j].ns))
                fail_msg("role %s/%s twice", api_policy_roles[i].ns ? api_policy_roles[i].ns : "",
                         api_policy_roles[i].name);
    for (size_t i = 0; i < api_policy_nbindings; i++)
        for (size_t j = i + 1; j < api_policy_nbindings; j++)
            if (!strcmp(api_policy_bindings[i].name, api_policy_bindings[j].name) &&
                same_ns(api_policy_bindings[i].ns, api_policy_bindings[j].ns))
                fail_msg("binding %s twice", api_policy_bindings[i].name);
}

/* Which testdata file an object is from: 0 the plain cluster file, 1 the
 * controllers' file, 2 the namespaced file. */
static int file_of(const char *name, const char *ns)
{
    return ns ? 2 : !strncmp(name, CTL, strlen(CTL)) ? 1 : 0;
}

static int by_ns_name(const char *ns_a, const char *a, const char *ns_b, const char *b)
{
    int c = strcmp(ns_a ? ns_a : "", ns_b ? ns_b : "");
    return c ? c : strcmp(a, b);
}

/* The table keeps the files' order: file by file, each sorted by namespace
 * and name as Kubernetes writes them. */
static void test_order(void **state)
{
    (void)state;
    for (size_t i = 1; i < api_policy_nroles; i++) {
        const pol_role_t *a = &api_policy_roles[i - 1], *b = &api_policy_roles[i];
        int fa = file_of(a->name, a->ns), fb = file_of(b->name, b->ns);
        if (fa > fb || (fa == fb && by_ns_name(a->ns, a->name, b->ns, b->name) >= 0))
            fail_msg("role %s is out of order after %s", b->name, a->name);
    }
    for (size_t i = 1; i < api_policy_nbindings; i++) {
        const pol_binding_t *a = &api_policy_bindings[i - 1], *b = &api_policy_bindings[i];
        int fa = file_of(a->name, a->ns), fb = file_of(b->name, b->ns);
        if (fa > fb || (fa == fb && by_ns_name(a->ns, a->name, b->ns, b->name) >= 0))
            fail_msg("binding %s is out of order after %s", b->name, a->name);
    }
}

static const char *const known_verbs[] = {"*",           "get",      "list",
                                          "watch",       "create",   "update",
                                          "patch",       "delete",   "deletecollection",
                                          "impersonate", "escalate", "approve",
                                          "sign",        "proxy",    NULL};

/* Kubernetes' rule builder sorts each list and drops repeats, so the YAML's
 * lists are strictly ascending: a list out of order is a slip. */
static void check_list(const char *role, size_t rule, const char *what, const char *const *l,
                       bool empty_ok)
{
    if (!l) return;
    if (!l[0]) fail_msg("%s rule %zu: %s is an empty list, not NULL", role, rule, what);
    for (size_t i = 0; l[i]; i++) {
        if (!empty_ok && !l[i][0]) fail_msg("%s rule %zu: empty string in %s", role, rule, what);
        if (i && strcmp(l[i - 1], l[i]) >= 0)
            fail_msg("%s rule %zu: %s not sorted at \"%s\"", role, rule, what, l[i]);
    }
}

/* Every rule has verbs and either resources (with groups) or URLs. */
static void test_rules(void **state)
{
    (void)state;
    for (size_t i = 0; i < api_policy_nroles; i++) {
        const pol_role_t *role = &api_policy_roles[i];
        if (role->aggregate) {
            if (role->nrules || role->rules) fail_msg("%s: aggregated, with rules", role->name);
            if (role->ns) fail_msg("%s: a Role cannot aggregate", role->name);
            continue;
        }
        if (!role->nrules || !role->rules) fail_msg("%s: no rules", role->name);
        for (size_t k = 0; k < role->nrules; k++) {
            const pol_rule_t *r = &role->rules[k];
            if (list_len(r->verbs) == 0) fail_msg("%s rule %zu: no verbs", role->name, k);
            for (size_t v = 0; r->verbs[v]; v++)
                if (!list_has(known_verbs, r->verbs[v]))
                    fail_msg("%s rule %zu: verb \"%s\"", role->name, k, r->verbs[v]);
            if (!r->resources == !r->urls)
                fail_msg("%s rule %zu: needs resources or urls, not both", role->name, k);
            if (r->resources && list_len(r->groups) == 0)
                fail_msg("%s rule %zu: resources without apiGroups", role->name, k);
            if (r->urls && (r->groups || r->names))
                fail_msg("%s rule %zu: urls with apiGroups or resourceNames", role->name, k);
            if (r->urls && role->ns)
                fail_msg("%s rule %zu: nonResourceURLs in a Role", role->name, k);
            for (size_t u = 0; r->urls && r->urls[u]; u++)
                if (r->urls[u][0] != '/' && strcmp(r->urls[u], "*"))
                    fail_msg("%s rule %zu: URL \"%s\"", role->name, k, r->urls[u]);
            check_list(role->name, k, "verbs", r->verbs, false);
            check_list(role->name, k, "apiGroups", r->groups, true);
            check_list(role->name, k, "resources", r->resources, false);
            check_list(role->name, k, "resourceNames", r->names, false);
            check_list(role->name, k, "nonResourceURLs", r->urls, false);
        }
    }
}

static void check_pairs(const char *role, const char *what, const char *const *l)
{
    for (size_t i = 0; l && l[i]; i++) {
        const char *eq = strchr(l[i], '=');
        if (!eq || eq == l[i] || !eq[1] || strchr(eq + 1, '='))
            fail_msg("%s: %s \"%s\" is not key=value", role, what, l[i]);
    }
}

/* Every aggregated role's selector is carried by another role. */
static void test_aggregation(void **state)
{
    (void)state;
    size_t aggregated = 0;
    for (size_t i = 0; i < api_policy_nroles; i++) {
        const pol_role_t *role = &api_policy_roles[i];
        check_pairs(role->name, "label", role->labels);
        check_pairs(role->name, "selector", role->aggregate);
        if (!role->aggregate) continue;
        aggregated++;
        for (size_t s = 0; role->aggregate[s]; s++) {
            size_t carriers = 0;
            for (size_t j = 0; j < api_policy_nroles; j++)
                if (j != i && !api_policy_roles[j].ns &&
                    list_has(api_policy_roles[j].labels, role->aggregate[s]))
                    carriers++;
            if (!carriers) fail_msg("%s: no role carries %s", role->name, role->aggregate[s]);
        }
    }
    /* admin, edit and view; cluster-admin is not aggregated. */
    assert_int_equal(aggregated, 3);
    assert_null(find_role("cluster-admin", NULL)->aggregate);
    const pol_role_t *parts[64];
    const pol_role_t *admin = find_role("admin", NULL);
    size_t n = parts_of(admin, parts, 0, 64);
    /* admin <- system:aggregate-to-admin, edit <- system:aggregate-to-edit,
     * view <- system:aggregate-to-view. */
    assert_int_equal(n, 5);
}

/* Every binding names a role the table defines, of the kind it says. */
static void test_binding_refs(void **state)
{
    (void)state;
    for (size_t i = 0; i < api_policy_nbindings; i++) {
        const pol_binding_t *b = &api_policy_bindings[i];
        assert_non_null(b->role_kind);
        assert_non_null(b->role);
        if (!strcmp(b->role_kind, "ClusterRole")) {
            if (!find_role(b->role, NULL))
                fail_msg("binding %s: no ClusterRole %s", b->name, b->role);
        } else if (!strcmp(b->role_kind, "Role")) {
            if (!b->ns) fail_msg("ClusterRoleBinding %s refers to a Role", b->name);
            if (!find_role(b->role, b->ns))
                fail_msg("binding %s/%s: no Role %s there", b->ns, b->name, b->role);
        } else {
            fail_msg("binding %s: roleRef kind %s", b->name, b->role_kind);
        }
    }
}

/* "User:NAME", "Group:NAME" or "ServiceAccount:NAMESPACE/NAME". */
static bool subject_parses(const char *s)
{
    const char *colon = strchr(s, ':');
    if (!colon || !colon[1]) return false;
    size_t kind = (size_t)(colon - s);
    const char *rest = colon + 1;
    if ((kind == 4 && !strncmp(s, "User", 4)) || (kind == 5 && !strncmp(s, "Group", 5)))
        return !strchr(rest, '/');
    if (kind == 14 && !strncmp(s, "ServiceAccount", 14)) {
        const char *slash = strchr(rest, '/');
        return slash && slash != rest && slash[1] && !strchr(slash + 1, '/') && !strchr(rest, ':');
    }
    return false;
}

static void test_subjects(void **state)
{
    (void)state;
    assert_true(subject_parses("User:system:kube-scheduler"));
    assert_true(subject_parses("ServiceAccount:kube-system/kube-dns"));
    assert_false(subject_parses("ServiceAccount:kube-dns"));
    assert_false(subject_parses("Group:"));
    assert_false(subject_parses("Robot:x"));
    size_t empty = 0;
    for (size_t i = 0; i < api_policy_nbindings; i++) {
        const pol_binding_t *b = &api_policy_bindings[i];
        if (!b->subjects)
            empty++;
        else if (!b->subjects[0])
            fail_msg("%s: empty subject list, not NULL", b->name);
        for (size_t k = 0; b->subjects && b->subjects[k]; k++)
            if (!subject_parses(b->subjects[k]))
                fail_msg("%s: subject \"%s\"", b->name, b->subjects[k]);
    }
    /* Only system:node's binding is kept with no subjects. */
    assert_int_equal(empty, 1);
    assert_null(find_binding("system:node", NULL)->subjects);
}

/* Each controller's ClusterRole is bound, under its own name, to its
 * service account in kube-system (addControllerRole). */
static void test_controller_bindings(void **state)
{
    (void)state;
    char want[256];
    for (size_t i = 0; i < api_policy_nroles; i++) {
        const pol_role_t *r = &api_policy_roles[i];
        if (r->ns || strncmp(r->name, CTL, strlen(CTL))) continue;
        const pol_binding_t *b = find_binding(r->name, NULL);
        if (!b) fail_msg("%s: no ClusterRoleBinding", r->name);
        snprintf(want, sizeof(want), "ServiceAccount:kube-system/%s", r->name + strlen(CTL));
        assert_string_equal(b->role, r->name);
        assert_int_equal(list_len(b->subjects), 1);
        assert_string_equal(b->subjects[0], want);
    }
    for (size_t i = 0; i < api_policy_nbindings; i++) {
        const pol_binding_t *b = &api_policy_bindings[i];
        if (!b->ns && !strncmp(b->name, CTL, strlen(CTL))) assert_string_equal(b->role, b->name);
    }
}

static void test_facts_cluster_admin(void **state)
{
    (void)state;
    const pol_role_t *ca = find_role("cluster-admin", NULL);
    assert_non_null(ca);
    assert_int_equal(ca->nrules, 2);
    const pol_rule_t *r = &ca->rules[0];
    assert_int_equal(list_len(r->verbs), 1);
    assert_string_equal(r->verbs[0], "*");
    assert_int_equal(list_len(r->groups), 1);
    assert_string_equal(r->groups[0], "*");
    assert_int_equal(list_len(r->resources), 1);
    assert_string_equal(r->resources[0], "*");
    assert_null(r->names);
    assert_null(r->urls);
    r = &ca->rules[1];
    assert_null(r->resources);
    assert_int_equal(list_len(r->verbs), 1);
    assert_string_equal(r->verbs[0], "*");
    assert_int_equal(list_len(r->urls), 1);
    assert_string_equal(r->urls[0], "*");

    const pol_binding_t *b = find_binding("cluster-admin", NULL);
    assert_non_null(b);
    assert_string_equal(b->role_kind, "ClusterRole");
    assert_string_equal(b->role, "cluster-admin");
    assert_true(list_has(b->subjects, "Group:system:masters"));
    /* No other binding hands out cluster-admin. */
    for (size_t i = 0; i < api_policy_nbindings; i++)
        if (&api_policy_bindings[i] != b)
            assert_string_not_equal(api_policy_bindings[i].role, "cluster-admin");
}

static void test_facts_public(void **state)
{
    (void)state;
    const pol_role_t *piv = find_role("system:public-info-viewer", NULL);
    assert_non_null(piv);
    static const char *const urls[] = {"/healthz", "/livez", "/readyz", "/version", "/version/"};
    for (size_t u = 0; u < sizeof(urls) / sizeof(urls[0]); u++) {
        bool ok = false;
        for (size_t i = 0; i < piv->nrules; i++)
            ok = ok || rule_allows_url(&piv->rules[i], "get", urls[u]);
        if (!ok) fail_msg("public-info-viewer does not allow get %s", urls[u]);
    }
    /* Nothing more: one rule, those five URLs, get only. */
    assert_int_equal(piv->nrules, 1);
    assert_int_equal(list_len(piv->rules[0].urls), 5);
    assert_int_equal(list_len(piv->rules[0].verbs), 1);
    assert_false(rule_allows_url(&piv->rules[0], "get", "/metrics"));
    /* Bound to everyone, authenticated or not. */
    const pol_binding_t *b = find_binding("system:public-info-viewer", NULL);
    assert_non_null(b);
    assert_true(list_has(b->subjects, "Group:system:authenticated"));
    assert_true(list_has(b->subjects, "Group:system:unauthenticated"));
    /* Discovery is for the authenticated only (since 1.14). */
    b = find_binding("system:discovery", NULL);
    assert_non_null(b);
    assert_false(list_has(b->subjects, "Group:system:unauthenticated"));
}

static void test_facts_aggregates(void **state)
{
    (void)state;
    const pol_role_t *view = find_role("view", NULL);
    const pol_role_t *edit = find_role("edit", NULL);
    const pol_role_t *admin = find_role("admin", NULL);
    assert_non_null(view);
    assert_non_null(edit);
    assert_non_null(admin);
    /* view does not read secrets, nor escalate; edit and admin do read them. */
    assert_false(role_allows(view, "get", "", "secrets"));
    assert_false(role_allows(view, "list", "", "secrets"));
    assert_false(role_allows(view, "create", "", "pods/exec"));
    assert_true(role_allows(view, "list", "", "pods"));
    assert_true(role_allows(view, "get", "apps", "deployments"));
    assert_true(role_allows(edit, "get", "", "secrets"));
    assert_true(role_allows(edit, "list", "", "pods")); /* through view */
    assert_false(role_allows(edit, "create", "rbac.authorization.k8s.io", "rolebindings"));
    assert_true(role_allows(admin, "create", "rbac.authorization.k8s.io", "rolebindings"));
    assert_true(role_allows(admin, "get", "", "secrets")); /* through edit */
    assert_true(list_has(edit->labels, "rbac.authorization.k8s.io/aggregate-to-admin=true"));
    assert_true(list_has(view->labels, "rbac.authorization.k8s.io/aggregate-to-edit=true"));
}

static void test_facts_components(void **state)
{
    (void)state;
    const pol_role_t *r = find_role("system:kube-scheduler", NULL);
    assert_non_null(r);
    assert_int_equal(r->nrules, 20);
    assert_true(role_allows(r, "create", "", "pods/binding"));
    assert_true(role_allows(r, "watch", "storage.k8s.io", "volumeattachments"));
    assert_false(role_allows(r, "get", "resource.k8s.io", "resourceclaims"));
    r = find_role("system:kube-controller-manager", NULL);
    assert_non_null(r);
    assert_true(role_allows(r, "watch", "apps", "deployments")); /* the `*` informers rule */
    assert_false(role_allows(r, "get", "apps", "deployments"));
    r = find_role("system:node", NULL);
    assert_non_null(r);
    assert_int_equal(r->nrules, 22);
    r = find_role("system:discovery", NULL);
    assert_non_null(r);
    assert_int_equal(list_len(r->rules[0].urls), 11);
    r = find_role(CTL "statefulset-controller", NULL);
    assert_non_null(r);
    assert_int_equal(r->nrules, 10);
    assert_null(find_role(CTL "resource-claim-controller", NULL));
    assert_null(find_role(CTL "service-cidrs-controller", NULL));
    r = find_role("system::leader-locking-kube-scheduler", "kube-system");
    assert_non_null(r);
    assert_null(find_role("system::leader-locking-kube-scheduler", NULL));
    assert_non_null(find_role(CTL "bootstrap-signer", "kube-public"));
    assert_non_null(find_role(CTL "bootstrap-signer", "kube-system"));
    const pol_binding_t *b =
        find_binding("system::extension-apiserver-authentication-reader", "kube-system");
    assert_non_null(b);
    assert_string_equal(b->role, "extension-apiserver-authentication-reader");
    assert_true(list_has(b->subjects, "User:system:kube-scheduler"));
    b = find_binding("system:service-account-issuer-discovery", NULL);
    assert_non_null(b);
    assert_true(list_has(b->subjects, "Group:system:serviceaccounts"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_unique_names),
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_aggregation),
        cmocka_unit_test(test_binding_refs),
        cmocka_unit_test(test_subjects),
        cmocka_unit_test(test_controller_bindings),
        cmocka_unit_test(test_facts_cluster_admin),
        cmocka_unit_test(test_facts_public),
        cmocka_unit_test(test_facts_aggregates),
        cmocka_unit_test(test_facts_components),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
