/*
 * test_grpc.c -- the gRPC client (store/grpc.h) against a real etcd 3.4,
 * over its client port, with etcd's own protobuf messages (written with
 * lib/pbwire.h). Runs under with-etcd.sh run (test_grpc in CMakeLists.txt):
 * one cluster for the cases that leave it running, one of its own for each
 * case that stops or kills it.
 *
 *  - a refused connection fails at once, a server that never speaks HTTP/2
 *    within connect_ms fails then (KP_EUNAVAILABLE);
 *  - unary calls: Status, Put then Range (also a 3 MiB value: many DATA
 *    frames, more than the default windows), an unknown method (status 12
 *    in a trailers-only answer, its grpc-message percent-decoded);
 *  - a Watch stream: created, two events in order, a progress request
 *    answered; its bytes released;
 *  - flow control: a stream whose owner releases nothing stops near
 *    GRPC_STREAM_WINDOW while unary calls on the connection go on, and
 *    goes on when the owner releases;
 *  - 16 threads x 200 Puts on one connection, every revision distinct;
 *  - a frozen etcd (SIGSTOP): a call ends with KP_ETIMEDOUT at its deadline,
 *    and the unanswered ping kills a connection with short keepalives;
 *  - a killed etcd (SIGKILL): its stream ends with KP_EUNAVAILABLE, later
 *    calls fail with KP_EUNAVAILABLE;
 *  - grpc_close() with streams open, then grpc_stream_close() (ASan).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include "backend.h"
#include "lib/buf.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/pbwire.h"
#include "store/grpc.h"
#include "testutil.h"

#define KV_PUT     "/etcdserverpb.KV/Put"
#define KV_RANGE   "/etcdserverpb.KV/Range"
#define STATUS     "/etcdserverpb.Maintenance/Status"
#define WATCH      "/etcdserverpb.Watch/Watch"
#define TIMEOUT_MS 10000

static int64_t ms_since(int64_t t0)
{
    return (clock_mono_ns() - t0) / 1000000;
}

/* ---- clusters (with-etcd.sh, through backend.h) ---- */

typedef struct cluster {
    char *dir;
    char *url; /* etcd://127.0.0.1:PORT */
    int port;
} cluster_t;

static void cluster_start(cluster_t *k, const char *tag)
{
    k->dir = tu_tmpdir(tag);
    k->url = tb_store_url(k->dir);
    const char *colon = strrchr(k->url, ':');
    assert_non_null(colon);
    k->port = (int)strtol(colon + 1, NULL, 10);
    assert_true(k->port > 0);
}

static void cluster_stop(cluster_t *k)
{
    tb_store_stop(k->dir);
    tu_rmtree(k->dir);
    free(k->dir);
    free(k->url);
}

static pid_t cluster_pid(const cluster_t *k)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/etcd.pid", k->dir);
    FILE *f = fopen(path, "r");
    long pid = 0;
    if (!f || fscanf(f, "%ld", &pid) != 1) fail_msg("no pid in %s", path);
    fclose(f);
    return (pid_t)pid;
}

/* Wait until every thread of pid has stopped: SIGSTOP takes effect a
 * little after kill() returns. */
static void wait_stopped(pid_t pid)
{
    char dir[64], path[384], line[512];
    snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
    for (int tries = 0; tries < 400; tries++) {
        DIR *d = opendir(dir);
        assert_non_null(d);
        int running = 0;
        for (struct dirent *e; (e = readdir(d));) {
            if (e->d_name[0] == '.') continue;
            snprintf(path, sizeof path, "%s/%s/stat", dir, e->d_name);
            FILE *f = fopen(path, "r");
            char *paren = f && fgets(line, sizeof line, f) ? strrchr(line, ')') : NULL;
            if (paren && paren[1] == ' ' && paren[2] != 'T' && paren[2] != 't') running = 1;
            if (f) fclose(f);
        }
        closedir(d);
        if (!running) return;
        usleep(5 * 1000);
    }
    fail_msg("etcd %d did not stop", (int)pid);
}

static grpc_conn_t *conn(const cluster_t *k, const grpc_conn_opts_t *o)
{
    grpc_conn_t *c = NULL;
    assert_int_equal(grpc_connect("127.0.0.1", k->port, o, &c), 0);
    assert_non_null(c);
    assert_int_equal(grpc_conn_error(c), 0);
    return c;
}

/* ---- etcd's messages ---- */

static void reader(pbr_t *r, const uint8_t *p, size_t n)
{
    r->p = p;
    r->end = p + n;
}

static int next_field(pbr_t *r, pbr_val_t *f)
{
    if (r->p >= r->end) return 0;
    const char *why = pbr_field(r, f);
    if (why) fail_msg("malformed message: %s", why);
    return 1;
}

