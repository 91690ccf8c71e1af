/*
 * client.h -- kplane's controller SDK: everything a control loop needs to
 * talk to a Kubernetes API server (kplane's or any other), in the shape of
 * client-go. A user writes a controller against sdk.h, which includes:
 *
 *   client.h   (this file) the client, requests and watches
 *   informer.h, queue.h, leader.h, events.h
 *
 *   kc_client_t    an API client: keep-alive HTTPS connections (libcurl),
 *                  bearer token or client certificate, JSON in and out,
 *                  an optional client-side rate limit (off by default:
 *                  --kube-api-qps/-burst),
 *                  failover between several API servers (kc_config_t).
 *   kc_watch_t     one watch stream: newline-delimited events.
 *   kc_informer_t  list, then watch from the list's resourceVersion; relist
 *                  on 410; a local cache with indexes; handlers for adds,
 *                  updates and deletes; periodic resync from the cache.
 *   kc_queue_t     the work queue: a key is queued once, handed to one
 *                  worker at a time, retried with per-item exponential
 *                  backoff under an overall rate limit; delayed adds.
 *   kc_leader_t    leader election on a coordination.k8s.io/v1 Lease.
 *   kc_recorder_t  core/v1 Events, aggregated as Kubernetes does.
 *
 * OWNERSHIP. Objects are jansson values. Objects a call returns through an
 * out-parameter are the caller's (one reference; json_decref). Objects handed
 * to handlers and returned by cache reads are SHARED and READ-ONLY: never
 * modify one (copy it with json_deep_copy first); a handler's arguments are
 * borrowed for the call, a cache read's results hold a reference each.
 * Strings passed in are copied when kept.
 *
 * THREADS. A kc_client_t may be used from any number of threads. A watch is
 * used by one thread at a time (kc_watch_cancel excepted). Informer handlers
 * run on the informer's own thread, one at a time, in event order: they
 * should only enqueue keys. Cache reads and queue calls are safe anywhere.
 *
 * ERRORS are KP_* codes (lib/err.h). API answers map as:
 *   404 -> KP_ENOTFOUND   409 AlreadyExists -> KP_EEXIST
 *   409 Conflict -> KP_ECONFLICT   410 -> KP_ECOMPACTED
 *   400, 422 -> KP_EINVAL  413 -> KP_ETOOLARGE  429 -> KP_EBUSY
 *   401, 403 -> KP_EINVAL (with the message)   5xx, no connection -> KP_EUNAVAILABLE
 *   request timeout -> KP_ETIMEDOUT
 * A call that fails with an API error may return the Status in *status
 * (where offered) for its message.
 */
#ifndef KP_CLIENT_H
#define KP_CLIENT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* ---- configuration and the client ---- */

typedef struct kc_config {
    const char *server;     /* "https://127.0.0.1:6443" */
    /* Several API servers of one cluster (same CA and credentials), a
     * NULL-terminated list of at most 16; when non-NULL and non-empty it
     * replaces `server`. FAILOVER: requests go to one server at a time;
     * when a connection to it fails (refused, reset, TLS handshake failed,
     * or a timeout before any byte of the answer) the client moves on to
     * the next one, round robin, and sends the request again there if it
     * is a GET (get, list, watch) or certainly was not sent (no
     * connection); otherwise the call fails with KP_EUNAVAILABLE and the
     * next call goes to the next server. Each server is tried once per
     * call. A broken watch ends with KP_EUNAVAILABLE as ever; informers
     * re-watch (and relist when the resourceVersion is gone), which opens
     * on the next server. kplane's components take the list as
     * --server URL[,URL...]. */
    const char *const *servers;
    const char *token;      /* bearer token, NULL for none */
    const char *ca_pem;     /* PEM of the CA to trust; NULL: the system's */
    /* A client certificate (x509 authentication: user = its CN, groups =
     * its O values) and its private key, PEM; both or neither (NULL). With
     * a token as well, both are sent. */
    const char *cert_pem;
    const char *key_pem;
    const char *user_agent; /* NULL: "kplane" */
    double qps;             /* client-side rate limit; 0: none (the default) */
    int burst;              /* bucket size when qps > 0 */
    int timeout_ms;         /* per request (not watches); 0: 30000 */
    int insecure;           /* 1: do not verify the server's certificate
                               (kubeconfig insecure-skip-tls-verify) */
    /* Connect to this Unix socket instead of the servers' host and port;
     * NULL: no. The URL still gives the scheme, the Host header and the
     * path: "http://localhost" with an API server's plain-HTTP socket
     * (apiserver_config_t.unix_socket), as kplane server's components use
     * it. At most 107 bytes. */
    const char *unix_socket;
} kc_config_t;

