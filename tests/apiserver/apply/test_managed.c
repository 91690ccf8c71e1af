/*
 * test_managed.c -- src/apiserver/managed.c (+ managed_set.c, managed_walk.c):
 * metadata.managedFields and server-side apply against the real schema
 * facts, with Kubernetes' exact FieldsV1 keys, entry order and conflict
 * texts (structured-merge-diff v4, apimachinery's managedfields/internal).
 *
 * FieldsV1 values are compared twice: as JSON (json_equal) and as compact
 * text, because Kubernetes' key order is part of what clients see.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/apply/managed.h"
#include "apiserver/apply/managed_int.h"
#include "apiserver/schema/schema.h"
#include "lib/err.h"

#define T1 "2024-05-01T10:00:00Z"
#define T2 "2024-05-01T10:00:01Z"
#define T3 "2024-05-01T10:00:02Z"
#define T4 "2024-05-01T10:00:03Z"

/* A FieldsV1 key as it appears in compact JSON text: k:{"name":"<n>"}. */
#define KN(n)      "\"k:{\\\"name\\\":\\\"" n "\\\"}\""
#define KN_A       KN("A")
#define KN_B       KN("B")
#define KN_E       KN("E")
#define KN_C       KN("c")
#define KN_NGINX   KN("nginx")
#define KN_SIDECAR KN("sidecar")

static const char *const RESET_STATUS[] = {"status", NULL};

typedef struct fx {
    api_schema_t *s;
    const json_t *dep, *pod, *svc, *cm;
} fx_t;

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    assert_int_equal(api_schema_load(&f->s), 0);
    f->dep = api_schema_kind(f->s, "apps", "v1", "Deployment", NULL);
    f->pod = api_schema_kind(f->s, "", "v1", "Pod", NULL);
    f->svc = api_schema_kind(f->s, "", "v1", "Service", NULL);
    f->cm = api_schema_kind(f->s, "", "v1", "ConfigMap", NULL);
    assert_true(f->dep && f->pod && f->svc && f->cm);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    api_schema_free(f->s);
    free(f);
    return 0;
}

static json_t *js(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    if (!v) fail_msg("bad JSON in test: %s: %s", text, e.text);
    return v;
}

static void assert_json(const json_t *got, const char *want)
{
    json_t *w = js(want);
    if (!json_equal((json_t *)got, w)) {
        char *g = got ? json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
        fprintf(stderr, "got:  %s\nwant: %s\n", g ? g : "(null)", want);
        free(g);
        json_decref(w);
        fail_msg("JSON differs");
    }
    json_decref(w);
}

/* Exact compact text: key order included. */
static void assert_text(const json_t *got, const char *want)
{
    char *g = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
    assert_non_null(g);
    if (strcmp(g, want)) {
        fprintf(stderr, "got:  %s\nwant: %s\n", g, want);
        free(g);
        fail_msg("text differs");
    }
    free(g);
    assert_json(got, want);
}

static api_manager_t mgr(const char *name, const char *now)
{
    api_manager_t m = {name, "apps/v1", "", now, RESET_STATUS};
    return m;
}

static const json_t *mfs(const json_t *obj)
{
    return json_object_get(json_object_get(obj, "metadata"), "managedFields");
}

/* The fieldsV1 of the entry (manager, operation), NULL if none. */
static const json_t *fields(const json_t *obj, const char *manager, const char *op)
{
    size_t i;
    json_t *e;
    json_array_foreach(mfs(obj), i, e)
    {
        const char *m = json_string_value(json_object_get(e, "manager"));
        const char *o = json_string_value(json_object_get(e, "operation"));
        if (m && o && !strcmp(m, manager) && !strcmp(o, op)) return json_object_get(e, "fieldsV1");
    }
    return NULL;
}

static json_t *apply_ok(const fx_t *f, const json_t *kind, const json_t *live, const char *cfg,
                        const char *manager, const char *now, int force)
{
    api_manager_t m = mgr(manager, now);
    json_t *c = js(cfg), *out = NULL, *conf = NULL;
    char err[1024] = "";
    int rc = api_managed_apply(f->s, kind, live, c, &m, force, &out, &conf, err, sizeof err);
    if (rc) fail_msg("apply by %s failed (%d): %s", manager, rc, err);
    assert_null(conf);
    json_decref(c);
    return out;
}

/* An apply that must conflict: returns the causes, err gets the message. */
static json_t *apply_conflict(const fx_t *f, const json_t *kind, const json_t *live,
                              const char *cfg, const char *manager, char *err, size_t errlen)
{
    api_manager_t m = mgr(manager, T4);
    json_t *c = js(cfg), *out = (json_t *)1, *conf = NULL;
    int rc = api_managed_apply(f->s, kind, live, c, &m, 0, &out, &conf, err, errlen);
    assert_int_equal(rc, KP_ECONFLICT);
    assert_null(out);
    assert_non_null(conf);
    json_decref(c);
    return conf;
}

static json_t *update_ok(const fx_t *f, const json_t *kind, const json_t *old, const char *obj,
                         const char *manager, const char *now)
{
    api_manager_t m = mgr(manager, now);
    json_t *o = js(obj);
    assert_int_equal(api_managed_update(f->s, kind, old, o, &m), 0);
    return o;
}

/* --- the required scenarios ------------------------------------------- */

#define CFG_A1                                                                                     \
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\","          \
    "\"labels\":{\"app\":\"web\",\"tier\":\"fe\"}},\"spec\":{\"replicas\":2,\"selector\":"         \
    "{\"matchLabels\":{\"app\":\"web\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":"         \
    "\"web\"}},\"spec\":{\"containers\":[{\"name\":\"nginx\",\"image\":\"nginx:1.25\",\"env\":"    \
    "[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\",\"value\":\"2\"}],\"ports\":"               \
    "[{\"containerPort\":80}]}]}}}}"
#define CFG_A2                                                                                     \
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\","          \
    "\"labels\":{\"app\":\"web\"}},\"spec\":{\"replicas\":2,\"selector\":"                         \
    "{\"matchLabels\":{\"app\":\"web\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":"         \
    "\"web\"}},\"spec\":{\"containers\":[{\"name\":\"nginx\",\"image\":\"nginx:1.25\",\"env\":"    \
    "[{\"name\":\"A\",\"value\":\"1\"}],\"ports\":[{\"containerPort\":80}]}]}}}}"

/* (a) create by apply; re-apply without a label and an env var: both go. */
static void test_apply_create_and_prune(void **state)
{
    fx_t *f = *state;
    json_t *o1 = apply_ok(f, f->dep, NULL, CFG_A1, "kubectl", T1, 0);
    const char *set1 =
        "{\"f:metadata\":{\"f:labels\":{\"f:app\":{},\"f:tier\":{}}},\"f:spec\":{\"f:replicas\":{},"
        "\"f:selector\":{},\"f:template\":{\"f:metadata\":{\"f:labels\":{\"f:app\":{}}},"
        "\"f:spec\":{\"f:containers\":{" KN_NGINX ":{\".\":{},\"f:env\":{" KN_A ":{\".\":{},"
        "\"f:name\":{},\"f:value\":{}}," KN_B ":{\".\":{},\"f:name\":{},\"f:value\":{}}},"
        "\"f:image\":{},\"f:name\":{},\"f:ports\":{\"k:{\\\"containerPort\\\":80,"
        "\\\"protocol\\\":\\\"TCP\\\"}\":{\".\":{},\"f:containerPort\":{}}}}}}}}"
        "}";
    assert_text(fields(o1, "kubectl", "Apply"), set1);
    /* The object is the config plus exactly one entry. */
    json_t *want = js(CFG_A1);
    json_t *entry = json_pack("{s:s,s:s,s:s,s:s,s:s,s:o}", "manager", "kubectl", "operation",
                              "Apply", "apiVersion", "apps/v1", "time", T1, "fieldsType",
                              "FieldsV1", "fieldsV1", js(set1));
    json_object_set_new(json_object_get(want, "metadata"), "managedFields",
                        json_pack("[o]", entry));
    assert_true(json_equal(o1, want));
    json_decref(want);

    json_t *o2 = apply_ok(f, f->dep, o1, CFG_A2, "kubectl", T2, 0);
    json_t *want2 = js(CFG_A2);
    json_object_del(json_object_get(o2, "metadata"), "managedFields");
    assert_true(json_equal(o2, want2));
    json_decref(want2);
    json_decref(o2);

    /* And the entry is config 2's set, stamped with the second time. */
    o2 = apply_ok(f, f->dep, o1, CFG_A2, "kubectl", T2, 0);
    assert_json(mfs(o2),
                "[{\"manager\":\"kubectl\",\"operation\":\"Apply\",\"apiVersion\":\"apps/v1\","
                "\"time\":\"" T2 "\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":"
                "{\"f:labels\":{\"f:app\":{}}},\"f:spec\":{\"f:replicas\":{},\"f:selector\":{},"
                "\"f:template\":{\"f:metadata\":{\"f:labels\":{\"f:app\":{}}},\"f:spec\":"
                "{\"f:containers\":{" KN_NGINX ":{\".\":{},\"f:env\":{" KN_A ":{\".\":{},"
                "\"f:name\":{},\"f:value\":{}}},\"f:image\":{},\"f:name\":{},\"f:ports\":"
                "{\"k:{\\\"containerPort\\\":80,\\\"protocol\\\":\\\"TCP\\\"}\":{\".\":{},"
                "\"f:containerPort\":{}}}}}}}}}}]");
    /* Applying the same config again changes nothing, not even the time. */
    json_t *o3 = apply_ok(f, f->dep, o2, CFG_A2, "kubectl", T3, 0);
    assert_true(json_equal(o3, o2));
    json_decref(o1);
    json_decref(o2);
    json_decref(o3);
}

