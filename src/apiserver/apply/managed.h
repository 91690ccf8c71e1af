/*
 * managed.h -- field ownership (metadata.managedFields) and server-side apply.
 *
 * Every write records who set which fields, as Kubernetes does:
 * metadata.managedFields is a list of entries
 *   {manager, operation: "Apply" | "Update", apiVersion, time,
 *    fieldsType: "FieldsV1", fieldsV1: SET[, subresource]}
 * (keys in that order; manager, time and subresource left out when empty),
 * sorted Apply before Update, then by time, manager, apiVersion,
 * subresource. An entry is one per (manager, Apply, subresource) and one per
 * (manager, Update, apiVersion, subresource). SET is Kubernetes' FieldsV1
 * encoding of a set of field paths, keys in Kubernetes' order:
 *   "f:<name>"          a field of an object or an entry of a map
 *   "k:<json of keys>"  an element of a keyed list, keys sorted, Go JSON:
 *                       k:{"containerPort":80,"protocol":"TCP"}
 *   "v:<json value>"    an element of a set list (v:"example.com/x")
 *   "."                 the element or field itself, when its children are
 *                       listed too
 * Leaves are {}. Scalars, atomic lists and atomic maps are leaves; so are
 * object fields holding null or {} in an applied config.
 *
 * Fields that nobody owns: apiVersion, kind, and metadata's name, namespace,
 * uid, resourceVersion, generation, creationTimestamp, deletionTimestamp,
 * deletionGracePeriodSeconds, selfLink, clusterName and managedFields, plus
 * the top-level fields in m->reset (status on a main resource with a status
 * subresource; everything but status and metadata on /status): they are
 * neither owned nor conflicts, and never pruned; an apply still merges
 * config's values for them, for the caller to reset as Kubernetes'
 * strategies do.
 *
 * Lists follow the schema's list rules (schema.h): x-kubernetes-list-type
 * "map" with its map keys (or, without a list type, a patch merge key) is
 * keyed; "set" (or patch strategy merge without a key) is a set of scalars;
 * any other list is atomic. Objects with additionalProperties are granular
 * maps unless x-kubernetes-map-type is "atomic" (on the field or its
 * definition). Values the schema does not describe are deduced as
 * Kubernetes does for schemaless data (objects granular, lists atomic);
 * untyped schema nodes (RawExtension) are leaves; with no kind schema at
 * all (`node` NULL, a schemaless custom resource) every field is deduced.
 * A missing list key
 * "protocol" of ContainerPort/ServicePort defaults to "TCP", as Kubernetes'
 * typed schema has it.
 *
 * Objects compare as Kubernetes' Go objects do: object fields a Go zero
 * value holds (required fields, and metadata, spec, status, template,
 * jobTemplate, strategy, updateStrategy, resources, ... outside lists) count
 * as present, so they get no "." of their own; a create compares against
 * the kind's zero value (f:spec has no ".", f:labels has one).
 *
 * All functions leave their inputs alone except `obj` as stated. Errors:
 * KP_ENOMEM; KP_EINVAL (bad arguments, or a config that cannot be applied,
 * with Kubernetes' message in err); KP_ECORRUPT (live's managedFields do not
 * decode); KP_ECONFLICT (see api_managed_apply()). Thread-safe: no state.
 */
#ifndef KP_MANAGED_H
#define KP_MANAGED_H

#include <jansson.h>
#include <stddef.h>

#include "apiserver/schema/schema.h"

/* Who writes, and how: shared by both calls. Strings are borrowed for the
 * call; manager, api_version and now must not be NULL. */
typedef struct api_manager {
    const char *manager;      /* fieldManager, or derived from the User-Agent */
    const char *api_version;  /* "apps/v1", "v1": the version the client used */
    const char *subresource;  /* NULL or "" for the main resource, or "status", "scale" */
    const char *now;          /* RFC 3339 time (UTC, seconds) for the entry */
    const char *const *reset; /* top-level fields not tracked; NULL-terminated, may be NULL */
} api_manager_t;

