/*
 * fuzz_yaml.c -- YAML bodies (lib/yamljson.c): apply-patch+yaml and
 * manifests, with the limits the API server passes (fz_yaml()). Input: the
 * YAML text. A document that converts must also print as JSON.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_INPUT_MAX) return 0;
    json_t *out = NULL;
    char err[256];
    if (!fz_yaml((const char *)data, size, &out, err, sizeof err)) {
        char *text = json_dumps(out, JSON_ENCODE_ANY | JSON_COMPACT);
        free(text);
        json_decref(out);
    }
    return 0;
}
