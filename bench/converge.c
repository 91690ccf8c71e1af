/*
 * converge.c -- how fast the control plane converges, measured from outside
 * through the API like any client (src/client):
 *
 *   converge.1k      a Deployment of 1,000 replicas on 50 simulated nodes:
 *                    seconds from its create to all pods Ready; also
 *                    created_s and bound_s (the last pod created, bound),
 *                    and cpu_s, the CPU seconds (user and system) the
 *                    server used meanwhile: steadier than seconds on a
 *                    shared machine, so the figure to compare changes by
 *   converge.10k     10,000 replicas on 200 nodes
 *   converge.100k    100,000 replicas on 1,000 nodes (KWOK's published
 *                    scale), with the server's RSS at the end; run only when
 *                    named (minutes, and gigabytes)
 *   controllers.idle API requests per minute an idle controller manager
 *                    (its own process) makes once its caches are synced
 *   sched.5k         10,000 pending pods (100m CPU each, no ServiceAccount
 *                    token volume, as scheduler_perf's) bound on 5,000
 *                    simulated nodes by a `kplane scheduler` started once
 *                    they all exist (the server runs no scheduler or
 *                    controllers): pods_per_s from its first bind to its
 *                    last (Kubernetes' scheduler_perf threshold for this
 *                    case: 680); seconds from its start to the last bind;
 *                    the scheduler's CPU seconds and RSS, the server's CPU
 *                    seconds meanwhile and RSS after
 *
 * Each case starts a fresh `kplane server` (tests/client/kpserver.c) with
 * its data under $KP_BENCH_DIR, else ./.bench-tmp (never /tmp, which may be
 * a tmpfs where fsync costs nothing), and prints one line:
 * BENCH <case> <metric>=<value> ...
 * Usage: bench_converge [CASE...] (default: all but converge.100k).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client/sdk.h"
#include "kpserver.h"
#include "lib/err.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Ends the benchmark; the servers and components it started go with it
 * (their PR_SET_PDEATHSIG: kpserver.c and the forks below). */
static void die(const char *what, int rc)
{
    fprintf(stderr, "bench_converge: %s: %s\n", what, err_str(rc));
    exit(1);
}

/* CPU seconds (user + system) process pid has used so far, from
 * /proc/PID/stat; -1 when unreadable. */
static double cpu_seconds(pid_t pid)
{
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[n] = 0;
    const char *p = strrchr(line, ')'); /* comm may hold spaces */
    unsigned long long ut, st;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* VmRSS of process pid in MiB; -1 when unreadable. */
static double rss_mb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    while (f && kb < 0 && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) kb = strtol(line + 6, NULL, 10);
    if (f) fclose(f);
    return kb < 0 ? -1 : (double)kb / 1024.0;
}

/* The kplane binary: KP_KPLANE_BIN's (scripts/bench-compare drives another
 * build) or this build's. */
static const char *kplane_bin(void)
{
    const char *bin = getenv("KP_KPLANE_BIN");
    return bin && *bin ? bin : KPLANE_BIN;
}

static kc_client_t *client_for(const kpserver_t *s, json_t **storage)
{
    kc_client_t *c;
    int rc = kpserver_client(s, NULL, storage, &c);
    if (rc) die("client", rc);
    return c;
}

static int ready(const json_t *pod)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(pod, "status"), "conditions"), i, c) {
        const char *t = json_string_value(json_object_get(c, "type"));
        const char *st = json_string_value(json_object_get(c, "status"));
        if (t && st && !strcmp(t, "Ready")) return !strcmp(st, "True");
    }
    return 0;
}

static void wait_nodes(kc_client_t *c, int n)
{
    for (int tries = 0; tries < 600; tries++) {
        json_t *list;
        if (!kc_list(c, &kc_nodes, NULL, NULL, &list)) {
            size_t i, ok = 0;
            json_t *node;
            json_array_foreach(json_object_get(list, "items"), i, node)
                ok += ready(node);
            json_decref(list);
            if ((int)ok >= n) return;
        }
        usleep(100000);
    }
    die("nodes never became Ready", KP_ETIMEDOUT);
}

/* A watch on the default namespace's pods matching `query`, from a list's
 * resourceVersion: what exists now is not replayed. */
static kc_watch_t *watch_pods(kc_client_t *c, const char *query)
{
    json_t *list;
    int rc = kc_list(c, &kc_pods, "default", query, &list);
    if (rc) die("list pods", rc);
    char rv[32];
    snprintf(
        rv, sizeof rv, "%s",
        json_string_value(json_object_get(json_object_get(list, "metadata"), "resourceVersion")));
    json_decref(list);
    kc_watch_t *w;
    if ((rc = kc_watch_open(c, &kc_pods, "default", query, rv, 0, &w))) die("watch pods", rc);
    return w;
}

