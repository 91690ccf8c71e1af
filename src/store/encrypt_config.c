/*
 * encrypt_config.c -- EncryptionConfiguration files (encrypt.h): parsed
 * strictly (an unknown field is an error, as kube-apiserver's strict
 * decoder says), checked as ValidateEncryptionConfiguration checks them,
 * then turned into rules of store key prefixes and cipher contexts.
 *
 * Messages follow Kubernetes' field errors: "<path>: Required value: ...",
 * "<path>: Invalid value: <value>: ...". Only the first error is reported.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <nettle/aes.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/base64.h"
#include "lib/err.h"
#include "lib/yamljson.h"
#include "store/encrypt_int.h"

#define ENC_PREFIX_MAX 128 /* bytes of "/registry/<group>/<resource>/" */

static int fail(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t len, const char *fmt, ...)
{
    if (err && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, len, fmt, ap);
        va_end(ap);
    }
    return KP_EINVAL;
}

/* Every member of object `o` is one of `known` (NULL-terminated); else
 * Kubernetes' strict decoding error naming it under `path`. */
static int only_fields(const json_t *o, const char *path, const char *const *known, char *err,
                       size_t len)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v) {
        int ok = 0;
        for (const char *const *n = known; *n && !ok; n++)
            ok = !strcmp(k, *n);
        if (!ok)
            return fail(err, len, "strict decoding error: unknown field \"%s%s%s\"", path,
                        *path ? "." : "", k);
    }
    return 0;
}

/* ---- resources ---- */

/* Kubernetes' schema.ParseGroupResource: resource before the first dot,
 * group after it ("*." is every core resource). */
static void split_gr(const char *s, char *res, size_t rn, char *group, size_t gn)
{
    const char *dot = strchr(s, '.');
    snprintf(res, rn, "%.*s", dot ? (int)(dot - s) : (int)strlen(s), s);
    snprintf(group, gn, "%s", dot ? dot + 1 : "");
}

/* "resource.group" as Kubernetes prints a GroupResource ("*." for all of core). */
static void gr_string(const char *res, const char *group, char *buf, size_t n)
{
    if (!*group && !strcmp(res, "*"))
        snprintf(buf, n, "*.");
    else if (!*group)
        snprintf(buf, n, "%s", res);
    else
        snprintf(buf, n, "%s.%s", res, group);
}

/* The store key prefix of a resource (resource.c's api_key_prefix). */
static int gr_prefix(const char *res, const char *group, char *buf, size_t n)
{
    int w;
    if (!strcmp(group, "*"))
        w = snprintf(buf, n, "/registry/");
    else if (!strcmp(res, "*"))
        w = snprintf(buf, n, "/registry/%s/", *group ? group : "core");
    else
        w = snprintf(buf, n, "/registry/%s/%s/", *group ? group : "core", res);
    return w < 0 || (size_t)w >= n ? KP_EINVAL : 0;
}

/* A list as Kubernetes prints a []string value. */
static void list_text(const json_t *a, char *buf, size_t n)
{
    size_t o = 0, i;
    json_t *v;
    int w = snprintf(buf, n, "[]string{");
    o = w > 0 ? (size_t)w : 0;
    json_array_foreach(a, i, v) {
        w = snprintf(buf + (o < n ? o : n), o < n ? n - o : 0, "%s\"%s\"", i ? ", " : "",
                     json_string_value(v));
        if (w > 0) o += (size_t)w;
    }
    snprintf(buf + (o < n ? o : n), o < n ? n - o : 0, "}");
}

