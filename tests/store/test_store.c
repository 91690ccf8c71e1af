/*
 * test_store.c -- the store contract of store.h, point by point, on the
 * embedded backend (and on etcd as test_store_etcd, see backend.h):
 * revisions, create/update/delete with CAS, reads at a
 * revision, ranges with continuation, watches (order, previous values,
 * resumption across a reopen, COMPACTED, no reads for writes elsewhere), compaction by hand and automatic,
 * group commit, argument limits.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/err.h"
#include "store/store.h"
#include "backend.h"
#include "testutil.h"

typedef struct fixture {
    char *dir;
    char *url;
    store_t *s;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    f->dir = tu_tmpdir("store");
    f->url = tb_store_url(f->dir);
    assert_int_equal(store_open(f->url, NULL, &f->s), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    store_close(f->s);
    tb_store_stop(f->dir);
    tu_rmtree(f->dir);
    free(f->url);
    free(f->dir);
    free(f);
    return 0;
}

static void reopen(fixture_t *f, const store_options_t *opt)
{
    store_close(f->s);
    f->s = NULL;
    assert_int_equal(store_open(f->url, opt, &f->s), 0);
}

static int64_t put(store_t *s, const char *key, const char *val)
{
    int64_t rev = 0;
    store_kv_t *kv;
    int rc = store_get(s, key, 0, &kv);
    if (rc == KP_ENOTFOUND) {
        assert_int_equal(store_create(s, key, val, strlen(val), &rev), 0);
    } else {
        assert_int_equal(rc, 0);
        assert_int_equal(store_update(s, key, val, strlen(val), kv->mod_rev, &rev), 0);
        free(kv);
    }
    return rev;
}

static int64_t revision(store_t *s)
{
    store_status_t st;
    assert_int_equal(store_status(s, &st), 0);
    return st.revision;
}

static void expect_kv(store_t *s, const char *key, int64_t rev, const char *val)
{
    store_kv_t *kv = NULL;
    assert_int_equal(store_get(s, key, rev, &kv), 0);
    assert_string_equal(kv->key, key);
    assert_int_equal(kv->value_len, strlen(val));
    assert_string_equal(kv->value, val);
    free(kv);
}

static void test_crud_and_revisions(void **state)
{
    store_t *s = ((fixture_t *)*state)->s;
    int64_t rev = -1;
    store_kv_t *kv;

    assert_int_equal(revision(s), 0);
    assert_int_equal(store_create(s, "/a", "1", 1, &rev), 0);
    assert_int_equal(rev, 1);
    assert_int_equal(store_create(s, "/a", "x", 1, &rev), KP_EEXIST);
    assert_int_equal(store_update(s, "/a", "2", 1, 1, &rev), 0);
    assert_int_equal(rev, 2);
    /* A stale expected revision: CONFLICT, and the current mod_rev comes back. */
    rev = 0;
    assert_int_equal(store_update(s, "/a", "3", 1, 1, &rev), KP_ECONFLICT);
    assert_int_equal(rev, 2);
    assert_int_equal(store_update(s, "/a", "3", 1, 0, &rev), 0); /* 0: any */
    assert_int_equal(rev, 3);

    assert_int_equal(store_get(s, "/a", 0, &kv), 0);
    assert_string_equal(kv->value, "3");
    assert_int_equal(kv->create_rev, 1);
    assert_int_equal(kv->mod_rev, 3);
    assert_int_equal(kv->version, 3);
    free(kv);

    assert_int_equal(store_delete(s, "/a", 2, &rev), KP_ECONFLICT);
    assert_int_equal(rev, 3);
    assert_int_equal(store_delete(s, "/a", 3, &rev), 0);
    assert_int_equal(rev, 4);
    assert_int_equal(store_get(s, "/a", 0, &kv), KP_ENOTFOUND);
    assert_null(kv);
    assert_int_equal(store_update(s, "/a", "x", 1, 0, NULL), KP_ENOTFOUND);
    assert_int_equal(store_delete(s, "/a", 0, NULL), KP_ENOTFOUND);

    /* Recreated: a new life with a new create_rev and version 1. */
    assert_int_equal(store_create(s, "/a", "4", 1, &rev), 0);
    assert_int_equal(rev, 5);
    assert_int_equal(store_get(s, "/a", 0, &kv), 0);
    assert_int_equal(kv->create_rev, 5);
    assert_int_equal(kv->version, 1);
    free(kv);

    /* Failed writes consumed no revision. */
    assert_int_equal(revision(s), 5);

    /* Empty values are values. */
    assert_int_equal(store_create(s, "/empty", "", 0, &rev), 0);
    assert_int_equal(store_get(s, "/empty", 0, &kv), 0);
    assert_int_equal(kv->value_len, 0);
    assert_string_equal(kv->value, "");
    free(kv);

    /* A store that takes writes is healthy (for etcd: a revision read). */
    char why[128];
    assert_int_equal(store_health(s, why, sizeof why), 0);
    assert_string_equal(why, "ok");
    assert_int_equal(store_health(s, NULL, 0), 0);
}

