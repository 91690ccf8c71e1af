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
} table[] = {
    {KP_EINVAL, 400, "BadRequest"},
    {KP_ENOTFOUND, 404, "NotFound"},
    {KP_EEXIST, 409, "AlreadyExists"},
    {KP_ECONFLICT, 409, "Conflict"},
    {KP_ECOMPACTED, 410, "Expired"},
    {KP_ETOOLARGE, 413, "RequestEntityTooLarge"},
    {KP_EBUSY, 429, "TooManyRequests"},
    {KP_EUNAVAILABLE, 503, "ServiceUnavailable"},
    {KP_ECLOSED, 503, "ServiceUnavailable"},
    {KP_ETIMEDOUT, 504, "Timeout"},
    {KP_EFUTURE, 504, "Timeout"},
    /* KP_EIO, KP_ENOSPC, KP_EPOISONED, KP_ECORRUPT, KP_ENOMEM: below */
};

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
    if (st && details) json_object_set(st, "details", details);
    return st;
}
