/*
 * test_deployment.c -- the pure logic of the Deployment controller
 * (src/controllers/deployment.c, deployment_rolling.c through
 * deployment_int.h): pod-template-hash and its alphabet, template equality,
 * maxSurge/maxUnavailable rounding, rolling update steps (simulated to the
 * end under the strategy's bounds), Recreate steps, proportional scaling,
 * conditions, revisions across a rollback, history cleanup.
 *
 * Nothing here talks to an API server: the simulations play the ReplicaSet
 * controller's part by moving availableReplicas between steps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/deployment_int.h"
#include "lib/err.h"

#define NOW 1700000000 /* 2023-11-14T22:13:20Z */

/* ---- helpers ---- */

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    if (!v) fail_msg("bad test JSON: %s: %s", e.text, text);
    return v;
}

/* A RollingUpdate Deployment with these replicas and surge/unavailable
 * values (JSON fragments: "\"25%\"" or "1"). */
static json_t *deployment(int replicas, const char *surge, const char *unav)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"web\",\"namespace\":\"default\",\"generation\":1},"
             "\"spec\":{\"replicas\":%d,\"revisionHistoryLimit\":10,"
             "\"progressDeadlineSeconds\":600,"
             "\"strategy\":{\"type\":\"RollingUpdate\","
             "\"rollingUpdate\":{\"maxSurge\":%s,\"maxUnavailable\":%s}}},"
             "\"status\":{}}",
             replicas, surge, unav);
    return parse(text);
}

static deploy_params_t params(int replicas, const char *surge, const char *unav)
{
    json_t *d = deployment(replicas, surge, unav);
    deploy_params_t p;
    assert_int_equal(deploy__params(d, &p), 0);
    json_decref(d);
    return p;
}

static deploy_rs_t rs_make(const char *name, int64_t created, int32_t spec, int32_t available)
{
    deploy_rs_t r;
    memset(&r, 0, sizeof r);
    r.name = name;
    r.created = created;
    r.spec = r.target = spec;
    r.replicas = r.ready = r.available = available;
    r.desired = r.max = -1;
    return r;
}

static int64_t total_target(const deploy_rs_t *rs, size_t n)
{
    int64_t t = 0;
    for (size_t i = 0; i < n; i++)
        t += rs[i].target;
    return t;
}

static int64_t total_available(const deploy_rs_t *rs, size_t n)
{
    int64_t t = 0;
    for (size_t i = 0; i < n; i++)
        t += rs[i].available;
    return t;
}

/* What deploy__apply and the ReplicaSet controller would do: spec takes the
 * target; a scale-down removes pods at once (unavailable ones first). */
static void write_targets(deploy_rs_t *rs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        rs[i].spec = rs[i].target;
        if (rs[i].available > rs[i].spec) rs[i].available = rs[i].spec;
        rs[i].replicas = rs[i].spec;
    }
}

/* Every pod asked for becomes available. */
static void pods_ready(deploy_rs_t *rs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        rs[i].available = rs[i].ready = rs[i].spec;
}

/* ---- hash, alphabet, templates ---- */

static void test_safe_encode(void **state)
{
    (void)state;
    char out[DEPLOY_HASH_MAX];
    deploy__safe_encode("0123456789", out, sizeof out);
    assert_string_equal(out, "456789bcdf");
    deploy__safe_encode("1568151163", out, sizeof out);
    assert_string_equal(out, "59bd5955b7");
    deploy__safe_encode("12345", out, 3); /* truncates, terminated */
    assert_string_equal(out, "56");
}

static const char *tmpl_web =
    "{\"metadata\":{\"labels\":{\"app\":\"web\"}},"
    "\"spec\":{\"containers\":[{\"name\":\"web\",\"image\":\"nginx:1.25\"}]}}";

static void test_hash_stable(void **state)
{
    (void)state;
    json_t *a = parse(tmpl_web);
    /* The same template with its keys in another order. */
    json_t *b = parse("{\"spec\":{\"containers\":[{\"image\":\"nginx:1.25\",\"name\":\"web\"}]},"
                      "\"metadata\":{\"labels\":{\"app\":\"web\"}}}");
    char h1[DEPLOY_HASH_MAX], h2[DEPLOY_HASH_MAX], h3[DEPLOY_HASH_MAX];
    assert_int_equal(deploy__hash(a, -1, h1), 0);
    assert_int_equal(deploy__hash(b, -1, h2), 0);
    /* FNV-32a of the compact sorted JSON is 1568151163; the names of
     * ReplicaSets made by older builds depend on this never changing. */
    assert_string_equal(h1, "59bd5955b7");
    assert_string_equal(h1, h2);
    for (const char *c = h1; *c; c++)
        assert_non_null(strchr("bcdfghjklmnpqrstvwxz2456789", *c));

    /* Another image, another hash. */
    json_t *img = json_array_get(json_object_get(json_object_get(a, "spec"), "containers"), 0);
    json_object_set_new(img, "image", json_string("nginx:1.26"));
    assert_int_equal(deploy__hash(a, -1, h3), 0);
    assert_string_not_equal(h1, h3);
    json_decref(a);
    json_decref(b);
}

