/*
 * cmd_store.c -- `kplane store`: direct access to the local store.
 *
 *   kplane store [--data-dir DIR | --store URL] SUBCOMMAND [ARGS] [OPTIONS]
 *
 * The store is "lmdb:<data-dir>/store" unless --store names another URL. Each
 * invocation opens the store, does one thing and closes it again; LMDB lets
 * several processes share one store, so this works next to a running server.
 *
 * Output contract (scripts rely on it):
 *  - get:      the raw value and a newline; -w json: one JSON object line.
 *  - list:     "<key>\t<value preview>" per key ("<key>" with --keys-only).
 *  - put, delete: the revision of the write.
 *  - watch:    "PUT <rev> <key> <value>" / "DELETE <rev> <key>", flushed per line.
 *  - keys and values in line-oriented output are escaped (\n, \t, \\, \xNN),
 *    so one record is always one line.
 *
 * Read-only subcommands refuse to create a store where none exists; put,
 * watch and restore create the data directory as needed.
 *
 * Values are shown as stored: an encrypted Secret as Kubernetes' ciphertext
 * ("k8s:enc:aescbc:v1:key1:..."), unless --encryption-provider-config names
 * the config to open them with (get, list, watch). rewrite-secrets reads
 * every value that config covers and writes the ones not under its writing
 * key again (DATA_DIR/encryption-config.yaml unless the flag names another).
 */
#include "cli/cli.h"

#include "lib/err.h"
#include "store/encrypt.h"
#include "store/store.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LIST_PAGE     1000 /* keys per store_range() call in `list` */
#define PREVIEW_BYTES 64   /* value bytes shown per key in `list` */
#define PUT_RETRIES   100  /* create/update races `put` rides out */

/* Options after `kplane store`, wherever they appear on the line. */
typedef struct store_args {
    const char *data_dir; /* --data-dir */
    const char *url;      /* --store */
    const char *enc;      /* --encryption-provider-config */
    int64_t rev;          /* --rev */
    int64_t from;         /* --from */
    int64_t limit;        /* --limit */
    int keys_only;        /* --keys-only */
    int json;             /* -w json */
    unsigned seen;        /* OPT_* bits given on the command line */
    char **pos;           /* positional arguments: subcommand first */
    int npos;
} store_args_t;

enum {
    OPT_DATA_DIR = 1u << 0,
    OPT_STORE = 1u << 1,
    OPT_REV = 1u << 2,
    OPT_FROM = 1u << 3,
    OPT_LIMIT = 1u << 4,
    OPT_KEYS_ONLY = 1u << 5,
    OPT_WRITE_OUT = 1u << 6,
    OPT_HELP = 1u << 7,
    OPT_ENC = 1u << 8,
};

/* A subcommand: its name, positional argument count, the options it accepts
 * beyond --data-dir/--store, whether it may create a missing store, and the body. */
typedef struct store_cmd {
    const char *name;
    int nargs;
    unsigned opts;
    int creates;
    int (*run)(store_t *s, const store_args_t *a);
    int encrypted; /* needs the encryption config, by default the data dir's */
} store_cmd_t;

void cmd_store_usage(FILE *out)
{
    fputs("Usage: kplane store [--data-dir DIR | --store URL] SUBCOMMAND [ARGS] [OPTIONS]\n"
          "\n"
          "Subcommands:\n"
          "  get KEY [--rev N] [-w json]      print KEY's value (as of revision N)\n"
          "  list PREFIX [--limit N] [--rev N] [--keys-only]\n"
          "                                   print 'key<TAB>value preview' per key\n"
          "  put KEY VALUE|-                  create or replace KEY ('-': value from stdin);\n"
          "                                   prints the revision\n"
          "  delete KEY                       delete KEY; prints the revision\n"
          "  watch PREFIX [--from REV]        print changes under PREFIX (after REV;\n"
          "                                   default: from now) until SIGINT/SIGTERM\n"
          "  compact REV                      drop the history below REV\n"
          "  backup FILE                      write a consistent copy of the store to FILE\n"
          "  restore FILE                     install backup FILE as the data dir's store\n"
          "                                   (which must not exist yet)\n"
          "  status [-w json]                 revision, compaction, keys and sizes\n"
          "  rewrite-secrets                  write every encrypted value (Secrets) not under\n"
          "                                   the config's first key again, under it\n"
          "\n"
          "Options:\n"
          "  --data-dir DIR    data directory (default: $KPLANE_DATA_DIR, else\n"
          "                    /var/lib/kplane as root, else ~/.local/share/kplane)\n"
          "  --store URL       store URL (default: lmdb:<data-dir>/store)\n"
          "  -w, --write-out FORMAT   'text' (default) or 'json'\n"
          "  --encryption-provider-config FILE  open encrypted values with this\n"
          "                    EncryptionConfiguration (get, list, watch; rewrite-secrets:\n"
          "                    default <data-dir>/encryption-config.yaml)\n"
          "\n"
          "Exit status: 0 success, 1 failure, 2 usage error.\n",
          out);
}

