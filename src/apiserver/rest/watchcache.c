/*
 * watchcache.c -- one resource's objects in memory, following the store.
 *
 * A cache holds three structures under one mutex (wc->mu):
 *
 *   map      the current object of every key under the prefix: a skip list
 *            ordered by key (O(log n) get, insert, delete; lists walk level 0);
 *   ring     the newest events, oldest first, in revision order: at most
 *            `history` of them and `ring_budget` bytes (event_cost());
 *   watchers each with a queue of events not yet taken, bounded in events
 *            and bytes.
 *
 * One thread per cache (cache_run) reads the cache's single store watch,
 * turns each store event into a wc_event_t outside the lock (prepare: parse,
 * set resourceVersion, encode), and then applies it under the lock in one step
 * (apply): map, ring, every watcher's queue, and wc->rev change together.
 *
 * Offers (wc_offer) save prepare() the parse and the encoding: a writer that
 * has just stored a version builds the wc_obj_t from its own doc and leaves it
 * in a small table (a min-heap by revision, under its own mutex wc->omu, so
 * that writers never wait on wc->mu); prepare() takes it from there.
 *
 * Invariants (checked by wc_check() in debug builds where they are cheap):
 *
 *  1. Ring completeness. Every store event under the prefix with a revision in
 *     (ring_floor, rev] is in the ring, once, in revision order. The ring
 *     starts empty with ring_floor == rev == the revision of the initial
 *     range; evicting the oldest event moves ring_floor up to its revision.
 *     ring_bytes is the sum of event_cost() over the ring; ring_push()
 *     evicts until the new event fits the budget, but keeps the newest.
 *     So a watch from after_rev >= ring_floor can be served from memory;
 *     after_rev < ring_floor is KP_ECOMPACTED.
 *  2. Exactly-once seam. wc_watch() replays ring events above after_rev and
 *     links the watcher into the list in one hold of wc->mu; apply() pushes to
 *     the ring and delivers to the linked watchers in one hold of wc->mu. So an
 *     event is either in the replay (it was applied before) or delivered live
 *     (after), never both, never neither.
 *  3. Encode once. A wc_obj_t is built (resourceVersion set, encoded) once per
 *     object version, by obj_new(): either in prepare() from the stored value
 *     (parsed), or in wc_offer() from the writer's doc, which prepare() then
 *     takes instead of parsing (invariant 8). It is never modified after it is
 *     published; the map, the ring, watcher queues, lists, offers and callers
 *     share it by reference count. Its json is the whole version; the texts
 *     selectors read (sel_build()) are taken from the doc it was built from,
 *     which is then freed: no parsed tree outlives obj_new().
 *  4. The map mirrors the store at rev: for each key under the prefix that
 *     exists at rev, exactly one node whose obj->rev is the key's mod_rev.
 *     A store event that contradicts it (an update with no object, an object
 *     whose revision differs from the event's previous one) is KP_ECORRUPT.
 *  5. rev only grows. After each store event, progress event or idle timeout
 *     it becomes the store watch's revision, which also counts the revisions
 *     of writes outside the prefix (the watch reports progress past them).
 *  6. Slow watchers never block. A watcher's queue holds at most `backlog`
 *     live events and `backlog_bytes` of their JSON besides the first live
 *     one (the one its owner takes next, which may be of any size: an owner
 *     woken by on_ready takes it as soon as it runs), plus whatever its
 *     replay put there. apply()
 *     only enqueues; a watcher it cannot enqueue to is ended with
 *     KP_ETOOLARGE and keeps its queue, which it drains before seeing the
 *     error. qbytes and replay_bytes are the sums of q_cost() over the queue
 *     and over its replayed part. Every end the cache decides on its own
 *     (full, deadline, failure, wc_end, wc_close) goes through
 *     watcher_end(), which tells the owner (on_end) once; an owner's
 *     wc_watcher_cancel() silences it.
 *  7. Lifetime. The cache struct is reference counted: one reference for the
 *     owner (dropped by wc_close), one per open watcher, one per call blocked
 *     in a wait. wc_close ends the thread and frees map, ring and offers; the
 *     struct (mutexes, watcher list) goes with the last reference.
 *  8. Offers. offer_floor is the highest revision the cache thread has passed
 *     (prepared, or advanced to); it only grows, and it and the offer table
 *     change only under wc->omu. Every kept offer has rev > offer_floor: the
 *     cache thread raises the floor and drops every offer at or below it in
 *     one hold (offers_take), and wc_offer() keeps an offer only above it. So
 *     an offer is taken by the prepare() of its own event, or refused at once
 *     (the cache prepared that revision first, from the store), or dropped
 *     when the cache passes its revision without taking it; cache_fail and
 *     wc_close drop all and set the floor to INT64_MAX. At most
 *     WC__OFFERS_MAX offers wait; beyond, wc_offer() keeps none.
 *
 * States of a cache (wc->err, wc->closed):
 *
 *   FOLLOWING --store error, bad value (cache_fail)--> FAILED (err != 0)
 *   FOLLOWING, FAILED --wc_close--> CLOSED (closed = 1) --last unref--> freed
 *   ended = 1 (wc_end) is orthogonal: no watcher from then on; reads go on.
 *
 * States of a watcher (w->end, w->cancelled):
 *
 *   ACTIVE --queue full (deliver) / deadline (reap) / cache failed
 *           (cache_fail)--> ENDED(end), owner told (watcher_end)
 *   ENDED  --queue drained--> next() returns end
 *   ACTIVE, ENDED --wc_watcher_cancel / wc_close--> next() returns KP_ECLOSED
 */
#include "apiserver/rest/watchcache.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/schema/object.h"
#include "apiserver/schema/selector.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/jsonspan.h"
#include "lib/log.h"
#include "store/store.h"

#define WC__HISTORY_DEFAULT 10000
#define WC__BACKLOG_DEFAULT 1000
#define WC__PAGE 1000          /* keys per store_range page at open */
#define WC__POLL_MS 250        /* idle wake-up; progress events make rev current */
#define WC__FUTURE_WAIT_MS 3000 /* wc_watch: how long to wait for the cache */
#define WC__SKIP_MAX 24        /* skip list levels; p = 1/4 */
#define WC__OFFERS_MAX 4096    /* offers waiting for their event (invariant 8) */
#define WC__EVENT_BYTES 64     /* a queued event's own cost beyond its JSON */

/* A published object version: the public part, then its own memory. */
typedef struct wc__obj {
    wc_obj_t pub;
    atomic_long refs;
    char *json;   /* from json_dumps */
    size_t mem;   /* what this version holds in memory, estimated (obj_mem) */
    const char *const *paths; /* wc_config_t.fields (borrowed), or NULL */
    const char *sel;          /* in str: the selectors' texts (sel_build()) */
    size_t sel_len;
    char str[];   /* key, ns, name, each NUL-terminated; then sel */
} wc__obj_t;

typedef struct wc__node {
    const wc_obj_t *obj; /* holds one reference */
    struct wc__node *next[];
} wc__node_t;

