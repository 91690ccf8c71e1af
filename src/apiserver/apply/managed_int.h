/*
 * managed_int.h -- what managed.c, managed_set.c and managed_walk.c share.
 * Not for other files: the public contract is managed.h.
 *
 * FIELD SETS (managed_set.c)
 *
 * A set of field paths is a jansson object tree in the shape of Kubernetes'
 * FieldsV1, with one difference that makes every node uniform: a node's
 * key "." (value {}) says the path that leads to the node is itself a
 * member. Every other key is a canonical path element, its value the node
 * of the paths below it:
 *   "f:<name>"            a field of an object or an entry of a map
 *   "k:<Go JSON object>"  an element of a keyed list, keys sorted by name
 *   "v:<Go JSON value>"   an element of a set list
 *   "i:<index>"           an element of an atomic list (never produced here)
 * The root node stands for the empty path and is never a member. A node is
 * never left empty: an operation that empties a child removes it. Element
 * keys are canonical (api__mset_decode() rewrites what it reads), so two
 * equal path elements are two equal strings.
 *
 * Go JSON is JSON as Go's encoders write it (object keys sorted, compact,
 * '<' '>' '&' escaped): the form of FieldsV1 keys and of kubectl's
 * last-applied annotation.
 *
 * VALUE WALKS (managed_walk.c)
 *
 * Schema-directed walks of objects, as structured-merge-diff does them:
 * the field set of a value, the comparison of two values, merging a config
 * into a live object, and removing a set of paths from a value.
 */
#ifndef KP_MANAGED_INT_H
#define KP_MANAGED_INT_H

#include <jansson.h>
#include <stddef.h>

#include "apiserver/schema/schema.h"
#include "lib/buf.h"

#define API__MSET_BUF_MAX ((size_t)1 << 28) /* cap of the text buffers used here */
#define API__MW_DEPTH     160               /* deepest path a walk follows */

/* --- Go-compatible JSON and text (managed_set.c) ---------------------- */

/* Append `v` as Go's encoding/json writes it: object keys sorted, compact.
 * `stdlib` selects Go's own escapes for \b and \f (as \b, \f) over
 * json-iterator's (\u0008, \u000c). Errors: KP_ENOMEM, KP_ETOOLARGE. */
int api__gojson(const json_t *v, int stdlib, buf_t *b);

/* Append s quoted as Go's %q does ("a\"b"). Errors as buf_append(). */
int api__goquote(const char *s, buf_t *b);

/* 1 if two JSON values are equal as structured-merge-diff compares them
 * (integers and reals compare by value). */
int api__val_equal(const json_t *a, const json_t *b);

/* -1, 0, 1: the total order of structured-merge-diff's value.Compare. */
int api__val_compare(const json_t *a, const json_t *b);

/* 1 if `text` is one JSON value (any = 0: an object or array) as jansson
 * reads it, checked without allocating: a json_loads() of it that failed
 * ran out of memory (jansson reports that as a syntax error). */
int api__json_valid(const char *text, int any);

/* --- path elements ---------------------------------------------------- */

/* "f:<name>" into b (reset first). Errors as buf_append(). */
int api__pe_field(const char *name, buf_t *b);

/* The element key of keyed-list element `keys` (an object holding just the
 * key fields), "k:{...}", into b (reset first). */
int api__pe_key(const json_t *keys, buf_t *b);

/* The element key of set-list element `v`, "v:<json>", into b (reset first). */
int api__pe_value(const json_t *v, buf_t *b);

/* Append the path pev[0..n) as Kubernetes prints paths (fieldpath.Path's
 * String): .spec.containers[name="nginx"].image, .metadata.finalizers[="x"].
 * Errors as buf_append(). */
int api__path_display(const char *const *pev, size_t n, buf_t *b);

/* --- sets ------------------------------------------------------------- */

/* Mark `node` a member. Errors: KP_ENOMEM. */
int api__mset_insert(json_t *node);
/* 1 if `node` (may be NULL) is a member. */
int api__mset_member(const json_t *node);
/* The child of `node` for `pe`, created empty if absent (borrowed); NULL
 * only when out of memory. */