static void test_limits(void **state)
{
    store_t *s = ((fixture_t *)*state)->s;
    char key[STORE_KEY_MAX + 2];
    memset(key, 'k', sizeof key);
    key[0] = '/';
    key[STORE_KEY_MAX + 1] = '\0';
    assert_int_equal(store_create(s, key, "v", 1, NULL), KP_EINVAL); /* one byte too long */
    key[STORE_KEY_MAX] = '\0';
    assert_int_equal(store_create(s, key, "v", 1, NULL), 0); /* exactly the limit */
    expect_kv(s, key, 0, "v");

    assert_int_equal(store_create(s, "", "v", 1, NULL), KP_EINVAL);
    assert_int_equal(store_create(s, NULL, "v", 1, NULL), KP_EINVAL);
    assert_int_equal(store_update(s, key, "v", 1, -1, NULL), KP_EINVAL);

    size_t big = STORE_VALUE_MAX;
    char *v = malloc(big + 1);
    memset(v, 'x', big + 1);
    assert_int_equal(store_create(s, "/big", v, big + 1, NULL), KP_ETOOLARGE);
    assert_int_equal(store_create(s, "/big", v, big, NULL), 0);
    store_kv_t *kv;
    assert_int_equal(store_get(s, "/big", 0, &kv), 0);
    assert_int_equal(kv->value_len, big);
    assert_memory_equal(kv->value, v, big);
    free(kv);
    free(v);
    assert_int_equal(revision(s), 2);

    assert_int_equal(store_open("nosuch:/x", NULL, &(store_t *){NULL}), KP_EINVAL);
    assert_int_equal(store_get(s, "/a", -1, &kv), KP_EINVAL);
    assert_int_equal(store_get(s, "/a", 99, &kv), KP_EFUTURE);
}

static void test_get_at_revision(void **state)
{
    store_t *s = ((fixture_t *)*state)->s;
    store_kv_t *kv;
    put(s, "/k", "v1");      /* 1 */
    put(s, "/other", "o1");  /* 2 */
    put(s, "/k", "v2");      /* 3 */
    assert_int_equal(store_delete(s, "/k", 0, NULL), 0); /* 4 */
    put(s, "/k", "v3");      /* 5 */

    expect_kv(s, "/k", 1, "v1");
    expect_kv(s, "/k", 2, "v1");
    expect_kv(s, "/k", 3, "v2");
    assert_int_equal(store_get(s, "/k", 4, &kv), KP_ENOTFOUND);
    expect_kv(s, "/k", 5, "v3");
    expect_kv(s, "/k", 0, "v3");
    assert_int_equal(store_get(s, "/other", 1, &kv), KP_ENOTFOUND);

    assert_int_equal(store_get(s, "/k", 3, &kv), 0);
    assert_int_equal(kv->create_rev, 1);
    assert_int_equal(kv->mod_rev, 3);
    assert_int_equal(kv->version, 2);
    free(kv);
    assert_int_equal(store_get(s, "/k", 6, &kv), KP_EFUTURE);
}

