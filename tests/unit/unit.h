/* A tiny unit test harness: TEST(name) registers a case, CHECK records a
 * failure with its location and goes on, main prints "N passed, N failed". */
#pragma once
#include <stdio.h>
#include <string.h>

struct unit_case {
	const char *name;
	void (*fn)(void);
	struct unit_case *next;
};
void unit_register(struct unit_case *c);
extern int unit_failures;

#define TEST(name)                                                                                 \
	static void test_##name(void);                                                             \
	static struct unit_case case_##name = {#name, test_##name, NULL};                          \
	__attribute__((constructor)) static void register_##name(void)                             \
	{                                                                                          \
		unit_register(&case_##name);                                                       \
	}                                                                                          \
	static void test_##name(void)

#define CHECK(expr)                                                                                \
	do {                                                                                       \
		if (!(expr)) {                                                                     \
			printf("    %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #expr);        \
			unit_failures++;                                                           \
		}                                                                                  \
	} while (0)
#define CHECK_EQ(a, b)                                                                             \
	do {                                                                                       \
		long long _a = (long long)(a), _b = (long long)(b);                                \
		if (_a != _b) {                                                                    \
			printf("    %s:%d: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__, \
			       #a, _a, #b, _b);                                                    \
			unit_failures++;                                                           \
		}                                                                                  \
	} while (0)
#define CHECK_STR(a, b)                                                                            \
	do {                                                                                       \
		const char *_a = (a), *_b = (b);                                                   \
		if (!_a || !_b || strcmp(_a, _b) != 0) {                                           \
			printf("    %s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__, __LINE__,   \
			       #a, _a ? _a : "(null)", _b ? _b : "(null)");                        \
			unit_failures++;                                                           \
		}                                                                                  \
	} while (0)