#define CFG_R3                                                                                     \
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\"},"         \
    "\"spec\":{\"replicas\":3,\"template\":{\"spec\":{\"containers\":[{\"name\":\"nginx\","        \
    "\"image\":\"nginx\"}]}}}}"
#define SET_R3_TEMPLATE                                                                            \
    "\"f:template\":{\"f:spec\":{\"f:containers\":{" KN_NGINX ":{\".\":{},\"f:image\":{},"         \
    "\"f:name\":{}}}}}"

/* (b) A owns replicas 3; B applies 5: conflict; with force B takes it. */
static void test_apply_conflict_and_force(void **state)
{
    fx_t *f = *state;
    json_t *a = apply_ok(f, f->dep, NULL, CFG_R3, "A", T1, 0);
    const char *cfgb = "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":"
                       "{\"name\":\"web\"},\"spec\":{\"replicas\":5}}";
    char err[1024];
    json_t *causes = apply_conflict(f, f->dep, a, cfgb, "B", err, sizeof err);
    assert_string_equal(err, "Apply failed with 1 conflict: conflict with \"A\": .spec.replicas");
    assert_json(causes, "[{\"reason\":\"FieldManagerConflict\",\"message\":\"conflict with "
                        "\\\"A\\\"\",\"field\":\".spec.replicas\"}]");
    json_decref(causes);

    json_t *b = apply_ok(f, f->dep, a, cfgb, "B", T2, 1);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(b, "spec"), "replicas")),
                     5);
    assert_json(mfs(b),
                "[{\"manager\":\"A\",\"operation\":\"Apply\",\"apiVersion\":\"apps/v1\",\"time\":"
                "\"" T1 "\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:spec\":{" SET_R3_TEMPLATE
                "}}},{\"manager\":\"B\",\"operation\":\"Apply\",\"apiVersion\":\"apps/v1\","
                "\"time\":\"" T2 "\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:spec\":"
                "{\"f:replicas\":{}}}}]");

    /* B stops applying replicas: nobody else owns it, so it goes. */
    json_t *b2 = apply_ok(f, f->dep, b,
                          "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":"
                          "{\"name\":\"web\",\"labels\":{\"x\":\"y\"}}}",
                          "B", T3, 0);
    assert_null(json_object_get(json_object_get(b2, "spec"), "replicas"));
    assert_json(fields(b2, "B", "Apply"), "{\"f:metadata\":{\"f:labels\":{\"f:x\":{}}}}");
    assert_non_null(json_object_get(json_object_get(b2, "spec"), "template"));
    json_decref(a);
    json_decref(b);
    json_decref(b2);
}

/* (c) the same value: no conflict, both own it. */
static void test_apply_shared_value(void **state)
{
    fx_t *f = *state;
    json_t *a = apply_ok(f, f->dep, NULL, CFG_R3, "A", T1, 0);
    json_t *b = apply_ok(f, f->dep, a,
                         "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":"
                         "{\"name\":\"web\"},\"spec\":{\"replicas\":3}}",
                         "B", T2, 0);
    /* The object did not change, so B's new entry has no time (and sorts
     * first among the Apply entries, as time 0). */
    assert_json(mfs(b),
                "[{\"manager\":\"B\",\"operation\":\"Apply\",\"apiVersion\":\"apps/v1\","
                "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:spec\":{\"f:replicas\":{}}}},"
                "{\"manager\":\"A\",\"operation\":\"Apply\",\"apiVersion\":\"apps/v1\",\"time\":"
                "\"" T1 "\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:spec\":{\"f:replicas\":"
                "{}," SET_R3_TEMPLATE "}}}]");
    /* A drops replicas from its config: B still owns it, so it stays. */
    json_t *a2 = apply_ok(f, f->dep, b,
                          "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":"
                          "{\"name\":\"web\"},\"spec\":{\"template\":{\"spec\":{\"containers\":"
                          "[{\"name\":\"nginx\",\"image\":\"nginx\"}]}}}}",
                          "A", T3, 0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(a2, "spec"), "replicas")),
                     3);
    assert_json(fields(a2, "A", "Apply"), "{\"f:spec\":{" SET_R3_TEMPLATE "}}");
    assert_json(fields(a2, "B", "Apply"), "{\"f:spec\":{\"f:replicas\":{}}}");
    json_decref(a);
    json_decref(b);
    json_decref(a2);
}

#define OBJ_CSA(annotations)                                                                       \
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\","          \
    "\"namespace\":\"default\"" annotations "},\"spec\":{\"replicas\":1,\"template\":{\"spec\":"   \
    "{\"containers\":[{\"name\":\"nginx\",\"image\":\"nginx\"}]}}}}"

/* (d) an Update by kubectl-client-side-apply, then kubectl's apply. */
static void test_apply_conflict_with_updater(void **state)
{
    fx_t *f = *state;
    json_t *live = update_ok(f, f->dep, NULL, OBJ_CSA(""), "kubectl-client-side-apply", T1);
    char err[1024];
    json_t *causes = apply_conflict(f, f->dep, live,
                                    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
                                    "\"metadata\":{\"name\":\"web\"},\"spec\":{\"replicas\":2}}",
                                    "kubectl", err, sizeof err);
    assert_string_equal(err, "Apply failed with 1 conflict: conflict with "
                             "\"kubectl-client-side-apply\" using apps/v1: .spec.replicas");
    assert_json(causes, "[{\"reason\":\"FieldManagerConflict\",\"message\":\"conflict with "
                        "\\\"kubectl-client-side-apply\\\" using apps/v1\",\"field\":"
                        "\".spec.replicas\"}]");
    json_decref(causes);

    /* Two conflicts with one manager: one line per path, set order. */
    causes = apply_conflict(f, f->dep, live,
                            "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":"
                            "{\"name\":\"web\"},\"spec\":{\"replicas\":2,\"template\":{\"spec\":"
                            "{\"containers\":[{\"name\":\"nginx\",\"image\":\"nginx:2\"}]}}}}",
                            "kubectl", err, sizeof err);
    assert_string_equal(err, "Apply failed with 2 conflicts: conflicts with "
                             "\"kubectl-client-side-apply\" using apps/v1:\n- .spec.replicas\n"
                             "- .spec.template.spec.containers[name=\"nginx\"].image");
    assert_json(causes,
                "[{\"reason\":\"FieldManagerConflict\",\"message\":\"conflict with "
                "\\\"kubectl-client-side-apply\\\" using apps/v1\",\"field\":\".spec.replicas\"},"
                "{\"reason\":\"FieldManagerConflict\",\"message\":\"conflict with "
                "\\\"kubectl-client-side-apply\\\" using apps/v1\",\"field\":"
                "\".spec.template.spec.containers[name=\\\"nginx\\\"].image\"}]");
    json_decref(causes);
    json_decref(live);
}

/* kubectl's upgrade from client-side apply: fields the last-applied
 * annotation still holds with live's value are not conflicts, and the
 * annotation follows the applied config. */
