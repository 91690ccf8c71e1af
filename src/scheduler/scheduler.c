/*
 * scheduler.c -- the scheduler's control loop: informers feed the cache and
 * the queue; workers place one pod at a time.
 *
 * The invariant it protects: every pod waiting for this scheduler (no
 * nodeName, our schedulerName, not being deleted, not finished) is either
 * in the queue, held by a worker, or filed as unschedulable with a retry
 * pending (a backoff, or the next node or pod change that could make it
 * fit); and a pod is bound only to a node that, counting every pod bound
 * or assumed there, has room for it (cache.c).
 *
 *   informer handlers (pods, nodes): update the cache; queue pending pods;
 *       a node added or changed, or room freed, queues the unschedulable
 *   worker: schedule_one(key)
 *       -> cache: filter + score + assume, under the cache's lock
 *       -> bind (pods/binding)      0: Scheduled event, forget the backoff
 *                                   409/404: forget (someone else placed it,
 *                                   or it is gone); else: retry with backoff
 *       -> none fits: file as unschedulable first (so our own status write
 *          does not queue it again), PodScheduled=False, FailedScheduling
 *          event, retry after backoff (1 s doubling to 10 s by default)
 *
 * Lifecycle:  NEW --start()--> RUNNING --stop()--> STOPPED --start()--> ...
 * start() builds the informers, queue and cache afresh (so a scheduler that
 * lost and regained leadership starts from a new list); stop() tears them
 * down. Owns: them, the workers, the event recorder; borrows the client.
 */
#include "scheduler/scheduler.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/sdk.h"
#include "lib/buf.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "scheduler/sched_int.h"

#define COMPONENT   "scheduler"
#define KEY_MAX     600 /* "ns/name": 63 + 1 + 253, with room */
#define NBUCKETS    13
#define METRICS_MAX (64 * 1024)

static const double buckets[NBUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                         0.25,  0.5,    1,     2.5,  5,     10};

enum { ST_NEW, ST_RUNNING, ST_STOPPED };
/* What a worker does with a key after schedule_one. */
enum { SYNC_FORGET, SYNC_RETRY, SYNC_KEEP };

typedef struct worker {
    struct sched *s;
    pthread_t thread;
    sched_scratch_t scratch;
} worker_t;

struct sched {
    kc_client_t *client;
    char *name;
    int nworkers, backoff_initial_ms, backoff_max_ms, resync_ms, sync_timeout_ms;
    unsigned seed;
    kc_recorder_t *rec;
    kc_factory_t *factory; /* the informers' (given, or own) */
    kc_factory_t *own;     /* made by sched_new when none was given */

    pthread_mutex_t life; /* serialises start and stop */
    pthread_mutex_t mu;   /* guards the pointers below for sched_metrics */
    int state;
    atomic_int stopping; /* workers drop what is left in the queue */
    sched_cache_t *cache;
    kc_queue_t *queue;
    kc_informer_t *pods, *nodes;
    worker_t *workers;
    int nstarted;

    atomic_uint_fast64_t attempts[3]; /* scheduled, unschedulable, error */
    atomic_uint_fast64_t binds, bound;
    atomic_uint_fast64_t hist[NBUCKETS + 1], hist_sum_us;
};

enum { A_SCHEDULED, A_UNSCHEDULABLE, A_ERROR };

/* ---- pods: which are ours ---- */

static const char *str_at(const json_t *o, const char *a, const char *b)
{
    return json_string_value(json_object_get(json_object_get(o, a), b));
}

static int pod_terminal(const json_t *pod)
{
    const char *phase = str_at(pod, "status", "phase");
    return phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"));
}

