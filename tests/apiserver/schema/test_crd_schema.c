/*
 * test_crd_schema.c -- CRD schemas (src/apiserver/crd_schema.c): the checks a
 * CRD's openAPIV3Schema must pass, and pruning, defaulting and validating
 * custom objects, each compared with the exact causes Kubernetes gives.
 *
 * JSON literals are written with ` for " to keep them readable; expected
 * causes are (reason, field, message) triples.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "apiserver/schema/crd_schema.h"

/* Parse a literal with ` standing for ". */
static json_t *J(const char *text)
{
    char *s = strdup(text);
    assert_non_null(s);
    for (char *p = s; *p; p++)
        if (*p == '`') *p = '"';
    json_error_t e;
    json_t *v = json_loads(s, JSON_DECODE_ANY, &e);
    if (!v) fprintf(stderr, "bad test JSON at %d: %s\n%s\n", e.position, e.text, s);
    free(s);
    assert_non_null(v);
    return v;
}

/* causes must equal the (reason, field, message) triples given, NULL-ended. */
static void expect(json_t *causes, ...)
{
    json_t *want = json_array();
    const char *r;
    va_list ap;
    va_start(ap, causes);
    while ((r = va_arg(ap, const char *))) {
        const char *f = va_arg(ap, const char *), *m = va_arg(ap, const char *);
        /* An empty field is left out of a cause, as Kubernetes does. */
        json_t *c = json_pack("{s:s, s:s}", "reason", r, "message", m);
        if (*f) json_object_set_new(c, "field", json_string(f));
        json_array_append_new(want, c);
    }
    va_end(ap);
    int same = json_equal(causes, want);
    if (!same) {
        char *a = json_dumps(causes, JSON_INDENT(1)), *w = json_dumps(want, JSON_INDENT(1));
        fprintf(stderr, "causes:\n%s\nwanted:\n%s\n", a, w);
        free(a);
        free(w);
    }
    json_decref(want);
    json_decref(causes);
    assert_true(same);
}

/* The causes of validating `obj` (a literal) against `schema` (kept). */
static json_t *validate(const json_t *schema, const char *obj)
{
    json_t *o = J(obj), *causes = json_array();
    api_crd_validate(schema, o, causes);
    json_decref(o);
    return causes;
}

/* The causes of checking `schema` (a literal) at the usual path. */
static json_t *check(const char *schema)
{
    json_t *s = J(schema), *causes = json_array();
    api_crd_schema_check(s, "spec.versions[0].schema.openAPIV3Schema", causes);
    json_decref(s);
    return causes;
}

/* Prune and default `obj` by `schema`; it must then equal `want`. */
static void prune_default(const char *schema, const char *obj, const char *want)
{
    json_t *s = J(schema), *o = J(obj), *w = J(want);
    api_crd_prune_and_default(s, o);
    if (!json_equal(o, w)) {
        char *a = json_dumps(o, JSON_SORT_KEYS), *b = json_dumps(w, JSON_SORT_KEYS);
        fprintf(stderr, "got:  %s\nwant: %s\n", a, b);
        free(a);
        free(b);
    }
    assert_true(json_equal(o, w));
    json_decref(s);
    json_decref(o);
    json_decref(w);
}

#define CRON_PATTERN "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$"

/* The CronTab of the Kubernetes documentation (CustomResourceDefinition
 * "Validation" section). */
static json_t *crontab(void)
{
    json_t *s = json_pack("{s:s, s:{s:{s:s, s:{s:{s:s, s:s}, s:{s:s}, s:{s:s, s:i, s:i}}}}}",
                          "type", "object", "properties", "spec", "type", "object", "properties",
                          "cronSpec", "type", "string", "pattern", CRON_PATTERN, "image", "type",
                          "string", "replicas", "type", "integer", "minimum", 1, "maximum", 10);
    assert_non_null(s);
    return s;
}

#define CRON_OBJ(spec)                                                                             \
    "{`apiVersion`: `stable.example.com/v1`, `kind`: `CronTab`, `metadata`: {`name`: `c`}, "       \
    "`spec`: " spec "}"

/* ---- validation ---- */

static void test_crontab_valid(void **state)
{
    (void)state;
    json_t *s = crontab();
    expect(validate(s, CRON_OBJ("{`cronSpec`: `* * * * */5`, `image`: `my-awesome-cron-image`, "
                                "`replicas`: 3}")),
           NULL);
    expect(validate(s, CRON_OBJ("{`cronSpec`: `0 12\\t* * 1/2`}")), NULL);
    json_decref(s);
}

static void test_crontab_invalid(void **state)
{
    (void)state;
    json_t *s = crontab();
    expect(validate(s, CRON_OBJ("{`replicas`: `3`}")), "FieldValueTypeInvalid", "spec.replicas",
           "Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
           NULL);
    expect(validate(s, CRON_OBJ("{`replicas`: 0}")), "FieldValueInvalid", "spec.replicas",
           "Invalid value: 0: spec.replicas in body should be greater than or equal to 1", NULL);
    expect(validate(s, CRON_OBJ("{`replicas`: 20}")), "FieldValueInvalid", "spec.replicas",
           "Invalid value: 20: spec.replicas in body should be less than or equal to 10", NULL);
    expect(validate(s, CRON_OBJ("{`cronSpec`: `bad`}")), "FieldValueInvalid", "spec.cronSpec",
           "Invalid value: \"bad\": spec.cronSpec in body should match '" CRON_PATTERN "'", NULL);
    /* The documentation's own example: both problems, in schema order. */
    expect(validate(s, CRON_OBJ("{`cronSpec`: `* * * *`, `image`: `my-awesome-cron-image`, "
                                "`replicas`: 15}")),
           "FieldValueInvalid", "spec.cronSpec",
           "Invalid value: \"* * * *\": spec.cronSpec in body should match '" CRON_PATTERN "'",
           "FieldValueInvalid", "spec.replicas",
           "Invalid value: 15: spec.replicas in body should be less than or equal to 10", NULL);
    /* 1.0 is an integer for kube-openapi; 1.5 is not. */
    expect(validate(s, CRON_OBJ("{`replicas`: 2.0}")), NULL);
    expect(validate(s, CRON_OBJ("{`replicas`: 1.5}")), "FieldValueTypeInvalid", "spec.replicas",
           "Invalid value: \"number\": spec.replicas in body must be of type integer: \"number\"",
           NULL);
    expect(validate(s, CRON_OBJ("{`replicas`: null}")), "FieldValueTypeInvalid", "spec.replicas",
           "Invalid value: \"null\": spec.replicas in body must be of type integer: \"null\"",
           NULL);
    expect(validate(s, CRON_OBJ("[]")), "FieldValueTypeInvalid", "spec",
           "Invalid value: \"array\": spec in body must be of type object: \"array\"", NULL);
    json_decref(s);
}

