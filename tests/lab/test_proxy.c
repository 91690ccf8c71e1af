/*
 * test_proxy.c -- the labs' loopback TCP proxy (src/lab/proxy.h) against
 * echo servers on loopback, with raw sockets.
 *
 * What it proves:
 *  - Round robin by connection over two targets; the per-target counts
 *    say so, and so do the servers that answered.
 *  - delay_ms each way: a round trip takes at least 2 x delay_ms more;
 *    50 writes sent 2 ms apart arrive whole and in order; a new delay
 *    applies from then on.
 *  - Blocking a target cuts its open connections (the client reads an end
 *    or a reset) and sends new ones to the other target; with every target
 *    blocked a new connection is closed at once; healing restores it.
 *  - A target that is not listening: the client's connection is closed.
 *  - Bounds: 256 connections, the 257th closed at once, a new one let in
 *    when one closes; a receiver that does not read holds at most 4 MiB
 *    waiting in the proxy and stalls the sender; once it reads, all 48 MiB
 *    arrive in order, and a half-close passes through.
 *  - Bad arguments are refused; stop with connections open closes them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lab/proxy.h"
#include "lab/proxy_int.h"
#include "lib/err.h"
#include "testutil.h"

#define ECHO_MAX 600

/* ---- an echo server on a thread: echoes every byte, and answers '?' with
 * its tag, so that a client knows which server it reached ---- */

typedef struct echo {
    int lfd, port;
    char tag;
    int wake[2];
    pthread_t th;
    atomic_int accepted;
} echo_t;

static void *echo_run(void *arg)
{
    echo_t *e = arg;
    struct pollfd fds[ECHO_MAX + 2];
    int n = 2;
    fds[0] = (struct pollfd){.fd = e->wake[0], .events = POLLIN};
    fds[1] = (struct pollfd){.fd = e->lfd, .events = POLLIN};
    for (;;) {
        if (poll(fds, (nfds_t)n, -1) < 0) continue;
        if (fds[0].revents) break;
        if (fds[1].revents & POLLIN) {
            int fd = accept(e->lfd, NULL, NULL);
            if (fd >= 0 && n < ECHO_MAX + 2) {
                fds[n++] = (struct pollfd){.fd = fd, .events = POLLIN};
                atomic_fetch_add(&e->accepted, 1);
            } else if (fd >= 0) {
                close(fd);
            }
        }
        for (int i = 2; i < n; i++) {
            if (!fds[i].revents) continue;
            char b[4096];
            ssize_t r = read(fds[i].fd, b, sizeof(b));
            if (r <= 0) {
                close(fds[i].fd);
                fds[i--] = fds[--n];
                continue;
            }
            for (ssize_t j = 0; j < r; j++)
                if (b[j] == '?') b[j] = e->tag;
            ssize_t off = 0;
            while (off < r) {
                ssize_t w = write(fds[i].fd, b + off, (size_t)(r - off));
                if (w <= 0) break;
                off += w;
            }
        }
    }
    for (int i = 2; i < n; i++)
        close(fds[i].fd);
    return NULL;
}

static void echo_start(echo_t *e, char tag)
{
    memset(e, 0, sizeof(*e));
    e->tag = tag;
    e->lfd = tu_loopback_socket(&e->port);
    assert_int_equal(listen(e->lfd, 1024), 0);
    assert_int_equal(pipe(e->wake), 0);
    assert_int_equal(pthread_create(&e->th, NULL, echo_run, e), 0);
}

static void echo_stop(echo_t *e)
{
    assert_int_equal(write(e->wake[1], "x", 1), 1);
    pthread_join(e->th, NULL);
    close(e->lfd);
    close(e->wake[0]);
    close(e->wake[1]);
}

/* ---- client helpers ---- */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

