/*
 * proc.c -- the process runtime's lifecycle: one node whose pods run as
 * local processes (node.h describes what a user sees).
 *
 * INVARIANTS the runtime protects (each file keeps its part):
 *   1. The node exists in the API, Ready, with a Lease renewed every renew
 *      interval, and reports the log server's port (sim_node.c, through the
 *      simulator inside).
 *   2. Every container of every pod bound to the node runs its command, or
 *      waits for its back-off, or has ended as its restartPolicy says; its
 *      status in the API says which (proc_pod.c, proc_status.c).
 *   3. A pod being deleted has its processes stopped (SIGTERM, then SIGKILL
 *      after the grace period) before the final DELETE; a pod that leaves
 *      the node has no process left (proc_pod.c).
 *   4. No process the runtime started outlives node_proc_stop (proc_spawn.c).
 *   5. It writes only what a kubelet writes: its Node and Lease, pods/status
 *      of its pods, their final DELETE, and Events.
 *
 * OWNS: the simulator of its one node (with the runtime's hooks set), the
 * pod table, the io thread and its children, the log server, copies of the
 * configuration.
 *
 * Lifecycle: node_proc_new -> node_proc_start (io thread, log server, then
 * the simulator: registration, informer, workers) -> node_proc_stop (the
 * simulator, then the pods' processes, the log server) -> node_proc_free.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/err.h"
#include "lib/log.h"
#include "node/proc_int.h"

#define STOP_GRACE_MS 2000

void node_proc_config_default(node_proc_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->listen_addr = "127.0.0.1";
    cfg->backoff_scale = 1.0;
}

int node_proc_backoff_ms(int n, double scale)
{
    if (n <= 0) return 0;
    long sec = 10;
    for (int i = 1; i < n && sec < 300; i++)
        sec *= 2;
    if (sec > 300) sec = 300;
    double ms = (double)sec * 1000.0 * scale;
    return ms < 1 ? 1 : ms > 86400000.0 ? 86400000 : (int)ms;
}

void proc__time_nano(char *buf, size_t n, int64_t wall_ns)
{
    time_t t = (time_t)(wall_ns / 1000000000);
    struct tm tm;
    gmtime_r(&t, &tm);
    char base[24];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, n, "%s.%09ldZ", base, (long)(wall_ns % 1000000000));
}

/* ---- logs ---- */

proc_log_t *proc__log_new(const char *path)
{
    size_t n = strlen(path) + 1;
    proc_log_t *l = malloc(sizeof *l + n);
    if (!l) return NULL;
    atomic_init(&l->refs, 1);
    atomic_init(&l->ended, 0);
    memcpy(l->path, path, n);
    return l;
}

proc_log_t *proc__log_ref(proc_log_t *l)
{
    if (l) atomic_fetch_add(&l->refs, 1);
    return l;
}

void proc__log_unref(proc_log_t *l)
{
    if (l && atomic_fetch_sub(&l->refs, 1) == 1) free(l);
}

/* ---- the pod table ---- */

proc_pod_t *proc__pod_find(node_proc_t *p, const char *key)
{
    pthread_mutex_lock(&p->mu);
    proc_pod_t *pp = p->pods;
    while (pp && strcmp(pp->key, key))
        pp = pp->next;
    pthread_mutex_unlock(&p->mu);
    return pp;
}

void proc__pod_insert(node_proc_t *p, proc_pod_t *pp)
{
    pthread_mutex_lock(&p->mu);
    pp->next = p->pods;
    p->pods = pp;
    pthread_mutex_unlock(&p->mu);
}

void proc__pod_remove(node_proc_t *p, proc_pod_t *pp)
{
    pthread_mutex_lock(&p->mu);
    proc_pod_t **q = &p->pods;
    while (*q && *q != pp)
        q = &(*q)->next;
    if (*q) *q = pp->next;
    pthread_mutex_unlock(&p->mu);
}

