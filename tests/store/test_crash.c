/*
 * test_crash.c -- kill -9 at any moment loses no acknowledged write and
 * leaves nothing half-written.
 *
 * What it proves (the durability rules of store.h): after a writer process is
 * killed with SIGKILL at a random moment and the store is opened again,
 *  (a) the revision never went down: it is >= every revision seen before and
 *      every revision the writer acknowledged;
 *  (b) every acknowledged write reads back, as of its revision, with exactly
 *      its value (a delete: not found as of its revision);
 *  (c) every live value is whole (it carries its own check) and
 *      create_rev <= mod_rev <= revision;
 *  (d) the history is whole: a watch from 0 delivers revisions 1..revision
 *      with no gap, each value whole, each event consistent with the one
 *      before it on the same key (prev, create_rev, version), acknowledged
 *      writes exactly as acknowledged, and replaying it gives the live state.
 *
 * How: the test re-executes itself (/proc/self/exe --child DIR FD SEED): fork
 * alone would carry an LMDB env across fork, and the parent must never have
 * the store open while a child does, so it closes it before forking. The child
 * opens the store, reads the mod_rev of its keys (it continues where the last
 * killed child stopped) and writes with 8 threads, each owning 50 keys:
 * creates, updates with the right expect_rev, deletes. After each write that
 * returned 0 it reports "op key rev seed len" on the pipe in one write() of
 * less than PIPE_BUF bytes, so a line is either all there or not at all. A
 * value is "LEN:SEED:" followed by LEN (1..8000) bytes generated from SEED, so
 * any torn or stale byte shows. The parent runs KP_CRASH_ROUNDS rounds
 * (default 30): start a child, wait for its first ack, let it run 20..300 ms,
 * kill -9, read what it acknowledged, check (a)-(d). KP_CRASH_SEED replays the
 * parent's random choices. The child dies with the parent (PR_SET_PDEATHSIG),
 * and the teardown kills it if an assert ends the test early.
 *
 * Limit: kill -9 ends the process, not the machine. The page cache survives,
 * so this proves that commits are atomic and acks come after commits, not
 * that data reaches the disk (a missing fsync would pass here; test_fault
 * proves that a failed fsync is never acknowledged).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/err.h"
#include "store/store.h"
#include "testutil.h"

#define CHILD_THREADS   8
#define KEYS_PER_THREAD 50
#define NKEYS           (CHILD_THREADS * KEYS_PER_THREAD)
#define PAYLOAD_MAX     8000
#define VALUE_MAX       (PAYLOAD_MAX + 32)

/* ---- values that check themselves ---- */

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Byte i of the payload of `seed`: the bytes of splitmix(seed), 8 at a time. */
static void payload(uint64_t seed, unsigned char *out, size_t len)
{
    uint64_t x = seed;
    for (size_t i = 0; i < len; i += 8) {
        uint64_t r = splitmix(&x);
        for (size_t j = 0; j < 8 && i + j < len; j++)
            out[i + j] = (unsigned char)(r >> (8 * j));
    }
}

/* "PLEN:SEED:" + payload; returns the value's length. buf holds VALUE_MAX. */
static size_t make_value(char *buf, uint64_t seed, unsigned plen)
{
    int n = snprintf(buf, 32, "%u:%016" PRIx64 ":", plen, seed);
    payload(seed, (unsigned char *)buf + n, plen);
    return (size_t)n + plen;
}

/* 0 if `v` is a whole value; its seed and payload length go to the out
 * parameters. -1 if anything in it is off. */
static int check_value(const char *v, size_t len, uint64_t *seed, unsigned *plen)
{
    size_t i = 0;
    unsigned p = 0;
    while (i < len && i < 5 && v[i] >= '0' && v[i] <= '9')
        p = p * 10 + (unsigned)(v[i++] - '0');
    if (i == 0 || i >= len || v[i] != ':') return -1;
    i++;
    if (len < i + 17 || v[i + 16] != ':') return -1;
    uint64_t sd = 0;
    for (size_t j = 0; j < 16; j++) {
        char c = v[i + j];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return -1;
        sd = sd << 4 | (uint64_t)d;
    }
    i += 17;
    if (p < 1 || p > PAYLOAD_MAX || len - i != p) return -1;
    unsigned char want[8];
    uint64_t x = sd;
    for (size_t k = 0; k < p; k += 8) {
        uint64_t r = splitmix(&x);
        size_t n = p - k < 8 ? p - k : 8;
        for (size_t j = 0; j < n; j++)
            want[j] = (unsigned char)(r >> (8 * j));
        if (memcmp(v + i + k, want, n) != 0) return -1;
    }
    *seed = sd;
    *plen = p;
    return 0;
}

