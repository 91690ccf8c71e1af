/*
 * alloc_int.h -- what alloc_ip.c, alloc_port.c and alloc_repair.c share.
 * Not for other files: they use alloc.h.
 *
 * Locks: `mu` guards the IP hint, the list of open transactions and the
 * ports' leak counts; `port_mu` serializes every read-modify-write of the
 * port bitmap in the store (held across the store call, so that this
 * process's writers never race each other; the compare-and-swap still
 * guards against other processes). Order: port_mu before mu.
 */
#ifndef KP_ALLOC_INT_H
#define KP_ALLOC_INT_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>

#include "apiserver/kinds/alloc.h"

struct api_alloc_txn {
    api_alloc_t *a;
    api_alloc_txn_t *prev, *next; /* in a->open, under a->mu */
    int dry_run;
    char ns[64], name[254];
    uint32_t ip_taken, ip_given; /* 0: none */
    int taken[API_ALLOC_MAX_PORTS], ntaken; /* recorded in the store */
    int given[API_ALLOC_MAX_PORTS], ngiven;
    uint32_t rnd;                /* xorshift state for random starts */
};

struct api_alloc {
    store_t *store;
    uint32_t net;   /* network address, host order */
    int bits;
    uint32_t size;  /* addresses in the CIDR; usable offsets 1..size-2 */
    uint32_t band;  /* KEP-3070: dynamic allocations prefer offsets above it */
    char cidr[32], ports[32];
    int port_base, port_size;
    pthread_mutex_t mu;
    uint64_t *hint; /* size bits: offset from net */
    size_t used;
    api_alloc_txn_t *open;
    pthread_mutex_t port_mu;
    uint8_t *port_leaks; /* [port_size]: passes in a row that found it leaked */
    /* The periodic repair (alloc_repair.c), under mu. */
    pthread_t thread;
    pthread_cond_t cv;
    int running, stopping, interval_s;
};

/* Port bitmap in the store (alloc_port.c). *bm (port_size bits, caller
 * frees) and *rev (0 when the key does not exist) as of now. */
int alloc__ports_load(api_alloc_t *a, uint64_t **bm, int64_t *rev);
/* Write bm as the record if it is still at `rev` (0: create). */
int alloc__ports_store(api_alloc_t *a, const uint64_t *bm, int64_t rev);
/* Clear `ports` in the record (retrying conflicts); logged on failure. */
void alloc__ports_release(api_alloc_t *a, const int *ports, int n);
/* Reload the IP hint from the records (alloc_ip.c). */
int alloc__hint_reload(api_alloc_t *a);
/* Create the record of ip for ns/name (KP_EEXIST: someone holds it); delete
 * it if it names ns/name (ns NULL: whoever; KP_EEXIST: someone else). */
int alloc__record_ip(api_alloc_t *a, uint32_t ip, const char *ns, const char *name);
int alloc__unrecord_ip(api_alloc_t *a, uint32_t ip, const char *ns, const char *name);
void alloc__ip_key(uint32_t ip, char *key, size_t n);
/* Set or clear ip's hint bit (out of range: no-op). */
void alloc__hint_set(api_alloc_t *a, uint32_t ip, int on);
/* ip's hint bit, or -1 if ip is not a usable address of the range. */
int64_t alloc__offset(const api_alloc_t *a, uint32_t ip);
/* The IPAddress object for ip owned by ns/name (a new reference). */
json_t *alloc__ipaddress(uint32_t ip, const char *ns, const char *name);

static inline int alloc__bit(const uint64_t *bm, uint32_t i)
{
    return (int)((bm[i >> 6] >> (i & 63)) & 1u);
}
static inline void alloc__set(uint64_t *bm, uint32_t i, int on)
{
    if (on) bm[i >> 6] |= (uint64_t)1 << (i & 63);
    else bm[i >> 6] &= ~((uint64_t)1 << (i & 63));
}

#endif
