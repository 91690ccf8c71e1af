/*
 * sched_int.h -- the scheduler's internals, shared by its files and its
 * tests: the pure filter and score functions (filter.c) and the cache of
 * nodes and their usage that decisions are made on (cache.c).
 *
 * Nothing here talks to the API or takes a lock but the cache's own.
 * Objects (json_t) passed in are borrowed and never modified.
 */
#ifndef KP_SCHED_INT_H
#define KP_SCHED_INT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* ---- what a pod asks for and what a node offers (filter.c) ---- */

typedef struct sched_res {
    int64_t cpu;  /* millicores */
    int64_t mem;  /* bytes */
    int64_t eph;  /* ephemeral-storage bytes */
    int64_t pods; /* pod slots */
} sched_res_t;

/* Requests of request-less containers, for scoring only (as Kubernetes). */
#define SCHED_DEFAULT_MILLI_CPU 100
#define SCHED_DEFAULT_MEMORY    (200LL * 1024 * 1024)

typedef struct sched_port {
    int port;      /* hostPort, > 0 */
    char proto[8]; /* TCP, UDP, SCTP */
    char ip[48];   /* hostIP; "0.0.0.0" when unset */
} sched_port_t;

typedef struct sched_pod {
    const json_t *obj;   /* the pod, borrowed */
    sched_res_t req;     /* max(sum of containers (+ sidecars), each init
                            container) + overhead; pods = 1 */
    int64_t nz_cpu;      /* the same with request-less containers counted */
    int64_t nz_mem;      /* as the defaults above: for scoring */
    sched_port_t *ports; /* host ports wanted (owned) */
    size_t nports;
    const char *owner; /* the controller ownerReference's uid (borrowed
                          from obj), NULL without one */
    /* Borrowed from obj, looked up once rather than once per node (NULL:
     * absent): spec.tolerations, spec.nodeSelector, and spec.affinity.
     * nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution. */
    const json_t *tolerations, *node_selector, *required;
} sched_pod_t;

/* Read pod's requests, host ports and owner into *out (filled even when a
 * quantity is malformed: it counts as 0). Free with sched_pod_clear.
 * Errors: KP_ENOMEM, KP_EINVAL (a malformed quantity, after filling). */
int sched_pod_parse(const json_t *pod, sched_pod_t *out);
void sched_pod_clear(sched_pod_t *p);

typedef struct sched_taint {
    char *key, *value, *effect; /* owned */
} sched_taint_t;

typedef struct sched_node_info {
    int ready;             /* Ready condition: 1 True, 0 False, -1 Unknown or absent */
    int unschedulable;     /* spec.unschedulable */
    sched_res_t alloc;     /* status.allocatable (capacity where absent) */
    sched_taint_t *taints; /* NoSchedule and NoExecute ones only (owned) */
    size_t ntaints;
    const json_t *labels; /* borrowed from the node parsed (may be NULL) */
    const char *name;     /* likewise ("" without one) */
} sched_node_info_t;

/* labels and name stay valid while the caller holds `node`.
 * Errors: KP_ENOMEM. */
int sched_node_parse(const json_t *node, sched_node_info_t *out);
void sched_node_info_clear(sched_node_info_t *ni);
/* Do two parsed nodes schedule alike (readiness, schedulability,
 * allocatable and taints)? */
int sched_node_info_same(const sched_node_info_t *a, const sched_node_info_t *b);

/* What the pods on a node use: requests (pods = how many), the same for
 * scoring, and their host ports (a multiset, owned). */
typedef struct sched_usage {
    sched_res_t req;
    int64_t nz_cpu, nz_mem;
    sched_port_t *ports;
    size_t nports, cap;
} sched_usage_t;

/* Add or remove a pod's requests and ports. Errors (add): KP_ENOMEM. */
int sched_usage_add(sched_usage_t *u, const sched_res_t *req, int64_t nz_cpu, int64_t nz_mem,
                    const sched_port_t *ports, size_t nports);
void sched_usage_sub(sched_usage_t *u, const sched_res_t *req, int64_t nz_cpu, int64_t nz_mem,
                     const sched_port_t *ports, size_t nports);
