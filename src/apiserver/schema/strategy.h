/*
 * strategy.h -- per-kind rules: defaulting, server-owned fields, validation.
 *
 * A registry line may point at a strategy; storage-only kinds have none. The
 * generic write, update and delete paths (rest_write.c) call its hooks;
 * generic code never names a kind. Validation appends Kubernetes field causes
 * to `causes` (a JSON array); any cause makes the write a 422 Invalid that
 * names every bad field.
 */
#ifndef KP_STRATEGY_H
#define KP_STRATEGY_H

#include <jansson.h>
#include <stdint.h>

#include "apiserver/schema/object.h"

struct apiserver;
struct api_req;

/* What a hook may use beyond the object: the server (its configuration and
 * allocators, apiserver_int.h) and the request's options. Borrowed for the
 * call. */
typedef struct api_ctx {
    struct apiserver *srv;
    int dry_run; /* dryRun=All: no side effect may outlive the request */
} api_ctx_t;

/* A subresource one kind serves beyond the generic status and scale (a
 * pod's log, a namespace's finalize): what discovery lists for it and the
 * handler the dispatch (rest.c) hands a request naming it. A strategy's
 * table ends with an entry whose name is NULL. */
typedef struct api_sub {
    const char *name;             /* the path segment: "log" */
    const char *group, *version;  /* discovery's group and version; NULL: none listed */
    const char *kind;             /* discovery's kind; NULL: the parent's */
    const char *const *verbs;     /* discovery's verbs, NULL-terminated */
    /* Serve the request (r->route.sub is `name`, r->route.name is set):
     * replies exactly once; returns 0 or what the api_reply_*() returned.
     * NULL: a status-like subresource (prepare set below) that the generic
     * GET, PUT and PATCH serve. */
    int (*handler)(struct api_req *r);
    /* A status-like subresource (certificatesigningrequests/approval): an
     * update keeps everything but metadata and status from `old`, as the
     * status subresource does, then prepare (its PrepareForUpdate) and
     * validate (its ValidateUpdate, appending causes) run instead of
     * prepare_status_update and validate_status. */
    void (*prepare)(json_t *obj, const json_t *old);
    void (*validate)(const json_t *obj, const json_t *old, json_t *causes);
} api_sub_t;

/* One kind's rules: Kubernetes' registry strategy for it
 * (pkg/registry/<group>/<kind>/strategy.go) plus the REST wrappers and
 * admission plugins that belong to one kind. Every member is optional (zero
 * or NULL: the generic behaviour). All hooks run on the request's thread,
 * on objects the request owns; none may keep a pointer past the call.
 *
 * Order on create:  prepare_create -> defaults -> admit -> admission
 *                   -> validate -> write_begin -> store write -> write_end
 * Order on update:  (server metadata and status kept) -> prepare_update
 *                   -> defaults -> admit -> admission -> validate
 *                   -> write_begin -> ...
 * On delete:        delete_refused; then finalizing / graceful decide whether
 *                   the object is marked (deletionTimestamp, delete_mark) or
 *                   removed (then deleted). */
