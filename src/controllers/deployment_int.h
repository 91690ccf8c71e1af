/*
 * deployment_int.h -- what the Deployment controller's two files share:
 *
 *   deployment.c          handlers, sync(key), adoption, creating the new
 *                         ReplicaSet, writes through the API, status and
 *                         conditions
 *   deployment_rolling.c  which ReplicaSet is new (template hash, revisions,
 *                         annotations), the RollingUpdate and Recreate
 *                         steps, proportional scaling, history cleanup
 *
 * The functions in the "pure" sections read and write only their arguments:
 * no API, no caches, no clock (callers pass `now`). tests/controllers/
 * test_deployment.c calls them directly. JSON arguments are borrowed and
 * read-only unless a contract says the function writes or steals one.
 */
#ifndef KP_DEPLOYMENT_INT_H
#define KP_DEPLOYMENT_INT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "controllers/controller.h"

#define DEPLOY_HASH_LABEL    "pod-template-hash"
#define DEPLOY_ANN_PREFIX    "deployment.kubernetes.io/"
#define DEPLOY_ANN_REVISION  "deployment.kubernetes.io/revision"
#define DEPLOY_ANN_HISTORY   "deployment.kubernetes.io/revision-history"
#define DEPLOY_ANN_DESIRED   "deployment.kubernetes.io/desired-replicas"
#define DEPLOY_ANN_MAX       "deployment.kubernetes.io/max-replicas"
#define DEPLOY_ANN_APPLIED   "kubectl.kubernetes.io/last-applied-configuration"
#define DEPLOY_HISTORY_CHARS 2000 /* cap on revision-history, as Kubernetes' default */
#define DEPLOY_HASH_MAX      16   /* a pod-template-hash with its NUL */
#define DEPLOY_TIME_MAX      32   /* an RFC 3339 time with its NUL */

/* Condition reasons (Kubernetes' names; clients match on them). */
#define DEPLOY_R_AVAILABLE   "MinimumReplicasAvailable"
#define DEPLOY_R_UNAVAILABLE "MinimumReplicasUnavailable"
#define DEPLOY_R_CREATED     "NewReplicaSetCreated"
#define DEPLOY_R_FOUND       "FoundNewReplicaSet"
#define DEPLOY_R_UPDATED     "ReplicaSetUpdated"
#define DEPLOY_R_COMPLETE    "NewReplicaSetAvailable"
#define DEPLOY_R_TIMEDOUT    "ProgressDeadlineExceeded"
#define DEPLOY_R_CREATEFAIL  "ReplicaSetCreateError"
#define DEPLOY_R_PAUSED      "DeploymentPaused"
#define DEPLOY_R_RESUMED     "DeploymentResumed"

/* ---- one ReplicaSet, as the arithmetic sees it ---- */

typedef struct deploy_rs {
    json_t *obj;         /* the RS: a reference the sync holds (NULL in tests) */
    const char *name;    /* borrowed from obj (tests: any string) */
    int64_t created;     /* creationTimestamp, Unix seconds */
    int64_t revision;    /* deployment.kubernetes.io/revision; 0: none */
    int32_t spec;        /* spec.replicas */
    int32_t replicas;    /* status.replicas */
    int32_t ready;       /* status.readyReplicas */
    int32_t available;   /* status.availableReplicas */
    int32_t desired;     /* desired-replicas annotation; -1: absent */
    int32_t max;         /* max-replicas annotation; -1: absent */
    int32_t terminating; /* its pods being deleted but not finished yet */
    int deleting;        /* metadata.deletionTimestamp is set */
    int stale;           /* metadata.generation > status.observedGeneration */
    /* What the sync decided; deploy__apply() carries it out. */
    int32_t target; /* the wanted spec.replicas (starts equal to spec) */
    int touch;      /* refresh desired/max annotations even if target == spec */
    int remove;     /* delete it (revision history cleanup) */
} deploy_rs_t;

/* What a Deployment's spec says, resolved (Kubernetes' MaxSurge and
 * MaxUnavailable: percentages of spec.replicas, surge rounded up,
 * unavailable down, 0/0 -> unavailable 1, unavailable capped at replicas
 * and 0 when replicas is 0; both 0 for Recreate). */
typedef struct deploy_params {
    int32_t replicas;
    int32_t max_surge;
    int32_t max_unavailable;
    int recreate;
    int paused;
    int32_t status_replicas; /* status.replicas: the size an RS without max-replicas had */
    int32_t history_limit;   /* revisionHistoryLimit; -1: keep everything */
    int32_t deadline_s;      /* progressDeadlineSeconds; -1: none */
    int32_t min_ready_s;     /* minReadySeconds */
    /* Count terminating pods against maxSurge: spec.podReplacementPolicy
     * "TerminationComplete". Kubernetes' default, TerminationStarted, does
     * not (a pod being terminated is on its way out). */
    int count_terminating;
} deploy_params_t;

