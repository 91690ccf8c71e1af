/*
 * metrics.c -- /metrics in the Prometheus text format.
 *
 *   apiserver_request_total{verb,resource,code}             counter
 *   apiserver_request_duration_seconds{verb,resource}       histogram
 *   apiserver_registered_watchers                           gauge
 *   kplane_watch_cache_history_bytes{group,version,resource} gauge
 *   kplane_watch_cache_objects{group,version,resource}       gauge
 *   kplane_watch_cache_objects_bytes{group,version,resource} gauge
 *     (the watch caches': a resource with no objects in the store has none)
 *   apiserver_storage_revision                              gauge
 *   apiserver_audit_event_total, apiserver_audit_error_total{plugin},
 *   apiserver_audit_level_total{level}                      counters (audit.h)
 *
 * Counters live in fixed arrays indexed by (resource, verb[, code]), so
 * recording a request is a few atomic adds and never allocates. Resources
 * are the registry's index, plus one slot for everything else (discovery,
 * health, unknown paths).
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "apiserver/http/http.h"
#include "apiserver/rest/rest.h"
#include "apiserver/rest/watchcache.h"
#include "apiserver/apiserver_int.h"
#include "apiserver/audit/audit.h"
#include "lib/buf.h"
#include "httpd/httpd.h"
#include "lib/err.h"
#include "store/store.h"

static const char *const verbs[API_VERB_COUNT] = {"GET", "LIST", "WATCH", "CREATE", "UPDATE",
                                                  "PATCH", "DELETE", "DELETECOLLECTION",
                                                  "OTHER"};
static const int codes[API_CODE_COUNT] = {200, 201, 400, 401, 403, 404, 405, 409, 410,
                                          413, 415, 422, 429, 500, 503, 504, 0};
static const double bounds[API_BUCKET_COUNT] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                0.5,   1,    2.5,   5,    10};

struct api_metrics {
    atomic_ulong count[API_RES_SLOTS][API_VERB_COUNT][API_CODE_COUNT];
    atomic_ulong bucket[API_RES_SLOTS][API_VERB_COUNT][API_BUCKET_COUNT];
    atomic_ulong total[API_RES_SLOTS][API_VERB_COUNT];
    atomic_ulong sum_us[API_RES_SLOTS][API_VERB_COUNT];
};

api_metrics_t *api_metrics_new(void) { return calloc(1, sizeof(api_metrics_t)); }
void api_metrics_free(api_metrics_t *m) { free(m); }

int api_verb_of(const api_req_t *r)
{
    const char *m = r->method;
    int collection = !*r->route.name;
    if (r->route.kind != API_ROUTE_RESOURCE) return API_VERB_OTHER;
    if (!strcmp(m, "GET")) {
        if (!collection) return API_VERB_GET;
        const char *w = api_query((api_req_t *)r, "watch");
        int watch = w && (!strcmp(w, "1") || !strcasecmp(w, "t") || !strcasecmp(w, "true"));
        return watch ? API_VERB_WATCH : API_VERB_LIST;
    }
    if (!strcmp(m, "POST")) return API_VERB_CREATE;
    if (!strcmp(m, "PUT")) return API_VERB_UPDATE;
    if (!strcmp(m, "PATCH")) return API_VERB_PATCH;
    if (!strcmp(m, "DELETE")) return collection ? API_VERB_DELETECOLLECTION : API_VERB_DELETE;
    return API_VERB_OTHER;
}

void api_metrics_record(api_metrics_t *m, const api_req_t *r, int verb, int code,
                        double seconds)
{
    const api_resource_t *res = r->route.kind == API_ROUTE_RESOURCE ? r->route.res : NULL;
    /* Built-ins have a slot each; run-time resources share the last. */
    size_t slot = res && r->route.index < api_registry_count() ? r->route.index
                                                                : API_RES_SLOTS - 1;
    if (slot >= API_RES_SLOTS) slot = API_RES_SLOTS - 1;
    int c = API_CODE_COUNT - 1;
    for (int i = 0; i < API_CODE_COUNT - 1; i++)
        if (codes[i] == code) c = i;
    atomic_fetch_add(&m->count[slot][verb][c], 1);
    for (int i = 0; i < API_BUCKET_COUNT; i++)
        if (seconds <= bounds[i]) atomic_fetch_add(&m->bucket[slot][verb][i], 1);
    atomic_fetch_add(&m->total[slot][verb], 1);
    atomic_fetch_add(&m->sum_us[slot][verb], (unsigned long)(seconds * 1e6));
}

static const char *slot_name(size_t slot, char *buf, size_t n)
{
    const api_resource_t *res = slot < api_registry_count() ? api_registry_at(slot) : NULL;
    if (!res) return "";
    if (*res->group) snprintf(buf, n, "%s.%s", res->resource, res->group);
    else snprintf(buf, n, "%s", res->resource);
    return buf;
}

