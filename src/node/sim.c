/*
 * sim.c -- the simulated node agents' lifecycle: configuration, the node
 * set, starting and stopping the threads, pausing nodes, and metrics.
 *
 * INVARIANTS the simulator protects (each file keeps its part):
 *   1. Every configured node exists in the API with a Ready status and a
 *      Lease in kube-node-lease whose renewTime advances every renew
 *      interval, unless the node is paused (sim_node.c).
 *   2. Every pod bound to one of our nodes moves forward through its
 *      lifecycle, as far as its spec and annotations say, and a pod being
 *      deleted gracefully is stopped and then deleted for good, so nothing
 *      waits for it forever (sim_pod.c).
 *   3. The simulator never writes anything a controller owns: only Node and
 *      Lease objects of its nodes, pods/status of its pods, the final
 *      DELETE of its terminating pods, and Events.
 *
 * OWNS: copies of the configuration, the node array (immutable after new),
 * the pod informer, the work queue, the event recorder, the worker and
 * heartbeat threads, and the pod table.
 *
 * Lifecycle: node_sim_new (validate, name the nodes) -> node_sim_start
 * (register nodes, start informer, workers, heartbeat) -> node_sim_stop
 * (heartbeat, queue, workers, informer, in that order) -> node_sim_free.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "node/sim_int.h"

#define METRICS_MAX (64u << 10)

/* Start-latency histogram bounds, seconds (SIM_LAT_BUCKETS of them). */
static const double lat_bounds[SIM_LAT_BUCKETS] = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};

static const char *const stage_names[SP_NSTAGES] = {"creating", "running", "backoff", "done",
                                                    "stopping", "stopped", "gone"};

void node_sim_config_default(node_sim_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->count = 1;
    cfg->name_prefix = "kplane-node-";
    cfg->cpu = "4";
    cfg->memory = "8Gi";
    cfg->ephemeral_storage = "100Gi";
    cfg->max_pods = 110;
    cfg->lease_duration_s = 40;
    cfg->lease_renew_ms = 10000;
    cfg->status_update_ms = 60000;
    cfg->start_delay_ms = 500;
    cfg->run_ms = 1000;
    cfg->stop_ms = 100;
    cfg->backoff_scale = 1.0;
    cfg->workers = 16;
    cfg->events = 1;
}

/* ---- small helpers the other files share ---- */

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t sim__rand(node_sim_t *s)
{
    return splitmix64(atomic_fetch_add(&s->rng, 0x9e3779b97f4a7c15ull));
}

void sim__time(char *buf, size_t n, int64_t wall_ns, int micro)
{
    time_t t = (time_t)(wall_ns / 1000000000);
    struct tm tm;
    gmtime_r(&t, &tm);
    char base[24];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    if (micro)
        snprintf(buf, n, "%s.%06ldZ", base, (long)(wall_ns % 1000000000 / 1000));
    else
        snprintf(buf, n, "%sZ", base);
}

static int by_name_cmp(const void *a, const void *b, void *arg)
{
    const node_sim_t *s = arg;
    return strcmp(s->nodes[*(const int *)a].name, s->nodes[*(const int *)b].name);
}

int sim__node_find(const node_sim_t *s, const char *name)
{
    if (!name || !*name) return -1;
    int lo = 0, hi = s->nnodes - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(name, s->nodes[s->by_name[mid]].name);
        if (!c) return s->by_name[mid];
        if (c < 0)
            hi = mid - 1;
        else
            lo = mid + 1;
    }
    return -1;
}

/* ---- new / free ---- */

static uint64_t fnv1a(const char *p)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
    return h;
}

static void uuid_str(char out[37], uint64_t a, uint64_t b)
{
    /* A version 4 variant 1 layout, so tools that parse it are happy. */
    a = (a & ~0xf000ull) | 0x4000ull;
    b = (b & ~(3ull << 62)) | (2ull << 62);
    snprintf(out, 37, "%08x-%04x-%04x-%04x-%012llx", (unsigned)(a >> 32),
             (unsigned)((a >> 16) & 0xffff), (unsigned)(a & 0xffff), (unsigned)(b >> 48),
             (unsigned long long)(b & 0xffffffffffffull));
}

