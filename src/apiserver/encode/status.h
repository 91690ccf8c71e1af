/*
 * status.h -- Kubernetes Status objects and the one table from KP_* codes to
 * HTTP code and reason (status.c). Pure, any thread.
 */
#ifndef KP_API_STATUS_H
#define KP_API_STATUS_H

#include <jansson.h>

int api_status_code(int rc, const char **reason);
/* The fixed message clients get for `rc` (Kubernetes' wording), or NULL: then
 * the caller's message is used (api_reply_error()). */
const char *api_status_message(int rc);
/* A Status in Kubernetes' JSON member order (see status.c): an empty reason or
 * message is left out; `details` (borrowed, NULL: none, or an empty one where
 * Kubernetes always sends one) is copied in StatusDetails' order. A new
 * reference, NULL if out of memory. */
json_t *api_status_new(int code, const char *reason, const char *message,
                       const json_t *details);

#endif