/* ResponseHeader.revision (3) of a response whose field 1 is its header. */
static int64_t header_rev(const uint8_t *p, size_t n)
{
    pbr_t r, h;
    pbr_val_t f, g;
    int64_t rev = -1;
    for (reader(&r, p, n); next_field(&r, &f);)
        if (f.num == 1 && f.wt == PBW_LEN)
            for (reader(&h, f.data, f.len); next_field(&h, &g);)
                if (g.num == 3 && g.wt == PBW_VARINT) rev = (int64_t)g.u;
    return rev;
}

/* A unary call that must succeed with status OK; the answer, malloc'd. */
static uint8_t *call_ok(grpc_conn_t *c, const char *method, const buf_t *req, size_t *n)
{
    grpc_status_t st;
    uint8_t *resp = NULL;
    int rc = grpc_call(c, method, req->p ? req->p : "", req->len, TIMEOUT_MS, &st, &resp, n);
    if (rc) fail_msg("%s: %s", method, err_str(rc));
    if (st.code) fail_msg("%s: status %d: %s", method, st.code, st.message);
    assert_non_null(resp);
    return resp;
}

/* PutRequest{key 1, value 2}; the revision it made. */
static int64_t put(grpc_conn_t *c, const char *key, const void *val, size_t vlen)
{
    buf_t b;
    buf_init(&b, (size_t)-1);
    pbw_t w = {.b = &b};
    pbw_bytes(&w, 1, key, strlen(key));
    pbw_bytes(&w, 2, val, vlen);
    assert_int_equal(w.rc, 0);
    size_t n;
    uint8_t *resp = call_ok(c, KV_PUT, &b, &n);
    int64_t rev = header_rev(resp, n);
    free(resp);
    buf_free(&b);
    assert_true(rev > 0);
    return rev;
}

/* RangeRequest{key 1}; the key's value (malloc'd) and mod_revision, or
 * NULL when it has none. */
static uint8_t *get(grpc_conn_t *c, const char *key, size_t *vlen, int64_t *mod_rev)
{
    buf_t b;
    buf_init(&b, (size_t)-1);
    pbw_t w = {.b = &b};
    pbw_bytes(&w, 1, key, strlen(key));
    assert_int_equal(w.rc, 0);
    size_t n;
    uint8_t *resp = call_ok(c, KV_RANGE, &b, &n), *val = NULL;
    pbr_t r, kv;
    pbr_val_t f, g;
    int kvs = 0;
    for (reader(&r, resp, n); next_field(&r, &f);) {
        if (f.num != 2 || f.wt != PBW_LEN) continue; /* RangeResponse.kvs */
        kvs++;
        for (reader(&kv, f.data, f.len); next_field(&kv, &g);) {
            if (g.num == 1 && g.wt == PBW_LEN) assert_memory_equal(g.data, key, strlen(key));
            if (g.num == 3 && g.wt == PBW_VARINT) *mod_rev = (int64_t)g.u;
            if (g.num == 5 && g.wt == PBW_LEN) {
                val = malloc(g.len ? g.len : 1);
                memcpy(val, g.data, g.len);
                *vlen = g.len;
            }
        }
    }
    assert_true(kvs <= 1);
    free(resp);
    buf_free(&b);
    return val;
}

/* RangeRequest{key 1, range_end 2}: how many kvs, and their values' bytes. */
static size_t range_count(grpc_conn_t *c, const char *key, const char *end, size_t *bytes)
{
    buf_t b;
    buf_init(&b, (size_t)-1);
    pbw_t w = {.b = &b};
    pbw_bytes(&w, 1, key, strlen(key));
    pbw_bytes(&w, 2, end, strlen(end));
    assert_int_equal(w.rc, 0);
    size_t n, kvs = 0;
    uint8_t *resp = call_ok(c, KV_RANGE, &b, &n);
    pbr_t r, kv;
    pbr_val_t f, g;
    *bytes = 0;
    for (reader(&r, resp, n); next_field(&r, &f);) {
        if (f.num != 2 || f.wt != PBW_LEN) continue;
        kvs++;
        for (reader(&kv, f.data, f.len); next_field(&kv, &g);)
            if (g.num == 5 && g.wt == PBW_LEN) *bytes += g.len;
    }
    free(resp);
    buf_free(&b);
    return kvs;
}

/* WatchRequest{create_request{key 1, range_end 2}}. */
static void send_watch_create(grpc_stream_t *s, const char *key, const char *end)
{
    buf_t b;
    buf_init(&b, (size_t)-1);
    pbw_t w = {.b = &b};
    size_t m = pbw_begin(&w, 1);
    pbw_bytes(&w, 1, key, strlen(key));
    pbw_bytes(&w, 2, end, strlen(end));
    pbw_end(&w, m);
    assert_int_equal(w.rc, 0);
    assert_int_equal(grpc_stream_send(s, b.p, b.len), 0);
    buf_free(&b);
}

