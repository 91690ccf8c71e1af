/*
 * test_lincheck.c -- the linearizability checker accepts what a correct store
 * may answer and flags, with the right key, what it may not.
 *
 * Valid: sequential histories of every op and failure reason, overlapping ops
 * whose linearization order differs from their invocation order, writes of
 * unknown outcome that took effect and that did not (bounded and unbounded).
 * Broken (each one hidden among valid keys, and each must name its key): a
 * stale read, lost writes (an acknowledged update or create never seen while
 * later reads see the older state), a double CAS success, revisions going
 * backwards on one key and across keys, a revision given twice, a read of a
 * revision another key's write got, a failure reason that contradicts the
 * state, an unknown write seen and then un-seen. Plus the file format, the
 * "too complex" bound, and a long history staying cheap.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "lincheck.h"

static int64_t next_id;

static void add(lc_history_t *h, lc_op_t op)
{
    op.id = ++next_id;
    assert_int_equal(lc_history_add(h, &op), 0);
}

static void create_ok(lc_history_t *h, const char *k, int64_t v, int64_t t0, int64_t t1,
                      int64_t rev)
{
    add(h, (lc_op_t){.key = k,
                     .kind = LC_CREATE,
                     .value = v,
                     .outcome = LC_OK,
                     .rev = rev,
                     .invoke_ns = t0,
                     .complete_ns = t1});
}

static void update_ok(lc_history_t *h, const char *k, int64_t v, int64_t expect, int64_t t0,
                      int64_t t1, int64_t rev)
{
    add(h, (lc_op_t){.key = k,
                     .kind = LC_UPDATE,
                     .value = v,
                     .expect_rev = expect,
                     .outcome = LC_OK,
                     .rev = rev,
                     .invoke_ns = t0,
                     .complete_ns = t1});
}

static void delete_ok(lc_history_t *h, const char *k, int64_t expect, int64_t t0, int64_t t1,
                      int64_t rev)
{
    add(h, (lc_op_t){.key = k,
                     .kind = LC_DELETE,
                     .expect_rev = expect,
                     .outcome = LC_OK,
                     .rev = rev,
                     .invoke_ns = t0,
                     .complete_ns = t1});
}

static void get_ok(lc_history_t *h, const char *k, int64_t t0, int64_t t1, int64_t v, int64_t rev)
{
    add(h, (lc_op_t){.key = k,
                     .kind = LC_GET,
                     .outcome = LC_OK,
                     .found = 1,
                     .value = v,
                     .rev = rev,
                     .invoke_ns = t0,
                     .complete_ns = t1});
}

static void get_nf(lc_history_t *h, const char *k, int64_t t0, int64_t t1)
{
    add(h,
        (lc_op_t){.key = k, .kind = LC_GET, .outcome = LC_OK, .invoke_ns = t0, .complete_ns = t1});
}

static void failed(lc_history_t *h, lc_kind_t kind, const char *k, int64_t v, int64_t expect,
                   int64_t t0, int64_t t1, int err, int64_t cur)
{
    add(h, (lc_op_t){.key = k,
                     .kind = kind,
                     .value = v,
                     .expect_rev = expect,
                     .outcome = LC_FAIL,
                     .err = err,
                     .rev = cur,
                     .invoke_ns = t0,
                     .complete_ns = t1});
}

/* bound 0: no completion bound */
static void unknown(lc_history_t *h, lc_kind_t kind, const char *k, int64_t v, int64_t expect,
                    int64_t t0, int64_t bound)
{
    add(h, (lc_op_t){.key = k,
                     .kind = kind,
                     .value = v,
                     .expect_rev = expect,
                     .outcome = LC_UNKNOWN,
                     .invoke_ns = t0,
                     .complete_ns = bound});
}

static lc_history_t *fresh(void)
{
    lc_history_t *h = NULL;
    assert_int_equal(lc_history_new(&h), 0);
    return h;
}

/* A busy valid key beside the broken one, so that the flag must name the
 * right key. It comes after the rest in time and revisions (base..base+2 at
 * times from 1e6; the other ops stay below revision 1000 and time 1e6). */
static void add_good_key(lc_history_t *h, const char *k)
{
    static int64_t base = 1000;
    int64_t t = 1000000 + base * 100, r = base;
    base += 3;
    create_ok(h, k, 501, t, t + 10, r);
    update_ok(h, k, 502, r, t + 20, t + 30, r + 1);
    get_ok(h, k, t + 25, t + 40, 502, r + 1);
    update_ok(h, k, 503, r + 1, t + 50, t + 60, r + 2);
    get_ok(h, k, t + 70, t + 80, 503, r + 2);
}

