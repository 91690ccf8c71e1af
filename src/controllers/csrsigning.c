/*
 * csrsigning.c -- the CSR signing controller (Kubernetes' csrsigning in
 * kube-controller-manager, pkg/controller/certificates/signer).
 *
 * INVARIANT: a CertificateSigningRequest for one of the signers
 * kubernetes.io/kube-apiserver-client, kubernetes.io/kube-apiserver-client-
 * kubelet or kubernetes.io/kubelet-serving that is Approved and not Failed
 * ends with exactly one of: status.certificate (a PEM certificate the
 * cluster CA signed for the request's subject, SANs and public key, with
 * the requested usages, valid for spec.expirationSeconds, between 600 s
 * and the signing duration, one year by default), or a Failed condition
 * (reason SignerValidationFailure) when the signer's checks refuse it.
 * Once a certificate is set, nothing here touches the object again.
 *
 * It owns: status.certificate and the Failed condition of those CSRs,
 * written through the status subresource (which keeps the approval
 * conditions, strategy_csr.c). It reads the CSR informer only.
 *
 * The CA comes from the manager's configuration (signing_cert_pem,
 * signing_key_pem: kplane server passes its own, DATA_DIR/ca.crt and
 * ca.key); without it the controller does not run (init: KP_ENOTFOUND,
 * which the manager reports and skips), as kube-controller-manager skips
 * it without --cluster-signing-cert-file/--cluster-signing-key-file.
 *
 * The certificate (Kubernetes' PermissiveSigningPolicy): subject, public
 * key and SANs (DNS, IP, email, URI) from the request, no other
 * extension of it; key usage and extended key usage from spec.usages;
 * basic constraints CA:false; notBefore 5 minutes back (clock skew);
 * notAfter notBefore + duration, or now + duration when that is under 8
 * hours; never past the CA's own notAfter. GnuTLS parses and builds it.
 */
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "controllers/controller.h"
#include "controllers/csrsigning_int.h"
#include "lib/base64.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"

#define BACKDATE_S    300
#define SHORT_S       (8 * 3600)
#define MIN_S         600
#define MAX_REQUEST   65536 /* bytes of spec.request, decoded */
#define MAX_SANS      256
#define FIELD_MAX     1024  /* a DN value or SAN, bytes */

struct csr_ca {
    gnutls_x509_crt_t crt;
    gnutls_x509_privkey_t key;
    time_t not_after;
    pthread_mutex_t mu; /* GnuTLS does not promise concurrent signing with one key */
};

int csr_ca_new(const char *cert_pem, const char *key_pem, csr_ca_t **out)
{
    *out = NULL;
    if (!cert_pem || !key_pem) return KP_EINVAL;
    csr_ca_t *ca = calloc(1, sizeof *ca);
    if (!ca) return KP_ENOMEM;
    int rc = KP_ENOMEM;
    if (gnutls_x509_crt_init(&ca->crt)) goto fail;
    if (gnutls_x509_privkey_init(&ca->key)) goto fail;
    rc = KP_EINVAL;
    gnutls_datum_t c = {(unsigned char *)cert_pem, (unsigned)strlen(cert_pem)};
    gnutls_datum_t k = {(unsigned char *)key_pem, (unsigned)strlen(key_pem)};
    if (gnutls_x509_crt_import(ca->crt, &c, GNUTLS_X509_FMT_PEM) ||
        gnutls_x509_privkey_import(ca->key, &k, GNUTLS_X509_FMT_PEM))
        goto fail;
    ca->not_after = gnutls_x509_crt_get_expiration_time(ca->crt);
    pthread_mutex_init(&ca->mu, NULL);
    *out = ca;
    return 0;
fail:
    if (ca->key) gnutls_x509_privkey_deinit(ca->key);
    if (ca->crt) gnutls_x509_crt_deinit(ca->crt);
    free(ca);
    return rc;
}

