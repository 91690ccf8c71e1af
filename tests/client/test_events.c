/*
 * test_events.c -- the event recorder (src/client/events.c) against a real
 * kplane server.
 *
 * What it proves:
 *  - An Event appears with the fields Kubernetes clients read: metadata.name
 *    "<object>.<16 hex>" in the object's namespace, involvedObject (kind,
 *    namespace, name, uid, apiVersion, resourceVersion), reason, message,
 *    type, source.component, reportingComponent, first/lastTimestamp
 *    (RFC 3339), count 1.
 *  - A repeat of the same (object, type, reason, message) bumps count to 2 on
 *    the same Event; another message, type or object makes a new Event.
 *  - A cluster-scoped object's Events go to "default", without a namespace
 *    in involvedObject; a very long object name still makes a valid name.
 *  - A repeat whose Event was deleted makes a new Event that keeps the count.
 *  - Many distinct events are all written; kc_recorder_free flushes what is
 *    queued.
 *  - With no server, kc_event never blocks, the queue drops what is over its
 *    cap, and kc_recorder_free returns within its flush bound.
 *  - Bad arguments are refused without a crash.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/client.h"
#include "client/events.h"
#include "kpserver.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "testutil.h"

#define NS "ev-test"

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
    kpserver_start(&f->s, NULL);
    if (kpserver_client(&f->s, &f->cfg, &f->storage, &f->c)) return -1;
    json_t *ns = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata",
                           "name", NS);
    int rc = kc_create(f->c, &kc_namespaces, NULL, ns, NULL, NULL);
    json_decref(ns);
    if (rc) return -1;
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

static double now_ms(void)
{
    return (double)clock_mono_ns() / 1e6;
}

static kc_recorder_t *recorder(kc_client_t *c, const char *component)
{
    kc_recorder_t *rec = NULL;
    assert_int_equal(kc_recorder_new(c, component, &rec), 0);
    assert_non_null(rec);
    return rec;
}

/* A ConfigMap as the server returns it (with uid and resourceVersion). */
static json_t *configmap(kc_client_t *c, const char *name)
{
    json_t *cm = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                           "metadata", "name", name, "namespace", NS, "data", "k", "v");
    json_t *out = NULL;
    assert_int_equal(kc_create(c, &kc_configmaps, NS, cm, &out, NULL), 0);
    json_decref(cm);
    assert_non_null(out);
    return out;
}

/* Wait until every queued event is written or dropped. */
static kc_recorder_stats_t settle(kc_recorder_t *rec, int ms)
{
    kc_recorder_stats_t s;
    double t0 = now_ms();
    for (;;) {
        kc_recorder_stats(rec, &s);
        if (s.created + s.patched + s.dropped >= s.recorded) return s;
        if (now_ms() - t0 > ms) fail_msg("events still pending after %d ms", ms);
        tu_sleep_ms(5);
    }
}

/* The Events about object `name` in namespace ns (the caller's). */
static json_t *events_of(kc_client_t *c, const char *ns, const char *name)
{
    char q[300];
    snprintf(q, sizeof q, "fieldSelector=involvedObject.name%%3D%s", name);
    json_t *list = NULL;
    assert_int_equal(kc_list(c, &kc_events, ns, q, &list), 0);
    json_t *items = json_incref(json_object_get(list, "items"));
    json_decref(list);
    assert_true(json_is_array(items));
    return items;
}

static const char *s_at(const json_t *o, const char *a, const char *b)
{
    const json_t *v = b ? json_object_get(json_object_get(o, a), b) : json_object_get(o, a);
    const char *s = json_string_value(v);
    return s ? s : "";
}

static long long count_of(const json_t *ev)
{
    return json_integer_value(json_object_get(ev, "count"));
}

static void assert_rfc3339(const char *s)
{
    const char *shape = "dddd-dd-ddTdd:dd:ddZ";
    assert_int_equal(strlen(s), strlen(shape));
    for (size_t i = 0; shape[i]; i++) {
        if (shape[i] == 'd')
            assert_true(isdigit((unsigned char)s[i]));
        else
            assert_int_equal(s[i], shape[i]);
    }
}