static void key_name(char *buf, size_t n, int idx)
{
    snprintf(buf, n, "/registry/crash/t%d/k%02d", idx / KEYS_PER_THREAD, idx % KEYS_PER_THREAD);
}

/* The key's index, or -1 if it is not one of ours. */
static int key_index(const char *key, size_t len)
{
    int t, k;
    char again[64];
    if (sscanf(key, "/registry/crash/t%d/k%d", &t, &k) != 2 || t < 0 || t >= CHILD_THREADS ||
        k < 0 || k >= KEYS_PER_THREAD)
        return -1;
    key_name(again, sizeof again, t * KEYS_PER_THREAD + k);
    return strlen(again) == len && memcmp(again, key, len) == 0 ? t * KEYS_PER_THREAD + k : -1;
}

/* ---- the child: writes until killed ---- */

struct cthread {
    pthread_t tid;
    int t;
    store_t *s;
    int fd;
    uint64_t rng;
    int exists[KEYS_PER_THREAD];
    int64_t mod_rev[KEYS_PER_THREAD];
};

static void child_report(int fd, const char *line, size_t n)
{
    if (write(fd, line, n) != (ssize_t)n) _exit(5); /* the parent is gone */
}

static void child_fail(int fd, const char *what, const char *key, int rc)
{
    char line[256];
    int n = snprintf(line, sizeof line, "X %s %s %s\n", what, key, err_str(rc));
    child_report(fd, line, (size_t)n);
    _exit(3);
}

static void *child_thread(void *arg)
{
    struct cthread *ct = arg;
    char *val = malloc(VALUE_MAX);
    char key[64], line[128];
    if (!val) _exit(4);
    for (int k = 0; k < KEYS_PER_THREAD; k++) {
        key_name(key, sizeof key, ct->t * KEYS_PER_THREAD + k);
        store_kv_t *kv = NULL;
        int rc = store_get(ct->s, key, 0, &kv);
        if (rc == 0) {
            ct->exists[k] = 1;
            ct->mod_rev[k] = kv->mod_rev;
            free(kv);
        } else if (rc != KP_ENOTFOUND) {
            child_fail(ct->fd, "get", key, rc);
        }
    }
    for (;;) {
        int k = (int)(splitmix(&ct->rng) % KEYS_PER_THREAD);
        key_name(key, sizeof key, ct->t * KEYS_PER_THREAD + k);
        uint64_t seed = splitmix(&ct->rng);
        unsigned plen = 1 + (unsigned)(splitmix(&ct->rng) % PAYLOAD_MAX);
        int64_t rev = 0;
        int rc, n;
        if (!ct->exists[k]) {
            size_t len = make_value(val, seed, plen);
            rc = store_create(ct->s, key, val, len, &rev);
            if (rc != 0) child_fail(ct->fd, "create", key, rc);
            n = snprintf(line, sizeof line, "C %s %" PRId64 " %" PRIx64 " %u\n", key, rev, seed,
                         plen);
            ct->exists[k] = 1;
        } else if (splitmix(&ct->rng) % 4 == 0) {
            rc = store_delete(ct->s, key, ct->mod_rev[k], &rev);
            if (rc != 0) child_fail(ct->fd, "delete", key, rc);
            n = snprintf(line, sizeof line, "D %s %" PRId64 "\n", key, rev);
            ct->exists[k] = 0;
        } else {
            size_t len = make_value(val, seed, plen);
            rc = store_update(ct->s, key, val, len, ct->mod_rev[k], &rev);
            if (rc != 0) child_fail(ct->fd, "update", key, rc);
            n = snprintf(line, sizeof line, "U %s %" PRId64 " %" PRIx64 " %u\n", key, rev, seed,
                         plen);
        }
        ct->mod_rev[k] = rev;
        child_report(ct->fd, line, (size_t)n);
    }
    return NULL;
}