/* WatchRequest{progress_request{}}. */
static void send_watch_progress(grpc_stream_t *s)
{
    buf_t b;
    buf_init(&b, (size_t)-1);
    pbw_t w = {.b = &b};
    pbw_end(&w, pbw_begin(&w, 3));
    assert_int_equal(w.rc, 0);
    assert_int_equal(grpc_stream_send(s, b.p, b.len), 0);
    buf_free(&b);
}

#define MAX_EVENTS 4

typedef struct wresp {
    int64_t rev, watch_id, compact;
    int created, canceled, nevents;
    int type[MAX_EVENTS];
    char key[MAX_EVENTS][32];
    int64_t mod_rev[MAX_EVENTS];
} wresp_t;

/* WatchResponse{header 1, watch_id 2, created 3, canceled 4,
 * compact_revision 5, events 11 {type 1, kv 2 {key 1, mod_revision 3}}}. */
static void decode_watch(const uint8_t *p, size_t n, wresp_t *w)
{
    memset(w, 0, sizeof *w);
    w->rev = header_rev(p, n);
    pbr_t r, ev, kv;
    pbr_val_t f, g, h;
    for (reader(&r, p, n); next_field(&r, &f);) {
        if (f.num == 2 && f.wt == PBW_VARINT) w->watch_id = (int64_t)f.u;
        if (f.num == 3 && f.wt == PBW_VARINT) w->created = (int)f.u;
        if (f.num == 4 && f.wt == PBW_VARINT) w->canceled = (int)f.u;
        if (f.num == 5 && f.wt == PBW_VARINT) w->compact = (int64_t)f.u;
        if (f.num != 11 || f.wt != PBW_LEN) continue;
        int i = w->nevents++;
        if (i >= MAX_EVENTS) continue;
        for (reader(&ev, f.data, f.len); next_field(&ev, &g);) {
            if (g.num == 1 && g.wt == PBW_VARINT) w->type[i] = (int)g.u;
            if (g.num != 2 || g.wt != PBW_LEN) continue;
            for (reader(&kv, g.data, g.len); next_field(&kv, &h);) {
                if (h.num == 1 && h.wt == PBW_LEN)
                    snprintf(w->key[i], sizeof w->key[i], "%.*s", (int)h.len, (const char *)h.data);
                if (h.num == 3 && h.wt == PBW_VARINT) w->mod_rev[i] = (int64_t)h.u;
            }
        }
    }
}

/* ---- a stream's owner: keeps every message, releases nothing itself ---- */

typedef struct owner {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint8_t **msg;
    size_t *len;
    size_t n, cap;
    size_t bytes; /* delivered, in all */
    int ends, end_rc, end_code;
    int64_t end_ns; /* when on_end ran */
} owner_t;

static void owner_init(owner_t *o)
{
    memset(o, 0, sizeof *o);
    pthread_mutex_init(&o->mu, NULL);
    assert_int_equal(clock_cond_init(&o->cv), 0);
}

static void owner_free(owner_t *o)
{
    for (size_t i = 0; i < o->n; i++)
        free(o->msg[i]);
    free(o->msg);
    free(o->len);
    pthread_cond_destroy(&o->cv);
    pthread_mutex_destroy(&o->mu);
}

static void on_msg(void *arg, const uint8_t *p, size_t n)
{
    owner_t *o = arg;
    pthread_mutex_lock(&o->mu);
    if (o->n == o->cap) {
        o->cap = o->cap ? 2 * o->cap : 16;
        o->msg = realloc(o->msg, o->cap * sizeof *o->msg);
        o->len = realloc(o->len, o->cap * sizeof *o->len);
        if (!o->msg || !o->len) abort();
    }
    o->msg[o->n] = malloc(n ? n : 1);
    if (!o->msg[o->n]) abort();
    memcpy(o->msg[o->n], p, n);
    o->len[o->n++] = n;
    o->bytes += n;
    pthread_cond_broadcast(&o->cv);
    pthread_mutex_unlock(&o->mu);
}

static void on_end(void *arg, int rc, const grpc_status_t *st)
{
    owner_t *o = arg;
    pthread_mutex_lock(&o->mu);
    o->ends++;
    o->end_rc = rc;
    o->end_code = st ? st->code : -1;
    o->end_ns = clock_mono_ns();
    pthread_cond_broadcast(&o->cv);
    pthread_mutex_unlock(&o->mu);
}

/* Wait until o holds `n` messages or its stream ended; 1 if it holds them. */
static int owner_wait(owner_t *o, size_t n, int ms)
{
    pthread_mutex_lock(&o->mu);
    struct timespec ts = clock_deadline_ms(ms);
    while (o->n < n && !o->ends && pthread_cond_timedwait(&o->cv, &o->mu, &ts) == 0)
        ;
    int ok = o->n >= n;
    pthread_mutex_unlock(&o->mu);
    return ok;
}

