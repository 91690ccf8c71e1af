/*
 * apiserver_int.h -- what the API server's files share. Not for other components.
 *
 * REQUEST FLOW
 *
 *   libmicrohttpd thread -> http.c: collect headers and body (capped), authn
 *     -> route.c: parse the path into an api_route_t (discovery, or a resource
 *        request: group/version/namespace/resource/name/subresource)
 *     -> discovery.c | rest.c: handle, reply once through api_reply_*()
 *
 * Every reply goes through api_reply_*(): exactly one per request. Errors are
 * Kubernetes Status objects; status.c holds the one table mapping KP_* codes
 * to HTTP codes and reasons.
 */
#ifndef KP_APISERVER_INT_H
#define KP_APISERVER_INT_H

#include <jansson.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "apiserver/apiserver.h"
#include "apiserver/schema/object.h"
#include "apiserver/schema/resource.h"
#include "apiserver/encode/status.h"
#include "lib/buf.h"

#define API_BODY_MAX (3u << 20) /* request body cap: 413 beyond (Kubernetes' MaxRequestBodyBytes) */
#define API_HEADER_MEMORY (64u << 10) /* a connection's request line + headers: 431 beyond */
#define API_JSON_DEPTH_MAX 100  /* nesting cap: 400 beyond */
/* A YAML body (apply) as JSON: at most this size (aliases expanded), of which
 * at most API_YAML_ALIAS_MAX from alias expansions; 400 beyond, as Kubernetes
 * answers any YAML it cannot decode. */
#define API_YAML_BYTES_MAX (2 * API_BODY_MAX)
#define API_YAML_ALIAS_MAX (1u << 20)

struct MHD_Connection;
struct MHD_Daemon;
enum MHD_ConnectionNotificationCode;
typedef struct wc wc_t;

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

/* ---- the served resources at one moment (registry.c) ----
 *
 * A view is the built-in table (indexes 0..api_registry_count()-1, same
 * order) followed by the resources of established CustomResourceDefinitions
 * (crd.c), each with its watch cache. A view is immutable and counted: a
 * request holds the view it started with until it ends, so every resource
 * and cache it found stays valid however CRDs change meanwhile. */
