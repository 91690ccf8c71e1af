/*
 * bench/api.c -- API server benchmarks against a real `kplane server`; one
 * line per case on stdout:
 *
 *   BENCH <case> <metric>=<value> ...
 *
 * Each case starts its own server on a fresh data dir (fork+exec `kplane
 * server --data-dir DIR --listen 127.0.0.1:0`; the port comes from its first
 * stdout line, its stderr goes to DIR/server.log) and talks HTTPS to it with
 * libcurl: HTTP/1.1, kept-alive connections, DIR/admin-token, DIR/ca.crt.
 *
 *  server.start    ms: fork+exec to the first 200 from GET /readyz (polled
 *                  every 5 ms) on a fresh dir, so creating the certificates
 *                  and the store counts; restart_ms: a second start on it.
 *  api.create.c16  16 threads, a connection each, POST ConfigMaps holding
 *                  1000 bytes of data for KP_BENCH_SECONDS (default 10:
 *                  runs of 3 s varied by 10% from one to the next on 2
 *                  cores, enough to hide or fake a 5% change; any
 *                  reply but 201 fails. ops_per_s; p50_ms/p99_ms of a POST;
 *                  cpu_us_per_op, the server's CPU time (user + system)
 *                  over the creates (steadier than the rate on a busy
 *                  machine: it counts work, not waiting); writes_per_commit,
 *                  the group commit's batch (from /metrics, when the store
 *                  reports it).
 *                  With KP_BENCH_STORE=etcd://... (bench/with-etcd.sh sets
 *                  it), the case runs again on `kplane server --store URL`
 *                  as api.create.c16.etcd, and api.create.c16.ratio gives
 *                  embedded_over_etcd, the embedded ops_per_s over etcd's.
 *  api.create.rbac The creates of api.create.c16 by a user of --token-auth-file
 *                  bound (ClusterRole create on configmaps) instead of the
 *                  admin (system:masters, whom no authorizer is asked
 *                  about): api.create.c16.alwaysallow on a server with
 *                  --authorization-mode AlwaysAllow, api.create.c16.rbac with
 *                  Node,RBAC (every request decided by RBAC's snapshot), and
 *                  rbac_over_alwaysallow, their ops_per_s ratio (issue 17:
 *                  within 10%).
 *  api.list.10k    10,000 pods (one container, label app=bench) created by
 *                  16 threads, then GET .../namespaces/default/pods, no
 *                  limit. ms: median of 5 after a warm-up; every body must
 *                  hold 10,000 items (checked untimed); bytes: the warm-up's
 *                  body size.
 *  server.rss      VmRSS of that server: idle_mb right after it became
 *                  ready, loaded_mb right after its pods were created, and
 *                  of loaded_mb the anonymous part (anon_mb: the heap) and
 *                  the file pages (file_mb: mostly the store's mapping);
 *                  kb_per_pod, what each pod added ((loaded - idle) /
 *                  10,000); pods_cache_mb and pods_history_mb, the pods'
 *                  watch cache as /metrics reports it (its objects, its
 *                  history; a version in both counts twice).
 *  api.watch.1000  1,000 watches on ConfigMaps from a list's resourceVersion,
 *                  read by 4 threads (curl multi over epoll). Once each has
 *                  its 200 headers, one writer creates 100 ConfigMaps at
 *                  20/s. Latency of a (watch, event) pair: from just before
 *                  the POST to that watch's reader getting the bytes ending
 *                  the event's line. p99_ms, p50_ms; delivered: pairs seen,
 *                  anything short of 100,000 fails.
 *  api.idle.2000   2,000 TLS connections, each having made one authenticated
 *                  GET /version (all at once, curl multi, HTTP/1.1), then
 *                  left open and idle. conns: the server's socket fds gained
 *                  (so every connection is counted, in any build); rss_mb:
 *                  VmRSS gained; threads: the server's threads 12 s later
 *                  (past the worker pool's idle shrink), threads_busy: just
 *                  after the burst, threads_before: before it.
 *
 * Data dirs live under $KP_BENCH_DIR, else ./.bench-tmp -- never /tmp, which
 * may be a tmpfs. Each is removed after its case; a failing case prints its
 * server.log tail and keeps its dir. The server gets SIGTERM, then SIGKILL
 * after 5 s: after its case, at exit() on failure, on SIGINT/SIGTERM/SIGHUP,
 * and (PR_SET_PDEATHSIG) when the bench itself dies.
 *
 * Usage: bench_api PATH-TO-KPLANE [CASE...]  (a name or a dotted prefix)
 *        bench_api --cases                   (the case names, one a line)
 */
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAYLOAD_BYTES 1000
#define CLIENTS       16
#define LIST_PODS     10000
#define LIST_RUNS     5
#define WATCHERS      1000
#define WATCH_THREADS 4
#define WATCH_EVENTS  100
#define WATCH_PACE_MS 50
#define IDLE_CONNS    2000
#define IDLE_SETTLE_S 12
#define BODY_MAX      (256u << 20) /* cap on a reply body */
#define LINE_MAX_LEN  (1u << 20)   /* cap on a watch event line */
#define SEC           1000000000LL
#define CM_PATH       "/api/v1/namespaces/default/configmaps"
#define POD_PATH      "/api/v1/namespaces/default/pods"
#define BENCH_USER_TOKEN "bench-user-token-0123456789abcdef"

/* The only global mutable state: the running server's pid (0: none), for the
 * atexit and signal handlers. Only the main thread writes it. */
static volatile sig_atomic_t g_server_pid;

/* ---- helpers ---- */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * SEC + ts.tv_nsec;
}

static void sleep_ns(int64_t ns)
{
    struct timespec ts = {(time_t)(ns / SEC), (long)(ns % SEC)};
    while (ns > 0 && nanosleep(&ts, &ts) != 0 && errno == EINTR)
        continue;
}