/* validateResourceOverlap and validateResourceNames of one entry. */
static int check_resources(const json_t *list, const char *path, char *err, size_t len)
{
    size_t n = json_array_size(list), i;
    json_t *v;
    char r1[256], g1[256], r2[256], g2[256], shown[512];
    json_array_foreach(list, i, v)
        if (!json_is_string(v))
            return fail(err, len, "%s[%zu]: Invalid value: must be a string", path, i);
    int dup = 0, overlap = 0;
    for (i = 0; i < n; i++) {
        split_gr(json_string_value(json_array_get(list, i)), r1, sizeof r1, g1, sizeof g1);
        for (size_t j = 0; j < n; j++) {
            if (i == j) continue;
            split_gr(json_string_value(json_array_get(list, j)), r2, sizeof r2, g2, sizeof g2);
            if (!strcmp(r1, r2) && !strcmp(g1, g2)) {
                dup = 1;
                continue;
            }
            if ((!strcmp(r1, "*") && !strcmp(g1, "*")) ||
                (!strcmp(g1, g2) && (!strcmp(r1, "*") || !strcmp(r2, "*"))))
                overlap = 1;
        }
    }
    if (dup || overlap) {
        list_text(list, shown, sizeof shown);
        return fail(err, len, "%s: Invalid value: %s: %s", path, shown,
                    dup ? "the same resource cannot be specified multiple times"
                        : "using overlapping resources such as 'secrets' and '*.' in the same "
                          "resource list is not allowed as they will be masked");
    }
    json_array_foreach(list, i, v) {
        const char *s = json_string_value(v);
        const char *why = NULL;
        for (const char *p = s; *p && !why; p++)
            if (*p >= 'A' && *p <= 'Z') why = "resource name should not contain capital letters";
        split_gr(s, r1, sizeof r1, g1, sizeof g1);
        if (why) {
        } else if (!strcmp(s, "*")) {
            why = "use '*.' to encrypt all the resources from core API group or *.* to encrypt "
                  "all resources";
        } else if (!strcmp(s, "apiserveripinfo") || !strcmp(s, "serviceipallocations") ||
                   !strcmp(s, "servicenodeportallocations")) {
            why = "resources which do not have REST API/s cannot be encrypted";
        } else if (!strcmp(g1, "events.k8s.io")) {
            why = "'*.events.k8s.io' objects are stored using the 'events' API group in etcd. "
                  "Use 'events' instead in the config file";
        } else if (!strcmp(g1, "extensions")) {
            why = "'extensions' group has been removed and cannot be used for encryption";
        } else if (!strcmp(g1, "*") && strcmp(r1, "*")) {
            why = "encrypting the same resource across groups is not supported";
        } else if (!*s || !*r1 || strchr(s, '/') || strlen(s) > 200) {
            why = "not a resource name"; /* kplane: no store key prefix to make of it */
        }
        if (why) return fail(err, len, "%s[%zu]: Invalid value: \"%s\": %s", path, i, s, why);
    }
    return 0;
}

/* ---- providers and keys ---- */

static const char *kind_name(enc_kind_t k)
{
    return k == ENC_AESCBC      ? "aescbc"
           : k == ENC_AESGCM    ? "aesgcm"
           : k == ENC_SECRETBOX ? "secretbox"
                                : "identity";
}

static void key_free(enc_key_t *k)
{
    free(k->name);
    free(k->prefix);
    if (k->enc_ctx) explicit_bzero(k->enc_ctx, k->aes->context_size);
    if (k->dec_ctx) explicit_bzero(k->dec_ctx, k->aes->context_size);
    if (k->gcm) explicit_bzero(k->gcm, sizeof *k->gcm);
    free(k->enc_ctx);
    free(k->dec_ctx);
    free(k->gcm);
    explicit_bzero(k->box, sizeof k->box);
}

/* Cipher contexts for a key's secret (already checked for size). */
static int key_init(enc_key_t *k, const uint8_t *secret, size_t n)
{
    if (k->kind == ENC_SECRETBOX) {
        memcpy(k->box, secret, sizeof k->box);
        return 0;
    }
    k->aes = n == 16 ? &nettle_aes128 : n == 24 ? &nettle_aes192 : &nettle_aes256;
    if (!(k->enc_ctx = calloc(1, k->aes->context_size))) return KP_ENOMEM;
    k->aes->set_encrypt_key(k->enc_ctx, secret);
    if (k->kind == ENC_AESCBC) {
        if (!(k->dec_ctx = calloc(1, k->aes->context_size))) return KP_ENOMEM;
        k->aes->set_decrypt_key(k->dec_ctx, secret);
    } else {
        if (!(k->gcm = calloc(1, sizeof *k->gcm))) return KP_ENOMEM;
        gcm_set_key(k->gcm, k->enc_ctx, k->aes->encrypt);
    }
    return 0;
}

