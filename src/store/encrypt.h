/*
 * encrypt.h -- values encrypted at rest, as Kubernetes encrypts them.
 *
 * A config is Kubernetes' EncryptionConfiguration (apiVersion
 * apiserver.config.k8s.io/v1, kind EncryptionConfiguration), YAML or JSON:
 * resources[] each name resources ("secrets", "deployments.apps", "*." for
 * every core resource, "*.apps", "*.*") and providers in order (aesgcm,
 * aescbc, secretbox, identity; kms is refused), each of the first three with
 * keys[] {name, secret (base64: 16, 24 or 32 bytes for AES, 32 for
 * secretbox)}. It is checked as kube-apiserver checks it
 * (ValidateEncryptionConfiguration and the masking rule of its loader), and
 * a bad file is refused with a message naming the field, in Kubernetes'
 * form ("resources[0].providers[0].aescbc.keys[0].secret: Invalid value:
 * \"REDACTED\": secret is not of the expected length, got 8, expected one of
 * [16 24 32]"). One rule is kplane's own: two keys of one provider may not
 * share a name (Kubernetes would try both; a wrong AES-CBC key passes the
 * padding check once in about 256 reads and then yields garbage).
 *
 * A resource maps to the store keys kplane gives it (apiserver/schema/
 * resource.h): "secrets" is "/registry/core/secrets/", "deployments.apps"
 * "/registry/apps/deployments/", "*.apps" "/registry/apps/", "*." every key
 * under "/registry/core/", "*.*" every key under "/registry/". A key takes the
 * rule of the longest prefix that covers it (Kubernetes: the resource's own
 * rule, else its group's "*.group", else "*.*"); one resource named in several
 * entries gets their providers in entry order.
 *
 * A stored value is what Kubernetes stores (storage/value/encrypt/):
 *   aescbc     "k8s:enc:aescbc:v1:<name>:"    IV(16) | AES-CBC(PKCS#7 padded value)
 *   aesgcm     "k8s:enc:aesgcm:v1:<name>:"    nonce(12) | AES-GCM(value) | tag(16),
 *              the store key as additional data (Kubernetes: the etcd key)
 *   secretbox  "k8s:enc:secretbox:v1:<name>:" nonce(24) | tag(16) | XSalsa20(value)
 *   identity   the value itself
 * The first provider's first key writes; reading tries every key of every
 * provider in order whose prefix the value has, and identity takes any value
 * that does not start with "k8s:enc:". A value none of them reads is an
 * error (KP_ECORRUPT), never a crash: so an unprefixed value reads only when
 * identity is listed, and one written under a key no longer listed not at
 * all. A value read by any key but the first is stale: rewriting it
 * (store_enc_rewrite) puts it under the first.
 *
 * Ownership: a store_enc_t is the caller's until store_enc_free(), or until
 * store_enc_wrap() takes it. Thread-safety: a loaded config is immutable;
 * every function may be called from any thread at once.
 */
#ifndef KP_STORE_ENCRYPT_H
#define KP_STORE_ENCRYPT_H

#include <stddef.h>

#include "store/store.h"

#define STORE_ENC_FILE_MAX (1u << 20) /* bytes of a config file */

typedef struct store_enc store_enc_t;

/* Parse and check a config (len bytes of YAML or JSON). On error, err gets
 * one line naming the field. Errors: KP_EINVAL (a bad config), KP_ENOMEM. */
int store_enc_parse(const char *text, size_t len, store_enc_t **out, char *err, size_t errlen);

/* The same from a file (at most STORE_ENC_FILE_MAX bytes). Errors also
 * KP_ENOTFOUND, KP_EIO (unreadable), KP_ETOOLARGE; err names the file. */
int store_enc_load(const char *path, store_enc_t **out, char *err, size_t errlen);

void store_enc_free(store_enc_t *e);

/* One line for a log: what is encrypted and with what, e.g.
 * "secrets: aescbc key1, identity". */
void store_enc_describe(const store_enc_t *e, char *buf, size_t len);

/* Does the config cover store key `key`? */
int store_enc_covers(const store_enc_t *e, const char *key);

/* The stored form of `value` (n bytes) under store key `key`: a new
 * allocation in *out (NUL-terminated, length *outlen) the caller frees, or
 * *out NULL when the key is not covered or its writer is identity (then
 * the value is stored as it is). Errors: KP_ENOMEM, KP_EIO (no random
 * bytes). */
int store_enc_seal(const store_enc_t *e, const char *key, const void *value, size_t n, char **out,
                   size_t *outlen);

/* The value a stored form holds: a new allocation in *out (NUL-terminated,
 * length *outlen) the caller frees; *out NULL when the stored bytes are the
 * value (the key is not covered, or identity read it). *stale (may be NULL) is 1 when a key
 * other than the writing one read it. Errors: KP_ECORRUPT (no provider
 * reads it; `why` gets the reason, e.g. "no matching prefix found"),
 * KP_ENOMEM. */
int store_enc_open(const store_enc_t *e, const char *key, const void *stored, size_t n, char **out,
                   size_t *outlen, int *stale, char *why, size_t whylen);

/* A store that seals values on writes and opens them on reads and in watch
 * events (previous values too) under the keys `e` covers, around `inner`;
 * other keys pass through untouched (no copy, no lock). The result owns
 * inner and e (both are freed on error too); store_close() closes both.
 * Where a stored value cannot be opened, store_get() and store_range() fail
 * with KP_ECORRUPT (logged with the key and the reason) and a watch's
 * store_watch_next() does too, from then on (reopen it). */
int store_enc_wrap(store_t *inner, store_enc_t *e, store_t **out);

/* The config of a store made by store_enc_wrap() (NULL for any other). */
const store_enc_t *store_enc_of(store_t *s);

/* Rewrite every stale value under the keys the config of `s` (a store from
 * store_enc_wrap()) covers under its writing key, each with a compare-and-
 * swap on its mod_rev (a value written meanwhile is read again); the
 * history keeps the old forms until compacted. *total gets the values
 * read, *rewritten those written. Errors: KP_EINVAL (not such a store),
 * KP_ECORRUPT (a value no key reads; `why` names its key), store errors. */
int store_enc_rewrite(store_t *s, size_t *total, size_t *rewritten, char *why, size_t whylen);

/* A new config as `kplane server` makes on its first start: Secrets
 * encrypted with aescbc under one random 32-byte key named key1, identity
 * second (so Secrets written before still read). *out is the caller's.
 * Errors: KP_ENOMEM, KP_EIO (no random bytes). */
int store_enc_default_config(char **out);

#endif
