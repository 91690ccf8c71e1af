/*
 * lab_store_unreachable.c -- `kplane lab run store-unreachable`:
 * investigation 007's Investigation Exercise. "If the API Server's backing
 * store becomes unreachable, what will kubectl get pods do -- hang, error
 * immediately, or return stale data?"
 *
 * A `kplane server` (API server, controllers, scheduler, 3 simulated nodes)
 * on a one-member etcd, reached through a lab_proxy: blocking the proxy's
 * one target is the partition between the API server and its store (its
 * open connections are cut, new ones refused). With Deployment web at 3
 * pods running and a watch on them open, the store is cut for OUTAGE_MS;
 * meanwhile the lab measures what kubectl get pods does (the exit, its
 * message, after how long), a cached read (resourceVersion=0), a write
 * (code, message, latency), /readyz, the open watch, and what the
 * controllers and node agents did (their metrics before and after; nodes
 * marked NotReady from stale leases; pods made or removed). Then the cut is
 * healed and recovery is timed: the first write, kubectl get pods, the
 * scale to 5 carried out, the watch, the nodes. Last, the store goes silent
 * instead (the proxy holds every byte: a partition that drops packets) and
 * kubectl get pods and a write are timed again. The answers go into the
 * seed's Predict / Observe / Reflect table.
 *
 * Node health is on a short fuse (grace NODE_GRACE_S < the outage), so a
 * controller acting on its last known state would find every Lease
 * expired: whether it marks nodes NotReady is one of the observations.
 */
#include "lab/lab.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lab/lab_int.h"
#include "lab/proxy.h"
#include "lib/err.h"

#define NS         "default"
#define OUTAGE_MS  12000
#define NODE_GRACE "8s"
#define CELL       320
#define EVENTS_MAX 256

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) && errno == EINTR) {
    }
}

/* ---- a watch on web's pods, as a client holds one, on its own thread ---- */

typedef struct pod_watch {
    lab_t *lab;
    kc_client_t *c;
    pthread_t th;
    atomic_int stop;
    pthread_mutex_t mu;
    double at[EVENTS_MAX]; /* lab time of each event */
    kc_event_type_t type[EVENTS_MAX];
    int n;
    double ended_at; /* 0: still open */
    int end_rc;
} pod_watch_t;

static void *watch_main(void *arg)
{
    pod_watch_t *w = arg;
    kc_watch_t *wt = NULL;
    int rc = kc_watch_open(w->c, &kc_pods, NS, "labelSelector=app%3Dweb", "", 0, &wt);
    while (!rc && !atomic_load(&w->stop)) {
        kc_event_type_t type;
        json_t *o = NULL;
        rc = kc_watch_next(wt, 200, &type, &o);
        json_decref(o);
        if (rc == KP_ETIMEDOUT) {
            rc = 0;
            continue;
        }
        if (rc || type == KC_BOOKMARK) continue;
        pthread_mutex_lock(&w->mu);
        if (w->n < EVENTS_MAX) {
            w->at[w->n] = lab_elapsed_ms(w->lab);
            w->type[w->n++] = type;
        }
        pthread_mutex_unlock(&w->mu);
    }
    pthread_mutex_lock(&w->mu);
    if (rc) {
        w->ended_at = lab_elapsed_ms(w->lab);
        w->end_rc = rc;
    }
    pthread_mutex_unlock(&w->mu);
    kc_watch_close(wt);
    return NULL;
}

/* Events in [from, to) of the lab's time; *first: the first one's time. */
static int watch_events(pod_watch_t *w, double from, double to, double *first)
{
    int n = 0;
    *first = -1;
    pthread_mutex_lock(&w->mu);
    for (int i = 0; i < w->n; i++)
        if (w->at[i] >= from && w->at[i] < to) {
            if (!n) *first = w->at[i];
            n++;
        }
    pthread_mutex_unlock(&w->mu);
    return n;
}

/* ---- a write during the outage, on its own thread (lab calls are the
 * lab thread's; a client's are anyone's) ---- */

typedef struct write_job {
    lab_t *lab;
    kc_client_t *c;
    int replicas;
    pthread_t th;
    int rc;
    double took;
    char why[CELL];
} write_job_t;

