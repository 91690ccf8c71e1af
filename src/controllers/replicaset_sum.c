/*
 * replicaset_sum.c -- what a ReplicaSet's sync needs to know of its pods,
 * kept current by the pod informer's events (replicaset_int.h).
 *
 * INVARIANT: once every event up to some point has been applied, the counts
 * of a summary equal what a pass over the pods its ReplicaSet controls (as
 * the informer's cache holds them at that point) would count with the
 * summary's selector and template labels.
 *
 * OWNS the summaries: RS key -> {uid, sel, tmpl, pods: {pod uid: flags},
 * and the counts}. Applying an event sets the pod's entry from the pod
 * alone (drop the old object's entry, put the new one's), so an event seen
 * twice, or seen by a build that listed the cache after the event changed
 * it, leaves the same entry: the informer delivers each object's events in
 * order and fills its cache before it calls the handlers, so the last event
 * applied is the newest.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/controller.h"
#include "controllers/ctrl_util.h"
#include "controllers/replicaset_int.h"
#include "lib/err.h"

enum { F_ACTIVE = 1, F_READY = 2, F_FULL = 4, F_MATCH = 8, F_DELETING = 16 };

struct rs__sums {
    pthread_mutex_t mu; /* guards map */
    char *kind;         /* the controller ownerReference kind counted */
    json_t *map;        /* RS key -> summary object */
};

rs__sums_t *rs__sums_new(const char *kind)
{
    rs__sums_t *ss = calloc(1, sizeof *ss);
    if (!ss) return NULL;
    ss->kind = strdup(kind);
    ss->map = json_object();
    if (!ss->kind || !ss->map || pthread_mutex_init(&ss->mu, NULL)) {
        free(ss->kind);
        json_decref(ss->map);
        free(ss);
        return NULL;
    }
    return ss;
}

void rs__sums_free(rs__sums_t *ss)
{
    if (!ss) return;
    pthread_mutex_destroy(&ss->mu);
    json_decref(ss->map);
    free(ss->kind);
    free(ss);
}

static int pod_flags(const json_t *pod, const json_t *sel, const json_t *tmpl)
{
    const json_t *labels = ctrl_labels(pod);
    int f = 0;
    if (ctrl_pod_active(pod)) f |= F_ACTIVE;
    if (ctrl_pod_ready(pod)) f |= F_READY;
    if (json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp")) f |= F_DELETING;
    if (ctrl_selector_matches(sel, labels)) f |= F_MATCH;
    int full = 1;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)tmpl, k, v) {
        if (!json_equal(json_object_get(labels, k), v)) full = 0;
    }
    if (full) f |= F_FULL;
    return f;
}

/* The fields of a summary's counts, in rs__counts_t order. */
static const char *const count_names[] = {"active", "ready", "full", "release"};

static void count(json_t *sum, int f, int sign)
{
    int add[4] = {
        !!(f & F_ACTIVE),
        (f & F_ACTIVE) && (f & F_READY),
        (f & F_ACTIVE) && (f & F_FULL),
        !(f & F_DELETING) && !(f & F_MATCH),
    };
    for (int i = 0; i < 4; i++) {
        if (!add[i]) continue;
        json_t *c = json_object_get(sum, count_names[i]);
        json_integer_set(c, json_integer_value(c) + sign);
    }
}

/* The summary pod counts toward, or NULL (no summary, or one for another
 * ReplicaSet of that name). ss->mu held. */
static json_t *sum_of(rs__sums_t *ss, const json_t *pod)
{
    const char *uid, *kind, *name;
    if (!ctrl_owner(pod, &uid, &kind, &name) || !uid || !kind || !name || strcmp(kind, ss->kind))
        return NULL;
    char key[600];
    snprintf(key, sizeof key, "%s/%s", ctrl_meta_str(pod, "namespace"), name);
    json_t *sum = json_object_get(ss->map, key);
    const char *sum_uid = json_string_value(json_object_get(sum, "uid"));
    return sum_uid && !strcmp(sum_uid, uid) ? sum : NULL;
}

