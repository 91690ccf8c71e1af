/*
 * lab_two_copies.c -- `kplane lab run two-copies`: investigation 007's
 * "Breaking Our Design", failures 01 to 05, run for real. First the naive
 * design the seed breaks, then the same scenarios on one history.
 *
 * THE NAIVE DESIGN (deliberately wrong, and said to be in the output): two
 * `kplane server`s, each with its own embedded store and its own
 * controllers, behind a round-robin load balancer (a lab_proxy), kept "in
 * sync" by a replicator in this file: a thread per server and resource
 * (Deployments, ReplicaSets, Pods) watching that server and copying each
 * change to the other, last writer wins, over a path of its own (a
 * lab_proxy per server, LINK_MS each way) that the scenarios slow down
 * and cut.
 *
 * ONE HISTORY: two `kplane apiserver`s on a 3-member etcd cluster (api-1
 * talks to members e0 and e1, api-2 to e2 only), behind the same kind of
 * load balancer, and one controller manager.
 *
 * THE SCENARIOS, each on both designs (two clients A and B through the load
 * balancer, A's connection on the first server and B's on the second):
 *   (a) 01 late write: A scales Deployment web 3 -> 5, B reads at once;
 *       how long until B's server agrees.
 *   (b) 02 latency: SLOW_MS each way on one path (naive: the replicator's
 *       path to server 2; one history: the controller manager's), a
 *       ReplicaSet scaled 2 -> 5: the most pods that existed at once.
 *   (c) 03 A scales web to 5 and B to 2 at the same instant, each with the
 *       resourceVersion it read (as real clients do): both accepted?
 *   (d) 04 partition: naive: the replicator's path cut, both sides written;
 *       one history: e2 cut away (SIGSTOP: to the others a frozen member is
 *       one beyond a partition), then e0 and e1 cut away from e2: which
 *       side accepts writes (with etcd's request timeout the minority's
 *       write fails after about 6 s).
 *   05 is the verdict: what each design says web is, at the end.
 *
 * The replicator copies creations, spec changes and deletions of
 * Deployments and ReplicaSets, and creations of pods; a pod's deletion is
 * left to each side's own ReplicaSet controller (see repl_apply). Each
 * pod counts once however many sides hold it: a copy has its pod's name.
 */
#include "lab/lab.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lab/lab_int.h"
#include "lab/proxy.h"
#include "lib/err.h"

#define NS      "default"
#define LINK_MS 50  /* the naive replicator's path, each way */
#define SLOW_MS 400 /* failure 02's added latency, each way */
#define RS_WANT 5
#define CELL    320

/* ---- small helpers ---- */

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) && errno == EINTR) {
    }
}

static json_t *pod_template(const char *app)
{
    return json_pack("{s:{s:{s:s}}, s:{s:b, s:i, s:[{s:s, s:s}]}}", "metadata", "labels", "app",
                     app, "spec", "automountServiceAccountToken", 0,
                     "terminationGracePeriodSeconds", 0, "containers", "name", "c", "image",
                     "registry.k8s.io/pause:3.9");
}

/* A Deployment or ReplicaSet `name` of `replicas` pods labelled app=name. */
static json_t *workload(const kc_resource_t *res, const char *name, int replicas)
{
    return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:i, s:{s:{s:s}}, s:o}}", "apiVersion", "apps/v1",
                     "kind", res->kind, "metadata", "name", name, "namespace", NS, "spec",
                     "replicas", replicas, "selector", "matchLabels", "app", name, "template",
                     pod_template(name));
}

/* "200", "409 Conflict: message", "unreachable (...)": an answer in words. */
static void outcome(int rc, const json_t *status, char *out, size_t size)
{
    if (!rc) {
        snprintf(out, size, "200");
        return;
    }
    long long code = lab__jint(status, "code", 0);
    const char *reason = lab__jstr(status, "reason");
    const char *msg = lab__jstr(status, "message");
    if (code)
        snprintf(out, size, "%lld %s: %.140s", code, reason, msg);
    else
        snprintf(out, size, "no answer (%s)", err_str(rc));
}

/* Set web's replicas: a merge patch (no precondition, as `kubectl scale`). */
static int scale(kc_client_t *c, const kc_resource_t *res, const char *name, int n, long long *rv,
                 char *why, size_t size)
{
    json_t *patch = json_pack("{s:{s:i}}", "spec", "replicas", n), *out = NULL, *st = NULL;
    int rc = kc_patch(c, res, NS, name, NULL, KC_PATCH_MERGE, patch, NULL, &out, &st);
    if (rv) *rv = rc ? 0 : lab__jint(out, "metadata.resourceVersion", 0);
    if (why) outcome(rc, st, why, size);
    json_decref(patch);
    json_decref(out);
    json_decref(st);
    return rc;
}

/* spec.replicas and resourceVersion of a Deployment or ReplicaSet. */
static int read_replicas(kc_client_t *c, const kc_resource_t *res, const char *name, int *replicas,
                         long long *rv)
{
    json_t *o = NULL;
    int rc = kc_get(c, res, NS, name, &o);
    *replicas = rc ? -1 : (int)lab__jint(o, "spec.replicas", -1);
    if (rv) *rv = rc ? 0 : lab__jint(o, "metadata.resourceVersion", 0);
    json_decref(o);
    return rc;
}

/* ================= the naive replicator (deliberately wrong) ================= */

#define REPL_SEEN_MAX 64
#define REPL_MINE_MAX 256
#define REPL_COPIERS  4

/* A pod to create on server dst (copy: owned). */
typedef struct repl_job {
    struct repl_job *next;
    int dst;
    json_t *copy;
} repl_job_t;

typedef struct repl repl_t;

typedef struct repl_watch {
    repl_t *r;
    int src;
    const kc_resource_t *res;
    pthread_t th;
    int started;
} repl_watch_t;

/* The spec and labels last copied from a server, per object: later events
 * that only change status are not copied again. */
typedef struct repl_seen {
    int src;
    const kc_resource_t *res;
    char name[128];
    char *what;
} repl_seen_t;

/* A version the replicator wrote itself: its echo is not copied back. */
typedef struct repl_mine {
    int dst;
    const kc_resource_t *res;
    char name[128];
    long long rv;
} repl_mine_t;

/* THREADS: six watch threads (repl_main), one per server and resource;
 * each applies its own events in order. */
