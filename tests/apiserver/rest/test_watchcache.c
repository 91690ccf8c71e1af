/*
 * test_watchcache.c -- the contract of apiserver/watchcache.h on a real
 * embedded store: the initial load (pages, resourceVersion, ns/name), lists
 * with paging, the pages of a past snapshot (wc_list_at), following the store, watches (types,
 * prev, DELETED's version, prefix filters), watches from the past (replay, the replay/live seam
 * under concurrent writes, KP_ECOMPACTED, KP_EFUTURE), slow watchers, encode-once sharing, budgets
 * in bytes (history eviction, a watcher's queue, the deadline the cache enforces, on_end), writers'
 * offers (taken, too late, never taken, bounded, racing the cache), cancel and close, and a corrupt
 * stored value.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apiserver/rest/watchcache.h"
#include "apiserver/schema/selector.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "store/store.h"
#include "testutil.h"

#define PFX "/registry/configmaps/"

typedef struct fixture {
    char *dir;
    store_t *s;
    wc_t *wc;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    f->dir = tu_tmpdir("watchcache");
    char *url = tu_lmdb_url(f->dir);
    assert_int_equal(store_open(url, NULL, &f->s), 0);
    free(url);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    wc_close(f->wc);
    store_close(f->s);
    tu_rmtree(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

static void open_cache(fixture_t *f, size_t history)
{
    wc_config_t cfg = {.history = history};
    assert_int_equal(wc_open(f->s, PFX, &cfg, &f->wc), 0);
}

/* ---- helpers ---- */

static const char *key_of(char *buf, size_t n, const char *ns, const char *name)
{
    snprintf(buf, n, PFX "%s/%s", ns, name);
    return buf;
}

static const char *cm_json(char *buf, size_t n, const char *ns, const char *name,
                           const char *val)
{
    snprintf(buf, n,
             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\","
             "\"namespace\":\"%s\"},\"data\":{\"v\":\"%s\"}}",
             name, ns, val);
    return buf;
}

/* Create or update ns/name with data.v = val; returns the revision. */
static int64_t put(store_t *s, const char *ns, const char *name, const char *val)
{
    char key[256], js[512];
    int64_t rev = 0;
    key_of(key, sizeof key, ns, name);
    cm_json(js, sizeof js, ns, name, val);
    int rc = store_create(s, key, js, strlen(js), &rev);
    if (rc == KP_EEXIST) rc = store_update(s, key, js, strlen(js), 0, &rev);
    assert_int_equal(rc, 0);
    return rev;
}

static int64_t del(store_t *s, const char *ns, const char *name)
{
    char key[256];
    int64_t rev = 0;
    assert_int_equal(store_delete(s, key_of(key, sizeof key, ns, name), 0, &rev), 0);
    return rev;
}

static int64_t store_rev(store_t *s)
{
    store_status_t st;
    assert_int_equal(store_status(s, &st), 0);
    return st.revision;
}

/* o is version `rev`, carries it in its json, and wc_obj_copy() parses
 * that json whole; its names and kept fields are the json's. */
static void check_obj(const wc_obj_t *o, const char *key, int64_t rev)
{
    assert_non_null(o);
    assert_string_equal(o->key, key);
    assert_int_equal(o->rev, rev);
    char rv[32];
    snprintf(rv, sizeof rv, "%" PRId64, rev);
    assert_int_equal(o->json_len, strlen(o->json));
    json_t *back = json_loads(o->json, 0, NULL), *whole;
    assert_non_null(back);
    json_t *meta = json_object_get(back, "metadata");
    assert_string_equal(json_string_value(json_object_get(meta, "resourceVersion")), rv);
    assert_int_equal(wc_obj_copy(o, &whole), 0);
    assert_true(json_equal(back, whole));
    json_decref(whole);
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    assert_string_equal(o->ns, ns ? ns : "");
    const char *name = json_string_value(json_object_get(meta, "name"));
    assert_string_equal(o->name, name ? name : "");
    assert_string_equal(wc_obj_field(o, "metadata.name"), o->name);
    json_decref(back);
    assert_null(strchr(o->json, '\n'));
}

/* data.v of o (a ConfigMap), copied into a buffer of the caller's. */
#define data_v(o) data_v_in((o), (char[64]){0})
static const char *data_v_in(const wc_obj_t *o, char *buf)
{
    json_t *doc;
    assert_int_equal(wc_obj_copy(o, &doc), 0);
    const char *v = json_string_value(json_object_get(json_object_get(doc, "data"), "v"));
    snprintf(buf, 64, "%s", v ? v : "");
    json_decref(doc);
    return buf;
}

static void next_ok(wc_watcher_t *w, wc_event_t *ev)
{
    int rc = wc_watcher_next(w, 5000, ev);
    assert_int_equal(rc, 0);
}

static void expect_event(wc_watcher_t *w, wc_event_type_t type, int64_t rev, const char *key)
{
    wc_event_t ev;
    next_ok(w, &ev);
    assert_int_equal(ev.type, type);
    assert_int_equal(ev.rev, rev);
    check_obj(ev.obj, key, rev);
    if (type == WC_ADDED)
        assert_null(ev.prev);
    else
        assert_non_null(ev.prev);
    wc_event_clear(&ev);
}

/* ---- initial load ---- */

typedef struct bulk {
    store_t *s;
    int from, to;
} bulk_t;

static void *bulk_run(void *arg)
{
    bulk_t *b = arg;
    char name[32], ns[16];
    for (int i = b->from; i < b->to; i++) {
        snprintf(ns, sizeof ns, "ns%d", i % 3);
        snprintf(name, sizeof name, "cm%05d", i);
        put(b->s, ns, name, "x");
    }
    return NULL;
}

/* n objects through 8 writers at once (group commit keeps it fast). */
static void bulk_create(store_t *s, int n)
{
    pthread_t t[8];
    bulk_t b[8];
    for (int i = 0; i < 8; i++) {
        b[i] = (bulk_t){s, n * i / 8, n * (i + 1) / 8};
        assert_int_equal(pthread_create(&t[i], NULL, bulk_run, &b[i]), 0);
    }
    for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
}

static void test_initial_load(void **state)
{
    fixture_t *f = *state;
    enum { N = 1500 }; /* more than one store_range page */
    bulk_create(f->s, N);
    /* Outside the prefix, and one without metadata. */
    assert_int_equal(store_create(f->s, "/registry/secrets/ns0/s", "{}", 2, NULL), 0);
    const char *bare = "{\"kind\":\"ConfigMap\"}";
    int64_t bare_rev;
    assert_int_equal(store_create(f->s, PFX "zz", bare, strlen(bare), &bare_rev), 0);
    int64_t rev = store_rev(f->s);

    int64_t t0 = clock_mono_ns();
    open_cache(f, 0);
    print_message("wc_open of %d objects: %.1f ms\n", N + 1, (clock_mono_ns() - t0) / 1e6);
    assert_int_equal(wc_revision(f->wc), rev);

    wc_list_t *l;
    assert_int_equal(wc_list(f->wc, PFX, NULL, 0, 0, 0, &l), 0);
    assert_int_equal(l->count, N + 1);
    assert_int_equal(l->rev, rev);
    assert_false(l->more);
    for (size_t i = 0; i < l->count; i++) {
        const wc_obj_t *o = l->objs[i];
        if (i) assert_true(strcmp(l->objs[i - 1]->key, o->key) < 0);
        store_kv_t *kv;
        assert_int_equal(store_get(f->s, o->key, 0, &kv), 0);
        check_obj(o, kv->key, kv->mod_rev);
        free(kv);
        if (i < N) {
            char want[64];
            snprintf(want, sizeof want, PFX "%s/%s", o->ns, o->name);
            assert_string_equal(o->key, want);
            assert_true(strncmp(o->ns, "ns", 2) == 0);
            assert_true(strncmp(o->name, "cm", 2) == 0);
        }
    }
    const wc_obj_t *z = l->objs[N];
    assert_string_equal(z->key, PFX "zz");
    assert_string_equal(z->ns, "");
    assert_string_equal(z->name, "");
    char want[128];
    snprintf(want, sizeof want, "{\"kind\":\"ConfigMap\",\"metadata\":{\"resourceVersion\":\"%" PRId64 "\"}}",
             bare_rev);
    assert_string_equal(z->json, want);
    wc_list_free(l);

    const wc_obj_t *o;
    assert_int_equal(wc_get(f->wc, PFX "ns1/cm00001", &o), 0);
    assert_string_equal(o->ns, "ns1");
    assert_string_equal(o->name, "cm00001");
    wc_obj_unref(o);
    assert_int_equal(wc_get(f->wc, PFX "ns1/nope", &o), KP_ENOTFOUND);
    assert_null(o);
    assert_int_equal(wc_get(f->wc, "/registry/secrets/ns0/s", &o), KP_ENOTFOUND);
}

static void test_open_rejects_non_object(void **state)
{
    fixture_t *f = *state;
    put(f->s, "a", "ok", "1");
    assert_int_equal(store_create(f->s, PFX "b/arr", "[1,2]", 5, NULL), 0);
    wc_t *wc = NULL;
    assert_int_equal(wc_open(f->s, PFX, NULL, &wc), KP_ECORRUPT);
    assert_null(wc);
    assert_int_equal(store_create(f->s, "/registry/other/x", "nope", 4, NULL), 0);
    assert_int_equal(wc_open(f->s, "/registry/other/", NULL, &wc), KP_ECORRUPT);
}

/* ---- lists ---- */

