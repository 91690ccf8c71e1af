/* pending_stubs.c -- TEMPORARY weak stand-ins while managed.c and
 * crd_schema.c are being written; removed when they land. */
#include "apiserver/crd_schema.h"
#include "apiserver/managed.h"
#include "lib/err.h"

__attribute__((weak)) int api_managed_update(const api_schema_t *s, const json_t *node,
                                             const json_t *old, json_t *obj,
                                             const api_manager_t *m)
{
    (void)s, (void)node, (void)old, (void)obj, (void)m;
    return 0;
}

__attribute__((weak)) int api_managed_apply(const api_schema_t *s, const json_t *node,
                                            const json_t *live, const json_t *config,
                                            const api_manager_t *m, int force, json_t **out,
                                            json_t **conflicts, char *err, size_t errlen)
{
    (void)s, (void)node, (void)live, (void)m, (void)force, (void)err, (void)errlen;
    *conflicts = NULL;
    *out = json_deep_copy(config);
    return *out ? 0 : KP_ENOMEM;
}

__attribute__((weak)) void api_crd_schema_check(const json_t *schema, const char *path,
                                                json_t *causes)
{
    (void)schema, (void)path, (void)causes;
}

__attribute__((weak)) void api_crd_prune_and_default(const json_t *schema, json_t *obj)
{
    (void)schema, (void)obj;
}

__attribute__((weak)) void api_crd_validate(const json_t *schema, const json_t *obj,
                                            json_t *causes)
{
    (void)schema, (void)obj, (void)causes;
}
