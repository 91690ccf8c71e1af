/*
 * rest_watch.c -- ?watch=true: newline-delimited events from the watch cache.
 *
 * resourceVersion "" or "0": ADDED for every current match, then the changes
 * after that snapshot; N: the changes after N (410 Expired as an ERROR event
 * when N is older than the cache's history). Selectors apply to both sides of
 * a change: an object that starts matching arrives as ADDED, one that stops
 * matching as DELETED. The stream ends at timeoutSeconds, when the watcher
 * falls behind its backlog (WATCH_BACKLOG events or cfg.watch_queue_bytes of
 * JSON queued), or when the server stops.
 *
 * No thread waits for a watch. watch_next() takes what the watcher has
 * queued without waiting; with nothing, the stream parks (http.c) until
 * the cache queues the next event (on_ready: api_req_kick) or the next
 * bookmark or the deadline is due. A client that goes (its connection
 * closed, or its HTTP/2 stream reset) ends its parked stream at once, as
 * Kubernetes ends a watch when its request's context is cancelled.
 *
 * A client that stops reading: its stream parks while the engine holds its
 * budget of unsent bytes, and the watch cache ends the watcher itself when
 * its queue is full or at the deadline (plus WATCH_GRACE_MS, so that a
 * reading client gets its clean end from watch_next() first); the stream
 * then ends and the client watches again, as from Kubernetes' cacheWatcher
 * dropped for unresponsiveness.
 *
 * Open watches count against cfg.max_watches, or cfg.max_watches_local for
 * the Unix socket of the in-process components.
 *
 * For Accept ...;as=Table (kubectl get -w), each event's object is a Table
 * of one row, the first with the column definitions. Those are rendered per
 * watcher: only the plain JSON is encoded once for all. For
 * ...;as=PartialObjectMetadata (metadata informers), each object is its
 * metadata, sliced from the shared JSON (rest_meta_append()).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "apiserver/encode/protobuf.h"
#include "apiserver/http/http.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "apiserver/rest/rest_int.h"
#include "apiserver/encode/table.h"
#include "store/store.h"
#include "apiserver/rest/watchcache.h"

#define WATCH_BACKLOG 10000
#define WATCH_MAX_SECONDS 1800
#define BOOKMARK_EVERY_MS 10000
#define WATCH_GRACE_MS 2000
/* Events go out in pieces of about this many bytes at most (the synthetic
 * ADDED events of a snapshot; live events as many as are queued): a client
 * that does not read holds one piece in its stream's buffer. */
#define WATCH_SLICE (64u << 10)

typedef struct watch_stream {
    apiserver_t *srv;
    wc_t *wc;
    wc_watcher_t *w;
    rest_filter_t filter;
    wc_list_t *initial; /* snapshot for synthetic ADDED events, or NULL */
    size_t next_initial;
    int64_t deadline_ns;
    int bookmarks;
    int64_t last_rev;
    char kind[64], api_version[96];
    json_t *error;      /* an ERROR event to send, then end */
    const api_resource_t *table_res; /* non-NULL: events carry Tables */
    int table_include;
    int table_columns_sent;
    char meta[32];      /* non-empty: objects as PartialObjectMetadata of this apiVersion */
    int local;          /* counted in srv->watches_local */
    api_req_t *req;     /* the request (valid while its stream runs) */
    int64_t bookmark_ns; /* when the next BOOKMARK is due while quiet; 0: unset */
    int pb;             /* events in protobuf (Accept), length-prefixed */
} watch_stream_t;

static int emit(buf_t *out, const char *type, const char *json, size_t len);

/* An event in protobuf: a length-prefixed WatchEvent (protobuf.h). */
static int emit_pb(buf_t *out, const char *type, const char *json, size_t len)
{
    json_t *doc = json_loadb(json, len, 0, NULL);
    if (!doc) return KP_ENOMEM;
    int rc = api_pb_encode_event(type, doc, out);
    json_decref(doc);
    return rc;
}

