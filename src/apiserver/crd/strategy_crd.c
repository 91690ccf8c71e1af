/*
 * strategy_crd.c -- CustomResourceDefinition objects: their defaults, and the
 * checks Kubernetes' ValidateCustomResourceDefinition makes on names, group,
 * scope, versions and the API approval annotation, with its field paths and
 * messages.
 *
 * One rule is kplane's own, stricter than Kubernetes: a CRD may never name a
 * built-in resource (its spec.group and spec.names.plural). Kubernetes lets
 * such a CRD exist because its built-ins and its custom resources live under
 * different etcd prefixes and its built-in handlers answer first; kplane keys
 * both as /registry/<group>/<resource>/, so such a CRD would share the
 * built-in's keys, and deleting it would delete the built-in's objects. It is
 * refused on create (422), whatever its annotations say, and the controller
 * (crd.c) neither serves one that is already stored nor deletes its keys.
 *
 * Everything here is a pure function of its arguments: safe from any thread.
 */
#include <stdio.h>
#include <string.h>

#include "apiserver/schema/crd_schema.h"
#include "apiserver/http/http.h"
#include "apiserver/rest/rest.h"
#include "apiserver/crd/crd.h"
#include "store/store.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/kinds/strategy_int.h"

#define APPROVAL_ANNOTATION "api-approved.kubernetes.io"
#define APPROVAL_PATH       "metadata.annotations[" APPROVAL_ANNOTATION "]"
#define APPROVAL_SEE        "see https://github.com/kubernetes/enhancements/pull/1111"
/* GetAPIApprovalState's reasons: the condition's message and the cause's. */
#define APPROVAL_MISSING                                                                           \
    "protected groups must have approval annotation \"" APPROVAL_ANNOTATION "\", " APPROVAL_SEE
#define APPROVAL_INVALID                                                                           \
    "protected groups must have approval annotation \"" APPROVAL_ANNOTATION "\" with either a "    \
    "URL or a reason starting with \"unapproved\", " APPROVAL_SEE

/* ---- defaults ---- */

static void crd_prepare_create(json_t *obj)
{
    json_t *meta = api_json_child(obj, "metadata");
    json_t *fin = json_object_get(meta, "finalizers");
    if (!json_is_array(fin)) {
        fin = json_array();
        json_object_set_new(meta, "finalizers", fin);
    }
    size_t i;
    json_t *f;
    json_array_foreach(fin, i, f)
        if (!strcmp(json_string_value(f) ?: "", API_CRD_FINALIZER)) return;
    json_array_append_new(fin, json_string(API_CRD_FINALIZER));
    json_object_del(obj, "status");
}

static void lower(const char *in, char *out, size_t n)
{
    size_t i = 0;
    for (; in[i] && i + 1 < n; i++)
        out[i] = (char)(in[i] >= 'A' && in[i] <= 'Z' ? in[i] - 'A' + 'a' : in[i]);
    out[i] = '\0';
}

static void crd_defaults(json_t *obj)
{
    json_t *spec = api_json_child(obj, "spec");
    json_t *names = api_json_child(spec, "names");
    const char *kind = api_json_str(names, "kind");
    if (*kind && !json_object_get(names, "singular")) {
        char s[256];
        lower(kind, s, sizeof s);
        json_object_set_new(names, "singular", json_string(s));
    }
    if (*kind && !json_object_get(names, "listKind"))
        json_object_set_new(names, "listKind", json_sprintf("%sList", kind));
    if (!json_object_get(spec, "conversion"))
        json_object_set_new(spec, "conversion", json_pack("{s:s}", "strategy", "None"));
}

/* ---- name rules ---- */

/* An Invalid cause at path for value v when it is not a DNS-1035 label;
 * `prefix` goes before the rule (kinds: "may have mixed case, ..."). */
static void check_label(const char *v, int fold, const char *path, const char *prefix,
                        json_t *causes)
{
    char why[512];
    api_dns1035_messages(v, fold, why, sizeof why);
    if (*why)
        api_cause(causes, "FieldValueInvalid", path, "Invalid value: \"%s\": %s%s", v, prefix, why);
}

static void check_label_list(const json_t *list, const char *path, json_t *causes)
{
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v) {
        char p[96];
        snprintf(p, sizeof p, "%s[%zu]", path, i);
        check_label(json_string_value(v) ?: "", 0, p, "", causes);
    }
}

