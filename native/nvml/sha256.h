/* SHA-256 of a byte buffer: the digest the companions carry of their YAML. */
#ifndef MOKKA_SHA256_H
#define MOKKA_SHA256_H

#include <stddef.h>

/* Writes "sha256:<64 lower-case hex digits>" and a NUL into out (72 bytes). */
#define SHA256_DIGEST_TEXT_SIZE 72
void sha256_digest_text(const void *data, size_t len, char out[SHA256_DIGEST_TEXT_SIZE]);

#endif
