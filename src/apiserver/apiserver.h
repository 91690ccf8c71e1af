/*
 * apiserver.h -- the only door to the history: Kubernetes REST over HTTP.
 *
 * The API server turns Kubernetes requests (discovery, get, list, watch,
 * create, update, delete; later patch) into store calls and store revisions
 * into resourceVersions. It runs no control loop. Clients (kubectl, client
 * libraries, kplane's own controllers and nodes) see a Kubernetes API server.
 *
 * Lifecycle: apiserver_start() -> apiserver_serve() -> serve on its own
 * threads -> apiserver_stop().
 * Errors are KP_* codes (lib/err.h).
 */
#ifndef KP_APISERVER_H
#define KP_APISERVER_H

#include <stddef.h>
#include <stdint.h>

struct sockaddr_in;
typedef struct store store_t;
typedef struct apiserver apiserver_t;
typedef struct apiserver_facts apiserver_facts_t;

/* A lab the dashboard may run (`kplane lab list`'s row; strings borrowed). */
typedef struct apiserver_lab {
    const char *name, *seed, *title;
    const char *needs; /* NULL, or what must be installed ("etcd") */
} apiserver_lab_t;

typedef struct apiserver_config {
    const char *listen;        /* "ADDR:PORT"; port 0 picks a free one */
    store_t *store;            /* borrowed: must outlive the server */
    const char *admin_token;   /* bearer token with full access; required */
    /* More bearer tokens (--token-auth-file), borrowed: must outlive the
     * server; NULL: none. */
    const struct apiserver_tokens *tokens;
    /* --authorization-mode: AlwaysAllow, RBAC, Node, comma-separated, in
     * the order they are asked (NULL: "Node,RBAC"); system:masters may always
     * do everything. Borrowed for apiserver_start. */
    const char *authorization_mode;
    /* --anonymous-auth=false: a request with no credentials gets 401
     * instead of being system:anonymous (then only what RBAC grants
     * system:unauthenticated: health, version, discovery). */
    int no_anonymous;
    /* ServiceAccount tokens (auth/satoken.h), borrowed for apiserver_start:
     * the PEM private key that signs them (--service-account-signing-key-
     * file; NULL: no TokenRequest), PEM keys that also verify them
     * (--service-account-key-file: public keys, certificates or private
     * keys; NULL: only the signing key's), and the issuer
     * (--service-account-issuer; NULL: https://kubernetes.default.svc.cluster.local). */
    const char *sa_signing_key_pem;
    const char *sa_key_pem;
    const char *sa_issuer;
    /* Limits; 0 takes the default in brackets. Beyond the in-flight limits
     * a request gets 429 with Retry-After (watches are not counted). */
    size_t max_inflight;          /* read-only requests in flight (400) */
    size_t max_mutating_inflight; /* mutating requests in flight (200) */
    size_t max_watches;           /* open watches over `listen` (10000) */
    /* Open watches over unix_socket (10000): the in-process components'
     * own budget, which clients of `listen` cannot take. */
    size_t max_watches_local;
    /* Watch cache history per resource, in bytes of memory it keeps alive
     * (--watch-cache-bytes; 64 MiB). A watch from a revision older than
     * what fits gets 410 Gone (Expired). */
    size_t watch_cache_bytes;
    /* A watcher's send queue in bytes of JSON (--watch-queue-bytes; 1 MiB):
     * a watcher that falls further behind is closed and must watch again,
     * as Kubernetes closes a watcher whose channel stays full. */
    size_t watch_queue_bytes;
    /* The TCP listener (not the Unix socket): connections beyond
     * max_connections are closed at accept; connections with no
     * authenticated request yet are at most max_unauth_connections (the
     * oldest of them is closed for a new one) and live at most
     * header_timeout_s; any connection quiet for idle_timeout_s is closed;
     * a request body must arrive within body_timeout_s. */
    size_t max_connections;       /* (16384) */
    size_t max_unauth_connections; /* (256) */
    int header_timeout_s;         /* (32, Kubernetes' ReadHeaderTimeout) */
    int idle_timeout_s;           /* (90, Kubernetes' IdleTimeout) */
    int body_timeout_s;           /* (60, Kubernetes' --request-timeout) */
    const char *tls_cert_pem;  /* server certificate (PEM); NULL: plain HTTP */
    const char *tls_key_pem;   /* its private key (PEM) */
    /* Client certificates (Kubernetes' --client-ca-file): the CAs (PEM)
     * whose certificates authenticate as user = subject CN, groups = subject
     * O values, requested but not required in the TLS handshake. Borrowed
     * for apiserver_start; NULL: no client certificates. */
    const char *client_ca_pem;
    /* Also serve plain HTTP on this Unix socket (NULL: no), for clients in
     * this process (kplane server's components): the same API and tokens,
     * without TLS and TCP over loopback. Created mode 0600, replacing a
     * stale socket file; removed by apiserver_stop(). At most 107 bytes;
     * borrowed: must outlive the server. */
    const char *unix_socket;
    /* Admission DefaultTolerationSeconds: the tolerationSeconds of the
     * not-ready and unreachable NoExecute tolerations pods get at creation
     * (--default-not-ready-toleration-seconds and
     * --default-unreachable-toleration-seconds); both 300 unless
     * toleration_seconds_set. */
    int toleration_seconds_set;
    int64_t not_ready_toleration_s, unreachable_toleration_s;
    /* Services' addresses: the ClusterIP range (--service-cluster-ip-range,
     * IPv4 only, prefix 12..30; NULL: 10.96.0.0/12) and the NodePort range
     * (--service-node-port-range; NULL: 30000-32767); borrowed for
     * apiserver_start. apiserver_check_service_ranges() says what is wrong
     * with either. */
    const char *service_cluster_ip_range;
    const char *service_node_port_range;
    /* Seconds between repair passes of the allocations (0: 180). */
    int service_repair_interval_s;
    /* The audit log (README, "The audit log"): the requests that
     * `audit_policy` (--audit-policy-file; borrowed, must outlive the
     * server) selects, as audit.k8s.io/v1 Event JSON lines appended to
     * `audit_log_path` (--audit-log-path; "-": standard output). Nothing is
     * logged unless both are set. The file is rotated before it would pass
     * audit_log_maxsize_mb (0: 100), keeping the newest
     * audit_log_maxbackup rotated files (0: all) no older than
     * audit_log_maxage_days (0: any age), as kube-apiserver's flags. Every
     * reply carries an Audit-ID header either way. */
    const struct apiserver_audit_policy *audit_policy;
    const char *audit_log_path;
    int audit_log_maxsize_mb, audit_log_maxbackup, audit_log_maxage_days;
    /* The dashboard's lab page (ui/ui.h): with enable_labs (--enable-labs;
     * kplane server sets it when it listens on loopback) an authorized user
     * may run one lab at a time, `lab_exe lab run NAME` (lab_exe NULL:
     * /proc/self/exe) as a child of this server, stopped with it. `labs`
     * (nlabs rows; borrowed, must outlive the server; NULL: none) are the
     * labs listed and allowed. */
    int enable_labs;
    const apiserver_lab_t *labs;
    size_t nlabs;
    const char *lab_exe;
    /* The type facts begun by apiserver_facts_begin(), taken by
     * apiserver_start() (also when it fails); NULL: parsed there. */
    apiserver_facts_t *facts;
} apiserver_config_t;

