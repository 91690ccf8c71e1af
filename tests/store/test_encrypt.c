/*
 * test_encrypt.c -- values encrypted at rest (store/encrypt.h).
 *
 * What it proves:
 *  - every provider and AES key size seals and opens again, with Kubernetes'
 *    prefix "k8s:enc:<provider>:v1:<key name>:" and without the value's bytes
 *    in the stored form; values of every length around the AES block;
 *  - the formats are Kubernetes': stored values made by another AES
 *    implementation (Python's cryptography; constants below) open, the
 *    aesgcm one only under the store key it was sealed for;
 *  - a second key reads what the first wrote (stale); a wrong key, a
 *    missing key, a truncated or forged value fail with KP_ECORRUPT; an
 *    unprefixed value reads when identity is listed and fails when not;
 *    identity first writes plain values and still reads encrypted ones;
 *  - bad configs are refused naming the field, as kube-apiserver does;
 *  - the store wrapper: covered keys are ciphertext in the inner store and
 *    plain through get, range and watch (previous values too); other keys
 *    are untouched; an undecryptable value fails get, range and watch
 *    (sticky) with KP_ECORRUPT; store_enc_rewrite() moves every value to
 *    the new writing key with a CAS each.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "store/encrypt.h"
#include "store/store.h"
#include "testutil.h"

#define K16  "AAECAwQFBgcICQoLDA0ODw=="                     /* bytes 0..15 */
#define K24  "AAECAwQFBgcICQoLDA0ODxAREhMUFRYX"             /* bytes 0..23 */
#define K32  "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=" /* bytes 0..31 */
#define K32B "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=" /* bytes 32..63 */

#define SECRET_KEY "/registry/core/secrets/default/s1"
#define PLAIN      "{\"kind\":\"Secret\",\"data\":{\"k\":\"czNjcjN0\"}}"

/* A config of one entry for `resources` with the providers' YAML lines. */
static store_enc_t *config(const char *resources, const char *providers)
{
    char text[4096], err[512];
    snprintf(text, sizeof text,
             "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n"
             "resources:\n- resources: [%s]\n  providers:\n%s",
             resources, providers);
    store_enc_t *e = NULL;
    int rc = store_enc_parse(text, strlen(text), &e, err, sizeof err);
    if (rc) fail_msg("config refused: %s\n%s", err, text);
    return e;
}

static char *provider(const char *kind, const char *name, const char *secret)
{
    static char buf[4][512];
    static int i;
    char *b = buf[i++ % 4];
    snprintf(b, sizeof buf[0], "  - %s:\n      keys:\n      - name: %s\n        secret: %s\n", kind,
             name, secret);
    return b;
}

static void roundtrip(store_enc_t *e, const char *pfx)
{
    char *sealed, *out;
    size_t slen, olen;
    int stale = -1;
    for (size_t n = 0; n <= 70; n++) {
        char value[128];
        for (size_t i = 0; i < n; i++)
            value[i] = (char)('a' + i % 26);
        assert_int_equal(store_enc_seal(e, SECRET_KEY, value, n, &sealed, &slen), 0);
        assert_non_null(sealed);
        assert_true(slen > strlen(pfx));
        assert_memory_equal(sealed, pfx, strlen(pfx));
        if (n >= 8) assert_null(memmem(sealed, slen, value, n));
        assert_int_equal(store_enc_open(e, SECRET_KEY, sealed, slen, &out, &olen, &stale, NULL, 0),
                         0);
        assert_non_null(out);
        assert_int_equal(olen, n);
        assert_memory_equal(out, value, n);
        assert_int_equal(out[n], 0);
        assert_int_equal(stale, 0);
        free(out);
        free(sealed);
    }
}

static void test_roundtrip(void **state)
{
    (void)state;
    const char *secrets[] = {K16, K24, K32};
    for (int i = 0; i < 3; i++) {
        store_enc_t *e = config("secrets", provider("aescbc", "key1", secrets[i]));
        roundtrip(e, "k8s:enc:aescbc:v1:key1:");
        store_enc_free(e);
        e = config("secrets", provider("aesgcm", "k-gcm", secrets[i]));
        roundtrip(e, "k8s:enc:aesgcm:v1:k-gcm:");
        store_enc_free(e);
    }
    store_enc_t *e = config("secrets", provider("secretbox", "box", K32));
    roundtrip(e, "k8s:enc:secretbox:v1:box:");
    /* Not covered: stored as it is. */
    char *out;
    size_t olen;
    assert_int_equal(store_enc_seal(e, "/registry/core/configmaps/default/c", "x", 1, &out, &olen),
                     0);
    assert_null(out);
    assert_false(store_enc_covers(e, "/registry/core/configmaps/default/c"));
    assert_true(store_enc_covers(e, SECRET_KEY));
    store_enc_free(e);
}

