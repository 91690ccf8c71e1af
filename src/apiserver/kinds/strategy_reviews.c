/*
 * strategy_reviews.c -- the questions a client may ask about who it is and
 * what it may do, answered and never stored (Kubernetes'
 * pkg/registry/authentication/selfsubjectreview and
 * pkg/registry/authorization/{subject,localsubject,selfsubject}accessreview,
 * selfsubjectrulesreview):
 *
 *   SelfSubjectReview          the requesting user (kubectl auth whoami)
 *   TokenReview                who does this bearer token belong to?
 *   SelfSubjectAccessReview    may I? (kubectl auth can-i)
 *   SubjectAccessReview        may this user?
 *   LocalSubjectAccessReview   may this user, in this namespace?
 *   SelfSubjectRulesReview     what may I in this namespace? (can-i --list)
 *
 * Each answers a POST with the object sent, its status filled in, 201. The
 * asking itself is authorized as a create of the review (server.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/auth/authz.h"
#include "apiserver/auth/satoken.h"
#include "apiserver/http/http.h"
#include "apiserver/kinds/strategy_int.h"
#include "apiserver/rest/rest.h"
#include "apiserver/rest/rest_int.h"
#include "apiserver/schema/strategy.h"
#include "lib/base64.h"
#include "lib/err.h"

static const char *str(const json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : "";
}

/* The body as the review kind `kind`, or a reply: 0 with *out (the
 * caller's), or 0 with *out NULL after replying. */
static int review_body(api_req_t *r, const char *kind, json_t **out)
{
    *out = NULL;
    int rc = rest_body_object(r, out);
    if (rc || !*out) return rc;
    const char *k = json_string_value(json_object_get(*out, "kind"));
    if (k && *k && strcmp(k, kind)) {
        rc = api_reply_status(r, 400, "BadRequest", NULL, "not a %s: %s", kind, k);
        json_decref(*out);
        *out = NULL;
        return rc;
    }
    /* The answer carries the kind and version asked for, and no status the
     * client sent. */
    char av[160];
    snprintf(av, sizeof av, "%s%s%s", r->route.group, *r->route.group ? "/" : "", r->route.version);
    json_object_set_new(*out, "kind", json_string(kind));
    json_object_set_new(*out, "apiVersion", json_string(av));
    json_t *meta = json_object_get(*out, "metadata");
    if (!json_is_object(meta)) json_object_set_new(*out, "metadata", meta = json_object());
    if (!json_object_get(meta, "creationTimestamp"))
        json_object_set_new(meta, "creationTimestamp", json_null());
    json_object_del(*out, "status");
    return 0;
}

static int reply_review(api_req_t *r, json_t *obj, json_t *status)
{
    if (!status) {
        json_decref(obj);
        return api_reply_error(r, KP_ENOMEM, NULL, "out of memory");
    }
    json_object_set_new(obj, "status", status);
    return api_reply_json(r, 201, obj);
}

/* A 422 naming one field. */
static int invalid(api_req_t *r, json_t *obj, const char *kind, const char *reason,
                   const char *field, const char *msg)
{
    json_t *causes = json_pack("[{s:s,s:s,s:s}]", "reason", reason, "message", msg, "field", field);
    int rc = rest_reply_causes(r, r->route.group, kind, "", causes);
    json_decref(causes);
    json_decref(obj);
    return rc;
}