static int node_init(node_sim_t *s, int i, const char *name)
{
    sim_node_t *n = &s->nodes[i];
    if (!(n->name = strdup(name))) return KP_ENOMEM;
    /* 10.0.<i/250>.<i%250 + 1>: unique for NODE_SIM_MAX_NODES nodes. */
    snprintf(n->ip, sizeof n->ip, "10.0.%hhu.%hhu", (unsigned char)(i / 250),
             (unsigned char)(i % 250 + 1));
    /* machineID and systemUUID are the machine's: stable across restarts;
     * bootID changes with every start of the process. */
    uint64_t h = fnv1a(name);
    snprintf(n->machine_id, sizeof n->machine_id, "%016llx%016llx",
             (unsigned long long)splitmix64(h), (unsigned long long)splitmix64(h + 1));
    uuid_str(n->system_uuid, splitmix64(h + 2), splitmix64(h + 3));
    uuid_str(n->boot_id, sim__rand(s), sim__rand(s));
    n->retry_ms = 500;
    return 0;
}

static int check_config(const node_sim_config_t *cfg, int *count)
{
    int n = 0;
    if (cfg->names) {
        while (cfg->names[n] && n <= NODE_SIM_MAX_NODES) {
            if (!*cfg->names[n]) return KP_EINVAL;
            n++;
        }
    } else {
        if (!cfg->name_prefix) return KP_EINVAL;
        n = cfg->count;
    }
    if (n < 1 || n > NODE_SIM_MAX_NODES) return KP_EINVAL;
    if (!cfg->cpu || !*cfg->cpu || !cfg->memory || !*cfg->memory || !cfg->ephemeral_storage ||
        !*cfg->ephemeral_storage || cfg->max_pods < 0)
        return KP_EINVAL;
    for (int i = 0; cfg->labels && cfg->labels[i]; i++) {
        const char *eq = strchr(cfg->labels[i], '=');
        if (!eq || eq == cfg->labels[i]) return KP_EINVAL;
    }
    if (cfg->lease_duration_s <= 0 || cfg->lease_renew_ms <= 0 || cfg->status_update_ms <= 0)
        return KP_EINVAL;
    if (cfg->start_delay_ms < 0 || cfg->run_ms < 0 || cfg->stop_ms < 0) return KP_EINVAL;
    if (!(cfg->backoff_scale > 0)) return KP_EINVAL;
    if (cfg->workers < 1 || cfg->workers > NODE_SIM_MAX_WORKERS) return KP_EINVAL;
    *count = n;
    return 0;
}

int node_sim_new(kc_client_t *c, const node_sim_config_t *cfg, node_sim_t **out)
{
    *out = NULL;
    int count = 0;
    if (!c || !cfg) return KP_EINVAL;
    int rc = check_config(cfg, &count);
    if (rc) return rc;
    node_sim_t *s = calloc(1, sizeof *s);
    if (!s) return KP_ENOMEM;
    s->client = c;
    s->cfg = *cfg;
    atomic_init(&s->rng,
                (uint64_t)clock_wall_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)s);
    /* Pod IPs start at a random place, so that two simulators on one
     * cluster rarely hand out the same ones. */
    atomic_init(&s->next_ip, sim__rand(s) % (1u << 22));
    pthread_mutex_init(&s->hb_mu, NULL);
    pthread_mutex_init(&s->pods_mu, NULL);
    if (clock_cond_init(&s->hb_cv)) {
        pthread_mutex_destroy(&s->hb_mu);
        pthread_mutex_destroy(&s->pods_mu);
        free(s);
        return KP_ENOMEM;
    }
    rc = KP_ENOMEM;
    if (!(s->cpu = strdup(cfg->cpu)) || !(s->memory = strdup(cfg->memory)) ||
        !(s->storage = strdup(cfg->ephemeral_storage)))
        goto fail;
    s->cfg.cpu = s->cpu;
    s->cfg.memory = s->memory;
    s->cfg.ephemeral_storage = s->storage;
    if (cfg->name_prefix && !(s->prefix = strdup(cfg->name_prefix))) goto fail;
    s->cfg.name_prefix = s->prefix;
    s->cfg.names = NULL; /* the nodes below hold the names */
    size_t nlabels = 0;
    while (cfg->labels && cfg->labels[nlabels])
        nlabels++;
    if (!(s->labels = calloc(nlabels + 1, sizeof *s->labels))) goto fail;
    for (size_t i = 0; i < nlabels; i++)
        if (!(s->labels[i] = strdup(cfg->labels[i]))) goto fail;
    s->cfg.labels = (const char *const *)s->labels;

    if (!(s->nodes = calloc((size_t)count, sizeof *s->nodes))) goto fail;
    if (!(s->by_name = calloc((size_t)count, sizeof *s->by_name))) goto fail;
    s->nnodes = count;
    for (int i = 0; i < count; i++) {
        char name[256];
        if (cfg->names)
            snprintf(name, sizeof name, "%s", cfg->names[i]);
        else
            snprintf(name, sizeof name, "%s%d", cfg->name_prefix, i);
        if ((rc = node_init(s, i, name))) goto fail;
        s->by_name[i] = i;
    }
    qsort_r(s->by_name, (size_t)count, sizeof *s->by_name, by_name_cmp, s);
    for (int i = 1; i < count; i++) {
        if (!strcmp(s->nodes[s->by_name[i]].name, s->nodes[s->by_name[i - 1]].name)) {
            rc = KP_EINVAL; /* a duplicate name */
            goto fail;
        }
    }
    s->nbuckets = 1024;
    if (!(s->buckets = calloc(s->nbuckets, sizeof *s->buckets))) {
        rc = KP_ENOMEM;
        goto fail;
    }
    *out = s;
    return 0;
