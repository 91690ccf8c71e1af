/*
 * test_status.c -- src/apiserver/status.c: Status objects byte for byte as
 * kube-apiserver encodes metav1.Status (member order kind, apiVersion,
 * metadata, status, message, reason, details, code; omitempty members left
 * out; StatusDetails as name, group, kind, uid, causes, retryAfterSeconds),
 * since clients compare the text and read details unchecked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "apiserver/http/http.h"
#include "lib/err.h"

/* The compact text of api_status_new(...) must be `want` exactly. */
static void expect_text(int code, const char *reason, const char *msg, const char *details,
                        const char *want)
{
    json_t *d = NULL;
    if (details) {
        json_error_t e;
        d = json_loads(details, 0, &e);
        if (!d) fail_msg("bad test JSON %s: %s", details, e.text);
    }
    json_t *st = api_status_new(code, reason, msg, d);
    assert_non_null(st);
    char *got = json_dumps(st, JSON_COMPACT);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
    json_decref(st);
    json_decref(d);
}

/* NewNotFound(pods, "web"): details before code; the core group's "" left
 * out; the caller's member order does not matter. */
static void test_not_found(void **state)
{
    (void)state;
    expect_text(404, "NotFound", "pods \"web\" not found",
                "{\"kind\":\"pods\",\"group\":\"\",\"name\":\"web\"}",
                "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                "\"Failure\",\"message\":\"pods \\\"web\\\" not found\",\"reason\":\"NotFound\","
                "\"details\":{\"name\":\"web\",\"kind\":\"pods\"},\"code\":404}");
    expect_text(404, "NotFound", "deployments.apps \"web\" not found",
                "{\"name\":\"web\",\"group\":\"apps\",\"kind\":\"deployments\"}",
                "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                "\"Failure\",\"message\":\"deployments.apps \\\"web\\\" not found\",\"reason\":"
                "\"NotFound\",\"details\":{\"name\":\"web\",\"group\":\"apps\",\"kind\":"
                "\"deployments\"},\"code\":404}");
}

/* A path that names nothing: NewGenericServerResponse's empty details, which
 * kubectl debug dereferences. */
static void test_generic_not_found(void **state)
{
    (void)state;
    expect_text(404, "NotFound", "the server could not find the requested resource", NULL,
                "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                "\"Failure\",\"message\":\"the server could not find the requested resource\","
                "\"reason\":\"NotFound\",\"details\":{},\"code\":404}");
    expect_text(405, "MethodNotAllowed", "no", NULL,
                "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                "\"Failure\",\"message\":\"no\",\"reason\":\"MethodNotAllowed\",\"details\":{},"
                "\"code\":405}");
}

/* NewInvalid: causes as reason, message, field; an empty field left out. */
static void test_invalid_causes(void **state)
{
    (void)state;
    expect_text(422, "Invalid", "m",
                "{\"causes\":[{\"field\":\"spec\",\"message\":\"Required value\",\"reason\":"
                "\"FieldValueRequired\"},{\"field\":\"\",\"reason\":\"FieldValueForbidden\","
                "\"message\":\"Forbidden\"}],\"kind\":\"Pod\",\"name\":\"p\"}",
                "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                "\"Failure\",\"message\":\"m\",\"reason\":\"Invalid\",\"details\":{\"name\":"
                "\"p\",\"kind\":\"Pod\",\"causes\":[{\"reason\":\"FieldValueRequired\","
                "\"message\":\"Required value\",\"field\":\"spec\"},{\"reason\":"
                "\"FieldValueForbidden\",\"message\":\"Forbidden\"}]},\"code\":422}");
}

/* Reasons whose constructors set no details have none; a Success has no
 * message or reason; retryAfterSeconds and uid in their places. */
static void test_without_details(void **state)
{
    (void)state;
    expect_text(400, "BadRequest", "bad", NULL,
                "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                "\"Failure\",\"message\":\"bad\",\"reason\":\"BadRequest\",\"code\":400}");
    expect_text(410, "Expired", "too old", NULL,
                "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                "\"Failure\",\"message\":\"too old\",\"reason\":\"Expired\",\"code\":410}");
    expect_text(201, "", "", NULL,
                "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                "\"Success\",\"code\":201}");
    expect_text(200, "", "", "{\"uid\":\"u\",\"kind\":\"configmaps\",\"name\":\"c\"}",
                "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                "\"Success\",\"details\":{\"name\":\"c\",\"kind\":\"configmaps\",\"uid\":\"u\"},"
                "\"code\":200}");
    expect_text(504, "Timeout", "t", "{\"retryAfterSeconds\":1,\"causes\":[]}",
                "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                "\"Failure\",\"message\":\"t\",\"reason\":\"Timeout\",\"details\":"
                "{\"retryAfterSeconds\":1},\"code\":504}");
    /* NewInternalError: the error as the one cause. */
    expect_text(500, "InternalError", "out of memory", NULL,
                "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                "\"Failure\",\"message\":\"out of memory\",\"reason\":\"InternalError\","
                "\"details\":{\"causes\":[{\"message\":\"out of memory\"}]},\"code\":500}");
}

/* The code table: every KP_* maps somewhere, unknown ones to 500. */
static void test_codes(void **state)
{
    (void)state;
    const char *reason;
    assert_int_equal(api_status_code(KP_ENOTFOUND, &reason), 404);
    assert_string_equal(reason, "NotFound");
    assert_int_equal(api_status_code(KP_ECONFLICT, &reason), 409);
    assert_string_equal(reason, "Conflict");
    assert_int_equal(api_status_code(KP_EIO, &reason), 500);
    assert_string_equal(reason, "InternalError");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_not_found),
        cmocka_unit_test(test_generic_not_found),
        cmocka_unit_test(test_invalid_causes),
        cmocka_unit_test(test_without_details),
        cmocka_unit_test(test_codes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
