/*
 * satoken.c -- ServiceAccount tokens (satoken.h): signing and verifying
 * JWTs with GnuTLS (ES256 on P-256 keys, RS256 on RSA keys), the checks of
 * a bound token against the watch caches, and the OIDC documents.
 */
#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "apiserver/auth/satoken.h"
#include "apiserver/rest/rest.h"
#include "apiserver/rest/watchcache.h"
#include "apiserver/schema/object.h"
#include "apiserver/schema/resource.h"
#include "lib/base64.h"
#include "lib/buf.h"
#include "lib/err.h"
#include "lib/jsonspan.h"
#include "lib/log.h"

#define SA_DEFAULT_ISSUER "https://kubernetes.default.svc.cluster.local"
#define SA_KEYS_MAX       16
#define SA_TOKEN_MAX      (16u << 10) /* a longer bearer token is no token of ours */
#define SA_CACHE_SLOTS    4096        /* verified signatures remembered */

typedef struct sa_key {
    gnutls_pubkey_t pub;
    char kid[64];
    int ec; /* ES256, else RS256 */
} sa_key_t;

typedef struct sa_slot {
    unsigned char hash[32];
    int64_t exp;
    json_t *claims; /* the payload, verified */
} sa_slot_t;

struct api_sa {
    apiserver_t *srv;
    char *issuer;
    gnutls_privkey_t signer; /* NULL: no TokenRequest */
    int signer_key;          /* its index in keys */
    sa_key_t keys[SA_KEYS_MAX];
    size_t nkeys;
    pthread_mutex_t mu; /* guards cache */
    sa_slot_t *cache;
};

static int64_t now_s(void)
{
    return (int64_t)time(NULL);
}

/* ---- keys ---- */

static int key_id(gnutls_pubkey_t pub, char *kid, size_t len)
{
    gnutls_datum_t der = {NULL, 0};
    unsigned char h[32];
    if (gnutls_pubkey_export2(pub, GNUTLS_X509_FMT_DER, &der) < 0) return KP_EINVAL;
    int rc = gnutls_hash_fast(GNUTLS_DIG_SHA256, der.data, der.size, h) < 0 ? KP_EIO : 0;
    gnutls_free(der.data);
    char *b = rc ? NULL : base64url_encode(h, sizeof h);
    if (!rc && !b) rc = KP_ENOMEM;
    if (!rc) snprintf(kid, len, "%s", b);
    free(b);
    return rc;
}

/* Add pub (taken) to the verifying keys. */
static int add_key(api_sa_t *sa, gnutls_pubkey_t pub)
{
    unsigned bits = 0;
    int alg = gnutls_pubkey_get_pk_algorithm(pub, &bits);
    if ((alg != GNUTLS_PK_ECDSA && alg != GNUTLS_PK_RSA) || sa->nkeys == SA_KEYS_MAX) {
        gnutls_pubkey_deinit(pub);
        return KP_EINVAL;
    }
    if (alg == GNUTLS_PK_ECDSA) {
        gnutls_ecc_curve_t curve;
        gnutls_datum_t x, y;
        if (gnutls_pubkey_export_ecc_raw(pub, &curve, &x, &y) < 0)
            curve = GNUTLS_ECC_CURVE_INVALID;
        else
            gnutls_free(x.data), gnutls_free(y.data);
        if (curve != GNUTLS_ECC_CURVE_SECP256R1) { /* ES256 only */
            gnutls_pubkey_deinit(pub);
            return KP_EINVAL;
        }
    }
    sa_key_t *k = &sa->keys[sa->nkeys];
    k->pub = pub;
    k->ec = alg == GNUTLS_PK_ECDSA;
    int rc = key_id(pub, k->kid, sizeof k->kid);
    if (rc) {
        gnutls_pubkey_deinit(pub);
        return rc;
    }
    /* The same key twice (the signing key also in --service-account-key-file). */
    for (size_t i = 0; i < sa->nkeys; i++)
        if (!strcmp(sa->keys[i].kid, k->kid)) {
            gnutls_pubkey_deinit(pub);
            return 0;
        }
    sa->nkeys++;
    return 0;
}

