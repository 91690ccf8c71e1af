/*
 * test_failover.c -- a client of several API servers (kc_config_t.servers)
 * against two real kplane servers of one "cluster" (same CA, certificate
 * and admin token; each its own store, so their data differ: the test only
 * looks at which server answered).
 *
 * What it proves:
 *  - Requests go to the first server while it lives; after kill -9 of it
 *    the next create (a POST: not idempotent, but the connection was
 *    refused, so it certainly was not sent) and the next gets and lists
 *    succeed on the second server, with no error counted; with every
 *    server dead a call fails with KP_EUNAVAILABLE after trying each once.
 *  - A request that reached a server which then hung up without an answer
 *    (a fake server that reads the request and closes) is sent again to
 *    the next server when it is a GET, and is NOT sent again when it is a
 *    POST (it may have been done): that call fails, the next goes on.
 *  - A watch on the killed server ends with an error; opening it again
 *    lands on the live server and delivers its events.
 *  - An informer over both servers resumes after the kill: it sees an
 *    object created on the second server.
 *  - Bad server lists are refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "client/client.h"
#include "client/informer.h"
#include "kpserver.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "testutil.h"

static const char *const api_only[] = {"--nodes", "0", "--no-controllers", "--no-scheduler", NULL};

typedef struct fx {
    kpserver_t a, b;
    char url_a[64], url_b[64];
    json_t *storage;
    kc_config_t cfg; /* from a's kubeconfig: CA and token */
    kc_client_t *both, *only_a, *only_b;
} fx_t;

static kc_client_t *client_of(const fx_t *f, const char *const *servers)
{
    kc_config_t cfg = f->cfg;
    cfg.server = NULL;
    cfg.servers = servers;
    cfg.timeout_ms = 10000;
    kc_client_t *c = NULL;
    assert_int_equal(kc_client_new(&cfg, &c), 0);
    return c;
}

static int fx_setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    if (!f) return -1;
    kpserver_start(&f->a, api_only);
    kpserver_start_sharing(&f->b, &f->a, api_only);
    snprintf(f->url_a, sizeof f->url_a, "https://127.0.0.1:%d", f->a.port);
    snprintf(f->url_b, sizeof f->url_b, "https://127.0.0.1:%d", f->b.port);
    kc_client_t *tmp = NULL;
    if (kpserver_client(&f->a, &f->cfg, &f->storage, &tmp)) return -1;
    kc_client_free(tmp);
    const char *both[] = {f->url_a, f->url_b, NULL}, *a[] = {f->url_a, NULL},
               *b[] = {f->url_b, NULL};
    f->both = client_of(f, both);
    f->only_a = client_of(f, a);
    f->only_b = client_of(f, b);
    *state = f;
    return 0;
}

static int fx_teardown(void **state)
{
    fx_t *f = *state;
    kc_client_free(f->both);
    kc_client_free(f->only_a);
    kc_client_free(f->only_b);
    json_decref(f->storage);
    kpserver_stop(&f->a);
    kpserver_stop(&f->b);
    free(f);
    return 0;
}

static json_t *configmap(const char *name)
{
    return json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                     "metadata", "name", name, "namespace", "default", "data", "k", name);
}

static int create_cm(kc_client_t *c, const char *name)
{
    json_t *cm = configmap(name);
    int rc = kc_create(c, &kc_configmaps, "default", cm, NULL, NULL);
    json_decref(cm);
    return rc;
}

static int get_cm(kc_client_t *c, const char *name)
{
    json_t *o = NULL;
    int rc = kc_get(c, &kc_configmaps, "default", name, &o);
    json_decref(o);
    return rc;
}

/* ---- requests ---- */

