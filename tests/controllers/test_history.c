/*
 * test_history.c -- the ControllerRevision data the DaemonSet and
 * StatefulSet controllers write (src/controllers/history.c
 * ctrl_history_template_patch), byte for byte as Kubernetes' getPatch
 * writes it for the same object: the conformance suite's daemon.Match
 * compares these bytes with bytes.Equal.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "controllers/history.h"

static void expect_patch(const char *owner, const char *want)
{
    json_error_t err;
    json_t *o = json_loads(owner, 0, &err);
    if (!o) fail_msg("bad fixture: %s", err.text);
    json_t *p = ctrl_history_template_patch(o);
    assert_non_null(p);
    char *got = json_dumps(p, JSON_COMPACT);
    assert_non_null(got);
    if (strcmp(got, want)) fail_msg("got:\n%s\nwant:\n%s", got, want);
    free(got);
    json_decref(p);
    json_decref(o);
}

static void test_daemonset_patch(void **state)
{
    (void)state;
    /* A DaemonSet as the API server returns it (defaults applied, members
     * in the server's order); the expected bytes are getPatch's: Go's
     * encoding of the typed template (creationTimestamp null, resources {})
     * decoded into a map and encoded again (keys sorted), compact. */
    expect_patch(
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"metadata\":{\"name\":\"d\"},"
        "\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"d\"}},\"template\":{\"metadata\":{"
        "\"labels\":{\"app\":\"d\"}},\"spec\":{\"containers\":[{\"name\":\"nginx\",\"image\":"
        "\"nginx\",\"terminationMessagePath\":\"/dev/termination-log\","
        "\"terminationMessagePolicy\":\"File\",\"imagePullPolicy\":\"Always\"}],"
        "\"restartPolicy\":\"Always\",\"terminationGracePeriodSeconds\":30,\"dnsPolicy\":"
        "\"ClusterFirst\",\"securityContext\":{},\"schedulerName\":\"default-scheduler\"}}}}",
        "{\"spec\":{\"template\":{\"$patch\":\"replace\",\"metadata\":{\"creationTimestamp\":null,"
        "\"labels\":{\"app\":\"d\"}},\"spec\":{\"containers\":[{\"image\":\"nginx\","
        "\"imagePullPolicy\":\"Always\",\"name\":\"nginx\",\"resources\":{},"
        "\"terminationMessagePath\":\"/dev/termination-log\",\"terminationMessagePolicy\":"
        "\"File\"}],\"dnsPolicy\":\"ClusterFirst\",\"restartPolicy\":\"Always\","
        "\"schedulerName\":\"default-scheduler\",\"securityContext\":{},"
        "\"terminationGracePeriodSeconds\":30}}}}");
}

static void test_nested_and_kept(void **state)
{
    (void)state;
    /* Keys sorted at every depth, arrays in their order, a creationTimestamp
     * and resources already there kept. */
    expect_patch("{\"spec\":{\"template\":{\"metadata\":{\"creationTimestamp\":null},\"spec\":{"
                 "\"initContainers\":[{\"name\":\"i\",\"resources\":{\"limits\":{\"memory\":\"1Gi\","
                 "\"cpu\":\"1\"}}}],\"containers\":[{\"name\":\"c\",\"env\":[{\"value\":\"1\","
                 "\"name\":\"B\"},{\"name\":\"A\"}]}]}}}}",
                 "{\"spec\":{\"template\":{\"$patch\":\"replace\",\"metadata\":{"
                 "\"creationTimestamp\":null},\"spec\":{\"containers\":[{\"env\":[{\"name\":\"B\","
                 "\"value\":\"1\"},{\"name\":\"A\"}],\"name\":\"c\",\"resources\":{}}],"
                 "\"initContainers\":[{\"name\":\"i\",\"resources\":{\"limits\":{\"cpu\":\"1\","
                 "\"memory\":\"1Gi\"}}}]}}}}");
    /* No template at all: still the shape getPatch writes. */
    expect_patch("{\"spec\":{}}", "{\"spec\":{\"template\":{\"$patch\":\"replace\",\"metadata\":"
                                  "{\"creationTimestamp\":null}}}}");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_daemonset_patch),
        cmocka_unit_test(test_nested_and_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
