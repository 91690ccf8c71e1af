/*
 * selector.c -- label and field selectors, as apimachinery parses and matches
 * them (pkg/labels/selector.go, pkg/fields/selector.go, metav1 helpers.go).
 *
 * INVARIANTS
 *   1. Every requirement of a sel_label_t passed the checks of Kubernetes'
 *      NewRequirement: the key is a qualified name, every value a valid label
 *      value, In/NotIn have >= 1 value, Exists/DoesNotExist none, the exact
 *      operators and Gt/Lt exactly one, and Gt/Lt's value is an int64 (kept
 *      parsed in `num`). Values parsed from text are a sorted set, as
 *      Kubernetes' sets.String makes them (this fixes the index in messages).
 *   2. Nothing is changed after construction, and nothing is cached lazily:
 *      concurrent matching needs no lock.
 *   3. Field terms are kept in the order Kubernetes evaluates them (the raw
 *      terms sorted bytewise), so the first error reported is Kubernetes' one.
 *
 * ERROR TEXT. Kubernetes builds its messages from field.Error values whose path
 * is nil in the string parser ("<nil>: Invalid value: ...") and relative
 * ("key: ...", "values[0][k]: ...") in NewRequirement; several errors of one
 * requirement are joined as an aggregate "[a, b]". The texts below are those
 * of apimachinery v0.20..v0.33 (util/validation/validation.go).
 *
 * LEXER (label selectors). Whitespace is ' ', '\t', '\r', '\n'. The specials
 * `= ! ( ) , > <` form tokens of one character, or two for "==" and "!=".
 * Anything else up to a special or whitespace is an identifier; "in" and
 * "notin" are keywords, except where the parser expects a key or a value.
 */
#include "apiserver/schema/selector.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"

/* ---- a growable string for messages (errors are rare; simplicity wins) ---- */

typedef struct sb {
    char *p;
    size_t len, cap;
    int oom;
} sb_t;

