/*
 * node.h -- the Node authorizer (node.c) and what NodeRestriction reads of
 * it: who a kubelet is, and what its pods reference.
 *
 * Threads: every call is safe from any thread.
 */
#ifndef KP_API_AUTH_NODE_H
#define KP_API_AUTH_NODE_H

#include <jansson.h>

#include "apiserver/auth/authz.h"

/* The node a user is: NULL when not in group system:nodes, "" when in it
 * without a system:node:NAME name, else NAME (borrowed from u). */
const char *api_node_identity(const api_user_t *u);

/* The bootstrap ClusterRole system:node's rules, a new array. */
json_t *api_node_static_rules(void);

/* 1 when `a` is allowed for a node user (see node.c), 0 for no opinion
 * (reason, may be NULL, says why when there is a reason). Non-node users:
 * 0 with no reason. With a->quick, API_AUTHZ_LATER where the answer needs
 * the node's pods (s is not touched then). */
int api_node_authorize(apiserver_t *s, const json_t *static_rules, const api_attrs_t *a,
                       char *reason, size_t len);

/* Whether a pod in ns bound to `node` references the object `name` of
 * `kind` ("secrets", "configmaps", "persistentvolumeclaims",
 * "serviceaccounts"), as the watch cache has the pods now. */
int api_node_pod_references(apiserver_t *s, const char *node, const char *ns, const char *kind,
                            const char *name);

#endif