/* Read a kubeconfig (current context; the server, certificate-authority
 * [-data] and insecure-skip-tls-verify of its cluster; token or tokenFile,
 * and client-certificate[-data] with client-key[-data], of its user) into
 * *cfg. The strings it points to live in *storage, which the caller frees
 * with json_decref(). path NULL or "": the first file of $KUBECONFIG, else
 * ~/.kube/config. File paths are relative to the kubeconfig's directory;
 * a certificate without its key (or the reverse) is refused, and so are
 * exec and auth-provider plugins; a context without a user is anonymous.
 * The other fields of *cfg are zero. Errors: KP_ENOTFOUND (no file), KP_EIO
 * (unreadable), KP_EINVAL (not a kubeconfig we can use: the message in
 * err), KP_ENOMEM. */
int kc_config_load(const char *path, kc_config_t *cfg, json_t **storage, char *err,
                   size_t errlen);

typedef struct kc_client kc_client_t;

/* *out is the caller's; free with kc_client_free() after every watch and
 * informer on it is freed. Calls curl_global_init(), which is thread-safe
 * in libcurl >= 7.84 (else make the first client before other threads use
 * libcurl). Errors: KP_EINVAL (a server URL that is not http(s)://host, a
 * token with a line break, qps or timeout_ms < 0, cert_pem without key_pem
 * or the reverse), KP_ENOMEM. A certificate that is no PEM, or does not
 * match its key, fails each request (KP_EUNAVAILABLE). */
int kc_client_new(const kc_config_t *cfg, kc_client_t **out);
void kc_client_free(kc_client_t *c);

/* libcurl's global state and its TLS library's, which the first client
 * would make (OpenSSL's initialisation: 0.5-1 ms of CPU). A program that will
 * make clients may take a reference early, on a thread beside other start
 * work (kplane server does), and drops it with kc_library_release() once
 * its clients exist or it gives up; each client holds one of its own.
 * Thread-safe as kc_client_new(). Errors: KP_ENOMEM. */
int kc_library_hold(void);
void kc_library_release(void);

/* A metadata client (client-go's k8s.io/client-go/metadata) with c's
 * configuration: its kc_get(), kc_list(), kc_watch_open() and informers
 * ask for PartialObjectMetadata (Accept ...;as=PartialObjectMetadata[List];
 * g=meta.k8s.io;v=v1) and get objects of kind PartialObjectMetadata: the
 * apiVersion, kind and metadata only, whatever the resource. Kubernetes'
 * garbage collector watches every resource so, holding no object's
 * contents. Other calls are as c's. Free it as any client.
 * Errors: KP_ENOMEM. */
int kc_client_metadata(const kc_client_t *c, kc_client_t **out);

/* A client with c's configuration (servers, trust, user agent, limits) but
 * its own identity: the bearer token `token`, and none of c's credentials.
 * Errors: KP_EINVAL, KP_ENOMEM. */
int kc_client_with_token(const kc_client_t *c, const char *token, kc_client_t **out);
/* The same with its own User-Agent too (NULL: c's), which the API server
 * takes as the field manager of its writes: components that share a
 * process tell apart in managedFields. Errors: KP_EINVAL, KP_ENOMEM. */
int kc_client_as(const kc_client_t *c, const char *token, const char *user_agent,
                 kc_client_t **out);

