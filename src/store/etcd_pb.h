/*
 * etcd_pb.h -- etcd's v3 messages in protobuf (etcdserverpb, mvccpb): the
 * requests the etcd backend sends, encoded, and the responses it reads,
 * decoded. Field numbers are etcd's (api/etcdserverpb/rpc.proto and
 * api/mvccpb/kv.proto; unchanged from 3.4 on). Revisions here are etcd's
 * own (the backend adds ETCD__REV_OFFSET, etcd_int.h).
 *
 * Encoders append one message to a buf_t: 0, or the buffer's error
 * (KP_ENOMEM, KP_ETOOLARGE). Decoders read one message: 0, or KP_ECORRUPT
 * (malformed, or a field of the wrong wire type); what they hand back
 * (keys, values, strings) points into the message and lives as long as it.
 * Unknown fields are skipped, as protobuf does. Pure functions, any thread.
 */
#ifndef KP_ETCD_PB_H
#define KP_ETCD_PB_H

#include <stddef.h>
#include <stdint.h>

#include "lib/buf.h"

/* ---- requests ---- */

enum { ETCD_PB_KEYS_ONLY = 1u << 0, ETCD_PB_COUNT_ONLY = 1u << 1 };

/* RangeRequest of [key, end) (end NULL: the key alone; a 1-byte NUL end:
 * every key from key on), at most `limit` keys (0: all), at revision `rev`
 * (0: the newest), flags ETCD_PB_*. */
int etcd_pb_range(buf_t *b, const void *key, size_t klen, const void *end, size_t elen,
                  int64_t limit, int64_t rev, unsigned flags);

/* The write transaction of the backend (WRITES in etcd_int.h):
 *   ETCD_PB_CREATE  if create_revision(key) == 0 then put
 *   ETCD_PB_PUT     if mod_revision(key) == expect (expect 0: if
 *                   create_revision(key) > 0) then put, else range key
 *   ETCD_PB_DELETE  the same, then delete
 * The failure branch's range (keys only) tells a missing key from another
 * version (etcd_pb_txn_result_t). */
enum { ETCD_PB_CREATE = 1, ETCD_PB_PUT = 2, ETCD_PB_DELETE = 3 };
int etcd_pb_write_txn(buf_t *b, int op, const void *key, size_t klen, const void *value,
                      size_t vlen, int64_t expect);

/* CompactionRequest at `rev`, physical (wait until it is applied) or not. */
int etcd_pb_compact(buf_t *b, int64_t rev, int physical);

/* WatchRequest{create_request} of [key, end) from start_rev (0: now), with
 * each event's previous kv and, when progress_notify, etcd's timed progress
 * responses; fragment: large revisions may come in several responses. */
int etcd_pb_watch_create(buf_t *b, const void *key, size_t klen, const void *end, size_t elen,
                         int64_t start_rev, int progress_notify, int fragment);
/* WatchRequest{progress_request}: etcd answers on the stream with a
 * response of no events at its current revision, after the events before. */
int etcd_pb_watch_progress(buf_t *b);
/* WatchRequest{cancel_request}. */
int etcd_pb_watch_cancel(buf_t *b, int64_t watch_id);

/* ---- responses ---- */

typedef struct etcd_pb_header {
    uint64_t cluster_id, member_id, raft_term;
    int64_t revision;
} etcd_pb_header_t;

/* mvccpb.KeyValue; key and value borrowed from the message. */
typedef struct etcd_pb_kv {
    const uint8_t *key, *value;
    size_t key_len, value_len;
    int64_t create_rev, mod_rev, version, lease;
} etcd_pb_kv_t;

/* Called once per kv, in order; a non-zero return stops the decoding and
 * is returned. */
typedef int (*etcd_pb_kv_fn)(void *arg, const etcd_pb_kv_t *kv);

/* RangeResponse: its header, each kv (each may be NULL), more and count. */
int etcd_pb_range_resp(const uint8_t *p, size_t n, etcd_pb_header_t *h, etcd_pb_kv_fn each,
                       void *arg, int *more, int64_t *count);

/* TxnResponse of etcd_pb_write_txn(): whether the compare held and, when it
 * did not, the first kv of the failure branch's range (found 0: none). */
typedef struct etcd_pb_txn_result {
    etcd_pb_header_t h;
    int succeeded;
    int found;
    etcd_pb_kv_t kv;
} etcd_pb_txn_result_t;
int etcd_pb_txn_resp(const uint8_t *p, size_t n, etcd_pb_txn_result_t *out);

/* A header alone (CompactionResponse, and the header of any response):
 * the first field 1, without reading past it. */
int etcd_pb_header_resp(const uint8_t *p, size_t n, etcd_pb_header_t *h);

/* mvccpb.Event. */
enum { ETCD_PB_EV_PUT = 0, ETCD_PB_EV_DELETE = 1 };
typedef struct etcd_pb_event {
    int type;
    etcd_pb_kv_t kv;
    int has_prev;
    etcd_pb_kv_t prev;
} etcd_pb_event_t;
typedef int (*etcd_pb_event_fn)(void *arg, const etcd_pb_event_t *ev);

/* WatchResponse: its fields, then each event (each may be NULL: counted
 * only). */
typedef struct etcd_pb_watch_resp {
    etcd_pb_header_t h;
    int64_t watch_id, compact_revision;
    int created, canceled, fragment;
    const char *cancel_reason; /* not NUL-terminated; cancel_reason_len bytes */
    size_t cancel_reason_len;
    size_t events;
} etcd_pb_watch_resp_t;
int etcd_pb_watch_resp(const uint8_t *p, size_t n, etcd_pb_watch_resp_t *out, etcd_pb_event_fn each,
                       void *arg);

/* StatusResponse. */
typedef struct etcd_pb_status {
    etcd_pb_header_t h;
    char version[32]; /* NUL-terminated, truncated */
    int64_t db_size, db_size_in_use;
    uint64_t leader, raft_index, raft_term;
} etcd_pb_status_t;
int etcd_pb_status_resp(const uint8_t *p, size_t n, etcd_pb_status_t *out);

/* SnapshotResponse: a chunk of the snapshot (borrowed). */
typedef struct etcd_pb_snapshot {
    etcd_pb_header_t h;
    uint64_t remaining_bytes;
    const uint8_t *blob;
    size_t blob_len;
} etcd_pb_snapshot_t;
int etcd_pb_snapshot_resp(const uint8_t *p, size_t n, etcd_pb_snapshot_t *out);

#endif
