/*
 * etcd_watch.c -- a store watch as one etcd Watch stream (see WATCHES and
 * PROGRESS in etcd_int.h).
 *
 * A keeper thread per watch owns the stream: it opens it on the current
 * endpoint's shared connection (grpc.h) with one create request
 * (start_revision = the revision read up to, plus one; prev_kv;
 * progress_notify; fragment), waits until it ends, and opens it again from
 * where it got to, with a backoff. Responses arrive on the connection's
 * thread (on_msg): each is decoded whole, its events queued for the
 * consumer, and the revision read up to moves to the response's header
 * revision (after the last fragment of a fragmented one). The keeper does
 * what touches the stream on others' behalf (releasing received bytes when
 * the consumer has drained the queue, sending progress requests), so that
 * only it, and the stream's own callbacks, ever use the stream.
 *
 * INVARIANTS (w->mu):
 *   1. Every event under the prefix with a revision in (after_rev, w->rev] is
 *      in the queue or was handed out; none above w->rev is. So a reconnect
 *      from w->rev + 1 loses nothing and repeats nothing.
 *   2. Events leave the queue in revision order (etcd sends them so).
 *   3. The consumer's position (store_watch_revision) is the revision before
 *      the queue's head, or w->rev when the queue is empty. If it is below a
 *      compaction point this handle knows, the watch fails with KP_ECOMPACTED
 *      for good: the unread history is gone in the store's terms, even if
 *      some of it is queued here (the embedded backend behaves the same).
 *   4. The queue holds about ETCD__WATCH_QUEUE_BYTES at most: past that the
 *      received bytes are not released to the stream's flow control, so etcd
 *      stops sending on this stream (others go on), until the consumer has
 *      drained half of it.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "etcd_int.h"
#include "store/etcd_pb.h"

typedef struct wev {
    struct wev *next;
    size_t bytes;
    store_event_t ev; /* its strings follow the struct */
} wev_t;

typedef struct etcd_watch {
    store_watch_t base;
    etcd_store_t *es;
    char key[STORE_KEY_MAX + 2], end[STORE_KEY_MAX + 2]; /* the range */
    size_t key_len, end_len;
    pthread_t thread;
    int thread_started;

    pthread_mutex_t mu; /* guards the fields up to `asked_ns` */
    pthread_cond_t cv;  /* events, failure, cancel, the stream's end, work for the keeper */
    wev_t *head, **tail;
    size_t queued; /* bytes in the queue */
    int64_t rev;   /* read up to (invariant 1) */
    int failed;    /* sticky error */
    int cancelled;
    size_t held;         /* received bytes not released to the stream (invariant 4) */
    int release_due;     /* the consumer drained the queue: the keeper releases `held` */
    int progress_due;    /* a progress request for the keeper to send */
    int ended;           /* the current stream is over (its on_end ran) */
    int created;         /* the current stream's watcher was created */
    int64_t asked_ns;    /* progress asked for and none came since (0: none) */
    atomic_int stopping; /* cancelled or failed: for the keeper's wait on es->leader_cv */

    /* the consumer's */
    int progress_on;
    int64_t reported; /* newest revision handed out as an event or progress */
    wev_t *cur;       /* the event handed out last */
    store_event_t tick;

    /* the stream's callbacks' (one at a time, on the connection's thread) */
    wev_t *frag, **frag_tail; /* events of a response still in fragments */
    size_t frag_bytes;
} etcd_watch_t;

static const store_watch_ops_t etcd_watch_ops;

static void free_list(wev_t *e)
{
    while (e) {
        wev_t *next = e->next;
        free(e);
        e = next;
    }
}

/* The keeper may wait on the store's condition (keeper_main): wake it too.
 * Locks es->mu, under w->mu or not (the order is w->mu, then es->mu). */
static void wake_keeper(etcd_watch_t *w)
{
    atomic_store(&w->stopping, 1);
    pthread_mutex_lock(&w->es->mu);
    pthread_cond_broadcast(&w->es->leader_cv);
    pthread_mutex_unlock(&w->es->mu);
}

