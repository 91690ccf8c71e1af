/*
 * proxy_int.h -- what tests may ask a lab_proxy_t beyond proxy.h.
 */
#ifndef KP_LAB_PROXY_INT_H
#define KP_LAB_PROXY_INT_H

#include <stddef.h>

#include "lab/proxy.h"

/* The most bytes that ever waited in one direction of one connection (the
 * bound of proxy.h: at most 4 MiB). Any thread. */
size_t lab_proxy__waiting_peak(const lab_proxy_t *p);

#endif
