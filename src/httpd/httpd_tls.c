/*
 * httpd_tls.c -- TLS for httpd.c: GnuTLS sessions over in-memory transport
 * functions (the loop owns the socket; GnuTLS only sees c->tin and
 * c->tout), ALPN choosing HTTP/2 or HTTP/1.1.
 *
 * TLS 1.2 and 1.3 only, as kube-apiserver's default minimum (issue 14: no
 * older version is offered). The server prefers h2 when the client offers
 * it, as Go's does. A connection's session is made when its first record
 * is complete.
 *
 * Client certificates (CLIENT CERTIFICATES in httpd.h): with client_ca_pem
 * the handshake asks for one (GNUTLS_CERT_REQUEST, the CAs' names sent),
 * and one that came is verified as the handshake ends, once per
 * connection: the chain to a CA of client_ca_pem and the validity times
 * (gnutls_certificate_verify_peers against the credentials' trust list),
 * and the TLS client authentication key purpose, which GnuTLS demands only
 * of a certificate that lists key purposes. Only a verified certificate's
 * subject is read.
 */
#include "httpd/httpd_int.h"

#include <errno.h>
#include <gnutls/x509.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"

#define TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

int httpd__tls_global(httpd_t *h, const char *cert_pem, const char *key_pem,
                      const char *client_ca_pem)
{
    if (gnutls_certificate_allocate_credentials(&h->creds)) {
        h->creds = NULL;
        return KP_ENOMEM;
    }
    gnutls_datum_t cert = {(unsigned char *)cert_pem, (unsigned)strlen(cert_pem)};
    gnutls_datum_t key = {(unsigned char *)key_pem, (unsigned)strlen(key_pem)};
    if (gnutls_certificate_set_x509_key_mem(h->creds, &cert, &key, GNUTLS_X509_FMT_PEM) < 0)
        return KP_EINVAL;
    if (client_ca_pem) { /* the number of CAs read: none is an error too */
        gnutls_datum_t ca = {(unsigned char *)client_ca_pem, (unsigned)strlen(client_ca_pem)};
        if (gnutls_certificate_set_x509_trust_mem(h->creds, &ca, GNUTLS_X509_FMT_PEM) < 1)
            return KP_EINVAL;
        h->client_ca = 1;
    }
    if (gnutls_priority_init(&h->prio, TLS_PRIORITIES, NULL) < 0) {
        h->prio = NULL;
        return KP_ENOMEM;
    }
    return 0;
}

void httpd__tls_global_free(httpd_t *h)
{
    if (h->prio) gnutls_priority_deinit(h->prio);
    if (h->creds) gnutls_certificate_free_credentials(h->creds);
    h->prio = NULL;
    h->creds = NULL;
    h->client_ca = 0;
}

static ssize_t tls_push(gnutls_transport_ptr_t p, const void *d, size_t n)
{
    conn_t *c = p;
    if (buf_append(&c->tout, d, n)) {
        gnutls_transport_set_errno(c->tls, ENOMEM);
        return -1;
    }
    return (ssize_t)n;
}

static ssize_t tls_pull(gnutls_transport_ptr_t p, void *d, size_t n)
{
    conn_t *c = p;
    size_t have = c->tin.len - c->tin_off;
    if (!have) {
        gnutls_transport_set_errno(c->tls, EAGAIN);
        return -1;
    }
    if (n > have) n = have;
    memcpy(d, c->tin.p + c->tin_off, n);
    c->tin_off += n;
    if (c->tin_off == c->tin.len) c->tin.len = c->tin_off = 0;
    return (ssize_t)n;
}

int httpd__tls_conn(conn_t *c)
{
    static const gnutls_datum_t protos[] = {{(unsigned char *)"h2", 2},
                                            {(unsigned char *)"http/1.1", 8}};
    httpd_t *h = c->h;
    if (gnutls_init(&c->tls, GNUTLS_SERVER | GNUTLS_NONBLOCK | GNUTLS_NO_SIGNAL)) {
        c->tls = NULL;
        return KP_ENOMEM;
    }
    if (gnutls_priority_set(c->tls, h->prio) ||
        gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE, h->creds) ||
        gnutls_alpn_set_protocols(c->tls, protos, 2, GNUTLS_ALPN_SERVER_PRECEDENCE))
        return KP_ENOMEM; /* c->tls is freed with c */
    if (h->client_ca) gnutls_certificate_server_set_request(c->tls, GNUTLS_CERT_REQUEST);
    gnutls_transport_set_ptr(c->tls, c);
    gnutls_transport_set_push_function(c->tls, tls_push);
    gnutls_transport_set_pull_function(c->tls, tls_pull);
    return 0;
}

