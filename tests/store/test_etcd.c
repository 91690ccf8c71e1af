/*
 * test_etcd.c -- what only the etcd backend has to get right: endpoints that
 * fail, a cluster that goes away and comes back, a write whose outcome is
 * unknown. Runs under with-etcd.sh (test_etcd in CMakeLists.txt), each case
 * on a fresh single-node cluster (backend.h).
 *
 *  - an unreachable first endpoint is skipped; no reachable one fails open()
 *    with KP_EUNAVAILABLE;
 *  - while the cluster is down a write fails (never success), and a watch
 *    resumes after the restart from where it was: every change once, in
 *    order, nothing twice;
 *  - a write to a cluster that accepted the connection but never answers
 *    (SIGSTOP) fails with KP_ETIMEDOUT once the request timeout passes;
 *  - a backup is etcd's snapshot, written whole, never over an existing file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "backend.h"
#include "lib/err.h"
#include "store/store.h"
#include "testutil.h"

typedef struct fixture {
    char *dir;
    char *url; /* etcd://127.0.0.1:PORT */
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    f->dir = tu_tmpdir("etcd");
    f->url = tb_store_url(f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    tb_store_stop(f->dir);
    tu_rmtree(f->dir);
    free(f->url);
    free(f->dir);
    free(f);
    return 0;
}

static pid_t etcd_pid(const fixture_t *f)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/etcd.pid", f->dir);
    FILE *p = fopen(path, "r");
    long pid = 0;
    if (!p || fscanf(p, "%ld", &pid) != 1) fail_msg("no pid in %s", path);
    fclose(p);
    return (pid_t)pid;
}

static void test_endpoint_failover(void **state)
{
    fixture_t *f = *state;
    store_t *s = NULL;
    /* Port 1 refuses connections: requests move on to the live endpoint. */
    char url[512];
    snprintf(url, sizeof url, "etcd://127.0.0.1:1,%s", f->url + 7);
    assert_int_equal(store_open(url, NULL, &s), 0);
    int64_t rev = 0;
    assert_int_equal(store_create(s, "/f/a", "1", 1, &rev), 0);
    assert_int_equal(rev, 1);
    store_kv_t *kv;
    assert_int_equal(store_get(s, "/f/a", 0, &kv), 0);
    assert_string_equal(kv->value, "1");
    free(kv);
    store_close(s);

    assert_int_equal(store_open("etcd://127.0.0.1:1", NULL, &s), KP_EUNAVAILABLE);
    assert_null(s);
    assert_int_equal(store_open("etcd://", NULL, &s), KP_EINVAL);
    assert_int_equal(store_open("etcd://a:1,,b:2", NULL, &s), KP_EINVAL);
}

static void test_watch_resumes_after_restart(void **state)
{
    fixture_t *f = *state;
    store_t *s = NULL;
    assert_int_equal(store_open(f->url, NULL, &s), 0);
    store_watch_t *w;
    const store_event_t *ev;
    assert_int_equal(store_watch_open(s, "/r/", 0, &w), 0);
    assert_int_equal(store_create(s, "/r/a", "a1", 2, NULL), 0); /* 1 */
    assert_int_equal(store_create(s, "/r/b", "b1", 2, NULL), 0); /* 2 */
    assert_int_equal(store_watch_next(w, 5000, &ev), 0);
    assert_int_equal(ev->kv.mod_rev, 1);

    tb_store_stop(f->dir);
    /* Nothing answers: the write fails, and is not taken for a success. */
    int64_t rev = -1;
    int rc = store_update(s, "/r/a", "a2", 2, 0, &rev);
    assert_true(rc == KP_EUNAVAILABLE || rc == KP_ETIMEDOUT);
    assert_int_equal(rev, -1);
    store_kv_t *kv;
    assert_int_equal(store_get(s, "/r/a", 0, &kv), KP_EUNAVAILABLE);

    tb_store_restart(f->dir);
    assert_int_equal(store_update(s, "/r/a", "a2", 2, 1, &rev), 0);
    assert_int_equal(rev, 3);
    assert_int_equal(store_delete(s, "/r/b", 2, &rev), 0);
    assert_int_equal(rev, 4);
    /* Revision 2 was read before the cluster went away (or is read now);
     * then 3 and 4 from the new stream: each exactly once, in order. */
    int64_t want[] = {2, 3, 4};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(store_watch_next(w, 30000, &ev), 0);
        assert_int_equal(ev->kv.mod_rev, want[i]);
    }
    assert_int_equal(ev->type, STORE_DELETE);
    assert_int_equal(ev->has_prev, 1);
    assert_string_equal(ev->prev.value, "b1");
    assert_int_equal(store_watch_next(w, 300, &ev), KP_ETIMEDOUT);
    assert_int_equal(store_watch_revision(w), 4);
    store_watch_close(w);
    store_close(s);
}

static void test_write_timeout_is_not_success(void **state)
{
    fixture_t *f = *state;
    store_t *s = NULL;
    assert_int_equal(store_open(f->url, NULL, &s), 0);
    assert_int_equal(store_create(s, "/t/a", "1", 1, NULL), 0);
    pid_t pid = etcd_pid(f);
    assert_int_equal(kill(pid, SIGSTOP), 0);
    int64_t rev = -1;
    int rc = store_update(s, "/t/a", "2", 1, 1, &rev); /* waits out the timeout */
    kill(pid, SIGCONT);
    assert_int_equal(rc, KP_ETIMEDOUT);
    assert_int_equal(rev, -1);
    /* Its outcome was unknown, not lost: the cluster may have applied it.
     * Either way the store still answers, and consistently. */
    store_kv_t *kv;
    assert_int_equal(store_get(s, "/t/a", 0, &kv), 0);
    assert_true(!strcmp(kv->value, "1") || !strcmp(kv->value, "2"));
    free(kv);
    store_close(s);
}

static void test_backup_is_a_snapshot(void **state)
{
    fixture_t *f = *state;
    store_t *s = NULL;
    assert_int_equal(store_open(f->url, NULL, &s), 0);
    for (int i = 0; i < 10; i++) {
        char key[32];
        snprintf(key, sizeof key, "/b/%d", i);
        assert_int_equal(store_create(s, key, key, strlen(key), NULL), 0);
    }
    char path[4096], missing[4096];
    snprintf(path, sizeof path, "%s/snap.db", f->dir);
    snprintf(missing, sizeof missing, "%s/no/such/dir/snap.db", f->dir);
    int64_t rev = 0;
    assert_int_equal(store_backup(s, path, &rev), 0);
    assert_int_equal(rev, 10);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size > 4096); /* a bbolt file: pages, not a stub */
    assert_int_equal(store_backup(s, path, &rev), KP_EEXIST);
    assert_int_equal(store_backup(s, missing, &rev), KP_ENOTFOUND);
    store_close(s);
}

int main(void)
{
    if (!tb_is_etcd()) {
        print_message("test_etcd: not under with-etcd.sh, nothing to test\n");
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_endpoint_failover, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_resumes_after_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_timeout_is_not_success, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backup_is_a_snapshot, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
