/*
 * strategy.h -- per-kind rules: defaulting, server-owned fields, validation.
 *
 * A registry line may point at a strategy; storage-only kinds have none. The
 * generic write path (rest_write.c) calls, for the main resource:
 *   create: prepare_create -> defaults -> validate(obj, NULL)
 *   update: defaults -> validate(obj, old)
 * Validation appends Kubernetes field causes to `causes` (a JSON array); any
 * cause makes the write a 422 Invalid that names every bad field.
 */
#ifndef KP_STRATEGY_H
#define KP_STRATEGY_H

#include <jansson.h>
#include <stdint.h>

typedef struct api_strategy {
    void (*prepare_create)(json_t *obj);
    void (*defaults)(json_t *obj);
    void (*validate)(const json_t *obj, const json_t *old, json_t *causes);
    /* metadata.generation: 1 on create, +1 on every spec change (the kinds
     * whose controllers report observedGeneration; others have none). */
    int generation;
} api_strategy_t;

extern const api_strategy_t api_strategy_pod;
extern const api_strategy_t api_strategy_deployment;
extern const api_strategy_t api_strategy_replicaset;
extern const api_strategy_t api_strategy_statefulset;
extern const api_strategy_t api_strategy_daemonset;
extern const api_strategy_t api_strategy_job;
extern const api_strategy_t api_strategy_service;
extern const api_strategy_t api_strategy_crd;

/* Append a cause: reason is Kubernetes' (FieldValueRequired, FieldValueInvalid,
 * FieldValueNotSupported, FieldValueDuplicate, FieldValueForbidden,
 * FieldValueTypeInvalid); `fmt` gives the message. */
void api_cause(json_t *causes, const char *reason, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Shared by kinds that embed a pod template (strategy_apps.c). */
void api_pod_spec_defaults(json_t *spec);
void api_pod_spec_validate(const json_t *spec, const char *path, json_t *causes);

/* Admission DefaultTolerationSeconds on a pod being created or updated
 * (strategy_pod.c): the not-ready and unreachable NoExecute tolerations it
 * lacks, with these tolerationSeconds. */
void api_pod_default_tolerations(json_t *pod, int64_t not_ready_s, int64_t unreachable_s);

/* Kubernetes' eviction (canIgnorePDB): a pod that ended (Succeeded,
 * Failed), never started (Pending) or is already being deleted is evicted
 * without consulting its PodDisruptionBudgets: 1 if so. */
int api_pod_eviction_skips_budget(const json_t *pod);

#endif
