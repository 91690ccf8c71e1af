/*
 * strategy_cases.h -- table-driven checks of a kind's strategy
 * (src/apiserver/strategy_*.c) for the test_strategy_<group> tests.
 *
 * Objects are JSON written with ' for " so that cases stay readable. A case
 * runs the write path's strategy steps -- prepare_create (or, with an old
 * object, prepare_update), defaults, validate -- and compares the causes:
 * none for a good object, or a cause "field: message" (exactly, as one of
 * the causes) for a bad one.
 */
#ifndef KP_TEST_STRATEGY_CASES_H
#define KP_TEST_STRATEGY_CASES_H

#include <jansson.h>
#include <stddef.h>

#include "apiserver/schema/strategy.h"

typedef struct strat_case {
    const char *obj;  /* the object written */
    const char *old;  /* the stored object (defaults applied), NULL on create */
    const char *want; /* NULL: valid; else one "field: message" cause */
} strat_case_t;

/* Run every case; on a mismatch print each failing case with the causes
 * it got, then fail the test. */
void strat_run(const api_strategy_t *st, const strat_case_t *cases, size_t n);

/* The object after a create's prepare_create and defaults; the caller
 * decrefs. */
json_t *strat_created(const api_strategy_t *st, const char *obj);

/* Fail unless the value at a dotted path ("spec.volumeMode",
 * "spec.ports.0.protocol") equals the JSON `want` (quotes as '). */
void strat_expect(const json_t *obj, const char *path, const char *want);

#endif
