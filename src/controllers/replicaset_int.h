/*
 * replicaset_int.h -- the pure part of the ReplicaSet controller
 * (replicaset.c) that tests call directly.
 */
#ifndef KP_REPLICASET_INT_H
#define KP_REPLICASET_INT_H

#include <jansson.h>
#include <stddef.h>

/* The selector of a ReplicaSet (map_selector 0) or ReplicationController
 * (map_selector 1) as a metav1.LabelSelector: a new reference, or NULL when
 * it has none (which selects nothing). An RC's label map becomes
 * matchLabels; an empty one is its template's labels, as Kubernetes'
 * defaulting makes it. rs is borrowed. */
json_t *rs__selector(const json_t *rs, int map_selector);

/* ---- summaries (replicaset_sum.c) ----
 *
 * What a sync reads of the pods a ReplicaSet controls, kept current by the
 * pod informer's events, so that a sync in the common case (no pod to
 * adopt, release or delete, no minReadySeconds) reads counts instead of
 * passing over every pod: at 100,000 pods that pass was most of the
 * controller manager's time. Thread-safe; objects are borrowed. */
typedef struct rs__sums rs__sums_t;

/* The counts over the pods one ReplicaSet controls. */
typedef struct rs__counts {
    long active;  /* active pods (ctrl_pod_active) */
    long ready;   /* of those, Ready */
    long full;    /* of those, carrying every label of the template */
    long release; /* not being deleted and no longer selected: to release */
} rs__counts_t;

/* Summaries of ReplicaSets whose pods name them in a controller
 * ownerReference of kind `kind` ("ReplicaSet", "ReplicationController").
 * NULL: out of memory. */
rs__sums_t *rs__sums_new(const char *kind);
void rs__sums_free(rs__sums_t *ss); /* NULL is fine */

/* A pod event as the informer delivers it: old NULL for an add, pod NULL
 * for a delete. Pods of ReplicaSets without a summary are not kept. Call
 * it from the informer's handlers, before anything that lets a sync count
 * the pod as seen (expectations). */
void rs__sums_event(rs__sums_t *ss, const json_t *old, const json_t *pod);

/* Lists the pods the ReplicaSet controls, as kc_informer_list(). */
typedef int (*rs__list_fn)(void *arg, json_t ***pods, size_t *n);

/* The counts of the ReplicaSet at `key` ("ns/name") with this uid, selector
 * (rs__selector(), NULL: none) and template labels (NULL: none). A summary
 * made for another uid, selector or template, or none, is built first from
 * list(arg) (which then runs under the summaries' lock: it must not call
 * back in). Errors: those of list, KP_ENOMEM. */
int rs__sums_counts(rs__sums_t *ss, const char *key, const char *uid, const json_t *sel,
                    const json_t *tmpl, rs__list_fn list, void *arg, rs__counts_t *out);

/* Drop the summary at key (its ReplicaSet is gone). */
void rs__sums_forget(rs__sums_t *ss, const char *key);

#endif
