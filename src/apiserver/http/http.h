/*
 * http.h -- the server's HTTP side: limits, the server's state (struct
 * apiserver: its configuration, the HTTP engine and counters, and what the
 * rooms above hang on it through opaque pointers), one request (api_req_t)
 * and its replies (http.c).
 *
 * REQUEST FLOW
 *
 *   httpd loop thread (src/httpd) -> server.c on_headers: the Audit-ID and
 *     the audit log's record (audit/audit.h), authentication, authorization,
 *     the body's cap (nothing of a stranger's body is read)
 *   httpd worker -> server.c on_request
 *     -> rest/route.c: parse the path into an api_route_t (discovery, or a
 *        resource request: group/version/namespace/resource/name/subresource)
 *     -> docs/discovery.c | rest/rest.c: handle, reply once through
 *        api_reply_*()
 *
 * Every reply goes through api_reply_*(): exactly one per request (the audit
 * log notes it through apiserver.on_reply). Errors are
 * Kubernetes Status objects; encode/status.c holds the one table mapping KP_*
 * codes to HTTP codes and reasons.
 */
#ifndef KP_API_HTTP_H
#define KP_API_HTTP_H

#include <jansson.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "apiserver/apiserver.h"
#include "apiserver/http/authn.h"
#include "apiserver/schema/object.h"
#include "apiserver/schema/resource.h"
#include "apiserver/encode/status.h"
#include "lib/buf.h"

#define API_BODY_MAX (3u << 20) /* request body cap: 413 beyond (Kubernetes' MaxRequestBodyBytes) */
#define API_HEADER_MEMORY (64u << 10) /* a connection's request line + headers: 431 beyond */
#define API_JSON_DEPTH_MAX 100  /* nesting cap: 400 beyond */
/* A streaming reply's bytes handed to the engine and not yet sent (a watch
 * whose client stopped reading holds this much there, beside its queue in
 * the watch cache); pieces of at most a quarter of it go at once. */
#define API_STREAM_BUDGET (256u << 10)
/* A YAML body (apply) as JSON: at most this size (aliases expanded), of which
 * at most API_YAML_ALIAS_MAX from alias expansions; 400 beyond, as Kubernetes
 * answers any YAML it cannot decode. */
#define API_YAML_BYTES_MAX (2 * API_BODY_MAX)
#define API_YAML_ALIAS_MAX (1u << 20)

typedef struct httpd httpd_t;
typedef struct httpd_req httpd_req_t;
typedef struct wc wc_t;

typedef struct api_view api_view_t; /* rest/rest.h */
typedef struct api_metrics api_metrics_t; /* apiserver_int.h */
struct api_req;