/* SIGTERM, up to 5 s to exit, then SIGKILL. Async-signal-safe. */
static void reap(pid_t pid)
{
    kill(pid, SIGTERM);
    for (int i = 0; i < 500; i++) {
        if (waitpid(pid, NULL, WNOHANG) != 0) return; /* gone (or not ours) */
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static void reap_at_exit(void)
{
    pid_t pid = (pid_t)g_server_pid;
    g_server_pid = 0;
    if (pid > 0) reap(pid);
}

static void on_signal(int sig)
{
    reap_at_exit();
    _exit(128 + sig);
}

/* A growable byte buffer, NUL-terminated, capped at `max`. */
typedef struct buf {
    char *p;
    size_t len, cap, max;
} buf_t;

static int buf_add(buf_t *b, const char *data, size_t n)
{
    if (b->len + n + 1 > b->max) return -1;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) return -1;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

static const char *buf_str(const buf_t *b)
{
    return b->p ? b->p : "";
}

/* A growable array of int64. */
typedef struct vec {
    int64_t *v;
    size_t n, cap;
} vec_t;

static int vec_push(vec_t *x, int64_t a)
{
    if (x->n == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 4096;
        int64_t *v = realloc(x->v, cap * sizeof *v);
        if (!v) return -1;
        x->v = v;
        x->cap = cap;
    }
    x->v[x->n++] = a;
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted `v` (n > 0), in milliseconds. */
static double pct_ms(const int64_t *v, size_t n, double q)
{
    size_t i = (size_t)(q * (double)n);
    if ((double)i < q * (double)n) i++; /* ceil */
    if (i > 0) i--;
    return (double)v[i < n ? i : n - 1] / 1e6;
}

/* ---- the server under test ---- */

typedef struct bench_env {
    const char *kplane;
    const char *store; /* --store URL for the server, NULL: its embedded store */
    /* More arguments for `kplane server` (NULL-terminated, at most 4; NULL:
     * none), and whether the clients are a user of the token file the
     * case writes (bound to create ConfigMaps) instead of the admin. */
    const char *const *extra;
    int as_user;
    char base[PATH_MAX];
    double seconds;
    char payload[PAYLOAD_BYTES + 1];
} bench_env_t;

typedef struct server {
    pid_t pid;
    char dir[PATH_MAX];
    char url[64]; /* https://127.0.0.1:PORT */
    char ca[PATH_MAX + 16];
    char auth[256];  /* "Authorization: Bearer ...": the clients' */
    char admin[256]; /* the admin's, for /metrics */
} server_t;

/* Report a failure, with the last 4 KiB of the server's log if there is a
 * server, and exit(1): the data dir stays, the atexit handler stops the server. */
__attribute__((noreturn, format(printf, 2, 3))) static void fail(const server_t *s, const char *fmt,
                                                                 ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("bench_api: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    char path[PATH_MAX + 16], tail[4096];
    snprintf(path, sizeof path, "%s/server.log", s ? s->dir : "");
    FILE *f = s ? fopen(path, "r") : NULL;
    if (!f) exit(1);
    if (fseek(f, -(long)sizeof tail + 1, SEEK_END) != 0) rewind(f);
    tail[fread(tail, 1, sizeof tail - 1, f)] = '\0';
    fclose(f);
    fprintf(stderr, "--- tail of %s\n%s--- data dir kept: %s\n", path, tail, s->dir);
    exit(1);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    if (remove(path) != 0) fprintf(stderr, "bench_api: remove %s: %s\n", path, strerror(errno));
    return 0;
}

/* Stop the server; with `remove`, delete its data dir too. */
static void server_stop(server_t *s, int remove)
{
    g_server_pid = 0;
    if (s->pid > 0) reap(s->pid);
    if (remove) nftw(s->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A number field of the server's /proc/PID/status ("VmRSS:" in kB,
 * "Threads:"). */
static long server_status(const server_t *s, const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)s->pid);
    FILE *f = fopen(path, "r");
    size_t len = strlen(field);
    long v = -1;
    while (f && v < 0 && fgets(line, sizeof line, f))
        if (!strncmp(line, field, len)) v = strtol(line + len, NULL, 10);
    if (f) fclose(f);
    if (v < 0) fail(s, "no %s in %s", field, path);
    return v;
}

/* VmRSS of the server in MiB. */
static double server_rss_mb(const server_t *s)
{
    return (double)server_status(s, "VmRSS:") / 1024.0;
}

/* CPU time the server has used so far (user + system), in microseconds. */
static double server_cpu_us(const server_t *s)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)s->pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* fields 14 and 15 follow the comm */
    unsigned long long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        fail(s, "no CPU times in %s", path);
    return (double)(ut + st) * 1e6 / (double)sysconf(_SC_CLK_TCK);
}

/* The server's thread count. */
static long server_threads(const server_t *s)
{
    return server_status(s, "Threads:");
}

/* How many of the server's fds are sockets. */
static long server_sockets(const server_t *s)
{
    char path[64], fd[PATH_MAX], link[64];
    snprintf(path, sizeof path, "/proc/%d/fd", (int)s->pid);
    DIR *d = opendir(path);
    if (!d) fail(s, "%s: %s", path, strerror(errno));
    long n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        snprintf(fd, sizeof fd, "%s/%s", path, e->d_name);
        ssize_t len = readlink(fd, link, sizeof link - 1);
        n += len > 7 && !strncmp(link, "socket:", 7);
    }
    closedir(d);
    return n;
}

/* ---- a client: one easy handle, so one kept-alive connection ---- */

typedef struct client {
    CURL *h;
    struct curl_slist *hdrs;
    const server_t *srv;
    buf_t body;                /* the last reply's body */
    char err[CURL_ERROR_SIZE]; /* why no reply came */
} client_t;

static size_t on_body_discard(char *data, size_t size, size_t n, void *arg)
{
    (void)data, (void)arg;
    return size * n;
}

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
    return buf_add(arg, data, size * n) ? 0 : size * n;
}

/* The settings every handle shares; *hdrs: the header list it uses (created
 * if NULL; the caller frees it after the handle). NULL: out of memory. */
static CURL *easy_new(const server_t *s, struct curl_slist **hdrs)
{
    if (!*hdrs) {
        *hdrs = curl_slist_append(NULL, s->auth);
        if (*hdrs) curl_slist_append(*hdrs, "Content-Type: application/json");
        if (*hdrs) curl_slist_append(*hdrs, "Expect:"); /* no 100-continue round trip */
    }
    CURL *h = *hdrs ? curl_easy_init() : NULL;
    if (!h) return NULL;
    curl_easy_setopt(h, CURLOPT_CAINFO, s->ca);
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, *hdrs);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    return h;
}

static void client_init(client_t *c, const server_t *s)
{
    memset(c, 0, sizeof *c);
    c->srv = s;
    c->body.max = BODY_MAX;
    if (!(c->h = easy_new(s, &c->hdrs))) fail(s, "curl: out of memory");
    curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c->h, CURLOPT_WRITEDATA, &c->body);
    curl_easy_setopt(c->h, CURLOPT_ERRORBUFFER, c->err);
}

