/*
 * manager.c -- runs controllers: shared informers, one work queue and a few
 * workers per controller, metrics (see controller.h).
 *
 * INVARIANT: a key is synced by at most one worker at a time, every key
 * that changed is synced again after the change (the queue's dirty set),
 * and a failed sync is retried with backoff until it succeeds. Workers start
 * only after every informer's cache has synced, so no sync acts on an empty
 * view. It owns: each controller's queue, workers and event recorder, and
 * the informer factory unless it was given one (informers are shared with
 * the process's other components then: one per resource, read-only).
 *
 * Lifecycle: new -> start (init each controller: it takes informers and adds
 * handlers; wait for the informers' caches; start workers) -> stop (remove
 * the controllers' handlers, shut the queues down, join workers) -> free.
 *
 * A worker takes a key, calls sync, then forgets the key's backoff on
 * success or re-adds it rate-limited on failure, and marks it done, so the
 * queue may hand the key to a worker again (never to two at once).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controllers/controller.h"
#include "lib/buf.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "lib/prom.h"

#define MAX_CONTROLLERS 24
#define CTRL_SA_NAMESPACE "kube-system"
/* Each controller's token lives an hour and is asked for again once 80% of
 * that has passed (kube-controller-manager's dynamic client builder). */
#define CTRL_TOKEN_SECONDS 3600
#define MAX_INFORMERS   32
#define MAX_WORKERS     64
#define SYNC_WAIT_MS    30000
/* The last error's message as /metrics prints it: at most this many bytes
 * of it (escaped, it may take twice as many). */
#define CTRL_LAST_ERROR_MAX 256

/* In init order. The garbage collector comes last: it watches through the
 * informers the others took, and through metadata informers of its own
 * only what nobody else watches (ctrl_informer_if_shared). */
static const ctrl_ops_t *const all_controllers[] = {&ctrl_replicaset,
                                                    &ctrl_replicationcontroller,
                                                    &ctrl_deployment,
                                                    &ctrl_namespace,
                                                    &ctrl_job,
                                                    &ctrl_ttlafterfinished,
                                                    &ctrl_statefulset,
                                                    &ctrl_nodelifecycle,
                                                    &ctrl_tainteviction,
                                                    &ctrl_daemonset,
                                                    &ctrl_disruption,
                                                    &ctrl_csrsigning,
                                                    &ctrl_serviceaccount,
                                                    &ctrl_rootcapublisher,
                                                    &ctrl_clusterroleaggregation,
                                                    &ctrl_garbagecollector};

/* Sync duration histogram bounds, seconds. */
static const double bounds[] = {0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5};
#define NBOUNDS (sizeof bounds / sizeof bounds[0])

struct ctrl {
    ctrl_manager_t *m;
    const ctrl_ops_t *ops;
    void *self;
    kc_queue_t *queue;
    kc_recorder_t *recorder; /* events from ops->event_source or "<name>-controller" */
    kc_client_t *client;     /* its own identity (sa_credentials), else NULL: the manager's */
    char sa[96];             /* that identity's ServiceAccount in CTRL_SA_NAMESPACE */
    pthread_t workers[MAX_WORKERS];
    int nworkers;
    pthread_mutex_t mu; /* guards the metrics below */
    uint64_t syncs, errors, hist[NBOUNDS + 1];
    double sum_s;
    int64_t last_ok_ns; /* wall clock of the last successful sync, 0: none */
    /* The last failed sync: "KEY: error", and its wall clock (0: none). */
    char last_err[CTRL_LAST_ERROR_MAX + 1];
    int64_t last_err_ns;
};

struct ctrl_manager {
    kc_client_t *client;
    ctrl_manager_config_t cfg; /* cfg.factory: the one in use (given, or own) */
    kc_factory_t *own;         /* made here when none was given */
    kc_discovery_t *discovery; /* shared by the controllers that follow discovery */
    struct {
        const kc_resource_t *res;
        const char *field_selector; /* NULL: all of res's objects */
        kc_informer_t *inf;
    } informers[MAX_INFORMERS];
    int ninformers;
    ctrl_t ctrls[MAX_CONTROLLERS];
    int nctrls;
    int started;
};

