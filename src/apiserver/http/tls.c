/*
 * tls.c -- the server's certificates, made on first start with GnuTLS.
 *
 * kubectl sends a bearer token only over TLS, so the API server always speaks
 * HTTPS. On first start this creates a self-signed CA (DIR/ca.crt, ca.key)
 * and a server certificate signed by it (DIR/server.crt, server.key) for
 * 127.0.0.1, ::1, localhost and the listen host; the kubeconfig carries the
 * CA. Later starts load the files. Keys are ECDSA P-256, written mode 0600.
 *
 * Client certificates (apiserver_client_cert) are signed by the same CA for
 * Kubernetes' x509 authentication: user = subject CN, groups = subject O.
 * The admin's (DIR/admin.crt, admin.key: kubernetes-admin in system:masters,
 * as kubeadm's admin.conf) is made on first start and again when it is
 * missing, no longer chains to the CA or has less than 30 days left.
 */
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "apiserver/apiserver.h"
#include "lib/buf.h"
#include "lib/err.h"

#define VALID_SECONDS        (10 * 365 * 24 * 3600L)
#define CLIENT_VALID_SECONDS (365 * 24 * 3600L) /* kubeadm's client certificates' year */
#define CLIENT_RENEW_SECONDS (30 * 24 * 3600L)  /* admin.crt is renewed this close to its end */

/* The PEM file at path (malloc'd), or NULL: missing, unreadable, empty or
 * over 64 KiB (never cut short). */
static char *read_all(const char *path)
{
    buf_t b;
    buf_init(&b, 65535);
    if (buf_append_file(&b, path) || !b.len) {
        buf_free(&b);
        return NULL;
    }
    size_t len;
    return buf_detach(&b, &len);
}

static int write_secret(const char *path, const gnutls_datum_t *d)
{
    char tmp[4096 + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    /* Keys are secrets: created 0600, never readable by others for a moment. */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        if (fd >= 0) close(fd);
        return KP_EIO;
    }
    int rc = fwrite(d->data, 1, d->size, f) == d->size ? 0 : KP_EIO;
    if (fflush(f) || fsync(fileno(f))) rc = KP_EIO;
    if (fclose(f)) rc = KP_EIO;
    if (!rc && rename(tmp, path)) rc = KP_EIO;
    return rc;
}

static int new_key(gnutls_x509_privkey_t *key)
{
    if (gnutls_x509_privkey_init(key)) return KP_ENOMEM;
    if (gnutls_x509_privkey_generate(*key, GNUTLS_PK_ECDSA,
                                     GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0)) {
        gnutls_x509_privkey_deinit(*key);
        return KP_EIO;
    }
    return 0;
}

/* A certificate for `key` named `cn`, signed by (issuer, issuer_key), or
 * self-signed when issuer is NULL. `host` adds a SAN for servers. */
