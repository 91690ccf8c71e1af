/*
 * managed_walk.c -- schema-directed walks of objects for field ownership:
 * field sets, comparison, merge and removal, with structured-merge-diff's
 * semantics (typed/tofieldset.go, typed.go's Compare, merge.go, remove.go).
 *
 * THE TYPE OF A VALUE (mti_of)
 *
 * structured-merge-diff sees every node as one of:
 *   leaf    a scalar, an atomic list or map (x-kubernetes-list-type atomic,
 *           x-kubernetes-map-type atomic, a list with no list rules), or an
 *           untyped value (no type in the schema: RawExtension and friends);
 *   struct  an object with declared properties;
 *   map     an object with additionalProperties (labels, data, ...);
 *   keyed   a list with x-kubernetes-list-type map and its map keys, or
 *           (without a list type) a patch merge key;
 *   set     a list with x-kubernetes-list-type set, or (without a list
 *           type) patch strategy merge and no key: a set of scalars.
 * A field the schema does not declare is "deduced" as Kubernetes does for
 * schemaless data: objects are maps of deduced values, lists are atomic.
 *
 * INVARIANTS
 *   1. A path is in a value's field set iff it is a leaf, a list element,
 *      a map entry / undeclared field, or an object field holding null or
 *      {} (ToFieldSet): other declared object fields enter only through
 *      the leaves below them.
 *   2. Compare reports leaves that were added, removed or changed, and
 *      non-leaf nodes (objects, lists, elements) that exist on one side
 *      only. Two empty-or-null containers compare as one leaf. A key that
 *      repeats in a stored list makes its elements one value: one member
 *      path in field sets, one leaf in comparisons.
 *   3. Merge keeps the live order of list elements the config does not
 *      touch and the config's order for the ones it does (merge.go's
 *      visitListItems); the config wins every leaf.
 *   4. Kubernetes compares Go objects, in which the non-pointer struct
 *      fields always exist. So an object field that a Go zero value holds
 *      (a required field, or one named in skel_names, reached from the root
 *      through object fields only) counts as present on the left even when
 *      absent: it gets no "." of its own when it appears. A creation
 *      compares against that zero value (f:spec has no ".", f:labels has).
 */
#include "apiserver/apply/managed_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"

typedef enum mtype { MT_LEAF, MT_STRUCT, MT_MAP, MT_KEYED, MT_SET } mtype_t;

typedef struct mti {
    mtype_t t;
    const json_t *node;  /* struct/map: the declared node; NULL when deduced */
    const json_t *items; /* keyed/set: the declared element node (may be NULL) */
    const json_t *keys;  /* keyed: x-kubernetes-list-map-keys */
    const char *key1;    /* keyed: the patch merge key, when keys is NULL */
} mti_t;

/* Object fields that are non-pointer structs in the Go types (so a zero
 * value holds them) although the schema does not call them required. */
static const char *const skel_names[] = {
    "metadata",       "spec",      "status",       "template", "jobTemplate",     "strategy",
    "updateStrategy", "resources", "loadBalancer", "nodeInfo", "daemonEndpoints", NULL,
};

static int in_list(const char *const *v, const char *k)
{
    for (; v && *v; v++)
        if (!strcmp(*v, k)) return 1;
    return 0;
}

static int map_atomic(const api_schema_t *s, const json_t *decl)
{
    const char *mt = json_string_value(json_object_get(decl, "x-kubernetes-map-type"));
    if (!mt)
        mt = json_string_value(
            json_object_get(api_schema_resolve(s, decl), "x-kubernetes-map-type"));
    return mt && !strcmp(mt, "atomic");
}

/* The type of a node declared as `decl` (known = 0: not in the schema),
 * holding `v` (NULL: judge by the schema alone). */