/* ValidateCustomResourceDefinitionNames, with the required names first as
 * validateCustomResourceDefinitionSpec checks them. */
static void check_names(const json_t *names, json_t *causes)
{
    static const char *const required[] = {"plural", "singular", "kind", "listKind"};
    for (size_t k = 0; k < sizeof required / sizeof *required; k++) {
        char field[64];
        snprintf(field, sizeof field, "spec.names.%s", required[k]);
        if (!*api_json_str(names, required[k]))
            api_cause(causes, "FieldValueRequired", field, "Required value");
    }
    const char *kinds = "may have mixed case, but should otherwise match: ";
    if (*api_json_str(names, "plural"))
        check_label(api_json_str(names, "plural"), 0, "spec.names.plural", "", causes);
    if (*api_json_str(names, "singular"))
        check_label(api_json_str(names, "singular"), 0, "spec.names.singular", "", causes);
    if (*api_json_str(names, "kind"))
        check_label(api_json_str(names, "kind"), 1, "spec.names.kind", kinds, causes);
    if (*api_json_str(names, "listKind"))
        check_label(api_json_str(names, "listKind"), 1, "spec.names.listKind", kinds, causes);
    check_label_list(json_object_get(names, "shortNames"), "spec.names.shortNames", causes);
    if (*api_json_str(names, "kind") &&
        !strcmp(api_json_str(names, "kind"), api_json_str(names, "listKind")))
        api_cause(causes, "FieldValueInvalid", "spec.names.listKind",
                  "Invalid value: \"%s\": kind and listKind may not be the same",
                  api_json_str(names, "listKind"));
    check_label_list(json_object_get(names, "categories"), "spec.names.categories", causes);
}

static void check_group(const char *group, json_t *causes)
{
    const char *why = *group ? api_name_invalid(group, 0) : NULL;
    if (!*group)
        api_cause(causes, "FieldValueRequired", "spec.group", "Required value");
    else if (why)
        api_cause(causes, "FieldValueInvalid", "spec.group", "Invalid value: \"%s\": %s", group,
                  why);
    else if (!strchr(group, '.'))
        api_cause(causes, "FieldValueInvalid", "spec.group",
                  "Invalid value: \"%s\": should be a domain with at least one dot", group);
}

/* ---- API approval (Kubernetes' apihelpers.GetAPIApprovalState) ---- */

int api_crd_protected_group(const char *group)
{
    static const char *const roots[] = {"k8s.io", "kubernetes.io"};
    size_t n = strlen(group);
    for (size_t i = 0; i < 2; i++) {
        size_t r = strlen(roots[i]);
        if (!strcmp(group, roots[i]) ||
            (n > r && group[n - r - 1] == '.' && !strcmp(group + n - r, roots[i])))
            return 1;
    }
    return 0;
}

/* Does v parse as Go's url.ParseRequestURI with a scheme and a host? The
 * scheme is [A-Za-z][A-Za-z0-9+.-]*, "://", then a host up to '/', '?' or
 * '#'; no space or control byte anywhere (Go refuses those). */
static int approval_url(const char *v)
{
    const char *p = v;
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z'))) return 0;
    while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
           *p == '+' || *p == '-' || *p == '.')
        p++;
    if (strncmp(p, "://", 3)) return 0;
    p += 3;
    size_t host = strcspn(p, "/?#");
    if (!host || *p == '@' || *p == ':') return 0;
    for (const unsigned char *c = (const unsigned char *)v; *c; c++)
        if (*c <= ' ' || *c == 0x7f) return 0;
    return 1;
}

api_crd_approval_t api_crd_approval_state(const json_t *crd, const char **value)
{
    const json_t *ann = json_object_get(json_object_get(crd, "metadata"), "annotations");
    const char *v = api_json_str(ann, APPROVAL_ANNOTATION);
    if (value) *value = v;
    if (!*v) return API_CRD_APPROVAL_MISSING;
    if (!strncmp(v, "unapproved", 10)) return API_CRD_APPROVAL_BYPASSED;
    return approval_url(v) ? API_CRD_APPROVED : API_CRD_APPROVAL_INVALID;
}

