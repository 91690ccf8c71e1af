/*
 * statefulset_int.h -- the StatefulSet controller's pure decisions, apart
 * from its I/O so that tests/controllers/test_statefulset.c can drive them.
 *
 *   statefulset.c   informers, claims, revisions, pods, status (I/O), and
 *                   the planner below (no I/O).
 *
 * All objects are borrowed and read-only.
 */
#ifndef KP_STATEFULSET_INT_H
#define KP_STATEFULSET_INT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define STS_POD_NAME_LABEL  "statefulset.kubernetes.io/pod-name"
#define STS_POD_INDEX_LABEL "apps.kubernetes.io/pod-index"

/* The ordinal of pod name `pod` if it is "<set>-<decimal>" (Kubernetes'
 * getParentNameAndOrdinal + isMemberOf), else -1. */
int64_t sts__ordinal(const char *set, const char *pod);

/* One ordinal's pod as the planner sees it. */
typedef struct sts_pod {
    const json_t *obj; /* NULL: no pod has this ordinal (a slot to fill) */
    int64_t ordinal;
    unsigned finished : 1;    /* phase Failed or Succeeded: recreate it */
    unsigned terminating : 1; /* deletionTimestamp set */
    unsigned ready : 1;       /* phase Running and condition Ready */
    unsigned available : 1;   /* ready for minReadySeconds */
    unsigned updated : 1;     /* controller-revision-hash = the update revision */
    unsigned identity_ok : 1; /* pod-name and pod-index labels right */
} sts_pod_t;

typedef struct sts_params {
    int monotonic;     /* podManagementPolicy OrderedReady (1) or Parallel (0) */
    int rolling;       /* updateStrategy RollingUpdate (1) or OnDelete (0) */
    int64_t partition; /* rollingUpdate.partition: the first slot index to update */
} sts_params_t;

typedef enum sts_op {
    STS_CREATE = 1, /* create slot `index`'s pod */
    STS_DELETE,     /* delete slot `index`'s pod (finished, or out of date) */
    STS_CONDEMN,    /* delete condemned[index] (scale down) */
    STS_FIX,        /* restore slot `index`'s identity labels */
} sts_op_t;

typedef struct sts_action {
    sts_op_t op;
    size_t index;
    int update_rev; /* STS_CREATE: from the update revision (1) or the current (0) */
} sts_action_t;

/* What one sync does, as Kubernetes' updateStatefulSet orders it:
 *   1. slots ascending: delete finished pods (recreated once gone), create
 *      missing ones, fix identities; when monotonic, stop at the first
 *      create or delete, or at a pod that is not Running, Ready and
 *      Available (or is terminating);
 *   2. condemned (ordinals past the end, sorted DESCENDING): delete, when
 *      monotonic one at a time, each only once all slots are healthy,
 *      waiting for a terminating one; an unhealthy condemned pod goes only
 *      if it is the first unhealthy pod (the lowest unhealthy condemned);
 *   3. RollingUpdate: from the highest slot down to `partition`, delete the
 *      first pod not at the update revision, waiting for each to be healthy
 *      (Running, Ready, Available, not terminating).
 * `slots` has one entry per wanted ordinal (slot i is ordinal start+i).
 * Writes at most `max` actions into out and returns how many. */
size_t sts__plan(const sts_params_t *p, const sts_pod_t *slots, size_t nslots,
                 const sts_pod_t *condemned, size_t ncondemned, sts_action_t *out, size_t max);

#endif
