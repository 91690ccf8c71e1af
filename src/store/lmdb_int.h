/*
 * lmdb_int.h -- the embedded backend: the history kept in one LMDB environment.
 *
 * LAYOUT. Four named databases in DIR/data.mdb:
 *
 *   meta  "format" -> u32 (LMDB__FORMAT)
 *         "rev"    -> i64, the newest revision (0 for an empty store)
 *         "compact"-> i64, the compaction revision (0: nothing compacted)
 *   kv    key -> kvrec: create_rev, mod_rev, version, then the value.
 *         The live keys at the newest revision; serves reads at "now".
 *   log   big-endian revision -> logrec: type, key length, create_rev,
 *         version, prev_rev, commit time, key, value.
 *         One record per accepted write: the history, and what watches read.
 *   idx   (DUPSORT, DUPFIXED) key -> big-endian revisions of its log records.
 *         Finds a key's record at an older revision: the newest one <= rev.
 *
 * INVARIANTS (checked by lmdb__check_meta() in debug builds and by the tests):
 *   1. meta.rev = the largest key of `log` above meta.compact; every revision
 *      in (compact, rev] has exactly one log record: no gaps, no reuse.
 *   2. kv holds a key iff its newest log record is a PUT, and then the kvrec
 *      equals that record (create_rev, mod_rev = its revision, version, value).
 *   3. For every key, idx lists exactly the revisions of its log records.
 *   4. Compaction to C keeps, for each key, its newest record <= C if that is a
 *      PUT, and drops every other record <= C (and its idx entry). So the state
 *      at any revision >= C is complete, and every record above C is kept.
 *   5. A write becomes visible to readers only by mdb_txn_commit(), which
 *      writes and syncs the data pages, then the meta page (O_DSYNC). So what a
 *      reader sees is durable; the writer is told 0 only after that commit.
 *   6. After a failed commit the store is poisoned: no later write starts
 *      until the store is reopened (the on-disk state is LMDB's last good one).
 *
 * WRITE PATH (lmdb_write.c), leader/follower group commit:
 *
 *     write() --queue--> [pending] --leader takes all--> [in txn]
 *        ^                                                  | apply_batch()
 *        |                                        mdb_txn_commit (fsync)
 *     rc returned <--- done, post each writer <------------+
 *
 *   A writer queues its request; if no commit is running it becomes the leader,
 *   waits briefly for the last batch's writers to queue again (gather()),
 *   takes every pending request, applies them in one write transaction (each
 *   gets its own revision, or its own error), commits once, wakes the batch's
 *   writers one by one and the head of the queue, who leads the next batch.
 *
 * WATCH (lmdb_watch.c): a watch is a cursor over `log`, not a buffer fed by
 * writers: it reads records above its revision in a read transaction, so it is
 * exact, in order, durable and resumable for free; a slow watcher costs no
 * memory. It delivers nothing above notify_rev, the newest revision whose
 * commit returned 0 (a commit that fails after LMDB made it visible is never
 * delivered). A commit wakes only the watches whose prefix one of its keys
 * has (each watch sleeps on its own condition variable), so that N watches
 * on N resources cost one wakeup per write, not N; the others read past
 * unrelated revisions within LMDB__WATCH_POLL_MS, as they notice a writer in
 * another process.
 */
#ifndef KP_LMDB_INT_H
#define KP_LMDB_INT_H

#include <lmdb.h>
#include <pthread.h>
#include <stdint.h>

#include "store_int.h"

#define LMDB__FORMAT 1u
#define LMDB__DEFAULT_MAP (8ull << 30)
#define LMDB__BATCH_MAX 1024                /* writes per group commit */
#define LMDB__BATCH_BYTES (64u << 20)       /* value bytes per group commit */
#define LMDB__GATHER_NS 200000              /* longest wait for a batch to fill */
#define LMDB__WATCH_BATCH 256               /* events read per read txn */
#define LMDB__WATCH_BYTES (4u << 20)        /* event bytes buffered per read txn */
#define LMDB__WATCH_POLL_MS 250
#define LMDB__COMPACT_STEP 4096             /* revisions per compaction txn */

enum { LMDB__PUT = 1, LMDB__DEL = 2 };

