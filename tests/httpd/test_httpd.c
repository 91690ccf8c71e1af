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
 *  - Client certificates (client_ca_pem): one the CA signed is verified,
 *    with its common name and organizations, seen alike from on_headers()
 *    and on_request(), over HTTP/1.1 and HTTP/2, and still readable on a
 *    request whose connection has gone; another CA's, an expired one and
 *    one for servers only are -1 with their reason; none, the Unix socket
 *    and a server without client_ca_pem are 0.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>

#include "httpd/httpd.h"
#include "lib/buf.h"
#include "lib/err.h"
#include "lib/websocket.h"
#include "testutil.h"

#define BODY_MAX (1u << 20)

typedef struct app {
    httpd_t *h;
    int port;
    char sock[108];
    char *dir;
    atomic_int headers, requests, gone, pulls_done;
    atomic_int hold_data; /* switched connections: on_data takes nothing */
    atomic_int data_calls, upgrade_rc;
    atomic_int drops, drop_status; /* on_drop() */
    int end_on_gone;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    httpd_req_t *held[512]; /* streaming requests handed to the test thread, in order */
    int nheld, taken;
    char *ca; /* TLS: the certificate's file (curl's CA) */
} app_t;

/* ---- the handler ---- */

/* What httpd_peer_cert() says of r: "1 CN O1,O2", "0", "-1 (why)" (malloc'd). */
static char *peer_str(const httpd_req_t *r)
{
    const char *cn = "x", *const *orgs = (const char *const *)&cn;
    size_t n = 99;
    int rc = httpd_peer_cert(r, &cn, &orgs, &n);
    buf_t b;
    buf_init(&b, 4096);
    buf_printf(&b, "%d", rc);
    if (rc == 1) {
        buf_printf(&b, " %s", cn);
        for (size_t i = 0; i < n; i++)
            buf_printf(&b, "%s%s", i ? "," : " ", orgs[i]);
    } else {
        assert_null(cn);
        assert_null(orgs);
        assert_int_equal(n, 0);
    }
    if (rc == -1)
        buf_printf(&b, " (%s)", httpd_peer_cert_error(r));
    else
        assert_null(httpd_peer_cert_error(r));
    assert_int_equal(httpd_peer_cert(r, NULL, NULL, NULL), rc);
    size_t len;
    return buf_detach(&b, &len);
}

static httpd_next_t on_headers(void *arg, httpd_req_t *r, size_t *body_max)
{
    app_t *a = arg;
    atomic_fetch_add(&a->headers, 1);
    if (!strncmp(httpd_path(r), "/whoami", 7)) httpd_set_data(r, peer_str(r));
    const char *auth = httpd_header(r, "Authorization");
    if (auth && !strcmp(auth, "no")) {
        httpd_reply(r, 401, NULL, strdup("no\n"), 3);
        return HTTPD_REPLIED;
    }
    if (auth && !strcmp(auth, "yes")) httpd_prove(r);
    if (httpd_header(r, "X-Want-Id")) { /* every reply: the target and the peer */
        char v[512];
        snprintf(v, sizeof v, "%s %s", httpd_target(r), httpd_peer(r));
        assert_int_equal(httpd_set_reply_header(r, "X-Req-Id", v), 0);
    }
    *body_max = BODY_MAX;
    return HTTPD_READ_BODY;
}

static void on_drop(void *arg, httpd_req_t *r, int status)
{
    app_t *a = arg;
    (void)r;
    atomic_store(&a->drop_status, status);
    atomic_fetch_add(&a->drops, 1);
}

static void hold(app_t *a, httpd_req_t *r)
{
    pthread_mutex_lock(&a->mu);
    if (a->nheld < 512) a->held[a->nheld++] = r;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

/* A pulled stream: "p1\n" .. "pN\n" (N from ?n=, 0: forever), then the end.
 * Parked (/park): "k1\n".. as the test makes pieces available (avail, then
 * httpd_pull_kick), the end when avail is -1; with ?tick=MS, a "t\n" once
 * MS pass with nothing kicked (the engine's timer). */
typedef struct puller {
    app_t *a;
    long n, i;
    int park, tick_ms, armed;
    atomic_long avail;
} puller_t;

static int pull_next(void *arg, buf_t *out, int *wait_ms)
{
    puller_t *p = arg;
    if (p->park) {
        long avail = atomic_load(&p->avail);
        if (avail < 0) return 0;
        if (p->i < avail) return buf_printf(out, "k%ld\n", ++p->i);
        if (p->armed) {
            p->armed = 0;
            return buf_append(out, "t\n", 2);
        }
        if (p->tick_ms) {
            p->armed = 1;
            *wait_ms = p->tick_ms;
        }
        return KP_EAGAIN;
    }
    if (p->n && p->i >= p->n) return 0;
    if (!p->n) { /* forever: big pieces, for a client that does not read */
        static char big[32768];
        memset(big, 'z', sizeof big);
        p->i++;
        return buf_append(out, big, sizeof big);
    }
    return buf_printf(out, "p%ld\n", ++p->i);
}

static void pull_done(void *arg)
{
    puller_t *p = arg;
    atomic_fetch_add(&p->a->pulls_done, 1);
    free(p);
}

static void ws_start(httpd_req_t *r);

static void on_request(void *arg, httpd_req_t *r)
{
    app_t *a = arg;
    atomic_fetch_add(&a->requests, 1);
    const char *path = httpd_path(r);
    if (!strcmp(path, "/pull") || !strcmp(path, "/park")) {
        puller_t *p = calloc(1, sizeof *p);
        p->a = a;
        const char *n = httpd_arg(r, "n"), *tick = httpd_arg(r, "tick");
        p->n = n ? strtol(n, NULL, 10) : 3;
        p->park = !strcmp(path, "/park");
        p->tick_ms = tick ? (int)strtol(tick, NULL, 10) : 0;
        httpd_set_data(r, p);
        if (p->park) hold(a, r); /* before its first step: the test may kick it at once */
        assert_int_equal(httpd_stream_pull(r, 200, NULL, 300, pull_next, pull_done, p), 0);
        return;
    }
    if (!strcmp(path, "/args")) {
        buf_t b;
        buf_init(&b, 1 << 16);
        buf_append(&b, "", 0);
        for (size_t i = 0; i < httpd_nargs(r); i++) {
            const char *k, *v;
            httpd_arg_at(r, i, &k, &v);
            buf_printf(&b, "[%s]=%s%s%s;", k, v ? "[" : "", v ? v : "(none)", v ? "]" : "");
        }
        const char *b1 = httpd_arg(r, "b");
        buf_printf(&b, "b:%s", b1 ? b1 : "NULL");
        size_t len;
        char *body = buf_detach(&b, &len);
        httpd_reply(r, 200, NULL, body, len);
        return;
    }
    if (!strcmp(path, "/ws")) {
        ws_start(r);
        return;
    }
    if (!strcmp(path, "/big")) { /* n bytes of a pattern: a body the engine adopts */
        const char *n = httpd_arg(r, "n");
        size_t len = n ? (size_t)strtoul(n, NULL, 10) : 0;
        char *body = malloc(len ? len : 1);
        for (size_t i = 0; i < len; i++)
            body[i] = (char)('a' + (i * 7 + i / 4096) % 26);
        httpd_reply(r, 200, NULL, body, len);
        return;
    }
    if (!strcmp(path, "/up") || !strcmp(path, "/notasked")) {
        /* switch to "echo": on_data sends every byte back upper-cased */
        const char *asked = httpd_upgrade_asked(r);
        static const char *const up[] = {"Upgrade", "echo", NULL};
        int rc = httpd_upgrade(r, up);
        atomic_store(&a->upgrade_rc, rc);
        if (rc) {
            char *out = NULL;
            int n = asprintf(&out, "upgrade %s: %s", asked ? asked : "NULL", err_str(rc));
            httpd_reply(r, 200, NULL, out, (size_t)n);
            return;
        }
        assert_string_equal(asked, "echo");
        assert_int_equal(httpd_upgrade(r, up), KP_EINVAL); /* once */
        hold(a, r);
        return;
    }
    if (!strcmp(path, "/stream") || !strcmp(path, "/whoami-hold")) {
        assert_int_equal(httpd_stream_start(r, 200, NULL), 0);
        hold(a, r);
        return;
    }
    if (!strcmp(path, "/whoami")) { /* on_headers' view | on_request's */
        char *seen = httpd_data(r), *now = peer_str(r), *out = NULL;
        int n = asprintf(&out, "%s|%s", seen, now);
        free(seen);
        free(now);
        httpd_reply(r, 200, NULL, out, (size_t)n);
        return;
    }
    size_t len;
    httpd_body(r, &len);
    const char *x = httpd_header(r, "X-Test");
    char *out = NULL;
    int n =
        asprintf(&out, "%s %s %s %s %zu%s%s", httpd_method(r), path, httpd_query(r), x ? x : "-",
                 len, httpd_is_local(r) ? " local" : "", httpd_is_h2(r) ? " h2" : "");
    static const char *const hdrs[] = {"Content-Type", "text/plain", NULL};
    httpd_reply(r, 200, hdrs, out, (size_t)n);
}

/* /ws: a WebSocket echo (lib/websocket.h) on a switched connection, for a
 * real client: text and binary come back upper-cased, a ping gets its
 * pong, a close its close and the end. */
typedef struct wsapp {
    ws_decoder_t d;
    httpd_req_t *r;
    int closed;
} wsapp_t;

static void ws_end(wsapp_t *w)
{
    httpd_stream_end(w->r);
    ws_decoder_free(&w->d);
    free(w);
}

static int ws_send(wsapp_t *w, int op, const uint8_t *p, size_t n)
{
    buf_t b;
    buf_init(&b, SIZE_MAX);
    int rc = op == WS_OP_CLOSE ? ws_encode_close(&b, WS_CLOSE_NORMAL, "bye", NULL)
                               : ws_encode(&b, op, 1, p, n, NULL);
    if (!rc) rc = httpd_stream_write(w->r, b.p, b.len);
    buf_free(&b);
    return rc;
}

static int ws_message(void *arg, int op, const uint8_t *p, size_t n)
{
    wsapp_t *w = arg;
    if (op == WS_OP_PING) return ws_send(w, WS_OP_PONG, p, n);
    if (op == WS_OP_PONG) return 0;
    if (op == WS_OP_CLOSE) {
        w->closed = 1;
        return ws_send(w, WS_OP_CLOSE, NULL, 0);
    }
    uint8_t *up = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        up[i] = (uint8_t)toupper(p[i]);
    int rc = ws_send(w, op, up, n);
    free(up);
    return rc;
}

static void ws_start(httpd_req_t *r)
{
    const char *key = httpd_header(r, "Sec-WebSocket-Key");
    const char *asked = httpd_upgrade_asked(r);
    char accept[WS_ACCEPT_LEN + 1];
    if (!asked || strcasecmp(asked, "websocket") || !key || ws_accept_key(key, accept)) {
        httpd_reply(r, 400, NULL, strdup("not a websocket handshake\n"), 27);
        return;
    }
    wsapp_t *w = calloc(1, sizeof *w);
    w->r = r;
    ws_decoder_init(&w->d, 1, 1 << 20);
    httpd_set_data(r, w);
    const char *const hdrs[] = {"Upgrade", "websocket", "Sec-WebSocket-Accept", accept, NULL};
    assert_int_equal(httpd_upgrade(r, hdrs), 0);
}

static size_t on_data(void *arg, httpd_req_t *r, const char *p, size_t n)
{
    app_t *a = arg;
    if (!strcmp(httpd_path(r), "/ws")) { /* loop thread: the only one touching w */
        wsapp_t *w = httpd_data(r);
        int rc = ws_decode(&w->d, p, n, ws_message, w);
        if (rc || w->closed) ws_end(w);
        return n;
    }
    atomic_fetch_add(&a->data_calls, 1);
    if (atomic_load(&a->hold_data)) return 0;
    char *up = malloc(n);
    for (size_t i = 0; i < n; i++)
        up[i] = (char)toupper((unsigned char)p[i]);
    int rc = httpd_stream_write(r, up, n);
    free(up);
    return rc ? 0 : n;
}

static void on_gone(void *arg, httpd_req_t *r)
{
    app_t *a = arg;
    atomic_fetch_add(&a->gone, 1);
    if (!strcmp(httpd_path(r), "/ws") && httpd_data(r)) {
        ws_end(httpd_data(r));
        return;
    }
    if (a->end_on_gone) httpd_stream_end(r);
}

/* ---- fixture ---- */

/* A self-signed certificate for 127.0.0.1 (ECDSA P-256), made once. */
static char *g_cert, *g_key;

static void make_cert(void)
{
    if (g_cert) return;
    gnutls_x509_privkey_t key;
    gnutls_x509_crt_t crt;
    assert_int_equal(gnutls_x509_privkey_init(&key), 0);
    assert_int_equal(gnutls_x509_privkey_generate(
                         key, GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0),
                     0);
    assert_int_equal(gnutls_x509_crt_init(&crt), 0);
    unsigned char serial[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    unsigned char ip[4] = {127, 0, 0, 1};
    time_t now = time(NULL);
    gnutls_x509_crt_set_version(crt, 3);
    gnutls_x509_crt_set_serial(crt, serial, sizeof serial);
    gnutls_x509_crt_set_activation_time(crt, now - 3600);
    gnutls_x509_crt_set_expiration_time(crt, now + 86400);
    gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, "127.0.0.1", 9);
    gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, 4, GNUTLS_FSAN_SET);
    gnutls_x509_crt_set_basic_constraints(crt, 1, -1);
    gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE | GNUTLS_KEY_KEY_CERT_SIGN);
    gnutls_x509_crt_set_key(crt, key);
    assert_int_equal(gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0), 0);
    gnutls_datum_t d;
    assert_int_equal(gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &d), 0);
    g_cert = strndup((char *)d.data, d.size);
    gnutls_free(d.data);
    assert_int_equal(gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &d), 0);
    g_key = strndup((char *)d.data, d.size);
    gnutls_free(d.data);
    gnutls_x509_crt_deinit(crt);
    gnutls_x509_privkey_deinit(key);
}

