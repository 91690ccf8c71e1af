/*
 * yamljson.c -- YAML to JSON through libyaml's event API (see yamljson.h).
 *
 * Events become jansson values as they arrive, on an explicit stack of open
 * collections, so that every budget is checked before the work it bounds:
 *
 *   1. Depth. A sequence or mapping start that would open more than
 *      max_depth collections is refused at once, and libyaml is never asked
 *      for another event. This matters beyond our own stack: libyaml is
 *      quadratic in flow nesting by itself (each token walks its stack of
 *      possible simple keys, one a level; measured with the event API alone,
 *      10,000 levels of "[" cost 0.18 s of CPU and 20,000 levels 0.72 s), and
 *      its document loader was what we called before (50,000 levels: 5.4 s).
 *      Stopped at the cap, libyaml's stack holds at most the cap plus the
 *      1,024 characters a simple key may span. Within the cap the walk
 *      remains: 3 MiB of "a," inside 99 levels of "[" cost libyaml 0.84 s
 *      of CPU, against 0.14 s at one level (release build).
 *   2. Size. Each event charges an estimate of the JSON text it becomes to
 *      a running total (charge()), refused past max_bytes before the value
 *      is allocated.
 *   3. Aliases. An anchored node's size is what the running total grew by
 *      between its start and its end (aliases inside it included); it is
 *      kept with the node. Each alias charges that size to the alias total
 *      and to the running total, and is refused past max_alias_bytes or
 *      max_bytes, or when the copy would nest deeper than max_depth, before
 *      anything is copied.
 *
 * Invariants: c->depth frames are open, the innermost last; a frame owns its
 * collection until the collection's end event moves it into its parent (or
 * makes it the root); anchors hold their own reference to a completed node,
 * which nothing modifies afterwards (an alias inserts a deep copy).
 */
#include "yamljson.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "err.h"

#define STR_TAG "tag:yaml.org,2002:str"

/* An open sequence or mapping. */
typedef struct frame {
    json_t *c; /* the array or object being filled; owned */
    char *key; /* a mapping's pending key (owned); NULL while a key is due */
    size_t key_len;
    char *anchor;       /* the collection's anchor (owned), registered at its end */
    size_t start_bytes; /* conv.bytes before it started */
    int height;         /* collections nested in it so far, itself included */
} frame_t;

/* A completed anchored node. */
typedef struct anchor {
    json_t *v;    /* a reference of our own */
    char *text;   /* a scalar's text (owned), for use as a key; NULL for a collection */
    size_t len;   /* of text */
    size_t bytes; /* its estimated size, counted when it ended */
    int height;   /* 0 for a scalar */
} anchor_t;

typedef struct conv {
    const yamljson_limits_t *lim;
    frame_t *stack; /* c->depth open collections, innermost last */
    int depth, stack_cap;
    anchor_t *anchors;
    size_t n_anchors, anchors_cap;
    json_t *index;      /* anchor name -> position in anchors (a seeded hash) */
    size_t bytes;       /* estimated JSON size so far (<= lim->max_bytes) */
    size_t alias_bytes; /* of which from aliases (<= lim->max_alias_bytes) */
    json_t *root;       /* the document's value once complete */
    yaml_mark_t mark;   /* the start of the event at hand */
    char *err;
    size_t errlen;
} conv_t;

__attribute__((format(printf, 4, 5))) static int report(conv_t *c, int rc, yaml_mark_t at,
                                                        const char *fmt, ...)
{
    int n = snprintf(c->err, c->errlen, "yaml: line %lu, column %lu: ", (unsigned long)at.line + 1,
                     (unsigned long)at.column + 1);
    if (n >= 0 && (size_t)n < c->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return rc;
}

static int is_one_of(const char *s, const char *const *words)
{
    for (; *words; words++)
        if (!strcmp(s, *words)) return 1;
    return 0;
}

/* A plain scalar's JSON value, as YAML 1.1's core types resolve it. */
static json_t *plain_scalar(const char *s, size_t len)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
    static const char *const trues[] = {"true", "True", "TRUE", "yes", "Yes", "YES",
                                        "on",   "On",   "ON",   "y",   "Y",   NULL};
    static const char *const falses[] = {"false", "False", "FALSE", "no", "No", "NO",
                                         "off",   "Off",   "OFF",   "n",  "N",  NULL};
    if (is_one_of(s, nulls)) return json_null();
    if (is_one_of(s, trues)) return json_true();
    if (is_one_of(s, falses)) return json_false();
    size_t sign = *s == '-' || *s == '+';
    if (len > sign && strspn(s + sign, "0123456789") == len - sign) {
        errno = 0;
        char *end;
        long long v = strtoll(s, &end, 10);
        if (!errno && !*end) return json_integer(v);
    }
    if (len && strspn(s, "+-0123456789.eE") == len && strpbrk(s, "0123456789")) {
        errno = 0;
        char *end;
        double d = strtod(s, &end);
        if (!errno && !*end) return json_real(d);
    }
    if (!strcasecmp(s, ".inf") || !strcasecmp(s, "+.inf") || !strcasecmp(s, "-.inf") ||
        !strcasecmp(s, ".nan"))
        return json_stringn(s, len); /* JSON has no infinities */
    return json_stringn(s, len);
}