struct wc_watcher {
    wc_t *wc;
    char *prefix;
    size_t plen;
    wc_event_t *q;     /* ring buffer [qhead, qhead+qn) mod qcap */
    size_t qcap, qhead, qn;
    size_t qmax;       /* backlog + events of the replay */
    size_t backlog;
    size_t replay_left; /* replayed events still in q */
    size_t qbytes, replay_bytes; /* q_cost() of q, and of its replayed part */
    size_t backlog_bytes;
    int64_t deadline_ns; /* 0: none */
    void (*on_end)(void *arg);
    void *on_end_arg;
    void (*on_ready)(void *arg);
    void *on_ready_arg;
    int told;          /* on_end was called, or must not be (cancelled by its owner) */
    int end;           /* 0, or the error next() returns once q is empty */
    int cancelled;
    pthread_cond_t cv; /* with wc->mu */
    struct wc_watcher *prev_w, *next_w;
};

struct wc {
    store_t *store;
    char *prefix;
    store_watch_t *sw;
    pthread_t thread;

    pthread_mutex_t mu;
    pthread_cond_t cv;  /* rev advanced, failed, or closed */
    int refs;           /* invariant 7 */
    int64_t rev;
    int err;            /* sticky: why the cache stopped following */
    int closed;
    int ended;          /* wc_end(): watchers ended, none accepted */

    wc__node_t *head;   /* skip list head, WC__SKIP_MAX levels */
    int height;
    size_t map_n, map_bytes; /* the map's objects, and their memory (obj_mem + node) */
    uint64_t rng;       /* skip list levels; cache thread and wc_open only */

    wc_event_t *ring;
    size_t ring_cap, ring_head, ring_n;
    size_t ring_bytes, ring_budget; /* invariant 1 */
    int64_t ring_floor;
    int64_t reaped_ns;  /* cache thread only: the last reap() */

    wc_watcher_t *watchers;

    pthread_mutex_t omu;     /* offers and offer_floor (invariant 8); alone */
    const wc_obj_t **offers; /* min-heap by rev; each holds one reference */
    size_t offers_n, offers_cap;
    int64_t offer_floor;

    json_t *(*convert)(void *arg, json_t *stored); /* wc_config_t's; read-only */
    void *convert_arg;
    const char *const *fields; /* wc_config_t's; read-only */
};

/* ---- objects ---- */

const wc_obj_t *wc_obj_ref(const wc_obj_t *o)
{
    if (o) atomic_fetch_add_explicit(&((wc__obj_t *)o)->refs, 1, memory_order_relaxed);
    return o;
}

void wc_obj_unref(const wc_obj_t *o)
{
    if (!o) return;
    wc__obj_t *x = (wc__obj_t *)o;
    if (atomic_fetch_sub_explicit(&x->refs, 1, memory_order_acq_rel) != 1) return;
    free(x->json);
    free(x);
}

void wc_event_clear(wc_event_t *ev)
{
    if (!ev) return;
    wc_obj_unref(ev->obj);
    wc_obj_unref(ev->prev);
    memset(ev, 0, sizeof *ev);
}

static size_t obj_mem(const wc_obj_t *o)
{
    return o ? ((const wc__obj_t *)o)->mem : 0;
}

/* What an event in the history keeps alive: its object and the state
 * before it (shared with the previous event of that key, or with the map,
 * so this counts high rather than low). */
static size_t event_cost(const wc_event_t *ev)
{
    return sizeof *ev + obj_mem(ev->obj) + obj_mem(ev->prev);
}

/* What a queued event weighs against its watcher's budget: what it sends. */
static size_t q_cost(const wc_event_t *ev)
{
    return WC__EVENT_BYTES + ev->obj->json_len;
}

static wc_event_t event_ref(const wc_event_t *ev)
{
    wc_event_t c = *ev;
    wc_obj_ref(c.obj);
    wc_obj_ref(c.prev);
    return c;
}

static const char *meta_str(json_t *meta, const char *field)
{
    const char *s = json_string_value(json_object_get(meta, field));
    return s ? s : "";
}

/* ---- splicing resourceVersion into a stored encoding ---- */

/* `text` with [from, to) replaced by `with` (wlen bytes): a malloc'd,
 * NUL-terminated copy and its length in *out_len, or NULL. */
static char *splice(const char *text, size_t len, const char *from, const char *to,
                    const char *with, size_t wlen, size_t *out_len)
{
    size_t head = (size_t)(from - text), tail = len - (size_t)(to - text);
    char *out = malloc(head + wlen + tail + 1);
    if (!out) return NULL;
    memcpy(out, text, head);
    memcpy(out + head, with, wlen);
    memcpy(out + head + wlen, to, tail);
    out[head + wlen + tail] = '\0';
    *out_len = head + wlen + tail;
    return out;
}

/* `text`, the encoding of an object, with its top-level metadata's
 * resourceVersion set to `rv`: replaced when `has_rv` (the text holds one),
 * else inserted as metadata's first member. A malloc'd, NUL-terminated copy
 * and its length in *out_len, or NULL when there is no top-level metadata
 * object (or resourceVersion to replace), or without memory. This spares a
 * version the second encoding of its object. */
static char *splice_rv(const char *text, size_t len, int has_rv, const char *rv, size_t *out_len)
{
    const char *end = text + len, *mb, *me, *vb, *ve;
    if (jspan_member(text, end, "metadata", NULL, &mb, &me) || *mb != '{') return NULL;
    char with[48];
    if (has_rv) {
        if (jspan_member(mb, me, "resourceVersion", NULL, &vb, &ve)) return NULL;
        int n = snprintf(with, sizeof with, "\"%s\"", rv);
        return splice(text, len, vb, ve, with, (size_t)n, out_len);
    }
    const char *q = jspan_ws(mb + 1, me);
    int n = snprintf(with, sizeof with, "\"resourceVersion\":\"%s\"%s", rv, *q == '}' ? "" : ",");
    return splice(text, len, mb + 1, mb + 1, with, (size_t)n, out_len);
}

int wc_obj_copy(const wc_obj_t *o, json_t **out)
{
    json_error_t jerr;
    *out = json_loadb(o->json, o->json_len, 0, &jerr);
    if (json_is_object(*out)) return 0;
    json_decref(*out);
    *out = NULL;
    return json_error_code(&jerr) == json_error_out_of_memory ? KP_ENOMEM : KP_ECORRUPT;
}

/* ---- what selectors read ---- */

/* The texts a version keeps for selectors, built from its doc into `out`
 * (NULL: only measured); the size in bytes. One string per path of `paths`
 * (sel_field_text()), then per label a tag ('s': a string value, 'x':
 * present but no string), its key and its value, then a final '\0' tag. */
static size_t sel_build(const json_t *doc, const char *const *paths, char *out)
{
    size_t n = 0;
    for (const char *const *p = paths; p && *p; p++) {
        char buf[64];
        const char *t = sel_field_text(doc, *p, buf, sizeof buf);
        size_t len = strlen(t) + 1;
        if (out) memcpy(out + n, t, len);
        n += len;
    }
    const char *k;
    const json_t *v;
    json_t *labels = json_object_get(json_object_get(doc, "metadata"), "labels");
    json_object_foreach(labels, k, v) {
        /* Go reads a null label value as "" (sel_label_match()). */
        const char *t = json_is_null(v) ? "" : json_string_value(v);
        size_t kl = strlen(k) + 1, tl = t ? strlen(t) + 1 : 1;
        if (out) {
            out[n] = t ? 's' : 'x';
            memcpy(out + n + 1, k, kl);
            memcpy(out + n + 1 + kl, t ? t : "", tl);
        }
        n += 1 + kl + tl;
    }
    if (out) out[n] = '\0';
    return n + 1;
}

