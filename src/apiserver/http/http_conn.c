/*
 * http_conn.c -- the TCP listener's front door: connections until they prove
 * who they are.
 *
 * libmicrohttpd gives every connection a thread (and, over TLS, a session).
 * A peer that opens connections and never completes a request (a partial
 * TLS record, half a header) would hold threads until everyone else is
 * locked out, and accepting through thread creation is slow enough (about
 * 1 ms a connection) that a flood would fill the listen backlog ahead of
 * kubectl. Kubernetes' Go server pays a goroutine per such peer and drops it
 * after ReadHeaderTimeout; kplane keeps them out of libmicrohttpd instead:
 *
 *   GATED     accepted here (accept4 on an epoll loop, no thread, a few
 *             hundred bytes), waiting for its first complete TLS record (or,
 *             without TLS, its complete request head), which is only peeked
 *             at, never read: libmicrohttpd reads it after the hand-over.
 *   READY     that record is complete; waiting (still no thread) for a free
 *             unproven place.
 *   UNPROVEN  handed to libmicrohttpd (MHD_add_connection: a thread), no
 *             request with a valid token on it yet.
 *   PROVEN    a request authenticated (api_conns_prove); no longer tracked
 *             here: the idle timeout and the total cap govern it.
 *
 * Rules:
 *   1. At most max_connections in all (gated, unproven and proven: those
 *      libmicrohttpd has not reported closed). At the cap a new connection
 *      closes the oldest gated one, else the oldest unproven one, else it is
 *      itself closed: authenticated clients are never pushed out by
 *      strangers.
 *   2. At most max_unproven unproven. A ready connection is handed over
 *      when a place is free; when none is, it takes the place of the oldest
 *      unproven one whose peer has sent nothing for UNPROVEN_GRACE_MS and
 *      has nothing unread (the peer is the one waiting, not our thread),
 *      else it waits. A client that sends its request at once (kubectl, a
 *      /readyz probe) leaves its place within milliseconds, one that is
 *      slow but moving (a client busy with a thousand handshakes) or whose
 *      bytes wait for a busy server is never pushed out, so a burst of
 *      honest clients (a thousand watches opened at once) waits its turn
 *      instead of pushing its own members out, while a peer that completes
 *      the handshake and then stalls holds a place for at most the grace
 *      when others wait. The newest ready connection goes first: in a
 *      flood the peers that have waited longest are the flood's, and a
 *      client arriving during it (kubectl) gets the next free place.
 *   3. No connection stays gated or unproven longer than header_timeout
 *      from its accept (Kubernetes' ReadHeaderTimeout, 32 s).
 *
 * The loop thread owns gated and ready sockets. An unproven one belongs to its
 * libmicrohttpd thread: "closing" it is shutdown(2), after which that thread
 * meets end-of-file and ends it as any other. Its descriptor cannot have
 * been reused meanwhile: libmicrohttpd reports MHD_CONNECTION_NOTIFY_CLOSED
 * (which takes `mu` and unlinks the entry) before it closes the socket, and
 * shutdown happens only under `mu` on a linked entry.
 *
 * Thread-safety: api_conns_notify/prove/stats may be called from any thread;
 * `mu` guards the queues and counters. new/start/stop/free: one thread.
 */
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "apiserver/http/http.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"

#define GATE_PEEK_MAX 16384 /* bytes peeked at for a complete request head */
#define TLS_RECORD_MAX (16384 + 2048)
#define UNPROVEN_GRACE_MS 5000 /* rule 2: a stalled peer's place is taken back */

typedef enum { CONN_GATED, CONN_READY, CONN_UNPROVEN, CONN_PROVEN, CONN_GONE } conn_state_t;

typedef struct api_conn {
    struct api_conn *prev, *next; /* in gated, ready or unproven while in that state */
    conn_state_t state;
    int fd;
    int64_t start_ns;  /* accept */
    int64_t handed_ns; /* CONN_UNPROVEN: when libmicrohttpd started it */
    uint64_t rx;       /* CONN_UNPROVEN, under mu: bytes received, last seen */
    int64_t rx_ns;     /* when rx last changed */
    struct sockaddr_storage addr;
    socklen_t addrlen;
    struct api_conn *gone_next; /* CONN_GONE: on the loop's free-later list */
} api_conn_t;

/* A connection handed to libmicrohttpd whose STARTED notification has not
 * come yet: it carries the accept time over (rule 3). */
typedef struct conn_handing {
    int fd;
    int64_t start_ns;
    struct conn_handing *next;
} conn_handing_t;

