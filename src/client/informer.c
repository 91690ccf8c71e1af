/*
 * informer.c -- a cached, indexed, watched view of one resource: client-go's
 * reflector (list, then watch from the list's resourceVersion), indexer (a
 * keyed store with secondary indexes) and shared informer (handlers),
 * simplified into one thread and one lock.
 *
 * The thread (run()):
 *
 *        +--------- KP_ECOMPACTED (410) ----------+
 *        v                                        |
 *   LIST (rv "") --ok--> replace() --> WATCH from rv --event--> apply_event()
 *        |                                  |   ^    \
 *     error: back off                       |   |     ETIMEDOUT: resync if due
 *                                           |   +-- KP_ECLOSED: re-watch
 *                                           +-- other errors: back off, re-watch
 *
 * Back-off starts at 100 ms and doubles to 5 s; any success resets it. A
 * re-watch from a resourceVersion the server no longer has answers 410,
 * which relists; so a server restart or a long outage ends in a relist.
 *
 * Invariants:
 *  1. Every cached object is a shared, never-modified json_t; the cache
 *     holds one reference per entry. Cache readers get their own reference.
 *  2. For every index I, every entry e and every value v that I's function
 *     gives for e->obj: I.vals[v] contains e->key -> e, and nothing else is
 *     in I.vals. An empty value set is removed. (Kept by index_add() and
 *     index_del(), always called in pairs around a change of e->obj.)
 *  3. inf->rv is the resourceVersion of the newest list or event applied to
 *     the cache; the cache, the indexes and inf->rv change together under
 *     inf->mu held for writing.
 *  4. Handlers see events in the order the cache applied them, on the
 *     informer's thread, never with inf->mu held: the cache is updated
 *     first, so a handler that reads the cache sees its own event applied.
 *  5. synced goes 0 -> 1 once, after the first list's handlers returned.
 *  6. A handler added to a running informer first gets on_add for every
 *     cached object, then every later event: none missed, none twice. The
 *     thread holds inf->hmu from applying an event (or a list) to the cache
 *     until its handlers returned; adding or removing a handler holds it too.
 *
 * Locks, in this order: inf->hmu (the handlers), inf->mu (rwlock: the
 * cache, the indexes and rv), and apart from both inf->smu (the lifecycle:
 * started, stopping, synced, the open watch), never held with either.
 *
 * Memory: a hash map per table, so an event costs O(1) plus its index
 * values; a relist costs O(objects).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_int.h"
#include "client/informer.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"

#define KC_IX_VALS        16 /* index values kept per object and index */
#define KC_RV_MAX         128
#define KC_BACKOFF_MIN_MS 100
#define KC_BACKOFF_MAX_MS 5000
#define KC_WATCH_MIN_S    300 /* watch timeouts are random in [300, 600) s */
#define KC_QUICK_CLOSE_MS 1000

/* ---- a string-keyed hash map (chained, power-of-two buckets) ---- */

typedef struct hnode {
    struct hnode *next;
    uint64_t h;
    void *val; /* never NULL */
    char key[];
} hnode_t;

typedef struct hmap {
    hnode_t **b;
    size_t nb, n;
} hmap_t;

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static hnode_t **hmap_slot(const hmap_t *m, const char *key, uint64_t h)
{
    hnode_t **p = &m->b[h & (m->nb - 1)];
    while (*p && ((*p)->h != h || strcmp((*p)->key, key)))
        p = &(*p)->next;
    return p;
}

static void *hmap_get(const hmap_t *m, const char *key)
{
    if (!m->nb) return NULL;
    hnode_t *n = *hmap_slot(m, key, hash_str(key));
    return n ? n->val : NULL;
}

static void hmap_grow(hmap_t *m)
{
    size_t nb = m->nb ? m->nb * 2 : 16;
    hnode_t **b = calloc(nb, sizeof *b);
    if (!b) return; /* longer chains, still correct */
    for (size_t i = 0; i < m->nb; i++)
        for (hnode_t *n = m->b[i], *next; n; n = next) {
            next = n->next;
            n->next = b[n->h & (nb - 1)];
            b[n->h & (nb - 1)] = n;
        }
    free(m->b);
    m->b = b;
    m->nb = nb;
}