/* The labels part of a version's texts. */
static const char *sel_labels(const wc__obj_t *x)
{
    const char *p = x->sel;
    for (const char *const *f = x->paths; f && *f; f++) p += strlen(p) + 1;
    return p;
}

/* sel_get_fn on a version's labels. */
static const char *sel_label(const void *arg, const char *key)
{
    for (const char *p = sel_labels(arg); *p;) {
        const char *k = p + 1, *v = k + strlen(k) + 1;
        if (!strcmp(k, key)) return *p == 's' ? v : SEL_NOT_STRING;
        p = v + strlen(v) + 1;
    }
    return NULL;
}

const char *wc_obj_field(const wc_obj_t *o, const char *field)
{
    const wc__obj_t *x = (const wc__obj_t *)o;
    if (!strcmp(field, "metadata.name")) return o->name;
    if (!strcmp(field, "metadata.namespace")) return o->ns;
    const char *p = x->sel;
    for (const char *const *f = x->paths; f && *f; f++, p += strlen(p) + 1)
        if (!strcmp(*f, field)) return p;
    return NULL;
}

static const char *sel_field(const void *arg, const char *field)
{
    return wc_obj_field(arg, field);
}

int wc_obj_match(const wc_obj_t *o, const sel_label_t *labels, const sel_field_t *fields)
{
    return sel_label_match_get(labels, sel_label, o) && sel_field_match_get(fields, sel_field, o);
}

/* A new version of `key` named `ns`, `name`, with `json` (taken: freed on
 * every path) and the selectors' texts `sel` (copied; sel_build(), built
 * for `paths`); *out, or KP_ENOMEM. */
static int obj_make(const char *key, size_t key_len, const char *ns, const char *name,
                    int64_t rev, char *json, size_t json_len, const char *const *paths,
                    const char *sel, size_t sel_len, const wc_obj_t **out)
{
    size_t nslen = strlen(ns), namelen = strlen(name);
    size_t strs = key_len + nslen + namelen + 3;
    wc__obj_t *o = json ? malloc(sizeof *o + strs + sel_len) : NULL;
    if (!o) {
        free(json);
        return KP_ENOMEM;
    }
    char *p = o->str;
    memcpy(p, key, key_len);
    p[key_len] = '\0';
    memcpy(p + key_len + 1, ns, nslen + 1);
    memcpy(p + key_len + 1 + nslen + 1, name, namelen + 1);
    memcpy(p + strs, sel, sel_len);
    atomic_init(&o->refs, 1);
    o->json = json;
    o->paths = paths;
    o->sel = p + strs;
    o->sel_len = sel_len;
    o->mem = sizeof *o + strs + sel_len + json_len + 1 + 32;
    o->pub = (wc_obj_t){.rev = rev, .key = p, .ns = p + key_len + 1,
                        .name = p + key_len + 1 + nslen + 1, .json = json, .json_len = json_len};
    *out = &o->pub;
    return 0;
}

/* Publish `doc` (owned; consumed on every path) as the version `rev` of
 * `key`: set metadata.resourceVersion, encode once (invariant 3), keep what
 * selectors read of it (`paths`: wc_config_t.fields), free the rest.
 * `stored` (may be NULL) is doc's encoding, holding no resourceVersion (as
 * stored); when given, the version's encoding is spliced from it. */
static int obj_new(const char *const *paths, const char *key, size_t key_len, json_t *doc,
                   int64_t rev, const char *stored, size_t stored_len, const wc_obj_t **out)
{
    int rc = KP_ENOMEM;
    char *json = NULL;
    size_t json_len = 0;
    json_t *meta = json_object_get(doc, "metadata");
    if (!meta) {
        meta = json_object();
        if (!meta || json_object_set_new(doc, "metadata", meta)) goto fail;
        stored = NULL;
    } else if (!json_is_object(meta)) {
        rc = KP_ECORRUPT;
        goto fail;
    } else if (json_object_get(meta, "resourceVersion")) {
        stored = NULL; /* its text would hold a second one */
    }
    char rv[24];
    snprintf(rv, sizeof rv, "%" PRId64, rev);
    if (json_object_set_new(meta, "resourceVersion", json_string(rv))) goto fail;
    if (stored) json = splice_rv(stored, stored_len, 0, rv, &json_len);
    if (!json) {
        if (!(json = json_dumps(doc, JSON_COMPACT))) goto fail;
        json_len = strlen(json);
    }
    size_t sel_len = sel_build(doc, paths, NULL);
    char small[512], *sel = sel_len <= sizeof small ? small : malloc(sel_len);
    if (!sel) goto fail;
    sel_build(doc, paths, sel);
    rc = obj_make(key, key_len, meta_str(meta, "namespace"), meta_str(meta, "name"), rev, json,
                  json_len, paths, sel, sel_len, out);
    if (sel != small) free(sel);
    json_decref(doc);
    return rc;
fail:
    free(json);
    json_decref(doc);
    return rc;
}

/* The version `o` again at revision `rev` (a delete's last state): its
 * encoding with the resourceVersion replaced, its fields shared. */
static int obj_at(const wc_obj_t *o, int64_t rev, const wc_obj_t **out)
{
    char rv[24];
    size_t len = 0;
    snprintf(rv, sizeof rv, "%" PRId64, rev);
    char *json = splice_rv(o->json, o->json_len, 1, rv, &len);
    const wc__obj_t *x = (const wc__obj_t *)o;
    return obj_make(o->key, strlen(o->key), o->ns, o->name, rev, json, len, x->paths, x->sel,
                    x->sel_len, out);
}

/* What the cache keeps of the stored object `doc` (consumed): converted to
 * the served version when the cache converts (its stored encoding then does
 * not apply: *stored is cleared). NULL when out of memory. */
static json_t *as_served(const wc_t *wc, json_t *doc, const char **stored)
{
    if (!wc || !wc->convert || !doc) return doc;
    *stored = NULL;
    return wc->convert(wc->convert_arg, doc);
}

/* Parse a stored value into an object version. */
static int obj_parse(const wc_t *wc, const store_kv_t *kv, const wc_obj_t **out)
{
    json_error_t jerr;
    json_t *doc = json_loadb(kv->value, kv->value_len, 0, &jerr);
    if (!json_is_object(doc)) {
        log_error("watchcache", "%s at revision %" PRId64 ": not a JSON object: %s", kv->key,
                  kv->mod_rev, doc ? "wrong type" : jerr.text);
        json_decref(doc);
        return KP_ECORRUPT;
    }
    const char *stored = kv->value;
    if (!(doc = as_served(wc, doc, &stored))) return KP_ENOMEM;
    return obj_new(wc->fields, kv->key, kv->key_len, doc, kv->mod_rev, stored, kv->value_len,
                   out);
}

/* ---- offers (invariant 8) ---- */

#ifndef NDEBUG
/* The heap's root is its lowest revision, so all are above the floor. */
static int offers_check(wc_t *wc)
{
    if (wc->offers_n > wc->offers_cap || wc->offers_cap > WC__OFFERS_MAX) return 0;
    return !wc->offers_n || wc->offers[0]->rev > wc->offer_floor;
}
#endif