static void test_required_enum(void **state)
{
    (void)state;
    json_t *s =
        J("{`type`: `object`, `required`: [`spec`], `properties`: {`spec`: {`type`: `object`,"
          " `required`: [`cronSpec`, `mode`], `properties`: {`cronSpec`: {`type`: `string`},"
          " `mode`: {`type`: `string`, `enum`: [`a`, `b`]},"
          " `level`: {`type`: `integer`, `enum`: [1, 2.5, true]}}}}}");
    expect(validate(s, "{`spec`: {`mode`: `a`}}"), "FieldValueRequired", "spec.cronSpec",
           "Required value", NULL);
    expect(validate(s, "{`metadata`: {}}"), "FieldValueRequired", "spec", "Required value", NULL);
    expect(validate(s, "{`spec`: {`cronSpec`: ``, `mode`: `x`}}"), "FieldValueNotSupported",
           "spec.mode", "Unsupported value: \"x\": supported values: \"a\", \"b\"", NULL);
    expect(validate(s, "{`spec`: {`cronSpec`: ``, `mode`: `a`, `level`: 3}}"),
           "FieldValueNotSupported", "spec.level",
           "Unsupported value: 3: supported values: \"1\", \"2.5\", \"true\"", NULL);
    expect(validate(s, "{`spec`: {`cronSpec`: ``, `mode`: `b`, `level`: 1}}"), NULL);
    json_decref(s);
}

static void test_types(void **state)
{
    (void)state;
    json_t *s = J("{`type`: `object`, `properties`: {`spec`: {`type`: `object`, `properties`: {"
                  "`port`: {`x-kubernetes-int-or-string`: true},"
                  "`ratio`: {`type`: `number`, `exclusiveMinimum`: true, `minimum`: 0,"
                  "          `exclusiveMaximum`: true, `maximum`: 1000000},"
                  "`opt`: {`type`: `string`, `nullable`: true},"
                  "`flag`: {`type`: `boolean`},"
                  "`size`: {`type`: `integer`, `format`: `int32`, `multipleOf`: 5},"
                  "`step`: {`type`: `number`, `multipleOf`: 0.5}}}}}");
    expect(
        validate(s, "{`spec`: {`port`: 80, `opt`: null, `ratio`: 0.5, `size`: 10, `step`: 2.5}}"),
        NULL);
    expect(validate(s, "{`spec`: {`port`: `http`, `ratio`: 7}}"), NULL);
    expect(validate(s, "{`spec`: {`port`: true}}"), "FieldValueTypeInvalid", "spec.port",
           "Invalid value: \"boolean\": spec.port in body must be of type integer,string: "
           "\"boolean\"",
           NULL);
    expect(validate(s, "{`spec`: {`ratio`: 0}}"), "FieldValueInvalid", "spec.ratio",
           "Invalid value: 0: spec.ratio in body should be greater than 0", NULL);
    expect(validate(s, "{`spec`: {`ratio`: 1e6}}"), "FieldValueInvalid", "spec.ratio",
           "Invalid value: 1e+06: spec.ratio in body should be less than 1e+06", NULL);
    expect(validate(s, "{`spec`: {`flag`: `yes`}}"), "FieldValueTypeInvalid", "spec.flag",
           "Invalid value: \"string\": spec.flag in body must be of type boolean: \"string\"",
           NULL);
    expect(validate(s, "{`spec`: {`size`: 7, `step`: 0.3}}"), "FieldValueInvalid", "spec.size",
           "Invalid value: 7: spec.size in body should be a multiple of 5", "FieldValueInvalid",
           "spec.step", "Invalid value: 0.3: spec.step in body should be a multiple of 0.5", NULL);
    /* A format on a number node: kube-openapi names the format, not the type. */
    expect(validate(s, "{`spec`: {`size`: 1.5}}"), "FieldValueTypeInvalid", "spec.size",
           "Invalid value: \"float64\": spec.size in body must be of type int32: \"float64\"",
           "FieldValueInvalid", "spec.size",
           "Invalid value: 1.5: spec.size in body should be a multiple of 5", NULL);
    json_decref(s);
}