/* Insert or replace. Errors: KP_ENOMEM (the map is unchanged). */
static int hmap_put(hmap_t *m, const char *key, void *val)
{
    if (m->n >= m->nb) hmap_grow(m);
    if (!m->nb) return KP_ENOMEM;
    uint64_t h = hash_str(key);
    hnode_t **p = hmap_slot(m, key, h);
    if (*p) {
        (*p)->val = val;
        return 0;
    }
    size_t len = strlen(key);
    hnode_t *n = malloc(sizeof *n + len + 1);
    if (!n) return KP_ENOMEM;
    n->next = NULL;
    n->h = h;
    n->val = val;
    memcpy(n->key, key, len + 1);
    *p = n;
    m->n++;
    return 0;
}

/* Remove key; its value, or NULL. */
static void *hmap_del(hmap_t *m, const char *key)
{
    if (!m->nb) return NULL;
    hnode_t **p = hmap_slot(m, key, hash_str(key));
    hnode_t *n = *p;
    if (!n) return NULL;
    void *val = n->val;
    *p = n->next;
    free(n);
    m->n--;
    return val;
}

static void hmap_clear(hmap_t *m, void (*free_val)(void *))
{
    for (size_t i = 0; i < m->nb; i++)
        for (hnode_t *n = m->b[i], *next; n; n = next) {
            next = n->next;
            if (free_val) free_val(n->val);
            free(n);
        }
    free(m->b);
    m->b = NULL;
    m->nb = m->n = 0;
}

/* ---- the informer ---- */

typedef struct entry {
    char *key;
    json_t *obj;  /* one reference (invariant 1) */
    uint64_t gen; /* the relist that last saw it */
} entry_t;

typedef struct index {
    char *name;
    kc_index_fn fn;
    hmap_t vals; /* value -> hmap_t * (key -> entry_t *) */
} index_t;

struct kc_informer {
    kc_client_t *c;
    kc_resource_t r;
    char *ns;    /* NULL: all namespaces */
    char *query; /* the selectors, URL-encoded; NULL: none */
    int resync_ms;
    int poll_ms;               /* > 0: list every poll_ms instead of watching */
    kc_transform_fn transform; /* NULL: none; set before start */
    void *transform_arg;
    kc__intern_t *intern; /* the thread's own; NULL: out of memory, nothing shared */
    pthread_mutex_t hmu; /* guards h, nh; held across each event's apply and dispatch */
    kc_handlers_t *h;
    size_t nh;
    index_t *ix; /* guarded by mu (an index may be added to a running informer) */
    size_t nix;

    pthread_rwlock_t mu;
    hmap_t cache; /* key -> entry_t * */
    char rv[KC_RV_MAX];
    uint64_t gen;

    pthread_mutex_t smu;
    pthread_cond_t scv;
    int started, joined, synced;
    atomic_int stopping;
    kc_watch_t *cur; /* the open watch, for kc_informer_stop() */
    pthread_t thread;
    unsigned seed;

    /* kc_informer_stats(): written by the thread, read anywhere */
    atomic_uint_least64_t lists, lists_unchanged, events, objects;
};

static void free_set(void *set)
{
    hmap_clear(set, NULL);
    free(set);
}

static void free_entry(void *p)
{
    entry_t *e = p;
    json_decref(e->obj);
    free(e->key);
    free(e);
}

/* The values of one index for obj (at most KC_IX_VALS). */
static size_t index_vals(const index_t *ix, const json_t *obj,
                         char vals[KC_IX_VALS][KC_INDEX_VALUE_MAX])
{
    size_t n = ix->fn(obj, vals, KC_IX_VALS);
    if (n > KC_IX_VALS) n = KC_IX_VALS;
    for (size_t i = 0; i < n; i++)
        vals[i][KC_INDEX_VALUE_MAX - 1] = '\0';
    return n;
}

/* File e under index i (inf->mu held for writing). */
static void index_one(kc_informer_t *inf, size_t i, entry_t *e)
{
    char vals[KC_IX_VALS][KC_INDEX_VALUE_MAX];
    index_t *ix = &inf->ix[i];
    size_t n = index_vals(ix, e->obj, vals);
    for (size_t j = 0; j < n; j++) {
        hmap_t *set = hmap_get(&ix->vals, vals[j]);
        if (!set && (set = calloc(1, sizeof *set)) && hmap_put(&ix->vals, vals[j], set)) {
            free(set);
            set = NULL;
        }
        if (!set || hmap_put(set, e->key, e))
            log_error("client", "informer %s: out of memory in index %s; %s is missing",
                      inf->r.resource, ix->name, e->key);
    }
}

static void index_add(kc_informer_t *inf, entry_t *e)
{
    for (size_t i = 0; i < inf->nix; i++)
        index_one(inf, i, e);
}

