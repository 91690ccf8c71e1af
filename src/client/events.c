/*
 * events.c -- the event recorder: core/v1 Events written by a thread of the
 * recorder's own, repeats aggregated as client-go's EventCorrelator does
 * (its exact-match "event logger" part).
 *
 * Why a thread and a bounded queue: events are advisory. A controller that
 * blocked on the API to report what it did would slow down exactly when the
 * API is slow; so kc_event() only copies its arguments into the queue and
 * returns, and a full queue drops the event (with a log line) rather than
 * wait or grow.
 *
 * Invariants:
 *  1. The queue holds at most KC_EVENTS_QUEUE_MAX items; kc_event takes mu
 *     only to link one item (never across a request).
 *  2. Every queued item ends exactly once: created, patched or dropped. So
 *     once the queue is drained, recorded + (drops at kc_event) = created +
 *     patched + dropped.
 *  3. The cache maps an aggregation key -- (uid or kind/ns/name, type,
 *     reason, message) -- to the Event last written for it: its name,
 *     namespace, count, firstTimestamp and when it was last seen. At most
 *     KC_EVENTS_CACHE_MAX entries; the least recently used goes first. An
 *     entry is written only after the API accepted the write, so a repeat
 *     never patches an Event that does not exist (a 404 on the patch -- it
 *     was deleted, or expired -- makes a new Event that keeps the count).
 *     The cache is the writer thread's alone: no lock.
 *  4. On kc_recorder_free the thread keeps writing until the queue is empty
 *     or the flush deadline passes, then drops the rest; retries wait no
 *     later than the deadline.
 *
 * An item's path:  kc_event --queue--> writer: cache hit within 10 min?
 *   yes: PATCH {count, lastTimestamp} --404--> create (count kept)
 *   no:  POST a new Event (count 1) --> cache entry
 *   a passing error: retry (100 ms, 200 ms, ...) up to KC_EVENTS_TRIES.
 *
 * Threads: any number of kc_event callers and one writer thread (ev_run),
 * meeting in the queue under rec->mu; rec->cv wakes the writer (new item,
 * closing) and its retry sleeps (closing).
 */
#include "client/events.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"

#define EV_MESSAGE_MAX   4096
#define EV_WINDOW_NS     (INT64_C(600) * 1000000000) /* 10 minutes */
#define EV_RETRY_BASE_MS 100
#define EV_NAME_MAX      253 /* a DNS-1123 subdomain */
#define EV_SUFFIX_LEN    17  /* "." and 16 hex digits */
#define EV_TIME_MAX      48

typedef struct ev_item {
    struct ev_item *next;
    json_t *involved; /* the ObjectReference */
    char *ns, *obj_name, *key;
    char *type, *reason, *message;
    int64_t wall_ns; /* when kc_event was called */
} ev_item_t;

typedef struct ev_seen {
    struct ev_seen *hnext;       /* hash chain */
    struct ev_seen *prev, *next; /* LRU list, most recent first */
    uint64_t hash;
    char *key, *name, *ns;
    json_int_t count;
    char first[EV_TIME_MAX]; /* firstTimestamp */
    int64_t last_wall_ns;
} ev_seen_t;

struct kc_recorder {
    kc_client_t *c;
    char *component;
    pthread_t thread;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    ev_item_t *head, *tail; /* invariant 1 */
    size_t n;
    bool closing;
    int64_t deadline; /* mono ns; set with closing */
    kc_recorder_stats_t stats;
    /* The spam filter (under mu): object uid -> [tokens, last refill mono ns]. */
    json_t *spam;

    /* writer thread only (invariant 3) */
    ev_seen_t **buckets;
    size_t nbuckets, nseen;
    ev_seen_t *lru_head, *lru_tail;
    uint64_t rng;
};

/* ---- small helpers ---- */

static char *dup_str(const char *s)
{
    if (!s) s = "";
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = UINT64_C(1469598103934665603); /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= UINT64_C(1099511628211);
    }
    return h;
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s; /* xorshift64* */
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * UINT64_C(2685821657736338717);
}