fail:
    node_sim_free(s);
    return rc;
}

void node_sim_free(node_sim_t *s)
{
    if (!s) return;
    node_sim_stop(s);
    kc_factory_free(s->own);
    if (s->queue) kc_queue_free(s->queue);
    if (s->rec) kc_recorder_free(s->rec);
    sim__pods_free(s);
    for (int i = 0; s->nodes && i < s->nnodes; i++)
        free(s->nodes[i].name);
    free(s->nodes);
    free(s->by_name);
    for (size_t i = 0; s->labels && s->labels[i]; i++)
        free(s->labels[i]);
    free(s->labels);
    free(s->prefix);
    free(s->cpu);
    free(s->memory);
    free(s->storage);
    pthread_cond_destroy(&s->hb_cv);
    pthread_mutex_destroy(&s->hb_mu);
    pthread_mutex_destroy(&s->pods_mu);
    free(s);
}

/* ---- start / stop ---- */

/* A pod worker: sync keys until the queue shuts down. While stopping, keys
 * are only marked done, so stop does not wait for a backlog of requests. */
static void *worker_main(void *arg)
{
    node_sim_t *s = arg;
    log_thread_name("sim", "pods");
    char key[SIM_KEY_MAX];
    for (;;) {
        int rc = kc_queue_get(s->queue, key, sizeof key, -1);
        if (rc == KP_ECLOSED) break;
        if (rc) continue; /* KP_ETIMEDOUT cannot happen; a key too long cannot exist */
        if (!atomic_load(&s->stopping)) {
            rc = s->rt_sync ? s->rt_sync(s->rt_arg, key) : sim__pod_sync(s, key);
            if (rc) {
                log_debug(SIM_COMPONENT, "pod %s: %s (retrying)", key, err_str(rc));
                kc_queue_add_rate_limited(s->queue, key);
            } else {
                kc_queue_forget(s->queue, key);
            }
        }
        kc_queue_done(s->queue, key);
    }
    return NULL;
}

/* Registration: threads take node indexes from a shared counter. */
typedef struct reg_ctx {
    node_sim_t *s;
    atomic_int next;
} reg_ctx_t;

static void *register_main(void *arg)
{
    reg_ctx_t *r = arg;
    for (;;) {
        int i = atomic_fetch_add(&r->next, 1);
        if (i >= r->s->nnodes) break;
        int rc = sim__node_register(r->s, i);
        if (rc)
            log_warn(SIM_COMPONENT, "node %s: registration failed (%s); retrying",
                     r->s->nodes[i].name, err_str(rc));
    }
    return NULL;
}

/* Register every node, with up to cfg.workers requests in flight (200 nodes
 * take 3 requests each), on this thread if threads cannot be had. */
static void register_all(node_sim_t *s)
{
    reg_ctx_t r = {.s = s};
    atomic_init(&r.next, 0);
    pthread_t t[NODE_SIM_MAX_WORKERS];
    int n = 0, want = s->cfg.workers < s->nnodes ? s->cfg.workers : s->nnodes;
    while (n < want - 1 && !pthread_create(&t[n], NULL, register_main, &r))
        n++;
    register_main(&r);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
}

