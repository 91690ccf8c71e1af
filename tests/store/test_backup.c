/*
 * test_backup.c -- a backup taken under load restores to exactly one revision.
 *
 * What it proves: store_backup() while a writer thread keeps writing yields a
 * copy of one consistent revision R (its *out_rev): store_restore() of it
 * opens as a store whose revision is R and whose every key (value, create_rev,
 * mod_rev, version) equals the source's store_range() as of R, and whose next
 * write gets R+1. Also the refusals: a backup onto an existing path and a
 * restore into a directory that already holds a store fail with KP_EEXIST and
 * leave what is there alone; a restore of something that is not a backup
 * (random bytes, a text file, an LMDB file that is not a kplane store, an
 * empty file, a truncated backup) fails with KP_ECORRUPT and leaves no store
 * behind.
 *
 * How: one writer thread creates, updates (expect_rev = mod_rev) and deletes
 * 200 keys with values of random length while the main thread backs up a
 * store padded with 6 MB of bulk, so that writes land during the copy. The
 * writer records its first failure; the main thread asserts after join. The
 * truncated-backup restore runs in a child process, so a crash is reported
 * as a failure rather than ending the binary.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <lmdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/err.h"
#include "store/store.h"
#include "testutil.h"

#define NKEYS      200
#define BULK_KEYS  400
#define BULK_BYTES 16000

struct writer {
    pthread_t tid;
    store_t *s;
    atomic_int stop;
    atomic_long writes;
    uint64_t rng;
    char err[256];
};

static uint64_t next_rand(uint64_t *x)
{
    /* splitmix64 */
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void key_name(char *buf, size_t n, int i)
{
    snprintf(buf, n, "/registry/test/backup/default/k%03d", i);
}

/* A value of random length 1..2000 that names its key and write. */
static size_t make_value(char *buf, uint64_t *rng, int k, long w)
{
    size_t len = 1 + next_rand(rng) % 2000;
    for (size_t i = 0; i < len; i++)
        buf[i] = (char)('a' + (k + w + (long)i) % 26);
    char head[48];
    int n = snprintf(head, sizeof head, "k%d w%ld ", k, w);
    memcpy(buf, head, (size_t)n < len ? (size_t)n : len);
    return len;
}

static void *writer_main(void *arg)
{
    struct writer *wr = arg;
    char key[64];
    static char val[2048];
    while (!atomic_load(&wr->stop)) {
        int k = (int)(next_rand(&wr->rng) % NKEYS);
        long w = atomic_load(&wr->writes);
        key_name(key, sizeof key, k);
        store_kv_t *kv = NULL;
        int rc = store_get(wr->s, key, 0, &kv);
        size_t len = make_value(val, &wr->rng, k, w);
        const char *what;
        if (rc == KP_ENOTFOUND) {
            what = "create";
            rc = store_create(wr->s, key, val, len, NULL);
        } else if (rc != 0) {
            what = "get";
        } else if (next_rand(&wr->rng) % 10 < 3) {
            what = "delete";
            rc = store_delete(wr->s, key, kv->mod_rev, NULL);
        } else {
            what = "update";
            rc = store_update(wr->s, key, val, len, kv->mod_rev, NULL);
        }
        free(kv);
        if (rc != 0) {
            snprintf(wr->err, sizeof wr->err, "%s %s: %s", what, key, err_str(rc));
            return NULL;
        }
        atomic_fetch_add(&wr->writes, 1);
    }
    return NULL;
}

static void wait_writes(struct writer *wr, long n)
{
    const struct timespec ms = {0, 1000 * 1000};
    for (int i = 0; atomic_load(&wr->writes) < n && !wr->err[0]; i++) {
        if (i > 60 * 1000) fail_msg("the writer makes no progress");
        nanosleep(&ms, NULL);
    }
}

