/*
 * events.h -- core/v1 Events, recorded in the background and aggregated.
 * Ownership, threads and errors as client.h states them.
 */
#ifndef KP_CLIENT_EVENTS_H
#define KP_CLIENT_EVENTS_H

#include "client/client.h"

/* ---- events ---- */

typedef struct kc_recorder kc_recorder_t;

/* Events from `component` (source.component, reportingController). */
int kc_recorder_new(kc_client_t *c, const char *component, kc_recorder_t **out);
/* Record an event about obj (borrowed): type "Normal" or "Warning". Sent in
 * the background; a repeat of the same (object, type, reason, message)
 * within 10 minutes bumps the existing Event's count and lastTimestamp, as
 * Kubernetes' EventCorrelator does. Never blocks on the API. */
void kc_event(kc_recorder_t *rec, const json_t *obj, const char *type, const char *reason,
              const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void kc_recorder_free(kc_recorder_t *rec); /* flushes what is pending first */

#endif
