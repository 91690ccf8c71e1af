/*
 * bootstrap_objects.c -- the objects every cluster starts with, created at
 * start when missing and never overwritten (a user's change stays), as
 * kube-apiserver's post-start hooks create them.
 *
 * Each row names its resource and gives the object; uid and
 * creationTimestamp are filled in at creation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/http/http.h"
#include "apiserver/rest/rest.h"
#include "apiserver/kinds/kinds.h"
#include "lib/err.h"
#include "lib/par.h"
#include "store/store.h"

static const struct boot_obj {
    const char *group, *version, *resource;
    const char *json;
} boot_objs[] = {
    /* scheduling/bootstrap-system-priority-classes */
    {"scheduling.k8s.io", "v1", "priorityclasses",
     "{\"kind\":\"PriorityClass\",\"apiVersion\":\"scheduling.k8s.io/v1\","
     "\"metadata\":{\"name\":\"system-node-critical\"},\"value\":2000001000,"
     "\"preemptionPolicy\":\"PreemptLowerPriority\"}"},
    {"scheduling.k8s.io", "v1", "priorityclasses",
     "{\"kind\":\"PriorityClass\",\"apiVersion\":\"scheduling.k8s.io/v1\","
     "\"metadata\":{\"name\":\"system-cluster-critical\"},\"value\":2000000000,"
     "\"preemptionPolicy\":\"PreemptLowerPriority\"}"},
};

#define NBOOT (sizeof boot_objs / sizeof boot_objs[0])

int api_boot_create(apiserver_t *s, const api_resource_t *res, json_t *obj)
{
    json_t *meta = json_object_get(obj, "metadata");
    if (!json_is_object(meta)) return KP_EINVAL;
    char key[STORE_KEY_MAX + 1], uid[37], now[32];
    int rc = api_object_key(res, api_json_str(meta, "namespace"), api_json_str(meta, "name"), key,
                            sizeof key);
    if (!rc) rc = api_new_uid(uid);
    if (rc) return rc;
    api_now_rfc3339(now);
    if (json_object_set_new(meta, "uid", json_string(uid)) ||
        json_object_set_new(meta, "creationTimestamp", json_string(now)))
        return KP_ENOMEM;
    char *text = json_dumps(obj, JSON_COMPACT);
    rc = text ? store_create(s->cfg.store, key, text, strlen(text), NULL) : KP_ENOMEM;
    free(text);
    return rc == KP_EEXIST ? 0 : rc;
}

typedef struct boot_run {
    apiserver_t *srv;
    int rc[NBOOT];
} boot_run_t;

static void ensure_one(void *arg, size_t i)
{
    boot_run_t *run = arg;
    const struct boot_obj *b = &boot_objs[i];
    const api_resource_t *res = api_registry_find(b->group, b->version, b->resource);
    if (!res) return; /* not served */
    json_t *obj = json_loads(b->json, 0, NULL);
    run->rc[i] = obj ? api_boot_create(run->srv, res, obj) : KP_ENOMEM;
    json_decref(obj);
}

/* All at once: their writes share the store's commits. */
int api_ensure_objects(apiserver_t *s)
{
    boot_run_t run = {.srv = s};
    par_each(NBOOT, ensure_one, &run);
    for (size_t i = 0; i < NBOOT; i++)
        if (run.rc[i]) return run.rc[i];
    return 0;
}
