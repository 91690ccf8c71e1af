/*
 * etcd_compact.c -- compaction (by hand and automatic), the compaction point
 * and backups of the etcd backend.
 *
 * etcd keeps its compaction point to itself: reads below it fail with
 * "compacted", reads at it work. etcd__compact_revision() finds it from the
 * newest point this handle knows (which only grows): one read at that
 * revision confirms it, else a binary search between it and the newest
 * revision finds the first readable one.
 *
 * The automatic compactor wakes every compact_interval_ms, samples the
 * current revision with the time, and compacts to the newest revision that
 * keeps keep_revisions revisions and every sample younger than keep_seconds:
 * a revision seen at time T was committed at or before T, so compacting to
 * the newest sample older than the cutoff drops nothing younger.
 *
 * A backup is etcd's snapshot (Maintenance/Snapshot, a stream of chunks),
 * written to a temporary file by the caller's thread as the chunks arrive
 * (each released to the stream's flow control once written), fsynced and
 * linked into place; `etcdctl snapshot restore`
 * turns it back into a cluster (store_restore() is for the embedded store).
 * etcd 3.4 does not say which revision a snapshot holds: *out_rev is the
 * newest revision just before it was asked for, so the snapshot holds every
 * write up to it (and, with writes going on, maybe a few more).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "etcd_int.h"
#include "store/etcd_pb.h"

int etcd__compact(store_t *s, int64_t rev)
{
    etcd_store_t *es = (etcd_store_t *)s;
    buf_t req;
    buf_init(&req, 64);
    uint8_t *resp = NULL;
    size_t len = 0;
    int rc = etcd_pb_compact(&req, rev + ETCD__REV_OFFSET, 1);
    if (!rc)
        rc = etcd__rpc(es, "/etcdserverpb.KV/Compact", &req, ETCD__WRITE,
                       ETCD__COMPACT_TIMEOUT_MS, &resp, &len);
    buf_free(&req);
    free(resp);
    if (!rc) etcd__note_compact(es, rev);
    return rc;
}

int etcd__compact_revision(etcd_store_t *es, int64_t cur, int64_t *out)
{
    pthread_mutex_lock(&es->mu);
    int64_t lo = es->compact;
    pthread_mutex_unlock(&es->mu);
    int rc = etcd__check_rev(es, lo);
    if (rc == 0) {
        *out = lo;
        return 0;
    }
    if (rc != KP_ECOMPACTED) return rc;
    /* The first readable revision in (lo, cur]; cur itself always is. */
    lo++;
    int64_t hi = cur;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        rc = etcd__check_rev(es, mid);
        if (rc == 0) hi = mid;
        else if (rc == KP_ECOMPACTED) lo = mid + 1;
        else return rc;
    }
    etcd__note_compact(es, lo);
    *out = lo;
    return 0;
}

/* Record a sample and return the revision compaction by age may reach
 * (-1: none old enough yet). es->mu held. */
static int64_t sample_locked(etcd_store_t *es, int64_t now, int64_t cur)
{
    if (es->n_samples == ETCD__SAMPLES) { /* thin out: keeps less history, never more */
        size_t j = 0;
        for (size_t i = 0; i < es->n_samples; i += 2) es->samples[j++] = es->samples[i];
        es->n_samples = j;
    }
    es->samples[es->n_samples++] = (etcd_sample_t){now, cur};
    if (!es->opt.keep_seconds) return -1;
    int64_t cutoff = now - es->opt.keep_seconds * 1000000000;
    size_t found = es->n_samples;
    for (size_t i = 0; i < es->n_samples && es->samples[i].time_ns <= cutoff; i++) found = i;
    if (found == es->n_samples) return -1;
    int64_t rev = es->samples[found].rev;
    /* Older samples are of no more use. */
    memmove(es->samples, es->samples + found, (es->n_samples - found) * sizeof *es->samples);
    es->n_samples -= found;
    return rev;
}

