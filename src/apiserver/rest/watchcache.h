/*
 * watchcache.h -- one resource's objects in memory, following the store.
 *
 * A watch cache serves LIST and WATCH of one resource (one store key prefix,
 * e.g. "/registry/configmaps/") from memory. One store watch feeds it; every
 * object version is encoded to JSON exactly once, and that one encoding is
 * shared (by reference count) by every list and watcher that sends it, and by
 * the writer's reply: the writer of a version offers its object (wc_offer), or
 * else the cache parses the stored value.
 *
 * Memory: a version is kept as its encoding and, for selectors, the few
 * texts they read (wc_obj_match()), never as a parsed tree: parsed by
 * jansson, an object costs five to ten times its JSON, and a tree of even
 * its selectable fields alone cost 2 KB a pod. Readers that need the whole
 * object parse it (wc_obj_copy()).
 *
 * Stored values are object JSON without metadata.resourceVersion; the cache
 * sets it to the version's mod_revision (as a decimal string) before encoding.
 * A DELETED event carries the object's last state with resourceVersion set to
 * the revision of the delete, as Kubernetes does.
 *
 * History: the cache keeps the newest events within a budget in bytes
 * (wc_config_t.history_bytes; an event costs the memory of its object and of
 * its previous state, so the budget bounds what the history keeps alive) and
 * at most `history` of them, evicting the oldest first; the newest event is
 * always kept. A watch from a revision older than the history's start (which
 * is never older than the store's compaction point was when the cache
 * loaded) fails with KP_ECOMPACTED (the API answers 410 Gone "too old
 * resource version"); wc_oldest() reports that start.
 *
 * Slow watchers: each watcher has a queue bounded in events and in bytes (the
 * JSON it would send; wc_watch_opts_t). A watcher whose queue is full is
 * ended (wc_watcher_next() then returns KP_ETOOLARGE once its queue is
 * drained), as is one past its deadline (KP_ETIMEDOUT); it never blocks the
 * cache, writers, or other watchers. Its owner learns of the end through
 * on_end, which may be blocked elsewhere (a socket nobody reads) and needs
 * waking there: Kubernetes' cacheWatcher is dropped the same way when its
 * channel stays full, and the client must watch again.
 *
 * Threads: all calls are safe from any thread; one wc_watcher_t is used by one
 * thread at a time (wc_watcher_cancel() excepted). Errors are KP_* (lib/err.h).
 */
#ifndef KP_WATCHCACHE_H
#define KP_WATCHCACHE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct store store_t;
typedef struct wc wc_t;
typedef struct wc_watcher wc_watcher_t;
typedef struct sel_label sel_label_t;
typedef struct sel_field sel_field_t;

/* One object version. Immutable once published; shared by reference count.
 * Borrowed pointers into it live as long as the reference the caller holds. */
typedef struct wc_obj {
    int64_t rev;          /* resourceVersion of this version */
    const char *key;      /* store key, NUL-terminated */
    const char *ns;       /* metadata.namespace, "" when cluster-scoped */
    const char *name;     /* metadata.name */
    const char *json;     /* the whole object encoded once, compact, NUL-terminated */
    size_t json_len;
} wc_obj_t;

/* 1 if the version satisfies both selectors (NULL: any), as
 * sel_label_match() and sel_field_match() would on the whole object; the
 * fields must be among those the cache keeps (metadata.name,
 * metadata.namespace, wc_config_t.fields), any other matches nothing. */
int wc_obj_match(const wc_obj_t *o, const sel_label_t *labels, const sel_field_t *fields);

/* The text of a kept field (as sel_field_text() reads it), NULL for a field
 * the cache does not keep. Borrowed from o. */
const char *wc_obj_field(const wc_obj_t *o, const char *field);

/* Take and drop a reference. NULL is a no-op for both. */
const wc_obj_t *wc_obj_ref(const wc_obj_t *o);
void wc_obj_unref(const wc_obj_t *o);

/* The whole object, managedFields included, parsed from `json`: a new tree
 * the caller owns and may change. Errors: KP_ENOMEM; KP_ECORRUPT. */
int wc_obj_copy(const wc_obj_t *o, json_t **out);

typedef enum wc_event_type { WC_ADDED = 1, WC_MODIFIED = 2, WC_DELETED = 3 } wc_event_type_t;

/* A change. `obj` is the new state (for WC_DELETED the last state, see above),
 * `prev` the state before (NULL for WC_ADDED). The event holds one reference
 * to each; wc_event_clear() drops them. */
typedef struct wc_event {
    wc_event_type_t type;
    int64_t rev;
    const wc_obj_t *obj;
    const wc_obj_t *prev;
} wc_event_t;

void wc_event_clear(wc_event_t *ev);

