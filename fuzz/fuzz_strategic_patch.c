/*
 * fuzz_strategic_patch.c -- application/strategic-merge-patch+json
 * (apiserver/patch.c, api_strategic_merge_patch) with the kind's schema.
 * Input: a line naming the kind ("apps/v1 Deployment"; an unknown kind
 * merges without a schema, as for custom resources), the live object as one
 * line of JSON, then the patch object.
 */
#include "fuzz.h"
#include "apiserver/apply/patch.h"
#include "apiserver/schema/schema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_INPUT_MAX) return 0;
    const api_schema_t *schema = fz_schema();
    char *kind = fz_line(&data, &size);
    char *doctext = fz_line(&data, &size);
    json_t *doc = doctext ? fz_json(doctext, strlen(doctext)) : NULL;
    json_t *patch = fz_json((const char *)data, size);
    char err[512];
    if (kind && doc && patch &&
        !api_strategic_merge_patch(schema, fz_kind_node(schema, kind), doc, patch, err,
                                   sizeof err)) {
        char *text = json_dumps(doc, JSON_ENCODE_ANY | JSON_COMPACT);
        free(text);
    }
    json_decref(patch);
    json_decref(doc);
    free(doctext);
    free(kind);
    return 0;
}
