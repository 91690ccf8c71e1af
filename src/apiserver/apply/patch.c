/*
 * patch.c -- the three patch formats of Kubernetes (see patch.h).
 *
 * JSON patch (RFC 6902). The operations are checked first as a whole (an
 * array of objects, at most API_JSON_PATCH_MAX of them, each with a known
 * "op" and the members that op needs, pointers well formed): any fault there
 * is KP_EINVAL and nothing is applied. Then the operations run in order on
 * *doc; one that cannot apply stops the run with KP_ECONFLICT. Texts follow
 * the Go json-patch library the API server uses, so that clients see the
 * same messages. Semantics are RFC 6902's, stricter than that library in
 * three places: a replace of a missing member fails, array indices are
 * non-negative decimals without leading zeros, and a value cannot move into
 * its own child. One leniency is kept from Kubernetes: "test" of a missing
 * member against null passes. Values are deep-copied out of the patch, so
 * the result never shares nodes with `ops`.
 *
 * Budgets (api_json_patch_limited). A few KB of "copy" ops can double the
 * document each (60 ops: 2^60 times its size), so every op is priced in
 * bytes of compact JSON before it is done, as Kubernetes' json-patch prices
 * copies: jp_t.size follows the document's size (added values counted with
 * a cut-off at the room left, removed ones subtracted), jp_t.copied the
 * copies. A copy is measured, then checked against both budgets, and only
 * then deep-copied; an add or replace is measured before its value is
 * copied out of the patch. A move changes only the key's bytes and is never
 * walked. So the work and memory of a patch stay within its own size plus
 * the limits, whatever its ops do. The end result is measured once more
 * (size and depth, both with a cut-off): that is the authority, the running
 * count only stops a runaway early.
 *
 * Merge patch (RFC 7386) is a short recursion; values are copied as well.
 *
 * Strategic merge patch follows apimachinery's strategicpatch as the API
 * server runs it (merging parallel lists, dropping unmatched nulls), with the
 * struct tags read from the schema facts instead of Go types:
 *
 *   merge_map(node, orig, patch)      "$patch" first: replace -> the rest of
 *                                     the patch as a new map, delete -> {}.
 *                                     Then "$retainKeys" (every non-null key
 *                                     of the patch must be listed; keys of
 *                                     orig not listed are dropped), then each
 *                                     "$setElementOrder/<list>" with its list,
 *                                     then the other keys in patch order:
 *                                     null deletes; a key orig lacks, or of
 *                                     another JSON type, takes the patch value;
 *                                     maps recurse (strategy "replace":
 *                                     replaced); lists go to merge_list.
 *   merge_list(field, orig, patch)    strategy "merge": objects by merge key
 *                                     ("$patch": delete | replace elements
 *                                     first), scalars as a set; then the order
 *                                     rule below. Other lists are replaced.
 *   "$deleteFromPrimitiveList/<l>"    removes equal values from orig's list.
 *
 * Order of a merged list (and of "$setElementOrder"), as mergeSortedSlice:
 * the elements named by the patch (or by the order list) come in that order;
 * the others keep the live list's order and are interleaved: while both
 * remain, a live-only element goes first only when the next patch element is
 * in the live list too and stands after it there. So an element the live
 * list lacks, given without an order list, lands before the live-only
 * elements that remain (kubectl always sends "$setElementOrder", which puts
 * it where the user wrote it).
 *
 * Kubernetes takes values that orig lacks as they are; this file "cleans"
 * them instead (merges them into an empty value), so directives and nulls
 * never reach the result wherever they are. Elements of a replaced (atomic)
 * list lose "$patch": "delete" elements and list markers the same way. A
 * delete list removes its values whatever the field's strategy (the Go code
 * would store the delete list itself for a non-merge field).
 *
 * Errors: a malformed directive or a patch element without its merge key is
 * KP_EINVAL (Kubernetes: 400 or 500); a list of lists, element types that
 * differ, or a live element without the merge key is KP_ECONFLICT (422).
 * Everything works on the caller's target in place, so it is a copy.
 */
#include "apiserver/apply/patch.h"

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"

/* ---- shared helpers ---------------------------------------------------------------- */

static int report(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Write a message into err (if there is room for one) and return rc. */
static int report(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* Compact text of a value for a message; the caller frees it (NULL if none). */
static char *dump(const json_t *v)
{
    return v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
    case JSON_REAL:
        return "number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "boolean";
    default:
        return "null";
    }
}

/* ---- JSON patch (RFC 6902) ----------------------------------------------------------- */

typedef struct jp {
    json_t **doc;
    char *err;
    size_t errlen;
    const api_patch_limits_t *lim; /* NULL: unbounded, nothing counted */
    size_t size;                   /* compact size of *doc, as counted */
    size_t copied;                 /* bytes added by "copy" so far */
} jp_t;

/* ---- sizes ---- */

/* Removed values are walked to this depth for their size (deeper parts are
 * not counted: the count is then low, and the final measure decides). */
#define JP_MEASURE_DEPTH 4096

typedef struct meter {
    size_t n, limit;
    int depth_max, too_deep;
} meter_t;

static void meter_add(meter_t *m, size_t k)
{
    if (m->n > m->limit) return; /* over already: stays limit + 1 */
    m->n = k > m->limit - m->n ? m->limit + 1 : m->n + k;
}

/* A string's bytes as Go's encoder writes it, quotes included. */
static void meter_string(meter_t *m, const char *p, size_t len)
{
    if (m->n > m->limit) return;
    if (len > m->limit - m->n) { /* every byte takes at least one */
        m->n = m->limit + 1;
        return;
    }
    size_t n = 2;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t')
            n += 2;
        else if (c < 0x20 || c == '<' || c == '>' || c == '&')
            n += 6; /* \u00XX */
        else
            n += 1;
    }
    meter_add(m, n);
}

static void meter_value(meter_t *m, const json_t *v, int depth)
{
    char num[40];
    int w;
    if (m->n > m->limit) return;
    switch (json_typeof(v)) {
    case JSON_OBJECT:
    case JSON_ARRAY: {
        meter_add(m, 2);
        if (depth >= m->depth_max) {
            m->too_deep = 1;
            return;
        }
        size_t i = 0;
        if (json_is_array(v)) {
            const json_t *e;
            json_array_foreach(v, i, e) {
                if (i) meter_add(m, 1);
                meter_value(m, e, depth + 1);
                if (m->n > m->limit) return;
            }
            return;
        }
        const char *k;
        const json_t *e;
        json_object_foreach((json_t *)v, k, e) {
            if (i++) meter_add(m, 1);
            meter_string(m, k, strlen(k));
            meter_add(m, 1);
            meter_value(m, e, depth + 1);
            if (m->n > m->limit) return;
        }
        return;
    }
    case JSON_STRING:
        meter_string(m, json_string_value(v), json_string_length(v));
        return;
    case JSON_INTEGER:
        w = snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        meter_add(m, w > 0 ? (size_t)w : 1);
        return;
    case JSON_REAL:
        w = snprintf(num, sizeof num, "%.17g", json_real_value(v));
        meter_add(m, w > 0 ? (size_t)w : 1);
        return;
    case JSON_TRUE:
    case JSON_NULL:
        meter_add(m, 4);
        return;
    case JSON_FALSE:
        meter_add(m, 5);
        return;
    }
}