static void sb_putn(sb_t *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 128;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_puts(sb_t *b, const char *s)
{
    sb_putn(b, s, strlen(s));
}

static void sb_printf(sb_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sb_t *b, const char *fmt, ...)
{
    char tmp[128]; /* every format here is short; longer output is cut */
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) sb_putn(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* Length (1..4) of the valid UTF-8 sequence at s[0..n), or 0 if invalid
 * (overlong forms, surrogates and code points above U+10FFFF included, as Go
 * decodes). *cp gets the code point. */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if (c >= 0xc2 && c <= 0xdf) {
        len = 2, v = c & 0x1f, min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3, v = c & 0x0f, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4, v = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;
    *cp = v;
    return len;
}

/* Whether Go's strconv.IsPrint holds for a non-ASCII code point. Exact for
 * the common cases (C1 controls, spaces, format characters, private use);
 * exotic unassigned code points count as printable. */
static bool go_isprint(uint32_t r)
{
    if (r < 0xa0) return false; /* C1 controls */
    if (r == 0xa0 || r == 0xad || r == 0x1680 || r == 0x3000 || r == 0xfeff) return false;
    if ((r >= 0x2000 && r <= 0x200f) || (r >= 0x2028 && r <= 0x202f)) return false;
    if (r >= 0x205f && r <= 0x206f) return false;
    if ((r >= 0xe000 && r <= 0xf8ff) || r >= 0xf0000) return false; /* private use */
    if (r >= 0xfff9 && r <= 0xfffb) return false;
    if ((r & 0xfffe) == 0xfffe) return false; /* noncharacters */
    return true;
}

/* Append s quoted as Go's %q does (strconv.Quote). */
static void sb_quote(sb_t *b, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t n = strlen(str);
    sb_putn(b, "\"", 1);
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        uint32_t r;
        size_t w = utf8_decode(s + i, n - i, &r);
        if (w == 0) {
            sb_printf(b, "\\x%02x", c);
            i++;
            continue;
        }
        if (r == '"' || r == '\\') {
            char e[2] = {'\\', (char)r};
            sb_putn(b, e, 2);
        } else if (r >= 0x20 && r < 0x7f) {
            sb_putn(b, (const char *)s + i, 1);
        } else if (r >= 0x80 && go_isprint(r)) {
            sb_putn(b, (const char *)s + i, w);
        } else {
            switch (r) {
            case '\a':
                sb_puts(b, "\\a");
                break;
            case '\b':
                sb_puts(b, "\\b");
                break;
            case '\f':
                sb_puts(b, "\\f");
                break;
            case '\n':
                sb_puts(b, "\\n");
                break;
            case '\r':
                sb_puts(b, "\\r");
                break;
            case '\t':
                sb_puts(b, "\\t");
                break;
            case '\v':
                sb_puts(b, "\\v");
                break;
            default:
                if (r < 0x20 || r == 0x7f)
                    sb_printf(b, "\\x%02x", (unsigned)r);
                else if (r < 0x10000)
                    sb_printf(b, "\\u%04x", (unsigned)r);
                else
                    sb_printf(b, "\\U%08x", (unsigned)r);
            }
        }
        i += w;
    }
    sb_putn(b, "\"", 1);
}

/* Append s as Go's encoding/json writes a string (HTML-safe escaping). */
static void sb_json_string(sb_t *b, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t n = strlen(str);
    sb_putn(b, "\"", 1);
    for (size_t i = 0; i < n;) {
        uint32_t r;
        size_t w = utf8_decode(s + i, n - i, &r);
        if (w == 0) {
            sb_puts(b, "\\ufffd");
            i++;
            continue;
        }
        if (r == '"' || r == '\\') {
            char e[2] = {'\\', (char)r};
            sb_putn(b, e, 2);
        } else if (r == '\n') {
            sb_puts(b, "\\n");
        } else if (r == '\r') {
            sb_puts(b, "\\r");
        } else if (r == '\t') {
            sb_puts(b, "\\t");
        } else if (r < 0x20 || r == '<' || r == '>' || r == '&' || r == 0x2028 || r == 0x2029) {
            sb_printf(b, "\\u%04x", (unsigned)r);
        } else {
            sb_putn(b, (const char *)s + i, w);
        }
        i += w;
    }
    sb_putn(b, "\"", 1);
}

/* An aggregate of errors: messages joined by ", ", bracketed when > 1. */
typedef struct agg {
    sb_t msgs;
    size_t n;
} agg_t;

/* Start the next message of the aggregate; the caller appends its text. */
static sb_t *agg_next(agg_t *a)
{
    if (a->n++) sb_puts(&a->msgs, ", ");
    return &a->msgs;
}

/* Copy `prefix` and the message into err; free the message buffers.
 * Returns KP_EINVAL, or KP_ENOMEM if building a message failed. */
static int report(char *err, size_t errlen, const char *prefix, sb_t *msg, int bracket)
{
    int rc = msg->oom ? KP_ENOMEM : KP_EINVAL;
    if (err && errlen) {
        if (rc == KP_ENOMEM)
            snprintf(err, errlen, "out of memory");
        else
            snprintf(err, errlen, "%s%s%s%s", prefix, bracket ? "[" : "", msg->p ? msg->p : "",
                     bracket ? "]" : "");
    }
    free(msg->p);
    memset(msg, 0, sizeof *msg);
    return rc;
}

static int oom(char *err, size_t errlen)
{
    if (err && errlen) snprintf(err, errlen, "out of memory");
    return KP_ENOMEM;
}

/* ---- validation (util/validation IsQualifiedName, IsValidLabelValue) ---- */

#define QNAME_FMT "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
#define QNAME_MSG                                                                                  \
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "            \
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "          \
    "used for validation is '" QNAME_FMT "')"
#define LVALUE_MSG                                                                                 \
    "a valid label must be an empty string or consist of alphanumeric characters, '-', "           \
    "'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  "         \
    "or 'my_value',  or '12345', regex used for validation is '(" QNAME_FMT ")?')"
#define DNS_FMT "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
#define DNS_MSG                                                                                    \
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "          \
    "'-' or '.', and must start and end with an alphanumeric character (e.g. "                     \
    "'example.com', regex used for validation is '" DNS_FMT "')"

static bool is_alnum(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_lower_alnum(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* QNAME_FMT, anchored: alphanumeric at both ends, [-_.] allowed inside. */
static bool match_qname(const char *s, size_t n)
{
    if (n == 0 || !is_alnum((unsigned char)s[0]) || !is_alnum((unsigned char)s[n - 1]))
        return false;
    for (size_t i = 1; i + 1 < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!is_alnum(c) && c != '-' && c != '_' && c != '.') return false;
    }
    return true;
}

/* DNS_FMT, anchored: dot-separated labels of [a-z0-9-], alnum at both ends. */
static bool match_dns_subdomain(const char *s, size_t n)
{
    size_t i = 0;
    for (;;) {
        size_t start = i;
        while (i < n && s[i] != '.')
            i++;
        if (i == start) return false;
        if (!is_lower_alnum((unsigned char)s[start]) || !is_lower_alnum((unsigned char)s[i - 1]))
            return false;
        for (size_t j = start + 1; j + 1 < i; j++)
            if (!is_lower_alnum((unsigned char)s[j]) && s[j] != '-') return false;
        if (i == n) return true;
        i++;
    }
}

static void add_part(sb_t *b, size_t *n, const char *msg)
{
    if ((*n)++) sb_puts(b, "; ");
    sb_puts(b, msg);
}

/* Append IsQualifiedName's complaints about k, joined by "; ". Returns how many. */
static size_t key_problems(sb_t *b, const char *k)
{
    size_t n = 0;
    const char *name = k;
    const char *slash = strchr(k, '/');
    if (slash && strchr(slash + 1, '/')) {
        add_part(b, &n,
                 "a qualified name " QNAME_MSG " with an optional DNS subdomain prefix "
                 "and '/' (e.g. 'example.com/MyName')");
        return n;
    }
    if (slash) {
        size_t plen = (size_t)(slash - k);
        if (plen == 0) {
            add_part(b, &n, "prefix part must be non-empty");
        } else {
            if (plen > 253) add_part(b, &n, "prefix part must be no more than 253 characters");
            if (!match_dns_subdomain(k, plen)) add_part(b, &n, "prefix part " DNS_MSG);
        }
        name = slash + 1;
    }
    size_t nlen = strlen(name);
    if (nlen == 0)
        add_part(b, &n, "name part must be non-empty");
    else if (nlen > 63)
        add_part(b, &n, "name part must be no more than 63 characters");
    if (!match_qname(name, nlen)) add_part(b, &n, "name part " QNAME_MSG);
    return n;
}

static bool key_valid(const char *k)
{
    sb_t tmp = {0};
    size_t n = key_problems(&tmp, k);
    free(tmp.p);
    return n == 0;
}

/* Append IsValidLabelValue's complaints about v. Returns how many. */
static size_t value_problems(sb_t *b, const char *v)
{
    size_t n = 0, len = strlen(v);
    if (len > 63) add_part(b, &n, "must be no more than 63 characters");
    if (len && !match_qname(v, len)) add_part(b, &n, LVALUE_MSG);
    return n;
}

static int check_with(size_t (*problems)(sb_t *, const char *), const char *s, char *err,
                      size_t errlen)
{
    sb_t b = {0};
    size_t n = problems(&b, s);
    if (n && errlen) snprintf(err, errlen, "%s", b.p ? b.p : "out of memory");
    free(b.p);
    return n ? KP_EINVAL : 0;
}

int sel_label_key_check(const char *key, char *err, size_t errlen)
{
    return check_with(key_problems, key, err, errlen);
}

int sel_label_value_check(const char *value, char *err, size_t errlen)
{
    return check_with(value_problems, value, err, errlen);
}

/* strconv.ParseInt(s, 10, 64): optional sign, then one or more digits. */
static bool parse_int64(const char *s, int64_t *out)
{
    bool neg = false;
    if (*s == '+' || *s == '-') neg = *s++ == '-';
    if (!*s) return false;
    uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return false;
        unsigned d = (unsigned)(*s - '0');
        if (v > (lim - d) / 10) return false;
        v = v * 10 + d;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

/* ---- label selector representation ---- */

enum op { OP_IN, OP_NOTIN, OP_EQ, OP_DEQ, OP_NEQ, OP_EXISTS, OP_NOTEXISTS, OP_GT, OP_LT };

typedef struct req {
    char *key;
    enum op op;
    size_t nvals;
    char **vals;
    int64_t num; /* OP_GT, OP_LT: the value */
} req_t;

struct sel_label {
    size_t n, cap;
    req_t *reqs;
};

static void req_free(req_t *r)
{
    for (size_t i = 0; i < r->nvals; i++)
        free(r->vals[i]);
    free(r->vals);
    free(r->key);
}

void sel_label_free(sel_label_t *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->n; i++)
        req_free(&s->reqs[i]);
    free(s->reqs);
    free(s);
}

/* The checks of NewRequirement (paths relative: "key", "values[i][key]"),
 * appended to the aggregate. */
static void check_req(agg_t *a, const char *key, enum op op, char *const *vals, size_t n)
{
    sb_t tmp = {0};
    if (key_problems(&tmp, key)) {
        sb_t *b = agg_next(a);
        sb_puts(b, "key: Invalid value: ");
        sb_quote(b, key);
        sb_puts(b, ": ");
        sb_puts(b, tmp.p ? tmp.p : "");
    }
    free(tmp.p);

    const char *why = NULL;
    if ((op == OP_IN || op == OP_NOTIN) && n == 0)
        why = "for 'in', 'notin' operators, values set can't be empty";
    else if ((op == OP_EQ || op == OP_DEQ || op == OP_NEQ) && n != 1)
        why = "exact-match compatibility requires one single value";
    else if ((op == OP_EXISTS || op == OP_NOTEXISTS) && n != 0)
        why = "values set must be empty for exists and does not exist";
    else if ((op == OP_GT || op == OP_LT) && n != 1)
        why = "for 'Gt', 'Lt' operators, exactly one value is required";
    if (why) {
        sb_t *b = agg_next(a);
        sb_puts(b, "values: Invalid value: ");
        if (n == 0) {
            sb_puts(b, "null"); /* Go marshals the nil slice it was given */
        } else {
            sb_puts(b, "[");
            for (size_t i = 0; i < n; i++) {
                if (i) sb_puts(b, ",");
                sb_json_string(b, vals[i]);
            }
            sb_puts(b, "]");
        }
        sb_puts(b, ": ");
        sb_puts(b, why);
    }
    if (op == OP_GT || op == OP_LT) {
        for (size_t i = 0; i < n; i++) {
            int64_t v;
            if (parse_int64(vals[i], &v)) continue;
            sb_t *b = agg_next(a);
            sb_printf(b, "values[%zu]: Invalid value: ", i);
            sb_quote(b, vals[i]);
            sb_puts(b, ": for 'Gt', 'Lt' operators, the value must be an integer");
        }
    }
    for (size_t i = 0; i < n; i++) {
        memset(&tmp, 0, sizeof tmp);
        if (value_problems(&tmp, vals[i])) {
            sb_t *b = agg_next(a);
            sb_printf(b, "values[%zu]", i);
            sb_puts(b, "[");
            sb_puts(b, key);
            sb_puts(b, "]: Invalid value: ");
            sb_quote(b, vals[i]);
            sb_puts(b, ": ");
            sb_puts(b, tmp.p ? tmp.p : "");
        }
        free(tmp.p);
    }
}

/* Append a requirement, taking ownership of key and vals[0..n) (freed on
 * failure too). The requirement must have passed check_req(). */
static int sel_add(sel_label_t *s, char *key, enum op op, char **vals, size_t n)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 4;
        req_t *r = realloc(s->reqs, cap * sizeof *r);
        if (!r) {
            req_t tmp = {.key = key, .nvals = n, .vals = vals};
            req_free(&tmp);
            return KP_ENOMEM;
        }
        s->reqs = r;
        s->cap = cap;
    }
    req_t *r = &s->reqs[s->n++];
    *r = (req_t){.key = key, .op = op, .nvals = n, .vals = vals};
    if (op == OP_GT || op == OP_LT) parse_int64(vals[0], &r->num);
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---- label selector lexer and parser ---- */

enum tok_type {
    T_EOS,
    T_RPAREN,
    T_COMMA,
    T_NOT,
    T_DEQ,
    T_EQ,
    T_GT,
    T_ID,
    T_IN,
    T_LT,
    T_NEQ,
    T_NOTIN,
    T_LPAREN
};

typedef struct tok {
    enum tok_type t;
    const char *s; /* the literal, not NUL-terminated */
    size_t n;
} tok_t;

typedef struct lexer {
    const char *s;
    size_t pos;
    tok_t la; /* the lookahead token */
    /* the value set of the requirement being parsed (slices of s) */
    tok_t *vals;
    size_t nvals, capvals;
} lexer_t;

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_special(char c)
{
    return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<';
}

static tok_t lex(const char *s, size_t *pos)
{
    size_t i = *pos;
    while (is_space(s[i]))
        i++;
    tok_t t = {T_EOS, s + i, 0};
    if (!s[i]) {
        *pos = i;
        return t;
    }
    if (is_special(s[i])) {
        t.n = 1;
        if (s[i + 1] == '=' && (s[i] == '=' || s[i] == '!')) t.n = 2;
        switch (s[i]) {
        case '=':
            t.t = t.n == 2 ? T_DEQ : T_EQ;
            break;
        case '!':
            t.t = t.n == 2 ? T_NEQ : T_NOT;
            break;
        case '(':
            t.t = T_LPAREN;
            break;
        case ')':
            t.t = T_RPAREN;
            break;
        case ',':
            t.t = T_COMMA;
            break;
        case '>':
            t.t = T_GT;
            break;
        default:
            t.t = T_LT;
            break;
        }
        *pos = i + t.n;
        return t;
    }
    size_t j = i;
    while (s[j] && !is_special(s[j]) && !is_space(s[j]))
        j++;
    t.n = j - i;
    t.t = T_ID;
    if (t.n == 2 && memcmp(t.s, "in", 2) == 0) t.t = T_IN;
    if (t.n == 5 && memcmp(t.s, "notin", 5) == 0) t.t = T_NOTIN;
    *pos = j;
    return t;
}

/* Where a key or value is expected, the keywords are identifiers. */
static tok_t peek_v(const lexer_t *l)
{
    tok_t t = l->la;
    if (t.t == T_IN || t.t == T_NOTIN) t.t = T_ID;
    return t;
}

static tok_t take(lexer_t *l)
{
    tok_t t = l->la;
    l->la = lex(l->s, &l->pos);
    return t;
}

static tok_t take_v(lexer_t *l)
{
    tok_t t = peek_v(l);
    take(l);
    return t;
}

/* "found '<literal>'<rest>" into msg; returns KP_EINVAL. */
static int found(sb_t *msg, tok_t t, const char *rest)
{
    sb_puts(msg, "found '");
    sb_putn(msg, t.s, t.n);
    sb_puts(msg, "'");
    sb_puts(msg, rest);
    return KP_EINVAL;
}

static int push_val(lexer_t *l, const char *s, size_t n)
{
    if (l->nvals == l->capvals) {
        size_t cap = l->capvals ? l->capvals * 2 : 4;
        tok_t *v = realloc(l->vals, cap * sizeof *v);
        if (!v) return KP_ENOMEM;
        l->vals = v;
        l->capvals = cap;
    }
    l->vals[l->nvals++] = (tok_t){T_ID, s, n};
    return 0;
}

/* `( v1, v2, ... )`: parseValues and parseIdentifiersList. */
static int parse_values(lexer_t *l, sb_t *msg)
{
    tok_t t = take_v(l);
    if (t.t != T_LPAREN) return found(msg, t, " expected: '('");
    t = peek_v(l);
    if (t.t == T_RPAREN) {
        take(l);
        return push_val(l, "", 0);
    }
    if (t.t != T_ID && t.t != T_COMMA) return found(msg, t, ", expected: ',', ')' or identifier");
    for (;;) {
        int rc;
        t = take_v(l);
        if (t.t == T_ID) {
            if ((rc = push_val(l, t.s, t.n))) return rc;
            tok_t n = peek_v(l);
            if (n.t == T_COMMA) continue;
            if (n.t == T_RPAREN) break;
            return found(msg, n, ", expected: ',' or ')'");
        } else if (t.t == T_COMMA) {
            /* empty members: "(,a)", "(a,,b)", "(a,)" each add "" */
            if (l->nvals == 0 && (rc = push_val(l, "", 0))) return rc;
            tok_t n = peek_v(l);
            if (n.t == T_RPAREN) {
                if ((rc = push_val(l, "", 0))) return rc;
                break;
            }
            if (n.t == T_COMMA) {
                take(l);
                if ((rc = push_val(l, "", 0))) return rc;
            }
        } else {
            return found(msg, t, ", expected: ',', or identifier");
        }
    }
    take(l); /* the ')' seen above */
    return 0;
}

/* One requirement (parseRequirement); appended to s. */
static int parse_req(lexer_t *l, sel_label_t *s, sb_t *msg)
{
    enum op op = OP_EXISTS;
    bool has_op = false;
    tok_t t = take_v(l);
    if (t.t == T_NOT) {
        op = OP_NOTEXISTS, has_op = true;
        t = take_v(l);
    }
    if (t.t != T_ID) return found(msg, t, ", expected: identifier");
    char *key = strndup(t.s, t.n);
    if (!key) return KP_ENOMEM;
    if (!key_valid(key)) {
        sb_puts(msg, "<nil>: Invalid value: ");
        sb_quote(msg, key);
        sb_puts(msg, ": ");
        key_problems(msg, key);
        free(key);
        return KP_EINVAL;
    }
    tok_t n = peek_v(l);
    if (!has_op && (n.t == T_EOS || n.t == T_COMMA)) has_op = true; /* exists */
    l->nvals = 0;
    int rc = 0;
    if (!has_op) {
        t = take(l);
        switch (t.t) {
        case T_IN:
            op = OP_IN;
            break;
        case T_NOTIN:
            op = OP_NOTIN;
            break;
        case T_EQ:
            op = OP_EQ;
            break;
        case T_DEQ:
            op = OP_DEQ;
            break;
        case T_NEQ:
            op = OP_NEQ;
            break;
        case T_GT:
            op = OP_GT;
            break;
        case T_LT:
            op = OP_LT;
            break;
        default:
            free(key);
            return found(msg, t, ", expected: in, notin, =, ==, !=, gt, lt");
        }
        if (op == OP_IN || op == OP_NOTIN) {
            rc = parse_values(l, msg);
        } else {
            n = peek_v(l);
            if (n.t == T_EOS || n.t == T_COMMA) {
                rc = push_val(l, "", 0);
            } else {
                t = take_v(l);
                rc = t.t == T_ID ? push_val(l, t.s, t.n) : found(msg, t, ", expected: identifier");
            }
        }
    }
    /* The values as a sorted set, owned. */
    char **vals = NULL;
    size_t nv = 0;
    if (!rc && l->nvals) {
        vals = calloc(l->nvals, sizeof *vals);
        if (!vals) rc = KP_ENOMEM;
        for (size_t i = 0; !rc && i < l->nvals; i++) {
            vals[nv] = strndup(l->vals[i].s, l->vals[i].n);
            if (!vals[nv++]) rc = KP_ENOMEM;
        }
    }
    if (rc) {
        req_t tmp = {.key = key, .nvals = nv, .vals = vals};
        req_free(&tmp);
        return rc;
    }
    if (nv) qsort(vals, nv, sizeof *vals, cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < nv; i++) {
        if (u && strcmp(vals[u - 1], vals[i]) == 0)
            free(vals[i]);
        else
            vals[u++] = vals[i];
    }
    nv = u;
    agg_t a = {0};
    check_req(&a, key, op, vals, nv);
    if (a.n || a.msgs.oom) {
        if (a.n > 1) sb_puts(msg, "[");
        sb_puts(msg, a.msgs.p ? a.msgs.p : "");
        if (a.n > 1) sb_puts(msg, "]");
        if (a.msgs.oom) msg->oom = 1;
        free(a.msgs.p);
        req_t tmp = {.key = key, .nvals = nv, .vals = vals};
        req_free(&tmp);
        return KP_EINVAL;
    }
    return sel_add(s, key, op, vals, nv);
}

/* The whole selector (Parser.parse). Messages from a requirement get the
 * "unable to parse requirement: " prefix, as Kubernetes wraps them. */
static int parse_all(lexer_t *l, sel_label_t *s, sb_t *msg, bool *in_req)
{
    for (;;) {
        tok_t t = peek_v(l);
        if (t.t == T_EOS) return 0;
        if (t.t != T_ID && t.t != T_NOT)
            return found(msg, t, ", expected: !, identifier, or 'end of string'");
        *in_req = true;
        int rc = parse_req(l, s, msg);
        if (rc) return rc;
        *in_req = false;
        t = take_v(l);
        if (t.t == T_EOS) return 0;
        if (t.t != T_COMMA) return found(msg, t, ", expected: ',' or 'end of string'");
        t = peek_v(l);
        if (t.t != T_ID && t.t != T_NOT) return found(msg, t, ", expected: identifier after ','");
    }
}

static sel_label_t *sel_new(void)
{
    return calloc(1, sizeof(sel_label_t));
}

int sel_label_parse(const char *text, sel_label_t **out, char *err, size_t errlen)
{
    *out = NULL;
    sel_label_t *s = sel_new();
    if (!s) return oom(err, errlen);
    lexer_t l = {.s = text ? text : ""};
    l.la = lex(l.s, &l.pos);
    sb_t msg = {0};
    bool in_req = false;
    int rc = parse_all(&l, s, &msg, &in_req);
    free(l.vals);
    if (rc) {
        sel_label_free(s);
        if (rc == KP_ENOMEM) {
            free(msg.p);
            return oom(err, errlen);
        }
        return report(err, errlen, in_req ? "unable to parse requirement: " : "", &msg, 0);
    }
    *out = s;
    return 0;
}

/* ---- metav1.LabelSelector (LabelSelectorAsSelector) ---- */

static int json_type_error(char *err, size_t errlen, const char *what)
{
    if (err && errlen) snprintf(err, errlen, "%s", what);
    return KP_EINVAL;
}

/* Check and append one requirement; vals are borrowed (copied on success). */
static int add_checked(sel_label_t *s, const char *key, enum op op, char *const *vals, size_t n,
                       char *err, size_t errlen)
{
    agg_t a = {0};
    check_req(&a, key, op, vals, n);
    if (a.n || a.msgs.oom) return report(err, errlen, "", &a.msgs, a.n > 1);
    free(a.msgs.p);
    char *k = strdup(key);
    char **v = n ? calloc(n, sizeof *v) : NULL;
    if (!k || (n && !v)) {
        free(k);
        free(v);
        return oom(err, errlen);
    }
    for (size_t i = 0; i < n; i++) {
        if (!(v[i] = strdup(vals[i]))) {
            req_t tmp = {.key = k, .nvals = i, .vals = v};
            req_free(&tmp);
            return oom(err, errlen);
        }
    }
    if (sel_add(s, k, op, v, n)) return oom(err, errlen);
    return 0;
}

static int from_expr(sel_label_t *s, const json_t *e, char *err, size_t errlen)
{
    if (!json_is_object(e))
        return json_type_error(err, errlen, "matchExpressions: each item must be an object");
    const json_t *jk = json_object_get(e, "key"), *jo = json_object_get(e, "operator");
    const json_t *jv = json_object_get(e, "values");
    if ((jk && !json_is_null(jk) && !json_is_string(jk)) ||
        (jo && !json_is_null(jo) && !json_is_string(jo)))
        return json_type_error(err, errlen, "matchExpressions: key and operator must be strings");
    if (jv && !json_is_null(jv) && !json_is_array(jv))
        return json_type_error(err, errlen, "matchExpressions: values must be an array of strings");
    const char *key = json_is_string(jk) ? json_string_value(jk) : "";
    const char *ops = json_is_string(jo) ? json_string_value(jo) : "";
    enum op op;
    if (strcmp(ops, "In") == 0) {
        op = OP_IN;
    } else if (strcmp(ops, "NotIn") == 0) {
        op = OP_NOTIN;
    } else if (strcmp(ops, "Exists") == 0) {
        op = OP_EXISTS;
    } else if (strcmp(ops, "DoesNotExist") == 0) {
        op = OP_NOTEXISTS;
    } else {
        sb_t msg = {0};
        sb_quote(&msg, ops);
        sb_puts(&msg, " is not a valid label selector operator");
        return report(err, errlen, "", &msg, 0);
    }
    size_t n = json_is_array(jv) ? json_array_size(jv) : 0;
    char **vals = n ? calloc(n, sizeof *vals) : NULL;
    if (n && !vals) return oom(err, errlen);
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(jv, i);
        if (!json_is_string(v)) {
            free(vals);
            return json_type_error(err, errlen,
                                   "matchExpressions: values must be an array of strings");
        }
        vals[i] = (char *)json_string_value(v); /* borrowed; add_checked copies */
    }
    int rc = add_checked(s, key, op, vals, n, err, errlen);
    free(vals);
    return rc;
}

