/*
 * lmdb_write.c -- writes with group commit (see WRITE PATH in lmdb_int.h).
 *
 * A request lives on its writer's stack; the writer sleeps on the request's
 * own semaphore until a leader (possibly itself) has committed the batch
 * holding it, or until it heads the queue when no commit runs and must lead.
 * Waking only those writers (not every waiter, through one shared condition
 * variable) saves a thundering herd on ls->mu per batch. Each request
 * in a batch is checked and applied on its own: a conflict fails one request,
 * not the batch. An LMDB error fails the whole batch (the transaction is then
 * unusable) and acknowledges nothing; then the store is out of space (it
 * refuses writes at once, but for a trial batch now and then, until one
 * commits) or poisoned: see SPACE in lmdb_int.h.
 */
#include <errno.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>

#include "lib/clock.h"
#include "lib/err.h"
#include "lmdb_int.h"

struct lmdb__wreq {
    store__op_t op;
    const char *key;
    size_t klen;
    const void *value;
    size_t vlen;
    int64_t expect_rev;
    int rc;
    int64_t rev;
    int done;   /* set (release) by the leader before posting wake */
    sem_t wake; /* posted when done, or when this request heads an idle queue */
    lmdb__wreq_t *next;
};

/* Apply one request in `txn`; *rev is the newest revision so far.
 * Returns 0, a per-request error (KP_EEXIST, KP_ENOTFOUND, KP_ECONFLICT), or
 * an LMDB failure that dooms the transaction (*fatal set, *mdb_rc its code). */
static int apply_one(lmdb_store_t *ls, MDB_txn *txn, lmdb__wreq_t *r, int64_t *rev,
                     int64_t now_ns, int *fatal, int *mdb_rc)
{
    MDB_val k = {r->klen, (void *)r->key}, v;
    lmdb__kvrec_t cur = {0};
    int mrc = mdb_get(txn, ls->kv, &k, &v);
    if (mrc && mrc != MDB_NOTFOUND) goto mdb_fail;
    int exists = mrc == 0;
    if (exists) memcpy(&cur, v.mv_data, sizeof cur);

    if (r->op == STORE__CREATE && exists) return KP_EEXIST;
    if (r->op != STORE__CREATE) {
        if (!exists) return KP_ENOTFOUND;
        if (r->expect_rev && cur.mod_rev != r->expect_rev) {
            r->rev = cur.mod_rev;
            return KP_ECONFLICT;
        }
    }

    int64_t next = *rev + 1;
    int del = r->op == STORE__DELETE;
    lmdb__logrec_t rec = {
        .type = del ? LMDB__DEL : LMDB__PUT,
        .key_len = (uint32_t)r->klen,
        .create_rev = del ? 0 : exists ? cur.create_rev : next,
        .version = del ? 0 : exists ? cur.version + 1 : 1,
        .prev_rev = exists ? cur.mod_rev : 0,
        .time_ns = now_ns,
    };

    /* log: revisions only grow, so every put appends. */
    unsigned char rk[8];
    lmdb__rev_key(next, rk);
    MDB_val lk = {8, rk}, lv = {sizeof rec + r->klen + r->vlen, NULL};
    if ((mrc = mdb_put(txn, ls->log, &lk, &lv, MDB_RESERVE | MDB_APPEND))) goto mdb_fail;
    memcpy(lv.mv_data, &rec, sizeof rec);
    memcpy((char *)lv.mv_data + sizeof rec, r->key, r->klen);
    if (r->vlen) memcpy((char *)lv.mv_data + sizeof rec + r->klen, r->value, r->vlen);

    /* idx: the newest revision of a key is its largest duplicate. */
    MDB_val iv = {8, rk};
    if ((mrc = mdb_put(txn, ls->idx, &k, &iv, MDB_APPENDDUP))) goto mdb_fail;

    if (del) {
        if ((mrc = mdb_del(txn, ls->kv, &k, NULL))) goto mdb_fail;
    } else {
        lmdb__kvrec_t kr = {rec.create_rev, next, rec.version};
        MDB_val kvv = {sizeof kr + r->vlen, NULL};
        if ((mrc = mdb_put(txn, ls->kv, &k, &kvv, MDB_RESERVE))) goto mdb_fail;
        memcpy(kvv.mv_data, &kr, sizeof kr);
        if (r->vlen) memcpy((char *)kvv.mv_data + sizeof kr, r->value, r->vlen);
    }
    *rev = next;
    r->rev = next;
    return 0;

mdb_fail:
    *fatal = 1;
    *mdb_rc = mrc;
    return lmdb__rc(mrc);
}

/* Apply `batch` in one transaction and commit it. Sets each request's rc and
 * rev; returns 0, or the failure that failed them all, described in *f (see
 * SPACE in lmdb_int.h). *last gets the newest revision committed (0 if none).
 * `need` is the room the batch may take (lmdb__space_need()). */