static void index_del(kc_informer_t *inf, entry_t *e)
{
    char vals[KC_IX_VALS][KC_INDEX_VALUE_MAX];
    for (size_t i = 0; i < inf->nix; i++) {
        index_t *ix = &inf->ix[i];
        size_t n = index_vals(ix, e->obj, vals);
        for (size_t j = 0; j < n; j++) {
            hmap_t *set = hmap_get(&ix->vals, vals[j]);
            if (!set) continue;
            hmap_del(set, e->key);
            if (!set->n) free_set(hmap_del(&ix->vals, vals[j]));
        }
    }
}

/* The object cached at key, or NULL: for the informer's thread, the only
 * one that changes the cache, which may read it without inf->mu. */
static const json_t *cached(kc_informer_t *inf, const char *key)
{
    entry_t *e = hmap_get(&inf->cache, key);
    return e ? e->obj : NULL;
}

/* Put obj under key (inf->mu held for writing). *old gets the replaced
 * object's reference, or NULL. Errors: KP_ENOMEM (nothing changed). */
static int cache_put(kc_informer_t *inf, const char *key, json_t *obj, json_t **old)
{
    *old = NULL;
    entry_t *e = hmap_get(&inf->cache, key);
    if (e) {
        index_del(inf, e);
        *old = e->obj;
        e->obj = json_incref(obj);
        e->gen = inf->gen;
        index_add(inf, e);
        return 0;
    }
    if (!(e = calloc(1, sizeof *e)) || !(e->key = strdup(key))) {
        free(e);
        return KP_ENOMEM;
    }
    e->obj = json_incref(obj);
    e->gen = inf->gen;
    if (hmap_put(&inf->cache, key, e)) {
        free_entry(e);
        return KP_ENOMEM;
    }
    index_add(inf, e);
    return 0;
}

/* Remove key (inf->mu held for writing): the object's reference, or NULL. */
static json_t *cache_del(kc_informer_t *inf, const char *key)
{
    entry_t *e = hmap_del(&inf->cache, key);
    if (!e) return NULL;
    index_del(inf, e);
    json_t *obj = e->obj;
    e->obj = NULL;
    free_entry(e);
    return obj;
}

static const char *rv_of(const json_t *obj)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
}

static void set_rv(kc_informer_t *inf, const char *rv)
{
    if (rv && *rv && strlen(rv) < sizeof inf->rv) snprintf(inf->rv, sizeof inf->rv, "%s", rv);
}

/* ---- handlers (the informer's thread, no lock held) ---- */

static void on_add(kc_informer_t *inf, const json_t *obj)
{
    for (size_t i = 0; i < inf->nh; i++)
        if (inf->h[i].on_add) inf->h[i].on_add(inf->h[i].arg, obj);
}

static void on_update(kc_informer_t *inf, const json_t *old, const json_t *obj)
{
    for (size_t i = 0; i < inf->nh; i++)
        if (inf->h[i].on_update) inf->h[i].on_update(inf->h[i].arg, old, obj);
}

static void on_delete(kc_informer_t *inf, const json_t *obj)
{
    for (size_t i = 0; i < inf->nh; i++)
        if (inf->h[i].on_delete) inf->h[i].on_delete(inf->h[i].arg, obj);
}

/* ---- list and watch ---- */

/* Make the cache the list's items: adds and updates in list order, then
 * deletes for what vanished. Errors: KP_ENOMEM (relist later). */
/* Make the cache what `list` holds and tell the handlers: on_add for the
 * new, on_update for the rest (only_changed: for those whose
 * resourceVersion moved, as a watch would have), on_delete for the gone.
 * *changes (may be NULL) gets how many handler calls that made. */
