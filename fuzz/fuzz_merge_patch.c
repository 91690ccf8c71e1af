/*
 * fuzz_merge_patch.c -- application/merge-patch+json (apiserver/patch.c,
 * api_merge_patch). Input: the live object as one line of JSON, then the
 * patch object.
 */
#include "fuzz.h"
#include "apiserver/apply/patch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_INPUT_MAX) return 0;
    char *doctext = fz_line(&data, &size);
    json_t *doc = doctext ? fz_json(doctext, strlen(doctext)) : NULL;
    json_t *patch = fz_json((const char *)data, size);
    if (doc && patch) {
        api_merge_patch(doc, patch);
        char *text = json_dumps(doc, JSON_ENCODE_ANY | JSON_COMPACT);
        free(text);
    }
    json_decref(patch);
    json_decref(doc);
    free(doctext);
    return 0;
}
