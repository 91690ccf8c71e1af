/*
 * etcd_watch.c -- a store watch as one etcd /v3/watch stream (see WATCHES and
 * PROGRESS in etcd_int.h).
 *
 * A reader thread per watch owns the stream: a curl easy handle in a multi
 * handle of its own, so that cancel() and a draining consumer wake it with
 * curl_multi_wakeup(). The request body is the create request alone
 * (start_revision = the revision read up to, plus one; prev_kv;
 * progress_notify; fragment): etcd's gateway answers a stream only once its
 * request body has ended (Go's HTTP/1 server drains the body before the first
 * response), so nothing can follow it. Each JSON response is parsed whole,
 * its events are queued for the consumer, and the revision read up to moves
 * to the response's header revision (after the last fragment of a
 * fragmented one).
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
 *   4. The queue holds at most ETCD__WATCH_QUEUE_BYTES: past that the reader
 *      pauses the stream (TCP pushes back to etcd) until the consumer drains.
 */
#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "etcd_int.h"

typedef struct wev {
    struct wev *next;
    size_t bytes;
    store_event_t ev; /* its strings follow the struct */
} wev_t;

typedef struct etcd_watch {
    store_watch_t base;
    etcd_store_t *es;
    json_t *key, *end; /* base64 strings of the range */
    pthread_t thread;
    int thread_started;
    CURLM *multi;

    pthread_mutex_t mu; /* guards the fields up to `asked_ns` */
    pthread_cond_t cv;  /* events, failure, cancel; CLOCK_MONOTONIC */
    wev_t *head, **tail;
    size_t queued;      /* bytes in the queue */
    int64_t rev;        /* read up to (invariant 1) */
    int failed;         /* sticky error */
    int cancelled;
    int paused;         /* the reader stopped receiving: queue full */
    int64_t asked_ns;   /* progress asked for and none came since (0: none) */

    /* the consumer's */
    int progress_on;
    int64_t reported;   /* newest revision handed out as an event or progress */
    wev_t *cur;         /* the event handed out last */
    store_event_t tick;

    /* the reader thread's */
    CURL *h;
    buf_t line;
    wev_t *frag, **frag_tail; /* events of a response still in fragments */
    size_t frag_bytes;
    int recv_paused;
    int created;
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

/* ---- the reader thread ---- */

/* Decode one kv into `kv`, its bytes at *p (advanced). */
static void put_kv(const char *key, size_t klen, const char *val, size_t vlen, store_kv_t *kv,
                   char **p)
{
    char *k = *p, *v = k + klen + 1;
    memcpy(k, key, klen + 1);
    memcpy(v, val, vlen + 1);
    kv->key = k;
    kv->key_len = klen;
    kv->value = v;
    kv->value_len = vlen;
    *p = v + vlen + 1;
}

static int parse_event(const json_t *je, wev_t **out)
{
    const json_t *kv = json_object_get(je, "kv"), *pkv = json_object_get(je, "prev_kv");
    const char *type = json_string_value(json_object_get(je, "type"));
    int del = type && !strcmp(type, "DELETE");
    char *k = NULL, *v = NULL, *pk = NULL, *pv = NULL;
    size_t kl = 0, vl = 0, pkl = 0, pvl = 0;
    int rc = etcd__bytes(kv, "key", &k, &kl);
    if (!rc) rc = etcd__bytes(kv, "value", &v, &vl);
    if (!rc && pkv) rc = etcd__bytes(pkv, "key", &pk, &pkl);
    if (!rc && pkv) rc = etcd__bytes(pkv, "value", &pv, &pvl);
    wev_t *e = NULL;
    if (!rc) {
        size_t bytes = sizeof *e + kl + vl + 2 + (pkv ? pkl + pvl + 2 : 0);
        if (!(e = calloc(1, bytes))) {
            rc = KP_ENOMEM;
        } else {
            e->bytes = bytes;
            char *p = (char *)(e + 1);
            store_event_t *ev = &e->ev;
            ev->type = del ? STORE_DELETE : STORE_PUT;
            put_kv(k, kl, del ? "" : v, del ? 0 : vl, &ev->kv, &p);
            ev->kv.create_rev = del ? 0 : etcd__rev(kv, "create_revision");
            ev->kv.mod_rev = etcd__rev(kv, "mod_revision");
            ev->kv.version = del ? 0 : etcd__int(kv, "version");
            if (pkv) {
                ev->has_prev = 1;
                put_kv(pk, pkl, pv, pvl, &ev->prev, &p);
                ev->prev.create_rev = etcd__rev(pkv, "create_revision");
                ev->prev.mod_rev = etcd__rev(pkv, "mod_revision");
                ev->prev.version = etcd__int(pkv, "version");
            }
            *out = e;
        }
    }
    free(k);
    free(v);
    free(pk);
    free(pv);
    return rc;
}

static void fail_locked(etcd_watch_t *w, int rc)
{
    if (!w->failed) w->failed = rc;
    pthread_cond_broadcast(&w->cv);
}

/* One JSON response. Returns 0, or an error that ends this stream (the
 * thread reconnects unless the watch failed for good). */
static int on_response(etcd_watch_t *w, const char *p, size_t n)
{
    json_error_t jerr;
    json_t *j = json_loadb(p, n, 0, &jerr);
    json_t *res = json_object_get(j, "result");
    int rc = 0;
    if (!res) {
        json_t *err = json_object_get(j, "error");
        const char *msg = json_string_value(json_object_get(err, "message"));
        log_warn("store", "etcd watch: %s", msg ? msg : "unreadable response");
        json_decref(j);
        return KP_EUNAVAILABLE;
    }
    int64_t rev = etcd__header_rev(res) - ETCD__REV_OFFSET;
    int64_t compact = etcd__rev(res, "compact_revision");
    json_t *evs = json_object_get(res, "events");
    if (json_is_true(json_object_get(res, "created"))) {
        w->created = 1;
    } else if (json_is_true(json_object_get(res, "canceled")) || compact) {
        pthread_mutex_lock(&w->mu);
        if (compact) {
            etcd__note_compact(w->es, compact);
            fail_locked(w, KP_ECOMPACTED);
        }
        pthread_mutex_unlock(&w->mu);
        const char *why = json_string_value(json_object_get(res, "cancel_reason"));
        if (!compact) log_warn("store", "etcd watch cancelled: %s", why ? why : "?");
        rc = compact ? KP_ECOMPACTED : KP_EUNAVAILABLE;
    } else if (json_array_size(evs)) {
        for (size_t i = 0; !rc && i < json_array_size(evs); i++) {
            wev_t *e = NULL;
            if ((rc = parse_event(json_array_get(evs, i), &e))) break;
            *w->frag_tail = e;
            w->frag_tail = &e->next;
            w->frag_bytes += e->bytes;
        }
        if (!rc && !json_is_true(json_object_get(res, "fragment"))) {
            pthread_mutex_lock(&w->mu);
            if (w->frag) {
                *w->tail = w->frag;
                w->tail = w->frag_tail;
                w->queued += w->frag_bytes;
            }
            if (rev > w->rev) w->rev = rev;
            pthread_cond_broadcast(&w->cv);
            pthread_mutex_unlock(&w->mu);
            w->frag = NULL;
            w->frag_tail = &w->frag;
            w->frag_bytes = 0;
        }
    } else if (etcd__int(res, "watch_id") != -1) {
        /* A timed progress notification: every event up to `rev` was sent
         * (a reply to a progress request, watch_id -1, is not ordered so in
         * etcd before 3.4.31 / 3.5.13, see PROGRESS). */
        pthread_mutex_lock(&w->mu);
        w->asked_ns = 0;
        if (rev > w->rev) {
            w->rev = rev;
            pthread_cond_broadcast(&w->cv);
        }
        pthread_mutex_unlock(&w->mu);
    }
    json_decref(j);
    return rc;
}

static size_t on_recv(char *p, size_t size, size_t n, void *arg)
{
    etcd_watch_t *w = arg;
    size_t total = size * n;
    pthread_mutex_lock(&w->mu);
    int full = w->queued >= ETCD__WATCH_QUEUE_BYTES;
    if (full) w->paused = 1;
    pthread_mutex_unlock(&w->mu);
    if (full) {
        w->recv_paused = 1;
        return CURL_WRITEFUNC_PAUSE; /* curl keeps the data for later */
    }
    size_t start = 0;
    for (size_t i = 0; i < total; i++) {
        if (p[i] != '\n') continue;
        const char *line = p + start;
        size_t len = i - start;
        if (w->line.len) {
            if (buf_append(&w->line, line, len)) return 0;
            line = w->line.p;
            len = w->line.len;
        }
        int rc = len ? on_response(w, line, len) : 0;
        buf_reset(&w->line);
        start = i + 1;
        if (rc) return 0; /* ends the transfer */
    }
    if (start < total && buf_append(&w->line, p + start, total - start)) return 0;
    return total;
}

/* Run one stream from w->rev + 1 until it ends. Returns 1 if it delivered
 * anything (for the backoff). */
static int run_stream(etcd_watch_t *w)
{
    etcd_store_t *es = w->es;
    char *base, url[512], start[32];
    size_t idx = etcd__endpoint(es, &base);
    snprintf(url, sizeof url, "%s/v3/watch", base);
    pthread_mutex_lock(&w->mu);
    snprintf(start, sizeof start, "%lld", (long long)(w->rev + 1 + ETCD__REV_OFFSET));
    pthread_mutex_unlock(&w->mu);

    json_t *req = json_pack("{s:{s:O,s:O,s:s,s:b,s:b,s:b}}", "create_request", "key", w->key,
                            "range_end", w->end, "start_revision", start, "prev_kv", 1,
                            "progress_notify", 1, "fragment", 1);
    char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (!text) return 0;

    w->created = 0;
    w->recv_paused = 0;
    buf_reset(&w->line);
    struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    struct curl_slist *t = hdrs ? curl_slist_append(hdrs, "Expect:") : NULL;
    CURL *h = t ? curl_easy_init() : NULL;
    if (!h) {
        curl_slist_free_all(hdrs);
        free(text);
        return 0;
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, text);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_recv);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, w);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)ETCD__CONNECT_MS);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 10L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 5L);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    w->h = h;
    curl_multi_add_handle(w->multi, h);

    CURLcode result = CURLE_OK;
    for (int running = 1; running;) {
        pthread_mutex_lock(&w->mu);
        int stop = w->cancelled || w->failed;
        int drain = w->paused && w->queued < ETCD__WATCH_QUEUE_BYTES / 2;
        if (drain) w->paused = 0;
        pthread_mutex_unlock(&w->mu);
        if (stop) break;
        if (drain && w->recv_paused) {
            w->recv_paused = 0;
            curl_easy_pause(h, CURLPAUSE_CONT);
        }
        if (curl_multi_perform(w->multi, &running) != CURLM_OK) break;
        int left;
        CURLMsg *m;
        while ((m = curl_multi_info_read(w->multi, &left)))
            if (m->msg == CURLMSG_DONE) result = m->data.result;
        if (running) curl_multi_poll(w->multi, NULL, 0, 1000, NULL);
    }
    curl_multi_remove_handle(w->multi, h);
    curl_easy_cleanup(h);
    curl_slist_free_all(hdrs);
    free(text);
    w->h = NULL;
    free_list(w->frag); /* a response cut short: read again after reconnecting */
    w->frag = NULL;
    w->frag_tail = &w->frag;
    w->frag_bytes = 0;

    pthread_mutex_lock(&w->mu);
    int quiet = w->cancelled || w->failed;
    pthread_mutex_unlock(&w->mu);
    if (!quiet) {
        /* Once per outage, not once per retry. */
        if (w->created)
            log_info("store", "etcd watch stream to %s ended (%s); resuming", base,
                     result ? curl_easy_strerror(result) : "closed");
        else
            log_debug("store", "etcd watch stream to %s: %s", base,
                      result ? curl_easy_strerror(result) : "closed");
        etcd__endpoint_failed(es, idx);
    }
    return w->created;
}

