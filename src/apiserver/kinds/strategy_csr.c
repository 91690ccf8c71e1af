/*
 * strategy_csr.c -- certificates.k8s.io/v1 CertificateSigningRequests:
 * Kubernetes' three strategies for them (pkg/registry/certificates/
 * certificates/strategy.go) and the checks of pkg/apis/certificates/
 * validation.
 *
 * Who may change what (the invariant this file keeps):
 *   1. The main resource changes neither spec nor status (only metadata);
 *      the spec never changes after create.
 *   2. The status subresource (the signer's) changes status.certificate and
 *      the conditions other than Approved and Denied; approval conditions
 *      come from the stored object, whatever the request says.
 *   3. The approval subresource (PUT or PATCH .../approval, `kubectl
 *      certificate approve|deny`) changes only the Approved and Denied
 *      conditions (and metadata); the other conditions and the certificate
 *      come from the stored object.
 *   4. Approved and Denied exclude each other, each appears at most once
 *      with status "True" (as Failed), and no update removes an Approved,
 *      Denied or Failed condition. Stored objects already breaking a rule
 *      (written before it) may keep doing so, as Kubernetes tolerates.
 *   5. status.certificate, once set, never changes; a status write that
 *      sets it gives one or more PEM CERTIFICATE blocks (and nothing else).
 *   Conditions without lastUpdateTime get the write's time; without
 *   lastTransitionTime, the stored one of the same type and status, else now.
 *
 * The requester: as Kubernetes, a create's spec.username, uid, groups and
 * extra are the requesting user's, whatever the body said (csr_admission,
 * the hook that sees the request). Not here: the DER inside the PEM
 * blocks: Kubernetes parses each certificate; here a block is taken by its
 * type.
 *
 * Pure functions of their arguments (and the request): safe from any
 * thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/http/http.h"
#include "apiserver/schema/object.h"
#include "lib/base64.h"
#include "lib/err.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/kinds/strategy_int.h"

/* ---- CertificateSigningRequest ---- */

/* What the client may not say: the status, and who asks (csr_admission
 * writes the requester). */
static void csr_prepare_create(json_t *csr)
{
    json_t *spec = api_json_child(csr, "spec");
    json_object_set_new(csr, "status", json_object());
    json_object_del(spec, "username");
    json_object_del(spec, "groups");
    json_object_del(spec, "uid");
    json_object_del(spec, "extra");
}

/* PrepareForCreate's user.Info: the requester, into spec. */
static int csr_admission(api_req_t *r, json_t *csr, const json_t *old, const char *name)
{
    (void)name;
    json_t *spec = json_object_get(csr, "spec");
    if (old || !json_is_object(spec)) return 0;
    const api_user_t *u = &r->user;
    json_object_set_new(spec, "username", json_string(u->name ? u->name : ""));
    if (u->uid && *u->uid) json_object_set_new(spec, "uid", json_string(u->uid));
    json_t *groups = json_array();
    for (size_t i = 0; groups && i < u->ngroups; i++)
        json_array_append_new(groups, json_string(u->groups[i]));
    json_object_set_new(spec, "groups", groups);
    if (u->nextra) {
        json_t *extra = json_object();
        for (size_t i = 0; extra && i < u->nextra; i++) {
            json_t *vals = json_array();
            for (size_t j = 0; vals && j < u->extra[i].nvalues; j++)
                json_array_append_new(vals, json_string(u->extra[i].values[j]));
            json_object_set_new(extra, u->extra[i].key, vals);
        }
        json_object_set_new(spec, "extra", extra);
    }
    return 0;
}

/* Updates of the main resource change neither spec nor status. */
static void csr_prepare_update(json_t *csr, const json_t *old)
{
    json_t *spec = json_deep_copy(json_object_get(old, "spec"));
    if (spec) json_object_set_new(csr, "spec", spec);
}

static const char *const csr_usages[] = {
    "any",           "cert sign",        "client auth",      "code signing",
    "content commitment", "crl sign",    "data encipherment", "decipher only",
    "digital signature", "email protection", "encipher only", "ipsec end system",
    "ipsec tunnel",  "ipsec user",       "key agreement",    "key encipherment",
    "microsoft sgc", "netscape sgc",     "ocsp signing",     "s/mime",
    "server auth",   "signing",          "timestamping",     NULL};

