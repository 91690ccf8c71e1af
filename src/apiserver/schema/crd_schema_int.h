/*
 * crd_schema_int.h -- what crd_schema.c, crd_schema_check.c and
 * crd_schema_re.c share. Not for other files: the public contract is
 * crd_schema.h.
 *
 *   crd_schema.c        pruning, defaulting and validating custom objects;
 *                       defines the bounded strings and Go printers below,
 *                       and the validation entry the schema check runs on
 *                       defaults;
 *   crd_schema_check.c  api_crd_schema_check(): the schema itself;
 *   crd_schema_re.c     patterns (Go RE2 on POSIX regcomp) and string formats.
 *
 * Like the public calls, nothing here keeps state between calls.
 */
#ifndef KP_CRD_SCHEMA_INT_H
#define KP_CRD_SCHEMA_INT_H

#include <jansson.h>
#include <regex.h>
#include <stddef.h>
#include <string.h>

#define API__CRD_PATH_CAP 1024 /* a field path; longer ones are truncated */
#define API__CRD_MSG_CAP  2048 /* one message */

/* --- JSON helpers: schema keywords ------------------------------------ */

/* The string at key k of o; "" when absent or not a string. */
static inline const char *api__crd_jstr(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* 1 if key k of o is JSON true. */
static inline int api__crd_jtrue(const json_t *o, const char *k)
{
    return json_is_true(json_object_get(o, k));
}

/* The object at key k of o (borrowed); NULL when absent or not an object. */
static inline const json_t *api__crd_jobj(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_object(v) ? v : NULL;
}

/* 1 if schema node s has a non-null default. */
static inline int api__crd_has_default(const json_t *s)
{
    const json_t *d = json_object_get(s, "default");
    return d && !json_is_null(d);
}

/* 1 for the fields every resource keeps: apiVersion, kind, metadata. */
static inline int api__crd_is_meta_field(const char *k)
{
    return !strcmp(k, "apiVersion") || !strcmp(k, "kind") || !strcmp(k, "metadata");
}

/* --- bounded strings: field paths and messages (crd_schema.c) ---------- */

typedef struct api__crd_path {
    char s[API__CRD_PATH_CAP];
    size_t n;
} api__crd_path_t;

/* Append to p as snprintf does, truncating at the cap; returns the length
 * before, for api__crd_path_cut() to restore. */
size_t api__crd_path_add(api__crd_path_t *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Cut p back to length n (a value api__crd_path_add() returned). */
static inline void api__crd_path_cut(api__crd_path_t *p, size_t n)
{
    p->n = n;
    p->s[n] = '\0';
}

/* A message being composed into the caller's buffer s of size cap (s[0]
 * set to '\0' by the caller); appends past the cap are dropped. */
typedef struct api__crd_sb {
    char *s;
    size_t cap, n;
} api__crd_sb_t;

void api__crd_sb_add(api__crd_sb_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* --- Go's printing of values (crd_schema.c) ---------------------------- */

/* Append s as strconv.Quote (%q) prints it. */
void api__crd_go_quote(api__crd_sb_t *b, const char *s);

/* The %q rendering of s in buf (of size cap), returned for use in a
 * message. */
const char *api__crd_q(char *buf, size_t cap, const char *s);

/* Append v as a field.Error prints a bad value: strings %q, numbers and
 * booleans %v, null "null", maps and slices %#v. */
void api__crd_go_value(api__crd_sb_t *b, const json_t *v);

/* --- pruning and validating (crd_schema.c) ----------------------------- */

/* pruning.Prune of x (changed in place) by schema node s; embedded keeps
 * apiVersion, kind and metadata at this level. */
void api__crd_prune(json_t *x, const json_t *s, int embedded);

/* Validate v against schema node s (not as a root), appending causes whose
 * fields are under `field`, e.g. "spec.versions[0]...default". Silently
 * does nothing when out of memory. */
void api__crd_validate_at(const json_t *s, const json_t *v, const char *field, json_t *causes);

/* --- patterns and formats (crd_schema_re.c) ---------------------------- */

/* Compile the Go RE2 pattern p into re (REG_EXTENDED | REG_NOSUB; the
 * caller regfree()s it): 0, or -1 with the problem in err as Go words it
 * ("error parsing regexp: ..."). */
int api__crd_re_compile(const char *p, regex_t *re, char *err, size_t errlen);

/* Does s satisfy the string format f (already without '-')? 1 yes, 0 no,
 * -1 when kube-openapi's registry has no such format (nothing to check). */
int api__crd_format_ok(const char *f, const char *s);

#endif