void httpd__tls_conn_free(conn_t *c)
{
    if (c->tls) gnutls_deinit(c->tls);
    c->tls = NULL;
    httpd__peer_put(c->peer);
    c->peer = NULL;
}

/* ---- client certificates ---- */

void httpd__peer_put(httpd_peer_t *p)
{
    if (!p || atomic_fetch_sub(&p->refs, 1) != 1) return;
    free(p->cn);
    for (size_t i = 0; i < p->norgs; i++)
        free(p->orgs[i]);
    free(p->orgs);
    free(p);
}

/* Value `idx` of attribute `oid` in crt's subject, as UTF-8 (*out malloc'd;
 * NULL: there is no such value). Errors: KP_EINVAL (unreadable, or a NUL
 * inside: "admin\0x" must not pass for "admin"), KP_ENOMEM. */
static int dn_value(gnutls_x509_crt_t crt, const char *oid, unsigned idx, char **out)
{
    char small[256];
    size_t size = sizeof small;
    *out = NULL;
    int rc = gnutls_x509_crt_get_dn_by_oid(crt, oid, idx, 0, small, &size);
    if (rc == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE) return 0;
    char *v = NULL;
    if (rc == GNUTLS_E_SHORT_MEMORY_BUFFER) { /* size: the length and its NUL */
        if (!(v = malloc(size + 1))) return KP_ENOMEM;
        rc = gnutls_x509_crt_get_dn_by_oid(crt, oid, idx, 0, v, &size);
    } else if (!rc) {
        if (!(v = malloc(size + 1))) return KP_ENOMEM;
        memcpy(v, small, size);
    }
    if (rc) {
        free(v);
        return rc == GNUTLS_E_MEMORY_ERROR ? KP_ENOMEM : KP_EINVAL;
    }
    v[size] = '\0';
    if (strlen(v) != size) {
        free(v);
        return KP_EINVAL;
    }
    *out = v;
    return 0;
}

/* p's names from a verified certificate (DER): the subject's last common
 * name, as Go's pkix.Name keeps it, and every organization in order.
 * Errors: KP_EINVAL, KP_ENOMEM. */
static int peer_names(httpd_peer_t *p, const gnutls_datum_t *der)
{
    gnutls_x509_crt_t crt;
    if (gnutls_x509_crt_init(&crt)) return KP_ENOMEM;
    int rc = gnutls_x509_crt_import(crt, der, GNUTLS_X509_FMT_DER) ? KP_EINVAL : 0;
    for (unsigned i = 0; !rc; i++) {
        char *v;
        if ((rc = dn_value(crt, GNUTLS_OID_X520_COMMON_NAME, i, &v)) || !v) break;
        free(p->cn);
        p->cn = v;
    }
    if (!rc && !p->cn && !(p->cn = strdup(""))) rc = KP_ENOMEM;
    for (unsigned i = 0; !rc; i++) {
        char *v;
        if ((rc = dn_value(crt, GNUTLS_OID_X520_ORGANIZATION_NAME, i, &v)) || !v) break;
        char **more = realloc(p->orgs, (p->norgs + 1) * sizeof *more);
        if (!more) {
            free(v);
            rc = KP_ENOMEM;
            break;
        }
        p->orgs = more;
        p->orgs[p->norgs++] = v;
    }
    gnutls_x509_crt_deinit(crt);
    return rc;
}

/* Why verification said `status` (GNUTLS_CERT_* bits), the likeliest first. */
static const char *peer_why(unsigned status)
{
    if (status & GNUTLS_CERT_SIGNER_NOT_FOUND) return "signed by an unknown authority";
    if (status & GNUTLS_CERT_EXPIRED) return "expired";
    if (status & GNUTLS_CERT_NOT_ACTIVATED) return "not yet valid";
    if (status & GNUTLS_CERT_PURPOSE_MISMATCH) return "not for client authentication";
    if (status & GNUTLS_CERT_SIGNATURE_FAILURE) return "bad signature";
    if (status & GNUTLS_CERT_INSECURE_ALGORITHM) return "insecure algorithm";
    if (status & GNUTLS_CERT_SIGNER_NOT_CA) return "signed by a certificate that is no CA";
    return "invalid";
}

/* The handshake is done: verify the client's certificate, if one came, into
 * c->peer. Errors: KP_ENOMEM. */