static int child_main(int argc, char **argv)
{
    if (argc != 5) return 2;
    const char *dir = argv[2];
    int fd = (int)strtol(argv[3], NULL, 10);
    uint64_t seed = strtoull(argv[4], NULL, 16);
    char *url = tu_lmdb_url(dir);
    store_t *s = NULL;
    int rc = store_open(url, NULL, &s);
    free(url);
    if (rc != 0) child_fail(fd, "open", dir, rc);
    static struct cthread ct[CHILD_THREADS];
    for (int t = 0; t < CHILD_THREADS; t++) {
        ct[t].t = t;
        ct[t].s = s;
        ct[t].fd = fd;
        ct[t].rng = seed ^ (0x1000193ull * (uint64_t)(t + 1));
        if (pthread_create(&ct[t].tid, NULL, child_thread, &ct[t]) != 0) _exit(4);
    }
    /* The parent kills us long before this; the limit only guards against a
     * parent that somehow forgot (it has PR_SET_PDEATHSIG as well). */
    sleep(120);
    _exit(6);
}

/* ---- the parent ---- */

struct ack {
    char op; /* 'C', 'U', 'D' */
    int key;
    int64_t rev;
    uint64_t seed;
    unsigned plen;
};

/* A key as replayed from the history. */
struct keystate {
    int exists;
    int64_t create_rev, mod_rev, version;
    uint64_t seed;
    unsigned plen;
};

struct crash {
    char *dir;
    store_t *s;  /* open only between rounds, never while a child runs */
    pid_t child; /* > 0 while a child may be running */
    int rfd;     /* the pipe's read end, -1 when closed */
    struct ack *acks;
    size_t nacks, cap;
    size_t *by_rev; /* by_rev[rev] = index into acks + 1, 0 if not acked */
    size_t by_rev_cap;
    int64_t max_seen;
    char *buf; /* unparsed pipe bytes */
    size_t buflen, bufcap;
};

static int setup(void **state)
{
    struct crash *c = calloc(1, sizeof *c);
    if (!c) return -1;
    c->dir = tu_tmpdir("crash");
    c->rfd = -1;
    *state = c;
    return 0;
}

/* Runs also when an assert ended the test: never leave a child behind. */
static int teardown(void **state)
{
    struct crash *c = *state;
    if (c->child > 0) {
        kill(c->child, SIGKILL);
        while (waitpid(c->child, NULL, 0) < 0 && errno == EINTR) {
        }
    }
    if (c->rfd >= 0) close(c->rfd);
    store_close(c->s);
    tu_rmtree(c->dir);
    free(c->dir);
    free(c->acks);
    free(c->by_rev);
    free(c->buf);
    free(c);
    return 0;
}

static uint64_t g_rng;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void add_ack(struct crash *c, const struct ack *a)
{
    if (c->nacks == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 1024;
        c->acks = realloc(c->acks, c->cap * sizeof *c->acks);
        assert_non_null(c->acks);
    }
    if ((size_t)a->rev >= c->by_rev_cap) {
        size_t n = c->by_rev_cap ? c->by_rev_cap : 1024;
        while (n <= (size_t)a->rev)
            n *= 2;
        c->by_rev = realloc(c->by_rev, n * sizeof *c->by_rev);
        assert_non_null(c->by_rev);
        memset(c->by_rev + c->by_rev_cap, 0, (n - c->by_rev_cap) * sizeof *c->by_rev);
        c->by_rev_cap = n;
    }
    if (c->by_rev[a->rev]) fail_msg("revision %" PRId64 " acknowledged twice", a->rev);
    c->acks[c->nacks++] = *a;
    c->by_rev[a->rev] = c->nacks;
}

/* Parse the complete lines in c->buf; a trailing partial line stays there
 * (and is dropped after the child is dead: it was never fully reported). */