/* ---- pure: spec arithmetic (deployment_rolling.c) ---- */

/* An IntOrString `v` ("25%" or 3) scaled against total; a percentage rounds
 * up when round_up, else down; NULL or null is 0.
 * Errors: KP_EINVAL (a malformed value or a negative one). */
int deploy__int_or_percent(const json_t *v, int32_t total, int round_up, int32_t *out);

/* Fill *p from Deployment d. Errors: KP_EINVAL (a malformed maxSurge or
 * maxUnavailable). */
int deploy__params(const json_t *d, deploy_params_t *p);

/* ---- pure: rolling update, recreate, proportional scaling ----
 * rs[0..n) are a Deployment's ReplicaSets sorted by deploy__sort; newi is
 * the index of the new one, or -1 when there is none yet. The functions set
 * target/touch/remove and never lower `target` below 0. */

/* Oldest first by creationTimestamp, then by name. */
void deploy__sort(deploy_rs_t *rs, size_t n);

/* The replicas a new RS should have now (NewRSNewReplicas): with newi -1,
 * for one about to be created with 0. With count_terminating, pods still
 * terminating take up surge room too. */
int32_t deploy__new_replicas(const deploy_params_t *p, const deploy_rs_t *rs, size_t n, int newi);

/* Rolling step 1: move the new RS's target towards spec.replicas within
 * maxSurge. Returns 1 if its target changed. */
int deploy__reconcile_new(const deploy_params_t *p, deploy_rs_t *rs, size_t n, int newi);

/* Rolling step 2: lower old RSs within maxUnavailable, first their
 * unavailable replicas (oldest RS first), then available ones (oldest RS
 * first). Returns how many replicas it removed. */
int32_t deploy__reconcile_old(const deploy_params_t *p, deploy_rs_t *rs, size_t n, int newi);

/* Recreate step 1: every old RS to 0. Returns 1 if any target changed. */
int deploy__recreate_down(const deploy_params_t *p, deploy_rs_t *rs, size_t n, int newi);

/* Does an active RS (spec > 0) carry a desired-replicas annotation other
 * than spec.replicas (the user scaled the Deployment)? */
int deploy__is_scaling_event(const deploy_params_t *p, const deploy_rs_t *rs, size_t n);

/* The new RS runs exactly spec.replicas, all available. */
int deploy__saturated(const deploy_params_t *p, const deploy_rs_t *rs);

/* Scale for a changed spec.replicas (Kubernetes' scale()): the one active
 * RS takes spec.replicas; a saturated new RS sends the old to 0; during a
 * rolling update, (replicas + maxSurge) - total is spread over the active
 * RSs in proportion to their size over their max-replicas annotation, the
 * rounding remainder to the largest. Sets touch on every RS it sizes. */
void deploy__scale(const deploy_params_t *p, deploy_rs_t *rs, size_t n, int newi);

/* Mark for removal the oldest-revision old RSs beyond revisionHistoryLimit
 * that have no replicas (spec and status), are not being deleted and whose
 * status is current. Returns how many it marked. */
size_t deploy__cleanup(const deploy_params_t *p, deploy_rs_t *rs, size_t n, int newi);

/* ---- pure: templates, hashes, revisions (deployment_rolling.c) ---- */

/* Annotation `key` of ann as a non-negative decimal; -1 if absent or not one. */
int64_t deploy__ann_num(const json_t *ann, const char *key);
/* ann[key] = v as a decimal string. Returns 1 if that changed it. */
int deploy__set_num(json_t *ann, const char *key, int64_t v);

/* Map each byte of s through "bcdfghjklmnpqrstvwxz2456789" (by value
 * modulo 27), as Kubernetes' rand.SafeEncodeString; out gets at most n-1
 * bytes and a NUL. (ctrl_safe_encode, history.c, is the one copy.) */
void deploy__safe_encode(const char *s, char *out, size_t n);

/* The pod-template-hash of template tmpl: FNV-32a over its canonical JSON
 * (sorted keys, compact), then collisions (if >= 0) as 8 little-endian
 * bytes, as a decimal safe-encoded. Errors: KP_ENOMEM. */
int deploy__hash(const json_t *tmpl, int64_t collisions, char out[DEPLOY_HASH_MAX]);

/* Are two pod templates equal, ignoring the pod-template-hash label (and
 * empty labels/annotations maps, and a null creationTimestamp)? */
int deploy__template_equal(const json_t *a, const json_t *b);

/* The index of the new RS among rs[0..n) (sorted): the oldest whose
 * template equals tmpl; -1 if none. */
int deploy__find_new(const json_t *tmpl, const deploy_rs_t *rs, size_t n);