void csr_ca_free(csr_ca_t *ca)
{
    if (!ca) return;
    pthread_mutex_destroy(&ca->mu);
    gnutls_x509_privkey_deinit(ca->key);
    gnutls_x509_crt_deinit(ca->crt);
    free(ca);
}

int64_t csr_duration(int64_t req, int64_t max_s)
{
    if (max_s <= 0) max_s = CSR_SIGNING_DURATION_S;
    if (req < 0 || req > max_s) return max_s;
    return req < MIN_S ? MIN_S : req;
}

/* ---- the request ---- */

/* What the signers' checks read from a request. */
typedef struct req_facts {
    char cn[FIELD_MAX];
    size_t norgs;
    int org_is_nodes; /* exactly one organization, "system:nodes" */
    size_t dns, ip, email, uri;
} req_facts_t;

static void read_facts(gnutls_x509_crq_t crq, req_facts_t *f)
{
    memset(f, 0, sizeof *f);
    size_t n = sizeof f->cn;
    if (gnutls_x509_crq_get_dn_by_oid(crq, GNUTLS_OID_X520_COMMON_NAME, 0, 0, f->cn, &n))
        f->cn[0] = '\0';
    char org[FIELD_MAX];
    for (unsigned i = 0; i < MAX_SANS; i++) {
        n = sizeof org;
        if (gnutls_x509_crq_get_dn_by_oid(crq, GNUTLS_OID_X520_ORGANIZATION_NAME, i, 0, org, &n))
            break;
        f->norgs++;
        if (i == 0) f->org_is_nodes = !strcmp(org, "system:nodes");
    }
    if (f->norgs != 1) f->org_is_nodes = 0;
    char san[FIELD_MAX];
    for (unsigned i = 0; i < MAX_SANS; i++) {
        n = sizeof san;
        unsigned type = 0;
        int r = gnutls_x509_crq_get_subject_alt_name(crq, i, san, &n, &type, NULL);
        if (r == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE) break;
        if (r < 0) break; /* over FIELD_MAX: fill_cert refuses the request */
        f->dns += type == GNUTLS_SAN_DNSNAME;
        f->ip += type == GNUTLS_SAN_IPADDRESS;
        f->email += type == GNUTLS_SAN_RFC822NAME;
        f->uri += type == GNUTLS_SAN_URI;
    }
}

/* 1 if spec.usages, as a set, is exactly `want` (NULL-terminated). */
static int usages_are(const json_t *usages, const char *const *want)
{
    size_t i, nwant = 0;
    json_t *u;
    for (const char *const *w = want; *w; w++) {
        int found = 0;
        json_array_foreach(usages, i, u) found |= !strcmp(json_string_value(u) ? json_string_value(u) : "", *w);
        if (!found) return 0;
        nwant++;
    }
    json_array_foreach(usages, i, u) {
        const char *s = json_string_value(u);
        int in = 0;
        for (const char *const *w = want; *w; w++) in |= s && !strcmp(s, *w);
        if (!in) return 0;
    }
    return nwant > 0;
}

/* The signer's checks (Kubernetes' isKubeletServing, isKubeletClient,
 * isKubeAPIServerClient with the helpers' wording): "" if the request
 * passes, else why in `why`. */
