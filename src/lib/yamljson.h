/*
 * yamljson.h -- YAML documents as JSON values (libyaml's event API + jansson).
 *
 * For server-side apply bodies (application/apply-patch+yaml) and
 * kubeconfig files. YAML 1.1 as Kubernetes reads it (sigs.k8s.io/yaml):
 * plain scalars become null (null, ~, empty), booleans (true/false, and YAML
 * 1.1's yes/no/on/off in any of their spellings), integers, floats, or
 * strings; quoted scalars and scalars tagged !!str are always strings.
 * Anchors and aliases are expanded (into copies: no two places of the result
 * share a value). Map keys must be scalars (an alias of one included); a key
 * is the scalar's text. Only the first document of a stream is read; what
 * follows its end is not parsed.
 *
 * Budgets, each checked while parsing, before the work it bounds:
 *   - depth: at most max_depth sequences and mappings nested in one another
 *     (as JSON bodies count it: "[[1]]" is 2 deep). The start of a collection
 *     past the cap is refused at once: nothing inside it is parsed.
 *   - output bytes: the result's size, estimated as compact JSON text
 *     (a scalar its length + 2, a collection 2, a mapping key its length + 3,
 *     1 between elements; escapes are not counted), including what aliases
 *     expand to, at most max_bytes.
 *   - alias bytes: of those, at most max_alias_bytes may come from alias
 *     expansions. An anchored node's size is counted once, when it ends;
 *     each use of its alias adds it again and is refused past the budget
 *     before anything is copied. (go-yaml refuses "excessive aliasing" by a
 *     ratio of alias-driven to all decoded nodes; bytes are what memory
 *     costs, so a large scalar aliased a few times is bounded too.)
 * Memory: libyaml's buffers for the text, and jansson values for at most
 * max_bytes of estimated JSON (a value of a few bytes costs tens of bytes in
 * jansson). CPU: linear in the bytes parsed, times the flow nesting for
 * libyaml's scanner (see yamljson.c), which max_depth bounds.
 *
 * Thread-safety: none needed; no shared state.
 */
#ifndef KP_YAMLJSON_H
#define KP_YAMLJSON_H

#include <jansson.h>
#include <stddef.h>

typedef struct yamljson_limits {
    int max_depth;          /* nested sequences and mappings; >= 1 */
    size_t max_bytes;       /* estimated JSON size of the result */
    size_t max_alias_bytes; /* of max_bytes, the part alias expansions may add */
} yamljson_limits_t;

/* Parse the first document of `text` (len bytes) within the budgets of
 * `lim`. On 0, *out is a new reference (JSON null for an empty document).
 * Errors, with a message in err naming the line and column where parsing
 * stopped ("yaml: line L, column C: ..."):
 *   KP_EINVAL     not YAML, a key that is not a scalar, an unknown anchor
 *   KP_ETOOLARGE  a budget of `lim` was passed
 *   KP_ENOMEM
 * On error *out is NULL. */
int yaml_to_json(const char *text, size_t len, const yamljson_limits_t *lim, json_t **out,
                 char *err, size_t errlen);

#endif