proc_log_t *proc__log_lookup(node_proc_t *p, const char *key, const char *ctr, int previous,
                             const char **why)
{
    proc_log_t *l = NULL;
    *why = "pod";
    pthread_mutex_lock(&p->mu);
    proc_pod_t *pp = p->pods;
    while (pp && strcmp(pp->key, key))
        pp = pp->next;
    for (int i = 0; pp && i < pp->nctr; i++) {
        if (strcmp(pp->ctrs[i].name, ctr)) continue;
        *why = previous ? "previous" : "container";
        l = proc__log_ref(previous ? pp->ctrs[i].prev : pp->ctrs[i].log);
        break;
    }
    pthread_mutex_unlock(&p->mu);
    return l;
}

/* ---- new / start / stop / free ---- */

static int mkdirs(const char *path)
{
    char buf[PROC_PATH_MAX];
    if ((size_t)snprintf(buf, sizeof buf, "%s", path) >= sizeof buf) return KP_EINVAL;
    for (char *s = buf + 1; *s; s++) {
        if (*s != '/') continue;
        *s = '\0';
        if (mkdir(buf, 0755) && errno != EEXIST) return KP_EIO;
        *s = '/';
    }
    if (mkdir(buf, 0755) && errno != EEXIST) return KP_EIO;
    return 0;
}

int node_proc_new(kc_client_t *c, const node_proc_config_t *cfg, node_proc_t **out)
{
    *out = NULL;
    if (!c || !cfg || !cfg->name || !*cfg->name || !cfg->data_dir || !*cfg->data_dir ||
        !(cfg->backoff_scale > 0) || cfg->port < 0 || cfg->port > 65535)
        return KP_EINVAL;
    if (strlen(cfg->data_dir) > PROC_PATH_MAX - 400) return KP_EINVAL;
    node_proc_t *p = calloc(1, sizeof *p);
    if (!p) return KP_ENOMEM;
    p->client = c;
    p->wake_fd = p->devnull = -1;
    p->port_cfg = cfg->port;
    p->backoff_scale = cfg->backoff_scale;
    pthread_mutex_init(&p->mu, NULL);
    pthread_mutex_init(&p->io_mu, NULL);
    int rc = KP_ENOMEM;
    char *abs = NULL;
    if (cfg->data_dir[0] != '/') {
        char cwd[PROC_PATH_MAX];
        if (!getcwd(cwd, sizeof cwd)) {
            rc = KP_EIO;
            goto fail;
        }
        size_t n = strlen(cwd) + strlen(cfg->data_dir) + 2;
        if (!(abs = malloc(n))) goto fail;
        snprintf(abs, n, "%s/%s", cwd, cfg->data_dir);
    }
    if (!(p->name = strdup(cfg->name)) || !(p->dir = abs ? abs : strdup(cfg->data_dir)) ||
        !(p->addr = strdup(cfg->listen_addr ? cfg->listen_addr : "127.0.0.1")) ||
        (cfg->token && !(p->token = strdup(cfg->token))))
        goto fail;
    abs = NULL;
    char pods[PROC_PATH_MAX];
    snprintf(pods, sizeof pods, "%s/pods", p->dir);
    if ((rc = mkdirs(pods))) {
        log_error(PROC_COMPONENT, "cannot make %s: %s", pods, strerror(errno));
        goto fail;
    }
    node_sim_config_t sc;
    node_sim_config_default(&sc);
    const char *names[] = {p->name, NULL};
    sc.names = names;
    sc.backoff_scale = cfg->backoff_scale;
    sc.factory = cfg->factory;
    sc.workers = 4;
    sc.events = 1;
    if ((rc = node_sim_new(c, &sc, &p->sim))) goto fail;
    node_sim_t *s = p->sim;
    snprintf(s->nodes[0].ip, sizeof s->nodes[0].ip, "127.0.0.1");
    s->rt_sync = proc__pod_sync;
    s->rt_arg = p;
    s->rt_version = "process://1.0";
    s->rt_os_image = "kplane process node";
    s->rt_instance = "kplane-process";
    *out = p;
    return 0;
fail:
    free(abs);
    node_proc_free(p);
    return rc;
}