static int new_cert(gnutls_x509_crt_t *crt, gnutls_x509_privkey_t key, const char *cn, int ca,
                    const char *host, gnutls_x509_crt_t issuer, gnutls_x509_privkey_t issuer_key)
{
    unsigned char serial[16];
    if (getrandom(serial, sizeof serial, 0) != (ssize_t)sizeof serial) return KP_EIO;
    serial[0] &= 0x7f; /* positive */
    if (gnutls_x509_crt_init(crt)) return KP_ENOMEM;
    time_t now = time(NULL);
    int bad = gnutls_x509_crt_set_version(*crt, 3) ||
              gnutls_x509_crt_set_serial(*crt, serial, sizeof serial) ||
              gnutls_x509_crt_set_activation_time(*crt, now - 3600) ||
              gnutls_x509_crt_set_expiration_time(*crt, now + VALID_SECONDS) ||
              gnutls_x509_crt_set_dn_by_oid(*crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn,
                                            (unsigned)strlen(cn)) ||
              gnutls_x509_crt_set_key(*crt, key) ||
              gnutls_x509_crt_set_basic_constraints(*crt, ca, -1);
    if (!bad && ca)
        bad = gnutls_x509_crt_set_key_usage(*crt, GNUTLS_KEY_KEY_CERT_SIGN | GNUTLS_KEY_CRL_SIGN |
                                                      GNUTLS_KEY_DIGITAL_SIGNATURE);
    if (!bad && !ca) {
        bad = gnutls_x509_crt_set_key_usage(*crt, GNUTLS_KEY_DIGITAL_SIGNATURE) ||
              gnutls_x509_crt_set_key_purpose_oid(*crt, GNUTLS_KP_TLS_WWW_SERVER, 0) ||
              gnutls_x509_crt_set_subject_alt_name(*crt, GNUTLS_SAN_DNSNAME, "localhost", 9,
                                                   GNUTLS_FSAN_APPEND);
        unsigned char v4[4] = {127, 0, 0, 1}, v6[16] = {0};
        v6[15] = 1;
        if (!bad)
            bad = gnutls_x509_crt_set_subject_alt_name(*crt, GNUTLS_SAN_IPADDRESS, v4, 4,
                                                       GNUTLS_FSAN_APPEND) ||
                  gnutls_x509_crt_set_subject_alt_name(*crt, GNUTLS_SAN_IPADDRESS, v6, 16,
                                                       GNUTLS_FSAN_APPEND);
        unsigned char addr[16];
        if (!bad && host && *host) {
            if (inet_pton(AF_INET, host, addr) == 1)
                bad = gnutls_x509_crt_set_subject_alt_name(*crt, GNUTLS_SAN_IPADDRESS, addr, 4,
                                                           GNUTLS_FSAN_APPEND);
            else if (inet_pton(AF_INET6, host, addr) == 1)
                bad = gnutls_x509_crt_set_subject_alt_name(*crt, GNUTLS_SAN_IPADDRESS, addr, 16,
                                                           GNUTLS_FSAN_APPEND);
            else
                bad = gnutls_x509_crt_set_subject_alt_name(*crt, GNUTLS_SAN_DNSNAME, host,
                                                           (unsigned)strlen(host),
                                                           GNUTLS_FSAN_APPEND);
        }
    }
    if (!bad)
        bad = gnutls_x509_crt_sign2(*crt, issuer ? issuer : *crt, issuer ? issuer_key : key,
                                    GNUTLS_DIG_SHA256, 0);
    if (bad) {
        gnutls_x509_crt_deinit(*crt);
        return KP_EIO;
    }
    return 0;
}

/* Create the four files in `dir`. */
static int create_all(const char *dir, const char *host)
{
    gnutls_x509_privkey_t ca_key = NULL, srv_key = NULL;
    gnutls_x509_crt_t ca = NULL, srv = NULL;
    gnutls_datum_t d[4] = {{0}};
    static const char *const names[4] = {"ca.key", "ca.crt", "server.key", "server.crt"};
    int rc;
    if ((rc = new_key(&ca_key))) goto out;
    if ((rc = new_cert(&ca, ca_key, "kplane-ca", 1, NULL, NULL, NULL))) goto out;
    if ((rc = new_key(&srv_key))) goto out;
    if ((rc = new_cert(&srv, srv_key, "kplane-apiserver", 0, host, ca, ca_key))) goto out;
    if (gnutls_x509_privkey_export2(ca_key, GNUTLS_X509_FMT_PEM, &d[0]) ||
        gnutls_x509_crt_export2(ca, GNUTLS_X509_FMT_PEM, &d[1]) ||
        gnutls_x509_privkey_export2(srv_key, GNUTLS_X509_FMT_PEM, &d[2]) ||
        gnutls_x509_crt_export2(srv, GNUTLS_X509_FMT_PEM, &d[3])) {
        rc = KP_EIO;
        goto out;
    }
    /* server.crt last: its presence means the set is complete. */
    for (int i = 0; i < 4 && !rc; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        rc = write_secret(path, &d[i]);
    }
out:
    for (int i = 0; i < 4; i++) gnutls_free(d[i].data);
    if (srv) gnutls_x509_crt_deinit(srv);
    if (ca) gnutls_x509_crt_deinit(ca);
    if (srv_key) gnutls_x509_privkey_deinit(srv_key);
    if (ca_key) gnutls_x509_privkey_deinit(ca_key);
    return rc;
}

