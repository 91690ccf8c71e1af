/*
 * lab_polling.c -- `kplane lab run polling-vs-watching`: investigation 003
 * ends on "every Controller must observe"; this lab measures what observing
 * by watching saves over observing by polling.
 *
 * Two API servers side by side, each with the ReplicaSet controller in a
 * controller manager of its own: one whose informers watch (as
 * Kubernetes'), one whose informers list every POLL_MS instead
 * (`--poll-interval`). The same minute of changes is made on both in
 * lockstep: a ReplicaSet scaled to a new count every STEP_MS. For each
 * design the lab counts, from the controller manager's own /metrics, the
 * requests it made, its lists, the lists that found nothing changed and
 * the changes its handlers were given; and it times each reaction: from
 * the scale's acknowledgement to the moment the ReplicaSet's pods number
 * what was asked (seen by the lab's own watch).
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/informer.h"
#include "lab/lab.h"
#include "lib/buf.h"
#include "lib/clock.h"
#include "lib/err.h"

#define POLL_MS 2000     /* the polling design's interval */
#define STEP_MS 5000     /* one change every STEP_MS ... */
#define STEPS 12         /* ... for a minute */
#define REACT_MAX_MS 15000
#define IDLE_SETS 10     /* ReplicaSets nobody changes ... */
#define IDLE_PODS 3      /* ... with this many pods each */
#define NS "default"
#define RS "observed"

/* One design: its server, its controller manager, and the pods the lab
 * sees through its own informer. */
typedef struct side {
    const char *label;
    lab_server_t *s;
    pid_t cm;
    int mport;
    kc_informer_t *pods;
    int inited;         /* mu and cv are */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int count;          /* the ReplicaSet's pods, as last seen */
    double react[STEPS]; /* ms; -1: not within REACT_MAX_MS */
} side_t;

static void pods_changed(side_t *sd)
{
    size_t n = 0;
    json_t **objs = NULL;
    if (kc_informer_list(sd->pods, NULL, NULL, &objs, &n)) n = 0;
    kc_objs_free(objs, n);
    pthread_mutex_lock(&sd->mu);
    sd->count = (int)n;
    pthread_cond_broadcast(&sd->cv);
    pthread_mutex_unlock(&sd->mu);
}

static void on_add(void *arg, const json_t *obj)
{
    (void)obj;
    pods_changed(arg);
}
static void on_update(void *arg, const json_t *old, const json_t *obj)
{
    (void)arg, (void)old, (void)obj;
}
static void on_delete(void *arg, const json_t *obj)
{
    (void)obj;
    pods_changed(arg);
}

/* Wait until the side's pods number `want`: ms since t0, or -1. */
static double wait_count(side_t *sd, int want, int64_t t0)
{
    struct timespec until = clock_deadline_ms(REACT_MAX_MS);
    pthread_mutex_lock(&sd->mu);
    while (sd->count != want)
        if (pthread_cond_timedwait(&sd->cv, &sd->mu, &until)) break;
    int ok = sd->count == want;
    pthread_mutex_unlock(&sd->mu);
    return ok ? (double)(clock_mono_ns() - t0) / 1e6 : -1;
}

static size_t curl_sink(char *p, size_t size, size_t n, void *arg)
{
    return buf_append(arg, p, size * n) ? 0 : size * n;
}

/* A counter from the controller manager's /metrics (plain HTTP); -1 when
 * it cannot be read. */
static double cm_metric(const side_t *sd, const char *name)
{
    char url[96];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", sd->mport);
    buf_t b;
    buf_init(&b, 4u << 20);
    CURL *h = curl_easy_init();
    double v = -1;
    if (h) {
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, curl_sink);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        if (curl_easy_perform(h) == CURLE_OK && !buf_append(&b, "", 1)) {
            size_t nl = strlen(name);
            for (const char *l = b.p; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
                if (!strncmp(l, name, nl) && l[nl] == ' ') {
                    v = strtod(l + nl + 1, NULL);
                    break;
                }
        }
        curl_easy_cleanup(h);
    }
    buf_free(&b);
    return v;
}

/* The port the controller manager printed ("serves /metrics on port N")
 * to its log, waiting for it up to 10 s. */
static int cm_port(lab_t *lab, const char *name)
{
    char path[700], line[256];
    snprintf(path, sizeof path, "%s/%s.log", lab_dir(lab), name);
    for (int i = 0; i < 200; i++) {
        FILE *f = fopen(path, "r");
        int port = 0;
        while (f && fgets(line, sizeof line, f))
            if (sscanf(line, "kplane controller-manager serves /metrics on port %d", &port) == 1)
                break;
        if (f) fclose(f);
        if (port > 0) return port;
        usleep(50000);
    }
    return 0;
}

