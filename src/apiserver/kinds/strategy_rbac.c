/*
 * strategy_rbac.c -- rbac.authorization.k8s.io/v1 Roles, ClusterRoles,
 * RoleBindings and ClusterRoleBindings: Kubernetes' defaults (the roleRef's
 * and subjects' apiGroup) and its checks (pkg/apis/rbac/validation): rules
 * need verbs, resource rules need apiGroups and resources, non-resource URLs
 * only in ClusterRoles; a binding's roleRef is required, of a supported
 * kind, and never changes; subjects are Users, Groups or ServiceAccounts
 * (which need a namespace in a ClusterRoleBinding). Names are path segments.
 * The objects are stored and validated; enforcing them is a later issue.
 *
 * Pure functions of their arguments: safe from any thread.
 */
#include <stdio.h>
#include <string.h>

#include "apiserver/http/http.h"
#include "apiserver/schema/selector.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/kinds/strategy_int.h"

#define RBAC_GROUP "rbac.authorization.k8s.io"

/* ---- Role, ClusterRole ---- */

static int nonempty_list(const json_t *rule, const char *key)
{
    return json_array_size(json_object_get(rule, key)) > 0;
}

static void validate_rule(const json_t *rule, int namespaced, const char *path, json_t *causes)
{
    char f[128];
    snprintf(f, sizeof f, "%s.verbs", path);
    if (!nonempty_list(rule, "verbs"))
        api__required(causes, f, "verbs must contain at least one value");
    if (nonempty_list(rule, "nonResourceURLs")) {
        const json_t *urls = json_object_get(rule, "nonResourceURLs");
        snprintf(f, sizeof f, "%s.nonResourceURLs", path);
        if (namespaced)
            api__invalid(causes, f, urls, "namespaced rules cannot apply to non-resource URLs");
        if (nonempty_list(rule, "apiGroups") || nonempty_list(rule, "resources") ||
            nonempty_list(rule, "resourceNames"))
            api__invalid(causes, f, urls,
                         "rules cannot apply to both regular resources and non-resource URLs");
        return;
    }
    snprintf(f, sizeof f, "%s.apiGroups", path);
    if (!nonempty_list(rule, "apiGroups"))
        api__required(causes, f, "resource rules must supply at least one api group");
    snprintf(f, sizeof f, "%s.resources", path);
    if (!nonempty_list(rule, "resources"))
        api__required(causes, f, "resource rules must supply at least one resource");
    snprintf(f, sizeof f, "%s.resourceNames", path);
    if (nonempty_list(rule, "resourceNames") &&
        json_array_size(json_object_get(rule, "resources")) > 1)
        api__required(causes, f, "resource names cannot apply to multiple resources");
}

static void validate_rules(const json_t *role, int namespaced, json_t *causes)
{
    size_t i;
    json_t *rule;
    json_array_foreach(json_object_get(role, "rules"), i, rule) {
        char path[48];
        snprintf(path, sizeof path, "rules[%zu]", i);
        validate_rule(rule, namespaced, path, causes);
    }
}

static void role_validate(const json_t *role, const json_t *old, json_t *causes)
{
    (void)old;
    validate_rules(role, 1, causes);
}

static void clusterrole_validate(const json_t *role, const json_t *old, json_t *causes)
{
    (void)old;
    validate_rules(role, 0, causes);
    const json_t *agg = json_object_get(role, "aggregationRule");
    if (!agg || json_is_null(agg)) return;
    const json_t *sels = json_object_get(agg, "clusterRoleSelectors");
    if (!json_array_size(sels))
        api__required(causes, "aggregationRule.clusterRoleSelectors",
                      "at least one clusterRoleSelector required if aggregationRule is non-nil");
    size_t i;
    json_t *s;
    json_array_foreach(sels, i, s) {
        sel_label_t *sel = NULL;
        char err[256], f[96];
        if (sel_label_from_json(s, &sel, err, sizeof err)) {
            snprintf(f, sizeof f, "aggregationRule.clusterRoleSelectors[%zu]", i);
            api__invalid(causes, f, s, err);
        }
        sel_label_free(sel);
    }
}

const api_strategy_t api_strategy_role = {
    .name_rule = API_NAME_PATH_SEGMENT,
    .validate = role_validate,
};

const api_strategy_t api_strategy_clusterrole = {
    .name_rule = API_NAME_PATH_SEGMENT,
    .validate = clusterrole_validate,
};

/* ---- RoleBinding, ClusterRoleBinding ---- */