/* "<prefix>.<16 hex>" */
static void assert_event_name(const char *name, const char *prefix)
{
    size_t n = strlen(prefix);
    assert_int_equal(strlen(name), n + 17);
    assert_memory_equal(name, prefix, n);
    assert_int_equal(name[n], '.');
    for (size_t i = n + 1; name[i]; i++)
        assert_true(isxdigit((unsigned char)name[i]));
}

/* ---- tests ---- */

static void test_bad_arguments(void **state)
{
    fx_t *f = *state;
    kc_recorder_t *rec = (kc_recorder_t *)1;
    assert_int_equal(kc_recorder_new(f->c, "", &rec), KP_EINVAL);
    assert_null(rec);
    assert_int_equal(kc_recorder_new(NULL, "x", &rec), KP_EINVAL);
    assert_int_equal(kc_recorder_new(f->c, NULL, &rec), KP_EINVAL);
    rec = recorder(f->c, "test");
    json_t *noname = json_pack("{s:s,s:{}}", "kind", "ConfigMap", "metadata");
    json_t *cm = configmap(f->c, "bad-args");
    kc_event(rec, NULL, "Normal", "R", "m");
    kc_event(rec, noname, "Normal", "R", "m");
    kc_event(rec, cm, "Info", "R", "m"); /* not Normal or Warning */
    kc_event(rec, cm, NULL, "R", "m");
    kc_event(rec, cm, "Normal", NULL, "m");
    kc_event(rec, cm, "Normal", "", "m");
    kc_event(NULL, cm, "Normal", "R", "m");
    kc_recorder_stats_t s;
    kc_recorder_stats(rec, &s);
    assert_int_equal(s.recorded, 0);
    assert_int_equal(s.dropped, 0);
    json_decref(noname);
    json_decref(cm);
    kc_recorder_free(rec);
    kc_recorder_free(NULL);
}

static void test_event_fields(void **state)
{
    fx_t *f = *state;
    json_t *cm = configmap(f->c, "cm-fields");
    kc_recorder_t *rec = recorder(f->c, "test-controller");
    kc_event(rec, cm, "Warning", "FailedThing", "could not %s %d times", "frob", 3);
    kc_recorder_stats_t s = settle(rec, 5000);
    assert_int_equal(s.recorded, 1);
    assert_int_equal(s.created, 1);
    assert_int_equal(s.dropped, 0);

    json_t *items = events_of(f->c, NS, "cm-fields");
    assert_int_equal(json_array_size(items), 1);
    json_t *ev = json_array_get(items, 0);
    assert_event_name(s_at(ev, "metadata", "name"), "cm-fields");
    assert_string_equal(s_at(ev, "metadata", "namespace"), NS);
    assert_string_equal(s_at(ev, "involvedObject", "kind"), "ConfigMap");
    assert_string_equal(s_at(ev, "involvedObject", "apiVersion"), "v1");
    assert_string_equal(s_at(ev, "involvedObject", "namespace"), NS);
    assert_string_equal(s_at(ev, "involvedObject", "name"), "cm-fields");
    assert_string_equal(s_at(ev, "involvedObject", "uid"), s_at(cm, "metadata", "uid"));
    assert_true(s_at(cm, "metadata", "uid")[0]);
    assert_string_equal(s_at(ev, "involvedObject", "resourceVersion"),
                        s_at(cm, "metadata", "resourceVersion"));
    assert_string_equal(s_at(ev, "reason", NULL), "FailedThing");
    assert_string_equal(s_at(ev, "message", NULL), "could not frob 3 times");
    assert_string_equal(s_at(ev, "type", NULL), "Warning");
    assert_string_equal(s_at(ev, "source", "component"), "test-controller");
    assert_string_equal(s_at(ev, "reportingComponent", NULL), "test-controller");
    assert_rfc3339(s_at(ev, "firstTimestamp", NULL));
    assert_rfc3339(s_at(ev, "lastTimestamp", NULL));
    assert_string_equal(s_at(ev, "firstTimestamp", NULL), s_at(ev, "lastTimestamp", NULL));
    assert_int_equal(count_of(ev), 1);
    json_decref(items);
    json_decref(cm);
    kc_recorder_free(rec);
}

