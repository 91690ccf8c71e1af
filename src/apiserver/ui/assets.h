/*
 * assets.h -- the dashboard's files (src/apiserver/ui/assets/), compiled
 * into the binary: the build (embed.cmake) writes them as a table of byte
 * arrays into a generated C file, so serving them needs no file and no
 * network. Immutable: safe from any thread, valid for the process's life.
 */
#ifndef KP_API_UI_ASSETS_H
#define KP_API_UI_ASSETS_H

#include <stddef.h>

typedef struct api_ui_asset {
    const char *name;  /* "index.html", "app.js", "style.css" */
    const char *ctype; /* its Content-Type */
    const char *etag;  /* a strong ETag, quoted: its SHA-256's first 64 bits */
    const unsigned char *data;
    size_t len;
} api_ui_asset_t;

/* The table, ending with a row whose name is NULL (generated). */
extern const api_ui_asset_t api_ui_assets[];

/* The asset called `name` (a file name, no slash), or NULL. */
const api_ui_asset_t *api_ui_asset_find(const char *name);

#endif
