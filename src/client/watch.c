/*
 * watch.c -- one watch stream: a streaming GET (?watch=1) whose body is
 * newline-delimited JSON events, read on demand by kc_watch_next().
 *
 * Why a multi handle for one transfer: curl_easy_perform() would block in
 * curl until the stream ends. Driving the easy handle from a private CURLM
 * lets next() wait with a deadline (curl_multi_poll) and lets
 * kc_watch_cancel() wake that wait from any thread (curl_multi_wakeup).
 *
 * Data flow: curl_multi_perform() calls on_data() with whatever bytes
 * arrived; on_data() cuts them into lines (a line may span many calls; one
 * line is capped at KC_WATCH_LINE_MAX), parses each line into an event and
 * appends it to w->q. next() pops from w->q and only reads the socket when
 * the queue is empty, so the queue holds at most what one perform read.
 *
 * Invariants:
 *  1. Events leave in the order their lines arrived; an ERROR event, an
 *     unparsable line or an over-long line becomes an error entry in the
 *     queue, after the events before it, and nothing after it is queued
 *     (w->fed_stop).
 *  2. Once next() returns an error other than KP_ETIMEDOUT it returns that
 *     same error forever (w->err is sticky); a cancelled watch returns
 *     KP_ECLOSED.
 *  3. kc_watch_open() returns a watch only after the answer's headers said
 *     200; any other answer is mapped as client.h says and nothing is left.
 *     When no answer came (no connection, or none in time) it tries the
 *     client's next API server (a watch is a GET), each server once.
 *
 * Threads: one thread uses a watch at a time; kc_watch_cancel() may run on
 * any thread while that thread is in next() (it touches only the atomic
 * flag and curl_multi_wakeup(), which libcurl makes thread-safe).
 */
#include <stdlib.h>
#include <string.h>

#include "client/client_int.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/jsonspan.h"
#include "lib/log.h"

#define KC_WATCH_LINE_MAX    (64u << 20) /* one event line */
#define KC_WATCH_ERRBODY_MAX (1u << 20)  /* the body of a non-200 answer */
#define KC_WATCH_SLACK_S     30          /* client-side end after timeout_s + this */

typedef struct wevent {
    kc_event_type_t type;
    json_t *obj; /* owned */
    int err;     /* non-zero: an error entry (obj NULL) */
} wevent_t;

struct kc_watch {
    kc_client_t *c;
    CURLM *m;
    CURL *h;
    struct curl_slist *hdrs;
    char *url;

    long code;        /* the final HTTP status, once the headers are in */
    int headers_done; /* the header block of a final (non-1xx) answer ended */
    buf_t line;       /* the unfinished line */
    buf_t errbody;    /* the body of a non-200 answer */
    wevent_t *q;      /* the FIFO: entries qhead..qlen-1 are pending */
    size_t qhead, qlen, qcap;
    int fed_stop; /* an error entry is queued: ignore the rest */
    int flags;    /* KC__WATCH_* */
    int done;     /* the transfer ended, with `result` */
    CURLcode result;
    int err; /* sticky error (invariant 2) */
    atomic_int cancelled;
};

/* ---- the parser, run inside curl_multi_perform() ---- */

static int push(kc_watch_t *w, kc_event_type_t type, json_t *obj, int err)
{
    if (w->qhead == w->qlen) w->qhead = w->qlen = 0;
    if (w->qlen == w->qcap) {
        size_t cap = w->qcap ? w->qcap * 2 : 16;
        wevent_t *q = realloc(w->q, cap * sizeof *q);
        if (!q) {
            json_decref(obj);
            w->err = KP_ENOMEM; /* next() reports it before the queue */
            w->fed_stop = 1;
            return KP_ENOMEM;
        }
        w->q = q;
        w->qcap = cap;
    }
    w->q[w->qlen++] = (wevent_t){type, obj, err};
    if (err) w->fed_stop = 1;
    return 0;
}

size_t kc__drop_managed_fields(const char *s, size_t n, char **cut)
{
    const char *end = s + n, *ob, *oe, *mb, *me, *kb, *vb, *ve;
    *cut = NULL;
    if (jspan_member(s, end, "object", NULL, &ob, &oe) ||
        jspan_member(ob, oe, "metadata", NULL, &mb, &me) ||
        jspan_member(mb, me, "managedFields", &kb, &vb, &ve))
        return 0;
    const char *from = kb, *to = jspan_ws(ve, me);
    if (to < me && *to == ',') {
        to++;
    } else {
        while (from > mb && from[-1] != ',' && from[-1] != '{')
            from--;
        if (from > mb && from[-1] == ',') from--;
        to = ve;
    }
    size_t left = (size_t)(from - s), right = (size_t)(end - to);
    if (!(*cut = malloc(left + right))) return 0;
    memcpy(*cut, s, left);
    memcpy(*cut + left, to, right);
    return left + right;
}