/* A bearer token that expires and is made again (client-go's cached token
 * source, as kube-controller-manager's controllers get theirs): `fetch`
 * makes one, *token malloc'd (the client's then), and sets *expires_s, when
 * it expires (Unix seconds). It is called once by kc_client_with_token_source()
 * and then by the first request once 80% of the token's lifetime has
 * passed (kube-controller-manager's 20% leeway), while the client's other
 * requests wait for it; a failed fetch keeps the token it has (even
 * expired: the server's 401 tells) and the next request a second later or
 * more tries again. Returns 0 or a KP_* code. It may use another client,
 * never this one or a client made from it. */
typedef int (*kc_token_fetch_fn)(void *arg, char **token, int64_t *expires_s);
/* A client with c's configuration but its own identity: the tokens `fetch`
 * makes (its first one now: its error is returned). `arg` must outlive the
 * client and every metadata client made from it, which share its tokens.
 * Errors: the first fetch's, KP_EINVAL (a token with a line break),
 * KP_ENOMEM. */
int kc_client_with_token_source(const kc_client_t *c, kc_token_fetch_fn fetch, void *arg,
                                kc_client_t **out);

/* Requests sent and errors seen so far (for metrics and benchmarks). */
typedef struct kc_client_stats {
    uint64_t requests, errors, watches;
} kc_client_stats_t;
void kc_client_stats(const kc_client_t *c, kc_client_stats_t *out);

/* ---- resources ---- */

/* A resource, as a URL names it. */
typedef struct kc_resource {
    const char *group;    /* "" for core */
    const char *version;
    const char *resource; /* plural */
    const char *kind;
    int namespaced;
} kc_resource_t;

extern const kc_resource_t kc_pods, kc_nodes, kc_namespaces, kc_events, kc_services, kc_endpoints,
    kc_configmaps, kc_secrets, kc_deployments, kc_replicasets, kc_statefulsets, kc_daemonsets,
    kc_controllerrevisions, kc_jobs, kc_leases, kc_replicationcontrollers, kc_poddisruptionbudgets,
    kc_serviceaccounts, kc_crds, kc_clusterroles;

/* The kc_* constant above for (group, version, resource), or NULL: lets a
 * component that found a resource through discovery share the informer
 * other components opened on the constant. Thread-safe. */
const kc_resource_t *kc_resource_builtin(const char *group, const char *version,
                                         const char *resource);

/* ---- requests ----
 *
 * For a namespaced resource, ns NULL or "" means the object's
 * metadata.namespace (create, update) and is KP_EINVAL where there is no
 * object (get, patch, delete) or no namespace in it. Names are URL-escaped.
 * Besides the API errors above: a 2xx answer that is not a JSON object is
 * KP_ECORRUPT; an answer over 256 MiB is KP_ETOOLARGE. *out and *status are
 * NULL on every failure but an API error (which sets *status only). */

/* GET one object. ns is ignored for cluster-scoped resources. */
int kc_get(kc_client_t *c, const kc_resource_t *r, const char *ns, const char *name,
           json_t **out);

/* GET an API path ("/apis", "/api/v1": discovery documents); *out is the
 * JSON object answered. Errors: KP_EINVAL (not an absolute path, or over
 * 64 KiB), the API errors above. */
int kc_get_path(kc_client_t *c, const char *path, json_t **out);

/* LIST, following `continue` until done; `query` is extra URL query text
 * ("labelSelector=app%3Dweb&resourceVersion=0"), NULL for none; ns NULL or
 * "" lists all namespaces. *out is the List (items and metadata). Pages of
 * 500 unless query sets limit; *out's metadata is the first page's (its
 * resourceVersion is the snapshot's), without continue. A continue token
 * the server expired is KP_ECOMPACTED: list again. */
int kc_list(kc_client_t *c, const kc_resource_t *r, const char *ns, const char *query,
            json_t **out);

/* POST. *out (may be NULL: not wanted) is the created object. */
int kc_create(kc_client_t *c, const kc_resource_t *r, const char *ns, const json_t *obj,
              json_t **out, json_t **status);

