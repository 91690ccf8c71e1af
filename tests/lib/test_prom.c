/*
 * test_prom.c -- lib/prom.c: a label value escaped as the Prometheus text
 * format says (backslash, double quote, newline), cut at its byte budget
 * without cutting a UTF-8 sequence, and within the output's room.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "lib/prom.h"

static void test_escapes(void **state)
{
    (void)state;
    char out[64];
    size_t n = prom_label_escape("a\\b\"c\nd", 256, out, sizeof out);
    assert_string_equal(out, "a\\\\b\\\"c\\nd");
    assert_int_equal(n, strlen(out));
    prom_label_escape("plain text: conflict", 256, out, sizeof out);
    assert_string_equal(out, "plain text: conflict");
    prom_label_escape("", 256, out, sizeof out);
    assert_string_equal(out, "");
}

static void test_budget(void **state)
{
    (void)state;
    char out[64];
    /* max_in bytes of the input, escapes not counted against it. */
    prom_label_escape("\"\"\"\"\"\"", 4, out, sizeof out);
    assert_string_equal(out, "\\\"\\\"\\\"\\\"");
    /* "é" is two bytes: a budget ending inside it drops it whole. */
    prom_label_escape("ab\xc3\xa9z", 3, out, sizeof out);
    assert_string_equal(out, "ab");
    prom_label_escape("ab\xc3\xa9z", 4, out, sizeof out);
    assert_string_equal(out, "ab\xc3\xa9");
    /* Three-byte "€" cut after one or two of its bytes. */
    prom_label_escape("x\xe2\x82\xac", 2, out, sizeof out);
    assert_string_equal(out, "x");
    prom_label_escape("x\xe2\x82\xac", 3, out, sizeof out);
    assert_string_equal(out, "x");
}

static void test_room(void **state)
{
    (void)state;
    char out[5];
    /* Never an escape cut in half: "a\\" then no room for the next pair. */
    size_t n = prom_label_escape("a\"\"\"", 256, out, sizeof out);
    assert_string_equal(out, "a\\\"");
    assert_int_equal(n, 3);
    char big[2 * 8 + 1];
    /* 2 * max_in + 1 always fits. */
    prom_label_escape("\n\n\n\n\n\n\n\n\n\n", 8, big, sizeof big);
    assert_string_equal(big, "\\n\\n\\n\\n\\n\\n\\n\\n");
    char none[1] = {'x'};
    assert_int_equal(prom_label_escape("abc", 256, none, 1), 0);
    assert_string_equal(none, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_budget),
        cmocka_unit_test(test_room),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