int sel_label_from_json(const json_t *ls, sel_label_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (ls && !json_is_null(ls) && !json_is_object(ls))
        return json_type_error(err, errlen, "labelSelector: must be an object");
    const json_t *ml = ls ? json_object_get(ls, "matchLabels") : NULL;
    const json_t *me = ls ? json_object_get(ls, "matchExpressions") : NULL;
    if (ml && !json_is_null(ml) && !json_is_object(ml))
        return json_type_error(err, errlen, "matchLabels: must be an object of strings");
    if (me && !json_is_null(me) && !json_is_array(me))
        return json_type_error(err, errlen, "matchExpressions: must be an array");
    sel_label_t *s = sel_new();
    if (!s) return oom(err, errlen);
    int rc = 0;
    if (json_is_object(ml)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)ml, k, v)
        {
            if (!json_is_string(v)) {
                rc = json_type_error(err, errlen, "matchLabels: must be an object of strings");
                break;
            }
            char *vals[1] = {(char *)json_string_value(v)};
            if ((rc = add_checked(s, k, OP_EQ, vals, 1, err, errlen))) break;
        }
    }
    for (size_t i = 0; !rc && json_is_array(me) && i < json_array_size(me); i++)
        rc = from_expr(s, json_array_get(me, i), err, errlen);
    if (rc) {
        sel_label_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

/* ---- label matching ---- */

static bool has_value(const req_t *r, const char *v)
{
    for (size_t i = 0; i < r->nvals; i++)
        if (strcmp(r->vals[i], v) == 0) return true;
    return false;
}

const char SEL_NOT_STRING[] = "";

/* A label of the object `arg` (a labels object, or NULL). */
static const char *json_label(const void *arg, const char *key)
{
    const json_t *jv = arg ? json_object_get(arg, key) : NULL;
    /* Go decodes a null label value as "". A value of another JSON type
     * (not a valid object) is present but equal to no string. */
    if (!jv) return NULL;
    if (json_is_null(jv)) return "";
    return json_is_string(jv) ? json_string_value(jv) : SEL_NOT_STRING;
}

int sel_label_match(const sel_label_t *s, const json_t *labels)
{
    return sel_label_match_get(s, json_label, json_is_object(labels) ? labels : NULL);
}

int sel_label_match_get(const sel_label_t *s, sel_get_fn get, const void *arg)
{
    if (!s) return 1;
    for (size_t i = 0; i < s->n; i++) {
        const req_t *r = &s->reqs[i];
        const char *jv = get(arg, r->key); /* NULL: absent */
        const char *v = jv == SEL_NOT_STRING ? NULL : jv;
        int64_t num;
        switch (r->op) {
        case OP_IN:
        case OP_EQ:
        case OP_DEQ:
            if (!v || !has_value(r, v)) return 0;
            break;
        case OP_NOTIN:
        case OP_NEQ:
            if (v && has_value(r, v)) return 0;
            break;
        case OP_EXISTS:
            if (!jv) return 0;
            break;
        case OP_NOTEXISTS:
            if (jv) return 0;
            break;
        case OP_GT:
        case OP_LT:
            if (!v || !parse_int64(v, &num)) return 0;
            if (r->op == OP_GT ? !(num > r->num) : !(num < r->num)) return 0;
            break;
        }
    }
    return 1;
}

int sel_label_empty(const sel_label_t *s)
{
    return !s || s->n == 0;
}

/* ---- field selectors ---- */

typedef struct fterm {
    char *field;
    char *value;
    int neg; /* 1 for != */
} fterm_t;

struct sel_field {
    size_t n;
    fterm_t *t;
};

void sel_field_free(sel_field_t *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->t[i].field);
        free(s->t[i].value);
    }
    free(s->t);
    free(s);
}

