/*
 * etcd_http.c -- one request to etcd's JSON gateway, with endpoint failover
 * and timeouts (see ENDPOINTS AND TIMEOUTS in etcd_int.h), and the JSON
 * helpers the other etcd_*.c files share.
 */
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base64.h"
#include "lib/buf.h"
#include "lib/err.h"
#include "lib/log.h"
#include "etcd_int.h"

#define RESPONSE_MAX (1ull << 30)

int etcd__error(const char *msg)
{
    static const struct {
        const char *needle;
        int rc;
    } map[] = {
        {"required revision has been compacted", KP_ECOMPACTED},
        {"required revision is a future revision", KP_EFUTURE},
        {"request is too large", KP_ETOOLARGE},
        {"message larger than max", KP_ETOOLARGE},
        {"database space exceeded", KP_ENOSPC},
        {"no leader", KP_EUNAVAILABLE},
        {"not capable", KP_EUNAVAILABLE},
        {"unhealthy cluster", KP_EUNAVAILABLE},
        {"server stopped", KP_EUNAVAILABLE},
        {"too many requests", KP_EUNAVAILABLE},
        {"request timed out", KP_ETIMEDOUT},
        {"leader changed", KP_ETIMEDOUT},
        {"timed out", KP_ETIMEDOUT},
    };
    if (!msg) return KP_EIO;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strstr(msg, map[i].needle)) return map[i].rc;
    return KP_EIO;
}

size_t etcd__endpoint(etcd_store_t *es, char **url_out)
{
    pthread_mutex_lock(&es->mu);
    size_t idx = es->current;
    pthread_mutex_unlock(&es->mu);
    *url_out = es->endpoints[idx];
    return idx;
}

void etcd__endpoint_failed(etcd_store_t *es, size_t idx)
{
    pthread_mutex_lock(&es->mu);
    if (es->current == idx && es->n_endpoints > 1) {
        es->current = (idx + 1) % es->n_endpoints;
        log_warn("store", "etcd endpoint %s failed; using %s", es->endpoints[idx],
                 es->endpoints[es->current]);
    }
    pthread_mutex_unlock(&es->mu);
}

void *etcd__handle_get(etcd_store_t *es, int *pooled)
{
    CURL *h = NULL;
    pthread_mutex_lock(&es->mu);
    if (es->n_pool) h = es->pool[--es->n_pool];
    pthread_mutex_unlock(&es->mu);
    if (pooled) *pooled = h != NULL;
    if (h) curl_easy_reset(h); /* keeps its connections */
    else h = curl_easy_init();
    return h;
}

void etcd__handle_put(etcd_store_t *es, void *h)
{
    if (!h) return;
    pthread_mutex_lock(&es->mu);
    if (es->n_pool < ETCD__POOL) {
        es->pool[es->n_pool++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&es->mu);
    if (h) curl_easy_cleanup(h);
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    return buf_append(arg, p, size * n) ? 0 : size * n;
}

/* One attempt on one endpoint. *sent says whether a write may have been
 * applied: not after a connect failure, nor when etcd refused it up front.
 *
 * A connect failure proves nothing on a pooled handle: when a reused
 * connection dies before the answer, libcurl sends the request again on a
 * new connection by itself, and if that connect fails, the error is
 * CURLE_COULDNT_CONNECT although the first copy may have reached etcd and
 * been committed (the linearizability drill caught exactly this). So a
 * failure on a pooled handle counts as sent, and the handle is dropped: the
 * next attempt, on a new handle, tells a dead endpoint apart for sure. */
static int attempt(etcd_store_t *es, const char *base, const char *path, const char *body,
                   size_t body_len, int timeout_ms, json_t **resp, int *sent)
{
    char url[512];
    snprintf(url, sizeof url, "%s%s", base, path);
    int pooled = 0;
    CURL *h = etcd__handle_get(es, &pooled);
    if (!h) return KP_ENOMEM;
    struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    struct curl_slist *t = hdrs ? curl_slist_append(hdrs, "Expect:") : NULL;
    if (!t) {
        curl_slist_free_all(hdrs);
        etcd__handle_put(es, h);
        return KP_ENOMEM;
    }
    buf_t out;
    buf_init(&out, RESPONSE_MAX);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)ETCD__CONNECT_MS);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    CURLcode cc = curl_easy_perform(h);
    long code = 0, request_bytes = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    /* Bytes of the request that went out: 0 after a failed connect, also on
     * a reused connection (whose connect time would say nothing). */
    curl_easy_getinfo(h, CURLINFO_REQUEST_SIZE, &request_bytes);
    curl_slist_free_all(hdrs);
    if (cc != CURLE_OK && pooled)
        curl_easy_cleanup(h); /* its connections are suspect; see above */
    else
        etcd__handle_put(es, h);

    int rc = 0;
    *sent = 1;
    if (cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ||
        (cc != CURLE_OK && request_bytes == 0)) {
        *sent = pooled; /* see above */
        rc = KP_EUNAVAILABLE;
    } else if (cc == CURLE_OPERATION_TIMEDOUT) {
        rc = KP_ETIMEDOUT;
    } else if (cc == CURLE_WRITE_ERROR) {
        rc = KP_ETOOLARGE;
    } else if (cc != CURLE_OK) {
        rc = KP_EUNAVAILABLE;
    }
    if (rc) {
        log_debug("store", "etcd %s: %s", url, curl_easy_strerror(cc));
        buf_free(&out);
        return rc;
    }
    json_error_t jerr;
    json_t *j = out.p ? json_loadb(out.p, out.len, 0, &jerr) : NULL;
    buf_free(&out);
    if (!json_is_object(j)) {
        json_decref(j);
        return code == 200 ? KP_EIO : KP_EUNAVAILABLE;
    }
    json_t *err = json_object_get(j, "error");
    if (err || code != 200) {
        const char *msg = json_is_string(err) ? json_string_value(err)
                                              : json_string_value(json_object_get(j, "message"));
        rc = etcd__error(msg);
        if (rc == KP_EIO) log_warn("store", "etcd %s: HTTP %ld: %s", path, code, msg ? msg : "?");
        /* Refused before it was proposed ("no leader", "too many
         * requests", ...); "server stopped" may come after the proposal. */
        if (rc == KP_EUNAVAILABLE && !(msg && strstr(msg, "server stopped"))) *sent = 0;
        json_decref(j);
        return rc;
    }
    *resp = j;
    return 0;
}