static void fail_locked(etcd_watch_t *w, int rc)
{
    if (!w->failed) w->failed = rc;
    pthread_cond_broadcast(&w->cv);
    wake_keeper(w);
}

/* ---- the stream's callbacks ---- */

/* A kv into `kv`, its bytes at *p (advanced). */
static void put_kv(const etcd_pb_kv_t *src, int with_value, store_kv_t *kv, char **p)
{
    size_t vlen = with_value ? src->value_len : 0;
    char *k = *p, *v = k + src->key_len + 1;
    memcpy(k, src->key, src->key_len);
    k[src->key_len] = '\0';
    memcpy(v, src->value, vlen);
    v[vlen] = '\0';
    kv->key = k;
    kv->key_len = src->key_len;
    kv->value = v;
    kv->value_len = vlen;
    kv->mod_rev = src->mod_rev ? src->mod_rev - ETCD__REV_OFFSET : 0;
    if (with_value) {
        kv->create_rev = src->create_rev ? src->create_rev - ETCD__REV_OFFSET : 0;
        kv->version = src->version;
    }
    *p = v + vlen + 1;
}

static int on_event(void *arg, const etcd_pb_event_t *pe)
{
    etcd_watch_t *w = arg;
    int del = pe->type == ETCD_PB_EV_DELETE;
    size_t bytes = sizeof(wev_t) + pe->kv.key_len + (del ? 0 : pe->kv.value_len) + 2 +
                   (pe->has_prev ? pe->prev.key_len + pe->prev.value_len + 2 : 0);
    wev_t *e = calloc(1, bytes);
    if (!e) return KP_ENOMEM;
    e->bytes = bytes;
    char *p = (char *)(e + 1);
    store_event_t *ev = &e->ev;
    ev->type = del ? STORE_DELETE : STORE_PUT;
    put_kv(&pe->kv, !del, &ev->kv, &p);
    if (pe->has_prev) {
        ev->has_prev = 1;
        put_kv(&pe->prev, 1, &ev->prev, &p);
    }
    *w->frag_tail = e;
    w->frag_tail = &e->next;
    w->frag_bytes += bytes;
    return 0;
}

static void drop_frag(etcd_watch_t *w)
{
    free_list(w->frag);
    w->frag = NULL;
    w->frag_tail = &w->frag;
    w->frag_bytes = 0;
}

