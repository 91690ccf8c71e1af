/*
 * ha_writer.c -- concurrent creates for the HA drills, each outcome recorded.
 *
 *   ha_writer --server URL[,URL...] --ca FILE --token FILE --out FILE
 *             [--threads 8] [--count 5000] [--seconds S] [--prefix w]
 *             [--namespace default] [--timeout-ms 5000]
 *
 * THREADS threads create ConfigMaps PREFIX-0, PREFIX-1, ... (a shared counter,
 * every name tried once, never retried) through the listed API servers
 * (thread t uses server t mod N), until COUNT creates were attempted or
 * SECONDS passed. Each attempt is one line of OUT:
 *
 *   NAME OUTCOME HTTP RV START_MS END_MS
 *
 * OUTCOME is `ack` (201 Created: acknowledged; RV its resourceVersion),
 * `error` (any other HTTP status; the write was refused or failed) or
 * `timeout` (no answer within --timeout-ms, or the connection failed; the
 * outcome is unknown). START_MS/END_MS are milliseconds since the writer
 * started (CLOCK_MONOTONIC), so real-time order between writes can be
 * checked against their revisions. A summary goes to stdout:
 *   attempted N ack A error E timeout T
 * Exit status 0 unless the writer itself failed (bad flags, out of memory).
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAX_SERVERS = 8, MAX_THREADS = 64 };

typedef struct shared {
    const char *servers[MAX_SERVERS];
    int nservers;
    const char *ca;
    char auth[512];
    const char *prefix;
    const char *ns;
    long count;
    double seconds;
    long timeout_ms;
    struct timespec t0;
    atomic_long next;
    pthread_mutex_t mu; /* guards out and the counters */
    FILE *out;
    long ack, err, tmo;
} shared_t;

typedef struct worker {
    shared_t *sh;
    int id;
} worker_t;

typedef struct buf {
    char data[8192];
    size_t len;
} buf_t;

static double ms_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    buf_t *b = arg;
    size_t len = size * n, room = sizeof b->data - 1 - b->len;
    if (len < room) room = len;
    memcpy(b->data + b->len, p, room);
    b->len += room;
    b->data[b->len] = 0;
    return len;
}

/* The resourceVersion of the created object, "-" if none is found. */
static void find_rv(const char *body, char *rv, size_t cap)
{
    const char *p = strstr(body, "\"resourceVersion\":\"");
    snprintf(rv, cap, "-");
    if (!p) return;
    p += strlen("\"resourceVersion\":\"");
    size_t i = 0;
    while (p[i] && p[i] != '"' && i + 1 < cap) {
        rv[i] = p[i];
        i++;
    }
    rv[i] = 0;
}

static void *run(void *arg)
{
    worker_t *w = arg;
    shared_t *sh = w->sh;
    CURL *h = curl_easy_init();
    if (!h) return NULL;
    struct curl_slist *hdr = NULL;
    hdr = curl_slist_append(hdr, sh->auth);
    hdr = curl_slist_append(hdr, "Content-Type: application/json");
    char url[512];
    snprintf(url, sizeof url, "%s/api/v1/namespaces/%s/configmaps",
             sh->servers[w->id % sh->nservers], sh->ns);
    for (;;) {
        long i = atomic_fetch_add(&sh->next, 1);
        if (i >= sh->count) break;
        double start = ms_since(&sh->t0);
        if (sh->seconds > 0 && start >= sh->seconds * 1e3) break;
        char name[128], body[256], rv[64];
        snprintf(name, sizeof name, "%s-%ld", sh->prefix, i);
        snprintf(body, sizeof body,
                 "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\"},"
                 "\"data\":{\"i\":\"%ld\"}}",
                 name, i);
        buf_t resp = {.len = 0};
        resp.data[0] = 0;
        curl_easy_reset(h);
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_CAINFO, sh->ca);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, sh->timeout_ms);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, sh->timeout_ms);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &resp);
        CURLcode cc = curl_easy_perform(h);
        long code = 0;
        if (cc == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        double end = ms_since(&sh->t0);
        const char *outcome = cc != CURLE_OK ? "timeout" : code == 201 ? "ack" : "error";
        if (code == 201)
            find_rv(resp.data, rv, sizeof rv);
        else
            snprintf(rv, sizeof rv, "-");
        pthread_mutex_lock(&sh->mu);
        fprintf(sh->out, "%s %s %ld %s %.1f %.1f\n", name, outcome, code, rv, start, end);
        if (code == 201)
            sh->ack++;
        else if (cc == CURLE_OK)
            sh->err++;
        else
            sh->tmo++;
        pthread_mutex_unlock(&sh->mu);
    }
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    return NULL;
}

