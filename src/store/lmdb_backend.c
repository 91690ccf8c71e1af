/*
 * lmdb_backend.c -- open, close, status, backup and restore of the embedded
 * store, and the record helpers the other lmdb_*.c files share.
 * The layout and invariants are described in lmdb_int.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "lmdb_int.h"

static const store_ops_t lmdb_ops;

int lmdb__rc(int mdb_rc)
{
    switch (mdb_rc) {
    case 0: return 0;
    case MDB_NOTFOUND: return KP_ENOTFOUND;
    case MDB_MAP_FULL:
    case ENOSPC:
    case EDQUOT: return KP_ENOSPC;
    case MDB_INVALID:
    case MDB_CORRUPTED:
    case MDB_PAGE_NOTFOUND:
    case MDB_VERSION_MISMATCH:
    case MDB_INCOMPATIBLE: return KP_ECORRUPT;
    case ENOMEM: return KP_ENOMEM;
    case MDB_READERS_FULL:
    case EAGAIN: return KP_EBUSY;
    case MDB_BAD_VALSIZE: return KP_ETOOLARGE;
    case EEXIST: return KP_EEXIST;
    case ENOENT: return KP_ENOTFOUND;
    default: return KP_EIO;
    }
}

void lmdb__rev_key(int64_t rev, unsigned char out[8])
{
    uint64_t v = (uint64_t)rev;
    for (int i = 7; i >= 0; i--, v >>= 8) out[i] = (unsigned char)(v & 0xff);
}

int64_t lmdb__rev_from_key(const MDB_val *k)
{
    const unsigned char *p = k->mv_data;
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return (int64_t)v;
}

int lmdb__meta_get(MDB_txn *txn, lmdb_store_t *ls, const char *name, int64_t *out)
{
    MDB_val k = {strlen(name), (void *)name}, v;
    int rc = mdb_get(txn, ls->meta, &k, &v);
    if (rc) return lmdb__rc(rc);
    if (v.mv_size != sizeof(int64_t)) return KP_ECORRUPT;
    memcpy(out, v.mv_data, sizeof *out);
    return 0;
}

int lmdb__meta_put(MDB_txn *txn, lmdb_store_t *ls, const char *name, int64_t val)
{
    MDB_val k = {strlen(name), (void *)name}, v = {sizeof val, &val};
    return lmdb__rc(mdb_put(txn, ls->meta, &k, &v, 0));
}

int lmdb__log_get(MDB_txn *txn, lmdb_store_t *ls, int64_t rev, lmdb__logrec_t *rec,
                  const char **key, const char **value, size_t *value_len)
{
    unsigned char kb[8];
    lmdb__rev_key(rev, kb);
    MDB_val k = {8, kb}, v;
    int rc = mdb_get(txn, ls->log, &k, &v);
    if (rc) return lmdb__rc(rc);
    if (v.mv_size < sizeof *rec) return KP_ECORRUPT;
    memcpy(rec, v.mv_data, sizeof *rec);
    if (v.mv_size - sizeof *rec < rec->key_len) return KP_ECORRUPT;
    const char *p = (const char *)v.mv_data + sizeof *rec;
    if (key) *key = p;
    if (value) *value = p + rec->key_len;
    if (value_len) *value_len = v.mv_size - sizeof *rec - rec->key_len;
    return 0;
}

void lmdb__poison_locked(lmdb_store_t *ls, int rc)
{
    if (ls->poisoned) return;
    ls->poisoned = rc ? rc : KP_EIO;
    log_error("store", "%s: commit failed (%s): refusing writes until the store is reopened",
              ls->dir, err_str(rc));
}

static int mkdir_p(const char *dir)
{
    char *p = strdup(dir);
    if (!p) return KP_ENOMEM;
    int rc = 0;
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != '\0') continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, 0700) && errno != EEXIST) {
            rc = lmdb__rc(errno);
            break;
        }
        *s = c;
        if (!c) break;
    }
    free(p);
    return rc;
}

/* Open the four databases and make sure this is an empty or a kplane store. */
static int init_layout(lmdb_store_t *ls)
{
    MDB_txn *txn;
    int rc = lmdb__rc(mdb_txn_begin(ls->env, NULL, 0, &txn));
    if (rc) return rc;
    if ((rc = lmdb__rc(mdb_dbi_open(txn, "meta", MDB_CREATE, &ls->meta))) ||
        (rc = lmdb__rc(mdb_dbi_open(txn, "kv", MDB_CREATE, &ls->kv))) ||
        (rc = lmdb__rc(mdb_dbi_open(txn, "log", MDB_CREATE, &ls->log))) ||
        (rc = lmdb__rc(mdb_dbi_open(txn, "idx", MDB_CREATE | MDB_DUPSORT | MDB_DUPFIXED,
                                    &ls->idx))))
        goto fail;

    MDB_val k = {6, "format"}, v;
    int mrc = mdb_get(txn, ls->meta, &k, &v);
    if (mrc == MDB_NOTFOUND) {
        uint32_t fmt = LMDB__FORMAT;
        MDB_val fv = {sizeof fmt, &fmt};
        if ((rc = lmdb__rc(mdb_put(txn, ls->meta, &k, &fv, 0))) ||
            (rc = lmdb__meta_put(txn, ls, "rev", 0)) ||
            (rc = lmdb__meta_put(txn, ls, "compact", 0)))
            goto fail;
    } else if (mrc) {
        rc = lmdb__rc(mrc);
        goto fail;
    } else {
        uint32_t fmt;
        if (v.mv_size != sizeof fmt) {
            rc = KP_ECORRUPT;
            goto fail;
        }
        memcpy(&fmt, v.mv_data, sizeof fmt);
        if (fmt != LMDB__FORMAT) {
            rc = KP_ECORRUPT;
            goto fail;
        }
    }
    if ((rc = lmdb__meta_get(txn, ls, "rev", &ls->notify_rev))) goto fail;
    return lmdb__rc(mdb_txn_commit(txn));
fail:
    mdb_txn_abort(txn);
    return rc;
}

