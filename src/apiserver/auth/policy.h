/*
 * policy.h -- Kubernetes' bootstrap RBAC policy as data: the ClusterRoles,
 * ClusterRoleBindings, Roles and RoleBindings kube-apiserver installs at
 * start (plugin/pkg/auth/authorizer/rbac/bootstrappolicy: policy.go,
 * controller_policy.go, namespace_policy.go), each row a fact of that policy.
 *
 * The rows hold what differs between objects; what every bootstrap object
 * carries (the label kubernetes.io/bootstrapping=rbac-defaults and the
 * annotation rbac.authorization.kubernetes.io/autoupdate=true) is added by
 * the code that builds them (policy.c), which also reconciles them at start.
 *
 * Lists are NULL-terminated arrays of strings; NULL for an empty list.
 * Immutable data: safe from any thread.
 */
#ifndef KP_API_AUTH_POLICY_H
#define KP_API_AUTH_POLICY_H

#include <stddef.h>

/* One PolicyRule. */
typedef struct pol_rule {
    const char *const *verbs;
    const char *const *groups;    /* apiGroups ("" is the core group) */
    const char *const *resources; /* "pods", "pods/status", "*" ... */
    const char *const *names;     /* resourceNames */
    const char *const *urls;      /* nonResourceURLs */
} pol_rule_t;

/* One ClusterRole (ns NULL) or Role (ns set). */
typedef struct pol_role {
    const char *name;
    const char *ns;
    /* Labels beyond kubernetes.io/bootstrapping, "key=value" each (the
     * aggregate-to-* labels of the aggregated roles' parts). */
    const char *const *labels;
    /* An aggregated ClusterRole: its aggregationRule's clusterRoleSelectors,
     * one "key=value" matchLabels pair each; NULL: not aggregated. An
     * aggregated role's own `rules` are its starting rules (Kubernetes
     * ships them empty: the aggregation controller fills them in). */
    const char *const *aggregate;
    const pol_rule_t *rules;
    size_t nrules;
} pol_role_t;

/* One ClusterRoleBinding (ns NULL; role_kind "ClusterRole") or RoleBinding. */
typedef struct pol_binding {
    const char *name;
    const char *ns;
    const char *role_kind; /* "ClusterRole" or "Role" */
    const char *role;
    /* "User:NAME", "Group:NAME" or "ServiceAccount:NAMESPACE/NAME". */
    const char *const *subjects;
} pol_binding_t;

extern const pol_role_t api_policy_roles[];
extern const size_t api_policy_nroles;
extern const pol_binding_t api_policy_bindings[];
extern const size_t api_policy_nbindings;

#endif