static void feed_line(kc_watch_t *w, const char *s, size_t n)
{
    while (n && (s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (!n) return;
    char *cut = NULL;
    if (w->flags & KC__WATCH_DROP_MANAGED_FIELDS) {
        size_t m = kc__drop_managed_fields(s, n, &cut);
        if (cut) s = cut, n = m;
    }
    json_error_t jerr;
    json_t *ev = json_loadb(s, n, 0, &jerr);
    free(cut);
    const char *type = json_string_value(json_object_get(ev, "type"));
    json_t *obj = json_object_get(ev, "object");
    if (!type || !json_is_object(obj)) {
        log_warn("client", "watch %s: malformed event: %s", w->url,
                 ev ? "no type or object" : jerr.text);
        push(w, 0, NULL, KP_ECORRUPT);
    } else if (!strcmp(type, "ERROR")) {
        json_int_t code = json_integer_value(json_object_get(obj, "code"));
        log_debug("client", "watch %s: ERROR %lld: %s", w->url, (long long)code,
                  json_string_value(json_object_get(obj, "message")));
        push(w, 0, NULL, code == 410 ? KP_ECOMPACTED : KP_EUNAVAILABLE);
    } else {
        kc_event_type_t t = !strcmp(type, "ADDED")      ? KC_ADDED
                            : !strcmp(type, "MODIFIED") ? KC_MODIFIED
                            : !strcmp(type, "DELETED")  ? KC_DELETED
                            : !strcmp(type, "BOOKMARK") ? KC_BOOKMARK
                                                        : 0;
        if (t) push(w, t, json_incref(obj), 0); /* unknown types: skipped */
    }
    json_decref(ev);
}

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
    kc_watch_t *w = arg;
    size_t len = size * n;
    if (w->code != 200) {
        /* A Status; what passes the cap is dropped, not an error. */
        size_t room = KC_WATCH_ERRBODY_MAX - w->errbody.len;
        if (buf_append(&w->errbody, p, len < room ? len : room)) return 0;
        return len;
    }
    while (len && !w->fed_stop) {
        const char *nl = memchr(p, '\n', len);
        size_t seg = nl ? (size_t)(nl - p) : len;
        if (!nl || w->line.len) {
            int rc = buf_append(&w->line, p, seg);
            if (rc) {
                log_warn("client", "watch %s: an event line over %u bytes", w->url,
                         KC_WATCH_LINE_MAX);
                push(w, 0, NULL, rc);
                break;
            }
        }
        if (!nl) break;
        if (w->line.len) {
            feed_line(w, w->line.p, w->line.len);
            buf_reset(&w->line);
        } else {
            feed_line(w, p, seg);
        }
        p += seg + 1;
        len -= seg + 1;
    }
    return size * n; /* after fed_stop the rest is read and dropped */
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    kc_watch_t *w = arg;
    size_t len = size * n;
    if (len <= 2 && (p[0] == '\r' || p[0] == '\n')) {
        long code = 0;
        curl_easy_getinfo(w->h, CURLINFO_RESPONSE_CODE, &code);
        if (code >= 200) { /* a 1xx block is followed by the real one */
            w->code = code;
            w->headers_done = 1;
        }
    }
    return len;
}

/* ---- driving the transfer ---- */

/* Read what is there (no waiting); note the end of the transfer. */
static void perform(kc_watch_t *w)
{
    int running = 0;
    CURLMcode mc = curl_multi_perform(w->m, &running);
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(w->m, &left)))
        if (msg->msg == CURLMSG_DONE) {
            w->done = 1;
            w->result = msg->data.result;
        }
    if (mc != CURLM_OK && !w->done) {
        w->done = 1;
        w->result = mc == CURLM_OUT_OF_MEMORY ? CURLE_OUT_OF_MEMORY : CURLE_RECV_ERROR;
    }
}

static int ready(const kc_watch_t *w)
{
    return w->qhead < w->qlen || w->done || w->err;
}

