/*
 * proxy.c -- the loopback TCP proxy of proxy.h, on a libuv loop in a
 * thread of its own (tests/ha/proxy.py was its first form, one target and
 * a delay, in Python's asyncio).
 *
 * A CONNECTION
 *   accept -> pick a target (round robin, skipping blocked ones) -> connect
 *   to it -> read both sides. Each read becomes a chunk due `delay` ms later
 *   (and never before the chunk ahead of it: order is kept when the delay
 *   shrinks), queued in its direction; the direction's timer writes every
 *   chunk whose time has come. An end of stream is a chunk too: when its
 *   time comes the other side is shut down for writing (a half-close, as
 *   TCP carries it). When both directions are shut down the connection
 *   closes; an error on either side, a block of its target or the proxy's
 *   stop cuts it at once (both sides reset).
 *
 *      accepted --on_connect--> piping --both EOFs delivered--> closed
 *          \___________________/   \--error, block, stop (reset)--/
 *
 * INVARIANTS
 *   1. A direction's `waiting` is the bytes of its chunks queued or being
 *      written, and never exceeds PROXY_WAIT_MAX: a read is given at most
 *      the room that is left, and reading stops when none is (on_alloc,
 *      on_read); it starts again when a write completes (on_written).
 *   2. Chunks leave a direction in the order they were read.
 *   3. At most PROXY_MAX_CONNS connections are open; one more is reset at
 *      accept, and so is one that finds every target blocked.
 *   4. After lab_proxy_block(p, i, 1) returns, no connection to target i
 *      is open or opens: the loop has cut them (on_wake) and the accept
 *      path reads the flag first.
 *   5. Only the loop thread touches connections; other threads share the
 *      atomics (delay, blocked, counts, peak) and the asked/served pair
 *      under `mu`.
 */
#include "lab/proxy.h"
#include "lab/proxy_int.h"

#include <arpa/inet.h>
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "lib/err.h"
#include "lib/log.h"

#define PROXY_MAX_TARGETS 8
#define PROXY_MAX_CONNS   256
#define PROXY_WAIT_MAX    (4u << 20) /* bytes waiting in one direction */
#define PROXY_READ_MAX    (64u << 10)

typedef struct conn conn_t;

typedef struct chunk {
    struct chunk *next;
    uint64_t due; /* uv_hrtime() (ns) from which it may be written */
    size_t len;   /* 0: the end of the stream */
    uv_write_t wr;
    char data[];
} chunk_t;

typedef struct dir {
    conn_t *c;
    uv_tcp_t *src, *dst;
    chunk_t *head, *tail; /* waiting for their time */
    size_t waiting;       /* bytes queued or being written (invariant 1) */
    uv_timer_t timer;
    uv_shutdown_t shut_req;
    unsigned reading : 1, eof : 1, shut : 1;
} dir_t;

struct conn {
    lab_proxy_t *p;
    conn_t *prev, *next;
    int target;
    uv_tcp_t client, server;
    uv_connect_t connect_req;
    dir_t up, down; /* up: client -> target; down: target -> client */
    int handles;    /* open libuv handles; freed at 0 */
    unsigned server_init : 1, connected : 1, closing : 1;
};

struct lab_proxy {
    uv_loop_t loop;
    uv_tcp_t listener;
    uv_async_t wake;
    pthread_t thread;
    int port;
    int n;
    int targets[PROXY_MAX_TARGETS];
    int next;      /* loop: the round robin's next target */
    conn_t *conns; /* loop: every open connection */
    int nconns;    /* loop */
    _Atomic int delay_ms;
    _Atomic int blocked[PROXY_MAX_TARGETS];
    _Atomic long accepted[PROXY_MAX_TARGETS];
    _Atomic size_t peak;
    _Atomic int stopping;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned long asked, served; /* under mu: cut requests and the last one done */
    int loop_done;               /* under mu: the loop thread has returned */
};

static void conn_close(conn_t *c);
static void on_due(uv_timer_t *t);

/* ---- chunks and directions ---- */

static void dir_free_queue(dir_t *d)
{
    while (d->head) {
        chunk_t *k = d->head;
        d->head = k->next;
        free(k);
    }
    d->tail = NULL;
}

/* Time the head of d's queue. The loop's clock (uv_now) is in whole ms
 * and may be older than the read, so chunks carry the precise clock and
 * on_due() checks it: a timer that fires early is armed again. */