static void test_hash_collisions(void **state)
{
    (void)state;
    json_t *t = parse(tmpl_web);
    char none[DEPLOY_HASH_MAX], zero[DEPLOY_HASH_MAX], one[DEPLOY_HASH_MAX], again[DEPLOY_HASH_MAX];
    assert_int_equal(deploy__hash(t, -1, none), 0);
    assert_int_equal(deploy__hash(t, 0, zero), 0);
    assert_int_equal(deploy__hash(t, 1, one), 0);
    assert_int_equal(deploy__hash(t, 1, again), 0);
    /* collisionCount 0 and unset differ (8 bytes are hashed in), and each
     * bump gives a new name. */
    assert_string_equal(zero, "78fbd7fdff");
    assert_string_equal(one, "5f745cc8bb");
    assert_string_not_equal(none, zero);
    assert_string_not_equal(zero, one);
    assert_string_equal(one, again);
    json_decref(t);
}

static void test_template_equal(void **state)
{
    (void)state;
    json_t *d = parse(tmpl_web);
    json_t *rs = parse("{\"metadata\":{\"creationTimestamp\":null,"
                       "\"labels\":{\"app\":\"web\",\"pod-template-hash\":\"59bd5955b7\"}},"
                       "\"spec\":{\"containers\":[{\"name\":\"web\",\"image\":\"nginx:1.25\"}]}}");
    assert_true(deploy__template_equal(d, rs));
    assert_true(deploy__template_equal(rs, d));
    json_t *other = parse("{\"metadata\":{\"labels\":{\"app\":\"web\"}},"
                          "\"spec\":{\"containers\":[{\"name\":\"web\",\"image\":\"nginx:2\"}]}}");
    assert_false(deploy__template_equal(d, other));
    /* An annotation (kubectl rollout restart) makes a new template. */
    json_t *restarted = json_deep_copy(d);
    json_object_set_new(json_object_get(restarted, "metadata"), "annotations",
                        json_pack("{s:s}", "kubectl.kubernetes.io/restartedAt", "now"));
    assert_false(deploy__template_equal(d, restarted));
    /* Empty maps are absent ones. */
    json_t *bare = parse("{\"spec\":{}}"),
           *empty = parse("{\"metadata\":{\"labels\":{}},\"spec\":{}}");
    assert_true(deploy__template_equal(bare, empty));

    /* The new RS is the oldest with an equal template. */
    deploy_rs_t set[3] = {rs_make("web-a", 10, 0, 0), rs_make("web-b", 20, 3, 3),
                          rs_make("web-c", 30, 0, 0)};
    set[0].obj = json_pack("{s:{s:O}}", "spec", "template", other);
    set[1].obj = json_pack("{s:{s:O}}", "spec", "template", rs);
    set[2].obj = json_pack("{s:{s:O}}", "spec", "template", d);
    assert_int_equal(deploy__find_new(d, set, 3), 1);
    assert_int_equal(deploy__find_new(restarted, set, 3), -1);
    for (int i = 0; i < 3; i++)
        json_decref(set[i].obj);
    json_decref(d);
    json_decref(rs);
    json_decref(other);
    json_decref(restarted);
    json_decref(bare);
    json_decref(empty);
}

/* ---- rounding ---- */

