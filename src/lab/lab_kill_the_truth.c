/*
 * lab_kill_the_truth.c -- investigation 007's opening, run: "Kill the one
 * machine holding the truth" (the 2:14 a.m. page, reproduced on demand),
 * with its exercise's question: while the server is down, does kubectl
 * hang, fail at once, or return stale data?
 *
 * What it measures: one `kplane server` on its embedded store (the API
 * server alone: no controllers, scheduler or nodes writing besides us).
 * WRITERS threads, each with its own client (src/client), create
 * ConfigMaps as fast as they are answered and record every acknowledged
 * (201) name with its resourceVersion; a failed create is retried under a
 * new name after RETRY_MS. Mid-writes the server gets SIGKILL; kubectl get
 * runs against the dead server; the server starts again on the same data
 * dir and port while the writers keep trying; they stop a little later.
 * Then, from a LIST of what the restarted server holds:
 *   - lost: acknowledged writes missing, or with another resourceVersion
 *     (must be 0: acknowledged means durable, the store's contract);
 *   - in flight when killed: creates sent before the kill that failed, and
 *     how many of them the history kept anyway (either is allowed: they
 *     were never acknowledged);
 *   - revisions in order: each writer's acknowledged resourceVersions rise,
 *     none is used twice, and every one after the restart is above every
 *     one before the kill (the history goes on; it does not restart);
 *   - what the clients saw: errors by kind, the downtime (kill to the
 *     first acknowledged write after it) and how long after the restart's
 *     exec the first write succeeded.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lab/lab.h"
#include "lab/lab_int.h"
#include "lib/err.h"

#define NS         "default"
#define WRITERS    4
#define BEFORE_MS  1500 /* writing before the kill */
#define DOWN_MS    300  /* the outage before the restart begins (besides kubectl) */
#define AFTER_MS   1000 /* writing after the restart is ready */
#define RETRY_MS   20
#define MAX_WRITES 200000

typedef struct ack {
    char name[24];
    long long rv;
    int after; /* sent after the kill */
} ack_t;

typedef struct shared {
    int stop;        /* atomic */
    int64_t kill_us; /* atomic: lab time the kill was done (reaped); INT64_MAX before */
} shared_t;

typedef struct writer {
    lab_t *lab;
    kc_client_t *c;
    shared_t *sh;
    int id;
    pthread_t thread;
    ack_t *acks;
    size_t nacks, cap;
    char (*failed)[24];   /* names of failed creates */
    int *failed_inflight; /* 1: sent before the kill */
    size_t nfailed, fcap;
    long long err_unavailable, err_timeout, err_other;
    double first_ok_after; /* lab ms of the first success sent after the kill; 0: none */
    int oom;
} writer_t;

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int grow(void **p, size_t *cap, size_t n, size_t each)
{
    if (n < *cap) return 0;
    size_t ncap = *cap ? *cap * 2 : 1024;
    void *q = realloc(*p, ncap * each);
    if (!q) return KP_ENOMEM;
    *p = q;
    *cap = ncap;
    return 0;
}

