/*
 * alloc_ip.c -- ClusterIPs as IPAddress records, the in-memory hint, and the
 * transactions a Service write runs (alloc.h has the rules).
 *
 * Invariants:
 *  1. A hint bit is set for every address whose record this process has
 *     created or seen, and cleared only after its record was deleted (or
 *     found absent); so a clear bit may be tried, and store_create decides.
 *  2. An address a transaction took stays in the store until end(0) deletes
 *     it or a later release does; end(1) deletes only what was given, and
 *     only while the record still names the transaction's Service.
 *  3. Every open transaction is on a->open until end, so the repair pass
 *     can leave what it holds alone.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "apiserver/kinds/alloc_int.h"
#include "apiserver/http/http.h"
#include "lib/err.h"
#include "lib/log.h"
#include "store/store.h"

void api_alloc_ip_text(uint32_t ip, char out[16])
{
    snprintf(out, 16, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
}

int api_alloc_ip_parse(const char *s, uint32_t *ip)
{
    struct in_addr in;
    if (!s || inet_pton(AF_INET, s, &in) != 1) return KP_EINVAL;
    *ip = ntohl(in.s_addr);
    return 0;
}

int api_alloc_parse_cidr(const char *s, uint32_t *net, int *bits, char *err, size_t errlen)
{
    char addr[32];
    const char *slash = s ? strchr(s, '/') : NULL;
    if (!slash || (size_t)(slash - s) >= sizeof addr) {
        snprintf(err, errlen, "not an IPv4 CIDR (A.B.C.D/N)");
        return KP_EINVAL;
    }
    snprintf(addr, sizeof addr, "%.*s", (int)(slash - s), s);
    char *end;
    long n = strtol(slash + 1, &end, 10);
    uint32_t ip;
    if (api_alloc_ip_parse(addr, &ip) || *end || end == slash + 1 || n < 0 || n > 32) {
        snprintf(err, errlen, "not an IPv4 CIDR (A.B.C.D/N); IPv6 and dual-stack are not "
                              "supported");
        return KP_EINVAL;
    }
    /* kube-apiserver: at most 20 host bits; kplane also wants the first
     * address (the kubernetes Service's) and one more. */
    if (n < 12) {
        snprintf(err, errlen, "too large; for 32-bit addresses, the mask must be >= 12");
        return KP_EINVAL;
    }
    if (n > 30) {
        snprintf(err, errlen, "too small; the mask must be <= 30");
        return KP_EINVAL;
    }
    *bits = (int)n;
    *net = ip & ~(uint32_t)((1ull << (32 - n)) - 1);
    return 0;
}

int api_alloc_parse_ports(const char *s, int *base, int *size, char *err, size_t errlen)
{
    char *end;
    long a = s ? strtol(s, &end, 10) : -1, b;
    if (!s || end == s || a < 1 || a > 65535) goto bad;
    if (!*end) b = a;
    else if (*end == '-' || *end == '+') {
        char sep = *end;
        const char *p = end + 1;
        b = strtol(p, &end, 10);
        if (end == p || *end || b < 0) goto bad;
        if (sep == '+') b = a + b;
    } else goto bad;
    if (b < a || b > 65535) goto bad;
    *base = (int)a;
    *size = (int)(b - a + 1);
    return 0;
bad:
    snprintf(err, errlen, "not a port range (BASE-LAST, BASE+SIZE or PORT; ports 1-65535)");
    return KP_EINVAL;
}

static uint32_t rnd_next(uint32_t *s)
{
    uint32_t x = *s ? *s : 0x9e3779b9u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

/* The hint bit of ip, or -1 outside the usable addresses. */
int64_t alloc__offset(const api_alloc_t *a, uint32_t ip)
{
    if ((ip & ~(uint32_t)((1ull << (32 - a->bits)) - 1)) != a->net) return -1;
    uint32_t off = ip - a->net;
    return off >= 1 && off + 1 < a->size ? (int64_t)off : -1;
}

int api_alloc_ip_in_range(const api_alloc_t *a, uint32_t ip) { return alloc__offset(a, ip) >= 0; }
int api_alloc_port_in_range(const api_alloc_t *a, int port)
{
    return port >= a->port_base && port < a->port_base + a->port_size;
}
const char *api_alloc_cidr(const api_alloc_t *a) { return a->cidr; }
const char *api_alloc_ports(const api_alloc_t *a) { return a->ports; }
uint32_t api_alloc_first_ip(const api_alloc_t *a) { return a->net + 1; }

json_t *alloc__ipaddress(uint32_t ip, const char *ns, const char *name)
{
    char text[16], uid[37], now[32];
    api_alloc_ip_text(ip, text);
    if (api_new_uid(uid)) return NULL;
    api_now_rfc3339(now);
    /* ParentReference.group is omitempty: "" (core) is left out. */
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:{s:s, s:s}}, s:{s:{s:s, s:s, s:s}}}",
                     "kind", "IPAddress", "apiVersion", "networking.k8s.io/v1", "metadata",
                     "name", text, "uid", uid, "creationTimestamp", now, "labels",
                     "ipaddress.kubernetes.io/ip-family", "IPv4",
                     "ipaddress.kubernetes.io/managed-by", "ipallocator.k8s.io", "spec",
                     "parentRef", "resource", "services", "namespace", ns, "name", name);
}

