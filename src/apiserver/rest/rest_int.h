/*
 * rest_int.h -- what rest.c, rest_write.c and rest_watch.c share.
 */
#ifndef KP_REST_INT_H
#define KP_REST_INT_H

#include <jansson.h>
#include <stdint.h>

#include "apiserver/http/http.h"
#include "lib/buf.h"

typedef struct sel_label sel_label_t;
typedef struct sel_field sel_field_t;

/* "plural[.group]", as Kubernetes names a resource in messages. */
const char *rest_qualified(const api_resource_t *res, char *buf, size_t n);
/* Status details {name, group, kind: plural}; caller owns the result. */
json_t *rest_details(const api_resource_t *res, const char *name);
int rest_not_found(api_req_t *r, const char *name);
/* Reply for a store error on object `name` (NotFound, AlreadyExists, Conflict...)
 * of the route's resource, or of `res`. */
int rest_store_error(api_req_t *r, int rc, const char *name);
int rest_store_error_for(api_req_t *r, const api_resource_t *res, int rc, const char *name);
/* 422 Invalid of object `name` of kind `kind` (group "" for core) listing
 * every cause (object.h's api_cause() makes them), as Kubernetes'
 * NewInvalid words it. Returns -1 after replying, 0 if there are no causes. */
int rest_reply_causes(api_req_t *r, const char *group, const char *kind, const char *name,
                      const json_t *causes);
/* Read and parse the object at `key`, as the route's resource serves it
 * (api_as_served): 0 with *obj (caller owns) and *rev, or KP_ENOTFOUND,
 * KP_ECORRUPT (not JSON), KP_ENOMEM, a store error. Replies nothing. */
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

/* Does the request ask for a meta.k8s.io/v1 Table (Accept: ...;as=Table;
 * g=meta.k8s.io;v=v1)? 1 with *include set (table.h), 0 if not, -1 after
 * replying 400 to a bad includeObject. */
int rest_wants_table(api_req_t *r, int *include);

/* Does the request ask for objects as metadata only (client-go's metadata
 * client, Kubernetes' garbage collector): Accept with a media range
 * `;as=PartialObjectMetadata;g=meta.k8s.io;v=v1` (v1beta1 too), or for a
 * list (`list` 1) `as=PartialObjectMetadataList`? 1 with the apiVersion to
 * answer in (`meta.k8s.io/v1`) in av, 0 if not. Such answers are JSON
 * whatever else the Accept header offers. */
int rest_wants_meta(api_req_t *r, int list, char *av, size_t avlen);

/* Append to b the PartialObjectMetadata of the object encoded in `json`:
 * its kind and apiVersion (`av`), its metadata member as it is. */
int rest_meta_append(buf_t *b, const char *json, size_t len, const char *av);

/* The labelSelector and fieldSelector of a request. */
typedef struct rest_filter {
    sel_label_t *labels;
    sel_field_t *fields;
} rest_filter_t;
/* Parse the request's selectors; on a bad one reply 400 (r->replied is set). */
int rest_selectors(api_req_t *r, rest_filter_t *f);
void rest_filter_free(rest_filter_t *f);
int rest_filter_match(const rest_filter_t *f, const json_t *obj);

/* A row of table `t` (api_table_add_row) for the cached version `o`, whose
 * embedded object carries o's managedFields (which o->doc lacks) unless
 * `include` is API_TABLE_NONE. Errors as api_table_add_row's. */
struct wc_obj;
int rest_table_add(json_t *t, const api_resource_t *res, const struct wc_obj *o, int include,
                   int64_t now_s);

/* rest_opts.c: the options every write takes from its query, into r
 * (dry_run, validation, manager). Returns -1 after replying 422 to a bad one. */
int rest_write_options(api_req_t *r);
/* The kind's schema node (facts, or a CRD's schema); NULL if none. */
const json_t *rest_kind_schema(api_req_t *r);
/* Drop the body's unknown fields and check value types per fieldValidation:
 * Strict -> 400 for unknown or duplicate fields, Warn -> Warning headers.
 * Not for the server's own writes (r->internal). Returns -1 after
 * replying. */
int rest_check_fields(api_req_t *r, json_t *obj);
/* The same for an update of base, the stored version (borrowed; NULL:
 * none): what obj keeps of it unchanged is not checked again. */
int rest_check_fields_since(api_req_t *r, json_t *obj, const json_t *base);
/* 1 if a and b are equal apart from metadata.managedFields. */
int rest_same_but_managed(const json_t *a, const json_t *b);
/* Record the write's field ownership in obj (managed.h); old NULL on create.
 * Returns -1 after replying. */
int rest_track_fields(api_req_t *r, const json_t *old, json_t *obj);

/* A DELETE's cascade (rest_delete_propagation): none given (the kind's
 * default), or the policy asked for. */