/* Room for one more offer; needs wc->omu. KP_ETOOLARGE when WC__OFFERS_MAX wait. */
static int offers_room(wc_t *wc)
{
    if (wc->offers_n < wc->offers_cap) return 0;
    if (wc->offers_cap == WC__OFFERS_MAX) return KP_ETOOLARGE;
    size_t cap = wc->offers_cap ? wc->offers_cap * 2 : 64;
    if (cap > WC__OFFERS_MAX) cap = WC__OFFERS_MAX;
    const wc_obj_t **h = realloc(wc->offers, cap * sizeof *h);
    if (!h) return KP_ENOMEM;
    wc->offers = h;
    wc->offers_cap = cap;
    return 0;
}

/* Add `o` (its reference moves to the heap); needs wc->omu and room. */
static void offers_push(wc_t *wc, const wc_obj_t *o)
{
    const wc_obj_t **h = wc->offers;
    size_t i = wc->offers_n++;
    for (; i && h[(i - 1) / 2]->rev > o->rev; i = (i - 1) / 2)
        h[i] = h[(i - 1) / 2];
    h[i] = o;
}

/* Remove the offer with the lowest revision and return its reference; needs
 * wc->omu and an offer. */
static const wc_obj_t *offers_pop(wc_t *wc)
{
    const wc_obj_t **h = wc->offers;
    const wc_obj_t *top = h[0], *last = h[--wc->offers_n];
    size_t i = 0, n = wc->offers_n;
    for (size_t c = 1; c < n; i = c, c = 2 * c + 1) {
        if (c + 1 < n && h[c + 1]->rev < h[c]->rev) c++;
        if (h[c]->rev >= last->rev) break;
        h[i] = h[c];
    }
    h[i] = last;
    return top;
}

/* Keep a reference to `o` for prepare(), unless the cache has passed its
 * revision already or the table is full. */
static void offers_keep(wc_t *wc, const wc_obj_t *o)
{
    pthread_mutex_lock(&wc->omu);
    assert(offers_check(wc));
    if (o->rev > wc->offer_floor && !offers_room(wc)) offers_push(wc, wc_obj_ref(o));
    pthread_mutex_unlock(&wc->omu);
}

/* The cache thread passes revision `rev`: raise the floor, drop every offer
 * at or below it, and return (with its reference) the one of `key` at `rev`
 * if there is one. `key` NULL takes none. */
static const wc_obj_t *offers_take(wc_t *wc, const char *key, int64_t rev)
{
    const wc_obj_t *found = NULL;
    pthread_mutex_lock(&wc->omu);
    assert(offers_check(wc));
    if (rev > wc->offer_floor) wc->offer_floor = rev;
    while (wc->offers_n && wc->offers[0]->rev <= wc->offer_floor) {
        const wc_obj_t *o = offers_pop(wc);
        if (!found && key && o->rev == rev && !strcmp(o->key, key)) {
            found = o;
            continue;
        }
        /* Its event never came (or was of another key): a writer's mistake. */
        log_debug("watchcache", "offer of %s at revision %" PRId64 " not taken", o->key, o->rev);
        wc_obj_unref(o);
    }
    pthread_mutex_unlock(&wc->omu);
    return found;
}

size_t wc_offers_waiting(wc_t *wc)
{
    pthread_mutex_lock(&wc->omu);
    size_t n = wc->offers_n;
    pthread_mutex_unlock(&wc->omu);
    return n;
}

/* Drop every offer and refuse any later one: the cache failed or closes. */
static void offers_clear(wc_t *wc)
{
    pthread_mutex_lock(&wc->omu);
    const wc_obj_t **h = wc->offers;
    size_t n = wc->offers_n;
    wc->offers = NULL;
    wc->offers_n = wc->offers_cap = 0;
    wc->offer_floor = INT64_MAX;
    pthread_mutex_unlock(&wc->omu);
    for (size_t i = 0; i < n; i++)
        wc_obj_unref(h[i]);
    free(h);
}

int wc_offer(wc_t *wc, const char *key, int64_t rev, json_t *doc, const char *stored,
             size_t stored_len, const wc_obj_t **out)
{
    *out = NULL;
    if (!key || !json_is_object(doc)) {
        json_decref(doc);
        return KP_EINVAL;
    }
    if (!(doc = as_served(wc, doc, &stored))) return KP_ENOMEM;
    /* outside every lock */
    int rc = obj_new(wc ? wc->fields : NULL, key, strlen(key), doc, rev, stored, stored_len, out);
    if (!rc && wc) offers_keep(wc, *out);
    return rc;
}

/* ---- the map: a skip list ordered by key ---- */

/* The first node with key >= `key` (> when `after`); `upd` (may be NULL) gets
 * the last node before it on every level. Needs wc->mu, or the cache thread. */
static wc__node_t *map_seek(wc_t *wc, const char *key, int after, wc__node_t **upd)
{
    wc__node_t *x = wc->head;
    for (int i = wc->height - 1; i >= 0; i--) {
        while (x->next[i] && strcmp(x->next[i]->obj->key, key) < after) x = x->next[i];
        if (upd) upd[i] = x;
    }
    return x->next[0];
}

static wc__node_t *map_find(wc_t *wc, const char *key)
{
    wc__node_t *n = map_seek(wc, key, 0, NULL);
    return n && strcmp(n->obj->key, key) == 0 ? n : NULL;
}

static int map_random_height(wc_t *wc)
{
    uint64_t x = wc->rng; /* xorshift64 */
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    wc->rng = x;
    int h = 1;
    while (h < WC__SKIP_MAX && (x & 3) == 0) {
        h++;
        x >>= 2;
    }
    return h;
}

/* Insert `obj` (its reference moves to the map); the key must be absent. */
static int map_insert(wc_t *wc, const wc_obj_t *obj)
{
    wc__node_t *upd[WC__SKIP_MAX];
    map_seek(wc, obj->key, 0, upd);
    int h = map_random_height(wc);
    wc__node_t *n = malloc(sizeof *n + (size_t)h * sizeof n->next[0]);
    if (!n) return KP_ENOMEM;
    n->obj = obj;
    wc->map_n++;
    wc->map_bytes += obj_mem(obj) + sizeof *n + (size_t)h * sizeof n->next[0];
    for (int i = wc->height; i < h; i++) upd[i] = wc->head;
    if (h > wc->height) wc->height = h;
    for (int i = 0; i < h; i++) {
        n->next[i] = upd[i]->next[i];
        upd[i]->next[i] = n;
    }
    return 0;
}

/* Unlink the node of `key` and return its object reference. */
static const wc_obj_t *map_remove(wc_t *wc, const char *key)
{
    wc__node_t *upd[WC__SKIP_MAX];
    wc__node_t *n = map_seek(wc, key, 0, upd);
    assert(n && strcmp(n->obj->key, key) == 0);
    int h = 0;
    for (int i = 0; i < wc->height && upd[i]->next[i] == n; i++, h++)
        upd[i]->next[i] = n->next[i];
    while (wc->height > 1 && !wc->head->next[wc->height - 1]) wc->height--;
    const wc_obj_t *obj = n->obj;
    wc->map_n--;
    wc->map_bytes -= obj_mem(obj) + sizeof *n + (size_t)h * sizeof n->next[0];
    free(n);
    return obj;
}

static void map_clear(wc_t *wc)
{
    wc__node_t *n = wc->head->next[0];
    while (n) {
        wc__node_t *next = n->next[0];
        wc_obj_unref(n->obj);
        free(n);
        n = next;
    }
    memset(wc->head->next, 0, WC__SKIP_MAX * sizeof wc->head->next[0]);
    wc->height = 1;
    wc->map_n = wc->map_bytes = 0;
}

