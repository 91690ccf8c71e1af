/*
 * status.c -- errors as Kubernetes Status objects, and the one table that
 * maps kplane's error codes to HTTP codes and Status reasons.
 */
#include "apiserver_int.h"
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

json_t *api_status_new(int code, const char *reason, const char *message, json_t *details)
{
    json_t *st = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status",
                           "apiVersion", "v1", "metadata", "status",
                           code < 400 ? "Success" : "Failure", "message", message, "reason",
                           reason, "code", code);
    if (st && !*reason) json_object_del(st, "reason"); /* omitempty */
    if (st && details) json_object_set(st, "details", details);
    return st;
}
