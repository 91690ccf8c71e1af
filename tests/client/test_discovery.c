/*
 * test_discovery.c -- the discovery snapshot and RESTMapper
 * (src/client/discovery.c) against canned discovery documents: kinds to
 * resources and back, scope, verbs, preferred versions, subresources left
 * out, a group-version that fails, the bounds, and the deferred mapper
 * reading again (rate-limited) when a kind is unknown.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/discovery.h"
#include "lib/err.h"

/* The canned server: path -> JSON text (single quotes for double). */
typedef struct server {
    const char *const *docs; /* path, text, path, text, ..., NULL */
    int fetches;
    int extra_groups; /* /apis lists this many more group-versions */
} server_t;

static json_t *J(const char *text)
{
    char *t = strdup(text);
    for (char *p = t; *p; p++)
        if (*p == '\'') *p = '"';
    json_error_t e;
    json_t *v = json_loads(t, 0, &e);
    if (!v) fail_msg("bad test JSON: %s: %s", e.text, t);
    free(t);
    return v;
}

static int fetch(void *arg, const char *path, json_t **out)
{
    server_t *s = arg;
    s->fetches++;
    *out = NULL;
    for (const char *const *d = s->docs; *d; d += 2)
        if (!strcmp(*d, path)) {
            *out = J(d[1]);
            if (!strcmp(path, "/apis") && s->extra_groups) {
                json_t *groups = json_object_get(*out, "groups");
                for (int i = 0; i < s->extra_groups; i++) {
                    char name[64];
                    snprintf(name, sizeof name, "g%d.example.com", i);
                    json_array_append_new(
                        groups, json_pack("{s:s, s:[{s:s}]}", "name", name, "versions",
                                          "version", "v1"));
                }
            }
            return 0;
        }
    return KP_ENOTFOUND;
}

#define CORE_V1                                                                                  \
    "{'kind':'APIResourceList','groupVersion':'v1','resources':["                              \
    "{'name':'pods','namespaced':true,'kind':'Pod','verbs':['create','delete','deletecollection'," \
    "'get','list','patch','update','watch']},"                                                  \
    "{'name':'pods/status','namespaced':true,'kind':'Pod','verbs':['get','patch','update']},"   \
    "{'name':'replicationcontrollers/scale','namespaced':true,'group':'autoscaling','version':'v1'," \
    "'kind':'Scale','verbs':['get','patch','update']},"                                         \
    "{'name':'nodes','namespaced':false,'kind':'Node','verbs':['get','list','watch','delete']}," \
    "{'name':'componentstatuses','namespaced':false,'kind':'ComponentStatus','verbs':['get','list']}]}"

static const char *const docs[] = {
    "/api", "{'kind':'APIVersions','versions':['v1']}",
    "/api/v1", CORE_V1,
    "/apis",
    "{'kind':'APIGroupList','groups':["
    "{'name':'apps','versions':[{'groupVersion':'apps/v1','version':'v1'}],"
    "'preferredVersion':{'groupVersion':'apps/v1','version':'v1'}},"
    "{'name':'autoscaling','versions':[{'groupVersion':'autoscaling/v2','version':'v2'},"
    "{'groupVersion':'autoscaling/v1','version':'v1'}],"
    "'preferredVersion':{'groupVersion':'autoscaling/v2','version':'v2'}},"
    "{'name':'broken.example.com','versions':[{'groupVersion':'broken.example.com/v1','version':'v1'}]}]}",
    "/apis/apps/v1",
    "{'groupVersion':'apps/v1','resources':["
    "{'name':'deployments','namespaced':true,'kind':'Deployment','verbs':['get','list','watch','delete']},"
    "{'name':'deployments/scale','namespaced':true,'group':'autoscaling','version':'v1','kind':'Scale','verbs':['get']}]}",
    "/apis/autoscaling/v2",
    "{'groupVersion':'autoscaling/v2','resources':[{'name':'horizontalpodautoscalers',"
    "'namespaced':true,'kind':'HorizontalPodAutoscaler','verbs':['get','list','watch','delete']}]}",
    "/apis/autoscaling/v1",
    "{'groupVersion':'autoscaling/v1','resources':[{'name':'horizontalpodautoscalers',"
    "'namespaced':true,'kind':'HorizontalPodAutoscaler','verbs':['get','list','watch','delete']}]}",
    /* /apis/broken.example.com/v1 is missing: that group-version fails */
    NULL};