static void *reader_main(void *arg)
{
    etcd_watch_t *w = arg;
    int backoff = ETCD__WATCH_RETRY_MS;
    for (;;) {
        if (run_stream(w)) backoff = ETCD__WATCH_RETRY_MS;
        pthread_mutex_lock(&w->mu);
        struct timespec ts = clock_deadline_ms(backoff);
        while (!w->cancelled && !w->failed &&
               pthread_cond_timedwait(&w->cv, &w->mu, &ts) != ETIMEDOUT)
            ;
        int stop = w->cancelled || w->failed;
        pthread_mutex_unlock(&w->mu);
        if (stop) break;
        if (backoff < 5000) backoff *= 2;
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
            if (w->paused) curl_multi_wakeup(w->multi);
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

/* etcd's progress requests travel on the watch stream's request body, which
 * the JSON gateway cannot keep open (see PROGRESS in etcd_int.h): progress
 * comes from the server's timed notifications only. What this can do is tell
 * the operator, once, when those do not come within ETCD__PROGRESS_WARN_MS
 * of a request (etcd's default interval is 10 minutes). */
static void etcd_watch_request_progress(store_watch_t *sw)
{
    etcd_watch_t *w = (etcd_watch_t *)sw;
    int64_t now = clock_mono_ns();
    pthread_mutex_lock(&w->mu);
    int late = w->asked_ns && now - w->asked_ns > (int64_t)ETCD__PROGRESS_WARN_MS * 1000000;
    if (!w->asked_ns) w->asked_ns = now;
    pthread_mutex_unlock(&w->mu);
    if (!late) return;
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
    curl_multi_wakeup(w->multi);
}

static void etcd_watch_close(store_watch_t *sw)
{
    etcd_watch_t *w = (etcd_watch_t *)sw;
    etcd_watch_cancel(sw);
    if (w->thread_started) pthread_join(w->thread, NULL);
    curl_multi_cleanup(w->multi);
    free_list(w->head);
    free(w->cur);
    buf_free(&w->line);
    json_decref(w->key);
    json_decref(w->end);
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

    etcd_watch_t *w = calloc(1, sizeof *w);
    if (!w) return KP_ENOMEM;
    w->base.ops = &etcd_watch_ops;
    w->es = es;
    w->tail = &w->head;
    w->frag_tail = &w->frag;
    w->rev = w->reported = after_rev;
    buf_init(&w->line, ETCD__WATCH_LINE_MAX);
    pthread_mutex_init(&w->mu, NULL);
    if ((rc = clock_cond_init(&w->cv))) {
        pthread_mutex_destroy(&w->mu);
        free(w);
        return rc;
    }
    char start[STORE_KEY_MAX + 2], end[STORE_KEY_MAX + 2];
    size_t start_len = strlen(prefix), end_len;
    memcpy(start, prefix, start_len);
    if (!start_len) start[start_len++] = '\0'; /* every key */
    etcd__prefix_end(prefix, end, &end_len);
    w->key = etcd__b64(start, start_len);
    w->end = etcd__b64(end, end_len);
    w->multi = curl_multi_init();
    if (!w->key || !w->end || !w->multi) {
        etcd_watch_close(&w->base);
        return KP_ENOMEM;
    }
    if (pthread_create(&w->thread, NULL, reader_main, w)) {
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