static int owner_wait_end(owner_t *o, int ms)
{
    pthread_mutex_lock(&o->mu);
    struct timespec ts = clock_deadline_ms(ms);
    while (!o->ends && pthread_cond_timedwait(&o->cv, &o->mu, &ts) == 0)
        ;
    int ends = o->ends;
    pthread_mutex_unlock(&o->mu);
    return ends;
}

/* How many times on_end ran, and its last rc. */
static int owner_ends(owner_t *o, int *rc)
{
    pthread_mutex_lock(&o->mu);
    int ends = o->ends;
    if (rc) *rc = o->end_rc;
    pthread_mutex_unlock(&o->mu);
    return ends;
}

static void owner_get(owner_t *o, size_t i, wresp_t *w)
{
    pthread_mutex_lock(&o->mu);
    assert_true(i < o->n);
    decode_watch(o->msg[i], o->len[i], w);
    pthread_mutex_unlock(&o->mu);
}

static size_t owner_bytes(owner_t *o)
{
    pthread_mutex_lock(&o->mu);
    size_t b = o->bytes;
    pthread_mutex_unlock(&o->mu);
    return b;
}

/* A Watch stream of [key, end), created. */
static grpc_stream_t *watch(grpc_conn_t *c, owner_t *o, const char *key, const char *end)
{
    grpc_stream_cbs_t cbs = {.on_msg = on_msg, .on_end = on_end, .arg = o};
    grpc_stream_t *s = NULL;
    assert_int_equal(grpc_stream_open(c, WATCH, &cbs, &s), 0);
    assert_non_null(s);
    send_watch_create(s, key, end);
    assert_true(owner_wait(o, 1, TIMEOUT_MS));
    wresp_t w;
    owner_get(o, 0, &w);
    assert_int_equal(w.created, 1);
    assert_int_equal(w.nevents, 0);
    return s;
}

/* ---- the cases ---- */

static cluster_t shared; /* the cluster of the cases that leave it running */

static void test_connect_fails(void **state)
{
    (void)state;
    grpc_conn_t *c = (grpc_conn_t *)&c;
    int64_t t0 = clock_mono_ns();
    assert_int_equal(grpc_connect("127.0.0.1", 1, NULL, &c), KP_EUNAVAILABLE); /* refused */
    assert_null(c);
    assert_true(ms_since(t0) < 500);
    assert_int_equal(grpc_connect(NULL, 1, NULL, &c), KP_EINVAL);
    assert_int_equal(grpc_connect("", 1, NULL, &c), KP_EINVAL);
    assert_int_equal(grpc_connect("127.0.0.1", 0, NULL, &c), KP_EINVAL);
    assert_int_equal(grpc_connect("127.0.0.1", 70000, NULL, &c), KP_EINVAL);
    assert_int_equal(grpc_connect("127.0.0.1", 1, NULL, NULL), KP_EINVAL);

    /* A listener that accepts (in the kernel) and never says a word: no
     * SETTINGS within connect_ms. */
    int lport;
    int ls = tu_loopback_socket(&lport);
    assert_int_equal(listen(ls, 4), 0);
    grpc_conn_opts_t o = {.connect_ms = 300};
    t0 = clock_mono_ns();
    assert_int_equal(grpc_connect("127.0.0.1", lport, &o, &c), KP_EUNAVAILABLE);
    int64_t took = ms_since(t0);
    assert_true(took >= 250 && took < 2000);
    close(ls);
}

static void test_status(void **state)
{
    (void)state;
    grpc_conn_t *c = conn(&shared, NULL);
    buf_t req;
    buf_init(&req, 16); /* StatusRequest{}: no bytes */
    size_t n;
    uint8_t *resp = call_ok(c, STATUS, &req, &n);
    pbr_t r;
    pbr_val_t f;
    char version[32] = "";
    for (reader(&r, resp, n); next_field(&r, &f);)
        if (f.num == 2 && f.wt == PBW_LEN) /* StatusResponse.version */
            snprintf(version, sizeof version, "%.*s", (int)f.len, (const char *)f.data);
    assert_true(header_rev(resp, n) >= 1);
    assert_true(!strncmp(version, "3.", 2));
    free(resp);

    /* Bad arguments. */
    grpc_status_t st;
    uint8_t *out = (uint8_t *)&out;
    assert_int_equal(grpc_call(c, "nope", "", 0, 1000, &st, &out, &n), KP_EINVAL);
    assert_null(out);
    assert_int_equal(grpc_call(c, STATUS, "", 0, 0, &st, &out, &n), KP_EINVAL);
    assert_int_equal(grpc_call(c, STATUS, NULL, 3, 1000, &st, &out, &n), KP_EINVAL);
    grpc_close(c);
}