static void mti_of(const api_schema_t *s, const json_t *decl, int known, const json_t *v, mti_t *ti)
{
    memset(ti, 0, sizeof *ti);
    ti->t = MT_LEAF;
    if (!known) {
        if (!v || json_is_object(v)) ti->t = MT_MAP; /* deduced */
        return;
    }
    const json_t *r = api_schema_resolve(s, decl);
    api_schema_type_t ty = api_schema_type(s, decl);
    if (ty == API_SCHEMA_ANY) {
        int keep = json_is_true(json_object_get(r, "x-kubernetes-preserve-unknown-fields")) ||
                   json_is_true(json_object_get(decl, "x-kubernetes-preserve-unknown-fields"));
        if (keep && (!v || json_is_object(v))) ti->t = MT_MAP;
        return;
    }
    if (ty == API_SCHEMA_OBJECT || ty == API_SCHEMA_MAP) {
        if ((v && !json_is_object(v) && !json_is_null(v)) || map_atomic(s, decl)) return;
        ti->t = ty == API_SCHEMA_OBJECT ? MT_STRUCT : MT_MAP;
        ti->node = decl;
        return;
    }
    if (ty != API_SCHEMA_ARRAY || (v && !json_is_array(v) && !json_is_null(v))) return;
    api_list_rules_t lr;
    api_schema_list_rules(decl, &lr);
    if (!lr.list_type && !lr.merge && r != decl) api_schema_list_rules(r, &lr);
    ti->items = json_object_get(r, "items");
    if (lr.list_type) {
        if (!strcmp(lr.list_type, "map") && json_array_size(lr.map_keys)) {
            ti->t = MT_KEYED;
            ti->keys = lr.map_keys;
        } else if (!strcmp(lr.list_type, "set")) {
            ti->t = MT_SET;
        }
        return;
    }
    if (lr.merge && lr.merge_key) {
        ti->t = MT_KEYED;
        ti->key1 = lr.merge_key;
    } else if (lr.merge) {
        ti->t = MT_SET;
    }
}

/* The declared node of field k of a struct or map; *known 0 for a field
 * the schema does not declare, *named 1 for a declared property. */
static const json_t *child_of(const api_schema_t *s, const mti_t *ti, const char *k, int *known,
                              int *named)
{
    *known = *named = 0;
    if (!ti->node) return NULL;
    const json_t *r = api_schema_resolve(s, ti->node);
    const json_t *p = json_object_get(json_object_get(r, "properties"), k);
    if (p) {
        *known = *named = 1;
        return p;
    }
    p = json_object_get(r, "additionalProperties");
    if (!json_is_object(p)) return NULL;
    *known = 1;
    return p;
}

static int is_required(const api_schema_t *s, const json_t *decl, const char *k)
{
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(api_schema_resolve(s, decl), "required"), i, v)
    {
        if (json_is_string(v) && !strcmp(json_string_value(v), k)) return 1;
    }
    return 0;
}