struct repl {
    lab_t *lab;
    kc_client_t *c[2]; /* each server through its link proxy (the lab's) */
    atomic_int stop;
    atomic_long copied, failed;
    pthread_mutex_t mu; /* guards seen, nseen, mine, mine_next */
    repl_seen_t seen[REPL_SEEN_MAX];
    int nseen;
    repl_mine_t mine[REPL_MINE_MAX]; /* a ring: the latest REPL_MINE_MAX writes */
    int mine_next;
    repl_watch_t w[6];
    /* Pod copies go out concurrently, as a replicator pipelines them: a
     * queue and REPL_COPIERS threads (repl_copier). */
    pthread_mutex_t qmu; /* guards jobs, jobs_tail */
    pthread_cond_t qcv;
    struct repl_job *jobs, *jobs_tail;
    pthread_t copier[REPL_COPIERS];
    int ncopiers;
};

static int repl_is_mine(repl_t *r, int src, const kc_resource_t *res, const char *name,
                        long long rv)
{
    int found = 0;
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < REPL_MINE_MAX && !found; i++) {
        repl_mine_t *m = &r->mine[i];
        found = m->res == res && m->dst == src && m->rv == rv && !strcmp(m->name, name);
    }
    pthread_mutex_unlock(&r->mu);
    return found;
}

static void repl_note_mine(repl_t *r, int dst, const kc_resource_t *res, const json_t *written)
{
    pthread_mutex_lock(&r->mu);
    repl_mine_t *m = &r->mine[r->mine_next++ % REPL_MINE_MAX];
    m->dst = dst;
    m->res = res;
    snprintf(m->name, sizeof m->name, "%s", lab__jstr(written, "metadata.name"));
    m->rv = lab__jint(written, "metadata.resourceVersion", 0);
    pthread_mutex_unlock(&r->mu);
}

static repl_seen_t *repl_seen_of(repl_t *r, int src, const kc_resource_t *res, const char *name)
{
    for (int i = 0; i < r->nseen; i++) {
        repl_seen_t *s = &r->seen[i];
        if (s->src == src && s->res == res && !strcmp(s->name, name)) return s;
    }
    return NULL;
}

/* Whether `what` (spec and labels) was the last copied from src. */
static int repl_seen_same(repl_t *r, int src, const kc_resource_t *res, const char *name,
                          const char *what)
{
    pthread_mutex_lock(&r->mu);
    repl_seen_t *s = repl_seen_of(r, src, res, name);
    int same = s && s->what && !strcmp(s->what, what);
    pthread_mutex_unlock(&r->mu);
    return same;
}

static void repl_seen_set(repl_t *r, int src, const kc_resource_t *res, const char *name,
                          const char *what)
{
    pthread_mutex_lock(&r->mu);
    repl_seen_t *s = repl_seen_of(r, src, res, name);
    if (!s) {
        s = &r->seen[r->nseen < REPL_SEEN_MAX ? r->nseen++ : REPL_SEEN_MAX - 1];
        free(s->what);
        s->what = NULL;
        s->src = src;
        s->res = res;
        snprintf(s->name, sizeof s->name, "%s", name);
    }
    free(s->what);
    s->what = strdup(what);
    pthread_mutex_unlock(&r->mu);
}

