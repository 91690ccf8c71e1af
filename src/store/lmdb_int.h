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
 *      writes and syncs the data pages, then writes the meta page; the
 *      writer's fdatasync then makes that meta page durable, and the writer
 *      is told 0 only after it. So what a reader sees is durable, except in
 *      state UNSYNCED below (a sync that failed after the commit).
 *   6. A failed commit acknowledges nothing. If it lacked space (SPACE below)
 *      the store refuses writes with KP_ENOSPC until space returns, then goes
 *      on by itself; any other failure poisons it: no later write starts
 *      until the store is reopened (the on-disk state is LMDB's last good one).
 *   7. Revisions come from meta.rev read inside each write transaction, never
 *      from memory: after any failure the next batch continues from what
 *      LMDB shows, so a revision that readers may have seen is never reused
 *      by this process (see S3 for the one case a crash can undo).
 *
 * SPACE (lmdb_space.c). Where a commit can fail, and what LMDB is left with:
 *
 *   a. applying the batch (mdb_put: MDB_MAP_FULL, ...), writing or syncing
 *      its data pages (ENOSPC, EDQUOT, EIO; LMDB says EIO for a short write):
 *      LMDB aborts the transaction. The pages it wrote were free pages, which
 *      no durable meta page references (LMDB reuses only pages freed before
 *      the older of its two meta pages), so the store is exactly its last
 *      commit, durable. Retrying is safe, as often as needed.
 *   b. writing the meta page (only on a copy-on-write filesystem can that
 *      lack space): LMDB marks the environment fatal (MDB_PANIC); only a
 *      reopen helps: poisoned.
 *   c. our fdatasync after a successful mdb_txn_commit: the batch is visible
 *      but its meta page may not be on disk, and after a failed sync Linux
 *      may never write it (the page is marked clean). Its data pages were
 *      synced in (a). One later commit whose sync succeeds makes a complete,
 *      durable state (it keeps the trees of both earlier meta pages intact
 *      while it writes); two failures in a row could let LMDB reuse the pages
 *      of the last durable tree, so the second one poisons.
 *
 *   States (guarded by mu): OK; NOSPACE (nospace != 0: writes fail at once
 *   with KP_ENOSPC, except one trial batch per backoff interval, 50 ms
 *   doubling to 1 s); UNSYNCED (unsynced: case c happened, nothing since
 *   synced); POISONED.
 *
 *     OK --(a, c lacking space; lmdb__fail_locked)--> NOSPACE
 *     NOSPACE --(a trial batch commits and syncs, or lmdb__health()
 *               reserves room; lmdb__recovered_locked)--> OK
 *     any --(b; c while UNSYNCED; any failure not for space)--> POISONED
 *
 *   S1. A failure is "no space" if LMDB or the reservation said ENOSPC or
 *       EDQUOT, LMDB said MDB_MAP_FULL, or LMDB said EIO while the disk has
 *       less room than the batch needed (lmdb__fail_classify()).
 *   S2. While UNSYNCED, notify_rev stays below the unsynced batch: watches
 *       deliver it only after a later sync made it durable, and reads may
 *       show it meanwhile (its writers were told it failed: its outcome is
 *       unknown to them, as for a timed-out etcd write).
 *   S3. If the process dies while UNSYNCED, the restarted store may lack
 *       that batch and give its revisions again; nothing acknowledged or
 *       delivered to a watch is lost or changed by that.
 *   S4. The leader reserves room for each batch past the end of the file
 *       (fallocate, KEEP_SIZE) before it commits; a failed reservation is
 *       only evidence for S1, never a reason to fail a batch by itself (free
 *       pages inside the file may still hold it).
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
 * commit and sync returned 0 (a commit whose sync failed after LMDB made it
 * visible is delivered only once a later sync made it durable, S2). A commit
 * wakes only the watches whose prefix one of its keys has (each watch sleeps
 * on its own condition variable), so that N watches on N resources cost one
 * wakeup per write, not N. The others are told the batch's revisions hold
 * nothing for them (a "quiet" range per watch, extended while batches follow
 * one another), and move past them without reading the log: a write costs
 * no work in watches on other resources, however many there are. Only
 * another process's commits must be read past (within LMDB__WATCH_POLL_MS,
 * noticed by LMDB transaction ids this process did not commit).
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
#define LMDB__RESERVE_CHUNK (8ull << 20)    /* room reserved past the file's end at once */
#define LMDB__RESERVE_MIN (1ull << 20)      /* slack added to every batch's estimate */
#define LMDB__PROBE_MIN_NS 50000000ll       /* first trial 50 ms after running out */
#define LMDB__PROBE_MAX_NS 1000000000ll     /* then doubling up to 1 s */
#define LMDB__NOSPACE_QUIET_NS 60000000000ll /* an episode this soon after the last is not logged */

