/*
 * rbac.h -- the RBAC authorizer (rbac.c), for authz.c and the tests.
 *
 * Threads: every call is safe from any thread; rbac_allows() takes a
 * reference to the current snapshot under a mutex held for a pointer copy
 * and never waits for a rebuild.
 */
#ifndef KP_API_AUTH_RBAC_H
#define KP_API_AUTH_RBAC_H

#include <jansson.h>

#include "apiserver/auth/authz.h"

typedef struct rbac rbac_t;

/* Follow the server's Roles, ClusterRoles, RoleBindings and
 * ClusterRoleBindings (their watch caches; a group not served counts as
 * empty). The first snapshot is built before this returns. Errors:
 * KP_ENOMEM, the caches' errors. */
int rbac_start(apiserver_t *srv, rbac_t **out);
void rbac_stop(rbac_t *z);

/* 1 when a rule reachable from a->user allows a, else 0 (no opinion).
 * `reason` (NULL: not wanted) gets Kubernetes' text: on 1 which binding
 * allowed, on 0 the roles that bindings name and that do not exist. */
int rbac_allows(rbac_t *z, const api_attrs_t *a, char *reason, size_t len);

/* 1 when one of `rules` (an array of PolicyRule objects) allows a, as
 * Kubernetes' rbac.RulesAllow (the Node authorizer's static rules). */
int rbac_json_rules_allow(const json_t *rules, const api_attrs_t *a);

/* Copies of the PolicyRules user u holds in ns ("" : from
 * ClusterRoleBindings only), a new array (the caller's). Errors: KP_ENOMEM. */
int rbac_rules_for(rbac_t *z, const api_user_t *u, const char *ns, json_t **rules);

/* A copy of the rules of the Role ns/name (kind "Role") or the ClusterRole
 * name (kind "ClusterRole"); *rules NULL when it does not exist. Errors:
 * KP_ENOMEM. */
int rbac_role_rules(rbac_t *z, const char *ns, const char *kind, const char *name, json_t **rules);

#endif