/* ---- our Nodes as the API shows them ----
 *
 * A kubelet compares its node's status in the API with its own every 10 s
 * and posts it when they differ: after the node lifecycle controller marked
 * a node Ready Unknown (its Lease went unrenewed, say while the API server
 * could not reach its store), the kubelet makes it Ready again within 10 s,
 * not at its next periodic post. The simulated nodes do the same from the
 * process's node informer: one of ours seen not Ready, and not paused, gets
 * its status posted now, Ready again as a transition (recheck). */
static void node_seen(void *arg, const json_t *node)
{
    node_sim_t *s = arg;
    const char *name =
        json_string_value(json_object_get(json_object_get(node, "metadata"), "name"));
    int i = name ? sim__node_find(s, name) : -1;
    if (i < 0) return;
    const char *ready = NULL;
    size_t k;
    const json_t *c;
    json_array_foreach(json_object_get(json_object_get(node, "status"), "conditions"), k, c) {
        const char *type = json_string_value(json_object_get(c, "type"));
        if (type && !strcmp(type, "Ready")) ready = json_string_value(json_object_get(c, "status"));
    }
    sim_node_t *n = &s->nodes[i];
    if (!ready || !strcmp(ready, "True") || atomic_load(&n->paused)) return;
    pthread_mutex_lock(&s->hb_mu);
    atomic_store(&n->recheck, 1);
    n->status_due = clock_mono_ns();
    pthread_cond_broadcast(&s->hb_cv);
    pthread_mutex_unlock(&s->hb_mu);
}

static void node_added(void *arg, const json_t *node)
{
    node_seen(arg, node);
}

static void node_updated(void *arg, const json_t *old, const json_t *node)
{
    (void)old;
    node_seen(arg, node);
}

int node_sim_start(node_sim_t *s)
{
    if (s->started) return KP_EINVAL;
    s->started = 1;
    /* Register now, so that callers find the nodes when start returns; what
     * fails is retried by the heartbeat thread. */
    register_all(s);
    /* Spread the heartbeats: node i renews (i+1)/N of an interval after its
     * registration renewed it. */
    int64_t now = clock_mono_ns();
    for (int i = 0; i < s->nnodes; i++) {
        sim_node_t *n = &s->nodes[i];
        n->lease_due = now + (int64_t)s->cfg.lease_renew_ms * 1000000 * (i + 1) / s->nnodes;
        n->status_due = now + (int64_t)s->cfg.status_update_ms * 1000000 * (i + 1) / s->nnodes;
        n->register_due = now + (int64_t)n->retry_ms * 1000000;
    }

    /* Retries are for one pod at a time; the overall limit only guards the
     * API server against a storm of failures, so it is generous. */
    kc_queue_config_t qc = {.base_delay_ms = 5, .max_delay_ms = 30000, .qps = 500, .burst = 1000};
    int rc = kc_queue_new(&qc, &s->queue);
    if (rc) goto fail;
    if (s->cfg.events && (rc = kc_recorder_new(s->client, "kubelet", &s->rec))) goto fail;
    /* One informer for every node. Our own leaves unbound pods (none of
     * ours) to the server; a shared one is the process's informer of all
     * pods, and the handlers pass over the pods of other nodes. */
    kc_factory_t *f = s->cfg.factory;
    if (!f && !(rc = kc_factory_new(s->client, 0, &s->own))) {
        kc_factory_set_transform(s->own, kc_transform_strip_managed_fields);
        f = s->own;
    }
    if (!rc) rc = kc_factory_informer(f, &kc_pods, NULL, NULL, f == s->own ? "spec.nodeName!=" : NULL,
                                      &s->inf);
    if (!rc) rc = kc_informer_add_index(s->inf, "node", kc_index_node);
    if (rc && rc != KP_EEXIST) goto fail;
    kc_handlers_t h;
    sim__pod_handlers(s, &h);
    if ((rc = kc_informer_add_handlers(s->inf, &h))) goto fail;
    kc_handlers_t nh = {.on_add = node_added, .on_update = node_updated, .arg = s};
    if ((rc = kc_factory_informer(f, &kc_nodes, NULL, NULL, NULL, &s->ninf)) ||
        (rc = kc_informer_add_handlers(s->ninf, &nh)))
        goto fail;
    for (int i = 0; i < s->cfg.workers; i++) {
        if (pthread_create(&s->workers[i], NULL, worker_main, s)) {
            rc = KP_ENOMEM;
            goto fail;
        }
        s->nworkers++;
    }
    if (pthread_create(&s->hb, NULL, sim__heartbeat_main, s)) {
        rc = KP_ENOMEM;
        goto fail;
    }
    s->hb_running = 1;
    return 0;
fail:
    node_sim_stop(s);
    kc_factory_free(s->own);
    s->own = NULL;
    if (s->queue) kc_queue_free(s->queue);
    if (s->rec) kc_recorder_free(s->rec);
    s->inf = NULL;
    s->ninf = NULL;
    s->queue = NULL;
    s->rec = NULL;
    s->started = 0;
    atomic_store(&s->stopping, 0);
    return rc;
}

