/*
 * test_httpd.c -- the HTTP server engine (src/httpd/httpd.h), HTTP/1.1 over
 * loopback TCP and a Unix socket, driven by libcurl and raw sockets.
 *
 * What it proves:
 *  - A request reaches on_request() with its method, %-decoded path, raw
 *    query, headers and body; the reply comes back; a kept-alive connection
 *    serves the next request (curl opens no second connection).
 *  - on_headers() runs before any body byte is read: its 401 comes back
 *    without on_request(), and the connection closes (the body stays
 *    unread). A Content-Length over its limit gets 413, headers over the
 *    limit 431, an encoded NUL in the path 400.
 *  - A streaming reply from another thread arrives as chunks, in order.
 *  - A client that does not read: stream writes are refused (KP_ETOOLARGE)
 *    once the unsent bytes pass the budget; when it closes, on_gone() runs
 *    and writes answer KP_ECLOSED.
 *  - Partial headers are cut off at the header timeout.
 *  - A connection past max_connections is closed at once; the others serve.
 *  - A client that half-closes after its request gets the reply, then the
 *    close.
 *  - The Unix socket serves, and the request says it is local.
 *  - httpd_stop() with a stream still open calls on_gone(), waits for the
 *    handler to end it, and returns.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "httpd/httpd.h"
#include "lib/buf.h"
#include "lib/err.h"
#include "testutil.h"

#define BODY_MAX (1u << 20)

typedef struct app {
    httpd_t *h;
    int port;
    char sock[108];
    char *dir;
    atomic_int headers, requests, gone;
    int end_on_gone;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    httpd_req_t *held; /* a streaming request handed to the test thread */
} app_t;

/* ---- the handler ---- */

static httpd_next_t on_headers(void *arg, httpd_req_t *r, size_t *body_max)
{
    app_t *a = arg;
    atomic_fetch_add(&a->headers, 1);
    const char *auth = httpd_header(r, "Authorization");
    if (auth && !strcmp(auth, "no")) {
        httpd_reply(r, 401, NULL, strdup("no\n"), 3);
        return HTTPD_REPLIED;
    }
    *body_max = BODY_MAX;
    return HTTPD_READ_BODY;
}

static void hold(app_t *a, httpd_req_t *r)
{
    pthread_mutex_lock(&a->mu);
    a->held = r;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

static void on_request(void *arg, httpd_req_t *r)
{
    app_t *a = arg;
    atomic_fetch_add(&a->requests, 1);
    const char *path = httpd_path(r);
    if (!strcmp(path, "/stream")) {
        assert_int_equal(httpd_stream_start(r, 200, NULL), 0);
        hold(a, r);
        return;
    }
    size_t len;
    httpd_body(r, &len);
    const char *x = httpd_header(r, "X-Test");
    char *out = NULL;
    int n = asprintf(&out, "%s %s %s %s %zu%s", httpd_method(r), path, httpd_query(r),
                     x ? x : "-", len, httpd_is_local(r) ? " local" : "");
    static const char *const hdrs[] = {"Content-Type", "text/plain", NULL};
    httpd_reply(r, 200, hdrs, out, (size_t)n);
}

static void on_gone(void *arg, httpd_req_t *r)
{
    app_t *a = arg;
    atomic_fetch_add(&a->gone, 1);
    if (a->end_on_gone) httpd_stream_end(r);
}

/* ---- fixture ---- */

static app_t *start(const httpd_limits_t *lim)
{
    app_t *a = calloc(1, sizeof *a);
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    socklen_t sl = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    a->port = ntohs(sa.sin_port);
    a->dir = tu_tmpdir("httpd");
    snprintf(a->sock, sizeof a->sock, "%s/s", a->dir);
    int ufd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un su = {.sun_family = AF_UNIX};
    snprintf(su.sun_path, sizeof su.sun_path, "%s", a->sock);
    assert_int_equal(bind(ufd, (struct sockaddr *)&su, sizeof su), 0);
    httpd_config_t cfg = {.tcp_fd = fd,
                          .unix_fd = ufd,
                          .workers = 2,
                          .on_headers = on_headers,
                          .on_request = on_request,
                          .on_gone = on_gone,
                          .arg = a};
    if (lim) cfg.limits = *lim;
    assert_int_equal(httpd_start(&cfg, &a->h), 0);
    return a;
}

static void stop(app_t *a)
{
    httpd_stop(a->h);
    tu_rmtree(a->dir);
    free(a->dir);
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
    free(a);
}

static httpd_req_t *wait_held(app_t *a)
{
    pthread_mutex_lock(&a->mu);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 10;
    while (!a->held)
        if (pthread_cond_timedwait(&a->cv, &a->mu, &ts)) break;
    httpd_req_t *r = a->held;
    a->held = NULL;
    pthread_mutex_unlock(&a->mu);
    assert_non_null(r);
    return r;
}

static int wait_count(atomic_int *n, int want)
{
    for (int i = 0; i < 1000; i++) {
        if (atomic_load(n) >= want) return 1;
        usleep(5000);
    }
    return 0;
}

/* ---- clients ---- */

static size_t sink(char *p, size_t sz, size_t n, void *arg)
{
    buf_append(arg, p, sz * n);
    return sz * n;
}

/* One request on handle c (reused across calls: keep-alive). */
static long fetch(CURL *c, app_t *a, int local, const char *method, const char *path,
                  const char *body, size_t blen, const char *header, buf_t *out)
{
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", a->port, path);
    buf_reset(out);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, local ? a->sock : NULL);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
    struct curl_slist *h = curl_slist_append(NULL, "Expect:");
    if (header) h = curl_slist_append(h, header);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)blen);
    } else {
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    }
    long code = 0;
    CURLcode cc = curl_easy_perform(c);
    curl_slist_free_all(h);
    if (cc) return -(long)cc;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    return code;
}

