/*
 * resource.h -- what a served resource is: one row of the generated table
 * (kinds/registry_gen.c, from scripts/gen-openapi-facts) or one version of a
 * CustomResourceDefinition, and the names it gives (resource.c). Rows are
 * immutable once served; the functions are pure, any thread.
 */
#ifndef KP_API_RESOURCE_H
#define KP_API_RESOURCE_H

#include <jansson.h>
#include <stddef.h>

/* The generic subresources a resource serves (bit set); a kind's own ones
 * (a pod's log) are its strategy's table (strategy.h, api_sub_t). */
enum {
    API_SUB_STATUS = 1u << 0,
    API_SUB_SCALE = 1u << 1,
};

/* Verbs a resource serves (bit set), as discovery lists them. */
enum {
    API_V_GET = 1u << 0,
    API_V_LIST = 1u << 1,
    API_V_WATCH = 1u << 2,
    API_V_CREATE = 1u << 3,
    API_V_UPDATE = 1u << 4,
    API_V_PATCH = 1u << 5,
    API_V_DELETE = 1u << 6,
    API_V_DELETECOLLECTION = 1u << 7,
    API_V_ALL = (1u << 8) - 1,
};

/* One served resource. */
typedef struct api_resource {
    const char *group;     /* "" for core */
    const char *version;
    const char *resource;  /* plural, lower case */
    const char *singular;
    const char *kind;
    const char *list_kind;
    int namespaced;
    const char *short_names[4]; /* NULL-terminated */
    const char *categories[4];  /* NULL-terminated ("all", "api-extensions", ...) */
    unsigned verbs;        /* API_V_* */
    unsigned subresources; /* API_SUB_* */
    const char *const *field_selectors; /* beyond metadata.name/namespace; NULL-terminated */
    const struct api_strategy *strategy; /* per-kind rules, NULL for storage-only kinds */
    /* Another version's objects, converted (NULL: stored as served): the
     * group and resource whose store keys this resource reads and writes;
     * its strategy's to_storage and from_storage convert. */
    const char *storage_group, *storage_resource;
    /* A CustomResourceDefinition's resource (NULL for built-ins): its
     * openAPIV3Schema and additionalPrinterColumns for this version. */
    const json_t *crd_schema;
    const json_t *printer_columns;
    const json_t *crd_scale; /* subresources.scale: {specReplicasPath, ...} */
    int crd_terminating;     /* its CRD is being deleted: no creates */
} api_resource_t;

/* "group/version", or "version" for core, into buf. */
const char *api_group_version(const api_resource_t *r, char *buf, size_t n);
/* Store key prefix of a resource: "/registry/<group|core>/<resource>/". */
int api_key_prefix(const api_resource_t *r, char *buf, size_t n);
/* The same, narrowed to namespace `ns` when the resource is namespaced and ns
 * is not empty: "/registry/<group|core>/<resource>/<ns>/". */
int api_ns_prefix(const api_resource_t *r, const char *ns, char *buf, size_t n);
/* Store key of an object; ns is ignored for cluster-scoped resources. */
int api_object_key(const api_resource_t *r, const char *ns, const char *name, char *buf,
                   size_t n);

#endif