static void test_apply_last_applied_upgrade(void **state)
{
    fx_t *f = *state;
    const char *ann =
        ",\"annotations\":{\"kubectl.kubernetes.io/last-applied-configuration\":"
        "\"{\\\"apiVersion\\\":\\\"apps/v1\\\",\\\"kind\\\":\\\"Deployment\\\","
        "\\\"metadata\\\":{\\\"name\\\":\\\"web\\\",\\\"namespace\\\":\\\"default\\\"},"
        "\\\"spec\\\":{\\\"replicas\\\":1,\\\"template\\\":{\\\"spec\\\":"
        "{\\\"containers\\\":[{\\\"image\\\":\\\"nginx:0\\\",\\\"name\\\":"
        "\\\"nginx\\\"}]}}}}\\n\"}";
    char obj[2048];
    snprintf(obj, sizeof obj, OBJ_CSA("%s"), ann);
    json_t *live = update_ok(f, f->dep, NULL, obj, "kubectl-client-side-apply", T1);
    /* The image differs from last-applied (someone changed it): still a conflict. */
    char err[1024];
    json_t *causes = apply_conflict(f, f->dep, live,
                                    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
                                    "\"metadata\":{\"name\":\"web\"},\"spec\":{\"replicas\":2,"
                                    "\"template\":{\"spec\":{\"containers\":[{\"name\":\"nginx\","
                                    "\"image\":\"nginx:2\"}]}}}}",
                                    "kubectl", err, sizeof err);
    assert_string_equal(err, "Apply failed with 1 conflict: conflict with "
                             "\"kubectl-client-side-apply\" using apps/v1: "
                             ".spec.template.spec.containers[name=\"nginx\"].image");
    json_decref(causes);
    /* Replicas alone is allowed: kubectl takes it over. */
    json_t *out =
        apply_ok(f, f->dep, live,
                 "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":"
                 "{\"name\":\"web\",\"labels\":{\"a\":\"<b>\"}},\"spec\":{\"replicas\":2}}",
                 "kubectl", T2, 0);
    assert_json(fields(out, "kubectl", "Apply"),
                "{\"f:metadata\":{\"f:labels\":{\"f:a\":{}}},\"f:spec\":{\"f:replicas\":{}}}");
    assert_json(fields(out, "kubectl-client-side-apply", "Update"),
                "{\"f:metadata\":{\"f:annotations\":{\".\":{},\"f:kubectl.kubernetes.io/"
                "last-applied-configuration\":{}}},\"f:spec\":{\"f:template\":{\"f:spec\":"
                "{\"f:containers\":{" KN_NGINX ":{\".\":{},\"f:image\":{},\"f:name\":{}}}}}}}");
    const char *la = json_string_value(
        json_object_get(json_object_get(json_object_get(out, "metadata"), "annotations"),
                        "kubectl.kubernetes.io/last-applied-configuration"));
    assert_non_null(la);
    assert_string_equal(la, "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":"
                            "{\"labels\":{\"a\":\"\\u003cb\\u003e\"},\"name\":\"web\"},"
                            "\"spec\":{\"replicas\":2}}\n");
    /* Another manager gets no such allowance. */
    causes = apply_conflict(f, f->dep, live,
                            "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":"
                            "{\"name\":\"web\"},\"spec\":{\"replicas\":2}}",
                            "helm", err, sizeof err);
    json_decref(causes);
    json_decref(out);
    json_decref(live);
}

/* Conflicts with two managers: grouped by manager identifier. */
static void test_apply_conflict_two_managers(void **state)
{
    fx_t *f = *state;
    json_t *a = apply_ok(f, f->dep, NULL,
                         "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":"
                         "{\"name\":\"web\"},\"spec\":{\"template\":{\"spec\":{\"containers\":"
                         "[{\"name\":\"nginx\",\"image\":\"nginx\"}]}}}}",
                         "alpha", T1, 0);
    json_t *z = json_deep_copy(a);
    json_object_set_new(json_object_get(z, "spec"), "replicas", json_integer(4));
    api_manager_t m = mgr("zeta", T2);
    assert_int_equal(api_managed_update(f->s, f->dep, a, z, &m), 0);
    assert_json(fields(z, "zeta", "Update"), "{\"f:spec\":{\"f:replicas\":{}}}");
    char err[1024];
    json_t *causes = apply_conflict(f, f->dep, z,
                                    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
                                    "\"metadata\":{\"name\":\"web\"},\"spec\":{\"replicas\":1,"
                                    "\"template\":{\"spec\":{\"containers\":[{\"name\":\"nginx\","
                                    "\"image\":\"nginx:2\"}]}}}}",
                                    "m", err, sizeof err);
    assert_string_equal(err, "Apply failed with 2 conflicts: conflicts with \"alpha\":\n"
                             "- .spec.template.spec.containers[name=\"nginx\"].image\n"
                             "conflicts with \"zeta\" using apps/v1:\n- .spec.replicas");
    assert_json(causes,
                "[{\"reason\":\"FieldManagerConflict\",\"message\":\"conflict with \\\"alpha\\\"\","
                "\"field\":\".spec.template.spec.containers[name=\\\"nginx\\\"].image\"},"
                "{\"reason\":\"FieldManagerConflict\",\"message\":\"conflict with \\\"zeta\\\" "
                "using apps/v1\",\"field\":\".spec.replicas\"}]");
    json_decref(causes);
    json_decref(a);
    json_decref(z);
}

/* (e) containers are keyed by name: another manager's container stays. */
static void test_apply_keyed_list(void **state)
{
    fx_t *f = *state;
    json_t *a = apply_ok(f, f->dep, NULL, CFG_R3, "A", T1, 0);
    const char *side = "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":"
                       "{\"name\":\"web\"},\"spec\":{\"template\":{\"spec\":{\"containers\":"
                       "[{\"name\":\"sidecar\",\"image\":\"busybox\"}]}}}}";
    json_t *b = apply_ok(f, f->dep, a, side, "B", T2, 0);
    assert_json(json_object_get(json_object_get(json_object_get(b, "spec"), "template"), "spec"),
                "{\"containers\":[{\"name\":\"nginx\",\"image\":\"nginx\"},{\"name\":\"sidecar\","
                "\"image\":\"busybox\"}]}");
    assert_json(fields(b, "B", "Apply"), "{\"f:spec\":{\"f:template\":{\"f:spec\":"
                                         "{\"f:containers\":{" KN_SIDECAR ":{\".\":{},"
                                         "\"f:image\":{},\"f:name\":{}}}}}}}");
    assert_json(fields(b, "A", "Apply"), "{\"f:spec\":{\"f:replicas\":{}," SET_R3_TEMPLATE "}}");
    /* B drops its container: only B's goes. */
    json_t *b2 = apply_ok(f, f->dep, b,
                          "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":"
                          "{\"name\":\"web\",\"labels\":{\"b\":\"1\"}}}",
                          "B", T3, 0);
    assert_json(json_object_get(json_object_get(json_object_get(b2, "spec"), "template"), "spec"),
                "{\"containers\":[{\"name\":\"nginx\",\"image\":\"nginx\"}]}");
    json_decref(a);
    json_decref(b);
    json_decref(b2);
}

/* (f) removal spares fields another manager owns, and fields nobody owns. */
static void test_apply_prune_spares_owned(void **state)
{
    fx_t *f = *state;
    json_t *a = apply_ok(f, f->dep, NULL,
                         "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":"
                         "{\"name\":\"web\",\"labels\":{\"app\":\"web\",\"tier\":\"fe\","
                         "\"team\":\"a\"}},\"spec\":{\"replicas\":1}}",
                         "A", T1, 0);
    json_t *b = apply_ok(f, f->dep, a,
                         "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":"
                         "{\"name\":\"web\",\"labels\":{\"tier\":\"fe\"}}}",
                         "B", T2, 0);
    /* An Update owns team now, and defaulting added a field nobody owns. */
    json_t *c = json_deep_copy(b);
    json_object_set_new(json_object_get(json_object_get(c, "metadata"), "labels"), "team",
                        json_string("b"));
    api_manager_t m = mgr("kubectl-label", T3);
    assert_int_equal(api_managed_update(f->s, f->dep, b, c, &m), 0);
    json_object_set_new(json_object_get(c, "spec"), "revisionHistoryLimit", json_integer(10));
    assert_json(fields(c, "A", "Apply"),
                "{\"f:metadata\":{\"f:labels\":{\"f:app\":{},\"f:tier\":{}}},\"f:spec\":"
                "{\"f:replicas\":{}}}");
    json_t *a2 = apply_ok(f, f->dep, c,
                          "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":"
                          "{\"name\":\"web\"},\"spec\":{\"replicas\":1}}",
                          "A", T4, 0);
    assert_json(json_object_get(json_object_get(a2, "metadata"), "labels"),
                "{\"tier\":\"fe\",\"team\":\"b\"}");
    assert_json(json_object_get(a2, "spec"), "{\"replicas\":1,\"revisionHistoryLimit\":10}");
    assert_json(fields(a2, "A", "Apply"), "{\"f:spec\":{\"f:replicas\":{}}}");
    json_decref(a);
    json_decref(b);
    json_decref(c);
    json_decref(a2);
}

