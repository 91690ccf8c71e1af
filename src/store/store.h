/*
 * store.h -- the one history of the cluster.
 *
 * A store is an ordered, durable sequence of accepted writes over a flat key
 * space, modelled on etcd v3 so that every backend satisfies it exactly:
 *
 *  - One global revision (int64) grows by exactly one per accepted write. It is
 *    never reused and never goes down, also across restarts. Revision 0 is the
 *    empty store; the first write gets revision 1.
 *  - Every key carries create_rev, mod_rev and version (1 at create, +1 per update).
 *  - A call that returns 0 for a write has been made durable (fsynced by the
 *    embedded backend) before it returned. Concurrent writers share one commit
 *    and one fsync (group commit); none of them skips it.
 *  - A commit that fails acknowledges none of its writes. If it failed for lack
 *    of space (disk full, over quota, or the map full), later writes fail at
 *    once with KP_ENOSPC while the store retries by itself now and then (at
 *    most a second apart, or when store_health() is called); the first commit
 *    that succeeds ends that, with no reopen. After any other failure (an I/O
 *    error) every later write fails with KP_EPOISONED until the store is closed
 *    and opened again. Reads and watches keep working meanwhile where the
 *    backend can serve them.
 *  - Compaction to revision C drops the history below C; the state as of C and
 *    every later revision stays readable. Reads at, and watches from, a revision
 *    below C fail with KP_ECOMPACTED; nothing is silently skipped.
 *
 * Keys are NUL-terminated, 1..STORE_KEY_MAX bytes, without NUL inside; values
 * are byte strings of at most STORE_VALUE_MAX bytes. Kubernetes keys look like
 * "/registry/<group>/<resource>/<namespace>/<name>".
 *
 * Threads: every call may be made from any thread at once, except that one
 * store_watch_t is used by one thread at a time (store_watch_cancel() excepted),
 * and store_close() comes after every other call on that store has returned
 * and every watch on it has been closed.
 *
 * Errors are the negative KP_* codes of lib/err.h; each call lists its own.
 * KP_EINVAL (bad argument) and KP_ENOMEM may come from any call that allocates.
 */
#ifndef KP_STORE_H
#define KP_STORE_H

#include <stddef.h>
#include <stdint.h>

#define STORE_KEY_MAX 400                  /* bytes, without the NUL */
#define STORE_VALUE_MAX (3 * 1024 * 1024)  /* bytes; the API body cap */

typedef struct store store_t;
typedef struct store_watch store_watch_t;

typedef struct store_options {
    /* lmdb: the largest the data file may grow to; 0 means 8 GiB. Writes past
     * it fail with KP_ENOSPC (see above: until compaction frees pages). */
    uint64_t map_size;
    /* Automatic compaction. Each check compacts to the newest revision that
     * keeps at least `keep_revisions` revisions of history and all history
     * younger than `keep_seconds`; a zero limit is off, both zero is no
     * automatic compaction. `compact_interval_ms` 0 means 5000. */
    int64_t keep_revisions;
    int64_t keep_seconds;
    int compact_interval_ms;
} store_options_t;

/* A key's value at a revision. In a store_event_t of type STORE_DELETE, `kv`
 * carries the key and mod_rev (the delete's revision), with version 0 and no
 * value. `value` is followed by a NUL byte, not counted in value_len. */
typedef struct store_kv {
    const char *key;
    size_t key_len;
    const char *value;
    size_t value_len;
    int64_t create_rev;
    int64_t mod_rev;
    int64_t version;
} store_kv_t;

/* The result of store_range(). Owned by the caller: free it with
 * store_range_free(); every pointer inside lives exactly as long. */
typedef struct store_range {
    int64_t revision; /* the snapshot the range was read at */
    size_t count;
    store_kv_t *kvs;  /* `count` kvs in key order */
    int more;         /* 1 if keys under the prefix follow the last one */
} store_range_t;

typedef enum store_event_type {
    STORE_PUT = 1,
    STORE_DELETE = 2,
    STORE_PROGRESS = 3, /* see store_watch_progress() */
} store_event_type_t;

/* One change. Borrowed from the watch: valid until the next store_watch_next()
 * or store_watch_close() on it. */