/* The request is base64 (a []byte) holding a PEM "CERTIFICATE REQUEST". */
static void check_csr_request(const json_t *req, json_t *causes)
{
    const char *b64 = json_string_value(req);
    size_t n = b64 ? strlen(b64) : 0, len = 0;
    char *pem = n ? malloc(n) : NULL;
    int ok = pem && !base64_decode(b64, n, pem, n, &len);
    if (ok) {
        pem[len < n ? len : n - 1] = '\0';
        ok = strstr(pem, "-----BEGIN CERTIFICATE REQUEST-----") &&
             strstr(pem, "-----END CERTIFICATE REQUEST-----");
    }
    free(pem);
    if (!ok)
        api_cause(causes, "FieldValueInvalid", "spec.request",
                  "Invalid value: []byte{...}: PEM block type must be CERTIFICATE REQUEST");
}

static void check_signer_name(const json_t *v, json_t *causes)
{
    const char *s = json_string_value(v), *f = "spec.signerName";
    char domain[300], err[600];
    if (!s || !*s) {
        api__required(causes, f, "");
        return;
    }
    const char *slash = strchr(s, '/');
    if (!slash || strchr(slash + 1, '/')) {
        api__invalid(causes, f, v,
                     "must be a fully qualified domain and path of the form "
                     "'example.com/signer-name'");
        return;
    }
    snprintf(domain, sizeof domain, "%.*s", (int)(slash - s), s);
    json_t *dv = json_string(domain), *pv = json_string(slash + 1);
    int labels = 1;
    for (const char *p = domain; *p; p++)
        labels += *p == '.';
    for (char *p = domain, *dot; p; p = dot ? dot + 1 : NULL) {
        dot = strchr(p, '.');
        if (dot) *dot = '\0';
        const char *bad = api_name_invalid(p, 1);
        if (dot) *dot = '.';
        if (!bad) continue;
        snprintf(err, sizeof err, "validating label \"%.*s\": %s",
                 (int)(dot ? (size_t)(dot - p) : strlen(p)), p, bad);
        api__invalid(causes, f, dv, err);
        break;
    }
    if (labels < 2)
        api__invalid(causes, f, dv, "should be a domain with at least two segments separated by dots");
    const char *bad = api_name_invalid(slash + 1, 0);
    if (bad) api__invalid(causes, f, pv, bad);
    json_decref(dv);
    json_decref(pv);
}

static void csr_validate(const json_t *csr, const json_t *old, json_t *causes)
{
    const json_t *spec = json_object_get(csr, "spec");
    if (old) {
        /* prepare_update keeps the spec; where the write path does not call
         * it, a changed spec is refused rather than stored. */
        if (!api_json_same(spec, json_object_get(old, "spec")))
            api__invalid(causes, "spec", spec, "field is immutable");
        return;
    }
    check_csr_request(json_object_get(spec, "request"), causes);
    const json_t *signer = json_object_get(spec, "signerName");
    check_signer_name(signer, causes);
    if (!strcmp(api_json_str(spec, "signerName"), "kubernetes.io/legacy-unknown"))
        api__invalid(causes, "spec.signerName", signer,
                     "the legacy signerName is not allowed via this API version");
    const json_t *usages = json_object_get(spec, "usages");
    if (!json_array_size(usages)) api__required(causes, "spec.usages", "usages must be provided");
    size_t i, j;
    json_t *u, *w;
    json_array_foreach(usages, i, u) {
        char f[64];
        snprintf(f, sizeof f, "spec.usages[%zu]", i);
        if (!api__in(json_string_value(u), csr_usages)) {
            api__not_supported(causes, f, u, csr_usages);
            continue;
        }
        json_array_foreach(usages, j, w) {
            if (j >= i) break;
            if (json_equal(u, w)) {
                api_cause(causes, "FieldValueDuplicate", f, "Duplicate value: \"%s\"",
                          json_string_value(u));
                break;
            }
        }
    }
    const json_t *exp = json_object_get(spec, "expirationSeconds");
    if (json_is_integer(exp) && json_integer_value(exp) < 600)
        api__invalid(causes, "spec.expirationSeconds", exp,
                     "may not specify a duration less than 600 seconds (10 minutes)");
}

/* ---- conditions (rules 2 to 4) ---- */

static const char *cond_type(const json_t *c)
{
    const char *t = json_string_value(json_object_get(c, "type"));
    return t ? t : "";
}

static int is_approval(const json_t *c)
{
    const char *t = cond_type(c);
    return !strcmp(t, "Approved") || !strcmp(t, "Denied");
}

static const json_t *conditions_of(const json_t *csr)
{
    return json_object_get(json_object_get(csr, "status"), "conditions");
}

static size_t count_type(const json_t *csr, const char *type)
{
    size_t i, n = 0;
    json_t *c;
    json_array_foreach(conditions_of(csr), i, c) n += !strcmp(cond_type(c), type);
    return n;
}

