/*
 * alloc_repair.c -- the repair pass: make the record of allocated addresses
 * match the Services (Kubernetes' RepairIPAddress and the NodePort repair
 * controller in one pass).
 *
 * Order of reads, and why a pass never frees what a write in flight needs:
 *   1. the IPAddress records and the port bitmap (revision R),
 *   2. the addresses open transactions hold (taken, or to give back),
 *   3. the Services.
 * An address recorded before 1 whose transaction was still open at 2 is
 * held; one whose transaction ended before 2 has its Service (committed) in
 * 3, or was given back by the transaction itself. A port bitmap changed
 * after 1 fails the compare-and-swap at R: the pass leaves ports for the
 * next time. What remains is a delete whose Service left the store and
 * whose release has not run yet: later passes (not the one at start, when
 * nothing runs) therefore free an IPAddress only 60 s after its creation and
 * a port only once 3 passes in a row found it leaked, as Kubernetes does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "apiserver/kinds/alloc_int.h"
#include "apiserver/http/http.h"
#include "lib/err.h"
#include "lib/log.h"
#include "store/store.h"

#define SERVICES_PREFIX "/registry/core/services/"
#define ORPHAN_GRACE_S 60
#define PORT_LEAK_PASSES 3

typedef struct rec {
    uint32_t ip;
    int64_t mod_rev;
    int64_t created;  /* unix seconds, 0 if unknown */
    int managed;      /* labelled ipaddress.kubernetes.io/managed-by: ipallocator.k8s.io */
    char owner[320];  /* "ns/name" of a parentRef to a Service, "" if none */
} rec_t;

typedef struct svc_ip {
    uint32_t ip;
    char owner[320];
} svc_ip_t;

typedef struct vec {
    void *p;
    size_t n, cap, size;
} vec_t;

static void *vec_push(vec_t *v)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 64;
        void *p = realloc(v->p, cap * v->size);
        if (!p) return NULL;
        v->p = p;
        v->cap = cap;
    }
    void *e = (char *)v->p + v->n++ * v->size;
    memset(e, 0, v->size);
    return e;
}

static int cmp_ip(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return a < b ? -1 : a > b;
}

static int64_t parse_time(const char *s)
{
    struct tm tm = {0};
    const char *end = s && *s ? strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm) : NULL;
    return end && !*end ? (int64_t)timegm(&tm) : 0;
}

/* Call fn on every value under prefix, one consistent snapshot. */
static int each_value(store_t *st, const char *prefix, int (*fn)(void *arg, const store_kv_t *kv),
                      void *arg)
{
    char after[STORE_KEY_MAX + 1] = "";
    int64_t rev = 0;
    for (;;) {
        store_range_t *page = NULL;
        int rc = store_range(st, prefix, after, 500, rev, &page);
        if (rc) return rc;
        rev = page->revision;
        for (size_t i = 0; i < page->count && !rc; i++) rc = fn(arg, &page->kvs[i]);
        int more = page->more && page->count;
        if (page->count) snprintf(after, sizeof after, "%s", page->kvs[page->count - 1].key);
        store_range_free(page);
        if (rc) return rc;
        if (!more) return 0;
    }
}

static int add_rec(void *arg, const store_kv_t *kv)
{
    vec_t *v = arg;
    uint32_t ip;
    if (api_alloc_ip_parse(kv->key + strlen(API_ALLOC_IP_KEY_PREFIX), &ip)) return 0;
    json_t *doc = json_loadb(kv->value, kv->value_len, 0, NULL);
    rec_t *r = vec_push(v);
    if (!r) {
        json_decref(doc);
        return KP_ENOMEM;
    }
    r->ip = ip;
    r->mod_rev = kv->mod_rev;
    const json_t *meta = json_object_get(doc, "metadata");
    r->created = parse_time(api_json_str(meta, "creationTimestamp"));
    r->managed = !strcmp(api_json_str(json_object_get(meta, "labels"),
                                      "ipaddress.kubernetes.io/managed-by"),
                         "ipallocator.k8s.io");
    const json_t *ref = json_object_get(json_object_get(doc, "spec"), "parentRef");
    if (!strcmp(api_json_str(ref, "resource"), "services") && !*api_json_str(ref, "group"))
        snprintf(r->owner, sizeof r->owner, "%s/%s", api_json_str(ref, "namespace"),
                 api_json_str(ref, "name"));
    json_decref(doc);
    return 0;
}