static int replace(kc_informer_t *inf, json_t *list, int only_changed, size_t *changes)
{
    json_t *items = json_object_get(list, "items");
    size_t n = json_array_size(items), ngone = 0;
    struct seen {
        json_t *old; /* the replaced object, or NULL */
        int cached;
    } *olds = calloc(n ? n : 1, sizeof *olds);
    if (!olds) return KP_ENOMEM;
    pthread_mutex_lock(&inf->hmu);
    pthread_rwlock_wrlock(&inf->mu);
    json_t **gone = calloc(inf->cache.n ? inf->cache.n : 1, sizeof *gone);
    if (!gone) {
        pthread_rwlock_unlock(&inf->mu);
        pthread_mutex_unlock(&inf->hmu);
        free(olds);
        return KP_ENOMEM;
    }
    int rc = 0;
    char key[512];
    inf->gen++;
    for (size_t i = 0; i < n; i++) {
        json_t *it = json_array_get(items, i);
        if (kc_key_of(it, key, sizeof key)) continue;
        if (inf->transform) inf->transform(inf->transform_arg, it);
        kc__intern(inf->intern, it, cached(inf, key));
        int prc = cache_put(inf, key, it, &olds[i].old);
        if (prc) rc = prc;
        olds[i].cached = !prc;
    }
    /* Sweep what this list did not see: collect first, then remove. */
    entry_t **stale = calloc(inf->cache.n ? inf->cache.n : 1, sizeof *stale);
    if (stale) {
        for (size_t i = 0; i < inf->cache.nb; i++)
            for (hnode_t *hn = inf->cache.b[i]; hn; hn = hn->next) {
                entry_t *e = hn->val;
                if (e->gen != inf->gen) stale[ngone++] = e;
            }
        for (size_t i = 0; i < ngone; i++) {
            gone[i] = json_incref(stale[i]->obj);
            json_decref(cache_del(inf, stale[i]->key));
        }
        free(stale);
    } else {
        rc = KP_ENOMEM;
    }
    set_rv(inf, rv_of(list));
    pthread_rwlock_unlock(&inf->mu);

    size_t told = ngone;
    for (size_t i = 0; i < n; i++) {
        json_t *it = json_array_get(items, i);
        if (!olds[i].cached) continue;
        if (!olds[i].old) {
            on_add(inf, it);
            told++;
        } else if (!only_changed || strcmp(rv_of(olds[i].old), rv_of(it))) {
            on_update(inf, olds[i].old, it);
            told++;
        }
        json_decref(olds[i].old);
    }
    for (size_t i = 0; i < ngone; i++) {
        on_delete(inf, gone[i]);
        json_decref(gone[i]);
    }
    pthread_mutex_unlock(&inf->hmu);
    free(olds);
    free(gone);
    atomic_fetch_add(&inf->events, told);
    if (changes) *changes = told;
    return rc;
}

static void apply_event(kc_informer_t *inf, kc_event_type_t type, json_t *obj)
{
    char key[512];
    json_t *old = NULL;
    if (type == KC_BOOKMARK || kc_key_of(obj, key, sizeof key)) {
        if (type != KC_BOOKMARK)
            log_warn("client", "informer %s: an event for an object without a name",
                     inf->r.resource);
        pthread_rwlock_wrlock(&inf->mu);
        set_rv(inf, rv_of(obj));
        pthread_rwlock_unlock(&inf->mu);
        return;
    }
    int rc = 0;
    if (inf->transform) inf->transform(inf->transform_arg, obj);
    kc__intern(inf->intern, obj, cached(inf, key));
    pthread_mutex_lock(&inf->hmu);
    pthread_rwlock_wrlock(&inf->mu);
    if (type == KC_DELETED)
        old = cache_del(inf, key);
    else
        rc = cache_put(inf, key, obj, &old);
    set_rv(inf, rv_of(obj));
    pthread_rwlock_unlock(&inf->mu);
    if (rc) {
        log_error("client", "informer %s: out of memory caching %s", inf->r.resource, key);
    } else if (type == KC_DELETED) {
        if (old) on_delete(inf, obj); /* the final state the event carries */
        atomic_fetch_add(&inf->events, old != NULL);
    } else if (old) {
        on_update(inf, old, obj);
        atomic_fetch_add(&inf->events, 1);
    } else {
        on_add(inf, obj);
        atomic_fetch_add(&inf->events, 1);
    }
    pthread_mutex_unlock(&inf->hmu);
    json_decref(old);
}

static void resync(kc_informer_t *inf)
{
    json_t **objs = NULL;
    size_t n = 0;
    pthread_mutex_lock(&inf->hmu);
    if (!kc_informer_list(inf, NULL, NULL, &objs, &n))
        for (size_t i = 0; i < n; i++)
            on_update(inf, objs[i], objs[i]);
    pthread_mutex_unlock(&inf->hmu);
    kc_objs_free(objs, n);
}

/* Sleep ms, or until stopped. */
static void nap(kc_informer_t *inf, int ms)
{
    struct timespec until = clock_deadline_ms(ms);
    pthread_mutex_lock(&inf->smu);
    while (!atomic_load(&inf->stopping))
        if (pthread_cond_timedwait(&inf->scv, &inf->smu, &until)) break;
    pthread_mutex_unlock(&inf->smu);
}