/* ---- client certificates ---- */

int apiserver_client_cert(const apiserver_tls_t *tls, const char *cn, const char *const *orgs,
                          char **cert_pem, char **key_pem)
{
    *cert_pem = *key_pem = NULL;
    if (!tls || !tls->ca_pem || !tls->ca_key_pem || !cn || !*cn) return KP_EINVAL;
    gnutls_x509_crt_t ca = NULL, crt = NULL;
    gnutls_x509_privkey_t ca_key = NULL, key = NULL;
    gnutls_datum_t d[2] = {{0}};
    gnutls_datum_t cap = {(unsigned char *)tls->ca_pem, (unsigned)strlen(tls->ca_pem)};
    gnutls_datum_t cak = {(unsigned char *)tls->ca_key_pem, (unsigned)strlen(tls->ca_key_pem)};
    unsigned char serial[16];
    int rc = KP_ENOMEM;
    if (gnutls_x509_crt_init(&ca) || gnutls_x509_privkey_init(&ca_key) ||
        gnutls_x509_crt_init(&crt)) /* each sets its pointer only when it succeeds */
        goto out;
    rc = KP_EINVAL; /* a CA that does not load is the caller's mistake */
    if (gnutls_x509_crt_import(ca, &cap, GNUTLS_X509_FMT_PEM) ||
        gnutls_x509_privkey_import(ca_key, &cak, GNUTLS_X509_FMT_PEM))
        goto out;
    if ((rc = new_key(&key))) {
        key = NULL;
        goto out;
    }
    rc = KP_EIO;
    if (getrandom(serial, sizeof serial, 0) != (ssize_t)sizeof serial) goto out;
    serial[0] &= 0x7f; /* positive */
    time_t now = time(NULL);
    int bad = gnutls_x509_crt_set_version(crt, 3) ||
              gnutls_x509_crt_set_serial(crt, serial, sizeof serial) ||
              gnutls_x509_crt_set_activation_time(crt, now - 3600) ||
              gnutls_x509_crt_set_expiration_time(crt, now + CLIENT_VALID_SECONDS);
    for (size_t i = 0; !bad && orgs && orgs[i]; i++)
        bad = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_ORGANIZATION_NAME, 0, orgs[i],
                                            (unsigned)strlen(orgs[i]));
    if (!bad)
        bad = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn,
                                            (unsigned)strlen(cn)) ||
              gnutls_x509_crt_set_key(crt, key) ||
              gnutls_x509_crt_set_basic_constraints(crt, 0, -1) ||
              gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE) ||
              gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_CLIENT, 0) ||
              gnutls_x509_crt_sign2(crt, ca, ca_key, GNUTLS_DIG_SHA256, 0) ||
              gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &d[0]) ||
              gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &d[1]);
    if (bad) goto out;
    rc = KP_ENOMEM;
    if (!(*cert_pem = strndup((char *)d[0].data, d[0].size)) ||
        !(*key_pem = strndup((char *)d[1].data, d[1].size))) {
        free(*cert_pem);
        *cert_pem = NULL;
        goto out;
    }
    rc = 0;
out:
    gnutls_free(d[0].data);
    gnutls_free(d[1].data);
    if (key) gnutls_x509_privkey_deinit(key);
    if (crt) gnutls_x509_crt_deinit(crt);
    if (ca_key) gnutls_x509_privkey_deinit(ca_key);
    if (ca) gnutls_x509_crt_deinit(ca);
    return rc;
}

/* Whether a kept pair still serves: the certificate parses, chains to
 * ca_pem, has more than CLIENT_RENEW_SECONDS left, and key_pem is its key. */
