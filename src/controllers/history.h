/*
 * history.h -- ControllerRevisions: a workload's template history (apps/v1).
 *
 * The StatefulSet and DaemonSet controllers keep each version of their pod
 * template as a ControllerRevision named "<owner>-<hash>" whose data is the
 * template patch, numbered by .revision (what Kubernetes'
 * pkg/controller/history provides). The hash helpers are also the
 * Deployment controller's pod-template-hash.
 *
 * All arguments are borrowed and read-only unless a function says otherwise.
 */
#ifndef KP_CTRL_HISTORY_H
#define KP_CTRL_HISTORY_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define CTRL_HASH_MAX 16 /* a hash label value with its NUL */
/* On pods (StatefulSet: the revision's name; DaemonSet: the template hash). */
#define CTRL_HASH_LABEL "controller-revision-hash"
/* On the ControllerRevisions Kubernetes' history package makes. */
#define CTRL_REVISION_HASH_LABEL "controller.kubernetes.io/hash"

/* The controller-revision-hash of revision data `data` (the JSON object a
 * ControllerRevision's data holds) and collisionCount: FNV-32a over its
 * canonical compact JSON (and the count), safe-encoded as Kubernetes'
 * rand.SafeEncodeString. The count (if >= 0) goes in as its decimal text,
 * as Kubernetes' HashControllerRevision writes its probe. Errors: KP_ENOMEM. */
int ctrl_history_hash(const json_t *data, int64_t collision_count, char out[CTRL_HASH_MAX]);
/* A new ControllerRevision object (new reference) for `owner` (apiVersion/
 * kind given): name <owner>-<hash>, namespace, labels = the owner's template
 * labels plus the hash (under CTRL_REVISION_HASH_LABEL, as Kubernetes'
 * NewControllerRevision labels it; a DaemonSet adds CTRL_HASH_LABEL itself),
 * controller ownerReference, data (borrowed, copied), revision. NULL: out of
 * memory. */
json_t *ctrl_history_new(const json_t *owner, const char *api_version, const char *kind,
                         const json_t *data, int64_t revision, int64_t collision_count);
/* The data of a revision of owner's spec.template, as Kubernetes' getPatch
 * (pkg/controller/daemon/update.go, statefulset/stateful_set_utils.go)
 * makes it: {"spec":{"template":{..., "$patch":"replace"}}} with the
 * members Go's typed encoding adds (template metadata.creationTimestamp
 * null, containers' resources {}) and every object's keys sorted, so its
 * compact dump is the bytes Kubernetes stores. New reference; NULL: out of
 * memory or nested too deep. */
json_t *ctrl_history_template_patch(const json_t *owner);
/* Revisions in `revs` (borrowed objects) sorted by .revision ascending, in
 * place (ties by name, so the order is stable). */
void ctrl_history_sort(const json_t **revs, size_t n);
/* Are the data of two revisions (ControllerRevision objects) equal
 * (semantic JSON equality)? */
int ctrl_history_equal(const json_t *a, const json_t *b);
/* .revision of ControllerRevision rev (0 if absent). */
int64_t ctrl_history_revision(const json_t *rev);
/* The highest .revision among revs, 0 if none. */
int64_t ctrl_history_max_revision(const json_t *const *revs, size_t n);

/* ---- the hashing both history and pod-template-hash use ---- */

/* FNV-32a: continue hash h (start with CTRL_FNV32A_INIT) over n bytes. */
#define CTRL_FNV32A_INIT 2166136261u
uint32_t ctrl_fnv32a(uint32_t h, const void *data, size_t n);
/* Map each byte of s through "bcdfghjklmnpqrstvwxz2456789" (by value
 * modulo 27), as Kubernetes' rand.SafeEncodeString; out gets at most n-1
 * bytes and a NUL. */
void ctrl_safe_encode(const char *s, char *out, size_t n);
/* h as a decimal, safe-encoded into out (what every hash label holds). */
void ctrl_hash_encode(uint32_t h, char out[CTRL_HASH_MAX]);

#endif