#define OBJ_G                                                                                      \
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\","          \
    "\"namespace\":\"default\",\"uid\":\"u1\",\"labels\":{\"app\":\"web\"}},\"spec\":"             \
    "{\"replicas\":1,\"selector\":{\"matchLabels\":{\"app\":\"web\"}},\"strategy\":{\"type\":"     \
    "\"RollingUpdate\",\"rollingUpdate\":{\"maxSurge\":\"25%\",\"maxUnavailable\":\"25%\"}},"      \
    "\"template\":{\"metadata\":{\"labels\":{\"app\":\"web\"}},\"spec\":{\"containers\":"          \
    "[{\"name\":\"nginx\",\"image\":\"nginx\",\"ports\":[{\"containerPort\":80,\"protocol\":"      \
    "\"TCP\"}],\"env\":[{\"name\":\"E\",\"value\":\"1\"}],\"resources\":{}}],\"restartPolicy\":"   \
    "\"Always\"}}},\"status\":{\"replicas\":0}}"

/* (g) a create gives the manager every field, with Kubernetes' keys. */
static void test_update_create_and_change(void **state)
{
    fx_t *f = *state;
    json_t *o = update_ok(f, f->dep, NULL, OBJ_G, "kubectl-create", T1);
    const char *set =
        "{\"f:metadata\":{\"f:labels\":{\".\":{},\"f:app\":{}}},\"f:spec\":{\"f:replicas\":{},"
        "\"f:selector\":{},\"f:strategy\":{\"f:rollingUpdate\":{\".\":{},\"f:maxSurge\":{},"
        "\"f:maxUnavailable\":{}},\"f:type\":{}},\"f:template\":{\"f:metadata\":{\"f:labels\":"
        "{\".\":{},\"f:app\":{}}},\"f:spec\":{\"f:containers\":{" KN_NGINX ":{\".\":{},"
        "\"f:env\":{\".\":{}," KN_E ":{\".\":{},\"f:name\":{},\"f:value\":{}}},\"f:image\":{},"
        "\"f:name\":{},\"f:ports\":{\".\":{},\"k:{\\\"containerPort\\\":80,"
        "\\\"protocol\\\":"
        "\\\"TCP\\\"}\":{\".\":{},\"f:containerPort\":{},\"f:protocol\":{}}},"
        "\"f:resources\":{}}},"
        "\"f:restartPolicy\":{}}}}}";
    assert_text(fields(o, "kubectl-create", "Update"), set);
    assert_int_equal(json_array_size(mfs(o)), 1);
    json_t *e = json_array_get(mfs(o), 0);
    assert_string_equal(json_string_value(json_object_get(e, "time")), T1);
    assert_null(json_object_get(e, "subresource"));
    /* The entry's fields are in Kubernetes' order. */
    const char *order[] = {"manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1"};
    size_t i = 0;
    const char *k;
    json_t *v;
    json_object_foreach(e, k, v) assert_string_equal(k, order[i++]);
    assert_int_equal(i, 6);

    /* A second update moves only what changed. */
    json_t *n = json_deep_copy(o);
    json_t *c0 = json_array_get(
        json_object_get(
            json_object_get(json_object_get(json_object_get(n, "spec"), "template"), "spec"),
            "containers"),
        0);
    json_object_set_new(c0, "image", json_string("nginx:2"));
    json_object_set_new(json_object_get(json_object_get(n, "metadata"), "labels"), "tier",
                        json_string("x"));
    api_manager_t m = mgr("kubectl-edit", T2);
    assert_int_equal(api_managed_update(f->s, f->dep, o, n, &m), 0);
    assert_text(fields(n, "kubectl-edit", "Update"),
                "{\"f:metadata\":{\"f:labels\":{\"f:tier\":{}}},\"f:spec\":{\"f:template\":"
                "{\"f:spec\":{\"f:containers\":{" KN_NGINX ":{\"f:image\":{}}}}}}}");
    const char *fx = json_dumps(fields(n, "kubectl-create", "Update"), JSON_COMPACT);
    assert_non_null(fx);
    assert_null(strstr(fx, "f:image"));
    assert_non_null(strstr(fx, "f:env"));
    free((void *)fx);
    /* Oldest first among the Update entries. */
    assert_string_equal(json_string_value(json_object_get(json_array_get(mfs(n), 0), "manager")),
                        "kubectl-create");
    assert_string_equal(json_string_value(json_object_get(json_array_get(mfs(n), 1), "manager")),
                        "kubectl-edit");
    /* Removing a field takes it from its owner. */
    json_t *r = json_deep_copy(n);
    json_object_del(json_object_get(r, "spec"), "strategy");
    m = mgr("kubectl-edit", T3);
    assert_int_equal(api_managed_update(f->s, f->dep, n, r, &m), 0);
    fx = json_dumps(fields(r, "kubectl-create", "Update"), JSON_COMPACT);
    assert_null(strstr(fx, "f:strategy"));
    free((void *)fx);
    /* A removal alone gives the remover nothing to own: its time stays. */
    assert_string_equal(json_string_value(json_object_get(json_array_get(mfs(r), 1), "time")), T2);
    json_decref(r);
    json_decref(n);
    json_decref(o);
}

/* (h) finalizers are a set: v: entries; apply merges them as a set. */
static void test_finalizers_set(void **state)
{
    fx_t *f = *state;
    json_t *o = update_ok(f, f->cm, NULL,
                          "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                          "\"c\",\"finalizers\":[\"example.com/x\",\"b\"]},\"data\":{\"k\":\"v\"}}",
                          "kubectl-create", T1);
    assert_text(fields(o, "kubectl-create", "Update"),
                "{\"f:data\":{\".\":{},\"f:k\":{}},\"f:metadata\":{\"f:finalizers\":{\".\":{},"
                "\"v:\\\"b\\\"\":{},\"v:\\\"example.com/x\\\"\":{}}}}");
    json_decref(o);

    json_t *a = apply_ok(f, f->cm, NULL,
                         "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                         "\"c\",\"finalizers\":[\"x\"]}}",
                         "A", T1, 0);
    json_t *b = apply_ok(f, f->cm, a,
                         "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                         "\"c\",\"finalizers\":[\"y\",\"x\"]}}",
                         "B", T2, 0);
    assert_json(json_object_get(json_object_get(b, "metadata"), "finalizers"), "[\"y\",\"x\"]");
    json_t *a2 = apply_ok(f, f->cm, b,
                          "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                          "\"c\",\"finalizers\":[\"z\"]}}",
                          "A", T3, 0);
    /* x is still B's; z joins at the end. */
    assert_json(json_object_get(json_object_get(a2, "metadata"), "finalizers"),
                "[\"y\",\"x\",\"z\"]");
    assert_text(fields(a2, "A", "Apply"), "{\"f:metadata\":{\"f:finalizers\":"
                                          "{\"v:\\\"z\\\"\":{}}}}");
    json_t *b2 = apply_ok(f, f->cm, a2,
                          "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                          "\"c\",\"finalizers\":[\"y\"]}}",
                          "B", T4, 0);
    assert_json(json_object_get(json_object_get(b2, "metadata"), "finalizers"), "[\"y\",\"z\"]");
    json_decref(a);
    json_decref(b);
    json_decref(a2);
    json_decref(b2);
}

