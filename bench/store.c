/*
 * bench/store.c -- store benchmarks; one line per case on stdout:
 *
 *   BENCH <case> <metric>=<value> ...
 *
 * What each case measures (each on a fresh store in its own data dir):
 *
 *  store.write.w1, store.write.w16, store.write.w64
 *      N writer threads each store_create() unique keys with 1 KiB values for
 *      KP_BENCH_SECONDS (default 3). Every acknowledged write is durable, so
 *      this is the group-commit path end to end. ops_per_s: acknowledged writes
 *      per second; p50_ms/p99_ms: latency of one store_create(); fsyncs_per_1k:
 *      device flushes per 1000 acknowledged writes (see "Counting flushes").
 *  store.range.10k
 *      10,000 keys with ~1 KiB values under one prefix (plus a few keys on
 *      either side of it); ms: median of 20 store_range() calls returning the
 *      whole prefix at the newest revision (freeing the result not included).
 *  store.watch
 *      One watcher on a prefix, 4 writers store_create()ing under it for the
 *      duration. Latency is from a write's acknowledgement (clock read right
 *      after store_create() returns) to the watcher receiving that revision,
 *      negatives clamped to 0. p50_ms, p99_ms over all writes; events: number
 *      of events delivered.
 *
 * Counting flushes: this executable defines fdatasync, fsync, msync and the
 * pwrite/pwritev/writev family and forwards them to the libc versions found
 * with dlsym(RTLD_NEXT, ...). Because the executable's definitions come first
 * in symbol lookup, LMDB's calls land here (link-time interposition). A flush
 * is a call to fdatasync/fsync, an msync with MS_SYNC, or a write call on a
 * descriptor whose status flags carry O_DSYNC (O_SYNC includes it on Linux):
 * LMDB writes its meta page through such a descriptor, and that write is a
 * device flush of its own.
 *
 * Data dirs live under $KP_BENCH_DIR, else ./.bench-tmp -- never /tmp, which
 * may be a tmpfs where fsync costs nothing. Each is removed after its case
 * (a case that fails leaves its dir behind, for inspection).
 *
 * Usage: bench_store [CASE...]  (a case name or a dotted prefix such as
 *        store.write; no argument: every case)
 */
#include "lib/clock.h"
#include "lib/err.h"
#include "store/store.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define VALUE_BYTES   1024
#define RANGE_KEYS    10000
#define RANGE_RUNS    20
#define WATCH_WRITERS 4
#define FILL_THREADS  16

/* ---- flush counting (interposition; globals are unavoidable here) ---- */

static atomic_uint_fast64_t g_flushes;
static pthread_once_t g_real_once = PTHREAD_ONCE_INIT;
static struct {
    int (*fsync)(int);
    int (*fdatasync)(int);
    int (*msync)(void *, size_t, int);
    ssize_t (*pwrite)(int, const void *, size_t, off_t);
    ssize_t (*pwrite64)(int, const void *, size_t, off64_t);
    ssize_t (*pwritev)(int, const struct iovec *, int, off_t);
    ssize_t (*pwritev64)(int, const struct iovec *, int, off64_t);
    ssize_t (*writev)(int, const struct iovec *, int);
} g_real;

static void *real_sym(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) {
        static const char msg[] = "bench_store: dlsym failed\n";
        if (write(2, msg, sizeof msg - 1) < 0) abort();
        abort();
    }
    return p;
}

static void resolve_real(void)
{
    g_real.fsync = (int (*)(int))real_sym("fsync");
    g_real.fdatasync = (int (*)(int))real_sym("fdatasync");
    g_real.msync = (int (*)(void *, size_t, int))real_sym("msync");
    g_real.pwrite = (ssize_t(*)(int, const void *, size_t, off_t))real_sym("pwrite");
    g_real.pwrite64 = (ssize_t(*)(int, const void *, size_t, off64_t))real_sym("pwrite64");
    g_real.pwritev = (ssize_t(*)(int, const struct iovec *, int, off_t))real_sym("pwritev");
    g_real.pwritev64 = (ssize_t(*)(int, const struct iovec *, int, off64_t))real_sym("pwritev64");
    g_real.writev = (ssize_t(*)(int, const struct iovec *, int))real_sym("writev");
}

