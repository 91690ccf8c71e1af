/*
 * strategy_cases.c -- see strategy_cases.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "strategy_cases.h"

static json_t *parse(const char *text)
{
    char *s = strdup(text);
    assert_non_null(s);
    for (char *p = s; *p; p++)
        if (*p == '\'') *p = '"';
    json_error_t e;
    json_t *v = json_loads(s, JSON_DECODE_ANY, &e);
    if (!v) fprintf(stderr, "bad test JSON (%s): %s\n", e.text, text);
    free(s);
    assert_non_null(v);
    return v;
}

json_t *strat_created(const api_strategy_t *st, const char *obj)
{
    json_t *o = parse(obj);
    if (st->prepare_create) st->prepare_create(o);
    if (st->defaults) st->defaults(o);
    return o;
}

void strat_run(const api_strategy_t *st, const strat_case_t *cases, size_t n)
{
    int failed = 0;
    for (size_t i = 0; i < n; i++) {
        const strat_case_t *c = &cases[i];
        json_t *o = parse(c->obj), *old = NULL;
        if (c->old) {
            old = parse(c->old);
            if (st->defaults) st->defaults(old);
            if (st->prepare_update) st->prepare_update(o, old);
        } else if (st->prepare_create) {
            st->prepare_create(o);
        }
        if (st->defaults) st->defaults(o);
        json_t *causes = json_array();
        st->validate(o, old, causes);
        int ok = c->want ? 0 : json_array_size(causes) == 0;
        size_t j;
        json_t *x;
        json_array_foreach(causes, j, x) {
            char line[4096];
            const char *f = json_string_value(json_object_get(x, "field"));
            snprintf(line, sizeof line, "%s: %s", f ? f : "",
                     json_string_value(json_object_get(x, "message")));
            if (c->want && !strcmp(line, c->want)) ok = 1;
        }
        if (!ok) {
            failed++;
            fprintf(stderr, "case %zu: %s\n  want: %s\n  got:\n", i, c->obj,
                    c->want ? c->want : "(no cause)");
            json_array_foreach(causes, j, x) {
                fprintf(stderr, "    %s: %s\n",
                        json_string_value(json_object_get(x, "field")) ?: "",
                        json_string_value(json_object_get(x, "message")));
            }
        }
        json_decref(causes);
        json_decref(o);
        json_decref(old);
    }
    assert_int_equal(failed, 0);
}

void strat_expect(const json_t *obj, const char *path, const char *want)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    const json_t *v = obj;
    for (char *tok = buf, *dot; tok && v; tok = dot ? dot + 1 : NULL) {
        dot = strchr(tok, '.');
        if (dot) *dot = '\0';
        if (json_is_array(v)) v = json_array_get(v, strtoul(tok, NULL, 10));
        else v = json_object_get(v, tok);
    }
    json_t *w = parse(want);
    int same = v && json_equal(v, w);
    if (!same) {
        char *got = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
        fprintf(stderr, "%s: got %s, want %s\n", path, got ? got : "(absent)", want);
        free(got);
    }
    json_decref(w);
    assert_true(same);
}