static int commit_batch(lmdb_store_t *ls, lmdb__wreq_t *batch, uint64_t need, int64_t *first,
                        int64_t *last, uint64_t *txnid, lmdb__fail_t *f)
{
    MDB_txn *txn;
    int64_t rev = 0, start;
    int fatal = 0, rc, mrc;
    *last = *first = 0;
    *txnid = 0;
    *f = (lmdb__fail_t){.phase = LMDB__FAIL_CLEAN};

    /* S4: room past the end of the file first, so a full disk is reported
     * with its errno; the batch is tried either way. */
    f->reserve_rc = lmdb__reserve(ls, need);
    if ((mrc = mdb_txn_begin(ls->env, NULL, 0, &txn))) {
        f->mdb_rc = mrc;
        if (mrc == MDB_PANIC) f->phase = LMDB__FAIL_FATAL;
        rc = lmdb__rc(mrc);
        goto fail_all;
    }
    if ((rc = lmdb__meta_get(txn, ls, "rev", &rev))) {
        mdb_txn_abort(txn);
        goto fail_all;
    }
    start = rev;
    int64_t now = clock_wall_ns();
    for (lmdb__wreq_t *r = batch; r; r = r->next) {
        r->rc = apply_one(ls, txn, r, &rev, now, &fatal, &f->mdb_rc);
        if (fatal) {
            rc = r->rc;
            mdb_txn_abort(txn);
            goto fail_all;
        }
    }
    if (rev == start) {
        mdb_txn_abort(txn); /* nothing accepted: no revision, no fsync */
        return 0;
    }
    if ((rc = lmdb__meta_put(txn, ls, "rev", rev))) {
        mdb_txn_abort(txn);
        goto fail_all;
    }
    uint64_t id = (uint64_t)mdb_txn_id(txn);
    /* The durability point: the commit writes the data pages, syncs them,
     * and writes the meta page that points to them; one more fdatasync makes
     * that meta page durable (the environment is MDB_NOMETASYNC: LMDB's own
     * O_DSYNC meta write cost 4 ms here, an fdatasync 0.6 ms). A failure
     * after the commit leaves the batch visible but not durable (SPACE c):
     * it is failed, so it is never acknowledged, and delivered to watches
     * only once a later sync made it durable. */
    if ((mrc = mdb_txn_commit(txn))) {
        f->mdb_rc = mrc;
        rc = lmdb__rc(mrc);
        if (lmdb__env_panicked(ls)) f->phase = LMDB__FAIL_FATAL;
        goto fail_all;
    }
    *txnid = id;
    if ((mrc = mdb_env_sync(ls->env, 1))) {
        f->mdb_rc = mrc;
        f->phase = LMDB__FAIL_UNSYNCED;
        rc = lmdb__rc(mrc);
        goto fail_all;
    }
    *first = start;
    *last = rev;
    return 0;

fail_all:
    f->rc = rc;
    rc = lmdb__fail_classify(ls, f, need);
    for (lmdb__wreq_t *r = batch; r; r = r->next) r->rc = rc;
    return rc;
}

/* Wait up to LMDB__GATHER_NS for the writers of the last batch to queue again.
 *
 * Without this, N busy writers split into two halves: while one half's batch
 * commits, the other queues; the first half comes back during the second's
 * commit, and so on. Every write then waits for two commits and each commit
 * carries N/2 writes. Waiting a fraction of a commit for the writers that just
 * got their answer makes one batch of N. A writer that does not come back
 * costs at most one wait. Called with ls->mu held by the leader. */
static void gather(lmdb_store_t *ls)
{
    size_t target = ls->gather_target < LMDB__BATCH_MAX ? ls->gather_target : LMDB__BATCH_MAX;
    if (ls->pending_n >= target) return;
    int64_t t = clock_mono_ns() + LMDB__GATHER_NS;
    struct timespec deadline = {.tv_sec = t / 1000000000, .tv_nsec = t % 1000000000};
    ls->gathering = 1;
    while (ls->pending_n < target &&
           pthread_cond_timedwait(&ls->gather_cv, &ls->mu, &deadline) == 0)
        ;
    ls->gathering = 0;
}

/* Detach up to LMDB__BATCH_MAX requests (and LMDB__BATCH_BYTES of values)
 * from the pending queue; *count gets their number, *kv_bytes the bytes of
 * their keys and values. Called with ls->mu held. */