static void test_mapping(void **state)
{
    (void)state;
    server_t s = {.docs = docs};
    kc_restmap_t *m;
    assert_int_equal(kc_restmap_build(fetch, &s, &m), 0);
    /* pods, nodes, componentstatuses, deployments, 2 HPAs: no subresources */
    assert_int_equal(kc_restmap_count(m), 6);
    assert_int_equal(kc_restmap_failed(m), 1); /* broken.example.com/v1 */

    const kc_api_resource_t *e = kc_restmap_for_kind(m, "v1", "Pod");
    assert_non_null(e);
    assert_string_equal(e->r.resource, "pods");
    assert_string_equal(e->r.group, "");
    assert_int_equal(e->r.namespaced, 1);
    assert_true(e->preferred);
    assert_int_equal(e->verbs, KC_VERB_GET | KC_VERB_LIST | KC_VERB_WATCH | KC_VERB_CREATE |
                                   KC_VERB_UPDATE | KC_VERB_PATCH | KC_VERB_DELETE |
                                   KC_VERB_DELETECOLLECTION);
    e = kc_restmap_for_kind(m, "v1", "Node");
    assert_non_null(e);
    assert_int_equal(e->r.namespaced, 0);
    e = kc_restmap_for_kind(m, "v1", "ComponentStatus");
    assert_int_equal(e->verbs, KC_VERB_GET | KC_VERB_LIST);

    e = kc_restmap_for_kind(m, "apps/v1", "Deployment");
    assert_non_null(e);
    assert_string_equal(e->api_version, "apps/v1");
    assert_string_equal(e->r.group, "apps");
    assert_null(kc_restmap_for_kind(m, "apps/v1", "Scale")); /* a subresource's kind */
    assert_null(kc_restmap_for_kind(m, "v1", "Deployment"));  /* wrong group */
    assert_null(kc_restmap_for_kind(m, "apps/v2", "Deployment"));

    /* Both versions map; the group's preferred one is marked. */
    const kc_api_resource_t *v1 = kc_restmap_for_kind(m, "autoscaling/v1", "HorizontalPodAutoscaler");
    const kc_api_resource_t *v2 = kc_restmap_for_kind(m, "autoscaling/v2", "HorizontalPodAutoscaler");
    assert_non_null(v1);
    assert_non_null(v2);
    assert_false(v1->preferred);
    assert_true(v2->preferred);
    assert_ptr_equal(kc_restmap_for_group_kind(m, "autoscaling", "HorizontalPodAutoscaler"), v2);
    assert_ptr_equal(kc_restmap_for_resource(m, "autoscaling", NULL, "horizontalpodautoscalers"), v2);
    assert_ptr_equal(kc_restmap_for_resource(m, "autoscaling", "v1", "horizontalpodautoscalers"), v1);
    assert_ptr_equal(kc_restmap_for_resource(m, "", NULL, "pods"), kc_restmap_for_kind(m, "v1", "Pod"));
    assert_null(kc_restmap_for_resource(m, "", NULL, "pods/status"));

    kc_restmap_t *again;
    assert_int_equal(kc_restmap_build(fetch, &s, &again), 0);
    assert_true(kc_restmap_same(m, again));
    kc_restmap_unref(again);
    kc_restmap_unref(m);
}

static void test_errors_and_bounds(void **state)
{
    (void)state;
    kc_restmap_t *m = NULL;
    static const char *const none[] = {NULL};
    server_t s = {.docs = none};
    assert_int_equal(kc_restmap_build(fetch, &s, &m), KP_ENOTFOUND); /* no /api */
    assert_null(m);
    static const char *const bad[] = {"/api", "{'versions':'v1'}", NULL};
    s.docs = bad;
    assert_int_equal(kc_restmap_build(fetch, &s, &m), KP_ECORRUPT);
    /* More group-versions than the bound: refused, not truncated. */
    s.docs = docs;
    s.extra_groups = KC_DISCOVERY_MAX_GROUPS;
    assert_int_equal(kc_restmap_build(fetch, &s, &m), KP_ETOOLARGE);
    assert_null(m);
}