/* The fixed head of a log record; key and value bytes follow. */
typedef struct lmdb__logrec {
    uint8_t type;
    uint8_t pad[3];
    uint32_t key_len;
    int64_t create_rev;
    int64_t version;
    int64_t prev_rev; /* the key's previous record, 0 if it did not exist */
    int64_t time_ns;  /* wall clock at commit, for compaction by age */
} lmdb__logrec_t;

/* The fixed head of a kv record; the value follows. */
typedef struct lmdb__kvrec {
    int64_t create_rev;
    int64_t mod_rev;
    int64_t version;
} lmdb__kvrec_t;

typedef struct lmdb__wreq lmdb__wreq_t;
typedef struct lmdb_watch lmdb_watch_t;

typedef struct lmdb_store {
    store_t base;
    MDB_env *env;
    MDB_dbi meta, kv, log, idx;
    char *dir;
    store_options_t opt;

    pthread_mutex_t mu;         /* guards the fields below */
    lmdb_watch_t *watches;      /* open watches, to wake on commits */
    lmdb__wreq_t *pending;      /* queued writes, oldest first */
    lmdb__wreq_t **pending_tail;
    size_t pending_n;           /* length of the pending queue */
    int committing;             /* a leader is gathering or applying a batch */
    int gathering;              /* the leader waits on gather_cv for writers */
    size_t gather_target;       /* writers the next batch should wait for */
    pthread_cond_t gather_cv;   /* a write was queued; CLOCK_MONOTONIC */
    uint64_t commit_seq;        /* bumped as each batch starts */
    int poisoned;               /* rc of the failed commit, 0 if none */
    int closing;
    int64_t notify_rev;         /* newest revision announced to watches */
    uint64_t writes, commits;   /* acknowledged since open, for store_status() */

    pthread_mutex_t compact_mu; /* one compaction at a time */
    pthread_t compactor;
    int compactor_started;
    pthread_cond_t compactor_cv; /* wakes the compactor to stop; CLOCK_MONOTONIC */
} lmdb_store_t;

/* lmdb_backend.c */
int lmdb__rc(int mdb_rc);                /* map an LMDB or errno code to KP_* */
void lmdb__rev_key(int64_t rev, unsigned char out[8]);
int64_t lmdb__rev_from_key(const MDB_val *k);
int lmdb__meta_get(MDB_txn *txn, lmdb_store_t *ls, const char *name, int64_t *out);
int lmdb__meta_put(MDB_txn *txn, lmdb_store_t *ls, const char *name, int64_t v);
/* Read a log record; *key / *value point into the map (valid until txn end). */
int lmdb__log_get(MDB_txn *txn, lmdb_store_t *ls, int64_t rev, lmdb__logrec_t *rec,
                  const char **key, const char **value, size_t *value_len);
void lmdb__poison_locked(lmdb_store_t *ls, int rc); /* ls->mu held */

/* lmdb_write.c */
int lmdb__write(store_t *s, store__op_t op, const char *key, size_t klen, const void *value,
                size_t vlen, int64_t expect_rev, int64_t *out_rev);

/* lmdb_read.c */
int lmdb__get(store_t *s, const char *key, size_t klen, int64_t rev, store_kv_t **out);
int lmdb__range(store_t *s, const char *prefix, const char *after, size_t limit, int64_t rev,
                store_range_t **out);
/* Find `key` as of `rev` through idx; 0 with the record, or KP_ENOTFOUND. */
int lmdb__lookup_at(MDB_txn *txn, lmdb_store_t *ls, const char *key, size_t klen, int64_t rev,
                    int64_t *rec_rev, lmdb__logrec_t *rec, const char **value, size_t *vlen);

/* lmdb_watch.c */
int lmdb__watch_open(store_t *s, const char *prefix, int64_t after_rev, store_watch_t **out);
/* Wake the watches whose prefix `key` has. ls->mu held. */
void lmdb__watch_wake_locked(lmdb_store_t *ls, const char *key, size_t klen);
/* Wake every watch (closing). ls->mu held. */
void lmdb__watch_wake_all_locked(lmdb_store_t *ls);

/* lmdb_compact.c */
int lmdb__compact(store_t *s, int64_t rev);
int lmdb__compactor_start(lmdb_store_t *ls);
void lmdb__compactor_stop(lmdb_store_t *ls);

#endif
