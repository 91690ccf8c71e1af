/*
 * daemonset_int.h -- the DaemonSet controller's pure logic (daemonset.c),
 * shared with tests/controllers/test_daemonset.c:
 *
 *   - the pod template a DaemonSet's pods are made from (its tolerations,
 *     the controller-revision-hash and pod-template-generation labels, the
 *     node affinity pinning a pod to its node);
 *   - whether a node should run the daemon pod (nodeSelector, required node
 *     affinity, NoSchedule/NoExecute taints);
 *   - the per-node view of a DaemonSet's pods and what a sync does with it:
 *     which nodes get a pod, which pods go (manage), which old pods a
 *     RollingUpdate replaces now, and the status counts;
 *   - maxUnavailable arithmetic and the failed-pod backoff.
 *
 * Every function here reads and writes only its arguments: no API, no
 * caches, no clock (callers pass the time). JSON arguments are borrowed and
 * read-only unless a contract says otherwise.
 */
#ifndef KP_DAEMONSET_INT_H
#define KP_DAEMONSET_INT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define DS_HASH_LABEL "controller-revision-hash"
#define DS_GEN_LABEL  "pod-template-generation"
/* The template generation the API server keeps on an apps/v1 DaemonSet. */
#define DS_GEN_ANN "deprecated.daemonset.template.generation"

#define DS_BACKOFF_INITIAL_MS 1000LL
#define DS_BACKOFF_MAX_MS     (15LL * 60 * 1000)

/* ---- templates and nodes ---- */

/* Add the tolerations Kubernetes gives every daemon pod to a pod spec
 * (modified in place): not-ready and unreachable NoExecute; disk-, memory-,
 * pid-pressure and unschedulable NoSchedule; network-unavailable NoSchedule
 * when spec.hostNetwork. One with the same key, operator, value and effect
 * is replaced. Errors: KP_ENOMEM. */
int ds__add_tolerations(json_t *spec);

/* The template a DaemonSet's pods are made from (a new reference): a copy
 * of spec.template with the tolerations above, and the labels
 * controller-revision-hash=hash (if hash is not empty) and
 * pod-template-generation=gen (if gen is not NULL). NULL: out of memory. */
json_t *ds__pod_template(const json_t *ds, const char *hash, const char *gen);

/* The DaemonSet's template generation as a decimal string into buf: the
 * DS_GEN_ANN annotation, else metadata.generation. Returns buf, or NULL if
 * it has neither. */
const char *ds__generation(const json_t *ds, char *buf, size_t n);

/* Replace spec's required node affinity (modified in place) with one term,
 * matchFields metadata.name In [node], as Kubernetes pins a daemon pod.
 * Preferred affinity and pod (anti-)affinity stay. Errors: KP_ENOMEM. */
int ds__pin(json_t *spec, const char *node);

/* The node a daemon pod is for: spec.nodeName, else the value of a
 * metadata.name In [x] matchFields requirement of its required node
 * affinity; NULL if neither (borrowed from pod). */
const char *ds__pod_node(const json_t *pod);

/* Should node run the daemon pod of template `tmpl` (ds__pod_template's)?
 * Returns should_run; *should_continue says whether a pod already there may
 * stay. (0, 0): the template names another node, or the node does not match
 * nodeSelector/affinity, or it has an untolerated NoExecute taint; (0, 1):
 * an untolerated NoSchedule taint only; (1, 1): it should run. A node whose
 * Ready condition is not True counts as tainted not-ready (False) or
 * unreachable (Unknown, absent) NoSchedule, as the node lifecycle
 * controller would taint it and as kplane's scheduler treats it. */
int ds__should_run(const json_t *tmpl, const json_t *node, int *should_continue);

/* Is pod of the current template: its controller-revision-hash label is
 * hash (not empty), or its pod-template-generation label is gen (not NULL)? */
int ds__pod_updated(const json_t *pod, const char *hash, const char *gen);

/* spec.updateStrategy.rollingUpdate.maxUnavailable (int or "N%" of
 * desired, rounded up, as Kubernetes), default 1; with maxSurge not
 * implemented (0), a result of 0 becomes 1 when desired > 0 (Kubernetes'
 * rule for a 0/0 configuration). Errors: KP_EINVAL (not an int or a
 * percentage, or negative). */