static void test_repeat_bumps_count(void **state)
{
    fx_t *f = *state;
    json_t *cm = configmap(f->c, "cm-repeat");
    kc_recorder_t *rec = recorder(f->c, "test");
    kc_event(rec, cm, "Normal", "Synced", "synced %s", "cm-repeat");
    settle(rec, 5000);
    json_t *items = events_of(f->c, NS, "cm-repeat");
    assert_int_equal(json_array_size(items), 1);
    char name[300], first[40];
    snprintf(name, sizeof name, "%s", s_at(json_array_get(items, 0), "metadata", "name"));
    snprintf(first, sizeof first, "%s", s_at(json_array_get(items, 0), "firstTimestamp", NULL));
    json_decref(items);

    tu_sleep_ms(1100); /* so that lastTimestamp moves on a second */
    kc_event(rec, cm, "Normal", "Synced", "synced %s", "cm-repeat");
    kc_recorder_stats_t s = settle(rec, 5000);
    assert_int_equal(s.created, 1);
    assert_int_equal(s.patched, 1);
    items = events_of(f->c, NS, "cm-repeat");
    assert_int_equal(json_array_size(items), 1);
    json_t *ev = json_array_get(items, 0);
    assert_string_equal(s_at(ev, "metadata", "name"), name);
    assert_int_equal(count_of(ev), 2);
    assert_string_equal(s_at(ev, "firstTimestamp", NULL), first);
    assert_true(strcmp(s_at(ev, "lastTimestamp", NULL), first) > 0);
    json_decref(items);

    /* A third repeat, then other messages and types: new Events. */
    kc_event(rec, cm, "Normal", "Synced", "synced %s", "cm-repeat");
    kc_event(rec, cm, "Normal", "Synced", "synced again");
    kc_event(rec, cm, "Warning", "Synced", "synced %s", "cm-repeat");
    s = settle(rec, 5000);
    assert_int_equal(s.created, 3);
    assert_int_equal(s.patched, 2);
    items = events_of(f->c, NS, "cm-repeat");
    assert_int_equal(json_array_size(items), 3);
    int found = 0;
    size_t i;
    json_array_foreach(items, i, ev) {
        if (!strcmp(s_at(ev, "metadata", "name"), name)) {
            assert_int_equal(count_of(ev), 3);
            found++;
        } else {
            assert_int_equal(count_of(ev), 1);
        }
    }
    assert_int_equal(found, 1);
    json_decref(items);
    json_decref(cm);
    kc_recorder_free(rec);
}

/* The same message about a different object (another uid) is another Event. */
static void test_objects_are_apart(void **state)
{
    fx_t *f = *state;
    json_t *a = configmap(f->c, "cm-a"), *b = configmap(f->c, "cm-b");
    kc_recorder_t *rec = recorder(f->c, "test");
    kc_event(rec, a, "Normal", "Same", "same text");
    kc_event(rec, b, "Normal", "Same", "same text");
    kc_event(rec, a, "Normal", "Same", "same text");
    kc_recorder_stats_t s = settle(rec, 5000);
    assert_int_equal(s.created, 2);
    assert_int_equal(s.patched, 1);
    json_t *ia = events_of(f->c, NS, "cm-a"), *ib = events_of(f->c, NS, "cm-b");
    assert_int_equal(json_array_size(ia), 1);
    assert_int_equal(json_array_size(ib), 1);
    assert_int_equal(count_of(json_array_get(ia, 0)), 2);
    assert_int_equal(count_of(json_array_get(ib, 0)), 1);
    json_decref(ia);
    json_decref(ib);
    json_decref(a);
    json_decref(b);
    kc_recorder_free(rec);
}

