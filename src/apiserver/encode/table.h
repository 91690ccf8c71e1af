/*
 * table.h -- kubectl's human output: meta.k8s.io/v1 Table for a resource.
 *
 * When a GET, LIST or WATCH asks for
 *   Accept: application/json;as=Table;v=v1;g=meta.k8s.io
 * the server answers with the columns a real cluster prints (pods: NAME READY
 * STATUS RESTARTS AGE, wide: IP NODE NOMINATED NODE READINESS GATES; ...),
 * rendered server-side, so that `kubectl get` shows them. Built-in kinds have
 * their printers in table.c, table_core.c and table_groups.c (as
 * kube-apiserver 1.32 prints them), or print NAME and CREATED AT when
 * Kubernetes has no printer for them; a CustomResourceDefinition's resource
 * prints NAME and its additionalPrinterColumns
 * (api_resource_t.printer_columns; table_kinds.c), or NAME and AGE when it
 * has none.
 *
 * As kube-apiserver does, every row carries the cells of the -o wide
 * (priority 1) columns too: kubectl hides them unless asked.
 *
 * A caller builds one Table per reply: api_table_new(), then
 * api_table_add_row() per object, then sets metadata.resourceVersion (and
 * continue) itself. All results are new references owned by the caller;
 * arguments are borrowed and never modified.
 */
#ifndef KP_TABLE_H
#define KP_TABLE_H

#include <jansson.h>
#include <stdint.h>

#include "apiserver/schema/resource.h"

/* What each row carries in row.object (query includeObject). */
typedef enum api_table_include {
    API_TABLE_METADATA = 0, /* PartialObjectMetadata (the default) */
    API_TABLE_OBJECT,       /* the whole object */
    API_TABLE_NONE,         /* "object": null, as kube-apiserver encodes it */
} api_table_include_t;

/* Parse includeObject (NULL or "" -> Metadata, "Metadata", "Object", "None",
 * case-sensitive as in Kubernetes); -1 if unknown (the caller answers 400). */
int api_table_include_parse(const char *s);

/* An empty Table for `res`:
 *   {"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{},
 *    "columnDefinitions":[{name,type,format,description,priority}...],"rows":[]}
 * With with_columns 0 (watch events after the first) columnDefinitions is
 * null, as kube-apiserver sends it. `res` NULL gives the NAME AGE columns.
 * Returns NULL only when out of memory. */
json_t *api_table_new(const api_resource_t *res, int with_columns);

/* Append the row of `obj` (borrowed) to `table` (from api_table_new() with the
 * same `res`): {"cells":[...],"conditions"?:[...],"object":...}. `now_s` (Unix
 * seconds) is the time ages are measured to. row.object per `include`:
 * PartialObjectMetadata (apiVersion of the table's group, e.g.
 * meta.k8s.io/v1) with the object's metadata; the object with kind and
 * apiVersion set from `res`; or null. Returns 0, KP_EINVAL (table without
 * rows, obj not an object, unknown include) or KP_ENOMEM; on error the table
 * is unchanged. */
int api_table_add_row(json_t *table, const api_resource_t *res, const json_t *obj,
                      api_table_include_t include, int64_t now_s);

/* "5m", "3h2m", "2d", ... as kubectl's duration printer (apimachinery
 * duration.HumanDuration) for `seconds`: "<invalid>" below -1 s, "0s" for
 * -1 s (clock skew). `out` gets at most n bytes, NUL-terminated. */
void api_table_age(int64_t seconds, char *out, size_t n);

/* ---- internal to table*.c (more in table_int.h) ------------------------ */

/* Parse an RFC 3339 time ("2024-05-01T10:00:00Z"; fraction and offset
 * allowed; the fraction is dropped) into Unix seconds. 0, or -1 if `s` (may be
 * NULL) is not such a time. */
int api__table_time(const char *s, int64_t *out);

/* A custom resource's printer columns `pc` (a non-empty array of
 * {name,type,format?,description?,priority?,jsonPath}): the column
 * definitions (Name, then one per element), NULL when out of memory. */
json_t *api__table_custom_columns(const json_t *pc);

/* How many cells a row has for `pc`. */
size_t api__table_custom_ncols(const json_t *pc);

/* Append to `cells` the name of `obj` and one cell per column of `pc`: the
 * first value the column's JSONPath finds, rendered for its type, or null. On
 * an allocation failure fewer cells are appended. */
void api__table_custom_cells(json_t *cells, const json_t *pc, const json_t *obj, int64_t now_s);

#endif
