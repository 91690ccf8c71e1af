/*
 * etcd_backend.c -- open, close, writes and status of the etcd backend.
 * The mapping of the store contract onto etcd is described in etcd_int.h.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "etcd_int.h"

static const store_ops_t etcd_ops;

static void free_endpoints(etcd_store_t *es)
{
    for (size_t i = 0; i < es->n_endpoints; i++) free(es->endpoints[i]);
    es->n_endpoints = 0;
}

/* "h1:2379,h2:2379" (each optionally with http:// or https://). */
static int parse_endpoints(etcd_store_t *es, const char *list)
{
    const char *p = list;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        while (n && p[n - 1] == '/') n--;
        if (n == 0 || n > 256 || es->n_endpoints == ETCD__MAX_ENDPOINTS) return KP_EINVAL;
        int has_scheme = (n > 7 && !strncmp(p, "http://", 7)) ||
                         (n > 8 && !strncmp(p, "https://", 8));
        char *e = malloc(n + 8);
        if (!e) return KP_ENOMEM;
        snprintf(e, n + 8, "%s%.*s", has_scheme ? "" : "http://", (int)n, p);
        es->endpoints[es->n_endpoints++] = e;
        p += n;
        while (*p == '/') p++;
        if (*p == ',') p++;
        else if (*p) return KP_EINVAL;
    }
    return es->n_endpoints ? 0 : KP_EINVAL;
}

int store__etcd_open(const char *endpoints, const store_options_t *opt, store_t **out)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) return KP_ENOMEM;
    etcd_store_t *es = calloc(1, sizeof *es);
    if (!es) {
        curl_global_cleanup();
        return KP_ENOMEM;
    }
    es->base.ops = &etcd_ops;
    es->opt = *opt;
    pthread_mutex_init(&es->mu, NULL);
    int rc = clock_cond_init(&es->compactor_cv);
    if (rc) goto fail_cv;
    if ((rc = parse_endpoints(es, endpoints))) goto fail;

    /* Reach the cluster once: the open fails if no endpoint answers. */
    json_t *req = json_object(), *resp = NULL;
    rc = req ? etcd__call(es, "/v3/maintenance/status", req, ETCD__READ, ETCD__TIMEOUT_MS, &resp)
             : KP_ENOMEM;
    json_decref(req);
    if (rc) goto fail;
    const char *version = json_string_value(json_object_get(resp, "version"));
    log_debug("store", "etcd %s at %s (revision %lld)", version ? version : "?",
             es->endpoints[es->current], (long long)(etcd__header_rev(resp) - ETCD__REV_OFFSET));
    json_decref(resp);
    if ((rc = etcd__compactor_start(es))) goto fail;
    *out = &es->base;
    return 0;

fail:
    for (size_t i = 0; i < es->n_pool; i++) curl_easy_cleanup(es->pool[i]);
    free(es->samples);
    pthread_cond_destroy(&es->compactor_cv);
fail_cv:
    free_endpoints(es);
    pthread_mutex_destroy(&es->mu);
    free(es);
    curl_global_cleanup();
    return rc;
}

static void etcd_close(store_t *s)
{
    etcd_store_t *es = (etcd_store_t *)s;
    etcd__compactor_stop(es);
    for (size_t i = 0; i < es->n_pool; i++) curl_easy_cleanup(es->pool[i]);
    free_endpoints(es);
    free(es->samples);
    pthread_cond_destroy(&es->compactor_cv);
    pthread_mutex_destroy(&es->mu);
    free(es);
    curl_global_cleanup();
}

static json_t *rev_str(int64_t rev)
{
    char b[32];
    snprintf(b, sizeof b, "%lld", (long long)rev);
    return json_string(b);
}

/* The transaction of one write (see WRITES in etcd_int.h). */
static json_t *write_txn(store__op_t op, json_t *k, const void *value, size_t vlen,
                         int64_t expect_rev)
{
    json_t *cmp;
    if (op == STORE__CREATE)
        cmp = json_pack("{s:s,s:O,s:s}", "target", "CREATE", "key", k, "create_revision", "0");
    else if (expect_rev)
        cmp = json_pack("{s:s,s:O,s:o}", "target", "MOD", "key", k, "mod_revision",
                        rev_str(expect_rev + ETCD__REV_OFFSET));
    else
        cmp = json_pack("{s:s,s:s,s:O,s:s}", "target", "CREATE", "result", "GREATER", "key", k,
                        "create_revision", "0");
    json_t *then;
    if (op == STORE__DELETE) {
        then = json_pack("{s:{s:O}}", "request_delete_range", "key", k);
    } else {
        json_t *v = etcd__b64(vlen ? value : "", vlen);
        then = v ? json_pack("{s:{s:O,s:o}}", "request_put", "key", k, "value", v) : NULL;
    }
    json_t *otherwise = op == STORE__CREATE
                            ? json_array()
                            : json_pack("[{s:{s:O,s:b}}]", "request_range", "key", k,
                                        "keys_only", 1);
    if (!cmp || !then || !otherwise) {
        json_decref(cmp);
        json_decref(then);
        json_decref(otherwise);
        return NULL;
    }
    return json_pack("{s:[o],s:[o],s:o}", "compare", cmp, "success", then, "failure", otherwise);
}

