/*
 * tls.c -- the server's certificates, made on first start with GnuTLS.
 *
 * kubectl sends a bearer token only over TLS, so the API server always speaks
 * HTTPS. On first start this creates a self-signed CA (DIR/ca.crt, ca.key)
 * and a server certificate signed by it (DIR/server.crt, server.key) for
 * 127.0.0.1, ::1, localhost and the listen host; the kubeconfig carries the
 * CA. Later starts load the files. Keys are ECDSA P-256, written mode 0600.
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

#define VALID_SECONDS (10 * 365 * 24 * 3600L)

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