typedef struct svc_scan {
    api_alloc_t *a;
    vec_t ips;     /* svc_ip_t */
    uint64_t *ports;
} svc_scan_t;

static int add_svc(void *arg, const store_kv_t *kv)
{
    svc_scan_t *s = arg;
    json_t *doc = json_loadb(kv->value, kv->value_len, 0, NULL);
    const json_t *meta = json_object_get(doc, "metadata"), *spec = json_object_get(doc, "spec");
    char owner[320];
    snprintf(owner, sizeof owner, "%s/%s", api_json_str(meta, "namespace"),
             api_json_str(meta, "name"));
    int rc = 0;
    if (strcmp(api_json_str(spec, "type"), "ExternalName")) {
        const json_t *ips = json_object_get(spec, "clusterIPs");
        size_t n = json_array_size(ips);
        for (size_t i = 0; i < (n ? n : 1) && !rc; i++) {
            const char *text = n ? json_string_value(json_array_get(ips, i))
                                 : api_json_str(spec, "clusterIP");
            uint32_t ip;
            if (api_alloc_ip_parse(text, &ip)) continue; /* None, "", IPv6 */
            svc_ip_t *e = vec_push(&s->ips);
            if (!e) rc = KP_ENOMEM;
            else {
                e->ip = ip;
                snprintf(e->owner, sizeof e->owner, "%s", owner);
            }
        }
    }
    size_t i;
    const json_t *p;
    json_array_foreach(json_object_get(spec, "ports"), i, p) {
        json_int_t np = json_integer_value(json_object_get(p, "nodePort"));
        if (np && api_alloc_port_in_range(s->a, (int)np))
            alloc__set(s->ports, (uint32_t)(np - s->a->port_base), 1);
    }
    json_int_t hc = json_integer_value(json_object_get(spec, "healthCheckNodePort"));
    if (hc && api_alloc_port_in_range(s->a, (int)hc))
        alloc__set(s->ports, (uint32_t)(hc - s->a->port_base), 1);
    json_decref(doc);
    return rc;
}

/* The element of sorted v whose first member is ip, or NULL. */
static const void *find_ip(const vec_t *v, uint32_t ip)
{
    return v->n ? bsearch(&ip, v->p, v->n, v->size, cmp_ip) : NULL;
}

/* What open transactions hold: IPs into *ips (sorted), ports set in bm. */
static int held(api_alloc_t *a, vec_t *ips, uint64_t *bm)
{
    int rc = 0;
    pthread_mutex_lock(&a->mu);
    for (api_alloc_txn_t *t = a->open; t && !rc; t = t->next) {
        uint32_t both[2] = {t->ip_taken, t->ip_given};
        for (int k = 0; k < 2 && !rc; k++) {
            if (!both[k]) continue;
            uint32_t *e = vec_push(ips);
            if (!e) rc = KP_ENOMEM;
            else *e = both[k];
        }
        for (int k = 0; k < t->ntaken + t->ngiven; k++) {
            int port = k < t->ntaken ? t->taken[k] : t->given[k - t->ntaken];
            if (api_alloc_port_in_range(a, port))
                alloc__set(bm, (uint32_t)(port - a->port_base), 1);
        }
    }
    pthread_mutex_unlock(&a->mu);
    if (ips->n) qsort(ips->p, ips->n, ips->size, cmp_ip);
    return rc;
}