/* After a create (old NULL), update or non-apply patch: sets obj's
 * metadata.managedFields (the object about to be stored; call it after
 * defaulting, so that defaults belong to the writer as in Kubernetes).
 *   - Which entries to start from: on a subresource, old's; else if obj
 *     carries [] or [{}], none (a reset); else obj's own if they decode and
 *     are not empty (Kubernetes lets a client write them: a GET-modify-PUT
 *     sends old's back unchanged); else old's.
 *   - Starting from none on an update (not a create) leaves the object
 *     untracked: obj ends without managedFields.
 *   - Every other entry loses the paths added, changed or removed between
 *     old (or the kind's zero value) and obj; m->manager's Update entry
 *     gains the added and changed ones and gets time m->now, if there are
 *     any (a removal alone adds no entry and keeps the time).
 *   - Entries left empty are dropped; past 10 Update entries the oldest
 *     merge into "ancient-changes" (one per apiVersion).
 * A value whose lists cannot be keyed (an element without its key) leaves
 * obj without managedFields and returns 0, as Kubernetes does. Errors:
 * KP_EINVAL (missing arguments), KP_ENOMEM (obj may then have lost its
 * managedFields). */
int api_managed_update(const api_schema_t *s, const json_t *node, const json_t *old, json_t *obj,
                       const api_manager_t *m);

/* Server-side apply of `config` by m->manager to `live` (NULL: the object
 * does not exist yet). `node` is the kind's schema. `config` is the body as
 * sent: not defaulted (its field set is what it sets); default *out
 * instead. On 0, *out (new reference, sharing nothing with the inputs) is
 * the object to store, with managedFields:
 *   - live with config merged in: objects and maps merge, keyed lists merge
 *     by key (live's order for untouched elements, config's for the rest),
 *     set lists as sets, atomic lists and scalars are replaced;
 *   - minus every field the manager's previous Apply entry had, the new
 *     config lacks and no entry (Apply or Update) owns; a removed keyed
 *     element or map entry goes whole, a map or list left empty goes too;
 *   - the manager's Apply entry is exactly config's field set; its time
 *     becomes m->now only if the object changed (a new entry on an
 *     unchanged object has no time);
 *   - a live object without entries first gets a "before-first-apply"
 *     Update entry owning everything it holds.
 * A path config adds or changes that another entry owns is a conflict (the
 * same value is not: both then own it). With `force` the others lose those
 * paths. Without: KP_ECONFLICT, *conflicts (new reference, if conflicts is
 * not NULL) a JSON array of Status causes {reason: "FieldManagerConflict",
 * message: "conflict with \"<manager>\"[ with subresource \"s\"][ using
 * <apiVersion> (Update entries)]", field: ".spec.replicas"}, and err holds
 * Kubernetes' message: 'Apply failed with 1 conflict: conflict with "m"
 * using apps/v1: .spec.replicas', or with N > 1 'Apply failed with N
 * conflicts: conflicts with "m" using apps/v1:\n- .spec.replicas\n- ...'
 * (one group per entry, in order of Kubernetes' manager identifier).
 * For manager "kubectl" (kubectl's upgrade from client-side apply),
 * conflicts over fields the kubectl.kubernetes.io/last-applied-configuration
 * annotation holds with live's value are forced, and that annotation, when
 * the object has it, is rewritten to config (Go JSON, newline-terminated).
 * KP_EINVAL (err says why, in Kubernetes' words; Kubernetes answers 500 for
 * the list ones, prefixed "failed to create typed patch object (<ns>/<name>;
 * <gvk>): "): config has metadata.managedFields ("metadata.managedFields
 * must be nil"); a keyed element without its key or a repeated key
 * (".spec.template.spec.containers: duplicate entries for key
 * [name=\"a\"]"). KP_ECORRUPT: live's entries do not decode. */
int api_managed_apply(const api_schema_t *s, const json_t *node, const json_t *live,
                      const json_t *config, const api_manager_t *m, int force, json_t **out,
                      json_t **conflicts, char *err, size_t errlen);

#endif
