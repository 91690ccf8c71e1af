/*
 * common.c -- the request work every candidate server shares (common.h).
 */
#include "common.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char *status_reply(int code, const char *reason, const char *msg, size_t *out_len)
{
    json_t *s = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status", "apiVersion",
                          "v1", "metadata", "status", "Failure", "message", msg, "reason",
                          reason, "code", code);
    char *out = s ? json_dumps(s, JSON_COMPACT) : NULL;
    json_decref(s);
    if (out) *out_len = strlen(out);
    return out;
}

char *spike_create(const char *body, size_t len, int *status, size_t *out_len)
{
    static atomic_long rev = 1; /* the spike's only state: a counter */
    json_error_t jerr;
    json_t *obj = json_loadb(body, len, 0, &jerr);
    if (!json_is_object(obj)) {
        json_decref(obj);
        *status = 400;
        return status_reply(400, "BadRequest", obj ? "not an object" : jerr.text, out_len);
    }
    json_t *meta = json_object_get(obj, "metadata");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(obj, "metadata", meta);
    }
    long r = atomic_fetch_add(&rev, 1);
    char uid[40], rv[24], ts[32];
    snprintf(uid, sizeof uid, "00000000-0000-4000-8000-%012ld", r);
    snprintf(rv, sizeof rv, "%ld", r);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_object_set_new(meta, "uid", json_string(uid));
    json_object_set_new(meta, "resourceVersion", json_string(rv));
    json_object_set_new(meta, "creationTimestamp", json_string(ts));
    char *out = json_dumps(obj, JSON_COMPACT);
    json_decref(obj);
    if (!out) return NULL;
    *status = 201;
    *out_len = strlen(out);
    return out;
}

char *spike_event(int n, size_t *out_len)
{
    char *out = malloc(160);
    if (!out) return NULL;
    int k = snprintf(out, 160,
                     "{\"type\":\"ADDED\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\","
                     "\"metadata\":{\"name\":\"cm-%d\",\"resourceVersion\":\"%d\"}}}\n",
                     n, n + 1);
    *out_len = (size_t)k;
    return out;
}

const char *spike_not_found(size_t *out_len)
{
    static const char body[] = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
                               "\"status\":\"Failure\",\"message\":\"not found\","
                               "\"reason\":\"NotFound\",\"code\":404}";
    *out_len = sizeof body - 1;
    return body;
}
