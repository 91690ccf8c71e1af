/*
 * test_replicaset_api.c -- the ReplicaSet controller inside a real kplane
 * server (tests/client/kpserver.c: controllers, scheduler and 20 simulated
 * nodes), watched from outside.
 *
 * What it proves: "never creates or deletes twice on one observation". A
 * ReplicaSet of 800 replicas gets exactly 800 pods, none of them deleted;
 * scaled to 200 it deletes exactly 600 and creates none. Counted from a
 * watch that starts before the ReplicaSet exists, so that every pod that
 * ever existed is seen. The burst is large on purpose: the controller's
 * pod list then takes long enough for the informer to count off the last
 * expected creates meanwhile, which is how expectations read after the
 * list made a short list look final (62 extra pods in 1,000, then deleted).
 * The same holds for a ReplicationController (200, scaled to 50), which the
 * same controller serves through its adapter.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/sdk.h"
#include "kpserver.h"
#include "lib/err.h"

#define NS   "default"
#define SEL  "labelSelector=app%3Dburst"
#define MANY 800
#define FEW  200
#define RC_MANY 200
#define RC_FEW  50

typedef struct fixture {
    kpserver_t srv;
    json_t *storage;
    kc_client_t *c;
    kc_watch_t *w;
    char rv[32];     /* the last resourceVersion the watch delivered */
    int rewatches;   /* watches the server ended that were opened again */
    json_t *created; /* pod names seen */
    json_t *deleted; /* pod names seen with a deletionTimestamp, or DELETED */
    const kc_resource_t *res; /* replicasets or replicationcontrollers */
    int many, few;
} fixture_t;

static const char *const server_flags[] = {"--nodes", "20", NULL};

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    kpserver_start(&f->srv, server_flags);
    assert_int_equal(kpserver_client(&f->srv, NULL, &f->storage, &f->c), 0);
    f->created = json_object();
    f->deleted = json_object();
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    kc_watch_close(f->w);
    json_decref(f->created);
    json_decref(f->deleted);
    kc_client_free(f->c);
    json_decref(f->storage);
    kpserver_stop(&f->srv);
    free(f);
    return 0;
}

/* A ReplicationController of the same pods: its selector is a label map. */
static json_t *replicationcontroller(int replicas)
{
    return json_pack("{s:s, s:s, s:{s:s}, s:{s:i, s:{s:s}, s:{s:{s:{s:s}}, "
                     "s:{s:[{s:s, s:s}]}}}}",
                     "apiVersion", "v1", "kind", "ReplicationController", "metadata", "name",
                     "burst", "spec", "replicas", replicas, "selector", "app", "burst",
                     "template", "metadata", "labels", "app", "burst", "spec", "containers",
                     "name", "app", "image", "registry.k8s.io/pause:3.9");
}

static json_t *replicaset(int replicas)
{
    return json_pack("{s:s, s:s, s:{s:s}, s:{s:i, s:{s:{s:s}}, s:{s:{s:{s:s}}, "
                     "s:{s:[{s:s, s:s}]}}}}",
                     "apiVersion", "apps/v1", "kind", "ReplicaSet", "metadata", "name", "burst",
                     "spec", "replicas", replicas, "selector", "matchLabels", "app", "burst",
                     "template", "metadata", "labels", "app", "burst", "spec", "containers",
                     "name", "app", "image", "registry.k8s.io/pause:3.9");
}

/* Record the watch's events until `done` holds (checked after each event)
 * and then nothing more arrives for `quiet_ms`. */