/* SetDefaults_RoleBinding, SetDefaults_Subject. */
static void binding_defaults(json_t *b)
{
    json_t *ref = api_json_child(b, "roleRef");
    if (!*api_json_str(ref, "apiGroup"))
        json_object_set_new(ref, "apiGroup", json_string(RBAC_GROUP));
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(b, "subjects"), i, s) {
        const char *kind = api_json_str(s, "kind");
        if (!json_is_object(s) || *api_json_str(s, "apiGroup")) continue;
        if (!strcmp(kind, "User") || !strcmp(kind, "Group"))
            json_object_set_new(s, "apiGroup", json_string(RBAC_GROUP));
    }
}

static void validate_subject(const json_t *s, int namespaced, const char *path, json_t *causes)
{
    static const char *const kinds[] = {"ServiceAccount", "User", "Group", NULL};
    static const char *const rbac_group[] = {RBAC_GROUP, NULL};
    static const char *const core_group[] = {"", NULL};
    char f[128];
    const char *name = api_json_str(s, "name"), *kind = api_json_str(s, "kind");
    const json_t *group = json_object_get(s, "apiGroup");
    const char *g = json_string_value(group) ? json_string_value(group) : "";
    snprintf(f, sizeof f, "%s.name", path);
    if (!*name) api__required(causes, f, "");
    if (!strcmp(kind, "ServiceAccount")) {
        if (*name) api__dns_name(causes, f, name, 0);
        snprintf(f, sizeof f, "%s.apiGroup", path);
        if (*g) api__not_supported(causes, f, group, core_group);
        snprintf(f, sizeof f, "%s.namespace", path);
        if (!namespaced && !*api_json_str(s, "namespace")) api__required(causes, f, "");
    } else if (!strcmp(kind, "User") || !strcmp(kind, "Group")) {
        if (!*name) {
            api__invalid_str(causes, f, "",
                             !strcmp(kind, "User") ? "user name cannot be empty"
                                                   : "group name cannot be empty");
        }
        snprintf(f, sizeof f, "%s.apiGroup", path);
        if (strcmp(g, RBAC_GROUP)) {
            api__not_supported_str(causes, f, g, rbac_group);
        }
    } else {
        snprintf(f, sizeof f, "%s.kind", path);
        api__not_supported_str(causes, f, kind, kinds);
    }
}

/* Go prints the RoleRef struct in "cannot change roleRef". */
static void roleref_changed(const json_t *ref, json_t *causes)
{
    api_cause(causes, "FieldValueInvalid", "roleRef",
              "Invalid value: rbac.RoleRef{APIGroup:\"%s\", Kind:\"%s\", Name:\"%s\"}: cannot "
              "change roleRef",
              api_json_str(ref, "apiGroup"), api_json_str(ref, "kind"), api_json_str(ref, "name"));
}

static void validate_binding(const json_t *b, const json_t *old, int namespaced, json_t *causes)
{
    static const char *const ns_kinds[] = {"Role", "ClusterRole", NULL};
    static const char *const cluster_kinds[] = {"ClusterRole", NULL};
    static const char *const groups[] = {RBAC_GROUP, NULL};
    const json_t *ref = json_object_get(b, "roleRef");
    const char *group = api_json_str(ref, "apiGroup"), *kind = api_json_str(ref, "kind");
    const char *name = api_json_str(ref, "name");
    const char *const *kinds = namespaced ? ns_kinds : cluster_kinds;
    if (strcmp(group, RBAC_GROUP)) {
        api__not_supported_str(causes, "roleRef.apiGroup", group, groups);
    }
    if (!api__in(kind, kinds)) {
        api__not_supported_str(causes, "roleRef.kind", kind, kinds);
    }
    const char *bad = *name ? api__path_segment_invalid(name) : NULL;
    if (!*name) {
        api__required(causes, "roleRef.name", "");
    } else if (bad) {
        api__invalid_str(causes, "roleRef.name", name, bad);
    }
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(b, "subjects"), i, s) {
        char path[48];
        snprintf(path, sizeof path, "subjects[%zu]", i);
        validate_subject(s, namespaced, path, causes);
    }
    if (old && !api_json_same(ref, json_object_get(old, "roleRef"))) roleref_changed(ref, causes);
}

static void rolebinding_validate(const json_t *b, const json_t *old, json_t *causes)
{
    validate_binding(b, old, 1, causes);
}

static void clusterrolebinding_validate(const json_t *b, const json_t *old, json_t *causes)
{
    validate_binding(b, old, 0, causes);
}

const api_strategy_t api_strategy_rolebinding = {
    .name_rule = API_NAME_PATH_SEGMENT,
    .defaults = binding_defaults,
    .validate = rolebinding_validate,
};

const api_strategy_t api_strategy_clusterrolebinding = {
    .name_rule = API_NAME_PATH_SEGMENT,
    .defaults = binding_defaults,
    .validate = clusterrolebinding_validate,
};