/* Read exactly n bytes within ms; returns how many came. */
static size_t read_n(int fd, char *b, size_t n, int ms)
{
    size_t got = 0;
    double end = now_ms() + ms;
    while (got < n) {
        int left = (int)(end - now_ms());
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        if (left <= 0 || poll(&pf, 1, left) <= 0) break;
        ssize_t r = read(fd, b + got, n - got);
        if (r <= 0) break;
        got += (size_t)r;
    }
    return got;
}

/* Send '?' and return the tag of the server that answered, or 0. */
static char tag_of(int fd)
{
    if (write(fd, "?", 1) != 1) return 0;
    char c = 0;
    return read_n(fd, &c, 1, 3000) == 1 ? c : 0;
}

/* 1 when the connection ends (an end of stream or an error) within ms. */
static int is_cut(int fd, int ms)
{
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    if (poll(&pf, 1, ms) <= 0) return 0;
    char c;
    return read(fd, &c, 1) <= 0;
}

/* ---- the cases ---- */

static void test_round_robin(void **state)
{
    (void)state;
    echo_t a, b;
    echo_start(&a, 'A');
    echo_start(&b, 'B');
    int targets[2] = {a.port, b.port};
    lab_proxy_t *p;
    assert_int_equal(lab_proxy_start(targets, 2, 0, &p), 0);
    assert_true(lab_proxy_port(p) > 0);
    const char want[] = "ABABAB";
    int fds[6];
    for (int i = 0; i < 6; i++) {
        fds[i] = dial(lab_proxy_port(p));
        assert_int_equal(tag_of(fds[i]), want[i]);
    }
    assert_int_equal(lab_proxy_connections(p, 0), 3);
    assert_int_equal(lab_proxy_connections(p, 1), 3);
    assert_int_equal(lab_proxy_connections(p, 2), 0);
    assert_int_equal(atomic_load(&a.accepted), 3);
    assert_int_equal(atomic_load(&b.accepted), 3);
    /* Bytes both ways, through each connection. */
    for (int i = 0; i < 6; i++) {
        char in[5];
        assert_int_equal(write(fds[i], "hello", 5), 5);
        assert_int_equal(read_n(fds[i], in, 5, 3000), 5);
        assert_memory_equal(in, "hello", 5);
        close(fds[i]);
    }
    lab_proxy_stop(p);
    echo_stop(&a);
    echo_stop(&b);
}

static void test_latency(void **state)
{
    (void)state;
    echo_t a;
    echo_start(&a, 'A');
    lab_proxy_t *p;
    assert_int_equal(lab_proxy_start(&a.port, 1, 100, &p), 0);
    int fd = dial(lab_proxy_port(p));
    double t0 = now_ms();
    assert_int_equal(tag_of(fd), 'A');
    double rt = now_ms() - t0;
    assert_true(rt >= 200.0);
    assert_true(rt < 2000.0);
    /* 50 writes 2 ms apart: all arrive, in order, each 200 ms late. */
    char sent[50], got[50];
    t0 = now_ms();
    for (int i = 0; i < 50; i++) {
        sent[i] = (char)('a' + i % 26); /* never '?' */
        assert_int_equal(write(fd, &sent[i], 1), 1);
        usleep(2000);
    }
    assert_int_equal(read_n(fd, got, 50, 5000), 50);
    assert_memory_equal(sent, got, 50);
    assert_true(now_ms() - t0 >= 200.0);
    /* No delay from now on: a round trip well under 200 ms. */
    lab_proxy_set_delay(p, 0);
    t0 = now_ms();
    assert_int_equal(tag_of(fd), 'A');
    assert_true(now_ms() - t0 < 150.0);
    close(fd);
    lab_proxy_stop(p);
    echo_stop(&a);
}