static void expect_ok(lc_history_t *h)
{
    lc_report_t r;
    assert_int_equal(lc_check(h, NULL, &r), 0);
    if (r.status != LC_LINEARIZABLE) fprintf(stderr, "unexpected verdict:\n%s", r.explain);
    assert_int_equal(r.status, LC_LINEARIZABLE);
    assert_null(r.key);
    lc_report_free(&r);
    lc_history_free(h);
}

static void expect_bad(lc_history_t *h, const char *key, const char *needle)
{
    lc_report_t r;
    assert_int_equal(lc_check(h, NULL, &r), 0);
    fprintf(stderr, "flagged as expected:\n%s", r.explain);
    assert_int_equal(r.status, LC_VIOLATION);
    assert_non_null(r.key);
    assert_string_equal(r.key, key);
    if (needle) assert_non_null(strstr(r.explain, needle));
    lc_report_free(&r);
    lc_history_free(h);
}

/* ---- valid histories ---- */

static void test_sequential(void **state)
{
    (void)state;
    lc_history_t *h = fresh();
    const char *k = "/lin/seq";
    get_nf(h, k, 0, 1);
    failed(h, LC_UPDATE, k, 9, 0, 2, 3, KP_ENOTFOUND, 0);
    failed(h, LC_DELETE, k, 0, 0, 4, 5, KP_ENOTFOUND, 0);
    create_ok(h, k, 1, 10, 11, 1);
    get_ok(h, k, 12, 13, 1, 1);
    failed(h, LC_CREATE, k, 2, 0, 14, 15, KP_EEXIST, 0);
    update_ok(h, k, 3, 1, 16, 17, 2);
    failed(h, LC_UPDATE, k, 4, 1, 18, 19, KP_ECONFLICT, 2);
    failed(h, LC_DELETE, k, 0, 1, 20, 21, KP_ECONFLICT, 0);
    update_ok(h, k, 5, 0, 22, 23, 7); /* unconditional; other keys took 3..6 */
    get_ok(h, k, 24, 25, 5, 7);
    delete_ok(h, k, 7, 26, 27, 8);
    get_nf(h, k, 28, 29);
    create_ok(h, k, 6, 30, 31, 9);
    get_ok(h, k, 32, 33, 6, 9);
    add_good_key(h, "/lin/other");
    expect_ok(h);
}

static void test_concurrent(void **state)
{
    (void)state;
    lc_history_t *h = fresh();
    const char *k = "/lin/conc";
    create_ok(h, k, 1, 0, 100, 1);
    get_nf(h, k, 5, 10); /* before the create took effect */
    get_ok(h, k, 20, 120, 1, 1);
    /* two CAS on rev 1: one wins, the other sees the winner's revision */
    update_ok(h, k, 2, 1, 200, 300, 2);
    failed(h, LC_UPDATE, k, 3, 1, 210, 290, KP_ECONFLICT, 2);
    get_ok(h, k, 220, 230, 1, 1); /* before the winner took effect */
    get_ok(h, k, 240, 310, 2, 2);
    /* invoked later, linearized earlier: B (rev 3) inside A's window, A
     * expects B's revision */
    update_ok(h, k, 10, 4, 400, 600, 5);
    update_ok(h, k, 11, 2, 410, 420, 4);
    get_ok(h, k, 430, 440, 11, 4);
    get_ok(h, k, 450, 700, 10, 5);
    /* a concurrent create and delete */
    delete_ok(h, k, 5, 800, 900, 6);
    create_ok(h, k, 12, 810, 890, 7);
    failed(h, LC_CREATE, k, 13, 0, 820, 830, KP_EEXIST, 0);
    get_ok(h, k, 950, 960, 12, 7);
    /* another key in the same windows, revisions interleaved in real time:
     * after rev 2 completed, before 4 and 5 began */
    create_ok(h, "/lin/conc2", 20, 350, 390, 3);
    get_ok(h, "/lin/conc2", 395, 398, 20, 3);
    expect_ok(h);
}

