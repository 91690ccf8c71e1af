/*
 * fuzz_apply.c -- server-side apply and field ownership (apiserver/managed*.c)
 * on an apply-patch+yaml body, as rest_patch.c runs them: the YAML body is
 * converted (lib/yamljson.c), applied to the live object with
 * api_managed_apply(), and the result then updated by another manager with
 * api_managed_update() (the managedFields bookkeeping of every write).
 *
 * Input: a line naming the kind ("apps/v1 Deployment", with " force" at the
 * end to force conflicts), the live object as one line of JSON ("null": none
 * yet; its metadata.managedFields are decoded too), then the YAML body.
 */
#include "fuzz.h"
#include "apiserver/apply/managed.h"
#include "apiserver/schema/schema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_INPUT_MAX) return 0;
    const api_schema_t *schema = fz_schema();
    char *kind = fz_line(&data, &size);
    char *livetext = fz_line(&data, &size);
    json_t *live = livetext ? fz_json(livetext, strlen(livetext)) : NULL;
    json_t *config = NULL, *out = NULL, *conflicts = NULL;
    char err[1024];
    if (!kind || !live ||
        fz_yaml((const char *)data, size, &config, err, sizeof err))
        goto done;
    const json_t *node = fz_kind_node(schema, kind);
    int force = strstr(kind, " force") != NULL;
    const char *reset[] = {"status", NULL};
    api_manager_t m = {.manager = "kubectl",
                       .api_version = "v1",
                       .now = "2026-01-02T03:04:05Z",
                       .reset = reset};
    const json_t *base = json_is_null(live) ? NULL : live;
    if (api_managed_apply(schema, node, base, config, &m, force, &out, &conflicts, err,
                          sizeof err))
        goto done;
    api_manager_t m2 = {.manager = "kube-controller-manager",
                        .api_version = "apps/v1",
                        .subresource = "",
                        .now = "2026-01-02T03:04:06Z"};
    json_t *next = json_deep_copy(out);
    if (next) {
        json_object_set_new(next, "status", json_pack("{s:i}", "observedGeneration", 2));
        (void)api_managed_update(schema, node, out, next, &m2);
        json_decref(next);
    }
done:
    json_decref(conflicts);
    json_decref(out);
    json_decref(config);
    json_decref(live);
    free(livetext);
    free(kind);
    return 0;
}