/* (i) managedFields sent with an update. */
static void test_update_incoming_managed_fields(void **state)
{
    fx_t *f = *state;
    json_t *o = update_ok(f, f->cm, NULL,
                          "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                          "\"c\",\"uid\":\"u\"},\"data\":{\"a\":\"1\"}}",
                          "creator", T1);
    const char *owner = "[{\"manager\":\"creator\",\"operation\":\"Update\",\"apiVersion\":"
                        "\"apps/v1\","
                        "\"time\":\"" T1 "\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:data\":"
                        "{\".\":{},\"f:a\":{}}}}]";
    api_manager_t m = mgr("editor", T2);

    /* Absent: old's are kept, and a no-op update adds no entry. */
    json_t *n = json_deep_copy(o);
    json_object_del(json_object_get(n, "metadata"), "managedFields");
    assert_int_equal(api_managed_update(f->s, f->cm, o, n, &m), 0);
    assert_json(mfs(n), owner);
    json_decref(n);

    /* Sent back unchanged (a GET-modify-PUT): the same. */
    n = json_deep_copy(o);
    assert_int_equal(api_managed_update(f->s, f->cm, o, n, &m), 0);
    assert_json(mfs(n), owner);
    json_decref(n);

    /* Rewritten by the client: Kubernetes takes them (and then tracks). */
    n = json_deep_copy(o);
    json_object_set_new(json_object_get(n, "metadata"), "managedFields",
                        js("[{\"manager\":\"someone\",\"operation\":\"Apply\",\"apiVersion\":"
                           "\"v1\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:data\":"
                           "{\"f:a\":{}}}}]"));
    json_object_set_new(json_object_get(n, "data"), "b", json_string("2"));
    assert_int_equal(api_managed_update(f->s, f->cm, o, n, &m), 0);
    assert_json(mfs(n), "[{\"manager\":\"someone\",\"operation\":\"Apply\",\"apiVersion\":\"v1\","
                        "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:data\":{\"f:a\":{}}}},"
                        "{\"manager\":\"editor\",\"operation\":\"Update\",\"apiVersion\":"
                        "\"apps/v1\","
                        "\"time\":\"" T2 "\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":"
                        "{\"f:data\":{\"f:b\":{}}}}]");
    json_decref(n);

    /* Not valid entries: old's are used instead. */
    n = json_deep_copy(o);
    json_object_set_new(json_object_get(n, "metadata"), "managedFields",
                        js("[{\"manager\":\"x\",\"operation\":\"Patch\",\"apiVersion\":\"v1\","
                           "\"fieldsType\":\"FieldsV1\"}]"));
    assert_int_equal(api_managed_update(f->s, f->cm, o, n, &m), 0);
    assert_json(mfs(n), owner);
    json_decref(n);

    /* [] and [{}] reset: the object is untracked from then on. */
    const char *resets[] = {"[]", "[{}]"};
    for (size_t i = 0; i < 2; i++) {
        n = json_deep_copy(o);
        json_object_set_new(json_object_get(n, "metadata"), "managedFields", js(resets[i]));
        json_object_set_new(json_object_get(n, "data"), "b", json_string("2"));
        assert_int_equal(api_managed_update(f->s, f->cm, o, n, &m), 0);
        assert_null(mfs(n));
        json_t *n2 = json_deep_copy(n);
        json_object_set_new(json_object_get(n2, "data"), "c", json_string("3"));
        assert_int_equal(api_managed_update(f->s, f->cm, n, n2, &m), 0);
        assert_null(mfs(n2));
        json_decref(n2);
        json_decref(n);
    }

    /* On a subresource, what the client sends is ignored. */
    n = json_deep_copy(o);
    json_object_set_new(json_object_get(n, "metadata"), "managedFields", js("[]"));
    m.subresource = "status";
    assert_int_equal(api_managed_update(f->s, f->cm, o, n, &m), 0);
    assert_json(mfs(n), owner);
    json_decref(n);
    json_decref(o);
}

/* Force over an Update entry; an Apply entry follows the manager's
 * apiVersion; subresource entries are told apart in conflicts. */
static void test_apply_force_versions_subresources(void **state)
{
    fx_t *f = *state;
    json_t *live = update_ok(f, f->dep, NULL, OBJ_CSA(""), "kubectl-client-side-apply", T1);
    json_t *out = apply_ok(f, f->dep, live,
                           "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":"
                           "{\"name\":\"web\"},\"spec\":{\"replicas\":2}}",
                           "kubectl", T2, 1);
    assert_json(fields(out, "kubectl-client-side-apply", "Update"),
                "{\"f:spec\":{\"f:template\":{\"f:spec\":{\"f:containers\":{" KN_NGINX ":{\".\":{},"
                "\"f:image\":{},\"f:name\":{}}}}}}}");
    /* The same manager at another version: still one Apply entry. */
    api_manager_t m = mgr("kubectl", T3);
    m.api_version = "apps/v1beta2";
    json_t *c = js("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":"
                   "\"web\"},\"spec\":{\"replicas\":4}}"),
           *o2 = NULL;
    char err[256];
    assert_int_equal(api_managed_apply(f->s, f->dep, out, c, &m, 0, &o2, NULL, err, sizeof err), 0);
    assert_json(mfs(o2), "[{\"manager\":\"kubectl\",\"operation\":\"Apply\",\"apiVersion\":"
                         "\"apps/v1beta2\",\"time\":\"" T3 "\",\"fieldsType\":\"FieldsV1\","
                         "\"fieldsV1\":{\"f:spec\":{\"f:replicas\":{}}}},{\"manager\":"
                         "\"kubectl-client-side-apply\",\"operation\":\"Update\",\"apiVersion\":"
                         "\"apps/v1\",\"time\":\"" T1 "\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":"
                         "{\"f:spec\":{\"f:template\":{\"f:spec\":{\"f:containers\":{" KN_NGINX
                         ":{\".\":{},\"f:image\":{},\"f:name\":{}}}}}}}}]");
    json_decref(c);
    json_decref(o2);
    json_decref(out);

    /* Two appliers of /status. */
    static const char *const not_status[] = {"spec", NULL};
    api_manager_t s1 = {"ctrl", "apps/v1", "status", T2, not_status};
    c = js("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\"},"
           "\"status\":{\"replicas\":1}}");
    assert_int_equal(api_managed_apply(f->s, f->dep, live, c, &s1, 0, &out, NULL, err, sizeof err),
                     0);
    assert_json(json_array_get(mfs(out), 0),
                "{\"manager\":\"ctrl\",\"operation\":\"Apply\",\"apiVersion\":\"apps/v1\","
                "\"time\":\"" T2 "\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:status\":"
                "{\"f:replicas\":{}}},\"subresource\":\"status\"}");
    json_decref(c);
    api_manager_t s2 = {"other", "apps/v1", "status", T3, not_status};
    c = js("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\"},"
           "\"status\":{\"replicas\":2}}");
    json_t *causes = NULL;
    assert_int_equal(api_managed_apply(f->s, f->dep, out, c, &s2, 0, &o2, &causes, err, sizeof err),
                     KP_ECONFLICT);
    assert_string_equal(err,
                        "Apply failed with 1 conflict: conflict with \"ctrl\" with subresource "
                        "\"status\": .status.replicas");
    json_decref(causes);
    json_decref(c);
    json_decref(out);
    json_decref(live);
}

/* --- more of the contract --------------------------------------------- */

/* An object without entries: the first applier meets before-first-apply. */
static void test_apply_before_first_apply(void **state)
{
    fx_t *f = *state;
    json_t *live = js("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":"
                      "\"web\",\"uid\":\"u\"},\"spec\":{\"replicas\":1}}");
    char err[1024];
    json_t *causes = apply_conflict(f, f->dep, live,
                                    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
                                    "\"metadata\":{\"name\":\"web\"},\"spec\":{\"replicas\":2}}",
                                    "m", err, sizeof err);
    assert_string_equal(err, "Apply failed with 1 conflict: conflict with \"before-first-apply\" "
                             "using apps/v1: .spec.replicas");
    json_decref(causes);
    json_t *out = apply_ok(f, f->dep, live,
                           "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":"
                           "{\"name\":\"web\",\"labels\":{\"a\":\"b\"}}}",
                           "m", T2, 0);
    assert_json(mfs(out),
                "[{\"manager\":\"m\",\"operation\":\"Apply\",\"apiVersion\":\"apps/v1\",\"time\":"
                "\"" T2 "\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{\"f:labels\":"
                "{\"f:a\":{}}}}},{\"manager\":\"before-first-apply\",\"operation\":\"Update\","
                "\"apiVersion\":\"apps/v1\",\"time\":\"" T2 "\",\"fieldsType\":\"FieldsV1\","
                "\"fieldsV1\":{\"f:spec\":{\"f:replicas\":{}}}}]");
    json_decref(out);
    json_decref(live);
}

