/*
 * test_csrsigning.c -- the CSR signer's decision and certificate
 * (src/controllers/csrsigning.c): a CA and requests made with GnuTLS here;
 * an approved request is signed and the certificate verifies against the
 * CA with the request's subject, key, SANs and usages and Kubernetes'
 * lifetime; the signers' checks refuse with Kubernetes' messages; requests
 * not approved, failed, already signed or for another signer are left.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controllers/csrsigning_int.h"
#include "lib/base64.h"
#include "lib/err.h"

#define NOW 1800000000LL

static char *ca_cert_pem, *ca_key_pem;
static gnutls_x509_crt_t ca_crt;

static char *dup_datum(gnutls_datum_t *d)
{
    char *s = malloc(d->size + 1);
    assert_non_null(s);
    memcpy(s, d->data, d->size);
    s[d->size] = '\0';
    gnutls_free(d->data);
    return s;
}

static gnutls_x509_privkey_t new_key(void)
{
    gnutls_x509_privkey_t k;
    assert_int_equal(gnutls_x509_privkey_init(&k), 0);
    assert_int_equal(gnutls_x509_privkey_generate(k, GNUTLS_PK_ECDSA,
                                                  GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1),
                                                  0),
                     0);
    return k;
}

static int setup(void **state)
{
    (void)state;
    gnutls_x509_privkey_t k = new_key();
    assert_int_equal(gnutls_x509_crt_init(&ca_crt), 0);
    unsigned char serial[1] = {1};
    assert_int_equal(gnutls_x509_crt_set_version(ca_crt, 3), 0);
    assert_int_equal(gnutls_x509_crt_set_serial(ca_crt, serial, 1), 0);
    assert_int_equal(gnutls_x509_crt_set_activation_time(ca_crt, NOW - 86400), 0);
    /* The CA ends 30 days after NOW: longer certificates stop there. */
    assert_int_equal(gnutls_x509_crt_set_expiration_time(ca_crt, NOW + 30 * 86400), 0);
    assert_int_equal(gnutls_x509_crt_set_dn_by_oid(ca_crt, GNUTLS_OID_X520_COMMON_NAME, 0,
                                                   "test-ca", 7),
                     0);
    assert_int_equal(gnutls_x509_crt_set_key(ca_crt, k), 0);
    assert_int_equal(gnutls_x509_crt_set_basic_constraints(ca_crt, 1, -1), 0);
    assert_int_equal(gnutls_x509_crt_set_key_usage(ca_crt, GNUTLS_KEY_KEY_CERT_SIGN), 0);
    assert_int_equal(gnutls_x509_crt_sign2(ca_crt, ca_crt, k, GNUTLS_DIG_SHA256, 0), 0);
    gnutls_datum_t d;
    assert_int_equal(gnutls_x509_crt_export2(ca_crt, GNUTLS_X509_FMT_PEM, &d), 0);
    ca_cert_pem = dup_datum(&d);
    assert_int_equal(gnutls_x509_privkey_export2(k, GNUTLS_X509_FMT_PEM, &d), 0);
    ca_key_pem = dup_datum(&d);
    gnutls_x509_privkey_deinit(k);
    /* Verification wants the CA as parsed, not as built in memory. */
    gnutls_x509_crt_deinit(ca_crt);
    assert_int_equal(gnutls_x509_crt_init(&ca_crt), 0);
    d.data = (unsigned char *)ca_cert_pem;
    d.size = (unsigned)strlen(ca_cert_pem);
    assert_int_equal(gnutls_x509_crt_import(ca_crt, &d, GNUTLS_X509_FMT_PEM), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    gnutls_x509_crt_deinit(ca_crt);
    free(ca_cert_pem);
    free(ca_key_pem);
    return 0;
}

/* A CSR object: a request for CN `cn` (O `org` when not NULL, a DNS SAN
 * when `dns` is not NULL) by a new key, signer, usages (JSON array text),
 * the conditions (JSON array text) and spec.expirationSeconds (< 0: none). */