/* Check the two ranges as apiserver_start will (NULL: the default).
 * Errors: KP_EINVAL, with `err` naming the flag and the reason. */
int apiserver_check_service_ranges(const char *cidr, const char *ports, char *err,
                                   size_t errlen);

/* Check an --authorization-mode value as apiserver_start will (NULL: the
 * default). Errors: KP_EINVAL, with `err` naming the flag and the reason. */
int apiserver_check_authorization_mode(const char *modes, char *err, size_t errlen);

/* The IPv4 address of a listen string "ADDR:PORT" (ADDR empty or
 * "localhost": 127.0.0.1; PORT 0: any free port), as apiserver_start reads
 * cfg->listen. Errors: KP_EINVAL (not ADDR:PORT). */
int apiserver_listen_addr(const char *listen, struct sockaddr_in *sa);

/* The API's type facts (OpenAPI schemas: validation, managed fields,
 * explain), parsed from the binary's tables: 4-6 ms of CPU, begun here on a
 * thread of their own so that a caller with work of its own before
 * apiserver_start() (key files, opening the store) overlaps it, and handed
 * over in apiserver_config_t.facts. apiserver_facts_free() (NULL: no-op)
 * when the start is given up before. Errors: KP_ENOMEM. */
int apiserver_facts_begin(apiserver_facts_t **out);
void apiserver_facts_free(apiserver_facts_t *f);