static void test_put_range(void **state)
{
    (void)state;
    grpc_conn_t *c = conn(&shared, NULL);
    int64_t r1 = put(c, "/t/a", "hello", 5), mod = 0;
    size_t vlen = 0;
    uint8_t *v = get(c, "/t/a", &vlen, &mod);
    assert_non_null(v);
    assert_int_equal(vlen, 5);
    assert_memory_equal(v, "hello", 5);
    assert_int_equal(mod, r1);
    free(v);
    assert_null(get(c, "/t/none", &vlen, &mod));

    /* 3 MiB: 200 DATA frames each way, past the 64 KiB windows HTTP/2
     * starts with. */
    size_t big = 3u << 20;
    uint8_t *val = malloc(big);
    for (size_t i = 0; i < big; i++)
        val[i] = (uint8_t)(i * 131 % 251);
    int64_t r2 = put(c, "/t/big", val, big);
    assert_int_equal(r2, r1 + 1);
    v = get(c, "/t/big", &vlen, &mod);
    assert_non_null(v);
    assert_int_equal(vlen, big);
    assert_int_equal(mod, r2);
    assert_memory_equal(v, val, big);
    free(v);
    free(val);
    grpc_close(c);
}

static void test_unknown_method(void **state)
{
    (void)state;
    grpc_conn_t *c = conn(&shared, NULL);
    grpc_status_t st;
    uint8_t *resp = (uint8_t *)&resp;
    size_t n = 99;
    /* grpc-go answers with a trailers-only response whose grpc-message
     * names the method, '%' encoded as "%25". */
    assert_int_equal(grpc_call(c, "/etcdserverpb.KV/Nope%", "", 0, TIMEOUT_MS, &st, &resp, &n), 0);
    assert_int_equal(st.code, 12); /* UNIMPLEMENTED */
    assert_null(resp);
    assert_int_equal(n, 0);
    if (!strstr(st.message, "Nope%")) fail_msg("grpc-message: %s", st.message);
    assert_null(strstr(st.message, "%25"));
    /* The connection is fine. */
    assert_int_equal(grpc_conn_error(c), 0);
    assert_true(put(c, "/t/after", "x", 1) > 0);
    grpc_close(c);
}

static void test_watch_stream(void **state)
{
    (void)state;
    grpc_conn_t *c = conn(&shared, NULL);
    owner_t o;
    owner_init(&o);
    grpc_stream_t *s = watch(c, &o, "/w/", "/w0");
    int64_t r1 = put(c, "/w/a", "1", 1);
    int64_t r2 = put(c, "/w/b", "2", 1);
    assert_int_equal(put(c, "/x/outside", "3", 1), r2 + 1);

    /* Both events, in order, in one response or two. */
    int got = 0;
    size_t i = 1;
    wresp_t w;
    while (got < 2) {
        assert_true(owner_wait(&o, i + 1, TIMEOUT_MS));
        owner_get(&o, i++, &w);
        assert_int_equal(w.created, 0);
        for (int e = 0; e < w.nevents && got < 2; e++, got++) {
            assert_int_equal(w.type[e], 0); /* PUT */
            assert_string_equal(w.key[e], got ? "/w/b" : "/w/a");
            assert_int_equal(w.mod_rev[e], got ? r2 : r1);
        }
    }
    /* A progress request is answered on the stream: no events, at the
     * store's revision. */
    send_watch_progress(s);
    assert_true(owner_wait(&o, i + 1, TIMEOUT_MS));
    owner_get(&o, i++, &w);
    assert_int_equal(w.nevents, 0);
    assert_int_equal(w.created, 0);
    assert_int_equal(w.rev, r2 + 1);

    grpc_stream_release(s, owner_bytes(&o));
    assert_true(put(c, "/w/c", "4", 1) > 0);
    assert_true(owner_wait(&o, i + 1, TIMEOUT_MS));
    assert_int_equal(owner_ends(&o, NULL), 0);
    grpc_stream_close(s);
    assert_int_equal(owner_ends(&o, NULL), 0); /* on_end: never after grpc_stream_close() */
    assert_int_equal(grpc_conn_error(c), 0);
    grpc_close(c);
    owner_free(&o);
}

