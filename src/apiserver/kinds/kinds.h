/*
 * kinds.h -- what the built-in kinds give the server as it starts and
 * stops: the Services' allocators and the `kubernetes` Service, the objects
 * every cluster starts with, and the APIService controller.
 */
#ifndef KP_API_KINDS_H
#define KP_API_KINDS_H

#include <jansson.h>

struct apiserver;
struct api_resource;

/* svc_bootstrap.c: the addresses' allocators, their repair at start (before
 * any request) and every few minutes after, and the `kubernetes` Service in
 * `default` with its Endpoints and EndpointSlice pointing at this server.
 * stop is safe if start never ran or failed. */
int api_services_start(struct apiserver *s);
void api_services_stop(struct apiserver *s);

/* strategy_namespace.c: the namespaces every cluster starts with (default,
 * kube-system, kube-public, kube-node-lease), created where missing, all at
 * once. Errors: the store's. */
int api_ensure_namespaces(struct apiserver *s);
/* bootstrap_objects.c: create the objects every cluster starts with (the
 * system PriorityClasses) where missing, all at once; never overwrites.
 * Errors: the store's. */
int api_ensure_objects(struct apiserver *s);
/* Create `obj` (borrowed; its uid and creationTimestamp are set here) as an
 * object of `res` straight in the store, unless one of its name is there
 * already: for the objects a start makes before anything reads the store.
 * Thread-safe. Errors: KP_EINVAL (no metadata), KP_ENOMEM, the store's. */
int api_boot_create(struct apiserver *s, const struct api_resource *res, json_t *obj);

/* apiservice.c: the APIService controller inside the API server (a no-op
 * when apiservices are not served). Errors: KP_ENOMEM. */
int api_apiservice_start(struct apiserver *s);
void api_apiservice_stop(struct apiserver *s); /* safe if never started */

#endif
