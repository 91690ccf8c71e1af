/*
 * test_statefulset.c -- the pure logic of the StatefulSet controller
 * (src/controllers/statefulset.c through statefulset_int.h) and the
 * ControllerRevision helpers (src/controllers/history.c): pod ordinals,
 * revision hashes and objects, and the plan of each sync, simulated to the
 * end: OrderedReady creation and scale-down one pod at a time in order,
 * Parallel, RollingUpdate with a partition, OnDelete, finished pods.
 *
 * The simulations play the node's part between syncs: a created pod becomes
 * Ready on the next tick, a deleted one is gone on the next tick.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/history.h"
#include "controllers/statefulset_int.h"

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    if (!v) fail_msg("bad test JSON: %s: %s", e.text, text);
    return v;
}

/* ---- names and hashes ---- */

static void test_ordinal(void **state)
{
    (void)state;
    assert_int_equal(sts__ordinal("web", "web-0"), 0);
    assert_int_equal(sts__ordinal("web", "web-12"), 12);
    assert_int_equal(sts__ordinal("web", "web-"), -1);
    assert_int_equal(sts__ordinal("web", "web-x"), -1);
    assert_int_equal(sts__ordinal("web", "web-1-2"), -1); /* ordinal 2 of "web-1" */
    assert_int_equal(sts__ordinal("web-1", "web-1-2"), 2);
    assert_int_equal(sts__ordinal("web", "webs-1"), -1);
    assert_int_equal(sts__ordinal("web", "other-1"), -1);
    assert_int_equal(sts__ordinal("web", "web-99999999999"), -1);
}

static void test_hash_stable(void **state)
{
    (void)state;
    json_t *a = parse("{\"spec\":{\"template\":{\"$patch\":\"replace\",\"metadata\":{\"labels\":"
                      "{\"app\":\"web\",\"tier\":\"x\"}},\"spec\":{\"containers\":[{\"name\":\"c\","
                      "\"image\":\"nginx:1\"}]}}}}");
    /* The same data with its keys in another order. */
    json_t *b =
        parse("{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"image\":\"nginx:1\","
              "\"name\":\"c\"}]},\"metadata\":{\"labels\":{\"tier\":\"x\",\"app\":\"web\"}},"
              "\"$patch\":\"replace\"}}}");
    json_t *c = parse("{\"spec\":{\"template\":{\"$patch\":\"replace\",\"metadata\":{\"labels\":"
                      "{\"app\":\"web\",\"tier\":\"x\"}},\"spec\":{\"containers\":[{\"name\":\"c\","
                      "\"image\":\"nginx:2\"}]}}}}");
    char ha[CTRL_HASH_MAX], hb[CTRL_HASH_MAX], hc[CTRL_HASH_MAX], h1[CTRL_HASH_MAX];
    assert_int_equal(ctrl_history_hash(a, 0, ha), 0);
    assert_int_equal(ctrl_history_hash(b, 0, hb), 0);
    assert_int_equal(ctrl_history_hash(c, 0, hc), 0);
    assert_int_equal(ctrl_history_hash(a, 1, h1), 0);
    assert_string_equal(ha, hb);
    assert_string_not_equal(ha, hc);
    assert_string_not_equal(ha, h1); /* a collision step gives another name */
    assert_true(strlen(ha) >= 1 && strlen(ha) <= 10);
    for (const char *p = ha; *p; p++)
        assert_non_null(strchr("bcdfghjklmnpqrstvwxz2456789", *p));
    /* Stable across runs and builds: this value is part of the names users
     * see; a change renames every existing revision. */
    char again[CTRL_HASH_MAX];
    assert_int_equal(ctrl_history_hash(a, 0, again), 0);
    assert_string_equal(ha, again);
    /* FNV-32a over the sorted compact JSON, then "0", as a decimal, encoded
     * (worked out independently of the code under test). */
    assert_string_equal(ha, "5bbd47f788");
    /* Equality is of the data, key order aside. */
    json_t *ra = json_pack("{s:O}", "data", a), *rb = json_pack("{s:O}", "data", b),
           *rc = json_pack("{s:O}", "data", c);
    assert_true(ctrl_history_equal(ra, rb));
    assert_false(ctrl_history_equal(ra, rc));
    json_decref(ra);
    json_decref(rb);
    json_decref(rc);
    json_decref(a);
    json_decref(b);
    json_decref(c);
}