static int mw_fail(api__mwalk_t *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int mw_fail(api__mwalk_t *w, const char *fmt, ...)
{
    if (!w->err || !w->errlen) return KP_EINVAL;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    buf_t b;
    buf_init(&b, API__MSET_BUF_MAX);
    int rc = api__path_display(w->pathv, w->depth, &b);
    snprintf(w->err, w->errlen, "%s%s%s", rc || !b.p ? "" : b.p, rc || !b.len ? "" : ": ", msg);
    buf_free(&b);
    return KP_EINVAL;
}

static int push(api__mwalk_t *w, const char *pe)
{
    if (w->depth >= API__MW_DEPTH) return mw_fail(w, "too deeply nested");
    w->pathv[w->depth++] = pe;
    return 0;
}

static void pop(api__mwalk_t *w)
{
    w->depth--;
}

static int skipped(const api__mwalk_t *w, const char *k)
{
    return !w->depth && in_list(w->reset, k);
}

/* Kubernetes' typed schema defaults the protocol of ContainerPort and
 * ServicePort to "TCP" (Go +default markers); the OpenAPI v2 facts carry
 * no defaults, so this one lives here. A list key with a default may be
 * omitted from an element. */
static const char *key_default(const api_schema_t *s, const mti_t *ti, const char *name)
{
    const json_t *el = api_schema_resolve(s, ti->items);
    if (!strcmp(name, "protocol") && json_object_get(json_object_get(el, "properties"), name))
        return "TCP";
    return NULL;
}

/* The path element of list element `el` (index i) into pe. With quiet,
 * no message is written on KP_EINVAL. */
static int elem_pe(api__mwalk_t *w, const mti_t *ti, const json_t *el, size_t i, int quiet,
                   buf_t *pe)
{
    const char *why = NULL;
    if (ti->t == MT_SET) {
        if (json_is_object(el))
            why = "associative list without keys has an element that's a map type";
        else if (json_is_array(el))
            why = "not supported: associative list with lists as elements";
        else if (json_is_null(el))
            why = "associative list without keys has an element that's an explicit null";
        if (!why) return api__pe_value(el, pe);
        return quiet ? KP_EINVAL : mw_fail(w, "element %zu: %s", i, why);
    }
    if (json_is_null(el))
        why = "associative list with keys may not have a null element";
    else if (!json_is_object(el))
        why = "associative list with keys may not have non-map elements";
    if (why) return quiet ? KP_EINVAL : mw_fail(w, "element %zu: %s", i, why);
    json_t *keys = json_object();
    if (!keys) return KP_ENOMEM;
    size_t nk = ti->keys ? json_array_size(ti->keys) : 1;
    int rc = 0;
    for (size_t k = 0; k < nk && !rc; k++) {
        const char *name = ti->keys ? json_string_value(json_array_get(ti->keys, k)) : ti->key1;
        if (!name) continue;
        json_t *v = json_object_get(el, name);
        const char *def = v ? NULL : key_default(w->s, ti, name);
        if (!v && !def) {
            rc = quiet ? KP_EINVAL
                       : mw_fail(w,
                                 "element %zu: associative list with keys has an element that "
                                 "omits key field \"%s\" (and doesn't have default value)",
                                 i, name);
        } else if (v ? json_object_set(keys, name, v)
                     : json_object_set_new(keys, name, json_string(def))) {
            rc = KP_ENOMEM;
        }
    }
    if (!rc) rc = api__pe_key(keys, pe);
    json_decref(keys);
    return rc;
}

static int dup_fail(api__mwalk_t *w, const char *pe)
{
    buf_t b;
    buf_init(&b, API__MSET_BUF_MAX);
    int rc = api__path_display(&pe, 1, &b);
    rc = rc ? rc : mw_fail(w, "duplicate entries for key %s", b.p);
    buf_free(&b);
    return rc;
}

/* The root is an object: with no object schema (kind NULL, or a node of
 * no type) its fields are deduced. */
static int root_known(const api__mwalk_t *w, const json_t *kind)
{
    api_schema_type_t t = api_schema_type(w->s, kind);
    return kind && (t == API_SCHEMA_OBJECT || t == API_SCHEMA_MAP);
}

/* --- field sets ------------------------------------------------------- */

static int toset(api__mwalk_t *w, const json_t *v, const json_t *decl, int known, json_t *node);

/* The elements of a keyed or set list. A key that repeats is an error in a
 * config (strict); in a stored object the element path is a member once
 * and nothing below it is (tofieldset.go's duplicates). */
static int toset_list(api__mwalk_t *w, const mti_t *ti, const json_t *v, json_t *node, buf_t *pe)
{
    json_t *seen = json_object();
    int rc = seen ? 0 : KP_ENOMEM;
    size_t i;
    json_t *el;
    json_array_foreach(v, i, el)
    {
        if (rc || (rc = elem_pe(w, ti, el, i, 0, pe))) break;
        json_t *n = json_object_get(seen, pe->p);
        if (n && w->strict) {
            rc = dup_fail(w, pe->p);
            break;
        }
        if (json_object_set_new(seen, pe->p, json_integer(n ? 2 : 1))) rc = KP_ENOMEM;
    }
    json_array_foreach(v, i, el)
    {
        json_t *c;
        if (rc || (rc = elem_pe(w, ti, el, i, 0, pe))) break;
        if (!(c = api__mset_child(node, pe->p))) {
            rc = KP_ENOMEM;
            break;
        }
        if (json_integer_value(json_object_get(seen, pe->p)) == 1 && !(rc = push(w, pe->p))) {
            rc = toset(w, el, ti->items, ti->items != NULL, c);
            pop(w);
        }
        if (!rc) rc = api__mset_insert(c);
        api__mset_prune(node, pe->p);
    }
    json_decref(seen);
    return rc;
}

static int toset(api__mwalk_t *w, const json_t *v, const json_t *decl, int known, json_t *node)
{
    mti_t ti;
    mti_of(w->s, decl, known, v, &ti);
    if (ti.t == MT_LEAF) return api__mset_insert(node);
    buf_t pe;
    buf_init(&pe, API__MSET_BUF_MAX);
    int rc = 0;
    if (ti.t == MT_STRUCT || ti.t == MT_MAP) {
        const char *k;
        json_t *cv;
        json_object_foreach((json_t *)v, k, cv)
        {
            if (skipped(w, k)) continue;
            int ck, named;
            const json_t *cd = child_of(w->s, &ti, k, &ck, &named);
            json_t *c;
            if ((rc = api__pe_field(k, &pe))) break;
            if (!(c = api__mset_child(node, pe.p))) {
                rc = KP_ENOMEM;
                break;
            }
            if (!(rc = push(w, pe.p))) {
                rc = toset(w, cv, cd, ck, c);
                pop(w);
            }
            /* Map entries are members; so are object fields holding null or
             * {} (an applier owns "emptyDir: {}"). */
            if (!rc &&
                (!named || json_is_null(cv) || (json_is_object(cv) && !json_object_size(cv))))
                rc = api__mset_insert(c);
            api__mset_prune(node, pe.p);
            if (rc) break;
        }
    } else {
        rc = toset_list(w, &ti, v, node, &pe);
    }
    buf_free(&pe);
    return rc;
}

int api__mw_toset(api__mwalk_t *w, const json_t *obj, const json_t *kind, json_t *set)
{
    w->depth = 0;
    return toset(w, obj, kind, root_known(w, kind), set);
}

/* --- comparison ------------------------------------------------------- */

typedef struct cmpsets {
    json_t *a, *m, *r; /* added, modified, removed: the nodes of the current path */
} cmpsets_t;

static int same_kind(const json_t *l, const json_t *r)
{
    if (!l || !r || json_is_null(l) || json_is_null(r)) return 1;
    if (json_is_object(l) || json_is_object(r)) return json_is_object(l) && json_is_object(r);
    if (json_is_array(l) || json_is_array(r)) return json_is_array(l) && json_is_array(r);
    return 1;
}

static int cmp_leaf(const json_t *l, const json_t *r, cmpsets_t *cs)
{
    if (!l) return api__mset_insert(cs->a);
    if (!r) return api__mset_insert(cs->r);
    return api__val_equal(l, r) ? 0 : api__mset_insert(cs->m);
}

static int cmp(api__mwalk_t *w, const json_t *l, const json_t *r, const json_t *decl, int known,
               int skel, cmpsets_t *cs);

/* set's child node pe, made if missing, when `wanted` and set is there;
 * else NULL. *oom set when it could not be made. */
static json_t *sub_set(json_t *set, int wanted, const char *pe, int *oom)
{
    if (!wanted || !set) return NULL;
    json_t *c = api__mset_child(set, pe);
    if (!c) *oom = 1;
    return c;
}

static int cmp_child(api__mwalk_t *w, const char *pe, const json_t *l, const json_t *r,
                     const json_t *decl, int known, int skel, cmpsets_t *cs)
{
    /* Nothing under an unchanged value is added, modified or removed; most
     * of an update is unchanged (a status write leaves metadata and spec
     * alone), and json_equal costs far less than walking it. */
    if (l && r && json_equal(l, r)) return 0;
    /* Below a value only one side has, everything is added (no l) or
     * removed (no r): the other sets get no node (a create walks the whole
     * object so). */
    int oom = 0;
    cmpsets_t c = {sub_set(cs->a, r != NULL, pe, &oom), sub_set(cs->m, l && r, pe, &oom),
                   sub_set(cs->r, l != NULL, pe, &oom)};
    int rc = oom ? KP_ENOMEM : push(w, pe);
    if (!rc) {
        rc = cmp(w, l, r, decl, known, skel, &c);
        pop(w);
    }
    api__mset_prune(cs->a, pe);
    api__mset_prune(cs->m, pe);
    api__mset_prune(cs->r, pe);
    return rc;
}

static int cmp_fields(api__mwalk_t *w, const mti_t *ti, const json_t *lo, const json_t *ro,
                      int skel, cmpsets_t *cs)
{
    buf_t pe;
    buf_init(&pe, API__MSET_BUF_MAX);
    int rc = 0;
    for (int side = 0; side < 2 && !rc; side++) {
        const json_t *o = side ? ro : lo;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)o, k, v)
        {
            if (skipped(w, k) || (side && json_object_get(lo, k))) continue;
            int ck, named;
            const json_t *cd = child_of(w->s, ti, k, &ck, &named);
            int cskel = skel && ti->t == MT_STRUCT && named &&
                        (is_required(w->s, ti->node, k) || in_list(skel_names, k));
            if ((rc = api__pe_field(k, &pe))) break;
            rc = cmp_child(w, pe.p, json_object_get(lo, k), json_object_get(ro, k), cd, ck, cskel,
                           cs);
            if (rc) break;
        }
    }
    buf_free(&pe);
    return rc;
}