static int repair_ips(api_alloc_t *a, int at_start, const vec_t *recs, const vec_t *svcs,
                      const vec_t *hold, api_alloc_repair_stats_t *st)
{
    int64_t now = (int64_t)time(NULL);
    /* Services' addresses missing from the record, or recorded for a
     * Service that does not hold them. */
    for (size_t i = 0; i < svcs->n; i++) {
        const svc_ip_t *s = (const svc_ip_t *)svcs->p + i;
        char text[16];
        api_alloc_ip_text(s->ip, text);
        if (!api_alloc_ip_in_range(a, s->ip)) {
            log_warn("alloc", "the ClusterIP %s of Service %s is not within the service CIDR %s; "
                     "please recreate the Service", text, s->owner, a->cidr);
            continue;
        }
        const rec_t *r = find_ip(recs, s->ip);
        if (r && !strcmp(r->owner, s->owner)) continue;
        if (r) {
            const svc_ip_t *other = NULL;
            for (size_t j = 0; j < svcs->n && !other; j++) {
                const svc_ip_t *o = (const svc_ip_t *)svcs->p + j;
                if (o->ip == s->ip && !strcmp(o->owner, r->owner)) other = o;
            }
            if (other) {
                log_warn("alloc", "the ClusterIP %s was assigned to Services %s and %s; please "
                         "recreate one", text, s->owner, r->owner);
                continue;
            }
            char key[96];
            alloc__ip_key(s->ip, key, sizeof key);
            int rc = store_delete(a->store, key, r->mod_rev, NULL);
            if (rc && rc != KP_ENOTFOUND) continue; /* changed meanwhile: next pass */
        }
        const char *slash = strchr(s->owner, '/');
        char ns[64];
        snprintf(ns, sizeof ns, "%.*s", (int)(slash - s->owner), s->owner);
        int rc = alloc__record_ip(a, s->ip, ns, slash + 1);
        if (!rc) {
            st->ips_recorded++;
            log_warn("alloc", "the ClusterIP %s of Service %s was not allocated; repaired", text,
                     s->owner);
        } else if (rc != KP_EEXIST) return rc;
    }
    /* Records no Service holds. */
    for (size_t i = 0; i < recs->n; i++) {
        const rec_t *r = (const rec_t *)recs->p + i;
        if (!r->managed) continue;
        const svc_ip_t *base = svcs->p, *s = find_ip(svcs, r->ip);
        size_t k = s ? (size_t)(s - base) : 0;
        while (s && k > 0 && base[k - 1].ip == r->ip) k--;
        int owned = 0;
        for (; s && k < svcs->n && base[k].ip == r->ip; k++)
            if (!strcmp(base[k].owner, r->owner)) owned = 1;
        if (owned || find_ip(hold, r->ip)) continue;
        if (!at_start && (!r->created || now - r->created < ORPHAN_GRACE_S)) continue;
        char key[96], text[16];
        alloc__ip_key(r->ip, key, sizeof key);
        api_alloc_ip_text(r->ip, text);
        int rc = store_delete(a->store, key, r->mod_rev, NULL);
        if (!rc) {
            st->ips_freed++;
            log_warn("alloc", "IPAddress %s for Service %s appears to have leaked: cleaned up",
                     text, *r->owner ? r->owner : "(none)");
        } else if (rc != KP_ENOTFOUND && rc != KP_ECONFLICT) return rc;
    }
    return 0;
}

static int repair_ports(api_alloc_t *a, int at_start, int64_t rev0, uint64_t *want,
                        api_alloc_repair_stats_t *st)
{
    pthread_mutex_lock(&a->port_mu);
    uint64_t *cur = NULL;
    int64_t rev;
    int rc = alloc__ports_load(a, &cur, &rev);
    if (rc || (!at_start && rev != rev0)) { /* changed since the read: next pass */
        pthread_mutex_unlock(&a->port_mu);
        free(cur);
        return rc;
    }
    int changed = 0;
    pthread_mutex_lock(&a->mu);
    for (int i = 0; i < a->port_size; i++) {
        uint32_t b = (uint32_t)i;
        int have = alloc__bit(cur, b), need = alloc__bit(want, b);
        if (have && !need) {
            if (at_start || ++a->port_leaks[i] >= PORT_LEAK_PASSES) {
                alloc__set(cur, b, 0);
                a->port_leaks[i] = 0;
                changed = 1;
                st->ports_freed++;
            }
        } else {
            a->port_leaks[i] = 0;
            if (need && !have) {
                alloc__set(cur, b, 1);
                changed = 1;
                st->ports_recorded++;
            }
        }
    }
    pthread_mutex_unlock(&a->mu);
    /* A record of another range is rewritten even when no bit changed. */
    if (changed || (at_start && rev)) rc = alloc__ports_store(a, cur, rev);
    if (rc == KP_ECONFLICT) rc = 0;
    pthread_mutex_unlock(&a->port_mu);
    free(cur);
    return rc;
}

