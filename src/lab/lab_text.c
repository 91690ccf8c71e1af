/*
 * lab_text.c -- the text `kplane lab` prints: aligned tables for people and
 * `@lab <json>` lines for the dashboard (see lab_int.h). Pure: no I/O, no
 * state.
 */
#include "lab/lab_int.h"

#include <stdio.h>
#include <string.h>

int lab__json_str(buf_t *b, const char *s)
{
    int rc = buf_append(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); !rc && *p; p++) {
        const char *esc = NULL;
        char hex[8];
        switch (*p) {
        case '"':
            esc = "\\\"";
            break;
        case '\\':
            esc = "\\\\";
            break;
        case '\n':
            esc = "\\n";
            break;
        case '\t':
            esc = "\\t";
            break;
        case '\r':
            esc = "\\r";
            break;
        case '\b':
            esc = "\\b";
            break;
        case '\f':
            esc = "\\f";
            break;
        default:
            if (*p < 0x20 || *p == 0x7f) {
                snprintf(hex, sizeof hex, "\\u%04x", *p);
                esc = hex;
            }
        }
        rc = esc ? buf_append(b, esc, strlen(esc)) : buf_append(b, p, 1);
    }
    return rc ? rc : buf_append(b, "\"", 1);
}

static int put(buf_t *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

/* "[a,b,...]" of JSON strings. */
static int str_array(buf_t *b, const char *const *v, size_t n)
{
    int rc = put(b, "[");
    for (size_t i = 0; !rc && i < n; i++) {
        if (i) rc = put(b, ",");
        if (!rc) rc = lab__json_str(b, v[i]);
    }
    return rc ? rc : put(b, "]");
}

/* `@lab {"key":<string>}` */
static int one_string(buf_t *b, const char *key, const char *value)
{
    int rc = put(b, "@lab {\"");
    if (!rc) rc = put(b, key);
    if (!rc) rc = put(b, "\":");
    if (!rc) rc = lab__json_str(b, value);
    return rc ? rc : put(b, "}\n");
}

int lab__event_say(buf_t *b, const char *text)
{
    return one_string(b, "say", text);
}

int lab__event_end(buf_t *b, const char *title)
{
    return one_string(b, "end", title);
}

int lab__event_table(buf_t *b, const char *title, const char *const *cols, size_t ncols)
{
    int rc = put(b, "@lab {\"table\":");
    if (!rc) rc = lab__json_str(b, title);
    if (!rc) rc = put(b, ",\"columns\":");
    if (!rc) rc = str_array(b, cols, ncols);
    return rc ? rc : put(b, "}\n");
}

int lab__event_row(buf_t *b, const char *const *cells, size_t ncells)
{
    int rc = put(b, "@lab {\"row\":");
    if (!rc) rc = str_array(b, cells, ncells);
    return rc ? rc : put(b, "}\n");
}

int lab__event_done(buf_t *b, int ok, const char *error)
{
    if (ok) return put(b, "@lab {\"done\":1}\n");
    int rc = put(b, "@lab {\"done\":0,\"error\":");
    if (!rc) rc = lab__json_str(b, error ? error : "failed");
    return rc ? rc : put(b, "}\n");
}

size_t lab__text_width(const char *s)
{
    size_t w = 0;
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++)
        w += (*p & 0xc0) != 0x80;
    return w;
}

/* s, then spaces up to `width` (none when last). */
static int cell(buf_t *b, const char *s, size_t width, int last)
{
    int rc = put(b, s ? s : "");
    for (size_t w = lab__text_width(s); !rc && !last && w < width; w++)
        rc = buf_append(b, " ", 1);
    return rc;
}

int lab__table_text(buf_t *b, const char *title, const char *const *cols, size_t ncols,
                    const char *const *cells, size_t nrows)
{
    enum { MAX_COLS = 32 };
    size_t width[MAX_COLS] = {0};
    if (ncols > MAX_COLS) ncols = MAX_COLS;
    for (size_t c = 0; c < ncols; c++) {
        width[c] = lab__text_width(cols[c]);
        for (size_t r = 0; r < nrows; r++) {
            size_t w = lab__text_width(cells[r * ncols + c]);
            if (w > width[c]) width[c] = w;
        }
    }
    int rc = put(b, title ? title : "");
    if (!rc) rc = put(b, "\n");
    for (size_t c = 0; !rc && c < ncols; c++) {
        if (c) rc = put(b, "  ");
        if (!rc) rc = cell(b, cols[c], width[c], c + 1 == ncols);
    }
    if (!rc) rc = put(b, "\n");
    for (size_t c = 0; !rc && c < ncols; c++) {
        if (c) rc = put(b, "  ");
        for (size_t w = 0; !rc && w < width[c]; w++)
            rc = put(b, "-");
    }
    if (!rc) rc = put(b, "\n");
    for (size_t r = 0; !rc && r < nrows; r++) {
        for (size_t c = 0; !rc && c < ncols; c++) {
            if (c) rc = put(b, "  ");
            if (!rc) rc = cell(b, cells[r * ncols + c], width[c], c + 1 == ncols);
        }
        if (!rc) rc = put(b, "\n");
    }
    return rc;
}
