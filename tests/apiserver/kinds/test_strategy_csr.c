/*
 * test_strategy_csr.c -- a CertificateSigningRequest's conditions
 * (src/apiserver/kinds/strategy_csr.c): Kubernetes' condition rules, what
 * the approval and status subresources take from a request and keep from
 * the stored object, and the timestamps they fill in.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "apiserver/kinds/strategy_int.h"

/* JSON with ' for ". */
static json_t *J(const char *s)
{
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *p = buf; *p; p++)
        if (*p == '\'') *p = '"';
    json_error_t e;
    json_t *v = json_loads(buf, 0, &e);
    if (!v) fail_msg("bad JSON %s: %s", s, e.text);
    return v;
}

#define CONDS(c) "{'metadata':{'name':'c'},'status':{'conditions':[" c "]}}"
#define APPROVED "{'type':'Approved','status':'True','reason':'R'}"
#define DENIED   "{'type':'Denied','status':'True'}"
#define FAILED   "{'type':'Failed','status':'True'}"

typedef void (*validate_fn)(const json_t *csr, const json_t *old, json_t *causes);

/* Fail unless `check` of csr (updating old when given) gives exactly the
 * causes `want`, as "field: message; ..." ("" for none). */
static void expect_with(validate_fn check, const char *csr, const char *old, const char *want)
{
    json_t *c = J(csr), *o = old ? J(old) : NULL, *causes = json_array();
    check(c, o, causes);
    char got[2048];
    size_t i, len = 0;
    json_t *x;
    got[0] = '\0';
    json_array_foreach(causes, i, x) {
        int w = snprintf(got + len, sizeof got - len, "%s%s: %s", i ? "; " : "",
                         json_string_value(json_object_get(x, "field")),
                         json_string_value(json_object_get(x, "message")));
        if (w > 0 && (size_t)w < sizeof got - len) len += (size_t)w;
    }
    json_decref(causes);
    json_decref(c);
    json_decref(o);
    if (strcmp(got, want)) fail_msg("%s (old %s):\n got  '%s'\n want '%s'", csr, old, got, want);
}

static void expect_causes(const char *csr, const char *old, const char *want)
{
    expect_with(api_csr_validate_conditions, csr, old, want);
}

static void test_rules(void **state)
{
    (void)state;
    expect_causes(CONDS(APPROVED), NULL, "");
    expect_causes(CONDS(APPROVED "," FAILED), NULL, "");
    expect_causes(CONDS(APPROVED "," DENIED), NULL,
                  "status.conditions[1].type: Invalid value: \"Denied\": Approved and Denied "
                  "conditions are mutually exclusive");
    expect_causes(CONDS(DENIED "," APPROVED), NULL,
                  "status.conditions[1].type: Invalid value: \"Approved\": Approved and Denied "
                  "conditions are mutually exclusive");
    expect_causes(CONDS(APPROVED "," APPROVED), NULL,
                  "status.conditions[1].type: Duplicate value: \"Approved\"");
    expect_causes(CONDS("{'type':'Approved','status':'False'}"), NULL,
                  "status.conditions[0].status: Unsupported value: \"False\": supported values: "
                  "\"True\"");
    expect_causes(CONDS("{'type':'Failed','status':'Unknown'}"), NULL,
                  "status.conditions[0].status: Unsupported value: \"Unknown\": supported values: "
                  "\"True\"");
    expect_causes(CONDS("{'type':'Signing','status':'Maybe'}"), NULL,
                  "status.conditions[0].status: Unsupported value: \"Maybe\": supported values: "
                  "\"False\", \"True\", \"Unknown\"");
    expect_causes(CONDS("{'type':'Signing','status':'Unknown'}"), NULL, "");
    expect_causes(CONDS("{'type':'Approved'}"), NULL,
                  "status.conditions[0].status: Required value");
    expect_causes(CONDS("{'status':'True'}"), NULL, "status.conditions[0].type: Required value");
    /* no update removes Approved, Denied or Failed */
    expect_causes(CONDS(""), CONDS(APPROVED), "status.conditions: Forbidden: updates may not "
                                              "remove a condition of type \"Approved\"");
    expect_causes(CONDS(APPROVED), CONDS(APPROVED "," FAILED),
                  "status.conditions: Forbidden: updates may not remove a condition of type "
                  "\"Failed\"");
    expect_causes(CONDS(DENIED), CONDS(DENIED), "");
    /* what the stored object already breaks is tolerated */
    expect_causes(CONDS(APPROVED "," DENIED), CONDS(APPROVED "," DENIED), "");
    expect_causes(CONDS(APPROVED "," APPROVED), CONDS(APPROVED "," APPROVED), "");
}

extern const api_strategy_t api_strategy_certificatesigningrequest;

/* The status subresource's checks (its validate_status). */
static void expect_status_causes(const char *csr, const char *old, const char *want)
{
    expect_with(api_strategy_certificatesigningrequest.validate_status, csr, old, want);
}

#define CERT(b64) "{'metadata':{'name':'c'},'status':{'certificate':'" b64 "'}}"
#define NONE "{'metadata':{'name':'c'}}"
#define PEM_CERT "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="

