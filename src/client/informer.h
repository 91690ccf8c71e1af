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
 * values into vals (each at most KC_INDEX_VALUE_MAX bytes) and return how
 * many. Runs under the informer's lock: be quick, never call back in. */
#define KC_INDEX_VALUE_MAX 256
typedef size_t (*kc_index_fn)(const json_t *obj, char vals[][KC_INDEX_VALUE_MAX], size_t max);

/* Built-in index functions: by metadata.namespace, by the controller
 * ownerReference's uid, by spec.nodeName (pods). */
size_t kc_index_namespace(const json_t *obj, char vals[][KC_INDEX_VALUE_MAX], size_t max);
size_t kc_index_controller(const json_t *obj, char vals[][KC_INDEX_VALUE_MAX], size_t max);
size_t kc_index_node(const json_t *obj, char vals[][KC_INDEX_VALUE_MAX], size_t max);

/* A new informer over r (ns NULL: all namespaces; selectors NULL: none).
 * resync_ms 0: never. Add handlers and indexes before kc_informer_start(). */
int kc_informer_new(kc_client_t *c, const kc_resource_t *r, const char *ns,
                    const char *label_selector, const char *field_selector, int resync_ms,
                    kc_informer_t **out);
int kc_informer_add_handlers(kc_informer_t *inf, const kc_handlers_t *h);
int kc_informer_add_index(kc_informer_t *inf, const char *name, kc_index_fn fn);
/* Start the informer's thread: list, then watch; relist on 410. */
int kc_informer_start(kc_informer_t *inf);
/* Wait until the first list has been delivered to the handlers.
 * Errors: KP_ETIMEDOUT. */
int kc_informer_wait_synced(kc_informer_t *inf, int timeout_ms);
int kc_informer_synced(kc_informer_t *inf);

/* The cached object "ns/name" (or "name" when cluster-scoped): a new
 * reference to a shared read-only object, or NULL. */
json_t *kc_informer_get(kc_informer_t *inf, const char *key);
/* Every cached object whose index `index` has value `value` (index NULL:
 * every object). *objs is malloc'd, each entry a reference: free with
 * kc_objs_free(). */
int kc_informer_list(kc_informer_t *inf, const char *index, const char *value, json_t ***objs,
                     size_t *n);
void kc_objs_free(json_t **objs, size_t n);
/* The key of an object as the cache files it ("ns/name" or "name"). */
int kc_key_of(const json_t *obj, char *buf, size_t n);
/* The resourceVersion the cache reflects. */
const char *kc_informer_last_rv(kc_informer_t *inf, char *buf, size_t n);
void kc_informer_stop(kc_informer_t *inf); /* joins the thread; then free */
void kc_informer_free(kc_informer_t *inf);

#endif