typedef struct store_event {
    store_event_type_t type;
    store_kv_t kv;    /* the key after the change (for a delete, see store_kv) */
    int has_prev;     /* 1 if the key existed before this change */
    store_kv_t prev;  /* the key before the change, when has_prev */
} store_event_t;

typedef struct store_status {
    int64_t revision;          /* newest accepted revision */
    int64_t compact_revision;  /* reads and watches below this fail (0: none) */
    uint64_t keys;             /* live keys at `revision` */
    uint64_t db_bytes;         /* bytes the data file uses */
    uint64_t file_bytes;       /* bytes allocated on disk for the data file */
    uint64_t writes;           /* writes acknowledged since this handle opened */
    uint64_t commits;          /* durable commits they took (group commit) */
    uint64_t watch_reads;      /* history records watches read since open
                                  (LMDB; 0 on etcd, which filters itself) */
} store_status_t;

/* ---- lifecycle ---- */

/* Open a store. `url` is "lmdb:DIR" (DIR is created if missing; the data lives
 * in DIR/data.mdb), or "etcd://HOST:PORT[,HOST:PORT...]" for an etcd cluster
 * (see store/etcd_int.h; there, a write whose outcome is unknown fails with
 * KP_ETIMEDOUT, and with KP_EUNAVAILABLE when no endpoint answers, as does
 * any call). `opt` may be NULL for the defaults.
 * *out is owned by the caller until store_close().
 * Errors: KP_EINVAL (unknown scheme, bad options), KP_EIO, KP_ECORRUPT (not a
 * kplane store, or from a newer format), KP_ENOSPC. */
int store_open(const char *url, const store_options_t *opt, store_t **out);

/* Stop the automatic compactor and release the store. NULL is a no-op.
 * To stop threads blocked in store_watch_next(), store_watch_cancel() them. */
void store_close(store_t *s);

/* ---- writes (each one durable when it returns 0) ---- */

/* Create `key`; *out_rev (may be NULL) gets the new revision.
 * Errors: KP_EEXIST, KP_ETOOLARGE, KP_EIO, KP_ENOSPC, KP_EPOISONED. */
int store_create(store_t *s, const char *key, const void *value, size_t len,
                 int64_t *out_rev);

/* Replace `key`'s value if its mod_rev equals `expect_rev` (0: any existing
 * key). *out_rev (may be NULL) gets the new revision on success, and the
 * key's current mod_rev on KP_ECONFLICT.
 * Errors: KP_ENOTFOUND, KP_ECONFLICT, KP_ETOOLARGE, KP_EIO, KP_ENOSPC,
 * KP_EPOISONED. */
int store_update(store_t *s, const char *key, const void *value, size_t len,
                 int64_t expect_rev, int64_t *out_rev);

/* Delete `key` if its mod_rev equals `expect_rev` (0: any). *out_rev as for
 * store_update. Errors: KP_ENOTFOUND, KP_ECONFLICT, KP_EIO, KP_ENOSPC,
 * KP_EPOISONED. */
int store_delete(store_t *s, const char *key, int64_t expect_rev, int64_t *out_rev);

/* ---- reads ---- */

/* Read `key` as of revision `rev` (0: the newest). *out is owned by the
 * caller: free it with free() (one allocation holds key and value).
 * Errors: KP_ENOTFOUND, KP_ECOMPACTED (rev below the compaction point),
 * KP_EFUTURE (rev above the newest). */
int store_get(store_t *s, const char *key, int64_t rev, store_kv_t **out);

/* Up to `limit` keys (0: no limit) that start with `prefix` ("" is every key)
 * and sort strictly after `after` (NULL or "": from the first), as of
 * revision `rev` (0: the newest). For the next page, pass the last key as
 * `after` and the result's revision as `rev`: the pages then form one
 * consistent snapshot.
 * Errors: KP_ECOMPACTED, KP_EFUTURE. */
int store_range(store_t *s, const char *prefix, const char *after, size_t limit,
                int64_t rev, store_range_t **out);
void store_range_free(store_range_t *r);

int store_status(store_t *s, store_status_t *out);

/* Is `key`'s value at mod_rev `rev` stored in a form other than the one a
 * write would give it now: under an encryption key that is not the writing
 * one (store/encrypt.h; Kubernetes calls such a read "stale")? An update
 * that changes nothing is then still written, so that rewriting an object
 * unchanged (`kubectl replace`) moves it to the new key. 0 for stores that
 * encrypt nothing, for keys they do not cover, and on any error. */