static int raw_connect(app_t *a)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)a->port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

static void raw_send(int fd, const char *s)
{
    assert_int_equal(send(fd, s, strlen(s), MSG_NOSIGNAL), (ssize_t)strlen(s));
}

/* ---- tests ---- */

static void test_requests_and_keep_alive(void **state)
{
    (void)state;
    app_t *a = start(NULL);
    CURL *c = curl_easy_init();
    buf_t out;
    buf_init(&out, 1 << 20);
    assert_int_equal(fetch(c, a, 0, "GET", "/ec%68o?a=1&b=%2F", NULL, 0, "X-Test: hi", &out), 200);
    assert_string_equal(out.p, "GET /echo a=1&b=%2F hi 0");
    long conns = -1;
    char *big = malloc(5000);
    memset(big, 'x', 5000);
    assert_int_equal(fetch(c, a, 0, "POST", "/echo", big, 5000, NULL, &out), 200);
    assert_string_equal(out.p, "POST /echo  - 5000");
    curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &conns);
    assert_int_equal(conns, 0); /* the same connection */
    /* Repeated header fields come as one value. */
    assert_int_equal(fetch(c, a, 0, "PUT", "/echo", "", 0, "X-Test: a\r\nX-Test: b", &out), 200);
    free(big);
    buf_free(&out);
    curl_easy_cleanup(c);
    httpd_stats_t st;
    httpd_stats(a->h, &st);
    assert_true(st.requests >= 2);
    stop(a);
}

static void test_refusals(void **state)
{
    (void)state;
    httpd_limits_t lim = {.header_bytes = 8192};
    app_t *a = start(&lim);
    CURL *c = curl_easy_init();
    buf_t out;
    buf_init(&out, 1 << 20);
    size_t n = 2 * BODY_MAX;
    char *body = malloc(n);
    memset(body, 'y', n);
    /* on_headers() says no before the body: 401, on_request() never runs. */
    int before = atomic_load(&a->requests);
    assert_int_equal(fetch(c, a, 0, "POST", "/echo", body, BODY_MAX / 2, "Authorization: no", &out),
                     401);
    assert_string_equal(out.p, "no\n");
    assert_int_equal(atomic_load(&a->requests), before);
    /* Over the body limit: 413 from its Content-Length alone. */
    assert_int_equal(fetch(c, a, 0, "POST", "/echo", body, n, NULL, &out), 413);
    assert_int_equal(atomic_load(&a->requests), before);
    /* Headers over the limit: 431. */
    char *hdr = malloc(10000);
    memcpy(hdr, "X-Big: ", 7);
    memset(hdr + 7, 'z', 9000);
    hdr[9007] = '\0';
    assert_int_equal(fetch(c, a, 0, "GET", "/echo", NULL, 0, hdr, &out), 431);
    /* An encoded NUL in the path: 400. */
    assert_int_equal(fetch(c, a, 0, "GET", "/a%00b", NULL, 0, NULL, &out), 400);
    assert_int_equal(atomic_load(&a->requests), before);
    /* And the server still serves. */
    assert_int_equal(fetch(c, a, 0, "GET", "/echo", NULL, 0, NULL, &out), 200);
    free(hdr);
    free(body);
    buf_free(&out);
    curl_easy_cleanup(c);
    stop(a);
}

typedef struct streamer {
    app_t *a;
    int rc;
} streamer_t;

static void *stream_lines(void *arg)
{
    streamer_t *s = arg;
    httpd_req_t *r = wait_held(s->a);
    const char *lines[] = {"one\n", "two\n", "three\n"};
    for (int i = 0; i < 3 && !s->rc; i++) {
        s->rc = httpd_stream_write(r, lines[i], strlen(lines[i]));
        usleep(20000);
    }
    httpd_stream_end(r);
    return NULL;
}

static void test_stream(void **state)
{
    (void)state;
    app_t *a = start(NULL);
    streamer_t s = {.a = a};
    pthread_t t;
    pthread_create(&t, NULL, stream_lines, &s);
    CURL *c = curl_easy_init();
    buf_t out;
    buf_init(&out, 1 << 20);
    assert_int_equal(fetch(c, a, 0, "GET", "/stream", NULL, 0, NULL, &out), 200);
    pthread_join(t, NULL);
    assert_int_equal(s.rc, 0);
    assert_string_equal(out.p, "one\ntwo\nthree\n");
    buf_free(&out);
    curl_easy_cleanup(c);
    stop(a);
}