void alloc__ip_key(uint32_t ip, char *key, size_t n)
{
    char text[16];
    api_alloc_ip_text(ip, text);
    snprintf(key, n, "%s%s", API_ALLOC_IP_KEY_PREFIX, text);
}

/* Create the record of ip for ns/name. KP_EEXIST: someone holds it. */
int alloc__record_ip(api_alloc_t *a, uint32_t ip, const char *ns, const char *name)
{
    char key[96];
    alloc__ip_key(ip, key, sizeof key);
    json_t *obj = alloc__ipaddress(ip, ns, name);
    char *text = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
    json_decref(obj);
    int rc = text ? store_create(a->store, key, text, strlen(text), NULL) : KP_ENOMEM;
    free(text);
    return rc;
}

/* Delete the record of ip if it names ns/name (any owner: ns NULL). */
int alloc__unrecord_ip(api_alloc_t *a, uint32_t ip, const char *ns, const char *name)
{
    char key[96];
    alloc__ip_key(ip, key, sizeof key);
    for (int attempt = 0; attempt < 4; attempt++) {
        store_kv_t *kv = NULL;
        int rc = store_get(a->store, key, 0, &kv);
        if (rc == KP_ENOTFOUND) return 0;
        if (rc) return rc;
        json_t *doc = json_loadb(kv->value, kv->value_len, 0, NULL);
        const json_t *ref = json_object_get(json_object_get(doc, "spec"), "parentRef");
        int mine = !ns || (!strcmp(api_json_str(ref, "namespace"), ns) &&
                           !strcmp(api_json_str(ref, "name"), name) &&
                           !strcmp(api_json_str(ref, "resource"), "services"));
        json_decref(doc);
        int64_t rev = kv->mod_rev;
        free(kv);
        if (!mine) return KP_EEXIST;
        rc = store_delete(a->store, key, rev, NULL);
        if (rc != KP_ECONFLICT) return rc == KP_ENOTFOUND ? 0 : rc;
    }
    return KP_ECONFLICT;
}

void alloc__hint_set(api_alloc_t *a, uint32_t ip, int on)
{
    int64_t off = alloc__offset(a, ip);
    if (off < 0) return;
    pthread_mutex_lock(&a->mu);
    if (alloc__bit(a->hint, (uint32_t)off) != on) {
        alloc__set(a->hint, (uint32_t)off, on);
        if (on) a->used++;
        else a->used--;
    }
    pthread_mutex_unlock(&a->mu);
}

int alloc__hint_reload(api_alloc_t *a)
{
    size_t words = (a->size + 63) / 64;
    uint64_t *fresh = calloc(words, sizeof *fresh);
    if (!fresh) return KP_ENOMEM;
    size_t used = 0;
    char after[STORE_KEY_MAX + 1] = "";
    int64_t rev = 0;
    int rc = 0;
    for (;;) {
        store_range_t *page = NULL;
        if ((rc = store_range(a->store, API_ALLOC_IP_KEY_PREFIX, after, 1000, rev, &page))) break;
        rev = page->revision;
        for (size_t i = 0; i < page->count; i++) {
            uint32_t ip;
            const char *k = page->kvs[i].key + strlen(API_ALLOC_IP_KEY_PREFIX);
            int64_t off = api_alloc_ip_parse(k, &ip) ? -1 : alloc__offset(a, ip);
            if (off >= 0 && !alloc__bit(fresh, (uint32_t)off)) {
                alloc__set(fresh, (uint32_t)off, 1);
                used++;
            }
        }
        int more = page->more && page->count;
        if (page->count) snprintf(after, sizeof after, "%s", page->kvs[page->count - 1].key);
        store_range_free(page);
        if (!more) break;
    }
    if (rc) {
        free(fresh);
        return rc;
    }
    /* What open transactions took stays set (their records may be newer
     * than the read, and are theirs until they end). */
    pthread_mutex_lock(&a->mu);
    for (api_alloc_txn_t *t = a->open; t; t = t->next) {
        int64_t off = t->ip_taken ? alloc__offset(a, t->ip_taken) : -1;
        if (off >= 0 && !alloc__bit(fresh, (uint32_t)off)) {
            alloc__set(fresh, (uint32_t)off, 1);
            used++;
        }
    }
    free(a->hint);
    a->hint = fresh;
    a->used = used;
    pthread_mutex_unlock(&a->mu);
    return 0;
}

