/*
 * lin_record.c -- record a concurrent history of store operations for the
 * linearizability checker (lincheck.h; check it with lin_check).
 *
 *   lin_record URL --out FILE [--threads N] [--keys K] [--seconds S]
 *              [--crashes C] [--pause-us U] [--seed X] [--prefix P]
 *              [--lenient-unavailable 1]
 *
 * Works on any store URL (lmdb:DIR, etcd://...). Two processes:
 *
 *  - The parent (this one) never opens the store. It decides every
 *    operation, stamps its invocation and its completion on the monotonic
 *    clock and appends both to FILE as they happen (one write(2) per line,
 *    so a kill -9 of the parent loses at most the line being written, and an
 *    invocation without completion reads as "unknown"). Its timestamps
 *    bracket the real operation, so the checker's windows are conservative.
 *  - A child (forked) opens the store and runs N worker threads; worker i
 *    takes commands from its own pipe and answers on one shared pipe, one
 *    line in one write() each (atomic below PIPE_BUF).
 *
 * With --crashes C the parent kills the child with SIGKILL C times at random
 * moments spread over the run, each time 0-0.6 ms after every idle worker
 * was sent a write (for lmdb: the process that holds the store dies
 * mid-commit, with several writers in one group commit). The operations in flight then are recorded
 * as "unknown" bounded by the moment the dead child was reaped (a dead process's write cannot take
 * effect later), and a new child reopens the store and carries on: the checker verifies the history
 * across the crash. Faults outside (killing or stopping etcd members) are the caller's; errors such
 * as timeouts are recorded as they come ("error": an unknown outcome with no bound for a write,
 * nothing for a read). A write that failed with KP_EUNAVAILABLE is recorded as "fail" (did not take
 * effect), as store.h promises for etcd: if it did take effect after all, the value it wrote shows
 * up in a read and the checker flags that read. --lenient-unavailable 1 records those as "error"
 * (unknown) instead, to look past that one rule.
 *
 * At the end every key is read once more, in turn, and the child is told to
 * close the store. Exit status: 0 when the run went as asked, 1 when it did
 * not (a child died unasked, e.g. of a crash in the store code; no progress
 * after a crash; ...), 2 on
 * usage errors. Summary lines go to stderr and, as comments, to FILE.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/clock.h"
#include "lib/err.h"
#include "store/store.h"

#define MAX_THREADS 64
#define MAX_KEYS    1024
#define LINE_MAX_   512

/* ---- shared ---- */

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static const char *err_word(int rc)
{
    switch (rc) {
    case KP_ETIMEDOUT:
        return "timedout";
    case KP_EUNAVAILABLE:
        return "unavailable";
    case KP_EIO:
        return "io";
    case KP_EPOISONED:
        return "poisoned";
    case KP_ENOSPC:
        return "nospc";
    case KP_ENOMEM:
        return "nomem";
    case KP_ECLOSED:
        return "closed";
    default:
        return "other";
    }
}

/* ---- the child: runs the operations ---- */

typedef struct worker {
    pthread_t tid;
    store_t *s;
    int cmd_fd, res_fd;
    int lenient; /* --lenient-unavailable */
} worker_t;

static void put_line(int fd, const char *line, size_t n)
{
    if (write(fd, line, n) != (ssize_t)n) _exit(5); /* the parent is gone */
}

