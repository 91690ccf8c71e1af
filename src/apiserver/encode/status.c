/*
 * status.c -- errors as Kubernetes Status objects, and the one table that
 * maps kplane's error codes to HTTP codes and Status reasons.
 *
 * A Status is encoded as apimachinery encodes metav1.Status: the members in
 * its struct order (kind, apiVersion, metadata, status, message, reason,
 * details, code), empty ones left out as its `omitempty` tags leave them
 * out, and details in StatusDetails' order (name, group, kind, uid, causes,
 * retryAfterSeconds; each cause: reason, message, field). Clients compare
 * the text, and some read details without checking that it is there
 * (kubectl debug reads details.name of a 404), so every failure whose
 * Kubernetes constructor sets details (NewNotFound, NewAlreadyExists,
 * NewConflict, NewForbidden, NewInvalid, NewMethodNotSupported,
 * NewInternalError, NewTimeoutError, NewTooManyRequests, and the generic
 * response an unknown path gets) carries a details object here too, if only
 * an empty one.
 */
#include <string.h>

#include "apiserver/encode/status.h"
#include "lib/err.h"

static const struct {
    int rc;
    int code;
    const char *reason;
    const char *message; /* the client's message, when Kubernetes has a fixed one */
} table[] = {
    {KP_EINVAL, 400, "BadRequest", NULL},
    {KP_ENOTFOUND, 404, "NotFound", NULL},
    {KP_EEXIST, 409, "AlreadyExists", NULL},
    {KP_ECONFLICT, 409, "Conflict", NULL},
    {KP_ECOMPACTED, 410, "Expired", NULL},
    {KP_ETOOLARGE, 413, "RequestEntityTooLarge", NULL},
    {KP_EBUSY, 429, "TooManyRequests", NULL},
    {KP_EUNAVAILABLE, 503, "ServiceUnavailable", NULL},
    {KP_ECLOSED, 503, "ServiceUnavailable", NULL},
    {KP_ETIMEDOUT, 504, "Timeout", NULL},
    {KP_EFUTURE, 504, "Timeout", NULL},
    /* The store is out of space (disk full, or the lmdb map): what
     * kube-apiserver answers when etcd is, which clients and people know: its
     * storage error unconverted, 500 with no reason (StatusReasonUnknown). */
    {KP_ENOSPC, 500, "", "etcdserver: mvcc: database space exceeded"},
    /* KP_EIO, KP_EPOISONED, KP_ECORRUPT, KP_ENOMEM: below */
};

const char *api_status_message(int rc)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i].rc == rc) return table[i].message;
    return NULL;
}

int api_status_code(int rc, const char **reason)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (table[i].rc == rc) {
            *reason = table[i].reason;
            return table[i].code;
        }
    }
    *reason = "InternalError";
    return 500;
}

/* The reasons whose Kubernetes constructors always set details. */
static int reason_has_details(const char *reason)
{
    static const char *const with[] = {
        "NotFound",       "AlreadyExists", "Conflict", "Forbidden",       "Invalid",
        "MethodNotAllowed", "InternalError", "Timeout", "ServerTimeout", "TooManyRequests",
        NULL,
    };
    for (const char *const *w = with; *w; w++)
        if (!strcmp(*w, reason)) return 1;
    return 0;
}

/* Copy src[key] into dst if it is a non-empty string (Go's omitempty). */
static int copy_string(json_t *dst, const json_t *src, const char *key)
{
    const char *s = json_string_value(json_object_get(src, key));
    if (!s || !*s) return 0;
    return json_object_set_new(dst, key, json_string(s));
}

/* A StatusCause in Go's member order; NULL if out of memory. */
static json_t *cause_json(const json_t *c)
{
    json_t *out = json_object();
    if (!out) return NULL;
    if (copy_string(out, c, "reason") || copy_string(out, c, "message") ||
        copy_string(out, c, "field")) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* StatusDetails in Go's member order from `d` (borrowed; may be NULL: an
 * empty one); NULL if out of memory. */
static json_t *details_json(const json_t *d)
{
    json_t *out = json_object();
    if (!out) return NULL;
    if (copy_string(out, d, "name") || copy_string(out, d, "group") ||
        copy_string(out, d, "kind") || copy_string(out, d, "uid"))
        goto fail;
    const json_t *causes = json_object_get(d, "causes");
    if (json_array_size(causes)) {
        json_t *list = json_array();
        if (!list || json_object_set_new(out, "causes", list)) goto fail;
        size_t i;
        const json_t *c;
        json_array_foreach(causes, i, c) {
            if (json_array_append_new(list, cause_json(c))) goto fail;
        }
    }
    json_int_t retry = json_integer_value(json_object_get(d, "retryAfterSeconds"));
    if (retry > 0 && json_object_set_new(out, "retryAfterSeconds", json_integer(retry)))
        goto fail;
    return out;
fail:
    json_decref(out);
    return NULL;
}

json_t *api_status_new(int code, const char *reason, const char *message, const json_t *details)
{
    json_t *st = json_object();
    if (!st) return NULL;
    if (json_object_set_new(st, "kind", json_string("Status")) ||
        json_object_set_new(st, "apiVersion", json_string("v1")) ||
        json_object_set_new(st, "metadata", json_object()) ||
        json_object_set_new(st, "status", json_string(code < 400 ? "Success" : "Failure")))
        goto fail;
    if (message && *message && json_object_set_new(st, "message", json_string(message)))
        goto fail;
    if (reason && *reason && json_object_set_new(st, "reason", json_string(reason))) goto fail;
    json_t *fallback = NULL;
    if (!details && code >= 400 && reason && !strcmp(reason, "InternalError")) {
        /* NewInternalError: the error again as the one cause */
        fallback = json_pack("{s:[{s:s}]}", "causes", "message", message ? message : "");
        if (!fallback) goto fail;
    }
    if (details || fallback || (code >= 400 && reason && reason_has_details(reason))) {
        json_t *d = details_json(details ? details : fallback);
        json_decref(fallback);
        if (json_object_set_new(st, "details", d)) goto fail;
    }
    if (json_object_set_new(st, "code", json_integer(code))) goto fail;
    return st;
fail:
    json_decref(st);
    return NULL;
}