static void test_apply_bad_config(void **state)
{
    fx_t *f = *state;
    api_manager_t m = mgr("m", T1);
    struct {
        const char *cfg, *err;
    } cases[] = {
        {"{\"metadata\":{\"name\":\"web\",\"managedFields\":[]}}",
         "metadata.managedFields must be nil"},
        {"{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"image\":\"x\"}]}}}}",
         ".spec.template.spec.containers: element 0: associative list with keys has an element "
         "that omits key field \"name\" (and doesn't have default value)"},
        {"{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"a\"}]}}}"
         "}",
         ".spec.template.spec.containers: duplicate entries for key [name=\"a\"]"},
        {"{\"spec\":{\"template\":{\"spec\":{\"containers\":[\"a\"]}}}}",
         ".spec.template.spec.containers: element 0: associative list with keys may not have "
         "non-map elements"},
        {"{\"metadata\":{\"finalizers\":[{\"a\":1}]}}",
         ".metadata.finalizers: element 0: associative list without keys has an element that's a "
         "map type"},
        {"{\"metadata\":{\"finalizers\":[\"a\",\"a\"]}}",
         ".metadata.finalizers: duplicate entries for key [=\"a\"]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_t *c = js(cases[i].cfg), *out = (json_t *)1, *conf = (json_t *)1;
        char err[512];
        int rc = api_managed_apply(f->s, f->dep, NULL, c, &m, 0, &out, &conf, err, sizeof err);
        assert_int_equal(rc, KP_EINVAL);
        assert_string_equal(err, cases[i].err);
        assert_null(out);
        assert_null(conf);
        json_decref(c);
    }
    /* Live with entries that do not decode. */
    json_t *live = js("{\"metadata\":{\"name\":\"w\",\"managedFields\":[{\"manager\":\"x\","
                      "\"operation\":\"Update\",\"apiVersion\":\"v1\"}]}}");
    json_t *c = js("{\"metadata\":{\"name\":\"w\"}}"), *out = NULL;
    char err[512];
    assert_int_equal(api_managed_apply(f->s, f->dep, live, c, &m, 0, &out, NULL, err, sizeof err),
                     KP_ECORRUPT);
    assert_string_equal(err, "failed to decode managed fields: missing fieldsType in managed "
                             "fields entry 0");
    assert_null(out);
    json_decref(c);
    json_decref(live);
    /* Missing arguments. */
    c = js("{}");
    m.manager = NULL;
    assert_int_equal(api_managed_apply(f->s, f->dep, NULL, c, &m, 0, &out, NULL, NULL, 0),
                     KP_EINVAL);
    assert_int_equal(api_managed_update(f->s, f->dep, NULL, c, &m), KP_EINVAL);
    json_decref(c);
}

/* An update whose lists cannot be keyed leaves no managedFields (as
 * Kubernetes' UpdateNoErrors does) instead of failing the write. */
static void test_update_bad_object(void **state)
{
    fx_t *f = *state;
    json_t *o = update_ok(f, f->pod, NULL,
                          "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":"
                          "[{\"image\":\"x\"}]}}",
                          "m", T1);
    assert_null(mfs(o));
    json_decref(o);
}

/* A status update through the subresource: its own entry. */
static void test_update_status_subresource(void **state)
{
    fx_t *f = *state;
    json_t *o =
        update_ok(f, f->dep, NULL, "{\"metadata\":{\"name\":\"web\"},\"spec\":{\"replicas\":1}}",
                  "kubectl", T1);
    json_t *n = json_deep_copy(o);
    json_object_set_new(n, "status",
                        js("{\"replicas\":1,\"conditions\":[{\"type\":\"Available\","
                           "\"status\":\"True\"}]}"));
    static const char *const reset_spec[] = {"spec", NULL};
    api_manager_t m = {"kube-controller-manager", "apps/v1", "status", T2, reset_spec};
    assert_int_equal(api_managed_update(f->s, f->dep, o, n, &m), 0);
    assert_json(json_array_get(mfs(n), 1),
                "{\"manager\":\"kube-controller-manager\",\"operation\":\"Update\",\"apiVersion\":"
                "\"apps/v1\",\"time\":\"" T2 "\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":"
                "{\"f:status\":{\"f:conditions\":{\".\":{},\"k:{\\\"type\\\":\\\"Available\\\"}\":"
                "{\".\":{},\"f:status\":{},\"f:type\":{}}},\"f:replicas\":{}}},\"subresource\":"
                "\"status\"}");
    const char *last = NULL, *k;
    json_t *v;
    json_object_foreach(json_array_get(mfs(n), 1), k, v) last = k;
    assert_string_equal(last, "subresource");
    json_decref(n);
    json_decref(o);
}

/* More than ten Update entries: the oldest merge into ancient-changes. */
static void test_update_cap(void **state)
{
    fx_t *f = *state;
    json_t *o = update_ok(f, f->cm, NULL, "{\"metadata\":{\"name\":\"c\"},\"data\":{\"m0\":\"x\"}}",
                          "m0", "2024-05-01T10:00:00Z");
    for (int i = 1; i <= 10; i++) {
        char name[8], now[32];
        snprintf(name, sizeof name, "m%d", i);
        snprintf(now, sizeof now, "2024-05-01T10:00:%02dZ", i);
        json_t *n = json_deep_copy(o);
        json_object_set_new(json_object_get(n, "data"), name, json_string("x"));
        api_manager_t m = mgr(name, now);
        assert_int_equal(api_managed_update(f->s, f->cm, o, n, &m), 0);
        json_decref(o);
        o = n;
    }
    assert_int_equal(json_array_size(mfs(o)), 10);
    assert_json(json_array_get(mfs(o), 0),
                "{\"manager\":\"ancient-changes\",\"operation\":\"Update\",\"apiVersion\":"
                "\"apps/v1\",\"time\":\"2024-05-01T10:00:01Z\",\"fieldsType\":\"FieldsV1\","
                "\"fieldsV1\":{\"f:data\":{\".\":{},\"f:m0\":{},\"f:m1\":{}}}}");
    assert_string_equal(json_string_value(json_object_get(json_array_get(mfs(o), 1), "manager")),
                        "m2");
    json_decref(o);
}

/* Schemaless fields are deduced (maps granular, lists atomic); atomic
 * maps are leaves; an object field holding {} is owned. */
static void test_deduced_and_atomic(void **state)
{
    fx_t *f = *state;
    json_t *a = apply_ok(f, f->pod, NULL,
                         "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},"
                         "\"spec\":{\"x-extra\":{\"a\":{\"b\":1},\"l\":[1,2]},\"nodeSelector\":"
                         "{\"disk\":\"ssd\"},\"containers\":[{\"name\":\"c\",\"image\":\"i\","
                         "\"securityContext\":{}}]}}",
                         "m", T1, 0);
    assert_text(fields(a, "m", "Apply"),
                "{\"f:spec\":{\"f:containers\":{\"k:{\\\"name\\\":\\\"c\\\"}\":{\".\":{},"
                "\"f:image\":{},\"f:name\":{},\"f:securityContext\":{}}},\"f:nodeSelector\":{},\"f:"
                "x-extra\":{\".\":{},"
                "\"f:a\":{\".\":{},\"f:b\":{}},\"f:l\":{}}}}");
    json_decref(a);
    /* No schema at all: every field deduced. */
    json_t *t = apply_ok(f, NULL, NULL,
                         "{\"apiVersion\":\"x.io/v1\",\"kind\":\"Thing\",\"metadata\":{\"name\":"
                         "\"t\",\"labels\":{\"a\":\"b\"}},\"spec\":{\"size\":1,\"list\":[1,2]}}",
                         "m", T1, 0);
    assert_text(fields(t, "m", "Apply"), "{\"f:metadata\":{\"f:labels\":{\".\":{},\"f:a\":{}}},"
                                         "\"f:spec\":{\".\":{},\"f:list\":{},\"f:size\":{}}}");
    json_decref(t);
    /* Service ports are keyed by port and protocol (defaulted to TCP). */
    json_t *s =
        apply_ok(f, f->svc, NULL,
                 "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"s\"},"
                 "\"spec\":{\"selector\":{\"app\":\"a\"},\"ports\":[{\"port\":443,"
                 "\"protocol\":\"UDP\"},{\"port\":80,\"targetPort\":8080}]}}",
                 "m", T1, 0);
    assert_text(fields(s, "m", "Apply"),
                "{\"f:spec\":{\"f:ports\":{\"k:{\\\"port\\\":80,\\\"protocol\\\":\\\"TCP\\\"}\":"
                "{\".\":{},\"f:port\":{},\"f:targetPort\":{}},\"k:{\\\"port\\\":443,"
                "\\\"protocol\\\":\\\"UDP\\\"}\":{\".\":{},\"f:port\":{},\"f:protocol\":{}}},"
                "\"f:selector\":{}}}");
    json_decref(s);
}

/* Reset fields (status on the main resource) are neither tracked nor a
 * conflict; they are merged like the rest, for the caller to reset. */
static void test_apply_reset_fields(void **state)
{
    fx_t *f = *state;
    json_t *a =
        apply_ok(f, f->dep, NULL,
                 "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":"
                 "{\"name\":\"web\"},\"spec\":{\"replicas\":1},\"status\":{\"replicas\":7}}",
                 "m", T1, 0);
    assert_json(fields(a, "m", "Apply"), "{\"f:spec\":{\"f:replicas\":{}}}");
    assert_json(json_object_get(a, "status"), "{\"replicas\":7}");
    json_decref(a);
}

/* Stored lists may repeat a key (Kubernetes allows it in live objects): the
 * element is owned as a whole; an apply that names the key replaces the
 * repeats, one that does not keeps them. */
static void test_duplicate_keys_in_live(void **state)
{
    fx_t *f = *state;
    const char *pod = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},"
                      "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"env\":"
                      "[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"A\",\"value\":\"2\"},"
                      "{\"name\":\"B\",\"value\":\"3\"}]}]}}";
    json_t *o = update_ok(f, f->pod, NULL, pod, "creator", T1);
    assert_text(fields(o, "creator", "Update"),
                "{\"f:spec\":{\"f:containers\":{" KN_C ":{\".\":{},\"f:env\":{\".\":{}," KN_A
                ":{}," KN_B ":{\".\":{},\"f:name\":{},\"f:value\":{}}},\"f:image\":{},"
                "\"f:name\":{}}}}}");
    /* The repeats change together: one modified path for the element. */
    json_t *n = json_deep_copy(o);
    json_t *env = json_object_get(
        json_array_get(json_object_get(json_object_get(n, "spec"), "containers"), 0), "env");
    json_object_set_new(json_array_get(env, 1), "value", json_string("9"));
    api_manager_t m = mgr("editor", T2);
    assert_int_equal(api_managed_update(f->s, f->pod, o, n, &m), 0);
    assert_text(fields(n, "editor", "Update"),
                "{\"f:spec\":{\"f:containers\":{" KN_C ":{\"f:env\":{" KN_A ":{}}}}}}");
    json_decref(n);
    /* An apply elsewhere keeps the repeats; one naming the key replaces them. */
    json_t *a = apply_ok(f, f->pod, o,
                         "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
                         "\"labels\":{\"x\":\"y\"}}}",
                         "m", T2, 0);
    assert_json(
        json_object_get(
            json_array_get(json_object_get(json_object_get(a, "spec"), "containers"), 0), "env"),
        "[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"A\",\"value\":\"2\"},"
        "{\"name\":\"B\",\"value\":\"3\"}]");
    json_t *b = apply_ok(f, f->pod, o,
                         "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},"
                         "\"spec\":{\"containers\":[{\"name\":\"c\",\"env\":[{\"name\":\"A\","
                         "\"value\":\"5\"}]}]}}",
                         "m", T2, 1);
    assert_json(
        json_object_get(
            json_array_get(json_object_get(json_object_get(b, "spec"), "containers"), 0), "env"),
        "[{\"name\":\"A\",\"value\":\"5\"},{\"name\":\"B\",\"value\":\"3\"}]");
    json_decref(a);
    json_decref(b);
    json_decref(o);
}

