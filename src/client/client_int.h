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

struct kc_client {
    char *server;      /* scheme://host[:port][/prefix], no trailing '/' */
    char *auth_header; /* "Authorization: Bearer <token>", or NULL */
    char *ca_pem;      /* NULL: the system's trust store */
    size_t ca_len;
    char *user_agent;
    int insecure;
    int timeout_ms;

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
 * user agent, no signals, and the headers (Accept: application/json, the
 * bearer token, `ctype` as Content-Type when non-NULL). *hdrs is the
 * caller's (curl_slist_free_all after the transfer). Errors: KP_ENOMEM. */
int kc__easy_setup(kc_client_t *c, CURL *h, const char *url, const char *ctype,
                   struct curl_slist **hdrs);

/* The URL of r in ns (NULL/"" or cluster-scoped: none), then /name and
 * /sub when non-NULL, then "?query" when query is non-empty, into *url
 * (initialised here; the caller buf_free()s it). Errors: KP_ETOOLARGE,
 * KP_ENOMEM. */
int kc__url(const kc_client_t *c, const kc_resource_t *r, const char *ns, const char *name,
            const char *sub, const char *query, buf_t *url);

/* Append s percent-encoded (all but RFC 3986 unreserved characters). */
int kc__escape(buf_t *b, const char *s);

/* Wait for a token of the client-side rate limit (no-op when off). */
void kc__rate_wait(kc_client_t *c);

/* The KP_* code for an HTTP status (status: the parsed Status or NULL),
 * and for a failed transfer. */
int kc__http_err(long code, const json_t *status);
int kc__curl_err(CURLcode cc);

#endif
