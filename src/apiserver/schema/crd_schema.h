/*
 * crd_schema.h -- a CustomResourceDefinition version's openAPIV3Schema:
 * checking the schema itself, and pruning, defaulting and validating the
 * custom objects it describes, as Kubernetes' apiextensions server does
 * (pkg/apiserver/schema for structural schemas, pruning and defaulting;
 * kube-openapi's validator for the checks, worded as kube-openapi words them).
 *
 * Every call borrows its arguments and keeps no pointer to them; none keeps
 * state between calls, so they are safe from any thread. A cause is what
 * object.h api_cause() appends: {"reason", "message", "field"}.
 *
 * Not supported (ignored silently, as if absent): x-kubernetes-validations
 * (CEL rules), validation ratcheting on update, and the ObjectMeta checks of
 * x-kubernetes-embedded-resource objects. Patterns are Go RE2 syntax run on
 * POSIX regcomp after translation (\d \w \s and negations, (?:), lazy
 * quantifiers, (?i) at the start); what cannot be translated (lookaround,
 * backreferences, \p{..}) makes the pattern invalid.
 */
#ifndef KP_CRD_SCHEMA_H
#define KP_CRD_SCHEMA_H

#include <jansson.h>

/* Check a CRD version's openAPIV3Schema as the apiextensions server does on
 * CRD create/update, appending one cause per problem with field paths under
 * `path` (e.g. "spec.versions[0].schema.openAPIV3Schema"):
 *   - structural: every node has a type (except under x-kubernetes-int-or-
 *     string / x-kubernetes-preserve-unknown-fields), arrays have items, the
 *     root is type object, the root's metadata restricts only name and
 *     generateName, and allOf/anyOf/oneOf/not hold value validations only;
 *   - forbidden keywords ($ref, id, definitions, dependencies, patternProperties,
 *     additionalItems, uniqueItems, additionalProperties next to properties,
 *     type null, defaults in top-level metadata/apiVersion/kind);
 *   - x-kubernetes-list-type / list-map-keys / map-type consistency;
 *   - patterns compile; defaults are pruned and validate against their node.
 * Structural causes come sorted by "field: message", as Kubernetes sorts them.
 * Nothing is appended for a valid schema. */
void api_crd_schema_check(const json_t *schema, const char *path, json_t *causes);

/* Prune then default `obj` (a custom object, changed in place) by `schema`:
 *   1. drop the object fields the schema does not declare; apiVersion, kind
 *      and metadata are kept at the root and in x-kubernetes-embedded-resource
 *      objects; x-kubernetes-preserve-unknown-fields keeps a subtree (its
 *      declared fields are still pruned inside);
 *   2. drop null values of fields that are neither nullable nor defaulted;
 *   3. apply `default`s where a declared field is absent (or null and not
 *      nullable), recursively, including inside default values just set.
 * A NULL or non-object schema or object leaves `obj` untouched. */
void api_crd_prune_and_default(const json_t *schema, json_t *obj);

/* Step 3 alone: what Kubernetes' storage decoder does to a custom object
 * read from storage, so that defaults added to the schema later show on
 * objects stored before. */
void api_crd_default(const json_t *schema, json_t *obj);
/* Does `schema` set a `default` anywhere (else api_crd_default is a no-op)? */
int api_crd_has_defaults(const json_t *schema);

/* Validate `obj` against `schema`, appending one cause per violation, worded
 * as kube-openapi and field.Error word them, e.g.
 *   {"reason": "FieldValueTypeInvalid", "field": "spec.replicas", "message":
 *    "Invalid value: \"string\": spec.replicas in body must be of type integer:
 *    \"string\""}
 *   {"reason": "FieldValueRequired", "field": "spec.cronSpec",
 *    "message": "Required value"}
 *   {"reason": "FieldValueNotSupported", "field": "spec.mode", "message":
 *    "Unsupported value: \"x\": supported values: \"a\", \"b\""}
 * Checked: type (integer vs number, nullable, int-or-string), format, enum,
 * minimum/maximum (exclusive too), multipleOf, minLength/maxLength, pattern,
 * minItems/maxItems, uniqueItems, minProperties/maxProperties, required,
 * additionalProperties (schema or false), allOf/anyOf/oneOf/not, then the
 * uniqueness of x-kubernetes-list-type set and map lists (FieldValueDuplicate).
 * A failed allOf/anyOf/oneOf/not is reported as Kubernetes does: field ""
 * and a message naming the path, e.g. "Invalid value: \"\": \"spec\" must
 * validate at least one schema (anyOf)". The root's metadata is left to the
 * generic ObjectMeta checks, except the name/generateName restrictions the
 * schema may declare. */
void api_crd_validate(const json_t *schema, const json_t *obj, json_t *causes);

#endif
