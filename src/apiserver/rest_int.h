/*
 * rest_int.h -- what rest.c, rest_write.c and rest_watch.c share.
 */
#ifndef KP_REST_INT_H
#define KP_REST_INT_H

#include <jansson.h>
#include <stdint.h>

#include "apiserver_int.h"

typedef struct sel_label sel_label_t;
typedef struct sel_field sel_field_t;

/* "plural[.group]", as Kubernetes names a resource in messages. */
const char *rest_qualified(const api_resource_t *res, char *buf, size_t n);
/* Status details {name, group, kind: plural}; caller owns the result. */
json_t *rest_details(const api_resource_t *res, const char *name);
int rest_not_found(api_req_t *r, const char *name);
/* Reply for a store error on object `name` (NotFound, AlreadyExists, Conflict...). */
int rest_store_error(api_req_t *r, int rc, const char *name);
/* Read and parse the object at `key`: 0 with *obj (caller owns) and *rev,
 * or KP_ENOTFOUND, KP_ECORRUPT (not JSON), a store error. Replies nothing. */
int rest_load(api_req_t *r, const char *key, json_t **obj, int64_t *rev);
/* The same for the route's object, replying on failure (then *obj is NULL). */
int rest_load_route(api_req_t *r, json_t **obj, int64_t *rev);
/* "" -> 0; a decimal -> its value; else KP_EINVAL. */
int rest_parse_rv(const char *s, int64_t *out);
/* Parse the body as a JSON object, or reply 400 and return with *out NULL. */
int rest_body_object(api_req_t *r, json_t **out);
/* The object's metadata (created if missing); borrowed from obj. */
json_t *rest_meta(json_t *obj);
/* metadata.<field> as a string, "" if absent; borrowed from obj. */
const char *rest_meta_str(const json_t *obj, const char *field);
void rest_set_rv(json_t *obj, int64_t rev);
/* Set resourceVersion and reply with the object (steals obj). */
int rest_reply_object(api_req_t *r, int code, json_t *obj, int64_t rev);
/* The watch cache of the request's resource. */
wc_t *rest_cache(api_req_t *r);
/* A query flag in Go's ParseBool spelling ("1", "t", "true", any case). */
int rest_query_bool(api_req_t *r, const char *name);

/* The labelSelector and fieldSelector of a request. */
typedef struct rest_filter {
    sel_label_t *labels;
    sel_field_t *fields;
} rest_filter_t;
/* Parse the request's selectors; on a bad one reply 400 (r->replied is set). */
int rest_selectors(api_req_t *r, rest_filter_t *f);
void rest_filter_free(rest_filter_t *f);
int rest_filter_match(const rest_filter_t *f, const json_t *obj);

/* rest_write.c */
/* Build the object to write from the current one: a new reference, or NULL
 * after replying. *precondition gets a resourceVersion the client required. */
typedef json_t *(*rest_make_fn)(api_req_t *r, const json_t *cur, void *arg,
                                int64_t *precondition);
/* Reply with the written (or unchanged) object; steals obj. */
typedef int (*rest_reply_fn)(api_req_t *r, json_t *obj, int64_t rev);
/* Read the route's object, make the new one, compare-and-swap; retried on a
 * conflict unless the client gave a resourceVersion. `reply` NULL: the object. */
int rest_update_loop(api_req_t *r, rest_make_fn make, void *arg, rest_reply_fn reply);
void rest_merge_patch(json_t *target, const json_t *patch);
/* The body of a PATCH as a JSON object, or a 415/400 reply (*patch NULL). */
int rest_patch_body(api_req_t *r, json_t **patch);
int rest_create(api_req_t *r);
int rest_update(api_req_t *r);
int rest_patch(api_req_t *r);
int rest_delete(api_req_t *r);
int rest_delete_collection(api_req_t *r);

/* rest_sub.c: scale and binding */
int rest_scale(api_req_t *r);
int rest_binding(api_req_t *r);

/* rest_watch.c */
int rest_watch(api_req_t *r);

#endif