/* Sleep the back-off (doubling it), or until stopped. */
static void back_off(kc_informer_t *inf, int *backoff_ms)
{
    *backoff_ms = *backoff_ms ? *backoff_ms * 2 : KC_BACKOFF_MIN_MS;
    if (*backoff_ms > KC_BACKOFF_MAX_MS) *backoff_ms = KC_BACKOFF_MAX_MS;
    nap(inf, *backoff_ms);
}

/* Publish the open watch for kc_informer_stop(); 0 when stopping. */
static int set_watch(kc_informer_t *inf, kc_watch_t *w)
{
    pthread_mutex_lock(&inf->smu);
    int ok = !(w && atomic_load(&inf->stopping));
    if (ok) inf->cur = w;
    pthread_mutex_unlock(&inf->smu);
    return ok;
}

static void maybe_resync(kc_informer_t *inf, int64_t *next_ns)
{
    if (inf->resync_ms <= 0 || clock_mono_ns() < *next_ns) return;
    resync(inf);
    *next_ns = clock_mono_ns() + (int64_t)inf->resync_ms * 1000000;
}

/* One watch, until it ends: 0 (closed after a while: re-watch now),
 * KP_ECOMPACTED (relist) or another error (back off). */
static int watch_once(kc_informer_t *inf, int64_t *next_resync, int *backoff_ms)
{
    char rv[KC_RV_MAX];
    kc_informer_last_rv(inf, rv, sizeof rv);
    int timeout_s = KC_WATCH_MIN_S + (int)(rand_r(&inf->seed) % KC_WATCH_MIN_S);
    kc_watch_t *w = NULL;
    int flags =
        inf->transform == kc_transform_strip_managed_fields ? KC__WATCH_DROP_MANAGED_FIELDS : 0;
    int rc = kc__watch_open(inf->c, &inf->r, inf->ns, inf->query, rv, timeout_s, flags, &w);
    if (rc) return rc;
    if (!set_watch(inf, w)) {
        kc_watch_close(w);
        return KP_ECLOSED;
    }
    int64_t opened = clock_mono_ns();
    int got = 0;
    for (;;) {
        int wait_ms = -1;
        if (inf->resync_ms > 0) {
            int64_t left = (*next_resync - clock_mono_ns()) / 1000000;
            wait_ms = left < 0 ? 0 : left > INT32_MAX ? INT32_MAX : (int)left;
        }
        kc_event_type_t type;
        json_t *obj = NULL;
        rc = kc_watch_next(w, wait_ms, &type, &obj);
        if (!rc) {
            if (type != KC_BOOKMARK) atomic_fetch_add(&inf->objects, 1);
            apply_event(inf, type, obj);
            json_decref(obj);
            got = 1;
            *backoff_ms = 0;
        } else if (rc == KP_ETIMEDOUT) {
            maybe_resync(inf, next_resync);
        } else {
            break;
        }
    }
    set_watch(inf, NULL);
    kc_watch_close(w);
    /* A stream that ends at once without a word is a failure, not a
     * timeout: without the back-off it would spin. */
    if (rc == KP_ECLOSED &&
        (got || clock_mono_ns() - opened > (int64_t)KC_QUICK_CLOSE_MS * 1000000))
        return 0;
    return rc;
}

static void *run(void *arg)
{
    kc_informer_t *inf = arg;
    log_thread_name("inf", inf->r.resource);
    int need_list = 1, backoff_ms = 0;
    int64_t next_resync = clock_mono_ns() + (int64_t)inf->resync_ms * 1000000;
    while (!atomic_load(&inf->stopping)) {
        if (need_list) {
            json_t *list = NULL;
            size_t changes = 0;
            int polled = inf->poll_ms > 0 && inf->synced; /* read unlocked: this thread's */
            int rc = kc_list(inf->c, &inf->r, inf->ns, inf->query, &list);
            size_t listed = json_array_size(json_object_get(list, "items"));
            if (!rc) {
                rc = replace(inf, list, polled, &changes);
                json_decref(list);
            }
            if (rc) {
                log_warn("client", "informer %s: list: %s", inf->r.resource, err_str(rc));
                back_off(inf, &backoff_ms);
                continue;
            }
            atomic_fetch_add(&inf->lists, 1);
            atomic_fetch_add(&inf->objects, listed);
            if (polled && !changes) atomic_fetch_add(&inf->lists_unchanged, 1);
            /* Polling: the next list, after the interval, instead of a watch. */
            need_list = inf->poll_ms > 0;
            backoff_ms = 0;
            pthread_mutex_lock(&inf->smu);
            inf->synced = 1;
            pthread_cond_broadcast(&inf->scv);
            pthread_mutex_unlock(&inf->smu);
            if (atomic_load(&inf->stopping)) break; /* a handler stopped us */
        }
        maybe_resync(inf, &next_resync);
        if (inf->poll_ms > 0) {
            nap(inf, inf->poll_ms);
            continue;
        }
        int rc = watch_once(inf, &next_resync, &backoff_ms);
        if (atomic_load(&inf->stopping)) break;
        if (rc == KP_ECOMPACTED) {
            log_info("client", "informer %s: resourceVersion too old; relisting", inf->r.resource);
            need_list = 1;
        } else if (rc) {
            log_debug("client", "informer %s: watch: %s", inf->r.resource, err_str(rc));
            back_off(inf, &backoff_ms);
        }
    }
    return NULL;
}

