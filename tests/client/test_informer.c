/*
 * test_informer.c -- informers (src/client/informer.c) against a real
 * kplane server.
 *
 * What it proves:
 *  - The initial sync calls on_add once per existing object and then marks
 *    the informer synced; adds, updates and deletes after it arrive once
 *    each, in order, with the cache already updated when the handler runs.
 *  - The built-in indexes (namespace, controller uid, node name) follow
 *    adds, updates (a pod bound to a node moves into that node's set) and
 *    deletes; kc_informer_get/list read the cache.
 *  - A label selector: an object that stops matching leaves the cache.
 *  - A transform (managedFields stripped) applies to listed and watched
 *    objects before they are cached.
 *  - Resync calls on_update(obj, obj) for every cached object.
 *  - A server killed and restarted on the same data dir, after changes
 *    made while the informer was away (by a second server on that dir),
 *    ends in a relist (410 from the new server's watch cache): on_delete
 *    for what vanished, on_add for what is new, and the watch resumes.
 *  - 10,000 objects: sync, then a burst of watch events, in reasonable time.
 *  - Shared informers (kc_factory_t): one informer per resource and
 *    selectors; a handler or an index added to a running, synced informer
 *    gets what is cached (once) and every later event (once); a removed
 *    handler gets nothing more.
 *  - Polling instead of watching: the same adds, updates and deletes, once
 *    each, from lists every interval; quiet lists counted as unchanged; no
 *    watch opened.
 *  - Without a server: wait_synced times out, stop is prompt; handlers and
 *    indexes added after start; kc_key_of and the index functions.
 *
 * Handlers only record into a mutex-protected log; the main thread waits on
 * it and asserts.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client/informer.h"
#include "kpserver.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "testutil.h"

/* ---- the event log the handlers fill ---- */

typedef struct rec {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    json_t *log; /* [[op, key, rv, old_rv], ...] */
    int resyncs; /* on_update with old == obj */
    kc_informer_t *inf;
    int cache_bad; /* a handler did not find its event applied */
} rec_t;

static void rec_init(rec_t *r)
{
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    clock_cond_init(&r->cv);
    r->log = json_array();
}

static void rec_free(rec_t *r)
{
    json_decref(r->log);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
}

static const char *rv_str(const json_t *o)
{
    const char *rv =
        json_string_value(json_object_get(json_object_get(o, "metadata"), "resourceVersion"));
    return rv ? rv : "";
}

static void rec_push(rec_t *r, const char *op, const json_t *old, const json_t *obj)
{
    char key[300] = "";
    kc_key_of(obj, key, sizeof key);
    /* Invariant 4 of informer.c: the cache shows the event already. */
    if (r->inf) {
        json_t *c = kc_informer_get(r->inf, key);
        int ok = strcmp(op, "delete") ? c == obj : c == NULL;
        json_decref(c);
        if (!ok) r->cache_bad++;
    }
    pthread_mutex_lock(&r->mu);
    json_array_append_new(r->log,
                          json_pack("[s,s,s,s]", op, key, rv_str(obj), old ? rv_str(old) : ""));
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static void h_add(void *arg, const json_t *obj)
{
    rec_push(arg, "add", NULL, obj);
}
static void h_delete(void *arg, const json_t *obj)
{
    rec_push(arg, "delete", NULL, obj);
}
static void h_update(void *arg, const json_t *old, const json_t *obj)
{
    rec_t *r = arg;
    if (old == obj) {
        pthread_mutex_lock(&r->mu);
        r->resyncs++;
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
        return;
    }
    rec_push(r, "update", old, obj);
}

/* Wait until the log has n entries (or timeout_ms passed): the count. */
static size_t rec_wait(rec_t *r, size_t n, int timeout_ms)
{
    struct timespec until = clock_deadline_ms(timeout_ms);
    pthread_mutex_lock(&r->mu);
    while (json_array_size(r->log) < n)
        if (pthread_cond_timedwait(&r->cv, &r->mu, &until)) break;
    size_t got = json_array_size(r->log);
    pthread_mutex_unlock(&r->mu);
    return got;
}

/* Does the log hold [op, key] (from index `from` on)? */
static int rec_has(rec_t *r, size_t from, const char *op, const char *key)
{
    pthread_mutex_lock(&r->mu);
    int found = 0;
    for (size_t i = from; i < json_array_size(r->log) && !found; i++) {
        json_t *e = json_array_get(r->log, i);
        found = !strcmp(json_string_value(json_array_get(e, 0)), op) &&
                !strcmp(json_string_value(json_array_get(e, 1)), key);
    }
    pthread_mutex_unlock(&r->mu);
    return found;
}

static void expect_entry(rec_t *r, size_t i, const char *op, const char *key)
{
    pthread_mutex_lock(&r->mu);
    json_t *e = json_incref(json_array_get(r->log, i));
    pthread_mutex_unlock(&r->mu);
    assert_non_null(e);
    assert_string_equal(json_string_value(json_array_get(e, 0)), op);
    assert_string_equal(json_string_value(json_array_get(e, 1)), key);
    json_decref(e);
}

/* ---- fixtures ---- */

typedef struct fx {
    kpserver_t s;
    kc_config_t cfg;
    json_t *storage;
    kc_client_t *c;
} fx_t;

static int fx_setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    if (!f) return -1;
    /* The API server alone: no scheduler or nodes acting on test objects. */
    static const char *const quiet[] = {"--no-controllers", "--no-scheduler", "--nodes", "0", NULL};
    kpserver_start(&f->s, quiet);
    if (kpserver_client(&f->s, &f->cfg, &f->storage, &f->c)) return -1;
    *state = f;
    return 0;
}