/* --- out of memory ---------------------------------------------------- */

/* jansson's allocator, failing its Nth call (tests only: the hook has no
 * context argument). */
static long fail_at = -1, alloc_calls;

static void *failing_malloc(size_t n)
{
    if (alloc_calls++ == fail_at) return NULL;
    return malloc(n);
}

typedef int (*op_fn)(const fx_t *f, json_t **keep);

static int op_apply_force(const fx_t *f, json_t **keep)
{
    json_t *live = keep[0], *cfg = keep[1], *out = NULL, *conf = NULL;
    api_manager_t m = mgr("B", T3);
    char err[256];
    int rc = api_managed_apply(f->s, f->dep, live, cfg, &m, 1, &out, &conf, err, sizeof err);
    if (rc && rc != KP_ENOMEM) fprintf(stderr, "DBG fail_at=%ld rc=%d err=%s\n", fail_at, rc, err);
    assert_true(rc || out);
    assert_null(conf);
    if (rc) assert_null(out);
    json_decref(out);
    return rc;
}

static int op_apply_conflict(const fx_t *f, json_t **keep)
{
    json_t *live = keep[0], *cfg = keep[1], *out = NULL, *conf = NULL;
    api_manager_t m = mgr("kubectl", T3);
    char err[256];
    int rc = api_managed_apply(f->s, f->dep, live, cfg, &m, 0, &out, &conf, err, sizeof err);
    assert_null(out);
    if (rc == KP_ECONFLICT)
        assert_non_null(conf);
    else
        assert_null(conf);
    json_decref(conf);
    return rc == KP_ECONFLICT ? 0 : rc;
}

static int op_update(const fx_t *f, json_t **keep)
{
    json_t *o = json_deep_copy(keep[1]);
    if (!o) return KP_ENOMEM;
    api_manager_t m = mgr("editor", T3);
    int rc = api_managed_update(f->s, f->dep, keep[0], o, &m);
    json_decref(o);
    return rc;
}

static void sweep(const fx_t *f, op_fn op, json_t **keep)
{
    fail_at = -1, alloc_calls = 0;
    json_set_alloc_funcs(failing_malloc, free);
    assert_int_equal(op(f, keep), 0);
    long total = alloc_calls, failed = 0;
    for (long n = 0; n < total; n++) { /* every allocation, one at a time */
        fail_at = n, alloc_calls = 0;
        int rc = op(f, keep);
        fail_at = -1;
        if (rc) {
            assert_int_equal(rc, KP_ENOMEM);
            failed++;
        }
    }
    json_set_alloc_funcs(malloc, free);
    assert_true(failed > 0);
}

static void test_out_of_memory(void **state)
{
    fx_t *f = *state;
    json_t *a = apply_ok(f, f->dep, NULL, CFG_A1, "A", T1, 0);
    json_t *keep[2] = {a, js("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":"
                             "{\"name\":\"web\",\"labels\":{\"app\":\"x\"}},\"spec\":"
                             "{\"replicas\":5}}")};
    sweep(f, op_apply_force, keep);
    json_t *b = apply_ok(f, f->dep, a, CFG_A2, "A", T2, 0);
    json_decref(keep[0]);
    keep[0] = b;
    sweep(f, op_apply_force, keep);
    json_decref(keep[1]);

    char obj[2048];
    snprintf(obj, sizeof obj, OBJ_CSA("%s"),
             ",\"annotations\":{\"kubectl.kubernetes.io/last-applied-configuration\":"
             "\"{\\\"apiVersion\\\":\\\"apps/v1\\\",\\\"spec\\\":{\\\"replicas\\\":1}}\"}");
    json_decref(keep[0]);
    keep[0] = update_ok(f, f->dep, NULL, obj, "kubectl-client-side-apply", T1);
    keep[1] = js("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":"
                 "\"web\"},\"spec\":{\"replicas\":2,\"template\":{\"spec\":{\"containers\":"
                 "[{\"name\":\"nginx\",\"image\":\"nginx:2\"}]}}}}");
    sweep(f, op_apply_conflict, keep);
    json_decref(keep[1]);

    keep[1] = json_deep_copy(keep[0]);
    json_object_set_new(json_object_get(keep[1], "spec"), "replicas", json_integer(3));
    json_object_set_new(json_object_get(keep[1], "metadata"), "labels", js("{\"a\":\"b\"}"));
    sweep(f, op_update, keep);
    json_decref(keep[0]);
    json_decref(keep[1]);
}

