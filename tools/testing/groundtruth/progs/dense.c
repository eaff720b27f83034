// SPDX-License-Identifier: GPL-2.0
/*
 * A dense trace: each turn of the loop is an indirect call to one of
 * eight functions picked by the data, so every turn is a TIP packet (and
 * one more for the return with return compression off), about a byte of
 * trace per instruction.  The streaming ground truth (tools/testing/vm/
 * stream-gt) replays it into a buffer many times smaller than its trace.
 *
 *   dense [TURNS]     (default 20000)
 */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static unsigned int f0(unsigned int x) { return x * 3 + 1; }
__attribute__((noinline)) static unsigned int f1(unsigned int x) { return x ^ 0x5bd1e995; }
__attribute__((noinline)) static unsigned int f2(unsigned int x) { return x + 0x9e3779b9; }
__attribute__((noinline)) static unsigned int f3(unsigned int x) { return (x << 7) | (x >> 25); }
__attribute__((noinline)) static unsigned int f4(unsigned int x) { return x * 0x2545f491; }
__attribute__((noinline)) static unsigned int f5(unsigned int x) { return ~x + 17; }
__attribute__((noinline)) static unsigned int f6(unsigned int x) { return x - (x >> 3); }
__attribute__((noinline)) static unsigned int f7(unsigned int x) { return (x >> 11) ^ x; }

static unsigned int (*const fns[8])(unsigned int) = { f0, f1, f2, f3, f4, f5, f6, f7 };

int main(int argc, char **argv)
{
	unsigned int n = argc > 1 ? (unsigned int)atoi(argv[1]) : 20000, i, s = 1;

	for (i = 0; i < n; i++)
		s = fns[(s >> 5) & 7](s + i);
	printf("%u\n", s);
	return 0;
}