/* One event in the stream's encoding. */
static int emit_ws(const watch_stream_t *ws, buf_t *out, const char *type, const char *json,
                   size_t len)
{
    return ws->pb ? emit_pb(out, type, json, len) : emit(out, type, json, len);
}

static int emit(buf_t *out, const char *type, const char *json, size_t len)
{
    char head[48];
    int n = snprintf(head, sizeof head, "{\"type\":\"%s\",\"object\":", type);
    int rc = buf_append(out, head, (size_t)n);
    if (!rc) rc = buf_append(out, json, len);
    if (!rc) rc = buf_append(out, "}\n", 2);
    return rc;
}

/* An object event: its shared JSON (the cache keeps it as served, schema
 * defaults included), or a one-row Table of it. */
static int emit_obj(watch_stream_t *ws, buf_t *out, const char *type, const wc_obj_t *o)
{
    if (ws->meta[0]) {
        char head[48];
        int n = snprintf(head, sizeof head, "{\"type\":\"%s\",\"object\":", type);
        int rc = buf_append(out, head, (size_t)n);
        if (!rc) rc = rest_meta_append(out, o->json, o->json_len, ws->meta);
        return rc ? rc : buf_append(out, "}\n", 2);
    }
    if (!ws->table_res) return emit_ws(ws, out, type, o->json, o->json_len);
    json_t *t = api_table_new(ws->table_res, !ws->table_columns_sent);
    int rc = t ? rest_table_add(t, ws->table_res, o, ws->table_include, time(NULL)) : KP_ENOMEM;
    char *js = NULL;
    if (!rc) {
        json_object_set_new(json_object_get(t, "metadata"), "resourceVersion",
                            json_sprintf("%lld", (long long)o->rev));
        if (!(js = json_dumps(t, JSON_COMPACT))) rc = KP_ENOMEM;
    }
    if (!rc) rc = emit(out, type, js, strlen(js));
    if (!rc) ws->table_columns_sent = 1;
    free(js);
    json_decref(t);
    return rc;
}

/* Which event, if any, a change is for a watcher with this filter. */
static const char *event_type(const watch_stream_t *ws, const wc_event_t *ev)
{
    int now = wc_obj_match(ev->obj, ws->filter.labels, ws->filter.fields);
    int before = ev->prev && wc_obj_match(ev->prev, ws->filter.labels, ws->filter.fields);
    switch (ev->type) {
    case WC_ADDED: return now ? "ADDED" : NULL;
    case WC_DELETED: return now || before ? "DELETED" : NULL;
    case WC_MODIFIED:
        if (now && before) return "MODIFIED";
        if (now) return "ADDED";
        return before ? "DELETED" : NULL;
    }
    return NULL;
}

