/*
 * proxy.h -- a TCP proxy on loopback for the labs: the naive load balancer
 * of investigation 007 (round robin over API servers, each with its own
 * copy), added latency (its failure 02), and partitions (its failure 04,
 * and a store the API server cannot reach).
 *
 * It listens on 127.0.0.1 and a free port and hands each accepted
 * connection to the next target in turn (round robin by connection, as a
 * TCP load balancer does; TLS passes through untouched). Every chunk is
 * forwarded delay_ms late in each direction, in order, so a round trip
 * takes 2 x delay_ms more. A blocked target gets no new connection (the
 * next unblocked one does; with none, the client's connection is closed at
 * once) and its open connections are cut, as a partition would.
 *
 * Bounded: at most 256 open connections (more are closed at accept), and
 * at most 4 MiB waiting in each direction of one connection (reading from
 * that side stops until it drains).
 *
 * THREADS. One thread of its own runs it; every call below is safe from any
 * thread. ERRORS are KP_* codes (lib/err.h).
 */
#ifndef KP_LAB_PROXY_H
#define KP_LAB_PROXY_H

typedef struct lab_proxy lab_proxy_t;

/* Start a proxy to the loopback ports targets[0..n) (1 <= n <= 8). */
int lab_proxy_start(const int *targets, int n, int delay_ms, lab_proxy_t **out);
int lab_proxy_port(const lab_proxy_t *p);
/* Added latency from now on (chunks already waiting keep theirs). */
void lab_proxy_set_delay(lab_proxy_t *p, int delay_ms);
/* Partition target i (its index in targets) away (blocked 1) or heal it (0). */
void lab_proxy_block(lab_proxy_t *p, int i, int blocked);
/* Connections accepted so far, per target i. */
long lab_proxy_connections(const lab_proxy_t *p, int i);
/* Stop the thread, close everything, free. NULL is a no-op. */
void lab_proxy_stop(lab_proxy_t *p);

#endif