static void parse_lines(struct crash *c)
{
    size_t start = 0;
    for (;;) {
        char *nl = memchr(c->buf + start, '\n', c->buflen - start);
        if (!nl) break;
        *nl = '\0';
        const char *line = c->buf + start;
        start = (size_t)(nl - c->buf) + 1;
        if (line[0] == 'X') fail_msg("child failed: %s", line);
        struct ack a = {0};
        char key[128];
        int n;
        if (line[0] == 'D')
            n = sscanf(line, "%c %127s %" SCNd64, &a.op, key, &a.rev) == 3;
        else
            n = sscanf(line, "%c %127s %" SCNd64 " %" SCNx64 " %u", &a.op, key, &a.rev, &a.seed,
                       &a.plen) == 5 &&
                (a.op == 'C' || a.op == 'U');
        a.key = key_index(key, strlen(key));
        if (!n || a.key < 0 || a.rev <= 0) fail_msg("bad line from the child: \"%s\"", line);
        add_ack(c, &a);
    }
    memmove(c->buf, c->buf + start, c->buflen - start);
    c->buflen -= start;
}

/* Read what the pipe has within timeout_ms. Returns 0 at EOF, else 1. */
static int read_pipe(struct crash *c, int timeout_ms)
{
    struct pollfd pfd = {.fd = c->rfd, .events = POLLIN};
    int rc = poll(&pfd, 1, timeout_ms);
    if (rc < 0 && errno == EINTR) return 1;
    assert_true(rc >= 0);
    if (rc == 0) return 1;
    if (c->bufcap - c->buflen < 4096) {
        c->bufcap = c->bufcap ? 2 * c->bufcap : 65536;
        c->buf = realloc(c->buf, c->bufcap);
        assert_non_null(c->buf);
    }
    ssize_t n = read(c->rfd, c->buf + c->buflen, c->bufcap - c->buflen);
    if (n < 0 && errno == EINTR) return 1;
    assert_true(n >= 0);
    if (n == 0) return 0;
    c->buflen += (size_t)n;
    parse_lines(c);
    return 1;
}

/* One child: start, first ack, 20..300 ms, kill -9, collect its acks. */
static void run_child(struct crash *c, int round)
{
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    char fdstr[16], seedstr[32];
    snprintf(fdstr, sizeof fdstr, "%d", p[1]);
    snprintf(seedstr, sizeof seedstr, "%" PRIx64, splitmix(&g_rng));
    char *argv[] = {"test_crash", "--child", c->dir, fdstr, seedstr, NULL};
    pid_t parent = getpid();

    assert_null(c->s); /* LMDB: one env per process, none across fork */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(7);
        fcntl(p[1], F_SETFD, 0);
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    c->child = pid;
    close(p[1]);
    c->rfd = p[0];

    size_t before = c->nacks;
    int64_t deadline = now_ms() + 60000;
    int open = 1;
    while (open && c->nacks == before) {
        if (now_ms() > deadline) fail_msg("round %d: no write acknowledged within 60 s", round);
        open = read_pipe(c, 100);
    }
    int64_t until = now_ms() + 20 + (int64_t)(splitmix(&g_rng) % 281);
    while (open) {
        int64_t left = until - now_ms();
        if (left <= 0) break;
        open = read_pipe(c, (int)left);
    }

    kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        assert_int_equal(errno, EINTR);
    c->child = 0;
    while (read_pipe(c, -1)) {
    }
    close(c->rfd);
    c->rfd = -1;
    c->buflen = 0; /* a partial last line was never acknowledged */
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
        fail_msg("round %d: the child ended by itself (status 0x%x)", round, status);
}

/* The event at revision `rev` is consistent with the replayed key and, if the
 * write was acknowledged, is exactly that write. Updates the replay. */
