/*
 * fuzz_yaml.c -- YAML bodies (lib/yamljson.c): apply-patch+yaml and
 * manifests, with the limits the API server passes (rest_patch.c). Input: the
 * YAML text. A document that converts must also print as JSON.
 */
#include "fuzz.h"
#include "lib/yamljson.h"

/* What rest_patch.c gives an apply body. */
#define FZ_YAML_DEPTH 100
#define FZ_YAML_NODES (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_INPUT_MAX) return 0;
    json_t *out = NULL;
    char err[256];
    if (!yaml_to_json((const char *)data, size, FZ_YAML_DEPTH, FZ_YAML_NODES, &out, err,
                      sizeof err)) {
        char *text = json_dumps(out, JSON_ENCODE_ANY | JSON_COMPACT);
        free(text);
        json_decref(out);
    }
    return 0;
}