/* Kubernetes' populateConditionTimestamps (the end of rule 4). */
static void stamp_conditions(json_t *conds, const json_t *old, const char *now)
{
    size_t i, j;
    json_t *c, *o;
    json_array_foreach(conds, i, c) {
        if (!json_is_object(c)) continue;
        const char *u = json_string_value(json_object_get(c, "lastUpdateTime"));
        if (!u || !*u) json_object_set_new(c, "lastUpdateTime", json_string(now));
        const char *t = json_string_value(json_object_get(c, "lastTransitionTime"));
        if (t && *t) continue;
        const char *was = now;
        json_array_foreach(conditions_of(old), j, o) {
            const char *ot = json_string_value(json_object_get(o, "lastTransitionTime"));
            if (ot && *ot && !strcmp(cond_type(o), cond_type(c)) &&
                json_equal(json_object_get(o, "status"), json_object_get(c, "status"))) {
                was = ot;
                break;
            }
        }
        json_object_set_new(c, "lastTransitionTime", json_string(was));
    }
}

int api_csr_merge_conditions(json_t *dst, const json_t *req, const json_t *old, int approval)
{
    json_t *out = json_array();
    if (!out) return KP_ENOMEM;
    size_t i;
    json_t *c;
    int rc = 0;
    json_array_foreach(conditions_of(old), i, c)
        if (is_approval(c) != approval && json_array_append_new(out, json_deep_copy(c))) rc = KP_ENOMEM;
    json_array_foreach(conditions_of(req), i, c)
        if (is_approval(c) == approval && json_array_append_new(out, json_deep_copy(c))) rc = KP_ENOMEM;
    /* A copy: dst's status may be shared with old (the generic update
     * keeps the stored status by reference). */
    const json_t *was = json_object_get(dst, "status");
    json_t *status = json_is_object(was) ? json_copy((json_t *)was) : json_object();
    if (!status || json_object_set_new(dst, "status", status)) rc = KP_ENOMEM;
    if (rc) {
        json_decref(out);
        return rc;
    }
    char now[32];
    api_now_rfc3339(now);
    stamp_conditions(out, old, now);
    if (json_array_size(out)) return json_object_set_new(status, "conditions", out) ? KP_ENOMEM : 0;
    json_decref(out); /* omitempty */
    json_object_del(status, "conditions");
    return 0;
}

/* What `old` already breaks, an update may keep breaking (Kubernetes'
 * getValidationOptions). */
#define TOL_EMPTY 1u
#define TOL_BOTH  2u
#define TOL_DUP   4u

static unsigned tolerated(const json_t *old)
{
    unsigned t = 0;
    size_t i, j;
    json_t *c, *d;
    json_array_foreach(conditions_of(old), i, c) {
        if (!*cond_type(c)) t |= TOL_EMPTY;
        json_array_foreach(conditions_of(old), j, d) {
            if (j >= i) break;
            if (!strcmp(cond_type(c), cond_type(d))) t |= TOL_DUP;
        }
    }
    if (count_type(old, "Approved") && count_type(old, "Denied")) t |= TOL_BOTH;
    return t;
}

void api_csr_validate_conditions(const json_t *csr, const json_t *old, json_t *causes)
{
    static const char *const true_only[] = {"True", NULL};
    static const char *const any_status[] = {"False", "True", "Unknown", NULL};
    unsigned tol = old ? tolerated(old) : 0;
    int approved = 0, denied = 0;
    size_t i, j;
    json_t *c, *d;
    json_array_foreach(conditions_of(csr), i, c) {
        char ft[64], fs[64];
        snprintf(ft, sizeof ft, "status.conditions[%zu].type", i);
        snprintf(fs, sizeof fs, "status.conditions[%zu].status", i);
        const char *t = cond_type(c);
        if (!*t && !(tol & TOL_EMPTY)) api__required(causes, ft, "");
        const json_t *sv = json_object_get(c, "status");
        const char *st = json_string_value(sv);
        int must_be_true = !strcmp(t, "Approved") || !strcmp(t, "Denied") || !strcmp(t, "Failed");
        if (!st || !*st) api__required(causes, fs, "");
        else if (!api__in(st, must_be_true ? true_only : any_status))
            api__not_supported(causes, fs, sv, must_be_true ? true_only : any_status);
        if (!(tol & TOL_BOTH)) {
            int clash = (!strcmp(t, "Approved") && denied) || (!strcmp(t, "Denied") && approved);
            approved |= !strcmp(t, "Approved");
            denied |= !strcmp(t, "Denied");
            if (clash)
                api__invalid(causes, ft, json_object_get(c, "type"),
                             "Approved and Denied conditions are mutually exclusive");
        }
        if (tol & TOL_DUP) continue;
        json_array_foreach(conditions_of(csr), j, d) {
            if (j >= i) break;
            if (!strcmp(cond_type(d), t)) {
                api_cause(causes, "FieldValueDuplicate", ft, "Duplicate value: \"%s\"", t);
                break;
            }
        }
    }
    if (!old) return;
    static const char *const kept[] = {"Approved", "Denied", "Failed", NULL};
    for (const char *const *k = kept; *k; k++) {
        if (count_type(csr, *k) >= count_type(old, *k)) continue;
        char why[96];
        snprintf(why, sizeof why, "updates may not remove a condition of type \"%s\"", *k);
        api__forbidden(causes, "status.conditions", why);
    }
}