static void test_block_heal(void **state)
{
    (void)state;
    echo_t a, b;
    echo_start(&a, 'A');
    echo_start(&b, 'B');
    int targets[2] = {a.port, b.port};
    lab_proxy_t *p;
    assert_int_equal(lab_proxy_start(targets, 2, 0, &p), 0);
    int port = lab_proxy_port(p);
    int c1 = dial(port), c2 = dial(port);
    assert_int_equal(tag_of(c1), 'A');
    assert_int_equal(tag_of(c2), 'B');

    lab_proxy_block(p, 0, 1);
    assert_true(is_cut(c1, 2000));     /* A's open connection is cut */
    assert_int_equal(tag_of(c2), 'B'); /* B's is not */
    for (int i = 0; i < 3; i++) {      /* new ones all go to B */
        int c = dial(port);
        assert_int_equal(tag_of(c), 'B');
        close(c);
    }
    assert_int_equal(lab_proxy_connections(p, 0), 1);
    assert_int_equal(lab_proxy_connections(p, 1), 4);

    lab_proxy_block(p, 1, 1); /* every target blocked */
    assert_true(is_cut(c2, 2000));
    int c3 = dial(port);
    assert_true(is_cut(c3, 2000));
    close(c3);

    lab_proxy_block(p, 0, 0); /* heal A */
    int c4 = dial(port), c5 = dial(port);
    assert_int_equal(tag_of(c4), 'A');
    assert_int_equal(tag_of(c5), 'A');
    lab_proxy_block(p, 1, 0);
    int c6 = dial(port), c7 = dial(port);
    char t6 = tag_of(c6), t7 = tag_of(c7);
    assert_true((t6 == 'A' && t7 == 'B') || (t6 == 'B' && t7 == 'A'));
    assert_int_equal(lab_proxy_connections(p, 0) + lab_proxy_connections(p, 1), 9);
    int all[] = {c1, c2, c4, c5, c6, c7};
    for (size_t i = 0; i < sizeof(all) / sizeof(*all); i++)
        close(all[i]);
    lab_proxy_stop(p);
    echo_stop(&a);
    echo_stop(&b);
}

static void test_unreachable_target(void **state)
{
    (void)state;
    int port;
    int s = tu_loopback_socket(&port); /* bound, never listening: refuses */
    lab_proxy_t *p;
    assert_int_equal(lab_proxy_start(&port, 1, 0, &p), 0);
    int c = dial(lab_proxy_port(p));
    assert_true(is_cut(c, 2000));
    close(c);
    close(s);
    lab_proxy_stop(p);
}

static void test_connection_bound(void **state)
{
    (void)state;
    echo_t a;
    echo_start(&a, 'A');
    lab_proxy_t *p;
    assert_int_equal(lab_proxy_start(&a.port, 1, 0, &p), 0);
    int port = lab_proxy_port(p);
    int fds[256];
    for (int i = 0; i < 256; i++) {
        fds[i] = dial(port);
        assert_int_equal(tag_of(fds[i]), 'A');
    }
    int over = dial(port);
    assert_true(is_cut(over, 2000));
    close(over);
    assert_int_equal(lab_proxy_connections(p, 0), 256);
    /* One closes: a new one is let in once the proxy has seen it go. */
    close(fds[0]);
    int ok = 0;
    for (int tries = 0; tries < 50 && !ok; tries++) {
        fds[0] = dial(port);
        ok = tag_of(fds[0]) == 'A';
        if (!ok) {
            close(fds[0]);
            usleep(20000);
        }
    }
    assert_true(ok);
    /* Stop with all of them open: each is closed. */
    lab_proxy_stop(p);
    for (int i = 0; i < 256; i++) {
        assert_true(is_cut(fds[i], 2000));
        close(fds[i]);
    }
    echo_stop(&a);
}

#define BIG (48u << 20)

static unsigned char pattern(size_t i)
{
    return (unsigned char)((i * 7 + i / 4093) & 0xff);
}