int etcd__call(etcd_store_t *es, const char *path, json_t *req, int kind, int timeout_ms,
               json_t **resp)
{
    *resp = NULL;
    char *body = json_dumps(req, JSON_COMPACT);
    if (!body) return KP_ENOMEM;
    size_t len = strlen(body);
    int rc = KP_EUNAVAILABLE;
    for (size_t tries = 0; tries < es->n_endpoints; tries++) {
        char *base;
        size_t idx = etcd__endpoint(es, &base);
        int sent = 0;
        rc = attempt(es, base, path, body, len, timeout_ms, resp, &sent);
        if (rc != KP_EUNAVAILABLE && rc != KP_ETIMEDOUT) break;
        etcd__endpoint_failed(es, idx);
        /* A write that may have been applied is not sent again: its outcome
         * is unknown, and the caller must hear so (never success). */
        if (kind == ETCD__WRITE && sent) {
            rc = KP_ETIMEDOUT;
            break;
        }
    }
    free(body);
    return rc;
}

/* ---- JSON helpers ---- */

json_t *etcd__b64(const void *p, size_t n)
{
    char *s = base64_encode(p, n);
    if (!s) return NULL;
    json_t *j = json_string_nocheck(s);
    free(s);
    return j;
}

int64_t etcd__int(const json_t *obj, const char *name)
{
    json_t *v = json_object_get(obj, name);
    if (json_is_integer(v)) return (int64_t)json_integer_value(v);
    if (json_is_string(v)) return strtoll(json_string_value(v), NULL, 10);
    return 0;
}

int64_t etcd__rev(const json_t *obj, const char *name)
{
    int64_t v = etcd__int(obj, name);
    return v ? v - ETCD__REV_OFFSET : 0;
}

int64_t etcd__header_rev(const json_t *resp)
{
    return etcd__int(json_object_get(resp, "header"), "revision");
}

int etcd__bytes(const json_t *obj, const char *name, char **out, size_t *len)
{
    json_t *v = json_object_get(obj, name);
    const char *s = json_is_string(v) ? json_string_value(v) : "";
    size_t n = json_is_string(v) ? json_string_length(v) : 0;
    size_t cap = n / 4 * 3 + 3;
    char *p = malloc(cap + 1);
    if (!p) return KP_ENOMEM;
    size_t got = 0;
    int rc = n ? base64_decode(s, n, p, cap, &got) : 0;
    if (rc) {
        free(p);
        return KP_ECORRUPT;
    }
    p[got] = '\0';
    *out = p;
    *len = got;
    return 0;
}

int etcd__prefix_end(const char *prefix, char *out, size_t *outlen)
{
    size_t n = strlen(prefix);
    memcpy(out, prefix, n);
    while (n > 0) {
        unsigned char c = (unsigned char)out[n - 1];
        if (c < 0xff) {
            out[n - 1] = (char)(c + 1);
            *outlen = n;
            return 0;
        }
        n--;
    }
    out[0] = '\0'; /* every key from the start key on */
    *outlen = 1;
    return 0;
}

void etcd__note_compact(etcd_store_t *es, int64_t rev)
{
    pthread_mutex_lock(&es->mu);
    if (rev > es->compact) es->compact = rev;
    pthread_mutex_unlock(&es->mu);
}