int ctrl_manager_new(kc_client_t *c, const ctrl_manager_config_t *cfg, ctrl_manager_t **out)
{
    *out = NULL;
    ctrl_manager_t *m = calloc(1, sizeof *m);
    if (!m) return KP_ENOMEM;
    m->client = c;
    if (cfg) m->cfg = *cfg;
    if (m->cfg.workers <= 0) m->cfg.workers = 5;
    if (m->cfg.workers > MAX_WORKERS) m->cfg.workers = MAX_WORKERS;
    if (!m->cfg.resync_ms) m->cfg.resync_ms = 30000;
    kc_discovery_config_t dc = {.period_ms = m->cfg.discovery_period_ms};
    int rc = kc_discovery_new(c, &dc, &m->discovery);
    if (rc) {
        free(m);
        return rc;
    }
    if (!m->cfg.factory) {
        rc = kc_factory_new(c, m->cfg.resync_ms, &m->own);
        if (rc) {
            kc_discovery_free(m->discovery);
            free(m);
            return rc;
        }
        kc_factory_set_transform(m->own, kc_transform_strip_managed_fields);
        m->cfg.factory = m->own;
    }
    *out = m;
    return 0;
}

const char *ctrl_manager_controller_name(size_t i)
{
    return i < sizeof all_controllers / sizeof all_controllers[0] ? all_controllers[i]->name
                                                                  : NULL;
}

static int enabled(const ctrl_manager_t *m, const char *name)
{
    if (!m->cfg.enabled) return 1;
    for (const char *const *e = m->cfg.enabled; *e; e++)
        if (!strcmp(*e, name)) return 1;
    return 0;
}

kc_informer_t *ctrl_informer_if_shared(ctrl_t *c, const kc_resource_t *r)
{
    return kc_factory_lookup(c->m->cfg.factory, r) ? ctrl_informer(c, r) : NULL;
}

static kc_informer_t *informer(ctrl_t *c, const kc_resource_t *r, const char *field_selector)
{
    ctrl_manager_t *m = c->m;
    for (int i = 0; i < m->ninformers; i++) {
        const char *fs = m->informers[i].field_selector;
        if (m->informers[i].res == r &&
            (fs && field_selector ? !strcmp(fs, field_selector) : fs == field_selector))
            return m->informers[i].inf;
    }
    if (m->ninformers == MAX_INFORMERS) return NULL;
    kc_informer_t *inf;
    if (kc_factory_informer(m->cfg.factory, r, NULL, NULL, field_selector, &inf)) return NULL;
    /* KP_EEXIST: another user of the shared informer added it already. */
    int rc = kc_informer_add_index(inf, "namespace", kc_index_namespace);
    if (!field_selector && (!rc || rc == KP_EEXIST))
        rc = kc_informer_add_index(inf, "controller", kc_index_controller);
    if (!field_selector && (!rc || rc == KP_EEXIST) && r == &kc_pods)
        rc = kc_informer_add_index(inf, "node", kc_index_node);
    if (rc && rc != KP_EEXIST) return NULL;
    m->informers[m->ninformers].res = r;
    m->informers[m->ninformers].field_selector = field_selector;
    m->informers[m->ninformers].inf = inf;
    m->ninformers++;
    return inf;
}

kc_informer_t *ctrl_informer(ctrl_t *c, const kc_resource_t *r)
{
    return informer(c, r, NULL);
}

kc_informer_t *ctrl_informer_selected(ctrl_t *c, const kc_resource_t *r, const char *field_selector)
{
    return field_selector && *field_selector ? informer(c, r, field_selector) : NULL;
}

kc_client_t *ctrl_client(ctrl_t *c)
{
    return c->client ? c->client : c->m->client;
}
kc_discovery_t *ctrl_discovery(ctrl_t *c)
{
    return c->m->discovery;
}
const ctrl_manager_config_t *ctrl_config(ctrl_t *c)
{
    return &c->m->cfg;
}
kc_recorder_t *ctrl_recorder(ctrl_t *c)
{
    return c->recorder;
}