static void test_strings_formats(void **state)
{
    (void)state;
    json_t *s = J("{`type`: `object`, `properties`: {`spec`: {`type`: `object`, `properties`: {"
                  "`name`: {`type`: `string`, `minLength`: 3, `maxLength`: 5},"
                  "`id`: {`type`: `string`, `format`: `uuid`},"
                  "`day`: {`type`: `string`, `format`: `date`},"
                  "`at`: {`type`: `string`, `format`: `date-time`},"
                  "`ip`: {`type`: `string`, `format`: `ipv4`},"
                  "`data`: {`type`: `string`, `format`: `byte`},"
                  "`mail`: {`type`: `string`, `format`: `email`},"
                  "`host`: {`type`: `string`, `format`: `hostname`},"
                  "`free`: {`type`: `string`, `format`: `no-such-format`},"
                  "`bad`: {`type`: `string`, `pattern`: `(?=x)`}}}}}");
    expect(validate(s, "{`spec`: {`name`: `héllo`, `id`: `6BA7B810-9DAD-11D1-80B4-00C04FD430C8`,"
                       " `day`: `2024-02-29`, `at`: `2024-02-29T23:59:59.5+01:00`,"
                       " `ip`: `10.0.0.1`, `data`: `aGk=`, `mail`: `Jo <jo@example.com>`,"
                       " `host`: `my-host.example.com`, `free`: `anything`}}"),
           NULL);
    expect(validate(s, "{`spec`: {`name`: `ab`}}"), "FieldValueInvalid", "spec.name",
           "Invalid value: \"ab\": spec.name in body should be at least 3 chars long", NULL);
    expect(validate(s, "{`spec`: {`name`: `abcdef`}}"), "FieldValueTooLong", "spec.name",
           "Too long: may not be longer than 5", NULL);
    expect(validate(s, "{`spec`: {`id`: `nope`, `day`: `2023-02-29`, `at`: `2024-01-01 10:00:00Z`,"
                       " `ip`: `10.0.0`, `data`: `a`, `mail`: `@x`, `host`: `-x`}}"),
           "FieldValueTypeInvalid", "spec.id",
           "Invalid value: \"nope\": spec.id in body must be of type uuid: \"nope\"",
           "FieldValueTypeInvalid", "spec.day",
           "Invalid value: \"2023-02-29\": spec.day in body must be of type date: \"2023-02-29\"",
           "FieldValueTypeInvalid", "spec.at",
           "Invalid value: \"2024-01-01 10:00:00Z\": spec.at in body must be of type date-time: "
           "\"2024-01-01 10:00:00Z\"",
           "FieldValueTypeInvalid", "spec.ip",
           "Invalid value: \"10.0.0\": spec.ip in body must be of type ipv4: \"10.0.0\"",
           "FieldValueTypeInvalid", "spec.data",
           "Invalid value: \"a\": spec.data in body must be of type byte: \"a\"",
           "FieldValueTypeInvalid", "spec.mail",
           "Invalid value: \"@x\": spec.mail in body must be of type email: \"@x\"",
           "FieldValueTypeInvalid", "spec.host",
           "Invalid value: \"-x\": spec.host in body must be of type hostname: \"-x\"", NULL);
    /* A pattern RE2 would reject makes every value invalid, saying why. */
    expect(validate(s, "{`spec`: {`bad`: `x`}}"), "FieldValueInvalid", "spec.bad",
           "Invalid value: \"x\": spec.bad in body should match '(?=x), but pattern is invalid: "
           "error parsing regexp: invalid or unsupported Perl syntax: `(?=`'",
           NULL);
    /* Go's %q of a value with quotes, a tab and a control byte. */
    expect(validate(s, "{`spec`: {`name`: `a\\`\\t\\u0001`}}"), NULL);
    expect(validate(s, "{`spec`: {`name`: `\\`\\t`}}"), "FieldValueInvalid", "spec.name",
           "Invalid value: \"\\\"\\t\": spec.name in body should be at least 3 chars long", NULL);
    json_decref(s);
}