static void converge(const char *name, int replicas, int nodes)
{
    char nflag[16];
    snprintf(nflag, sizeof nflag, "%d", nodes);
    const char *const extra[] = {"--nodes", nflag, NULL};
    kpserver_t s;
    kpserver_start(&s, extra);
    json_t *storage;
    kc_client_t *c = client_for(&s, &storage);
    wait_nodes(c, nodes);

    kc_watch_t *w = watch_pods(c, "labelSelector=app%3Dbench");
    int rc;

    json_t *d =
        json_pack("{s:s, s:s, s:{s:s}, s:{s:i, s:{s:{s:s}}, s:{s:{s:{s:s}}, s:{s:[{s:s, s:s}]}}}}",
                  "apiVersion", "apps/v1", "kind", "Deployment", "metadata", "name", "bench",
                  "spec", "replicas", replicas, "selector", "matchLabels", "app", "bench",
                  "template", "metadata", "labels", "app", "bench", "spec", "containers", "name",
                  "app", "image", "registry.k8s.io/pause:3.9");
    double t0 = now_s(), cpu0 = cpu_seconds(s.pid);
    if ((rc = kc_create(c, &kc_deployments, "default", d, NULL, NULL))) die("create", rc);
    json_decref(d);
    json_t *seen = json_object();  /* name -> ready */
    json_t *bound = json_object(); /* names seen with a node */
    int nready = 0;
    double t_created = 0, t_bound = 0;
    while (nready < replicas) {
        kc_event_type_t type;
        json_t *pod;
        rc = kc_watch_next(w, 120000, &type, &pod);
        if (rc) die("watching pods converge", rc);
        if (type == KC_BOOKMARK) {
            json_decref(pod);
            continue;
        }
        const char *pn =
            json_string_value(json_object_get(json_object_get(pod, "metadata"), "name"));
        if (!json_object_get(seen, pn)) json_object_set_new(seen, pn, json_false());
        if ((int)json_object_size(seen) >= replicas && !t_created) t_created = now_s() - t0;
        const char *node =
            json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
        if (node && *node && !json_object_get(bound, pn)) {
            json_object_set_new(bound, pn, json_true());
            if ((int)json_object_size(bound) >= replicas) t_bound = now_s() - t0;
        }
        int was = json_is_true(json_object_get(seen, pn));
        int is = type != KC_DELETED && ready(pod);
        if (is != was) {
            nready += is ? 1 : -1;
            json_object_set_new(seen, pn, json_boolean(is));
        }
        json_decref(pod);
    }
    double secs = now_s() - t0, cpu = cpu_seconds(s.pid) - cpu0;
    json_decref(seen);
    json_decref(bound);
    kc_watch_close(w);
    printf("BENCH %s seconds=%.2f created_s=%.2f bound_s=%.2f cpu_s=%.2f rss_mb=%.1f "
           "replicas=%d nodes=%d\n",
           name, secs, t_created, t_bound, cpu, rss_mb(s.pid), replicas, nodes);
    fflush(stdout);
    kc_client_free(c);
    json_decref(storage);
    kpserver_stop(&s);
}

/* rest_client_requests_total from a component's /metrics. */
static double scrape(int port)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd,
             "curl -s http://127.0.0.1:%d/metrics | awk '/^rest_client_requests_total/{print $2}'",
             port);
    FILE *f = popen(cmd, "r");
    double v = -1;
    if (f) {
        if (fscanf(f, "%lf", &v) != 1) v = -1;
        pclose(f);
    }
    return v;
}

static void idle(void)
{
    const char *const extra[] = {"--nodes", "3", "--no-controllers", NULL};
    kpserver_t s;
    kpserver_start(&s, extra);
    int port = 20000 + (int)(getpid() % 20000);
    char listen[64];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent) _exit(127); /* see die() */
        if (!freopen("/dev/null", "w", stdout)) _exit(127);
        execl(kplane_bin(), kplane_bin(), "controller-manager", "--kubeconfig", s.kubeconfig,
              "--metrics-listen", listen, (char *)NULL);
        _exit(127);
    }
    double a = -1;
    for (int i = 0; i < 100 && a < 0; i++) { /* running and synced */
        usleep(100000);
        a = scrape(port);
    }
    sleep(2); /* past the startup lists */
    a = scrape(port);
    double t0 = now_s();
    sleep(20);
    double b = scrape(port), dt = now_s() - t0;
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    kpserver_stop(&s);
    if (a < 0 || b < 0) die("scraping the controller manager's metrics", KP_EUNAVAILABLE);
    printf("BENCH controllers.idle requests_per_min=%.1f window_s=%.0f\n", (b - a) * 60 / dt, dt);
    fflush(stdout);
}

