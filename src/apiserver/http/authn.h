/*
 * authn.h -- who a request is: Kubernetes' user.Info and the authentication
 * chain that finds it (authn.c).
 *
 * The chain, in kube-apiserver's order: a client certificate verified
 * against the cluster CA (user = subject CN, groups = subject O values),
 * then a bearer token (the generated admin token, --token-auth-file's),
 * then, for a request that brought no credentials at all, the anonymous
 * user when --anonymous-auth is on. Credentials that are present and wrong
 * are refused (401), never taken as anonymous. Every authenticated user
 * gets the group system:authenticated, the anonymous one
 * system:unauthenticated, as Kubernetes' group adders give them.
 *
 * Then impersonation (Impersonate-User, -Group, -Uid, -Extra-*): the
 * request acts as another user when the authorizer lets the authenticated
 * one `impersonate` each of those (server.c, api_impersonate()).
 */
#ifndef KP_API_HTTP_AUTHN_H
#define KP_API_HTTP_AUTHN_H

#include <stddef.h>

#include "apiserver/apiserver.h"

#define API_USER_ANONYMOUS        "system:anonymous"
#define API_GROUP_AUTHENTICATED   "system:authenticated"
#define API_GROUP_UNAUTHENTICATED "system:unauthenticated"
#define API_GROUP_MASTERS         "system:masters"
#define API_ADMIN_USER            "kubernetes-admin" /* the admin token's user */

/* One extra attribute of a user (user.Info's GetExtra: a key and its
 * values), as impersonation and ServiceAccount tokens give them. */
typedef struct api_user_extra {
    const char *key;
    const char *const *values;
    size_t nvalues;
} api_user_extra_t;

/* A user. Strings and arrays are borrowed from whoever built it (the token
 * table, the connection's certificate, the request's own storage) for as
 * long as the request lives. */
typedef struct api_user {
    const char *name;
    const char *uid; /* "" when none */
    const char *const *groups;
    size_t ngroups;
    const api_user_extra_t *extra;
    size_t nextra;
} api_user_t;

/* Whether u is in group g. */
int api_user_in_group(const api_user_t *u, const char *g);

/* What authentication found. */
typedef enum api_authn_result {
    API_AUTHN_NONE = 0,   /* no credentials came */
    API_AUTHN_OK = 1,     /* *out is the user */
    API_AUTHN_FAILED = -1 /* credentials came and were wrong: 401 */
} api_authn_result_t;

/* The user a bearer token names: the admin token is API_ADMIN_USER in
 * system:masters; a --token-auth-file line is its user, uid and groups
 * (system:authenticated added). Constant time in the token's bytes. *out
 * borrows from `admin_user` (the caller's, for the admin token) or `t`. */
api_authn_result_t api_authn_token(const char *admin_token, const api_user_t *admin_user,
                                   const apiserver_tokens_t *t, const char *token, api_user_t *out);

#endif