static int fx_teardown(void **state)
{
    fx_t *f = *state;
    kc_client_free(f->c);
    json_decref(f->storage);
    kpserver_stop(&f->s);
    free(f);
    return 0;
}

static json_t *cm(const char *ns, const char *name)
{
    return json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                     "metadata", "name", name, "namespace", ns, "data", "k", "v");
}

static void make_ns(kc_client_t *c, const char *name)
{
    json_t *ns = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata",
                           "name", name);
    assert_int_equal(kc_create(c, &kc_namespaces, NULL, ns, NULL, NULL), 0);
    json_decref(ns);
}

static void create_cm(kc_client_t *c, const char *ns, const char *name)
{
    json_t *o = cm(ns, name);
    assert_int_equal(kc_create(c, &kc_configmaps, ns, o, NULL, NULL), 0);
    json_decref(o);
}

static kc_informer_t *start_informer(kc_client_t *c, const kc_resource_t *r, const char *ns,
                                     const char *lsel, int resync_ms, rec_t *rec)
{
    kc_informer_t *inf = NULL;
    assert_int_equal(kc_informer_new(c, r, ns, lsel, NULL, resync_ms, &inf), 0);
    kc_handlers_t h = {h_add, h_update, h_delete, rec};
    assert_int_equal(kc_informer_add_handlers(inf, &h), 0);
    assert_int_equal(kc_informer_add_index(inf, "namespace", kc_index_namespace), 0);
    assert_int_equal(kc_informer_add_index(inf, "controller", kc_index_controller), 0);
    assert_int_equal(kc_informer_add_index(inf, "node", kc_index_node), 0);
    rec->inf = inf;
    assert_int_equal(kc_informer_start(inf), 0);
    return inf;
}

static size_t count(kc_informer_t *inf, const char *index, const char *value)
{
    json_t **objs = NULL;
    size_t n = 0;
    assert_int_equal(kc_informer_list(inf, index, value, &objs, &n), 0);
    kc_objs_free(objs, n);
    return n;
}

/* ---- without a server ---- */

static void test_key_and_index_fns(void **state)
{
    (void)state;
    char buf[64], vals[4][KC_INDEX_VALUE_MAX];
    json_t *o = json_pack("{s:{s:s,s:s,s:[{s:s},{s:s,s:b},{s:s,s:b}]},s:{s:s}}", "metadata", "name",
                          "p", "namespace", "ns", "ownerReferences", "uid", "a", "uid", "b",
                          "controller", 0, "uid", "c", "controller", 1, "spec", "nodeName", "n1");
    assert_int_equal(kc_key_of(o, buf, sizeof buf), 0);
    assert_string_equal(buf, "ns/p");
    assert_int_equal(kc_key_of(o, buf, 4), KP_ETOOLARGE);
    assert_int_equal(kc_index_namespace(o, vals, 4), 1);
    assert_string_equal(vals[0], "ns");
    assert_int_equal(kc_index_controller(o, vals, 4), 1);
    assert_string_equal(vals[0], "c");
    assert_int_equal(kc_index_node(o, vals, 4), 1);
    assert_string_equal(vals[0], "n1");
    assert_int_equal(kc_index_node(o, vals, 0), 0);
    json_decref(o);

    o = json_pack("{s:{s:s}}", "metadata", "name", "node-1");
    assert_int_equal(kc_key_of(o, buf, sizeof buf), 0);
    assert_string_equal(buf, "node-1");
    assert_int_equal(kc_index_namespace(o, vals, 4), 0);
    assert_int_equal(kc_index_controller(o, vals, 4), 0);
    assert_int_equal(kc_index_node(o, vals, 4), 0);
    json_decref(o);
    o = json_pack("{s:{s:s}}", "metadata", "namespace", "x");
    assert_int_equal(kc_key_of(o, buf, sizeof buf), KP_EINVAL);
    json_decref(o);
    assert_int_equal(kc_key_of(NULL, buf, sizeof buf), KP_EINVAL);
}

static void test_no_server(void **state)
{
    (void)state;
    kc_config_t cfg = {.server = "http://127.0.0.1:1", .timeout_ms = 1000};
    kc_client_t *c = NULL;
    assert_int_equal(kc_client_new(&cfg, &c), 0);
    kc_informer_t *inf = NULL;
    assert_int_equal(kc_informer_new(c, &kc_pods, NULL, NULL, NULL, -1, &inf), KP_EINVAL);
    assert_int_equal(kc_informer_new(c, &kc_pods, NULL, "a=b", "spec.nodeName=x", 0, &inf), 0);
    assert_int_equal(kc_informer_wait_synced(inf, 10), KP_ECLOSED); /* not started */
    assert_int_equal(kc_informer_add_index(inf, "n", kc_index_node), 0);
    assert_int_equal(kc_informer_add_index(inf, "n", kc_index_node), KP_EEXIST);
    assert_int_equal(kc_informer_add_index(inf, "", kc_index_node), KP_EINVAL);
    assert_int_equal(kc_informer_start(inf), 0);
    assert_int_equal(kc_informer_start(inf), KP_EBUSY);
    kc_handlers_t h = {0};
    assert_int_equal(kc_informer_add_handlers(inf, &h), 0); /* running: fine too */
    assert_int_equal(kc_informer_add_handlers(inf, NULL), KP_EINVAL);
    kc_informer_remove_handlers(inf, NULL);
    assert_int_equal(kc_informer_add_index(inf, "m", kc_index_node), 0);
    assert_int_equal(kc_informer_add_index(inf, "m", kc_index_node), KP_EEXIST);
    assert_int_equal(kc_informer_wait_synced(inf, 300), KP_ETIMEDOUT);
    assert_int_equal(kc_informer_synced(inf), 0);
    assert_null(kc_informer_get(inf, "x"));
    assert_int_equal(count(inf, NULL, NULL), 0);
    json_t **objs = (json_t **)1;
    size_t n = 1;
    assert_int_equal(kc_informer_list(inf, "nope", "x", &objs, &n), KP_EINVAL);
    assert_null(objs);
    assert_int_equal(n, 0);
    char rv[16];
    assert_string_equal(kc_informer_last_rv(inf, rv, sizeof rv), "");
    double t0 = (double)clock_mono_ns() / 1e9;
    kc_informer_stop(inf);
    assert_true((double)clock_mono_ns() / 1e9 - t0 < 1.5);
    kc_informer_stop(inf); /* twice is fine */
    kc_informer_free(inf);
    kc_informer_free(NULL);
    kc_client_free(c);
}