/* validateKeys of one provider, and its keys appended to e->keys. */
static int add_keys(store_enc_t *e, enc_kind_t kind, const json_t *conf, const char *path,
                    char *err, size_t len)
{
    static const char *const fields[] = {"keys", NULL};
    static const char *const key_fields[] = {"name", "secret", NULL};
    char kp[192];
    snprintf(kp, sizeof kp, "%.150s.keys", path);
    if (!json_is_object(conf) && !json_is_null(conf))
        return fail(err, len, "%s: Invalid value: must be an object", path);
    int rc = json_is_object(conf) ? only_fields(conf, path, fields, err, len) : 0;
    if (rc) return rc;
    const json_t *keys = json_object_get(conf, "keys");
    if (keys && !json_is_array(keys) && !json_is_null(keys))
        return fail(err, len, "%s: Invalid value: must be a list", kp);
    if (!json_array_size(keys))
        return fail(err, len, "%s: Required value: at least one keys is required", kp);
    size_t i;
    json_t *k;
    json_array_foreach(keys, i, k) {
        char at[224];
        snprintf(at, sizeof at, "%s[%zu]", kp, i);
        if (!json_is_object(k)) return fail(err, len, "%s: Invalid value: must be an object", at);
        if ((rc = only_fields(k, at, key_fields, err, len))) return rc;
        const json_t *jn = json_object_get(k, "name"), *js = json_object_get(k, "secret");
        if ((jn && !json_is_string(jn) && !json_is_null(jn)) ||
            (js && !json_is_string(js) && !json_is_null(js)))
            return fail(err, len, "%s.%s: Invalid value: must be a string", at,
                        jn && !json_is_string(jn) && !json_is_null(jn) ? "name" : "secret");
        const char *name = json_string_value(jn), *secret = json_string_value(js);
        if (!name || !*name)
            return fail(err, len, "%s.name: Required value: name is a mandatory field for a key",
                        at);
        if (!secret || !*secret)
            return fail(err, len,
                        "%s.secret: Required value: secret is a mandatory field for a key", at);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(name, json_string_value(json_object_get(json_array_get(keys, j), "name"))))
                return fail(err, len,
                            "%s.name: Duplicate value: \"%s\": key names must be unique within a "
                            "provider",
                            at, name);
        if (strlen(name) > 200)
            return fail(err, len, "%s.name: Too long: may not be more than 200 bytes", at);
        uint8_t raw[64];
        size_t n = 0;
        int brc = base64_decode(secret, strlen(secret), raw, sizeof raw, &n);
        if (brc == KP_EINVAL)
            return fail(err, len,
                        "%s.secret: Invalid value: \"REDACTED\": secrets must be base64 encoded",
                        at);
        int ok = brc == 0 && (kind == ENC_SECRETBOX ? n == 32 : n == 16 || n == 24 || n == 32);
        if (!ok) {
            explicit_bzero(raw, sizeof raw);
            if (brc) n = strlen(secret) / 4 * 3; /* over 64 bytes: about its size */
            return fail(err, len,
                        "%s.secret: Invalid value: \"REDACTED\": secret is not of the expected "
                        "length, got %zu, expected one of %s",
                        at, n, kind == ENC_SECRETBOX ? "[32]" : "[16 24 32]");
        }
        enc_key_t *nk = &e->keys[e->nkeys];
        memset(nk, 0, sizeof *nk);
        nk->kind = kind;
        char pre[256];
        int w = snprintf(pre, sizeof pre, "k8s:enc:%s:v1:%s:", kind_name(kind), name);
        if (!(nk->name = strdup(name)) || !(nk->prefix = strdup(pre)) ||
            (rc = key_init(nk, raw, n))) {
            explicit_bzero(raw, sizeof raw);
            key_free(nk);
            return KP_ENOMEM;
        }
        explicit_bzero(raw, sizeof raw);
        nk->prefix_len = (size_t)w;
        e->nkeys++;
    }
    return 0;
}