/* UnescapeValue: rhs[0..n) into a new string at *out, or an error in msg. */
static int unescape(const char *rhs, size_t n, char **out, sb_t *msg)
{
    char *v = malloc(n * 3 + 1); /* an invalid byte may become U+FFFD (3 bytes) */
    if (!v) return KP_ENOMEM;
    size_t o = 0;
    bool plain = true;
    for (size_t i = 0; i < n; i++)
        if (rhs[i] == '\\' || rhs[i] == ',' || rhs[i] == '=') plain = false;
    if (plain) { /* Kubernetes returns such a value untouched */
        memcpy(v, rhs, n);
        v[n] = '\0';
        *out = v;
        return 0;
    }
    /* Go ranges over runes here: an invalid byte is read (and written) as U+FFFD. */
    bool slash = false;
    for (size_t i = 0; i < n;) {
        uint32_t r = 0xfffd;
        size_t w = utf8_decode((const unsigned char *)rhs + i, n - i, &r);
        const char *rs = w ? rhs + i : "\xef\xbf\xbd";
        size_t rn = w ? w : 3;
        i += w ? w : 1;
        if (slash) {
            if (r == '\\' || r == ',' || r == '=') {
                v[o++] = (char)r;
                slash = false;
                continue;
            }
            sb_puts(msg, "invalid field selector: invalid escape sequence: \\");
            sb_putn(msg, rs, rn);
            free(v);
            return KP_EINVAL;
        }
        if (w && r == '\\') {
            slash = true;
        } else if (w && (r == ',' || r == '=')) {
            sb_printf(msg, "invalid field selector: unescaped character in value: %u", (unsigned)r);
            free(v);
            return KP_EINVAL;
        } else {
            memcpy(v + o, rs, rn);
            o += rn;
        }
    }
    if (slash) {
        sb_puts(msg, "invalid field selector: invalid escape sequence: \\");
        free(v);
        return KP_EINVAL;
    }
    v[o] = '\0';
    *out = v;
    return 0;
}

