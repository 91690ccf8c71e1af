/*
 * etcd_int.h -- the etcd backend: the history kept by an etcd v3 cluster.
 *
 * URL: "etcd://HOST:PORT[,HOST:PORT...]", the cluster's client endpoints. The
 * backend speaks etcd's native v3 API: gRPC (grpc.h: HTTP/2 in cleartext,
 * one connection per endpoint shared by every call and watch) carrying
 * etcd's protobuf messages (etcd_pb.h). etcd 3.4 or newer.
 *
 * REVISIONS. An empty etcd cluster is at revision 1 and its first write gets
 * 2; store.h wants 0 and 1. So a store revision is the etcd revision minus
 * ETCD__REV_OFFSET, everywhere: in results, in arguments, in compaction.
 * etcd gives every other rule of store.h as it is: one revision per accepted
 * write (a put, or a delete that deleted a key; a failed compare accepts
 * nothing), create_revision / mod_revision / version per key, reads at a
 * revision, compaction with ErrCompacted below it, watches from a revision
 * with previous values, and "acknowledged means committed by a quorum".
 *
 * WRITES are transactions (etcd_backend.c): create = "if create_revision == 0
 * then put"; update and delete = "if mod_revision == expected (or, for 0,
 * create_revision > 0) then put / delete, else range the key" so that a
 * failure tells KP_ENOTFOUND from KP_ECONFLICT and returns the current
 * mod_revision. There is no group commit to do here: etcd batches its raft
 * proposals and fsyncs itself. Nor is there poisoning: a write that failed
 * was committed by etcd or not, whole, and later writes are safe either way
 * (a write whose outcome is unknown is reported so, see below).
 *
 * ENDPOINTS AND TIMEOUTS (etcd_conn.c). Every request goes to the current
 * endpoint, with a connect timeout and a total timeout (ETCD__TIMEOUT_MS, well
 * under the 60 s a Kubernetes request may take, so that the API server
 * answers a client with the store's error rather than the client giving
 * up). A request that could not be sent (no byte of it went out) moves to
 * the next endpoint and is retried there. A read that failed later is
 * retried on the next endpoint too. A write that failed after it was sent
 * (a timeout, a broken connection, or etcd's own "request timed out") has an
 * unknown outcome: it is never retried and never reported as success, but as
 * KP_ETIMEDOUT. KP_EUNAVAILABLE means that no endpoint took the request at
 * all (refused connections, or etcd said "no leader" before proposing it).
 * Each connection pings etcd when quiet (ETCD__KEEPALIVE_MS) and is dropped
 * when a ping goes unanswered (ETCD__KEEPALIVE_TIMEOUT_MS): a partitioned or
 * frozen member is noticed by idle watches too, and the next call connects
 * to the next endpoint.
 *
 * WATCHES (etcd_watch.c) are one Watch stream each (a gRPC stream on the
 * endpoint's shared connection), kept open by a thread of their own that
 * reconnects it. Each response is decoded as it arrives and its events
 * queued. A watch remembers the revision it has read up to; after a
 * disconnect it resumes from there on the next endpoint, so nothing is lost
 * or delivered twice.
 *
 * PROGRESS. etcd's timed progress notifications (progress_notify) travel
 * through the watch's own event channel on the server, after every event up
 * to their revision: they are exact. store_watch_request_progress() sends a
 * progress request on the stream, whose answer etcd orders after the events
 * before it from 3.4.31 and 3.5.13 on (etcd issue 15220); before those
 * versions the answer may overtake pending events, so the backend does not
 * ask (ETCD__PROGRESS_REQUESTS tells which versions it trusts) and a watch
 * learns of writes outside its prefix at the server's interval,
 * --experimental-watch-progress-notify-interval (default 10m): run such an
 * etcd with a short one (kplane's scripts use 100ms).
 *
 * LEADER CHANGES (etcd_leader.c). A request a follower forwarded to a leader
 * that then died is lost, and etcd answers it only at its request timeout
 * (6 s with a 500 ms election timeout). The backend notices the new leader
 * by the raft term in response headers (and a Status probe of the current
 * endpoint while a request waits) and then gives up on the requests sent
 * before, with the outcomes of any request cut short: a write is unknown
 * (KP_ETIMEDOUT), a read is sent again.
 *
 * COMPACTION. etcd reports no compaction point; the backend keeps the
 * newest one it knows (its own compactions, and what reads and watches
 * learn) and store_status() checks it with a read at that revision. The
 * automatic compactor samples (time, revision) pairs to compact by age, as
 * etcd's own periodic compactor does.
 */
