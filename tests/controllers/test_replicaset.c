/*
 * test_replicaset.c -- the pure part of the ReplicaSet controller
 * (replicaset_int.h): the selector of a ReplicaSet and of a
 * ReplicationController (Kubernetes' conversion.go reads an RC's label map
 * as matchLabels; defaulting gives an empty one the template's labels),
 * and the summaries that events keep current: after any sequence of pod
 * events their counts equal a count over the pods from scratch.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/informer.h"

#include "controllers/ctrl_util.h"
#include "controllers/replicaset_int.h"

static json_t *J(const char *text)
{
    char *t = strdup(text);
    for (char *p = t; *p; p++)
        if (*p == '\'') *p = '"';
    json_t *v = json_loads(t, 0, NULL);
    if (!v) fail_msg("bad test JSON: %s", t);
    free(t);
    return v;
}

static int matches(const json_t *obj, int map_selector, const char *labels)
{
    json_t *sel = rs__selector(obj, map_selector);
    json_t *l = J(labels);
    int yes = sel && ctrl_selector_matches(sel, l);
    json_decref(sel);
    json_decref(l);
    return yes;
}

static void test_rc_selector(void **state)
{
    (void)state;
    json_t *rc = J("{'spec':{'selector':{'app':'web','tier':'fe'},"
                   "'template':{'metadata':{'labels':{'app':'web','tier':'fe','x':'1'}}}}}");
    json_t *sel = rs__selector(rc, 1);
    json_t *want = J("{'matchLabels':{'app':'web','tier':'fe'}}");
    assert_true(json_equal(sel, want));
    json_decref(sel);
    json_decref(want);
    assert_true(matches(rc, 1, "{'app':'web','tier':'fe','other':'y'}"));
    assert_false(matches(rc, 1, "{'app':'web'}"));
    assert_false(matches(rc, 1, "{'app':'web','tier':'be'}"));
    json_decref(rc);

    /* Empty or absent: the template's labels. */
    rc = J("{'spec':{'selector':{},'template':{'metadata':{'labels':{'app':'db'}}}}}");
    assert_true(matches(rc, 1, "{'app':'db'}"));
    assert_false(matches(rc, 1, "{'app':'web'}"));
    json_decref(rc);
    rc = J("{'spec':{'template':{'metadata':{'labels':{'app':'db'}}}}}");
    assert_true(matches(rc, 1, "{'app':'db'}"));
    json_decref(rc);
    /* Neither: selects nothing (not everything). */
    rc = J("{'spec':{'template':{'metadata':{}}}}");
    assert_null(rs__selector(rc, 1));
    assert_false(matches(rc, 1, "{'app':'db'}"));
    json_decref(rc);
}

static void test_rs_selector(void **state)
{
    (void)state;
    json_t *rs = J("{'spec':{'selector':{'matchExpressions':[{'key':'app','operator':'In',"
                   "'values':['a','b']}]}}}");
    assert_true(matches(rs, 0, "{'app':'b'}"));
    assert_false(matches(rs, 0, "{'app':'c'}"));
    /* A ReplicaSet's selector is a LabelSelector: not read as a label map. */
    assert_false(matches(rs, 1, "{'app':'b'}"));
    json_decref(rs);
    rs = J("{'spec':{'template':{'metadata':{'labels':{'app':'db'}}}}}");
    assert_null(rs__selector(rs, 0)); /* no defaulting from the template */
    json_decref(rs);
}

/* ---- summaries ---- */

#define PODS 40

/* A stand-in informer cache: pod uid -> pod. */
typedef struct cache {
    json_t *pods;
    const char *owner_uid; /* the ReplicaSet whose pods list() returns */
    pthread_rwlock_t *mu;  /* the cache's lock, as the informer's (may be NULL) */
} cache_t;