/* ---- against a server ---- */

static void test_sync_and_events(void **state)
{
    fx_t *f = *state;
    make_ns(f->c, "inf");
    char name[32];
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "cm-%d", i);
        create_cm(f->c, "inf", name);
    }
    create_cm(f->c, "default", "elsewhere");
    rec_t r;
    rec_init(&r);
    kc_informer_t *inf = start_informer(f->c, &kc_configmaps, "inf", NULL, 0, &r);
    assert_int_equal(kc_informer_wait_synced(inf, 10000), 0);
    assert_int_equal(kc_informer_synced(inf), 1);
    /* Synced means delivered: all five adds are in already. */
    assert_int_equal(rec_wait(&r, 5, 0), 5);
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "inf/cm-%d", i);
        assert_true(rec_has(&r, 0, "add", name));
        json_t *o = kc_informer_get(inf, name);
        assert_non_null(o);
        json_decref(o);
    }
    assert_null(kc_informer_get(inf, "default/elsewhere"));
    assert_int_equal(count(inf, NULL, NULL), 5);
    assert_int_equal(count(inf, "namespace", "inf"), 5);
    char rv[64];
    assert_true(strlen(kc_informer_last_rv(inf, rv, sizeof rv)) > 0);

    /* add, update, delete: once each, in order */
    create_cm(f->c, "inf", "x");
    json_t *o = NULL;
    assert_int_equal(kc_get(f->c, &kc_configmaps, "inf", "x", &o), 0);
    json_object_set_new(json_object_get(o, "data"), "k", json_string("v2"));
    assert_int_equal(kc_update(f->c, &kc_configmaps, "inf", o, NULL, NULL, NULL), 0);
    json_decref(o);
    assert_int_equal(kc_delete(f->c, &kc_configmaps, "inf", "x", NULL, NULL), 0);
    assert_int_equal(rec_wait(&r, 8, 10000), 8);
    expect_entry(&r, 5, "add", "inf/x");
    expect_entry(&r, 6, "update", "inf/x");
    expect_entry(&r, 7, "delete", "inf/x");
    pthread_mutex_lock(&r.mu);
    json_t *upd = json_array_get(r.log, 6);
    long long newrv = strtoll(json_string_value(json_array_get(upd, 2)), NULL, 10);
    long long oldrv = strtoll(json_string_value(json_array_get(upd, 3)), NULL, 10);
    pthread_mutex_unlock(&r.mu);
    assert_true(newrv > oldrv);
    assert_null(kc_informer_get(inf, "inf/x"));
    tu_sleep_ms(300);
    assert_int_equal(rec_wait(&r, 9, 0), 8); /* nothing more */
    assert_int_equal(r.cache_bad, 0);
    assert_true(strtoll(kc_informer_last_rv(inf, rv, sizeof rv), NULL, 10) >= newrv);
    assert_int_equal(r.resyncs, 0);
    kc_informer_free(inf);
    rec_free(&r);
}

/* Polling (kc_informer_set_poll): the same events a watch gives, from
 * lists every interval, each only once; lists that found nothing changed
 * are counted; no watch is opened. */
