/*
 * test_lab.c -- src/lab/lab_text.c and the pure part of lab_kit.c: the
 * exact bytes of tables and `@lab` event lines, and reading objects.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lab/lab_int.h"
#include "lib/err.h"

/* The text f appended to a fresh buffer (capped at max), as a string the
 * test frees; *rc: f's result. */
#define TEXT(max, rc, call)                                                                        \
    ({                                                                                             \
        buf_t b_;                                                                                  \
        buf_init(&b_, (max));                                                                      \
        buf_t *b = &b_;                                                                            \
        *(rc) = (call);                                                                            \
        buf_append(&b_, "", 0);                                                                    \
        size_t len_;                                                                               \
        buf_detach(&b_, &len_);                                                                    \
    })

static void expect_text(char *got, const char *want)
{
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void test_json_str(void **state)
{
    (void)state;
    int rc;
    expect_text(TEXT(1024, &rc, lab__json_str(b, "plain")), "\"plain\"");
    assert_int_equal(rc, 0);
    expect_text(TEXT(1024, &rc, lab__json_str(b, "q\"b\\s/")), "\"q\\\"b\\\\s/\"");
    expect_text(TEXT(1024, &rc, lab__json_str(b, "a\nb\tc\rd\be\ff")), "\"a\\nb\\tc\\rd\\be\\ff\"");
    expect_text(TEXT(1024, &rc, lab__json_str(b, "\x01\x1f\x7f")), "\"\\u0001\\u001f\\u007f\"");
    /* UTF-8 passes through. */
    expect_text(TEXT(1024, &rc,
                     lab__json_str(b, "0\xe2\x86\x92"
                                      "3")),
                "\"0\xe2\x86\x92"
                "3\"");
    expect_text(TEXT(1024, &rc, lab__json_str(b, NULL)), "\"\"");
    assert_int_equal(rc, 0);
}

static void test_json_str_cap(void **state)
{
    (void)state;
    int rc;
    free(TEXT(4, &rc, lab__json_str(b, "abcdef")));
    assert_int_equal(rc, KP_ETOOLARGE);
}

static void test_event_lines(void **state)
{
    (void)state;
    int rc;
    expect_text(TEXT(1024, &rc, lab__event_say(b, "server \"a\" ready")),
                "@lab {\"say\":\"server \\\"a\\\" ready\"}\n");
    const char *cols[] = {"step", "ms"};
    expect_text(TEXT(1024, &rc, lab__event_table(b, "Steps", cols, 2)),
                "@lab {\"table\":\"Steps\",\"columns\":[\"step\",\"ms\"]}\n");
    const char *cells[] = {"image", "1\n2"};
    expect_text(TEXT(1024, &rc, lab__event_row(b, cells, 2)),
                "@lab {\"row\":[\"image\",\"1\\n2\"]}\n");
    expect_text(TEXT(1024, &rc, lab__event_row(b, cells, 0)), "@lab {\"row\":[]}\n");
    expect_text(TEXT(1024, &rc, lab__event_end(b, "Steps")), "@lab {\"end\":\"Steps\"}\n");
    expect_text(TEXT(1024, &rc, lab__event_done(b, 1, "ignored")), "@lab {\"done\":1}\n");
    expect_text(TEXT(1024, &rc, lab__event_done(b, 0, "lost 2")),
                "@lab {\"done\":0,\"error\":\"lost 2\"}\n");
    expect_text(TEXT(1024, &rc, lab__event_done(b, 0, NULL)),
                "@lab {\"done\":0,\"error\":\"failed\"}\n");
    assert_int_equal(rc, 0);
}

static void test_width(void **state)
{
    (void)state;
    assert_int_equal(lab__text_width(NULL), 0);
    assert_int_equal(lab__text_width(""), 0);
    assert_int_equal(lab__text_width("abc"), 3);
    assert_int_equal(lab__text_width("0\xe2\x86\x92"
                                     "3"),
                     3);                                       /* 0→3 */
    assert_int_equal(lab__text_width("\xc3\xa9t\xc3\xa9"), 3); /* été */
}

static void test_table(void **state)
{
    (void)state;
    int rc;
    const char *cols[] = {"step", "ReplicaSet", "ms"};
    const char *cells[] = {"create", "web-7f9c", "812", "image", "web-55d1",
                           "1204",   "count",    NULL,  "9"};
    expect_text(TEXT(4096, &rc, lab__table_text(b, "Steps", cols, 3, cells, 3)),
                "Steps\n"
                "step    ReplicaSet  ms\n"
                "------  ----------  ----\n"
                "create  web-7f9c    812\n"
                "image   web-55d1    1204\n"
                "count               9\n");
    assert_int_equal(rc, 0);
    /* No rows: the header and its rule; a wide UTF-8 cell aligns by code points. */
    expect_text(TEXT(4096, &rc, lab__table_text(b, "T", cols, 2, NULL, 0)),
                "T\nstep  ReplicaSet\n----  ----------\n");
    const char *u[] = {"3\xe2\x86\x92"
                       "5",
                       "x"};
    const char *c2[] = {"a", "b"};
    expect_text(TEXT(4096, &rc, lab__table_text(b, "U", c2, 2, u, 1)),
                "U\na    b\n---  -\n3\xe2\x86\x92"
                "5  x\n");
    free(TEXT(16, &rc, lab__table_text(b, "Steps", cols, 3, cells, 3)));
    assert_int_equal(rc, KP_ETOOLARGE);
}

static void test_read_objects(void **state)
{
    (void)state;
    json_error_t err;
    json_t *o = json_loads("{\"metadata\":{\"name\":\"web\",\"resourceVersion\":\"42\","
                           "\"generation\":3,\"ownerReferences\":[{\"kind\":\"A\",\"name\":\"a\"},"
                           "{\"kind\":\"ReplicaSet\",\"name\":\"web-1\",\"controller\":true}]},"
                           "\"spec\":{\"replicas\":\"x\"}}",
                           0, &err);
    assert_non_null(o);
    assert_string_equal(lab__jstr(o, "metadata.name"), "web");
    assert_string_equal(lab__jstr(o, "metadata.missing"), "");
    assert_string_equal(lab__jstr(o, "metadata"), "");
    assert_int_equal(lab__jint(o, "metadata.resourceVersion", -1), 42);
    assert_int_equal(lab__jint(o, "metadata.generation", -1), 3);
    assert_int_equal(lab__jint(o, "spec.replicas", -1), -1);
    assert_int_equal(lab__jint(o, "status.replicas", 7), 7);
    const json_t *ref = lab__controller_ref(o);
    assert_non_null(ref);
    assert_string_equal(lab__jstr(ref, "name"), "web-1");
    json_t *none = json_pack("{s:{}}", "metadata");
    assert_null(lab__controller_ref(none));
    json_decref(none);
    json_decref(o);
}

static void test_labs_listed(void **state)
{
    (void)state;
    static const char *const want[] = {"exercise", "kill-the-truth", "central-brain"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const lab_def_t *d = lab_find(want[i]);
        assert_non_null(d);
        assert_string_equal(d->name, want[i]);
        assert_non_null(d->run);
        assert_true(strlen(d->title) > 10);
    }
    assert_null(lab_find("nope"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_str),    cmocka_unit_test(test_json_str_cap),
        cmocka_unit_test(test_event_lines), cmocka_unit_test(test_width),
        cmocka_unit_test(test_table),       cmocka_unit_test(test_read_objects),
        cmocka_unit_test(test_labs_listed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