/* ---- the ring ---- */

static wc_event_t *ring_at(wc_t *wc, size_t i)
{
    return &wc->ring[(wc->ring_head + i) % wc->ring_cap];
}

/* Append `ev` (its references move to the ring), evicting the oldest until
 * it fits the count and the budget (invariant 1). */
static void ring_push(wc_t *wc, const wc_event_t *ev)
{
    size_t cost = event_cost(ev);
    while (wc->ring_n &&
           (wc->ring_n == wc->ring_cap || wc->ring_bytes + cost > wc->ring_budget)) {
        wc_event_t *old = ring_at(wc, 0);
        wc->ring_floor = old->rev;
        wc->ring_bytes -= event_cost(old);
        wc_event_clear(old);
        wc->ring_head = (wc->ring_head + 1) % wc->ring_cap;
        wc->ring_n--;
    }
    *ring_at(wc, wc->ring_n++) = *ev;
    wc->ring_bytes += cost;
}

/* Index of the first ring event with rev > after_rev. */
static size_t ring_search(wc_t *wc, int64_t after_rev)
{
    size_t lo = 0, hi = wc->ring_n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ring_at(wc, mid)->rev <= after_rev)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

#ifndef NDEBUG
static int wc_check(wc_t *wc)
{
    if (wc->ring_n > wc->ring_cap || wc->ring_floor > wc->rev) return 0;
    if (wc->ring_n > 1 && wc->ring_bytes > wc->ring_budget) return 0;
    if (!wc->ring_n && wc->ring_bytes) return 0;
    if (wc->ring_n && (ring_at(wc, 0)->rev <= wc->ring_floor ||
                       ring_at(wc, wc->ring_n - 1)->rev > wc->rev))
        return 0;
    return wc->height >= 1 && wc->height <= WC__SKIP_MAX;
}
#endif

/* ---- watchers' queues ---- */

static int key_matches(const char *key, const char *prefix, size_t plen)
{
    return strncmp(key, prefix, plen) == 0;
}

/* Append `ev` (its references move to the queue). The caller checked room. */
static int q_push(wc_watcher_t *w, const wc_event_t *ev)
{
    if (w->qn == w->qcap) {
        size_t cap = w->qcap ? w->qcap * 2 : 16;
        if (cap > w->qmax) cap = w->qmax;
        wc_event_t *q = malloc(cap * sizeof *q);
        if (!q) return KP_ENOMEM;
        for (size_t i = 0; i < w->qn; i++) q[i] = w->q[(w->qhead + i) % w->qcap];
        free(w->q);
        w->q = q;
        w->qcap = cap;
        w->qhead = 0;
    }
    w->q[(w->qhead + w->qn++) % w->qcap] = *ev;
    w->qbytes += q_cost(ev);
    return 0;
}

/* The cache ends `w` (if it is not ended already) and tells its owner, once
 * (invariant 6). Needs wc->mu. */
int wc_watcher_end_code(const wc_watcher_t *w) { return w->end; }

static void watcher_end(wc_watcher_t *w, int rc)
{
    if (!w->end) w->end = rc;
    if (!w->told) {
        w->told = 1;
        if (w->on_end) w->on_end(w->on_end_arg);
    }
    pthread_cond_signal(&w->cv);
}

/* Give `ev` to `w` if it is under its prefix; never blocks (invariant 6). */
static void deliver(wc_watcher_t *w, const wc_event_t *ev)
{
    if (w->end || w->cancelled || !key_matches(ev->obj->key, w->prefix, w->plen)) return;
    size_t live = w->qn - w->replay_left;
    size_t head = live ? q_cost(&w->q[(w->qhead + w->replay_left) % w->qcap]) : 0;
    if (live >= w->backlog ||
        (live && w->qbytes - w->replay_bytes - head + q_cost(ev) > w->backlog_bytes)) {
        log_debug("watchcache", "watcher on %s ended at revision %" PRId64 ": too slow (%zu "
                  "events, %zu bytes queued)", w->prefix, ev->rev, live,
                  w->qbytes - w->replay_bytes);
        watcher_end(w, KP_ETOOLARGE);
        return;
    }
    wc_event_t c = event_ref(ev);
    int rc = q_push(w, &c);
    if (rc) {
        wc_event_clear(&c);
        watcher_end(w, rc); /* out of memory: end it like a slow one */
        return;
    }
    pthread_cond_signal(&w->cv);
    if (w->qn == 1 && w->on_ready) w->on_ready(w->on_ready_arg);
}

/* ---- lifetime ---- */

static void wc_free(wc_t *wc)
{
    pthread_mutex_destroy(&wc->omu);
    pthread_mutex_destroy(&wc->mu);
    pthread_cond_destroy(&wc->cv);
    free(wc->ring);
    free(wc->head);
    free(wc->prefix);
    free(wc);
}

/* Drop one reference taken under wc->mu; call with wc->mu held. Unlocks. */
static void wc_unref_unlock(wc_t *wc)
{
    int last = --wc->refs == 0;
    pthread_mutex_unlock(&wc->mu);
    if (last) wc_free(wc);
}

/* Wait on `cv` (with wc->mu held) until `deadline`, or forever when
 * timeout_ms < 0. Returns 1 once the deadline has passed. */
static int cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int timeout_ms,
                           const struct timespec *deadline)
{
    if (timeout_ms == 0) return 1;
    if (timeout_ms < 0) {
        pthread_cond_wait(cv, mu);
        return 0;
    }
    return pthread_cond_timedwait(cv, mu, deadline) == ETIMEDOUT;
}

/* Wait with wc->mu held until wc->rev >= rev. The caller holds a reference
 * of its own (invariant 7), so that wc_close() may run meanwhile. */
static int wait_rev_locked(wc_t *wc, int64_t rev, int timeout_ms)
{
    struct timespec dl = clock_deadline_ms(timeout_ms > 0 ? timeout_ms : 0);
    int rc = 0, asked = 0;
    for (;;) {
        if (wc->closed) {
            rc = KP_ECLOSED;
            break;
        }
        if (wc->rev >= rev) break;
        if (wc->err) {
            rc = wc->err;
            break;
        }
        if (rc == KP_ETIMEDOUT) break;
        /* Writes under other prefixes do not wake our store watch; ask it to
         * read up to the newest revision now (etcd's RequestProgress). */
        if (!asked && wc->sw) store_watch_request_progress(wc->sw);
        asked = 1;
        if (cond_wait_until(&wc->cv, &wc->mu, timeout_ms, &dl)) rc = KP_ETIMEDOUT;
    }
    return rc;
}

/* ---- the cache thread ---- */

/* Turn a store event into a cache event, outside wc->mu: only this thread
 * changes the map, so it may read it unlocked (invariant 4). */
static int prepare(wc_t *wc, const store_event_t *sev, wc_event_t *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->rev = sev->kv.mod_rev;
    wc__node_t *n = map_find(wc, sev->kv.key);
    if (!n != !sev->has_prev || (n && n->obj->rev != sev->prev.mod_rev)) {
        log_error("watchcache", "%s at revision %" PRId64 ": the cache does not match the store",
                  sev->kv.key, sev->kv.mod_rev);
        return KP_ECORRUPT;
    }
    if (sev->type == STORE_PUT) {
        ev->type = n ? WC_MODIFIED : WC_ADDED;
        ev->prev = n ? n->obj : NULL; /* the map's reference moves here in apply() */
        ev->obj = offers_take(wc, sev->kv.key, ev->rev); /* the writer's, if offered */
        return ev->obj ? 0 : obj_parse(wc, &sev->kv, &ev->obj);
    }
    if (!n) return KP_ECORRUPT;
    ev->type = WC_DELETED;
    ev->prev = n->obj;
    return obj_at(n->obj, ev->rev, &ev->obj);
}