static void test_paging(void **state)
{
    fixture_t *f = *state;
    char name[16];
    for (int i = 0; i < 25; i++) {
        snprintf(name, sizeof name, "c%02d", i);
        put(f->s, i < 15 ? "a" : "b", name, "v");
    }
    open_cache(f, 0);

    size_t sizes[] = {10, 10, 5}, total = 0;
    char after[256] = "";
    for (int page = 0; page < 3; page++) {
        wc_list_t *l;
        assert_int_equal(wc_list(f->wc, PFX, page ? after : NULL, 10, 0, 0, &l), 0);
        assert_int_equal(l->count, sizes[page]);
        assert_int_equal(l->more, page < 2);
        if (page) assert_true(strcmp(l->objs[0]->key, after) > 0);
        snprintf(after, sizeof after, "%s", l->objs[l->count - 1]->key);
        total += l->count;
        wc_list_free(l);
    }
    assert_int_equal(total, 25);

    /* A namespace: exactly its objects; a limit that ends at its last is not `more`. */
    wc_list_t *l;
    assert_int_equal(wc_list(f->wc, PFX "b/", NULL, 10, 0, 0, &l), 0);
    assert_int_equal(l->count, 10);
    assert_false(l->more);
    assert_string_equal(l->objs[0]->key, PFX "b/c15");
    wc_list_free(l);
    assert_int_equal(wc_list(f->wc, PFX "a/", NULL, 15, 0, 0, &l), 0);
    assert_int_equal(l->count, 15);
    assert_false(l->more);
    wc_list_free(l);
    /* after_key before the prefix starts at the prefix; after it, at the next key. */
    assert_int_equal(wc_list(f->wc, PFX "b/", PFX "a/c03", 0, 0, 0, &l), 0);
    assert_int_equal(l->count, 10);
    wc_list_free(l);
    assert_int_equal(wc_list(f->wc, PFX "b/", PFX "b/c20", 2, 0, 0, &l), 0);
    assert_int_equal(l->count, 2);
    assert_string_equal(l->objs[0]->key, PFX "b/c21");
    assert_true(l->more);
    wc_list_free(l);
    assert_int_equal(wc_list(f->wc, PFX "b/", PFX "b/c24", 0, 0, 0, &l), 0);
    assert_int_equal(l->count, 0);
    assert_false(l->more);
    wc_list_free(l);
    assert_int_equal(wc_list(f->wc, PFX "c/", NULL, 0, 0, 0, &l), 0);
    assert_int_equal(l->count, 0);
    wc_list_free(l);
}

/* wc_list_at: the pages of a past snapshot, rebuilt from the current
 * objects and the history: a key changed since keeps its state at the
 * snapshot (updated, deleted, deleted and created again), one created since
 * is left out; a revision the history does not reach is KP_ECOMPACTED. */
static void test_list_at(void **state)
{
    fixture_t *f = *state;
    char name[16];
    int64_t orig[10];
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof name, "c%02d", i);
        orig[i] = put(f->s, "a", name, "v");
    }
    open_cache(f, 100);
    wc_list_t *l;
    assert_int_equal(wc_list(f->wc, PFX, NULL, 4, 0, 0, &l), 0);
    int64_t snap = l->rev;
    char after[256];
    snprintf(after, sizeof after, "%s", l->objs[3]->key); /* a/c03 */
    wc_list_free(l);

    put(f->s, "a", "c05", "new");
    del(f->s, "a", "c06");
    put(f->s, "a", "c04x", "new");
    put(f->s, "a", "c00", "new");
    del(f->s, "a", "c08");
    put(f->s, "a", "c08", "again");
    put(f->s, "a", "c10", "new");
    int64_t last = del(f->s, "a", "c03");
    assert_int_equal(wc_wait(f->wc, last, 5000), 0);

    /* The rest of the snapshot, whole, then in pages of 2. */
    assert_int_equal(wc_list_at(f->wc, PFX, after, 0, snap, &l), 0);
    assert_int_equal(l->rev, snap);
    assert_int_equal(l->count, 6);
    assert_false(l->more);
    char key[256];
    for (int i = 4; i < 10; i++) {
        snprintf(name, sizeof name, "c%02d", i);
        check_obj(l->objs[i - 4], key_of(key, sizeof key, "a", name), orig[i]);
        assert_string_equal(data_v(l->objs[i - 4]), "v");
    }
    wc_list_free(l);
    const char *pages[][2] = {{"c04", "c05"}, {"c06", "c07"}, {"c08", "c09"}};
    for (int page = 0; page < 3; page++) {
        assert_int_equal(wc_list_at(f->wc, PFX, after, 2, snap, &l), 0);
        assert_int_equal(l->count, 2);
        assert_int_equal(l->more, page < 2);
        for (int i = 0; i < 2; i++)
            assert_string_equal(l->objs[i]->key, key_of(key, sizeof key, "a", pages[page][i]));
        snprintf(after, sizeof after, "%s", l->objs[1]->key);
        wc_list_free(l);
    }
    /* From the start: a/c03, deleted since, is still there. */
    assert_int_equal(wc_list_at(f->wc, PFX, NULL, 0, snap, &l), 0);
    assert_int_equal(l->count, 10);
    assert_string_equal(l->objs[3]->key, PFX "a/c03");
    assert_string_equal(data_v(l->objs[0]), "v");
    wc_list_free(l);
    /* Now: the current objects, as wc_list() has them. */
    assert_int_equal(wc_list_at(f->wc, PFX, NULL, 0, wc_revision(f->wc), &l), 0);
    wc_list_t *now;
    assert_int_equal(wc_list(f->wc, PFX, NULL, 0, 0, 0, &now), 0);
    assert_int_equal(l->count, now->count);
    for (size_t i = 0; i < l->count; i++)
        assert_ptr_equal(l->objs[i], now->objs[i]);
    wc_list_free(now);
    wc_list_free(l);

    /* Newer than the cache, or older than its history: ask the store. */
    assert_int_equal(wc_list_at(f->wc, PFX, NULL, 0, wc_revision(f->wc) + 1, &l), KP_ECOMPACTED);
    assert_null(l);
    wc_close(f->wc);
    open_cache(f, 2); /* its history starts now */
    assert_int_equal(wc_list_at(f->wc, PFX, NULL, 0, snap, &l), KP_ECOMPACTED);
    assert_null(l);
}

/* ---- following the store ---- */

static void test_follow(void **state)
{
    fixture_t *f = *state;
    open_cache(f, 0);
    const wc_obj_t *o;
    int64_t r1 = put(f->s, "ns", "a", "one");
    assert_int_equal(wc_wait(f->wc, r1, 5000), 0);
    assert_true(wc_revision(f->wc) >= r1);
    assert_int_equal(wc_get(f->wc, PFX "ns/a", &o), 0);
    check_obj(o, PFX "ns/a", r1);
    assert_string_equal(data_v(o), "one");
    wc_obj_unref(o);

    int64_t r2 = put(f->s, "ns", "a", "two");
    wc_list_t *l;
    assert_int_equal(wc_list(f->wc, PFX, NULL, 0, r2, 5000, &l), 0);
    assert_true(l->rev >= r2);
    assert_int_equal(l->count, 1);
    check_obj(l->objs[0], PFX "ns/a", r2);
    assert_string_equal(data_v(l->objs[0]), "two");
    wc_list_free(l);

    int64_t r3 = del(f->s, "ns", "a");
    assert_int_equal(wc_wait(f->wc, r3, 5000), 0);
    assert_int_equal(wc_get(f->wc, PFX "ns/a", &o), KP_ENOTFOUND);

    /* A write elsewhere moves the cache's revision too, within a poll. */
    int64_t r4;
    assert_int_equal(store_create(f->s, "/registry/secrets/x", "{}", 2, &r4), 0);
    int64_t t0 = clock_mono_ns();
    assert_int_equal(wc_wait(f->wc, r4, 5000), 0);
    print_message("caught up with a write outside the prefix in %.1f ms\n",
                  (clock_mono_ns() - t0) / 1e6);

    assert_int_equal(wc_wait(f->wc, r4 + 100, 50), KP_ETIMEDOUT);
    assert_int_equal(wc_list(f->wc, PFX, NULL, 0, r4 + 100, 50, &l), KP_ETIMEDOUT);
    assert_null(l);
    assert_int_equal(wc_list(f->wc, PFX, NULL, 0, r4 + 100, 0, &l), KP_ETIMEDOUT);
}

typedef struct delayed_put {
    store_t *s;
    int delay_ms;
    int64_t rev;
} delayed_put_t;

static void *delayed_put_run(void *arg)
{
    delayed_put_t *d = arg;
    usleep((useconds_t)d->delay_ms * 1000);
    d->rev = put(d->s, "ns", "later", "v");
    return NULL;
}

static void test_list_waits_for_min_rev(void **state)
{
    fixture_t *f = *state;
    open_cache(f, 0);
    int64_t next = store_rev(f->s) + 1;
    delayed_put_t d = {f->s, 100, 0};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, delayed_put_run, &d), 0);
    wc_list_t *l;
    assert_int_equal(wc_list(f->wc, PFX, NULL, 0, next, 5000, &l), 0);
    pthread_join(t, NULL);
    assert_int_equal(d.rev, next);
    assert_int_equal(l->count, 1);
    assert_int_equal(l->objs[0]->rev, next);
    wc_list_free(l);
}

/* ---- watches ---- */

