/*
 * rest.h -- what the generic REST room gives the rooms above it: the table
 * of served resources and its views (registry.c), routing (route.c), serving
 * a resource request (rest.c), and the loop of the server's own controllers
 * over a watch cache (ctl_loop.c).
 */
#ifndef KP_API_REST_H
#define KP_API_REST_H

#include <jansson.h>
#include <stddef.h>

#include "apiserver/http/http.h"
#include "apiserver/schema/resource.h"

/* An object of `res` (an api_resource_t *, as void * for wc_config_t.convert)
 * as read from the store (`stored`, consumed) made what is served: converted
 * from the version it is stored in, and a custom resource's schema defaults
 * applied (Kubernetes' storage decoder does both on every read). A new
 * object, NULL when out of memory. api_served_differs() says whether this
 * can change anything for `res` (else watch caches keep objects as stored).
 * Pure; any thread (registry.c). */
json_t *api_as_served(void *res, json_t *stored);
int api_served_differs(const api_resource_t *res);

/* The built-in table (registry.c); requests look resources up in a view. */
size_t api_registry_count(void);
const api_resource_t *api_registry_at(size_t i);
const api_resource_t *api_registry_find(const char *group, const char *version,
                                        const char *resource);

/* The path segment that scopes a request to a namespace
 * (".../<scope>/NS/R/..."), as the OpenAPI document's paths have it
 * (generated with the table). */
extern const char api_namespace_scope[];

/* ---- the served resources at one moment (registry.c) ----
 *
 * A view is the built-in table (indexes 0..api_registry_count()-1, same
 * order) followed by the resources of established CustomResourceDefinitions
 * (crd.c), each with its watch cache. A view is immutable and counted: a
 * request holds the view it started with until it ends, so every resource
 * and cache it found stays valid however CRDs change meanwhile. */
typedef struct api_dyn api_dyn_t; /* a run-time resource and its cache */
typedef struct wc_obj wc_obj_t;   /* watchcache.h */
typedef struct api_view {
    size_t count;
    const api_resource_t **res; /* [count] */
    wc_t **caches;              /* [count], same index; NULL: no objects stored */
    api_dyn_t **dyn;            /* the run-time entries (a reference each) */
    size_t dyn_count;
    int refs;                   /* atomic */
} api_view_t;

/* The current view, with a reference for the caller. */
api_view_t *api_view_get(struct apiserver *s);
/* Drop a reference (NULL: no-op); the last one frees the view and releases
 * its run-time entries. */
void api_view_put(api_view_t *v);
/* The view's resource for group/version/resource; *index (if not NULL) gets
 * its index. NULL if not served. */
const api_resource_t *api_view_find(const api_view_t *v, const char *group, const char *version,
                                    const char *resource, size_t *index);
/* The object (group, version, resource) ns/name as its watch cache has it
 * now (ns ignored for a cluster-scoped resource): *out holds a reference
 * (wc_obj_unref). Errors: KP_ENOTFOUND (no such object, or resource not
 * served). */
int api_view_cached(const api_view_t *v, const char *group, const char *version,
                    const char *resource, const char *ns, const char *name, const wc_obj_t **out);
/* Publish a view of the built-ins plus `dyn` (n entries; the view takes a
 * reference to each). Requests already running keep the old view.
 * Errors: KP_ENOMEM. */
int api_view_publish(struct apiserver *s, api_dyn_t *const *dyn, size_t n);

/* A run-time resource: `res` and everything its strings point into are
 * owned by the entry (`owner` is a JSON value they borrow from, released with
 * the entry). Opens the resource's watch cache. *out holds one reference. */
int api_dyn_new(struct apiserver *s, const api_resource_t *res, json_t *owner, api_dyn_t **out);
api_dyn_t *api_dyn_ref(api_dyn_t *d);
void api_dyn_unref(api_dyn_t *d); /* the last reference closes the cache */
/* Close the entry's cache now (server stop), whoever still holds it. */
void api_dyn_shutdown(api_dyn_t *d);
/* The entry is no longer served (its CRD was deleted or stopped serving the
 * version): end its open watches now; requests already in flight may still
 * read it until the last reference goes. */
void api_dyn_end(api_dyn_t *d);
const api_resource_t *api_dyn_resource(const api_dyn_t *d);

/* Parse `path` (without the query), finding resources in view `v`. Returns 0
 * with *rt filled, KP_ENOTFOUND for a path that names nothing. */
int api_route_parse(const api_view_t *v, const char *path, api_route_t *rt);

/* rest.c */
int api_serve_resource(api_req_t *r);

/* ctl_loop.c: the loop of the server's own controllers: a thread that calls
 * pass(arg) now, then after every change to `cache` (borrowed; it must
 * outlive the loop) and at least every resync_ms. api_loop_stop() ends it
 * (the pass running finishes first); NULL is a no-op. Errors: KP_ENOMEM,
 * wc_watch()'s. */
typedef struct api_loop api_loop_t;
int api_loop_start(wc_t *cache, int resync_ms, void (*pass)(void *arg), void *arg,
                   api_loop_t **out);
void api_loop_stop(api_loop_t *l);

#endif
