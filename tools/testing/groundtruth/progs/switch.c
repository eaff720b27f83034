// SPDX-License-Identifier: GPL-2.0
/* A dense switch the compiler turns into a jump table (indirect jmp). */
#include <stdio.h>

__attribute__((noinline)) static int op(int k, int x)
{
	switch (k) {
	case 0: return x + 1;
	case 1: return x * 3;
	case 2: return x - 7;
	case 3: return x ^ 0x55;
	case 4: return x << 2;
	case 5: return x >> 1;
	case 6: return x | 9;
	case 7: return x & 0xff;
	case 8: return x % 11;
	case 9: return ~x;
	default: return x;
	}
}

int main(void)
{
	int i, s = 1;

	for (i = 0; i < 3000; i++)
		s = op((i * 7) % 12, s);
	printf("%d\n", s);
	return 0;
}