size_t api_json_size(const json_t *v, size_t limit, int depth_max, int *too_deep)
{
    meter_t m = {.n = 0, .limit = limit < SIZE_MAX ? limit : SIZE_MAX - 1, .depth_max = depth_max};
    if (v) meter_value(&m, v, 0);
    if (too_deep) *too_deep = m.too_deep;
    return m.n;
}

/* The bytes a member or element adds to its container besides its value:
 * the key, its colon and a comma (an element: the comma). */
static size_t member_bytes(const json_t *parent, const char *key)
{
    if (!json_is_object(parent)) return 1;
    meter_t m = {.limit = SIZE_MAX - 1};
    meter_string(&m, key, strlen(key));
    return m.n + 2;
}

/* The containers a pointer goes through: its number of tokens. */
static int ptr_depth(const char *path)
{
    int n = 0;
    for (const char *p = path; *p; p++)
        n += *p == '/';
    return n;
}

static void jp_grow(jp_t *j, size_t add, size_t sub)
{
    j->size = j->size + add > sub ? j->size + add - sub : 0;
}

/* The size a removed value took, member bytes included (lim set). */
static size_t jp_removed(const json_t *parent, const char *key, const json_t *v)
{
    return api_json_size(v, SIZE_MAX - 1, JP_MEASURE_DEPTH, NULL) +
           (parent ? member_bytes(parent, key) : 0);
}

static int jp_too_large(jp_t *j)
{
    return report(j->err, j->errlen, KP_ETOOLARGE, "Request entity too large: limit is %zu",
                  j->lim->result_max);
}

static int jp_too_deep(jp_t *j)
{
    return report(j->err, j->errlen, KP_EINVAL, "the patched object is nested deeper than %d levels",
                  j->lim->depth_max);
}

/* Measure `value` (to be placed at `path`) against the room left in the
 * document: *bytes gets its size, or an error is returned. */
static int jp_price(jp_t *j, const char *path, const json_t *value, size_t *bytes)
{
    *bytes = 0;
    if (!j->lim) return 0;
    size_t room = j->lim->result_max > j->size ? j->lim->result_max - j->size : 0;
    int deep = 0;
    *bytes = api_json_size(value, room, j->lim->depth_max - ptr_depth(path), &deep);
    if (*bytes > room) return jp_too_large(j);
    if (deep) return jp_too_deep(j);
    return 0;
}

/* Where a pointer leads: the container of its last token and that token
 * (decoded, malloc'd). parent NULL and key NULL for the root "". */
typedef struct jp_ref {
    json_t *parent;
    char *key;
} jp_ref_t;

/* 1 if `path` is "" or a sequence of "/token" with only ~0 and ~1 escapes. */
static int ptr_valid(const char *path)
{
    if (!*path) return 1;
    if (*path != '/') return 0;
    for (const char *p = path; *p; p++)
        if (*p == '~' && p[1] != '0' && p[1] != '1') return 0;
    return 1;
}

/* Decode the token [p, p+n) (escapes ~1 -> '/', ~0 -> '~'); malloc'd or NULL. */
static char *ptr_token(const char *p, size_t n)
{
    char *out = malloc(n + 1);
    if (!out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '~' && i + 1 < n) {
            out[o++] = p[i + 1] == '1' ? '/' : '~';
            i++;
        } else {
            out[o++] = p[i];
        }
    }
    out[o] = '\0';
    return out;
}

/* An array index token: "0" or digits without a leading zero. -1 otherwise;
 * LONG_MAX for a number too large to be any index. */
static long ptr_index(const char *tok)
{
    if (!*tok || (tok[0] == '0' && tok[1])) return -1;
    long v = 0;
    for (const char *p = tok; *p; p++) {
        if (*p < '0' || *p > '9') return -1;
        if (v != LONG_MAX) v = v > (LONG_MAX - 9) / 10 ? LONG_MAX : v * 10 + (*p - '0');
    }
    return v;
}

/* The child `tok` of a container, or NULL. */
static json_t *ptr_child(json_t *cur, const char *tok)
{
    if (json_is_object(cur)) return json_object_get(cur, tok);
    if (json_is_array(cur)) {
        long i = ptr_index(tok);
        return i >= 0 && (size_t)i < json_array_size(cur) ? json_array_get(cur, (size_t)i) : NULL;
    }
    return NULL;
}

/* Resolve a (valid) pointer up to its last token. KP_ENOTFOUND if a token
 * before the last does not exist or the parent is not a container. */
static int jp_resolve(json_t *doc, const char *path, jp_ref_t *ref)
{
    ref->parent = NULL;
    ref->key = NULL;
    if (!*path) return 0;
    json_t *cur = doc;
    const char *p = path + 1;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        char *tok = ptr_token(p, n);
        if (!tok) return KP_ENOMEM;
        if (!slash) {
            if (!json_is_object(cur) && !json_is_array(cur)) {
                free(tok);
                return KP_ENOTFOUND;
            }
            ref->parent = cur;
            ref->key = tok;
            return 0;
        }
        cur = ptr_child(cur, tok);
        free(tok);
        if (!cur) return KP_ENOTFOUND;
        p = slash + 1;
    }
}

/* The value a resolved reference names (borrowed), or NULL. */
static json_t *jp_get(json_t *doc, const jp_ref_t *ref)
{
    return ref->parent ? ptr_child(ref->parent, ref->key) : doc;
}

/* The size of what an "add" at `path` would replace (an object's member,
 * or the root), 0 if none or nothing is counted. */
static size_t jp_replaced_size(jp_t *j, const char *path)
{
    if (!j->lim) return 0;
    jp_ref_t ref;
    if (jp_resolve(*j->doc, path, &ref)) return 0;
    const json_t *old = !ref.parent || json_is_object(ref.parent) ? jp_get(*j->doc, &ref) : NULL;
    free(ref.key);
    return old ? api_json_size(old, SIZE_MAX - 1, JP_MEASURE_DEPTH, NULL) : 0;
}