static void test_unknown_happened(void **state)
{
    (void)state;
    lc_history_t *h = fresh();
    const char *k = "/lin/u1";
    create_ok(h, k, 1, 0, 1, 1);
    unknown(h, LC_UPDATE, k, 2, 1, 10, 0); /* e.g. etcd timed out */
    get_ok(h, k, 5, 8, 1, 1);              /* before it */
    get_ok(h, k, 20, 30, 2, 2);            /* it happened, with revision 2 */
    update_ok(h, k, 3, 2, 40, 50, 3);
    /* bounded: the killed process's write took effect before it died */
    const char *k2 = "/lin/u2";
    unknown(h, LC_CREATE, k2, 7, 0, 100, 150);
    get_ok(h, k2, 200, 210, 7, 11);
    delete_ok(h, k2, 11, 220, 230, 12);
    /* an unknown delete that happened */
    const char *k3 = "/lin/u3";
    create_ok(h, k3, 8, 300, 310, 13);
    unknown(h, LC_DELETE, k3, 0, 13, 320, 330);
    get_nf(h, k3, 340, 350);
    create_ok(h, k3, 9, 360, 370, 14);
    expect_ok(h);
}

static void test_unknown_not_happened(void **state)
{
    (void)state;
    lc_history_t *h = fresh();
    const char *k = "/lin/n1";
    create_ok(h, k, 1, 0, 1, 1);
    unknown(h, LC_UPDATE, k, 2, 1, 10, 0);
    get_ok(h, k, 20, 30, 1, 1);
    update_ok(h, k, 4, 1, 40, 50, 3);
    get_ok(h, k, 60, 70, 4, 3);
    unknown(h, LC_CREATE, "/lin/n2", 5, 0, 80, 90); /* bounded, never took effect */
    get_nf(h, "/lin/n2", 100, 110);
    create_ok(h, "/lin/n2", 6, 120, 130, 4);
    expect_ok(h);
}

/* ---- broken histories ---- */

static void test_stale_read(void **state)
{
    (void)state;
    lc_history_t *h = fresh();
    add_good_key(h, "/a/good");
    const char *k = "/b/stale";
    create_ok(h, k, 1, 0, 1, 1);
    update_ok(h, k, 2, 1, 2, 3, 2);
    get_ok(h, k, 4, 5, 1, 1); /* began after v2 was acknowledged */
    add_good_key(h, "/c/good");
    expect_bad(h, k, "get");
}

static void test_lost_update(void **state)
{
    (void)state;
    lc_history_t *h = fresh();
    add_good_key(h, "/a/good");
    const char *k = "/b/lost";
    create_ok(h, k, 1, 0, 1, 1);
    update_ok(h, k, 2, 1, 2, 3, 2); /* acknowledged, then "crash" */
    get_ok(h, k, 100, 101, 1, 1);   /* after restart: the older state */
    get_ok(h, k, 102, 103, 1, 1);
    expect_bad(h, k, "v1@1");
}

static void test_lost_create(void **state)
{
    (void)state;
    lc_history_t *h = fresh();
    add_good_key(h, "/z/good");
    const char *k = "/m/lost";
    create_ok(h, k, 1, 0, 1, 1);
    get_nf(h, k, 100, 101);
    create_ok(h, k, 2, 102, 103, 2);
    expect_bad(h, k, "notfound");
}

static void test_double_cas(void **state)
{
    (void)state;
    lc_history_t *h = fresh();
    add_good_key(h, "/a/good");
    const char *k = "/b/cas";
    create_ok(h, k, 1, 0, 1, 1);
    update_ok(h, k, 2, 1, 10, 20, 2);
    update_ok(h, k, 3, 1, 11, 21, 3); /* same expected revision, both ok */
    expect_bad(h, k, "expect=1");
}

static void test_double_cas_delete(void **state)
{
    (void)state;
    lc_history_t *h = fresh();
    const char *k = "/b/casdel";
    create_ok(h, k, 1, 0, 1, 1);
    delete_ok(h, k, 1, 10, 20, 2);
    delete_ok(h, k, 1, 11, 21, 3);
    add_good_key(h, "/c/good");
    expect_bad(h, k, NULL);
}

static void test_revision_backwards_key(void **state)
{
    (void)state;
    lc_history_t *h = fresh();
    add_good_key(h, "/a/good");
    const char *k = "/b/back";
    create_ok(h, k, 1, 0, 1, 5);
    update_ok(h, k, 2, 5, 2, 3, 4); /* a newer write with an older revision */
    expect_bad(h, k, NULL);
}