/* Every PEM block of `pem`: public keys, certificates and private keys
 * give their public keys. */
static int add_pem_keys(api_sa_t *sa, const char *pem, char *err, size_t errlen)
{
    size_t found = 0;
    for (const char *p = strstr(pem, "-----BEGIN "); p; p = strstr(p + 1, "-----BEGIN ")) {
        const char *end = strstr(p, "-----END ");
        const char *stop = end ? strchr(end + 9, '\n') : NULL;
        if (!end) break;
        size_t n = stop ? (size_t)(stop - p + 1) : strlen(p);
        gnutls_datum_t d = {(unsigned char *)p, (unsigned)n};
        gnutls_pubkey_t pub = NULL;
        if (gnutls_pubkey_init(&pub) < 0) return KP_ENOMEM;
        int ok = 0;
        if (!strncmp(p, "-----BEGIN PUBLIC KEY-----", 26)) {
            ok = gnutls_pubkey_import(pub, &d, GNUTLS_X509_FMT_PEM) >= 0;
        } else if (!strncmp(p, "-----BEGIN CERTIFICATE-----", 27)) {
            ok = gnutls_pubkey_import_x509_raw(pub, &d, GNUTLS_X509_FMT_PEM, 0) >= 0;
        } else if (strstr(p, "PRIVATE KEY-----") && strstr(p, "PRIVATE KEY-----") < end) {
            gnutls_privkey_t priv = NULL;
            ok = gnutls_privkey_init(&priv) >= 0 &&
                 gnutls_privkey_import_x509_raw(priv, &d, GNUTLS_X509_FMT_PEM, NULL, 0) >= 0 &&
                 gnutls_pubkey_import_privkey(pub, priv, 0, 0) >= 0;
            if (priv) gnutls_privkey_deinit(priv);
        } else {
            gnutls_pubkey_deinit(pub);
            continue; /* another kind of block */
        }
        if (!ok) {
            gnutls_pubkey_deinit(pub);
            snprintf(err, errlen, "a key does not load");
            return KP_EINVAL;
        }
        int rc = add_key(sa, pub);
        if (rc) {
            snprintf(err, errlen, "only ECDSA P-256 and RSA keys are supported");
            return rc;
        }
        found++;
    }
    if (!found) {
        snprintf(err, errlen, "no key in the PEM data");
        return KP_EINVAL;
    }
    return 0;
}

int api_sa_start(apiserver_t *s, api_sa_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (err && errlen) err[0] = '\0';
    api_sa_t *sa = calloc(1, sizeof *sa);
    if (!sa) return KP_ENOMEM;
    sa->srv = s;
    pthread_mutex_init(&sa->mu, NULL);
    sa->issuer =
        strdup(s->cfg.sa_issuer && *s->cfg.sa_issuer ? s->cfg.sa_issuer : SA_DEFAULT_ISSUER);
    sa->cache = calloc(SA_CACHE_SLOTS, sizeof *sa->cache);
    int rc = sa->issuer && sa->cache ? 0 : KP_ENOMEM;
    if (!rc && s->cfg.sa_signing_key_pem) {
        gnutls_datum_t d = {(unsigned char *)s->cfg.sa_signing_key_pem,
                            (unsigned)strlen(s->cfg.sa_signing_key_pem)};
        gnutls_pubkey_t pub = NULL;
        if (gnutls_privkey_init(&sa->signer) < 0 ||
            gnutls_privkey_import_x509_raw(sa->signer, &d, GNUTLS_X509_FMT_PEM, NULL, 0) < 0 ||
            gnutls_pubkey_init(&pub) < 0 ||
            gnutls_pubkey_import_privkey(pub, sa->signer, 0, 0) < 0) {
            if (pub) gnutls_pubkey_deinit(pub);
            snprintf(err, errlen, "--service-account-signing-key-file: the key does not load");
            rc = KP_EINVAL;
        } else {
            sa->signer_key = (int)sa->nkeys;
            if ((rc = add_key(sa, pub)))
                snprintf(err, errlen,
                         "--service-account-signing-key-file: only ECDSA P-256 and RSA keys "
                         "are supported");
            else if (sa->nkeys && sa->signer_key >= (int)sa->nkeys)
                sa->signer_key = (int)sa->nkeys - 1;
        }
    }
    if (!rc && s->cfg.sa_key_pem) {
        char why[200];
        if ((rc = add_pem_keys(sa, s->cfg.sa_key_pem, why, sizeof why)))
            snprintf(err, errlen, "--service-account-key-file: %s", why);
    }
    if (rc) {
        api_sa_stop(sa);
        return rc;
    }
    *out = sa;
    return 0;
}