#ifndef KP_ETCD_INT_H
#define KP_ETCD_INT_H

#include <pthread.h>
#include <stdint.h>

#include "lib/buf.h"
#include "store/grpc.h"
#include "store_int.h"

#define ETCD__REV_OFFSET         1
#define ETCD__MAX_ENDPOINTS      16
#define ETCD__CONNECT_MS         2000  /* per endpoint */
#define ETCD__TIMEOUT_MS         10000 /* a request; well under Kubernetes' 60 s request timeout */
#define ETCD__COMPACT_TIMEOUT_MS 60000
#define ETCD__HEALTH_TIMEOUT_MS                                                                    \
    2000 /* store_health(): kube-apiserver's --etcd-healthcheck-timeout */
#define ETCD__HEALTH_CACHE_MS      1000       /* one health read serves callers this long */
#define ETCD__KEEPALIVE_MS         5000       /* a connection quiet this long is pinged */
#define ETCD__KEEPALIVE_TIMEOUT_MS 3000       /* and dropped when the ping is not answered */
#define ETCD__WATCH_QUEUE_BYTES    (8u << 20) /* events queued before the stream pauses */
#define ETCD__WATCH_RETRY_MS       200        /* first pause before a watch reconnects */
/* The longest pause: the watch cache is as stale as this, at most, after
 * etcd comes back (it was 6.4 s, longer than a new controller manager
 * takes to lead and act: ha_all_stopped saw a rollout "done" on the old
 * spec through one API server while the other read the new one). */
#define ETCD__WATCH_RETRY_MAX_MS 1000
#define ETCD__PROGRESS_WARN_MS   10000 /* no progress this long after a request: warn */
#define ETCD__SAMPLES            4096  /* (time, revision) samples for compaction by age */
#define ETCD__PROBE_MS           250 /* a request waiting this long: ask the term (LEADER CHANGES) */
#define ETCD__LEADER_GRACE_MS    300 /* after a new term is seen: give up on older requests */

typedef struct etcd_sample {
    int64_t time_ns;
    int64_t rev; /* store revision seen at time_ns */
} etcd_sample_t;

typedef struct etcd_conn etcd_conn_t;

/* A unary call waiting for its answer (on its caller's stack; es->mu). */
typedef struct etcd_inflight {
    int64_t begun_ns;
    uint64_t abandon_gen; /* es->abandon_gen when it began */
    struct etcd_inflight *prev, *next;
} etcd_inflight_t;

typedef struct etcd_store {
    store_t base;
    char *hosts[ETCD__MAX_ENDPOINTS]; /* owned */
    int ports[ETCD__MAX_ENDPOINTS];
    size_t n_endpoints;
    store_options_t opt;
    int progress_requests; /* etcd orders a progress request's answer (PROGRESS) */

    pthread_mutex_t mu;                      /* guards the fields below */
    size_t current;                          /* the endpoint requests go to */
    etcd_conn_t *conns[ETCD__MAX_ENDPOINTS]; /* each endpoint's connection, or NULL */
    int64_t compact;                         /* newest known compaction point (store revision) */
    uint64_t writes;                         /* acknowledged since open */
    int closing;
    int warned_progress;  /* logged that etcd sends no progress notifications */
    int health_busy;      /* a store_health() read is under way */
    int health_rc;        /* the last one's result */
    int64_t health_at_ns; /* CLOCK_MONOTONIC when it ended (0: never) */

    /* LEADER CHANGES */
    uint64_t term;             /* the highest raft term seen */
    int64_t term_ns;           /* CLOCK_MONOTONIC when it was seen to rise (0: never) */
    uint64_t abandoned_term;   /* the term whose rise was acted on */
    uint64_t abandon_gen;      /* bumped by each giving up */
    int contact_lost;          /* a call failed to reach etcd since the last success */
    uint64_t contact_gen;      /* bumped by a success after contact_lost (watches retry) */
    int64_t abandon_before_ns; /* the last giving up's cut: calls begun before it */
    etcd_inflight_t *inflight, *inflight_tail; /* newest first */
    pthread_t leader_thread;
    int leader_started;
    pthread_cond_t leader_cv; /* CLOCK_MONOTONIC; also watches waiting to reconnect
                                 (contact_gen) wait on it */

    /* the automatic compactor */
    pthread_t compactor;
    int compactor_started;
    pthread_cond_t compactor_cv; /* CLOCK_MONOTONIC */
    etcd_sample_t *samples;      /* oldest first */
    size_t n_samples;
} etcd_store_t;