typedef struct api_dyn api_dyn_t; /* a run-time resource and its cache */
typedef struct api_view {
    size_t count;
    const api_resource_t **res; /* [count] */
    wc_t **caches;              /* [count], same index */
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

/* What a request path names (route.c). */
typedef enum api_route_kind {
    API_ROUTE_NONE = 0,
    API_ROUTE_ROOT,       /* /: the paths served */
    API_ROUTE_HEALTH,     /* /healthz /livez /readyz */
    API_ROUTE_VERSION,    /* /version */
    API_ROUTE_API,        /* /api */
    API_ROUTE_APIS,       /* /apis */
    API_ROUTE_GROUP,      /* /apis/<g> */
    API_ROUTE_GROUP_VERSION, /* /api/v1, /apis/<g>/<v> */
    API_ROUTE_RESOURCE,   /* a resource request */
    API_ROUTE_OPENAPI,    /* /openapi/v2, /openapi/v3[/...] */
    API_ROUTE_METRICS,    /* /metrics */
} api_route_kind_t;

typedef struct api_route {
    api_route_kind_t kind;
    char group[64];
    char version[32];
    char ns[64];          /* "" when not namespaced or all namespaces */
    char resource[64];
    char name[API_NAME_MAX + 1]; /* "" for collections */
    char sub[32];         /* subresource, "" if none */
    const api_resource_t *res; /* for API_ROUTE_RESOURCE; NULL if unknown */
    size_t index;         /* res's index in the view */
} api_route_t;

/* Parse `path` (without the query), finding resources in view `v`. Returns 0
 * with *rt filled, KP_ENOTFOUND for a path that names nothing. */
int api_route_parse(const api_view_t *v, const char *path, api_route_t *rt);

/* metrics.c: request counters and latency histograms for /metrics. */
enum {
    API_VERB_GET, API_VERB_LIST, API_VERB_WATCH, API_VERB_CREATE, API_VERB_UPDATE,
    API_VERB_PATCH, API_VERB_DELETE, API_VERB_DELETECOLLECTION, API_VERB_OTHER,
    API_VERB_COUNT
};
#define API_RES_SLOTS 96    /* registry entries, the last slot for everything else */
#define API_CODE_COUNT 17   /* the codes metrics.c names, and "other" */
#define API_BUCKET_COUNT 11 /* latency histogram bounds */
typedef struct api_metrics api_metrics_t;
api_metrics_t *api_metrics_new(void);
void api_metrics_free(api_metrics_t *m);
struct api_req;
int api_verb_of(const struct api_req *r);
void api_metrics_record(api_metrics_t *m, const struct api_req *r, int verb, int code,
                        double seconds);
int api_serve_metrics(struct api_req *r);

/* The TCP listener's front door (http_conn.c: the rules are there). */
typedef struct api_conns api_conns_t;
typedef struct api_conns_config {
    int listen_fd;           /* listening, non-blocking; owned from api_conns_new on */
    int tls;                 /* the listener speaks TLS */
    size_t max_connections;  /* all open connections */
    size_t max_unproven;     /* handed to libmicrohttpd, not yet authenticated */
    int header_timeout_s;    /* from accept to the first authenticated request */
} api_conns_config_t;
typedef struct api_conns_stats {
    size_t open, gated, unproven;
    uint64_t overflow_closed; /* closed for a newer connection (a cap) */
    uint64_t timeout_closed;  /* closed at the header timeout */
    uint64_t refused;         /* closed at accept: every slot authenticated */
} api_conns_stats_t;
/* Create the front door (takes cfg->listen_fd, also on failure). Errors:
 * KP_EINVAL, KP_EIO, KP_ENOMEM. */
int api_conns_new(const api_conns_config_t *cfg, api_conns_t **out);
/* Start accepting; ready connections go to `daemon` (MHD_USE_NO_LISTEN_SOCKET,
 * notifying api_conns_notify with cs). Errors: KP_ENOMEM. */
int api_conns_start(api_conns_t *cs, struct MHD_Daemon *daemon);
/* Stop accepting and close the gated connections (before MHD_stop_daemon). */
void api_conns_stop(api_conns_t *cs);
/* After the daemon has stopped. NULL: no-op. */
void api_conns_free(api_conns_t *cs);
/* MHD_OPTION_NOTIFY_CONNECTION's callback (cls: the api_conns_t). */
void api_conns_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                      enum MHD_ConnectionNotificationCode toe);
/* A request on conn authenticated: it is proven. NULL cs: no-op. */
void api_conns_prove(api_conns_t *cs, struct MHD_Connection *conn);
void api_conns_stats(api_conns_t *cs, api_conns_stats_t *out);

/* The server (http.c). */
struct apiserver {
    apiserver_config_t cfg;
    char *admin_token;
    struct MHD_Daemon *daemon;
    struct MHD_Daemon *unix_daemon; /* cfg.unix_socket's, or NULL */
    int port;
    api_conns_t *conns;     /* the TCP listener's unproven connections */
    pthread_mutex_t mu;
    size_t inflight;        /* read-only requests being served (watches not counted) */
    size_t inflight_mutating;
    size_t watches;         /* open over `listen` (cfg.max_watches) */
    size_t watches_local;   /* open over unix_socket (cfg.max_watches_local) */
    int stopping;
    wc_t **caches;          /* one per built-in resource, same index */
    api_view_t *view;       /* the current view (guarded by mu), a reference */
    struct crd_ctl *crd;    /* the CRD controller (crd.c) */
    struct as_ctl *apiservices; /* the APIService controller (apiservice.c) */
    pthread_mutex_t metrics_mu; /* held while a source below is used */
    int (*metrics_fn)(void *arg, char **text);
    void *metrics_arg;
    int (*component_fn)(void *arg, const char *name); /* apiserver_set_component_probe */
    void *component_arg;
    api_metrics_t *metrics;
    struct api_schema *schema; /* the API's type facts (schema.h), immutable */
    struct api_alloc *alloc;   /* Services' ClusterIPs and NodePorts (alloc.h) */
    /* Validating admission of every create, set when the server is put
     * together (NamespaceLifecycle: kinds/strategy_namespace.c): 0 to go
     * on, else -1 after replying. NULL: none. */
    int (*admit_create)(struct api_req *r, const char *name);
};