typedef struct conn_queue {
    api_conn_t head; /* sentinel: head.next is the oldest */
    size_t n;
} conn_queue_t;

struct api_conns {
    api_conns_config_t cfg;
    pthread_mutex_t mu;
    conn_queue_t gated, ready, unproven; /* under mu */
    size_t nhanding;                     /* under mu: entries in handing */
    size_t total;                 /* under mu: connections not yet closed */
    api_conns_stats_t st;         /* under mu: counters */
    struct MHD_Daemon *daemon;
    int epfd, wake_fd;
    pthread_t thread;
    int started;
    conn_handing_t *handing;  /* under mu: handed over, not yet STARTED */
    api_conn_t *gone;         /* loop thread only: gated entries closed during
                                 an epoll batch, freed after it (a later event
                                 of the batch may still name them) */
    int stop; /* atomic */
};

static void q_init(conn_queue_t *q)
{
    q->head.next = q->head.prev = &q->head;
    q->n = 0;
}

static void q_push(conn_queue_t *q, api_conn_t *c)
{
    c->prev = q->head.prev;
    c->next = &q->head;
    q->head.prev->next = c;
    q->head.prev = c;
    q->n++;
}

static void q_remove(conn_queue_t *q, api_conn_t *c)
{
    c->prev->next = c->next;
    c->next->prev = c->prev;
    c->prev = c->next = NULL;
    q->n--;
}

static api_conn_t *q_oldest(conn_queue_t *q)
{
    return q->head.next == &q->head ? NULL : q->head.next;
}

static api_conn_t *q_newest(conn_queue_t *q)
{
    return q->head.prev == &q->head ? NULL : q->head.prev;
}

/* Under mu, on the loop thread. A gated or ready connection is ours:
 * closed here, freed after the current epoll batch. */
static void close_gated(api_conns_t *cs, api_conn_t *c)
{
    q_remove(c->state == CONN_READY ? &cs->ready : &cs->gated, c);
    cs->total--;
    close(c->fd); /* also leaves the epoll set */
    c->state = CONN_GONE;
    c->gone_next = cs->gone;
    cs->gone = c;
}

static void free_gone(api_conns_t *cs)
{
    while (cs->gone) {
        api_conn_t *c = cs->gone;
        cs->gone = c->gone_next;
        free(c);
    }
}

/* Under mu. An unproven one is its thread's: shut down, freed at CLOSED. */
static void close_unproven(api_conns_t *cs, api_conn_t *c)
{
    q_remove(&cs->unproven, c);
    c->state = CONN_PROVEN; /* untracked from now on; CLOSED frees it */
    shutdown(c->fd, SHUT_RDWR);
}

/* Under mu: make room for one more connection (rule 1). 0, or -1 if every
 * connection is proven and the new one must go. */
static int make_room(api_conns_t *cs)
{
    if (cs->total < cs->cfg.max_connections) return 0;
    api_conn_t *c = q_oldest(&cs->gated);
    if (c || (c = q_oldest(&cs->ready))) {
        close_gated(cs, c);
        cs->st.overflow_closed++;
        return 0;
    }
    if ((c = q_oldest(&cs->unproven))) {
        close_unproven(cs, c);
        cs->st.overflow_closed++;
        /* Still counted until its thread ends it: the cap may be passed by
         * the few being shut down at this moment. */
        return 0;
    }
    return -1;
}

/* Peek at what a gated connection sent: 1 when its first TLS record (or,
 * without TLS, its request head) is complete, 0 to wait for more, -1 to
 * close it (end of file, an error, not TLS on a TLS listener). */
static int gate_ready(api_conns_t *cs, int fd)
{
    char buf[GATE_PEEK_MAX];
    ssize_t n = recv(fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) return -1;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
    if (cs->cfg.tls) {
        if ((unsigned char)buf[0] != 0x16) return -1; /* not a TLS handshake */
        if (n < 5) return 0;
        size_t len = ((size_t)(unsigned char)buf[3] << 8) | (unsigned char)buf[4];
        if (len > TLS_RECORD_MAX) return -1;
        return (size_t)n >= 5 + len ? 1 : 0;
    }
    /* Plain HTTP: the head ends with an empty line; a head larger than the
     * peek goes on to libmicrohttpd, which answers 431 past its limit. */
    if (n == (ssize_t)sizeof buf) return 1;
    for (ssize_t i = 0; i + 1 < n; i++) {
        if (buf[i] == '\n' && (buf[i + 1] == '\n' || (buf[i + 1] == '\r' && i + 2 < n &&
                                                      buf[i + 2] == '\n')))
            return 1;
    }
    return 0;
}