static void test_safe_encode_shared(void **state)
{
    (void)state;
    char out[CTRL_HASH_MAX];
    ctrl_safe_encode("0123456789", out, sizeof out);
    /* '0' is 48: 48 % 27 = 21 -> '4', and so on through the alphabet. */
    assert_string_equal(out, "456789bcdf");
    ctrl_hash_encode(0, out);
    assert_string_equal(out, "4");
    assert_int_equal(ctrl_fnv32a(CTRL_FNV32A_INIT, "", 0), 2166136261u);
    assert_int_equal(ctrl_fnv32a(CTRL_FNV32A_INIT, "a", 1), 0xe40c292cu); /* FNV-1a test vector */
}

static void test_history_new_and_sort(void **state)
{
    (void)state;
    json_t *set = parse("{\"metadata\":{\"name\":\"web\",\"namespace\":\"ns\",\"uid\":\"u1\"},"
                        "\"spec\":{\"template\":{\"metadata\":{\"labels\":{\"app\":\"web\"}}}}}");
    json_t *data = parse("{\"spec\":{\"template\":{\"$patch\":\"replace\"}}}");
    json_t *rev = ctrl_history_new(set, "apps/v1", "StatefulSet", data, 3, 0);
    assert_non_null(rev);
    char h[CTRL_HASH_MAX], name[64];
    assert_int_equal(ctrl_history_hash(data, 0, h), 0);
    snprintf(name, sizeof name, "web-%s", h);
    json_t *md = json_object_get(rev, "metadata");
    assert_string_equal(json_string_value(json_object_get(md, "name")), name);
    assert_string_equal(json_string_value(json_object_get(md, "namespace")), "ns");
    assert_string_equal(json_string_value(json_object_get(rev, "kind")), "ControllerRevision");
    json_t *labels = json_object_get(md, "labels");
    assert_string_equal(json_string_value(json_object_get(labels, "app")), "web");
    assert_string_equal(json_string_value(json_object_get(labels, CTRL_REVISION_HASH_LABEL)), h);
    json_t *ref = json_array_get(json_object_get(md, "ownerReferences"), 0);
    assert_string_equal(json_string_value(json_object_get(ref, "uid")), "u1");
    assert_string_equal(json_string_value(json_object_get(ref, "kind")), "StatefulSet");
    assert_true(json_is_true(json_object_get(ref, "controller")));
    assert_int_equal(json_integer_value(json_object_get(rev, "revision")), 3);
    assert_true(json_equal(json_object_get(rev, "data"), data));
    assert_true(json_object_get(rev, "data") != data); /* a copy */

    json_t *r1 = parse("{\"metadata\":{\"name\":\"b\"},\"revision\":2}");
    json_t *r2 = parse("{\"metadata\":{\"name\":\"a\"},\"revision\":10}");
    json_t *r3 = parse("{\"metadata\":{\"name\":\"c\"},\"revision\":1}");
    const json_t *v[] = {r1, r2, r3};
    ctrl_history_sort(v, 3);
    assert_ptr_equal(v[0], r3);
    assert_ptr_equal(v[1], r1);
    assert_ptr_equal(v[2], r2);
    assert_int_equal(ctrl_history_max_revision(v, 3), 10);
    json_decref(r1);
    json_decref(r2);
    json_decref(r3);
    json_decref(rev);
    json_decref(data);
    json_decref(set);
}

/* ---- the plan, simulated ---- */

#define MAXP 16

/* The world: one pod per ordinal at most. */
typedef struct world {
    int exists[MAXP], ready[MAXP], terminating[MAXP], updated[MAXP], finished[MAXP];
    int created_order[MAXP], ncreated;     /* ordinals in creation order */
    int deleted_order[MAXP * 2], ndeleted; /* ordinals in deletion order */
} world_t;

static json_t *dummy;

/* Run one sync over `replicas` wanted ordinals (start 0); apply its actions
 * to w. Returns the number of actions. Checks the ordering rules when
 * monotonic: a create only when every lower slot is healthy; a scale-down
 * delete only when every slot is healthy and no higher pod remains. */