/* etcd_conn.c */
enum { ETCD__READ = 0, ETCD__WRITE = 1 };
/* One unary call of `method` ("/etcdserverpb.KV/Range") with the message in
 * `req`; the answer's message into *resp (malloc'd, the caller frees) and
 * *resp_len. `kind` says whether a retry on another endpoint is safe after
 * the request was sent. Errors: etcd's status mapped by etcd__error();
 * KP_EUNAVAILABLE when no endpoint could be reached; KP_ETIMEDOUT when a
 * write's outcome is unknown; KP_ETOOLARGE, KP_ENOMEM. */
int etcd__rpc(etcd_store_t *es, const char *method, const buf_t *req, int kind, int timeout_ms,
              uint8_t **resp, size_t *resp_len);
/* The endpoint requests go to now, and moving past a failed one. */
size_t etcd__endpoint(etcd_store_t *es);
void etcd__endpoint_failed(etcd_store_t *es, size_t idx);
/* Endpoint idx's shared connection, connected now if need be: a reference
 * the caller drops with etcd__conn_put(). Errors: KP_EUNAVAILABLE,
 * KP_ENOMEM. */
int etcd__conn_get(etcd_store_t *es, size_t idx, etcd_conn_t **out);
grpc_conn_t *etcd__conn_grpc(etcd_conn_t *c);
void etcd__conn_put(etcd_store_t *es, etcd_conn_t *c);
/* c (endpoint idx's) failed: out of its slot, so that the next caller
 * connects afresh; closed when its last user lets go. */
void etcd__conn_failed(etcd_store_t *es, size_t idx, etcd_conn_t *c);
/* Drop every connection and make no more (etcd_close). */
void etcd__conns_close(etcd_store_t *es);
/* Map an etcd error message to a KP_* code. */
int etcd__error(const char *msg);
/* The etcd range_end of every key starting with `prefix` ("\0" for all). */
int etcd__prefix_end(const char *prefix, char *out, size_t *outlen);

/* Learn a compaction point (store revision). */
void etcd__note_compact(etcd_store_t *es, int64_t rev);
/* Endpoint idx's connection with a reference (es->mu held), or NULL. */
etcd_conn_t *etcd__conn_ref_locked(etcd_store_t *es, size_t idx);

/* etcd_leader.c (LEADER CHANGES) */
/* A response header's raft term. Any thread, no lock held. */
void etcd__saw_term(etcd_store_t *es, uint64_t term);
/* A unary call begins and ends; the end says whether it was given up on
 * for a leader change (its KP_ETIMEDOUT or KP_EUNAVAILABLE then means
 * that, not a failed member). */
void etcd__call_begin(etcd_store_t *es, etcd_inflight_t *f);
int etcd__call_end(etcd_store_t *es, etcd_inflight_t *f);
int etcd__leader_start(etcd_store_t *es);
/* A call reached etcd (ok 1) or failed to (ok 0): after failures, the
 * first success bumps es->contact_gen and wakes the watches waiting to
 * reconnect (etcd_watch.c). */
void etcd__contact(etcd_store_t *es, int ok);
void etcd__leader_stop(etcd_store_t *es);

/* etcd_backend.c */
int etcd__write(store_t *s, store__op_t op, const char *key, size_t klen, const void *value,
                size_t vlen, int64_t expect_rev, int64_t *out_rev);

/* etcd_read.c */
int etcd__get(store_t *s, const char *key, size_t klen, int64_t rev, store_kv_t **out);
int etcd__range(store_t *s, const char *prefix, const char *after, size_t limit, int64_t rev,
                store_range_t **out);
/* The current store revision (a count-only read). */
int etcd__current_rev(etcd_store_t *es, int64_t *out);
/* Check that store revision `rev` can be read: 0, KP_ECOMPACTED or KP_EFUTURE. */
int etcd__check_rev(etcd_store_t *es, int64_t rev);

/* etcd_watch.c */
int etcd__watch_open(store_t *s, const char *prefix, int64_t after_rev, store_watch_t **out);

/* etcd_compact.c: compaction and the other maintenance calls */
int etcd__compact(store_t *s, int64_t rev);
int etcd__backup(store_t *s, const char *path, int64_t *out_rev);
int etcd__compact_revision(etcd_store_t *es, int64_t cur, int64_t *out);
int etcd__compactor_start(etcd_store_t *es);
void etcd__compactor_stop(etcd_store_t *es);

#endif