static void test_rounding(void **state)
{
    (void)state;
    deploy_params_t p = params(10, "\"25%\"", "\"25%\"");
    assert_int_equal(p.max_surge, 3);       /* 2.5 up */
    assert_int_equal(p.max_unavailable, 2); /* 2.5 down */

    p = params(3, "\"25%\"", "\"25%\"");
    assert_int_equal(p.max_surge, 1);
    assert_int_equal(p.max_unavailable, 0);

    p = params(10, "0", "0"); /* both 0: unavailable 1 */
    assert_int_equal(p.max_surge, 0);
    assert_int_equal(p.max_unavailable, 1);
    p = params(3, "\"0%\"", "\"10%\"");
    assert_int_equal(p.max_unavailable, 1);

    p = params(3, "2", "5"); /* unavailable capped at replicas */
    assert_int_equal(p.max_surge, 2);
    assert_int_equal(p.max_unavailable, 3);
    p = params(0, "\"25%\"", "\"25%\""); /* nothing to keep available */
    assert_int_equal(p.max_surge, 0);
    assert_int_equal(p.max_unavailable, 0);

    int32_t v;
    json_t *x = json_string("100%");
    assert_int_equal(deploy__int_or_percent(x, 7, 1, &v), 0);
    assert_int_equal(v, 7);
    json_decref(x);
    x = json_string("33%");
    assert_int_equal(deploy__int_or_percent(x, 10, 1, &v), 0);
    assert_int_equal(v, 4);
    assert_int_equal(deploy__int_or_percent(x, 10, 0, &v), 0);
    assert_int_equal(v, 3);
    json_decref(x);
    const char *bad[] = {"\"abc\"", "\"-5%\"", "\"5\"", "\"%\"", "-1", "true"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        x = parse(bad[i]);
        assert_int_equal(deploy__int_or_percent(x, 10, 1, &v), KP_EINVAL);
        json_decref(x);
    }
    json_t *d = deployment(10, "\"x%\"", "1");
    assert_int_equal(deploy__params(d, &p), KP_EINVAL);
    json_decref(d);

    d = parse("{\"spec\":{\"replicas\":4,\"strategy\":{\"type\":\"Recreate\"}}}");
    assert_int_equal(deploy__params(d, &p), 0);
    assert_true(p.recreate);
    assert_int_equal(p.max_surge, 0);
    assert_int_equal(p.max_unavailable, 0);
    assert_int_equal(p.history_limit, -1);
    assert_int_equal(p.deadline_s, -1);
    json_decref(d);
}

/* ---- rolling update ---- */

/* Roll from `replicas` old to `replicas` new, checking the bounds after
 * every step; returns the steps taken. trace gets "new/old" per step. */
static int roll(deploy_params_t p, char *trace, size_t tn)
{
    deploy_rs_t rs[2] = {rs_make("old", 1, p.replicas, p.replicas), rs_make("new", 2, 0, 0)};
    size_t off = 0;
    trace[0] = '\0';
    /* The new RS is created with its first size. */
    int32_t first = deploy__new_replicas(&p, rs, 1, -1);
    rs[1].spec = rs[1].target = first;
    int steps = 0;
    for (;;) {
        off += (size_t)snprintf(trace + off, tn - off, "%d/%d ", rs[1].spec, rs[0].spec);
        if (rs[1].spec == p.replicas && rs[0].spec == 0) break;
        assert_true(steps < 100);
        pods_ready(rs, 2);
        /* One sync: the new RS up, else the old down; never neither. */
        int up = deploy__reconcile_new(&p, rs, 2, 1);
        int32_t down = up ? 0 : deploy__reconcile_old(&p, rs, 2, 1);
        assert_true(up || down > 0);
        write_targets(rs, 2);
        steps++;
        assert_true(total_target(rs, 2) <= (int64_t)p.replicas + p.max_surge);
        assert_true(total_available(rs, 2) >= (int64_t)p.replicas - p.max_unavailable);
        /* A second sync before any pod moved: surge and unavailability
         * budgets still hold whatever it does. */
        deploy_rs_t again[2] = {rs[0], rs[1]};
        if (!deploy__reconcile_new(&p, again, 2, 1)) deploy__reconcile_old(&p, again, 2, 1);
        write_targets(again, 2);
        assert_true(total_target(again, 2) <= (int64_t)p.replicas + p.max_surge);
        assert_true(total_available(again, 2) >= (int64_t)p.replicas - p.max_unavailable);
    }
    return steps;
}

static void test_rolling_surge1_unavailable0(void **state)
{
    (void)state;
    char trace[512];
    int steps = roll(params(3, "1", "0"), trace, sizeof trace);
    /* new up 1, old down 1, ... never 4 pods asked for beyond 3+1, never
     * fewer than 3 available. */
    assert_string_equal(trace, "1/3 1/2 2/2 2/1 3/1 3/0 ");
    assert_int_equal(steps, 5);
}

static void test_rolling_percent(void **state)
{
    (void)state;
    char trace[512];
    /* 25%/25% of 3 resolve to surge 1, unavailable 0: the same walk. */
    roll(params(3, "\"25%\"", "\"25%\""), trace, sizeof trace);
    assert_string_equal(trace, "1/3 1/2 2/2 2/1 3/1 3/0 ");
    /* Of 10: surge 3, unavailable 2: new +3, old -5 (3 surge + 2), ... */
    roll(params(10, "\"25%\"", "\"25%\""), trace, sizeof trace);
    assert_string_equal(trace, "3/10 3/5 8/5 8/0 10/0 ");
    /* Surge 0: old must go first. */
    roll(params(3, "0", "1"), trace, sizeof trace);
    assert_string_equal(trace, "0/3 0/2 1/2 1/1 2/1 2/0 3/0 ");
}