static int pod_ours_pending(const struct sched *s, const json_t *pod)
{
    const char *node = str_at(pod, "spec", "nodeName");
    const char *name = str_at(pod, "spec", "schedulerName");
    if (node && *node) return 0;
    if (!name || strcmp(name, s->name)) return 0;
    if (json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp")) return 0;
    return !pod_terminal(pod);
}

/* ---- handlers (informer threads: cache updates and queue adds only) ---- */

/* Something could now fit: queue every unschedulable pod. */
static void requeue_unschedulable(struct sched *s)
{
    char **keys;
    size_t n;
    if (sched_cache_take_unschedulable(s->cache, &keys, &n) < 0) {
        log_warn(COMPONENT, "out of memory requeueing unschedulable pods (they retry on backoff)");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        kc_queue_add(s->queue, keys[i]);
        free(keys[i]);
    }
    free(keys);
}

/* json_equal, with two absent values equal too. */
static int same_json(const json_t *a, const json_t *b)
{
    return (!a && !b) || json_equal(a, b);
}

static void pod_changed(struct sched *s, const json_t *old, const json_t *pod)
{
    char key[KEY_MAX];
    if (kc_key_of(pod, key, sizeof key) < 0) return;
    const char *node = str_at(pod, "spec", "nodeName");
    if (node && *node && !pod_terminal(pod)) {
        sched_pod_t p;
        if (sched_pod_parse(pod, &p) == KP_ENOMEM ||
            sched_cache_pod_bound(s->cache, key, node, &p) < 0)
            log_error(COMPONENT, "out of memory counting pod %s on %s", key, node);
        sched_pod_clear(&p);
        return;
    }
    if (!pod_ours_pending(s, pod)) {
        if (sched_cache_pod_remove(s->cache, key) == 1) requeue_unschedulable(s);
        return;
    }
    int changed = old && old != pod &&
                  (!same_json(json_object_get(old, "spec"), json_object_get(pod, "spec")) ||
                   !same_json(json_object_get(json_object_get(old, "metadata"), "labels"),
                              json_object_get(json_object_get(pod, "metadata"), "labels")));
    int rc = sched_cache_pod_pending(s->cache, key, changed);
    log_debug(COMPONENT, "pod %s pending (%s, spec changed %d): %s", key, old ? "update" : "add",
              changed, rc == 1 ? "queued" : "not queued");
    if (rc == 1)
        kc_queue_add(s->queue, key);
    else if (rc < 0)
        log_error(COMPONENT, "out of memory tracking pod %s", key);
}

static void on_pod_add(void *arg, const json_t *obj)
{
    pod_changed(arg, NULL, obj);
}

static void on_pod_update(void *arg, const json_t *old, const json_t *obj)
{
    const char *node = str_at(obj, "spec", "nodeName");
    if (old == obj && node && *node) return; /* a resync of a bound pod changes nothing */
    pod_changed(arg, old, obj);
}

static void on_pod_delete(void *arg, const json_t *obj)
{
    struct sched *s = arg;
    char key[KEY_MAX];
    if (kc_key_of(obj, key, sizeof key) < 0) return;
    if (sched_cache_pod_remove(s->cache, key) == 1) requeue_unschedulable(s);
}

static void node_changed(struct sched *s, const json_t *node)
{
    int rc = sched_cache_node_set(s->cache, node);
    if (rc == 1)
        requeue_unschedulable(s);
    else if (rc < 0)
        log_error(COMPONENT, "cannot cache node: %s", err_str(rc));
}

static void on_node_add(void *arg, const json_t *obj)
{
    node_changed(arg, obj);
}

static void on_node_update(void *arg, const json_t *old, const json_t *obj)
{
    if (old != obj) node_changed(arg, obj); /* a resync changes nothing */
}

static void on_node_delete(void *arg, const json_t *obj)
{
    struct sched *s = arg;
    const char *name = str_at(obj, "metadata", "name");
    if (name) sched_cache_node_delete(s->cache, name);
}

/* ---- workers ---- */

/* PodScheduled=False/Unschedulable with msg, unless the pod says so already
 * (then nothing is written: an unchanged verdict costs no API call). */
static void set_unschedulable(struct sched *s, const json_t *pod, const char *msg)
{
    const json_t *old = NULL, *c;
    size_t i;
    json_array_foreach(json_object_get(json_object_get(pod, "status"), "conditions"), i, c) {
        const char *type = json_string_value(json_object_get(c, "type"));
        if (type && !strcmp(type, "PodScheduled")) old = c;
    }
    const char *ost = json_string_value(json_object_get(old, "status"));
    const char *oreason = json_string_value(json_object_get(old, "reason"));
    const char *omsg = json_string_value(json_object_get(old, "message"));
    int was_false = ost && !strcmp(ost, "False");
    if (was_false && oreason && !strcmp(oreason, "Unschedulable") && omsg && !strcmp(omsg, msg))
        return;
    char now[32];
    const char *since = json_string_value(json_object_get(old, "lastTransitionTime"));
    if (!was_false || !since) {
        time_t t = (time_t)(clock_wall_ns() / 1000000000);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tm);
        since = now;
    }
    const char *ns = str_at(pod, "metadata", "namespace");
    const char *name = str_at(pod, "metadata", "name");
    json_t *patch = json_pack("{s:{s:[{s:s, s:s, s:s, s:s, s:n, s:s}]}}", "status", "conditions",
                              "type", "PodScheduled", "status", "False", "reason", "Unschedulable",
                              "message", msg, "lastProbeTime", "lastTransitionTime", since);
    if (!patch) return;
    int rc = kc_patch(s->client, &kc_pods, ns, name, "status", KC_PATCH_STRATEGIC, patch, NULL,
                      NULL, NULL);
    json_decref(patch);
    if (rc < 0 && rc != KP_ENOTFOUND)
        log_warn(COMPONENT, "cannot set PodScheduled on %s/%s: %s", ns, name, err_str(rc));
}