/* What a request path names (route.c). */
typedef enum api_route_kind {
    API_ROUTE_NONE = 0,
    API_ROUTE_ROOT,          /* /: the paths served */
    API_ROUTE_HEALTH,        /* /healthz /livez /readyz */
    API_ROUTE_VERSION,       /* /version */
    API_ROUTE_API,           /* /api */
    API_ROUTE_APIS,          /* /apis */
    API_ROUTE_GROUP,         /* /apis/<g> */
    API_ROUTE_GROUP_VERSION, /* /api/v1, /apis/<g>/<v> */
    API_ROUTE_RESOURCE,      /* a resource request */
    API_ROUTE_OPENAPI,       /* /openapi/v2, /openapi/v3[/...] */
    API_ROUTE_METRICS,       /* /metrics */
    API_ROUTE_OIDC,          /* /.well-known/openid-configuration, /openid/v1/jwks */
    API_ROUTE_UI,            /* /ui, /ui/...: the dashboard (ui/ui.h) */
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

/* The server (put together by server.c). */
struct apiserver {
    apiserver_config_t cfg;
    char *admin_token;
    httpd_t *httpd;         /* the TCP listener (TLS) and cfg.unix_socket's */
    int lfd, ufd;           /* their sockets, bound by apiserver_start(), -1 once
                             * apiserver_serve() hands them to httpd */
    struct api_policy_run *policy; /* the bootstrap policy, being written from
                                    * apiserver_start() to apiserver_serve() */
    int port;
    pthread_mutex_t mu;
    size_t inflight;        /* read-only requests being served (watches not counted) */
    size_t inflight_mutating;
    size_t watches;         /* open over `listen` (cfg.max_watches) */
    size_t watches_local;   /* open over unix_socket (cfg.max_watches_local) */
    int stopping;
    wc_t **caches;          /* one per built-in resource, same index; NULL for one
                               with no objects in the store (strategy serve) */
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
    struct api_authz *authz;   /* the authorizers of cfg.authorization_mode (auth/authz.h) */
    struct api_sa *sa;         /* ServiceAccount tokens (auth/satoken.h) */
    struct api_ui *ui;         /* the dashboard's lab runner (ui/ui.h) */
    api_user_t admin_user;     /* the admin token's (API_ADMIN_USER in system:masters) */
    /* Validating admission of every create, set when the server is put
     * together (NamespaceLifecycle: kinds/strategy_namespace.c): 0 to go
     * on, else -1 after replying. NULL: none. */
    int (*admit_create)(struct api_req *r, const char *name);
    /* Validating admission of every create and update, subresources
     * included, after the kind's own (NodeRestriction:
     * kinds/admission_noderestriction.c): 0 to go on, else -1 after
     * replying. NULL: none. */
    int (*admit_write)(struct api_req *r, json_t *obj, const json_t *old, const char *name);
    /* A request from the network ends (its last reference released, its
     * reply complete): what the rooms above keep on it (metrics, the view,
     * the audit log). */
    void (*req_done)(struct api_req *r);
    /* The audit log (audit/audit.h), NULL when none; and what it notes of a
     * reply as it begins, for a request it records (r->audit): the code,
     * the content type, the Status or object replied (`doc`, NULL when the
     * reply came as bytes), the body's bytes (NULL for a stream: `stream`
     * 1). On the replying thread, before the reply is handed to the engine
     * (r's request and body are still there); quick. */
    struct api_audit *audit;
    void (*on_reply)(struct api_req *r, int code, const char *ctype, const json_t *doc,
                     const char *body, size_t len, int stream);
};

/* One request: lives from the first call of the access handler to the reply. */
/* An in-process request (api_internal()): its query and headers, and where
 * its reply goes instead of a connection. */
#define API_INTERNAL_QUERY_MAX 8
typedef struct api_internal {
    const char *names[API_INTERNAL_QUERY_MAX], *values[API_INTERNAL_QUERY_MAX];
    size_t nquery;
    const char *manager; /* the User-Agent (field manager) */
    const json_t *body;  /* a POST's or PUT's object (borrowed; the request
                          * decodes a copy), in place of body bytes */
    buf_t out;           /* the reply's body, when wanted */
    int drop_body;       /* the caller does not want it */
} api_internal_t;

typedef struct api_req {
    apiserver_t *srv;
    httpd_req_t *hr;             /* NULL for an in-process request */
    api_internal_t *internal;    /* only for an in-process request */
    const char *method;     /* (method_buf, or the in-process caller's) */
    const char *path;       /* %-decoded (path_buf, or the caller's) */
    char method_buf[16];    /* copies: the engine's request goes with its reply */
    char *path_buf;
    buf_t body;             /* the engine's bytes (borrowed: body_borrowed), or owned */
    int body_borrowed;
    int body_too_large;     /* its Content-Length passed API_BODY_MAX: 413 */
    int authz_later;        /* authorized on its worker, not at its headers */
    int streaming;          /* (atomic) a streaming reply runs (api_req_abort) */
    int refs;               /* (atomic) the handler's, and a stream's */
    int verb;               /* for the metrics: set once routed (server.c) */
    /* Who asks (authn.h): an in-process request is the server itself, in
     * system:masters. Its strings are borrowed from the server, the
     * connection or user_owned (freed with the request). */
    api_user_t user;
    void *user_owned;
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
    /* The write records no managedFields entry of its own: server-side
     * apply records them itself; a storage-level update (pods/binding, as
     * Kubernetes' BindingREST writes through GuaranteedUpdate) records none. */
    int fields_untracked;
    /* The audit log's record of this request (audit/audit.h): NULL when
     * nothing of it is logged. Its own, from on_headers to req_done. */
    struct api_audit_req *audit;
} api_req_t;

enum { API_VALIDATE_IGNORE = 0, API_VALIDATE_WARN = 1, API_VALIDATE_STRICT = 2 };

/* Add `Warning: 299 - "<text>"` to the reply (kubectl prints it). */
void api_warn(api_req_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Query parameter (NULL if absent); borrowed for the request's life. */
const char *api_query(api_req_t *r, const char *name);
/* Call fn for every query parameter in order, repeated names included
 * (value NULL for a bare name); stops early when fn returns nonzero. */
void api_query_each(api_req_t *r, int (*fn)(void *arg, const char *name, const char *value),
                    void *arg);
/* Header value (NULL if absent). */
const char *api_header(api_req_t *r, const char *name);
/* Header i in the order received (NULL past the last, and for an
 * in-process request): its value, its name in *name. */
const char *api_header_at(api_req_t *r, size_t i, const char **name);

/* Replies (http.c): each takes or copies its body, see there. */
int api_reply_json(api_req_t *r, int code, json_t *doc);            /* steals doc */
int api_reply_bytes(api_req_t *r, int code, const char *ctype, const char *body,
                    size_t len);                                    /* copies */
int api_reply_take(api_req_t *r, int code, const char *ctype, char *body,
                   size_t len); /* takes body (malloc'd): freed with free() when sent */
/* The same with more headers: `hdrs` is NULL or name, value pairs ending with
 * a NULL name (copied); a Cache-Control among them replaces the default
 * "no-cache, private". */
int api_reply_take_with(api_req_t *r, int code, const char *ctype, char *body, size_t len,
                        const char *const *hdrs);
/* A Kubernetes Status for `rc` (status.c maps the code): `fmt` is the message. */
int api_reply_error(api_req_t *r, int rc, const json_t *details, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A Status with an explicit HTTP code and reason. */
int api_reply_status(api_req_t *r, int code, const char *reason, const json_t *details,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* A streaming reply, the engine's pulled stream (httpd_stream_pull): `next`
 * is called on a worker for each piece into `out`: 0 with bytes sends them,
 * 0 with none (or an error) ends the stream, KP_EAGAIN with none parks it
 * (no thread held) until api_req_kick(), or until *wait_ms (comes as -1:
 * none) ms pass. `next` should not block. `free_fn` releases `arg` just
 * before the stream ends. */
int api_reply_stream(api_req_t *r, int (*next)(void *arg, buf_t *out, int *wait_ms), void *arg,
                     void (*free_fn)(void *arg));
/* The same with another Content-Type (a protobuf watch). */
int api_reply_stream_as(api_req_t *r, const char *ctype,
                        int (*next)(void *arg, buf_t *out, int *wait_ms), void *arg,
                        void (*free_fn)(void *arg));
/* A header every reply to r carries, the HTTP engine's own refusals
 * included (the Audit-ID); copied. On the engine's loop thread, before any
 * reply (server.c's on_headers); nothing for an in-process request.
 * Errors: KP_ENOMEM. */
int api_set_reply_header(api_req_t *r, const char *name, const char *value);
/* The request target as the client sent it (path and query, not decoded;
 * the path alone for an in-process request), and the client's IP address
 * ("" on the Unix socket and in process). Valid while the engine's request
 * is (until the reply is complete). */
const char *api_req_target(api_req_t *r);
const char *api_req_peer(api_req_t *r);
/* Whether r came in on the Unix socket (the in-process components). */
int api_req_local(api_req_t *r);
/* Whether r's client has gone away (closed, reset its stream). Any thread.
 * (A parked stream whose client goes ends without asking.) */
int api_req_gone(api_req_t *r);
/* r's parked stream has more: its `next` runs again. Any thread, until
 * `free_fn`; never blocks (a lock held briefly). */
void api_req_kick(api_req_t *r);
/* End r's stream if it waits for a client that does not read (its producer
 * gave up on it: a watcher whose queue filled). Any thread; never blocks
 * for long (a lock held briefly). */
void api_req_abort(api_req_t *r);

/* (http.c, for server.c) The release of a reference to r (the handler's, a
 * stream's): the last, once the reply is complete, ends r (req_done) and
 * frees it. */
void api_req_release(api_req_t *r);

/* (server.c) An in-process request through the normal handling of resource requests
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

#endif
