/*
 * replicaset_int.h -- the pure part of the ReplicaSet controller
 * (replicaset.c) that tests call directly.
 */
#ifndef KP_REPLICASET_INT_H
#define KP_REPLICASET_INT_H

#include <jansson.h>

/* The selector of a ReplicaSet (map_selector 0) or ReplicationController
 * (map_selector 1) as a metav1.LabelSelector: a new reference, or NULL when
 * it has none (which selects nothing). An RC's label map becomes
 * matchLabels; an empty one is its template's labels, as Kubernetes'
 * defaulting makes it. rs is borrowed. */
json_t *rs__selector(const json_t *rs, int map_selector);

#endif