typedef struct api_strategy {
    api_name_rule_t name_rule;
    /* metadata.generation: 1 on create, +1 on every spec change (the kinds
     * whose controllers report observedGeneration; others have none). */
    int generation;
    /* DefaultGarbageCollectionPolicy is Orphan (batch/v1 Jobs, kept for
     * compatibility); Background otherwise. */
    int default_orphan;
    /* ReturnDeletedObject: a DELETE that removes the object answers with it
     * instead of a Status (pods). */
    int delete_returns_object;

    /* PrepareForCreate: reset what a client may not set (status, server-owned
     * fields). */
    void (*prepare_create)(json_t *obj);
    /* PrepareForUpdate of the main resource: keep from `old` what only a
     * subresource or the server may change, beyond status (which the generic
     * path keeps for every kind with a status subresource). */
    void (*prepare_update)(json_t *obj, const json_t *old);
    void (*defaults)(json_t *obj);
    /* Mutating admission of the main resource, after defaulting (pods:
     * DefaultTolerationSeconds). `old` is NULL on create. */
    void (*admit)(const api_ctx_t *c, json_t *obj, const json_t *old);
    /* Admission that reads other objects and may refuse the write (the
     * admission plugins of one kind: Priority for pods and PriorityClasses),
     * after admit, on create and update of the main resource, dry runs
     * included: it may change obj; 0 to go on, or -1 after replying
     * (Kubernetes' admission refusals are 403 Forbidden). `name` is the
     * object's; `old` is NULL on create. */
    int (*admission)(struct api_req *r, json_t *obj, const json_t *old, const char *name);
    void (*validate)(const json_t *obj, const json_t *old, json_t *causes);

    /* Side effects outside the object, as Kubernetes' REST wrappers make them
     * (a Service's ClusterIP and NodePorts): write_begin runs after
     * validation and before the store write; it may change obj (fill in what
     * it allocated) and appends causes for a 422, or returns a KP_* error
     * (with one cause holding only a message: Kubernetes' InternalError,
     * 500, with that message); a failing write_begin leaves nothing behind.
     * On success *txn is its own (NULL: nothing to end), and write_end then
     * runs exactly once with committed 1 when the store took the write, 0
     * to undo (also for a dry run, or a write retried on a conflict). `old`
     * is NULL on create. */
    int (*write_begin)(const api_ctx_t *c, json_t *obj, const json_t *old, void **txn,
                       json_t *causes);
    void (*write_end)(const api_ctx_t *c, void *txn, int committed);
    /* The object left the store (after the delete was durable). */
    void (*deleted)(const api_ctx_t *c, const json_t *obj);

    /* Admission refusing a delete (NamespaceLifecycle's immortal
     * namespaces): the reason, answered as 403, or NULL. */
    const char *(*delete_refused)(const char *name);
    /* 1 while the kind's own finalization holds the object (a namespace's
     * spec.finalizers): a delete marks it, and an update that ends the
     * finalization removes it. */
    int (*finalizing)(const json_t *obj);
    /* The answer (409) to a delete of an object already finalizing; NULL:
     * such a delete is accepted and changes nothing. */
    const char *finalizing_conflict;
    /* CheckGracefulDelete: 1 when the delete must mark the object and wait
     * *grace seconds for someone to finish it (a bound pod's node); 0 to
     * remove it now. `requested` is DeleteOptions.gracePeriodSeconds, or -1
     * when not given. */
    int (*graceful)(const json_t *obj, long long requested, long long *grace);
    /* What marking for deletion changes besides deletionTimestamp (a
     * namespace's status.phase Terminating). */
    void (*delete_mark)(json_t *obj);

    /* A version served from another version's store keys (the row's
     * storage_group/storage_resource): to_storage converts an object of this
     * version to the stored one, from_storage back. Each consumes its
     * argument and returns a new object (NULL when out of memory); both are
     * pure (the watch cache calls from_storage on its own thread). */
    json_t *(*to_storage)(json_t *obj);
    json_t *(*from_storage)(json_t *obj);

    /* PrepareForUpdate of the status subresource, beyond what the generic
     * path does (spec and every member but status and metadata kept from
     * `old`; the server's metadata kept): what else a status write may not
     * change (a pod's ownerReferences, a Deployment's labels). */
    void (*prepare_status_update)(json_t *obj, const json_t *old);
    /* ValidateUpdate of the status subresource (after prepare_status_update
     * and the metadata checks): appends causes for a 422. */
    void (*validate_status)(const json_t *obj, const json_t *old, json_t *causes);

    /* The kind's own subresources (NULL: none). */
    const api_sub_t *subs;

    /* A resource with no objects of its own in the store (Kubernetes' REST
     * storage that is not a registry Store: the namespace-level bindings,
     * componentstatuses). When set, every request for the resource itself
     * comes here instead of the generic verbs, once the dispatch (rest.c)
     * checked that the row lists the verb asked for (else 405) and answered
     * the write options; subresources still go to `subs`. Replies exactly
     * once; returns 0 or what the api_reply_*() returned. */
    int (*serve)(struct api_req *r);
} api_strategy_t;

/* The subresource `name` of strategy `st` (may be NULL), or NULL. */
const api_sub_t *api_strategy_sub(const api_strategy_t *st, const char *name);
/* Whether resource `r` serves subresource `name`: the generic status or
 * scale its row names, else one of its strategy's own. */
struct api_resource;
int api_resource_serves_sub(const struct api_resource *r, const char *name);

#endif