static void test_cluster_scoped_and_long_names(void **state)
{
    fx_t *f = *state;
    json_t *ns = NULL;
    assert_int_equal(kc_get(f->c, &kc_namespaces, NULL, NS, &ns), 0);
    kc_recorder_t *rec = recorder(f->c, "test");
    kc_event(rec, ns, "Normal", "Checked", "namespace checked");

    /* A 253-character name: the Event's name is cut to stay valid. */
    char longname[254];
    memset(longname, 'x', 253);
    longname[253] = '\0';
    json_t *cm = configmap(f->c, longname);
    kc_event(rec, cm, "Normal", "Long", "long name");
    kc_recorder_stats_t s = settle(rec, 5000);
    assert_int_equal(s.created, 2);
    assert_int_equal(s.dropped, 0);

    json_t *items = events_of(f->c, "default", NS);
    assert_int_equal(json_array_size(items), 1);
    json_t *ev = json_array_get(items, 0);
    assert_string_equal(s_at(ev, "metadata", "namespace"), "default");
    assert_string_equal(s_at(ev, "involvedObject", "kind"), "Namespace");
    assert_false(json_object_get(json_object_get(ev, "involvedObject"), "namespace"));
    assert_event_name(s_at(ev, "metadata", "name"), NS);
    json_decref(items);

    items = events_of(f->c, NS, longname);
    assert_int_equal(json_array_size(items), 1);
    const char *evname = s_at(json_array_get(items, 0), "metadata", "name");
    assert_int_equal(strlen(evname), 253);
    longname[253 - 17] = '\0';
    assert_event_name(evname, longname);
    json_decref(items);
    json_decref(cm);
    json_decref(ns);
    kc_recorder_free(rec);
}

/* The Event a repeat would bump is gone: a new one, count kept. */
static void test_repeat_of_deleted_event(void **state)
{
    fx_t *f = *state;
    json_t *cm = configmap(f->c, "cm-gone");
    kc_recorder_t *rec = recorder(f->c, "test");
    kc_event(rec, cm, "Normal", "Again", "and again");
    settle(rec, 5000);
    json_t *items = events_of(f->c, NS, "cm-gone");
    assert_int_equal(json_array_size(items), 1);
    char name[300];
    snprintf(name, sizeof name, "%s", s_at(json_array_get(items, 0), "metadata", "name"));
    json_decref(items);
    assert_int_equal(kc_delete(f->c, &kc_events, NS, name, NULL, NULL), 0);

    kc_event(rec, cm, "Normal", "Again", "and again");
    kc_recorder_stats_t s = settle(rec, 5000);
    assert_int_equal(s.created, 2);
    assert_int_equal(s.dropped, 0);
    items = events_of(f->c, NS, "cm-gone");
    assert_int_equal(json_array_size(items), 1);
    json_t *ev = json_array_get(items, 0);
    assert_string_not_equal(s_at(ev, "metadata", "name"), name);
    assert_int_equal(count_of(ev), 2);
    json_decref(items);

    kc_event(rec, cm, "Normal", "Again", "and again"); /* bumps the new one */
    s = settle(rec, 5000);
    assert_int_equal(s.patched, 1);
    items = events_of(f->c, NS, "cm-gone");
    assert_int_equal(json_array_size(items), 1);
    assert_int_equal(count_of(json_array_get(items, 0)), 3);
    json_decref(items);
    json_decref(cm);
    kc_recorder_free(rec);
}

static void test_many_distinct(void **state)
{
    fx_t *f = *state;
    /* 300 different events about one object: Kubernetes' spam filter lets
     * the first KC_EVENTS_SPAM_BURST through and drops the rest. */
    enum { N = 300, B = KC_EVENTS_SPAM_BURST };
    json_t *cm = configmap(f->c, "cm-many");
    kc_recorder_t *rec = recorder(f->c, "test");
    double t0 = now_ms();
    for (int i = 0; i < N; i++)
        kc_event(rec, cm, "Normal", "Step", "step %d", i);
    assert_true(now_ms() - t0 < 1000); /* queued, not written */
    kc_recorder_stats_t s = settle(rec, 60000);
    assert_int_equal(s.recorded, B);
    assert_int_equal(s.created, B);
    assert_int_equal(s.patched, 0);
    json_t *items = events_of(f->c, NS, "cm-many");
    assert_int_equal(json_array_size(items), B);
    char seen[B] = {0};
    size_t i;
    json_t *ev;
    json_array_foreach(items, i, ev) {
        int k = (int)strtol(s_at(ev, "message", NULL) + 5, NULL, 10);
        assert_true(k >= 0 && k < B); /* the first ones, in order of recording */
        assert_false(seen[k]);
        seen[k] = 1;
        assert_int_equal(count_of(ev), 1);
    }
    json_decref(items);
    /* One event each about 40 objects: all written. */
    enum { M = 40 };
    for (int k = 0; k < M; k++) {
        char name[32];
        snprintf(name, sizeof name, "cm-each-%d", k);
        json_t *o = configmap(f->c, name);
        kc_event(rec, o, "Normal", "Each", "one of %d", M);
        json_decref(o);
    }
    s = settle(rec, 60000);
    assert_int_equal(s.created, B + M);
    json_decref(cm);
    kc_recorder_free(rec);
}

