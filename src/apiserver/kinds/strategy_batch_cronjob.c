/*
 * strategy_batch_cronjob.c -- batch/v1 CronJobs: Kubernetes' defaults
 * (concurrencyPolicy Allow, suspend false, history limits 3 and 1, the pod
 * template's defaults), status reset on create, generation, and its checks
 * (pkg/apis/batch/validation): the schedule as robfig/cron's ParseStandard
 * reads it (5 fields or a descriptor, with its error texts), no TZ= in a new
 * schedule, a known timeZone, the policies and limits, and the jobTemplate
 * validated as a Job's spec (api_job_spec_validate, shared with Jobs) whose
 * selector the controller generates.
 *
 * Pure functions of their arguments (timeZone reads the system's zoneinfo):
 * safe from any thread.
 */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "apiserver/http/http.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/kinds/strategy_int.h"

/* ---- the schedule: robfig/cron v3 ParseStandard ---- */

typedef struct cron_field {
    int min, max;
    const char *const *names; /* jan.., sun..: index + min */
} cron_field_t;

static const char *const months[] = {"jan", "feb", "mar", "apr", "may", "jun", "jul",
                                     "aug", "sep", "oct", "nov", "dec", NULL};
static const char *const days[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat", NULL};

static const cron_field_t cron_fields[5] = {
    {0, 59, NULL}, {0, 23, NULL}, {1, 31, NULL}, {1, 12, months}, {0, 6, days},
};

/* A number or a name of the field; on error writes cron's message. */
static int cron_value(const char *s, size_t n, const cron_field_t *f, int *out, char *err,
                      size_t errlen)
{
    char tok[64];
    if (n >= sizeof tok) n = sizeof tok - 1;
    memcpy(tok, s, n);
    tok[n] = '\0';
    for (int i = 0; f->names && f->names[i]; i++)
        if (!strcasecmp(tok, f->names[i])) {
            *out = i + f->min;
            return 0;
        }
    /* strconv.Atoi: an optional sign and decimal digits */
    const char *p = tok;
    if (*p == '+' || *p == '-') p++;
    int ok = *p != '\0';
    for (const char *q = p; *q; q++)
        if (!isdigit((unsigned char)*q)) ok = 0;
    if (!ok || strlen(p) > 9) {
        snprintf(err, errlen,
                 "failed to parse int from %s: strconv.Atoi: parsing \"%s\": %s", tok, tok,
                 ok ? "value out of range" : "invalid syntax");
        return -1;
    }
    long v = strtol(tok, NULL, 10);
    if (v < 0) {
        snprintf(err, errlen, "negative number (%ld) not allowed: %s", v, tok);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* One comma-separated range: `*`, `?`, `a`, `a-b`, each with `/step`. */
static int cron_range(const char *expr, size_t n, const cron_field_t *f, char *err, size_t errlen)
{
    char r[128];
    if (n >= sizeof r) n = sizeof r - 1;
    memcpy(r, expr, n);
    r[n] = '\0';
    char *slash = strchr(r, '/');
    if (slash && strchr(slash + 1, '/')) {
        snprintf(err, errlen, "too many slashes: %s", r);
        return -1;
    }
    size_t span = slash ? (size_t)(slash - r) : strlen(r);
    char *hyphen = memchr(r, '-', span);
    if (hyphen && memchr(hyphen + 1, '-', span - (size_t)(hyphen + 1 - r))) {
        snprintf(err, errlen, "too many hyphens: %s", r);
        return -1;
    }
    int start, end, single = 0;
    if (span == 1 && (r[0] == '*' || r[0] == '?')) {
        start = f->min;
        end = f->max;
    } else {
        if (cron_value(r, hyphen ? (size_t)(hyphen - r) : span, f, &start, err, errlen))
            return -1;
        if (hyphen) {
            if (cron_value(hyphen + 1, span - (size_t)(hyphen + 1 - r), f, &end, err, errlen))
                return -1;
        } else {
            end = start;
            single = 1;
        }
    }
    if (slash) {
        int step;
        if (cron_value(slash + 1, strlen(slash + 1), f, &step, err, errlen)) return -1;
        if (step <= 0) {
            snprintf(err, errlen, "step of range should be a positive number: %s", r);
            return -1;
        }
        if (single) end = f->max; /* "N/step" means N-max/step */
    }
    if (start < f->min) {
        snprintf(err, errlen, "beginning of range (%d) below minimum (%d): %s", start, f->min, r);
        return -1;
    }
    if (end > f->max) {
        snprintf(err, errlen, "end of range (%d) above maximum (%d): %s", end, f->max, r);
        return -1;
    }
    if (start > end) {
        snprintf(err, errlen, "beginning of range (%d) beyond end of range (%d): %s", start, end,
                 r);
        return -1;
    }
    return 0;
}

/* time.ParseDuration, enough to accept or refuse "@every <duration>". */
static int go_duration_ok(const char *s)
{
    if (*s == '+' || *s == '-') s++;
    if (!strcmp(s, "0")) return 1;
    if (!*s) return 0;
    static const char *const units[] = {"ns", "us", "\xc2\xb5s", "\xce\xbcs", "ms", "s", "m", "h",
                                        NULL};
    while (*s) {
        int digits = 0;
        while (isdigit((unsigned char)*s)) s++, digits++;
        if (*s == '.') {
            s++;
            while (isdigit((unsigned char)*s)) s++, digits++;
        }
        if (!digits) return 0;
        size_t best = 0;
        for (const char *const *u = units; *u; u++)
            if (!strncmp(s, *u, strlen(*u)) && strlen(*u) > best) best = strlen(*u);
        if (!best) return 0;
        s += best;
    }
    return 1;
}

/* strategy_int.h */
int api__cron_parse(const char *spec, char *err, size_t errlen)
{
    const char *p = spec;
    while (*p == ' ' || *p == '\t') p++;
    if (!*p) {
        snprintf(err, errlen, "empty spec string");
        return -1;
    }
    if (!strncmp(p, "TZ=", 3) || !strncmp(p, "CRON_TZ=", 8)) {
        p = strchr(p, ' ');
        if (!p) {
            snprintf(err, errlen, "expected exactly 5 fields, found 0: []");
            return -1;
        }
        while (*p == ' ' || *p == '\t') p++;
    }
    if (*p == '@') {
        static const char *const desc[] = {"@yearly", "@annually", "@monthly", "@weekly",
                                           "@daily",  "@midnight", "@hourly",  NULL};
        if (api__in(p, desc)) return 0;
        if (!strncmp(p, "@every ", 7)) {
            if (go_duration_ok(p + 7)) return 0;
            snprintf(err, errlen, "failed to parse duration %s: time: invalid duration \"%s\"",
                     p, p + 7);
            return -1;
        }
        snprintf(err, errlen, "unrecognized descriptor: %s", p);
        return -1;
    }
    /* strings.Fields, then exactly five */
    const char *start[8];
    size_t len[8];
    int n = 0;
    char list[256] = "[";
    for (const char *q = p; *q;) {
        while (*q == ' ' || *q == '\t' || *q == '\n') q++;
        if (!*q) break;
        const char *b = q;
        while (*q && *q != ' ' && *q != '\t' && *q != '\n') q++;
        if (n < 8) start[n] = b, len[n] = (size_t)(q - b);
        size_t w = strlen(list);
        snprintf(list + w, sizeof list - w, "%s%.*s", n ? " " : "", (int)(q - b), b);
        n++;
    }
    if (n != 5) {
        size_t w = strlen(list);
        snprintf(list + w, sizeof list - w, "]");
        snprintf(err, errlen, "expected exactly 5 fields, found %d: %s", n, list);
        return -1;
    }
    for (int i = 0; i < 5; i++) {
        const char *s = start[i], *end = s + len[i];
        while (s <= end) {
            const char *comma = memchr(s, ',', (size_t)(end - s));
            const char *stop = comma ? comma : end;
            if (cron_range(s, (size_t)(stop - s), &cron_fields[i], err, errlen)) return -1;
            s = stop + 1;
        }
    }
    return 0;
}

/* ---- the CronJob ---- */

static void cronjob_prepare_create(json_t *cj)
{
    json_object_set_new(cj, "status", json_object());
}

static void cronjob_defaults(json_t *cj)
{
    json_t *spec = api_json_child(cj, "spec");
    api__set_default(spec, "concurrencyPolicy", json_string("Allow"));
    api__set_default(spec, "suspend", json_false());
    api__set_default(spec, "successfulJobsHistoryLimit", json_integer(3));
    api__set_default(spec, "failedJobsHistoryLimit", json_integer(1));
    json_t *jt = json_object_get(spec, "jobTemplate");
    json_t *tmpl = json_object_get(json_object_get(jt, "spec"), "template");
    if (json_is_object(tmpl)) api_pod_spec_defaults(api_json_child(tmpl, "spec"));
}

/* time.LoadLocation as kube-apiserver calls it: names of at most 14
 * characters a part, then the zone database. */
static void check_time_zone(const json_t *tzv, json_t *causes)
{
    const char *tz = json_string_value(tzv);
    char msg[300];
    if (!tzv || json_is_null(tzv)) return;
    if (!tz || !*tz) {
        api__invalid(causes, "spec.timeZone", tzv, "timeZone must be nil or non-empty string");
        return;
    }
    int ok = strlen(tz) < 200;
    for (const char *part = tz; ok && part;) {
        const char *slash = strchr(part, '/');
        size_t n = slash ? (size_t)(slash - part) : strlen(part);
        ok = n >= 1 && n <= 14 && part[0] != '-' && !(n == 1 && part[0] == '.') &&
             !(n == 2 && !strncmp(part, "..", 2));
        for (size_t i = 0; ok && i < n; i++)
            ok = isalnum((unsigned char)part[i]) || strchr(".-_+", part[i]);
        part = slash ? slash + 1 : NULL;
    }
    snprintf(msg, sizeof msg, "unknown time zone %s", tz);
    if (!ok) {
        api__invalid(causes, "spec.timeZone", tzv, msg);
        return;
    }
    if (!strcasecmp(tz, "Local")) {
        api__invalid(causes, "spec.timeZone", tzv,
                     "timeZone must be an explicit time zone as defined in "
                     "https://www.iana.org/time-zones");
        return;
    }
    struct stat st;
    char path[300];
    snprintf(path, sizeof path, "/usr/share/zoneinfo/%s", tz);
    /* Without a zone database on this machine every well-formed name
     * passes (kube-apiserver carries its own copy). */
    if (strcmp(tz, "UTC") && stat("/usr/share/zoneinfo", &st) == 0 &&
        (stat(path, &st) != 0 || !S_ISREG(st.st_mode)))
        api__invalid(causes, "spec.timeZone", tzv, msg);
}

static void cronjob_validate(const json_t *cj, const json_t *old, json_t *causes)
{
    static const char *const policies[] = {"Allow", "Forbid", "Replace", NULL};
    const json_t *spec = json_object_get(cj, "spec");
    const char *name = api_json_str(json_object_get(cj, "metadata"), "name");
    if (!old && strlen(name) > 52) {
        api__invalid_str(causes, "metadata.name", name, "must be no more than 52 characters");
    }
    const json_t *sched = json_object_get(spec, "schedule");
    const char *s = json_string_value(sched);
    const json_t *tzv = json_object_get(spec, "timeZone");
    char err[512];
    if (!s || !*s) {
        api__required(causes, "spec.schedule", "");
    } else {
        if (api__cron_parse(s, err, sizeof err)) api__invalid(causes, "spec.schedule", sched, err);
        /* An old schedule with TZ= may keep it; a new one may not. */
        const char *was = api_json_str(json_object_get(old, "spec"), "schedule");
        int allow_tz = old && strstr(was, "TZ");
        if (strstr(s, "TZ")) {
            if (!allow_tz)
                api__invalid(causes, "spec.schedule", sched,
                             "cannot use TZ or CRON_TZ in schedule, use timeZone field instead");
            else if (tzv && !json_is_null(tzv))
                api__invalid(causes, "spec.schedule", sched,
                             "cannot use both timeZone field and TZ or CRON_TZ in schedule");
        }
    }
    check_time_zone(tzv, causes);
    api__int_min(causes, spec, "startingDeadlineSeconds", "spec", 0, NULL);
    const json_t *cp = json_object_get(spec, "concurrencyPolicy");
    if (!json_string_value(cp) || !*json_string_value(cp))
        api__required(causes, "spec.concurrencyPolicy", "");
    else
        api__enum(causes, spec, "concurrencyPolicy", "spec", policies);
    api__int_min(causes, spec, "successfulJobsHistoryLimit", "spec", 0, NULL);
    api__int_min(causes, spec, "failedJobsHistoryLimit", "spec", 0, NULL);

    const json_t *jspec = json_object_get(json_object_get(spec, "jobTemplate"), "spec");
    api_job_spec_validate(jspec, "spec.jobTemplate.spec", causes);
    const json_t *sel = json_object_get(jspec, "selector");
    if (sel && !json_is_null(sel))
        api__invalid(causes, "spec.jobTemplate.spec.selector", sel,
                     "`selector` will be auto-generated");
    if (json_is_true(json_object_get(jspec, "manualSelector"))) {
        static const char *const allowed[] = {"nil", "false", NULL};
        api__not_supported(causes, "spec.jobTemplate.spec.manualSelector",
                           json_object_get(jspec, "manualSelector"), allowed);
    }
}

const api_strategy_t api_strategy_cronjob = {
    .generation = 1,
    .prepare_create = cronjob_prepare_create,
    .defaults = cronjob_defaults,
    .validate = cronjob_validate,
};