static void signer_checks(const char *signer, const req_facts_t *f, const json_t *usages,
                          char *why, size_t n)
{
    static const char *const kubelet_client[] = {"client auth", "digital signature",
                                                 "key encipherment", NULL};
    static const char *const kubelet_client_norsa[] = {"client auth", "digital signature", NULL};
    static const char *const serving[] = {"digital signature", "key encipherment", "server auth",
                                          NULL};
    static const char *const serving_norsa[] = {"digital signature", "server auth", NULL};
    const int nodes_cn = !strncmp(f->cn, "system:node:", 12);
    const char *err = NULL;
    why[0] = '\0';
    if (!strcmp(signer, "kubernetes.io/kube-apiserver-client")) {
        size_t i;
        json_t *u;
        int client = 0;
        json_array_foreach(usages, i, u) {
            const char *s = json_string_value(u) ? json_string_value(u) : "";
            if (!strcmp(s, "client auth")) client = 1;
            else if (strcmp(s, "digital signature") && strcmp(s, "key encipherment")) {
                snprintf(why, n, "invalid usage for client certificate: %s", s);
                return;
            }
        }
        if (!client) snprintf(why, n, "invalid usage for client certificate: client auth");
        return;
    }
    if (!f->org_is_nodes) err = "subject organization is not system:nodes";
    if (!strcmp(signer, "kubernetes.io/kube-apiserver-client-kubelet")) {
        if (err) {
        } else if (f->dns) err = "DNS subjectAltNames are not allowed";
        else if (f->email) err = "Email subjectAltNames are not allowed";
        else if (f->ip) err = "IP subjectAltNames are not allowed";
        else if (f->uri) err = "URI subjectAltNames are not allowed";
        else if (!nodes_cn) err = "subject common name does not begin with system:node:";
        else if (!usages_are(usages, kubelet_client) && !usages_are(usages, kubelet_client_norsa))
            err = "usages did not match [client auth digital signature key encipherment]";
    } else {
        if (err) {
        } else if (!f->dns && !f->ip) err = "DNS or IP subjectAltName is required";
        else if (f->email) err = "Email subjectAltNames are not allowed";
        else if (f->uri) err = "URI subjectAltNames are not allowed";
        else if (!usages_are(usages, serving) && !usages_are(usages, serving_norsa))
            err = "usages did not match [digital signature key encipherment server auth]";
        else if (!nodes_cn) err = "subject common name does not begin with system:node:";
    }
    if (err) snprintf(why, n, "%s", err);
}

static int has_true_condition(const json_t *csr, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(csr, "status"), "conditions"), i, c) {
        const char *t = json_string_value(json_object_get(c, "type"));
        const char *s = json_string_value(json_object_get(c, "status"));
        if (t && s && !strcmp(t, type) && !strcmp(s, "True")) return 1;
    }
    return 0;
}

/* The parsed spec.request (PEM inside base64). */
static int parse_request(const json_t *spec, gnutls_x509_crq_t *out)
{
    const char *b64 = json_string_value(json_object_get(spec, "request"));
    size_t n = b64 ? strlen(b64) : 0, len = 0;
    if (!n || n / 4 * 3 > MAX_REQUEST) return KP_EINVAL;
    unsigned char *pem = malloc(n);
    if (!pem) return KP_ENOMEM;
    int rc = base64_decode(b64, n, pem, n, &len) ? KP_EINVAL : 0;
    if (!rc && gnutls_x509_crq_init(out)) rc = KP_ENOMEM;
    if (!rc) {
        gnutls_datum_t d = {pem, (unsigned)len};
        if (gnutls_x509_crq_import(*out, &d, GNUTLS_X509_FMT_PEM) < 0 ||
            gnutls_x509_crq_verify(*out, 0) < 0) {
            gnutls_x509_crq_deinit(*out);
            rc = KP_EINVAL;
        }
    }
    free(pem);
    return rc;
}

/* ---- the certificate ---- */

static const struct {
    const char *usage;
    unsigned bit;
} key_usages[] = {
    {"signing", GNUTLS_KEY_DIGITAL_SIGNATURE},     {"digital signature", GNUTLS_KEY_DIGITAL_SIGNATURE},
    {"content commitment", GNUTLS_KEY_NON_REPUDIATION},
    {"key encipherment", GNUTLS_KEY_KEY_ENCIPHERMENT}, {"key agreement", GNUTLS_KEY_KEY_AGREEMENT},
    {"data encipherment", GNUTLS_KEY_DATA_ENCIPHERMENT}, {"cert sign", GNUTLS_KEY_KEY_CERT_SIGN},
    {"crl sign", GNUTLS_KEY_CRL_SIGN},             {"encipher only", GNUTLS_KEY_ENCIPHER_ONLY},
    {"decipher only", GNUTLS_KEY_DECIPHER_ONLY},
};