static int watch_next(void *arg, buf_t *out, int *wait_ms)
{
    watch_stream_t *ws = arg;
    if (ws->error) {
        char *js = json_dumps(ws->error, JSON_COMPACT);
        json_decref(ws->error);
        ws->error = NULL;
        int rc = js ? emit_ws(ws, out, "ERROR", js, strlen(js)) : KP_ENOMEM;
        free(js);
        return rc ? rc : 0;
    }
    if (!ws->w) return KP_ECLOSED; /* after an ERROR: end */

    /* Synthetic ADDED events, in slices so that a huge snapshot streams. */
    if (ws->initial) {
        while (ws->next_initial < ws->initial->count && out->len < WATCH_SLICE) {
            const wc_obj_t *o = ws->initial->objs[ws->next_initial++];
            if (wc_obj_match(o, ws->filter.labels, ws->filter.fields) &&
                emit_obj(ws, out, "ADDED", o))
                return KP_ENOMEM;
        }
        if (ws->next_initial == ws->initial->count) {
            wc_list_free(ws->initial);
            ws->initial = NULL;
        }
        if (out->len) return 0;
    }

    for (;;) {
        int64_t now = clock_mono_ns();
        if (now >= ws->deadline_ns) return out->len ? 0 : KP_ETIMEDOUT;
        if (!ws->bookmark_ns) ws->bookmark_ns = now + (int64_t)BOOKMARK_EVERY_MS * 1000000;
        wc_event_t ev;
        int rc = wc_watcher_next(ws->w, 0, &ev);
        if (rc == KP_ETIMEDOUT) { /* nothing queued */
            if (out->len) return 0; /* the events taken so far */
            if (!ws->bookmarks || now < ws->bookmark_ns) {
                int64_t until = ws->deadline_ns;
                if (ws->bookmarks && ws->bookmark_ns < until) until = ws->bookmark_ns;
                int64_t ms = (until - now) / 1000000 + 1;
                *wait_ms = ms > INT32_MAX ? INT32_MAX : (int)ms;
                return KP_EAGAIN; /* parked until on_ready, or then */
            }
            ws->bookmark_ns = 0;
            char bm[256];
            int n = snprintf(bm, sizeof bm,
                             "{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":{"
                             "\"resourceVersion\":\"%lld\"}}",
                             ws->kind, ws->api_version,
                             (long long)(ws->last_rev > wc_revision(ws->wc) ? ws->last_rev
                                                                             : wc_revision(ws->wc)));
            return emit_ws(ws, out, "BOOKMARK", bm, (size_t)n);
        }
        if (rc) return out->len ? 0 : rc; /* closed, or fell behind: end the stream */
        ws->last_rev = ev.rev;
        ws->bookmark_ns = 0; /* an event resets the quiet period */
        const char *type = event_type(ws, &ev);
        if (type) rc = emit_obj(ws, out, type, ev.obj);
        wc_event_clear(&ev);
        if (rc) return rc;
        if (out->len >= WATCH_SLICE) return 0; /* more next time */
    }
}

/* The cache ended the watcher on its own (wc_watch_opts_t.on_end, with the
 * cache's lock held): a stream that waits for its client to read (its queue
 * filled, or its deadline passed, while it was stuck) ends now instead of at
 * the stall timeout; one waiting for events ends by itself. The server's
 * own end of a cache (a CRD deleted, the server stopping) lets its last
 * events go out. */
static void watch_end(void *arg)
{
    watch_stream_t *ws = arg;
    if (ws->w && wc_watcher_end_code(ws->w) != KP_ECLOSED)
        api_req_abort(ws->req);
    else
        api_req_kick(ws->req);
}

/* The cache queued an event for a watcher with none (on_ready, the cache's
 * lock held): its parked stream takes it. */
static void watch_ready(void *arg)
{
    watch_stream_t *ws = arg;
    api_req_kick(ws->req);
}

static void watch_count(apiserver_t *s, int local, int delta)
{
    pthread_mutex_lock(&s->mu);
    if (local)
        s->watches_local += (size_t)delta;
    else
        s->watches += (size_t)delta;
    pthread_mutex_unlock(&s->mu);
}

static void watch_free(void *arg)
{
    watch_stream_t *ws = arg;
    if (ws->w) wc_watcher_close(ws->w);
    if (ws->initial) wc_list_free(ws->initial);
    json_decref(ws->error);
    rest_filter_free(&ws->filter);
    watch_count(ws->srv, ws->local, -1);
    free(ws);
}

int rest_watch(api_req_t *r)
{
    apiserver_t *s = r->srv;
    const char *rvs = api_query(r, "resourceVersion");
    int64_t rv = 0;
    if (rest_parse_rv(rvs, &rv))
        return api_reply_status(r, 400, "BadRequest", NULL, "invalid resourceVersion: %s", rvs);
    long long timeout = WATCH_MAX_SECONDS;
    const char *ts = api_query(r, "timeoutSeconds");
    if (ts && *ts) {
        char *end;
        timeout = strtoll(ts, &end, 10);
        if (*end || timeout < 0)
            return api_reply_status(r, 400, "BadRequest", NULL, "invalid timeoutSeconds: %s", ts);
        if (timeout == 0 || timeout > WATCH_MAX_SECONDS) timeout = WATCH_MAX_SECONDS;
    }

    int local = api_req_local(r);
    pthread_mutex_lock(&s->mu);
    size_t *n_open = local ? &s->watches_local : &s->watches;
    int full = *n_open >= (local ? s->cfg.max_watches_local : s->cfg.max_watches);
    if (!full) ++*n_open;
    pthread_mutex_unlock(&s->mu);
    if (full)
        return api_reply_status(r, 429, "TooManyRequests", NULL,
                                "too many open watches, please try again later");

    watch_stream_t *ws = calloc(1, sizeof *ws);
    if (!ws) {
        watch_count(s, local, -1);
        return api_reply_status(r, 500, "InternalError", NULL, "out of memory");
    }
    ws->srv = s;
    ws->local = local;
    ws->req = r;
    ws->wc = rest_cache(r);
    ws->deadline_ns = clock_mono_ns() + (int64_t)timeout * 1000000000;
    ws->bookmarks = rest_query_bool(r, "allowWatchBookmarks");
    snprintf(ws->kind, sizeof ws->kind, "%s", r->route.res->kind);
    api_group_version(r->route.res, ws->api_version, sizeof ws->api_version);
    int rc = rest_selectors(r, &ws->filter);
    if (rc || r->replied) {
        watch_free(ws);
        return rc;
    }
    int table = rest_wants_table(r, &ws->table_include);
    if (table < 0) {
        watch_free(ws);
        return 0;
    }
    if (table) ws->table_res = r->route.res;
    if (!table && rest_wants_meta(r, 0, ws->meta, sizeof ws->meta)) { /* bookmarks too */
        snprintf(ws->kind, sizeof ws->kind, "PartialObjectMetadata");
        snprintf(ws->api_version, sizeof ws->api_version, "%s", ws->meta);
    }
    ws->pb = !table && !ws->meta[0] && api_pb_accepts(api_header(r, "Accept")) &&
             api_pb_has_kind(ws->api_version, ws->kind);

    char prefix[STORE_KEY_MAX + 1];
    api_ns_prefix(r->route.res, r->route.ns, prefix, sizeof prefix);

    int64_t after = rv;
    if (!rvs || !*rvs || !strcmp(rvs, "0")) {
        /* The current state as ADDED events, then what follows it. */
        rc = wc_list(ws->wc, prefix, NULL, 0, 0, 0, &ws->initial);
        if (rc) {
            watch_free(ws);
            return api_reply_error(r, rc, NULL, "watch: %s", err_str(rc));
        }
        after = ws->initial->rev;
    }
    wc_watch_opts_t wo = {.backlog = WATCH_BACKLOG,
                          .backlog_bytes = s->cfg.watch_queue_bytes,
                          .deadline_ns = ws->deadline_ns + (int64_t)WATCH_GRACE_MS * 1000000,
                          .on_end = watch_end,
                          .on_end_arg = ws,
                          .on_ready = watch_ready,
                          .on_ready_arg = ws};
    rc = wc_watch(ws->wc, prefix, after, &wo, &ws->w);
    if (rc == KP_ECOMPACTED) {
        /* Kubernetes names the oldest revision a watch may start from. */
        char msg[128];
        snprintf(msg, sizeof msg, "too old resource version: %lld (%lld)", (long long)rv,
                 (long long)wc_oldest(ws->wc));
        ws->error = api_status_new(410, "Expired", msg, NULL);
    } else if (rc) {
        watch_free(ws);
        return api_reply_error(r, rc, NULL, "watch: %s", err_str(rc));
    }
    ws->last_rev = after;
    if (ws->pb) return api_reply_stream_as(r, API_PB_WATCH_MEDIA_TYPE, watch_next, ws, watch_free);
    return api_reply_stream(r, watch_next, ws, watch_free);
}