static void dir_arm(dir_t *d)
{
    if (!d->head || uv_is_active((uv_handle_t *)&d->timer)) return;
    uint64_t now = uv_hrtime();
    uint64_t wait = d->head->due > now ? (d->head->due - now + 999999) / 1000000 : 0;
    uv_update_time(&d->c->p->loop);
    uv_timer_start(&d->timer, on_due, wait, 0);
}

static void dir_push(dir_t *d, chunk_t *k)
{
    lab_proxy_t *p = d->c->p;
    k->next = NULL;
    k->due = uv_hrtime() + (uint64_t)atomic_load(&p->delay_ms) * 1000000u;
    if (d->tail && d->tail->due > k->due) k->due = d->tail->due; /* invariant 2 */
    if (d->tail)
        d->tail->next = k;
    else
        d->head = k;
    d->tail = k;
    d->waiting += k->len;
    size_t peak = atomic_load(&p->peak);
    while (d->waiting > peak && !atomic_compare_exchange_weak(&p->peak, &peak, d->waiting))
        ;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static void dir_read(dir_t *d, int on)
{
    if (on && !d->reading && !d->eof && d->waiting < PROXY_WAIT_MAX) {
        if (uv_read_start((uv_stream_t *)d->src, on_alloc, on_read) == 0) d->reading = 1;
    } else if (!on && d->reading) {
        uv_read_stop((uv_stream_t *)d->src);
        d->reading = 0;
    }
}

static dir_t *dir_of_src(conn_t *c, const uv_stream_t *s)
{
    return s == (uv_stream_t *)&c->client ? &c->up : &c->down;
}

/* A read gets at most the room its direction has left (invariant 1). */
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    conn_t *c = h->data;
    dir_t *d = dir_of_src(c, (uv_stream_t *)h);
    size_t room = d->waiting < PROXY_WAIT_MAX ? PROXY_WAIT_MAX - d->waiting : 0;
    size_t n = room < PROXY_READ_MAX ? room : PROXY_READ_MAX;
    (void)suggested; /* libuv suggests 64 KiB: ours, capped by the room left */
    chunk_t *k = n ? malloc(sizeof(*k) + n) : NULL;
    *buf = k ? uv_buf_init(k->data, (unsigned)n) : uv_buf_init(NULL, 0);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    conn_t *c = s->data;
    dir_t *d = dir_of_src(c, s);
    chunk_t *k = buf->base ? (chunk_t *)(buf->base - offsetof(chunk_t, data)) : NULL;
    if (nread > 0) {
        if ((size_t)nread < buf->len / 2) {
            chunk_t *small = realloc(k, sizeof(*k) + (size_t)nread);
            if (small) k = small;
        }
        k->len = (size_t)nread;
        dir_push(d, k);
        if (d->waiting >= PROXY_WAIT_MAX) dir_read(d, 0);
        dir_arm(d);
        return;
    }
    free(k);
    if (nread == 0) return; /* EAGAIN */
    if (nread == UV_ENOBUFS && d->waiting > 0) {
        dir_read(d, 0); /* full, or no memory: on_written starts it again */
        return;
    }
    if (nread != UV_EOF) {
        conn_close(c);
        return;
    }
    dir_read(d, 0);
    d->eof = 1;
    chunk_t *end = calloc(1, sizeof(*end));
    if (!end) {
        conn_close(c);
        return;
    }
    dir_push(d, end);
    dir_arm(d);
}

static void on_written(uv_write_t *wr, int status)
{
    chunk_t *k = wr->data;
    conn_t *c = wr->handle->data;
    dir_t *d = wr->handle == (uv_stream_t *)&c->server ? &c->up : &c->down;
    d->waiting -= k->len;
    free(k);
    if (c->closing) return;
    if (status < 0) {
        conn_close(c);
        return;
    }
    dir_read(d, 1);
}

static void on_shut(uv_shutdown_t *req, int status)
{
    (void)status; /* the peer may have gone already: the direction is over either way */
    dir_t *d = req->data;
    conn_t *c = d->c;
    d->shut = 1;
    if (!c->closing && c->up.shut && c->down.shut) conn_close(c);
}

static void on_due(uv_timer_t *t)
{
    dir_t *d = t->data;
    conn_t *c = d->c;
    uint64_t now = uv_hrtime();
    while (d->head && d->head->due <= now && !c->closing) {
        chunk_t *k = d->head;
        d->head = k->next;
        if (!d->head) d->tail = NULL;
        if (k->len == 0) {
            free(k);
            d->shut_req.data = d;
            if (uv_shutdown(&d->shut_req, (uv_stream_t *)d->dst, on_shut) < 0) {
                conn_close(c);
                return;
            }
            continue;
        }
        k->wr.data = k;
        uv_buf_t b = uv_buf_init(k->data, (unsigned)k->len);
        if (uv_write(&k->wr, (uv_stream_t *)d->dst, &b, 1, on_written) < 0) {
            d->waiting -= k->len;
            free(k);
            conn_close(c);
            return;
        }
    }
    dir_arm(d);
}