static int schedule_one(struct sched *s, worker_t *w, const char *key)
{
    json_t *pod = kc_informer_get(s->pods, key);
    if (!pod) return SYNC_FORGET; /* deleted: the handler has dropped it */
    int ret = SYNC_FORGET;
    sched_pod_t p;
    sched_decision_t d = {0};
    if (!pod_ours_pending(s, pod)) goto out;
    int rc = sched_pod_parse(pod, &p);
    if (rc == KP_ENOMEM) {
        atomic_fetch_add(&s->attempts[A_ERROR], 1);
        ret = SYNC_RETRY;
        goto out;
    }
    if (rc < 0) log_debug(COMPONENT, "pod %s: a malformed quantity counts as 0", key);
    rc = sched_cache_schedule(s->cache, key, &p, &w->scratch, &d);
    const char *ns = str_at(pod, "metadata", "namespace");
    const char *name = str_at(pod, "metadata", "name");
    if (rc == 0) {
        atomic_fetch_add(&s->binds, 1);
        int brc = kc_bind(s->client, ns, name, d.node);
        if (brc == 0) {
            atomic_fetch_add(&s->bound, 1);
            atomic_fetch_add(&s->attempts[A_SCHEDULED], 1);
            kc_event(s->rec, pod, "Normal", "Scheduled", "Successfully assigned %s/%s to %s", ns,
                     name, d.node);
        } else {
            sched_cache_forget(s->cache, key, d.node);
            if (brc != KP_ECONFLICT && brc != KP_EEXIST && brc != KP_ENOTFOUND) {
                log_warn(COMPONENT, "binding %s to %s: %s", key, d.node, err_str(brc));
                atomic_fetch_add(&s->attempts[A_ERROR], 1);
                ret = SYNC_RETRY;
            }
        }
    } else if (rc == KP_ENOTFOUND) {
        atomic_fetch_add(&s->attempts[A_UNSCHEDULABLE], 1);
        if (sched_cache_unschedulable(s->cache, key, d.gen) == 1) kc_queue_add(s->queue, key);
        set_unschedulable(s, pod, d.message);
        kc_event(s->rec, pod, "Warning", "FailedScheduling", "%s", d.message);
        log_debug(COMPONENT, "pod %s: %s", key, d.message);
        kc_queue_add_rate_limited(s->queue, key);
        ret = SYNC_KEEP;
    } else if (rc != KP_EEXIST) {
        atomic_fetch_add(&s->attempts[A_ERROR], 1);
        ret = SYNC_RETRY;
    }
    sched_pod_clear(&p);
out:
    free(d.message);
    json_decref(pod);
    return ret;
}