/* What is copied of a Deployment or ReplicaSet: labels and spec, as text. */
static char *repl_what(const json_t *o)
{
    json_t *w = json_pack("{s:O?, s:O?}", "labels",
                          json_object_get(json_object_get(o, "metadata"), "labels"), "spec",
                          json_object_get(o, "spec"));
    char *s = w ? json_dumps(w, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(w);
    return s;
}

/* A new object for the other server: name, namespace, labels and spec;
 * no owner (the other server's controllers adopt it by its labels), no
 * status, and a pod unbound. */
static json_t *repl_copy(const kc_resource_t *res, const json_t *o)
{
    const json_t *m = json_object_get(o, "metadata");
    char api[64];
    snprintf(api, sizeof api, "%s%s%s", res->group, *res->group ? "/" : "", res->version);
    json_t *c =
        json_pack("{s:s, s:s, s:{s:O?, s:s, s:O?}, s:O?}", "apiVersion", api, "kind", res->kind,
                  "metadata", "name", json_object_get(m, "name"), "namespace", NS, "labels",
                  json_object_get(m, "labels"), "spec", json_object_get(o, "spec"));
    if (!c) return NULL;
    json_t *spec = json_deep_copy(json_object_get(c, "spec"));
    if (spec) {
        json_object_del(spec, "nodeName");
        json_object_set_new(c, "spec", spec);
    }
    return c;
}

/* Copy one change seen on server src to the other one: the whole of the
 * naive design's "agreement". */
static void repl_apply(repl_watch_t *w, kc_event_type_t type, const json_t *o)
{
    repl_t *r = w->r;
    const kc_resource_t *res = w->res;
    int dst = 1 - w->src;
    kc_client_t *to = r->c[dst];
    const char *name = lab__jstr(o, "metadata.name");
    if (repl_is_mine(r, w->src, res, name, lab__jint(o, "metadata.resourceVersion", 0))) return;
    int rc;
    int gone = type == KC_DELETED || *lab__jstr(o, "metadata.deletionTimestamp");
    /* A pod's deletion is its side's controllers' business: copied, the two
     * ReplicaSet controllers delete each other's pods without end (each
     * deletes its newest, the other's copies; a first version measured 13
     * pods made for 3 missing, never settling). */
    if (gone && res == &kc_pods) return;
    if (gone) {
        rc = kc_delete(to, res, NS, name, NULL, NULL);
        if (rc && rc != KP_ENOTFOUND)
            atomic_fetch_add(&r->failed, 1);
        else if (!rc)
            atomic_fetch_add(&r->copied, 1);
        return;
    }
    json_t *copy = repl_copy(res, o), *out = NULL;
    if (!copy) return;
    if (res == &kc_pods) { /* a pod's spec does not change: copy it once */
        repl_job_t *j = type == KC_ADDED ? calloc(1, sizeof *j) : NULL;
        if (!j) {
            json_decref(copy);
            return;
        }
        j->dst = dst;
        j->copy = copy;
        pthread_mutex_lock(&r->qmu);
        if (r->jobs_tail)
            r->jobs_tail->next = j;
        else
            r->jobs = j;
        r->jobs_tail = j;
        pthread_cond_signal(&r->qcv);
        pthread_mutex_unlock(&r->qmu);
        return;
    }
    char *what = repl_what(o);
    if (!what || repl_seen_same(r, w->src, res, name, what)) {
        free(what);
        json_decref(copy);
        return;
    }
    /* Last writer wins: the other copy's labels and spec are overwritten,
     * whatever they say (a merge patch: no precondition, one round trip). */
    json_t *patch = json_pack("{s:{s:O?}, s:O?}", "metadata", "labels",
                              json_object_get(json_object_get(copy, "metadata"), "labels"), "spec",
                              json_object_get(copy, "spec"));
    rc = patch ? kc_patch(to, res, NS, name, NULL, KC_PATCH_MERGE, patch, NULL, &out, NULL)
               : KP_ENOMEM;
    json_decref(patch);
    if (rc == KP_ENOTFOUND) rc = kc_create(to, res, NS, copy, &out, NULL);
    if (!rc) {
        if (out) {
            repl_note_mine(r, dst, res, out);
            atomic_fetch_add(&r->copied, 1);
        }
        /* Both copies say `what` now: a status write on either side is not
         * a change to copy (else two crossed values would swap forever). */
        repl_seen_set(r, w->src, res, name, what);
        repl_seen_set(r, dst, res, name, what);
    } else {
        atomic_fetch_add(&r->failed, 1); /* dropped: a later event may carry it */
    }
    json_decref(out);
    json_decref(copy);
    free(what);
}

static void *repl_copier(void *arg)
{
    repl_t *r = arg;
    for (;;) {
        pthread_mutex_lock(&r->qmu);
        while (!r->jobs && !atomic_load(&r->stop))
            pthread_cond_wait(&r->qcv, &r->qmu);
        repl_job_t *j = r->jobs;
        if (j && !(r->jobs = j->next)) r->jobs_tail = NULL;
        pthread_mutex_unlock(&r->qmu);
        if (!j) return NULL; /* stopping */
        json_t *out = NULL;
        int rc = kc_create(r->c[j->dst], &kc_pods, NS, j->copy, &out, NULL);
        if (!rc) {
            repl_note_mine(r, j->dst, &kc_pods, out);
            atomic_fetch_add(&r->copied, 1);
        } else if (rc != KP_EEXIST) {
            atomic_fetch_add(&r->failed, 1);
        }
        json_decref(out);
        json_decref(j->copy);
        free(j);
    }
}

static void *repl_main(void *arg)
{
    repl_watch_t *w = arg;
    repl_t *r = w->r;
    while (!atomic_load(&r->stop)) {
        kc_watch_t *wt = NULL;
        /* From "now", with the current objects first as ADDED: after a cut
         * the replicator copies whatever each side has (its only repair). */
        if (kc_watch_open(r->c[w->src], w->res, NS, NULL, "", 0, &wt)) {
            sleep_ms(100);
            continue;
        }
        while (!atomic_load(&r->stop)) {
            kc_event_type_t type;
            json_t *o = NULL;
            int rc = kc_watch_next(wt, 200, &type, &o);
            if (rc == KP_ETIMEDOUT) continue;
            if (rc) break;
            if (type != KC_BOOKMARK) repl_apply(w, type, o);
            json_decref(o);
        }
        kc_watch_close(wt);
        if (!atomic_load(&r->stop)) sleep_ms(100);
    }
    return NULL;
}

static int repl_start(repl_t *r, lab_t *lab, kc_client_t *c1, kc_client_t *c2)
{
    static const kc_resource_t *const kinds[3] = {&kc_deployments, &kc_replicasets, &kc_pods};
    memset(r, 0, sizeof *r);
    r->lab = lab;
    r->c[0] = c1;
    r->c[1] = c2;
    pthread_mutex_init(&r->mu, NULL);
    pthread_mutex_init(&r->qmu, NULL);
    pthread_cond_init(&r->qcv, NULL);
    for (; r->ncopiers < REPL_COPIERS; r->ncopiers++)
        if (pthread_create(&r->copier[r->ncopiers], NULL, repl_copier, r)) return KP_ENOMEM;
    for (int i = 0; i < 6; i++) {
        repl_watch_t *w = &r->w[i];
        w->r = r;
        w->src = i / 3;
        w->res = kinds[i % 3];
        if (pthread_create(&w->th, NULL, repl_main, w)) return KP_ENOMEM;
        w->started = 1;
    }
    return 0;
}

/* Stop what repl_start started, also after it failed half-way. */
static void repl_stop(repl_t *r)
{
    atomic_store(&r->stop, 1);
    for (int i = 0; i < 6; i++)
        if (r->w[i].started) pthread_join(r->w[i].th, NULL);
    pthread_mutex_lock(&r->qmu);
    pthread_cond_broadcast(&r->qcv);
    pthread_mutex_unlock(&r->qmu);
    for (int i = 0; i < r->ncopiers; i++)
        pthread_join(r->copier[i], NULL);
    while (r->jobs) {
        repl_job_t *j = r->jobs;
        r->jobs = j->next;
        json_decref(j->copy);
        free(j);
    }
    pthread_cond_destroy(&r->qcv);
    pthread_mutex_destroy(&r->qmu);
    for (int i = 0; i < r->nseen; i++)
        free(r->seen[i].what);
    pthread_mutex_destroy(&r->mu);
}

/* ================= the scenarios, on either design ================= */

typedef struct figures {
    char late[CELL], pods[CELL], both[CELL], split[CELL], truth[CELL];
} figures_t;

typedef struct design {
    lab_t *lab;
    const char *label;      /* "two copies" */
    const char *side[2];    /* "server 1", "api-1" */
    kc_client_t *a, *b;     /* through the load balancer: A on side 0, B on side 1 */
    kc_client_t *direct[2]; /* straight to each side */
    lab_proxy_t *lb;        /* the load balancer */
    lab_proxy_t *slow;      /* the path failure 02 slows down */
    int slow_base;          /* its delay otherwise */
    figures_t f;
} design_t;

/* A and B through the load balancer, A's connection on side 0 and B's on
 * side 1: a connection goes to the next target in turn, so each client's
 * first request (on a connection it then keeps) settles it. */
static int lb_clients(design_t *d, const lab_server_t *s, const char *lb_url)
{
    kc_client_t *c[2] = {NULL, NULL};
    for (int tries = 0; tries < 6 && (!c[0] || !c[1]); tries++) {
        kc_client_t *x = lab_client_via(d->lab, s, lb_url);
        if (!x) return KP_ENOMEM;
        long before[2] = {lab_proxy_connections(d->lb, 0), lab_proxy_connections(d->lb, 1)};
        json_t *o = NULL;
        int rc = kc_get(x, &kc_namespaces, NULL, NS, &o);
        json_decref(o);
        if (rc) return rc;
        for (int i = 0; i < 2; i++)
            if (lab_proxy_connections(d->lb, i) > before[i] && !c[i]) c[i] = x;
    }
    if (!c[0] || !c[1]) return KP_EUNAVAILABLE;
    d->a = c[0];
    d->b = c[1];
    lab_say(d->lab, "%s: client A reaches %s through the load balancer, client B %s", d->label,
            d->side[0], d->side[1]);
    return 0;
}

/* Wait until web reads `want` replicas through c (timeout_ms); ms: when. */
static int wait_replicas(kc_client_t *c, const char *name, int want, int timeout_ms, double *ms)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        int n;
        read_replicas(c, &kc_deployments, name, &n, NULL);
        clock_gettime(CLOCK_MONOTONIC, &t);
        *ms = (double)(t.tv_sec - t0.tv_sec) * 1e3 + (double)(t.tv_nsec - t0.tv_nsec) / 1e6;
        if (n == want) return 0;
        if (*ms > timeout_ms) return KP_ETIMEDOUT;
        sleep_ms(5);
    }
}