/* ---- connections ---- */

static void on_handle_closed(uv_handle_t *h)
{
    /* A socket's data is its connection; a timer's, its direction. */
    conn_t *c = h->type == UV_TIMER ? ((dir_t *)h->data)->c : h->data;
    if (--c->handles > 0) return;
    dir_free_queue(&c->up);
    dir_free_queue(&c->down);
    free(c);
}

static void close_one(conn_t *c, uv_handle_t *h, int reset)
{
    if (uv_is_closing(h)) return;
    if (reset && uv_tcp_close_reset((uv_tcp_t *)h, on_handle_closed) == 0) return;
    uv_close(h, on_handle_closed);
    (void)c;
}

/* Cut c: both sides reset, its chunks dropped once the handles are closed.
 * A connection closing after both ends of stream went through is closed
 * the same way; there is nothing left to lose then. */
static void conn_close(conn_t *c)
{
    if (c->closing) return;
    lab_proxy_t *p = c->p;
    c->closing = 1;
    if (c->prev)
        c->prev->next = c->next;
    else
        p->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    p->nconns--;
    int reset = !(c->up.shut && c->down.shut);
    uv_timer_stop(&c->up.timer);
    uv_timer_stop(&c->down.timer);
    close_one(c, (uv_handle_t *)&c->up.timer, 0);
    close_one(c, (uv_handle_t *)&c->down.timer, 0);
    close_one(c, (uv_handle_t *)&c->client, reset);
    if (c->server_init) close_one(c, (uv_handle_t *)&c->server, reset && c->connected);
}

static void on_connect(uv_connect_t *req, int status)
{
    conn_t *c = req->data;
    if (c->closing) return;
    if (status < 0) {
        conn_close(c);
        return;
    }
    c->connected = 1;
    dir_read(&c->up, 1);
    dir_read(&c->down, 1);
}

static int pick_target(lab_proxy_t *p)
{
    for (int k = 0; k < p->n; k++) {
        int i = (p->next + k) % p->n;
        if (!atomic_load(&p->blocked[i])) {
            p->next = (i + 1) % p->n;
            return i;
        }
    }
    return -1;
}

static void dir_init(conn_t *c, dir_t *d, uv_tcp_t *src, uv_tcp_t *dst)
{
    d->c = c;
    d->src = src;
    d->dst = dst;
    uv_timer_init(&c->p->loop, &d->timer);
    d->timer.data = d;
    c->handles++;
}

static void on_accept(uv_stream_t *server, int status)
{
    lab_proxy_t *p = server->data;
    if (status < 0) return;
    conn_t *c = calloc(1, sizeof(*c));
    if (!c) return; /* the connection waits in the backlog */
    c->p = p;
    uv_tcp_init(&p->loop, &c->client);
    c->client.data = c;
    c->handles = 1;
    dir_init(c, &c->up, &c->client, &c->server);
    dir_init(c, &c->down, &c->server, &c->client);
    c->next = p->conns;
    if (p->conns) p->conns->prev = c;
    p->conns = c;
    p->nconns++;
    if (uv_accept(server, (uv_stream_t *)&c->client) < 0) {
        conn_close(c);
        return;
    }
    c->target = p->nconns > PROXY_MAX_CONNS ? -1 : pick_target(p); /* invariant 3 */
    if (c->target < 0) {
        conn_close(c);
        return;
    }
    atomic_fetch_add(&p->accepted[c->target], 1);
    uv_tcp_init(&p->loop, &c->server);
    c->server.data = c;
    c->server_init = 1;
    c->handles++;
    uv_tcp_nodelay(&c->client, 1);
    uv_tcp_nodelay(&c->server, 1);
    struct sockaddr_in sa;
    uv_ip4_addr("127.0.0.1", p->targets[c->target], &sa);
    c->connect_req.data = c;
    if (uv_tcp_connect(&c->connect_req, &c->server, (const struct sockaddr *)&sa, on_connect) < 0)
        conn_close(c);
}

/* ---- the loop's side of the calls ---- */