/* Wait for socket activity (or a wakeup) at most ms. */
static void poll_ms(kc_watch_t *w, int64_t ms)
{
    if (ms > 1000) ms = 1000; /* bounded waits, so curl's own timers run */
    curl_multi_poll(w->m, NULL, 0, (int)ms, NULL);
}

/* Run the transfer until cond(w) or the deadline (mono ns). */
static void run_until(kc_watch_t *w, int (*cond)(const kc_watch_t *), int64_t deadline)
{
    for (;;) {
        perform(w);
        if (cond(w) || w->done || atomic_load(&w->cancelled)) return;
        int64_t left = (deadline - clock_mono_ns()) / 1000000;
        if (left <= 0) return;
        poll_ms(w, left);
    }
}

static int headers_in(const kc_watch_t *w)
{
    return w->headers_done;
}
static int never(const kc_watch_t *w)
{
    return (void)w, 0;
}

/* Why a finished stream ended. */
static int end_error(kc_watch_t *w)
{
    if (w->result == CURLE_OK || w->result == CURLE_OPERATION_TIMEDOUT) {
        /* A last line without its newline still counts. */
        if (w->line.len && !w->fed_stop) {
            feed_line(w, w->line.p, w->line.len);
            buf_reset(&w->line);
            if (w->qhead < w->qlen) return 0;
        }
        return KP_ECLOSED; /* the server's timeoutSeconds, or ours */
    }
    log_debug("client", "watch %s: %s", w->url, curl_easy_strerror(w->result));
    return w->result == CURLE_OUT_OF_MEMORY ? KP_ENOMEM : KP_EUNAVAILABLE;
}

static void watch_free(kc_watch_t *w)
{
    if (!w) return;
    if (w->m && w->h) curl_multi_remove_handle(w->m, w->h);
    if (w->h) curl_easy_cleanup(w->h);
    if (w->m) curl_multi_cleanup(w->m);
    curl_slist_free_all(w->hdrs);
    for (size_t i = w->qhead; i < w->qlen; i++)
        json_decref(w->q[i].obj);
    free(w->q);
    buf_free(&w->line);
    buf_free(&w->errbody);
    free(w->url);
    free(w);
}

/* ?watch=1&allowWatchBookmarks=true[&resourceVersion=..][&timeoutSeconds=..][&query] */
static int watch_query(buf_t *b, const char *query, const char *rv, int timeout_s)
{
    buf_init(b, KC__URL_MAX);
    int rc = buf_append(b, "watch=1&allowWatchBookmarks=true", 32);
    if (!rc && rv && *rv) {
        rc = buf_append(b, "&resourceVersion=", 17);
        if (!rc) rc = kc__escape(b, rv);
    }
    if (!rc && timeout_s > 0) {
        char t[40];
        int n = snprintf(t, sizeof t, "&timeoutSeconds=%d", timeout_s);
        rc = buf_append(b, t, (size_t)n);
    }
    if (!rc && query && *query) {
        rc = buf_append(b, "&", 1);
        if (!rc) rc = buf_append(b, query, strlen(query));
    }
    if (rc) buf_free(b);
    return rc;
}

/* Open the watch `path` on server idx; *conn says whether it failed for
 * want of a connection (then the caller tries the next server). */