/* --- the pieces ------------------------------------------------------- */

static void test_path_display_and_keys(void **state)
{
    (void)state;
    const char *pev[] = {"f:spec", "f:ports", "k:{\"port\":80,\"protocol\":\"TCP\"}", "f:name"};
    buf_t b;
    buf_init(&b, 1 << 20);
    assert_int_equal(api__path_display(pev, 4, &b), 0);
    assert_string_equal(b.p, ".spec.ports[port=80,protocol=\"TCP\"].name");
    const char *pev2[] = {"f:metadata", "f:finalizers", "v:\"a\\\"b\"", "i:3", "v:1.5", "v:true"};
    buf_reset(&b);
    assert_int_equal(api__path_display(pev2, 6, &b), 0);
    assert_string_equal(b.p, ".metadata.finalizers[=\"a\\\"b\"][3][=1.5][=true]");

    /* Keys: sorted, compact, HTML-escaped; reals print as Go prints them. */
    json_t *k = js("{\"protocol\":\"TCP\",\"containerPort\":80.0,\"name\":\"a<b>&c\"}");
    assert_int_equal(api__pe_key(k, &b), 0);
    assert_string_equal(b.p, "k:{\"containerPort\":80,\"name\":\"a\\u003cb\\u003e\\u0026c\","
                             "\"protocol\":\"TCP\"}");
    json_decref(k);
    struct {
        const char *in, *out;
    } vals[] = {{"0.5", "v:0.5"},
                {"1e21", "v:1e+21"},
                {"1e-7", "v:1e-7"},
                {"123456789.0", "v:123456789"},
                {"-0.000001", "v:-0.000001"},
                {"\"\\n\\t\\u0001\"", "v:\"\\n\\t\\u0001\""}};
    for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) {
        json_t *v = js(vals[i].in);
        assert_int_equal(api__pe_value(v, &b), 0);
        assert_string_equal(b.p, vals[i].out);
        json_decref(v);
    }
    buf_free(&b);
}

static void test_set_decode_encode(void **state)
{
    (void)state;
    /* Non-canonical keys are rewritten; order is Kubernetes'. */
    json_t *in = js("{\"v:2\":{},\"f:b\":{},\"k:{\\\"protocol\\\":\\\"TCP\\\",\\\"port\\\":80.0}\":"
                    "{\"f:x\":{},\".\":{}},\"f:a\":{\"f:c\":{}},\"i:1\":{},\"v:\\\"s\\\"\":{},"
                    "\"v:1\":{},\"k:{\\\"port\\\":8}\":{}}");
    json_t *set = NULL;
    assert_int_equal(api__mset_decode(in, &set), 0);
    json_t *out = api__mset_encode(set);
    assert_text(out, "{\"f:a\":{\"f:c\":{}},\"f:b\":{},\"k:{\\\"port\\\":8}\":{},"
                     "\"k:{\\\"port\\\":80,\\\"protocol\\\":\\\"TCP\\\"}\":{\".\":{},\"f:x\":{}},"
                     "\"v:1\":{},\"v:2\":{},\"v:\\\"s\\\"\":{},\"i:1\":{}}");
    assert_int_equal(api__mset_count(set), 9);
    json_decref(out);
    json_decref(set);
    json_decref(in);
    const char *bad[] = {"{\"x:1\":{}}", "{\"f:a\":1}",  "{\"k:[1]\":{}}",
                         "{\"i:x\":{}}", "{\"v:{\":{}}", "[]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        in = js(bad[i]);
        set = (json_t *)1;
        assert_int_equal(api__mset_decode(in, &set), KP_EINVAL);
        assert_null(set);
        json_decref(in);
    }
}

static void test_set_ops(void **state)
{
    (void)state;
    json_t *a = NULL, *b = NULL, *in;
    in = js("{\"f:a\":{\".\":{},\"f:b\":{}},\"f:c\":{},\"f:d\":{\"f:e\":{}}}");
    assert_int_equal(api__mset_decode(in, &a), 0);
    json_decref(in);
    in = js("{\"f:a\":{},\"f:d\":{}}");
    assert_int_equal(api__mset_decode(in, &b), 0);
    json_decref(in);
    /* Difference keeps what lies below a removed member; the recursive one does not. */
    json_t *d = json_deep_copy(a);
    api__mset_diff(d, b);
    json_t *e = api__mset_encode(d);
    assert_text(e, "{\"f:a\":{\"f:b\":{}},\"f:c\":{},\"f:d\":{\"f:e\":{}}}");
    json_decref(e);
    json_decref(d);
    d = json_deep_copy(a);
    api__mset_rdiff(d, b);
    e = api__mset_encode(d);
    assert_text(e, "{\"f:c\":{}}");
    json_decref(e);
    json_decref(d);
    d = api__mset_intersect(a, b);
    e = api__mset_encode(d);
    assert_text(e, "{\"f:a\":{}}");
    json_decref(e);
    const char *p1[] = {"f:a"}, *p2[] = {"f:a", "f:b"}, *p3[] = {"f:d"};
    assert_true(api__mset_has(a, p1, 1));
    assert_true(api__mset_has(a, p2, 2));
    assert_false(api__mset_has(a, p3, 1));
    assert_int_equal(api__mset_union(d, a), 0);
    assert_true(json_equal(d, a));
    json_decref(d);
    json_decref(a);
    json_decref(b);
}

/* Merge order of keyed lists (merge.go): live [a,b,c] + config [c,a]. */
static void test_merge_order(void **state)
{
    fx_t *f = *state;
    api__mwalk_t w;
    memset(&w, 0, sizeof w);
    w.s = f->s;
    json_t *l = js("{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"1\"},{\"name\":\"b\"},"
                   "{\"name\":\"c\"}]}}");
    json_t *r = js("{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"3\"},{\"name\":\"a\","
                   "\"image\":\"2\"}]}}");
    json_t *out = NULL;
    assert_int_equal(api__mw_merge(&w, l, r, f->pod, &out), 0);
    assert_text(out, "{\"spec\":{\"containers\":[{\"name\":\"b\"},{\"name\":\"c\",\"image\":\"3\"},"
                     "{\"name\":\"a\",\"image\":\"2\"}]}}");
    json_decref(out);
    json_decref(r);
    /* A new element goes where the config puts it among the shared ones. */
    r = js("{\"spec\":{\"containers\":[{\"name\":\"x\"},{\"name\":\"b\"}]}}");
    assert_int_equal(api__mw_merge(&w, l, r, f->pod, &out), 0);
    assert_text(out, "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"1\"},{\"name\":\"x\"},"
                     "{\"name\":\"b\"},{\"name\":\"c\"}]}}");
    json_decref(out);
    json_decref(r);
    json_decref(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_apply_create_and_prune),
        cmocka_unit_test(test_apply_conflict_and_force),
        cmocka_unit_test(test_apply_shared_value),
        cmocka_unit_test(test_apply_conflict_with_updater),
        cmocka_unit_test(test_apply_last_applied_upgrade),
        cmocka_unit_test(test_apply_conflict_two_managers),
        cmocka_unit_test(test_apply_keyed_list),
        cmocka_unit_test(test_apply_prune_spares_owned),
        cmocka_unit_test(test_update_create_and_change),
        cmocka_unit_test(test_finalizers_set),
        cmocka_unit_test(test_update_incoming_managed_fields),
        cmocka_unit_test(test_apply_force_versions_subresources),
        cmocka_unit_test(test_apply_before_first_apply),
        cmocka_unit_test(test_apply_bad_config),
        cmocka_unit_test(test_update_bad_object),
        cmocka_unit_test(test_update_status_subresource),
        cmocka_unit_test(test_update_cap),
        cmocka_unit_test(test_deduced_and_atomic),
        cmocka_unit_test(test_apply_reset_fields),
        cmocka_unit_test(test_duplicate_keys_in_live),
        cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_path_display_and_keys),
        cmocka_unit_test(test_set_decode_encode),
        cmocka_unit_test(test_set_ops),
        cmocka_unit_test(test_merge_order),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