size_t api_alloc_ips_used(api_alloc_t *a)
{
    pthread_mutex_lock(&a->mu);
    size_t n = a->used;
    pthread_mutex_unlock(&a->mu);
    return n;
}

int api_alloc_open(store_t *store, const char *cidr, const char *ports, api_alloc_t **out)
{
    char err[128];
    api_alloc_t *a = calloc(1, sizeof *a);
    if (!a) return KP_ENOMEM;
    a->store = store;
    int rc = api_alloc_parse_cidr(cidr ? cidr : API_ALLOC_DEFAULT_CIDR, &a->net, &a->bits, err,
                                  sizeof err);
    if (!rc) rc = api_alloc_parse_ports(ports ? ports : API_ALLOC_DEFAULT_PORTS, &a->port_base,
                                        &a->port_size, err, sizeof err);
    if (rc) {
        free(a);
        return rc;
    }
    a->size = (uint32_t)(1ull << (32 - a->bits));
    /* KEP-3070: min(max(16, size/16), 256), none for ranges of 16 or less. */
    a->band = a->size <= 16 ? 0 : a->size / 16 < 16 ? 16 : a->size / 16 > 256 ? 256 : a->size / 16;
    char net[16];
    api_alloc_ip_text(a->net, net);
    snprintf(a->cidr, sizeof a->cidr, "%s/%d", net, a->bits);
    snprintf(a->ports, sizeof a->ports, "%d-%d", a->port_base, a->port_base + a->port_size - 1);
    pthread_mutex_init(&a->mu, NULL);
    pthread_mutex_init(&a->port_mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    if (!(a->port_leaks = calloc((size_t)a->port_size, 1))) rc = KP_ENOMEM;
    if (!rc) rc = alloc__hint_reload(a);
    if (rc) {
        api_alloc_close(a);
        return rc;
    }
    *out = a;
    return 0;
}

void api_alloc_close(api_alloc_t *a)
{
    if (!a) return;
    api_alloc_stop(a);
    pthread_cond_destroy(&a->cv);
    pthread_mutex_destroy(&a->mu);
    pthread_mutex_destroy(&a->port_mu);
    free(a->hint);
    free(a->port_leaks);
    free(a);
}

/* ---- transactions ---- */

int api_alloc_txn_begin(api_alloc_t *a, int dry_run, const char *ns, const char *name,
                        api_alloc_txn_t **out)
{
    api_alloc_txn_t *t = calloc(1, sizeof *t);
    if (!t) return KP_ENOMEM;
    t->a = a;
    t->dry_run = dry_run;
    snprintf(t->ns, sizeof t->ns, "%s", ns);
    snprintf(t->name, sizeof t->name, "%s", name);
    if (getrandom(&t->rnd, sizeof t->rnd, 0) != (ssize_t)sizeof t->rnd)
        t->rnd = (uint32_t)time(NULL);
    pthread_mutex_lock(&a->mu);
    t->next = a->open;
    if (a->open) a->open->prev = t;
    a->open = t;
    pthread_mutex_unlock(&a->mu);
    *out = t;
    return 0;
}

/* A clear hint bit in [lo, hi] starting at `start` (wrapping), set before
 * returning it; -1 if none. Under a->mu. */
static int64_t claim_hint(api_alloc_t *a, uint32_t lo, uint32_t hi, uint32_t start)
{
    if (lo > hi) return -1;
    uint32_t n = hi - lo + 1;
    for (uint32_t i = 0; i < n;) {
        uint32_t off = lo + (start - lo + i) % n;
        uint64_t w = a->hint[off >> 6];
        if (w == UINT64_MAX && (off & 63) == 0 && n - i >= 64 && off + 63 <= hi) {
            i += 64; /* a full word */
            continue;
        }
        if (!alloc__bit(a->hint, off)) {
            alloc__set(a->hint, off, 1);
            a->used++;
            return off;
        }
        i++;
    }
    return -1;
}

int api_alloc_txn_ip(api_alloc_txn_t *t, uint32_t ip, uint32_t *out)
{
    api_alloc_t *a = t->a;
    if (t->ip_taken) return KP_ETOOLARGE;
    if (ip) {
        if (alloc__offset(a, ip) < 0) return KP_EINVAL;
        *out = ip;
        if (t->dry_run) return 0; /* Kubernetes' dry run checks the range only */
        int rc = alloc__record_ip(a, ip, t->ns, t->name);
        if (rc) return rc;
        alloc__hint_set(a, ip, 1);
        t->ip_taken = ip;
        return 0;
    }
    if (t->dry_run) { /* Kubernetes' dry run answers the network address */
        *out = a->net;
        return 0;
    }
    int reloaded = 0;
    for (;;) {
        pthread_mutex_lock(&a->mu);
        uint32_t last = a->size - 2, mid = 1 + a->band;
        int64_t off = -1;
        if (mid <= last) off = claim_hint(a, mid, last, mid + rnd_next(&t->rnd) % (last - mid + 1));
        if (off < 0 && a->band) off = claim_hint(a, 1, a->band, 1 + rnd_next(&t->rnd) % a->band);
        pthread_mutex_unlock(&a->mu);
        if (off < 0) {
            /* The hint may be stale (records deleted behind its back): read
             * the records once before answering full. */
            if (reloaded++) return KP_ENOSPC;
            int rc = alloc__hint_reload(a);
            if (rc) return rc;
            continue;
        }
        uint32_t cand = a->net + (uint32_t)off;
        int rc = alloc__record_ip(a, cand, t->ns, t->name);
        if (rc == KP_EEXIST) continue; /* taken behind the hint's back: it stays set */
        if (rc) {
            alloc__hint_set(a, cand, 0);
            return rc;
        }
        t->ip_taken = cand;
        *out = cand;
        return 0;
    }
}

int api_alloc_txn_give_ip(api_alloc_txn_t *t, uint32_t ip)
{
    t->ip_given = ip;
    return 0;
}

static void release_ip(api_alloc_t *a, uint32_t ip, const char *ns, const char *name)
{
    int rc = alloc__unrecord_ip(a, ip, ns, name);
    if (!rc) alloc__hint_set(a, ip, 0);
    else if (rc != KP_EEXIST) {
        char text[16];
        api_alloc_ip_text(ip, text);
        log_warn("alloc", "releasing %s of %s/%s: %s (the repair pass will)", text, ns, name,
                 err_str(rc));
    }
}

void api_alloc_release(api_alloc_t *a, const char *ns, const char *name, uint32_t ip,
                       const int *ports, size_t nports)
{
    api_alloc_txn_t *t;
    if (api_alloc_txn_begin(a, 0, ns, name, &t)) {
        if (ip) release_ip(a, ip, ns, name);
        return; /* ports: the repair pass */
    }
    if (ip) api_alloc_txn_give_ip(t, ip);
    for (size_t i = 0; i < nports; i++) api_alloc_txn_give_port(t, ports[i]);
    api_alloc_txn_end(t, 1);
}

void api_alloc_txn_end(api_alloc_txn_t *t, int committed)
{
    if (!t) return;
    api_alloc_t *a = t->a;
    if (!t->dry_run) {
        if (committed) {
            if (t->ip_given) release_ip(a, t->ip_given, t->ns, t->name);
            if (t->ngiven) alloc__ports_release(a, t->given, t->ngiven);
        } else {
            if (t->ip_taken) release_ip(a, t->ip_taken, t->ns, t->name);
            if (t->ntaken) alloc__ports_release(a, t->taken, t->ntaken);
        }
    }
    pthread_mutex_lock(&a->mu);
    if (t->prev) t->prev->next = t->next;
    else a->open = t->next;
    if (t->next) t->next->prev = t->prev;
    pthread_mutex_unlock(&a->mu);
    free(t);
}