static int peer_check(conn_t *c)
{
    unsigned n = 0;
    const gnutls_datum_t *certs = c->h->client_ca ? gnutls_certificate_get_peers(c->tls, &n) : NULL;
    if (!certs || !n) return 0;
    httpd_peer_t *p = calloc(1, sizeof *p);
    if (!p) return KP_ENOMEM;
    atomic_init(&p->refs, 1);
    c->peer = p;
    gnutls_typed_vdata_st purpose = {.type = GNUTLS_DT_KEY_PURPOSE_OID,
                                     .data = (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT};
    unsigned status = 0;
    if (gnutls_certificate_verify_peers(c->tls, &purpose, 1, &status) < 0)
        status |= GNUTLS_CERT_INVALID;
    int rc = status ? KP_EINVAL : peer_names(p, &certs[0]);
    if (rc == KP_ENOMEM) return rc;
    if (rc) {
        p->state = -1;
        p->why = status ? peer_why(status) : "unreadable subject";
        free(p->cn);
        for (size_t i = 0; i < p->norgs; i++)
            free(p->orgs[i]);
        free(p->orgs);
        p->cn = NULL;
        p->orgs = NULL;
        p->norgs = 0;
        return 0;
    }
    p->state = 1;
    return 0;
}

int httpd__tls_send(conn_t *c, const char *p, size_t n)
{
    while (n) { /* a record at a time; the push into tout never blocks */
        ssize_t k = gnutls_record_send(c->tls, p, n);
        if (k == GNUTLS_E_INTERRUPTED || k == GNUTLS_E_AGAIN) continue;
        if (k <= 0) return k == GNUTLS_E_MEMORY_ERROR ? KP_ENOMEM : KP_EIO;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

void httpd__tls_bye(conn_t *c)
{
    if (c->tls && c->handshaken) gnutls_bye(c->tls, GNUTLS_SHUT_WR);
}

/* The handshake is done: the protocol ALPN chose. */
static int chosen(conn_t *c)
{
    gnutls_datum_t alpn = {NULL, 0};
    c->handshaken = 1;
    if (peer_check(c)) return KP_ENOMEM;
    if (!gnutls_alpn_get_selected_protocol(c->tls, &alpn) && alpn.size == 2 &&
        !memcmp(alpn.data, "h2", 2))
        return httpd__h2_start(c);
    httpd__h1_start(c);
    return 0;
}

/* Whether c->tin holds a complete first record (a ClientHello's): until
 * then a connection costs no TLS session (a peer that sends half a record
 * and waits holds a few hundred bytes). */
static int first_record(const conn_t *c)
{
    size_t have = c->tin.len - c->tin_off;
    if (have < 5) return 0;
    const unsigned char *p = (const unsigned char *)c->tin.p + c->tin_off;
    return have >= 5 + ((size_t)p[3] << 8 | p[4]);
}

void httpd__tls_input(conn_t *c)
{
    httpd_t *h = c->h;
    if (!c->tls) {
        if (!first_record(c)) return;
        if (httpd__tls_conn(c)) {
            httpd__conn_close(c);
            return;
        }
    }
    if (!c->handshaken) {
        int rc = gnutls_handshake(c->tls);
        if (rc == GNUTLS_E_AGAIN || rc == GNUTLS_E_INTERRUPTED) {
            httpd__tls_flush(c);
            return;
        }
        if (rc < 0 || chosen(c)) { /* an alert may be on its way: the close cuts it */
            httpd__conn_close(c);
            return;
        }
        httpd__tls_flush(c);
        if (c->proto == P_H2) httpd__h2_flush(c); /* our SETTINGS, at once */
    }
    while (!c->closing) {
        size_t room = httpd__room(c);
        if (!room) break; /* the protocol resumes us */
        if (room > sizeof h->plain) room = sizeof h->plain;
        ssize_t n = gnutls_record_recv(c->tls, h->plain, room);
        if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED) break;
        if (n == 0) { /* close_notify: the client's end of file */
            httpd__eof(c, 1);
            return;
        }
        if (n < 0) { /* a bad record, a renegotiation, a cut: done */
            httpd__eof(c, n == GNUTLS_E_PREMATURE_TERMINATION);
            return;
        }
        httpd__deliver(c, h->plain, (size_t)n);
    }
    if (c->closing) return;
    httpd__tls_flush(c); /* alerts, key updates */
    if (c->stalled && c->tin.len - c->tin_off < c->tin.max) httpd__set_reading(c, 1);
}