/* "id kind key value expect" -> "id result..." */
static void run_one(worker_t *w, char *cmd)
{
    long long id, value, expect;
    char kind, key[STORE_KEY_MAX + 1], val[32], out[LINE_MAX_];
    if (sscanf(cmd, "%lld %c %400s %lld %lld", &id, &kind, key, &value, &expect) != 5) _exit(7);
    int vlen = snprintf(val, sizeof val, "%lld", value);
    int64_t rev = 0;
    int rc, n;
    store_kv_t *kv = NULL;
    switch (kind) {
    case 'c':
        rc = store_create(w->s, key, val, (size_t)vlen, &rev);
        break;
    case 'u':
        rc = store_update(w->s, key, val, (size_t)vlen, expect, &rev);
        break;
    case 'd':
        rc = store_delete(w->s, key, expect, &rev);
        break;
    case 'g':
        rc = store_get(w->s, key, 0, &kv);
        break;
    default:
        _exit(7);
    }
    if (rc == 0 && kind == 'g') {
        char *end = NULL;
        long long got = strtoll(kv->value, &end, 10);
        if (!kv->value_len || *end) got = -1; /* not one of ours: the checker flags it */
        n = snprintf(out, sizeof out, "%lld ok %" PRId64 " %lld\n", id, kv->mod_rev, got);
        free(kv);
    } else if (rc == 0) {
        n = snprintf(out, sizeof out, "%lld ok %" PRId64 "\n", id, rev);
    } else if (rc == KP_ENOTFOUND) {
        n = snprintf(out, sizeof out, "%lld notfound\n", id);
    } else if (rc == KP_EEXIST && kind == 'c') {
        n = snprintf(out, sizeof out, "%lld exists\n", id);
    } else if (rc == KP_ECONFLICT && (kind == 'u' || kind == 'd')) {
        n = snprintf(out, sizeof out, "%lld conflict %" PRId64 "\n", id, rev);
    } else if (rc == KP_EUNAVAILABLE && kind != 'g' && !w->lenient) {
        /* store.h: no endpoint took the request; it did not take effect */
        n = snprintf(out, sizeof out, "%lld fail %s\n", id, err_word(rc));
    } else {
        n = snprintf(out, sizeof out, "%lld error %s\n", id, err_word(rc));
    }
    put_line(w->res_fd, out, (size_t)n);
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    char buf[4096];
    size_t len = 0;
    for (;;) {
        char *nl = memchr(buf, '\n', len);
        if (nl) {
            *nl = '\0';
            run_one(w, buf);
            size_t used = (size_t)(nl + 1 - buf);
            memmove(buf, nl + 1, len - used);
            len -= used;
            continue;
        }
        ssize_t r = read(w->cmd_fd, buf + len, sizeof buf - 1 - len);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return NULL; /* the parent is done with us */
        len += (size_t)r;
    }
}