static void *write_main(void *arg)
{
    write_job_t *j = arg;
    json_t *patch = json_pack("{s:{s:i}}", "spec", "replicas", j->replicas), *st = NULL;
    double t0 = lab_elapsed_ms(j->lab);
    j->rc =
        kc_patch(j->c, &kc_deployments, NS, "web", NULL, KC_PATCH_MERGE, patch, NULL, NULL, &st);
    j->took = lab_elapsed_ms(j->lab) - t0;
    long long code = lab__jint(st, "code", 0);
    if (!j->rc)
        snprintf(j->why, sizeof j->why, "200: accepted");
    else if (code)
        snprintf(j->why, sizeof j->why, "%lld %s: %.200s", code, lab__jstr(st, "reason"),
                 lab__jstr(st, "message"));
    else
        snprintf(j->why, sizeof j->why, "no answer (%s)", err_str(j->rc));
    json_decref(patch);
    json_decref(st);
    return NULL;
}

/* ---- kubectl ---- */

typedef struct kubectl_run {
    int status; /* exit status; negative: a KP_* code */
    double took;
    char first[CELL]; /* the first line of its output */
    char *out;
} kubectl_run_t;

static void kubectl(lab_t *lab, const lab_server_t *s, int timeout_ms, kubectl_run_t *k,
                    const char *const *args)
{
    memset(k, 0, sizeof *k);
    k->status = lab_kubectl(lab, s, timeout_ms, &k->out, &k->took, args);
    const char *o = k->out ? k->out : "";
    snprintf(k->first, sizeof k->first, "%.*s", (int)strcspn(o, "\n"), o);
}

/* The sum of every sample of `name` ("name{...} v" or "name v") in
 * Prometheus text. */
static double metric_sum(const char *text, const char *name)
{
    double sum = 0;
    size_t len = strlen(name);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, name, len) || (p[len] != '{' && p[len] != ' ')) continue;
        const char *sp = p + len;
        if (*sp == '{') sp = strchr(sp, '}');
        if (!sp) break;
        sum += strtod(sp + 1, NULL);
    }
    return sum;
}

typedef struct metrics {
    double syncs, sync_errors, retries, lease_errors;
    int ok;
} metrics_t;

static void metrics_read(lab_t *lab, const lab_server_t *s, metrics_t *m)
{
    static const char *const args[] = {"get", "--raw", "/metrics", NULL};
    kubectl_run_t k;
    kubectl(lab, s, 20000, &k, args);
    memset(m, 0, sizeof *m);
    if (k.status == 0 && k.out) {
        m->ok = 1;
        m->syncs = metric_sum(k.out, "controller_sync_duration_seconds_count");
        m->sync_errors = metric_sum(k.out, "controller_sync_errors_total");
        m->retries = metric_sum(k.out, "workqueue_retries_total");
        m->lease_errors = metric_sum(k.out, "kplane_node_sim_lease_errors_total");
    }
    free(k.out);
}

/* Nodes whose Ready condition is not True, from the API server's cache
 * (resourceVersion=0: answered without the store). -1: no answer. */
static int nodes_not_ready(kc_client_t *c)
{
    json_t *l = NULL;
    if (kc_list(c, &kc_nodes, NULL, "resourceVersion=0", &l)) return -1;
    int bad = 0;
    size_t i, j;
    json_t *node, *cond;
    json_array_foreach(json_object_get(l, "items"), i, node) {
        int ready = 0;
        json_array_foreach(json_object_get(json_object_get(node, "status"), "conditions"), j, cond)
            ready |= !strcmp(lab__jstr(cond, "type"), "Ready") &&
                     !strcmp(lab__jstr(cond, "status"), "True");
        bad += !ready;
    }
    json_decref(l);
    return bad;
}

static int readyz(kc_client_t *c)
{
    json_t *j = NULL;
    int rc = kc_get_path(c, "/readyz", &j);
    json_decref(j);
    return rc == 0 || rc == KP_ECORRUPT; /* "ok" is text, not JSON */
}

static const char *status_word(int status)
{
    return status == 0              ? "succeeded"
           : status == KP_ETIMEDOUT ? "still hung at the timeout"
                                    : "failed";
}

