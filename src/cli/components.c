/*
 * components.c -- start, stop and observe the controller manager, the
 * scheduler and simulated nodes (see components.h).
 *
 * Leader election: one elector per elected component (Lease kube-system/
 * kube-controller-manager and kube-system/kube-scheduler, as Kubernetes).
 * Winning starts the component on the elector's thread; losing ends the
 * process at once, so that two leaders never act: a restarted process
 * campaigns again from scratch.
 */
#include "cli/components.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/informer.h"
#include "client/leader.h"
#include "controllers/controller.h"
#include "lib/buf.h"
#include "lib/err.h"
#include "lib/log.h"
#include "node/node.h"
#include "scheduler/scheduler.h"

#define SHARED_RESYNC_MS 30000

struct cli_components {
    kc_client_t *client;
    cli_components_opts_t o;
    kc_factory_t *factory; /* informers shared by the components; NULL: one component */
    ctrl_manager_t *cm;
    sched_t *sched;
    node_sim_t *nodes;
    node_proc_t *proc; /* --runtime process */
    kc_leader_t *cm_leader, *sched_leader;
    int cm_running, sched_running;       /* atomic */
    pthread_mutex_t mu;                  /* guards the four below against a stop in progress */
    pthread_t cm_starter, sched_starter; /* started on winning the Lease */
    int cm_starter_on, sched_starter_on;
    int stopping;
    pthread_t watchdog; /* ends the process when a term runs out (watchdog_run) */
    int watchdog_on;
};

long cli_duration_ms(const char *s)
{
    if (!s || !*s) return -1;
    double total = 0;
    const char *p = s;
    while (*p) {
        char *end;
        double v = strtod(p, &end);
        if (end == p) return -1;
        p = end;
        double unit;
        if (!strncmp(p, "ms", 2))
            unit = 1, p += 2;
        else if (*p == 's')
            unit = 1000, p++;
        else if (*p == 'm')
            unit = 60000, p++;
        else if (*p == 'h')
            unit = 3600000, p++;
        else
            return -1;
        total += v * unit;
    }
    return total < 0 ? -1 : (long)total;
}

/* Starting waits for the caches (seconds with many objects): it runs on a
 * thread of its own so that the elector keeps renewing the Lease. */