static void test_poll(void **state)
{
    fx_t *f = *state;
    make_ns(f->c, "poll");
    create_cm(f->c, "poll", "a");
    create_cm(f->c, "poll", "b");
    rec_t r;
    rec_init(&r);
    kc_informer_t *inf = NULL;
    assert_int_equal(kc_informer_new(f->c, &kc_configmaps, "poll", NULL, NULL, 0, &inf), 0);
    assert_int_equal(kc_informer_set_poll(inf, -1), KP_EINVAL);
    assert_int_equal(kc_informer_set_poll(inf, 100), 0);
    kc_handlers_t h = {h_add, h_update, h_delete, &r};
    assert_int_equal(kc_informer_add_handlers(inf, &h), 0);
    r.inf = inf;
    kc_client_stats_t before;
    kc_client_stats(f->c, &before);
    assert_int_equal(kc_informer_start(inf), 0);
    assert_int_equal(kc_informer_set_poll(inf, 200), KP_EBUSY);
    assert_int_equal(kc_informer_wait_synced(inf, 10000), 0);
    assert_int_equal(rec_wait(&r, 2, 0), 2);

    /* Quiet: polls answer "nothing changed" and hand nothing to handlers. */
    tu_sleep_ms(550);
    assert_int_equal(rec_wait(&r, 3, 0), 2);
    kc_informer_stats_t st;
    kc_informer_stats(inf, &st);
    assert_true(st.lists >= 4);
    assert_true(st.lists_unchanged >= 3);
    assert_int_equal(st.lists_unchanged, st.lists - 1);
    assert_int_equal(st.events, 2);
    assert_int_equal(st.objects, 2 * st.lists); /* every list brought both again */

    /* add, update, delete: each seen once, from a later list */
    create_cm(f->c, "poll", "c");
    assert_int_equal(rec_wait(&r, 3, 5000), 3);
    expect_entry(&r, 2, "add", "poll/c");
    json_t *o = NULL;
    assert_int_equal(kc_get(f->c, &kc_configmaps, "poll", "a", &o), 0);
    json_object_set_new(json_object_get(o, "data"), "k", json_string("v2"));
    assert_int_equal(kc_update(f->c, &kc_configmaps, "poll", o, NULL, NULL, NULL), 0);
    json_decref(o);
    assert_int_equal(rec_wait(&r, 4, 5000), 4);
    expect_entry(&r, 3, "update", "poll/a");
    assert_int_equal(kc_delete(f->c, &kc_configmaps, "poll", "b", NULL, NULL), 0);
    assert_int_equal(rec_wait(&r, 5, 5000), 5);
    expect_entry(&r, 4, "delete", "poll/b");
    tu_sleep_ms(350);
    assert_int_equal(rec_wait(&r, 6, 0), 5); /* nothing twice */
    assert_int_equal(r.cache_bad, 0);
    kc_informer_stats(inf, &st);
    assert_int_equal(st.events, 5);
    kc_client_stats_t after;
    kc_client_stats(f->c, &after);
    assert_int_equal(after.watches, before.watches); /* it never watched */
    assert_null(kc_informer_get(inf, "poll/b"));
    kc_informer_free(inf);
    rec_free(&r);
}

static json_t *owned_pod(const char *ns, const char *name, const char *uid, int controller)
{
    json_t *p = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:[{s:s,s:s}]}}", "apiVersion", "v1", "kind",
                          "Pod", "metadata", "name", name, "namespace", ns, "spec", "containers",
                          "name", "app", "image", "busybox");
    if (uid)
        json_object_set_new(json_object_get(p, "metadata"), "ownerReferences",
                            json_pack("[{s:s,s:s,s:s,s:s,s:b}]", "apiVersion", "apps/v1", "kind",
                                      "ReplicaSet", "name", "rs", "uid", uid, "controller",
                                      controller));
    return p;
}

static void test_indexes(void **state)
{
    fx_t *f = *state;
    make_ns(f->c, "ia");
    make_ns(f->c, "ib");
    struct {
        const char *ns, *name, *uid;
        int ctl;
    } pods[] = {{"ia", "p1", "u1", 1},
                {"ia", "p2", "u1", 1},
                {"ib", "p3", "u2", 1},
                {"ib", "p4", "u3", 0},
                {"ib", "p5", NULL, 0}};
    for (size_t i = 0; i < 5; i++) {
        json_t *p = owned_pod(pods[i].ns, pods[i].name, pods[i].uid, pods[i].ctl);
        assert_int_equal(kc_create(f->c, &kc_pods, NULL, p, NULL, NULL), 0);
        json_decref(p);
    }
    rec_t r;
    rec_init(&r);
    kc_informer_t *inf = start_informer(f->c, &kc_pods, NULL, NULL, 0, &r);
    assert_int_equal(kc_informer_wait_synced(inf, 10000), 0);
    assert_int_equal(count(inf, NULL, NULL), 5);
    assert_int_equal(count(inf, "namespace", "ia"), 2);
    assert_int_equal(count(inf, "namespace", "ib"), 3);
    assert_int_equal(count(inf, "controller", "u1"), 2);
    assert_int_equal(count(inf, "controller", "u2"), 1);
    assert_int_equal(count(inf, "controller", "u3"), 0); /* not a controller ref */
    assert_int_equal(count(inf, "node", "n1"), 0);
    json_t **objs = NULL;
    size_t n = 0;
    assert_int_equal(kc_informer_list(inf, "controller", "u1", &objs, &n), 0);
    assert_int_equal(n, 2);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(objs[i], "metadata"), "namespace")),
            "ia");
    kc_objs_free(objs, n);
    assert_int_equal(kc_informer_list(inf, "node", NULL, &objs, &n), KP_EINVAL);

    /* Binding moves p1 into node n1's set; p3 into n2's. */
    assert_int_equal(kc_bind(f->c, "ia", "p1", "n1"), 0);
    assert_int_equal(kc_bind(f->c, "ib", "p3", "n2"), 0);
    assert_int_equal(rec_wait(&r, 7, 10000), 7);
    assert_int_equal(count(inf, "node", "n1"), 1);
    assert_int_equal(count(inf, "node", "n2"), 1);
    /* Deleting p1 takes it out of every index. */
    json_t *opts = json_pack("{s:i}", "gracePeriodSeconds", 0);
    assert_int_equal(kc_delete(f->c, &kc_pods, "ia", "p1", opts, NULL), 0);
    json_decref(opts);
    size_t want = 8;
    /* a graceful delete may first be an update (deletionTimestamp) */
    json_t *gone = kc_informer_get(inf, "ia/p1");
    for (int i = 0; i < 50 && gone; i++) {
        json_decref(gone);
        tu_sleep_ms(100);
        gone = kc_informer_get(inf, "ia/p1");
    }
    assert_null(gone);
    assert_true(rec_wait(&r, want, 0) >= want);
    assert_true(rec_has(&r, 7, "delete", "ia/p1"));
    assert_int_equal(count(inf, "node", "n1"), 0);
    assert_int_equal(count(inf, "namespace", "ia"), 1);
    assert_int_equal(count(inf, "controller", "u1"), 1);
    assert_int_equal(count(inf, NULL, NULL), 4);
    assert_int_equal(r.cache_bad, 0);
    kc_informer_free(inf);
    rec_free(&r);
}

