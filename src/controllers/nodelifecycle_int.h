/*
 * nodelifecycle_int.h -- what the node lifecycle controller (nodelifecycle.c)
 * and the taint eviction controller (tainteviction.c) share: the taint and
 * toleration rules and the node health decisions, as pure functions.
 *
 * Every function here reads and writes only its arguments: no API, no
 * caches, no clock (callers pass `now`). tests/controllers/
 * test_nodelifecycle.c calls them directly. JSON arguments are borrowed and
 * read-only unless a contract says otherwise.
 */
#ifndef KP_NODELIFECYCLE_INT_H
#define KP_NODELIFECYCLE_INT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* Taint keys (Kubernetes' well-known ones). */
#define NLC_TAINT_NOT_READY     "node.kubernetes.io/not-ready"
#define NLC_TAINT_UNREACHABLE   "node.kubernetes.io/unreachable"
#define NLC_TAINT_UNSCHEDULABLE "node.kubernetes.io/unschedulable"
#define NLC_TAINT_MEMORY        "node.kubernetes.io/memory-pressure"
#define NLC_TAINT_DISK          "node.kubernetes.io/disk-pressure"
#define NLC_TAINT_PID           "node.kubernetes.io/pid-pressure"
#define NLC_TAINT_NETWORK       "node.kubernetes.io/network-unavailable"

#define NLC_LEASE_NS "kube-node-lease"
#define NLC_TIME_MAX 32 /* an RFC 3339 time with its NUL */
/* What the controller writes into the conditions of a silent node. */
#define NLC_R_UNKNOWN "NodeStatusUnknown"
#define NLC_M_UNKNOWN "Kubelet stopped posting node status."
#define NLC_R_NEVER   "NodeStatusNeverUpdated"
#define NLC_M_NEVER   "Kubelet never posted node status."

/* ---- taints and tolerations ---- */

/* When must a pod with `tolerations` leave a node with `taints`? Only
 * NoExecute taints count. For each, the first toleration that tolerates it
 * is the one used (as Kubernetes' GetMatchingTolerations):
 *   NLC_KEEP       no NoExecute taint, or every one tolerated forever (no
 *                  tolerationSeconds);
 *   NLC_EVICT_NOW  a NoExecute taint nobody tolerates, or a tolerationSeconds
 *                  that has run out (<= 0 runs out at once);
 *   NLC_EVICT_AT   *at_s (Unix seconds) is the earliest time a toleration
 *                  runs out: the taint's timeAdded (else `added_default_s`,
 *                  when the taint has none) plus its tolerationSeconds.
 * now_s is the current Unix time. */
enum { NLC_KEEP = 0, NLC_EVICT_NOW = 1, NLC_EVICT_AT = 2 };
int nlc_eviction(const json_t *taints, const json_t *tolerations, int64_t now_s,
                 int64_t added_default_s, int64_t *at_s);

/* 1 if `taints` (an array, may be NULL) holds a taint with this key and effect. */
int nlc_has_taint(const json_t *taints, const char *key, const char *effect);

/* ---- node health ---- */

/* The condition of `type` in a Node's status (borrowed), or NULL. */
const json_t *nlc_condition(const json_t *node, const char *type);

/* Is a node whose last sign of life (a Lease renewal or a Ready heartbeat
 * seen to change) was at probe_ms stale at now_ms, given the grace period?
 * All in one clock's milliseconds. */
int nlc_stale(int64_t probe_ms, int64_t now_ms, int64_t grace_ms);

/* The conditions of a node that stopped posting status, as Kubernetes'
 * node lifecycle controller writes them: Ready, MemoryPressure, DiskPressure
 * and PIDPressure with status Unknown, reason NodeStatusUnknown ("Kubelet
 * stopped posting node status."), their lastHeartbeatTime kept, and
 * lastTransitionTime `now` where the status changes; a missing one of the
 * four is added with reason NodeStatusNeverUpdated. Other conditions are
 * kept. Returns a new array, or NULL when nothing would change (Ready is
 * Unknown already) or on ENOMEM. */
json_t *nlc_unknown_conditions(const json_t *node, const char *now);

/* The taints the node should carry: its own, with the controller's taints
 * (not-ready/unreachable NoExecute and NoSchedule from Ready False/Unknown,
 * the pressure and network-unavailable NoSchedule ones from those
 * conditions True, unschedulable NoSchedule from spec.unschedulable) made
 * to match its conditions; a taint kept keeps its timeAdded, one added gets
 * `now`. Returns a new array (possibly empty), and *changed says whether it
 * differs from spec.taints; NULL on ENOMEM. */
json_t *nlc_wanted_taints(const json_t *node, const char *now, int *changed);

/* RFC 3339 (seconds, UTC) of Unix time t into buf. */
void nlc_time(char *buf, size_t n, int64_t t);

#endif