/* One term: split at the first "!=", "==" or "=" (tried in that order at each
 * position; the field has no escapes), then unescape the value. */
static int parse_term(const char *text, const char *term, fterm_t *ft, sb_t *msg)
{
    size_t n = strlen(term), i, oplen = 0;
    for (i = 0; i < n; i++) {
        if (term[i] == '!' && term[i + 1] == '=')
            oplen = 2, ft->neg = 1;
        else if (term[i] == '=' && term[i + 1] == '=')
            oplen = 2;
        else if (term[i] == '=')
            oplen = 1;
        if (oplen) break;
    }
    if (!oplen) {
        sb_puts(msg, "invalid selector: '");
        sb_puts(msg, text);
        sb_puts(msg, "'; can't understand '");
        sb_puts(msg, term);
        sb_puts(msg, "'");
        return KP_EINVAL;
    }
    int rc = unescape(term + i + oplen, n - i - oplen, &ft->value, msg);
    if (rc) return rc;
    if (!(ft->field = strndup(term, i))) return KP_ENOMEM;
    return 0;
}

/* Cut text at the commas that no backslash escapes (splitTerms). With
 * terms, store a copy of each piece (NULL if out of memory). Returns the
 * number of pieces: one more than the separating commas. */
static size_t split_terms(const char *text, char **terms)
{
    size_t n = 0, start = 0, len = strlen(text);
    bool slash = false;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && slash) {
            slash = false;
        } else if (i < len && text[i] == '\\') {
            slash = true;
        } else if (i == len || text[i] == ',') {
            if (terms) terms[n] = strndup(text + start, i - start);
            n++;
            start = i + 1;
        }
    }
    return n;
}