static app_t *start_ca(const httpd_limits_t *lim, int tls, const char *client_ca)
{
    app_t *a = calloc(1, sizeof *a);
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    int fd = tu_loopback_socket(&a->port);
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
                          .on_data = on_data,
                          .on_drop = on_drop,
                          .arg = a};
    if (lim) cfg.limits = *lim;
    if (tls) {
        make_cert();
        cfg.cert_pem = g_cert;
        cfg.key_pem = g_key;
        cfg.client_ca_pem = client_ca;
        assert_true(asprintf(&a->ca, "%s/ca.pem", a->dir) > 0);
        FILE *f = fopen(a->ca, "w");
        fputs(g_cert, f);
        fclose(f);
    }
    assert_int_equal(httpd_start(&cfg, &a->h), 0);
    return a;
}

static app_t *start_with(const httpd_limits_t *lim, int tls)
{
    return start_ca(lim, tls, NULL);
}

static app_t *start(const httpd_limits_t *lim)
{
    return start_with(lim, 0);
}

static void stop(app_t *a)
{
    httpd_stop(a->h);
    tu_rmtree(a->dir);
    free(a->dir);
    free(a->ca);
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
    while (a->taken == a->nheld)
        if (pthread_cond_timedwait(&a->cv, &a->mu, &ts)) break;
    httpd_req_t *r = a->taken < a->nheld ? a->held[a->taken++] : NULL;
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
    snprintf(url, sizeof url, "%s://127.0.0.1:%d%s", a->ca && !local ? "https" : "http", a->port,
             path);
    if (a->ca) curl_easy_setopt(c, CURLOPT_CAINFO, a->ca);
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
        curl_easy_setopt(c, CURLOPT_NOBODY, (long)!strcmp(method, "HEAD"));
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
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)a->port),
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

/* Read until the end: whether it came (a close, not a timeout of 10 s). */
static int is_closed_after_drain(int fd)
{
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char b[65536];
    ssize_t n;
    while ((n = recv(fd, b, sizeof b, 0)) > 0) {
    }
    return n == 0 || (n < 0 && errno == ECONNRESET);
}

static int is_closed(int fd, int wait_s)
{
    struct timeval tv = {wait_s, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char b[512];
    return recv(fd, b, sizeof b, 0) <= 0;
}

/* One request on fd; whether a 200 came back. */
static int raw_ok(int fd, const char *auth)
{
    char req[256];
    snprintf(req, sizeof req, "GET /echo HTTP/1.1\r\nHost: x\r\n%s\r\n", auth ? auth : "");
    if (send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req)) return 0;
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char b[512];
    ssize_t n = recv(fd, b, sizeof b - 1, 0);
    return n > 12 && !memcmp(b, "HTTP/1.1 200", 12);
}

/* Read until `want` is in what came (10 s at most); the bytes so far,
 * NUL-terminated, in b. */
static size_t read_until(int fd, char *b, size_t cap, const char *want)
{
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    size_t got = 0;
    b[0] = '\0';
    while (!strstr(b, want) && got < cap - 1) {
        ssize_t n = recv(fd, b + got, cap - 1 - got, 0);
        if (n <= 0) break;
        got += (size_t)n;
        b[got] = '\0';
    }
    return got;
}

/* A header set at on_headers is on every reply to the request: the
 * handler's, and the engine's refusal after on_headers (413), whose request
 * goes to on_drop() with its status; httpd_target() is the target as sent. */
static void test_reply_header_and_drop(void **state)
{
    (void)state;
    app_t *a = start(NULL);
    char b[8192];
    int fd = raw_connect(a);
    raw_send(fd, "GET /ec%68o?a=1 HTTP/1.1\r\nHost: x\r\nX-Want-Id: 1\r\n\r\n");
    read_until(fd, b, sizeof b, "\r\n\r\n");
    assert_non_null(strstr(b, "HTTP/1.1 200"));
    assert_non_null(strstr(b, "\r\nX-Req-Id: /ec%68o?a=1 127.0.0.1\r\n"));
    close(fd);
    /* none asked: none given */
    fd = raw_connect(a);
    raw_send(fd, "GET /echo HTTP/1.1\r\nHost: x\r\n\r\n");
    read_until(fd, b, sizeof b, "\r\n\r\n");
    assert_null(strstr(b, "X-Req-Id"));
    close(fd);
    assert_int_equal(atomic_load(&a->drops), 0);
    /* the engine's 413 (the body is over what on_headers allowed) */
    fd = raw_connect(a);
    raw_send(fd, "POST /echo HTTP/1.1\r\nHost: x\r\nX-Want-Id: 1\r\n"
                 "Content-Length: 2000000\r\n\r\n");
    read_until(fd, b, sizeof b, "\r\n\r\n");
    assert_non_null(strstr(b, "HTTP/1.1 413"));
    assert_non_null(strstr(b, "\r\nX-Req-Id: /echo 127.0.0.1\r\n"));
    close(fd);
    assert_true(wait_count(&a->drops, 1));
    assert_int_equal(atomic_load(&a->drop_status), 413);
    stop(a);
}