static void count_flush(void)
{
    atomic_fetch_add_explicit(&g_flushes, 1, memory_order_relaxed);
}

static void count_if_sync_fd(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl != -1 && (fl & (O_DSYNC | O_SYNC))) count_flush();
}

int fsync(int fd)
{
    pthread_once(&g_real_once, resolve_real);
    count_flush();
    return g_real.fsync(fd);
}

int fdatasync(int fd)
{
    pthread_once(&g_real_once, resolve_real);
    count_flush();
    return g_real.fdatasync(fd);
}

int msync(void *addr, size_t len, int flags)
{
    pthread_once(&g_real_once, resolve_real);
    if (flags & MS_SYNC) count_flush();
    return g_real.msync(addr, len, flags);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    pthread_once(&g_real_once, resolve_real);
    count_if_sync_fd(fd);
    return g_real.pwrite(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
    pthread_once(&g_real_once, resolve_real);
    count_if_sync_fd(fd);
    return g_real.pwrite64(fd, buf, n, off);
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    pthread_once(&g_real_once, resolve_real);
    count_if_sync_fd(fd);
    return g_real.pwritev(fd, iov, cnt, off);
}

ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
    pthread_once(&g_real_once, resolve_real);
    count_if_sync_fd(fd);
    return g_real.pwritev64(fd, iov, cnt, off);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    pthread_once(&g_real_once, resolve_real);
    count_if_sync_fd(fd);
    return g_real.writev(fd, iov, cnt);
}

static uint64_t flushes_now(void)
{
    return atomic_load(&g_flushes);
}

/* ---- helpers ---- */

static void die(const char *what, int rc)
{
    fprintf(stderr, "bench_store: %s: %s\n", what, rc ? err_str(rc) : strerror(errno));
    exit(1);
}

/* A growable array of int64 pairs (a, b). */
typedef struct vec {
    int64_t *v;
    size_t n, cap; /* in pairs */
} vec_t;