static int read_token(const char *path, char *out, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char tok[400] = "";
    int ok = fgets(tok, sizeof tok, f) != NULL;
    fclose(f);
    if (!ok) return -1;
    tok[strcspn(tok, "\r\n")] = 0;
    snprintf(out, cap, "Authorization: Bearer %s", tok);
    return 0;
}

int main(int argc, char **argv)
{
    static shared_t sh = {.prefix = "w", .ns = "default", .count = 5000, .timeout_ms = 5000};
    int threads = 8;
    const char *outpath = NULL, *token = NULL;
    char *servers = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--server"))
            servers = strdup(v);
        else if (!strcmp(k, "--ca"))
            sh.ca = v;
        else if (!strcmp(k, "--token"))
            token = v;
        else if (!strcmp(k, "--out"))
            outpath = v;
        else if (!strcmp(k, "--threads"))
            threads = (int)strtol(v, NULL, 10);
        else if (!strcmp(k, "--count"))
            sh.count = strtol(v, NULL, 10);
        else if (!strcmp(k, "--seconds"))
            sh.seconds = strtod(v, NULL);
        else if (!strcmp(k, "--prefix"))
            sh.prefix = v;
        else if (!strcmp(k, "--namespace"))
            sh.ns = v;
        else if (!strcmp(k, "--timeout-ms"))
            sh.timeout_ms = strtol(v, NULL, 10);
        else {
            fprintf(stderr, "ha_writer: unknown flag %s\n", k);
            return 2;
        }
    }
    if (!servers || !sh.ca || !token || !outpath || threads < 1 || threads > MAX_THREADS ||
        sh.count < 1 || sh.timeout_ms < 1) {
        fprintf(stderr, "usage: ha_writer --server URL[,URL] --ca FILE --token FILE --out FILE "
                        "[--threads N] [--count N] [--seconds S] [--prefix P] [--timeout-ms MS]\n");
        free(servers);
        return 2;
    }
    for (char *save = NULL, *s = strtok_r(servers, ",", &save); s && sh.nservers < MAX_SERVERS;
         s = strtok_r(NULL, ",", &save))
        sh.servers[sh.nservers++] = s;
    if (read_token(token, sh.auth, sizeof sh.auth)) {
        fprintf(stderr, "ha_writer: cannot read %s\n", token);
        free(servers);
        return 2;
    }
    sh.out = fopen(outpath, "w");
    if (!sh.out || curl_global_init(CURL_GLOBAL_DEFAULT)) {
        fprintf(stderr, "ha_writer: cannot open %s\n", outpath);
        free(servers);
        return 2;
    }
    pthread_mutex_init(&sh.mu, NULL);
    atomic_init(&sh.next, 0);
    clock_gettime(CLOCK_MONOTONIC, &sh.t0);
    pthread_t tid[MAX_THREADS];
    worker_t w[MAX_THREADS];
    for (int t = 0; t < threads; t++) {
        w[t] = (worker_t){.sh = &sh, .id = t};
        if (pthread_create(&tid[t], NULL, run, &w[t])) return 1;
    }
    for (int t = 0; t < threads; t++) pthread_join(tid[t], NULL);
    fclose(sh.out);
    printf("attempted %ld ack %ld error %ld timeout %ld\n", sh.ack + sh.err + sh.tmo, sh.ack,
           sh.err, sh.tmo);
    curl_global_cleanup();
    pthread_mutex_destroy(&sh.mu);
    free(servers);
    return 0;
}