/* The status subresource (rule 2). */
static void csr_prepare_status_update(json_t *csr, const json_t *old)
{
    /* Out of memory leaves the request's conditions, approval ones
     * included: put the stored ones back rather than store those. */
    if (api_csr_merge_conditions(csr, csr, old, 0)) {
        json_t *st = json_object_get(csr, "status");
        json_t *was = json_deep_copy(conditions_of(old));
        if (json_is_object(st) && was) json_object_set_new(st, "conditions", was);
        else json_decref(was);
    }
}

/* What is wrong with status.certificate `b64` (base64 of PEM), Kubernetes'
 * validateCertificate: NULL when it is fine (or empty). */
static const char *certificate_problem(const char *b64, char *why, size_t n)
{
    size_t len = b64 ? strlen(b64) : 0, out = 0;
    if (!len) return NULL;
    char *pem = malloc(len + 1);
    if (!pem) return "out of memory";
    const char *bad = NULL;
    if (base64_decode(b64, len, pem, len, &out)) {
        bad = "must contain at least one CERTIFICATE PEM block";
    } else {
        pem[out] = '\0';
        size_t blocks = 0;
        for (const char *p = strstr(pem, "-----BEGIN "); p && !bad;
             p = strstr(p + 1, "-----BEGIN ")) {
            const char *type = p + 11, *end = strstr(type, "-----");
            if (!end) break;
            if ((size_t)(end - type) != 11 || strncmp(type, "CERTIFICATE", 11)) {
                snprintf(why, n, "only CERTIFICATE PEM blocks are allowed, found \"%.*s\"",
                         (int)(end - type > 100 ? 100 : end - type), type);
                bad = why;
            }
            blocks++;
        }
        if (!bad && !blocks) bad = "must contain at least one CERTIFICATE PEM block";
    }
    free(pem);
    return bad;
}

/* The status subresource's ValidateUpdate (rules 4 and 5). */
static void csr_validate_status(const json_t *csr, const json_t *old, json_t *causes)
{
    api_csr_validate_conditions(csr, old, causes);
    const char *now = json_string_value(json_object_get(json_object_get(csr, "status"),
                                                        "certificate"));
    const char *was = json_string_value(json_object_get(json_object_get(old, "status"),
                                                        "certificate"));
    if (!strcmp(now ? now : "", was ? was : "")) return;
    if (was && *was) {
        api__forbidden(causes, "status.certificate",
                       "updates may not modify existing certificate content");
        return;
    }
    char why[160];
    const char *bad = certificate_problem(now, why, sizeof why);
    if (bad) api__invalid_str(causes, "status.certificate", "<certificate data>", bad);
}

/* ---- certificatesigningrequests/NAME/approval (rule 3) ----
 * Served by the generic GET, PUT and PATCH as a status-like subresource
 * (strategy.h): metadata from the request, spec kept; here the stored
 * status with the request's Approved/Denied conditions. */

static void csr_prepare_approval(json_t *csr, const json_t *old)
{
    json_t *req = json_pack("{s:O*}", "status", json_object_get(csr, "status"));
    const json_t *was = json_object_get(old, "status");
    json_t *st = json_is_object(was) ? json_deep_copy(was) : json_object();
    /* Out of memory: never the request's status; a lost condition is then
     * refused by the validation (rule 4). */
    if (st) json_object_set_new(csr, "status", st);
    else json_object_del(csr, "status");
    if (req && st) api_csr_merge_conditions(csr, req, old, 1);
    json_decref(req);
}

static void csr_validate_approval(const json_t *csr, const json_t *old, json_t *causes)
{
    api_csr_validate_conditions(csr, old, causes);
}

static const char *const approval_verbs[] = {"get", "patch", "update", NULL};
static const api_sub_t csr_subs[] = {
    {"approval", NULL, NULL, NULL, approval_verbs, NULL, csr_prepare_approval,
     csr_validate_approval},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};

const api_strategy_t api_strategy_certificatesigningrequest = {
    .prepare_create = csr_prepare_create,
    .admission = csr_admission,
    .prepare_update = csr_prepare_update,
    .validate = csr_validate,
    .prepare_status_update = csr_prepare_status_update,
    .validate_status = csr_validate_status,
    .subs = csr_subs,
};