static void test_rolling_unhealthy_first(void **state)
{
    (void)state;
    deploy_params_t p = params(4, "1", "1");
    /* Two old RSs: the oldest has 2 pods that never became available. */
    deploy_rs_t rs[3] = {rs_make("v1", 1, 2, 0), rs_make("v2", 2, 2, 2), rs_make("v3", 3, 1, 0)};
    rs[0].available = 0;
    /* total 5 = 4+1: no room to grow; min available 3; new unavailable 1:
     * may remove 5 - 3 - 1 = 1... */
    assert_false(deploy__reconcile_new(&p, rs, 3, 2));
    assert_int_equal(deploy__reconcile_old(&p, rs, 3, 2), 1);
    /* ...and takes it from the unhealthy replicas, not from v2. */
    assert_int_equal(rs[0].target, 1);
    assert_int_equal(rs[1].target, 2);
    /* New pods not yet available: nothing more may go. */
    write_targets(rs, 3);
    assert_int_equal(deploy__reconcile_old(&p, rs, 3, 2), 0);
}

static void test_rolling_new_too_big(void **state)
{
    (void)state;
    deploy_params_t p = params(2, "1", "0");
    deploy_rs_t rs[1] = {rs_make("new", 1, 5, 5)};
    assert_true(deploy__reconcile_new(&p, rs, 1, 0));
    assert_int_equal(rs[0].target, 2);
}

static void test_rolling_terminating_hold_surge(void **state)
{
    (void)state;
    /* TerminationComplete: a terminating pod still holds its surge slot. */
    json_t *dc = deployment(3, "1", "0");
    json_object_set_new(json_object_get(dc, "spec"), "podReplacementPolicy",
                        json_string("TerminationComplete"));
    deploy_params_t p;
    assert_int_equal(deploy__params(dc, &p), 0);
    json_decref(dc);
    assert_true(p.count_terminating);
    /* Old scaled 3 -> 2, its third pod still terminating: 2 + 1 + 1 pods
     * run, so the new RS waits... */
    deploy_rs_t rs[2] = {rs_make("old", 1, 2, 2), rs_make("new", 2, 1, 1)};
    rs[0].terminating = 1;
    assert_false(deploy__reconcile_new(&p, rs, 2, 1));
    /* ...until the pod is gone. */
    rs[0].terminating = 0;
    assert_true(deploy__reconcile_new(&p, rs, 2, 1));
    assert_int_equal(rs[1].target, 2);
    /* Kubernetes' default (TerminationStarted) does not wait. */
    json_t *d = deployment(3, "1", "0");
    json_object_set_new(json_object_get(d, "spec"), "podReplacementPolicy",
                        json_string("TerminationStarted"));
    assert_int_equal(deploy__params(d, &p), 0);
    assert_false(p.count_terminating);
    json_decref(d);
    deploy_rs_t again[2] = {rs_make("old", 1, 2, 2), rs_make("new", 2, 1, 1)};
    again[0].terminating = 1;
    assert_true(deploy__reconcile_new(&p, again, 2, 1));
}

/* ---- recreate ---- */

static void test_recreate(void **state)
{
    (void)state;
    json_t *d = parse("{\"spec\":{\"replicas\":3,\"strategy\":{\"type\":\"Recreate\"}}}");
    deploy_params_t p;
    assert_int_equal(deploy__params(d, &p), 0);
    json_decref(d);
    deploy_rs_t rs[3] = {rs_make("v1", 1, 1, 1), rs_make("v2", 2, 2, 2), rs_make("v3", 3, 0, 0)};
    /* Step 1: every old RS to 0 at once, the new one untouched. */
    assert_true(deploy__recreate_down(&p, rs, 3, 2));
    assert_int_equal(rs[0].target, 0);
    assert_int_equal(rs[1].target, 0);
    assert_int_equal(rs[2].target, 0);
    write_targets(rs, 3);
    /* Step 2 (old pods gone): nothing left to scale down. */
    assert_false(deploy__recreate_down(&p, rs, 3, 2));
    /* Step 3: the new RS takes every replica at once, no surge. */
    assert_int_equal(deploy__new_replicas(&p, rs, 3, 2), 3);
    assert_int_equal(deploy__new_replicas(&p, rs, 2, -1), 3);
    /* A scale while two RSs run is left to the recreate steps. */
    deploy_rs_t two[2] = {rs_make("v1", 1, 3, 3), rs_make("v2", 2, 3, 0)};
    p.replicas = 5;
    deploy__scale(&p, two, 2, 1);
    assert_int_equal(two[0].target, 3);
    assert_int_equal(two[1].target, 3);
}

/* ---- scaling ---- */