void ctrl_enqueue(ctrl_t *c, const char *key)
{
    int rc = kc_queue_add(c->queue, key);
    if (rc && rc != KP_ECLOSED) log_warn(c->ops->name, "queueing %s: %s", key, err_str(rc));
}

void ctrl_enqueue_after(ctrl_t *c, const char *key, int delay_ms)
{
    int rc = kc_queue_add_after(c->queue, key, delay_ms);
    if (rc && rc != KP_ECLOSED) log_warn(c->ops->name, "queueing %s: %s", key, err_str(rc));
}

void ctrl_enqueue_obj(ctrl_t *c, const json_t *obj)
{
    char key[600];
    if (!kc_key_of(obj, key, sizeof key)) ctrl_enqueue(c, key);
}

int ctrl_owner(const json_t *obj, const char **uid, const char **kind, const char **name)
{
    size_t i;
    json_t *ref;
    json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "ownerReferences"), i,
                       ref) {
        if (!json_is_true(json_object_get(ref, "controller"))) continue;
        if (uid) *uid = json_string_value(json_object_get(ref, "uid"));
        if (kind) *kind = json_string_value(json_object_get(ref, "kind"));
        if (name) *name = json_string_value(json_object_get(ref, "name"));
        return 1;
    }
    return 0;
}

static void record(ctrl_t *c, const char *key, int rc, double seconds)
{
    pthread_mutex_lock(&c->mu);
    c->syncs++;
    if (rc) {
        c->errors++;
        c->last_err_ns = clock_wall_ns();
        snprintf(c->last_err, sizeof c->last_err, "%.200s: %.50s", key, err_str(rc));
    } else {
        c->last_ok_ns = clock_wall_ns();
    }
    size_t b = 0;
    while (b < NBOUNDS && seconds > bounds[b])
        b++;
    c->hist[b]++;
    c->sum_s += seconds;
    pthread_mutex_unlock(&c->mu);
}

static void *worker(void *arg)
{
    ctrl_t *c = arg;
    log_thread_name("ctl", c->ops->name);
    char key[600];
    for (;;) {
        int rc = kc_queue_get(c->queue, key, sizeof key, 1000);
        if (rc == KP_ETIMEDOUT) continue;
        if (rc) break; /* closed */
        int64_t t0 = clock_mono_ns();
        rc = c->ops->sync(c, c->self, key);
        record(c, key, rc, (double)(clock_mono_ns() - t0) / 1e9);
        if (rc) {
            log_debug(c->ops->name, "sync %s: %s (retrying)", key, err_str(rc));
            kc_queue_add_rate_limited(c->queue, key);
        } else {
            kc_queue_forget(c->queue, key);
        }
        kc_queue_done(c->queue, key);
    }
    return NULL;
}

/* A new token for controller c (`arg`): a TokenRequest by the manager
 * (kc_token_fetch_fn). */
static int fetch_token(void *arg, char **token, int64_t *expires_s)
{
    ctrl_t *c = arg;
    int64_t asked = (int64_t)time(NULL); /* it expires no sooner than this + its seconds */
    int rc = kc_request_token(c->m->client, CTRL_SA_NAMESPACE, c->sa, CTRL_TOKEN_SECONDS, token);
    if (!rc) *expires_s = asked + CTRL_TOKEN_SECONDS;
    return rc;
}

/* --use-service-account-credentials: controller c acts as the ServiceAccount
 * kube-system/<its account> (made here when missing), with tokens the
 * manager asks for it as they age; its informers stay the manager's. */
