/*
 * discovery.h -- what an API server serves, asked of the server (client-go's
 * discovery client and deferred discovery RESTMapper).
 *
 *   kc_restmap_t    an immutable snapshot of discovery: every resource of
 *                   /api/v1 and of each group-version under /apis (not the
 *                   subresources), with its kind, scope, verbs and whether
 *                   its version is the group's preferred one. Maps
 *                   group/version/kind <-> resource. Refcounted; readers
 *                   take no lock.
 *   kc_discovery_t  holds the current snapshot and replaces it when asked:
 *                   when it is older than a period, when a caller asks
 *                   for a fresh one, or when a kind is unknown (at most
 *                   once per min_interval_ms), as
 *                   client-go's DeferredDiscoveryRESTMapper resets on a
 *                   "no match".
 *
 * BOUNDS. A snapshot holds at most KC_DISCOVERY_MAX_RESOURCES resources of
 * at most KC_DISCOVERY_MAX_GROUPS group-versions, each name within
 * Kubernetes' own limits; a server offering more is KP_ETOOLARGE (the old
 * snapshot stays). A group-version whose document cannot be read is left
 * out and counted (kc_restmap_failed), as client-go reports
 * ErrGroupDiscoveryFailed beside the groups it did read.
 *
 * THREADS. Every call is thread-safe. A snapshot stays valid while its
 * holder has a reference; pointers into it (kc_api_resource_t and its
 * strings) are borrowed until kc_restmap_unref.
 */
#ifndef KP_CLIENT_DISCOVERY_H
#define KP_CLIENT_DISCOVERY_H

#include <stddef.h>
#include <stdint.h>

#include "client/client.h"

#define KC_DISCOVERY_MAX_RESOURCES 2048
#define KC_DISCOVERY_MAX_GROUPS    256 /* group-versions */

/* Verbs, as discovery lists them. */
enum {
    KC_VERB_GET = 1 << 0,
    KC_VERB_LIST = 1 << 1,
    KC_VERB_WATCH = 1 << 2,
    KC_VERB_CREATE = 1 << 3,
    KC_VERB_UPDATE = 1 << 4,
    KC_VERB_PATCH = 1 << 5,
    KC_VERB_DELETE = 1 << 6,
    KC_VERB_DELETECOLLECTION = 1 << 7,
};

/* One served resource. r's strings point into this entry. */
typedef struct kc_api_resource {
    kc_resource_t r;
    char group[254], version[64], resource[254], kind[128];
    char api_version[320]; /* "apps/v1", "v1" */
    unsigned verbs;        /* KC_VERB_* */
    int preferred;         /* its version is the group's preferred version */
} kc_api_resource_t;

typedef struct kc_restmap kc_restmap_t;

/* How documents are fetched: GET `path` ("/api", "/apis/apps/v1"), *out the
 * caller's JSON object. The default fetches through the client
 * (kc_get_path); tests give canned documents. */
typedef int (*kc_discovery_fetch_fn)(void *arg, const char *path, json_t **out);

/* Read discovery through fetch into a new snapshot (*out: one reference).
 * Errors: those of fetching /api or /apis, KP_ECORRUPT (a document that is
 * not discovery), KP_ETOOLARGE (over the bounds), KP_ENOMEM. */
int kc_restmap_build(kc_discovery_fetch_fn fetch, void *arg, kc_restmap_t **out);
kc_restmap_t *kc_restmap_ref(kc_restmap_t *m);
void kc_restmap_unref(kc_restmap_t *m); /* NULL is fine */

size_t kc_restmap_count(const kc_restmap_t *m);
const kc_api_resource_t *kc_restmap_at(const kc_restmap_t *m, size_t i);
/* Group-versions whose document could not be read. */
size_t kc_restmap_failed(const kc_restmap_t *m);
/* The resource serving kind in api_version ("apps/v1"), or NULL. */
const kc_api_resource_t *kc_restmap_for_kind(const kc_restmap_t *m, const char *api_version,
                                             const char *kind);
/* The resource serving group/kind in the group's preferred version (else
 * any served version), or NULL: an ownerReference may name a version that
 * is not the one watched. */
const kc_api_resource_t *kc_restmap_for_group_kind(const kc_restmap_t *m, const char *group,
                                                   const char *kind);
/* The resource group/resource in its preferred version (version NULL), or
 * in that version; NULL if not served. */
const kc_api_resource_t *kc_restmap_for_resource(const kc_restmap_t *m, const char *group,
                                                 const char *version, const char *resource);
/* Do a and b serve the same resources (names, kinds, scopes, verbs)? */
int kc_restmap_same(const kc_restmap_t *a, const kc_restmap_t *b);

/* ---- the discovery client ---- */

typedef struct kc_discovery kc_discovery_t;

typedef struct kc_discovery_config {
    int period_ms;       /* a snapshot older than this is read again; 0: 30 s */
    int min_interval_ms; /* reads for an unknown kind at most this often; 0: 1 s */
    kc_discovery_fetch_fn fetch; /* NULL: GET through the client */
    void *fetch_arg;
} kc_discovery_config_t;

/* A discovery client over c (borrowed; it must outlive it). Nothing is
 * fetched until a snapshot is asked for. Errors: KP_EINVAL, KP_ENOMEM. */
int kc_discovery_new(kc_client_t *c, const kc_discovery_config_t *cfg, kc_discovery_t **out);
void kc_discovery_free(kc_discovery_t *d); /* NULL is fine */

/* The current snapshot (*out: a reference), read again first when it is
 * older than max_age_ms (negative: the period; 0: read now) or there is
 * none. Concurrent callers share one read: a caller that waited for
 * another's read takes its result when that read started after it asked.
 * When reading fails and an older snapshot exists, that one is returned
 * (the error logged); with none, the error. */
int kc_discovery_map(kc_discovery_t *d, int max_age_ms, kc_restmap_t **out);

/* The deferred mapping: the resource serving (api_version, kind). On a miss
 * the snapshot is read again (at most once per min_interval_ms) and asked
 * again. On 0, *map holds a reference (kc_restmap_unref) and *res points
 * into it. Errors: KP_ENOTFOUND (not served), those of kc_discovery_map. */
int kc_discovery_lookup(kc_discovery_t *d, const char *api_version, const char *kind,
                        kc_restmap_t **map, const kc_api_resource_t **res);

/* Snapshots read so far (for tests and metrics). */
uint64_t kc_discovery_reads(kc_discovery_t *d);

#endif