/* Under mu: remove fd's entry from cs->handing and return it (the caller
 * frees it), NULL if none; *start_ns (if not NULL) gets its accept time. */
static conn_handing_t *handing_take(api_conns_t *cs, int fd, int64_t *start_ns)
{
    for (conn_handing_t **p = &cs->handing; *p; p = &(*p)->next) {
        if ((*p)->fd != fd) continue;
        conn_handing_t *h = *p;
        *p = h->next;
        if (start_ns) *start_ns = h->start_ns;
        cs->nhanding--;
        return h;
    }
    return NULL;
}

/* Under mu: a gated connection's first record is complete; it waits for a
 * place (rule 2) without further events. */
static void make_ready(api_conns_t *cs, api_conn_t *c)
{
    q_remove(&cs->gated, c);
    epoll_ctl(cs->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    c->state = CONN_READY;
    q_push(&cs->ready, c);
}

/* Under mu: hand a ready connection to libmicrohttpd, which closes it
 * itself if it cannot take it. */
static void hand_over(api_conns_t *cs, api_conn_t *c)
{
    q_remove(&cs->ready, c);
    int fd = c->fd;
    struct sockaddr_storage addr = c->addr;
    socklen_t addrlen = c->addrlen;
    /* libmicrohttpd's STARTED notification queues a new entry, unproven,
     * with the accept time left in cs->handing. It comes on libmicrohttpd's
     * thread: MHD_add_connection() from another thread only queues the
     * socket for it (a plain field here raced with it, TSan). */
    conn_handing_t *h = malloc(sizeof *h); /* NULL: the entry starts now */
    if (h) {
        h->fd = fd;
        h->start_ns = c->start_ns;
        h->next = cs->handing;
        cs->handing = h;
        cs->nhanding++;
    }
    cs->total--; /* counted again at STARTED */
    c->state = CONN_GONE;
    c->gone_next = cs->gone;
    cs->gone = c;
    pthread_mutex_unlock(&cs->mu);
    /* Closes fd itself on failure. */
    int ok = MHD_add_connection(cs->daemon, fd, (const struct sockaddr *)&addr, addrlen) == MHD_YES;
    pthread_mutex_lock(&cs->mu);
    if (!ok) {
        log_debug("http", "handing a connection over: %s", strerror(errno));
        free(handing_take(cs, fd, NULL));
    }
}

/* The bytes fd's peer has sent so far (TCP_INFO), 0 if unknown. */
static uint64_t bytes_received(int fd)
{
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    memset(&ti, 0, sizeof ti);
    if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len)) return 0;
    return ti.tcpi_bytes_received;
}

/* Under mu: whether an unproven connection's peer is the one holding
 * things up: it has sent nothing for `grace` and all it sent has been read
 * (SIOCINQ 0). Notes the progress it sees. */
static int stalled_peer(api_conn_t *c, int64_t now, int64_t grace)
{
    uint64_t rx = bytes_received(c->fd);
    if (rx != c->rx) {
        c->rx = rx;
        c->rx_ns = now;
    }
    int unread = 0;
    return now - c->rx_ns >= grace && c->fd >= 0 && ioctl(c->fd, SIOCINQ, &unread) == 0 &&
           unread == 0;
}

/* Rule 2, on the loop thread: hand ready connections over while places
 * are free, taking back places held past the grace. Returns ms until it
 * should look again (a place's grace ends, or a hand-over's STARTED is
 * still to come), 1000 when nothing waits. */
static int pump(api_conns_t *cs)
{
    int next = 1000;
    pthread_mutex_lock(&cs->mu);
    api_conn_t *c;
    while ((c = q_newest(&cs->ready))) {
        if (cs->unproven.n + cs->nhanding >= cs->cfg.max_unproven) {
            int64_t now = clock_mono_ns(), grace = (int64_t)UNPROVEN_GRACE_MS * 1000000;
            api_conn_t *old = q_oldest(&cs->unproven), *stalled = NULL; /* oldest first */
            for (; old && old != &cs->unproven.head; old = old->next) {
                if (now - old->handed_ns < grace) break;
                if (!stalled_peer(old, now, grace)) continue;
                stalled = old;
                break;
            }
            if (!stalled) { /* look again in a while: a place may stall meanwhile */
                next = 250;
                break;
            }
            close_unproven(cs, stalled);
            cs->st.overflow_closed++;
        }
        hand_over(cs, c);
    }
    pthread_mutex_unlock(&cs->mu);
    return next;
}