static void test_proportional_10_to_15(void **state)
{
    (void)state;
    /* Mid-rollout at 10 replicas, surge 3, unavailable 2: old 8, new 5
     * (13 = 10 + 3), both annotated as sized for 10 (max 13). */
    deploy_rs_t rs[2] = {rs_make("old", 1, 8, 8), rs_make("new", 2, 5, 0)};
    for (int i = 0; i < 2; i++) {
        rs[i].desired = 10;
        rs[i].max = 13;
    }
    deploy_params_t p = params(15, "3", "2");
    assert_true(deploy__is_scaling_event(&p, rs, 2));
    deploy__scale(&p, rs, 2, 1);
    /* 18 - 13 = 5 more: 8*18/13 = 11.1 -> +3 to old, the rest (+2) to new. */
    assert_int_equal(rs[0].target, 11);
    assert_int_equal(rs[1].target, 7);
    assert_true(rs[0].touch && rs[1].touch);

    /* With the default 25%/25%: surge 4 at 15, room 19: old 8*19/13 = 11.7
     * -> 12, new 5*19/13 = 7.3 -> 7. */
    deploy_rs_t pc[2] = {rs_make("old", 1, 8, 8), rs_make("new", 2, 5, 0)};
    for (int i = 0; i < 2; i++) {
        pc[i].desired = 10;
        pc[i].max = 13;
    }
    p = params(15, "\"25%\"", "\"25%\"");
    deploy__scale(&p, pc, 2, 1);
    assert_int_equal(pc[0].target, 12);
    assert_int_equal(pc[1].target, 7);
    assert_int_equal(total_target(pc, 2), 15 + 4);

    /* And back down to 5 (surge 2 at 25%): 7 replicas in all, older RS
     * first on ties; the sizes never go below 0. */
    for (int i = 0; i < 2; i++) {
        pc[i].spec = pc[i].target;
        pc[i].desired = 15;
        pc[i].max = 19;
    }
    p = params(5, "\"25%\"", "\"25%\"");
    deploy__scale(&p, pc, 2, 1);
    assert_int_equal(total_target(pc, 2), 5 + 2);
    assert_true(pc[0].target >= 0 && pc[1].target >= 0);
    assert_int_equal(pc[0].target, 4);
    assert_int_equal(pc[1].target, 3);
}

static void test_scale_single_and_saturated(void **state)
{
    (void)state;
    deploy_params_t p = params(5, "1", "0");
    /* One active RS takes spec.replicas outright. */
    deploy_rs_t one[2] = {rs_make("old", 1, 0, 0), rs_make("new", 2, 3, 3)};
    one[1].desired = 3;
    assert_true(deploy__is_scaling_event(&p, one, 2));
    deploy__scale(&p, one, 2, 1);
    assert_int_equal(one[1].target, 5);
    assert_int_equal(one[0].target, 0);
    /* None active: the new RS (else the newest old). */
    deploy_rs_t none[2] = {rs_make("a", 1, 0, 0), rs_make("b", 2, 0, 0)};
    deploy__scale(&p, none, 2, -1);
    assert_int_equal(none[1].target, 5);
    assert_int_equal(none[0].target, 0);
    /* A saturated new RS sends the old to 0. */
    deploy_rs_t sat[2] = {rs_make("old", 1, 2, 2), rs_make("new", 2, 5, 5)};
    sat[1].desired = 5;
    assert_true(deploy__saturated(&p, &sat[1]));
    deploy__scale(&p, sat, 2, 1);
    assert_int_equal(sat[0].target, 0);
    assert_int_equal(sat[1].target, 5);
    /* To zero replicas: everything goes. */
    deploy_rs_t z[2] = {rs_make("old", 1, 2, 2), rs_make("new", 2, 2, 1)};
    p = params(0, "1", "0");
    deploy__scale(&p, z, 2, 1);
    assert_int_equal(z[0].target, 0);
    assert_int_equal(z[1].target, 0);
}

/* ---- conditions ---- */

static json_t *status_of(const deploy_rs_t *rs, size_t n, int newi, json_t *d,
                         const deploy_params_t *p, int64_t now)
{
    char ts[DEPLOY_TIME_MAX];
    deploy__time_str(now, ts);
    json_t *st = deploy__status_calc(d, p, rs, n, newi, ts);
    deploy__rollout_conditions(d, p, st, rs, n, newi, now);
    return st;
}

static const char *cond(const json_t *st, const char *type, const char *field)
{
    const json_t *c = deploy__condition_get(st, type);
    return c ? json_string_value(json_object_get(c, field)) : NULL;
}