/* Index a list's elements by path element: pe -> [elements with that key]. */
static int index_list(api__mwalk_t *w, const mti_t *ti, const json_t *list, json_t *idx)
{
    buf_t pe;
    buf_init(&pe, API__MSET_BUF_MAX);
    int rc = 0;
    size_t i;
    json_t *el;
    json_array_foreach(list, i, el)
    {
        if ((rc = elem_pe(w, ti, el, i, 0, &pe))) break;
        json_t *group = json_object_get(idx, pe.p);
        if (!group && (!(group = json_array()) || json_object_set_new(idx, pe.p, group))) {
            rc = KP_ENOMEM;
            break;
        }
        if (json_array_append(group, el)) {
            rc = KP_ENOMEM;
            break;
        }
    }
    buf_free(&pe);
    return rc;
}

static int mark(json_t *set, const char *pe)
{
    json_t *c = api__mset_child(set, pe);
    return c ? api__mset_insert(c) : KP_ENOMEM;
}

/* compare.go's visitListItems. A key held by one element on each side
 * compares element to element; a repeated key (only stored objects have
 * them) makes its elements one atomic value. */
static int cmp_list(api__mwalk_t *w, const mti_t *ti, const json_t *la, const json_t *ra,
                    cmpsets_t *cs)
{
    json_t *li = json_object(), *ri = json_object();
    int rc = li && ri ? 0 : KP_ENOMEM;
    if (!rc) rc = index_list(w, ti, la, li);
    if (!rc) rc = index_list(w, ti, ra, ri);
    for (int side = 0; side < 2 && !rc; side++) {
        const char *k;
        json_t *v;
        json_object_foreach(side ? ri : li, k, v)
        {
            if (side && json_object_get(li, k)) continue;
            const json_t *lg = json_object_get(li, k), *rg = json_object_get(ri, k);
            size_t nl = json_array_size(lg), nr = json_array_size(rg);
            const json_t *items = ti->items;
            if (nl <= 1 && nr <= 1) {
                rc = cmp_child(w, k, json_array_get(lg, 0), json_array_get(rg, 0), items,
                               items != NULL, 0, cs);
            } else if (nl >= 2 && nr >= 2) {
                rc = api__val_equal(lg, rg) ? 0 : mark(cs->m, k);
            } else if (nl >= 2) {
                if (nr)
                    rc = cmp_child(w, k, NULL, json_array_get(rg, 0), items, items != NULL, 0, cs);
                if (!rc) rc = mark(cs->r, k);
            } else {
                if (nl)
                    rc = cmp_child(w, k, json_array_get(lg, 0), NULL, items, items != NULL, 0, cs);
                if (!rc) rc = mark(cs->a, k);
            }
            if (rc) break;
        }
    }
    json_decref(li);
    json_decref(ri);
    return rc;
}

