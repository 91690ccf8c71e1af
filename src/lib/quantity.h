/*
 * quantity.h -- Kubernetes resource.Quantity values as integers (quantity.c).
 * Pure functions; nothing is kept.
 */
#ifndef KP_QUANTITY_H
#define KP_QUANTITY_H

#include <jansson.h>
#include <stdint.h>

/* A resource.Quantity string ("100m", "0.5", "2", "128Mi", "1G", "129e6",
 * "1.5Gi") as an integer, rounded up as Kubernetes does: in thousandths
 * when `milli` (cpu in millicores), else in units (bytes, pods).
 * Suffixes: Ki Mi Gi Ti Pi Ei; n u m k (or K) M G T P E; e/E<exponent>.
 * Errors: KP_EINVAL (malformed or negative), KP_ETOOLARGE (over int64). */
int kp_quantity_parse(const char *s, int milli, int64_t *out);
/* The same for a JSON value: a string, or a number (integer or real). */
int kp_quantity_json(const json_t *v, int milli, int64_t *out);

#endif
