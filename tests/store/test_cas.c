/*
 * test_cas.c -- compare-and-swap on one key is atomic under contention.
 *
 * What it proves: 16 threads each add 1 to one counter 1,000 times (250 on
 * etcd, where each try is two HTTP round trips and the 1,000 took most of
 * the suite's time: 4,000 contended increments prove the same) with
 * store_get() -> parse -> store_update(expect_rev = mod_rev), retrying on
 * KP_ECONFLICT. If two updates could ever succeed against the same mod_rev,
 * an increment would be lost and the counter would end below 16000. Beyond
 * the final value it checks the revision rules of store.h: the successful
 * updates got exactly the revisions create+1 .. create+16000 (one per accepted
 * write, none skipped or shared), the counter's version is 16001, and the
 * history seen by a watch is exactly those 16000 PUTs in revision order, each
 * carrying the value before it (a live watch running during the writes and a
 * second one replaying the history afterwards).
 *
 * How: the data directory lives on /dev/shm when it exists, because this test
 * is about atomicity, not disk durability (test_crash covers that), and
 * tmpfs makes the 16000 fsyncs cheap. Worker threads never call cmocka's
 * asserts (not thread-safe): they record the first failure in their struct
 * and the main thread asserts after join.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/err.h"
#include "store/store.h"
#include "backend.h"
#include "testutil.h"

#define NTHREADS 16
#define NINCR_MAX 1000
#define KEY      "/registry/test/counters/default/cas"

struct worker {
    pthread_t tid;
    store_t *s;
    int nincr;                /* increments to make */
    int64_t revs[NINCR_MAX]; /* revisions of this worker's successful updates */
    long conflicts;
    char err[256]; /* first failure, "" if none */
};

struct watcher {
    pthread_t tid;
    store_watch_t *w;
    int64_t create_rev;
    long total;
    char err[256];
};

/* A directory on /dev/shm if there is one (see the top comment), else
 * tu_tmpdir(). Caller frees and removes it with tu_rmtree(). */
static char *shm_tmpdir(const char *tag)
{
    struct stat st;
    if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode)) {
        char *p = malloc(64);
        if (!p) abort();
        snprintf(p, 64, "/dev/shm/kp-%s-XXXXXX", tag);
        if (mkdtemp(p)) return p;
        free(p);
    }
    return tu_tmpdir(tag);
}

/* Parse a counter value: decimal digits only, NUL-terminated (store.h). */
static int parse_count(const store_kv_t *kv, long long *out)
{
    if (kv->value_len == 0 || kv->value_len > 20) return -1;
    long long v = 0;
    for (size_t i = 0; i < kv->value_len; i++) {
        char c = kv->value[i];
        if (c < '0' || c > '9') return -1;
        v = v * 10 + (c - '0');
    }
    if (kv->value[kv->value_len] != '\0') return -1;
    *out = v;
    return 0;
}

static void *worker_main(void *arg)
{
    struct worker *wk = arg;
    int done = 0;
    while (done < wk->nincr) {
        store_kv_t *kv = NULL;
        int rc = store_get(wk->s, KEY, 0, &kv);
        if (rc != 0) {
            snprintf(wk->err, sizeof wk->err, "store_get: %s", err_str(rc));
            return NULL;
        }
        long long v;
        if (parse_count(kv, &v) != 0) {
            snprintf(wk->err, sizeof wk->err, "bad counter value \"%.*s\"", (int)kv->value_len,
                     kv->value);
            free(kv);
            return NULL;
        }
        int64_t expect = kv->mod_rev;
        free(kv);

        char buf[32];
        int n = snprintf(buf, sizeof buf, "%lld", v + 1);
        int64_t rev = 0;
        rc = store_update(wk->s, KEY, buf, (size_t)n, expect, &rev);
        if (rc == KP_ECONFLICT) {
            /* *out_rev is the key's current mod_rev, newer than ours. */
            if (rev <= expect) {
                snprintf(wk->err, sizeof wk->err,
                         "conflict reports mod_rev %" PRId64 " <= expected %" PRId64, rev, expect);
                return NULL;
            }
            wk->conflicts++;
            continue;
        }
        if (rc != 0) {
            snprintf(wk->err, sizeof wk->err, "store_update: %s", err_str(rc));
            return NULL;
        }
        if (rev <= expect) {
            snprintf(wk->err, sizeof wk->err,
                     "update got revision %" PRId64 " <= expected %" PRId64, rev, expect);
            return NULL;
        }
        wk->revs[done++] = rev;
    }
    return NULL;
}

/* Read the `total` updates after the create from `w` and check each one:
 * a PUT of value i at revision create_rev+i with version i+1, whose prev is
 * value i-1 at the revision before. Writes the first problem into err. */
