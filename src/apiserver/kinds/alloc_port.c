/*
 * alloc_port.c -- NodePorts: one bitmap in the store, a RangeAllocation as
 * Kubernetes keeps at /registry/ranges/servicenodeports. Its `data` is the
 * bitmap as Go's big.Int.Bytes() writes it (big-endian, no leading zero
 * bytes; bit i is port base+i), base64 in JSON.
 *
 * Every change is read, modify, compare-and-swap under port_mu (alloc_int.h):
 * one store write per port taken, one per release of a transaction's ports.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/kinds/alloc_int.h"
#include "apiserver/http/http.h"
#include "lib/base64.h"
#include "lib/err.h"
#include "lib/log.h"
#include "store/store.h"

#define PORT_WORDS(a) (((size_t)(a)->port_size + 63) / 64)

int alloc__ports_load(api_alloc_t *a, uint64_t **bm, int64_t *rev)
{
    uint64_t *out = calloc(PORT_WORDS(a), sizeof *out);
    if (!out) return KP_ENOMEM;
    store_kv_t *kv = NULL;
    int rc = store_get(a->store, API_ALLOC_PORTS_KEY, 0, &kv);
    if (rc == KP_ENOTFOUND) {
        *bm = out;
        *rev = 0;
        return 0;
    }
    if (rc) {
        free(out);
        return rc;
    }
    *rev = kv->mod_rev;
    json_t *doc = json_loadb(kv->value, kv->value_len, 0, NULL);
    free(kv);
    /* A record of another range (the flag changed) counts as empty: the
     * repair pass at start rebuilds it from the Services. */
    const char *data = api_json_str(doc, "data");
    if (!strcmp(api_json_str(doc, "range"), a->ports) && *data) {
        size_t cap = (size_t)a->port_size / 8 + 8, n = 0;
        unsigned char *bytes = malloc(cap);
        if (bytes && !base64_decode(data, strlen(data), bytes, cap, &n)) {
            for (size_t i = 0; i < n; i++)
                for (int b = 0; b < 8; b++) {
                    size_t bit = (n - 1 - i) * 8 + (size_t)b;
                    if ((bytes[i] >> b) & 1 && bit < (size_t)a->port_size)
                        alloc__set(out, (uint32_t)bit, 1);
                }
        }
        free(bytes);
    }
    json_decref(doc);
    *bm = out;
    return 0;
}

int alloc__ports_store(api_alloc_t *a, const uint64_t *bm, int64_t rev)
{
    int top = -1;
    for (int i = a->port_size - 1; i >= 0 && top < 0; i--)
        if (alloc__bit(bm, (uint32_t)i)) top = i;
    size_t n = top < 0 ? 0 : (size_t)top / 8 + 1;
    unsigned char *bytes = calloc(n + 1, 1);
    if (!bytes) return KP_ENOMEM;
    for (int i = 0; i <= top; i++)
        if (alloc__bit(bm, (uint32_t)i)) bytes[n - 1 - (size_t)i / 8] |= (unsigned char)(1u << (i % 8));
    char *b64 = base64_encode(bytes, n);
    free(bytes);
    json_t *doc = b64 ? json_pack("{s:s, s:s, s:{s:n}, s:s, s:s}", "kind", "RangeAllocation",
                                  "apiVersion", "v1", "metadata", "creationTimestamp", "range",
                                  a->ports, "data", b64)
                      : NULL;
    free(b64);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    int rc = !text ? KP_ENOMEM
             : rev ? store_update(a->store, API_ALLOC_PORTS_KEY, text, strlen(text), rev, NULL)
                   : store_create(a->store, API_ALLOC_PORTS_KEY, text, strlen(text), NULL);
    if (rc == KP_EEXIST) rc = KP_ECONFLICT;
    free(text);
    return rc;
}