/* Insert `val` (stolen) at `path` as "add" does; `op` names the operation in
 * messages ("add", "move", "copy"). `bytes` is val's size as counted (0 for
 * a move): the document's count grows by it and the member's bytes, and
 * shrinks by a member it replaces. */
static int jp_put(jp_t *j, const char *op, const char *path, json_t *val, size_t bytes)
{
    if (!val) return KP_ENOMEM;
    jp_ref_t ref;
    int rc = jp_resolve(*j->doc, path, &ref);
    if (rc == KP_ENOTFOUND) {
        json_decref(val);
        if (!strcmp(op, "add"))
            return report(
                j->err, j->errlen, KP_ECONFLICT,
                "add operation does not apply: doc is missing path: \"%s\": missing value", path);
        return report(j->err, j->errlen, KP_ECONFLICT,
                      "%s operation does not apply: doc is missing destination path: %s: missing "
                      "value",
                      op, path);
    }
    if (rc) {
        json_decref(val);
        return rc;
    }
    if (!ref.parent) { /* the root: the value becomes the document */
        json_decref(*j->doc);
        *j->doc = val;
        if (j->lim) /* a move to the root: the moved value, walked once */
            j->size = bytes ? bytes : api_json_size(val, SIZE_MAX - 1, JP_MEASURE_DEPTH, NULL);
        return 0;
    }
    if (j->lim) {
        size_t mb = member_bytes(ref.parent, ref.key);
        if (!bytes && j->size + mb > j->lim->result_max) { /* a move to a long key */
            json_decref(val);
            free(ref.key);
            return jp_too_large(j);
        }
        const json_t *old =
            json_is_object(ref.parent) ? json_object_get(ref.parent, ref.key) : NULL;
        jp_grow(j, bytes + mb, old ? jp_removed(ref.parent, ref.key, old) : 0);
    }
    if (json_is_object(ref.parent)) {
        rc = json_object_set_new(ref.parent, ref.key, val) ? KP_ENOMEM : 0;
    } else if (!strcmp(ref.key, "-")) {
        rc = json_array_append_new(ref.parent, val) ? KP_ENOMEM : 0;
    } else {
        long i = ptr_index(ref.key);
        if (i < 0) {
            json_decref(val);
            rc = report(j->err, j->errlen, KP_ECONFLICT,
                        "error in %s for path: '%s': value was not a proper array index: '%s'", op,
                        path, ref.key);
        } else if ((size_t)i > json_array_size(ref.parent)) {
            json_decref(val);
            rc = report(j->err, j->errlen, KP_ECONFLICT,
                        "error in %s for path: '%s': Unable to access invalid index: %s: invalid "
                        "index referenced",
                        op, path, ref.key);
        } else {
            rc = json_array_insert_new(ref.parent, (size_t)i, val) ? KP_ENOMEM : 0;
        }
    }
    free(ref.key);
    return rc;
}

/* Detach the value at `path` (must exist; not the root) into *out (owned).
 * `count`: subtract its size from the document's (a remove; a move keeps
 * the value and only changes its key, see jp_put). */
static int jp_take(jp_t *j, const char *op, const char *path, json_t **out, int count)
{
    *out = NULL;
    jp_ref_t ref;
    int rc = jp_resolve(*j->doc, path, &ref);
    if (rc == KP_ENOTFOUND) {
        if (!strcmp(op, "remove"))
            return report(j->err, j->errlen, KP_ECONFLICT,
                          "remove operation does not apply: doc is missing path: \"%s\": missing "
                          "value",
                          path);
        return report(j->err, j->errlen, KP_ECONFLICT,
                      "%s operation does not apply: doc is missing from path: %s: missing value",
                      op, path);
    }
    if (rc) return rc;
    if (!ref.parent)
        return report(j->err, j->errlen, KP_ECONFLICT,
                      "%s operation does not apply: the document root cannot be removed", op);
    json_t *v = ptr_child(ref.parent, ref.key);
    if (!v) {
        if (json_is_object(ref.parent))
            rc = report(j->err, j->errlen, KP_ECONFLICT,
                        "error in %s for path: '%s': Unable to remove nonexistent key: %s: missing "
                        "value",
                        op, path, ref.key);
        else
            rc = report(j->err, j->errlen, KP_ECONFLICT,
                        "error in %s for path: '%s': Unable to access invalid index: %s: invalid "
                        "index referenced",
                        op, path, ref.key);
    } else {
        *out = json_incref(v);
        if (j->lim)
            jp_grow(j, 0,
                    count ? jp_removed(ref.parent, ref.key, v) : member_bytes(ref.parent, ref.key));
        if (json_is_object(ref.parent))
            json_object_del(ref.parent, ref.key);
        else
            json_array_remove(ref.parent, (size_t)ptr_index(ref.key));
    }
    free(ref.key);
    return rc;
}

static int jp_replace(jp_t *j, const char *path, const json_t *value)
{
    jp_ref_t ref;
    int rc = jp_resolve(*j->doc, path, &ref);
    if (rc == KP_ENOTFOUND)
        return report(j->err, j->errlen, KP_ECONFLICT,
                      "replace operation does not apply: doc is missing path: %s: missing value",
                      path);
    if (rc) return rc;
    const json_t *old = jp_get(*j->doc, &ref);
    size_t bytes = 0;
    if (old && j->lim) {
        /* priced as if the old value were gone already */
        size_t was = jp_removed(NULL, NULL, old);
        jp_grow(j, 0, was);
        rc = jp_price(j, path, value, &bytes);
        jp_grow(j, rc ? was : bytes, 0);
        if (rc) {
            free(ref.key);
            return rc;
        }
    }
    json_t *v = old ? json_deep_copy(value) : NULL;
    if (!old)
        rc =
            report(j->err, j->errlen, KP_ECONFLICT,
                   "replace operation does not apply: doc is missing key: %s: missing value", path);
    else if (!v)
        rc = KP_ENOMEM;
    else if (!ref.parent) {
        json_decref(*j->doc);
        *j->doc = v;
    } else if (json_is_object(ref.parent)) {
        rc = json_object_set_new(ref.parent, ref.key, v) ? KP_ENOMEM : 0;
    } else {
        rc = json_array_set_new(ref.parent, (size_t)ptr_index(ref.key), v) ? KP_ENOMEM : 0;
    }
    free(ref.key);
    return rc;
}

