/*
 * csrsigning_int.h -- the CSR signer's decision and its certificate, apart
 * from the controller's informer and API calls so that tests drive them
 * with plain objects (csrsigning.c).
 *
 * A csr_ca_t is immutable after csr_ca_new and safe to share between
 * threads (signing takes its lock); objects passed in are borrowed.
 */
#ifndef KP_CSRSIGNING_INT_H
#define KP_CSRSIGNING_INT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct csr_ca csr_ca_t;

/* The signing CA from its PEM certificate and key. Errors: KP_EINVAL (not a
 * certificate and key), KP_ENOMEM. Free with csr_ca_free (NULL is fine). */
int csr_ca_new(const char *cert_pem, const char *key_pem, csr_ca_t **out);
void csr_ca_free(csr_ca_t *ca);

/* Kubernetes' --cluster-signing-duration default: one year. */
#define CSR_SIGNING_DURATION_S (365LL * 24 * 3600)

/* What signing `csr` (a CertificateSigningRequest) at Unix time `now`
 * gives, for certificates valid at most max_s seconds (0: one year):
 *   0 and *pem (malloc'd, PEM "CERTIFICATE"): signed;
 *   0 and why non-empty: one of our signers refused it (Kubernetes'
 *     SignerValidationFailure with this message);
 *   0 and neither: nothing to do (not approved, failed, another signer's,
 *     or already signed).
 * Errors: KP_EINVAL (the request does not parse, or its signature is
 * bad), KP_ENOMEM, KP_EIO (GnuTLS refused to build the certificate). */
int csr_sign(csr_ca_t *ca, const json_t *csr, int64_t now, int64_t max_s, char **pem,
             char *why, size_t why_len);

/* The certificate lifetime (seconds) Kubernetes gives for a requested
 * spec.expirationSeconds `req` (< 0: none) and the signing duration max_s:
 * max_s when none or longer, at least 600. */
int64_t csr_duration(int64_t req, int64_t max_s);

#endif