static void test_selector(void **state)
{
    fx_t *f = *state;
    make_ns(f->c, "sel");
    json_t *o = cm("sel", "a");
    json_object_set_new(json_object_get(o, "metadata"), "labels", json_pack("{s:s}", "app", "x"));
    assert_int_equal(kc_create(f->c, &kc_configmaps, "sel", o, NULL, NULL), 0);
    json_decref(o);
    create_cm(f->c, "sel", "b");
    rec_t r;
    rec_init(&r);
    kc_informer_t *inf = start_informer(f->c, &kc_configmaps, "sel", "app=x", 0, &r);
    assert_int_equal(kc_informer_wait_synced(inf, 10000), 0);
    assert_int_equal(count(inf, NULL, NULL), 1);
    json_t *p = json_pack("{s:{s:{s:n}}}", "metadata", "labels", "app");
    assert_int_equal(
        kc_patch(f->c, &kc_configmaps, "sel", "a", NULL, KC_PATCH_MERGE, p, NULL, NULL, NULL), 0);
    json_decref(p);
    assert_int_equal(rec_wait(&r, 2, 10000), 2);
    expect_entry(&r, 1, "delete", "sel/a");
    assert_int_equal(count(inf, NULL, NULL), 0);
    kc_informer_free(inf);
    rec_free(&r);
}

/* A transform runs on every object before it is cached: the listed one and
 * the watched one both lose their managedFields (the server sets them),
 * and the rest of the object stays. It cannot be set once started. */
static void test_transform(void **state)
{
    fx_t *f = *state;
    make_ns(f->c, "tf");
    create_cm(f->c, "tf", "listed");
    json_t *got;
    assert_int_equal(kc_get(f->c, &kc_configmaps, "tf", "listed", &got), 0);
    assert_non_null(json_object_get(json_object_get(got, "metadata"), "managedFields"));
    json_decref(got);
    rec_t r;
    rec_init(&r);
    kc_informer_t *inf = NULL;
    assert_int_equal(kc_informer_new(f->c, &kc_configmaps, "tf", NULL, NULL, 0, &inf), 0);
    assert_int_equal(kc_informer_set_transform(inf, kc_transform_strip_managed_fields, NULL), 0);
    kc_handlers_t h = {h_add, h_update, h_delete, &r};
    assert_int_equal(kc_informer_add_handlers(inf, &h), 0);
    r.inf = inf;
    assert_int_equal(kc_informer_start(inf), 0);
    assert_int_equal(kc_informer_set_transform(inf, NULL, NULL), KP_EBUSY);
    assert_int_equal(kc_informer_wait_synced(inf, 10000), 0);
    create_cm(f->c, "tf", "watched");
    assert_int_equal(rec_wait(&r, 2, 10000), 2);
    assert_int_equal(r.cache_bad, 0);
    static const char *const keys[] = {"tf/listed", "tf/watched"};
    for (int i = 0; i < 2; i++) {
        json_t *o = kc_informer_get(inf, keys[i]);
        assert_non_null(o);
        const json_t *meta = json_object_get(o, "metadata");
        assert_null(json_object_get(meta, "managedFields"));
        assert_non_null(json_object_get(meta, "uid"));
        assert_string_equal(json_string_value(json_object_get(json_object_get(o, "data"), "k")),
                            "v");
        json_decref(o);
    }
    kc_informer_free(inf);
    rec_free(&r);
}

static void test_resync(void **state)
{
    fx_t *f = *state;
    make_ns(f->c, "rsy");
    create_cm(f->c, "rsy", "a");
    create_cm(f->c, "rsy", "b");
    rec_t r;
    rec_init(&r);
    kc_informer_t *inf = start_informer(f->c, &kc_configmaps, "rsy", NULL, 200, &r);
    assert_int_equal(kc_informer_wait_synced(inf, 10000), 0);
    tu_sleep_ms(1100);
    pthread_mutex_lock(&r.mu);
    int resyncs = r.resyncs;
    pthread_mutex_unlock(&r.mu);
    /* two objects, every 200 ms for ~1 s */
    assert_true(resyncs >= 6);
    assert_true(resyncs <= 14);
    assert_int_equal(resyncs % 2, 0);
    assert_int_equal(rec_wait(&r, 3, 0), 2); /* no real updates */
    kc_informer_free(inf);
    rec_free(&r);
}

static void test_bookmark_moves_rv(void **state)
{
    fx_t *f = *state;
    make_ns(f->c, "bm");
    rec_t r;
    rec_init(&r);
    kc_informer_t *inf = start_informer(f->c, &kc_configmaps, "bm", NULL, 0, &r);
    assert_int_equal(kc_informer_wait_synced(inf, 10000), 0);
    /* A change the informer does not see (another namespace) ... */
    json_t *o = cm("default", "bm-elsewhere"), *out = NULL;
    assert_int_equal(kc_create(f->c, &kc_configmaps, "default", o, &out, NULL), 0);
    long long want = strtoll(rv_str(out), NULL, 10);
    json_decref(out);
    json_decref(o);
    /* ... reaches its resourceVersion through a bookmark (every 10 s). */
    char rv[64];
    long long got = 0;
    for (int i = 0; i < 150 && got < want; i++) {
        tu_sleep_ms(100);
        got = strtoll(kc_informer_last_rv(inf, rv, sizeof rv), NULL, 10);
    }
    assert_true(got >= want);
    assert_int_equal(rec_wait(&r, 1, 0), 0); /* and no handler saw it */
    kc_informer_free(inf);
    rec_free(&r);
}