static void drain(fixture_t *f, int (*done)(fixture_t *), int quiet_ms)
{
    int finished = 0;
    for (;;) {
        kc_event_type_t type;
        json_t *pod;
        int rc = kc_watch_next(f->w, finished ? quiet_ms : 120000, &type, &pod);
        if (rc == KP_ETIMEDOUT && finished) return;
        if (rc && rc != KP_ETIMEDOUT && f->rewatches < 20) {
            /* The server closes a watcher that falls behind its queue budget
             * (as Kubernetes' cacheWatcher): watch again from the last
             * version seen, as an informer does; nothing is missed or
             * seen twice. */
            kc_watch_close(f->w);
            f->w = NULL;
            f->rewatches++;
            if (kc_watch_open(f->c, &kc_pods, NS, SEL, f->rv, 0, &f->w))
                fail_msg("watching pods again from %s", f->rv);
            continue;
        }
        if (rc) fail_msg("watching pods: %s", err_str(rc));
        const char *prv = json_string_value(
            json_object_get(json_object_get(pod, "metadata"), "resourceVersion"));
        if (prv) snprintf(f->rv, sizeof f->rv, "%s", prv);
        if (type != KC_BOOKMARK) {
            const json_t *meta = json_object_get(pod, "metadata");
            const char *name = json_string_value(json_object_get(meta, "name"));
            json_object_set_new(f->created, name, json_true());
            if (type == KC_DELETED || json_object_get(meta, "deletionTimestamp"))
                json_object_set_new(f->deleted, name, json_true());
        }
        json_decref(pod);
        if (!finished) finished = done(f);
    }
}

static int rs_replicas(fixture_t *f)
{
    json_t *rs;
    if (kc_get(f->c, f->res, NS, "burst", &rs)) return -1;
    int n = (int)json_integer_value(json_object_get(json_object_get(rs, "status"), "replicas"));
    json_decref(rs);
    return n;
}

static int all_created(fixture_t *f)
{
    return json_object_size(f->created) >= (size_t)f->many && rs_replicas(f) == f->many;
}

static int scaled_down(fixture_t *f)
{
    return json_object_size(f->deleted) >= (size_t)(f->many - f->few) && rs_replicas(f) == f->few;
}

static void no_double_create_or_delete(fixture_t *f)
{
    json_t *list;
    assert_int_equal(kc_list(f->c, &kc_pods, NS, SEL, &list), 0);
    char rv[32];
    snprintf(rv, sizeof rv, "%s",
             json_string_value(json_object_get(json_object_get(list, "metadata"), "resourceVersion")));
    json_decref(list);
    snprintf(f->rv, sizeof f->rv, "%s", rv);
    assert_int_equal(kc_watch_open(f->c, &kc_pods, NS, SEL, rv, 0, &f->w), 0);

    json_t *rs = f->res == &kc_replicasets ? replicaset(f->many) : replicationcontroller(f->many);
    assert_int_equal(kc_create(f->c, f->res, NS, rs, NULL, NULL), 0);
    json_decref(rs);
    drain(f, all_created, 2000);
    print_message("created %zu pods for %d replicas; %zu deleted (watch opened again %d times)\n",
                  json_object_size(f->created), f->many, json_object_size(f->deleted), f->rewatches);
    assert_int_equal(json_object_size(f->created), f->many);
    assert_int_equal(json_object_size(f->deleted), 0);

    json_t *scale = json_pack("{s:{s:i}}", "spec", "replicas", f->few);
    assert_int_equal(kc_patch(f->c, f->res, NS, "burst", NULL, KC_PATCH_MERGE, scale,
                              NULL, NULL, NULL),
                     0);
    json_decref(scale);
    drain(f, scaled_down, 2000);
    print_message("scaled to %d: %zu deleted, %zu pods seen in all\n", f->few,
                  json_object_size(f->deleted), json_object_size(f->created));
    assert_int_equal(json_object_size(f->deleted), f->many - f->few);
    assert_int_equal(json_object_size(f->created), f->many);
}

static void test_no_double_create_or_delete(void **state)
{
    fixture_t *f = *state;
    f->res = &kc_replicasets;
    f->many = MANY;
    f->few = FEW;
    no_double_create_or_delete(f);
}

static void test_rc_no_double_create_or_delete(void **state)
{
    fixture_t *f = *state;
    f->res = &kc_replicationcontrollers;
    f->many = RC_MANY;
    f->few = RC_FEW;
    no_double_create_or_delete(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_no_double_create_or_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_no_double_create_or_delete, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