/* ---- small helpers ---- */

/* Parse a whole decimal int64 >= `min`. Returns 0 or -1. */
static int parse_i64(const char *s, int64_t min, int64_t *out)
{
    if (!s || !*s) return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < min) return -1;
    *out = v;
    return 0;
}

/* Write `len` bytes so that they stay on one line: \n \r \t \\ and control
 * bytes are escaped; other bytes (UTF-8 text) pass through. */
static void put_escaped(FILE *out, const char *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)p[i];
        switch (c) {
        case '\n':
            fputs("\\n", out);
            break;
        case '\r':
            fputs("\\r", out);
            break;
        case '\t':
            fputs("\\t", out);
            break;
        case '\\':
            fputs("\\\\", out);
            break;
        default:
            if (c < 0x20 || c == 0x7f)
                fprintf(out, "\\x%02x", c);
            else
                fputc(c, out);
        }
    }
}

/* Length of the valid UTF-8 sequence at p[0..len), or 0 if invalid. */
static size_t utf8_seq(const unsigned char *p, size_t len)
{
    size_t n;
    uint32_t cp;
    if (p[0] < 0x80) return 1;
    if ((p[0] & 0xe0) == 0xc0) {
        n = 2;
        cp = p[0] & 0x1f;
    } else if ((p[0] & 0xf0) == 0xe0) {
        n = 3;
        cp = p[0] & 0x0f;
    } else if ((p[0] & 0xf8) == 0xf0) {
        n = 4;
        cp = p[0] & 0x07;
    } else {
        return 0;
    }
    if (n > len) return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    static const uint32_t min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return n;
}

/* Write `len` bytes as a JSON string. Bytes that are not valid UTF-8 become
 * U+FFFD: JSON cannot carry them, and -w json is for reading, not round trips. */
static void put_json_string(FILE *out, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', out);
    for (size_t i = 0; i < len;) {
        unsigned char c = p[i];
        if (c == '"' || c == '\\') {
            fputc('\\', out);
            fputc(c, out);
            i++;
        } else if (c < 0x20) {
            switch (c) {
            case '\n':
                fputs("\\n", out);
                break;
            case '\r':
                fputs("\\r", out);
                break;
            case '\t':
                fputs("\\t", out);
                break;
            default:
                fprintf(out, "\\u%04x", c);
            }
            i++;
        } else {
            size_t n = utf8_seq(p + i, len - i);
            if (n == 0) {
                fputs("\\ufffd", out);
                i++;
            } else {
                fwrite(p + i, 1, n, out);
                i += n;
            }
        }
    }
    fputc('"', out);
}

static void human_bytes(uint64_t b, char *buf, size_t size)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    size_t u = 0;
    while (v >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, size, "%" PRIu64 " B", b);
    else
        snprintf(buf, size, "%.1f %s", v, units[u]);
}

/* Flush stdout and report a failed write of our output (e.g. a full disk). */
static int finish_output(void)
{
    if (fflush(stdout) != 0 || ferror(stdout)) return cli_fail(KP_EIO, "write output");
    return CLI_EXIT_OK;
}

/* The compaction point, for messages that explain a KP_ECOMPACTED. */
static int64_t compact_rev_of(store_t *s)
{
    store_status_t st;
    return store_status(s, &st) == 0 ? st.compact_revision : -1;
}