/* Start: create the objects every cluster starts with (the default
 * namespaces, the system PriorityClasses, the kubernetes Service, ...) where
 * missing, load the caches and bind the listening sockets (apiserver_port()
 * is known). The bootstrap RBAC policy is still being written, on threads of
 * its own, when this returns; nothing is answered before apiserver_serve().
 * *out is owned by the caller until apiserver_stop(). Errors: KP_EINVAL (bad
 * listen address), KP_EBUSY (address in use), KP_EIO, store errors. */
int apiserver_start(const apiserver_config_t *cfg, apiserver_t **out);

/* Wait for the bootstrap RBAC policy to be written, start the authorizers
 * on it, and answer requests: the server is ready when this returns 0.
 * Once only, after apiserver_start(). Errors: the policy's writes' (KP_EIO,
 * KP_ECONFLICT, KP_ENOMEM), KP_EIO (the listener); then only
 * apiserver_stop() is left to do. */
int apiserver_serve(apiserver_t *s);

/* The port the server listens on (useful with port 0). */
int apiserver_port(const apiserver_t *s);

/* Append what fn writes (*text: malloc'd Prometheus text, freed by the
 * server) to /metrics: the components that run beside the API server in one
 * process. NULL fn removes it; once this returns, fn is no longer called. */
void apiserver_set_metrics_source(apiserver_t *s, int (*fn)(void *arg, char **text),
                                  void *arg);

/* Whether a component run beside the API server in this process is running,
 * for componentstatuses (kinds/strategy_componentstatus.c): fn(arg, name),
 * name "scheduler" or "controller-manager", answers 1 (running), 0 (not
 * running) or -1 (not run in this process); it must be quick (it runs under
 * a lock) and thread-safe. Whatever fn says, a Lease in kube-system held and
 * renewed in time also counts. NULL fn removes it; once this returns, fn is
 * no longer called. */
void apiserver_set_component_probe(apiserver_t *s, int (*fn)(void *arg, const char *name),
                                   void *arg);

/* Stop accepting, end open watches, wait for requests in flight, free. */
void apiserver_stop(apiserver_t *s);

/* ---- static token file (--token-auth-file) ---- */

typedef struct apiserver_tokens apiserver_tokens_t;

/* Read Kubernetes' static token file: CSV records token,user,uid[,"g1,g2"]
 * (at least 3 fields; blank lines skipped; empty tokens skipped and a
 * duplicate's last line wins, with a warning). *out is the caller's (free
 * with apiserver_tokens_free). Errors: KP_ENOTFOUND, KP_EIO (unreadable),
 * KP_EINVAL (a bad record: err names the file and the line), KP_ENOMEM. */
int apiserver_tokens_load(const char *path, apiserver_tokens_t **out, char *err, size_t errlen);
void apiserver_tokens_free(apiserver_tokens_t *t);
/* Add a token for user (uid, groups: comma-separated; NULL: none) to *t,
 * made when NULL: the identities kplane server gives the components it
 * runs. Errors: KP_EINVAL (empty token or user), KP_ENOMEM. */
int apiserver_tokens_add(apiserver_tokens_t **t, const char *token, const char *user,
                         const char *uid, const char *groups);
/* How many usable tokens t holds. */
size_t apiserver_tokens_count(const apiserver_tokens_t *t);

/* ---- the audit policy (--audit-policy-file) ---- */

typedef struct apiserver_audit_policy apiserver_audit_policy_t;

/* Read an audit.k8s.io/v1 Policy file (YAML or JSON) and check it as
 * kube-apiserver does. *out is the caller's (free with
 * apiserver_audit_policy_free). Fields it does not know are ignored, as
 * Kubernetes ignores them: the first is named in `warn` (may be NULL; ""
 * when none). Errors: KP_ENOTFOUND, KP_EIO (unreadable), KP_EINVAL (`err`
 * names the field and what is wrong: "rules[1].level: Unsupported value:
 * ..."), KP_ENOMEM. */
int apiserver_audit_policy_load(const char *path, apiserver_audit_policy_t **out, char *err,
                                size_t errlen, char *warn, size_t warnlen);