void sched_usage_clear(sched_usage_t *u);

/* ---- filters (filter.c) ---- */

/* Does a wanted host port clash with a used one (same protocol and port,
 * and the same IP or either 0.0.0.0)? */
int sched_ports_conflict(const sched_port_t *used, size_t nused, const sched_port_t *want,
                         size_t nwant);

/* Why a node does not fit (bits; 0: it fits). A node fails at the first
 * filter that rejects it, in Kubernetes' order; the resource filter names
 * every resource short. */
enum {
    SCHED_R_UNSCHEDULABLE = 1 << 0, /* node(s) were unschedulable */
    SCHED_R_TAINT = 1 << 1,         /* node(s) had untolerated taint {k: v} */
    SCHED_R_AFFINITY = 1 << 2,      /* node(s) didn't match Pod's node affinity/selector */
    SCHED_R_PORTS = 1 << 3,         /* node(s) didn't have free ports ... */
    SCHED_R_PODS = 1 << 4,          /* Too many pods */
    SCHED_R_CPU = 1 << 5,           /* Insufficient cpu */
    SCHED_R_MEM = 1 << 6,           /* Insufficient memory */
    SCHED_R_EPH = 1 << 7,           /* Insufficient ephemeral-storage */
};

/* Filter the pod against one node (ni: parsed; u: its usage), in order:
 * spec.unschedulable (passes for pods tolerating
 * node.kubernetes.io/unschedulable:NoSchedule), taints, readiness (a node
 * not Ready counts as carrying the NoSchedule taint
 * node.kubernetes.io/not-ready (Ready False) or .../unreachable (Unknown or
 * no condition), as the node lifecycle controller would set), nodeSelector
 * and required affinity, host ports, resources. For SCHED_R_TAINT, *tkey
 * and *tval name the taint (borrowed from ni, or static). */
unsigned sched_filter(const sched_pod_t *pod, const sched_node_info_t *ni, const sched_usage_t *u,
                      const char **tkey, const char **tval);

/* ---- scores (filter.c) ---- */

/* LeastAllocated, 0..100: (alloc - requested) * 100 / alloc for cpu and for
 * memory, requested counting this pod, request-less containers at the
 * defaults; averaged. */
int sched_score_least(const sched_pod_t *pod, const sched_node_info_t *ni, const sched_usage_t *u);
/* Spreading, 0..100: 100 * (max - count) / max over the feasible nodes,
 * count being the node's pods of the pod's owner (100 when max is 0). */
int sched_score_spread(int64_t count, int64_t max);
/* A node's score: SCHED_W_FIT * least + SCHED_W_SPREAD * spread. */
#define SCHED_W_FIT    2
#define SCHED_W_SPREAD 1

/* ---- the failure message (filter.c) ---- */

/* How many nodes failed for each reason. */
typedef struct sched_hist {
    struct sched_hist_entry {
        char *reason;
        int64_t count;
    } * v;
    size_t n, cap;
} sched_hist_t;

/* Count one node under `reason` (copied). Errors: KP_ENOMEM. */
int sched_hist_add(sched_hist_t *h, const char *reason);
/* Count one node under each reason in `bits` (sched_filter's). */
int sched_hist_add_bits(sched_hist_t *h, unsigned bits, const char *tkey, const char *tval);
/* "0/<nnodes> nodes are available: <count> <reason>, ...." with the
 * "<count> <reason>" strings sorted bytewise, as Kubernetes' FitError; "no
 * nodes available to schedule pods" when nnodes is 0. *out is the caller's
 * (free). Errors: KP_ENOMEM. */
int sched_hist_message(const sched_hist_t *h, size_t nnodes, char **out);
void sched_hist_free(sched_hist_t *h);

/* ---- the cache (cache.c) ----
 *
 * Nodes as the informer reports them, and every pod that uses a node:
 * bound ones (the informer reports spec.nodeName) and assumed ones (bound
 * by a worker, not reported yet). A decision and the assumption that
 * follows it happen under one lock, so two workers never both take the
 * last room on a node. Pending pods are tracked for the metrics and for
 * the unschedulable set that node changes retry. One mutex guards it all;
 * every call may come from any thread. */

