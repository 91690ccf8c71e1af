/*
 * alloc.h -- the addresses Services take: ClusterIPs from one IPv4 range
 * (--service-cluster-ip-range) and NodePorts from one port range
 * (--service-node-port-range), as Kubernetes' ipallocator and portallocator
 * hand them out.
 *
 * THE RECORD (what is allocated is in the store, not in memory)
 *  - a ClusterIP is an IPAddress object (networking.k8s.io/v1) at
 *    /registry/networking.k8s.io/ipaddresses/<ip>, whose spec.parentRef names
 *    the Service, as Kubernetes 1.33 records them; store_create of the key is
 *    the allocation (create-if-absent decides between racing writers);
 *  - NodePorts are one RangeAllocation at /registry/ranges/servicenodeports
 *    whose `data` is the bitmap (bit i: port base+i, big-endian bytes as
 *    Go's big.Int writes them), changed by compare-and-swap, as Kubernetes
 *    still records them.
 * In memory there is only a hint: a bitmap of the IPs believed taken (one
 * bit per address of the range: 128 KiB for a /12, the largest range
 * allowed), so a free address is found without asking the store for each.
 *
 * CRASH SAFETY (there is no transaction across the record and the Service)
 * An address is recorded before the Service that uses it is written, and
 * released after the Service is gone. A crash in between leaves a record
 * with no Service (a leak), never a Service without its record. The repair
 * pass (api_alloc_repair) ends leaks: it frees every IPAddress whose Service
 * does not hold it and rewrites the port bitmap from the Services, and
 * re-records addresses Services hold but the record lacks. At start-up,
 * before any request is served, nothing is in flight, so every leak goes at
 * once. Later passes (every few minutes, as Kubernetes' repair loops run)
 * skip what an open transaction holds, free an orphan IPAddress only when it
 * is older than 60 s (Kubernetes' grace for a create still in flight) and a
 * port only after 3 passes in a row found it leaked (Kubernetes'
 * numRepairsBeforeLeakCleanup).
 *
 * Threads: every call may be made from any thread at once. IPv4 only: a
 * dual-stack cluster (a second range) is not supported.
 */
#ifndef KP_ALLOC_H
#define KP_ALLOC_H

#include <stddef.h>
#include <stdint.h>

typedef struct store store_t;
typedef struct api_alloc api_alloc_t;
typedef struct api_alloc_txn api_alloc_txn_t;

#define API_ALLOC_DEFAULT_CIDR "10.96.0.0/12"
#define API_ALLOC_DEFAULT_PORTS "30000-32767"
#define API_ALLOC_IP_KEY_PREFIX "/registry/networking.k8s.io/ipaddresses/"
#define API_ALLOC_PORTS_KEY "/registry/ranges/servicenodeports"
#define API_ALLOC_MAX_PORTS 64 /* NodePorts one transaction may take or give back */

/* Parse an IPv4 CIDR (prefix 12..30: Kubernetes' largest range, and room
 * for the first address) into its network address (host order, host bits
 * cleared) and prefix length. Errors: KP_EINVAL, with `err` saying why. */
int api_alloc_parse_cidr(const char *s, uint32_t *net, int *bits, char *err, size_t errlen);
/* Parse "BASE-LAST" (or "BASE+SIZE", or "PORT"), ports 1..65535. */
int api_alloc_parse_ports(const char *s, int *base, int *size, char *err, size_t errlen);

/* Dotted-quad text of ip (host order), and its parse (KP_EINVAL: not an
 * IPv4 address). */
void api_alloc_ip_text(uint32_t ip, char out[16]);
int api_alloc_ip_parse(const char *s, uint32_t *ip);

/* Open the allocators over `store` (borrowed, must outlive them): load the
 * hint from the IPAddress records. NULL cidr/ports: the defaults. *out is
 * the caller's (api_alloc_close). Errors: KP_EINVAL (bad range), store
 * errors, KP_ENOMEM. */