/* One unlabelled gauge, with its HELP and TYPE lines. */
static int gauge(buf_t *b, const char *name, const char *help, uint64_t value)
{
    return buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n%s %llu\n", name, help, name, name,
                      (unsigned long long)value);
}

enum { GAUGE_HISTORY_BYTES, GAUGE_OBJECTS, GAUGE_OBJECTS_BYTES };

/* One gauge per resource of the watch caches (`caches` may be NULL). */
static int cache_gauge(buf_t *b, wc_t *const *caches, const char *name, const char *help, int what)
{
    int rc = buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
    for (size_t i = 0, n = api_registry_count(); !rc && caches && i < n; i++) {
        const api_resource_t *res = api_registry_at(i);
        size_t bytes = 0, count = 0;
        if (!caches[i]) continue; /* nothing stored */
        if (what == GAUGE_HISTORY_BYTES)
            wc_history_usage(caches[i], &bytes, NULL);
        else
            wc_objects_usage(caches[i], &bytes, &count);
        rc =
            buf_printf(b, "%s{group=\"%s\",version=\"%s\",resource=\"%s\"} %zu\n", name, res->group,
                       res->version, res->resource, what == GAUGE_OBJECTS ? count : bytes);
    }
    return rc;
}

int api_serve_metrics(api_req_t *r)
{
    api_metrics_t *m = r->srv->metrics;
    buf_t b;
    buf_init(&b, 16u << 20);
    int rc = buf_printf(&b, "# HELP apiserver_request_total Requests by verb, resource and HTTP code.\n"
                     "# TYPE apiserver_request_total counter\n");
    char name[128];
    size_t slots = api_registry_count() + 1 < API_RES_SLOTS ? api_registry_count() + 1
                                                             : API_RES_SLOTS;
    for (size_t s = 0; s < slots && !rc; s++) {
        size_t slot = s == slots - 1 ? API_RES_SLOTS - 1 : s;
        for (int v = 0; v < API_VERB_COUNT && !rc; v++)
            for (int c = 0; c < API_CODE_COUNT && !rc; c++) {
                unsigned long n = atomic_load(&m->count[slot][v][c]);
                if (n)
                    rc = buf_printf(&b, "apiserver_request_total{verb=\"%s\",resource=\"%s\",code=\"%s%d\"} %lu\n",
                             verbs[v], slot_name(slot, name, sizeof name), codes[c] ? "" : "other",
                             codes[c] ? codes[c] : 0, n);
            }
    }
    if (!rc)
        rc = buf_printf(&b, "# HELP apiserver_request_duration_seconds Request latency.\n"
                     "# TYPE apiserver_request_duration_seconds histogram\n");
    for (size_t s = 0; s < slots && !rc; s++) {
        size_t slot = s == slots - 1 ? API_RES_SLOTS - 1 : s;
        for (int v = 0; v < API_VERB_COUNT && !rc; v++) {
            unsigned long total = atomic_load(&m->total[slot][v]);
            if (!total) continue;
            const char *res = slot_name(slot, name, sizeof name);
            for (int i = 0; i < API_BUCKET_COUNT && !rc; i++)
                rc = buf_printf(&b,
                         "apiserver_request_duration_seconds_bucket{verb=\"%s\",resource=\"%s\","
                         "le=\"%g\"} %lu\n",
                         verbs[v], res, bounds[i], atomic_load(&m->bucket[slot][v][i]));
            if (!rc)
                rc = buf_printf(&b,
                         "apiserver_request_duration_seconds_bucket{verb=\"%s\",resource=\"%s\","
                         "le=\"+Inf\"} %lu\n"
                         "apiserver_request_duration_seconds_sum{verb=\"%s\",resource=\"%s\"} %.6f\n"
                         "apiserver_request_duration_seconds_count{verb=\"%s\",resource=\"%s\"} %lu\n",
                         verbs[v], res, total, verbs[v], res,
                         (double)atomic_load(&m->sum_us[slot][v]) / 1e6, verbs[v], res, total);
        }
    }
    pthread_mutex_lock(&r->srv->mu);
    size_t watches = r->srv->watches + r->srv->watches_local;
    pthread_mutex_unlock(&r->srv->mu);
    store_status_t st = {0};
    store_status(r->srv->cfg.store, &st);
    if (!rc)
        rc = buf_printf(&b,
                 "# HELP apiserver_registered_watchers Open watch streams.\n"
                 "# TYPE apiserver_registered_watchers gauge\n"
                 "apiserver_registered_watchers %zu\n"
                 "# HELP apiserver_storage_revision The store's newest revision.\n"
                 "# TYPE apiserver_storage_revision gauge\n"
                 "apiserver_storage_revision %lld\n"
                 "# HELP apiserver_storage_compacted_revision The store's compaction revision.\n"
                 "# TYPE apiserver_storage_compacted_revision gauge\n"
                 "apiserver_storage_compacted_revision %lld\n"
                 "# HELP kplane_store_writes_total Writes the store acknowledged.\n"
                 "# TYPE kplane_store_writes_total counter\n"
                 "kplane_store_writes_total %llu\n"
                 "# HELP kplane_store_commits_total Durable commits those writes took "
                 "(group commit: writes per commit is the batch size).\n"
                 "# TYPE kplane_store_commits_total counter\n"
                 "kplane_store_commits_total %llu\n",
                 watches, (long long)st.revision, (long long)st.compact_revision,
                 (unsigned long long)st.writes, (unsigned long long)st.commits);
    /* Where the watch caches' memory goes: each resource's history, and
     * the current objects it keeps (a version also in the history counts in
     * both). */
    if (!rc)
        rc = cache_gauge(&b, r->srv->caches, "kplane_watch_cache_history_bytes",
                         "Memory of a resource's watch cache history (object versions it keeps, "
                         "estimated; bounded by --watch-cache-bytes).",
                         GAUGE_HISTORY_BYTES);
    if (!rc)
        rc = cache_gauge(&b, r->srv->caches, "kplane_watch_cache_objects",
                         "A resource's objects in its watch cache.", GAUGE_OBJECTS);
    if (!rc)
        rc = cache_gauge(&b, r->srv->caches, "kplane_watch_cache_objects_bytes",
                         "Memory of those objects (estimated as the history's).",
                         GAUGE_OBJECTS_BYTES);
    httpd_stats_t hs = {0};
    if (r->srv->httpd) httpd_stats(r->srv->httpd, &hs);
    if (!rc)
        rc = buf_printf(&b,
                 "# HELP kplane_http_connections Connections open (all; of those, HTTP/2; "
                 "of those, with no authenticated request yet).\n"
                 "# TYPE kplane_http_connections gauge\n"
                 "kplane_http_connections{stage=\"open\"} %llu\n"
                 "kplane_http_connections{stage=\"h2\"} %llu\n"
                 "kplane_http_connections{stage=\"unproven\"} %llu\n",
                 (unsigned long long)hs.connections, (unsigned long long)hs.h2_connections,
                 (unsigned long long)hs.unproven);
    if (!rc)
        rc = buf_printf(&b,
                 "# HELP kplane_http_connections_closed_total Connections the server closed "
                 "early, by reason: cap (an unproven one, for a newer one), timeout, refused "
                 "(at accept, or a protocol limit).\n"
                 "# TYPE kplane_http_connections_closed_total counter\n"
                 "kplane_http_connections_closed_total{reason=\"cap\"} %llu\n"
                 "kplane_http_connections_closed_total{reason=\"timeout\"} %llu\n"
                 "kplane_http_connections_closed_total{reason=\"refused\"} %llu\n",
                 (unsigned long long)hs.evicted, (unsigned long long)hs.timeouts,
                 (unsigned long long)hs.refused);
    if (!rc)
        rc = buf_printf(&b,
                 "# HELP kplane_http_connections_accepted_total Connections accepted, and of "
                 "those, the ones that spoke HTTP/2.\n"
                 "# TYPE kplane_http_connections_accepted_total counter\n"
                 "kplane_http_connections_accepted_total %llu\n"
                 "# TYPE kplane_http2_connections_total counter\n"
                 "kplane_http2_connections_total %llu\n",
                 (unsigned long long)hs.accepted, (unsigned long long)hs.h2_accepted);
    if (!rc)
        rc = gauge(&b, "kplane_http_requests_queued", "Requests waiting for a worker.", hs.queued);
    if (!rc)
        rc = gauge(&b, "kplane_http_workers", "Worker threads of the HTTP engine now.", hs.workers);
    if (!rc)
        rc = gauge(&b, "kplane_http_streams",
                   "Streaming replies open now (watches, log follows); a parked one holds no "
                   "thread.",
                   hs.streams);
    if (!rc) rc = api_audit_metrics(r->srv->audit, &b);
    pthread_mutex_lock(&r->srv->metrics_mu);
    char *extra = NULL;
    if (!rc && r->srv->metrics_fn && !r->srv->metrics_fn(r->srv->metrics_arg, &extra) && extra)
        rc = buf_append(&b, extra, strlen(extra));
    free(extra);
    pthread_mutex_unlock(&r->srv->metrics_mu);
    if (rc) {
        buf_free(&b);
        return api_reply_error(r, rc, NULL, "metrics: %s", err_str(rc));
    }
    rc = api_reply_bytes(r, 200, "text/plain; version=0.0.4; charset=utf-8", b.p, b.len);
    buf_free(&b);
    return rc;
}