static int cmp(api__mwalk_t *w, const json_t *l, const json_t *r, const json_t *decl, int known,
               int skel, cmpsets_t *cs)
{
    mti_t ti;
    mti_of(w->s, decl, known, r ? r : l, &ti);
    if (!same_kind(l, r)) ti.t = MT_LEAF;
    int rc;
    if (ti.t == MT_STRUCT || ti.t == MT_MAP) {
        const json_t *lo = json_is_object(l) ? l : NULL, *ro = json_is_object(r) ? r : NULL;
        if (!json_object_size(lo) && !json_object_size(ro)) return cmp_leaf(l, r, cs);
        rc = cmp_fields(w, &ti, lo, ro, skel, cs);
    } else if (ti.t == MT_KEYED || ti.t == MT_SET) {
        const json_t *la = json_is_array(l) ? l : NULL, *ra = json_is_array(r) ? r : NULL;
        if (!json_array_size(la) && !json_array_size(ra)) return cmp_leaf(l, r, cs);
        rc = cmp_list(w, &ti, la, ra, cs);
    } else {
        return cmp_leaf(l, r, cs);
    }
    if (rc) return rc;
    if (!l) return skel ? 0 : api__mset_insert(cs->a);
    if (!r) return api__mset_insert(cs->r);
    return 0;
}