/* ---- the run ---- */

typedef struct obs {
    kubectl_run_t get, cached, create;
    write_job_t write;
    int readyz_ok, readyz_bad;
    double readyz_first_bad;
    int worst_not_ready;
    metrics_t m0, m1, m2;
    double t_block, t_heal;
    double first_write, get_ok, scaled, watch_resumed;
    int after_not_ready;    /* the most nodes NotReady at once in 10 s after healing */
    double first_not_ready; /* when a node was first seen NotReady (after healing); -1: never */
    double ready_again;     /* when every node was Ready again (after healing); -1: not (yet) */
    kubectl_run_t s_get;    /* the silent cut (silent()): the proxy holds every byte */
    write_job_t s_write;
    double s_first_write;
    int s_stored;       /* the silent write took effect after all */
    int watch_during;   /* events on the open watch while cut */
    double watch_ended; /* ms into the outage it ended; -1: it stayed open */
    int watch_end_rc;
} obs_t;

static void say_kubectl(lab_t *lab, const char *what, const kubectl_run_t *k)
{
    lab_say(lab, "  %s: %s after %.2f s (exit %d): %s", what, status_word(k->status), k->took / 1e3,
            k->status, k->first);
}

static int outage(lab_t *lab, lab_server_t *s, lab_proxy_t *cut, pod_watch_t *pw, obs_t *ob)
{
    static const char *const get_pods[] = {"get", "pods", NULL};
    static const char *const cached[] = {"get", "--raw",
                                         "/api/v1/namespaces/default/pods?resourceVersion=0", NULL};
    static const char *const create[] = {"create", "configmap", "during-outage",
                                         "--from-literal=a=b", NULL};
    metrics_read(lab, s, &ob->m0);
    ob->t_block = lab_elapsed_ms(lab);
    lab_proxy_block(cut, 0, 1);
    lab_say(lab, "the store is cut off from the API server (the proxy in front of etcd blocks it)");
    ob->write = (write_job_t){.lab = lab, .c = s->client, .replicas = 5};
    int writing = !pthread_create(&ob->write.th, NULL, write_main, &ob->write);
    kubectl(lab, s, 70000, &ob->get, get_pods);
    say_kubectl(lab, "kubectl get pods", &ob->get);
    kubectl(lab, s, 70000, &ob->cached, cached);
    say_kubectl(lab, "kubectl get --raw pods?resourceVersion=0 (a cached read)", &ob->cached);
    kubectl(lab, s, 70000, &ob->create, create);
    say_kubectl(lab, "kubectl create configmap", &ob->create);
    /* /readyz and the nodes as the cache has them, until the outage ends. */
    ob->readyz_first_bad = -1;
    while (lab_elapsed_ms(lab) - ob->t_block < OUTAGE_MS) {
        if (readyz(s->client)) {
            ob->readyz_ok++;
        } else {
            ob->readyz_bad++;
            if (ob->readyz_first_bad < 0) ob->readyz_first_bad = lab_elapsed_ms(lab) - ob->t_block;
        }
        int bad = nodes_not_ready(s->client);
        if (bad > ob->worst_not_ready) ob->worst_not_ready = bad;
        sleep_ms(500);
    }
    if (writing) pthread_join(ob->write.th, NULL);
    lab_say(lab, "  a write (scale web to 5): %s after %.2f s", ob->write.why,
            ob->write.took / 1e3);
    metrics_read(lab, s, &ob->m1);
    double first;
    ob->watch_during = watch_events(pw, ob->t_block, lab_elapsed_ms(lab), &first);
    pthread_mutex_lock(&pw->mu);
    ob->watch_ended = pw->ended_at ? pw->ended_at - ob->t_block : -1;
    ob->watch_end_rc = pw->end_rc;
    pthread_mutex_unlock(&pw->mu);
    lab_say(lab, "  the open watch on web's pods: %s; %d events during the outage",
            ob->watch_ended >= 0 ? "ended" : "still open", ob->watch_during);

    ob->t_heal = lab_elapsed_ms(lab);
    lab_proxy_block(cut, 0, 0);
    lab_say(lab, "healed after %.1f s", (ob->t_heal - ob->t_block) / 1e3);
    /* The first write that succeeds; the scale is sent again if it failed. */
    ob->first_write = ob->get_ok = ob->scaled = ob->watch_resumed = -1;
    for (int i = 0; ob->first_write < 0 && lab_elapsed_ms(lab) - ob->t_heal < 60000; i++) {
        json_t *cm = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                               "metadata", "name", "after-outage");
        int rc = kc_create(s->client, &kc_configmaps, NS, cm, NULL, NULL);
        json_decref(cm);
        if (!rc || rc == KP_EEXIST)
            ob->first_write = lab_elapsed_ms(lab) - ob->t_heal;
        else
            sleep_ms(100);
    }
    kubectl_run_t k;
    kubectl(lab, s, 30000, &k, get_pods);
    if (!k.status) ob->get_ok = lab_elapsed_ms(lab) - ob->t_heal;
    free(k.out);
    if (ob->write.rc) {
        json_t *patch = json_pack("{s:{s:i}}", "spec", "replicas", 5);
        kc_patch(s->client, &kc_deployments, NS, "web", NULL, KC_PATCH_MERGE, patch, NULL, NULL,
                 NULL);
        json_decref(patch);
    }
    double ms;
    if (!lab__wait_deployment(lab, s->client, NS, "web", 5, 60000, &ms))
        ob->scaled = lab_elapsed_ms(lab) - ob->t_heal;
    if (watch_events(pw, ob->t_heal, lab_elapsed_ms(lab) + 1, &first) > 0)
        ob->watch_resumed = first - ob->t_heal;
    /* The nodes, for up to 20 s: marked NotReady from Leases that only
     * looked stale (their renewals failed while the store was cut)? And
     * when Ready again? */
    double t0 = lab_elapsed_ms(lab), ok_since = -1;
    int bad = 0;
    ob->first_not_ready = -1;
    while (lab_elapsed_ms(lab) - t0 < 20000) {
        double now = lab_elapsed_ms(lab);
        bad = nodes_not_ready(s->client);
        if (bad > ob->after_not_ready) ob->after_not_ready = bad;
        if (bad && ob->first_not_ready < 0) ob->first_not_ready = now - ob->t_heal;
        if (bad) ok_since = -1;
        if (!bad && ok_since < 0) ok_since = now;
        if (!ob->after_not_ready && now - t0 > 6000) break;
        if (ob->after_not_ready && !bad && now - ok_since >= 1000) break;
        sleep_ms(250);
    }
    ob->ready_again = ob->after_not_ready && !bad ? ok_since - ob->t_heal : -1;
    metrics_read(lab, s, &ob->m2);
    return 0;
}