static void child_main(const char *url, int threads, int lenient, const int *cmd_fds, int res_fd)
{
    store_t *s = NULL;
    int rc = store_open(url, NULL, &s);
    if (rc != 0) {
        char line[256];
        int n = snprintf(line, sizeof line, "X open %s\n", err_word(rc));
        put_line(res_fd, line, (size_t)n);
        _exit(3);
    }
    static worker_t w[MAX_THREADS];
    for (int i = 0; i < threads; i++) {
        w[i] = (worker_t){.s = s, .cmd_fd = cmd_fds[i], .res_fd = res_fd, .lenient = lenient};
        if (pthread_create(&w[i].tid, NULL, worker_main, &w[i]) != 0) _exit(4);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(w[i].tid, NULL);
    store_close(s);
    _exit(0);
}

/* ---- the parent: decides, stamps and records ---- */

typedef struct slot {
    int64_t id; /* the op in flight, 0: idle */
    char kind;
    int key;
    int64_t next_at; /* idle until then */
} slot_t;

typedef struct rec {
    const char *url;
    int threads, keys, crashes, seconds, lenient;
    int64_t pause_ns;
    uint64_t rng;
    char prefix[128];
    int out_fd;

    pid_t child;
    int cmd_fd[MAX_THREADS];
    int res_fd;
    char rbuf[8192];
    size_t rlen;

    slot_t slot[MAX_THREADS];
    int64_t next_id;
    int present[MAX_KEYS];
    int64_t rev[MAX_KEYS];

    /* counts */
    uint64_t invoked, ok, failed, errors, unknown;
    uint64_t ok_since_crash;
    int crashes_done, restarts, quick_deaths, child_deaths;
    int stalled; /* a crash was followed by no progress */
} rec_t;

static void logf_(rec_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(rec_t *r, const char *fmt, ...)
{
    char line[LINE_MAX_ + 64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof line) n = (int)sizeof line - 1;
    if (write(r->out_fd, line, (size_t)n) != n) {
        perror("lin_record: write");
        exit(1);
    }
}

static void key_name(const rec_t *r, int k, char *buf, size_t n)
{
    snprintf(buf, n, "%sk%03d", r->prefix, k);
}

static int spawn(rec_t *r)
{
    int cmd[MAX_THREADS][2], res[2];
    if (pipe2(res, O_CLOEXEC) != 0) return -1;
    for (int i = 0; i < r->threads; i++)
        if (pipe2(cmd[i], O_CLOEXEC) != 0) return -1;
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fds[MAX_THREADS];
        close(res[0]);
        for (int i = 0; i < r->threads; i++) {
            close(cmd[i][1]);
            fds[i] = cmd[i][0];
        }
        close(r->out_fd);
        child_main(r->url, r->threads, r->lenient, fds, res[1]);
    }
    close(res[1]);
    r->res_fd = res[0];
    r->rlen = 0;
    for (int i = 0; i < r->threads; i++) {
        close(cmd[i][0]);
        r->cmd_fd[i] = cmd[i][1];
    }
    r->child = pid;
    return 0;
}

/* The child is gone (killed or exited) and its answers are all read: reap
 * it, record what was in flight as unknown (bounded by now), start another. */
static int respawn(rec_t *r, int killed)
{
    int status = 0;
    waitpid(r->child, &status, 0);
    int64_t now = clock_mono_ns();
    close(r->res_fd);
    for (int i = 0; i < r->threads; i++)
        close(r->cmd_fd[i]);
    int in_flight = 0;
    for (int i = 0; i < r->threads; i++) {
        slot_t *s = &r->slot[i];
        if (!s->id) continue;
        logf_(r, "R %" PRId64 " %" PRId64 " unknown\n", s->id, now);
        if (s->kind != 'g') r->unknown++;
        s->id = 0;
        in_flight++;
    }
    if (killed) {
        r->crashes_done++;
        if (r->ok_since_crash == 0) r->stalled = 1; /* nothing done since the last one */
        logf_(r, "# crash %d: child %d killed with SIGKILL at %" PRId64 ", %d ops in flight\n",
              r->crashes_done, (int)r->child, now, in_flight);
    } else {
        /* Nobody asked it to: a crash in the store code (an abort, a
         * sanitizer report) or a store it could not open. Carry on, but the
         * run fails. */
        logf_(r, "# child %d exited (status 0x%x) at %" PRId64 "\n", (int)r->child, status, now);
        fprintf(stderr, "lin_record: child %d exited unexpectedly (status 0x%x)\n", (int)r->child,
                status);
        r->child_deaths++;
        if (r->ok_since_crash == 0 && ++r->quick_deaths > 50) {
            fprintf(stderr, "lin_record: the child keeps dying without doing anything\n");
            return -1;
        }
        usleep(100 * 1000);
    }
    if (r->ok_since_crash) r->quick_deaths = 0;
    r->ok_since_crash = 0;
    r->restarts++;
    return spawn(r);
}

static void issue(rec_t *r, int i, char kind, int k)
{
    slot_t *s = &r->slot[i];
    int64_t id = ++r->next_id, value = 0, expect = 0;
    char key[256], line[LINE_MAX_];
    key_name(r, k, key, sizeof key);
    uint64_t dice = splitmix(&r->rng) % 100;
    if (kind == 'u' || kind == 'c') value = id;
    if (kind == 'u' || kind == 'd') {
        if (dice < 75)
            expect = r->rev[k]; /* what we last saw: usually right, racing others */
        else if (dice < 85 && kind == 'u')
            expect = 0; /* unconditional */
        else
            expect = r->rev[k] > 1 ? r->rev[k] - 1 - (int64_t)(dice % 3) : 1; /* stale */
        if (expect < 0) expect = 1;
    }
    static const char *names[128] = {
        ['c'] = "create", ['u'] = "update", ['d'] = "delete", ['g'] = "get"};
    s->id = id;
    s->kind = kind;
    s->key = k;
    logf_(r, "I %" PRId64 " %" PRId64 " %s %s %" PRId64 " %" PRId64 "\n", id, clock_mono_ns(),
          names[(int)kind], key, value, expect);
    r->invoked++;
    int n = snprintf(line, sizeof line, "%" PRId64 " %c %s %" PRId64 " %" PRId64 "\n", id, kind,
                     key, value, expect);
    if (write(r->cmd_fd[i], line, (size_t)n) != n) {
        /* the child is dead: its answers pipe will say so */
    }
}

static void issue_random(rec_t *r, int i)
{
    int k = (int)(splitmix(&r->rng) % (uint64_t)r->keys);
    uint64_t d = splitmix(&r->rng) % 100;
    char kind;
    if (!r->present[k])
        kind = d < 60 ? 'c' : d < 85 ? 'g' : d < 95 ? 'u' : 'd';
    else
        kind = d < 40 ? 'g' : d < 80 ? 'u' : d < 92 ? 'd' : 'c';
    issue(r, i, kind, k);
}

/* One answer line from the child. */
static void answer(rec_t *r, char *line)
{
    int64_t now = clock_mono_ns();
    if (line[0] == 'X') {
        logf_(r, "# child: %s\n", line);
        return;
    }
    long long id, a = 0, b = 0;
    char what[32] = "";
    int nf = sscanf(line, "%lld %31s %lld %lld", &id, what, &a, &b);
    int i;
    for (i = 0; i < r->threads && r->slot[i].id != id; i++)
        ;
    if (nf < 2 || i == r->threads) {
        fprintf(stderr, "lin_record: stray answer '%s'\n", line);
        exit(1);
    }
    slot_t *s = &r->slot[i];
    int k = s->key;
    logf_(r, "R %lld %" PRId64 " %s\n", id, now, line + strcspn(line, " ") + 1);
    if (!strcmp(what, "ok")) {
        r->ok++;
        r->ok_since_crash++;
        r->present[k] = s->kind != 'd';
        r->rev[k] = a;
    } else if (!strcmp(what, "notfound")) {
        r->failed++;
        r->present[k] = 0;
    } else if (!strcmp(what, "exists")) {
        r->failed++;
        r->present[k] = 1;
    } else if (!strcmp(what, "conflict")) {
        r->failed++;
        r->present[k] = 1;
        if (a) r->rev[k] = a;
    } else if (!strcmp(what, "fail")) {
        r->errors++;
        s->next_at = now + 50 * 1000000ll; /* let the store come back */
        s->id = 0;
        return;
    } else {
        r->errors++;
        if (s->kind != 'g') r->unknown++;
        s->next_at = now + 50 * 1000000ll; /* let the store come back */
        s->id = 0;
        return;
    }
    s->id = 0;
    s->next_at =
        r->pause_ns ? now + (int64_t)(splitmix(&r->rng) % (uint64_t)(2 * r->pause_ns)) : now;
}

/* Read what the child answered. Returns 1 on EOF (the child is gone). */
static int drain(rec_t *r)
{
    ssize_t n = read(r->res_fd, r->rbuf + r->rlen, sizeof r->rbuf - 1 - r->rlen);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return 0;
    if (n <= 0) return 1;
    r->rlen += (size_t)n;
    char *p = r->rbuf, *nl;
    while ((nl = memchr(p, '\n', r->rlen - (size_t)(p - r->rbuf)))) {
        *nl = '\0';
        answer(r, p);
        p = nl + 1;
    }
    r->rlen -= (size_t)(p - r->rbuf);
    memmove(r->rbuf, p, r->rlen);
    return 0;
}

static int busy(const rec_t *r)
{
    int n = 0;
    for (int i = 0; i < r->threads; i++)
        n += r->slot[i].id != 0;
    return n;
}

/* Wait up to `ms` for answers; handle a dead child. */
static int pump(rec_t *r, int ms)
{
    struct pollfd pfd = {.fd = r->res_fd, .events = POLLIN};
    int pr = poll(&pfd, 1, ms);
    if (pr < 0 && errno != EINTR) return -1;
    if (pr > 0 && drain(r) == 1) return respawn(r, 0);
    return 0;
}

static int kill_child(rec_t *r)
{
    kill(r->child, SIGKILL);
    /* Read every answer it managed to send, up to EOF. */
    for (;;) {
        struct pollfd pfd = {.fd = r->res_fd, .events = POLLIN};
        if (poll(&pfd, 1, 5000) <= 0) break;
        if (drain(r) == 1) break;
    }
    return respawn(r, 1);
}

static void usage(void)
{
    fprintf(stderr, "usage: lin_record URL --out FILE [--threads N] [--keys K] [--seconds S]\n"
                    "                  [--crashes C] [--pause-us U] [--seed X] [--prefix P]\n"
                    "                  [--lenient-unavailable 1]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    rec_t *r = calloc(1, sizeof *r);
    const char *out = NULL;
    if (!r) return 1;
    r->threads = 4;
    r->keys = 4;
    r->seconds = 5;
    r->pause_ns = 2000 * 1000;
    r->rng = (uint64_t)clock_wall_ns() ^ (uint64_t)getpid();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-') {
            if (r->url) usage();
            r->url = a;
            continue;
        }
        if (!v) usage();
        i++;
        if (!strcmp(a, "--out"))
            out = v;
        else if (!strcmp(a, "--threads"))
            r->threads = (int)strtol(v, NULL, 10);
        else if (!strcmp(a, "--keys"))
            r->keys = (int)strtol(v, NULL, 10);
        else if (!strcmp(a, "--seconds"))
            r->seconds = (int)strtol(v, NULL, 10);
        else if (!strcmp(a, "--crashes"))
            r->crashes = (int)strtol(v, NULL, 10);
        else if (!strcmp(a, "--pause-us"))
            r->pause_ns = strtoll(v, NULL, 10) * 1000;
        else if (!strcmp(a, "--seed"))
            r->rng = strtoull(v, NULL, 0);
        else if (!strcmp(a, "--prefix"))
            snprintf(r->prefix, sizeof r->prefix, "%s", v);
        else if (!strcmp(a, "--lenient-unavailable"))
            r->lenient = (int)strtol(v, NULL, 10);
        else
            usage();
    }
    if (!r->url || !out || r->threads < 1 || r->threads > MAX_THREADS || r->keys < 1 ||
        r->keys > MAX_KEYS || r->seconds < 1 || r->crashes < 0 || r->pause_ns < 0)
        usage();
    uint64_t seed = r->rng;
    if (!r->prefix[0]) {
        uint64_t x = seed;
        snprintf(r->prefix, sizeof r->prefix, "/registry/lin/%016" PRIx64 "/", splitmix(&x));
    }
    signal(SIGPIPE, SIG_IGN);
    r->out_fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (r->out_fd < 0) {
        perror(out);
        return 1;
    }
    logf_(r,
          "# lin_record %s threads=%d keys=%d seconds=%d crashes=%d pause_us=%" PRId64
          " seed=0x%" PRIx64 " prefix=%s lenient=%d\n",
          r->url, r->threads, r->keys, r->seconds, r->crashes, r->pause_ns / 1000, seed, r->prefix,
          r->lenient);
    if (spawn(r) != 0) {
        perror("lin_record: spawn");
        return 1;
    }

    /* Crash moments: spread over the run, each at a random point of its share. */
    int64_t start = clock_mono_ns(), run_ns = (int64_t)r->seconds * 1000000000ll;
    int64_t crash_at[64];
    if (r->crashes > 64) usage();
    for (int c = 0; c < r->crashes; c++) {
        int64_t share = run_ns / (r->crashes + 1);
        crash_at[c] = start + share * (c + 1) +
                      (int64_t)(splitmix(&r->rng) % (uint64_t)(share / 2)) - share / 4;
    }
    int next_crash = 0;
    for (;;) {
        int64_t now = clock_mono_ns();
        if (now - start >= run_ns) break;
        if (next_crash < r->crashes && now >= crash_at[next_crash]) {
            /* Kill it with writes in flight: every idle worker starts one
             * now, and the kill lands somewhere in their commit. */
            next_crash++;
            for (int i = 0; i < r->threads; i++) {
                if (r->slot[i].id) continue;
                int k = (int)(splitmix(&r->rng) % (uint64_t)r->keys);
                issue(r, i, r->present[k] ? 'u' : 'c', k);
            }
            usleep((useconds_t)(splitmix(&r->rng) % 600));
            if (kill_child(r) != 0) return 1;
            continue;
        }
        int64_t wake = start + run_ns;
        if (next_crash < r->crashes && crash_at[next_crash] < wake) wake = crash_at[next_crash];
        for (int i = 0; i < r->threads; i++) {
            slot_t *s = &r->slot[i];
            if (s->id) continue;
            if (s->next_at <= now)
                issue_random(r, i);
            else if (s->next_at < wake)
                wake = s->next_at;
        }
        int ms = (int)((wake - now) / 1000000) + 1;
        if (pump(r, ms > 100 ? 100 : ms) != 0) return 1;
    }
    /* Let what is in flight finish (a stuck one is recorded as unknown). */
    int64_t give_up = clock_mono_ns() + 60 * 1000000000ll;
    while (busy(r) && clock_mono_ns() < give_up)
        if (pump(r, 100) != 0) return 1;
    if (busy(r) && kill_child(r) != 0) return 1;
    /* A final read of every key, one at a time, pins the end state. */
    for (int k = 0; k < r->keys; k++) {
        for (int tries = 0; tries < 100; tries++) {
            uint64_t answered = r->ok + r->failed; /* found or not found */
            issue(r, 0, 'g', k);
            give_up = clock_mono_ns() + 60 * 1000000000ll;
            while (r->slot[0].id && clock_mono_ns() < give_up)
                if (pump(r, 100) != 0) return 1;
            if (r->slot[0].id && kill_child(r) != 0) return 1;
            if (r->ok + r->failed > answered) break;
            usleep(100 * 1000);
        }
    }
    /* Close the store: the workers see EOF on their pipes. */
    for (int i = 0; i < r->threads; i++)
        close(r->cmd_fd[i]);
    int status = 0;
    waitpid(r->child, &status, 0);
    close(r->res_fd);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "lin_record: the last child ended with status 0x%x\n", status);
        r->child_deaths++;
    }
    if (r->crashes_done && r->ok_since_crash == 0) r->stalled = 1;
    logf_(r,
          "# summary invoked=%" PRIu64 " ok=%" PRIu64 " failed=%" PRIu64 " errors=%" PRIu64
          " unknown=%" PRIu64 " crashes=%d restarts=%d stalled=%d child_deaths=%d\n",
          r->invoked, r->ok, r->failed, r->errors, r->unknown, r->crashes_done, r->restarts,
          r->stalled, r->child_deaths);
    fprintf(stderr,
            "lin_record: %" PRIu64 " ops: %" PRIu64 " ok, %" PRIu64 " failed, %" PRIu64
            " errors, %" PRIu64 " unknown writes; %d crashes, %d restarts%s\n",
            r->invoked, r->ok, r->failed, r->errors, r->unknown, r->crashes_done, r->restarts,
            r->stalled ? "; NO PROGRESS after a crash" : "");
    close(r->out_fd);
    int rc = r->crashes_done == r->crashes && !r->stalled && !r->child_deaths && r->ok > 0 ? 0 : 1;
    free(r);
    return rc;
}