static size_t sync_once(world_t *w, const sts_params_t *p, int replicas, sts_action_t *acts)
{
    sts_pod_t slots[MAXP], cond[MAXP];
    size_t nc = 0;
    memset(slots, 0, sizeof slots);
    memset(cond, 0, sizeof cond);
    for (int o = MAXP - 1; o >= 0; o--) { /* condemned: descending */
        sts_pod_t *sp = o < replicas ? &slots[o] : &cond[nc];
        sp->ordinal = o;
        if (!w->exists[o]) continue;
        sp->obj = dummy;
        sp->ready = sp->available = (unsigned)w->ready[o];
        sp->terminating = (unsigned)w->terminating[o];
        sp->updated = (unsigned)w->updated[o];
        sp->finished = (unsigned)w->finished[o];
        sp->identity_ok = 1;
        if (o >= replicas) nc++;
    }
    size_t n = sts__plan(p, slots, (size_t)replicas, cond, nc, acts, MAXP * 2);
    for (size_t i = 0; i < n; i++) {
        int o = acts[i].op == STS_CONDEMN ? (int)cond[acts[i].index].ordinal : (int)acts[i].index;
        if (p->monotonic) assert_int_equal(n, 1);
        switch (acts[i].op) {
        case STS_CREATE:
            if (p->monotonic)
                for (int j = 0; j < o; j++)
                    assert_true(w->exists[j] && w->ready[j] && !w->terminating[j]);
            assert_false(w->exists[o]);
            w->exists[o] = 1;
            w->ready[o] = 0;
            w->updated[o] = acts[i].update_rev;
            w->created_order[w->ncreated++] = o;
            break;
        case STS_DELETE:
        case STS_CONDEMN:
            assert_true(w->exists[o] && !w->terminating[o]);
            if (p->monotonic && acts[i].op == STS_CONDEMN) {
                for (int j = 0; j < replicas; j++)
                    assert_true(w->exists[j] && w->ready[j]);
                for (int j = o + 1; j < MAXP; j++)
                    assert_false(w->exists[j]);
            }
            w->terminating[o] = 1;
            w->deleted_order[w->ndeleted++] = o;
            break;
        case STS_FIX:
            break;
        }
    }
    return n;
}

/* The node's part: pods become ready, terminating pods go. */
static void tick(world_t *w)
{
    for (int o = 0; o < MAXP; o++) {
        if (w->terminating[o]) {
            w->exists[o] = w->terminating[o] = w->ready[o] = w->updated[o] = w->finished[o] = 0;
        } else if (w->exists[o] && !w->finished[o]) {
            w->ready[o] = 1;
        }
    }
}

static int run(world_t *w, const sts_params_t *p, int replicas, int max_ticks)
{
    sts_action_t acts[MAXP * 2];
    int idle = 0, t = 0;
    for (; t < max_ticks && idle < 2; t++) {
        size_t n = sync_once(w, p, replicas, acts);
        idle = n ? 0 : idle + 1;
        tick(w);
    }
    return t;
}