/* The highest revision among rs[0..n) except index skip (-1: none). */
int64_t deploy__max_revision(const deploy_rs_t *rs, size_t n, int skip);

/* Write a new RS's annotations into ann (a JSON object, modified):
 * Deployment annotations dann (may be NULL) except last-applied and
 * deployment.kubernetes.io/...; revision raised to `revision` when lower,
 * keeping the old number in revision-history (a re-used RS: "1,3");
 * desired/max-replicas when !exists. Returns 1 if ann changed. */
int deploy__rs_annotations(json_t *ann, const json_t *dann, int64_t revision, int exists,
                           int32_t desired, int32_t max);

/* ---- pure: status and conditions (deployment.c) ---- */

/* Unix seconds as "2006-01-02T15:04:05Z". */
void deploy__time_str(int64_t t, char out[DEPLOY_TIME_MAX]);

/* A new condition (a new reference) with both times `now`. */
json_t *deploy__condition(const char *type, const char *status, const char *reason,
                          const char *message, const char *now);
/* The condition of `type` in status (borrowed), or NULL. */
const json_t *deploy__condition_get(const json_t *status, const char *type);
/* Set cond (stolen) in status as Kubernetes' SetDeploymentCondition: no
 * change if one of its type has the same status and reason; else it
 * replaces it, keeping lastTransitionTime if the status is the same. */
void deploy__condition_set(json_t *status, json_t *cond);
void deploy__condition_remove(json_t *status, const char *type);

/* The status Deployment d should have (a new reference): replicas, counts,
 * observedGeneration, collisionCount, d's conditions plus Available. */
json_t *deploy__status_calc(const json_t *d, const deploy_params_t *p, const deploy_rs_t *rs,
                            size_t n, int newi, const char *now);

/* Rollout finished: updated = total = available = spec.replicas and
 * observedGeneration current, as status st says. */
int deploy__complete(const json_t *d, const json_t *st);
/* st shows progress over d's status: more updated, ready or available
 * replicas, or fewer old ones. */
int deploy__progressing(const json_t *d, const json_t *st);
/* st's Progressing condition is older than progressDeadlineSeconds at now
 * (or says so already). */
int deploy__timed_out(const deploy_params_t *p, const json_t *st, int64_t now);

/* The Progressing condition and ReplicaFailure of syncRolloutStatus, set on
 * st (calculated by deploy__status_calc from d). */
void deploy__rollout_conditions(const json_t *d, const deploy_params_t *p, json_t *st,
                                const deploy_rs_t *rs, size_t n, int newi, int64_t now);

/* When to look again for a progress deadline given the status st about to
 * stand: milliseconds, or -1 for never. */
int64_t deploy__requeue_ms(const deploy_params_t *p, const json_t *d, const json_t *st,
                           int64_t now);

/* Progressing Unknown DeploymentPaused while paused, DeploymentResumed
 * after (never over ProgressDeadlineExceeded; nothing without a progress
 * deadline), set on st. Returns 1 if st changed. */
int deploy__paused_condition(const deploy_params_t *p, json_t *st, const char *now);

/* ---- the sync (deployment.c, deployment_rolling.c) ---- */

typedef struct deploy_ctl {
    ctrl_t *c;
    kc_informer_t *deploys, *sets, *pods;
} deploy_ctl_t;

/* One sync of one Deployment. */
typedef struct deploy_sync {
    deploy_ctl_t *ctl;
    json_t *d;     /* the Deployment: our copy, replaced by each API answer */
    json_t *evref; /* the involvedObject for events (lazy) */
    char ns[254], name[254];
    deploy_params_t p;
    deploy_rs_t *rs; /* its ReplicaSets, sorted; each holds a reference */
    size_t n, cap;
    int newi; /* index of the new RS, -1: none */
    int64_t now;
    char now_str[DEPLOY_TIME_MAX];
} deploy_sync_t;

/* Carry out every RS's target/touch/remove through the API (merge patches
 * with a resourceVersion precondition; ScalingReplicaSet events), stopping
 * at the first error, which it returns. */
int deploy__apply(deploy_sync_t *s);

/* Create the new RS if there is none (s->newi set on success). Errors: the
 * API's; KP_EEXIST after a hash collision (collisionCount was raised). */
int deploy__ensure_new(deploy_sync_t *s);

/* Write status with Progressing/ReplicaFailure as a rollout has them, or
 * requeue for the progress deadline if nothing changed. */
int deploy__rollout_status(deploy_sync_t *s);

/* Do old RSs still have pods that are not Succeeded/Failed? */
int deploy__old_pods_running(deploy_sync_t *s);

/* The two strategies (deployment_rolling.c). */
int deploy__rollout_rolling(deploy_sync_t *s);
int deploy__rollout_recreate(deploy_sync_t *s);

#endif
