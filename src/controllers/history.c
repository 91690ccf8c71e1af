/*
 * history.c -- ControllerRevision helpers (see history.h).
 *
 * INVARIANT: one template version has one name. The same revision data and
 * collisionCount always hash to the same controller-revision-hash, so a
 * controller that restarts finds the revision it made instead of making
 * another; a different collisionCount gives a different name, which is how
 * a controller steps past a name taken by different data. It owns no
 * objects: every function returns a new object or writes its results.
 */
#include "controllers/history.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/ctrl_util.h"
#include "lib/err.h"

static const char safe_alphabet[] = "bcdfghjklmnpqrstvwxz2456789";

void ctrl_safe_encode(const char *s, char *out, size_t n)
{
    size_t i = 0;
    if (!n) return;
    for (; s[i] && i + 1 < n; i++)
        out[i] = safe_alphabet[(unsigned char)s[i] % (sizeof safe_alphabet - 1)];
    out[i] = '\0';
}

uint32_t ctrl_fnv32a(uint32_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 16777619u;
    }
    return h;
}

void ctrl_hash_encode(uint32_t h, char out[CTRL_HASH_MAX])
{
    char dec[CTRL_HASH_MAX];
    snprintf(dec, sizeof dec, "%" PRIu32, h);
    ctrl_safe_encode(dec, out, CTRL_HASH_MAX);
}

int ctrl_history_hash(const json_t *data, int64_t collision_count, char out[CTRL_HASH_MAX])
{
    out[0] = '\0';
    char *text = json_dumps(data, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    if (!text) return KP_ENOMEM;
    uint32_t h = ctrl_fnv32a(CTRL_FNV32A_INIT, text, strlen(text));
    free(text);
    if (collision_count >= 0) {
        char num[24];
        int len = snprintf(num, sizeof num, "%" PRId64, collision_count);
        h = ctrl_fnv32a(h, num, (size_t)len);
    }
    ctrl_hash_encode(h, out);
    return 0;
}

json_t *ctrl_history_new(const json_t *owner, const char *api_version, const char *kind,
                         const json_t *data, int64_t revision, int64_t collision_count)
{
    char hash[CTRL_HASH_MAX];
    if (ctrl_history_hash(data, collision_count, hash)) return NULL;
    /* As Kubernetes' ControllerRevisionName: the owner's name cut to 223
     * bytes so that name-hash stays a valid object name. */
    const char *oname = ctrl_meta_str(owner, "name");
    char name[256];
    snprintf(name, sizeof name, "%.223s-%s", oname, hash);

    const json_t *tl = json_object_get(
        json_object_get(json_object_get(json_object_get(owner, "spec"), "template"), "metadata"),
        "labels");
    json_t *labels = json_is_object(tl) ? json_deep_copy(tl) : json_object();
    json_t *refs = json_array();
    json_t *ref = ctrl_controller_ref(owner, api_version, kind);
    json_t *dcopy = data ? json_deep_copy(data) : json_object();
    json_t *rev = NULL;
    if (!labels || !refs || !ref || !dcopy || json_array_append_new(refs, ref)) goto fail;
    ref = NULL;
    if (json_object_set_new(labels, CTRL_REVISION_HASH_LABEL, json_string(hash))) goto fail;
    rev = json_pack("{s:s, s:s, s:{s:s, s:s, s:O, s:O}, s:O, s:I}", "apiVersion", "apps/v1", "kind",
                    "ControllerRevision", "metadata", "name", name, "namespace",
                    ctrl_meta_str(owner, "namespace"), "labels", labels, "ownerReferences", refs,
                    "data", dcopy, "revision", (json_int_t)revision);
fail:
    json_decref(ref);
    json_decref(labels);
    json_decref(refs);
    json_decref(dcopy);
    return rev;
}

static int cmp_key(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A deep copy of v whose objects hold their members in byte order of their
 * keys, so that it dumps as Go's encoding/json writes a map; NULL when out
 * of memory or nested deeper than `depth`. */
static json_t *sorted_copy(const json_t *v, int depth)
{
    if (depth <= 0) return NULL;
    if (json_is_array(v)) {
        json_t *out = json_array();
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            if (!out || json_array_append_new(out, sorted_copy(x, depth - 1))) {
                json_decref(out);
                return NULL;
            }
        }
        return out;
    }
    if (!json_is_object(v)) return json_deep_copy(v);
    size_t n = json_object_size(v), i = 0;
    const char **keys = calloc(n ? n : 1, sizeof *keys);
    json_t *out = json_object();
    const char *k;
    json_t *x;
    if (!keys || !out) goto fail;
    json_object_foreach((json_t *)v, k, x) keys[i++] = k;
    qsort(keys, n, sizeof *keys, cmp_key);
    for (i = 0; i < n; i++)
        if (json_object_set_new(out, keys[i], sorted_copy(json_object_get(v, keys[i]), depth - 1)))
            goto fail;
    free(keys);
    return out;
fail:
    free(keys);
    json_decref(out);
    return NULL;
}

/* What Go's encoding of a typed PodTemplateSpec writes that the stored JSON
 * may lack: metadata with creationTimestamp null (a zero metav1.Time), and
 * every container's resources ({}: a struct is never omitted). */
static int go_template_fields(json_t *tmpl)
{
    json_t *meta = json_object_get(tmpl, "metadata");
    if (!json_is_object(meta) && json_object_set_new(tmpl, "metadata", meta = json_object()))
        return KP_ENOMEM;
    if (!json_object_get(meta, "creationTimestamp") &&
        json_object_set_new(meta, "creationTimestamp", json_null()))
        return KP_ENOMEM;
    static const char *const lists[] = {"initContainers", "containers"};
    for (int l = 0; l < 2; l++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(json_object_get(tmpl, "spec"), lists[l]), i, c) {
            if (json_is_object(c) && !json_object_get(c, "resources") &&
                json_object_set_new(c, "resources", json_object()))
                return KP_ENOMEM;
        }
    }
    return 0;
}