static char *path_in(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    assert_non_null(p);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static store_t *open_dir(const char *dir)
{
    char *url = tu_lmdb_url(dir);
    store_t *s = NULL;
    int rc = store_open(url, NULL, &s);
    free(url);
    if (rc != 0) fail_msg("store_open(%s): %s", dir, err_str(rc));
    return s;
}

static void write_file(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    assert_int_equal(close(fd), 0);
}

static void assert_same_range(const store_range_t *want, const store_range_t *got)
{
    assert_int_equal(got->count, want->count);
    assert_int_equal(got->more, 0);
    for (size_t i = 0; i < want->count; i++) {
        const store_kv_t *a = &want->kvs[i], *b = &got->kvs[i];
        if (a->key_len != b->key_len || memcmp(a->key, b->key, a->key_len) != 0)
            fail_msg("key %zu: \"%s\" in the source, \"%s\" restored", i, a->key, b->key);
        if (a->value_len != b->value_len || memcmp(a->value, b->value, a->value_len) != 0 ||
            a->create_rev != b->create_rev || a->mod_rev != b->mod_rev || a->version != b->version)
            fail_msg("%s: source %zu bytes create %" PRId64 " mod %" PRId64 " version %" PRId64
                     ", restored %zu bytes create %" PRId64 " mod %" PRId64 " version %" PRId64,
                     a->key, a->value_len, a->create_rev, a->mod_rev, a->version, b->value_len,
                     b->create_rev, b->mod_rev, b->version);
    }
}

/* The restored store in `dir` is the source as of `rev`, and writable. */
static void check_restored(store_t *src, const char *dir, int64_t rev)
{
    store_t *r = open_dir(dir);
    store_status_t st;
    assert_int_equal(store_status(r, &st), 0);
    assert_int_equal(st.revision, rev);

    store_range_t *want = NULL, *got = NULL;
    assert_int_equal(store_range(src, "", NULL, 0, rev, &want), 0);
    assert_int_equal(store_range(r, "", NULL, 0, 0, &got), 0);
    assert_int_equal(want->revision, rev);
    assert_int_equal(got->revision, rev);
    assert_int_equal(st.keys, want->count);
    assert_same_range(want, got);
    store_range_free(want);
    store_range_free(got);

    int64_t next = 0;
    assert_int_equal(store_create(r, "/registry/test/backup/after-restore", "x", 1, &next), 0);
    assert_int_equal(next, rev + 1);
    store_close(r);
}

static void test_backup_under_load(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("backup-src");
    char *bdir = tu_tmpdir("backup-file");
    char *rdir = tu_tmpdir("backup-restored");
    char *bpath = path_in(bdir, "store.backup");
    store_t *s = open_dir(dir);

    char key[64];
    static char val[2048], big[BULK_BYTES];
    uint64_t rng = 42;
    for (int k = 0; k < NKEYS; k++) {
        key_name(key, sizeof key, k);
        size_t len = make_value(val, &rng, k, -1);
        assert_int_equal(store_create(s, key, val, len, NULL), 0);
    }
    /* Bulk that makes a copy take long enough for writes to land during it. */
    for (int k = 0; k < BULK_KEYS; k++) {
        snprintf(key, sizeof key, "/registry/test/backup/bulk/b%03d", k);
        for (size_t i = 0; i < sizeof big; i++)
            big[i] = (char)next_rand(&rng);
        assert_int_equal(store_create(s, key, big, sizeof big, NULL), 0);
    }

    struct writer *wr = calloc(1, sizeof *wr);
    assert_non_null(wr);
    wr->s = s;
    wr->rng = 7;
    assert_int_equal(pthread_create(&wr->tid, NULL, writer_main, wr), 0);
    wait_writes(wr, 100);

    /* Back up until one copy overlapped at least one acknowledged write
     * (nearly always the first). */
    int64_t brev = 0;
    int rc = 0, attempt;
    long during = 0;
    for (attempt = 0; attempt < 20; attempt++) {
        unlink(bpath);
        long before = atomic_load(&wr->writes);
        rc = store_backup(s, bpath, &brev);
        during = atomic_load(&wr->writes) - before;
        if (rc != 0 || during > 1 || wr->err[0]) break;
    }
    long at_backup = atomic_load(&wr->writes);
    /* Let the source move on past the backup before comparing. */
    wait_writes(wr, at_backup + 50);
    atomic_store(&wr->stop, 1);
    pthread_join(wr->tid, NULL);
    if (wr->err[0]) fail_msg("writer: %s", wr->err);
    assert_int_equal(rc, 0);
    print_message("backup at revision %" PRId64 " (attempt %d, %ld writes during it)\n", brev,
                  attempt + 1, during);
    assert_true(during > 1);
    free(wr);

    store_status_t st;
    assert_int_equal(store_status(s, &st), 0);
    assert_true(brev > NKEYS + BULK_KEYS);
    assert_true(brev < st.revision);

    assert_int_equal(store_restore(bpath, rdir), 0);
    check_restored(s, rdir, brev);

    store_close(s);
    tu_rmtree(dir);
    tu_rmtree(bdir);
    tu_rmtree(rdir);
    free(dir);
    free(bdir);
    free(rdir);
    free(bpath);
}

static void test_refusals(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("backup-src");
    char *bdir = tu_tmpdir("backup-file");
    char *rdir = tu_tmpdir("backup-restored");
    char *bpath = path_in(bdir, "store.backup");
    store_t *s = open_dir(dir);
    int64_t rev = 0;
    assert_int_equal(store_create(s, "/registry/test/backup/a", "1", 1, &rev), 0);
    assert_int_equal(store_update(s, "/registry/test/backup/a", "2", 1, rev, &rev), 0);

    /* Backup onto an existing path: refused, the file is untouched. */
    char *taken = path_in(bdir, "taken");
    write_file(taken, "keep", 4);
    assert_int_equal(store_backup(s, taken, NULL), KP_EEXIST);
    char buf[16] = "";
    FILE *f = fopen(taken, "rb");
    assert_non_null(f);
    assert_int_equal(fread(buf, 1, sizeof buf, f), 4);
    fclose(f);
    assert_memory_equal(buf, "keep", 4);

    int64_t brev = 0;
    assert_int_equal(store_backup(s, bpath, &brev), 0);
    assert_int_equal(brev, rev);
    assert_int_equal(store_backup(s, bpath, NULL), KP_EEXIST);
    char *second = path_in(bdir, "second.backup");
    assert_int_equal(store_backup(s, second, NULL), 0); /* out_rev may be NULL */
    assert_int_equal(store_create(s, "/registry/test/backup/b", "3", 1, NULL), 0);

    /* Not backups: random bytes, a text file, an LMDB file that is no store. */
    char *junk = path_in(bdir, "random.bin");
    static unsigned char noise[64 * 1024];
    uint64_t x = 1;
    for (size_t i = 0; i < sizeof noise; i++)
        noise[i] = (unsigned char)next_rand(&x);
    write_file(junk, noise, sizeof noise);
    char *text = path_in(bdir, "text.txt");
    write_file(text, "this is not a backup\n", 21);
    char *foreign = path_in(bdir, "foreign.mdb");
    {
        MDB_env *env;
        MDB_txn *txn;
        MDB_dbi dbi;
        MDB_val k = {3, "key"}, v = {5, "value"};
        assert_int_equal(mdb_env_create(&env), 0);
        assert_int_equal(mdb_env_open(env, foreign, MDB_NOSUBDIR, 0644), 0);
        assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
        assert_int_equal(mdb_dbi_open(txn, NULL, 0, &dbi), 0);
        assert_int_equal(mdb_put(txn, dbi, &k, &v, 0), 0);
        assert_int_equal(mdb_txn_commit(txn), 0);
        mdb_env_close(env);
        char *lock = path_in(bdir, "foreign.mdb-lock");
        unlink(lock);
        free(lock);
    }
    const char *bad[] = {junk, text, foreign};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = store_restore(bad[i], rdir);
        if (rc != KP_ECORRUPT)
            fail_msg("restore of %s: %s, want KP_ECORRUPT", bad[i], rc ? err_str(rc) : "0");
    }
    /* ... and left nothing behind: the good backup still restores there. */
    assert_int_equal(store_restore(bpath, rdir), 0);
    check_restored(s, rdir, brev);

    /* Restore into a directory that holds a store: refused, both untouched. */
    assert_int_equal(store_restore(bpath, rdir), KP_EEXIST);
    store_close(s);
    assert_int_equal(store_restore(bpath, dir), KP_EEXIST);
    store_t *r = open_dir(rdir);
    store_status_t st;
    assert_int_equal(store_status(r, &st), 0);
    assert_int_equal(st.revision, brev + 1); /* check_restored wrote one */
    store_close(r);
    s = open_dir(dir);
    assert_int_equal(store_status(s, &st), 0);
    assert_int_equal(st.revision, brev + 1);
    store_kv_t *kv = NULL;
    assert_int_equal(store_get(s, "/registry/test/backup/b", 0, &kv), 0);
    free(kv);
    store_close(s);

    tu_rmtree(dir);
    tu_rmtree(bdir);
    tu_rmtree(rdir);
    free(dir);
    free(bdir);
    free(rdir);
    free(bpath);
    free(taken);
    free(second);
    free(junk);
    free(text);
    free(foreign);
}

