/*
 * encrypt.c -- one value sealed and opened as Kubernetes' transformers do
 * (encrypt.h gives the formats): AES-CBC and AES-GCM from Nettle (GnuTLS's
 * own cipher library), XSalsa20-Poly1305 from libsodium (Nettle has Salsa20
 * but no XSalsa20, and only Poly1305-AES, not the one-time Poly1305 NaCl's
 * secretbox needs), random IVs and nonces from the kernel (getrandom).
 *
 * Opening checks every length before it reads, so a short, truncated or
 * forged value is an error, never a read past its end.
 */
#include <nettle/cbc.h>
#include <nettle/memops.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "lib/err.h"
#include "store/encrypt_int.h"

#define AES_BLOCK 16
#define GCM_NONCE 12
#define GCM_TAG   16
#define BOX_NONCE crypto_secretbox_NONCEBYTES /* 24 */
#define BOX_TAG   crypto_secretbox_MACBYTES   /* 16 */
#define ENC_MARK  "k8s:enc:"

int store_enc__random(void *buf, size_t n)
{
    for (size_t got = 0; got < n;) {
        ssize_t r = getrandom((char *)buf + got, n - got, 0);
        if (r < 0) return KP_EIO;
        got += (size_t)r;
    }
    return 0;
}

const enc_rule_t *store_enc__rule(const store_enc_t *e, const char *key)
{
    const enc_rule_t *best = NULL;
    for (size_t i = 0; e && i < e->nrules; i++) {
        const enc_rule_t *r = &e->rules[i];
        if (!strncmp(key, r->prefix, r->prefix_len) && (!best || r->prefix_len > best->prefix_len))
            best = r;
    }
    return best;
}

int store_enc__touches(const store_enc_t *e, const char *prefix)
{
    size_t n = strlen(prefix);
    for (size_t i = 0; i < e->nrules; i++)
        if (!strncmp(prefix, e->rules[i].prefix,
                     n < e->rules[i].prefix_len ? n : e->rules[i].prefix_len))
            return 1;
    return 0;
}

int store_enc_covers(const store_enc_t *e, const char *key)
{
    return !!store_enc__rule(e, key);
}

/* ---- seal ---- */

int store_enc__seal(const enc_rule_t *r, const char *key, const void *value, size_t n, char **out,
                    size_t *outlen)
{
    const enc_key_t *k = r->keys[0];
    *out = NULL;
    *outlen = 0;
    if (k->kind == ENC_IDENTITY) return 0;
    size_t body = k->kind == ENC_AESCBC   ? AES_BLOCK + (n / AES_BLOCK + 1) * AES_BLOCK
                  : k->kind == ENC_AESGCM ? GCM_NONCE + n + GCM_TAG
                                          : BOX_NONCE + BOX_TAG + n;
    size_t total = k->prefix_len + body;
    if (total < n) return KP_ETOOLARGE;
    char *buf = malloc(total + 1);
    if (!buf) return KP_ENOMEM;
    memcpy(buf, k->prefix, k->prefix_len);
    uint8_t *p = (uint8_t *)buf + k->prefix_len;
    if (k->kind == ENC_AESCBC) {
        uint8_t iv[AES_BLOCK];
        size_t padded = body - AES_BLOCK;
        uint8_t pad = (uint8_t)(padded - n);
        if (store_enc__random(p, AES_BLOCK)) goto no_random;
        memcpy(iv, p, AES_BLOCK);
        if (n) memcpy(p + AES_BLOCK, value, n);
        memset(p + AES_BLOCK + n, pad, pad);
        cbc_encrypt(k->enc_ctx, k->aes->encrypt, AES_BLOCK, iv, padded, p + AES_BLOCK,
                    p + AES_BLOCK);
    } else if (k->kind == ENC_AESGCM) {
        struct gcm_ctx c;
        if (store_enc__random(p, GCM_NONCE)) goto no_random;
        gcm_set_iv(&c, k->gcm, GCM_NONCE, p);
        gcm_update(&c, k->gcm, strlen(key), (const uint8_t *)key);
        gcm_encrypt(&c, k->gcm, k->enc_ctx, k->aes->encrypt, n, p + GCM_NONCE, value);
        gcm_digest(&c, k->gcm, k->enc_ctx, k->aes->encrypt, GCM_TAG, p + GCM_NONCE + n);
    } else {
        if (store_enc__random(p, BOX_NONCE)) goto no_random;
        crypto_secretbox_easy(p + BOX_NONCE, value, n, p, k->box);
    }
    buf[total] = '\0';
    *out = buf;
    *outlen = total;
    return 0;
no_random:
    free(buf);
    return KP_EIO;
}

int store_enc_seal(const store_enc_t *e, const char *key, const void *value, size_t n, char **out,
                   size_t *outlen)
{
    const enc_rule_t *r = store_enc__rule(e, key);
    *out = NULL;
    *outlen = 0;
    return r ? store_enc__seal(r, key, value, n, out, outlen) : 0;
}

/* ---- open ---- */

/* One key's attempt at a body (the stored value after its prefix): 0 with
 * the value in *out, or a reason (Kubernetes' words where it has them). */
