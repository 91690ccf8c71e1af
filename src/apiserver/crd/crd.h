/*
 * crd.h -- CustomResourceDefinitions: the controller inside the API server
 * (crd.c) and the rules on CRD objects it shares with the CRD strategy
 * (strategy_crd.c).
 */
#ifndef KP_API_CRD_H
#define KP_API_CRD_H

#include <jansson.h>

#include "apiserver/schema/resource.h"

struct apiserver;

/* crd.c: the CustomResourceDefinition controller inside the API server. */
int api_crd_start(struct apiserver *s);
void api_crd_stop(struct apiserver *s); /* safe if never started */

/* The finalizer a CRD carries until its objects are deleted (strategy_crd.c
 * adds it on create, crd.c removes it). */
#define API_CRD_FINALIZER "customresourcecleanup.apiextensions.k8s.io"

/* strategy_crd.c: rules on CRD objects that the controller (crd.c) shares.
 * Pure functions, safe from any thread. */
/* Is `group` k8s.io, kubernetes.io or under either (the groups whose CRDs
 * need the api-approved.kubernetes.io annotation)? */
int api_crd_protected_group(const char *group);
typedef enum api_crd_approval {
    API_CRD_APPROVAL_INVALID, /* neither a URL nor "unapproved..." */
    API_CRD_APPROVED,         /* a URL with a scheme and a host */
    API_CRD_APPROVAL_BYPASSED, /* starts with "unapproved" */
    API_CRD_APPROVAL_MISSING, /* absent or empty */
} api_crd_approval_t;
/* The state of a CRD's api-approved.kubernetes.io annotation; *value (if
 * not NULL) gets the annotation, borrowed from crd ("" if absent). */
api_crd_approval_t api_crd_approval_state(const json_t *crd, const char **value);
/* The KubernetesAPIApprovalPolicyConformant condition a CRD should carry
 * (type, status, reason, message; a new reference), or NULL when its group
 * is not protected (or out of memory). */
json_t *api_crd_approval_condition(const json_t *crd);
/* The built-in resource whose store keys a CRD of this group and plural would
 * share (either key prefix a prefix of the other), or NULL if none. */
const api_resource_t *api_crd_builtin_clash(const char *group, const char *plural);

#endif