static void vec_push(vec_t *x, int64_t a, int64_t b)
{
    if (x->n == x->cap) {
        x->cap = x->cap ? x->cap * 2 : 4096;
        x->v = realloc(x->v, x->cap * 2 * sizeof *x->v);
        if (!x->v) die("realloc", KP_ENOMEM);
    }
    x->v[2 * x->n] = a;
    x->v[2 * x->n + 1] = b;
    x->n++;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted `v` (n > 0), in milliseconds. */
static double pct_ms(const int64_t *v, size_t n, double q)
{
    double r = q * (double)n;
    size_t i = (size_t)r;
    if ((double)i < r) i++; /* ceil without libm */
    if (i > 0) i--;
    if (i >= n) i = n - 1;
    return (double)v[i] / 1e6;
}

typedef struct bench_env {
    char base[PATH_MAX];
    double seconds;
    char value[VALUE_BYTES];
} bench_env_t;

typedef struct bench_dir {
    char path[PATH_MAX];
    char url[PATH_MAX + 16];
} bench_dir_t;

static void dir_make(const bench_env_t *env, bench_dir_t *d)
{
    int n = snprintf(d->path, sizeof d->path, "%s/store-XXXXXX", env->base);
    if (n < 0 || (size_t)n >= sizeof d->path) die("data dir path too long", KP_EINVAL);
    if (!mkdtemp(d->path)) die(d->path, 0);
    n = snprintf(d->url, sizeof d->url, "lmdb:%s/store", d->path);
    if (n < 0 || (size_t)n >= sizeof d->url) die("data dir path too long", KP_EINVAL);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    if (remove(path) != 0) fprintf(stderr, "bench_store: remove %s: %s\n", path, strerror(errno));
    return 0;
}

static void dir_remove(const bench_dir_t *d)
{
    nftw(d->path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static store_t *open_fresh(const bench_env_t *env, bench_dir_t *d)
{
    dir_make(env, d);
    store_t *s = NULL;
    int rc = store_open(d->url, NULL, &s);
    if (rc) die(d->url, rc);
    return s;
}

/* ---- writers (shared by write, range fill and watch) ---- */

typedef struct writer {
    store_t *s;
    const bench_env_t *env;
    const char *prefix;
    int id;
    pthread_barrier_t *start;
    const int64_t *deadline_ns; /* written before the barrier, read after */
    uint64_t count;             /* fill mode: this many keys, no deadline */
    uint64_t first;             /* fill mode: first key number */
    int record_acks;            /* watch mode: record (rev, ack time) */
    vec_t lat;                  /* (latency ns, 0) per write */
    vec_t acks;                 /* (rev, ack ns) per write, watch mode */
    uint64_t ops;
    int rc;
} writer_t;

static void *writer_main(void *arg)
{
    writer_t *w = arg;
    char key[STORE_KEY_MAX + 1];
    if (w->start) pthread_barrier_wait(w->start);
    for (uint64_t i = 0;; i++) {
        if (w->count) {
            if (i == w->count) break;
            snprintf(key, sizeof key, "%s%08" PRIu64, w->prefix, w->first + i);
        } else {
            snprintf(key, sizeof key, "%st%02d/%010" PRIu64, w->prefix, w->id, i);
        }
        int64_t rev = 0;
        int64_t t0 = clock_mono_ns();
        int rc = store_create(w->s, key, w->env->value, VALUE_BYTES, &rev);
        int64_t t1 = clock_mono_ns();
        if (rc) {
            w->rc = rc;
            break;
        }
        w->ops++;
        if (!w->count) vec_push(&w->lat, t1 - t0, 0);
        if (w->record_acks) vec_push(&w->acks, rev, t1);
        if (!w->count && t1 >= *w->deadline_ns) break;
    }
    return NULL;
}

/* Run `n` writers until the deadline; returns elapsed ns. */
static int64_t run_writers(writer_t *ws, int n, double seconds)
{
    pthread_t th[64];
    pthread_barrier_t start;
    int64_t deadline = 0;
    pthread_barrier_init(&start, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; i++) {
        ws[i].start = &start;
        ws[i].deadline_ns = &deadline;
        if (pthread_create(&th[i], NULL, writer_main, &ws[i])) die("pthread_create", 0);
    }
    int64_t t0 = clock_mono_ns();
    deadline = t0 + (int64_t)(seconds * 1e9);
    pthread_barrier_wait(&start);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    int64_t t1 = clock_mono_ns();
    pthread_barrier_destroy(&start);
    for (int i = 0; i < n; i++)
        if (ws[i].rc) die("store_create", ws[i].rc);
    return t1 - t0;
}

/* ---- cases ---- */

static void case_write(const bench_env_t *env, const char *name, int nthreads)
{
    bench_dir_t d;
    store_t *s = open_fresh(env, &d);
    writer_t ws[64];
    memset(ws, 0, sizeof ws);
    for (int i = 0; i < nthreads; i++) {
        ws[i].s = s;
        ws[i].env = env;
        ws[i].prefix = "/bench/write/";
        ws[i].id = i;
    }
    uint64_t f0 = flushes_now();
    int64_t elapsed = run_writers(ws, nthreads, env->seconds);
    uint64_t f1 = flushes_now();

    uint64_t ops = 0;
    size_t nlat = 0;
    for (int i = 0; i < nthreads; i++)
        ops += ws[i].ops;
    int64_t *lat = malloc((ops ? ops : 1) * sizeof *lat);
    if (!lat) die("malloc", KP_ENOMEM);
    for (int i = 0; i < nthreads; i++) {
        for (size_t j = 0; j < ws[i].lat.n; j++)
            lat[nlat++] = ws[i].lat.v[2 * j];
        free(ws[i].lat.v);
    }
    qsort(lat, nlat, sizeof *lat, cmp_i64);
    if (nlat == 0) die("no writes completed", KP_EIO);

    printf("BENCH %s ops_per_s=%.1f p50_ms=%.3f p99_ms=%.3f fsyncs_per_1k=%.1f\n", name,
           (double)ops / ((double)elapsed / 1e9), pct_ms(lat, nlat, 0.50), pct_ms(lat, nlat, 0.99),
           (double)(f1 - f0) * 1000.0 / (double)ops);
    fflush(stdout);
    free(lat);
    store_close(s);
    dir_remove(&d);
}

/* Create `count` keys "<prefix><8-digit number>" with FILL_THREADS writers
 * (group commit makes this fast even though every write is synced). */
static void fill(store_t *s, const bench_env_t *env, const char *prefix, uint64_t count)
{
    writer_t ws[FILL_THREADS];
    pthread_t th[FILL_THREADS];
    memset(ws, 0, sizeof ws);
    uint64_t per = (count + FILL_THREADS - 1) / FILL_THREADS;
    int n = 0;
    for (uint64_t first = 0; first < count; first += per, n++) {
        ws[n].s = s;
        ws[n].env = env;
        ws[n].prefix = prefix;
        ws[n].first = first;
        ws[n].count = first + per <= count ? per : count - first;
        if (pthread_create(&th[n], NULL, writer_main, &ws[n])) die("pthread_create", 0);
    }
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        if (ws[i].rc) die("fill: store_create", ws[i].rc);
    }
}

static void case_range(const bench_env_t *env)
{
    bench_dir_t d;
    store_t *s = open_fresh(env, &d);
    /* Neighbours on both sides, so the range has to find its bounds. */
    fill(s, env, "/bench/a/", 100);
    fill(s, env, "/bench/range/", RANGE_KEYS);
    fill(s, env, "/bench/z/", 100);

    int64_t t[RANGE_RUNS];
    for (int i = 0; i < RANGE_RUNS; i++) {
        store_range_t *r = NULL;
        int64_t t0 = clock_mono_ns();
        int rc = store_range(s, "/bench/range/", NULL, 0, 0, &r);
        t[i] = clock_mono_ns() - t0;
        if (rc) die("store_range", rc);
        if (r->count != RANGE_KEYS || r->more) {
            fprintf(stderr, "bench_store: store_range returned %zu keys (more=%d), want %d\n",
                    r->count, r->more, RANGE_KEYS);
            exit(1);
        }
        store_range_free(r);
    }
    qsort(t, RANGE_RUNS, sizeof t[0], cmp_i64);
    double med = (double)(t[RANGE_RUNS / 2 - 1] + t[RANGE_RUNS / 2]) / 2e6;
    printf("BENCH store.range.10k ms=%.3f\n", med);
    fflush(stdout);
    store_close(s);
    dir_remove(&d);
}

typedef struct watcher {
    store_watch_t *w;
    _Atomic int64_t target; /* stop once this revision has arrived */
    vec_t got;              /* (rev, receive ns) */
    int rc;
} watcher_t;

static void *watcher_main(void *arg)
{
    watcher_t *wt = arg;
    int64_t last = 0;
    for (;;) {
        const store_event_t *ev;
        int rc = store_watch_next(wt->w, 100, &ev);
        if (rc == KP_ETIMEDOUT) {
            if (last >= atomic_load(&wt->target)) break;
            continue;
        }
        if (rc) {
            wt->rc = rc;
            break;
        }
        int64_t now = clock_mono_ns();
        last = ev->kv.mod_rev;
        vec_push(&wt->got, last, now);
        if (last >= atomic_load(&wt->target)) break;
    }
    return NULL;
}

static void case_watch(const bench_env_t *env)
{
    bench_dir_t d;
    store_t *s = open_fresh(env, &d);
    watcher_t wt;
    memset(&wt, 0, sizeof wt);
    atomic_store(&wt.target, INT64_MAX);
    int rc = store_watch_open(s, "/bench/watch/", -1, &wt.w);
    if (rc) die("store_watch_open", rc);
    pthread_t wth;
    if (pthread_create(&wth, NULL, watcher_main, &wt)) die("pthread_create", 0);

    writer_t ws[WATCH_WRITERS];
    memset(ws, 0, sizeof ws);
    for (int i = 0; i < WATCH_WRITERS; i++) {
        ws[i].s = s;
        ws[i].env = env;
        ws[i].prefix = "/bench/watch/";
        ws[i].id = i;
        ws[i].record_acks = 1;
    }
    run_writers(ws, WATCH_WRITERS, env->seconds);

    int64_t lo = INT64_MAX, hi = 0;
    size_t nacks = 0;
    for (int i = 0; i < WATCH_WRITERS; i++) {
        for (size_t j = 0; j < ws[i].acks.n; j++) {
            int64_t rev = ws[i].acks.v[2 * j];
            if (rev < lo) lo = rev;
            if (rev > hi) hi = rev;
        }
        nacks += ws[i].acks.n;
    }
    if (nacks == 0) die("no writes completed", KP_EIO);
    atomic_store(&wt.target, hi);
    pthread_join(wth, NULL);
    if (wt.rc) die("store_watch_next", wt.rc);

    /* Receive time per revision; 0: never received. */
    size_t span = (size_t)(hi - lo + 1);
    int64_t *recv = calloc(span, sizeof *recv);
    int64_t *lat = malloc(nacks * sizeof *lat);
    if (!recv || !lat) die("malloc", KP_ENOMEM);
    for (size_t j = 0; j < wt.got.n; j++) {
        int64_t rev = wt.got.v[2 * j];
        if (rev >= lo && rev <= hi) recv[rev - lo] = wt.got.v[2 * j + 1];
    }
    size_t n = 0, missing = 0;
    for (int i = 0; i < WATCH_WRITERS; i++) {
        for (size_t j = 0; j < ws[i].acks.n; j++) {
            int64_t rev = ws[i].acks.v[2 * j], ack = ws[i].acks.v[2 * j + 1];
            if (!recv[rev - lo]) {
                missing++;
                continue;
            }
            int64_t l = recv[rev - lo] - ack;
            lat[n++] = l < 0 ? 0 : l;
        }
        free(ws[i].acks.v);
        free(ws[i].lat.v);
    }
    if (missing) {
        fprintf(stderr, "bench_store: watch missed %zu of %zu acknowledged writes\n", missing,
                nacks);
        exit(1);
    }
    qsort(lat, n, sizeof *lat, cmp_i64);
    printf("BENCH store.watch p99_ms=%.3f p50_ms=%.3f events=%zu\n", pct_ms(lat, n, 0.99),
           pct_ms(lat, n, 0.50), wt.got.n);
    fflush(stdout);
    free(recv);
    free(lat);
    free(wt.got.v);
    store_watch_close(wt.w);
    store_close(s);
    dir_remove(&d);
}

/* ---- main ---- */

/* A case runs if no argument was given, or an argument is its name or a
 * dotted prefix of it ("store.write" selects every write case). */
static int selects(const char *arg, const char *name)
{
    size_t n = strlen(arg);
    return n > 0 && !strncmp(name, arg, n) &&
           (name[n] == '\0' || name[n] == '.' || arg[n - 1] == '.');
}

static int wanted(int argc, char **argv, const char *name)
{
    if (argc < 2) return 1;
    for (int i = 1; i < argc; i++)
        if (selects(argv[i], name)) return 1;
    return 0;
}

int main(int argc, char **argv)
{
    static bench_env_t env;
    env.seconds = 3;
    const char *sec = getenv("KP_BENCH_SECONDS");
    if (sec && *sec) {
        char *end;
        env.seconds = strtod(sec, &end);
        if (*end || !(env.seconds > 0)) {
            fprintf(stderr, "bench_store: bad KP_BENCH_SECONDS '%s'\n", sec);
            return 2;
        }
    }
    for (size_t i = 0; i < VALUE_BYTES; i++)
        env.value[i] = (char)('a' + i % 26);

    static const struct {
        const char *name;
        int threads;
    } writes[] = {{"store.write.w1", 1}, {"store.write.w16", 16}, {"store.write.w64", 64}};
    static const char *all[] = {"store.write.w1", "store.write.w16", "store.write.w64",
                                "store.range.10k", "store.watch"};
    for (int i = 1; i < argc; i++) {
        int hit = 0;
        for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
            hit |= selects(argv[i], all[j]);
        if (!hit) {
            fprintf(stderr, "bench_store: no case matches '%s'\n", argv[i]);
            return 2;
        }
    }
    const char *dir = getenv("KP_BENCH_DIR");
    int own_base = !(dir && *dir);
    snprintf(env.base, sizeof env.base, "%s", own_base ? ".bench-tmp" : dir);
    if (mkdir(env.base, 0700) != 0 && errno != EEXIST) die(env.base, 0);
    for (size_t i = 0; i < sizeof writes / sizeof writes[0]; i++)
        if (wanted(argc, argv, writes[i].name)) case_write(&env, writes[i].name, writes[i].threads);
    if (wanted(argc, argv, "store.range.10k")) case_range(&env);
    if (wanted(argc, argv, "store.watch")) case_watch(&env);

    if (own_base) rmdir(env.base); /* only if empty: never remove what others put there */
    return 0;
}
