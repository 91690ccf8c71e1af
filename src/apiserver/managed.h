/*
 * managed.h -- field ownership (metadata.managedFields) and server-side apply.
 *
 * Every write records who set which fields, as Kubernetes does:
 * metadata.managedFields is a list of entries
 *   {manager, operation: "Apply" | "Update", apiVersion, time,
 *    fieldsType: "FieldsV1", fieldsV1: SET[, subresource]}
 * where SET is Kubernetes' FieldsV1 encoding of a set of field paths:
 *   "f:<name>"          a field of an object or map
 *   "k:<json of keys>"  an element of a list keyed by its map keys / merge key
 *                       (e.g. k:{"name":"nginx"})
 *   "v:<json value>"    an element of a set-valued (primitive) list
 *   "."                 the element or field itself, when its children are
 *                       listed too
 * Atomic lists and maps, and scalars, are leaves ({}).
 *
 * Fields that nobody owns: apiVersion, kind, and metadata's name, namespace,
 * uid, resourceVersion, generation, creationTimestamp, deletionTimestamp,
 * deletionGracePeriodSeconds, selfLink and managedFields, plus the top-level
 * fields the caller resets (status on a main resource with a status
 * subresource, everything but status and metadata on /status).
 *
 * Lists are walked with the schema's list rules (schema.h): a list with
 * x-kubernetes-list-type "map" (or a patch merge key) is keyed; "set" lists
 * of scalars use v: entries; any other list is atomic.
 *
 * All functions leave their inputs alone except `obj`/`*out` as stated.
 * Errors: KP_ENOMEM; KP_EINVAL (a config that cannot be applied: e.g. a keyed
 * list element without its key, with a message in err); KP_ECONFLICT (see
 * api_managed_apply()).
 */
#ifndef KP_MANAGED_H
#define KP_MANAGED_H

#include <jansson.h>
#include <stddef.h>

#include "apiserver/schema.h"

/* Who writes, and how: shared by both calls. Strings are borrowed. */
typedef struct api_manager {
    const char *manager;     /* fieldManager, or derived from the User-Agent */
    const char *api_version; /* "apps/v1", "v1": the version the client used */
    const char *subresource; /* "" or "status", "scale" */
    const char *now;         /* RFC 3339 time for the entry */
    const char *const *reset; /* top-level fields not tracked; NULL-terminated, may be NULL */
} api_manager_t;

/* After a create, update or (non-apply) patch: `obj` (the object about to be
 * stored) gets managedFields where `m->manager`, with operation Update, owns
 * every field whose value differs between `old` (NULL for a create) and
 * `obj`, added to what it owned before; other managers lose those fields, and
 * an entry left with no fields is dropped. obj's incoming managedFields are
 * replaced by old's (a client cannot rewrite ownership by sending them),
 * except that an explicit empty list [] clears them, as Kubernetes allows. */
int api_managed_update(const api_schema_t *s, const json_t *node, const json_t *old,
                       json_t *obj, const api_manager_t *m);

/* Server-side apply of `config` by `m->manager` to `live` (NULL: the object
 * does not exist yet). `node` is the kind's schema. On 0, *out (new
 * reference) is the object to store:
 *   - live, with config merged in: objects and maps merge, keyed lists merge
 *     by key, set lists merge as sets, atomic lists and scalars are replaced;
 *   - minus every field the manager owned by an earlier apply, that config no
 *     longer sets, and no other manager owns;
 *   - with managedFields: the manager's Apply entry is exactly config's field
 *     set; with `force`, other managers lose the fields config sets.
 * Without force, a field config sets to a value different from live's that
 * another manager owns is a conflict: KP_ECONFLICT, *conflicts (new
 * reference) a JSON array of Status causes {reason: "FieldManagerConflict",
 * message: "conflict with \"<manager>\"[ using <apiVersion>]", field:
 * ".spec.replicas"}, and err holds Kubernetes' message ("Apply failed with N
 * conflict(s): conflict with \"m\" using apps/v1: .spec.replicas"). */
int api_managed_apply(const api_schema_t *s, const json_t *node, const json_t *live,
                      const json_t *config, const api_manager_t *m, int force, json_t **out,
                      json_t **conflicts, char *err, size_t errlen);

#endif