static const char *open_body(const enc_key_t *k, const char *key, const uint8_t *b, size_t m,
                             char **out, size_t *outlen, int *rc)
{
    static const char short_data[] = "the stored data was shorter than the required size";
    *rc = KP_ENOMEM;
    if (k->kind == ENC_AESCBC) {
        if (m < AES_BLOCK) return short_data;
        size_t data = m - AES_BLOCK;
        if (data % AES_BLOCK) return "the stored data is not a multiple of the block size";
        if (!data) return "invalid PKCS7 data (empty or not padded)";
        uint8_t iv[AES_BLOCK];
        memcpy(iv, b, AES_BLOCK);
        uint8_t *buf = malloc(data + 1);
        if (!buf) return "out of memory";
        cbc_decrypt(k->dec_ctx, k->aes->decrypt, AES_BLOCK, iv, data, buf, b + AES_BLOCK);
        unsigned pad = buf[data - 1], bad = pad == 0 || pad > AES_BLOCK;
        for (size_t i = 0; !bad && i < pad; i++)
            bad |= buf[data - 1 - i] != pad;
        if (bad) {
            explicit_bzero(buf, data);
            free(buf);
            return pad == 0 || pad > AES_BLOCK ? "invalid PKCS7 data (empty or not padded)"
                                               : "invalid padding on input";
        }
        buf[data - pad] = 0;
        *out = (char *)buf;
        *outlen = data - pad;
    } else if (k->kind == ENC_AESGCM) {
        if (m < GCM_NONCE) return short_data;
        if (m < GCM_NONCE + GCM_TAG) return "cipher: message authentication failed";
        size_t ct = m - GCM_NONCE - GCM_TAG;
        uint8_t *buf = malloc(ct + 1), tag[GCM_TAG];
        if (!buf) return "out of memory";
        struct gcm_ctx c;
        gcm_set_iv(&c, k->gcm, GCM_NONCE, b);
        gcm_update(&c, k->gcm, strlen(key), (const uint8_t *)key);
        gcm_decrypt(&c, k->gcm, k->enc_ctx, k->aes->encrypt, ct, buf, b + GCM_NONCE);
        gcm_digest(&c, k->gcm, k->enc_ctx, k->aes->encrypt, GCM_TAG, tag);
        if (!memeql_sec(tag, b + GCM_NONCE + ct, GCM_TAG)) {
            explicit_bzero(buf, ct);
            free(buf);
            return "cipher: message authentication failed";
        }
        buf[ct] = 0;
        *out = (char *)buf;
        *outlen = ct;
    } else {
        if (m < BOX_NONCE + BOX_TAG) return short_data;
        size_t len = m - BOX_NONCE - BOX_TAG;
        uint8_t *buf = malloc(len + 1);
        if (!buf) return "out of memory";
        if (crypto_secretbox_open_easy(buf, b + BOX_NONCE, m - BOX_NONCE, b, k->box)) {
            free(buf);
            return "secretbox: message authentication failed";
        }
        buf[len] = 0;
        *out = (char *)buf;
        *outlen = len;
    }
    *rc = 0;
    return NULL;
}

int store_enc__open(const enc_rule_t *r, const char *key, const void *stored, size_t n, char **out,
                    size_t *outlen, int *stale, char *why, size_t whylen)
{
    const uint8_t *s = stored;
    size_t wo = 0;
    *out = NULL;
    *outlen = 0;
    if (stale) *stale = 0;
    if (why && whylen) why[0] = '\0';
    int marked = n >= strlen(ENC_MARK) && !memcmp(s, ENC_MARK, strlen(ENC_MARK));
    for (size_t i = 0; i < r->nkeys; i++) {
        const enc_key_t *k = r->keys[i];
        if (k->kind == ENC_IDENTITY) {
            if (marked) continue; /* identity reads no encrypted data: try the next */
            if (stale) *stale = i != 0;
            return 0; /* the stored bytes are the value */
        }
        if (n < k->prefix_len || memcmp(s, k->prefix, k->prefix_len)) continue;
        int rc;
        const char *bad = open_body(k, key, s + k->prefix_len, n - k->prefix_len, out, outlen, &rc);
        if (!bad) {
            if (stale) *stale = i != 0;
            return 0;
        }
        if (!strcmp(bad, "out of memory")) return KP_ENOMEM;
        /* Kubernetes tries the later keys too, and reports every failure. */
        if (why && wo < whylen) {
            int w = snprintf(why + wo, whylen - wo, "%s%.*s: %s", wo ? "; " : "",
                             (int)k->prefix_len - 1, k->prefix, bad);
            if (w > 0) wo += (size_t)w;
        }
    }
    if (why && whylen && !wo)
        snprintf(why, whylen, "no matching prefix found%s",
                 marked ? " (encrypted by a provider or key not in the config)"
                        : " (not encrypted, and identity is not a provider)");
    return KP_ECORRUPT;
}

int store_enc_open(const store_enc_t *e, const char *key, const void *stored, size_t n, char **out,
                   size_t *outlen, int *stale, char *why, size_t whylen)
{
    const enc_rule_t *r = store_enc__rule(e, key);
    *out = NULL;
    *outlen = 0;
    if (stale) *stale = 0;
    if (why && whylen) why[0] = '\0';
    return r ? store_enc__open(r, key, stored, n, out, outlen, stale, why, whylen) : 0;
}