static void sched(const char *name, int pods, int nodes)
{
    char nflag[16];
    snprintf(nflag, sizeof nflag, "%d", nodes);
    const char *const extra[] = {"--nodes", nflag, "--no-scheduler", "--no-controllers", NULL};
    kpserver_t s;
    kpserver_start(&s, extra);
    json_t *storage;
    kc_client_t *c = client_for(&s, &storage);
    wait_nodes(c, nodes);

    /* scheduler_perf's pods, whose threshold this case quotes, carry no
     * ServiceAccount token volume: its kube-apiserver runs with
     * --disable-admission-plugins=ServiceAccount,... (its mustSetupCluster).
     * These opt out instead, so that the volume's 40% more bytes per pod are
     * not what this case measures. */
    json_t *pod = json_pack(
        "{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:b, s:[{s:s, s:s, s:{s:{s:s}}}]}}", "apiVersion", "v1",
        "kind", "Pod", "metadata", "name", "", "labels", "app", "sched", "spec",
        "automountServiceAccountToken", 0, "containers", "name", "app", "image",
        "registry.k8s.io/pause:3.9", "resources", "requests", "cpu", "100m");
    json_t *meta = json_object_get(pod, "metadata");
    for (int i = 0; i < pods; i++) {
        json_object_set_new(meta, "name", json_sprintf("sched-%d", i));
        int rc = kc_create(c, &kc_pods, "default", pod, NULL, NULL);
        if (rc) die("create a pod", rc);
    }
    json_decref(pod);
    kc_watch_t *w = watch_pods(c, "labelSelector=app%3Dsched");
    int rc;

    double t0 = now_s(), cpu0 = cpu_seconds(s.pid);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) die("fork", KP_ENOMEM);
    char log[900];
    snprintf(log, sizeof log, "%s/scheduler.log", s.dir); /* kept where a failure keeps the dir */
    if (pid == 0) {
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent) _exit(127); /* see die() */
        if (!freopen("/dev/null", "w", stdout) || !freopen(log, "w", stderr)) _exit(127);
        execl(kplane_bin(), kplane_bin(), "scheduler", "--kubeconfig", s.kubeconfig,
              (char *)NULL);
        _exit(127);
    }
    json_t *bound = json_object();
    double t_first = 0, t_last = 0;
    while ((int)json_object_size(bound) < pods) {
        kc_event_type_t type;
        json_t *p;
        if ((rc = kc_watch_next(w, 120000, &type, &p))) die("watching pods bind", rc);
        const char *pn = json_string_value(json_object_get(json_object_get(p, "metadata"), "name"));
        const char *node =
            json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName"));
        if (type != KC_BOOKMARK && pn && node && *node && !json_object_get(bound, pn)) {
            json_object_set_new(bound, pn, json_true());
            t_last = now_s() - t0;
            if (!t_first) t_first = t_last;
        }
        json_decref(p);
    }
    double sched_cpu = cpu_seconds(pid), sched_rss = rss_mb(pid);
    double server_cpu = cpu_seconds(s.pid) - cpu0, server_rss = rss_mb(s.pid);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    json_decref(bound);
    kc_watch_close(w);
    printf("BENCH %s pods_per_s=%.0f seconds=%.2f first_bind_s=%.2f sched_cpu_s=%.2f "
           "sched_rss_mb=%.1f server_cpu_s=%.2f server_rss_mb=%.1f pods=%d nodes=%d\n",
           name, t_last > t_first ? (pods - 1) / (t_last - t_first) : 0.0, t_last, t_first,
           sched_cpu, sched_rss, server_cpu, server_rss, pods, nodes);
    fflush(stdout);
    kc_client_free(c);
    json_decref(storage);
    kpserver_stop(&s);
}

static int wanted(int argc, char **argv, const char *name)
{
    if (argc < 2) return 1;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], name)) return 1;
    return 0;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    const char *dir = getenv("KP_BENCH_DIR");
    if (!dir || !*dir) {
        dir = ".bench-tmp";
        mkdir(dir, 0700);
    }
    setenv("TMPDIR", dir, 1); /* where kpserver_start makes data dirs */
    if (wanted(argc, argv, "converge.1k")) converge("converge.1k", 1000, 50);
    if (wanted(argc, argv, "converge.10k")) converge("converge.10k", 10000, 200);
    if (argc > 1 && wanted(argc, argv, "converge.100k")) converge("converge.100k", 100000, 1000);
    if (wanted(argc, argv, "controllers.idle")) idle();
    if (wanted(argc, argv, "sched.5k")) sched("sched.5k", 10000, 5000);
    return 0;
}
