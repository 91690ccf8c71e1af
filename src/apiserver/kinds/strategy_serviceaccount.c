/*
 * strategy_serviceaccount.c -- ServiceAccounts and their token subresource
 * (Kubernetes' pkg/registry/core/serviceaccount/storage/token.go):
 *
 *   POST .../serviceaccounts/NAME/token  TokenRequest -> a signed JWT
 *
 * spec.expirationSeconds defaults to 3600 and lies in [600, 2^32];
 * spec.audiences default to the API's (the issuer); spec.boundObjectRef
 * (a Pod, Secret or Node, as `kubectl create token --bound-object-kind`
 * names it) must exist, with the uid given if one is, and a Pod must run
 * as this ServiceAccount; a Pod's node is recorded too. The token stops
 * working when the ServiceAccount or the bound object is gone
 * (auth/satoken.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "apiserver/auth/satoken.h"
#include "apiserver/http/http.h"
#include "apiserver/kinds/strategy_int.h"
#include "apiserver/rest/rest.h"
#include "apiserver/rest/rest_int.h"
#include "apiserver/schema/strategy.h"
#include "lib/err.h"

#define TOKEN_SECONDS_DEFAULT 3600
#define TOKEN_SECONDS_MIN     600
#define TOKEN_SECONDS_MAX     4294967296LL /* 2^32 */

static const char *str(const json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : "";
}

/* The object of (resource, ns, name) as stored: 0 with *out, or an error
 * (KP_ENOTFOUND). */
static int load(api_req_t *r, const char *resource, const char *ns, const char *name, json_t **out)
{
    size_t i = 0;
    const api_resource_t *res = api_view_find(r->view, "", "v1", resource, &i);
    char key[512];
    int64_t rev;
    if (!res || api_object_key(res, ns, name, key, sizeof key)) return KP_ENOTFOUND;
    return rest_load(r, key, out, &rev);
}

static int invalid(api_req_t *r, const char *field, const json_t *v, const char *detail)
{
    json_t *causes = json_array();
    api__invalid(causes, field, v, detail);
    int rc = rest_reply_causes(r, "authentication.k8s.io", "TokenRequest", r->route.name, causes);
    json_decref(causes);
    return rc;
}

/* The bound object of ref, checked as Kubernetes checks it: 0 with *bound
 * ({kind, name, uid[, node]}, the caller's), or the reply's code after
 * replying. */
static int bound_object(api_req_t *r, const json_t *ref, json_t **bound)
{
    *bound = NULL;
    const char *kind = str(ref, "kind"), *name = str(ref, "name"), *uid = str(ref, "uid");
    static const char *const kinds[] = {"Pod", "Secret", "Node", NULL};
    if (!api__in(kind, kinds)) {
        json_t *causes = json_array();
        api__not_supported_str(causes, "spec.boundObjectRef.kind", kind, kinds);
        int rc =
            rest_reply_causes(r, "authentication.k8s.io", "TokenRequest", r->route.name, causes);
        json_decref(causes);
        return rc;
    }
    const char *resource = !strcmp(kind, "Pod")      ? "pods"
                           : !strcmp(kind, "Secret") ? "secrets"
                                                     : "nodes";
    json_t *obj = NULL;
    int rc = load(r, resource, strcmp(kind, "Node") ? r->route.ns : "", name, &obj);
    if (rc)
        return api_reply_status(r, 404, "NotFound",
                                json_pack("{s:s,s:s}", "name", name, "kind", resource),
                                "%s \"%s\" not found", resource, name);
    const json_t *meta = json_object_get(obj, "metadata");
    const char *have = str(meta, "uid");
    if (!strcmp(kind, "Pod") &&
        strcmp(str(json_object_get(obj, "spec"), "serviceAccountName"), r->route.name)) {
        json_decref(obj);
        return api_reply_status(r, 400, "BadRequest", NULL,
                                "cannot bind token for serviceaccount \"%s\" to pod running "
                                "with different serviceaccount name.",
                                r->route.name);
    }
    if (*uid && strcmp(uid, have)) {
        json_decref(obj);
        return api_reply_status(r, 409, "Conflict",
                                json_pack("{s:s,s:s}", "name", name, "kind", kind),
                                "Operation cannot be fulfilled on %s \"%s\": the UID in the bound "
                                "object reference (%s) does not match the UID in record. The "
                                "object might have been deleted and then recreated",
                                kind, name, uid);
    }
    *bound = json_pack("{s:s,s:s,s:s}", "kind", kind, "name", name, "uid", have);
    /* A Pod's node (ServiceAccountTokenPodNodeInfo): its name and uid. */
    const char *node = str(json_object_get(obj, "spec"), "nodeName");
    json_t *n = NULL;
    if (*bound && !strcmp(kind, "Pod") && *node && !load(r, "nodes", "", node, &n))
        json_object_set_new(*bound, "node",
                            json_pack("{s:s,s:s}", "name", node, "uid",
                                      str(json_object_get(n, "metadata"), "uid")));
    json_decref(n);
    json_decref(obj);
    return *bound ? 0 : api_reply_error(r, KP_ENOMEM, NULL, "out of memory");
}