/* The store unreachable the other way a partition can look: not refused
 * but silent. The proxy holds every byte for an hour (connections open, no
 * answer, as when packets are dropped); the heal cuts what it held. */
static void silent(lab_t *lab, lab_server_t *s, lab_proxy_t *cut, obs_t *ob)
{
    static const char *const get_pods[] = {"get", "pods", NULL};
    lab_proxy_set_delay(cut, 3600 * 1000);
    lab_say(lab, "now a silent cut: the proxy holds every byte to and from etcd");
    ob->s_write = (write_job_t){.lab = lab, .c = s->client, .replicas = 4};
    int writing = !pthread_create(&ob->s_write.th, NULL, write_main, &ob->s_write);
    kubectl(lab, s, 90000, &ob->s_get, get_pods);
    say_kubectl(lab, "kubectl get pods", &ob->s_get);
    if (writing) pthread_join(ob->s_write.th, NULL);
    lab_say(lab, "  a write (scale web to 4): %s after %.2f s", ob->s_write.why,
            ob->s_write.took / 1e3);
    double t0 = lab_elapsed_ms(lab);
    lab_proxy_block(cut, 0, 1);
    lab_proxy_set_delay(cut, 0);
    lab_proxy_block(cut, 0, 0);
    ob->s_first_write = -1;
    while (ob->s_first_write < 0 && lab_elapsed_ms(lab) - t0 < 60000) {
        json_t *cm = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                               "metadata", "name", "after-silence");
        int rc = kc_create(s->client, &kc_configmaps, NS, cm, NULL, NULL);
        json_decref(cm);
        if (!rc || rc == KP_EEXIST)
            ob->s_first_write = lab_elapsed_ms(lab) - t0;
        else
            sleep_ms(100);
    }
    /* The 504's outcome is unknown to its client: did it take effect? */
    json_t *web = NULL;
    if (!kc_get(s->client, &kc_deployments, NS, "web", &web))
        ob->s_stored = lab__jint(web, "spec.replicas", 0) == 4;
    json_decref(web);
    lab_say(lab, "healed: the first write succeeded after %.2f s; the timed-out scale to 4 %s",
            ob->s_first_write / 1e3,
            ob->s_stored ? "took effect after all" : "did not take effect");
}