static void test_watch_events(void **state)
{
    fixture_t *f = *state;
    put(f->s, "ns1", "before", "x"); /* not seen: before the watch */
    open_cache(f, 0);
    wc_watcher_t *all, *ns1;
    assert_int_equal(wc_watch(f->wc, PFX, -1, NULL, &all), 0);
    assert_int_equal(wc_watch(f->wc, PFX "ns1/", -1, NULL, &ns1), 0);

    int64_t r1 = put(f->s, "ns1", "a", "one");
    int64_t r2 = put(f->s, "ns2", "b", "bee");
    int64_t r3 = put(f->s, "ns1", "a", "two");
    int64_t r4 = del(f->s, "ns1", "a");

    wc_event_t e1, e2, e3, e4;
    next_ok(all, &e1);
    next_ok(all, &e2);
    next_ok(all, &e3);
    next_ok(all, &e4);
    assert_int_equal(e1.type, WC_ADDED);
    assert_int_equal(e1.rev, r1);
    assert_null(e1.prev);
    check_obj(e1.obj, PFX "ns1/a", r1);
    assert_int_equal(e2.type, WC_ADDED);
    check_obj(e2.obj, PFX "ns2/b", r2);
    assert_int_equal(e3.type, WC_MODIFIED);
    check_obj(e3.obj, PFX "ns1/a", r3);
    assert_ptr_equal(e3.prev, e1.obj); /* the very version the ADDED carried */
    assert_string_equal(data_v(e3.obj), "two");
    assert_int_equal(e4.type, WC_DELETED);
    assert_int_equal(e4.rev, r4);
    check_obj(e4.obj, PFX "ns1/a", r4); /* the delete's resourceVersion */
    assert_string_equal(data_v(e4.obj), "two"); /* the last state */
    assert_string_equal(e4.obj->name, "a");
    assert_string_equal(e4.obj->ns, "ns1");
    assert_ptr_equal(e4.prev, e3.obj);

    /* The namespace watcher sees ns1's events only, the same objects. */
    wc_event_t ev;
    next_ok(ns1, &ev);
    assert_ptr_equal(ev.obj, e1.obj);
    wc_event_clear(&ev);
    next_ok(ns1, &ev);
    assert_ptr_equal(ev.obj, e3.obj);
    wc_event_clear(&ev);
    next_ok(ns1, &ev);
    assert_ptr_equal(ev.obj, e4.obj);
    wc_event_clear(&ev);
    assert_int_equal(wc_watcher_next(ns1, 0, &ev), KP_ETIMEDOUT);
    assert_int_equal(wc_watcher_next(all, 20, &ev), KP_ETIMEDOUT);
    assert_null(ev.obj);

    wc_event_clear(&e1);
    wc_event_clear(&e2);
    wc_event_clear(&e3);
    wc_event_clear(&e4);
    wc_event_clear(&e4); /* cleared events are empty; clearing twice is fine */
    wc_watcher_close(all);
    wc_watcher_close(ns1);
}

static void test_watch_from_past(void **state)
{
    fixture_t *f = *state;
    put(f->s, "ns", "pre", "x");
    open_cache(f, 5);
    int64_t r0 = wc_revision(f->wc);
    wc_watcher_t *w;
    /* The ring starts complete at the cache's revision. */
    assert_int_equal(wc_watch(f->wc, PFX, r0, NULL, &w), 0);
    wc_watcher_t *w0;
    assert_int_equal(wc_watch(f->wc, PFX, r0 - 1, NULL, &w0), KP_ECOMPACTED);
    assert_null(w0);

    int64_t r[10];
    for (int i = 0; i < 10; i++) {
        char name[8];
        snprintf(name, sizeof name, "k%d", i);
        r[i] = put(f->s, "ns", name, "v");
    }
    assert_int_equal(wc_wait(f->wc, r[9], 5000), 0);
    assert_int_equal(wc_watch(f->wc, PFX, r0, NULL, &w0), KP_ECOMPACTED); /* evicted */
    assert_int_equal(wc_watch(f->wc, PFX, r[3], NULL, &w0), KP_ECOMPACTED);
    assert_int_equal(wc_watch(f->wc, PFX, r[4], NULL, &w0), 0); /* ring: r[5..9] */
    for (int i = 5; i < 10; i++) {
        char key[64];
        snprintf(key, sizeof key, PFX "ns/k%d", i);
        expect_event(w0, WC_ADDED, r[i], key);
    }
    int64_t r10 = put(f->s, "ns", "k5", "again");
    expect_event(w0, WC_MODIFIED, r10, PFX "ns/k5");
    wc_event_t ev;
    assert_int_equal(wc_watcher_next(w0, 0, &ev), KP_ETIMEDOUT);
    wc_watcher_close(w0);

    /* The first watch (from r0) was live all along: every event, in order. */
    for (int i = 0; i < 10; i++) {
        next_ok(w, &ev);
        assert_int_equal(ev.rev, r[i]);
        wc_event_clear(&ev);
    }
    next_ok(w, &ev);
    assert_int_equal(ev.rev, r10);
    wc_event_clear(&ev);
    wc_watcher_close(w);

    /* From the cache's revision: nothing to replay. From now: only later events. */
    assert_int_equal(wc_watch(f->wc, PFX, r10, NULL, &w), 0);
    assert_int_equal(wc_watcher_next(w, 0, &ev), KP_ETIMEDOUT);
    wc_watcher_close(w);
    assert_int_equal(wc_watch(f->wc, PFX, -1, NULL, &w), 0);
    int64_t r11 = put(f->s, "ns", "k6", "again");
    expect_event(w, WC_MODIFIED, r11, PFX "ns/k6");
    wc_watcher_close(w);

    /* The future: beyond the store at once; caught up with a write elsewhere. */
    int64_t t0 = clock_mono_ns();
    assert_int_equal(wc_watch(f->wc, PFX, store_rev(f->s) + 5, NULL, &w), KP_EFUTURE);
    assert_true(clock_mono_ns() - t0 < 1000000000);
    int64_t r12;
    assert_int_equal(store_create(f->s, "/registry/secrets/s", "{}", 2, &r12), 0);
    assert_int_equal(wc_watch(f->wc, PFX, r12, NULL, &w), 0);
    assert_true(wc_revision(f->wc) >= r12);
    int64_t r13 = put(f->s, "ns", "k7", "again");
    expect_event(w, WC_MODIFIED, r13, PFX "ns/k7");
    wc_watcher_close(w);
}

static void test_watch_after_store_compaction(void **state)
{
    fixture_t *f = *state;
    open_cache(f, 0);
    int64_t r[6];
    for (int i = 0; i < 6; i++) r[i] = put(f->s, "ns", "a", i % 2 ? "odd" : "even");
    assert_int_equal(wc_wait(f->wc, r[5], 5000), 0);
    assert_int_equal(store_compact(f->s, r[3]), 0);
    /* The ring still holds everything above r[0]: served from memory. */
    wc_watcher_t *w;
    assert_int_equal(wc_watch(f->wc, PFX, r[1], NULL, &w), 0);
    for (int i = 2; i < 6; i++) expect_event(w, WC_MODIFIED, r[i], PFX "ns/a");
    wc_watcher_close(w);
    /* A cache opened after the compaction starts at the store's newest
     * revision: anything older is gone. */
    wc_t *late;
    assert_int_equal(wc_open(f->s, PFX, NULL, &late), 0);
    assert_int_equal(wc_revision(late), r[5]);
    assert_int_equal(wc_watch(late, PFX, r[2], NULL, &w), KP_ECOMPACTED);
    assert_int_equal(wc_watch(late, PFX, r[5], NULL, &w), 0);
    int64_t r6 = put(f->s, "ns", "a", "six");
    expect_event(w, WC_MODIFIED, r6, PFX "ns/a");
    wc_watcher_close(w);
    wc_close(late);
}

/* The seam: watches opened from the past while a writer runs must see every
 * revision after their start exactly once, in order. Every write goes under
 * the prefix, so the revisions a watcher sees are consecutive. */
typedef struct writer {
    store_t *s;
    int n;
    atomic_int done;
    int64_t last;
} writer_t;

static void *writer_run(void *arg)
{
    writer_t *wr = arg;
    char name[16];
    for (int i = 0; i < wr->n; i++) {
        snprintf(name, sizeof name, "k%02d", i % 40);
        wr->last = put(wr->s, "seam", name, "v");
    }
    atomic_store(&wr->done, 1);
    return NULL;
}

static void test_watch_seam_concurrent(void **state)
{
    fixture_t *f = *state;
    open_cache(f, 0);
    enum { MAXW = 256 };
    wc_watcher_t *ws[MAXW];
    int64_t from[MAXW];
    int nw = 0;
    writer_t wr = {.s = f->s, .n = 1000};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, writer_run, &wr), 0);
    unsigned seed = 7;
    while (!atomic_load(&wr.done) && nw < MAXW) {
        int64_t rev = wc_revision(f->wc);
        int back = rand_r(&seed) % 8;
        from[nw] = back == 7 ? -1 : rev - back > 0 ? rev - back : 0;
        assert_int_equal(wc_watch(f->wc, PFX, from[nw], &(wc_watch_opts_t){.backlog = 100000}, &ws[nw]), 0);
        nw++;
        usleep(1000 + rand_r(&seed) % 3000);
    }
    int64_t last_open = wc_revision(f->wc);
    pthread_join(t, NULL);
    print_message("%d watches opened during writes 1..%" PRId64 " of %d\n", nw, last_open,
                  wr.n);
    assert_true(nw >= 4);
    for (int i = 0; i < nw; i++) {
        wc_event_t ev;
        int64_t expect = from[i] + 1;
        if (from[i] < 0) { /* from now: consecutive from its first event */
            if (wc_watcher_next(ws[i], 1000, &ev) == KP_ETIMEDOUT) {
                wc_watcher_close(ws[i]);
                continue;
            }
            expect = ev.rev;
            wc_event_clear(&ev);
            expect++;
        }
        while (expect <= wr.last) {
            next_ok(ws[i], &ev);
            assert_int_equal(ev.rev, expect);
            assert_int_equal(ev.obj->rev, expect);
            assert_int_equal(ev.type, expect <= 40 ? WC_ADDED : WC_MODIFIED);
            wc_event_clear(&ev);
            expect++;
        }
        assert_int_equal(wc_watcher_next(ws[i], 0, &ev), KP_ETIMEDOUT);
        wc_watcher_close(ws[i]);
    }
}