static int scale(lab_t *lab, side_t *sd, int n)
{
    json_t *p = json_pack("{s:{s:i}}", "spec", "replicas", n);
    int rc = kc_patch(sd->s->client, &kc_replicasets, NS, RS, NULL, KC_PATCH_MERGE, p, NULL, NULL,
                      NULL);
    json_decref(p);
    if (rc) lab_say(lab, "%s: scaling to %d: %s", sd->label, n, err_str(rc));
    return rc;
}

static json_t *replicaset(const char *name, int replicas)
{
    return json_pack("{s:s,s:s,s:{s:s},s:{s:i,s:{s:{s:s}},s:{s:{s:{s:s}},s:{s:[{s:s,s:s}]}}}}",
                     "apiVersion", "apps/v1", "kind", "ReplicaSet", "metadata", "name", name,
                     "spec", "replicas", replicas, "selector", "matchLabels", "app", name,
                     "template", "metadata", "labels", "app", name, "spec", "containers", "name",
                     "app", "image", "nginx");
}

/* The pods of the idle ReplicaSets, on the side's server. */
static int idle_pods(side_t *sd)
{
    json_t *l = NULL;
    int n = -1;
    if (!kc_list(sd->s->client, &kc_pods, NS, "labelSelector=role%3Didle", &l))
        n = (int)json_array_size(json_object_get(l, "items"));
    json_decref(l);
    return n;
}

static int side_start(lab_t *lab, side_t *sd, const char *name, const char *label, int poll)
{
    sd->label = label;
    pthread_mutex_init(&sd->mu, NULL);
    clock_cond_init(&sd->cv);
    sd->inited = 1;
    lab_server_opts_t o = {.name = name, .nodes = -1, .no_controllers = 1, .no_scheduler = 1};
    int rc = lab_server_start(lab, &o, &sd->s);
    if (rc) return rc;
    char cmname[64];
    snprintf(cmname, sizeof cmname, "%s-cm", name);
    const char *args_watch[] = {"--controllers", "replicaset", "--metrics-listen",
                                "127.0.0.1:0", NULL};
    const char *args_poll[] = {"--controllers", "replicaset", "--metrics-listen",
                               "127.0.0.1:0", "--poll-interval", "2s", NULL};
    if ((rc = lab_component_start(lab, cmname, "controller-manager", sd->s, NULL,
                                  poll ? args_poll : args_watch, &sd->cm)))
        return rc;
    if (!(sd->mport = cm_port(lab, cmname))) {
        lab_say(lab, "%s: its controller manager never served /metrics (see %s/%s.log)", label,
                lab_dir(lab), cmname);
        return KP_ETIMEDOUT;
    }
    if ((rc = kc_informer_new(sd->s->client, &kc_pods, NS, "app=" RS, NULL, 0, &sd->pods)))
        return rc;
    kc_handlers_t h = {on_add, on_update, on_delete, sd};
    if ((rc = kc_informer_add_handlers(sd->pods, &h)) || (rc = kc_informer_start(sd->pods)) ||
        (rc = kc_informer_wait_synced(sd->pods, 10000)))
        return rc;
    /* What a real cluster has most of: objects that do not change. */
    for (int i = 0; i < IDLE_SETS && !rc; i++) {
        char n[32];
        snprintf(n, sizeof n, "idle-%d", i);
        json_t *rs = replicaset(n, IDLE_PODS);
        json_object_set_new(json_object_get(json_object_get(json_object_get(rs, "spec"), "template"),
                                            "metadata"),
                            "labels", json_pack("{s:s,s:s}", "app", n, "role", "idle"));
        rc = kc_create(sd->s->client, &kc_replicasets, NS, rs, NULL, NULL);
        json_decref(rs);
    }
    json_t *rs = replicaset(RS, 1);
    if (!rc) rc = kc_create(sd->s->client, &kc_replicasets, NS, rs, NULL, NULL);
    json_decref(rs);
    if (rc) lab_say(lab, "%s: creating the ReplicaSets: %s", label, err_str(rc));
    return rc;
}