static void *compactor_main(void *arg)
{
    etcd_store_t *es = arg;
    int interval = es->opt.compact_interval_ms ? es->opt.compact_interval_ms : 5000;
    pthread_mutex_lock(&es->mu);
    while (!es->closing) {
        struct timespec ts = clock_deadline_ms(interval);
        pthread_cond_timedwait(&es->compactor_cv, &es->mu, &ts);
        if (es->closing) break;
        pthread_mutex_unlock(&es->mu);

        int64_t cur = 0;
        int rc = etcd__current_rev(es, &cur);
        pthread_mutex_lock(&es->mu);
        if (rc) continue;
        int64_t target = cur;
        if (es->opt.keep_revisions && cur - es->opt.keep_revisions < target)
            target = cur - es->opt.keep_revisions;
        int64_t by_age = sample_locked(es, clock_wall_ns(), cur);
        if (es->opt.keep_seconds && by_age < target) target = by_age;
        if (target <= es->compact) continue;
        pthread_mutex_unlock(&es->mu);

        rc = etcd__compact(&es->base, target);
        if (rc && rc != KP_ECOMPACTED)
            log_warn("store", "automatic compaction to %lld: %s", (long long)target, err_str(rc));
        else if (!rc)
            log_debug("store", "compacted to revision %lld", (long long)target);
        pthread_mutex_lock(&es->mu);
    }
    pthread_mutex_unlock(&es->mu);
    return NULL;
}

int etcd__compactor_start(etcd_store_t *es)
{
    if (!es->opt.keep_revisions && !es->opt.keep_seconds) return 0;
    if (!(es->samples = malloc(ETCD__SAMPLES * sizeof *es->samples))) return KP_ENOMEM;
    if (pthread_create(&es->compactor, NULL, compactor_main, es)) return KP_ENOMEM;
    es->compactor_started = 1;
    return 0;
}

void etcd__compactor_stop(etcd_store_t *es)
{
    pthread_mutex_lock(&es->mu);
    es->closing = 1;
    pthread_cond_broadcast(&es->compactor_cv);
    pthread_mutex_unlock(&es->mu);
    if (!es->compactor_started) return;
    pthread_join(es->compactor, NULL);
    es->compactor_started = 0;
}

/* ---- backup ---- */

/* Chunks of the snapshot between the stream (its connection's thread) and
 * the caller's thread, which writes them. */
typedef struct chunk {
    struct chunk *next;
    size_t msg_bytes; /* the message's, to release once written */
    size_t len;
    int last;         /* remaining_bytes was 0 */
    uint8_t data[];
} chunk_t;

typedef struct snap {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC */
    chunk_t *head, **tail;
    int ended;         /* the stream is over */
    int rc;            /* why, when it was not a clean end */
} snap_t;

static void snap_msg(void *arg, const uint8_t *p, size_t n)
{
    snap_t *sn = arg;
    etcd_pb_snapshot_t r;
    int rc = etcd_pb_snapshot_resp(p, n, &r);
    chunk_t *c = rc ? NULL : malloc(sizeof *c + r.blob_len);
    pthread_mutex_lock(&sn->mu);
    if (!c) {
        if (!sn->rc) sn->rc = rc ? rc : KP_ENOMEM;
    } else {
        c->next = NULL;
        c->msg_bytes = n;
        c->len = r.blob_len;
        c->last = r.remaining_bytes == 0;
        memcpy(c->data, r.blob, r.blob_len);
        *sn->tail = c;
        sn->tail = &c->next;
    }
    pthread_cond_broadcast(&sn->cv);
    pthread_mutex_unlock(&sn->mu);
}

static void snap_end(void *arg, int rc, const grpc_status_t *st)
{
    snap_t *sn = arg;
    pthread_mutex_lock(&sn->mu);
    if (!rc && st && st->code) rc = etcd__error(st->message);
    if (rc && !sn->rc) sn->rc = rc;
    sn->ended = 1;
    pthread_cond_broadcast(&sn->cv);
    pthread_mutex_unlock(&sn->mu);
}