/* PUT of obj (metadata.name names it; its resourceVersion, if set, is a
 * precondition). `subresource` NULL or "status". */
int kc_update(kc_client_t *c, const kc_resource_t *r, const char *ns, const json_t *obj,
              const char *subresource, json_t **out, json_t **status);

typedef enum kc_patch_type {
    KC_PATCH_MERGE = 1,     /* application/merge-patch+json */
    KC_PATCH_STRATEGIC,     /* application/strategic-merge-patch+json */
    KC_PATCH_JSON,          /* application/json-patch+json */
    KC_PATCH_APPLY,         /* application/apply-patch+yaml (needs a field manager) */
} kc_patch_type_t;

/* PATCH name[/subresource] with `patch`; `query` as for kc_list (e.g.
 * "fieldManager=x&force=true"). KC_PATCH_APPLY sends the patch as JSON (a
 * YAML subset) with fieldManager=<user agent> unless query names one. */
int kc_patch(kc_client_t *c, const kc_resource_t *r, const char *ns, const char *name,
             const char *subresource, kc_patch_type_t type, const json_t *patch,
             const char *query, json_t **out, json_t **status);

/* kc_patch without a query, wanting of the patched object only its
 * resourceVersion (*rv; 0 when it has none or not a number), read from the
 * reply without parsing it: for writers that only track their own writes. */
int kc_patch_rv(kc_client_t *c, const kc_resource_t *r, const char *ns, const char *name,
                const char *subresource, kc_patch_type_t type, const json_t *patch, int64_t *rv,
                json_t **status);

/* DELETE with DeleteOptions `opts` (NULL: none). Returns 0 also when the
 * object is only marked (finalizers, graceful pods). */
int kc_delete(kc_client_t *c, const kc_resource_t *r, const char *ns, const char *name,
              const json_t *opts, json_t **status);

/* POST pods/<name>/binding to `node`. */
int kc_bind(kc_client_t *c, const char *ns, const char *pod, const char *node);
/* A TokenRequest (serviceaccounts/SA/token in ns) for `seconds`: *token is
 * the JWT (malloc'd, the caller's). Errors: as any request; KP_ECORRUPT when
 * the answer carries no token. */
int kc_request_token(kc_client_t *c, const char *ns, const char *sa, long long seconds,
                     char **token);

/* ---- watches ---- */

typedef struct kc_watch kc_watch_t;

typedef enum kc_event_type {
    KC_ADDED = 1, KC_MODIFIED, KC_DELETED, KC_BOOKMARK,
} kc_event_type_t;

/* WATCH from resourceVersion `rv` ("" or "0" as the API defines them), with
 * bookmarks, ending after timeout_s (0: the server's cap). Returns once the
 * answer's headers are in (waiting at most the client's timeout_ms); an
 * answer other than 200 is mapped like a request's (a 410 here is
 * KP_ECOMPACTED too). The watch has its own connection. */
int kc_watch_open(kc_client_t *c, const kc_resource_t *r, const char *ns, const char *query,
                  const char *rv, int timeout_s, kc_watch_t **out);

/* The next event, waiting up to timeout_ms (negative: forever). On 0, *type
 * and *obj (the caller's reference) are set. Errors: KP_ETIMEDOUT;
 * KP_ECLOSED (the stream ended or was cancelled: re-watch from the last
 * resourceVersion); KP_ECOMPACTED (410: relist); KP_EUNAVAILABLE (an ERROR
 * event, or the connection broke); KP_ECORRUPT (a line that is no event);
 * KP_ETOOLARGE (a line over 64 MiB); KP_ENOMEM. Events before an error are
 * delivered first; every error but KP_ETIMEDOUT is final (returned again). */
int kc_watch_next(kc_watch_t *w, int timeout_ms, kc_event_type_t *type, json_t **obj);
void kc_watch_cancel(kc_watch_t *w); /* any thread: next() returns KP_ECLOSED */
void kc_watch_close(kc_watch_t *w);

#endif