/* Collect a whole prefix page by page, `limit` keys a page. */
static size_t range_all(store_t *s, const char *prefix, size_t limit, int64_t rev,
                        char keys[][32], char vals[][32], int64_t *out_rev)
{
    char after[64] = "";
    size_t n = 0;
    for (;;) {
        store_range_t *r;
        assert_int_equal(store_range(s, prefix, after, limit, rev, &r), 0);
        rev = r->revision;
        for (size_t i = 0; i < r->count; i++, n++) {
            snprintf(keys[n], 32, "%s", r->kvs[i].key);
            snprintf(vals[n], 32, "%s", r->kvs[i].value);
        }
        int more = r->more;
        if (r->count) snprintf(after, sizeof after, "%s", r->kvs[r->count - 1].key);
        store_range_free(r);
        if (!more) break;
        /* Writes between pages do not leak into the snapshot. */
        put(s, "/r/b05", "changed");
    }
    if (out_rev) *out_rev = rev;
    return n;
}

static void test_range(void **state)
{
    store_t *s = ((fixture_t *)*state)->s;
    char key[32], val[32];
    for (int i = 9; i >= 0; i--) { /* out of order on purpose */
        snprintf(key, sizeof key, "/r/b%02d", i);
        snprintf(val, sizeof val, "v%d", i);
        put(s, key, val);
    }
    put(s, "/r/a", "a");
    put(s, "/r", "prefix itself");
    put(s, "/rz", "outside");
    int64_t snap = revision(s);

    char keys[32][32], vals[32][32];
    int64_t rev;
    size_t n = range_all(s, "/r/", 3, 0, keys, vals, &rev);
    assert_int_equal(rev, snap);
    assert_int_equal(n, 11);
    assert_string_equal(keys[0], "/r/a");
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof key, "/r/b%02d", i);
        snprintf(val, sizeof val, "v%d", i);
        assert_string_equal(keys[i + 1], key);
        assert_string_equal(vals[i + 1], val); /* b05 as of the snapshot */
    }
    /* The pages' writes happened: b05 now reads "changed". */
    expect_kv(s, "/r/b05", 0, "changed");

    store_range_t *r;
    assert_int_equal(store_range(s, "", NULL, 0, 0, &r), 0);
    assert_int_equal(r->count, 13);
    assert_int_equal(r->more, 0);
    store_range_free(r);
    assert_int_equal(store_range(s, "/r/b", "/r/b07", 0, 0, &r), 0);
    assert_int_equal(r->count, 2);
    assert_string_equal(r->kvs[0].key, "/r/b08");
    store_range_free(r);
    assert_int_equal(store_range(s, "/nothing/", NULL, 5, 0, &r), 0);
    assert_int_equal(r->count, 0);
    assert_int_equal(r->more, 0);
    store_range_free(r);
    /* Exactly `limit` keys left: no more. */
    assert_int_equal(store_range(s, "/r/b", "/r/b07", 2, 0, &r), 0);
    assert_int_equal(r->count, 2);
    assert_int_equal(r->more, 0);
    store_range_free(r);

    /* An older revision: deleted keys come back, later ones are absent. */
    assert_int_equal(store_delete(s, "/r/a", 0, NULL), 0);
    put(s, "/r/c", "later");
    n = range_all(s, "/r/", 4, snap, keys, vals, NULL);
    assert_int_equal(n, 11);
    assert_string_equal(keys[0], "/r/a");
    assert_string_equal(keys[10], "/r/b09");
    assert_int_equal(store_range(s, "/r/", NULL, 0, revision(s) + 1, &r), KP_EFUTURE);
}