json_t *api_crd_approval_condition(const json_t *crd)
{
    const char *group = api_json_str(json_object_get(crd, "spec"), "group");
    if (!api_crd_protected_group(group)) return NULL;
    const char *v;
    switch (api_crd_approval_state(crd, &v)) {
    case API_CRD_APPROVED:
        return json_pack("{s:s, s:s, s:s, s:s+}", "type", "KubernetesAPIApprovalPolicyConformant",
                         "status", "True", "reason", "ApprovedAnnotation", "message",
                         "approved in ", v);
    case API_CRD_APPROVAL_BYPASSED:
        return json_pack("{s:s, s:s, s:s, s:s++}", "type", "KubernetesAPIApprovalPolicyConformant",
                         "status", "False", "reason", "UnapprovedAnnotation", "message",
                         "not approved: \"", v, "\"");
    case API_CRD_APPROVAL_MISSING:
        return json_pack("{s:s, s:s, s:s, s:s}", "type", "KubernetesAPIApprovalPolicyConformant",
                         "status", "False", "reason", "MissingAnnotation", "message",
                         APPROVAL_MISSING);
    default:
        return json_pack("{s:s, s:s, s:s, s:s}", "type", "KubernetesAPIApprovalPolicyConformant",
                         "status", "False", "reason", "InvalidAnnotation", "message",
                         APPROVAL_INVALID);
    }
}

/* validateAPIApproval: only for protected groups; an update that leaves the
 * state as it was is never refused. */
static void check_approval(const json_t *obj, const json_t *old, json_t *causes)
{
    if (!api_crd_protected_group(api_json_str(json_object_get(obj, "spec"), "group"))) return;
    const char *v;
    api_crd_approval_t now = api_crd_approval_state(obj, &v);
    if (old && api_crd_approval_state(old, NULL) == now) return;
    if (now == API_CRD_APPROVAL_MISSING)
        api_cause(causes, "FieldValueRequired", APPROVAL_PATH, "Required value: " APPROVAL_MISSING);
    else if (now == API_CRD_APPROVAL_INVALID)
        api_cause(causes, "FieldValueInvalid", APPROVAL_PATH,
                  "Invalid value: \"%s\": " APPROVAL_INVALID, v);
}

/* ---- built-in resources ---- */

const api_resource_t *api_crd_builtin_clash(const char *group, const char *plural)
{
    char mine[STORE_KEY_MAX + 1];
    api_resource_t r = {.group = group, .resource = plural};
    /* A prefix too long for a key cannot hold keys, so it cannot clash. */
    if (api_key_prefix(&r, mine, sizeof mine)) return NULL;
    size_t ml = strlen(mine);
    for (size_t i = 0; i < api_registry_count(); i++) {
        const api_resource_t *b = api_registry_at(i);
        char theirs[STORE_KEY_MAX + 1];
        if (api_key_prefix(b, theirs, sizeof theirs)) continue;
        size_t tl = strlen(theirs), n = ml < tl ? ml : tl;
        if (!strncmp(mine, theirs, n)) return b; /* either is a prefix of the other */
    }
    return NULL;
}

static void check_builtin(const char *group, const char *plural, json_t *causes)
{
    if (!*group || !*plural) return;
    const api_resource_t *b = api_crd_builtin_clash(group, plural);
    if (b)
        api_cause(causes, "FieldValueInvalid", "spec.names.plural",
                  "Invalid value: \"%s\": the built-in resource %s%s%s is served at this name; "
                  "a CustomResourceDefinition may not take its place",
                  plural, b->resource, *b->group ? "." : "", b->group);
}

/* ---- versions ---- */