typedef struct sched_cache sched_cache_t;

/* Errors: KP_ENOMEM. */
int sched_cache_new(sched_cache_t **out);
void sched_cache_free(sched_cache_t *c);

/* Add or replace a node (a reference is kept). Returns 1 when it could let
 * a pod fit that did not before (a new node, or a change to readiness,
 * schedulability, allocatable, taints or labels), 0 when not, or an error
 * (KP_EINVAL: no name, KP_ENOMEM). */
int sched_cache_node_set(sched_cache_t *c, const json_t *node);
void sched_cache_node_delete(sched_cache_t *c, const char *name);

/* A pod waiting for this scheduler. `spec_changed`: its spec or labels
 * changed since last reported (so an unschedulable verdict is stale).
 * Returns 1 if the caller should queue key, 0 if not (it is assumed, or
 * unschedulable and unchanged), or KP_ENOMEM. */
int sched_cache_pod_pending(sched_cache_t *c, const char *key, int spec_changed);
/* A pod reported on node `node` (the informer's word; an assumption for it
 * is confirmed or moved). Errors: KP_ENOMEM. */
int sched_cache_pod_bound(sched_cache_t *c, const char *key, const char *node,
                          const sched_pod_t *p);
/* A pod gone, finished, or no longer ours. Returns 1 when it freed room on
 * a node (unschedulable pods may now fit), else 0. */
int sched_cache_pod_remove(sched_cache_t *c, const char *key);

/* A worker's scratch space for decisions (owned by the worker). */
typedef struct sched_scratch {
    int64_t *count; /* per node slot: the pod owner's pods there */
    int *score;     /* per node slot */
    size_t *feasible;
    size_t cap;
    unsigned seed; /* rand_r state for tie-breaking */
} sched_scratch_t;
void sched_scratch_free(sched_scratch_t *w);

typedef struct sched_decision {
    char node[256]; /* on 0: the node chosen (the pod is assumed there) */
    char *message;  /* on KP_ENOTFOUND: why, as sched_hist_message (caller frees) */
    uint64_t gen;   /* the node generation the decision saw */
} sched_decision_t;

/* Choose a node for pending pod `key` and assume it there. Returns 0 (a
 * node in d->node), KP_ENOTFOUND (none fits: d->message), KP_EEXIST (the
 * pod is not pending: unknown, assumed or bound; nothing to do), or
 * KP_ENOMEM. */
int sched_cache_schedule(sched_cache_t *c, const char *key, const sched_pod_t *p,
                         sched_scratch_t *w, sched_decision_t *d);
/* Undo the assumption of key on node (a failed bind): the pod is pending
 * again. A no-op if the informer has reported the pod meanwhile. */
void sched_cache_forget(sched_cache_t *c, const char *key, const char *node);
/* Pending pod key found no node at generation gen: file it among the
 * unschedulable. Returns 1 (and files nothing) if nodes or pods changed
 * since gen: the caller should retry at once. */
int sched_cache_unschedulable(sched_cache_t *c, const char *key, uint64_t gen);
/* Take every unschedulable pod's key (*keys malloc'd, each key malloc'd)
 * and bump the generation. Errors: KP_ENOMEM (nothing taken). */
int sched_cache_take_unschedulable(sched_cache_t *c, char ***keys, size_t *n);

typedef struct sched_cache_stats {
    size_t nodes;         /* known nodes */
    size_t pending;       /* pods waiting for this scheduler */
    size_t unschedulable; /* of those, filed as unschedulable */
    size_t assumed;       /* bound by a worker, not reported yet */
    size_t bound;         /* reported on a node */
} sched_cache_stats_t;
void sched_cache_stats(sched_cache_t *c, sched_cache_stats_t *out);
/* The usage of node `name` (copied without its ports). Errors: KP_ENOTFOUND. */
int sched_cache_node_usage(sched_cache_t *c, const char *name, sched_res_t *out);

#endif