static json_t *make_csr(const char *cn, const char *org, const char *dns, const char *signer,
                        const char *usages, const char *conds, long long exp)
{
    gnutls_x509_privkey_t k = new_key();
    gnutls_x509_crq_t crq;
    assert_int_equal(gnutls_x509_crq_init(&crq), 0);
    assert_int_equal(gnutls_x509_crq_set_dn_by_oid(crq, GNUTLS_OID_X520_COMMON_NAME, 0, cn,
                                                   (unsigned)strlen(cn)),
                     0);
    if (org)
        assert_int_equal(gnutls_x509_crq_set_dn_by_oid(crq, GNUTLS_OID_X520_ORGANIZATION_NAME, 0,
                                                       org, (unsigned)strlen(org)),
                         0);
    if (dns)
        assert_int_equal(gnutls_x509_crq_set_subject_alt_name(crq, GNUTLS_SAN_DNSNAME, dns,
                                                              (unsigned)strlen(dns),
                                                              GNUTLS_FSAN_APPEND),
                         0);
    assert_int_equal(gnutls_x509_crq_set_key(crq, k), 0);
    assert_int_equal(gnutls_x509_crq_sign2(crq, k, GNUTLS_DIG_SHA256, 0), 0);
    gnutls_datum_t d;
    assert_int_equal(gnutls_x509_crq_export2(crq, GNUTLS_X509_FMT_PEM, &d), 0);
    char *b64 = base64_encode(d.data, d.size);
    gnutls_free(d.data);
    gnutls_x509_crq_deinit(crq);
    gnutls_x509_privkey_deinit(k);
    json_error_t e;
    json_t *u = json_loads(usages, 0, &e), *c = json_loads(conds, 0, &e);
    assert_non_null(u);
    assert_non_null(c);
    json_t *csr = json_pack("{s:{s:s}, s:{s:s, s:s, s:o}, s:{s:o}}", "metadata", "name", cn,
                            "spec", "request", b64, "signerName", signer, "usages", u, "status",
                            "conditions", c);
    if (exp >= 0)
        json_object_set_new(json_object_get(csr, "spec"), "expirationSeconds", json_integer(exp));
    free(b64);
    return csr;
}

#define APPROVED "[{\"type\":\"Approved\",\"status\":\"True\"}]"
#define CLIENT   "kubernetes.io/kube-apiserver-client"
#define KUBELET  "kubernetes.io/kube-apiserver-client-kubelet"
#define SERVING  "kubernetes.io/kubelet-serving"

/* Sign; expect a certificate (want NULL) or the refusal `want`. */
static char *sign(json_t *csr, const char *want)
{
    csr_ca_t *ca;
    assert_int_equal(csr_ca_new(ca_cert_pem, ca_key_pem, &ca), 0);
    char *pem = NULL, why[512];
    assert_int_equal(csr_sign(ca, csr, NOW, 0, &pem, why, sizeof why), 0);
    csr_ca_free(ca);
    json_decref(csr);
    if (want) {
        assert_null(pem);
        assert_string_equal(why, want);
        return NULL;
    }
    assert_string_equal(why, "");
    assert_non_null(pem);
    return pem;
}

/* The certificate in pem, verified against the CA. */
static gnutls_x509_crt_t verified(char *pem)
{
    gnutls_x509_crt_t crt;
    assert_int_equal(gnutls_x509_crt_init(&crt), 0);
    gnutls_datum_t d = {(unsigned char *)pem, (unsigned)strlen(pem)};
    assert_int_equal(gnutls_x509_crt_import(crt, &d, GNUTLS_X509_FMT_PEM), 0);
    free(pem);
    unsigned status = 1;
    assert_int_equal(gnutls_x509_crt_verify(crt, &ca_crt, 1,
                                            GNUTLS_VERIFY_DISABLE_TIME_CHECKS |
                                                GNUTLS_VERIFY_DISABLE_TRUSTED_TIME_CHECKS,
                                            &status), 0);
    assert_int_equal(status, 0);
    return crt;
}

