/*
 * test_strategy_crd.c -- the checks on CustomResourceDefinition objects
 * (src/apiserver/strategy_crd.c), each compared with the field path and
 * message Kubernetes' ValidateCustomResourceDefinition gives; the API
 * approval states and condition; and the refusal of CRDs that would share a
 * built-in resource's keys.
 *
 * Each case starts from a valid CRD, changes one thing, and lists the causes
 * expected as "field: message" lines.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "apiserver/http/http.h"
#include "apiserver/rest/rest.h"
#include "apiserver/crd/crd.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/kinds/strategy_int.h"

#define APPROVED "https://github.com/kubernetes/enhancements/pull/1111"
#define SEE      "see https://github.com/kubernetes/enhancements/pull/1111"
#define DNS1035                                                                                    \
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "   \
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "           \
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"

/* A valid CRD of `group` with plural `plural` (kind: its singular form
 * capitalised is not needed; "Thing"). */
static json_t *crd(const char *group, const char *plural)
{
    json_t *c = json_pack(
        "{s:s, s:s, s:{s:s++}, s:{s:s, s:s, s:{s:s, s:s, s:s, s:s}, s:[{s:s, s:b, s:b, "
        "s:{s:{s:s}}}]}}",
        "apiVersion", "apiextensions.k8s.io/v1", "kind", "CustomResourceDefinition", "metadata",
        "name", plural, ".", group, "spec", "group", group, "scope", "Namespaced", "names",
        "plural", plural, "singular", "thing", "kind", "Thing", "listKind", "ThingList", "versions",
        "name", "v1", "served", 1, "storage", 1, "schema", "openAPIV3Schema", "type", "object");
    assert_non_null(c);
    return c;
}

static json_t *names(json_t *c)
{
    return json_object_get(json_object_get(c, "spec"), "names");
}

static void annotate(json_t *c, const char *value)
{
    json_object_set_new(json_object_get(c, "metadata"), "annotations",
                        json_pack("{s:s}", "api-approved.kubernetes.io", value));
}

/* The causes of validating c (against old, may be NULL), as "field: message"
 * lines; consumes c and old. */
static char *causes_of(json_t *c, json_t *old)
{
    json_t *causes = json_array();
    api_strategy_customresourcedefinition.validate(c, old, causes);
    size_t cap = 1, i;
    json_t *x;
    json_array_foreach(causes, i, x)
        cap += strlen(json_string_value(json_object_get(x, "field")) ?: "") +
               strlen(json_string_value(json_object_get(x, "message")) ?: "") + 3;
    char *out = calloc(1, cap);
    assert_non_null(out);
    json_array_foreach(causes, i, x) {
        size_t n = strlen(out);
        snprintf(out + n, cap - n, "%s: %s\n", json_string_value(json_object_get(x, "field")) ?: "",
                 json_string_value(json_object_get(x, "message")) ?: "");
    }
    json_decref(causes);
    json_decref(c);
    json_decref(old);
    return out;
}

static void expect_causes(json_t *c, json_t *old, const char *want)
{
    char *got = causes_of(c, old);
    int same = !strcmp(got, want);
    if (!same) fprintf(stderr, "got:\n%swant:\n%s", got, want);
    free(got);
    assert_true(same);
}

static void test_valid(void **state)
{
    (void)state;
    expect_causes(crd("example.com", "things"), NULL, "");
    json_t *c = crd("example.com", "things");
    json_object_set_new(names(c), "shortNames", json_pack("[s, s]", "th", "tg"));
    json_object_set_new(names(c), "categories", json_pack("[s]", "all"));
    expect_causes(c, NULL, "");
}

static void test_group(void **state)
{
    (void)state;
    expect_causes(crd("example", "things"), NULL,
                  "spec.group: Invalid value: \"example\": should be a domain with at least one "
                  "dot\n");
    json_t *c = crd("Example.com", "things");
    expect_causes(c, NULL,
                  "spec.group: Invalid value: \"Example.com\": a lowercase RFC 1123 subdomain "
                  "must consist of lower case alphanumeric characters, '-' or '.', and must "
                  "start and end with an alphanumeric character (e.g. 'example.com', regex used "
                  "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-"
                  "9])?)*')\n");
    c = crd("example.com", "things");
    json_object_set_new(json_object_get(c, "spec"), "group", json_string(""));
    expect_causes(c, NULL,
                  "metadata.name: Invalid value: \"things.example.com\": must be "
                  "spec.names.plural+\".\"+spec.group\n"
                  "spec.group: Required value\n");
}