typedef struct wc_config {
    size_t history;       /* events kept for watches from the past; 0: 10000 */
    size_t history_bytes; /* and their memory at most (see above); 0: WC_HISTORY_BYTES */
    /* A resource served in another version than it is stored in (one stored
     * object, two versions, as Kubernetes does): every version the cache
     * keeps, from the store or offered (wc_offer() then takes the stored
     * form), is convert(stored object), which consumes its argument and
     * returns the served object (NULL when out of memory). Called on the
     * cache's thread and on offering threads at once: it must be pure.
     * NULL: objects are kept as stored. */
    json_t *(*convert)(void *arg, json_t *stored);
    void *convert_arg; /* borrowed; it must outlive the cache */
    /* Field selectors' names (e.g. "spec.nodeName") that lists and watches
     * may filter on beyond metadata.name and metadata.namespace: each
     * version keeps their texts (wc_obj_match()). NULL-terminated,
     * borrowed (it must outlive the cache); NULL: none. */
    const char *const *fields;
} wc_config_t;

#define WC_HISTORY_BYTES ((size_t)64 << 20) /* history per resource, default */
#define WC_QUEUE_BYTES ((size_t)1 << 20)    /* a watcher's queue, default */

/* Load every object under `prefix` from `store` (borrowed; it must outlive the
 * cache) at its newest revision, then follow it with a store watch on a thread
 * of the cache's own. Errors: KP_ECORRUPT (a stored value is not a JSON
 * object), store errors. */
int wc_open(store_t *store, const char *prefix, const wc_config_t *cfg, wc_t **out);

/* Stop following, end every watcher (KP_ECLOSED), free the cache. Objects and
 * events still referenced by callers stay valid until they are unreffed.
 * Open watchers stay safe to use: their wc_watcher_next() returns KP_ECLOSED,
 * and each must still be closed with wc_watcher_close(), which frees the last
 * of the cache. Calls blocked in wc_wait() or wc_list() return KP_ECLOSED;
 * no call on `wc` may start once wc_close() has begun. */
void wc_close(wc_t *wc);

/* End every open watcher (its wc_watcher_next() returns KP_ECLOSED at once,
 * as after wc_watcher_cancel) and refuse later watches with KP_ECLOSED, for
 * a resource that stops being served (its CRD was deleted). Gets and lists
 * go on until wc_close(). Any thread; idempotent. */
void wc_end(wc_t *wc);

/* The revision the cache reflects: every store change up to it is applied. */
int64_t wc_revision(wc_t *wc);

/* The history's start: a watch from a revision below it is KP_ECOMPACTED. */
int64_t wc_oldest(wc_t *wc);

/* Memory the history holds now (bytes, as counted against history_bytes)
 * and its event count; either may be NULL. */
void wc_history_usage(wc_t *wc, size_t *bytes, size_t *events);

/* The current objects (one version of each key) and their memory (bytes,
 * estimated as the history's are; a version also in the history counts in
 * both); either may be NULL. */
void wc_objects_usage(wc_t *wc, size_t *bytes, size_t *count);

/* Offers (wc_offer()) kept and waiting for their event now. */
size_t wc_offers_waiting(wc_t *wc);

/* Offer the version `rev` of `key` that the caller has just written: call it
 * right after a store create or update of `key` committed at `rev`, so that
 * the cache publishes this object for the store event of (key, rev) instead
 * of parsing and encoding the stored value again.
 *
 * `doc` is stolen on every path; the cache reads it during the call only
 * (and may change it: it sets metadata.resourceVersion). It must be the
 * object exactly as stored (for a converting cache, in the stored version;
 * the cache converts it): json_dumps(doc, JSON_COMPACT) gave the stored
 * bytes (so without metadata.resourceVersion), and nothing has changed it
 * since. `stored` (borrowed; NULL: none) are those stored bytes,
 * `stored_len` long: the version's encoding is then spliced from them
 * (resourceVersion inserted) instead of encoding doc a second time.
 *
 * On 0, *out holds a reference (drop it with wc_obj_unref()) to the version
 * built from it as the cache builds every version: metadata.resourceVersion
 * set to `rev`, encoded once (obj->json are the bytes lists and watchers get).
 * Whether the cache keeps the offer is not reported, nor does it matter: an
 * offer is dropped at once when the cache has already passed `rev` (it read
 * the event first and parsed the stored value), when the cache has failed, or
 * when 4096 offers are waiting; a kept one is dropped when the cache takes it
 * or passes `rev` without its event (a key outside the prefix), and by
 * wc_close(). `wc` NULL only builds the version (it keeps no fields but
 * metadata's).
 * Errors (*out NULL, doc freed): KP_EINVAL (key NULL, doc not an object),
 * KP_ECORRUPT (doc's metadata is not an object), KP_ENOMEM. */
int wc_offer(wc_t *wc, const char *key, int64_t rev, json_t *doc, const char *stored,
             size_t stored_len, const wc_obj_t **out);

/* Wait until wc_revision() >= rev, up to `timeout_ms` (negative: forever).
 * Writes outside the prefix count once the cache's store watch has read past
 * them (within a fraction of a second). Errors: KP_ETIMEDOUT, KP_ECLOSED, or
 * the error that stopped the cache's store watch (e.g. KP_ECORRUPT). */