static void cell_s(char *out, double ms)
{
    if (ms < 0)
        snprintf(out, CELL, "never (within the wait)");
    else if (ms < 100)
        snprintf(out, CELL, "%.1f ms", ms);
    else
        snprintf(out, CELL, "%.2f s", ms / 1e3);
}

static void tables(lab_t *lab, const obs_t *ob)
{
    char c[12][CELL], t[12][CELL];
    double outage_s = (ob->t_heal - ob->t_block) / 1e3;
    snprintf(c[0], CELL, "%s: %.200s", status_word(ob->get.status), ob->get.first);
    cell_s(t[0], ob->get.took);
    snprintf(c[1], CELL, "%s: %.120s", status_word(ob->cached.status),
             ob->cached.status ? ob->cached.first : "the cache's pods, as last seen");
    cell_s(t[1], ob->cached.took);
    snprintf(c[2], CELL, "%s", ob->write.why);
    cell_s(t[2], ob->write.took);
    snprintf(c[3], CELL, "%s: %.200s", status_word(ob->create.status), ob->create.first);
    cell_s(t[3], ob->create.took);
    snprintf(c[4], CELL, "%d of %d checks failed", ob->readyz_bad, ob->readyz_bad + ob->readyz_ok);
    cell_s(t[4], ob->readyz_first_bad);
    if (ob->watch_ended >= 0)
        snprintf(c[5], CELL, "ended (%s); %d events before", err_str(ob->watch_end_rc),
                 ob->watch_during);
    else
        snprintf(c[5], CELL, "stayed open%s (%d events)", ob->watch_during ? "" : " and silent",
                 ob->watch_during);
    if (ob->watch_ended >= 0)
        cell_s(t[5], ob->watch_ended);
    else
        snprintf(t[5], CELL, "-");
    if (ob->m0.ok && ob->m1.ok)
        snprintf(c[6], CELL,
                 "kept working from their caches: %.0f syncs, %.0f of them failed (a write "
                 "refused), %.0f retried with backoff",
                 ob->m1.syncs - ob->m0.syncs, ob->m1.sync_errors - ob->m0.sync_errors,
                 ob->m1.retries - ob->m0.retries);
    else
        snprintf(c[6], CELL, "metrics unreadable");
    snprintf(t[6], CELL, "%.1f s", outage_s);
    snprintf(c[7], CELL, "%.0f Lease renewals failed; nodes NotReady (cached view): at most %d",
             ob->m1.lease_errors - ob->m0.lease_errors, ob->worst_not_ready);
    snprintf(t[7], CELL, "%.1f s", outage_s);

    static const char *const cols[] = {"while the store was unreachable", "observed", "after",
                                       NULL};
    lab_table(lab, "Observe: the API server cut off from etcd", cols);
    const char *names[] = {"kubectl get pods",
                           "a cached read (get --raw ...?resourceVersion=0)",
                           "a write: scale web to 5 (merge patch)",
                           "kubectl create configmap",
                           "/readyz (every 0.5 s)",
                           "an open watch on web's pods",
                           "the controllers (their metrics)",
                           "the node agents"};
    for (int i = 0; i < 8; i++)
        lab_row(lab, (const char *const[]){names[i], c[i], t[i]});
    lab_table_end(lab);

    static const char *const scols[] = {"while the store was silent", "observed", "after", NULL};
    lab_table(lab, "Observe: the same, when the store does not answer at all (a silent cut)",
              scols);
    snprintf(c[9], CELL, "%s: %.200s", status_word(ob->s_get.status), ob->s_get.first);
    cell_s(t[9], ob->s_get.took);
    lab_row(lab, (const char *const[]){"kubectl get pods", c[9], t[9]});
    snprintf(c[10], CELL, "%s", ob->s_write.why);
    cell_s(t[10], ob->s_write.took);
    lab_row(lab, (const char *const[]){"a write: scale web to 4 (merge patch)", c[10], t[10]});
    cell_s(t[11], ob->s_first_write);
    lab_row(lab, (const char *const[]){"after healing, the first write", "succeeded", t[11]});
    lab_table_end(lab);

    static const char *const rcols[] = {"after healing", "took", NULL};
    lab_table(lab, "Recovery", rcols);
    cell_s(t[8], ob->first_write);
    lab_row(lab, (const char *const[]){"the first write succeeded", t[8]});
    cell_s(t[9], ob->get_ok);
    lab_row(lab, (const char *const[]){"kubectl get pods answered", t[9]});
    cell_s(t[10], ob->scaled);
    lab_row(lab, (const char *const[]){"web scaled to 5, all available", t[10]});
    cell_s(t[11], ob->watch_resumed);
    lab_row(lab, (const char *const[]){"the watch's first event after healing", t[11]});
    if (ob->after_not_ready && ob->ready_again >= 0)
        snprintf(c[8], CELL, "%d of 3 at most, from %.1f s; all Ready again after %.1f s",
                 ob->after_not_ready, ob->first_not_ready / 1e3, ob->ready_again / 1e3);
    else if (ob->after_not_ready)
        snprintf(c[8], CELL, "%d of 3 at most, from %.1f s; not all Ready 20 s after healing",
                 ob->after_not_ready, ob->first_not_ready / 1e3);
    else
        snprintf(c[8], CELL, "none (watched for 6 s)");
    lab_row(lab, (const char *const[]){"nodes NotReady after healing", c[8]});
    lab_table_end(lab);

    /* Predict / Observe / Reflect, answered from the figures above. */
    char a[6][CELL];
    int get_failed = ob->get.status != 0;
    snprintf(a[0], CELL,
             "never stale data: %s when the store refuses (%.2f s), %s when it is silent (%.1f "
             "s: %.100s)",
             get_failed ? "an error at once" : "an answer", ob->get.took / 1e3,
             ob->s_get.status ? "a hang, then an error" : "an answer", ob->s_get.took / 1e3,
             ob->s_get.first);
    snprintf(a[1], CELL, "%s",
             ob->cached.status
                 ? "no: cached reads failed too"
                 : "only when the client asks for them (resourceVersion=0): the cache, possibly "
                   "stale; a plain read refuses");
    snprintf(a[2], CELL, "%s (%.100s) at once when cut; %s (%.60s) after %.1f s when silent%s",
             ob->write.rc ? "refused" : "ACCEPTED", ob->write.why,
             ob->s_write.rc ? "failed" : "ACCEPTED", ob->s_write.why, ob->s_write.took / 1e3,
             ob->s_write.rc ? (ob->s_stored ? ", yet it took effect later (an unknown outcome)"
                                            : ", and it did not take effect")
                            : "");
    snprintf(a[3], CELL,
             "yes: %.0f syncs on their last known state, %.0f refused writes retried; the "
             "node controller, seeing Leases its cache had not seen renewed, marked %d of 3 "
             "nodes NotReady once the store was back (%d while it was not)",
             ob->m1.syncs - ob->m0.syncs, ob->m1.sync_errors - ob->m0.sync_errors,
             ob->after_not_ready, ob->worst_not_ready);
    snprintf(a[4], CELL,
             "durability: no write is acknowledged that the store has not made durable (the "
             "scale, the ConfigMap: %s)",
             ob->write.rc && ob->create.status ? "both refused" : "see above");
    snprintf(a[5], CELL,
             "agreement: a read the store cannot confirm as current is refused (%s), not "
             "answered from memory; one rule, the store is the only truth, serves both",
             get_failed ? "get pods" : "not here");
    static const char *const pcols[] = {"the seed asks", "this run answers", NULL};
    lab_table(lab, "Predict / Observe / Reflect", pcols);
    const char *q[] = {"Predict: kubectl get pods -- hang, error at once, or stale data?",
                       "Observe: does the API server serve cached reads?",
                       "Observe: does it refuse writes?",
                       "Observe: do running controllers keep reconciling from their last known "
                       "state?",
                       "Reflect: which behaviours protected durability?",
                       "Reflect: which protected agreement? The same protection?"};
    for (int i = 0; i < 6; i++)
        lab_row(lab, (const char *const[]){q[i], a[i]});
    lab_table_end(lab);
}

