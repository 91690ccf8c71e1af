/*
 * etcd_backend.c -- open, close, writes and status of the etcd backend.
 * The mapping of the store contract onto etcd is described in etcd_int.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "etcd_int.h"
#include "store/etcd_pb.h"

static const store_ops_t etcd_ops;

static void free_endpoints(etcd_store_t *es)
{
    for (size_t i = 0; i < es->n_endpoints; i++)
        free(es->hosts[i]);
    es->n_endpoints = 0;
}

/* "h1:2379,h2:2379" (each optionally with http://; https:// is refused: no
 * TLS to etcd yet). */
static int parse_endpoints(etcd_store_t *es, const char *list)
{
    const char *p = list;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        const char *e = p;
        while (n && e[n - 1] == '/')
            n--;
        if (n > 7 && !strncmp(e, "http://", 7)) e += 7, n -= 7;
        const char *colon = memrchr(e, ':', n);
        if (n == 0 || n > 256 || !colon || colon == e || es->n_endpoints == ETCD__MAX_ENDPOINTS)
            return KP_EINVAL;
        char port[8];
        size_t plen = n - (size_t)(colon + 1 - e);
        if (!plen || plen >= sizeof port) return KP_EINVAL;
        memcpy(port, colon + 1, plen);
        port[plen] = '\0';
        char *end;
        long pn = strtol(port, &end, 10);
        if (*end || pn <= 0 || pn > 65535) return KP_EINVAL;
        char *host = strndup(e, (size_t)(colon - e));
        if (!host) return KP_ENOMEM;
        es->hosts[es->n_endpoints] = host;
        es->ports[es->n_endpoints++] = (int)pn;
        p += comma ? (size_t)(comma - p) + 1 : strlen(p);
        if (comma && !*p) return KP_EINVAL; /* a trailing comma */
    }
    return es->n_endpoints ? 0 : KP_EINVAL;
}

/* Does etcd `version` ("3.4.23") order a progress request's answer after
 * the events before it (3.4.31 and later 3.4, 3.5.13 and later; PROGRESS in
 * etcd_int.h)? */
static int orders_progress(const char *version)
{
    int major = 0, minor = 0, patch = 0;
    if (sscanf(version, "%d.%d.%d", &major, &minor, &patch) != 3) return 0;
    if (major != 3) return major > 3;
    if (minor == 4) return patch >= 31;
    if (minor == 5) return patch >= 13;
    return minor > 5;
}

/* Maintenance/Status of the cluster: *out decoded. */
static int status_call(etcd_store_t *es, etcd_pb_status_t *out)
{
    buf_t req;
    buf_init(&req, 16);
    uint8_t *resp;
    size_t len;
    int rc = etcd__rpc(es, "/etcdserverpb.Maintenance/Status", &req, ETCD__READ, ETCD__TIMEOUT_MS,
                       &resp, &len);
    buf_free(&req);
    if (rc) return rc;
    rc = etcd_pb_status_resp(resp, len, out);
    free(resp);
    return rc;
}

int store__etcd_open(const char *endpoints, const store_options_t *opt, store_t **out)
{
    etcd_store_t *es = calloc(1, sizeof *es);
    if (!es) return KP_ENOMEM;
    es->base.ops = &etcd_ops;
    es->opt = *opt;
    pthread_mutex_init(&es->mu, NULL);
    int rc = clock_cond_init(&es->compactor_cv);
    if (rc) goto fail_cv;
    if ((rc = clock_cond_init(&es->leader_cv))) {
        pthread_cond_destroy(&es->compactor_cv);
        goto fail_cv;
    }
    if ((rc = parse_endpoints(es, endpoints))) goto fail;

    /* Reach the cluster once: the open fails if no endpoint answers. */
    etcd_pb_status_t st;
    if ((rc = status_call(es, &st))) goto fail;
    es->progress_requests = orders_progress(st.version);
    size_t cur = etcd__endpoint(es);
    log_debug("store", "etcd %s at %s:%d (revision %lld)%s", st.version, es->hosts[cur],
              es->ports[cur], (long long)(st.h.revision - ETCD__REV_OFFSET),
              es->progress_requests ? "" : "; no progress requests (before 3.4.31, 3.5.13)");
    if ((rc = etcd__compactor_start(es))) goto fail;
    if ((rc = etcd__leader_start(es))) goto fail;
    *out = &es->base;
    return 0;

fail:
    etcd__compactor_stop(es);
    etcd__leader_stop(es);
    etcd__conns_close(es);
    free(es->samples);
    pthread_cond_destroy(&es->compactor_cv);
    pthread_cond_destroy(&es->leader_cv);
fail_cv:
    free_endpoints(es);
    pthread_mutex_destroy(&es->mu);
    free(es);
    return rc;
}

static void etcd_close(store_t *s)
{
    etcd_store_t *es = (etcd_store_t *)s;
    etcd__compactor_stop(es);
    etcd__leader_stop(es);
    etcd__conns_close(es);
    free_endpoints(es);
    free(es->samples);
    pthread_cond_destroy(&es->compactor_cv);
    pthread_cond_destroy(&es->leader_cv);
    pthread_mutex_destroy(&es->mu);
    free(es);
}

