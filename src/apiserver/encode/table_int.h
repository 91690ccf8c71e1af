/*
 * table_int.h -- internal to the Table printers (table.c, table_cells.c,
 * table_core.c, table_groups.c): the shape of a printer, and the cell
 * helpers every printer uses (Kubernetes' printers.go helpers:
 * translateTimestampSince, labels.FormatLabels, FormatLabelSelector,
 * layoutContainerCells).
 *
 * A printer is a kind's column definitions plus a row function that appends
 * exactly one cell per column (the wide ones too). Cells are built from the
 * stored object, which is borrowed and never modified. A failed allocation
 * only makes a row come out short; api_table_add_row() counts the cells and
 * answers KP_ENOMEM, so row functions never check appends.
 *
 * Not thread-unsafe anywhere: no state outside the arguments.
 */
#ifndef KP_TABLE_INT_H
#define KP_TABLE_INT_H

#include <jansson.h>
#include <stdint.h>
#include <string.h>

#include "apiserver/encode/table.h"
#include "lib/buf.h"

#define API_TABLE_NO_TIME  INT64_MIN  /* Go's zero metav1.Time */
#define API_TABLE_CELL_MAX (1u << 20) /* cap on one rendered cell */

/* ---- a printer ---------------------------------------------------------- */

typedef struct api_table_col {
    const char *name;
    const char *type;
    const char *format;
    const char *desc;
    int priority; /* 1: shown with -o wide only */
} api_table_col_t;

/* Append the cells of `obj` to `cells` (row: the row object, for
 * conditions); `now` is the time ages are measured to, in Unix seconds. */
typedef void (*api_table_row_fn)(json_t *row, json_t *cells, const json_t *obj, int64_t now);

typedef struct api_table_printer {
    const char *group;
    const char *resource;
    const api_table_col_t *cols;
    size_t ncols;
    api_table_row_fn row;
} api_table_printer_t;

/* Column initialisers: C a normal column, W a wide one (priority 1). */
#define C(n, t, d)                                                                                 \
    {                                                                                              \
        n, t, "", d, 0                                                                             \
    }
#define W(n, t, d)                                                                                 \
    {                                                                                              \
        n, t, "", d, 1                                                                             \
    }
#define COL_NAME                                                                                   \
    {                                                                                              \
        "Name", "string", "name", "Name of the object, unique within its namespace.", 0            \
    }
#define COL_AGE        C("Age", "string", "Time since the object was created.")
#define COL_CONTAINERS W("Containers", "string", "Container names of the pod template.")
#define COL_IMAGES     W("Images", "string", "Container images of the pod template.")
#define COL_SELECTOR   W("Selector", "string", "Label selector of the pods this object manages.")
#define PRINTER(g, r, c, f)                                                                        \
    {                                                                                              \
        g, r, c, sizeof c / sizeof c[0], f                                                         \
    }

/* The printers of table_core.c (the core group's kinds added with issue 15)
 * and table_groups.c (the other groups), searched after table.c's own. */
extern const api_table_printer_t api__table_printers_core[];
extern const size_t api__table_printers_core_n;
extern const api_table_printer_t api__table_printers_groups[];
extern const size_t api__table_printers_groups_n;

/* ---- reading objects (all tolerate NULL and wrong types) ---------------- */

static inline const json_t *jget(const json_t *o, const char *k)
{
    return json_is_object(o) ? json_object_get(o, k) : NULL;
}

/* The string at o.k, or "" when missing or not a string. */
static inline const char *jstr(const json_t *o, const char *k)
{
    const char *s = json_string_value(jget(o, k));
    return s ? s : "";
}

static inline json_int_t jint(const json_t *o, const char *k, json_int_t dflt)
{
    const json_t *v = jget(o, k);
    return json_is_integer(v) ? json_integer_value(v) : dflt;
}

static inline const json_t *jdig2(const json_t *o, const char *a, const char *b)
{
    return jget(jget(o, a), b);
}