static void test_status_rules(void **state)
{
    (void)state;
    expect_status_causes(CERT(PEM_CERT), NONE, "");
    expect_status_causes(CERT(PEM_CERT), CERT(PEM_CERT), "");
    expect_status_causes(CERT("LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQotLS0tLUJFR0lOIFBSSVZBVEUgS0VZLS0tLS0KTUlJQgotLS0tLUVORCBQUklWQVRFIEtFWS0tLS0tCg=="), NONE,
                         "status.certificate: Invalid value: \"<certificate data>\": only "
                         "CERTIFICATE PEM blocks are allowed, found \"PRIVATE KEY\"");
    expect_status_causes(CERT("aGVsbG8="), NONE,
                         "status.certificate: Invalid value: \"<certificate data>\": must "
                         "contain at least one CERTIFICATE PEM block");
    expect_status_causes(CERT("eA=="), CERT(PEM_CERT),
                         "status.certificate: Forbidden: updates may not modify existing "
                         "certificate content");
    expect_status_causes(CONDS(APPROVED), CONDS(APPROVED "," FAILED),
                         "status.conditions: Forbidden: updates may not remove a condition of "
                         "type \"Failed\"");
}

static const char *cond_field(const json_t *csr, size_t i, const char *f)
{
    const json_t *c = json_array_get(
        json_object_get(json_object_get(csr, "status"), "conditions"), i);
    return json_string_value(json_object_get(c, f));
}

static size_t nconds(const json_t *csr)
{
    return json_array_size(json_object_get(json_object_get(csr, "status"), "conditions"));
}

static void test_merge(void **state)
{
    (void)state;
    /* approval: the request's Approved/Denied, the stored others */
    json_t *old = J(CONDS("{'type':'Failed','status':'True','lastUpdateTime':'2020-01-01T00:00:00Z',"
                          "'lastTransitionTime':'2020-01-01T00:00:00Z'}"));
    json_t *req = J(CONDS(APPROVED ",{'type':'Signed','status':'True'}"));
    json_t *dst = J("{'metadata':{'name':'c'},'status':{'certificate':'eA=='}}");
    assert_int_equal(api_csr_merge_conditions(dst, req, old, 1), 0);
    assert_int_equal(nconds(dst), 2);
    assert_string_equal(cond_field(dst, 0, "type"), "Failed");
    assert_string_equal(cond_field(dst, 0, "lastUpdateTime"), "2020-01-01T00:00:00Z");
    assert_string_equal(cond_field(dst, 1, "type"), "Approved");
    assert_string_equal(cond_field(dst, 1, "reason"), "R");
    assert_non_null(cond_field(dst, 1, "lastUpdateTime"));
    assert_non_null(cond_field(dst, 1, "lastTransitionTime"));
    assert_string_equal(json_string_value(json_object_get(json_object_get(dst, "status"),
                                                           "certificate")), "eA==");
    json_decref(dst);

    /* status: the stored Approved stays, whatever the request says; the
     * request's other conditions are taken, an unchanged one keeps its
     * transition time */
    json_decref(old);
    old = J(CONDS("{'type':'Approved','status':'True','lastTransitionTime':'2021-01-01T00:00:00Z'},"
                  "{'type':'Signing','status':'False','lastTransitionTime':'2022-01-01T00:00:00Z'}"));
    json_decref(req);
    req = J(CONDS(DENIED ",{'type':'Signing','status':'False'}"));
    assert_int_equal(api_csr_merge_conditions(req, req, old, 0), 0);
    assert_int_equal(nconds(req), 2);
    assert_string_equal(cond_field(req, 0, "type"), "Approved");
    assert_string_equal(cond_field(req, 0, "lastTransitionTime"), "2021-01-01T00:00:00Z");
    assert_string_equal(cond_field(req, 1, "type"), "Signing");
    assert_string_equal(cond_field(req, 1, "lastTransitionTime"), "2022-01-01T00:00:00Z");
    json_decref(req);

    /* nothing left: no conditions member (omitempty) */
    req = J(CONDS(DENIED));
    json_t *none = J("{'metadata':{'name':'c'}}");
    assert_int_equal(api_csr_merge_conditions(req, req, none, 0), 0);
    assert_null(json_object_get(json_object_get(req, "status"), "conditions"));
    json_decref(req);
    json_decref(none);
    json_decref(old);
}

/* The approval subresource's PrepareForUpdate: the stored status with the
 * request's approval conditions only. */
static void test_approval_prepare(void **state)
{
    (void)state;
    const api_sub_t *sub = api_strategy_sub(&api_strategy_certificatesigningrequest, "approval");
    assert_non_null(sub);
    assert_null(sub->handler); /* the generic GET, PUT and PATCH serve it */
    json_t *old = J("{'metadata':{'name':'c'},'status':{'certificate':'eA==','conditions':["
                    FAILED "]}}");
    json_t *obj = J("{'metadata':{'name':'c'},'status':{'certificate':'enp6','conditions':["
                    APPROVED ",{'type':'Signing','status':'True'}]}}");
    sub->prepare(obj, old);
    assert_string_equal(json_string_value(json_object_get(json_object_get(obj, "status"),
                                                          "certificate")), "eA==");
    assert_int_equal(nconds(obj), 2);
    assert_string_equal(cond_field(obj, 0, "type"), "Failed");
    assert_string_equal(cond_field(obj, 1, "type"), "Approved");
    /* the stored object is not touched */
    assert_int_equal(nconds(old), 1);
    json_t *causes = json_array();
    sub->validate(obj, old, causes);
    assert_int_equal(json_array_size(causes), 0);
    json_decref(causes);
    json_decref(obj);
    json_decref(old);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_status_rules),
        cmocka_unit_test(test_approval_prepare),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