void node_sim_stop(node_sim_t *s)
{
    if (!s->started || atomic_load(&s->stopping)) return;
    atomic_store(&s->stopping, 1);
    if (s->inf) kc_informer_remove_handlers(s->inf, s); /* first: it may be shared */
    if (s->ninf) kc_informer_remove_handlers(s->ninf, s);
    if (s->hb_running) {
        pthread_mutex_lock(&s->hb_mu);
        pthread_cond_broadcast(&s->hb_cv);
        pthread_mutex_unlock(&s->hb_mu);
        pthread_join(s->hb, NULL);
        s->hb_running = 0;
    }
    if (s->queue) kc_queue_shutdown(s->queue);
    for (int i = 0; i < s->nworkers; i++)
        pthread_join(s->workers[i], NULL);
    s->nworkers = 0;
}

/* ---- control ---- */

int node_sim_pause(node_sim_t *s, const char *name, int paused)
{
    int i = sim__node_find(s, name);
    if (i < 0) return KP_ENOTFOUND;
    sim_node_t *n = &s->nodes[i];
    pthread_mutex_lock(&s->hb_mu);
    int was = atomic_exchange(&n->paused, paused ? 1 : 0);
    if (paused) {
        /* Let a heartbeat in flight land, so none follows this call. */
        while (n->busy)
            pthread_cond_wait(&s->hb_cv, &s->hb_mu);
    } else if (was) {
        atomic_store(&n->recheck, 1);
        int64_t now = clock_mono_ns();
        n->lease_due = now;
        n->status_due = now;
        pthread_cond_broadcast(&s->hb_cv);
    }
    pthread_mutex_unlock(&s->hb_mu);
    if (was && !paused && s->inf && !atomic_load(&s->stopping)) sim__pod_requeue_node(s, i);
    log_info(SIM_COMPONENT, "node %s %s", name, paused ? "paused" : "resumed");
    return 0;
}

size_t node_sim_count(const node_sim_t *s)
{
    return (size_t)s->nnodes;
}

const char *node_sim_name(const node_sim_t *s, size_t i)
{
    return i < (size_t)s->nnodes ? s->nodes[i].name : NULL;
}

/* ---- metrics ---- */

