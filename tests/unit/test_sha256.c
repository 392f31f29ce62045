/* lib/sha256: FIPS 180-4 vectors through both compression functions, and
 * the streaming split at every offset of a block boundary. */
#include "unit.h"

#include "lib/sha256.h"

static void digest(const void *p, size_t n, size_t step, char *hex)
{
	struct sha256 s;
	uint8_t d[SHA256_LEN];
	sha256_init(&s);
	for (size_t i = 0; i < n; i += step)
		sha256_update(&s, (const char *)p + i, n - i < step ? n - i : step);
	sha256_final(&s, d);
	sha256_hex(d, hex);
}

TEST(sha256_vectors)
{
	static char million[1000000];
	char hex[SHA256_HEX_LEN + 1];
	memset(million, 'a', sizeof(million));
	for (int portable = 0; portable < 2; portable++) {
		sha256_force_portable(portable);
		digest("", 0, 1, hex);
		CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
		digest("abc", 3, 1, hex);
		CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
		const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
		for (size_t step = 1; step <= 64; step++) {
			digest(two, strlen(two), step, hex);
			CHECK_STR(
			    hex,
			    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
		}
		digest(million, sizeof(million), 4093, hex);
		CHECK_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	}
	sha256_force_portable(0);
}
