/*
 * client_int.h -- what client.c shares with watch.c: the client's insides,
 * its pool of curl handles, URLs, the rate limit and the error mapping.
 * Nothing outside src/client/ includes this.
 */
#ifndef KP_CLIENT_INT_H
#define KP_CLIENT_INT_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>

#include "client/client.h"
#include "lib/buf.h"

#define KC__POOL_MAX           256          /* idle easy handles kept for reuse */
#define KC__BODY_MAX           (256u << 20) /* cap on one response body */
#define KC__URL_MAX            (64u << 10)  /* cap on one URL */
#define KC__DEFAULT_TIMEOUT_MS 30000
#define KC__SERVERS_MAX        16           /* API servers one client fails over between */

struct kc_client {
    /* The API servers (scheme://host[:port][/prefix], no trailing '/'), and
     * the index of the one requests go to now; it moves on (round robin)
     * when a connection to it fails (kc__server_failed). */
    char *servers[KC__SERVERS_MAX];
    size_t nservers;
    _Atomic size_t cur;
    char *auth_header; /* "Authorization: Bearer <token>", or NULL */
    struct kc_token_src *tok; /* tokens made again as they age (shared), or NULL */
    char *ca_pem;      /* NULL: the system's trust store */
    size_t ca_len;
    char *cert_pem; /* the client certificate and its key (PEM), or NULL */
    char *key_pem;
    char *user_agent;
    int insecure;
    char *unix_socket; /* NULL: TCP to the server's host and port */
    int timeout_ms;
    int metadata_only; /* kc_client_metadata() */

    /* The token bucket (qps 0: off). tokens may go negative: each caller
     * reserves its token under the lock and sleeps off its debt outside. */
    pthread_mutex_t rl_mu;
    double qps, burst, tokens;
    int64_t rl_last_ns;

    /* Idle easy handles; each keeps its own connection cache, so taking one
     * back reuses its keep-alive connection. */
    pthread_mutex_t pool_mu;
    CURL *pool[KC__POOL_MAX];
    size_t npool;

    _Atomic uint64_t requests, errors, watches;
};

/* A handle from the pool (or a new one); NULL when out of memory. */
CURL *kc__easy_get(kc_client_t *c);
/* Give a handle back (it keeps its connection), or clean it up when the
 * pool is full. */
void kc__easy_put(kc_client_t *c, CURL *h);

/* Set what every request carries on a reset handle: URL, TLS trust, the
 * user agent, no signals, and the headers (`accept`, a whole "Accept: ..."
 * line, NULL: Accept: application/json; the bearer token; `ctype` as
 * Content-Type when non-NULL). *hdrs is the caller's (curl_slist_free_all
 * after the transfer). Errors: KP_ENOMEM. */
int kc__easy_setup(kc_client_t *c, CURL *h, const char *url, const char *ctype,
                   const char *accept, struct curl_slist **hdrs);
/* The Accept line of a get or watch (list 0) or a list (1): NULL but for
 * a metadata client (kc_client_metadata()). */
const char *kc__accept(const kc_client_t *c, int list);

/* The path of r in ns (NULL/"" or cluster-scoped: none), then /name and
 * /sub when non-NULL, then "?query" when query is non-empty, into *url
 * (initialised here; the caller buf_free()s it): "/api/v1/...", without
 * the server, which each attempt prefixes (kc__full_url). Errors:
 * KP_ETOOLARGE, KP_ENOMEM. */
int kc__url(const kc_client_t *c, const kc_resource_t *r, const char *ns, const char *name,
            const char *sub, const char *query, buf_t *url);

/* ---- failover between API servers ---- */

/* The index of the server requests go to now. */
size_t kc__server_cur(kc_client_t *c);
/* A connection to server `idx` failed: requests go to the next one from
 * now on (unless another thread moved already). No-op with one server. */
void kc__server_failed(kc_client_t *c, size_t idx);
/* servers[idx] followed by `path`, malloc'd (NULL: out of memory). */
char *kc__full_url(const kc_client_t *c, size_t idx, const char *path);

/* How a transfer that got no answer failed. */
typedef enum kc__conn_fail {
    KC__CONN_OK = 0,   /* an answer came, or the failure is not the connection's */
    KC__CONN_NOT_SENT, /* no connection: the request certainly was not sent */
    KC__CONN_LOST,     /* connected, then no response byte: it may have been sent */
} kc__conn_fail_t;
/* Classify a finished transfer on h that ended with cc. */
kc__conn_fail_t kc__conn_fail(CURL *h, CURLcode cc);

/* Append s percent-encoded (all but RFC 3986 unreserved characters). */
int kc__escape(buf_t *b, const char *s);

/* Wait for a token of the client-side rate limit (no-op when off). */
void kc__rate_wait(kc_client_t *c);

/* The KP_* code for an HTTP status (status: the parsed Status or NULL),
 * and for a failed transfer. */
int kc__http_err(long code, const json_t *status);
int kc__curl_err(CURLcode cc);

/* watch.c: kc_watch_open() with flags: KC__WATCH_DROP_MANAGED_FIELDS cuts
 * each event's object.metadata.managedFields out of its bytes before they
 * are parsed (for an informer that strips them: parsing them only to free
 * them was a third of its work on pods). */
#define KC__WATCH_DROP_MANAGED_FIELDS 1
int kc__watch_open(kc_client_t *c, const kc_resource_t *r, const char *ns, const char *query,
                   const char *rv, int timeout_s, int flags, kc_watch_t **out);
/* The event line s (n bytes, valid JSON) without object.metadata.managedFields,
 * in *cut (malloc'd; the caller frees it), and its length; or 0 with *cut
 * NULL: it has none (or out of memory). The comma that went with the member
 * goes too: the one after it, else the one before. */
size_t kc__drop_managed_fields(const char *s, size_t n, char **cut);

/* intern.c: equal subtrees shared between the objects one informer caches
 * (metadata's and spec's object and array fields). Not thread-safe: one per
 * informer, used on its thread. kc__intern() edits obj, which must not be
 * shared yet; prev (may be NULL) is the version it replaces, whose equal
 * fields it takes first (an update leaves most of them as they were).
 * NULL from kc__intern_new(): out of memory (kc__intern() then does
 * nothing). */
typedef struct kc__intern kc__intern_t;
kc__intern_t *kc__intern_new(void);
void kc__intern_free(kc__intern_t *t); /* NULL is fine */
void kc__intern(kc__intern_t *t, json_t *obj, const json_t *prev);
size_t kc__intern_size(const kc__intern_t *t); /* entries held, for tests */

#endif