static void test_conditions(void **state)
{
    (void)state;
    char ts[DEPLOY_TIME_MAX];
    deploy__time_str(NOW, ts);
    assert_string_equal(ts, "2023-11-14T22:13:20Z");

    json_t *d = deployment(3, "1", "0");
    deploy_params_t p = params(3, "1", "0");
    /* The rollout starts: created (ensure_new writes this condition). */
    json_t *st = json_object();
    deploy__condition_set(st, deploy__condition("Progressing", "True", DEPLOY_R_CREATED,
                                                "Created new replica set \"web-1\"", ts));
    json_object_set_new(d, "status", st);

    /* One new replica up: progress -> ReplicaSetUpdated, transition time kept. */
    deploy_rs_t rs[2] = {rs_make("web-0", 1, 3, 3), rs_make("web-1", 2, 1, 1)};
    st = status_of(rs, 2, 1, d, &p, NOW + 30);
    assert_string_equal(cond(st, "Progressing", "reason"), DEPLOY_R_UPDATED);
    assert_string_equal(cond(st, "Progressing", "message"), "ReplicaSet \"web-1\" is progressing.");
    assert_string_equal(cond(st, "Progressing", "lastTransitionTime"), ts);
    assert_string_not_equal(cond(st, "Progressing", "lastUpdateTime"), ts);
    assert_string_equal(cond(st, "Available", "status"), "True");
    assert_int_equal(json_integer_value(json_object_get(st, "updatedReplicas")), 1);
    assert_int_equal(json_integer_value(json_object_get(st, "replicas")), 4);
    assert_int_equal(json_integer_value(json_object_get(st, "observedGeneration")), 1);
    json_object_set_new(d, "status", st);

    /* No progress, deadline not reached: nothing changes, requeue for it. */
    st = status_of(rs, 2, 1, d, &p, NOW + 100);
    assert_true(json_equal(st, json_object_get(d, "status")));
    assert_int_equal(deploy__requeue_ms(&p, d, st, NOW + 100), (600 - 70 + 1) * 1000);
    json_decref(st);

    /* No progress past the deadline: ProgressDeadlineExceeded. */
    st = status_of(rs, 2, 1, d, &p, NOW + 30 + 601);
    assert_string_equal(cond(st, "Progressing", "status"), "False");
    assert_string_equal(cond(st, "Progressing", "reason"), DEPLOY_R_TIMEDOUT);
    assert_string_equal(cond(st, "Progressing", "message"),
                        "ReplicaSet \"web-1\" has timed out progressing.");
    assert_int_equal(deploy__requeue_ms(&p, d, st, NOW + 700), -1);
    json_decref(st);

    /* Everything new and available: NewReplicaSetAvailable. */
    deploy_rs_t done[2] = {rs_make("web-0", 1, 0, 0), rs_make("web-1", 2, 3, 3)};
    st = status_of(done, 2, 1, d, &p, NOW + 60);
    assert_string_equal(cond(st, "Progressing", "reason"), DEPLOY_R_COMPLETE);
    assert_string_equal(cond(st, "Progressing", "status"), "True");
    assert_true(deploy__complete(d, st));
    assert_int_equal(deploy__requeue_ms(&p, d, st, NOW + 60), -1);
    json_object_set_new(d, "status", st);

    /* Too few available: Available False; its transition time moves. */
    deploy_rs_t down[1] = {rs_make("web-1", 2, 3, 1)};
    st = status_of(down, 1, 0, d, &p, NOW + 90);
    assert_string_equal(cond(st, "Available", "status"), "False");
    assert_string_equal(cond(st, "Available", "reason"), DEPLOY_R_UNAVAILABLE);
    deploy__time_str(NOW + 90, ts);
    assert_string_equal(cond(st, "Available", "lastTransitionTime"), ts);
    /* A complete rollout that lost pods is not re-estimated. */
    assert_string_equal(cond(st, "Progressing", "reason"), DEPLOY_R_COMPLETE);
    assert_int_equal(json_integer_value(json_object_get(st, "unavailableReplicas")), 2);
    json_decref(st);

    /* Paused, resumed; a timed-out deployment keeps saying so. */
    p.paused = 1;
    st = json_deep_copy(json_object_get(d, "status"));
    assert_true(deploy__paused_condition(&p, st, ts));
    assert_string_equal(cond(st, "Progressing", "status"), "Unknown");
    assert_string_equal(cond(st, "Progressing", "reason"), DEPLOY_R_PAUSED);
    assert_false(deploy__paused_condition(&p, st, ts));
    p.paused = 0;
    assert_true(deploy__paused_condition(&p, st, ts));
    assert_string_equal(cond(st, "Progressing", "reason"), DEPLOY_R_RESUMED);
    assert_string_equal(cond(st, "Progressing", "message"), "Deployment is resumed");
    assert_false(deploy__paused_condition(&p, st, ts));
    deploy__condition_set(st,
                          deploy__condition("Progressing", "False", DEPLOY_R_TIMEDOUT, "x", ts));
    p.paused = 1;
    assert_false(deploy__paused_condition(&p, st, ts));
    json_decref(st);
    json_decref(d);
}