static void test_patterns(void **state)
{
    (void)state;
    static const struct {
        const char *pattern, *ok, *bad;
    } cases[] = {
        {"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "my-name", "My-Name"},
        {"^\\w+@\\w+\\.com$", "a_1@b.com", "a-1@b.com"},
        {"^[\\w.-]+$", "a.b-c_d", "a b"},
        {"^\\D\\S\\W$", "a!.", "1a."},
        {"^(?:ab)+?c{2,3}$", "ababcc", "abc"},
        {"(?i)^abc$", "ABC", "abd"},
        {"^[\\]\\-^x]+$", "]-^x", "y"},
        {"^a\\.b\\/c$", "a.b/c", "aXb/c"},
        {"^\\x41\\x{263a}$", "A\xe2\x98\xba", "A"},
        {"^a{,2}$", "a{,2}", "aa"},
        {"^\\d{1,3}(\\.\\d{1,3}){3}$", "10.0.0.1", "10.0.0"},
        {"(?im)^b$", "a\nB", "ab"},
        {"^a[\\^]b$", "a^b", "axb"},
        {"^[\\\\]$", "\\", "/"},
        {"^\\Qa.b\\E$", "a.b", "axb"},
        {"^(?P<x>a)(?<y>b)$", "ab", "ba"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_t *s = json_pack("{s:s, s:{s:{s:s, s:s}}}", "type", "object", "properties", "v",
                              "type", "string", "pattern", cases[i].pattern);
        json_t *ok = json_pack("{s:s}", "v", cases[i].ok),
               *bad = json_pack("{s:s}", "v", cases[i].bad);
        json_t *c1 = json_array(), *c2 = json_array();
        api_crd_validate(s, ok, c1);
        api_crd_validate(s, bad, c2);
        if (json_array_size(c1) || json_array_size(c2) != 1)
            fprintf(stderr, "pattern %s: ok %zu bad %zu\n", cases[i].pattern, json_array_size(c1),
                    json_array_size(c2));
        assert_int_equal(json_array_size(c1), 0);
        assert_int_equal(json_array_size(c2), 1);
        json_decref(c1);
        json_decref(c2);
        json_decref(ok);
        json_decref(bad);
        json_decref(s);
    }
}

static void test_arrays_objects(void **state)
{
    (void)state;
    json_t *s =
        J("{`type`: `object`, `properties`: {`spec`: {`type`: `object`, `properties`: {"
          "`items`: {`type`: `array`, `minItems`: 1, `maxItems`: 2, `items`: {`type`: `object`,"
          "  `required`: [`name`], `properties`: {`name`: {`type`: `string`}}}},"
          "`tags`: {`type`: `array`, `uniqueItems`: true, `items`: {`type`: `string`}},"
          "`labels`: {`type`: `object`, `minProperties`: 1, `maxProperties`: 2,"
          "  `additionalProperties`: {`type`: `string`, `maxLength`: 3}},"
          "`closed`: {`type`: `object`, `additionalProperties`: false}}}}}");
    expect(validate(s, "{`spec`: {`items`: [{`name`: `a`}], `tags`: [`x`, `y`],"
                       " `labels`: {`a`: `b`}, `closed`: {}}}"),
           NULL);
    expect(validate(s, "{`spec`: {`items`: [{`name`: `a`}, {}, {`name`: 1}]}}"),
           "FieldValueRequired", "spec.items[1].name", "Required value", "FieldValueTypeInvalid",
           "spec.items[2].name",
           "Invalid value: \"integer\": spec.items[2].name in body must be of type string: "
           "\"integer\"",
           "FieldValueTooMany", "spec.items", "Too many: 3: must have at most 2 items", NULL);
    expect(validate(s, "{`spec`: {`items`: [], `tags`: [`x`, `x`]}}"), "FieldValueInvalid",
           "spec.items", "Invalid value: 0: spec.items in body should have at least 1 items",
           "FieldValueInvalid", "spec.tags",
           "Invalid value: \"\": spec.tags in body shouldn't contain duplicates", NULL);
    expect(validate(s, "{`spec`: {`labels`: {}}}"), "FieldValueInvalid", "spec.labels",
           "Invalid value: 0: spec.labels in body should have at least 1 properties", NULL);
    expect(validate(s, "{`spec`: {`labels`: {`a`: `1`, `b`: `2`, `c`: `3`}}}"), "FieldValueTooMany",
           "spec.labels", "Too many: 3: must have at most 2 items", NULL);
    expect(validate(s, "{`spec`: {`labels`: {`a`: `long`}, `closed`: {`x`: 1}}}"),
           "FieldValueTooLong", "spec.labels.a", "Too long: may not be longer than 3",
           "FieldValueInvalid", "spec.closed",
           "Invalid value: \"x\": spec.closed.x in body is a forbidden property", NULL);
    json_decref(s);
}

static void test_list_types(void **state)
{
    (void)state;
    json_t *s =
        J("{`type`: `object`, `properties`: {`spec`: {`type`: `object`, `properties`: {"
          "`set`: {`type`: `array`, `x-kubernetes-list-type`: `set`, `items`: {`type`: `string`}},"
          "`ports`: {`type`: `array`, `x-kubernetes-list-type`: `map`,"
          "  `x-kubernetes-list-map-keys`: [`port`, `protocol`], `items`: {`type`: `object`,"
          "  `properties`: {`port`: {`type`: `integer`}, `protocol`: {`type`: `string`}}}},"
          "`byName`: {`type`: `object`, `additionalProperties`: {`type`: `array`,"
          "  `x-kubernetes-list-type`: `map`, `x-kubernetes-list-map-keys`: [`name`],"
          "  `items`: {`type`: `object`, `properties`: {`name`: {`type`: `string`}}}}}}}}}");
    expect(validate(s, "{`spec`: {`set`: [`a`, `b`], `ports`: [{`port`: 80}, {`port`: 80, "
                       "`protocol`: `UDP`}]}}"),
           NULL);
    expect(validate(s, "{`spec`: {`set`: [`a`, `b`, `a`, `a`]}}"), "FieldValueDuplicate",
           "spec.set[2]", "Duplicate value: \"a\"", NULL);
    expect(validate(s, "{`spec`: {`ports`: [{`port`: 80, `protocol`: `TCP`}, "
                       "{`port`: 80, `protocol`: `TCP`, `x`: 1}]}}"),
           "FieldValueDuplicate", "spec.ports[1]",
           "Duplicate value: map[string]interface {}{\"port\":80, \"protocol\":\"TCP\"}", NULL);
    expect(validate(s, "{`spec`: {`byName`: {`g`: [{`name`: `a`}, {}, {}, {`name`: `a`}]}}}"),
           "FieldValueDuplicate", "spec.byName[g][2]", "Duplicate value: map[string]interface {}{}",
           "FieldValueDuplicate", "spec.byName[g][3]",
           "Duplicate value: map[string]interface {}{\"name\":\"a\"}", NULL);
    json_decref(s);
}

static void test_junctors(void **state)
{
    (void)state;
    json_t *s = J("{`type`: `object`, `properties`: {`spec`: {`type`: `object`,"
                  " `properties`: {`a`: {`type`: `string`}, `b`: {`type`: `string`},"
                  "  `n`: {`type`: `integer`, `allOf`: [{`minimum`: 1}, {`maximum`: 5}],"
                  "   `not`: {`enum`: [3]}}},"
                  " `anyOf`: [{`required`: [`a`]}, {`required`: [`b`]}],"
                  " `oneOf`: [{`required`: [`a`]}, {`required`: [`b`]}]}}}");
    expect(validate(s, "{`spec`: {`a`: `x`}}"), NULL);
    expect(
        validate(s, "{`spec`: {}}"), "FieldValueInvalid", "",
        "Invalid value: \"\": \"spec\" must validate at least one schema (anyOf)",
        "FieldValueRequired", "spec.a", "Required value", "FieldValueInvalid", "",
        "Invalid value: \"\": \"spec\" must validate one and only one schema (oneOf). Found none "
        "valid",
        "FieldValueRequired", "spec.a", "Required value", NULL);
    expect(validate(s, "{`spec`: {`a`: `x`, `b`: `y`}}"), "FieldValueInvalid", "",
           "Invalid value: \"\": \"spec\" must validate one and only one schema (oneOf). Found 2 "
           "valid alternatives",
           NULL);
    expect(validate(s, "{`spec`: {`a`: `x`, `n`: 9}}"), "FieldValueInvalid", "spec.n",
           "Invalid value: 9: spec.n in body should be less than or equal to 5",
           "FieldValueInvalid", "",
           "Invalid value: \"\": \"spec.n\" must validate all the schemas (allOf)", NULL);
    expect(validate(s, "{`spec`: {`a`: `x`, `n`: 3}}"), "FieldValueInvalid", "",
           "Invalid value: \"\": \"spec.n\" must not validate the schema (not)", NULL);
    json_decref(s);
}

static void test_root_metadata(void **state)
{
    (void)state;
    json_t *s =
        J("{`type`: `object`, `properties`: {`metadata`: {`type`: `object`, `properties`: {"
          "`name`: {`type`: `string`, `maxLength`: 5}}}, `apiVersion`: {`type`: `string`}}}");
    /* The rest of metadata is left to the generic ObjectMeta checks. */
    expect(validate(s, "{`metadata`: {`name`: `abc`, `labels`: 3}}"), NULL);
    expect(validate(s, "{`metadata`: {`name`: `abcdefgh`}, `apiVersion`: 1}"), "FieldValueTooLong",
           "metadata.name", "Too long: may not be longer than 5", "FieldValueTypeInvalid",
           "apiVersion",
           "Invalid value: \"integer\": apiVersion in body must be of type string: \"integer\"",
           NULL);
    json_decref(s);
}

static void test_numbers_printed(void **state)
{
    (void)state;
    json_t *s = J("{`type`: `object`, `properties`: {`x`: {`type`: `number`, `minimum`: 0.5,"
                  " `maximum`: 1234567}, `y`: {`type`: `number`, `enum`: [0.25, 1e+30]}}}");
    expect(validate(s, "{`x`: 0.0001, `y`: 2}"), "FieldValueInvalid", "x",
           "Invalid value: 0.0001: x in body should be greater than or equal to 0.5",
           "FieldValueNotSupported", "y",
           "Unsupported value: 2: supported values: \"0.25\", \"1e+30\"", NULL);
    expect(validate(s, "{`x`: 0.00001}"), "FieldValueInvalid", "x",
           "Invalid value: 1e-05: x in body should be greater than or equal to 0.5", NULL);
    expect(validate(s, "{`x`: 1234567.5}"), "FieldValueInvalid", "x",
           "Invalid value: 1.2345675e+06: x in body should be less than or equal to 1.234567e+06",
           NULL);
    expect(validate(s, "{`x`: 123456.25}"), NULL);
    /* Against an integer value Go truncates the bound: 0 passes minimum 0.5. */
    expect(validate(s, "{`x`: 0}"), NULL);
    json_decref(s);
}

static void test_more_formats(void **state)
{
    (void)state;
    static const struct {
        const char *format, *ok, *bad;
    } cases[] = {
        {"ipv4", "010.0.0.1", "256.0.0.1"},
        {"ipv6", "fe80::1", "fe80::g"},
        {"cidr", "10.0.0.0/8", "10.0.0.0/33"},
        {"mac", "00:1a:2B:3c:4d:5e", "00:1a:2b-3c:4d:5e"},
        {"hexcolor", "#fFf", "#ffff"},
        {"rgbcolor", "rgb(0, 128,255)", "rgb(0,0,256)"},
        {"duration", "1h30m", "soon"},
        {"duration", "3 days", "3 fortnights"},
        {"uri", "https://example.com/x?y", "example.com"},
        {"isbn10", "0-321-75104-3", "0321751044"},
        {"isbn13", "978-0321751041", "9780321751042"},
        {"creditcard", "4111 1111 1111 1111", "4111 1111 1111 1112"},
        {"ssn", "123-45-6789", "123456789"},
        {"bsonobjectid", "507f1f77bcf86cd799439011", "507f1f77bcf86cd79943901"},
        {"uuid4", "123e4567-e89b-42d3-a456-426614174000", "123e4567-e89b-12d3-a456-426614174000"},
        {"password", "anything", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_t *s = json_pack("{s:s, s:{s:{s:s, s:s}}}", "type", "object", "properties", "v",
                              "type", "string", "format", cases[i].format);
        json_t *ok = json_pack("{s:s}", "v", cases[i].ok), *c1 = json_array(), *c2 = json_array();
        api_crd_validate(s, ok, c1);
        if (cases[i].bad) {
            json_t *bad = json_pack("{s:s}", "v", cases[i].bad);
            api_crd_validate(s, bad, c2);
            json_decref(bad);
        }
        if (json_array_size(c1) || json_array_size(c2) != (cases[i].bad ? 1 : 0))
            fprintf(stderr, "format %s: ok %zu bad %zu\n", cases[i].format, json_array_size(c1),
                    json_array_size(c2));
        assert_int_equal(json_array_size(c1), 0);
        assert_int_equal(json_array_size(c2), cases[i].bad ? 1 : 0);
        json_decref(c1);
        json_decref(c2);
        json_decref(ok);
        json_decref(s);
    }
}

/* ---- pruning and defaulting ---- */

static void test_prune(void **state)
{
    (void)state;
    const char *schema =
        "{`type`: `object`, `properties`: {`spec`: {`type`: `object`, `properties`: {"
        "`image`: {`type`: `string`},"
        "`config`: {`type`: `object`, `x-kubernetes-preserve-unknown-fields`: true,"
        "  `properties`: {`known`: {`type`: `object`, `properties`: {`a`: {`type`: `string`}}}}},"
        "`list`: {`type`: `array`, `items`: {`type`: `object`, `properties`: {`k`: {`type`: "
        "`string`}}}},"
        "`map`: {`type`: `object`, `additionalProperties`: {`type`: `object`,"
        "  `properties`: {`v`: {`type`: `integer`}}}},"
        "`any`: {`x-kubernetes-preserve-unknown-fields`: true},"
        "`pod`: {`type`: `object`, `x-kubernetes-embedded-resource`: true,"
        "  `properties`: {`spec`: {`type`: `object`}}}}}}}";
    prune_default(schema,
                  "{`apiVersion`: `v1`, `kind`: `K`, `metadata`: {`name`: `n`, `x`: 1},"
                  " `unknown`: 1, `spec`: {`image`: `i`, `extra`: {`a`: 1},"
                  " `config`: {`free`: {`deep`: [1, {`x`: 2}]}, `known`: {`a`: `b`, `drop`: 1}},"
                  " `list`: [{`k`: `v`, `drop`: 1}, 3], `map`: {`m`: {`v`: 1, `drop`: 2}},"
                  " `any`: {`x`: {`y`: [{`z`: 1}]}},"
                  " `pod`: {`apiVersion`: `v1`, `kind`: `Pod`, `metadata`: {`name`: `p`},"
                  "  `spec`: {}, `status`: {}}}}",
                  "{`apiVersion`: `v1`, `kind`: `K`, `metadata`: {`name`: `n`, `x`: 1},"
                  " `spec`: {`image`: `i`,"
                  " `config`: {`free`: {`deep`: [1, {`x`: 2}]}, `known`: {`a`: `b`}},"
                  " `list`: [{`k`: `v`}, 3], `map`: {`m`: {`v`: 1}},"
                  " `any`: {`x`: {`y`: [{`z`: 1}]}},"
                  " `pod`: {`apiVersion`: `v1`, `kind`: `Pod`, `metadata`: {`name`: `p`},"
                  "  `spec`: {}}}}");
    /* An object without a schema loses every field. */
    prune_default("{`type`: `object`, `properties`: {`o`: {`type`: `object`}}}",
                  "{`o`: {`a`: 1, `b`: {}}}", "{`o`: {}}");
}

static void test_defaults(void **state)
{
    (void)state;
    const char *schema =
        "{`type`: `object`, `properties`: {`spec`: {`type`: `object`, `default`: {}, `properties`: "
        "{"
        "`replicas`: {`type`: `integer`, `default`: 1},"
        "`mode`: {`type`: `string`, `default`: `auto`},"
        "`opt`: {`type`: `string`, `nullable`: true, `default`: `x`},"
        "`gone`: {`type`: `string`},"
        "`nested`: {`type`: `object`, `properties`: {`a`: {`type`: `integer`, `default`: 7}}},"
        "`ports`: {`type`: `array`, `items`: {`type`: `object`, `default`: {`port`: 80},"
        "  `properties`: {`port`: {`type`: `integer`}, `proto`: {`type`: `string`, `default`: "
        "`TCP`}}}},"
        "`env`: {`type`: `object`, `additionalProperties`: {`type`: `string`, `default`: "
        "`on`}}}}}}";
    /* Absent: every default, recursively, inside the spec default too. */
    prune_default(schema, "{}", "{`spec`: {`replicas`: 1, `mode`: `auto`, `opt`: `x`}}");
    /* Present values stay; a non-nullable null takes the default, a nullable
     * null stays, a null without default goes. */
    prune_default(schema,
                  "{`spec`: {`replicas`: 5, `mode`: null, `opt`: null, `gone`: null,"
                  " `nested`: {}, `ports`: [{`port`: 1}, null], `env`: {`A`: null, `B`: `off`}}}",
                  "{`spec`: {`replicas`: 5, `mode`: `auto`, `opt`: null, `nested`: {`a`: 7},"
                  " `ports`: [{`port`: 1, `proto`: `TCP`}, {`port`: 80, `proto`: `TCP`}],"
                  " `env`: {`A`: `on`, `B`: `off`}}}");
    /* Pruning comes first: an unknown field is gone before defaults apply. */
    prune_default(schema, "{`spec`: {`x`: 1, `replicas`: 2}}",
                  "{`spec`: {`replicas`: 2, `mode`: `auto`, `opt`: `x`}}");
    /* Bad input is left alone. */
    json_t *s = J(schema), *arr = J("[1]");
    api_crd_prune_and_default(s, arr);
    api_crd_prune_and_default(NULL, arr);
    assert_int_equal(json_array_size(arr), 1);
    json_decref(arr);
    json_decref(s);
}

/* ---- checking a CRD's schema ---- */

#define P "spec.versions[0].schema.openAPIV3Schema"

/* On read only defaults apply: nothing is pruned or dropped. */
static void test_default_on_read(void **state)
{
    (void)state;
    json_t *s = J("{\"type\":\"object\",\"properties\":{\"spec\":{\"type\":\"object\","
                  "\"properties\":{\"a\":{\"type\":\"string\",\"default\":\"x\"},"
                  "\"n\":{\"type\":\"string\"}}}}}");
    json_t *o = J("{\"spec\":{\"n\":null,\"old\":1}}");
    api_crd_default(s, o);
    json_t *w = J("{\"spec\":{\"a\":\"x\",\"n\":null,\"old\":1}}");
    assert_true(json_equal(o, w));
    api_crd_default(NULL, o);
    assert_true(json_equal(o, w));
    json_decref(s);
    json_decref(o);
    json_decref(w);
}

static void test_check_valid(void **state)
{
    (void)state;
    json_t *s = crontab(), *causes = json_array();
    api_crd_schema_check(s, P, causes);
    expect(causes, NULL);
    json_decref(s);
    expect(
        check(
            "{`type`: `object`, `properties`: {"
            "`metadata`: {`type`: `object`, `properties`: {`name`: {`type`: `string`, `maxLength`: "
            "10}}},"
            "`spec`: {`type`: `object`, `required`: [`a`], `default`: {`a`: `x`},"
            " `anyOf`: [{`required`: [`a`]}, {`properties`: {`b`: {`minimum`: 1}}}],"
            " `properties`: {`a`: {`type`: `string`, `enum`: [`x`, `y`]}, `b`: {`type`: `integer`},"
            "  `port`: {`x-kubernetes-int-or-string`: true,"
            "   `anyOf`: [{`type`: `integer`}, {`type`: `string`}]},"
            "  `free`: {`type`: `object`, `x-kubernetes-preserve-unknown-fields`: true},"
            "  `raw`: {`x-kubernetes-preserve-unknown-fields`: true},"
            "  `ports`: {`type`: `array`, `x-kubernetes-list-type`: `map`,"
            "   `x-kubernetes-list-map-keys`: [`port`], `items`: {`type`: `object`,"
            "   `required`: [`port`], `properties`: {`port`: {`type`: `integer`}}}},"
            "  `tags`: {`type`: `array`, `x-kubernetes-list-type`: `set`, `items`: {`type`: "
            "`string`}},"
            "  `labels`: {`type`: `object`, `additionalProperties`: {`type`: `string`}},"
            "  `pod`: {`type`: `object`, `x-kubernetes-embedded-resource`: true,"
            "   `x-kubernetes-preserve-unknown-fields`: true}}},"
            "`status`: {`type`: `object`, `x-kubernetes-validations`: [{`rule`: `true`}]}}}"),
        NULL);
}

static void test_check_structural(void **state)
{
    (void)state;
    /* A node without a type, at each level. */
    expect(check("{`type`: `object`, `properties`: {`spec`: {`type`: `object`, `properties`: {"
                 "`image`: {`description`: `x`}, `list`: {`type`: `array`, `items`: {}}}}}}"),
           "FieldValueRequired", P ".properties[spec].properties[image].type",
           "Required value: must not be empty for specified object fields", "FieldValueRequired",
           P ".properties[spec].properties[list].items.type",
           "Required value: must not be empty for specified array items", NULL);
    expect(check("{`properties`: {}}"), "FieldValueRequired", P ".type",
           "Required value: must not be empty at the root", NULL);
    expect(check("{`type`: `string`}"), "FieldValueInvalid", P ".type",
           "Invalid value: \"string\": must be object at the root", NULL);
    /* Sorted by "field: message", as Kubernetes sorts them. */
    expect(
        check(
            "{`type`: `object`, `additionalProperties`: {`type`: `string`}, `properties`: {"
            "`metadata`: {`type`: `object`, `properties`: {`labels`: {`type`: `object`}}},"
            "`a`: {`type`: `array`},"
            "`b`: {`type`: `string`, `anyOf`: [{`type`: `string`, `properties`: {`metadata`: {}}}],"
            "  `pattern`: `([a-z`},"
            "`c`: {`type`: `object`, `x-kubernetes-embedded-resource`: true}}}"),
        "FieldValueForbidden", P ".additionalProperties", "Forbidden: must not be used at the root",
        "FieldValueRequired", P ".properties[a].items", "Required value: must be specified",
        "FieldValueForbidden", P ".properties[b].anyOf[0].properties[metadata]",
        "Forbidden: must not be specified in a nested context", "FieldValueForbidden",
        P ".properties[b].anyOf[0].type", "Forbidden: must be empty to be structural",
        "FieldValueInvalid", P ".properties[b].pattern",
        "Invalid value: \"([a-z\": must be a valid regular expression, but isn't: error parsing "
        "regexp: missing closing ]: `[a-z`",
        "FieldValueRequired", P ".properties[c].properties",
        "Required value: must not be empty if x-kubernetes-embedded-resource is true without "
        "x-kubernetes-preserve-unknown-fields",
        "FieldValueForbidden", P ".properties[metadata]",
        "Forbidden: must not specify anything other than name and generateName, but metadata is "
        "implicitly specified",
        /* Then the API checks, in visit order. */
        "FieldValueForbidden", P ".additionalProperties",
        "Forbidden: additionalProperties and properties are mutual exclusive", NULL);
}

static void test_check_forbidden(void **state)
{
    (void)state;
    expect(check("{`type`: `object`, `properties`: {`spec`: {`$ref`: `#/definitions/Spec`}}}"),
           "FieldValueRequired", P ".properties[spec].type",
           "Required value: must not be empty for specified object fields", "FieldValueForbidden",
           P ".properties[spec].$ref", "Forbidden: $ref is not supported", NULL);
    expect(check("{`type`: `object`, `nullable`: true, `properties`: {"
                 "`a`: {`type`: `array`, `uniqueItems`: true, `items`: {`type`: `string`}},"
                 "`b`: {`type`: `object`, `properties`: {`x`: {`type`: `string`}},"
                 "  `additionalProperties`: false},"
                 "`c`: {`type`: `foo`},"
                 "`d`: {`type`: `object`, `x-kubernetes-preserve-unknown-fields`: false},"
                 "`metadata`: {`type`: `object`, `default`: {}}}}"),
           "FieldValueForbidden", P ".nullable", "Forbidden: nullable cannot be true at the root",
           "FieldValueForbidden", P ".properties[a].uniqueItems",
           "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes "
           "quadratic",
           "FieldValueForbidden", P ".properties[b].additionalProperties",
           "Forbidden: additionalProperties and properties are mutual exclusive",
           "FieldValueNotSupported", P ".properties[c].type",
           "Unsupported value: \"foo\": supported values: \"array\", \"boolean\", \"integer\", "
           "\"number\", \"object\", \"string\"",
           "FieldValueInvalid", P ".properties[d].x-kubernetes-preserve-unknown-fields",
           "Invalid value: false: must be true or undefined", "FieldValueForbidden",
           P ".properties[metadata].default", "Forbidden: must not be set in top-level metadata",
           NULL);
    expect(
        check(
            "{`type`: `object`, `properties`: {`l`: {`type`: `array`,"
            " `x-kubernetes-list-type`: `map`, `items`: {`type`: `object`, `properties`: {"
            " `k`: {`type`: `string`, `nullable`: true}}}},"
            "`m`: {`type`: `array`, `x-kubernetes-list-type`: `map`,"
            " `x-kubernetes-list-map-keys`: [`k`, `z`], `items`: {`type`: `object`, `properties`: {"
            " `k`: {`type`: `string`}}}},"
            "`n`: {`type`: `string`, `x-kubernetes-list-type`: `bag`}}}"),
        "FieldValueRequired", P ".properties[l].x-kubernetes-list-map-keys",
        "Required value: must not be empty if x-kubernetes-list-type is map", "FieldValueInvalid",
        P ".properties[m].x-kubernetes-list-map-keys",
        "Invalid value: []string{\"k\", \"z\"}: entries must all be names of item properties",
        "FieldValueRequired", P ".properties[m].items.properties[k].default",
        "Required value: this property is in x-kubernetes-list-map-keys, so it must have a "
        "default or be a required property",
        "FieldValueInvalid", P ".properties[n].type",
        "Invalid value: \"string\": must be array if x-kubernetes-list-type is specified",
        "FieldValueNotSupported", P ".properties[n].x-kubernetes-list-type",
        "Unsupported value: \"bag\": supported values: \"atomic\", \"set\", \"map\"", NULL);
}

static void test_check_defaults_and_completeness(void **state)
{
    (void)state;
    expect(check("{`type`: `object`, `properties`: {`spec`: {`type`: `object`, `properties`: {"
                 "`r`: {`type`: `integer`, `default`: `one`},"
                 "`o`: {`type`: `object`, `properties`: {`a`: {`type`: `string`}},"
                 "  `default`: {`a`: `x`, `zzz`: 1}},"
                 "`e`: {`type`: `string`, `enum`: [`a`], `default`: `b`}}}}}"),
           "FieldValueTypeInvalid", P ".properties[spec].properties[r].default",
           "Invalid value: \"string\":  in body must be of type integer: \"string\"",
           "FieldValueInvalid", P ".properties[spec].properties[o].default",
           "Invalid value: map[string]interface {}{\"a\":\"x\", \"zzz\":1}: must not have unknown "
           "fields",
           "FieldValueNotSupported", P ".properties[spec].properties[e].default",
           "Unsupported value: \"b\": supported values: \"a\"", NULL);
    expect(check("{`type`: `object`, `properties`: {`a`: {`type`: `string`}},"
                 " `oneOf`: [{`properties`: {`b`: {`minLength`: 1}}},"
                 "  {`properties`: {`a`: {`items`: {`minLength`: 1}}}}]}"),
           "FieldValueRequired", P ".properties[a].items",
           "Required value: because it is defined in " P ".oneOf[1].properties[a].items",
           "FieldValueRequired", P ".properties[b]",
           "Required value: because it is defined in " P ".oneOf[0].properties[b]", NULL);
    /* Bad arguments append nothing. */
    json_t *causes = json_array();
    api_crd_schema_check(NULL, P, causes);
    api_crd_validate(NULL, NULL, causes);
    expect(causes, NULL);
}

static void test_check_nested_and_embedded(void **state)
{
    (void)state;
    expect(
        check("{`type`: `object`, `properties`: {"
              "`a`: {`x-kubernetes-int-or-string`: true, `x-kubernetes-preserve-unknown-fields`: "
              "true},"
              "`b`: {`type`: `string`, `anyOf`: [{`default`: `x`, `title`: `t`, `nullable`: true,"
              "  `additionalProperties`: false, `x-kubernetes-validations`: [{`rule`: `self`}]}]},"
              "`e`: {`type`: `string`, `x-kubernetes-embedded-resource`: true},"
              "`k`: {`type`: `object`, `x-kubernetes-embedded-resource`: true,"
              "  `x-kubernetes-preserve-unknown-fields`: true,"
              "  `properties`: {`kind`: {`type`: `integer`}, `metadata`: {`type`: `string`}}}}}"),
        "FieldValueInvalid", P ".properties[a].x-kubernetes-preserve-unknown-fields",
        "Invalid value: true: must be false if x-kubernetes-int-or-string is true",
        "FieldValueForbidden", P ".properties[b].anyOf[0].additionalProperties",
        "Forbidden: must be undefined to be structural", "FieldValueForbidden",
        P ".properties[b].anyOf[0].default", "Forbidden: must be undefined to be structural",
        "FieldValueForbidden", P ".properties[b].anyOf[0].nullable",
        "Forbidden: must be false to be structural", "FieldValueForbidden",
        P ".properties[b].anyOf[0].title", "Forbidden: must be empty to be structural",
        "FieldValueForbidden", P ".properties[b].anyOf[0].x-kubernetes-validations",
        "Forbidden: must be empty to be structural", "FieldValueRequired",
        P ".properties[e].properties",
        "Required value: must not be empty if x-kubernetes-embedded-resource is true without "
        "x-kubernetes-preserve-unknown-fields",
        "FieldValueInvalid", P ".properties[e].type",
        "Invalid value: \"string\": must be object if x-kubernetes-embedded-resource is true",
        "FieldValueInvalid", P ".properties[k].properties[kind].type",
        "Invalid value: \"integer\": must be string", "FieldValueInvalid",
        P ".properties[k].properties[metadata].type", "Invalid value: \"string\": must be object",
        NULL);
    /* additionalProperties: true keeps the keys but knows nothing inside. */
    prune_default("{`type`: `object`, `properties`: {`m`: {`type`: `object`,"
                  " `additionalProperties`: true}}}",
                  "{`m`: {`a`: 1, `b`: {`c`: 2}}}", "{`m`: {`a`: 1, `b`: {}}}");
}

/* Deep objects: every walk must cope (small frames, no depth limit of ours). */
static void test_deep(void **state)
{
    (void)state;
    json_t *s = J("{`type`: `object`, `properties`: {`spec`: {`type`: `object`,"
                  " `x-kubernetes-preserve-unknown-fields`: true}}}");
    json_t *obj = json_object(), *cur = json_object(), *causes = json_array();
    json_object_set_new(obj, "spec", cur);
    for (int i = 0; i < 3000; i++) {
        json_t *next = json_object();
        json_object_set_new(cur, "n", next);
        json_object_set_new(cur, "z", json_null());
        cur = next;
    }
    api_crd_prune_and_default(s, obj);
    api_crd_validate(s, obj, causes);
    assert_int_equal(json_array_size(causes), 0);
    assert_non_null(json_object_get(json_object_get(json_object_get(obj, "spec"), "n"), "n"));
    json_decref(causes);
    json_decref(obj);
    json_decref(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crontab_valid),
        cmocka_unit_test(test_crontab_invalid),
        cmocka_unit_test(test_required_enum),
        cmocka_unit_test(test_types),
        cmocka_unit_test(test_strings_formats),
        cmocka_unit_test(test_patterns),
        cmocka_unit_test(test_arrays_objects),
        cmocka_unit_test(test_list_types),
        cmocka_unit_test(test_junctors),
        cmocka_unit_test(test_root_metadata),
        cmocka_unit_test(test_numbers_printed),
        cmocka_unit_test(test_more_formats),
        cmocka_unit_test(test_prune),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_check_valid),
        cmocka_unit_test(test_check_structural),
        cmocka_unit_test(test_check_forbidden),
        cmocka_unit_test(test_check_defaults_and_completeness),
        cmocka_unit_test(test_check_nested_and_embedded),
        cmocka_unit_test(test_deep),
        cmocka_unit_test(test_default_on_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