static void observe(struct sched *s, int64_t ns)
{
    double sec = (double)ns / 1e9;
    size_t b = 0;
    while (b < NBUCKETS && sec > buckets[b])
        b++;
    atomic_fetch_add(&s->hist[b], 1);
    atomic_fetch_add(&s->hist_sum_us, (uint_fast64_t)(ns / 1000));
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    struct sched *s = w->s;
    char key[KEY_MAX];
    for (;;) {
        int rc = kc_queue_get(s->queue, key, sizeof key, -1);
        if (rc == KP_ECLOSED) break;
        if (rc < 0) continue;
        if (atomic_load(&s->stopping)) {
            kc_queue_done(s->queue, key);
            continue;
        }
        int64_t t0 = clock_mono_ns();
        int r = schedule_one(s, w, key);
        observe(s, clock_mono_ns() - t0);
        if (r == SYNC_FORGET)
            kc_queue_forget(s->queue, key);
        else if (r == SYNC_RETRY)
            kc_queue_add_rate_limited(s->queue, key);
        kc_queue_done(s->queue, key);
    }
    return NULL;
}

/* ---- lifecycle ---- */

int sched_new(kc_client_t *c, const sched_config_t *cfg, sched_t **out)
{
    sched_config_t d = {0};
    if (!cfg) cfg = &d;
    if (!c || !out || cfg->workers < 0 || cfg->backoff_initial_ms < 0 || cfg->backoff_max_ms < 0 ||
        cfg->resync_ms < 0 || cfg->sync_timeout_ms < 0)
        return KP_EINVAL;
    int initial = cfg->backoff_initial_ms ? cfg->backoff_initial_ms : 1000;
    int max = cfg->backoff_max_ms ? cfg->backoff_max_ms : 10000;
    if (max < initial) return KP_EINVAL;
    struct sched *s = calloc(1, sizeof *s);
    if (!s) return KP_ENOMEM;
    int rc = KP_ENOMEM;
    s->client = c;
    s->nworkers = cfg->workers ? cfg->workers : 32;
    s->backoff_initial_ms = initial;
    s->backoff_max_ms = max;
    s->resync_ms = cfg->resync_ms;
    s->sync_timeout_ms = cfg->sync_timeout_ms ? cfg->sync_timeout_ms : 30000;
    s->seed = cfg->seed ? cfg->seed : (unsigned)clock_mono_ns() ^ (unsigned)clock_wall_ns();
    if (!(s->name = strdup(cfg->name && *cfg->name ? cfg->name : "default-scheduler")))
        goto fail_name;
    if (pthread_mutex_init(&s->life, NULL)) goto fail_life;
    if (pthread_mutex_init(&s->mu, NULL)) goto fail_mu;
    if ((rc = kc_recorder_new(c, s->name, &s->rec)) < 0) goto fail_rec;
    s->factory = cfg->factory;
    if (!s->factory) {
        if ((rc = kc_factory_new(c, s->resync_ms, &s->own)) < 0) goto fail_factory;
        kc_factory_set_transform(s->own, kc_transform_strip_managed_fields);
        s->factory = s->own;
    }
    *out = s;
    return 0;
fail_factory:
    kc_recorder_free(s->rec);
fail_rec:
    pthread_mutex_destroy(&s->mu);
fail_mu:
    pthread_mutex_destroy(&s->life);
fail_life:
    free(s->name);
fail_name:
    free(s);
    return rc;
}

/* Stop and free what start built (any part may be missing). Under life. */
static void teardown(struct sched *s)
{
    atomic_store(&s->stopping, 1);
    /* The informers may be shared: only our handlers go, first of all. */
    if (s->pods) kc_informer_remove_handlers(s->pods, s);
    if (s->nodes) kc_informer_remove_handlers(s->nodes, s);
    if (s->queue) kc_queue_shutdown(s->queue);
    for (int i = 0; i < s->nstarted; i++)
        pthread_join(s->workers[i].thread, NULL);
    pthread_mutex_lock(&s->mu);
    kc_queue_t *queue = s->queue;
    sched_cache_t *cache = s->cache;
    s->pods = s->nodes = NULL;
    s->queue = NULL;
    s->cache = NULL;
    pthread_mutex_unlock(&s->mu);
    kc_queue_free(queue);
    sched_cache_free(cache);
    for (int i = 0; s->workers && i < s->nworkers; i++)
        sched_scratch_free(&s->workers[i].scratch);
    free(s->workers);
    s->workers = NULL;
    s->nstarted = 0;
}