static void hex(const char *h, char *out, size_t *n)
{
    *n = 0;
    for (; h[0] && h[1]; h += 2) {
        unsigned v;
        sscanf(h, "%2x", &v);
        out[(*n)++] = (char)v;
    }
}

/* Made with Python's cryptography (PKCS7 padder, CBC; AESGCM with the store
 * key as associated data): key bytes 0..31 (CBC) and 0..15 (GCM), IV bytes
 * 0xa0.., nonce bytes 0xb0.., the value PLAIN. */
static void test_known_answers(void **state)
{
    (void)state;
    char stored[256], *out;
    size_t n, olen;
    const char *cbc =
        "a0a1a2a3a4a5a6a7a8a9aaabacadaeafda54e881eafae68f34aa2ddb00e56b520efa5cf89fcf1"
        "1711c5247426b3d75550757ed4727487846d9da3533e6e51296";
    const char *gcm =
        "b0b1b2b3b4b5b6b7b8b9babb25ebdbf4a9f309059c793e65a71f6bc4f5713316bd8335dcdad46"
        "c9b803141bdd5952e41ec52a19f0fe46d89e95696fb74ac22b043946cf94f";
    store_enc_t *e = config("secrets", provider("aescbc", "key1", K32));
    memcpy(stored, "k8s:enc:aescbc:v1:key1:", 23);
    hex(cbc, stored + 23, &n);
    assert_int_equal(store_enc_open(e, SECRET_KEY, stored, 23 + n, &out, &olen, NULL, NULL, 0), 0);
    assert_int_equal(olen, strlen(PLAIN));
    assert_memory_equal(out, PLAIN, olen);
    free(out);
    store_enc_free(e);
    /* The same bytes under another key: refused (deterministic: fixed IV). */
    e = config("secrets", provider("aescbc", "key1", K32B));
    char why[256];
    assert_int_equal(
        store_enc_open(e, SECRET_KEY, stored, 23 + n, &out, &olen, NULL, why, sizeof why),
        KP_ECORRUPT);
    assert_null(out);
    assert_non_null(strstr(why, "k8s:enc:aescbc:v1:key1: invalid"));
    store_enc_free(e);

    e = config("secrets", provider("aesgcm", "key1", K16));
    memcpy(stored, "k8s:enc:aesgcm:v1:key1:", 23);
    hex(gcm, stored + 23, &n);
    assert_int_equal(store_enc_open(e, SECRET_KEY, stored, 23 + n, &out, &olen, NULL, NULL, 0), 0);
    assert_int_equal(olen, strlen(PLAIN));
    assert_memory_equal(out, PLAIN, olen);
    free(out);
    /* Bound to its store key: the same bytes under another key do not open. */
    assert_int_equal(store_enc_open(e, "/registry/core/secrets/default/s2", stored, 23 + n, &out,
                                    &olen, NULL, why, sizeof why),
                     KP_ECORRUPT);
    assert_non_null(strstr(why, "message authentication failed"));
    /* Every truncation and every flipped byte fails, never reads beyond. */
    for (size_t cut = 0; cut < 23 + n; cut++) {
        char *copy = malloc(cut ? cut : 1);
        memcpy(copy, stored, cut);
        assert_int_equal(store_enc_open(e, SECRET_KEY, copy, cut, &out, &olen, NULL, NULL, 0),
                         KP_ECORRUPT);
        free(copy);
    }
    for (size_t i = 23; i < 23 + n; i++) {
        stored[i] ^= 0x01;
        assert_int_equal(store_enc_open(e, SECRET_KEY, stored, 23 + n, &out, &olen, NULL, NULL, 0),
                         KP_ECORRUPT);
        stored[i] ^= 0x01;
    }
    store_enc_free(e);
}