static void test_flow_control(void **state)
{
    (void)state;
    enum { N = 48 };
    const size_t vlen = 256u << 10; /* N values: 12 MiB, over the stream's window */
    grpc_conn_t *c = conn(&shared, NULL);
    owner_t o;
    owner_init(&o);
    grpc_stream_t *s = watch(c, &o, "/fc/", "/fc0");
    uint8_t *val = malloc(vlen);
    memset(val, 'v', vlen);
    int64_t rev[N];
    char key[32];
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "/fc/%02d", i);
        rev[i] = put(c, key, val, vlen); /* on the connection the stream stalls */
    }

    /* Wait until nothing more arrives. */
    size_t held = owner_bytes(&o), before;
    int64_t t0 = clock_mono_ns();
    do {
        before = held;
        usleep(300 * 1000);
        held = owner_bytes(&o);
    } while (held != before && ms_since(t0) < 10000);
    assert_int_equal(held, before);
    /* Stopped with at most the window unreleased, and not long before it
     * (nghttp2 announces a window at half; one message in flight). */
    if (held > GRPC_STREAM_WINDOW || held < GRPC_STREAM_WINDOW / 2 - 2 * vlen)
        fail_msg("stopped at %zu bytes unreleased", held);
    pthread_mutex_lock(&o.mu);
    size_t nmsgs = o.n;
    pthread_mutex_unlock(&o.mu);
    assert_true(nmsgs < 1 + N);

    /* Other streams go on. */
    t0 = clock_mono_ns();
    size_t n;
    int64_t mod = 0;
    uint8_t *v = get(c, "/fc/00", &n, &mod);
    assert_non_null(v);
    assert_int_equal(n, vlen);
    assert_int_equal(mod, rev[0]);
    free(v);
    assert_true(ms_since(t0) < 2000);

    /* Released, the rest comes: every event once, in order. */
    size_t released = 0;
    t0 = clock_mono_ns();
    for (;;) {
        size_t b = owner_bytes(&o);
        grpc_stream_release(s, b - released);
        released = b;
        pthread_mutex_lock(&o.mu);
        nmsgs = o.n;
        pthread_mutex_unlock(&o.mu);
        if (nmsgs >= 1 + N || ms_since(t0) > 10000) break;
        owner_wait(&o, nmsgs + 1, 200);
    }
    int seen = 0;
    for (size_t i = 1; i < nmsgs; i++) {
        wresp_t w;
        owner_get(&o, i, &w);
        for (int e = 0; e < w.nevents; e++, seen++) {
            assert_true(seen < N);
            assert_int_equal(w.mod_rev[e], rev[seen]);
        }
    }
    assert_int_equal(seen, N);
    /* Every event is in, but the loop above may have stopped with the last
     * messages unreleased (they can land between its two reads): release
     * them, so that what is held below is the ten values alone. */
    size_t all = owner_bytes(&o);
    grpc_stream_release(s, all - released);
    released = all;

    /* A unary answer over the stream window (12 MiB): a call consumes its
     * bytes as they come. */
    size_t bytes;
    assert_int_equal(range_count(c, "/fc/", "/fc0", &bytes), N);
    assert_int_equal(bytes, N * vlen);

    /* A message over half the window comes whole while the owner holds part
     * of it: 10 x 256 KiB held, then a 6 MiB event (invariant 4 of grpc.c). */
    size_t base = nmsgs;
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof key, "/fc/h%d", i);
        put(c, key, val, vlen);
    }
    size_t hlen = 6u << 20;
    uint8_t *huge = malloc(hlen);
    memset(huge, 'h', hlen);
    int64_t hrev = put(c, "/fc/huge", huge, hlen);
    free(huge);
    if (!owner_wait(&o, base + 11, TIMEOUT_MS))
        fail_msg("the 6 MiB event did not come (%zu bytes held)", owner_bytes(&o) - released);
    wresp_t w;
    owner_get(&o, base + 10, &w);
    assert_int_equal(w.nevents, 1);
    assert_string_equal(w.key[0], "/fc/huge");
    assert_int_equal(w.mod_rev[0], hrev);
    grpc_stream_release(s, owner_bytes(&o) - released);
    assert_int_equal(owner_ends(&o, NULL), 0);
    grpc_stream_close(s);
    grpc_close(c);
    owner_free(&o);
    free(val);
}

enum { THREADS = 16, PUTS = 200 };

typedef struct worker {
    grpc_conn_t *c;
    int idx;
    int failures;
    int64_t rev[PUTS];
} worker_t;

static void *worker_main(void *arg)
{
    worker_t *wk = arg;
    char key[32];
    buf_t b;
    buf_init(&b, (size_t)-1);
    for (int i = 0; i < PUTS; i++) {
        snprintf(key, sizeof key, "/mt/%02d/%03d", wk->idx, i);
        buf_reset(&b);
        pbw_t w = {.b = &b};
        pbw_bytes(&w, 1, key, strlen(key));
        pbw_bytes(&w, 2, key, strlen(key));
        grpc_status_t st;
        uint8_t *resp = NULL;
        size_t n = 0;
        int rc = grpc_call(wk->c, KV_PUT, b.p, b.len, TIMEOUT_MS, &st, &resp, &n);
        wk->rev[i] = !rc && !st.code ? header_rev(resp, n) : -1;
        if (wk->rev[i] <= 0) wk->failures++;
        free(resp);
    }
    buf_free(&b);
    return NULL;
}