static int run(lab_t *lab)
{
    char store[256], via[96];
    pid_t etcd[1];
    int rc = lab_etcd_start(lab, 1, store, sizeof store, etcd);
    if (rc) return rc;
    const char *colon = strrchr(store, ':');
    int port = colon ? (int)strtol(colon + 1, NULL, 10) : 0;
    lab_proxy_t *cut = NULL;
    if ((rc = lab_proxy_start(&port, 1, 0, &cut))) {
        lab_say(lab, "a proxy in front of etcd: %s", err_str(rc));
        return rc;
    }
    snprintf(via, sizeof via, "etcd://127.0.0.1:%d", lab_proxy_port(cut));
    lab_say(lab, "etcd at %s, reached through a proxy at %s", store, via);
    static const char *const flags[] = {"--node-monitor-grace-period",
                                        NODE_GRACE,
                                        "--node-monitor-period",
                                        "1s",
                                        "--node-lease-duration-seconds",
                                        "4",
                                        NULL};
    lab_server_opts_t o = {.name = "server", .store = via, .nodes = 3, .extra = flags};
    lab_server_t *s = NULL;
    pod_watch_t *pw = calloc(1, sizeof *pw);
    obs_t *ob = calloc(1, sizeof *ob);
    int watching = 0;
    if (!pw || !ob) {
        rc = KP_ENOMEM;
        goto out;
    }
    if ((rc = lab_server_start(lab, &o, &s))) goto out;
    if ((rc = lab__wait_nodes(lab, s->client, 3, 60000))) goto out;
    json_t *web = json_pack(
        "{s:s, s:s, s:{s:s}, s:{s:i, s:{s:{s:s}}, s:{s:{s:{s:s}}, s:{s:b, s:[{s:s, s:s}]}}}}",
        "apiVersion", "apps/v1", "kind", "Deployment", "metadata", "name", "web", "spec",
        "replicas", 3, "selector", "matchLabels", "app", "web", "template", "metadata", "labels",
        "app", "web", "spec", "automountServiceAccountToken", 0, "containers", "name", "web",
        "image", "nginx");
    rc = kc_create(s->client, &kc_deployments, NS, web, NULL, NULL);
    json_decref(web);
    double ms;
    if (rc || (rc = lab__wait_deployment(lab, s->client, NS, "web", 3, 60000, &ms))) goto out;
    lab_say(lab, "Deployment web: 3 pods running on the simulated nodes after %.1f s", ms / 1e3);
    pw->lab = lab;
    pw->c = s->client;
    pthread_mutex_init(&pw->mu, NULL);
    if (pthread_create(&pw->th, NULL, watch_main, pw)) {
        pthread_mutex_destroy(&pw->mu);
        rc = KP_ENOMEM;
        goto out;
    }
    watching = 1;
    sleep_ms(1000);
    if ((rc = outage(lab, s, cut, pw, ob))) goto out;
    silent(lab, s, cut, ob);
    tables(lab, ob);
out:
    if (watching) {
        atomic_store(&pw->stop, 1);
        pthread_join(pw->th, NULL);
        pthread_mutex_destroy(&pw->mu);
    }
    if (ob) {
        free(ob->get.out);
        free(ob->cached.out);
        free(ob->create.out);
        free(ob->s_get.out);
    }
    free(ob);
    free(pw);
    lab_proxy_stop(cut);
    return rc;
}

const lab_def_t lab_store_unreachable = {
    .name = "store-unreachable",
    .seed = "007",
    .title = "the API server cut off from its store: kubectl, writes, watches, controllers",
    .needs = "etcd",
    .run = run,
};