/* Extended key usages in Go's x509.ExtKeyUsage order (Kubernetes sorts by
 * it). */
static const struct {
    const char *usage, *oid;
} ext_usages[] = {
    {"any", "2.5.29.37.0"},
    {"server auth", GNUTLS_KP_TLS_WWW_SERVER},
    {"client auth", GNUTLS_KP_TLS_WWW_CLIENT},
    {"code signing", GNUTLS_KP_CODE_SIGNING},
    {"email protection", GNUTLS_KP_EMAIL_PROTECTION},
    {"s/mime", GNUTLS_KP_EMAIL_PROTECTION},
    {"ipsec end system", "1.3.6.1.5.5.7.3.5"},
    {"ipsec tunnel", "1.3.6.1.5.5.7.3.6"},
    {"ipsec user", "1.3.6.1.5.5.7.3.7"},
    {"timestamping", GNUTLS_KP_TIME_STAMPING},
    {"ocsp signing", GNUTLS_KP_OCSP_SIGNING},
    {"microsoft sgc", "1.3.6.1.4.1.311.10.3.3"},
    {"netscape sgc", "2.16.840.1.113730.4.1"},
};
#define N_EXT_USAGES (sizeof ext_usages / sizeof ext_usages[0])

static int has_usage(const json_t *usages, const char *u)
{
    size_t i;
    json_t *v;
    json_array_foreach(usages, i, v) if (json_string_value(v) && !strcmp(json_string_value(v), u)) return 1;
    return 0;
}

/* Usages, SANs and validity onto crt (its DN and key already set). */
static int fill_cert(gnutls_x509_crt_t crt, gnutls_x509_crq_t crq, const json_t *usages,
                     time_t nb, time_t na)
{
    unsigned char serial[16];
    if (getrandom(serial, sizeof serial, 0) != (ssize_t)sizeof serial) return KP_EIO;
    serial[0] &= 0x7f;
    if (gnutls_x509_crt_set_version(crt, 3) ||
        gnutls_x509_crt_set_serial(crt, serial, sizeof serial) ||
        gnutls_x509_crt_set_activation_time(crt, nb) ||
        gnutls_x509_crt_set_expiration_time(crt, na) ||
        gnutls_x509_crt_set_basic_constraints(crt, 0, -1))
        return KP_EIO;
    unsigned bits = 0;
    for (size_t i = 0; i < sizeof key_usages / sizeof key_usages[0]; i++)
        if (has_usage(usages, key_usages[i].usage)) bits |= key_usages[i].bit;
    if (bits && gnutls_x509_crt_set_key_usage(crt, bits)) return KP_EIO;
    for (size_t i = 0; i < N_EXT_USAGES; i++) {
        if (!has_usage(usages, ext_usages[i].usage)) continue;
        int dup = 0; /* s/mime and email protection are one OID */
        for (size_t j = 0; j < i; j++)
            dup |= !strcmp(ext_usages[j].oid, ext_usages[i].oid) && has_usage(usages, ext_usages[j].usage);
        if (!dup && gnutls_x509_crt_set_key_purpose_oid(crt, ext_usages[i].oid, 0)) return KP_EIO;
    }
    char san[FIELD_MAX];
    for (unsigned i = 0; i < MAX_SANS; i++) {
        size_t n = sizeof san;
        unsigned type = 0;
        int r = gnutls_x509_crq_get_subject_alt_name(crq, i, san, &n, &type, NULL);
        if (r == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE) break;
        if (r < 0) return KP_EINVAL;
        if (type != GNUTLS_SAN_DNSNAME && type != GNUTLS_SAN_IPADDRESS &&
            type != GNUTLS_SAN_RFC822NAME && type != GNUTLS_SAN_URI)
            continue;
        if (gnutls_x509_crt_set_subject_alt_name(crt, type, san, (unsigned)n, GNUTLS_FSAN_APPEND))
            return KP_EIO;
    }
    return 0;
}