enum { LMDB__NOSPACE_DISK = 1, LMDB__NOSPACE_MAP = 2 };
enum { LMDB__FAIL_CLEAN = 1, LMDB__FAIL_FATAL = 2, LMDB__FAIL_UNSYNCED = 3 };

/* A failed commit: where it failed (SPACE a/b/c) and why. */
typedef struct lmdb__fail {
    int rc;         /* KP_* code given to the batch's writers */
    int mdb_rc;     /* LMDB's or errno's code, 0 if not from LMDB */
    int reserve_rc; /* what the reservation before it said */
    int phase;      /* LMDB__FAIL_* */
    int space;      /* LMDB__NOSPACE_* if it lacked space (S1), else 0 */
} lmdb__fail_t;

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
    int nospace;                /* LMDB__NOSPACE_*: out of space (SPACE), else 0 */
    int unsynced;               /* a commit is visible whose sync failed (SPACE c) */
    int nospace_logged;         /* this episode was logged */
    int64_t probe_ns;           /* CLOCK_MONOTONIC: the next trial may start */
    int64_t backoff_ns;         /* the interval after the next failed trial */
    int64_t nospace_since_ns;   /* the episode began */
    int64_t nospace_quiet_ns;   /* episodes starting before this are not logged */
    uint64_t refused;           /* writes refused in this episode */
    int closing;
    int64_t notify_rev;         /* newest revision announced to watches */
    uint64_t own_txnid;         /* newest LMDB txn id this process committed */
    uint64_t foreign_txnid;     /* at or above the newest txn id known (or
                                   suspected) to be another process's */
    uint64_t writes, commits;   /* acknowledged since open, for store_status() */
    uint64_t watch_reads;       /* log records read by watches (atomic, not mu) */

    pthread_mutex_t space_mu;   /* guards the two below */
    uint64_t reserved_end;      /* the file has room allocated up to here */
    int reserve_off;            /* the filesystem has no fallocate */

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
/* This process committed the revisions (first, last], durable, and called
 * lmdb__watch_wake_locked() for each key written: every watch not woken by
 * them learns that those revisions hold nothing for it, and moves past them
 * without reading them. ls->mu held. */
void lmdb__watch_quiet_locked(lmdb_store_t *ls, int64_t first, int64_t last);
/* A write transaction of this process committed as `txnid` (any other
 * transaction id is another process's, for the watches). ls->mu held. */
void lmdb__own_txn_locked(lmdb_store_t *ls, uint64_t txnid);
/* Wake every watch (closing). ls->mu held. */
void lmdb__watch_wake_all_locked(lmdb_store_t *ls);

/* lmdb_space.c */
/* Room a batch of `n` writes with `bytes` of keys and values may take. */
uint64_t lmdb__space_need(size_t bytes, size_t n);
/* Make sure `need` bytes past the file's end are allocated (S4): 0, or
 * KP_ENOSPC (no space or over quota), KP_EIO. */
int lmdb__reserve(lmdb_store_t *ls, uint64_t need);
/* Bytes free to us on the store's filesystem (UINT64_MAX if unknown). */
uint64_t lmdb__disk_free(lmdb_store_t *ls);
/* Fill f->space and turn f->rc into KP_ENOSPC per S1; returns f->rc. */
int lmdb__fail_classify(lmdb_store_t *ls, lmdb__fail_t *f, uint64_t need);
/* 1 if LMDB marked the environment fatal (SPACE b). */
int lmdb__env_panicked(lmdb_store_t *ls);
/* The state transition for a failed commit; logs once per episode. mu held. */
void lmdb__fail_locked(lmdb_store_t *ls, const lmdb__fail_t *f);
/* A commit synced (`synced`; also ends UNSYNCED) or room was reserved: end
 * NOSPACE, logging `how` if the episode was logged. mu held. */
void lmdb__recovered_locked(lmdb_store_t *ls, int synced, const char *how);
/* May a batch start? 0, KP_EPOISONED, or KP_ENOSPC (refused: no trial is
 * due). With `trial`, a batch admitted in NOSPACE becomes the trial. mu held. */
int lmdb__admit_locked(lmdb_store_t *ls, int trial);
/* store_health(). */
int lmdb__health(store_t *s, char *why, size_t len);

/* lmdb_compact.c */
int lmdb__compact(store_t *s, int64_t rev);
int lmdb__compactor_start(lmdb_store_t *ls);
void lmdb__compactor_stop(lmdb_store_t *ls);

#endif
