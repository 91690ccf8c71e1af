/*
 * fuzz_httpd.c -- raw bytes on a connection to the HTTP server engine
 * (src/httpd/) in this process: request lines, headers, Content-Length and
 * chunked bodies, pipelined requests, and HTTP/2 frames after the
 * connection preface (the Unix socket speaks HTTP/2 with prior knowledge:
 * HEADERS, CONTINUATION, DATA, RST_STREAM, PING, WINDOW_UPDATE, GOAWAY),
 * anything a client can send. Each
 * input is written as it is to a new connection on the engine's Unix
 * socket, the writing side is shut, and every byte of the answer is read
 * until the engine closes.
 *
 * The handler answers like an API server would, in small: on_headers()
 * refuses `Authorization: no` (401, body unread) and allows 64 KiB of body;
 * /stream answers with a three-chunk stream from the worker; /up switches
 * a request that asks to (UPGRADES in httpd.h) to an echo of every byte,
 * which its worker ends once the client has gone; anything else echoes the
 * method, path, query and body length.
 *
 * The engine runs on its own threads; ASan/UBSan report there as here. No
 * close within FZ_CLOSE_TIMEOUT_S is a crash too (a connection the engine
 * forgot).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "fuzz.h"
#include "httpd/httpd.h"
#include "lib/err.h"

#define FZ_CLOSE_TIMEOUT_S 10

static struct {
    char dir[80];
    char sock[100]; /* fits sockaddr_un's sun_path (108) */
    httpd_t *h;
} fz;

static httpd_next_t fz_headers(void *arg, httpd_req_t *r, size_t *body_max)
{
    (void)arg;
    const char *auth = httpd_header(r, "Authorization");
    if (auth && !strcmp(auth, "no")) {
        httpd_reply(r, 401, NULL, strdup("no\n"), 3);
        return HTTPD_REPLIED;
    }
    *body_max = 64u << 10;
    return HTTPD_READ_BODY;
}

static size_t fz_data(void *arg, httpd_req_t *r, const char *p, size_t n)
{
    (void)arg;
    if (n > 1 && p[0] == 'h') return n / 2; /* the rest waits for a resume */
    int rc = httpd_stream_write(r, p, n);
    if (rc == KP_ETOOLARGE) return 0;
    return n;
}

static void fz_request(void *arg, httpd_req_t *r)
{
    (void)arg;
    if (!strcmp(httpd_path(r), "/up") && httpd_upgrade_asked(r)) {
        static const char *const up[] = {"Upgrade", "echo", NULL};
        if (!httpd_upgrade(r, up)) {
            /* Only this worker ends it (no race with on_gone): it waits
             * for the client to go, resuming held bytes meanwhile. */
            for (int i = 0; i < FZ_CLOSE_TIMEOUT_S * 1000 && !httpd_gone(r); i++) {
                httpd_upgrade_resume(r);
                usleep(1000);
            }
            httpd_stream_end(r);
            return;
        }
    }
    if (!strcmp(httpd_path(r), "/stream")) {
        if (httpd_stream_start(r, 200, NULL)) return;
        httpd_stream_write(r, "one\n", 4);
        httpd_stream_write(r, "two\n", 4);
        httpd_stream_write(r, "three\n", 6);
        httpd_stream_end(r);
        return;
    }
    size_t len;
    httpd_body(r, &len);
    char *out = NULL;
    int n = asprintf(&out, "%s %s %s %zu\n", httpd_method(r), httpd_path(r), httpd_query(r), len);
    if (n < 0) abort();
    httpd_reply(r, 200, NULL, out, (size_t)n);
}

static void fz_stop(void)
{
    httpd_stop(fz.h);
    unlink(fz.sock);
    rmdir(fz.dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    int n = snprintf(fz.dir, sizeof fz.dir, "%s/kp-fuzz-XXXXXX", tmp);
    if (n < 0 || (size_t)n >= sizeof fz.dir || !mkdtemp(fz.dir)) {
        fprintf(stderr, "fuzz_httpd: cannot make a directory in %s (TMPDIR)\n", tmp);
        abort();
    }
    n = snprintf(fz.sock, sizeof fz.sock, "%s/s", fz.dir);
    if (n < 0 || (size_t)n >= sizeof fz.sock) abort();
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un su = {.sun_family = AF_UNIX};
    snprintf(su.sun_path, sizeof su.sun_path, "%s", fz.sock);
    if (fd < 0 || bind(fd, (struct sockaddr *)&su, sizeof su)) abort();
    httpd_config_t cfg = {.tcp_fd = -1,
                          .unix_fd = fd,
                          .workers = 2,
                          .limits = {.header_bytes = 16384, .header_timeout_ms = 2000},
                          .on_headers = fz_headers,
                          .on_request = fz_request,
                          .on_data = fz_data};
    if (httpd_start(&cfg, &fz.h)) abort();
    atexit(fz_stop);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_INPUT_MAX) return 0;
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un su = {.sun_family = AF_UNIX};
    snprintf(su.sun_path, sizeof su.sun_path, "%s", fz.sock);
    if (fd < 0 || connect(fd, (struct sockaddr *)&su, sizeof su)) abort();
    struct timeval tv = {FZ_CLOSE_TIMEOUT_S, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    /* The engine may close early (a refusal): a failed send is fine. */
    for (size_t off = 0; off < size;) {
        ssize_t k = send(fd, data + off, size - off, MSG_NOSIGNAL);
        if (k <= 0) break;
        off += (size_t)k;
    }
    shutdown(fd, SHUT_WR);
    char buf[4096];
    for (;;) {
        ssize_t k = recv(fd, buf, sizeof buf, 0);
        if (k > 0) continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            fprintf(stderr, "fuzz_httpd: no close within %d s\n", FZ_CLOSE_TIMEOUT_S);
            abort();
        }
        break; /* closed, or reset */
    }
    close(fd);
    return 0;
}