static void check_version(const json_t *v, size_t i, json_t *causes)
{
    char path[128];
    const char *name = api_json_str(v, "name");
    snprintf(path, sizeof path, "spec.versions[%zu].name", i);
    check_label(name, 0, path, "", causes);
    static const char *const flags[] = {"served", "storage"};
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "spec.versions[%zu].%s", i, flags[k]);
        if (!json_is_boolean(json_object_get(v, flags[k])))
            api_cause(causes, "FieldValueRequired", path, "Required value");
    }
    const json_t *schema = json_object_get(json_object_get(v, "schema"), "openAPIV3Schema");
    snprintf(path, sizeof path, "spec.versions[%zu].schema.openAPIV3Schema", i);
    if (!json_is_object(schema))
        api_cause(causes, "FieldValueRequired", path, "Required value: schemas are required");
    else
        api_crd_schema_check(schema, path, causes);
    const json_t *scale = json_object_get(json_object_get(v, "subresources"), "scale");
    if (scale) {
        static const char *const paths[] = {"specReplicasPath", "statusReplicasPath"};
        for (int k = 0; k < 2; k++) {
            const char *p = api_json_str(scale, paths[k]);
            snprintf(path, sizeof path, "spec.versions[%zu].subresources.scale.%s", i, paths[k]);
            if (!*p)
                api_cause(causes, "FieldValueRequired", path, "Required value");
            else if (p[0] != '.' || strchr(p, '['))
                api_cause(causes, "FieldValueInvalid", path,
                          "Invalid value: \"%s\": should be a json path under .spec or .status", p);
        }
    }
    size_t j;
    json_t *col;
    json_array_foreach(json_object_get(v, "additionalPrinterColumns"), j, col) {
        static const char *const req[] = {"name", "type", "jsonPath"};
        for (int k = 0; k < 3; k++) {
            snprintf(path, sizeof path, "spec.versions[%zu].additionalPrinterColumns[%zu].%s", i, j,
                     req[k]);
            if (!*api_json_str(col, req[k]))
                api_cause(causes, "FieldValueRequired", path, "Required value");
        }
    }
}

static void check_versions(const json_t *versions, json_t *causes)
{
    size_t storage = 0, i;
    int unique = 1;
    json_t *v;
    json_array_foreach(versions, i, v) {
        check_version(v, i, causes);
        storage += json_is_true(json_object_get(v, "storage"));
        for (size_t j = 0; j < i; j++)
            if (!strcmp(api_json_str(json_array_get(versions, j), "name"), api_json_str(v, "name")))
                unique = 0;
    }
    if (!unique)
        api_cause(causes, "FieldValueInvalid", "spec.versions",
                  "Invalid value: %zu: must contain unique version names",
                  json_array_size(versions));
    if (storage != 1)
        api_cause(causes, "FieldValueInvalid", "spec.versions",
                  "Invalid value: %zu: must have exactly one version marked as storage version",
                  storage);
}

/* ---- the whole object ---- */

static int established(const json_t *crd)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(crd, "status"), "conditions"), i, c) {
        if (!strcmp(api_json_str(c, "type"), "Established"))
            return !strcmp(api_json_str(c, "status"), "True");
    }
    return 0;
}

static void immutable(const json_t *now, const json_t *was, const char *key, const char *path,
                      json_t *causes)
{
    if (strcmp(api_json_str(now, key), api_json_str(was, key)))
        api_cause(causes, "FieldValueInvalid", path, "Invalid value: \"%s\": field is immutable",
                  api_json_str(now, key));
}

static void crd_validate(const json_t *obj, const json_t *old, json_t *causes)
{
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *names = json_object_get(spec, "names");
    const char *group = api_json_str(spec, "group"), *plural = api_json_str(names, "plural");
    const char *name = api_json_str(json_object_get(obj, "metadata"), "name");
    char want[512];
    snprintf(want, sizeof want, "%s.%s", plural, group);
    if (*name && strcmp(name, want))
        api_cause(causes, "FieldValueInvalid", "metadata.name",
                  "Invalid value: \"%s\": must be spec.names.plural+\".\"+spec.group", name);
    check_group(group, causes);
    const char *scope = api_json_str(spec, "scope");
    if (!*scope)
        api_cause(causes, "FieldValueRequired", "spec.scope", "Required value");
    else if (strcmp(scope, "Namespaced") && strcmp(scope, "Cluster"))
        api_cause(causes, "FieldValueNotSupported", "spec.scope",
                  "Unsupported value: \"%s\": supported values: \"Cluster\", \"Namespaced\"",
                  scope);
    check_versions(json_object_get(spec, "versions"), causes);
    check_names(names, causes);
    if (old) {
        const json_t *ospec = json_object_get(old, "spec");
        const json_t *onames = json_object_get(ospec, "names");
        if (established(old)) {
            immutable(spec, ospec, "scope", "spec.scope", causes);
            immutable(names, onames, "kind", "spec.names.kind", causes);
        }
        immutable(spec, ospec, "group", "spec.group", causes);
        immutable(names, onames, "plural", "spec.names.plural", causes);
    }
    check_approval(obj, old, causes);
    check_builtin(group, plural, causes);
}

const api_strategy_t api_strategy_customresourcedefinition = {
    .prepare_create = crd_prepare_create,
    .defaults = crd_defaults,
    .validate = crd_validate,
    .generation = 1,
};