/* Whether o.k is present and not null (a Go pointer that is set). */
static inline int jset(const json_t *o, const char *k)
{
    const json_t *v = jget(o, k);
    return v && !json_is_null(v);
}

/* ---- a capped string builder over buf_t (sticky error) ------------------- */

typedef struct sb {
    buf_t b;
    int err;
} sb_t;

static inline void sb_init(sb_t *s)
{
    buf_init(&s->b, API_TABLE_CELL_MAX);
    s->err = 0;
}

static inline void sb_putn(sb_t *s, const char *p, size_t n)
{
    if (!s->err && n && buf_append(&s->b, p, n)) s->err = 1;
}

static inline void sb_put(sb_t *s, const char *p)
{
    sb_putn(s, p, strlen(p));
}

static inline const char *sb_str(const sb_t *s)
{
    return s->b.p ? s->b.p : "";
}

/* The contents as a JSON string (NULL on error); the builder is released. */
static inline json_t *sb_take(sb_t *s)
{
    json_t *j = s->err ? NULL : json_stringn(sb_str(s), s->b.len);
    buf_free(&s->b);
    return j;
}

/* printf into the builder; only short forms (numbers): longer output sets
 * the error. */
void api__table_sbf(sb_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- cells ---------------------------------------------------------------- */

static inline void cell(json_t *cells, json_t *v)
{
    json_array_append_new(cells, v);
}
static inline void cell_str(json_t *cells, const char *s)
{
    cell(cells, json_string(s));
}
static inline void cell_int(json_t *cells, json_int_t v)
{
    cell(cells, json_integer(v));
}
static inline void cell_bool(json_t *cells, int v)
{
    cell(cells, json_boolean(v));
}
static inline void cell_sb(json_t *cells, sb_t *s)
{
    cell(cells, sb_take(s));
}
/* s, or `dflt` when s is empty. */
static inline const char *or_else(const char *s, const char *dflt)
{
    return *s ? s : dflt;
}
static inline void cell_name(json_t *cells, const json_t *obj)
{
    cell_str(cells, jstr(jget(obj, "metadata"), "name"));
}

/* The Unix seconds of RFC 3339 time `s`, API_TABLE_NO_TIME if missing or
 * not a time. */
int64_t api__table_ts(const char *s);
/* translateTimestampSince of `t` (API_TABLE_NO_TIME: "<unknown>"). */
void api__table_since_t(json_t *cells, int64_t t, int64_t now);
/* The same for RFC 3339 text `ts`. */
void api__table_since(json_t *cells, const char *ts, int64_t now);
/* The AGE cell: metadata.creationTimestamp since. */
void api__table_age_cell(json_t *cells, const json_t *obj, int64_t now);

/* strcmp for qsort over an array of const char *. */
int api__table_cmp_cstr(const void *a, const void *b);
/* The keys of object `o`, sorted (caller frees the array, not the strings;
 * they are borrowed from `o`). NULL with *n 0 when empty; *n (size_t)-1 on
 * an allocation failure. */
const char **api__table_sorted_keys(const json_t *o, size_t *n);
/* labels.FormatLabels: "a=1,b=2" sorted by key, "<none>" when empty. */
void api__table_labels(json_t *cells, const json_t *labels);
/* LabelSelectorAsSelector(sel).String() into s; -1 if sel is invalid, 0
 * otherwise (nothing written for an empty or NULL selector). */
int api__table_selector(const json_t *sel, sb_t *s);
/* metav1.FormatLabelSelector: "<none>" when empty, "<error>" when invalid. */
void api__table_format_selector(json_t *cells, const json_t *sel);
/* layoutContainerCells: the names cell and the images cell of a pod spec. */
void api__table_containers(json_t *cells, const json_t *pod_spec);
/* Append the items of string array `a` to s, each after `sep` (not before
 * the first item of an empty builder). */
void api__table_join(sb_t *s, const json_t *a, const char *sep);

#endif
