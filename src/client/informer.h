/*
 * informer.h -- informers: a cached, indexed, watched view of one resource.
 * Ownership, threads and errors as client.h states them.
 */
#ifndef KP_CLIENT_INFORMER_H
#define KP_CLIENT_INFORMER_H

#include "client/client.h"

/* ---- informers ---- */

typedef struct kc_informer kc_informer_t;

/* Handlers run on the informer's thread; objects are borrowed and read-only.
 * on_update also fires on resync (old == obj then). */
typedef struct kc_handlers {
    void (*on_add)(void *arg, const json_t *obj);
    void (*on_update)(void *arg, const json_t *old, const json_t *obj);
    void (*on_delete)(void *arg, const json_t *obj); /* the last state known */
    void *arg;
} kc_handlers_t;

/* An index maps an object to the values it is found under; write up to `max`
 * values into vals (each at most KC_INDEX_VALUE_MAX bytes with the NUL) and
 * return how many. Runs under the informer's lock: be quick, never call back
 * in, and give the same values for the same object every time. */
#define KC_INDEX_VALUE_MAX 256
typedef size_t (*kc_index_fn)(const json_t *obj, char vals[][KC_INDEX_VALUE_MAX], size_t max);

/* Built-in index functions: by metadata.namespace, by the controller
 * ownerReference's uid, by spec.nodeName (pods). */
size_t kc_index_namespace(const json_t *obj, char vals[][KC_INDEX_VALUE_MAX], size_t max);
size_t kc_index_controller(const json_t *obj, char vals[][KC_INDEX_VALUE_MAX], size_t max);
size_t kc_index_node(const json_t *obj, char vals[][KC_INDEX_VALUE_MAX], size_t max);

/* A new informer over r (ns NULL: all namespaces; selectors NULL: none).
 * resync_ms 0: never. r's strings must outlive the informer (the kc_*
 * constants do). Errors: KP_EINVAL, KP_ENOMEM. */
int kc_informer_new(kc_client_t *c, const kc_resource_t *r, const char *ns,
                    const char *label_selector, const char *field_selector, int resync_ms,
                    kc_informer_t **out);
/* Add handlers, before or after kc_informer_start(). Added to a running
 * informer, the handler first gets on_add for every cached object (on the
 * calling thread), then every later event on the informer's thread: none
 * missed, none twice. Never call it, nor kc_informer_remove_handlers(), from
 * a handler of the same informer. Errors: KP_EINVAL, KP_ENOMEM. */
int kc_informer_add_handlers(kc_informer_t *inf, const kc_handlers_t *h);
/* Remove every handler whose arg is `arg`. When it returns, none of them
 * runs or will run again: the component that owns arg may go away. */
void kc_informer_remove_handlers(kc_informer_t *inf, const void *arg);
/* Add an index, before or after start (a running informer's cache is
 * indexed at once). Errors: KP_EEXIST (that name is there), KP_EINVAL,
 * KP_ENOMEM. */
int kc_informer_add_index(kc_informer_t *inf, const char *name, kc_index_fn fn);
/* A transform edits each object the informer receives before it is cached
 * and handed to handlers (client-go's SetTransform): to drop what no user
 * reads, so that the cache holds less. It must keep metadata name,
 * namespace and resourceVersion, and what every index and handler reads. */
typedef void (*kc_transform_fn)(void *arg, json_t *obj);
/* Drop metadata.managedFields (client-go's TransformStripManagedFields):
 * controllers and schedulers never read them, and they are about a third
 * of a pod. */
void kc_transform_strip_managed_fields(void *arg, json_t *obj);
/* Set the transform (NULL: none) and its first argument (borrowed; it must
 * outlive the informer), before kc_informer_start(). Errors: KP_EBUSY
 * (started). */
int kc_informer_set_transform(kc_informer_t *inf, kc_transform_fn fn, void *arg);
/* Observe by polling instead of watching (0: watch, the default): list
 * every poll_ms and hand the handlers what changed since the last list, as
 * the watch would have (on_add, on_update for a moved resourceVersion,
 * on_delete), before kc_informer_start(). Kubernetes' informers always
 * watch; this exists to measure what watching saves (`kplane lab run
 * polling-vs-watching`). Errors: KP_EINVAL, KP_EBUSY (started). */
int kc_informer_set_poll(kc_informer_t *inf, int poll_ms);