static void on_msg(void *arg, const uint8_t *p, size_t n)
{
    etcd_watch_t *w = arg;
    etcd_pb_watch_resp_t r;
    int rc = etcd_pb_watch_resp(p, n, &r, on_event, w);
    if (!rc) etcd__saw_term(w->es, r.h.raft_term); /* LEADER CHANGES */
    pthread_mutex_lock(&w->mu);
    w->held += n;
    if (w->queued < ETCD__WATCH_QUEUE_BYTES) w->release_due = 1; /* invariant 4 */
    if (rc) {
        /* Unreadable, or out of memory: this stream is no good; the keeper
         * opens another from w->rev (the fragments so far go). */
        drop_frag(w);
        log_warn("store", "etcd watch: a response could not be read (%s)", err_str(rc));
        w->ended = 1;
    } else if (r.created) {
        w->created = 1;
    } else if (r.canceled || r.compact_revision) {
        int64_t compact = r.compact_revision ? r.compact_revision - ETCD__REV_OFFSET : 0;
        if (compact) {
            etcd__note_compact(w->es, compact);
            fail_locked(w, KP_ECOMPACTED);
        } else {
            log_warn("store", "etcd watch cancelled: %.*s", (int)r.cancel_reason_len,
                     r.cancel_reason);
        }
        w->ended = 1;
    } else if (r.events) {
        if (!r.fragment) {
            if (w->frag) {
                *w->tail = w->frag;
                w->tail = w->frag_tail;
                w->queued += w->frag_bytes;
            }
            int64_t rev = r.h.revision - ETCD__REV_OFFSET;
            if (rev > w->rev) w->rev = rev;
            w->frag = NULL;
            w->frag_tail = &w->frag;
            w->frag_bytes = 0;
        }
    } else if (r.watch_id != -1 || w->es->progress_requests) {
        /* Progress: every event up to the header's revision was sent. A
         * timed notification carries the watcher's id; the answer to a
         * progress request carries -1 and is trusted only where etcd orders
         * it after the events (PROGRESS in etcd_int.h). */
        int64_t rev = r.h.revision - ETCD__REV_OFFSET;
        w->asked_ns = 0;
        if (rev > w->rev) w->rev = rev;
    }
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void on_end(void *arg, int rc, const grpc_status_t *st)
{
    etcd_watch_t *w = arg;
    pthread_mutex_lock(&w->mu);
    if (w->created && !w->cancelled && !w->failed) {
        if (rc)
            log_info("store", "etcd watch stream ended (%s); resuming", err_str(rc));
        else
            log_info("store", "etcd watch stream ended (status %d: %s); resuming",
                     st ? st->code : -1, st ? st->message : "");
    }
    w->ended = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* ---- the keeper thread ---- */

/* Run one stream from w->rev + 1 until it ends. Returns 1 if its watcher
 * was created (for the backoff). */
static int run_stream(etcd_watch_t *w)
{
    etcd_store_t *es = w->es;
    size_t idx = etcd__endpoint(es);
    etcd_conn_t *c;
    if (etcd__conn_get(es, idx, &c)) {
        etcd__endpoint_failed(es, idx);
        return 0;
    }
    pthread_mutex_lock(&w->mu);
    int64_t start = w->rev + 1 + ETCD__REV_OFFSET;
    w->ended = w->created = 0;
    w->held = 0;
    w->release_due = 0;
    pthread_mutex_unlock(&w->mu);

    buf_t req;
    buf_init(&req, (size_t)-1);
    grpc_stream_t *st = NULL;
    grpc_stream_cbs_t cbs = {.on_msg = on_msg, .on_end = on_end, .arg = w};
    int rc = etcd_pb_watch_create(&req, w->key, w->key_len, w->end, w->end_len, start, 1, 1);
    if (!rc) rc = grpc_stream_open(etcd__conn_grpc(c), "/etcdserverpb.Watch/Watch", &cbs, &st);
    if (!rc) rc = grpc_stream_send(st, req.p, req.len);
    pthread_mutex_lock(&w->mu);
    while (!rc && !w->ended && !w->cancelled && !w->failed) {
        size_t release = w->release_due ? w->held : 0;
        int progress = w->progress_due;
        w->held -= release;
        w->release_due = w->progress_due = 0;
        if (release || progress) {
            pthread_mutex_unlock(&w->mu);
            if (release) grpc_stream_release(st, release);
            if (progress) {
                buf_reset(&req);
                if (!etcd_pb_watch_progress(&req)) grpc_stream_send(st, req.p, req.len);
            }
            pthread_mutex_lock(&w->mu);
            continue;
        }
        pthread_cond_wait(&w->cv, &w->mu);
    }
    int created = w->created, quiet = w->cancelled || w->failed;
    pthread_mutex_unlock(&w->mu);
    grpc_stream_close(st); /* no callback runs after it */
    buf_free(&req);
    drop_frag(w); /* a response cut short: read again after reconnecting */
    if (!quiet) {
        if (grpc_conn_error(etcd__conn_grpc(c))) etcd__conn_failed(es, idx, c);
        etcd__endpoint_failed(es, idx);
    }
    etcd__conn_put(es, c);
    return created;
}

static void *keeper_main(void *arg)
{
    etcd_watch_t *w = arg;
    int backoff = ETCD__WATCH_RETRY_MS;
    for (;;) {
        if (run_stream(w)) backoff = ETCD__WATCH_RETRY_MS;
        /* Wait out the backoff, but go at once when a call reaches etcd
         * again after calls failed (es->contact_gen, told on
         * es->leader_cv): the watch cache is stale only as long as its
         * watch is away. */
        etcd_store_t *es = w->es;
        pthread_mutex_lock(&es->mu);
        uint64_t gen = es->contact_gen;
        struct timespec ts = clock_deadline_ms(backoff);
        while (es->contact_gen == gen && !atomic_load(&w->stopping) &&
               pthread_cond_timedwait(&es->leader_cv, &es->mu, &ts) != ETIMEDOUT)
            ;
        pthread_mutex_unlock(&es->mu);
        pthread_mutex_lock(&w->mu);
        int stop = w->cancelled || w->failed;
        pthread_mutex_unlock(&w->mu);
        if (stop) break;
        if (backoff < ETCD__WATCH_RETRY_MAX_MS) backoff *= 2;
        if (backoff > ETCD__WATCH_RETRY_MAX_MS) backoff = ETCD__WATCH_RETRY_MAX_MS;
    }
    return NULL;
}

/* ---- the consumer ---- */

static int64_t position_locked(const etcd_watch_t *w)
{
    return w->head ? w->head->ev.kv.mod_rev - 1 : w->rev;
}

static int etcd_watch_next(store_watch_t *sw, int timeout_ms, const store_event_t **ev)
{
    etcd_watch_t *w = (etcd_watch_t *)sw;
    free(w->cur);
    w->cur = NULL;
    struct timespec deadline = clock_deadline_ms(timeout_ms > 0 ? timeout_ms : 0);
    pthread_mutex_lock(&w->mu);
    int rc;
    for (;;) {
        if (w->cancelled) {
            rc = KP_ECLOSED;
            break;
        }
        pthread_mutex_lock(&w->es->mu);
        int64_t compact = w->es->compact;
        pthread_mutex_unlock(&w->es->mu);
        if (position_locked(w) < compact) fail_locked(w, KP_ECOMPACTED); /* invariant 3 */
        if (w->failed == KP_ECOMPACTED) {
            rc = w->failed;
            break;
        }
        if (w->head) {
            wev_t *e = w->head;
            if (!(w->head = e->next)) w->tail = &w->head;
            w->queued -= e->bytes;
            w->cur = e;
            w->reported = e->ev.kv.mod_rev;
            *ev = &e->ev;
            rc = 0;
            if (w->held && w->queued < ETCD__WATCH_QUEUE_BYTES / 2 && !w->release_due) {
                w->release_due = 1; /* invariant 4: the keeper opens the window */
                pthread_cond_broadcast(&w->cv);
            }
            break;
        }
        if (w->progress_on && w->rev > w->reported) {
            w->reported = w->rev;
            w->tick = (store_event_t){.type = STORE_PROGRESS, .kv = {.key = "", .value = ""}};
            w->tick.kv.mod_rev = w->rev;
            *ev = &w->tick;
            rc = 0;
            break;
        }
        if (w->failed) {
            rc = w->failed;
            break;
        }
        if (timeout_ms == 0 ||
            (timeout_ms > 0 && pthread_cond_timedwait(&w->cv, &w->mu, &deadline) == ETIMEDOUT)) {
            rc = KP_ETIMEDOUT;
            break;
        }
        if (timeout_ms < 0) pthread_cond_wait(&w->cv, &w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return rc;
}

static int64_t etcd_watch_revision(const store_watch_t *sw)
{
    etcd_watch_t *w = (etcd_watch_t *)sw;
    pthread_mutex_lock(&w->mu);
    int64_t rev = position_locked(w);
    pthread_mutex_unlock(&w->mu);
    return rev;
}

static void etcd_watch_progress(store_watch_t *sw, int on)
{
    etcd_watch_t *w = (etcd_watch_t *)sw;
    pthread_mutex_lock(&w->mu);
    w->progress_on = on;
    w->reported = w->rev;
    pthread_mutex_unlock(&w->mu);
}

/* Where etcd orders the answer (PROGRESS in etcd_int.h), a progress request
 * on the stream, sent by the keeper. Elsewhere progress comes from the
 * server's timed notifications only, and this tells the operator, once,
 * when those do not come within ETCD__PROGRESS_WARN_MS of a request
 * (etcd's default interval is 10 minutes). */
static void etcd_watch_request_progress(store_watch_t *sw)
{
    etcd_watch_t *w = (etcd_watch_t *)sw;
    int64_t now = clock_mono_ns();
    pthread_mutex_lock(&w->mu);
    if (w->es->progress_requests && !w->progress_due) {
        w->progress_due = 1;
        pthread_cond_broadcast(&w->cv);
    }
    int late = w->asked_ns && now - w->asked_ns > (int64_t)ETCD__PROGRESS_WARN_MS * 1000000;
    if (!w->asked_ns) w->asked_ns = now;
    pthread_mutex_unlock(&w->mu);
    if (!late || w->es->progress_requests) return;
    pthread_mutex_lock(&w->es->mu);
    int first = !w->es->warned_progress;
    w->es->warned_progress = 1;
    pthread_mutex_unlock(&w->es->mu);
    if (first)
        log_warn("store", "etcd sends no watch progress notifications: run it with "
                          "--experimental-watch-progress-notify-interval=100ms, or consistent "
                          "reads of quiet resources wait for the next one");
}

static void etcd_watch_cancel(store_watch_t *sw)
{
    etcd_watch_t *w = (etcd_watch_t *)sw;
    pthread_mutex_lock(&w->mu);
    w->cancelled = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    wake_keeper(w);
}

static void etcd_watch_close(store_watch_t *sw)
{
    etcd_watch_t *w = (etcd_watch_t *)sw;
    etcd_watch_cancel(sw);
    if (w->thread_started) pthread_join(w->thread, NULL);
    free_list(w->head);
    free(w->cur);
    drop_frag(w);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

int etcd__watch_open(store_t *s, const char *prefix, int64_t after_rev, store_watch_t **out)
{
    etcd_store_t *es = (etcd_store_t *)s;
    /* The contract's errors come now, not from the stream: the revision
     * must be readable (not compacted, not in the future). */
    int rc = after_rev < 0 ? etcd__current_rev(es, &after_rev) : etcd__check_rev(es, after_rev);
    if (rc) return rc;
    if (strlen(prefix) > STORE_KEY_MAX) return KP_EINVAL;

    etcd_watch_t *w = calloc(1, sizeof *w);
    if (!w) return KP_ENOMEM;
    w->base.ops = &etcd_watch_ops;
    w->es = es;
    w->tail = &w->head;
    w->frag_tail = &w->frag;
    w->rev = w->reported = after_rev;
    pthread_mutex_init(&w->mu, NULL);
    if ((rc = clock_cond_init(&w->cv))) {
        pthread_mutex_destroy(&w->mu);
        free(w);
        return rc;
    }
    w->key_len = strlen(prefix);
    memcpy(w->key, prefix, w->key_len);
    if (!w->key_len) w->key[w->key_len++] = '\0'; /* every key */
    etcd__prefix_end(prefix, w->end, &w->end_len);
    if (pthread_create(&w->thread, NULL, keeper_main, w)) {
        etcd_watch_close(&w->base);
        return KP_ENOMEM;
    }
    w->thread_started = 1;
    *out = &w->base;
    return 0;
}

static const store_watch_ops_t etcd_watch_ops = {
    .next = etcd_watch_next,
    .revision = etcd_watch_revision,
    .progress = etcd_watch_progress,
    .request_progress = etcd_watch_request_progress,
    .cancel = etcd_watch_cancel,
    .close = etcd_watch_close,
};
