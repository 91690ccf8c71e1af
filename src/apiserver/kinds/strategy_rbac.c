/*
 * strategy_rbac.c -- rbac.authorization.k8s.io/v1 Roles, ClusterRoles,
 * RoleBindings and ClusterRoleBindings: Kubernetes' defaults (the roleRef's
 * and subjects' apiGroup) and its checks (pkg/apis/rbac/validation): rules
 * need verbs, resource rules need apiGroups and resources, non-resource URLs
 * only in ClusterRoles; a binding's roleRef is required, of a supported
 * kind, and never changes; subjects are Users, Groups or ServiceAccounts
 * (which need a namespace in a ClusterRoleBinding). Names are path segments.
 *
 * Writes of them are checked against escalation as Kubernetes' policy-based
 * storage checks them (pkg/registry/rbac/{role,clusterrole,...}/policybased): a user may write a
 * Role or ClusterRole only with rules they hold themselves, unless they may
 * `escalate` on it; a binding only to a role whose rules they hold, unless
 * they may `bind` that role. system:masters may always; an update that
 * changes only what the garbage collector changes is not checked.
 *
 * Safe from any thread: the checks read the authorizer's snapshot.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/auth/authz.h"
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

/* ---- escalation ---- */

/* Whether obj and old differ only in what the garbage collector changes
 * (Kubernetes' IsOnlyMutatingGCFields: owner references and finalizers). */
static int only_gc_fields(const json_t *obj, const json_t *old)
{
    if (!old) return 0;
    json_t *a = json_deep_copy(obj), *b = json_deep_copy(old);
    static const char *const drop[] = {"ownerReferences", "finalizers", "managedFields",
                                       "resourceVersion", "generation"};
    for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++) {
        json_object_del(json_object_get(a, "metadata"), drop[i]);
        json_object_del(json_object_get(b, "metadata"), drop[i]);
    }
    int same = a && b && json_equal(a, b);
    json_decref(a);
    json_decref(b);
    return same;
}

/* Go's %q of a []string: ["a" "b"]. */
static void quoted_list(char *out, size_t len, const char *const *v, size_t n)
{
    size_t o = (size_t)snprintf(out, len, "[");
    for (size_t i = 0; i < n && o < len; i++)
        o += (size_t)snprintf(out + o, len - o, "%s\"%s\"", i ? " " : "", v[i]);
    if (o < len) snprintf(out + o, len - o, "]");
}

static void json_quoted_list(char *out, size_t len, const json_t *a)
{
    const char *v[64];
    size_t n = 0, i;
    const json_t *e;
    json_array_foreach(a, i, e)
        if (n < 64 && json_is_string(e)) v[n++] = json_string_value(e);
    quoted_list(out, len, v, n);
}