/* A metav1.Time: RFC 3339 in UTC, whole seconds. */
static void rfc3339(int64_t wall_ns, char *out, size_t n)
{
    time_t s = (time_t)(wall_ns / 1000000000);
    struct tm tm;
    if (!gmtime_r(&s, &tm) || !strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(out, n, "1970-01-01T00:00:00Z");
}

static const char *str_at(const json_t *o, const char *field)
{
    const char *s = json_string_value(json_object_get(o, field));
    return s ? s : "";
}

static void item_free(ev_item_t *it)
{
    if (!it) return;
    json_decref(it->involved);
    free(it->ns);
    free(it->obj_name);
    free(it->key);
    free(it->type);
    free(it->reason);
    free(it->message);
    free(it);
}

static void count(kc_recorder_t *rec, uint64_t *field)
{
    pthread_mutex_lock(&rec->mu);
    (*field)++;
    pthread_mutex_unlock(&rec->mu);
}

/* ---- the cache of recent events (writer thread only) ---- */

static ev_seen_t *seen_find(kc_recorder_t *rec, const char *key, uint64_t h)
{
    for (ev_seen_t *s = rec->buckets[h & (rec->nbuckets - 1)]; s; s = s->hnext)
        if (s->hash == h && !strcmp(s->key, key)) return s;
    return NULL;
}

static void lru_unlink(kc_recorder_t *rec, ev_seen_t *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        rec->lru_head = s->next;
    if (s->next)
        s->next->prev = s->prev;
    else
        rec->lru_tail = s->prev;
    s->prev = s->next = NULL;
}

static void lru_push_front(kc_recorder_t *rec, ev_seen_t *s)
{
    s->prev = NULL;
    s->next = rec->lru_head;
    if (rec->lru_head) rec->lru_head->prev = s;
    rec->lru_head = s;
    if (!rec->lru_tail) rec->lru_tail = s;
}

static void seen_free(ev_seen_t *s)
{
    free(s->key);
    free(s->name);
    free(s->ns);
    free(s);
}

static void seen_remove(kc_recorder_t *rec, ev_seen_t *s)
{
    ev_seen_t **p = &rec->buckets[s->hash & (rec->nbuckets - 1)];
    while (*p != s)
        p = &(*p)->hnext;
    *p = s->hnext;
    lru_unlink(rec, s);
    rec->nseen--;
    seen_free(s);
}

/* Remember that the Event `name` in `ns` now stands for key with count and
 * firstTimestamp `first`. Out of memory only forgets (the next repeat makes
 * a new Event: harmless). */
static void seen_put(kc_recorder_t *rec, const char *key, const char *ns, const char *name,
                     json_int_t n, const char *first, int64_t wall_ns)
{
    uint64_t h = hash_str(key);
    ev_seen_t *s = seen_find(rec, key, h);
    if (s) {
        lru_unlink(rec, s);
    } else {
        if (rec->nseen >= KC_EVENTS_CACHE_MAX) seen_remove(rec, rec->lru_tail);
        if (!(s = calloc(1, sizeof *s)) || !(s->key = dup_str(key))) {
            free(s);
            return;
        }
        s->hash = h;
        ev_seen_t **b = &rec->buckets[h & (rec->nbuckets - 1)];
        s->hnext = *b;
        *b = s;
        rec->nseen++;
    }
    char *nn = dup_str(name), *nns = dup_str(ns);
    if (!nn || !nns) {
        free(nn);
        free(nns);
        lru_push_front(rec, s);
        seen_remove(rec, s);
        return;
    }
    free(s->name);
    free(s->ns);
    s->name = nn;
    s->ns = nns;
    s->count = n;
    snprintf(s->first, sizeof s->first, "%s", first);
    s->last_wall_ns = wall_ns;
    lru_push_front(rec, s);
}

/* ---- writing one event ---- */

/* A transient failure, worth another try. */
static bool transient(int rc)
{
    return rc == KP_EUNAVAILABLE || rc == KP_ETIMEDOUT || rc == KP_EBUSY || rc == KP_ENOMEM ||
           rc == KP_EEXIST || rc == KP_ECONFLICT;
}

/* POST a new Event for it with count n and firstTimestamp first. */
static int ev_create(kc_recorder_t *rec, const ev_item_t *it, json_int_t n, const char *first,
                     int attempt)
{
    char last[EV_TIME_MAX], name[EV_NAME_MAX + 1];
    rfc3339(it->wall_ns, last, sizeof last);
    /* client-go names an Event "<name>.<unix nanos in hex>"; a retry after a
     * clash takes random digits. The object's name is cut so that the whole
     * stays a valid name. */
    uint64_t suffix = attempt ? rng_next(&rec->rng) : (uint64_t)it->wall_ns;
    int keep = (int)strnlen(it->obj_name, EV_NAME_MAX - EV_SUFFIX_LEN);
    snprintf(name, sizeof name, "%.*s.%016" PRIx64, keep, it->obj_name, suffix);
    json_t *ev = json_pack("{s:s, s:s, s:{s:s, s:s}, s:O, s:s, s:s, s:s, s:{s:s}, s:s, s:s, s:s, "
                           "s:I}",
                           "apiVersion", "v1", "kind", "Event", "metadata", "name", name,
                           "namespace", it->ns, "involvedObject", it->involved, "reason",
                           it->reason, "message", it->message, "type", it->type, "source",
                           "component", rec->component, "reportingComponent", rec->component,
                           "firstTimestamp", first, "lastTimestamp", last, "count", n);
    if (!ev) return KP_ENOMEM;
    int rc = kc_create(rec->c, &kc_events, it->ns, ev, NULL, NULL);
    json_decref(ev);
    if (rc == 0) {
        seen_put(rec, it->key, it->ns, name, n, first, it->wall_ns);
        count(rec, &rec->stats.created);
    }
    return rc;
}

/* One try at writing it: a count bump of the Event it repeats, else a new one. */
static int ev_write(kc_recorder_t *rec, const ev_item_t *it, int attempt)
{
    char now[EV_TIME_MAX];
    rfc3339(it->wall_ns, now, sizeof now);
    ev_seen_t *s = seen_find(rec, it->key, hash_str(it->key));
    if (!s || it->wall_ns - s->last_wall_ns > EV_WINDOW_NS)
        return ev_create(rec, it, 1, now, attempt);

    json_int_t n = s->count + 1;
    json_t *patch = json_pack("{s:I, s:s}", "count", n, "lastTimestamp", now);
    if (!patch) return KP_ENOMEM;
    int rc =
        kc_patch(rec->c, &kc_events, s->ns, s->name, NULL, KC_PATCH_MERGE, patch, NULL, NULL, NULL);
    json_decref(patch);
    if (rc == KP_ENOTFOUND) { /* deleted meanwhile: a new one, count kept */
        char first[EV_TIME_MAX];
        snprintf(first, sizeof first, "%s", s->first);
        return ev_create(rec, it, n, first, attempt);
    }
    if (rc == 0) {
        s->count = n;
        s->last_wall_ns = it->wall_ns;
        lru_unlink(rec, s);
        lru_push_front(rec, s);
        count(rec, &rec->stats.patched);
    }
    return rc;
}

/* Sleep ms, but not past the flush deadline once closing. */
static void retry_sleep(kc_recorder_t *rec, int64_t ms)
{
    int64_t until = clock_mono_ns() + ms * 1000000;
    pthread_mutex_lock(&rec->mu);
    for (;;) {
        int64_t end = rec->closing && rec->deadline < until ? rec->deadline : until;
        if (clock_mono_ns() >= end) break;
        struct timespec ts = {.tv_sec = end / 1000000000, .tv_nsec = end % 1000000000};
        pthread_cond_timedwait(&rec->cv, &rec->mu, &ts);
    }
    pthread_mutex_unlock(&rec->mu);
}

static bool past_deadline(kc_recorder_t *rec)
{
    pthread_mutex_lock(&rec->mu);
    bool past = rec->closing && clock_mono_ns() >= rec->deadline;
    pthread_mutex_unlock(&rec->mu);
    return past;
}

static void ev_send(kc_recorder_t *rec, const ev_item_t *it)
{
    int rc = 0;
    for (int attempt = 0; attempt < KC_EVENTS_TRIES; attempt++) {
        if (attempt) retry_sleep(rec, (int64_t)EV_RETRY_BASE_MS << (attempt - 1));
        if (attempt && past_deadline(rec)) break;
        if ((rc = ev_write(rec, it, attempt)) == 0) return;
        if (!transient(rc)) break;
    }
    log_warn("events", "dropped event %s %s on %s/%s: %s", it->type, it->reason, it->ns,
             it->obj_name, err_str(rc));
    count(rec, &rec->stats.dropped);
}

static void *ev_run(void *arg)
{
    kc_recorder_t *rec = arg;
    log_thread_name("events", NULL);
    size_t late = 0;
    pthread_mutex_lock(&rec->mu);
    for (;;) {
        while (!rec->head && !rec->closing)
            pthread_cond_wait(&rec->cv, &rec->mu);
        ev_item_t *it = rec->head;
        if (!it) break; /* closing and flushed */
        rec->head = it->next;
        if (!rec->head) rec->tail = NULL;
        rec->n--;
        bool late_now = rec->closing && clock_mono_ns() >= rec->deadline;
        if (late_now) {
            late++;
            rec->stats.dropped++;
        }
        pthread_mutex_unlock(&rec->mu);
        if (!late_now) ev_send(rec, it);
        item_free(it);
        pthread_mutex_lock(&rec->mu);
    }
    pthread_mutex_unlock(&rec->mu);
    if (late)
        log_warn("events", "dropped %zu events still queued after %d ms of flushing", late,
                 KC_EVENTS_FLUSH_MS);
    return NULL;
}

/* ---- the API ---- */

int kc_recorder_new(kc_client_t *c, const char *component, kc_recorder_t **out)
{
    *out = NULL;
    if (!c || !component || !component[0]) return KP_EINVAL;
    kc_recorder_t *rec = calloc(1, sizeof *rec);
    if (!rec) return KP_ENOMEM;
    rec->c = c;
    if (getrandom(&rec->rng, sizeof rec->rng, 0) != (ssize_t)sizeof rec->rng) rec->rng = 0;
    rec->rng ^= (uint64_t)clock_mono_ns();
    if (!rec->rng) rec->rng = UINT64_C(0x9e3779b97f4a7c15);
    rec->nbuckets = 1024; /* a power of two; KC_EVENTS_CACHE_MAX / 4 */
    if (!(rec->component = dup_str(component))) goto fail_component;
    if (!(rec->buckets = calloc(rec->nbuckets, sizeof *rec->buckets))) goto fail_buckets;
    if (pthread_mutex_init(&rec->mu, NULL)) goto fail_mu;
    if (clock_cond_init(&rec->cv)) goto fail_cv;
    if (pthread_create(&rec->thread, NULL, ev_run, rec)) goto fail_thread;
    *out = rec;
    return 0;

fail_thread:
    pthread_cond_destroy(&rec->cv);
fail_cv:
    pthread_mutex_destroy(&rec->mu);
fail_mu:
    free(rec->buckets);
fail_buckets:
    free(rec->component);
fail_component:
    free(rec);
    return KP_ENOMEM;
}

/* Copy what the event needs out of obj (which the caller keeps). */
static ev_item_t *item_new(const json_t *obj, const char *type, const char *reason,
                           const char *message)
{
    const json_t *meta = json_object_get(obj, "metadata");
    const char *name = str_at(meta, "name"), *ns = str_at(meta, "namespace");
    const char *uid = str_at(meta, "uid"), *kind = str_at(obj, "kind");
    ev_item_t *it = calloc(1, sizeof *it);
    if (!it) return NULL;
    it->wall_ns = clock_wall_ns();
    it->involved = json_object();
    if (!it->involved) goto fail;
    const char *fields[][2] = {{"kind", kind},
                               {"namespace", ns},
                               {"name", name},
                               {"uid", uid},
                               {"apiVersion", str_at(obj, "apiVersion")},
                               {"resourceVersion", str_at(meta, "resourceVersion")}};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (fields[i][1][0] &&
            json_object_set_new(it->involved, fields[i][0], json_string(fields[i][1])))
            goto fail;
    /* The aggregation key (invariant 3); \n cannot occur in a name or uid. */
    size_t klen = strlen(uid) + strlen(kind) + strlen(ns) + strlen(name) + strlen(type) +
                  strlen(reason) + strlen(message) + 8;
    if (!(it->key = malloc(klen))) goto fail;
    if (uid[0])
        snprintf(it->key, klen, "%s\n%s\n%s\n%s", uid, type, reason, message);
    else
        snprintf(it->key, klen, "%s/%s/%s\n%s\n%s\n%s", kind, ns, name, type, reason, message);
    it->ns = dup_str(ns[0] ? ns : "default");
    it->obj_name = dup_str(name);
    it->type = dup_str(type);
    it->reason = dup_str(reason);
    it->message = dup_str(message);
    if (!it->ns || !it->obj_name || !it->type || !it->reason || !it->message) goto fail;
    return it;
fail:
    item_free(it);
    return NULL;
}

/* Kubernetes' EventSourceObjectSpamFilter: per source and object, a token
 * bucket of KC_EVENTS_SPAM_BURST events refilled at one per
 * KC_EVENTS_SPAM_REFILL_S seconds. A ReplicaSet creating 1,000 pods records
 * its first 25 SuccessfulCreate events, not 1,000 writes. The map is bounded:
 * past KC_EVENTS_SPAM_KEYS objects it starts over. Called with rec->mu. */
static bool spam_allow(kc_recorder_t *rec, const json_t *obj)
{
    const json_t *meta = json_object_get(obj, "metadata");
    const char *uid = str_at(meta, "uid");
    char key[600];
    snprintf(key, sizeof key, "%s/%s/%s", uid, str_at(meta, "namespace"), str_at(meta, "name"));
    if (!rec->spam || json_object_size(rec->spam) >= KC_EVENTS_SPAM_KEYS) {
        json_decref(rec->spam);
        if (!(rec->spam = json_object())) return true;
    }
    int64_t now = clock_mono_ns();
    json_t *b = json_object_get(rec->spam, key);
    double tokens = KC_EVENTS_SPAM_BURST;
    if (b) {
        double elapsed = (double)(now - json_integer_value(json_array_get(b, 1))) / 1e9;
        tokens = json_real_value(json_array_get(b, 0)) + elapsed / KC_EVENTS_SPAM_REFILL_S;
        if (tokens > KC_EVENTS_SPAM_BURST) tokens = KC_EVENTS_SPAM_BURST;
    }
    bool ok = tokens >= 1;
    if (ok) tokens -= 1;
    json_object_set_new(rec->spam, key, json_pack("[f, I]", tokens, (json_int_t)now));
    return ok;
}

void kc_event(kc_recorder_t *rec, const json_t *obj, const char *type, const char *reason,
              const char *fmt, ...)
{
    const char *name = str_at(json_object_get(obj, "metadata"), "name");
    if (!rec || !name[0] || !type || (strcmp(type, "Normal") && strcmp(type, "Warning")) ||
        !reason || !reason[0] || !fmt) {
        log_error("events", "bad event (type \"%s\", reason \"%s\", object \"%s\"): not recorded",
                  type ? type : "", reason ? reason : "", name);
        return;
    }
    char message[EV_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);

    pthread_mutex_lock(&rec->mu);
    bool spam = !spam_allow(rec, obj);
    pthread_mutex_unlock(&rec->mu);
    if (spam) return; /* Kubernetes drops these silently too */

    ev_item_t *it = item_new(obj, type, reason, message);
    pthread_mutex_lock(&rec->mu);
    bool full = !it || rec->n >= KC_EVENTS_QUEUE_MAX || rec->closing;
    uint64_t dropped = 0;
    const char *why = !it ? "out of memory" : rec->closing ? "closing" : "queue full";
    if (full) {
        dropped = ++rec->stats.dropped;
    } else {
        it->next = NULL;
        if (rec->tail)
            rec->tail->next = it;
        else
            rec->head = it;
        rec->tail = it;
        rec->n++;
        rec->stats.recorded++;
        pthread_cond_broadcast(&rec->cv);
    }
    pthread_mutex_unlock(&rec->mu);
    if (full) {
        /* One line for the first drop and every 1000th: a flood must not
         * turn into a flood of log lines. */
        if (dropped == 1 || dropped % 1000 == 0)
            log_warn("events", "dropped event %s %s on %s (%s; %" PRIu64 " dropped so far)", type,
                     reason, name, why, dropped);
        item_free(it);
    }
}

void kc_recorder_stats(kc_recorder_t *rec, kc_recorder_stats_t *out)
{
    pthread_mutex_lock(&rec->mu);
    *out = rec->stats;
    pthread_mutex_unlock(&rec->mu);
}

void kc_recorder_free(kc_recorder_t *rec)
{
    if (!rec) return;
    pthread_mutex_lock(&rec->mu);
    rec->closing = true;
    rec->deadline = clock_mono_ns() + (int64_t)KC_EVENTS_FLUSH_MS * 1000000;
    pthread_cond_broadcast(&rec->cv);
    pthread_mutex_unlock(&rec->mu);
    pthread_join(rec->thread, NULL);
    while (rec->lru_head)
        seen_remove(rec, rec->lru_head);
    free(rec->buckets);
    json_decref(rec->spam);
    pthread_cond_destroy(&rec->cv);
    pthread_mutex_destroy(&rec->mu);
    free(rec->component);
    free(rec);
}