static void test_free_flushes(void **state)
{
    fx_t *f = *state;
    enum { N = KC_EVENTS_SPAM_BURST }; /* one object: as many as the spam filter lets by */
    json_t *cm = configmap(f->c, "cm-flush");
    kc_recorder_t *rec = recorder(f->c, "test");
    for (int i = 0; i < N; i++)
        kc_event(rec, cm, "Normal", "Flush", "flush %d", i);
    kc_recorder_free(rec); /* at once: what is queued is written first */
    json_t *items = events_of(f->c, NS, "cm-flush");
    assert_int_equal(json_array_size(items), N);
    json_decref(items);
    json_decref(cm);
}

/* No server at all: kc_event stays quick, the queue caps, free is bounded. */
static void test_no_server(void **state)
{
    (void)state;
    kc_config_t cfg = {.server = "https://127.0.0.1:1", .timeout_ms = 2000};
    kc_client_t *c = NULL;
    assert_int_equal(kc_client_new(&cfg, &c), 0);
    kc_recorder_t *rec = recorder(c, "test");
    enum { N = KC_EVENTS_QUEUE_MAX + 500 };
    json_t *objs[N];
    for (int i = 0; i < N; i++) /* distinct objects: past the spam filter */
        objs[i] = json_pack("{s:s,s:s,s:{s:s,s:s,s:s}}", "apiVersion", "v1", "kind", "Pod",
                            "metadata", "name", "p", "namespace", "x", "uid", "u-1");
    for (int i = 0; i < N; i++) {
        char uid[32];
        snprintf(uid, sizeof uid, "u-%d", i);
        json_object_set_new(json_object_get(objs[i], "metadata"), "uid", json_string(uid));
    }
    double t0 = now_ms();
    for (int i = 0; i < N; i++)
        kc_event(rec, objs[i], "Warning", "Lost", "lost %d", i);
    assert_true(now_ms() - t0 < 2000);
    kc_recorder_stats_t s;
    kc_recorder_stats(rec, &s);
    assert_true(s.recorded <= KC_EVENTS_QUEUE_MAX + 5); /* the writer took a few */
    /* drops: the queue was full (and maybe one the writer gave up on) */
    assert_true(s.recorded + s.dropped >= N);
    assert_true(s.dropped >= N - KC_EVENTS_QUEUE_MAX - 5);
    assert_int_equal(s.created, 0);
    t0 = now_ms();
    kc_recorder_free(rec);
    double took = now_ms() - t0;
    assert_true(took < KC_EVENTS_FLUSH_MS + 2500);
    for (int i = 0; i < N; i++) json_decref(objs[i]);
    kc_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_event_fields),
        cmocka_unit_test(test_repeat_bumps_count),
        cmocka_unit_test(test_objects_are_apart),
        cmocka_unit_test(test_cluster_scoped_and_long_names),
        cmocka_unit_test(test_repeat_of_deleted_event),
        cmocka_unit_test(test_many_distinct),
        cmocka_unit_test(test_free_flushes),
    };
    const struct CMUnitTest offline[] = {
        cmocka_unit_test(test_no_server),
    };
    int failed = cmocka_run_group_tests_name("events", tests, fx_setup, fx_teardown);
    failed += cmocka_run_group_tests_name("events_no_server", offline, NULL, NULL);
    return failed;
}