/* One request: lives from the first call of the access handler to the reply. */
/* An in-process request (api_internal()): its query and headers, and where
 * its reply goes instead of a connection. */
#define API_INTERNAL_QUERY_MAX 8
typedef struct api_internal {
    const char *names[API_INTERNAL_QUERY_MAX], *values[API_INTERNAL_QUERY_MAX];
    size_t nquery;
    const char *manager; /* the User-Agent (field manager) */
    buf_t out;           /* the reply's body */
} api_internal_t;

typedef struct api_req {
    apiserver_t *srv;
    struct MHD_Connection *conn; /* NULL for an in-process request */
    api_internal_t *internal;    /* only for an in-process request */
    const char *method;     /* borrowed from libmicrohttpd */
    const char *path;
    buf_t body;
    int body_too_large;
    int authenticated;      /* a valid bearer token came with the headers */
    int replied;
    int code;               /* HTTP status of the reply */
    int64_t start_ns;       /* monotonic, for the latency histogram */
    api_route_t route;
    api_view_t *view;       /* the served resources for this request (a reference) */
    json_t *warnings;       /* Warning header texts (strings), NULL if none */
    char dup_field[128];    /* a key the JSON body repeats, "" if none */
    /* Write options from the query (rest_write_options()). */
    int dry_run;            /* dryRun=All: everything but the store write */
    int validation;         /* fieldValidation: API_VALIDATE_* */
    char manager[129];      /* fieldManager, else the User-Agent's product */
    int applying;           /* server-side apply: managedFields are done */
} api_req_t;

enum { API_VALIDATE_IGNORE = 0, API_VALIDATE_WARN = 1, API_VALIDATE_STRICT = 2 };

/* An in-process request through the normal handling of resource requests
 * (routing, strategies, admission, managedFields, the watch cache, the
 * store), without HTTP or authentication: for the API server's own
 * controllers, which must write as clients do. `path` may carry a query
 * ("?propagationPolicy=Background": names and values taken as they are, at
 * most API_INTERNAL_QUERY_MAX, no %-decoding); `body` (borrowed, NULL: none)
 * is sent as JSON; `manager` names the field manager. *code gets the HTTP
 * code (0 if nothing answered), *out (may be NULL) the reply parsed (a new
 * reference, NULL if not JSON). Watches and streams are not for it (500).
 * Any thread but a request's. Errors: KP_ENOMEM, KP_EINVAL (path too long or
 * too many query parameters). */
int api_internal(apiserver_t *s, const char *method, const char *path, const json_t *body,
                 const char *manager, int *code, json_t **out);