/* validateSingleProvider, then the provider's keys. */
static int add_provider(store_enc_t *e, const json_t *p, const char *path, char *err, size_t len)
{
    static const char *const names[] = {"aesgcm", "aescbc", "secretbox", "identity", "kms", NULL};
    if (!json_is_object(p)) return fail(err, len, "%s: Invalid value: must be an object", path);
    int rc = only_fields(p, path, names, err, len);
    if (rc) return rc;
    if (json_object_size(p) == 0)
        return fail(err, len,
                    "%s: Invalid value: provider does not contain any of the expected providers: "
                    "KMS, AESGCM, AESCBC, Secretbox, Identity",
                    path);
    if (json_object_size(p) > 1)
        return fail(err, len,
                    "%s: Invalid value: more than one provider specified in a single element, "
                    "should split into different list elements",
                    path);
    const char *kind = json_object_iter_key(json_object_iter((json_t *)p));
    const json_t *conf = json_object_get(p, kind);
    char at[160];
    snprintf(at, sizeof at, "%s.%s", path, kind);
    if (!strcmp(kind, "kms"))
        return fail(err, len,
                    "%s: Unsupported value: kplane has no KMS plugins: use aesgcm, aescbc, "
                    "secretbox or identity",
                    at);
    if (!strcmp(kind, "identity")) {
        static const char *const none[] = {NULL};
        if (!json_is_object(conf) && !json_is_null(conf))
            return fail(err, len, "%s: Invalid value: must be an object", at);
        if (json_is_object(conf) && (rc = only_fields(conf, at, none, err, len))) return rc;
        enc_key_t *k = &e->keys[e->nkeys];
        memset(k, 0, sizeof *k);
        if (!(k->name = strdup("")) || !(k->prefix = strdup(""))) {
            key_free(k);
            return KP_ENOMEM;
        }
        k->kind = ENC_IDENTITY;
        e->nkeys++;
        return 0;
    }
    return add_keys(e,
                    !strcmp(kind, "aescbc")   ? ENC_AESCBC
                    : !strcmp(kind, "aesgcm") ? ENC_AESGCM
                                              : ENC_SECRETBOX,
                    conf, at, err, len);
}

/* Give the resources of one entry its keys e->keys[first, e->nkeys), as
 * getTransformerOverrides does: a resource already masked by an earlier
 * "*.group" or "*.*" is an error; one named before gets these keys after
 * its earlier ones. */
static int add_rules(store_enc_t *e, const json_t *list, size_t first, char *err, size_t len)
{
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v) {
        char res[256], group[256], pre[ENC_PREFIX_MAX], mask[ENC_PREFIX_MAX];
        split_gr(json_string_value(v), res, sizeof res, group, sizeof group);
        if (gr_prefix(res, group, pre, sizeof pre))
            return fail(err, len, "resource \"%s\": name too long", json_string_value(v));
        const char *masks[2][2] = {{"*", group}, {"*", "*"}};
        for (int m = 0; m < 2; m++) {
            gr_prefix(masks[m][0], masks[m][1], mask, sizeof mask);
            for (size_t j = 0; j < e->nrules; j++) {
                if (strcmp(e->rules[j].prefix, mask)) continue;
                char a[300], b[300];
                gr_string(res, group, a, sizeof a);
                gr_string(masks[m][0], masks[m][1], b, sizeof b);
                return fail(err, len, "resource \"%s\" is masked by earlier rule \"%s\"", a, b);
            }
        }
        enc_rule_t *r = NULL;
        for (size_t j = 0; j < e->nrules && !r; j++)
            if (!strcmp(e->rules[j].prefix, pre)) r = &e->rules[j];
        if (!r) {
            r = &e->rules[e->nrules];
            memset(r, 0, sizeof *r);
            if (!(r->resource = strdup(json_string_value(v))) || !(r->prefix = strdup(pre)))
                return KP_ENOMEM;
            r->prefix_len = strlen(pre);
            e->nrules++;
        }
        const enc_key_t **keys = realloc(r->keys, (r->nkeys + e->nkeys - first) * sizeof *keys);
        if (!keys) return KP_ENOMEM;
        r->keys = keys;
        for (size_t k = first; k < e->nkeys; k++)
            r->keys[r->nkeys++] = &e->keys[k];
    }
    return 0;
}

void store_enc_free(store_enc_t *e)
{
    if (!e) return;
    for (size_t i = 0; i < e->nkeys; i++)
        key_free(&e->keys[i]);
    for (size_t i = 0; i < e->nrules; i++) {
        free(e->rules[i].resource);
        free(e->rules[i].prefix);
        free(e->rules[i].keys);
    }
    free(e->keys);
    free(e->rules);
    free(e);
}