int wc_wait(wc_t *wc, int64_t rev, int timeout_ms);

/* A snapshot of objects in key order. Holds one reference per object; free it
 * with wc_list_free(). */
typedef struct wc_list {
    int64_t rev;             /* the snapshot's revision */
    size_t count;
    const wc_obj_t **objs;
    int more;                /* objects under key_prefix follow the last one */
} wc_list_t;

/* Objects whose key starts with `key_prefix` and sorts after `after_key`
 * (NULL: from the first), at most `limit` (0: all), as of the cache's current
 * revision (after waiting, up to `timeout_ms`, for it to reach `min_rev`; see
 * wc_wait()). Errors: KP_ETIMEDOUT, KP_ECLOSED, or the error that stopped the
 * cache when it is below `min_rev`. */
int wc_list(wc_t *wc, const char *key_prefix, const char *after_key, size_t limit,
            int64_t min_rev, int timeout_ms, wc_list_t **out);
void wc_list_free(wc_list_t *l);

/* As wc_list(), but as of the past revision `rev` (not waiting): the page of
 * a snapshot a first wc_list() took at `rev`, after `after_key`, rebuilt from
 * the current objects and the history, each key changed since `rev` in its
 * state before its first change. So a continued list pages through one
 * snapshot from memory, as long as the history reaches back to it.
 * Errors: KP_ECOMPACTED (`rev` is older than the history's start or newer
 * than the cache: ask the store), KP_ECLOSED, the error that stopped the
 * cache, KP_ENOMEM. */
int wc_list_at(wc_t *wc, const char *key_prefix, const char *after_key, size_t limit, int64_t rev,
               wc_list_t **out);

/* The object at `key` as the cache has it now; *out holds a reference.
 * Errors: KP_ENOTFOUND. */
int wc_get(wc_t *wc, const char *key, const wc_obj_t **out);

/* How a watcher may fall behind, and who to tell when the cache ends it. */
typedef struct wc_watch_opts {
    size_t backlog;       /* live events queued at most; 0: 1000 */
    size_t backlog_bytes; /* and their JSON bytes at most; 0: WC_QUEUE_BYTES */
    /* clock_mono_ns() at which the cache ends the watcher with KP_ETIMEDOUT
     * whether or not its owner is waiting in wc_watcher_next() (checked
     * every quarter second); 0: never. */
    int64_t deadline_ns;
    /* Called once when the cache ends the watcher on its own (queue full,
     * deadline, the cache failed, wc_end(), wc_close()), not after
     * wc_watcher_cancel(). It runs on a cache thread with the cache's lock
     * held: it must not block or call into the cache. NULL: none. */
    void (*on_end)(void *arg);
    void *on_end_arg;
    /* Called when an event is queued for the watcher while its queue was
     * empty, so that an owner that polls (wc_watcher_next() with timeout 0)
     * need not wait on a thread. Same rules as on_end (a cache thread, the
     * cache's lock held; it must not block or call into the cache). NULL:
     * none. */
    void (*on_ready)(void *arg);
    void *on_ready_arg;
} wc_watch_opts_t;

/* The code a watcher was ended with (KP_ETOOLARGE: its queue was full,
 * KP_ETIMEDOUT: its deadline, KP_ECLOSED: wc_end()/wc_close(), another: the
 * cache failed), 0 while it is not ended. For on_end (which runs under the
 * cache's lock) and the watcher's owner. */
int wc_watcher_end_code(const wc_watcher_t *w);

/* Watch changes under `key_prefix` with a revision above `after_rev`.
 * `after_rev` < 0: from now. `opts` NULL: the defaults; events replayed from
 * the history do not count against the backlog. *out is the caller's until
 * wc_watcher_close(). Errors: KP_ECOMPACTED (older than the history, see
 * wc_oldest(); a revision the history covers is served even if the store has
 * been compacted past it, as Kubernetes does), KP_EFUTURE (after
 * wc_revision(), once a short wait for the cache to catch up has not helped),
 * the error that stopped the cache. */
int wc_watch(wc_t *wc, const char *key_prefix, int64_t after_rev, const wc_watch_opts_t *opts,
             wc_watcher_t **out);

/* Wait up to `timeout_ms` (negative: forever) for the next event; on 0, *ev
 * holds references the caller drops with wc_event_clear().
 * Errors: KP_ETIMEDOUT (timeout_ms passed; or, once the queue is drained,
 * the watcher's deadline); KP_ETOOLARGE (the watcher fell behind by more
 * than its backlog and was ended); KP_ECLOSED (cancelled, or the cache closed); the
 * error that stopped the cache. KP_ETOOLARGE, the deadline and a stop error
 * come once the events queued before them are taken; KP_ECLOSED comes at once. */
int wc_watcher_next(wc_watcher_t *w, int timeout_ms, wc_event_t *ev);

/* Make a blocked or later wc_watcher_next() return KP_ECLOSED; any thread. */
void wc_watcher_cancel(wc_watcher_t *w);
void wc_watcher_close(wc_watcher_t *w);

#endif
