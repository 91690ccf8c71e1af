/*
 * disruption_int.h -- the disruption controller's computation, apart from
 * its informers so that tests drive it with plain objects (disruption.c).
 * Not thread-safe per result; objects are borrowed and never modified.
 */
#ifndef KP_DISRUPTION_INT_H
#define KP_DISRUPTION_INT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* What one sync found for a budget. */
typedef struct dis_result {
    int64_t expected;  /* status.expectedPods */
    int64_t desired;   /* status.desiredHealthy */
    int64_t healthy;   /* status.currentHealthy */
    int64_t allowed;   /* status.disruptionsAllowed */
    size_t unmanaged;  /* pods without a controller (not counted when scaling) */
    json_t *disrupted; /* status.disruptedPods still pending (owned; dis_result_clear) */
    int64_t recheck;   /* Unix time an entry of `disrupted` expires; -1: none */
    char error[256];   /* why the expected count could not be found */
} dis_result_t;

/* The replicas controller kind/name (uid; in namespace ns) of a pod asks
 * for, into *out. KP_ENOTFOUND when it is unknown. */
typedef int (*dis_scale_fn)(void *arg, const char *ns, const char *kind, const char *name,
                            const char *uid, int64_t *out);

/* Compute `pdb`'s numbers from its selected pods (n of them) at Unix time
 * `now`. Errors: KP_ENOTFOUND (a controller not found: out->error says
 * which), KP_EINVAL (a malformed minAvailable / maxUnavailable), KP_ENOMEM.
 * Clear *out with dis_result_clear() on every path. */
int dis_compute(const json_t *pdb, json_t *const *pods, size_t n, dis_scale_fn scale, void *arg,
                int64_t now, dis_result_t *out);
void dis_result_clear(dis_result_t *r);

/* The status the budget should have (a new reference, NULL when out of
 * memory); `failed`: allow nothing, condition reason SyncFailed with
 * r->error. `now` (RFC 3339) is the condition's lastTransitionTime when its
 * status changes. */
json_t *dis_status(const json_t *pdb, const dis_result_t *r, int failed, const char *now);

/* An int-or-percent `v` against `total` (percentages rounded up). KP_EINVAL
 * if it is neither. */
int dis_scaled(const json_t *v, int64_t total, int64_t *out);

#endif