void api_sa_stop(api_sa_t *sa)
{
    if (!sa) return;
    for (size_t i = 0; i < sa->nkeys; i++)
        gnutls_pubkey_deinit(sa->keys[i].pub);
    if (sa->signer) gnutls_privkey_deinit(sa->signer);
    for (size_t i = 0; sa->cache && i < SA_CACHE_SLOTS; i++)
        json_decref(sa->cache[i].claims);
    free(sa->cache);
    free(sa->issuer);
    pthread_mutex_destroy(&sa->mu);
    free(sa);
}

const char *api_sa_issuer(const api_sa_t *sa)
{
    return sa->issuer;
}

/* ---- JWS ---- */

static char *b64_json(const json_t *v)
{
    char *text = json_dumps(v, JSON_COMPACT);
    char *b = text ? base64url_encode(text, strlen(text)) : NULL;
    free(text);
    return b;
}

/* A big-endian integer into exactly n bytes (leading zeros dropped or added). */
static int fixed(const gnutls_datum_t *d, unsigned char *out, size_t n)
{
    size_t len = d->size, off = 0;
    while (len > n && d->data[off] == 0)
        off++, len--;
    if (len > n) return KP_EINVAL;
    memset(out, 0, n - len);
    memcpy(out + n - len, d->data + off, len);
    return 0;
}

int api_sa_sign(api_sa_t *sa, const char *ns, const char *name, const char *uid, int64_t seconds,
                const json_t *aud, const json_t *bound, char **jwt, int64_t *exp)
{
    *jwt = NULL;
    if (!sa->signer) return KP_EINVAL;
    const sa_key_t *k = &sa->keys[sa->signer_key];
    char jti[37], sub[600];
    if (api_new_uid(jti)) return KP_EIO;
    snprintf(sub, sizeof sub, "system:serviceaccount:%s:%s", ns, name);
    int64_t now = now_s();
    *exp = now + seconds;
    json_t *ki =
        json_pack("{s:s,s:{s:s,s:s}}", "namespace", ns, "serviceaccount", "name", name, "uid", uid);
    if (ki && bound) {
        const char *kind = json_string_value(json_object_get(bound, "kind"));
        json_t *ref = json_pack("{s:O,s:O}", "name", json_object_get(bound, "name"), "uid",
                                json_object_get(bound, "uid"));
        if (kind && ref) {
            char lower[32];
            snprintf(lower, sizeof lower, "%s", kind);
            for (char *c = lower; *c; c++)
                if (*c >= 'A' && *c <= 'Z') *c = (char)(*c - 'A' + 'a');
            json_object_set_new(ki, lower, ref);
            ref = NULL;
        }
        json_decref(ref);
        const json_t *node = json_object_get(bound, "node");
        if (node) json_object_set(ki, "node", (json_t *)node);
    }
    json_t *claims =
        ki ? json_pack("{s:O,s:I,s:I,s:s,s:s,s:o,s:I,s:s}", "aud",
                       aud ? aud : json_pack("[s]", sa->issuer), "exp", (json_int_t)*exp, "iat",
                       (json_int_t)now, "iss", sa->issuer, "jti", jti, "kubernetes.io", ki, "nbf",
                       (json_int_t)now, "sub", sub)
           : NULL;
    /* json_pack's O took a reference to the audiences it made: drop it. */
    json_t *hdr = json_pack("{s:s,s:s}", "alg", k->ec ? "ES256" : "RS256", "kid", k->kid);
    char *h = hdr ? b64_json(hdr) : NULL, *p = claims ? b64_json(claims) : NULL;
    json_decref(hdr);
    json_decref(claims);
    int rc = h && p ? 0 : KP_ENOMEM;
    buf_t b;
    buf_init(&b, SA_TOKEN_MAX);
    if (!rc) rc = buf_printf(&b, "%s.%s", h, p);
    free(h);
    free(p);
    gnutls_datum_t data = {(unsigned char *)b.p, (unsigned)b.len}, sig = {NULL, 0};
    if (!rc && gnutls_privkey_sign_data(sa->signer, GNUTLS_DIG_SHA256, 0, &data, &sig) < 0)
        rc = KP_EIO;
    char *s64 = NULL;
    if (!rc && k->ec) {
        gnutls_datum_t r = {NULL, 0}, s = {NULL, 0};
        unsigned char raw[64];
        if (gnutls_decode_rs_value(&sig, &r, &s) < 0 || fixed(&r, raw, 32) ||
            fixed(&s, raw + 32, 32))
            rc = KP_EIO;
        gnutls_free(r.data);
        gnutls_free(s.data);
        if (!rc && !(s64 = base64url_encode(raw, sizeof raw))) rc = KP_ENOMEM;
    } else if (!rc && !(s64 = base64url_encode(sig.data, sig.size))) {
        rc = KP_ENOMEM;
    }
    gnutls_free(sig.data);
    if (!rc) rc = buf_printf(&b, ".%s", s64);
    free(s64);
    size_t len;
    if (!rc && !(*jwt = buf_detach(&b, &len))) rc = KP_ENOMEM;
    if (rc) buf_free(&b);
    return rc;
}