/* Add n bytes to the estimated size of the result, within max_bytes. */
static int charge(conv_t *c, size_t n)
{
    if (n > c->lim->max_bytes - c->bytes)
        return report(c, KP_ETOOLARGE, c->mark, "the document decodes to more than %zu bytes",
                      c->lim->max_bytes);
    c->bytes += n;
    return 0;
}

static frame_t *top(conv_t *c)
{
    return c->depth ? &c->stack[c->depth - 1] : NULL;
}

/* Is the next node of the innermost collection a mapping key? */
static int key_due(conv_t *c)
{
    frame_t *f = top(c);
    return f && json_is_object(f->c) && !f->key;
}

static int set_key(frame_t *f, const char *s, size_t len)
{
    if (!(f->key = malloc(len + 1))) return KP_ENOMEM;
    memcpy(f->key, s, len);
    f->key[len] = '\0';
    f->key_len = len;
    return 0;
}

/* Put a completed value (owned; taken even on error) of the given height
 * where it belongs: the innermost collection, or the root. */
static int put(conv_t *c, json_t *v, int height)
{
    frame_t *f = top(c);
    if (!f) {
        c->root = v;
        return 0;
    }
    if (f->height < height + 1) f->height = height + 1;
    if (json_is_array(f->c)) return json_array_append_new(f->c, v) ? KP_ENOMEM : 0;
    int rc = json_object_setn_new(f->c, f->key, f->key_len, v) ? KP_ENOMEM : 0;
    free(f->key);
    f->key = NULL;
    return rc;
}

/* Remember a completed node under its anchor name (a later definition of
 * the same name wins, as YAML says). v is borrowed; text may be NULL. */
static int anchor_add(conv_t *c, const char *name, json_t *v, const char *text, size_t len,
                      size_t bytes, int height)
{
    if (c->n_anchors == c->anchors_cap) {
        size_t cap = c->anchors_cap ? 2 * c->anchors_cap : 8;
        anchor_t *a = realloc(c->anchors, cap * sizeof *a);
        if (!a) return KP_ENOMEM;
        c->anchors = a;
        c->anchors_cap = cap;
    }
    anchor_t *a = &c->anchors[c->n_anchors];
    *a = (anchor_t){.len = len, .bytes = bytes, .height = height};
    if (text && !(a->text = strndup(text, len))) return KP_ENOMEM;
    if (json_object_set_new(c->index, name, json_integer((json_int_t)c->n_anchors))) {
        free(a->text);
        return KP_ENOMEM;
    }
    a->v = json_incref(v);
    c->n_anchors++;
    return 0;
}

static int on_scalar(conv_t *c, const yaml_event_t *e)
{
    const char *s = (const char *)e->data.scalar.value;
    size_t len = e->data.scalar.length;
    const char *anchor = (const char *)e->data.scalar.anchor;
    const char *tag = (const char *)e->data.scalar.tag;
    int is_key = key_due(c);
    /* "s", or "s": with the separator that follows */
    int rc = charge(c, len + (is_key ? 4 : 3));
    if (rc) return rc;
    json_t *v = NULL;
    if (!is_key || anchor) {
        int str = e->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || (tag && !strcmp(tag, STR_TAG));
        if (!(v = str ? json_stringn(s, len) : plain_scalar(s, len))) return KP_ENOMEM;
    }
    if (anchor && (rc = anchor_add(c, anchor, v, s, len, len + 3, 0))) {
        json_decref(v);
        return rc;
    }
    if (is_key) {
        json_decref(v);
        return set_key(top(c), s, len);
    }
    return put(c, v, 0);
}

