/* sha256 (FIPS 180-4): the portable compression function, and one on the
 * x86 SHA extensions (SHA-NI), chosen once from CPUID. Image import hashes
 * every blob and every uncompressed layer: with SHA-NI that costs about a
 * fifth of the portable code's time. */
#include "lib/sha256.h"

#include <string.h>

#ifdef __x86_64__
#include <cpuid.h>
#include <immintrin.h>
#endif

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t ror(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

static void blocks_portable(uint32_t h[8], const uint8_t *p, size_t n)
{
	for (; n; n--, p += 64) {
		uint32_t w[64], a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5],
		                g = h[6], hh = h[7];
		for (int i = 0; i < 16; i++)
			w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
			       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
		for (int i = 16; i < 64; i++) {
			uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
			uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
			w[i] = w[i - 16] + s0 + w[i - 7] + s1;
		}
		for (int i = 0; i < 64; i++) {
			uint32_t t1 = hh + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) +
			              ((e & f) ^ (~e & g)) + K[i] + w[i];
			uint32_t t2 =
			    (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
			hh = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
		}
		h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g,
		    h[7] += hh;
	}
}

#ifdef __x86_64__
/* Four rounds per step; the message schedule for group g (g >= 4) is
 * msg2(msg1(W[g-4], W[g-3]) + W[g-2..g-1] shifted by one word, W[g-1]),
 * kept in a ring of four. */
__attribute__((target("sha,sse4.1"))) static void blocks_shani(uint32_t h[8], const uint8_t *p,
                                                               size_t n)
{
	const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
	__m128i tmp = _mm_loadu_si128((const __m128i *)&h[0]);
	__m128i st1 = _mm_loadu_si128((const __m128i *)&h[4]);
	tmp = _mm_shuffle_epi32(tmp, 0xB1);         /* CDAB */
	st1 = _mm_shuffle_epi32(st1, 0x1B);         /* EFGH */
	__m128i st0 = _mm_alignr_epi8(tmp, st1, 8); /* ABEF */
	st1 = _mm_blend_epi16(st1, tmp, 0xF0);      /* CDGH */

	for (; n; n--, p += 64) {
		__m128i save0 = st0, save1 = st1, x[4];
		for (int i = 0; i < 4; i++)
			x[i] =
			    _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), bswap);
		for (int g = 0; g < 16; g++) {
			if (g >= 4)
				x[g & 3] = _mm_sha256msg2_epu32(
				    _mm_add_epi32(
				        _mm_sha256msg1_epu32(x[g & 3], x[(g + 1) & 3]),
				        _mm_alignr_epi8(x[(g + 3) & 3], x[(g + 2) & 3], 4)),
				    x[(g + 3) & 3]);
			__m128i m =
			    _mm_add_epi32(x[g & 3], _mm_loadu_si128((const __m128i *)&K[4 * g]));
			st1 = _mm_sha256rnds2_epu32(st1, st0, m);
			st0 = _mm_sha256rnds2_epu32(st0, st1, _mm_shuffle_epi32(m, 0x0E));
		}
		st0 = _mm_add_epi32(st0, save0);
		st1 = _mm_add_epi32(st1, save1);
	}
	tmp = _mm_shuffle_epi32(st0, 0x1B);    /* FEBA */
	st1 = _mm_shuffle_epi32(st1, 0xB1);    /* DCHG */
	st0 = _mm_blend_epi16(tmp, st1, 0xF0); /* DCBA */
	st1 = _mm_alignr_epi8(st1, tmp, 8);    /* HGFE */
	_mm_storeu_si128((__m128i *)&h[0], st0);
	_mm_storeu_si128((__m128i *)&h[4], st1);
}
#endif

/* Set once; a test may force the portable path (sha256_force_portable). */
static int use_shani = -1;

void sha256_force_portable(int on)
{
	use_shani = on ? 0 : -1;
}

static void blocks(uint32_t h[8], const uint8_t *p, size_t n)
{
#ifdef __x86_64__
	if (use_shani < 0) {
		/* CPUID leaf 7 EBX bit 29: SHA; leaf 1 ECX bit 19: SSE4.1 (the
		 * blend and shuffle the rounds use). */
		unsigned a, b, c, d;
		use_shani = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b >> 29 & 1) &&
		            __get_cpuid(1, &a, &b, &c, &d) && (c >> 19 & 1);
	}
	if (use_shani) {
		blocks_shani(h, p, n);
		return;
	}
#endif
	blocks_portable(h, p, n);
}

void sha256_init(struct sha256 *s)
{
	static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
	                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	memcpy(s->h, iv, sizeof(iv));
	s->len = 0;
	s->nbuf = 0;
}

void sha256_update(struct sha256 *s, const void *data, size_t len)
{
	const uint8_t *p = data;
	s->len += len;
	if (s->nbuf) {
		size_t take = 64 - s->nbuf < len ? 64 - s->nbuf : len;
		memcpy(s->buf + s->nbuf, p, take);
		s->nbuf += take, p += take, len -= take;
		if (s->nbuf < 64)
			return;
		blocks(s->h, s->buf, 1);
		s->nbuf = 0;
	}
	if (len >= 64) {
		blocks(s->h, p, len / 64);
		p += len & ~(size_t)63;
		len &= 63;
	}
	memcpy(s->buf, p, len);
	s->nbuf = len;
}

void sha256_final(struct sha256 *s, uint8_t out[SHA256_LEN])
{
	uint64_t bits = s->len * 8;
	uint8_t pad[72] = {0x80};
	size_t padlen = (s->nbuf < 56 ? 56 : 120) - s->nbuf;
	for (int i = 0; i < 8; i++)
		pad[padlen + i] = (uint8_t)(bits >> (56 - 8 * i));
	sha256_update(s, pad, padlen + 8);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (uint8_t)(s->h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
		out[4 * i + 3] = (uint8_t)s->h[i];
	}
}

void sha256_hex(const uint8_t d[SHA256_LEN], char *out)
{
	static const char hex[] = "0123456789abcdef";
	for (int i = 0; i < SHA256_LEN; i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 15];
	}
	out[SHA256_HEX_LEN] = 0;
}
