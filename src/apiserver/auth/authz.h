/*
 * authz.h -- may this user do this? Kubernetes' authorizers in the order of
 * --authorization-mode, behind the privileged group system:masters (always
 * allowed, as kube-apiserver puts it first).
 *
 *   AlwaysAllow  every request.
 *   RBAC         Roles, ClusterRoles and their bindings, evaluated as
 *                Kubernetes' RBAC authorizer does (rbac.c), from a snapshot
 *                of the four watch caches rebuilt when any of them changes.
 *   Node         kubelets (system:node:NAME in system:nodes): the objects
 *                their own pods use, their own Lease (node.c).
 *
 * A request no authorizer allows is refused: 403 with Kubernetes' message
 * (api_authz_forbidden_message()).
 *
 * Threads: every call is safe from any thread; api_authorize() takes no lock
 * beyond a reference count and never blocks, so the engine's loop thread may
 * call it.
 */
#ifndef KP_API_AUTH_AUTHZ_H
#define KP_API_AUTH_AUTHZ_H

#include <jansson.h>
#include <stddef.h>

#include "apiserver/http/authn.h"
#include "apiserver/http/http.h"

/* Kubernetes' authorizer.Attributes. Strings borrowed for the call; "" for
 * what does not apply. */
typedef struct api_attrs {
    const api_user_t *user;
    const char *verb; /* get list watch create update patch delete deletecollection,
                         impersonate, escalate, bind, ...; lower-case method for a path */
    int resource_request;
    const char *ns, *group, *version, *resource, *sub, *name;
    const char *path; /* a non-resource request's path */
    /* Asked on the engine's loop thread, which must not wait: a decision
     * that needs more than the attributes and the rules (the Node
     * authorizer's look at the node's pods) is not made, and
     * api_authorize() answers API_AUTHZ_LATER instead. */
    int quick;
    char *owned; /* what api_attrs_of() copied (api_attrs_clear() frees it) */
} api_attrs_t;

/* The attributes of request r made by user u, read from its method, path
 * and query alone as Kubernetes' RequestInfoFactory reads them (whether or
 * not the resource exists): /api/v1/... and /apis/GROUP/VERSION/... with
 * at least a resource are resource requests (namespaces/NS/RESOURCE/NAME/
 * SUBRESOURCE; a GET without a name is list, or watch with watch=true, and
 * a fieldSelector metadata.name=X names X; a DELETE without a name is
 * deletecollection); anything else is a path with the method as its verb.
 * Errors: KP_ENOMEM. Free with api_attrs_clear(). */
int api_attrs_of(api_req_t *r, const api_user_t *u, api_attrs_t *a);
void api_attrs_clear(api_attrs_t *a);

typedef struct api_authz api_authz_t;

/* What --authorization-mode is when not given: kubeadm's choice (kube-
 * apiserver's own default is AlwaysAllow; kplane's is least privilege). */
#define API_AUTHZ_DEFAULT_MODES "Node,RBAC"

/* Check a --authorization-mode value: a comma-separated list of AlwaysAllow,
 * RBAC and Node, none twice (NULL or "": API_AUTHZ_DEFAULT_MODES). Errors: KP_EINVAL, with
 * `err` saying what is wrong. */
int api_authz_check_modes(const char *modes, char *err, size_t errlen);

/* Start the authorizers `modes` names (as checked above) for server `s`
 * (RBAC follows its watch caches from here on). Errors: KP_EINVAL (bad
 * modes), KP_ENOMEM. */
int api_authz_start(apiserver_t *s, const char *modes, api_authz_t **out);
void api_authz_stop(api_authz_t *z);

/* 1 when `a` is allowed, else 0 with `reason` (may be "") saying why, as
 * Kubernetes' authorizers explain a denial. With a->quick, also
 * API_AUTHZ_LATER: no authorizer before the one that needs more work
 * allowed it; ask again without quick, off the loop thread. */
#define API_AUTHZ_LATER 2
int api_authorize(api_authz_t *z, const api_attrs_t *a, char *reason, size_t reasonlen);

/* Kubernetes' message for a denied request (without the reason):
 * `User "jane" cannot list resource "pods" in API group "" in the
 * namespace "default"`, or `... cannot get path "/x"`. */
void api_authz_forbidden_message(const api_attrs_t *a, char *out, size_t len);

/* The rules user `u` holds in namespace `ns` ("" for cluster-wide only), as
 * SelfSubjectRulesReview lists them: *resource_rules and
 * *nonresource_rules are new arrays of ResourceRule and NonResourceRule
 * objects (the caller's). With system:masters or AlwaysAllow the answer is
 * everything. *incomplete is 1 when an authorizer cannot list its rules.
 * Errors: KP_ENOMEM. */
int api_authz_rules(api_authz_t *z, const api_user_t *u, const char *ns, json_t **resource_rules,
                    json_t **nonresource_rules, int *incomplete);

/* Copies of the PolicyRules user `u` holds in `ns` ("": cluster-wide
 * only), a new array: RBAC's rules, or everything under AlwaysAllow. For
 * the escalation check. Errors: KP_ENOMEM. */
int api_authz_held(api_authz_t *z, const api_user_t *u, const char *ns, json_t **rules);

/* Kubernetes' Covers(owner, rules) as a list: the atoms of `rules` (each
 * rule broken down to one verb and one group, resource and name, or one
 * verb and one URL) that no rule of `owner` covers, as PolicyRules in a new
 * array (empty when owner covers them all); NULL when out of memory. */
json_t *api_rules_uncovered(const json_t *owner, const json_t *rules);

/* The rules of the role a binding refers to: *rules a new reference to the
 * rules array (NULL when the role does not exist). For bind checks. */
int api_authz_role_rules(api_authz_t *z, const char *ns, const char *kind, const char *name,
                         json_t **rules);

/* ---- the bootstrap policy (policy.c) ---- */

struct pol_role;
struct pol_binding;
/* A row of policy.h as its object (a new reference; NULL: out of memory). */
json_t *api_policy_role_json(const struct pol_role *p);
json_t *api_policy_binding_json(const struct pol_binding *p);
/* Begin to create or extend every object of the bootstrap policy (policy.c
 * says how), through the normal write path, 16 objects at a time on threads
 * of its own, as kube-apiserver's rbac/bootstrap-roles post-start hook: the
 * server's start goes on meanwhile. The server's view must be published.
 * *out is the caller's until api_policy_wait(). Errors: KP_ENOMEM. */
typedef struct api_policy_run api_policy_run_t;
int api_policy_begin(apiserver_t *s, api_policy_run_t **out);
/* Wait for every object of `run` to be done, and free it (NULL: 0).
 * Errors: the first write's that failed: KP_ENOMEM, KP_EIO (a write
 * refused), KP_ECONFLICT (still changing after 5 tries). */
int api_policy_wait(api_policy_run_t *run);

#endif