static int start_informer(struct sched *s, const kc_resource_t *r, const kc_handlers_t *h,
                          kc_informer_t **out)
{
    int rc = kc_factory_informer(s->factory, r, NULL, NULL, NULL, out);
    if (rc < 0) return rc;
    return kc_informer_add_handlers(*out, h);
}

int sched_start(sched_t *s)
{
    int rc;
    pthread_mutex_lock(&s->life);
    if (s->state == ST_RUNNING) {
        pthread_mutex_unlock(&s->life);
        return KP_EBUSY;
    }
    atomic_store(&s->stopping, 0);
    kc_queue_config_t qc = {
        .base_delay_ms = s->backoff_initial_ms,
        .max_delay_ms = s->backoff_max_ms,
        /* The overall retry bucket is client-go's guard against a storm of
         * failing controllers; unschedulable pods are expected, each has its
         * own backoff: make the bucket large enough not to matter. The queue
         * holds each pod key once, so the informer's pods bound it. */
        .qps = 100000,
        .burst = 100000,
    };
    sched_cache_t *cache = NULL;
    kc_queue_t *queue = NULL;
    if ((rc = sched_cache_new(&cache)) < 0) goto fail;
    if ((rc = kc_queue_new(&qc, &queue)) < 0) {
        sched_cache_free(cache);
        goto fail;
    }
    pthread_mutex_lock(&s->mu);
    s->cache = cache;
    s->queue = queue;
    pthread_mutex_unlock(&s->mu);

    kc_informer_t *nodes = NULL, *pods = NULL;
    kc_handlers_t nh = {on_node_add, on_node_update, on_node_delete, s};
    kc_handlers_t ph = {on_pod_add, on_pod_update, on_pod_delete, s};
    /* Nodes first, so that the first pods queued meet a full node list. */
    rc = start_informer(s, &kc_nodes, &nh, &nodes);
    pthread_mutex_lock(&s->mu);
    s->nodes = nodes;
    pthread_mutex_unlock(&s->mu);
    if (rc < 0) goto fail;
    rc = start_informer(s, &kc_pods, &ph, &pods);
    pthread_mutex_lock(&s->mu);
    s->pods = pods;
    pthread_mutex_unlock(&s->mu);
    if (rc < 0) goto fail;
    int64_t deadline = clock_mono_ns() + (int64_t)s->sync_timeout_ms * 1000000;
    if ((rc = kc_informer_wait_synced(s->nodes, s->sync_timeout_ms)) < 0) goto fail;
    int left = (int)((deadline - clock_mono_ns()) / 1000000);
    if ((rc = kc_informer_wait_synced(s->pods, left > 0 ? left : 1)) < 0) goto fail;

    s->workers = calloc((size_t)s->nworkers, sizeof *s->workers);
    if (!s->workers) {
        rc = KP_ENOMEM;
        goto fail;
    }
    for (int i = 0; i < s->nworkers; i++) {
        worker_t *w = &s->workers[i];
        w->s = s;
        w->scratch.seed = s->seed + (unsigned)i * 7919u;
        if (pthread_create(&w->thread, NULL, worker_main, w)) {
            rc = KP_ENOMEM;
            goto fail;
        }
        s->nstarted++;
    }
    s->state = ST_RUNNING;
    pthread_mutex_unlock(&s->life);
    log_info(COMPONENT, "%s: scheduling with %d workers", s->name, s->nworkers);
    return 0;
fail:
    log_error(COMPONENT, "%s: cannot start: %s", s->name, err_str(rc));
    teardown(s);
    s->state = ST_STOPPED;
    pthread_mutex_unlock(&s->life);
    return rc;
}