static void client_free(client_t *c)
{
    curl_easy_cleanup(c->h);
    curl_slist_free_all(c->hdrs);
    free(c->body.p);
}

/* GET `path`, or POST `body` to it; the reply body lands in c->body.
 * Returns the HTTP status, or 0 when no reply came (c->err says why). */
static long client_do(client_t *c, const char *path, const char *body)
{
    char url[512];
    snprintf(url, sizeof url, "%s%s", c->srv->url, path);
    c->body.len = 0;
    c->err[0] = '\0';
    curl_easy_setopt(c->h, CURLOPT_URL, url);
    if (body)
        curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, body);
    else
        curl_easy_setopt(c->h, CURLOPT_HTTPGET, 1L);
    long code = 0;
    CURLcode rc = curl_easy_perform(c->h);
    if (rc == CURLE_OK)
        curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &code);
    else if (!c->err[0])
        snprintf(c->err, sizeof c->err, "%s", curl_easy_strerror(rc));
    return code;
}

static void cm_json(char *out, size_t cap, const char *name, const char *payload)
{
    snprintf(out, cap,
             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\"},"
             "\"data\":{\"payload\":\"%s\"}}",
             name, payload);
}

/* Start the server on s->dir (a fresh one if `fresh`) and wait for /readyz.
 * *ready_ns (if not NULL): from fork+exec to the first 200. */
static void server_start(const bench_env_t *env, server_t *s, int fresh, int64_t *ready_ns)
{
    if (fresh) {
        memset(s, 0, sizeof *s);
        if (snprintf(s->dir, sizeof s->dir, "%s/api-XXXXXX", env->base) >= (int)sizeof s->dir ||
            !mkdtemp(s->dir))
            fail(NULL, "mkdtemp %s: %s", s->dir, strerror(errno));
    }
    char log[PATH_MAX + 16];
    snprintf(log, sizeof log, "%s/server.log", s->dir);
    int out[2], logfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (logfd < 0 || pipe2(out, O_CLOEXEC) != 0) fail(s, "%s: %s", log, strerror(errno));
    char tokens[PATH_MAX + 16];
    snprintf(tokens, sizeof tokens, "%s/tokens.csv", s->dir);
    if (env->as_user) {
        FILE *tf = fopen(tokens, "w");
        if (!tf || fprintf(tf, "%s,bench-user,1000\n", BENCH_USER_TOKEN) < 0 || fclose(tf))
            fail(s, "%s: %s", tokens, strerror(errno));
    }
    char *argv[16] = {(char *)env->kplane, "server", "--data-dir", s->dir, "--listen",
                      "127.0.0.1:0"};
    int na = 6;
    if (env->store) {
        argv[na++] = "--store";
        argv[na++] = (char *)env->store;
    }
    if (env->as_user) {
        argv[na++] = "--token-auth-file";
        argv[na++] = tokens;
    }
    for (int i = 0; env->extra && env->extra[i] && na < 15; i++)
        argv[na++] = (char *)env->extra[i];
    int64_t t0 = now_ns();
    pid_t pid = fork();
    if (pid < 0) fail(s, "fork: %s", strerror(errno));
    if (pid == 0) { /* async-signal-safe calls only, up to exec */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        signal(SIGPIPE, SIG_DFL);
        if (dup2(out[1], 1) >= 0 && dup2(logfd, 2) >= 0) execv(env->kplane, argv);
        _exit(127);
    }
    g_server_pid = s->pid = pid;
    close(out[1]);
    close(logfd);

    /* "kplane server is serving on https://127.0.0.1:PORT; ..." (or EOF) */
    FILE *f = fdopen(out[0], "r");
    char line[1024] = "", token[200] = "";
    if (!f || !fgets(line, sizeof line, f)) fail(s, "server exited before 'serving on'");
    fclose(f); /* the server ignores SIGPIPE and writes nothing else to stdout */
    const char *p = strstr(line, "https://127.0.0.1:");
    int port = p ? (int)strtol(p + 18, NULL, 10) : 0;
    if (port <= 0) fail(s, "no port in the server's first line: %s", line);
    snprintf(s->url, sizeof s->url, "https://127.0.0.1:%d", port);
    snprintf(s->ca, sizeof s->ca, "%s/ca.crt", s->dir);
    snprintf(log, sizeof log, "%s/admin-token", s->dir);
    if (!(f = fopen(log, "r")) || !fgets(token, sizeof token, f)) fail(s, "reading %s", log);
    fclose(f);
    token[strcspn(token, "\r\n")] = '\0';
    snprintf(s->auth, sizeof s->auth, "Authorization: Bearer %s", token);
    snprintf(s->admin, sizeof s->admin, "%s", s->auth);

    client_t c;
    client_init(&c, s);
    for (long code = 0; code != 200;) {
        code = client_do(&c, "/readyz", NULL);
        if (ready_ns) *ready_ns = now_ns() - t0;
        if (code != 200 && waitpid(pid, NULL, WNOHANG) != 0) fail(s, "server exited");
        if (code != 200 && now_ns() - t0 > 30 * SEC)
            fail(s, "GET /readyz: no 200 in 30 s (last: HTTP %ld %s)", code, c.err);
        if (code != 200) sleep_ns(5000000);
    }
    if (env->as_user) {
        /* The user may create ConfigMaps through a ClusterRole of its own
         * (RBAC decides each request; AlwaysAllow does not ask). */
        static const char *const grant[][2] = {
            {"/apis/rbac.authorization.k8s.io/v1/clusterroles",
             "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRole\","
             "\"metadata\":{\"name\":\"bench-configmaps\"},\"rules\":[{\"apiGroups\":[\"\"],"
             "\"resources\":[\"configmaps\",\"pods\"],\"verbs\":[\"create\",\"get\",\"list\"]}]}"},
            {"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
             "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRoleBinding\","
             "\"metadata\":{\"name\":\"bench-configmaps\"},\"roleRef\":{\"apiGroup\":"
             "\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\",\"name\":"
             "\"bench-configmaps\"},\"subjects\":[{\"apiGroup\":\"rbac.authorization.k8s.io\","
             "\"kind\":\"User\",\"name\":\"bench-user\"}]}"}};
        for (size_t i = 0; i < 2; i++) {
            long code = client_do(&c, grant[i][0], grant[i][1]);
            if (code != 201) fail(s, "POST %s: HTTP %ld %s", grant[i][0], code, c.err);
        }
        client_free(&c);
        snprintf(s->auth, sizeof s->auth, "Authorization: Bearer %s", BENCH_USER_TOKEN);
        /* Until the authorizer's snapshot has the binding. */
        client_init(&c, s);
        int64_t t1 = now_ns();
        while (client_do(&c, CM_PATH "?limit=1", NULL) != 200) {
            if (now_ns() - t1 > 10 * SEC) fail(s, "bench-user never got access");
            sleep_ns(5000000);
        }
    }
    client_free(&c);
}