int api_alloc_ports_used(api_alloc_t *a, size_t *out)
{
    uint64_t *bm;
    int64_t rev;
    int rc = alloc__ports_load(a, &bm, &rev);
    if (rc) return rc;
    size_t n = 0;
    for (int i = 0; i < a->port_size; i++) n += (size_t)alloc__bit(bm, (uint32_t)i);
    free(bm);
    *out = n;
    return 0;
}

/* A free port in bm for a dynamic allocation: from a random start in the
 * upper band (KEP-3668: min(max(16, size/32), 128) ports at the bottom are
 * left for static requests), then the lower band; -1 if none. */
static int pick_free(const api_alloc_t *a, const uint64_t *bm, uint32_t *rnd)
{
    int size = a->port_size;
    int band = size <= 16 ? 0 : size / 32 < 16 ? 16 : size / 32 > 128 ? 128 : size / 32;
    int ranges[2][2] = {{band, size - 1}, {0, band - 1}};
    for (int r = 0; r < 2; r++) {
        int lo = ranges[r][0], hi = ranges[r][1];
        if (lo > hi) continue;
        uint32_t x = *rnd ? *rnd : 0x2545f491u;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        *rnd = x;
        int n = hi - lo + 1, start = (int)(x % (uint32_t)n);
        for (int i = 0; i < n; i++) {
            int off = lo + (start + i) % n;
            if (!alloc__bit(bm, (uint32_t)off)) return off;
        }
    }
    return -1;
}

int api_alloc_txn_port(api_alloc_txn_t *t, int port, int *out)
{
    api_alloc_t *a = t->a;
    if (port && !api_alloc_port_in_range(a, port)) return KP_EINVAL;
    if (t->ntaken >= API_ALLOC_MAX_PORTS) return KP_ETOOLARGE;
    for (int i = 0; i < t->ntaken; i++)
        if (port && t->taken[i] == port) return KP_EEXIST;
    pthread_mutex_lock(&a->port_mu);
    int rc = KP_ECONFLICT;
    for (int attempt = 0; attempt < 8 && rc == KP_ECONFLICT; attempt++) {
        uint64_t *bm;
        int64_t rev;
        if ((rc = alloc__ports_load(a, &bm, &rev))) break;
        int off = port ? port - a->port_base : pick_free(a, bm, &t->rnd);
        if (off < 0) rc = KP_ENOSPC;
        else if (alloc__bit(bm, (uint32_t)off)) rc = KP_EEXIST;
        else if (t->dry_run) rc = 0;
        else {
            alloc__set(bm, (uint32_t)off, 1);
            rc = alloc__ports_store(a, bm, rev);
        }
        free(bm);
        if (!rc) {
            *out = a->port_base + off;
            if (!t->dry_run) t->taken[t->ntaken++] = *out;
        }
    }
    pthread_mutex_unlock(&a->port_mu);
    return rc;
}

int api_alloc_txn_give_port(api_alloc_txn_t *t, int port)
{
    if (t->ngiven >= API_ALLOC_MAX_PORTS) return KP_ETOOLARGE;
    t->given[t->ngiven++] = port;
    return 0;
}

void alloc__ports_release(api_alloc_t *a, const int *ports, int n)
{
    pthread_mutex_lock(&a->port_mu);
    int rc = KP_ECONFLICT;
    for (int attempt = 0; attempt < 8 && rc == KP_ECONFLICT; attempt++) {
        uint64_t *bm;
        int64_t rev;
        if ((rc = alloc__ports_load(a, &bm, &rev))) break;
        int changed = 0;
        for (int i = 0; i < n; i++) {
            if (!api_alloc_port_in_range(a, ports[i])) continue;
            uint32_t off = (uint32_t)(ports[i] - a->port_base);
            if (alloc__bit(bm, off)) {
                alloc__set(bm, off, 0);
                changed = 1;
            }
        }
        rc = changed ? alloc__ports_store(a, bm, rev) : 0;
        free(bm);
    }
    pthread_mutex_unlock(&a->port_mu);
    if (rc) log_warn("alloc", "releasing %d NodePorts: %s (the repair pass will)", n, err_str(rc));
}