static void test_deferred(void **state)
{
    (void)state;
    /* First the server serves no CRD; then it does. */
    static const char *const before[] = {
        "/api", "{'versions':['v1']}", "/api/v1", CORE_V1, "/apis", "{'groups':[]}", NULL};
    static const char *const after[] = {
        "/api", "{'versions':['v1']}", "/api/v1", CORE_V1, "/apis",
        "{'groups':[{'name':'example.com','versions':[{'version':'v1'}],"
        "'preferredVersion':{'version':'v1'}}]}",
        "/apis/example.com/v1",
        "{'resources':[{'name':'widgets','namespaced':true,'kind':'Widget','verbs':['list']}]}",
        NULL};
    server_t s = {.docs = before};
    kc_discovery_config_t cfg = {.fetch = fetch, .fetch_arg = &s, .period_ms = 60000,
                                 .min_interval_ms = 1};
    kc_discovery_t *d;
    assert_int_equal(kc_discovery_new(NULL, &cfg, &d), 0);
    kc_restmap_t *m;
    const kc_api_resource_t *e;
    assert_int_equal(kc_discovery_lookup(d, "v1", "Pod", &m, &e), 0);
    assert_string_equal(e->r.resource, "pods");
    kc_restmap_unref(m);
    assert_int_equal(kc_discovery_reads(d), 1);
    /* A known kind does not read again within the period. */
    assert_int_equal(kc_discovery_lookup(d, "v1", "Node", &m, &e), 0);
    kc_restmap_unref(m);
    assert_int_equal(kc_discovery_reads(d), 1);

    /* Unknown: read again (past min_interval_ms), still unknown. */
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
    assert_int_equal(kc_discovery_lookup(d, "example.com/v1", "Widget", &m, &e), KP_ENOTFOUND);
    assert_int_equal(kc_discovery_reads(d), 2);
    /* The CRD arrives: the miss reads again and finds it. */
    s.docs = after;
    nanosleep(&ts, NULL);
    assert_int_equal(kc_discovery_lookup(d, "example.com/v1", "Widget", &m, &e), 0);
    assert_string_equal(e->r.resource, "widgets");
    assert_int_equal(e->verbs, KC_VERB_LIST);
    kc_restmap_unref(m);
    assert_int_equal(kc_discovery_reads(d), 3);
    kc_discovery_free(d);

    /* On-demand reads are rate-limited: misses within min_interval_ms
     * share the snapshot read last. */
    s.docs = before;
    cfg.min_interval_ms = 60000;
    assert_int_equal(kc_discovery_new(NULL, &cfg, &d), 0);
    for (int i = 0; i < 5; i++)
        assert_int_equal(kc_discovery_lookup(d, "example.com/v1", "Widget", &m, &e), KP_ENOTFOUND);
    assert_int_equal(kc_discovery_reads(d), 1);
    /* A failed read keeps the last snapshot. */
    static const char *const none[] = {NULL};
    s.docs = none;
    cfg.min_interval_ms = 1;
    kc_discovery_free(d);
    s.docs = before;
    assert_int_equal(kc_discovery_new(NULL, &cfg, &d), 0);
    assert_int_equal(kc_discovery_map(d, -1, &m), 0);
    kc_restmap_unref(m);
    s.docs = none;
    nanosleep(&ts, NULL);
    assert_int_equal(kc_discovery_map(d, 0, &m), 0);
    assert_non_null(kc_restmap_for_kind(m, "v1", "Pod"));
    kc_restmap_unref(m);
    kc_discovery_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mapping),
        cmocka_unit_test(test_errors_and_bounds),
        cmocka_unit_test(test_deferred),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