static void test_waiting_bound(void **state)
{
    (void)state;
    int port;
    int l = tu_loopback_socket(&port);
    assert_int_equal(listen(l, 4), 0);
    lab_proxy_t *p;
    assert_int_equal(lab_proxy_start(&port, 1, 0, &p), 0);
    int c = dial(lab_proxy_port(p));
    int s = accept(l, NULL, NULL);
    assert_true(s >= 0);
    fcntl(c, F_SETFL, fcntl(c, F_GETFL) | O_NONBLOCK);
    static unsigned char buf[1 << 16];

    /* The receiver does not read: the sender stalls well before BIG. */
    size_t sent = 0;
    for (;;) {
        size_t n = sizeof(buf);
        if (n > BIG - sent) n = BIG - sent;
        for (size_t i = 0; i < n; i++)
            buf[i] = pattern(sent + i);
        ssize_t w = write(c, buf, n);
        if (w > 0) {
            sent += (size_t)w;
            continue;
        }
        assert_true(w < 0 && errno == EAGAIN);
        struct pollfd pf = {.fd = c, .events = POLLOUT};
        if (poll(&pf, 1, 500) == 0) break; /* no progress for 0.5 s */
    }
    assert_true(sent < BIG);
    size_t peak = lab_proxy__waiting_peak(p);
    assert_true(peak <= (4u << 20));
    assert_true(peak > (4u << 20) - (64u << 10));

    /* It reads: everything arrives, in order; the half-close follows. */
    size_t got = 0;
    int shut = 0;
    while (got < BIG || !shut) {
        struct pollfd pf[2] = {{.fd = s, .events = POLLIN},
                               {.fd = c, .events = sent < BIG ? POLLOUT : 0}};
        assert_true(poll(pf, 2, 5000) > 0);
        if (pf[1].revents & POLLOUT) {
            size_t n = sizeof(buf);
            if (n > BIG - sent) n = BIG - sent;
            for (size_t i = 0; i < n; i++)
                buf[i] = pattern(sent + i);
            ssize_t w = write(c, buf, n);
            if (w > 0) sent += (size_t)w;
            if (sent == BIG) shutdown(c, SHUT_WR);
        }
        if (pf[0].revents & (POLLIN | POLLHUP)) {
            unsigned char in[1 << 16];
            ssize_t r = read(s, in, sizeof(in));
            assert_true(r >= 0);
            if (r == 0) {
                shut = 1;
                break;
            }
            for (ssize_t i = 0; i < r; i++)
                if (in[i] != pattern(got + (size_t)i))
                    fail_msg("byte %zu differs", got + (size_t)i);
            got += (size_t)r;
        }
    }
    assert_int_equal(got, BIG);
    assert_true(shut);
    assert_true(lab_proxy__waiting_peak(p) <= (4u << 20));
    close(s);
    close(c);
    close(l);
    lab_proxy_stop(p);
}

static void test_bad_args(void **state)
{
    (void)state;
    lab_proxy_t *p = (lab_proxy_t *)1;
    int t[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    assert_int_equal(lab_proxy_start(t, 0, 0, &p), KP_EINVAL);
    assert_null(p);
    assert_int_equal(lab_proxy_start(t, 9, 0, &p), KP_EINVAL);
    assert_int_equal(lab_proxy_start(t, 1, -1, &p), KP_EINVAL);
    int zero = 0, big = 70000;
    assert_int_equal(lab_proxy_start(&zero, 1, 0, &p), KP_EINVAL);
    assert_int_equal(lab_proxy_start(&big, 1, 0, &p), KP_EINVAL);
    assert_int_equal(lab_proxy_start(t, 8, 0, &p), 0);
    lab_proxy_stop(p);
    lab_proxy_stop(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_robin),      cmocka_unit_test(test_latency),
        cmocka_unit_test(test_block_heal),       cmocka_unit_test(test_unreachable_target),
        cmocka_unit_test(test_connection_bound), cmocka_unit_test(test_waiting_bound),
        cmocka_unit_test(test_bad_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
