/*
 * job_int.h -- the pure logic of the Job controller (src/controllers/job.c),
 * for tests/controllers/test_job.c: the pod failure back-off, the completed
 * indexes' interval lists, which indexes to create next, how many pods a
 * Job wants active.
 *
 * These functions read and write only their arguments: no API, no caches,
 * no clock. JSON arguments are borrowed and read-only.
 */
#ifndef KP_JOB_INT_H
#define KP_JOB_INT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* Kubernetes' names (batch/v1). */
#define JOB_TRACKING_FINALIZER "batch.kubernetes.io/job-tracking"
#define JOB_INDEX_KEY          "batch.kubernetes.io/job-completion-index" /* annotation and label */
#define JOB_INDEX_ENV          "JOB_COMPLETION_INDEX"

/* The pod failure back-off (DefaultJobPodFailureBackOff, and the cap the
 * Job documentation states): 10 s doubling per failure since the last
 * success, at most 6 minutes. */
#define JOB_BACKOFF_BASE_MS 10000
#define JOB_BACKOFF_MAX_MS  360000
/* The largest completions an Indexed Job may have (Kubernetes' limit). */
#define JOB_MAX_INDEXES 100000

/* The delay before new pods after `failures` failures since the last
 * success: 0 for none, else base * 2^(failures-1), capped. */
int64_t job__backoff_delay_ms(int failures);
/* What is left of that delay when the last failure was `elapsed_ms` ago
 * (0: create now). */
int64_t job__backoff_remaining_ms(int failures, int64_t elapsed_ms);

/* Parse status.completedIndexes ("1,3-5,7") into set[0..completions-1]
 * (1 = completed), which the caller zeroed. Intervals are clipped to
 * [0, completions); malformed parts are skipped, as Kubernetes does.
 * Returns how many indexes set holds afterwards. */
size_t job__indexes_parse(const char *s, int completions, unsigned char *set);
/* The compressed interval list of set[0..n-1]: "0-2,4", "" when empty
 * (runs of two are written "3,4", as Kubernetes writes them). Returns a
 * malloc'd string (caller frees), NULL on ENOMEM. */
char *job__indexes_format(const unsigned char *set, int n);
/* The first `want` indexes in [0, completions) that are neither done nor
 * active (either array may be NULL: none) into out[] (room for want).
 * Returns how many were written. */
size_t job__first_pending(const unsigned char *done, const unsigned char *active, int completions,
                          size_t want, int *out);

/* How many pods a running Job wants active: completions < 0 (unset) ->
 * parallelism until a pod succeeded, then what is active; else
 * min(parallelism, completions - succeeded), at least 0. */
int job__want_active(int completions, int parallelism, int succeeded, int active);

/* The completion index a pod's annotation gives, or -1 (none, malformed,
 * negative). */
int job__pod_index(const json_t *pod);

#endif
