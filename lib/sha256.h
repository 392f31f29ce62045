/* sha256: the digest of OCI content addresses (FIPS 180-4). Streaming; the
 * x86 SHA extensions are used when the CPU has them. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN     32
#define SHA256_HEX_LEN 64

struct sha256 {
	uint32_t h[8];
	uint64_t len; /* bytes so far */
	uint8_t buf[64];
	size_t nbuf;
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
void sha256_final(struct sha256 *s, uint8_t out[SHA256_LEN]);
/* Lower-case hex, NUL-terminated (out has SHA256_HEX_LEN + 1 bytes). */
void sha256_hex(const uint8_t d[SHA256_LEN], char *out);
/* Tests: 1 forces the portable code, 0 goes back to the CPU's choice. */
void sha256_force_portable(int on);