static int own_identity(ctrl_manager_t *m, ctrl_t *c)
{
    char *sa = c->sa;
    if (c->ops->service_account)
        snprintf(sa, sizeof c->sa, "%s", c->ops->service_account);
    else
        snprintf(sa, sizeof c->sa, "%s-controller", c->ops->name);
    json_t *have = NULL;
    int rc = kc_get(m->client, &kc_serviceaccounts, CTRL_SA_NAMESPACE, sa, &have);
    json_decref(have);
    if (rc == KP_ENOTFOUND) {
        json_t *body = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "ServiceAccount",
                                 "metadata", "name", sa);
        rc = body ? kc_create(m->client, &kc_serviceaccounts, CTRL_SA_NAMESPACE, body, NULL, NULL)
                  : KP_ENOMEM;
        json_decref(body);
        if (rc == KP_EEXIST) rc = 0;
    }
    if (!rc) rc = kc_client_with_token_source(m->client, fetch_token, c, &c->client);
    return rc;
}

int ctrl_manager_start(ctrl_manager_t *m)
{
    int rc = 0;
    for (size_t i = 0; i < sizeof all_controllers / sizeof all_controllers[0]; i++) {
        const ctrl_ops_t *ops = all_controllers[i];
        if (!enabled(m, ops->name) || m->nctrls == MAX_CONTROLLERS) continue;
        ctrl_t *c = &m->ctrls[m->nctrls];
        c->m = m;
        c->ops = ops;
        pthread_mutex_init(&c->mu, NULL);
        kc_queue_config_t qc = {0};
        if ((rc = kc_queue_new(&qc, &c->queue))) return rc;
        m->nctrls++;
        if (m->cfg.sa_credentials && (rc = own_identity(m, c))) {
            log_error("controller-manager", "%s: its ServiceAccount's credentials: %s", ops->name,
                      err_str(rc));
            return rc;
        }
        char component[96];
        if (ops->event_source)
            snprintf(component, sizeof component, "%s", ops->event_source);
        else
            snprintf(component, sizeof component, "%s-controller", ops->name);
        if ((rc = kc_recorder_new(ctrl_client(c), component, &c->recorder))) return rc;
        if ((rc = ops->init(c, &c->self)) == KP_ENOTFOUND) {
            /* Not configured (controller.h; init said what is missing). */
            log_info("controller-manager", "%s: skipped: not configured", ops->name);
            m->nctrls--;
            kc_recorder_free(c->recorder);
            kc_client_free(c->client);
            kc_queue_free(c->queue);
            pthread_mutex_destroy(&c->mu);
            memset(c, 0, sizeof *c);
            rc = 0;
            continue;
        }
        if (rc) {
            log_error("controller-manager", "%s: init: %s", ops->name, err_str(rc));
            return rc;
        }
    }
    for (int i = 0; i < m->ninformers; i++)
        if ((rc = kc_informer_wait_synced(m->informers[i].inf, SYNC_WAIT_MS))) return rc;
    for (int i = 0; i < m->nctrls; i++) {
        ctrl_t *c = &m->ctrls[i];
        for (int w = 0; w < m->cfg.workers; w++) {
            if (pthread_create(&c->workers[w], NULL, worker, c)) return KP_ENOMEM;
            c->nworkers++;
        }
        log_info("controller-manager", "%s: started with %d workers", c->ops->name, c->nworkers);
    }
    m->started = 1;
    return 0;
}

void ctrl_manager_stop(ctrl_manager_t *m)
{
    for (int i = 0; i < m->ninformers; i++)
        for (int k = 0; k < m->nctrls; k++)
            if (m->ctrls[k].self) kc_informer_remove_handlers(m->informers[i].inf, m->ctrls[k].self);
    for (int i = 0; i < m->nctrls; i++)
        if (m->ctrls[i].queue) kc_queue_shutdown(m->ctrls[i].queue);
    for (int i = 0; i < m->nctrls; i++) {
        ctrl_t *c = &m->ctrls[i];
        for (int w = 0; w < c->nworkers; w++)
            pthread_join(c->workers[w], NULL);
        c->nworkers = 0;
    }
    m->started = 0;
}