int api__mw_compare(api__mwalk_t *w, const json_t *l, const json_t *r, const json_t *kind,
                    json_t *added, json_t *modified, json_t *removed)
{
    cmpsets_t cs = {added, modified, removed};
    json_t *zero = l ? NULL : json_object();
    if (!l && !zero) return KP_ENOMEM;
    w->depth = 0;
    int rc = cmp(w, l ? l : zero, r, kind, root_known(w, kind), 1, &cs);
    json_decref(zero);
    return rc;
}

/* --- merge ------------------------------------------------------------ */

static int merge(api__mwalk_t *w, const json_t *l, const json_t *r, const json_t *decl, int known,
                 json_t **out);

static int merge_child(api__mwalk_t *w, const char *pe, const json_t *l, const json_t *r,
                       const json_t *decl, int known, json_t **out)
{
    int rc = push(w, pe);
    if (rc) return rc;
    rc = merge(w, l, r, decl, known, out);
    pop(w);
    return rc;
}

static int merge_fields(api__mwalk_t *w, const mti_t *ti, const json_t *lo, const json_t *ro,
                        json_t **out)
{
    json_t *o = json_object();
    buf_t pe;
    buf_init(&pe, API__MSET_BUF_MAX);
    int rc = o ? 0 : KP_ENOMEM;
    for (int side = 0; side < 2 && !rc; side++) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)(side ? ro : lo), k, v)
        {
            if (side && json_object_get(lo, k)) continue;
            int ck, named;
            const json_t *cd = child_of(w->s, ti, k, &ck, &named);
            json_t *c = NULL;
            if (!(rc = api__pe_field(k, &pe)))
                rc = merge_child(w, pe.p, json_object_get(lo, k), json_object_get(ro, k), cd, ck,
                                 &c);
            if (!rc && c && json_object_set_new(o, k, c)) rc = KP_ENOMEM;
            if (rc) break;
        }
    }
    buf_free(&pe);
    if (rc) {
        json_decref(o);
        return rc;
    }
    *out = o;
    return 0;
}

typedef struct lent {
    char *pe;
    const json_t *v;
} lent_t;

static void lents_free(lent_t *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i].pe);
    free(v);
}

/* The elements of `list` with their path elements. For the config (rhs) a
 * repeated key is an error. For live, only the first element of a key the
 * config also names takes part; live's other repeats of such a key are
 * dropped (the config now speaks for that key), repeats of keys the config
 * does not name are kept as they are. */
static int list_entries(api__mwalk_t *w, const mti_t *ti, const json_t *list, int rhs,
                        const json_t *rmap, json_t *map, lent_t **out, size_t *n)
{
    size_t len = json_array_size(list), k = 0, i;
    lent_t *v = calloc(len ? len : 1, sizeof *v);
    buf_t pe;
    buf_init(&pe, API__MSET_BUF_MAX);
    int rc = v ? 0 : KP_ENOMEM;
    json_t *el;
    json_array_foreach(list, i, el)
    {
        if (rc || (rc = elem_pe(w, ti, el, i, 0, &pe))) break;
        if (json_object_get(map, pe.p)) {
            if (rhs) {
                rc = dup_fail(w, pe.p);
                break;
            }
            if (json_object_get(rmap, pe.p)) continue;
        } else if (json_object_set_new(map, pe.p, json_integer((json_int_t)k))) {
            rc = KP_ENOMEM;
            break;
        }
        if (!(v[k].pe = strdup(pe.p))) {
            rc = KP_ENOMEM;
            break;
        }
        v[k++].v = el;
    }
    buf_free(&pe);
    *out = v;
    *n = k;
    return rc;
}

static const json_t *lmap_first(const lent_t *L, const json_t *lmap, const char *pe)
{
    const json_t *i = json_object_get(lmap, pe);
    return i ? L[json_integer_value(i)].v : NULL;
}