static int on_start(conv_t *c, const yaml_char_t *anchor, int mapping)
{
    if (key_due(c)) return report(c, KP_EINVAL, c->mark, "a mapping key must be a scalar");
    if (c->depth >= c->lim->max_depth)
        return report(c, KP_ETOOLARGE, c->mark, "the document is nested deeper than %d levels",
                      c->lim->max_depth);
    size_t start = c->bytes;
    int rc = charge(c, 3); /* the brackets and the separator that follows */
    if (rc) return rc;
    if (c->depth == c->stack_cap) {
        int cap = c->stack_cap ? 2 * c->stack_cap : 16;
        if (cap > c->lim->max_depth) cap = c->lim->max_depth;
        frame_t *s = realloc(c->stack, (size_t)cap * sizeof *s);
        if (!s) return KP_ENOMEM;
        c->stack = s;
        c->stack_cap = cap;
    }
    frame_t f = {.c = mapping ? json_object() : json_array(), .start_bytes = start, .height = 1};
    if (!f.c) return KP_ENOMEM;
    if (anchor && !(f.anchor = strdup((const char *)anchor))) {
        json_decref(f.c);
        return KP_ENOMEM;
    }
    c->stack[c->depth++] = f;
    return 0;
}

static int on_end(conv_t *c)
{
    frame_t f = c->stack[--c->depth];
    free(f.key); /* libyaml gives a missing value as an empty scalar: NULL here */
    int rc = 0;
    if (f.anchor) rc = anchor_add(c, f.anchor, f.c, NULL, 0, c->bytes - f.start_bytes, f.height);
    free(f.anchor);
    if (rc) {
        json_decref(f.c);
        return rc;
    }
    return put(c, f.c, f.height);
}

static int on_alias(conv_t *c, const char *name)
{
    json_t *i = json_object_get(c->index, name);
    if (!i) return report(c, KP_EINVAL, c->mark, "unknown anchor '%s' referenced", name);
    const anchor_t *a = &c->anchors[json_integer_value(i)];
    int is_key = key_due(c);
    if (is_key && !a->text) return report(c, KP_EINVAL, c->mark, "a mapping key must be a scalar");
    if (a->height > c->lim->max_depth - c->depth)
        return report(c, KP_ETOOLARGE, c->mark, "the document is nested deeper than %d levels",
                      c->lim->max_depth);
    if (a->bytes > c->lim->max_alias_bytes - c->alias_bytes)
        return report(c, KP_ETOOLARGE, c->mark, "aliases expand to more than %zu bytes",
                      c->lim->max_alias_bytes);
    int rc = charge(c, a->bytes);
    if (rc) return rc;
    c->alias_bytes += a->bytes;
    if (is_key) return set_key(top(c), a->text, a->len);
    json_t *v = json_deep_copy(a->v);
    return v ? put(c, v, a->height) : KP_ENOMEM;
}

static int parser_error(conv_t *c, const yaml_parser_t *p)
{
    if (p->error == YAML_MEMORY_ERROR) return KP_ENOMEM;
    return report(c, KP_EINVAL, p->problem_mark, "%s", p->problem ? p->problem : "invalid YAML");
}

int yaml_to_json(const char *text, size_t len, const yamljson_limits_t *lim, json_t **out,
                 char *err, size_t errlen)
{
    *out = NULL;
    if (errlen) err[0] = '\0';
    conv_t c = {.lim = lim, .err = err, .errlen = errlen};
    yaml_parser_t p;
    if (!(c.index = json_object())) return KP_ENOMEM;
    if (!yaml_parser_initialize(&p)) {
        json_decref(c.index);
        return KP_ENOMEM;
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    int rc = 0, done = 0;
    while (!rc && !done) {
        yaml_event_t e;
        if (!yaml_parser_parse(&p, &e)) {
            rc = parser_error(&c, &p);
            break;
        }
        c.mark = e.start_mark;
        switch (e.type) {
        case YAML_SCALAR_EVENT:
            rc = on_scalar(&c, &e);
            break;
        case YAML_SEQUENCE_START_EVENT:
            rc = on_start(&c, e.data.sequence_start.anchor, 0);
            break;
        case YAML_MAPPING_START_EVENT:
            rc = on_start(&c, e.data.mapping_start.anchor, 1);
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            rc = on_end(&c);
            break;
        case YAML_ALIAS_EVENT:
            rc = on_alias(&c, (const char *)e.data.alias.anchor);
            break;
        case YAML_DOCUMENT_END_EVENT: /* the first document only, as yaml_parser_load */
        case YAML_STREAM_END_EVENT:
            done = 1;
            break;
        default: /* stream and document starts */
            break;
        }
        yaml_event_delete(&e);
    }
    if (!rc) {
        *out = c.root ? c.root : json_null();
        c.root = NULL;
    }
    while (c.depth) {
        frame_t *f = &c.stack[--c.depth];
        json_decref(f->c);
        free(f->key);
        free(f->anchor);
    }
    for (size_t i = 0; i < c.n_anchors; i++) {
        json_decref(c.anchors[i].v);
        free(c.anchors[i].text);
    }
    free(c.anchors);
    free(c.stack);
    json_decref(c.index);
    json_decref(c.root);
    yaml_parser_delete(&p);
    return rc;
}