static void test_keys_and_identity(void **state)
{
    (void)state;
    char *sealed, *out, *s2, why[512];
    size_t slen, olen, s2len;
    int stale;
    const char *kinds[] = {"aescbc", "aesgcm", "secretbox"};
    for (int i = 0; i < 3; i++) {
        store_enc_t *old = config("secrets", provider(kinds[i], "key1", K32));
        char provs[1024];
        snprintf(provs, sizeof provs, "%s%s", provider(kinds[i], "key2", K32B),
                 provider(kinds[i], "key1", K32));
        store_enc_t *rot = config("secrets", provs);
        assert_int_equal(store_enc_seal(old, SECRET_KEY, PLAIN, strlen(PLAIN), &sealed, &slen), 0);
        /* The second key reads it; the value is stale. */
        assert_int_equal(
            store_enc_open(rot, SECRET_KEY, sealed, slen, &out, &olen, &stale, NULL, 0), 0);
        assert_int_equal(stale, 1);
        assert_memory_equal(out, PLAIN, olen);
        free(out);
        /* What the new config writes, the old one cannot read. */
        assert_int_equal(store_enc_seal(rot, SECRET_KEY, PLAIN, strlen(PLAIN), &s2, &s2len), 0);
        assert_non_null(strstr(s2, ":v1:key2:"));
        assert_int_equal(
            store_enc_open(old, SECRET_KEY, s2, s2len, &out, &olen, NULL, why, sizeof why),
            KP_ECORRUPT);
        assert_non_null(strstr(why, "no matching prefix found"));
        /* A key of the same name and another secret: refused. */
        store_enc_t *wrong = config("secrets", provider(kinds[i], "key2", K32));
        if (i > 0) /* (aescbc: a wrong key passes the padding check 1 in 256) */
            assert_int_equal(
                store_enc_open(wrong, SECRET_KEY, s2, s2len, &out, &olen, NULL, why, sizeof why),
                KP_ECORRUPT);
        store_enc_free(wrong);
        /* Unprefixed: an error unless identity is listed. */
        assert_int_equal(store_enc_open(old, SECRET_KEY, PLAIN, strlen(PLAIN), &out, &olen, NULL,
                                        why, sizeof why),
                         KP_ECORRUPT);
        assert_non_null(strstr(why, "identity is not a provider"));
        snprintf(provs, sizeof provs, "%s  - identity: {}\n", provider(kinds[i], "key1", K32));
        store_enc_t *withid = config("secrets", provs);
        assert_int_equal(
            store_enc_open(withid, SECRET_KEY, PLAIN, strlen(PLAIN), &out, &olen, &stale, NULL, 0),
            0);
        assert_null(out); /* the stored bytes are the value */
        assert_int_equal(stale, 1);
        /* Identity first: writes plain, reads the encrypted (stale). */
        snprintf(provs, sizeof provs, "  - identity: {}\n%s", provider(kinds[i], "key1", K32));
        store_enc_t *idfirst = config("secrets", provs);
        assert_int_equal(store_enc_seal(idfirst, SECRET_KEY, PLAIN, strlen(PLAIN), &out, &olen), 0);
        assert_null(out);
        assert_int_equal(
            store_enc_open(idfirst, SECRET_KEY, sealed, slen, &out, &olen, &stale, NULL, 0), 0);
        assert_int_equal(stale, 1);
        assert_memory_equal(out, PLAIN, olen);
        free(out);
        assert_int_equal(
            store_enc_open(idfirst, SECRET_KEY, PLAIN, strlen(PLAIN), &out, &olen, &stale, NULL, 0),
            0);
        assert_int_equal(stale, 0);
        store_enc_free(idfirst);
        store_enc_free(withid);
        free(s2);
        free(sealed);
        store_enc_free(old);
        store_enc_free(rot);
    }
}