static int list(void *arg, json_t ***out, size_t *n)
{
    cache_t *c = arg;
    if (c->mu) pthread_rwlock_rdlock(c->mu);
    *out = calloc(json_object_size(c->pods) + 1, sizeof **out);
    *n = 0;
    const char *k;
    json_t *pod;
    json_object_foreach(c->pods, k, pod) {
        if (!strcmp(ctrl_controller_uid(pod) ? ctrl_controller_uid(pod) : "", c->owner_uid))
            (*out)[(*n)++] = json_incref(pod);
    }
    if (c->mu) pthread_rwlock_unlock(c->mu);
    return 0;
}

/* A pod from random choices: owner (web uid-1, web uid-2 -- a ReplicaSet
 * deleted and made again under its name --, db, none), labels, phase,
 * readiness, deletion. */
static json_t *random_pod(int i)
{
    static const char *const owners[][2] = {{"web", "uid-1"}, {"web", "uid-2"}, {"db", "uid-3"}};
    static const char *const phases[] = {"Pending", "Running", "Succeeded", "Failed"};
    char name[32], uid[32];
    snprintf(name, sizeof name, "p%d", i);
    snprintf(uid, sizeof uid, "pod-%d-%d", i, rand() % 2); /* made again: another uid */
    json_t *pod = json_pack("{s:{s:s, s:s, s:s, s:{s:s}}, s:{s:s, s:[{s:s, s:s}]}}", "metadata",
                            "name", name, "namespace", "ns", "uid", uid, "labels", "app",
                            rand() % 4 ? "web" : "other", "status", "phase", phases[rand() % 4],
                            "conditions", "type", "Ready", "status", rand() % 2 ? "True" : "False");
    json_t *md = json_object_get(pod, "metadata");
    if (rand() % 3) json_object_set_new(json_object_get(md, "labels"), "tier", json_string("fe"));
    if (rand() % 5 == 0)
        json_object_set_new(md, "deletionTimestamp", json_string("2026-01-01T00:00:00Z"));
    int o = rand() % 4;
    if (o < 3)
        json_object_set_new(md, "ownerReferences",
                            json_pack("[{s:s, s:s, s:s, s:b}]", "kind",
                                      o == 2 && rand() % 2 ? "ReplicationController" : "ReplicaSet",
                                      "name", owners[o][0], "uid", owners[o][1], "controller", 1));
    return pod;
}

/* The counts over c's pods owned by uid, from scratch. */
static rs__counts_t recount(cache_t *c, const char *uid, const json_t *sel, const json_t *tmpl)
{
    rs__sums_t *fresh = rs__sums_new("ReplicaSet");
    rs__counts_t n;
    cache_t cc = {c->pods, uid, NULL};
    assert_int_equal(rs__sums_counts(fresh, "ns/web", uid, sel, tmpl, list, &cc, &n), 0);
    rs__sums_free(fresh);
    return n;
}

static void assert_counts(const rs__counts_t *a, const rs__counts_t *b)
{
    assert_int_equal(a->active, b->active);
    assert_int_equal(a->ready, b->ready);
    assert_int_equal(a->full, b->full);
    assert_int_equal(a->release, b->release);
}