static void test_client_signed(void **state)
{
    (void)state;
    gnutls_x509_crt_t crt = verified(sign(
        make_csr("jane", "dev", NULL, CLIENT, "[\"client auth\",\"digital signature\"]", APPROVED,
                 86400),
        NULL));
    char dn[256];
    size_t n = sizeof dn;
    assert_int_equal(gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0, dn, &n), 0);
    assert_string_equal(dn, "jane");
    n = sizeof dn;
    assert_int_equal(
        gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_ORGANIZATION_NAME, 0, 0, dn, &n), 0);
    assert_string_equal(dn, "dev");
    /* 5 minutes back; a day long (not short: the end moves back too) */
    assert_int_equal(gnutls_x509_crt_get_activation_time(crt), NOW - 300);
    assert_int_equal(gnutls_x509_crt_get_expiration_time(crt), NOW - 300 + 86400);
    unsigned ku = 0, crit = 0;
    assert_true(gnutls_x509_crt_get_key_usage(crt, &ku, &crit) >= 0);
    assert_int_equal(ku, GNUTLS_KEY_DIGITAL_SIGNATURE);
    char oid[128];
    n = sizeof oid;
    assert_int_equal(gnutls_x509_crt_get_key_purpose_oid(crt, 0, oid, &n, NULL), 0);
    assert_string_equal(oid, GNUTLS_KP_TLS_WWW_CLIENT);
    n = sizeof oid;
    assert_int_equal(gnutls_x509_crt_get_key_purpose_oid(crt, 1, oid, &n, NULL),
                     GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE);
    unsigned ca = 1;
    assert_true(gnutls_x509_crt_get_basic_constraints(crt, NULL, &ca, NULL) >= 0);
    assert_int_equal(ca, 0);
    gnutls_x509_crt_deinit(crt);
}

static void test_lifetimes(void **state)
{
    (void)state;
    /* short (under 8 hours): the end is not moved back */
    gnutls_x509_crt_t crt = verified(
        sign(make_csr("a", NULL, NULL, CLIENT, "[\"client auth\"]", APPROVED, 3600), NULL));
    assert_int_equal(gnutls_x509_crt_get_expiration_time(crt), NOW + 3600);
    gnutls_x509_crt_deinit(crt);
    /* none asked: one year, cut at the CA's end (30 days) */
    crt = verified(sign(make_csr("a", NULL, NULL, CLIENT, "[\"client auth\"]", APPROVED, -1), NULL));
    assert_int_equal(gnutls_x509_crt_get_expiration_time(crt), NOW + 30 * 86400);
    gnutls_x509_crt_deinit(crt);
    assert_int_equal(csr_duration(-1, 0), 365LL * 86400);
    assert_int_equal(csr_duration(100, 0), 600);
    assert_int_equal(csr_duration(7200, 0), 7200);
    assert_int_equal(csr_duration(86400, 3600), 3600);
}

static void test_kubelet_signers(void **state)
{
    (void)state;
    gnutls_x509_crt_t crt = verified(
        sign(make_csr("system:node:n1", "system:nodes", "n1.example.com", SERVING,
                      "[\"digital signature\",\"key encipherment\",\"server auth\"]", APPROVED, -1),
             NULL));
    char san[256];
    size_t n = sizeof san;
    assert_int_equal(gnutls_x509_crt_get_subject_alt_name(crt, 0, san, &n, NULL),
                     GNUTLS_SAN_DNSNAME);
    assert_string_equal(san, "n1.example.com");
    gnutls_x509_crt_deinit(crt);
    crt = verified(sign(make_csr("system:node:n1", "system:nodes", NULL, KUBELET,
                                 "[\"digital signature\",\"client auth\"]", APPROVED, -1),
                        NULL));
    gnutls_x509_crt_deinit(crt);
}