static void on_wake(uv_async_t *a)
{
    lab_proxy_t *p = a->data;
    pthread_mutex_lock(&p->mu);
    unsigned long asked = p->asked;
    pthread_mutex_unlock(&p->mu);
    int stopping = atomic_load(&p->stopping);
    for (conn_t *c = p->conns, *next; c; c = next) {
        next = c->next;
        if (stopping || (c->target >= 0 && atomic_load(&p->blocked[c->target]))) conn_close(c);
    }
    if (stopping) {
        if (!uv_is_closing((uv_handle_t *)&p->listener))
            uv_close((uv_handle_t *)&p->listener, NULL);
        if (!uv_is_closing((uv_handle_t *)&p->wake)) uv_close((uv_handle_t *)&p->wake, NULL);
    }
    pthread_mutex_lock(&p->mu);
    p->served = asked;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

static void *proxy_thread(void *arg)
{
    lab_proxy_t *p = arg;
    log_thread_name("lab", "proxy");
    uv_run(&p->loop, UV_RUN_DEFAULT);
    /* Stopped: wake whoever waits for a cut that will not come now. */
    pthread_mutex_lock(&p->mu);
    p->loop_done = 1;
    p->served = p->asked;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* ---- the API ---- */

int lab_proxy_start(const int *targets, int n, int delay_ms, lab_proxy_t **out)
{
    *out = NULL;
    if (!targets || n < 1 || n > PROXY_MAX_TARGETS || delay_ms < 0) return KP_EINVAL;
    for (int i = 0; i < n; i++)
        if (targets[i] <= 0 || targets[i] > 65535) return KP_EINVAL;
    lab_proxy_t *p = calloc(1, sizeof(*p));
    if (!p) return KP_ENOMEM;
    p->n = n;
    memcpy(p->targets, targets, sizeof(*targets) * (size_t)n);
    atomic_init(&p->delay_ms, delay_ms);
    int rc = KP_EIO;
    if (uv_loop_init(&p->loop) < 0) goto fail_loop;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    uv_tcp_init(&p->loop, &p->listener);
    p->listener.data = p;
    uv_async_init(&p->loop, &p->wake, on_wake);
    p->wake.data = p;
    struct sockaddr_in sa;
    struct sockaddr_storage bound;
    int len = sizeof(bound);
    uv_ip4_addr("127.0.0.1", 0, &sa);
    if (uv_tcp_bind(&p->listener, (const struct sockaddr *)&sa, 0) < 0 ||
        uv_listen((uv_stream_t *)&p->listener, 511, on_accept) < 0 ||
        uv_tcp_getsockname(&p->listener, (struct sockaddr *)&bound, &len) < 0)
        goto fail;
    p->port = ntohs(((struct sockaddr_in *)&bound)->sin_port);
    if (pthread_create(&p->thread, NULL, proxy_thread, p) != 0) goto fail;
    *out = p;
    return 0;

fail:
    uv_close((uv_handle_t *)&p->listener, NULL);
    uv_close((uv_handle_t *)&p->wake, NULL);
    uv_run(&p->loop, UV_RUN_DEFAULT);
    uv_loop_close(&p->loop);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
fail_loop:
    free(p);
    return rc;
}

int lab_proxy_port(const lab_proxy_t *p)
{
    return p->port;
}

void lab_proxy_set_delay(lab_proxy_t *p, int delay_ms)
{
    atomic_store(&p->delay_ms, delay_ms < 0 ? 0 : delay_ms);
}

void lab_proxy_block(lab_proxy_t *p, int i, int blocked)
{
    if (i < 0 || i >= p->n) return;
    atomic_store(&p->blocked[i], blocked ? 1 : 0);
    if (!blocked) return;
    /* Wait until the loop has cut target i's connections (invariant 4). */
    pthread_mutex_lock(&p->mu);
    unsigned long ask = ++p->asked;
    uv_async_send(&p->wake);
    while (p->served < ask && !p->loop_done)
        pthread_cond_wait(&p->cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

long lab_proxy_connections(const lab_proxy_t *p, int i)
{
    if (i < 0 || i >= p->n) return 0;
    return atomic_load(&p->accepted[i]);
}

size_t lab_proxy__waiting_peak(const lab_proxy_t *p)
{
    return atomic_load(&p->peak);
}

void lab_proxy_stop(lab_proxy_t *p)
{
    if (!p) return;
    atomic_store(&p->stopping, 1);
    uv_async_send(&p->wake);
    pthread_join(p->thread, NULL);
    /* Every handle is closed: the connections' close callbacks ran. */
    int rc = uv_loop_close(&p->loop);
    assert(rc == 0);
    (void)rc;
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}
