/*
 * fields.h -- an object against its kind's schema, as Kubernetes' decoder
 * sees it: fields the type does not declare are dropped (and reported, for
 * fieldValidation), and a value of the wrong JSON type is a decoding error.
 */
#ifndef KP_FIELDS_H
#define KP_FIELDS_H

#include <jansson.h>
#include <stddef.h>

#include "apiserver/schema/schema.h"

/* Walk `obj` with its schema `node` (a kind's definition, or a
 * CustomResourceDefinition's structural schema). Every field no schema
 * declares is removed from obj and its path ("spec.replicaz",
 * "spec.template.spec.containers[0].imagePullPolicyy") appended to `unknown`
 * (a JSON array; NULL to only drop them). Values under a node without a type
 * or with x-kubernetes-preserve-unknown-fields are kept as they are; null is
 * accepted anywhere, as Go decodes it to the zero value.
 * Returns 0, or KP_EINVAL for the first value whose JSON type does not match,
 * with Go's message in err ("json: cannot unmarshal string into Go struct
 * field DeploymentSpec.spec.replicas of type int32"); obj may then be pruned
 * part-way. `kind` names the top-level struct in that message. */
int api_fields_prune(const api_schema_t *s, const json_t *node, const char *kind, json_t *obj,
                     json_t *unknown, char *err, size_t errlen);
/* The same for an update of `base` (borrowed; NULL: none), the version
 * being replaced, which was checked against this schema when it was
 * written: a value of obj equal to base's at the same path is not walked
 * (nothing under it can be unknown or mistyped), which leaves a status
 * update little to walk. Only for schemas that do not change between the
 * two versions (built-in kinds; a CRD's schema may have). */
int api_fields_prune_since(const api_schema_t *s, const json_t *node, const char *kind,
                           json_t *obj, const json_t *base, json_t *unknown, char *err,
                           size_t errlen);

#endif