static void check_event(struct crash *c, const store_event_t *ev, int64_t rev, struct keystate *ks)
{
    int k = key_index(ev->kv.key, ev->kv.key_len);
    if (ev->kv.mod_rev != rev || k < 0)
        fail_msg("watch: event for \"%.*s\" at revision %" PRId64 ", want revision %" PRId64,
                 (int)ev->kv.key_len, ev->kv.key, ev->kv.mod_rev, rev);
    struct keystate *m = &ks[k];
    uint64_t seed = 0, pseed = 0;
    unsigned plen = 0, pplen = 0;
    if (m->exists != ev->has_prev)
        fail_msg("watch: %s at %" PRId64 ": has_prev %d, but the key %s", ev->kv.key, rev,
                 ev->has_prev, m->exists ? "existed" : "did not exist");
    if (ev->has_prev && (ev->prev.mod_rev != m->mod_rev || ev->prev.create_rev != m->create_rev ||
                         ev->prev.version != m->version ||
                         check_value(ev->prev.value, ev->prev.value_len, &pseed, &pplen) != 0 ||
                         pseed != m->seed || pplen != m->plen))
        fail_msg("watch: %s at %" PRId64 ": prev (mod %" PRId64 ") is not the value of %" PRId64,
                 ev->kv.key, rev, ev->prev.mod_rev, m->mod_rev);
    if (ev->type == STORE_PUT) {
        if (check_value(ev->kv.value, ev->kv.value_len, &seed, &plen) != 0)
            fail_msg("watch: %s at %" PRId64 ": torn value (%zu bytes)", ev->kv.key, rev,
                     ev->kv.value_len);
        int64_t want_create = m->exists ? m->create_rev : rev;
        int64_t want_version = m->exists ? m->version + 1 : 1;
        if (ev->kv.create_rev != want_create || ev->kv.version != want_version)
            fail_msg("watch: %s at %" PRId64 ": create %" PRId64 " version %" PRId64
                     ", want %" PRId64 " %" PRId64,
                     ev->kv.key, rev, ev->kv.create_rev, ev->kv.version, want_create, want_version);
        *m = (struct keystate){1, want_create, rev, want_version, seed, plen};
    } else if (ev->type == STORE_DELETE) {
        if (!m->exists) fail_msg("watch: delete of absent %s at %" PRId64, ev->kv.key, rev);
        memset(m, 0, sizeof *m);
    } else {
        fail_msg("watch: event type %d at %" PRId64, (int)ev->type, rev);
    }

    size_t ai = (size_t)rev < c->by_rev_cap ? c->by_rev[rev] : 0;
    if (ai) {
        const struct ack *a = &c->acks[ai - 1];
        char want_op = ev->type == STORE_DELETE ? 'D' : ev->has_prev ? 'U' : 'C';
        if (a->op != want_op || a->key != k ||
            (a->op != 'D' && (a->seed != seed || a->plen != plen)))
            fail_msg("watch: revision %" PRId64 " is not the acknowledged %c of key %d", rev, a->op,
                     a->key);
    }
}

/* (b): every write this round acknowledged reads back at its revision. */
static void check_acks(struct crash *c, size_t from)
{
    char key[64];
    for (size_t i = from; i < c->nacks; i++) {
        const struct ack *a = &c->acks[i];
        key_name(key, sizeof key, a->key);
        store_kv_t *kv = NULL;
        int rc = store_get(c->s, key, a->rev, &kv);
        if (a->op == 'D') {
            if (rc != KP_ENOTFOUND)
                fail_msg("acked delete of %s at %" PRId64 ": get gives %s", key, a->rev,
                         rc ? err_str(rc) : "a value");
            continue;
        }
        if (rc != 0)
            fail_msg("acked %c of %s at %" PRId64 ": get gives %s", a->op, key, a->rev,
                     err_str(rc));
        uint64_t seed;
        unsigned plen;
        int ok = kv->mod_rev == a->rev &&
                 check_value(kv->value, kv->value_len, &seed, &plen) == 0 && seed == a->seed &&
                 plen == a->plen &&
                 (a->op != 'C' || (kv->create_rev == a->rev && kv->version == 1));
        int64_t mod = kv->mod_rev;
        free(kv);
        if (!ok)
            fail_msg("acked %c of %s at %" PRId64 ": read mod_rev %" PRId64 " or value differs",
                     a->op, key, a->rev, mod);
    }
}