int etcd__write(store_t *s, store__op_t op, const char *key, size_t klen, const void *value,
                size_t vlen, int64_t expect_rev, int64_t *out_rev)
{
    etcd_store_t *es = (etcd_store_t *)s;
    int pop = op == STORE__CREATE   ? ETCD_PB_CREATE
              : op == STORE__DELETE ? ETCD_PB_DELETE
                                    : ETCD_PB_PUT;
    buf_t req;
    buf_init(&req, (size_t)-1);
    int rc = etcd_pb_write_txn(&req, pop, key, klen, value, vlen,
                               expect_rev ? expect_rev + ETCD__REV_OFFSET : 0);
    uint8_t *resp = NULL;
    size_t len = 0;
    if (!rc)
        rc =
            etcd__rpc(es, "/etcdserverpb.KV/Txn", &req, ETCD__WRITE, ETCD__TIMEOUT_MS, &resp, &len);
    buf_free(&req);
    if (rc) return rc;
    etcd_pb_txn_result_t t;
    rc = etcd_pb_txn_resp(resp, len, &t);
    if (rc) {
        /* Committed or not: its answer is unreadable. */
        log_warn("store", "etcd: an unreadable transaction response (%zu bytes)", len);
        rc = KP_ETIMEDOUT;
    } else if (t.succeeded) {
        *out_rev = t.h.revision - ETCD__REV_OFFSET;
        pthread_mutex_lock(&es->mu);
        es->writes++;
        pthread_mutex_unlock(&es->mu);
    } else if (op == STORE__CREATE) {
        rc = KP_EEXIST;
    } else if (!t.found) {
        rc = KP_ENOTFOUND;
    } else {
        rc = KP_ECONFLICT;
        *out_rev = t.kv.mod_rev - ETCD__REV_OFFSET;
    }
    free(resp);
    return rc;
}

/* A count-only range of every key: the key count and, in its header, the
 * current revision (linearizable, etcd's default). */
static int count_all(etcd_store_t *es, int timeout_ms, int64_t *rev, int64_t *count)
{
    buf_t req;
    buf_init(&req, 64);
    uint8_t *resp = NULL;
    size_t len = 0;
    int rc =
        etcd_pb_range(&req, "\0", 1, count ? "\0" : NULL, count ? 1 : 0, 0, 0, ETCD_PB_COUNT_ONLY);
    if (!rc)
        rc = etcd__rpc(es, "/etcdserverpb.KV/Range", &req, ETCD__READ, timeout_ms, &resp, &len);
    buf_free(&req);
    if (rc) return rc;
    etcd_pb_header_t h;
    int more;
    int64_t n;
    rc = etcd_pb_range_resp(resp, len, &h, NULL, NULL, &more, &n);
    free(resp);
    if (rc) return rc;
    *rev = h.revision - ETCD__REV_OFFSET;
    if (count) *count = n;
    return 0;
}

static int etcd_status(store_t *s, store_status_t *out)
{
    etcd_store_t *es = (etcd_store_t *)s;
    int64_t keys = 0;
    int rc = count_all(es, ETCD__TIMEOUT_MS, &out->revision, &keys);
    if (rc) return rc;
    out->keys = (uint64_t)keys;
    etcd_pb_status_t st;
    if ((rc = status_call(es, &st))) return rc;
    out->file_bytes = (uint64_t)st.db_size;
    out->db_bytes = (uint64_t)st.db_size_in_use;
    if (!out->db_bytes) out->db_bytes = out->file_bytes;

    if ((rc = etcd__compact_revision(es, out->revision, &out->compact_revision))) return rc;
    pthread_mutex_lock(&es->mu);
    /* etcd commits (and batches its fsyncs) on its own: each acknowledged
     * write is one request here, so writes and commits are the same count. */
    out->writes = out->commits = es->writes;
    pthread_mutex_unlock(&es->mu);
    return 0;
}

/* A count-only range of a single key: its header carries the revision, and
 * the range is linearizable (etcd's default), so it is current. */
static int revision_within(etcd_store_t *es, int timeout_ms, int64_t *out)
{
    return count_all(es, timeout_ms, out, NULL);
}

static int etcd_revision(store_t *s, int64_t *out)
{
    return revision_within((etcd_store_t *)s, ETCD__TIMEOUT_MS, out);
}

/* store_health(): a revision read within ETCD__HEALTH_TIMEOUT_MS, as
 * kube-apiserver's etcd check. Its result serves every caller for
 * ETCD__HEALTH_CACHE_MS, and callers that come while one read is under way
 * get the last result: a flood of unauthenticated /readyz requests costs
 * etcd one read a second. */
static int etcd_health(store_t *s, char *why, size_t len)
{
    etcd_store_t *es = (etcd_store_t *)s;
    int64_t now = clock_mono_ns();
    pthread_mutex_lock(&es->mu);
    int check = !es->health_busy && (es->health_at_ns == 0 ||
                                     now - es->health_at_ns >= ETCD__HEALTH_CACHE_MS * 1000000ll);
    if (check) es->health_busy = 1;
    pthread_mutex_unlock(&es->mu);
    if (check) {
        int64_t rev;
        int rc = revision_within(es, ETCD__HEALTH_TIMEOUT_MS, &rev);
        pthread_mutex_lock(&es->mu);
        es->health_rc = rc;
        es->health_at_ns = clock_mono_ns();
        es->health_busy = 0;
        pthread_mutex_unlock(&es->mu);
    }
    pthread_mutex_lock(&es->mu);
    int rc = es->health_rc;
    pthread_mutex_unlock(&es->mu);
    if (why && len) snprintf(why, len, "%s", rc ? err_str(rc) : "ok");
    return rc;
}

static const store_ops_t etcd_ops = {
    .name = "etcd",
    .close = etcd_close,
    .write = etcd__write,
    .get = etcd__get,
    .range = etcd__range,
    .status = etcd_status,
    .revision = etcd_revision,
    .health = etcd_health,
    .watch_open = etcd__watch_open,
    .compact = etcd__compact,
    .backup = etcd__backup,
};
