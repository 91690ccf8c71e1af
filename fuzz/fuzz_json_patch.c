/*
 * fuzz_json_patch.c -- application/json-patch+json (apiserver/patch.c,
 * api_json_patch). Input: the live object as one line of JSON, then the
 * patch (a JSON array of RFC 6902 operations).
 */
#include "fuzz.h"
#include "apiserver/apply/patch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_INPUT_MAX) return 0;
    char *doctext = fz_line(&data, &size);
    json_t *doc = doctext ? fz_json(doctext, strlen(doctext)) : NULL;
    json_t *ops = fz_json((const char *)data, size);
    char err[512];
    if (doc && ops && !api_json_patch(&doc, ops, err, sizeof err)) {
        char *text = json_dumps(doc, JSON_ENCODE_ANY | JSON_COMPACT);
        free(text);
    }
    json_decref(ops);
    json_decref(doc);
    free(doctext);
    return 0;
}
