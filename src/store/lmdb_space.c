/*
 * lmdb_space.c -- running out of space, and coming back (see SPACE in
 * lmdb_int.h for the states and the rules that keep them safe).
 *
 * Three jobs:
 *  - reserve: before a batch, the leader makes sure the data file has room
 *    allocated past its end (fallocate, FALLOC_FL_KEEP_SIZE), so that a full
 *    disk shows up as ENOSPC from that call, with its real errno, rather than
 *    as the EIO LMDB reports for a short write half-way through a commit;
 *  - classify: a failed commit is a lack of space (recoverable) or another
 *    failure (the store is poisoned, as before);
 *  - recover: while out of space, writes are refused at once with KP_ENOSPC,
 *    except one trial batch per backoff interval; lmdb__health() (the
 *    readiness check) also re-checks the disk when a trial is due. The first
 *    commit or reservation that succeeds ends the episode.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <stdio.h>

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "lmdb_int.h"

/* The file's fd: LMDB's own (fallocate and fstatvfs ignore its offset). */
static int data_fd(lmdb_store_t *ls, int *fd)
{
    mdb_filehandle_t h;
    if (mdb_env_get_fd(ls->env, &h)) return KP_EIO;
    *fd = h;
    return 0;
}

uint64_t lmdb__space_need(size_t bytes, size_t n)
{
    /* A record's bytes land twice (log and kv), its key three times, and each
     * write dirties a few tree pages; the rest is slack for branch splits. */
    return 3 * (uint64_t)bytes + (uint64_t)n * 512 + LMDB__RESERVE_MIN;
}

int lmdb__reserve(lmdb_store_t *ls, uint64_t need)
{
    int fd, rc = data_fd(ls, &fd);
    if (rc) return rc;
    struct stat st;
    if (fstat(fd, &st)) return lmdb__rc(errno);
    uint64_t size = (uint64_t)st.st_size;
    pthread_mutex_lock(&ls->space_mu);
    if (ls->reserve_off || size + need <= ls->reserved_end) goto out;
    uint64_t len = need < LMDB__RESERVE_CHUNK ? LMDB__RESERVE_CHUNK : need;
    int r = fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)size, (off_t)len);
    if (r && (errno == ENOSPC || errno == EDQUOT) && len > need) {
        len = need; /* not a whole chunk: is there room for this batch? */
        r = fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)size, (off_t)len);
    }
    if (r == 0) {
        ls->reserved_end = size + len;
    } else if (errno == EOPNOTSUPP || errno == ENOSYS) {
        ls->reserve_off = 1; /* the filesystem cannot: classify by statvfs alone */
    } else {
        rc = lmdb__rc(errno);
    }
out:
    pthread_mutex_unlock(&ls->space_mu);
    return rc;
}

uint64_t lmdb__disk_free(lmdb_store_t *ls)
{
    int fd;
    struct statvfs vfs;
    if (data_fd(ls, &fd) || fstatvfs(fd, &vfs)) return UINT64_MAX;
    return (uint64_t)vfs.f_bavail * vfs.f_frsize;
}

int lmdb__fail_classify(lmdb_store_t *ls, lmdb__fail_t *f, uint64_t need)
{
    if (f->mdb_rc == MDB_MAP_FULL) {
        f->space = LMDB__NOSPACE_MAP;
    } else if (f->rc == KP_ENOSPC || f->reserve_rc == KP_ENOSPC ||
               (f->rc == KP_EIO && lmdb__disk_free(ls) < need)) {
        /* ENOSPC or EDQUOT from a write or a sync; or an EIO (LMDB's word
         * for a short write) on a disk that has not the room the batch
         * needed: out of space too. */
        f->space = LMDB__NOSPACE_DISK;
    }
    if (f->space) f->rc = KP_ENOSPC;
    return f->rc;
}

/* Did mdb_txn_commit() fail in its meta page write? LMDB then marks the
 * environment fatal, and every transaction begins with MDB_PANIC. */
int lmdb__env_panicked(lmdb_store_t *ls)
{
    MDB_txn *txn;
    int mrc = mdb_txn_begin(ls->env, NULL, MDB_RDONLY, &txn);
    if (mrc == 0) mdb_txn_abort(txn);
    return mrc == MDB_PANIC;
}

static const char *space_what(int kind)
{
    return kind == LMDB__NOSPACE_MAP ? "the store's map is full" : "the disk is full";
}