/* ---- slow watchers ---- */

static void test_slow_watcher(void **state)
{
    fixture_t *f = *state;
    open_cache(f, 0);
    wc_watcher_t *slow, *fast1, *fast2;
    assert_int_equal(wc_watch(f->wc, PFX, -1, &(wc_watch_opts_t){.backlog = 10}, &slow), 0);
    assert_int_equal(wc_watch(f->wc, PFX, -1, NULL, &fast1), 0);
    assert_int_equal(wc_watch(f->wc, PFX, -1, &(wc_watch_opts_t){.backlog = 50}, &fast2), 0);
    int64_t r[50];
    int64_t t0 = clock_mono_ns();
    for (int i = 0; i < 50; i++) {
        char name[8];
        snprintf(name, sizeof name, "k%d", i);
        r[i] = put(f->s, "ns", name, "v");
    }
    print_message("50 writes with a stuck watcher: %.1f ms\n", (clock_mono_ns() - t0) / 1e6);
    assert_int_equal(wc_wait(f->wc, r[49], 5000), 0);

    wc_event_t ev;
    for (int i = 0; i < 50; i++) {
        next_ok(fast1, &ev);
        assert_int_equal(ev.rev, r[i]);
        wc_event_clear(&ev);
        next_ok(fast2, &ev);
        assert_int_equal(ev.rev, r[i]);
        wc_event_clear(&ev);
    }
    for (int i = 0; i < 10; i++) {
        next_ok(slow, &ev);
        assert_int_equal(ev.rev, r[i]);
        wc_event_clear(&ev);
    }
    assert_int_equal(wc_watcher_next(slow, 0, &ev), KP_ETOOLARGE);
    assert_int_equal(wc_watcher_next(slow, -1, &ev), KP_ETOOLARGE); /* sticky */
    wc_watcher_close(slow);

    /* A replay does not count against the backlog; live events do. */
    assert_int_equal(wc_watch(f->wc, PFX, r[29], &(wc_watch_opts_t){.backlog = 5}, &slow), 0); /* replays 20 */
    int64_t more[6];
    for (int i = 0; i < 6; i++) more[i] = put(f->s, "ns", "k0", "w");
    assert_int_equal(wc_wait(f->wc, more[5], 5000), 0);
    for (int i = 30; i < 50; i++) {
        next_ok(slow, &ev);
        assert_int_equal(ev.rev, r[i]);
        wc_event_clear(&ev);
    }
    for (int i = 0; i < 5; i++) {
        next_ok(slow, &ev);
        assert_int_equal(ev.rev, more[i]);
        wc_event_clear(&ev);
    }
    assert_int_equal(wc_watcher_next(slow, 0, &ev), KP_ETOOLARGE);
    wc_watcher_close(slow);
    wc_watcher_close(fast1);
    wc_watcher_close(fast2);
}

/* ---- encode once ---- */

static void test_encode_once(void **state)
{
    fixture_t *f = *state;
    open_cache(f, 0);
    wc_watcher_t *w1, *w2;
    assert_int_equal(wc_watch(f->wc, PFX, -1, NULL, &w1), 0);
    assert_int_equal(wc_watch(f->wc, PFX "ns/", -1, NULL, &w2), 0);
    int64_t rev = put(f->s, "ns", "a", "v");
    wc_event_t e1, e2;
    next_ok(w1, &e1);
    next_ok(w2, &e2);
    wc_list_t *l;
    assert_int_equal(wc_list(f->wc, PFX, NULL, 0, rev, 5000, &l), 0);
    const wc_obj_t *o;
    assert_int_equal(wc_get(f->wc, PFX "ns/a", &o), 0);
    assert_ptr_equal(e1.obj, e2.obj);
    assert_ptr_equal(e1.obj, l->objs[0]);
    assert_ptr_equal(e1.obj, o);
    assert_ptr_equal(e1.obj->json, o->json);
    /* A late watcher replaying from the ring gets it too. */
    wc_watcher_t *w3;
    wc_event_t e3;
    assert_int_equal(wc_watch(f->wc, PFX, rev - 1, NULL, &w3), 0);
    next_ok(w3, &e3);
    assert_ptr_equal(e3.obj, o);
    /* References outlive the cache's own use of the version. */
    put(f->s, "ns", "a", "changed");
    del(f->s, "ns", "a");
    wc_list_free(l);
    wc_event_clear(&e1);
    wc_event_clear(&e2);
    wc_event_clear(&e3);
    assert_string_equal(data_v(o), "v");
    assert_ptr_equal(wc_obj_ref(o), o);
    wc_obj_unref(o);
    wc_obj_unref(o);
    wc_obj_ref(NULL);
    wc_obj_unref(NULL);
    wc_event_clear(NULL);
    wc_list_free(NULL);
    wc_watcher_close(w1);
    wc_watcher_close(w2);
    wc_watcher_close(w3);
}

/* ---- offers: the writer's version published as is ---- */

/* The doc of ConfigMap ns/name with data.v = val (caller owns). */
static json_t *cm_doc(const char *ns, const char *name, const char *val)
{
    char js[512];
    json_t *doc = json_loads(cm_json(js, sizeof js, ns, name, val), 0, NULL);
    assert_non_null(doc);
    return doc;
}

/* Store `text` (freed) at `key`: created, or updated. */
static int64_t write_text(store_t *s, const char *key, char *text)
{
    int64_t rev = 0;
    int rc = store_create(s, key, text, strlen(text), &rev);
    if (rc == KP_EEXIST) rc = store_update(s, key, text, strlen(text), 0, &rev);
    free(text);
    assert_int_equal(rc, 0);
    return rev;
}

/* Store `doc` (borrowed) at `key` as a writer does. */
static int64_t write_doc(store_t *s, const char *key, const json_t *doc)
{
    return write_text(s, key, json_dumps(doc, JSON_COMPACT));
}

/* The json of `key` as a cache opened now (from the stored value) has it. */
static char *json_from_store(fixture_t *f, const char *key)
{
    wc_t *late;
    const wc_obj_t *o;
    assert_int_equal(wc_open(f->s, PFX, NULL, &late), 0);
    assert_int_equal(wc_get(late, key, &o), 0);
    char *json = strdup(o->json);
    wc_obj_unref(o);
    wc_close(late);
    return json;
}

/* Poll until the cache keeps no offer (it dropped or took them), up to 5 s. */
static void wait_no_offers(wc_t *wc)
{
    for (int i = 0; i < 500 && wc_offers_waiting(wc); i++)
        usleep(10000);
    assert_int_equal(wc_offers_waiting(wc), 0);
}

static void test_offer_published(void **state)
{
    fixture_t *f = *state;
    open_cache(f, 0);
    wc_watcher_t *w;
    assert_int_equal(wc_watch(f->wc, PFX, -1, NULL, &w), 0);
    const char *key = PFX "ns/a";
    put(f->s, "ns", "a", "old");

    /* Offered before the write (its revision is known: nothing else writes),
     * so that the cache cannot have passed it; a writer offers right after. */
    for (int i = 0; i < 2; i++) { /* an update, then a create */
        if (i) key = PFX "ns/b";
        json_t *doc = cm_doc("ns", i ? "b" : "a", "new");
        char *text = json_dumps(doc, JSON_COMPACT); /* what is stored */
        const wc_obj_t *mine;
        int64_t want = store_rev(f->s) + 1;
        assert_int_equal(wc_offer(f->wc, key, want, doc, text, strlen(text), &mine), 0);
        check_obj(mine, key, want);
        assert_int_equal(write_text(f->s, key, text), want);

        wc_event_t ev;
        next_ok(w, &ev);
        if (ev.rev < want) { /* the first round: put()'s event */
            wc_event_clear(&ev);
            next_ok(w, &ev);
        }
        assert_int_equal(ev.type, i ? WC_ADDED : WC_MODIFIED);
        assert_ptr_equal(ev.obj, mine); /* the very version: no parse, no encoding */
        const wc_obj_t *got;
        assert_int_equal(wc_get(f->wc, key, &got), 0);
        assert_ptr_equal(got, mine);
        wc_list_t *l;
        assert_int_equal(wc_list(f->wc, key, NULL, 0, want, 5000, &l), 0);
        assert_ptr_equal(l->objs[0], mine);
        /* Byte for byte what the cache makes of the stored value. */
        char *parsed = json_from_store(f, key);
        assert_string_equal(parsed, mine->json);
        free(parsed);
        wc_list_free(l);
        wc_obj_unref(got);
        wc_event_clear(&ev);
        wc_obj_unref(mine);
    }

    /* Several waiting at once, offered out of order: each taken by its event. */
    enum { K = 7 };
    const wc_obj_t *mine[K];
    char *texts[K];
    int64_t base = store_rev(f->s) + 1;
    static const int order[K] = {3, 0, 6, 1, 5, 2, 4};
    for (int i = 0; i < K; i++) {
        int k = order[i];
        char name[16], kk[256];
        snprintf(name, sizeof name, "m%d", k);
        json_t *doc = cm_doc("ns", name, "v");
        texts[k] = json_dumps(doc, JSON_COMPACT);
        assert_int_equal(wc_offer(f->wc, key_of(kk, sizeof kk, "ns", name), base + k, doc,
                                  texts[k], strlen(texts[k]), &mine[k]),
                         0);
    }
    for (int k = 0; k < K; k++) {
        assert_int_equal(write_text(f->s, mine[k]->key, texts[k]), base + k);
        wc_event_t ev;
        next_ok(w, &ev);
        assert_ptr_equal(ev.obj, mine[k]);
        wc_event_clear(&ev);
        wc_obj_unref(mine[k]);
    }
    wc_watcher_close(w);
}