/* (a) 01: the write that arrived late. */
static void late_write(design_t *d)
{
    char why[256];
    long long rv;
    int rc = scale(d->a, &kc_deployments, "web", 5, &rv, why, sizeof why);
    int seen;
    long long seen_rv;
    read_replicas(d->b, &kc_deployments, "web", &seen, &seen_rv);
    if (rc) {
        snprintf(d->f.late, CELL, "the scale failed: %s", why);
        return;
    }
    double ms = 0;
    int agreed = seen == 5 ? 0 : wait_replicas(d->b, "web", 5, 10000, &ms);
    lab_say(d->lab,
            "%s (a): A scaled web to 5 on %s (rv %lld); B read %s at once: replicas %d; "
            "%s agreed %s %.0f ms",
            d->label, d->side[0], rv, d->side[1], seen, d->side[1], agreed ? "not within" : "after",
            agreed ? 10000.0 : ms);
    if (seen == 5)
        snprintf(d->f.late, CELL, "%s said 5 at once: it reads the same history", d->side[1]);
    else
        snprintf(d->f.late, CELL, "%s said %d right after %s acknowledged 5; agreed %s %.0f ms",
                 d->side[1], seen, d->side[0], agreed ? "not within" : "after",
                 agreed ? 10000.0 : ms);
}

/* ---- rs-b's pods on one side, counted from a watch: every pod the store
 * held, in its order, so a pod that lived for a few milliseconds counts ---- */

#define NAMES_MAX 256

typedef struct name_set {
    char names[NAMES_MAX][64];
    int n;
} name_set_t;

static int set_find(const name_set_t *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->names[i], name)) return i;
    return -1;
}

static void set_add(name_set_t *s, const char *name)
{
    if (set_find(s, name) < 0 && s->n < NAMES_MAX) snprintf(s->names[s->n++], 64, "%s", name);
}

static void set_del(name_set_t *s, const char *name)
{
    int i = set_find(s, name);
    if (i >= 0) memcpy(s->names[i], s->names[--s->n], 64);
}

typedef struct pod_count {
    lab_t *lab;
    kc_client_t *c;
    pthread_t th;
    atomic_int stop;
    pthread_mutex_t mu;
    name_set_t live, ever; /* under mu */
    int peak;              /* under mu: the most live at once since the last reset */
    double changed;        /* under mu: lab time of the last change to live */
} pod_count_t;

static void *count_main(void *arg)
{
    pod_count_t *pc = arg;
    while (!atomic_load(&pc->stop)) {
        kc_watch_t *w = NULL;
        if (kc_watch_open(pc->c, &kc_pods, NS, "labelSelector=app%3Drs-b", "", 0, &w)) {
            sleep_ms(50);
            continue;
        }
        /* A new watch starts from the current pods (ADDED): start afresh. */
        pthread_mutex_lock(&pc->mu);
        pc->live.n = 0;
        pthread_mutex_unlock(&pc->mu);
        int rc = 0;
        while (!rc && !atomic_load(&pc->stop)) {
            kc_event_type_t type;
            json_t *o = NULL;
            rc = kc_watch_next(w, 100, &type, &o);
            if (rc == KP_ETIMEDOUT) {
                rc = 0;
                continue;
            }
            if (rc || type == KC_BOOKMARK) {
                json_decref(o);
                continue;
            }
            const char *name = lab__jstr(o, "metadata.name");
            pthread_mutex_lock(&pc->mu);
            set_add(&pc->ever, name);
            int n = pc->live.n;
            if (type == KC_DELETED || *lab__jstr(o, "metadata.deletionTimestamp"))
                set_del(&pc->live, name);
            else
                set_add(&pc->live, name);
            if (pc->live.n != n) pc->changed = lab_elapsed_ms(pc->lab);
            if (pc->live.n > pc->peak) pc->peak = pc->live.n;
            pthread_mutex_unlock(&pc->mu);
            json_decref(o);
        }
        kc_watch_close(w);
    }
    return NULL;
}

/* Wait until both sides hold `want` pods and neither count has changed
 * for settle_ms, or timeout_ms passes; *ms: from the call to the last
 * change (or the time waited). */
static int pods_settle(design_t *d, pod_count_t pc[2], int want, int settle_ms, int timeout_ms,
                       double *ms)
{
    double t0 = lab_elapsed_ms(d->lab);
    for (;;) {
        int ok = 1;
        double last = t0;
        for (int s = 0; s < 2; s++) {
            pthread_mutex_lock(&pc[s].mu);
            ok &= pc[s].live.n == want;
            if (pc[s].changed > last) last = pc[s].changed;
            pthread_mutex_unlock(&pc[s].mu);
        }
        double now = lab_elapsed_ms(d->lab);
        if (ok && now - last >= settle_ms) {
            *ms = last - t0;
            return 0;
        }
        if (now - t0 > timeout_ms) {
            *ms = now - t0;
            return KP_ETIMEDOUT;
        }
        sleep_ms(20);
    }
}