int sel_field_parse(const char *text, sel_field_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!text) text = "";
    sel_field_t *s = calloc(1, sizeof *s);
    if (!s) return oom(err, errlen);
    /* splitTerms: cut at commas not escaped by a backslash. */
    size_t nterms = split_terms(text, NULL);
    char **terms = calloc(nterms, sizeof *terms);
    s->t = calloc(nterms, sizeof *s->t);
    int rc = terms && s->t ? 0 : KP_ENOMEM;
    size_t k = rc ? 0 : split_terms(text, terms);
    for (size_t i = 0; i < k; i++)
        if (!terms[i]) rc = KP_ENOMEM;
    sb_t msg = {0};
    if (!rc) {
        /* Kubernetes sorts the raw terms before it parses them. */
        qsort(terms, k, sizeof *terms, cmp_str);
        for (size_t i = 0; !rc && i < k; i++) {
            if (!terms[i][0]) continue;
            rc = parse_term(text, terms[i], &s->t[s->n], &msg);
            s->n++; /* also on failure: the term's strings are freed with s */
        }
    }
    for (size_t i = 0; terms && i < k; i++)
        free(terms[i]);
    free(terms);
    if (rc) {
        sel_field_free(s);
        if (rc == KP_ENOMEM) {
            free(msg.p);
            return oom(err, errlen);
        }
        return report(err, errlen, "", &msg, 0);
    }
    *out = s;
    return 0;
}