/* "kplane: <verb> <arg> <at> revision <rev> (store compacted up to revision C): ..." */
static int fail_compacted(store_t *s, const char *verb, const char *arg, const char *at,
                          int64_t rev)
{
    int64_t c = compact_rev_of(s);
    if (c < 0) return cli_fail(KP_ECOMPACTED, "%s %s %s revision %" PRId64, verb, arg, at, rev);
    return cli_fail(KP_ECOMPACTED,
                    "%s %s %s revision %" PRId64 " (store compacted up to revision %" PRId64 ")",
                    verb, arg, at, rev, c);
}

/* ---- store location ---- */

/* The store URL and, for lmdb URLs, its directory (dir[0] == 0 otherwise). */
static int resolve_store(const store_args_t *a, char *url, size_t url_size, char *dir,
                         size_t dir_size)
{
    int n;
    if (a->url) {
        n = snprintf(url, url_size, "%s", a->url);
        if (n < 0 || (size_t)n >= url_size) return KP_EINVAL;
        dir[0] = '\0';
        if (!strncmp(a->url, "lmdb:", 5)) {
            n = snprintf(dir, dir_size, "%s", a->url + 5);
            if (n <= 0 || (size_t)n >= dir_size) return KP_EINVAL;
        }
        return 0;
    }
    char data[CLI_PATH_MAX];
    int rc = cli_data_dir(a->data_dir, data, sizeof data);
    if (rc) return rc;
    n = snprintf(dir, dir_size, "%s/store", strcmp(data, "/") ? data : "");
    if (n < 0 || (size_t)n >= dir_size) return KP_EINVAL;
    n = snprintf(url, url_size, "lmdb:%s", dir);
    if (n < 0 || (size_t)n >= url_size) return KP_EINVAL;
    return 0;
}