/* (b) 02: the read that contradicted the write. */
static void slow_path(design_t *d, int *peak_out)
{
    char why[256];
    pod_count_t *pc = calloc(2, sizeof *pc);
    int started = 0;
    if (!pc) return;
    for (; started < 2; started++) {
        pc[started].lab = d->lab;
        pc[started].c = d->direct[started];
        pthread_mutex_init(&pc[started].mu, NULL);
        if (pthread_create(&pc[started].th, NULL, count_main, &pc[started])) {
            pthread_mutex_destroy(&pc[started].mu);
            break;
        }
    }
    json_t *rs = workload(&kc_replicasets, "rs-b", 2);
    int rc =
        started == 2 ? kc_create(d->direct[0], &kc_replicasets, NS, rs, NULL, NULL) : KP_ENOMEM;
    json_decref(rs);
    double ms = 0;
    if (rc) {
        snprintf(d->f.pods, CELL, "creating ReplicaSet rs-b failed: %s", err_str(rc));
        goto out;
    }
    if (pods_settle(d, pc, 2, 1000, 15000, &ms))
        lab_say(d->lab, "%s (b): rs-b did not settle at 2 pods on both sides", d->label);
    int peak[2], final[2], shared = 0;
    for (int s = 0; s < 2; s++) {
        pthread_mutex_lock(&pc[s].mu);
        pc[s].peak = pc[s].live.n;
        pthread_mutex_unlock(&pc[s].mu);
    }
    lab_proxy_set_delay(d->slow, SLOW_MS);
    rc = scale(d->direct[0], &kc_replicasets, "rs-b", RS_WANT, NULL, why, sizeof why);
    if (rc) lab_say(d->lab, "%s (b): scaling rs-b failed: %s", d->label, why);
    int settled = pods_settle(d, pc, RS_WANT, 1500, 15000, &ms) == 0;
    lab_proxy_set_delay(d->slow, d->slow_base);
    name_set_t *all = calloc(1, sizeof *all);
    for (int s = 0; s < 2; s++) {
        pthread_mutex_lock(&pc[s].mu);
        peak[s] = pc[s].peak;
        final[s] = pc[s].live.n;
        for (int i = 0; all && i < pc[s].ever.n; i++)
            set_add(all, pc[s].ever.names[i]);
        pthread_mutex_unlock(&pc[s].mu);
    }
    pthread_mutex_lock(&pc[0].mu);
    pthread_mutex_lock(&pc[1].mu);
    for (int i = 0; i < pc[0].live.n; i++)
        shared += set_find(&pc[1].live, pc[0].live.names[i]) >= 0;
    pthread_mutex_unlock(&pc[1].mu);
    pthread_mutex_unlock(&pc[0].mu);
    /* Pods made for rs-b, from its creation: names on either side (a copy
     * has its pod's name, so a pod counts once however many sides held it). */
    int made = all ? all->n : 0;
    free(all);
    int top = peak[0] > peak[1] ? peak[0] : peak[1];
    *peak_out = top;
    lab_say(d->lab,
            "%s (b): ReplicaSet rs-b scaled 2 -> %d with %d ms each way on one path: "
            "at most %d pods on %s and %d on %s at once; %s %.1f s: %d and %d, %d of them the "
            "same pods; %d pods made in all",
            d->label, RS_WANT, SLOW_MS, peak[0], d->side[0], peak[1], d->side[1],
            settled ? "settled after" : "not settled after", ms / 1e3, final[0], final[1], shared,
            made);
    snprintf(d->f.pods, CELL,
             "%d pods at once (%s %d, %s %d); %s %.1f s: %d and %d, %d the "
             "same; %d made in all",
             top, d->side[0], peak[0], d->side[1], peak[1],
             settled ? "settled at 5 after" : "after", ms / 1e3, final[0], final[1], shared, made);
    /* Its pods' churn (on the naive design) is not the next scenarios'. */
    kc_delete(d->direct[0], &kc_replicasets, NS, "rs-b", NULL, NULL);
out:
    for (int s = 0; s < started; s++) {
        atomic_store(&pc[s].stop, 1);
        pthread_join(pc[s].th, NULL);
        pthread_mutex_destroy(&pc[s].mu);
    }
    free(pc);
}

typedef struct put_job {
    kc_client_t *c;
    json_t *obj;
    pthread_barrier_t *go;
    int rc;
    char why[256];
    char code[64]; /* "200", "409 Conflict" */
    long long rv;
} put_job_t;

static void *put_main(void *arg)
{
    put_job_t *j = arg;
    json_t *out = NULL, *st = NULL;
    pthread_barrier_wait(j->go);
    j->rc = kc_update(j->c, &kc_deployments, NS, j->obj, NULL, &out, &st);
    outcome(j->rc, st, j->why, sizeof j->why);
    snprintf(j->code, sizeof j->code, "%.*s", (int)strcspn(j->why, ":"), j->why);
    j->rv = j->rc ? 0 : lab__jint(out, "metadata.resourceVersion", 0);
    json_decref(out);
    json_decref(st);
    return NULL;
}

/* Read web through A and through B until neither's resourceVersion has
 * moved for 500 ms (no controller is about to write it) and, on one
 * history, both read the same one; or give up after timeout_ms. */
static void settle_web(design_t *d, int same_rv, int timeout_ms)
{
    long long last[2] = {-1, -1};
    double t0 = lab_elapsed_ms(d->lab), since = t0;
    while (lab_elapsed_ms(d->lab) - t0 < timeout_ms) {
        int n;
        long long rv[2];
        read_replicas(d->a, &kc_deployments, "web", &n, &rv[0]);
        read_replicas(d->b, &kc_deployments, "web", &n, &rv[1]);
        if (rv[0] != last[0] || rv[1] != last[1] || (same_rv && rv[0] != rv[1]))
            since = lab_elapsed_ms(d->lab);
        last[0] = rv[0];
        last[1] = rv[1];
        if (rv[0] > 0 && rv[1] > 0 && lab_elapsed_ms(d->lab) - since >= 500) return;
        sleep_ms(50);
    }
}