static void test_watch_order_and_prev(void **state)
{
    store_t *s = ((fixture_t *)*state)->s;
    put(s, "/w/a", "a1");                                 /* 1 */
    put(s, "/x/ignored", "x");                            /* 2 */
    put(s, "/w/a", "a2");                                 /* 3 */
    assert_int_equal(store_delete(s, "/w/a", 0, NULL), 0); /* 4 */
    put(s, "/w/b", "b1");                                 /* 5 */

    store_watch_t *w;
    const store_event_t *ev;
    assert_int_equal(store_watch_open(s, "/w/", 0, &w), 0);
    assert_int_equal(store_watch_next(w, 1000, &ev), 0);
    assert_int_equal(ev->type, STORE_PUT);
    assert_int_equal(ev->kv.mod_rev, 1);
    assert_string_equal(ev->kv.value, "a1");
    assert_int_equal(ev->has_prev, 0);

    assert_int_equal(store_watch_next(w, 1000, &ev), 0);
    assert_int_equal(ev->kv.mod_rev, 3);
    assert_int_equal(ev->kv.version, 2);
    assert_int_equal(ev->kv.create_rev, 1);
    assert_string_equal(ev->kv.value, "a2");
    assert_int_equal(ev->has_prev, 1);
    assert_string_equal(ev->prev.value, "a1");
    assert_int_equal(ev->prev.mod_rev, 1);

    assert_int_equal(store_watch_next(w, 1000, &ev), 0);
    assert_int_equal(ev->type, STORE_DELETE);
    assert_string_equal(ev->kv.key, "/w/a");
    assert_int_equal(ev->kv.mod_rev, 4);
    assert_int_equal(ev->kv.value_len, 0);
    assert_int_equal(ev->has_prev, 1);
    assert_string_equal(ev->prev.value, "a2");
    assert_int_equal(ev->prev.version, 2);

    assert_int_equal(store_watch_next(w, 1000, &ev), 0);
    assert_int_equal(ev->kv.mod_rev, 5);
    assert_int_equal(ev->has_prev, 0);

    /* Nothing more: a timeout, and the watch has read through revision 5. */
    assert_int_equal(store_watch_next(w, 50, &ev), KP_ETIMEDOUT);
    assert_int_equal(store_watch_revision(w), 5);
    put(s, "/x/ignored", "x2"); /* 6: filtered out */
    put(s, "/w/c", "c1");       /* 7 */
    assert_int_equal(store_watch_next(w, 1000, &ev), 0);
    assert_int_equal(ev->kv.mod_rev, 7);
    store_watch_close(w);

    /* From "now": only later changes. */
    assert_int_equal(store_watch_open(s, "", -1, &w), 0);
    assert_int_equal(store_watch_next(w, 0, &ev), KP_ETIMEDOUT);
    put(s, "/y", "y");
    assert_int_equal(store_watch_next(w, 1000, &ev), 0);
    assert_int_equal(ev->kv.mod_rev, 8);
    store_watch_close(w);

    assert_int_equal(store_watch_open(s, "", 9, &w), KP_EFUTURE);
}

typedef struct wake_arg {
    store_t *s;
    store_watch_t *w;
    int cancel;
} wake_arg_t;

static void *wake_later(void *p)
{
    wake_arg_t *a = p;
    usleep(100 * 1000);
    if (a->cancel) store_watch_cancel(a->w);
    else put(a->s, "/late", "v");
    return NULL;
}

static void test_watch_blocks_until_write_or_cancel(void **state)
{
    store_t *s = ((fixture_t *)*state)->s;
    store_watch_t *w;
    const store_event_t *ev;
    pthread_t t;
    assert_int_equal(store_watch_open(s, "/late", 0, &w), 0);

    wake_arg_t a = {s, w, 0};
    pthread_create(&t, NULL, wake_later, &a);
    assert_int_equal(store_watch_next(w, -1, &ev), 0); /* woken by the commit */
    assert_string_equal(ev->kv.key, "/late");
    pthread_join(t, NULL);

    a.cancel = 1;
    pthread_create(&t, NULL, wake_later, &a);
    assert_int_equal(store_watch_next(w, -1, &ev), KP_ECLOSED);
    pthread_join(t, NULL);
    assert_int_equal(store_watch_next(w, 0, &ev), KP_ECLOSED);
    store_watch_close(w);
}