enum { REST_GC_DEFAULT = 0, REST_GC_ORPHAN, REST_GC_BACKGROUND, REST_GC_FOREGROUND };
/* propagationPolicy / orphanDependents of a DELETE from the query and
 * `body` (its DeleteOptions, may be NULL) into *policy. Returns -1 after
 * replying 422 to a bad one. */
int rest_delete_propagation(api_req_t *r, const json_t *body, int *policy);

/* What a DELETE asks for (metav1.DeleteOptions): preconditions, a grace
 * period (-1: the object's) and a cascade (REST_GC_*). Start from
 * REST_DELETE_OPTS_INIT. */
typedef struct rest_delete_opts {
    int64_t pre_rv;
    char pre_uid[64];
    long long grace;
    int policy;
} rest_delete_opts_t;
#define REST_DELETE_OPTS_INIT ((rest_delete_opts_t){.grace = -1})
/* dryRun of a DeleteOptions body (`dry`, a JSON array; NULL: absent): ["All"]
 * sets r->dry_run. Returns -1 after replying 422 to another value. */
int rest_delete_dry_run(api_req_t *r, const json_t *dry);

/* rest_write.c */
/* Add the DeleteOptions `opts` (a JSON object, borrowed; NULL: none) to *o
 * and r->dry_run. Returns -1 after replying 400/422 to a bad one. */
int rest_delete_options(api_req_t *r, const json_t *opts, rest_delete_opts_t *o);
/* Delete the route's object as a DELETE with options `o` does (a graceful
 * delete marks it, finalizers wait; r->dry_run: everything but the write),
 * replying to a failure as a DELETE does. On success `reply` replies (NULL:
 * a DELETE's reply, the object or a Status). */
int rest_delete_route(api_req_t *r, const rest_delete_opts_t *o, int (*reply)(api_req_t *r));
/* Does the resource keep metadata.generation (Kubernetes: workloads, CRDs
 * and custom resources; not pods, nodes, services, leases...)? */
int rest_tracks_generation(const api_resource_t *res);
/* kind and apiVersion must name the route's resource (filled in when
 * missing), and metadata must have Kubernetes' shapes. -1 after replying. */
int rest_check_type(api_req_t *r, json_t *obj);
int rest_check_metadata_types(api_req_t *r, const json_t *obj);
/* metadata.name of a PUT body must be the URL's. -1 after replying 400. */
int rest_check_url_name(api_req_t *r, const json_t *obj);
/* The object to store for an update of `cur` to `in` (both borrowed):
 * server-owned metadata kept, spec/status split, defaults, validation,
 * generation. A new reference, or NULL after replying. */
json_t *rest_merge_for_write(api_req_t *r, const json_t *cur, json_t *in);
/* The same, taking `in` (stolen on every path): it becomes the object to
 * store, edited in place, which spares the copy when the caller made `in`
 * for this write (a patched or applied object). */
json_t *rest_merge_for_write_owned(api_req_t *r, const json_t *cur, json_t *in);
/* Build the object to write from the current one: a new reference, or NULL
 * after replying. *precondition gets a resourceVersion the client required. */
typedef json_t *(*rest_make_fn)(api_req_t *r, const json_t *cur, void *arg,
                                int64_t *precondition);
/* Reply for the written (or unchanged) object `obj` at `rev`. `obj` is
 * borrowed and read-only; a resource stored in another version may pass it
 * in the stored one (the reply reads what both versions share). */
typedef int (*rest_reply_fn)(api_req_t *r, const json_t *obj, int64_t rev);
/* Read the route's object, make the new one, compare-and-swap; retried on a
 * conflict unless the client gave a resourceVersion. `reply` NULL: the object
 * (a written one as the watch cache encodes it). The written object goes to
 * the watch cache (wc_offer()), which reads it during the call only. */
int rest_update_loop(api_req_t *r, rest_make_fn make, void *arg, rest_reply_fn reply);
void rest_merge_patch(json_t *target, const json_t *patch);
/* The body of a PATCH as a JSON object, or a 415/400 reply (*patch NULL). */
int rest_patch_body(api_req_t *r, json_t **patch);
int rest_create(api_req_t *r);
/* Create `obj` (stolen: the parsed body, or an applied configuration) as the
 * route's resource: checks, defaults, validation, field ownership, store. The
 * stored object goes to the watch cache (wc_offer()): a caller that shares
 * values with it may only json_decref its own trees afterwards. */
int rest_create_object(api_req_t *r, json_t *obj);
int rest_update(api_req_t *r);
int rest_patch(api_req_t *r);
int rest_delete(api_req_t *r);
int rest_delete_collection(api_req_t *r);
/* rest_sub.c: the generic scale subresource */
int rest_scale(api_req_t *r);

/* rest_watch.c */
int rest_watch(api_req_t *r);

#endif