/* merge.go's visitListItems: shared elements in the config's order, live
 * elements the config does not name kept where they were. */
static int merge_list(api__mwalk_t *w, const mti_t *ti, const json_t *la, const json_t *ra,
                      json_t **out)
{
    json_t *lmap = json_object(), *rmap = json_object(), *o = json_array();
    lent_t *L = NULL, *R = NULL;
    size_t nl = 0, nr = 0, *shared = NULL, ns = 0, si = 0;
    int rc = lmap && rmap && o ? 0 : KP_ENOMEM;
    if (!rc) rc = list_entries(w, ti, ra, 1, NULL, rmap, &R, &nr);
    if (!rc) rc = list_entries(w, ti, la, 0, rmap, lmap, &L, &nl);
    if (!rc && !(shared = calloc(nr ? nr : 1, sizeof *shared))) rc = KP_ENOMEM;
    for (size_t i = 0; !rc && i < nr; i++)
        if (json_object_get(lmap, R[i].pe)) shared[ns++] = i;
    const char *next = !rc && ns ? R[shared[si++]].pe : NULL;
    size_t li = 0, ri = 0;
    while (!rc && (li < nl || ri < nr)) {
        const json_t *lv = NULL, *rv = NULL;
        const char *pe = NULL;
        int take = 0; /* 1: L[li], 2: R[ri] (merged with live's), 3: both */
        if (li < nl && ri < nr) {
            if (!strcmp(L[li].pe, R[ri].pe)) {
                take = 3;
            } else if (json_object_get(rmap, L[li].pe) && next && strcmp(next, L[li].pe)) {
                li++; /* a shared element, merged when the config reaches it */
                continue;
            }
        }
        if (!take && li < nl && !json_object_get(rmap, L[li].pe)) take = 1;
        if (!take && ri < nr) take = 2;
        if (!take) break; /* cannot happen: see the loop's proof in merge.go */
        if (take == 1) {
            pe = L[li].pe, lv = L[li++].v;
        } else {
            pe = R[ri].pe, rv = R[ri].v;
            lv = take == 3 ? L[li++].v : lmap_first(L, lmap, pe);
            ri++;
            if (take == 3 || (next && !strcmp(next, pe)))
                next = si < ns ? R[shared[si++]].pe : NULL;
        }
        json_t *c = NULL;
        rc = merge_child(w, pe, lv, rv, ti->items, ti->items != NULL, &c);
        if (!rc && c && json_array_append_new(o, c)) rc = KP_ENOMEM;
    }
    lents_free(L, nl);
    lents_free(R, nr);
    free(shared);
    json_decref(lmap);
    json_decref(rmap);
    if (rc) {
        json_decref(o);
        return rc;
    }
    *out = o;
    return 0;
}

static int merge(api__mwalk_t *w, const json_t *l, const json_t *r, const json_t *decl, int known,
                 json_t **out)
{
    *out = NULL;
    mti_t ti;
    mti_of(w->s, decl, known, r ? r : l, &ti);
    if (!same_kind(l, r)) ti.t = MT_LEAF;
    if (ti.t == MT_STRUCT || ti.t == MT_MAP) {
        const json_t *lo = json_is_object(l) ? l : NULL, *ro = json_is_object(r) ? r : NULL;
        if (json_object_size(lo) || json_object_size(ro)) return merge_fields(w, &ti, lo, ro, out);
    } else if (ti.t == MT_KEYED || ti.t == MT_SET) {
        const json_t *la = json_is_array(l) ? l : NULL, *ra = json_is_array(r) ? r : NULL;
        if (json_array_size(la) || json_array_size(ra)) return merge_list(w, &ti, la, ra, out);
    }
    *out = json_deep_copy(r ? r : l);
    return *out ? 0 : KP_ENOMEM;
}

int api__mw_merge(api__mwalk_t *w, const json_t *l, const json_t *r, const json_t *kind,
                  json_t **out)
{
    w->depth = 0;
    return merge(w, l, r, kind, root_known(w, kind), out);
}

/* --- removal ---------------------------------------------------------- */