int api_alloc_repair(api_alloc_t *a, int at_start, api_alloc_repair_stats_t *st)
{
    api_alloc_repair_stats_t dummy;
    if (!st) st = &dummy;
    memset(st, 0, sizeof *st);
    vec_t recs = {.size = sizeof(rec_t)}, hold = {.size = sizeof(uint32_t)};
    svc_scan_t scan = {.a = a, .ips = {.size = sizeof(svc_ip_t)}};
    uint64_t *bm0 = NULL;
    int64_t rev0 = 0;
    int rc = each_value(a->store, API_ALLOC_IP_KEY_PREFIX, add_rec, &recs);
    if (!rc) {
        pthread_mutex_lock(&a->port_mu);
        rc = alloc__ports_load(a, &bm0, &rev0);
        pthread_mutex_unlock(&a->port_mu);
    }
    if (!rc && !(scan.ports = calloc(((size_t)a->port_size + 63) / 64, sizeof(uint64_t))))
        rc = KP_ENOMEM;
    if (!rc) rc = held(a, &hold, scan.ports);
    if (!rc) rc = each_value(a->store, SERVICES_PREFIX, add_svc, &scan);
    if (!rc) {
        if (recs.n) qsort(recs.p, recs.n, recs.size, cmp_ip);
        if (scan.ips.n) qsort(scan.ips.p, scan.ips.n, scan.ips.size, cmp_ip);
        rc = repair_ips(a, at_start, &recs, &scan.ips, &hold, st);
    }
    if (!rc) rc = repair_ports(a, at_start, rev0, scan.ports, st);
    if (!rc) rc = alloc__hint_reload(a);
    free(recs.p);
    free(hold.p);
    free(scan.ips.p);
    free(scan.ports);
    free(bm0);
    if (st->ips_freed || st->ips_recorded || st->ports_freed || st->ports_recorded)
        log_info("alloc", "repair%s: %zu IPs freed, %zu recorded; %zu NodePorts freed, %zu recorded",
                 at_start ? " at start" : "", st->ips_freed, st->ips_recorded, st->ports_freed,
                 st->ports_recorded);
    return rc;
}

static void *repair_main(void *arg)
{
    api_alloc_t *a = arg;
    pthread_mutex_lock(&a->mu);
    while (!a->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += a->interval_s;
        while (!a->stopping && pthread_cond_timedwait(&a->cv, &a->mu, &until) == 0) {}
        if (a->stopping) break;
        pthread_mutex_unlock(&a->mu);
        int rc = api_alloc_repair(a, 0, NULL);
        if (rc) log_warn("alloc", "repair pass: %s (retried later)", err_str(rc));
        pthread_mutex_lock(&a->mu);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

int api_alloc_start(api_alloc_t *a, int interval_s)
{
    pthread_mutex_lock(&a->mu);
    a->interval_s = interval_s > 0 ? interval_s : 180;
    a->stopping = 0;
    int rc = a->running ? 0 : pthread_create(&a->thread, NULL, repair_main, a) ? KP_ENOMEM : 0;
    if (!rc) a->running = 1;
    pthread_mutex_unlock(&a->mu);
    return rc;
}

void api_alloc_stop(api_alloc_t *a)
{
    pthread_mutex_lock(&a->mu);
    int running = a->running;
    a->stopping = 1;
    a->running = 0;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    if (running) pthread_join(a->thread, NULL);
}
