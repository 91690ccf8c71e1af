/* TEMPORARY test data (replaced by the helper's transcription). */
#include "apiserver/auth/policy.h"
#define L(...) ((const char *const[]){__VA_ARGS__, NULL})
#define RULES(...)                                                                                 \
    .rules = (const pol_rule_t[]){__VA_ARGS__},                                                    \
    .nrules = sizeof((const pol_rule_t[]){__VA_ARGS__}) / sizeof(pol_rule_t)
const pol_role_t api_policy_roles[] = {
    {.name = "cluster-admin",
     RULES({.verbs = L("*"), .groups = L("*"), .resources = L("*")},
           {.verbs = L("*"), .urls = L("*")})},
    {.name = "view", .aggregate = L("rbac.authorization.k8s.io/aggregate-to-view=true")},
    {.name = "system:aggregate-to-view",
     .labels = L("rbac.authorization.k8s.io/aggregate-to-view=true"),
     RULES({.verbs = L("get", "list", "watch"),
            .groups = L(""),
            .resources = L("pods", "configmaps", "namespaces")})},
    {.name = "system:basic-user",
     RULES({.verbs = L("create"),
            .groups = L("authorization.k8s.io"),
            .resources = L("selfsubjectaccessreviews", "selfsubjectrulesreviews")},
           {.verbs = L("create"),
            .groups = L("authentication.k8s.io"),
            .resources = L("selfsubjectreviews")})},
    {.name = "system:discovery",
     RULES({.verbs = L("get"),
            .urls = L("/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi",
                      "/openapi/*", "/readyz", "/version", "/version/")})},
    {.name = "system:public-info-viewer",
     RULES(
         {.verbs = L("get"), .urls = L("/healthz", "/livez", "/readyz", "/version", "/version/")})},
};
const size_t api_policy_nroles = sizeof api_policy_roles / sizeof api_policy_roles[0];
const pol_binding_t api_policy_bindings[] = {
    {.name = "cluster-admin",
     .role_kind = "ClusterRole",
     .role = "cluster-admin",
     .subjects = L("Group:system:masters")},
    {.name = "system:basic-user",
     .role_kind = "ClusterRole",
     .role = "system:basic-user",
     .subjects = L("Group:system:authenticated")},
    {.name = "system:discovery",
     .role_kind = "ClusterRole",
     .role = "system:discovery",
     .subjects = L("Group:system:authenticated")},
    {.name = "system:public-info-viewer",
     .role_kind = "ClusterRole",
     .role = "system:public-info-viewer",
     .subjects = L("Group:system:authenticated", "Group:system:unauthenticated")},
};
const size_t api_policy_nbindings = sizeof api_policy_bindings / sizeof api_policy_bindings[0];