int store_stale(store_t *s, const char *key, int64_t rev);

/* The newest accepted revision, read linearizably: every write acknowledged
 * before the call began is at or below it (what a consistent read waits
 * for). Cheaper than store_status() on a remote backend: one round trip. */
int store_revision(store_t *s, int64_t *out);

/* Can the store take writes? 0 if so; KP_ENOSPC while it refuses writes for
 * lack of space (this call also checks whether space has returned, when a
 * retry is due), KP_EPOISONED when only a reopen helps; for etcd, the error
 * of a revision read within 2 s (KP_EUNAVAILABLE, KP_ETIMEDOUT, ...), whose
 * result serves every caller for a second. `why` (may be NULL) gets one
 * line for a log or a health check: "ok" or the reason. Cheap: no I/O for
 * lmdb unless a retry is due; at most one round trip a second for etcd. */
int store_health(store_t *s, char *why, size_t len);

/* ---- watches ---- */

/* Watch every change to keys under `prefix` with a revision above `after_rev`
 * (a negative after_rev: above the newest revision at this call). Changes
 * arrive exactly once, in revision order, each with its previous value, and
 * only after they are durable. *out is owned by the caller until
 * store_watch_close(). History is durable: a watch opened after a restart
 * from revision R sees every change above R.
 * Errors: KP_ECOMPACTED (after_rev below the compaction point), KP_EFUTURE. */
int store_watch_open(store_t *s, const char *prefix, int64_t after_rev,
                     store_watch_t **out);

/* Wait up to `timeout_ms` (negative: forever) for the next change. On 0, *ev
 * is borrowed (see store_event_t).
 * Errors: KP_ETIMEDOUT; KP_ECOMPACTED when compaction overtook an unread part
 * of the history (sticky: reopen the watch from a fresh read); KP_ECLOSED
 * once store_watch_cancel() has been called. */
int store_watch_next(store_watch_t *w, int timeout_ms, const store_event_t **ev);

/* With `on`, store_watch_next() also returns an event of type STORE_PROGRESS
 * when the history moved past revisions that hold no change under the prefix:
 * its kv.mod_rev is the revision read up to, its other fields are empty. A
 * cache of the prefix then knows it is current without a change to show for
 * it (etcd's progress notification). Off by default. Writes outside the
 * prefix do not wake a watch: it reads past them within a fraction of a
 * second (LMDB__WATCH_POLL_MS), or promptly after
 * store_watch_request_progress(). */
void store_watch_progress(store_watch_t *w, int on);

/* Ask the watch to read up to the newest durable revision now, so that a
 * watch with progress on reports it soon (etcd's RequestProgress). Safe from
 * any thread while another uses the watch; a no-op on a cancelled watch. */
void store_watch_request_progress(store_watch_t *w);

/* The revision the watch has read up to: events at and below it were
 * delivered or filtered out. A caller can resume from it with a new watch. */
int64_t store_watch_revision(const store_watch_t *w);

/* Make a blocked or later store_watch_next() return KP_ECLOSED. Safe from any
 * thread while another uses the watch. */
void store_watch_cancel(store_watch_t *w);
void store_watch_close(store_watch_t *w);

/* ---- maintenance ---- */

/* Drop the history below `rev`: afterwards the store can still be read as of
 * `rev` or later, and watched from `rev` on. Runs in bounded steps, so writers
 * wait for one step at most.
 * Errors: KP_ECOMPACTED (rev at or below the compaction point), KP_EFUTURE,
 * KP_EIO, KP_ENOSPC, KP_EPOISONED. */
int store_compact(store_t *s, int64_t rev);

/* Write a consistent copy of the store, as of one revision, to `path` while
 * writes go on; *out_rev (may be NULL) gets that revision. The copy is
 * fsynced and then linked into place. Errors: KP_EEXIST (path exists),
 * KP_ENOTFOUND (its directory does not exist), KP_EIO. */
int store_backup(store_t *s, const char *path, int64_t *out_rev);

/* Install a backup file as the store in directory `dir` (which must not hold
 * a store yet). Errors: KP_EEXIST, KP_ENOTFOUND (no such backup file),
 * KP_ECORRUPT (not a backup, or truncated), KP_EIO. */
int store_restore(const char *backup_path, const char *dir);

#endif