void apiserver_audit_policy_free(apiserver_audit_policy_t *p);

/* ---- first-start bootstrap (used by `kplane server` and `kplane apiserver`) ---- */

/* A new bearer token: 32 random bytes in hex. Errors: KP_EIO. */
int apiserver_random_token(char out[65]);

/* The user kplane server's simulated nodes act as (many kubelets in one
 * process): bound at start to the ClusterRole system:node. */
#define APISERVER_NODE_SIMULATOR_USER "kplane:node-simulator"

/* Read the admin token from DIR/admin-token, or generate one (32 random bytes,
 * hex) and write it there with mode 0600. *token is owned by the caller (free).
 * Errors: KP_EIO. */
int apiserver_admin_token(const char *data_dir, char **token);

/* Read DIR/sa.key (the ServiceAccount token signing key, PEM), or make an
 * ECDSA P-256 key there (mode 0600) on first start. *pem is the caller's
 * (free). Errors: KP_EIO. */
int apiserver_sa_key(const char *data_dir, char **pem);

/* The server's TLS material, PEM, each string owned by the struct. */
typedef struct apiserver_tls {
    char *ca_pem;
    char *cert_pem;
    char *key_pem;
    char *ca_key_pem; /* DIR/ca.key, the CA's key (csrsigning signs with it);
                         NULL when unreadable: nothing is signed then */
} apiserver_tls_t;

/* Load DIR/ca.crt, DIR/server.crt, DIR/server.key (and DIR/ca.key when
 * readable), creating them on first
 * use: a self-signed CA and a server certificate it signs for 127.0.0.1, ::1,
 * localhost and `host`. Free with apiserver_tls_free(). Errors: KP_EIO. */
int apiserver_tls_load(const char *data_dir, const char *host, apiserver_tls_t *out);
void apiserver_tls_free(apiserver_tls_t *t);

/* A client certificate and its new key (ECDSA P-256), PEM, signed by the
 * cluster CA (tls->ca_pem, tls->ca_key_pem) for user `cn` in groups `orgs`
 * (subject O values; NULL-terminated, NULL: none): TLS client
 * authentication only, digitalSignature, valid for a year (from an hour
 * ago, for clocks behind). *cert_pem and *key_pem are the caller's (free).
 * Thread-safe. Errors: KP_EINVAL (no CA key, a CA that does not load, cn
 * NULL or empty), KP_EIO, KP_ENOMEM. */
int apiserver_client_cert(const apiserver_tls_t *tls, const char *cn, const char *const *orgs,
                          char **cert_pem, char **key_pem);

/* The admin's client certificate, kubeadm's admin.conf user: CN
 * kubernetes-admin, O system:masters. Read from DIR/admin.crt and
 * DIR/admin.key, or (when missing, not signed by tls's CA, less than 30
 * days from its end, or not matching its key) made with
 * apiserver_client_cert() and written there (mode 0600). *cert_pem and
 * *key_pem are the caller's (free). Errors: KP_EINVAL (no CA key), KP_EIO,
 * KP_ENOMEM. */
int apiserver_admin_cert(const char *data_dir, const apiserver_tls_t *tls, char **cert_pem,
                         char **key_pem);

/* Write DIR/kubeconfig (mode 0600, replaced atomically) pointing at
 * https://HOST:PORT (trusting `ca_pem`; http:// when ca_pem is NULL), with
 * current-context kubernetes-admin@kplane: user kubernetes-admin of cluster
 * kplane. The user's credentials are the client certificate cert_pem and its
 * key key_pem (client-certificate-data, client-key-data, as kubeadm's
 * admin.conf) when both are given, else `token` as a bearer token.
 * Errors: KP_EINVAL (no credentials), KP_EIO, KP_ENOMEM. */
int apiserver_write_kubeconfig(const char *data_dir, const char *host, int port, const char *ca_pem,
                               const char *token, const char *cert_pem, const char *key_pem);
/* The same as DIR/`file` for user `user` (context USER@kplane): the
 * components' kubeconfigs (kubeadm's scheduler.conf, controller-manager.conf). */
int apiserver_write_kubeconfig_as(const char *data_dir, const char *file, const char *user,
                                  const char *host, int port, const char *ca_pem, const char *token,
                                  const char *cert_pem, const char *key_pem);

#endif