/* Apply a prepared event: map, ring, watchers and rev in one lock hold. */
static int apply(wc_t *wc, wc_event_t *ev, int64_t rev)
{
    pthread_mutex_lock(&wc->mu);
    assert(wc_check(wc));
    int rc = 0;
    if (ev->type == WC_ADDED) {
        rc = map_insert(wc, wc_obj_ref(ev->obj));
        if (rc) wc_obj_unref(ev->obj);
    } else if (ev->type == WC_MODIFIED) {
        wc__node_t *n = map_find(wc, ev->obj->key);
        wc->map_bytes += obj_mem(ev->obj) - obj_mem(n->obj);
        n->obj = wc_obj_ref(ev->obj);
    } else {
        const wc_obj_t *old = map_remove(wc, ev->obj->key); /* its reference is ev->prev's */
        assert(old == ev->prev);
        (void)old;
    }
    if (!rc) {
        ring_push(wc, ev);
        for (wc_watcher_t *w = wc->watchers; w; w = w->next_w) deliver(w, ev);
        wc->rev = rev > ev->rev ? rev : ev->rev;
        pthread_cond_broadcast(&wc->cv);
    }
    pthread_mutex_unlock(&wc->mu);
    if (rc) {
        wc_obj_unref(ev->obj); /* prev stays the map's */
        memset(ev, 0, sizeof *ev);
    }
    return rc;
}

/* End the watchers past their deadline, at most every WC__POLL_MS: their
 * owners may be blocked where wc_watcher_next() never runs. */
static void reap(wc_t *wc)
{
    int64_t now = clock_mono_ns();
    if (now - wc->reaped_ns < (int64_t)WC__POLL_MS * 1000000) return;
    wc->reaped_ns = now;
    pthread_mutex_lock(&wc->mu);
    for (wc_watcher_t *w = wc->watchers; w; w = w->next_w)
        if (w->deadline_ns && now >= w->deadline_ns && !w->end && !w->cancelled)
            watcher_end(w, KP_ETIMEDOUT);
    pthread_mutex_unlock(&wc->mu);
}

static void advance(wc_t *wc, int64_t rev)
{
    offers_take(wc, NULL, rev); /* events up to rev came: what is left never will */
    pthread_mutex_lock(&wc->mu);
    if (rev > wc->rev) {
        wc->rev = rev;
        pthread_cond_broadcast(&wc->cv);
    }
    pthread_mutex_unlock(&wc->mu);
}

/* Stop following for good: wake waiters and end every watcher with `rc`. */
static void cache_fail(wc_t *wc, int rc)
{
    offers_clear(wc); /* first: whoever sees the failure sees no offer kept */
    pthread_mutex_lock(&wc->mu);
    if (!wc->closed && rc != KP_ECLOSED)
        log_error("watchcache", "%s: stopped following the store at revision %" PRId64 ": %s",
                  wc->prefix, wc->rev, err_str(rc));
    wc->err = rc;
    for (wc_watcher_t *w = wc->watchers; w; w = w->next_w) watcher_end(w, rc);
    pthread_cond_broadcast(&wc->cv);
    pthread_mutex_unlock(&wc->mu);
}

void wc_end(wc_t *wc)
{
    pthread_mutex_lock(&wc->mu);
    wc->ended = 1;
    for (wc_watcher_t *w = wc->watchers; w; w = w->next_w) {
        w->cancelled = 1;
        watcher_end(w, KP_ECLOSED);
    }
    pthread_mutex_unlock(&wc->mu);
}

static void *cache_run(void *arg)
{
    wc_t *wc = arg;
    { /* "wc:pods" for the prefix "/registry/pods/" */
        char last[64];
        size_t n = strlen(wc->prefix);
        while (n && wc->prefix[n - 1] == '/') n--;
        size_t b = n;
        while (b && wc->prefix[b - 1] != '/') b--;
        snprintf(last, sizeof last, "%.*s", (int)(n - b), wc->prefix + b);
        log_thread_name("wc", last);
    }
    for (;;) {
        reap(wc);
        const store_event_t *sev;
        int rc = store_watch_next(wc->sw, WC__POLL_MS, &sev);
        if (rc == KP_ETIMEDOUT) {
            advance(wc, store_watch_revision(wc->sw));
            continue;
        }
        if (!rc && sev->type == STORE_PROGRESS) {
            advance(wc, sev->kv.mod_rev);
            continue;
        }
        wc_event_t ev;
        if (!rc) rc = prepare(wc, sev, &ev);
        if (!rc) rc = apply(wc, &ev, store_watch_revision(wc->sw));
        if (rc) { /* a failed prepare() or apply() holds no references */
            cache_fail(wc, rc);
            return NULL;
        }
    }
}

/* ---- the cache ---- */

static int load(wc_t *wc)
{
    store_range_t *r = NULL;
    char *after = NULL;
    int64_t rev = 0;
    int rc;
    do {
        if ((rc = store_range(wc->store, wc->prefix, after, WC__PAGE, rev, &r))) break;
        rev = r->revision;
        for (size_t i = 0; i < r->count && !rc; i++) {
            const wc_obj_t *o;
            rc = obj_parse(wc, &r->kvs[i], &o);
            if (!rc) {
                rc = map_insert(wc, o);
                if (rc) wc_obj_unref(o);
            }
        }
        free(after);
        after = NULL;
        if (!rc && r->more && !(after = strdup(r->kvs[r->count - 1].key))) rc = KP_ENOMEM;
        int more = r->more;
        store_range_free(r);
        if (!more) break;
    } while (!rc);
    free(after);
    wc->rev = wc->ring_floor = wc->offer_floor = rev;
    return rc;
}

int wc_open(store_t *store, const char *prefix, const wc_config_t *cfg, wc_t **out)
{
    *out = NULL;
    if (!store || !prefix) return KP_EINVAL;
    size_t history = cfg && cfg->history ? cfg->history : WC__HISTORY_DEFAULT;
    size_t history_bytes = cfg && cfg->history_bytes ? cfg->history_bytes : WC_HISTORY_BYTES;
    int rc = KP_ENOMEM;
    wc_t *wc = calloc(1, sizeof *wc);
    if (!wc) return KP_ENOMEM;
    wc->store = store;
    wc->refs = 1;
    wc->height = 1;
    wc->rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)wc;
    wc->ring_cap = history;
    wc->ring_budget = history_bytes;
    wc->convert = cfg ? cfg->convert : NULL;
    wc->convert_arg = cfg ? cfg->convert_arg : NULL;
    wc->fields = cfg ? cfg->fields : NULL;
    if (pthread_mutex_init(&wc->mu, NULL)) {
        free(wc);
        return KP_ENOMEM;
    }
    if (clock_cond_init(&wc->cv)) {
        pthread_mutex_destroy(&wc->mu);
        free(wc);
        return KP_ENOMEM;
    }
    if (pthread_mutex_init(&wc->omu, NULL)) {
        pthread_cond_destroy(&wc->cv);
        pthread_mutex_destroy(&wc->mu);
        free(wc);
        return KP_ENOMEM;
    }
    if (!(wc->prefix = strdup(prefix)) ||
        !(wc->head = calloc(1, sizeof *wc->head + WC__SKIP_MAX * sizeof wc->head->next[0])) ||
        !(wc->ring = calloc(history, sizeof *wc->ring)))
        goto fail;
    if ((rc = load(wc))) goto fail;
    if ((rc = store_watch_open(store, prefix, wc->rev, &wc->sw))) goto fail;
    /* Learn promptly that writes elsewhere moved the store on: a consistent
     * list waits for the cache to reach the store's revision. */
    store_watch_progress(wc->sw, 1);
    if (pthread_create(&wc->thread, NULL, cache_run, wc)) {
        rc = KP_ENOMEM;
        goto fail;
    }
    *out = wc;
    return 0;