static void test_requests_fail_over(void **state)
{
    fx_t *f = *state;
    /* Both servers take the same token and trust the same CA. */
    assert_int_equal(create_cm(f->only_b, "on-b"), 0);
    assert_int_equal(create_cm(f->both, "before"), 0);
    assert_int_equal(get_cm(f->only_a, "before"), 0); /* it went to the first server */
    assert_int_equal(get_cm(f->only_b, "before"), KP_ENOTFOUND);
    assert_int_equal(get_cm(f->both, "on-b"), KP_ENOTFOUND);

    kc_client_stats_t st0, st1;
    kc_client_stats(f->both, &st0);
    kpserver_kill(&f->a);

    /* The first call after the kill is a POST: refused connections mean it
     * was never sent, so it goes to the second server. */
    assert_int_equal(create_cm(f->both, "after"), 0);
    assert_int_equal(get_cm(f->only_b, "after"), 0);
    assert_int_equal(get_cm(f->both, "after"), 0);
    assert_int_equal(get_cm(f->both, "on-b"), 0);
    json_t *list = NULL;
    assert_int_equal(kc_list(f->both, &kc_configmaps, "default", NULL, &list), 0);
    size_t n = json_array_size(json_object_get(list, "items"));
    json_decref(list);
    assert_int_equal(n, 2); /* on-b, after */
    json_t *patch = json_pack("{s:{s:s}}", "data", "k", "patched");
    assert_int_equal(kc_patch(f->both, &kc_configmaps, "default", "after", NULL, KC_PATCH_MERGE,
                              patch, NULL, NULL, NULL),
                     0);
    json_decref(patch);
    kc_client_stats(f->both, &st1);
    assert_int_equal(st1.errors - st0.errors, 0);
    assert_int_equal(st1.requests - st0.requests, 5);

    /* Every server gone: each is tried once, then the call fails. */
    kpserver_kill(&f->b);
    int64_t t0 = clock_mono_ns();
    assert_int_equal(get_cm(f->both, "after"), KP_EUNAVAILABLE);
    assert_int_equal(create_cm(f->both, "nowhere"), KP_EUNAVAILABLE);
    assert_true(clock_mono_ns() - t0 < (int64_t)8000 * 1000000); /* refused: no waiting */
}

/* ---- a server that reads the request and hangs up without an answer ---- */

typedef struct hangup {
    int fd, port;
    atomic_int requests;
    atomic_int stop;
    pthread_t th;
} hangup_t;

static void *hangup_run(void *arg)
{
    hangup_t *h = arg;
    while (!atomic_load(&h->stop)) {
        int c = accept(h->fd, NULL, NULL);
        if (c < 0) continue;
        char buf[4096];
        size_t got = 0;
        ssize_t n;
        /* Read the whole request (headers and a small body), then close. */
        while ((n = read(c, buf + got, sizeof buf - 1 - got)) > 0) {
            got += (size_t)n;
            buf[got] = '\0';
            char *end = strstr(buf, "\r\n\r\n");
            if (!end) continue;
            const char *cl = strstr(buf, "Content-Length: ");
            size_t want = (size_t)(end + 4 - buf) + (cl ? (size_t)strtol(cl + 16, NULL, 10) : 0);
            if (got >= want) break;
        }
        if (got) atomic_fetch_add(&h->requests, 1);
        close(c);
    }
    return NULL;
}

static void hangup_start(hangup_t *h)
{
    memset(h, 0, sizeof *h);
    h->fd = tu_loopback_socket(&h->port);
    assert_int_equal(listen(h->fd, 16), 0);
    assert_int_equal(pthread_create(&h->th, NULL, hangup_run, h), 0);
}

static void hangup_stop(hangup_t *h)
{
    atomic_store(&h->stop, 1);
    shutdown(h->fd, SHUT_RDWR);
    /* Wake accept() if shutdown did not. */
    int c = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)h->port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (c >= 0) {
        (void)connect(c, (struct sockaddr *)&sa, sizeof sa);
        close(c);
    }
    pthread_join(h->th, NULL);
    close(h->fd);
}

static void test_sent_request_not_repeated(void **state)
{
    fx_t *f = *state;
    hangup_t h;
    hangup_start(&h);
    char fake[64];
    snprintf(fake, sizeof fake, "http://127.0.0.1:%d", h.port);
    const char *servers[] = {fake, f->url_b, NULL};

    /* A GET that got no answer is sent again to the next server. */
    kc_client_t *c = client_of(f, servers);
    assert_int_equal(create_cm(f->only_b, "seen"), 0);
    assert_int_equal(get_cm(c, "seen"), 0);
    assert_int_equal(atomic_load(&h.requests), 1);
    kc_client_free(c);

    /* A POST that got no answer may have been done: not sent again. */
    c = client_of(f, servers);
    assert_int_equal(create_cm(c, "maybe"), KP_EUNAVAILABLE);
    assert_int_equal(atomic_load(&h.requests), 2);
    assert_int_equal(get_cm(f->only_b, "maybe"), KP_ENOTFOUND);
    /* ... but the client moved on: the next call goes to the live server. */
    assert_int_equal(create_cm(c, "maybe"), 0);
    assert_int_equal(get_cm(f->only_b, "maybe"), 0);
    assert_int_equal(atomic_load(&h.requests), 2);
    kc_client_free(c);
    hangup_stop(&h);
}

/* ---- watches and informers ---- */