/* An empty file is not a backup either (LMDB would take it for a new env). */
static void test_restore_empty_file(void **state)
{
    (void)state;
    char *bdir = tu_tmpdir("backup-file");
    char *rdir = tu_tmpdir("backup-restored");
    char *empty = path_in(bdir, "empty");
    write_file(empty, "", 0);
    int rc = store_restore(empty, rdir);
    tu_rmtree(bdir);
    tu_rmtree(rdir);
    free(empty);
    free(bdir);
    free(rdir);
    if (rc != KP_ECORRUPT)
        fail_msg("restore of an empty file: %s, want KP_ECORRUPT", rc ? err_str(rc) : "0");
}

/* A truncated backup (a copy cut short, a disk that filled up) is not a
 * backup: restore must say KP_ECORRUPT, not crash. Run in a child process so
 * that a crash (SIGBUS from reading past the end of the mapped file) is
 * reported instead of ending this test binary. */
static void test_restore_truncated(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("backup-src");
    char *bdir = tu_tmpdir("backup-file");
    char *bpath = path_in(bdir, "store.backup");
    char *cut = path_in(bdir, "cut.backup");
    store_t *s = open_dir(dir);
    static char big[8000];
    char key[64];
    uint64_t rng = 3;
    for (int k = 0; k < 100; k++) {
        snprintf(key, sizeof key, "/registry/test/backup/trunc/t%03d", k);
        for (size_t i = 0; i < sizeof big; i++)
            big[i] = (char)next_rand(&rng);
        assert_int_equal(store_create(s, key, big, sizeof big, NULL), 0);
    }
    assert_int_equal(store_backup(s, bpath, NULL), 0);
    store_close(s);

    FILE *f = fopen(bpath, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long size = ftell(f);
    assert_true(size > 4 * 4096);
    rewind(f);
    const long cuts[] = {size / 2, 2 * 4096}; /* half; the two meta pages only */
    char *buf = malloc((size_t)size);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)size, f), (size_t)size);
    fclose(f);

    char what[160] = "";
    for (size_t i = 0; i < 2 && !what[0]; i++) {
        char *rdir = tu_tmpdir("backup-restored");
        unlink(cut);
        write_file(cut, buf, (size_t)cuts[i]);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            /* Die of a crash signal, not cmocka's handler (it would longjmp
             * into a copy of the test runner). */
            signal(SIGBUS, SIG_DFL);
            signal(SIGSEGV, SIG_DFL);
            int rc = store_restore(cut, rdir);
            _exit(rc == KP_ECORRUPT ? 0 : rc == 0 ? 100 : -rc);
        }
        int status = 0;
        while (waitpid(pid, &status, 0) < 0)
            assert_int_equal(errno, EINTR);
        if (WIFSIGNALED(status))
            snprintf(what, sizeof what, "killed by signal %d", WTERMSIG(status));
        else if (WEXITSTATUS(status) == 100)
            snprintf(what, sizeof what, "returned 0");
        else if (WEXITSTATUS(status) != 0)
            snprintf(what, sizeof what, "returned %s", err_str(-WEXITSTATUS(status)));
        if (what[0])
            snprintf(what + strlen(what), sizeof what - strlen(what),
                     " for a backup cut from %ld to %ld bytes", size, cuts[i]);
        tu_rmtree(rdir);
        free(rdir);
    }
    free(buf);
    tu_rmtree(dir);
    tu_rmtree(bdir);
    free(dir);
    free(bdir);
    free(bpath);
    free(cut);
    if (what[0]) fail_msg("restore of a truncated backup: %s, want KP_ECORRUPT", what);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backup_under_load),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_restore_empty_file),
        cmocka_unit_test(test_restore_truncated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