static void test_ordered_ready(void **state)
{
    (void)state;
    world_t w = {0};
    sts_params_t p = {.monotonic = 1, .rolling = 1, .partition = 0};
    sts_action_t acts[MAXP * 2];
    /* Nothing yet: exactly one create, of ordinal 0. */
    assert_int_equal(sync_once(&w, &p, 3, acts), 1);
    assert_int_equal(acts[0].op, STS_CREATE);
    assert_int_equal(acts[0].index, 0);
    /* web-0 exists but is not ready: wait. */
    assert_int_equal(sync_once(&w, &p, 3, acts), 0);
    run(&w, &p, 3, 50);
    assert_int_equal(w.ncreated, 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(w.created_order[i], i);
    for (int i = 0; i < 3; i++)
        assert_true(w.exists[i] && w.ready[i]);
    assert_false(w.exists[3]);

    /* Scale 3 -> 1: web-2, then web-1, each after the one above is gone. */
    w.ndeleted = 0;
    assert_int_equal(sync_once(&w, &p, 1, acts), 1);
    assert_int_equal(acts[0].op, STS_CONDEMN);
    assert_int_equal(w.deleted_order[0], 2);
    assert_int_equal(sync_once(&w, &p, 1, acts), 0); /* web-2 still terminating */
    run(&w, &p, 1, 50);
    assert_int_equal(w.ndeleted, 2);
    assert_int_equal(w.deleted_order[0], 2);
    assert_int_equal(w.deleted_order[1], 1);
    assert_true(w.exists[0]);
    assert_false(w.exists[1] || w.exists[2]);
}

static void test_scale_down_waits_for_health(void **state)
{
    (void)state;
    world_t w = {0};
    sts_params_t p = {.monotonic = 1, .rolling = 1};
    sts_action_t acts[MAXP * 2];
    run(&w, &p, 3, 50);
    /* web-0 not ready: no scale-down. */
    w.ready[0] = 0;
    assert_int_equal(sync_once(&w, &p, 1, acts), 0);
    w.ready[0] = 1;
    /* Condemned pods go highest first, healthy or not: an unhealthy web-1
     * does not keep web-2, nor itself, from going. */
    w.ready[1] = 0;
    assert_int_equal(sync_once(&w, &p, 1, acts), 1);
    assert_int_equal(acts[0].op, STS_CONDEMN);
    assert_int_equal(w.deleted_order[0], 2);
    tick(&w);
    w.ready[1] = 0;
    assert_int_equal(sync_once(&w, &p, 1, acts), 1);
    assert_int_equal(w.deleted_order[1], 1);
    tick(&w);
    assert_false(w.exists[1] || w.exists[2]);

    /* As Kubernetes: with web-1 and web-2 both unhealthy, the first
     * unhealthy pod is the lowest (web-1), and web-2 above it waits. */
    run(&w, &p, 3, 50);
    w.ready[1] = w.ready[2] = 0;
    assert_int_equal(sync_once(&w, &p, 1, acts), 0);
    /* Parallel does not wait. */
    p.monotonic = 0;
    assert_int_equal(sync_once(&w, &p, 1, acts), 2);
}

static void test_parallel(void **state)
{
    (void)state;
    world_t w = {0};
    sts_params_t p = {.monotonic = 0, .rolling = 1};
    sts_action_t acts[MAXP * 2];
    /* All three at once, none ready. */
    assert_int_equal(sync_once(&w, &p, 3, acts), 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(acts[i].op, STS_CREATE);
    /* Scale to 0 at once while none is ready. */
    assert_int_equal(sync_once(&w, &p, 0, acts), 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(acts[i].op, STS_CONDEMN);
    assert_int_equal(w.deleted_order[0], 2); /* still highest first */
}

/* A new revision: every pod starts out of date. */
static void outdate(world_t *w)
{
    for (int o = 0; o < MAXP; o++)
        w->updated[o] = 0;
}

static void test_rolling_partition(void **state)
{
    (void)state;
    world_t w = {0};
    sts_params_t p = {.monotonic = 1, .rolling = 1, .partition = 1};
    sts_action_t acts[MAXP * 2];
    run(&w, &p, 3, 50);
    outdate(&w);
    w.ndeleted = w.ncreated = 0;
    /* web-2 first; then nothing until its replacement is Ready. */
    assert_int_equal(sync_once(&w, &p, 3, acts), 1);
    assert_int_equal(acts[0].op, STS_DELETE);
    assert_int_equal(acts[0].index, 2);
    assert_int_equal(sync_once(&w, &p, 3, acts), 0);
    tick(&w); /* web-2 gone */
    assert_int_equal(sync_once(&w, &p, 3, acts), 1);
    assert_int_equal(acts[0].op, STS_CREATE);
    assert_int_equal(acts[0].index, 2);
    assert_int_equal(acts[0].update_rev, 1);
    assert_int_equal(sync_once(&w, &p, 3, acts), 0); /* not Ready yet */
    run(&w, &p, 3, 50);
    assert_int_equal(w.ndeleted, 2);
    assert_int_equal(w.deleted_order[0], 2);
    assert_int_equal(w.deleted_order[1], 1);
    assert_true(w.updated[1] && w.updated[2]);
    assert_false(w.updated[0]); /* below the partition */

    /* Recreated below the partition: at the current revision. */
    w.terminating[0] = 1;
    tick(&w);
    assert_int_equal(sync_once(&w, &p, 3, acts), 1);
    assert_int_equal(acts[0].op, STS_CREATE);
    assert_int_equal(acts[0].index, 0);
    assert_int_equal(acts[0].update_rev, 0);

    /* Partition 0 finishes the job. */
    run(&w, &p, 3, 50);
    p.partition = 0;
    run(&w, &p, 3, 50);
    for (int o = 0; o < 3; o++)
        assert_true(w.updated[o] && w.ready[o]);
}

static void test_on_delete(void **state)
{
    (void)state;
    world_t w = {0};
    sts_params_t p = {.monotonic = 1, .rolling = 0};
    sts_action_t acts[MAXP * 2];
    run(&w, &p, 3, 50);
    outdate(&w);
    w.ndeleted = 0;
    run(&w, &p, 3, 50);
    assert_int_equal(w.ndeleted, 0); /* nothing rolls by itself */
    w.terminating[1] = 1;            /* the user deletes web-1 */
    tick(&w);
    assert_int_equal(sync_once(&w, &p, 3, acts), 1);
    assert_int_equal(acts[0].op, STS_CREATE);
    assert_int_equal(acts[0].index, 1);
    assert_int_equal(acts[0].update_rev, 1);
}

static void test_finished_pod_recreated(void **state)
{
    (void)state;
    world_t w = {0};
    sts_params_t p = {.monotonic = 0, .rolling = 1};
    sts_action_t acts[MAXP * 2];
    run(&w, &p, 3, 50);
    w.finished[1] = 1;
    w.ready[1] = 0;
    assert_int_equal(sync_once(&w, &p, 3, acts), 1);
    assert_int_equal(acts[0].op, STS_DELETE);
    assert_int_equal(acts[0].index, 1);
    assert_int_equal(sync_once(&w, &p, 3, acts), 0); /* waits for it to go */
    tick(&w);
    assert_int_equal(sync_once(&w, &p, 3, acts), 1);
    assert_int_equal(acts[0].op, STS_CREATE);
    assert_int_equal(acts[0].index, 1);
}

static void test_min_ready_seconds(void **state)
{
    (void)state;
    /* web-0 Ready but not yet Available (minReadySeconds): OrderedReady
     * waits; Parallel does not. */
    sts_pod_t slots[2] = {
        {.obj = dummy, .ordinal = 0, .ready = 1, .available = 0, .updated = 1, .identity_ok = 1},
        {.ordinal = 1},
    };
    sts_params_t p = {.monotonic = 1, .rolling = 1};
    sts_action_t acts[4];
    assert_int_equal(sts__plan(&p, slots, 2, NULL, 0, acts, 4), 0);
    slots[0].available = 1;
    assert_int_equal(sts__plan(&p, slots, 2, NULL, 0, acts, 4), 1);
    assert_int_equal(acts[0].op, STS_CREATE);
    assert_int_equal(acts[0].index, 1);
    slots[0].available = 0;
    p.monotonic = 0;
    assert_int_equal(sts__plan(&p, slots, 2, NULL, 0, acts, 4), 1);
    /* The cap: no more actions than `max`. */
    sts_pod_t many[8] = {{0}};
    assert_int_equal(sts__plan(&p, many, 8, NULL, 0, acts, 4), 4);
}

static void test_identity_fix(void **state)
{
    (void)state;
    sts_pod_t slot = {.obj = dummy, .ordinal = 0, .ready = 1, .available = 1, .updated = 1};
    sts_params_t p = {.monotonic = 1, .rolling = 1};
    sts_action_t acts[4];
    assert_int_equal(sts__plan(&p, &slot, 1, NULL, 0, acts, 4), 1);
    assert_int_equal(acts[0].op, STS_FIX);
    slot.identity_ok = 1;
    assert_int_equal(sts__plan(&p, &slot, 1, NULL, 0, acts, 4), 0);
}

static int setup(void **state)
{
    (void)state;
    dummy = json_object();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    json_decref(dummy);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ordinal),
        cmocka_unit_test(test_hash_stable),
        cmocka_unit_test(test_safe_encode_shared),
        cmocka_unit_test(test_history_new_and_sort),
        cmocka_unit_test(test_ordered_ready),
        cmocka_unit_test(test_scale_down_waits_for_health),
        cmocka_unit_test(test_parallel),
        cmocka_unit_test(test_rolling_partition),
        cmocka_unit_test(test_on_delete),
        cmocka_unit_test(test_finished_pod_recreated),
        cmocka_unit_test(test_min_ready_seconds),
        cmocka_unit_test(test_identity_fix),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