static void test_watch_reopens_on_next(void **state)
{
    fx_t *f = *state;
    kc_watch_t *w = NULL;
    assert_int_equal(kc_watch_open(f->both, &kc_configmaps, "default", NULL, "", 60, &w), 0);
    assert_int_equal(create_cm(f->only_a, "w-a"), 0);
    kc_event_type_t type;
    json_t *obj = NULL;
    int rc;
    do { /* the initial list of the watch from "" then our object */
        rc = kc_watch_next(w, 10000, &type, &obj);
        const char *name =
            json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
        int mine = !rc && name && !strcmp(name, "w-a");
        json_decref(obj);
        if (mine) break;
    } while (!rc);
    assert_int_equal(rc, 0);

    kpserver_kill(&f->a);
    do {
        rc = kc_watch_next(w, 20000, &type, &obj);
        json_decref(obj);
    } while (!rc && type == KC_BOOKMARK);
    assert_true(rc == KP_EUNAVAILABLE || rc == KP_ECLOSED);
    kc_watch_close(w);

    assert_int_equal(kc_watch_open(f->both, &kc_configmaps, "default", NULL, "", 60, &w), 0);
    assert_int_equal(create_cm(f->only_b, "w-b"), 0);
    int seen = 0;
    while (!seen && !(rc = kc_watch_next(w, 10000, &type, &obj))) {
        const char *name =
            json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
        seen = name && !strcmp(name, "w-b") && type == KC_ADDED;
        json_decref(obj);
    }
    assert_true(seen);
    kc_watch_close(w);
}

static void test_informer_resumes(void **state)
{
    fx_t *f = *state;
    /* The second server's history runs ahead of the first's, so the
     * informer's re-watch from the first server's resourceVersion is valid
     * there (with one etcd behind both, it always is). */
    for (int i = 0; i < 20; i++) {
        char name[32];
        snprintf(name, sizeof name, "pad-%d", i);
        assert_int_equal(create_cm(f->only_b, name), 0);
    }
    kc_informer_t *inf = NULL;
    assert_int_equal(kc_informer_new(f->both, &kc_configmaps, "default", NULL, NULL, 0, &inf), 0);
    assert_int_equal(kc_informer_start(inf), 0);
    assert_int_equal(kc_informer_wait_synced(inf, 20000), 0);
    assert_int_equal(create_cm(f->only_a, "inf-a"), 0);
    json_t *o = NULL;
    for (int i = 0; i < 400 && !(o = kc_informer_get(inf, "default/inf-a")); i++)
        tu_sleep_ms(50);
    assert_non_null(o);
    json_decref(o);

    kpserver_kill(&f->a);
    assert_int_equal(create_cm(f->only_b, "inf-b"), 0);
    o = NULL;
    for (int i = 0; i < 600 && !(o = kc_informer_get(inf, "default/inf-b")); i++)
        tu_sleep_ms(50);
    assert_non_null(o); /* resumed against the second server */
    json_decref(o);
    kc_informer_free(inf);
}

/* ---- configuration ---- */

static void test_bad_lists(void **state)
{
    (void)state;
    kc_client_t *c = NULL;
    const char *bad[] = {"https://127.0.0.1:1", "ftp://x", NULL};
    kc_config_t cfg = {.servers = bad};
    assert_int_equal(kc_client_new(&cfg, &c), KP_EINVAL);
    assert_null(c);
    const char *many[18];
    for (int i = 0; i < 17; i++)
        many[i] = "https://127.0.0.1:1";
    many[17] = NULL;
    cfg.servers = many;
    assert_int_equal(kc_client_new(&cfg, &c), KP_EINVAL);
    many[16] = NULL; /* 16 is the cap */
    assert_int_equal(kc_client_new(&cfg, &c), 0);
    kc_client_free(c);
    /* An empty list means `server`. */
    const char *none[] = {NULL};
    cfg = (kc_config_t){.server = "https://127.0.0.1:1", .servers = none};
    assert_int_equal(kc_client_new(&cfg, &c), 0);
    kc_client_free(c);
    cfg.server = NULL;
    assert_int_equal(kc_client_new(&cfg, &c), KP_EINVAL);
}

int main(void)
{
    const struct CMUnitTest config[] = {cmocka_unit_test(test_bad_lists)};
    const struct CMUnitTest requests[] = {
        cmocka_unit_test_setup_teardown(test_requests_fail_over, fx_setup, fx_teardown)};
    const struct CMUnitTest others[] = {
        cmocka_unit_test_setup_teardown(test_sent_request_not_repeated, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_watch_reopens_on_next, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_informer_resumes, fx_setup, fx_teardown),
    };
    int failed = cmocka_run_group_tests_name("failover_config", config, NULL, NULL);
    failed += cmocka_run_group_tests_name("failover_requests", requests, NULL, NULL);
    failed += cmocka_run_group_tests_name("failover_watch", others, NULL, NULL);
    return failed;
}