/* (c) 03: both servers say yes? */
static void both_write(design_t *d, int one_history)
{
    put_job_t j[2];
    pthread_t th[2];
    pthread_barrier_t go;
    int rounds = 0;
    long long read_rv[2] = {0, 0};
    /* From 3, so that both writes change web (a write that changes nothing
     * is answered 200 without being written, whatever its resourceVersion). */
    double ms;
    scale(d->a, &kc_deployments, "web", 3, NULL, NULL, 0);
    if (!one_history) wait_replicas(d->b, "web", 3, 10000, &ms);
    for (;;) {
        rounds++;
        settle_web(d, one_history, 10000);
        json_t *o[2] = {NULL, NULL};
        if (kc_get(d->a, &kc_deployments, NS, "web", &o[0]) ||
            kc_get(d->b, &kc_deployments, NS, "web", &o[1])) {
            json_decref(o[0]);
            json_decref(o[1]);
            snprintf(d->f.both, CELL, "reading web failed");
            return;
        }
        read_rv[0] = lab__jint(o[0], "metadata.resourceVersion", 0);
        read_rv[1] = lab__jint(o[1], "metadata.resourceVersion", 0);
        pthread_barrier_init(&go, NULL, 2);
        int want[2] = {5, 2};
        for (int i = 0; i < 2; i++) {
            memset(&j[i], 0, sizeof j[i]);
            j[i].c = i ? d->b : d->a;
            j[i].obj = o[i];
            j[i].go = &go;
            json_object_set_new(json_object_get(o[i], "spec"), "replicas", json_integer(want[i]));
            pthread_create(&th[i], NULL, put_main, &j[i]);
        }
        for (int i = 0; i < 2; i++)
            pthread_join(th[i], NULL);
        pthread_barrier_destroy(&go);
        json_decref(o[0]);
        json_decref(o[1]);
        /* A controller's status write between the reads and the writes
         * makes a read stale on its own side: on one history both then get
         * 409, on the naive design the one whose side was written. That is
         * not the scenario: read again, at most 3 times. */
        int stale = one_history ? j[0].rc == KP_ECONFLICT && j[1].rc == KP_ECONFLICT
                                : j[0].rc == KP_ECONFLICT || j[1].rc == KP_ECONFLICT;
        if (!stale || rounds == 3) break;
    }
    sleep_ms(one_history ? 300 : 3000); /* the naive replicator gets its chance */
    int v[2];
    long long rv[2];
    for (int s = 0; s < 2; s++)
        read_replicas(d->direct[s], &kc_deployments, "web", &v[s], &rv[s]);
    lab_say(d->lab,
            "%s (c): A read web at rv %lld via %s, B at rv %lld via %s; at one instant "
            "A set web to 5 via %s -> %s; B set it to 2 via %s -> %s; afterwards %s says %d (rv "
            "%lld), %s says %d (rv %lld)%s",
            d->label, read_rv[0], d->side[0], read_rv[1], d->side[1], d->side[0], j[0].why,
            d->side[1], j[1].why, d->side[0], v[0], rv[0], d->side[1], v[1], rv[1],
            rounds > 1 ? " (read again: a status write came between)" : "");
    const char *note = "";
    if (!j[0].rc && !j[1].rc)
        note = v[0] == v[1] ? ": one acknowledged write silently lost" : ": they disagree";
    snprintf(d->f.both, CELL, "5 via %s: %s; 2 via %s: %s; then %s says %d, %s says %d%s%s",
             d->side[0], j[0].code, d->side[1], j[1].code, d->side[0], v[0], d->side[1], v[1], note,
             rounds > 1 ? " (read twice)" : "");
}

/* ================= the naive design ================= */

static int copy_file(const char *from_dir, const char *to_dir, const char *name)
{
    char a[700], b[700];
    snprintf(a, sizeof a, "%s/%s", from_dir, name);
    snprintf(b, sizeof b, "%s/%s", to_dir, name);
    FILE *in = fopen(a, "rb");
    if (!in) return KP_ENOTFOUND;
    FILE *out = fopen(b, "wb");
    if (!out) {
        fclose(in);
        return KP_EIO;
    }
    char buf[8192];
    size_t n;
    int rc = 0;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n) rc = KP_EIO;
    fclose(in);
    if (fclose(out)) rc = KP_EIO;
    chmod(b, 0600);
    return rc;
}

/* A second server of the same "cluster" (one CA, one admin token), with a
 * data dir of its own made before its first start, as the HA drills do. */
static int share_identity(const lab_server_t *first, const char *dir)
{
    static const char *const files[] = {"ca.crt", "ca.key", "server.crt", "server.key",
                                        "admin-token"};
    if (mkdir(dir, 0700) && errno != EEXIST) return KP_EIO;
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        int rc = copy_file(first->dir, dir, files[i]);
        if (rc && rc != KP_ENOTFOUND) return rc;
    }
    return 0;
}

/* (d) 04 on the naive design: cut the replicator's path, write both sides. */
static void naive_partition(design_t *d, lab_proxy_t *link[2])
{
    lab_proxy_block(link[0], 0, 1);
    lab_proxy_block(link[1], 0, 1);
    lab_say(d->lab, "two copies (d): the replicator's path is cut; A writes %s, B writes %s",
            d->side[0], d->side[1]);
    int vals[2][2] = {{4, 7}, {6, 1}};
    long long rv[2][2];
    char why[2][2][256];
    for (int k = 0; k < 2; k++)
        for (int s = 0; s < 2; s++)
            scale(s ? d->b : d->a, &kc_deployments, "web", vals[s][k], &rv[s][k], why[s][k], 256);
    int v[2];
    long long cur[2];
    for (int s = 0; s < 2; s++)
        read_replicas(d->direct[s], &kc_deployments, "web", &v[s], &cur[s]);
    lab_say(d->lab,
            "two copies (d): %s accepted %d (%s, rv %lld) then %d (%s, rv %lld); %s "
            "accepted %d (%s, rv %lld) then %d (%s, rv %lld): two histories",
            d->side[0], vals[0][0], why[0][0], rv[0][0], vals[0][1], why[0][1], rv[0][1],
            d->side[1], vals[1][0], why[1][0], rv[1][0], vals[1][1], why[1][1], rv[1][1]);
    lab_proxy_block(link[0], 0, 0);
    lab_proxy_block(link[1], 0, 0);
    sleep_ms(3000);
    int h[2];
    long long hrv[2];
    for (int s = 0; s < 2; s++)
        read_replicas(d->direct[s], &kc_deployments, "web", &h[s], &hrv[s]);
    lab_say(d->lab,
            "two copies (d): healed; 3 s later %s says %d (rv %lld), %s says %d (rv %lld)%s",
            d->side[0], h[0], hrv[0], d->side[1], h[1], hrv[1],
            h[0] == h[1] ? ": one side's acknowledged writes are gone" : ": they still disagree");
    snprintf(d->f.split, CELL,
             "both sides accepted: %s %d, %d (rv %lld, %lld), %s %d, %d (rv %lld, %lld); "
             "healed: %d and %d",
             d->side[0], vals[0][0], vals[0][1], rv[0][0], rv[0][1], d->side[1], vals[1][0],
             vals[1][1], rv[1][0], rv[1][1], h[0], h[1]);
}

/* 05: what each side says web is, read until both name one version (a
 * status write between the two reads moves it) or 3 s pass. */
