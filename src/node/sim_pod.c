/*
 * sim_pod.c -- the pod workers: each pod bound to a simulated node is driven
 * through its lifecycle by PATCHing pods/<name>/status (merge patch), and a
 * pod deleted gracefully is stopped and then deleted for good.
 *
 * INVARIANT: every pod the informer shows bound to one of our (unpaused)
 * nodes has, or will have after its next due time, the status its stage
 * says; a pod with a deletionTimestamp is gone within
 * min(grace period, cfg.stop_ms) plus the API's latency.
 *
 * OWNS the pod table: key "ns/name" -> sim_pod_t (what a kubelet's pod
 * worker remembers: stage, times, restarts, IP, container ids). The table's
 * buckets are guarded by pods_mu; an ENTRY is touched only by the worker
 * holding its key (the queue hands a key to one worker at a time), so no
 * lock is held while an entry is used or an API call is made.
 *
 * Stages (st->stage) and what moves them; every move is level-triggered
 * from sim__pod_sync(key), which runs on informer events and on the timer
 * the stage asked for (kc_queue_add_after: no polling):
 *
 *   first seen --> CREATING --start due (start_containers)--> RUNNING
 *   RUNNING --run due, never restarted (exit_containers)--> DONE
 *   RUNNING --run due, restarted (exit_containers)--> BACKOFF
 *   BACKOFF --back-off due (start_containers)--> RUNNING (restartCount+1)
 *   any stage but GONE --deletionTimestamp (begin_stop)--> STOPPING
 *   STOPPING --stop due (stop_containers)--> STOPPED
 *   STOPPED --DELETE gracePeriodSeconds 0, uid precondition--> GONE
 *   the pod leaves the cache, or another uid takes its name --> freed
 *
 * A move marks the entry dirty, and so does an API status that says
 * another phase or Ready than the stage (another writer changed it); the
 * status is written after all moves that are due, so a stage that is due at once (start delay 0, say) costs no
 * write of its own. When the queue is backlogged (a burst of bindings), the
 * ContainerCreating write is skipped too, so that each pod costs one write
 * on its way to Running. A failed write keeps the entry dirty and returns the
 * error, so the queue retries the key with back-off.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "node/sim_int.h"

#define NS_PER_MS              1000000LL
#define MAX_MOVES              8 /* moves per sync; more are left to a re-queue */
#define BACKOFF_S0             10
#define BACKOFF_S_MAX          300
#define SIM_BACKLOG_PER_WORKER 4 /* queued keys per worker that mean "behind" */

/* ---- reading the pod (a shared, read-only cache object) ---- */

static const char *meta_str(const json_t *pod, const char *key)
{
    return json_string_value(json_object_get(json_object_get(pod, "metadata"), key));
}

static const char *annotation(const json_t *pod, const char *key)
{
    const json_t *a = json_object_get(json_object_get(pod, "metadata"), "annotations");
    return json_string_value(json_object_get(a, key));
}

/* A non-negative integer annotation, or dflt when absent or malformed. */
static long ann_long(const json_t *pod, const char *key, long max, long dflt)
{
    const char *v = annotation(pod, key);
    if (!v || !*v) return dflt;
    char *end;
    long n = strtol(v, &end, 10);
    return *end || n < 0 || n > max ? dflt : n;
}

static int ann_true(const json_t *pod, const char *key)
{
    const char *v = annotation(pod, key);
    return v && (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "1"));
}

static const char *restart_policy(const json_t *pod)
{
    const char *p =
        json_string_value(json_object_get(json_object_get(pod, "spec"), "restartPolicy"));
    return p ? p : "Always";
}