json_t *api__mset_child(json_t *node, const char *pe);
/* Remove the child `pe` of `node` if it is empty. */
void api__mset_prune(json_t *node, const char *pe);

/* dst |= src. Errors: KP_ENOMEM (dst is then a subset of the union). */
int api__mset_union(json_t *dst, const json_t *src);
/* a -= b, member by member (structured-merge-diff's Difference: a member
 * of b does not remove a's paths below it). */
void api__mset_diff(json_t *a, const json_t *b);
/* a -= b, where a member of b also removes every path of a below it
 * (RecursiveDifference). */
void api__mset_rdiff(json_t *a, const json_t *b);
/* a & b as a new set; NULL when out of memory. */
json_t *api__mset_intersect(const json_t *a, const json_t *b);
/* 1 if the path pev[0..n) is a member of `set`. */
int api__mset_has(const json_t *set, const char *const *pev, size_t n);
/* Number of member paths. */
size_t api__mset_count(const json_t *set);

/* Read a FieldsV1 object (`fields` may be NULL: the empty set). On 0 *out
 * is a new set. Errors: KP_EINVAL (not FieldsV1: a bad element key or a
 * non-object value), KP_ENOMEM. */
int api__mset_decode(const json_t *fields, json_t **out);
/* The FieldsV1 object of `set`, keys in Kubernetes' order ("." first, then
 * path elements as fieldpath.PathElement orders them). NULL when out of
 * memory. */
json_t *api__mset_encode(const json_t *set);

/* Call fn for every member path of `set` in Kubernetes' order (a node's
 * members first, then its children, each in path element order). A
 * non-zero return from fn stops the walk and is returned. */
typedef int (*api__mset_visit_fn)(void *arg, const char *const *pev, size_t n);
int api__mset_iterate(const json_t *set, api__mset_visit_fn fn, void *arg);

/* --- value walks (managed_walk.c) ------------------------------------- */

typedef struct api__mwalk {
    const api_schema_t *s;
    const char *const *reset; /* top-level fields toset/compare skip; may be NULL */
    int strict;               /* toset: a repeated list key is an error (a config) */
    char *err;                /* KP_EINVAL messages ("<path>: <what>") */
    size_t errlen;
    const char *pathv[API__MW_DEPTH]; /* the path being walked, for messages */
    size_t depth;
} api__mwalk_t;

/* In all walks `kind` is the kind's schema node; NULL (or a node that is not
 * an object) deduces every field. */

/* Add the field set of `obj` (an object of kind `kind`) to `set`, as
 * TypedValue.ToFieldSet does. Errors: KP_EINVAL (a list element without its
 * key, a repeated key when strict, a path deeper than API__MW_DEPTH),
 * KP_ENOMEM. */
int api__mw_toset(api__mwalk_t *w, const json_t *obj, const json_t *kind, json_t *set);

/* Compare `l` with `r` (objects of kind `kind`; l NULL: the kind's zero
 * value, as for a create) and add the changed paths to the sets added,
 * modified and removed, as TypedValue.Compare does on Go objects (see
 * managed_walk.c, invariant 4). Errors as api__mw_toset(). */
int api__mw_compare(api__mwalk_t *w, const json_t *l, const json_t *r, const json_t *kind,
                    json_t *added, json_t *modified, json_t *removed);

/* Merge config `r` into `l` (NULL: nothing), as TypedValue.Merge does. On 0
 * *out is a new object sharing nothing with l or r. Errors as
 * api__mw_toset(). */
int api__mw_merge(api__mwalk_t *w, const json_t *l, const json_t *r, const json_t *kind,
                  json_t **out);

/* A copy of `obj` without the paths of `set` (a member removes its whole
 * subtree), as TypedValue.RemoveItems does; a map or list left empty by
 * the removal is dropped. *out is a new object. Errors: KP_ENOMEM. */
int api__mw_remove(api__mwalk_t *w, const json_t *obj, const json_t *kind, const json_t *set,
                   json_t **out);

/* A copy of `set` where every object field (a property the schema names)
 * with paths below it is also a member, as Set.EnsureNamedFieldsAreMembers
 * does. NULL when out of memory. */
json_t *api__mw_ensure_named(api__mwalk_t *w, const json_t *set, const json_t *kind);

#endif