int ds__max_unavailable(const json_t *ds, int32_t desired, int32_t *out);

/* ---- the per-node view ---- */

typedef struct ds_in {
    const json_t *tmpl;   /* ds__pod_template() of the DaemonSet */
    json_t *const *nodes; /* every Node */
    size_t nnodes;
    json_t *const *pods; /* every pod the DaemonSet controls, any state */
    size_t npods;
    const char *hash; /* the current revision's hash */
    const char *gen;  /* ds__generation(), may be NULL */
    int min_ready_s;  /* spec.minReadySeconds */
    int64_t now;      /* Unix seconds */
} ds_in_t;

typedef struct ds_entry {
    const char *node;    /* its name (borrowed from the node or a pod) */
    const json_t *obj;   /* the Node; NULL: no such node (pods target it) */
    int run, cont;       /* ds__should_run's verdict (0, 0 without a node) */
    const json_t **pods; /* the DS's pods for it, oldest first (scheduled first) */
    size_t n;
} ds_entry_t;

typedef struct ds_view {
    ds_entry_t *v; /* sorted by node name */
    size_t n;
    const json_t **store; /* backing array of every entry's pods */
} ds_view_t;

/* Group in->pods by the node each is for (pods for no node are left out),
 * and judge every node. Free with ds__view_free. Errors: KP_ENOMEM. */
int ds__view(const ds_in_t *in, ds_view_t *out);
void ds__view_free(ds_view_t *v);

/* What manage() decided. Every array holds at most npods (or nnodes)
 * entries; everything is borrowed from the view's inputs. */
typedef struct ds_plan {
    const char **create; /* nodes that should run a pod and have none */
    size_t ncreate;
    const json_t **del; /* pods to delete: extra pods on a node, pods on
                           nodes that should not run them */
    size_t ndel;
    const json_t **failed; /* Failed pods on nodes that keep theirs: delete
                              each unless its node is in backoff */
    const char **failed_node;
    size_t nfailed;
    const json_t **orphans; /* pods for nodes that do not exist: delete now */
    size_t norphans;
} ds_plan_t;

/* Kubernetes' manage() per node (maxSurge 0): a node that should run a pod
 * and has none gets one; on a node that may keep its pod, Failed pods are
 * replaced (after backoff) and of several running pods all but the oldest
 * go; a node that may not keep its pods loses them. Pods being deleted are
 * left alone. Errors: KP_ENOMEM. */
int ds__manage(const ds_in_t *in, const ds_view_t *v, ds_plan_t *out);
void ds__plan_free(ds_plan_t *p);

/* Kubernetes' RollingUpdate step with maxSurge 0: old pods that are not
 * available are replaced at once; other old pods only while fewer than
 * max_unavailable nodes are unavailable (a node with a new pod not yet
 * available, with only a terminating pod, or with both or neither kind
 * counts as unavailable). *del (malloc'd, borrowed entries) gets the pods
 * to delete. Errors: KP_ENOMEM. */
int ds__rolling(const ds_in_t *in, const ds_view_t *v, int32_t max_unavailable, const json_t ***del,
                size_t *ndel);

typedef struct ds_counts {
    int32_t desired, current, misscheduled, ready, updated, available, unavailable;
    int wait_s; /* seconds until a ready pod becomes available (0: none) */
} ds_counts_t;

/* The status counts as Kubernetes' updateDaemonSetStatus computes them
 * (the oldest pod of each node that should run one decides). */
void ds__counts(const ds_in_t *in, const ds_view_t *v, ds_counts_t *out);

/* ---- failed-pod backoff ---- */

/* Backoff per key in map (a JSON object the caller owns: key -> {"d": ms,
 * "t": ns}), 1 s doubling to 15 min, forgotten after 30 min of quiet (as
 * client-go's flowcontrol.Backoff). Returns 1 and sets *wait_ms if key is in
 * backoff at now_ns; else records one more step and returns 0. */
int ds__backoff(json_t *map, const char *key, int64_t now_ns, int64_t *wait_ms);

#endif