static void test_names(void **state)
{
    (void)state;
    json_t *c = crd("example.com", "things");
    json_object_set_new(names(c), "singular", json_string("1thing"));
    json_object_set_new(names(c), "kind", json_string("Thing_"));
    json_object_set_new(names(c), "listKind", json_string("Thing_"));
    json_object_set_new(names(c), "shortNames", json_pack("[s, s]", "ok", "no-"));
    json_object_set_new(names(c), "categories", json_pack("[s]", "All"));
    expect_causes(c, NULL,
                  "spec.names.singular: Invalid value: \"1thing\": " DNS1035 "\n"
                  "spec.names.kind: Invalid value: \"Thing_\": may have mixed case, but should "
                  "otherwise match: " DNS1035 "\n"
                  "spec.names.listKind: Invalid value: \"Thing_\": may have mixed case, but "
                  "should otherwise match: " DNS1035 "\n"
                  "spec.names.shortNames[1]: Invalid value: \"no-\": " DNS1035 "\n"
                  "spec.names.listKind: Invalid value: \"Thing_\": kind and listKind may not be "
                  "the same\n"
                  "spec.names.categories[0]: Invalid value: \"All\": " DNS1035 "\n");
    c = crd("example.com", "things");
    json_object_del(names(c), "kind");
    json_object_del(names(c), "listKind");
    expect_causes(c, NULL,
                  "spec.names.kind: Required value\nspec.names.listKind: Required value\n");
    char long_plural[70];
    memset(long_plural, 'a', 63);
    long_plural[63] = '\0';
    c = crd("example.com", long_plural);
    expect_causes(c, NULL, "");
    long_plural[63] = '-';
    long_plural[64] = '\0';
    char want[1024];
    snprintf(want, sizeof want,
             "spec.names.plural: Invalid value: \"%s\": must be no more than 63 characters," DNS1035
             "\n",
             long_plural);
    expect_causes(crd("example.com", long_plural), NULL, want);
}

static void test_versions(void **state)
{
    (void)state;
    json_t *c = crd("example.com", "things");
    json_t *vs = json_object_get(json_object_get(c, "spec"), "versions");
    json_t *v2 = json_deep_copy(json_array_get(vs, 0));
    json_object_set_new(v2, "storage", json_false());
    json_array_append_new(vs, v2);
    json_t *v3 = json_deep_copy(v2);
    json_object_set_new(v3, "name", json_string("1beta"));
    json_array_append_new(vs, v3);
    expect_causes(c, NULL,
                  "spec.versions[2].name: Invalid value: \"1beta\": " DNS1035 "\n"
                  "spec.versions: Invalid value: 3: must contain unique version names\n");
}

static void test_update(void **state)
{
    (void)state;
    json_t *old = crd("example.com", "things");
    json_t *c = crd("example.com", "things");
    json_object_set_new(names(c), "plural", json_string("others"));
    json_object_set_new(names(c), "kind", json_string("Other"));
    json_object_set_new(names(c), "listKind", json_string("OtherList"));
    expect_causes(c, old,
                  "metadata.name: Invalid value: \"things.example.com\": must be "
                  "spec.names.plural+\".\"+spec.group\n"
                  "spec.names.plural: Invalid value: \"others\": field is immutable\n");
    /* Once established, the kind and the scope are fixed too. */
    old = crd("example.com", "things");
    json_object_set_new(
        old, "status",
        json_pack("{s:[{s:s, s:s}]}", "conditions", "type", "Established", "status", "True"));
    c = crd("example.com", "things");
    json_object_set_new(names(c), "kind", json_string("Other"));
    json_object_set_new(json_object_get(c, "spec"), "scope", json_string("Cluster"));
    expect_causes(c, old,
                  "spec.scope: Invalid value: \"Cluster\": field is immutable\n"
                  "spec.names.kind: Invalid value: \"Other\": field is immutable\n");
}

static void test_protected_groups(void **state)
{
    (void)state;
    assert_true(api_crd_protected_group("k8s.io"));
    assert_true(api_crd_protected_group("x.k8s.io"));
    assert_true(api_crd_protected_group("kubernetes.io"));
    assert_true(api_crd_protected_group("a.b.kubernetes.io"));
    assert_false(api_crd_protected_group("xk8s.io"));
    assert_false(api_crd_protected_group("k8s.io.example.com"));
    assert_false(api_crd_protected_group("example.com"));
}

static void test_approval(void **state)
{
    (void)state;
    expect_causes(crd("x.k8s.io", "things"), NULL,
                  "metadata.annotations[api-approved.kubernetes.io]: Required value: protected "
                  "groups must have approval annotation \"api-approved.kubernetes.io\", " SEE "\n");
    static const char *const bad[] = {"yes", "https://", "https:/x", "/just/a/path",
                                      "https://host/with space"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *c = crd("x.kubernetes.io", "things");
        annotate(c, bad[i]);
        char want[1024];
        snprintf(want, sizeof want,
                 "metadata.annotations[api-approved.kubernetes.io]: Invalid value: \"%s\": "
                 "protected groups must have approval annotation \"api-approved.kubernetes.io\" "
                 "with either a URL or a reason starting with \"unapproved\", " SEE "\n",
                 bad[i]);
        expect_causes(c, NULL, want);
    }
    static const char *const good[] = {APPROVED, "unapproved", "unapproved, testing only",
                                       "http://example.com"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        json_t *c = crd("x.k8s.io", "things");
        annotate(c, good[i]);
        expect_causes(c, NULL, "");
    }
    /* Not a protected group: no annotation needed, a bad one ignored. */
    json_t *c = crd("k8s.io.example.com", "things");
    annotate(c, "whatever");
    expect_causes(c, NULL, "");
    /* An update keeping the approval state is never refused for it ... */
    expect_causes(crd("x.k8s.io", "things"), crd("x.k8s.io", "things"), "");
    /* ... one changing it is checked. */
    json_t *old = crd("x.k8s.io", "things");
    annotate(old, APPROVED);
    expect_causes(crd("x.k8s.io", "things"), old,
                  "metadata.annotations[api-approved.kubernetes.io]: Required value: protected "
                  "groups must have approval annotation \"api-approved.kubernetes.io\", " SEE "\n");
}