static void test_revision_backwards_global(void **state)
{
    (void)state;
    lc_history_t *h = fresh();
    create_ok(h, "/x/first", 1, 0, 1, 5);
    create_ok(h, "/y/second", 2, 2, 3, 3); /* invoked after rev 5 was acknowledged */
    get_ok(h, "/x/first", 4, 5, 1, 5);
    get_ok(h, "/y/second", 4, 5, 2, 3);
    expect_bad(h, "/y/second", "backwards");
    /* a read counts too: after a get saw rev 5, no write may get rev 4 */
    h = fresh();
    create_ok(h, "/x/first", 1, 0, 10, 5);
    get_ok(h, "/x/first", 11, 12, 1, 5);
    create_ok(h, "/y/second", 2, 0, 20, 4);
    create_ok(h, "/y/third", 3, 13, 14, 3);
    expect_bad(h, "/y/third", "backwards");
}

static void test_revision_twice(void **state)
{
    (void)state;
    lc_history_t *h = fresh();
    create_ok(h, "/p/one", 1, 0, 10, 7);
    create_ok(h, "/q/two", 2, 0, 10, 7); /* concurrent, but one revision each */
    expect_bad(h, "/q/two", "twice");
}

static void test_read_foreign_revision(void **state)
{
    (void)state;
    lc_history_t *h = fresh();
    create_ok(h, "/p/one", 1, 0, 10, 7);
    unknown(h, LC_CREATE, "/q/two", 2, 0, 0, 0);
    get_ok(h, "/q/two", 20, 30, 2, 7); /* rev 7 belongs to /p/one */
    expect_bad(h, "/q/two", "written by");
}

static void test_failure_reason_contradicts(void **state)
{
    (void)state;
    lc_history_t *h = fresh();
    add_good_key(h, "/a/good");
    failed(h, LC_CREATE, "/b/exists", 1, 0, 0, 1, KP_EEXIST, 0); /* nothing there */
    expect_bad(h, "/b/exists", "exists");
    h = fresh();
    create_ok(h, "/b/conflict", 1, 0, 1, 1);
    failed(h, LC_UPDATE, "/b/conflict", 2, 1, 2, 3, KP_ECONFLICT, 1); /* it matched */
    add_good_key(h, "/c/good");
    expect_bad(h, "/b/conflict", NULL);
}

static void test_unknown_seen_then_unseen(void **state)
{
    (void)state;
    lc_history_t *h = fresh();
    const char *k = "/b/flicker";
    create_ok(h, k, 1, 0, 1, 1);
    unknown(h, LC_UPDATE, k, 2, 1, 10, 15);
    get_ok(h, k, 20, 30, 2, 2);
    get_ok(h, k, 40, 50, 1, 1); /* an unknown write takes effect once, for good */
    add_good_key(h, "/c/good");
    expect_bad(h, k, NULL);
    /* and a bounded one cannot take effect after its bound */
    h = fresh();
    create_ok(h, k, 1, 0, 1, 1);
    unknown(h, LC_UPDATE, k, 2, 1, 10, 15);
    get_ok(h, k, 20, 30, 1, 1);
    get_ok(h, k, 40, 50, 2, 2);
    expect_bad(h, k, NULL);
}

/* `n` writes of unknown outcome on one key (etcd was down): mixed puts,
 * CAS, deletes and creates that may take effect at any later time. */
static void add_outage(lc_history_t *h, const char *k, int64_t t0, int n)
{
    for (int i = 0; i < n; i++) {
        int64_t t = t0 + 10 * i, v = 1000 + i;
        switch (i % 4) {
        case 0:
            unknown(h, LC_UPDATE, k, v, 0, t, 0);
            break;
        case 1:
            unknown(h, LC_UPDATE, k, v, 1, t, 0);
            break;
        case 2:
            unknown(h, LC_DELETE, k, 0, 1, t, 0);
            break;
        case 3:
            unknown(h, LC_CREATE, k, v, 0, t, 0);
            break;
        }
    }
}

#ifndef NOUTAGE
#define NOUTAGE 30
#endif