static void check_history(store_watch_t *w, int64_t create_rev, long total, char *err,
                          size_t errlen)
{
    for (long i = 1; i <= total; i++) {
        const store_event_t *ev = NULL;
        int rc = store_watch_next(w, 30000, &ev);
        if (rc != 0) {
            snprintf(err, errlen, "event %ld: store_watch_next: %s", i, err_str(rc));
            return;
        }
        long long v = -1, pv = -1;
        if (ev->type != STORE_PUT || ev->kv.key_len != strlen(KEY) ||
            memcmp(ev->kv.key, KEY, ev->kv.key_len) != 0 || ev->kv.mod_rev != create_rev + i ||
            ev->kv.create_rev != create_rev || ev->kv.version != i + 1 ||
            parse_count(&ev->kv, &v) != 0 || v != i) {
            snprintf(err, errlen,
                     "event %ld: type %d rev %" PRId64 " create %" PRId64 " version %" PRId64
                     " value \"%.*s\"; want PUT rev %" PRId64 " value %ld",
                     i, (int)ev->type, ev->kv.mod_rev, ev->kv.create_rev, ev->kv.version,
                     (int)ev->kv.value_len, ev->kv.value ? ev->kv.value : "", create_rev + i, i);
            return;
        }
        if (!ev->has_prev || parse_count(&ev->prev, &pv) != 0 || pv != i - 1 ||
            ev->prev.mod_rev != create_rev + i - 1 || ev->prev.version != i) {
            snprintf(err, errlen,
                     "event %ld (rev %" PRId64 "): has_prev %d prev rev %" PRId64
                     " value \"%.*s\"; want prev value %ld",
                     i, ev->kv.mod_rev, ev->has_prev, ev->has_prev ? ev->prev.mod_rev : 0,
                     ev->has_prev ? (int)ev->prev.value_len : 0,
                     ev->has_prev && ev->prev.value ? ev->prev.value : "", i - 1);
            return;
        }
        if (store_watch_revision(w) < ev->kv.mod_rev) {
            snprintf(err, errlen, "store_watch_revision %" PRId64 " < delivered %" PRId64,
                     store_watch_revision(w), ev->kv.mod_rev);
            return;
        }
    }
    /* Nothing else happened to the key. */
    const store_event_t *ev = NULL;
    int rc = store_watch_next(w, 100, &ev);
    if (rc != KP_ETIMEDOUT)
        snprintf(err, errlen, "after %ld events: store_watch_next: %s (want timeout)", total,
                 rc == 0 ? "an extra event" : err_str(rc));
}

static void *watcher_main(void *arg)
{
    struct watcher *wt = arg;
    check_history(wt->w, wt->create_rev, wt->total, wt->err, sizeof wt->err);
    return NULL;
}

static int cmp_rev(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void test_cas_counter(void **state)
{
    (void)state;
    const int nincr = tb_is_etcd() ? 250 : NINCR_MAX;
    const long total = (long)NTHREADS * nincr;
    char *dir = shm_tmpdir("cas");
    char *url = tb_store_url(dir);
    store_t *s = NULL;
    assert_int_equal(store_open(url, NULL, &s), 0);

    int64_t create_rev = 0;
    assert_int_equal(store_create(s, KEY, "0", 1, &create_rev), 0);
    assert_true(create_rev > 0);

    /* The live watch sees the updates while they happen. */
    struct watcher *wt = calloc(1, sizeof *wt);
    assert_non_null(wt);
    wt->create_rev = create_rev;
    wt->total = total;
    assert_int_equal(store_watch_open(s, KEY, create_rev, &wt->w), 0);
    assert_int_equal(pthread_create(&wt->tid, NULL, watcher_main, wt), 0);

    struct worker *wk = calloc(NTHREADS, sizeof *wk);
    assert_non_null(wk);
    for (int i = 0; i < NTHREADS; i++) {
        wk[i].s = s;
        wk[i].nincr = nincr;
        assert_int_equal(pthread_create(&wk[i].tid, NULL, worker_main, &wk[i]), 0);
    }
    long conflicts = 0;
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(wk[i].tid, NULL);
        conflicts += wk[i].conflicts;
    }
    /* A failed worker leaves the watcher waiting for updates that never come;
     * its 30 s timeout per event ends it. */
    pthread_join(wt->tid, NULL);
    for (int i = 0; i < NTHREADS; i++) {
        if (wk[i].err[0]) fail_msg("worker %d: %s", i, wk[i].err);
    }
    if (wt->err[0]) fail_msg("live watch: %s", wt->err);
    store_watch_close(wt->w);
    free(wt);
    print_message("%ld increments, %ld conflicts retried\n", total, conflicts);

    /* The counter. */
    store_kv_t *kv = NULL;
    assert_int_equal(store_get(s, KEY, 0, &kv), 0);
    long long v = -1;
    assert_int_equal(parse_count(kv, &v), 0);
    assert_int_equal(v, total);
    assert_int_equal(kv->version, total + 1);
    assert_int_equal(kv->create_rev, create_rev);
    assert_int_equal(kv->mod_rev, create_rev + total);
    free(kv);

    /* The revisions of the successful updates: exactly create+1 .. create+total. */
    int64_t *revs = malloc(sizeof(int64_t) * (size_t)total);
    assert_non_null(revs);
    for (int i = 0; i < NTHREADS; i++)
        memcpy(revs + (size_t)i * nincr, wk[i].revs, sizeof(int64_t) * (size_t)nincr);
    free(wk);
    qsort(revs, (size_t)total, sizeof *revs, cmp_rev);
    assert_int_equal(revs[0], create_rev + 1);
    for (long i = 1; i < total; i++) {
        if (revs[i] != revs[i - 1] + 1)
            fail_msg("revisions not contiguous: %" PRId64 " then %" PRId64, revs[i - 1], revs[i]);
    }
    free(revs);

    store_status_t st;
    assert_int_equal(store_status(s, &st), 0);
    assert_int_equal(st.revision, create_rev + total);
    assert_int_equal(st.keys, 1);

    /* The same history, replayed after the fact. */
    store_watch_t *w = NULL;
    assert_int_equal(store_watch_open(s, "", create_rev, &w), 0);
    char err[256] = "";
    check_history(w, create_rev, total, err, sizeof err);
    store_watch_close(w);
    if (err[0]) fail_msg("replayed watch: %s", err);

    store_close(s);
    tb_store_stop(dir);
    tu_rmtree(dir);
    free(url);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cas_counter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