static void test_resources(void **state)
{
    (void)state;
    const char *text =
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n"
        "- resources: [secrets, deployments.apps]\n  providers:\n  - aesgcm:\n      keys:\n"
        "      - {name: a, secret: " K32 "}\n"
        "- resources: ['*.', '*.batch']\n  providers:\n  - secretbox:\n      keys:\n"
        "      - {name: b, secret: " K32 "}\n"
        "- resources: [deployments.apps]\n  providers:\n  - identity: {}\n";
    store_enc_t *e;
    char err[512], *out;
    size_t olen;
    assert_int_equal(store_enc_parse(text, strlen(text), &e, err, sizeof err), 0);
    struct {
        const char *key, *prefix;
    } cases[] = {
        {SECRET_KEY, "k8s:enc:aesgcm:v1:a:"},
        {"/registry/apps/deployments/ns/d", "k8s:enc:aesgcm:v1:a:"},
        {"/registry/core/configmaps/ns/c", "k8s:enc:secretbox:v1:b:"},
        {"/registry/batch/jobs/ns/j", "k8s:enc:secretbox:v1:b:"},
        {"/registry/apps/replicasets/ns/r", NULL},
        {"/registry/coordination.k8s.io/leases/ns/l", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(store_enc_seal(e, cases[i].key, "v", 1, &out, &olen), 0);
        if (!cases[i].prefix) {
            assert_null(out);
            continue;
        }
        assert_non_null(out);
        if (strncmp(out, cases[i].prefix, strlen(cases[i].prefix)))
            fail_msg("%s: stored as %.30s, want %s", cases[i].key, out, cases[i].prefix);
        free(out);
    }
    /* deployments in the third entry too: identity reads plain ones. */
    assert_int_equal(
        store_enc_open(e, "/registry/apps/deployments/ns/d", "{}", 2, &out, &olen, NULL, NULL, 0),
        0);
    assert_null(out);
    assert_int_equal(store_enc_open(e, SECRET_KEY, "{}", 2, &out, &olen, NULL, NULL, 0),
                     KP_ECORRUPT);
    char desc[256];
    store_enc_describe(e, desc, sizeof desc);
    assert_string_equal(desc, "secrets: aesgcm a; deployments.apps: aesgcm a, identity; *.: "
                              "secretbox b; *.batch: secretbox b");
    store_enc_free(e);
    text = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n"
           "- resources: ['*.*']\n  providers:\n  - aescbc:\n      keys:\n"
           "      - {name: a, secret: " K32 "}\n";
    assert_int_equal(store_enc_parse(text, strlen(text), &e, err, sizeof err), 0);
    assert_true(store_enc_covers(e, "/registry/example.com/foos/ns/f"));
    assert_false(store_enc_covers(e, "/other"));
    store_enc_free(e);
}

static void test_config_errors(void **state)
{
    (void)state;
    static const char head[] =
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n";
    static const char aes[] =
        "  providers:\n  - aescbc:\n      keys:\n      - {name: k, secret: " K32 "}\n";
    struct {
        const char *body, *want;
    } cases[] = {
        {"resources: []\n# providers\n",
         "resources: Required value: at least one resources is required"},
        {"resources:\n- resources: []\n  providers: [identity: {}]\n",
         "resources[0].resources: Required value: at least one resources[0].resources is required"},
        {"resources:\n- resources: [secrets]\n  providers: []\n",
         "resources[0].providers: Required value: at least one resources[0].providers is required"},
        {"resources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys:\n"
         "      - {name: k, secret: AAAAAAAAAAA=}\n",
         "resources[0].providers[0].aescbc.keys[0].secret: Invalid value: \"REDACTED\": secret is "
         "not of the expected length, got 8, expected one of [16 24 32]"},
        {"resources:\n- resources: [secrets]\n  providers:\n  - secretbox:\n      keys:\n"
         "      - {name: k, secret: " K16 "}\n",
         "resources[0].providers[0].secretbox.keys[0].secret: Invalid value: \"REDACTED\": secret "
         "is not of the expected length, got 16, expected one of [32]"},
        {"resources:\n- resources: [secrets]\n  providers:\n  - aesgcm:\n      keys:\n"
         "      - {name: k, secret: 'not base64!'}\n",
         "resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: \"REDACTED\": secrets "
         "must be base64 encoded"},
        {"resources:\n- resources: [secrets]\n  providers:\n  - aesgcm:\n      keys:\n"
         "      - {secret: " K16 "}\n",
         "resources[0].providers[0].aesgcm.keys[0].name: Required value: name is a mandatory "
         "field for a key"},
        {"resources:\n- resources: [secrets]\n  providers:\n  - aesgcm:\n      keys:\n"
         "      - {name: k}\n",
         "resources[0].providers[0].aesgcm.keys[0].secret: Required value: secret is a mandatory "
         "field for a key"},
        {"resources:\n- resources: [secrets]\n  providers:\n  - aesgcm:\n      keys: []\n",
         "resources[0].providers[0].aesgcm.keys: Required value: at least one keys is required"},
        {"resources:\n- resources: [secrets]\n  providers:\n  - aesgcm:\n      keys:\n"
         "      - {name: k, secret: " K16 "}\n      - {name: k, secret: " K32 "}\n",
         "resources[0].providers[0].aesgcm.keys[1].name: Duplicate value: \"k\""},
        {"resources:\n- resources: [secrets]\n  providers:\n  - {identity: {}, aescbc: {}}\n",
         "resources[0].providers[0]: Invalid value: more than one provider specified in a single "
         "element"},
        {"resources:\n- resources: [secrets]\n  providers:\n  - {}\n",
         "resources[0].providers[0]: Invalid value: provider does not contain any of the expected "
         "providers"},
        {"resources:\n- resources: [secrets]\n  providers:\n  - kms: {name: x}\n",
         "resources[0].providers[0].kms: Unsupported value"},
        {"resources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      key: []\n",
         "strict decoding error: unknown field \"resources[0].providers[0].aescbc.key\""},
        {"resources:\n- resources: [secrets]\n  provider: []\n",
         "strict decoding error: unknown field \"resources[0].provider\""},
        {"resources:\n- resources: [Secrets]\n", "resources[0].resources[0]: Invalid value: "
                                                 "\"Secrets\": resource name should not contain "
                                                 "capital letters"},
        {"resources:\n- resources: ['*']\n", "resources[0].resources[0]: Invalid value: \"*\": use "
                                             "'*.' to encrypt all the resources"},
        {"resources:\n- resources: [secrets, secrets]\n",
         "resources[0].resources: Invalid value: []string{\"secrets\", \"secrets\"}: the same "
         "resource cannot be specified multiple times"},
        {"resources:\n- resources: [secrets, '*.']\n",
         "resources[0].resources: Invalid value: []string{\"secrets\", \"*.\"}: using overlapping "
         "resources"},
        {"resources:\n- resources: [events.events.k8s.io]\n",
         "Use 'events' instead in the config file"},
        {"resources:\n- resources: [deployments.extensions]\n", "'extensions' group has been "
                                                                "removed"},
        {"resources:\n- resources: ['secrets.*']\n", "encrypting the same resource across groups "
                                                     "is not supported"},
        {"resources:\n- resources: [serviceipallocations]\n",
         "resources which do not have REST API/s cannot be encrypted"},
        {"resources:\n- resources: ['*.*']\n%s- resources: [secrets]\n%s",
         "resource \"secrets\" is masked by earlier rule \"*.*\""},
        {"resources:\n- resources: ['*.apps']\n%s- resources: [deployments.apps]\n%s",
         "resource \"deployments.apps\" is masked by earlier rule \"*.apps\""},
        {"resources: {}\n# providers\n", "resources: Invalid value: must be a list"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char body[2048], text[4096], err[512] = "";
        if (strstr(cases[i].body, "%s"))
            snprintf(body, sizeof body, cases[i].body, aes, aes);
        else if (!strstr(cases[i].body, "providers"))
            snprintf(body, sizeof body, "%s%s", cases[i].body, aes);
        else
            snprintf(body, sizeof body, "%s", cases[i].body);
        snprintf(text, sizeof text, "%s%s", head, body);
        store_enc_t *e = NULL;
        int rc = store_enc_parse(text, strlen(text), &e, err, sizeof err);
        if (rc != KP_EINVAL || e || !strstr(err, cases[i].want))
            fail_msg("case %zu: rc %d, error '%s', want '%s'\n%s", i, rc, err, cases[i].want, text);
    }
    /* The head itself. */
    struct {
        const char *text, *want;
    } heads[] = {
        {"apiVersion: v1\nkind: EncryptionConfiguration\nresources: []\n", "apiVersion, kind"},
        {"apiVersion: apiserver.config.k8s.io/v1\nresources: []\n", "Object 'Kind' is missing"},
        {"[1, 2]\n", "expected a YAML or JSON object"},
        {"a: [\n", "yaml: line"},
    };
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
        char err[512] = "";
        store_enc_t *e = NULL;
        int rc = store_enc_parse(heads[i].text, strlen(heads[i].text), &e, err, sizeof err);
        if (rc != KP_EINVAL || !strstr(err, heads[i].want))
            fail_msg("head %zu: rc %d, error '%s', want '%s'", i, rc, err, heads[i].want);
    }
    /* A file: missing, empty, and the default config, which loads. */
    char *dir = tu_tmpdir("enc"), path[512], err[512];
    store_enc_t *e;
    snprintf(path, sizeof path, "%s/none.yaml", dir);
    assert_int_equal(store_enc_load(path, &e, err, sizeof err), KP_ENOTFOUND);
    assert_non_null(strstr(err, "none.yaml"));
    FILE *f = fopen(path, "w");
    fclose(f);
    assert_int_equal(store_enc_load(path, &e, err, sizeof err), KP_EINVAL);
    assert_non_null(strstr(err, "is empty"));
    char *def;
    assert_int_equal(store_enc_default_config(&def), 0);
    f = fopen(path, "w");
    fputs(def, f);
    fclose(f);
    assert_int_equal(store_enc_load(path, &e, err, sizeof err), 0);
    char desc[128];
    store_enc_describe(e, desc, sizeof desc);
    assert_string_equal(desc, "secrets: aescbc key1, identity");
    store_enc_free(e);
    free(def);
    tu_rmtree(dir);
    free(dir);
}

/* ---- the store wrapper ---- */

static store_t *open_plain(const char *dir)
{
    char *url = tu_lmdb_url(dir);
    store_t *s = NULL;
    assert_int_equal(store_open(url, NULL, &s), 0);
    free(url);
    return s;
}

static store_t *open_enc(const char *dir, store_enc_t *e)
{
    store_t *s = NULL;
    assert_int_equal(store_enc_wrap(open_plain(dir), e, &s), 0);
    assert_ptr_equal(store_enc_of(s), e);
    return s;
}

static void raw_expect(const char *dir, const char *key, const char *prefix)
{
    store_t *s = open_plain(dir);
    store_kv_t *kv;
    assert_int_equal(store_get(s, key, 0, &kv), 0);
    if (strncmp(kv->value, prefix, strlen(prefix)))
        fail_msg("%s stored as '%.40s', want prefix '%s'", key, kv->value, prefix);
    assert_null(strstr(kv->value, "s3cr3t"));
    free(kv);
    store_close(s);
}

static void test_store_wrapper(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("encstore");
    store_t *s = open_enc(dir, config("secrets", provider("aesgcm", "key1", K32)));
    const char *cm = "/registry/core/configmaps/default/c";
    int64_t rev, r1;
    assert_int_equal(store_create(s, SECRET_KEY, "{\"v\":\"s3cr3t-1\"}", 16, &r1), 0);
    assert_int_equal(store_create(s, cm, "plain", 5, NULL), 0);
    store_watch_t *w, *wcm;
    assert_int_equal(store_watch_open(s, "/registry/core/secrets/", r1, &w), 0);
    assert_int_equal(store_watch_open(s, "/registry/core/configmaps/", 0, &wcm), 0);
    assert_int_equal(store_update(s, SECRET_KEY, "{\"v\":\"s3cr3t-2\"}", 16, r1, &rev), 0);
    store_kv_t *kv;
    assert_int_equal(store_get(s, SECRET_KEY, 0, &kv), 0);
    assert_string_equal(kv->value, "{\"v\":\"s3cr3t-2\"}");
    assert_int_equal(kv->value_len, 16);
    assert_string_equal(kv->key, SECRET_KEY);
    free(kv);
    assert_int_equal(store_get(s, SECRET_KEY, r1, &kv), 0); /* an older revision too */
    assert_string_equal(kv->value, "{\"v\":\"s3cr3t-1\"}");
    free(kv);
    store_range_t *r;
    assert_int_equal(store_range(s, "", NULL, 0, 0, &r), 0);
    assert_int_equal(r->count, 2);
    assert_string_equal(r->kvs[0].value, "plain");
    assert_string_equal(r->kvs[1].value, "{\"v\":\"s3cr3t-2\"}");
    store_range_free(r);
    const store_event_t *ev;
    assert_int_equal(store_watch_next(w, 5000, &ev), 0);
    assert_int_equal(ev->type, STORE_PUT);
    assert_string_equal(ev->kv.value, "{\"v\":\"s3cr3t-2\"}");
    assert_true(ev->has_prev);
    assert_string_equal(ev->prev.value, "{\"v\":\"s3cr3t-1\"}");
    assert_int_equal(store_watch_next(wcm, 5000, &ev), 0);
    assert_string_equal(ev->kv.value, "plain");
    assert_int_equal(store_delete(s, SECRET_KEY, rev, NULL), 0);
    assert_int_equal(store_watch_next(w, 5000, &ev), 0);
    assert_int_equal(ev->type, STORE_DELETE);
    assert_string_equal(ev->prev.value, "{\"v\":\"s3cr3t-2\"}");
    assert_int_equal(store_create(s, SECRET_KEY, "{\"v\":\"s3cr3t-3\"}", 16, NULL), 0);
    assert_int_equal(
        store_create(s, "/registry/core/secrets/other/s", "{\"v\":\"s3cr3t-4\"}", 16, NULL), 0);
    store_watch_close(w);
    store_watch_close(wcm);
    store_close(s);
    raw_expect(dir, SECRET_KEY, "k8s:enc:aesgcm:v1:key1:");
    raw_expect(dir, cm, "plain");

    /* Rotation: key2 first, key1 still read; rewrite moves both secrets. */
    char provs[1024];
    snprintf(provs, sizeof provs, "%s%s", provider("aesgcm", "key2", K32B),
             provider("aesgcm", "key1", K32));
    s = open_enc(dir, config("secrets", provs));
    assert_int_equal(store_get(s, SECRET_KEY, 0, &kv), 0);
    int64_t mod = kv->mod_rev;
    free(kv);
    assert_int_equal(store_stale(s, SECRET_KEY, mod), 1); /* under key1, key2 writes */
    assert_int_equal(store_stale(s, cm, 0), 0);
    size_t total, rewritten;
    char why[256];
    assert_int_equal(store_enc_rewrite(s, &total, &rewritten, why, sizeof why), 0);
    assert_int_equal(total, 2);
    assert_int_equal(rewritten, 2);
    assert_int_equal(store_enc_rewrite(s, &total, &rewritten, why, sizeof why), 0);
    assert_int_equal(rewritten, 0); /* nothing stale left */
    assert_int_equal(store_get(s, SECRET_KEY, 0, &kv), 0);
    assert_int_equal(store_stale(s, SECRET_KEY, kv->mod_rev), 0);
    free(kv);
    store_close(s);
    raw_expect(dir, SECRET_KEY, "k8s:enc:aesgcm:v1:key2:");
    raw_expect(dir, "/registry/core/secrets/other/s", "k8s:enc:aesgcm:v1:key2:");

    /* Only key1 now: key2's values cannot be read, by any path. */
    s = open_enc(dir, config("secrets", provider("aesgcm", "key1", K32)));
    int64_t before;
    assert_int_equal(store_revision(s, &before), 0);
    assert_int_equal(store_get(s, SECRET_KEY, 0, &kv), KP_ECORRUPT);
    assert_null(kv);
    assert_int_equal(store_range(s, "/registry/core/", NULL, 0, 0, &r), KP_ECORRUPT);
    assert_null(r);
    assert_int_equal(store_get(s, cm, 0, &kv), 0); /* others still read */
    free(kv);
    assert_int_equal(store_enc_rewrite(s, &total, &rewritten, why, sizeof why), KP_ECORRUPT);
    assert_non_null(strstr(why, SECRET_KEY));
    assert_int_equal(store_watch_open(s, "/registry/", before - 2, &w), 0);
    assert_int_equal(store_watch_next(w, 5000, &ev), KP_ECORRUPT);
    assert_int_equal(store_watch_next(w, 100, &ev), KP_ECORRUPT); /* sticky */
    store_watch_close(w);
    store_close(s);
    tu_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),         cmocka_unit_test(test_known_answers),
        cmocka_unit_test(test_keys_and_identity), cmocka_unit_test(test_resources),
        cmocka_unit_test(test_config_errors),     cmocka_unit_test(test_store_wrapper),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