static void test_sums_by_hand(void **state)
{
    (void)state;
    rs__sums_t *ss = rs__sums_new("ReplicaSet");
    cache_t c = {json_object(), "uid-1", NULL};
    json_t *sel = J("{'matchLabels':{'app':'web'}}"), *tmpl = J("{'app':'web','tier':'fe'}");
    json_t *a =
        J("{'metadata':{'name':'a','namespace':'ns','uid':'ua','labels':{'app':'web','tier':'fe'},"
          "'ownerReferences':[{'kind':'ReplicaSet','name':'web','uid':'uid-1','controller':true}]},"
          "'status':{'phase':'Running','conditions':[{'type':'Ready','status':'True'}]}}");
    json_object_set(c.pods, "ua", a);
    rs__counts_t n;
    assert_int_equal(rs__sums_counts(ss, "ns/web", "uid-1", sel, tmpl, list, &c, &n), 0);
    assert_int_equal(n.active, 1);
    assert_int_equal(n.ready, 1);
    assert_int_equal(n.full, 1);
    assert_int_equal(n.release, 0);

    /* Relabelled: no longer selected, so to release; not full. */
    json_t *b = json_deep_copy(a);
    json_object_set_new(json_object_get(json_object_get(b, "metadata"), "labels"), "app",
                        json_string("x"));
    json_object_set(c.pods, "ua", b);
    rs__sums_event(ss, a, b);
    assert_int_equal(rs__sums_counts(ss, "ns/web", "uid-1", sel, tmpl, list, &c, &n), 0);
    assert_int_equal(n.active, 1);
    assert_int_equal(n.full, 0);
    assert_int_equal(n.release, 1);

    /* The event seen twice changes nothing; being deleted ends the release. */
    rs__sums_event(ss, a, b);
    json_t *d = json_deep_copy(b);
    json_object_set_new(json_object_get(d, "metadata"), "deletionTimestamp",
                        json_string("2026-01-01T00:00:00Z"));
    rs__sums_event(ss, b, d);
    assert_int_equal(rs__sums_counts(ss, "ns/web", "uid-1", sel, tmpl, list, &c, &n), 0);
    assert_int_equal(n.active, 0);
    assert_int_equal(n.ready, 0);
    assert_int_equal(n.release, 0);

    /* Gone. A pod of another ReplicaSet of that name is not counted. */
    rs__sums_event(ss, d, NULL);
    json_t *other = json_deep_copy(a);
    json_object_set_new(
        json_array_get(json_object_get(json_object_get(other, "metadata"), "ownerReferences"), 0),
        "uid", json_string("uid-2"));
    rs__sums_event(ss, NULL, other);
    json_object_clear(c.pods);
    assert_int_equal(rs__sums_counts(ss, "ns/web", "uid-1", sel, tmpl, list, &c, &n), 0);
    assert_int_equal(n.active, 0);

    json_decref(a);
    json_decref(b);
    json_decref(d);
    json_decref(other);
    json_decref(sel);
    json_decref(tmpl);
    json_decref(c.pods);
    rs__sums_free(ss);
}

/* Random events against a stand-in cache; after each, the summary of
 * ns/web (built at a random moment, for a random one of its uids, and
 * built again when its selector or template changes) equals a count
 * from scratch. Builds also land between a cache change and its event, as
 * they may in the controller. */
static void test_sums_random(void **state)
{
    (void)state;
    srand(7);
    json_t *sels[] = {J("{'matchLabels':{'app':'web'}}"),
                      J("{'matchExpressions':[{'key':'tier','operator':'Exists'}]}"), NULL};
    json_t *tmpls[] = {J("{'app':'web'}"), J("{'app':'web','tier':'fe'}"), NULL};
    for (int round = 0; round < 20; round++) {
        rs__sums_t *ss = rs__sums_new("ReplicaSet");
        cache_t c = {json_object(), round % 2 ? "uid-1" : "uid-2", NULL};
        int si = 0, ti = 0, built = 0;
        for (int step = 0; step < 400; step++) {
            char key[32];
            snprintf(key, sizeof key, "p%d", rand() % PODS);
            json_t *old = json_incref(json_object_get(c.pods, key));
            json_t *pod = rand() % 6 ? random_pod((int)strtol(key + 1, NULL, 10)) : NULL;
            if (old && pod && strcmp(ctrl_meta_str(old, "uid"), ctrl_meta_str(pod, "uid")) &&
                rand() % 2) {
                /* another uid under the name: a watch shows a delete, then an add (a relist,
                 * an update from one to the other) */
                json_object_del(c.pods, key);
                rs__sums_event(ss, old, NULL);
                json_decref(old);
                old = NULL;
            }
            if (pod)
                json_object_set(c.pods, key, pod);
            else
                json_object_del(c.pods, key);
            rs__counts_t n, want;
            if (rand() % 10 == 0) { /* a build between the cache change and its event */
                if (rand() % 2)
                    si = rand() % 3;
                else
                    ti = rand() % 3;
                assert_int_equal(
                    rs__sums_counts(ss, "ns/web", c.owner_uid, sels[si], tmpls[ti], list, &c, &n),
                    0);
                built = 1;
            }
            if (old || pod) rs__sums_event(ss, old, pod);
            json_decref(old);
            json_decref(pod);
            if (!built) continue;
            assert_int_equal(
                rs__sums_counts(ss, "ns/web", c.owner_uid, sels[si], tmpls[ti], list, &c, &n), 0);
            want = recount(&c, c.owner_uid, sels[si], tmpls[ti]);
            assert_counts(&n, &want);
        }
        json_decref(c.pods);
        rs__sums_free(ss);
    }
    for (int i = 0; i < 2; i++) {
        json_decref(sels[i]);
        json_decref(tmpls[i]);
    }
}

