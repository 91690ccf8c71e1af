/*
 * scheduler.h -- kplane's scheduler: binds pending pods to nodes.
 *
 * A pod is the scheduler's to place when spec.nodeName is empty,
 * spec.schedulerName is the configured name, it is not being deleted and has
 * not finished. For each such pod a worker filters the nodes (Ready,
 * schedulable, taints tolerated, nodeSelector and required node affinity,
 * resources and host ports free), scores the ones left (least allocated,
 * plus a small term spreading the pods of one owner), binds the pod to the
 * best (ties broken at random) through pods/binding, and records a
 * "Scheduled" event. A pod that fits nowhere gets PodScheduled=False
 * (reason Unschedulable, Kubernetes' "0/N nodes are available: ..." message)
 * and a FailedScheduling event, and is retried with backoff; a node added
 * or changed, or an assigned pod going away, retries it at once.
 *
 * The scheduler talks to the API only through src/client (one informer on
 * pods, one on nodes, pods/binding, pods/status, events). Pods it bound
 * count against their node at once ("assumed"), before the watch reports
 * them, so parallel workers never oversubscribe a node.
 *
 * Lifecycle: sched_new -> sched_start -> sched_stop (-> sched_start ...)
 * -> sched_free. Each start lists pods and nodes afresh. Leader election is
 * the caller's: start on becoming leader, stop on losing it. Every call but
 * sched_free may be made from any thread.
 */
#ifndef KP_SCHEDULER_H
#define KP_SCHEDULER_H

#include "client/client.h"
#include "client/informer.h"

typedef struct sched sched_t;

typedef struct sched_config {
    const char *name;       /* the schedulerName served and the event source;
                               NULL: "default-scheduler" (copied) */
    int workers;            /* pods scheduled and bound in parallel (binds wait on
                               the store's fsync, so more share one); 0: 32 */
    int backoff_initial_ms; /* first retry of an unschedulable pod; 0: 1000 */
    int backoff_max_ms;     /* retry cap; 0: 10000 */
    int resync_ms;          /* own informers' resync; 0: none */
    kc_factory_t *factory;  /* shared informers (borrowed; it must outlive the
                               scheduler); NULL: the scheduler makes its own */
    int sync_timeout_ms;    /* sched_start's wait for the caches; 0: 30000 */
    unsigned seed;          /* tie-breaking; 0: from the clock */
} sched_config_t;

/* A scheduler over client `c` (borrowed: it must outlive the scheduler);
 * cfg may be NULL (all defaults). Nothing runs until sched_start. *out is
 * the caller's: sched_free. Errors: KP_EINVAL (negative config fields,
 * backoff_max below backoff_initial), KP_ENOMEM, the informers' errors. */
int sched_new(kc_client_t *c, const sched_config_t *cfg, sched_t **out);

/* Start the informers, wait until both caches have synced, then start the
 * workers. On an error nothing is left running (start may be tried again).
 * Errors: KP_ETIMEDOUT (caches not synced within sync_timeout_ms), KP_EBUSY
 * (already running), KP_ENOMEM, the informers' errors. */
int sched_start(sched_t *s);

/* Stop taking pods (those still queued are dropped, not placed), let
 * running binds finish, join the workers, stop the informers. Waits for a
 * sched_start in progress. Idempotent; a no-op unless running. */
void sched_stop(sched_t *s);

/* Stop if needed, flush pending events, free. NULL is a no-op. */
void sched_free(sched_t *s);

/* Prometheus text exposition of the scheduler's metrics into *text (the
 * caller's: free()):
 *   kplane_scheduler_pending_pods             gauge: pods waiting to be bound
 *   kplane_scheduler_unschedulable_pods       gauge: of those, waiting after a failure
 *   kplane_scheduler_schedule_attempts_total{result="scheduled|unschedulable|error"}
 *   kplane_scheduler_bind_attempts_total, kplane_scheduler_bind_successes_total
 *   kplane_scheduler_schedule_duration_seconds histogram: one attempt, from
 *                                             taking the pod to its bind answer
 * Errors: KP_ENOMEM. */
int sched_metrics(sched_t *s, char **text);

#endif