static void test_budget_and_gone(void **state)
{
    (void)state;
    httpd_limits_t lim = {.stream_budget = 256u << 10};
    app_t *a = start(&lim);
    int fd = raw_connect(a);
    raw_send(fd, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n");
    httpd_req_t *r = wait_held(a);
    static char chunk[16384];
    memset(chunk, 'w', sizeof chunk);
    int rc = 0;
    size_t sent = 0;
    /* The client reads nothing: kernel buffers fill, then the budget. */
    for (int i = 0; i < 4096 && !rc; i++) {
        rc = httpd_stream_write(r, chunk, sizeof chunk);
        if (!rc) sent += sizeof chunk;
        if (i % 64 == 63) usleep(2000); /* let the loop write */
    }
    assert_int_equal(rc, KP_ETOOLARGE);
    print_message("refused after %zu bytes\n", sent);
    close(fd);
    assert_true(wait_count(&a->gone, 1));
    assert_int_equal(httpd_stream_write(r, chunk, 10), KP_ECLOSED);
    httpd_stream_end(r);
    stop(a);
}

static void test_header_timeout(void **state)
{
    (void)state;
    httpd_limits_t lim = {.header_timeout_ms = 300};
    app_t *a = start(&lim);
    int fd = raw_connect(a);
    raw_send(fd, "GET /echo HTTP/1.1\r\nHost: x\r\n"); /* and nothing more */
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char b[64];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(recv(fd, b, sizeof b, 0), 0); /* closed */
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_true(s >= 0.2 && s < 3.0);
    close(fd);
    httpd_stats_t st;
    httpd_stats(a->h, &st);
    assert_int_equal(st.timeouts, 1);
    stop(a);
}

/* A client that shuts its sending side after the request still gets the
 * reply, then the close. */
static void test_half_close(void **state)
{
    (void)state;
    app_t *a = start(NULL);
    int fd = raw_connect(a);
    raw_send(fd, "GET /echo?h HTTP/1.1\r\nHost: x\r\n\r\n");
    shutdown(fd, SHUT_WR);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char b[1024];
    size_t got = 0;
    ssize_t n;
    while (got < sizeof b - 1 && (n = recv(fd, b + got, sizeof b - 1 - got, 0)) > 0)
        got += (size_t)n;
    b[got] = '\0';
    assert_memory_equal(b, "HTTP/1.1 200", 12);
    assert_non_null(strstr(b, "\r\n\r\nGET /echo h - 0"));
    close(fd);
    stop(a);
}

/* Past max_connections an accepted connection is closed at once; the
 * others keep working. */
static void test_max_connections(void **state)
{
    (void)state;
    httpd_limits_t lim = {.max_connections = 2};
    app_t *a = start(&lim);
    int f1 = raw_connect(a), f2 = raw_connect(a), f3 = raw_connect(a);
    struct timeval tv = {5, 0};
    setsockopt(f3, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char b[512];
    assert_true(recv(f3, b, sizeof b, 0) <= 0); /* closed (or reset) */
    raw_send(f1, "GET /echo HTTP/1.1\r\nHost: x\r\n\r\n");
    setsockopt(f1, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ssize_t n = recv(f1, b, sizeof b - 1, 0);
    assert_true(n > 12);
    b[n] = '\0';
    assert_memory_equal(b, "HTTP/1.1 200", 12);
    httpd_stats_t st;
    httpd_stats(a->h, &st);
    assert_int_equal(st.refused, 1);
    close(f1);
    close(f2);
    close(f3);
    stop(a);
}

static void test_unix_socket(void **state)
{
    (void)state;
    app_t *a = start(NULL);
    CURL *c = curl_easy_init();
    buf_t out;
    buf_init(&out, 1 << 20);
    assert_int_equal(fetch(c, a, 1, "GET", "/echo", NULL, 0, NULL, &out), 200);
    assert_string_equal(out.p, "GET /echo  - 0 local");
    buf_free(&out);
    curl_easy_cleanup(c);
    stop(a);
}

static void test_stop_with_open_stream(void **state)
{
    (void)state;
    app_t *a = start(NULL);
    a->end_on_gone = 1;
    int fd = raw_connect(a);
    raw_send(fd, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n");
    httpd_req_t *r = wait_held(a);
    assert_int_equal(httpd_stream_write(r, "x\n", 2), 0);
    stop(a); /* closes the connection: on_gone ends the stream */
    char b[256];
    ssize_t n, total = 0;
    while ((n = recv(fd, b, sizeof b, 0)) > 0)
        total += n;
    assert_true(total > 0); /* the head and the chunk came before the close */
    close(fd);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_requests_and_keep_alive),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_stream),
        cmocka_unit_test(test_budget_and_gone),
        cmocka_unit_test(test_header_timeout),
        cmocka_unit_test(test_max_connections),
        cmocka_unit_test(test_half_close),
        cmocka_unit_test(test_unix_socket),
        cmocka_unit_test(test_stop_with_open_stream),
    };
    int rc = cmocka_run_group_tests_name("httpd", tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