/* Threads: one informer (changes its cache under its lock, then applies the
 * event, as the informer's thread does) and two syncs reading counts with
 * selectors that keep changing (so summaries are built again and again
 * while events arrive). At the end the counts equal a count from scratch.
 * Run under ThreadSanitizer too (make tsan). */
typedef struct conc {
    rs__sums_t *ss;
    cache_t c;
    json_t *sels[2];
    int stop;
    pthread_mutex_t mu; /* guards stop */
} conc_t;

static void *informer_thread(void *arg)
{
    conc_t *x = arg;
    unsigned seed = 11;
    for (int step = 0; step < 3000; step++) {
        char key[32];
        snprintf(key, sizeof key, "p%d", rand_r(&seed) % PODS);
        json_t *pod = NULL;
        if (rand_r(&seed) % 6) {
            srand(rand_r(&seed)); /* random_pod() uses rand(): this thread's alone here */
            pod = random_pod((int)strtol(key + 1, NULL, 10));
        }
        pthread_rwlock_wrlock(x->c.mu);
        json_t *old = json_incref(json_object_get(x->c.pods, key));
        if (pod)
            json_object_set(x->c.pods, key, pod);
        else
            json_object_del(x->c.pods, key);
        pthread_rwlock_unlock(x->c.mu);
        if (old || pod) rs__sums_event(x->ss, old, pod);
        json_decref(old);
        json_decref(pod);
    }
    pthread_mutex_lock(&x->mu);
    x->stop = 1;
    pthread_mutex_unlock(&x->mu);
    return NULL;
}

static void *sync_thread(void *arg)
{
    conc_t *x = arg;
    for (int i = 0;; i++) {
        pthread_mutex_lock(&x->mu);
        int stop = x->stop;
        pthread_mutex_unlock(&x->mu);
        if (stop) break;
        rs__counts_t n;
        assert_int_equal(
            rs__sums_counts(x->ss, "ns/web", "uid-1", x->sels[i / 50 % 2], NULL, list, &x->c, &n),
            0);
    }
    return NULL;
}

static void test_sums_threads(void **state)
{
    (void)state;
    pthread_rwlock_t mu = PTHREAD_RWLOCK_INITIALIZER;
    conc_t x = {.ss = rs__sums_new("ReplicaSet"),
                .c = {json_object(), "uid-1", &mu},
                .sels = {J("{'matchLabels':{'app':'web'}}"), J("{'matchLabels':{'tier':'fe'}}")}};
    pthread_mutex_init(&x.mu, NULL);
    pthread_t inf, syncs[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&syncs[i], NULL, sync_thread, &x), 0);
    assert_int_equal(pthread_create(&inf, NULL, informer_thread, &x), 0);
    pthread_join(inf, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(syncs[i], NULL);
    rs__counts_t n, want;
    assert_int_equal(rs__sums_counts(x.ss, "ns/web", "uid-1", x.sels[0], NULL, list, &x.c, &n), 0);
    x.c.mu = NULL;
    want = recount(&x.c, "uid-1", x.sels[0], NULL);
    assert_counts(&n, &want);
    rs__sums_free(x.ss);
    json_decref(x.c.pods);
    json_decref(x.sels[0]);
    json_decref(x.sels[1]);
    pthread_mutex_destroy(&x.mu);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc_selector),  cmocka_unit_test(test_rs_selector),
        cmocka_unit_test(test_sums_by_hand), cmocka_unit_test(test_sums_random),
        cmocka_unit_test(test_sums_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