/* rbacv1helpers.CompactString. */
static void compact_string(const json_t *r, char *out, size_t len)
{
    static const struct {
        const char *key, *label;
    } parts[] = {{"apiGroups", "APIGroups"},
                 {"resources", "Resources"},
                 {"nonResourceURLs", "NonResourceURLs"},
                 {"resourceNames", "ResourceNames"},
                 {"verbs", "Verbs"}};
    size_t o = (size_t)snprintf(out, len, "{");
    int first = 1;
    for (size_t i = 0; i < 5 && o < len; i++) {
        const json_t *a = json_object_get(r, parts[i].key);
        if (!json_array_size(a)) continue;
        char list[1024];
        json_quoted_list(list, sizeof list, a);
        o += (size_t)snprintf(out + o, len - o, "%s%s:%s", first ? "" : ", ", parts[i].label, list);
        first = 0;
    }
    if (o < len) snprintf(out + o, len - o, "}");
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The missing atoms compacted (those of one group and one resource and
 * nothing else merge their verbs, as CompactRules does), each as its
 * CompactString, sorted, unique, one per line. */
static void describe_missing(json_t *missing, char *out, size_t len)
{
    json_t *compact = json_array();
    size_t i;
    json_t *m;
    json_array_foreach(missing, i, m) {
        int simple = !json_object_get(m, "resourceNames") && !json_object_get(m, "nonResourceURLs");
        json_t *into = NULL;
        size_t k;
        json_t *c;
        if (simple)
            json_array_foreach(compact, k, c) {
                if (!json_object_get(c, "resourceNames") &&
                    !json_object_get(c, "nonResourceURLs") &&
                    json_equal(json_object_get(c, "apiGroups"), json_object_get(m, "apiGroups")) &&
                    json_equal(json_object_get(c, "resources"), json_object_get(m, "resources")))
                    into = c;
            }
        if (into)
            json_array_extend(json_object_get(into, "verbs"), json_object_get(m, "verbs"));
        else
            json_array_append(compact, m);
    }
    size_t n = json_array_size(compact), o = 0;
    char **lines = calloc(n ? n : 1, sizeof *lines);
    for (i = 0; lines && i < n; i++) {
        char buf[2048];
        compact_string(json_array_get(compact, i), buf, sizeof buf);
        lines[i] = strdup(buf);
    }
    out[0] = '\0';
    if (lines) {
        qsort(lines, n, sizeof *lines, cmp_str);
        for (i = 0; i < n; i++) {
            if (!lines[i] || (i && lines[i - 1] && !strcmp(lines[i], lines[i - 1]))) continue;
            if (o < len) o += (size_t)snprintf(out + o, len - o, "%s%s", o ? "\n" : "", lines[i]);
        }
        for (i = 0; i < n; i++)
            free(lines[i]);
    }
    free(lines);
    json_decref(compact);
}

/* ConfirmNoEscalation: 0 when r's user holds every rule of `rules` in the
 * request's namespace, else -1 after a 403 naming what is missing. */
static int confirm_no_escalation(api_req_t *r, const json_t *rules, const char *name)
{
    json_t *owner = NULL, *missing = NULL;
    if (!api_authz_held(r->srv->authz, &r->user, r->route.ns, &owner))
        missing = api_rules_uncovered(owner, rules);
    json_decref(owner);
    if (!missing) return api__reply_forbidden(r, name, "out of memory");
    if (!json_array_size(missing)) {
        json_decref(missing);
        return 0;
    }
    char what[8192], groups[2048];
    describe_missing(missing, what, sizeof what);
    json_decref(missing);
    quoted_list(groups, sizeof groups, r->user.groups, r->user.ngroups);
    return api__reply_forbidden(r, name,
                                "user \"%s\" (groups=%s) is attempting to grant RBAC permissions "
                                "not currently held:\n%s",
                                r->user.name, groups, what);
}

/* May r's user do `verb` on `resource` (rbac) `name` in `ns`? */
static int may(api_req_t *r, const char *verb, const char *resource, const char *ns,
               const char *name)
{
    api_attrs_t a = {.user = &r->user,
                     .verb = verb,
                     .resource_request = 1,
                     .ns = ns,
                     .group = RBAC_GROUP,
                     .version = "v1",
                     .resource = resource,
                     .sub = "",
                     .name = name,
                     .path = ""};
    return api_authorize(r->srv->authz, &a, NULL, 0);
}

/* Roles and ClusterRoles: escalate, or hold every rule written. */
static int role_admission(api_req_t *r, json_t *obj, const json_t *old, const char *name)
{
    if (!r->srv->authz || api_user_in_group(&r->user, API_GROUP_MASTERS)) return 0;
    if (only_gc_fields(obj, old)) return 0;
    if (may(r, "escalate", r->route.resource, r->route.ns, name)) return 0;
    return confirm_no_escalation(r, json_object_get(obj, "rules"), name);
}

/* Bindings: bind the role named, or hold every rule of it. */
static int binding_admission(api_req_t *r, json_t *obj, const json_t *old, const char *name)
{
    if (!r->srv->authz || api_user_in_group(&r->user, API_GROUP_MASTERS)) return 0;
    if (only_gc_fields(obj, old)) return 0;
    const json_t *ref = json_object_get(obj, "roleRef");
    const char *kind = api_json_str(ref, "kind"), *role = api_json_str(ref, "name");
    int cluster = !strcmp(kind, "ClusterRole");
    if (may(r, "bind", cluster ? "clusterroles" : "roles", r->route.ns, role)) return 0;
    json_t *rules = NULL;
    if (api_authz_role_rules(r->srv->authz, r->route.ns, kind, role, &rules))
        return api__reply_forbidden(r, name, "out of memory");
    /* A role that does not exist grants nothing: nothing to escalate. */
    int rc = rules ? confirm_no_escalation(r, rules, name) : 0;
    json_decref(rules);
    return rc;
}

const api_strategy_t api_strategy_role = {
    .name_rule = API_NAME_PATH_SEGMENT,
    .admission = role_admission,
    .validate = role_validate,
};

const api_strategy_t api_strategy_clusterrole = {
    .name_rule = API_NAME_PATH_SEGMENT,
    .admission = role_admission,
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
    .admission = binding_admission,
    .validate = rolebinding_validate,
};

const api_strategy_t api_strategy_clusterrolebinding = {
    .name_rule = API_NAME_PATH_SEGMENT,
    .defaults = binding_defaults,
    .admission = binding_admission,
    .validate = clusterrolebinding_validate,
};