/* ---- 16 client threads: POST ConfigMaps until a deadline, or create pods ---- */

typedef struct worker {
    const server_t *srv;
    const bench_env_t *env;
    int id, first, count;       /* count > 0: create pods first .. first+count-1 */
    pthread_barrier_t *start;   /* the clock starts when all are connected */
    const int64_t *deadline_ns; /* ConfigMaps: written before the barrier */
    atomic_int *stop;           /* set by the first worker that fails */
    vec_t lat;                  /* ns per request */
    char err[2048];
} worker_t;

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    client_t c;
    client_init(&c, w->srv);
    client_do(&c, "/readyz", NULL); /* connect (TLS) before the clock starts */
    pthread_barrier_wait(w->start);
    char body[PAYLOAD_BYTES + 512], name[64];
    const char *path = w->count ? POD_PATH : CM_PATH;
    for (int i = 0; !atomic_load(w->stop) && (!w->count || i < w->count); i++) {
        if (w->count) {
            snprintf(body, sizeof body,
                     "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"pod-%d\","
                     "\"labels\":{\"app\":\"bench\"}},\"spec\":{\"containers\":[{\"name\":"
                     "\"app\",\"image\":\"registry.k8s.io/pause:3.9\"}]}}",
                     w->first + i);
        } else {
            snprintf(name, sizeof name, "cm-%d-%d", w->id, i);
            cm_json(body, sizeof body, name, w->env->payload);
        }
        int64_t t0 = now_ns();
        long code = client_do(&c, path, body);
        int64_t t1 = now_ns();
        if (code != 201 || vec_push(&w->lat, t1 - t0)) {
            snprintf(w->err, sizeof w->err, "POST %s (%.50s...): HTTP %ld %s%.500s", path, body,
                     code, c.err, buf_str(&c.body));
            atomic_store(w->stop, 1);
        }
        if (!w->count && t1 >= *w->deadline_ns) break;
    }
    client_free(&c);
    return NULL;
}

/* Run CLIENTS workers: ConfigMaps for env->seconds if pods == 0, else create
 * `pods` pods. Returns all latencies (caller frees), *n of them, *elapsed_ns. */
static int64_t *run_workers(const bench_env_t *env, const server_t *s, int pods, size_t *n,
                            int64_t *elapsed_ns)
{
    worker_t ws[CLIENTS];
    pthread_t th[CLIENTS];
    pthread_barrier_t start;
    atomic_int stop = 0;
    int64_t deadline = INT64_MAX;
    pthread_barrier_init(&start, NULL, CLIENTS + 1);
    for (int i = 0; i < CLIENTS; i++) {
        int first = pods * i / CLIENTS, count = pods * (i + 1) / CLIENTS - first;
        ws[i] = (worker_t){.srv = s,
                           .env = env,
                           .id = i,
                           .first = first,
                           .count = count,
                           .start = &start,
                           .deadline_ns = &deadline,
                           .stop = &stop};
        if (pthread_create(&th[i], NULL, worker_main, &ws[i])) fail(s, "pthread_create");
    }
    int64_t t0 = now_ns();
    deadline = t0 + (int64_t)(env->seconds * 1e9);
    pthread_barrier_wait(&start);
    *n = 0;
    for (int i = 0; i < CLIENTS; i++) {
        pthread_join(th[i], NULL);
        *n += ws[i].lat.n;
    }
    *elapsed_ns = now_ns() - t0;
    pthread_barrier_destroy(&start);
    int64_t *lat = malloc((*n + 1) * sizeof *lat);
    if (!lat) fail(s, "out of memory");
    for (int i = 0, k = 0; i < CLIENTS; k += (int)ws[i].lat.n, i++) {
        if (ws[i].err[0]) fail(s, "client %d: %s", i, ws[i].err);
        if (ws[i].lat.n) memcpy(lat + k, ws[i].lat.v, ws[i].lat.n * sizeof *lat);
        free(ws[i].lat.v);
    }
    qsort(lat, *n, sizeof *lat, cmp_i64);
    return lat;
}

/* ---- cases ---- */

static void case_start(const bench_env_t *env)
{
    server_t s;
    int64_t first = 0, second = 0;
    server_start(env, &s, 1, &first);
    server_stop(&s, 0);
    server_start(env, &s, 0, &second);
    printf("BENCH server.start ms=%.1f restart_ms=%.1f\n", first / 1e6, second / 1e6);
    fflush(stdout);
    server_stop(&s, 1);
}

/* The value of `series` (a metric's name and labels as /metrics prints
 * them) in /metrics; -1 when absent. */
static double metric_value(client_t *c, const char *series)
{
    char want[200];
    snprintf(want, sizeof want, "\n%s ", series);
    if (client_do(c, "/metrics", NULL) != 200) return -1;
    const char *p = strstr(buf_str(&c->body), want);
    return p ? strtod(p + strlen(want), NULL) : -1;
}

/* The store's writes and durable commits so far (-1 when not reported). */
static void store_counts(const server_t *s, double *writes, double *commits)
{
    server_t as_admin = *s;
    snprintf(as_admin.auth, sizeof as_admin.auth, "%s", s->admin);
    client_t c;
    client_init(&c, &as_admin);
    *writes = metric_value(&c, "kplane_store_writes_total");
    *commits = metric_value(&c, "kplane_store_commits_total");
    client_free(&c);
}

/* Prints the case's line (named api.create.c16 plus `suffix`); returns its
 * ops_per_s. */