static int parse_doc(store_enc_t *e, const json_t *doc, char *err, size_t len)
{
    static const char *const top[] = {"apiVersion", "kind", "resources", NULL};
    static const char *const entry[] = {"resources", "providers", NULL};
    if (!json_is_object(doc))
        return fail(err, len, "not an EncryptionConfiguration: expected a YAML or JSON object");
    const char *av = json_string_value(json_object_get(doc, "apiVersion"));
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    if (!kind || !*kind) return fail(err, len, "kind: Required value: Object 'Kind' is missing");
    if (!av || strcmp(av, "apiserver.config.k8s.io/v1") || strcmp(kind, "EncryptionConfiguration"))
        return fail(err, len,
                    "apiVersion, kind: Unsupported value: \"%s, Kind=%s\": expected "
                    "apiserver.config.k8s.io/v1, Kind=EncryptionConfiguration",
                    av ? av : "", kind);
    int rc = only_fields(doc, "", top, err, len);
    if (rc) return rc;
    const json_t *res = json_object_get(doc, "resources");
    if (res && !json_is_array(res) && !json_is_null(res))
        return fail(err, len, "resources: Invalid value: must be a list");
    if (!json_array_size(res))
        return fail(err, len, "resources: Required value: at least one resources is required");
    /* Room for every key and rule the entries can name. */
    size_t nkeys = 0, nrules = 0, i;
    json_t *ent;
    json_array_foreach(res, i, ent) {
        nrules += json_array_size(json_object_get(ent, "resources"));
        size_t j;
        json_t *p;
        json_array_foreach(json_object_get(ent, "providers"), j, p) {
            const char *kinds[] = {"aesgcm", "aescbc", "secretbox"};
            nkeys++;
            for (int k = 0; k < 3; k++)
                nkeys += json_array_size(json_object_get(json_object_get(p, kinds[k]), "keys"));
        }
    }
    if (!(e->keys = calloc(nkeys ? nkeys : 1, sizeof *e->keys)) ||
        !(e->rules = calloc(nrules ? nrules : 1, sizeof *e->rules)))
        return KP_ENOMEM;
    json_array_foreach(res, i, ent) {
        char at[64], rp[96], pp[96];
        snprintf(at, sizeof at, "resources[%zu]", i);
        snprintf(rp, sizeof rp, "%s.resources", at);
        snprintf(pp, sizeof pp, "%s.providers", at);
        if (!json_is_object(ent)) return fail(err, len, "%s: Invalid value: must be an object", at);
        if ((rc = only_fields(ent, at, entry, err, len))) return rc;
        const json_t *list = json_object_get(ent, "resources");
        const json_t *provs = json_object_get(ent, "providers");
        if (list && !json_is_array(list) && !json_is_null(list))
            return fail(err, len, "%s: Invalid value: must be a list", rp);
        if (provs && !json_is_array(provs) && !json_is_null(provs))
            return fail(err, len, "%s: Invalid value: must be a list", pp);
        if (!json_array_size(list))
            return fail(err, len, "%s: Required value: at least one %s is required", rp, rp);
        if ((rc = check_resources(list, rp, err, len))) return rc;
        if (!json_array_size(provs))
            return fail(err, len, "%s: Required value: at least one %s is required", pp, pp);
        size_t first = e->nkeys, j;
        json_t *p;
        json_array_foreach(provs, j, p) {
            char at2[128];
            snprintf(at2, sizeof at2, "%s[%zu]", pp, j);
            if ((rc = add_provider(e, p, at2, err, len))) return rc;
        }
        if ((rc = add_rules(e, list, first, err, len))) return rc;
    }
    return 0;
}