static void *cm_start_thread(void *arg)
{
    cli_components_t *cc = arg;
    int rc = ctrl_manager_start(cc->cm);
    if (rc) {
        log_error("controller-manager", "starting: %s", err_str(rc));
        _exit(1);
    }
    __atomic_store_n(&cc->cm_running, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void *sched_start_thread(void *arg)
{
    cli_components_t *cc = arg;
    int rc = sched_start(cc->sched);
    if (rc) {
        log_error("scheduler", "starting: %s", err_str(rc));
        _exit(1);
    }
    __atomic_store_n(&cc->sched_running, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void cm_started(void *arg)
{
    cli_components_t *cc = arg;
    log_info("controller-manager", "became leader: starting controllers");
    pthread_mutex_lock(&cc->mu);
    if (!cc->stopping) {
        if (pthread_create(&cc->cm_starter, NULL, cm_start_thread, cc)) _exit(1);
        cc->cm_starter_on = 1;
    }
    pthread_mutex_unlock(&cc->mu);
}

static void sched_started(void *arg)
{
    cli_components_t *cc = arg;
    log_info("scheduler", "became leader: starting");
    pthread_mutex_lock(&cc->mu);
    if (!cc->stopping) {
        if (pthread_create(&cc->sched_starter, NULL, sched_start_thread, cc)) _exit(1);
        cc->sched_starter_on = 1;
    }
    pthread_mutex_unlock(&cc->mu);
}

static void lost(void *arg)
{
    (void)arg;
    log_error("leaderelection", "leadership lost: exiting");
    _exit(1);
}

/* The elector's thread may be stuck in a request well past the renew
 * deadline (an API server, or its store, that does not answer); its
 * kc_leader_is_leader() turns false on time, and this ends the process
 * then, as client-go's renew deadline does, so that the components never
 * act beyond their term (a successor may lead a lease duration later). */
static void *watchdog_run(void *arg)
{
    cli_components_t *cc = arg;
    for (;;) {
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&cc->mu);
        int stop = cc->stopping, cm = cc->cm_starter_on, sched = cc->sched_starter_on;
        pthread_mutex_unlock(&cc->mu);
        if (stop) return NULL;
        if ((cm && !kc_leader_is_leader(cc->cm_leader)) ||
            (sched && !kc_leader_is_leader(cc->sched_leader))) {
            log_warn("leaderelection", "the term ran out (renew deadline passed)");
            lost(NULL);
        }
    }
}

int cli_components_start(kc_client_t *c, const cli_components_opts_t *o, cli_components_t **out)
{
    *out = NULL;
    cli_components_t *cc = calloc(1, sizeof *cc);
    if (!cc) return KP_ENOMEM;
    cc->client = c;
    cc->o = *o;
    pthread_mutex_init(&cc->mu, NULL);
    int rc = 0;
    /* Several components in one process share their informers: each event
     * is received and parsed once, each object cached once. The resync is
     * the controller manager's level-triggered safety net. */
    int proc = o->node_runtime && !strcmp(o->node_runtime, "process");
    /* KPLANE_NODE_BACKOFF_SCALE (tests): the nodes' crash-loop back-off x
     * this (default 1: Kubernetes' 10 s doubling to 5 min). */
    const char *bs = getenv("KPLANE_NODE_BACKOFF_SCALE");
    double backoff_scale = bs && atof(bs) > 0 ? atof(bs) : 1.0;
    /* The controller manager alone takes its informers from here too, so
     * that /metrics counts them (and, polling, they poll). */
    if (((o->nodes > 0 || proc) + !!o->controllers + !!o->scheduler > 1 || o->controllers) &&
        (rc = kc_factory_new(c, SHARED_RESYNC_MS, &cc->factory)))
        goto fail;
    if (cc->factory) kc_factory_set_transform(cc->factory, kc_transform_strip_managed_fields);
    if (cc->factory) kc_factory_set_poll(cc->factory, o->poll_ms);
    if (proc) {
        node_proc_config_t pc;
        node_proc_config_default(&pc);
        pc.name = o->node_name;
        pc.data_dir = o->node_dir;
        pc.token = o->node_token;
        pc.backoff_scale = backoff_scale;
        pc.factory = cc->factory;
        if ((rc = node_proc_new(o->node_client ? o->node_client : c, &pc, &cc->proc)) ||
            (rc = node_proc_start(cc->proc))) {
            log_error("node", "starting the process node %s: %s",
                      o->node_name ? o->node_name : "(no name)", err_str(rc));
            goto fail;
        }
    }
    if (o->nodes > 0) {
        node_sim_config_t nc;
        node_sim_config_default(&nc);
        nc.count = o->nodes;
        /* A kubelet's Pulled/Created/Started events triple the writes per
         * pod; simulated nodes record them only when asked to. */
        nc.events = o->node_events;
        if (o->node_prefix) nc.name_prefix = o->node_prefix;
        if (o->node_lease_s > 0) { /* the kubelet renews at a quarter of the duration */
            nc.lease_duration_s = o->node_lease_s;
            nc.lease_renew_ms = o->node_lease_s * 250;
        }
        nc.backoff_scale = backoff_scale;
        nc.factory = cc->factory;
        if ((rc = node_sim_new(o->node_client ? o->node_client : c, &nc, &cc->nodes)) ||
            (rc = node_sim_start(cc->nodes))) {
            log_error("node", "starting %d simulated nodes: %s", o->nodes, err_str(rc));
            goto fail;
        }
    }
    if (o->controllers) {
        ctrl_manager_config_t mc = {.workers = o->workers,
                                    .enabled = o->enabled,
                                    .factory = cc->factory,
                                    .node_monitor_grace_ms = o->node_monitor_grace_ms,
                                    .node_monitor_period_ms = o->node_monitor_period_ms,
                                    .signing_cert_pem = o->signing_cert_pem,
                                    .signing_key_pem = o->signing_key_pem,
                                    .root_ca_pem = o->root_ca_pem,
                                    .sa_credentials = o->sa_credentials};
        if ((rc = ctrl_manager_new(c, &mc, &cc->cm))) goto fail;
    }
    if (o->scheduler) {
        sched_config_t sc = {.factory = cc->factory};
        if ((rc = sched_new(o->sched_client ? o->sched_client : c, &sc, &cc->sched))) goto fail;
    }
    for (int which = 0; which < 2; which++) {
        int want = which == 0 ? o->controllers : o->scheduler;
        if (!want) continue;
        if (o->leader_elect) {
            kc_leader_config_t lc = {
                .ns = "kube-system",
                .name = which == 0 ? "kube-controller-manager" : "kube-scheduler",
                .lease_ms = o->lease_ms,
                .renew_deadline_ms = o->renew_ms,
                .retry_ms = o->retry_ms,
                .on_started = which == 0 ? cm_started : sched_started,
                .on_stopped = lost,
                .arg = cc,
            };
            /* The scheduler's Lease is the scheduler's to hold. */
            kc_client_t *lcl = which == 1 && o->sched_client ? o->sched_client
                               : o->leader_client            ? o->leader_client
                                                             : c;
            rc = kc_leader_start(lcl, &lc, which == 0 ? &cc->cm_leader : &cc->sched_leader);
        } else if (which == 0) {
            if (!(rc = ctrl_manager_start(cc->cm))) cc->cm_running = 1;
        } else {
            if (!(rc = sched_start(cc->sched))) cc->sched_running = 1;
        }
        if (rc) goto fail;
    }
    if (o->leader_elect && (o->controllers || o->scheduler)) {
        if (pthread_create(&cc->watchdog, NULL, watchdog_run, cc)) {
            rc = KP_ENOMEM;
            goto fail;
        }
        cc->watchdog_on = 1;
    }
    *out = cc;
    return 0;
fail:
    cli_components_stop(cc);
    return rc;
}

void cli_components_stop(cli_components_t *cc)
{
    if (!cc) return;
    /* The leader-only work stops before the Lease is released, so that a
     * successor never acts beside it. */
    pthread_mutex_lock(&cc->mu);
    cc->stopping = 1; /* a Lease won from now on starts nothing */
    pthread_mutex_unlock(&cc->mu);
    if (cc->watchdog_on) pthread_join(cc->watchdog, NULL);
    if (cc->cm_starter_on) pthread_join(cc->cm_starter, NULL);
    if (cc->sched_starter_on) pthread_join(cc->sched_starter, NULL);
    if (cc->cm) ctrl_manager_free(cc->cm); /* stops it first if running */
    if (cc->sched) {
        if (cc->sched_running) sched_stop(cc->sched);
        sched_free(cc->sched);
    }
    if (cc->cm_leader) kc_leader_stop(cc->cm_leader);
    if (cc->sched_leader) kc_leader_stop(cc->sched_leader);
    if (cc->nodes) {
        node_sim_stop(cc->nodes);
        node_sim_free(cc->nodes);
    }
    if (cc->proc) node_proc_free(cc->proc); /* stops it first */
    kc_factory_free(cc->factory); /* after every user removed its handlers */
    pthread_mutex_destroy(&cc->mu);
    free(cc);
}

int cli_components_healthy(cli_components_t *cc)
{
    if (cc->o.controllers && !cc->o.leader_elect &&
        !__atomic_load_n(&cc->cm_running, __ATOMIC_ACQUIRE))
        return 0;
    if (cc->o.scheduler && !cc->o.leader_elect &&
        !__atomic_load_n(&cc->sched_running, __ATOMIC_ACQUIRE))
        return 0;
    return 1;
}

int cli_components_running(cli_components_t *cc, const char *name)
{
    if (!cc) return -1;
    if (!strcmp(name, "controller-manager"))
        return cc->o.controllers ? __atomic_load_n(&cc->cm_running, __ATOMIC_ACQUIRE) : -1;
    if (!strcmp(name, "scheduler"))
        return cc->o.scheduler ? __atomic_load_n(&cc->sched_running, __ATOMIC_ACQUIRE) : -1;
    return -1;
}

static int add_text(buf_t *b, char *text)
{
    int rc = text ? buf_append(b, text, strlen(text)) : 0;
    free(text);
    return rc;
}

int cli_components_metrics(cli_components_t *cc, char **text)
{
    buf_t b;
    buf_init(&b, 16u << 20);
    int rc = 0;
    char *t = NULL;
    if (cc->cm && __atomic_load_n(&cc->cm_running, __ATOMIC_ACQUIRE) &&
        !ctrl_manager_metrics(cc->cm, &t))
        rc = add_text(&b, t);
    t = NULL;
    if (!rc && cc->sched && __atomic_load_n(&cc->sched_running, __ATOMIC_ACQUIRE) &&
        !sched_metrics(cc->sched, &t))
        rc = add_text(&b, t);
    t = NULL;
    if (!rc && cc->nodes && !node_sim_metrics(cc->nodes, &t)) rc = add_text(&b, t);
    if (!rc && cc->proc && !node_proc_metrics(cc->proc, &t)) rc = add_text(&b, t);
    kc_client_stats_t cs;
    kc_client_stats(cc->client, &cs);
    kc_informer_stats_t is = {0};
    if (cc->factory) kc_factory_stats(cc->factory, &is);
    char line[1024];
    int n = snprintf(line, sizeof line,
                     "# TYPE rest_client_requests_total counter\n"
                     "rest_client_requests_total %llu\n"
                     "# TYPE rest_client_errors_total counter\n"
                     "rest_client_errors_total %llu\n"
                     "# TYPE leader_election_master_status gauge\n"
                     "leader_election_master_status{name=\"kube-controller-manager\"} %d\n"
                     "leader_election_master_status{name=\"kube-scheduler\"} %d\n"
                     "# TYPE informer_lists_total counter\n"
                     "informer_lists_total %llu\n"
                     "# TYPE informer_lists_unchanged_total counter\n"
                     "informer_lists_unchanged_total %llu\n"
                     "# TYPE informer_events_total counter\n"
                     "informer_events_total %llu\n"
                     "# TYPE informer_objects_received_total counter\n"
                     "informer_objects_received_total %llu\n",
                     (unsigned long long)cs.requests, (unsigned long long)cs.errors,
                     cc->cm_leader ? kc_leader_is_leader(cc->cm_leader) : cc->cm != NULL,
                     cc->sched_leader ? kc_leader_is_leader(cc->sched_leader) : cc->sched != NULL,
                     (unsigned long long)is.lists, (unsigned long long)is.lists_unchanged,
                     (unsigned long long)is.events, (unsigned long long)is.objects);
    if (!rc) rc = buf_append(&b, line, (size_t)n);
    if (rc) {
        buf_free(&b);
        return rc;
    }
    size_t len;
    *text = buf_detach(&b, &len);
    if (!*text) *text = strdup("");
    return *text ? 0 : KP_ENOMEM;
}