/* A converting cache (a resource served in another version than stored):
 * what it loads, follows and is offered is convert(stored), encoded once
 * from the converted object, never spliced from the stored bytes. */
static int convert_arg; /* what the cache must pass to the converter */

static json_t *to_served(void *arg, json_t *doc)
{
    assert_ptr_equal(arg, &convert_arg);
    json_t *data = json_object_get(doc, "data");
    json_object_set(doc, "served", data ? data : json_null());
    json_object_del(doc, "data");
    json_object_set_new(doc, "apiVersion", json_string("example/v2"));
    return doc;
}

static void test_convert(void **state)
{
    fixture_t *f = *state;
    put(f->s, "ns", "before", "1"); /* loaded at open */
    wc_config_t cfg = {.convert = to_served, .convert_arg = &convert_arg};
    assert_int_equal(wc_open(f->s, PFX, &cfg, &f->wc), 0);
    const wc_obj_t *o;
    assert_int_equal(wc_get(f->wc, PFX "ns/before", &o), 0);
    assert_non_null(strstr(o->json, "\"served\":{\"v\":\"1\"}"));
    assert_null(strstr(o->json, "\"data\""));
    assert_non_null(strstr(o->json, "example/v2"));
    wc_obj_unref(o);

    wc_watcher_t *w;
    assert_int_equal(wc_watch(f->wc, PFX, -1, NULL, &w), 0);
    put(f->s, "ns", "followed", "2"); /* from the store watch */
    wc_event_t ev;
    next_ok(w, &ev);
    assert_non_null(strstr(ev.obj->json, "\"served\":{\"v\":\"2\"}"));
    check_obj(ev.obj, PFX "ns/followed", ev.rev);
    wc_event_clear(&ev);

    /* An offer is given in the stored form and kept converted. */
    json_t *doc = cm_doc("ns", "offered", "3");
    char *text = json_dumps(doc, JSON_COMPACT);
    const wc_obj_t *mine;
    int64_t want = store_rev(f->s) + 1;
    assert_int_equal(wc_offer(f->wc, PFX "ns/offered", want, doc, text, strlen(text), &mine), 0);
    assert_non_null(strstr(mine->json, "\"served\":{\"v\":\"3\"}"));
    assert_int_equal(write_text(f->s, PFX "ns/offered", text), want);
    next_ok(w, &ev);
    assert_ptr_equal(ev.obj, mine);
    wc_event_clear(&ev);
    wc_obj_unref(mine);
    wc_watcher_close(w);
}

/* An offer with its stored text: the version's bytes are that text with the
 * resourceVersion spliced into the top-level metadata, whatever comes
 * before it; text the splice cannot place is encoded afresh. */
static void test_offer_spliced(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\"},\"data\":{\"v\":\"1\"}}",
        "{\"metadata\":{}}",
        "{ \"metadata\" : { } , \"x\" : 1 }",
        /* decoys before the real one: a nested metadata, one in a string,
         * escapes, arrays, scalars */
        "{\"kind\":\"X\",\"spec\":{\"template\":{\"metadata\":{\"labels\":{\"a\":\"b\"}}}},"
        "\"s\":\"\\\"metadata\\\":{\",\"l\":[1,{\"metadata\":{}},\"]\"],\"n\":-1.5e3,\"t\":true,"
        "\"z\":null,\"metadata\":{\"name\":\"a\"}}",
        "{\"data\":{}}", /* no metadata: encoded afresh */
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        json_t *doc = json_loads(texts[i], 0, NULL);
        assert_non_null(doc);
        const wc_obj_t *v;
        assert_int_equal(wc_offer(NULL, PFX "ns/a", 42, doc, texts[i], strlen(texts[i]), &v), 0);
        check_obj(v, PFX "ns/a", 42);
        const char *at = strstr(v->json, "\"resourceVersion\":\"42\"");
        assert_non_null(at);
        assert_null(strstr(at + strlen("\"resourceVersion\""), "resourceVersion"));
        if (i < 4) /* spliced: the text around it is the stored text */
            assert_int_equal(v->json_len, strlen(texts[i]) + strlen("\"resourceVersion\":\"42\"") +
                                              (i == 0 || i == 3));
        wc_obj_unref(v);
    }
    /* Text that already holds a resourceVersion is not spliced twice. */
    const char *had = "{\"metadata\":{\"resourceVersion\":\"7\",\"name\":\"a\"}}";
    json_t *doc = json_loads(had, 0, NULL);
    const wc_obj_t *v;
    assert_int_equal(wc_offer(NULL, PFX "ns/a", 42, doc, had, strlen(had), &v), 0);
    check_obj(v, PFX "ns/a", 42);
    assert_null(strstr(v->json, "\"7\""));
    wc_obj_unref(v);
}

/* What selectors read of a version (wc_obj_match()) is what they read of
 * the whole object (sel_label_match(), sel_field_match()), for the fields
 * the cache keeps; others match nothing. A DELETED version keeps the same. */
static void test_obj_selectors(void **state)
{
    fixture_t *f = *state;
    static const char *const kept[] = {"spec.nodeName", "spec.hostNetwork", "status.replicas",
                                       "source", NULL};
    wc_config_t cfg = {.fields = kept};
    assert_int_equal(wc_open(f->s, PFX, &cfg, &f->wc), 0);
    wc_watcher_t *w;
    assert_int_equal(wc_watch(f->wc, PFX, -1, NULL, &w), 0);
    const char *js = "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"labels\":"
                     "{\"app\":\"web\",\"n\":\"12\",\"nul\":null,\"odd\":7}},"
                     "\"spec\":{\"nodeName\":\"n1\"},\"status\":{\"replicas\":3},"
                     "\"source\":{\"component\":\"kubelet\"}}";
    int64_t rev = 0, gone_rev = 0;
    assert_int_equal(store_create(f->s, PFX "ns/p", js, strlen(js), &rev), 0);
    assert_int_equal(store_delete(f->s, PFX "ns/p", 0, &gone_rev), 0);
    wc_event_t add, gone;
    next_ok(w, &add);
    next_ok(w, &gone);
    json_t *doc = json_loads(js, 0, NULL);
    const json_t *labels = json_object_get(json_object_get(doc, "metadata"), "labels");
    static const char *const label_sels[] = {
        "", "app=web", "app!=web", "app in (web,db)", "app notin (web)", "app", "!app",
        "missing", "!missing", "missing!=x", "n>11", "n<12", "nul=", "nul", "odd", "odd!=7",
        "odd=7", "!odd", "app=web,n>100"};
    static const char *const field_sels[] = {
        "", "metadata.name=p", "metadata.name!=p", "metadata.namespace=ns", "spec.nodeName=n1",
        "spec.nodeName=", "spec.hostNetwork=false", "spec.hostNetwork!=false",
        "status.replicas=3", "status.replicas!=3", "source=kubelet", "source!=kubelet",
        "metadata.name=p,spec.nodeName=n2"};
    const wc_obj_t *objs[] = {add.obj, gone.obj};
    for (int o = 0; o < 2; o++) {
        for (size_t i = 0; i < sizeof label_sels / sizeof *label_sels; i++) {
            sel_label_t *ls;
            char err[256];
            assert_int_equal(sel_label_parse(label_sels[i], &ls, err, sizeof err), 0);
            if (wc_obj_match(objs[o], ls, NULL) != sel_label_match(ls, labels))
                fail_msg("labels %s: the cache says %d", label_sels[i],
                         !sel_label_match(ls, labels));
            sel_label_free(ls);
        }
        for (size_t i = 0; i < sizeof field_sels / sizeof *field_sels; i++) {
            sel_field_t *fs;
            char err[256];
            assert_int_equal(sel_field_parse(field_sels[i], &fs, err, sizeof err), 0);
            if (wc_obj_match(objs[o], NULL, fs) != sel_field_match(fs, doc))
                fail_msg("fields %s: the cache says %d", field_sels[i], !sel_field_match(fs, doc));
            sel_field_free(fs);
        }
        assert_string_equal(wc_obj_field(objs[o], "spec.nodeName"), "n1");
        assert_string_equal(wc_obj_field(objs[o], "metadata.namespace"), "ns");
        assert_null(wc_obj_field(objs[o], "spec.other"));
        sel_field_t *fs;
        char err[256];
        assert_int_equal(sel_field_parse("spec.other=", &fs, err, sizeof err), 0);
        assert_false(wc_obj_match(objs[o], NULL, fs)); /* not kept: matches nothing */
        sel_field_free(fs);
    }
    json_decref(doc);
    wc_event_clear(&add);
    wc_event_clear(&gone);
    wc_watcher_close(w);
}

/* A version's json and copies have its managedFields; a DELETED event's
 * object keeps them. Decoys: a nested metadata and an annotation named
 * managedFields are nobody's managedFields. */