static int pair_usable(const char *cert_pem, const char *key_pem, const char *ca_pem)
{
    gnutls_x509_crt_t crt = NULL, ca = NULL;
    gnutls_x509_privkey_t key = NULL;
    gnutls_datum_t c = {(unsigned char *)cert_pem, (unsigned)strlen(cert_pem)};
    gnutls_datum_t k = {(unsigned char *)key_pem, (unsigned)strlen(key_pem)};
    gnutls_datum_t a = {(unsigned char *)ca_pem, (unsigned)strlen(ca_pem)};
    unsigned char id1[64], id2[64];
    size_t n1 = sizeof id1, n2 = sizeof id2;
    unsigned status = 1;
    int ok = !gnutls_x509_crt_init(&crt) && !gnutls_x509_crt_init(&ca) &&
             !gnutls_x509_privkey_init(&key) &&
             !gnutls_x509_crt_import(crt, &c, GNUTLS_X509_FMT_PEM) &&
             !gnutls_x509_crt_import(ca, &a, GNUTLS_X509_FMT_PEM) &&
             !gnutls_x509_privkey_import(key, &k, GNUTLS_X509_FMT_PEM) &&
             !gnutls_x509_crt_verify(crt, &ca, 1, 0, &status) && !status &&
             gnutls_x509_crt_get_expiration_time(crt) > time(NULL) + CLIENT_RENEW_SECONDS &&
             !gnutls_x509_crt_get_key_id(crt, 0, id1, &n1) &&
             !gnutls_x509_privkey_get_key_id(key, 0, id2, &n2) && n1 == n2 && !memcmp(id1, id2, n1);
    if (crt) gnutls_x509_crt_deinit(crt);
    if (ca) gnutls_x509_crt_deinit(ca);
    if (key) gnutls_x509_privkey_deinit(key);
    return ok;
}

int apiserver_admin_cert(const char *data_dir, const apiserver_tls_t *tls, char **cert_pem,
                         char **key_pem)
{
    static const char *const orgs[] = {"system:masters", NULL};
    char crt_path[4096], key_path[4096];
    *cert_pem = *key_pem = NULL;
    if (!tls || !tls->ca_pem || !tls->ca_key_pem) return KP_EINVAL;
    snprintf(crt_path, sizeof crt_path, "%s/admin.crt", data_dir);
    snprintf(key_path, sizeof key_path, "%s/admin.key", data_dir);
    char *c = read_all(crt_path), *k = c ? read_all(key_path) : NULL;
    if (c && k && pair_usable(c, k, tls->ca_pem)) {
        *cert_pem = c;
        *key_pem = k;
        return 0;
    }
    free(c);
    free(k);
    int rc = apiserver_client_cert(tls, "kubernetes-admin", orgs, &c, &k);
    if (rc) return rc;
    gnutls_datum_t dc = {(unsigned char *)c, (unsigned)strlen(c)};
    gnutls_datum_t dk = {(unsigned char *)k, (unsigned)strlen(k)};
    /* The key first; a crash between the two leaves a pair that
     * pair_usable() refuses next time. */
    if ((rc = write_secret(key_path, &dk)) || (rc = write_secret(crt_path, &dc))) {
        free(c);
        free(k);
        return rc;
    }
    *cert_pem = c;
    *key_pem = k;
    return 0;
}

int apiserver_tls_load(const char *data_dir, const char *host, apiserver_tls_t *out)
{
    char path[4096];
    memset(out, 0, sizeof *out);
    snprintf(path, sizeof path, "%s/server.crt", data_dir);
    if (access(path, R_OK) != 0) {
        int rc = create_all(data_dir, host);
        if (rc) return rc;
    }
    static const char *const names[3] = {"ca.crt", "server.crt", "server.key"};
    char **slots[3] = {&out->ca_pem, &out->cert_pem, &out->key_pem};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", data_dir, names[i]);
        if (!(*slots[i] = read_all(path))) {
            apiserver_tls_free(out);
            return KP_EIO;
        }
    }
    snprintf(path, sizeof path, "%s/ca.key", data_dir);
    out->ca_key_pem = read_all(path);
    return 0;
}

void apiserver_tls_free(apiserver_tls_t *t)
{
    free(t->ca_pem);
    free(t->cert_pem);
    free(t->key_pem);
    free(t->ca_key_pem);
    memset(t, 0, sizeof *t);
}