#define TEMPLATE_DEPTH_MAX 256

json_t *ctrl_history_template_patch(const json_t *owner)
{
    const json_t *t = json_object_get(json_object_get(owner, "spec"), "template");
    json_t *tmpl = json_is_object(t) ? json_deep_copy(t) : json_object();
    json_t *patch = NULL, *out = NULL;
    if (!tmpl || go_template_fields(tmpl) ||
        json_object_set_new(tmpl, "$patch", json_string("replace")))
        goto done;
    patch = json_pack("{s:{s:O}}", "spec", "template", tmpl);
    if (patch) out = sorted_copy(patch, TEMPLATE_DEPTH_MAX);
done:
    json_decref(tmpl);
    json_decref(patch);
    return out;
}

int64_t ctrl_history_revision(const json_t *rev)
{
    return json_integer_value(json_object_get(rev, "revision"));
}

int64_t ctrl_history_max_revision(const json_t *const *revs, size_t n)
{
    int64_t max = 0;
    for (size_t i = 0; i < n; i++)
        if (ctrl_history_revision(revs[i]) > max) max = ctrl_history_revision(revs[i]);
    return max;
}

static int cmp_rev(const void *a, const void *b)
{
    const json_t *x = *(const json_t *const *)a, *y = *(const json_t *const *)b;
    int64_t rx = ctrl_history_revision(x), ry = ctrl_history_revision(y);
    if (rx != ry) return rx < ry ? -1 : 1;
    return strcmp(ctrl_meta_str(x, "name"), ctrl_meta_str(y, "name"));
}

void ctrl_history_sort(const json_t **revs, size_t n)
{
    if (n > 1) qsort(revs, n, sizeof *revs, cmp_rev);
}

int ctrl_history_equal(const json_t *a, const json_t *b)
{
    const json_t *da = json_object_get(a, "data"), *db = json_object_get(b, "data");
    /* Two bare data objects (no "data" member) compare as they are. */
    if (!da && !db) return json_equal((json_t *)a, (json_t *)b);
    return json_equal((json_t *)da, (json_t *)db);
}