/* UPGRADES: the handler switches; bytes sent behind the request come to
 * on_data first, then the rest in order; on_data may hold bytes until
 * httpd_upgrade_resume(); httpd_stream_end() closes after the last byte;
 * the client leaving is on_gone. */
static void test_upgrade(void **state)
{
    (void)state;
    app_t *a = start(NULL);
    int fd = raw_connect(a);
    raw_send(fd, "GET /up HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n"
                 "early");
    char b[4096];
    read_until(fd, b, sizeof b, "EARLY");
    assert_memory_equal(b, "HTTP/1.1 101 Switching Protocols\r\n", 34);
    assert_non_null(strstr(b, "\r\nConnection: Upgrade\r\n"));
    assert_non_null(strstr(b, "\r\nUpgrade: echo\r\n"));
    assert_null(strstr(b, "Content-Length"));
    assert_null(strstr(b, "chunked"));
    char *body = strstr(b, "\r\n\r\n");
    assert_non_null(body);
    assert_string_equal(body + 4, "EARLY");
    httpd_req_t *r = wait_held(a);

    raw_send(fd, "more");
    read_until(fd, b, sizeof b, "MORE");
    assert_string_equal(b, "MORE");

    /* held: nothing comes back until resumed, then all of it, in order */
    atomic_store(&a->hold_data, 1);
    int calls = atomic_load(&a->data_calls);
    raw_send(fd, "abc");
    while (atomic_load(&a->data_calls) == calls)
        usleep(1000);
    raw_send(fd, "def");
    usleep(100 * 1000);
    assert_int_equal(atomic_load(&a->data_calls), calls + 1); /* held: not offered again */
    struct timeval tv = {0, 200 * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    assert_true(recv(fd, b, sizeof b, 0) < 0);
    atomic_store(&a->hold_data, 0);
    httpd_upgrade_resume(r);
    read_until(fd, b, sizeof b, "ABCDEF");
    assert_string_equal(b, "ABCDEF");

    /* the handler ends it: what it wrote arrives, then the end of file */
    assert_int_equal(httpd_stream_write(r, "bye", 3), 0);
    httpd_stream_end(r);
    size_t got = read_until(fd, b, sizeof b, "never");
    assert_int_equal(got, 3);
    assert_string_equal(b, "bye");
    close(fd);

    /* the client leaves: on_gone */
    fd = raw_connect(a);
    raw_send(fd, "POST /up HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: echo\r\n"
                 "Content-Length: 0\r\n\r\n");
    read_until(fd, b, sizeof b, "\r\n\r\n");
    assert_memory_equal(b, "HTTP/1.1 101", 12);
    r = wait_held(a);
    int gone = atomic_load(&a->gone);
    close(fd);
    assert_true(wait_count(&a->gone, gone + 1));
    httpd_stream_end(r);

    /* a request that does not ask cannot switch; one that asks may get an
     * ordinary reply, after which the connection closes */
    fd = raw_connect(a);
    raw_send(fd, "GET /notasked HTTP/1.1\r\nHost: x\r\n\r\n");
    read_until(fd, b, sizeof b, "invalid");
    assert_non_null(strstr(b, "upgrade NULL: "));
    close(fd);
    fd = raw_connect(a);
    raw_send(fd, "GET /echo HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n");
    read_until(fd, b, sizeof b, "GET /echo");
    assert_memory_equal(b, "HTTP/1.1 200", 12);
    assert_non_null(strstr(b, "Connection: close\r\n"));
    assert_true(is_closed(fd, 5));
    close(fd);

    /* CONNECT, and an upgrade with a body: 400 */
    fd = raw_connect(a);
    raw_send(fd, "CONNECT x:1 HTTP/1.1\r\nHost: x\r\n\r\n");
    read_until(fd, b, sizeof b, "\r\n");
    assert_memory_equal(b, "HTTP/1.1 400", 12);
    close(fd);
    fd = raw_connect(a);
    raw_send(fd, "POST /up HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n"
                 "Content-Length: 5\r\n\r\nhello");
    read_until(fd, b, sizeof b, "\r\n");
    assert_memory_equal(b, "HTTP/1.1 400", 12);
    close(fd);
    stop(a);
}

/* A TLS client on a blocking socket (the test's certificate is trusted
 * by not verifying: the engine's side is under test). */
typedef struct tlscli {
    int fd;
    gnutls_session_t s;
    gnutls_certificate_credentials_t cred;
} tlscli_t;

static void tls_open(app_t *a, tlscli_t *t)
{
    t->fd = raw_connect(a);
    assert_int_equal(gnutls_certificate_allocate_credentials(&t->cred), 0);
    assert_int_equal(gnutls_init(&t->s, GNUTLS_CLIENT), 0);
    assert_int_equal(gnutls_set_default_priority(t->s), 0);
    assert_int_equal(gnutls_credentials_set(t->s, GNUTLS_CRD_CERTIFICATE, t->cred), 0);
    gnutls_transport_set_int(t->s, t->fd);
    gnutls_handshake_set_timeout(t->s, 10000);
    assert_int_equal(gnutls_handshake(t->s), 0);
}

static void tls_send(tlscli_t *t, const char *str)
{
    assert_int_equal(gnutls_record_send(t->s, str, strlen(str)), (ssize_t)strlen(str));
}

static size_t tls_read_until(tlscli_t *t, char *b, size_t cap, const char *want)
{
    struct timeval tv = {10, 0};
    setsockopt(t->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    size_t got = 0;
    b[0] = '\0';
    while (!strstr(b, want) && got < cap - 1) {
        ssize_t n = gnutls_record_recv(t->s, b + got, cap - 1 - got);
        if (n <= 0) break;
        got += (size_t)n;
        b[got] = '\0';
    }
    return got;
}

static void tls_close(tlscli_t *t)
{
    gnutls_deinit(t->s);
    gnutls_certificate_free_credentials(t->cred);
    close(t->fd);
}

/* The same over TLS: held bytes wait as records, undecrypted, until resumed;
 * the end is close_notify. */
static void test_upgrade_tls(void **state)
{
    (void)state;
    app_t *a = start_with(NULL, 1);
    tlscli_t t;
    tls_open(a, &t);
    tls_send(&t, "GET /up HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n");
    char b[1 << 17];
    tls_read_until(&t, b, sizeof b, "\r\n\r\n");
    assert_memory_equal(b, "HTTP/1.1 101 Switching Protocols\r\n", 34);
    httpd_req_t *r = wait_held(a);
    atomic_store(&a->hold_data, 1);
    /* more than one read's worth, in many records, while held */
    static char big[100000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (char)('a' + i % 26);
    for (size_t off = 0; off < sizeof big;) {
        ssize_t n = gnutls_record_send(t.s, big + off, sizeof big - off);
        assert_true(n > 0);
        off += (size_t)n;
    }
    usleep(200 * 1000);
    atomic_store(&a->hold_data, 0);
    httpd_upgrade_resume(r);
    size_t got = 0;
    while (got < sizeof big) {
        ssize_t n = gnutls_record_recv(t.s, b + got, sizeof b - got);
        assert_true(n > 0);
        got += (size_t)n;
    }
    assert_int_equal(got, sizeof big);
    for (size_t i = 0; i < sizeof big; i++)
        if (b[i] != (char)('A' + i % 26)) fail_msg("byte %zu: %c", i, b[i]);
    httpd_stream_end(r);
    assert_int_equal(gnutls_record_recv(t.s, b, sizeof b), 0); /* close_notify */
    tls_close(&t);
    stop(a);
}

/* Whole replies from small to 20 MB (the bigger ones sent from the
 * handler's buffer: HTTPD_ADOPT_MIN) arrive whole over HTTP/1.1 plain, over
 * TLS, and HTTP/2, twice on one connection. */
static void test_big_replies(void **state)
{
    (void)state;
    static const size_t sizes[] = {1000, (64u << 10) - 1, 64u << 10, 300000, 20u << 20};
    for (int tls = 0; tls < 2; tls++) {
        app_t *a = start_with(NULL, tls);
        for (int h2 = 0; h2 <= tls; h2++) {
            CURL *c = curl_easy_init();
            curl_easy_setopt(c, CURLOPT_HTTP_VERSION,
                             (long)(h2 ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1));
            buf_t out;
            buf_init(&out, 32u << 20);
            for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
                for (int again = 0; again < 2; again++) {
                    char path[64];
                    snprintf(path, sizeof path, "/big?n=%zu", sizes[k]);
                    assert_int_equal(fetch(c, a, 0, "GET", path, NULL, 0, NULL, &out), 200);
                    if (out.len != sizes[k])
                        fail_msg("tls %d h2 %d: %zu bytes, want %zu", tls, h2, out.len, sizes[k]);
                    for (size_t i = 0; i < sizes[k]; i++)
                        if (out.p[i] != (char)('a' + (i * 7 + i / 4096) % 26))
                            fail_msg("tls %d h2 %d size %zu: byte %zu differs", tls, h2, sizes[k],
                                     i);
                }
            }
            long conns = -1;
            curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &conns);
            assert_int_equal(conns, 0); /* one connection throughout */
            buf_free(&out);
            curl_easy_cleanup(c);
        }
        stop(a);
    }
}

/* A real WebSocket client (python3-websocket, which the Kubernetes python
 * client's exec uses) against the /ws echo over a switched connection. */
static void test_websocket_client(void **state)
{
    (void)state;
    app_t *a = start(NULL);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 - 'ws://127.0.0.1:%d/ws' <<'PY' 2>&1\n"
             "import sys, websocket\n"
             "ws = websocket.create_connection(sys.argv[1], timeout=10)\n"
             "ws.send('hello'); print(ws.recv())\n"
             "ws.send_binary(b'ab\\x00c'); print(ws.recv())\n"
             "ws.ping('are you there'); print(ws.recv_data_frame(True)[1].data)\n"
             "big = 'x' * 200000; ws.send(big); r = ws.recv(); print(len(r), r == big.upper())\n"
             "ws.close(); print('closed', ws.status if hasattr(ws, 'status') else '')\n"
             "PY",
             a->port);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    char out[4096];
    size_t got = fread(out, 1, sizeof out - 1, f);
    out[got] = '\0';
    int rc = pclose(f);
    if (rc) fail_msg("python3 websocket client: exit %d: %s", rc, out);
    assert_non_null(strstr(out, "HELLO\n"));
    assert_non_null(strstr(out, "b'AB\\x00C'\n"));
    assert_non_null(strstr(out, "b'are you there'\n"));
    assert_non_null(strstr(out, "200000 True\n"));
    assert_non_null(strstr(out, "closed"));
    stop(a);
}

