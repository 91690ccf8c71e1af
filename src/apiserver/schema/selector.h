/*
 * selector.h -- Kubernetes label and field selectors: parse once, match many.
 *
 * Label selectors come from the labelSelector query parameter or from a
 * metav1.LabelSelector object (spec.selector); field selectors from the
 * fieldSelector query parameter. Syntax, semantics and error messages follow
 * apimachinery pkg/labels/selector.go and pkg/fields/selector.go.
 *
 * A parsed selector is immutable: any number of threads may match with it at
 * once, and matching never allocates. Labels and objects passed in are only
 * read, for the duration of the call.
 *
 * Errors are KP_* (lib/err.h). KP_EINVAL means Kubernetes would reject the
 * input; its message (what the API server sends as a 400 BadRequest) is then
 * written to err, NUL-terminated and truncated to errlen bytes (err may be
 * NULL when errlen is 0). KP_ENOMEM writes "out of memory". On error *out is
 * NULL; on success it is never NULL, also for an empty selector.
 */
#ifndef KP_APISERVER_SELECTOR_H
#define KP_APISERVER_SELECTOR_H

#include <jansson.h>
#include <stddef.h>

typedef struct sel_label sel_label_t;
typedef struct sel_field sel_field_t;

/* ---- label selectors ---- */

/* Parse a labelSelector string: a comma-separated AND of `k=v`, `k==v`,
 * `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, `k>N`, `k<N`. Keys are
 * qualified names (`[prefix/]name`), values valid label values; `k in ()`
 * means the value set {""}, as in Kubernetes. NULL or "" selects everything.
 * *out is owned by the caller: free it with sel_label_free().
 * Errors: KP_EINVAL ("unable to parse requirement: ...", "found '...',
 * expected: ..."), KP_ENOMEM. */
int sel_label_parse(const char *text, sel_label_t **out, char *err, size_t errlen);

/* Build a selector from a metav1.LabelSelector JSON object: matchLabels AND
 * matchExpressions ({key, operator In|NotIn|Exists|DoesNotExist, values}).
 * NULL, JSON null, {} and empty lists select everything. (Kubernetes turns a
 * nil *LabelSelector into "select nothing"; callers that need that must check
 * for NULL themselves.) `label_selector` is only read. *out as above.
 * Errors: KP_EINVAL (e.g. `"Foo" is not a valid label selector operator`,
 * `values: Invalid value: null: for 'in', 'notin' operators, values set can't
 * be empty`, or a member of the wrong JSON type), KP_ENOMEM. */
int sel_label_from_json(const json_t *label_selector, sel_label_t **out, char *err, size_t errlen);

/* 1 if `labels` (a metadata.labels object; NULL or a non-object means no
 * labels) satisfies every requirement, else 0. As in Kubernetes, `!=` and
 * `notin` match a missing key; `>` and `<` need the label to be a decimal
 * int64. A NULL selector matches everything. */
int sel_label_match(const sel_label_t *s, const json_t *labels);

/* The same on labels kept elsewhere: get(arg, key) is the label's value,
 * NULL when the object has no such label, or SEL_NOT_STRING for a value
 * that is present but no string (it equals no value). */
extern const char SEL_NOT_STRING[];
typedef const char *(*sel_get_fn)(const void *arg, const char *key);
int sel_label_match_get(const sel_label_t *s, sel_get_fn get, const void *arg);

/* 1 if the selector has no requirements (selects everything; NULL too). */
int sel_label_empty(const sel_label_t *s);

/* Release a selector. NULL is a no-op. */
void sel_label_free(sel_label_t *s);

/* Kubernetes' rules for a label key (a qualified name: `[prefix/]name`) and a
 * label value: 0 if valid, else KP_EINVAL with the reasons in err, "; "-joined
 * and worded as Kubernetes words them. Annotation keys follow the key rule. */
int sel_label_key_check(const char *key, char *err, size_t errlen);
int sel_label_value_check(const char *value, char *err, size_t errlen);

/* ---- field selectors ---- */

/* Parse a fieldSelector string: a comma-separated AND of `f=v`, `f==v`,
 * `f!=v`. In values, `\,` `\=` and `\\` stand for `,` `=` and `\`; other
 * escapes and bare `=` are errors. Field names are not checked here (see
 * sel_field_check()). NULL or "" selects everything. *out is owned by the
 * caller: free it with sel_field_free().
 * Errors: KP_EINVAL ("invalid selector: '...'; can't understand '...'",
 * "invalid field selector: ..."), KP_ENOMEM. */
int sel_field_parse(const char *text, sel_field_t **out, char *err, size_t errlen);

/* Check every field against `supported`, a NULL-terminated list of field
 * names (NULL: the empty list). Fields are checked in Kubernetes' order, so
 * the error names the field Kubernetes would name.
 * Errors: KP_EINVAL "field label not supported: <field>". */
int sel_field_check(const sel_field_t *s, const char *const *supported, char *err, size_t errlen);

/* 1 if the object satisfies every term, else 0. A field is read by walking
 * its dotted path in `obj`; a string compares as itself, a boolean as
 * "true"/"false", a number as its decimal text, anything else or a missing
 * field as "" (so `spec.nodeName=` selects unscheduled pods). Three fields
 * that Kubernetes computes instead of reading are computed the same way:
 * a missing spec.unschedulable or spec.hostNetwork reads "false", and
 * `source` reads source.component (Events). A NULL selector matches all. */
int sel_field_match(const sel_field_t *s, const json_t *obj);

/* A field's text in `obj` as sel_field_match() reads it: borrowed from obj,
 * or written to buf (numbers). */
const char *sel_field_text(const json_t *obj, const char *field, char *buf, size_t buflen);

/* sel_field_match() on fields kept elsewhere: get(arg, field) is the
 * field's text as sel_field_text() gives it, NULL for a field the caller
 * does not keep (which matches no term). */
int sel_field_match_get(const sel_field_t *s, sel_get_fn get, const void *arg);

/* 1 if the selector has no terms (selects everything; NULL too). */
int sel_field_empty(const sel_field_t *s);

/* Release a selector. NULL is a no-op. */
void sel_field_free(sel_field_t *s);

#endif