static int jp_test(jp_t *j, const char *path, const json_t *value)
{
    jp_ref_t ref;
    int rc = jp_resolve(*j->doc, path, &ref);
    if (rc == KP_ENOTFOUND)
        return report(j->err, j->errlen, KP_ECONFLICT,
                      "test operation does not apply: is missing path: %s: missing value", path);
    if (rc) return rc;
    json_t *v = jp_get(*j->doc, &ref);
    free(ref.key);
    /* A missing member equals null, as in the library Kubernetes uses. */
    if (v ? json_equal(v, (json_t *)value) : json_is_null(value)) return 0;
    return report(j->err, j->errlen, KP_ECONFLICT, "testing value %s failed: test failed", path);
}

/* The value at `path`, borrowed; NULL if missing (KP_ENOMEM in *rc). */
static json_t *jp_lookup(jp_t *j, const char *path, int *rc)
{
    jp_ref_t ref;
    *rc = jp_resolve(*j->doc, path, &ref);
    json_t *v = *rc ? NULL : jp_get(*j->doc, &ref);
    free(ref.key);
    if (*rc == KP_ENOTFOUND) *rc = 0;
    return v;
}

static int jp_move(jp_t *j, const char *from, const char *path)
{
    int rc;
    if (!strcmp(from, path)) { /* a no-op, once the value is known to exist */
        if (!jp_lookup(j, from, &rc) && !rc)
            rc = report(j->err, j->errlen, KP_ECONFLICT,
                        "move operation does not apply: doc is missing from path: %s: missing "
                        "value",
                        from);
        return rc;
    }
    size_t n = strlen(from);
    if (!strncmp(path, from, n) && path[n] == '/')
        return report(j->err, j->errlen, KP_ECONFLICT,
                      "move operation does not apply: cannot move %s into its own child %s", from,
                      path);
    json_t *v;
    rc = jp_take(j, "move", from, &v, 0);
    if (rc) return rc;
    return jp_put(j, "move", path, v, 0);
}

static int jp_copy(jp_t *j, const char *from, const char *path)
{
    int rc;
    json_t *v = jp_lookup(j, from, &rc);
    if (rc) return rc;
    if (!v)
        return report(j->err, j->errlen, KP_ECONFLICT,
                      "copy operation does not apply: doc is missing from path: %s: missing value",
                      from);
    size_t bytes = 0;
    if (j->lim) { /* counted before a byte is copied */
        size_t room = j->lim->copy_max - j->copied;
        int deep = 0;
        bytes = api_json_size(v, room, j->lim->depth_max - ptr_depth(path), &deep);
        if (bytes > room)
            return report(j->err, j->errlen, KP_ECONFLICT,
                          "Unable to complete the copy, the accumulated size increase of copy is "
                          "%zu, exceeding the limit %zu",
                          j->copied + bytes, j->lim->copy_max);
        if (deep) return jp_too_deep(j);
        if (bytes > j->lim->result_max || j->size > j->lim->result_max - bytes)
            return jp_too_large(j);
        j->copied += bytes;
    }
    return jp_put(j, "copy", path, json_deep_copy(v), bytes);
}

enum { OP_ADD, OP_REMOVE, OP_REPLACE, OP_MOVE, OP_COPY, OP_TEST };

static const char *const op_names[] = {"add", "remove", "replace", "move", "copy", "test"};

/* Check one operation's form; *kind gets its OP_*. */
static int jp_check(const json_t *op, int *kind, char *err, size_t errlen)
{
    const char *name = json_string_value(json_object_get(op, "op"));
    *kind = -1;
    for (int k = 0; name && k < (int)(sizeof op_names / sizeof op_names[0]); k++)
        if (!strcmp(name, op_names[k])) *kind = k;
    if (*kind < 0)
        return report(err, errlen, KP_EINVAL, "Unexpected kind: %s", name ? name : "unknown");
    const char *path = json_string_value(json_object_get(op, "path"));
    if (!path)
        return report(err, errlen, KP_EINVAL,
                      "%s operation failed to decode path: operation missing path field: missing "
                      "value",
                      name);
    if (!ptr_valid(path))
        return report(err, errlen, KP_EINVAL,
                      "%s operation failed to decode path: invalid JSON pointer \"%s\"", name,
                      path);
    if ((*kind == OP_ADD || *kind == OP_REPLACE || *kind == OP_TEST) &&
        !json_object_get(op, "value"))
        return report(err, errlen, KP_EINVAL,
                      "%s operation failed: operation, missing value field: missing value", name);
    if (*kind == OP_MOVE || *kind == OP_COPY) {
        const char *from = json_string_value(json_object_get(op, "from"));
        if (!from)
            return report(err, errlen, KP_EINVAL,
                          "%s operation failed to decode from: operation, missing from field: "
                          "missing value",
                          name);
        if (!ptr_valid(from))
            return report(err, errlen, KP_EINVAL,
                          "%s operation failed to decode from: invalid JSON pointer \"%s\"", name,
                          from);
    }
    return 0;
}

static int json_patch(json_t **doc, const json_t *ops, const api_patch_limits_t *lim, char *err,
                      size_t errlen)
{
    if (err && errlen) err[0] = '\0';
    if (!json_is_array(ops))
        return report(err, errlen, KP_EINVAL,
                      "json: cannot unmarshal %s into Go value of type jsonpatch.Patch",
                      ops ? type_name(ops) : "null");
    size_t i;
    const json_t *op;
    json_array_foreach(ops, i, op) {
        if (!json_is_object(op))
            return report(err, errlen, KP_EINVAL,
                          "json: cannot unmarshal %s into Go value of type jsonpatch.Operation",
                          type_name(op));
    }
    if (json_array_size(ops) > API_JSON_PATCH_MAX)
        return report(err, errlen, KP_ETOOLARGE,
                      "The allowed maximum operations in a JSON patch is %d, got %zu",
                      API_JSON_PATCH_MAX, json_array_size(ops));
    int kind, rc;
    json_array_foreach(ops, i, op) {
        if ((rc = jp_check(op, &kind, err, errlen))) return rc;
    }
    jp_t j = {.doc = doc, .err = err, .errlen = errlen, .lim = lim};
    if (lim) j.size = api_json_size(*doc, SIZE_MAX - 1, JP_MEASURE_DEPTH, NULL);
    json_array_foreach(ops, i, op) {
        jp_check(op, &kind, err, errlen); /* passed above: only the kind is wanted */
        const char *path = json_string_value(json_object_get(op, "path"));
        const char *from = json_string_value(json_object_get(op, "from"));
        const json_t *value = json_object_get(op, "value");
        json_t *v;
        switch (kind) {
        case OP_ADD: {
            /* priced as if a member it replaces were gone (jp_put takes it off) */
            size_t bytes, was = jp_replaced_size(&j, path);
            jp_grow(&j, 0, was);
            rc = jp_price(&j, path, value, &bytes);
            jp_grow(&j, was, 0);
            if (!rc) rc = jp_put(&j, "add", path, json_deep_copy(value), bytes);
            break;
        }
        case OP_REMOVE:
            rc = jp_take(&j, "remove", path, &v, 1);
            json_decref(v);
            break;
        case OP_REPLACE:
            rc = jp_replace(&j, path, value);
            break;
        case OP_MOVE:
            rc = jp_move(&j, from, path);
            break;
        case OP_COPY:
            rc = jp_copy(&j, from, path);
            break;
        default:
            rc = jp_test(&j, path, value);
            break;
        }
        if (rc) return rc;
    }
    if (!lim) return 0;
    /* The authority: the result as it is (a move may have nested it deeper). */
    int deep = 0;
    size_t n = api_json_size(*doc, lim->result_max, lim->depth_max, &deep);
    if (deep) return jp_too_deep(&j);
    if (n > lim->result_max) return jp_too_large(&j);
    return 0;
}