void lmdb__fail_locked(lmdb_store_t *ls, const lmdb__fail_t *f)
{
    int64_t now = clock_mono_ns();
    /* SPACE c of lmdb_int.h: a second commit left visible but not durable
     * in a row (or SPACE b, a panicked environment) is not recovered in place. */
    int unsafe = f->phase == LMDB__FAIL_FATAL || (f->phase == LMDB__FAIL_UNSYNCED && ls->unsynced);
    if (f->phase == LMDB__FAIL_UNSYNCED) ls->unsynced = 1;
    if (!f->space || unsafe) {
        if (f->space && !ls->poisoned) {
            log_error("store", "%s: %s, and the failed commit cannot be undone in place: "
                      "refusing writes until the server is restarted",
                      ls->dir, space_what(f->space));
            ls->poisoned = f->rc;
        }
        lmdb__poison_locked(ls, f->rc);
        return;
    }
    if (ls->backoff_ns == 0) ls->backoff_ns = LMDB__PROBE_MIN_NS;
    ls->probe_ns = now + ls->backoff_ns;
    ls->backoff_ns = ls->backoff_ns * 2 > LMDB__PROBE_MAX_NS ? LMDB__PROBE_MAX_NS
                                                             : ls->backoff_ns * 2;
    if (ls->nospace) return; /* a failed trial: the episode goes on */
    ls->nospace = f->space;
    ls->nospace_since_ns = now;
    ls->refused = 0;
    /* Once per episode, and not again for episodes that follow each other
     * closely (a disk that hovers at full). */
    ls->nospace_logged = now >= ls->nospace_quiet_ns;
    if (!ls->nospace_logged) return;
    if (f->space == LMDB__NOSPACE_MAP) {
        MDB_envinfo info;
        mdb_env_info(ls->env, &info);
        log_error("store", "the store's map is full (%s/data.mdb, map size %zu bytes): "
                  "refusing writes with \"database space exceeded\" and retrying until "
                  "compaction frees pages",
                  ls->dir, info.me_mapsize);
    } else {
        log_error("store", "no space left on the disk of %s (%llu bytes free; the commit "
                  "failed: %s): refusing writes with \"database space exceeded\" and "
                  "retrying every %d ms at most until space returns",
                  ls->dir, (unsigned long long)lmdb__disk_free(ls),
                  f->mdb_rc == EIO ? "a short write" : f->mdb_rc ? mdb_strerror(f->mdb_rc) : "?",
                  (int)(LMDB__PROBE_MAX_NS / 1000000));
    }
}

void lmdb__recovered_locked(lmdb_store_t *ls, int synced, const char *how)
{
    if (synced) ls->unsynced = 0; /* only a sync makes an unsynced batch durable */
    ls->backoff_ns = 0;
    if (!ls->nospace) return;
    int64_t now = clock_mono_ns();
    if (ls->nospace_logged)
        log_info("store", "%s: space is back (%s) after %.1f s; %llu writes were refused "
                 "meanwhile, none acknowledged",
                 ls->dir, how, (double)(now - ls->nospace_since_ns) / 1e9,
                 (unsigned long long)ls->refused);
    ls->nospace = 0;
    ls->nospace_quiet_ns = now + LMDB__NOSPACE_QUIET_NS;
}

int lmdb__admit_locked(lmdb_store_t *ls, int trial)
{
    if (ls->poisoned) return KP_EPOISONED;
    if (!ls->nospace) return 0;
    int64_t now = clock_mono_ns();
    if (now < ls->probe_ns) return KP_ENOSPC;
    /* This batch is the trial; the writes behind it wait for its outcome
     * or the next interval. */
    if (trial) ls->probe_ns = now + ls->backoff_ns;
    return 0;
}

int lmdb__health(store_t *s, char *why, size_t len)
{
    lmdb_store_t *ls = (lmdb_store_t *)s;
    pthread_mutex_lock(&ls->mu);
    int rc = ls->poisoned ? KP_EPOISONED : ls->nospace ? KP_ENOSPC : 0;
    int probe = rc == KP_ENOSPC && ls->nospace == LMDB__NOSPACE_DISK &&
                clock_mono_ns() >= ls->probe_ns;
    if (probe) ls->probe_ns = clock_mono_ns() + ls->backoff_ns;
    int kind = ls->nospace;
    pthread_mutex_unlock(&ls->mu);

    /* Out of disk and a trial is due: is there room for a small batch now?
     * The reservation stays, for the writes that follow. */
    if (probe && lmdb__reserve(ls, lmdb__space_need(0, 1)) == 0) {
        pthread_mutex_lock(&ls->mu);
        if (ls->nospace && !ls->poisoned) {
            lmdb__recovered_locked(ls, 0, "the readiness check reserved room");
            rc = 0;
        }
        pthread_mutex_unlock(&ls->mu);
    }
    if (why && len) {
        if (rc == KP_EPOISONED)
            snprintf(why, len, "store %s: writes refused after a failed commit; restart the "
                     "server", ls->dir);
        else if (rc == KP_ENOSPC)
            snprintf(why, len, "store %s: %s; writes refused until space returns", ls->dir,
                     space_what(kind));
        else
            snprintf(why, len, "ok");
    }
    return rc;
}