static int rm(api__mwalk_t *w, const json_t *v, const json_t *decl, int known, const json_t *set,
              json_t **out)
{
    *out = NULL;
    mti_t ti;
    mti_of(w->s, decl, known, v, &ti);
    int fields = (ti.t == MT_STRUCT || ti.t == MT_MAP) && json_object_size(v);
    int list = (ti.t == MT_KEYED || ti.t == MT_SET) && json_array_size(v);
    if (!fields && !list) {
        *out = json_deep_copy(v);
        return *out ? 0 : KP_ENOMEM;
    }
    json_t *o = fields ? json_object() : json_array();
    buf_t pe;
    buf_init(&pe, API__MSET_BUF_MAX);
    int rc = o ? 0 : KP_ENOMEM;
    if (fields && !rc) {
        const char *k;
        json_t *cv;
        json_object_foreach((json_t *)v, k, cv)
        {
            int ck, named;
            const json_t *cd = child_of(w->s, &ti, k, &ck, &named), *sub;
            json_t *c = NULL;
            if ((rc = api__pe_field(k, &pe))) break;
            sub = json_object_get(set, pe.p);
            if (api__mset_member(sub)) continue;
            rc = sub ? rm(w, cv, cd, ck, sub, &c) : (c = json_deep_copy(cv)) ? 0 : KP_ENOMEM;
            if (!rc && c && json_object_set_new(o, k, c)) rc = KP_ENOMEM;
            if (rc) break;
        }
    } else if (!rc) {
        size_t i;
        json_t *el;
        json_array_foreach(v, i, el)
        {
            const json_t *sub = NULL;
            json_t *c = NULL;
            rc = elem_pe(w, &ti, el, i, 1, &pe);
            if (rc == KP_ENOMEM) break;
            if (!rc) sub = json_object_get(set, pe.p);
            if (api__mset_member(sub)) continue;
            rc = sub                        ? rm(w, el, ti.items, ti.items != NULL, sub, &c)
                 : (c = json_deep_copy(el)) ? 0
                                            : KP_ENOMEM;
            if (!rc && c && json_array_append_new(o, c)) rc = KP_ENOMEM;
            if (rc) break;
        }
    }
    buf_free(&pe);
    if (rc || !(fields ? json_object_size(o) : json_array_size(o))) {
        json_decref(o); /* emptied by the removal: dropped, as Kubernetes does */
        return rc;
    }
    *out = o;
    return 0;
}

int api__mw_remove(api__mwalk_t *w, const json_t *obj, const json_t *kind, const json_t *set,
                   json_t **out)
{
    w->depth = 0;
    int rc = rm(w, obj, kind, root_known(w, kind), set, out);
    if (!rc && !*out && !(*out = json_object())) rc = KP_ENOMEM;
    return rc;
}

/* --- named fields ----------------------------------------------------- */

static int ensure(api__mwalk_t *w, const json_t *set, const json_t *decl, int known, json_t *out)
{
    mti_t ti;
    mti_of(w->s, decl, known, NULL, &ti);
    const char *k;
    json_t *child;
    json_object_foreach((json_t *)set, k, child)
    {
        int rc;
        if (!strcmp(k, ".")) {
            if ((rc = api__mset_insert(out))) return rc;
            continue;
        }
        json_t *c = api__mset_child(out, k);
        if (!c) return KP_ENOMEM;
        int ck = 0, named = 0;
        const json_t *cd = NULL;
        if (k[0] == 'f' && (ti.t == MT_STRUCT || ti.t == MT_MAP)) {
            cd = child_of(w->s, &ti, k + 2, &ck, &named);
        } else if (k[0] != 'f' && (ti.t == MT_KEYED || ti.t == MT_SET)) {
            cd = ti.items;
            ck = cd != NULL;
        } else {
            if ((rc = api__mset_union(c, child))) return rc; /* not this shape: as it is */
            continue;
        }
        if (named && json_object_size(child) > (size_t)api__mset_member(child) &&
            (rc = api__mset_insert(c)))
            return rc;
        if ((rc = ensure(w, child, cd, ck, c))) return rc;
        api__mset_prune(out, k);
    }
    return 0;
}

json_t *api__mw_ensure_named(api__mwalk_t *w, const json_t *set, const json_t *kind)
{
    json_t *out = json_object();
    if (out && ensure(w, set, kind, root_known(w, kind), out)) {
        json_decref(out);
        out = NULL;
    }
    return out;
}