static int cmp_rev(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void test_many_threads(void **state)
{
    (void)state;
    grpc_conn_t *c = conn(&shared, NULL);
    static worker_t wk[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        wk[i] = (worker_t){.c = c, .idx = i};
        assert_int_equal(pthread_create(&t[i], NULL, worker_main, &wk[i]), 0);
    }
    int failures = 0;
    static int64_t all[THREADS * PUTS];
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        failures += wk[i].failures;
        memcpy(all + i * PUTS, wk[i].rev, sizeof wk[i].rev);
    }
    assert_int_equal(failures, 0);
    qsort(all, THREADS * PUTS, sizeof all[0], cmp_rev);
    for (int i = 1; i < THREADS * PUTS; i++)
        assert_true(all[i] > all[i - 1]);
    assert_int_equal(grpc_conn_error(c), 0);
    grpc_close(c);
}

static void test_frozen_server(void **state)
{
    (void)state;
    cluster_t k;
    cluster_start(&k, "grpc-stop");
    grpc_conn_t *a = conn(&k, NULL);
    grpc_conn_opts_t quick = {.keepalive_ms = 300, .keepalive_timeout_ms = 700};
    grpc_conn_t *b = conn(&k, &quick);
    owner_t o;
    owner_init(&o);
    grpc_stream_t *s = watch(b, &o, "/z/", "/z0");
    pid_t pid = cluster_pid(&k);
    assert_int_equal(kill(pid, SIGSTOP), 0);
    int64_t stopped = clock_mono_ns();
    wait_stopped(pid);

    /* The request went out and nothing answers: KP_ETIMEDOUT at the deadline. */
    grpc_status_t st;
    uint8_t *resp = NULL;
    size_t n;
    int64_t t0 = clock_mono_ns();
    int rc = grpc_call(a, STATUS, "", 0, 1500, &st, &resp, &n);
    int64_t took = ms_since(t0);
    if (rc != KP_ETIMEDOUT)
        fail_msg("a call to a frozen etcd: %s after %lld ms (status %d)", err_str(rc),
                 (long long)took, rc ? -1 : st.code);
    if (took < 1450 || took > 2500) fail_msg("timed out after %lld ms", (long long)took);
    assert_null(resp);
    assert_int_equal(grpc_conn_error(a), 0); /* a deadline alone kills nothing */

    /* b's ping goes unanswered (300 ms of quiet, then 700 ms): it dies,
     * and ends its stream. */
    assert_true(owner_wait_end(&o, 5000));
    assert_int_equal(owner_ends(&o, &rc), 1);
    assert_int_equal(rc, KP_EUNAVAILABLE);
    assert_int_equal(grpc_conn_error(b), KP_EUNAVAILABLE);
    took = (o.end_ns - stopped) / 1000000;
    if (took < 600 || took > 2500) fail_msg("b died after %lld ms", (long long)took);
    t0 = clock_mono_ns();
    assert_int_equal(grpc_call(b, STATUS, "", 0, 1000, &st, &resp, &n), KP_EUNAVAILABLE);
    assert_true(ms_since(t0) < 100);
    assert_int_equal(grpc_stream_send(s, "", 0), KP_ECLOSED);

    assert_int_equal(kill(pid, SIGCONT), 0);
    grpc_stream_close(s);
    grpc_close(b);
    grpc_close(a);
    owner_free(&o);
    cluster_stop(&k);
}

/* A call on a thread of its own, for grpc_abandon_calls. */
typedef struct waiter {
    grpc_conn_t *c;
    int timeout_ms, rc;
    int64_t took_ms;
    pthread_t t;
} waiter_t;

static void *wait_call(void *arg)
{
    waiter_t *w = arg;
    grpc_status_t st;
    uint8_t *resp = NULL;
    size_t n;
    int64_t t0 = clock_mono_ns();
    w->rc = grpc_call(w->c, STATUS, "", 0, w->timeout_ms, &st, &resp, &n);
    w->took_ms = ms_since(t0);
    free(resp);
    return NULL;
}

/* Calls begun before the cut end at once as at their deadline (sent:
 * KP_ETIMEDOUT); later ones wait on; the connection goes on working. */
static void test_abandon_calls(void **state)
{
    (void)state;
    cluster_t k;
    cluster_start(&k, "grpc-abandon");
    grpc_conn_t *c = conn(&k, NULL);
    pid_t pid = cluster_pid(&k);
    assert_int_equal(kill(pid, SIGSTOP), 0);
    wait_stopped(pid);
    waiter_t old[3];
    for (int i = 0; i < 3; i++) {
        old[i] = (waiter_t){.c = c, .timeout_ms = 10000};
        assert_int_equal(pthread_create(&old[i].t, NULL, wait_call, &old[i]), 0);
    }
    usleep(200 * 1000); /* all three sent and waiting */
    int64_t cut = clock_mono_ns();
    usleep(50 * 1000);
    waiter_t young = {.c = c, .timeout_ms = 1500};
    assert_int_equal(pthread_create(&young.t, NULL, wait_call, &young), 0);
    usleep(100 * 1000);
    int64_t t0 = clock_mono_ns();
    assert_int_equal(grpc_abandon_calls(c, cut), 3);
    for (int i = 0; i < 3; i++) {
        pthread_join(old[i].t, NULL);
        assert_int_equal(old[i].rc, KP_ETIMEDOUT);
    }
    assert_true(ms_since(t0) < 500);
    pthread_join(young.t, NULL);
    assert_int_equal(young.rc, KP_ETIMEDOUT);
    if (young.took_ms < 1450)
        fail_msg("a call begun after the cut ended after %lld ms", (long long)young.took_ms);
    assert_int_equal(grpc_abandon_calls(c, clock_mono_ns()), 0); /* nothing waits */
    assert_int_equal(kill(pid, SIGCONT), 0);
    assert_int_equal(grpc_conn_error(c), 0);
    waiter_t after = {.c = c, .timeout_ms = 5000};
    wait_call(&after);
    assert_int_equal(after.rc, 0);
    grpc_close(c);
    cluster_stop(&k);
}