static void side_free(side_t *sd)
{
    kc_informer_free(sd->pods);
    if (!sd->inited) return;
    pthread_mutex_destroy(&sd->mu);
    pthread_cond_destroy(&sd->cv);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* "p50 / max" of the reactions, "-" for none; misses counted apart. */
static void summary(const side_t *sd, char *out, size_t n, int *missed)
{
    double v[STEPS];
    int k = 0;
    *missed = 0;
    for (int i = 0; i < STEPS; i++) {
        if (sd->react[i] >= 0)
            v[k++] = sd->react[i];
        else
            (*missed)++;
    }
    if (!k) {
        snprintf(out, n, "-");
        return;
    }
    qsort(v, (size_t)k, sizeof v[0], cmp_double);
    snprintf(out, n, "%.0f / %.0f", v[k / 2], v[k - 1]);
}

static int run(lab_t *lab)
{
    side_t w = {0}, p = {0};
    int rc = side_start(lab, &w, "watching", "watching", 0);
    if (!rc) rc = side_start(lab, &p, "polling", "polling every 2 s", 1);
    if (rc) goto out;
    int64_t t0 = clock_mono_ns();
    if (wait_count(&w, 1, t0) < 0 || wait_count(&p, 1, t0) < 0) {
        lab_say(lab, "the first pod never appeared on one side");
        rc = KP_ETIMEDOUT;
        goto out;
    }
    for (int i = 0; i < 200 && (idle_pods(&w) != IDLE_SETS * IDLE_PODS ||
                                idle_pods(&p) != IDLE_SETS * IDLE_PODS);
         i++)
        usleep(100000); /* setup only: the minute below is measured by watches */
    enum { NM = 5 };
    double before[2][NM];
    const char *names[NM] = {"rest_client_requests_total", "informer_lists_total",
                             "informer_lists_unchanged_total", "informer_objects_received_total",
                             "informer_events_total"};
    for (int m = 0; m < NM; m++) {
        before[0][m] = cm_metric(&w, names[m]);
        before[1][m] = cm_metric(&p, names[m]);
    }
    lab_say(lab,
            "Each side has %d ReplicaSets nobody touches (%d pods) and one that changes. Now a "
            "minute of changes, the same on both: every %d s that one is scaled to a new count.",
            IDLE_SETS, IDLE_SETS * IDLE_PODS, STEP_MS / 1000);
    static const int counts[STEPS] = {3, 2, 5, 1, 4, 2, 6, 3, 1, 5, 2, 4};
    int64_t start = clock_mono_ns();
    for (int i = 0; i < STEPS; i++) {
        int64_t due = start + (int64_t)i * STEP_MS * 1000000;
        int64_t now = clock_mono_ns();
        if (due > now) usleep((useconds_t)((due - now) / 1000));
        int64_t tw = clock_mono_ns();
        if ((rc = scale(lab, &w, counts[i]))) goto out;
        int64_t tp = clock_mono_ns();
        if ((rc = scale(lab, &p, counts[i]))) goto out;
        w.react[i] = wait_count(&w, counts[i], tw);
        p.react[i] = wait_count(&p, counts[i], tp);
        lab_say(lab, "change %2d: %d pods: watching reacted in %.0f ms, polling in %.0f ms", i + 1,
                counts[i], w.react[i], p.react[i]);
    }
    double span_s = (double)(clock_mono_ns() - start) / 1e9;
    double got[2][NM];
    for (int m = 0; m < NM; m++) {
        got[0][m] = cm_metric(&w, names[m]) - before[0][m];
        got[1][m] = cm_metric(&p, names[m]) - before[1][m];
    }
    static const char *const cols[] = {"", "watching", "polling every 2 s", NULL};
    char title[128];
    snprintf(title, sizeof title, "The same %d changes in %.0f s, observed two ways", STEPS,
             span_s);
    lab_table(lab, title, cols);
    static const char *const rows[NM] = {"requests the controller manager made", "of them, lists",
                                         "lists that found nothing changed",
                                         "objects received (list items, watch events)",
                                         "changes handed to the controller"};
    for (int m = 0; m < NM; m++) {
        char a[32], b[32];
        snprintf(a, sizeof a, "%.0f", got[0][m]);
        snprintf(b, sizeof b, "%.0f", got[1][m]);
        const char *cells[] = {rows[m], a, b, NULL};
        lab_row(lab, cells);
    }
    char ra[48], rb[48], ma[16], mb[16];
    int missw, missp;
    summary(&w, ra, sizeof ra, &missw);
    summary(&p, rb, sizeof rb, &missp);
    const char *react[] = {"reaction p50 / max (ms)", ra, rb, NULL};
    lab_row(lab, react);
    snprintf(ma, sizeof ma, "%d", missw);
    snprintf(mb, sizeof mb, "%d", missp);
    const char *miss[] = {"changes not met within 15 s", ma, mb, NULL};
    lab_row(lab, miss);
    lab_table_end(lab);
    lab_say(lab,
            "Watching was told of each change as it happened: %.0f objects for %d changes, "
            "reacting in milliseconds. Polling asked every %d s: %.0f lists brought %.0f objects, "
            "%.0f times nothing had changed, and it reacted up to a whole interval late.",
            got[0][3], STEPS, POLL_MS / 1000, got[1][1], got[1][3], got[1][2]);
    if (missw || missp) rc = KP_ETIMEDOUT;
out:
    side_free(&w);
    side_free(&p);
    return rc;
}

const lab_def_t lab_polling_vs_watching = {
    .name = "polling-vs-watching",
    .seed = "003",
    .title = "the same minute of changes observed by polling and by watching: requests, "
             "\"nothing changed\" answers, reaction time",
    .run = run,
};