static double case_create(const bench_env_t *env, const char *suffix)
{
    server_t s;
    size_t n;
    int64_t elapsed;
    server_start(env, &s, 1, NULL);
    double w0, c0, w1, c1;
    store_counts(&s, &w0, &c0);
    double cpu0 = server_cpu_us(&s);
    int64_t *lat = run_workers(env, &s, 0, &n, &elapsed);
    if (n == 0) fail(&s, "no ConfigMap was created");
    double ops = n / (elapsed / 1e9), cpu = (server_cpu_us(&s) - cpu0) / (double)n;
    store_counts(&s, &w1, &c1);
    printf("BENCH api.create.c16%s ops_per_s=%.1f p50_ms=%.3f p99_ms=%.3f cpu_us_per_op=%.0f",
           suffix, ops, pct_ms(lat, n, 0.50), pct_ms(lat, n, 0.99), cpu);
    if (c0 >= 0 && c1 > c0) printf(" writes_per_commit=%.1f", (w1 - w0) / (c1 - c0));
    printf("\n");
    fflush(stdout);
    free(lat);
    server_stop(&s, 1);
    return ops;
}

static void case_list(const bench_env_t *env, int print_list, int print_rss)
{
    server_t s;
    size_t n;
    int64_t elapsed;
    server_start(env, &s, 1, NULL);
    double idle_mb = server_rss_mb(&s);
    free(run_workers(env, &s, LIST_PODS, &n, &elapsed));
    double loaded_mb = server_rss_mb(&s);
    double anon_mb = (double)server_status(&s, "RssAnon:") / 1024.0;
    double file_mb = (double)server_status(&s, "RssFile:") / 1024.0;

    client_t c;
    client_init(&c, &s);
    const char *pods = "{group=\"\",version=\"v1\",resource=\"pods\"}";
    char series[160];
    snprintf(series, sizeof series, "kplane_watch_cache_objects_bytes%s", pods);
    double cache_mb = metric_value(&c, series) / (1024.0 * 1024.0); /* < 0: not reported */
    snprintf(series, sizeof series, "kplane_watch_cache_history_bytes%s", pods);
    double history_mb = metric_value(&c, series) / (1024.0 * 1024.0);
    long code = client_do(&c, POD_PATH, NULL); /* the warm-up, and the check */
    json_t *doc = code == 200 ? json_loadb(c.body.p, c.body.len, 0, NULL) : NULL;
    size_t items = json_array_size(json_object_get(doc, "items")), bytes = c.body.len;
    json_decref(doc);
    if (items != LIST_PODS)
        fail(&s, "GET %s: HTTP %ld, %zu items, want %d %s%.300s", POD_PATH, code, items, LIST_PODS,
             c.err, buf_str(&c.body));
    /* The scheduler may still be writing the pods' PodScheduled=False
     * (there are no nodes): the bodies grow by a condition per pod (up to
     * 2% in all) while the lists run. Each timed list must hold every pod
     * (checked untimed). */
    int64_t t[LIST_RUNS];
    for (int i = 0; i < LIST_RUNS; i++) {
        int64_t t0 = now_ns();
        code = client_do(&c, POD_PATH, NULL);
        t[i] = now_ns() - t0;
        doc = code == 200 ? json_loadb(c.body.p, c.body.len, 0, NULL) : NULL;
        items = json_array_size(json_object_get(doc, "items"));
        json_decref(doc);
        if (items != LIST_PODS)
            fail(&s, "GET %s: HTTP %ld, %zu bytes, %zu items, want %d %s", POD_PATH, code,
                 c.body.len, items, LIST_PODS, c.err);
    }
    client_free(&c);
    qsort(t, LIST_RUNS, sizeof t[0], cmp_i64);
    if (print_list) printf("BENCH api.list.10k ms=%.3f bytes=%zu\n", t[LIST_RUNS / 2] / 1e6, bytes);
    if (print_rss)
        printf("BENCH server.rss idle_mb=%.1f loaded_mb=%.1f anon_mb=%.1f file_mb=%.1f "
               "kb_per_pod=%.1f pods_cache_mb=%.1f pods_history_mb=%.1f\n",
               idle_mb, loaded_mb, anon_mb, file_mb, (loaded_mb - idle_mb) * 1024 / LIST_PODS,
               cache_mb, history_mb);
    fflush(stdout);
    server_stop(&s, 1);
}

/* ---- api.watch.1000: WATCH_THREADS readers, each a curl multi over epoll ---- */

typedef struct watch_group watch_group_t;

typedef struct watch_conn {
    CURL *h;
    watch_group_t *g;
    long code;                  /* from the status line */
    buf_t line;                 /* the event line being read */
    int64_t recv[WATCH_EVENTS]; /* receipt ns per ConfigMap wcm-N; 0: not yet */
    int nrecv;
    char err[512];
} watch_conn_t;

struct watch_group {
    watch_conn_t *conns;
    int n, ep; /* ep: epoll over the group's sockets */
    CURLM *multi;
    int64_t timer_ns;     /* when curl wants CURL_SOCKET_TIMEOUT; -1: no timer */
    atomic_int *counters; /* [0] 200s seen, [1] events delivered, [2] stop */
    char err[2048];
};

static size_t on_watch_header(char *data, size_t size, size_t n, void *arg)
{
    watch_conn_t *wc = arg;
    size_t len = size * n;
    const char *sp = len > 5 && !strncmp(data, "HTTP/", 5) ? memchr(data, ' ', len) : NULL;
    if (sp)
        wc->code = strtol(sp, NULL, 10);            /* the line ends in CRLF: strtol stops there */
    else if (len <= 2 && wc->code == 200) /* the blank line ending the headers */
        atomic_fetch_add(&wc->g->counters[0], 1);
    return len;
}

/* N for an ADDED event of ConfigMap wcm-N; -2 for an event about a
 * ConfigMap the bench did not write (the server's own kube-root-ca.crt, as
 * any Kubernetes namespace has); else -1. Parsing every line with jansson
 * cost a tenth of this 2-CPU machine, so the shape kplane sends is matched
 * by prefix ("metadata":{"name":"wcm- can only be the object's own name:
 * the data values are letters only); any other goes to jansson. */
static long event_index(const char *line, size_t len)
{
    static const char head[] = "{\"type\":\"ADDED\",\"object\":{";
    static const char key[] = "\"metadata\":{\"name\":\"wcm-";
    const char *name = NULL;
    json_t *ev = NULL;
    if (len > sizeof head && !memcmp(line, head, sizeof head - 1))
        name = memmem(line, len, key, sizeof key - 1);
    if (name) {
        name += sizeof key - 1 - 4;
    } else if ((ev = json_loadb(line, len, 0, NULL))) {
        json_t *meta = json_object_get(json_object_get(ev, "object"), "metadata");
        const char *type = json_string_value(json_object_get(ev, "type"));
        const char *other = json_string_value(json_object_get(meta, "name"));
        if (type && strcmp(type, "ERROR") && other && strncmp(other, "wcm-", 4)) {
            json_decref(ev);
            return -2;
        }
        if (type && !strcmp(type, "ADDED")) name = other;
    }
    char *end = NULL;
    long idx = name && !strncmp(name, "wcm-", 4) ? strtol(name + 4, &end, 10) : -1;
    if (idx >= WATCH_EVENTS || end == name + 4 || (end && *end && *end != '"')) idx = -1;
    json_decref(ev);
    return idx;
}