int api_json_patch(json_t **doc, const json_t *ops, char *err, size_t errlen)
{
    return json_patch(doc, ops, NULL, err, errlen);
}

int api_json_patch_limited(json_t **doc, const json_t *ops, const api_patch_limits_t *lim,
                           char *err, size_t errlen)
{
    return json_patch(doc, ops, lim, err, errlen);
}

/* ---- merge patch (RFC 7386) ---------------------------------------------------------- */

void api_merge_patch(json_t *target, const json_t *patch)
{
    if (!json_is_object(target) || !json_is_object(patch)) return;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)patch, k, v) {
        if (json_is_null(v)) {
            json_object_del(target, k);
        } else if (json_is_object(v)) {
            json_t *t = json_object_get(target, k);
            if (!json_is_object(t)) {
                t = json_object();
                if (json_object_set_new(target, k, t)) continue; /* out of memory */
            }
            api_merge_patch(t, v);
        } else {
            json_object_set_new(target, k, json_deep_copy(v));
        }
    }
}

/* ---- strategic merge patch ----------------------------------------------------------- */

#define DIRECTIVE   "$patch"
#define RETAIN_KEYS "$retainKeys"
#define SET_ORDER   "$setElementOrder/"
#define DELETE_FROM "$deleteFromPrimitiveList/"

typedef struct smp {
    const api_schema_t *s;
    char *err;
    size_t errlen;
} smp_t;

static int merge_map(smp_t *c, const json_t *node, json_t *orig, const json_t *patch, json_t **out);
static int merge_list(smp_t *c, const json_t *field, json_t *orig, const json_t *patch,
                      json_t **out);

static int prefixed(const char *key, const char *prefix)
{
    return !strncmp(key, prefix, strlen(prefix));
}

/* 1 if the declared field's x-kubernetes-patch-strategy lists `word`. */
static int strategy_has(const json_t *field, const char *word)
{
    const char *st = json_string_value(json_object_get(field, "x-kubernetes-patch-strategy"));
    size_t n = strlen(word);
    for (const char *p = st; p && (p = strstr(p, word)); p += n)
        if ((p == st || p[-1] == ',') && (p[n] == '\0' || p[n] == ',')) return 1;
    return 0;
}

static int no_merge_key(smp_t *c, int rc, const json_t *elem, const char *key)
{
    char *d = dump(elem);
    rc = report(c->err, c->errlen, rc, "map: %s does not contain declared merge key: %s",
                d ? d : "?", key);
    free(d);
    return rc;
}

static int bad_patch_type(smp_t *c, const json_t *dir, const json_t *map)
{
    char *d = dump(dir), *m = dump(map);
    int rc = report(c->err, c->errlen, KP_EINVAL, "unknown patch type: %s in map: %s", d ? d : "?",
                    m ? m : "?");
    free(d);
    free(m);
    return rc;
}

/* A fresh value for patch value `pv` where the target has nothing to merge
 * with: directives applied to an empty map or list, nulls dropped. */
static int clean(smp_t *c, const json_t *field, const json_t *pv, json_t **out)
{
    *out = NULL;
    if (json_is_object(pv)) return merge_map(c, field, NULL, pv, out);
    if (json_is_array(pv)) {
        json_t *empty = json_array();
        if (!empty) return KP_ENOMEM;
        int rc = merge_list(c, field, empty, pv, out);
        json_decref(empty);
        return rc;
    }
    *out = json_deep_copy(pv);
    return *out ? 0 : KP_ENOMEM;
}

/* ---- list order ---- */

/* The position of `item` in the first `n` elements of `list`: by the value of
 * `key` when key is set, else by equality. -1 if absent. */
/* Finding an element of one list in another by value (by its merge key's
 * value, with `key`) is a hash probe, not a scan: lists of a 3 MiB patch
 * against a live list as long would take n*m comparisons (20,000 against
 * 20,000 env entries took 43 s of CPU). An index is a JSON object from a
 * value's canonical text (compact, keys sorted: equal texts for exactly the
 * values json_equal finds equal) to the first position holding it. */

/* Add element e at position i unless its value is indexed already.
 * Elements without the key are left out. */
static int pos_add(json_t *ix, const json_t *e, const char *key, size_t i)
{
    const json_t *v = key ? json_object_get(e, key) : e;
    if (!v) return 0;
    char *t = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    if (!t) return KP_ENOMEM;
    int rc = 0;
    if (!json_object_get(ix, t) && json_object_set_new(ix, t, json_integer((json_int_t)i)))
        rc = KP_ENOMEM;
    free(t);
    return rc;
}

/* An index of the first n elements of list (all if n is larger); NULL when
 * out of memory. The caller releases it. */
static json_t *pos_index(const json_t *list, size_t n, const char *key)
{
    json_t *ix = json_object();
    for (size_t i = 0; ix && i < n && i < json_array_size(list); i++)
        if (pos_add(ix, json_array_get(list, i), key, i)) {
            json_decref(ix);
            ix = NULL;
        }
    return ix;
}

/* The indexed position of item's value into *at, -1 if absent (or item has
 * no key). */
static int pos_find(const json_t *ix, const json_t *item, const char *key, long *at)
{
    *at = -1;
    const json_t *v = key ? json_object_get(item, key) : item;
    if (!v) return 0;
    char *t = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    if (!t) return KP_ENOMEM;
    const json_t *pos = json_object_get(ix, t);
    free(t);
    if (pos) *at = (long)json_integer_value(pos);
    return 0;
}

