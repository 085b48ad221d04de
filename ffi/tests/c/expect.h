/* The C tests' check: count a failure and say where, go on. Each program ends with
 * `return failures ? 1 : 0` after printing its "<name>: OK" line only when none failed. */
#ifndef HSAKMT_RS_TEST_EXPECT_H
#define HSAKMT_RS_TEST_EXPECT_H
#include <stdio.h>

static int failures;
#define EXPECT(cond)                                                   \
	do {                                                               \
		if (!(cond)) {                                                 \
			printf("FAIL line %d: %s\n", __LINE__, #cond);             \
			failures++;                                                \
		}                                                              \
	} while (0)

#endif