int store__lmdb_open(const char *dir, const store_options_t *opt, store_t **out)
{
    int rc = mkdir_p(dir);
    if (rc) return rc;
    lmdb_store_t *ls = calloc(1, sizeof *ls);
    if (!ls) return KP_ENOMEM;
    ls->base.ops = &lmdb_ops;
    ls->opt = *opt;
    ls->pending_tail = &ls->pending;
    if (!(ls->dir = strdup(dir))) {
        rc = KP_ENOMEM;
        goto fail_alloc;
    }
    pthread_mutex_init(&ls->mu, NULL);
    pthread_mutex_init(&ls->compact_mu, NULL);
    pthread_mutex_init(&ls->space_mu, NULL);
    if ((rc = clock_cond_init(&ls->compactor_cv)) || (rc = clock_cond_init(&ls->gather_cv)))
        goto fail_sync;

    if ((rc = lmdb__rc(mdb_env_create(&ls->env)))) goto fail_sync;
    /* MDB_NOTLS: read transactions are not bound to threads, so a reader slot
     * is taken per transaction, not per thread that ever read. */
    if ((rc = lmdb__rc(mdb_env_set_maxdbs(ls->env, 4))) ||
        (rc = lmdb__rc(mdb_env_set_maxreaders(ls->env, 1024))) ||
        (rc = lmdb__rc(mdb_env_set_mapsize(ls->env, opt->map_size ? opt->map_size
                                                                  : LMDB__DEFAULT_MAP))) ||
        /* MDB_NOMETASYNC: a write's commit syncs the meta page itself, with
         * an fdatasync (lmdb_write.c); other commits (compaction) are made
         * durable by the next write's. */
        (rc = lmdb__rc(mdb_env_open(ls->env, dir, MDB_NOTLS | MDB_NOMETASYNC, 0600))))
        goto fail_env;
    /* Free the reader slots of processes that died (kill -9) holding a read
     * transaction, or their snapshots would pin old pages forever. */
    int dead = 0;
    mdb_reader_check(ls->env, &dead);
    if (dead) log_info("store", "cleared %d stale reader slot(s)", dead);
    if ((rc = init_layout(ls))) goto fail_env;
    /* Transactions up to now count as ours: the watches opened from here
     * on read the log from their own start revision. */
    MDB_envinfo info;
    if ((rc = lmdb__rc(mdb_env_info(ls->env, &info)))) goto fail_env;
    ls->own_txnid = (uint64_t)info.me_last_txnid;
    if ((rc = lmdb__compactor_start(ls))) goto fail_env;
    *out = &ls->base;
    return 0;

fail_env:
    mdb_env_close(ls->env);
fail_sync:
    pthread_cond_destroy(&ls->gather_cv);
    pthread_cond_destroy(&ls->compactor_cv);
    pthread_mutex_destroy(&ls->space_mu);
    pthread_mutex_destroy(&ls->compact_mu);
    pthread_mutex_destroy(&ls->mu);
fail_alloc:
    free(ls->dir);
    free(ls);
    return rc;
}