int store_enc_parse(const char *text, size_t len, store_enc_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (err && errlen) err[0] = '\0';
    if (len > STORE_ENC_FILE_MAX) return fail(err, errlen, "larger than 1 MiB");
    static const yamljson_limits_t lim = {
        .max_depth = 16, .max_bytes = 2u << 20, .max_alias_bytes = 64u << 10};
    json_t *doc = NULL;
    int rc = yaml_to_json(text, len, &lim, &doc, err, errlen);
    if (rc) return rc == KP_ENOMEM ? rc : KP_EINVAL;
    if (sodium_init() < 0) {
        json_decref(doc);
        return fail(err, errlen, "libsodium could not be initialised");
    }
    store_enc_t *e = calloc(1, sizeof *e);
    if (!e)
        rc = KP_ENOMEM;
    else
        rc = parse_doc(e, doc, err, errlen);
    json_decref(doc);
    if (rc) {
        if (rc == KP_ENOMEM) fail(err, errlen, "out of memory");
        store_enc_free(e);
        return rc;
    }
    *out = e;
    return 0;
}

int store_enc_load(const char *path, store_enc_t **out, char *err, size_t errlen)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int rc = errno == ENOENT ? KP_ENOTFOUND : KP_EIO;
        snprintf(err, errlen, "error opening encryption provider configuration file \"%s\": %s",
                 path, strerror(errno));
        return rc;
    }
    char *buf = malloc(STORE_ENC_FILE_MAX + 1);
    size_t n = 0;
    ssize_t got = 1;
    while (buf && n <= STORE_ENC_FILE_MAX &&
           (got = read(fd, buf + n, STORE_ENC_FILE_MAX + 1 - n)) > 0)
        n += (size_t)got;
    close(fd);
    int rc = !buf ? KP_ENOMEM : got < 0 ? KP_EIO : n > STORE_ENC_FILE_MAX ? KP_ETOOLARGE : 0;
    if (!rc && n == 0) {
        snprintf(err, errlen, "encryption provider configuration file \"%s\" is empty", path);
        rc = KP_EINVAL;
    } else if (rc) {
        snprintf(err, errlen, "reading \"%s\": %s", path,
                 rc == KP_ETOOLARGE ? "larger than 1 MiB" : err_str(rc));
    } else {
        char why[512];
        rc = store_enc_parse(buf, n, out, why, sizeof why);
        if (rc) snprintf(err, errlen, "error while parsing file \"%s\": %s", path, why);
    }
    if (buf) explicit_bzero(buf, n);
    free(buf);
    return rc;
}

void store_enc_describe(const store_enc_t *e, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < e->nrules && o < len; i++) {
        const enc_rule_t *r = &e->rules[i];
        int w = snprintf(buf + o, len - o, "%s%s:", i ? "; " : "", r->resource);
        for (size_t k = 0; w > 0 && k < r->nkeys && o + (size_t)w < len; k++) {
            const enc_key_t *ky = r->keys[k];
            int x = snprintf(buf + o + w, len - o - (size_t)w, "%s %s%s%s", k ? "," : "",
                             kind_name(ky->kind), *ky->name ? " " : "", ky->name);
            if (x > 0) w += x;
        }
        if (w > 0) o += (size_t)w;
    }
}

int store_enc_default_config(char **out)
{
    *out = NULL;
    uint8_t key[32];
    if (store_enc__random(key, sizeof key)) return KP_EIO;
    char *b64 = base64_encode(key, sizeof key);
    explicit_bzero(key, sizeof key);
    if (!b64) return KP_ENOMEM;
    static const char fmt[] =
        "# Made by kplane server at its first start: Secrets are encrypted at rest with\n"
        "# the first provider's first key; every key listed reads. To rotate, add a new\n"
        "# key first, restart, run `kplane store rewrite-secrets`, then drop the old key\n"
        "# (README, \"Secrets at rest\"). Keep this file: without it the Secrets in the\n"
        "# store and in its backups cannot be read.\n"
        "apiVersion: apiserver.config.k8s.io/v1\n"
        "kind: EncryptionConfiguration\n"
        "resources:\n"
        "  - resources:\n"
        "      - secrets\n"
        "    providers:\n"
        "      - aescbc:\n"
        "          keys:\n"
        "            - name: key1\n"
        "              secret: %s\n"
        "      - identity: {}\n";
    size_t n = sizeof fmt + strlen(b64);
    char *text = malloc(n);
    if (text) snprintf(text, n, fmt, b64);
    explicit_bzero(b64, strlen(b64));
    free(b64);
    if (!text) return KP_ENOMEM;
    *out = text;
    return 0;
}