/* "status reason message" of the approval condition of a CRD of group g
 * annotated with a (NULL: none); "" when there is none. */
static void expect_condition(const char *g, const char *a, const char *want)
{
    json_t *c = crd(g, "things");
    if (a) annotate(c, a);
    json_t *cond = api_crd_approval_condition(c);
    char got[1024] = "";
    if (cond) {
        assert_string_equal(json_string_value(json_object_get(cond, "type")),
                            "KubernetesAPIApprovalPolicyConformant");
        snprintf(got, sizeof got, "%s %s %s", json_string_value(json_object_get(cond, "status")),
                 json_string_value(json_object_get(cond, "reason")),
                 json_string_value(json_object_get(cond, "message")));
    }
    assert_string_equal(got, want);
    json_decref(cond);
    json_decref(c);
}

static void test_approval_condition(void **state)
{
    (void)state;
    expect_condition("example.com", APPROVED, "");
    expect_condition("x.k8s.io", APPROVED, "True ApprovedAnnotation approved in " APPROVED);
    expect_condition("x.k8s.io", "unapproved, testing",
                     "False UnapprovedAnnotation not approved: \"unapproved, testing\"");
    expect_condition("x.k8s.io", NULL,
                     "False MissingAnnotation protected groups must have approval annotation "
                     "\"api-approved.kubernetes.io\", " SEE);
    expect_condition("x.k8s.io", "nope",
                     "False InvalidAnnotation protected groups must have approval annotation "
                     "\"api-approved.kubernetes.io\" with either a URL or a reason starting with "
                     "\"unapproved\", " SEE);
}

/* The attack: CRDs named after built-in resources. */
static void test_builtin_clash(void **state)
{
    (void)state;
    const api_resource_t *b = api_crd_builtin_clash("coordination.k8s.io", "leases");
    assert_non_null(b);
    assert_string_equal(b->kind, "Lease");
    b = api_crd_builtin_clash("apiextensions.k8s.io", "customresourcedefinitions");
    assert_non_null(b);
    assert_string_equal(b->kind, "CustomResourceDefinition");
    assert_null(api_crd_builtin_clash("coordination.k8s.io", "leasesx"));
    assert_null(api_crd_builtin_clash("coordination.k8s.io", "lease"));
    assert_null(api_crd_builtin_clash("example.com", "leases"));
    /* Every built-in, whatever its group: no CRD may take its keys (those of
     * the version it is stored in, for one served from another's keys). */
    for (size_t i = 0; i < api_registry_count(); i++) {
        const api_resource_t *r = api_registry_at(i);
        const char *g = r->storage_resource ? r->storage_group : r->group;
        const char *res = r->storage_resource ? r->storage_resource : r->resource;
        const api_resource_t *b = api_crd_builtin_clash(*g ? g : "core", res);
        assert_non_null(b);
        char want[256], got[256];
        assert_int_equal(api_key_prefix(r, want, sizeof want), 0);
        assert_int_equal(api_key_prefix(b, got, sizeof got), 0);
        assert_string_equal(got, want);
    }
    json_t *c = crd("coordination.k8s.io", "leases");
    annotate(c, APPROVED);
    expect_causes(c, NULL,
                  "spec.names.plural: Invalid value: \"leases\": the built-in resource "
                  "leases.coordination.k8s.io is served at this name; a "
                  "CustomResourceDefinition may not take its place\n");
    c = crd("apiextensions.k8s.io", "customresourcedefinitions");
    annotate(c, "unapproved");
    expect_causes(c, NULL,
                  "spec.names.plural: Invalid value: \"customresourcedefinitions\": the built-in "
                  "resource customresourcedefinitions.apiextensions.k8s.io is served at this "
                  "name; a CustomResourceDefinition may not take its place\n");
    /* Without the annotation: both causes. */
    expect_causes(crd("coordination.k8s.io", "leases"), NULL,
                  "metadata.annotations[api-approved.kubernetes.io]: Required value: protected "
                  "groups must have approval annotation \"api-approved.kubernetes.io\", " SEE "\n"
                  "spec.names.plural: Invalid value: \"leases\": the built-in resource "
                  "leases.coordination.k8s.io is served at this name; a "
                  "CustomResourceDefinition may not take its place\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),         cmocka_unit_test(test_group),
        cmocka_unit_test(test_names),         cmocka_unit_test(test_versions),
        cmocka_unit_test(test_update),        cmocka_unit_test(test_protected_groups),
        cmocka_unit_test(test_approval),      cmocka_unit_test(test_approval_condition),
        cmocka_unit_test(test_builtin_clash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
