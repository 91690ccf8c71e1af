/*
 * test_strategy_names.c -- the metadata.name rules (api_name_invalid() in
 * src/apiserver/object.c) and which kind uses which (name_rule of each
 * strategy), compared with Kubernetes' messages: DNS-1123 subdomain (most
 * kinds), DNS-1123 label (namespaces, ValidateNamespaceName), DNS-1035 label
 * (services, ValidateServiceName), path segment (RBAC kinds,
 * path.ValidatePathSegmentName).
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
#include "apiserver/schema/strategy.h"
#include "apiserver/kinds/strategy_int.h"

#define LABEL1123 "a lowercase RFC 1123 label must consist of lower case alphanumeric characters"
#define LABEL1035                                                                                  \
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "   \
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "           \
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
#define SUBDOMAIN "a lowercase RFC 1123 subdomain must consist of"

static void expect(const char *name, int rule, const char *prefix)
{
    const char *why = api_name_invalid(name, rule);
    if (!prefix) {
        if (why) fail_msg("%s (rule %d): %s", name, rule, why);
        return;
    }
    if (!why) fail_msg("%s (rule %d) accepted", name, rule);
    if (strncmp(why, prefix, strlen(prefix))) fail_msg("%s (rule %d): %s", name, rule, why);
}

static void test_subdomain(void **state)
{
    (void)state;
    expect("a.b-c.d", API_NAME_SUBDOMAIN, NULL);
    expect("1abc", API_NAME_SUBDOMAIN, NULL);
    expect("A", API_NAME_SUBDOMAIN, SUBDOMAIN);
    expect("a..b", API_NAME_SUBDOMAIN, SUBDOMAIN);
    expect("a_b", API_NAME_SUBDOMAIN, SUBDOMAIN);
    expect("", API_NAME_SUBDOMAIN, "name or generateName is required");
    char long_name[300];
    memset(long_name, 'a', 254);
    long_name[254] = '\0';
    expect(long_name, API_NAME_SUBDOMAIN, "must be no more than 253 characters");
    long_name[253] = '\0';
    expect(long_name, API_NAME_SUBDOMAIN, NULL);
}

static void test_label(void **state)
{
    (void)state;
    expect("kube-system", API_NAME_LABEL, NULL);
    expect("1abc", API_NAME_LABEL, NULL);
    expect("a.b", API_NAME_LABEL, LABEL1123);
    expect("-a", API_NAME_LABEL, LABEL1123);
    expect("a-", API_NAME_LABEL, LABEL1123);
    char n[70];
    memset(n, 'a', 64);
    n[64] = '\0';
    expect(n, API_NAME_LABEL, "must be no more than 63 characters");
    n[63] = '\0';
    expect(n, API_NAME_LABEL, NULL);
}

static void test_label_1035(void **state)
{
    (void)state;
    expect("my-svc", API_NAME_LABEL_1035, NULL);
    expect("a1", API_NAME_LABEL_1035, NULL);
    expect("a", API_NAME_LABEL_1035, NULL);
    /* A DNS-1123 label, but not a DNS-1035 one: it starts with a digit. */
    expect("1abc", API_NAME_LABEL_1035, LABEL1035);
    expect("a.b", API_NAME_LABEL_1035, LABEL1035);
    expect("a-", API_NAME_LABEL_1035, LABEL1035);
    expect("My-svc", API_NAME_LABEL_1035, LABEL1035);
    char n[70];
    memset(n, 'a', 64);
    n[64] = '\0';
    expect(n, API_NAME_LABEL_1035, "must be no more than 63 characters");
}

static void test_path_segment(void **state)
{
    (void)state;
    expect("system:controller:deployment-controller", API_NAME_PATH_SEGMENT, NULL);
    expect("Admin Role", API_NAME_PATH_SEGMENT, NULL);
    expect("...", API_NAME_PATH_SEGMENT, NULL);
    expect(".", API_NAME_PATH_SEGMENT, "may not be '.'");
    expect("..", API_NAME_PATH_SEGMENT, "may not be '..'");
    expect("a/b", API_NAME_PATH_SEGMENT, "may not contain '/'");
    expect("100%", API_NAME_PATH_SEGMENT, "may not contain '%'");
    expect("", API_NAME_PATH_SEGMENT, "name or generateName is required");
}

static void test_kinds(void **state)
{
    (void)state;
    assert_int_equal(api_strategy_namespace.name_rule, API_NAME_LABEL);
    assert_int_equal(api_strategy_service.name_rule, API_NAME_LABEL_1035);
    assert_int_equal(api_strategy_pod.name_rule, API_NAME_SUBDOMAIN);
    assert_int_equal(api_strategy_deployment.name_rule, API_NAME_SUBDOMAIN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_subdomain),    cmocka_unit_test(test_label),
        cmocka_unit_test(test_label_1035),   cmocka_unit_test(test_path_segment),
        cmocka_unit_test(test_kinds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