void sched_stop(sched_t *s)
{
    if (!s) return;
    pthread_mutex_lock(&s->life);
    if (s->state == ST_RUNNING) {
        teardown(s);
        s->state = ST_STOPPED;
        log_info(COMPONENT, "%s: stopped", s->name);
    }
    pthread_mutex_unlock(&s->life);
}

void sched_free(sched_t *s)
{
    if (!s) return;
    sched_stop(s);
    kc_factory_free(s->own);
    kc_recorder_free(s->rec);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->life);
    free(s->name);
    free(s);
}

/* ---- metrics ---- */

int sched_metrics(sched_t *s, char **text)
{
    sched_cache_stats_t st = {0};
    pthread_mutex_lock(&s->mu);
    if (s->cache) sched_cache_stats(s->cache, &st);
    pthread_mutex_unlock(&s->mu);
    buf_t b;
    buf_init(&b, METRICS_MAX);
    static const char *const results[3] = {"scheduled", "unschedulable", "error"};
    int rc = 0;
    rc |= buf_printf(&b,
                  "# HELP kplane_scheduler_pending_pods Pods waiting to be bound.\n"
                  "# TYPE kplane_scheduler_pending_pods gauge\n"
                  "kplane_scheduler_pending_pods %zu\n",
                  st.pending);
    rc |= buf_printf(&b,
                  "# HELP kplane_scheduler_unschedulable_pods Pending pods that found no node "
                  "and wait for a retry.\n"
                  "# TYPE kplane_scheduler_unschedulable_pods gauge\n"
                  "kplane_scheduler_unschedulable_pods %zu\n",
                  st.unschedulable);
    rc |= buf_printf(&b, "# HELP kplane_scheduler_schedule_attempts_total Scheduling attempts by "
                      "result.\n# TYPE kplane_scheduler_schedule_attempts_total counter\n");
    for (int i = 0; i < 3; i++)
        rc |= buf_printf(&b, "kplane_scheduler_schedule_attempts_total{result=\"%s\"} %llu\n",
                      results[i], (unsigned long long)atomic_load(&s->attempts[i]));
    rc |= buf_printf(&b,
                  "# HELP kplane_scheduler_bind_attempts_total Bindings sent.\n"
                  "# TYPE kplane_scheduler_bind_attempts_total counter\n"
                  "kplane_scheduler_bind_attempts_total %llu\n"
                  "# HELP kplane_scheduler_bind_successes_total Bindings the API accepted.\n"
                  "# TYPE kplane_scheduler_bind_successes_total counter\n"
                  "kplane_scheduler_bind_successes_total %llu\n",
                  (unsigned long long)atomic_load(&s->binds),
                  (unsigned long long)atomic_load(&s->bound));
    rc |= buf_printf(&b, "# HELP kplane_scheduler_schedule_duration_seconds One scheduling "
                      "attempt, from taking the pod to the bind's answer.\n"
                      "# TYPE kplane_scheduler_schedule_duration_seconds histogram\n");
    unsigned long long cum = 0;
    for (int i = 0; i <= NBUCKETS; i++) {
        cum += (unsigned long long)atomic_load(&s->hist[i]);
        if (i < NBUCKETS)
            rc |= buf_printf(&b, "kplane_scheduler_schedule_duration_seconds_bucket{le=\"%g\"} %llu\n",
                          buckets[i], cum);
        else
            rc |= buf_printf(
                &b, "kplane_scheduler_schedule_duration_seconds_bucket{le=\"+Inf\"} %llu\n", cum);
    }
    rc |= buf_printf(&b,
                  "kplane_scheduler_schedule_duration_seconds_sum %.6f\n"
                  "kplane_scheduler_schedule_duration_seconds_count %llu\n",
                  (double)atomic_load(&s->hist_sum_us) / 1e6, cum);
    if (rc) {
        buf_free(&b);
        return KP_ENOMEM;
    }
    size_t len;
    *text = buf_detach(&b, &len);
    return 0;
}
