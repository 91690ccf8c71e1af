/*
 * etcd_int.h -- the etcd backend: the history kept by an etcd v3 cluster.
 *
 * URL: "etcd://HOST:PORT[,HOST:PORT...]", the cluster's client endpoints. The
 * backend speaks etcd's v3 API through its gRPC JSON gateway (/v3/kv/...,
 * /v3/watch, /v3/maintenance/...) over libcurl: keys and values travel as
 * base64, int64s as JSON strings. etcd 3.4 or newer.
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
 * ENDPOINTS AND TIMEOUTS (etcd_http.c). Every request goes to the current
 * endpoint, with a connect timeout and a total timeout (ETCD__TIMEOUT_MS, well
 * under the 60 s a Kubernetes request may take, so that the API server
 * answers a client with the store's error rather than the client giving
 * up). A request that could not connect (no byte of it was sent) moves to
 * the next endpoint and is retried there. A read that failed later is
 * retried on the next endpoint too. A write that failed after it was sent
 * (a timeout, a broken connection, or etcd's own "request timed out") has an
 * unknown outcome: it is never retried and never reported as success, but as
 * KP_ETIMEDOUT. KP_EUNAVAILABLE means that no endpoint took the request at
 * all (refused connections, or etcd said "no leader" before proposing it).
 *
 * WATCHES (etcd_watch.c) are one /v3/watch stream each, run by a thread of
 * their own with a curl multi handle (so that cancel wakes it at once).
 * Responses are newline-separated JSON; each is parsed whole and queued. A
 * watch remembers the revision it has read up to; after a disconnect it
 * resumes from there on the next endpoint, so nothing is lost or delivered
 * twice.
 *
 * PROGRESS. etcd's timed progress notifications (progress_notify) travel
 * through the watch's own event channel on the server, after every event up
 * to their revision: they are exact, and they are the only progress this
 * backend reports. store_watch_request_progress() is a no-op: etcd takes a
 * progress request on the watch stream's request body, and the JSON gateway
 * answers a stream only after that body has ended (Go's HTTP/1 server drains
 * a request body before the first response is flushed). (Before etcd 3.4.31
 * / 3.5.13 the reply was not ordered after pending events anyway: etcd issue
 * 15220.) So a watch learns of writes outside its prefix at the server's
 * interval, --experimental-watch-progress-notify-interval (default 10m):
 * run etcd with a short one (kplane's scripts use 100ms).
 *
 * COMPACTION. etcd reports no compaction point; the backend keeps the
 * newest one it knows (its own compactions, and what reads and watches
 * learn) and store_status() checks it with a read at that revision. The
 * automatic compactor samples (time, revision) pairs to compact by age, as
 * etcd's own periodic compactor does.
 */
#ifndef KP_ETCD_INT_H
#define KP_ETCD_INT_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>

#include "store_int.h"

#define ETCD__REV_OFFSET 1
#define ETCD__MAX_ENDPOINTS 16
#define ETCD__CONNECT_MS 2000        /* per endpoint */
#define ETCD__TIMEOUT_MS 10000       /* a request; well under Kubernetes' 60 s request timeout */
#define ETCD__COMPACT_TIMEOUT_MS 60000
#define ETCD__HEALTH_TIMEOUT_MS 2000 /* store_health(): kube-apiserver's --etcd-healthcheck-timeout */
#define ETCD__HEALTH_CACHE_MS 1000   /* one health read serves callers this long */
#define ETCD__POOL 32                /* idle curl handles kept for reuse */
#define ETCD__WATCH_QUEUE_BYTES (8u << 20)  /* events queued before the stream pauses */
#define ETCD__WATCH_LINE_MAX (256u << 20)   /* one JSON response (fragments are smaller) */
#define ETCD__WATCH_RETRY_MS 200     /* first pause before a watch reconnects */
#define ETCD__PROGRESS_WARN_MS 10000 /* no progress this long after a request: warn */
#define ETCD__SAMPLES 4096           /* (time, revision) samples for compaction by age */

typedef struct etcd_sample {
    int64_t time_ns;
    int64_t rev; /* store revision seen at time_ns */
} etcd_sample_t;

typedef struct etcd_store {
    store_t base;
    char *endpoints[ETCD__MAX_ENDPOINTS]; /* "http://host:port", owned */
    size_t n_endpoints;
    store_options_t opt;

    pthread_mutex_t mu;       /* guards the fields below */
    size_t current;           /* the endpoint requests go to */
    void *pool[ETCD__POOL];   /* idle CURL easy handles */
    size_t n_pool;
    int64_t compact;          /* newest known compaction point (store revision) */
    uint64_t writes;          /* acknowledged since open */
    int closing;
    int warned_progress;      /* logged that etcd sends no progress notifications */
    int health_busy;          /* a store_health() read is under way */
    int health_rc;            /* the last one's result */
    int64_t health_at_ns;     /* CLOCK_MONOTONIC when it ended (0: never) */

    /* the automatic compactor */
    pthread_t compactor;
    int compactor_started;
    pthread_cond_t compactor_cv; /* CLOCK_MONOTONIC */
    etcd_sample_t *samples;      /* oldest first */
    size_t n_samples;
} etcd_store_t;

/* etcd_http.c */
enum { ETCD__READ = 0, ETCD__WRITE = 1 };
/* POST `req` (borrowed) to `path` ("/v3/kv/range") and parse the answer into
 * *resp (owned by the caller: json_decref). `kind` says whether a retry on
 * another endpoint is safe after the request was sent. Errors: as mapped by
 * etcd__error(); KP_EUNAVAILABLE when no endpoint could be reached;
 * KP_ETIMEDOUT when a write's outcome is unknown. */
int etcd__call(etcd_store_t *es, const char *path, json_t *req, int kind, int timeout_ms,
               json_t **resp);
/* The endpoint requests go to now, and moving past a failed one. */
size_t etcd__endpoint(etcd_store_t *es, char **url_out);
void etcd__endpoint_failed(etcd_store_t *es, size_t idx);
/* Map an etcd error message to a KP_* code. */
int etcd__error(const char *msg);
/* *pooled (may be NULL): 1 when the handle comes from the pool and may hold
 * a live connection, which libcurl would reuse (see attempt()). */
void *etcd__handle_get(etcd_store_t *es, int *pooled);
void etcd__handle_put(etcd_store_t *es, void *h);

/* JSON helpers. Bytes <-> base64 strings; int64s as JSON strings. */
json_t *etcd__b64(const void *p, size_t n);
int64_t etcd__int(const json_t *obj, const char *name);   /* 0 if absent */
int64_t etcd__header_rev(const json_t *resp);             /* etcd revision */
/* An etcd revision field as a store revision (absent stays 0). */
int64_t etcd__rev(const json_t *obj, const char *name);
/* Decode obj[name] (base64) into a new NUL-terminated allocation. */
int etcd__bytes(const json_t *obj, const char *name, char **out, size_t *len);
/* The etcd range_end of every key starting with `prefix` ("\0" for all). */
int etcd__prefix_end(const char *prefix, char *out, size_t *outlen);

/* Learn a compaction point (store revision). */
void etcd__note_compact(etcd_store_t *es, int64_t rev);

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