/* 1 if an lmdb store directory holds a data file. */
static int store_exists(const char *dir)
{
    char path[CLI_PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    struct stat st;
    return stat(path, &st) == 0;
}

/* ---- subcommands ---- */

static int run_get(store_t *s, const store_args_t *a)
{
    const char *key = a->pos[1];
    int64_t rev = (a->seen & OPT_REV) ? a->rev : 0;
    store_kv_t *kv = NULL;
    int rc = store_get(s, key, rev, &kv);
    if (rc == KP_ECOMPACTED) return fail_compacted(s, "get", key, "at", rev);
    if (rc && rev) return cli_fail(rc, "get %s at revision %" PRId64, key, rev);
    if (rc) return cli_fail(rc, "get %s", key);

    if (a->json) {
        fputs("{\"key\":", stdout);
        put_json_string(stdout, kv->key, kv->key_len);
        fputs(",\"value\":", stdout);
        put_json_string(stdout, kv->value, kv->value_len);
        printf(",\"create_revision\":%" PRId64 ",\"mod_revision\":%" PRId64 ",\"version\":%" PRId64
               "}\n",
               kv->create_rev, kv->mod_rev, kv->version);
    } else {
        fwrite(kv->value, 1, kv->value_len, stdout);
        fputc('\n', stdout);
    }
    free(kv);
    return finish_output();
}

static int run_list(store_t *s, const store_args_t *a)
{
    const char *prefix = a->pos[1];
    int64_t at = (a->seen & OPT_REV) ? a->rev : 0;
    uint64_t limit = (a->seen & OPT_LIMIT) ? (uint64_t)a->limit : 0;
    uint64_t printed = 0;
    char after[STORE_KEY_MAX + 1] = "";

    /* Pages of LIST_PAGE keys; after the first, every page is read at the
     * first page's revision so that the listing is one snapshot. */
    for (;;) {
        size_t want = LIST_PAGE;
        if (limit && limit - printed < want) want = (size_t)(limit - printed);
        store_range_t *r = NULL;
        int rc = store_range(s, prefix, after, want, at, &r);
        if (rc == KP_ECOMPACTED) return fail_compacted(s, "list", prefix, "at", at);
        if (rc) return cli_fail(rc, "list %s", prefix);

        for (size_t i = 0; i < r->count; i++) {
            const store_kv_t *kv = &r->kvs[i];
            put_escaped(stdout, kv->key, kv->key_len);
            if (!a->keys_only) {
                size_t n = kv->value_len;
                int cut = n > PREVIEW_BYTES;
                if (cut) {
                    n = PREVIEW_BYTES;
                    /* Do not split a UTF-8 sequence. */
                    while (n > 0 && ((unsigned char)kv->value[n] & 0xc0) == 0x80)
                        n--;
                }
                fputc('\t', stdout);
                put_escaped(stdout, kv->value, n);
                if (cut) fputs("...", stdout);
            }
            fputc('\n', stdout);
        }
        printed += r->count;
        at = r->revision;
        int more = r->more && r->count > 0;
        if (r->count > 0) {
            const store_kv_t *last = &r->kvs[r->count - 1];
            memcpy(after, last->key, last->key_len);
            after[last->key_len] = '\0';
        }
        store_range_free(r);
        if (!more || (limit && printed >= limit)) break;
    }
    return finish_output();
}

/* Read all of stdin (at most STORE_VALUE_MAX bytes) into a malloc'd buffer. */
static int read_stdin(char **out, size_t *out_len)
{
    size_t cap = 64 * 1024, len = 0;
    char *buf = malloc(cap + 1);
    if (!buf) return KP_ENOMEM;
    for (;;) {
        if (len == cap) {
            if (cap > STORE_VALUE_MAX) {
                free(buf);
                return KP_ETOOLARGE;
            }
            cap *= 2;
            char *nb = realloc(buf, cap + 1);
            if (!nb) {
                free(buf);
                return KP_ENOMEM;
            }
            buf = nb;
        }
        size_t n = fread(buf + len, 1, cap - len, stdin);
        len += n;
        if (n == 0) {
            if (ferror(stdin)) {
                free(buf);
                return KP_EIO;
            }
            break;
        }
    }
    if (len > STORE_VALUE_MAX) {
        free(buf);
        return KP_ETOOLARGE;
    }
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    return 0;
}

/* Create or replace `key` whatever its state, riding out races with other
 * writers (a delete between our update and create, or the reverse). */
static int put_any(store_t *s, const char *key, const char *val, size_t len, int64_t *rev)
{
    int rc = KP_ECONFLICT;
    for (int i = 0; i < PUT_RETRIES; i++) {
        rc = store_update(s, key, val, len, 0, rev);
        if (rc != KP_ENOTFOUND) return rc;
        rc = store_create(s, key, val, len, rev);
        if (rc != KP_EEXIST) return rc;
    }
    return rc;
}

static int run_put(store_t *s, const store_args_t *a)
{
    const char *key = a->pos[1];
    char *buf = NULL;
    const char *val = a->pos[2];
    size_t len = strlen(val);
    if (!strcmp(val, "-")) {
        int rc = read_stdin(&buf, &len);
        if (rc) return cli_fail(rc, "put %s: read value from stdin", key);
        val = buf;
    }
    int64_t rev = 0;
    int rc = put_any(s, key, val, len, &rev);
    free(buf);
    if (rc) return cli_fail(rc, "put %s", key);
    printf("%" PRId64 "\n", rev);
    return finish_output();
}

static int run_delete(store_t *s, const store_args_t *a)
{
    const char *key = a->pos[1];
    int64_t rev = 0;
    int rc = store_delete(s, key, 0, &rev);
    if (rc) return cli_fail(rc, "delete %s", key);
    printf("%" PRId64 "\n", rev);
    return finish_output();
}

/* The thread that turns SIGINT/SIGTERM into a watch cancel, so that the main
 * thread can sit in store_watch_next() without a signal handler or a global. */
typedef struct sig_waiter {
    sigset_t set;
    store_watch_t *w;
} sig_waiter_t;

static void *sig_waiter_main(void *arg)
{
    sig_waiter_t *sw = arg;
    int sig;
    if (sigwait(&sw->set, &sig) == 0) store_watch_cancel(sw->w);
    return NULL;
}

static int run_watch(store_t *s, const store_args_t *a)
{
    const char *prefix = a->pos[1];
    int64_t after = (a->seen & OPT_FROM) ? a->from : -1;
    sig_waiter_t sw;
    sigemptyset(&sw.set);
    sigaddset(&sw.set, SIGINT);
    sigaddset(&sw.set, SIGTERM);
    /* cmd_store() blocked the signals before opening the store, so every
     * thread inherits the mask and only the waiter thread receives them. */

    int rc = store_watch_open(s, prefix, after, &sw.w);
    if (rc == KP_ECOMPACTED) return fail_compacted(s, "watch", prefix, "after", after);
    if (rc) return cli_fail(rc, "watch %s", prefix);

    pthread_t th;
    int err = pthread_create(&th, NULL, sig_waiter_main, &sw);
    if (err) {
        store_watch_close(sw.w);
        return cli_fail(KP_ENOMEM, "watch %s: start signal thread", prefix);
    }

    int code = CLI_EXIT_OK;
    for (;;) {
        const store_event_t *ev;
        rc = store_watch_next(sw.w, -1, &ev);
        if (rc == KP_ECLOSED) break; /* SIGINT/SIGTERM: a normal end */
        if (rc == KP_ECOMPACTED) {
            code = fail_compacted(s, "watch", prefix, "after", store_watch_revision(sw.w));
            break;
        }
        if (rc) {
            code = cli_fail(rc, "watch %s", prefix);
            break;
        }
        fputs(ev->type == STORE_PUT ? "PUT " : "DELETE ", stdout);
        printf("%" PRId64 " ", ev->kv.mod_rev);
        put_escaped(stdout, ev->kv.key, ev->kv.key_len);
        if (ev->type == STORE_PUT) {
            fputc(' ', stdout);
            put_escaped(stdout, ev->kv.value, ev->kv.value_len);
        }
        fputc('\n', stdout);
        if (fflush(stdout) != 0) {
            code = cli_fail(KP_EIO, "watch %s: write output", prefix);
            break;
        }
    }

    /* The waiter may still be in sigwait(); sigwait() is a cancellation point. */
    pthread_cancel(th);
    pthread_join(th, NULL);
    store_watch_close(sw.w);
    return code;
}

static int run_compact(store_t *s, const store_args_t *a)
{
    int64_t rev;
    if (parse_i64(a->pos[1], 1, &rev))
        return cli_usage_error("store", "compact: bad revision '%s'", a->pos[1]);
    int rc = store_compact(s, rev);
    if (rc == KP_ECOMPACTED) {
        int64_t c = compact_rev_of(s);
        return cli_fail(rc,
                        "compact to revision %" PRId64
                        " (store already compacted up to revision %" PRId64 ")",
                        rev, c);
    }
    if (rc) return cli_fail(rc, "compact to revision %" PRId64, rev);
    printf("compacted to revision %" PRId64 "\n", rev);
    return finish_output();
}

static int run_backup(store_t *s, const store_args_t *a)
{
    const char *file = a->pos[1];
    int64_t rev = 0;
    int rc = store_backup(s, file, &rev);
    if (rc) return cli_fail(rc, "backup to %s", file);
    printf("backup of revision %" PRId64 " written to %s\n", rev, file);
    return finish_output();
}

static int run_status(store_t *s, const store_args_t *a)
{
    store_status_t st;
    int rc = store_status(s, &st);
    if (rc) return cli_fail(rc, "status");
    if (a->json) {
        printf("{\"revision\":%" PRId64 ",\"compact_revision\":%" PRId64 ",\"keys\":%" PRIu64
               ",\"db_bytes\":%" PRIu64 ",\"file_bytes\":%" PRIu64 "}\n",
               st.revision, st.compact_revision, st.keys, st.db_bytes, st.file_bytes);
    } else {
        char db[32], file[32];
        human_bytes(st.db_bytes, db, sizeof db);
        human_bytes(st.file_bytes, file, sizeof file);
        printf("revision:            %" PRId64 "\n"
               "compacted revision:  %" PRId64 "\n"
               "keys:                %" PRIu64 "\n"
               "db size:             %s (%" PRIu64 " bytes)\n"
               "on-disk size:        %s (%" PRIu64 " bytes)\n",
               st.revision, st.compact_revision, st.keys, db, st.db_bytes, file, st.file_bytes);
    }
    return finish_output();
}

static int run_rewrite(store_t *s, const store_args_t *a)
{
    (void)a;
    size_t total = 0, rewritten = 0;
    char why[512], desc[512];
    store_enc_describe(store_enc_of(s), desc, sizeof desc);
    int rc = store_enc_rewrite(s, &total, &rewritten, why, sizeof why);
    if (rc)
        return cli_fail(rc, "rewrite-secrets: %s (%zu of %zu values rewritten before)", why,
                        rewritten, total);
    printf("rewrote %zu of %zu values under the first key (%s)\n", rewritten, total, desc);
    return finish_output();
}

static const store_cmd_t commands[] = {
    {"get", 1, OPT_REV | OPT_WRITE_OUT | OPT_ENC, 0, run_get, 0},
    {"list", 1, OPT_LIMIT | OPT_REV | OPT_KEYS_ONLY | OPT_ENC, 0, run_list, 0},
    {"put", 2, 0, 1, run_put, 0},
    {"delete", 1, 0, 0, run_delete, 0},
    {"watch", 1, OPT_FROM | OPT_ENC, 1, run_watch, 0},
    {"compact", 1, 0, 0, run_compact, 0},
    {"backup", 1, 0, 0, run_backup, 0},
    {"restore", 1, 0, 1, NULL, 0}, /* needs no open store: see run_restore() */
    {"status", 0, OPT_WRITE_OUT, 0, run_status, 0},
    {"rewrite-secrets", 0, OPT_ENC, 0, run_rewrite, 1},
};

/* restore works on a store that does not exist yet, so it gets no handle. */
static int run_restore(const store_args_t *a, const char *url, const char *dir)
{
    const char *file = a->pos[1];
    if (!dir[0]) return cli_usage_error("store", "restore: --store %s is not an lmdb: URL", url);
    if (store_exists(dir)) return cli_fail(KP_EEXIST, "restore into %s", dir);
    int rc = cli_mkdir_p(dir);
    if (rc) return cli_fail(rc, "restore: create %s (%s)", dir, strerror(errno));
    rc = store_restore(file, dir);
    if (rc) {
        rmdir(dir); /* only if we left it empty: never touch what was there */
        return cli_fail(rc, "restore %s into %s", file, dir);
    }

    /* Open what we installed: proves it is a store and names its revision. */
    store_t *s = NULL;
    rc = store_open(url, NULL, &s);
    if (rc) return cli_fail(rc, "restore: open restored store %s", url);
    store_status_t st;
    rc = store_status(s, &st);
    store_close(s);
    if (rc) return cli_fail(rc, "restore: status of restored store %s", url);
    printf("backup of revision %" PRId64 " restored into %s\n", st.revision, dir);
    return finish_output();
}

static int parse_args(int argc, char **argv, store_args_t *a)
{
    static const struct option longopts[] = {
        {"data-dir", required_argument, NULL, 'D'},
        {"store", required_argument, NULL, 'S'},
        {"rev", required_argument, NULL, 'r'},
        {"from", required_argument, NULL, 'f'},
        {"limit", required_argument, NULL, 'l'},
        {"keys-only", no_argument, NULL, 'k'},
        {"write-out", required_argument, NULL, 'w'},
        {"encryption-provider-config", required_argument, NULL, 'E'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(a, 0, sizeof *a);
    /* Options may follow the subcommand and its arguments (GNU permutation);
     * "--" ends them, for keys or values that start with '-'. */
    opterr = 0;
    optind = 0; /* 0: full reinitialisation in glibc */
    int c;
    while ((c = getopt_long(argc, argv, ":w:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'D':
            a->data_dir = optarg;
            a->seen |= OPT_DATA_DIR;
            break;
        case 'S':
            a->url = optarg;
            a->seen |= OPT_STORE;
            break;
        case 'r':
            if (parse_i64(optarg, 0, &a->rev))
                return cli_usage_error("store", "--rev: bad revision '%s'", optarg);
            a->seen |= OPT_REV;
            break;
        case 'f':
            if (parse_i64(optarg, 0, &a->from))
                return cli_usage_error("store", "--from: bad revision '%s'", optarg);
            a->seen |= OPT_FROM;
            break;
        case 'l':
            if (parse_i64(optarg, 0, &a->limit))
                return cli_usage_error("store", "--limit: bad count '%s'", optarg);
            a->seen |= OPT_LIMIT;
            break;
        case 'k':
            a->keys_only = 1;
            a->seen |= OPT_KEYS_ONLY;
            break;
        case 'w':
            if (!strcmp(optarg, "json"))
                a->json = 1;
            else if (strcmp(optarg, "text"))
                return cli_usage_error("store", "--write-out: unknown format '%s' (text or json)",
                                       optarg);
            a->seen |= OPT_WRITE_OUT;
            break;
        case 'E':
            a->enc = optarg;
            a->seen |= OPT_ENC;
            break;
        case 'h':
            a->seen |= OPT_HELP;
            break;
        case ':':
        default:
            return cli_option_error("store", c, argv);
        }
    }
    a->pos = argv + optind;
    a->npos = argc - optind;
    return 0;
}

int cmd_store(int argc, char **argv)
{
    store_args_t a;
    int rc = parse_args(argc, argv, &a);
    if (rc) return rc;
    if (a.seen & OPT_HELP) {
        cmd_store_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (a.npos < 1) {
        cmd_store_usage(stderr);
        return CLI_EXIT_USAGE;
    }

    const store_cmd_t *cmd = NULL;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(a.pos[0], commands[i].name)) cmd = &commands[i];
    if (!cmd) return cli_usage_error("store", "unknown store subcommand '%s'", a.pos[0]);
    if (a.npos - 1 != cmd->nargs)
        return cli_usage_error("store", "%s takes %d argument%s, got %d", cmd->name, cmd->nargs,
                               cmd->nargs == 1 ? "" : "s", a.npos - 1);
    unsigned extra = a.seen & ~(cmd->opts | OPT_DATA_DIR | OPT_STORE);
    if (extra) {
        static const char *names[] = {"--data-dir",  "--store", "--rev",
                                      "--from",      "--limit", "--keys-only",
                                      "--write-out", "--help",  "--encryption-provider-config"};
        size_t bit = 0;
        while (!(extra & (1u << bit)))
            bit++;
        return cli_usage_error("store", "%s does not take %s", cmd->name, names[bit]);
    }
    if ((a.seen & OPT_DATA_DIR) && (a.seen & OPT_STORE))
        return cli_usage_error("store", "--data-dir and --store exclude each other");

    char url[CLI_PATH_MAX + 8], dir[CLI_PATH_MAX];
    rc = resolve_store(&a, url, sizeof url, dir, sizeof dir);
    if (rc) {
        if (a.data_dir && !*a.data_dir) return cli_usage_error("store", "--data-dir is empty");
        return cli_fail(rc, "resolve the data directory (set --data-dir or $KPLANE_DATA_DIR)");
    }

    if (!cmd->run) return run_restore(&a, url, dir);

    if (dir[0]) {
        if (cmd->creates) {
            rc = cli_mkdir_p(dir);
            if (rc) return cli_fail(rc, "create %s (%s)", dir, strerror(errno));
        } else if (!store_exists(dir)) {
            return cli_fail(KP_ENOTFOUND, "no store at %s", dir);
        }
    }

    /* Block the signals a watch ends on before the store starts threads, so
     * that none of them takes a SIGINT meant for the watch's waiter thread. */
    if (!strcmp(cmd->name, "watch")) {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &set, NULL);
    }

    /* The encryption config: a bad one stops here, naming the field. */
    store_enc_t *enc = NULL;
    if (a.enc || cmd->encrypted) {
        char path[CLI_PATH_MAX + 32], err[1024];
        if (a.enc) {
            snprintf(path, sizeof path, "%s", a.enc);
        } else {
            char data[CLI_PATH_MAX];
            if ((rc = cli_data_dir(a.data_dir, data, sizeof data)))
                return cli_fail(rc, "resolve the data directory");
            snprintf(path, sizeof path, "%s/encryption-config.yaml", data);
        }
        if ((rc = store_enc_load(path, &enc, err, sizeof err))) {
            fprintf(stderr, "kplane: store %s: --encryption-provider-config: %s\n", cmd->name, err);
            return CLI_EXIT_FAIL;
        }
    }

    store_t *s = NULL;
    rc = store_open(url, NULL, &s);
    if (rc) {
        store_enc_free(enc);
        return cli_fail(rc, "open store %s", url);
    }
    if (enc && (rc = store_enc_wrap(s, enc, &s))) return cli_fail(rc, "open store %s", url);
    int code = cmd->run(s, &a);
    store_close(s);
    return code;
}
