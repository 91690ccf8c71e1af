/*
 * strategy_event_v1.c -- events.k8s.io/v1 Events: the same objects as
 * core/v1 Events (stored as those, as Kubernetes stores them), converted
 * field by field (Kubernetes' pkg/apis/events/v1 conversion), and validated
 * as Kubernetes validates an Event created through the events.k8s.io API.
 */
#include <string.h>

#include "apiserver/http/http.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/kinds/strategy_int.h"

/* events.k8s.io/v1 name, core/v1 name. The other members (metadata,
 * eventTime, series, reason, action, type, related, reportingInstance) are
 * the same in both. */
static const char *const renamed[][2] = {
    {"regarding", "involvedObject"},
    {"note", "message"},
    {"deprecatedSource", "source"},
    {"deprecatedFirstTimestamp", "firstTimestamp"},
    {"deprecatedLastTimestamp", "lastTimestamp"},
    {"deprecatedCount", "count"},
    {"reportingController", "reportingComponent"},
};

/* Rename members from column `from` to column `to`; set apiVersion. */
static json_t *convert(json_t *ev, int from, const char *api_version)
{
    if (!ev) return NULL;
    for (size_t i = 0; i < sizeof renamed / sizeof renamed[0]; i++) {
        json_t *v = json_object_get(ev, renamed[i][from]);
        if (!v) continue;
        json_object_set(ev, renamed[i][!from], v);
        json_object_del(ev, renamed[i][from]);
    }
    json_object_set_new(ev, "apiVersion", json_string(api_version));
    json_object_set_new(ev, "kind", json_string("Event"));
    return ev;
}

static json_t *to_core(json_t *ev) { return convert(ev, 0, "v1"); }
static json_t *from_core(json_t *ev) { return convert(ev, 1, "events.k8s.io/v1"); }

/* Kubernetes' ValidateEventCreate for the events.k8s.io group. */
static void event_validate(const json_t *ev, const json_t *old, json_t *causes)
{
    (void)old;
    if (!json_object_get(ev, "eventTime"))
        api_cause(causes, "FieldValueRequired", "eventTime", "Required value");
    const char *type = api_json_str(ev, "type");
    if (strcmp(type, "Normal") && strcmp(type, "Warning"))
        api_cause(causes, "FieldValueInvalid", "type",
                  "Invalid value: \"%s\": has invalid value: %s", type, type);
    static const char *const required[] = {"reportingController", "reportingInstance", "action",
                                           "reason"};
    for (size_t i = 0; i < 4; i++)
        if (!*api_json_str(ev, required[i]))
            api_cause(causes, "FieldValueRequired", required[i], "Required value");
    size_t note = strlen(api_json_str(ev, "note"));
    if (note > 1024)
        api_cause(causes, "FieldValueTooLong", "note",
                  "Too long: may not be more than 1024 bytes");
}

const api_strategy_t api_strategy_event__events_v1 = {
    .validate = event_validate,
    .to_storage = to_core,
    .from_storage = from_core,
};