static void test_refused(void **state)
{
    (void)state;
    sign(make_csr("jane", NULL, NULL, CLIENT, "[\"server auth\",\"client auth\"]", APPROVED, -1),
         "invalid usage for client certificate: server auth");
    sign(make_csr("jane", NULL, NULL, CLIENT, "[\"digital signature\"]", APPROVED, -1),
         "invalid usage for client certificate: client auth");
    sign(make_csr("system:node:n1", "dev", "n1", SERVING,
                  "[\"digital signature\",\"server auth\"]", APPROVED, -1),
         "subject organization is not system:nodes");
    sign(make_csr("system:node:n1", "system:nodes", NULL, SERVING,
                  "[\"digital signature\",\"server auth\"]", APPROVED, -1),
         "DNS or IP subjectAltName is required");
    sign(make_csr("system:node:n1", "system:nodes", "n1", SERVING, "[\"server auth\"]", APPROVED,
                  -1),
         "usages did not match [digital signature key encipherment server auth]");
    sign(make_csr("n1", "system:nodes", "n1", SERVING, "[\"digital signature\",\"server auth\"]",
                  APPROVED, -1),
         "subject common name does not begin with system:node:");
    sign(make_csr("system:node:n1", "system:nodes", "n1", KUBELET,
                  "[\"digital signature\",\"client auth\"]", APPROVED, -1),
         "DNS subjectAltNames are not allowed");
    sign(make_csr("system:node:n1", "system:nodes", NULL, KUBELET, "[\"client auth\"]", APPROVED,
                  -1),
         "usages did not match [client auth digital signature key encipherment]");
}

static void test_left_alone(void **state)
{
    (void)state;
    /* pending, denied, failed, another signer: nothing, no refusal */
    sign(make_csr("a", NULL, NULL, CLIENT, "[\"client auth\"]", "[]", -1), "");
    sign(make_csr("a", NULL, NULL, CLIENT, "[\"client auth\"]",
                  "[{\"type\":\"Denied\",\"status\":\"True\"}]", -1),
         "");
    sign(make_csr("a", NULL, NULL, CLIENT, "[\"client auth\"]",
                  "[{\"type\":\"Approved\",\"status\":\"True\"},"
                  "{\"type\":\"Failed\",\"status\":\"True\"}]",
                  -1),
         "");
    sign(make_csr("a", NULL, NULL, "example.com/mine", "[\"client auth\"]", APPROVED, -1), "");
    json_t *csr = make_csr("a", NULL, NULL, CLIENT, "[\"client auth\"]", APPROVED, -1);
    json_object_set_new(json_object_get(csr, "status"), "certificate", json_string("eA=="));
    sign(csr, "");
    /* a request that does not parse: an error (retried) */
    csr = make_csr("a", NULL, NULL, CLIENT, "[\"client auth\"]", APPROVED, -1);
    json_object_set_new(json_object_get(csr, "spec"), "request", json_string("aGVsbG8="));
    csr_ca_t *ca;
    assert_int_equal(csr_ca_new(ca_cert_pem, ca_key_pem, &ca), 0);
    char *pem = NULL, why[64];
    assert_int_equal(csr_sign(ca, csr, NOW, 0, &pem, why, sizeof why), KP_EINVAL);
    assert_null(pem);
    csr_ca_free(ca);
    json_decref(csr);
    /* a CA that is not one */
    assert_int_equal(csr_ca_new("nope", ca_key_pem, &ca), KP_EINVAL);
    assert_null(ca);
    assert_int_equal(csr_ca_new(ca_cert_pem, NULL, &ca), KP_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_client_signed), cmocka_unit_test(test_lifetimes),
        cmocka_unit_test(test_kubelet_signers), cmocka_unit_test(test_refused),
        cmocka_unit_test(test_left_alone),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
