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
 * A backup is etcd's snapshot (/v3/maintenance/snapshot), streamed into a
 * temporary file, fsynced and linked into place; `etcdctl snapshot restore`
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
#include <curl/curl.h>

#include "lib/base64.h"
#include "lib/buf.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "etcd_int.h"

int etcd__compact(store_t *s, int64_t rev)
{
    etcd_store_t *es = (etcd_store_t *)s;
    char b[32];
    snprintf(b, sizeof b, "%lld", (long long)(rev + ETCD__REV_OFFSET));
    json_t *req = json_pack("{s:s,s:b}", "revision", b, "physical", 1);
    if (!req) return KP_ENOMEM;
    json_t *resp = NULL;
    int rc = etcd__call(es, "/v3/kv/compaction", req, ETCD__WRITE, ETCD__COMPACT_TIMEOUT_MS,
                        &resp);
    json_decref(req);
    json_decref(resp);
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

typedef struct snap {
    int fd;
    buf_t line;      /* the current JSON response */
    int rc;
    int last_seen;   /* a response with remaining_bytes 0 */
} snap_t;

static int snap_line(snap_t *sn, const char *p, size_t n)
{
    json_error_t jerr;
    json_t *j = json_loadb(p, n, 0, &jerr);
    json_t *res = json_object_get(j, "result");
    if (!res) {
        json_t *err = json_object_get(j, "error");
        int rc = etcd__error(json_string_value(json_object_get(err, "message")));
        json_decref(j);
        return rc;
    }
    char *blob = NULL;
    size_t len = 0;
    int rc = etcd__bytes(res, "blob", &blob, &len);
    for (size_t off = 0; !rc && off < len;) {
        ssize_t w = write(sn->fd, blob + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) rc = errno == ENOSPC ? KP_ENOSPC : KP_EIO;
        else off += (size_t)w;
    }
    if (!rc && etcd__int(res, "remaining_bytes") == 0) sn->last_seen = 1;
    free(blob);
    json_decref(j);
    return rc;
}

static size_t on_snap(char *p, size_t size, size_t n, void *arg)
{
    snap_t *sn = arg;
    size_t total = size * n;
    for (size_t i = 0; i < total; i++) {
        if (p[i] != '\n') {
            if (buf_append(&sn->line, p + i, 1)) return 0;
            continue;
        }
        if (sn->line.len && (sn->rc = snap_line(sn, sn->line.p, sn->line.len))) return 0;
        buf_reset(&sn->line);
    }
    return total;
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
    snap_t sn = {.fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)};
    if (sn.fd < 0) return errno == ENOENT ? KP_ENOTFOUND : errno == EEXIST ? KP_EEXIST : KP_EIO;
    buf_init(&sn.line, ETCD__WATCH_LINE_MAX);

    char *base, url[512];
    size_t idx = etcd__endpoint(es, &base);
    snprintf(url, sizeof url, "%s/v3/maintenance/snapshot", base);
    CURL *h = etcd__handle_get(es, NULL);
    if (!h) rc = KP_ENOMEM;
    if (!rc) {
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, "{}");
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_snap);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &sn);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)ETCD__CONNECT_MS);
        CURLcode cc = curl_easy_perform(h);
        if (cc == CURLE_COULDNT_CONNECT) etcd__endpoint_failed(es, idx);
        if (sn.rc) rc = sn.rc;
        else if (cc != CURLE_OK) rc = KP_EUNAVAILABLE;
        else if (sn.line.len) rc = snap_line(&sn, sn.line.p, sn.line.len);
        if (!rc && !sn.last_seen) rc = KP_EIO; /* cut short */
        etcd__handle_put(es, h);
    }
    buf_free(&sn.line);
    if (!rc && fsync(sn.fd)) rc = KP_EIO;
    if (close(sn.fd) && !rc) rc = KP_EIO;
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
