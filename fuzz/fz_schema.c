/*
 * fz_schema.c -- the API's schema for the targets that need it (fuzz.h); a
 * file of its own so that targets without the API server's library link.
 */
#include <stdlib.h>

#include "fuzz.h"

const api_schema_t *fz_schema(void)
{
    /* Loaded before the first input, then only read: no lock needed. */
    static api_schema_t *schema;
    if (!schema && api_schema_load(&schema)) abort();
    return schema;
}