static void *write_loop(void *arg)
{
    writer_t *w = arg;
    for (int seq = 0; !__atomic_load_n(&w->sh->stop, __ATOMIC_ACQUIRE) && seq < MAX_WRITES; seq++) {
        char name[24], seqs[16];
        snprintf(name, sizeof name, "w%d-%06d", w->id, seq);
        snprintf(seqs, sizeof seqs, "%d", seq);
        json_t *cm = json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion", "v1", "kind",
                               "ConfigMap", "metadata", "name", name, "data", "seq", seqs);
        if (!cm) {
            w->oom = 1;
            break;
        }
        double sent = lab_elapsed_ms(w->lab);
        json_t *out = NULL;
        int rc = kc_create(w->c, &kc_configmaps, NS, cm, &out, NULL);
        json_decref(cm);
        double kill = (double)__atomic_load_n(&w->sh->kill_us, __ATOMIC_ACQUIRE) / 1e3;
        int after = sent >= kill;
        if (!rc) {
            if (grow((void **)&w->acks, &w->cap, w->nacks, sizeof *w->acks)) {
                json_decref(out);
                w->oom = 1;
                break;
            }
            ack_t *a = &w->acks[w->nacks++];
            snprintf(a->name, sizeof a->name, "%s", name);
            a->rv = lab__jint(out, "metadata.resourceVersion", 0);
            a->after = after;
            if (after && !w->first_ok_after) w->first_ok_after = lab_elapsed_ms(w->lab);
            json_decref(out);
            continue;
        }
        if (rc == KP_EUNAVAILABLE)
            w->err_unavailable++;
        else if (rc == KP_ETIMEDOUT)
            w->err_timeout++;
        else
            w->err_other++;
        size_t fc = w->fcap;
        if (grow((void **)&w->failed, &w->fcap, w->nfailed, sizeof *w->failed) ||
            grow((void **)&w->failed_inflight, &fc, w->nfailed, sizeof *w->failed_inflight)) {
            w->oom = 1;
            break;
        }
        snprintf(w->failed[w->nfailed], sizeof w->failed[0], "%s", name);
        w->failed_inflight[w->nfailed++] = !after;
        sleep_ms(RETRY_MS);
    }
    return NULL;
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

/* The last line of s that is not empty (at most n bytes) into out:
 * kubectl's verdict comes after its retries' log lines. */
static void last_line(const char *s, char *out, size_t n)
{
    out[0] = '\0';
    for (const char *p = s; p && *p;) {
        size_t len = strcspn(p, "\n");
        if (len) snprintf(out, n, "%.*s", (int)len, p);
        p += len;
        if (*p) p++;
    }
}

