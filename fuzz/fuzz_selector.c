/*
 * fuzz_selector.c -- label and field selectors (apiserver/selector.c) from
 * the labelSelector / fieldSelector query values and from a
 * metav1.LabelSelector object (spec.selector of a workload).
 *
 * Input: a first line, then a second. The first is parsed as a label
 * selector, a field selector and (when it is JSON) a metav1.LabelSelector;
 * each selector that parses is matched against the second line as an object
 * ({"metadata": {"labels": ...}} or anything else JSON), and the field
 * selector is checked against a kind's supported fields.
 */
#include "fuzz.h"
#include "apiserver/schema/selector.h"

static const char *const fz_pod_fields[] = {"metadata.name", "metadata.namespace",
                                            "spec.nodeName", "status.phase", NULL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_INPUT_MAX) return 0;
    char *text = fz_line(&data, &size);
    char *objtext = fz_str(data, size);
    json_t *obj = objtext ? fz_json(objtext, strlen(objtext)) : NULL;
    json_t *js = text ? fz_json(text, strlen(text)) : NULL;
    const json_t *labels = json_object_get(json_object_get(obj, "metadata"), "labels");
    char err[512];
    sel_label_t *l = NULL;
    sel_field_t *f = NULL;
    if (text && !sel_label_parse(text, &l, err, sizeof err)) {
        (void)sel_label_empty(l);
        (void)sel_label_match(l, labels ? labels : obj);
        sel_label_free(l);
        l = NULL;
    }
    if (text && !sel_field_parse(text, &f, err, sizeof err)) {
        (void)sel_field_empty(f);
        (void)sel_field_check(f, fz_pod_fields, err, sizeof err);
        (void)sel_field_match(f, obj);
        sel_field_free(f);
    }
    if (js && !sel_label_from_json(js, &l, err, sizeof err)) {
        (void)sel_label_match(l, labels);
        sel_label_free(l);
    }
    if (text) {
        (void)sel_label_key_check(text, err, sizeof err);
        (void)sel_label_value_check(text, err, sizeof err);
    }
    json_decref(js);
    json_decref(obj);
    free(objtext);
    free(text);
    return 0;
}
