/*
 * nodematch.h -- may a pod go to a node: taints and tolerations, nodeSelector
 * and required node affinity, as Kubernetes' component-helpers
 * (scheduling/corev1) decide them for the scheduler, the DaemonSet
 * controller and taint eviction alike. Pure functions over borrowed JSON.
 */
#ifndef KP_NODEMATCH_H
#define KP_NODEMATCH_H

#include <jansson.h>

/* Does one toleration tolerate the taint (key, value, effect)? An empty
 * toleration effect matches every effect, an empty key with Exists every
 * key; operator Exists ignores the value, Equal (or none) compares it. */
int kp_toleration_matches(const json_t *toleration, const char *key, const char *value,
                          const char *effect);
/* Does any of `tolerations` (an array, may be NULL) tolerate the taint? */
int kp_tolerates(const json_t *tolerations, const char *key, const char *value,
                 const char *effect);
/* The same for a taint object {key, value, effect}. */
int kp_tolerates_taint(const json_t *tolerations, const json_t *taint);

/* Do nodeSelector `selector` (an object, may be NULL) and required node
 * affinity `required` (a NodeSelector, may be NULL) admit a node with these
 * labels (may be NULL) and this name? Terms are ORed, their requirements
 * ANDed (In, NotIn, Exists, DoesNotExist, Gt, Lt); matchFields knows
 * metadata.name; a term without requirements matches nothing. */
int kp_node_selects(const json_t *selector, const json_t *required, const json_t *labels,
                    const char *name);
/* kp_node_selects() for a pod spec's nodeSelector and
 * affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution
 * against a Node object. */
int kp_pod_spec_selects_node(const json_t *pod_spec, const json_t *node);

#endif