static void verdict(design_t *d)
{
    int v[2];
    long long rv[2];
    double t0 = lab_elapsed_ms(d->lab);
    do {
        for (int s = 0; s < 2; s++)
            read_replicas(d->direct[s], &kc_deployments, "web", &v[s], &rv[s]);
    } while (rv[0] != rv[1] && lab_elapsed_ms(d->lab) - t0 < 3000 && (sleep_ms(50), 1));
    if (v[0] == v[1] && rv[0] == rv[1])
        snprintf(d->f.truth, CELL, "one history: web %d at rv %lld through both", v[0], rv[0]);
    else if (v[0] == v[1])
        snprintf(d->f.truth, CELL,
                 "two histories: web %d at rv %lld on %s, at rv %lld on %s "
                 "(each numbers its own)",
                 v[0], rv[0], d->side[0], rv[1], d->side[1]);
    else
        snprintf(d->f.truth, CELL, "two answers: web %d at rv %lld on %s, %d at rv %lld on %s",
                 v[0], rv[0], d->side[0], v[1], rv[1], d->side[1]);
}

static int naive(lab_t *lab, design_t *d, int *peak)
{
    lab_server_t *s[2] = {NULL, NULL};
    lab_proxy_t *link[2] = {NULL, NULL};
    repl_t *r = calloc(1, sizeof *r);
    int repl_on = 0, rc;
    if (!r) return KP_ENOMEM;
    lab_say(lab, "== the naive design (deliberately wrong): two kplane servers, each with its own "
                 "store and controllers, behind a round-robin load balancer, kept in sync by an "
                 "asynchronous replicator (last writer wins)");
    lab_server_opts_t o = {.name = "server-1", .nodes = -1, .no_scheduler = 1};
    if ((rc = lab_server_start(lab, &o, &s[0]))) goto out;
    char dir2[600];
    snprintf(dir2, sizeof dir2, "%s/server-2", lab_dir(lab));
    if ((rc = share_identity(s[0], dir2))) goto out;
    o.name = "server-2";
    o.data_dir = dir2;
    if ((rc = lab_server_start(lab, &o, &s[1]))) goto out;
    int ports[2] = {s[0]->port, s[1]->port};
    char url[3][64];
    if ((rc = lab_proxy_start(ports, 2, 0, &d->lb))) goto out;
    for (int i = 0; i < 2; i++)
        if ((rc = lab_proxy_start(&ports[i], 1, LINK_MS, &link[i]))) goto out;
    snprintf(url[0], sizeof url[0], "https://127.0.0.1:%d", lab_proxy_port(d->lb));
    for (int i = 0; i < 2; i++)
        snprintf(url[i + 1], sizeof url[i + 1], "https://127.0.0.1:%d", lab_proxy_port(link[i]));
    kc_client_t *rc1 = lab_client_via(lab, s[0], url[1]), *rc2 = lab_client_via(lab, s[1], url[2]);
    if (!rc1 || !rc2) {
        rc = KP_ENOMEM;
        goto out;
    }
    d->direct[0] = s[0]->client;
    d->direct[1] = s[1]->client;
    d->slow = link[1];
    d->slow_base = LINK_MS;
    repl_on = 1; /* repl_stop() undoes a partial start too */
    if ((rc = repl_start(r, lab, rc1, rc2))) goto out;
    lab_say(lab,
            "two copies: the replicator watches Deployments, ReplicaSets and Pods on both "
            "servers and copies each change across a path of %d ms each way",
            LINK_MS);
    if ((rc = lb_clients(d, s[0], url[0]))) goto out;

    json_t *web = workload(&kc_deployments, "web", 3);
    rc = kc_create(d->direct[0], &kc_deployments, NS, web, NULL, NULL);
    json_decref(web);
    double ms;
    if (rc || wait_replicas(d->direct[1], "web", 3, 20000, &ms)) {
        lab_say(lab, "two copies: web (3 replicas) did not reach server 2: %s", err_str(rc));
        rc = rc ? rc : KP_ETIMEDOUT;
        goto out;
    }
    lab_say(lab,
            "two copies: Deployment web (3) created on server 1, copied to server 2 after "
            "%.0f ms",
            ms);
    sleep_ms(1000);
    late_write(d);
    slow_path(d, peak);
    both_write(d, 0);
    naive_partition(d, link);
    verdict(d);
    lab_say(lab,
            "two copies: the replicator copied %ld changes; %ld copies failed and were "
            "dropped",
            atomic_load(&r->copied), atomic_load(&r->failed));
    rc = 0;
out:
    if (repl_on) repl_stop(r);
    free(r);
    for (int i = 0; i < 2; i++)
        lab_proxy_stop(link[i]);
    lab_proxy_stop(d->lb);
    d->lb = NULL;
    /* Their CPU is the other design's now. */
    for (int i = 0; i < 2; i++)
        if (s[i]) lab_signal(lab, s[i]->pid, SIGTERM);
    return rc;
}

/* ================= one history ================= */

/* The n-th endpoint ("127.0.0.1:P") of an "etcd://a,b,c" URL. */
static void endpoint(const char *url, int n, char *out, size_t size)
{
    const char *p = strstr(url, "://");
    p = p ? p + 3 : url;
    for (int i = 0; i < n && p; i++) {
        p = strchr(p, ',');
        if (p) p++;
    }
    if (!p) p = "";
    snprintf(out, size, "%.*s", (int)strcspn(p, ","), p);
}