static size_t on_watch_body(char *data, size_t size, size_t n, void *arg)
{
    int64_t t = now_ns(); /* receipt: these bytes complete the lines below */
    watch_conn_t *wc = arg;
    if (buf_add(&wc->line, data, size * n)) {
        snprintf(wc->err, sizeof wc->err, "event line over %u bytes", LINE_MAX_LEN);
        return 0;
    }
    char *p = wc->line.p, *nl;
    for (; (nl = memchr(p, '\n', wc->line.len - (size_t)(p - wc->line.p))); p = nl + 1) {
        if (nl == p) continue;
        long i = event_index(p, (size_t)(nl - p));
        if (i == -2) continue; /* not one of ours */
        if (i < 0 || wc->recv[i]) {
            snprintf(wc->err, sizeof wc->err, "%s event: %.*s", i < 0 ? "unexpected" : "repeated",
                     (int)(nl - p < 400 ? nl - p : 400), p);
            return 0;
        }
        wc->recv[i] = t;
        wc->nrecv++;
        atomic_fetch_add(&wc->g->counters[1], 1);
    }
    wc->line.len -= (size_t)(p - wc->line.p);
    memmove(wc->line.p, p, wc->line.len + 1);
    return size * n;
}

/* curl's socket callback: mirror the sockets it wants watched into epoll. */
static int on_socket(CURL *h, curl_socket_t fd, int what, void *arg, void *sockp)
{
    (void)h, (void)sockp;
    watch_group_t *g = arg;
    struct epoll_event ev = {.events = (what & CURL_POLL_IN ? EPOLLIN : 0u) |
                                       (what & CURL_POLL_OUT ? EPOLLOUT : 0u),
                             .data.fd = fd};
    if (what == CURL_POLL_REMOVE)
        epoll_ctl(g->ep, EPOLL_CTL_DEL, fd, NULL);
    else if (epoll_ctl(g->ep, EPOLL_CTL_MOD, fd, &ev) != 0)
        epoll_ctl(g->ep, EPOLL_CTL_ADD, fd, &ev);
    return 0;
}

static int on_timer(CURLM *m, long ms, void *arg)
{
    (void)m;
    ((watch_group_t *)arg)->timer_ns = ms < 0 ? -1 : now_ns() + ms * 1000000LL;
    return 0;
}