fail:
    store_watch_close(wc->sw);
    if (wc->head) map_clear(wc);
    wc_free(wc);
    return rc;
}

void wc_close(wc_t *wc)
{
    if (!wc) return;
    store_watch_cancel(wc->sw);
    pthread_join(wc->thread, NULL);
    offers_clear(wc);            /* no writer offers once wc_close() has begun */
    pthread_mutex_lock(&wc->mu); /* waiters use wc->sw under wc->mu */
    store_watch_t *sw = wc->sw;
    wc->sw = NULL;
    pthread_mutex_unlock(&wc->mu);
    store_watch_close(sw);

    pthread_mutex_lock(&wc->mu);
    wc->closed = 1;
    for (wc_watcher_t *w = wc->watchers; w; w = w->next_w) watcher_end(w, KP_ECLOSED);
    pthread_cond_broadcast(&wc->cv);
    map_clear(wc);
    for (size_t i = 0; i < wc->ring_n; i++) wc_event_clear(ring_at(wc, i));
    wc->ring_n = 0;
    wc->ring_bytes = 0;
    wc_unref_unlock(wc);
}

int64_t wc_revision(wc_t *wc)
{
    pthread_mutex_lock(&wc->mu);
    int64_t rev = wc->rev;
    pthread_mutex_unlock(&wc->mu);
    return rev;
}

int64_t wc_oldest(wc_t *wc)
{
    pthread_mutex_lock(&wc->mu);
    int64_t rev = wc->ring_floor;
    pthread_mutex_unlock(&wc->mu);
    return rev;
}

void wc_history_usage(wc_t *wc, size_t *bytes, size_t *events)
{
    pthread_mutex_lock(&wc->mu);
    if (bytes) *bytes = wc->ring_bytes;
    if (events) *events = wc->ring_n;
    pthread_mutex_unlock(&wc->mu);
}

void wc_objects_usage(wc_t *wc, size_t *bytes, size_t *count)
{
    pthread_mutex_lock(&wc->mu);
    if (bytes) *bytes = wc->map_bytes;
    if (count) *count = wc->map_n;
    pthread_mutex_unlock(&wc->mu);
}

int wc_wait(wc_t *wc, int64_t rev, int timeout_ms)
{
    pthread_mutex_lock(&wc->mu);
    wc->refs++;
    int rc = wait_rev_locked(wc, rev, timeout_ms);
    wc_unref_unlock(wc);
    return rc;
}

/* Append `o` (a reference taken) to l, or report that the limit is reached.
 * Returns 1 when l is full (l->more set), 0 when added, KP_ENOMEM. */
static int list_add(wc_list_t *l, size_t limit, size_t *cap, const wc_obj_t *o)
{
    if (limit && l->count == limit) {
        l->more = 1;
        return 1;
    }
    if (l->count == *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        if (limit && c > limit) c = limit;
        const wc_obj_t **objs = realloc(l->objs, c * sizeof *objs);
        if (!objs) return KP_ENOMEM;
        l->objs = objs;
        *cap = c;
    }
    l->objs[l->count++] = wc_obj_ref(o);
    return 0;
}

int wc_list(wc_t *wc, const char *key_prefix, const char *after_key, size_t limit,
            int64_t min_rev, int timeout_ms, wc_list_t **out)
{
    *out = NULL;
    if (!key_prefix) key_prefix = "";
    size_t plen = strlen(key_prefix);
    wc_list_t *l = calloc(1, sizeof *l);
    if (!l) return KP_ENOMEM;

    pthread_mutex_lock(&wc->mu);
    wc->refs++;
    int rc = wait_rev_locked(wc, min_rev, timeout_ms);
    if (rc) goto out;
    l->rev = wc->rev;
    wc__node_t *n = after_key && strcmp(after_key, key_prefix) >= 0
                        ? map_seek(wc, after_key, 1, NULL)
                        : map_seek(wc, key_prefix, 0, NULL);
    size_t cap = 0;
    for (; n && key_matches(n->obj->key, key_prefix, plen); n = n->next[0])
        if ((rc = list_add(l, limit, &cap, n->obj))) break;
    if (rc == 1) rc = 0;
out:
    wc_unref_unlock(wc);
    if (rc) {
        wc_list_free(l);
        return rc;
    }
    *out = l;
    return 0;
}

void wc_list_free(wc_list_t *l)
{
    if (!l) return;
    for (size_t i = 0; i < l->count; i++) wc_obj_unref(l->objs[i]);
    free(l->objs);
    free(l);
}

/* A key's state at a past revision: the state before its first change
 * after that revision (NULL: it did not exist then). `idx`, the change's
 * place in the ring, orders the changes of one key. */
typedef struct past {
    const char *key;
    const wc_obj_t *obj;
    size_t idx;
} past_t;

static int past_cmp(const void *a, const void *b)
{
    const past_t *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : x->idx < y->idx ? -1 : x->idx > y->idx;
}

int wc_list_at(wc_t *wc, const char *key_prefix, const char *after_key, size_t limit, int64_t rev,
               wc_list_t **out)
{
    *out = NULL;
    if (!key_prefix) key_prefix = "";
    size_t plen = strlen(key_prefix);
    wc_list_t *l = calloc(1, sizeof *l);
    if (!l) return KP_ENOMEM;
    past_t *past = NULL;
    size_t npast = 0, cap = 0;
    int rc = 0;
    pthread_mutex_lock(&wc->mu);
    if (wc->closed)
        rc = KP_ECLOSED;
    else if (wc->err)
        rc = wc->err;
    else if (rev < wc->ring_floor || rev > wc->rev)
        rc = KP_ECOMPACTED; /* the history does not cover it (invariant 1) */
    if (rc) goto out;
    l->rev = rev;
    int from_start = !after_key || strcmp(after_key, key_prefix) < 0;
    /* The keys of the page changed after rev, each with its state at rev. */
    size_t first = ring_search(wc, rev);
    if (wc->ring_n > first && !(past = malloc((wc->ring_n - first) * sizeof *past))) {
        rc = KP_ENOMEM;
        goto out;
    }
    for (size_t i = first; i < wc->ring_n; i++) {
        const wc_event_t *ev = ring_at(wc, i);
        const char *k = ev->obj->key;
        if (!key_matches(k, key_prefix, plen) || (!from_start && strcmp(k, after_key) <= 0))
            continue;
        past[npast++] = (past_t){k, ev->type == WC_ADDED ? NULL : ev->prev, i};
    }
    if (npast) qsort(past, npast, sizeof *past, past_cmp);
    size_t kept = 0; /* each key's first change only */
    for (size_t i = 0; i < npast; i++)
        if (!kept || strcmp(past[kept - 1].key, past[i].key)) past[kept++] = past[i];
    npast = kept;
    /* Merge the current objects with those states, in key order. */
    wc__node_t *n =
        from_start ? map_seek(wc, key_prefix, 0, NULL) : map_seek(wc, after_key, 1, NULL);
    size_t p = 0;
    for (;;) {
        int live = n && key_matches(n->obj->key, key_prefix, plen);
        if (!live && p == npast) break;
        int c = !live ? 1 : p == npast ? -1 : strcmp(n->obj->key, past[p].key);
        const wc_obj_t *o = c < 0 ? n->obj : past[p].obj;
        if (c <= 0) n = n->next[0];
        if (c >= 0) p++;
        if (o && (rc = list_add(l, limit, &cap, o))) break;
    }
    if (rc == 1) rc = 0;
out:
    pthread_mutex_unlock(&wc->mu);
    free(past);
    if (rc) {
        wc_list_free(l);
        return rc;
    }
    *out = l;
    return 0;
}

