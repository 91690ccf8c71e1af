/*
 * yamljson.h -- YAML documents as JSON values (libyaml + jansson).
 *
 * For server-side apply bodies (application/apply-patch+yaml) and
 * manifests. YAML 1.1 as Kubernetes reads it (sigs.k8s.io/yaml): plain
 * scalars become null (null, ~, empty), booleans (true/false, and YAML 1.1's
 * yes/no/on/off in any of their spellings), integers, floats, or strings;
 * quoted scalars are always strings. Anchors and aliases are expanded. Map
 * keys must be scalars.
 */
#ifndef KP_YAMLJSON_H
#define KP_YAMLJSON_H

#include <jansson.h>
#include <stddef.h>

/* Parse the first document of `text` (len bytes). On 0, *out is a new
 * reference (JSON null for an empty document). Errors: KP_EINVAL with a
 * message in err (line and column of the problem), KP_ETOOLARGE when the
 * nesting passes max_depth or an alias expansion passes max_nodes nodes,
 * KP_ENOMEM. */
int yaml_to_json(const char *text, size_t len, int max_depth, size_t max_nodes, json_t **out,
                 char *err, size_t errlen);

#endif
