/*
 * object.h -- what every room says of objects: names and their rules, uids,
 * timestamps, JSON member helpers, and the field causes a 422 carries.
 * Pure functions, safe from any thread. (object.c)
 */
#ifndef KP_API_OBJECT_H
#define KP_API_OBJECT_H

#include <jansson.h>
#include <stddef.h>

#define API_NAME_MAX 253

/* How metadata.name is checked (Kubernetes' per-kind ValidateXName). */
typedef enum api_name_rule {
    API_NAME_SUBDOMAIN = 0, /* DNS-1123 subdomain: most kinds (the default) */
    API_NAME_LABEL,         /* DNS-1123 label: namespaces */
    API_NAME_LABEL_1035,    /* DNS-1035 label: services */
    API_NAME_PATH_SEGMENT,  /* any name that is a path segment: RBAC kinds */
} api_name_rule_t;

/* 1 if a and b are equal JSON values, or both absent (NULL). */
int api_json_same(const json_t *a, const json_t *b);
/* obj[key] if it is a string, else "" (never NULL); borrowed from obj. */
const char *api_json_str(const json_t *obj, const char *key);
/* obj[key] as an object, replacing whatever else is there with {}; borrowed
 * from obj. NULL if obj is not an object or out of memory. */
json_t *api_json_child(json_t *obj, const char *key);
/* A new object holding obj's members (shared, not copied: the caller must
 * not modify them); NULL when out of memory or obj is not an object. Unlike
 * json_copy(), which drops members silently when an allocation fails. */
json_t *api_json_shallow_copy(const json_t *obj);
int api_new_uid(char out[37]);
void api_now_rfc3339(char out[32]);
/* Validate a name by `rule`, an api_name_rule_t. Returns NULL
 * if valid, else a static message. */
const char *api_name_invalid(const char *name, int rule);

/* Append a cause: reason is Kubernetes' (FieldValueRequired, FieldValueInvalid,
 * FieldValueNotSupported, FieldValueDuplicate, FieldValueForbidden,
 * FieldValueTypeInvalid); `fmt` gives the message. */
void api_cause(json_t *causes, const char *reason, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Kubernetes' IsDNS1035Label messages for s, ","-joined into out (empty
 * when valid); `fold` compares lower-cased (kinds). */
void api_dns1035_messages(const char *s, int fold, char *out, size_t n);

#endif