/* At max_connections a new connection closes the oldest unproven one; a
 * proven one (httpd_prove) is never closed for a newer one: with all of
 * them proven, the new one is closed. */
static void test_max_connections(void **state)
{
    (void)state;
    httpd_limits_t lim = {.max_connections = 2};
    app_t *a = start(&lim);
    int f1 = raw_connect(a);
    assert_true(raw_ok(f1, "Authorization: yes\r\n")); /* proven */
    int f2 = raw_connect(a);
    usleep(100000);
    int f3 = raw_connect(a);
    assert_true(is_closed(f2, 5)); /* the oldest unproven made room */
    assert_true(raw_ok(f3, "Authorization: yes\r\n"));
    assert_true(raw_ok(f1, NULL));
    int f4 = raw_connect(a);
    assert_true(is_closed(f4, 5)); /* every place is proven */
    assert_true(raw_ok(f1, NULL));
    httpd_stats_t st;
    httpd_stats(a->h, &st);
    assert_int_equal(st.refused, 1);
    assert_int_equal(st.evicted, 1);
    close(f1);
    close(f2);
    close(f3);
    close(f4);
    stop(a);
}

/* Past max_unproven a new connection closes the oldest unproven one that
 * has been quiet for 5 s; ones still talking keep their places. */
static void test_max_unproven(void **state)
{
    (void)state;
    httpd_limits_t lim = {.max_unproven = 2, .header_timeout_ms = 60000};
    app_t *a = start(&lim);
    int f1 = raw_connect(a), f2 = raw_connect(a);
    raw_send(f1, "GET /echo HTTP/1.1\r\n"); /* and then silence */
    raw_send(f2, "GET /echo HTTP/1.1\r\n");
    int f3 = raw_connect(a); /* nobody quiet long enough: all stay */
    usleep(100000);
    httpd_stats_t st;
    httpd_stats(a->h, &st);
    assert_int_equal(st.evicted, 0);
    usleep(5500000);
    raw_send(f2, "X-A: b\r\n"); /* f2 moves; f1 has been quiet */
    usleep(100000);
    int f4 = raw_connect(a);
    assert_true(is_closed(f1, 5));
    httpd_stats(a->h, &st);
    assert_int_equal(st.evicted, 1);
    assert_int_equal(st.unproven, 3);
    assert_true(raw_ok(f4, NULL));
    close(f1);
    close(f2);
    close(f3);
    close(f4);
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

/* ---- a small HTTP/2 client over TLS (GnuTLS + nghttp2), for what curl
 * cannot be made to do: a window that never opens, RST_STREAM on demand,
 * an old TLS version ---- */

typedef struct h2st {
    int32_t id;
    int status;
    buf_t body;
    int closed;
    uint32_t err;
    size_t upload; /* request body bytes still to send ('u's) */
} h2st_t;

typedef struct h2cli {
    int fd;
    gnutls_session_t tls;
    gnutls_certificate_credentials_t cred;
    nghttp2_session *s;
    int goaway, eof;
    uint32_t goaway_err;
    int32_t goaway_last;
    h2st_t st[2100];
    int nst;
} h2cli_t;

static int cli_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *n, size_t nlen,
                      const uint8_t *v, size_t vlen, uint8_t flags, void *u)
{
    (void)flags, (void)u, (void)vlen;
    h2st_t *st = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
    if (st && nlen == 7 && !memcmp(n, ":status", 7))
        st->status = (int)strtol((const char *)v, NULL, 10);
    return 0;
}

static int cli_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *d, size_t len,
                    void *u)
{
    (void)flags, (void)u;
    h2st_t *st = nghttp2_session_get_stream_user_data(s, id);
    if (st) buf_append(&st->body, d, len);
    return 0;
}

static int cli_close(nghttp2_session *s, int32_t id, uint32_t err, void *u)
{
    (void)u;
    h2st_t *st = nghttp2_session_get_stream_user_data(s, id);
    if (st) {
        st->closed = 1;
        st->err = err;
    }
    return 0;
}

static int cli_frame(nghttp2_session *s, const nghttp2_frame *f, void *u)
{
    (void)s;
    h2cli_t *c = u;
    if (f->hd.type == NGHTTP2_GOAWAY) {
        c->goaway = 1;
        c->goaway_err = f->goaway.error_code;
        c->goaway_last = f->goaway.last_stream_id;
    }
    return 0;
}

/* Connect with TLS priorities `prio` (NULL: the default) and ALPN h2;
 * `window` is our streams' receive window. 0, or the handshake's error. */
static int cli_open(app_t *a, h2cli_t *c, const char *prio, uint32_t window)
{
    memset(c, 0, sizeof *c);
    c->fd = raw_connect(a);
    struct timeval tv = {10, 0};
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    gnutls_certificate_allocate_credentials(&c->cred);
    gnutls_init(&c->tls, GNUTLS_CLIENT);
    if (prio)
        gnutls_priority_set_direct(c->tls, prio, NULL);
    else
        gnutls_set_default_priority(c->tls);
    gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE, c->cred);
    gnutls_datum_t h2 = {(unsigned char *)"h2", 2};
    gnutls_alpn_set_protocols(c->tls, &h2, 1, 0);
    gnutls_transport_set_int(c->tls, c->fd);
    int rc;
    do
        rc = gnutls_handshake(c->tls);
    while (rc == GNUTLS_E_AGAIN || rc == GNUTLS_E_INTERRUPTED);
    if (rc < 0) return rc;
    gnutls_datum_t alpn;
    assert_int_equal(gnutls_alpn_get_selected_protocol(c->tls, &alpn), 0);
    assert_memory_equal(alpn.data, "h2", 2);
    nghttp2_session_callbacks *cb;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_header_callback(cb, cli_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, cli_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, cli_close);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, cli_frame);
    assert_int_equal(nghttp2_session_client_new(&c->s, cb, c), 0);
    nghttp2_session_callbacks_del(cb);
    nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, window},
                                   {NGHTTP2_SETTINGS_ENABLE_PUSH, 0}};
    nghttp2_submit_settings(c->s, NGHTTP2_FLAG_NONE, iv, 2);
    return 0;
}

static void cli_close_all(h2cli_t *c)
{
    if (c->s) nghttp2_session_del(c->s);
    gnutls_deinit(c->tls);
    gnutls_certificate_free_credentials(c->cred);
    close(c->fd);
    for (int i = 0; i < c->nst; i++)
        buf_free(&c->st[i].body);
}

static void cli_send(h2cli_t *c)
{
    const uint8_t *d;
    ssize_t n;
    while ((n = nghttp2_session_mem_send(c->s, &d)) > 0) {
        while (n > 0) {
            ssize_t k = gnutls_record_send(c->tls, d, (size_t)n);
            if (k == GNUTLS_E_AGAIN || k == GNUTLS_E_INTERRUPTED) continue;
            if (k < 0) {
                c->eof = 1;
                return;
            }
            d += k;
            n -= k;
        }
    }
}

/* Send what is pending, then read for up to `ms` (or until `done`). */
static void cli_pump(h2cli_t *c, int ms, int (*done)(h2cli_t *c, void *arg), void *arg)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        cli_send(c);
        if (c->eof || (done && done(c, arg))) return;
        clock_gettime(CLOCK_MONOTONIC, &t);
        long left = ms - ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
        if (left <= 0) return;
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (!gnutls_record_check_pending(c->tls) && poll(&p, 1, (int)left) <= 0) continue;
        char b[16384];
        ssize_t n = gnutls_record_recv(c->tls, b, sizeof b);
        if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED) continue;
        if (n <= 0 || nghttp2_session_mem_recv(c->s, (uint8_t *)b, (size_t)n) < 0) {
            c->eof = 1;
            return;
        }
    }
}

