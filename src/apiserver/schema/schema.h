/*
 * schema.h -- the facts of the API's types: names, types, required fields and
 * the list and patch rules, derived from Kubernetes' OpenAPI v2 document.
 *
 * scripts/gen-openapi-facts reads the reference document and writes
 * openapi_facts_*.c: the document's `definitions` with every description and
 * other prose removed (type facts only), a file per part of the API. api_schema_load() parses it once at
 * server start; the result is immutable and shared by every thread.
 *
 * A schema node is a borrowed jansson object in OpenAPI v2 form:
 *   {"type": "object", "properties": {...}, "required": [...]}
 *   {"type": "array", "items": NODE, "x-kubernetes-list-type": "map", ...}
 *   {"type": "object", "additionalProperties": NODE}        (a map)
 *   {"type": "string", "format": "int-or-string"}            (and other scalars)
 *   {"$ref": "#/definitions/NAME"}
 * A field's node, as its parent declares it, may hold a $ref next to the
 * field's own rules (DeploymentSpec.strategy: {"$ref": ..., "x-kubernetes-
 * patch-strategy": "retainKeys"}): read the rules from the declared node and
 * the shape from api_schema_resolve(node). Nodes live as long as the
 * api_schema_t.
 *
 * Patch and list rules (as in Kubernetes' strategic merge patch):
 *   x-kubernetes-patch-merge-key    the field that keys a list's elements
 *   x-kubernetes-patch-strategy     "merge", "retainKeys", "merge,retainKeys",
 *                                   "replace"
 *   x-kubernetes-list-type          "atomic", "set", "map" (server-side apply)
 *   x-kubernetes-list-map-keys      the keys of a "map" list
 *   x-kubernetes-map-type           "atomic", "granular"
 */
#ifndef KP_SCHEMA_H
#define KP_SCHEMA_H

#include <jansson.h>
#include <stddef.h>

/* The generated facts, one part of the API per file (openapi_facts_*.c):
 * each compact JSON {"definitions": {...}}; the list ends with a NULL name. */
typedef struct api_facts_part {
    const char *name;   /* "core", "workloads", "meta", "cluster" */
    const char *json;
    const size_t *len;
} api_facts_part_t;
extern const api_facts_part_t api_openapi_facts[];

typedef struct api_schema api_schema_t;

/* Parse the facts. *out is the caller's; free it with api_schema_free().
 * Errors: KP_ENOMEM, KP_ECORRUPT (the facts do not parse). */
int api_schema_load(api_schema_t **out);
void api_schema_free(api_schema_t *s);

/* Every definition, {"io.k8s.api.apps.v1.Deployment": NODE, ...}; borrowed. */
const json_t *api_schema_definitions(const api_schema_t *s);

/* The definition named `name` (e.g. "io.k8s.api.core.v1.PodSpec"), NULL if none. */
const json_t *api_schema_def(const api_schema_t *s, const char *name);

/* The top-level definition of a kind (by x-kubernetes-group-version-kind;
 * group "" for core). *name, if not NULL, gets the definition's name (borrowed).
 * NULL if the API has no such kind. */
const json_t *api_schema_kind(const api_schema_t *s, const char *group, const char *version,
                              const char *kind, const char **name);

/* Follow $ref links: the node itself if it has none; NULL for NULL or a
 * dangling reference. */
const json_t *api_schema_resolve(const api_schema_t *s, const json_t *node);

/* The schema of field `field` of an object node, as declared (see above):
 * the property, else the additionalProperties schema of a map. NULL if the
 * node declares neither (an unknown field) or node is NULL. `node` may itself
 * be a declared (unresolved) node. */
const json_t *api_schema_field(const api_schema_t *s, const json_t *node, const char *field);

/* The element schema of an array node, declared or resolved; the result is
 * resolved. NULL if not an array. */
const json_t *api_schema_items(const api_schema_t *s, const json_t *node);

/* Shapes of a resolved node. */
typedef enum api_schema_type {
    API_SCHEMA_ANY = 0,  /* no type: any JSON (RawExtension, preserve-unknown) */
    API_SCHEMA_OBJECT,   /* declared properties */
    API_SCHEMA_MAP,      /* additionalProperties only */
    API_SCHEMA_ARRAY,
    API_SCHEMA_STRING,
    API_SCHEMA_INTEGER,
    API_SCHEMA_NUMBER,
    API_SCHEMA_BOOLEAN,
    API_SCHEMA_INT_OR_STRING,
} api_schema_type_t;
/* The shape of a node (resolved first); API_SCHEMA_ANY for NULL. */
api_schema_type_t api_schema_type(const api_schema_t *s, const json_t *node);

/* The list rules of a declared array field (the property that holds the
 * list, e.g. PodSpec.containers, carries them). Strings are borrowed; NULL
 * or 0 when absent. */
typedef struct api_list_rules {
    const char *merge_key;  /* x-kubernetes-patch-merge-key */
    int merge;              /* patch strategy includes "merge" */
    int retain_keys;        /* patch strategy includes "retainKeys" */
    const char *list_type;  /* x-kubernetes-list-type: "atomic", "set", "map" */
    const json_t *map_keys; /* x-kubernetes-list-map-keys: array of strings */
} api_list_rules_t;
void api_schema_list_rules(const json_t *node, api_list_rules_t *out);

/* 1 if the declared field's patch strategy includes retainKeys
 * (DeploymentSpec.strategy, PodSpec.volumes elements, ...). */
int api_schema_retain_keys(const json_t *node);

#endif