/* store_watch_revision() counts only what was handed out: a new watch from it
 * continues exactly where the old one stopped, buffered events included. */
static void test_watch_resume_from_revision(void **state)
{
    store_t *s = ((fixture_t *)*state)->s;
    for (int i = 0; i < 10; i++) {
        char key[16];
        snprintf(key, sizeof key, "/k/%d", i);
        put(s, key, "v");
        put(s, "/other", "x"); /* filtered out: revisions between the events */
    }
    store_watch_t *w, *w2;
    const store_event_t *ev;
    assert_int_equal(store_watch_open(s, "/k/", 0, &w), 0);
    assert_int_equal(store_watch_revision(w), 0);
    assert_int_equal(store_watch_next(w, 1000, &ev), 0);
    assert_int_equal(ev->kv.mod_rev, 1);
    assert_int_equal(store_watch_revision(w), 2); /* rev 2 (/other) is filtered */
    assert_int_equal(store_watch_open(s, "/k/", store_watch_revision(w), &w2), 0);
    for (int64_t rev = 3; rev <= 19; rev += 2) {
        assert_int_equal(store_watch_next(w2, 1000, &ev), 0);
        assert_int_equal(ev->kv.mod_rev, rev);
    }
    assert_int_equal(store_watch_next(w2, 0, &ev), KP_ETIMEDOUT);
    assert_int_equal(store_watch_revision(w2), 20);
    store_watch_close(w2);
    store_watch_close(w);
}

/* With progress on, a watch reports that it read past changes elsewhere. */
static void test_watch_progress(void **state)
{
    store_t *s = ((fixture_t *)*state)->s;
    store_watch_t *w;
    const store_event_t *ev;
    assert_int_equal(store_watch_open(s, "/mine/", 0, &w), 0);
    store_watch_progress(w, 1);
    assert_int_equal(store_watch_next(w, 0, &ev), KP_ETIMEDOUT); /* nothing yet */
    put(s, "/other/a", "x"); /* 1 */
    put(s, "/other/b", "x"); /* 2 */
    assert_int_equal(store_watch_next(w, 1000, &ev), 0);
    assert_int_equal(ev->type, STORE_PROGRESS);
    assert_int_equal(ev->kv.mod_rev, 2);
    assert_int_equal(store_watch_next(w, 0, &ev), KP_ETIMEDOUT); /* reported once */
    put(s, "/mine/a", "m");  /* 3 */
    put(s, "/other/c", "x"); /* 4 */
    assert_int_equal(store_watch_next(w, 1000, &ev), 0);
    assert_int_equal(ev->type, STORE_PUT);
    assert_int_equal(ev->kv.mod_rev, 3);
    assert_int_equal(store_watch_next(w, 1000, &ev), 0);
    assert_int_equal(ev->type, STORE_PROGRESS);
    assert_int_equal(ev->kv.mod_rev, 4);
    store_watch_close(w);
}

/* Writes cost nothing in watches on other prefixes (embedded backend): they
 * move past those revisions without reading the log, and still report
 * progress; another process's commit is still read, in order. */