int wc_get(wc_t *wc, const char *key, const wc_obj_t **out)
{
    *out = NULL;
    if (!key) return KP_EINVAL;
    pthread_mutex_lock(&wc->mu);
    wc__node_t *n = wc->closed ? NULL : map_find(wc, key);
    if (n) *out = wc_obj_ref(n->obj);
    int closed = wc->closed;
    pthread_mutex_unlock(&wc->mu);
    return n ? 0 : closed ? KP_ECLOSED : KP_ENOTFOUND;
}

/* ---- watchers ---- */

/* Queue the ring's events above after_rev under w's prefix (invariant 2). */
static int replay(wc_t *wc, wc_watcher_t *w, int64_t after_rev)
{
    size_t first = ring_search(wc, after_rev), n = 0;
    for (size_t i = first; i < wc->ring_n; i++)
        n += key_matches(ring_at(wc, i)->obj->key, w->prefix, w->plen);
    w->qmax = w->backlog + n;
    w->replay_left = n;
    for (size_t i = first; i < wc->ring_n && n; i++) {
        const wc_event_t *ev = ring_at(wc, i);
        if (!key_matches(ev->obj->key, w->prefix, w->plen)) continue;
        wc_event_t c = event_ref(ev);
        int rc = q_push(w, &c);
        if (rc) {
            wc_event_clear(&c);
            return rc;
        }
        w->replay_bytes += q_cost(&c);
    }
    return 0;
}

static void watcher_free(wc_watcher_t *w)
{
    for (size_t i = 0; i < w->qn; i++) wc_event_clear(&w->q[(w->qhead + i) % w->qcap]);
    pthread_cond_destroy(&w->cv);
    free(w->q);
    free(w->prefix);
    free(w);
}

int wc_watch(wc_t *wc, const char *key_prefix, int64_t after_rev, const wc_watch_opts_t *opts,
             wc_watcher_t **out)
{
    *out = NULL;
    if (!key_prefix) key_prefix = "";
    wc_watcher_t *w = calloc(1, sizeof *w);
    if (!w) return KP_ENOMEM;
    if (!(w->prefix = strdup(key_prefix)) || clock_cond_init(&w->cv)) {
        free(w->prefix);
        free(w);
        return KP_ENOMEM;
    }
    w->wc = wc;
    w->plen = strlen(key_prefix);
    w->backlog = opts && opts->backlog ? opts->backlog : WC__BACKLOG_DEFAULT;
    w->backlog_bytes = opts && opts->backlog_bytes ? opts->backlog_bytes : WC_QUEUE_BYTES;
    w->qmax = w->backlog;
    if (opts) {
        w->deadline_ns = opts->deadline_ns;
        w->on_end = opts->on_end;
        w->on_end_arg = opts->on_end_arg;
        w->on_ready = opts->on_ready;
        w->on_ready_arg = opts->on_ready_arg;
    }

    /* A revision the store has not reached is not worth waiting for. The
     * store's compaction point does not matter: the ring is complete above
     * its floor (invariant 1), which is at or above the compaction point the
     * initial range was read at. */
    int rc = 0;
    int64_t now_rev;
    if (after_rev > wc_revision(wc) && !(rc = store_revision(wc->store, &now_rev)) &&
        after_rev > now_rev)
        rc = KP_EFUTURE;
    if (rc) {
        watcher_free(w);
        return rc;
    }

    pthread_mutex_lock(&wc->mu);
    assert(wc_check(wc));
    wc->refs++;
    if (after_rev >= 0) {
        rc = wait_rev_locked(wc, after_rev, WC__FUTURE_WAIT_MS);
        if (rc == KP_ETIMEDOUT) rc = KP_EFUTURE;
        if (!rc && after_rev < wc->ring_floor) rc = KP_ECOMPACTED;
        if (!rc) rc = replay(wc, w, after_rev);
    }
    if (!rc && (wc->closed || wc->ended)) rc = KP_ECLOSED;
    if (!rc && wc->err) rc = wc->err;
    if (!rc) {
        w->next_w = wc->watchers;
        if (wc->watchers) wc->watchers->prev_w = w;
        wc->watchers = w;
        wc->refs++; /* invariant 7: the watcher's own reference */
    }
    wc_unref_unlock(wc);
    if (rc) {
        watcher_free(w);
        return rc;
    }
    *out = w;
    return 0;
}

int wc_watcher_next(wc_watcher_t *w, int timeout_ms, wc_event_t *ev)
{
    memset(ev, 0, sizeof *ev);
    wc_t *wc = w->wc;
    struct timespec dl = clock_deadline_ms(timeout_ms > 0 ? timeout_ms : 0);
    int rc = 0;
    pthread_mutex_lock(&wc->mu);
    for (;;) {
        if (w->cancelled || wc->closed) {
            rc = KP_ECLOSED;
            break;
        }
        if (w->qn) {
            *ev = w->q[w->qhead];
            w->qhead = (w->qhead + 1) % w->qcap;
            w->qn--;
            w->qbytes -= q_cost(ev);
            if (w->replay_left) {
                w->replay_left--;
                w->replay_bytes -= q_cost(ev);
            }
            rc = 0;
            break;
        }
        if (w->end) {
            rc = w->end;
            break;
        }
        if (rc == KP_ETIMEDOUT) break;
        if (cond_wait_until(&w->cv, &wc->mu, timeout_ms, &dl)) rc = KP_ETIMEDOUT;
    }
    pthread_mutex_unlock(&wc->mu);
    return rc;
}

void wc_watcher_cancel(wc_watcher_t *w)
{
    pthread_mutex_lock(&w->wc->mu);
    w->cancelled = 1;
    w->told = 1; /* its owner knows */
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->wc->mu);
}

void wc_watcher_close(wc_watcher_t *w)
{
    if (!w) return;
    wc_t *wc = w->wc;
    pthread_mutex_lock(&wc->mu);
    if (w->prev_w)
        w->prev_w->next_w = w->next_w;
    else
        wc->watchers = w->next_w;
    if (w->next_w) w->next_w->prev_w = w->prev_w;
    wc_unref_unlock(wc);
    watcher_free(w);
}
