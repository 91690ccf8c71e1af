/*
 * satoken.h -- ServiceAccount tokens: JWTs the API server signs (ES256) and
 * accepts, as Kubernetes' bound service account tokens
 * (pkg/serviceaccount, TokenRequest, TokenReview).
 *
 * A token's claims: iss (--service-account-issuer), sub
 * (system:serviceaccount:NS:NAME), aud (what the requester asked, else the
 * API's audiences: the issuer), iat, nbf, exp, jti, and kubernetes.io:
 * {namespace, serviceaccount {name, uid}, and the bound pod, secret or node
 * {name, uid}}. The header names the key (kid: the base64url SHA-256 of the
 * public key's DER, as Kubernetes names it).
 *
 * A token authenticates when: it parses, its kid is a known key and its
 * signature verifies, its issuer is ours, now lies in [nbf, exp], one of
 * its audiences is one of the API's, and the objects it names still exist
 * with the same uids (the ServiceAccount; the bound pod, not being deleted;
 * secret; node) in the watch caches. Verified signatures are remembered
 * (a bounded table keyed by the token's hash, until its exp), so a client
 * that reuses a token pays for ECDSA once; the object checks run every
 * time, so a deleted pod's token stops working at once.
 *
 * Threads: every call is safe from any thread.
 */
#ifndef KP_API_AUTH_SATOKEN_H
#define KP_API_AUTH_SATOKEN_H

#include <jansson.h>
#include <stdint.h>

#include "apiserver/http/authn.h"
#include "apiserver/http/http.h"

typedef struct api_sa api_sa_t;

/* Start the token machinery for server s from its configuration (the
 * signing key, the verifying keys, the issuer). Errors: KP_EINVAL (a key
 * that does not load, with `err` saying which), KP_ENOMEM. */
int api_sa_start(apiserver_t *s, api_sa_t **out, char *err, size_t errlen);
void api_sa_stop(api_sa_t *sa);

/* Whether `token` looks like a JWT (three base64url parts): only those are
 * worth api_sa_authenticate(). */
int api_sa_is_jwt(const char *token);

/* Authenticate a bearer token (see above): API_AUTHN_OK with *u (its
 * strings in *owned, a malloc'd block the caller frees), API_AUTHN_FAILED
 * with `err` saying why (for TokenReview's status.error), or
 * API_AUTHN_NONE when it is no ServiceAccount token of ours. `audiences`
 * (NULL: the API's) are those one of the token's must match. */
api_authn_result_t api_sa_authenticate(api_sa_t *sa, const char *token,
                                       const char *const *audiences, size_t naudiences,
                                       api_user_t *u, void **owned, char *err, size_t errlen);

/* Sign a token for ServiceAccount (ns, name, uid), valid `seconds` from
 * now, for `aud` (a JSON array of strings; NULL: the API's audiences),
 * bound to `bound` (NULL, or {kind, name, uid} of a Pod, Secret or Node;
 * a Pod may carry "node": {name, uid}). *jwt is malloc'd; *exp the expiry
 * (Unix seconds). Errors: KP_ENOMEM, KP_EIO (signing failed). */
int api_sa_sign(api_sa_t *sa, const char *ns, const char *name, const char *uid, int64_t seconds,
                const json_t *aud, const json_t *bound, char **jwt, int64_t *exp);

/* The issuer, and the OIDC documents: /.well-known/openid-configuration
 * (`jwks_uri` on the issuer's host) and /openid/v1/jwks. New references. */
const char *api_sa_issuer(const api_sa_t *sa);
json_t *api_sa_openid_configuration(const api_sa_t *sa);
json_t *api_sa_jwks(const api_sa_t *sa);

/* Serve /.well-known/openid-configuration or /openid/v1/jwks (the route
 * API_ROUTE_OIDC): replies once. */
int api_sa_serve_oidc(api_req_t *r);

#endif