int etcd__write(store_t *s, store__op_t op, const char *key, size_t klen, const void *value,
                size_t vlen, int64_t expect_rev, int64_t *out_rev)
{
    etcd_store_t *es = (etcd_store_t *)s;
    json_t *k = etcd__b64(key, klen);
    json_t *req = k ? write_txn(op, k, value, vlen, expect_rev) : NULL;
    json_decref(k);
    if (!req) return KP_ENOMEM;
    json_t *resp;
    int rc = etcd__call(es, "/v3/kv/txn", req, ETCD__WRITE, ETCD__TIMEOUT_MS, &resp);
    json_decref(req);
    if (rc) return rc;
    if (json_is_true(json_object_get(resp, "succeeded"))) {
        *out_rev = etcd__header_rev(resp) - ETCD__REV_OFFSET;
        pthread_mutex_lock(&es->mu);
        es->writes++;
        pthread_mutex_unlock(&es->mu);
    } else if (op == STORE__CREATE) {
        rc = KP_EEXIST;
    } else {
        json_t *r0 = json_array_get(json_object_get(resp, "responses"), 0);
        json_t *kvs = json_object_get(json_object_get(r0, "response_range"), "kvs");
        json_t *kv = json_array_get(kvs, 0);
        if (!kv) {
            rc = KP_ENOTFOUND;
        } else {
            rc = KP_ECONFLICT;
            *out_rev = etcd__int(kv, "mod_revision") - ETCD__REV_OFFSET;
        }
    }
    json_decref(resp);
    return rc;
}

static int etcd_status(store_t *s, store_status_t *out)
{
    etcd_store_t *es = (etcd_store_t *)s;
    json_t *req = json_pack("{s:s,s:s,s:b}", "key", "AA==", "range_end", "AA==", "count_only", 1);
    json_t *resp = NULL;
    int rc = req ? etcd__call(es, "/v3/kv/range", req, ETCD__READ, ETCD__TIMEOUT_MS, &resp)
                 : KP_ENOMEM;
    json_decref(req);
    if (rc) return rc;
    out->revision = etcd__header_rev(resp) - ETCD__REV_OFFSET;
    out->keys = (uint64_t)etcd__int(resp, "count");
    json_decref(resp);

    if (!(req = json_object())) return KP_ENOMEM;
    rc = etcd__call(es, "/v3/maintenance/status", req, ETCD__READ, ETCD__TIMEOUT_MS, &resp);
    json_decref(req);
    if (rc) return rc;
    out->file_bytes = (uint64_t)etcd__int(resp, "dbSize");
    out->db_bytes = (uint64_t)etcd__int(resp, "dbSizeInUse");
    if (!out->db_bytes) out->db_bytes = out->file_bytes;
    json_decref(resp);

    if ((rc = etcd__compact_revision(es, out->revision, &out->compact_revision))) return rc;
    pthread_mutex_lock(&es->mu);
    /* etcd commits (and batches its fsyncs) on its own: each acknowledged
     * write is one request here, so writes and commits are the same count. */
    out->writes = out->commits = es->writes;
    pthread_mutex_unlock(&es->mu);
    return 0;
}

/* One count-only range of a single key: its header carries the revision, and
 * the range is linearizable (etcd's default), so it is current. */
static int revision_within(etcd_store_t *es, int timeout_ms, int64_t *out)
{
    json_t *req = json_pack("{s:s,s:b}", "key", "AA==", "count_only", 1);
    json_t *resp = NULL;
    int rc = req ? etcd__call(es, "/v3/kv/range", req, ETCD__READ, timeout_ms, &resp)
                 : KP_ENOMEM;
    json_decref(req);
    if (rc) return rc;
    *out = etcd__header_rev(resp) - ETCD__REV_OFFSET;
    json_decref(resp);
    return 0;
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