static void test_many_unknown(void **state)
{
    (void)state;
    lc_history_t *h = fresh();
    const char *k = "/u/outage";
    create_ok(h, k, 1, 0, 1, 1);
    add_outage(h, k, 10, 30);
    update_ok(h, k, 2, 1, 1000, 1010, 40); /* none of them took effect */
    for (int i = 0; i < 50; i++)
        get_ok(h, k, 1020 + 10 * i, 1025 + 10 * i, 2, 40);
    lc_report_t r;
    assert_int_equal(lc_check(h, NULL, &r), 0);
    if (r.status) fprintf(stderr, "%s", r.explain);
    assert_int_equal(r.status, LC_LINEARIZABLE);
    fprintf(stderr, "outage of 30, none took effect: %" PRIu64 " steps\n", r.steps);
    assert_true(r.steps < 100000);
    lc_report_free(&r);
    lc_history_free(h);

    /* one did (a read shows it), and the stale read after it is flagged:
     * refuting every placement of every unknown write is the expensive
     * direction */
    h = fresh();
    create_ok(h, k, 1, 0, 1, 1);
    add_outage(h, k, 10, NOUTAGE);
    get_ok(h, k, 900, 910, 1004, 35); /* i == 4: a put, revision unknown until now */
    update_ok(h, k, 2, 35, 1000, 1010, 40);
    get_ok(h, k, 1020, 1030, 2, 40);
    assert_int_equal(lc_check(h, NULL, &r), 0);
    if (r.status) fprintf(stderr, "%s", r.explain);
    assert_int_equal(r.status, LC_LINEARIZABLE);
    lc_report_free(&r);
    fprintf(stderr, "outage of %d, one took effect: %" PRIu64 " steps\n", NOUTAGE, r.steps);
    assert_true(r.steps < 100000);
    get_ok(h, k, 1040, 1050, 1, 1);
    expect_bad(h, k, "v1@1");
}

/* ---- bounds, file format, cost ---- */

static void test_too_complex(void **state)
{
    (void)state;
    lc_history_t *h = fresh();
    /* 40 overlapping unknown updates and a read no one can explain */
    for (int i = 0; i < 40; i++)
        unknown(h, LC_UPDATE, "/t/k", 100 + i, 0, i, 0);
    create_ok(h, "/t/k", 1, 0, 1000, 1);
    get_ok(h, "/t/k", 2000, 2001, 99, 50);
    lc_limits_t lim = {.max_steps = 2000};
    lc_report_t r;
    assert_int_equal(lc_check(h, &lim, &r), 0);
    assert_int_equal(r.status, LC_TOO_COMPLEX);
    assert_string_equal(r.key, "/t/k");
    assert_non_null(strstr(r.explain, "too complex"));
    lc_report_free(&r);
    lc_history_free(h);
}

static void test_file_format(void **state)
{
    (void)state;
    const char *text = "# lin_record lmdb:/x\n"
                       "I 1 100 create /f/a 11 0\n"
                       "I 2 105 get /f/a 0 0\n"
                       "R 1 110 ok 1\n"
                       "R 2 120 ok 1 11\n"
                       "I 3 130 update /f/a 12 1\n"
                       "I 4 131 update /f/a 13 1\n"
                       "R 3 140 ok 2\n"
                       "R 4 141 conflict 2\n"
                       "I 5 150 update /f/a 14 2\n"
                       "# crash\n"
                       "R 5 160 unknown\n"
                       "I 6 170 get /f/a 0 0\n"
                       "R 6 180 ok 3 14\n"
                       "I 7 190 delete /f/a 0 3\n"
                       "I 8 191 get /f/a 0 0\n"
                       "R 8 195 error unavailable\n"
                       "I 9 200 create /f/b 15 0\n"
                       "I 10 201 get /f/b 0 0\n"
                       "R 10 202 notfound\n"
                       "I 11 203 update /f/b 16 0\n"
                       "R 11 204 fail unavailable\n"
                       "R 9 210 ok 5"; /* torn: the recorder died mid-line */
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    assert_non_null(f);
    lc_history_t *h = NULL;
    assert_int_equal(lc_history_load(f, &h, NULL), 0);
    fclose(f);
    assert_int_equal(lc_history_count(h), 10); /* get 8 dropped; 11 kept, ignored */
    lc_report_t r;
    assert_int_equal(lc_check(h, NULL, &r), 0);
    if (r.status) fprintf(stderr, "%s", r.explain);
    assert_int_equal(r.status, LC_LINEARIZABLE);
    assert_int_equal(r.unknown, 3); /* 5 bounded, 7 and 9 unbounded */
    assert_int_equal(r.keys, 2);
    lc_report_free(&r);
    lc_history_free(h);

    /* a write that "did not take effect" but whose value is read */
    const char *lie = "I 1 100 create /f/a 11 0\nR 1 110 fail unavailable\n"
                      "I 2 120 get /f/a 0 0\nR 2 130 ok 1 11\n";
    f = fmemopen((void *)lie, strlen(lie), "r");
    assert_int_equal(lc_history_load(f, &h, NULL), 0);
    fclose(f);
    assert_int_equal(lc_history_count(h), 2);
    expect_bad(h, "/f/a", "reported as not taking effect");
    /* the same lie by a delete: no value to read, so the report says what
     * would explain it */
    const char *lie2 = "I 1 100 create /f/d 11 0\nR 1 110 ok 1\n"
                       "I 2 120 delete /f/d 0 1\nR 2 130 fail unavailable\n"
                       "I 3 140 get /f/d 0 0\nR 3 150 notfound\n";
    f = fmemopen((void *)lie2, strlen(lie2), "r");
    assert_int_equal(lc_history_load(f, &h, NULL), 0);
    fclose(f);
    expect_bad(h, "/f/d", "would be linearizable if one of the 1 writes reported as failed");

    const char *broken = "I 1 100 create /f/a 11 0\nR 1 110 ok 1\nR 7 120 ok 2\n";
    f = fmemopen((void *)broken, strlen(broken), "r");
    size_t line = 0;
    assert_int_equal(lc_history_load(f, &h, &line), KP_ECORRUPT);
    assert_int_equal(line, 3);
    fclose(f);
}

