/*
 * ctrl_util.h -- small helpers the controllers share: label selectors, pod
 * state, owner references, and running API calls side by side.
 *
 * All objects are borrowed and read-only unless a function says otherwise.
 */
#ifndef KP_CTRL_UTIL_H
#define KP_CTRL_UTIL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "client/client.h"

/* Does metav1.LabelSelector `sel` (matchLabels AND matchExpressions with In,
 * NotIn, Exists, DoesNotExist) select an object with these labels (a JSON
 * object, may be NULL)? An empty selector selects everything; a NULL one
 * selects nothing (as Kubernetes treats a nil selector). */
int ctrl_selector_matches(const json_t *sel, const json_t *labels);

/* metadata.<field> as a string, "" if absent. */
const char *ctrl_meta_str(const json_t *obj, const char *field);
/* metadata.labels (may be NULL). */
const json_t *ctrl_labels(const json_t *obj);

/* Is namespace ns (NULL: gone) being deleted? Nothing is made in it then. */
int ctrl_namespace_terminating(const json_t *ns);

/* Pod state. */
int ctrl_pod_active(const json_t *pod);     /* not Succeeded/Failed, not being deleted */
int ctrl_pod_ready(const json_t *pod);      /* condition Ready True */
const json_t *ctrl_pod_ready_condition(const json_t *pod); /* borrowed; NULL: none */
/* Ready for at least min_ready_s seconds at now_s (Unix seconds); when ready
 * but not yet available, *wait_s (if not NULL) gets the seconds left. */
int ctrl_pod_available(const json_t *pod, int min_ready_s, int64_t now_s, int *wait_s);
/* RFC 3339 time to Unix seconds; -1 if absent or malformed. */
int64_t ctrl_time(const char *rfc3339);

/* An ownerReference naming `owner` as controller (a new reference):
 * {apiVersion, kind, name, uid, controller: true, blockOwnerDeletion: true}. */
json_t *ctrl_controller_ref(const json_t *owner, const char *api_version, const char *kind);
/* The uid of obj's controller ownerReference, or NULL. */
const char *ctrl_controller_uid(const json_t *obj);

/* Adoption and release (Kubernetes' ControllerRefManager), through the API
 * client `cl` on resource `r`. Release drops owner_uid's ownerReference from obj (a
 * strategic merge patch guarded by obj's uid); an object already gone counts
 * as released. Adopt adds owner's controller ownerReference (a merge patch
 * guarded by obj's uid); on 0, *adopted (the caller's) is the object as
 * written; KP_ENOTFOUND and KP_ECONFLICT mean it went or changed meanwhile,
 * and is not adopted. */
int ctrl_release(kc_client_t *cl, const kc_resource_t *r, const json_t *obj,
                 const char *owner_uid);
int ctrl_adopt(kc_client_t *cl, const kc_resource_t *r, const json_t *obj, const json_t *owner,
               const char *api_version, const char *kind, json_t **adopted);

/* Kubernetes' Update/UpdateStatus from the cache: a copy of `obj` (a
 * cached object, borrowed) with the merge patch `patch` applied (RFC 7386),
 * PUT to `sub` (NULL: the object itself, else "status") with obj's
 * resourceVersion as the precondition: what the controllers' bootstrap
 * roles allow (update, not patch, of status subresources). On a conflict the object is
 * read again and the patch applied to it, once, as Kubernetes' controllers
 * retry a status update; not when `patch` names a resourceVersion (the
 * caller wants exactly that one). *out (NULL: not wanted) gets the answer.
 * Errors: as kc_update (KP_ECONFLICT, KP_ENOTFOUND, ...). */
int ctrl_update_merged(kc_client_t *cl, const kc_resource_t *r, const json_t *obj, const char *sub,
                       const json_t *patch, json_t **out);

/* Run fn(arg, i) for i in [0, n) on up to `threads` threads at once and
 * return how many returned 0. Each call's rc lands in rcs[i] when rcs is not
 * NULL. For the batches of creates and deletes a sync issues. */
size_t ctrl_parallel(size_t n, int threads, int (*fn)(void *arg, size_t i), void *arg, int *rcs);

#endif