static int run(lab_t *lab)
{
    lab_server_opts_t o = {.name = "server", .nodes = -1, .no_controllers = 1, .no_scheduler = 1};
    lab_server_t *s;
    int rc = lab_server_start(lab, &o, &s);
    if (rc) return rc;
    lab_say(lab, "one API server on its embedded store holds the whole truth: %s", s->dir);

    shared_t sh = {.stop = 0, .kill_us = INT64_MAX};
    writer_t *w = calloc(WRITERS, sizeof *w);
    if (!w) return KP_ENOMEM;
    int started = 0;
    for (int i = 0; i < WRITERS; i++) {
        w[i] = (writer_t){.lab = lab, .sh = &sh, .id = i, .c = lab_client_via(lab, s, s->url)};
        if (!w[i].c) {
            rc = KP_ENOMEM;
            break;
        }
    }
    for (int i = 0; !rc && i < WRITERS; i++) {
        if (pthread_create(&w[i].thread, NULL, write_loop, &w[i]))
            rc = KP_ENOMEM;
        else
            started++;
    }
    if (!rc)
        lab_say(lab, "%d writers create ConfigMaps, each recording what was acknowledged", WRITERS);

    double kill = 0, restart_at = 0, ready_ms = 0, kubectl_ms = 0;
    int kubectl_rc = 0;
    char kubectl_out[256] = "";
    if (!rc) {
        sleep_ms(BEFORE_MS);
        kill = lab_elapsed_ms(lab);
        rc = lab_server_kill9(lab, s);
        /* Sent before the kill was done: the old server may have answered
         * (acknowledged before it died) or not (in flight); sent after:
         * only a restarted server can answer. */
        __atomic_store_n(&sh.kill_us, (int64_t)(lab_elapsed_ms(lab) * 1e3), __ATOMIC_RELEASE);
        lab_say(lab, "kill -9 the server (pid %d) mid-writes", (int)s->pid);
    }
    if (!rc) {
        /* The exercise's question, asked of kubectl while nothing serves. */
        char *out = NULL;
        const char *args[] = {"get", "configmaps", "--request-timeout=10s", NULL};
        kubectl_rc = lab_kubectl(lab, s, 15000, &out, &kubectl_ms, args);
        last_line(out, kubectl_out, sizeof kubectl_out);
        free(out);
        if (kubectl_rc >= 0)
            lab_say(lab, "kubectl get configmaps while down: exit %d after %.0f ms: %s", kubectl_rc,
                    kubectl_ms, kubectl_out);
        sleep_ms(DOWN_MS);
        restart_at = lab_elapsed_ms(lab);
        lab_say(lab, "restart the server on the same data dir and port");
        rc = lab_server_restart(lab, s);
        ready_ms = lab_elapsed_ms(lab) - restart_at;
        if (!rc) lab_say(lab, "ready again in %.0f ms", ready_ms);
    }
    if (!rc) sleep_ms(AFTER_MS);
    __atomic_store_n(&sh.stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < started; i++)
        pthread_join(w[i].thread, NULL);
    for (int i = 0; !rc && i < WRITERS; i++)
        if (w[i].oom) rc = KP_ENOMEM;

    /* What the restarted server holds. */
    json_t *list = NULL;
    if (!rc && (rc = kc_list(s->client, &kc_configmaps, NS, NULL, &list)))
        lab_say(lab, "listing ConfigMaps after the restart: %s", err_str(rc));
    if (rc) {
        for (int i = 0; i < WRITERS; i++) {
            free(w[i].acks);
            free(w[i].failed);
            free(w[i].failed_inflight);
        }
        free(w);
        json_decref(list);
        return rc;
    }
    json_t *held = json_object(); /* name -> resourceVersion */
    size_t k;
    const json_t *item;
    json_array_foreach(json_object_get(list, "items"), k, item)
        json_object_set_new(held, lab__jstr(item, "metadata.name"),
                            json_integer(lab__jint(item, "metadata.resourceVersion", 0)));

    long long acked = 0, before = 0, lost = 0, changed = 0, inflight = 0, inflight_kept = 0,
              failed_after_kept = 0, errors_u = 0, errors_t = 0, errors_o = 0;
    long long max_before = 0, min_after = 0, unordered = 0;
    double first_ok = 0;
    long long *rvs = NULL;
    size_t nrv = 0;
    for (int i = 0; i < WRITERS; i++)
        acked += (long long)w[i].nacks;
    rvs = malloc(sizeof *rvs * (size_t)(acked ? acked : 1));
    for (int i = 0; rvs && i < WRITERS; i++) {
        for (size_t j = 0; j < w[i].nacks; j++) {
            const ack_t *a = &w[i].acks[j];
            json_t *have = json_object_get(held, a->name);
            if (!have)
                lost++;
            else if (json_integer_value(have) != a->rv)
                changed++;
            if (j && a->rv <= w[i].acks[j - 1].rv) unordered++;
            if (!a->after) {
                before++;
                if (a->rv > max_before) max_before = a->rv;
            } else if (!min_after || a->rv < min_after) {
                min_after = a->rv;
            }
            rvs[nrv++] = a->rv;
        }
        for (size_t j = 0; j < w[i].nfailed; j++) {
            int kept = json_object_get(held, w[i].failed[j]) != NULL;
            if (w[i].failed_inflight[j]) {
                inflight++;
                inflight_kept += kept;
            } else {
                failed_after_kept += kept;
            }
        }
        errors_u += w[i].err_unavailable;
        errors_t += w[i].err_timeout;
        errors_o += w[i].err_other;
        if (w[i].first_ok_after && (!first_ok || w[i].first_ok_after < first_ok))
            first_ok = w[i].first_ok_after;
    }
    long long dups = 0;
    if (rvs) {
        qsort(rvs, nrv, sizeof *rvs, cmp_ll);
        for (size_t j = 1; j < nrv; j++)
            dups += rvs[j] == rvs[j - 1];
    }
    int in_order = rvs && !unordered && !dups && (!min_after || min_after > max_before);
    free(rvs);
    json_decref(held);
    json_decref(list);
    for (int i = 0; i < WRITERS; i++) {
        free(w[i].acks);
        free(w[i].failed);
        free(w[i].failed_inflight);
    }
    free(w);

    char a[512], b[512], c[512], d[512], e[512], f[512], g[512], h[512];
    lab_table(lab, "Kill the one machine holding the truth (investigation 007)",
              (const char *const[]){"measure", "observed", "what it shows", NULL});
    snprintf(a, sizeof a,
             "%d threads, a client each; a failed create retried under a new name "
             "after %d ms",
             WRITERS, RETRY_MS);
    lab_row(lab,
            (const char *const[]){"writers", a, "clients that keep writing through the outage"});
    snprintf(b, sizeof b, "%lld (%lld before the kill, %lld after the restart)", acked, before,
             acked - before);
    lab_row(lab, (const char *const[]){"acknowledged (201 with a resourceVersion)", b,
                                       "each one promised durable"});
    snprintf(c, sizeof c, "%lld (kept by the history: %lld, not: %lld)", inflight, inflight_kept,
             inflight - inflight_kept);
    lab_row(lab, (const char *const[]){"in flight when killed", c,
                                       "never acknowledged: either outcome is allowed"});
    snprintf(d, sizeof d, "%lld (missing %lld, changed %lld)", lost + changed, lost, changed);
    lab_row(lab, (const char *const[]){"lost after restart", d,
                                       "must be 0: acknowledged means durable"});
    snprintf(e, sizeof e,
             "%s: each writer's rise, %lld reused, last before the kill %lld < "
             "first after %lld",
             in_order ? "yes" : "NO", dups, max_before, min_after);
    lab_row(lab, (const char *const[]){"revisions in order", e,
                                       "one history, continued across the restart"});
    snprintf(f, sizeof f,
             "%lld (unavailable %lld, timed out %lld, other %lld); failed creates "
             "found anyway: %lld",
             errors_u + errors_t + errors_o, errors_u, errors_t, errors_o, failed_after_kept);
    lab_row(lab, (const char *const[]){"client errors", f, "the outage as clients saw it"});
    if (kubectl_rc == KP_ENOTFOUND)
        snprintf(g, sizeof g, "not run: kubectl is not installed");
    else if (kubectl_rc == KP_ETIMEDOUT)
        snprintf(g, sizeof g, "hung: killed after %.0f ms", kubectl_ms);
    else
        snprintf(g, sizeof g, "exit %d after %.0f ms: %s", kubectl_rc, kubectl_ms, kubectl_out);
    lab_row(lab, (const char *const[]){"kubectl get configmaps while down", g,
                                       "hang, error at once, or stale data?"});
    snprintf(h, sizeof h, "%.0f ms (of which the lab's wait before restarting: %.0f ms)",
             first_ok ? first_ok - kill : -1.0, restart_at - kill);
    lab_row(lab, (const char *const[]){"downtime (kill to first acknowledged write)", h,
                                       "no cluster while the one copy is down"});
    snprintf(h, sizeof h, "%.0f ms (the server ready in %.0f ms)",
             first_ok ? first_ok - restart_at : -1.0, ready_ms);
    lab_row(lab, (const char *const[]){"first success after restart (from its exec)", h,
                                       "recovery is a restart: the history was on disk"});
    lab_table_end(lab);
    if (lost + changed || !in_order) {
        lab_say(lab, "acknowledged writes were lost or reordered: the store broke its contract");
        return KP_ECORRUPT;
    }
    return 0;
}

const lab_def_t lab_kill_the_truth = {
    .name = "kill-the-truth",
    .seed = "007",
    .title = "kill -9 the one server mid-writes: what clients saw, what the history kept",
    .run = run,
};