static void test_managed_fields(void **state)
{
    fixture_t *f = *state;
    open_cache(f, 0);
    wc_watcher_t *w;
    assert_int_equal(wc_watch(f->wc, PFX, -1, NULL, &w), 0);
    const char *js =
        "{\"spec\":{\"metadata\":{\"managedFields\":[1]}},\"metadata\":{\"name\":\"m\","
        "\"namespace\":\"ns\",\"annotations\":{\"managedFields\":\"x\"},\"managedFields\":"
        "[{\"manager\":\"kubectl\",\"operation\":\"Update\",\"fieldsV1\":{\"f:data\":{}}}]},"
        "\"data\":{\"v\":\"1\"}}";
    int64_t r1 = 0, r2 = 0;
    assert_int_equal(store_create(f->s, PFX "ns/m", js, strlen(js), &r1), 0);
    assert_int_equal(store_delete(f->s, PFX "ns/m", 0, &r2), 0);
    wc_event_t add, gone;
    next_ok(w, &add);
    next_ok(w, &gone);
    assert_int_equal(gone.type, WC_DELETED);
    const wc_obj_t *objs[] = {add.obj, gone.obj};
    for (int i = 0; i < 2; i++) {
        const wc_obj_t *o = objs[i];
        check_obj(o, PFX "ns/m", i ? r2 : r1);
        json_t *whole;
        assert_int_equal(wc_obj_copy(o, &whole), 0);
        json_t *meta = json_object_get(whole, "metadata");
        assert_string_equal(json_string_value(json_object_get(
                                json_object_get(meta, "annotations"), "managedFields")),
                            "x");
        assert_non_null(json_object_get(json_object_get(json_object_get(whole, "spec"),
                                                        "metadata"),
                                        "managedFields"));
        json_t *mf = json_object_get(json_object_get(whole, "metadata"), "managedFields");
        assert_string_equal(json_string_value(json_object_get(json_array_get(mf, 0), "manager")),
                            "kubectl");
        json_decref(whole);
        /* One resourceVersion, the version's own. */
        const char *at = strstr(o->json, "\"resourceVersion\"");
        assert_non_null(at);
        assert_null(strstr(at + 1, "\"resourceVersion\""));
    }
    /* The DELETED event's encoding is the last state's, only its version
     * changed: spliced, not re-encoded. */
    assert_int_equal(gone.obj->json_len - gone.prev->json_len,
                     snprintf(NULL, 0, "%" PRId64, r2) - snprintf(NULL, 0, "%" PRId64, r1));
    wc_event_clear(&add);
    wc_event_clear(&gone);
    wc_watcher_close(w);
}

static void test_offer_too_late(void **state)
{
    fixture_t *f = *state;
    open_cache(f, 0);
    const char *key = PFX "ns/a";
    json_t *doc = cm_doc("ns", "a", "v");
    int64_t rev = write_doc(f->s, key, doc);
    assert_int_equal(wc_wait(f->wc, rev, 5000), 0); /* the cache parsed it itself */
    const wc_obj_t *cached, *mine;
    assert_int_equal(wc_get(f->wc, key, &cached), 0);

    char *text = json_dumps(doc, JSON_COMPACT); /* as write_doc() stored it */
    assert_int_equal(wc_offer(f->wc, key, rev, json_incref(doc), text, strlen(text), &mine), 0);
    free(text);
    check_obj(mine, key, rev);
    assert_ptr_not_equal(mine, cached);
    assert_string_equal(mine->json, cached->json); /* the same bytes anyway */
    wc_obj_unref(mine);
    assert_int_equal(doc->refcount, 1); /* read during the call only */
    assert_int_equal(wc_offers_waiting(f->wc), 0); /* dropped at once */
    const wc_obj_t *again;
    assert_int_equal(wc_get(f->wc, key, &again), 0);
    assert_ptr_equal(again, cached); /* the cache's own version stays */
    wc_obj_unref(again);
    wc_obj_unref(cached);

    /* Older revisions, and the initial load's, are passed too. */
    int64_t rev2 = put(f->s, "ns", "a", "w");
    assert_int_equal(wc_wait(f->wc, rev2, 5000), 0);
    assert_int_equal(wc_offer(f->wc, key, rev, json_incref(doc), NULL, 0, &mine), 0);
    wc_obj_unref(mine);
    assert_int_equal(wc_offers_waiting(f->wc), 0);
    wc_t *late;
    assert_int_equal(wc_open(f->s, PFX, NULL, &late), 0);
    assert_int_equal(wc_offer(late, key, rev2, json_incref(doc), NULL, 0, &mine), 0);
    wc_obj_unref(mine);
    assert_int_equal(wc_offers_waiting(late), 0);
    wc_close(late);
    json_decref(doc);
}

static void test_offer_never_taken(void **state)
{
    fixture_t *f = *state;
    open_cache(f, 0);
    const wc_obj_t *mine;
    /* Its revision comes, but for another key (outside the prefix, or
     * another one under it): dropped once the cache passes it. */
    json_t *doc = cm_doc("ns", "a", "offered");
    int64_t want = store_rev(f->s) + 1;
    assert_int_equal(wc_offer(f->wc, PFX "ns/a", want, json_incref(doc), NULL, 0, &mine), 0);
    wc_obj_unref(mine);
    assert_int_equal(doc->refcount, 1); /* read during the call only */
    assert_int_equal(wc_offers_waiting(f->wc), 1); /* kept */
    int64_t rev;
    assert_int_equal(store_create(f->s, "/registry/secrets/ns/s", "{}", 2, &rev), 0);
    assert_int_equal(rev, want);
    wait_no_offers(f->wc);

    want = store_rev(f->s) + 1;
    assert_int_equal(wc_offer(f->wc, PFX "ns/a", want, json_incref(doc), NULL, 0, &mine), 0);
    wc_obj_unref(mine);
    assert_int_equal(put(f->s, "ns", "b", "stored"), want);
    assert_int_equal(wc_wait(f->wc, want, 5000), 0);
    const wc_obj_t *b;
    assert_int_equal(wc_get(f->wc, PFX "ns/b", &b), 0);
    assert_string_equal(data_v(b), "stored"); /* parsed: the offer was not b's */
    wc_obj_unref(b);
    assert_int_equal(wc_get(f->wc, PFX "ns/a", &b), KP_ENOTFOUND);
    wait_no_offers(f->wc);

    /* Its event never comes: wc_close() frees it (and ASan would see a leak). */
    assert_int_equal(wc_offer(f->wc, PFX "ns/a", want + 1000, json_incref(doc), NULL, 0, &mine), 0);
    wc_obj_unref(mine);
    assert_int_equal(wc_offers_waiting(f->wc), 1);
    for (int i = 0; i < 3; i++) { /* and some that nobody else references */
        assert_int_equal(
            wc_offer(f->wc, PFX "ns/c", want + 2000 + i, cm_doc("ns", "c", "x"), NULL, 0, &mine), 0);
        wc_obj_unref(mine);
    }
    wc_close(f->wc);
    f->wc = NULL;
    json_decref(doc);
}

static void test_offer_bounded_and_failed(void **state)
{
    fixture_t *f = *state;
    open_cache(f, 0);
    const wc_obj_t *mine;
    int64_t far = store_rev(f->s) + 1000000;
    json_t *doc = cm_doc("ns", "a", "v");
    for (int i = 0; i < 4096; i++) {
        assert_int_equal(wc_offer(f->wc, PFX "ns/a", far + i, json_deep_copy(doc), NULL, 0, &mine), 0);
        wc_obj_unref(mine);
    }
    assert_int_equal(wc_offer(f->wc, PFX "ns/a", far - 1, json_incref(doc), NULL, 0, &mine), 0);
    wc_obj_unref(mine);
    assert_int_equal(wc_offers_waiting(f->wc), 4096); /* the table is full: refused */

    /* A failed cache keeps none (and frees what it had). */
    int64_t bad;
    assert_int_equal(store_create(f->s, PFX "ns/bad", "{not json", 9, &bad), 0);
    assert_int_equal(wc_wait(f->wc, bad, 5000), KP_ECORRUPT);
    assert_int_equal(wc_offer(f->wc, PFX "ns/a", far + 5000, json_incref(doc), NULL, 0, &mine), 0);
    check_obj(mine, PFX "ns/a", far + 5000); /* the writer still gets its version */
    wc_obj_unref(mine);
    assert_int_equal(wc_offers_waiting(f->wc), 0); /* and the failed cache kept none */

    /* Bad arguments; no cache: the version is only built. */
    assert_int_equal(wc_offer(f->wc, NULL, 1, json_incref(doc), NULL, 0, &mine), KP_EINVAL);
    assert_null(mine);
    assert_int_equal(wc_offer(f->wc, PFX "x", 1, json_array(), NULL, 0, &mine), KP_EINVAL);
    json_t *bad_meta = json_pack("{s:i}", "metadata", 1);
    assert_int_equal(wc_offer(NULL, PFX "x", 1, bad_meta, NULL, 0, &mine), KP_ECORRUPT);
    assert_null(mine);
    assert_int_equal(wc_offer(NULL, PFX "ns/a", 7, json_incref(doc), NULL, 0, &mine), 0);
    check_obj(mine, PFX "ns/a", 7);
    assert_string_equal(mine->ns, "ns");
    assert_string_equal(mine->name, "a");
    wc_obj_unref(mine);
    assert_int_equal(doc->refcount, 1); /* read during the call only */
    json_decref(doc);
}

/* Writers that store and offer at once, as the API server's do: whichever
 * of writer and cache comes first, every version is the stored one, encoded
 * as the cache would, and nothing is left behind. */
typedef struct offer_writer {
    fixture_t *f;
    int id, n;
    int64_t last;
    const wc_obj_t **mine; /* [n]: the writer's version of each object */
} offer_writer_t;

static void *offer_writer_run(void *arg)
{
    offer_writer_t *ow = arg;
    for (int i = 0; i < ow->n; i++) {
        char name[32], key[256];
        snprintf(name, sizeof name, "w%d-%04d", ow->id, i);
        key_of(key, sizeof key, "ns", name);
        json_t *doc = cm_doc("ns", name, "v");
        char *text = json_dumps(doc, JSON_COMPACT); /* as write_doc() stores it */
        int64_t rev = write_doc(ow->f->s, key, doc);
        assert_int_equal(wc_offer(ow->f->wc, key, rev, doc, text, strlen(text), &ow->mine[i]), 0);
        free(text);
        ow->last = rev;
    }
    return NULL;
}