static int sa_token(api_req_t *r)
{
    api_sa_t *sa = r->srv->sa;
    json_t *tr = NULL, *account = NULL, *bound = NULL;
    int rc = rest_body_object(r, &tr);
    if (rc || !tr) return rc;
    json_t *spec = json_object_get(tr, "spec");
    if (!json_is_object(spec)) json_object_set_new(tr, "spec", spec = json_object());
    /* SetDefaults_TokenRequestSpec. */
    if (!json_is_integer(json_object_get(spec, "expirationSeconds")))
        json_object_set_new(spec, "expirationSeconds", json_integer(TOKEN_SECONDS_DEFAULT));
    json_int_t secs = json_integer_value(json_object_get(spec, "expirationSeconds"));
    if (secs < TOKEN_SECONDS_MIN) {
        rc = invalid(r, "spec.expirationSeconds", json_object_get(spec, "expirationSeconds"),
                     "may not specify a duration less than 10 minutes");
        goto out;
    }
    if (secs > TOKEN_SECONDS_MAX) {
        rc = invalid(r, "spec.expirationSeconds", json_object_get(spec, "expirationSeconds"),
                     "may not specify a duration larger than 2^32 seconds");
        goto out;
    }
    if (!json_array_size(json_object_get(spec, "audiences")))
        json_object_set_new(spec, "audiences", json_pack("[s]", api_sa_issuer(sa)));
    int64_t rev;
    if ((rc = rest_load_route(r, &account, &rev))) {
        rc = 0; /* replied: not found */
        goto out;
    }
    const json_t *ref = json_object_get(spec, "boundObjectRef");
    if (api_node_restrict_token(r, ref)) { /* replied: 403 */
        rc = 0;
        goto out;
    }
    if (json_is_object(ref) && (rc = bound_object(r, ref, &bound), !bound)) goto out;
    char *jwt = NULL;
    int64_t exp = 0;
    const json_t *meta = json_object_get(account, "metadata");
    if ((rc = api_sa_sign(sa, r->route.ns, r->route.name, str(meta, "uid"), secs,
                          json_object_get(spec, "audiences"), bound, &jwt, &exp))) {
        rc = api_reply_error(r, rc, NULL, "signing the token: %s", err_str(rc));
        goto out;
    }
    char when[32];
    time_t t = (time_t)exp;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_object_set_new(tr, "kind", json_string("TokenRequest"));
    json_object_set_new(tr, "apiVersion", json_string("authentication.k8s.io/v1"));
    json_t *m = json_object_get(tr, "metadata");
    if (!json_is_object(m)) json_object_set_new(tr, "metadata", m = json_object());
    json_object_set_new(m, "name", json_string(r->route.name));
    json_object_set_new(m, "namespace", json_string(r->route.ns));
    json_object_set_new(m, "creationTimestamp", json_null());
    json_object_set_new(tr, "status",
                        json_pack("{s:s,s:s}", "token", jwt, "expirationTimestamp", when));
    free(jwt);
    rc = api_reply_json(r, 201, tr);
    tr = NULL;
out:
    json_decref(tr);
    json_decref(account);
    json_decref(bound);
    return rc;
}

static const char *const create_verbs[] = {"create", NULL};

static const api_sub_t sa_subs[] = {
    {"token", "authentication.k8s.io", "v1", "TokenRequest", create_verbs, sa_token, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};

const api_strategy_t api_strategy_serviceaccount = {
    .subs = sa_subs,
};