/* A long, busy but valid history stays cheap: the memo keeps the search
 * linear when it has nothing to backtrack. */
static void test_long_history(void **state)
{
    (void)state;
    lc_history_t *h = fresh();
    int64_t rev = 0, t = 0, cur = 0;
    char key[32];
    for (int i = 0; i < 3000; i++) {
        snprintf(key, sizeof key, "/long/k%d", i % 3);
        int64_t r0 = ++rev;
        if (i < 3) {
            create_ok(h, key, i + 1, t, t + 30, r0);
        } else {
            cur = r0 - 3; /* the revision this key got 3 writes ago */
            update_ok(h, key, i + 1, cur, t, t + 30, r0);
            failed(h, LC_UPDATE, key, -i, cur, t + 1, t + 29, KP_ECONFLICT, 0);
        }
        get_ok(h, key, t + 5, t + 40, i + 1, r0);
        t += 20; /* each op overlaps the next */
    }
    lc_report_t r;
    assert_int_equal(lc_check(h, NULL, &r), 0);
    if (r.status) fprintf(stderr, "%s", r.explain);
    assert_int_equal(r.status, LC_LINEARIZABLE);
    assert_true(r.steps < 100000);
    lc_report_free(&r);
    lc_history_free(h);
}

/* ---- differential: the search against brute force on small histories ----
 *
 * The search prunes (memo, dominance, forced "never" moves, the seen-value
 * rule), so it is checked against plain enumeration: every subset of the
 * unknown writes that took effect, every order of the ops that respects real
 * time, the same register model written out again here. Histories come from
 * a simulated store (each op takes effect at a random point of its window),
 * half of them then damaged at random.
 */
typedef struct bst {
    int present;
    int64_t value, mod_rev, floor;
} bst_t;

static int bf_rev_is(bst_t *s, int64_t e)
{
    if (s->mod_rev) return s->mod_rev == e;
    if (e <= s->floor) return 0;
    s->mod_rev = s->floor = e;
    return 1;
}

/* the model for an op that took effect (or a failure / get); 0: impossible */
static int bf_step(bst_t *s, const lc_op_t *op)
{
    int unk = op->outcome == LC_UNKNOWN;
    if (op->outcome == LC_FAIL) {
        if (op->err == KP_EEXIST) return s->present;
        if (op->err == KP_ENOTFOUND) return !s->present;
        if (!s->present || !op->expect_rev) return 0;
        if (op->rev) return op->rev != op->expect_rev && bf_rev_is(s, op->rev);
        return s->mod_rev != op->expect_rev;
    }
    switch (op->kind) {
    case LC_GET:
        if (!op->found) return !s->present;
        return s->present && s->value == op->value && bf_rev_is(s, op->rev);
    case LC_CREATE:
        if (s->present || (!unk && op->rev <= s->floor)) return 0;
        s->present = 1;
        s->value = op->value;
        s->mod_rev = unk ? 0 : op->rev;
        if (!unk) s->floor = op->rev;
        return 1;
    default:
        if (!s->present) return 0;
        if (op->expect_rev && !bf_rev_is(s, op->expect_rev)) return 0;
        if (!unk && op->rev <= (s->floor > op->expect_rev ? s->floor : op->expect_rev)) return 0;
        s->present = op->kind == LC_UPDATE;
        s->value = op->kind == LC_UPDATE ? op->value : 0;
        s->mod_rev = unk || op->kind == LC_DELETE ? 0 : op->rev;
        if (!unk) s->floor = op->rev;
        return 1;
    }
}