/* Open the store after a crash and check (a) to (d). */
static void check_store(struct crash *c, size_t round_from, int round)
{
    char *url = tu_lmdb_url(c->dir);
    int rc = store_open(url, NULL, &c->s);
    free(url);
    if (rc != 0) fail_msg("round %d: reopen after kill -9: %s", round, err_str(rc));

    /* (a) */
    store_status_t st;
    assert_int_equal(store_status(c->s, &st), 0);
    int64_t rev = st.revision;
    if (rev < c->max_seen)
        fail_msg("round %d: revision went down from %" PRId64 " to %" PRId64, round, c->max_seen,
                 rev);
    for (size_t i = round_from; i < c->nacks; i++) {
        if (c->acks[i].rev > rev)
            fail_msg("round %d: acknowledged revision %" PRId64 " is beyond the store's %" PRId64,
                     round, c->acks[i].rev, rev);
    }
    c->max_seen = rev;

    /* (b) */
    check_acks(c, round_from);

    /* (d): replay the whole history into ks[] */
    struct keystate *ks = calloc(NKEYS, sizeof *ks);
    assert_non_null(ks);
    store_watch_t *w = NULL;
    assert_int_equal(store_watch_open(c->s, "", 0, &w), 0);
    for (int64_t r = 1; r <= rev; r++) {
        const store_event_t *ev = NULL;
        rc = store_watch_next(w, 10000, &ev);
        if (rc != 0) {
            store_watch_close(w);
            fail_msg("round %d: watch from 0 at revision %" PRId64 " of %" PRId64 ": %s", round, r,
                     rev, err_str(rc));
        }
        check_event(c, ev, r, ks);
    }
    const store_event_t *ev = NULL;
    rc = store_watch_next(w, 0, &ev);
    store_watch_close(w);
    if (rc != KP_ETIMEDOUT)
        fail_msg("round %d: watch from 0 goes on past revision %" PRId64 ": %s", round, rev,
                 rc ? err_str(rc) : "an event");

    /* (c): the live state is whole and is what the history replays to */
    store_range_t *r = NULL;
    assert_int_equal(store_range(c->s, "", NULL, 0, 0, &r), 0);
    assert_int_equal(r->revision, rev);
    size_t live = 0;
    for (int k = 0; k < NKEYS; k++)
        live += (size_t)ks[k].exists;
    if (r->count != live)
        fail_msg("round %d: %zu live keys, the history gives %zu", round, r->count, live);
    for (size_t i = 0; i < r->count; i++) {
        const store_kv_t *kv = &r->kvs[i];
        uint64_t seed;
        unsigned plen;
        int k = key_index(kv->key, kv->key_len);
        if (k < 0 || check_value(kv->value, kv->value_len, &seed, &plen) != 0 ||
            !(1 <= kv->create_rev && kv->create_rev <= kv->mod_rev && kv->mod_rev <= rev))
            fail_msg("round %d: %s is torn or out of range (create %" PRId64 " mod %" PRId64 ")",
                     round, kv->key, kv->create_rev, kv->mod_rev);
        const struct keystate *m = &ks[k];
        if (!m->exists || m->create_rev != kv->create_rev || m->mod_rev != kv->mod_rev ||
            m->version != kv->version || m->seed != seed || m->plen != plen)
            fail_msg("round %d: %s differs from its history", round, kv->key);
    }
    assert_int_equal(st.keys, r->count);
    store_range_free(r);
    free(ks);

    store_close(c->s);
    c->s = NULL;
}

static void test_kill9(void **state)
{
    struct crash *c = *state;
    const char *e = getenv("KP_CRASH_ROUNDS");
    long rounds = e ? strtol(e, NULL, 10) : 0;
    if (rounds <= 0) rounds = 30;
    e = getenv("KP_CRASH_SEED");
    uint64_t seed = e ? strtoull(e, NULL, 16) : (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32;
    g_rng = seed;
    print_message("KP_CRASH_SEED=%" PRIx64 " KP_CRASH_ROUNDS=%ld\n", seed, rounds);

    for (int round = 1; round <= (int)rounds; round++) {
        size_t from = c->nacks;
        run_child(c, round);
        check_store(c, from, round);
    }
    print_message("%ld rounds, %zu acknowledged writes, final revision %" PRId64 "\n", rounds,
                  c->nacks, c->max_seen);
    /* Every round wrote; the revisions acknowledged are the store's only
     * history besides unacknowledged tails, so acks cannot outnumber it. */
    assert_true(c->max_seen >= (int64_t)c->nacks);
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "--child") == 0) return child_main(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kill9, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