static int watch_try(kc_client_t *c, const char *path, size_t idx, int timeout_s, int flags,
                     kc_watch_t **out, int *conn)
{
    *out = NULL;
    *conn = 0;
    int rc;
    kc_watch_t *w = calloc(1, sizeof *w);
    if (!w) return KP_ENOMEM;
    if (!(w->url = kc__full_url(c, idx, path))) {
        free(w);
        return KP_ENOMEM;
    }
    w->c = c;
    w->flags = flags;
    atomic_init(&w->cancelled, 0);
    buf_init(&w->line, KC_WATCH_LINE_MAX);
    buf_init(&w->errbody, KC_WATCH_ERRBODY_MAX);
    rc = KP_ENOMEM;
    if (!(w->m = curl_multi_init()) || !(w->h = curl_easy_init())) goto fail;
    if ((rc = kc__easy_setup(c, w->h, w->url, NULL, kc__accept(c, 0), &w->hdrs))) goto fail;
    CURLcode cc = curl_easy_setopt(w->h, CURLOPT_WRITEFUNCTION, on_data);
    if (!cc) cc = curl_easy_setopt(w->h, CURLOPT_WRITEDATA, w);
    if (!cc) cc = curl_easy_setopt(w->h, CURLOPT_HEADERFUNCTION, on_header);
    if (!cc) cc = curl_easy_setopt(w->h, CURLOPT_HEADERDATA, w);
    /* A safety net for a peer that vanishes without a word. */
    if (!cc && timeout_s > 0)
        cc = curl_easy_setopt(w->h, CURLOPT_TIMEOUT_MS,
                              ((long)timeout_s + KC_WATCH_SLACK_S) * 1000L);
    if (cc) {
        rc = kc__curl_err(cc);
        goto fail;
    }
    if (curl_multi_add_handle(w->m, w->h) != CURLM_OK) goto fail;

    int64_t deadline = clock_mono_ns() + (int64_t)c->timeout_ms * 1000000;
    run_until(w, headers_in, deadline);
    if (!w->headers_done) {
        rc = w->done ? (w->result == CURLE_OK ? KP_EUNAVAILABLE : kc__curl_err(w->result))
                     : KP_ETIMEDOUT;
        /* No answer: a dead server, or one that hangs (a watch is a GET:
         * always safe to open again elsewhere). */
        *conn = !w->done || w->result == CURLE_OK ||
                kc__conn_fail(w->h, w->result) != KC__CONN_OK;
        goto fail;
    }
    if (w->code != 200) {
        run_until(w, never, deadline); /* the Status, for its reason */
        json_t *st = w->errbody.p ? json_loadb(w->errbody.p, w->errbody.len, 0, NULL) : NULL;
        rc = kc__http_err(w->code, st);
        if (!rc) rc = KP_EUNAVAILABLE; /* 2xx other than 200: not a watch */
        log_debug("client", "watch %s: HTTP %ld: %s", w->url, w->code,
                  json_string_value(json_object_get(st, "message")));
        json_decref(st);
        goto fail;
    }
    *out = w;
    return 0;
fail:
    watch_free(w);
    return rc;
}

int kc_watch_open(kc_client_t *c, const kc_resource_t *r, const char *ns, const char *query,
                  const char *rv, int timeout_s, kc_watch_t **out)
{
    return kc__watch_open(c, r, ns, query, rv, timeout_s, 0, out);
}

int kc__watch_open(kc_client_t *c, const kc_resource_t *r, const char *ns, const char *query,
                   const char *rv, int timeout_s, int flags, kc_watch_t **out)
{
    *out = NULL;
    if (!r || !r->resource || !r->version || timeout_s < 0) return KP_EINVAL;
    buf_t qb, path;
    int rc = watch_query(&qb, query, rv, timeout_s);
    if (rc) return rc;
    rc = kc__url(c, r, ns, NULL, NULL, qb.p, &path);
    buf_free(&qb);
    if (rc) return rc;

    kc__rate_wait(c);
    atomic_fetch_add(&c->requests, 1);
    atomic_fetch_add(&c->watches, 1);
    for (size_t i = 0; i < c->nservers; i++) {
        size_t idx = kc__server_cur(c);
        int conn = 0;
        rc = watch_try(c, path.p, idx, timeout_s, flags, out, &conn);
        if (!conn) break;
        kc__server_failed(c, idx);
    }
    buf_free(&path);
    if (rc) atomic_fetch_add(&c->errors, 1);
    return rc;
}

int kc_watch_next(kc_watch_t *w, int timeout_ms, kc_event_type_t *type, json_t **obj)
{
    *type = 0;
    *obj = NULL;
    int64_t deadline = timeout_ms >= 0 ? clock_mono_ns() + (int64_t)timeout_ms * 1000000 : -1;
    for (;;) {
        if (atomic_load(&w->cancelled)) return KP_ECLOSED;
        if (w->err) return w->err;
        if (w->qhead < w->qlen) {
            wevent_t ev = w->q[w->qhead++];
            if (ev.err) return w->err = ev.err;
            *type = ev.type;
            *obj = ev.obj;
            return 0;
        }
        if (w->done) {
            int rc = end_error(w);
            if (!rc) continue;
            return w->err = rc;
        }
        perform(w);
        if (ready(w)) continue;
        int64_t left = deadline < 0 ? 1000 : (deadline - clock_mono_ns()) / 1000000;
        if (left <= 0) return KP_ETIMEDOUT;
        poll_ms(w, left);
    }
}

void kc_watch_cancel(kc_watch_t *w)
{
    if (!w) return;
    atomic_store(&w->cancelled, 1);
    curl_multi_wakeup(w->m);
}

void kc_watch_close(kc_watch_t *w)
{
    watch_free(w);
}