typedef struct ord_item {
    json_t *v;
    long rank; /* position in the order list that sorts it; LONG_MAX if absent */
    long srv;  /* position in the live list, -1 if absent */
    size_t pos;
} ord_item_t;

static int ord_cmp(const void *a, const void *b)
{
    const ord_item_t *x = a, *y = b;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Order `merged` into *out: the elements named in `porder` (by `key`) in that
 * order, interleaved with the others in the order of the live list `sorder`
 * (its first `sn` elements): a live-only element goes before the next named
 * one when both are in the live list and it stood first there. */
static int order_list(smp_t *c, const json_t *merged, const json_t *porder, const json_t *sorder,
                      size_t sn, const char *key, json_t **out)
{
    int rc = 0;
    size_t n = json_array_size(merged), np = 0, ns = 0;
    ord_item_t *p = calloc(n ? n : 1, sizeof *p), *s = calloc(n ? n : 1, sizeof *s);
    json_t *pix = pos_index(porder, json_array_size(porder), key);
    json_t *six = pos_index(sorder, sn, key);
    *out = json_array();
    if (!p || !s || !pix || !six || !*out) {
        rc = KP_ENOMEM;
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(merged, i);
        if (key && !json_object_get(e, key)) {
            rc = no_merge_key(c, KP_ECONFLICT, e, key);
            goto fail;
        }
        long pr, sr;
        if ((rc = pos_find(pix, e, key, &pr)) || (rc = pos_find(six, e, key, &sr))) goto fail;
        if (pr >= 0)
            p[np++] = (ord_item_t){e, pr, sr, i};
        else
            s[ns++] = (ord_item_t){e, sr >= 0 ? sr : LONG_MAX, sr, i};
    }
    qsort(p, np, sizeof *p, ord_cmp);
    qsort(s, ns, sizeof *s, ord_cmp);
    for (size_t i = 0, j = 0; i < ns || j < np;) {
        int left = i < ns && (j >= np || (s[i].srv >= 0 && p[j].srv >= 0 && s[i].srv < p[j].srv));
        if (json_array_append(*out, left ? s[i++].v : p[j++].v)) {
            rc = KP_ENOMEM;
            goto fail;
        }
    }
    free(p);
    free(s);
    json_decref(pix);
    json_decref(six);
    return 0;
fail:
    free(p);
    free(s);
    json_decref(pix);
    json_decref(six);
    json_decref(*out);
    *out = NULL;
    return rc;
}

/* ---- lists ---- */

/* The one JSON type of the elements of `a` and `b` (integers and reals are
 * one type); JSON_NULL with *none set when both are empty. */
static int element_type(smp_t *c, const json_t *a, const json_t *b, json_type *type, int *none)
{
    const json_t *lists[2] = {a, b}, *first = NULL;
    *none = 1;
    *type = JSON_NULL;
    for (int l = 0; l < 2; l++) {
        size_t i;
        const json_t *e;
        json_array_foreach(lists[l], i, e) {
            json_type t = json_typeof(e);
            if (t == JSON_REAL) t = JSON_INTEGER;
            if (t == JSON_FALSE) t = JSON_TRUE;
            if (!first) {
                if (t == JSON_ARRAY)
                    return report(c->err, c->errlen, KP_ECONFLICT,
                                  "lists of lists are not supported");
                first = e;
                *type = t;
                *none = 0;
            } else if (t != *type) {
                return report(c->err, c->errlen, KP_ECONFLICT,
                              "list element types are not identical: %s and %s", type_name(first),
                              type_name(e));
            }
        }
    }
    return 0;
}

/* orig without the values listed in `del` (a $deleteFromPrimitiveList). */
static int delete_values(const json_t *orig, const json_t *del, json_t **out)
{
    *out = json_array();
    json_t *ix = pos_index(del, json_array_size(del), NULL);
    int rc = *out && ix ? 0 : KP_ENOMEM;
    size_t i;
    json_t *e;
    json_array_foreach(orig, i, e) {
        long at;
        if (rc || (rc = pos_find(ix, e, NULL, &at))) break;
        if (at < 0 && json_array_append(*out, e)) rc = KP_ENOMEM;
    }
    json_decref(ix);
    if (rc) {
        json_decref(*out);
        *out = NULL;
    }
    return rc;
}

/* A list that replaces the target's whole: cleaned elements, without
 * "$patch": "delete" elements and bare list markers. */
static int replace_list(smp_t *c, const json_t *items, const json_t *patch, json_t **out)
{
    int rc = 0;
    *out = json_array();
    if (!*out) return KP_ENOMEM;
    size_t i;
    const json_t *e;
    json_array_foreach(patch, i, e) {
        const char *dir = json_string_value(json_object_get(e, DIRECTIVE));
        if (dir &&
            (!strcmp(dir, "delete") || (!strcmp(dir, "replace") && json_object_size(e) == 1)))
            continue;
        json_t *v;
        if ((rc = clean(c, items, e, &v))) goto fail;
        if (json_array_append_new(*out, v)) {
            rc = KP_ENOMEM;
            goto fail;
        }
    }
    return 0;
fail:
    json_decref(*out);
    *out = NULL;
    return rc;
}

/* Union of scalar lists; the order comes from order_list. */
static int merge_scalars(smp_t *c, json_t *orig, const json_t *patch, json_t **out)
{
    json_t *both = json_array(), *ix = json_object();
    int rc = both && ix ? 0 : KP_ENOMEM;
    const json_t *lists[2] = {orig, patch};
    for (int l = 0; l < 2 && !rc; l++) {
        size_t i;
        json_t *e;
        json_array_foreach(lists[l], i, e) {
            long at;
            if ((rc = pos_find(ix, e, NULL, &at))) break;
            if (at >= 0) continue;
            /* the patch's own nodes never enter the result */
            if ((rc = pos_add(ix, e, NULL, json_array_size(both)))) break;
            if (l ? json_array_append_new(both, json_deep_copy(e)) : json_array_append(both, e)) {
                rc = KP_ENOMEM;
                break;
            }
        }
    }
    json_decref(ix);
    if (!rc) rc = order_list(c, both, patch, orig, json_array_size(orig), NULL, out);
    json_decref(both);
    return rc;
}

/* Lists of maps keyed by `key` (see the top of the file). */
static int merge_keyed(smp_t *c, const json_t *items, const char *key, json_t *orig,
                       const json_t *patch, json_t **out)
{
    int rc = 0, replace = 0;
    json_t *base = json_copy(orig), *plain = json_array(), *merged = NULL;
    json_t *dels = json_object(), *bix = NULL;
    if (!base || !plain || !dels) {
        rc = KP_ENOMEM;
        goto done;
    }
    /* Directive elements first: deletions from the live list, a replace marker. */
    size_t i;
    const json_t *e;
    json_array_foreach(patch, i, e) {
        const json_t *dir = json_object_get(e, DIRECTIVE);
        const char *d = json_string_value(dir);
        if (!dir) {
            if (!json_object_get(e, key)) {
                rc = no_merge_key(c, KP_EINVAL, e, key);
                goto done;
            }
            if (json_array_append(plain, (json_t *)e)) {
                rc = KP_ENOMEM;
                goto done;
            }
        } else if (d && !strcmp(d, "delete")) {
            if (!json_object_get(e, key)) {
                rc = no_merge_key(c, KP_EINVAL, e, key);
                goto done;
            }
            if ((rc = pos_add(dels, e, key, 0))) goto done;
        } else if (d && !strcmp(d, "replace")) {
            replace = 1;
        } else if (d && !strcmp(d, "merge")) {
            rc = report(c->err, c->errlen, KP_EINVAL,
                        "merging lists cannot yet be specified in the patch");
            goto done;
        } else {
            rc = bad_patch_type(c, dir, e);
            goto done;
        }
    }
    if (replace) {
        rc = replace_list(c, items, plain, out);
        goto done;
    }
    if (json_object_size(dels)) { /* the live elements the deletions name go, in one pass */
        json_t *kept = json_array();
        if (!kept) {
            rc = KP_ENOMEM;
            goto done;
        }
        json_array_foreach(base, i, e) {
            long at;
            if ((rc = pos_find(dels, e, key, &at))) break;
            if (at < 0 && json_array_append(kept, (json_t *)e)) rc = KP_ENOMEM;
            if (rc) break;
        }
        json_decref(base);
        base = kept;
        if (rc) goto done;
    }
    size_t live = json_array_size(base);
    if (!(bix = pos_index(base, live, key))) {
        rc = KP_ENOMEM;
        goto done;
    }
    json_array_foreach(plain, i, e) {
        long at;
        if ((rc = pos_find(bix, e, key, &at))) goto done;
        if (at < 0 && (rc = pos_add(bix, e, key, json_array_size(base)))) goto done;
        json_t *v;
        rc = merge_map(c, items, at >= 0 ? json_array_get(base, (size_t)at) : NULL, e, &v);
        if (rc) goto done;
        if (at >= 0 ? json_array_set_new(base, (size_t)at, v) : json_array_append_new(base, v)) {
            rc = KP_ENOMEM;
            goto done;
        }
    }
    merged = base;
    base = NULL;
    /* The live order is the live list after deletions, before the additions. */
    rc = order_list(c, merged, plain, merged, live, key, out);
done:
    json_decref(base);
    json_decref(plain);
    json_decref(merged);
    json_decref(dels);
    json_decref(bix);
    return rc;
}

/* Merge the patch list into `orig` (both arrays) as the declared `field`
 * says; *out gets the new list. */
static int merge_list(smp_t *c, const json_t *field, json_t *orig, const json_t *patch,
                      json_t **out)
{
    *out = NULL;
    api_list_rules_t rules;
    api_schema_list_rules(field, &rules);
    const json_t *items = api_schema_items(c->s, field);
    if (!rules.merge) return replace_list(c, items, patch, out);
    json_type type;
    int none;
    int rc = element_type(c, orig, patch, &type, &none);
    if (rc) return rc;
    if (none) {
        *out = json_incref(orig);
        return 0;
    }
    if (type != JSON_OBJECT) return merge_scalars(c, orig, patch, out);
    if (!rules.merge_key)
        return report(c->err, c->errlen, KP_EINVAL,
                      "cannot merge lists without merge key for this field");
    return merge_keyed(c, items, rules.merge_key, orig, patch, out);
}

/* ---- maps ---- */

/* "$retainKeys": check the patch against the list, then drop the keys of
 * `m` the list does not name. */
static int retain_keys(smp_t *c, json_t *m, const json_t *patch, const json_t *keep)
{
    if (!json_is_array(keep))
        return report(c->err, c->errlen, KP_EINVAL, "invalid patch format of retainKeys");
    /* the list as a set (a non-string entry names ""): a probe per key */
    json_t *set = json_object();
    if (!set) return KP_ENOMEM;
    size_t i;
    const json_t *e;
    json_array_foreach(keep, i, e) {
        if (json_object_set_new(set, json_string_value(e) ?: "", json_true())) {
            json_decref(set);
            return KP_ENOMEM;
        }
    }
    const char *k;
    json_t *v, *tmp;
    int rc = 0;
    json_object_foreach((json_t *)patch, k, v) {
        if (json_is_null(v) || !strcmp(k, RETAIN_KEYS) || !strcmp(k, DIRECTIVE) ||
            prefixed(k, SET_ORDER) || prefixed(k, DELETE_FROM))
            continue;
        if (!json_object_get(set, k)) {
            rc = report(c->err, c->errlen, KP_EINVAL, "invalid patch format of retainKeys");
            break;
        }
    }
    if (!rc) {
        json_object_foreach_safe(m, tmp, k, v) {
            if (!json_object_get(set, k)) json_object_del(m, k);
        }
    }
    json_decref(set);
    return rc;
}

/* The relative order of the patch list's elements (deletions and markers
 * aside) must be that of the $setElementOrder list, which names them all. */
static int check_order(smp_t *c, const json_t *plist, const json_t *order, const char *key)
{
    size_t pi = 0, oi = 0, pn = json_array_size(plist), on = json_array_size(order);
    if (!pn || !on) return 0;
    while (pi < pn && oi < on) {
        const json_t *pe = json_array_get(plist, pi), *oe = json_array_get(order, oi);
        if (json_is_object(pe) && json_object_get(pe, DIRECTIVE)) {
            pi++;
            continue;
        }
        const json_t *a = pe, *b = oe;
        if (key) {
            a = json_object_get(pe, key);
            b = json_object_get(oe, key);
            if (!a) return no_merge_key(c, KP_EINVAL, pe, key);
            if (!b) return no_merge_key(c, KP_EINVAL, oe, key);
        }
        if (json_equal((json_t *)a, (json_t *)b)) pi++;
        oi++;
    }
    while (pi < pn && json_is_object(json_array_get(plist, pi)) &&
           json_object_get(json_array_get(plist, pi), DIRECTIVE))
        pi++;
    if (pi < pn) {
        char *p = dump(plist), *o = dump(order);
        int rc = report(c->err, c->errlen, KP_EINVAL,
                        "The order in patch list: %s doesn't match $setElementOrder list: %s",
                        p ? p : "?", o ? o : "?");
        free(p);
        free(o);
        return rc;
    }
    return 0;
}

/* "$setElementOrder/<name>": merge the list `name` and put it in that order. */
static int set_order(smp_t *c, const json_t *node, json_t *m, const json_t *patch, const char *name,
                     const json_t *order)
{
    if (!json_is_array(order) || !*name)
        return report(c->err, c->errlen, KP_EINVAL, "invalid patch format of setElementOrder list");
    json_t *ov = json_object_get(m, name);
    const json_t *pv = json_object_get(patch, name);
    if (ov && !json_is_array(ov))
        return report(c->err, c->errlen, KP_ECONFLICT,
                      "%s: $setElementOrder names a field that holds a %s, not a list", name,
                      type_name(ov));
    if (pv && !json_is_array(pv))
        return report(c->err, c->errlen, KP_EINVAL, "invalid patch format of setElementOrder list");
    if (!ov && !pv) return 0;
    const json_t *field = api_schema_field(c->s, node, name);
    api_list_rules_t rules;
    api_schema_list_rules(field, &rules);
    json_type type;
    int none;
    int rc = element_type(c, ov, pv, &type, &none);
    if (rc) return rc;
    /* A merge key orders maps; scalars (and maps of unkeyed lists) by value. */
    const char *key = type == JSON_OBJECT ? rules.merge_key : NULL;
    if (pv && (rc = check_order(c, pv, order, key))) return rc;
    size_t i;
    const json_t *e;
    json_array_foreach(order, i, e) {
        if (key && !json_object_get(e, key)) return no_merge_key(c, KP_EINVAL, e, key);
    }
    json_t *merged, *sorted;
    if (!pv)
        merged = json_incref(ov);
    else if ((rc = ov ? merge_list(c, field, ov, pv, &merged) : clean(c, field, pv, &merged)))
        return rc;
    rc = order_list(c, merged, order, ov, json_array_size(ov), key, &sorted);
    json_decref(merged);
    if (rc) return rc;
    return json_object_set_new(m, name, sorted) ? KP_ENOMEM : 0;
}

/* Merge the patch map into `m` (owned by the caller, changed in place); the
 * "$patch" key is the caller's business. */
static int merge_into(smp_t *c, const json_t *node, json_t *m, const json_t *patch)
{
    int rc;
    const char *k;
    const json_t *pv;
    const json_t *keep = json_object_get(patch, RETAIN_KEYS);
    if (keep && (rc = retain_keys(c, m, patch, keep))) return rc;
    int orders = 0;
    json_object_foreach((json_t *)patch, k, pv) {
        if (!prefixed(k, SET_ORDER)) continue;
        orders++;
        if ((rc = set_order(c, node, m, patch, k + strlen(SET_ORDER), pv))) return rc;
    }
    json_object_foreach((json_t *)patch, k, pv) {
        if (!strcmp(k, DIRECTIVE) || !strcmp(k, RETAIN_KEYS) || prefixed(k, SET_ORDER)) continue;
        int del = prefixed(k, DELETE_FROM);
        const char *name = del ? k + strlen(DELETE_FROM) : k;
        if (del && (!*name || !(json_is_array(pv) || json_is_null(pv))))
            return report(c->err, c->errlen, KP_EINVAL, "invalid patch format of primitive list");
        if (!del && orders) { /* a list that came with its order was merged above */
            size_t n = strlen(SET_ORDER) + strlen(k) + 1;
            char *ok = malloc(n);
            if (!ok) return KP_ENOMEM;
            snprintf(ok, n, "%s%s", SET_ORDER, k);
            int done = json_object_get(patch, ok) != NULL;
            free(ok);
            if (done) continue;
        }
        if (json_is_null(pv)) {
            json_object_del(m, name);
            continue;
        }
        json_t *ov = json_object_get(m, name), *nv = NULL;
        const json_t *field = api_schema_field(c->s, node, name);
        int same = ov && (json_typeof(ov) == json_typeof(pv) ||
                          (json_is_number(ov) && json_is_number(pv)) ||
                          (json_is_boolean(ov) && json_is_boolean(pv)));
        if (del) {
            if (!same || !json_is_array(ov)) continue; /* nothing to delete from */
            rc = delete_values(ov, pv, &nv);
        } else if (!same) {
            rc = clean(c, field, pv, &nv);
        } else if (json_is_object(pv)) {
            rc = strategy_has(field, "replace") ? clean(c, field, pv, &nv)
                                                : merge_map(c, field, ov, pv, &nv);
        } else if (json_is_array(pv)) {
            rc = merge_list(c, field, ov, pv, &nv);
        } else {
            nv = json_deep_copy(pv);
            rc = nv ? 0 : KP_ENOMEM;
        }
        if (rc) return rc;
        if (json_object_set_new(m, name, nv)) return KP_ENOMEM;
    }
    return 0;
}

/* Merge the patch map into `orig` (NULL: an empty map) as the schema node
 * says; *out gets the result, a new reference (orig itself when merged in
 * place). */
static int merge_map(smp_t *c, const json_t *node, json_t *orig, const json_t *patch, json_t **out)
{
    *out = NULL;
    const json_t *dir = json_object_get(patch, DIRECTIVE);
    const char *d = json_string_value(dir);
    json_t *m;
    if (!dir)
        m = orig ? json_incref(orig) : json_object();
    else if (d && !strcmp(d, "replace"))
        m = json_object();
    else if (d && !strcmp(d, "delete"))
        return (*out = json_object()) ? 0 : KP_ENOMEM;
    else
        return bad_patch_type(c, dir, patch);
    if (!m) return KP_ENOMEM;
    int rc = merge_into(c, node, m, patch);
    if (rc) {
        json_decref(m);
        return rc;
    }
    *out = m;
    return 0;
}

int api_strategic_merge_patch(const api_schema_t *s, const json_t *node, json_t *target,
                              const json_t *patch, char *err, size_t errlen)
{
    if (err && errlen) err[0] = '\0';
    if (!json_is_object(target) || !json_is_object(patch))
        return report(err, errlen, KP_EINVAL, "a strategic merge patch must be a JSON object");
    smp_t c = {s, err, errlen};
    json_t *res;
    int rc = merge_map(&c, node, target, patch, &res);
    if (rc) return rc;
    if (res != target && (json_object_clear(target) || json_object_update(target, res)))
        rc = KP_ENOMEM;
    json_decref(res);
    return rc;
}
