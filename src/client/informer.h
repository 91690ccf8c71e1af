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
 * resync_ms 0: never. Add handlers and indexes before kc_informer_start()
 * (after it: KP_EBUSY; an index name twice: KP_EEXIST). r's strings must
 * outlive the informer (the kc_* constants do). Errors: KP_EINVAL, KP_ENOMEM. */
int kc_informer_new(kc_client_t *c, const kc_resource_t *r, const char *ns,
                    const char *label_selector, const char *field_selector, int resync_ms,
                    kc_informer_t **out);
int kc_informer_add_handlers(kc_informer_t *inf, const kc_handlers_t *h);
int kc_informer_add_index(kc_informer_t *inf, const char *name, kc_index_fn fn);
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

#endif