/* ---- the public calls ---- */

int kc_informer_new(kc_client_t *c, const kc_resource_t *r, const char *ns,
                    const char *label_selector, const char *field_selector, int resync_ms,
                    kc_informer_t **out)
{
    *out = NULL;
    if (!c || !r || !r->resource || !r->version || resync_ms < 0) return KP_EINVAL;
    kc_informer_t *inf = calloc(1, sizeof *inf);
    if (!inf) return KP_ENOMEM;
    int rc = KP_ENOMEM, hmu = 0, mu = 0, smu = 0, cv = 0;
    inf->c = c;
    inf->r = *r;
    inf->resync_ms = resync_ms;
    inf->seed = (unsigned)clock_mono_ns() ^ (unsigned)(uintptr_t)inf;
    atomic_init(&inf->stopping, 0);
    if (ns && *ns && r->namespaced && !(inf->ns = strdup(ns))) goto fail;
    buf_t q;
    buf_init(&q, KC__URL_MAX);
    if (label_selector && *label_selector) {
        rc = buf_append(&q, "labelSelector=", 14);
        if (!rc) rc = kc__escape(&q, label_selector);
        if (rc) goto fail_q;
    }
    if (field_selector && *field_selector) {
        rc = buf_append(&q, q.len ? "&fieldSelector=" : "fieldSelector=", q.len ? 15 : 14);
        if (!rc) rc = kc__escape(&q, field_selector);
        if (rc) goto fail_q;
    }
    size_t qlen;
    inf->query = buf_detach(&q, &qlen);
    rc = KP_ENOMEM;
    if (pthread_mutex_init(&inf->hmu, NULL)) goto fail;
    hmu = 1;
    if (pthread_rwlock_init(&inf->mu, NULL)) goto fail;
    mu = 1;
    if (pthread_mutex_init(&inf->smu, NULL)) goto fail;
    smu = 1;
    if (clock_cond_init(&inf->scv)) goto fail;
    cv = 1;
    if (!(inf->intern = kc__intern_new())) goto fail;
    *out = inf;
    return 0;
fail_q:
    buf_free(&q);
fail:
    if (hmu) pthread_mutex_destroy(&inf->hmu);
    if (mu) pthread_rwlock_destroy(&inf->mu);
    if (smu) pthread_mutex_destroy(&inf->smu);
    if (cv) pthread_cond_destroy(&inf->scv);
    free(inf->query);
    free(inf->ns);
    free(inf);
    return rc;
}

int kc_informer_add_handlers(kc_informer_t *inf, const kc_handlers_t *h)
{
    if (!h) return KP_EINVAL;
    pthread_mutex_lock(&inf->hmu);
    json_t **objs = NULL;
    size_t n = 0;
    int rc = 0;
    kc_handlers_t *nh = realloc(inf->h, (inf->nh + 1) * sizeof *nh);
    if (!nh) rc = KP_ENOMEM;
    if (!rc) {
        inf->h = nh;
        rc = kc_informer_list(inf, NULL, NULL, &objs, &n);
    }
    if (!rc) {
        inf->h[inf->nh++] = *h; /* invariant 6: what is cached, then what comes */
        for (size_t i = 0; i < n && h->on_add; i++)
            h->on_add(h->arg, objs[i]);
    }
    pthread_mutex_unlock(&inf->hmu);
    kc_objs_free(objs, n);
    return rc;
}

void kc_informer_remove_handlers(kc_informer_t *inf, const void *arg)
{
    pthread_mutex_lock(&inf->hmu);
    size_t k = 0;
    for (size_t i = 0; i < inf->nh; i++)
        if (inf->h[i].arg != arg) inf->h[k++] = inf->h[i];
    inf->nh = k;
    pthread_mutex_unlock(&inf->hmu);
}