static int64_t bf_ret(const lc_op_t *op)
{
    return op->outcome == LC_UNKNOWN && !op->complete_ns ? INT64_MAX : op->complete_ns;
}

static int bf_search(const lc_op_t *ops, int n, unsigned left, bst_t s)
{
    if (!left) return 1;
    for (int i = 0; i < n; i++) {
        if (!(left & (1u << i))) continue;
        int ok = 1;
        for (int j = 0; j < n && ok; j++)
            if (j != i && (left & (1u << j)) && bf_ret(&ops[j]) < ops[i].invoke_ns) ok = 0;
        bst_t t = s;
        if (ok && bf_step(&t, &ops[i]) && bf_search(ops, n, left & ~(1u << i), t)) return 1;
    }
    return 0;
}

static int bruteforce(const lc_op_t *ops, int n)
{
    unsigned unk = 0;
    for (int i = 0; i < n; i++)
        if (ops[i].outcome == LC_UNKNOWN) unk |= 1u << i;
    /* every subset of the unknown writes took effect, the rest never did */
    for (unsigned sub = unk;; sub = (sub - 1) & unk) {
        unsigned left = ((1u << n) - 1) & ~(unk & ~sub);
        if (bf_search(ops, n, left, (bst_t){0})) return 1;
        if (!sub) break;
    }
    return 0;
}