typedef struct maker {
    pthread_t t;
    kc_client_t *c;
    const char *ns;
    int from, to, fails;
} maker_t;

static void *make_range(void *arg)
{
    maker_t *m = arg;
    for (int i = m->from; i < m->to; i++) {
        char name[32];
        snprintf(name, sizeof name, "o-%05d", i);
        json_t *o = cm(m->ns, name);
        if (kc_create(m->c, &kc_configmaps, m->ns, o, NULL, NULL)) m->fails++;
        json_decref(o);
    }
    return NULL;
}

static void make_many(kc_client_t *c, const char *ns, int from, int to)
{
    maker_t m[8];
    int per = (to - from + 7) / 8;
    for (int i = 0; i < 8; i++) {
        int a = from + i * per, b = a + per < to ? a + per : to;
        m[i] = (maker_t){.c = c, .ns = ns, .from = a, .to = b};
        assert_int_equal(pthread_create(&m[i].t, NULL, make_range, &m[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(m[i].t, NULL);
        assert_int_equal(m[i].fails, 0);
    }
}

static void test_ten_thousand(void **state)
{
    fx_t *f = *state;
    make_ns(f->c, "big");
    int64_t tm = clock_mono_ns();
    make_many(f->c, "big", 0, 8000);
    fprintf(stderr, "  8,000 creates: %.2f s\n", (double)(clock_mono_ns() - tm) / 1e9);
    rec_t r;
    rec_init(&r);
    r.inf = NULL; /* skip the per-event cache check: this is about volume */
    kc_informer_t *inf = NULL;
    assert_int_equal(kc_informer_new(f->c, &kc_configmaps, "big", NULL, NULL, 0, &inf), 0);
    kc_handlers_t h = {h_add, h_update, h_delete, &r};
    assert_int_equal(kc_informer_add_handlers(inf, &h), 0);
    assert_int_equal(kc_informer_add_index(inf, "namespace", kc_index_namespace), 0);
    int64_t t0 = clock_mono_ns();
    assert_int_equal(kc_informer_start(inf), 0);
    assert_int_equal(kc_informer_wait_synced(inf, 60000), 0);
    assert_int_equal(rec_wait(&r, 8000, 0), 8000);
    fprintf(stderr, "  synced: %.2f s\n", (double)(clock_mono_ns() - t0) / 1e9);
    /* 2,000 more arrive through the watch. */
    make_many(f->c, "big", 8000, 10000);
    assert_int_equal(rec_wait(&r, 10000, 60000), 10000);
    double dt = (double)(clock_mono_ns() - t0) / 1e9;
    fprintf(stderr, "  10,000 objects: synced and watched in %.2f s\n", dt);
    assert_int_equal(count(inf, NULL, NULL), 10000);
    assert_int_equal(count(inf, "namespace", "big"), 10000);
    json_t *o = kc_informer_get(inf, "big/o-09999");
    assert_non_null(o);
    json_decref(o);
    kc_informer_free(inf);
    rec_free(&r);
}

/* A handler that stops its own informer: no deadlock, free joins later. */
typedef struct selfstop {
    kc_informer_t *inf;
    atomic_int adds;
} selfstop_t;

static void stop_on_add(void *arg, const json_t *obj)
{
    (void)obj;
    selfstop_t *x = arg;
    if (atomic_fetch_add(&x->adds, 1) == 0) kc_informer_stop(x->inf);
}

static void test_stop_from_handler(void **state)
{
    fx_t *f = *state;
    make_ns(f->c, "selfstop");
    create_cm(f->c, "selfstop", "a");
    create_cm(f->c, "selfstop", "b");
    selfstop_t x = {0};
    assert_int_equal(kc_informer_new(f->c, &kc_configmaps, "selfstop", NULL, NULL, 0, &x.inf), 0);
    kc_handlers_t h = {.on_add = stop_on_add, .arg = &x};
    assert_int_equal(kc_informer_add_handlers(x.inf, &h), 0);
    assert_int_equal(kc_informer_start(x.inf), 0);
    for (int i = 0; i < 100 && atomic_load(&x.adds) < 2; i++)
        tu_sleep_ms(100);
    assert_int_equal(atomic_load(&x.adds), 2);
    tu_sleep_ms(100);
    assert_int_equal(kc_informer_synced(x.inf), 1); /* the list was delivered */
    create_cm(f->c, "selfstop", "c");
    tu_sleep_ms(300);
    assert_int_equal(atomic_load(&x.adds), 2); /* the list's; nothing watched after */
    kc_informer_free(x.inf);
}

/* Readers on other threads while events flow (run under a sanitizer). */
typedef struct reader {
    pthread_t t;
    kc_informer_t *inf;
    atomic_int *stop;
    long reads;
} reader_t;

static void *read_loop(void *arg)
{
    reader_t *r = arg;
    while (!atomic_load(r->stop)) {
        json_t **objs = NULL;
        size_t n = 0;
        if (!kc_informer_list(r->inf, "namespace", "rd", &objs, &n)) {
            for (size_t i = 0; i < n; i++) {
                /* read-only use of shared objects */
                char key[128];
                kc_key_of(objs[i], key, sizeof key);
                json_t *o = kc_informer_get(r->inf, key);
                char *js = o ? json_dumps(o, JSON_COMPACT) : NULL;
                free(js);
                json_decref(o);
            }
            kc_objs_free(objs, n);
        }
        r->reads++;
    }
    return NULL;
}

static void test_concurrent_readers(void **state)
{
    fx_t *f = *state;
    make_ns(f->c, "rd");
    rec_t r;
    rec_init(&r);
    kc_informer_t *inf = start_informer(f->c, &kc_configmaps, "rd", NULL, 50, &r);
    assert_int_equal(kc_informer_wait_synced(inf, 10000), 0);
    atomic_int stop = 0;
    reader_t rd[4];
    for (int i = 0; i < 4; i++) {
        rd[i] = (reader_t){.inf = inf, .stop = &stop};
        assert_int_equal(pthread_create(&rd[i].t, NULL, read_loop, &rd[i]), 0);
    }
    char name[32];
    for (int i = 0; i < 60; i++) {
        snprintf(name, sizeof name, "c-%d", i % 20);
        if (i < 20) {
            create_cm(f->c, "rd", name);
        } else if (i < 40) {
            json_t *p = json_pack("{s:{s:s}}", "data", "k", "changed");
            assert_int_equal(kc_patch(f->c, &kc_configmaps, "rd", name, NULL, KC_PATCH_MERGE, p,
                                      NULL, NULL, NULL),
                             0);
            json_decref(p);
        } else {
            assert_int_equal(kc_delete(f->c, &kc_configmaps, "rd", name, NULL, NULL), 0);
        }
    }
    assert_int_equal(rec_wait(&r, 60, 10000), 60);
    atomic_store(&stop, 1);
    for (int i = 0; i < 4; i++) {
        pthread_join(rd[i].t, NULL);
        assert_true(rd[i].reads > 0);
    }
    assert_int_equal(count(inf, NULL, NULL), 0);
    assert_int_equal(count(inf, "namespace", "rd"), 0);
    assert_int_equal(r.cache_bad, 0);
    kc_informer_free(inf);
    rec_free(&r);
}

/* ---- restart ---- */

/* Start `kplane server` on the fixture's data dir, listening on `port` (0:
 * any); returns its pid and sets *port. The output goes to out_name. */
static pid_t spawn_server(const kpserver_t *s, int *port, const char *out_name)
{
    char out[700], log[700], data[700], listen_on[64];
    snprintf(out, sizeof out, "%s/%s", s->dir, out_name);
    snprintf(log, sizeof log, "%s/server.log", s->dir);
    snprintf(data, sizeof data, "%s/data", s->dir);
    snprintf(listen_on, sizeof listen_on, "127.0.0.1:%d", *port);
    pid_t pid = fork();
    if (pid < 0) abort();
    if (pid == 0) {
        if (!freopen(out, "w", stdout) || !freopen(log, "a", stderr)) _exit(127);
        execl(KPLANE_BIN, KPLANE_BIN, "server", "--data-dir", data, "--listen", listen_on,
              "--no-controllers", "--no-scheduler", "--nodes", "0", (char *)NULL);
        _exit(127);
    }
    int got = 0;
    for (int i = 0; i < 800 && !got; i++) {
        FILE *fp = fopen(out, "r");
        char line[1024];
        while (fp && fgets(line, sizeof line, fp)) {
            const char *p = strstr(line, "https://127.0.0.1:");
            if (p) got = (int)strtol(p + 18, NULL, 10);
        }
        if (fp) fclose(fp);
        if (!got) {
            if (waitpid(pid, NULL, WNOHANG) == pid) break;
            tu_sleep_ms(25);
        }
    }
    if (!got) {
        fprintf(stderr, "restart: the server did not come up (see %s)\n", log);
        kill(pid, SIGKILL);
        abort();
    }
    *port = got;
    return pid;
}

static void test_restart_relist(void **state)
{
    fx_t *f = *state;
    make_ns(f->c, "rs");
    create_cm(f->c, "rs", "a");
    create_cm(f->c, "rs", "b");
    create_cm(f->c, "rs", "c");
    rec_t r;
    rec_init(&r);
    kc_informer_t *inf = start_informer(f->c, &kc_configmaps, "rs", NULL, 0, &r);
    assert_int_equal(kc_informer_wait_synced(inf, 10000), 0);
    assert_int_equal(rec_wait(&r, 3, 0), 3);

    /* Away: the server dies; another one on the same data changes things. */
    kpserver_kill(&f->s);
    int port2 = 0;
    pid_t pid2 = spawn_server(&f->s, &port2, "server2.out");
    kc_config_t cfg2;
    json_t *st2 = NULL;
    char err[256];
    assert_int_equal(kc_config_load(f->s.kubeconfig, &cfg2, &st2, err, sizeof err), 0);
    kc_client_t *c2 = NULL;
    assert_int_equal(kc_client_new(&cfg2, &c2), 0);
    assert_int_equal(kc_delete(c2, &kc_configmaps, "rs", "a", NULL, NULL), 0);
    create_cm(c2, "rs", "d");
    json_t *o = NULL;
    assert_int_equal(kc_get(c2, &kc_configmaps, "rs", "b", &o), 0);
    json_object_set_new(json_object_get(o, "data"), "k", json_string("changed"));
    assert_int_equal(kc_update(c2, &kc_configmaps, "rs", o, NULL, NULL, NULL), 0);
    json_decref(o);
    kc_client_free(c2);
    json_decref(st2);
    kill(pid2, SIGKILL);
    waitpid(pid2, NULL, 0);

    /* Back on the informer's port: it relists and sees all three changes. */
    int port = f->s.port;
    f->s.pid = spawn_server(&f->s, &port, "server3.out");
    assert_int_equal(port, f->s.port);
    for (int i = 0; i < 300 && !(rec_has(&r, 3, "delete", "rs/a") && rec_has(&r, 3, "add", "rs/d"));
         i++)
        tu_sleep_ms(100);
    assert_true(rec_has(&r, 3, "delete", "rs/a"));
    assert_true(rec_has(&r, 3, "add", "rs/d"));
    assert_true(rec_has(&r, 3, "update", "rs/b"));
    assert_null(kc_informer_get(inf, "rs/a"));
    o = kc_informer_get(inf, "rs/b");
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(json_object_get(o, "data"), "k")),
                        "changed");
    json_decref(o);
    assert_int_equal(count(inf, NULL, NULL), 3);

    /* And the watch runs again. */
    size_t before = rec_wait(&r, 0, 0);
    create_cm(f->c, "rs", "e");
    for (int i = 0; i < 100 && !rec_has(&r, before, "add", "rs/e"); i++)
        tu_sleep_ms(100);
    assert_true(rec_has(&r, before, "add", "rs/e"));
    assert_int_equal(r.cache_bad, 0);
    kc_informer_free(inf);
    rec_free(&r);
}

static void test_shared(void **state)
{
    fx_t *f = *state;
    make_ns(f->c, "sh");
    create_cm(f->c, "sh", "a");
    create_cm(f->c, "sh", "b");
    kc_factory_t *fac = NULL;
    assert_int_equal(kc_factory_new(f->c, 0, &fac), 0);
    kc_informer_t *inf = NULL, *same = NULL, *other = NULL;
    assert_int_equal(kc_factory_informer(fac, &kc_configmaps, "sh", NULL, NULL, &inf), 0);
    assert_int_equal(kc_factory_informer(fac, &kc_configmaps, "sh", "", NULL, &same), 0);
    assert_ptr_equal(inf, same);
    assert_int_equal(kc_factory_informer(fac, &kc_configmaps, "sh", "x=y", NULL, &other), 0);
    assert_ptr_not_equal(inf, other);
    assert_int_equal(kc_informer_wait_synced(inf, 10000), 0); /* started by the factory */

    /* A first user, on the running informer: what is cached, then events. */
    rec_t r1, r2;
    rec_init(&r1);
    rec_init(&r2);
    r1.inf = r2.inf = inf;
    kc_handlers_t h1 = {h_add, h_update, h_delete, &r1};
    assert_int_equal(kc_informer_add_handlers(inf, &h1), 0);
    assert_int_equal(rec_wait(&r1, 2, 0), 2); /* replayed on this thread */
    assert_true(rec_has(&r1, 0, "add", "sh/a") && rec_has(&r1, 0, "add", "sh/b"));
    assert_int_equal(kc_informer_add_index(inf, "namespace", kc_index_namespace), 0);
    assert_int_equal(count(inf, "namespace", "sh"), 2); /* indexed at once */
    create_cm(f->c, "sh", "c");
    assert_int_equal(rec_wait(&r1, 3, 10000), 3);

    /* A second user joins while events flow; each object once, then live. */
    kc_handlers_t h2 = {h_add, h_update, h_delete, &r2};
    assert_int_equal(kc_informer_add_handlers(inf, &h2), 0);
    assert_int_equal(kc_informer_add_index(inf, "namespace", kc_index_namespace), KP_EEXIST);
    assert_int_equal(rec_wait(&r2, 3, 0), 3);
    create_cm(f->c, "sh", "d");
    assert_int_equal(rec_wait(&r1, 4, 10000), 4);
    assert_int_equal(rec_wait(&r2, 4, 10000), 4);
    expect_entry(&r2, 3, "add", "sh/d");

    /* The first leaves: nothing more for it; the second goes on. */
    kc_informer_remove_handlers(inf, &r1);
    assert_int_equal(kc_delete(f->c, &kc_configmaps, "sh", "a", NULL, NULL), 0);
    assert_int_equal(rec_wait(&r2, 5, 10000), 5);
    expect_entry(&r2, 4, "delete", "sh/a");
    tu_sleep_ms(200);
    assert_int_equal(rec_wait(&r1, 5, 0), 4);
    assert_int_equal(r1.cache_bad + r2.cache_bad, 0);
    kc_informer_remove_handlers(inf, &r2);
    kc_factory_free(fac);
    rec_free(&r1);
    rec_free(&r2);
}

/* argv[1], if given, runs only the tests whose names match it (a glob). */
int main(int argc, char **argv)
{
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest offline[] = {
        cmocka_unit_test(test_key_and_index_fns),
        cmocka_unit_test(test_no_server),
    };
    const struct CMUnitTest live[] = {
        cmocka_unit_test(test_sync_and_events),
        cmocka_unit_test(test_indexes),
        cmocka_unit_test(test_selector),
        cmocka_unit_test(test_transform),
        cmocka_unit_test(test_resync),
        cmocka_unit_test(test_stop_from_handler),
        cmocka_unit_test(test_concurrent_readers),
        cmocka_unit_test(test_bookmark_moves_rv),
        cmocka_unit_test(test_ten_thousand),
        cmocka_unit_test(test_shared),
        cmocka_unit_test(test_poll),
    };
    const struct CMUnitTest restart[] = {
        cmocka_unit_test(test_restart_relist),
    };
    int fails = cmocka_run_group_tests_name("offline", offline, NULL, NULL);
    fails += cmocka_run_group_tests_name("live", live, fx_setup, fx_teardown);
    fails += cmocka_run_group_tests_name("restart", restart, fx_setup, fx_teardown);
    return fails;
}