static void test_offer_concurrent_writers(void **state)
{
    fixture_t *f = *state;
    enum { W = 4, N = 200 };
    open_cache(f, 0);
    wc_watcher_t *w;
    assert_int_equal(wc_watch(f->wc, PFX, -1, &(wc_watch_opts_t){.backlog = 2 * W * N}, &w), 0);
    pthread_t t[W];
    offer_writer_t ow[W];
    for (int i = 0; i < W; i++) {
        ow[i] = (offer_writer_t){.f = f, .id = i, .n = N, .mine = calloc(N, sizeof(void *))};
        assert_int_equal(pthread_create(&t[i], NULL, offer_writer_run, &ow[i]), 0);
    }
    int64_t last = 0;
    for (int i = 0; i < W; i++) {
        pthread_join(t[i], NULL);
        if (ow[i].last > last) last = ow[i].last;
    }
    assert_int_equal(wc_wait(f->wc, last, 5000), 0);
    int taken = 0;
    for (int i = 0; i < W * N; i++) {
        wc_event_t ev;
        next_ok(w, &ev);
        assert_int_equal(ev.type, WC_ADDED);
        const char *name = ev.obj->name;
        const wc_obj_t *mine = ow[name[1] - '0'].mine[strtol(name + 3, NULL, 10)];
        assert_int_equal(ev.rev, mine->rev);
        assert_string_equal(ev.obj->json, mine->json);
        taken += ev.obj == mine;
        wc_event_clear(&ev);
    }
    print_message("offers taken by the cache: %d of %d\n", taken, W * N);
    wc_watcher_close(w);
    for (int i = 0; i < W; i++) {
        for (int k = 0; k < N; k++)
            wc_obj_unref(ow[i].mine[k]);
        free(ow[i].mine);
    }
}

/* ---- budgets in bytes ---- */

/* ns/name with data.v of `len` bytes of `fill`; returns the revision. */
static int64_t put_big(store_t *s, const char *ns, const char *name, size_t len, char fill)
{
    char *val = malloc(len + 1);
    memset(val, fill, len);
    val[len] = '\0';
    json_t *doc = cm_doc(ns, name, "");
    json_object_set_new(json_object_get(doc, "data"), "v", json_string(val));
    free(val);
    char key[256];
    int64_t rev = write_doc(s, key_of(key, sizeof key, ns, name), doc);
    json_decref(doc);
    return rev;
}

static void open_cache_bytes(fixture_t *f, size_t history_bytes)
{
    wc_config_t cfg = {.history_bytes = history_bytes};
    assert_int_equal(wc_open(f->s, PFX, &cfg, &f->wc), 0);
}

static void test_history_bytes(void **state)
{
    fixture_t *f = *state;
    open_cache_bytes(f, 256 << 10);
    int64_t r0 = wc_revision(f->wc);
    assert_int_equal(wc_oldest(f->wc), r0);

    /* Twelve versions of a 20 KB object: an event costs its version and the
     * one before (each its 20 KB text), so the budget holds a few of the
     * newest; the oldest went first. */
    int64_t r[12];
    for (int i = 0; i < 12; i++) r[i] = put_big(f->s, "ns", "big", 20000, (char)('a' + i));
    assert_int_equal(wc_wait(f->wc, r[11], 5000), 0);
    size_t bytes, events;
    wc_history_usage(f->wc, &bytes, &events);
    print_message("history of 12 x 20 KB versions in 256 KiB: %zu events, %zu bytes\n",
                  events, bytes);
    assert_true(bytes <= 256 << 10);
    assert_true(bytes >= 160000); /* counted: well above the 20 KB texts alone */
    assert_true(events >= 2 && events < 12);
    /* The current objects: one version of one key, its 20 KB counted. */
    size_t obj_bytes, objs;
    wc_objects_usage(f->wc, &obj_bytes, &objs);
    assert_int_equal(objs, 1);
    assert_true(obj_bytes >= 20000 && obj_bytes < 2 * 20000);
    int64_t oldest = wc_oldest(f->wc);
    assert_int_equal(oldest, r[11 - events]); /* the newest `events` are kept */

    /* From the oldest revision kept: every kept event, oldest first. */
    wc_watcher_t *w;
    assert_int_equal(wc_watch(f->wc, PFX, oldest, NULL, &w), 0);
    for (size_t i = 12 - events; i < 12; i++) {
        wc_event_t ev;
        next_ok(w, &ev);
        assert_int_equal(ev.rev, r[i]);
        assert_int_equal(data_v(ev.obj)[0], 'a' + (int)i);
        wc_event_clear(&ev);
    }
    wc_watcher_close(w);
    /* One below: Expired (the API's 410 "too old resource version"). */
    assert_int_equal(wc_watch(f->wc, PFX, oldest - 1, NULL, &w), KP_ECOMPACTED);
    assert_null(w);

    /* Deleted, then small writes: the big versions leave the history and
     * with it their memory (ASan's leak check at exit sees the rest). */
    int64_t rd = del(f->s, "ns", "big");
    int64_t rs = 0;
    for (int i = 0; i < 5000 && wc_oldest(f->wc) < rd; i++) {
        rs = put(f->s, "ns", "small", "v");
        if (i % 100 == 99) assert_int_equal(wc_wait(f->wc, rs, 5000), 0);
    }
    assert_int_equal(wc_wait(f->wc, rs, 5000), 0);
    assert_true(wc_oldest(f->wc) >= rd);
    wc_history_usage(f->wc, &bytes, &events);
    assert_true(bytes <= 256 << 10);
    const wc_obj_t *o;
    assert_int_equal(wc_get(f->wc, PFX "ns/big", &o), KP_ENOTFOUND);
    /* Only "small" is left: its few bytes, the big one's gone with it. */
    wc_objects_usage(f->wc, &obj_bytes, &objs);
    assert_int_equal(objs, 1);
    assert_true(obj_bytes > 0 && obj_bytes < 2000);

    /* An event over the whole budget alone: kept, and everything before it
     * evicted (the newest event is always there). */
    int64_t rh = put_big(f->s, "ns", "huge", 300000, 'h');
    assert_int_equal(wc_wait(f->wc, rh, 5000), 0);
    wc_history_usage(f->wc, &bytes, &events);
    assert_int_equal(events, 1);
    wc_objects_usage(f->wc, &obj_bytes, &objs);
    assert_int_equal(objs, 2);
    assert_true(obj_bytes >= 300000 && obj_bytes < 300000 + 4000);
    assert_int_equal(wc_oldest(f->wc), rs);
    assert_int_equal(wc_watch(f->wc, PFX, rs, NULL, &w), 0);
    expect_event(w, WC_ADDED, rh, PFX "ns/huge");
    wc_watcher_close(w);
}

/* on_end's counter. */
static void count_end(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
}

static void test_slow_watcher_bytes(void **state)
{
    fixture_t *f = *state;
    open_cache(f, 0);
    atomic_int ended = 0, fast_ended = 0;
    wc_watch_opts_t slow_o = {.backlog_bytes = 64 << 10, .on_end = count_end,
                              .on_end_arg = &ended};
    wc_watch_opts_t fast_o = {.on_end = count_end, .on_end_arg = &fast_ended};
    wc_watcher_t *slow, *fast;
    assert_int_equal(wc_watch(f->wc, PFX, -1, &slow_o, &slow), 0);
    assert_int_equal(wc_watch(f->wc, PFX, -1, &fast_o, &fast), 0);
    /* Ten 10 KB events: the first (taken next) and six more fit 64 KiB of
     * queue, the eighth ends it. */
    int64_t r[10];
    for (int i = 0; i < 10; i++) {
        char name[8];
        snprintf(name, sizeof name, "k%d", i);
        r[i] = put_big(f->s, "ns", name, 10000, 'x');
    }
    assert_int_equal(wc_wait(f->wc, r[9], 5000), 0);
    assert_int_equal(atomic_load(&ended), 1); /* told once, at once */
    assert_int_equal(atomic_load(&fast_ended), 0);
    wc_event_t ev;
    size_t got = 0, sent = 0;
    while (wc_watcher_next(slow, 0, &ev) == 0) {
        assert_int_equal(ev.rev, r[got]);
        sent += ev.obj->json_len;
        got++;
        wc_event_clear(&ev);
    }
    print_message("a watcher with a 64 KiB queue took %zu of 10 events (%zu bytes)\n", got,
                  sent);
    assert_true(got >= 6 && got <= 7);
    assert_true(sent <= (64 << 10) + 10000 + 512);
    assert_int_equal(wc_watcher_next(slow, 0, &ev), KP_ETOOLARGE);
    wc_watcher_close(slow);
    for (int i = 0; i < 10; i++) {
        next_ok(fast, &ev);
        assert_int_equal(ev.rev, r[i]);
        wc_event_clear(&ev);
    }

    /* One event larger than the budget, to an empty queue: delivered. */
    assert_int_equal(wc_watch(f->wc, PFX, -1, &slow_o, &slow), 0);
    int64_t rb = put_big(f->s, "ns", "big", 100000, 'y');
    next_ok(slow, &ev);
    assert_int_equal(ev.rev, rb);
    wc_event_clear(&ev);
    assert_int_equal(atomic_load(&ended), 1);
    /* A replay does not count: from r[0], eleven events (1 MB) queue. */
    wc_watcher_t *replayed;
    assert_int_equal(wc_watch(f->wc, PFX, r[0] - 1, &slow_o, &replayed), 0);
    for (int i = 0; i < 10; i++) {
        next_ok(replayed, &ev);
        assert_int_equal(ev.rev, r[i]);
        wc_event_clear(&ev);
    }
    next_ok(replayed, &ev);
    assert_int_equal(ev.rev, rb);
    wc_event_clear(&ev);
    wc_watcher_close(replayed);
    wc_watcher_close(slow);
    wc_watcher_close(fast);
    assert_int_equal(atomic_load(&ended), 1);
    assert_int_equal(atomic_load(&fast_ended), 0);
}