int kc_informer_add_index(kc_informer_t *inf, const char *name, kc_index_fn fn)
{
    if (!name || !*name || !fn) return KP_EINVAL;
    int rc = 0;
    pthread_rwlock_wrlock(&inf->mu);
    for (size_t i = 0; i < inf->nix && !rc; i++)
        if (!strcmp(inf->ix[i].name, name)) rc = KP_EEXIST;
    index_t *n = rc ? NULL : realloc(inf->ix, (inf->nix + 1) * sizeof *n);
    if (!rc && !n) rc = KP_ENOMEM;
    if (!rc) {
        inf->ix = n;
        index_t *ix = &inf->ix[inf->nix];
        memset(ix, 0, sizeof *ix);
        ix->fn = fn;
        if (!(ix->name = strdup(name))) rc = KP_ENOMEM;
    }
    if (!rc) {
        /* Index what is cached already (a running informer). */
        inf->nix++;
        for (size_t b = 0; b < inf->cache.nb; b++)
            for (hnode_t *hn = inf->cache.b[b]; hn; hn = hn->next)
                index_one(inf, inf->nix - 1, hn->val);
    }
    pthread_rwlock_unlock(&inf->mu);
    return rc;
}

void kc_transform_strip_managed_fields(void *arg, json_t *obj)
{
    (void)arg;
    json_object_del(json_object_get(obj, "metadata"), "managedFields");
}

int kc_informer_set_transform(kc_informer_t *inf, kc_transform_fn fn, void *arg)
{
    pthread_mutex_lock(&inf->smu);
    int rc = inf->started ? KP_EBUSY : 0;
    if (!rc) inf->transform = fn, inf->transform_arg = arg;
    pthread_mutex_unlock(&inf->smu);
    return rc;
}

int kc_informer_set_poll(kc_informer_t *inf, int poll_ms)
{
    if (poll_ms < 0) return KP_EINVAL;
    pthread_mutex_lock(&inf->smu);
    int started = inf->started;
    if (!started) inf->poll_ms = poll_ms;
    pthread_mutex_unlock(&inf->smu);
    return started ? KP_EBUSY : 0;
}

void kc_informer_stats(kc_informer_t *inf, kc_informer_stats_t *out)
{
    out->lists = atomic_load(&inf->lists);
    out->lists_unchanged = atomic_load(&inf->lists_unchanged);
    out->events = atomic_load(&inf->events);
    out->objects = atomic_load(&inf->objects);
}

int kc_informer_start(kc_informer_t *inf)
{
    pthread_mutex_lock(&inf->smu);
    int rc = inf->started ? KP_EBUSY : 0;
    if (!rc && pthread_create(&inf->thread, NULL, run, inf)) rc = KP_ENOMEM;
    if (!rc) inf->started = 1;
    pthread_mutex_unlock(&inf->smu);
    return rc;
}

int kc_informer_wait_synced(kc_informer_t *inf, int timeout_ms)
{
    struct timespec until = clock_deadline_ms(timeout_ms > 0 ? timeout_ms : 0);
    pthread_mutex_lock(&inf->smu);
    int rc = 0;
    while (!inf->synced && !rc) {
        if (atomic_load(&inf->stopping) || !inf->started)
            rc = KP_ECLOSED;
        else if (timeout_ms < 0)
            pthread_cond_wait(&inf->scv, &inf->smu);
        else if (pthread_cond_timedwait(&inf->scv, &inf->smu, &until))
            rc = KP_ETIMEDOUT;
    }
    if (inf->synced) rc = 0;
    pthread_mutex_unlock(&inf->smu);
    return rc;
}

int kc_informer_synced(kc_informer_t *inf)
{
    pthread_mutex_lock(&inf->smu);
    int s = inf->synced;
    pthread_mutex_unlock(&inf->smu);
    return s;
}

json_t *kc_informer_get(kc_informer_t *inf, const char *key)
{
    if (!key) return NULL;
    pthread_rwlock_rdlock(&inf->mu);
    entry_t *e = hmap_get(&inf->cache, key);
    json_t *obj = e ? json_incref(e->obj) : NULL;
    pthread_rwlock_unlock(&inf->mu);
    return obj;
}