/* Add `Warning: 299 - "<text>"` to the reply (kubectl prints it). */
void api_warn(api_req_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Query parameter (NULL if absent); borrowed for the request's life. */
const char *api_query(api_req_t *r, const char *name);
/* Header value (NULL if absent). */
const char *api_header(api_req_t *r, const char *name);

/* Replies (http.c): each takes or copies its body, see there. */
int api_reply_json(api_req_t *r, int code, json_t *doc);            /* steals doc */
int api_reply_bytes(api_req_t *r, int code, const char *ctype, const char *body,
                    size_t len);                                    /* copies */
int api_reply_take(api_req_t *r, int code, const char *ctype, char *body,
                   size_t len); /* takes body (malloc'd): freed with free() when sent */
/* A Kubernetes Status for `rc` (status.c maps the code): `fmt` is the message. */
int api_reply_error(api_req_t *r, int rc, const json_t *details, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A Status with an explicit HTTP code and reason. */
int api_reply_status(api_req_t *r, int code, const char *reason, const json_t *details,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* A chunked streaming reply: `next` is called (on the connection's thread, may
 * block) to produce the next piece into `out`; returning 0 with out->len == 0
 * ends the stream. `free_fn` releases `arg` when the connection is done. */
int api_reply_stream(api_req_t *r, int (*next)(void *arg, buf_t *out), void *arg,
                     void (*free_fn)(void *arg));
/* The same with another Content-Type (a protobuf watch). */
int api_reply_stream_as(api_req_t *r, const char *ctype, int (*next)(void *arg, buf_t *out),
                        void *arg, void (*free_fn)(void *arg));
/* Whether r came in on the Unix socket (the in-process components). */
int api_req_local(api_req_t *r);
/* The socket of r's connection, or -1. It stays open at least until the
 * free_fn of r's stream reply has returned: until then, shutdown() of it
 * from any thread closes a stream whose client stopped reading (its thread
 * waits in libmicrohttpd for the socket then, where no reader runs). */
int api_req_socket(api_req_t *r);


/* ctl_loop.c: the loop of the server's own controllers: a thread that calls
 * pass(arg) now, then after every change to `cache` (borrowed; it must
 * outlive the loop) and at least every resync_ms. api_loop_stop() ends it
 * (the pass running finishes first); NULL is a no-op. Errors: KP_ENOMEM,
 * wc_watch()'s. */
typedef struct api_loop api_loop_t;
int api_loop_start(wc_t *cache, int resync_ms, void (*pass)(void *arg), void *arg,
                   api_loop_t **out);
void api_loop_stop(api_loop_t *l);

/* crd.c: the CustomResourceDefinition controller inside the API server. */
int api_crd_start(struct apiserver *s);
void api_crd_stop(struct apiserver *s); /* safe if never started */

/* apiservice.c: the APIService controller inside the API server (a no-op
 * when apiservices are not served). Errors: KP_ENOMEM. */
int api_apiservice_start(struct apiserver *s);
void api_apiservice_stop(struct apiserver *s); /* safe if never started */

/* The finalizer a CRD carries until its objects are deleted (strategy_crd.c
 * adds it on create, crd.c removes it). */
#define API_CRD_FINALIZER "customresourcecleanup.apiextensions.k8s.io"

/* strategy_crd.c: rules on CRD objects that the controller (crd.c) shares.
 * Pure functions, safe from any thread. */
/* Is `group` k8s.io, kubernetes.io or under either (the groups whose CRDs
 * need the api-approved.kubernetes.io annotation)? */
int api_crd_protected_group(const char *group);
typedef enum api_crd_approval {
    API_CRD_APPROVAL_INVALID, /* neither a URL nor "unapproved..." */
    API_CRD_APPROVED,         /* a URL with a scheme and a host */
    API_CRD_APPROVAL_BYPASSED, /* starts with "unapproved" */
    API_CRD_APPROVAL_MISSING, /* absent or empty */
} api_crd_approval_t;
/* The state of a CRD's api-approved.kubernetes.io annotation; *value (if
 * not NULL) gets the annotation, borrowed from crd ("" if absent). */
api_crd_approval_t api_crd_approval_state(const json_t *crd, const char **value);
/* The KubernetesAPIApprovalPolicyConformant condition a CRD should carry
 * (type, status, reason, message; a new reference), or NULL when its group
 * is not protected (or out of memory). */
json_t *api_crd_approval_condition(const json_t *crd);
/* The built-in resource whose store keys a CRD of this group and plural would
 * share (either key prefix a prefix of the other), or NULL if none. */
const api_resource_t *api_crd_builtin_clash(const char *group, const char *plural);

/* svc_bootstrap.c: the addresses' allocators, their repair at start (before
 * any request) and every few minutes after, and the `kubernetes` Service in
 * `default` with its Endpoints and EndpointSlice pointing at this server.
 * stop is safe if start never ran or failed. */
int api_services_start(struct apiserver *s);
void api_services_stop(struct apiserver *s);

/* discovery.c */
int api_serve_discovery(api_req_t *r);
/* /livez, /readyz, /healthz and their checks (health.c). */
int api_serve_health(api_req_t *r);

/* rest.c */
int api_serve_resource(api_req_t *r);
int api_ensure_namespaces(apiserver_t *s);
/* bootstrap_objects.c: create the objects every cluster starts with (the
 * system PriorityClasses) where missing; never overwrites. Errors: the
 * store's. */
int api_ensure_objects(apiserver_t *s);


#endif