/* Under mu: a place may have come free; wake the loop if anyone waits. */
static void place_freed(api_conns_t *cs)
{
    uint64_t one = 1;
    if (cs->ready.n && write(cs->wake_fd, &one, sizeof one) < 0) {
        /* the loop looks again within its timeout anyway */
    }
}

static void accept_all(api_conns_t *cs, int listen_fd)
{
    for (;;) {
        struct sockaddr_storage addr;
        socklen_t addrlen = sizeof addr;
        int fd = accept4(listen_fd, (struct sockaddr *)&addr, &addrlen,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno == EMFILE || errno == ENFILE)
                log_warn("http", "accept: %s: raise the file limit or lower --max-connections",
                         strerror(errno));
            return; /* EAGAIN: all taken */
        }
        api_conn_t *c = calloc(1, sizeof *c);
        pthread_mutex_lock(&cs->mu);
        if (!c || make_room(cs)) {
            cs->st.refused++;
            pthread_mutex_unlock(&cs->mu);
            close(fd);
            free(c);
            continue;
        }
        c->state = CONN_GATED;
        c->fd = fd;
        c->start_ns = clock_mono_ns();
        c->addr = addr;
        c->addrlen = addrlen;
        q_push(&cs->gated, c);
        cs->total++;
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.ptr = c};
        if (epoll_ctl(cs->epfd, EPOLL_CTL_ADD, fd, &ev)) close_gated(cs, c);
        pthread_mutex_unlock(&cs->mu);
    }
}

/* Rule 3: close what waited too long; returns ms until the next deadline. */
static int reap(api_conns_t *cs)
{
    int64_t now = clock_mono_ns(), limit = (int64_t)cs->cfg.header_timeout_s * 1000000000;
    int64_t next = 1000;
    pthread_mutex_lock(&cs->mu);
    conn_queue_t *qs[3] = {&cs->gated, &cs->ready, &cs->unproven};
    for (int i = 0; i < 3; i++) {
        api_conn_t *c;
        while ((c = q_oldest(qs[i])) && now - c->start_ns >= limit) {
            if (i < 2) close_gated(cs, c);
            else close_unproven(cs, c);
            cs->st.timeout_closed++;
        }
        if (c) {
            int64_t left = (c->start_ns + limit - now) / 1000000 + 1;
            if (left < next) next = left;
        }
    }
    pthread_mutex_unlock(&cs->mu);
    return (int)next;
}

static void *loop_main(void *arg)
{
    api_conns_t *cs = arg;
    log_thread_name("http", "accept");
    struct epoll_event evs[256];
    int wait_ms = 1000;
    while (!__atomic_load_n(&cs->stop, __ATOMIC_ACQUIRE)) {
        int n = epoll_wait(cs->epfd, evs, 256, wait_ms);
        for (int i = 0; i < n; i++) {
            void *p = evs[i].data.ptr;
            if (p == &cs->wake_fd) {
                uint64_t v;
                if (read(cs->wake_fd, &v, sizeof v) < 0) { /* EAGAIN: already drained */
                }
                continue;
            }
            if (p == &cs->cfg.listen_fd) {
                accept_all(cs, cs->cfg.listen_fd);
                continue;
            }
            api_conn_t *c = p;
            if (c->state != CONN_GATED) continue; /* closed earlier in this batch */
            int ready = gate_ready(cs, c->fd);
            if (ready > 0) {
                pthread_mutex_lock(&cs->mu);
                make_ready(cs, c);
                pthread_mutex_unlock(&cs->mu);
            } else if (ready < 0 || (evs[i].events & (EPOLLERR | EPOLLHUP))) {
                pthread_mutex_lock(&cs->mu);
                close_gated(cs, c);
                pthread_mutex_unlock(&cs->mu);
            }
        }
        wait_ms = reap(cs);
        int pump_ms = pump(cs);
        if (pump_ms < wait_ms) wait_ms = pump_ms;
        free_gone(cs);
    }
    return NULL;
}