static void test_killed_server(void **state)
{
    (void)state;
    cluster_t k;
    cluster_start(&k, "grpc-kill");
    grpc_conn_t *c = conn(&k, NULL);
    owner_t o;
    owner_init(&o);
    grpc_stream_t *s = watch(c, &o, "/k/", "/k0");
    assert_int_equal(kill(cluster_pid(&k), SIGKILL), 0);
    int64_t t0 = clock_mono_ns();
    assert_true(owner_wait_end(&o, 3000));
    assert_true(ms_since(t0) < 2000); /* the kernel closed its socket: no ping needed */
    int rc = 0;
    assert_int_equal(owner_ends(&o, &rc), 1);
    assert_int_equal(rc, KP_EUNAVAILABLE);
    assert_int_equal(grpc_conn_error(c), KP_EUNAVAILABLE);

    grpc_status_t st;
    uint8_t *resp = NULL;
    size_t n;
    assert_int_equal(grpc_call(c, STATUS, "", 0, 1000, &st, &resp, &n), KP_EUNAVAILABLE);
    grpc_stream_cbs_t cbs = {.on_msg = on_msg, .on_end = on_end, .arg = &o};
    grpc_stream_t *s2 = (grpc_stream_t *)&s2;
    assert_int_equal(grpc_stream_open(c, WATCH, &cbs, &s2), KP_EUNAVAILABLE);
    assert_null(s2);
    assert_int_equal(grpc_stream_send(s, "", 0), KP_ECLOSED);
    grpc_conn_t *c2 = NULL;
    assert_int_equal(grpc_connect("127.0.0.1", k.port, NULL, &c2), KP_EUNAVAILABLE);
    grpc_stream_close(s);
    grpc_close(c);
    assert_int_equal(owner_ends(&o, NULL), 1);
    owner_free(&o);
    cluster_stop(&k);
}

static void test_close_with_streams(void **state)
{
    (void)state;
    grpc_conn_t *c = conn(&shared, NULL);
    owner_t o1, o2;
    owner_init(&o1);
    owner_init(&o2);
    grpc_stream_t *s1 = watch(c, &o1, "/cl/", "/cl0");
    grpc_stream_cbs_t cbs = {.on_msg = on_msg, .on_end = on_end, .arg = &o2};
    grpc_stream_t *s2 = NULL; /* opened, nothing sent */
    assert_int_equal(grpc_stream_open(c, WATCH, &cbs, &s2), 0);
    grpc_close(c); /* both streams hear KP_ECLOSED before it returns */
    int rc1 = 0, rc2 = 0;
    assert_int_equal(owner_ends(&o1, &rc1), 1);
    assert_int_equal(rc1, KP_ECLOSED);
    assert_int_equal(owner_ends(&o2, &rc2), 1);
    assert_int_equal(rc2, KP_ECLOSED);
    assert_int_equal(grpc_stream_send(s1, "", 0), KP_ECLOSED);
    grpc_stream_release(s1, 100);
    grpc_stream_close(s2);
    grpc_stream_close(s1); /* the last reference: the connection is freed here */
    assert_int_equal(owner_ends(&o1, NULL), 1);
    owner_free(&o1);
    owner_free(&o2);
}

static int group_setup(void **state)
{
    (void)state;
    cluster_start(&shared, "grpc");
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    cluster_stop(&shared);
    return 0;
}

int main(void)
{
    if (!tb_is_etcd()) {
        fprintf(stderr, "test_grpc: run it under tests/store/with-etcd.sh run\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connect_fails),      cmocka_unit_test(test_status),
        cmocka_unit_test(test_put_range),          cmocka_unit_test(test_unknown_method),
        cmocka_unit_test(test_watch_stream),       cmocka_unit_test(test_flow_control),
        cmocka_unit_test(test_many_threads),       cmocka_unit_test(test_frozen_server),
        cmocka_unit_test(test_abandon_calls),      cmocka_unit_test(test_killed_server),
        cmocka_unit_test(test_close_with_streams),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
