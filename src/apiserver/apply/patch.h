/*
 * patch.h -- the three patch formats of Kubernetes, as pure functions on JSON.
 *
 *   api_json_patch()            application/json-patch+json (RFC 6902)
 *   api_merge_patch()           application/merge-patch+json (RFC 7386)
 *   api_strategic_merge_patch() application/strategic-merge-patch+json
 *
 * None of them knows about HTTP or the store: the REST layer reads the object,
 * applies the patch to a copy, and sends the result down the update path.
 * Errors are KP_* codes with a message in `err` (always NUL-terminated), which
 * the caller turns into a Status:
 *   KP_EINVAL     the patch document itself is malformed       -> 400 BadRequest
 *   KP_ETOOLARGE  a JSON patch of more than API_JSON_PATCH_MAX  -> 413
 *                 operations, or whose result would be larger than
 *                 its byte limit
 *   KP_ECONFLICT  the patch cannot be applied to this object    -> 422 (a failed
 *                 "test", a path that does not exist, a list of lists, ...)
 *   KP_ENOMEM
 * On error the target may have been changed part-way: patch a copy.
 */
#ifndef KP_PATCH_H
#define KP_PATCH_H

#include <jansson.h>
#include <stddef.h>

#include "apiserver/schema/schema.h"

#define API_JSON_PATCH_MAX 10000 /* operations per JSON patch, as Kubernetes */
/* Bytes the "copy" operations of one JSON patch may add together, counted
 * as compact JSON before each copy is made: Kubernetes' JSONPatchMaxCopyBytes
 * (json-patch's AccumulatedCopySizeLimit), 3 MiB. */
#define API_JSON_PATCH_COPY_MAX (3u << 20)

/* What a JSON patch may build. Sizes are of the compact JSON text (the
 * bytes Go's encoder would write: <, > and & count as \u00XX). */
typedef struct api_patch_limits {
    size_t copy_max;   /* accumulated bytes of "copy" values */
    size_t result_max; /* the patched document; KP_ETOOLARGE beyond */
    int depth_max;     /* nesting of the patched document (the root object
                        * is 1); KP_EINVAL beyond */
} api_patch_limits_t;

/* The compact JSON size of v, counted up to `limit`: the walk stops as soon
 * as the count passes it and then returns limit + 1, so the cost is bounded
 * by the limit, not by v. Nesting deeper than `depth_max` levels (v itself
 * is level 1 if it is an object or array) is not walked: *too_deep (if not
 * NULL) is set to 1 and the size returned is a lower bound. Thread-safe. */
size_t api_json_size(const json_t *v, size_t limit, int depth_max, int *too_deep);

/* Apply the RFC 6902 operations `ops` (a JSON array; borrowed, never
 * referenced by the result: values are deep-copied) to *doc, in order. *doc
 * may be replaced (an op on the root path ""); the old value is then
 * released, and *doc is always a valid document the caller owns, even after
 * an error. The whole patch is checked before any op runs:
 *   KP_EINVAL     not an array of objects, an unknown or missing "op", a
 *                 missing "path" / "value" / "from", a malformed pointer
 *   KP_ETOOLARGE  more than API_JSON_PATCH_MAX ops ("The allowed maximum
 *                 operations in a JSON patch is 10000, got N")
 *   KP_ECONFLICT  an op does not apply: a missing member or parent, an index
 *                 out of range (indices are decimals without leading zeros;
 *                 "-" appends), a failed "test" (a missing member tests equal
 *                 to null, as in Kubernetes), a move into its own child
 *   KP_ENOMEM
 * Ops before a failing one stay applied (patch a copy). */
int api_json_patch(json_t **doc, const json_t *ops, char *err, size_t errlen);

/* api_json_patch() within `lim` (api_json_patch() itself has no byte or
 * depth bound: it is for trusted documents and tests). Every operation is
 * counted before it is done, so a patch over a limit stops at the first op
 * that would pass it, having built nothing larger than the limits:
 *   KP_ECONFLICT  a "copy" would take the accumulated copies past
 *                 lim->copy_max ("Unable to complete the copy, the
 *                 accumulated size increase of copy is N, exceeding the limit
 *                 M", json-patch's text; N is counted up to just past M)
 *   KP_ETOOLARGE  an op would make the document larger than lim->result_max
 *                 ("Request entity too large: limit is M", Kubernetes' text
 *                 for its request byte limit)
 *   KP_EINVAL     the result nests deeper than lim->depth_max (checked at
 *                 the end, and for each copy before it is made)
 * and the errors of api_json_patch(). */
int api_json_patch_limited(json_t **doc, const json_t *ops, const api_patch_limits_t *lim,
                           char *err, size_t errlen);

/* RFC 7386: merge the object `patch` into the object `target` (null deletes,
 * objects merge, creating objects where the target has none or a non-object;
 * everything else, arrays included, replaces). Values are copied out of the
 * patch. Does nothing unless both are objects; an allocation failure leaves
 * that one field unchanged. */
void api_merge_patch(json_t *target, const json_t *patch);

/* Kubernetes' strategic merge patch of the object `patch` (borrowed, left
 * unchanged) into the object `target` (changed in place), whose schema is
 * `node` (a kind's definition from api_schema_kind(); NULL merges every list
 * as a whole, as for kinds without facts; fields the schema does not declare
 * behave the same). Lists merge by their x-kubernetes-patch-merge-key when
 * the field's strategy is "merge", primitive lists with strategy "merge"
 * merge as sets, other lists are replaced; maps merge unless the strategy is
 * "replace". A merged list keeps the patch's order for the elements the
 * patch names, and the live order for the others (Kubernetes' interleaving:
 * elements the live list lacks come before the live-only ones that remain,
 * unless "$setElementOrder" places them).
 * Directives: "$patch": "replace" (a map or a list) | "delete" (a keyed list
 * element; in a map it empties the map, as Kubernetes does); "$patch":
 * "merge" is refused as Kubernetes refuses it; "$retainKeys" (whatever the
 * field's strategy, as the server does; every non-null key of the patch map
 * must be listed), "$setElementOrder/<list>", "$deleteFromPrimitiveList/
 * <list>"; null deletes a field. Directives never remain in the result,
 * even inside values the target lacks. Errors (message in err):
 *   KP_EINVAL     a malformed directive, a patch element without its merge
 *                 key, a patch list out of its "$setElementOrder" order
 *   KP_ECONFLICT  a list of lists, list elements of different JSON types, a
 *                 live list element without the merge key
 *   KP_ENOMEM
 * On error the target may have been changed part-way (patch a copy). */
int api_strategic_merge_patch(const api_schema_t *s, const json_t *node, json_t *target,
                              const json_t *patch, char *err, size_t errlen);

#endif