static int counter(buf_t *b, const char *name, const char *help, uint64_t v)
{
    int rc = buf_printf(b, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
    return rc ? rc : buf_printf(b, "%s %llu\n", name, (unsigned long long)v);
}

int node_sim_metrics(node_sim_t *s, char **text)
{
    *text = NULL;
    buf_t b;
    buf_init(&b, METRICS_MAX);
    int paused = 0;
    for (int i = 0; i < s->nnodes; i++)
        paused += atomic_load(&s->nodes[i].paused);
    int rc = buf_printf(&b,
                 "# HELP kplane_node_sim_nodes Simulated nodes.\n"
                 "# TYPE kplane_node_sim_nodes gauge\nkplane_node_sim_nodes %d\n"
                 "# HELP kplane_node_sim_nodes_paused Simulated nodes paused.\n"
                 "# TYPE kplane_node_sim_nodes_paused gauge\n"
                 "kplane_node_sim_nodes_paused %d\n",
                 s->nnodes, paused);
    struct {
        const char *name, *help;
        uint64_t v;
    } cs[] = {
        {"kplane_node_sim_registrations_total", "Node registrations.",
         atomic_load(&s->registrations)},
        {"kplane_node_sim_registration_errors_total", "Failed node registrations.",
         atomic_load(&s->registration_errors)},
        {"kplane_node_sim_lease_renewals_total", "Lease renewals.",
         atomic_load(&s->lease_renewals)},
        {"kplane_node_sim_lease_errors_total", "Failed Lease renewals.",
         atomic_load(&s->lease_errors)},
        {"kplane_node_sim_node_status_updates_total", "Node status updates.",
         atomic_load(&s->node_status_updates)},
        {"kplane_node_sim_node_status_errors_total", "Failed Node status updates.",
         atomic_load(&s->node_status_errors)},
        {"kplane_node_sim_pod_status_patches_total", "Pod status writes.",
         atomic_load(&s->pod_patches)},
        {"kplane_node_sim_pod_status_errors_total", "Failed pod status writes.",
         atomic_load(&s->pod_patch_errors)},
        {"kplane_node_sim_pod_status_elided_total",
         "ContainerCreating writes skipped because the queue was backlogged.",
         atomic_load(&s->pod_writes_elided)},
        {"kplane_node_sim_pod_status_reconciles_total",
         "Pod statuses written again because another writer changed their phase or Ready.",
         atomic_load(&s->pod_status_reconciles)},
        {"kplane_node_sim_pod_deletes_total", "Final deletes of terminated pods.",
         atomic_load(&s->pod_deletes)},
        {"kplane_node_sim_pod_delete_errors_total", "Failed final deletes.",
         atomic_load(&s->pod_delete_errors)},
        {"kplane_node_sim_pod_starts_total", "Pods whose containers started.",
         atomic_load(&s->pod_starts)},
        {"kplane_node_sim_container_restarts_total", "Container restarts (crash loops).",
         atomic_load(&s->pod_restarts)},
    };
    for (size_t i = 0; !rc && i < sizeof cs / sizeof cs[0]; i++)
        rc = counter(&b, cs[i].name, cs[i].help, cs[i].v);
    if (!rc)
        rc = buf_printf(&b, "# HELP kplane_node_sim_pods Pods the simulator tracks, by stage.\n"
                     "# TYPE kplane_node_sim_pods gauge\n");
    for (int i = 0; !rc && i < SP_NSTAGES; i++)
        rc = buf_printf(&b, "kplane_node_sim_pods{stage=\"%s\"} %ld\n", stage_names[i],
                 atomic_load(&s->stage_count[i]));
    if (!rc)
        rc = buf_printf(&b, "# HELP kplane_node_sim_pod_start_seconds From first sight of a bound pod "
                     "to its Running status written.\n"
                     "# TYPE kplane_node_sim_pod_start_seconds histogram\n");
    uint64_t cum = 0;
    for (int i = 0; !rc && i < SIM_LAT_BUCKETS; i++) {
        cum += atomic_load(&s->lat_hist[i]);
        rc = buf_printf(&b, "kplane_node_sim_pod_start_seconds_bucket{le=\"%g\"} %llu\n", lat_bounds[i],
                 (unsigned long long)cum);
    }
    if (!rc) {
        cum += atomic_load(&s->lat_hist[SIM_LAT_BUCKETS]);
        rc = buf_printf(&b,
                 "kplane_node_sim_pod_start_seconds_bucket{le=\"+Inf\"} %llu\n"
                 "kplane_node_sim_pod_start_seconds_sum %.6f\n"
                 "kplane_node_sim_pod_start_seconds_count %llu\n",
                 (unsigned long long)cum, (double)atomic_load(&s->lat_sum_us) / 1e6,
                 (unsigned long long)atomic_load(&s->lat_count));
    }
    if (!rc && s->queue) {
        kc_queue_stats_t qs;
        kc_queue_stats(s->queue, &qs);
        rc = buf_printf(&b,
                 "# HELP kplane_node_sim_queue_depth Pod keys waiting for a worker.\n"
                 "# TYPE kplane_node_sim_queue_depth gauge\nkplane_node_sim_queue_depth %zu\n"
                 "# HELP kplane_node_sim_queue_delayed Pod keys waiting for a timer.\n"
                 "# TYPE kplane_node_sim_queue_delayed gauge\n"
                 "kplane_node_sim_queue_delayed %zu\n",
                 qs.depth, qs.delayed);
    }
    if (rc) {
        buf_free(&b);
        return KP_ENOMEM;
    }
    size_t len;
    *text = buf_detach(&b, &len);
    return 0;
}

void sim__observe_start(node_sim_t *s, int64_t us)
{
    double sec = (double)us / 1e6;
    int i = 0;
    while (i < SIM_LAT_BUCKETS && sec > lat_bounds[i])
        i++;
    atomic_fetch_add(&s->lat_hist[i], 1);
    atomic_fetch_add(&s->lat_count, 1);
    atomic_fetch_add(&s->lat_sum_us, (uint64_t)(us > 0 ? us : 0));
}