int kc_informer_list(kc_informer_t *inf, const char *index, const char *value, json_t ***objs,
                     size_t *n)
{
    *objs = NULL;
    *n = 0;
    const index_t *ix = NULL;
    pthread_rwlock_rdlock(&inf->mu);
    if (index) {
        for (size_t i = 0; i < inf->nix && !ix; i++)
            if (!strcmp(inf->ix[i].name, index)) ix = &inf->ix[i];
        if (!ix || !value) {
            pthread_rwlock_unlock(&inf->mu);
            return KP_EINVAL;
        }
    }
    const hmap_t *set = ix ? hmap_get(&ix->vals, value) : &inf->cache;
    size_t count = set ? set->n : 0;
    json_t **out = count ? malloc(count * sizeof *out) : NULL;
    if (count && !out) {
        pthread_rwlock_unlock(&inf->mu);
        return KP_ENOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; set && i < set->nb; i++)
        for (hnode_t *hn = set->b[i]; hn; hn = hn->next) {
            const entry_t *e = hn->val;
            out[k++] = json_incref(e->obj);
        }
    pthread_rwlock_unlock(&inf->mu);
    *objs = out;
    *n = k;
    return 0;
}

void kc_objs_free(json_t **objs, size_t n)
{
    for (size_t i = 0; objs && i < n; i++)
        json_decref(objs[i]);
    free(objs);
}

int kc_key_of(const json_t *obj, char *buf, size_t n)
{
    const json_t *md = json_object_get(obj, "metadata");
    const char *name = json_string_value(json_object_get(md, "name"));
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    if (!name || !*name) return KP_EINVAL;
    int len = ns && *ns ? snprintf(buf, n, "%s/%s", ns, name) : snprintf(buf, n, "%s", name);
    return len < 0 || (size_t)len >= n ? KP_ETOOLARGE : 0;
}

const char *kc_informer_last_rv(kc_informer_t *inf, char *buf, size_t n)
{
    pthread_rwlock_rdlock(&inf->mu);
    snprintf(buf, n, "%s", inf->rv);
    pthread_rwlock_unlock(&inf->mu);
    return buf;
}

void kc_informer_stop(kc_informer_t *inf)
{
    if (!inf) return;
    pthread_mutex_lock(&inf->smu);
    /* From a handler: ask, do not join ourselves. */
    int join = inf->started && !inf->joined && !pthread_equal(pthread_self(), inf->thread);
    atomic_store(&inf->stopping, 1);
    if (inf->cur) kc_watch_cancel(inf->cur);
    pthread_cond_broadcast(&inf->scv);
    pthread_mutex_unlock(&inf->smu);
    if (!join) return;
    pthread_join(inf->thread, NULL);
    pthread_mutex_lock(&inf->smu);
    inf->joined = 1;
    pthread_mutex_unlock(&inf->smu);
}

void kc_informer_free(kc_informer_t *inf)
{
    if (!inf) return;
    kc_informer_stop(inf);
    for (size_t i = 0; i < inf->nix; i++) {
        hmap_clear(&inf->ix[i].vals, free_set);
        free(inf->ix[i].name);
    }
    free(inf->ix);
    hmap_clear(&inf->cache, free_entry);
    kc__intern_free(inf->intern);
    free(inf->h);
    free(inf->ns);
    free(inf->query);
    pthread_mutex_destroy(&inf->hmu);
    pthread_rwlock_destroy(&inf->mu);
    pthread_mutex_destroy(&inf->smu);
    pthread_cond_destroy(&inf->scv);
    free(inf);
}

/* ---- built-in index functions ---- */

static size_t put_val(char vals[][KC_INDEX_VALUE_MAX], size_t max, size_t i, const char *s)
{
    size_t len = s ? strlen(s) : 0;
    if (!len || i >= max || len >= KC_INDEX_VALUE_MAX) return i;
    memcpy(vals[i], s, len + 1);
    return i + 1;
}

size_t kc_index_namespace(const json_t *obj, char vals[][KC_INDEX_VALUE_MAX], size_t max)
{
    const json_t *md = json_object_get(obj, "metadata");
    return put_val(vals, max, 0, json_string_value(json_object_get(md, "namespace")));
}

size_t kc_index_controller(const json_t *obj, char vals[][KC_INDEX_VALUE_MAX], size_t max)
{
    size_t i;
    const json_t *ref;
    json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "ownerReferences"), i, ref)
        if (json_is_true(json_object_get(ref, "controller")))
            return put_val(vals, max, 0, json_string_value(json_object_get(ref, "uid")));
    return 0;
}

size_t kc_index_node(const json_t *obj, char vals[][KC_INDEX_VALUE_MAX], size_t max)
{
    const json_t *spec = json_object_get(obj, "spec");
    return put_val(vals, max, 0, json_string_value(json_object_get(spec, "nodeName")));
}