int api_alloc_open(store_t *store, const char *cidr, const char *ports, api_alloc_t **out);
void api_alloc_close(api_alloc_t *a); /* NULL: no-op */

/* The range as text ("10.96.0.0/12", "30000-32767"), and the first usable
 * address (the kubernetes Service's); borrowed from a. */
const char *api_alloc_cidr(const api_alloc_t *a);
const char *api_alloc_ports(const api_alloc_t *a);
uint32_t api_alloc_first_ip(const api_alloc_t *a);
/* 1 if ip is an address of the range that may be allocated (not the
 * network or broadcast address). */
int api_alloc_ip_in_range(const api_alloc_t *a, uint32_t ip);
/* 1 if port is in the NodePort range. */
int api_alloc_port_in_range(const api_alloc_t *a, int port);

/* ---- transactions: what one Service write takes and gives back ----
 *
 * begin -> take/next (record now) and give (release later) -> end. end with
 * committed 1 releases what was given; with 0 it releases what was taken
 * and keeps what was given. Until end, the repair pass leaves everything the
 * transaction names alone. A dry-run transaction records nothing: next
 * returns the network address (IPs) or a free port without taking it, take
 * only checks. A transaction is used by one thread. */
int api_alloc_txn_begin(api_alloc_t *a, int dry_run, const char *ns, const char *name,
                        api_alloc_txn_t **out);
/* The IP for the transaction's Service: `ip` (0: any free one, in *out).
 * Errors: KP_EINVAL (not in the range), KP_EEXIST (already allocated),
 * KP_ENOSPC (the range is full), KP_ETOOLARGE (a second IP), store errors. */
int api_alloc_txn_ip(api_alloc_txn_t *t, uint32_t ip, uint32_t *out);
/* Release `ip` of the Service at end, if still its record. */
int api_alloc_txn_give_ip(api_alloc_txn_t *t, uint32_t ip);
/* A NodePort: `port` (0: any free one, in *out), recorded at once (one
 * compare-and-swap of the bitmap). Errors: KP_EINVAL (not in the range),
 * KP_EEXIST (already allocated), KP_ENOSPC (full), KP_ETOOLARGE (over
 * API_ALLOC_MAX_PORTS in one transaction), store errors. */
int api_alloc_txn_port(api_alloc_txn_t *t, int port, int *out);
/* Release `port` at end (KP_ETOOLARGE: over API_ALLOC_MAX_PORTS). */
int api_alloc_txn_give_port(api_alloc_txn_t *t, int port);
/* End the transaction (see above) and free it. NULL: no-op. */
void api_alloc_txn_end(api_alloc_txn_t *t, int committed);

/* Release a deleted Service's addresses now (its IP only if the record
 * still names it). */
void api_alloc_release(api_alloc_t *a, const char *ns, const char *name, uint32_t ip,
                       const int *ports, size_t nports);

/* ---- repair ---- */

typedef struct api_alloc_repair_stats {
    size_t ips_freed, ips_recorded, ports_freed, ports_recorded;
} api_alloc_repair_stats_t;

/* One repair pass (see above); `at_start`: nothing is in flight, so every
 * leak goes now. Errors: store errors (the pass is retried next time). */
int api_alloc_repair(api_alloc_t *a, int at_start, api_alloc_repair_stats_t *st);
/* Run a repair pass every interval_s seconds on a thread of its own, until
 * api_alloc_stop (api_alloc_close stops it too). Errors: KP_ENOMEM. */
int api_alloc_start(api_alloc_t *a, int interval_s);
void api_alloc_stop(api_alloc_t *a);
/* How many IPs the hint believes taken, and how many ports the record holds
 * (tests, metrics). */
size_t api_alloc_ips_used(api_alloc_t *a);
int api_alloc_ports_used(api_alloc_t *a, size_t *out);

#endif