static void lmdb_close(store_t *s)
{
    lmdb_store_t *ls = (lmdb_store_t *)s;
    lmdb__compactor_stop(ls);
    pthread_mutex_lock(&ls->mu);
    ls->closing = 1;
    lmdb__watch_wake_all_locked(ls);
    pthread_mutex_unlock(&ls->mu);
    mdb_env_close(ls->env);
    pthread_cond_destroy(&ls->gather_cv);
    pthread_cond_destroy(&ls->compactor_cv);
    pthread_mutex_destroy(&ls->space_mu);
    pthread_mutex_destroy(&ls->compact_mu);
    pthread_mutex_destroy(&ls->mu);
    free(ls->dir);
    free(ls);
}

static int lmdb_status(store_t *s, store_status_t *out)
{
    lmdb_store_t *ls = (lmdb_store_t *)s;
    MDB_txn *txn;
    int rc = lmdb__rc(mdb_txn_begin(ls->env, NULL, MDB_RDONLY, &txn));
    if (rc) return rc;
    MDB_stat st;
    if ((rc = lmdb__meta_get(txn, ls, "rev", &out->revision)) ||
        (rc = lmdb__meta_get(txn, ls, "compact", &out->compact_revision)) ||
        (rc = lmdb__rc(mdb_stat(txn, ls->kv, &st))))
        goto out;
    out->keys = st.ms_entries;

    MDB_envinfo info;
    mdb_env_info(ls->env, &info);
    mdb_env_stat(ls->env, &st);
    out->db_bytes = (uint64_t)(info.me_last_pgno + 1) * st.ms_psize;

    char path[4096];
    struct stat fst;
    snprintf(path, sizeof path, "%s/data.mdb", ls->dir);
    if (stat(path, &fst) == 0) out->file_bytes = (uint64_t)fst.st_blocks * 512;
    pthread_mutex_lock(&ls->mu);
    out->writes = ls->writes;
    out->commits = ls->commits;
    out->watch_reads = __atomic_load_n(&ls->watch_reads, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&ls->mu);
out:
    mdb_txn_abort(txn);
    return rc;
}

/* Read the revision of a store file (a backup, or data.mdb) without a lock
 * file; KP_ECORRUPT if it is not a kplane store. */
static int file_revision(const char *path, int64_t *rev)
{
    MDB_env *env;
    MDB_txn *txn = NULL;
    MDB_dbi meta;
    struct stat fst;
    /* LMDB would take an empty file for a new store, and map a truncated one
     * at the size its header claims (reading past the end raises SIGBUS):
     * check the size before and after opening. */
    if (stat(path, &fst)) return lmdb__rc(errno);
    if (!S_ISREG(fst.st_mode) || fst.st_size == 0) return KP_ECORRUPT;
    int rc = lmdb__rc(mdb_env_create(&env));
    if (rc) return rc;
    mdb_env_set_maxdbs(env, 4);
    if ((rc = mdb_env_open(env, path, MDB_NOSUBDIR | MDB_RDONLY | MDB_NOLOCK, 0600))) {
        rc = rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH ? KP_ECORRUPT : lmdb__rc(rc);
        goto out;
    }
    MDB_envinfo info;
    MDB_stat st;
    if (mdb_env_info(env, &info) || mdb_env_stat(env, &st) ||
        (uint64_t)fst.st_size < (uint64_t)(info.me_last_pgno + 1) * st.ms_psize) {
        rc = KP_ECORRUPT;
        goto out;
    }
    if ((rc = lmdb__rc(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn)))) goto out;
    if ((rc = mdb_dbi_open(txn, "meta", 0, &meta))) {
        rc = rc == MDB_NOTFOUND || rc == MDB_INCOMPATIBLE ? KP_ECORRUPT : lmdb__rc(rc);
        goto out;
    }
    MDB_val k = {6, "format"}, v;
    uint32_t fmt = 0;
    if (mdb_get(txn, meta, &k, &v) || v.mv_size != sizeof fmt) {
        rc = KP_ECORRUPT;
        goto out;
    }
    memcpy(&fmt, v.mv_data, sizeof fmt);
    k = (MDB_val){3, "rev"};
    if (fmt != LMDB__FORMAT || mdb_get(txn, meta, &k, &v) || v.mv_size != sizeof *rev) {
        rc = KP_ECORRUPT;
        goto out;
    }
    memcpy(rev, v.mv_data, sizeof *rev);
