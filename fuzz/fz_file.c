/*
 * fz_file.c -- the private directory of the targets whose parsers read files
 * (fuzz.h): kubeconfigs and token files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"

/* The one directory of this process: set once at start, before any input. */
static char fz_dir[256];

/* Remove the files fz_file() may have written, then the directory. */
static void fz_tmpdir_remove(void)
{
    static const char *const names[] = {"kubeconfig", "token", "tokens.csv", "ca.crt", NULL};
    char p[512];
    for (const char *const *n = names; *n; n++) {
        snprintf(p, sizeof p, "%s/%s", fz_dir, *n);
        unlink(p);
    }
    rmdir(fz_dir);
}

int fz_tmpdir_init(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(fz_dir, sizeof fz_dir, "%s/kp-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(fz_dir)) return -1;
    atexit(fz_tmpdir_remove);
    return 0;
}

int fz_file(const char *name, const uint8_t *data, size_t size, char *path, size_t n)
{
    snprintf(path, n, "%s/%s", fz_dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(data, 1, size, f);
    return (fclose(f) || w != size) ? -1 : 0;
}