/* Set pod's entry in sum. ss->mu held. */
static int put(json_t *sum, const json_t *pod)
{
    json_t *pods = json_object_get(sum, "pods");
    const char *uid = ctrl_meta_str(pod, "uid");
    int f = pod_flags(pod, json_object_get(sum, "sel"), json_object_get(sum, "tmpl"));
    json_t *e = json_object_get(pods, uid);
    if (e) {
        count(sum, (int)json_integer_value(e), -1);
        json_integer_set(e, f);
    } else if (json_object_set_new(pods, uid, json_integer(f))) {
        return KP_ENOMEM;
    }
    count(sum, f, +1);
    return 0;
}

void rs__sums_event(rs__sums_t *ss, const json_t *old, const json_t *pod)
{
    pthread_mutex_lock(&ss->mu);
    json_t *sum = old ? sum_of(ss, old) : NULL;
    if (sum) {
        json_t *pods = json_object_get(sum, "pods");
        const char *uid = ctrl_meta_str(old, "uid");
        json_t *e = json_object_get(pods, uid);
        if (e) {
            count(sum, (int)json_integer_value(e), -1);
            json_object_del(pods, uid);
        }
    }
    /* Out of memory: the summary can no longer be trusted; the next sync
     * builds it again. */
    if (pod && (sum = sum_of(ss, pod)) && put(sum, pod))
        json_object_del(ss->map, json_string_value(json_object_get(sum, "key")));
    pthread_mutex_unlock(&ss->mu);
}

static void read_counts(const json_t *sum, rs__counts_t *out)
{
    long *v[] = {&out->active, &out->ready, &out->full, &out->release};
    for (int i = 0; i < 4; i++)
        *v[i] = (long)json_integer_value(json_object_get(sum, count_names[i]));
}

/* a and b are equal, NULL and JSON null alike. */
static int same(const json_t *a, const json_t *b)
{
    if (json_is_null(a)) a = NULL;
    if (json_is_null(b)) b = NULL;
    return a == b || (a && b && json_equal(a, b));
}

static int current(const json_t *sum, const char *uid, const json_t *sel, const json_t *tmpl)
{
    const char *sum_uid = json_string_value(json_object_get(sum, "uid"));
    return sum_uid && !strcmp(sum_uid, uid) && same(json_object_get(sum, "sel"), sel) &&
           same(json_object_get(sum, "tmpl"), tmpl);
}

int rs__sums_counts(rs__sums_t *ss, const char *key, const char *uid, const json_t *sel,
                    const json_t *tmpl, rs__list_fn list, void *arg, rs__counts_t *out)
{
    pthread_mutex_lock(&ss->mu);
    json_t *sum = json_object_get(ss->map, key);
    int rc = 0;
    if (!sum || !current(sum, uid, sel, tmpl)) {
        /* Built under the lock: an event the list missed waits for it and
         * is applied after; one the list saw is applied again, the same. */
        json_t **pods = NULL;
        size_t n = 0;
        sum = json_pack("{s:s, s:s, s:O?, s:O?, s:{}, s:i, s:i, s:i, s:i}", "key", key, "uid", uid,
                        "sel", sel, "tmpl", tmpl, "pods", "active", 0, "ready", 0, "full", 0,
                        "release", 0);
        rc = sum ? list(arg, &pods, &n) : KP_ENOMEM;
        for (size_t i = 0; !rc && i < n; i++)
            rc = put(sum, pods[i]);
        kc_objs_free(pods, n);
        if (!rc && json_object_set(ss->map, key, sum)) rc = KP_ENOMEM;
        if (rc) json_object_del(ss->map, key);
        json_decref(sum);
    }
    if (!rc) read_counts(sum, out);
    pthread_mutex_unlock(&ss->mu);
    return rc;
}

void rs__sums_forget(rs__sums_t *ss, const char *key)
{
    pthread_mutex_lock(&ss->mu);
    json_object_del(ss->map, key);
    pthread_mutex_unlock(&ss->mu);
}