static json_t *strings(const char *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

/* ---- SelfSubjectReview ---- */

static json_t *user_info(const api_user_t *u)
{
    json_t *ui = json_pack("{s:s}", "username", u->name);
    if (!ui) return NULL;
    if (u->uid && *u->uid) json_object_set_new(ui, "uid", json_string(u->uid));
    if (u->ngroups) json_object_set_new(ui, "groups", strings(u->groups, u->ngroups));
    if (u->nextra) {
        json_t *ex = json_object();
        for (size_t i = 0; ex && i < u->nextra; i++)
            json_object_set_new(ex, u->extra[i].key,
                                strings(u->extra[i].values, u->extra[i].nvalues));
        json_object_set_new(ui, "extra", ex);
    }
    return ui;
}

static int selfsubjectreview_serve(api_req_t *r)
{
    json_t *obj;
    int rc = review_body(r, "SelfSubjectReview", &obj);
    if (rc || !obj) return rc;
    json_t *ui = user_info(&r->user);
    return reply_review(r, obj, ui ? json_pack("{s:o}", "userInfo", ui) : NULL);
}

const api_strategy_t api_strategy_selfsubjectreview = {.serve = selfsubjectreview_serve};

/* ---- TokenReview ---- */

/* The claims of a JWT already verified (its middle part, decoded), or NULL. */
static json_t *jwt_claims(const char *t)
{
    const char *d1 = strchr(t, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    if (!d2) return NULL;
    size_t n = (size_t)(d2 - d1 - 1), cap = n / 4 * 3 + 3, len = 0;
    char *raw = malloc(cap);
    json_t *c =
        raw && !base64url_decode(d1 + 1, n, raw, cap, &len) ? json_loadb(raw, len, 0, NULL) : NULL;
    free(raw);
    return c;
}

/* The token through the server's token authenticators (ServiceAccount
 * tokens, the admin token, --token-auth-file), for the audiences asked. */
static int tokenreview_serve(api_req_t *r)
{
    json_t *obj;
    int rc = review_body(r, "TokenReview", &obj);
    if (rc || !obj) return rc;
    const json_t *spec = json_object_get(obj, "spec");
    const char *token = str(spec, "token");
    if (!*token) {
        json_decref(obj);
        return api_reply_status(r, 400, "BadRequest", NULL,
                                "token is required for TokenReview in authentication");
    }
    const json_t *auds = json_object_get(spec, "audiences");
    size_t na = 0;
    const char *aud[16];
    for (size_t i = 0; i < json_array_size(auds) && na < 16; i++)
        if (json_is_string(json_array_get(auds, i)))
            aud[na++] = json_string_value(json_array_get(auds, i));
    apiserver_t *s = r->srv;
    api_user_t u;
    void *owned = NULL;
    char err[256] = "";
    api_authn_result_t a = API_AUTHN_NONE;
    if (s->sa && api_sa_is_jwt(token))
        a = api_sa_authenticate(s->sa, token, na ? aud : NULL, na, &u, &owned, err, sizeof err);
    /* Static tokens carry the API's audiences only. */
    if (a == API_AUTHN_NONE && !na)
        a = api_authn_token(s->admin_token, &s->admin_user, s->cfg.tokens, token, &u);
    json_t *st = json_pack("{s:b}", "authenticated", a == API_AUTHN_OK);
    if (st && a == API_AUTHN_OK) {
        json_object_set_new(st, "user", user_info(&u));
        /* The audiences asked for that the token carries (a static
         * token: the API's own). */
        json_t *matched = json_array(), *claims = owned ? jwt_claims(token) : NULL;
        const json_t *taud = json_object_get(claims, "aud");
        const char *api_aud = s->sa ? api_sa_issuer(s->sa) : NULL;
        for (size_t i = 0; i < (na ? na : 1); i++) {
            const char *want = na ? aud[i] : api_aud;
            int has = !claims; /* a static token: the API's audience */
            for (size_t j = 0; claims && want && j < json_array_size(taud); j++) {
                const char *a = json_string_value(json_array_get(taud, j));
                has |= a && !strcmp(a, want);
            }
            if (claims && json_is_string(taud))
                has |= want && !strcmp(json_string_value(taud), want);
            if (want && has) json_array_append_new(matched, json_string(want));
        }
        json_decref(claims);
        json_object_set_new(st, "audiences", matched);
    } else if (st) {
        json_object_set_new(st, "user", json_object());
        json_object_set_new(st, "error", json_string(*err ? err : "invalid bearer token"));
    }
    free(owned);
    return reply_review(r, obj, st);
}

const api_strategy_t api_strategy_tokenreview = {.serve = tokenreview_serve};

/* ---- access reviews ---- */

/* The decision for `spec`'s attributes as user u: the status object. */
static json_t *decide(api_req_t *r, const api_user_t *u, const json_t *spec)
{
    const json_t *ra = json_object_get(spec, "resourceAttributes");
    const json_t *na = json_object_get(spec, "nonResourceAttributes");
    api_attrs_t a = {.user = u,
                     .ns = "",
                     .group = "",
                     .version = "",
                     .resource = "",
                     .sub = "",
                     .name = "",
                     .path = ""};
    if (ra) {
        a.resource_request = 1;
        a.verb = str(ra, "verb");
        a.ns = str(ra, "namespace");
        a.group = str(ra, "group");
        a.version = str(ra, "version");
        a.resource = str(ra, "resource");
        a.sub = str(ra, "subresource");
        a.name = str(ra, "name");
    } else {
        a.verb = str(na, "verb");
        a.path = str(na, "path");
    }
    char reason[1024];
    int ok = r->srv->authz ? api_authorize(r->srv->authz, &a, reason, sizeof reason) : 1;
    if (!r->srv->authz) reason[0] = '\0';
    json_t *st = json_pack("{s:b}", "allowed", ok);
    if (st && *reason) json_object_set_new(st, "reason", json_string(reason));
    return st;
}

/* Exactly one of resourceAttributes and nonResourceAttributes (Kubernetes'
 * ValidateSubjectAccessReviewSpec). 0, or -1 after replying. */
static int check_attrs(api_req_t *r, json_t *obj, const char *kind, const json_t *spec, int *rc)
{
    int res = json_is_object(json_object_get(spec, "resourceAttributes"));
    int nonres = json_is_object(json_object_get(spec, "nonResourceAttributes"));
    if (res == nonres) {
        *rc = invalid(r, obj, kind, "FieldValueInvalid", "spec.resourceAttributes",
                      res ? "cannot be specified in combination with resourceAttributes"
                          : "exactly one of nonResourceAttributes or resourceAttributes must be "
                            "specified");
        return -1;
    }
    return 0;
}

static int selfsubjectaccessreview_serve(api_req_t *r)
{
    json_t *obj;
    int rc = review_body(r, "SelfSubjectAccessReview", &obj);
    if (rc || !obj) return rc;
    const json_t *spec = json_object_get(obj, "spec");
    if (check_attrs(r, obj, "SelfSubjectAccessReview", spec, &rc)) return rc;
    return reply_review(r, obj, decide(r, &r->user, spec));
}

const api_strategy_t api_strategy_selfsubjectaccessreview = {.serve =
                                                                 selfsubjectaccessreview_serve};

/* The user a SubjectAccessReview names: strings borrowed from spec, the
 * arrays in *store (the caller frees it). */
static int spec_user(const json_t *spec, api_user_t *u, const char ***store)
{
    const json_t *groups = json_object_get(spec, "groups");
    size_t n = json_array_size(groups);
    *store = calloc(n + 1, sizeof **store);
    if (!*store) return KP_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *g = json_string_value(json_array_get(groups, i));
        if (g) (*store)[k++] = g;
    }
    *u = (api_user_t){
        .name = str(spec, "user"), .uid = str(spec, "uid"), .groups = *store, .ngroups = k};
    return 0;
}

static int subject_review(api_req_t *r, const char *kind, int local)
{
    json_t *obj;
    int rc = review_body(r, kind, &obj);
    if (rc || !obj) return rc;
    json_t *spec = json_object_get(obj, "spec");
    if (check_attrs(r, obj, kind, spec, &rc)) return rc;
    if (!*str(spec, "user") && !json_array_size(json_object_get(spec, "groups")))
        return invalid(r, obj, kind, "FieldValueRequired", "spec.user",
                       "Required value: at least one of user or group must be specified");
    if (local) {
        json_t *ra = json_object_get(spec, "resourceAttributes");
        if (!ra)
            return invalid(r, obj, kind, "FieldValueInvalid", "spec.nonResourceAttributes",
                           "disallowed on this kind of request");
        /* An empty namespace is the request's; another is refused. */
        const char *ns = str(ra, "namespace");
        if (!*ns) {
            json_object_set_new(ra, "namespace", json_string(r->route.ns));
        } else if (strcmp(ns, r->route.ns)) {
            json_decref(obj);
            return api_reply_status(r, 400, "BadRequest", NULL,
                                    "spec.resourceAttributes.namespace must match namespace: %s",
                                    r->route.ns);
        }
    }
    api_user_t u;
    const char **groups = NULL;
    if (spec_user(spec, &u, &groups)) {
        json_decref(obj);
        return api_reply_error(r, KP_ENOMEM, NULL, "out of memory");
    }
    json_t *st = decide(r, &u, spec);
    free(groups);
    return reply_review(r, obj, st);
}

static int subjectaccessreview_serve(api_req_t *r)
{
    return subject_review(r, "SubjectAccessReview", 0);
}

static int localsubjectaccessreview_serve(api_req_t *r)
{
    return subject_review(r, "LocalSubjectAccessReview", 1);
}

const api_strategy_t api_strategy_subjectaccessreview = {.serve = subjectaccessreview_serve};
const api_strategy_t api_strategy_localsubjectaccessreview = {.serve =
                                                                  localsubjectaccessreview_serve};

/* ---- SelfSubjectRulesReview ---- */

static int selfsubjectrulesreview_serve(api_req_t *r)
{
    json_t *obj;
    int rc = review_body(r, "SelfSubjectRulesReview", &obj);
    if (rc || !obj) return rc;
    const char *ns = str(json_object_get(obj, "spec"), "namespace");
    json_t *res = NULL, *nonres = NULL;
    int incomplete = 0;
    if (!r->srv->authz) {
        res = json_array();
        nonres = json_array();
    } else if (api_authz_rules(r->srv->authz, &r->user, ns, &res, &nonres, &incomplete)) {
        json_decref(obj);
        return api_reply_error(r, KP_ENOMEM, NULL, "out of memory");
    }
    return reply_review(r, obj,
                        json_pack("{s:o,s:o,s:b}", "resourceRules", res, "nonResourceRules", nonres,
                                  "incomplete", incomplete));
}

const api_strategy_t api_strategy_selfsubjectrulesreview = {.serve = selfsubjectrulesreview_serve};