void ctrl_manager_free(ctrl_manager_t *m)
{
    if (!m) return;
    ctrl_manager_stop(m); /* also after a failed start: handlers go first */
    for (int i = 0; i < m->nctrls; i++) {
        ctrl_t *c = &m->ctrls[i];
        if (c->self && c->ops->free) c->ops->free(c->self);
        kc_queue_free(c->queue);
        kc_recorder_free(c->recorder);
        kc_client_free(c->client);
        pthread_mutex_destroy(&c->mu);
    }
    kc_factory_free(m->own);
    kc_discovery_free(m->discovery);
    free(m);
}

int ctrl_manager_metrics(ctrl_manager_t *m, char **text)
{
    buf_t b;
    buf_init(&b, 4u << 20);
    int rc = buf_printf(&b, "# TYPE workqueue_depth gauge\n# TYPE workqueue_adds_total counter\n"
                            "# TYPE workqueue_retries_total counter\n"
                            "# TYPE controller_sync_duration_seconds histogram\n"
                            "# TYPE controller_sync_errors_total counter\n"
                            "# TYPE controller_last_successful_sync_timestamp_seconds gauge\n"
                            "# TYPE controller_last_error_info gauge\n");
    for (int i = 0; i < m->nctrls && !rc; i++) {
        ctrl_t *c = &m->ctrls[i];
        const char *n = c->ops->name;
        kc_queue_stats_t qs;
        kc_queue_stats(c->queue, &qs);
        pthread_mutex_lock(&c->mu);
        rc = buf_printf(&b, "workqueue_depth{name=\"%s\"} %zu\n", n, qs.depth);
        if (!rc) rc = buf_printf(&b, "workqueue_adds_total{name=\"%s\"} %" PRIu64 "\n", n, qs.adds);
        if (!rc) rc = buf_printf(&b, "workqueue_retries_total{name=\"%s\"} %" PRIu64 "\n", n, qs.retries);
        uint64_t cum = 0;
        for (size_t k = 0; k <= NBOUNDS && !rc; k++) {
            cum += c->hist[k];
            if (k < NBOUNDS)
                rc = buf_printf(
                    &b,
                    "controller_sync_duration_seconds_bucket{controller=\"%s\",le=\"%g\"} %" PRIu64
                    "\n",
                    n, bounds[k], cum);
            else
                rc = buf_printf(&b,
                         "controller_sync_duration_seconds_bucket{controller=\"%s\",le=\"+Inf\"} "
                         "%" PRIu64 "\n",
                         n, cum);
        }
        if (!rc)
            rc = buf_printf(&b, "controller_sync_duration_seconds_sum{controller=\"%s\"} %.6f\n", n,
                     c->sum_s);
        if (!rc)
            rc = buf_printf(&b, "controller_sync_duration_seconds_count{controller=\"%s\"} %" PRIu64 "\n",
                     n, c->syncs);
        if (!rc)
            rc = buf_printf(&b, "controller_sync_errors_total{controller=\"%s\"} %" PRIu64 "\n", n,
                     c->errors);
        if (!rc)
            rc = buf_printf(&b,
                     "controller_last_successful_sync_timestamp_seconds{controller=\"%s\"} %.3f\n",
                     n, (double)c->last_ok_ns / 1e9);
        /* The last failed sync's message as a label (escaped as the text
         * format says), its time as the value: the dashboard shows it. */
        if (!rc && c->last_err_ns) {
            char msg[2 * CTRL_LAST_ERROR_MAX + 1];
            prom_label_escape(c->last_err, CTRL_LAST_ERROR_MAX, msg, sizeof msg);
            rc = buf_printf(&b,
                            "controller_last_error_info{controller=\"%s\",message=\"%s\"} %.3f\n",
                            n, msg, (double)c->last_err_ns / 1e9);
        }
        pthread_mutex_unlock(&c->mu);
    }
    if (rc) {
        buf_free(&b);
        return rc;
    }
    size_t len;
    *text = buf_detach(&b, &len);
    if (!*text) *text = strdup("");
    return *text ? 0 : KP_ENOMEM;
}
