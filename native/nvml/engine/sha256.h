/* SHA-256: the digest a companion carries of its YAML (flat.h). */
#ifndef MOKKA_SHA256_H
#define MOKKA_SHA256_H

#include <stddef.h>
#include <stdint.h>

/* "sha256:<64 lower-case hex digits>" and a NUL. */
#define SHA256_DIGEST_TEXT_SIZE 72

/* A digest fed in pieces (a YAML read in chunks): init, update..., final. */
struct sha256 {
    uint32_t h[8];
    uint64_t len;                  /* bytes fed so far */
    unsigned char block[64];       /* the partial block */
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
void sha256_final_text(struct sha256 *s, char out[SHA256_DIGEST_TEXT_SIZE]);
/* The digest of bytes held whole (the MIG state's lines, a MIG device's name). */
void sha256_digest_text(const void *data, size_t len, char out[SHA256_DIGEST_TEXT_SIZE]);

#endif