int sel_field_check(const sel_field_t *s, const char *const *supported, char *err, size_t errlen)
{
    for (size_t i = 0; s && i < s->n; i++) {
        bool ok = false;
        for (const char *const *f = supported; f && *f && !ok; f++)
            ok = strcmp(*f, s->t[i].field) == 0;
        if (!ok) {
            if (err && errlen)
                snprintf(err, errlen, "field label not supported: %s", s->t[i].field);
            return KP_EINVAL;
        }
    }
    return 0;
}

/* The text Kubernetes compares for `field` of obj; buf holds number text. */
const char *sel_field_text(const json_t *obj, const char *field, char *buf, size_t buflen)
{
    const char *path = field;
    if (strcmp(field, "source") == 0) path = "source.component"; /* Event: Source.Component */
    const json_t *j = obj;
    for (const char *p = path; j;) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        j = json_is_object(j) ? json_object_getn(j, p, n) : NULL;
        if (!dot) break;
        p = dot + 1;
    }
    if ((!j || json_is_null(j)) &&
        (strcmp(field, "spec.unschedulable") == 0 || strcmp(field, "spec.hostNetwork") == 0))
        return "false"; /* a Go bool: absent is false */
    if (json_is_string(j)) return json_string_value(j);
    if (json_is_true(j)) return "true";
    if (json_is_false(j)) return "false";
    if (json_is_integer(j)) {
        snprintf(buf, buflen, "%" JSON_INTEGER_FORMAT, json_integer_value(j));
        return buf;
    }
    if (json_is_real(j)) {
        /* The shortest text that reads back as the same double. */
        double d = json_real_value(j);
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(buf, buflen, "%.*g", prec, d);
            if (strtod(buf, NULL) == d) break;
        }
        return buf;
    }
    return "";
}

int sel_field_match(const sel_field_t *s, const json_t *obj)
{
    for (size_t i = 0; s && i < s->n; i++) {
        char buf[64];
        const char *v = sel_field_text(obj, s->t[i].field, buf, sizeof buf);
        if ((strcmp(v, s->t[i].value) == 0) == (s->t[i].neg != 0)) return 0;
    }
    return 1;
}

int sel_field_match_get(const sel_field_t *s, sel_get_fn get, const void *arg)
{
    for (size_t i = 0; s && i < s->n; i++) {
        const char *v = get(arg, s->t[i].field);
        if (!v || (strcmp(v, s->t[i].value) == 0) == (s->t[i].neg != 0)) return 0;
    }
    return 1;
}

int sel_field_empty(const sel_field_t *s)
{
    return !s || s->n == 0;
}
