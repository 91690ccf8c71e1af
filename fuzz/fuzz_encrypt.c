/*
 * fuzz_encrypt.c -- the encryption config parser and the stored-value
 * decoder (store/encrypt.h): a file an operator writes and bytes read back
 * from the store, which whoever can write the store files controls.
 *
 * Input: a first line, the store key; then, up to a NUL byte, an
 * EncryptionConfiguration, and after it the stored value. Without a NUL the
 * config is a fixed one (aescbc, aesgcm and secretbox keys named key1 with
 * the key bytes 0..31 or 0..15, identity last, for secrets) and the rest is
 * the value. The value is opened; what opens must seal and open again to
 * the same bytes, and any value sealed under a parsed config must open.
 */
#include <stdlib.h>

#include "fuzz.h"
#include "lib/err.h"
#include "store/encrypt.h"

static const char fixed[] =
    "apiVersion: apiserver.config.k8s.io/v1\n"
    "kind: EncryptionConfiguration\n"
    "resources:\n"
    "- resources: [secrets, '*.apps']\n"
    "  providers:\n"
    "  - aescbc: {keys: [{name: key1, secret: AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=}]}\n"
    "  - aesgcm: {keys: [{name: key1, secret: AAECAwQFBgcICQoLDA0ODw==}]}\n"
    "  - secretbox: {keys: [{name: key1, secret: AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=}]}\n"
    "  - identity: {}\n";

/* Seal `v` under `key` and open it again: the same bytes, or abort. */
static void roundtrip(const store_enc_t *e, const char *key, const char *v, size_t n)
{
    char *sealed = NULL, *out = NULL;
    size_t slen = 0, olen = 0;
    if (store_enc_seal(e, key, v, n, &sealed, &slen)) return;
    const char *s = sealed ? sealed : v;
    size_t sn = sealed ? slen : n;
    int rc = store_enc_open(e, key, s, sn, &out, &olen, NULL, NULL, 0);
    if (rc == KP_ENOMEM) {
        free(sealed);
        return;
    }
    /* Identity may be the writer and not read an "k8s:enc:" value back, as
     * in Kubernetes; everything else round-trips. */
    if (rc && !(!sealed && n >= 8 && !memcmp(v, "k8s:enc:", 8))) abort();
    if (!rc && (out ? olen != n || memcmp(out, v, n) : sn != n)) abort();
    free(out);
    free(sealed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_INPUT_MAX) return 0;
    char *key = fz_line(&data, &size);
    if (!key) return 0;
    const uint8_t *nul = memchr(data, 0, size);
    const char *text = nul ? (const char *)data : fixed;
    size_t tlen = nul ? (size_t)(nul - data) : strlen(fixed);
    const uint8_t *val = nul ? nul + 1 : data;
    size_t vlen = nul ? size - (size_t)(nul + 1 - data) : size;
    store_enc_t *e = NULL;
    char err[512], why[512], desc[1024];
    if (!*key || strlen(key) > STORE_KEY_MAX || store_enc_parse(text, tlen, &e, err, sizeof err)) {
        free(key);
        return 0;
    }
    store_enc_describe(e, desc, sizeof desc);
    char *out = NULL;
    size_t olen = 0;
    int stale = 0;
    int rc = store_enc_open(e, key, val, vlen, &out, &olen, &stale, why, sizeof why);
    if (rc && rc != KP_ECORRUPT && rc != KP_ENOMEM) abort();
    if (!rc) {
        if (!store_enc_covers(e, key) && (out || stale)) abort();
        roundtrip(e, key, out ? out : (const char *)val, out ? olen : vlen);
    }
    free(out);
    free(key);
    store_enc_free(e);
    return 0;
}