out:
    if (txn) mdb_txn_abort(txn);
    mdb_env_close(env);
    return rc;
}

static int fsync_dir_of(const char *path)
{
    char *copy = strdup(path);
    if (!copy) return KP_ENOMEM;
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(copy);
    if (fd < 0) return lmdb__rc(errno);
    int rc = fsync(fd) ? lmdb__rc(errno) : 0;
    close(fd);
    return rc;
}

/* Write `tmp` with fill(), fsync it, then link it to `path` (never replacing
 * an existing file) and make the name durable. */
static int install_file(const char *tmp, const char *path, int (*fill)(int fd, void *arg),
                        void *arg)
{
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return lmdb__rc(errno);
    int rc = fill(fd, arg);
    if (!rc && fsync(fd)) rc = lmdb__rc(errno);
    if (close(fd) && !rc) rc = lmdb__rc(errno);
    if (!rc && link(tmp, path)) rc = lmdb__rc(errno);
    unlink(tmp);
    if (!rc) rc = fsync_dir_of(path);
    return rc;
}

static int fill_copy_env(int fd, void *arg)
{
    /* A compacting copy through one read transaction: consistent, and writers
     * go on meanwhile. */
    return lmdb__rc(mdb_env_copyfd2((MDB_env *)arg, fd, MDB_CP_COMPACT));
}

static int lmdb_backup(store_t *s, const char *path, int64_t *out_rev)
{
    lmdb_store_t *ls = (lmdb_store_t *)s;
    if (access(path, F_OK) == 0) return KP_EEXIST;
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= sizeof tmp)
        return KP_EINVAL;
    int rc = install_file(tmp, path, fill_copy_env, ls->env);
    if (rc) return rc;
    return file_revision(path, out_rev);
}

static int fill_copy_file(int fd, void *arg)
{
    int in = open((const char *)arg, O_RDONLY | O_CLOEXEC);
    if (in < 0) return lmdb__rc(errno);
    char buf[1 << 16];
    int rc = 0;
    for (;;) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) rc = lmdb__rc(errno);
        if (n <= 0) break;
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(fd, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR) continue;
            if (w < 0) {
                rc = lmdb__rc(errno);
                goto out;
            }
            off += w;
        }
    }
out:
    close(in);
    return rc;
}

int store__lmdb_restore(const char *backup_path, const char *dir)
{
    int64_t rev;
    int rc = file_revision(backup_path, &rev);
    if (rc) return rc;
    if ((rc = mkdir_p(dir))) return rc;
    char path[4096], tmp[4096];
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    snprintf(tmp, sizeof tmp, "%s/data.mdb.restore", dir);
    if (access(path, F_OK) == 0) return KP_EEXIST;
    rc = install_file(tmp, path, fill_copy_file, (void *)backup_path);
    if (rc == 0) log_info("store", "restored revision %lld into %s", (long long)rev, dir);
    return rc;
}

static const store_ops_t lmdb_ops = {
    .name = "lmdb",
    .close = lmdb_close,
    .write = lmdb__write,
    .get = lmdb__get,
    .range = lmdb__range,
    .status = lmdb_status,
    .watch_open = lmdb__watch_open,
    .compact = lmdb__compact,
    .backup = lmdb_backup,
    .health = lmdb__health,
};