static int write_all(int fd, const uint8_t *p, size_t len)
{
    for (size_t off = 0; off < len;) {
        ssize_t w = write(fd, p + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return errno == ENOSPC ? KP_ENOSPC : KP_EIO;
        off += (size_t)w;
    }
    return 0;
}

/* Stream the snapshot from endpoint idx into fd. */
static int snapshot_into(etcd_store_t *es, int fd)
{
    size_t idx = etcd__endpoint(es);
    etcd_conn_t *c;
    int rc = etcd__conn_get(es, idx, &c);
    if (rc) {
        etcd__endpoint_failed(es, idx);
        return rc == KP_ENOMEM ? rc : KP_EUNAVAILABLE;
    }
    snap_t sn = {.tail = &sn.head};
    pthread_mutex_init(&sn.mu, NULL);
    if ((rc = clock_cond_init(&sn.cv))) {
        pthread_mutex_destroy(&sn.mu);
        etcd__conn_put(es, c);
        return rc;
    }
    grpc_stream_cbs_t cbs = {.on_msg = snap_msg, .on_end = snap_end, .arg = &sn};
    grpc_stream_t *st = NULL;
    rc = grpc_stream_open(etcd__conn_grpc(c), "/etcdserverpb.Maintenance/Snapshot", &cbs, &st);
    if (!rc) rc = grpc_stream_send(st, "", 0); /* an empty SnapshotRequest */
    int last = 0;
    while (!rc) {
        pthread_mutex_lock(&sn.mu);
        struct timespec ts = clock_deadline_ms(ETCD__COMPACT_TIMEOUT_MS);
        int timed_out = 0;
        while (!sn.head && !sn.ended && !sn.rc && !timed_out)
            timed_out = pthread_cond_timedwait(&sn.cv, &sn.mu, &ts) == ETIMEDOUT;
        chunk_t *ch = sn.head;
        if (ch && !(sn.head = ch->next)) sn.tail = &sn.head;
        if (!ch) rc = sn.rc ? sn.rc : timed_out ? KP_ETIMEDOUT : last ? 1 : KP_EIO;
        pthread_mutex_unlock(&sn.mu);
        if (!ch) break;
        rc = write_all(fd, ch->data, ch->len);
        last = ch->last;
        grpc_stream_release(st, ch->msg_bytes);
        free(ch);
    }
    if (rc == 1) rc = 0;             /* ended after the last chunk */
    if (!rc && !last) rc = KP_EIO;   /* cut short */
    grpc_stream_close(st);
    for (chunk_t *ch = sn.head; ch;) {
        chunk_t *next = ch->next;
        free(ch);
        ch = next;
    }
    pthread_cond_destroy(&sn.cv);
    pthread_mutex_destroy(&sn.mu);
    if (rc == KP_EUNAVAILABLE) {
        etcd__conn_failed(es, idx, c);
        etcd__endpoint_failed(es, idx);
    }
    etcd__conn_put(es, c);
    return rc;
}

int etcd__backup(store_t *s, const char *path, int64_t *out_rev)
{
    etcd_store_t *es = (etcd_store_t *)s;
    if (access(path, F_OK) == 0) return KP_EEXIST;
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= sizeof tmp)
        return KP_EINVAL;
    int64_t rev = 0;
    int rc = etcd__current_rev(es, &rev);
    if (rc) return rc;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return errno == ENOENT ? KP_ENOTFOUND : errno == EEXIST ? KP_EEXIST : KP_EIO;
    rc = snapshot_into(es, fd);
    if (!rc && fsync(fd)) rc = KP_EIO;
    if (close(fd) && !rc) rc = KP_EIO;
    if (!rc && link(tmp, path)) rc = errno == EEXIST ? KP_EEXIST : KP_EIO;
    unlink(tmp);
    if (!rc) {
        char *copy = strdup(path);
        int dfd = copy ? open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
        free(copy);
        if (dfd < 0 || fsync(dfd)) rc = KP_EIO;
        if (dfd >= 0) close(dfd);
    }
    if (!rc) *out_rev = rev;
    return rc;
}
