/*
 * events.h -- core/v1 Events, recorded in the background and aggregated.
 * Ownership, threads and errors as client.h states them.
 *
 * kc_event() formats the event and queues it (at most KC_EVENTS_QUEUE_MAX;
 * beyond that it is dropped with a log line) -- it never waits for the API.
 * The recorder's thread writes them in order: a new Event named
 * "<object name>.<16 hex digits>" in the object's namespace ("default" for
 * cluster-scoped objects), or, for a repeat of the same (object uid, type,
 * reason, message) within 10 minutes of the last one, a merge PATCH of that
 * Event's count and lastTimestamp (client-go's EventCorrelator, exact-match
 * part; the last KC_EVENTS_CACHE_MAX distinct events are remembered). A
 * write that fails for a passing reason (no connection, 5xx, 429, timeout,
 * a name clash) is tried KC_EVENTS_TRIES times in all, then dropped with a
 * log line; one the server refuses (400, 403, 422, ...) is dropped at once.
 */
#ifndef KP_CLIENT_EVENTS_H
#define KP_CLIENT_EVENTS_H

#include <stdint.h>

#include "client/client.h"

/* ---- events ---- */

#define KC_EVENTS_QUEUE_MAX 1000 /* events waiting to be written */
#define KC_EVENTS_CACHE_MAX 4096 /* distinct recent events remembered */
#define KC_EVENTS_TRIES     3    /* writes of one event at most */
#define KC_EVENTS_FLUSH_MS  5000 /* kc_recorder_free: time to write what is queued */
/* The spam filter, as Kubernetes': per object, 25 events, then one per 5 min. */
#define KC_EVENTS_SPAM_BURST    25
#define KC_EVENTS_SPAM_REFILL_S 300.0
#define KC_EVENTS_SPAM_KEYS     4096 /* objects tracked; past it, start over */

typedef struct kc_recorder kc_recorder_t;

/* Events from `component` (source.component, reportingComponent); copied.
 * c must outlive the recorder. *out is the caller's: kc_recorder_free().
 * Errors: KP_EINVAL (no client or empty component), KP_ENOMEM. */
int kc_recorder_new(kc_client_t *c, const char *component, kc_recorder_t **out);

/* Record an event about obj (borrowed; its kind, apiVersion and metadata
 * namespace, name, uid and resourceVersion are copied): type "Normal" or
 * "Warning", reason a CamelCase word, message from fmt (cut at 4 KiB). Any
 * thread; never blocks on the API. An obj without metadata.name, another
 * type, or a NULL reason is dropped with a log line (client-go does the same
 * for a bad type). */
void kc_event(kc_recorder_t *rec, const json_t *obj, const char *type, const char *reason,
              const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Write what is queued (waiting at most KC_EVENTS_FLUSH_MS, plus a request
 * in flight; what is left then is dropped with a log line), stop the thread
 * and free. No kc_event() may run during or after it. NULL is a no-op. */
void kc_recorder_free(kc_recorder_t *rec);

typedef struct kc_recorder_stats {
    uint64_t recorded; /* kc_event calls queued */
    uint64_t created;  /* Events created */
    uint64_t patched;  /* repeats written as a count bump */
    uint64_t dropped;  /* not written: queue full, refused, out of tries, flush timeout */
} kc_recorder_stats_t;
void kc_recorder_stats(kc_recorder_t *rec, kc_recorder_stats_t *out);

#endif