static void test_watcher_deadline(void **state)
{
    fixture_t *f = *state;
    open_cache(f, 0);
    atomic_int ended = 0, cancelled_ended = 0, later_ended = 0;
    int64_t t0 = clock_mono_ns();
    wc_watch_opts_t o = {.deadline_ns = t0 + 300 * 1000000ll, .on_end = count_end,
                         .on_end_arg = &ended};
    wc_watch_opts_t oc = o, ol = o;
    oc.on_end_arg = &cancelled_ended;
    ol.on_end_arg = &later_ended;
    ol.deadline_ns = t0 + 60 * 1000000000ll;
    wc_watcher_t *w, *wcan, *wlater;
    assert_int_equal(wc_watch(f->wc, PFX, -1, &o, &w), 0);
    assert_int_equal(wc_watch(f->wc, PFX, -1, &oc, &wcan), 0);
    assert_int_equal(wc_watch(f->wc, PFX, -1, &ol, &wlater), 0);
    wc_watcher_cancel(wcan); /* its owner knows: never told */
    int64_t rev = put(f->s, "ns", "a", "v");
    assert_int_equal(wc_wait(f->wc, rev, 5000), 0);
    /* Nobody calls wc_watcher_next(): the cache ends it by itself. */
    while (!atomic_load(&ended) && clock_mono_ns() - t0 < 5000 * 1000000ll) usleep(10000);
    double ms = (clock_mono_ns() - t0) / 1e6;
    print_message("a deadline of 300 ms was enforced after %.0f ms\n", ms);
    assert_int_equal(atomic_load(&ended), 1);
    assert_true(ms >= 300 && ms < 1500);
    wc_event_t ev;
    next_ok(w, &ev); /* what was queued still comes, then the end */
    assert_int_equal(ev.rev, rev);
    wc_event_clear(&ev);
    assert_int_equal(wc_watcher_next(w, -1, &ev), KP_ETIMEDOUT);
    wc_watcher_close(w);
    wc_watcher_close(wcan);
    assert_int_equal(atomic_load(&cancelled_ended), 0);
    /* wc_end() tells the owners too (their stream may be stuck elsewhere). */
    assert_int_equal(atomic_load(&later_ended), 0);
    wc_end(f->wc);
    assert_int_equal(atomic_load(&later_ended), 1);
    assert_int_equal(wc_watcher_next(wlater, -1, &ev), KP_ECLOSED);
    wc_watcher_close(wlater);
}

/* ---- cancel and close ---- */

typedef struct blocked {
    wc_watcher_t *w;
    wc_t *wc;
    int64_t wait_rev;
    atomic_int started;
    int rc;
} blocked_t;

static void *blocked_next(void *arg)
{
    blocked_t *b = arg;
    wc_event_t ev;
    atomic_store(&b->started, 1);
    b->rc = wc_watcher_next(b->w, -1, &ev);
    return NULL;
}

static void *blocked_wait(void *arg)
{
    blocked_t *b = arg;
    atomic_store(&b->started, 1);
    b->rc = wc_wait(b->wc, b->wait_rev, -1);
    return NULL;
}

static void test_cancel(void **state)
{
    fixture_t *f = *state;
    open_cache(f, 0);
    blocked_t b = {0};
    assert_int_equal(wc_watch(f->wc, PFX, -1, NULL, &b.w), 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, blocked_next, &b), 0);
    usleep(100 * 1000);
    wc_watcher_cancel(b.w);
    pthread_join(t, NULL);
    assert_int_equal(b.rc, KP_ECLOSED);
    wc_event_t ev;
    put(f->s, "ns", "a", "v"); /* queued or not, a cancelled watcher stays closed */
    assert_int_equal(wc_watcher_next(b.w, 0, &ev), KP_ECLOSED);
    wc_watcher_close(b.w);
    wc_watcher_close(NULL);
}

/* wc_end(): every watcher ends at once, new ones are refused, reads go on. */
static void test_end(void **state)
{
    fixture_t *f = *state;
    open_cache(f, 0);
    int64_t rev = put(f->s, "ns", "a", "v");
    assert_int_equal(wc_wait(f->wc, rev, 5000), 0);
    blocked_t b = {0};
    wc_watcher_t *queued;
    assert_int_equal(wc_watch(f->wc, PFX, -1, NULL, &b.w), 0);
    assert_int_equal(wc_watch(f->wc, PFX, rev - 1, NULL, &queued), 0); /* holds an event */
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, blocked_next, &b), 0);
    while (!atomic_load(&b.started)) usleep(1000);
    usleep(100 * 1000);
    wc_end(f->wc);
    pthread_join(t, NULL);
    assert_int_equal(b.rc, KP_ECLOSED);
    wc_event_t ev;
    assert_int_equal(wc_watcher_next(queued, 0, &ev), KP_ECLOSED);
    wc_watcher_t *late = NULL;
    assert_int_equal(wc_watch(f->wc, PFX, -1, NULL, &late), KP_ECLOSED);
    assert_null(late);
    /* The cache still follows the store and answers reads. */
    int64_t rev2 = put(f->s, "ns", "b", "v");
    assert_int_equal(wc_wait(f->wc, rev2, 5000), 0);
    const wc_obj_t *o;
    assert_int_equal(wc_get(f->wc, PFX "ns/b", &o), 0);
    wc_obj_unref(o);
    wc_end(f->wc); /* idempotent */
    wc_watcher_close(b.w);
    wc_watcher_close(queued);
}

static void test_close_with_watchers(void **state)
{
    fixture_t *f = *state;
    open_cache(f, 0);
    int64_t rev = put(f->s, "ns", "a", "v");
    const wc_obj_t *o;
    assert_int_equal(wc_wait(f->wc, rev, 5000), 0);
    assert_int_equal(wc_get(f->wc, PFX "ns/a", &o), 0);

    blocked_t b = {0}, bw = {.wc = f->wc, .wait_rev = rev + 1000};
    wc_watcher_t *idle, *queued;
    assert_int_equal(wc_watch(f->wc, PFX, -1, NULL, &b.w), 0);
    assert_int_equal(wc_watch(f->wc, PFX, -1, NULL, &idle), 0);
    assert_int_equal(wc_watch(f->wc, PFX, rev - 1, NULL, &queued), 0); /* holds an event */
    pthread_t t1, t2;
    assert_int_equal(pthread_create(&t1, NULL, blocked_next, &b), 0);
    assert_int_equal(pthread_create(&t2, NULL, blocked_wait, &bw), 0);
    /* wc_close() may only overlap calls already blocked (watchcache.h). */
    while (!atomic_load(&b.started) || !atomic_load(&bw.started)) usleep(1000);
    usleep(300 * 1000);
    wc_close(f->wc);
    f->wc = NULL;
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    assert_int_equal(b.rc, KP_ECLOSED);
    assert_int_equal(bw.rc, KP_ECLOSED);

    wc_event_t ev;
    assert_int_equal(wc_watcher_next(idle, 0, &ev), KP_ECLOSED);
    assert_int_equal(wc_watcher_next(queued, 1000, &ev), KP_ECLOSED);
    wc_watcher_cancel(idle);
    wc_watcher_close(b.w);
    wc_watcher_close(queued);
    wc_watcher_close(idle); /* the last reference: frees the cache */
    /* An object reference outlives the cache. */
    check_obj(o, PFX "ns/a", rev);
    wc_obj_unref(o);
}

/* ---- a corrupt value ---- */

static void test_corrupt_value_stops(void **state)
{
    fixture_t *f = *state;
    open_cache(f, 0);
    wc_watcher_t *w;
    assert_int_equal(wc_watch(f->wc, PFX, -1, NULL, &w), 0);
    int64_t good = put(f->s, "ns", "good", "v");
    int64_t bad;
    assert_int_equal(store_create(f->s, PFX "ns/bad", "{not json", 9, &bad), 0);
    put(f->s, "ns", "after", "v");

    assert_int_equal(wc_wait(f->wc, bad, 5000), KP_ECORRUPT);
    assert_int_equal(wc_wait(f->wc, good, 0), 0); /* applied before the bad one */
    assert_int_equal(wc_revision(f->wc), good);
    wc_event_t ev;
    next_ok(w, &ev);
    assert_int_equal(ev.rev, good);
    wc_event_clear(&ev);
    assert_int_equal(wc_watcher_next(w, 1000, &ev), KP_ECORRUPT);
    wc_watcher_close(w);

    wc_list_t *l;
    assert_int_equal(wc_list(f->wc, PFX, NULL, 0, bad, 5000, &l), KP_ECORRUPT);
    assert_int_equal(wc_list(f->wc, PFX, NULL, 0, 0, 0, &l), 0); /* what it has */
    assert_int_equal(l->count, 1);
    wc_list_free(l);
    assert_int_equal(wc_watch(f->wc, PFX, -1, NULL, &w), KP_ECORRUPT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_initial_load, setup, teardown),
        cmocka_unit_test_setup_teardown(test_convert, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_rejects_non_object, setup, teardown),
        cmocka_unit_test_setup_teardown(test_paging, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_at, setup, teardown),
        cmocka_unit_test_setup_teardown(test_follow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_waits_for_min_rev, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_events, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_from_past, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_after_store_compaction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_seam_concurrent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slow_watcher, setup, teardown),
        cmocka_unit_test_setup_teardown(test_encode_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offer_published, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offer_too_late, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offer_never_taken, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offer_bounded_and_failed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offer_concurrent_writers, setup, teardown),
        cmocka_unit_test(test_offer_spliced),
        cmocka_unit_test_setup_teardown(test_managed_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_history_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slow_watcher_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watcher_deadline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_with_watchers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_value_stops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_obj_selectors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