static uint64_t rnd(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A random history of n ops on one key, run on a simulated store. */
static void simulate(uint64_t *x, lc_op_t *ops, int n)
{
    int64_t at[16];
    int order[16];
    for (int i = 0; i < n; i++) {
        lc_op_t *op = &ops[i];
        memset(op, 0, sizeof *op);
        op->key = "/r/k";
        op->id = i + 1;
        op->kind = (lc_kind_t)(1 + rnd(x) % 4);
        op->value = 100 + i;
        op->invoke_ns = (int64_t)(rnd(x) % 60);
        op->complete_ns = op->invoke_ns + (int64_t)(rnd(x) % 25);
        at[i] = op->invoke_ns + (int64_t)(rnd(x) % (uint64_t)(op->complete_ns - op->invoke_ns + 1));
        order[i] = i;
    }
    for (int i = 1; i < n; i++) /* by the moment each takes effect */
        for (int j = i; j > 0 && at[order[j]] < at[order[j - 1]]; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    int present = 0;
    int64_t value = 0, mod_rev = 0, rev = 0;
    for (int k = 0; k < n; k++) {
        lc_op_t *op = &ops[order[k]];
        if (op->kind == LC_UPDATE || op->kind == LC_DELETE) {
            uint64_t d = rnd(x) % 4;
            op->expect_rev = d == 0 ? 0 : d == 1 ? (int64_t)(rnd(x) % 4) : mod_rev;
        }
        int unknown = op->kind != LC_GET && rnd(x) % 5 == 0;
        int applies = !unknown || rnd(x) % 2;
        op->outcome = LC_OK;
        if (op->kind == LC_GET) {
            op->found = present;
            op->value = present ? value : 0;
            op->rev = present ? mod_rev : 0;
        } else if (op->kind == LC_CREATE && present) {
            op->outcome = LC_FAIL;
            op->err = KP_EEXIST;
        } else if (op->kind != LC_CREATE && !present) {
            op->outcome = LC_FAIL;
            op->err = KP_ENOTFOUND;
        } else if (op->kind != LC_CREATE && op->expect_rev && op->expect_rev != mod_rev) {
            op->outcome = LC_FAIL;
            op->err = KP_ECONFLICT;
            op->rev = rnd(x) % 2 ? mod_rev : 0;
        } else if (applies) {
            op->rev = ++rev;
            present = op->kind != LC_DELETE;
            value = op->value;
            mod_rev = present ? rev : 0;
        }
        if (unknown && (op->outcome == LC_OK || rnd(x) % 2)) {
            if (op->outcome != LC_OK) applies = 0; /* a failure may be reported unknown too */
            op->outcome = LC_UNKNOWN;
            op->rev = 0;
            op->err = 0;
            /* bounded (the process died after it) or not */
            op->complete_ns = rnd(x) % 2 ? op->complete_ns : 0;
        }
        (void)applies;
    }
}

/* Damage one op's answer at random (the result may still be valid). */
static void damage(uint64_t *x, lc_op_t *ops, int n)
{
    lc_op_t *op = &ops[rnd(x) % (uint64_t)n];
    switch (rnd(x) % 5) {
    case 0:
        op->rev += rnd(x) % 2 ? 1 : -1;
        break;
    case 1:
        op->value = 100 + (int64_t)(rnd(x) % (uint64_t)n);
        break;
    case 2:
        if (op->kind == LC_GET) op->found = !op->found;
        break;
    case 3:
        if (op->outcome == LC_FAIL) {
            op->outcome = LC_OK;
            op->rev = 1 + (int64_t)(rnd(x) % 6);
        }
        break;
    case 4:
        op->invoke_ns = op->invoke_ns > 10 ? op->invoke_ns - 10 : 0;
        if (op->complete_ns) op->complete_ns += 10;
        op->rev = op->rev ? op->rev : 1;
        break;
    }
    if (op->kind == LC_GET && op->found && op->rev <= 0) op->rev = 1;
}

static void test_random_vs_bruteforce(void **state)
{
    (void)state;
    uint64_t x = 42;
    int valid = 0, invalid = 0;
    const char *env = getenv("KP_LIN_CASES");
    int cases = env ? (int)strtol(env, NULL, 10) : 20000;
    for (int c = 0; c < cases; c++) {
        lc_op_t ops[10];
        int n = 3 + (int)(rnd(&x) % 7);
        simulate(&x, ops, n);
        if (rnd(&x) % 2) {
            damage(&x, ops, n);
            damage(&x, ops, n);
        }
        int want = bruteforce(ops, n);
        lc_history_t *h = fresh();
        for (int i = 0; i < n; i++)
            assert_int_equal(lc_history_add(h, &ops[i]), 0);
        lc_report_t r;
        assert_int_equal(lc_check(h, NULL, &r), 0);
        if ((r.status == LC_LINEARIZABLE) != want) {
            static const char *v[] = {"linearizable", "not linearizable", "too complex"};
            fprintf(stderr, "case %d: brute force says %s, the checker %s\n", c, v[!want],
                    v[r.status]);
            for (int i = 0; i < n; i++) {
                const lc_op_t *o = &ops[i];
                fprintf(stderr,
                        "  #%d kind=%d v=%" PRId64 " e=%" PRId64 " out=%d found=%d err=%d "
                        "rev=%" PRId64 " [%" PRId64 ",%" PRId64 "]\n",
                        i + 1, o->kind, o->value, o->expect_rev, o->outcome, o->found, o->err,
                        o->rev, o->invoke_ns, o->complete_ns);
            }
            fprintf(stderr, "%s", r.explain);
            fail();
        }
        want ? valid++ : invalid++;
        lc_report_free(&r);
        lc_history_free(h);
    }
    fprintf(stderr, "%d random histories: %d linearizable, %d not, all agree\n", cases, valid,
            invalid);
    assert_true(valid > cases / 4 && invalid > cases / 8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sequential),
        cmocka_unit_test(test_concurrent),
        cmocka_unit_test(test_unknown_happened),
        cmocka_unit_test(test_unknown_not_happened),
        cmocka_unit_test(test_stale_read),
        cmocka_unit_test(test_lost_update),
        cmocka_unit_test(test_lost_create),
        cmocka_unit_test(test_double_cas),
        cmocka_unit_test(test_double_cas_delete),
        cmocka_unit_test(test_revision_backwards_key),
        cmocka_unit_test(test_revision_backwards_global),
        cmocka_unit_test(test_revision_twice),
        cmocka_unit_test(test_read_foreign_revision),
        cmocka_unit_test(test_failure_reason_contradicts),
        cmocka_unit_test(test_unknown_seen_then_unseen),
        cmocka_unit_test(test_many_unknown),
        cmocka_unit_test(test_too_complex),
        cmocka_unit_test(test_file_format),
        cmocka_unit_test(test_long_history),
        cmocka_unit_test(test_random_vs_bruteforce),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