static int node_of(node_sim_t *s, const json_t *pod)
{
    return sim__node_find(
        s, json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName")));
}

/* ---- the informer's handlers: enqueue our pods' keys, nothing more ---- */

static void enqueue(node_sim_t *s, const json_t *pod)
{
    char key[SIM_KEY_MAX];
    if (kc_key_of(pod, key, sizeof key)) return;
    int rc = kc_queue_add(s->queue, key);
    if (rc && rc != KP_ECLOSED) log_warn(SIM_COMPONENT, "queue %s: %s", key, err_str(rc));
}

static void on_add(void *arg, const json_t *obj)
{
    node_sim_t *s = arg;
    if (node_of(s, obj) >= 0) enqueue(s, obj);
}

static void on_update(void *arg, const json_t *old, const json_t *obj)
{
    node_sim_t *s = arg;
    if (old == obj) return; /* a resync: our own timers drive our pods */
    if (node_of(s, obj) >= 0 || node_of(s, old) >= 0) enqueue(s, obj);
}

static void on_delete(void *arg, const json_t *obj)
{
    node_sim_t *s = arg;
    if (node_of(s, obj) >= 0) enqueue(s, obj);
}

void sim__pod_handlers(node_sim_t *s, kc_handlers_t *h)
{
    h->on_add = on_add;
    h->on_update = on_update;
    h->on_delete = on_delete;
    h->arg = s;
}

void sim__pod_requeue_node(node_sim_t *s, int i)
{
    json_t **objs = NULL;
    size_t n = 0;
    if (kc_informer_list(s->inf, "node", s->nodes[i].name, &objs, &n)) return;
    for (size_t k = 0; k < n; k++)
        enqueue(s, objs[k]);
    kc_objs_free(objs, n);
}

/* ---- the pod table ---- */

static size_t hash_key(const char *p)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
    return (size_t)(h ^ (h >> 32));
}

static sim_pod_t *table_get(node_sim_t *s, const char *key)
{
    pthread_mutex_lock(&s->pods_mu);
    sim_pod_t *p = s->buckets[hash_key(key) & (s->nbuckets - 1)];
    while (p && strcmp(p->key, key))
        p = p->next;
    pthread_mutex_unlock(&s->pods_mu);
    return p;
}

/* Grow to twice the buckets when the chains average more than two; a
 * failed allocation leaves the table as it is (only slower). */
static void table_grow(node_sim_t *s)
{
    size_t nb = s->nbuckets * 2;
    sim_pod_t **b = calloc(nb, sizeof *b);
    if (!b) return;
    for (size_t i = 0; i < s->nbuckets; i++) {
        sim_pod_t *p = s->buckets[i], *next;
        for (; p; p = next) {
            next = p->next;
            size_t h = hash_key(p->key) & (nb - 1);
            p->next = b[h];
            b[h] = p;
        }
    }
    free(s->buckets);
    s->buckets = b;
    s->nbuckets = nb;
}

static void table_put(node_sim_t *s, sim_pod_t *st)
{
    pthread_mutex_lock(&s->pods_mu);
    if (s->npods >= s->nbuckets * 2) table_grow(s);
    size_t h = hash_key(st->key) & (s->nbuckets - 1);
    st->next = s->buckets[h];
    s->buckets[h] = st;
    s->npods++;
    pthread_mutex_unlock(&s->pods_mu);
    atomic_fetch_add(&s->stage_count[st->stage], 1);
}

static void table_del(node_sim_t *s, sim_pod_t *st)
{
    pthread_mutex_lock(&s->pods_mu);
    sim_pod_t **pp = &s->buckets[hash_key(st->key) & (s->nbuckets - 1)];
    while (*pp && *pp != st)
        pp = &(*pp)->next;
    if (*pp) {
        *pp = st->next;
        s->npods--;
    }
    pthread_mutex_unlock(&s->pods_mu);
    atomic_fetch_sub(&s->stage_count[st->stage], 1);
    free(st->key);
    free(st);
}

void sim__pods_free(node_sim_t *s)
{
    for (size_t i = 0; s->buckets && i < s->nbuckets; i++) {
        sim_pod_t *p = s->buckets[i], *next;
        for (; p; p = next) {
            next = p->next;
            free(p->key);
            free(p);
        }
    }
    free(s->buckets);
    s->buckets = NULL;
    s->npods = 0;
}

static void set_stage(node_sim_t *s, sim_pod_t *st, int stage)
{
    atomic_fetch_sub(&s->stage_count[st->stage], 1);
    atomic_fetch_add(&s->stage_count[stage], 1);
    st->stage = stage;
}

/* ---- a new entry ---- */