static void *watch_main(void *arg)
{
    watch_group_t *g = arg;
    struct epoll_event evs[64];
    int running, n;
    g->timer_ns = 0;
    while (!atomic_load(&g->counters[2])) {
        int64_t wait = g->timer_ns < 0 ? 20 : (g->timer_ns - now_ns()) / 1000000;
        n = epoll_wait(g->ep, evs, 64, wait < 0 ? 0 : wait > 20 ? 20 : (int)wait);
        for (int i = 0; i < n; i++) {
            uint32_t e = evs[i].events;
            int f = (e & EPOLLIN ? CURL_CSELECT_IN : 0) | (e & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                    (e & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
            curl_multi_socket_action(g->multi, evs[i].data.fd, f, &running);
        }
        if (g->timer_ns >= 0 && now_ns() >= g->timer_ns) {
            g->timer_ns = -1;
            curl_multi_socket_action(g->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        }
        CURLMsg *msg;
        while ((msg = curl_multi_info_read(g->multi, &n))) {
            void *priv = NULL;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
            const watch_conn_t *wc = priv;
            if (msg->msg != CURLMSG_DONE || g->err[0]) continue;
            snprintf(g->err, sizeof g->err, "watch %d ended: HTTP %ld, %s; %s%.300s",
                     (int)(wc - g->conns), wc->code, curl_easy_strerror(msg->data.result), wc->err,
                     buf_str(&wc->line));
            atomic_store(&g->counters[2], 1);
        }
    }
    return NULL;
}

/* Set up gs[WATCH_THREADS] over conns[WATCHERS], each stream on `url`. */
static void watch_setup(const server_t *s, watch_group_t *gs, watch_conn_t *conns,
                        struct curl_slist **hdrs, const char *url, atomic_int *counters)
{
    for (int i = 0; i < WATCH_THREADS; i++) {
        watch_group_t *g = &gs[i];
        int first = WATCHERS * i / WATCH_THREADS;
        *g = (watch_group_t){.conns = conns + first,
                             .n = WATCHERS * (i + 1) / WATCH_THREADS - first,
                             .ep = epoll_create1(EPOLL_CLOEXEC),
                             .multi = curl_multi_init(),
                             .counters = counters};
        if (g->ep < 0 || !g->multi) fail(s, "epoll_create1/curl_multi_init failed");
        curl_multi_setopt(g->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
        curl_multi_setopt(g->multi, CURLMOPT_SOCKETDATA, g);
        curl_multi_setopt(g->multi, CURLMOPT_TIMERFUNCTION, on_timer);
        curl_multi_setopt(g->multi, CURLMOPT_TIMERDATA, g);
        for (int j = 0; j < g->n; j++) {
            watch_conn_t *wc = &g->conns[j];
            *wc = (watch_conn_t){.h = easy_new(s, hdrs), .g = g, .line.max = LINE_MAX_LEN};
            if (!wc->h) fail(s, "curl: out of memory");
            curl_easy_setopt(wc->h, CURLOPT_URL, url);
            curl_easy_setopt(wc->h, CURLOPT_PRIVATE, wc);
            curl_easy_setopt(wc->h, CURLOPT_HEADERFUNCTION, on_watch_header);
            curl_easy_setopt(wc->h, CURLOPT_HEADERDATA, wc);
            curl_easy_setopt(wc->h, CURLOPT_WRITEFUNCTION, on_watch_body);
            curl_easy_setopt(wc->h, CURLOPT_WRITEDATA, wc);
            curl_multi_add_handle(g->multi, wc->h);
        }
    }
}

static void watch_free(watch_group_t *gs)
{
    for (int i = 0; i < WATCH_THREADS; i++) {
        for (int j = 0; j < gs[i].n; j++) {
            curl_multi_remove_handle(gs[i].multi, gs[i].conns[j].h);
            curl_easy_cleanup(gs[i].conns[j].h);
            free(gs[i].conns[j].line.p);
        }
        curl_multi_cleanup(gs[i].multi);
        close(gs[i].ep);
    }
}

/* The writer: WATCH_EVENTS ConfigMaps at the pace, sent[i] just before each
 * POST. Returns 0, or -1 with `why` set. */
static int watch_write(const bench_env_t *env, client_t *c, const atomic_int *stop, int64_t *sent,
                       char *why, size_t cap)
{
    char body[PAYLOAD_BYTES + 512], name[32];
    int64_t start = now_ns();
    for (int i = 0; i < WATCH_EVENTS && !atomic_load(stop); i++) {
        sleep_ns(start + i * WATCH_PACE_MS * 1000000LL - now_ns());
        snprintf(name, sizeof name, "wcm-%d", i);
        cm_json(body, sizeof body, name, env->payload);
        sent[i] = now_ns();
        long code = client_do(c, CM_PATH, body);
        if (code != 201) {
            snprintf(why, cap, "POST %s (%s): HTTP %ld %s%.500s", CM_PATH, name, code, c->err,
                     buf_str(&c->body));
            return -1;
        }
    }
    return 0;
}

static void case_watch(const bench_env_t *env)
{
    server_t s;
    server_start(env, &s, 1, NULL);
    client_t c;
    client_init(&c, &s);
    long code = client_do(&c, CM_PATH, NULL);
    json_t *doc = code == 200 ? json_loadb(c.body.p, c.body.len, 0, NULL) : NULL;
    const char *rv =
        json_string_value(json_object_get(json_object_get(doc, "metadata"), "resourceVersion"));
    if (!rv) fail(&s, "GET %s: HTTP %ld %s%.500s", CM_PATH, code, c.err, buf_str(&c.body));
    char url[256], why[768] = "";
    snprintf(url, sizeof url, "%s%s?watch=1&resourceVersion=%s", s.url, CM_PATH, rv);
    json_decref(doc);

    atomic_int counters[3] = {0, 0, 0}; /* 200s seen, events delivered, stop */
    watch_conn_t *conns = calloc(WATCHERS, sizeof *conns);
    int64_t *lat = malloc((size_t)WATCHERS * WATCH_EVENTS * sizeof *lat);
    int64_t sent[WATCH_EVENTS];
    struct curl_slist *hdrs = NULL;
    if (!conns || !lat) fail(&s, "out of memory");
    watch_group_t gs[WATCH_THREADS];
    pthread_t th[WATCH_THREADS];
    watch_setup(&s, gs, conns, &hdrs, url, counters);
    for (int i = 0; i < WATCH_THREADS; i++)
        if (pthread_create(&th[i], NULL, watch_main, &gs[i])) fail(&s, "pthread_create");

    /* The server registers a watch before sending its 200 headers; the pause
     * lets every stream's server thread settle into waiting for events. */
    int64_t t0 = now_ns();
    while (atomic_load(&counters[0]) < WATCHERS && !atomic_load(&counters[2]) &&
           now_ns() - t0 < 60 * SEC)
        sleep_ns(10000000);
    if (atomic_load(&counters[0]) < WATCHERS && !atomic_load(&counters[2])) /* else gs[].err */
        snprintf(why, sizeof why, "%d of %d watches got 200 headers in %.1f s",
                 atomic_load(&counters[0]), WATCHERS, (now_ns() - t0) / 1e9);
    sleep_ns(200000000);
    if (!why[0]) watch_write(env, &c, &counters[2], sent, why, sizeof why);
    int64_t last = now_ns();
    while (!why[0] && atomic_load(&counters[1]) < WATCHERS * WATCH_EVENTS &&
           !atomic_load(&counters[2]) && now_ns() - last < 10 * SEC)
        sleep_ns(5000000);
    atomic_store(&counters[2], 1);
    for (int i = 0; i < WATCH_THREADS; i++)
        pthread_join(th[i], NULL);
    client_free(&c);
    for (int i = 0; i < WATCH_THREADS && !why[0]; i++)
        if (gs[i].err[0]) snprintf(why, sizeof why, "%.700s", gs[i].err);

    size_t n = 0;
    int short_n = 0, first = -1, missing = -1;
    for (int i = 0; i < WATCHERS && !why[0]; i++) {
        for (int e = 0; e < WATCH_EVENTS; e++) {
            if (conns[i].recv[e])
                lat[n++] = conns[i].recv[e] - sent[e];
            else if (first < 0)
                first = i, missing = e;
        }
        short_n += conns[i].nrecv < WATCH_EVENTS;
    }
    if (first >= 0)
        snprintf(why, sizeof why,
                 "lost events: delivered %zu of %d within 10 s of the last POST; %d watches "
                 "short, e.g. watch %d got %d, the first missing is wcm-%d",
                 n, WATCHERS * WATCH_EVENTS, short_n, first, conns[first].nrecv, missing);
    watch_free(gs);
    free(conns);
    curl_slist_free_all(hdrs);
    if (why[0]) fail(&s, "api.watch.1000: %s", why);
    qsort(lat, n, sizeof *lat, cmp_i64);
    printf("BENCH api.watch.1000 p99_ms=%.3f p50_ms=%.3f delivered=%zu\n", pct_ms(lat, n, 0.99),
           pct_ms(lat, n, 0.50), n);
    fflush(stdout);
    free(lat);
    server_stop(&s, 1);
}

/* ---- api.idle.2000 ---- */

static void case_idle(const bench_env_t *env)
{
    server_t s;
    server_start(env, &s, 1, NULL);
    sleep_ns(2 * SEC); /* the components' start-up settles */
    long threads0 = server_threads(&s), socks0 = server_sockets(&s);
    double rss0 = server_rss_mb(&s);
    char url[128];
    snprintf(url, sizeof url, "%s/version", s.url);
    struct curl_slist *hdrs = NULL;
    CURL **hs = calloc(IDLE_CONNS, sizeof *hs);
    CURLM *m = curl_multi_init();
    if (!hs || !m) fail(&s, "out of memory");
    /* Every transfer is added before the first runs, so each opens its own
     * connection; the multi keeps them all open afterwards. */
    curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, (long)IDLE_CONNS * 2);
    for (int i = 0; i < IDLE_CONNS; i++) {
        if (!(hs[i] = easy_new(&s, &hdrs))) fail(&s, "curl: out of memory");
        curl_easy_setopt(hs[i], CURLOPT_URL, url);
        curl_easy_setopt(hs[i], CURLOPT_WRITEFUNCTION, on_body_discard);
        curl_easy_setopt(hs[i], CURLOPT_TIMEOUT, 60L);
        curl_multi_add_handle(m, hs[i]);
    }
    int running = 1, left, ok = 0;
    while (running) {
        if (curl_multi_perform(m, &running) != CURLM_OK) fail(&s, "curl_multi_perform failed");
        for (CURLMsg *msg; (msg = curl_multi_info_read(m, &left));) {
            long code = 0;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &code);
            if (msg->msg != CURLMSG_DONE || msg->data.result != CURLE_OK || code != 200)
                fail(&s, "api.idle.2000: GET /version: HTTP %ld, %s", code,
                     curl_easy_strerror(msg->data.result));
            ok++;
        }
        if (running) curl_multi_poll(m, NULL, 0, 100, NULL);
    }
    if (ok != IDLE_CONNS) fail(&s, "api.idle.2000: %d of %d requests answered", ok, IDLE_CONNS);
    long busy = server_threads(&s);
    sleep_ns(IDLE_SETTLE_S * SEC);
    long threads = server_threads(&s), socks = server_sockets(&s);
    double rss = server_rss_mb(&s);
    printf("BENCH api.idle.2000 conns=%ld rss_mb=%.1f threads=%ld threads_busy=%ld "
           "threads_before=%ld\n",
           socks - socks0, rss - rss0, threads, busy, threads0);
    fflush(stdout);
    for (int i = 0; i < IDLE_CONNS; i++) {
        curl_multi_remove_handle(m, hs[i]);
        curl_easy_cleanup(hs[i]);
    }
    curl_multi_cleanup(m);
    curl_slist_free_all(hdrs);
    free(hs);
    server_stop(&s, 1);
}

/* ---- main ---- */

/* A case runs if no case was named, or an argument is its name or a dotted
 * prefix of it ("api" selects every api.* case). */
static int selects(const char *arg, const char *name)
{
    size_t n = strlen(arg);
    return n > 0 && !strncmp(name, arg, n) &&
           (name[n] == '\0' || name[n] == '.' || arg[n - 1] == '.');
}

static int wanted(int argc, char **argv, const char *name)
{
    for (int i = 2; i < argc; i++)
        if (selects(argv[i], name)) return 1;
    return argc < 3;
}

int main(int argc, char **argv)
{
    static bench_env_t env;
    static const char *all[] = {"server.start",   "api.create.c16", "api.create.rbac",
                                "api.list.10k",   "server.rss",     "api.watch.1000",
                                "api.idle.2000"};
    if (argc == 2 && !strcmp(argv[1], "--cases")) { /* for scripts/bench-compare --except */
        for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
            printf("%s\n", all[j]);
        return 0;
    }
    if (argc < 2 || argv[1][0] == '-') {
        fprintf(stderr, "Usage: bench_api PATH-TO-KPLANE [CASE...] | --cases\n");
        return 2;
    }
    for (int i = 2; i < argc; i++) {
        int hit = 0;
        for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
            hit |= selects(argv[i], all[j]);
        if (!hit) {
            fprintf(stderr, "bench_api: no case matches '%s'\n", argv[i]);
            return 2;
        }
    }
    env.kplane = argv[1];
    env.seconds = 10; /* see api.create.c16 above */
    const char *sec = getenv("KP_BENCH_SECONDS");
    if (sec && *sec) {
        char *end;
        env.seconds = strtod(sec, &end);
        if (*end || !(env.seconds > 0)) {
            fprintf(stderr, "bench_api: bad KP_BENCH_SECONDS '%s'\n", sec);
            return 2;
        }
    }
    if (access(env.kplane, X_OK) != 0) fail(NULL, "%s: %s", env.kplane, strerror(errno));
    for (size_t i = 0; i < PAYLOAD_BYTES; i++)
        env.payload[i] = (char)('a' + i % 26);

    /* 2,000 idle or 1,000 watch connections here, and as many in the server (inherited). */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    atexit(reap_at_exit);
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (curl_global_init(CURL_GLOBAL_ALL) != 0) fail(NULL, "curl_global_init failed");

    const char *dir = getenv("KP_BENCH_DIR");
    int own_base = !(dir && *dir);
    snprintf(env.base, sizeof env.base, "%s", own_base ? ".bench-tmp" : dir);
    if (mkdir(env.base, 0700) != 0 && errno != EEXIST)
        fail(NULL, "%s: %s", env.base, strerror(errno));
    if (wanted(argc, argv, "server.start")) case_start(&env);
    if (wanted(argc, argv, "api.create.c16")) {
        double embedded = case_create(&env, "");
        const char *store = getenv("KP_BENCH_STORE");
        if (store && !strncmp(store, "etcd://", 7)) {
            bench_env_t on_etcd = env;
            on_etcd.store = store;
            double etcd = case_create(&on_etcd, ".etcd");
            printf("BENCH api.create.c16.ratio embedded_over_etcd=%.2f\n", embedded / etcd);
            fflush(stdout);
        }
    }
    if (wanted(argc, argv, "api.create.rbac")) {
        /* Issue 17: the same creates by a user RBAC authorizes, against
         * AlwaysAllow, side by side. */
        static const char *const rbac[] = {"--authorization-mode", "Node,RBAC", NULL};
        static const char *const allow[] = {"--authorization-mode", "AlwaysAllow", NULL};
        bench_env_t e = env;
        e.as_user = 1;
        e.extra = allow;
        double a = case_create(&e, ".alwaysallow");
        e.extra = rbac;
        double r = case_create(&e, ".rbac");
        printf("BENCH api.create.rbac rbac_over_alwaysallow=%.3f\n", r / a);
        fflush(stdout);
    }
    int list = wanted(argc, argv, "api.list.10k"), rss = wanted(argc, argv, "server.rss");
    if (list || rss) case_list(&env, list, rss);
    if (wanted(argc, argv, "api.watch.1000")) case_watch(&env);
    if (wanted(argc, argv, "api.idle.2000")) case_idle(&env);
    curl_global_cleanup();
    if (own_base) rmdir(env.base); /* only if empty: never remove what others put there */
    return 0;
}