/* (d) 04 on one history: which side of a partition accepts writes. */
static void history_partition(design_t *d, const pid_t etcd[3])
{
    char why[2][256];
    double t[2];
    long long rv[2];
    lab_t *lab = d->lab;
    lab_signal(lab, etcd[2], SIGSTOP);
    lab_say(lab, "one history (d): e2 cut away (SIGSTOP); api-1 keeps e0 and e1, a majority");
    sleep_ms(1500); /* should e2 have led: an election (timeout 500 ms) */
    double t0 = lab_elapsed_ms(lab);
    int rc0 = scale(d->a, &kc_deployments, "web", 4, &rv[0], why[0], sizeof why[0]);
    t[0] = lab_elapsed_ms(lab) - t0;
    lab_signal(lab, etcd[2], SIGCONT);
    double ms;
    if (rc0)
        sleep_ms(1000);
    else
        wait_replicas(d->b, "web", 4, 15000, &ms); /* e2 caught up */
    lab_signal(lab, etcd[0], SIGSTOP);
    lab_signal(lab, etcd[1], SIGSTOP);
    lab_say(lab, "one history (d): e0 and e1 cut away (SIGSTOP); api-2 keeps e2 alone, a minority");
    t0 = lab_elapsed_ms(lab);
    int rc1 = scale(d->b, &kc_deployments, "web", 6, &rv[1], why[1], sizeof why[1]);
    t[1] = lab_elapsed_ms(lab) - t0;
    lab_signal(lab, etcd[0], SIGCONT);
    lab_signal(lab, etcd[1], SIGCONT);
    int v[2] = {-1, -1};
    long long cur[2] = {0, 0};
    t0 = lab_elapsed_ms(lab);
    while (lab_elapsed_ms(lab) - t0 < 20000) {
        if (!read_replicas(d->direct[0], &kc_deployments, "web", &v[0], &cur[0]) &&
            !read_replicas(d->direct[1], &kc_deployments, "web", &v[1], &cur[1]) &&
            cur[0] == cur[1])
            break;
        sleep_ms(100);
    }
    lab_say(lab,
            "one history (d): majority side: 4 via api-1 -> %s in %.0f ms (rv %lld); "
            "minority side: 6 via api-2 -> %s after %.1f s; healed: api-1 says %d (rv %lld), "
            "api-2 says %d (rv %lld)",
            why[0], t[0], rv[0], why[1], t[1] / 1e3, v[0], cur[0], v[1], cur[1]);
    snprintf(d->f.split, CELL,
             "majority (e0, e1): 4 -> %.40s in %.0f ms; minority (e2): 6 -> %.70s after %.1f s%s; "
             "healed: %d and %d",
             why[0], t[0], why[1], t[1] / 1e3, rc1 ? ", not stored" : " (ACCEPTED)", v[0], v[1]);
}

static int one_history(lab_t *lab, design_t *d, int *peak)
{
    char store[512], ep[3][64], s1[200], s2[100], dir2[600], lb_url[64], cm_url[64];
    pid_t etcd[3] = {0, 0, 0};
    lab_server_t *api[2] = {NULL, NULL};
    int rc;
    lab_say(lab, "== one history: two kplane apiservers on a 3-member etcd cluster (api-1 on "
                 "members e0 and e1, api-2 on e2), the same load balancer, one controller manager");
    if ((rc = lab_etcd_start(lab, 3, store, sizeof store, etcd))) return rc;
    for (int i = 0; i < 3; i++)
        endpoint(store, i, ep[i], sizeof ep[i]);
    snprintf(s1, sizeof s1, "etcd://%s,%s", ep[0], ep[1]);
    snprintf(s2, sizeof s2, "etcd://%s", ep[2]);
    lab_server_opts_t o = {.name = "api-1", .apiserver_only = 1, .store = s1};
    if ((rc = lab_server_start(lab, &o, &api[0]))) return rc;
    snprintf(dir2, sizeof dir2, "%s/api-2", lab_dir(lab));
    if ((rc = share_identity(api[0], dir2))) return rc;
    o.name = "api-2";
    o.store = s2;
    o.data_dir = dir2;
    if ((rc = lab_server_start(lab, &o, &api[1]))) return rc;
    int ports[2] = {api[0]->port, api[1]->port};
    lab_proxy_t *cm_path = NULL;
    if ((rc = lab_proxy_start(ports, 2, 0, &d->lb))) goto out;
    if ((rc = lab_proxy_start(ports, 2, 0, &cm_path))) goto out;
    snprintf(lb_url, sizeof lb_url, "https://127.0.0.1:%d", lab_proxy_port(d->lb));
    snprintf(cm_url, sizeof cm_url, "https://127.0.0.1:%d", lab_proxy_port(cm_path));
    pid_t cm;
    if ((rc = lab_component_start(lab, "controller-manager", "controller-manager", api[0], cm_url,
                                  NULL, &cm)))
        goto out;
    d->direct[0] = api[0]->client;
    d->direct[1] = api[1]->client;
    d->slow = cm_path;
    d->slow_base = 0;
    if ((rc = lb_clients(d, api[0], lb_url))) goto out;
    json_t *web = workload(&kc_deployments, "web", 3);
    rc = kc_create(d->a, &kc_deployments, NS, web, NULL, NULL);
    json_decref(web);
    if (rc) {
        lab_say(lab, "one history: creating web failed: %s", err_str(rc));
        goto out;
    }
    settle_web(d, 1, 10000);
    late_write(d);
    slow_path(d, peak);
    both_write(d, 1);
    history_partition(d, etcd);
    verdict(d);
    rc = 0;
out:
    lab_proxy_stop(cm_path);
    lab_proxy_stop(d->lb);
    d->lb = NULL;
    return rc;
}

/* ================= the lab ================= */

static int run(lab_t *lab)
{
    design_t *d = calloc(2, sizeof *d);
    if (!d) return KP_ENOMEM;
    d[0] = (design_t){.lab = lab, .label = "two copies", .side = {"server 1", "server 2"}};
    d[1] = (design_t){.lab = lab, .label = "one history", .side = {"api-1", "api-2"}};
    int peak[2] = {0, 0};
    int rc = naive(lab, &d[0], &peak[0]);
    if (!rc) rc = one_history(lab, &d[1], &peak[1]);
    if (rc) {
        free(d);
        return rc;
    }
    static const char *const cols[] = {"failure (investigation 007)",
                                       "two copies: own stores, a replicator (NAIVE)",
                                       "one history: 3-member etcd", NULL};
    lab_table(lab, "Breaking our design: each failure, measured on both designs", cols);
    const char *rows[][3] = {
        {"01 the write that arrived late", d[0].f.late, d[1].f.late},
        {"02 400 ms on one path, a ReplicaSet of 5", d[0].f.pods, d[1].f.pods},
        {"03 both servers say yes (5 and 2 at once)", d[0].f.both, d[1].f.both},
        {"04 the partition", d[0].f.split, d[1].f.split},
        {"05 more copies, more truth? (web at the end)", d[0].f.truth, d[1].f.truth},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        lab_row(lab, rows[i]);
    lab_table_end(lab);
    char p0[16], p1[16];
    snprintf(p0, sizeof p0, "%d", peak[0]);
    snprintf(p1, sizeof p1, "%d", peak[1]);
    static const char *const pcols[] = {"ReplicaSet of 5", "two copies", "one history", NULL};
    lab_table(lab, "The most pods at once (the seed got 8)", pcols);
    lab_row(lab, (const char *const[]){"pods", p0, p1});
    lab_table_end(lab);
    free(d);
    return 0;
}

const lab_def_t lab_two_copies = {
    .name = "two-copies",
    .seed = "007",
    .title = "two API servers with their own copies vs one history on etcd (failures 01-05)",
    .needs = "etcd",
    .run = run,
};