static void test_condition_set_rules(void **state)
{
    (void)state;
    json_t *st = json_object();
    deploy__condition_set(st, deploy__condition("Available", "True", "A", "m1", "t1"));
    /* Same status and reason: nothing changes, not even the message. */
    deploy__condition_set(st, deploy__condition("Available", "True", "A", "m2", "t2"));
    assert_string_equal(cond(st, "Available", "message"), "m1");
    assert_string_equal(cond(st, "Available", "lastUpdateTime"), "t1");
    /* Same status, new reason: replaced, transition time kept. */
    deploy__condition_set(st, deploy__condition("Available", "True", "B", "m3", "t3"));
    assert_string_equal(cond(st, "Available", "reason"), "B");
    assert_string_equal(cond(st, "Available", "lastUpdateTime"), "t3");
    assert_string_equal(cond(st, "Available", "lastTransitionTime"), "t1");
    /* New status: a transition. */
    deploy__condition_set(st, deploy__condition("Available", "False", "B", "m4", "t4"));
    assert_string_equal(cond(st, "Available", "lastTransitionTime"), "t4");
    assert_int_equal(json_array_size(json_object_get(st, "conditions")), 1);
    deploy__condition_remove(st, "Available");
    assert_null(json_object_get(st, "conditions"));
    json_decref(st);
}

/* ---- revisions ---- */

/* One rollout step of revisions as find_new/ensure_new do it: rs[newi]
 * gets max(other revisions) + 1; returns its revision annotation. */
static int64_t take_revision(json_t **ann, deploy_rs_t *rs, size_t n, int newi, const json_t *dann,
                             int exists)
{
    int64_t rev = deploy__max_revision(rs, n, newi) + 1;
    deploy__rs_annotations(ann[newi], dann, rev, exists, 3, 4);
    rs[newi].revision =
        strtoll(json_string_value(json_object_get(ann[newi], DEPLOY_ANN_REVISION)), NULL, 10);
    return rs[newi].revision;
}

static const char *ann_str(const json_t *ann, const char *key)
{
    return json_string_value(json_object_get(ann, key));
}

static void test_revisions_and_rollback(void **state)
{
    (void)state;
    json_t *dann = parse("{\"kubernetes.io/change-cause\":\"v1\","
                         "\"kubectl.kubernetes.io/last-applied-configuration\":\"{}\","
                         "\"deployment.kubernetes.io/revision\":\"7\",\"team\":\"a\"}");
    json_t *ann[2] = {json_object(), json_object()};
    deploy_rs_t rs[2] = {rs_make("web-v1", 1, 3, 3), rs_make("web-v2", 2, 0, 0)};

    /* Revision 1: a new RS copies the Deployment's annotations but not
     * last-applied or deployment.kubernetes.io/..., and gets the sizes. */
    assert_int_equal(take_revision(ann, rs, 1, 0, dann, 0), 1);
    assert_string_equal(ann_str(ann[0], "kubernetes.io/change-cause"), "v1");
    assert_string_equal(ann_str(ann[0], "team"), "a");
    assert_null(ann_str(ann[0], DEPLOY_ANN_APPLIED));
    assert_string_equal(ann_str(ann[0], DEPLOY_ANN_REVISION), "1");
    assert_string_equal(ann_str(ann[0], DEPLOY_ANN_DESIRED), "3");
    assert_string_equal(ann_str(ann[0], DEPLOY_ANN_MAX), "4");
    assert_null(ann_str(ann[0], DEPLOY_ANN_HISTORY));
    /* Syncing it again changes nothing. */
    assert_int_equal(deploy__rs_annotations(ann[0], dann, 1, 1, 0, 0), 0);

    /* Revision 2: a new template. */
    json_object_set_new(dann, "kubernetes.io/change-cause", json_string("v2"));
    assert_int_equal(take_revision(ann, rs, 2, 1, dann, 0), 2);
    assert_string_equal(ann_str(ann[1], "kubernetes.io/change-cause"), "v2");

    /* Rollback to revision 1 (kubectl rollout undo): web-v1 is the new RS
     * again and takes revision 3, remembering 1. */
    assert_int_equal(take_revision(ann, rs, 2, 0, dann, 1), 3);
    assert_string_equal(ann_str(ann[0], DEPLOY_ANN_HISTORY), "1");
    /* desired/max of an existing RS are deploy__apply's business. */
    assert_string_equal(ann_str(ann[0], DEPLOY_ANN_DESIRED), "3");

    /* Back to web-v2 (revision 4, history "2"), then web-v1 again (5, "1,3"). */
    assert_int_equal(take_revision(ann, rs, 2, 1, dann, 1), 4);
    assert_string_equal(ann_str(ann[1], DEPLOY_ANN_HISTORY), "2");
    assert_int_equal(take_revision(ann, rs, 2, 0, dann, 1), 5);
    assert_string_equal(ann_str(ann[0], DEPLOY_ANN_HISTORY), "1,3");
    assert_int_equal(deploy__max_revision(rs, 2, -1), 5);
    assert_int_equal(deploy__max_revision(rs, 2, 0), 4);

    json_decref(ann[0]);
    json_decref(ann[1]);
    json_decref(dann);
}

