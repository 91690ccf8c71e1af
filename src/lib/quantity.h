/*
 * quantity.h -- Kubernetes resource quantities ("500m", "1Gi", "2e3"), as
 * apimachinery's resource.ParseQuantity reads them. Pure functions.
 */
#ifndef KP_QUANTITY_H
#define KP_QUANTITY_H

#include <stdint.h>

/* Parse `s` into *out: whole units rounded up, or thousandths when `milli`
 * (CPU). A sign is allowed; a negative non-zero value is KP_EINVAL here
 * (callers that must tell "negative" from "malformed" look at s[0]).
 * Errors: KP_EINVAL (not a quantity), KP_ETOOLARGE (beyond int64). */
int kp_quantity_parse(const char *s, int milli, int64_t *out);

#endif