int api_sa_is_jwt(const char *t)
{
    int dots = 0;
    for (const char *p = t; *p; p++) {
        if (*p == '.')
            dots++;
        else if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                   (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'))
            return 0;
    }
    return dots == 2;
}

/* Decode one base64url part as a JSON object (NULL when it is not one). */
static json_t *part_json(const char *p, size_t n)
{
    size_t cap = n / 4 * 3 + 3, len = 0;
    char *raw = malloc(cap + 1);
    json_t *v = NULL;
    if (raw && !base64url_decode(p, n, raw, cap, &len)) {
        v = json_loadb(raw, len, JSON_REJECT_DUPLICATES, NULL);
        if (v && !json_is_object(v)) {
            json_decref(v);
            v = NULL;
        }
    }
    free(raw);
    return v;
}

/* Verify t's signature: its payload, or NULL with err set. */
static json_t *verify(api_sa_t *sa, const char *t, char *err, size_t errlen)
{
    const char *d1 = strchr(t, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    if (!d2) return NULL;
    json_t *hdr = part_json(t, (size_t)(d1 - t));
    const char *alg = json_string_value(json_object_get(hdr, "alg"));
    const char *kid = json_string_value(json_object_get(hdr, "kid"));
    const sa_key_t *k = NULL;
    for (size_t i = 0; alg && i < sa->nkeys; i++)
        if ((!kid || !strcmp(kid, sa->keys[i].kid)) &&
            !strcmp(alg, sa->keys[i].ec ? "ES256" : "RS256")) {
            k = &sa->keys[i];
            break;
        }
    json_decref(hdr);
    if (!k) {
        snprintf(err, errlen, "invalid bearer token, no key verifies it");
        return NULL;
    }
    size_t slen = strlen(d2 + 1), cap = slen / 4 * 3 + 3, n = 0;
    unsigned char *raw = malloc(cap);
    json_t *payload = NULL;
    if (raw && !base64url_decode(d2 + 1, slen, raw, cap, &n)) {
        gnutls_datum_t data = {(unsigned char *)t, (unsigned)(d2 - t)}, sig = {raw, (unsigned)n};
        gnutls_datum_t der = {NULL, 0};
        int ok;
        if (k->ec) {
            gnutls_datum_t r = {raw, 32}, s = {raw + 32, 32};
            ok = n == 64 && gnutls_encode_rs_value(&der, &r, &s) >= 0 &&
                 gnutls_pubkey_verify_data2(k->pub, GNUTLS_SIGN_ECDSA_SHA256, 0, &data, &der) >= 0;
        } else {
            ok = gnutls_pubkey_verify_data2(k->pub, GNUTLS_SIGN_RSA_SHA256, 0, &data, &sig) >= 0;
        }
        gnutls_free(der.data);
        if (ok)
            payload = part_json(d1 + 1, (size_t)(d2 - d1 - 1));
        else
            snprintf(err, errlen,
                     "invalid bearer token, square/go-jose: error in cryptographic primitive");
    }
    free(raw);
    return payload;
}

/* ---- authentication ---- */

static void token_hash(const char *t, unsigned char h[32])
{
    gnutls_hash_fast(GNUTLS_DIG_SHA256, t, strlen(t), h);
}

/* The verified payload of t (a new reference), from the table or verified
 * now and remembered. */
static json_t *claims_of(api_sa_t *sa, const char *t, char *err, size_t errlen)
{
    unsigned char h[32];
    token_hash(t, h);
    sa_slot_t *slot = &sa->cache[((unsigned)h[0] << 8 | h[1]) % SA_CACHE_SLOTS];
    json_t *c = NULL;
    pthread_mutex_lock(&sa->mu);
    if (slot->claims && !memcmp(slot->hash, h, 32)) c = json_incref(slot->claims);
    pthread_mutex_unlock(&sa->mu);
    if (c) return c;
    if (!(c = verify(sa, t, err, errlen))) return NULL;
    json_int_t exp = json_integer_value(json_object_get(c, "exp"));
    pthread_mutex_lock(&sa->mu);
    json_t *old = slot->claims;
    memcpy(slot->hash, h, 32);
    slot->exp = exp;
    slot->claims = json_incref(c);
    pthread_mutex_unlock(&sa->mu);
    json_decref(old);
    return c;
}

/* The cached object of resource (group, resource) at ns/name: its
 * metadata.uid into uid, *deleting when it is marked for deletion. 0, or
 * KP_ENOTFOUND. */
static int cached_uid(api_sa_t *sa, const char *group, const char *resource, const char *ns,
                      const char *name, char *uid, size_t uidlen, int *deleting)
{
    api_view_t *v = api_view_get(sa->srv);
    size_t i = 0;
    const api_resource_t *res = api_view_find(v, group, "v1", resource, &i);
    char key[512];
    const wc_obj_t *o = NULL;
    int rc = res && !api_object_key(res, ns, name, key, sizeof key) ? wc_get(v->caches[i], key, &o)
                                                                    : KP_ENOTFOUND;
    api_view_put(v);
    if (rc) return KP_ENOTFOUND;
    const char *end = o->json + o->json_len, *mb, *me, *ub, *ue, *db, *de;
    uid[0] = '\0';
    if (!jspan_member(o->json, end, "metadata", NULL, &mb, &me)) {
        if (!jspan_member(mb, me, "uid", NULL, &ub, &ue) && ue - ub >= 2)
            snprintf(uid, uidlen, "%.*s", (int)(ue - ub - 2), ub + 1);
        if (deleting) *deleting = !jspan_member(mb, me, "deletionTimestamp", NULL, &db, &de);
    }
    wc_obj_unref(o);
    return 0;
}

static const char *cstr(const json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : "";
}

/* The bound object `kind` of the claims, checked: 0 or -1 with err. */
static int check_bound(api_sa_t *sa, const json_t *ki, const char *ns, const char *field,
                       const char *resource, int namespaced, char *err, size_t errlen)
{
    const json_t *ref = json_object_get(ki, field);
    if (!ref) return 0;
    char uid[80];
    int deleting = 0;
    if (cached_uid(sa, "", resource, namespaced ? ns : "", cstr(ref, "name"), uid, sizeof uid,
                   &deleting)) {
        snprintf(err, errlen, "%s.v1 \"%s\" not found", resource, cstr(ref, "name"));
        return -1;
    }
    if (strcmp(uid, cstr(ref, "uid"))) {
        snprintf(err, errlen, "%s.v1 %s/%s has uid %s, while token was issued for uid %s", resource,
                 ns, cstr(ref, "name"), uid, cstr(ref, "uid"));
        return -1;
    }
    if (deleting && !strcmp(field, "pod")) {
        snprintf(err, errlen, "pod %s/%s is being deleted", ns, cstr(ref, "name"));
        return -1;
    }
    return 0;
}

api_authn_result_t api_sa_authenticate(api_sa_t *sa, const char *token,
                                       const char *const *audiences, size_t naudiences,
                                       api_user_t *u, void **owned, char *err, size_t errlen)
{
    *owned = NULL;
    if (err && errlen) err[0] = '\0';
    if (strlen(token) > SA_TOKEN_MAX || !api_sa_is_jwt(token)) return API_AUTHN_NONE;
    json_t *c = claims_of(sa, token, err, errlen);
    if (!c) return *err ? API_AUTHN_FAILED : API_AUTHN_NONE;
    api_authn_result_t res = API_AUTHN_FAILED;
    const char *iss = cstr(c, "iss");
    int64_t now = now_s();
    json_int_t exp = json_integer_value(json_object_get(c, "exp"));
    json_int_t nbf = json_integer_value(json_object_get(c, "nbf"));
    const json_t *ki = json_object_get(c, "kubernetes.io");
    const json_t *saref = json_object_get(ki, "serviceaccount");
    const char *ns = cstr(ki, "namespace"), *name = cstr(saref, "name");
    if (strcmp(iss, sa->issuer)) {
        res = API_AUTHN_NONE; /* another issuer's: not ours to judge */
        goto out;
    }
    if (exp <= now) {
        snprintf(err, errlen, "service account token has expired");
        goto out;
    }
    if (nbf > now + 60) {
        snprintf(err, errlen, "service account token is not valid yet");
        goto out;
    }
    /* One of the token's audiences among the wanted ones. */
    const char *api_aud[] = {sa->issuer};
    if (!audiences) audiences = api_aud, naudiences = 1;
    int aud_ok = 0;
    const json_t *aud = json_object_get(c, "aud");
    size_t i;
    const json_t *a;
    if (json_is_string(aud)) aud_ok = 0;
    json_array_foreach(aud, i, a)
        for (size_t j = 0; j < naudiences; j++)
            aud_ok |= json_is_string(a) && !strcmp(json_string_value(a), audiences[j]);
    if (json_is_string(aud))
        for (size_t j = 0; j < naudiences; j++)
            aud_ok |= !strcmp(json_string_value(aud), audiences[j]);
    if (!aud_ok) {
        snprintf(err, errlen, "token audiences are not among the accepted audiences");
        goto out;
    }
    char sauid[80];
    if (!*ns || !*name ||
        cached_uid(sa, "", "serviceaccounts", ns, name, sauid, sizeof sauid, NULL)) {
        snprintf(err, errlen, "serviceaccounts \"%s\" not found", name);
        goto out;
    }
    if (strcmp(sauid, cstr(saref, "uid"))) {
        snprintf(err, errlen, "service account UID (%s) does not match claim (%s)", sauid,
                 cstr(saref, "uid"));
        goto out;
    }
    if (check_bound(sa, ki, ns, "pod", "pods", 1, err, errlen) ||
        check_bound(sa, ki, ns, "secret", "secrets", 1, err, errlen) ||
        check_bound(sa, ki, ns, "node", "nodes", 0, err, errlen))
        goto out;

    /* The user, in one block. */
    const json_t *pod = json_object_get(ki, "pod"), *node = json_object_get(ki, "node");
    size_t bytes = 3 * sizeof(char *) + 5 * sizeof(api_user_extra_t) + 5 * sizeof(char *) + 1024 +
                   strlen(ns) * 2 + strlen(name) + 256;
    char *block = calloc(1, bytes);
    if (!block) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    const char **groups = (const char **)block;
    api_user_extra_t *extra = (api_user_extra_t *)(groups + 3);
    const char **values = (const char **)(extra + 5);
    char *p = (char *)(values + 5), *end = block + bytes;
#define PUT(dst, ...)                                                                              \
    do {                                                                                           \
        int n_ = snprintf(p, (size_t)(end - p), __VA_ARGS__);                                      \
        dst = p;                                                                                   \
        p += n_ + 1;                                                                               \
    } while (0)
    const char *uname, *uuid;
    PUT(uname, "system:serviceaccount:%s:%s", ns, name);
    PUT(uuid, "%s", sauid);
    groups[0] = "system:serviceaccounts";
    PUT(groups[1], "system:serviceaccounts:%s", ns);
    groups[2] = API_GROUP_AUTHENTICATED;
    size_t ne = 0;
    /* user.Info's extra, as Kubernetes fills it for a bound token. */
    static const char *const keys[] = {
        "authentication.kubernetes.io/credential-id", "authentication.kubernetes.io/node-name",
        "authentication.kubernetes.io/node-uid", "authentication.kubernetes.io/pod-name",
        "authentication.kubernetes.io/pod-uid"};
    const char *vals[5] = {NULL, node ? cstr(node, "name") : NULL, node ? cstr(node, "uid") : NULL,
                           pod ? cstr(pod, "name") : NULL, pod ? cstr(pod, "uid") : NULL};
    char jti[128];
    snprintf(jti, sizeof jti, "JTI=%s", cstr(c, "jti"));
    vals[0] = *cstr(c, "jti") ? jti : NULL;
    for (size_t k = 0; k < 5; k++) {
        if (!vals[k] || p + strlen(vals[k]) + 1 >= end) continue;
        PUT(values[ne], "%s", vals[k]);
        extra[ne] = (api_user_extra_t){.key = keys[k], .values = &values[ne], .nvalues = 1};
        ne++;
    }
#undef PUT
    *u = (api_user_t){
        .name = uname, .uid = uuid, .groups = groups, .ngroups = 3, .extra = extra, .nextra = ne};
    *owned = block;
    res = API_AUTHN_OK;
out:
    json_decref(c);
    return res;
}

/* ---- OIDC discovery ---- */

json_t *api_sa_openid_configuration(const api_sa_t *sa)
{
    char jwks[1024];
    snprintf(jwks, sizeof jwks, "%s/openid/v1/jwks", sa->issuer);
    json_t *algs = json_array();
    int es = 0, rs = 0;
    for (size_t i = 0; i < sa->nkeys; i++)
        sa->keys[i].ec ? (es = 1) : (rs = 1);
    if (es) json_array_append_new(algs, json_string("ES256"));
    if (rs) json_array_append_new(algs, json_string("RS256"));
    return json_pack("{s:s,s:s,s:[s],s:[s],s:o}", "issuer", sa->issuer, "jwks_uri", jwks,
                     "response_types_supported", "id_token", "subject_types_supported", "public",
                     "id_token_signing_alg_values_supported", algs);
}

static json_t *b64_datum(const gnutls_datum_t *d, size_t fixed_len)
{
    unsigned char buf[1024];
    const unsigned char *data = d->data;
    size_t n = d->size;
    if (fixed_len && fixed_len <= sizeof buf) {
        gnutls_datum_t dd = *d;
        if (fixed(&dd, buf, fixed_len)) return NULL;
        data = buf;
        n = fixed_len;
    }
    char *b = base64url_encode(data, n);
    json_t *s = b ? json_string(b) : NULL;
    free(b);
    return s;
}

json_t *api_sa_jwks(const api_sa_t *sa)
{
    json_t *keys = json_array();
    for (size_t i = 0; keys && i < sa->nkeys; i++) {
        const sa_key_t *k = &sa->keys[i];
        json_t *jwk = NULL;
        if (k->ec) {
            gnutls_ecc_curve_t curve;
            gnutls_datum_t x = {NULL, 0}, y = {NULL, 0};
            if (gnutls_pubkey_export_ecc_raw(k->pub, &curve, &x, &y) >= 0)
                jwk = json_pack("{s:s,s:s,s:s,s:s,s:s,s:o,s:o}", "use", "sig", "kty", "EC", "kid",
                                k->kid, "crv", "P-256", "alg", "ES256", "x", b64_datum(&x, 32), "y",
                                b64_datum(&y, 32));
            gnutls_free(x.data);
            gnutls_free(y.data);
        } else {
            gnutls_datum_t m = {NULL, 0}, e = {NULL, 0};
            if (gnutls_pubkey_export_rsa_raw(k->pub, &m, &e) >= 0) {
                /* Without the sign byte GnuTLS may put in front. */
                gnutls_datum_t mm = m, ee = e;
                while (mm.size > 1 && !mm.data[0])
                    mm.data++, mm.size--;
                while (ee.size > 1 && !ee.data[0])
                    ee.data++, ee.size--;
                jwk = json_pack("{s:s,s:s,s:s,s:s,s:o,s:o}", "use", "sig", "kty", "RSA", "kid",
                                k->kid, "alg", "RS256", "n", b64_datum(&mm, 0), "e",
                                b64_datum(&ee, 0));
            }
            gnutls_free(m.data);
            gnutls_free(e.data);
        }
        if (jwk) json_array_append_new(keys, jwk);
    }
    return keys ? json_pack("{s:o}", "keys", keys) : NULL;
}

/* ---- the signing key made at first start ---- */

int apiserver_sa_key(const char *data_dir, char **pem)
{
    *pem = NULL;
    char path[4096], tmp[4100];
    snprintf(path, sizeof path, "%s/sa.key", data_dir);
    buf_t b;
    buf_init(&b, 65536);
    if (!buf_append_file(&b, path) && b.len) {
        size_t len;
        *pem = buf_detach(&b, &len);
        return *pem ? 0 : KP_EIO;
    }
    buf_free(&b);
    gnutls_x509_privkey_t key = NULL;
    gnutls_datum_t out = {NULL, 0};
    int rc = 0;
    if (gnutls_x509_privkey_init(&key) < 0 ||
        gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
                                     GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0) < 0 ||
        gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &out) < 0)
        rc = KP_EIO;
    if (key) gnutls_x509_privkey_deinit(key);
    /* A secret: created 0600, written whole, then put in place. */
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = NULL;
    if (!rc) {
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || !(f = fdopen(fd, "w"))) {
            if (fd >= 0) close(fd);
            rc = KP_EIO;
        }
    }
    if (!rc) {
        if (fwrite(out.data, 1, out.size, f) != out.size || fflush(f) || fsync(fileno(f)))
            rc = KP_EIO;
        if (fclose(f)) rc = KP_EIO;
        if (!rc && rename(tmp, path)) rc = KP_EIO;
    }
    if (!rc && !(*pem = strndup((const char *)out.data, out.size))) rc = KP_EIO;
    gnutls_free(out.data);
    return rc;
}

int api_sa_serve_oidc(api_req_t *r)
{
    api_sa_t *sa = r->srv->sa;
    if (!sa)
        return api_reply_status(r, 404, "NotFound", NULL,
                                "the server could not find the requested resource");
    int jwks = strstr(r->path, "/jwks") != NULL;
    json_t *doc = jwks ? api_sa_jwks(sa) : api_sa_openid_configuration(sa);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (!text) return api_reply_error(r, KP_ENOMEM, NULL, "out of memory");
    /* As Kubernetes serves them: public, cacheable for an hour. */
    static const char *const hdrs[] = {"Cache-Control", "public, max-age=3600", NULL};
    return api_reply_take_with(r, 200, jwks ? "application/jwk-set+json" : "application/json", text,
                               strlen(text), hdrs);
}