/* Sign the parsed request: the PEM certificate into *pem. */
static int make_cert(csr_ca_t *ca, gnutls_x509_crq_t crq, const json_t *spec, int64_t now,
                     int64_t max_s, char **pem)
{
    const json_t *exp = json_object_get(spec, "expirationSeconds");
    int64_t ttl = csr_duration(json_is_integer(exp) ? json_integer_value(exp) : -1, max_s);
    time_t nb = (time_t)(now - BACKDATE_S);
    time_t na = ttl < SHORT_S ? (time_t)(now + ttl) : nb + (time_t)ttl;
    if (ca->not_after != (time_t)-1 && na > ca->not_after) na = ca->not_after;
    gnutls_x509_crt_t crt;
    if (gnutls_x509_crt_init(&crt)) return KP_ENOMEM;
    gnutls_datum_t d = {NULL, 0};
    /* The subject DN and public key; set_crq checks the signature again. */
    int rc = gnutls_x509_crt_set_crq(crt, crq) ? KP_EINVAL : 0;
    if (!rc) rc = fill_cert(crt, crq, json_object_get(spec, "usages"), nb, na);
    if (!rc) {
        pthread_mutex_lock(&ca->mu);
        if (gnutls_x509_crt_sign2(crt, ca->crt, ca->key, GNUTLS_DIG_SHA256, 0)) rc = KP_EIO;
        pthread_mutex_unlock(&ca->mu);
    }
    if (!rc && gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &d)) rc = KP_EIO;
    if (!rc) {
        *pem = malloc(d.size + 1);
        if (*pem) {
            memcpy(*pem, d.data, d.size);
            (*pem)[d.size] = '\0';
        } else {
            rc = KP_ENOMEM;
        }
    }
    gnutls_free(d.data);
    gnutls_x509_crt_deinit(crt);
    return rc;
}

int csr_sign(csr_ca_t *ca, const json_t *csr, int64_t now, int64_t max_s, char **pem,
             char *why, size_t why_len)
{
    static const char *const ours[] = {"kubernetes.io/kube-apiserver-client",
                                       "kubernetes.io/kube-apiserver-client-kubelet",
                                       "kubernetes.io/kubelet-serving", NULL};
    *pem = NULL;
    why[0] = '\0';
    const json_t *spec = json_object_get(csr, "spec");
    const char *signer = json_string_value(json_object_get(spec, "signerName"));
    const char *cert = json_string_value(json_object_get(json_object_get(csr, "status"),
                                                         "certificate"));
    if ((cert && *cert) || !has_true_condition(csr, "Approved") ||
        has_true_condition(csr, "Failed") || !signer)
        return 0;
    int mine = 0;
    for (const char *const *s = ours; *s; s++) mine |= !strcmp(signer, *s);
    if (!mine) return 0;
    gnutls_x509_crq_t crq;
    int rc = parse_request(spec, &crq);
    if (rc) return rc;
    req_facts_t f;
    read_facts(crq, &f);
    signer_checks(signer, &f, json_object_get(spec, "usages"), why, why_len);
    if (!why[0]) rc = make_cert(ca, crq, spec, now, max_s, pem);
    gnutls_x509_crq_deinit(crq);
    return rc;
}

/* ---- the controller ---- */

static const kc_resource_t csr_resource = {"certificates.k8s.io", "v1",
                                           "certificatesigningrequests",
                                           "CertificateSigningRequest", 0};

typedef struct signing {
    ctrl_t *c;
    kc_informer_t *csrs;
    csr_ca_t *ca;
    int64_t max_s;
} signing_t;

static void on_add(void *arg, const json_t *obj)
{
    signing_t *s = arg;
    ctrl_enqueue_obj(s->c, obj);
}

static void on_update(void *arg, const json_t *old, const json_t *obj)
{
    (void)old;
    on_add(arg, obj);
}