static ssize_t cli_upload(nghttp2_session *s, int32_t id, uint8_t *buf, size_t max, uint32_t *flags,
                          nghttp2_data_source *src, void *u)
{
    (void)s, (void)id, (void)u;
    h2st_t *st = src->ptr;
    size_t n = st->upload < max ? st->upload : max;
    memset(buf, 'u', n);
    st->upload -= n;
    if (!st->upload) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

/* A request with `upload` body bytes; `hname` may name one more header.
 * Its stream, or NULL. */
static h2st_t *cli_req(h2cli_t *c, const char *method, const char *path, const char *hname,
                       const char *hval, size_t upload)
{
#define NV(n, v) {(uint8_t *)(n), (uint8_t *)(v), strlen(n), strlen(v), NGHTTP2_NV_FLAG_NONE}
    nghttp2_nv nv[] = {NV(":method", method), NV(":scheme", "https"), NV(":authority", "127.0.0.1"),
                       NV(":path", path), NV(hname ? hname : "x-none", hval ? hval : "")};
#undef NV
    h2st_t *st = &c->st[c->nst++];
    buf_init(&st->body, 1 << 20);
    st->upload = upload;
    nghttp2_data_provider dp = {.source.ptr = st, .read_callback = cli_upload};
    st->id = nghttp2_submit_request(c->s, NULL, nv, 5, upload ? &dp : NULL, st);
    return st->id > 0 ? st : NULL;
}

static int st_closed(h2cli_t *c, void *arg)
{
    (void)c;
    return ((h2st_t *)arg)->closed;
}

static int got_goaway(h2cli_t *c, void *arg)
{
    (void)arg;
    return c->goaway;
}

/* ---- tests: TLS, ALPN, HTTP/2 ---- */

static long curl_version_of(CURL *c)
{
    long v = 0;
    curl_easy_getinfo(c, CURLINFO_HTTP_VERSION, &v);
    return v;
}

/* HTTP/1.1 over TLS keeps its connection; ALPN gives curl HTTP/2 when it
 * asks, and the same requests work there (bodies, refusals, the next
 * request on the same connection). */
static void test_tls_h1_and_h2(void **state)
{
    (void)state;
    httpd_limits_t lim = {.header_bytes = 8192};
    app_t *a = start_with(&lim, 1);
    buf_t out;
    buf_init(&out, 1 << 20);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    assert_int_equal(fetch(c, a, 0, "GET", "/echo?x=1", NULL, 0, "X-Test: t", &out), 200);
    assert_string_equal(out.p, "GET /echo x=1 t 0");
    assert_int_equal(curl_version_of(c), CURL_HTTP_VERSION_1_1);
    assert_int_equal(fetch(c, a, 0, "POST", "/echo", "abc", 3, NULL, &out), 200);
    long conns = -1;
    curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &conns);
    assert_int_equal(conns, 0); /* kept alive */
    streamer_t sm = {.a = a};
    pthread_t t;
    pthread_create(&t, NULL, stream_lines, &sm);
    assert_int_equal(fetch(c, a, 0, "GET", "/stream", NULL, 0, NULL, &out), 200);
    pthread_join(t, NULL);
    assert_string_equal(out.p, "one\ntwo\nthree\n");
    curl_easy_cleanup(c);

    c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    assert_int_equal(fetch(c, a, 0, "GET", "/ec%68o?y", NULL, 0, "X-Test: two", &out), 200);
    assert_string_equal(out.p, "GET /echo y two 0 h2");
    assert_int_equal(curl_version_of(c), CURL_HTTP_VERSION_2_0);
    sm = (streamer_t){.a = a};
    pthread_create(&t, NULL, stream_lines, &sm);
    assert_int_equal(fetch(c, a, 0, "GET", "/stream", NULL, 0, NULL, &out), 200);
    pthread_join(t, NULL);
    assert_string_equal(out.p, "one\ntwo\nthree\n");
    size_t n = 2 * BODY_MAX;
    char *body = malloc(n);
    memset(body, 'b', n);
    assert_int_equal(fetch(c, a, 0, "POST", "/echo", body, 300000, NULL, &out), 200);
    assert_string_equal(out.p, "POST /echo  - 300000 h2");
    int before = atomic_load(&a->requests);
    /* A refusal before a small body: the body is read and dropped, and curl
     * (7.88 drops a response that RST_STREAM follows) gets its answer. Big
     * uploads: test_h2_refusals_mid_upload. */
    assert_int_equal(fetch(c, a, 0, "GET", "/echo", NULL, 0, "Authorization: no", &out), 401);
    for (int i = 0; i < 20; i++)
        assert_int_equal(fetch(c, a, 0, "POST", "/echo", body, 20000, "Authorization: no", &out),
                         401);
    char *hdr = malloc(10000);
    memcpy(hdr, "X-Big: ", 7);
    memset(hdr + 7, 'z', 9000);
    hdr[9007] = '\0';
    assert_int_equal(fetch(c, a, 0, "GET", "/echo", NULL, 0, hdr, &out), 431);
    assert_int_equal(fetch(c, a, 0, "GET", "/a%00b", NULL, 0, NULL, &out), 400);
    assert_int_equal(atomic_load(&a->requests), before);
    assert_int_equal(fetch(c, a, 0, "HEAD", "/echo", NULL, 0, NULL, &out), 200);
    assert_int_equal(fetch(c, a, 0, "GET", "/echo", NULL, 0, NULL, &out), 200);
    assert_string_equal(out.p, "GET /echo  - 0 h2");
    curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &conns);
    assert_int_equal(conns, 0); /* every refusal kept the connection */
    httpd_stats_t st;
    httpd_stats(a->h, &st);
    assert_int_equal(st.h2_connections, 1);
    free(hdr);
    free(body);
    curl_easy_cleanup(c);
    buf_free(&out);
    stop(a);
}

/* 200 streaming replies at once over one HTTP/2 connection (curl's
 * multiplexing, as client-go's watches share one). */