static lmdb__wreq_t *take_batch(lmdb_store_t *ls, size_t *count, size_t *kv_bytes)
{
    lmdb__wreq_t *head = ls->pending, **tail = &ls->pending;
    size_t n = 0, bytes = 0;
    while (*tail && n < LMDB__BATCH_MAX && (n == 0 || bytes + (*tail)->vlen <= LMDB__BATCH_BYTES)) {
        bytes += (*tail)->vlen;
        n++;
        tail = &(*tail)->next;
    }
    ls->pending = *tail;
    if (!ls->pending) ls->pending_tail = &ls->pending;
    *tail = NULL;
    ls->pending_n -= n;
    *count = n;
    *kv_bytes = bytes;
    for (lmdb__wreq_t *r = head; r; r = r->next) *kv_bytes += r->klen;
    return head;
}

/* After a batch: wake the head of the queue to lead the next one. Called
 * with ls->mu held and ls->committing 0. A head woken twice just looks again. */
static void wake_next_leader(lmdb_store_t *ls)
{
    if (ls->pending) sem_post(&ls->pending->wake);
}

int lmdb__write(store_t *s, store__op_t op, const char *key, size_t klen, const void *value,
                size_t vlen, int64_t expect_rev, int64_t *out_rev)
{
    lmdb_store_t *ls = (lmdb_store_t *)s;
    lmdb__wreq_t req = {.op = op, .key = key, .klen = klen, .value = value, .vlen = vlen,
                        .expect_rev = expect_rev};
    if (sem_init(&req.wake, 0, 0)) return KP_EIO;

    pthread_mutex_lock(&ls->mu);
    int refuse = lmdb__admit_locked(ls, 0);
    if (refuse) {
        if (refuse == KP_ENOSPC) ls->refused++;
        pthread_mutex_unlock(&ls->mu);
        sem_destroy(&req.wake);
        return refuse;
    }
    *ls->pending_tail = &req;
    ls->pending_tail = &req.next;
    ls->pending_n++;
    if (ls->gathering) pthread_cond_signal(&ls->gather_cv);

    for (;;) {
        if (ls->committing) {
            /* Sleep without the lock; done is read without it too. */
            pthread_mutex_unlock(&ls->mu);
            while (sem_wait(&req.wake) && errno == EINTR)
                ;
            if (__atomic_load_n(&req.done, __ATOMIC_ACQUIRE)) break;
            pthread_mutex_lock(&ls->mu);
            if (req.done) {
                pthread_mutex_unlock(&ls->mu);
                break;
            }
            continue;
        }
        /* Lead: commit everything queued so far (ours included, unless the
         * queue is longer than one batch), unless the store refuses writes
         * (poisoned, or out of space with no trial due). */
        ls->committing = 1;
        ls->commit_seq++;
        refuse = lmdb__admit_locked(ls, 1);
        if (!refuse && !ls->nospace) gather(ls);
        size_t n, bytes;
        lmdb__wreq_t *batch = take_batch(ls, &n, &bytes);
        if (refuse == KP_ENOSPC) ls->refused += n;
        int64_t first = 0, last = 0;
        uint64_t txnid = 0;
        lmdb__fail_t fail = {0};
        pthread_mutex_unlock(&ls->mu);

        int rc = 0;
        if (refuse) {
            for (lmdb__wreq_t *r = batch; r; r = r->next) r->rc = refuse;
        } else {
            rc = commit_batch(ls, batch, lmdb__space_need(bytes, n), &first, &last, &txnid,
                              &fail);
        }

        pthread_mutex_lock(&ls->mu);
        ls->committing = 0;
        /* Everyone now waiting, plus this batch's writers who will be back. */
        ls->gather_target = n + ls->pending_n;
        if (rc) lmdb__fail_locked(ls, &fail);
        else if (last && (ls->nospace || ls->unsynced))
            lmdb__recovered_locked(ls, 1, "a write committed");
        if (last) {
            ls->commits++;
            for (lmdb__wreq_t *r = batch; r; r = r->next) ls->writes += r->rc == 0;
        }
        if (txnid) lmdb__own_txn_locked(ls, txnid);
        if (last > ls->notify_rev) ls->notify_rev = last;
        if (last) {
            for (lmdb__wreq_t *r = batch; r; r = r->next)
                if (r->rc == 0) lmdb__watch_wake_locked(ls, r->key, r->klen);
            lmdb__watch_quiet_locked(ls, first, last);
        }
        wake_next_leader(ls);
        int self_done = 0;
        for (lmdb__wreq_t *r = batch, *next; r; r = next) {
            next = r->next; /* r may be gone (its writer returns) once done */
            if (r == &req) {
                self_done = 1;
                req.done = 1;
                continue;
            }
            __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
            sem_post(&r->wake);
        }
        if (self_done) {
            pthread_mutex_unlock(&ls->mu);
            break;
        }
    }
    sem_destroy(&req.wake);
    if (req.rc == 0 || req.rc == KP_ECONFLICT) *out_rev = req.rev;
    return req.rc;
}