int node_proc_start(node_proc_t *p)
{
    if (p->started) return KP_EINVAL;
    int rc = proc__io_start(p);
    if (rc) return rc;
    if ((rc = proc__http_start(p))) {
        proc__io_stop(p, 0);
        return rc;
    }
    p->sim->rt_port = p->port;
    if ((rc = node_sim_start(p->sim))) {
        proc__http_stop(p);
        proc__io_stop(p, 0);
        return rc;
    }
    p->started = 1;
    log_info(PROC_COMPONENT, "node %s: running pods as processes under %s; logs on %s:%d", p->name,
             p->dir, p->addr, p->port);
    return 0;
}

int node_proc_port(const node_proc_t *p)
{
    return p->port;
}

void node_proc_stop(node_proc_t *p)
{
    if (!p->started || atomic_exchange(&p->stopping, 1)) return;
    node_sim_stop(p->sim); /* no worker runs from here on */
    proc__io_stop(p, STOP_GRACE_MS);
    proc__http_stop(p);
}

void node_proc_free(node_proc_t *p)
{
    if (!p) return;
    node_proc_stop(p);
    node_sim_free(p->sim);
    while (p->pods) {
        proc_pod_t *pp = p->pods;
        proc__pod_remove(p, pp);
        proc__pod_free(p, pp);
    }
    if (p->wake_fd >= 0) close(p->wake_fd);
    if (p->devnull >= 0) close(p->devnull);
    free(p->name);
    free(p->dir);
    free(p->addr);
    free(p->token);
    pthread_mutex_destroy(&p->mu);
    pthread_mutex_destroy(&p->io_mu);
    free(p);
}

int node_proc_metrics(node_proc_t *p, char **text)
{
    *text = NULL;
    char *sim = NULL;
    int rc = node_sim_metrics(p->sim, &sim);
    if (rc) return rc;
    buf_t b;
    buf_init(&b, 1u << 20);
    rc = buf_append(&b, sim, strlen(sim));
    free(sim);
    char t[1024];
    snprintf(t, sizeof t,
             "# HELP kplane_node_process_starts_total Container processes started.\n"
             "# TYPE kplane_node_process_starts_total counter\n"
             "kplane_node_process_starts_total %llu\n"
             "# HELP kplane_node_process_start_errors_total Container starts that failed.\n"
             "# TYPE kplane_node_process_start_errors_total counter\n"
             "kplane_node_process_start_errors_total %llu\n"
             "# HELP kplane_node_process_exits_total Container processes reaped.\n"
             "# TYPE kplane_node_process_exits_total counter\n"
             "kplane_node_process_exits_total %llu\n"
             "# HELP kplane_node_process_kills_total Signals sent to stop containers.\n"
             "# TYPE kplane_node_process_kills_total counter\n"
             "kplane_node_process_kills_total %llu\n"
             "# HELP kplane_node_probe_runs_total Exec probes run.\n"
             "# TYPE kplane_node_probe_runs_total counter\n"
             "kplane_node_probe_runs_total %llu\n"
             "# HELP kplane_node_probe_failures_total Exec probes that failed.\n"
             "# TYPE kplane_node_probe_failures_total counter\n"
             "kplane_node_probe_failures_total %llu\n",
             (unsigned long long)atomic_load(&p->starts),
             (unsigned long long)atomic_load(&p->start_errors),
             (unsigned long long)atomic_load(&p->exits), (unsigned long long)atomic_load(&p->kills),
             (unsigned long long)atomic_load(&p->probe_runs),
             (unsigned long long)atomic_load(&p->probe_failures));
    if (!rc) rc = buf_append(&b, t, strlen(t));
    if (rc) {
        buf_free(&b);
        return KP_ENOMEM;
    }
    size_t dlen = 0;
    *text = buf_detach(&b, &dlen);
    return *text ? 0 : KP_ENOMEM;
}
