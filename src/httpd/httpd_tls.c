/*
 * httpd_tls.c -- TLS for httpd.c: GnuTLS sessions over in-memory transport
 * functions (the loop owns the socket; GnuTLS only sees c->tin and
 * c->tout), ALPN choosing HTTP/2 or HTTP/1.1.
 *
 * TLS 1.2 and 1.3 only, as kube-apiserver's default minimum (issue 14: no
 * older version is offered). The server prefers h2 when the client offers
 * it, as Go's does. Client certificates are not asked for (kplane
 * authenticates bearer tokens). A connection's session is made when its
 * first record is complete.
 */
#include "httpd/httpd_int.h"

#include <errno.h>
#include <string.h>

#include "lib/err.h"

#define TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

int httpd__tls_global(httpd_t *h, const char *cert_pem, const char *key_pem)
{
    if (gnutls_certificate_allocate_credentials(&h->creds)) {
        h->creds = NULL;
        return KP_ENOMEM;
    }
    gnutls_datum_t cert = {(unsigned char *)cert_pem, (unsigned)strlen(cert_pem)};
    gnutls_datum_t key = {(unsigned char *)key_pem, (unsigned)strlen(key_pem)};
    if (gnutls_certificate_set_x509_key_mem(h->creds, &cert, &key, GNUTLS_X509_FMT_PEM) < 0)
        return KP_EINVAL;
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
    gnutls_transport_set_ptr(c->tls, c);
    gnutls_transport_set_push_function(c->tls, tls_push);
    gnutls_transport_set_pull_function(c->tls, tls_pull);
    return 0;
}

void httpd__tls_conn_free(conn_t *c)
{
    if (c->tls) gnutls_deinit(c->tls);
    c->tls = NULL;
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