static int64_t parse_time(const char *t)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *end = t ? strptime(t, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
    if (!end) return 0;
    return (int64_t)timegm(&tm) * 1000000000;
}

/* The next pod IP: 10.128.0.0/9 in order, skipping .0 and .255, so that
 * 8 million pods get distinct addresses before any is reused. */
static uint32_t next_pod_ip(node_sim_t *s)
{
    uint64_t k = atomic_fetch_add(&s->next_ip, 1) % (128ull * 256 * 254);
    uint32_t host = (uint32_t)((k / 254) * 256 + k % 254 + 1);
    return (10u << 24) | (128u << 16) | host;
}

/* An entry for pod, first seen now. A pod already Running or terminal (the
 * simulator restarted) is adopted as it is, without a status write. */
static sim_pod_t *pod_state_new(node_sim_t *s, const json_t *pod, const char *key, int node,
                                int64_t now)
{
    sim_pod_t *st = calloc(1, sizeof *st);
    if (!st || !(st->key = strdup(key))) {
        free(st);
        return NULL;
    }
    snprintf(st->uid, sizeof st->uid, "%s", meta_str(pod, "uid") ? meta_str(pod, "uid") : "");
    st->node = node;
    st->seen_ns = now;
    st->cid = sim__rand(s);
    int64_t wall = clock_wall_ns();
    st->start_wall = st->ready_wall = wall;
    const json_t *status = json_object_get(pod, "status");
    const char *phase = json_string_value(json_object_get(status, "phase"));
    const json_t *cs = json_object_get(status, "containerStatuses");
    struct in_addr a;
    const char *ip = json_string_value(json_object_get(status, "podIP"));
    if (phase && json_array_size(cs) > 0 &&
        (!strcmp(phase, "Running") || !strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"))) {
        /* Adopt: keep its IP, start time and restart count. */
        st->ip = ip && inet_pton(AF_INET, ip, &a) == 1 ? ntohl(a.s_addr) : next_pod_ip(s);
        int64_t t = parse_time(json_string_value(json_object_get(status, "startTime")));
        if (t) st->start_wall = t;
        const json_t *c0 = json_array_get(cs, 0);
        st->restarts = (int)json_integer_value(json_object_get(c0, "restartCount"));
        st->ran = st->timed = 1;
        st->first_wall = st->started_wall = st->start_wall;
        if (!strcmp(phase, "Running")) {
            st->stage = SP_RUNNING;
            st->ready = json_is_true(json_object_get(c0, "ready"));
            /* It keeps running from now: its exit is due run-ms from here. */
            const char *rp = restart_policy(pod);
            if (strcmp(rp, "Always") || ann_true(pod, NODE_SIM_ANN_CRASH_LOOP) ||
                annotation(pod, NODE_SIM_ANN_EXIT_CODE))
                st->due_ns =
                    now + ann_long(pod, NODE_SIM_ANN_RUN, 86400000, s->cfg.run_ms) * NS_PER_MS;
        } else {
            st->stage = SP_DONE;
            st->exit_code = !strcmp(phase, "Succeeded") ? 0 : 1;
            st->finished_wall = wall;
        }
        return st;
    }
    st->ip = next_pod_ip(s);
    st->stage = SP_CREATING;
    st->dirty = 1;
    st->due_ns =
        now + ann_long(pod, NODE_SIM_ANN_START_DELAY, 86400000, s->cfg.start_delay_ms) * NS_PER_MS;
    return st;
}

/* ---- moves ---- */

static void set_ready(sim_pod_t *st, int ready, int64_t wall)
{
    if (st->ready != ready) st->ready_wall = wall;
    st->ready = ready;
}

/* Does this pod's container exit (after run-ms) rather than run forever? */
static int exits(const json_t *pod)
{
    return strcmp(restart_policy(pod), "Always") || ann_true(pod, NODE_SIM_ANN_CRASH_LOOP) ||
           annotation(pod, NODE_SIM_ANN_EXIT_CODE);
}

/* CREATING or BACKOFF -> RUNNING: the containers start (again). */
static void start_containers(node_sim_t *s, const json_t *pod, sim_pod_t *st, int64_t now)
{
    int64_t wall = clock_wall_ns();
    if (st->stage == SP_BACKOFF) {
        st->last_exit = st->exit_code;
        st->last_started_wall = st->started_wall;
        st->last_finished_wall = st->finished_wall;
        st->restarts++;
        atomic_fetch_add(&s->pod_restarts, 1);
    } else {
        st->first_wall = wall;
        atomic_fetch_add(&s->pod_starts, 1);
    }
    st->ran = 1;
    st->started_wall = wall;
    st->finished_wall = 0;
    set_ready(st, !ann_true(pod, NODE_SIM_ANN_NEVER_READY), wall);
    set_stage(s, st, SP_RUNNING);
    st->dirty = 1;
    st->events |= SIM_EV_STARTED;
    st->due_ns =
        exits(pod) ? now + ann_long(pod, NODE_SIM_ANN_RUN, 86400000, s->cfg.run_ms) * NS_PER_MS : 0;
}

/* Kubernetes' crash-loop back-off before restart number n+1 (n restarts
 * so far): none for the first, then 10 s doubling, at most 5 min. */
static int backoff_ms(node_sim_t *s, int n)
{
    if (n <= 0) return 0;
    long sec = BACKOFF_S0;
    for (int i = 1; i < n && sec < BACKOFF_S_MAX; i++)
        sec *= 2;
    if (sec > BACKOFF_S_MAX) sec = BACKOFF_S_MAX;
    double ms = (double)sec * 1000.0 * s->cfg.backoff_scale;
    return ms < 1 ? 1 : ms > 86400000.0 ? 86400000 : (int)ms;
}

/* RUNNING -> DONE or BACKOFF: the containers exit after their run. */
static void exit_containers(node_sim_t *s, const json_t *pod, sim_pod_t *st, int64_t now)
{
    int64_t wall = clock_wall_ns();
    int code = (int)ann_long(pod, NODE_SIM_ANN_EXIT_CODE, 255,
                             ann_true(pod, NODE_SIM_ANN_CRASH_LOOP) ? 1 : 0);
    st->exit_code = code;
    st->finished_wall = wall;
    set_ready(st, 0, wall);
    st->dirty = 1;
    const char *rp = restart_policy(pod);
    int restart = !strcmp(rp, "Always") || (!strcmp(rp, "OnFailure") && code != 0);
    if (!restart) {
        set_stage(s, st, SP_DONE);
        st->due_ns = 0;
        return;
    }
    st->backoff_ms = backoff_ms(s, st->restarts);
    set_stage(s, st, SP_BACKOFF);
    st->due_ns = now + (int64_t)st->backoff_ms * NS_PER_MS;
    if (st->backoff_ms) st->events |= SIM_EV_BACKOFF;
}

/* Any stage -> STOPPING: deletion was asked for. Running containers take
 * min(grace, stop_ms) to stop; anything else stops at once. */
static void begin_stop(node_sim_t *s, const json_t *pod, sim_pod_t *st, int64_t now)
{
    const json_t *g =
        json_object_get(json_object_get(pod, "metadata"), "deletionGracePeriodSeconds");
    if (!json_is_integer(g))
        g = json_object_get(json_object_get(pod, "spec"), "terminationGracePeriodSeconds");
    int64_t grace_ms = json_is_integer(g) ? json_integer_value(g) * 1000 : 30000;
    int64_t wait = grace_ms < s->cfg.stop_ms ? grace_ms : s->cfg.stop_ms;
    if (wait < 0) wait = 0;
    st->prev_stage = st->stage;
    if (st->stage != SP_RUNNING)
        wait = 0;
    else
        st->events |= SIM_EV_KILLING;
    st->dirty = 0; /* whatever the last stage wanted to say, the stop says next */
    set_stage(s, st, SP_STOPPING);
    st->due_ns = now + wait * NS_PER_MS;
    if (!st->due_ns) st->due_ns = 1;
}

/* STOPPING -> STOPPED: running containers were stopped cleanly (exit 0,
 * Completed: the pod's phase becomes Succeeded, as a kubelet reports a
 * deleted pod whose containers all exited 0). */
static void stop_containers(node_sim_t *s, sim_pod_t *st)
{
    if (st->prev_stage == SP_RUNNING) {
        int64_t wall = clock_wall_ns();
        st->exit_code = 0;
        st->finished_wall = wall;
        set_ready(st, 0, wall);
        st->dirty = 1;
    }
    set_stage(s, st, SP_STOPPED);
    st->due_ns = 0;
}

/* ---- API calls ---- */

/* Split "ns/name" into its parts (pointers into buf). */
static int split_key(const char *key, char *buf, size_t n, const char **ns, const char **name)
{
    if ((size_t)snprintf(buf, n, "%s", key) >= n) return KP_EINVAL;
    char *slash = strchr(buf, '/');
    if (!slash) return KP_EINVAL;
    *slash = '\0';
    *ns = buf;
    *name = slash + 1;
    return 0;
}

/* An object's resourceVersion as a number (kplane's are store revisions,
 * which only grow), 0 when it has none or another form. */
static int64_t rv_of(const json_t *obj)
{
    const char *v = meta_str(obj, "resourceVersion");
    char *end;
    long long n = v ? strtoll(v, &end, 10) : 0;
    return v && *v && !*end && n > 0 ? (int64_t)n : 0;
}

static int write_status(node_sim_t *s, const json_t *pod, sim_pod_t *st, const char *ns,
                        const char *name)
{
    json_t *patch = sim__pod_status_patch(s, pod, st);
    if (!patch) return KP_ENOMEM;
    int64_t rv = 0;
    int rc = kc_patch_rv(s->client, &kc_pods, ns, name, "status", KC_PATCH_MERGE, patch, &rv, NULL);
    json_decref(patch);
    if (!rc) st->written_rv = rv;
    atomic_fetch_add(rc ? &s->pod_patch_errors : &s->pod_patches, 1);
    return rc;
}

static void record_events(node_sim_t *s, const json_t *pod, sim_pod_t *st)
{
    unsigned ev = st->events;
    st->events = 0;
    if (!s->rec || !ev) return;
    static const char *const lists[] = {"initContainers", "containers"};
    for (int l = 0; l < 2; l++) {
        size_t i;
        const json_t *c;
        json_array_foreach(json_object_get(json_object_get(pod, "spec"), lists[l]), i, c) {
            const char *cn = json_string_value(json_object_get(c, "name"));
            const char *image = json_string_value(json_object_get(c, "image"));
            if (!cn) continue;
            if ((ev & SIM_EV_STARTED) && (l == 1 || st->restarts == 0)) {
                kc_event(s->rec, pod, "Normal", "Pulled",
                         "Container image \"%s\" already present on machine", image ? image : "");
                kc_event(s->rec, pod, "Normal", "Created", "Created container: %s", cn);
                kc_event(s->rec, pod, "Normal", "Started", "Started container %s", cn);
            }
            if ((ev & SIM_EV_BACKOFF) && l == 1)
                kc_event(s->rec, pod, "Warning", "BackOff",
                         "Back-off restarting failed container %s in pod %s_%s(%s)", cn,
                         meta_str(pod, "name"), meta_str(pod, "namespace"), st->uid);
            if ((ev & SIM_EV_KILLING) && l == 1)
                kc_event(s->rec, pod, "Normal", "Killing", "Stopping container %s", cn);
        }
    }
}

/* The final DELETE of a stopped pod: gracePeriodSeconds 0, and only this
 * pod (uid precondition), never a new one of the same name. */
static int final_delete(node_sim_t *s, sim_pod_t *st, const char *ns, const char *name)
{
    json_t *opts = json_pack("{s:s, s:s, s:i, s:{s:s}}", "kind", "DeleteOptions", "apiVersion",
                             "v1", "gracePeriodSeconds", 0, "preconditions", "uid", st->uid);
    if (!opts) return KP_ENOMEM;
    int rc = kc_delete(s->client, &kc_pods, ns, name, opts, NULL);
    json_decref(opts);
    if (rc == KP_ENOTFOUND || rc == KP_ECONFLICT) rc = 0; /* gone, or not this pod */
    atomic_fetch_add(rc ? &s->pod_delete_errors : &s->pod_deletes, 1);
    return rc;
}

/* ---- sync ---- */

/* Are more keys waiting for a worker than the workers can take soon? */
static int backlogged(node_sim_t *s)
{
    kc_queue_stats_t qs;
    kc_queue_stats(s->queue, &qs);
    return qs.depth > (size_t)s->cfg.workers * SIM_BACKLOG_PER_WORKER;
}

static int step(node_sim_t *s, const json_t *pod, sim_pod_t *st)
{
    int64_t now = clock_mono_ns();
    if (json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp") &&
        st->stage < SP_STOPPING)
        begin_stop(s, pod, st, now);
    for (int moves = 0; moves < MAX_MOVES && st->due_ns && st->due_ns <= now; moves++) {
        st->due_ns = 0;
        switch (st->stage) {
        case SP_CREATING:
        case SP_BACKOFF:
            start_containers(s, pod, st, now);
            break;
        case SP_RUNNING:
            exit_containers(s, pod, st, now);
            break;
        case SP_STOPPING:
            stop_containers(s, st);
            break;
        default:
            break;
        }
    }
    /* Level-triggered, as a kubelet's status manager reconciles: when the
     * API says otherwise than this node (the node lifecycle controller
     * marked the pod not ready while the node was silent, and ran late
     * enough to land after this node's last write), say it again. Nothing
     * else would: no move of ours is due. Only a version newer than our
     * last write tells: an older one is our own earlier write arriving late
     * (ContainerCreating after Running was written), not a change. */
    if (!st->dirty && (!st->written_rv || rv_of(pod) > st->written_rv) &&
        sim__pod_status_stale(pod, st)) {
        st->dirty = 1;
        atomic_fetch_add(&s->pod_status_reconciles, 1);
    }
    char buf[SIM_KEY_MAX];
    const char *ns, *name;
    int rc = split_key(st->key, buf, sizeof buf, &ns, &name);
    if (rc) return 0; /* not a pod key: nothing to do, ever */
    if (st->dirty && st->stage == SP_CREATING && backlogged(s)) {
        /* Behind: say nothing until Running, as a kubelet's status manager
         * that only sends the latest status would; a burst of N pods then
         * costs N writes, not 2N, and readiness comes sooner. */
        st->dirty = 0;
        atomic_fetch_add(&s->pod_writes_elided, 1);
    }
    if (st->dirty) {
        rc = write_status(s, pod, st, ns, name);
        if (rc == KP_ENOTFOUND) {
            st->dirty = 0; /* deleted meanwhile: the informer will tell */
            return 0;
        }
        if (rc) return rc;
        st->dirty = 0;
        if (st->ran && !st->timed) {
            st->timed = 1;
            sim__observe_start(s, (clock_mono_ns() - st->seen_ns) / 1000);
        }
    }
    record_events(s, pod, st);
    if (st->stage == SP_STOPPED) {
        if ((rc = final_delete(s, st, ns, name))) return rc;
        set_stage(s, st, SP_GONE);
    }
    if (st->due_ns) {
        int64_t left = st->due_ns - clock_mono_ns();
        int ms = left <= 0 ? 0 : (int)((left + NS_PER_MS - 1) / NS_PER_MS);
        rc = kc_queue_add_after(s->queue, st->key, ms);
        if (rc && rc != KP_ECLOSED) return rc;
    }
    return 0;
}

int sim__pod_sync(node_sim_t *s, const char *key)
{
    json_t *pod = kc_informer_get(s->inf, key);
    sim_pod_t *st = table_get(s, key);
    int node = pod ? node_of(s, pod) : -1;
    const char *uid = pod ? meta_str(pod, "uid") : NULL;
    if (st && (node < 0 || !uid || strcmp(st->uid, uid))) {
        table_del(s, st); /* gone, moved away, or another pod of that name */
        st = NULL;
    }
    int rc = 0;
    if (node < 0 || atomic_load(&s->nodes[node].paused)) goto out; /* resumed: re-queued */
    if (!st) {
        if (!(st = pod_state_new(s, pod, key, node, clock_mono_ns()))) {
            rc = KP_ENOMEM;
            goto out;
        }
        table_put(s, st);
    }
    rc = step(s, pod, st);
out:
    json_decref(pod);
    return rc;
}