static void test_revision_history_cap(void **state)
{
    (void)state;
    /* A history near 2000 characters drops its oldest numbers. */
    char hist[2100];
    size_t off = 0;
    int i = 1000;
    while (off < 1996)
        off += (size_t)snprintf(hist + off, sizeof hist - off, "%s%d", off ? "," : "", i++);
    json_t *ann = json_pack("{s:s, s:s}", DEPLOY_ANN_HISTORY, hist, DEPLOY_ANN_REVISION, "9999");
    assert_int_equal(deploy__rs_annotations(ann, NULL, 10000, 1, 0, 0), 1);
    const char *h = ann_str(ann, DEPLOY_ANN_HISTORY);
    assert_true(strlen(h) <= DEPLOY_HISTORY_CHARS);
    assert_non_null(strstr(h, ",9999"));
    assert_int_equal(strncmp(h, "1001,", 5), 0); /* 1000 made room */
    assert_string_equal(ann_str(ann, DEPLOY_ANN_REVISION), "10000");
    json_decref(ann);
}

/* ---- history cleanup ---- */

static void test_cleanup(void **state)
{
    (void)state;
    deploy_params_t p = params(3, "1", "0");
    p.history_limit = 2;
    deploy_rs_t rs[6] = {rs_make("r3", 1, 0, 0), rs_make("r1", 2, 0, 0), rs_make("r2", 3, 2, 2),
                         rs_make("r4", 4, 0, 0), rs_make("r5", 5, 0, 0), rs_make("new", 6, 3, 3)};
    int64_t revs[6] = {3, 1, 2, 4, 5, 6};
    for (int i = 0; i < 6; i++)
        rs[i].revision = revs[i];
    /* 5 old, keep 2: the 3 lowest revisions go, unless they still run. */
    assert_int_equal(deploy__cleanup(&p, rs, 6, 5), 2);
    assert_true(rs[1].remove);  /* revision 1 */
    assert_false(rs[2].remove); /* revision 2 still has replicas */
    assert_true(rs[0].remove);  /* revision 3 */
    assert_false(rs[3].remove || rs[4].remove || rs[5].remove);

    /* Being deleted already: not counted, not touched; stale: skipped. */
    for (int i = 0; i < 6; i++)
        rs[i].remove = 0;
    rs[1].deleting = 1;
    rs[0].stale = 1;
    assert_int_equal(deploy__cleanup(&p, rs, 6, 5), 0);
    p.history_limit = -1;
    assert_int_equal(deploy__cleanup(&p, rs, 6, 5), 0);
    p.history_limit = 0;
    rs[0].stale = 0;
    assert_int_equal(deploy__cleanup(&p, rs, 6, 5), 3); /* r3, r4, r5 */
}

static void test_sort(void **state)
{
    (void)state;
    deploy_rs_t rs[3] = {rs_make("b", 5, 0, 0), rs_make("a", 5, 0, 0), rs_make("c", 1, 0, 0)};
    deploy__sort(rs, 3);
    assert_string_equal(rs[0].name, "c");
    assert_string_equal(rs[1].name, "a");
    assert_string_equal(rs[2].name, "b");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_safe_encode),
        cmocka_unit_test(test_hash_stable),
        cmocka_unit_test(test_hash_collisions),
        cmocka_unit_test(test_template_equal),
        cmocka_unit_test(test_rounding),
        cmocka_unit_test(test_rolling_surge1_unavailable0),
        cmocka_unit_test(test_rolling_percent),
        cmocka_unit_test(test_rolling_unhealthy_first),
        cmocka_unit_test(test_rolling_new_too_big),
        cmocka_unit_test(test_rolling_terminating_hold_surge),
        cmocka_unit_test(test_recreate),
        cmocka_unit_test(test_proportional_10_to_15),
        cmocka_unit_test(test_scale_single_and_saturated),
        cmocka_unit_test(test_conditions),
        cmocka_unit_test(test_condition_set_rules),
        cmocka_unit_test(test_revisions_and_rollback),
        cmocka_unit_test(test_revision_history_cap),
        cmocka_unit_test(test_cleanup),
        cmocka_unit_test(test_sort),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