/* What the informer has done so far (any thread). */
typedef struct kc_informer_stats {
    uint64_t lists;           /* LISTs answered (the first, relists, polls) */
    uint64_t lists_unchanged; /* polls that found nothing changed */
    uint64_t events;          /* adds, updates and deletes handed to handlers */
    uint64_t objects;         /* objects received: lists' items and watch events */
} kc_informer_stats_t;
void kc_informer_stats(kc_informer_t *inf, kc_informer_stats_t *out);

/* Start the informer's thread: list, then watch; relist on 410; after other
 * errors back off (100 ms doubling to 5 s) and watch again. Errors:
 * KP_EBUSY (started already), KP_ENOMEM. */
int kc_informer_start(kc_informer_t *inf);
/* Wait until the first list has been delivered to the handlers (timeout_ms
 * negative: forever). Errors: KP_ETIMEDOUT; KP_ECLOSED (not started, or
 * stopped before it synced). */
int kc_informer_wait_synced(kc_informer_t *inf, int timeout_ms);
int kc_informer_synced(kc_informer_t *inf);

/* The cached object "ns/name" (or "name" when cluster-scoped): a new
 * reference to a shared read-only object, or NULL. */
json_t *kc_informer_get(kc_informer_t *inf, const char *key);
/* Every cached object whose index `index` has value `value` (index NULL:
 * every object). *objs is malloc'd, each entry a reference: free with
 * kc_objs_free(); NULL when *n is 0. Errors: KP_EINVAL (no such index, or
 * value NULL), KP_ENOMEM. */
int kc_informer_list(kc_informer_t *inf, const char *index, const char *value, json_t ***objs,
                     size_t *n);
void kc_objs_free(json_t **objs, size_t n);
/* The key of an object as the cache files it ("ns/name" or "name"). */
int kc_key_of(const json_t *obj, char *buf, size_t n);
/* The resourceVersion the cache reflects. */
const char *kc_informer_last_rv(kc_informer_t *inf, char *buf, size_t n);
/* Cancel the watch and join the thread (an in-flight LIST or watch open is
 * waited for, at most the client's timeout); idempotent. From a handler it only asks the
 * thread to end. Never free an informer from its own handler. */
void kc_informer_stop(kc_informer_t *inf);
void kc_informer_free(kc_informer_t *inf); /* stops first; NULL is fine */

/* ---- shared informers ----
 *
 * A factory hands out one informer per (resource, namespace, selectors), so
 * that the components of one process (the controller manager, the scheduler,
 * the node agents of `kplane server`) receive and parse each event once, and
 * cache each object once. Each user adds its handlers and indexes to the
 * shared informer (an index another user added already: KP_EEXIST, fine)
 * and removes its handlers with kc_informer_remove_handlers() when it stops;
 * it never stops or frees a shared informer. */
typedef struct kc_factory kc_factory_t;

/* A factory over client c (borrowed; it must outlive the factory) whose
 * informers resync every resync_ms (0: never). Errors: KP_ENOMEM. */
int kc_factory_new(kc_client_t *c, int resync_ms, kc_factory_t **out);
/* The transform of the informers f creates from now on (NULL: none; its
 * argument is NULL). */
void kc_factory_set_transform(kc_factory_t *f, kc_transform_fn fn);
/* The shared informer for (r, ns, selectors), created and started on first
 * use; *out is borrowed from the factory. Arguments as kc_informer_new(). */
int kc_factory_informer(kc_factory_t *f, const kc_resource_t *r, const char *ns,
                        const char *label_selector, const char *field_selector,
                        kc_informer_t **out);
/* The shared informer of all of r's objects (no namespace, no selectors)
 * if some user has asked for it already, else NULL (none is created).
 * Borrowed, as kc_factory_informer()'s. */
kc_informer_t *kc_factory_lookup(kc_factory_t *f, const kc_resource_t *r);
/* The polling interval of the informers f creates from now on (0: they
 * watch; kc_informer_set_poll()). */
void kc_factory_set_poll(kc_factory_t *f, int poll_ms);
/* The sums of kc_informer_stats() over f's informers. */
void kc_factory_stats(kc_factory_t *f, kc_informer_stats_t *out);
/* Stop and free every informer; their users must have removed their
 * handlers. NULL is fine. */
void kc_factory_free(kc_factory_t *f);

#endif
