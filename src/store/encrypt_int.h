/*
 * encrypt_int.h -- a parsed encryption config (encrypt.h), shared by the
 * config parser (encrypt_config.c), the value transformer (encrypt.c) and
 * the store wrapper (encrypt_store.c). Not for users of the store.
 *
 * Immutable once store_enc_parse() returned it: the cipher contexts are
 * only read (Nettle's AES key schedules and GCM key; secretbox keys), so
 * any thread may seal and open at once.
 */
#ifndef KP_STORE_ENCRYPT_INT_H
#define KP_STORE_ENCRYPT_INT_H

#include <nettle/gcm.h>
#include <nettle/nettle-meta.h>
#include <stdint.h>

#include "store/encrypt.h"

typedef enum enc_kind { ENC_IDENTITY, ENC_AESCBC, ENC_AESGCM, ENC_SECRETBOX } enc_kind_t;

/* One key of one provider ("aescbc key1"); identity is a key without one. */
typedef struct enc_key {
    enc_kind_t kind;
    char *name;   /* the key's name; "" for identity */
    char *prefix; /* "k8s:enc:aescbc:v1:key1:"; "" for identity */
    size_t prefix_len;
    const struct nettle_cipher *aes; /* AES-128/192/256 by key size */
    void *enc_ctx;                   /* its encryption key schedule (aesgcm, aescbc) */
    void *dec_ctx;                   /* its decryption key schedule (aescbc) */
    struct gcm_key *gcm;             /* aesgcm's hash key */
    uint8_t box[32];                 /* secretbox's key */
} enc_key_t;

/* The keys of one store key prefix, in read order; keys[0] writes. */
typedef struct enc_rule {
    char *resource; /* as the config names it: "secrets", "*.apps" */
    char *prefix;   /* "/registry/core/secrets/" */
    size_t prefix_len;
    const enc_key_t **keys;
    size_t nkeys;
} enc_rule_t;

struct store_enc {
    enc_key_t *keys; /* every provider key of every entry; the rules point in */
    size_t nkeys;
    enc_rule_t *rules;
    size_t nrules;
};

/* The rule whose prefix is the longest that covers `key`, or NULL. */
const enc_rule_t *store_enc__rule(const store_enc_t *e, const char *key);

/* Does some rule cover a key under `prefix`, or cover all of it? */
int store_enc__touches(const store_enc_t *e, const char *prefix);

/* encrypt.c's seal and open for one rule (the key must be the rule's). */
int store_enc__seal(const enc_rule_t *r, const char *key, const void *value, size_t n, char **out,
                    size_t *outlen);
int store_enc__open(const enc_rule_t *r, const char *key, const void *stored, size_t n, char **out,
                    size_t *outlen, int *stale, char *why, size_t whylen);

/* n random bytes from the kernel. 0 or KP_EIO. */
int store_enc__random(void *buf, size_t n);

#endif