static int signing_init(ctrl_t *c, void **self)
{
    const ctrl_manager_config_t *cfg = ctrl_config(c);
    if (!cfg->signing_cert_pem || !cfg->signing_key_pem) {
        log_info("csrsigning", "no signing CA configured: CSRs are not signed");
        return KP_ENOTFOUND;
    }
    signing_t *s = calloc(1, sizeof *s);
    if (!s) return KP_ENOMEM;
    s->c = c;
    s->max_s = cfg->signing_duration_s > 0 ? cfg->signing_duration_s : CSR_SIGNING_DURATION_S;
    int rc = csr_ca_new(cfg->signing_cert_pem, cfg->signing_key_pem, &s->ca);
    if (rc) {
        free(s);
        return rc;
    }
    s->csrs = ctrl_informer(c, &csr_resource);
    kc_handlers_t h = {.on_add = on_add, .on_update = on_update, .arg = s};
    if (!s->csrs || (rc = kc_informer_add_handlers(s->csrs, &h))) {
        csr_ca_free(s->ca);
        free(s);
        return rc ? rc : KP_ENOMEM;
    }
    *self = s;
    return 0;
}

/* PUT the status of `csr` (a copy of the cached object, owned) after
 * `edit` set its certificate or Failed condition. A CSR deleted meanwhile
 * is done. */
static int put_status(signing_t *s, json_t *csr)
{
    json_t *status = NULL;
    int rc = kc_update(ctrl_client(s->c), &csr_resource, NULL, csr, "status", NULL, &status);
    json_decref(status);
    json_decref(csr);
    return rc == KP_ENOTFOUND ? 0 : rc;
}

static int signing_sync(ctrl_t *c, void *self, const char *key)
{
    (void)c;
    signing_t *s = self;
    json_t *cached = kc_informer_get(s->csrs, key);
    if (!cached) return 0; /* deleted */
    char *pem = NULL, why[512];
    int64_t now = clock_wall_ns() / 1000000000;
    int rc = csr_sign(s->ca, cached, now, s->max_s, &pem, why, sizeof why);
    if (rc || (!pem && !why[0])) {
        if (rc == KP_EINVAL) { /* Kubernetes retries a request it cannot parse, too */
            log_warn("csrsigning", "%s: unable to parse the request", key);
        }
        json_decref(cached);
        return rc;
    }
    json_t *csr = json_deep_copy(cached); /* cached objects are read-only */
    json_decref(cached);
    json_t *st = csr ? json_object_get(csr, "status") : NULL;
    if (csr && !json_is_object(st)) {
        st = json_object();
        json_object_set_new(csr, "status", st);
    }
    if (!st) {
        free(pem);
        json_decref(csr);
        return KP_ENOMEM;
    }
    if (pem) {
        char *b64 = base64_encode(pem, strlen(pem));
        free(pem);
        if (!b64) {
            json_decref(csr);
            return KP_ENOMEM;
        }
        json_object_set_new(st, "certificate", json_string(b64));
        free(b64);
        log_info("csrsigning", "%s: signed", key);
    } else {
        char ts[32];
        time_t t = (time_t)now;
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
        json_t *conds = json_object_get(st, "conditions");
        if (!json_is_array(conds)) {
            conds = json_array();
            json_object_set_new(st, "conditions", conds);
        }
        json_array_append_new(conds, json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", "Failed",
                                               "status", "True", "reason",
                                               "SignerValidationFailure", "message", why,
                                               "lastUpdateTime", ts));
        log_info("csrsigning", "%s: refused: %s", key, why);
    }
    return put_status(s, csr);
}

static void signing_free(void *self)
{
    signing_t *s = self;
    csr_ca_free(s->ca);
    free(s);
}

const ctrl_ops_t ctrl_csrsigning = {
    .name = "csrsigning",
    .service_account = "certificate-controller",
    .event_source = "csrsigning-controller",
    .init = signing_init,
    .sync = signing_sync,
    .free = signing_free,
};
