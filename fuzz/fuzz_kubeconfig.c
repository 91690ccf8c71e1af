/*
 * fuzz_kubeconfig.c -- kubeconfig files (client/client.c, kc_config_load):
 * what `kplane` components and tools read with --kubeconfig. Input: the file
 * (YAML). The file is written to a private directory, beside a token file
 * and a CA file that the kubeconfig may name (tokenFile: token,
 * certificate-authority: ca.crt), so those paths are read too.
 */
#include <stdlib.h>

#include "fuzz.h"
#include "client/client.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char path[512];
    static const char ca[] = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    if (fz_tmpdir_init() || fz_file("token", (const uint8_t *)"abc123\n", 7, path, sizeof path) ||
        fz_file("ca.crt", (const uint8_t *)ca, sizeof ca - 1, path, sizeof path))
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_INPUT_MAX) return 0;
    char path[512];
    if (fz_file("kubeconfig", data, size, path, sizeof path)) return 0;
    kc_config_t cfg;
    json_t *storage = NULL;
    char err[512];
    (void)kc_config_load(path, &cfg, &storage, err, sizeof err);
    json_decref(storage);
    return 0;
}