int api_conns_new(const api_conns_config_t *cfg, api_conns_t **out)
{
    if (!cfg->max_connections || !cfg->max_unproven || cfg->header_timeout_s <= 0 ||
        cfg->listen_fd < 0) {
        if (cfg->listen_fd >= 0) close(cfg->listen_fd);
        return KP_EINVAL;
    }
    api_conns_t *cs = calloc(1, sizeof *cs);
    if (!cs) {
        close(cfg->listen_fd);
        return KP_ENOMEM;
    }
    cs->cfg = *cfg;
    q_init(&cs->gated);
    q_init(&cs->ready);
    q_init(&cs->unproven);
    pthread_mutex_init(&cs->mu, NULL);
    cs->epfd = epoll_create1(EPOLL_CLOEXEC);
    cs->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = &cs->cfg.listen_fd};
    struct epoll_event wev = {.events = EPOLLIN, .data.ptr = &cs->wake_fd};
    if (cs->epfd < 0 || cs->wake_fd < 0 ||
        epoll_ctl(cs->epfd, EPOLL_CTL_ADD, cfg->listen_fd, &lev) ||
        epoll_ctl(cs->epfd, EPOLL_CTL_ADD, cs->wake_fd, &wev)) {
        api_conns_free(cs);
        return KP_EIO;
    }
    *out = cs;
    return 0;
}

int api_conns_start(api_conns_t *cs, struct MHD_Daemon *daemon)
{
    cs->daemon = daemon;
    if (pthread_create(&cs->thread, NULL, loop_main, cs)) return KP_ENOMEM;
    cs->started = 1;
    return 0;
}

void api_conns_stop(api_conns_t *cs)
{
    if (!cs || !cs->started) return;
    __atomic_store_n(&cs->stop, 1, __ATOMIC_RELEASE);
    uint64_t one = 1;
    if (write(cs->wake_fd, &one, sizeof one) < 0) { /* the 1 s wait ends it too */
    }
    pthread_join(cs->thread, NULL);
    cs->started = 0;
    pthread_mutex_lock(&cs->mu);
    api_conn_t *c;
    while ((c = q_oldest(&cs->gated)) || (c = q_oldest(&cs->ready))) close_gated(cs, c);
    pthread_mutex_unlock(&cs->mu);
    free_gone(cs);
}

void api_conns_free(api_conns_t *cs)
{
    if (!cs) return;
    api_conns_stop(cs);
    /* Unproven entries belong to connections libmicrohttpd reports closed
     * when its daemon stops, which happens before this. */
    if (cs->epfd >= 0) close(cs->epfd);
    if (cs->wake_fd >= 0) close(cs->wake_fd);
    close(cs->cfg.listen_fd);
    while (cs->handing) /* handed over as the daemon stopped */
        free(handing_take(cs, cs->handing->fd, NULL));
    pthread_mutex_destroy(&cs->mu);
    free(cs);
}

void api_conns_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                      enum MHD_ConnectionNotificationCode toe)
{
    api_conns_t *cs = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        api_conn_t *c = calloc(1, sizeof *c);
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        pthread_mutex_lock(&cs->mu);
        cs->total++;
        if (c) {
            c->state = CONN_UNPROVEN;
            c->fd = ci ? ci->connect_fd : -1;
            c->start_ns = 0;
            free(handing_take(cs, c->fd, &c->start_ns));
            c->handed_ns = clock_mono_ns();
            c->rx = bytes_received(c->fd);
            c->rx_ns = c->handed_ns;
            if (!c->start_ns) c->start_ns = c->handed_ns;
            api_conn_t *old;
            if (cs->unproven.n >= cs->cfg.max_unproven && (old = q_oldest(&cs->unproven))) {
                close_unproven(cs, old);
                cs->st.overflow_closed++;
            }
            q_push(&cs->unproven, c);
        }
        pthread_mutex_unlock(&cs->mu);
        *socket_context = c;
        return;
    }
    api_conn_t *c = *socket_context;
    pthread_mutex_lock(&cs->mu);
    cs->total--;
    if (c && c->state == CONN_UNPROVEN) q_remove(&cs->unproven, c);
    place_freed(cs);
    pthread_mutex_unlock(&cs->mu);
    free(c);
    *socket_context = NULL;
}

void api_conns_prove(api_conns_t *cs, struct MHD_Connection *conn)
{
    if (!cs) return;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    api_conn_t *c = ci ? ci->socket_context : NULL;
    if (!c) return;
    pthread_mutex_lock(&cs->mu);
    if (c->state == CONN_UNPROVEN) {
        q_remove(&cs->unproven, c);
        c->state = CONN_PROVEN;
        place_freed(cs);
    }
    pthread_mutex_unlock(&cs->mu);
}

void api_conns_stats(api_conns_t *cs, api_conns_stats_t *out)
{
    pthread_mutex_lock(&cs->mu);
    *out = cs->st;
    out->open = cs->total;
    out->gated = cs->gated.n + cs->ready.n;
    out->unproven = cs->unproven.n;
    pthread_mutex_unlock(&cs->mu);
}