static void test_watch_idle_prefixes_read_nothing(void **state)
{
    fixture_t *f = *state;
    if (tb_is_etcd()) skip(); /* etcd filters by prefix itself */
    enum { IDLE = 20, WRITES = 500 };
    store_t *s = f->s;
    store_watch_t *idle[IDLE], *busy;
    const store_event_t *ev;
    for (int i = 0; i < IDLE; i++) {
        char p[32];
        snprintf(p, sizeof p, "/idle-%d/", i);
        assert_int_equal(store_watch_open(s, p, 0, &idle[i]), 0);
        store_watch_progress(idle[i], 1);
    }
    assert_int_equal(store_watch_open(s, "/busy/", 0, &busy), 0);
    store_status_t st0, st;
    assert_int_equal(store_status(s, &st0), 0);
    for (int i = 0; i < WRITES; i++) {
        char key[32];
        snprintf(key, sizeof key, "/busy/%d", i % 7);
        put(s, key, "v");
    }
    for (int i = 0; i < IDLE; i++) {
        assert_int_equal(store_watch_next(idle[i], 2000, &ev), 0);
        assert_int_equal(ev->type, STORE_PROGRESS);
        assert_int_equal(ev->kv.mod_rev, WRITES);
        assert_int_equal(store_watch_revision(idle[i]), WRITES);
    }
    for (int64_t r = 1; r <= WRITES; r++) {
        assert_int_equal(store_watch_next(busy, 1000, &ev), 0);
        assert_int_equal(ev->kv.mod_rev, r);
    }
    assert_int_equal(store_status(s, &st), 0);
    /* The busy watch read its 500 records; the idle ones read none (they
     * used to read all 500 each: 10,500 in all). */
    print_message("watch reads: %llu\n", (unsigned long long)(st.watch_reads - st0.watch_reads));
    assert_true(st.watch_reads - st0.watch_reads <= WRITES + IDLE);

    /* Our write, another process's write under /idle-0/, ours again: the
     * quiet range must not carry the watch past the other's revision. */
    put(s, "/busy/x", "v"); /* WRITES + 1 */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        store_t *o = NULL;
        int64_t rev = 0;
        int rc = store_open(f->url, NULL, &o);
        if (!rc) rc = store_create(o, "/idle-0/x", "o", 1, &rev);
        store_close(o);
        _exit(rc || rev != WRITES + 2 ? 1 : 0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    put(s, "/busy/y", "v"); /* WRITES + 3 */
    assert_int_equal(store_watch_next(idle[0], 2000, &ev), 0);
    assert_int_equal(ev->type, STORE_PUT);
    assert_int_equal(ev->kv.mod_rev, WRITES + 2);
    assert_int_equal(ev->kv.key_len, strlen("/idle-0/x"));
    assert_memory_equal(ev->kv.key, "/idle-0/x", ev->kv.key_len);
    assert_int_equal(store_watch_next(idle[0], 2000, &ev), 0);
    assert_int_equal(ev->type, STORE_PROGRESS);
    assert_int_equal(ev->kv.mod_rev, WRITES + 3);
    /* Another idle watch reads past the foreign revision: progress only. */
    assert_int_equal(store_watch_next(idle[1], 2000, &ev), 0);
    assert_int_equal(ev->type, STORE_PROGRESS);
    if (ev->kv.mod_rev < WRITES + 3) { /* it may report in two steps */
        assert_int_equal(store_watch_next(idle[1], 2000, &ev), 0);
        assert_int_equal(ev->type, STORE_PROGRESS);
    }
    assert_int_equal(ev->kv.mod_rev, WRITES + 3);
    for (int i = 0; i < IDLE; i++)
        store_watch_close(idle[i]);
    store_watch_close(busy);
}

static void test_durable_across_reopen(void **state)
{
    fixture_t *f = *state;
    for (int i = 0; i < 20; i++) {
        char key[16];
        snprintf(key, sizeof key, "/d/%d", i % 5);
        put(f->s, key, key);
    }
    assert_int_equal(revision(f->s), 20);
    reopen(f, NULL);
    assert_int_equal(revision(f->s), 20);
    expect_kv(f->s, "/d/3", 0, "/d/3");
    assert_int_equal(put(f->s, "/d/new", "n"), 21); /* never reused */

    /* A watch resumes from a revision after the restart: exactly what followed. */
    store_watch_t *w;
    const store_event_t *ev;
    assert_int_equal(store_watch_open(f->s, "/d/", 17, &w), 0);
    for (int64_t r = 18; r <= 21; r++) {
        assert_int_equal(store_watch_next(w, 1000, &ev), 0);
        assert_int_equal(ev->kv.mod_rev, r);
    }
    assert_int_equal(store_watch_next(w, 0, &ev), KP_ETIMEDOUT);
    store_watch_close(w);
}

static void test_compaction(void **state)
{
    fixture_t *f = *state;
    store_t *s = f->s;
    /* Five keys updated and deleted in turns; remember every revision's view. */
    enum { N = 60 };
    char snap[N + 1][5][16];
    for (int r = 1; r <= N; r++) {
        char key[16], val[16];
        int k = r % 5;
        snprintf(key, sizeof key, "/c/%d", k);
        snprintf(val, sizeof val, "r%d", r);
        store_kv_t *kv;
        if (r % 7 == 0 && store_get(s, key, 0, &kv) == 0) {
            free(kv);
            assert_int_equal(store_delete(s, key, 0, NULL), 0);
        } else {
            put(s, key, val);
        }
        for (int j = 0; j < 5; j++) {
            snprintf(key, sizeof key, "/c/%d", j);
            if (store_get(s, key, 0, &kv) == 0) {
                snprintf(snap[r][j], 16, "%s", kv->value);
                free(kv);
            } else {
                snprintf(snap[r][j], 16, "-");
            }
        }
    }
    store_watch_t *slow;
    assert_int_equal(store_watch_open(s, "/c/", 10, &slow), 0);

    assert_int_equal(store_compact(s, 30), 0);
    assert_int_equal(store_compact(s, 30), KP_ECOMPACTED);
    assert_int_equal(store_compact(s, 20), KP_ECOMPACTED);
    assert_int_equal(store_compact(s, N + 1), KP_EFUTURE);

    store_kv_t *kv;
    assert_int_equal(store_get(s, "/c/1", 29, &kv), KP_ECOMPACTED);
    store_range_t *r;
    assert_int_equal(store_range(s, "/c/", NULL, 0, 29, &r), KP_ECOMPACTED);
    store_watch_t *w;
    assert_int_equal(store_watch_open(s, "/c/", 29, &w), KP_ECOMPACTED);
    const store_event_t *ev;
    assert_int_equal(store_watch_next(slow, 0, &ev), KP_ECOMPACTED); /* never a gap */
    assert_int_equal(store_watch_next(slow, 0, &ev), KP_ECOMPACTED); /* sticky */
    store_watch_close(slow);

    /* Every revision from the compaction point on reads as it did. */
    for (int rev = 30; rev <= N; rev++) {
        for (int j = 0; j < 5; j++) {
            char key[16];
            snprintf(key, sizeof key, "/c/%d", j);
            int rc = store_get(s, key, rev, &kv);
            if (!strcmp(snap[rev][j], "-")) {
                assert_int_equal(rc, KP_ENOTFOUND);
            } else {
                assert_int_equal(rc, 0);
                assert_string_equal(kv->value, snap[rev][j]);
                free(kv);
            }
        }
    }
    /* A watch from the compaction point sees every later change. */
    assert_int_equal(store_watch_open(s, "/c/", 30, &w), 0);
    for (int rev = 31; rev <= N; rev++) {
        assert_int_equal(store_watch_next(w, 1000, &ev), 0);
        assert_int_equal(ev->kv.mod_rev, rev);
    }
    store_watch_close(w);

    store_status_t st;
    assert_int_equal(store_status(s, &st), 0);
    assert_int_equal(st.compact_revision, 30);
    /* The compaction point is durable too. */
    reopen(f, NULL);
    assert_int_equal(store_get(f->s, "/c/1", 29, &kv), KP_ECOMPACTED);
    assert_int_equal(store_compact(f->s, N), 0);
    for (int j = 0; j < 5; j++) {
        char key[16];
        snprintf(key, sizeof key, "/c/%d", j);
        int rc = store_get(f->s, key, N, &kv);
        if (!strcmp(snap[N][j], "-")) {
            assert_int_equal(rc, KP_ENOTFOUND);
        } else {
            assert_int_equal(rc, 0);
            assert_string_equal(kv->value, snap[N][j]);
            free(kv);
        }
    }
}

static void wait_compacted(store_t *s, int64_t at_least)
{
    store_status_t st = {0};
    for (int i = 0; i < 200; i++) {
        assert_int_equal(store_status(s, &st), 0);
        if (st.compact_revision >= at_least) return;
        usleep(25 * 1000);
    }
    fail_msg("compaction stayed at %lld, wanted %lld", (long long)st.compact_revision,
             (long long)at_least);
}

static void test_auto_compaction_by_count(void **state)
{
    fixture_t *f = *state;
    store_options_t opt = {.keep_revisions = 10, .compact_interval_ms = 20};
    reopen(f, &opt);
    for (int i = 0; i < 100; i++) put(f->s, "/n", "v");
    wait_compacted(f->s, 90);
    store_status_t st;
    assert_int_equal(store_status(f->s, &st), 0);
    assert_int_equal(st.compact_revision, 90); /* keeps exactly 10 revisions */
    expect_kv(f->s, "/n", 90, "v");
}

static void test_auto_compaction_by_age(void **state)
{
    fixture_t *f = *state;
    store_options_t opt = {.keep_seconds = 1, .compact_interval_ms = 20};
    reopen(f, &opt);
    for (int i = 0; i < 20; i++) put(f->s, "/age", "old");
    usleep(1200 * 1000);
    store_status_t st;
    assert_int_equal(store_status(f->s, &st), 0);
    int64_t before = st.compact_revision;
    for (int i = 0; i < 5; i++) put(f->s, "/age", "young");
    wait_compacted(f->s, 20);
    assert_true(before <= 20);
    /* The young history stays until it, too, is a second old. */
    assert_int_equal(store_status(f->s, &st), 0);
    assert_true(st.compact_revision >= 20 && st.compact_revision <= 25);
}

typedef struct gc_arg {
    store_t *s;
    int id;
    int failures;
} gc_arg_t;

static void *gc_writer(void *p)
{
    gc_arg_t *a = p;
    for (int i = 0; i < 50; i++) {
        char key[32];
        snprintf(key, sizeof key, "/gc/%d/%d", a->id, i);
        if (store_create(a->s, key, key, strlen(key), NULL)) a->failures++;
    }
    return NULL;
}

static void test_group_commit(void **state)
{
    store_t *s = ((fixture_t *)*state)->s;
    enum { T = 16 };
    pthread_t t[T];
    gc_arg_t a[T];
    for (int i = 0; i < T; i++) {
        a[i] = (gc_arg_t){s, i, 0};
        pthread_create(&t[i], NULL, gc_writer, &a[i]);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(a[i].failures, 0);
    }
    store_status_t st;
    assert_int_equal(store_status(s, &st), 0);
    assert_int_equal(st.revision, T * 50);
    assert_int_equal(st.writes, T * 50);
    assert_int_equal(st.keys, T * 50);
    /* Concurrent writers shared commits (and their fsyncs). etcd batches
     * its commits out of sight: there each write counts as one. */
    if (!tb_is_etcd()) assert_true(st.commits < st.writes);
    assert_true(st.commits > 0);
    assert_true(st.db_bytes > 0);
    assert_true(st.file_bytes > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_crud_and_revisions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_at_revision, setup, teardown),
        cmocka_unit_test_setup_teardown(test_range, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_order_and_prev, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_blocks_until_write_or_cancel, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_watch_resume_from_revision, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_progress, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_idle_prefixes_read_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_durable_across_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compaction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_auto_compaction_by_count, setup, teardown),
        cmocka_unit_test_setup_teardown(test_auto_compaction_by_age, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_commit, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