static void test_h2_200_streams_one_connection(void **state)
{
    (void)state;
    app_t *a = start_with(NULL, 1);
    enum { N = 200 };
    CURLM *m = curl_multi_init();
    curl_multi_setopt(m, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, 1L);
    curl_multi_setopt(m, CURLMOPT_MAX_CONCURRENT_STREAMS, (long)N);
    CURL *e[N];
    buf_t out[N];
    char url[128];
    snprintf(url, sizeof url, "https://127.0.0.1:%d/stream", a->port);
    for (int i = 0; i < N; i++) {
        buf_init(&out[i], 1 << 16);
        e[i] = curl_easy_init();
        curl_easy_setopt(e[i], CURLOPT_URL, url);
        curl_easy_setopt(e[i], CURLOPT_CAINFO, a->ca);
        curl_easy_setopt(e[i], CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
        curl_easy_setopt(e[i], CURLOPT_PIPEWAIT, 1L);
        curl_easy_setopt(e[i], CURLOPT_WRITEFUNCTION, sink);
        curl_easy_setopt(e[i], CURLOPT_WRITEDATA, &out[i]);
        curl_easy_setopt(e[i], CURLOPT_TIMEOUT, 60L);
        curl_multi_add_handle(m, e[i]);
    }
    int running = 1, ended = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (running) {
        curl_multi_perform(m, &running);
        curl_multi_poll(m, NULL, 0, 50, NULL);
        if (!ended && atomic_load(&a->requests) == N) {
            /* every stream is open at once: write to each, then end it */
            httpd_stats_t st;
            httpd_stats(a->h, &st);
            assert_int_equal(st.connections, 1);
            assert_int_equal(st.h2_connections, 1);
            for (int i = 0; i < N; i++) {
                httpd_req_t *r = wait_held(a);
                char line[32];
                int n = snprintf(line, sizeof line, "event %d\n", i);
                assert_int_equal(httpd_stream_write(r, line, (size_t)n), 0);
                httpd_stream_end(r);
            }
            ended = 1;
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
        assert_true(t.tv_sec - t0.tv_sec < 60);
    }
    assert_true(ended);
    long total = 0;
    for (int i = 0; i < N; i++) {
        long code = 0, conns = 0;
        curl_easy_getinfo(e[i], CURLINFO_RESPONSE_CODE, &code);
        curl_easy_getinfo(e[i], CURLINFO_NUM_CONNECTS, &conns);
        assert_int_equal(code, 200);
        assert_int_equal(curl_version_of(e[i]), CURL_HTTP_VERSION_2_0);
        assert_non_null(out[i].p);
        assert_memory_equal(out[i].p, "event ", 6);
        total += conns;
        curl_multi_remove_handle(m, e[i]);
        curl_easy_cleanup(e[i]);
        buf_free(&out[i]);
    }
    assert_int_equal(total, 1); /* one connection for all 200 */
    curl_multi_cleanup(m);
    stop(a);
}

/* A client whose window never opens: the server's writes are refused once
 * the budget is queued; RST_STREAM is the client gone (on_gone, then
 * KP_ECLOSED); the connection serves on. */
static void test_h2_budget_reset_and_gone(void **state)
{
    (void)state;
    httpd_limits_t lim = {.stream_budget = 256u << 10};
    app_t *a = start_with(&lim, 1);
    h2cli_t *c = calloc(1, sizeof *c);
    assert_int_equal(cli_open(a, c, NULL, 4096), 0);
    h2st_t *st = cli_req(c, "GET", "/stream", NULL, NULL, 0);
    cli_send(c);
    httpd_req_t *r = wait_held(a);
    static char chunk[16384];
    memset(chunk, 'w', sizeof chunk);
    int rc = 0;
    size_t sent = 0;
    for (int i = 0; i < 4096 && !rc; i++) {
        rc = httpd_stream_write(r, chunk, sizeof chunk);
        if (!rc) sent += sizeof chunk;
        if (i % 8 == 7) usleep(2000);
    }
    assert_int_equal(rc, KP_ETOOLARGE);
    assert_true(sent >= (256u << 10) - sizeof chunk && sent <= (256u << 10));
    nghttp2_submit_rst_stream(c->s, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_CANCEL);
    cli_send(c);
    assert_true(wait_count(&a->gone, 1));
    assert_int_equal(httpd_stream_write(r, chunk, 10), KP_ECLOSED);
    httpd_stream_end(r);
    h2st_t *e = cli_req(c, "GET", "/echo", NULL, NULL, 0);
    cli_pump(c, 10000, st_closed, e);
    assert_int_equal(e->status, 200);
    assert_string_equal(e->body.p, "GET /echo  - 0 h2");
    cli_close_all(c);
    free(c);
    stop(a);
}

/* Refusals with a body still coming: the response, then RST_STREAM
 * (NO_ERROR) to stop the upload, as Go's server; the connection serves on. */
static void test_h2_refusals_mid_upload(void **state)
{
    (void)state;
    app_t *a = start_with(NULL, 1);
    h2cli_t *c = calloc(1, sizeof *c);
    assert_int_equal(cli_open(a, c, NULL, 65535), 0);
    h2st_t *st = cli_req(c, "POST", "/echo", "authorization", "no", 300000);
    cli_pump(c, 10000, st_closed, st);
    assert_int_equal(st->status, 401);
    assert_string_equal(st->body.p, "no\n");
    st = cli_req(c, "POST", "/echo", NULL, NULL, 2 * BODY_MAX);
    cli_pump(c, 10000, st_closed, st);
    assert_int_equal(st->status, 413);
    assert_int_equal(atomic_load(&a->requests), 0);
    st = cli_req(c, "POST", "/echo", NULL, NULL, 70000);
    cli_pump(c, 10000, st_closed, st);
    assert_int_equal(st->status, 200);
    assert_string_equal(st->body.p, "POST /echo  - 70000 h2");
    cli_close_all(c);
    free(c);
    stop(a);
}

/* SETTINGS_MAX_CONCURRENT_STREAMS holds; a flood of resets ends the
 * connection (nghttp2's rapid-reset limit); TLS below 1.2 is refused. */
static void test_h2_limits(void **state)
{
    (void)state;
    httpd_limits_t lim = {.max_streams = 4};
    app_t *a = start_with(&lim, 1);
    h2cli_t *c = calloc(1, sizeof *c);
    assert_int_equal(cli_open(a, c, NULL, 65535), 0);
    /* A client that does not wait for the server's SETTINGS (nghttp2's
     * client holds the fifth back itself, so these frames are written by
     * hand): the fifth stream is refused. */
    static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\4\0\0\0\0\0";
    buf_t raw;
    buf_init(&raw, 1 << 20);
    buf_append(&raw, preface, sizeof preface - 1);
    nghttp2_hd_deflater *hd;
    nghttp2_hd_deflate_new(&hd, 4096);
    for (uint32_t id = 1; id <= 9; id += 2) {
        nghttp2_nv nv[] = {{(uint8_t *)":method", (uint8_t *)"GET", 7, 3, 0},
                           {(uint8_t *)":scheme", (uint8_t *)"https", 7, 5, 0},
                           {(uint8_t *)":authority", (uint8_t *)"x", 10, 1, 0},
                           {(uint8_t *)":path", (uint8_t *)"/stream", 5, 7, 0}};
        uint8_t block[256];
        ssize_t n = nghttp2_hd_deflate_hd(hd, block, sizeof block, nv, 4);
        assert_true(n > 0);
        /* HEADERS with END_STREAM and END_HEADERS */
        uint8_t fh[9] = {0, 0, (uint8_t)n, 1, 5, 0, 0, 0, (uint8_t)id};
        buf_append(&raw, fh, 9);
        buf_append(&raw, block, (size_t)n);
    }
    nghttp2_hd_deflate_del(hd);
    assert_int_equal(gnutls_record_send(c->tls, raw.p, raw.len), (ssize_t)raw.len);
    /* Read frames until RST_STREAM on stream 9. */
    buf_reset(&raw);
    uint32_t rst9 = 0xffff;
    for (int tries = 0; tries < 100 && rst9 == 0xffff; tries++) {
        char b[16384];
        ssize_t n = gnutls_record_recv(c->tls, b, sizeof b);
        if (n <= 0) break;
        buf_append(&raw, b, (size_t)n);
        size_t off = 0;
        while (raw.len - off >= 9) {
            const uint8_t *f = (const uint8_t *)raw.p + off;
            size_t len = (size_t)f[0] << 16 | (size_t)f[1] << 8 | f[2];
            if (raw.len - off < 9 + len) break;
            uint32_t sid =
                (uint32_t)(f[5] & 0x7f) << 24 | (uint32_t)f[6] << 16 | (uint32_t)f[7] << 8 | f[8];
            if (f[3] == 3 && sid == 9 && len == 4)
                rst9 = (uint32_t)f[9] << 24 | (uint32_t)f[10] << 16 | (uint32_t)f[11] << 8 | f[12];
            off += 9 + len;
        }
        memmove(raw.p, raw.p + off, raw.len - off);
        raw.len -= off;
    }
    buf_free(&raw);
    assert_int_equal(rst9, NGHTTP2_REFUSED_STREAM);
    for (int i = 0; i < 4; i++) {
        httpd_req_t *r = wait_held(a);
        httpd_stream_end(r);
    }
    cli_close_all(c);

    /* Rapid reset: open and cancel streams until the server ends it. */
    assert_int_equal(cli_open(a, c, NULL, 65535), 0);
    int i;
    for (i = 0; i < 2000 && !c->goaway && !c->eof; i++) {
        h2st_t *s = cli_req(c, "GET", "/echo", NULL, NULL, 0);
        if (!s) break;
        cli_send(c); /* the HEADERS (a reset before them would cancel them unsent) */
        nghttp2_submit_rst_stream(c->s, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_CANCEL);
        cli_send(c);
        if (i % 50 == 49) cli_pump(c, 1, NULL, NULL);
    }
    cli_pump(c, 5000, got_goaway, NULL);
    print_message("GOAWAY (%u) at stream %d, %d resets sent\n", c->goaway_err, c->goaway_last, i);
    assert_true(c->goaway);
    /* nghttp2's limiter says INTERNAL_ERROR; past the burst of 1,000 */
    assert_int_equal(c->goaway_err, NGHTTP2_INTERNAL_ERROR);
    assert_true(c->goaway_last >= 2 * 1000 - 1 && c->goaway_last < 2 * 2000 - 1);
    cli_close_all(c);

    /* TLS 1.1 is not offered; 1.2 is. */
    assert_true(cli_open(a, c, "NORMAL:-VERS-ALL:+VERS-TLS1.1", 65535) < 0);
    gnutls_deinit(c->tls);
    gnutls_certificate_free_credentials(c->cred);
    close(c->fd);
    assert_int_equal(cli_open(a, c, "NORMAL:-VERS-ALL:+VERS-TLS1.2", 65535), 0);
    assert_int_equal(gnutls_protocol_get_version(c->tls), GNUTLS_TLS1_2);
    cli_close_all(c);
    free(c);
    stop(a);
}

static void *stop_thread(void *h)
{
    httpd_stop(h);
    return NULL;
}

/* httpd_stop() sends GOAWAY to an HTTP/2 client; a stream still open ends
 * when the grace period does (on_gone). */
static void test_h2_stop_goaway(void **state)
{
    (void)state;
    httpd_limits_t lim = {.grace_ms = 300};
    app_t *a = start_with(&lim, 1);
    a->end_on_gone = 1;
    h2cli_t *c = calloc(1, sizeof *c);
    assert_int_equal(cli_open(a, c, NULL, 65535), 0);
    cli_req(c, "GET", "/stream", NULL, NULL, 0);
    cli_send(c);
    httpd_req_t *r = wait_held(a);
    assert_int_equal(httpd_stream_write(r, "x\n", 2), 0);
    cli_pump(c, 200, NULL, NULL);
    httpd_t *h = a->h;
    pthread_t t;
    pthread_create(&t, NULL, stop_thread, h);
    cli_pump(c, 5000, got_goaway, NULL);
    assert_true(c->goaway);
    pthread_join(t, NULL);
    assert_int_equal(atomic_load(&a->gone), 1);
    cli_close_all(c);
    free(c);
    a->h = NULL;
    stop(a);
}

/* The Unix socket speaks HTTP/2 to a client that opens with its preface
 * (prior knowledge), and HTTP/1.1 to the rest. */
static void test_h2_prior_knowledge_unix(void **state)
{
    (void)state;
    app_t *a = start(NULL);
    CURL *c = curl_easy_init();
    buf_t out;
    buf_init(&out, 1 << 20);
    curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
    assert_int_equal(fetch(c, a, 1, "POST", "/echo", "hello", 5, NULL, &out), 200);
    assert_string_equal(out.p, "POST /echo  - 5 local h2");
    assert_int_equal(curl_version_of(c), CURL_HTTP_VERSION_2_0);
    curl_easy_cleanup(c);
    c = curl_easy_init();
    assert_int_equal(fetch(c, a, 1, "PUT", "/echo", "x", 1, NULL, &out), 200);
    assert_string_equal(out.p, "PUT /echo  - 1 local");
    curl_easy_cleanup(c);
    buf_free(&out);
    stop(a);
}

/* A stream ended abruptly (its client stopped reading): HTTP/1.1 closes the
 * connection without the last chunk, HTTP/2 resets the stream and the
 * connection serves on. */
static void test_stream_abort(void **state)
{
    (void)state;
    app_t *a = start_with(NULL, 1);
    h2cli_t *c = calloc(1, sizeof *c);
    assert_int_equal(cli_open(a, c, NULL, 65535), 0);
    h2st_t *st = cli_req(c, "GET", "/stream", NULL, NULL, 0);
    cli_send(c);
    httpd_req_t *r = wait_held(a);
    assert_int_equal(httpd_stream_write(r, "x\n", 2), 0);
    httpd_stream_abort(r);
    cli_pump(c, 10000, st_closed, st);
    assert_true(st->closed);
    assert_int_equal(st->err, NGHTTP2_CANCEL);
    h2st_t *e = cli_req(c, "GET", "/echo", NULL, NULL, 0);
    cli_pump(c, 10000, st_closed, e);
    assert_int_equal(e->status, 200);
    cli_close_all(c);
    free(c);
    stop(a);

    a = start(NULL);
    int fd = raw_connect(a);
    raw_send(fd, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n");
    r = wait_held(a);
    assert_int_equal(httpd_stream_write(r, "x\n", 2), 0);
    httpd_stream_abort(r);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char b[4096];
    size_t got = 0;
    ssize_t n;
    while ((n = recv(fd, b + got, sizeof b - 1 - got, 0)) > 0)
        got += (size_t)n;
    b[got] = '\0';
    assert_int_equal(n, 0);                  /* closed */
    assert_null(strstr(b, "\r\n0\r\n\r\n")); /* without the last chunk */
    close(fd);
    stop(a);
}

/* The query decoded as Go's ParseQuery: '+' a space, %XX a byte, a bare
 * name without value, repeated names in order. */
static void test_args(void **state)
{
    (void)state;
    app_t *a = start(NULL);
    CURL *c = curl_easy_init();
    buf_t out;
    buf_init(&out, 1 << 20);
    assert_int_equal(
        fetch(c, a, 0, "GET", "/args?a=1+2&b=%2Fx%3D&c&b=2&=e&d=", NULL, 0, NULL, &out), 200);
    assert_string_equal(out.p, "[a]=[1 2];[b]=[/x=];[c]=(none);[b]=[2];[]=[e];[d]=[];b:/x=");
    buf_free(&out);
    curl_easy_cleanup(c);
    stop(a);
}

/* A pulled stream: its pieces in order, then its end and done(); over
 * HTTP/2 too. A client that reads nothing: the stream stalls past its
 * stall time and ends abruptly (the connection closes), done() called. */
static void test_pull(void **state)
{
    (void)state;
    httpd_limits_t lim = {.stream_budget = 64u << 10};
    app_t *a = start_with(&lim, 1);
    CURL *c = curl_easy_init();
    buf_t out;
    buf_init(&out, 1 << 20);
    curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    assert_int_equal(fetch(c, a, 0, "GET", "/pull?n=5", NULL, 0, NULL, &out), 200);
    assert_string_equal(out.p, "p1\np2\np3\np4\np5\n");
    curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    assert_int_equal(fetch(c, a, 0, "GET", "/pull?n=2", NULL, 0, NULL, &out), 200);
    assert_string_equal(out.p, "p1\np2\n");
    assert_true(wait_count(&a->pulls_done, 2));
    curl_easy_cleanup(c);
    buf_free(&out);
    stop(a);

    a = start_with(&lim, 0);
    /* (The socket's buffers fill first, some MB: a small receive buffer
     * here would make the drain below crawl through a tiny TCP window.) */
    int fd = raw_connect(a);
    raw_send(fd, "GET /pull?n=0 HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_true(wait_count(&a->pulls_done, 1)); /* stalled: 300 ms without progress */
    assert_true(is_closed_after_drain(fd));
    close(fd);
    stop(a);
}

static int all_closed(h2cli_t *c, void *arg)
{
    int n = *(int *)arg;
    for (int i = 0; i < n; i++)
        if (!c->st[i].closed) return 0;
    return 1;
}

static int st_has_body(h2cli_t *c, void *arg)
{
    (void)c;
    return ((h2st_t *)arg)->body.len > 0;
}

static int all_have(h2cli_t *c, void *arg)
{
    const char *want = arg;
    for (int i = 0; i < c->nst; i++)
        if (!c->st[i].body.p || !strstr(c->st[i].body.p, want)) return 0;
    return 1;
}

/* Parked pulled streams hold no thread: 200 of them on one HTTP/2
 * connection, on an engine of 2 workers, all stay open, each gets its piece
 * when kicked, and all end cleanly; a parked stream's timer wakes it. */
static void test_pull_parked(void **state)
{
    (void)state;
    enum { N = 200 };
    app_t *a = start_with(NULL, 1);
    h2cli_t *c = calloc(1, sizeof *c);
    assert_int_equal(cli_open(a, c, NULL, 65535), 0);
    for (int i = 0; i < N; i++)
        assert_non_null(cli_req(c, "GET", "/park", NULL, NULL, 0));
    httpd_req_t *rs[N];
    cli_send(c);
    for (int i = 0; i < N; i++) {
        cli_pump(c, 20, NULL, NULL);
        rs[i] = wait_held(a);
    }
    cli_pump(c, 300, NULL, NULL);
    httpd_stats_t st;
    httpd_stats(a->h, &st);
    assert_int_equal(st.streams, N);
    assert_true(st.workers <= 2);
    for (int i = 0; i < N; i++) {
        puller_t *p = httpd_data(rs[i]);
        atomic_store(&p->avail, 1);
        httpd_pull_kick(rs[i]);
    }
    cli_pump(c, 10000, all_have, "k1\n");
    assert_true(all_have(c, "k1\n"));
    for (int i = 0; i < N; i++) {
        puller_t *p = httpd_data(rs[i]);
        atomic_store(&p->avail, 2);
        httpd_pull_kick(rs[i]);
        httpd_pull_kick(rs[i]); /* twice: one piece all the same */
    }
    cli_pump(c, 10000, all_have, "k2\n");
    for (int i = 0; i < N; i++) {
        assert_string_equal(c->st[i].body.p, "k1\nk2\n");
        assert_false(c->st[i].closed);
    }
    for (int i = 0; i < N; i++) {
        puller_t *p = httpd_data(rs[i]);
        atomic_store(&p->avail, -1);
        httpd_pull_kick(rs[i]);
    }
    int n = N;
    cli_pump(c, 10000, all_closed, &n);
    for (int i = 0; i < N; i++) {
        assert_true(c->st[i].closed);
        assert_int_equal(c->st[i].err, 0);
        assert_int_equal(c->st[i].status, 200);
    }
    assert_true(wait_count(&a->pulls_done, N));

    /* the timer: nothing kicked, "t" after 100 ms */
    h2st_t *t = cli_req(c, "GET", "/park?tick=100", NULL, NULL, 0);
    cli_pump(c, 5000, st_has_body, t);
    assert_non_null(t->body.p);
    assert_memory_equal(t->body.p, "t\n", 2);
    httpd_req_t *tr = wait_held(a);
    puller_t *tp = httpd_data(tr);
    atomic_store(&tp->avail, -1);
    httpd_pull_kick(tr);
    cli_pump(c, 5000, st_closed, t);
    assert_true(t->closed);
    cli_close_all(c);
    free(c);
    stop(a);
}

/* ---- tests: client certificates ---- */

typedef struct tcert {
    gnutls_x509_crt_t crt;
    gnutls_x509_privkey_t key;
    char *cert_pem, *key_pem;
} tcert_t;

/* A certificate named cn (and orgs, NULL-terminated), signed by issuer or
 * self-signed (NULL); a CA, or one for `purpose` (NULL: no extended key
 * usage); expired: its validity ended an hour ago. */
static void tcert_make(tcert_t *t, const char *cn, const char *const *orgs, int ca,
                       const char *purpose, int expired, const tcert_t *issuer)
{
    static unsigned char serial = 1;
    unsigned char sn[8] = {1, 2, 3, 4, 5, 6, 7, serial++};
    time_t now = time(NULL);
    assert_int_equal(gnutls_x509_privkey_init(&t->key), 0);
    assert_int_equal(gnutls_x509_privkey_generate(t->key, GNUTLS_PK_ECDSA,
                                                  GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1),
                                                  0),
                     0);
    assert_int_equal(gnutls_x509_crt_init(&t->crt), 0);
    gnutls_x509_crt_t c = t->crt;
    gnutls_x509_crt_set_version(c, 3);
    gnutls_x509_crt_set_serial(c, sn, sizeof sn);
    gnutls_x509_crt_set_activation_time(c, now - (expired ? 7200 : 3600));
    gnutls_x509_crt_set_expiration_time(c, now + (expired ? -3600 : 86400));
    assert_int_equal(
        gnutls_x509_crt_set_dn_by_oid(c, GNUTLS_OID_X520_COMMON_NAME, 0, cn, (unsigned)strlen(cn)),
        0);
    for (size_t i = 0; orgs && orgs[i]; i++)
        assert_int_equal(gnutls_x509_crt_set_dn_by_oid(c, GNUTLS_OID_X520_ORGANIZATION_NAME, 0,
                                                       orgs[i], (unsigned)strlen(orgs[i])),
                         0);
    gnutls_x509_crt_set_basic_constraints(c, ca, -1);
    gnutls_x509_crt_set_key_usage(c, ca ? GNUTLS_KEY_KEY_CERT_SIGN | GNUTLS_KEY_DIGITAL_SIGNATURE
                                        : GNUTLS_KEY_DIGITAL_SIGNATURE);
    if (purpose) assert_int_equal(gnutls_x509_crt_set_key_purpose_oid(c, purpose, 0), 0);
    gnutls_x509_crt_set_key(c, t->key);
    assert_int_equal(gnutls_x509_crt_sign2(c, issuer ? issuer->crt : c,
                                           issuer ? issuer->key : t->key, GNUTLS_DIG_SHA256, 0),
                     0);
    gnutls_datum_t d;
    assert_int_equal(gnutls_x509_crt_export2(c, GNUTLS_X509_FMT_PEM, &d), 0);
    t->cert_pem = strndup((char *)d.data, d.size);
    gnutls_free(d.data);
    assert_int_equal(gnutls_x509_privkey_export2(t->key, GNUTLS_X509_FMT_PEM, &d), 0);
    t->key_pem = strndup((char *)d.data, d.size);
    gnutls_free(d.data);
}

static void tcert_free(tcert_t *t)
{
    gnutls_x509_crt_deinit(t->crt);
    gnutls_x509_privkey_deinit(t->key);
    free(t->cert_pem);
    free(t->key_pem);
}

/* GET /whoami with client certificate t (NULL: none), over HTTP/2 if h2:
 * what the server said (see on_request), in out. */
static long whoami(app_t *a, const tcert_t *t, int h2, buf_t *out)
{
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_HTTP_VERSION,
                     (long)(h2 ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1));
    if (t) {
        struct curl_blob cb = {t->cert_pem, strlen(t->cert_pem), CURL_BLOB_COPY};
        struct curl_blob kb = {t->key_pem, strlen(t->key_pem), CURL_BLOB_COPY};
        assert_int_equal(curl_easy_setopt(c, CURLOPT_SSLCERT_BLOB, &cb), CURLE_OK);
        assert_int_equal(curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM"), CURLE_OK);
        assert_int_equal(curl_easy_setopt(c, CURLOPT_SSLKEY_BLOB, &kb), CURLE_OK);
        assert_int_equal(curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM"), CURLE_OK);
    }
    long code = fetch(c, a, 0, "GET", "/whoami", NULL, 0, NULL, out);
    if (h2 && code == 200) assert_int_equal(curl_version_of(c), CURL_HTTP_VERSION_2_0);
    curl_easy_cleanup(c);
    return code;
}

static void test_client_certs(void **state)
{
    (void)state;
    static const char *const orgs[] = {"system:masters", "dev team", NULL};
    tcert_t ca, other, twin, good, bare, foreign, twinned, server_only, expired;
    tcert_make(&ca, "test-ca", NULL, 1, NULL, 0, NULL);
    tcert_make(&other, "other-ca", NULL, 1, NULL, 0, NULL);
    tcert_make(&twin, "test-ca", NULL, 1, NULL, 0, NULL); /* the same name, another key */
    tcert_make(&good, "jane", orgs, 0, GNUTLS_KP_TLS_WWW_CLIENT, 0, &ca);
    tcert_make(&bare, "joe", NULL, 0, NULL, 0, &ca); /* no extended key usage: any */
    tcert_make(&foreign, "jane", orgs, 0, GNUTLS_KP_TLS_WWW_CLIENT, 0, &other);
    tcert_make(&twinned, "jane", orgs, 0, GNUTLS_KP_TLS_WWW_CLIENT, 0, &twin);
    tcert_make(&server_only, "jane", orgs, 0, GNUTLS_KP_TLS_WWW_SERVER, 0, &ca);
    tcert_make(&expired, "jane", orgs, 0, GNUTLS_KP_TLS_WWW_CLIENT, 1, &ca);
    tcert_t self;
    tcert_make(&self, "jane", orgs, 0, GNUTLS_KP_TLS_WWW_CLIENT, 0, NULL);

    /* Bad configurations. */
    make_cert();
    httpd_config_t bad = {.tcp_fd = -1,
                          .unix_fd = -1,
                          .workers = 1,
                          .on_headers = on_headers,
                          .on_request = on_request};
    int port;
    bad.tcp_fd = tu_loopback_socket(&port);
    bad.client_ca_pem = ca.cert_pem; /* without a certificate of its own */
    httpd_t *h = NULL;
    assert_int_equal(httpd_start(&bad, &h), KP_EINVAL);
    bad.tcp_fd = tu_loopback_socket(&port);
    bad.cert_pem = g_cert;
    bad.key_pem = g_key;
    bad.client_ca_pem = "not a PEM";
    assert_int_equal(httpd_start(&bad, &h), KP_EINVAL);
    assert_null(h);

    app_t *a = start_ca(NULL, 1, ca.cert_pem);
    buf_t out;
    buf_init(&out, 1 << 20);
    for (int h2 = 0; h2 < 2; h2++) {
        assert_int_equal(whoami(a, &good, h2, &out), 200);
        assert_string_equal(out.p, "1 jane system:masters,dev team|1 jane system:masters,dev team");
        assert_int_equal(whoami(a, &bare, h2, &out), 200);
        assert_string_equal(out.p, "1 joe|1 joe");
        assert_int_equal(whoami(a, NULL, h2, &out), 200);
        assert_string_equal(out.p, "0|0");
        assert_int_equal(whoami(a, &foreign, h2, &out), 200);
        assert_string_equal(out.p, "-1 (signed by an unknown authority)|"
                                   "-1 (signed by an unknown authority)");
        assert_int_equal(whoami(a, &twinned, h2, &out), 200);
        assert_string_equal(out.p, "-1 (bad signature)|-1 (bad signature)");
        assert_int_equal(whoami(a, &self, h2, &out), 200);
        assert_string_equal(out.p, "-1 (signed by an unknown authority)|"
                                   "-1 (signed by an unknown authority)");
        assert_int_equal(whoami(a, &server_only, h2, &out), 200);
        assert_string_equal(out.p, "-1 (not for client authentication)|"
                                   "-1 (not for client authentication)");
        assert_int_equal(whoami(a, &expired, h2, &out), 200);
        assert_string_equal(out.p, "-1 (expired)|-1 (expired)");
    }
    /* The Unix socket has no certificates. */
    CURL *c = curl_easy_init();
    assert_int_equal(fetch(c, a, 1, "GET", "/whoami", NULL, 0, NULL, &out), 200);
    assert_string_equal(out.p, "0|0");
    curl_easy_cleanup(c);

    /* A request outlives its connection: its names stay readable. */
    tlscli_t t;
    t.fd = raw_connect(a);
    assert_int_equal(gnutls_certificate_allocate_credentials(&t.cred), 0);
    gnutls_datum_t cd = {(unsigned char *)good.cert_pem, (unsigned)strlen(good.cert_pem)};
    gnutls_datum_t kd = {(unsigned char *)good.key_pem, (unsigned)strlen(good.key_pem)};
    assert_int_equal(gnutls_certificate_set_x509_key_mem(t.cred, &cd, &kd, GNUTLS_X509_FMT_PEM), 0);
    assert_int_equal(gnutls_init(&t.s, GNUTLS_CLIENT), 0);
    assert_int_equal(gnutls_set_default_priority(t.s), 0);
    assert_int_equal(gnutls_credentials_set(t.s, GNUTLS_CRD_CERTIFICATE, t.cred), 0);
    gnutls_transport_set_int(t.s, t.fd);
    gnutls_handshake_set_timeout(t.s, 10000);
    assert_int_equal(gnutls_handshake(t.s), 0);
    tls_send(&t, "GET /whoami-hold HTTP/1.1\r\nHost: x\r\n\r\n");
    httpd_req_t *r = wait_held(a);
    int gone = atomic_load(&a->gone);
    tls_close(&t);
    assert_true(wait_count(&a->gone, gone + 1));
    usleep(50000); /* the loop closes and frees the connection */
    char *seen = httpd_data(r), *now = peer_str(r);
    assert_string_equal(seen, "1 jane system:masters,dev team");
    assert_string_equal(now, seen);
    free(seen);
    free(now);
    httpd_stream_end(r);
    stop(a);

    /* Without client_ca_pem nothing is asked for: a client's certificate
     * is not even sent. */
    a = start_with(NULL, 1);
    assert_int_equal(whoami(a, &good, 0, &out), 200);
    assert_string_equal(out.p, "0|0");
    stop(a);

    buf_free(&out);
    tcert_t *all[] = {&ca,      &other,       &twin,    &good, &bare,
                      &foreign, &server_only, &expired, &self, &twinned};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        tcert_free(all[i]);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_requests_and_keep_alive),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_reply_header_and_drop),
        cmocka_unit_test(test_stream),
        cmocka_unit_test(test_budget_and_gone),
        cmocka_unit_test(test_stream_abort),
        cmocka_unit_test(test_args),
        cmocka_unit_test(test_pull),
        cmocka_unit_test(test_pull_parked),
        cmocka_unit_test(test_header_timeout),
        cmocka_unit_test(test_max_connections),
        cmocka_unit_test(test_max_unproven),
        cmocka_unit_test(test_half_close),
        cmocka_unit_test(test_upgrade),
        cmocka_unit_test(test_upgrade_tls),
        cmocka_unit_test(test_websocket_client),
        cmocka_unit_test(test_big_replies),
        cmocka_unit_test(test_unix_socket),
        cmocka_unit_test(test_stop_with_open_stream),
        cmocka_unit_test(test_tls_h1_and_h2),
        cmocka_unit_test(test_h2_200_streams_one_connection),
        cmocka_unit_test(test_h2_budget_reset_and_gone),
        cmocka_unit_test(test_h2_refusals_mid_upload),
        cmocka_unit_test(test_h2_limits),
        cmocka_unit_test(test_h2_stop_goaway),
        cmocka_unit_test(test_h2_prior_knowledge_unix),
        cmocka_unit_test(test_client_certs),
    };
    int rc = cmocka_run_group_tests_name("httpd", tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
